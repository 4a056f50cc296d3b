//! Every document kind in every format report writes it in, through [`render::write`]: the
//! recorded test, `--repeat`, sweep and latency documents and doctor on the 9900X fixture. Each
//! cell of the table is written and checked for what that kind's exporter puts there (its
//! JSON read back as the same kind, its page self-contained, its CSV's header); a cell the
//! kind has no form for is refused with its reason, never written empty. The texts report
//! draws outside a [`Document`] — tune's plan and what `--apply` did, doctor's topology —
//! are checked at the end.

use std::path::PathBuf;

use wirespeed_report::doc::{Document, Kind};
use wirespeed_report::render::{self, Format, RenderError};

fn data(name: &str) -> Document {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    Document::parse(&std::fs::read(&p).unwrap()).unwrap()
}

fn crow_facts() -> wirespeed_host::HostFacts {
    let root = wirespeed_host::Root::new(format!(
        "{}/../../tests/fixtures/hosts/crow-9900x-cx5-x4",
        env!("CARGO_MANIFEST_DIR")
    ));
    wirespeed_host::collect(&root)
}

fn doctor_doc() -> Document {
    let facts = crow_facts();
    let opts = wirespeed_doctor::Options::default();
    let findings = wirespeed_doctor::diagnose(&facts, &opts).unwrap();
    let host = wirespeed_doctor::report::HostInfo {
        hostname: facts.hostname.clone(),
        kernel: facts.kernel.clone(),
        source: "snapshot".into(),
        path: None,
    };
    Document::Doctor(Box::new(wirespeed_doctor::report::Report::new(
        "wirespeed test",
        host,
        &opts,
        findings,
        facts,
    )))
}

/// What each kind's text holds, and the start of its CSV's header.
fn expected(kind: Kind) -> (&'static str, Option<&'static str>) {
    match kind {
        Kind::Test => (" sender", Some("stream,start_s,")),
        Kind::Repeat => (" runs: min ", Some("run,bits_per_second,")),
        Kind::Sweep | Kind::IrqSweep => ("median Gbit/s, rows: ", Some("client_cpu,server_cpu,")),
        Kind::Latency => ("one-way core-to-core latency, ns", Some("cpu_a,cpu_b,")),
        Kind::Doctor => ("wirespeed doctor: ", None),
    }
}

#[test]
fn every_kind_in_every_format() {
    let docs = [
        data("test.json"),
        data("repeat.json"),
        data("sweep.json"),
        data("latency.json"),
        doctor_doc(),
    ];
    let kinds: Vec<Kind> = docs.iter().map(Document::kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::Test,
            Kind::Repeat,
            Kind::Sweep,
            Kind::Latency,
            Kind::Doctor
        ]
    );
    let mut written = 0;
    for doc in &docs {
        let kind = doc.kind();
        let (text_start, csv_head) = expected(kind);
        for format in Format::ALL {
            let mut out = Vec::new();
            let r = render::write(&mut out, doc, format, "table");
            let supported = render::formats(kind).contains(&format);
            if !supported {
                match r {
                    Err(e @ RenderError::Unsupported { .. }) => assert_eq!(
                        e.to_string(),
                        format!("a {kind} document has no {} form", format.as_str())
                    ),
                    other => panic!("{kind} as {format:?}: {other:?}"),
                }
                assert!(out.is_empty(), "{kind} as {format:?} wrote before refusing");
                continue;
            }
            r.unwrap_or_else(|e| panic!("{kind} as {format:?}: {e}"));
            let s = String::from_utf8(out).unwrap();
            match format {
                Format::Text => assert!(s.contains(text_start), "{kind} text:\n{s}"),
                Format::Json => {
                    let back = Document::parse(s.as_bytes())
                        .unwrap_or_else(|e| panic!("{kind} JSON read back: {e}"));
                    assert_eq!(back.kind(), kind);
                }
                Format::Html => {
                    assert!(s.starts_with("<!DOCTYPE html>"), "{kind} page");
                    assert!(!s.contains("<script"), "{kind} page has a script");
                }
                Format::Csv => {
                    let head = csv_head.expect("a kind with CSV names its header");
                    assert!(s.starts_with(head), "{kind} CSV:\n{s}");
                    assert!(s.lines().count() >= 2, "{kind} CSV has no rows:\n{s}");
                }
            }
            written += 1;
        }
    }
    // four formats for four kinds, three for doctor's report (no CSV)
    assert_eq!(written, 4 * 4 + 3);
}

#[test]
fn latency_csv_is_the_csv_exporter_s() {
    // `latency --csv` and `report --csv` of a latency document are one exporter: the same bytes.
    let Document::Latency(l) = data("latency.json") else {
        panic!("not a latency document");
    };
    let mut direct = Vec::new();
    wirespeed_report::csv::latency(&l.matrix, &mut direct).unwrap();
    let mut via = Vec::new();
    wirespeed_report::csv::render(&Document::Latency(l.clone()), &mut via).unwrap();
    assert_eq!(direct, via);
    let text = String::from_utf8(direct).unwrap();
    let pairs = l.matrix.cpus.len() * (l.matrix.cpus.len() - 1) / 2;
    assert_eq!(text.lines().count(), 1 + pairs, "{text}");
}

#[test]
fn plan_applied_and_topology_texts() {
    use wirespeed_tune::plan::{ApplyReport, StepReport, StepStatus};
    use wirespeed_tune::{Change, Form, Note, Plan, Step};
    let mut plan = Plan::new("/");
    plan.hostname = Some("crow".into());
    plan.run_app = Some("run the application on CPU 6".into());
    plan.steps.push(Step {
        finding: "sysctl-rmem-max".into(),
        summary: "raise the receive buffer limit".into(),
        setting: "net.core.rmem_max".into(),
        current: "212992".into(),
        new: "67108864".into(),
        command: "sysctl -w net.core.rmem_max=67108864".into(),
        change: Change::Write {
            path: "/proc/sys/net/core/rmem_max".into(),
            form: Form::Words,
            value: "67108864".into(),
        },
    });
    plan.notes.push(Note {
        finding: Some("pcie-downtrained".into()),
        text: "a PCIe link is hardware".into(),
    });
    let mut out = Vec::new();
    wirespeed_report::plan::write_plan(&mut out, &plan).unwrap();
    let t = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "FIRST: run the application on CPU 6", "{t}");
    assert_eq!(lines[1], "tune plan for crow (root /)", "{t}");
    assert!(t.contains("$ sysctl -w net.core.rmem_max=67108864"), "{t}");
    assert!(
        t.contains("  - pcie-downtrained: a PCIe link is hardware"),
        "{t}"
    );

    let report = ApplyReport {
        journal: "/var/lib/wirespeed/journal".into(),
        steps: vec![StepReport {
            step: 0,
            setting: "net.core.rmem_max".into(),
            status: StepStatus::Applied,
            detail: None,
        }],
    };
    let mut out = Vec::new();
    wirespeed_report::plan::write_applied(&mut out, &plan, &report).unwrap();
    let t = String::from_utf8(out).unwrap();
    assert!(t.contains("Applied 1 of 1 steps (0 already set"), "{t}");

    let topo = wirespeed_doctor::topo::build(&crow_facts());
    let mut out = Vec::new();
    wirespeed_report::doctor::write_topo(&mut out, &topo).unwrap();
    let t = String::from_utf8(out).unwrap();
    assert!(t.contains("CPUs online"), "{t}");
    assert!(t.contains("  IRQs   "), "{t}");
}
