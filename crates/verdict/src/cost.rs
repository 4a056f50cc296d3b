//! What a bit cost at each end, and the cores the link's rate needs at that cost.
//!
//! A pure function of the test's observation and what it measured:
//!
//! - **thread CPU**: the end's worker threads' own CPU time over the test (user + system,
//!   `getrusage(RUSAGE_THREAD)` as each worker ends: the total's `worker_cpu_s`);
//! - **softirq CPU**: softirq + irq time (`/proc/stat` shares × the test's wall time) on the CPUs
//!   that served the end's flows — the receiver's: CPUs that ran `NET_RX` or took the NIC's
//!   interrupts; the sender's: those and the CPUs that ran `NET_TX`. When both ends share the
//!   host (loopback) one `/proc/stat` shows both ends' softirq on the same CPUs: it is charged to
//!   the receiver once (receive processing is its work) and the notes say so;
//! - **per bit**: (thread + softirq) CPU seconds per Gbit the end moved (the sender's bytes sent,
//!   the receiver's bytes received), one core's rate (its inverse) and cycles per byte (CPU
//!   seconds × the frequency the end read for its workers' CPUs at the end of the test / bytes);
//! - **projection**: the rate of the link (`--rate`, else the slowest real interface of the two
//!   ends) over one core's rate, rounded up, for each end; the CPUs from doctor's placement rule
//!   ([`wirespeed_doctor::placement::app_cpus`]: the NIC's node without its IRQ CPUs — the CPUs
//!   that took the NIC's interrupts in this test), the receiver's after the sender's when both
//!   ends share the host.
//!
//! `--bidir` tests are not split by direction: no cost.

use std::collections::BTreeMap;

use wirespeed_doctor::placement::{app_cpus, CpuLayout, NicLocality};
use wirespeed_host::CpuSet;
use wirespeed_model::cost::{Cost, EndCost, Projection};
use wirespeed_model::observation::{BitsPerSecond, EndObservation, Role, TestObservation};
use wirespeed_model::verdict::Measured;

use wirespeed_observe::nic::is_virtual;

/// The test's wall time at one end, seconds (the observation total's span).
fn wall_s(e: &EndObservation) -> Option<f64> {
    let (s, t) = (e.total.start?, e.total.end?);
    (t > s && (t - s).is_finite()).then_some(t - s)
}

/// The CPUs that served this end's flows (see the module docs).
fn flow_cpus(e: &EndObservation, role: Role) -> CpuSet {
    e.total
        .cpus
        .iter()
        .filter(|c| c.net_rx > 0 || c.nic_irqs > 0 || (role == Role::Sender && c.net_tx > 0))
        .map(|c| c.cpu)
        .collect()
}

/// One end's cost; `charge_softirq` false leaves its softirq out (charged to the other end).
fn end_cost(e: &EndObservation, role: Role, bytes: u64, charge_softirq: bool) -> Option<EndCost> {
    let thread_s = e.total.worker_cpu_s?;
    let cpus = if charge_softirq {
        flow_cpus(e, role)
    } else {
        CpuSet::new()
    };
    let wall = wall_s(e).unwrap_or(0.0);
    let softirq_s: f64 = e
        .total
        .cpus
        .iter()
        .filter(|c| cpus.contains(c.cpu))
        .map(|c| (c.softirq.get() + c.irq.get()) / 100.0 * wall)
        .fold(0.0, |a, b| a + b);
    let mut c = EndCost::new(role, bytes, thread_s, softirq_s, e.total.cpu_freq.clone())?;
    c.softirq_cpus = cpus;
    c.observer = e.total.observer.clone();
    Some(c)
}

/// The CPU layout placement needs, from an observation's topology (the CPUs it saw count as
/// online where the topology lists none).
fn layout_of(e: &EndObservation) -> CpuLayout {
    let t = &e.topology;
    let mut online: CpuSet = t
        .nodes
        .iter()
        .chain(&t.l3_groups)
        .fold(CpuSet::new(), |a, s| a.union(s));
    if online.is_empty() {
        online = e.total.cpus.iter().map(|c| c.cpu).collect();
    }
    let mut siblings = BTreeMap::new();
    for core in &t.smt_cores {
        for c in core.iter() {
            siblings.insert(c, core.clone());
        }
    }
    CpuLayout {
        online,
        numa_nodes: t
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .map(|(n, s)| (n as u32, s.clone()))
            .collect(),
        l3_groups: t.l3_groups.clone(),
        siblings,
    }
}

