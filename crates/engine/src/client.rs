//! The client: one test against an iperf3 or wirespeed server.
//!
//! It connects, then runs the one loop around the test-run core ([`crate::drive`]) with what
//! only a client does: it opens the data connections when the server asks (each announces
//! itself with the cookie), stops when interrupted, and says what ended the test in its words;
//! the core decides when the test ends (time, bytes or blocks), the shell exchanges results
//! and builds the report.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use wirespeed_datapath::udp::{UdpRecvPath, UdpSendPath};
use wirespeed_datapath::{self as dp, RecvPath, SendPath};
use wirespeed_protocol::{
    Cookie, Direction, Failure, ParamsExt, TestParams, TestResults, Timeouts, Transport,
};
use wirespeed_report::{HostPort, TestResult};

use crate::assemble::VERSION;
use crate::data::{DataSocket, DataStream};
use crate::drive::{self, Endpoint, Failed, Link, Step};
use crate::measurement::{self, LocalPaths, Whence};
use crate::net::{self, Ctrl, Family};
use crate::observe::TestObserver;
use crate::output::Reporter;
use crate::placement::{self, WorkerPlacement};
use crate::shell::{unix_now, Begin, Peer, Ready, Shell};
pub use crate::stall::{control_stalled, STALL_AFTER, STALL_RETRANSMITS};
use crate::EngineError;
use wirespeed_host::CpuSet;
use wirespeed_run::{Cause, ClientPlan, EndAt, Ending, Limits, TestRun, WatchStop};

pub use crate::measurement::{DEFAULT_TCP_BLOCK, DEFAULT_UDP_BLOCK};

/// Everything a client test needs.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub host: String,
    pub port: u16,
    pub family: Family,
    /// `-B`: local address of all connections.
    pub bind: Option<IpAddr>,
    /// `--cport`: source port of the data connections (stream k uses cport + k).
    pub cport: Option<u16>,
    pub connect_timeout: Option<Duration>,
    /// `-t` seconds (ignored when `bytes` or `blocks` is set).
    pub time: u32,
    /// `-n`.
    pub bytes: Option<u64>,
    /// `-k`.
    pub blocks: Option<u64>,
    /// `-P`: streams per direction.
    pub parallel: u32,
    pub direction: Direction,
    /// `-l`.
    pub block_len: Option<u32>,
    /// `-w`.
    pub window: Option<u32>,
    /// `-M`.
    pub mss: Option<u32>,
    /// `-N`.
    pub nodelay: bool,
    /// `-C`.
    pub congestion: Option<String>,
    /// `-O` seconds.
    pub omit: u32,
    /// `-i`; zero disables interval reports.
    pub interval: Duration,
    /// `-A` first number: all local workers on this CPU.
    pub affinity: Option<u32>,
    /// `-A` second number (iperf3's `server_affinity`).
    pub server_affinity: Option<u32>,
    /// `--cpus`.
    pub cpus: Option<CpuSet>,
    /// `--server-cpus` (wirespeed servers only).
    pub server_cpus: Option<CpuSet>,
    /// Ask a wirespeed server started with `--allow-tune` to move its NIC's queue IRQs to
    /// these CPUs for this test (`--server-irq-cpus`; the sweep's `--irq-cpus` without `-R`).
    /// Needs [`ClientConfig::psk`]: a server takes tune requests only with verified parameters.
    pub server_irq_cpus: Option<CpuSet>,
    /// Local send path (`-Z` / `--zerocopy`).
    pub send_path: SendPath,
    /// `--skip-rx-copy` (applies to whichever end receives).
    pub skip_rx_copy: bool,
    /// `--zerocopy-rx`: whichever end receives maps the data (TCP_ZEROCOPY_RECEIVE) where the
    /// kernel can, copying the rest (a wirespeed server only; an iperf3 server copies).
    pub zerocopy_rx: bool,
    pub title: Option<String>,
    pub extra_data: Option<String>,
    pub get_server_output: bool,
    /// Setup and results timeouts of the control connection.
    pub timeouts: Timeouts,
    /// `-u`.
    pub udp: bool,
    /// `-b`: bits/s per stream (UDP default 1 Mbit/s as iperf3, 0 = unlimited; TCP: paced by
    /// the kernel with SO_MAX_PACING_RATE).
    pub bandwidth: Option<u64>,
    /// `--fq-rate`: bits/s per stream, SO_MAX_PACING_RATE.
    pub fq_rate: Option<u64>,
    /// `--udp-counters-64bit`.
    pub udp_counters_64bit: bool,
    /// Best UDP send path wanted (falls back: GSO, sendmmsg, send).
    pub udp_send_path: UdpSendPath,
    /// Best UDP receive path wanted (falls back: GRO, recvmmsg).
    pub udp_recv_path: UdpRecvPath,
    /// Set (e.g. by a SIGINT handler) to abort the test: the client sends `CLIENT_TERMINATE`
    /// and returns [`EngineError::Interrupted`] with the partial report.
    pub interrupt: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Observe where the work ran at this end (and ask a wirespeed server to do the same);
    /// `None`: no observation.
    pub observe: Option<crate::hooks::ObserveHook>,
    /// iperf3's socket options and peer parameters beyond the test shape (TOS, device,
    /// don't-fragment, keepalive, burst, ...).
    pub extras: crate::Extras,
    /// `--username` + `--rsa-public-key-path`: iperf3's RSA authentication.
    pub auth: Option<wirespeed_protocol::auth::ClientAuth>,
    /// `--psk FILE`: tag the parameters for a wirespeed server started with the same key.
    pub psk: Option<wirespeed_protocol::psk::Psk>,
    /// iperf3's client `--rcv-timeout MS` (default 120 s, as iperf3): when this end receives
    /// (`-R`, `--bidir`), a running test whose streams bring no data for this long ends with
    /// iperf3's `IENOMSG`, "idle timeout for receiving data". `None`: never.
    pub rcv_timeout: Option<Duration>,
    /// `--rate`: the link rate the cost projection is for (bits/s); `None`: a real interface's
    /// speed, when the observation knows one.
    pub rate_bps: Option<f64>,
    /// The command line that ran the test, as given: written under `wirespeed.command`.
    pub command: Vec<String>,
}

