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
//! archives that unpack to more than [`MAX_UNPACKED_BYTES`]. Every record is judged from its
//! header before its data is read: a GNU long name or link longer than [`MAX_NAME_BYTES`] or a
//! PAX header larger than [`MAX_PAX_BYTES`] is refused, never buffered (a 1 MB archive can
//! announce a 1 GiB name); entries and time are capped ([`MAX_ENTRIES`], [`MAX_UNPACK_TIME`]).
//! Entry names in messages have their control characters escaped and are shortened to
//! [`NAME_CHARS_SHOWN`] characters, so a name can neither drive the terminal it is printed on
//! nor fill it.
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
/// Largest number of entries (header records, extension records included) a snapshot may
/// hold. A capture of a large host has tens of thousands.
pub const MAX_ENTRIES: usize = 500_000;
/// Longest entry name or link target (a GNU long name or long link record, a PAX `path` or
/// `linkpath`), as Linux's `PATH_MAX`. Checked from the record's header, before it is read:
/// a longer one is refused, never truncated.
pub const MAX_NAME_BYTES: u64 = 4096;
/// Largest PAX extended header record, checked from its header before it is read.
pub const MAX_PAX_BYTES: u64 = 16 << 10;
/// Longest an unpack may take; past it the snapshot is refused.
pub const MAX_UNPACK_TIME: std::time::Duration = std::time::Duration::from_secs(60);

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
/// (`\u{1b}`), everything else as is: [`wirespeed_model::text::terminal`].
pub fn printable(s: &str) -> String {
    wirespeed_model::text::terminal(s).into_owned()
}

/// Most characters of an entry name a message prints; a longer one ends in `…(N bytes)`.
pub const NAME_CHARS_SHOWN: usize = 200;

/// An entry name for a message: escaped and shortened to [`NAME_CHARS_SHOWN`] characters.
fn shown(name: &Path) -> String {
    wirespeed_model::text::terminal_short(&name.to_string_lossy(), NAME_CHARS_SHOWN)
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
        let deadline = std::time::Instant::now() + MAX_UNPACK_TIME;
        if let Err(e) = unpack(archive, io::BufReader::new(f), dir.path(), deadline) {
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
        entry: shown(raw),
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

/// Names and sizes that extension records (GNU long name and long link, PAX) give the entry
/// after them.
#[derive(Default)]
struct Pending {
    name: Option<Vec<u8>>,
    link: Option<Vec<u8>>,
    pax_size: Option<u64>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.name.is_none() && self.link.is_none() && self.pax_size.is_none()
    }
}

/// Read an extension record's data of `size` bytes (already checked against its cap).
fn read_record(entry: &mut impl Read, size: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(size as usize);
    entry.take(size).read_to_end(&mut buf)?;
    if buf.len() as u64 != size {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "truncated extension record",
        ));
    }
    Ok(buf)
}

/// A GNU long name record's bytes: the name, NUL-terminated.
fn gnu_name(mut b: Vec<u8>) -> Vec<u8> {
    while b.last() == Some(&0) {
        b.pop();
    }
    b
}

/// Apply a local PAX record: `path` and `linkpath` (within [`MAX_NAME_BYTES`]) and `size` are
/// kept; timestamps, ownership and other keys are ignored; sparse files are refused.
fn apply_pax(data: &[u8], pending: &mut Pending) -> Result<(), String> {
    for ext in tar::PaxExtensions::new(data) {
        let ext = ext.map_err(|_| "malformed PAX record".to_string())?;
        let key = ext.key().map_err(|_| "PAX key is not UTF-8".to_string())?;
        let value = ext.value_bytes();
        let name = |v: &[u8]| -> Result<Vec<u8>, String> {
            if v.len() as u64 > MAX_NAME_BYTES {
                return Err(format!(
                    "PAX {key} of {} bytes, more than {MAX_NAME_BYTES}",
                    v.len()
                ));
            }
            Ok(v.to_vec())
        };
        match key {
            "path" => pending.name = Some(name(value)?),
            "linkpath" => pending.link = Some(name(value)?),
            "size" => {
                let v = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| "PAX size is not a number".to_string())?;
                pending.pax_size = Some(v);
            }
            k if k.starts_with("GNU.sparse.") => return Err("sparse files are not allowed".into()),
            _ => {}
        }
    }
    Ok(())
}

