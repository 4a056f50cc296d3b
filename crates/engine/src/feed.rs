//! The server's stats feed for `wirespeed top`: with `server --stats-socket [PATH]` the server
//! serves one JSON line per interval per test on a Unix socket (mode 0600, owned by the
//! server's user) to local readers.
//!
//! The feed hangs off the per-test [`Reporter`]s the CLI gives the server (a [`Tee`] around the
//! usual text/JSON reporter), never the engine's data path. The server never waits for a
//! reader: every reader has a small bounded queue and its own writer thread, a line that finds
//! the queue full is dropped for that reader, and a reader that stops reading is cut off by a
//! write timeout.
//!
//! Lines from the socket are untrusted on the reading side too: [`parse_line`] takes only
//! well-formed lines up to [`MAX_LINE`] bytes and [`LineReader`] skips longer ones whole.

use std::io::{BufRead, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::server::TestInfo;
use crate::Reporter;
use serde::{Deserialize, Serialize};
use wirespeed_model::observation::CpuUse;
use wirespeed_report::{Interval, LiveEvent, Start, TestResult};

/// The longest line a reader accepts (and the server writes: streams past
/// [`MAX_STREAMS`] are left out of a line, the sum still counts them).
pub const MAX_LINE: usize = 16 * 1024;
/// Streams listed in one line.
pub const MAX_STREAMS: usize = 64;
/// The client's CPUs listed in one line (the busiest).
pub const MAX_PEER_CPUS: usize = 48;
/// Readers served at once; more are turned away.
const MAX_READERS: usize = 16;
/// Lines queued per reader before lines are dropped for it.
const QUEUE: usize = 64;
/// A reader that takes no bytes for this long is cut off.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// One interval of one test, or its end (`done`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsLine {
    /// The server's test number (1, 2, 3... in order of control connections).
    pub test: u64,
    /// The client's address.
    pub peer: String,
    /// Whether this end receives (`false`: it sends, a `-R` test).
    pub receiver: bool,
    /// Seconds since the test started, at the end of this interval.
    pub t: f64,
    /// Test length the client asked for, seconds (0 when not known).
    pub duration: f64,
    /// Per stream: (stream id, bits per second) over this interval.
    pub streams: Vec<(u32, f64)>,
    pub sum_bps: f64,
    /// Retransmits over this interval (a sender's TCP count).
    pub retransmits: Option<u64>,
    /// The test ended.
    pub done: bool,
    /// The verdict, once there is one.
    pub verdict: Option<String>,
    /// The test failed: why.
    pub error: Option<String>,
    /// The client's CPUs over its latest interval, when the client is wirespeed (it sends its
    /// observation of each interval on the control connection): the busiest
    /// [`MAX_PEER_CPUS`], by CPU number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_cpus: Vec<CpuUse>,
    /// The interface the client's NIC counts are for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_iface: Option<String>,
    /// The verdict over the intervals so far (the end's `verdict` replaces it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_so_far: Option<String>,
}

/// A line from the socket, if it is one: bounded, a JSON object of the right shape, sane
/// numbers. Anything else is `None` (and ignored by the reader).
pub fn parse_line(line: &[u8]) -> Option<StatsLine> {
    if line.len() > MAX_LINE {
        return None;
    }
    let l: StatsLine = serde_json::from_slice(line).ok()?;
    let finite = |v: f64| v.is_finite() && v >= 0.0;
    let ok = finite(l.t)
        && finite(l.duration)
        && finite(l.sum_bps)
        && l.streams.len() <= MAX_STREAMS
        && l.streams.iter().all(|(_, b)| finite(*b))
        && l.peer.len() <= 64
        && l.verdict.as_ref().is_none_or(|v| v.len() <= 1024)
        && l.verdict_so_far.as_ref().is_none_or(|v| v.len() <= 1024)
        && l.peer_iface.as_ref().is_none_or(|v| v.len() <= 64)
        && l.peer_cpus.len() <= MAX_PEER_CPUS
        && l.error.as_ref().is_none_or(|v| v.len() <= 1024);
    ok.then_some(l)
}

