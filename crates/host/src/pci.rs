//! PCI(e) facts: link speed and width of a function and of its upstream port, the usable
//! bandwidth they give, and vendor/device names from the system's `pci.ids`.
//!
//! Usable bandwidth of a link = transfer rate × lanes × line-code efficiency: 8b/10b at 2.5 and
//! 5 GT/s (PCIe 1.x/2.x), 128b/130b from 8 GT/s up (PCIe 3.0 and later). It is computed per lane in
//! whole Mbit/s (8 GT/s → 7876 Mbit/s) and multiplied by the width, which is what `lspci`-style
//! reasoning and vendor tables use. Packet (TLP/DLLP) overhead comes on top and is not counted.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A PCIe transfer rate in MT/s (`8.0 GT/s PCIe` → 8000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MegaTransfers(pub u32);

impl fmt::Display for MegaTransfers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gt = self.0 as f64 / 1000.0;
        write!(f, "{gt} GT/s")
    }
}

/// Parse a sysfs `current_link_speed`/`max_link_speed` value: `8.0 GT/s PCIe`, `5 GT/s`,
/// `2.5 GT/s`, `16.0 GT/s PCIe`. `Unknown`, `Unknown speed` (a link that is down) and anything else
/// give `None`.
pub fn parse_link_speed(s: &str) -> Option<MegaTransfers> {
    let s = s.trim();
    let num = s.split("GT/s").next()?.trim();
    if num.is_empty() || !s.contains("GT/s") {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    if !(v > 0.0 && v < 1000.0) {
        return None;
    }
    Some(MegaTransfers((v * 1000.0).round() as u32))
}

/// Parse a sysfs link width (`16`, `x16`); 0 and garbage are unknown.
pub fn parse_link_width(s: &str) -> Option<u32> {
    let s = s.trim().trim_start_matches(['x', 'X']);
    s.parse::<u32>().ok().filter(|w| *w > 0 && *w <= 64)
}

/// Line-code efficiency of a transfer rate as (numerator, denominator).
pub fn encoding(rate: MegaTransfers) -> (u64, u64) {
    if rate.0 < 8000 {
        (8, 10)
    } else {
        (128, 130)
    }
}

/// Usable Mbit/s of a link: per-lane rate after line coding (whole Mbit/s) × lanes.
pub fn link_bandwidth_mbps(rate: MegaTransfers, width: u32) -> u64 {
    let (num, den) = encoding(rate);
    (rate.0 as u64 * num / den) * width as u64
}

/// True for a PCI function name such as `0000:01:00.0` (domain:bus:device.function).
pub fn is_pci_address(s: &str) -> bool {
    let Some((head, func)) = s.rsplit_once('.') else {
        return false;
    };
    let parts: Vec<&str> = head.split(':').collect();
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    parts.len() == 3
        && parts[0].len() >= 4
        && parts[0].bytes().all(|b| b.is_ascii_hexdigit())
        && hex(parts[1], 2)
        && hex(parts[2], 2)
        && func.len() == 1
        && func.bytes().all(|b| (b'0'..=b'7').contains(&b))
}

/// Names found in `pci.ids` for a device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciNames {
    pub vendor: Option<String>,
    pub device: Option<String>,
    pub subsystem: Option<String>,
}

fn hex_id(s: &str) -> Option<u16> {
    u16::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// Look up vendor, device and subsystem names in `pci.ids` text. IDs are the sysfs values
/// (`0x15b3`) or bare hex.
pub fn lookup_pci_ids(
    text: &str,
    vendor: &str,
    device: &str,
    sub_vendor: Option<&str>,
    sub_device: Option<&str>,
) -> PciNames {
    let mut out = PciNames::default();
    let (Some(v), Some(d)) = (hex_id(vendor), hex_id(device)) else {
        return out;
    };
    let sv = sub_vendor.and_then(hex_id);
    let sd = sub_device.and_then(hex_id);
    let mut in_vendor = false;
    let mut in_device = false;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with("C ") {
            // Device classes follow the vendor list; nothing more to find.
            break;
        }
        if let Some(rest) = line.strip_prefix("\t\t") {
            if in_device {
                let mut it = rest.splitn(3, |c: char| c.is_whitespace());
                let (a, b) = (it.next().and_then(hex_id), it.next().and_then(hex_id));
                if (a, b) == (sv, sd) && sv.is_some() {
                    out.subsystem = it.next().map(|n| n.trim().to_string());
                }
            }
        } else if let Some(rest) = line.strip_prefix('\t') {
            if in_vendor {
                let (id, name) = rest
                    .split_once(|c: char| c.is_whitespace())
                    .unwrap_or((rest, ""));
                in_device = hex_id(id) == Some(d);
                if in_device {
                    out.device = Some(name.trim().to_string());
                }
            }
        } else {
            if in_vendor {
                break;
            }
            let (id, name) = line
                .split_once(|c: char| c.is_whitespace())
                .unwrap_or((line, ""));
            in_vendor = hex_id(id) == Some(v);
            in_device = false;
            if in_vendor {
                out.vendor = Some(name.trim().to_string());
            }
        }
    }
    out
}