/// iperf3's default `--rcv-timeout`: 120 s.
pub const DEFAULT_RCV_TIMEOUT: Duration = Duration::from_secs(120);

/// iperf3's default UDP rate per stream: 1 Mbit/s.
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig {
            host: "127.0.0.1".into(),
            port: 5201,
            family: Family::Any,
            bind: None,
            cport: None,
            connect_timeout: None,
            time: 10,
            bytes: None,
            blocks: None,
            parallel: 1,
            direction: Direction::ClientToServer,
            block_len: None,
            window: None,
            mss: None,
            nodelay: false,
            congestion: None,
            omit: 0,
            interval: Duration::from_secs(1),
            affinity: None,
            server_affinity: None,
            cpus: None,
            server_cpus: None,
            server_irq_cpus: None,
            send_path: SendPath::Copy,
            skip_rx_copy: false,
            zerocopy_rx: false,
            title: None,
            extra_data: None,
            get_server_output: false,
            timeouts: Timeouts::default(),
            udp: false,
            bandwidth: None,
            fq_rate: None,
            udp_counters_64bit: false,
            udp_send_path: UdpSendPath::Gso,
            udp_recv_path: UdpRecvPath::Gro,
            interrupt: None,
            observe: None,
            extras: crate::Extras::default(),
            auth: None,
            psk: None,
            rcv_timeout: Some(DEFAULT_RCV_TIMEOUT),
            rate_bps: None,
            command: Vec::new(),
        }
    }
}

/// Most streams one test may ask for (per direction).
pub const MAX_STREAMS: u32 = 65_536;

impl ClientConfig {
    /// Check values that need no network, including the local CPUs: the one check of a
    /// client's choices (the command line only parses; the server's bounds on the parameters
    /// are the protocol's, `params::check_client`, applied here too).
    pub fn validate(&self) -> Result<(), EngineError> {
        self.check_choices()?;
        let mut wanted = self.cpus.clone().unwrap_or_default();
        wanted.extend(self.affinity);
        if !wanted.is_empty() {
            check_cpus(
                &wanted,
                if self.affinity.is_some() {
                    "-A"
                } else {
                    "--cpus"
                },
            )?;
        }
        Ok(())
    }

