//! Checks of an upper device's own settings: a bond (or team), a VLAN, a bridge, a macvlan —
//! the layers between the interface a test uses and the NICs that carry it
//! ([`wirespeed_host::upper`]). The members' own findings (PCIe, NUMA, IRQs, rings…) come from
//! the per-NIC checks, run on each PCI member and labelled with it ([`label_members`]).
//!
//! Each check says why it fires in its own documentation; as everywhere in doctor, an unknown
//! fact never produces a finding.

use crate::{ids, Evidence, FileWrite, Finding, Options, Severity};
use wirespeed_host::upper::{StackNode, UpperStack};
use wirespeed_host::HostFacts;
use wirespeed_model::units::speed_mbps;

/// Hash policies that send every flow between one pair of hosts (or one MAC) to the same member
/// (`Documentation/networking/bonding.rst`, `xmit_hash_policy`).
pub const HOST_PAIR_POLICIES: [&str; 4] = ["layer2", "layer2+3", "encap2+3", "vlan+srcmac"];

/// The policy that spreads flows of one host pair by their ports.
pub const FLOW_POLICY: &str = "layer3+4";

/// The upper devices doctor checks: `--iface` when it names one, else every upper device with
/// a PCI NIC beneath it (a bridge of container veths alone carries no NIC's traffic).
pub fn target_uppers<'a>(facts: &'a HostFacts, opts: &Options) -> Vec<&'a UpperStack> {
    match &opts.iface {
        Some(name) => facts.upper(name).into_iter().collect(),
        None => facts
            .uppers
            .iter()
            .filter(|u| u.leaves().iter().any(|l| facts.nic(&l.name).is_some()))
            .collect(),
    }
}

/// Run every check of every target upper device.
pub fn run_all(facts: &HostFacts, opts: &Options) -> Vec<Finding> {
    let mut out = Vec::new();
    for u in target_uppers(facts, opts) {
        for agg in u.aggregates() {
            out.extend(bond_hash_policy(u, agg, opts));
            out.extend(bond_member_down(u, agg));
            out.extend(bond_member_speed_mismatch(u, agg));
            out.extend(bond_member_numa_split(facts, u, agg, opts));
            out.extend(bond_lacp_rate_slow(agg));
            out.extend(bond_miimon_off(agg));
        }
        out.extend(stack_mtu_mismatch(u));
        out.extend(bridge_netfilter(u));
    }
    // a device shared by two targets (no --iface: a bond and the VLAN on it) is reported once
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|f| seen.insert((f.id.clone(), f.iface.clone())));
    out
}

/// Put the upper device in each member finding's summary: `ens1f0np0 (member of bond0): …`.
pub fn label_members(facts: &HostFacts, opts: &Options, findings: &mut [Finding]) {
    let Some(u) = opts.iface.as_deref().and_then(|i| facts.upper(i)) else {
        return;
    };
    for f in findings.iter_mut() {
        let Some(member) = f.iface.clone() else {
            continue;
        };
        if member == u.name() || u.find(&member).is_none() {
            continue;
        }
        let prefix = format!("{member}: ");
        if let Some(rest) = f.summary.strip_prefix(&prefix) {
            f.summary = format!("{member} (member of {}): {rest}", u.name());
        } else {
            f.summary = format!("{member} (member of {}): {}", u.name(), f.summary);
        }
    }
}

/// The lines doctor's notes add for the upper devices it checked: what each is made of, the
/// members that are not PCI NICs (not checked), and what the walk could not follow.
pub fn notes(facts: &HostFacts, opts: &Options) -> Vec<String> {
    let mut out = Vec::new();
    for u in target_uppers(facts, opts) {
        let leaves = u.leaves();
        let mut parts = Vec::new();
        for n in u.nodes() {
            if let Some(b) = &n.bond {
                let mut s = format!("{} is a bond", n.name);
                if let Some(m) = &b.mode {
                    s.push_str(&format!(" ({}", m.value));
                    if let Some(h) = &b.xmit_hash_policy {
                        s.push_str(&format!(", xmit_hash_policy {}", h.value));
                    }
                    s.push(')');
                }
                parts.push(s);
            } else if let Some(id) = n.vlan_id {
                parts.push(format!("{} is VLAN {id}", n.name));
            } else if !n.lowers.is_empty() {
                parts.push(format!("{} is a {}", n.name, n.kind.as_str()));
            }
        }
        let names: Vec<&str> = leaves.iter().map(|l| l.name.as_str()).collect();
        out.push(format!(
            "{}: {}; the devices beneath it: {} (each PCI NIC checked on its own)",
            u.name(),
            parts.join(", "),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ));
        let other: Vec<&str> = leaves
            .iter()
            .filter(|l| facts.nic(&l.name).is_none())
            .map(|l| l.name.as_str())
            .collect();
        if !other.is_empty() {
            let one = other.len() == 1;
            out.push(format!(
                "{}: {} {} not {}: no NIC checks for {}",
                u.name(),
                other.join(", "),
                if one { "is" } else { "are" },
                if one { "a PCI NIC" } else { "PCI NICs" },
                if one { "it" } else { "them" }
            ));
        }
        out.extend(u.notes.iter().map(|n| format!("{}: {n}", u.name())));
    }
    out
}

