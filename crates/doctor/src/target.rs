//! Which interface a command is about when `--iface` names none: one rule for `doctor` (the
//! NIC its buffer sizing is for) and `tune` (the NIC it plans for), said in their output.
//!
//! The rule: among the PCI NICs whose link is up, the fastest (a NIC that reports no speed
//! counts below any that does); several as fast → the first by name, and the words name the
//! others and say `--iface` chooses.

use wirespeed_host::nic::NicFacts;
use wirespeed_host::HostFacts;

/// The interface chosen by the rule, and the others that were as fast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicChoice<'a> {
    pub nic: &'a NicFacts,
    /// The other NICs that are up and as fast (a tie the name order broke), by name.
    pub tied: Vec<String>,
}

/// The fastest PCI NIC whose link is up, ties broken by name; `None` when none is up.
pub fn fastest_up(facts: &HostFacts) -> Option<NicChoice<'_>> {
    let mut up: Vec<&NicFacts> = facts.nics.iter().filter(|n| n.is_up()).collect();
    // fastest first (`None` sorts below every speed), then by name
    up.sort_by(|a, b| b.speed_mbps.cmp(&a.speed_mbps).then(a.name.cmp(&b.name)));
    let nic = *up.first()?;
    let tied = up[1..]
        .iter()
        .filter(|n| n.speed_mbps == nic.speed_mbps)
        .map(|n| n.name.clone())
        .collect();
    Some(NicChoice { nic, tied })
}

impl NicChoice<'_> {
    /// Whether the name order decided between NICs as fast.
    pub fn is_tie(&self) -> bool {
        !self.tied.is_empty()
    }

    /// The choice in words, the same in every command: `interface eth0: the fastest NIC that
    /// is up (100 Gbit/s); as fast: eth1, the first by name is taken (--iface chooses)`.
    pub fn words(&self) -> String {
        let speed = self.nic.speed_mbps.map_or(
            "no link speed".to_string(),
            wirespeed_model::units::speed_mbps,
        );
        let mut s = format!(
            "interface {}: the fastest NIC that is up ({speed})",
            self.nic.name
        );
        if self.is_tie() {
            s += &format!(
                "; as fast: {}, the first by name is taken (--iface chooses)",
                self.tied.join(", ")
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::nic::NicFacts;

    fn nic(name: &str, up: bool, speed: Option<u64>) -> NicFacts {
        serde_json::from_value(serde_json::json!({
            "name": name, "sysfs": format!("/sys/class/net/{name}"), "pci_address": "",
            "device_path": "", "operstate": if up { "up" } else { "down" },
            "speed_mbps": speed, "irqs": [], "rx_queues": [], "tx_queues": [], "siblings": [],
        }))
        .unwrap()
    }

    fn facts(nics: Vec<NicFacts>) -> HostFacts {
        HostFacts {
            nics,
            ..HostFacts::default()
        }
    }

    #[test]
    fn the_fastest_up_and_a_tie_by_name_said() {
        let f = facts(vec![
            nic("eth2", true, Some(100_000)),
            nic("eth0", false, Some(400_000)),
            nic("eth1", true, Some(100_000)),
            nic("eth3", true, Some(25_000)),
        ]);
        let c = fastest_up(&f).unwrap();
        assert_eq!(c.nic.name, "eth1");
        assert_eq!(c.tied, vec!["eth2".to_string()]);
        assert_eq!(
            c.words(),
            "interface eth1: the fastest NIC that is up (100 Gbit/s); as fast: eth2, the first by name is taken (--iface chooses)"
        );
        let f = facts(vec![nic("b", true, None), nic("a", true, Some(10))]);
        let c = fastest_up(&f).unwrap();
        assert_eq!((c.nic.name.as_str(), c.is_tie()), ("a", false));
        assert_eq!(
            c.words(),
            "interface a: the fastest NIC that is up (10 Mbit/s)"
        );
        // a lone virtual NIC with no speed still counts
        let f = facts(vec![nic("ens5", true, None)]);
        assert_eq!(fastest_up(&f).unwrap().nic.name, "ens5");
        assert!(fastest_up(&facts(vec![nic("x", false, Some(1))])).is_none());
    }
}