    /// What [`ClientConfig::validate`] checks of the choices alone, reading nothing of the
    /// host: a command line's contradictions are refused before its CPUs are looked up.
    pub fn check_choices(&self) -> Result<(), EngineError> {
        wirespeed_protocol::params::check_client(&wirespeed_protocol::params::ClientChoices {
            time: self.time,
            omit: self.omit,
            mss: self.mss,
            burst: self.extras.burst,
            title: self.title.as_deref(),
            extra_data: self.extra_data.as_deref(),
            congestion: self.congestion.as_deref(),
        })
        .map_err(|e| EngineError::Config(e.to_string()))?;
        if self.parallel == 0 || self.parallel > MAX_STREAMS {
            return Err(EngineError::Config(format!(
                "-P {}: a whole number from 1 to {MAX_STREAMS}",
                self.parallel
            )));
        }
        if self.bytes.is_some() && self.blocks.is_some() {
            return Err(EngineError::Config("-n and -k cannot both be given".into()));
        }
        if self.bytes == Some(0) || self.blocks == Some(0) {
            return Err(EngineError::Config("-n/-k must be above 0".into()));
        }
        if self.time == 0 && self.bytes.is_none() && self.blocks.is_none() {
            return Err(EngineError::Config("-t 0 needs -n or -k".into()));
        }
        if self.server_irq_cpus.is_some() {
            wirespeed_protocol::psk::tune_needs_key(
                wirespeed_model::End::Client,
                self.psk.is_some(),
            )
            .map_err(|e| EngineError::Config(format!("--server-irq-cpus: {e}")))?;
        }
        if let Some(l) = self.block_len {
            if l == 0 || l as usize > dp_max_block() {
                return Err(EngineError::Config(format!(
                    "-l {l}: block length must be 1..={}",
                    dp_max_block()
                )));
            }
        }
        if self.udp {
            if let Some(l) = self.block_len {
                let min = dp::udp::header_len(self.udp_counters_64bit) as u32;
                if l < min || l as usize > dp::udp::MAX_DATAGRAM_LEN {
                    return Err(EngineError::Config(format!(
                        "-l {l}: a UDP datagram must be {min}..={} bytes",
                        dp::udp::MAX_DATAGRAM_LEN
                    )));
                }
            }
            if self.send_path != SendPath::Copy {
                return Err(EngineError::Config(
                    "-Z applies to TCP; UDP uses sendmmsg/GSO".into(),
                ));
            }
        }
        if self.affinity.is_some() && self.cpus.is_some() {
            return Err(EngineError::Config(
                "-A and --cpus cannot both be given".into(),
            ));
        }
        Ok(())
    }

    fn total_streams(&self) -> usize {
        let p = self.parallel as usize;
        if self.direction == Direction::Both {
            2 * p
        } else {
            p
        }
    }

    fn block(&self) -> u32 {
        self.block_len.unwrap_or(DEFAULT_TCP_BLOCK)
    }

    /// The UDP datagram size: `-l`, else (as iperf3) the control connection's MSS.
    fn udp_block(&self, ctrl_mss: Option<u32>) -> u32 {
        self.block_len.unwrap_or_else(|| {
            ctrl_mss
                .filter(|&m| m > 0 && m as usize <= dp::udp::MAX_DATAGRAM_LEN)
                .unwrap_or(DEFAULT_UDP_BLOCK)
        })
    }

    fn rate(&self) -> u64 {
        self.bandwidth
            .unwrap_or(if self.udp { DEFAULT_UDP_RATE } else { 0 })
    }

    /// The parameters sent to the server.
    pub fn params(&self) -> TestParams {
        self.params_with_mss(None)
    }

    /// Where each stream's two ends run ([`placement::pair_cpus`]): a TCP test over loopback
    /// (`local` → `target`) that places neither end's workers itself, on the CPUs this process
    /// may use, from an offset the cookie's random bytes give (so concurrent tests start on CPUs
    /// chosen at random, not all on the first: they may still meet). The server is asked to
    /// follow (`wirespeed.paired_cpus`).
    pub fn paired_cpus(
        &self,
        local: Option<SocketAddr>,
        target: SocketAddr,
        cookie: &Cookie,
    ) -> Option<Vec<u32>> {
        let placed = self.cpus.is_some()
            || self.affinity.is_some()
            || self.server_cpus.is_some()
            || self.server_affinity.is_some();
        if self.udp || placed || !placement::over_loopback(local?.ip(), target.ip()) {
            return None;
        }
        let allowed = dp::cpu::allowed_cpus().ok()?;
        let offset = cookie.as_bytes().iter().fold(0usize, |h, &b| {
            h.wrapping_mul(31).wrapping_add(usize::from(b))
        });
        placement::pair_cpus(&allowed, self.parallel as usize, offset)
    }

