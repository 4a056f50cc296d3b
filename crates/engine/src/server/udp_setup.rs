//! UDP stream setup without a server-wide lock. A UDP stream starts with a 4-byte word the
//! client sends to the server's port; it carries no cookie. The server keeps one unconnected
//! UDP socket on its port for its whole life, and one thread reads the words from it and
//! hands each to the test that is waiting for UDP streams from that address (the first one to
//! have asked, when one address has two tests setting up at once). The test then connects a
//! socket of its own to the client's address and port and answers from it; datagrams of that
//! 4-tuple go to the connected socket from then on.
//!
//! A peer that never sends its word therefore holds only its own test, until that test's
//! stream timeout; tests from other addresses set up their streams meanwhile.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Waiters = Arc<Mutex<HashMap<IpAddr, VecDeque<(u64, Sender<SocketAddr>)>>>>;

pub(super) struct UdpSetup {
    socket: Result<Arc<UdpSocket>, String>,
    waiting: Waiters,
}

/// A test's place in the queue for its address; leaves it when dropped.
pub(super) struct Waiting {
    pub rx: Receiver<SocketAddr>,
    ip: IpAddr,
    id: u64,
    waiting: Waiters,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(q) = w.get_mut(&self.ip) {
            q.retain(|(id, _)| *id != self.id);
            if q.is_empty() {
                w.remove(&self.ip);
            }
        }
    }
}

impl UdpSetup {
    /// Bind the server's UDP socket on the TCP listener's address and port.
    pub(super) fn bind(addr: SocketAddr) -> UdpSetup {
        UdpSetup {
            socket: super::bind_udp(addr, None)
                .map(Arc::new)
                .map_err(|e| e.to_string()),
            waiting: Arc::default(),
        }
    }

    /// The thread that hands out the words; it ends when either flag is set.
    pub(super) fn spawn(
        &self,
        stop: Arc<AtomicBool>,
        done: Arc<AtomicBool>,
    ) -> Option<std::thread::JoinHandle<()>> {
        let sock = Arc::clone(self.socket.as_ref().ok()?);
        let waiting = Arc::clone(&self.waiting);
        std::thread::Builder::new()
            .name("ws-udp-setup".into())
            .spawn(move || {
                let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
                let mut buf = [0u8; 64];
                while !stop.load(Ordering::Acquire) && !done.load(Ordering::Acquire) {
                    let Ok((n, from)) = sock.recv_from(&mut buf) else {
                        continue;
                    };
                    if wirespeed_protocol::udp::check_connect_msg(&buf[..n]).is_err() {
                        continue; // a stray datagram
                    }
                    let ip = crate::net::canonical_ip(from.ip());
                    let mut w = waiting.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(q) = w.get_mut(&ip) {
                        while let Some((_, tx)) = q.front() {
                            if tx.send(from).is_ok() {
                                break;
                            }
                            q.pop_front();
                        }
                        if q.is_empty() {
                            w.remove(&ip);
                        }
                    }
                }
            })
            .ok()
    }

    /// Queue test `id` for the words from `ip`.
    pub(super) fn wait(&self, ip: IpAddr, id: u64) -> Result<Waiting, String> {
        if let Err(e) = &self.socket {
            return Err(e.clone());
        }
        let ip = crate::net::canonical_ip(ip);
        let (tx, rx) = mpsc::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(ip)
            .or_default()
            .push_back((id, tx));
        Ok(Waiting {
            rx,
            ip,
            id,
            waiting: Arc::clone(&self.waiting),
        })
    }
}
