//! Snapshots: a `.tar.gz` of exactly the host files the collectors read, so that a host can be
//! diagnosed elsewhere.
//!
//! **Capture** ([`capture`]) collects [`HostFacts`] through a recording [`Root`], then writes
//! every file that was read (with the bytes that were read), every directory that was listed,
//! every path that was probed, and the symbolic links met on the way to each of them (as relative
//! links, the way sysfs has them), plus the ethtool answers as files under
//! `wirespeed/ethtool/<iface>/`. Entries of a listed `/sys` directory that were not read become
//! empty placeholder files so that the listing reads the same; nothing under `/proc/<pid>/` but
//! `comm` is ever written (no environment, no command lines).
//!
//! **Open** ([`Snapshot::open`]) unpacks into a private temporary directory and refuses anything
//! unsafe: absolute paths, `..` components, entries below a symbolic link, links that are absolute
//! or resolve outside the tree, hard links and device nodes, a file larger than
//! [`MAX_FILE_BYTES`] (a 1 MB archive can hold a 900 MiB `proc/interrupts` of zeros), and
//! archives that unpack to more than [`MAX_UNPACKED_BYTES`]. Entry names in messages have
//! their control characters escaped, so a name cannot drive the terminal it is printed on.
//!
//! An unpacked snapshot is removed when the [`Snapshot`] is dropped; a program that may be
//! stopped by SIGINT or SIGTERM while one is open (or being unpacked) calls
//! [`remove_on_signals`] once, and the directories are removed before the process ends.

use crate::facts::{collect, HostFacts};
use crate::root::Recording;
use crate::Root;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

/// Largest total of file bytes a snapshot may unpack to. A capture of a large host is a few
/// MiB.
pub const MAX_UNPACKED_BYTES: u64 = 256 << 20;
/// Largest single file a snapshot may hold: room for the `/proc/interrupts` of a host with
/// thousands of CPUs, and the same as what [`Root::read`] returns at most.
pub const MAX_FILE_BYTES: u64 = crate::root::MAX_READ;
/// Largest number of entries a snapshot may hold.
pub const MAX_ENTRIES: usize = 2_000_000;

/// A snapshot that could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{archive}: unsafe entry \"{entry}\": {reason}")]
    Unsafe {
        archive: String,
        entry: String,
        reason: String,
    },
    #[error("{archive}: {reason}")]
    TooLarge { archive: String, reason: String },
}

fn io_err(path: impl AsRef<Path>, source: io::Error) -> SnapshotError {
    SnapshotError::Io {
        path: printable(&path.as_ref().display().to_string()),
        source,
    }
}

/// `s` with control characters (terminal escapes, newlines, NUL) written as Rust escapes
/// (`\u{1b}`), everything else as is.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
    Placeholder,
    Link(String),
}

/// What a capture wrote.
#[derive(Debug, Clone)]
pub struct CaptureSummary {
    pub files: usize,
    pub placeholders: usize,
    pub links: usize,
    pub dirs: usize,
    pub bytes: u64,
    /// The facts collected while recording (what `doctor --snapshot` will read back).
    pub facts: HostFacts,
}

/// Only `/proc/<pid>/comm` of a process may enter a snapshot.
fn allowed(rel: &[String]) -> bool {
    match rel {
        [p, pid, rest @ ..] if p == "proc" && pid.bytes().all(|b| b.is_ascii_digit()) => {
            rest.is_empty() || (rest.len() == 1 && rest[0] == "comm")
        }
        [p, s, ..] if p == "proc" && (s == "self" || s == "thread-self") => false,
        _ => true,
    }
}

struct Builder<'a> {
    dir: &'a Path,
    entries: BTreeMap<String, Entry>,
}