    /// The parameters, with the control connection's MSS for UDP's default datagram size.
    pub fn params_with_mss(&self, ctrl_mss: Option<u32>) -> TestParams {
        let timed = self.bytes.is_none() && self.blocks.is_none();
        let rate = self.rate();
        TestParams {
            transport: if self.udp {
                Transport::Udp
            } else {
                Transport::Tcp
            },
            bandwidth: (rate > 0).then_some(rate),
            fqrate: self.fq_rate,
            udp_counters_64bit: self.udp && self.udp_counters_64bit,
            omit: self.omit,
            server_affinity: self.server_affinity,
            time: if timed { self.time } else { 0 },
            num: self.bytes.unwrap_or(0),
            blockcount: self.blocks.unwrap_or(0),
            mss: self.mss,
            nodelay: self.nodelay,
            parallel: self.parallel,
            direction: self.direction,
            window: self.window,
            len: Some(if self.udp {
                self.udp_block(ctrl_mss)
            } else {
                self.block()
            }),
            pacing_timer: Some(self.extras.pacing_timer.unwrap_or(1000)),
            burst: self.extras.burst,
            tos: self.extras.tos.filter(|&t| t != 0),
            repeating_payload: self.extras.repeating_payload,
            flowlabel: self.extras.flowlabel,
            dont_fragment: self.extras.dont_fragment,
            congestion: self.congestion.clone(),
            title: self.title.clone(),
            extra_data: self.extra_data.clone(),
            get_server_output: self.get_server_output,
            zerocopy: (self.send_path != SendPath::Copy).then_some(1),
            skip_rx_copy: self.skip_rx_copy,
            client_version: Some(format!("wirespeed {VERSION}")),
            wirespeed: Some(ParamsExt {
                version: VERSION.into(),
                protocol: wirespeed_protocol::ext::EXT_PROTOCOL_VERSION,
                server_cpus: self.server_cpus.clone(),
                paired_cpus: None,
                observe: false,
                recv_path: if self.zerocopy_rx {
                    Some("zerocopy".to_string())
                } else {
                    self.skip_rx_copy.then(|| "skip".to_string())
                },
                send_path: (self.send_path != SendPath::Copy).then_some(self.send_path.into()),
                drain: true,
                irq_cpus: self.server_irq_cpus.clone(),
                live: true,
                psk: None,
                udp_token: true,
                extra: Default::default(),
            }),
            ..TestParams::default()
        }
    }
}

fn dp_max_block() -> usize {
    1 << 30
}

/// Check that every CPU `flag` names is allowed for this process (its affinity holds online
/// CPUs only), in the one sentence of [`CpuSet::check_usable`].
pub fn check_cpus(cpus: &CpuSet, flag: &str) -> Result<(), EngineError> {
    let allowed = dp::cpu::allowed_cpus().map_err(|e| EngineError::Host(e.to_string()))?;
    cpus.check_usable(flag, &CpuSet::new(), Some(&allowed))
        .map_err(|e| EngineError::Host(e.to_string()))
}

pub use crate::placement::usable_cpus;

fn random_cookie() -> Result<Cookie, EngineError> {
    let mut e = [0u8; 36];
    getrandom::fill(&mut e)
        .map_err(|err| EngineError::Host(format!("no randomness for the cookie: {err}")))?;
    Ok(Cookie::from_entropy(&e))
}

/// State of a client run, kept apart from the loop so failures can still report.
struct Run<'a> {
    cfg: &'a ClientConfig,
    /// The shell (the data phase, this end's and the server's results), the core and the
    /// control connection.
    link: Link<'a, Ctrl>,
    target: SocketAddr,
    ctrl_local: Option<SocketAddr>,
    /// Where each stream's two ends run over loopback ([`ClientConfig::paired_cpus`]).
    paired: Option<Vec<u32>>,
    streams: Vec<DataStream>,
    /// The data phase readied once the streams opened ([`Shell::prepare`]): at
    /// `TEST_RUNNING` only the workers are left to start.
    ready: Option<Ready>,
    /// The parameters sent to the server: they describe the test at both ends.
    params: TestParams,
    local_results: Option<TestResults>,
    tcp_mss_default: Option<u32>,
    /// Interrupted mid-test: the report's `end` comes from this end's counts alone.
    interrupted: bool,
}

