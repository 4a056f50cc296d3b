//! The data phase of one test on one end: workers started over the connected data sockets,
//! counters sampled at interval ticks, the two directions stopped separately, receivers
//! drained, and the per-stream figures for the results exchange. TCP and UDP streams run on
//! the datapath's TCP and UDP workers behind one interface.
//!
//! End-of-test rule (both ends, any peer): a sender stops, then half-closes its TCP sockets
//! (`shutdown(SHUT_WR)`), so its peer reads to EOF; a receiver keeps reading until every
//! stream hit EOF (bounded by a grace period) — or, when the peer never closes before the
//! results exchange (an iperf3 client, or UDP, which has no EOF), until nothing arrived for a
//! short quiet period. TCP byte totals then agree exactly between two wirespeed ends, and UDP
//! datagrams still in flight at the end are counted, not lost.

use std::net::{Shutdown, TcpStream, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirespeed_datapath::udp::{
    spawn_udp_worker, UdpCounters, UdpRecvPath, UdpSendPath, UdpSnapshot, UdpStreamSpec,
    UdpWorkerHandle, UdpWorkerReport, UdpWorkerSpec,
};
use wirespeed_datapath::{
    self as dp, spawn_worker, Budget, Control, RecvPath, SendPath, StreamCounters, StreamSpec,
    ThreadWatch, WorkerHandle, WorkerReport, WorkerSpec,
};
use wirespeed_report::builder::{StreamSample, TcpSample, UdpSample};

use wirespeed_host::CpuSet;
use wirespeed_model::observation::Role;

use crate::placement::{self, plan, WorkerPlacement, WorkerPlan};
use crate::EngineError;

/// A connected data socket.
#[derive(Debug)]
pub enum DataSocket {
    Tcp(TcpStream),
    /// Connected to the peer; the 4-byte handshake is done.
    Udp(UdpSocket),
}

impl DataSocket {
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSocket::Tcp(s) => s.local_addr(),
            DataSocket::Udp(s) => s.local_addr(),
        }
    }

    pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSocket::Tcp(s) => s.peer_addr(),
            DataSocket::Udp(s) => s.peer_addr(),
        }
    }
}

impl std::os::fd::AsFd for DataSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            DataSocket::Tcp(s) => s.as_fd(),
            DataSocket::Udp(s) => s.as_fd(),
        }
    }
}

/// A connected data socket with its iperf3 id and local direction.
#[derive(Debug)]
pub struct DataStream {
    pub id: u32,
    pub socket: DataSocket,
    /// `true` when the local end sends on it.
    pub send: bool,
}

/// UDP settings of a test.
#[derive(Debug, Clone, Copy)]
pub struct UdpConfig {
    /// Datagram payload bytes (`-l`), header included.
    pub datagram_len: usize,
    pub counters_64bit: bool,
    /// Per-stream target, bits/s (`-b`); 0 = unlimited.
    pub rate_bps: u64,
    pub send_path: UdpSendPath,
    pub recv_path: UdpRecvPath,
    /// SO_MAX_PACING_RATE, bytes/s.
    pub fq_rate: Option<u64>,
}

/// How the workers of one end run.
#[derive(Debug, Clone)]
pub struct DataConfig {
    /// TCP block (`-l`).
    pub block_len: usize,
    pub send_path: SendPath,
    pub recv_path: RecvPath,
    pub placement: WorkerPlacement,
    /// `-n` / `-k` shared by the sending streams.
    pub budget: Option<Arc<Budget>>,
    /// `Some` for UDP tests.
    pub udp: Option<UdpConfig>,
}

impl DataConfig {
    /// The workers `n` streams of one direction get ([`plan`], or [`placement::plan_udp`]).
    pub fn plan(&self, n: usize) -> Vec<WorkerPlan> {
        self.plan_at(n, &self.placement)
    }

    fn plan_at(&self, n: usize, placement: &WorkerPlacement) -> Vec<WorkerPlan> {
        match self.udp {
            Some(_) => placement::plan_udp(n, placement),
            None => plan(n, placement),
        }
    }
}

/// A worker of either kind.
enum AnyWorker {
    Tcp(WorkerHandle),
    Udp(UdpWorkerHandle),
}

impl AnyWorker {
    fn is_finished(&self) -> bool {
        match self {
            AnyWorker::Tcp(h) => h.is_finished(),
            AnyWorker::Udp(h) => h.is_finished(),
        }
    }