/// Unpack `reader` into `dest`. Every record is judged from its 512-byte header before its
/// data is read: extension records (GNU long names and links, PAX) are read by this function
/// (the tar crate's raw entries), within [`MAX_NAME_BYTES`] and [`MAX_PAX_BYTES`], so that no
/// record is buffered whole on the archive's word; entries, bytes and time are capped.
fn unpack(
    archive_path: &Path,
    reader: impl Read,
    dest: &Path,
    deadline: std::time::Instant,
) -> Result<(), SnapshotError> {
    use std::os::unix::ffi::OsStrExt;
    let archive = printable(&archive_path.display().to_string());
    let gz = flate2::read::GzDecoder::new(reader);
    let mut ar = tar::Archive::new(gz);
    let mut total: u64 = 0;
    let mut count = 0usize;
    let mut pending = Pending::default();
    let unsafe_err = |entry: &Path, reason: String| SnapshotError::Unsafe {
        archive: archive.clone(),
        entry: shown(entry),
        reason,
    };
    let too_large = |reason: String| SnapshotError::TooLarge {
        archive: archive.clone(),
        reason,
    };
    let entries = ar.entries().map_err(|e| io_err(archive_path, e))?.raw(true);
    for entry in entries {
        let mut entry = entry.map_err(|e| io_err(archive_path, e))?;
        count += 1;
        if count > MAX_ENTRIES {
            return Err(too_large(format!("more than {MAX_ENTRIES} entries")));
        }
        if std::time::Instant::now() > deadline {
            return Err(too_large(format!(
                "unpacking took longer than {} s",
                MAX_UNPACK_TIME.as_secs()
            )));
        }
        let kind = entry.header().entry_type();
        let size = entry
            .header()
            .entry_size()
            .map_err(|e| io_err(archive_path, e))?;
        // Every record's data counts (after its own cap is checked): extension records, files.
        let mut add_total = |size: u64| {
            total = total.saturating_add(size);
            if total > MAX_UNPACKED_BYTES {
                return Err(SnapshotError::TooLarge {
                    archive: archive.clone(),
                    reason: format!("unpacks to more than {MAX_UNPACKED_BYTES} bytes"),
                });
            }
            Ok(())
        };
        if kind.is_gnu_longname() || kind.is_gnu_longlink() {
            let what = if kind.is_gnu_longname() {
                "name"
            } else {
                "link"
            };
            if size > MAX_NAME_BYTES {
                return Err(too_large(format!(
                    "a GNU long {what} record of {size} bytes, more than the {MAX_NAME_BYTES} a name may have"
                )));
            }
            add_total(size)?;
            let slot = if kind.is_gnu_longname() {
                &mut pending.name
            } else {
                &mut pending.link
            };
            if slot.is_some() {
                return Err(too_large(format!(
                    "two GNU long {what} records for one entry"
                )));
            }
            let data = read_record(&mut entry, size).map_err(|e| io_err(archive_path, e))?;
            *slot = Some(gnu_name(data));
            continue;
        }
        if kind.is_pax_local_extensions() || kind.is_pax_global_extensions() {
            if size > MAX_PAX_BYTES {
                return Err(too_large(format!(
                    "a PAX header record of {size} bytes, more than {MAX_PAX_BYTES}"
                )));
            }
            add_total(size)?;
            let data = read_record(&mut entry, size).map_err(|e| io_err(archive_path, e))?;
            if kind.is_pax_local_extensions() {
                apply_pax(&data, &mut pending).map_err(too_large)?;
            } else {
                // A global record's names would apply to every entry after it: refused.
                let mut global = Pending::default();
                apply_pax(&data, &mut global).map_err(too_large)?;
                if !global.is_empty() {
                    return Err(too_large(
                        "a PAX global header with a path, link or size".into(),
                    ));
                }
            }
            continue;
        }
        let this = std::mem::take(&mut pending);
        if let Some(pax) = this.pax_size {
            // The tar crate skips by the header's size in raw mode: a PAX size that
            // disagrees would make two readers see two archives.
            if pax != size {
                return Err(too_large(format!(
                    "PAX size {pax} disagrees with the header's {size}"
                )));
            }
        }
        let raw: PathBuf = match this.name {
            Some(n) => PathBuf::from(std::ffi::OsStr::from_bytes(&n)),
            None => entry
                .path()
                .map_err(|e| io_err(archive_path, e))?
                .into_owned(),
        };
        let comps = entry_components(&archive, &raw)?;
        check_parents(dest, &comps).map_err(|r| unsafe_err(&raw, r))?;
        let target = dest.join(comps.join("/"));
        let mkparent = |t: &Path| -> Result<(), SnapshotError> {
            if let Some(p) = t.parent() {
                fs::create_dir_all(p).map_err(|e| io_err(p, e))?;
            }
            Ok(())
        };
        if !matches!(kind, tar::EntryType::Regular | tar::EntryType::Continuous) && size != 0 {
            return Err(unsafe_err(
                &raw,
                format!("a {kind:?} entry with {size} bytes of data"),
            ));
        }
        match kind {
            tar::EntryType::Directory => {
                if fs::symlink_metadata(&target).is_ok_and(|m| !m.is_dir()) {
                    return Err(unsafe_err(&raw, "directory over an existing entry".into()));
                }
                fs::create_dir_all(&target).map_err(|e| io_err(&target, e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if size > MAX_FILE_BYTES {
                    return Err(too_large(format!(
                        "entry \"{}\" is {size} bytes, more than the {MAX_FILE_BYTES} a file may hold",
                        shown(&raw)
                    )));
                }
                add_total(size)?;
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
                let link: PathBuf = match this.link {
                    Some(l) => PathBuf::from(std::ffi::OsStr::from_bytes(&l)),
                    None => entry
                        .link_name()
                        .map_err(|e| io_err(archive_path, e))?
                        .ok_or_else(|| unsafe_err(&raw, "symbolic link without a target".into()))?
                        .into_owned(),
                };
                if link.as_os_str().is_empty() {
                    return Err(unsafe_err(&raw, "symbolic link without a target".into()));
                }
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
    if !pending.is_empty() {
        return Err(too_large(
            "an extension record describes an entry that never comes".into(),
        ));
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

    /// A raw record of `kind` with `data` (its header's size is `data.len()` unless `announce`).
    fn record(kind: tar::EntryType, name: &str, data: &[u8], announce: Option<u64>) -> Vec<u8> {
        let mut h = raw_header(name, kind, None, announce.unwrap_or(data.len() as u64));
        h.set_cksum();
        let mut out = h.as_bytes().to_vec();
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
        out
    }

    fn gz(records: &[Vec<u8>]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for r in records {
            gz.write_all(r).unwrap();
        }
        gz.write_all(&[0u8; 1024]).unwrap();
        gz.finish().unwrap()
    }

    /// The bomb, bounded: a GNU long name record announcing 1 GiB (no data follows)
    /// and one just past the cap (with its data) are refused from the header, the message one
    /// short line.
    #[test]
    fn a_long_name_record_past_the_cap_is_refused_before_it_is_read() {
        let bomb = gz(&[record(
            tar::EntryType::GNULongName,
            "././@LongLink",
            &[],
            Some(1 << 30),
        )]);
        let m = open_bytes(&bomb).unwrap_err();
        assert!(matches!(m, SnapshotError::TooLarge { .. }), "{m:?}");
        let m = m.to_string();
        assert!(
            m.contains("a GNU long name record of 1073741824 bytes, more than the 4096"),
            "{m}"
        );
        // one past the cap, with its data: many short components, so that only the cap refuses
        let name = "sys/".to_string() + &"a/".repeat(2046) + "x";
        assert_eq!(name.len() as u64, MAX_NAME_BYTES + 1);
        let mut data = name.clone().into_bytes();
        data.push(0);
        let over = gz(&[
            record(tar::EntryType::GNULongName, "././@LongLink", &data, None),
            record(tar::EntryType::Regular, "sys/short", &[], None),
        ]);
        let m = open_bytes(&over).unwrap_err().to_string();
        assert!(m.contains("GNU long name record of 4098 bytes"), "{m}");
        // the same for link targets
        let over = gz(&[record(
            tar::EntryType::GNULongLink,
            "././@LongLink",
            &[],
            Some(1 << 30),
        )]);
        let m = open_bytes(&over).unwrap_err().to_string();
        assert!(
            m.contains("GNU long link record of 1073741824 bytes"),
            "{m}"
        );
        // a long name within the cap still works, and names it
        let name = "sys/".to_string() + &"b/".repeat(100) + "x";
        let mut data = name.clone().into_bytes();
        data.push(0);
        let ok = gz(&[
            record(tar::EntryType::GNULongName, "././@LongLink", &data, None),
            record(tar::EntryType::Regular, "sys/short", b"hi", None),
        ]);
        let s = open_bytes(&ok).unwrap();
        assert_eq!(fs::read(s.dir().join(&name)).unwrap(), b"hi");
        assert!(!s.dir().join("sys/short").exists());
    }

    fn pax(records: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in records {
            let body = format!(" {k}={v}\n");
            let mut n = body.len() + 1;
            while format!("{n}{body}").len() != n {
                n += 1;
            }
            out.extend_from_slice(format!("{n}{body}").as_bytes());
        }
        out
    }

    /// A PAX header past [`MAX_PAX_BYTES`] was accepted (only its `comment` was too long);
    /// now it is refused from its header. PAX names within the caps are applied.
    #[test]
    fn a_pax_record_past_the_cap_is_refused_and_pax_names_apply() {
        let junk = "x".repeat(MAX_PAX_BYTES as usize);
        let big = pax(&[("comment", &junk)]);
        let bomb = gz(&[
            record(tar::EntryType::XHeader, "PaxHeaders/x", &big, None),
            record(tar::EntryType::Regular, "sys/x", b"1", None),
        ]);
        let m = open_bytes(&bomb).unwrap_err().to_string();
        assert!(m.contains("a PAX header record of"), "{m}");
        let announced = gz(&[record(
            tar::EntryType::XHeader,
            "PaxHeaders/x",
            &[],
            Some(1 << 30),
        )]);
        let m = open_bytes(&announced).unwrap_err().to_string();
        assert!(m.contains("PAX header record of 1073741824 bytes"), "{m}");
        // path and linkpath apply; a size that disagrees, a global path, sparse: refused
        let ok = gz(&[
            record(
                tar::EntryType::XHeader,
                "PaxHeaders/x",
                &pax(&[("path", "sys/devices/long"), ("mtime", "1.5")]),
                None,
            ),
            record(tar::EntryType::Directory, "sys/ignored/", &[], None),
            record(
                tar::EntryType::XHeader,
                "PaxHeaders/y",
                &pax(&[("path", "sys/class/l"), ("linkpath", "../devices/long")]),
                None,
            ),
            record(tar::EntryType::Symlink, "sys/other", &[], None),
        ]);
        let s = open_bytes(&ok).unwrap();
        assert!(s.dir().join("sys/devices/long").is_dir());
        assert_eq!(
            fs::read_link(s.dir().join("sys/class/l")).unwrap(),
            Path::new("../devices/long")
        );
        for (what, recs) in [
            (
                "disagrees",
                vec![
                    record(tar::EntryType::XHeader, "P", &pax(&[("size", "9")]), None),
                    record(tar::EntryType::Regular, "sys/x", b"1", None),
                ],
            ),
            (
                "global header",
                vec![
                    record(
                        tar::EntryType::XGlobalHeader,
                        "P",
                        &pax(&[("path", "sys/x")]),
                        None,
                    ),
                    record(tar::EntryType::Regular, "sys/y", b"1", None),
                ],
            ),
            (
                "sparse",
                vec![
                    record(
                        tar::EntryType::XHeader,
                        "P",
                        &pax(&[("GNU.sparse.major", "1")]),
                        None,
                    ),
                    record(tar::EntryType::Regular, "sys/y", b"1", None),
                ],
            ),
            (
                "never comes",
                vec![record(
                    tar::EntryType::XHeader,
                    "P",
                    &pax(&[("path", "sys/x")]),
                    None,
                )],
            ),
            (
                "bytes of data",
                vec![record(
                    tar::EntryType::Directory,
                    "sys/d/",
                    &[],
                    Some(1 << 30),
                )],
            ),
        ] {
            let m = open_bytes(&gz(&recs)).unwrap_err().to_string();
            assert!(m.contains(what), "{what}: {m}");
        }
    }

    /// Names in messages are shortened: an unsafe entry with a 4000-byte name prints a line of
    /// a few hundred bytes.
    #[test]
    fn names_in_messages_are_shortened() {
        let name = "/".to_string() + &"c".repeat(3999);
        let mut data = name.into_bytes();
        data.push(0);
        let a = gz(&[
            record(tar::EntryType::GNULongName, "././@LongLink", &data, None),
            record(tar::EntryType::Regular, "x", &[], None),
        ]);
        let m = open_bytes(&a).unwrap_err().to_string();
        assert!(m.contains("absolute path"), "{m}");
        assert!(m.contains("…(4000 bytes)"), "{m}");
        assert!(m.len() < 400, "{} bytes: {m}", m.len());
    }

    /// Unpacking stops at its deadline (one already past here) and at the entry cap.
    #[test]
    fn unpacking_is_bounded_in_time() {
        let t = tempfile::tempdir().unwrap();
        let a = gz(&[record(tar::EntryType::Regular, "sys/x", b"1", None)]);
        let past = std::time::Instant::now();
        let m = unpack(Path::new("a.tar.gz"), a.as_slice(), t.path(), past)
            .unwrap_err()
            .to_string();
        assert!(m.contains("unpacking took longer than 60 s"), "{m}");
    }
}
