//! The drivers that run tests through the engine to answer "where should the work run":
//! the client CPU × server CPU sweep ([`run_pair_sweep`]), the IRQ sweeps (this host's NIC with
//! `-R`, [`run_local_irq_sweep`]; the server's, through tune requests,
//! [`run_server_irq_sweep`]) and `client --repeat` ([`run_repeat`]).
//!
//! Each driver stops between tests when `stop` is set, reports progress lines through a
//! callback, and returns what it measured with the first failure; the command line turns them
//! into output and exit codes.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wirespeed_engine::{ClientConfig, EngineError, NullReporter, ObserveHook};
use wirespeed_host::{CpuSet, Root};
use wirespeed_model::observation::BitsPerSecond;
use wirespeed_model::{MoveReport, TestObservation, Topology, Verdict};
use wirespeed_protocol::{Direction, Refusal};
use wirespeed_report::TestResult;
use wirespeed_tune::ApplyOptions;

use crate::irq_sweep::{self, IrqSweepError, IrqSweepReport, IrqSweepSpec, StepOutcome};
use crate::modes;
use crate::sweep::{Axes, Matrix};
use wirespeed_observe::route;

/// What every sweep test shares.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    pub host: String,
    pub port: u16,
    /// Seconds per test.
    pub time: u32,
    /// Tests per cell (the matrix keeps their median).
    pub repeat: u32,
    /// The server sends, this host receives.
    pub reverse: bool,
    /// Client CPUs (rows of the client × server sweep).
    pub cpus: CpuSet,
    /// Server CPUs.
    pub server_cpus: CpuSet,
    /// Observation of this host's end of each test.
    pub observe: Option<ObserveHook>,
    /// The server's pre-shared key (`--psk`): tags every test's parameters. The sweep of the
    /// server's IRQs needs it (a server takes tune requests only with verified parameters).
    pub psk: Option<wirespeed_protocol::psk::Psk>,
}

/// Why a sweep or `--repeat` refuses before its first test (the CPUs they name come checked:
/// `wirespeed_doctor::target`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PreflightError {
    #[error("{0}: cannot resolve the address")]
    Resolve(String),
    #[error("cannot reach a server at {host}:{port}: {why}")]
    Peer {
        host: String,
        port: u16,
        why: String,
    },
}

/// Where the server `host`:`port` is: its first address, and whether it is on this host
/// (`root`'s route to it is loopback), where relations between client and server CPUs mean
/// something.
pub fn locate_peer(root: &Root, host: &str, port: u16) -> (Option<IpAddr>, bool) {
    use std::net::ToSocketAddrs;
    let peer = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip());
    let same_host =
        peer.is_some_and(|p| route::iface_for_peer(root, p, None).as_deref() == Some("lo"));
    (peer, same_host)
}

/// One TCP connect to the server (closed at once, before any test), so a sweep or a repeat
/// against no server says so once instead of once per test.
pub fn check_peer(host: &str, port: u16, timeout: Duration) -> Result<(), PreflightError> {
    use std::net::{TcpStream, ToSocketAddrs};
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|_| PreflightError::Resolve(host.to_string()))?
        .collect();
    let mut why = String::from("no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(_) => return Ok(()),
            Err(e) => why = e.to_string(),
        }
    }
    Err(PreflightError::Peer {
        host: host.to_string(),
        port,
        why,
    })
}

/// The receiver's throughput of a finished test (`sum_received`, else `sum`).
pub fn receiver_bps(r: &TestResult) -> Option<BitsPerSecond> {
    r.end
        .sum_received
        .as_ref()
        .or(r.end.sum.as_ref())
        .map(|s| BitsPerSecond(s.bits_per_second))
}

/// The observation and verdict a test carries under `wirespeed`, when it has them.
pub fn observation_of(r: &TestResult) -> (Option<TestObservation>, Option<Verdict>) {
    let Some(x) = &r.wirespeed else {
        return (None, None);
    };
    (x.observation.clone(), x.verdict.clone())
}

