//! File access relative to a root directory.
//!
//! A root other than `/` is a directory someone else may have filled (a captured tree, a
//! snapshot): its symbolic links are not trusted. Every read and write below such a root is
//! resolved beneath it — with `openat2(RESOLVE_BENEATH)` where the kernel has it (Linux 5.6+),
//! and with an equivalent walk, one component at a time with `O_NOFOLLOW`, where it does not.
//! Links that stay inside the tree (`sys/class/net/eth0 -> ../../devices/...`) resolve as on
//! the host; a link or `..` that would leave the tree, and any absolute link, is refused with
//! [`RootError::Escape`]. Reads are capped at [`MAX_READ`] bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, Mode, OFlags};

/// An error reading or writing a file under a [`Root`]; carries the host path that failed.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not valid UTF-8")]
    NotUtf8 { path: String },
    #[error("{0}: host paths must be absolute and must not contain '..'")]
    BadPath(String),
    /// A symbolic link or `..` below a root that leads outside it.
    #[error("{path}: resolves outside the root {root} (a symbolic link or '..' that leaves the tree); refused")]
    Escape { path: String, root: String },
    /// Something other than a regular file where only one is accepted (a link, a FIFO, a
    /// device, a socket, a directory).
    #[error("{path}: a {what}, not a regular file; refused")]
    NotRegular { path: String, what: &'static str },
    /// A file larger than [`MAX_READ`].
    #[error("{path}: larger than {max} bytes; refused")]
    TooLarge { path: String, max: u64 },
}

/// What a file is, for a refusal: `symbolic link`, `FIFO`...
fn kind_of(m: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_dir() {
        "directory"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else if t.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

/// Most bytes one [`Root::read`] returns: far above any file of `/proc` or `/sys` wirespeed
/// reads (a 1,024-CPU `/proc/interrupts` is a few MiB), far below what a trap file could cost.
pub const MAX_READ: u64 = 64 * 1024 * 1024;

impl RootError {
    /// True when the file simply does not exist (a source this kernel or snapshot lacks).
    pub fn is_not_found(&self) -> bool {
        matches!(self, RootError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The raw OS error number, when the error came from a system call.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            RootError::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// What a recording [`Root`] saw being read: the material of a snapshot (see
/// [`Root::recording`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// Files read successfully, with the bytes that were read.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Files whose read failed (a source this host lacks or refused: `speed` of a down link).
    pub failed: BTreeSet<String>,
    /// Directories listed.
    pub dirs: BTreeSet<String>,
    /// Paths probed with `exists`, links read or resolved.
    pub probed: BTreeSet<String>,
    /// Answers that are not files on the host (ethtool ioctl replies), stored under `/wirespeed/`
    /// in a snapshot so that a reader of the snapshot finds them through the same root.
    pub synthetic: BTreeMap<String, Vec<u8>>,
}

/// A file of a [`Root`] held open ([`Root::open_held`]). procfs and sysfs print their files
/// afresh at each read; a file of a tree is read where it lies (a file put in its place under the
/// same name is not seen: open it again).
#[derive(Debug)]
pub struct HeldFile {
    file: fs::File,
    path: String,
}

impl HeldFile {
    /// Read up to `len` bytes at `offset` into `buf` (its contents replaced, its allocation
    /// kept): fewer only where the file ends. Returns how many were read.
    pub fn read_at(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<usize, RootError> {
        use std::os::unix::fs::FileExt;
        buf.clear();
        buf.resize(len, 0);
        let mut n = 0;
        while n < len {
            match self.file.read_at(&mut buf[n..], offset + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    buf.clear();
                    return Err(RootError::Io {
                        path: self.path.clone(),
                        source: e,
                    });
                }
            }
        }
        buf.truncate(n);
        Ok(n)
    }

    /// One read at `offset` into `buf` (a buffer the caller keeps: nothing is cleared or
    /// allocated), retried only when interrupted: how many bytes it gave. A procfs or sysfs file
    /// of a page or less gives all it holds in one read when `buf` can take it, and so does a
    /// file of a tree; fewer than `buf.len()` bytes is where the file ended, `buf.len()` may be a
    /// part of it. A small file read at each interval costs one system call this way, where
    /// [`HeldFile::read_at`] needs a second to see the end.
    pub fn pread(&self, offset: u64, buf: &mut [u8]) -> Result<usize, RootError> {
        use std::os::unix::fs::FileExt;
        loop {
            match self.file.read_at(buf, offset) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(RootError::Io {
                        path: self.path.clone(),
                        source: e,
                    })
                }
            }
        }
    }

    /// The host path it was opened as.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// A directory that stands for `/` of a host.
///
/// Host paths are given as they appear on the host (`/proc/interrupts`,
/// `/sys/class/net/eth0/mtu`); the root maps them below its directory. Relative symbolic links
/// inside a captured tree resolve inside it, as they do on the host.
///
/// A root made with [`Root::recording`] also notes every path read, listed or probed, so that
/// `capture` can write exactly those files into a snapshot.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
    recorder: Option<Arc<Mutex<Recording>>>,
    /// Paths resolved beneath `dir` (every root but `/` and [`Root::unconfined`] ones).
    confined: bool,
}

/// Two roots are equal when they stand on the same directory (recording or not).
impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.dir == other.dir
    }
}

impl Eq for Root {}

impl Default for Root {
    fn default() -> Self {
        Root::live()
    }
}

impl Root {
    /// The running host.
    pub fn live() -> Root {
        Root::new("/")
    }

    /// A captured tree (or any directory standing for `/`).
    pub fn new(dir: impl Into<PathBuf>) -> Root {
        Root {
            dir: dir.into(),
            recorder: None,
            confined: true,
        }
    }

