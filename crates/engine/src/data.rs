//! The data phase of one test on one end: workers started over the connected data sockets,
//! counters sampled at interval ticks, the two directions stopped separately, receivers
//! drained, and the per-stream figures for the results exchange.
//!
//! End-of-test rule (both ends, any peer): a sender stops, then half-closes its sockets
//! (`shutdown(SHUT_WR)`), so its peer reads to EOF; a receiver keeps reading until every
//! stream hit EOF (bounded by a grace period) — or, when the peer never closes before the
//! results exchange (an iperf3 client), until nothing arrived for a short quiet period.
//! Byte totals then agree exactly between two wirespeed ends.

use std::net::{Shutdown, TcpStream};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirespeed_datapath::{
    self as dp, spawn_worker, Budget, Control, RecvPath, SendPath, StreamCounters, StreamSpec,
    WorkerHandle, WorkerReport, WorkerSpec,
};
use wirespeed_report::builder::{StreamSample, TcpSample};

use crate::placement::{plan, Placement};
use crate::EngineError;

/// A connected data socket with its iperf3 id and local direction.
#[derive(Debug)]
pub struct DataStream {
    pub id: u32,
    pub socket: TcpStream,
    /// `true` when the local end sends on it.
    pub send: bool,
}

/// How the workers of one end run.
#[derive(Debug, Clone)]
pub struct DataConfig {
    pub block_len: usize,
    pub send_path: SendPath,
    pub recv_path: RecvPath,
    pub placement: Placement,
    /// `-n` / `-k` shared by the sending streams.
    pub budget: Option<Arc<Budget>>,
}

#[derive(Debug)]
struct StreamInfo {
    id: u32,
    send: bool,
    counter: Arc<StreamCounters>,
    fd: RawFd,
    /// Bytes and retransmits when the omit period ended.
    omit_bytes: u64,
    omit_retrans: u64,
    /// Last TCP_INFO read (senders).
    last_tcp: Option<TcpSample>,
    congestion: Option<String>,
}

/// How receivers are finished.
#[derive(Debug, Clone, Copy)]
pub enum Drain {
    /// Read until every stream reached EOF, at most until the deadline.
    UntilEof { within: Duration },
    /// Read until nothing arrived for `quiet`, at most `max`.
    UntilQuiet { quiet: Duration, max: Duration },
}

/// The running data phase.
pub struct DataPhase {
    streams: Vec<StreamInfo>,
    send_workers: Vec<WorkerHandle>,
    recv_workers: Vec<WorkerHandle>,
    send_ctl: Arc<Control>,
    recv_ctl: Arc<Control>,
    reports: Vec<WorkerReport>,
    sockets: Vec<(u32, TcpStream)>,
    senders_stopped: bool,
    receivers_stopped: bool,
}

fn tcp_sample(fd: RawFd) -> Option<(TcpSample, Option<String>)> {
    // SAFETY: `fd` belongs to a socket owned by a live worker (or by `sockets` after join);
    // it stays open for the duration of this call.
    let bfd = unsafe { BorrowedFd::borrow_raw(fd) };
    let info = dp::tcp::tcp_info(bfd).ok()?;
    Some((
        TcpSample {
            retransmits_total: u64::from(info.retransmits_total),
            snd_cwnd: info.snd_cwnd_bytes,
            snd_wnd: info.snd_wnd.map(u64::from),
            rtt_us: u64::from(info.rtt_us),
            rttvar_us: u64::from(info.rttvar_us),
            pmtu: u64::from(info.pmtu),
            reorder: None,
        },
        info.congestion,
    ))
}

