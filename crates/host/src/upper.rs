//! Upper devices: from the interface a test uses down to the NICs that carry its packets.
//!
//! Fast hosts rarely send on the PCI function itself: they send on a VLAN, on a bond of two
//! ports, on a bridge for their containers, on a macvlan. [`resolve`] follows such a device
//! down, through every layer, to the devices beneath it, and says what each layer is and how it
//! is set: a bond's mode, transmit hash policy, LACP rate and MII polling, and each member's
//! state and speed; a VLAN's id; a bridge's netfilter hooks.
//!
//! Sources (host paths; `IF` an interface), as the kernel documents them
//! (`Documentation/networking/bonding.rst`, `Documentation/ABI/testing/sysfs-class-net`,
//! `Documentation/networking/bridge.rst`, `net/8021q/vlanproc.c`):
//! - `/sys/class/net/IF/lower_*`: one link per device directly beneath `IF` (every stacking
//!   driver: bonding, team, 8021q, macvlan, ipvlan, bridge); `IF/uevent` (`DEVTYPE=bond`,
//!   `vlan`, `bridge`)
//! - bonds: `IF/bonding/{mode,xmit_hash_policy,lacp_rate,miimon,slaves}` (each option printed
//!   as its name and number, `layer2 0`), each member's `MEMBER/bonding_slave/{state,mii_status,
//!   link_failure_count,ad_aggregator_id}`, and `/proc/net/bonding/IF` (the same as text, with
//!   each member's speed), read when sysfs lacks a value
//! - VLANs: `/proc/net/vlan/config` (`name | id | lower device`)
//! - bridges: `IF/brif/*` (the ports), `IF/bridge/nf_call_iptables`, and
//!   `/proc/sys/net/bridge/bridge-nf-call-{iptables,ip6tables}` (present while `br_netfilter`
//!   is loaded)
//! - team, macvlan, macvtap, ipvlan, ipvtap: the driver's name from ethtool's `drvinfo`
//!   ([`crate::ethtool`]); their lower devices from `lower_*`
//!
//! A tree someone else made may hold traps: link loops (`a/lower_b`, `b/lower_a`), stacks
//! deeper than the kernel allows, hundreds of fake lower links, FIFOs or huge files in place of
//! one-line attributes, names with `/` or `..`. The walk stops at [`MAX_DEPTH`] layers and
//! [`MAX_NODES`] devices and says so in [`UpperStack::notes`]; a device already on the path is
//! not entered again; an attribute that is not a regular file is not opened; attributes are
//! read to [`MAX_ATTR`] bytes; a name that is not an interface name is skipped. Parsers take
//! `&str` and never touch the file system.

use crate::nic::{parse_speed, pci_function_of};
use crate::Root;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most layers followed below the top device (the kernel's own limit, `MAX_NEST_DEV`, is 8).
pub const MAX_DEPTH: usize = 8;
/// Most devices one walk visits (a bridge with a few hundred VM ports stays within it).
pub const MAX_NODES: usize = 512;
/// Most bytes read of one attribute file.
pub const MAX_ATTR: usize = 64 * 1024;

/// What a device is, as far as stacking goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DevKind {
    Bond,
    Team,
    Vlan,
    Macvlan,
    Macvtap,
    Ipvlan,
    Ipvtap,
    Bridge,
    /// A device with lower devices whose driver did not say what it is.
    Stacked,
    /// Backed by a PCI function (directly or through virtio): a NIC.
    Pci,
    /// Neither: veth, dummy, a tunnel, loopback.
    Virtual,
}

impl DevKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DevKind::Bond => "bond",
            DevKind::Team => "team",
            DevKind::Vlan => "vlan",
            DevKind::Macvlan => "macvlan",
            DevKind::Macvtap => "macvtap",
            DevKind::Ipvlan => "ipvlan",
            DevKind::Ipvtap => "ipvtap",
            DevKind::Bridge => "bridge",
            DevKind::Stacked => "stacked",
            DevKind::Pci => "pci",
            DevKind::Virtual => "virtual",
        }
    }

    /// Devices that spread traffic over several members (a flow goes to one of them).
    pub fn aggregates(self) -> bool {
        matches!(self, DevKind::Bond | DevKind::Team)
    }
}

/// A value and the host file it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sourced<T> {
    pub value: T,
    pub source: String,
}

impl<T> Sourced<T> {
    fn new(value: T, source: impl Into<String>) -> Sourced<T> {
        Sourced {
            value,
            source: source.into(),
        }
    }
}

/// A bond's settings (each from `bonding/*`, else `/proc/net/bonding/IF`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BondFacts {
    /// `balance-rr`, `active-backup`, `balance-xor`, `broadcast`, `802.3ad`, `balance-tlb`,
    /// `balance-alb`.
    pub mode: Option<Sourced<String>>,
    /// `layer2`, `layer2+3`, `layer3+4`, `encap2+3`, `encap3+4`, `vlan+srcmac`.
    pub xmit_hash_policy: Option<Sourced<String>>,
    /// `slow` (a LACPDU every 30 s) or `fast` (every second); 802.3ad only.
    pub lacp_rate: Option<Sourced<String>>,
    /// MII link polling interval, ms; 0 = link failures are not detected by MII.
    pub miimon: Option<Sourced<u32>>,
    /// ARP monitoring interval, ms (the other way to detect failures).
    pub arp_interval: Option<Sourced<u32>>,
}

