//! tune on a temporary copy of every captured host (and every app-CPU variant of it): plan,
//! apply (with --persist), let the emulated kernel react, doctor no longer reports what the plan
//! addressed; revert, let the emulated kernel react again, and the tree is byte-identical to the
//! original. Also: apply then revert without any emulation is byte-identical; a real SIGKILL in
//! the middle of an apply, then revert, is byte-identical.

use crate::host_common;

use std::fs;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use host_common::*;
use wirespeed_tune::journal::{JournalFile, State};

/// Ids tune uses for settings no doctor check covers (doctor cannot confirm them): what the user
/// asked for and where the plan moves the application. Every other step answers a doctor
/// finding.
const TUNE_ONLY: &[&str] = &["requested", "persist", "app-on-nic-node"];

/// `wirespeed tune --root TREE --iface IF --app-cpus APP ARGS`.
fn tune_app(tree: &std::path::Path, iface: &str, app: &str, args: &[&str]) -> Output {
    let root = tree.to_str().unwrap();
    tune(
        root,
        &[&["--iface", iface, "--app-cpus", app][..], args].concat(),
    )
}

fn plan_json(tree: &std::path::Path, iface: &str, app: &str, extra: &[&str]) -> serde_json::Value {
    let o = tune_app(tree, iface, app, &[&["--json"][..], extra].concat());
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn addressed(plan: &serde_json::Value) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for s in plan["steps"].as_array().unwrap() {
        let f = s["finding"].as_str().unwrap().to_string();
        if !ids.contains(&f) {
            ids.push(f);
        }
    }
    ids
}

#[test]
fn every_host_plan_apply_doctor_revert() {
    for (name, host) in hosts() {
        let (iface, apps) = cases(&host);
        for app in apps {
            let (_t, tree) = temp_copy(&host);
            let root = tree.to_str().unwrap().to_string();
            let original = snapshot(&tree);
            let before = doctor_ids(&tree, &iface, &app, 10.0);

            let plan = plan_json(&tree, &iface, &app, &["--persist"]);
            let ids = addressed(&plan);
            // an app on another node than the NIC: the plan is made for the CPUs its first line
            // names, so the doctor's view after apply is the one for those CPUs
            let planned_app = match plan.get("run_app") {
                Some(line) if !line.is_null() => {
                    assert!(line.as_str().unwrap().starts_with("run the application on"));
                    plan["app_cpus"].as_str().unwrap().to_string()
                }
                _ => app.clone(),
            };
            let before_planned = doctor_ids(&tree, &iface, &planned_app, 10.0);
            // every doctor id the plan claims to fix is one doctor reports now
            for id in ids.iter().filter(|i| !TUNE_ONLY.contains(&i.as_str())) {
                assert!(
                    before.contains(id),
                    "{name} app {app}: plan addresses {id}, doctor did not report it ({before:?})"
                );
            }
            // never a queue IRQ on an app CPU (none of these runs allows it)
            let app_set = wirespeed_host::CpuSet::parse_list(&app).unwrap();
            for s in plan["steps"].as_array().unwrap() {
                if s["change"]["kind"] == "irq-affinity" {
                    let cpus =
                        wirespeed_host::CpuSet::parse_list(s["change"]["cpus"].as_str().unwrap())
                            .unwrap();
                    assert!(!cpus.intersects(&app_set), "{name} app {app}: {s}");
                }
            }

            let o = tune_app(&tree, &iface, &app, &["--persist", "--apply", "--json"]);
            assert!(o.status.success(), "{name} app {app}: {}", text(&o));
            let applied: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let steps = applied["plan"]["steps"].as_array().unwrap().len();
            if steps > 0 {
                for s in applied["apply"]["steps"].as_array().unwrap() {
                    assert!(
                        ["applied", "skipped"].contains(&s["status"].as_str().unwrap()),
                        "{name} app {app}: {s}"
                    );
                }
            }

            // EMULATION: the kernel's reaction to the IRQ writes (see emulate_kernel_irq_affinity)
            let moved = emulate_kernel_irq_affinity(&tree);
            let after = doctor_ids(&tree, &iface, &planned_app, 10.0);
            for id in ids.iter().filter(|i| !TUNE_ONLY.contains(&i.as_str())) {
                assert!(
                    !after.contains(id),
                    "{name} app {app}: {id} still reported after apply (before {before:?}, after {after:?})"
                );
            }
            // and tune never brings a finding that was not there
            for id in &after {
                assert!(
                    before.contains(id) || before_planned.contains(id),
                    "{name} app {app}: apply introduced {id} (before {before:?}, after {after:?})"
                );
            }
            eprintln!(
                "{name} --app-cpus {app}: {steps} steps; doctor before {before:?}; after {after:?}; emulated IRQs {moved:?}"
            );

            let o = run(&["tune", "revert", "--root", &root]);
            assert!(o.status.success(), "{name} app {app}: {}", text(&o));
            // EMULATION again: the kernel follows the restored requests
            emulate_kernel_irq_affinity(&tree);
            let now = snapshot(&tree);
            assert!(
                now == original,
                "{name} app {app}: not byte-identical after revert: {:#?}",
                diff(&original, &now)
            );
            // the doctor's view is the original one again
            assert_eq!(
                doctor_ids(&tree, &iface, &app, 10.0),
                before,
                "{name} app {app}"
            );
        }
    }
}

