//! The verdict of a test: what limited it, in one line with the evidence.
//!
//! A pure function of the test's observations (both ends when the peer is wirespeed; each end
//! carries its own topology, NIC facts and workers) and its throughput. The checks, in order —
//! the first that holds is the verdict, later ones that also hold are listed under `also`:
//!
//! | id | when |
//! |---|---|
//! | `line-rate` | throughput ≥ 95 % of the slowest known link speed of the two ends |
//! | `pmtu-below-mtu` | a sender's `TCP_INFO` path MTU < 90 % of its interface MTU (jumbo frames not passed end to end) |
//! | CPU verdicts | an app CPU (a CPU a worker ran on) or a softirq CPU is saturated: busy (100 − idle − iowait) ≥ 90 %; the busiest saturated CPU over both ends decides, a receiver winning a tie |
//! | `window-limited` | `TCP_INFO` receive-window-limited time ≥ 25 % of busy time |
//! | `sndbuf-limited` | `TCP_INFO` send-buffer-limited time ≥ 25 % of busy time |
//! | `no-cpu-saturated` | none of the above: the path or the peer |
//!
//! The CPU verdicts, for a saturated receiver app CPU, in order:
//! `receiver-shares-cpu-with-softirq` (softirq ≥ 10 % of that CPU, or it took ≥ 50 % of the NIC's
//! interrupts), `irq-numa-remote` (the NIC's interrupts, or NET_RX where no interrupts were
//! counted, mostly on another NUMA node), `app-numa-remote` (the app CPU's node is not the NIC's),
//! `irq-cross-l3` (mostly on another L3 group), else `receiver-cpu-bound`. A saturated sender app
//! CPU gives `sender-cpu-bound`; a saturated CPU that is no app CPU and spends ≥ 50 % in softirq
//! + irq gives `softirq-cpu-bound`.

use crate::model::{BitsPerSecond, CpuUse, EndObservation, Role, TestObservation};
use crate::placement::{cpus_words, Placement};
use crate::topology::Relation;

/// The thresholds of the checks (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// A CPU is saturated at this busy share (%).
    pub saturated: f64,
    /// Softirq share (%) of a saturated receiver CPU that counts as sharing it with RX work.
    pub softirq_on_app: f64,
    /// Share (%) of the NIC's interrupts taken by the app CPU that counts as sharing.
    pub irqs_on_app: f64,
    /// Throughput share (%) of the link speed that counts as line rate.
    pub line_rate: f64,
    /// `TCP_INFO` limited-time share (%) that counts as window or send-buffer limited.
    pub tcp_limited: f64,
    /// Path MTU below this fraction of the interface MTU counts as not passing it.
    pub pmtu_fraction: f64,
    /// softirq + irq share (%) of a saturated non-app CPU that makes it a softirq CPU.
    pub softirq_cpu: f64,
}

pub const THRESHOLDS: Thresholds = Thresholds {
    saturated: 90.0,
    softirq_on_app: 10.0,
    irqs_on_app: 50.0,
    line_rate: 95.0,
    tcp_limited: 25.0,
    pmtu_fraction: 0.9,
    softirq_cpu: 50.0,
};

pub use wirespeed_model::verdict::Verdict;

fn end_word(e: &EndObservation, as_receiver: bool) -> &'static str {
    match e.role {
        Role::Sender => "sender",
        Role::Receiver => "receiver",
        Role::Both if as_receiver => "receiver",
        Role::Both => "sender",
    }
}

fn parts(c: &CpuUse) -> String {
    let mut v: Vec<(&str, f64)> = vec![
        ("user", c.user.get()),
        ("system", c.system.get()),
        ("irq", c.irq.get()),
        ("softirq", c.softirq.get()),
        ("steal", c.steal.get()),
    ];
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shown: Vec<String> = v
        .iter()
        .filter(|(_, p)| *p >= 5.0)
        .take(2)
        .map(|(n, p)| format!("{} {n}", crate::model::Percent::new(*p)))
        .collect();
    if shown.is_empty() {
        format!("{} busy", c.busy())
    } else {
        shown.join(", ")
    }
}