fn no_receiver_summary() -> EngineError {
    EngineError::Peer("the result has no receiver summary".into())
}

/// One pinned one-stream test; with `irq_cpu`, the server moves its NIC's queue IRQs there for
/// the test (a server started with `--allow-tune`).
pub fn sweep_test(
    s: &SweepSpec,
    client_cpu: u32,
    server_cpu: u32,
    irq_cpu: Option<u32>,
) -> Result<TestResult, EngineError> {
    let cfg = ClientConfig {
        host: s.host.clone(),
        port: s.port,
        time: s.time,
        parallel: 1,
        direction: if s.reverse {
            Direction::ServerToClient
        } else {
            Direction::ClientToServer
        },
        affinity: Some(client_cpu),
        server_affinity: Some(server_cpu),
        server_irq_cpus: irq_cpu.map(|c| CpuSet::from_cpus([c])),
        interval: sweep_interval(s.time),
        observe: s.observe.clone(),
        psk: s.psk.clone(),
        ..ClientConfig::default()
    };
    wirespeed_engine::run_client(&cfg, &mut NullReporter)
}

/// The interval of a sweep's tests: a quarter of the test up to one second, so even a
/// one-second test has the interval rates a cell's spread is computed from.
pub fn sweep_interval(time: u32) -> Duration {
    (Duration::from_secs(u64::from(time)) / 4).min(Duration::from_secs(1))
}

/// The rates (bits/s) of a test's full-length intervals — those at least half the median
/// interval's length: a short last one is left out, and one a busy host stretched does not
/// make the others short —, the omitted ones left out.
pub fn interval_rates(r: &TestResult) -> Vec<f64> {
    let kept: Vec<_> = r
        .intervals
        .iter()
        .map(|i| &i.sum)
        .filter(|s| !s.omitted && s.seconds > 0.0 && s.bits_per_second.is_finite())
        .collect();
    let lengths: Vec<f64> = kept.iter().map(|s| s.seconds).collect();
    let nominal = crate::modes::median(&lengths).unwrap_or(0.0);
    kept.iter()
        .filter(|s| s.seconds >= nominal / 2.0)
        .map(|s| s.bits_per_second)
        .collect()
}

/// One cell's run: the receiver's throughput, the interval rates and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct CellRun {
    pub bps: BitsPerSecond,
    pub intervals: Vec<f64>,
    pub verdict: Option<wirespeed_model::VerdictId>,
}

/// One pinned one-stream test, as a cell's run.
pub fn cell_run(s: &SweepSpec, client_cpu: u32, server_cpu: u32) -> Result<CellRun, EngineError> {
    let r = sweep_test(s, client_cpu, server_cpu, None)?;
    let bps = receiver_bps(&r).ok_or_else(no_receiver_summary)?;
    Ok(CellRun {
        bps,
        intervals: interval_rates(&r),
        verdict: observation_of(&r).1.map(|v| v.id),
    })
}

/// One pinned one-stream test; the receiver's throughput.
pub fn one_test(
    s: &SweepSpec,
    client_cpu: u32,
    server_cpu: u32,
) -> Result<BitsPerSecond, EngineError> {
    let r = sweep_test(s, client_cpu, server_cpu, None)?;
    receiver_bps(&r).ok_or_else(no_receiver_summary)
}

/// What the client × server sweep measured.
#[derive(Debug)]
pub struct PairSweep {
    pub matrix: Matrix,
    /// Tests started.
    pub ran: usize,
    pub interrupted: bool,
    /// The first test that failed.
    pub first_err: Option<EngineError>,
}

