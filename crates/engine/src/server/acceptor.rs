//! The acceptor: one thread owns the listening socket and every connection whose first 37
//! bytes (the cookie) have not arrived yet. It `poll`s them all with per-connection deadlines,
//! so silent or slow peers cost a slot, never a thread, and are dropped when their time is up.
//! A complete cookie either matches a test that is waiting for its data connections (the
//! connection goes to that test, tagged with its accept order), or starts a new test on its
//! own thread ([`super::test`]). A cookie that matches nothing expecting streams, or a
//! duplicate, gets `ACCESS_DENIED` and a close, as iperf3 does.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirespeed_protocol::{Cookie, State, COOKIE_LEN};

use super::test::serve_test;
use super::{Ctx, Incoming};
use crate::EngineError;

struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    seq: u64,
    buf: [u8; COOKIE_LEN],
    got: usize,
    deadline: Instant,
}

fn deny_and_close(mut s: TcpStream) {
    let _ = s.set_nonblocking(true);
    let _ = s.write(&[State::AccessDenied.to_byte()]);
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
    let cfg = &ctx.cfg;
    loop {
        if stop.load(Ordering::Acquire) {
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
            }
            alive
        });
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(pending.len() + 1);
        fds.push(libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        for p in &pending {
            fds.push(libc::pollfd {
                fd: p.stream.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let next_deadline = pending.iter().map(|p| p.deadline).min();
        let timeout_ms = next_deadline
            .map_or(100, |d| {
                d.saturating_duration_since(now).as_millis().min(100) as i32
            })
            .max(1);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the whole call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(EngineError::io("poll on the listening socket", e));
        }
        // Pending connections first, in accept order.
        let mut finished: Vec<usize> = Vec::new();
        for (i, p) in pending.iter_mut().enumerate() {
            let re = fds[i + 1].revents;
            if re == 0 {
                continue;
            }
            match p.stream.read(&mut p.buf[p.got..]) {
                Ok(0) => {
                    ctx.stats
                        .connections_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    finished.push(i);
                }
                Ok(k) => {
                    p.got += k;
                    if p.got == COOKIE_LEN {
                        finished.push(i);
                    }
                }
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    ctx.stats
                        .connections_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    finished.push(i);
                }
            }
        }
        for &i in finished.iter().rev() {
            let p = pending.remove(i);
            if p.got < COOKIE_LEN {
                continue;
            }
            let cookie = match Cookie::parse(&p.buf) {
                Ok(c) => c,
                Err(_) => {
                    ctx.stats
                        .connections_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    deny_and_close(p.stream);
                    continue;
                }
            };
            let _ = p.stream.set_nonblocking(false);
            let mut tests = ctx.registry.lock();
            match tests.get(&cookie) {
                Some(Some(tx)) => {
                    // A data connection of a test that is collecting its streams.
                    if tx
                        .send(Incoming {
                            seq: p.seq,
                            stream: p.stream,
                        })
                        .is_err()
                    {
                        tests.remove(&cookie);
                    }
                }
                Some(None) => {
                    // A test with this cookie exists but takes no streams now (or a duplicate
                    // control connection).
                    drop(tests);
                    deny_and_close(p.stream);
                }
                None => {
                    let threads = ctx.registry.threads.load(Ordering::Acquire);
                    if threads >= cfg.limits.max_tests * 2 + 16 {
                        drop(tests);
                        ctx.stats.tests_refused.fetch_add(1, Ordering::Relaxed);
                        deny_and_close(p.stream);
                        continue;
                    }
                    tests.insert(cookie, None);
                    drop(tests);
                    tests_started += 1;
                    ctx.registry.threads.fetch_add(1, Ordering::AcqRel);
                    let ctx2 = Arc::clone(ctx);
                    let number = tests_started;
                    let spawned = std::thread::Builder::new()
                        .name(format!("ws-test-{number}"))
                        .spawn(move || {
                            serve_test(p.stream, p.peer, cookie, number, &ctx2);
                            ctx2.registry.lock().remove(&cookie);
                            ctx2.registry.threads.fetch_sub(1, Ordering::AcqRel);
                            if let Ok(tx) = ctx2.done_tx.lock() {
                                let _ = tx.send(());
                            }
                        });
                    if spawned.is_err() {
                        ctx.registry.lock().remove(&cookie);
                        ctx.registry.threads.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            }
        }
        // New connections.
        if fds[0].revents != 0 {
            loop {
                match listener.accept() {
                    Ok((s, peer)) => {
                        seq += 1;
                        if pending.len() >= cfg.limits.max_pending {
                            ctx.stats
                                .connections_dropped
                                .fetch_add(1, Ordering::Relaxed);
                            deny_and_close(s);
                            continue;
                        }
                        if s.set_nonblocking(true).is_err() {
                            continue;
                        }
                        let _ = cfg.extras.keepalive(&s);
                        pending.push(Pending {
                            stream: s,
                            peer,
                            seq,
                            buf: [0; COOKIE_LEN],
                            got: 0,
                            deadline: Instant::now() + cfg.cookie_timeout,
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