impl<'a> Run<'a> {
    fn connect_streams(&mut self) -> Result<(), EngineError> {
        let cfg = self.cfg;
        let total = cfg.total_streams();
        let opts = measurement::tcp_options(&self.params);
        if total > 512 {
            let _ = dp::sys::raise_fd_limit((total as u64) * 2 + 256);
        }
        let timeout = cfg.connect_timeout.or(Some(Duration::from_secs(10)));
        for i in 0..total {
            let id = wirespeed_protocol::stream_id(i);
            let send = cfg.direction.stream_sends(i, cfg.parallel as usize, true);
            let cport = cfg.cport.map(|p| p.wrapping_add(i as u16));
            let socket = if cfg.udp {
                let u = net::udp_connect(
                    self.target,
                    cfg.bind,
                    cport,
                    cfg.window,
                    timeout.unwrap_or(Duration::from_secs(10)),
                    &self.link.sh.cookie,
                )?;
                cfg.extras.udp_data(&u)?;
                DataSocket::Udp(u)
            } else {
                let o = opts.clone();
                let target = cfg.extras.data_target(self.target)?;
                let mut s: TcpStream = net::connect_with(
                    target,
                    cfg.bind,
                    cport,
                    timeout,
                    cfg.extras.mptcp,
                    cfg.interrupt.as_deref(),
                    move |sock| {
                        dp::tcp::apply(sock, &o).map_err(|e| match e {
                            dp::DatapathError::Congestion { .. } => {
                                EngineError::Host(e.to_string())
                            }
                            other => EngineError::Config(other.to_string()),
                        })?;
                        cfg.extras.tcp_data(sock, target)
                    },
                )?;
                let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
                std::io::Write::write_all(&mut s, self.link.sh.cookie.as_bytes()).map_err(|e| {
                    EngineError::Connect {
                        target: self.target.to_string(),
                        reason: format!("sending the cookie on data connection {id}: {e}"),
                    }
                })?;
                let _ = s.set_write_timeout(None);
                DataSocket::Tcp(s)
            };
            self.streams.push(DataStream { id, socket, send });
        }
        Ok(())
    }

    /// Where and how this end's data phase runs.
    fn how(&self) -> Begin<'a> {
        let cfg = self.cfg;
        let placement = WorkerPlacement::pinned(cfg.cpus.clone(), cfg.affinity)
            .or_else(|| self.paired.clone().map(WorkerPlacement::Paired))
            .unwrap_or_else(WorkerPlacement::float);
        Begin {
            whence: Whence::ConnectingTo(HostPort {
                host: cfg.host.clone(),
                port: cfg.port,
            }),
            mss_default: self.tcp_mss_default,
            paths: LocalPaths {
                placement,
                send_path: cfg.send_path,
                recv_path: if cfg.zerocopy_rx {
                    RecvPath::Zerocopy
                } else if cfg.skip_rx_copy {
                    RecvPath::SkipCopy
                } else {
                    RecvPath::Copy
                },
                udp_send_path: cfg.udp_send_path,
                udp_recv_path: cfg.udp_recv_path,
            },
            observe: cfg.observe.as_ref(),
            peer: self.target.ip(),
            local: self.ctrl_local.map(|a| a.ip()),
        }
    }

    /// Ready the data phase over the opened streams (the `start` section, the result builder)
    /// before `TEST_START` is read: what runs between the server's `TEST_START` and this
    /// end's clock runs on the server's clock and not on this end's.
    fn prepare(
        &mut self,
        observer: TestObserver,
        reporter: &mut dyn Reporter,
    ) -> Result<(), EngineError> {
        let how = self.how();
        let ready = self
            .link
            .sh
            .prepare(&self.params, &self.streams, how, observer, reporter)
            .map_err(EngineError::Peer)?;
        self.ready = Some(ready);
        Ok(())
    }

    /// Interrupted: stop sending, close the last interval at this moment and count what this
    /// end measured, so the partial report has its summary (iperf3 prints one too; the
    /// peer's side of it stays what this end saw, as iperf3's does).
    fn interrupt_end(&mut self, reporter: &mut dyn Reporter) {
        if self.link.sh.m.is_none() || self.interrupted {
            return;
        }
        self.interrupted = true;
        self.link.sh.stop_here(reporter);
        self.count_here();
    }

    /// This end's results, unless they were sent already.
    fn count_here(&mut self) {
        if self.link.sh.m.is_some() && self.local_results.is_none() {
            self.local_results = Some(self.link.sh.local_results(None));
        }
    }

    /// The report, complete or partial.
    fn result(&mut self, error: Option<String>) -> TestResult {
        let cfg = self.cfg;
        let with_end = error.is_none() || self.interrupted || self.link.sh.silent;
        let head = TestResult {
            start: self.link.sh.start_or(Whence::ConnectingTo(HostPort {
                host: cfg.host.clone(),
                port: cfg.port,
            })),
            title: cfg.title.clone(),
            extra_data: cfg.extra_data.clone(),
            error,
            ..TestResult::default()
        };
        let peer = self.link.sh.peer_results.as_ref();
        let mut r = self.link.sh.report(
            head,
            with_end,
            Peer {
                results: peer,
                ..Peer::default()
            },
            cfg.rate_bps,
        );
        if let Some(x) = r.wirespeed.as_mut() {
            x.command = cfg.command.clone();
            if self.interrupted && peer.is_none() {
                // Not "the peer is not wirespeed": its results never came.
                if let Some(o) = x.observation.as_mut().filter(|o| o.remote.is_none()) {
                    o.remote_absent =
                        Some("the test was interrupted before the peer's results came".into());
                }
            }
            if let Some(p) = peer {
                r.server_output_json = p.server_output_json.clone();
                r.server_output_text = p.server_output_text.clone();
            }
        }
        r
    }
}