#[test]
fn apply_then_revert_without_emulation_is_byte_identical_and_twice_is_harmless() {
    for (name, host) in hosts() {
        let (iface, apps) = cases(&host);
        let (_t, tree) = temp_copy(&host);
        let root = tree.to_str().unwrap().to_string();
        let original = snapshot(&tree);
        let o = tune_app(
            &tree,
            &iface,
            &apps[0],
            &[
                "--mtu",
                "9000",
                "--txqueuelen",
                "10000",
                "--persist",
                "--apply",
            ],
        );
        assert!(o.status.success(), "{name}: {}", text(&o));
        let changed = snapshot(&tree) != original;
        let o = run(&["tune", "revert", "--root", &root]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let now = snapshot(&tree);
        assert!(now == original, "{name}: {:#?}", diff(&original, &now));
        // a second revert of the same journal: nothing to do, nothing changes
        let status = run(&["tune", "status", "--root", &root, "--json"]);
        let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        let journals = st["journals"].as_array().unwrap();
        if changed {
            assert_eq!(journals.len(), 1, "{name}: {st}");
            assert_eq!(journals[0]["state"], "reverted");
            let j = journals[0]["journal"].as_str().unwrap();
            let o = run(&["tune", "revert", "--root", &root, j]);
            assert!(o.status.success(), "{}", text(&o));
            assert!(String::from_utf8_lossy(&o.stdout).contains("already reverted"));
            let o = run(&["tune", "revert", "--root", &root]);
            assert!(o.status.success(), "{}", text(&o));
            assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to revert"));
            assert!(snapshot(&tree) == original, "{name}");
        }
    }
}

/// doctor and tune give the same advice on congestion control for every captured host: what
/// the kernel offers (the trees carry no `/lib/modules`, so whether it ships bbr as a module is
/// not known, and both say so instead of one running `modprobe` and the other not).
#[test]
fn doctor_and_tune_agree_on_congestion_control() {
    for (name, host) in hosts() {
        let (iface, apps) = cases(&host);
        let root = host.to_str().unwrap();
        let d = run(&[
            "doctor",
            "--root",
            root,
            "--iface",
            &iface,
            "--app-cpus",
            &apps[0],
            "--json",
        ]);
        let doc: serde_json::Value = serde_json::from_slice(&d.stdout).unwrap();
        let cc = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "congestion-control-loss-based");
        let plan = plan_json(&host, &iface, &apps[0], &[]);
        let step =
            plan["steps"].as_array().unwrap().iter().find(|s| {
                s["finding"] == "congestion-control-loss-based" && s["current"] != s["new"]
            });
        let note = plan["notes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["finding"] == "congestion-control-loss-based");
        let Some(cc) = cc else {
            assert!(
                step.is_none() && note.is_none(),
                "{name}: tune acts, doctor is silent"
            );
            continue;
        };
        let fix: Vec<&str> = cc["fix"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        match (step, note) {
            (Some(step), None) => {
                let to = step["new"].as_str().unwrap();
                assert!(
                    fix.iter()
                        .any(|l| l.ends_with(&format!("tcp_congestion_control={to}"))),
                    "{name}: tune sets {to}, doctor's fix {fix:?}"
                );
            }
            (None, Some(note)) => {
                let text = note["text"].as_str().unwrap();
                // No command doctor gives that tune says cannot work.
                assert!(
                    fix.iter().all(|l| l.starts_with('#')),
                    "{name}: doctor {fix:?}, tune {text}"
                );
                let words = fix[0].trim_start_matches("# ");
                assert!(
                    text.ends_with(words),
                    "{name}: doctor {words:?}, tune {text:?}"
                );
            }
            other => panic!("{name}: doctor reports it, tune {other:?}"),
        }
    }
}

/// `tune --root DIR --apply` as a user reads it: each step's outcome once (not the plan and
/// then the results), the journal named where it is (under DIR), and `tune revert --root DIR`
/// finds it; a second revert names DIR's journal directory when it finds nothing.
#[test]
fn apply_under_a_root_names_the_real_journal_and_each_step_once() {
    let (name, host) = hosts()
        .into_iter()
        .find(|(n, _)| n == "crow-9900x-cx5-x4")
        .expect("the crow-9900x-cx5-x4 fixture");
    let (iface, apps) = cases(&host);
    let (_t, tree) = temp_copy(&host);
    let root = tree.to_str().unwrap().to_string();
    let plan = plan_json(&tree, &iface, &apps[0], &[]);
    let o = tune_app(&tree, &iface, &apps[0], &["--apply"]);
    assert!(o.status.success(), "{name}: {}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let journal = out
        .lines()
        .find_map(|l| l.strip_prefix("Journal: "))
        .unwrap_or_else(|| panic!("no Journal line: {out}"));
    assert!(
        journal.starts_with(&format!("{root}/var/lib/wirespeed/journal-")),
        "{journal} is not under {root}: {out}"
    );
    assert!(std::path::Path::new(journal).is_file(), "{journal}: {out}");
    // Each planned setting is on one line, with its outcome.
    let steps = plan["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{name}: nothing planned");
    for s in steps {
        let setting = s["setting"].as_str().unwrap();
        let short = setting
            .strip_prefix("/sys/devices/system/cpu/")
            .unwrap_or(setting);
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| l.split_whitespace().any(|w| w == short || w == setting))
            .collect();
        assert_eq!(lines.len(), 1, "{setting} not once: {out}");
        // "applied", or "applied: kernel reports effective CPUs ..." for an IRQ.
        assert!(lines[0].contains("  applied"), "{}", lines[0]);
    }
    assert!(
        !out.contains("\n     $ "),
        "the plan's commands are not reprinted: {out}"
    );

    let o = run(&["tune", "revert", "--root", &root]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("{journal}: ")),
        "{}",
        text(&o)
    );
    let o = run(&["tune", "revert", "--root", &root]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!(
            "nothing to revert: no journal under {root}/var/lib/wirespeed that is not reverted"
        )),
        "{}",
        text(&o)
    );
}

