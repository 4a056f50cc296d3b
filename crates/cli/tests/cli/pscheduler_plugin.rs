//! The pScheduler tool plugin in `deploy/pscheduler/wirespeed`: enumerate, can-run, duration
//! and participant-data answer as pScheduler expects; a real two-participant run on loopback
//! (participant 1's `run` serves, participant 0's `run` measures) goes through merged-results,
//! and the merged result validates against pScheduler's throughput result schema
//! (`tests/data/pscheduler/throughput-result-schema.json`, written from pScheduler's source); so does
//! a UDP loopback run. A hostile spec (a destination that is an option, values out of range,
//! durations without bound) is refused in pScheduler's words, never run and never a traceback.
//! Needs python3 with the jsonschema package (`python3-jsonschema`); prints `SKIP:` otherwise,
//! and fails instead when `CI` is set.

use crate::measure_common::free_port;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn plugin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/pscheduler/wirespeed")
        .join(name)
}

fn here(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pscheduler")
        .join(name)
}

/// Run `prog` with `input` on stdin and `conf` as the tool's configuration.
fn call(prog: &Path, args: &[&str], input: &str, conf: &Path) -> Output {
    // starts: by path (the plugin's scripts, read as scripts)
    let mut child = Command::new(prog)
        .args(args)
        .env("WIRESPEED_PSCHEDULER_CONF", conf)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", prog.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn call_json(name: &str, input: &Value, conf: &Path) -> Value {
    let o = call(&plugin(name), &[], &input.to_string(), conf);
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&o.stdout)))
}

/// Validate against the schema: the errors, empty when valid.
fn schema_errors(result: &Value, conf: &Path) -> String {
    let schema = here("throughput-result-schema.json");
    let o = call(
        &here("validate.py"),
        &[schema.to_str().unwrap()],
        &result.to_string(),
        conf,
    );
    match o.status.code() {
        Some(0) => String::new(),
        Some(1) => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => panic!("validate.py: {}", String::from_utf8_lossy(&o.stderr)),
    }
}

/// python3 with jsonschema, or a SKIP line (a failure under CI).
fn can_validate() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with jsonschema is missing and CI is set"
        );
        eprintln!("SKIP: pscheduler plugin tests need python3 and jsonschema (apt-get install python3-jsonschema)");
    }
    ok
}

fn conf(dir: &Path, port: u16) -> PathBuf {
    let p = dir.join("wirespeed.conf");
    std::fs::write(
        &p,
        json!({"wirespeed": env!("CARGO_BIN_EXE_wirespeed"), "server_port": port}).to_string(),
    )
    .unwrap();
    p
}

