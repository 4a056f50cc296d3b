//! The few facts of the test's interface an observation needs: its IRQ numbers, MTU, link
//! speed and NUMA node, taken from the host crate's NIC facts (`collect_nics`: `msi_irqs` of the
//! PCI function, the virtio parent's for virtio_net, the legacy `irq` line; vectors classified
//! by their `/proc/interrupts` names). Vectors that belong to another interface on the same PCI
//! function are left out; queue and control vectors both count (control vectors carry little).
//!
//! When the interface is an upper device (a VLAN, a bond, a bridge, a macvlan:
//! [`wirespeed_host::upper`]), its packets are handled by the NICs beneath it: the vectors of
//! every PCI member are counted, and the stack is kept as typed data ([`IfaceStack`]) for the
//! verdict (a rate held at one member's speed on a bond of several).

use wirespeed_host::interrupts::Interrupts;
use wirespeed_host::nic::collect_nics;
use wirespeed_host::nic::NicFacts;
use wirespeed_host::upper::{self, DevKind, UpperStack};
use wirespeed_host::{IrqKind, Root};
use wirespeed_model::observation::LinkKind;
use wirespeed_model::{IfaceStack, StackBond, StackMember};

/// The words a note uses for an interface whose link speed is nominal (no line behind it).
pub const VIRTUAL_INTERFACE: &str = "(virtual interface)";

/// What the observer knows of the interface carrying the test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IfaceFacts {
    pub iface: String,
    pub irqs: Vec<u32>,
    pub mtu: Option<u32>,
    pub speed_mbps: Option<u64>,
    pub numa_node: Option<u32>,
    /// A real NIC, or a link whose speed is nominal (typed: the verdict reads this, never the
    /// notes' words).
    pub link: Option<wirespeed_model::observation::LinkKind>,
    /// Why some fact is missing.
    pub notes: Vec<String>,
    /// The devices beneath the interface, when it is an upper device.
    pub stack: Option<IfaceStack>,
}

/// The vectors of a NIC the observer counts: all but those of another interface on the same
/// PCI function.
fn counted_irqs(nic: &NicFacts) -> Vec<u32> {
    nic.irqs
        .iter()
        .filter(|i| i.kind != IrqKind::OtherInterface)
        .map(|i| i.irq)
        .collect()
}

/// The typed stack of an upper device, with its PCI members' vectors and nodes.
pub fn iface_stack(s: &UpperStack, nics: &[NicFacts]) -> IfaceStack {
    let mut layers = Vec::new();
    for n in s.nodes() {
        if !n.lowers.is_empty() || n.name == s.name() {
            layers.push(format!("{} {}", n.name, n.kind.as_str()));
        }
    }
    let bond = s.aggregates().first().map(|a| StackBond {
        name: a.name.clone(),
        mode: a
            .bond
            .as_ref()
            .and_then(|b| b.mode.as_ref())
            .map(|m| m.value.clone()),
        xmit_hash_policy: a
            .bond
            .as_ref()
            .and_then(|b| b.xmit_hash_policy.as_ref())
            .map(|m| m.value.clone()),
    });
    let members = s
        .leaves()
        .into_iter()
        .map(|l| {
            let nic = nics.iter().find(|n| n.name == l.name);
            StackMember {
                name: l.name.clone(),
                speed_mbps: l.speed_mbps,
                up: l.is_up(),
                nic: l.kind == DevKind::Pci && nic.is_some(),
                numa_node: nic.and_then(|n| n.node()),
                irqs: nic.map(counted_irqs).unwrap_or_default(),
            }
        })
        .collect();
    IfaceStack {
        iface: s.name().to_string(),
        layers,
        bond,
        members,
    }
}