    /// A tree you built yourself whose links may lead out of it on purpose (a test that links
    /// a read-only fixture's directories instead of copying thousands of files). Paths are
    /// joined to the directory and links followed wherever they lead: never use it for a
    /// tree someone else made — that is what [`Root::new`] is for.
    pub fn unconfined(dir: impl Into<PathBuf>) -> Root {
        Root {
            dir: dir.into(),
            recorder: None,
            confined: false,
        }
    }

    /// The same root, noting every path read, listed or probed through it (and through its
    /// clones) until [`Root::recorded`] is asked.
    pub fn recording(&self) -> Root {
        Root {
            dir: self.dir.clone(),
            recorder: Some(Arc::new(Mutex::new(Recording::default()))),
            confined: self.confined,
        }
    }

    /// What this recording root has seen so far; `None` for a root that does not record.
    pub fn recorded(&self) -> Option<Recording> {
        let rec = self.recorder.as_ref()?;
        let guard = rec.lock().unwrap_or_else(|p| p.into_inner());
        Some(guard.clone())
    }

    /// True when this root records what is read through it.
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Store an answer that is not a host file (an ethtool reply) under a `/wirespeed/...` path
    /// of the recording; no effect on a root that does not record.
    pub fn record_synthetic(&self, host_path: &str, contents: &[u8]) {
        self.note(|r| {
            r.synthetic.insert(host_path.to_string(), contents.to_vec());
        });
    }

