//! Text renderers of what wirespeed adds under a test: where the work ran (a compact per-CPU
//! table of the CPUs that did work at each observed end, and the verdict) and what a server's
//! IRQ move did. Pure: model in, text out to any `io::Write`.

use std::io::{self, Write};

use wirespeed_model::observation::{EndObservation, IntervalObservation, Role, TestObservation};
use wirespeed_model::text::terminal;
use wirespeed_model::topology::Topology;
use wirespeed_model::units;
use wirespeed_model::{CpuSet, MoveReport, Verdict};

use crate::model::TestResult;

fn role_word(r: Role) -> &'static str {
    match r {
        Role::Sender => "sender",
        Role::Receiver => "receiver",
        Role::Both => "sender+receiver",
    }
}

/// The heading of one end: `receiver crow via enp1s0f0np0 (13 NIC IRQs)`.
pub fn end_heading(e: &EndObservation) -> String {
    let mut s = role_word(e.role).to_string();
    if let Some(h) = &e.host {
        s.push(' ');
        s.push_str(h);
    }
    if let Some(i) = &e.iface {
        s.push_str(" via ");
        s.push_str(i);
    }
    if !e.nic_irqs.is_empty() {
        s.push_str(&format!(" ({} NIC IRQs)", e.nic_irqs.len()));
    }
    s
}

/// The per-CPU table of one interval (or the whole test): the CPUs that did work, with their
/// time shares, the NIC's interrupts, NET_RX/NET_TX softirqs, the L3 group (and node when the
/// host has several) and the workers that ran there.
pub fn write_cpu_table<W: Write + ?Sized>(
    w: &mut W,
    obs: &IntervalObservation,
    topo: &Topology,
    indent: &str,
) -> io::Result<()> {
    let multi_node = topo.nodes.iter().filter(|n| !n.is_empty()).count() > 1;
    write!(
        w,
        "{indent}{:>4} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>9} {:>9} {:>9} {:>3}",
        "CPU", "usr", "sys", "irq", "sirq", "steal", "idle", "NIC-IRQ", "NET_RX", "NET_TX", "L3"
    )?;
    if multi_node {
        write!(w, " {:>4}", "node")?;
    }
    writeln!(w, "  work")?;
    for c in &obs.cpus {
        let l3 = topo
            .l3_of(c.cpu)
            .map_or_else(|| "-".to_string(), |g| g.to_string());
        write!(w, "{indent}{:>4}", c.cpu)?;
        for (_, share) in c.shares() {
            write!(w, " {:>5.1}", share.get())?;
        }
        write!(
            w,
            " {:>9} {:>9} {:>9} {:>3}",
            c.nic_irqs, c.net_rx, c.net_tx, l3
        )?;
        if multi_node {
            let n = topo
                .node_of(c.cpu)
                .map_or_else(|| "-".to_string(), |n| n.to_string());
            write!(w, " {n:>4}")?;
        }
        let workers: Vec<String> = obs
            .workers
            .iter()
            .filter(|wk| wk.cpus_seen.contains(c.cpu))
            .map(|wk| format!("worker {}", wk.worker))
            .collect();
        if workers.is_empty() {
            writeln!(w)?;
        } else {
            writeln!(w, "  {}", workers.join(", "))?;
        }
    }
    if obs.cpus.is_empty() {
        writeln!(w, "{indent}(no CPU did measurable work)")?;
    }
    if let Some(t) = &obs.tcp {
        write!(
            w,
            "{indent}TCP_INFO: receive-window-limited {}, send-buffer-limited {} of busy time",
            t.rwnd_share(),
            t.sndbuf_share()
        )?;
        if let Some(p) = t.pmtu {
            write!(w, ", path MTU {p}")?;
        }
        writeln!(w)?;
    }
    Ok(())
}

/// One end's whole-test table with its heading, one line per interval (when there are several)
/// and the notes.
pub fn write_end<W: Write + ?Sized>(w: &mut W, e: &EndObservation) -> io::Result<()> {
    write_end_of(w, e, None)
}