/// One line of the feed (without its newline), within [`MAX_LINE`].
pub fn format_line(l: &StatsLine) -> Vec<u8> {
    let mut l = l.clone();
    l.streams.truncate(MAX_STREAMS);
    if l.peer_cpus.len() > MAX_PEER_CPUS {
        l.peer_cpus
            .sort_by(|a, b| b.busy().get().total_cmp(&a.busy().get()));
        l.peer_cpus.truncate(MAX_PEER_CPUS);
        l.peer_cpus.sort_by_key(|c| c.cpu);
    }
    if l.peer_iface.as_ref().is_some_and(|i| i.len() > 64) {
        l.peer_iface = None;
    }
    for s in [&mut l.verdict, &mut l.error, &mut l.verdict_so_far]
        .into_iter()
        .flatten()
    {
        if s.len() > 1024 {
            let mut cut = 1024;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
        }
    }
    serde_json::to_vec(&l).unwrap_or_default()
}

/// Reads newline-ended lines of at most [`MAX_LINE`] bytes; a longer line is skipped whole.
pub struct LineReader<R> {
    inner: std::io::BufReader<R>,
}

impl<R: Read> LineReader<R> {
    pub fn new(r: R) -> Self {
        LineReader {
            inner: std::io::BufReader::new(r),
        }
    }

    /// The next line that fits, `None` at the end of the stream (or on an error).
    pub fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            let mut buf = Vec::new();
            let mut too_long = false;
            loop {
                let chunk = match self.inner.fill_buf() {
                    Ok([]) => return None,
                    Ok(c) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return None,
                };
                let (take, end) = match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => (i, true),
                    None => (chunk.len(), false),
                };
                if !too_long {
                    if buf.len() + take > MAX_LINE {
                        too_long = true;
                        buf = Vec::new();
                    } else {
                        buf.extend_from_slice(&chunk[..take]);
                    }
                }
                self.inner.consume(take + usize::from(end));
                if end {
                    break;
                }
            }
            if !too_long {
                return Some(buf);
            }
        }
    }
}

/// The default socket: `$XDG_RUNTIME_DIR/wirespeed/stats.sock`, else
/// `/run/wirespeed/stats.sock` for root, else `/tmp/wirespeed-UID/stats.sock`.
pub fn default_path() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Path::new(&d).join("wirespeed").join("stats.sock");
    }
    let uid = rustix::process::getuid().as_raw();
    if uid == 0 {
        PathBuf::from("/run/wirespeed/stats.sock")
    } else {
        PathBuf::from(format!("/tmp/wirespeed-{uid}/stats.sock"))
    }
}

struct Readers {
    queues: Mutex<Vec<SyncSender<Arc<[u8]>>>>,
    dropped: AtomicU64,
}

impl Readers {
    fn publish(&self, line: &StatsLine) {
        let mut bytes = format_line(line);
        bytes.push(b'\n');
        let bytes: Arc<[u8]> = bytes.into();
        let Ok(mut qs) = self.queues.lock() else {
            return;
        };
        qs.retain(|q| match q.try_send(Arc::clone(&bytes)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }
}

/// The listening socket and its readers; the socket file goes when this is dropped.
/// Why the feed's socket could not be served.
#[derive(Debug, thiserror::Error)]
#[error("--stats-socket {}: {what}", path.display())]
pub struct FeedError {
    pub path: PathBuf,
    pub what: String,
}

pub struct Feed {
    path: PathBuf,
    readers: Arc<Readers>,
    done: Arc<AtomicBool>,
}

impl Feed {
    /// Listen on `path` (its directory is made 0700 if missing). A socket file nobody serves
    /// is replaced; a live one, or anything that is not a socket, is an error.
    pub fn open(path: &Path) -> Result<Arc<Feed>, FeedError> {
        let fail = |what: String| FeedError {
            path: path.to_path_buf(),
            what,
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => {
                if UnixStream::connect(path).is_ok() {
                    return Err(fail("another server serves it".into()));
                }
                std::fs::remove_file(path)
                    .map_err(|e| fail(format!("removing the stale socket: {e}")))?;
            }
            Ok(_) => return Err(fail("exists and is not a socket".into())),
            Err(_) => {}
        }
        // Bound under a temporary name, made 0600, then renamed into place: no moment at
        // which another user could connect.
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "stats.sock".into());
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let listener = UnixListener::bind(&tmp).map_err(|e| fail(e.to_string()))?;
        let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail(e.to_string()));
        }
        let feed = Arc::new(Feed {
            path: path.to_path_buf(),
            readers: Arc::new(Readers {
                queues: Mutex::new(Vec::new()),
                dropped: AtomicU64::new(0),
            }),
            done: Arc::new(AtomicBool::new(false)),
        });
        let readers = Arc::clone(&feed.readers);
        let done = Arc::clone(&feed.done);
        std::thread::Builder::new()
            .name("stats-accept".into())
            .spawn(move || accept(listener, readers, done))
            .map_err(|e| fail(e.to_string()))?;
        Ok(feed)
    }

    pub fn publish(&self, line: &StatsLine) {
        self.readers.publish(line);
    }

    /// Lines dropped for slow readers so far.
    #[cfg(test)]
    fn dropped(&self) -> u64 {
        self.readers.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        // Wake the acceptor so it sees `done`, then take the file away.
        let _ = UnixStream::connect(&self.path);
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept(listener: UnixListener, readers: Arc<Readers>, done: Arc<AtomicBool>) {
    let me = rustix::process::getuid();
    for conn in listener.incoming() {
        if done.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut conn) = conn else { continue };
        // Only this user (or root) reads the feed, whatever the file's mode became.
        let allowed = rustix::net::sockopt::socket_peercred(&conn)
            .is_ok_and(|c| c.uid == me || c.uid.is_root());
        let Ok(mut qs) = readers.queues.lock() else {
            return;
        };
        if !allowed || qs.len() >= MAX_READERS {
            continue;
        }
        let (tx, rx) = sync_channel::<Arc<[u8]>>(QUEUE);
        qs.push(tx);
        drop(qs);
        let _ = conn.set_write_timeout(Some(WRITE_TIMEOUT));
        let _ = std::thread::Builder::new()
            .name("stats-reader".into())
            .spawn(move || {
                for line in rx {
                    if conn.write_all(&line).is_err() {
                        return;
                    }
                }
            });
    }
}