fn l3_words(e: &EndObservation, cpu: u32) -> String {
    match e.topology.l3_cpus(cpu) {
        Some(g) => format!("L3 {g}"),
        None => "L3 unknown".to_string(),
    }
}

/// A candidate CPU verdict: busy share, whether it is about a receiver, and the verdict.
struct Candidate {
    busy: f64,
    receiver: bool,
    verdict: Verdict,
}

fn receiver_cause(e: &EndObservation, c: &CpuUse, th: &Thresholds) -> Verdict {
    let who = end_word(e, true);
    let place = Placement::of_end(e);
    let nic_total = e.total.nic_irq_total();
    let irq_share = if nic_total > 0 {
        c.nic_irqs as f64 * 100.0 / nic_total as f64
    } else {
        0.0
    };
    let v = |id: &str, line: String| Verdict {
        id: id.to_string(),
        end: Some(who.to_string()),
        line,
        also: Vec::new(),
    };
    if c.softirq.get() >= th.softirq_on_app || irq_share >= th.irqs_on_app {
        let mut line = format!(
            "{who} shares CPU {} with RX softirq (CPU {}: {}",
            c.cpu,
            c.cpu,
            parts(c)
        );
        if nic_total > 0 {
            line.push_str(&format!(
                "; {} of the NIC's interrupts",
                crate::model::Percent::new(irq_share)
            ));
        }
        line.push(')');
        return v("receiver-shares-cpu-with-softirq", line);
    }
    let work = place.rx_work();
    let work_name = if place.irq.is_some() {
        "NIC interrupts"
    } else {
        "NET_RX softirqs"
    };
    if let Some(w) = work.filter(|w| w.relation == Relation::OtherNode) {
        let nodes: Vec<String> = w
            .cpus
            .iter()
            .filter_map(|x| e.topology.node_of(x))
            .map(|n| n.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        return v(
            "irq-numa-remote",
            format!(
                "IRQs on a remote NUMA node: {work_name} on {} (node {}), {who} on CPU {} (node {}, {} busy)",
                cpus_words(&w.cpus),
                nodes.join(","),
                c.cpu,
                e.topology
                    .node_of(c.cpu)
                    .map_or("?".to_string(), |n| n.to_string()),
                c.busy()
            ),
        );
    }
    if let (Some(nic), Some(app)) = (e.nic_numa_node, e.topology.node_of(c.cpu)) {
        if nic as usize != app {
            return v(
                "app-numa-remote",
                format!(
                    "{who} on a remote NUMA node: CPU {} is on node {app}, the NIC{} on node {nic} ({} busy)",
                    c.cpu,
                    e.iface.as_ref().map_or(String::new(), |i| format!(" {i}")),
                    c.busy()
                ),
            );
        }
    }
    if let Some(w) = work.filter(|w| w.relation == Relation::OtherL3) {
        let first = w.cpus.first().unwrap_or(c.cpu);
        return v(
            "irq-cross-l3",
            format!(
                "IRQs on a different L3 group than the {who}: {work_name} on {} ({}), {who} on CPU {} ({}, {})",
                cpus_words(&w.cpus),
                l3_words(e, first),
                c.cpu,
                l3_words(e, c.cpu),
                parts(c)
            ),
        );
    }
    v(
        "receiver-cpu-bound",
        format!("{who} CPU-bound (CPU {}, {})", c.cpu, parts(c)),
    )
}

fn cpu_candidates(e: &EndObservation, th: &Thresholds, out: &mut Vec<Candidate>) {
    let app = e.total.app_cpus();
    for c in &e.total.cpus {
        let busy = c.busy().get();
        if busy < th.saturated {
            continue;
        }
        if app.contains(c.cpu) {
            if e.role.receives() {
                out.push(Candidate {
                    busy,
                    receiver: true,
                    verdict: receiver_cause(e, c, th),
                });
            }
            if e.role.sends() {
                let who = end_word(e, false);
                out.push(Candidate {
                    busy,
                    receiver: false,
                    verdict: Verdict {
                        id: "sender-cpu-bound".into(),
                        end: Some(who.into()),
                        line: format!("{who} CPU-bound (CPU {}, {})", c.cpu, parts(c)),
                        also: Vec::new(),
                    },
                });
            }
        } else if c.softirq.get() + c.irq.get() >= th.softirq_cpu {
            let who = end_word(e, e.role.receives());
            out.push(Candidate {
                busy,
                receiver: e.role.receives(),
                verdict: Verdict {
                    id: "softirq-cpu-bound".into(),
                    end: Some(who.into()),
                    line: format!(
                        "{who}'s softirq CPU {} saturated ({}): spread the flows over more queues (RSS) or RPS",
                        c.cpu,
                        parts(c)
                    ),
                    also: Vec::new(),
                },
            });
        }
    }
}

/// The verdict of a test from its observation and measured throughput (the receiver's figure).
pub fn verdict(test: &TestObservation, throughput: Option<BitsPerSecond>) -> Verdict {
    verdict_with(test, throughput, &THRESHOLDS)
}

/// [`verdict`] with explicit thresholds.
pub fn verdict_with(
    test: &TestObservation,
    throughput: Option<BitsPerSecond>,
    th: &Thresholds,
) -> Verdict {
    let mut found: Vec<Verdict> = Vec::new();

    // 1. Line rate.
    let link = test
        .ends()
        .filter_map(|e| e.iface_speed_mbps.map(|s| (s, e.iface.clone())))
        .min_by_key(|(s, _)| *s);
    if let (Some(bps), Some((mbps, iface))) = (throughput, link) {
        let link_bps = mbps as f64 * 1e6;
        if bps.0 >= link_bps * th.line_rate / 100.0 {
            found.push(Verdict {
                id: "line-rate".into(),
                end: None,
                line: format!(
                    "at line rate: {bps} of a {} link{}",
                    BitsPerSecond(link_bps),
                    iface.map_or(String::new(), |i| format!(" ({i})"))
                ),
                also: Vec::new(),
            });
        }
    }

    // 2. Path MTU below the interface MTU.
    for e in test.ends().filter(|e| e.role.sends()) {
        let (Some(pmtu), Some(mtu)) = (e.total.tcp.and_then(|t| t.pmtu), e.iface_mtu) else {
            continue;
        };
        if (pmtu as f64) < mtu as f64 * th.pmtu_fraction {
            found.push(Verdict {
                id: "pmtu-below-mtu".into(),
                end: Some(end_word(e, false).into()),
                line: format!(
                    "path MTU {pmtu} below the interface MTU {mtu}{}: jumbo frames are not passed end to end (a switch or the peer)",
                    e.iface.as_ref().map_or(String::new(), |i| format!(" of {i}"))
                ),
                also: Vec::new(),
            });
        }
    }

    // 3. Saturated CPUs.
    let mut cands = Vec::new();
    for e in test.ends() {
        cpu_candidates(e, th, &mut cands);
    }
    cands.sort_by(|a, b| {
        b.busy
            .total_cmp(&a.busy)
            .then(b.receiver.cmp(&a.receiver))
            .then_with(|| {
                // Among equals, an app-CPU verdict before a softirq-CPU one.
                (a.verdict.id == "softirq-cpu-bound").cmp(&(b.verdict.id == "softirq-cpu-bound"))
            })
    });
    let mut seen_ids = Vec::new();
    for c in cands {
        if !seen_ids.contains(&c.verdict.id) {
            seen_ids.push(c.verdict.id.clone());
            found.push(c.verdict);
        }
    }

    // 4. TCP limits.
    for e in test.ends().filter(|e| e.role.sends()) {
        let Some(t) = e.total.tcp else { continue };
        if t.rwnd_share().get() >= th.tcp_limited {
            found.push(Verdict {
                id: "window-limited".into(),
                end: Some(end_word(e, false).into()),
                line: format!(
                    "window-limited: the receiver's window held the sender back {} of its busy time (raise tcp_rmem's maximum, or -w)",
                    t.rwnd_share()
                ),
                also: Vec::new(),
            });
        }
        if t.sndbuf_share().get() >= th.tcp_limited {
            found.push(Verdict {
                id: "sndbuf-limited".into(),
                end: Some(end_word(e, false).into()),
                line: format!(
                    "send-buffer-limited {} of the sender's busy time (raise tcp_wmem's maximum, or -w)",
                    t.sndbuf_share()
                ),
                also: Vec::new(),
            });
        }
    }

    // 5. Nothing saturated.
    if found.is_empty() {
        let busiest = test
            .ends()
            .flat_map(|e| e.total.cpus.iter().map(move |c| (e, c)))
            .max_by(|a, b| a.1.busy().get().total_cmp(&b.1.busy().get()));
        let mut line = "no CPU saturated".to_string();
        if let Some((e, c)) = busiest {
            line.push_str(&format!(
                " (busiest: {}'s CPU {} at {})",
                end_word(e, e.role.receives()),
                c.cpu,
                c.busy()
            ));
        }
        line.push_str(": the limit is the path or the peer");
        if let Some(r) = &test.remote_absent {
            line.push_str(&format!(" (peer not observed: {r})"));
        }
        found.push(Verdict {
            id: "no-cpu-saturated".into(),
            end: None,
            line,
            also: Vec::new(),
        });
    }

    let mut first = found.remove(0);
    first.also = found.into_iter().map(|v| v.line).collect();
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IntervalObservation, Percent, TcpLimits, WorkerRun};
    use crate::topology::Topology;
    use wirespeed_host::CpuSet;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// (cpu, system, softirq, idle, nic_irqs, net_rx)
    type Row = (u32, f64, f64, f64, u64, u64);

    fn end(role: Role, topo: Topology, app: u32, rows: &[Row]) -> EndObservation {
        let cpus = rows
            .iter()
            .map(|&(cpu, sys, sirq, idle, irq, rx)| CpuUse {
                cpu,
                system: Percent::new(sys),
                softirq: Percent::new(sirq),
                idle: Percent::new(idle),
                user: Percent::new(100.0 - sys - sirq - idle),
                nic_irqs: irq,
                net_rx: rx,
                ..Default::default()
            })
            .collect();
        EndObservation {
            role,
            host: None,
            iface: Some("eth1".into()),
            iface_mtu: Some(9000),
            iface_speed_mbps: Some(100_000),
            nic_numa_node: None,
            nic_irqs: vec![100, 101],
            topology: topo,
            intervals: vec![],
            total: IntervalObservation {
                cpus,
                workers: vec![WorkerRun {
                    worker: 0,
                    cpu_requested: Some(app),
                    cpus_seen: CpuSet::from_cpus([app]),
                    streams: vec![5],
                }],
                ..Default::default()
            },
            notes: vec![],
        }
    }

    fn ryzen() -> Topology {
        Topology::from_groups(vec![set("0-11")], vec![set("0-5"), set("6-11")], vec![])
    }

    fn xeon() -> Topology {
        Topology::from_groups(
            vec![set("0-7"), set("8-15")],
            vec![set("0-7"), set("8-15")],
            vec![],
        )
    }

    fn test(sender: EndObservation, receiver: EndObservation) -> TestObservation {
        TestObservation {
            local: sender,
            remote: Some(receiver),
            remote_absent: None,
        }
    }

    fn idle_sender() -> EndObservation {
        end(Role::Sender, ryzen(), 6, &[(6, 60.0, 5.0, 30.0, 10, 100)])
    }

    /// The verdict on a receiver with its app on `app` (and an idle sender), at `gbps`.
    fn receiver_verdict(topo: Topology, app: u32, rows: &[Row], gbps: Option<f64>) -> Verdict {
        let r = end(Role::Receiver, topo, app, rows);
        verdict(&test(idle_sender(), r), gbps.map(BitsPerSecond::from_gbps))
    }

    #[test]
    fn sender_cpu_bound() {
        let s = end(Role::Sender, ryzen(), 3, &[(3, 99.0, 0.0, 1.0, 0, 0)]);
        let r = end(
            Role::Receiver,
            ryzen(),
            6,
            &[(6, 70.0, 0.0, 30.0, 0, 0), (8, 0.0, 20.0, 80.0, 500, 500)],
        );
        let v = verdict(&test(s, r), Some(BitsPerSecond::from_gbps(40.0)));
        assert_eq!(v.id, "sender-cpu-bound");
        assert_eq!(v.line, "sender CPU-bound (CPU 3, 99 % system)");
        assert!(v.also.is_empty(), "{:?}", v.also);
    }

    #[test]
    fn receiver_shares_its_cpu_with_rx_softirq() {
        let v = receiver_verdict(
            ryzen(),
            6,
            &[
                (6, 52.0, 46.0, 2.0, 9700, 90000),
                (8, 0.0, 1.0, 99.0, 300, 100),
            ],
            Some(64.6),
        );
        assert_eq!(v.id, "receiver-shares-cpu-with-softirq");
        assert_eq!(
            v.line,
            "receiver shares CPU 6 with RX softirq (CPU 6: 52 % system, 46 % softirq; 97 % of the NIC's interrupts)"
        );
        assert_eq!(v.end.as_deref(), Some("receiver"));
    }

    #[test]
    fn irqs_on_the_other_l3_group() {
        let v = receiver_verdict(
            ryzen(),
            6,
            &[
                (6, 97.0, 2.0, 1.0, 0, 100),
                (3, 0.0, 60.0, 40.0, 9000, 9000),
            ],
            Some(84.9),
        );
        assert_eq!(v.id, "irq-cross-l3");
        assert_eq!(
            v.line,
            "IRQs on a different L3 group than the receiver: NIC interrupts on CPU 3 (L3 0-5), receiver on CPU 6 (L3 6-11, 97 % system)"
        );
    }

    #[test]
    fn remote_numa_node_for_irqs_and_for_the_app() {
        let v = receiver_verdict(
            xeon(),
            9,
            &[(9, 98.0, 0.0, 2.0, 0, 10), (2, 0.0, 70.0, 30.0, 5000, 5000)],
            None,
        );
        assert_eq!(v.id, "irq-numa-remote");
        assert!(
            v.line
                .contains("NIC interrupts on CPU 2 (node 0), receiver on CPU 9 (node 1"),
            "{}",
            v.line
        );

        let mut r = end(
            Role::Receiver,
            xeon(),
            1,
            &[(1, 98.0, 0.0, 2.0, 0, 10), (2, 0.0, 70.0, 30.0, 5000, 5000)],
        );
        r.nic_numa_node = Some(1);
        let v = verdict(&test(idle_sender(), r), None);
        assert_eq!(v.id, "app-numa-remote");
        assert_eq!(v.line, "receiver on a remote NUMA node: CPU 1 is on node 0, the NIC eth1 on node 1 (98 % busy)");
    }

    #[test]
    fn receiver_cpu_bound_when_placement_is_right() {
        let v = receiver_verdict(
            ryzen(),
            6,
            &[(6, 95.0, 3.0, 2.0, 0, 10), (8, 0.0, 50.0, 50.0, 9000, 9000)],
            Some(90.0),
        );
        assert_eq!(v.id, "receiver-cpu-bound");
        assert_eq!(v.line, "receiver CPU-bound (CPU 6, 95 % system)");
    }

    #[test]
    fn line_rate_wins_and_keeps_the_rest_as_also() {
        let v = receiver_verdict(
            ryzen(),
            6,
            &[(6, 95.0, 3.0, 2.0, 0, 10), (8, 0.0, 50.0, 50.0, 9000, 9000)],
            Some(98.8),
        );
        assert_eq!(v.id, "line-rate");
        assert_eq!(
            v.line,
            "at line rate: 98.8 Gbit/s of a 100.0 Gbit/s link (eth1)"
        );
        assert_eq!(
            v.also,
            vec!["receiver CPU-bound (CPU 6, 95 % system)".to_string()]
        );
    }

    #[test]
    fn softirq_cpu_saturated() {
        let v = receiver_verdict(
            ryzen(),
            6,
            &[(6, 60.0, 0.0, 40.0, 0, 0), (8, 2.0, 95.0, 3.0, 9000, 9000)],
            None,
        );
        assert_eq!(v.id, "softirq-cpu-bound");
        assert!(
            v.line
                .starts_with("receiver's softirq CPU 8 saturated (95 % softirq)"),
            "{}",
            v.line
        );
    }

    #[test]
    fn tcp_limits_and_pmtu() {
        let mut s = idle_sender();
        s.total.tcp = Some(TcpLimits {
            busy_us: 1_000_000,
            rwnd_limited_us: 600_000,
            sndbuf_limited_us: 0,
            pmtu: Some(9000),
        });
        let r = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
        let v = verdict(
            &test(s.clone(), r.clone()),
            Some(BitsPerSecond::from_gbps(10.0)),
        );
        assert_eq!(v.id, "window-limited");
        assert!(v.line.contains("60 %"), "{}", v.line);

        s.total.tcp = Some(TcpLimits {
            busy_us: 1_000_000,
            rwnd_limited_us: 0,
            sndbuf_limited_us: 300_000,
            pmtu: Some(1500),
        });
        let v = verdict(&test(s, r), Some(BitsPerSecond::from_gbps(10.0)));
        assert_eq!(v.id, "pmtu-below-mtu");
        assert_eq!(
            v.line,
            "path MTU 1500 below the interface MTU 9000 of eth1: jumbo frames are not passed end to end (a switch or the peer)"
        );
        assert_eq!(v.also.len(), 1);
        assert!(v.also[0].starts_with("send-buffer-limited 30 %"));
    }

    #[test]
    fn loopback_pmtu_is_not_flagged_and_nothing_saturated() {
        let mut s = end(Role::Sender, ryzen(), 1, &[(1, 40.0, 10.0, 50.0, 0, 10)]);
        s.iface_mtu = Some(65536);
        s.iface_speed_mbps = None;
        s.total.tcp = Some(TcpLimits {
            busy_us: 10,
            rwnd_limited_us: 0,
            sndbuf_limited_us: 0,
            pmtu: Some(65535),
        });
        let v = verdict(
            &TestObservation::local_only(s, "peer is iperf3"),
            Some(BitsPerSecond::from_gbps(20.0)),
        );
        assert_eq!(v.id, "no-cpu-saturated");
        assert_eq!(
            v.line,
            "no CPU saturated (busiest: sender's CPU 1 at 50 %): the limit is the path or the peer (peer not observed: peer is iperf3)"
        );
    }

    #[test]
    fn busiest_end_decides_and_a_receiver_wins_ties() {
        let s = end(Role::Sender, ryzen(), 3, &[(3, 99.0, 0.0, 1.0, 0, 0)]);
        let r = end(
            Role::Receiver,
            ryzen(),
            6,
            &[(6, 99.0, 0.0, 1.0, 0, 0), (8, 0.0, 20.0, 80.0, 500, 500)],
        );
        let v = verdict(&test(s, r), None);
        assert_eq!(v.id, "receiver-cpu-bound");
        assert_eq!(
            v.also,
            vec!["sender CPU-bound (CPU 3, 99 % system)".to_string()]
        );
    }

    #[test]
    fn verdict_serialises() {
        let v = verdict(&test(idle_sender(), idle_sender()), None);
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["id"], "no-cpu-saturated");
        assert!(j.get("also").is_none());
    }
}