/// The first `n` CPUs placement gives an end (fewer when the host has fewer), avoiding `taken`
/// (the other end's, on a shared host) where enough are left; and the rule in words.
fn place(e: &EndObservation, n: u32, taken: &CpuSet) -> (CpuSet, String) {
    let layout = layout_of(e);
    let irq: CpuSet = e
        .total
        .cpus
        .iter()
        .filter(|c| c.nic_irqs > 0)
        .map(|c| c.cpu)
        .collect();
    let nic = e
        .iface
        .as_ref()
        .filter(|_| !is_virtual(e))
        .map(|_| NicLocality {
            node: e.nic_numa_node,
            local_cpus: None,
        });
    let p = app_cpus(&layout, nic, &irq);
    let free = p.cpus.difference(taken);
    let pool = if free.len() >= n as usize {
        free
    } else {
        p.cpus
    };
    (pool.iter().take(n as usize).collect(), p.rule)
}

/// Both ends' cost and the projection (see the module docs); `None` for `--bidir` or when
/// neither end's cost is known.
pub fn cost_of(test: &TestObservation, m: &Measured) -> Option<Cost> {
    if crate::two_way(test) {
        return None;
    }
    let shared = test.same_host().is_some() && test.remote.is_some();
    let sender_end = test.ends().find(|e| e.role == Role::Sender);
    let receiver_end = test.ends().find(|e| e.role == Role::Receiver);
    let mut notes = Vec::new();
    let sender = sender_end.and_then(|e| end_cost(e, Role::Sender, m.bytes_sent?, !shared));
    let receiver = receiver_end.and_then(|e| end_cost(e, Role::Receiver, m.bytes_received?, true));
    if shared {
        notes.push(
            "both ends on one host: softirq time is charged to the receiver only".to_string(),
        );
    }
    if let Some(note) = zero_copy_on_one_host(test, m, sender.as_ref()) {
        notes.push(note);
    }
    for (e, c, who) in [
        (sender_end, &sender, "sender"),
        (receiver_end, &receiver, "receiver"),
    ] {
        if c.is_none() {
            notes.push(match e {
                None => format!("{who} not observed"),
                Some(_) => format!("{who}: no worker thread CPU time or no bytes counted"),
            });
        }
    }
    if sender.is_none() && receiver.is_none() {
        return None;
    }
    let projection = projection(test, m, sender.as_ref(), receiver.as_ref(), shared);
    if let Some(p) = projection.as_ref().filter(|_| shared) {
        if p.sender_cpus.intersects(&p.receiver_cpus) {
            notes.push(format!(
                "this host has too few CPUs ({}) to keep the sending and receiving cores apart",
                layout_of(&test.local).online.len()
            ));
        }
    }
    Some(Cost {
        sender,
        receiver,
        projection,
        notes,
    })
}

/// The rate to project for: `--rate`, else the slowest real interface of the two ends.
fn link_rate(test: &TestObservation, m: &Measured) -> Option<(f64, String)> {
    if let Some(r) = m.rate_bps.filter(|r| *r > 0.0) {
        return Some((r, "--rate".to_string()));
    }
    test.ends()
        .filter(|e| !is_virtual(e))
        .filter_map(|e| Some((e.iface_speed_mbps?, e.iface.clone()?)))
        .min_by_key(|(s, _)| *s)
        .map(|(mbps, i)| (mbps as f64 * 1e6, format!("interface {i} speed")))
}

fn projection(
    test: &TestObservation,
    m: &Measured,
    sender: Option<&EndCost>,
    receiver: Option<&EndCost>,
    shared: bool,
) -> Option<Projection> {
    let (rate_bps, rate_source) = link_rate(test, m)?;
    let sender_cores = sender.map(|c| c.cores_for(rate_bps));
    let receiver_cores = receiver.map(|c| c.cores_for(rate_bps));
    let mut rule = String::new();
    let sender_cpus = match (sender_cores, test.ends().find(|e| e.role == Role::Sender)) {
        (Some(n), Some(e)) => {
            let (cpus, r) = place(e, n, &CpuSet::new());
            rule = r;
            cpus
        }
        _ => CpuSet::new(),
    };
    let receiver_cpus = match (
        receiver_cores,
        test.ends().find(|e| e.role == Role::Receiver),
    ) {
        (Some(n), Some(e)) => {
            let taken = if shared {
                sender_cpus.clone()
            } else {
                CpuSet::new()
            };
            let (cpus, r) = place(e, n, &taken);
            if rule.is_empty() || (!shared && r != rule) {
                rule = if rule.is_empty() {
                    r
                } else {
                    format!("sender: {rule}; receiver: {r}")
                };
            }
            cpus
        }
        _ => CpuSet::new(),
    };
    let quota = |role: Role| {
        test.ends()
            .find(|e| e.role == role)
            .and_then(|e| e.cpu_quota.as_ref()?.cpus())
    };
    Some(Projection {
        rate_bps,
        rate_source,
        sender_cores,
        receiver_cores,
        sender_cpus,
        receiver_cpus,
        rule,
        sender_quota_cpus: quota(Role::Sender),
        receiver_quota_cpus: quota(Role::Receiver),
    })
}

