//! The journal: an append-only JSON-lines file under the root that records, before each write,
//! what the setting held and what tune is about to put there.
//!
//! Every record is written and `fsync`ed (the file, and the directory when the file is new)
//! before the write it describes, so a crash or `kill -9` at any point leaves a journal that
//! names every value tune may have touched. A record cut short by the crash (the last line,
//! unterminated) is ignored: the write it announced never started.
//!
//! A journal damaged otherwise (a corrupt, empty or truncated line anywhere) is still read:
//! every line that is a record counts, and the others are listed in
//! [`JournalFile::unreadable`] so that revert can undo everything it can read and say what it
//! could not. A journal cut short before any change ([`JournalFile::truncated`]: empty, or
//! nothing but its first record and no end) is said to be so: what was cut off cannot be
//! known, so revert reports it and never claims to be complete.
//!
//! The journal directory is not trusted either: a journal is read and appended to only if it
//! is a regular file (opened with `O_NOFOLLOW | O_NONBLOCK` and checked with `fstat`, so a
//! symbolic link is never written through and a FIFO never waited on), and reading it takes
//! time linear in its size.
//!
//! One apply (or revert) at a time per root: [`ApplyLock`] holds an exclusive `flock` on the
//! journal directory for as long as it lives, with the holder's pid and start time in the
//! file `lock` beside the journals (removed on release) so that a refused second run can name
//! it.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::time::SystemTime;
use wirespeed_host::ethtool::{CoalesceSet, PauseSet};
use wirespeed_host::link::SizesSet;
use wirespeed_host::utc::Utc;
use wirespeed_host::Root;

use crate::value::Form;
use crate::TuneError;

/// Version of the journal's record shapes.
pub const JOURNAL_SCHEMA: u32 = 1;
/// Where journals live, below the root.
pub const DEFAULT_DIR: &str = "/var/lib/wirespeed";

/// A file's content and permission bits, saved before tune replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub contents: String,
    pub mode: u32,
}

/// What revert needs to undo one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Undo {
    /// A kernel value file: `old` and `new` are the exact bytes read and written.
    File {
        path: String,
        form: Form,
        old: String,
        new: String,
    },
    /// A file tune created (`old` is `None`) or replaced (`old` holds the original).
    Created {
        path: String,
        new: String,
        mode: u32,
        old: Option<Saved>,
    },
    /// A directory tune created; revert removes it when it is empty.
    Dir { path: String },
    /// A symbolic link tune created.
    Link { path: String, target: String },
    /// A systemd service tune stopped and/or disabled, with its state before.
    Service {
        unit: String,
        was_active: bool,
        was_enabled: bool,
        stopped: bool,
        disabled: bool,
    },
    /// NIC ring sizes set through the ethtool interface.
    Ring {
        iface: String,
        old_rx: u32,
        old_tx: u32,
        new_rx: u32,
        new_tx: u32,
    },
    /// NIC interrupt-coalescing fields set through the ethtool interface: `old` holds what the
    /// NIC had for exactly the fields `new` names.
    Coalesce {
        iface: String,
        old: CoalesceSet,
        new: CoalesceSet,
    },
    /// GSO/GRO sizes set through rtnetlink: `old` holds what the kernel reported for exactly
    /// the sizes `new` names.
    LinkSizes {
        iface: String,
        old: SizesSet,
        new: SizesSet,
    },
    /// Flow-control directions set through the ethtool interface: `old` holds what the NIC had
    /// for exactly the directions `new` names.
    Pause {
        iface: String,
        old: PauseSet,
        new: PauseSet,
    },
    /// One named NIC feature set through the ethtool interface (only its bit): `old` is what
    /// the NIC had.
    Feature {
        iface: String,
        feature: String,
        old: bool,
        new: bool,
    },
}