impl Builder<'_> {
    fn emit(&mut self, comps: &[String], e: Entry) {
        if comps.is_empty() || !allowed(comps) {
            return;
        }
        for i in 1..comps.len() {
            self.entries
                .entry(comps[..i].join("/"))
                .or_insert(Entry::Dir);
        }
        let key = comps.join("/");
        match (self.entries.get(&key), &e) {
            (Some(Entry::File(_)), _) | (Some(Entry::Link(_)), _) => {}
            (Some(_), Entry::Placeholder) | (Some(_), Entry::Dir) => {}
            _ => {
                self.entries.insert(key, e);
            }
        }
    }

    /// Follow `comps` from the root on the real file system, emitting directories and links met;
    /// returns the physical components of the final path and whether it is a regular file.
    fn walk(&mut self, comps: Vec<String>, hops: &mut u32) -> Option<(Vec<String>, bool)> {
        let mut cur: Vec<String> = Vec::new();
        let mut queue: VecDeque<String> = comps.into();
        while let Some(c) = queue.pop_front() {
            match c.as_str() {
                "" | "." => continue,
                ".." => {
                    cur.pop();
                    continue;
                }
                _ => {}
            }
            let mut cand = cur.clone();
            cand.push(c);
            let real = self.dir.join(cand.join("/"));
            let meta = fs::symlink_metadata(&real).ok()?;
            if meta.file_type().is_symlink() && points_into_a_process(&real) {
                // `/proc/net` → `self/net`: keep it as what it shows at its own path, never as
                // a process directory.
                let Ok(m) = fs::metadata(&real) else {
                    return None;
                };
                if m.is_dir() {
                    self.emit(&cand, Entry::Dir);
                    cur = cand;
                    continue;
                }
                if !queue.is_empty() {
                    return None;
                }
                return Some((cand, m.is_file()));
            }
            if meta.file_type().is_symlink() {
                *hops += 1;
                if *hops > 40 {
                    return None;
                }
                let target = fs::read_link(&real).ok()?;
                let mut tcomps: Vec<String> = if target.is_absolute() {
                    Vec::new()
                } else {
                    cur.clone()
                };
                for tc in target.components() {
                    match tc {
                        Component::Normal(s) => tcomps.push(s.to_string_lossy().into_owned()),
                        Component::ParentDir => tcomps.push("..".into()),
                        _ => {}
                    }
                }
                let (phys, is_file) = self.walk(tcomps, hops)?;
                self.emit(&cand, Entry::Link(relative(&cur, &phys)));
                if is_file && !queue.is_empty() {
                    return None;
                }
                if is_file {
                    return Some((phys, true));
                }
                cur = phys;
            } else if meta.is_dir() {
                self.emit(&cand, Entry::Dir);
                cur = cand;
            } else {
                if !queue.is_empty() {
                    return None;
                }
                return Some((cand, meta.is_file()));
            }
        }
        Some((cur, false))
    }

    fn walk_host(&mut self, host_path: &str) -> Option<(Vec<String>, bool)> {
        let comps: Vec<String> = host_path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        self.walk(comps, &mut 0)
    }
}

/// True for a link whose target is `/proc/self`, `/proc/thread-self` or `/proc/<pid>` (or below).
fn points_into_a_process(link: &Path) -> bool {
    let Ok(t) = fs::read_link(link) else {
        return false;
    };
    let first = |p: &Path| {
        p.components().find_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
    };
    let is_proc_dir =
        |s: &str| s == "self" || s == "thread-self" || s.bytes().all(|b| b.is_ascii_digit());
    let in_proc = link
        .parent()
        .is_some_and(|p| p.file_name().is_some_and(|n| n == "proc"));
    if t.is_absolute() {
        let mut it = t.components().filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        });
        return it.next().as_deref() == Some("proc") && it.next().is_some_and(|s| is_proc_dir(&s));
    }
    in_proc && first(&t).is_some_and(|s| is_proc_dir(&s))
}

/// The relative link text that leads from directory `from` to `to` (both physical).
fn relative(from: &[String], to: &[String]) -> String {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(to[common..].iter().map(String::as_str));
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

fn build_entries(dir: &Path, rec: &Recording) -> BTreeMap<String, Entry> {
    let mut b = Builder {
        dir,
        entries: BTreeMap::new(),
    };
    let mut failed_phys = BTreeSet::new();
    for p in &rec.failed {
        if let Some((phys, _)) = b.walk_host(p) {
            failed_phys.insert(phys.join("/"));
        }
    }
    for (p, bytes) in &rec.files {
        if let Some((phys, true)) = b.walk_host(p) {
            b.emit(&phys, Entry::File(bytes.clone()));
        }
    }
    for p in &rec.probed {
        if let Some((phys, is_file)) = b.walk_host(p) {
            b.emit(
                &phys,
                if is_file {
                    Entry::Placeholder
                } else {
                    Entry::Dir
                },
            );
        }
    }
    for p in &rec.dirs {
        let Some((phys, false)) = b.walk_host(p) else {
            continue;
        };
        b.emit(&phys, Entry::Dir);
        let in_sys = phys.first().map(String::as_str) == Some("sys");
        let Ok(rd) = fs::read_dir(dir.join(phys.join("/"))) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let mut child = phys.clone();
            child.push(name);
            let Ok(meta) = fs::symlink_metadata(dir.join(child.join("/"))) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                if let Some((tphys, is_file)) = b.walk(child.clone(), &mut 0) {
                    if is_file && in_sys && !failed_phys.contains(&tphys.join("/")) {
                        b.emit(&tphys, Entry::Placeholder);
                    } else if !is_file {
                        b.emit(&tphys, Entry::Dir);
                    }
                }
            } else if meta.is_dir() {
                b.emit(&child, Entry::Dir);
            } else if in_sys && !failed_phys.contains(&child.join("/")) {
                b.emit(&child, Entry::Placeholder);
            }
        }
    }
    for (p, bytes) in &rec.synthetic {
        let comps: Vec<String> = p
            .split('/')
            .filter(|s| !s.is_empty() && *s != "..")
            .map(str::to_string)
            .collect();
        b.emit(&comps, Entry::File(bytes.clone()));
    }
    // A placeholder never stands where a link or file is; drop entries the walk made links of.
    b.entries
}