    fn note(&self, f: impl FnOnce(&mut Recording)) {
        if let Some(rec) = &self.recorder {
            let mut guard = rec.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut guard);
        }
    }

    /// The directory this root stands on.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True for the running host's own `/`.
    pub fn is_live(&self) -> bool {
        self.dir == Path::new("/")
    }

    /// Map a host path (`/sys/...`) to the path below this root.
    pub fn path(&self, host_path: &str) -> Result<PathBuf, RootError> {
        let rel = Path::new(host_path)
            .strip_prefix("/")
            .map_err(|_| RootError::BadPath(host_path.to_string()))?;
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(RootError::BadPath(host_path.to_string()));
        }
        Ok(self.dir.join(rel))
    }

    fn io(&self, host_path: &str, source: io::Error) -> RootError {
        if source.raw_os_error() == Some(beneath::ESCAPE.raw_os_error()) {
            return RootError::Escape {
                path: host_path.to_string(),
                root: self.dir.display().to_string(),
            };
        }
        RootError::Io {
            path: host_path.to_string(),
            source,
        }
    }

    /// The path relative to the root (`proc/interrupts`), checked like [`Root::path`].
    fn rel<'a>(&self, host_path: &'a str) -> Result<&'a Path, RootError> {
        let rel = Path::new(host_path)
            .strip_prefix("/")
            .map_err(|_| RootError::BadPath(host_path.to_string()))?;
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(RootError::BadPath(host_path.to_string()));
        }
        Ok(rel)
    }

    /// Open `host_path` with `flags`: directly on the live host, beneath the root otherwise.
    fn open(&self, host_path: &str, flags: OFlags) -> Result<fs::File, RootError> {
        let rel = self.rel(host_path)?;
        let fd = if self.is_live() || !self.confined {
            rustix::fs::open(self.dir.join(rel), flags | OFlags::CLOEXEC, Mode::empty())
                .map_err(io::Error::from)
        } else {
            beneath::open(&self.dir, rel, flags)
        };
        fd.map(fs::File::from).map_err(|e| self.io(host_path, e))
    }

    /// The directory holding `host_path` (opened beneath the root unless live) and the last
    /// component's name, for operations on the name itself (links, create, remove).
    fn parent(&self, host_path: &str) -> Result<(OwnedFd, std::ffi::OsString), RootError> {
        let rel = self.rel(host_path)?;
        let name = rel
            .file_name()
            .ok_or_else(|| RootError::BadPath(host_path.to_string()))?
            .to_os_string();
        let parent = rel.parent().unwrap_or(Path::new(""));
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        let fd = if self.is_live() || !self.confined {
            rustix::fs::open(
                self.dir.join(parent),
                flags | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(io::Error::from)
        } else {
            beneath::open(&self.dir, parent, flags)
        };
        fd.map(|fd| (fd, name)).map_err(|e| self.io(host_path, e))
    }

    /// Read a whole file as text (at most [`MAX_READ`] bytes).
    pub fn read(&self, host_path: &str) -> Result<String, RootError> {
        let bytes = self.read_capped(host_path, MAX_READ, true);
        self.record(host_path, bytes.as_deref().ok());
        String::from_utf8(bytes?).map_err(|_| RootError::NotUtf8 {
            path: host_path.to_string(),
        })
    }

    /// [`Root::read`] into `buf`, reusing its allocation: for a file read again and again (the
    /// observer's `/proc` files, every interval). `buf` holds the text on success and is empty
    /// on an error.
    pub fn read_into(&self, host_path: &str, buf: &mut String) -> Result<(), RootError> {
        let mut bytes = std::mem::take(buf).into_bytes();
        bytes.clear();
        let read = self.open(host_path, OFlags::RDONLY).and_then(|f| {
            f.take(MAX_READ + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| self.io(host_path, e))
        });
        let read = read.and_then(|n| {
            if n as u64 > MAX_READ {
                Err(RootError::TooLarge {
                    path: host_path.to_string(),
                    max: MAX_READ,
                })
            } else {
                Ok(())
            }
        });
        if let Err(e) = read {
            bytes.clear();
            *buf = String::from_utf8(bytes).unwrap_or_default();
            self.record(host_path, None);
            return Err(e);
        }
        self.record(host_path, Some(&bytes));
        match String::from_utf8(bytes) {
            Ok(s) => {
                *buf = s;
                Ok(())
            }
            Err(e) => {
                let mut bytes = e.into_bytes();
                bytes.clear();
                *buf = String::from_utf8(bytes).unwrap_or_default();
                Err(RootError::NotUtf8 {
                    path: host_path.to_string(),
                })
            }
        }
    }

    /// Open `host_path` once to read it again and again at an offset ([`HeldFile::read_at`]):
    /// the files a reader reads every second (a worker thread's `schedstat`, the rows of
    /// `/proc/interrupts` it needs) without a path lookup each time. What is read through the
    /// handle is not recorded: on a recording root ([`Root::is_recording`]) read the file with
    /// [`Root::read_into`] instead.
    pub fn open_held(&self, host_path: &str) -> Result<HeldFile, RootError> {
        let file = self.open(host_path, OFlags::RDONLY | OFlags::NONBLOCK)?;
        Ok(HeldFile {
            file,
            path: host_path.to_string(),
        })
    }

    /// Read a whole binary file (PCI configuration space), at most `limit` bytes: a longer
    /// file is cut at `limit` (config space readers ask for a prefix).
    pub fn read_bytes(&self, host_path: &str, limit: usize) -> Result<Vec<u8>, RootError> {
        let bytes = self.read_capped(host_path, (limit as u64).min(MAX_READ), false);
        self.record(host_path, bytes.as_deref().ok());
        bytes
    }

    /// Note a read in the recording, if one is kept: the bytes read, or (`None`) that it failed.
    fn record(&self, host_path: &str, bytes: Option<&[u8]>) {
        self.note(|r| match bytes {
            Some(b) => {
                r.files.insert(host_path.to_string(), b.to_vec());
            }
            None => {
                r.failed.insert(host_path.to_string());
            }
        });
    }

    /// Read at most `max` bytes of `host_path` beneath the root; with `whole`, a longer file
    /// is an error ([`RootError::TooLarge`]) instead of a prefix.
    fn read_capped(&self, host_path: &str, max: u64, whole: bool) -> Result<Vec<u8>, RootError> {
        // O_NONBLOCK: a FIFO planted in a tree opens without a writer and reads as empty
        // instead of blocking the reader forever; regular, sysfs and procfs files ignore it.
        let f = self.open(host_path, OFlags::RDONLY | OFlags::NONBLOCK)?;
        let mut bytes = Vec::new();
        f.take(max + u64::from(whole))
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(host_path, e))?;
        if whole && bytes.len() as u64 > max {
            return Err(RootError::TooLarge {
                path: host_path.to_string(),
                max,
            });
        }
        Ok(bytes)
    }

    /// Open `host_path` only if it is a regular file, for files someone else may have planted
    /// (tune's journals): the last component is never followed (`O_NOFOLLOW`: a symbolic link
    /// is refused), the open never waits (`O_NONBLOCK`: a FIFO cannot hang it) and what it
    /// opened is checked with `fstat` (a FIFO, a device, a socket or a directory is refused with
    /// [`RootError::NotRegular`]). The directories above it resolve as [`Root::read`]'s do.
    fn open_regular(&self, host_path: &str, flags: OFlags) -> Result<fs::File, RootError> {
        let (dir, name) = self.parent(host_path)?;
        let not_regular = |what: &'static str| RootError::NotRegular {
            path: host_path.to_string(),
            what,
        };
        let opened = rustix::fs::openat(
            &dir,
            name.as_os_str(),
            flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        );
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) => {
                // A link (ELOOP), a FIFO without a reader (ENXIO) and the like: say what it is.
                return Err(match self.lstat(host_path) {
                    Ok(Some(m)) if !m.file_type().is_file() => not_regular(kind_of(&m)),
                    _ => self.io(host_path, e.into()),
                });
            }
        };
        let f = fs::File::from(fd);
        let m = f.metadata().map_err(|e| self.io(host_path, e))?;
        if !m.file_type().is_file() {
            return Err(not_regular(kind_of(&m)));
        }
        Ok(f)
    }

    /// Read a whole regular file as text (at most [`MAX_READ`] bytes), refusing anything else
    /// with [`RootError::NotRegular`]: never a link followed, never a wait on a FIFO.
    pub fn read_regular(&self, host_path: &str) -> Result<String, RootError> {
        let f = self.open_regular(host_path, OFlags::RDONLY)?;
        let mut bytes = Vec::new();
        f.take(MAX_READ + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(host_path, e))?;
        if bytes.len() as u64 > MAX_READ {
            return Err(RootError::TooLarge {
                path: host_path.to_string(),
                max: MAX_READ,
            });
        }
        String::from_utf8(bytes).map_err(|_| RootError::NotUtf8 {
            path: host_path.to_string(),
        })
    }

    /// Open an existing regular file for appending, refusing anything else with
    /// [`RootError::NotRegular`] (a link in its place is never written through).
    pub fn open_append_regular(&self, host_path: &str) -> Result<fs::File, RootError> {
        self.open_regular(host_path, OFlags::WRONLY | OFlags::APPEND)
    }

    /// Read a file and trim surrounding white space (the usual one-value sysfs file).
    pub fn read_trim(&self, host_path: &str) -> Result<String, RootError> {
        Ok(self.read(host_path)?.trim().to_string())
    }

    /// Read a one-value file; `None` when it is missing or unreadable (an unknown fact).
    pub fn read_opt(&self, host_path: &str) -> Option<String> {
        self.read_trim(host_path).ok()
    }

    /// Read a one-value file and parse it; `None` when missing or not parseable.
    pub fn parse_opt<T: std::str::FromStr>(&self, host_path: &str) -> Option<T> {
        self.read_opt(host_path)?.parse().ok()
    }

    /// Read a CPU list file (`0-3,8`); `None` when missing or not a list.
    pub fn cpu_list_opt(&self, host_path: &str) -> Option<crate::CpuSet> {
        crate::CpuSet::parse_list(&self.read_opt(host_path)?).ok()
    }

    /// Read a CPU mask file (`00000000,000000ff`); `None` when missing or not a mask.
    pub fn cpu_mask_opt(&self, host_path: &str) -> Option<crate::CpuSet> {
        crate::CpuSet::parse_mask(&self.read_opt(host_path)?).ok()
    }

    /// True when the path exists (following links).
    pub fn exists(&self, host_path: &str) -> bool {
        self.note(|r| {
            r.probed.insert(host_path.to_string());
        });
        self.open(host_path, OFlags::PATH).is_ok()
    }

    /// Names in a directory, sorted; empty when the directory is missing.
    pub fn list(&self, host_path: &str) -> Result<Vec<String>, RootError> {
        self.note(|r| {
            r.dirs.insert(host_path.to_string());
        });
        let dir = self.open(host_path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let mut names = Vec::new();
        let entries = rustix::fs::Dir::new(dir).map_err(|e| self.io(host_path, e.into()))?;
        for entry in entries {
            let entry = entry.map_err(|e| self.io(host_path, e.into()))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(String::from_utf8_lossy(name).into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Names in a directory, sorted; empty when missing.
    pub fn list_opt(&self, host_path: &str) -> Vec<String> {
        self.list(host_path).unwrap_or_default()
    }

    /// The names in a directory that are decimal numbers (process and thread ids: `/proc`,
    /// `/proc/self/task`), sorted, into `ids` (cleared first; no name is allocated); empty when
    /// the directory is missing or unreadable. Recorded as [`Root::list`] is.
    pub fn list_ids(&self, host_path: &str, ids: &mut Vec<u32>) {
        ids.clear();
        self.note(|r| {
            r.dirs.insert(host_path.to_string());
        });
        let Ok(dir) = self.open(host_path, OFlags::RDONLY | OFlags::DIRECTORY) else {
            return;
        };
        let Ok(entries) = rustix::fs::Dir::new(dir) else {
            return;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                ids.clear();
                return;
            };
            let name = entry.file_name().to_bytes();
            if !name.is_empty() && name.len() <= 10 && name.iter().all(u8::is_ascii_digit) {
                if let Some(id) = std::str::from_utf8(name).ok().and_then(|n| n.parse().ok()) {
                    ids.push(id);
                }
            }
        }
        ids.sort_unstable();
    }

    /// The target of a symbolic link, as stored (relative links stay relative).
    pub fn read_link(&self, host_path: &str) -> Result<PathBuf, RootError> {
        self.note(|r| {
            r.probed.insert(host_path.to_string());
        });
        let (dir, name) = self.parent(host_path)?;
        let target = rustix::fs::readlinkat(&dir, name.as_os_str(), Vec::new())
            .map_err(|e| self.io(host_path, e.into()))?;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(
            target.into_bytes(),
        )))
    }

    /// The host path a link resolves to (`/sys/class/net/eth0` → `/sys/devices/...`), computed
    /// inside the root so a captured tree never escapes to the machine reading it.
    pub fn resolve_link(&self, host_path: &str) -> Result<String, RootError> {
        let target = self.read_link(host_path)?;
        let mut parts: Vec<String> = host_path
            .trim_end_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        parts.pop();
        if target.is_absolute() {
            parts.clear();
        }
        for c in target.components() {
            match c {
                Component::ParentDir => {
                    parts.pop();
                }
                Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
                _ => {}
            }
        }
        Ok(format!("/{}", parts.join("/")))
    }

    /// Write a value to a file that exists (sysfs, procfs, or a tree standing for them). Files of
    /// the kernel are written in one `write` call, as the kernel expects.
    pub fn write(&self, host_path: &str, value: &str) -> Result<(), RootError> {
        let mut f = self.open(host_path, OFlags::WRONLY | OFlags::TRUNC)?;
        f.write_all(value.as_bytes())
            .map_err(|e| self.io(host_path, e))
    }

    /// Create or replace a regular file (configuration we own, journals), creating parents;
    /// written to a temporary file, synced and renamed into place.
    pub fn create(&self, host_path: &str, contents: &[u8]) -> Result<(), RootError> {
        self.create_inner(host_path, contents, 0o644)
    }

    /// [`Root::create`] with the file's permission bits set before it is renamed into place.
    pub fn create_with_mode(
        &self,
        host_path: &str,
        contents: &[u8],
        mode: u32,
    ) -> Result<(), RootError> {
        self.create_inner(host_path, contents, mode)
    }

    fn create_inner(&self, host_path: &str, contents: &[u8], mode: u32) -> Result<(), RootError> {
        let rel = self.rel(host_path)?;
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.mkdir_all(&format!("/{}", parent.display()), 0o755)?;
        }
        let (dir, name) = self.parent(host_path)?;
        // O_PATH descriptors cannot be synced; the directory is reopened for that.
        // The name a crash may leave behind; tune's revert knows it.
        let tmp = Path::new(&name)
            .with_extension("wirespeed-tmp")
            .into_os_string();
        let write = || -> io::Result<()> {
            let _ = rustix::fs::unlinkat(&dir, tmp.as_os_str(), AtFlags::empty());
            let fd = rustix::fs::openat(
                &dir,
                tmp.as_os_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )?;
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
            let mut f = fs::File::from(fd);
            f.write_all(contents)?;
            f.sync_all()?;
            rustix::fs::renameat(&dir, tmp.as_os_str(), &dir, name.as_os_str())?;
            let d = rustix::fs::openat(
                &dir,
                ".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            rustix::fs::fsync(&d)?;
            Ok(())
        };
        write().map_err(|e| self.io(host_path, e))
    }

    /// Remove a regular file we created.
    pub fn remove(&self, host_path: &str) -> Result<(), RootError> {
        let (dir, name) = self.parent(host_path)?;
        rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::empty())
            .map_err(|e| self.io(host_path, e.into()))
    }

    /// Remove an empty directory.
    pub fn remove_dir(&self, host_path: &str) -> Result<(), RootError> {
        let (dir, name) = self.parent(host_path)?;
        rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::REMOVEDIR)
            .map_err(|e| self.io(host_path, e.into()))
    }

    /// Create one directory (its parent must exist).
    pub fn mkdir(&self, host_path: &str, mode: u32) -> Result<(), RootError> {
        let (dir, name) = self.parent(host_path)?;
        rustix::fs::mkdirat(&dir, name.as_os_str(), Mode::from_raw_mode(mode))
            .map_err(|e| self.io(host_path, e.into()))
    }

    /// Create a symbolic link at `host_path` holding `target` (stored as given, not resolved).
    pub fn symlink(&self, target: &str, host_path: &str) -> Result<(), RootError> {
        let (dir, name) = self.parent(host_path)?;
        rustix::fs::symlinkat(target, &dir, name.as_os_str())
            .map_err(|e| self.io(host_path, e.into()))
    }

    /// The metadata of `host_path` itself (a link is not followed); `None` when it does not
    /// exist.
    pub fn lstat(&self, host_path: &str) -> Result<Option<fs::Metadata>, RootError> {
        let (dir, name) = match self.parent(host_path) {
            Ok(p) => p,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        let fd = match rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.io(host_path, e.into())),
        };
        fs::File::from(fd)
            .metadata()
            .map(Some)
            .map_err(|e| self.io(host_path, e))
    }

    /// The metadata of what `host_path` leads to (links inside the root followed).
    pub fn stat(&self, host_path: &str) -> Result<fs::Metadata, RootError> {
        self.open(host_path, OFlags::PATH)?
            .metadata()
            .map_err(|e| self.io(host_path, e))
    }

    /// Create a new file (it must not exist) open for appending; a link in its place is
    /// refused, never followed.
    pub fn create_new_append(&self, host_path: &str, mode: u32) -> Result<fs::File, RootError> {
        let (dir, name) = self.parent(host_path)?;
        rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::WRONLY
                | OFlags::APPEND
                | OFlags::CREATE
                | OFlags::EXCL
                | OFlags::NOFOLLOW
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map(fs::File::from)
        .map_err(|e| self.io(host_path, e.into()))
    }

    /// Open a directory (to lock it, or to list it by descriptor).
    pub fn open_dir(&self, host_path: &str) -> Result<fs::File, RootError> {
        self.open(host_path, OFlags::RDONLY | OFlags::DIRECTORY)
    }

    /// Open an existing file for appending.
    pub fn open_append(&self, host_path: &str) -> Result<fs::File, RootError> {
        self.open(host_path, OFlags::WRONLY | OFlags::APPEND)
    }

    /// Open a file for reading and writing, creating it when missing (a lock file); a link
    /// in its place is refused, never followed.
    pub fn open_or_create(&self, host_path: &str, mode: u32) -> Result<fs::File, RootError> {
        let (dir, name) = self.parent(host_path)?;
        rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map(fs::File::from)
        .map_err(|e| self.io(host_path, e.into()))
    }

    /// Create a directory and its missing parents below the root (`mkdir -p`), resolved
    /// beneath the root at each level. Returns the directories it created, top down.
    pub fn mkdir_all(&self, host_path: &str, mode: u32) -> Result<Vec<String>, RootError> {
        let rel = self.rel(host_path)?;
        let mut at = String::new();
        let mut made = Vec::new();
        for c in rel.components() {
            at.push('/');
            at.push_str(&c.as_os_str().to_string_lossy());
            let (dir, name) = self.parent(&at)?;
            match rustix::fs::mkdirat(&dir, name.as_os_str(), Mode::from_raw_mode(mode)) {
                Ok(()) => made.push(at.clone()),
                Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(self.io(host_path, e.into())),
            }
        }
        Ok(made)
    }

    /// Check that a file that exists can be opened for writing, without changing it (no
    /// truncation, no write).
    pub fn can_write(&self, host_path: &str) -> Result<(), RootError> {
        self.open(host_path, OFlags::WRONLY).map(drop)
    }
}