impl BondFacts {
    /// The mode hashes flows onto members by `xmit_hash_policy` (balance-xor, 802.3ad).
    pub fn hashes(&self) -> bool {
        matches!(
            self.mode.as_ref().map(|m| m.value.as_str()),
            Some("balance-xor" | "802.3ad")
        )
    }
}

/// A bond member's state as the bond sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberState {
    /// `bonding_slave/state`: `active` or `backup`.
    pub state: Option<String>,
    /// `up`, `down`, `going back`, `going down`.
    pub mii_status: Option<String>,
    pub link_failure_count: Option<u64>,
    pub aggregator_id: Option<u32>,
    /// Host file(s) the state came from.
    pub source: String,
}

/// A bridge's netfilter hooks: bridged IPv4/IPv6 frames pass iptables/ip6tables when the host
/// switch (`/proc/sys/net/bridge/*`, present while `br_netfilter` is loaded) or the bridge's own
/// option is 1.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeFacts {
    /// `br_netfilter` is loaded (`/proc/sys/net/bridge` exists).
    pub br_netfilter: bool,
    pub call_iptables: Option<Sourced<bool>>,
    pub call_ip6tables: Option<Sourced<bool>>,
    /// The bridge's own `bridge/nf_call_iptables`.
    pub own_call_iptables: Option<Sourced<bool>>,
    pub own_call_ip6tables: Option<Sourced<bool>>,
}

impl BridgeFacts {
    /// Bridged frames pass iptables or ip6tables; with the files that say so.
    pub fn netfilter(&self) -> Vec<&Sourced<bool>> {
        if !self.br_netfilter {
            return Vec::new();
        }
        [
            &self.call_iptables,
            &self.call_ip6tables,
            &self.own_call_iptables,
            &self.own_call_ip6tables,
        ]
        .into_iter()
        .flatten()
        .filter(|s| s.value)
        .collect()
    }
}

/// One device of a stack, with the devices directly beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackNode {
    pub name: String,
    pub kind: DevKind,
    /// `/sys/class/net/IF`.
    pub sysfs: String,
    pub speed_mbps: Option<u64>,
    pub mtu: Option<u32>,
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bond: Option<BondFacts>,
    /// The state of this device as a member of the bond directly above it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<MemberState>,
    /// A VLAN's id (`/proc/net/vlan/config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan_id: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<BridgeFacts>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lowers: Vec<StackNode>,
}

impl StackNode {
    /// The link is up (`operstate` up, or carrier where operstate is unknown); a bond member
    /// whose MII status is down is down whatever its operstate.
    pub fn is_up(&self) -> bool {
        if let Some(m) = self.member.as_ref().and_then(|m| m.mii_status.as_deref()) {
            if m != "up" {
                return false;
            }
        }
        match self.operstate.as_deref() {
            Some("up") => true,
            Some("unknown") | None => self.carrier == Some(true),
            _ => false,
        }
    }

    /// Every device below this one, depth first (this one excluded).
    pub fn descendants(&self) -> Vec<&StackNode> {
        let mut out = Vec::new();
        for l in &self.lowers {
            out.push(l);
            out.extend(l.descendants());
        }
        out
    }
}

/// An interface and everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpperStack {
    pub top: StackNode,
    /// What the walk could not follow, and why (a loop, a depth or size limit, an unreadable
    /// name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl UpperStack {
    pub fn name(&self) -> &str {
        &self.top.name
    }

    /// True when the top device has devices beneath it, or is a bond or bridge (an empty bond
    /// is still one).
    pub fn is_upper(&self) -> bool {
        !self.top.lowers.is_empty()
            || matches!(
                self.top.kind,
                DevKind::Bond | DevKind::Bridge | DevKind::Team
            )
    }

    /// The devices at the bottom (no lower devices of their own), each once, in walk order:
    /// the NICs, veths and other leaves that carry the stack's packets.
    pub fn leaves(&self) -> Vec<&StackNode> {
        let mut out: Vec<&StackNode> = Vec::new();
        for n in self.top.descendants() {
            if n.lowers.is_empty() && !out.iter().any(|o| o.name == n.name) {
                out.push(n);
            }
        }
        out
    }

    /// Every device of the stack (the top first), each once.
    pub fn nodes(&self) -> Vec<&StackNode> {
        let mut out: Vec<&StackNode> = vec![&self.top];
        for n in self.top.descendants() {
            if !out.iter().any(|o| o.name == n.name) {
                out.push(n);
            }
        }
        out
    }

    /// The device named `name` in the stack.
    pub fn find(&self, name: &str) -> Option<&StackNode> {
        self.nodes().into_iter().find(|n| n.name == name)
    }

    /// The bonds (and teams) of the stack.
    pub fn aggregates(&self) -> Vec<&StackNode> {
        self.nodes()
            .into_iter()
            .filter(|n| n.kind.aggregates())
            .collect()
    }

    /// The leaf a member of an aggregate ends in (a bond of VLANs is rare but legal): the
    /// member's own leaves.
    pub fn leaves_of<'a>(&'a self, node: &'a StackNode) -> Vec<&'a StackNode> {
        if node.lowers.is_empty() {
            return vec![node];
        }
        let mut out: Vec<&StackNode> = Vec::new();
        for n in node.descendants() {
            if n.lowers.is_empty() && !out.iter().any(|o| o.name == n.name) {
                out.push(n);
            }
        }
        out
    }
}