impl Undo {
    /// The setting, as shown to people.
    pub fn setting(&self) -> String {
        match self {
            Undo::File { path, .. }
            | Undo::Created { path, .. }
            | Undo::Dir { path }
            | Undo::Link { path, .. } => path.clone(),
            Undo::Service { unit, .. } => unit.clone(),
            Undo::Ring { iface, .. } => format!("ethtool -G {iface}"),
            Undo::Coalesce { iface, .. } => format!("ethtool -C {iface}"),
            Undo::LinkSizes { iface, .. } => format!("ip link set dev {iface}"),
            Undo::Pause { iface, .. } => format!("ethtool -A {iface}"),
            Undo::Feature { iface, feature, .. } => format!(
                "ethtool -K {iface} {}",
                wirespeed_host::ethtool::feature_arg(feature)
            ),
        }
    }
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Written (and read back where the kernel answers).
    Applied,
    /// The kernel refused to move a managed IRQ (EIO); nothing changed.
    NotMovable,
    /// The write failed; nothing changed.
    Failed,
    /// The driver does not implement the setting or refuses the value (`EOPNOTSUPP`,
    /// `EINVAL`); nothing changed.
    NotSupported,
}

/// One line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "kebab-case")]
pub enum Record {
    /// First line: what was applied, where, by what.
    Begin {
        schema: u32,
        created: String,
        tool: String,
        root: String,
        iface: Option<String>,
        steps: usize,
        addressed: Vec<String>,
    },
    /// Written and synced before the change it describes.
    Change {
        seq: u32,
        step: usize,
        finding: String,
        undo: Undo,
    },
    /// Written after the change.
    Result {
        seq: u32,
        outcome: Outcome,
        detail: Option<String>,
    },
    /// Last line of a complete apply.
    End {
        finished: String,
        applied: usize,
        not_movable: usize,
        failed: usize,
    },
    /// A revert: complete when every change is back to its old value.
    Revert {
        at: String,
        complete: bool,
        restored: usize,
        left: Vec<u32>,
        forced: bool,
    },
}

/// An open journal being appended to.
#[derive(Debug)]
pub struct Journal {
    host_path: String,
    file: File,
}

fn io_err(path: &str, source: io::Error) -> TuneError {
    TuneError::Journal {
        path: path.to_string(),
        source,
    }
}

/// Sync a directory so a new entry in it survives a crash.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Create `dir` and its missing parents beneath the root, syncing the parent of each new
/// directory so that it survives a crash.
fn create_dir_synced(root: &Root, dir: &str) -> Result<(), TuneError> {
    for made in root.mkdir_all(dir, 0o755)? {
        let real = root.path(&made)?;
        sync_parent(&real).map_err(|e| io_err(&made, e))?;
    }
    Ok(())
}

/// Sync the directory holding `p` after an entry was added to or removed from it.
pub(crate) fn sync_parent(p: &Path) -> io::Result<()> {
    p.parent().map_or(Ok(()), sync_dir)
}

