//! `wirespeed doctor`, `topo` and `capture` end to end: exit codes, text and JSON reports on the
//! captured hosts, snapshots of a fixture tree and of this machine read back the same.

use crate::host_common;

use host_common::{fixtures, hosts, run};
use serde_json::Value;
use std::process::Output;

fn host(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn ids(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// `wirespeed doctor --root ROOT --iface IF --app-cpus APP ARGS`.
fn doctor(root: &str, iface: &str, app: &str, args: &[&str]) -> Output {
    let base = [
        "doctor",
        "--root",
        root,
        "--iface",
        iface,
        "--app-cpus",
        app,
    ];
    run(&[&base[..], args].concat())
}

#[test]
fn fixtures_exit_codes_and_json_schema() {
    for (_, dir) in hosts() {
        let exp = host_common::expected(&dir);
        let iface = exp["iface"].as_str().unwrap();
        let app = exp["app_cpus"].as_str().unwrap();
        let root = dir.display().to_string();
        let o = doctor(&root, iface, app, &["--json"]);
        let r = json(&o);
        assert_eq!(r["schema_version"], 1);
        assert_eq!(r["options"]["iface"], iface);
        assert!(r["facts"]["nics"].is_array());
        let got = ids(&r);
        for want in exp["expect_findings"].as_array().unwrap() {
            assert!(
                got.iter().any(|g| g == want.as_str().unwrap()),
                "{root}: {want} not in {got:?}"
            );
        }
        for f in r["findings"].as_array().unwrap() {
            for k in ["id", "severity", "summary", "evidence", "fix"] {
                assert!(!f[k].is_null(), "{root}: finding without {k}");
            }
            for e in f["evidence"].as_array().unwrap() {
                assert!(e["what"].is_string() && e["value"].is_string() && e["source"].is_string());
            }
        }
        // Exit 1 only for a finding at or above --fail-on (default warning).
        let severities: Vec<&str> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["severity"].as_str().unwrap())
            .collect();
        let at_least = |min: &[&str]| severities.iter().any(|s| min.contains(s));
        let want_code = i32::from(at_least(&["warning", "critical"]));
        assert_eq!(code(&o), want_code, "{root}: {severities:?}");
        for (fail_on, min) in [
            ("info", &["info", "warning", "critical"][..]),
            ("warning", &["warning", "critical"][..]),
            ("critical", &["critical"][..]),
        ] {
            let o = doctor(&root, iface, app, &["--json", "--fail-on", fail_on]);
            assert_eq!(
                code(&o),
                i32::from(at_least(min)),
                "{root} --fail-on {fail_on}: {severities:?}"
            );
        }
        // text form: same exit code, worst first
        let t = doctor(&root, iface, app, &[]);
        assert_eq!(code(&t), want_code);
        let text = String::from_utf8_lossy(&t.stdout);
        if got.is_empty() {
            assert!(text.contains("No findings."), "{text}");
        } else {
            // The summary line says the RTT behind the buffer advice.
            let summary = text
                .lines()
                .find(|l| l.contains(" info ("))
                .unwrap_or_default();
            assert!(
                summary.contains("buffer advice for an RTT of 10 ms, the default: --rtt MS"),
                "{text}"
            );
            let first = text.find(&got[0]).unwrap();
            // (an id reported for two members of a bond appears twice)
            for g in got[1..].iter().filter(|g| **g != got[0]) {
                assert!(
                    text.find(g.as_str()).unwrap() > first,
                    "{g} before {}",
                    got[0]
                );
            }
            assert!(text.contains("evidence:") && text.contains("fix:") && text.contains("from /"));
        }
    }
}

#[test]
fn the_x4_card_reads_as_the_write_up_did() {
    let o = doctor(&host("crow-9900x-cx5-x4"), "enp1s0f0np0", "6", &[]);
    assert_eq!(code(&o), 1);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("8.0 GT/s x4, below its maximum 8.0 GT/s x16"),
        "{text}"
    );
    assert!(text.contains("31.5 Gbit/s"));
    assert!(text.contains("IRQ 111 (mlx5_comp3@pci:0000:01:00.0)"));
    assert!(text.contains("74.0 °C"));
    // the fix moves IRQ 111 into CPU 6's L3 group (7-11), never onto CPU 6
    let line = text
        .lines()
        .find(|l| l.contains("/proc/irq/111/smp_affinity_list"))
        .unwrap();
    let cpu: u32 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!((7..=11).contains(&cpu), "{line}");
}