/// Read the facts of `iface` under `root`. Never fails: what is missing is noted.
pub fn iface_facts(root: &Root, iface: &str) -> IfaceFacts {
    let base = format!("/sys/class/net/{iface}");
    let mut f = IfaceFacts {
        iface: iface.to_string(),
        mtu: root.parse_opt(&format!("{base}/mtu")),
        // `speed` is -1 or unreadable (EINVAL) when unknown or the link is down.
        speed_mbps: root
            .parse_opt::<i64>(&format!("{base}/speed"))
            .and_then(|s| u64::try_from(s).ok())
            .filter(|&s| s > 0),
        ..Default::default()
    };
    if !root.exists(&base) {
        f.notes.push(format!("{base}: no such interface"));
        return f;
    }
    f.link = Some(if iface == "lo" {
        LinkKind::Virtual
    } else {
        LinkKind::Nic
    });
    let interrupts = root
        .read("/proc/interrupts")
        .ok()
        .and_then(|t| Interrupts::parse(&t).ok());
    let nics = collect_nics(root, interrupts.as_ref());
    let Some(nic) = nics.iter().find(|n| n.name == iface).cloned() else {
        through_stack(root, iface, &nics, &mut f);
        return f;
    };
    if nic.virtio.is_some() || nic.driver.as_deref() == Some("virtio_net") {
        f.notes.push(format!(
            "{iface} is a virtio NIC {VIRTUAL_INTERFACE}: its link speed is nominal, not a line"
        ));
        f.link = Some(LinkKind::Virtio);
    }
    f.numa_node = nic.numa_node.and_then(|n| u32::try_from(n).ok());
    f.speed_mbps = f.speed_mbps.or(nic.speed_mbps);
    f.mtu = f.mtu.or(nic.mtu);
    f.irqs = counted_irqs(&nic);
    if f.irqs.is_empty() {
        f.notes.push(format!(
            "{}: no msi_irqs or irq: NIC interrupts unknown",
            nic.device_path
        ));
    }
    f
}

/// An interface that is no PCI NIC: when it is an upper device with NICs beneath it, count their
/// vectors (and take their node when they share one); else it is virtual.
fn through_stack(root: &Root, iface: &str, nics: &[NicFacts], f: &mut IfaceFacts) {
    let stack = upper::resolve(root, iface).ok().filter(|s| s.is_upper());
    let Some(s) = stack else {
        f.notes.push(format!(
            "{iface} is not backed by a PCI device {VIRTUAL_INTERFACE}: no NIC interrupts to count"
        ));
        f.link = Some(LinkKind::Virtual);
        return;
    };
    let typed = iface_stack(&s, nics);
    let with_nic: Vec<&StackMember> = typed.members.iter().filter(|m| m.nic).collect();
    if with_nic.is_empty() {
        f.notes.push(format!(
            "{iface} is a {} with no PCI device beneath it {VIRTUAL_INTERFACE}: no NIC interrupts to count",
            upper::describe(&s)
        ));
        f.link = Some(LinkKind::Virtual);
    } else {
        // NICs beneath: the upper device's speed is theirs (a bond's, their sum), a line
        f.link = Some(LinkKind::Nic);
        for m in &with_nic {
            for i in &m.irqs {
                if !f.irqs.contains(i) {
                    f.irqs.push(*i);
                }
            }
        }
        let nodes: Vec<Option<u32>> = with_nic.iter().map(|m| m.numa_node).collect();
        if nodes.iter().all(|n| *n == nodes[0]) {
            f.numa_node = nodes[0];
        }
        let others: Vec<&str> = typed
            .members
            .iter()
            .filter(|m| !m.nic)
            .map(|m| m.name.as_str())
            .collect();
        if !others.is_empty() {
            f.notes.push(format!(
                "{iface}: {} beneath it {} not PCI NICs: their packets' interrupts are not counted",
                others.join(", "),
                if others.len() == 1 { "is" } else { "are" }
            ));
        }
    }
    f.notes
        .extend(s.notes.iter().map(|n| format!("{iface}: {n}")));
    f.stack = Some(typed);
}