/// The interface could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpperError {
    #[error("{0:?} is not an interface name")]
    BadName(String),
    #[error("no interface named {0:?} on this host")]
    NoSuchInterface(String),
}

/// An interface name the kernel could have made: 1 to 15 bytes, no `/`, no white space, no `:`
/// (aliases are not devices), not `.` or `..`.
pub fn is_iface_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() < 16
        && s != "."
        && s != ".."
        && !s
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b < 0x20)
}

/// A bonding option as sysfs prints it (`802.3ad 4`, `layer2 0`, `slow 0`): its name.
pub fn parse_bond_option(text: &str) -> Option<String> {
    text.split_whitespace().next().map(str::to_string)
}

/// The names of the `lower_*` entries of a directory listing.
pub fn lower_names(entries: &[String]) -> Vec<String> {
    entries
        .iter()
        .filter_map(|e| e.strip_prefix("lower_"))
        .map(str::to_string)
        .collect()
}

/// `DEVTYPE=` of a device's `uevent`.
pub fn parse_devtype(uevent: &str) -> Option<&str> {
    uevent
        .lines()
        .find_map(|l| l.trim().strip_prefix("DEVTYPE="))
        .map(str::trim)
}

/// One row of `/proc/net/vlan/config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanRow {
    pub name: String,
    pub id: u16,
    pub lower: String,
}

/// Parse `/proc/net/vlan/config` (`net/8021q/vlanproc.c`: a header line, a `Name-Type:` line,
/// then `%-15s| %d | %s` per VLAN). Lines that do not parse are skipped.
pub fn parse_vlan_config(text: &str) -> Vec<VlanRow> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(str::trim);
            let (name, id, lower) = (f.next()?, f.next()?, f.next()?);
            let id: u16 = id.parse().ok().filter(|v| *v < 4095)?;
            (is_iface_name(name) && is_iface_name(lower)).then(|| VlanRow {
                name: name.to_string(),
                id,
                lower: lower.to_string(),
            })
        })
        .collect()
}

/// One member's section of `/proc/net/bonding/IF`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcSlave {
    pub name: String,
    pub mii_status: Option<String>,
    pub speed_mbps: Option<u64>,
    pub duplex: Option<String>,
    pub link_failure_count: Option<u64>,
    pub aggregator_id: Option<u32>,
}

/// `/proc/net/bonding/IF` (`drivers/net/bonding/bond_procfs.c`), the fields doctor uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcBond {
    /// The mode's name as the sysfs option spells it (`802.3ad`), from the long text the file
    /// prints (`IEEE 802.3ad Dynamic link aggregation`).
    pub mode: Option<String>,
    pub xmit_hash_policy: Option<String>,
    pub miimon: Option<u32>,
    pub lacp_rate: Option<String>,
    pub mii_status: Option<String>,
    pub slaves: Vec<ProcSlave>,
}

/// The sysfs name of a mode from the text `/proc/net/bonding` prints for it
/// (`bond_mode_name()` in `bond_main.c`).
pub fn mode_from_proc(text: &str) -> Option<&'static str> {
    Some(match text.trim() {
        "load balancing (round-robin)" => "balance-rr",
        "fault-tolerance (active-backup)" => "active-backup",
        "load balancing (xor)" => "balance-xor",
        "fault-tolerance (broadcast)" => "broadcast",
        "IEEE 802.3ad Dynamic link aggregation" => "802.3ad",
        "transmit load balancing" => "balance-tlb",
        "adaptive load balancing" => "balance-alb",
        _ => return None,
    })
}

/// Parse `/proc/net/bonding/IF`. Unknown lines are ignored; a section starts at each
/// `Slave Interface:` line.
pub fn parse_proc_bonding(text: &str) -> ProcBond {
    let mut b = ProcBond::default();
    let mut cur: Option<ProcSlave> = None;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k == "Slave Interface" {
            if let Some(s) = cur.take() {
                b.slaves.push(s);
            }
            if is_iface_name(v) {
                cur = Some(ProcSlave {
                    name: v.to_string(),
                    ..Default::default()
                });
            }
            continue;
        }
        match cur.as_mut() {
            Some(s) => match k {
                "MII Status" => s.mii_status = Some(v.to_string()),
                "Speed" => {
                    s.speed_mbps = v.strip_suffix("Mbps").and_then(|n| parse_speed(n.trim()))
                }
                "Duplex" => s.duplex = Some(v.to_string()),
                "Link Failure Count" => s.link_failure_count = v.parse().ok(),
                "Aggregator ID" => s.aggregator_id = v.parse().ok(),
                _ => {}
            },
            None => match k {
                "Bonding Mode" => b.mode = mode_from_proc(v).map(str::to_string),
                // `layer2 (0)`
                "Transmit Hash Policy" => b.xmit_hash_policy = parse_bond_option(v),
                "MII Polling Interval (ms)" => b.miimon = v.parse().ok(),
                "LACP rate" => b.lacp_rate = parse_bond_option(v),
                "MII Status" => b.mii_status = Some(v.to_string()),
                _ => {}
            },
        }
    }
    if let Some(s) = cur {
        b.slaves.push(s);
    }
    b
}