/// Where `pci.ids` lives on common distributions (Debian/Ubuntu, RHEL/Fedora/SUSE, others).
pub const PCI_IDS_PATHS: &[&str] = &[
    "/usr/share/misc/pci.ids",
    "/usr/share/hwdata/pci.ids",
    "/usr/share/pci.ids",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_speeds_parse() {
        assert_eq!(parse_link_speed("8.0 GT/s PCIe"), Some(MegaTransfers(8000)));
        assert_eq!(parse_link_speed("2.5 GT/s"), Some(MegaTransfers(2500)));
        assert_eq!(parse_link_speed("5 GT/s\n"), Some(MegaTransfers(5000)));
        assert_eq!(
            parse_link_speed("32.0 GT/s PCIe"),
            Some(MegaTransfers(32000))
        );
        assert_eq!(parse_link_speed("Unknown"), None);
        assert_eq!(parse_link_speed("Unknown speed"), None);
        assert_eq!(parse_link_speed(""), None);
        assert_eq!(parse_link_width("16"), Some(16));
        assert_eq!(parse_link_width("x8"), Some(8));
        assert_eq!(parse_link_width("0"), None);
        assert_eq!(MegaTransfers(2500).to_string(), "2.5 GT/s");
    }

    #[test]
    fn bandwidth_uses_the_line_code_of_each_generation() {
        let bw = |gt: u32, w| link_bandwidth_mbps(MegaTransfers(gt), w);
        assert_eq!(bw(2500, 1), 2000);
        assert_eq!(bw(5000, 8), 32000); // PCIe 2.0 x8: a 40G card can never fill its port
        assert_eq!(bw(8000, 1), 7876);
        assert_eq!(bw(8000, 4), 31504);
        assert_eq!(bw(8000, 8), 63008);
        assert_eq!(bw(8000, 16), 126016);
        assert_eq!(bw(16000, 16), 15753 * 16);
        assert_eq!(bw(32000, 16), 31507 * 16);
    }

    #[test]
    fn pci_addresses() {
        assert!(is_pci_address("0000:01:00.0"));
        assert!(is_pci_address("10000:e1:1f.7"));
        assert!(!is_pci_address("pci0000:00"));
        assert!(!is_pci_address("virtio2"));
        assert!(!is_pci_address("0000:01:00.8"));
        assert!(!is_pci_address("0000:01:00"));
    }

    #[test]
    fn pci_ids_lookup() {
        let text = "# comment\n\
            1af4  Red Hat, Inc.\n\
            \t1041  Virtio 1.0 network device\n\
            \t\t1af4 1100  QEMU Virtual Machine\n\
            15b3  Mellanox Technologies\n\
            \t1003  MT27500 Family [ConnectX-3]\n\
            \t1017  MT27800 Family [ConnectX-5]\n\
            \t\t15b3 0007  Mellanox ConnectX-5 EN MCX516A-CCAT\n\
            \t\t15b3 0020  ConnectX-5 EN network interface card, 10/25GbE\n\
            15b4  Other\n\
            \t1017  Not this one\n\
            C 02  Network controller\n";
        let n = lookup_pci_ids(text, "0x15b3", "0x1017", Some("0x15b3"), Some("0x0007"));
        assert_eq!(n.vendor.as_deref(), Some("Mellanox Technologies"));
        assert_eq!(n.device.as_deref(), Some("MT27800 Family [ConnectX-5]"));
        assert_eq!(
            n.subsystem.as_deref(),
            Some("Mellanox ConnectX-5 EN MCX516A-CCAT")
        );
        let n = lookup_pci_ids(text, "0x15b3", "0x1003", Some("0x15b3"), Some("0x0007"));
        assert_eq!(n.device.as_deref(), Some("MT27500 Family [ConnectX-3]"));
        assert_eq!(n.subsystem, None);
        let n = lookup_pci_ids(text, "0x8086", "0x1572", None, None);
        assert_eq!(n, PciNames::default());
        assert_eq!(
            lookup_pci_ids(text, "zz", "0x1", None, None),
            PciNames::default()
        );
    }
}

