//! Every captured host under `tests/fixtures/hosts/*/EXPECTED.json` (and each of its `variants`):
//! doctor run with its `iface` and `app_cpus` must report `expect_findings` and must not report
//! `expect_absent`, and the key `facts` must match what the collectors read. A new fixture dropped
//! into the directory is tested without touching this file. The trees are only read.

use serde_json::Value;
use std::path::{Path, PathBuf};
use wirespeed_doctor::{diagnose, ids, Options};
use wirespeed_host::{collect, CpuSet, HostFacts, Root};

fn hosts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hosts")
}

fn fixtures() -> Vec<(String, PathBuf, Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(hosts_dir()).expect("tests/fixtures/hosts") {
        let dir = e.unwrap().path();
        let exp = dir.join("EXPECTED.json");
        if !exp.is_file() {
            continue;
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&exp).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", exp.display()));
        out.push((
            dir.file_name().unwrap().to_string_lossy().into_owned(),
            dir,
            v,
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no fixtures found");
    out
}

fn ids_of(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn check_case(host: &str, facts: &HostFacts, iface: Option<&str>, app: Option<&str>, exp: &Value) {
    let opts = Options {
        iface: iface.map(str::to_string),
        app_cpus: app.map(|a| CpuSet::parse_nonempty(a).unwrap()),
        rate_mbps: exp["rate"].as_str().map(|r| {
            wirespeed_model::units::Rate::parse(r, "--rate")
                .unwrap()
                .mbps()
        }),
        ..Options::default()
    };
    let findings = diagnose(facts, &opts).unwrap_or_else(|e| panic!("{host}: {e}"));
    let got: Vec<&str> = findings.iter().map(|f| f.id.as_str()).collect();
    let ctx = format!(
        "{host} iface={iface:?} app_cpus={app:?} rate={:?}: reported {got:?}",
        opts.rate_mbps
    );
    // what the report says it did not check, or did not judge
    let notes = wirespeed_doctor::notes(facts, &opts);
    for want in exp["expect_notes"].as_array().into_iter().flatten() {
        let want = want.as_str().unwrap();
        assert!(
            notes.iter().any(|n| n.contains(want)),
            "{ctx}: no note containing {want:?} in {notes:?}"
        );
    }
    for id in ids_of(exp, "expect_findings") {
        assert!(
            ids::ALL.contains(&id.as_str()),
            "{ctx}: unknown id {id} in EXPECTED"
        );
        assert!(got.contains(&id.as_str()), "{ctx}: expected {id}");
    }
    for id in ids_of(exp, "expect_absent") {
        assert!(
            !got.contains(&id.as_str()),
            "{ctx}: {id} must not be reported"
        );
    }
    // an upper device's findings concern it, a device of its stack, or a member beneath it
    let stack: Vec<String> = iface
        .and_then(|i| facts.upper(i))
        .map(|u| u.nodes().iter().map(|n| n.name.clone()).collect())
        .unwrap_or_default();
    for f in &findings {
        if let (Some(want), Some(fi)) = (iface, &f.iface) {
            assert!(
                want == fi || stack.contains(fi),
                "{ctx}: finding {} about another interface {fi}",
                f.id
            );
            if want != fi && facts.nic(fi).is_some() {
                assert!(
                    f.summary.starts_with(&format!("{fi} (member of {want}): ")),
                    "{ctx}: a member's finding is not labelled with it: {}",
                    f.summary
                );
            }
        }
        assert!(
            !f.summary.is_empty() && !f.evidence.is_empty() && !f.fix.is_empty(),
            "{ctx}: {f:?}"
        );
        for e in &f.evidence {
            assert!(
                !e.source.is_empty(),
                "{ctx}: evidence without source in {}",
                f.id
            );
        }
    }
}

fn s(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64().map(|n| n as u32))
                .collect()
        })
        .unwrap_or_default()
}

fn opt_str(o: Option<&String>) -> Value {
    o.map_or(Value::Null, |s| Value::String(s.clone()))
}

/// Compare the EXPECTED facts with the collected facts; returns the keys it checked.
fn check_facts(host: &str, facts: &HostFacts, exp: &Value) -> Vec<String> {
    let want = &exp["facts"];
    let Some(obj) = want.as_object() else {
        return Vec::new();
    };
    // an upper device's fixture names the member whose NIC facts it lists
    let iface = exp["facts_iface"]
        .as_str()
        .or(exp["iface"].as_str())
        .expect("iface");
    let nic = facts
        .nic(iface)
        .unwrap_or_else(|| panic!("{host}: no NIC {iface}"));
    let app = exp["app_cpus"]
        .as_str()
        .map(|a| CpuSet::parse_list(a).unwrap());
    let mut checked = Vec::new();
    for (key, val) in obj {
        let ctx = format!("{host}: facts.{key}");
        let ok = |got: Value| assert_eq!(&got, val, "{ctx}");
        match key.as_str() {
            "kernel" => ok(opt_str(facts.kernel.as_ref())),
            "cpu_model" => ok(opt_str(facts.cpu.model.as_ref())),
            "online_cpus" => ok(Value::String(facts.cpu.online.clone().unwrap().to_string())),
            "possible_cpus" => ok(Value::String(
                facts.cpu.possible.clone().unwrap().to_string(),
            )),
            "numa_nodes" => {
                let got: serde_json::Map<String, Value> = facts
                    .cpu
                    .nodes_with_cpus()
                    .map(|(n, c)| (n.to_string(), Value::String(c.to_string())))
                    .collect();
                ok(Value::Object(got))
            }
            "l3_groups" => {
                let got: serde_json::Map<String, Value> = facts
                    .cpu
                    .l3_groups
                    .iter()
                    .map(|g| (g.id.to_string(), Value::String(g.cpus.to_string())))
                    .collect();
                ok(Value::Object(got))
            }
            "nic" => {
                for (k, v) in val.as_object().unwrap() {
                    let got = match k.as_str() {
                        "pci_address" => Value::String(nic.pci_address.clone()),
                        "vendor" => opt_str(nic.vendor_id.as_ref()),
                        "device" => opt_str(nic.device_id.as_ref()),
                        "driver" => opt_str(nic.driver.as_ref()),
                        "numa_node" => nic.numa_node.map_or(Value::Null, |n| n.into()),
                        "local_cpulist" => nic
                            .local_cpus
                            .as_ref()
                            .map_or(Value::Null, |c| c.to_string().into()),
                        "upstream_port" => nic
                            .pcie
                            .as_ref()
                            .and_then(|p| p.upstream.as_ref())
                            .map_or(Value::Null, |u| u.address.clone().into()),
                        // The marketing name comes from the write-up; the trees carry no
                        // pci.ids, so the facts model leaves the name unknown.
                        "model" => {
                            assert_eq!(nic.device_name, None, "{ctx}.model");
                            continue;
                        }
                        other => panic!("{ctx}: unknown nic key {other}"),
                    };
                    assert_eq!(&got, v, "{ctx}.{k}");
                }
            }
            "pcie" => {
                let p = nic
                    .pcie
                    .as_ref()
                    .unwrap_or_else(|| panic!("{ctx}: no PCIe facts"));
                let f = &p.function;
                let up = p.upstream.as_ref();
                for (k, v) in val.as_object().unwrap() {
                    let got: Value = match k.as_str() {
                        "current_speed" => opt_str(f.current_speed.as_ref()),
                        "current_width" => f.current_width.into(),
                        "max_speed" => opt_str(f.max_speed.as_ref()),
                        "max_width" => f.max_width.into(),
                        "upstream_max_speed" => opt_str(up.and_then(|u| u.max_speed.as_ref())),
                        "upstream_max_width" => up.and_then(|u| u.max_width).into(),
                        "available_mbps" => p.available_mbps.into(),
                        "capable_mbps" => p.capable_mbps.into(),
                        "downgraded" => p.downgraded.into(),
                        other => panic!("{ctx}: unknown pcie key {other}"),
                    };
                    assert_eq!(&got, v, "{ctx}.{k}");
                }
            }
            "link_speed_mbps" => ok(nic.speed_mbps.into()),
            "mtu" => ok(nic.mtu.into()),
            "iface_irqs" => ok(nic.own_irqs().map(|i| i.irq).collect::<Vec<_>>().into()),
            "iface_unrequested_irqs" => ok(nic
                .unrequested_irqs()
                .map(|i| i.irq)
                .collect::<Vec<_>>()
                .into()),
            "tx_queue_len" => ok(nic.tx_queue_len.into()),
            "product_name" => ok(opt_str(facts.platform.product_name.as_ref())),
            "rps_sock_flow_entries" => ok(facts.stack.rps_sock_flow_entries.into()),
            "coalesce_rx_usecs" => ok(nic
                .ethtool
                .as_ref()
                .and_then(|e| e.coalesce)
                .map(|c| c.rx_usecs)
                .into()),
            "pause_rx_tx" => ok(nic
                .ethtool
                .as_ref()
                .and_then(|e| e.pause)
                .map(|p| vec![p.rx, p.tx])
                .into()),
            "iface_irq_effective_cpus" => {
                let got: serde_json::Map<String, Value> = nic
                    .own_irqs()
                    .map(|i| {
                        (
                            i.irq.to_string(),
                            i.effective
                                .as_ref()
                                .map_or(Value::Null, |e| e.to_string().into()),
                        )
                    })
                    .collect();
                ok(Value::Object(got))
            }
            "iface_irq_cpu_set" => ok(nic.irq_cpus().to_string().into()),
            "iface_irq_numa_nodes" => ok(facts.cpu.nodes_of(&nic.irq_cpus()).into()),
            "iface_irq_l3_groups" => ok(facts.cpu.l3_ids_of(&nic.irq_cpus()).into()),
            "app_cpus" => ok(app.as_ref().map(|a| a.to_string()).into()),
            "app_numa_nodes" => ok(facts.cpu.nodes_of(app.as_ref().unwrap()).into()),
            "app_l3_groups" => ok(facts.cpu.l3_ids_of(app.as_ref().unwrap()).into()),
            "iface_irqs_on_app_cpus" => {
                let a = app.as_ref().unwrap();
                let got: Vec<u32> = nic
                    .own_irqs()
                    .filter(|i| i.effective.as_ref().is_some_and(|e| e.intersects(a)))
                    .map(|i| i.irq)
                    .collect();
                assert_eq!(got, u32s(val), "{ctx}");
            }
            "nic_hwmon" => ok(opt_str(nic.hwmon.as_ref().map(|h| &h.hwmon))),
            "nic_temp_millicelsius" => ok(nic
                .hwmon
                .as_ref()
                .and_then(|h| h.hottest())
                .map(|t| t.input_millicelsius)
                .into()),
            "nic_temp_crit_millicelsius" => ok(nic
                .hwmon
                .as_ref()
                .and_then(|h| h.hottest())
                .and_then(|t| t.crit_millicelsius)
                .into()),
            "nic_temp_label" => ok(opt_str(
                nic.hwmon
                    .as_ref()
                    .and_then(|h| h.hottest())
                    .and_then(|t| t.label.as_ref()),
            )),
            "cpufreq_driver" => ok(opt_str(facts.cpu.cpufreq_driver.as_ref())),
            "governor" => {
                let a = app.clone().unwrap_or_else(|| facts.cpu.online_set());
                for c in a.iter() {
                    let g = facts.cpu.cpu(c).and_then(|t| t.governor.clone());
                    assert_eq!(g, s(val), "{ctx} of CPU {c}");
                }
            }
            "congestion_control" => ok(opt_str(facts.stack.tcp_congestion_control.as_ref())),
            "available_congestion_control" => ok(facts
                .stack
                .tcp_available_congestion_control
                .as_ref()
                .map(|v| v.join(" "))
                .into()),
            "default_qdisc" => ok(opt_str(facts.stack.default_qdisc.as_ref())),
            "rmem_max" => ok(facts.stack.rmem_max.into()),
            "wmem_max" => ok(facts.stack.wmem_max.into()),
            "tcp_rmem" => ok(facts.stack.tcp_rmem.map(|t| t.to_vec()).into()),
            "tcp_wmem" => ok(facts.stack.tcp_wmem.map(|t| t.to_vec()).into()),
            "netdev_max_backlog" => ok(facts.stack.netdev_max_backlog.into()),
            "irqbalance_running" => ok(facts.stack.irqbalance_running.into()),
            "softnet_dropped_total" => ok(facts.stack.softnet_dropped_total().into()),
            "softnet_time_squeeze_total" => ok(facts.stack.softnet_time_squeeze_total().into()),
            "softnet_cpus_with_drops" => {
                let got: Vec<u32> = facts
                    .stack
                    .softnet
                    .iter()
                    .flatten()
                    .filter(|r| r.dropped > 0)
                    .filter_map(|r| r.cpu)
                    .collect();
                assert_eq!(got, u32s(val), "{ctx}");
            }
            "stack" => check_stack(&ctx, facts, exp["iface"].as_str().expect("iface"), val),
            // Notes for the reader (strings, or objects/arrays of explanations).
            _ => {
                eprintln!("{host}: facts.{key} is a note, not checked");
                continue;
            }
        }
        checked.push(key.clone());
    }
    checked
}

/// The `stack` facts of an upper device's fixture: what the resolver reads of it.
fn check_stack(ctx: &str, facts: &HostFacts, iface: &str, want: &Value) {
    let u = facts
        .upper(iface)
        .unwrap_or_else(|| panic!("{ctx}: {iface} is not an upper device"));
    let bond = u.aggregates().first().and_then(|a| a.bond.clone());
    let members: Vec<&wirespeed_host::StackNode> = u
        .aggregates()
        .first()
        .map(|a| a.lowers.iter().collect())
        .unwrap_or_default();
    for (k, v) in want.as_object().expect("stack: an object") {
        let got: Value = match k.as_str() {
            "kind" => u.top.kind.as_str().into(),
            "leaves" => u
                .leaves()
                .iter()
                .map(|l| l.name.clone())
                .collect::<Vec<_>>()
                .into(),
            "mtu" => u.top.mtu.into(),
            "vlan_id" => u.top.vlan_id.into(),
            "bond_mode" => bond
                .as_ref()
                .and_then(|b| b.mode.clone())
                .map(|m| m.value)
                .into(),
            "xmit_hash_policy" => bond
                .as_ref()
                .and_then(|b| b.xmit_hash_policy.clone())
                .map(|m| m.value)
                .into(),
            "lacp_rate" => bond
                .as_ref()
                .and_then(|b| b.lacp_rate.clone())
                .map(|m| m.value)
                .into(),
            "miimon" => bond
                .as_ref()
                .and_then(|b| b.miimon.clone())
                .map(|m| m.value)
                .into(),
            "member_speeds_mbps" => members
                .iter()
                .map(|m| m.speed_mbps)
                .collect::<Vec<_>>()
                .into(),
            "member_mii_status" => members
                .iter()
                .map(|m| m.member.as_ref().and_then(|s| s.mii_status.clone()))
                .collect::<Vec<_>>()
                .into(),
            "bridge_netfilter" => u
                .top
                .bridge
                .as_ref()
                .map(|b| {
                    b.netfilter()
                        .iter()
                        .map(|s| s.source.clone())
                        .collect::<Vec<_>>()
                })
                .into(),
            other => panic!("{ctx}: unknown stack key {other}"),
        };
        assert_eq!(&got, v, "{ctx}.{k}");
    }
}

#[test]
fn every_fixture_meets_its_expectations() {
    for (host, dir, exp) in fixtures() {
        let facts = collect(&Root::new(&dir));
        let iface = exp["iface"].as_str();
        let app = exp["app_cpus"].as_str();
        check_case(&host, &facts, iface, app, &exp);
        for v in exp["variants"].as_array().into_iter().flatten() {
            let viface = v["iface"].as_str().or(iface);
            let vapp = v["app_cpus"].as_str().or(app);
            check_case(&host, &facts, viface, vapp, v);
        }
        let checked = check_facts(&host, &facts, &exp);
        assert!(
            checked.len() >= 20,
            "{host}: only {} facts checked",
            checked.len()
        );
        eprintln!("{host}: ok ({} facts checked)", checked.len());
    }
}

#[test]
fn fixture_facts_round_trip_through_json() {
    for (host, dir, _) in fixtures() {
        let facts = collect(&Root::new(&dir));
        let json = serde_json::to_string(&facts).unwrap();
        let back: HostFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, facts, "{host}");
    }
}

