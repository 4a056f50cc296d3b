//! tune on the live kernel, where it cannot harm the host: the veth end of a `wirespeed lab`
//! this test builds (MTU and txqueuelen changed for real through /sys, then
//! reverted), and a kernel-managed IRQ (the kernel refuses the write: not movable, nothing to
//! revert). Each test needs root and skips with a message otherwise.

use crate::{host_common, need};

use std::collections::BTreeMap;
use std::fs;
use std::process::{Command, Output};

use host_common::*;
use wirespeed_host::{CpuSet, Root};
use wirespeed_lab::{unique_name, Lab, Side, Spec};
use wirespeed_tune::engine::{self, RevertStatus, StepStatus};
use wirespeed_tune::plan::{command_for, Change, Plan, Step};
use wirespeed_tune::ApplyOptions;

fn sh(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// The client side of a plain `wirespeed lab` (its namespace name first), removed when dropped
/// (also when the test panics).
struct Netns(String, #[allow(dead_code)] Lab);

/// `ip netns exec NS ARGS...` (it enters the namespace and remounts /sys for it).
fn in_ns(ns: &str, args: &[&str]) -> Output {
    let mut a = vec!["netns", "exec", ns];
    a.extend_from_slice(args);
    sh("ip", &a)
}

fn read_in_ns(ns: &str, path: &str) -> String {
    let o = in_ns(ns, &["cat", path]);
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// MTU and qlen of a link as netlink reports them (independent of the /sys files tune wrote).
fn link_show(ns: &str, dev: &str) -> (String, String) {
    let o = sh("ip", &["-n", ns, "-o", "link", "show", dev]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout).to_string();
    let word_after = |key: &str| {
        let mut it = s.split_whitespace();
        while let Some(w) = it.next() {
            if w == key {
                // `-o` joins lines with a backslash
                return it.next().unwrap_or("").trim_end_matches('\\').to_string();
            }
        }
        String::new()
    };
    (word_after("mtu"), word_after("qlen"))
}

/// A network namespace holding the veth end `ws0` of a plain lab (its peer in the lab's other
/// namespace), removed when dropped; `None` after a `SKIP:` line when this host cannot make one
/// (not root, no iproute2, no netns).
fn veth_netns(me: &str, tag: &str) -> Option<Netns> {
    if !need::root(me) || !need::tool(me, "ip", "-V", "iproute2") {
        return None;
    }
    if let Err(e) = wirespeed_lab::check_can_run(false) {
        need::unavailable(me, &e.to_string());
        return None;
    }
    match Lab::up(Spec::new(unique_name(tag))) {
        Ok(lab) => Some(Netns(lab.netns(Side::Client), lab)),
        Err(e) => {
            need::unavailable(me, &format!("the lab could not be built: {e}"));
            None
        }
    }
}

#[test]
fn veth_mtu_and_txqueuelen_change_for_real_and_revert() {
    let Some(ns) = veth_netns(
        "veth_mtu_and_txqueuelen_change_for_real_and_revert",
        "wsh4tune",
    ) else {
        return;
    };
    assert!(in_ns(&ns.0, &["ip", "link", "set", "ws0", "up"])
        .status
        .success());
    let mtu0 = read_in_ns(&ns.0, "/sys/class/net/ws0/mtu");
    let qlen0 = read_in_ns(&ns.0, "/sys/class/net/ws0/tx_queue_len");
    assert_eq!(link_show(&ns.0, "ws0"), (mtu0.clone(), qlen0.clone()));
    assert_ne!(mtu0, "9000");
    assert_ne!(qlen0, "5000");

    // journals in a directory of this test, not the host's /var/lib
    let jdir = tempfile::tempdir().unwrap();
    let jd = jdir.path().to_str().unwrap();
    let o = in_ns(
        &ns.0,
        &[
            bin(),
            "tune",
            "--iface",
            "ws0",
            "--mtu",
            "9000",
            "--txqueuelen",
            "5000",
            "--only",
            "link",
            "--journal-dir",
            jd,
            "--apply",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Applied 2 of 2 steps"), "{out}");
    assert_eq!(read_in_ns(&ns.0, "/sys/class/net/ws0/mtu"), "9000");
    assert_eq!(read_in_ns(&ns.0, "/sys/class/net/ws0/tx_queue_len"), "5000");
    assert_eq!(link_show(&ns.0, "ws0"), ("9000".into(), "5000".into()));
    eprintln!("veth ws0: mtu {mtu0} -> 9000, txqueuelen {qlen0} -> 5000 (netlink agrees)");

    let o = in_ns(&ns.0, &[bin(), "tune", "revert", "--journal-dir", jd]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(link_show(&ns.0, "ws0"), (mtu0.clone(), qlen0.clone()));
    assert_eq!(read_in_ns(&ns.0, "/sys/class/net/ws0/mtu"), mtu0);
    let o = in_ns(&ns.0, &[bin(), "tune", "status", "--journal-dir", jd]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("reverted"),
        "{}",
        text(&o)
    );
    eprintln!("reverted: mtu {mtu0}, txqueuelen {qlen0}");
}

#[test]
fn a_kernel_managed_irq_is_not_movable_and_the_plan_goes_on() {
    if !need::root("a_kernel_managed_irq_is_not_movable_and_the_plan_goes_on") {
        return;
    }
    // The kernel makes a managed IRQ's affinity file read-only (and answers EIO on older
    // kernels); look for one. Writing to it changes nothing.
    let root = Root::live();
    let managed = root.list_opt("/proc/irq").into_iter().find_map(|n| {
        let irq: u32 = n.parse().ok()?;
        let path = format!("/proc/irq/{irq}/smp_affinity_list");
        let md = fs::metadata(root.path(&path).ok()?).ok()?;
        use std::os::unix::fs::PermissionsExt;
        (md.permissions().mode() & 0o222 == 0).then_some(irq)
    });
    let Some(irq) = managed else {
        eprintln!("SKIP: a_kernel_managed_irq_is_not_movable_and_the_plan_goes_on because this host has no managed IRQ");
        return;
    };
    let before = root
        .read(&format!("/proc/irq/{irq}/smp_affinity_list"))
        .unwrap();
    let change = Change::IrqAffinity {
        irq,
        name: None,
        cpus: CpuSet::from_cpus([0]),
    };
    let mut plan = Plan::new("/");
    plan.steps.push(Step {
        finding: "irq-on-app-core".into(),
        summary: "move a managed IRQ (the kernel refuses)".into(),
        setting: change.path().unwrap(),
        current: before.trim().into(),
        new: "0".into(),
        command: command_for(&change),
        change,
    });
    let jdir = tempfile::tempdir().unwrap();
    let opts = ApplyOptions {
        journal_dir: jdir.path().to_str().unwrap().to_string(),
        ..ApplyOptions::default()
    };
    let report = engine::apply(&root, &plan, &opts, &mut |_, _| {}).unwrap();
    if report.steps[0].status == StepStatus::AlreadySet {
        eprintln!("SKIP: IRQ {irq} already on CPU 0 only");
        return;
    }
    assert_eq!(
        report.steps[0].status,
        StepStatus::NotMovable,
        "{report:#?}"
    );
    eprintln!(
        "IRQ {irq}: {}",
        report.steps[0].detail.as_deref().unwrap_or("")
    );
    assert_eq!(
        root.read(&format!("/proc/irq/{irq}/smp_affinity_list"))
            .unwrap(),
        before
    );
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete());
    assert_eq!(r.items[0].status, RevertStatus::NothingWritten);
}

#[test]
fn veth_coalescing_is_unknown_and_the_rest_of_the_plan_applies_and_reverts() {
    let me = "veth_coalescing_is_unknown_and_the_rest_of_the_plan_applies_and_reverts";
    let Some(ns) = veth_netns(me, "wsh10co") else {
        return;
    };
    let mtu0 = read_in_ns(&ns.0, "/sys/class/net/ws0/mtu");
    assert_ne!(mtu0, "9000");
    let jdir = tempfile::tempdir().unwrap();
    let jd = jdir.path().to_str().unwrap();
    let args = [
        "--iface",
        "ws0",
        "--mtu",
        "9000",
        "--rx-usecs",
        "64",
        "--adaptive-rx",
        "off",
        "--only",
        "link,coalesce",
        "--journal-dir",
        jd,
    ];
    // veth does not answer ETHTOOL_GCOALESCE on this kernel (if a later one does, the step is
    // planned and the driver's answer to the write decides; this test then says so and stops)
    let mut plan_args = vec![bin(), "tune"];
    plan_args.extend_from_slice(&args);
    plan_args.push("--json");
    let o = in_ns(&ns.0, &plan_args);
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let has_coalesce_step = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["change"]["kind"] == "coalesce");
    if has_coalesce_step {
        eprintln!("SKIP: {me} because veth answers ETHTOOL_GCOALESCE on this kernel");
        return;
    }
    let notes = plan["notes"].to_string();
    assert!(
        notes.contains("interrupt coalescing on ws0 is unknown"),
        "{notes}"
    );

    let mut apply_args = vec![bin(), "tune"];
    apply_args.extend_from_slice(&args);
    apply_args.push("--apply");
    let o = in_ns(&ns.0, &apply_args);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Applied 1 of 1 steps"), "{out}");
    assert!(out.contains("coalescing on ws0 is unknown"), "{out}");
    assert_eq!(read_in_ns(&ns.0, "/sys/class/net/ws0/mtu"), "9000");
    assert_eq!(link_show(&ns.0, "ws0").0, "9000");
    eprintln!("veth ws0: coalescing unknown (no ETHTOOL_GCOALESCE answer), mtu {mtu0} -> 9000");

    let o = in_ns(&ns.0, &[bin(), "tune", "revert", "--journal-dir", jd]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(read_in_ns(&ns.0, "/sys/class/net/ws0/mtu"), mtu0);
    assert_eq!(link_show(&ns.0, "ws0").0, mtu0);
}

/// Linux's errno for "operation not supported".
const EOPNOTSUPP: i32 = 95;

#[test]
fn a_coalesce_step_the_driver_refuses_is_not_supported_and_the_plan_goes_on() {
    let me = "a_coalesce_step_the_driver_refuses_is_not_supported_and_the_plan_goes_on";
    if !need::root(me) {
        return;
    }
    // The loopback device has no interrupt coalescing: the kernel answers EOPNOTSUPP and nothing
    // changes. The step after it (a value file in a temporary directory, written through the
    // live root) still applies and reverts.
    match wirespeed_host::ethtool::get_coalesce("lo") {
        Ok(_) => {
            eprintln!("SKIP: {me} because lo answers ETHTOOL_GCOALESCE on this kernel");
            return;
        }
        Err(e) if e.raw_os_error() == Some(EOPNOTSUPP) => {}
        Err(e) => {
            eprintln!("SKIP: {me} because lo answers ETHTOOL_GCOALESCE with {e}, not EOPNOTSUPP");
            return;
        }
    }
    let t = tempfile::tempdir().unwrap();
    let value = t.path().join("value");
    fs::write(&value, "1\n").unwrap();
    let value_path = value.to_str().unwrap().to_string();
    let mut plan = Plan::new("/");
    let changes = [
        Change::Coalesce {
            iface: "lo".into(),
            set: wirespeed_host::ethtool::CoalesceSet {
                rx_usecs: Some(64),
                ..Default::default()
            },
        },
        Change::Write {
            path: value_path.clone(),
            form: wirespeed_tune::Form::Words,
            value: "2".into(),
        },
    ];
    for change in changes {
        plan.steps.push(Step {
            finding: "requested".into(),
            summary: "test".into(),
            setting: change.path().unwrap_or_else(|| "ethtool -C lo".into()),
            current: "?".into(),
            new: "?".into(),
            command: command_for(&change),
            change,
        });
    }
    let jdir = tempfile::tempdir().unwrap();
    let opts = ApplyOptions {
        journal_dir: jdir.path().to_str().unwrap().to_string(),
        ..ApplyOptions::default()
    };
    let root = Root::live();
    let report = engine::apply(&root, &plan, &opts, &mut |_, _| {}).unwrap();
    assert_eq!(
        report.steps[0].status,
        StepStatus::NotSupported,
        "{report:#?}"
    );
    assert_eq!(report.steps[1].status, StepStatus::Applied, "{report:#?}");
    eprintln!(
        "lo: {}",
        report.steps[0].detail.as_deref().unwrap_or_default()
    );
    assert_eq!(fs::read_to_string(&value).unwrap(), "2\n");
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete(), "{r:#?}");
    assert_eq!(fs::read_to_string(&value).unwrap(), "1\n");
}

/// Doctor's file writes go through tune's journal for real: in a namespace of its own (where
/// `net.ipv4.tcp_sack` is the namespace's, not the host's) SACK is switched off, doctor reports
/// `tcp-options-off` with the write, tune applies exactly that write and revert puts it back.
#[test]
fn doctors_tcp_option_write_applies_and_reverts_in_a_namespace() {
    let me = "doctors_tcp_option_write_applies_and_reverts_in_a_namespace";
    let Some(ns) = veth_netns(me, "wsd4tcp") else {
        return;
    };
    const SACK: &str = "/proc/sys/net/ipv4/tcp_sack";
    let host_before = fs::read_to_string(SACK).unwrap_or_default();
    let o = in_ns(&ns.0, &["sysctl", "-q", "-w", "net.ipv4.tcp_sack=0"]);
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            std::env::var_os("CI").is_none(),
            "{me}: sysctl failed: {err}"
        );
        eprintln!(
            "SKIP: {me} because sysctl in the namespace failed: {}",
            err.trim()
        );
        return;
    }
    assert_eq!(read_in_ns(&ns.0, SACK), "0");
    // The lab's link is up, so the veth announces 10 Gbit/s and the plan would also size the
    // socket buffers: net.core.*mem_max are the host's, read-only inside a namespace. Down, the
    // link has no speed and the plan keeps to the namespace's own TCP options.
    let o = in_ns(&ns.0, &["ip", "link", "set", "ws0", "down"]);
    assert!(o.status.success(), "{}", text(&o));

    let o = in_ns(&ns.0, &[bin(), "doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "tcp-options-off")
        .unwrap_or_else(|| panic!("{me}: no tcp-options-off in {report}"));
    assert_eq!(f["writes"][0]["path"], SACK);
    assert_eq!(f["writes"][0]["value"], "1");

    let jdir = tempfile::tempdir().unwrap();
    let jd = jdir.path().to_str().unwrap();
    let o = in_ns(
        &ns.0,
        &[
            bin(),
            "tune",
            "--iface",
            "ws0",
            "--only",
            "stack",
            "--journal-dir",
            jd,
            "--apply",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let applied: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = applied["plan"]["steps"].as_array().unwrap();
    let s = steps
        .iter()
        .find(|s| s["finding"] == "tcp-options-off")
        .unwrap_or_else(|| panic!("{me}: no tcp-options-off step in {steps:?}"));
    assert_eq!(s["setting"], "net.ipv4.tcp_sack");
    assert_eq!(read_in_ns(&ns.0, SACK), "1");
    // the host's own value never moved
    assert_eq!(fs::read_to_string(SACK).unwrap_or_default(), host_before);
    eprintln!("namespace tcp_sack 0 -> 1 by doctor's write through tune's journal");

    let o = in_ns(&ns.0, &[bin(), "tune", "revert", "--journal-dir", jd]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(read_in_ns(&ns.0, SACK), "0");
    assert_eq!(fs::read_to_string(SACK).unwrap_or_default(), host_before);
    eprintln!("reverted: namespace tcp_sack 0");
}

/// Run `f` on a thread inside the network namespace `ns` (`/run/netns/NS`, as `ip netns` makes
/// it): the rtnetlink and ethtool sockets tune opens there reach that namespace's interfaces.
/// Files (the journal) are the host's as ever.
fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    use std::os::fd::AsRawFd;
    let file = fs::File::open(format!("/run/netns/{ns}")).expect("the lab's namespace");
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns on an open namespace descriptor; it changes only this thread's
            // network namespace, and the thread ends with the scope.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("the thread in the namespace")
    })
}

/// The GSO/GRO sizes `ip -d link show` prints for a link (iproute2 reads them through
/// netlink; older releases print no IPv4 sizes): name → value.
fn sizes_shown(ns: &str, dev: &str) -> BTreeMap<String, String> {
    let o = sh("ip", &["-n", ns, "-d", "link", "show", dev]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout).to_string();
    let words: Vec<&str> = s.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| {
            matches!(
                w[0],
                "gso_max_size" | "gro_max_size" | "gso_ipv4_max_size" | "gro_ipv4_max_size"
            )
        })
        .map(|w| (w[0].to_string(), w[1].to_string()))
        .collect()
}

/// BIG TCP for real on a veth (veth takes GSO/GRO sizes up to its 524280-byte TSO limit): the
/// step raises gso_max_size and gro_max_size (and the IPv4 sizes where the kernel has them)
/// through rtnetlink, `ip -d link show` sees them, revert puts the originals back. Flow control
/// in the same plan: veth has none, the kernel answers EOPNOTSUPP, the step is "not supported",
/// nothing is written and the plan goes on. A 100 Gbit/s link cannot be faked on a veth, so
/// the step is given directly rather than from doctor's finding (the tree tests cover that).
#[test]
fn veth_big_tcp_sizes_change_for_real_and_revert_and_pause_is_not_supported() {
    let me = "veth_big_tcp_sizes_change_for_real_and_revert_and_pause_is_not_supported";
    let Some(ns) = veth_netns(me, "wsd5big") else {
        return;
    };
    let before = sizes_shown(&ns.0, "ws0");
    if !before.contains_key("gso_max_size") || !before.contains_key("gro_max_size") {
        need::unavailable(
            me,
            &format!("ip -d link show prints no GSO/GRO sizes: {before:?}"),
        );
        return;
    }
    assert_ne!(before["gso_max_size"], "185000");
    let v4_before = in_netns(&ns.0, || wirespeed_host::link::get_sizes("ws0").unwrap());
    let mut plan = Plan::new("/");
    let changes = [
        Change::LinkSizes {
            iface: "ws0".into(),
            set: wirespeed_host::link::SizesSet::all(185_000),
        },
        Change::Pause {
            iface: "ws0".into(),
            set: wirespeed_host::ethtool::PauseSet {
                rx: Some(true),
                tx: Some(true),
            },
        },
    ];
    for change in changes {
        plan.steps.push(Step {
            finding: "big-tcp-off".into(),
            summary: "test".into(),
            setting: "ws0".into(),
            current: "?".into(),
            new: "?".into(),
            command: command_for(&change),
            change,
        });
    }
    let jdir = tempfile::tempdir().unwrap();
    let opts = ApplyOptions {
        journal_dir: jdir.path().to_str().unwrap().to_string(),
        ..ApplyOptions::default()
    };
    let report = in_netns(&ns.0, || {
        engine::apply(&Root::live(), &plan, &opts, &mut |_, _| {}).unwrap()
    });
    assert_eq!(report.steps[0].status, StepStatus::Applied, "{report:#?}");
    assert_eq!(
        report.steps[1].status,
        StepStatus::NotSupported,
        "{report:#?}"
    );
    let after = sizes_shown(&ns.0, "ws0");
    let v4 = in_netns(&ns.0, || wirespeed_host::link::get_sizes("ws0").unwrap());
    if v4_before.sizes.gso_ipv4_max_size.is_some() {
        assert_eq!(
            (v4.sizes.gso_ipv4_max_size, v4.sizes.gro_ipv4_max_size),
            (Some(185_000), Some(185_000)),
            "{v4:?}"
        );
    }
    for (k, v) in &after {
        assert_eq!(v, "185000", "{k} after the apply: {after:?}");
    }
    eprintln!(
        "veth ws0: {before:?} -> {after:?} ({}); pause: {}",
        report.steps[0].detail.as_deref().unwrap_or_default(),
        report.steps[1].detail.as_deref().unwrap_or_default()
    );
    let jf = wirespeed_tune::JournalFile::read(&Root::live(), &report.journal).unwrap();
    assert_eq!(jf.entries().len(), 1, "only the sizes: {:#?}", jf.entries());

    let r = in_netns(&ns.0, || {
        engine::revert(&Root::live(), &report.journal, false).unwrap()
    });
    assert!(r.complete(), "{r:#?}");
    assert_eq!(r.count(RevertStatus::Restored), 1);
    assert_eq!(sizes_shown(&ns.0, "ws0"), before);
    // the IPv4 sizes (kernels >= 6.3; older iproute2 does not print them) as netlink has them
    let v4 = in_netns(&ns.0, || wirespeed_host::link::get_sizes("ws0").unwrap());
    assert_eq!(v4, v4_before);
    eprintln!("reverted: {before:?}, netlink {v4:?}");

    // through the command line: veth does not answer ETHTOOL_GPAUSEPARAM, so `--pause both`
    // plans nothing and says why
    let o = in_ns(
        &ns.0,
        &[
            bin(),
            "tune",
            "--iface",
            "ws0",
            "--pause",
            "both",
            "--only",
            "pause",
            "--journal-dir",
            jdir.path().to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("flow control on ws0 is unknown"),
        "{}",
        text(&o)
    );
}

/// `ethtool -K IF ntuple on` (arfs-off's NIC step) on a veth, which lists `rx-ntuple-filter`
/// as fixed off: the step is "not supported", nothing is journaled for it, the feature and
/// every other one are as they were, and the rest of the plan (a GSO size) applies and reverts.
/// Then the same setter on a feature veth can change (GRO): the kernel takes the
/// `ETHTOOL_SFEATURES` message, that bit alone moves, and it goes back.
#[test]
fn veth_ntuple_is_not_supported_and_the_plan_goes_on() {
    let me = "veth_ntuple_is_not_supported_and_the_plan_goes_on";
    let Some(ns) = veth_netns(me, "wsd5ntu") else {
        return;
    };
    let features = || {
        let o = sh("ip", &["netns", "exec", &ns.0, "ethtool", "-k", "ws0"]);
        o.status.success().then(|| text(&o))
    };
    let ntuple = in_netns(&ns.0, || {
        wirespeed_host::ethtool::get_feature("ws0", wirespeed_host::ethtool::NTUPLE)
    });
    let ntuple = match ntuple {
        Ok(f) => f,
        Err(e) => {
            need::unavailable(me, &format!("veth lists no rx-ntuple-filter: {e}"));
            return;
        }
    };
    assert!(!ntuple.active && !ntuple.changeable, "{ntuple:?}");
    let shown_before = features();
    let sizes_before = in_netns(&ns.0, || wirespeed_host::link::get_sizes("ws0").unwrap());
    let mut plan = Plan::new("/");
    let changes = [
        Change::Feature {
            iface: "ws0".into(),
            feature: wirespeed_host::ethtool::NTUPLE.into(),
            on: true,
        },
        Change::LinkSizes {
            iface: "ws0".into(),
            set: wirespeed_host::link::SizesSet {
                gso_max_size: Some(131_072),
                ..Default::default()
            },
        },
    ];
    for change in changes {
        plan.steps.push(Step {
            finding: "arfs-off".into(),
            summary: "test".into(),
            setting: "ws0".into(),
            current: "?".into(),
            new: "?".into(),
            command: command_for(&change),
            change,
        });
    }
    assert_eq!(plan.steps[0].command, "ethtool -K ws0 ntuple on");
    let jdir = tempfile::tempdir().unwrap();
    let opts = ApplyOptions {
        journal_dir: jdir.path().to_str().unwrap().to_string(),
        ..ApplyOptions::default()
    };
    let report = in_netns(&ns.0, || {
        engine::apply(&Root::live(), &plan, &opts, &mut |_, _| {}).unwrap()
    });
    assert_eq!(
        report.steps[0].status,
        StepStatus::NotSupported,
        "{report:#?}"
    );
    assert_eq!(report.steps[1].status, StepStatus::Applied, "{report:#?}");
    eprintln!(
        "veth ws0 ntuple: {}",
        report.steps[0].detail.as_deref().unwrap_or_default()
    );
    let jf = wirespeed_tune::JournalFile::read(&Root::live(), &report.journal).unwrap();
    assert_eq!(jf.entries().len(), 1, "only the size: {:#?}", jf.entries());
    // the host layer's setter, called directly: a fixed feature is EOPNOTSUPP, never written
    let direct = in_netns(&ns.0, || {
        wirespeed_host::ethtool::set_feature("ws0", wirespeed_host::ethtool::NTUPLE, true)
    });
    assert_eq!(
        direct.unwrap_err().raw_os_error(),
        Some(libc::EOPNOTSUPP),
        "a fixed feature"
    );
    let r = in_netns(&ns.0, || {
        engine::revert(&Root::live(), &report.journal, false).unwrap()
    });
    assert!(r.complete(), "{r:#?}");
    assert_eq!(
        in_netns(&ns.0, || wirespeed_host::link::get_sizes("ws0").unwrap()),
        sizes_before
    );
    assert_eq!(
        in_netns(&ns.0, || wirespeed_host::ethtool::get_feature(
            "ws0",
            wirespeed_host::ethtool::NTUPLE
        )
        .unwrap()),
        ntuple
    );
    // `ethtool -k` (when installed) shows every feature as before
    assert_eq!(features(), shown_before);

    // the same setter on a feature veth can change (GRO): ETHTOOL_SFEATURES as the kernel
    // takes it, that one bit moves and no other, and back
    let all = || {
        in_netns(&ns.0, || {
            wirespeed_host::ethtool::collect_ethtool(&Root::live(), "ws0")
                .and_then(|e| e.features)
                .expect("veth answers ETHTOOL_GFEATURES")
        })
    };
    let before = all();
    let gro = "rx-gro";
    let Some(g) = before.get(gro).copied().filter(|g| g.changeable) else {
        need::unavailable(me, &format!("veth lists no changeable {gro}"));
        return;
    };
    let set = |on| {
        in_netns(&ns.0, || {
            wirespeed_host::ethtool::set_feature("ws0", gro, on)
        })
    };
    set(!g.active).unwrap();
    let flipped = all();
    let moved: Vec<&String> = before
        .keys()
        .filter(|k| before[*k].active != flipped[*k].active)
        .collect();
    assert_eq!(moved, [gro], "{before:?} -> {flipped:?}");
    set(g.active).unwrap();
    assert_eq!(all(), before);
}