/// The interface's speed is nominal, not a line: loopback, or a link the observer typed as
/// virtual (veth, bridges, tunnels, virtio).
pub fn is_virtual(e: &wirespeed_model::EndObservation) -> bool {
    e.iface.as_deref() == Some("lo") || e.iface_link.is_some_and(|k| k.is_virtual())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Root {
        Root::new(format!(
            "{}/../../tests/fixtures/hosts/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
    }

    #[test]
    fn reads_the_connectx5_vectors() {
        let f = iface_facts(&fixture("crow-9900x-cx5-x4"), "enp1s0f0np0");
        assert_eq!(
            f.irqs,
            vec![98, 99, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119]
        );
        assert_eq!(f.mtu, Some(9000));
        assert_eq!(f.speed_mbps, Some(100000));
        assert_eq!(f.numa_node, None, "numa_node -1 on a desktop board");
        assert!(f.notes.is_empty(), "{:?}", f.notes);
    }

    #[test]
    fn two_node_host_has_a_nic_node() {
        let f = iface_facts(&fixture("sl-w9-x3650-cx3"), "p2p1");
        assert_eq!(f.numa_node, Some(1));
        assert_eq!(f.irqs.len(), 20);
        assert_eq!(f.speed_mbps, Some(40000));
    }

    #[test]
    fn virtual_and_missing_interfaces_are_noted() {
        let f = iface_facts(&fixture("crow-9900x-cx5-x4"), "lo");
        assert!(f.irqs.is_empty());
        assert!(f.notes[0].contains("virtual interface"), "{:?}", f.notes);
        let f = iface_facts(&fixture("crow-9900x-cx5-x4"), "nope0");
        assert!(f.notes[0].contains("no such interface"));
    }

    #[test]
    fn an_upper_device_counts_its_members_vectors() {
        // VLAN 100 on a 2 x 100G LACP bond: both ports' vectors, their shared node, the stack
        let f = iface_facts(&fixture("bond-cx6-lacp"), "bond0.100");
        let want: Vec<u32> = (120..129).chain(140..149).collect();
        assert_eq!(f.irqs, want);
        assert_eq!(f.numa_node, Some(1));
        assert_eq!(f.mtu, Some(9000));
        assert_eq!(f.speed_mbps, Some(200_000));
        assert!(f.notes.is_empty(), "{:?}", f.notes);
        let s = f.stack.unwrap();
        assert_eq!(s.layers, ["bond0.100 vlan", "bond0 bond"]);
        let b = s.bond.as_ref().unwrap();
        assert_eq!(b.xmit_hash_policy.as_deref(), Some("layer2"));
        assert!(b.per_host_pair());
        assert_eq!(s.one_member_ceiling_mbps(), Some(100_000));
        assert_eq!(s.members.len(), 2);
        assert_eq!(s.members[1].irqs, (140..149).collect::<Vec<u32>>());
        // a bridge of a NIC port and two veths: the port's vectors, the veths named
        let f = iface_facts(&fixture("bridge-cx6-port"), "br0");
        assert_eq!(f.irqs, (120..129).collect::<Vec<u32>>());
        assert!(
            f.notes[0].contains("veth3f9a2c1, veth81d07e4"),
            "{:?}",
            f.notes
        );
        assert_eq!(f.stack.unwrap().bond, None);
        // a PCI NIC has no stack
        assert_eq!(
            iface_facts(&fixture("bond-cx6-lacp"), "ens1f0np0").stack,
            None
        );
    }

    #[test]
    fn virtio_vectors_come_from_the_pci_parent() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        let pci = p.join("sys/devices/pci0000:00/0000:00:03.0");
        std::fs::create_dir_all(pci.join("virtio2/net/eth0")).unwrap();
        std::fs::create_dir_all(pci.join("msi_irqs")).unwrap();
        for n in ["37", "38", "39"] {
            std::fs::write(pci.join("msi_irqs").join(n), "msix\n").unwrap();
        }
        std::fs::write(pci.join("virtio2/net/eth0/mtu"), "1500\n").unwrap();
        std::fs::create_dir_all(p.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0",
            p.join("sys/class/net/eth0"),
        )
        .unwrap();
        std::os::unix::fs::symlink("../../../virtio2", pci.join("virtio2/net/eth0/device"))
            .unwrap();
        let f = iface_facts(&Root::new(p), "eth0");
        assert_eq!(f.irqs, vec![37, 38, 39]);
        assert_eq!(f.mtu, Some(1500));
        assert_eq!(f.speed_mbps, None);
    }
}