fn write_archive(
    entries: &BTreeMap<String, Entry>,
    out: impl Write,
) -> io::Result<(usize, usize, usize, usize, u64)> {
    let gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let (mut files, mut ph, mut links, mut dirs, mut bytes) = (0, 0, 0, 0, 0u64);
    for (path, e) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        match e {
            Entry::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                tar.append_data(&mut h, format!("{path}/"), io::empty())?;
                dirs += 1;
            }
            Entry::File(data) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(data.len() as u64);
                tar.append_data(&mut h, path, data.as_slice())?;
                files += 1;
                bytes += data.len() as u64;
            }
            Entry::Placeholder => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(0);
                tar.append_data(&mut h, path, io::empty())?;
                ph += 1;
            }
            Entry::Link(target) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                tar.append_link(&mut h, path, target)?;
                links += 1;
            }
        }
    }
    tar.into_inner()?.finish()?.flush()?;
    Ok((files, ph, links, dirs, bytes))
}

/// Collect facts from `root` while recording, and write the snapshot to `out_path` (through a
/// temporary file renamed into place).
pub fn capture(root: &Root, out_path: &Path) -> Result<CaptureSummary, SnapshotError> {
    let rec_root = root.recording();
    let facts = collect(&rec_root);
    let rec = rec_root.recorded().unwrap_or_default();
    let entries = build_entries(root.dir(), &rec);
    let tmp = out_path.with_extension("partial");
    let f = fs::File::create(&tmp).map_err(|e| io_err(&tmp, e))?;
    let (files, placeholders, links, dirs, bytes) =
        match write_archive(&entries, io::BufWriter::new(f)) {
            Ok(v) => v,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(io_err(out_path, e));
            }
        };
    fs::rename(&tmp, out_path).map_err(|e| io_err(out_path, e))?;
    Ok(CaptureSummary {
        files,
        placeholders,
        links,
        dirs,
        bytes,
        facts,
    })
}

/// An unpacked snapshot; the temporary directory is removed when it is dropped.
#[derive(Debug)]
pub struct Snapshot {
    dir: tempfile::TempDir,
    root: Root,
}

impl Snapshot {
    /// The root to read the snapshot through.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Where it is unpacked.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Unpack `archive` (a `.tar.gz` written by [`capture`], or any tar.gz of a host tree) safely.
    pub fn open(archive: &Path) -> Result<Snapshot, SnapshotError> {
        let f = fs::File::open(archive).map_err(|e| io_err(archive, e))?;
        let dir = tempfile::Builder::new()
            .prefix("wirespeed-snapshot-")
            .tempdir()
            .map_err(|e| io_err("temporary directory", e))?;
        signals::register(dir.path());
        if let Err(e) = unpack(archive, io::BufReader::new(f), dir.path()) {
            signals::unregister(dir.path());
            return Err(e);
        }
        let root = Root::new(dir.path());
        Ok(Snapshot { dir, root })
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        signals::unregister(self.dir.path());
    }
}

/// Remove every snapshot directory still open (or being unpacked) when SIGINT or SIGTERM
/// arrives, then end the process as the signal would have. Call once, early; later calls do
/// nothing. Other handlers of these signals keep running (they are chained).
pub fn remove_on_signals() -> io::Result<()> {
    signals::install()
}