/// The members of an aggregate, each down to the device that carries it.
fn members(agg: &StackNode) -> &[StackNode] {
    &agg.lowers
}

fn sysfs_of(n: &StackNode, file: &str) -> String {
    format!("{}/{file}", n.sysfs)
}

/// **bond-hash-policy**: a bond in a hashing mode (802.3ad, balance-xor) with
/// `xmit_hash_policy` `layer2`, `layer2+3`, `encap2+3` or `vlan+srcmac` sends every flow between
/// one pair of hosts (every flow to the gateway's MAC, for `layer2`) over one member, while the
/// rate wanted — `--rate`, else the sum of the members' speeds — needs more than one member's.
/// Needs the mode, the policy and the members' speeds.
pub fn bond_hash_policy(u: &UpperStack, agg: &StackNode, opts: &Options) -> Option<Finding> {
    let b = agg.bond.as_ref()?;
    let mode = b.mode.as_ref()?;
    let policy = b.xmit_hash_policy.as_ref()?;
    if !b.hashes() || !HOST_PAIR_POLICIES.contains(&policy.value.as_str()) {
        return None;
    }
    let up: Vec<&StackNode> = members(agg).iter().filter(|m| m.is_up()).collect();
    let speeds: Vec<u64> = up.iter().filter_map(|m| m.speed_mbps).collect();
    let one = *speeds.iter().max()?;
    if up.len() < 2 {
        return None;
    }
    let (wanted, wanted_what, wanted_src) = match opts.rate_mbps {
        Some(r) => (r, "wanted rate", "--rate".to_string()),
        None => (
            speeds.iter().sum(),
            "the members' speeds together",
            "computed: sum of the members' speed".to_string(),
        ),
    };
    if wanted <= one {
        return None;
    }
    let per = match policy.value.as_str() {
        "layer2" => "every flow to one MAC address (one peer, or every peer behind one gateway)",
        "vlan+srcmac" => "every flow from one VLAN and source MAC",
        _ => "every flow between one pair of hosts",
    };
    let mut evidence = vec![
        Evidence::new("bond mode", &mode.value, &mode.source),
        Evidence::new("xmit_hash_policy", &policy.value, &policy.source),
    ];
    for m in &up {
        if let Some(s) = m.speed_mbps {
            evidence.push(Evidence::new(
                format!("{} speed", m.name),
                speed_mbps(s),
                sysfs_of(m, "speed"),
            ));
        }
    }
    evidence.push(Evidence::new(wanted_what, speed_mbps(wanted), wanted_src));
    let path = format!("{}/bonding/xmit_hash_policy", agg.sysfs);
    Some(Finding {
        id: ids::BOND_HASH_POLICY.into(),
        severity: Severity::Warning,
        iface: Some(agg.name.clone()),
        summary: format!(
            "{}: xmit_hash_policy {} puts {per} on one member, so one host pair gets at most {} of the {} wanted{}",
            agg.name,
            policy.value,
            speed_mbps(one),
            speed_mbps(wanted),
            if u.name() != agg.name { format!(" through {}", u.name()) } else { String::new() }
        ),
        evidence,
        fix: vec![
            format!("echo {FLOW_POLICY} > {path}"),
            format!(
                "# and run several streams (-P 4 or more): {FLOW_POLICY} spreads flows by their ports, one TCP flow still rides one member"
            ),
            "# persist it in the bond's configuration (netplan: transmit-hash-policy; ifcfg: BONDING_OPTS=\"xmit_hash_policy=layer3+4\"); the switch hashes the return path by its own policy".into(),
        ],
        writes: vec![FileWrite {
            path,
            current: policy.value.clone(),
            value: FLOW_POLICY.into(),
            what: format!("hash flows of one host pair over all members of {}", agg.name),
        }],
    })
}

