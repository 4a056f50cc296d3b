//! The few facts of the test's interface an observation needs: its IRQ numbers, MTU, link
//! speed and NUMA node, taken from the host crate's NIC facts (`collect_nics`: `msi_irqs` of the
//! PCI function, the virtio parent's for virtio_net, the legacy `irq` line; vectors classified
//! by their `/proc/interrupts` names). Vectors that belong to another interface on the same PCI
//! function are left out; queue and control vectors both count (control vectors carry little).

use wirespeed_host::interrupts::Interrupts;
use wirespeed_host::nic::collect_nics;
use wirespeed_host::{IrqKind, Root};
use wirespeed_model::observation::LinkKind;

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
    let Some(nic) = collect_nics(root, interrupts.as_ref())
        .into_iter()
        .find(|n| n.name == iface)
    else {
        f.notes.push(format!(
            "{iface} is not backed by a PCI device {VIRTUAL_INTERFACE}: no NIC interrupts to count"
        ));
        f.link = Some(LinkKind::Virtual);
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
    f.irqs = nic
        .irqs
        .iter()
        .filter(|i| i.kind != IrqKind::OtherInterface)
        .map(|i| i.irq)
        .collect();
    if f.irqs.is_empty() {
        f.notes.push(format!(
            "{}: no msi_irqs or irq: NIC interrupts unknown",
            nic.device_path
        ));
    }
    f
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
