//! The observation model: what one end of a test saw, per interval and for the whole test, in
//! a form that serialises to JSON (under the result's `"wirespeed"` key) and travels between a
//! wirespeed client and server.
//!
//! All numbers are plain data; nothing here reads the host. Units are in the field names or in a
//! newtype ([`Percent`], [`BitsPerSecond`]).

use crate::cpuset::CpuSet;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A share of CPU time (0–100), kept finite and to one decimal.
#[derive(Debug, Clone, Copy, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Percent(f64);

impl Percent {
    /// `part` of `whole`, in percent, rounded to 0.1; 0 when `whole` is 0.
    pub fn of(part: u64, whole: u64) -> Percent {
        if whole == 0 {
            return Percent(0.0);
        }
        Percent::new(part as f64 * 100.0 / whole as f64)
    }

    /// A percentage, clamped to 0–100 and rounded to 0.1; non-finite values read as 0.
    pub fn new(v: f64) -> Percent {
        if !v.is_finite() {
            return Percent(0.0);
        }
        Percent(((v.clamp(0.0, 100.0)) * 10.0).round() / 10.0)
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 99.5 || self.0 == self.0.round() {
            write!(f, "{:.0} %", self.0)
        } else {
            write!(f, "{:.1} %", self.0)
        }
    }
}

/// A throughput in bits per second.
#[derive(Debug, Clone, Copy, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BitsPerSecond(pub f64);

impl BitsPerSecond {
    pub fn from_gbps(g: f64) -> BitsPerSecond {
        BitsPerSecond(g * 1e9)
    }

    pub fn gbps(self) -> f64 {
        self.0 / 1e9
    }
}

impl fmt::Display for BitsPerSecond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v >= 1e9 {
            write!(f, "{:.1} Gbit/s", v / 1e9)
        } else if v >= 1e6 {
            write!(f, "{:.1} Mbit/s", v / 1e6)
        } else {
            write!(f, "{:.0} bit/s", v)
        }
    }
}

/// Which way data flowed through this end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Sender,
    Receiver,
    /// `--bidir`: both.
    Both,
}

impl Role {
    pub fn sends(self) -> bool {
        matches!(self, Role::Sender | Role::Both)
    }

    pub fn receives(self) -> bool {
        matches!(self, Role::Receiver | Role::Both)
    }
}

/// One CPU during an interval: shares of its time and the network events it handled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    pub cpu: u32,
    /// user + nice.
    pub user: Percent,
    pub system: Percent,
    pub irq: Percent,
    pub softirq: Percent,
    pub steal: Percent,
    /// idle + iowait.
    pub idle: Percent,
    /// Interrupts of the test's NIC taken on this CPU.
    #[serde(default)]
    pub nic_irqs: u64,
    /// `NET_RX` softirqs run on this CPU.
    #[serde(default)]
    pub net_rx: u64,
    /// `NET_TX` softirqs run on this CPU.
    #[serde(default)]
    pub net_tx: u64,
}

impl CpuUse {
    /// Its time by what ran, named, in `/proc/stat`'s order with idle last (they add up to 100):
    /// the one list every table, chart and line of a CPU's shares is written from.
    pub fn shares(&self) -> [(&'static str, Percent); 6] {
        [
            ("user", self.user),
            ("system", self.system),
            ("irq", self.irq),
            ("softirq", self.softirq),
            ("steal", self.steal),
            ("idle", self.idle),
        ]
    }

    /// Everything but idle.
    pub fn busy(&self) -> Percent {
        Percent::new(100.0 - self.idle.get())
    }

    /// The largest non-idle component, for evidence: `("system", 99 %)`.
    pub fn dominant(&self) -> (&'static str, Percent) {
        let parts = [
            ("system", self.system),
            ("softirq", self.softirq),
            ("user", self.user),
            ("irq", self.irq),
            ("steal", self.steal),
        ];
        parts.into_iter().fold(("system", Percent(0.0)), |best, p| {
            if p.1 > best.1 {
                p
            } else {
                best
            }
        })
    }
}

/// One worker thread of the test: where it was asked to run and where it was seen running.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRun {
    /// The worker's number within this end.
    pub worker: u32,
    /// The CPU it was pinned to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_requested: Option<u32>,
    /// The CPUs it was seen running on.
    pub cpus_seen: CpuSet,
    /// The stream ids it carried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<i32>,
    /// Its thread's kernel id: its entry in each interval's `threads` (absent where the end
    /// did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
}

/// What `TCP_INFO` says limited the senders of this end, summed over its streams (microseconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpLimits {
    /// `tcpi_busy_time`: time with data in flight.
    pub busy_us: u64,
    /// `tcpi_rwnd_limited`: time limited by the receiver's window.
    pub rwnd_limited_us: u64,
    /// `tcpi_sndbuf_limited`: time limited by the send buffer.
    pub sndbuf_limited_us: u64,
    /// `tcpi_pmtu`: the smallest path MTU over the streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u32>,
    /// `tcpi_dsack_dups`: segments the receiver reported (D-SACK) as received twice — the
    /// sender's retransmits of segments that had arrived, not of lost ones (4.19+; 0 before).
    #[serde(default)]
    pub dsack_dups: u64,
    /// `tcpi_snd_mss`: the smallest sending MSS over the streams. With the RTT below, what
    /// the loss model needs from the sender, carried in its observation because iperf3's
    /// results give the peer neither (a `-R` client's report has the server's retransmits
    /// only, its RTTs 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// `tcpi_rtt`: the largest smoothed RTT over the streams, µs (the quantity a report's
    /// per-interval RTT samples are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_us: Option<u32>,
    /// The senders' RTT samples over the test as this end's report took them (one per
    /// interval and stream, `tcpi_rtt`), µs: the smallest, the mean of the streams' means, the
    /// largest — the figures a report's `min_rtt`, `mean_rtt` and `max_rtt` give, for the end
    /// whose own report lacks them. Filled for the whole end, not per stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<(u64, u64, u64)>,
    /// `tcpi_min_rtt`: the smallest RTT the kernel measured over the streams' lives (its
    /// windowed minimum, the handshake's sample included), µs — the path's RTT with no queue
    /// on it, which a smoothed RTT that never came down near it says a queue stood over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u32>,
    /// `tcpi_snd_wnd`: the receive window the peer advertised, summed over the streams (bytes;
    /// kernels from 6.2 on report it) — in an interval its last reading, over the whole test the
    /// largest of the intervals' readings and the last. With the rate and the RTT it says how
    /// full the window ran: a window the data in flight fills is the limit whatever the
    /// busy-time counters say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// `tcpi_total_rto`: retransmission timeouts over the streams (6.7+; `None` before), and
    /// `tcpi_total_rto_time`: the time spent recovering from them, ms. The loss model's
    /// timeout term reads them: at sub-millisecond RTTs one 200 ms timeout costs more than
    /// every fast recovery of a test together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_timeouts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_time_ms: Option<u64>,
}