/// Payload and read-request sizes of a PCIe function, from the PCI Express capability of its
/// configuration space (Device Capabilities and Device Control registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcieDevCtl {
    /// Max_Payload_Size in force (Device Control bits 7:5), bytes.
    pub mps: u32,
    /// Max_Payload_Size the function supports (Device Capabilities bits 2:0), bytes.
    pub mps_supported: u32,
    /// Max_Read_Request_Size in force (Device Control bits 14:12), bytes.
    pub mrrs: u32,
    /// Byte offset of the PCI Express capability (what `setpci CAP_EXP` addresses).
    pub cap_offset: u16,
}

/// Find the PCI Express capability (id 0x10) in a configuration-space image (`DEV/config`) and
/// read its payload and read-request sizes. `None` when the image is too short (an unprivileged
/// read returns only the 64-byte header), has no capability list, or loops.
pub fn parse_pcie_devctl(config: &[u8]) -> Option<PcieDevCtl> {
    const STATUS_CAP_LIST: u8 = 0x10;
    if config.len() < 64 || config[0x06] & STATUS_CAP_LIST == 0 {
        return None;
    }
    let mut at = (config[0x34] & 0xfc) as usize;
    for _ in 0..48 {
        if at < 0x40 || at + 12 > config.len() {
            return None;
        }
        if config[at] == 0x10 {
            let u16_at = |o: usize| u16::from_le_bytes([config[o], config[o + 1]]);
            let devcap = u32::from_le_bytes([
                config[at + 4],
                config[at + 5],
                config[at + 6],
                config[at + 7],
            ]);
            let devctl = u16_at(at + 8);
            let size = |code: u32| 128u32 << code.min(5);
            return Some(PcieDevCtl {
                mps: size(((devctl >> 5) & 7) as u32),
                mps_supported: size(devcap & 7),
                mrrs: size(((devctl >> 12) & 7) as u32),
                cap_offset: at as u16,
            });
        }
        at = (config[at + 1] & 0xfc) as usize;
        if at == 0 {
            return None;
        }
    }
    None
}

/// A configuration-space image with a PCI Express capability at 0x70 holding these sizes (for
/// tests and modelled host trees).
pub fn config_image(mps: u32, mps_supported: u32, mrrs: u32) -> Vec<u8> {
    let code = |b: u32| (b / 128).trailing_zeros();
    let mut c = vec![0u8; 256];
    c[0x06] = 0x10; // capability list present
    c[0x34] = 0x70;
    c[0x70] = 0x10; // PCI Express
    c[0x71] = 0x00; // last capability
    c[0x74..0x78].copy_from_slice(&code(mps_supported).to_le_bytes());
    let ctl = ((code(mps) << 5) | (code(mrrs) << 12)) as u16;
    c[0x78..0x7a].copy_from_slice(&ctl.to_le_bytes());
    c
}

#[cfg(test)]
mod devctl_tests {
    use super::*;

    #[test]
    fn payload_and_read_request_from_config_space() {
        let d = parse_pcie_devctl(&config_image(256, 512, 512)).unwrap();
        assert_eq!(
            (d.mps, d.mps_supported, d.mrrs, d.cap_offset),
            (256, 512, 512, 0x70)
        );
        let d = parse_pcie_devctl(&config_image(128, 256, 4096)).unwrap();
        assert_eq!((d.mps, d.mrrs), (128, 4096));
        // the 64-byte header an unprivileged read gets, no capability list, a looping list
        assert_eq!(parse_pcie_devctl(&config_image(256, 256, 512)[..64]), None);
        let mut c = config_image(256, 256, 512);
        c[0x06] = 0;
        assert_eq!(parse_pcie_devctl(&c), None);
        let mut c = config_image(256, 256, 512);
        c[0x70] = 0x05; // MSI, pointing at itself
        c[0x71] = 0x70;
        assert_eq!(parse_pcie_devctl(&c), None);
        assert_eq!(parse_pcie_devctl(&[]), None);
    }
}
