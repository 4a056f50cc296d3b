//! The acceptor: one thread owns the listening socket and every connection that has not
//! become a test yet. It `poll`s them all with per-connection deadlines, so silent or slow
//! peers cost a slot in its list, never a thread, and are dropped when their time is up.
//!
//! Each accepted connection is first counted against its address's and the server's pending
//! limits ([`super::admission::Gate::connection`]; over a limit: `ACCESS_DENIED` and a
//! close). Its first 37 bytes (the cookie) either match a test that is waiting for its data
//! connections (the connection goes to that test, tagged with its accept order), or make it
//! a control connection: the acceptor sends `PARAM_EXCHANGE` and reads the parameters itself
//! (bounded: the protocol session's caps, the guard's control-byte limits, the setup
//! timeout). Only when they arrived and passed [`super::admission::decide`] does the test get
//! a thread ([`super::test`]); a refusal goes back in iperf3's terms and to the server's log
//! as one line with the address. A cookie that matches nothing expecting streams, or a
//! duplicate, gets `ACCESS_DENIED` and a close, as iperf3 does.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirespeed_guard::{ControlLedger, PeerKey};
use wirespeed_protocol::{Cookie, ServerEvent, ServerSession, State, COOKIE_LEN};

use super::admission::{self, AdmissionError};
use super::test::serve_test;
use super::{Ctx, Incoming};
use crate::EngineError;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::io::Errno;

enum Stage {
    /// Reading the 37-byte cookie.
    Cookie { buf: [u8; COOKIE_LEN], got: usize },
    /// A control connection: reading its parameters.
    Params {
        cookie: Cookie,
        sess: Box<ServerSession>,
        /// The control bytes this connection was charged (they stay charged while its test
        /// runs, and are given back when the connection ends).
        ctl: ControlLedger,
    },
}

struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    key: PeerKey,
    seq: u64,
    stage: Stage,
    deadline: Instant,
    epoch: Instant,
}

/// Which pending connection gives way when the server-wide pending limit refuses an address
/// that holds none: the oldest of the address holding the most, when it holds at least two.
/// Many addresses filling the server then cannot keep a new one out: each new address takes
/// a place from the greediest, which cannot take it back (it holds some), and an address is
/// never left with nothing by it.
fn victim(pending: &[(PeerKey, u64)]) -> Option<usize> {
    let mut held: HashMap<PeerKey, usize> = HashMap::new();
    for (k, _) in pending {
        *held.entry(*k).or_default() += 1;
    }
    let (&greedy, &n) = held
        .iter()
        .max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k)))?;
    if n < 2 {
        return None;
    }
    pending
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| *k == greedy)
        .min_by_key(|(_, (_, seq))| *seq)
        .map(|(i, _)| i)
}

fn deny_and_close(mut s: TcpStream) {
    let _ = s.set_nonblocking(true);
    let _ = s.write(&[State::AccessDenied.to_byte()]);
}

/// One log line per refusal. Refused connections (before anything was read) are logged at
/// most once per address every 10 s, so that a flood of them does not become a flood of log
/// lines; refused tests (each one a full parameters exchange, bounded by the pending limits)
/// are all logged.
struct RefusalLog {
    last: HashMap<PeerKey, Instant>,
}

impl RefusalLog {
    fn log(&self, ctx: &Ctx, ip: IpAddr, what: &str) {
        if let Some(h) = &ctx.cfg.log {
            (h.0)(&format!("refused {}: {what}", crate::net::canonical_ip(ip)));
        }
    }

    fn log_connection(&mut self, ctx: &Ctx, key: PeerKey, ip: IpAddr, what: &str) {
        let now = Instant::now();
        if self
            .last
            .get(&key)
            .is_some_and(|t| now.duration_since(*t) < Duration::from_secs(10))
        {
            return;
        }
        if self.last.len() >= 4096 {
            self.last
                .retain(|_, t| now.duration_since(*t) < Duration::from_secs(10));
        }
        self.last.insert(key, now);
        self.log(ctx, ip, what);
    }
}

