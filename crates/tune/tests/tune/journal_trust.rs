//! The journal reader trusts nothing it finds in the journal directory (issue 37, item 7): a
//! FIFO named like a journal is refused at once (never waited on), a symbolic link is refused
//! and never written through (not even to the journal it points to), a journal cut before its
//! first change is said to be truncated and never reverted "completely", and a journal of many
//! megabytes of results naming changes that do not exist reads in one pass.

use crate::common::{put, snapshot};

use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use wirespeed_host::Root;
use wirespeed_tune::doc::JournalRow;
use wirespeed_tune::engine::{self, RevertStatus};
use wirespeed_tune::journal::{JournalFile, State};
use wirespeed_tune::plan::{command_for, Change, Plan, Step};
use wirespeed_tune::{ApplyOptions, Form, TuneError};

const DIR: &str = "/var/lib/wirespeed";

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "proc/sys/net/core/rmem_max", "212992\n");
    put(t.path(), "proc/sys/net/core/wmem_max", "212992\n");
    fs::create_dir_all(t.path().join("var/lib/wirespeed")).unwrap();
    t
}

fn plan() -> Plan {
    let mut p = Plan::new("test");
    for (path, value) in [
        ("/proc/sys/net/core/rmem_max", "268435456"),
        ("/proc/sys/net/core/wmem_max", "268435456"),
    ] {
        let change = Change::Write {
            path: path.into(),
            form: Form::Words,
            value: value.into(),
        };
        p.steps.push(Step {
            finding: "socket-buffers-small".into(),
            summary: "test step".into(),
            setting: path.into(),
            current: String::new(),
            new: String::new(),
            command: command_for(&change),
            change,
        });
    }
    p
}

/// Run `f` on another thread; a hang (a FIFO waited on) fails the test instead of stalling it.
fn without_hanging<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60)) // a hang detector, not a bound on speed
        .unwrap_or_else(|_| panic!("{what} hung"))
}

fn mkfifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

#[test]
fn a_fifo_named_like_a_journal_is_refused_without_waiting() {
    let t = tree();
    let fifo = t
        .path()
        .join("var/lib/wirespeed/journal-20260101T000000Z-1.jsonl");
    mkfifo(&fifo);
    let root = Root::new(t.path());
    let path = format!("{DIR}/journal-20260101T000000Z-1.jsonl");
    let (read, latest, revert) = without_hanging("reading a FIFO journal", {
        let (root, path) = (root.clone(), path.clone());
        move || {
            (
                JournalFile::read(&root, &path).map(|_| ()),
                engine::latest_unreverted(&root, DIR),
                engine::revert(&root, &path, false).map(|_| ()),
            )
        }
    });
    let e = read.unwrap_err().to_string();
    assert!(
        e.contains("FIFO") && e.contains("not a regular file"),
        "{e}"
    );
    // `tune revert` without a name takes it (and says what is wrong with it)
    assert_eq!(latest.unwrap(), Some(path.clone()));
    let e = revert.unwrap_err().to_string();
    assert!(e.contains("FIFO"), "{e}");
    let jf = JournalFile::read(&root, &path).map_err(|e| e.to_string());
    let row = JournalRow::of(&path, jf.as_ref().map_err(Clone::clone));
    assert!(matches!(row, JournalRow::Unreadable { .. }), "{row:?}");
}