/// Every client CPU × server CPU, `repeat` times each.
pub fn run_pair_sweep(
    s: &SweepSpec,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(String),
) -> PairSweep {
    let mut m = Matrix::new(Axes::ClientServer, s.cpus.clone(), s.server_cpus.clone());
    let mut first_err = None;
    let mut ran = 0;
    'all: for c in s.cpus.iter() {
        for sc in s.server_cpus.iter() {
            for _ in 0..s.repeat {
                if stop.load(Ordering::SeqCst) {
                    break 'all;
                }
                ran += 1;
                match cell_run(s, c, sc) {
                    Ok(run) => {
                        progress(format!(
                            "client CPU {c}, server CPU {sc}: {}{}",
                            run.bps,
                            run.verdict.map(|v| format!(" ({v})")).unwrap_or_default()
                        ));
                        m.record_run(c, sc, run.bps, run.intervals, run.verdict);
                    }
                    Err(e) => {
                        progress(format!("client CPU {c}, server CPU {sc}: {e}"));
                        m.record_error(c, sc, e.to_string());
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
    }
    PairSweep {
        matrix: m,
        ran,
        interrupted: stop.load(Ordering::SeqCst),
        first_err,
    }
}

/// Why an IRQ sweep could not run (or could not finish cleanly).
#[derive(Debug, thiserror::Error)]
pub enum IrqDriveError {
    #[error("--irq-cpus sweeps app CPU x IRQ CPU: give one --server-cpus CPU, not {0}")]
    OneServerCpu(CpuSet),
    #[error(
        "--irq-cpus without -R sweeps the server's app CPU x IRQ CPU: give one --cpus CPU \
         (this host sends from it), not {0}"
    )]
    OneClientCpu(CpuSet),
    #[error(
        "--irq-cpus without -R asks the server to move its IRQs: {}",
        wirespeed_engine::client::TUNE_NEEDS_PSK
    )]
    NeedsPsk,
    #[error("{0}: cannot resolve the address")]
    Resolve(String),
    #[error("no route to {0}: which NIC carries the test?")]
    NoRoute(IpAddr),
    #[error("{0} is reached through lo, which has no NIC interrupts to move")]
    Loopback(IpAddr),
    /// This host's NIC: its queue IRQs cannot be found.
    #[error(transparent)]
    Nic(IrqSweepError),
    /// Moving this host's IRQs (or putting them back) failed.
    #[error(transparent)]
    Sweep(IrqSweepError),
    #[error(
        "sweep --irq-cpus: the server refused to move its NIC's IRQs: {0}; or add -R to sweep \
         this host's IRQs (the server sends, this host receives)"
    )]
    ServerRefused(Refusal),
    #[error(
        "sweep --irq-cpus: the server could not put its IRQs back (journal {} on the server: \
         run `wirespeed tune revert {}` there)",
        .0.outcome.journal, .0.outcome.journal
    )]
    ServerNotReverted(Box<MoveReport>),
}

/// What an IRQ sweep measured.
#[derive(Debug)]
pub struct IrqDrive {
    pub report: IrqSweepReport,
    /// The topology that gives the summary its relations (the receiver's).
    pub topology: Option<Topology>,
    /// The first test that failed.
    pub first_err: Option<EngineError>,
}

/// `--irq-cpus` with `-R`: this host receives; its NIC's queue IRQs move to each IRQ CPU in
/// turn through tune's journal (under `root`), one test per app CPU (`cpus`) and step, against
/// the one server CPU.
pub fn run_local_irq_sweep(
    s: &SweepSpec,
    irq_cpus: &CpuSet,
    root: &Root,
    peer: Option<IpAddr>,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(String),
) -> Result<IrqDrive, IrqDriveError> {
    if s.server_cpus.len() != 1 {
        return Err(IrqDriveError::OneServerCpu(s.server_cpus.clone()));
    }
    let server_cpu = s.server_cpus.first().unwrap_or(0);
    let peer = peer.ok_or_else(|| IrqDriveError::Resolve(s.host.clone()))?;
    let iface = route::iface_for_peer(root, peer, None).ok_or(IrqDriveError::NoRoute(peer))?;
    if iface == "lo" {
        return Err(IrqDriveError::Loopback(peer));
    }
    let irqs = irq_sweep::queue_irqs(root, &iface).map_err(IrqDriveError::Nic)?;
    let spec = IrqSweepSpec {
        iface: iface.clone(),
        irqs,
        app_cpus: s.cpus.clone(),
        irq_cpus: irq_cpus.clone(),
        repeat: s.repeat,
    };
    let mut first_err = None;
    let report = irq_sweep::run_irq_sweep(
        root,
        &spec,
        &ApplyOptions::default(),
        stop,
        &mut |_| {},
        &mut |app, irq_cpu| match one_test(s, app, server_cpu) {
            Ok(bps) => {
                progress(format!(
                    "app CPU {app}, {iface} IRQs on CPU {irq_cpu}: {bps}"
                ));
                Ok(bps)
            }
            Err(e) => {
                let words = e.to_string();
                first_err.get_or_insert(e);
                Err(words)
            }
        },
    )
    .map_err(IrqDriveError::Sweep)?;
    Ok(IrqDrive {
        report,
        topology: Some(wirespeed_observe::topology::read(root)),
        first_err,
    })
}