    fn wait_finished(&self) {
        match self {
            AnyWorker::Tcp(h) => h.wait_finished(),
            AnyWorker::Udp(h) => h.wait_finished(),
        }
    }

    fn wait_finished_until(&self, deadline: Instant) -> bool {
        match self {
            AnyWorker::Tcp(h) => h.wait_finished_until(deadline),
            AnyWorker::Udp(h) => h.wait_finished_until(deadline),
        }
    }

    fn watch(&self) -> ThreadWatch {
        match self {
            AnyWorker::Tcp(h) => h.watch(),
            AnyWorker::Udp(h) => h.watch(),
        }
    }

    fn tid(&self) -> u32 {
        match self {
            AnyWorker::Tcp(h) => h.tid(),
            AnyWorker::Udp(h) => h.tid(),
        }
    }

    /// Stream `id`'s socket while this worker runs it.
    fn stream_fd(&self, id: u32) -> Option<BorrowedFd<'_>> {
        match self {
            AnyWorker::Tcp(h) => h.stream_fd(id),
            AnyWorker::Udp(h) => h.stream_fd(id),
        }
    }
}

#[derive(Clone)]
enum AnyCounter {
    Tcp(Arc<StreamCounters>),
    Udp(Arc<UdpCounters>),
}

impl AnyCounter {
    fn bytes(&self) -> u64 {
        match self {
            AnyCounter::Tcp(c) => c.bytes(),
            AnyCounter::Udp(c) => c.snapshot().bytes,
        }
    }
    fn blocks(&self) -> u64 {
        match self {
            AnyCounter::Tcp(c) => c.blocks(),
            AnyCounter::Udp(c) => c.snapshot().packets,
        }
    }
    fn udp(&self) -> Option<UdpSnapshot> {
        match self {
            AnyCounter::Tcp(_) => None,
            AnyCounter::Udp(c) => Some(c.snapshot()),
        }
    }
}

/// What one worker did, whatever its kind (for the report and the protocol extension).
#[derive(Debug, Clone, Default)]
pub struct WorkerSummary {
    pub cpu_requested: Option<u32>,
    pub cpus_seen: CpuSet,
    pub send_path: Option<&'static str>,
    pub recv_path: Option<&'static str>,
    pub fallbacks: Vec<String>,
    pub streams: Vec<u32>,
    pub cpu_user: Duration,
    pub cpu_system: Duration,
    /// Zero-copy receive: bytes mapped and copied (TCP receivers on that path only).
    pub rx_zerocopy: Option<wirespeed_model::RxZerocopy>,
    /// How a TCP worker was woken (`None` for UDP workers).
    pub wake: Option<dp::Wake>,
    /// Its thread's kernel id.
    pub tid: Option<u32>,
    /// Pinned by the pairing rule over loopback ([`WorkerPlacement::Paired`]).
    pub paired: bool,
}

impl From<&WorkerReport> for WorkerSummary {
    fn from(r: &WorkerReport) -> WorkerSummary {
        WorkerSummary {
            cpu_requested: r.cpu_requested,
            cpus_seen: r.cpus_seen.clone(),
            send_path: r.send_path.map(SendPath::as_str),
            recv_path: r.recv_path.map(RecvPath::as_str),
            fallbacks: r.fallbacks.clone(),
            streams: r.streams.iter().map(|s| s.id).collect(),
            cpu_user: r.cpu_user,
            cpu_system: r.cpu_system,
            rx_zerocopy: r.rx_zerocopy.map(|z| wirespeed_model::RxZerocopy {
                mapped_bytes: z.mapped,
                copied_bytes: z.copied,
            }),
            wake: Some(r.wake),
            tid: None,
            paired: false,
        }
    }
}

impl From<&UdpWorkerReport> for WorkerSummary {
    fn from(r: &UdpWorkerReport) -> WorkerSummary {
        WorkerSummary {
            cpu_requested: r.cpu_requested,
            cpus_seen: r.cpus_seen.clone(),
            send_path: r.send_path.map(UdpSendPath::as_str),
            recv_path: r.recv_path.map(UdpRecvPath::as_str),
            fallbacks: r.fallbacks.clone(),
            streams: r.streams.iter().map(|s| s.id).collect(),
            cpu_user: r.cpu_user,
            cpu_system: r.cpu_system,
            rx_zerocopy: None,
            wake: None,
            tid: None,
            paired: false,
        }
    }
}