impl TcpLimits {
    /// Add another stream's counters (pmtu, MSS and the smallest RTT: the smaller; smoothed
    /// RTT: the larger; advertised windows: the sum).
    pub fn add(&mut self, other: &TcpLimits) {
        self.busy_us = self.busy_us.saturating_add(other.busy_us);
        self.rwnd_limited_us = self.rwnd_limited_us.saturating_add(other.rwnd_limited_us);
        self.sndbuf_limited_us = self
            .sndbuf_limited_us
            .saturating_add(other.sndbuf_limited_us);
        self.pmtu = match (self.pmtu, other.pmtu) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.dsack_dups = self.dsack_dups.saturating_add(other.dsack_dups);
        let pick = |a: Option<u32>, b: Option<u32>, f: fn(u32, u32) -> u32| match (a, b) {
            (Some(a), Some(b)) => Some(f(a, b)),
            (a, b) => a.or(b),
        };
        self.mss = pick(self.mss, other.mss, u32::min);
        self.srtt_us = pick(self.srtt_us, other.srtt_us, u32::max);
        self.rtt_us = self.rtt_us.or(other.rtt_us);
        self.min_rtt_us = pick(self.min_rtt_us, other.min_rtt_us, u32::min);
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.rto_timeouts = sum(self.rto_timeouts, other.rto_timeouts);
        self.rto_time_ms = sum(self.rto_time_ms, other.rto_time_ms);
        self.snd_wnd = match (self.snd_wnd, other.snd_wnd) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
    }

    /// The counters accumulated between an earlier reading and this one (`TCP_INFO` counts from
    /// the connection's start); pmtu, MSS, RTTs (the smallest too) and the window are this
    /// reading's.
    pub fn since(&self, earlier: &TcpLimits) -> TcpLimits {
        TcpLimits {
            busy_us: self.busy_us.saturating_sub(earlier.busy_us),
            rwnd_limited_us: self.rwnd_limited_us.saturating_sub(earlier.rwnd_limited_us),
            sndbuf_limited_us: self
                .sndbuf_limited_us
                .saturating_sub(earlier.sndbuf_limited_us),
            pmtu: self.pmtu,
            dsack_dups: self.dsack_dups.saturating_sub(earlier.dsack_dups),
            mss: self.mss,
            srtt_us: self.srtt_us,
            rtt_us: self.rtt_us,
            min_rtt_us: self.min_rtt_us,
            snd_wnd: self.snd_wnd,
            rto_timeouts: self
                .rto_timeouts
                .map(|t| t.saturating_sub(earlier.rto_timeouts.unwrap_or(0))),
            rto_time_ms: self
                .rto_time_ms
                .map(|t| t.saturating_sub(earlier.rto_time_ms.unwrap_or(0))),
        }
    }

    /// Share of busy time limited by the receive window.
    pub fn rwnd_share(&self) -> Percent {
        Percent::of(self.rwnd_limited_us, self.busy_us)
    }

    /// Share of busy time limited by the send buffer.
    pub fn sndbuf_share(&self) -> Percent {
        Percent::of(self.sndbuf_limited_us, self.busy_us)
    }
}

/// One interval (or the whole test) at one end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalObservation {
    /// Seconds since the start of the test, when the engine stamped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<f64>,
    /// The CPUs that did work (see [`CpuUse`]; idle CPUs are left out), ascending.
    pub cpus: Vec<CpuUse>,
    /// The workers and where they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerRun>,
    /// `TCP_INFO` limits over the interval, when the engine passed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpLimits>,
    /// The worker threads' own scheduling over the interval (their `schedstat`), when the
    /// observed process is this end's (absent on a captured tree).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadUse>,
    /// The receive path's own drops at this end over the interval, when observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_drops: Option<RxDrops>,
    /// The current frequency of the workers' CPUs when the interval closed (the whole test's
    /// total only), for the cost in cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_freq: Option<CpuFreq>,
    /// The worker threads' own CPU time, user + system over each worker's whole life
    /// (`getrusage(RUSAGE_THREAD)` as it ends), seconds (the whole test's total only: the engine
    /// adds it once the workers have joined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_cpu_s: Option<f64>,
    /// What observing cost this end: the reading that closed the interval (the whole test's
    /// total: every reading), when the observer measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<ObserverUse>,
}

/// The observer's own cost at one end and where it ran: the CPU time its readings took on its
/// thread (the thread's CPU clock before and after each reading, so the engine's other work on
/// that thread is not counted) and the CPUs it ran them on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObserverUse {
    /// CPU seconds spent reading and parsing (user + system).
    pub cpu_s: f64,
    /// Readings taken.
    pub readings: u32,
    /// The CPUs it ran on while reading.
    #[serde(default, with = "crate::cpuset::as_array")]
    pub cpus: CpuSet,
    /// The CPUs the test's pinned workers held, which it kept off; empty when no worker was
    /// pinned.
    #[serde(
        default,
        skip_serializing_if = "CpuSet::is_empty",
        with = "crate::cpuset::as_array"
    )]
    pub kept_off: CpuSet,
    /// Whether it had to share a CPU with a pinned worker (every CPU it may run on held one).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

impl ObserverUse {
    /// This use and a later one, as one: times and readings summed, CPUs joined.
    pub fn then(&self, later: &ObserverUse) -> ObserverUse {
        ObserverUse {
            cpu_s: self.cpu_s + later.cpu_s,
            readings: self.readings + later.readings,
            cpus: self.cpus.union(&later.cpus),
            kept_off: self.kept_off.union(&later.kept_off),
            shared: self.shared || later.shared,
        }
    }
}