/// An attribute file's text, trimmed: `None` when it is missing, not a regular file (a FIFO
/// would block the reader), longer than [`MAX_ATTR`] or not text.
fn attr(root: &Root, path: &str) -> Option<String> {
    let meta = root.stat(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let bytes = root.read_bytes(path, MAX_ATTR + 1).ok()?;
    if bytes.len() > MAX_ATTR {
        return None;
    }
    String::from_utf8(bytes).ok().map(|s| s.trim().to_string())
}

fn attr_parse<T: std::str::FromStr>(root: &Root, path: &str) -> Option<T> {
    attr(root, path)?.parse().ok()
}

/// What one walk reads once.
struct Walk<'a> {
    root: &'a Root,
    vlans: Vec<VlanRow>,
    nodes: usize,
    notes: Vec<String>,
}

/// Resolve `iface` and everything beneath it through `root`.
pub fn resolve(root: &Root, iface: &str) -> Result<UpperStack, UpperError> {
    if !is_iface_name(iface) {
        return Err(UpperError::BadName(iface.to_string()));
    }
    if !root.exists(&format!("/sys/class/net/{iface}")) {
        return Err(UpperError::NoSuchInterface(iface.to_string()));
    }
    let mut w = Walk {
        root,
        vlans: attr(root, "/proc/net/vlan/config")
            .map(|t| parse_vlan_config(&t))
            .unwrap_or_default(),
        nodes: 0,
        notes: Vec::new(),
    };
    let mut path = Vec::new();
    let top = w.node(iface, &mut path, None);
    Ok(UpperStack {
        top,
        notes: w.notes,
    })
}

/// Every interface of the host that has devices beneath it (or is a bond, team or bridge),
/// resolved; by name.
pub fn collect_uppers(root: &Root) -> Vec<UpperStack> {
    let mut out = Vec::new();
    for name in root.list_opt("/sys/class/net") {
        if !is_iface_name(&name) || name == "lo" {
            continue;
        }
        let net = format!("/sys/class/net/{name}");
        // a PCI NIC has nothing beneath it: its directory is not listed (a snapshot records
        // what is listed)
        if pci_function_of(root, &name).is_some() {
            continue;
        }
        let has_lowers = !lower_names(&root.list_opt(&net)).is_empty();
        let container =
            root.exists(&format!("{net}/bonding")) || root.exists(&format!("{net}/bridge"));
        if !has_lowers && !container {
            continue;
        }
        if let Ok(s) = resolve(root, &name) {
            if s.is_upper() {
                out.push(s);
            }
        }
    }
    out
}