#[test]
fn a_symlinked_journal_is_refused_and_never_written_through() {
    let t = tree();
    let root = Root::new(t.path());
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    let real = t.path().join(report.journal.trim_start_matches('/'));
    let journal_before = fs::read(&real).unwrap();
    // a link to a kernel value of the tree (the issue's case: revert appended a record to
    // rmem_max), and a link to the real journal itself
    std::os::unix::fs::symlink(
        "../../../proc/sys/net/core/rmem_max",
        t.path()
            .join("var/lib/wirespeed/journal-20990101T000000Z-1.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        real.file_name().unwrap(),
        t.path()
            .join("var/lib/wirespeed/journal-20990101T000000Z-2.jsonl"),
    )
    .unwrap();
    let before = snapshot(t.path());
    for name in [
        "journal-20990101T000000Z-1.jsonl",
        "journal-20990101T000000Z-2.jsonl",
    ] {
        let path = format!("{DIR}/{name}");
        let e = JournalFile::read(&root, &path).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        for force in [false, true] {
            let e = engine::revert(&root, &path, force).unwrap_err();
            assert!(
                matches!(e, TuneError::Root(_)) && e.to_string().contains("symbolic link"),
                "{e}"
            );
        }
    }
    // nothing restored, nothing appended: the kernel value and the real journal are as they were
    assert_eq!(snapshot(t.path()), before);
    assert_eq!(fs::read(&real).unwrap(), journal_before);
    assert_eq!(
        fs::read_to_string(t.path().join("proc/sys/net/core/rmem_max")).unwrap(),
        "268435456\n"
    );
    // the real journal still reverts by its own name
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(
        r.complete() && r.truncated.is_none() && !r.interrupted,
        "{r:#?}"
    );
    assert_eq!(r.count(RevertStatus::Restored), 2);
}

#[test]
fn a_journal_cut_before_its_first_change_is_truncated_never_complete() {
    for cut in ["first line", "half the second", "empty"] {
        let t = tree();
        let root = Root::new(t.path());
        let report =
            engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |_, _| {}).unwrap();
        let real = t.path().join(report.journal.trim_start_matches('/'));
        let text = fs::read_to_string(&real).unwrap();
        let first = text.find('\n').unwrap() + 1;
        let kept = match cut {
            "first line" => &text[..first],
            "half the second" => &text[..first + (text[first..].find('\n').unwrap() / 2)],
            _ => "",
        };
        fs::write(&real, kept).unwrap();
        let jf = JournalFile::read(&root, &report.journal).unwrap();
        assert!(jf.entries().is_empty());
        let why = jf
            .truncated()
            .unwrap_or_else(|| panic!("{cut}: not truncated"));
        assert!(!why.is_empty());
        // revert restores nothing it does not know of, and never calls itself complete; a
        // second revert says the same (the first one's record does not make the journal whole)
        for _ in 0..2 {
            let r = engine::revert(&root, &report.journal, false).unwrap();
            assert!(r.truncated.is_some(), "{cut}: {r:#?}");
            assert!(!r.complete(), "{cut}");
            assert_eq!(r.count(RevertStatus::Restored), 0);
            let jf = JournalFile::read(&root, &report.journal).unwrap();
            assert_ne!(jf.state(), State::Reverted, "{cut}");
        }
        // the changes the cut hid stay applied, and nothing here claims otherwise
        assert_eq!(
            fs::read_to_string(t.path().join("proc/sys/net/core/rmem_max")).unwrap(),
            "268435456\n"
        );
    }
}

#[test]
fn an_interrupted_journal_with_changes_is_not_called_truncated() {
    // the journal of a kill -9 after its first change: an interrupted apply, reverted
    let t = tree();
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    let real = t.path().join(report.journal.trim_start_matches('/'));
    let text = fs::read_to_string(&real).unwrap();
    let kept: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    fs::write(&real, kept).unwrap();
    put(t.path(), "proc/sys/net/core/wmem_max", "212992\n");
    let jf = JournalFile::read(&root, &report.journal).unwrap();
    assert_eq!(jf.state(), State::Interrupted);
    assert_eq!(jf.truncated(), None);
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete() && r.interrupted, "{r:#?}");
    assert_eq!(snapshot(t.path()), before);
}

/// A journal of `mib` MiB: a begin record, changes of seq 1..=n (each naming a value already
/// back to its original), then results naming sequence numbers that no change has.
fn bogus_journal(mib: usize) -> (String, usize) {
    let mut s = String::from(
        r#"{"record":"begin","schema":1,"created":"t","tool":"t","root":"/","iface":null,"steps":1,"addressed":[]}"#,
    );
    s.push('\n');
    let half = mib << 19;
    let mut changes = 0usize;
    while s.len() < half {
        changes += 1;
        s.push_str(&format!(
            r#"{{"record":"change","seq":{changes},"step":0,"finding":"x","undo":{{"kind":"file","path":"/proc/sys/net/core/rmem_max","form":"words","old":"212992\n","new":"268435456\n"}}}}"#
        ));
        s.push('\n');
    }
    let mut seq = 1u64 << 31;
    while s.len() < mib << 20 {
        seq += 1;
        s.push_str(&format!(
            r#"{{"record":"result","seq":{seq},"outcome":"applied","detail":null}}"#
        ));
        s.push('\n');
    }
    (s, changes)
}

#[test]
fn a_journal_of_bogus_results_is_read_in_one_pass() {
    let t = tree();
    let root = Root::new(t.path());
    for mib in [10, 44] {
        let (text, changes) = bogus_journal(mib);
        let name = format!("{DIR}/journal-bogus-{mib}.jsonl");
        root.create(&name, text.as_bytes()).unwrap();
        let started = Instant::now();
        let jf = JournalFile::read(&root, &name).unwrap();
        let entries = jf.entries();
        // every change is there, none has an outcome (no result names one of them)
        assert_eq!(entries.len(), changes);
        assert!(entries.iter().all(|e| e.outcome.is_none()));
        eprintln!(
            "{mib} MiB journal ({changes} changes, {} records): read and matched in {:.2} s",
            jf.records.len(),
            started.elapsed().as_secs_f64()
        );
        if mib == 10 {
            // revert goes through every change once: each value is already original
            let started = Instant::now();
            let r = engine::revert(&root, &name, false).unwrap();
            assert_eq!(r.count(RevertStatus::AlreadyOriginal), changes);
            eprintln!(
                "{mib} MiB journal: reverted in {:.2} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
}