/// Packets this end's host dropped on its receive path (not the network): per CPU from
/// `/proc/net/softnet_stat` (the whole host: backlog overflows and budget squeezes), and TCP's
/// receive-side drops in this end's network namespace (`/proc/net/netstat`, `TcpExt`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxDrops {
    /// CPUs with a backlog drop or a time squeeze in the interval, ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<SoftnetUse>,
    /// TCP's receive-side drops; `None` when `/proc/net/netstat` was not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpRxDrops>,
    /// UDP in this end's network namespace (`/proc/net/snmp`); `None` when not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpRx>,
}

/// UDP's receive counters (`Udp` of `/proc/net/snmp`) over an interval. Both count what the
/// socket layer saw: a GRO-merged packet of many datagrams counts once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpRx {
    /// `InDatagrams`: delivered to a socket.
    pub delivered: u64,
    /// `RcvbufErrors`: dropped because the socket's receive buffer was full (the application
    /// did not read in time).
    pub rcvbuf_errors: u64,
}

impl UdpRx {
    pub fn since(&self, earlier: &UdpRx) -> UdpRx {
        UdpRx {
            delivered: self.delivered.saturating_sub(earlier.delivered),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
        }
    }

    /// Share (%) of what reached the socket layer that its full buffer dropped.
    pub fn rcvbuf_share(&self) -> Percent {
        Percent::of(
            self.rcvbuf_errors,
            self.delivered.saturating_add(self.rcvbuf_errors),
        )
    }
}

impl RxDrops {
    /// Packets dropped by the CPUs' backlogs (`netdev_max_backlog` full).
    pub fn backlog_dropped(&self) -> u64 {
        self.cpus.iter().map(|c| c.dropped).sum()
    }

    /// Every receive-path drop counted: the CPUs' backlogs and TCP's own.
    pub fn total(&self) -> u64 {
        self.backlog_dropped()
            .saturating_add(self.tcp.map_or(0, |t| t.total()))
    }
}

/// One CPU's `/proc/net/softnet_stat` counters over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftnetUse {
    pub cpu: u32,
    /// Packets dropped because this CPU's backlog queue was full.
    pub dropped: u64,
    /// Times its NET_RX softirq ran out of budget or time with packets left (it was starved).
    pub time_squeeze: u64,
}

/// TCP's receive-side drops (`TcpExt` of `/proc/net/netstat`) over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpRxDrops {
    /// `TCPBacklogDrop`: the socket's backlog was full while its owner held the socket.
    pub backlog: u64,
    /// `TCPRcvQDrop`: no receive-buffer memory for the segment.
    pub rcvq: u64,
    /// `TCPOFODrop`: an out-of-order segment that did not fit the buffer.
    pub ofo: u64,
    /// `TCPZeroWindowDrop`: a segment beyond a zero window.
    pub zero_window: u64,
    /// `RcvPruned`: segments pruned from the receive queue under memory pressure.
    pub pruned: u64,
}

impl TcpRxDrops {
    /// The counts between an earlier reading of the cumulative counters and this one.
    pub fn since(&self, earlier: &TcpRxDrops) -> TcpRxDrops {
        TcpRxDrops {
            backlog: self.backlog.saturating_sub(earlier.backlog),
            rcvq: self.rcvq.saturating_sub(earlier.rcvq),
            ofo: self.ofo.saturating_sub(earlier.ofo),
            zero_window: self.zero_window.saturating_sub(earlier.zero_window),
            pruned: self.pruned.saturating_sub(earlier.pruned),
        }
    }

    pub fn total(&self) -> u64 {
        [
            self.backlog,
            self.rcvq,
            self.ofo,
            self.zero_window,
            self.pruned,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// One worker thread's own scheduling over an interval: the share of the interval's wall time
/// it ran, and the share it was runnable but waited for its CPU (something else ran there).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadUse {
    /// The thread's id and name (`ws-dp-cpu3`: a TCP worker pinned to CPU 3).
    pub tid: u32,
    pub name: String,
    /// The CPU it last ran on at the end of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Ran, % of the interval's wall time.
    pub run: Percent,
    /// Runnable but waiting on its CPU's run queue, % of the interval's wall time.
    pub wait: Percent,
    /// Which way its streams carried data at this end, `Sender` or `Receiver` (a worker
    /// carries one direction's: in `--bidir` each end runs a worker per direction), as the
    /// engine told the observer; absent where it was not told (or a peer's word this
    /// version does not know).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::worker::known_word"
    )]
    pub role: Option<Role>,
}

impl ThreadUse {
    /// Ran or wanted to: % of the wall time the thread needed a CPU.
    pub fn demand(&self) -> Percent {
        Percent::new(self.run.get() + self.wait.get())
    }

    /// It carried data the way an end of `role` does: a worker of that role, of a role not
    /// told, or any worker of an end that both sends and receives.
    pub fn serves(&self, role: Role) -> bool {
        role == Role::Both || self.role.is_none_or(|r| r == role)
    }
}