impl Walk<'_> {
    fn node(&mut self, name: &str, path: &mut Vec<String>, above: Option<&ProcBond>) -> StackNode {
        self.nodes += 1;
        let root = self.root;
        let net = format!("/sys/class/net/{name}");
        let pci = pci_function_of(root, name).is_some();
        // a PCI NIC is a leaf: its directory is not listed
        let entries = if pci { Vec::new() } else { root.list_opt(&net) };
        let mut lowers: Vec<String> = lower_names(&entries);
        let vlan = self.vlans.iter().find(|v| v.name == name).cloned();
        if lowers.is_empty() {
            if let Some(v) = &vlan {
                lowers.push(v.lower.clone());
            }
        }
        let bonding = entries.iter().any(|e| e == "bonding");
        let bridge = entries.iter().any(|e| e == "bridge");
        let devtype = attr(root, &format!("{net}/uevent"));
        let devtype = devtype.as_deref().and_then(parse_devtype);
        let kind = if bonding || devtype == Some("bond") {
            DevKind::Bond
        } else if bridge || devtype == Some("bridge") {
            DevKind::Bridge
        } else if devtype == Some("vlan") || vlan.is_some() {
            DevKind::Vlan
        } else if pci && lowers.is_empty() {
            DevKind::Pci
        } else {
            let driver = crate::ethtool::collect_ethtool(root, name)
                .and_then(|e| e.drvinfo)
                .map(|d| d.driver);
            match driver.as_deref() {
                Some("team") => DevKind::Team,
                Some("macvlan") => DevKind::Macvlan,
                Some("macvtap") => DevKind::Macvtap,
                Some("ipvlan") => DevKind::Ipvlan,
                Some("ipvtap") => DevKind::Ipvtap,
                _ if !lowers.is_empty() => DevKind::Stacked,
                _ => DevKind::Virtual,
            }
        };
        // the link values as LinkState reads them, each through `attr` (a trap file is unknown)
        let link = crate::nic::LinkState {
            speed_mbps: attr(root, &format!("{net}/speed")).and_then(|s| parse_speed(&s)),
            mtu: attr_parse(root, &format!("{net}/mtu")),
            tx_queue_len: None,
            operstate: attr(root, &format!("{net}/operstate")),
            carrier: attr(root, &format!("{net}/carrier")).map(|c| c == "1"),
            duplex: None,
        };
        let proc_bond = (kind == DevKind::Bond)
            .then(|| attr(root, &format!("/proc/net/bonding/{name}")))
            .flatten()
            .map(|t| parse_proc_bonding(&t));
        let bond = (kind == DevKind::Bond).then(|| self.bond(name, proc_bond.as_ref()));
        if kind == DevKind::Bond && lowers.is_empty() {
            // old kernels without lower_* links: the bond's own list of members
            let listed = attr(root, &format!("{net}/bonding/slaves"))
                .map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
                .or_else(|| {
                    proc_bond
                        .as_ref()
                        .map(|p| p.slaves.iter().map(|s| s.name.clone()).collect())
                })
                .unwrap_or_default();
            lowers = listed;
        }
        if kind == DevKind::Bridge && lowers.is_empty() {
            lowers = root.list_opt(&format!("{net}/brif"));
        }
        let member = above.map(|b| self.member_state(name, b));
        let mut node = StackNode {
            name: name.to_string(),
            kind,
            sysfs: net.clone(),
            // a bond member's speed from the bond's file when the device does not say
            speed_mbps: link.speed_mbps.or_else(|| {
                above
                    .and_then(|b| b.slaves.iter().find(|s| s.name == name))
                    .and_then(|s| s.speed_mbps)
            }),
            mtu: link.mtu,
            operstate: link.operstate,
            carrier: link.carrier,
            bond,
            member,
            vlan_id: vlan.map(|v| v.id),
            bridge: (kind == DevKind::Bridge).then(|| self.bridge(name)),
            lowers: Vec::new(),
        };
        lowers.sort();
        lowers.dedup();
        if lowers.is_empty() {
            return node;
        }
        if path.len() >= MAX_DEPTH {
            self.notes.push(format!(
                "{name}: more than {MAX_DEPTH} layers of devices; the devices beneath it were not followed"
            ));
            return node;
        }
        path.push(name.to_string());
        let empty = ProcBond::default();
        let for_members = match kind {
            DevKind::Bond => Some(proc_bond.as_ref().unwrap_or(&empty)),
            _ => None,
        };
        for lower in lowers {
            if !is_iface_name(&lower) {
                self.notes.push(format!(
                    "{name}: a lower device named {:?} is not an interface name; skipped",
                    crate::text::terminal_short(&lower, 40)
                ));
                continue;
            }
            if path.contains(&lower) || lower == name {
                self.notes.push(format!(
                    "{name}: {lower} is already above it (a loop of lower links); not followed again"
                ));
                continue;
            }
            if self.nodes >= MAX_NODES {
                self.notes.push(format!(
                    "{name}: more than {MAX_NODES} devices in the stack; the rest were not followed"
                ));
                break;
            }
            if !root.exists(&format!("/sys/class/net/{lower}")) {
                self.notes.push(format!(
                    "{name}: its lower device {lower} has no /sys/class/net entry; skipped"
                ));
                continue;
            }
            node.lowers.push(self.node(&lower, path, for_members));
        }
        path.pop();
        node
    }

    fn bond(&self, name: &str, proc_bond: Option<&ProcBond>) -> BondFacts {
        let root = self.root;
        let dir = format!("/sys/class/net/{name}/bonding");
        let procf = format!("/proc/net/bonding/{name}");
        let opt = |file: &str, from_proc: Option<String>| -> Option<Sourced<String>> {
            let p = format!("{dir}/{file}");
            match attr(root, &p).as_deref().and_then(parse_bond_option) {
                Some(v) => Some(Sourced::new(v, p)),
                None => from_proc.map(|v| Sourced::new(v, procf.clone())),
            }
        };
        let num = |file: &str, from_proc: Option<u32>| -> Option<Sourced<u32>> {
            let p = format!("{dir}/{file}");
            match attr_parse::<u32>(root, &p) {
                Some(v) => Some(Sourced::new(v, p)),
                None => from_proc.map(|v| Sourced::new(v, procf.clone())),
            }
        };
        BondFacts {
            mode: opt("mode", proc_bond.and_then(|p| p.mode.clone())),
            xmit_hash_policy: opt(
                "xmit_hash_policy",
                proc_bond.and_then(|p| p.xmit_hash_policy.clone()),
            ),
            lacp_rate: opt("lacp_rate", proc_bond.and_then(|p| p.lacp_rate.clone())),
            miimon: num("miimon", proc_bond.and_then(|p| p.miimon)),
            arp_interval: num("arp_interval", None),
        }
    }

    fn member_state(&self, name: &str, bond: &ProcBond) -> MemberState {
        let root = self.root;
        let dir = format!("/sys/class/net/{name}/bonding_slave");
        let from_proc = bond.slaves.iter().find(|s| s.name == name);
        let sys_state = attr(root, &format!("{dir}/state"));
        let sys_mii = attr(root, &format!("{dir}/mii_status"));
        let sys_fail = attr_parse(root, &format!("{dir}/link_failure_count"));
        let sys_agg = attr_parse(root, &format!("{dir}/ad_aggregator_id"));
        let from_sys = sys_mii.is_some() || sys_state.is_some();
        MemberState {
            source: if from_sys {
                dir.clone()
            } else if from_proc.is_some() {
                "/proc/net/bonding".to_string()
            } else {
                dir.clone()
            },
            state: sys_state,
            mii_status: sys_mii.or_else(|| from_proc.and_then(|s| s.mii_status.clone())),
            link_failure_count: sys_fail.or_else(|| from_proc.and_then(|s| s.link_failure_count)),
            aggregator_id: sys_agg.or_else(|| from_proc.and_then(|s| s.aggregator_id)),
        }
    }

    fn bridge(&self, name: &str) -> BridgeFacts {
        let root = self.root;
        let flag = |p: String| -> Option<Sourced<bool>> {
            let v: u32 = attr_parse(root, &p)?;
            Some(Sourced::new(v != 0, p))
        };
        BridgeFacts {
            br_netfilter: root.exists("/proc/sys/net/bridge"),
            call_iptables: flag("/proc/sys/net/bridge/bridge-nf-call-iptables".into()),
            call_ip6tables: flag("/proc/sys/net/bridge/bridge-nf-call-ip6tables".into()),
            own_call_iptables: flag(format!("/sys/class/net/{name}/bridge/nf_call_iptables")),
            own_call_ip6tables: flag(format!("/sys/class/net/{name}/bridge/nf_call_ip6tables")),
        }
    }
}