#[test]
fn kill_9_during_apply_then_revert_is_byte_identical() {
    let host = fixtures().join("crow-9900x-cx5-x4");
    let (_t, tree) = temp_copy(&host);
    let root = tree.to_str().unwrap().to_string();
    let original = snapshot(&tree);
    let mut child = Command::new(bin())
        .args([
            "tune",
            "--root",
            &root,
            "--iface",
            "enp1s0f0np0",
            "--app-cpus",
            "6",
            "--irq-policy",
            "l3",
            "--persist",
            "--apply",
        ])
        .env("WIRESPEED_TUNE_STEP_DELAY_MS", "200")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait until a few changes are journaled (and written), then a real SIGKILL
    let jdir = tree.join("var/lib/wirespeed");
    let deadline = Instant::now() + Duration::from_secs(60); // a hang detector, not a bound
    let journal = loop {
        let found = fs::read_dir(&jdir).ok().and_then(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        });
        if let Some(p) = found {
            let t = fs::read_to_string(&p).unwrap_or_default();
            if t.matches("\"record\":\"change\"").count() >= 4 {
                break p;
            }
        }
        assert!(Instant::now() < deadline, "apply did not progress");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(!status.success());
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL");

    let text_j = fs::read_to_string(&journal).unwrap();
    let host_path = format!(
        "/var/lib/wirespeed/{}",
        journal.file_name().unwrap().to_string_lossy()
    );
    let jf = JournalFile::parse(&host_path, &text_j).unwrap();
    assert_eq!(jf.state(), State::Interrupted, "{text_j}");
    assert!(!text_j.contains("\"record\":\"end\""));
    let mid = snapshot(&tree);
    assert!(mid != original, "the kill landed before any write");
    eprintln!(
        "killed after {} journaled changes; {} files differ",
        jf.entries().len(),
        diff(&original, &mid).len()
    );

    let o = run(&["tune", "status", "--root", &root]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("interrupted"),
        "{}",
        text(&o)
    );
    let o = run(&["tune", "revert", "--root", &root]);
    assert!(o.status.success(), "{}", text(&o));
    let now = snapshot(&tree);
    assert!(now == original, "{:#?}", diff(&original, &now));
}