impl IntervalObservation {
    /// This interval and the `later` one right after it, as one (for keeping a long test's
    /// history bounded): times joined; each CPU's shares weighted by the two spans (a CPU
    /// missing from one was idle there); counters summed; the later workers, thread CPUs and
    /// path MTU.
    pub fn then(self, later: IntervalObservation) -> IntervalObservation {
        let span = |o: &IntervalObservation| match (o.start, o.end) {
            (Some(s), Some(e)) if e > s && (e - s).is_finite() => e - s,
            _ => 1.0,
        };
        let (wa, wb) = (span(&self), span(&later));
        let w = wa + wb;
        let mix = |a: f64, b: f64| Percent::new((a * wa + b * wb) / w);
        let idle = CpuUse {
            cpu: 0,
            user: Percent::new(0.0),
            system: Percent::new(0.0),
            irq: Percent::new(0.0),
            softirq: Percent::new(0.0),
            steal: Percent::new(0.0),
            idle: Percent::new(100.0),
            nic_irqs: 0,
            net_rx: 0,
            net_tx: 0,
        };
        let mut ids: Vec<u32> = self.cpus.iter().chain(&later.cpus).map(|c| c.cpu).collect();
        ids.sort_unstable();
        ids.dedup();
        let cpus = ids
            .into_iter()
            .map(|id| {
                let a = self.cpu(id).cloned().unwrap_or(CpuUse {
                    cpu: id,
                    ..idle.clone()
                });
                let b = later.cpu(id).cloned().unwrap_or(CpuUse {
                    cpu: id,
                    ..idle.clone()
                });
                CpuUse {
                    cpu: id,
                    user: mix(a.user.get(), b.user.get()),
                    system: mix(a.system.get(), b.system.get()),
                    irq: mix(a.irq.get(), b.irq.get()),
                    softirq: mix(a.softirq.get(), b.softirq.get()),
                    steal: mix(a.steal.get(), b.steal.get()),
                    idle: mix(a.idle.get(), b.idle.get()),
                    nic_irqs: a.nic_irqs.saturating_add(b.nic_irqs),
                    net_rx: a.net_rx.saturating_add(b.net_rx),
                    net_tx: a.net_tx.saturating_add(b.net_tx),
                }
            })
            .collect();
        let tcp = match (self.tcp, later.tcp) {
            (Some(mut a), Some(b)) => {
                a.add(&b);
                a.pmtu = b.pmtu.or(a.pmtu);
                Some(a)
            }
            (a, b) => b.or(a),
        };
        let threads = later
            .threads
            .iter()
            .map(|t| {
                let a = self.threads.iter().find(|x| x.tid == t.tid);
                let (ra, wa2) = a.map_or((0.0, 0.0), |a| (a.run.get(), a.wait.get()));
                ThreadUse {
                    run: mix(ra, t.run.get()),
                    wait: mix(wa2, t.wait.get()),
                    ..t.clone()
                }
            })
            .collect();
        let rx_drops = match (self.rx_drops, later.rx_drops) {
            (Some(a), Some(b)) => {
                let mut cpus = a.cpus;
                for c in b.cpus {
                    match cpus.iter_mut().find(|x| x.cpu == c.cpu) {
                        Some(x) => {
                            x.dropped = x.dropped.saturating_add(c.dropped);
                            x.time_squeeze = x.time_squeeze.saturating_add(c.time_squeeze);
                        }
                        None => cpus.push(c),
                    }
                }
                cpus.sort_by_key(|c| c.cpu);
                let sum = |x: u64, y: u64| x.saturating_add(y);
                Some(RxDrops {
                    cpus,
                    tcp: match (a.tcp, b.tcp) {
                        (Some(x), Some(y)) => Some(TcpRxDrops {
                            backlog: sum(x.backlog, y.backlog),
                            rcvq: sum(x.rcvq, y.rcvq),
                            ofo: sum(x.ofo, y.ofo),
                            zero_window: sum(x.zero_window, y.zero_window),
                            pruned: sum(x.pruned, y.pruned),
                        }),
                        (x, y) => y.or(x),
                    },
                    udp: match (a.udp, b.udp) {
                        (Some(x), Some(y)) => Some(UdpRx {
                            delivered: sum(x.delivered, y.delivered),
                            rcvbuf_errors: sum(x.rcvbuf_errors, y.rcvbuf_errors),
                        }),
                        (x, y) => y.or(x),
                    },
                })
            }
            (a, b) => b.or(a),
        };
        IntervalObservation {
            start: self.start,
            end: later.end.or(self.end),
            cpus,
            workers: if later.workers.is_empty() {
                self.workers
            } else {
                later.workers
            },
            tcp,
            threads,
            rx_drops,
            cpu_freq: later.cpu_freq.or(self.cpu_freq),
            worker_cpu_s: match (self.worker_cpu_s, later.worker_cpu_s) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => b.or(a),
            },
            observer: match (&self.observer, &later.observer) {
                (Some(a), Some(b)) => Some(a.then(b)),
                (a, b) => b.clone().or(a.clone()),
            },
        }
    }

    pub fn cpu(&self, cpu: u32) -> Option<&CpuUse> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }

    /// The CPUs any worker was seen on (the "app CPUs"): one set filled, not a new one per
    /// worker (1,024 workers on 512 CPUs).
    pub fn app_cpus(&self) -> CpuSet {
        self.workers
            .iter()
            .flat_map(|w| w.cpus_seen.iter())
            .collect()
    }

    /// Where the worker threads ran in this interval, from their own scheduling (`threads`):
    /// one worker per thread that ran, on the CPU it was last seen on, pinned when its name ends
    /// in `-cpuN` (`ws-dp-cpu3`).
    pub fn workers_from_threads(&self) -> Vec<WorkerRun> {
        self.threads
            .iter()
            .filter(|t| t.run.get() > 0.0)
            .filter_map(|t| {
                let cpu = t.cpu?;
                let pinned = t
                    .name
                    .rsplit_once("-cpu")
                    .and_then(|(_, n)| n.parse::<u32>().ok());
                Some((cpu, pinned, t.tid))
            })
            .enumerate()
            .map(|(i, (cpu, pinned, tid))| WorkerRun {
                worker: i as u32,
                cpu_requested: pinned,
                cpus_seen: CpuSet::from_cpus([cpu]),
                streams: Vec::new(),
                tid: Some(tid),
            })
            .collect()
    }

    /// Total NIC interrupts in the interval.
    pub fn nic_irq_total(&self) -> u64 {
        self.cpus.iter().map(|c| c.nic_irqs).sum()
    }

    pub fn net_rx_total(&self) -> u64 {
        self.cpus.iter().map(|c| c.net_rx).sum()
    }

    pub fn net_tx_total(&self) -> u64 {
        self.cpus.iter().map(|c| c.net_tx).sum()
    }
}