fn failure_error(f: &Failure) -> EngineError {
    EngineError::Peer(format!("server {f}"))
}

/// The client's part of the loop around the core ([`crate::drive`]): it opens the data
/// connections when asked, stops when interrupted, and says what ended the test in its words.
impl<'a> Endpoint<'a> for Run<'a> {
    type Error = EngineError;
    type Ctrl = Ctrl;

    fn link(&mut self) -> &mut Link<'a, Ctrl> {
        &mut self.link
    }

    fn failed(&mut self, f: Failed) -> EngineError {
        match f {
            Failed::Write(e) => {
                EngineError::Peer(format!("writing to the control connection: {e}"))
            }
            Failed::Read(e) => EngineError::Peer(format!("reading the control connection: {e}")),
            Failed::Session(Step::EndTest, e) => {
                EngineError::Peer(format!("cannot end the test: {e}"))
            }
            Failed::Session(_, e) => EngineError::Peer(format!("cannot send results: {e}")),
            Failed::Seal(e) => EngineError::Config(format!("--psk: {e}")),
            Failed::PeerKey(e) => {
                EngineError::Peer(format!("the server's results: pre-shared key: {e}"))
            }
        }
    }

    fn interrupted(&mut self, reporter: &mut dyn Reporter) -> Option<EngineError> {
        let asked = self.cfg.interrupt.as_ref()?;
        if !asked.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        self.interrupt_end(reporter);
        Some(EngineError::Interrupted)
    }

    /// The observer's first look comes before the connections (the server starts its clock
    /// once the last is up and says `TEST_START`), the rest of the data phase after.
    fn open_streams(&mut self, reporter: &mut dyn Reporter) -> Result<(), EngineError> {
        let observer = self.link.sh.observer(&self.params, &self.how());
        self.connect_streams()?;
        self.prepare(observer, reporter)
    }

    fn start_data(&mut self, started: Duration, _: &mut dyn Reporter) -> Result<(), EngineError> {
        let ready = self.ready.take().ok_or_else(|| {
            EngineError::Peer("the server said the test runs before it asked for streams".into())
        })?;
        let streams = std::mem::take(&mut self.streams);
        self.link
            .sh
            .start_data(ready, streams, Some(started))
            .map_err(EngineError::Peer)
    }

    fn local_results(&mut self, _: &mut dyn Reporter) -> TestResults {
        self.link.sh.local_results(None)
    }

    fn results_sent(&mut self, r: TestResults) {
        self.local_results = Some(r);
    }

    /// An MTU black hole (this end's results made no progress while the small messages before
    /// them got through) is this end's report, the verdict naming it; the server's data or
    /// results that never came although the test ran, this end's report with the verdict on
    /// the silence, not a bare timeout.
    fn ending(&mut self, ending: Ending, _: &mut dyn Reporter) -> Result<(), EngineError> {
        match ending {
            Ending::Complete | Ending::ResultsStalled(_) => Ok(()),
            Ending::Silent { cause, .. } => {
                self.count_here();
                Err(match cause {
                    Cause::Watch(WatchStop::ReceiveIdle { quiet, limit }) => {
                        EngineError::Peer(rcv_timeout_message(quiet, limit))
                    }
                    Cause::Watch(other) => EngineError::Peer(format!("{other:?}")),
                    Cause::Control(f) => failure_error(&f),
                })
            }
            Ending::Limit(stop) => Err(EngineError::Peer(format!("{stop:?}"))),
            Ending::Refused(r) => Err(EngineError::Refused(r)),
            Ending::PeerTerminated => {
                Err(EngineError::Peer("the server terminated the test".into()))
            }
            Ending::Failed {
                failure: f @ (Failure::Closed { .. } | Failure::Timeout { .. }),
                in_setup: true,
            } => Err(EngineError::Connect {
                target: self.target.to_string(),
                reason: format!("server {f} (is it an iperf3 or wirespeed server?)"),
            }),
            Ending::Failed { failure, .. } => Err(failure_error(&failure)),
            Ending::Interrupted => Err(EngineError::Interrupted),
            Ending::Unexpected(what) => Err(EngineError::Peer(format!("unexpected {what}"))),
        }
    }
}