#[test]
fn enumerate_can_run_duration_and_participant_data() {
    if !can_validate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = conf(dir.path(), 45_001);
    let e = call_json("enumerate", &json!({}), &conf);
    assert_eq!(e["name"], "wirespeed");
    assert_eq!(e["tests"], json!(["throughput"]));

    let yes = call_json(
        "can-run",
        &json!({"type": "throughput", "spec": {"schema": 1, "dest": "h", "duration": "PT5S", "parallel": 4, "udp": true}}),
        &conf,
    );
    assert_eq!(yes, json!({"can-run": true}));
    let no = call_json(
        "can-run",
        &json!({"type": "throughput", "spec": {"dest": "h", "dscp": 3}}),
        &conf,
    );
    assert_eq!(no["can-run"], false);
    assert!(no["reasons"][0].as_str().unwrap().contains("dscp"), "{no}");
    let other = call_json("can-run", &json!({"type": "latency", "spec": {}}), &conf);
    assert_eq!(other["can-run"], false);

    // 5 s test + 1 s omit + setup, server wait and shutdown.
    let d = call_json(
        "duration",
        &json!({"spec": {"dest": "h", "duration": "PT5S", "omit": "PT1S"}}),
        &conf,
    );
    assert_eq!(d, json!({"duration": "PT13S"}));
    let bad = call(
        &plugin("duration"),
        &[],
        r#"{"spec": {"duration": "5 seconds"}}"#,
        &conf,
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ISO 8601"));

    assert_eq!(
        call_json("participant-data", &json!({"participant": 1}), &conf),
        json!({"schema": 1, "server_port": 45001})
    );
    assert_eq!(
        call_json("participant-data", &json!({"participant": 0}), &conf),
        json!({"schema": 1})
    );
    assert!(!call(&plugin("run"), &[], "not json", &conf)
        .status
        .success());
}

#[test]
fn two_participant_run_merges_into_a_valid_throughput_result() {
    if !can_validate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = conf(dir.path(), port);
    let pdata1 = call_json("participant-data", &json!({"participant": 1}), &conf);
    let test = json!({"type": "throughput", "spec": {"schema": 1, "dest": "127.0.0.1", "duration": "PT2S", "parallel": 2}});
    let input = |p: u32| {
        json!({
            "participant": p,
            "participant-data": [{"schema": 1}, pdata1],
            "test": test,
            "schedule": {"start": "2026-01-01T00:00:00Z", "duration": "PT30S"},
        })
    };
    let (r0, r1) = std::thread::scope(|s| {
        let server = s.spawn(|| call_json("run", &input(1), &conf));
        let client = call_json("run", &input(0), &conf);
        (client, server.join().unwrap())
    });
    assert_eq!(r0["succeeded"], true, "{r0}");
    assert_eq!(r1["succeeded"], true, "{r1}");
    let merged = call_json(
        "merged-results",
        &json!({"test": test, "results": [r0, r1]}),
        &conf,
    );
    let errors = schema_errors(&merged, &conf);
    assert!(errors.is_empty(), "schema: {errors}");
    assert_eq!(merged["succeeded"], true);
    let sum = &merged["summary"]["summary"];
    assert!(sum["throughput-bits"].as_f64().unwrap() > 0.0, "{sum}");
    assert!(
        sum["receiver-throughput-bits"].as_f64().unwrap() > 0.0,
        "{sum}"
    );
    assert_eq!(merged["summary"]["streams"].as_array().unwrap().len(), 2);
    assert!(!merged["intervals"].as_array().unwrap().is_empty());
    let diags = merged["diags"].as_str().unwrap();
    assert!(diags.contains("Participant 0:") && diags.contains("Participant 1:"));
    assert!(diags.contains("wirespeed doctor"), "{diags}");

    // The schema is not a rubber stamp: a result with a wrong type or an unknown member fails.
    let mut broken = merged.clone();
    broken["summary"]["summary"]["throughput-bits"] = json!("fast");
    broken["extra"] = json!(1);
    let errors = schema_errors(&broken, &conf);
    assert!(
        errors.contains("throughput-bits") || errors.contains("fast"),
        "{errors}"
    );
    assert!(errors.contains("extra"), "{errors}");
}

#[test]
fn udp_loopback_run_is_a_valid_throughput_result() {
    if !can_validate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = conf(dir.path(), free_port());
    let test = json!({"type": "throughput", "spec": {"dest": "127.0.0.1", "duration": "PT1S", "udp": true, "bandwidth": 20_000_000, "loopback": true}});
    let r0 = call_json(
        "run",
        &json!({
            "participant": 0,
            "participant-data": [{"schema": 1}],
            "test": test,
            "schedule": {"start": "2026-01-01T00:00:00Z", "duration": "PT20S"},
        }),
        &conf,
    );
    assert_eq!(r0["succeeded"], true, "{r0}");
    let merged = call_json(
        "merged-results",
        &json!({"test": test, "results": [r0]}),
        &conf,
    );
    let errors = schema_errors(&merged, &conf);
    assert!(errors.is_empty(), "schema: {errors}");
    let sum = &merged["summary"]["summary"];
    assert!(sum["sent"].as_i64().unwrap() > 0, "{sum}");
    assert!(sum["lost"].is_i64(), "{sum}");
    assert!(sum["jitter"].is_number(), "{sum}");
}

#[test]
fn a_failed_client_is_a_valid_failed_result() {
    if !can_validate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = conf(dir.path(), port);
    let test = json!({"type": "throughput", "spec": {"dest": "127.0.0.1", "duration": "PT1S"}});
    // Nobody serves the port: the client gives up after the server wait.
    let r0 = call_json(
        "run",
        &json!({
            "participant": 0,
            "participant-data": [{"schema": 1}, {"schema": 1, "server_port": port}],
            "test": test,
            "schedule": {"start": "2026-01-01T00:00:00Z", "duration": "PT15S"},
        }),
        &conf,
    );
    assert_eq!(r0["succeeded"], false, "{r0}");
    let merged = call_json(
        "merged-results",
        &json!({"test": test, "results": [r0, {"succeeded": false, "diags": "no client came", "error": "timeout"}]}),
        &conf,
    );
    let errors = schema_errors(&merged, &conf);
    assert!(errors.is_empty(), "schema: {errors}");
    assert_eq!(merged["succeeded"], false);
    assert!(
        merged["error"]
            .as_str()
            .unwrap()
            .contains("wirespeed client"),
        "{merged}"
    );
}

/// No Python traceback, and at most one line, on stderr.
fn no_traceback(what: &str, o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("Traceback"), "{what}: {err}");
    assert!(err.lines().count() <= 1, "{what}: {err}");
}