#[test]
fn bad_input_gets_one_line_and_its_exit_code() {
    let crow = host("crow-9900x-cx5-x4");
    let cases: &[(&[&str], i32)] = &[
        (&["doctor", "--root", &crow, "--iface", "eth9"], 6),
        (&["doctor", "--root", &crow, "--app-cpus", "6,40"], 6),
        (&["doctor", "--root", &crow, "--app-cpus", "x"], 2),
        (&["doctor", "--root", &crow, "--rtt", "0"], 2),
        (&["doctor", "--root", &crow, "--rtt", "-3"], 2),
        (&["doctor", "--root", &crow, "--rate", "fast"], 2),
        (&["doctor", "--root", &crow, "--rate", "0"], 2),
        (&["doctor", "--root", "/nonexistent/tree"], 7),
        (&["doctor", "--snapshot", "/nonexistent/x.tar.gz"], 7),
        (&["doctor", "--root", &crow, "--snapshot", "x.tar.gz"], 2),
        (&["topo", "--root", "/nonexistent/tree"], 7),
        (
            &[
                "capture",
                "--root",
                "/nonexistent/tree",
                "-o",
                "/tmp/never.tar.gz",
            ],
            7,
        ),
        (
            &[
                "capture",
                "--root",
                &crow,
                "-o",
                "/nonexistent/dir/x.tar.gz",
            ],
            7,
        ),
    ];
    for (args, want) in cases {
        let o = run(args);
        assert_eq!(
            code(&o),
            *want,
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if *want != 2 {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
    // a file that is not a snapshot
    let t = tempfile::tempdir().unwrap();
    let junk = t.path().join("junk.tar.gz");
    std::fs::write(&junk, b"not a tarball").unwrap();
    let o = run(&["doctor", "--snapshot", junk.to_str().unwrap()]);
    assert_eq!(code(&o), 7, "{}", String::from_utf8_lossy(&o.stderr));
}

/// Volatile counters change between two reads of a live host; everything else must not.
fn strip_volatile(mut facts: Value) -> Value {
    if let Some(st) = facts.get_mut("stack").and_then(Value::as_object_mut) {
        st.remove("softnet");
        st.remove("tcp");
    }
    for nic in facts["nics"].as_array_mut().into_iter().flatten() {
        if let Some(h) = nic.get_mut("hwmon").and_then(Value::as_object_mut) {
            h.remove("sensors");
        }
    }
    facts
}

#[test]
fn snapshot_of_a_fixture_reads_the_same_as_the_tree() {
    let t = tempfile::tempdir().unwrap();
    let snap = t.path().join("crow.tar.gz");
    let crow = host("crow-9900x-cx5-x4");
    let o = run(&["capture", "--root", &crow, "-o", snap.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let args = ["--iface", "enp1s0f0np0", "--app-cpus", "6", "--json"];
    let a = json(&run(&[&["doctor", "--root", &crow][..], &args].concat()));
    let b = json(&run(&[
        &["doctor", "--snapshot", snap.to_str().unwrap()][..],
        &args,
    ]
    .concat()));
    assert_eq!(a["findings"], b["findings"]);
    assert_eq!(a["facts"], b["facts"]);
    assert_eq!(b["host"]["source"], "snapshot");
    // what went into the archive: links stay links, processes give only their names
    let s = wirespeed_host::Snapshot::open(&snap).unwrap();
    let l = std::fs::symlink_metadata(s.dir().join("sys/class/net/enp1s0f0np0")).unwrap();
    assert!(l.file_type().is_symlink());
    assert!(s.dir().join("proc/41877/comm").is_file());
    assert!(!s.dir().join("proc/41877/cmdline").exists());
    assert!(!s.dir().join("proc/41877/status").exists());
    // the kernel command line is read (iommu=pt decides iommu-translated)
    assert!(s.dir().join("proc/cmdline").is_file());
    // only what doctor reads: no /proc/stat, no interface statistics, of DMI only the product
    // name and vendor (an instance type), never serial numbers or UUIDs
    assert!(!s.dir().join("proc/stat").exists());
    assert!(!s.dir().join("proc/uptime").exists());
    for f in [
        "product_serial",
        "product_uuid",
        "board_serial",
        "chassis_serial",
    ] {
        assert!(!s.dir().join("sys/class/dmi/id").join(f).exists(), "{f}");
        assert!(
            !s.dir().join("sys/devices/virtual/dmi/id").join(f).exists(),
            "{f}"
        );
    }
    assert!(!s
        .dir()
        .join("sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/net/enp1s0f0np0/statistics")
        .exists());
    assert!(s.dir().join("proc/interrupts").is_file());
}

/// Findings of a live run and of a snapshot captured *before* it agree, except that counters
/// since boot (softnet drops/squeezes) may have grown in between: then the later, live run may
/// report `softnet-drops` the snapshot did not, never the reverse.
fn assert_same_findings(live: &Value, snap: &Value) {
    let split = |r: &Value| {
        let all = r["findings"].as_array().unwrap().clone();
        let (soft, rest): (Vec<Value>, Vec<Value>) =
            all.into_iter().partition(|f| f["id"] == "softnet-drops");
        (!soft.is_empty(), rest)
    };
    let (live_soft, live_rest) = split(live);
    let (snap_soft, snap_rest) = split(snap);
    assert_eq!(live_rest, snap_rest);
    assert!(
        live_soft || !snap_soft,
        "softnet-drops in the snapshot but not in the later live run"
    );
}

#[test]
fn live_doctor_and_its_snapshot_agree() {
    let t = tempfile::tempdir().unwrap();
    let snap = t.path().join("live.tar.gz");
    let o = run(&["capture", "-o", snap.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let live = run(&["doctor", "--json"]);
    let off = run(&["doctor", "--snapshot", snap.to_str().unwrap(), "--json"]);
    let (a, b) = (json(&live), json(&off));
    assert_same_findings(&a, &b);
    // Exit 1 for a finding at or above the default --fail-on (warning).
    let want = |r: &Value| {
        i32::from(
            r["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["severity"] != "info"),
        )
    };
    assert_eq!(code(&live), want(&a));
    assert_eq!(code(&off), want(&b));
    assert_eq!(
        strip_volatile(a["facts"].clone()),
        strip_volatile(b["facts"].clone())
    );
    // No false PCIe finding on a NIC without PCIe link attributes (virtio in a VM).
    for nic in a["facts"]["nics"].as_array().unwrap() {
        if nic["pcie"].is_null() {
            let name = nic["name"].as_str().unwrap();
            assert!(!a["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| { f["iface"] == name && f["id"].as_str().unwrap().starts_with("pcie-") }));
        }
    }
    // per interface too (snapshot first: counters only grow)
    for nic in a["facts"]["nics"].as_array().unwrap() {
        let name = nic["name"].as_str().unwrap();
        let snap = snap.to_str().unwrap();
        let s = json(&run(&[
            "doctor",
            "--snapshot",
            snap,
            "--iface",
            name,
            "--app-cpus",
            "0",
            "--json",
        ]));
        let l = json(&run(&[
            "doctor",
            "--iface",
            name,
            "--app-cpus",
            "0",
            "--json",
        ]));
        assert_same_findings(&l, &s);
    }
}

#[test]
fn topo_reads_well_and_has_json() {
    let o = run(&["topo", "--root", &host("crow-9900x-cx5-x4")]);
    assert_eq!(code(&o), 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("node 0   CPUs 0-11"), "{text}");
    assert!(text.contains("L3 #0") && text.contains("CPUs 6-11"));
    assert!(text.contains("enp1s0f0np0  0000:01:00.0  mlx5_core"));
    assert!(text.contains("DOWNGRADED"));
    assert!(text.contains("node 0 / L3 #0   CPU 3: 111"), "{text}");
    let j = json(&run(&[
        "topo",
        "--root",
        &host("sl-w9-x3650-cx3"),
        "--json",
    ]));
    let p2p1 = j["nics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "p2p1")
        .unwrap();
    assert_eq!(p2p1["irq_nodes"], serde_json::json!([1]));
    assert_eq!(p2p1["irq_cpus"], "8-15");
    assert_eq!(j["nodes"].as_array().unwrap().len(), 2);
    // live
    let o = run(&["topo"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("CPUs online"));
}

/// SIGTERM while a snapshot is being unpacked leaves nothing in $TMPDIR. The archive comes
/// through a FIFO, so the unpack is still running (waiting for more) when the signal lands.
#[test]
fn an_interrupted_snapshot_unpack_leaves_nothing_behind() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;

    let t = tempfile::tempdir().unwrap();
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let fifo = t.path().join("snap.tar.gz");
    let mk = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(mk.success());
    let mut child = std::process::Command::new(host_common::bin())
        .args(["doctor", "--snapshot", fifo.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // One whole file entry, flushed through gzip, and the stream left open.
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::OpenOptions::new().write(true).open(&fifo).unwrap(),
        flate2::Compression::fast(),
    );
    let mut h = tar::Header::new_gnu();
    h.set_path("proc/first").unwrap();
    h.set_size(4);
    h.set_mode(0o644);
    h.set_cksum();
    gz.write_all(h.as_bytes()).unwrap();
    gz.write_all(&[b'x'; 512]).unwrap();
    gz.flush().unwrap();
    // Ready when the first file is on disk.
    let unpacked = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    };
    let mut seen = false;
    for _ in 0..2000 {
        if unpacked().iter().any(|d| d.join("proc/first").exists()) {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(seen, "the unpack never started: {:?}", unpacked());
    let k = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let status = child.wait().unwrap();
    drop(gz);
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(unpacked().is_empty(), "left behind: {:?}", unpacked());
}

#[test]
fn a_vm_nic_without_speed_is_checked_against_rate_or_instance_type_and_says_which() {
    let aws = host("aws-c5n-ena");
    // the instance type DMI names: 100 Gbit/s, said in the notes
    let o = doctor(&aws, "ens5", "50", &[]);
    assert_eq!(code(&o), 1);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("socket-buffers-small"), "{text}");
    assert!(
        text.contains("notes:\n  ens5: the driver reports no link speed; sizing for 100 Gbit/s from the instance type c5n.18xlarge"),
        "{text}"
    );
    // --rate 50G: sized for 50 Gbit/s, shown in the header and the JSON options
    let o = doctor(&aws, "ens5", "50", &["--rate", "50G", "--json"]);
    let r = json(&o);
    assert_eq!(r["options"]["rate_mbps"], 50_000);
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "socket-buffers-small")
        .unwrap();
    assert_eq!(f["evidence"][0]["value"], "50 Gbit/s");
    assert_eq!(f["evidence"][0]["source"], "--rate");
    assert_eq!(r["notes"], serde_json::json!([]));
    // the ice host: vectors never requested are listed, and no irq-numa-remote
    let ice = host("ice-e810-2s-xeon");
    let o = doctor(&ice, "ens5f0np0", "24", &["--json"]);
    let r = json(&o);
    assert!(!ids(&r).contains(&"irq-numa-remote".to_string()));
    let notes = r["notes"].as_array().unwrap();
    assert!(notes
        .iter()
        .any(|n| n.as_str().unwrap().contains("never requested by a driver")));
    let kinds: Vec<&str> = r["facts"]["nics"][0]["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "unrequested").count(), 16);
}

/// The tar bombs of issue 22, bounded: an archive of a few KiB holding an 8 MiB GNU long name
/// made the reader buffer it whole and print it in one 8 MB line; an 8 MiB PAX header was
/// accepted. Both are refused from their headers, in one short line.
#[test]
fn snapshot_tar_bombs_are_refused_in_one_short_line() {
    use std::io::Write;
    let t = tempfile::tempdir().unwrap();
    for (kind, typ, want) in [
        ("gnu", b'L', "a GNU long name record of 8388608 bytes"),
        ("pax", b'x', "a PAX header record of 8388608 bytes"),
    ] {
        let path = t.path().join(format!("{kind}.tar.gz"));
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        let size = 8usize << 20;
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_entry_type(tar::EntryType::new(typ));
        h.set_size(size as u64);
        h.set_mode(0o644);
        h.set_cksum();
        gz.write_all(h.as_bytes()).unwrap();
        // streamed: a PAX record of `size` bytes, or a NUL-terminated name
        let head = if kind == "pax" {
            format!("{size} comment=")
        } else {
            String::new()
        };
        gz.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b'a'; 64 << 10];
        let mut left = size - head.len() - 1;
        while left > 0 {
            let n = left.min(chunk.len());
            gz.write_all(&chunk[..n]).unwrap();
            left -= n;
        }
        gz.write_all(if kind == "pax" { b"\n" } else { b"\0" })
            .unwrap();
        let mut f = tar::Header::new_gnu();
        f.set_path("sys/x").unwrap();
        f.set_size(0);
        f.set_mode(0o644);
        f.set_cksum();
        gz.write_all(f.as_bytes()).unwrap();
        gz.write_all(&[0u8; 1024]).unwrap();
        gz.finish().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);
        let o = run(&["doctor", "--snapshot", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 7, "{kind}: {}", &err[..err.len().min(300)]);
        assert!(err.len() < 400, "{kind}: {} bytes of stderr", err.len());
        assert_eq!(err.trim().lines().count(), 1, "{kind}: {err}");
        assert!(err.contains(want), "{kind}: {err}");
    }
}