struct StreamInfo {
    id: u32,
    send: bool,
    counter: AnyCounter,
    /// Counters when the omit period ended.
    omit_bytes: u64,
    omit_retrans: u64,
    omit_udp: UdpSnapshot,
    /// Last TCP_INFO read (TCP senders).
    last_tcp: Option<TcpSample>,
    congestion: Option<String>,
    /// A receiving stream's counters when its count was closed ([`DataPhase::close_count`]):
    /// what arrives later is still read, never counted.
    closed: Option<Closed>,
}

/// A stream's counters at the moment its count closed.
#[derive(Debug, Clone, Copy)]
struct Closed {
    bytes: u64,
    blocks: u64,
    udp: Option<UdpSnapshot>,
}

impl StreamInfo {
    /// Bytes counted: the counter's, or where the count closed.
    fn bytes(&self) -> u64 {
        self.closed
            .map_or_else(|| self.counter.bytes(), |c| c.bytes)
    }
    fn blocks(&self) -> u64 {
        self.closed
            .map_or_else(|| self.counter.blocks(), |c| c.blocks)
    }
    fn udp(&self) -> Option<UdpSnapshot> {
        self.closed.map_or_else(|| self.counter.udp(), |c| c.udp)
    }
}

/// One stream's figures after the omit period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamTotal {
    pub id: u32,
    pub send: bool,
    pub bytes: u64,
    /// TCP senders.
    pub retransmits: Option<u64>,
    /// UDP: sender: datagrams sent; receiver: datagrams expected (highest sequence).
    pub packets: Option<u64>,
    /// UDP receivers.
    pub lost: Option<u64>,
    pub out_of_order: Option<u64>,
    pub jitter_ms: Option<f64>,
}

/// How the receivers finish: the test-run core's rule ([`wirespeed_run::Drain`]).
pub use wirespeed_run::Drain;

/// The running data phase.
pub struct DataPhase {
    udp: bool,
    streams: Vec<StreamInfo>,
    send_workers: Vec<AnyWorker>,
    recv_workers: Vec<AnyWorker>,
    /// Every worker's thread (its id, where it runs now), in the order they started.
    threads: Vec<ThreadWatch>,
    send_ctl: Arc<Control>,
    recv_ctl: Arc<Control>,
    summaries: Vec<WorkerSummary>,
    /// The workers were pinned by the pairing rule ([`WorkerPlacement::Paired`]).
    paired: bool,
    /// The streams' sockets once their workers ended (stream id, socket), until `close`.
    sockets: Vec<(u32, OwnedFd)>,
    senders_stopped: bool,
    receivers_stopped: bool,
}

fn tcp_sample(fd: BorrowedFd<'_>) -> Option<(TcpSample, Option<String>)> {
    let info = dp::tcp::tcp_info(fd).ok()?;
    Some((
        TcpSample {
            retransmits_total: u64::from(info.retransmits_total),
            snd_cwnd: info.snd_cwnd_bytes,
            snd_wnd: info.snd_wnd.map(u64::from),
            rtt_us: u64::from(info.rtt_us),
            rttvar_us: u64::from(info.rttvar_us),
            pmtu: u64::from(info.pmtu),
            reorder: info.reord_seen.map(u64::from),
        },
        info.congestion,
    ))
}

fn host_error(e: dp::DatapathError) -> EngineError {
    match e {
        dp::DatapathError::CpuNotAllowed { .. } | dp::DatapathError::Pin { .. } => {
            EngineError::Host(e.to_string())
        }
        other => EngineError::Host(format!("starting a data worker: {other}")),
    }
}