/// What a user does with a captured tree, with nothing playing the kernel: `tune --root COPY
/// --apply`, then `doctor --root COPY`. tune writes the IRQ views the kernel would show
/// (effective affinity among them), so doctor no longer reports what the plan fixed — the IRQ
/// placement and the governor of the CPUs the IRQs left alike; `tune revert` restores the copy
/// byte for byte.
#[test]
fn doctor_after_a_root_apply_sees_the_fixes_without_emulation() {
    for (name, host) in hosts() {
        let (iface, apps) = cases(&host);
        let app = &apps[0];
        let (_t, tree) = temp_copy(&host);
        let root = tree.to_str().unwrap().to_string();
        let original = snapshot(&tree);
        let doctor_cli = |app: &str| -> Vec<String> {
            let o = run(&[
                "doctor",
                "--root",
                &root,
                "--iface",
                &iface,
                "--app-cpus",
                app,
                "--json",
            ]);
            let v: serde_json::Value = serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|e| panic!("{name}: {e}: {}", text(&o)));
            v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["id"].as_str().unwrap().to_string())
                .collect()
        };
        let before = doctor_cli(app);
        let plan = plan_json(&tree, &iface, app, &[]);
        let ids: Vec<String> = addressed(&plan)
            .into_iter()
            .filter(|i| !TUNE_ONLY.contains(&i.as_str()))
            .collect();
        let planned_app = match plan.get("run_app") {
            Some(line) if !line.is_null() => plan["app_cpus"].as_str().unwrap().to_string(),
            _ => app.clone(),
        };
        let o = tune_app(&tree, &iface, app, &["--apply"]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let after = doctor_cli(&planned_app);
        for id in &ids {
            assert!(
                !after.contains(id),
                "{name}: doctor --root still reports {id} after tune --root --apply (before {before:?}, after {after:?})"
            );
        }
        eprintln!(
            "{name} --app-cpus {app}: fixed {ids:?}; doctor before {before:?}, after {after:?}"
        );
        let o = run(&["tune", "revert", "--root", &root]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let now = snapshot(&tree);
        assert!(
            now == original,
            "{name}: not byte-identical after revert: {:#?}",
            diff(&original, &now)
        );
    }
}