/// `--irq-cpus` without `-R`: the server receives, so its NIC's queue IRQs move. Each test asks
/// the server (started with `--allow-tune`) to move them to the step's CPU for that test; the
/// server applies the move through tune's journal, reverts it when the test's data phase ends and
/// reports what it did in its results. Rows: the server's app CPUs (`server_cpus`); columns:
/// the IRQ CPUs; this host sends from its one `cpus` CPU.
pub fn run_server_irq_sweep(
    s: &SweepSpec,
    irq_cpus: &CpuSet,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(String),
) -> Result<IrqDrive, IrqDriveError> {
    if s.cpus.len() != 1 {
        return Err(IrqDriveError::OneClientCpu(s.cpus.clone()));
    }
    wirespeed_protocol::psk::tune_needs_key(wirespeed_model::End::Client, s.psk.is_some())
        .map_err(|_| IrqDriveError::NeedsPsk)?;
    let client_cpu = s.cpus.first().unwrap_or(0);
    let mut report = IrqSweepReport {
        iface: String::new(),
        irqs: Vec::new(),
        matrix: Matrix::new(Axes::AppIrq, s.server_cpus.clone(), irq_cpus.clone()),
        steps: Vec::new(),
        interrupted: false,
    };
    let mut topology: Option<Topology> = None;
    let mut ok = 0usize;
    let mut first_err: Option<EngineError> = None;
    'steps: for irq_cpu in irq_cpus.iter() {
        let mut step: Option<StepOutcome> = None;
        for app in s.server_cpus.iter() {
            for _ in 0..s.repeat {
                if stop.load(Ordering::SeqCst) {
                    report.interrupted = true;
                    report.steps.extend(step.take());
                    break 'steps;
                }
                let r = match sweep_test(s, client_cpu, app, Some(irq_cpu)) {
                    Ok(r) => r,
                    Err(EngineError::Refused(why)) if ok == 0 => {
                        return Err(IrqDriveError::ServerRefused(why));
                    }
                    Err(e) => {
                        progress(format!("server app CPU {app}, IRQs on CPU {irq_cpu}: {e}"));
                        report.matrix.record_error(app, irq_cpu, e.to_string());
                        first_err.get_or_insert(e);
                        continue;
                    }
                };
                let moved = r.wirespeed.as_ref().and_then(|x| x.remote_irq_move.clone());
                let Some(m) = moved else {
                    // An older wirespeed server ignores the request: the test ran with the IRQs
                    // wherever they were, which says nothing about this cell.
                    let e = "the server did not report moving its IRQs (a wirespeed server \
                             without tune requests?)";
                    first_err.get_or_insert(EngineError::Peer(e.into()));
                    report.matrix.record_error(app, irq_cpu, e);
                    continue;
                };
                if !m.outcome.reverted {
                    report.steps.push(StepOutcome::from_move(irq_cpu, &m));
                    return Err(IrqDriveError::ServerNotReverted(Box::new(m)));
                }
                let Some(bps) = receiver_bps(&r) else {
                    let e = no_receiver_summary();
                    report.matrix.record_error(app, irq_cpu, e.to_string());
                    first_err.get_or_insert(e);
                    continue;
                };
                ok += 1;
                progress(format!(
                    "server app CPU {app}, {} IRQs on CPU {irq_cpu}: {bps}",
                    m.iface
                ));
                if topology.is_none() {
                    topology = observation_of(&r)
                        .0
                        .and_then(|o| o.remote)
                        .map(|e| e.topology);
                }
                if report.iface.is_empty() {
                    report.iface = m.iface.clone();
                    report.irqs = m.irqs.clone();
                }
                step.get_or_insert_with(|| StepOutcome::from_move(irq_cpu, &m));
                report.matrix.record(app, irq_cpu, bps);
            }
        }
        report.steps.extend(step);
    }
    Ok(IrqDrive {
        report,
        topology,
        first_err,
    })
}

