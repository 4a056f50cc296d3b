//! The delay line's relay: reads every packet router 1 forwards into its TUN device
//! ([`crate::plan::DELAY_DEV`]), holds it in a [`DelayLine`] for half the round trip, and writes
//! it back into the same device, from where the kernel forwards it on by the main table.
//!
//! It runs as a thread of the process that owns the lab ([`Relay`], used by [`crate::Lab`]) or
//! in the foreground ([`serve`], what `wirespeed lab relay` runs). Either way it ends when asked
//! (a flag), when the device goes, or when the router's namespace is removed (`lab down`, or a
//! new lab of the same name): an attached TUN device keeps its namespace alive, so the relay
//! watches the namespace's name and lets go when it no longer names the same namespace.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::delay::{Bounds, DelayLine, LineStats};
use crate::LabError;

/// Where `ip netns` keeps its named namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// The largest packet a TUN device hands over (its MTU is at most 65535).
const MAX_PACKET: usize = 65_536;
/// The longest the relay sleeps without looking at its stop flag.
const TICK: Duration = Duration::from_millis(50);
/// How often it checks that its namespace is still there, and publishes its counters.
const CHECK: Duration = Duration::from_millis(250);
/// Packets read in one go before the due ones are written (keeps the release times close).
const READ_BURST: usize = 64;

/// `IFNAMSIZ`: an interface name and its NUL.
const IFNAMSIZ: usize = 16;
/// `TUNSETIFF`, `_IOW('T', 202, int)`.
const TUNSETIFF: rustix::ioctl::Opcode = rustix::ioctl::opcode::write::<i32>(b'T', 202);
/// `IFF_TUN | IFF_NO_PI`: IP packets without the 4-byte packet-information prefix.
const IFF_TUN_NO_PI: i16 = 0x0001 | 0x1000;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags in the union.
#[repr(C)]
struct IfReq {
    name: [u8; IFNAMSIZ],
    flags: i16,
    _pad: [u8; 22],
}

fn relay_err(what: &str, e: impl Into<io::Error>) -> LabError {
    LabError::Relay(format!("{what}: {}", e.into()))
}

/// A named namespace's identity: its file's device and inode (the nsfs inode).
fn netns_id(netns: &str) -> Option<(u64, u64)> {
    std::fs::metadata(format!("{NETNS_DIR}/{netns}"))
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// The TUN device `dev` of namespace `netns`, attached (`IFF_TUN | IFF_NO_PI`, non-blocking),
/// and the namespace's identity. `/dev/net/tun` is opened by a short-lived thread that entered
/// the namespace: a TUN device belongs to the namespace it was opened in, and only that thread
/// changes namespace.
pub fn attach(netns: &str, dev: &str) -> Result<(OwnedFd, (u64, u64)), LabError> {
    if dev.is_empty() || dev.len() >= IFNAMSIZ || dev.contains('\0') {
        return Err(LabError::Relay(format!("device name '{dev}' is too long")));
    }
    let id = netns_id(netns).ok_or_else(|| LabError::NotFound(netns.to_string()))?;
    let ns_file = std::fs::File::open(format!("{NETNS_DIR}/{netns}"))
        .map_err(|e| relay_err(&format!("opening namespace {netns}"), e))?;
    let dev = dev.to_string();
    let netns = netns.to_string();
    let fd = std::thread::scope(|s| {
        s.spawn(move || -> Result<OwnedFd, LabError> {
            use rustix::fs::{open, Mode, OFlags};
            use rustix::ioctl::{ioctl, Updater};
            use rustix::net::{netdevice, socket_with, AddressFamily, SocketFlags, SocketType};
            use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
            // setns changes only this thread's network namespace, and this thread ends right
            // after.
            move_into_link_name_space(ns_file.as_fd(), Some(LinkNameSpaceType::Network))
                .map_err(|e| relay_err("entering the namespace", e))?;
            // the device must be the lab's: TUNSETIFF on a missing name would create a new one
            let sock = socket_with(
                AddressFamily::INET,
                SocketType::DGRAM,
                SocketFlags::CLOEXEC,
                None,
            )
            .map_err(|e| relay_err("a socket in the namespace", e))?;
            if netdevice::name_to_index(&sock, &dev).is_err() {
                return Err(LabError::Relay(format!(
                    "no device {dev} in {netns}: the lab has no delay line (it was built without --delay, or the kernel has netem)"
                )));
            }
            let fd = open(
                "/dev/net/tun",
                OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| relay_err("opening /dev/net/tun", e))?;
            let mut req = IfReq {
                name: [0; IFNAMSIZ],
                flags: IFF_TUN_NO_PI,
                _pad: [0; 22],
            };
            req.name[..dev.len()].copy_from_slice(dev.as_bytes());
            // SAFETY: TUNSETIFF reads and writes one ifreq (name and flags; the kernel's
            // struct is 40 bytes, as IfReq is), which lives across the call.
            unsafe { ioctl(&fd, Updater::<TUNSETIFF, IfReq>::new(&mut req)) }
                .map_err(|e| relay_err(&format!("attaching to {dev} (TUNSETIFF)"), e))?;
            Ok(fd)
        })
        .join()
        .unwrap_or_else(|_| Err(LabError::Relay("the attaching thread panicked".into())))
    })?;
    Ok((fd, id))
}

/// Wait up to `ns` nanoseconds for a packet on `fd`.
fn wait_readable(fd: &OwnedFd, ns: u64) {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut p = [PollFd::new(fd, PollFlags::IN)];
    let ts = Timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as _,
    };
    // a signal or a timeout: the caller looks again either way
    let _ = poll(&mut p, Some(&ts));
}