/// Why a tune request is not sent without the pre-shared key (the rule:
/// [`psk::tune_needs_key`]).
pub use wirespeed_protocol::psk::ASK_TUNE_NEEDS_KEY as TUNE_NEEDS_PSK;

/// Run one test. The reporter sees the live events; the returned report is complete on
/// success. On failure the reporter's `finish` still gets a report with `error` set.
pub fn run_client(
    cfg: &ClientConfig,
    reporter: &mut dyn Reporter,
) -> Result<TestResult, EngineError> {
    let early = |reporter: &mut dyn Reporter, e: EngineError| {
        // No control connection yet: the report is what iperf3 prints then, a start section
        // naming this end and the error, so `-J` readers still get a valid document.
        let mut r = TestResult::default();
        r.start.version = format!("wirespeed {VERSION}");
        r.start.system_info = crate::sysinfo::system_info();
        r.error = Some(e.to_string());
        reporter.finish(&r);
        Err(e)
    };
    if let Err(e) = cfg.validate() {
        return early(reporter, e);
    }
    reporter.connecting(&cfg.host, cfg.port);
    let addrs = match net::resolve(&cfg.host, cfg.port, cfg.family) {
        Ok(a) => a,
        Err(e) => return early(reporter, e),
    };
    let mut last_err = None;
    let mut ctrl_stream = None;
    for a in &addrs {
        match net::connect_with(
            *a,
            cfg.bind,
            None,
            cfg.connect_timeout,
            cfg.extras.mptcp,
            cfg.interrupt.as_deref(),
            |s| cfg.extras.control(s),
        ) {
            Ok(s) => {
                ctrl_stream = Some((s, *a));
                break;
            }
            Err(EngineError::Interrupted) => return early(reporter, EngineError::Interrupted),
            Err(e) => last_err = Some(e),
        }
    }
    let Some((stream, target)) = ctrl_stream else {
        let e = last_err.unwrap_or(EngineError::Connect {
            target: format!("{} port {}", cfg.host, cfg.port),
            reason: "no address".into(),
        });
        return early(reporter, e);
    };
    let tcp_mss_default = net::mss_of(&stream);
    let ctrl_local = stream.local_addr().ok();
    let ctrl = Ctrl::new(stream);
    let sh = Shell::new(
        wirespeed_model::End::Client,
        random_cookie()?,
        cfg.psk.as_ref(),
        cfg.interval,
    );
    let mut params = cfg.params_with_mss(tcp_mss_default);
    let paired = cfg.paired_cpus(ctrl_local, target, &sh.cookie);
    if let Some(ext) = params.wirespeed.as_mut() {
        ext.paired_cpus.clone_from(&paired);
    }
    if let Some(a) = &cfg.auth {
        match a.token(unix_now()) {
            Ok(t) => params.authtoken = Some(t),
            Err(e) => {
                return early(
                    reporter,
                    EngineError::Config(format!("authentication: {e}")),
                )
            }
        }
    }
    if let Some(k) = &cfg.psk {
        if let Err(e) = k.seal_params(&mut params, &sh.cookie, unix_now()) {
            return early(reporter, EngineError::Config(format!("--psk: {e}")));
        }
    }
    let mut timeouts = cfg.timeouts;
    // The wait for the server's results is receiving too: a shorter --rcv-timeout bounds it.
    if let Some(t) = cfg.rcv_timeout {
        timeouts.results = timeouts.results.min(t.max(Duration::from_millis(100)));
    }
    if let Some(t) = cfg.connect_timeout {
        timeouts.setup = timeouts.setup.min(t.max(Duration::from_millis(100)));
    }
    let plan = ClientPlan {
        end: if let Some(n) = cfg.bytes {
            EndAt::Bytes(n)
        } else if let Some(k) = cfg.blocks {
            EndAt::Blocks(k)
        } else {
            EndAt::Time(Duration::from_secs(u64::from(cfg.time)))
        },
        paced: !cfg.udp && params.tcp_pacing_rate().is_some(),
        limits: Limits {
            rcv_timeout: cfg.rcv_timeout,
            ..Limits::default()
        },
        peer_mss: tcp_mss_default,
    };
    let core = TestRun::client(sh.now(), sh.cookie, params.clone(), timeouts, plan);
    let mut run = Run {
        cfg,
        link: Link { sh, core, ctrl },
        target,
        ctrl_local,
        paired,
        streams: Vec::new(),
        ready: None,
        params,
        local_results: None,
        tcp_mss_default,
        interrupted: false,
    };
    let outcome = drive::drive(&mut run, reporter);
    run.link.sh.close();
    match outcome {
        Ok(()) => {
            let r = run.result(None);
            reporter.finish(&r);
            Ok(r)
        }
        Err(e) => {
            if matches!(e, EngineError::Peer(_) | EngineError::Interrupted) {
                run.link.core.terminate();
                let _ = run.link.ctrl.send(&run.link.core.take_transmit());
            }
            let r = run.result(Some(e.to_string()));
            reporter.finish(&r);
            Err(e)
        }
    }
}

