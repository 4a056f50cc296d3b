//! A test: headline figures and verdict, throughput per stream and sum, retransmits, cwnd and
//! RTT, per-CPU work on both ends with the NIC's interrupts. A `--repeat`: every run as a point,
//! coloured by mode, and what each mode's runs share.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wirespeed_model::observation::{CpuUse, Role};
use wirespeed_model::{CpuSet, EndObservation, Worker};

use super::chart::{self, Series};
use super::topology::{topology, Nic, Picture};
use super::{esc, rate};
use crate::doc::{headline_throughput as throughput, Document, RepeatDoc};
use crate::model::TestResult;

fn role(e: &EndObservation) -> &'static str {
    match e.role {
        Role::Sender => "sender",
        Role::Receiver => "receiver",
        Role::Both => "sender and receiver",
    }
}

fn fact(h: &mut String, k: &str, v: &str) {
    let _ = write!(h, "<div><span>{}</span>{}</div>", esc(k), esc(v));
}

/// What was run, as the document says it: which end, the target (a client's host and port)
/// or the peer (a server's), the command line, the time, this end's and the peer's versions,
/// the system. Only what the document carries.
pub(super) fn what_ran(t: &TestResult) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    let st = &t.start;
    if let Some(c) = &st.connecting_to {
        v.push(("end", "client".to_string()));
        v.push(("target", c.host.clone()));
        v.push(("port", c.port.to_string()));
    } else if let Some(a) = &st.accepted_connection {
        v.push(("end", "server".to_string()));
        if let Some(p) = st.connected.first().map(|c| c.local_port) {
            v.push(("port", p.to_string()));
        }
        v.push(("client", format!("{} port {}", a.host, a.port)));
    }
    if let Some(ts) = &st.test_start {
        let mut what = format!(
            "{} {}, {} s",
            ts.protocol,
            if ts.num_streams == 1 {
                "1 stream".to_string()
            } else {
                format!("{} streams", ts.num_streams)
            },
            ts.duration
        );
        if ts.reverse != 0 {
            what.push_str(", reverse (-R)");
        }
        if ts.bidir.is_some_and(|b| b != 0) {
            what.push_str(", both directions (--bidir)");
        }
        v.push(("test", what));
    }
    let w = t.wirespeed.as_ref();
    if let Some(c) = w.map(|w| &w.command).filter(|c| !c.is_empty()) {
        v.push(("command", shell_words(c)));
    }
    if let Some(ts) = &st.timestamp {
        v.push(("time", ts.time.clone()));
    }
    if !st.version.is_empty() {
        v.push(("version", st.version.clone()));
    }
    if let Some(p) = w
        .and_then(|w| w.peer.as_ref())
        .and_then(|p| p.version.clone())
    {
        v.push(("peer version", p));
    }
    if !st.system_info.is_empty() {
        v.push(("system", st.system_info.clone()));
    }
    v
}