impl DataPhase {
    /// Start the workers (sending and receiving streams on separate workers).
    pub fn start(streams: Vec<DataStream>, cfg: &DataConfig) -> Result<DataPhase, EngineError> {
        let (send, recv): (Vec<DataStream>, Vec<DataStream>) =
            streams.into_iter().partition(|s| s.send);
        let send_ctl = Arc::new(Control::new());
        let recv_ctl = Arc::new(Control::new());
        let mut phase = DataPhase {
            streams: Vec::new(),
            send_workers: Vec::new(),
            recv_workers: Vec::new(),
            send_ctl: Arc::clone(&send_ctl),
            recv_ctl: Arc::clone(&recv_ctl),
            reports: Vec::new(),
            sockets: Vec::new(),
            senders_stopped: false,
            receivers_stopped: false,
        };
        for (group, is_send) in [(recv, false), (send, true)] {
            let plans = plan(group.len(), &cfg.placement);
            let mut slots: Vec<Option<DataStream>> = group.into_iter().map(Some).collect();
            for wp in plans {
                let specs: Vec<StreamSpec> = wp
                    .streams
                    .iter()
                    .filter_map(|&i| slots[i].take())
                    .map(|s| StreamSpec {
                        id: s.id,
                        socket: s.socket,
                        direction: if is_send {
                            dp::Direction::Send
                        } else {
                            dp::Direction::Recv
                        },
                    })
                    .collect();
                let spec = WorkerSpec {
                    cpu: wp.cpu,
                    streams: specs,
                    block_len: cfg.block_len,
                    send_path: cfg.send_path,
                    recv_path: cfg.recv_path,
                    budget: if is_send { cfg.budget.clone() } else { None },
                };
                let ctl = if is_send { &send_ctl } else { &recv_ctl };
                let h = match spawn_worker(spec, Arc::clone(ctl)) {
                    Ok(h) => h,
                    Err(e) => {
                        phase.abort();
                        return Err(match e {
                            dp::DatapathError::CpuNotAllowed { .. }
                            | dp::DatapathError::Pin { .. } => EngineError::Host(e.to_string()),
                            other => EngineError::Host(format!("starting a data worker: {other}")),
                        });
                    }
                };
                let fds = h.stream_fds();
                for (id, counter) in h.counters() {
                    let fd = fds.iter().find(|(i, _)| *i == id).map_or(-1, |(_, f)| *f);
                    phase.streams.push(StreamInfo {
                        id,
                        send: is_send,
                        counter,
                        fd,
                        omit_bytes: 0,
                        omit_retrans: 0,
                        last_tcp: None,
                        congestion: None,
                    });
                }
                if is_send {
                    phase.send_workers.push(h);
                } else {
                    phase.recv_workers.push(h);
                }
            }
        }
        phase.streams.sort_by_key(|s| s.id);
        Ok(phase)
    }

    /// Stop everything now (error paths).
    pub fn abort(&mut self) {
        self.send_ctl.stop();
        self.recv_ctl.stop();
        let mut all = std::mem::take(&mut self.send_workers);
        all.append(&mut self.recv_workers);
        for h in all {
            if let Ok(r) = h.join() {
                self.collect(r);
            }
        }
        self.senders_stopped = true;
        self.receivers_stopped = true;
    }

    /// Cumulative counters (and TCP_INFO of sending streams, if `tcp`) for the report builder.
    pub fn samples(&mut self, tcp: bool) -> Vec<StreamSample> {
        let read_tcp = tcp && !self.senders_stopped;
        let mut out = Vec::with_capacity(self.streams.len());
        for s in &mut self.streams {
            if read_tcp && s.send && s.fd >= 0 {
                if let Some((t, cc)) = tcp_sample(s.fd) {
                    s.last_tcp = Some(t);
                    if cc.is_some() {
                        s.congestion = cc;
                    }
                }
            }
            out.push(StreamSample {
                id: s.id,
                bytes: s.counter.bytes(),
                tcp: if s.send { s.last_tcp } else { None },
                udp: None,
            });
        }
        out
    }

    /// `TCP_INFO` of every sending stream whose socket is still open (for the observation's
    /// busy / window-limited / send-buffer-limited times).
    pub fn sender_tcp_infos(&self) -> Vec<dp::tcp::TcpInfo> {
        self.streams
            .iter()
            .filter(|s| s.send && s.fd >= 0)
            .filter_map(|s| {
                // SAFETY: `fd` belongs to a socket this phase keeps open until `close`.
                let bfd = unsafe { BorrowedFd::borrow_raw(s.fd) };
                dp::tcp::tcp_info(bfd).ok()
            })
            .collect()
    }

    /// Remember the counters at the end of the omit period.
    pub fn mark_omit_end(&mut self) {
        for s in &mut self.streams {
            s.omit_bytes = s.counter.bytes();
            s.omit_retrans = s.last_tcp.map_or(0, |t| t.retransmits_total);
        }
    }

    /// Bytes moved after the omit period, in each direction.
    pub fn measured_bytes(&self) -> (u64, u64) {
        let (mut sent, mut recv) = (0u64, 0u64);
        for s in &self.streams {
            let b = s.counter.bytes().saturating_sub(s.omit_bytes);
            if s.send {
                sent += b;
            } else {
                recv += b;
            }
        }
        (sent, recv)
    }

