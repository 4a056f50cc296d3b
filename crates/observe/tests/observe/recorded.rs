//! Parsers and deltas on the fixture hosts' `/proc` files and on files recorded live
//! (`tests/data/README.md` says where they came from).

use std::path::PathBuf;
use wirespeed_host::softirqs::{self, NET_RX, NET_TX};
use wirespeed_host::{stat, CpuSet};
use wirespeed_model::observation::WorkerRun;
use wirespeed_observe::observer::{delta, Snapshot};
use wirespeed_observe::route;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn data(name: &str) -> String {
    read(&format!("crates/observe/tests/data/live-vm-2cpu/{name}"))
}

#[test]
fn every_fixture_hosts_stat_and_softirqs_parse() {
    for (host, ncpu) in [
        ("crow-9900x-cx5-x4", 12),
        ("crow-9900x-cx5-tuned", 12),
        ("sl-w9-x3650-cx3", 16),
    ] {
        let s = stat::parse(&read(&format!("tests/fixtures/hosts/{host}/proc/stat"))).unwrap();
        assert_eq!(s.cpus.len(), ncpu, "{host}");
        // The `cpu` line is the sum of the `cpuN` lines, column by column.
        let sys: u64 = s.cpus.values().map(|c| c.system).sum();
        assert_eq!(sys, s.total.system, "{host}");
        let q =
            softirqs::parse(&read(&format!("tests/fixtures/hosts/{host}/proc/softirqs"))).unwrap();
        assert_eq!(q.cpus.len(), ncpu, "{host}");
        assert_eq!(q.per_cpu(NET_RX).len(), ncpu, "{host}");
        assert_eq!(q.per_cpu(NET_TX).len(), ncpu, "{host}");
    }
    let crow = stat::parse(&read("tests/fixtures/hosts/crow-9900x-cx5-x4/proc/stat")).unwrap();
    assert_eq!(crow.cpus[&8].softirq, 4431781);
    assert_eq!(crow.cpus[&6].system, 474072);
    let q = softirqs::parse(&read(
        "tests/fixtures/hosts/crow-9900x-cx5-x4/proc/softirqs",
    ))
    .unwrap();
    assert_eq!(q.per_cpu(NET_RX)[&8], 1894794);
    let sl = softirqs::parse(&read("tests/fixtures/hosts/sl-w9-x3650-cx3/proc/softirqs")).unwrap();
    assert_eq!(sl.row("BLOCK_IOPOLL").map(|r| r.len()), Some(16));
    assert_eq!(sl.per_cpu(NET_RX)[&9], 2238516299);
}

#[test]
fn recorded_loopback_test_shows_where_the_work_ran() {
    let before = Snapshot::from_texts(
        &data("stat.before"),
        Some(&data("softirqs.before")),
        Some(&data("interrupts.before")),
        &[37, 38, 39],
    )
    .unwrap();
    let after = Snapshot::from_texts(
        &data("stat.after"),
        Some(&data("softirqs.after")),
        Some(&data("interrupts.after")),
        &[37, 38, 39],
    )
    .unwrap();
    let client = WorkerRun {
        worker: 0,
        cpu_requested: Some(1),
        cpus_seen: CpuSet::from_cpus([1]),
        streams: vec![5],
        tid: None,
    };
    let d = delta(&before, &after, &[client], None);
    assert_eq!(d.cpus.len(), 2);
    let c1 = d.cpu(1).unwrap();
    assert!(c1.busy().get() >= 90.0, "sender CPU 1: {c1:?}");
    assert!(
        c1.softirq.get() >= 20.0,
        "loopback RX runs in the sender's softirq: {c1:?}"
    );
    assert_eq!(c1.dominant().0, "system");
    let c0 = d.cpu(0).unwrap();
    assert!(
        (30.0..=80.0).contains(&c0.busy().get()),
        "server CPU 0: {c0:?}"
    );
    assert!(c0.net_rx > 0 && c1.net_rx > 0);
    assert_eq!(d.nic_irq_total(), 0, "the test never left the host");
    assert_eq!(d.net_rx_total(), (814515 - 791419) + (631639 - 570665));
}

#[test]
fn recorded_routes() {
    let v4 = route::parse_route_v4(&data("route"));
    assert_eq!(
        route::lookup(&v4, "203.0.113.1".parse().unwrap()),
        Some("eth0")
    );
    let v6 = route::parse_route_v6(&data("ipv6_route"));
    assert_eq!(
        route::lookup(&v6, "2001:db8::1".parse().unwrap()),
        Some("eth0")
    );
    assert_eq!(route::lookup(&v6, "::1".parse().unwrap()), Some("lo"));
}