/// What `--repeat` measured.
#[derive(Debug)]
pub struct Repeat {
    /// The runs that finished, for the mode analysis.
    pub runs: Vec<modes::Run>,
    /// Their results.
    pub results: Vec<TestResult>,
    /// The first test that failed.
    pub first_err: Option<EngineError>,
}

/// Hears of each `--repeat` run as it ends: its number from 1, and its result or error.
pub type RunHook<'a> =
    dyn FnMut(u32, Result<&TestResult, &EngineError>) -> std::io::Result<()> + 'a;

/// `client --repeat N`: N tests in a row with the same settings. `each` hears of every run
/// (its number from 1, and its result or error) as it ends.
pub fn run_repeat(
    cfg: &ClientConfig,
    n: u32,
    stop: &AtomicBool,
    each: &mut RunHook<'_>,
) -> std::io::Result<Repeat> {
    let mut out = Repeat {
        runs: Vec::new(),
        results: Vec::new(),
        first_err: None,
    };
    for k in 1..=n {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        match wirespeed_engine::run_client(cfg, &mut NullReporter) {
            Ok(r) => {
                each(k, Ok(&r))?;
                out.runs.push(modes::Run {
                    bits_per_second: receiver_bps(&r).unwrap_or_default(),
                    observation: observation_of(&r).0,
                });
                out.results.push(r);
            }
            Err(e) => {
                each(k, Err(&e))?;
                out.first_err.get_or_insert(e);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use wirespeed_engine::{Reporter, Server, ServerConfig};

    fn spec(port: u16, cpus: CpuSet, server_cpus: CpuSet) -> SweepSpec {
        SweepSpec {
            host: "127.0.0.1".into(),
            port,
            time: 1,
            repeat: 1,
            reverse: false,
            cpus,
            server_cpus,
            observe: None,
            psk: None,
        }
    }

    /// A cell's spread comes from the full-length intervals: a short last one and omitted
    /// ones are left out, and one a busy host stretched does not drop the others.
    #[test]
    fn interval_rates_leave_out_the_last_sliver_and_the_omitted() {
        let iv = |seconds: f64, gbps: f64, omitted: bool| wirespeed_report::Interval {
            sum: wirespeed_report::IntervalStats {
                seconds,
                bits_per_second: gbps * 1e9,
                omitted,
                ..Default::default()
            },
            ..Default::default()
        };
        let r = TestResult {
            intervals: vec![
                iv(0.25, 1.0, true),
                iv(0.25, 4.0, false),
                iv(0.8, 5.0, false),
                iv(0.25, 6.0, false),
                iv(0.25, 7.0, false),
                iv(0.03, 9.0, false),
            ],
            ..Default::default()
        };
        assert_eq!(interval_rates(&r), vec![4e9, 5e9, 6e9, 7e9]);
        assert_eq!(sweep_interval(1), Duration::from_millis(250));
        assert_eq!(sweep_interval(3), Duration::from_millis(750));
        assert_eq!(sweep_interval(10), Duration::from_secs(1));
    }

    #[test]
    fn preflight_refuses_an_absent_peer() {
        // a port nobody listens on (bound, then closed)
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = check_peer("127.0.0.1", port, Duration::from_secs(2)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("cannot reach a server at 127.0.0.1:{port}: ")),
            "{e}"
        );
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(
            check_peer("127.0.0.1", port, Duration::from_secs(2)),
            Ok(())
        );
    }

    #[test]
    fn irq_sweeps_check_their_cpu_lists_before_any_test() {
        let stop = AtomicBool::new(false);
        let two = CpuSet::from_cpus([0, 1]);
        let one = CpuSet::from_cpus([0]);
        let mut lines = Vec::new();
        let mut progress = |l: String| lines.push(l);
        let e = run_local_irq_sweep(
            &spec(1, one.clone(), two.clone()),
            &one,
            &Root::live(),
            None,
            &stop,
            &mut progress,
        )
        .unwrap_err();
        assert!(matches!(e, IrqDriveError::OneServerCpu(_)), "{e}");
        let e = run_local_irq_sweep(
            &spec(1, two.clone(), one.clone()),
            &one,
            &Root::live(),
            None,
            &stop,
            &mut progress,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "127.0.0.1: cannot resolve the address");
        let e = run_server_irq_sweep(&spec(1, two, one.clone()), &one, &stop, &mut progress)
            .unwrap_err();
        assert!(e.to_string().contains("give one --cpus CPU"), "{e}");
        assert!(lines.is_empty(), "no test ran");
    }

    #[test]
    fn a_pair_sweep_and_a_repeat_run_against_a_server() {
        let server = Server::bind(ServerConfig {
            bind: Some("127.0.0.1".parse().unwrap()),
            port: 0,
            interval: Duration::ZERO,
            ..ServerConfig::default()
        })
        .unwrap()
        .spawn(Arc::new(|_| Box::new(NullReporter) as Box<dyn Reporter>))
        .unwrap();
        let cpu = Root::live()
            .cpu_list_opt("/sys/devices/system/cpu/online")
            .and_then(|c| c.first())
            .unwrap_or(0);
        let one = CpuSet::from_cpus([cpu]);
        let s = spec(server.addr.port(), one.clone(), one);
        let stop = AtomicBool::new(false);
        let mut lines = Vec::new();
        let sweep = run_pair_sweep(&s, &stop, &mut |l| lines.push(l));
        assert!(sweep.first_err.is_none(), "{:?}", sweep.first_err);
        assert_eq!((sweep.ran, sweep.interrupted), (1, false));
        assert!(sweep.matrix.median(cpu, cpu).is_some_and(|v| v > 0.0));
        // the cell keeps its run's interval rates (a quarter second each in a 1 s test: four,
        // or three when the last is cut short), so its spread is known
        let cell = sweep.matrix.cell(cpu, cpu).unwrap();
        assert_eq!(cell.intervals.len(), 1);
        assert!((3..=4).contains(&cell.intervals[0].len()), "{cell:?}");
        assert!(cell.spread().is_some());
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with(&format!("client CPU {cpu}, server CPU {cpu}: ")));

        let cfg = ClientConfig {
            host: s.host.clone(),
            port: s.port,
            time: 1,
            interval: Duration::ZERO,
            ..ClientConfig::default()
        };
        let mut heard = Vec::new();
        let r = run_repeat(&cfg, 2, &stop, &mut |k, r| {
            heard.push((k, r.is_ok()));
            Ok(())
        })
        .unwrap();
        assert_eq!(heard, vec![(1, true), (2, true)]);
        assert_eq!((r.runs.len(), r.results.len()), (2, 2));
        assert!(r.runs.iter().all(|run| run.bits_per_second.0 > 0.0));
        // Stopped before the first test: nothing runs.
        stop.store(true, Ordering::SeqCst);
        let none = run_pair_sweep(&s, &stop, &mut |_| {});
        assert_eq!((none.ran, none.interrupted), (0, true));
        server.stop().unwrap();
    }
}