/// Count devices of each kind in a stack (for a one-line description: `bond of 2 pci`).
pub fn describe(stack: &UpperStack) -> String {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for l in stack.leaves() {
        *kinds.entry(l.kind.as_str()).or_default() += 1;
    }
    let leaves: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let mut chain = vec![stack.top.kind.as_str().to_string()];
    let mut n = &stack.top;
    while n.lowers.len() == 1 && !n.lowers[0].lowers.is_empty() {
        n = &n.lowers[0];
        chain.push(n.kind.as_str().to_string());
    }
    format!("{} on {}", chain.join(" on "), leaves.join(" + "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC_BOND: &str = "Ethernet Channel Bonding Driver: v6.8.0-45-generic

Bonding Mode: IEEE 802.3ad Dynamic link aggregation
Transmit Hash Policy: layer2 (0)
MII Status: up
MII Polling Interval (ms): 100
Up Delay (ms): 0
Down Delay (ms): 0
Peer Notification Delay (ms): 0

802.3ad info
LACP active: on
LACP rate: slow
Min links: 0
Aggregator selection policy (ad_select): stable
System priority: 65535
System MAC address: 0c:42:a1:5e:10:20
Active Aggregator Info:
\tAggregator ID: 1
\tNumber of ports: 2
\tActor Key: 21
\tPartner Key: 32
\tPartner Mac Address: 00:1c:73:aa:bb:cc

Slave Interface: ens1f0np0
MII Status: up
Speed: 100000 Mbps
Duplex: full
Link Failure Count: 0
Permanent HW addr: 0c:42:a1:5e:10:20
Slave queue ID: 0
Aggregator ID: 1
Actor Churn State: none

Slave Interface: ens1f1np1
MII Status: down
Speed: Unknown
Duplex: Unknown
Link Failure Count: 3
Permanent HW addr: 0c:42:a1:5e:10:21
Slave queue ID: 0
Aggregator ID: 2
";

    #[test]
    fn proc_bonding_text() {
        let b = parse_proc_bonding(PROC_BOND);
        assert_eq!(b.mode.as_deref(), Some("802.3ad"));
        assert_eq!(b.xmit_hash_policy.as_deref(), Some("layer2"));
        assert_eq!(b.miimon, Some(100));
        assert_eq!(b.lacp_rate.as_deref(), Some("slow"));
        assert_eq!(b.mii_status.as_deref(), Some("up"));
        assert_eq!(b.slaves.len(), 2);
        let s = &b.slaves[0];
        assert_eq!(s.name, "ens1f0np0");
        assert_eq!(s.speed_mbps, Some(100_000));
        assert_eq!(s.aggregator_id, Some(1));
        let s = &b.slaves[1];
        assert_eq!(s.mii_status.as_deref(), Some("down"));
        assert_eq!(s.speed_mbps, None, "Unknown is unknown, not zero");
        assert_eq!(s.link_failure_count, Some(3));
        // an active-backup bond prints no hash policy and no 802.3ad section
        let ab = parse_proc_bonding(
            "Bonding Mode: fault-tolerance (active-backup)\nPrimary Slave: None\nCurrently Active Slave: eth0\nMII Status: up\nMII Polling Interval (ms): 0\n\nSlave Interface: eth0\nMII Status: up\n",
        );
        assert_eq!(ab.mode.as_deref(), Some("active-backup"));
        assert_eq!(ab.xmit_hash_policy, None);
        assert_eq!(ab.miimon, Some(0));
        assert_eq!(ab.slaves[0].name, "eth0");
        // garbage is no bond, not a panic
        assert_eq!(
            parse_proc_bonding("\u{0}\u{1}:::\nSlave Interface: ../x\nSpeed: 9 Mbps"),
            ProcBond::default()
        );
    }

    #[test]
    fn vlan_config_text() {
        let t = "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\nbond0.100      | 100  | bond0\nens5f0np0.200  | 200  | ens5f0np0\nbad | x | y\nevil.1 | 1 | ../../etc\n";
        let v = parse_vlan_config(t);
        assert_eq!(
            v,
            [
                VlanRow {
                    name: "bond0.100".into(),
                    id: 100,
                    lower: "bond0".into()
                },
                VlanRow {
                    name: "ens5f0np0.200".into(),
                    id: 200,
                    lower: "ens5f0np0".into()
                }
            ]
        );
    }

    #[test]
    fn small_parsers() {
        assert_eq!(
            parse_bond_option("layer2+3 2\n").as_deref(),
            Some("layer2+3")
        );
        assert_eq!(parse_bond_option(""), None);
        assert_eq!(parse_devtype("DEVTYPE=vlan\nINTERFACE=x\n"), Some("vlan"));
        assert_eq!(parse_devtype("INTERFACE=mv0\nIFINDEX=5\n"), None);
        assert_eq!(
            lower_names(&["lower_eth0".into(), "mtu".into(), "upper_br0".into()]),
            ["eth0"]
        );
        assert!(is_iface_name("bond0.100"));
        for bad in ["", ".", "..", "a/b", "sixteen-chars-xx", "eth0:1", "a b"] {
            assert!(!is_iface_name(bad), "{bad}");
        }
        assert_eq!(
            mode_from_proc("adaptive load balancing"),
            Some("balance-alb")
        );
    }

    fn mk(d: &std::path::Path, name: &str) {
        std::fs::create_dir_all(d.join(format!("sys/devices/virtual/net/{name}"))).unwrap();
        std::fs::create_dir_all(d.join("sys/class/net")).unwrap();
        let l = d.join(format!("sys/class/net/{name}"));
        if !l.exists() {
            std::os::unix::fs::symlink(format!("../../devices/virtual/net/{name}"), l).unwrap();
        }
    }

    fn lower(d: &std::path::Path, upper: &str, lower: &str) {
        std::os::unix::fs::symlink(
            format!("../{lower}"),
            d.join(format!("sys/devices/virtual/net/{upper}/lower_{lower}")),
        )
        .unwrap();
    }

    #[test]
    fn loops_depth_and_traps_are_bounded() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        // a <-> b loop
        mk(d, "a");
        mk(d, "b");
        lower(d, "a", "b");
        lower(d, "b", "a");
        let s = resolve(&Root::new(d), "a").unwrap();
        assert_eq!(s.top.lowers.len(), 1);
        assert!(s.top.lowers[0].lowers.is_empty());
        assert!(s.notes.iter().any(|n| n.contains("loop")), "{:?}", s.notes);
        // a chain of 20: cut at MAX_DEPTH
        for i in 0..20 {
            mk(d, &format!("c{i}"));
        }
        for i in 0..19 {
            lower(d, &format!("c{i}"), &format!("c{}", i + 1));
        }
        let s = resolve(&Root::new(d), "c0").unwrap();
        let mut depth = 0;
        let mut n = &s.top;
        while let Some(l) = n.lowers.first() {
            n = l;
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH);
        assert!(
            s.notes.iter().any(|n| n.contains("layers")),
            "{:?}",
            s.notes
        );
        // a FIFO in place of an attribute is not opened (it would block), a huge file not read
        mk(d, "f");
        let dir = d.join("sys/devices/virtual/net/f");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("mtu"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        std::fs::write(dir.join("uevent"), "x".repeat(MAX_ATTR + 10)).unwrap();
        std::fs::create_dir_all(dir.join("bonding")).unwrap();
        std::fs::write(dir.join("bonding/mode"), "802.3ad 4\n").unwrap();
        // a lower link with a name that is no interface name, and one that leads out of the tree
        std::os::unix::fs::symlink("/etc", dir.join("lower_etc")).unwrap();
        let s = resolve(&Root::new(d), "f").unwrap();
        assert_eq!(s.top.kind, DevKind::Bond);
        assert_eq!(s.top.mtu, None);
        assert!(s.top.lowers.is_empty());
        assert!(s.notes.iter().any(|n| n.contains("etc")), "{:?}", s.notes);
        // bad names are refused before any path is built
        assert_eq!(
            resolve(&Root::new(d), "../x"),
            Err(UpperError::BadName("../x".into()))
        );
        assert_eq!(
            resolve(&Root::new(d), "nope"),
            Err(UpperError::NoSuchInterface("nope".into()))
        );
    }

    fn fixture(host: &str) -> Root {
        Root::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/hosts")
                .join(host),
        )
    }

    fn names(v: &[&StackNode]) -> Vec<String> {
        v.iter().map(|n| n.name.clone()).collect()
    }

    #[test]
    fn lacp_bond_of_two_connectx6_ports() {
        let root = fixture("bond-cx6-lacp");
        let s = resolve(&root, "bond0").unwrap();
        assert!(s.notes.is_empty(), "{:?}", s.notes);
        assert_eq!(s.top.kind, DevKind::Bond);
        assert_eq!(s.top.speed_mbps, Some(200_000));
        let b = s.top.bond.as_ref().unwrap();
        assert_eq!(b.mode.as_ref().unwrap().value, "802.3ad");
        assert!(b.hashes());
        let h = b.xmit_hash_policy.as_ref().unwrap();
        assert_eq!(h.value, "layer2");
        assert_eq!(h.source, "/sys/class/net/bond0/bonding/xmit_hash_policy");
        assert_eq!(b.lacp_rate.as_ref().unwrap().value, "slow");
        assert_eq!(b.miimon.as_ref().unwrap().value, 100);
        assert_eq!(names(&s.leaves()), ["ens1f0np0", "ens1f1np1"]);
        for m in s.leaves() {
            assert_eq!(m.kind, DevKind::Pci);
            assert_eq!(m.speed_mbps, Some(100_000));
            assert_eq!(m.mtu, Some(9000));
            let st = m.member.as_ref().unwrap();
            assert_eq!(st.state.as_deref(), Some("active"));
            assert_eq!(st.mii_status.as_deref(), Some("up"));
            assert_eq!(st.aggregator_id, Some(1));
            assert!(m.is_up());
        }
        assert_eq!(describe(&s), "bond on 2 pci");
        // the VLAN on it: two layers, the same members
        let v = resolve(&root, "bond0.100").unwrap();
        assert_eq!(v.top.kind, DevKind::Vlan);
        assert_eq!(v.top.vlan_id, Some(100));
        assert_eq!(v.top.lowers.len(), 1);
        assert_eq!(v.top.lowers[0].kind, DevKind::Bond);
        assert_eq!(names(&v.leaves()), ["ens1f0np0", "ens1f1np1"]);
        assert_eq!(names(&v.aggregates()), ["bond0"]);
        assert_eq!(describe(&v), "vlan on bond on 2 pci");
        // a member alone is no upper device
        let m = resolve(&root, "ens1f0np0").unwrap();
        assert!(!m.is_upper());
        assert_eq!(m.top.kind, DevKind::Pci);
        // every upper device of the host, from the facts collector's walk
        let all: Vec<String> = collect_uppers(&root)
            .iter()
            .map(|u| u.name().to_string())
            .collect();
        assert_eq!(all, ["bond0", "bond0.100"]);
    }

    #[test]
    fn a_bond_without_sysfs_options_falls_back_to_proc() {
        // the same bond with bonding/ gone: /proc/net/bonding/bond0 still says everything
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        mk(d, "bond0");
        mk(d, "eth0");
        mk(d, "eth1");
        std::fs::create_dir_all(d.join("proc/net/bonding")).unwrap();
        std::fs::write(
            d.join("proc/net/bonding/bond0"),
            PROC_BOND
                .replace("ens1f0np0", "eth0")
                .replace("ens1f1np1", "eth1"),
        )
        .unwrap();
        std::fs::write(
            d.join("sys/devices/virtual/net/bond0/uevent"),
            "DEVTYPE=bond\nINTERFACE=bond0\n",
        )
        .unwrap();
        let s = resolve(&Root::new(d), "bond0").unwrap();
        assert_eq!(s.top.kind, DevKind::Bond);
        let b = s.top.bond.as_ref().unwrap();
        assert_eq!(
            b.xmit_hash_policy.as_ref().unwrap().source,
            "/proc/net/bonding/bond0"
        );
        assert_eq!(b.mode.as_ref().unwrap().value, "802.3ad");
        assert_eq!(names(&s.leaves()), ["eth0", "eth1"]);
        let e1 = s.find("eth1").unwrap();
        assert_eq!(
            e1.member.as_ref().unwrap().mii_status.as_deref(),
            Some("down")
        );
        assert!(!e1.is_up());
        assert_eq!(s.find("eth0").unwrap().speed_mbps, Some(100_000));
    }

    #[test]
    fn vlan_on_an_e810_port() {
        let root = fixture("ice-e810-vlan");
        let s = resolve(&root, "ens5f0np0.200").unwrap();
        assert_eq!(s.top.kind, DevKind::Vlan);
        assert_eq!(s.top.vlan_id, Some(200));
        assert_eq!(s.top.mtu, Some(9000));
        assert_eq!(names(&s.leaves()), ["ens5f0np0"]);
        assert_eq!(s.leaves()[0].kind, DevKind::Pci);
        assert!(s.aggregates().is_empty());
        assert_eq!(describe(&s), "vlan on 1 pci");
    }

    #[test]
    fn bridge_with_a_nic_port_and_container_veths() {
        let root = fixture("bridge-cx6-port");
        let s = resolve(&root, "br0").unwrap();
        assert_eq!(s.top.kind, DevKind::Bridge);
        assert_eq!(s.top.mtu, Some(1500));
        assert_eq!(
            names(&s.leaves()),
            ["ens1f0np0", "veth3f9a2c1", "veth81d07e4"]
        );
        let kinds: Vec<DevKind> = s.leaves().iter().map(|l| l.kind).collect();
        assert_eq!(kinds, [DevKind::Pci, DevKind::Virtual, DevKind::Virtual]);
        let br = s.top.bridge.as_ref().unwrap();
        assert!(br.br_netfilter);
        let on: Vec<&str> = br.netfilter().iter().map(|f| f.source.as_str()).collect();
        assert_eq!(
            on,
            [
                "/proc/sys/net/bridge/bridge-nf-call-iptables",
                "/proc/sys/net/bridge/bridge-nf-call-ip6tables"
            ]
        );
    }

    #[test]
    fn a_wide_fan_is_cut_at_the_node_limit() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        mk(d, "br0");
        for i in 0..(MAX_NODES + 20) {
            let n = format!("p{i}");
            mk(d, &n);
            lower(d, "br0", &n);
        }
        let s = resolve(&Root::new(d), "br0").unwrap();
        assert_eq!(s.top.lowers.len(), MAX_NODES - 1);
        assert!(s.notes.iter().any(|n| n.contains("devices in the stack")));
    }
}