/// **bond-member-down**: a member of a bond or team is down (its MII status, or its link): the
/// bond runs on fewer members than it has.
pub fn bond_member_down(u: &UpperStack, agg: &StackNode) -> Option<Finding> {
    let _ = u;
    let all = members(agg);
    let down: Vec<&StackNode> = all
        .iter()
        .filter(|m| m.operstate.is_some() || m.member.is_some() || m.carrier.is_some())
        .filter(|m| !m.is_up())
        .collect();
    if down.is_empty() {
        return None;
    }
    let mut evidence = Vec::new();
    for m in &down {
        if let Some(s) = m.member.as_ref().and_then(|s| s.mii_status.as_ref()) {
            evidence.push(Evidence::new(
                format!("{} MII status", m.name),
                s,
                &m.member.as_ref().unwrap().source,
            ));
        }
        if let Some(o) = &m.operstate {
            evidence.push(Evidence::new(
                format!("{} operstate", m.name),
                o,
                sysfs_of(m, "operstate"),
            ));
        }
    }
    let names: Vec<&str> = down.iter().map(|m| m.name.as_str()).collect();
    let mut fix: Vec<String> = names
        .iter()
        .map(|n| format!("ip link show {n}; ethtool {n}   # cable, transceiver, switch port"))
        .collect();
    fix.push(format!("cat /proc/net/bonding/{}", agg.name));
    Some(Finding {
        id: ids::BOND_MEMBER_DOWN.into(),
        severity: Severity::Warning,
        iface: Some(agg.name.clone()),
        summary: format!(
            "{}: {} of its {} members {} down ({}): it carries at most what the others can",
            agg.name,
            down.len(),
            all.len(),
            if down.len() == 1 { "is" } else { "are" },
            names.join(", ")
        ),
        evidence,
        fix,
        writes: Vec::new(),
    })
}

/// **bond-member-speed-mismatch**: the bond's members that are up run at different speeds;
/// hashing spreads flows evenly, so the slow member caps its share (802.3ad aggregates only
/// ports of one speed and leaves the others out of the active aggregator).
pub fn bond_member_speed_mismatch(u: &UpperStack, agg: &StackNode) -> Option<Finding> {
    let _ = u;
    let up: Vec<(&StackNode, u64)> = members(agg)
        .iter()
        .filter(|m| m.is_up())
        .filter_map(|m| m.speed_mbps.map(|s| (m, s)))
        .collect();
    let min = up.iter().map(|x| x.1).min()?;
    let max = up.iter().map(|x| x.1).max()?;
    if min == max {
        return None;
    }
    let evidence = up
        .iter()
        .map(|(m, s)| {
            Evidence::new(
                format!("{} speed", m.name),
                speed_mbps(*s),
                sysfs_of(m, "speed"),
            )
        })
        .collect();
    let slow: Vec<&str> = up
        .iter()
        .filter(|x| x.1 == min)
        .map(|x| x.0.name.as_str())
        .collect();
    Some(Finding {
        id: ids::BOND_MEMBER_SPEED_MISMATCH.into(),
        severity: Severity::Warning,
        iface: Some(agg.name.clone()),
        summary: format!(
            "{}: its members run at different speeds ({} to {}); flows hashed onto {} get the slower rate",
            agg.name,
            speed_mbps(min),
            speed_mbps(max),
            slow.join(", ")
        ),
        evidence,
        fix: slow
            .iter()
            .map(|n| format!("ethtool {n}   # autonegotiated below the others: cable, transceiver or switch port"))
            .collect(),
        writes: Vec::new(),
    })
}