/// Zero-copy send between two ends of one host: the receiver copies every byte anyway, so the
/// sender's zero-copy saves nothing, and the kernel makes it dearer than a copy (see
/// docs/measure.md): `None` unless the test sent with one (`Measured::zero_copy_send`) on one host.
pub fn zero_copy_on_one_host(
    test: &TestObservation,
    m: &Measured,
    sender: Option<&EndCost>,
) -> Option<String> {
    let path = m.zero_copy_send.as_deref()?;
    test.same_host()?;
    let measured = sender.map_or(String::new(), |c| {
        format!(
            " (here one sending core moves {})",
            BitsPerSecond::from_gbps(c.gbps_per_core)
        )
    });
    let why = if path == "msg_zerocopy" {
        "the kernel copies MSG_ZEROCOPY data delivered to a local socket"
    } else {
        "the kernel hands the receiver the pages in page-sized fragments with a page reference each (sendfile: a page-cache lookup each too), where a copy builds 32 KiB fragments"
    };
    Some(format!(
        "zero-copy send ({path}) on one host costs more CPU per bit than copying{measured}: the receiver copies every byte anyway and {why}; drop -Z here — it pays where a NIC reads the pages and the sender is CPU-bound"
    ))
}

/// The projection's sentence for a CPU-bound verdict of `role`: `one core moves 28.0 Gbit/s
/// here; 100.0 Gbit/s needs 4 sending cores: -P 4 on CPUs 7-10`. `None` without a projection
/// or that end's cost.
pub fn verdict_words(c: &Cost, role: Role) -> Option<String> {
    let p = c.projection.as_ref()?;
    let (end, cores, cpus, verb, quota) = match role {
        Role::Sender => (
            c.sender.as_ref()?,
            p.sender_cores?,
            &p.sender_cpus,
            "sending",
            p.sender_quota_cpus,
        ),
        _ => (
            c.receiver.as_ref()?,
            p.receiver_cores?,
            &p.receiver_cpus,
            "receiving",
            p.receiver_quota_cpus,
        ),
    };
    let mut s = format!(
        "one core moves {} here; {} needs {cores} {verb} core{}",
        BitsPerSecond::from_gbps(end.gbps_per_core),
        BitsPerSecond(p.rate_bps),
        if cores == 1 { "" } else { "s" }
    );
    if !cpus.is_empty() {
        s.push_str(&format!(": -P {cores} on {}", cpus.words()));
        if cpus.len() < cores as usize {
            let n = cpus.len();
            s.push_str(&format!(
                " (only {n} such CPU{} here)",
                if n == 1 { "" } else { "s" }
            ));
        }
    }
    if let Some(q) = quota {
        s.push_str(&format!(
            "; this end's cgroup allows {}",
            wirespeed_model::units::cpus(q)
        ));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::cost::CpuFreq;
    use wirespeed_model::observation::{CpuUse, IntervalObservation, Percent, WorkerRun};
    use wirespeed_model::Topology;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn cpu(n: u32, sys: f64, sirq: f64, irqs: u64, rx: u64) -> CpuUse {
        CpuUse {
            cpu: n,
            system: Percent::new(sys),
            softirq: Percent::new(sirq),
            idle: Percent::new(100.0 - sys - sirq),
            nic_irqs: irqs,
            net_rx: rx,
            ..Default::default()
        }
    }

    /// One end on a two-node host (node 0: CPUs 0-7, node 1: 8-15) whose 100 Gbit/s NIC sits
    /// on node 1, its interrupts taken on `irq_cpu`; the worker on `app`.
    fn end(role: Role, host: &str, app: u32, irq_cpu: u32, worker_s: f64) -> EndObservation {
        let topology = Topology::from_groups(
            vec![set("0-7"), set("8-15")],
            vec![set("0-7"), set("8-15")],
            vec![],
        );
        EndObservation {
            role,
            host: Some(host.into()),
            iface: Some("ens1f0np0".into()),
            iface_mtu: Some(9000),
            iface_speed_mbps: Some(100_000),
            nic_numa_node: Some(1),
            nic_irqs: vec![120, 121],
            topology,
            intervals: vec![],
            total: IntervalObservation {
                start: Some(0.0),
                end: Some(10.0),
                cpus: vec![
                    cpu(app, 95.0, 4.0, 0, 10),
                    cpu(irq_cpu, 2.0, 30.0, 5000, 90_000),
                ],
                workers: vec![WorkerRun {
                    worker: 0,
                    cpu_requested: Some(app),
                    cpus_seen: CpuSet::from_cpus([app]),
                    streams: vec![5],
                    tid: None,
                }],
                worker_cpu_s: Some(worker_s),
                cpu_freq: Some(CpuFreq {
                    mhz: 3000.0,
                    source: "cpufreq scaling_cur_freq".into(),
                    cpus: CpuSet::from_cpus([app]),
                }),
                ..Default::default()
            },
            notes: vec![],
            cpu_quota: None,
            iface_link: None,
            iface_stack: None,
        }
    }

    fn measured(bytes: u64) -> Measured {
        Measured {
            bytes_sent: Some(bytes),
            bytes_received: Some(bytes),
            ..Default::default()
        }
    }

    #[test]
    fn cost_and_projection_follow_from_the_counters_of_two_hosts() {
        let tx = end(Role::Sender, "a", 9, 8, 9.5);
        let rx = end(Role::Receiver, "b", 10, 12, 9.0);
        let test = TestObservation::combine(tx.clone(), Ok(Some(&rx)), true);
        let bytes = 40_000_000_000u64; // 320 Gbit in 10 s
        let c = cost_of(&test, &measured(bytes)).unwrap();
        let gbit = bytes as f64 * 8.0 / 1e9;
        for (e, obs) in [
            (c.sender.as_ref().unwrap(), &tx),
            (c.receiver.as_ref().unwrap(), &rx),
        ] {
            // softirq + irq on the CPUs that ran NET_RX or took the NIC's interrupts, × 10 s
            let sirq: f64 = obs
                .total
                .cpus
                .iter()
                .map(|c| (c.softirq.get() + c.irq.get()) / 100.0 * 10.0)
                .sum();
            assert!((e.softirq_cpu_s - sirq).abs() < 1e-9, "{e:?}");
            assert_eq!(e.thread_cpu_s, obs.total.worker_cpu_s.unwrap());
            let cpu_s = e.thread_cpu_s + e.softirq_cpu_s;
            assert!((e.cpu_s_per_gbit - cpu_s / gbit).abs() < 1e-12);
            assert!((e.gbps_per_core * e.cpu_s_per_gbit - 1.0).abs() < 1e-12);
            let cpb = cpu_s * 3000e6 / bytes as f64;
            assert!((e.cycles_per_byte.unwrap() - cpb).abs() < 1e-12);
        }
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        let p = c.projection.as_ref().unwrap();
        assert_eq!(p.rate_source, "interface ens1f0np0 speed");
        let need = |e: &EndCost| (100.0 / e.gbps_per_core).ceil() as u32;
        assert_eq!(p.sender_cores, Some(need(c.sender.as_ref().unwrap())));
        assert_eq!(p.receiver_cores, Some(need(c.receiver.as_ref().unwrap())));
        // the NIC's node 1, without the CPU that took its interrupts at that end
        let n = p.sender_cores.unwrap() as usize;
        let want: CpuSet = (9..16).take(n).collect();
        assert_eq!(p.sender_cpus, want);
        assert!(!p.receiver_cpus.contains(12) && p.receiver_cpus.is_subset(&set("8-15")));
        assert!(p.rule.contains("NUMA node 1"), "{}", p.rule);

        // --rate wins over the interface's speed
        let m = Measured {
            rate_bps: Some(400e9),
            ..measured(bytes)
        };
        let p4 = cost_of(&test, &m).unwrap().projection.unwrap();
        assert_eq!(p4.rate_source, "--rate");
        assert!(p4.sender_cores.unwrap() >= p.sender_cores.unwrap() * 3);

        // the CPU-bound verdict quotes it
        let words = verdict_words(&c, Role::Sender).unwrap();
        assert!(words.starts_with("one core moves "), "{words}");
        assert!(
            words.contains(&format!("needs {n} sending core")),
            "{words}"
        );
        assert!(
            words.contains(&format!("-P {n} on {}", want.words())),
            "{words}"
        );
    }

    #[test]
    fn a_shared_host_charges_softirq_once_and_places_the_ends_apart() {
        let mut tx = end(Role::Sender, "same", 9, 8, 5.0);
        let mut rx = end(Role::Receiver, "same", 10, 8, 5.0);
        for e in [&mut tx, &mut rx] {
            e.iface = Some("lo".into());
            e.iface_speed_mbps = None;
            e.nic_numa_node = None;
            e.total.cpus = vec![cpu(9, 90.0, 8.0, 0, 50_000), cpu(10, 90.0, 2.0, 0, 1000)];
        }
        let test = TestObservation::combine(tx, Ok(Some(&rx)), true);
        // no link speed on lo: no projection without --rate
        let c = cost_of(&test, &measured(10_000_000_000)).unwrap();
        assert!(c.projection.is_none());
        assert_eq!(c.sender.as_ref().unwrap().softirq_cpu_s, 0.0);
        assert!((c.receiver.as_ref().unwrap().softirq_cpu_s - 1.0).abs() < 1e-9);
        assert!(
            c.notes[0].contains("charged to the receiver"),
            "{:?}",
            c.notes
        );
        let m = Measured {
            rate_bps: Some(100e9),
            ..measured(10_000_000_000)
        };
        let p = cost_of(&test, &m).unwrap().projection.unwrap();
        assert!(!p.sender_cpus.intersects(&p.receiver_cpus), "{p:?}");
        assert_eq!(p.rule, "all online CPUs 0-15");
        // 1 Tbit/s needs more cores than the host has: the ends overlap, and it is said
        let m = Measured {
            rate_bps: Some(1e12),
            ..measured(10_000_000_000)
        };
        let c = cost_of(&test, &m).unwrap();
        let p = c.projection.as_ref().unwrap();
        assert!(p.sender_cpus.intersects(&p.receiver_cpus), "{p:?}");
        assert!(
            c.notes.iter().any(|n| n.contains("too few CPUs (16)")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn no_cost_without_worker_time_or_bytes_or_for_bidir() {
        let tx = end(Role::Sender, "a", 9, 8, 5.0);
        let mut rx = end(Role::Receiver, "b", 10, 12, 5.0);
        rx.total.worker_cpu_s = None;
        let test = TestObservation::combine(tx.clone(), Ok(Some(&rx)), true);
        let c = cost_of(&test, &measured(1_000_000)).unwrap();
        assert!(c.receiver.is_none());
        assert!(c.notes.iter().any(|n| n.starts_with("receiver: no worker")));
        assert!(cost_of(&test, &Measured::default()).is_none());
        let mut both = tx;
        both.role = Role::Both;
        let t = TestObservation::local_only(both, "x");
        assert!(cost_of(&t, &measured(1_000_000)).is_none());
    }

    #[test]
    fn zero_copy_send_on_one_host_is_said_in_the_notes_and_the_verdict() {
        let mut tx = end(Role::Sender, "same", 0, 1, 2.0);
        let mut rx = end(Role::Receiver, "same", 1, 1, 2.0);
        for e in [&mut tx, &mut rx] {
            e.iface = Some("lo".into());
        }
        let one_host = TestObservation::combine(tx.clone(), Ok(Some(&rx)), true);
        let m = Measured {
            zero_copy_send: Some("sendfile".into()),
            ..measured(10_000_000_000)
        };
        let c = cost_of(&one_host, &m).unwrap();
        let per_core = BitsPerSecond::from_gbps(c.sender.as_ref().unwrap().gbps_per_core);
        let note = c
            .notes
            .iter()
            .find(|n| n.starts_with("zero-copy send (sendfile)"));
        let note = note.unwrap_or_else(|| panic!("{:?}", c.notes));
        assert!(
            note.contains(&format!("one sending core moves {per_core}")),
            "{note}"
        );
        let v = crate::verdict_of(&one_host, &m);
        assert!(v.also.iter().any(|a| a.line == *note), "{v:?}");
        // a copy, or two hosts: nothing said
        let v = crate::verdict_of(&one_host, &measured(10_000_000_000));
        assert!(!v.also.iter().any(|a| a.starts_with("zero-copy")), "{v:?}");
        let two = TestObservation::combine(
            end(Role::Sender, "a", 9, 8, 2.0),
            Ok(Some(&end(Role::Receiver, "b", 10, 12, 2.0))),
            true,
        );
        assert!(zero_copy_on_one_host(&two, &m, None).is_none());
    }
}