impl Journal {
    /// Create a new journal in `dir` (a host path below `root`) and write its first record.
    pub fn create(root: &Root, dir: &str, begin: &Record) -> Result<Journal, TuneError> {
        create_dir_synced(root, dir)?;
        let real_dir = root.path(dir)?;
        let stamp = compact_stamp(SystemTime::now());
        let pid = std::process::id();
        for n in 0..1000u32 {
            let name = if n == 0 {
                format!("journal-{stamp}-{pid}.jsonl")
            } else {
                format!("journal-{stamp}-{pid}-{n}.jsonl")
            };
            let host_path = format!("{}/{name}", dir.trim_end_matches('/'));
            match root.create_new_append(&host_path, 0o644) {
                Ok(file) => {
                    sync_dir(&real_dir).map_err(|e| io_err(dir, e))?;
                    let mut j = Journal { host_path, file };
                    j.append(begin)?;
                    return Ok(j);
                }
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::EXIST.raw_os_error()) => {
                    continue
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(io_err(
            dir,
            io::Error::new(io::ErrorKind::AlreadyExists, "no free journal name"),
        ))
    }

    /// Open an existing journal to append (revert records): a regular file only, never a link
    /// followed.
    pub fn open_append(root: &Root, host_path: &str) -> Result<Journal, TuneError> {
        let file = root.open_append_regular(host_path)?;
        Ok(Journal {
            host_path: host_path.to_string(),
            file,
        })
    }

    /// The journal's host path (`/var/lib/wirespeed/journal-...jsonl`).
    pub fn host_path(&self) -> &str {
        &self.host_path
    }

    /// End a line cut short ([`JournalFile::torn_tail`]) so that the next record starts a
    /// line of its own instead of being glued to it.
    pub fn end_torn_line(&mut self) -> Result<(), TuneError> {
        self.file
            .write_all(b"\n")
            .and_then(|_| self.file.sync_all())
            .map_err(|e| io_err(&self.host_path, e))
    }

    /// Append one record as one line and sync it to disk before returning.
    pub fn append(&mut self, record: &Record) -> Result<(), TuneError> {
        let mut line = serde_json::to_string(record).map_err(|e| {
            io_err(
                &self.host_path,
                io::Error::new(io::ErrorKind::InvalidData, e),
            )
        })?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.sync_all())
            .map_err(|e| io_err(&self.host_path, e))
    }
}

/// Name of the file, in the journal directory, that names the run holding the lock.
pub const LOCK_NAME: &str = "lock";

/// One `tune --apply` or `tune revert` at a time per root: an exclusive `flock` on the
/// journal directory itself, held until dropped (the kernel drops it when the process ends,
/// however it ends, so a crash never leaves a stale lock). While it is held, the file `lock`
/// in the directory names the holder (pid, start time) for the refusal message; it is removed
/// when the lock is released.
#[derive(Debug)]
pub struct ApplyLock {
    root: Root,
    info: String,
    _dir: File,
}

impl ApplyLock {
    /// Take the lock, creating the journal directory if needed; refused with
    /// [`TuneError::Busy`] (naming the holder) when another run holds it.
    pub fn acquire(root: &Root, dir: &str) -> Result<ApplyLock, TuneError> {
        create_dir_synced(root, dir)?;
        let dir_fd = root.open_dir(dir)?;
        let info = format!("{}/{LOCK_NAME}", dir.trim_end_matches('/'));
        match rustix::fs::flock(
            &dir_fd,
            rustix::fs::FlockOperation::NonBlockingLockExclusive,
        ) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let holder = root.read(&info).unwrap_or_default();
                let holder: String = holder.trim().chars().take(200).collect();
                return Err(TuneError::Busy {
                    lock: dir.to_string(),
                    holder: if holder.is_empty() {
                        "another tune run (it has not written its name yet)".into()
                    } else {
                        holder.escape_debug().to_string()
                    },
                });
            }
            Err(e) => return Err(io_err(dir, e.into())),
        }
        let me = format!(
            "pid {} (wirespeed tune), started {}\n",
            std::process::id(),
            rfc3339(SystemTime::now())
        );
        root.create(&info, me.as_bytes())?;
        Ok(ApplyLock {
            root: root.clone(),
            info,
            _dir: dir_fd,
        })
    }
}

impl Drop for ApplyLock {
    fn drop(&mut self) {
        // Before the descriptor (and with it the lock) goes: no other run reads a stale name.
        let _ = self.root.remove(&self.info);
    }
}

/// The state of a journal, derived from its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// No end record: the apply was interrupted (or is still running).
    Interrupted,
    Applied,
    Reverted,
    /// A revert left values that someone else had changed.
    PartlyReverted,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Interrupted => "interrupted",
            State::Applied => "applied",
            State::Reverted => "reverted",
            State::PartlyReverted => "partly reverted",
        }
    }
}

/// A journal read back from disk.
#[derive(Debug, Clone)]
pub struct JournalFile {
    pub host_path: String,
    pub records: Vec<Record>,
    /// True when the last line was cut short (a crash while writing it) and was ignored.
    pub torn_tail: bool,
    /// Lines that are not records (1-based), with the reason; everything else was read.
    pub unreadable: Vec<Unreadable>,
}

/// A journal line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

/// One change with how it ended.
#[derive(Debug, Clone)]
pub struct Entry {
    pub seq: u32,
    pub step: usize,
    pub finding: String,
    pub undo: Undo,
    /// `None` when the apply stopped between the change record and its result.
    pub outcome: Option<Outcome>,
}