/// Opening a path beneath a directory without leaving it.
mod beneath {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::io;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::{Component, Path};
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    /// The error an escape is reported with (what `openat2` answers for one).
    pub const ESCAPE: Errno = Errno::XDEV;

    /// Symbolic links followed in one lookup at most, as the kernel's limit.
    const MAX_LINKS: usize = 40;

    /// Set once `openat2` turned out to be missing (ENOSYS, or refused by a seccomp filter).
    static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

    /// Open `rel` beneath `root` with `flags`; an escape fails with [`ESCAPE`].
    pub fn open(root: &Path, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let dir = rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            match rustix::fs::openat2(
                &dir,
                rel,
                flags | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            ) {
                Err(Errno::NOSYS) | Err(Errno::PERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
                Err(Errno::AGAIN) => {} // a concurrent rename: the walk settles it
                other => return other.map_err(io::Error::from),
            }
        }
        walk(dir, rel, flags)
    }

    /// The same as `openat2(RESOLVE_BENEATH)`, one component at a time: each is opened with
    /// `O_NOFOLLOW` relative to the directory before it; a link's target is spliced into the
    /// components still to walk; `..` goes back one directory and never above the first.
    pub fn walk(root: OwnedFd, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let mut todo: VecDeque<OsString> = VecDeque::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => todo.push_back(n.to_os_string()),
                Component::ParentDir => todo.push_back("..".into()),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return Err(ESCAPE.into()),
            }
        }
        let mut dirs: Vec<OwnedFd> = vec![root];
        let mut links = 0usize;
        loop {
            let Some(name) = todo.pop_front() else {
                // Only directories were walked (or nothing): reopen the last one as asked.
                let top = dirs.last().ok_or(ESCAPE)?;
                return Ok(rustix::fs::openat(
                    top,
                    ".",
                    flags | OFlags::CLOEXEC,
                    Mode::empty(),
                )?);
            };
            if name.as_bytes() == b".." {
                if dirs.len() == 1 {
                    return Err(ESCAPE.into());
                }
                dirs.pop();
                continue;
            }
            let top = dirs.last().ok_or(ESCAPE)?;
            let probe = rustix::fs::openat(
                top,
                name.as_os_str(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let kind = FileType::from_raw_mode(rustix::fs::fstat(&probe)?.st_mode);
            if kind == FileType::Symlink {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Errno::LOOP.into());
                }
                let target = rustix::fs::readlinkat(top, name.as_os_str(), Vec::new())?;
                let target = OsString::from_vec(target.into_bytes());
                let target = Path::new(&target);
                if target.is_absolute() {
                    return Err(ESCAPE.into());
                }
                let mut spliced: Vec<OsString> = Vec::new();
                for c in target.components() {
                    match c {
                        Component::Normal(n) => spliced.push(n.to_os_string()),
                        Component::ParentDir => spliced.push("..".into()),
                        Component::CurDir => {}
                        Component::RootDir | Component::Prefix(_) => return Err(ESCAPE.into()),
                    }
                }
                for n in spliced.into_iter().rev() {
                    todo.push_front(n);
                }
                continue;
            }
            if todo.is_empty() {
                // The last component, not a link: open it as asked; O_NOFOLLOW fails a link
                // swapped in since the probe.
                return Ok(rustix::fs::openat(
                    top,
                    name.as_os_str(),
                    flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?);
            }
            if kind != FileType::Directory {
                return Err(Errno::NOTDIR.into());
            }
            dirs.push(probe);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fifo_in_a_tree_reads_as_empty_instead_of_blocking() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("sys")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            t.path().join("sys/mtu"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let root = super::Root::new(t.path());
        assert_eq!(root.read("/sys/mtu").unwrap(), "");
        assert_eq!(root.read_opt("/sys/mtu").as_deref(), Some(""));
        assert_eq!(root.parse_opt::<u32>("/sys/mtu"), None);
    }

    use super::*;

    #[test]
    fn maps_host_paths_below_the_root() {
        let r = Root::new("/tmp/tree");
        assert_eq!(
            r.path("/proc/interrupts").unwrap(),
            PathBuf::from("/tmp/tree/proc/interrupts")
        );
        assert!(r.path("proc/x").is_err());
        assert!(r.path("/sys/../etc/shadow").is_err());
        assert!(Root::live().is_live());
    }

    #[test]
    fn a_held_file_reads_at_an_offset_and_sees_the_file_rewritten_in_place() {
        let t = tempfile::tempdir().unwrap();
        let r = Root::new(t.path());
        std::fs::create_dir(t.path().join("proc")).unwrap();
        std::fs::write(t.path().join("proc/interrupts"), "0123456789").unwrap();
        let f = r.open_held("/proc/interrupts").unwrap();
        assert_eq!(f.path(), "/proc/interrupts");
        let mut buf = Vec::with_capacity(64);
        assert_eq!(f.read_at(3, 4, &mut buf).unwrap(), 4);
        assert_eq!(buf, b"3456");
        // past the end: what is there
        assert_eq!(f.read_at(8, 10, &mut buf).unwrap(), 2);
        assert_eq!(buf, b"89");
        assert_eq!(f.read_at(20, 4, &mut buf).unwrap(), 0);
        assert!(buf.is_empty());
        std::fs::write(t.path().join("proc/interrupts"), "abcdef").unwrap();
        f.read_at(0, 6, &mut buf).unwrap();
        assert_eq!(buf, b"abcdef");
        assert!(buf.capacity() >= 64, "the allocation is kept");
        // opened beneath the root, like every read
        assert!(r.open_held("/proc/missing").unwrap_err().is_not_found());
        std::os::unix::fs::symlink("/etc", t.path().join("proc/out")).unwrap();
        assert!(matches!(
            r.open_held("/proc/out/hostname"),
            Err(RootError::Escape { .. })
        ));
    }

    #[test]
    fn read_into_reuses_the_buffer_and_empties_it_on_an_error() {
        let t = tempfile::tempdir().unwrap();
        let r = Root::new(t.path());
        std::fs::create_dir(t.path().join("proc")).unwrap();
        std::fs::write(t.path().join("proc/stat"), "cpu 1 2 3 4\n").unwrap();
        std::fs::write(t.path().join("proc/bad"), [0xff, 0xfe]).unwrap();
        let mut buf = String::with_capacity(4096);
        let cap = buf.capacity();
        r.read_into("/proc/stat", &mut buf).unwrap();
        assert_eq!(buf, r.read("/proc/stat").unwrap());
        assert_eq!(buf.capacity(), cap, "the allocation is kept");
        assert!(r.read_into("/proc/missing", &mut buf).is_err());
        assert!(buf.is_empty());
        assert!(matches!(
            r.read_into("/proc/bad", &mut buf),
            Err(RootError::NotUtf8 { .. })
        ));
        assert!(buf.is_empty());
        assert!(r.read_into("/proc/../etc", &mut buf).is_err());
    }

    #[test]
    fn a_held_file_reads_in_one_pread_into_the_callers_buffer() {
        let t = tempfile::tempdir().unwrap();
        let r = Root::new(t.path());
        std::fs::create_dir_all(t.path().join("proc/self/task/7")).unwrap();
        let path = t.path().join("proc/self/task/7/schedstat");
        std::fs::write(&path, "450604054 930342084 5677\n").unwrap();
        let f = r.open_held("/proc/self/task/7/schedstat").unwrap();
        let mut buf = [0u8; 128];
        let n = f.pread(0, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"450604054 930342084 5677\n");
        // a buffer smaller than the file takes its first bytes; past the end, nothing
        assert_eq!(f.pread(0, &mut buf[..9]).unwrap(), 9);
        assert_eq!(&buf[..9], b"450604054");
        assert_eq!(f.pread(100, &mut buf).unwrap(), 0);
        // rewritten in place: the next read sees it, and nothing of the longer text before
        std::fs::write(&path, "1 2 3\n").unwrap();
        let n = f.pread(0, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"1 2 3\n");
    }

    #[test]
    fn numeric_names_are_listed_as_ids_sorted_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        for d in ["10000", "9", "1023", "self", "12x", "4294967296", "42"] {
            std::fs::create_dir_all(t.path().join("proc/self/task").join(d)).unwrap();
        }
        let r = Root::new(t.path()).recording();
        let mut ids = vec![5];
        r.list_ids("/proc/self/task", &mut ids);
        // 4294967296 does not fit a u32; names with letters are not ids
        assert_eq!(ids, vec![9, 42, 1023, 10000]);
        assert!(r.recorded().unwrap().dirs.contains("/proc/self/task"));
        r.list_ids("/proc/missing", &mut ids);
        assert!(ids.is_empty());
    }

    #[test]
    fn reads_lists_and_resolves_links_inside_the_tree() {
        let t = tempfile::tempdir().unwrap();
        let r = Root::new(t.path());
        std::fs::create_dir_all(
            t.path()
                .join("sys/devices/pci0000:00/0000:00:03.0/net/eth0"),
        )
        .unwrap();
        std::fs::create_dir_all(t.path().join("sys/class/net")).unwrap();
        std::fs::write(
            t.path()
                .join("sys/devices/pci0000:00/0000:00:03.0/net/eth0/mtu"),
            "1500\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:03.0/net/eth0",
            t.path().join("sys/class/net/eth0"),
        )
        .unwrap();
        assert_eq!(r.list("/sys/class/net").unwrap(), vec!["eth0"]);
        assert_eq!(r.parse_opt::<u32>("/sys/class/net/eth0/mtu"), Some(1500));
        assert_eq!(
            r.resolve_link("/sys/class/net/eth0").unwrap(),
            "/sys/devices/pci0000:00/0000:00:03.0/net/eth0"
        );
        assert!(r
            .read("/sys/class/net/eth1/mtu")
            .unwrap_err()
            .is_not_found());
        assert_eq!(r.read_opt("/nope"), None);
        r.write("/sys/class/net/eth0/mtu", "9000").unwrap();
        assert_eq!(r.read_trim("/sys/class/net/eth0/mtu").unwrap(), "9000");
        assert!(r.write("/sys/class/net/eth0/absent", "1").is_err());
        r.create("/var/lib/wirespeed/j.json", b"{}").unwrap();
        assert_eq!(r.read("/var/lib/wirespeed/j.json").unwrap(), "{}");
    }

    #[test]
    fn recording_notes_reads_failures_listings_and_probes() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("proc/net")).unwrap();
        std::fs::write(t.path().join("proc/net/snmp"), "x").unwrap();
        let plain = Root::new(t.path());
        assert!(!plain.is_recording() && plain.recorded().is_none());
        let r = plain.recording();
        let clone = r.clone();
        assert_eq!(r, plain);
        assert_eq!(clone.read("/proc/net/snmp").unwrap(), "x");
        assert!(r.read_opt("/proc/net/dev").is_none());
        r.list_opt("/proc/net");
        r.exists("/proc/nope");
        r.record_synthetic("/wirespeed/ethtool/eth0/ring.json", b"{}");
        let rec = r.recorded().unwrap();
        assert_eq!(rec.files["/proc/net/snmp"], b"x");
        assert!(rec.failed.contains("/proc/net/dev"));
        assert!(rec.dirs.contains("/proc/net"));
        assert!(rec.probed.contains("/proc/nope"));
        assert_eq!(rec.synthetic.len(), 1);
    }

    /// A tree with traps: links to a file outside (relative and absolute), a directory link
    /// that leaves the tree, and a link that stays inside.
    fn trap_tree() -> (tempfile::TempDir, Root, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "untouched").unwrap();
        let tree = t.path().join("tree");
        let core = tree.join("proc/sys/net/core");
        std::fs::create_dir_all(&core).unwrap();
        std::fs::write(core.join("rmem_max"), "212992\n").unwrap();
        std::os::unix::fs::symlink("../../../../../outside/secret", core.join("wmem_max")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), core.join("abs_max")).unwrap();
        std::os::unix::fs::symlink("rmem_max", core.join("inside_max")).unwrap();
        std::os::unix::fs::symlink("../outside", tree.join("etc")).unwrap();
        std::os::unix::fs::symlink("loop2", tree.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", tree.join("loop2")).unwrap();
        let r = Root::new(&tree);
        (t, r, outside.join("secret"))
    }

    fn assert_escape(e: RootError) {
        assert!(matches!(e, RootError::Escape { .. }), "{e}");
        assert!(e.to_string().contains("outside the root"), "{e}");
    }

    #[test]
    fn links_and_dot_dots_that_leave_the_root_are_refused() {
        let (_t, r, secret) = trap_tree();
        for trap in [
            "/proc/sys/net/core/wmem_max",
            "/proc/sys/net/core/abs_max",
            "/etc/secret",
        ] {
            assert_escape(r.read(trap).unwrap_err());
            assert_escape(r.write(trap, "1").unwrap_err());
            assert_escape(r.can_write(trap).unwrap_err());
            assert!(!r.exists(trap), "{trap}");
        }
        assert_escape(r.create("/etc/new", b"x").unwrap_err());
        assert_escape(r.create("/etc/sub/new", b"x").unwrap_err());
        assert_escape(r.remove("/etc/secret").unwrap_err());
        assert_escape(r.list("/etc").unwrap_err());
        assert_escape(r.symlink("x", "/etc/l").unwrap_err());
        assert_escape(r.mkdir("/etc/d", 0o755).unwrap_err());
        assert!(matches!(
            r.path("/proc/../etc/x"),
            Err(RootError::BadPath(_))
        ));
        assert!(r.read("/loop1").is_err());
        // Links are still read as links, and links that stay inside resolve.
        assert_eq!(r.read_link("/proc/sys/net/core/abs_max").unwrap(), secret);
        assert_eq!(
            r.read_trim("/proc/sys/net/core/inside_max").unwrap(),
            "212992"
        );
        r.write("/proc/sys/net/core/inside_max", "4194304").unwrap();
        assert_eq!(
            r.read_trim("/proc/sys/net/core/rmem_max").unwrap(),
            "4194304"
        );
        assert!(r
            .lstat("/proc/sys/net/core/wmem_max")
            .unwrap()
            .unwrap()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "untouched");
        assert!(!secret.with_file_name("new").exists());
    }

    #[test]
    fn the_walk_without_openat2_refuses_the_same_traps() {
        let (_t, r, secret) = trap_tree();
        let open = |rel: &str, flags: OFlags| {
            let dir = rustix::fs::open(
                r.dir(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .unwrap();
            beneath::walk(dir, Path::new(rel), flags)
        };
        for trap in [
            "proc/sys/net/core/wmem_max",
            "proc/sys/net/core/abs_max",
            "etc/secret",
            "proc/../..",
            "proc/sys/../../../outside/secret",
        ] {
            let e = open(trap, OFlags::WRONLY).unwrap_err();
            assert_eq!(
                e.raw_os_error(),
                Some(beneath::ESCAPE.raw_os_error()),
                "{trap}: {e}"
            );
        }
        assert_eq!(
            open("loop1", OFlags::RDONLY).unwrap_err().raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
        let mut text = String::new();
        fs::File::from(open("proc/sys/net/core/inside_max", OFlags::RDONLY).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "212992\n");
        // `..` that stays inside is fine, as is the root itself.
        assert!(open("proc/sys/../sys/net/core/rmem_max", OFlags::RDONLY).is_ok());
        assert!(open("", OFlags::RDONLY | OFlags::DIRECTORY).is_ok());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "untouched");
    }

    #[test]
    fn an_unconfined_root_follows_links_out_of_it() {
        let (_t, r, secret) = trap_tree();
        let u = Root::unconfined(r.dir());
        assert_eq!(u.read("/proc/sys/net/core/abs_max").unwrap(), "untouched");
        assert_eq!(u.read("/etc/secret").unwrap(), "untouched");
        assert!(u.recording().read("/etc/secret").is_ok());
        assert_eq!(std::fs::read_to_string(secret).unwrap(), "untouched");
    }

    #[test]
    fn reads_are_capped() {
        let t = tempfile::tempdir().unwrap();
        let f = fs::File::create(t.path().join("big")).unwrap();
        f.set_len(MAX_READ + 1).unwrap();
        let e = Root::new(t.path()).read("/big").unwrap_err();
        assert!(matches!(e, RootError::TooLarge { .. }), "{e}");
    }

    #[test]
    fn read_regular_refuses_links_fifos_and_directories_without_waiting() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        fs::write(d.join("real"), "text\n").unwrap();
        std::os::unix::fs::symlink("real", d.join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("fifo"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        fs::create_dir(d.join("dir")).unwrap();
        for root in [Root::new(d), Root::unconfined(d)] {
            assert_eq!(root.read_regular("/real").unwrap(), "text\n");
            for (name, what) in [
                ("/link", "symbolic link"),
                ("/fifo", "FIFO"),
                ("/dir", "directory"),
            ] {
                let e = root.read_regular(name).unwrap_err();
                assert!(
                    matches!(e, RootError::NotRegular { what: w, .. } if w == what),
                    "{name}: {e}"
                );
                let e = root.open_append_regular(name).unwrap_err();
                assert!(matches!(e, RootError::NotRegular { .. }), "{name}: {e}");
            }
            assert!(root.read_regular("/missing").unwrap_err().is_not_found());
        }
        // nothing was written through the link
        assert_eq!(fs::read_to_string(d.join("real")).unwrap(), "text\n");
    }
}