/// **bond-member-numa-split**: on a host with more than one NUMA node, the bond's members sit
/// on different nodes: whichever node the application runs on, the flows hashed onto the other
/// member cross the inter-socket link. With `--app-cpus`, the members remote from them are named.
pub fn bond_member_numa_split(
    facts: &HostFacts,
    u: &UpperStack,
    agg: &StackNode,
    opts: &Options,
) -> Option<Finding> {
    if !facts.cpu.is_multi_node() {
        return None;
    }
    let mut nodes: Vec<(String, u32, String)> = Vec::new();
    for m in members(agg) {
        for leaf in u.leaves_of(m) {
            if let Some(n) = facts.nic(&leaf.name) {
                nodes.push((
                    leaf.name.clone(),
                    n.node()?,
                    format!("{}/numa_node", n.device_path),
                ));
            }
        }
    }
    let first = nodes.first()?.1;
    if nodes.iter().all(|n| n.1 == first) {
        return None;
    }
    let mut evidence: Vec<Evidence> = nodes
        .iter()
        .map(|(name, node, src)| Evidence::new(format!("{name} NUMA node"), node, src))
        .collect();
    let mut remote = String::new();
    if let Some(app) = &opts.app_cpus {
        let app_nodes = facts.cpu.nodes_of(app);
        evidence.push(Evidence::new("application CPUs", app, "--app-cpus"));
        let far: Vec<&str> = nodes
            .iter()
            .filter(|n| !app_nodes.contains(&n.1))
            .map(|n| n.0.as_str())
            .collect();
        if !far.is_empty() {
            remote = format!(
                "; from the application's CPUs {app}, {} is remote",
                far.join(", ")
            );
        }
    }
    Some(Finding {
        id: ids::BOND_MEMBER_NUMA_SPLIT.into(),
        severity: Severity::Warning,
        iface: Some(agg.name.clone()),
        summary: format!(
            "{}: its members sit on different NUMA nodes ({}){remote}",
            agg.name,
            nodes
                .iter()
                .map(|n| format!("{} on node {}", n.0, n.1))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        evidence,
        fix: vec![
            "# put the bond's ports on one socket: both ports of one dual-port card, or two cards in slots of the same node".into(),
            "lspci -vv | grep -i numa; cat /sys/class/net/*/device/numa_node".into(),
        ],
        writes: Vec::new(),
    })
}

/// **bond-lacp-rate-slow**: an 802.3ad bond with `lacp_rate slow`: LACPDUs every 30 s, so a
/// member whose link stays up but stops passing traffic (a switch fault) is removed only after
/// 90 s, and its share of the flows is lost until then.
pub fn bond_lacp_rate_slow(agg: &StackNode) -> Option<Finding> {
    let b = agg.bond.as_ref()?;
    let mode = b.mode.as_ref()?;
    let rate = b.lacp_rate.as_ref()?;
    if mode.value != "802.3ad" || rate.value != "slow" {
        return None;
    }
    Some(Finding {
        id: ids::BOND_LACP_RATE_SLOW.into(),
        severity: Severity::Info,
        iface: Some(agg.name.clone()),
        summary: format!(
            "{}: lacp_rate slow: a member that stops passing traffic while its link stays up leaves the aggregate after 90 s (3 s with fast)",
            agg.name
        ),
        evidence: vec![
            Evidence::new("bond mode", &mode.value, &mode.source),
            Evidence::new("lacp_rate", &rate.value, &rate.source),
        ],
        fix: vec![
            format!(
                "ip link set dev {0} down; echo fast > {1}/bonding/lacp_rate; ip link set dev {0} up   # the kernel changes it only while the bond is down",
                agg.name, agg.sysfs
            ),
            "# and set the switch's LACP timeout to short (lacp rate fast) on its ports".into(),
        ],
        writes: Vec::new(),
    })
}

/// **bond-miimon-off**: a bond with `miimon 0` and no ARP monitoring (`arp_interval 0`) does not
/// notice a member whose link goes down, and keeps hashing flows onto it.
pub fn bond_miimon_off(agg: &StackNode) -> Option<Finding> {
    let b = agg.bond.as_ref()?;
    let mii = b.miimon.as_ref()?;
    if mii.value != 0 || b.arp_interval.as_ref().is_some_and(|a| a.value > 0) {
        return None;
    }
    let mut evidence = vec![Evidence::new(
        "miimon",
        format!("{} ms", mii.value),
        &mii.source,
    )];
    if let Some(a) = &b.arp_interval {
        evidence.push(Evidence::new(
            "arp_interval",
            format!("{} ms", a.value),
            &a.source,
        ));
    }
    let path = format!("{}/bonding/miimon", agg.sysfs);
    Some(Finding {
        id: ids::BOND_MIIMON_OFF.into(),
        severity: Severity::Warning,
        iface: Some(agg.name.clone()),
        summary: format!(
            "{}: miimon 0 and no ARP monitoring: a member whose link goes down keeps getting its share of the flows",
            agg.name
        ),
        evidence,
        fix: vec![
            format!("echo 100 > {path}"),
            "# persist it in the bond's configuration (netplan: mii-monitor-interval: 100; ifcfg: BONDING_OPTS=\"miimon=100\")".into(),
        ],
        writes: vec![FileWrite {
            path,
            current: mii.value.to_string(),
            value: "100".into(),
            what: format!("check {}'s members' links every 100 ms", agg.name),
        }],
    })
}

/// **stack-mtu-mismatch**: an upper device's MTU differs from a device directly beneath it that
/// carries its packets: a bond whose member was changed behind its back, a VLAN left at 1500 on a
/// jumbo port, a bridge held at 1500 by a container's veth while its NIC port runs 9000. The
/// traffic through the upper device uses the smaller one.
pub fn stack_mtu_mismatch(u: &UpperStack) -> Option<Finding> {
    let mut pairs: Vec<(&StackNode, &StackNode)> = Vec::new();
    for n in u.nodes() {
        let Some(up_mtu) = n.mtu else { continue };
        for l in &n.lowers {
            if l.mtu.is_some_and(|m| m != up_mtu) {
                pairs.push((n, l));
            }
        }
    }
    if pairs.is_empty() {
        return None;
    }
    let mut evidence = Vec::new();
    let mut said = Vec::new();
    for (n, l) in &pairs {
        for d in [n, l] {
            if !said.contains(&d.name) {
                evidence.push(Evidence::new(
                    format!("{} MTU", d.name),
                    d.mtu.unwrap_or_default(),
                    sysfs_of(d, "mtu"),
                ));
                said.push(d.name.clone());
            }
        }
    }
    let words: Vec<String> = pairs
        .iter()
        .map(|(n, l)| {
            format!(
                "{} {} on {} {}",
                n.name,
                n.mtu.unwrap_or_default(),
                l.name,
                l.mtu.unwrap_or_default()
            )
        })
        .collect();
    let target = pairs
        .iter()
        .flat_map(|(n, l)| [n.mtu, l.mtu])
        .flatten()
        .max()
        .unwrap_or_default();
    // raise the smaller side of each pair; a bridge takes the smallest MTU of its ports, so a
    // bridge's other ports below the target are raised with it
    let mut raise: Vec<&str> = Vec::new();
    for (n, l) in &pairs {
        for d in [*n, *l] {
            if d.mtu.is_some_and(|m| m < target) {
                raise.push(&d.name);
                if d.kind == wirespeed_host::DevKind::Bridge {
                    raise.extend(
                        d.lowers
                            .iter()
                            .filter(|p| p.mtu.is_some_and(|m| m < target))
                            .map(|p| p.name.as_str()),
                    );
                }
            }
        }
    }
    let mut fix = Vec::new();
    let mut order: Vec<&StackNode> = u.nodes();
    order.reverse(); // lower devices first: an upper's MTU may not exceed its lower's
    for d in order {
        if raise.contains(&d.name.as_str()) {
            fix.push(format!("ip link set dev {} mtu {target}", d.name));
        }
    }
    fix.push(
        "# only where the peer and every switch port on the path carry frames that large".into(),
    );
    let top = &pairs[0].0.name;
    Some(Finding {
        id: ids::STACK_MTU_MISMATCH.into(),
        severity: Severity::Warning,
        iface: Some(u.name().to_string()),
        summary: format!(
            "{}: MTU differs between layers ({}): traffic through {} uses the smaller one",
            u.name(),
            words.join(", "),
            top
        ),
        evidence,
        fix,
        writes: Vec::new(),
    })
}

/// **bridge-netfilter**: `br_netfilter` is loaded and bridged frames are passed to iptables or
/// ip6tables (`bridge-nf-call-iptables=1`, or the bridge's own `nf_call_iptables`): every frame
/// the bridge forwards goes through the firewall's hooks and connection tracking.
pub fn bridge_netfilter(u: &UpperStack) -> Option<Finding> {
    let mut evidence = Vec::new();
    let mut bridges = Vec::new();
    for n in u.nodes() {
        let Some(br) = &n.bridge else { continue };
        let on = br.netfilter();
        if on.is_empty() {
            continue;
        }
        bridges.push(n.name.clone());
        for s in on {
            let what = s.source.rsplit('/').next().unwrap_or(&s.source).to_string();
            if !evidence.iter().any(|e: &Evidence| e.source == s.source) {
                evidence.push(Evidence::new(what, 1, &s.source));
            }
        }
    }
    if bridges.is_empty() {
        return None;
    }
    Some(Finding {
        id: ids::BRIDGE_NETFILTER.into(),
        severity: Severity::Warning,
        iface: Some(u.name().to_string()),
        summary: format!(
            "{}: br_netfilter passes every frame {} forwards through iptables/ip6tables and connection tracking",
            u.name(),
            bridges.join(", ")
        ),
        evidence,
        fix: vec![
            "sysctl -w net.bridge.bridge-nf-call-iptables=0 net.bridge.bridge-nf-call-ip6tables=0".into(),
            "# only where no firewall rule on bridged traffic is wanted: Kubernetes (kube-proxy in iptables mode) and Docker's port publishing rely on it".into(),
        ],
        writes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::{collect, Root};

    fn bond_host() -> HostFacts {
        collect(&Root::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/hosts/bond-cx6-lacp"),
        ))
    }

    fn ids_for(facts: &HostFacts, iface: &str, rate: Option<u64>) -> Vec<String> {
        let opts = Options {
            iface: Some(iface.into()),
            rate_mbps: rate,
            ..Options::default()
        };
        run_all(facts, &opts).into_iter().map(|f| f.id).collect()
    }

    fn bond_mut(facts: &mut HostFacts) -> &mut StackNode {
        let u = facts
            .uppers
            .iter_mut()
            .find(|u| u.name() == "bond0")
            .unwrap();
        &mut u.top
    }

    #[test]
    fn the_hash_policy_finding_carries_its_write_and_follows_the_rate() {
        let facts = bond_host();
        let opts = Options {
            iface: Some("bond0".into()),
            ..Options::default()
        };
        let f = run_all(&facts, &opts)
            .into_iter()
            .find(|f| f.id == ids::BOND_HASH_POLICY)
            .unwrap();
        assert_eq!(f.iface.as_deref(), Some("bond0"));
        assert_eq!(
            f.writes,
            [FileWrite {
                path: "/sys/class/net/bond0/bonding/xmit_hash_policy".into(),
                current: "layer2".into(),
                value: "layer3+4".into(),
                what: "hash flows of one host pair over all members of bond0".into(),
            }]
        );
        assert!(
            f.summary.contains("100 Gbit/s of the 200 Gbit/s"),
            "{}",
            f.summary
        );
        // a rate one member carries: nothing to say
        assert!(
            !ids_for(&facts, "bond0", Some(100_000)).contains(&ids::BOND_HASH_POLICY.to_string())
        );
        assert!(
            ids_for(&facts, "bond0", Some(150_000)).contains(&ids::BOND_HASH_POLICY.to_string())
        );
        // layer3+4, or a mode that does not hash: no finding
        for (mode, policy) in [("802.3ad", "layer3+4"), ("active-backup", "layer2")] {
            let mut facts = bond_host();
            let b = bond_mut(&mut facts).bond.as_mut().unwrap();
            b.mode.as_mut().unwrap().value = mode.into();
            b.xmit_hash_policy.as_mut().unwrap().value = policy.into();
            let got = ids_for(&facts, "bond0", None);
            assert!(
                !got.contains(&ids::BOND_HASH_POLICY.to_string()),
                "{mode} {policy}: {got:?}"
            );
        }
    }

    #[test]
    fn members_down_at_other_speeds_or_on_other_nodes() {
        // one member's MII status down: member-down, and no hash finding (one member left)
        let mut facts = bond_host();
        bond_mut(&mut facts).lowers[1]
            .member
            .as_mut()
            .unwrap()
            .mii_status = Some("down".into());
        let got = ids_for(&facts, "bond0", None);
        assert!(got.contains(&ids::BOND_MEMBER_DOWN.to_string()), "{got:?}");
        assert!(!got.contains(&ids::BOND_HASH_POLICY.to_string()), "{got:?}");
        // the same seen through the VLAN on the bond
        let mut facts2 = bond_host();
        let v = facts2
            .uppers
            .iter_mut()
            .find(|u| u.name() == "bond0.100")
            .unwrap();
        v.top.lowers[0].lowers[0].operstate = Some("down".into());
        assert!(ids_for(&facts2, "bond0.100", None).contains(&ids::BOND_MEMBER_DOWN.to_string()));
        // a member at 25G next to one at 100G
        let mut facts = bond_host();
        bond_mut(&mut facts).lowers[1].speed_mbps = Some(25_000);
        let got = ids_for(&facts, "bond0", None);
        assert!(
            got.contains(&ids::BOND_MEMBER_SPEED_MISMATCH.to_string()),
            "{got:?}"
        );
        // members on two nodes
        let mut facts = bond_host();
        facts
            .nics
            .iter_mut()
            .find(|n| n.name == "ens1f1np1")
            .unwrap()
            .numa_node = Some(0);
        let opts = Options {
            iface: Some("bond0".into()),
            app_cpus: Some(wirespeed_host::CpuSet::parse_list("20").unwrap()),
            ..Options::default()
        };
        let f = run_all(&facts, &opts)
            .into_iter()
            .find(|f| f.id == ids::BOND_MEMBER_NUMA_SPLIT)
            .unwrap();
        assert!(f.summary.contains("ens1f1np1 is remote"), "{}", f.summary);
        // the fixture as captured: none of these
        let got = ids_for(&bond_host(), "bond0", None);
        for id in [
            ids::BOND_MEMBER_DOWN,
            ids::BOND_MEMBER_SPEED_MISMATCH,
            ids::BOND_MEMBER_NUMA_SPLIT,
            ids::BOND_MIIMON_OFF,
            ids::STACK_MTU_MISMATCH,
        ] {
            assert!(!got.contains(&id.to_string()), "{id}: {got:?}");
        }
    }

    #[test]
    fn miimon_off_and_mtu_between_layers() {
        let mut facts = bond_host();
        bond_mut(&mut facts)
            .bond
            .as_mut()
            .unwrap()
            .miimon
            .as_mut()
            .unwrap()
            .value = 0;
        let opts = Options {
            iface: Some("bond0".into()),
            ..Options::default()
        };
        let f = run_all(&facts, &opts)
            .into_iter()
            .find(|f| f.id == ids::BOND_MIIMON_OFF)
            .unwrap();
        assert_eq!(f.writes[0].path, "/sys/class/net/bond0/bonding/miimon");
        assert_eq!(f.writes[0].value, "100");
        // ARP monitoring detects failures instead: no finding
        bond_mut(&mut facts)
            .bond
            .as_mut()
            .unwrap()
            .arp_interval
            .as_mut()
            .unwrap()
            .value = 200;
        assert!(!ids_for(&facts, "bond0", None).contains(&ids::BOND_MIIMON_OFF.to_string()));
        // a member's MTU changed behind the bond's back
        let mut facts = bond_host();
        bond_mut(&mut facts).lowers[0].mtu = Some(1500);
        let f = run_all(&facts, &opts)
            .into_iter()
            .find(|f| f.id == ids::STACK_MTU_MISMATCH)
            .unwrap();
        assert!(
            f.summary.contains("bond0 9000 on ens1f0np0 1500"),
            "{}",
            f.summary
        );
        assert_eq!(f.fix[0], "ip link set dev ens1f0np0 mtu 9000");
    }

    #[test]
    fn a_bridge_held_at_1500_by_its_veths_raises_them_first() {
        let facts = collect(&Root::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/hosts/bridge-cx6-port"),
        ));
        let opts = Options {
            iface: Some("br0".into()),
            ..Options::default()
        };
        let f = run_all(&facts, &opts)
            .into_iter()
            .find(|f| f.id == ids::STACK_MTU_MISMATCH)
            .unwrap();
        assert_eq!(
            &f.fix[..3],
            [
                "ip link set dev veth81d07e4 mtu 9000",
                "ip link set dev veth3f9a2c1 mtu 9000",
                "ip link set dev br0 mtu 9000"
            ]
        );
    }

    #[test]
    fn without_iface_only_stacks_over_nics_are_checked_and_each_finding_once() {
        let facts = bond_host();
        let got = run_all(&facts, &Options::default());
        let hash: Vec<&Finding> = got
            .iter()
            .filter(|f| f.id == ids::BOND_HASH_POLICY)
            .collect();
        assert_eq!(hash.len(), 1, "bond0 and bond0.100 share the bond: {got:?}");
    }
}
