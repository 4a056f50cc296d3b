//! [`HostFacts`]: everything doctor, topo, tune and explain know about a host, read in one pass
//! through a [`Root`] by [`collect`]. Serializable; the JSON shape is documented in
//! `docs/doctor.md` (the `facts` member of doctor's `--json` report).

use crate::cpu::{collect_cpus, CpuFacts};
use crate::interrupts::Interrupts;
use crate::nic::{collect_nics, NicFacts};
use crate::stack::{collect_stack, StackFacts};
use crate::upper::{collect_uppers, UpperStack};
use crate::Root;
use serde::{Deserialize, Serialize};

/// Facts of one host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// Kernel release, `/proc/sys/kernel/osrelease` (else the third word of `/proc/version`).
    pub kernel: Option<String>,
    pub cpu: CpuFacts,
    /// PCI-backed interfaces, by name.
    pub nics: Vec<NicFacts>,
    pub stack: StackFacts,
    #[serde(default)]
    pub platform: PlatformFacts,
    /// Interfaces with devices beneath them (bonds, teams, VLANs, macvlans, bridges), each
    /// resolved down to its leaves ([`crate::upper`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uppers: Vec<UpperStack>,
}

impl HostFacts {
    /// A host known only by its CPUs (what a command that names CPUs, and nothing else of the
    /// host, needs read before it runs).
    pub fn of_cpus(cpu: CpuFacts) -> HostFacts {
        HostFacts {
            cpu,
            ..HostFacts::default()
        }
    }
}

/// The machine around the CPUs and NICs: what it is (DMI) and how the kernel was booted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformFacts {
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
    /// `/sys/class/dmi/id/product_name`: the model, or a cloud instance type (`c5n.18xlarge`).
    pub product_name: Option<String>,
    /// `/sys/class/dmi/id/sys_vendor` (`Amazon EC2`, `Google`, `Microsoft Corporation`).
    pub sys_vendor: Option<String>,
    /// Number of entries of `/sys/kernel/iommu_groups` (0: no IOMMU translates DMA).
    pub iommu_groups: Option<usize>,
}

/// Paths of the platform facts.
pub mod platform_paths {
    pub const CMDLINE: &str = "/proc/cmdline";
    pub const PRODUCT_NAME: &str = "/sys/class/dmi/id/product_name";
    pub const SYS_VENDOR: &str = "/sys/class/dmi/id/sys_vendor";
    pub const IOMMU_GROUPS: &str = "/sys/kernel/iommu_groups";
}

/// The value of `key=` on a kernel command line (the last one wins, as in the kernel); `Some("")`
/// for a bare `key`.
pub fn cmdline_value<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .filter_map(|w| match w.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if w == key => Some(""),
            _ => None,
        })
        .next_back()
}

fn collect_platform(root: &Root) -> PlatformFacts {
    use platform_paths::*;
    PlatformFacts {
        cmdline: root.read_opt(CMDLINE),
        product_name: root.read_opt(PRODUCT_NAME).filter(|s| !s.is_empty()),
        sys_vendor: root.read_opt(SYS_VENDOR).filter(|s| !s.is_empty()),
        iommu_groups: root.list(IOMMU_GROUPS).ok().map(|l| l.len()),
    }
}

impl HostFacts {
    /// The interface named `name`, if it is PCI-backed.
    pub fn nic(&self, name: &str) -> Option<&NicFacts> {
        self.nics.iter().find(|n| n.name == name)
    }

    /// The upper device named `name` (a bond, VLAN, bridge, macvlan), resolved.
    pub fn upper(&self, name: &str) -> Option<&UpperStack> {
        self.uppers.iter().find(|u| u.name() == name)
    }
}

/// Kernel release from `/proc/version` text (`Linux version 6.8.0-51-generic (...)`).
pub fn parse_proc_version(text: &str) -> Option<String> {
    let mut w = text.split_whitespace();
    (w.next()? == "Linux" && w.next()? == "version").then(|| w.next().map(str::to_string))?
}

/// Read all facts through `root`. Never fails: what cannot be read is unknown.
pub fn collect(root: &Root) -> HostFacts {
    let cpu = collect_cpus(root);
    let interrupts = root
        .read("/proc/interrupts")
        .ok()
        .and_then(|t| Interrupts::parse(&t).ok());
    let nics = collect_nics(root, interrupts.as_ref());
    let mut stack = collect_stack(root, cpu.online.as_ref());
    let kernel = root.read_opt("/proc/sys/kernel/osrelease").or_else(|| {
        root.read("/proc/version")
            .ok()
            .and_then(|t| parse_proc_version(&t))
    });
    stack.tcp_loadable_congestion_control = kernel
        .as_deref()
        .and_then(|k| crate::stack::shipped_congestion_control(root, k));
    HostFacts {
        hostname: root.read_opt("/proc/sys/kernel/hostname"),
        kernel,
        cpu,
        nics,
        stack,
        platform: collect_platform(root),
        uppers: collect_uppers(root),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_version() {
        assert_eq!(
            parse_proc_version("Linux version 6.8.0-51-generic (buildd@x) #52").as_deref(),
            Some("6.8.0-51-generic")
        );
        assert_eq!(parse_proc_version("garbage"), None);
    }

    #[test]
    fn kernel_command_line_values() {
        let c = "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt quiet iommu=nopt";
        assert_eq!(cmdline_value(c, "intel_iommu"), Some("on"));
        assert_eq!(cmdline_value(c, "iommu"), Some("nopt"));
        assert_eq!(cmdline_value(c, "quiet"), Some(""));
        assert_eq!(cmdline_value(c, "amd_iommu"), None);
    }

    #[test]
    fn live_host_collects_without_errors() {
        let f = collect(&Root::live());
        assert!(!f.cpu.online_set().is_empty());
        // every NIC reported has a PCI address and sysfs paths under /sys
        for n in &f.nics {
            assert!(
                crate::pci::is_pci_address(&n.pci_address),
                "{}",
                n.pci_address
            );
            assert!(n.device_path.starts_with("/sys/devices/"));
        }
        let json = serde_json::to_string(&f).unwrap();
        let back: HostFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
    }
}