    /// Blocks sent and receive calls (for `-k` on the receiving side).
    pub fn blocks(&self) -> (u64, u64) {
        let (mut sent, mut recv) = (0u64, 0u64);
        for s in &self.streams {
            if s.send {
                sent += s.counter.blocks();
            } else {
                recv += s.counter.blocks();
            }
        }
        (sent, recv)
    }

    pub fn has_senders(&self) -> bool {
        self.streams.iter().any(|s| s.send)
    }

    pub fn has_receivers(&self) -> bool {
        self.streams.iter().any(|s| !s.send)
    }

    /// Every sending worker ended by itself (budget spent, or errors).
    pub fn senders_finished(&self) -> bool {
        !self.send_workers.is_empty() && self.send_workers.iter().all(WorkerHandle::is_finished)
    }

    /// Every receiving worker ended by itself (EOF, or errors).
    pub fn receivers_finished(&self) -> bool {
        self.recv_workers.iter().all(WorkerHandle::is_finished)
    }

    /// Stop the senders, read their final TCP_INFO, half-close their sockets.
    pub fn stop_senders(&mut self) {
        if self.senders_stopped {
            return;
        }
        self.send_ctl.stop();
        for h in std::mem::take(&mut self.send_workers) {
            if let Ok(r) = h.join() {
                for (id, sock) in &r.sockets {
                    if let Some(s) = self.streams.iter_mut().find(|s| s.id == *id) {
                        if let Some((t, cc)) = tcp_sample(std::os::fd::AsRawFd::as_raw_fd(sock)) {
                            s.last_tcp = Some(t);
                            if cc.is_some() {
                                s.congestion = cc;
                            }
                        }
                    }
                    let _ = sock.shutdown(Shutdown::Write);
                }
                self.collect(r);
            }
        }
        self.senders_stopped = true;
    }

    /// Finish the receivers as `drain` says, then stop them.
    pub fn finish_receivers(&mut self, drain: Drain) {
        if self.receivers_stopped {
            return;
        }
        let t0 = Instant::now();
        match drain {
            Drain::UntilEof { within } => {
                while !self.receivers_finished() && t0.elapsed() < within {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Drain::UntilQuiet { quiet, max } => {
                let mut last = self.measured_bytes().1;
                let mut last_change = Instant::now();
                while !self.receivers_finished() && t0.elapsed() < max {
                    std::thread::sleep(Duration::from_millis(5));
                    let now = self.measured_bytes().1;
                    if now != last {
                        last = now;
                        last_change = Instant::now();
                    } else if last_change.elapsed() >= quiet {
                        break;
                    }
                }
            }
        }
        self.recv_ctl.stop();
        for h in std::mem::take(&mut self.recv_workers) {
            if let Ok(r) = h.join() {
                self.collect(r);
            }
        }
        self.receivers_stopped = true;
    }

    fn collect(&mut self, mut r: WorkerReport) {
        self.sockets.append(&mut r.sockets);
        self.reports.push(r);
    }

    /// Per-stream figures after omit: (id, sending?, bytes, retransmits).
    pub fn stream_totals(&self) -> Vec<(u32, bool, u64, Option<u64>)> {
        self.streams
            .iter()
            .map(|s| {
                let bytes = s.counter.bytes().saturating_sub(s.omit_bytes);
                let retr = if s.send {
                    s.last_tcp
                        .map(|t| t.retransmits_total.saturating_sub(s.omit_retrans))
                } else {
                    None
                };
                (s.id, s.send, bytes, retr)
            })
            .collect()
    }

    /// The congestion algorithm seen on the sending streams.
    pub fn congestion(&self) -> Option<String> {
        self.streams.iter().find_map(|s| s.congestion.clone())
    }

    /// Worker reports collected so far (after stop/finish).
    pub fn reports(&self) -> &[WorkerReport] {
        &self.reports
    }

    /// User+system CPU time of all joined workers.
    pub fn worker_cpu(&self) -> (Duration, Duration) {
        self.reports
            .iter()
            .fold((Duration::ZERO, Duration::ZERO), |(u, s), r| {
                (u + r.cpu_user, s + r.cpu_system)
            })
    }

    /// Close every socket (end of test).
    pub fn close(&mut self) {
        self.abort();
        self.sockets.clear();
    }
}

impl Drop for DataPhase {
    fn drop(&mut self) {
        self.send_ctl.stop();
        self.recv_ctl.stop();
    }
}