/// Best-effort write of a short answer on a non-blocking socket.
fn send_now(s: &mut TcpStream, bytes: &[u8]) -> bool {
    let mut off = 0;
    let until = Instant::now() + Duration::from_millis(200);
    while off < bytes.len() {
        match s.write(&bytes[off..]) {
            Ok(0) => return false,
            Ok(n) => off += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

pub(super) fn acceptor(
    listener: &TcpListener,
    ctx: &Arc<Ctx>,
    stop: &AtomicBool,
    done_rx: &Receiver<()>,
) -> Result<(), EngineError> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut seq: u64 = 0;
    let mut tests_started: u64 = 0;
    let mut log = RefusalLog {
        last: HashMap::new(),
    };
    let cfg = &ctx.cfg;
    let gate = &ctx.gate;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        if stop.load(Ordering::Acquire) {
            for p in pending.drain(..) {
                forget(ctx, &p);
            }
            return Ok(());
        }
        if cfg.one_off && tests_started > 0 && done_rx.try_recv().is_ok() {
            return Ok(());
        }
        let now = Instant::now();
        pending.retain(|p| {
            let alive = p.deadline > now;
            if !alive {
                ctx.stats
                    .connections_dropped
                    .fetch_add(1, Ordering::Relaxed);
                ctx.stats.count_refusal(super::RefusalReason::Timeout);
                forget(ctx, p);
            }
            alive
        });
        let next_deadline = pending.iter().map(|p| p.deadline).min();
        let timeout = next_deadline
            .map_or(Duration::from_millis(100), |d| {
                d.saturating_duration_since(now)
                    .min(Duration::from_millis(100))
            })
            .max(Duration::from_millis(1));
        // which descriptors are ready: the listener first, then the pending ones in order
        let ready: Vec<bool> = {
            let mut fds = Vec::with_capacity(pending.len() + 1);
            fds.push(PollFd::new(listener, PollFlags::IN));
            fds.extend(
                pending
                    .iter()
                    .map(|p| PollFd::new(&p.stream, PollFlags::IN)),
            );
            let timeout = Timespec::try_from(timeout).unwrap_or(Timespec {
                tv_sec: 0,
                tv_nsec: 100_000_000,
            });
            match poll(&mut fds, Some(&timeout)) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => {
                    return Err(EngineError::io("poll on the listening socket", e.into()));
                }
            }
            fds.iter().map(|f| !f.revents().is_empty()).collect()
        };
        // Pending connections first, in accept order.
        let mut finished: Vec<usize> = Vec::new();
        for (i, p) in pending.iter_mut().enumerate() {
            if !ready[i + 1] {
                continue;
            }
            if step(ctx, p, &mut chunk) {
                finished.push(i);
            }
        }
        for &i in finished.iter().rev() {
            let p = pending.remove(i);
            match p.stage {
                Stage::Cookie { ref buf, got } if got == COOKIE_LEN => {
                    let cookie = match Cookie::parse(buf) {
                        Ok(c) => c,
                        Err(_) => {
                            ctx.stats
                                .connections_dropped
                                .fetch_add(1, Ordering::Relaxed);
                            gate.guard().connection_closed(p.key);
                            deny_and_close(p.stream);
                            continue;
                        }
                    };
                    if let Some(p) = cookie_arrived(ctx, p, cookie) {
                        pending.push(p);
                    }
                }
                Stage::Params { ref sess, .. }
                    if matches!(sess.phase(), wirespeed_protocol::ServerPhase::AwaitDecision) =>
                {
                    if start_test(ctx, p, &mut log, tests_started + 1) {
                        tests_started += 1;
                    }
                }
                Stage::Params { .. } => unreadable_params(ctx, p, &log),
                _ => {
                    ctx.stats
                        .connections_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    forget(ctx, &p);
                }
            }
        }
        // New connections.
        if ready[0] {
            loop {
                match listener.accept() {
                    Ok((s, peer)) => {
                        seq += 1;
                        let mut admitted = gate.connection(peer.ip());
                        if let Err(wirespeed_guard::Refusal::Pending {
                            scope: wirespeed_guard::Scope::Server,
                            ..
                        }) = admitted
                        {
                            let holds = gate.guard().usage(PeerKey::of(peer.ip())).pending;
                            let keys: Vec<(PeerKey, u64)> =
                                pending.iter().map(|p| (p.key, p.seq)).collect();
                            if let Some(i) = victim(&keys).filter(|_| holds == 0) {
                                let p = pending.remove(i);
                                forget(ctx, &p);
                                ctx.stats.count_refusal(super::RefusalReason::PerAddress);
                                log.log_connection(
                                    ctx,
                                    p.key,
                                    p.peer.ip(),
                                    "the oldest pending connection of the address holding the \
                                     most, closed to make room for an address holding none",
                                );
                                deny_and_close(p.stream);
                                admitted = gate.connection(peer.ip());
                            }
                        }
                        let key = match admitted {
                            Ok(k) => k,
                            Err(r) => {
                                ctx.stats
                                    .connections_dropped
                                    .fetch_add(1, Ordering::Relaxed);
                                ctx.stats.count_refusal(super::RefusalReason::of_guard(&r));
                                log.log_connection(
                                    ctx,
                                    PeerKey::of(peer.ip()),
                                    peer.ip(),
                                    &r.to_string(),
                                );
                                deny_and_close(s);
                                continue;
                            }
                        };
                        if s.set_nonblocking(true).is_err() {
                            gate.guard().connection_closed(key);
                            continue;
                        }
                        let _ = cfg.extras.keepalive(&s);
                        pending.push(Pending {
                            stream: s,
                            peer,
                            key,
                            seq,
                            stage: Stage::Cookie {
                                buf: [0; COOKIE_LEN],
                                got: 0,
                            },
                            deadline: Instant::now() + cfg.cookie_timeout,
                            epoch: Instant::now(),
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    // EMFILE and friends: keep serving; the pending ones will free descriptors.
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(10));
                        break;
                    }
                }
            }
        }
    }
}

/// A pending connection leaves without becoming a test or a stream: give back what it held.
fn forget(ctx: &Ctx, p: &Pending) {
    let mut g = ctx.gate.guard();
    if let Stage::Params { ctl, cookie, .. } = &p.stage {
        g.release_control_bytes(p.key, ctl.charged());
        drop(g);
        ctx.registry.lock().remove(cookie);
        g = ctx.gate.guard();
    }
    g.connection_closed(p.key);
}

/// Read what a pending connection sent; `true` when it is finished (complete, failed or
/// closed).
fn step(ctx: &Ctx, p: &mut Pending, chunk: &mut [u8]) -> bool {
    match &mut p.stage {
        Stage::Cookie { buf, got } => match p.stream.read(&mut buf[*got..]) {
            Ok(0) => true,
            Ok(k) => {
                *got += k;
                *got == COOKIE_LEN
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => false,
            Err(_) => true,
        },
        Stage::Params { sess, ctl, .. } => {
            let now = p.epoch.elapsed();
            match p.stream.read(chunk) {
                Ok(0) => sess.handle_eof(now),
                Ok(k) => {
                    if ctl.charge(&mut ctx.gate.guard(), k as u64).is_err() {
                        return true;
                    }
                    sess.handle_input(now, &chunk[..k]);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                Err(_) => return true,
            }
            !matches!(sess.phase(), wirespeed_protocol::ServerPhase::AwaitParams)
        }
    }
}

/// A complete cookie: hand a data connection to its test, or make a control connection wait
/// for its parameters (returned to the pending list).
fn cookie_arrived(ctx: &Ctx, p: Pending, cookie: Cookie) -> Option<Pending> {
    let mut tests = ctx.registry.lock();
    match tests.get(&cookie) {
        Some(Some(tx)) => {
            // A data connection of a test that is collecting its streams; it stops being
            // pending (the test's ticket still allows for the rest).
            let _ = p.stream.set_nonblocking(false);
            ctx.gate.guard().connection_closed(p.key);
            if tx
                .send(Incoming {
                    seq: p.seq,
                    stream: p.stream,
                })
                .is_err()
            {
                tests.remove(&cookie);
            }
            None
        }
        Some(None) => {
            // A test with this cookie exists but takes no streams now (or a duplicate
            // control connection).
            drop(tests);
            ctx.gate.guard().connection_closed(p.key);
            deny_and_close(p.stream);
            None
        }
        None => {
            tests.insert(cookie, None);
            drop(tests);
            // The wait for the client's results is receiving too: a shorter --rcv-timeout
            // bounds it (as on the client).
            let mut timeouts = ctx.cfg.timeouts;
            timeouts.results = timeouts
                .results
                .min(ctx.cfg.rcv_timeout.max(Duration::from_millis(100)));
            let mut sess = Box::new(ServerSession::new(p.epoch.elapsed(), cookie, timeouts));
            let mut stream = p.stream;
            if !send_now(&mut stream, &sess.take_transmit()) {
                ctx.registry.lock().remove(&cookie);
                ctx.gate.guard().connection_closed(p.key);
                return None;
            }
            Some(Pending {
                stream,
                stage: Stage::Params {
                    cookie,
                    sess,
                    ctl: ControlLedger::new(p.key),
                },
                deadline: Instant::now() + ctx.cfg.timeouts.setup,
                ..p
            })
        }
    }
}

/// The parameters arrived: decide, then refuse (in iperf3's terms, and one log line) or start
/// the test on its own thread. `true` when a test started.
fn start_test(ctx: &Arc<Ctx>, p: Pending, log: &mut RefusalLog, number: u64) -> bool {
    let Stage::Params {
        cookie,
        mut sess,
        mut ctl,
    } = p.stage
    else {
        return false;
    };
    let mut stream = p.stream;
    let params = match sess.poll_event() {
        Some(ServerEvent::Params(params)) => *params,
        _ => {
            ctx.registry.lock().remove(&cookie);
            let mut g = ctx.gate.guard();
            ctl.close(&mut g);
            g.connection_closed(p.key);
            return false;
        }
    };
    let decision = admission::decide(&params, p.peer, p.key, &cookie, &ctx.cfg, &ctx.gate);
    // The connection is no longer pending either way.
    ctx.gate.guard().connection_closed(p.key);
    let ticket = match decision {
        // The bytes read so far stay charged to the connection while its test runs.
        Ok(mut t) => {
            t.keep_control(ctl);
            t
        }
        Err(e) => {
            ctl.close(&mut ctx.gate.guard());
            refuse(ctx, &mut stream, &mut sess, &e, p.peer, log);
            ctx.registry.lock().remove(&cookie);
            return false;
        }
    };
    let _ = stream.set_nonblocking(false);
    let ctx2 = Arc::clone(ctx);
    let peer = p.peer;
    let spawned = std::thread::Builder::new()
        .name(format!("ws-test-{number}"))
        .spawn(move || {
            serve_test(stream, peer, *sess, params, ticket, number, &ctx2);
            ctx2.registry.lock().remove(&cookie);
            if let Ok(tx) = ctx2.done_tx.lock() {
                let _ = tx.send(());
            }
        });
    if spawned.is_err() {
        ctx.registry.lock().remove(&cookie);
        ctx.stats.tests_failed.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    true
}

/// A control connection whose parameters did not arrive whole: when they arrived and do not
/// decode, the session queued iperf3's error for them (see
/// [`wirespeed_protocol::server_error::params_errno`]); send it and log the refusal as one
/// line. A close or a timeout before the parameters is only counted.
fn unreadable_params(ctx: &Ctx, mut p: Pending, log: &RefusalLog) {
    ctx.stats
        .connections_dropped
        .fetch_add(1, Ordering::Relaxed);
    if let Stage::Params { sess, .. } = &mut p.stage {
        let answer = sess.take_transmit();
        if let Some(ServerEvent::Failed(wirespeed_protocol::Failure::Protocol { error, .. })) =
            sess.poll_event()
        {
            if !answer.is_empty() {
                ctx.stats.count_refusal(super::RefusalReason::Other);
                let _ = send_now(&mut p.stream, &answer);
                log.log(
                    ctx,
                    p.peer.ip(),
                    &format!("unreadable test parameters: {error}"),
                );
            }
        }
    }
    forget(ctx, &p);
}

fn refuse(
    ctx: &Ctx,
    stream: &mut TcpStream,
    sess: &mut ServerSession,
    e: &AdmissionError,
    peer: SocketAddr,
    log: &RefusalLog,
) {
    ctx.stats.count_refusal(e.reason());
    sess.refuse(&e.decline(sess.peer_is_wirespeed()));
    let _ = send_now(stream, &sess.take_transmit());
    log.log(ctx, peer.ip(), &e.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_greediest_addresss_oldest_connection_gives_way() {
        let a = PeerKey::of("192.0.2.1".parse().unwrap());
        let b = PeerKey::of("192.0.2.2".parse().unwrap());
        let c = PeerKey::of("192.0.2.3".parse().unwrap());
        // b holds three (oldest at seq 4), a two, c one
        let list = [(a, 1), (b, 5), (b, 4), (c, 2), (a, 3), (b, 9)];
        assert_eq!(victim(&list), Some(2));
        // nobody holds two: nobody gives way
        assert_eq!(victim(&[(a, 1), (b, 2), (c, 3)]), None);
        assert_eq!(victim(&[]), None);
    }
}