/// The directories to remove on a signal, and the thread that does it.
mod signals {
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, OnceLock};

    use signal_hook::consts::{SIGINT, SIGTERM};

    fn dirs() -> &'static Mutex<Vec<PathBuf>> {
        static DIRS: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
        DIRS.get_or_init(|| Mutex::new(Vec::new()))
    }

    pub fn register(dir: &Path) {
        let mut d = dirs().lock().unwrap_or_else(|p| p.into_inner());
        d.push(dir.to_path_buf());
    }

    pub fn unregister(dir: &Path) {
        let mut d = dirs().lock().unwrap_or_else(|p| p.into_inner());
        d.retain(|x| x != dir);
    }

    pub fn install() -> std::io::Result<()> {
        static INSTALLED: OnceLock<()> = OnceLock::new();
        if INSTALLED.get().is_some() {
            return Ok(());
        }
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let _ = INSTALLED.set(());
        std::thread::Builder::new()
            .name("snapshot-cleanup".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    // Hold the lock to the end: no snapshot opens or closes meanwhile.
                    let d = dirs().lock().unwrap_or_else(|p| p.into_inner());
                    for dir in d.iter() {
                        // An unpack still writing may add entries as they go: try again.
                        for _ in 0..10 {
                            if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
                                break;
                            }
                        }
                    }
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            })?;
        Ok(())
    }
}

fn entry_components(archive: &str, raw: &Path) -> Result<Vec<String>, SnapshotError> {
    let unsafe_entry = |reason: &str| SnapshotError::Unsafe {
        archive: archive.to_string(),
        entry: printable(&raw.display().to_string()),
        reason: reason.to_string(),
    };
    let mut out = Vec::new();
    for c in raw.components() {
        match c {
            Component::Normal(s) => out.push(
                s.to_str()
                    .ok_or_else(|| unsafe_entry("name is not UTF-8"))?
                    .to_string(),
            ),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(unsafe_entry("absolute path")),
            Component::ParentDir => return Err(unsafe_entry("'..' in path")),
        }
    }
    if out.is_empty() {
        return Err(unsafe_entry("empty path"));
    }
    Ok(out)
}

/// Refuse to create anything below an existing symbolic link.
fn check_parents(dest: &Path, comps: &[String]) -> Result<(), String> {
    let mut p = dest.to_path_buf();
    for c in &comps[..comps.len() - 1] {
        p.push(c);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("lies below the symbolic link {c:?}"))
            }
            Ok(m) if !m.is_dir() => return Err(format!("lies below the file {c:?}")),
            _ => {}
        }
    }
    Ok(())
}

/// A link target must be relative: leading `..` components, then names, and stay in the tree.
fn check_link(comps: &[String], target: &Path) -> Result<(), String> {
    if target.is_absolute() {
        return Err("absolute link target".into());
    }
    let mut ups = 0usize;
    let mut seen_name = false;
    for c in target.components() {
        match c {
            Component::ParentDir if !seen_name => ups += 1,
            Component::Normal(_) => seen_name = true,
            Component::CurDir => {}
            _ => return Err("link target has '..' after a name".into()),
        }
    }
    if ups > comps.len() - 1 {
        return Err("link target leaves the tree".into());
    }
    Ok(())
}

