//! File access relative to a root directory.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

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
}

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
        }
    }

    /// The same root, noting every path read, listed or probed through it (and through its
    /// clones) until [`Root::recorded`] is asked.
    pub fn recording(&self) -> Root {
        Root {
            dir: self.dir.clone(),
            recorder: Some(Arc::new(Mutex::new(Recording::default()))),
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

    fn io(host_path: &str, source: io::Error) -> RootError {
        RootError::Io {
            path: host_path.to_string(),
            source,
        }
    }

    /// Read a whole file as text.
    pub fn read(&self, host_path: &str) -> Result<String, RootError> {
        let bytes = match fs::read(self.path(host_path)?) {
            Ok(b) => b,
            Err(e) => {
                self.note(|r| {
                    r.failed.insert(host_path.to_string());
                });
                return Err(Self::io(host_path, e));
            }
        };
        self.note(|r| {
            r.files.insert(host_path.to_string(), bytes.clone());
        });
        String::from_utf8(bytes).map_err(|_| RootError::NotUtf8 {
            path: host_path.to_string(),
        })
    }

    /// Read a whole binary file (PCI configuration space), at most `limit` bytes.
    pub fn read_bytes(&self, host_path: &str, limit: usize) -> Result<Vec<u8>, RootError> {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        let read = fs::File::open(self.path(host_path)?)
            .and_then(|f| f.take(limit as u64).read_to_end(&mut bytes));
        if let Err(e) = read {
            self.note(|r| {
                r.failed.insert(host_path.to_string());
            });
            return Err(Self::io(host_path, e));
        }
        self.note(|r| {
            r.files.insert(host_path.to_string(), bytes.clone());
        });
        Ok(bytes)
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
        self.path(host_path).map(|p| p.exists()).unwrap_or(false)
    }

    /// Names in a directory, sorted; empty when the directory is missing.
    pub fn list(&self, host_path: &str) -> Result<Vec<String>, RootError> {
        let dir = self.path(host_path)?;
        self.note(|r| {
            r.dirs.insert(host_path.to_string());
        });
        let mut names = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| Self::io(host_path, e))? {
            let entry = entry.map_err(|e| Self::io(host_path, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// Names in a directory, sorted; empty when missing.
    pub fn list_opt(&self, host_path: &str) -> Vec<String> {
        self.list(host_path).unwrap_or_default()
    }

    /// The target of a symbolic link, as stored (relative links stay relative).
    pub fn read_link(&self, host_path: &str) -> Result<PathBuf, RootError> {
        self.note(|r| {
            r.probed.insert(host_path.to_string());
        });
        fs::read_link(self.path(host_path)?).map_err(|e| Self::io(host_path, e))
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
        let path = self.path(host_path)?;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Self::io(host_path, e))?;
        f.write_all(value.as_bytes())
            .map_err(|e| Self::io(host_path, e))
    }

    /// Create or replace a regular file (configuration we own, journals), creating parents;
    /// written to a temporary file, synced and renamed into place.
    pub fn create(&self, host_path: &str, contents: &[u8]) -> Result<(), RootError> {
        let path = self.path(host_path)?;
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| Self::io(host_path, e))?;
        }
        let tmp = path.with_extension("wirespeed-tmp");
        let write = || -> io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(contents)?;
            f.sync_all()?;
            fs::rename(&tmp, &path)?;
            if let Some(parent) = path.parent() {
                fs::File::open(parent)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| Self::io(host_path, e))
    }

    /// Remove a regular file we created.
    pub fn remove(&self, host_path: &str) -> Result<(), RootError> {
        fs::remove_file(self.path(host_path)?).map_err(|e| Self::io(host_path, e))
    }
}

#[cfg(test)]
mod tests {
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
}