/// The server's per-test reporter with the feed alongside: everything goes to `inner`
/// unchanged, and every interval (and the end) becomes a [`StatsLine`].
pub struct Tee {
    inner: Box<dyn Reporter>,
    feed: Arc<Feed>,
    test: u64,
    peer: String,
    receiver: bool,
    duration: f64,
    /// The interval's line, published with the live event that follows it.
    pending: Option<StatsLine>,
}

impl Tee {
    pub fn new(inner: Box<dyn Reporter>, feed: Arc<Feed>, info: &TestInfo) -> Tee {
        Tee {
            inner,
            feed,
            test: info.number,
            peer: info.peer.to_string(),
            receiver: true,
            duration: 0.0,
            pending: None,
        }
    }

    fn flush(&mut self) {
        if let Some(l) = self.pending.take() {
            self.feed.publish(&l);
        }
    }

    fn line(&self) -> StatsLine {
        StatsLine {
            test: self.test,
            peer: self.peer.clone(),
            receiver: self.receiver,
            t: 0.0,
            duration: self.duration,
            streams: Vec::new(),
            sum_bps: 0.0,
            retransmits: None,
            done: false,
            verdict: None,
            error: None,
            peer_cpus: Vec::new(),
            peer_iface: None,
            verdict_so_far: None,
        }
    }
}

impl Reporter for Tee {
    fn connecting(&mut self, host: &str, port: u16) {
        self.inner.connecting(host, port);
    }

    fn start(&mut self, start: &Start) {
        if let Some(t) = &start.test_start {
            self.receiver = t.reverse == 0;
            self.duration = t.duration as f64;
        }
        self.inner.start(start);
    }

    fn interval(&mut self, iv: &Interval) {
        self.inner.interval(iv);
        self.flush();
        let mut l = self.line();
        l.t = iv.sum.end;
        l.streams = iv
            .streams
            .iter()
            .take(MAX_STREAMS)
            .enumerate()
            .map(|(i, s)| (s.socket.unwrap_or(i as u32 + 1), s.bits_per_second))
            .collect();
        l.sum_bps = iv.sum.bits_per_second;
        l.retransmits = iv.sum.retransmits;
        self.pending = Some(l);
    }

    fn wants_live(&self) -> bool {
        true
    }

    fn live(&mut self, ev: &LiveEvent) {
        if self.inner.wants_live() {
            self.inner.live(ev);
        }
        if let Some(l) = &mut self.pending {
            l.peer_cpus = ev.peer.as_ref().map(|p| p.cpus.clone()).unwrap_or_default();
            l.peer_iface = ev.peer_iface.clone();
            l.verdict_so_far = ev.verdict_so_far.as_ref().map(|v| v.line.clone());
        }
        self.flush();
    }

    fn finish(&mut self, result: &TestResult) {
        self.inner.finish(result);
        self.flush();
        let mut l = self.line();
        l.done = true;
        l.t = result.intervals.last().map_or(0.0, |iv| iv.sum.end);
        l.verdict = result
            .wirespeed
            .as_ref()
            .and_then(|x| x.verdict.as_ref())
            .map(|v| v.line.clone());
        l.error = result.error.clone();
        self.feed.publish(&l);
    }