fn unpack(archive_path: &Path, reader: impl Read, dest: &Path) -> Result<(), SnapshotError> {
    let archive = printable(&archive_path.display().to_string());
    let gz = flate2::read::GzDecoder::new(reader);
    let mut ar = tar::Archive::new(gz);
    let mut total: u64 = 0;
    let mut count = 0usize;
    let unsafe_err = |entry: &Path, reason: String| SnapshotError::Unsafe {
        archive: archive.clone(),
        entry: printable(&entry.display().to_string()),
        reason,
    };
    for entry in ar.entries().map_err(|e| io_err(archive_path, e))? {
        let mut entry = entry.map_err(|e| io_err(archive_path, e))?;
        count += 1;
        if count > MAX_ENTRIES {
            return Err(SnapshotError::TooLarge {
                archive,
                reason: format!("more than {MAX_ENTRIES} entries"),
            });
        }
        let raw: PathBuf = entry
            .path()
            .map_err(|e| io_err(archive_path, e))?
            .into_owned();
        let comps = entry_components(&archive, &raw)?;
        check_parents(dest, &comps).map_err(|r| unsafe_err(&raw, r))?;
        let target = dest.join(comps.join("/"));
        let kind = entry.header().entry_type();
        let mkparent = |t: &Path| -> Result<(), SnapshotError> {
            if let Some(p) = t.parent() {
                fs::create_dir_all(p).map_err(|e| io_err(p, e))?;
            }
            Ok(())
        };
        match kind {
            tar::EntryType::Directory => {
                if fs::symlink_metadata(&target).is_ok_and(|m| !m.is_dir()) {
                    return Err(unsafe_err(&raw, "directory over an existing entry".into()));
                }
                fs::create_dir_all(&target).map_err(|e| io_err(&target, e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.header().size().map_err(|e| io_err(archive_path, e))?;
                if size > MAX_FILE_BYTES {
                    return Err(SnapshotError::TooLarge {
                        archive,
                        reason: format!(
                            "entry \"{}\" is {size} bytes, more than the {MAX_FILE_BYTES} a file may hold",
                            printable(&raw.display().to_string())
                        ),
                    });
                }
                total = total.saturating_add(size);
                if total > MAX_UNPACKED_BYTES {
                    return Err(SnapshotError::TooLarge {
                        archive,
                        reason: format!("unpacks to more than {MAX_UNPACKED_BYTES} bytes"),
                    });
                }
                if fs::symlink_metadata(&target).is_ok() {
                    return Err(unsafe_err(&raw, "duplicate entry".into()));
                }
                mkparent(&target)?;
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .map_err(|e| io_err(&target, e))?;
                let copied = io::copy(&mut (&mut entry).take(size), &mut f)
                    .map_err(|e| io_err(&target, e))?;
                if copied != size {
                    return Err(io_err(
                        archive_path,
                        io::Error::new(io::ErrorKind::UnexpectedEof, "truncated entry"),
                    ));
                }
            }
            tar::EntryType::Symlink => {
                let link = entry
                    .link_name()
                    .map_err(|e| io_err(archive_path, e))?
                    .ok_or_else(|| unsafe_err(&raw, "symbolic link without a target".into()))?
                    .into_owned();
                check_link(&comps, &link).map_err(|r| unsafe_err(&raw, r))?;
                if fs::symlink_metadata(&target).is_ok() {
                    return Err(unsafe_err(&raw, "duplicate entry".into()));
                }
                mkparent(&target)?;
                std::os::unix::fs::symlink(&link, &target).map_err(|e| io_err(&target, e))?;
            }
            other => {
                return Err(unsafe_err(
                    &raw,
                    format!(
                    "entry type {other:?} is not allowed (only files, directories, relative links)"
                ),
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(host: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hosts")
            .join(host)
    }

    #[test]
    fn relative_links() {
        let v = |s: &str| s.split('/').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            relative(
                &v("sys/class/net"),
                &v("sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0")
            ),
            "../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0"
        );
        assert_eq!(relative(&v("a/b"), &v("a/b/c")), "c");
    }

    #[test]
    fn captured_fixture_reads_back_the_same_facts() {
        for host in ["crow-9900x-cx5-x4", "sl-w9-x3650-cx3"] {
            let t = tempfile::tempdir().unwrap();
            let out = t.path().join("snap.tar.gz");
            let summary = capture(&Root::new(fixture(host)), &out).unwrap();
            assert!(
                summary.files > 50 && summary.links > 5,
                "{host}: {summary:?}"
            );
            let snap = Snapshot::open(&out).unwrap();
            let again = collect(snap.root());
            assert_eq!(again, summary.facts, "{host}");
            assert_eq!(again, collect(&Root::new(fixture(host))), "{host}");
            // nothing but comm from processes
            let mut bad = Vec::new();
            for pid in fs::read_dir(snap.dir().join("proc")).unwrap() {
                let pid = pid.unwrap();
                if pid
                    .file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                {
                    for f in fs::read_dir(pid.path()).unwrap() {
                        let n = f.unwrap().file_name();
                        if n != "comm" {
                            bad.push(n);
                        }
                    }
                }
            }
            assert!(bad.is_empty(), "{bad:?}");
            // links stayed links
            let l = fs::symlink_metadata(snap.dir().join("sys/class/net/p2p1").as_path());
            if host == "sl-w9-x3650-cx3" {
                assert!(l.unwrap().file_type().is_symlink());
            }
        }
    }

    #[test]
    fn live_capture_reads_back_the_same_facts() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("live.tar.gz");
        let summary = capture(&Root::live(), &out).unwrap();
        let snap = Snapshot::open(&out).unwrap();
        assert_eq!(collect(snap.root()), summary.facts);
    }

    fn archive(
        build: impl FnOnce(&mut tar::Builder<flate2::write::GzEncoder<Vec<u8>>>),
    ) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        build(&mut b);
        b.into_inner().unwrap().finish().unwrap()
    }

    fn raw_header(path: &str, kind: tar::EntryType, link: Option<&str>, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        // write the name bytes directly so that unsafe names reach the reader
        let name = &mut h.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o644);
        if let Some(l) = link {
            let ln = &mut h.as_old_mut().linkname;
            ln[..l.len()].copy_from_slice(l.as_bytes());
        }
        h.set_cksum();
        h
    }

    fn open_bytes(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.tar.gz");
        fs::write(&p, bytes).unwrap();
        Snapshot::open(&p)
    }

    #[test]
    fn unsafe_archives_are_refused() {
        let cases: Vec<(&str, Vec<u8>)> = vec![
            (
                "absolute",
                archive(|b| {
                    let h = raw_header("/etc/passwd", tar::EntryType::Regular, None, 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
            (
                "dotdot",
                archive(|b| {
                    let h = raw_header("proc/../../x", tar::EntryType::Regular, None, 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
            (
                "escaping link",
                archive(|b| {
                    let h = raw_header("sys/x", tar::EntryType::Symlink, Some("../../etc"), 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
            (
                "absolute link",
                archive(|b| {
                    let h = raw_header("sys/x", tar::EntryType::Symlink, Some("/etc"), 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
            (
                "dotdot inside link",
                archive(|b| {
                    let h = raw_header("sys/x", tar::EntryType::Symlink, Some("a/../../.."), 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
            (
                "write through link",
                archive(|b| {
                    let h = raw_header("sys/l", tar::EntryType::Symlink, Some(".."), 0);
                    b.append(&h, io::empty()).unwrap();
                    let h = raw_header("sys/l/evil", tar::EntryType::Regular, None, 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
            (
                "hard link",
                archive(|b| {
                    let h = raw_header("sys/h", tar::EntryType::Link, Some("sys/x"), 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
            (
                "device",
                archive(|b| {
                    let h = raw_header("sys/dev", tar::EntryType::Char, None, 0);
                    b.append(&h, io::empty()).unwrap();
                }),
            ),
        ];
        for (name, bytes) in cases {
            match open_bytes(&bytes) {
                Err(SnapshotError::Unsafe { .. }) => {}
                other => panic!("{name}: expected Unsafe, got {other:?}"),
            }
        }
        // a link to a sibling inside the tree is fine
        let ok = archive(|b| {
            let h = raw_header("sys/devices/d/", tar::EntryType::Directory, None, 0);
            b.append(&h, io::empty()).unwrap();
            let h = raw_header(
                "sys/class/net/x",
                tar::EntryType::Symlink,
                Some("../../devices/d"),
                0,
            );
            b.append(&h, io::empty()).unwrap();
        });
        let s = open_bytes(&ok).unwrap();
        assert!(s.root().exists("/sys/class/net/x"));
        // not gzip at all
        assert!(matches!(
            open_bytes(b"plain text"),
            Err(SnapshotError::Io { .. })
        ));
    }

    /// A header announcing `size` bytes, then no data: the cap must refuse it from the header.
    fn announced_only(path: &str, size: u64) -> Vec<u8> {
        let h = raw_header(path, tar::EntryType::Regular, None, size);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(h.as_bytes()).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn a_huge_file_is_refused_from_its_header_and_names_are_escaped() {
        let bytes = announced_only("proc/interrupts", 900 << 20);
        assert!(bytes.len() < 1024);
        match open_bytes(&bytes) {
            Err(e @ SnapshotError::TooLarge { .. }) => {
                let m = e.to_string();
                assert!(m.contains("\"proc/interrupts\" is 943718400 bytes"), "{m}");
                assert!(
                    m.contains(&format!("more than the {MAX_FILE_BYTES}")),
                    "{m}"
                );
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        let evil = "sys/\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let bytes = archive(|b| {
            let h = raw_header(evil, tar::EntryType::Symlink, Some("/etc"), 0);
            b.append(&h, io::empty()).unwrap();
        });
        let m = open_bytes(&bytes).unwrap_err().to_string();
        assert!(!m.chars().any(|c| c.is_control()), "{m:?}");
        assert!(m.contains("sys/\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"), "{m}");
        let m = announced_only(evil, 900 << 20);
        let m = open_bytes(&m).unwrap_err().to_string();
        assert!(!m.chars().any(|c| c.is_control()), "{m:?}");
        assert_eq!(printable("a\tb\nc"), "a\\tb\\nc");
    }
}