/// A CPU-time limit on the cgroup an end ran in (CFS bandwidth: cgroup v2 `cpu.max`, v1
/// `cpu.cfs_quota_us` over `cpu.cfs_period_us`; the tightest of its cgroup and those above it),
/// and how often it held the end back during the test (that cgroup's `cpu.stat`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuQuota {
    /// The cgroup holding the limit, as its hierarchy names it (`/kubepods/pod1`).
    pub cgroup: String,
    /// CPU time allowed per period, and the period, in microseconds.
    pub quota_us: u64,
    pub period_us: u64,
    /// Over the test: the periods the limit was enforced in, those in which the cgroup ran out
    /// of time, and the time its threads were held back (seconds). Absent when `cpu.stat` could
    /// not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub periods: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_s: Option<f64>,
}

impl CpuQuota {
    /// CPUs' worth of time the limit allows; `None` for a quota or period of 0, which no kernel
    /// writes (a peer's account may): the one test of a usable allowance.
    pub fn cpus(&self) -> Option<f64> {
        (self.quota_us > 0 && self.period_us > 0)
            .then(|| self.quota_us as f64 / self.period_us as f64)
    }

    /// The share of the enforced periods in which the cgroup was throttled, in %.
    pub fn throttled_share(&self) -> Option<Percent> {
        match (self.periods, self.throttled_periods) {
            (Some(p), Some(t)) if p > 0 => Some(Percent::of(t.min(p), p)),
            _ => None,
        }
    }
}

/// What one end saw over a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndObservation {
    pub role: Role,
    /// The host name, when known (for the text output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The interface that carried the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface_mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface_speed_mbps: Option<u64>,
    /// The NUMA node of the NIC (absent when the platform says -1 or has no NUMA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_numa_node: Option<u32>,
    /// The IRQ numbers counted as the NIC's.
    #[serde(default)]
    pub nic_irqs: Vec<u32>,
    /// This host's CPU topology.
    pub topology: Topology,
    /// Per interval, in order.
    #[serde(default)]
    pub intervals: Vec<IntervalObservation>,
    /// The whole test.
    pub total: IntervalObservation,
    /// What could not be observed, and why (`no /proc/softirqs`, `NIC IRQs unknown: ...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The CPU-time limit of the cgroup this end ran in, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<CpuQuota>,
    /// What the interface is, where the observer could tell: a real NIC, or a link whose speed
    /// is nominal (lo, veth, bridges, tunnels, virtio) and never a line to reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface_link: Option<LinkKind>,
    /// The devices beneath the test's interface when it is an upper device (a bond, a VLAN, a
    /// bridge): the bond's mode and hash policy and each member's speed and state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface_stack: Option<IfaceStack>,
}

/// What kind of link an end's interface is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkKind {
    /// A PCI network function: its speed is a line.
    Nic,
    /// Loopback, or a device without a PCI function (veth, bridge, tunnel): its speed is
    /// nominal.
    Virtual,
    /// A virtio NIC: its speed is what the hypervisor says, not a line.
    Virtio,
}

impl LinkKind {
    /// Its speed is nominal, not a line.
    pub fn is_virtual(self) -> bool {
        !matches!(self, LinkKind::Nic)
    }
}

/// The interface a test's route uses, when it is an upper device (a VLAN, a bond, a bridge, a
/// macvlan): what it is made of, down to the NICs beneath it. Plain data the observer fills
/// (`wirespeed-observe`'s `nic`) from the host's resolver, for a verdict to read: a rate held
/// at one member's speed on a bond of several is the per-host-pair (or per-flow) limit of its
/// hash policy, not the link's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaceStack {
    /// The interface the route uses (`bond0.100`).
    pub iface: String,
    /// The layers from the top down, each as `name kind` (`bond0.100 vlan`, `bond0 bond`).
    pub layers: Vec<String>,
    /// The bond (or team) in the stack, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bond: Option<StackBond>,
    /// The NICs (and other leaves) beneath it, in the resolver's order.
    pub members: Vec<StackMember>,
}

/// A bond of an [`IfaceStack`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackBond {
    pub name: String,
    /// `802.3ad`, `balance-xor`, `active-backup`…; `None` for a team or when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `layer2`, `layer2+3`, `layer3+4`…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xmit_hash_policy: Option<String>,
}

impl StackBond {
    /// The mode hashes flows onto members (802.3ad, balance-xor): one flow rides one member.
    pub fn hashes(&self) -> bool {
        matches!(self.mode.as_deref(), Some("802.3ad" | "balance-xor"))
    }

    /// The hash policy puts every flow between one pair of hosts on one member (`layer2`,
    /// `layer2+3`, `encap2+3`, `vlan+srcmac`).
    pub fn per_host_pair(&self) -> bool {
        self.hashes()
            && matches!(
                self.xmit_hash_policy.as_deref(),
                Some("layer2" | "layer2+3" | "encap2+3" | "vlan+srcmac")
            )
    }
}

/// One device beneath an [`IfaceStack`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackMember {
    pub name: String,
    /// Link speed, Mbit/s; `None` when down or unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// Up (its link, and for a bond member its MII status).
    pub up: bool,
    /// Backed by a PCI function (a NIC), not a veth or another virtual device.
    pub nic: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// Its interrupt vectors counted as the test's NIC IRQs.
    #[serde(default)]
    pub irqs: Vec<u32>,
}

impl IfaceStack {
    /// The members of the bond that are up, when the stack has a bond.
    pub fn bond_members_up(&self) -> Vec<&StackMember> {
        if self.bond.is_none() {
            return Vec::new();
        }
        self.members.iter().filter(|m| m.up).collect()
    }

    /// The fastest single member's speed, when the stack has a bond of two or more members up
    /// whose speeds are known: the most one flow (or, with a per-host-pair policy, one pair of
    /// hosts) can get.
    pub fn one_member_ceiling_mbps(&self) -> Option<u64> {
        let up = self.bond_members_up();
        if up.len() < 2 {
            return None;
        }
        up.iter()
            .map(|m| m.speed_mbps)
            .collect::<Option<Vec<u64>>>()?
            .into_iter()
            .max()
    }

    /// The sum of the bond's members' speeds that are up.
    pub fn bond_speed_mbps(&self) -> Option<u64> {
        let up = self.bond_members_up();
        if up.is_empty() {
            return None;
        }
        up.iter().map(|m| m.speed_mbps).sum()
    }
}

/// Both ends of a test. The remote end is absent, with the reason, when the peer is iperf3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestObservation {
    pub local: EndObservation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<EndObservation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_absent: Option<String>,
}

