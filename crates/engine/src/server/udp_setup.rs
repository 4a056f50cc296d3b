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
//!
//! A wirespeed client puts the test's token (its cookie) after each word and says so in its
//! parameters (`udp_token`): its test takes only words that carry its token, so a word sprayed
//! from another port of the same address (another user of a shared host, a NAT) cannot take
//! the stream or receive a `-R` test's data. A word with a token goes to the test with that
//! token before any test of an iperf3 client (which carry none; the same address is all there
//! is to go on, as in iperf3). A stream once attached is never attached again: the test's own
//! socket is connected to it, and its datagrams no longer reach the setup socket.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wirespeed_protocol::udp::StreamToken;

/// Per address, the tests waiting for words: test id, the token its words must carry (a
/// wirespeed client's test), where to send the word's source.
type Waiters =
    Arc<Mutex<HashMap<IpAddr, VecDeque<(u64, Option<StreamToken>, Sender<SocketAddr>)>>>>;

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
            q.retain(|(id, _, _)| *id != self.id);
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
                    let Ok(token) = wirespeed_protocol::udp::parse_connect(&buf[..n]) else {
                        continue; // a stray datagram
                    };
                    let ip = crate::net::canonical_ip(from.ip());
                    let mut w = waiting.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(q) = w.get_mut(&ip) {
                        if let Some(i) = pick(q, token.as_ref()) {
                            if q[i].2.send(from).is_err() {
                                q.remove(i);
                            }
                        }
                        if q.is_empty() {
                            w.remove(&ip);
                        }
                    }
                }
            })
            .ok()
    }

    /// Queue test `id` for the words from `ip` (carrying `token`, when its client sends one).
    pub(super) fn wait(
        &self,
        ip: IpAddr,
        id: u64,
        token: Option<StreamToken>,
    ) -> Result<Waiting, String> {
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
            .push_back((id, token, tx));
        Ok(Waiting {
            rx,
            ip,
            id,
            waiting: Arc::clone(&self.waiting),
        })
    }
}

/// Which waiting test a word (with `token`, or none) goes to: the test with that token; else
/// the first test of an iperf3 client (which asks for no token). A test that asks for a token
/// never takes a word without it, or with another.
fn pick(
    q: &VecDeque<(u64, Option<StreamToken>, Sender<SocketAddr>)>,
    token: Option<&StreamToken>,
) -> Option<usize> {
    token
        .and_then(|t| q.iter().position(|(_, want, _)| want.as_ref() == Some(t)))
        .or_else(|| q.iter().position(|(_, want, _)| want.is_none()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_go_to_the_test_with_their_token() {
        let (tx, _rx) = mpsc::channel();
        let t1 = [b'a'; 36];
        let t2 = [b'b'; 36];
        let only_tokens: VecDeque<_> =
            [(1, Some(t1), tx.clone()), (2, Some(t2), tx.clone())].into();
        assert_eq!(pick(&only_tokens, Some(&t2)), Some(1));
        assert_eq!(pick(&only_tokens, Some(&[b'c'; 36])), None);
        // the hijack: a bare word from another port takes nothing
        assert_eq!(pick(&only_tokens, None), None);
        let mixed: VecDeque<_> = [(1, None, tx.clone()), (2, Some(t2), tx)].into();
        assert_eq!(pick(&mixed, Some(&t2)), Some(1));
        assert_eq!(pick(&mixed, None), Some(0));
    }
}