impl JournalFile {
    /// Parse a journal's text. Every line that is a record is kept, whatever surrounds it;
    /// the others are listed in [`JournalFile::unreadable`] (an unterminated last line, the
    /// mark of a crash while writing it, is [`JournalFile::torn_tail`] instead). Parsing
    /// never fails: an empty or wholly unreadable journal has no records.
    pub fn parse(host_path: &str, text: &str) -> Result<JournalFile, TuneError> {
        let mut records = Vec::new();
        let mut torn_tail = false;
        let mut unreadable = Vec::new();
        let terminated = text.ends_with('\n');
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(line) {
                Ok(r) => records.push(r),
                Err(_) if i + 1 == lines.len() && !terminated => torn_tail = true,
                Err(e) => unreadable.push(Unreadable {
                    line: i + 1,
                    reason: e.to_string(),
                }),
            }
        }
        if !records.is_empty() && !matches!(records.first(), Some(Record::Begin { .. })) {
            unreadable.push(Unreadable {
                line: 1,
                reason: "no begin record (the journal's first line is missing or damaged)".into(),
            });
            unreadable.sort_by_key(|u| u.line);
            unreadable.dedup_by_key(|u| u.line);
        }
        Ok(JournalFile {
            host_path: host_path.to_string(),
            records,
            torn_tail,
            unreadable,
        })
    }

    /// The unreadable lines, as one line of text for people: `line 3 (expected value at
    /// line 1 column 1); line 7 (...)`.
    pub fn unreadable_summary(&self) -> Option<String> {
        if self.unreadable.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .unreadable
            .iter()
            .map(|u| format!("line {} ({})", u.line, u.reason))
            .collect();
        Some(parts.join("; "))
    }

    /// Read a journal through the root: a regular file only (a symbolic link, a FIFO, a
    /// device is refused without being followed, opened for long or waited on).
    pub fn read(root: &Root, host_path: &str) -> Result<JournalFile, TuneError> {
        let text = root.read_regular(host_path)?;
        JournalFile::parse(host_path, &text)
    }

    /// Why this journal is cut short, when it is: empty, or with no change and no end after
    /// its first record (cut after its first line, or in the middle of the next one; an apply
    /// that stopped before its first change looks the same, and changed nothing). A revert of
    /// it is never complete (a revert record appended since does not make it whole): whatever
    /// followed the cut is not known. (A journal cut after a
    /// change is an interrupted apply, as after a crash, whose changes revert restores; its
    /// state says `interrupted`.)
    pub fn truncated(&self) -> Option<String> {
        if self.records.is_empty() && !self.unreadable.is_empty() {
            return None; // nothing but damaged lines: listed line by line instead
        }
        if self.records.is_empty() {
            return Some(if self.torn_tail {
                "its only line is cut short: not even its first record is there".into()
            } else {
                "empty: not even its first record is there".into()
            });
        }
        let changed = self
            .records
            .iter()
            .any(|r| matches!(r, Record::Change { .. }));
        let ended = self.records.iter().any(|r| matches!(r, Record::End { .. }));
        if !changed && !ended {
            return Some(
                "nothing readable after its first record, not even an end: the journal was cut \
                 after its first line (or the apply stopped before its first change)"
                    .into(),
            );
        }
        None
    }

    pub fn state(&self) -> State {
        let last_revert = self.records.iter().rev().find_map(|r| match r {
            Record::Revert { complete, .. } => Some(*complete),
            _ => None,
        });
        match last_revert {
            Some(true) => State::Reverted,
            Some(false) => State::PartlyReverted,
            None if self.records.iter().any(|r| matches!(r, Record::End { .. })) => State::Applied,
            None => State::Interrupted,
        }
    }

    /// When the apply began.
    pub fn created(&self) -> String {
        match self.records.first() {
            Some(Record::Begin { created, .. }) => created.clone(),
            _ => String::new(),
        }
    }

    pub fn iface(&self) -> Option<String> {
        match self.records.first() {
            Some(Record::Begin { iface, .. }) => iface.clone(),
            _ => None,
        }
    }

    /// The changes in the order they were made, each with its outcome (a result names the
    /// latest change of its sequence number; one naming none is ignored). Linear in the
    /// number of records: the latest change of each number is found by an index, never by a
    /// search.
    pub fn entries(&self) -> Vec<Entry> {
        let mut out: Vec<Entry> = Vec::new();
        let mut latest: HashMap<u32, usize> = HashMap::new();
        for r in &self.records {
            match r {
                Record::Change {
                    seq,
                    step,
                    finding,
                    undo,
                } => {
                    latest.insert(*seq, out.len());
                    out.push(Entry {
                        seq: *seq,
                        step: *step,
                        finding: finding.clone(),
                        undo: undo.clone(),
                        outcome: None,
                    });
                }
                Record::Result { seq, outcome, .. } => {
                    if let Some(&i) = latest.get(seq) {
                        out[i].outcome = Some(*outcome);
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// The journal `name` names: a host path as given, or a file name in `dir`.
pub fn resolve(dir: &str, name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("{}/{name}", dir.trim_end_matches('/'))
    }
}

/// Where a host path of `root` is on this machine (under `--root DIR`, DIR's copy; the same
/// path on the live host), for text that names a journal file to open.
pub fn shown_path(root: &Root, host_path: &str) -> String {
    root.path(host_path)
        .map_or_else(|_| host_path.to_string(), |p| p.display().to_string())
}

/// Journals in `dir` (host path), oldest first (their names sort by time).
pub fn list(root: &Root, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = root
        .list_opt(dir)
        .into_iter()
        .filter(|n| n.starts_with("journal-") && n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| format!("{}/{n}", dir.trim_end_matches('/')))
        .collect()
}

/// RFC 3339 UTC with milliseconds: `2025-11-22T07:55:01.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    Utc::from_system(t).rfc3339()
}

/// `20251122T075501Z`, for file names.
pub fn compact_stamp(t: SystemTime) -> String {
    Utc::from_system(t).compact()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_journal_name_is_a_file_in_the_directory_unless_a_path() {
        assert_eq!(resolve("/var/lib/ws/", "j.jsonl"), "/var/lib/ws/j.jsonl");
        assert_eq!(resolve("/var/lib/ws", "j.jsonl"), "/var/lib/ws/j.jsonl");
        assert_eq!(resolve("/var/lib/ws", "/tmp/j.jsonl"), "/tmp/j.jsonl");
    }

    #[test]
    fn time_formats() {
        let t = UNIX_EPOCH + Duration::from_millis(1_763_798_101_123);
        assert_eq!(rfc3339(t), "2025-11-22T07:55:01.123Z");
        assert_eq!(compact_stamp(t), "20251122T075501Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // a leap day
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(compact_stamp(t), "20000229T000000Z");
    }

    fn begin() -> Record {
        Record::Begin {
            schema: JOURNAL_SCHEMA,
            created: "t".into(),
            tool: "wirespeed test".into(),
            root: "/".into(),
            iface: Some("eth0".into()),
            steps: 1,
            addressed: vec!["socket-buffers-small".into()],
        }
    }

    #[test]
    fn appends_reads_back_and_tolerates_a_torn_tail() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let mut j = Journal::create(&root, DEFAULT_DIR, &begin()).unwrap();
        let undo = Undo::File {
            path: "/proc/sys/net/core/rmem_max".into(),
            form: Form::Words,
            old: "212992\n".into(),
            new: "268435456\n".into(),
        };
        j.append(&Record::Change {
            seq: 1,
            step: 0,
            finding: "socket-buffers-small".into(),
            undo: undo.clone(),
        })
        .unwrap();
        let path = j.host_path().to_string();
        assert!(path.starts_with("/var/lib/wirespeed/journal-"));
        let jf = JournalFile::read(&root, &path).unwrap();
        assert_eq!(jf.state(), State::Interrupted);
        assert_eq!(jf.entries().len(), 1);
        assert_eq!(jf.entries()[0].outcome, None);
        assert_eq!(list(&root, DEFAULT_DIR), vec![path.clone()]);

        // a crash while writing the next record leaves half a line: ignored
        let mut text = root.read(&path).unwrap();
        text.push_str("{\"record\":\"result\",\"se");
        let jf = JournalFile::parse(&path, &text).unwrap();
        assert!(jf.torn_tail);
        assert_eq!(jf.records.len(), 2);
        // broken lines in the middle are listed, and the records around them still count
        let bad = format!(
            "{}garbage\n{{}}\n\n{{\"record\":\"result\",\"seq\":1,\"outcome\":\"applied\",\"detail\":null}}\n",
            root.read(&path).unwrap()
        );
        let jf = JournalFile::parse(&path, &bad).unwrap();
        assert_eq!(jf.records.len(), 3);
        let lines: Vec<usize> = jf.unreadable.iter().map(|u| u.line).collect();
        assert_eq!(lines, vec![3, 4]);
        assert_eq!(jf.entries()[0].outcome, Some(Outcome::Applied));
        assert!(jf.unreadable_summary().unwrap().starts_with("line 3 ("));
        // a damaged first line: the changes are still there
        let headless = bad.replacen("{\"record\":\"begin\"", "{\"record\":\"beg", 1);
        let jf = JournalFile::parse(&path, &headless).unwrap();
        assert_eq!(jf.entries().len(), 1);
        assert_eq!(jf.unreadable[0].line, 1);
        // empty and all-garbage journals have nothing in them, and say so
        let jf = JournalFile::parse(&path, "").unwrap();
        assert!(jf.records.is_empty() && jf.unreadable.is_empty());
        let jf = JournalFile::parse(&path, "\u{0}\u{0}\n\n").unwrap();
        assert!(jf.records.is_empty());
        assert_eq!(jf.unreadable.len(), 1);

        j.append(&Record::Result {
            seq: 1,
            outcome: Outcome::Applied,
            detail: None,
        })
        .unwrap();
        j.append(&Record::End {
            finished: "t".into(),
            applied: 1,
            not_movable: 0,
            failed: 0,
        })
        .unwrap();
        let jf = JournalFile::read(&root, &path).unwrap();
        assert_eq!(jf.state(), State::Applied);
        assert_eq!(jf.entries()[0].outcome, Some(Outcome::Applied));
        // two journals in the same second get distinct names
        let j2 = Journal::create(&root, DEFAULT_DIR, &begin()).unwrap();
        assert_ne!(j2.host_path(), path);
        assert_eq!(list(&root, DEFAULT_DIR).len(), 2);
    }

    #[test]
    fn a_result_names_the_latest_change_of_its_number_and_unknown_numbers_are_ignored() {
        let change = |seq: u32, path: &str| {
            serde_json::to_string(&Record::Change {
                seq,
                step: 0,
                finding: "x".into(),
                undo: Undo::Dir { path: path.into() },
            })
            .unwrap()
        };
        let result = |seq: u32, outcome: &str| {
            format!(r#"{{"record":"result","seq":{seq},"outcome":"{outcome}","detail":null}}"#)
        };
        let text = [
            serde_json::to_string(&begin()).unwrap(),
            change(1, "/a"),
            change(2, "/b"),
            result(99, "failed"),
            change(1, "/c"),
            result(1, "applied"),
            result(2, "failed"),
            result(7, "applied"),
        ]
        .join("\n")
            + "\n";
        let jf = JournalFile::parse("/j", &text).unwrap();
        let got: Vec<(String, Option<Outcome>)> = jf
            .entries()
            .iter()
            .map(|e| (e.undo.setting(), e.outcome))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/a".to_string(), None),
                ("/b".to_string(), Some(Outcome::Failed)),
                ("/c".to_string(), Some(Outcome::Applied)),
            ]
        );
        assert_eq!(jf.truncated(), None);
        // cut after the first line, in the middle of the second, or to nothing
        let first = text.find('\n').unwrap() + 1;
        for cut in [&text[..first], &text[..first + 10], "", "{\"record\":\"be"] {
            let jf = JournalFile::parse("/j", cut).unwrap();
            assert!(jf.truncated().is_some(), "{cut:?}");
        }
    }
}