impl TestObservation {
    /// A test with only the local end observed (`reason`: why the remote one is missing).
    pub fn local_only(local: EndObservation, reason: impl Into<String>) -> TestObservation {
        TestObservation {
            local,
            remote: None,
            remote_absent: Some(reason.into()),
        }
    }

    /// Join the local end with what the peer sent (the `observation` of its protocol
    /// extension): absent with the reason when the peer is not wirespeed, sent nothing, or sent
    /// something that does not parse (`remote` is then `Err` with the decoder's words).
    pub fn combine(
        local: EndObservation,
        remote: Result<Option<&EndObservation>, &str>,
        peer_is_wirespeed: bool,
    ) -> TestObservation {
        let absent = |r: &str| TestObservation::local_only(local.clone(), r);
        match remote {
            _ if !peer_is_wirespeed => {
                absent("the peer is not wirespeed (iperf3 sends no observation)")
            }
            Ok(None) => absent("the peer sent no observation"),
            Err(e) => absent(&format!("the peer's observation does not parse: {e}")),
            Ok(Some(r)) => TestObservation {
                local,
                remote: Some(r.clone()),
                remote_absent: None,
            },
        }
    }

    pub fn ends(&self) -> impl Iterator<Item = &EndObservation> {
        std::iter::once(&self.local).chain(self.remote.as_ref())
    }

    /// The end that received (the first one, for `--bidir`).
    pub fn receiver(&self) -> Option<&EndObservation> {
        self.ends()
            .find(|e| e.role == Role::Receiver)
            .or_else(|| self.ends().find(|e| e.role.receives()))
    }

    /// The end that sent.
    pub fn sender(&self) -> Option<&EndObservation> {
        self.ends()
            .find(|e| e.role == Role::Sender)
            .or_else(|| self.ends().find(|e| e.role.sends()))
    }
}

/// Most intervals a [`RunningEnd`] keeps (its totals count every interval).
pub const RUNNING_INTERVALS: usize = 300;

/// Most distinct CPUs a [`RunningEnd`] accumulates (CPUs past it are left out).
pub const RUNNING_CPUS: usize = 8192;

/// Where a CPU frequency came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuFreq {
    /// Mean current frequency of the CPUs read, MHz.
    pub mhz: f64,
    /// The file it was read from: `cpufreq scaling_cur_freq` or `/proc/cpuinfo cpu MHz`.
    pub source: String,
    /// The CPUs whose frequency was averaged.
    #[serde(default, with = "crate::cpuset::as_array")]
    pub cpus: CpuSet,
}

impl EndObservation {
    /// Both ends observed on one host: the same host name and topology.
    pub fn on_same_host(&self, other: &EndObservation) -> bool {
        fn host(e: &EndObservation) -> Option<&str> {
            e.host.as_deref().map(str::trim)
        }
        host(self).is_some() && host(self) == host(other) && self.topology == other.topology
    }
}

impl TestObservation {
    /// Both ends on one host: `Some(where)` — over `lo`, or the same host name and topology.
    pub fn same_host(&self) -> Option<String> {
        let host = self.local.host.as_deref().map(str::trim);
        if self.ends().any(|e| e.iface.as_deref() == Some("lo")) {
            return Some(host.map_or("over lo".into(), |h| format!("{h}, over lo")));
        }
        let r = self.remote.as_ref()?;
        self.local
            .on_same_host(r)
            .then(|| host.unwrap_or_default().to_string())
    }
}

impl EndObservation {
    /// The parts of this end known before any interval (interface, NIC IRQs, topology, notes):
    /// a copy without intervals and with an empty total.
    pub fn head(&self) -> EndObservation {
        EndObservation {
            intervals: Vec::new(),
            total: IntervalObservation::default(),
            ..self.clone()
        }
    }
}

/// One end's observation while its test runs: its head (see [`EndObservation::head`]) and the
/// intervals so far, with totals over all of them: per CPU the shares weighted by each
/// interval's length (a CPU missing from an interval was idle in it), interrupt and softirq
/// counts summed, the workers of the latest interval, the `TCP_INFO` limits summed. Bounded: the
/// last [`RUNNING_INTERVALS`] intervals are kept and at most [`RUNNING_CPUS`] CPUs counted.
#[derive(Debug, Clone)]
pub struct RunningEnd {
    end: EndObservation,
    /// Per CPU: weighted user, system, irq, softirq, steal; then NIC IRQs, NET_RX, NET_TX.
    acc: std::collections::BTreeMap<u32, ([f64; 5], [u64; 3])>,
    weight: f64,
    seen: u64,
}

impl RunningEnd {
    /// Start from an end's head (its intervals and total are dropped).
    pub fn new(head: EndObservation) -> RunningEnd {
        RunningEnd {
            end: head.head(),
            acc: Default::default(),
            weight: 0.0,
            seen: 0,
        }
    }

    /// Replace the head, keeping the intervals and totals.
    pub fn set_head(&mut self, head: &EndObservation) {
        let intervals = std::mem::take(&mut self.end.intervals);
        let total = std::mem::take(&mut self.end.total);
        self.end = head.head();
        self.end.intervals = intervals;
        self.end.total = total;
    }

    /// Intervals pushed so far.
    pub fn intervals_seen(&self) -> u64 {
        self.seen
    }

    /// The observation so far.
    pub fn observation(&self) -> &EndObservation {
        &self.end
    }