/// Arguments as a shell would need them typed: plain words bare, others in single quotes.
fn shell_words(args: &[String]) -> String {
    let plain = |a: &str| {
        !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c))
    };
    args.iter()
        .map(|a| {
            if plain(a) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A test's chart data: (start s, end s, value) per interval.
struct Charts {
    /// Gbit/s per stream (by socket).
    per_stream: BTreeMap<u32, Vec<(f64, f64, f64)>>,
    /// Gbit/s of all streams.
    sum: Vec<(f64, f64, f64)>,
    retr: Vec<(f64, f64, f64)>,
    /// KiB per stream.
    cwnd: BTreeMap<u32, Vec<(f64, f64, f64)>>,
    /// µs per stream.
    rtt: BTreeMap<u32, Vec<(f64, f64, f64)>>,
}

impl Charts {
    fn of(t: &TestResult) -> Charts {
        let mut c = Charts {
            per_stream: BTreeMap::new(),
            sum: Vec::new(),
            retr: Vec::new(),
            cwnd: BTreeMap::new(),
            rtt: BTreeMap::new(),
        };
        for iv in &t.intervals {
            for s in &iv.streams {
                let id = s.socket.unwrap_or(0);
                c.per_stream
                    .entry(id)
                    .or_default()
                    .push((s.start, s.end, s.bits_per_second / 1e9));
                if let Some(w) = s.snd_cwnd {
                    c.cwnd
                        .entry(id)
                        .or_default()
                        .push((s.start, s.end, w as f64 / 1024.0));
                }
                if let Some(r) = s.rtt {
                    c.rtt
                        .entry(id)
                        .or_default()
                        .push((s.start, s.end, r as f64));
                }
            }
            c.sum
                .push((iv.sum.start, iv.sum.end, iv.sum.bits_per_second / 1e9));
            if let Some(r) = iv.sum.retransmits {
                c.retr.push((iv.sum.start, iv.sum.end, r as f64));
            }
        }
        c
    }
}

/// The largest value of each chart over every document of a page: documents side by side draw
/// the same quantity on one y scale (0 for one document: each chart its own).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Scales {
    /// Gbit/s: a test's streams and sum, a repeat's runs.
    pub throughput: f64,
    pub retransmits: f64,
    pub cwnd: f64,
    pub rtt: f64,
    /// Some document of the page draws retransmits, cwnd, RTT: one that lacks them keeps their
    /// places (a placeholder), so the columns of documents side by side stay aligned.
    pub has_retransmits: bool,
    pub has_cwnd: bool,
    pub has_rtt: bool,
}

impl Scales {
    pub(super) fn of(docs: &[&Document]) -> Scales {
        let mut s = Scales::default();
        let max = |pts: &[(f64, f64, f64)]| pts.iter().map(|p| p.2).fold(0.0, f64::max);
        let add_test = |s: &mut Scales, t: &TestResult| {
            let c = Charts::of(t);
            for p in c.per_stream.values() {
                s.throughput = s.throughput.max(max(p));
            }
            s.throughput = s.throughput.max(max(&c.sum));
            s.retransmits = s.retransmits.max(max(&c.retr));
            for p in c.cwnd.values() {
                s.cwnd = s.cwnd.max(max(p));
            }
            for p in c.rtt.values() {
                s.rtt = s.rtt.max(max(p));
            }
            s.has_retransmits |= !c.retr.is_empty();
            s.has_cwnd |= !c.cwnd.is_empty();
            s.has_rtt |= !c.rtt.is_empty();
        };
        for d in docs {
            match d {
                Document::Test(t) => add_test(&mut s, t),
                Document::Repeat(r) => {
                    for t in &r.runs {
                        if let Some(b) = throughput(t) {
                            s.throughput = s.throughput.max(b / 1e9);
                        }
                    }
                }
                _ => {}
            }
        }
        s
    }
}

pub(super) fn test(h: &mut String, t: &TestResult, scales: &Scales) {
    let ran = what_ran(t);
    if !ran.is_empty() {
        h.push_str("<div class=\"facts run\">");
        for (k, v) in &ran {
            if *k == "command" {
                let _ = write!(
                    h,
                    "<div class=\"cmd\"><span>{}</span><code>{}</code></div>",
                    esc(k),
                    esc(v)
                );
            } else {
                fact(h, k, v);
            }
        }
        h.push_str("</div>\n");
    }
    if let Some(e) = &t.error {
        let _ = write!(
            h,
            "<div class=\"verdict\" style=\"border-left-color:var(--crit)\"><b>error</b>: {}</div>",
            esc(e)
        );
    }
    h.push_str("<div class=\"facts\">");
    if let Some(bps) = throughput(t) {
        fact(h, "throughput", &rate(bps));
    }
    if let Some(r) = t.end.sum_sent.as_ref().and_then(|s| s.retransmits) {
        fact(h, "retransmits", &r.to_string());
    }
    if let Some(ts) = &t.start.test_start {
        fact(h, "protocol", &ts.protocol);
        fact(h, "streams", &ts.num_streams.to_string());
        if ts.reverse != 0 {
            fact(h, "direction", "reverse (server sends)");
        }
    }
    if let Some(c) = &t.end.sender_tcp_congestion {
        fact(h, "congestion control", c);
    }
    if let Some(w) = &t.wirespeed {
        if let Some(p) = &w.send_path {
            fact(h, "send path", p);
        }
        let app: Vec<String> = w.workers.iter().map(|k| k.cpus_seen.to_string()).collect();
        if !app.is_empty() {
            fact(h, "local CPUs", &app.join(", "));
        }
        let rem: Vec<String> = w
            .remote_workers
            .iter()
            .map(|k| k.cpus_seen.to_string())
            .collect();
        if !rem.is_empty() {
            fact(h, "peer CPUs", &rem.join(", "));
        }
    }
    h.push_str("</div>\n");
    if let Some(v) = t.wirespeed.as_ref().and_then(|w| w.verdict.as_ref()) {
        let _ = write!(
            h,
            "<div class=\"verdict\"><b>{}</b> <code>{}</code>",
            esc(&v.line),
            v.id
        );
        if !v.also.is_empty() {
            h.push_str("<ul>");
            for a in &v.also {
                let _ = write!(h, "<li>also: {}</li>", esc(a));
            }
            h.push_str("</ul>");
        }
        if let Some(obs) = t.wirespeed.as_ref().and_then(|w| w.observation.as_ref()) {
            evidence(h, obs.ends());
        }
        h.push_str("</div>\n");
    }

    let c = Charts::of(t);
    h.push_str("<div class=\"charts\">");
    if !c.sum.is_empty() {
        let mut series: Vec<Series> = c
            .per_stream
            .iter()
            .map(|(id, p)| Series {
                name: format!("stream {id}"),
                points: p.clone(),
                sum: false,
            })
            .collect();
        if c.per_stream.len() > 1 || c.per_stream.is_empty() {
            series.push(Series {
                name: "sum".into(),
                points: c.sum.clone(),
                sum: true,
            });
        } else if let Some(s) = series.first_mut() {
            s.name.push_str(" (= sum)");
            s.sum = true;
        }
        chart::line_chart(
            h,
            "Throughput per stream and sum",
            "Gbit/s",
            &series,
            scales.throughput,
        );
    }
    // This end's TCP_INFO covers only what it sent.
    let why = if t
        .start
        .test_start
        .as_ref()
        .is_some_and(|ts| ts.reverse != 0)
    {
        "not in this document: this end received (-R); the sender's TCP_INFO is the peer's"
    } else {
        "not in this document"
    };
    const RETR: &str = "Retransmits per interval (all streams)";
    const CWND: &str = "Congestion window (sender)";
    const RTT: &str = "Smoothed RTT (sender)";
    if !c.retr.is_empty() {
        chart::bar_chart(h, RETR, "retransmits", &c.retr, scales.retransmits);
    } else if scales.has_retransmits {
        chart::placeholder(h, RETR, why);
    }
    let named = |m: &BTreeMap<u32, Vec<(f64, f64, f64)>>| -> Vec<Series> {
        m.iter()
            .map(|(id, p)| Series {
                name: format!("stream {id}"),
                points: p.clone(),
                sum: false,
            })
            .collect()
    };
    if !c.cwnd.is_empty() {
        chart::line_chart(h, CWND, "KiB", &named(&c.cwnd), scales.cwnd);
    } else if scales.has_cwnd {
        chart::placeholder(h, CWND, why);
    }
    if !c.rtt.is_empty() {
        chart::line_chart(h, RTT, "µs", &named(&c.rtt), scales.rtt);
    } else if scales.has_rtt {
        chart::placeholder(h, RTT, why);
    }
    h.push_str("</div>\n<div class=\"charts\">");

    match t.wirespeed.as_ref().and_then(|w| w.observation.as_ref()) {
        Some(obs) => {
            let w = t.wirespeed.as_ref();
            let local = w.map(|w| &w.workers[..]).unwrap_or(&[]);
            let remote_workers = w.map(|w| &w.remote_workers[..]).unwrap_or(&[]);
            end_cpus(h, &obs.local, local);
            if let Some(remote) = &obs.remote {
                end_cpus(h, remote, remote_workers);
            }
            if let Some(why) = &obs.remote_absent {
                let _ = write!(h, "<p class=\"mute\">peer's CPUs: {}</p>", esc(why));
            }
            h.push_str("</div>\n");
            // Both ends on one host (loopback) see the same CPUs: drawn once.
            let other = obs
                .remote
                .as_ref()
                .filter(|r| !same_host(&obs.local, r));
            let mut app = worker_cpus(&obs.local, local);
            let mut who = format!(
                "the {} ({})",
                role(&obs.local),
                obs.local.host.as_deref().unwrap_or("?")
            );
            if let (Some(r), None) = (&obs.remote, other) {
                app = app.union(&worker_cpus(r, remote_workers));
                who = format!(
                    "{} (both ends)",
                    obs.local.host.as_deref().unwrap_or("?")
                );
            }
            end_time(h, &obs.local, &app, &who);
            end_topology(h, &obs.local, &app, &who);
            if let Some(r) = other {
                let app = worker_cpus(r, remote_workers);
                let who = format!("the {} ({})", role(r), r.host.as_deref().unwrap_or("?"));
                end_time(h, r, &app, &who);
                end_topology(h, r, &app, &who);
            }
        }
        None => h.push_str(
            "<p class=\"mute\">no per-CPU observation in this document (iperf3 output, or a test without one)</p></div>\n",
        ),
    }
}

/// Two ends observed on one host (a loopback test): same host name, topology and interface.
fn same_host(a: &EndObservation, b: &EndObservation) -> bool {
    a.on_same_host(b) && a.iface == b.iface
}

/// The CPUs that ran an end's workers: as it observed them, else as the result lists them.
fn worker_cpus(e: &EndObservation, workers: &[Worker]) -> CpuSet {
    let app = e.total.app_cpus();
    if app.is_empty() {
        CpuSet::from_cpus(workers.iter().flat_map(|k| k.cpus_seen.iter()))
    } else {
        app
    }
}

/// Per-CPU busy and softirq shares over time, one heatmap each (rows: the CPUs, ordered by
/// node and L3 group; columns: the intervals), the CPUs that ran the workers or served the
/// NIC's interrupts named as such.
fn end_time(h: &mut String, e: &EndObservation, app: &CpuSet, who: &str) {
    let ivs: Vec<&wirespeed_model::observation::IntervalObservation> = e
        .intervals
        .iter()
        .filter(|iv| iv.start.zip(iv.end).is_some() && !iv.cpus.is_empty())
        .collect();
    if ivs.is_empty() {
        return;
    }
    let times: Vec<(f64, f64)> = ivs.iter().filter_map(|iv| iv.start.zip(iv.end)).collect();
    let cols: Vec<u32> = (0..times.len() as u32).collect();
    let mut rows: Vec<u32> = e.total.cpus.iter().map(|c| c.cpu).collect();
    for iv in &ivs {
        rows.extend(iv.cpus.iter().map(|c| c.cpu));
    }
    rows.sort_unstable();
    rows.dedup();
    let irq: CpuSet = CpuSet::from_cpus(
        e.total
            .cpus
            .iter()
            .filter(|c| c.nic_irqs > 0)
            .map(|c| c.cpu),
    );
    let row_name = |c: u32| {
        let mut tags = Vec::new();
        if app.contains(c) {
            tags.push("app");
        }
        if irq.contains(c) {
            tags.push("irq");
        }
        if tags.is_empty() {
            format!("CPU {c}")
        } else {
            format!("{} · CPU {c}", tags.join("+"))
        }
    };
    let cpu_at = |r: u32, c: u32| ivs.get(c as usize).and_then(|iv| iv.cpu(r));
    let detail = |r: u32, c: u32| {
        cpu_at(r, c).map(|u| {
            // the busy shares: all but idle, the last
            format!(
                "{}; NIC interrupts {}",
                chart::shares_text(&u.shares()[..5]),
                u.nic_irqs
            )
        })
    };
    let topo = Some(&e.topology).filter(|t| !t.l3_groups.is_empty() || !t.nodes.is_empty());
    let fmt = |v: f64| format!("{v:.0} %");
    h.push_str("<div class=\"charts\">");
    let busy: fn(&CpuUse) -> f64 = |u| u.busy().get();
    let softirq: fn(&CpuUse) -> f64 = |u| u.softirq.get();
    for (what, get) in [("busy (all but idle)", busy), ("softirq", softirq)] {
        let caption = format!("CPU {what} per interval on {who}");
        let value = |r: u32, c: u32| cpu_at(r, c).map(get);
        chart::heatmap(
            h,
            &chart::Heatmap {
                caption: &caption,
                row_label: "CPU",
                col_label: "time (s)",
                rows: &rows,
                cols: &cols,
                times: Some(&times),
                value: &value,
                fmt: &fmt,
                detail: Some(&detail),
                row_name: Some(&row_name),
                range: Some((0.0, 100.0)),
                higher_is_better: false,
                bright: Some("bright = a higher share"),
                best: None,
                worst: None,
                topo,
            },
        );
    }
    h.push_str("</div>\n<p class=\"mute\">app: a CPU that ran the workers; irq: a CPU that served the NIC's interrupts</p>\n");
}

/// The end's host drawn: nodes, L3 groups, CPUs (those that ran the workers marked), the NIC on
/// its node with the interrupts each CPU served.
fn end_topology(h: &mut String, e: &EndObservation, app: &CpuSet, who: &str) {
    let mut all: Vec<u32> = e.total.cpus.iter().map(|c| c.cpu).collect();
    for n in &e.topology.nodes {
        all.extend(n.iter());
    }
    all.sort_unstable();
    all.dedup();
    let mut nodes: Vec<(Option<u32>, Vec<u32>)> = e
        .topology
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, set)| !set.is_empty())
        .map(|(i, set)| (Some(i as u32), set.iter().collect()))
        .collect();
    if nodes.is_empty() {
        nodes.push((None, all.clone()));
    }
    let l3 = e
        .topology
        .l3_groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            (
                format!("L3 group {i} · {}", wirespeed_model::units::cpu_list(g)),
                g.clone(),
            )
        })
        .collect();
    let mut nics = Vec::new();
    if let Some(iface) = &e.iface {
        let served: Vec<&CpuUse> = e.total.cpus.iter().filter(|c| c.nic_irqs > 0).collect();
        let on = CpuSet::from_cpus(served.iter().map(|c| c.cpu));
        let total: u64 = served.iter().map(|c| c.nic_irqs).sum();
        let mut first_line = Vec::new();
        if let Some(m) = e.iface_mtu {
            first_line.push(format!("MTU {m}"));
        }
        if let Some(s) = e.iface_speed_mbps {
            first_line.push(wirespeed_model::units::speed_mbps(s));
        }
        first_line.push(match e.nic_numa_node {
            Some(n) => format!("NUMA node {n}"),
            None => "NUMA node unknown".into(),
        });
        nics.push(Nic {
            name: iface.clone(),
            node: e.nic_numa_node,
            title: format!(
                "{iface}: {total} interrupts during the test (IRQs {})",
                if e.nic_irqs.is_empty() {
                    "unknown".to_string()
                } else {
                    e.nic_irqs
                        .iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
            lines: [
                first_line.join(" · "),
                if on.is_empty() {
                    "no NIC interrupts counted".into()
                } else {
                    format!(
                        "{total} interrupts served on {}",
                        wirespeed_model::units::cpu_list(&on)
                    )
                },
            ],
            per_cpu: served
                .iter()
                .map(|c| {
                    (
                        c.cpu,
                        (
                            chart::short_count(c.nic_irqs),
                            format!("{} interrupts of {iface} served here", c.nic_irqs),
                        ),
                    )
                })
                .collect(),
            legend: format!("{iface}: interrupts that CPU served during the test"),
        });
    }
    topology(
        h,
        &Picture {
            caption: format!(
                "Topology of {who}: NUMA nodes → L3 groups → CPUs; the NIC on its node; where the workers ran and the interrupts landed"
            ),
            nodes,
            l3,
            marked: app.clone(),
            marked_word: "ran the workers".into(),
            nics,
            orphan_note: "the NIC's NUMA node is not known (numa_node -1, or a virtual interface)".into(),
        },
    );
}

/// The busiest CPU of each end, as numbers (the verdict's evidence).
fn evidence<'a>(h: &mut String, ends: impl Iterator<Item = &'a EndObservation>) {
    let mut rows = String::new();
    for e in ends {
        let Some(c) = e
            .total
            .cpus
            .iter()
            .max_by(|a, b| a.busy().get().total_cmp(&b.busy().get()))
        else {
            continue;
        };
        let _ = write!(
            rows,
            "<tr><td>{} ({})</td><td>CPU {}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td></tr>",
            esc(e.host.as_deref().unwrap_or("?")),
            role(e),
            c.cpu,
            c.user.get(),
            c.system.get(),
            c.irq.get(),
            c.softirq.get(),
            c.idle.get(),
            c.nic_irqs
        );
        if let Some(tcp) = &e.total.tcp {
            let _ = write!(
                rows,
                "<tr><td colspan=\"8\" class=\"mute\">TCP: receive window limited {:.1} % of the time, send buffer limited {:.1} %</td></tr>",
                tcp.rwnd_share().get(),
                tcp.sndbuf_share().get()
            );
        }
    }
    if !rows.is_empty() {
        let _ = write!(
            h,
            "<table><thead><tr><th>busiest CPU of</th><th></th><th class=\"num\">user %</th><th class=\"num\">system %</th><th class=\"num\">irq %</th><th class=\"num\">softirq %</th><th class=\"num\">idle %</th><th class=\"num\">NIC irqs</th></tr></thead><tbody>{rows}</tbody></table>"
        );
    }
}