#[test]
fn hostile_specs_are_refused_in_pschedulers_words() {
    if !can_validate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = conf(dir.path(), free_port());
    let can_run = |spec: Value| -> Value {
        let o = call(
            &plugin("can-run"),
            &[],
            &json!({"type": "throughput", "spec": spec}).to_string(),
            &conf,
        );
        no_traceback("can-run", &o);
        assert!(o.status.success(), "can-run {spec}");
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // Destinations that are not a host: options first (`--loopback` once measured loopback and
    // called it a success), then what no host name is.
    for dest in [
        json!("--loopback"),
        json!("-L"),
        json!("-R"),
        json!("-"),
        json!(""),
        json!("a b"),
        json!("h;id"),
        json!("h..example"),
        json!("-h.example"),
        json!(7),
        json!(null),
    ] {
        let no = can_run(json!({"dest": dest, "duration": "PT5S"}));
        assert_eq!(no["can-run"], false, "dest {dest}: {no}");
        assert!(no["reasons"].to_string().contains("dest"), "{no}");
    }
    for dest in [
        "h.example",
        "h",
        "127.0.0.1",
        "::1",
        "fe80::1%eth0",
        "xn--bcher-kva.example.",
    ] {
        let yes = can_run(json!({"dest": dest, "duration": "PT5S"}));
        assert_eq!(yes, json!({"can-run": true}), "dest {dest}");
    }
    // Values out of range and durations without bound.
    for (key, value) in [
        ("local-address", json!("--loopback")),
        ("duration", json!("P99999999999W")),
        ("duration", json!(format!("PT{}S", "9".repeat(400)))),
        ("duration", json!("PT86401S")),
        ("omit", json!("PT1H")),
        ("interval", json!("PT0.01S")),
        ("link-rtt", json!("PT1H")),
        ("parallel", json!(100_000)),
        ("parallel", json!("4")),
        ("parallel", json!(true)),
        ("mss", json!(-1)),
        ("window-size", json!(1.5)),
        ("congestion", json!("-R")),
        ("ip-version", json!(5)),
    ] {
        let mut spec = json!({"dest": "h.example"});
        spec[key] = value.clone();
        let no = can_run(spec);
        assert_eq!(no["can-run"], false, "{key} {value}: {no}");
        assert!(no["reasons"].to_string().contains(key), "{key}: {no}");
    }

    // run refuses the same spec as a failed result (nothing measured), valid for merging.
    let run = |spec: Value, schedule: &str| -> Value {
        let input = json!({
            "participant": 0,
            "participant-data": [{"schema": 1}],
            "test": {"type": "throughput", "spec": spec},
            "schedule": {"start": "2026-01-01T00:00:00Z", "duration": schedule},
        });
        let o = call(&plugin("run"), &[], &input.to_string(), &conf);
        no_traceback("run", &o);
        assert!(o.status.success(), "run {input}");
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let spec = json!({"dest": "--loopback", "duration": "PT1S", "loopback": true});
    let r0 = run(spec.clone(), "PT20S");
    assert_eq!(r0["succeeded"], false, "{r0}");
    assert!(r0["error"].as_str().unwrap().contains("dest"), "{r0}");
    let merged = call_json(
        "merged-results",
        &json!({"test": {"type": "throughput", "spec": spec}, "results": [r0]}),
        &conf,
    );
    let errors = schema_errors(&merged, &conf);
    assert!(errors.is_empty(), "schema: {errors}");
    // A schedule without bound (once a traceback) is a failed result too.
    for schedule in ["P99999999999W", &format!("PT{}S", "9".repeat(400))] {
        let spec = json!({"dest": "127.0.0.1", "duration": "PT1S", "loopback": true});
        let r = run(spec, schedule);
        assert_eq!(r["succeeded"], false, "{r}");
        assert!(
            r["error"].as_str().unwrap().contains("schedule.duration"),
            "{r}"
        );
    }
    // duration: one line on stderr and exit 1.
    for d in ["P99999999999W", "PT86401S"] {
        let o = call(
            &plugin("duration"),
            &[],
            &json!({"spec": {"dest": "h", "duration": d}}).to_string(),
            &conf,
        );
        no_traceback("duration", &o);
        assert_eq!(o.status.code(), Some(1), "duration {d}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("longer than"));
    }
    // Input of the wrong shape anywhere: a pScheduler-shaped answer, never a traceback.
    for (prog, input) in [
        (
            "merged-results",
            json!({"results": [1, "x"], "test": {"spec": {"loopback": "yes"}}}),
        ),
        (
            "merged-results",
            json!({"results": [{"succeeded": true, "diags": 5}]}),
        ),
        ("participant-data", json!({"participant": [1]})),
        ("duration", json!({"spec": {"duration": ["PT1S"]}})),
        (
            "can-run",
            json!({"type": "throughput", "spec": {"dest": {"a": 1}}}),
        ),
        (
            "run",
            json!({"participant": 0, "participant-data": 5, "test": {"spec": {"dest": "h"}}, "schedule": {"duration": 30}}),
        ),
    ] {
        let o = call(&plugin(prog), &[], &input.to_string(), &conf);
        no_traceback(prog, &o);
    }
}