impl DataPhase {
    /// Start the workers (sending and receiving streams on separate workers).
    pub fn start(streams: Vec<DataStream>, cfg: &DataConfig) -> Result<DataPhase, EngineError> {
        let (send, recv): (Vec<DataStream>, Vec<DataStream>) =
            streams.into_iter().partition(|s| s.send);
        let send_ctl = Arc::new(Control::new());
        let recv_ctl = Arc::new(Control::new());
        let mut phase = DataPhase {
            udp: cfg.udp.is_some(),
            streams: Vec::new(),
            send_workers: Vec::new(),
            recv_workers: Vec::new(),
            threads: Vec::new(),
            send_ctl: Arc::clone(&send_ctl),
            recv_ctl: Arc::clone(&recv_ctl),
            summaries: Vec::new(),
            paired: false,
            sockets: Vec::new(),
            senders_stopped: false,
            receivers_stopped: false,
        };
        let loopback = recv.iter().chain(&send).all(|s| match &s.socket {
            DataSocket::Tcp(t) => matches!(
                (t.local_addr(), t.peer_addr()),
                (Ok(l), Ok(p)) if placement::over_loopback(l.ip(), p.ip())
            ),
            DataSocket::Udp(_) => false,
        });
        let place = if loopback {
            cfg.placement.clone()
        } else {
            cfg.placement.clone().off_loopback()
        };
        phase.paired = matches!(place, WorkerPlacement::Paired(_));
        let recv_plans = cfg.plan_at(recv.len(), &place);
        let send_plans = cfg.plan_at(send.len(), &place);
        let wake = placement::wake(
            &place,
            &[recv_plans.as_slice(), send_plans.as_slice()].concat(),
            loopback,
        );
        for ((group, is_send), plans) in [(recv, false), (send, true)]
            .into_iter()
            .zip([recv_plans, send_plans])
        {
            let mut slots: Vec<Option<DataStream>> = group.into_iter().map(Some).collect();
            let ctl = if is_send { &send_ctl } else { &recv_ctl };
            let direction = if is_send {
                dp::Direction::Send
            } else {
                dp::Direction::Recv
            };
            for wp in plans {
                let mine: Vec<DataStream> =
                    wp.streams.iter().filter_map(|&i| slots[i].take()).collect();
                let started = match cfg.udp {
                    None => {
                        let specs = mine
                            .into_iter()
                            .filter_map(|s| match s.socket {
                                DataSocket::Tcp(socket) => Some(StreamSpec {
                                    id: s.id,
                                    socket,
                                    direction,
                                }),
                                DataSocket::Udp(_) => None,
                            })
                            .collect();
                        let spec = WorkerSpec {
                            cpu: wp.cpu,
                            streams: specs,
                            block_len: cfg.block_len,
                            send_path: cfg.send_path,
                            recv_path: cfg.recv_path,
                            budget: if is_send { cfg.budget.clone() } else { None },
                            wake,
                        };
                        spawn_worker(spec, Arc::clone(ctl)).map(|h| {
                            let ctrs: Vec<(u32, AnyCounter)> = h
                                .counters()
                                .into_iter()
                                .map(|(id, c)| (id, AnyCounter::Tcp(c)))
                                .collect();
                            (AnyWorker::Tcp(h), ctrs)
                        })
                    }
                    Some(u) => {
                        let specs = mine
                            .into_iter()
                            .filter_map(|s| match s.socket {
                                DataSocket::Udp(socket) => Some(UdpStreamSpec {
                                    id: s.id,
                                    socket,
                                    direction,
                                    rate_bps: u.rate_bps,
                                }),
                                DataSocket::Tcp(_) => None,
                            })
                            .collect();
                        let spec = UdpWorkerSpec {
                            cpu: wp.cpu,
                            streams: specs,
                            datagram_len: u.datagram_len,
                            counters_64bit: u.counters_64bit,
                            send_path: u.send_path,
                            recv_path: u.recv_path,
                            batch: 0,
                            budget: if is_send { cfg.budget.clone() } else { None },
                            fq_rate: if is_send { u.fq_rate } else { None },
                        };
                        spawn_udp_worker(spec, Arc::clone(ctl)).map(|h| {
                            let ctrs: Vec<(u32, AnyCounter)> = h
                                .counters()
                                .into_iter()
                                .map(|(id, c)| (id, AnyCounter::Udp(c)))
                                .collect();
                            (AnyWorker::Udp(h), ctrs)
                        })
                    }
                };
                let (w, ctrs) = match started {
                    Ok(x) => x,
                    Err(e) => {
                        phase.abort();
                        return Err(host_error(e));
                    }
                };
                for (id, counter) in ctrs {
                    phase.streams.push(StreamInfo {
                        id,
                        send: is_send,
                        counter,
                        omit_bytes: 0,
                        omit_retrans: 0,
                        omit_udp: UdpSnapshot::default(),
                        last_tcp: None,
                        congestion: None,
                        closed: None,
                    });
                }
                phase.threads.push(ThreadWatch {
                    role: Some(if is_send {
                        Role::Sender
                    } else {
                        Role::Receiver
                    }),
                    ..w.watch()
                });
                if is_send {
                    phase.send_workers.push(w);
                } else {
                    phase.recv_workers.push(w);
                }
            }
        }
        phase.streams.sort_by_key(|s| s.id);
        Ok(phase)
    }