fn end_cpus(h: &mut String, e: &EndObservation, workers: &[Worker]) {
    h.push_str("<div>");
    let app = worker_cpus(e, workers);
    let caption = format!(
        "Per-CPU work on the {} ({}{}), whole test",
        role(e),
        e.host.as_deref().unwrap_or("?"),
        e.iface
            .as_deref()
            .map(|i| format!(", {i}"))
            .unwrap_or_default()
    );
    chart::cpu_bars(
        h,
        &caption,
        &e.total.cpus,
        &app,
        Some(&e.topology).filter(|t| !t.l3_groups.is_empty() || !t.nodes.is_empty()),
        true,
    );
    if e.nic_irqs.is_empty() {
        for n in &e.notes {
            let _ = write!(h, "<p class=\"mute\">{}</p>", esc(n));
        }
    } else {
        let _ = write!(
            h,
            "<p class=\"mute\">NIC interrupts counted: IRQs {}{}</p>",
            esc(&e
                .nic_irqs
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")),
            e.nic_numa_node
                .map(|n| format!("; the NIC sits on NUMA node {n}"))
                .unwrap_or_default()
        );
    }
    h.push_str("</div>");
}

pub(super) fn repeat(h: &mut String, r: &RepeatDoc, scales: &Scales) {
    let s = &r.repeat.stats;
    h.push_str("<div class=\"facts\">");
    fact(h, "runs", &r.runs.len().to_string());
    fact(h, "median", &rate(s.median.0));
    fact(
        h,
        "min – max",
        &format!("{} – {}", rate(s.min.0), rate(s.max.0)),
    );
    fact(
        h,
        "spread",
        &format!("{:.1} % of the median", s.spread.get()),
    );
    fact(h, "modes", &r.repeat.modes.len().to_string());
    h.push_str("</div>\n");
    if let Some(c) = &r.repeat.conclusion {
        let _ = write!(h, "<div class=\"verdict\"><b>{}</b></div>", esc(c));
    }

    // Every run as a point: x = run number, y = throughput, colour = mode.
    let pts: Vec<(usize, f64)> = r
        .runs
        .iter()
        .enumerate()
        .filter_map(|(i, t)| throughput(t).map(|b| (i + 1, b / 1e9)))
        .collect();
    let w = 640.0;
    let hgt = 220.0;
    let (l, rr, tp, b) = (58.0, 14.0, 12.0, 38.0);
    let pw = w - l - rr;
    let ph = hgt - tp - b;
    let axis = chart::Axis::values(pts.iter().map(|p| p.1).fold(scales.throughput, f64::max));
    let ymax = axis.max;
    let n = pts.len().max(1) as f64;
    let _ = write!(
        h,
        "<figure><figcaption>Every run, coloured by mode</figcaption><svg viewBox=\"0 0 {w} {hgt}\" role=\"img\" aria-label=\"runs\">"
    );
    for v in axis.ticks() {
        let y = tp + ph - ph * v / ymax;
        let _ = write!(
            h,
            "<line class=\"gr\" x1=\"{l}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            l + pw,
            l - 6.0,
            y + 4.0,
            axis.label(v)
        );
    }
    let _ = write!(
        h,
        "<text class=\"m\" transform=\"translate(13 {:.1}) rotate(-90)\" text-anchor=\"middle\">Gbit/s</text><text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">run</text>",
        tp + ph / 2.0,
        l + pw / 2.0,
        hgt - 4.0
    );
    for (m, mode) in r.repeat.modes.iter().enumerate() {
        let y = tp + ph - ph * (mode.stats.median.0 / 1e9) / ymax;
        let _ = write!(
            h,
            "<line class=\"ln s{}\" x1=\"{l}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" style=\"stroke-dasharray:5 4;stroke-width:1\"><title>mode {}: median {}</title></line>",
            m % 8,
            l + pw,
            m + 1,
            esc(&rate(mode.stats.median.0))
        );
    }
    for &(run, g) in &pts {
        let x = l + pw * (run as f64 - 0.5) / n;
        let y = tp + ph - ph * g / ymax;
        let mode = r.mode_of(run);
        let cls = mode.map(|m| format!("s{}", m % 8)).unwrap_or("sum".into());
        let _ = write!(
            h,
            "<circle class=\"pt {cls}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"6\"><title>run {run}: {g:.2} Gbit/s{}</title></circle><text class=\"m\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{run}</text>",
            mode.map(|m| format!(", mode {}", m + 1)).unwrap_or_default(),
            tp + ph + 15.0
        );
    }
    h.push_str("</svg><div class=\"legend\">");
    for (m, _) in r.repeat.modes.iter().enumerate() {
        let _ = write!(
            h,
            "<span><i style=\"background:var(--s{})\"></i>mode {}</span>",
            m % 8,
            m + 1
        );
    }
    h.push_str("<span>dashed: each mode's median</span></div></figure>\n");

    h.push_str("<h3>Modes and what their runs share</h3><table><thead><tr><th>mode</th><th>runs</th><th class=\"num\">median</th><th>range</th><th>placement the runs share</th></tr></thead><tbody>\n");
    for (m, mode) in r.repeat.modes.iter().enumerate() {
        let runs: Vec<String> = mode.runs.iter().map(|x| x.to_string()).collect();
        let _ = writeln!(
            h,
            "<tr><td><i style=\"display:inline-block;width:10px;height:10px;border-radius:5px;background:var(--s{})\"></i> {}</td><td>{}</td><td class=\"num\">{}</td><td>{} – {}</td><td>{}{}</td></tr>",
            m % 8,
            m + 1,
            runs.join(", "),
            esc(&rate(mode.stats.median.0)),
            esc(&rate(mode.stats.min.0)),
            esc(&rate(mode.stats.max.0)),
            esc(&mode.description),
            mode.placement
                .as_ref()
                .map(shares)
                .filter(|w| !w.is_empty())
                .map(|w| format!("<br><span class=\"mute\">{}</span>", esc(&w)))
                .unwrap_or_default()
        );
    }
    h.push_str("</tbody></table>\n");
    if !r.repeat.method.is_empty() {
        let _ = write!(h, "<p class=\"mute\">modes: {}</p>", esc(&r.repeat.method));
    }
}

/// How much of the NIC's interrupts and RX softirqs the placement's CPUs took, in words
/// (`RX softirq: 93.8 % of 28501 on those CPUs`); the CPUs and their relation to the app are in
/// the mode's description.
fn shares(p: &wirespeed_model::doc::IrqPlacement) -> String {
    let mut out = Vec::new();
    for (s, what) in [(&p.irq, "NIC interrupts"), (&p.softirq, "RX softirq")] {
        if let Some(s) = s {
            out.push(format!(
                "{what}: {:.1} % of {} on those CPUs",
                s.share.get(),
                s.events
            ));
        }
    }
    out.join("; ")
}
