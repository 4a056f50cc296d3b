//! `wirespeed latency` (and the sweep/repeat commands' argument checks) end to end.

use crate::measure_common;

use measure_common::online_cpus;

use crate::host_common::run as wirespeed;

#[test]
fn latency_matrix_on_this_machine() {
    if online_cpus() < 2 {
        eprintln!("SKIP: latency_matrix_on_this_machine because fewer than 2 CPUs are online");
        return;
    }
    let out = wirespeed(&[
        "latency",
        "--cpus",
        "0,1",
        "--samples",
        "30",
        "--round-trips",
        "30",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = j["matrix"].as_array().unwrap();
    assert_eq!(m.len(), 2);
    for (i, row) in m.iter().enumerate() {
        let row = row.as_array().unwrap();
        assert_eq!(row.len(), 2);
        for (k, cell) in row.iter().enumerate() {
            if i == k {
                assert!(cell.is_null());
            } else {
                let v = cell["mean_ns"].as_f64().unwrap();
                assert!(v > 0.0, "{cell}");
                assert!(cell["stderr_ns"].as_f64().unwrap() >= 0.0);
            }
        }
    }
    assert_eq!(j["min"]["a"], 1);

    let out = wirespeed(&[
        "latency",
        "--cpus",
        "0-1",
        "--samples",
        "10",
        "--round-trips",
        "10",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("one-way core-to-core latency, ns"),
        "{text}"
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["CPU", "0"]
    );
    assert!(
        lines[2].trim_start().starts_with("1 ") && lines[2].contains('±'),
        "{text}"
    );
    assert!(lines[3].starts_with("min "), "{text}");

    let out = wirespeed(&["latency", "--cpus", "0-1", "--samples", "10", "--csv"]);
    let csv = String::from_utf8(out.stdout).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.lines().nth(1).unwrap().starts_with("1,0,"));
}

#[test]
fn latency_rejects_bad_input_with_distinct_codes() {
    let code = |args: &[&str]| wirespeed(args).status.code();
    assert_eq!(code(&["latency", "--cpus", "x"]), Some(2));
    assert_eq!(code(&["latency", "--samples", "0"]), Some(2));
    assert_eq!(code(&["latency", "--cpus", "0"]), Some(2));
    // A CPU that is not online: host state forbids it.
    let out = wirespeed(&["latency", "--cpus", "0,4000"]);
    assert_eq!(out.status.code(), Some(6));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("4000"), "{err}");
}

/// `explain --why` on a recorded document (`-P 4`, unpinned, two namespaces behind a 2 Gbit/s
/// tbf, recorded on a host other builds loaded): every finding of the verdict is shown with its
/// bound and row, and why the verdict leads it; a document without a verdict, or no file, gets
/// one line and its exit code.
#[test]
fn explain_why_audits_a_recorded_verdict() {
    let doc = format!(
        "{}/tests/data/why-shaped-p4-unpinned-loaded.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = wirespeed(&["explain", "--why", &doc]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    let v = &j["wirespeed"]["verdict"];
    assert!(
        text.starts_with(&format!("Verdict: {} (", v["id"].as_str().unwrap())),
        "{text}"
    );
    let findings: Vec<&serde_json::Value> = v["also"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "finding")
        .collect();
    assert!(!findings.is_empty());
    for a in findings {
        let id = a["id"].as_str().unwrap();
        // the JSON's `binding` reads `bound` in words; `fact` and `consistent` as they are
        let word = match a["bound"].as_str().unwrap() {
            "binding" => "bound",
            other => other,
        };
        assert!(text.contains(&format!("- {id} ({word}")), "{id}: {text}");
    }
    // the fact under it says why it is not the verdict
    assert!(
        text.contains(
            "same-host is a fact about the setup with no evidence that it bound this test"
        ),
        "{text}"
    );
    // the table, and the refusals
    let table = wirespeed(&["explain", "--table"]);
    assert!(table.status.success());
    assert_eq!(
        String::from_utf8_lossy(&table.stdout).lines().count(),
        wirespeed_model::precedence::PRECEDENCE.len()
    );
    let missing = wirespeed(&["explain", "--why", "/nonexistent/result.json"]);
    assert_eq!(missing.status.code(), Some(7), "{missing:?}");
    assert_eq!(String::from_utf8_lossy(&missing.stderr).lines().count(), 1);
    let none = wirespeed(&["explain"]);
    assert_eq!(none.status.code(), Some(2), "{none:?}");
}