/// [`write_end`] with the heading prefixed by which end it is (`this end`, `the peer`): with
/// `--bidir` both ends are sender+receiver, and the role alone does not tell them apart.
fn write_end_of<W: Write + ?Sized>(
    w: &mut W,
    e: &EndObservation,
    who: Option<&str>,
) -> io::Result<()> {
    match who {
        Some(who) => writeln!(
            w,
            "{who}, {}: CPUs that did work",
            terminal(&end_heading(e))
        )?,
        None => writeln!(w, "{}: CPUs that did work", terminal(&end_heading(e)))?,
    }
    write_cpu_table(w, &e.total, &e.topology, "  ")?;
    let timed: Vec<&IntervalObservation> = e
        .intervals
        .iter()
        .filter(|i| matches!((i.start, i.end), (Some(s), Some(t)) if t - s >= 0.05))
        .collect();
    if timed.len() > 1 {
        for i in timed {
            writeln!(
                w,
                "  {:>6.2}-{:<6.2} sec  {}",
                i.start.unwrap_or(0.0),
                i.end.unwrap_or(0.0),
                interval_line(i)
            )?;
        }
    }
    for n in &e.notes {
        writeln!(w, "  note: {}", terminal(n))?;
    }
    Ok(())
}

/// One line per interval: the CPUs at least 10 % busy, busiest first, with their main component
/// and NIC interrupts: `CPU 6 98 % (96 sys) | CPU 3 60 % (57 sirq, 2040000 NIC IRQs)`.
pub fn interval_line(obs: &IntervalObservation) -> String {
    let mut cpus: Vec<&wirespeed_model::observation::CpuUse> =
        obs.cpus.iter().filter(|c| c.busy().get() >= 10.0).collect();
    cpus.sort_by(|a, b| b.busy().get().total_cmp(&a.busy().get()));
    if cpus.is_empty() {
        return "no CPU at 10 % or more".to_string();
    }
    cpus.iter()
        .map(|c| {
            let (what, p) = c.dominant();
            let short = match what {
                "system" => "sys",
                "softirq" => "sirq",
                "user" => "usr",
                other => other,
            };
            let mut s = format!("CPU {} {} ({:.0} {short}", c.cpu, c.busy(), p.get());
            if c.nic_irqs > 0 {
                s.push_str(&format!(", {} NIC IRQs", c.nic_irqs));
            }
            s.push(')');
            s
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The "where the work ran" block under a test: each observed end's table, what is missing and
/// the verdict.
pub fn write_test<W: Write + ?Sized>(
    w: &mut W,
    test: &TestObservation,
    verdict: Option<&Verdict>,
) -> io::Result<()> {
    writeln!(w, "Where the work ran:")?;
    for (i, e) in test.ends().enumerate() {
        let who = (e.role == Role::Both).then_some(if i == 0 { "this end" } else { "the peer" });
        write_end_of(w, e, who)?;
    }
    write_absent_and_verdict(w, test, verdict)
}

/// What both forms end with: the peer that was not observed, the verdict, its evidence and its
/// `also`s (peer-sourced text made safe for a terminal).
fn write_absent_and_verdict<W: Write + ?Sized>(
    w: &mut W,
    test: &TestObservation,
    verdict: Option<&Verdict>,
) -> io::Result<()> {
    if let Some(r) = &test.remote_absent {
        writeln!(w, "peer: not observed ({})", terminal(r))?;
    }
    if let Some(v) = verdict {
        writeln!(w, "Verdict: {}", terminal(&v.line))?;
        if let Some(e) = &v.evidence {
            writeln!(w, "  {}", terminal(&evidence_line(e)))?;
        }
        for a in &v.also {
            writeln!(w, "  also: {}", terminal(a))?;
        }
    }
    Ok(())
}

/// The short form of [`write_test`]: one line per end (its busiest CPUs, from the whole-test
/// table), one line for both when they are one host (the same CPUs, observed twice), then the
/// verdict and its `also`s.
pub fn write_test_brief<W: Write + ?Sized>(
    w: &mut W,
    test: &TestObservation,
    verdict: Option<&Verdict>,
) -> io::Result<()> {
    let one_host = test.remote.as_ref().is_some_and(|r| {
        r.host.is_some() && r.host == test.local.host && r.topology == test.local.topology
    });
    if one_host {
        let e = &test.local;
        let mut place = e.host.clone().unwrap_or_default();
        if let Some(i) = &e.iface {
            place.push_str(&format!(" via {i}"));
        }
        writeln!(
            w,
            "Where the work ran: both ends on {}: {}",
            terminal(&place),
            interval_line(&e.total)
        )?;
    } else {
        for (i, e) in test.ends().enumerate() {
            let who = if i == 0 { "this end" } else { "the peer" };
            writeln!(
                w,
                "Where the work ran ({who}, {}): {}",
                terminal(&end_heading(e)),
                interval_line(&e.total)
            )?;
        }
    }
    write_absent_and_verdict(w, test, verdict)
}

/// What a verdict rests on, in one line: `evidence: 4 of 4 intervals agreed (clear); read:
/// /proc/stat per-CPU time, ...`.
pub fn evidence_line(e: &wirespeed_model::Evidence) -> String {
    let how = match e.intervals {
        Some(a) => format!(
            "{} of {} intervals agreed ({})",
            a.agreed,
            a.of,
            e.confidence.words()
        ),
        None => format!("{} (no per-interval reading)", e.confidence.words()),
    };
    format!("evidence: {how}; read: {}", e.counters.join(", "))
}

/// Under a test's text summary: where the work ran (both ends' tables and the verdict) and, when
/// a server moved its NIC's queue IRQs for the test, what it did. Nothing when the result
/// carries neither.
pub fn write_where<W: Write + ?Sized>(w: &mut W, r: &TestResult) -> io::Result<()> {
    write_where_as(w, r, true)
}

/// [`write_where`] with the full tables (`tables`: `--where`, `-V`) or one line per end
/// ([`write_test_brief`]), the default.
pub fn write_where_as<W: Write + ?Sized>(
    w: &mut W,
    r: &TestResult,
    tables: bool,
) -> io::Result<()> {
    let Some(x) = &r.wirespeed else {
        return Ok(());
    };
    if let Some(obs) = &x.observation {
        if tables {
            write_test(w, obs, x.verdict.as_ref())?;
        } else {
            write_test_brief(w, obs, x.verdict.as_ref())?;
        }
    }
    for line in x.ceiling.iter().flat_map(ceiling_lines) {
        writeln!(w, "{line}")?;
    }
    if let Some(c) = &x.cost {
        writeln!(w, "{}", cost_line(c))?;
    }
    for (m, who) in [(&x.irq_move, ""), (&x.remote_irq_move, "server ")] {
        if let Some(m) = m {
            writeln!(w, "{who}{}", terminal(&describe_move(m)))?;
        }
    }
    Ok(())
}

/// What a client prints after iperf3's text report: with `tables` (`--where`, `-V`) the paths
/// line ([`write_paths`]) and the full tables, else one line per end ([`write_where_as`]); with
/// `why` how the verdict was decided ([`crate::why::write_why`]).
pub fn write_client_tail<W: Write + ?Sized>(
    w: &mut W,
    r: &TestResult,
    tables: bool,
    why: bool,
) -> io::Result<()> {
    if tables {
        write_paths(w, r)?;
    }
    write_where_as(w, r, tables)?;
    if let (true, Some(v)) = (why, r.verdict()) {
        writeln!(w)?;
        crate::why::write_why(w, v)?;
    }
    Ok(())
}

/// After a test's text summary with `--where`/`-V`: which send and receive paths this end used
/// and where each end's workers ran, one line (`wirespeed: local send path …; local workers: …;
/// server workers: …`). Nothing for a result without wirespeed's section.
pub fn write_paths<W: Write + ?Sized>(w: &mut W, r: &TestResult) -> io::Result<()> {
    match paths_line(r) {
        Some(line) => writeln!(w, "{line}"),
        None => Ok(()),
    }
}

fn paths_line(r: &TestResult) -> Option<String> {
    let x = r.wirespeed.as_ref()?;
    // `CPU 3 (1 stream, ran on 3), unpinned (2 streams, ran on 0-1)`, `unpinned (1 stream,
    // batch, ran on 0-1)` for a worker run under SCHED_BATCH, `CPU 1 (paired, 1 stream, batch,
    // ran on 1)` for one the pairing rule pinned. `zc`: each worker's
    // zero-copy receive counts (the server's; this end's total is in its receive-path text).
    let workers = |ws: &[wirespeed_model::Worker], zc: bool| -> String {
        ws.iter()
            .map(|w| {
                let n = w.streams.len();
                let streams = if n == 1 {
                    "1 stream".to_string()
                } else {
                    format!("{n} streams")
                };
                let at = w
                    .cpu_requested
                    .map_or_else(|| "unpinned".to_string(), |c| format!("CPU {c}"));
                let zc = w.rx_zerocopy.filter(|_| zc).map_or_else(String::new, |z| {
                    format!(
                        ", mapped {}, copied {}",
                        units::bytes(z.mapped_bytes),
                        units::bytes(z.copied_bytes)
                    )
                });
                // batch is the exception worth naming; a mark is how a worker runs otherwise
                let wake = match w.wake {
                    Some(wirespeed_model::worker::Wake::Batch) => ", batch",
                    _ => "",
                };
                // pinned by the pairing rule, not by the user
                let paired = if w.paired { "paired, " } else { "" };
                format!("{at} ({paired}{streams}{wake}, ran on {}{zc})", w.cpus_seen)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Only the paths this end used: a sender has no receive path.
    let mut paths: Vec<String> = [("send", &x.send_path), ("receive", &x.recv_path)]
        .into_iter()
        .filter_map(|(what, p)| p.as_deref().map(|p| format!("{what} path {p}")))
        .collect();
    // zero-copy receive: how the received bytes came, over all local workers
    let zc = x.workers.iter().filter_map(|w| w.rx_zerocopy);
    if let Some((m, c)) = zc
        .map(|z| (z.mapped_bytes, z.copied_bytes))
        .reduce(|a, b| (a.0 + b.0, a.1 + b.1))
    {
        if let Some(last) = paths.last_mut() {
            last.push_str(&format!(
                " ({} mapped, {} copied)",
                units::bytes(m),
                units::bytes(c),
            ));
        }
    }
    let mut s = String::from("wirespeed: ");
    if !paths.is_empty() {
        s.push_str(&format!("local {}; ", paths.join(", ")));
    }
    s.push_str(&format!("local workers: {}", workers(&x.workers, false)));
    match &x.peer {
        Some(p) if p.is_wirespeed => {
            s.push_str(&format!(
                "; server workers: {}",
                workers(&x.remote_workers, true)
            ));
        }
        _ => s.push_str("; server: iperf3 (no wirespeed extension)"),
    }
    if !x.path_fallbacks.is_empty() {
        s.push_str(&format!("; fell back: {}", x.path_fallbacks.join(", ")));
    }
    Some(s)
}

/// The warning when a client asked the server to move its NIC's IRQs (`--server-irq-cpus`,
/// `asked`) and the result says no move was made: the server is iperf3, or a wirespeed server
/// without tune requests, and ignored the request. `None` when nothing was asked or it moved.
pub fn irq_request_ignored(r: &TestResult, asked: bool) -> Option<&'static str> {
    let moved = r
        .wirespeed
        .as_ref()
        .is_some_and(|x| x.remote_irq_move.is_some());
    (asked && !moved).then_some(
        "--server-irq-cpus: the server did not move its IRQs (it is iperf3 or a wirespeed server without tune requests)",
    )
}

/// The tail of the text a server returns for iperf3's `--get-server-output`, after the lines it
/// printed live: its end summary (without the `iperf Done.` line) and where the work ran.
pub fn write_server_output_tail<W: Write + ?Sized>(w: &mut W, r: &TestResult) -> io::Result<()> {
    let mut buf = Vec::new();
    crate::text::TextRenderer::new(
        crate::text::TextContext::from_result(r),
        crate::text::TextOptions {
            done_line: false,
            ..Default::default()
        },
    )
    .end(&mut buf, r)?;
    write_where(&mut buf, r)?;
    w.write_all(&buf)
}

/// `CPU 3` or `CPUs 3-4` ([`wirespeed_model::units::cpu_list`]).
pub fn cpus_text(cpus: &CpuSet) -> String {
    wirespeed_model::units::cpu_list(cpus)
}

/// One line about a move for text output: `tune: 12 queue IRQs of enp1s0f0np0 moved to CPU 3
/// for this test (journal ...), reverted`.
pub fn describe_move(r: &MoveReport) -> String {
    let o = &r.outcome;
    let mut s = format!(
        "tune: {} queue IRQ{} of {} moved to {} for this test",
        o.moved.len(),
        if o.moved.len() == 1 { "" } else { "s" },
        r.iface,
        cpus_text(&r.cpus)
    );
    if !o.not_movable.is_empty() {
        s.push_str(&format!(
            "; {} managed by the kernel stayed put",
            o.not_movable.len()
        ));
    }
    if !o.failed.is_empty() {
        s.push_str(&format!("; {} failed", o.failed.len()));
    }
    if !o.elsewhere.is_empty() {
        let shown: Vec<String> = o
            .elsewhere
            .iter()
            .take(3)
            .map(|(irq, e)| format!("IRQ {irq} on CPU {e}"))
            .collect();
        s.push_str(&format!(
            "; the kernel reports {} of them effective elsewhere ({}{})",
            o.elsewhere.len(),
            shown.join(", "),
            if o.elsewhere.len() > 3 { ", ..." } else { "" }
        ));
    }
    if o.reverted {
        s.push_str(", reverted");
    } else {
        s.push_str(&format!(
            ", NOT reverted: run `wirespeed tune revert {}`",
            o.journal
        ));
    }
    s
}

/// The observer's own cost at one end: `observer 1.2 ms CPU on CPU 0`, `... (kept off CPUs
/// 2-3)`, `... (shared CPU 1 with a pinned worker: every CPU it may use holds one)`.
pub fn observer_text(o: &wirespeed_model::observation::ObserverUse) -> String {
    let mut s = format!("observer {:.1} ms CPU", o.cpu_s * 1e3);
    if !o.cpus.is_empty() {
        s.push_str(&format!(" on {}", cpus_text(&o.cpus)));
    }
    if o.shared {
        s.push_str(" (shared with a pinned worker: every CPU it may use holds one)");
    } else if !o.kept_off.is_empty() {
        s.push_str(&format!(" (kept off {})", cpus_text(&o.kept_off)));
    }
    s
}

/// What a bit cost, in one line: `Cost: sender 0.031 CPU-s/Gbit (one core 32.1 Gbit/s, 0.61
/// cycles/B at 2596 MHz, copy) | receiver ... | 100 Gbit/s (--rate) needs 4 sending cores
/// (CPUs 2-5), 3 receiving (CPUs 6-8)`.
pub fn cost_line(c: &wirespeed_model::Cost) -> String {
    use wirespeed_model::observation::BitsPerSecond;
    let mut parts = Vec::new();
    for (e, who) in [(&c.sender, "sender"), (&c.receiver, "receiver")] {
        let Some(e) = e else { continue };
        let mut inner = vec![format!(
            "one core {}",
            BitsPerSecond::from_gbps(e.gbps_per_core)
        )];
        if let (Some(cpb), Some(f)) = (e.cycles_per_byte, &e.freq) {
            inner.push(format!("{cpb:.2} cycles/B at {:.0} MHz", f.mhz));
        }
        inner.push(format!(
            "{:.2} s threads + {:.2} s softirq",
            e.thread_cpu_s, e.softirq_cpu_s
        ));
        if let Some(p) = &e.path {
            inner.push(p.clone());
        }
        if let Some(o) = &e.observer {
            inner.push(observer_text(o));
        }
        parts.push(format!(
            "{who} {:.4} CPU-s/Gbit ({})",
            e.cpu_s_per_gbit,
            inner.join(", ")
        ));
    }
    if let Some(p) = &c.projection {
        let mut need = Vec::new();
        for (n, cpus, verb, quota) in [
            (
                p.sender_cores,
                &p.sender_cpus,
                "sending",
                p.sender_quota_cpus,
            ),
            (
                p.receiver_cores,
                &p.receiver_cpus,
                "receiving",
                p.receiver_quota_cpus,
            ),
        ] {
            let Some(n) = n else { continue };
            let mut s = format!("{n} {verb} core{}", if n == 1 { "" } else { "s" });
            let mut notes = Vec::new();
            if !cpus.is_empty() {
                notes.push(cpus_text(cpus));
            }
            if let Some(q) = quota.filter(|q| q.is_finite() && *q > 0.0) {
                notes.push(format!(
                    "its cgroup allows {}",
                    wirespeed_model::units::cpus(q)
                ));
            }
            if !notes.is_empty() {
                s.push_str(&format!(" ({})", notes.join("; ")));
            }
            need.push(s);
        }
        // the link's rate in the words every command echoes a rate it was given with
        let rate = wirespeed_model::units::Rate::from_bps(p.rate_bps.round() as u64).map_or_else(
            || format!("{} ({})", BitsPerSecond(p.rate_bps), p.rate_source),
            |r| r.from_source(&p.rate_source),
        );
        parts.push(format!("{rate} needs {}", need.join(", ")));
    }
    format!("Cost: {}", parts.join(" | "))
}

/// The `Path model:` lines of a ceiling: its own, then (`--bidir`, where both directions'
/// models bind) the other direction's, each naming its direction.
pub fn ceiling_lines(c: &wirespeed_model::PathCeiling) -> Vec<String> {
    std::iter::once(c)
        .chain(c.other_direction.as_deref())
        .map(ceiling_line)
        .collect()
}

/// The path model's line beside a measurement: `Path model: 0.20 % loss (630 retransmits) at
/// 0.78 ms RTT, MSS 1448: Mathis ceiling 417.5 Mbit/s for loss-based TCP (measured 1.2 Gbit/s)`;
/// `Path model (server → client): ...` for one direction of a `--bidir` test.
pub fn ceiling_line(c: &wirespeed_model::PathCeiling) -> String {
    use wirespeed_model::observation::BitsPerSecond;
    let measured = c.measured_bps.map_or(String::new(), |m| {
        format!(" (measured {})", BitsPerSecond(m))
    });
    let direction = c
        .direction
        .map_or(String::new(), |f| format!(" ({})", f.words()));
    format!(
        "Path model{direction}: {:.2} % loss ({} retransmits) at {:.2} ms RTT, MSS {}: Mathis ceiling {} for loss-based TCP{measured}",
        c.loss * 100.0,
        c.retransmits,
        c.rtt_ms,
        c.mss,
        BitsPerSecond(c.mathis_bps)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::observation::{CpuUse, Percent, Role, TcpLimits, WorkerRun};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// The worker line names a worker the pairing rule pinned (`paired`), unlike one the user
    /// pinned, and says which run batch.
    #[test]
    fn the_worker_line_names_paired_workers() {
        use wirespeed_model::worker::{Wake, Worker};
        let r = TestResult {
            wirespeed: Some(crate::model::WirespeedExt {
                send_path: Some("copy".into()),
                workers: vec![
                    Worker {
                        cpu_requested: Some(1),
                        paired: true,
                        cpus_seen: set("1"),
                        streams: vec![1],
                        wake: Some(Wake::Batch),
                        ..Worker::default()
                    },
                    Worker {
                        cpu_requested: Some(0),
                        cpus_seen: set("0"),
                        streams: vec![3],
                        ..Worker::default()
                    },
                ],
                ..Default::default()
            }),
            ..TestResult::default()
        };
        let line = paths_line(&r).expect("a worker line");
        assert!(
            line.contains("CPU 1 (paired, 1 stream, batch, ran on 1), CPU 0 (1 stream, ran on 0)"),
            "{line}"
        );
    }

    #[test]
    fn an_end_lists_its_intervals_in_one_line_each() {
        let busy = |cpu, sys| CpuUse {
            cpu,
            system: Percent::new(sys),
            idle: Percent::new(100.0 - sys),
            ..Default::default()
        };
        let iv = |s: f64, e: f64, sys| IntervalObservation {
            start: Some(s),
            end: Some(e),
            cpus: vec![busy(1, sys)],
            ..Default::default()
        };
        let e = EndObservation {
            role: Role::Sender,
            host: Some("h".into()),
            iface: Some("lo".into()),
            iface_mtu: None,
            iface_speed_mbps: None,
            nic_numa_node: None,
            nic_irqs: vec![],
            topology: Topology::default(),
            // The last one is the few milliseconds of the final tick: not worth a line.
            intervals: vec![iv(0.0, 1.0, 90.0), iv(1.0, 2.0, 80.0), iv(2.0, 2.01, 10.0)],
            total: iv(0.0, 2.01, 85.0),
            notes: vec!["n".into()],
            cpu_quota: None,
            iface_link: None,
            iface_stack: None,
        };
        let mut out = Vec::new();
        write_end(&mut out, &e).unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "sender h via lo: CPUs that did work");
        assert_eq!(lines[3], "    0.00-1.00   sec  CPU 1 90 % (90 sys)");
        assert_eq!(lines[4], "    1.00-2.00   sec  CPU 1 80 % (80 sys)");
        assert_eq!(lines[5], "  note: n");
        assert_eq!(lines.len(), 6, "{t}");
    }

    #[test]
    fn interval_line_names_the_busy_cpus() {
        let obs = IntervalObservation {
            cpus: vec![
                CpuUse {
                    cpu: 3,
                    softirq: Percent::new(57.0),
                    irq: Percent::new(3.0),
                    idle: Percent::new(40.0),
                    nic_irqs: 2040000,
                    ..Default::default()
                },
                CpuUse {
                    cpu: 6,
                    system: Percent::new(95.7),
                    softirq: Percent::new(2.1),
                    idle: Percent::new(2.2),
                    ..Default::default()
                },
                CpuUse {
                    cpu: 0,
                    user: Percent::new(2.0),
                    idle: Percent::new(98.0),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            interval_line(&obs),
            "CPU 6 97.8 % (96 sys) | CPU 3 60 % (57 sirq, 2040000 NIC IRQs)"
        );
        assert_eq!(
            interval_line(&IntervalObservation::default()),
            "no CPU at 10 % or more"
        );
    }

    #[test]
    fn table_lists_the_cpus_that_did_work() {
        let topo = Topology::from_groups(vec![set("0-11")], vec![set("0-5"), set("6-11")], vec![]);
        let obs = IntervalObservation {
            cpus: vec![
                CpuUse {
                    cpu: 3,
                    softirq: Percent::new(30.0),
                    idle: Percent::new(70.0),
                    nic_irqs: 20000,
                    net_rx: 20000,
                    ..Default::default()
                },
                CpuUse {
                    cpu: 6,
                    system: Percent::new(99.0),
                    idle: Percent::new(1.0),
                    net_rx: 12,
                    ..Default::default()
                },
            ],
            workers: vec![WorkerRun {
                worker: 0,
                cpu_requested: Some(6),
                cpus_seen: set("6"),
                streams: vec![5],
                tid: None,
            }],
            tcp: Some(TcpLimits {
                busy_us: 100,
                rwnd_limited_us: 50,
                sndbuf_limited_us: 0,
                pmtu: Some(1500),
                dsack_dups: 0,
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut out = Vec::new();
        write_cpu_table(&mut out, &obs, &topo, "").unwrap();
        let s = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 4, "{s}");
        assert!(
            lines[0].contains("NIC-IRQ") && !lines[0].contains("node"),
            "{s}"
        );
        assert!(
            lines[1].starts_with(
                "   3   0.0   0.0   0.0  30.0   0.0  70.0     20000     20000         0 "
            ),
            "{s}"
        );
        assert!(
            lines[2].contains(" 99.0 ") && lines[2].ends_with("worker 0"),
            "{s}"
        );
        assert!(
            lines[3].contains("window-limited 50 %") && lines[3].contains("MTU 1500"),
            "{s}"
        );
    }

    #[test]
    fn a_bidir_path_model_names_its_direction() {
        let mut c = wirespeed_model::PathCeiling {
            loss: 0.002,
            retransmits: 630,
            rtt_ms: 0.78,
            mss: 1448,
            mathis_bps: 417.5e6,
            measured_bps: None,
            direction: None,
            other_direction: None,
        };
        assert!(ceiling_line(&c).starts_with("Path model: 0.20 % loss"));
        c.direction = Some(wirespeed_model::Flow::ServerToClient);
        assert!(
            ceiling_line(&c).starts_with("Path model (server → client): 0.20 % loss"),
            "{}",
            ceiling_line(&c)
        );
    }

    #[test]
    fn a_bidir_path_model_prints_a_line_per_binding_direction() {
        let one = |flow, retransmits| wirespeed_model::PathCeiling {
            loss: 0.002,
            retransmits,
            rtt_ms: 0.78,
            mss: 1448,
            mathis_bps: 417.5e6,
            measured_bps: None,
            direction: flow,
            other_direction: None,
        };
        // not --bidir, or one direction binding: one line, as before
        let lines = ceiling_lines(&one(None, 630));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("Path model: 0.20 % loss (630 retransmits)"));
        let lines = ceiling_lines(&one(Some(wirespeed_model::Flow::ServerToClient), 630));
        assert_eq!(lines.len(), 1, "{lines:?}");
        // both: the verdict's direction first, then the other's, each named
        let mut c = one(Some(wirespeed_model::Flow::ServerToClient), 630);
        c.other_direction = Some(Box::new(one(
            Some(wirespeed_model::Flow::ClientToServer),
            120,
        )));
        let lines = ceiling_lines(&c);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("Path model (server → client): 0.20 % loss (630 retransmits)"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("Path model (client → server): 0.20 % loss (120 retransmits)"),
            "{lines:?}"
        );
        // -J carries the other direction's model under the first's `other_direction`
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["direction"], "server-to-client");
        assert_eq!(j["other_direction"]["direction"], "client-to-server");
        assert!(serde_json::to_value(one(None, 630))
            .unwrap()
            .get("other_direction")
            .is_none());
    }
}