    /// Add the next interval.
    pub fn push(&mut self, iv: IntervalObservation) {
        let span = match (iv.start, iv.end) {
            (Some(s), Some(e)) if e > s && (e - s).is_finite() => e - s,
            _ => 1.0,
        };
        self.weight += span;
        for c in &iv.cpus {
            if !self.acc.contains_key(&c.cpu) && self.acc.len() >= RUNNING_CPUS {
                continue;
            }
            let (shares, counts) = self.acc.entry(c.cpu).or_default();
            for (a, p) in shares
                .iter_mut()
                .zip([c.user, c.system, c.irq, c.softirq, c.steal])
            {
                *a += p.get() * span;
            }
            for (a, n) in counts.iter_mut().zip([c.nic_irqs, c.net_rx, c.net_tx]) {
                *a = a.saturating_add(n);
            }
        }
        let total = &mut self.end.total;
        total.start = total.start.or(iv.start);
        if iv.end.is_some() {
            total.end = iv.end;
        }
        let w = self.weight;
        total.cpus = self
            .acc
            .iter()
            .map(|(&cpu, (s, n))| {
                let share = |v: f64| Percent::new(v / w);
                let busy: f64 = s.iter().map(|v| share(*v).get()).sum();
                CpuUse {
                    cpu,
                    user: share(s[0]),
                    system: share(s[1]),
                    irq: share(s[2]),
                    softirq: share(s[3]),
                    steal: share(s[4]),
                    idle: Percent::new(100.0 - busy),
                    nic_irqs: n[0],
                    net_rx: n[1],
                    net_tx: n[2],
                }
            })
            .collect();
        if !iv.workers.is_empty() {
            total.workers = iv.workers.clone();
        }
        if let Some(t) = &iv.tcp {
            match &mut total.tcp {
                Some(sum) => sum.add(t),
                None => total.tcp = Some(*t),
            }
        }
        self.seen += 1;
        self.end.intervals.push(iv);
        if self.end.intervals.len() > RUNNING_INTERVALS {
            self.end.intervals.remove(0);
        }
    }
}

#[cfg(test)]
mod stack_tests {
    use super::*;