    fn join(&mut self, w: AnyWorker, shutdown: bool) {
        let tid = Some(w.tid());
        match w {
            AnyWorker::Tcp(h) => {
                if let Ok(r) = h.join() {
                    self.summaries.push(WorkerSummary {
                        tid,
                        paired: self.paired,
                        ..WorkerSummary::from(&r)
                    });
                    for (id, sock) in r.sockets {
                        if shutdown {
                            if let Some(s) = self.streams.iter_mut().find(|s| s.id == id) {
                                if let Some((t, cc)) = tcp_sample(sock.as_fd()) {
                                    s.last_tcp = Some(t);
                                    if cc.is_some() {
                                        s.congestion = cc;
                                    }
                                }
                            }
                            let _ = sock.shutdown(Shutdown::Write);
                        } else if let Some(s) = self
                            .streams
                            .iter_mut()
                            .find(|s| s.id == id && s.congestion.is_none())
                        {
                            // A receiving stream: its algorithm is the receiver's
                            // `congestion_used` (iperf3's receiver_tcp_congestion).
                            s.congestion = tcp_sample(sock.as_fd()).and_then(|(_, cc)| cc);
                        }
                        self.sockets.push((id, OwnedFd::from(sock)));
                    }
                }
            }
            AnyWorker::Udp(h) => {
                if let Ok(r) = h.join() {
                    self.summaries.push(WorkerSummary {
                        tid,
                        ..WorkerSummary::from(&r)
                    });
                    for (id, sock) in r.sockets {
                        self.sockets.push((id, OwnedFd::from(sock)));
                    }
                }
            }
        }
    }

    /// Stop everything now (error paths).
    pub fn abort(&mut self) {
        self.send_ctl.stop();
        self.recv_ctl.stop();
        let mut all = std::mem::take(&mut self.send_workers);
        all.append(&mut self.recv_workers);
        for w in all {
            self.join(w, false);
        }
        self.senders_stopped = true;
        self.receivers_stopped = true;
    }

