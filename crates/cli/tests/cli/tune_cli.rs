//! The tune command line: the plan for the captured Ryzen host as an engineer would write it,
//! refusals with their exit codes, the emitted script, and revert's conflict handling.

use crate::{host_common, need};

use std::process::Command;

use host_common::*;

fn crow() -> String {
    fixtures()
        .join("crow-9900x-cx5-x4")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn the_ryzen_plan_is_the_one_an_engineer_would_write() {
    let root = crow();
    let o = tune(&root, &["--app-cpus", "6", "--irq-policy", "l3"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    eprintln!("{out}");
    // IRQs on 7-11, the one stray completion vector (mlx5_comp3 on CPU 3) moved, none on CPU 6
    assert!(out.contains("IRQ CPUs 7-11"));
    assert!(out.contains("IRQ 111 mlx5_comp3 (queue vector) from CPU 3 to CPU 10"));
    assert_eq!(
        out.matches("smp_affinity_list").count(),
        2,
        "one IRQ step: {out}"
    );
    // buffers from 100 Gbit/s x 10 ms: 2 x 125 MB -> 256 MiB
    for line in [
        "sysctl -w net.core.rmem_max=268435456",
        "sysctl -w net.core.wmem_max=268435456",
        "sysctl -w 'net.ipv4.tcp_rmem=4096 131072 268435456'",
        "sysctl -w 'net.ipv4.tcp_wmem=4096 16384 268435456'",
        "sysctl -w net.core.default_qdisc=fq",
        "sysctl -w net.ipv4.tcp_mtu_probing=1",
    ] {
        assert!(out.contains(line), "missing {line}");
    }
    // governor performance for the app CPU and the IRQ CPUs, nothing else
    for c in 6..=11 {
        assert!(out.contains(&format!(
            "echo performance > /sys/devices/system/cpu/cpufreq/policy{c}/scaling_governor"
        )));
    }
    for c in 0..=5 {
        assert!(!out.contains(&format!("policy{c}/scaling_governor")));
    }
    // only reno and cubic: congestion control stays, with the reason
    assert!(!out.contains("tcp_congestion_control"));
    assert!(out.contains("cubic stays: this kernel offers only reno cubic"));
    // what no setting fixes
    assert!(out.contains("pcie-link-downgraded"));
    assert!(out.contains("reseat the card"));
    assert!(out.contains("nic-temperature-high"));
    assert!(out.contains("airflow"));
    assert!(out.contains("Dry run: nothing changed"));
}

#[test]
fn refusals_have_one_line_and_their_exit_code() {
    let root = crow();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--iface", "eth9"], 6, "unknown interface \"eth9\""),
        (&["--app-cpus", "6,40"], 6, "CPU 40 is not online"),
        (&["--app-cpus", ""], 2, "--app-cpus"),
        (&["--app-cpus", "x"], 2, "--app-cpus"),
        (
            &["--app-cpus", "6", "--irq-cpus", "6-8"],
            2,
            "--allow-irq-on-app-cpus",
        ),
        (&["--irq-policy", "l3"], 2, "needs --app-cpus"),
        (
            &["--app-cpus", "6-11", "--irq-policy", "l3"],
            2,
            "no CPU left",
        ),
        (&["--mtu", "20"], 2, "--mtu 20"),
        (&["--only", "nonsense"], 2, "--only nonsense"),
    ];
    for (args, code, needle) in cases {
        let o = tune(&root, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {}", text(&o));
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // explicitly allowed overlap is a plan
    let o = tune(
        &root,
        &[
            "--app-cpus",
            "6",
            "--irq-cpus",
            "6-8",
            "--allow-irq-on-app-cpus",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn apply_on_the_live_host_without_root_is_refused() {
    if !need::tool(
        "apply_on_the_live_host_without_root_is_refused",
        "setpriv",
        "--version",
        "util-linux",
    ) {
        return;
    }
    let uid = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        // already unprivileged: run directly
        let o = run(&["tune", "--only", "stack", "--apply"]);
        assert_eq!(o.status.code(), Some(6), "{}", text(&o));
        return;
    }
    for args in [
        vec!["tune", "--only", "stack", "--apply"],
        vec!["tune", "revert", "/var/lib/wirespeed/none.jsonl"],
    ] {
        let o = Command::new("setpriv")
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                bin(),
            ])
            .args(&args[..])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(6), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("needs root"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn emitted_scripts_are_valid_shell_for_every_host() {
    for (name, host) in hosts() {
        let (iface, apps) = cases(&host);
        let root = host.to_string_lossy().into_owned();
        let o = tune(
            &root,
            &[
                "--iface",
                &iface,
                "--app-cpus",
                &apps[0],
                "--mtu",
                "9000",
                "--emit-script",
            ],
        );
        assert!(o.status.success(), "{name}: {}", text(&o));
        let script = String::from_utf8(o.stdout).unwrap();
        assert!(script.starts_with("#!/bin/sh\n"), "{name}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune.sh");
        std::fs::write(&path, &script).unwrap();
        let check = Command::new("sh").arg("-n").arg(&path).output().unwrap();
        assert!(check.status.success(), "{name}: {}", text(&check));
    }
}

#[test]
fn revert_leaves_a_value_changed_since_unless_forced() {
    let (_t, tree) = temp_copy(&fixtures().join("crow-9900x-cx5-x4"));
    let root = tree.to_string_lossy().into_owned();
    let original = snapshot(&tree);
    let o = tune(&root, &["--app-cpus", "6", "--irq-policy", "l3", "--apply"]);
    assert!(o.status.success(), "{}", text(&o));
    // someone else raises rmem_max after tune did
    let rmem = tree.join("proc/sys/net/core/rmem_max");
    std::fs::write(&rmem, "536870912\n").unwrap();
    let o = run(&["tune", "revert", "--root", &root]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("CHANGED SINCE, left alone"), "{out}");
    assert!(
        out.contains("now 536870912, tune wrote 268435456; original 212992"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&rmem).unwrap(), "536870912\n");
    let o = run(&["tune", "status", "--root", &root]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("partly reverted"),
        "{}",
        text(&o)
    );
    let o = run(&["tune", "revert", "--root", &root, "--force"]);
    assert!(o.status.success(), "{}", text(&o));
    let now = snapshot(&tree);
    assert!(now == original, "{:#?}", diff(&original, &now));
}

#[test]
fn revert_goes_around_a_damaged_journal_line_and_names_it() {
    let (_t, tree) = temp_copy(&fixtures().join("crow-9900x-cx5-x4"));
    let root = tree.to_string_lossy().into_owned();
    let original = snapshot(&tree);
    let o = tune(&root, &["--app-cpus", "6", "--irq-policy", "l3", "--apply"]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = tree.join("var/lib/wirespeed");
    let journal = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    // A line in the middle replaced by garbage holding a terminal escape sequence.
    let text_j = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text_j.lines().collect();
    let end = lines.len() - 1;
    lines.insert(end, "\u{1b}]0;pwned\u{7} not json");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let o = run(&["tune", "revert", "--root", &root]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("could not read line(s) {}", end + 1)),
        "{out}"
    );
    assert!(
        !out.contains('\u{1b}'),
        "control characters are not printed raw"
    );
    let now = snapshot(&tree);
    assert!(now == original, "{:#?}", diff(&original, &now));
}

#[test]
fn a_journal_that_does_not_exist_is_an_io_error() {
    let (_t, tree) = temp_copy(&fixtures().join("crow-9900x-cx5-tuned"));
    let root = tree.to_string_lossy().into_owned();
    let o = run(&["tune", "revert", "--root", &root, "journal-none.jsonl"]);
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    let o = run(&["tune", "status", "--root", &root]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("No journals"));
}

#[test]
fn a_snapshot_plans_like_its_tree_and_cannot_be_applied() {
    let root = crow();
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("crow.tar.gz");
    let snap = snap.to_str().unwrap();
    let o = run(&["capture", "-o", snap, "--root", &root]);
    assert!(o.status.success(), "{}", text(&o));
    let args = ["--app-cpus", "6", "--irq-policy", "l3", "--json"];
    let from_tree = tune(&root, &args);
    let from_snap = run(&[&["tune", "--snapshot", snap][..], &args[..]].concat());
    assert!(from_snap.status.success(), "{}", text(&from_snap));
    let mut a: serde_json::Value = serde_json::from_slice(&from_tree.stdout).unwrap();
    let mut b: serde_json::Value = serde_json::from_slice(&from_snap.stdout).unwrap();
    a["root"] = serde_json::Value::Null;
    b["root"] = serde_json::Value::Null;
    assert_eq!(a, b);
    let o = run(&["tune", "--snapshot", snap, "--apply"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn an_app_on_the_other_node_gets_a_plan_whose_first_line_says_where_to_run_it() {
    let ice = fixtures().join("ice-e810-2s-xeon").display().to_string();
    let o = tune(
        &ice,
        &[
            "--iface",
            "ens5f0np0",
            "--app-cpus",
            "2",
            "--irq-policy",
            "l3",
            "--only",
            "irq",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("FIRST: run the application on ens5f0np0's NUMA node 1 (CPUs 16-31,48-63), not on CPU 2 (node 0): e.g. --app-cpus 16"),
        "{out}"
    );
    assert!(first.contains("-A 16"), "{first}");
    // IRQs placed for the app on CPU 16: the queue vector on CPU 16 moves, none lands on 16 or
    // its SMT sibling 48, and no step touches a vector no driver requested (217-232)
    assert!(out.contains("IRQ CPUs 17-31,49-63"), "{out}");
    assert!(out.contains("/proc/irq/201/smp_affinity_list"), "{out}");
    for irq in 217..233 {
        assert!(!out.contains(&format!("/proc/irq/{irq}/")), "{out}");
    }
}

#[test]
fn vectors_no_driver_requested_are_never_in_a_plan() {
    let bnxt = fixtures().join("bnxt-57508-epyc").display().to_string();
    for app in ["20", "6"] {
        let o = tune(
            &bnxt,
            &["--iface", "ens2f0np0", "--app-cpus", app, "--emit-script"],
        );
        assert!(o.status.success(), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        // the queue vectors are placed (the script holds the whole wanted state, one
        // `set_irq NAME NUMBER CPUS` line per IRQ) ...
        assert!(out.contains("set_irq ens2f0np0-TxRx-0 120 "), "{out}");
        // ... the vectors reserved for bnxt_re never
        for irq in 128..137 {
            assert!(!out.contains(&format!(" {irq} ")), "app {app}: {out}");
            assert!(!out.contains(&format!("IRQ {irq} ")), "app {app}: {out}");
        }
        // nor in the plan's steps
        let o = tune(
            &bnxt,
            &["--iface", "ens2f0np0", "--app-cpus", app, "--json"],
        );
        let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let irqs: Vec<u64> = plan["boot"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["change"]["irq"].as_u64())
            .collect();
        assert!(!irqs.is_empty(), "app {app}: {plan}");
        assert!(
            irqs.iter().all(|i| (120..128).contains(i)),
            "app {app}: {irqs:?}"
        );
    }
}

/// The ice host with the GSO/GRO sizes a 6.8 kernel reports (at 64 KiB, the driver taking
/// 524280): doctor's `big-tcp-off` becomes a `link-sizes` step; flow control is a step only
/// with `--pause`/`--rx-pause`/`--tx-pause`, and the two spellings do not mix.
#[test]
fn big_tcp_is_a_step_and_flow_control_one_only_on_request() {
    let t = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-a")
        .arg(fixtures().join("ice-e810-2s-xeon").join("."))
        .arg(t.path())
        .status()
        .unwrap();
    assert!(status.success());
    let net = std::fs::canonicalize(t.path().join("sys/class/net/ens5f0np0")).unwrap();
    for (f, v) in [
        ("gso_max_size", "65536"),
        ("gro_max_size", "65536"),
        ("tso_max_size", "524280"),
    ] {
        std::fs::write(net.join(f), format!("{v}\n")).unwrap();
    }
    let root = t.path().to_str().unwrap();
    let o = tune(root, &["--only", "link,pause", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{plan}");
    assert_eq!(steps[0]["finding"], "big-tcp-off");
    assert_eq!(steps[0]["change"]["kind"], "link-sizes");
    assert_eq!(steps[0]["change"]["set"]["gso_max_size"], 185_000);
    assert_eq!(
        steps[0]["command"],
        "ip link set dev ens5f0np0 gso_max_size 185000 gro_max_size 185000"
    );
    // flow control is on (rx and tx) on this host: turning rx off is a requested step
    let o = tune(root, &["--only", "pause", "--rx-pause", "off", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{plan}");
    assert_eq!(steps[0]["change"]["kind"], "pause");
    assert_eq!(steps[0]["command"], "ethtool -A ens5f0np0 rx off");
    assert_eq!(steps[0]["current"], "rx on");
    // --pause both: already so, nothing to change
    let o = tune(root, &["--only", "pause", "--pause", "both", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(plan["steps"].as_array().unwrap().is_empty(), "{plan}");
    // on a tree both steps are skipped, and nothing is journaled for them
    let o = tune(root, &["--only", "link,pause", "--pause", "off", "--apply"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("GSO/GRO sizes can only be set on the live host"),
        "{out}"
    );
    assert!(
        out.contains("flow control can only be set on the live host"),
        "{out}"
    );
    // the two spellings do not mix
    let o = tune(root, &["--pause", "both", "--rx-pause", "on"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// `wirespeed ARGS`, killed if it runs past a hang bound (a FIFO waited on would never end).
fn run_bounded(args: &[&str]) -> std::process::Output {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let mut child = Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60); // a hang detector, not a bound
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("wirespeed {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Issue 37, item 7, at the command line: a FIFO named like the newest journal is listed as
/// unreadable by `tune status` (exit 1) and refused by `tune revert` (exit 7), at once; a
/// journal that is a link to a file of the tree is refused and nothing is written through it;
/// a journal cut after its first line makes revert say it is truncated and exit 1, never
/// "0 restored" and 0 while the changes stay.
#[test]
fn hostile_journals_are_refused_or_reported_at_the_command_line() {
    let (_t, tree) = temp_copy(&fixtures().join("crow-9900x-cx5-x4"));
    let root = tree.to_string_lossy().into_owned();
    let o = tune(&root, &["--app-cpus", "6", "--irq-policy", "l3", "--apply"]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = tree.join("var/lib/wirespeed");
    let journal = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let applied = snapshot(&tree);

    // cut after its first line
    let full = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, &full[..full.find('\n').unwrap() + 1]).unwrap();
    for _ in 0..2 {
        let o = run_bounded(&["tune", "revert", "--root", &root]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("truncated"), "{}", text(&o));
        assert!(out.contains("0 restored"), "{}", text(&o));
    }
    let o = run_bounded(&["tune", "status", "--root", &root]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("truncated"),
        "{}",
        text(&o)
    );
    std::fs::write(&journal, &full).unwrap();

    // a newer "journal" that is a link to a kernel value of the tree
    let rmem = tree.join("proc/sys/net/core/rmem_max");
    let rmem_before = std::fs::read(&rmem).unwrap();
    let link = dir.join("journal-20990101T000000Z-1.jsonl");
    std::os::unix::fs::symlink("../../../proc/sys/net/core/rmem_max", &link).unwrap();
    for args in [vec![], vec!["--force"]] {
        let o = run_bounded(&[&["tune", "revert", "--root", &root][..], &args].concat());
        assert_eq!(o.status.code(), Some(7), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("symbolic link"),
            "{}",
            text(&o)
        );
    }
    assert_eq!(std::fs::read(&rmem).unwrap(), rmem_before);
    std::fs::remove_file(&link).unwrap();

    // a newer "journal" that is a FIFO: no reader ever comes
    let fifo = dir.join("journal-20990101T000000Z-2.jsonl");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let o = run_bounded(&["tune", "status", "--root", &root]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("FIFO, not a regular file"),
        "{}",
        text(&o)
    );
    let o = run_bounded(&["tune", "revert", "--root", &root]);
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("FIFO"),
        "{}",
        text(&o)
    );
    std::fs::remove_file(&fifo).unwrap();
    // the tree is as apply left it; the real journal, whole again, reverts by its name
    assert!(snapshot(&tree) == applied);
    let name = journal.file_name().unwrap().to_string_lossy().into_owned();
    let o = run_bounded(&["tune", "revert", "--root", &root, &name]);
    assert!(o.status.success(), "{}", text(&o));
}