    fn captured_text(&self) -> Option<String> {
        self.inner.captured_text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StatsLine {
        StatsLine {
            test: 3,
            peer: "127.0.0.1:40000".into(),
            receiver: true,
            t: 2.0,
            duration: 5.0,
            streams: vec![(1, 1e9), (2, 2e9)],
            sum_bps: 3e9,
            retransmits: Some(4),
            done: false,
            verdict: None,
            error: None,
            peer_cpus: Vec::new(),
            peer_iface: None,
            verdict_so_far: None,
        }
    }

    #[test]
    fn a_line_round_trips() {
        let l = sample();
        assert_eq!(parse_line(&format_line(&l)), Some(l));
    }

    #[test]
    fn hostile_lines_are_ignored() {
        let bad: &[&[u8]] = &[
            b"",
            b"garbage",
            b"\xff\xfe\x00",
            b"[1,2,3]",
            b"{\"test\":1}",
            br#"{"test":-1,"peer":"x","receiver":true,"t":1,"duration":1,"streams":[],"sum_bps":1,"retransmits":null,"done":false,"verdict":null,"error":null}"#,
            br#"{"test":1,"peer":"x","receiver":true,"t":-1,"duration":1,"streams":[],"sum_bps":1,"retransmits":null,"done":false,"verdict":null,"error":null}"#,
            br#"{"test":1,"peer":"x","receiver":true,"t":1,"duration":1,"streams":[[1,1e999]],"sum_bps":1,"retransmits":null,"done":false,"verdict":null,"error":null}"#,
            br#"{"test":1,"peer":"x","receiver":true,"t":1,"duration":1,"streams":[],"sum_bps":1,"retransmits":null,"done":false,"verdict":null,"error":null,"extra":1}"#,
        ];
        for b in bad {
            assert_eq!(parse_line(b), None, "{}", String::from_utf8_lossy(b));
        }
        let mut many = sample();
        many.streams = (0..=MAX_STREAMS as u32).map(|i| (i, 1.0)).collect();
        let raw = serde_json::to_vec(&many).unwrap();
        assert_eq!(parse_line(&raw), None, "too many streams");
        // format_line keeps a line within bounds.
        assert!(parse_line(&format_line(&many)).is_some());
        let mut long = sample();
        long.verdict = Some("é".repeat(MAX_LINE));
        let f = format_line(&long);
        assert!(f.len() <= MAX_LINE, "{}", f.len());
        assert!(parse_line(&f).is_some());
    }

    #[test]
    fn the_reader_skips_overlong_lines_whole() {
        let good = format_line(&sample());
        let mut input = Vec::new();
        input.extend_from_slice(&good);
        input.push(b'\n');
        input.extend(std::iter::repeat_n(b'{', MAX_LINE * 3));
        input.push(b'\n');
        input.extend_from_slice(b"not json\n");
        input.extend_from_slice(&good);
        input.push(b'\n');
        input.extend_from_slice(b"{\"unterminated"); // no newline: the stream ended
        let mut r = LineReader::new(&input[..]);
        let mut parsed = Vec::new();
        let mut lines = 0;
        while let Some(l) = r.next_line() {
            assert!(l.len() <= MAX_LINE);
            lines += 1;
            parsed.extend(parse_line(&l));
        }
        assert_eq!(lines, 3, "the overlong line is skipped, not split");
        assert_eq!(parsed, vec![sample(), sample()]);
    }

    #[test]
    fn a_reader_that_does_not_read_never_blocks_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let feed = Feed::open(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let _stuck = UnixStream::connect(&path).unwrap();
        let reader = UnixStream::connect(&path).unwrap();
        // Wait until both readers are registered (readiness, not time).
        while feed.readers.queues.lock().unwrap().len() < 2 {
            std::thread::yield_now();
        }
        // Far more than the socket buffer and the queue hold: publish must still return.
        let mut l = sample();
        l.verdict = Some("x".repeat(1000));
        for _ in 0..20_000 {
            feed.publish(&l);
        }
        assert!(
            feed.dropped() > 0,
            "lines for the stuck reader were dropped"
        );
        // A reader that reads gets whole lines.
        let mut lr = LineReader::new(reader);
        let first = lr.next_line().unwrap();
        assert_eq!(parse_line(&first), Some(l));
        // A second server on the same path is refused while this one lives.
        assert!(Feed::open(&path).is_err());
        drop(feed);
        assert!(!path.exists(), "the socket file goes with the feed");
    }
}