/// iperf3's words for `IENOMSG`, with what was waited for and how long.
pub fn rcv_timeout_message(quiet: Duration, limit: Duration) -> String {
    format!(
        "idle timeout for receiving data: no data received for {:.1} s (--rcv-timeout {} ms)",
        quiet.as_secs_f64(),
        limit.as_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_protocol::COOKIE_LEN;

    /// The client asks for a pairing only for a TCP test over loopback where neither end was
    /// placed by the user and the streams are at least the CPUs; the cookie's bytes pick where
    /// the list starts.
    #[test]
    fn the_client_pairs_only_an_unplaced_tcp_test_over_loopback() {
        let allowed = dp::cpu::allowed_cpus().expect("affinity");
        let n = allowed.len();
        if n < 2 {
            eprintln!("SKIP: the_client_pairs_only_an_unplaced_tcp_test_over_loopback: one CPU");
            return;
        }
        let lo: SocketAddr = "127.0.0.1:5201".parse().unwrap();
        let far: SocketAddr = "192.0.2.9:5201".parse().unwrap();
        let near: SocketAddr = "192.0.2.1:40000".parse().unwrap();
        // cookies that differ in their first character
        let cookie = |b: u8| {
            let mut e = [0u8; COOKIE_LEN - 1];
            e[0] = b;
            Cookie::from_entropy(&e)
        };
        let many = ClientConfig {
            parallel: n as u32,
            ..ClientConfig::default()
        };
        let got = many.paired_cpus(Some(lo), lo, &cookie(1)).expect("paired");
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            allowed.iter().collect::<Vec<_>>(),
            "every CPU, once"
        );
        // the cookie decides where the list starts: some cookie starts elsewhere
        assert!(
            (0..=255u8).any(|b| many.paired_cpus(Some(lo), lo, &cookie(b)).as_ref() != Some(&got)),
            "the offset never moved"
        );
        assert_eq!(
            many.paired_cpus(Some(near), far, &cookie(1)),
            None,
            "not loopback"
        );
        assert_eq!(
            many.paired_cpus(None, lo, &cookie(1)),
            None,
            "no local address"
        );
        let first = allowed.iter().next().unwrap_or(0);
        for placed in [
            ClientConfig {
                udp: true,
                ..many.clone()
            },
            ClientConfig {
                affinity: Some(first),
                ..many.clone()
            },
            ClientConfig {
                server_affinity: Some(first),
                ..many.clone()
            },
            ClientConfig {
                cpus: Some(CpuSet::from_cpus([first])),
                ..many.clone()
            },
            ClientConfig {
                server_cpus: Some(CpuSet::from_cpus([first])),
                ..many.clone()
            },
            ClientConfig {
                parallel: 1,
                ..many.clone()
            },
        ] {
            assert_eq!(placed.paired_cpus(Some(lo), lo, &cookie(1)), None);
        }
    }
}