    /// Stream `id`'s socket: its worker's while the worker runs, this phase's after (until
    /// `close`).
    fn socket(&self, id: u32) -> Option<BorrowedFd<'_>> {
        if let Some((_, fd)) = self.sockets.iter().find(|(i, _)| *i == id) {
            return Some(fd.as_fd());
        }
        self.send_workers
            .iter()
            .chain(&self.recv_workers)
            .find_map(|w| w.stream_fd(id))
    }

    /// Cumulative counters (and TCP_INFO of TCP sending streams, if `tcp`) for the builder;
    /// with `omit_end`, this very reading is also the end of the omit period (a second read of
    /// the counters would count a block that arrived in between in neither the omitted interval
    /// nor the totals — the results message and the report would differ by it).
    pub fn samples(&mut self, tcp: bool, omit_end: bool) -> Vec<StreamSample> {
        let read_tcp = tcp && !self.senders_stopped && !self.udp;
        let fresh: Vec<_> = self
            .streams
            .iter()
            .map(|s| {
                (read_tcp && s.send)
                    .then(|| self.socket(s.id).and_then(tcp_sample))
                    .flatten()
            })
            .collect();
        let mut out = Vec::with_capacity(self.streams.len());
        for (s, fresh) in self.streams.iter_mut().zip(fresh) {
            if let Some((t, cc)) = fresh {
                s.last_tcp = Some(t);
                if cc.is_some() {
                    s.congestion = cc;
                }
            }
            let bytes = s.bytes();
            let snapshot = s.udp();
            if omit_end {
                s.omit_bytes = bytes;
                s.omit_retrans = s.last_tcp.map_or(0, |t| t.retransmits_total);
                s.omit_udp = snapshot.unwrap_or_default();
            }
            let udp = snapshot.map(|u| {
                if s.send {
                    UdpSample {
                        packets: i64::try_from(u.packets).unwrap_or(i64::MAX),
                        ..UdpSample::default()
                    }
                } else {
                    UdpSample {
                        packets: i64::try_from(u.expected).unwrap_or(i64::MAX),
                        lost: i64::try_from(u.lost).unwrap_or(i64::MAX),
                        out_of_order: i64::try_from(u.out_of_order).unwrap_or(i64::MAX),
                        jitter_ms: u.jitter_ms,
                    }
                }
            });
            out.push(StreamSample {
                id: s.id,
                bytes,
                tcp: if s.send { s.last_tcp } else { None },
                udp,
            });
        }
        out
    }

    /// `TCP_INFO` of every sending stream whose socket is still open (for the observation's
    /// busy / window-limited / send-buffer-limited times).
    pub fn sender_tcp_infos(&self) -> Vec<dp::tcp::TcpInfo> {
        self.streams
            .iter()
            .filter(|s| s.send)
            .filter_map(|s| dp::tcp::tcp_info(self.socket(s.id)?).ok())
            .collect()
    }

    /// Bytes moved after the omit period, in each direction.
    pub fn measured_bytes(&self) -> (u64, u64) {
        let (mut sent, mut recv) = (0u64, 0u64);
        for s in &self.streams {
            let b = s.bytes().saturating_sub(s.omit_bytes);
            if s.send {
                sent += b;
            } else {
                recv += b;
            }
        }
        (sent, recv)
    }

    /// Bytes the receiving streams read so far, counted or not (the drain watches them).
    fn arrived(&self) -> u64 {
        self.streams
            .iter()
            .filter(|s| !s.send)
            .map(|s| s.counter.bytes())
            .sum()
    }

    /// Close the receiving streams' count here, as iperf3's receiver does when `TEST_END`
    /// arrives: the bytes (and UDP datagrams) read by now are the receiver's figures, and what
    /// the drain reads after this is read but not counted. Once; later calls change nothing.
    pub fn close_count(&mut self) {
        for s in self
            .streams
            .iter_mut()
            .filter(|s| !s.send && s.closed.is_none())
        {
            let udp = s.counter.udp();
            s.closed = Some(match udp {
                Some(u) => Closed {
                    bytes: u.bytes,
                    blocks: u.packets,
                    udp,
                },
                None => Closed {
                    bytes: s.counter.bytes(),
                    blocks: s.counter.blocks(),
                    udp: None,
                },
            });
        }
    }

    /// Blocks (TCP) or datagrams (UDP) sent and received.
    pub fn blocks(&self) -> (u64, u64) {
        let (mut sent, mut recv) = (0u64, 0u64);
        for s in &self.streams {
            if s.send {
                sent += s.blocks();
            } else {
                recv += s.blocks();
            }
        }
        (sent, recv)
    }

    pub fn is_udp(&self) -> bool {
        self.udp
    }

    pub fn has_senders(&self) -> bool {
        self.streams.iter().any(|s| s.send)
    }

    pub fn has_receivers(&self) -> bool {
        self.streams.iter().any(|s| !s.send)
    }

    /// Every sending worker ended by itself (budget spent, or errors).
    pub fn senders_finished(&self) -> bool {
        !self.send_workers.is_empty() && self.send_workers.iter().all(AnyWorker::is_finished)
    }

    /// Every receiving worker ended by itself (EOF, or errors).
    pub fn receivers_finished(&self) -> bool {
        self.recv_workers.iter().all(AnyWorker::is_finished)
    }

    /// This end's worker threads (their kernel ids, and where each runs now), in the order they
    /// started: what its observer reads, and nothing else (over `--loopback` both ends' workers
    /// share a process).
    pub fn worker_threads(&self) -> &[ThreadWatch] {
        &self.threads
    }

    /// Stop the senders, read their final TCP_INFO, half-close their TCP sockets.
    pub fn stop_senders(&mut self) {
        self.stop_senders_then(|| {});
    }

    /// Tell the senders to stop without waiting for them ([`DataPhase::stop_senders_then`]
    /// waits and joins them): what they write from here on is still counted.
    pub fn signal_stop_senders(&self) {
        self.send_ctl.stop();
    }

    /// After [`DataPhase::signal_stop_senders`]: wait, up to `within`, until every sender has
    /// ended (each stops within one write, or one [`dp::POLL_INTERVAL`] when its socket takes
    /// nothing), without joining them; whether they all did.
    pub fn wait_senders_ended(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        self.send_workers
            .iter()
            .all(|w| w.wait_finished_until(deadline))
    }

    /// [`DataPhase::stop_senders`], calling `ended` once every sender has ended and before
    /// their threads go (an observer reads their final counters there).
    pub fn stop_senders_then(&mut self, ended: impl FnOnce()) {
        if self.senders_stopped {
            return;
        }
        self.send_ctl.stop();
        self.send_workers.iter().for_each(AnyWorker::wait_finished);
        ended();
        for w in std::mem::take(&mut self.send_workers) {
            self.join(w, true);
        }
        self.senders_stopped = true;
    }

    /// After [`DataPhase::stop_senders`]: wait, up to `within`, until the TCP sending streams
    /// hold nothing unsent or unacknowledged, and return when that was (None: UDP, no
    /// senders, or not within `within`). A paced sender (`-b`) counts bytes when its writes
    /// return, while the kernel still holds up to its TCP_NOTSENT_LOWAT plus a block plus
    /// what is in flight; ending its measured time when that has reached the receiver makes
    /// sender and receiver agree, as iperf3's application pacing does.
    pub fn wait_sent(&self, within: Duration) -> Option<Instant> {
        if self.udp || !self.senders_stopped {
            return None;
        }
        let deadline = Instant::now() + within;
        loop {
            let pending = self
                .streams
                .iter()
                .filter(|s| s.send)
                .filter_map(|s| self.socket(s.id))
                .any(|fd| {
                    dp::tcp::tcp_info(fd)
                        .is_ok_and(|i| i.unacked > 0 || i.notsent_bytes.unwrap_or(0) > 0)
                });
            let now = Instant::now();
            if !pending {
                return Some(now);
            }
            if now >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Finish the receivers as `drain` says (UDP always waits for quiet), then stop them.
    /// Returns when the last byte was seen arriving during the drain (None if none did), so
    /// the wait itself does not count as measured time.
    pub fn finish_receivers(&mut self, drain: Drain) -> Option<Instant> {
        self.finish_receivers_then(drain, || {})
    }

    /// [`DataPhase::finish_receivers`], calling `ended` once every receiver has ended and
    /// before their threads go.
    pub fn finish_receivers_then(&mut self, drain: Drain, ended: impl FnOnce()) -> Option<Instant> {
        if self.receivers_stopped {
            return None;
        }
        let drain = match (self.udp, drain) {
            (true, Drain::UntilEof { within }) => Drain::UntilQuiet {
                quiet: Duration::from_millis(100),
                max: within,
            },
            (_, d) => d,
        };
        let t0 = Instant::now();
        let (quiet, max) = match drain {
            Drain::UntilEof { within } => (None, within),
            Drain::UntilQuiet { quiet, max } => (Some(quiet), max),
        };
        let mut last = self.arrived();
        let mut last_change: Option<Instant> = None;
        while !self.receivers_finished() && t0.elapsed() < max {
            std::thread::sleep(Duration::from_millis(2));
            let now = self.arrived();
            if now != last {
                last = now;
                last_change = Some(Instant::now());
            } else if let Some(q) = quiet {
                if last_change.unwrap_or(t0).elapsed() >= q {
                    break;
                }
            }
        }
        if self.arrived() != last {
            last_change = Some(Instant::now());
        }
        self.recv_ctl.stop();
        self.recv_workers.iter().for_each(AnyWorker::wait_finished);
        ended();
        for w in std::mem::take(&mut self.recv_workers) {
            self.join(w, false);
        }
        self.receivers_stopped = true;
        last_change
    }

    /// Per-stream figures after omit, in stream-id order.
    pub fn stream_totals(&self) -> Vec<StreamTotal> {
        self.streams
            .iter()
            .map(|s| {
                let bytes = s.bytes().saturating_sub(s.omit_bytes);
                let retransmits = if s.send && !self.udp {
                    s.last_tcp
                        .map(|t| t.retransmits_total.saturating_sub(s.omit_retrans))
                } else {
                    None
                };
                let mut t = StreamTotal {
                    id: s.id,
                    send: s.send,
                    bytes,
                    retransmits,
                    packets: None,
                    lost: None,
                    out_of_order: None,
                    jitter_ms: None,
                };
                if let Some(u) = s.udp() {
                    let o = s.omit_udp;
                    if s.send {
                        t.packets = Some(u.packets.saturating_sub(o.packets));
                    } else {
                        t.packets = Some(u.expected.saturating_sub(o.expected));
                        t.lost = Some(u.lost.saturating_sub(o.lost));
                        t.out_of_order = Some(u.out_of_order.saturating_sub(o.out_of_order));
                        t.jitter_ms = Some(u.jitter_ms);
                    }
                }
                t
            })
            .collect()
    }

    /// Datagrams (or blocks) counted before the omit period ended, per stream.
    pub fn omitted_packets(&self, id: u32) -> u64 {
        self.streams.iter().find(|s| s.id == id).map_or(0, |s| {
            if s.send {
                s.omit_udp.packets
            } else {
                s.omit_udp.expected
            }
        })
    }

    /// The congestion algorithm seen on the TCP streams, sending ones first (a receiving
    /// end's is read when its workers are joined).
    pub fn congestion(&self) -> Option<String> {
        self.streams
            .iter()
            .filter(|s| s.send)
            .chain(self.streams.iter().filter(|s| !s.send))
            .find_map(|s| s.congestion.clone())
    }

    /// Workers joined so far (after stop/finish).
    pub fn summaries(&self) -> &[WorkerSummary] {
        &self.summaries
    }

    /// User+system CPU time of all joined workers.
    pub fn worker_cpu(&self) -> (Duration, Duration) {
        self.summaries
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    /// Poll `cond` (a counter) until it holds; a hang bound, not a timing assertion.
    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !cond() {
            assert!(t0.elapsed() < Duration::from_secs(120), "{what}: never");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A data phase receiving one TCP stream on one floating worker, and the socket that sends
    /// into it.
    fn one_receiver() -> (TcpStream, DataPhase) {
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        let tx = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (rx, _) = l.accept().expect("accept");
        let cfg = DataConfig {
            block_len: 64 * 1024,
            send_path: SendPath::Copy,
            recv_path: RecvPath::Copy,
            placement: WorkerPlacement::Float { cpus: 1 },
            budget: None,
            udp: None,
        };
        let d = DataPhase::start(
            vec![DataStream {
                id: 1,
                socket: DataSocket::Tcp(rx),
                send: false,
            }],
            &cfg,
        )
        .expect("data phase");
        (tx, d)
    }

    #[test]
    fn a_closed_count_reads_on_but_counts_what_came_before() {
        let (mut tx, mut d) = one_receiver();
        let before = vec![7u8; 300_000];
        tx.write_all(&before).expect("write");
        wait_for("the first bytes read", || d.measured_bytes().1 == 300_000);
        d.close_count();
        // what arrives after the count closed is read (the drain empties the socket) ...
        tx.write_all(&[9u8; 200_000]).expect("write");
        drop(tx);
        d.finish_receivers(Drain::UntilEof {
            within: Duration::from_secs(120),
        });
        assert_eq!(d.arrived(), 500_000, "everything was read");
        // ... and counted nowhere: totals, samples, progress
        assert_eq!(d.measured_bytes().1, 300_000);
        assert_eq!(d.stream_totals()[0].bytes, 300_000);
        assert_eq!(d.samples(false, false)[0].bytes, 300_000);
        // once: a second close changes nothing
        d.close_count();
        assert_eq!(d.measured_bytes().1, 300_000);
        d.close();
    }

    /// The data phase names each worker thread to its observer with the cell the worker notes
    /// its CPU in: one cell per worker, the worker's own id, and a CPU this process may run on
    /// once the worker has moved bytes.
    #[test]
    fn each_worker_is_named_with_where_it_runs() {
        let (mut tx, mut d) = one_receiver();
        let watches = d.worker_threads().to_vec();
        assert_eq!(watches.len(), 1, "one worker");
        let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        assert!(
            watches[0].tid != 0 && watches[0].tid != me,
            "the worker's own id"
        );
        tx.write_all(&[7u8; 100_000]).expect("write");
        wait_for("the bytes read", || d.measured_bytes().1 == 100_000);
        let allowed = dp::cpu::allowed_cpus().expect("affinity");
        let cpu = watches[0].cpu.get().expect("the worker noted a CPU");
        assert!(allowed.contains(cpu), "CPU {cpu} of {allowed}");
        drop(tx);
        d.finish_receivers(Drain::UntilEof {
            within: Duration::from_secs(120),
        });
        d.close();
    }
}
