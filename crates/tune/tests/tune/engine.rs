//! The engine on a small tree built here: apply journals and writes, revert restores the tree
//! byte for byte, a value changed behind tune's back is left alone unless forced, an interrupted
//! apply reverts, and a second revert does nothing.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{put, snapshot};

use wirespeed_host::{CpuSet, Root};
use wirespeed_tune::engine::{self, RevertStatus, StepStatus};
use wirespeed_tune::journal::{JournalFile, Outcome, Record, State};
use wirespeed_tune::plan::{command_for, Change, Plan, Step};
use wirespeed_tune::{ApplyOptions, Form};

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    put(d, "proc/sys/net/core/rmem_max", "212992\n");
    put(d, "proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
    put(d, "proc/irq/111/smp_affinity_list", "3\n");
    put(d, "proc/irq/111/effective_affinity_list", "3\n");
    put(d, "sys/devices/virtual/net/eth0/mtu", "1500\n");
    fs::create_dir_all(d.join("sys/class/net")).unwrap();
    std::os::unix::fs::symlink(
        "../../devices/virtual/net/eth0",
        d.join("sys/class/net/eth0"),
    )
    .unwrap();
    put(
        d,
        "etc/sysctl.d/10-user.conf",
        "net.core.rmem_max = 1000000\n",
    );
    fs::set_permissions(
        d.join("etc/sysctl.d/10-user.conf"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    t
}

fn step(finding: &str, change: Change) -> Step {
    Step {
        finding: finding.into(),
        summary: "test step".into(),
        setting: change.path().unwrap_or_default(),
        current: String::new(),
        new: String::new(),
        command: command_for(&change),
        change,
    }
}

fn write(path: &str, value: &str) -> Change {
    Change::Write {
        path: path.into(),
        form: Form::Words,
        value: value.into(),
    }
}

fn plan() -> Plan {
    let mut p = Plan::new("test");
    p.steps = vec![
        step(
            "irq-cross-l3",
            Change::IrqAffinity {
                irq: 111,
                name: Some("mlx5_comp3@pci:0000:01:00.0".into()),
                cpus: CpuSet::parse_list("10").unwrap(),
            },
        ),
        step(
            "socket-buffers-small",
            write("/proc/sys/net/core/rmem_max", "268435456"),
        ),
        step(
            "socket-buffers-small",
            write("/proc/sys/net/ipv4/tcp_rmem", "4096 131072 268435456"),
        ),
        // through the class link, as the planner names it
        step("requested", write("/sys/class/net/eth0/mtu", "9000")),
        step(
            "persist",
            Change::Create {
                path: "/etc/sysctl.d/99-wirespeed.conf".into(),
                contents: "net.core.rmem_max = 268435456\n".into(),
                mode: 0o644,
            },
        ),
        // replaces a user's file: its content and mode must come back
        step(
            "persist",
            Change::Create {
                path: "/etc/sysctl.d/10-user.conf".into(),
                contents: "replaced\n".into(),
                mode: 0o644,
            },
        ),
        step(
            "persist",
            Change::Create {
                path: "/etc/wirespeed/tune.sh".into(),
                contents: "#!/bin/sh\n".into(),
                mode: 0o755,
            },
        ),
        step(
            "persist",
            Change::Link {
                path: "/etc/systemd/system/multi-user.target.wants/wirespeed-tune.service".into(),
                target: "../wirespeed-tune.service".into(),
            },
        ),
    ];
    p
}

fn read(d: &Path, rel: &str) -> String {
    fs::read_to_string(d.join(rel)).unwrap()
}

#[test]
fn apply_then_revert_is_byte_identical_and_a_second_revert_is_harmless() {
    let t = tree();
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    let statuses: Vec<_> = report.steps.iter().map(|s| s.status).collect();
    assert!(
        statuses.iter().all(|s| *s == StepStatus::Applied),
        "{report:#?}"
    );
    assert_eq!(read(t.path(), "proc/irq/111/smp_affinity_list"), "10\n");
    assert_eq!(
        read(t.path(), "proc/sys/net/ipv4/tcp_rmem"),
        "4096 131072 268435456\n"
    );
    assert_eq!(read(t.path(), "sys/devices/virtual/net/eth0/mtu"), "9000\n");
    assert_eq!(read(t.path(), "etc/sysctl.d/10-user.conf"), "replaced\n");
    // nothing plays the kernel in a tree, so tune writes the effective affinity the kernel
    // would show (journaled: revert restores it too) and says so
    let irq = &report.steps[0];
    assert_eq!(
        irq.detail.as_deref(),
        Some("effective CPU 10 (captured tree: also wrote effective_affinity_list, as the kernel would)"),
        "{irq:?}"
    );
    assert_eq!(
        read(t.path(), "proc/irq/111/effective_affinity_list"),
        "10\n"
    );
    assert_ne!(snapshot(t.path()), before);

    let jf = JournalFile::read(&root, &report.journal).unwrap();
    assert_eq!(jf.state(), State::Applied);
    // 8 steps + the effective affinity + the directories created for them (/etc/wirespeed,
    // /etc/systemd, /etc/systemd/system, /etc/systemd/system/multi-user.target.wants)
    assert_eq!(jf.entries().len(), 13, "{:#?}", jf.entries());
    assert!(jf
        .entries()
        .iter()
        .all(|e| e.outcome == Some(Outcome::Applied)));

    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete(), "{r:#?}");
    assert_eq!(r.count(RevertStatus::Restored), 13);
    assert_eq!(snapshot(t.path()), before);
    assert_eq!(
        JournalFile::read(&root, &report.journal).unwrap().state(),
        State::Reverted
    );

    let again = engine::revert(&root, &report.journal, false).unwrap();
    assert!(again.already_reverted && again.items.is_empty());
    assert_eq!(snapshot(t.path()), before);
    assert_eq!(
        engine::latest_unreverted(&root, "/var/lib/wirespeed").unwrap(),
        None
    );
}

#[test]
fn values_already_set_are_not_journaled() {
    let t = tree();
    let root = Root::new(t.path());
    let mut p = Plan::new("test");
    // the kernel's own spelling of the same values
    p.steps = vec![
        step(
            "x",
            write("/proc/sys/net/ipv4/tcp_rmem", "4096 131072  6291456"),
        ),
        step(
            "x",
            Change::IrqAffinity {
                irq: 111,
                name: None,
                cpus: CpuSet::parse_list("3").unwrap(),
            },
        ),
    ];
    let report = engine::apply(&root, &p, &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    assert!(report
        .steps
        .iter()
        .all(|s| s.status == StepStatus::AlreadySet));
    let jf = JournalFile::read(&root, &report.journal).unwrap();
    assert!(jf.entries().is_empty());
}

#[test]
fn a_value_changed_since_is_left_alone_unless_forced() {
    let t = tree();
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    // someone else sets rmem_max (spelled differently) and edits the drop-in
    put(t.path(), "proc/sys/net/core/rmem_max", "536870912\n");
    put(t.path(), "etc/sysctl.d/99-wirespeed.conf", "# mine now\n");
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(!r.complete());
    let left: Vec<_> = r
        .items
        .iter()
        .filter(|i| i.status == RevertStatus::LeftChanged)
        .map(|i| i.setting.clone())
        .collect();
    assert_eq!(
        left,
        vec![
            "/etc/sysctl.d/99-wirespeed.conf".to_string(),
            "/proc/sys/net/core/rmem_max".to_string()
        ]
    );
    // the directory holding the edited file is not removed either... it existed before anyway
    assert_eq!(read(t.path(), "proc/sys/net/core/rmem_max"), "536870912\n");
    assert_eq!(
        read(t.path(), "proc/sys/net/ipv4/tcp_rmem"),
        "4096\t131072\t6291456\n"
    );
    let jf = JournalFile::read(&root, &report.journal).unwrap();
    assert_eq!(jf.state(), State::PartlyReverted);
    assert_eq!(
        engine::latest_unreverted(&root, "/var/lib/wirespeed").unwrap(),
        Some(report.journal.clone())
    );
    // forced: the original comes back, everything else is already original
    let f = engine::revert(&root, &report.journal, true).unwrap();
    assert!(f.complete(), "{f:#?}");
    assert_eq!(f.count(RevertStatus::Restored), 2);
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn an_interrupted_apply_reverts_including_a_write_cut_short() {
    let t = tree();
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    // Cut the journal as a kill -9 would: after the change record of step 3 (tcp_rmem), before
    // its result; and the write itself cut short (truncated, nothing written yet).
    let text = root.read(&report.journal).unwrap();
    let mut kept = String::new();
    for line in text.lines() {
        kept.push_str(line);
        kept.push('\n');
        if line.contains("\"record\":\"change\"") && line.contains("tcp_rmem") {
            break;
        }
    }
    kept.push_str("{\"record\":\"res"); // the torn next record
    fs::write(root.path(&report.journal).unwrap(), &kept).unwrap();
    // undo, by hand, what the cut journal says never happened (steps after 3)
    put(t.path(), "sys/devices/virtual/net/eth0/mtu", "1500\n");
    for rel in ["etc/wirespeed", "etc/systemd"] {
        fs::remove_dir_all(t.path().join(rel)).unwrap();
    }
    fs::remove_file(t.path().join("etc/sysctl.d/99-wirespeed.conf")).unwrap();
    put(
        t.path(),
        "etc/sysctl.d/10-user.conf",
        "net.core.rmem_max = 1000000\n",
    );
    fs::set_permissions(
        t.path().join("etc/sysctl.d/10-user.conf"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    put(t.path(), "proc/sys/net/ipv4/tcp_rmem", "");

    let jf = JournalFile::read(&root, &report.journal).unwrap();
    assert_eq!(jf.state(), State::Interrupted);
    assert!(jf.torn_tail);
    assert_eq!(jf.entries().last().unwrap().outcome, None);
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete(), "{r:#?}");
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn a_failing_step_is_reported_and_the_plan_goes_on() {
    let t = tree();
    let root = Root::new(t.path());
    let mut p = Plan::new("test");
    p.steps = vec![
        step("x", write("/proc/sys/net/core/absent", "1")),
        step(
            "socket-buffers-small",
            write("/proc/sys/net/core/rmem_max", "268435456"),
        ),
    ];
    // preflight refuses a plan naming a file that does not exist, before any journal
    let err = engine::apply(&root, &p, &ApplyOptions::default(), &mut |_, _| {}).unwrap_err();
    assert!(
        err.to_string().contains("/proc/sys/net/core/absent"),
        "{err}"
    );
    assert!(!t.path().join("var/lib/wirespeed").exists());
    // a file that disappears after preflight: failed step, the plan goes on
    put(t.path(), "proc/sys/net/core/absent", "0\n");
    let mut removed = false;
    let report = engine::apply(
        &root,
        &{
            let mut q = p.clone();
            q.steps.reverse();
            q
        },
        &ApplyOptions::default(),
        &mut |root, _| {
            if !removed {
                fs::remove_file(root.path("/proc/sys/net/core/absent").unwrap()).unwrap();
                removed = true;
            }
        },
    )
    .unwrap();
    assert_eq!(report.steps[0].status, StepStatus::Applied);
    assert_eq!(report.steps[1].status, StepStatus::Failed);
    assert!(report.steps[1]
        .detail
        .as_deref()
        .unwrap()
        .contains("absent"));
}

#[test]
fn the_after_step_hook_sees_each_write_in_order() {
    // A test stands in for the kernel: after each IRQ write it sets the effective affinity.
    let t = tree();
    let root = Root::new(t.path());
    let mut seen = Vec::new();
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |root, s| {
        seen.push(s.finding.clone());
        if let Change::IrqAffinity { irq, cpus, .. } = &s.change {
            // emulation of the kernel: effective affinity = first CPU of the request
            root.write(
                &format!("/proc/irq/{irq}/effective_affinity_list"),
                &format!("{}\n", cpus.first().unwrap()),
            )
            .unwrap();
        }
    })
    .unwrap();
    assert_eq!(seen.len(), 8);
    // the readback happens right after the write, before the hook: the effective CPU tune
    // wrote in the captured tree, as the kernel would
    assert!(report.steps[0]
        .detail
        .as_deref()
        .unwrap()
        .starts_with("effective CPU 10 "));
    let jf = JournalFile::read(&root, &report.journal).unwrap();
    assert!(matches!(
        jf.records.last(),
        Some(Record::End { applied: 8, .. })
    ));
}

/// Attack: a tree whose kernel file is a link to a file outside it (relative and absolute),
/// and whose `/etc` leads outside. Apply refuses before writing anything; a journal naming
/// those paths reverts nothing outside either.
#[test]
fn links_out_of_the_root_are_never_written_through() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    put(&outside, "wmem_max", "212992\n");
    put(&outside, "etc/sysctl.d/keep.conf", "mine\n");
    let d = t.path().join("tree");
    let tr = tree();
    fs::rename(tr.path(), &d).unwrap();
    std::os::unix::fs::symlink(
        "../../../../../outside/wmem_max",
        d.join("proc/sys/net/core/wmem_max"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.join("wmem_max"),
        d.join("proc/sys/net/core/abs_max"),
    )
    .unwrap();
    let root = Root::new(&d);
    for trap in ["/proc/sys/net/core/wmem_max", "/proc/sys/net/core/abs_max"] {
        let mut p = Plan::new("test");
        p.steps = vec![step("socket-buffers-small", write(trap, "268435456"))];
        let e = engine::apply(&root, &p, &ApplyOptions::default(), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("outside the root"), "{e}");
    }
    // /etc itself leads outside: creating a file below it is refused before anything.
    fs::remove_dir_all(d.join("etc")).unwrap();
    std::os::unix::fs::symlink("../outside/etc", d.join("etc")).unwrap();
    let mut p = Plan::new("test");
    p.steps = vec![step(
        "persist",
        Change::Create {
            path: "/etc/sysctl.d/keep.conf".into(),
            contents: "tuned\n".into(),
            mode: 0o644,
        },
    )];
    let e = engine::apply(&root, &p, &ApplyOptions::default(), &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("outside the root"), "{e}");
    assert!(wirespeed_tune::journal::list(&root, "/var/lib/wirespeed").is_empty());
    // A journal that names the trap (forged, or written on the host the tree came from):
    // revert fails that item and touches nothing outside.
    let forged = format!(
        "{}\n{}\n",
        r#"{"record":"begin","schema":1,"created":"t","tool":"t","root":"/","iface":null,"steps":1,"addressed":[]}"#,
        r#"{"record":"change","seq":1,"step":0,"finding":"x","undo":{"kind":"file","path":"/proc/sys/net/core/wmem_max","form":"words","old":"1\n","new":"268435456\n"}}"#
    );
    root.create("/var/lib/wirespeed/journal-forged.jsonl", forged.as_bytes())
        .unwrap();
    let r = engine::revert(&root, "/var/lib/wirespeed/journal-forged.jsonl", true).unwrap();
    assert_eq!(r.items[0].status, RevertStatus::Failed);
    assert_eq!(read(&outside, "wmem_max"), "212992\n");
    assert_eq!(read(&outside, "etc/sysctl.d/keep.conf"), "mine\n");
}

/// Attack: corrupt, empty and truncated lines in the middle of a journal. Revert undoes
/// every change it can read, lists the lines it could not, and never stops at the first.
#[test]
fn a_damaged_journal_reverts_around_its_bad_lines() {
    let t = tree();
    let root = Root::new(t.path());
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    let text = root.read(&report.journal).unwrap();
    let mut damaged = String::new();
    let mut bad_lines = Vec::new();
    let mut n = 0;
    for line in text.lines() {
        let mut push = |s: &str, bad: bool| {
            n += 1;
            if bad {
                bad_lines.push(n);
            }
            damaged.push_str(s);
            damaged.push('\n');
        };
        if line.contains("\"record\":\"result\"") && line.contains("\"seq\":2,") {
            push(&line[..line.len() / 2], true); // truncated
        } else if line.contains("\"record\":\"end\"") {
            push("\u{1b}[2J garbage", true); // corrupt
            push(line, false);
        } else {
            push(line, false);
        }
    }
    damaged.insert(damaged.find('\n').unwrap() + 1, '\n'); // an empty line: harmless
    let bad_lines: Vec<usize> = bad_lines.iter().map(|l| l + 1).collect();
    root.create(&report.journal, damaged.as_bytes()).unwrap();

    let before_apply = {
        // What the tree held before apply, for the checks below.
        let t2 = tree();
        snapshot(t2.path())
    };
    let r = engine::revert(&root, &report.journal, false).unwrap();
    let lines: Vec<usize> = r.unreadable.iter().map(|u| u.line).collect();
    assert_eq!(lines, bad_lines, "{r:#?}");
    assert!(r.complete(), "{r:#?}");
    assert!(r.count(RevertStatus::Restored) >= 8, "{r:#?}");
    assert_eq!(snapshot(t.path()), before_apply);
    let jf = JournalFile::read(&root, &report.journal).unwrap();
    assert_eq!(jf.state(), State::Reverted);
}

/// Attack: two applies at once on one root. The second is refused before it journals or
/// writes anything, naming the first (pid, start time); the first reverts completely.
#[test]
fn a_second_concurrent_apply_is_refused_and_the_first_reverts() {
    let t = tree();
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let mut second = None;
    let report = engine::apply(&root, &plan(), &ApplyOptions::default(), &mut |r, _| {
        if second.is_none() {
            let mut p = Plan::new("test");
            p.steps = vec![step("x", write("/proc/sys/net/core/rmem_max", "1"))];
            second = Some(engine::apply(
                r,
                &p,
                &ApplyOptions::default(),
                &mut |_, _| {},
            ));
        }
    })
    .unwrap();
    let e = second.unwrap().unwrap_err().to_string();
    let me = format!("pid {} (wirespeed tune), started ", std::process::id());
    assert!(e.contains("another tune run") && e.contains(&me), "{e}");
    assert_eq!(
        wirespeed_tune::journal::list(&root, "/var/lib/wirespeed"),
        vec![report.journal.clone()],
        "the refused apply left no journal"
    );
    // The refused revert while an apply holds the lock says so too.
    let lock = wirespeed_tune::journal::ApplyLock::acquire(&root, "/var/lib/wirespeed").unwrap();
    let e = engine::revert(&root, &report.journal, false).unwrap_err();
    assert!(e.to_string().contains("another tune run"), "{e}");
    drop(lock);
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete(), "{r:#?}");
    assert_eq!(snapshot(t.path()), before);
}