/// Socket buffers are sized for the target's rate: for a bond, the link speed of the fastest
/// member that is up (what one flow can reach, the rate tune's plan sizes for too), not of the
/// first member listed.
#[test]
fn a_bond_s_buffers_are_checked_against_the_target_s_rate() {
    let dir = hosts_dir().join("bond-cx6-lacp");
    let mut facts = collect(&Root::new(&dir));
    facts.stack.tcp_rmem = Some([4096, 131_072, 6_291_456]);
    let first = facts
        .nics
        .iter_mut()
        .find(|n| n.name == "ens1f0np0")
        .expect("the bond's first member");
    first.speed_mbps = Some(25_000);
    let opts = Options {
        iface: Some("bond0".into()),
        ..Options::default()
    };
    let t = opts.target(&facts).unwrap();
    assert_eq!(
        t.parts()[..2],
        ["interface bond0 (--iface)", "rate 100 Gbit/s (link speed)"]
    );
    let f = diagnose(&facts, &opts).unwrap();
    let s = f
        .iter()
        .find(|f| f.id == ids::SOCKET_BUFFERS_SMALL)
        .expect("6 MiB is below 100 Gbit/s x 10 ms");
    let speed = s
        .evidence
        .iter()
        .find(|e| e.what == "link speed")
        .expect("the link speed's evidence");
    assert_eq!(speed.value, "100 Gbit/s");
    assert!(speed.source.contains("ens1f1np1"), "{}", speed.source);
}