/// Relay packets on `fd` through `line` until `stop` is set, the device goes, or the
/// namespace `netns` no longer has identity `id`. Publishes the counters to `stats` now and then.
fn run(
    fd: &OwnedFd,
    line: &mut DelayLine,
    netns: &str,
    id: (u64, u64),
    stop: &AtomicBool,
    stats: &Mutex<LineStats>,
) -> Result<LineStats, LabError> {
    let start = Instant::now();
    let now = || start.elapsed().as_nanos() as u64;
    let mut scratch = vec![0u8; MAX_PACKET];
    let mut last_check = Instant::now();
    let publish = |line: &DelayLine| {
        if let Ok(mut s) = stats.lock() {
            *s = line.stats();
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let t = now();
        while let Some(p) = line.pop_due(t) {
            let _ = rustix::io::write(fd, &p);
            line.recycle(p);
        }
        let mut got = 0;
        while got < READ_BURST {
            use rustix::io::Errno;
            match rustix::io::read(fd, &mut scratch) {
                Ok(0) => {
                    publish(line);
                    return Ok(line.stats());
                }
                Ok(n) => {
                    line.push(now(), &scratch[..n]);
                    got += 1;
                    continue;
                }
                Err(Errno::AGAIN) | Err(Errno::INTR) => break,
                // the device was removed
                Err(Errno::BADFD) | Err(Errno::IO) | Err(Errno::NODEV) => {
                    publish(line);
                    return Ok(line.stats());
                }
                Err(e) => return Err(relay_err("reading the TUN device", e)),
            }
        }
        if got == 0 {
            let wait = line
                .wait_ns(now())
                .unwrap_or(u64::MAX)
                .min(TICK.as_nanos() as u64);
            if wait > 0 {
                wait_readable(fd, wait);
            }
        }
        if last_check.elapsed() >= CHECK {
            last_check = Instant::now();
            publish(line);
            if netns_id(netns) != Some(id) {
                break;
            }
        }
    }
    publish(line);
    Ok(line.stats())
}

/// The relay in the foreground: attach to `dev` in `netns`, call `ready`, relay with a hold of
/// `hold_ns` until `stop` is set or the lab goes; the counters at the end.
pub fn serve(
    netns: &str,
    dev: &str,
    hold_ns: u64,
    bounds: Bounds,
    stop: &AtomicBool,
    ready: impl FnOnce(),
) -> Result<LineStats, LabError> {
    let (fd, id) = attach(netns, dev)?;
    ready();
    let mut line = DelayLine::new(hold_ns, bounds);
    run(
        &fd,
        &mut line,
        netns,
        id,
        stop,
        &Mutex::new(LineStats::default()),
    )
}

/// The line a relay process writes on stdout once it has attached ([`spawn_external`] waits
/// for it); a relay that cannot attach writes `error: ` and the reason instead.
pub const READY: &str = "ready";

/// The relay of lab `name` (the delay line `lab up --delay delay_ms` built) in the foreground:
/// check the spec and the host, attach in the lab's router 1, say [`READY`] on `out` (then
/// nothing more: the reader lets go of it), relay until `stop` is set or the lab goes. A relay
/// that fails to attach or to relay says `error: ` and why on `out` (if it still listens).
pub fn serve_lab(
    name: &str,
    delay_ms: f64,
    stop: &AtomicBool,
    mut out: impl io::Write,
) -> Result<LineStats, LabError> {
    let spec = crate::Spec {
        delay_ms: Some(delay_ms),
        ..crate::Spec::new(name)
    };
    spec.validate()?;
    crate::check_can_run(false)?;
    let hold =
        crate::plan::relay_hold_ns(&spec, crate::Kernel { netem: false }).unwrap_or_default();
    let got = serve(
        &crate::Side::Router1.netns(name),
        crate::plan::DELAY_DEV,
        hold,
        crate::delay::DEFAULT_BOUNDS,
        stop,
        || {
            let _ = writeln!(out, "{READY}");
            let _ = out.flush();
        },
    );
    if let Err(e) = &got {
        let _ = writeln!(out, "error: {e}");
    }
    got
}

/// Start `relay` (a command that runs [`serve_lab`] and says [`READY`]) in a session of its
/// own, so that Ctrl-C in this terminal and this process's end leave it running, and wait
/// until it has attached to the delay line; its process id. It ends by itself when the lab is
/// removed.
pub fn spawn_external(mut relay: std::process::Command) -> Result<u32, LabError> {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    relay
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches nothing of the parent.
    unsafe {
        relay.pre_exec(|| {
            let _ = rustix::process::setsid();
            Ok(())
        });
    }
    let mut child = relay
        .spawn()
        .map_err(|e| LabError::Relay(format!("starting the relay: {e}")))?;
    let mut first = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = io::BufReader::new(out).read_line(&mut first);
    }
    if first.trim() == READY {
        return Ok(child.id());
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(LabError::Relay(match first.trim() {
        "" => "the relay ended before it attached".into(),
        why => why.trim_start_matches("error: ").to_string(),
    }))
}

/// The relay as a thread of this process; stopped and joined on drop.
#[derive(Debug)]
pub struct Relay {
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<LineStats>>,
    thread: Option<JoinHandle<Result<LineStats, LabError>>>,
}

impl Relay {
    /// Attach to `dev` in `netns` (errors here, before the thread starts) and relay with a
    /// hold of `hold_ns`.
    pub fn start(netns: &str, dev: &str, hold_ns: u64, bounds: Bounds) -> Result<Relay, LabError> {
        let (fd, id) = attach(netns, dev)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(LineStats::default()));
        let (s, st, ns) = (Arc::clone(&stop), Arc::clone(&stats), netns.to_string());
        let thread = std::thread::Builder::new()
            .name("ws-delay-line".into())
            .spawn(move || {
                let mut line = DelayLine::new(hold_ns, bounds);
                run(&fd, &mut line, &ns, id, &s, &st)
            })
            .map_err(|e| relay_err("starting the relay thread", e))?;
        Ok(Relay {
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// The counters as last published (every quarter second).
    pub fn stats(&self) -> LineStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// Stop and join the thread; its final counters, or why it ended early.
    pub fn stop(mut self) -> Result<LineStats, LabError> {
        self.halt()
    }

    fn halt(&mut self) -> Result<LineStats, LabError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(LabError::Relay("the relay thread panicked".into()))),
            None => Ok(self.stats()),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}