    fn member(name: &str, speed: Option<u64>, up: bool) -> StackMember {
        StackMember {
            name: name.into(),
            speed_mbps: speed,
            up,
            nic: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_bonds_ceiling_is_one_members_speed() {
        let mut s = IfaceStack {
            iface: "bond0".into(),
            layers: vec!["bond0 bond".into()],
            bond: Some(StackBond {
                name: "bond0".into(),
                mode: Some("802.3ad".into()),
                xmit_hash_policy: Some("layer2".into()),
            }),
            members: vec![
                member("a", Some(100_000), true),
                member("b", Some(100_000), true),
            ],
        };
        assert!(s.bond.as_ref().unwrap().per_host_pair());
        assert_eq!(s.one_member_ceiling_mbps(), Some(100_000));
        assert_eq!(s.bond_speed_mbps(), Some(200_000));
        // one member down: no ceiling below the bond's own speed
        s.members[1].up = false;
        assert_eq!(s.one_member_ceiling_mbps(), None);
        // an unknown speed: unknown, not zero
        s.members[1] = member("b", None, true);
        assert_eq!(s.one_member_ceiling_mbps(), None);
        let b = StackBond {
            mode: Some("active-backup".into()),
            xmit_hash_policy: Some("layer2".into()),
            ..Default::default()
        };
        assert!(!b.per_host_pair());
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<IfaceStack>(&j).unwrap(), s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker thread says which way its streams carried data in one word; a thread whose
    /// engine did not say (an older peer, a capture) has none, and a word this version does
    /// not know costs nothing else of the reading. It serves its own role's end, and any end
    /// where it does not say or where the end both sends and receives.
    #[test]
    fn a_threads_role_is_one_word_absent_when_unsaid_and_serves_its_ends_role() {
        let t = ThreadUse {
            tid: 7,
            name: "ws-dp".into(),
            cpu: Some(1),
            run: Percent::new(40.0),
            wait: Percent::new(2.0),
            role: Some(Role::Receiver),
        };
        let text = serde_json::to_string(&t).expect("serialize");
        assert!(text.contains(r#""role":"receiver""#), "{text}");
        assert_eq!(serde_json::from_str::<ThreadUse>(&text).expect("parse"), t);
        let bare = r#"{"tid":7,"name":"ws-dp","run":40.0,"wait":2.0"#;
        let old: ThreadUse = serde_json::from_str(&format!("{bare}}}")).expect("parse");
        assert_eq!(old.role, None);
        assert!(!serde_json::to_string(&old)
            .expect("serialize")
            .contains("role"));
        for odd in [r#""spin""#, "7", "null"] {
            let u: ThreadUse =
                serde_json::from_str(&format!(r#"{bare},"role":{odd}}}"#)).expect("parse");
            assert_eq!(
                (u.role, u.tid, u.run),
                (None, 7, Percent::new(40.0)),
                "{odd}"
            );
        }
        assert!(t.serves(Role::Receiver) && t.serves(Role::Both) && !t.serves(Role::Sender));
        assert!(old.serves(Role::Sender) && old.serves(Role::Receiver));
    }

    #[test]
    fn two_intervals_merge_weighted_by_their_spans() {
        let cpu = |id: u32, sys: f64, rx: u64| CpuUse {
            cpu: id,
            user: Percent::new(0.0),
            system: Percent::new(sys),
            irq: Percent::new(0.0),
            softirq: Percent::new(0.0),
            steal: Percent::new(0.0),
            idle: Percent::new(100.0 - sys),
            nic_irqs: 0,
            net_rx: rx,
            net_tx: 0,
        };
        let a = IntervalObservation {
            start: Some(0.0),
            end: Some(1.0),
            cpus: vec![cpu(1, 90.0, 10)],
            ..Default::default()
        };
        let b = IntervalObservation {
            start: Some(1.0),
            end: Some(4.0),
            cpus: vec![cpu(1, 10.0, 5), cpu(2, 40.0, 1)],
            ..Default::default()
        };
        let m = a.then(b);
        assert_eq!((m.start, m.end), (Some(0.0), Some(4.0)));
        let c1 = m.cpu(1).unwrap();
        assert_eq!((c1.system.get(), c1.net_rx), (30.0, 15));
        let c2 = m.cpu(2).unwrap();
        assert_eq!((c2.system.get(), c2.idle.get()), (30.0, 70.0));
    }

    #[test]
    fn percent_is_finite_clamped_and_rounded() {
        assert_eq!(Percent::of(1, 3).get(), 33.3);
        assert_eq!(Percent::of(5, 0).get(), 0.0);
        assert_eq!(Percent::new(f64::NAN).get(), 0.0);
        assert_eq!(Percent::new(120.0).get(), 100.0);
        assert_eq!(Percent::new(99.96).to_string(), "100 %");
        assert_eq!(Percent::new(44.25).to_string(), "44.3 %");
        assert_eq!(serde_json::to_string(&Percent::new(2.0)).unwrap(), "2.0");
    }

    #[test]
    fn dominant_component_and_busy() {
        let c = CpuUse {
            cpu: 3,
            system: Percent::new(70.0),
            softirq: Percent::new(29.0),
            idle: Percent::new(1.0),
            ..Default::default()
        };
        assert_eq!(c.dominant(), ("system", Percent::new(70.0)));
        assert_eq!(c.busy().get(), 99.0);
    }

    #[test]
    fn tcp_limits_add_and_share() {
        let mut a = TcpLimits {
            busy_us: 1000,
            rwnd_limited_us: 500,
            sndbuf_limited_us: 0,
            pmtu: Some(9000),
            dsack_dups: 0,
            min_rtt_us: Some(40),
            ..Default::default()
        };
        a.add(&TcpLimits {
            busy_us: 1000,
            rwnd_limited_us: 0,
            sndbuf_limited_us: 100,
            pmtu: Some(1500),
            dsack_dups: 0,
            min_rtt_us: Some(25),
            ..Default::default()
        });
        assert_eq!(a.rwnd_share().get(), 25.0);
        assert_eq!(a.sndbuf_share().get(), 5.0);
        assert_eq!(a.pmtu, Some(1500));
        // the path's base RTT is the smallest any stream saw; a stream that does not say
        // leaves it as it was
        assert_eq!(a.min_rtt_us, Some(25));
        a.add(&TcpLimits::default());
        assert_eq!(a.min_rtt_us, Some(25));
        let later = TcpLimits {
            min_rtt_us: Some(20),
            ..a
        };
        assert_eq!(later.since(&a).min_rtt_us, Some(20));
    }

    #[test]
    fn combine_takes_the_peers_observation_or_says_why_not() {
        let local = EndObservation {
            role: Role::Sender,
            host: None,
            iface: Some("lo".into()),
            iface_mtu: Some(65536),
            iface_speed_mbps: None,
            nic_numa_node: None,
            nic_irqs: vec![],
            topology: Topology::default(),
            intervals: vec![],
            total: IntervalObservation::default(),
            notes: vec![],
            cpu_quota: None,
            iface_link: None,
            iface_stack: None,
        };
        let mut remote = local.clone();
        remote.role = Role::Receiver;
        let t = TestObservation::combine(local.clone(), Ok(Some(&remote)), true);
        assert_eq!(t.remote.as_ref(), Some(&remote));
        assert_eq!(t.receiver().map(|e| e.role), Some(Role::Receiver));
        let t = TestObservation::combine(local.clone(), Ok(None), false);
        assert!(t.remote_absent.unwrap().contains("iperf3"));
        let t = TestObservation::combine(local.clone(), Ok(None), true);
        assert_eq!(
            t.remote_absent.as_deref(),
            Some("the peer sent no observation")
        );
        let t = TestObservation::combine(local, Err("unknown variant `sideways`"), true);
        assert!(t
            .remote_absent
            .unwrap()
            .starts_with("the peer's observation does not parse"));
    }

    #[test]
    fn throughput_prints_in_gbit() {
        assert_eq!(BitsPerSecond::from_gbps(98.8).to_string(), "98.8 Gbit/s");
        assert_eq!(BitsPerSecond(2.5e6).to_string(), "2.5 Mbit/s");
    }

    #[test]
    fn a_running_end_weights_shares_by_time_and_stays_bounded() {
        let head = EndObservation {
            role: Role::Receiver,
            host: None,
            iface: Some("eth1".into()),
            iface_mtu: None,
            iface_speed_mbps: None,
            nic_numa_node: None,
            nic_irqs: vec![40],
            topology: Topology::default(),
            intervals: vec![IntervalObservation::default()],
            total: IntervalObservation::default(),
            notes: vec![],
            cpu_quota: None,
            iface_link: None,
            iface_stack: None,
        };
        let mut r = RunningEnd::new(head.clone());
        assert!(r.observation().intervals.is_empty());
        let cpu = |n: u32, sys: f64, irqs: u64| CpuUse {
            cpu: n,
            system: Percent::new(sys),
            idle: Percent::new(100.0 - sys),
            nic_irqs: irqs,
            ..Default::default()
        };
        r.push(IntervalObservation {
            start: Some(0.0),
            end: Some(1.0),
            cpus: vec![cpu(2, 90.0, 10)],
            ..Default::default()
        });
        // CPU 2 absent (idle) in a 3 s interval, CPU 5 busy.
        r.push(IntervalObservation {
            start: Some(1.0),
            end: Some(4.0),
            cpus: vec![cpu(5, 40.0, 5)],
            workers: vec![WorkerRun {
                worker: 0,
                cpu_requested: Some(5),
                cpus_seen: CpuSet::from_cpus([5]),
                streams: vec![1],
                tid: None,
            }],
            ..Default::default()
        });
        let t = &r.observation().total;
        assert_eq!((t.start, t.end), (Some(0.0), Some(4.0)));
        assert_eq!(t.cpu(2).unwrap().system.get(), 22.5);
        assert_eq!(t.cpu(2).unwrap().idle.get(), 77.5);
        assert_eq!(t.cpu(5).unwrap().system.get(), 30.0);
        assert_eq!(t.nic_irq_total(), 15);
        assert_eq!(t.app_cpus(), CpuSet::from_cpus([5]));
        assert_eq!(r.observation().iface.as_deref(), Some("eth1"));
        for i in 0..(RUNNING_INTERVALS as u32 + 10) {
            r.push(IntervalObservation {
                cpus: vec![cpu(10_000 + i, 1.0, 0)],
                ..Default::default()
            });
        }
        assert_eq!(r.observation().intervals.len(), RUNNING_INTERVALS);
        assert_eq!(r.intervals_seen(), RUNNING_INTERVALS as u64 + 12);
        let mut other = head;
        other.iface = Some("eth2".into());
        r.set_head(&other);
        assert_eq!(r.observation().iface.as_deref(), Some("eth2"));
        assert_eq!(r.observation().intervals.len(), RUNNING_INTERVALS);
    }
}
