//! NIC facts: every network interface backed by a PCI function (directly, or through a virtio
//! device on a virtio-pci function), with its driver, IDs and names, link state, PCIe link of the
//! function and of the upstream port, NUMA locality, interrupt vectors with their affinity, hwmon
//! temperatures, RPS/XPS masks and the ethtool answers.
//!
//! Sources (host paths; `IF` the interface, `DEV` the PCI function's directory under
//! `/sys/devices`):
//! - `/sys/class/net/IF` (link to `DEV/net/IF` or `DEV/virtioN/net/IF`), `IF/{speed,mtu,tx_queue_len,operstate,carrier,duplex}`,
//!   `IF/device/driver`, `IF/queues/{rx-N/rps_cpus,rx-N/rps_flow_cnt,tx-N/xps_cpus}`
//! - `DEV/{vendor,device,subsystem_vendor,subsystem_device,numa_node,local_cpulist,driver,irq}`,
//!   `DEV/{current,max}_link_{speed,width}` and the same of the upstream port (`DEV/..`),
//!   `DEV/msi_irqs/*`, `DEV/hwmon/hwmonN/{name,tempK_input,tempK_crit,tempK_max,tempK_label}`
//! - `DEV/config` (PCI Express capability: payload and read-request sizes), `DEV/iommu_group`
//!   → `/sys/kernel/iommu_groups/N/type`
//! - GSO/GRO sizes: rtnetlink on a live root, `IF/{gso,gro,tso}_max_size` in a tree
//!   ([`crate::link`])
//! - `/proc/interrupts` (action names), `/proc/irq/N/{smp_affinity_list,smp_affinity,effective_affinity_list,effective_affinity,affinity_hint,node}`
//! - `pci.ids` at its distribution path ([`crate::pci::PCI_IDS_PATHS`])
//! - ethtool ([`crate::ethtool`])

use crate::ethtool::{collect_ethtool, EthtoolFacts};
use crate::interrupts::{classify_actions, Interrupts, IrqKind};
use crate::pci::{
    is_pci_address, link_bandwidth_mbps, lookup_pci_ids, parse_link_speed, parse_link_width,
    parse_pcie_devctl, MegaTransfers, PcieDevCtl, PCI_IDS_PATHS,
};
use crate::{CpuSet, Root};
use serde::{Deserialize, Serialize};

/// One end's view of a PCIe link (a function or a port).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcieLink {
    /// PCI address of the function or port.
    pub address: String,
    /// sysfs directory (host path).
    pub path: String,
    /// As sysfs prints it (`8.0 GT/s PCIe`, `Unknown`).
    pub current_speed: Option<String>,
    pub current_rate: Option<MegaTransfers>,
    pub current_width: Option<u32>,
    pub max_speed: Option<String>,
    pub max_rate: Option<MegaTransfers>,
    pub max_width: Option<u32>,
}

impl PcieLink {
    fn read(root: &Root, path: &str) -> Option<PcieLink> {
        let current_speed = root.read_opt(&format!("{path}/current_link_speed"));
        let max_speed = root.read_opt(&format!("{path}/max_link_speed"));
        let current_width = root.read_opt(&format!("{path}/current_link_width"));
        let max_width = root.read_opt(&format!("{path}/max_link_width"));
        if current_speed.is_none()
            && max_speed.is_none()
            && current_width.is_none()
            && max_width.is_none()
        {
            return None;
        }
        Some(PcieLink {
            address: path.rsplit('/').next().unwrap_or(path).to_string(),
            path: path.to_string(),
            current_rate: current_speed.as_deref().and_then(parse_link_speed),
            max_rate: max_speed.as_deref().and_then(parse_link_speed),
            current_width: current_width.as_deref().and_then(parse_link_width),
            max_width: max_width.as_deref().and_then(parse_link_width),
            current_speed,
            max_speed,
        })
    }

    /// Usable Mbit/s of the link as trained now.
    pub fn current_mbps(&self) -> Option<u64> {
        Some(link_bandwidth_mbps(self.current_rate?, self.current_width?))
    }

    /// Usable Mbit/s at this end's maximum speed and width.
    pub fn max_mbps(&self) -> Option<u64> {
        Some(link_bandwidth_mbps(self.max_rate?, self.max_width?))
    }
}

/// PCIe facts of a NIC function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcieFacts {
    pub function: PcieLink,
    /// The port above the function (root port or switch downstream port), when it shows link
    /// attributes.
    pub upstream: Option<PcieLink>,
    /// Usable Mbit/s as trained now (current speed × current width × line code).
    pub available_mbps: Option<u64>,
    /// Usable Mbit/s the function could train to (its own max speed × max width).
    pub capable_mbps: Option<u64>,
    /// The function's current speed or width is below its own maximum; `None` when neither pair
    /// is known.
    pub downgraded: Option<bool>,
    /// Payload and read-request sizes of the function (`DEV/config`; needs a privileged read).
    #[serde(default)]
    pub devctl: Option<PcieDevCtl>,
    /// The same of the upstream port (the payload in force is the smaller of the two ends').
    #[serde(default)]
    pub upstream_devctl: Option<PcieDevCtl>,
}

impl PcieFacts {
    pub fn from_links(function: PcieLink, upstream: Option<PcieLink>) -> PcieFacts {
        let speed_down = match (function.current_rate, function.max_rate) {
            (Some(c), Some(m)) => Some(c < m),
            _ => None,
        };
        let width_down = match (function.current_width, function.max_width) {
            (Some(c), Some(m)) => Some(c < m),
            _ => None,
        };
        let downgraded = match (speed_down, width_down) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(false) || b.unwrap_or(false)),
        };
        PcieFacts {
            devctl: None,
            upstream_devctl: None,
            available_mbps: function.current_mbps(),
            capable_mbps: function.max_mbps(),
            downgraded,
            function,
            upstream,
        }
    }
}

/// One interrupt vector of a NIC's PCI function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicIrq {
    pub irq: u32,
    /// Action names from `/proc/interrupts` (empty when the IRQ has no handler).
    pub actions: Vec<String>,
    pub kind: IrqKind,
    /// Requested affinity (`smp_affinity_list`, else `smp_affinity`).
    pub requested: Option<CpuSet>,
    /// Effective affinity: `effective_affinity_list` where the kernel has it (and it is not
    /// empty), else the requested affinity.
    pub effective: Option<CpuSet>,
    /// The host file `effective` came from.
    pub effective_source: Option<String>,
    /// `affinity_hint` (what the driver suggested; not in force).
    pub affinity_hint: Option<CpuSet>,
    /// `/proc/irq/N/node`.
    pub node: Option<i32>,
}

/// One temperature sensor of a hwmon device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TempSensor {
    /// `temp1`, `temp2`, ...
    pub sensor: String,
    pub label: Option<String>,
    pub input_millicelsius: i64,
    pub crit_millicelsius: Option<i64>,
    pub max_millicelsius: Option<i64>,
}

/// The NIC's hwmon device (under its PCI function's directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicHwmon {
    /// `hwmon1`.
    pub hwmon: String,
    /// Host path of the hwmon directory.
    pub path: String,
    pub name: Option<String>,
    pub sensors: Vec<TempSensor>,
}

impl NicHwmon {
    /// The hottest sensor.
    pub fn hottest(&self) -> Option<&TempSensor> {
        self.sensors.iter().max_by_key(|s| s.input_millicelsius)
    }
}

/// RPS settings of one RX queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxQueue {
    /// `rx-0`.
    pub name: String,
    pub rps_cpus: Option<CpuSet>,
    pub rps_flow_cnt: Option<u64>,
}

/// XPS setting of one TX queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxQueue {
    /// `tx-0`.
    pub name: String,
    pub xps_cpus: Option<CpuSet>,
}

/// One network interface backed by a PCI function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicFacts {
    pub name: String,
    /// Host path of the interface (`/sys/class/net/IF`).
    pub sysfs: String,
    pub pci_address: String,
    /// Host path of the PCI function's directory.
    pub device_path: String,
    /// `virtioN` when the interface sits on a virtio device of the function.
    pub virtio: Option<String>,
    /// Driver of the interface's device (`mlx5_core`, `mlx4_core`, `virtio_net`).
    pub driver: Option<String>,
    /// Driver bound to the PCI function (differs for virtio: `virtio-pci`).
    pub pci_driver: Option<String>,
    pub vendor_id: Option<String>,
    pub device_id: Option<String>,
    pub subsystem_vendor_id: Option<String>,
    pub subsystem_device_id: Option<String>,
    /// Names from `pci.ids`, when the file exists.
    pub vendor_name: Option<String>,
    pub device_name: Option<String>,
    pub subsystem_name: Option<String>,
    /// Link speed, Mbit/s; `None` when down or unknown (`speed` missing, -1).
    pub speed_mbps: Option<u64>,
    pub mtu: Option<u32>,
    pub tx_queue_len: Option<u32>,
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    pub duplex: Option<String>,
    /// `None` when the function shows no PCIe link attributes (virtio, old kernels).
    pub pcie: Option<PcieFacts>,
    /// The function's `numa_node` as the kernel prints it: -1 means the kernel does not know
    /// (single-node hosts, firmware without proximity info).
    pub numa_node: Option<i32>,
    pub local_cpus: Option<CpuSet>,
    /// The function's interrupt vectors (`msi_irqs`, else its legacy `irq`).
    pub irqs: Vec<NicIrq>,
    pub hwmon: Option<NicHwmon>,
    pub rx_queues: Vec<RxQueue>,
    pub tx_queues: Vec<TxQueue>,
    /// Other interfaces on the same PCI function (mlx4 ports).
    pub siblings: Vec<String>,
    pub ethtool: Option<EthtoolFacts>,
    /// `IF/gso_max_size`, `IF/gro_max_size`: the largest GSO/GRO packet the stack builds for
    /// this interface (above 65536 = BIG TCP, kernels ≥ 6.3); on a live root from rtnetlink
    /// ([`crate::link`]), which has them where `/sys` does not.
    #[serde(default)]
    pub gso_max_size: Option<u32>,
    #[serde(default)]
    pub gro_max_size: Option<u32>,
    /// `gso_ipv4_max_size`, `gro_ipv4_max_size`: the same for IPv4 (kernels ≥ 6.3).
    #[serde(default)]
    pub gso_ipv4_max_size: Option<u32>,
    #[serde(default)]
    pub gro_ipv4_max_size: Option<u32>,
    /// `IF/tso_max_size`: the largest TSO packet the driver accepts (kernels ≥ 6.0).
    #[serde(default)]
    pub tso_max_size: Option<u32>,
    /// The IOMMU group of the PCI function, when an IOMMU is on.
    #[serde(default)]
    pub iommu_group: Option<IommuGroup>,
}

/// The IOMMU group of a PCI function (`DEV/iommu_group` → `/sys/kernel/iommu_groups/N`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IommuGroup {
    pub group: String,
    /// `type` of the group (kernels ≥ 5.11): `identity` is pass-through; `DMA` and `DMA-FQ`
    /// translate every DMA address (strict or lazy invalidation).
    pub domain_type: Option<String>,
}

/// Largest configuration-space image read (the PCIe extended space).
const CONFIG_LIMIT: usize = 4096;

fn read_devctl(root: &Root, dev: &str) -> Option<PcieDevCtl> {
    root.read_bytes(&format!("{dev}/config"), CONFIG_LIMIT)
        .ok()
        .and_then(|b| parse_pcie_devctl(&b))
}

impl NicFacts {
    /// The NUMA node when the kernel knows it (`numa_node` ≥ 0).
    pub fn node(&self) -> Option<u32> {
        self.numa_node.and_then(|n| u32::try_from(n).ok())
    }

    /// The vectors of this interface: every vector of the function except those that name a
    /// sibling interface and those no driver requested ([`IrqKind::Unrequested`]).
    pub fn own_irqs(&self) -> impl Iterator<Item = &NicIrq> {
        self.irqs
            .iter()
            .filter(|i| !matches!(i.kind, IrqKind::OtherInterface | IrqKind::Unrequested))
    }

    /// Vectors of the function that no driver requested: listed, never placed or judged.
    pub fn unrequested_irqs(&self) -> impl Iterator<Item = &NicIrq> {
        self.irqs.iter().filter(|i| i.kind == IrqKind::Unrequested)
    }

    /// Queue (completion) vectors. When no vector's name says "queue": the vectors whose names
    /// say nothing (unknown); when there are none either, all of the interface's vectors (a device
    /// with one vector named after the interface does its packet work on it).
    pub fn queue_irqs(&self) -> Vec<&NicIrq> {
        let q: Vec<&NicIrq> = self
            .irqs
            .iter()
            .filter(|i| i.kind == IrqKind::Queue)
            .collect();
        if !q.is_empty() {
            return q;
        }
        let u: Vec<&NicIrq> = self
            .irqs
            .iter()
            .filter(|i| i.kind == IrqKind::Unknown)
            .collect();
        if !u.is_empty() {
            return u;
        }
        self.own_irqs().collect()
    }

    /// Union of the effective CPUs of this interface's vectors.
    pub fn irq_cpus(&self) -> CpuSet {
        self.own_irqs()
            .filter_map(|i| i.effective.as_ref())
            .fold(CpuSet::new(), |a, s| a.union(s))
    }

    /// Union of the effective CPUs of the queue vectors.
    pub fn queue_irq_cpus(&self) -> CpuSet {
        self.queue_irqs()
            .into_iter()
            .filter_map(|i| i.effective.as_ref())
            .fold(CpuSet::new(), |a, s| a.union(s))
    }

    /// True when the link is up (`operstate` up, or carrier 1 where operstate is unknown).
    pub fn is_up(&self) -> bool {
        match self.operstate.as_deref() {
            Some("up") => true,
            Some("unknown") | None => self.carrier == Some(true),
            _ => false,
        }
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/')
        .map_or("/", |(p, _)| if p.is_empty() { "/" } else { p })
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Link speed from sysfs `speed`: positive Mbit/s, with -1 / 65535 / u32::MAX meaning unknown.
pub fn parse_speed(s: &str) -> Option<u64> {
    let v: i64 = s.trim().parse().ok()?;
    (v > 0 && v != 65535 && v != u32::MAX as i64 && v <= 10_000_000).then_some(v as u64)
}

/// A CPU set from its list file, else from its mask file; with the host file it came from.
fn read_set(root: &Root, list_path: &str, mask_path: &str) -> Option<(CpuSet, String)> {
    match root.cpu_list_opt(list_path) {
        Some(set) => Some((set, list_path.to_string())),
        None => Some((root.cpu_mask_opt(mask_path)?, mask_path.to_string())),
    }
}

/// Link values any interface has (`/sys/class/net/IF/...`), PCI-backed or not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkState {
    /// Mbit/s; `None` when down or unknown ([`parse_speed`]).
    pub speed_mbps: Option<u64>,
    pub mtu: Option<u32>,
    pub tx_queue_len: Option<u32>,
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    pub duplex: Option<String>,
}

impl LinkState {
    /// Read the link values of `iface` through `root`; each one `None` when its file is missing.
    pub fn read(root: &Root, iface: &str) -> LinkState {
        let net = format!("/sys/class/net/{iface}");
        LinkState {
            speed_mbps: root
                .read_opt(&format!("{net}/speed"))
                .and_then(|s| parse_speed(&s)),
            mtu: root.parse_opt(&format!("{net}/mtu")),
            tx_queue_len: root.parse_opt(&format!("{net}/tx_queue_len")),
            operstate: root.read_opt(&format!("{net}/operstate")),
            carrier: root.read_opt(&format!("{net}/carrier")).map(|c| c == "1"),
            duplex: root.read_opt(&format!("{net}/duplex")),
        }
    }
}

/// Affinity facts of one IRQ from `/proc/irq/N/`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IrqAffinity {
    /// `smp_affinity_list`, else `smp_affinity`.
    pub requested: Option<CpuSet>,
    /// `effective_affinity_list` (else `effective_affinity`) when present and not empty, else the
    /// requested affinity; with the host file it came from.
    pub effective: Option<(CpuSet, String)>,
    pub hint: Option<CpuSet>,
    pub node: Option<i32>,
    /// True when the kernel shows an effective affinity and it is empty (no CPU serves the IRQ:
    /// nobody requested it, or it is shut down).
    pub effective_empty: bool,
}

/// A vector no driver requested: no action name in `/proc/interrupts` (the row is absent or names
/// no handler), not one interrupt counted, and no effective CPU shown (an empty
/// `effective_affinity_list`; on an old kernel without the file no vector is marked).
pub fn is_unrequested(actions: &[String], counted: u64, effective_empty: bool) -> bool {
    actions.is_empty() && counted == 0 && effective_empty
}

/// Read the affinity of `irq` through `root`.
pub fn read_irq_affinity(root: &Root, irq: u32) -> IrqAffinity {
    let d = format!("/proc/irq/{irq}");
    let requested = read_set(
        root,
        &format!("{d}/smp_affinity_list"),
        &format!("{d}/smp_affinity"),
    );
    let shown = read_set(
        root,
        &format!("{d}/effective_affinity_list"),
        &format!("{d}/effective_affinity"),
    );
    let effective_empty = shown.as_ref().is_some_and(|(s, _)| s.is_empty());
    let effective = shown
        .filter(|(s, _)| !s.is_empty())
        .or_else(|| requested.clone());
    IrqAffinity {
        effective_empty,
        requested: requested.map(|r| r.0),
        effective,
        hint: root.cpu_mask_opt(&format!("{d}/affinity_hint")),
        node: root.parse_opt(&format!("{d}/node")),
    }
}

fn read_hwmon(root: &Root, dev: &str) -> Option<NicHwmon> {
    for h in root.list_opt(&format!("{dev}/hwmon")) {
        if !h.starts_with("hwmon") {
            continue;
        }
        let path = format!("{dev}/hwmon/{h}");
        let mut sensors = Vec::new();
        for f in root.list_opt(&path) {
            let Some(sensor) = f.strip_suffix("_input").filter(|s| s.starts_with("temp")) else {
                continue;
            };
            let Some(input) = root.parse_opt::<i64>(&format!("{path}/{f}")) else {
                continue;
            };
            sensors.push(TempSensor {
                sensor: sensor.to_string(),
                label: root.read_opt(&format!("{path}/{sensor}_label")),
                input_millicelsius: input,
                crit_millicelsius: root.parse_opt(&format!("{path}/{sensor}_crit")),
                max_millicelsius: root.parse_opt(&format!("{path}/{sensor}_max")),
            });
        }
        if sensors.is_empty() {
            continue;
        }
        sensors.sort_by(|a, b| a.sensor.cmp(&b.sensor));
        return Some(NicHwmon {
            hwmon: h.clone(),
            name: root.read_opt(&format!("{path}/name")),
            path,
            sensors,
        });
    }
    None
}

fn driver_of(root: &Root, dev: &str) -> Option<String> {
    root.read_link(&format!("{dev}/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
}

/// Where an interface's device lives: `(PCI function dir, virtio device name)`, or `None` for
/// interfaces not backed by PCI (virtual, USB, platform).
pub fn pci_function_of(root: &Root, iface: &str) -> Option<(String, Option<String>)> {
    let dev = match root.resolve_link(&format!("/sys/class/net/{iface}")) {
        Ok(p) => parent(parent(&p)).to_string(),
        Err(_) => root
            .resolve_link(&format!("/sys/class/net/{iface}/device"))
            .ok()?,
    };
    if dev.starts_with("/sys/devices/virtual") {
        return None;
    }
    if is_pci_address(base(&dev)) {
        return Some((dev, None));
    }
    let up = parent(&dev);
    if base(&dev).starts_with("virtio") && is_pci_address(base(up)) {
        return Some((up.to_string(), Some(base(&dev).to_string())));
    }
    None
}

/// Read every PCI-backed interface through `root`. `interrupts` gives the vectors' names (read
/// once by the caller).
pub fn collect_nics(root: &Root, interrupts: Option<&Interrupts>) -> Vec<NicFacts> {
    let mut pci_ids: Option<Option<String>> = None;
    let mut out = Vec::new();
    for name in root.list_opt("/sys/class/net") {
        let Some((dev, virtio)) = pci_function_of(root, &name) else {
            continue;
        };
        let pci_ids_text = pci_ids
            .get_or_insert_with(|| PCI_IDS_PATHS.iter().find_map(|p| root.read(p).ok()))
            .as_deref();
        out.push(collect_nic(
            root,
            &name,
            &dev,
            virtio,
            interrupts,
            pci_ids_text,
        ));
    }
    out
}

fn collect_nic(
    root: &Root,
    name: &str,
    dev: &str,
    virtio: Option<String>,
    interrupts: Option<&Interrupts>,
    pci_ids: Option<&str>,
) -> NicFacts {
    let net = format!("/sys/class/net/{name}");
    let netdev_parent = match &virtio {
        Some(v) => format!("{dev}/{v}"),
        None => dev.to_string(),
    };
    let mut siblings: Vec<String> = root
        .list_opt(&format!("{netdev_parent}/net"))
        .into_iter()
        .filter(|n| n != name)
        .collect();
    siblings.sort();
    let sib_refs: Vec<&str> = siblings.iter().map(String::as_str).collect();

    let vendor_id = root.read_opt(&format!("{dev}/vendor"));
    let device_id = root.read_opt(&format!("{dev}/device"));
    let subsystem_vendor_id = root.read_opt(&format!("{dev}/subsystem_vendor"));
    let subsystem_device_id = root.read_opt(&format!("{dev}/subsystem_device"));
    let names = match (pci_ids, &vendor_id, &device_id) {
        (Some(t), Some(v), Some(d)) => lookup_pci_ids(
            t,
            v,
            d,
            subsystem_vendor_id.as_deref(),
            subsystem_device_id.as_deref(),
        ),
        _ => Default::default(),
    };

    let pcie = PcieLink::read(root, dev).map(|f| {
        let up = parent(dev);
        let upstream = is_pci_address(base(up))
            .then(|| PcieLink::read(root, up))
            .flatten();
        let mut p = PcieFacts::from_links(f, upstream);
        p.devctl = read_devctl(root, dev);
        if p.upstream.is_some() {
            p.upstream_devctl = read_devctl(root, up);
        }
        p
    });
    let iommu_group = root
        .resolve_link(&format!("{dev}/iommu_group"))
        .ok()
        .map(|g| IommuGroup {
            domain_type: root.read_opt(&format!("{g}/type")),
            group: base(&g).to_string(),
        });

    // Vectors: msi_irqs, else the legacy line.
    let mut irq_numbers: Vec<u32> = root
        .list_opt(&format!("{dev}/msi_irqs"))
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    irq_numbers.sort_unstable();
    if irq_numbers.is_empty() {
        if let Some(irq) = root
            .parse_opt::<u32>(&format!("{dev}/irq"))
            .filter(|i| *i > 0)
        {
            irq_numbers.push(irq);
        }
    }
    let irqs = irq_numbers
        .into_iter()
        .map(|irq| {
            let row = interrupts.and_then(|t| t.irq(irq));
            let actions = row.map(|r| r.actions.clone()).unwrap_or_default();
            let counted = row.map_or(0, |r| r.total());
            let a = read_irq_affinity(root, irq);
            let unrequested = is_unrequested(&actions, counted, a.effective_empty);
            let kind = if unrequested {
                IrqKind::Unrequested
            } else {
                classify_actions(&actions, name, &sib_refs)
            };
            // an unrequested vector's requested affinity (often every CPU) serves nothing
            let effective = a.effective.filter(|_| !unrequested);
            NicIrq {
                irq,
                actions,
                kind,
                requested: a.requested,
                effective_source: effective.as_ref().map(|e| e.1.clone()),
                effective: effective.map(|e| e.0),
                affinity_hint: a.hint,
                node: a.node,
            }
        })
        .collect();

    let mut rx_queues = Vec::new();
    let mut tx_queues = Vec::new();
    let mut qnames = root.list_opt(&format!("{net}/queues"));
    qnames.sort_by_key(|q| {
        let (kind, n) = q.split_once('-').unwrap_or((q, "0"));
        (kind.to_string(), n.parse::<u32>().unwrap_or(0))
    });
    for q in qnames {
        let qd = format!("{net}/queues/{q}");
        if q.starts_with("rx-") {
            rx_queues.push(RxQueue {
                rps_cpus: root.cpu_mask_opt(&format!("{qd}/rps_cpus")),
                rps_flow_cnt: root.parse_opt(&format!("{qd}/rps_flow_cnt")),
                name: q,
            });
        } else if q.starts_with("tx-") {
            tx_queues.push(TxQueue {
                xps_cpus: root.cpu_mask_opt(&format!("{qd}/xps_cpus")),
                name: q,
            });
        }
    }

    let link = LinkState::read(root, name);
    let sizes = crate::link::collect_sizes(root, name);
    NicFacts {
        name: name.to_string(),
        sysfs: net.clone(),
        pci_address: base(dev).to_string(),
        device_path: dev.to_string(),
        driver: driver_of(root, &format!("{net}/device")),
        pci_driver: driver_of(root, dev),
        virtio,
        vendor_id,
        device_id,
        subsystem_vendor_id,
        subsystem_device_id,
        vendor_name: names.vendor,
        device_name: names.device,
        subsystem_name: names.subsystem,
        speed_mbps: link.speed_mbps,
        mtu: link.mtu,
        tx_queue_len: link.tx_queue_len,
        operstate: link.operstate,
        carrier: link.carrier,
        duplex: link.duplex,
        pcie,
        numa_node: root.parse_opt(&format!("{dev}/numa_node")),
        local_cpus: read_set(
            root,
            &format!("{dev}/local_cpulist"),
            &format!("{dev}/local_cpus"),
        )
        .map(|s| s.0),
        irqs,
        hwmon: read_hwmon(root, dev),
        rx_queues,
        tx_queues,
        siblings,
        ethtool: collect_ethtool(root, name),
        gso_max_size: sizes.and_then(|s| s.sizes.gso_max_size),
        gro_max_size: sizes.and_then(|s| s.sizes.gro_max_size),
        gso_ipv4_max_size: sizes.and_then(|s| s.sizes.gso_ipv4_max_size),
        gro_ipv4_max_size: sizes.and_then(|s| s.sizes.gro_ipv4_max_size),
        tso_max_size: sizes.and_then(|s| s.tso_max_size),
        iommu_group,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(host: &str) -> Root {
        Root::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/hosts")
                .join(host),
        )
    }

    fn nics(root: &Root) -> Vec<NicFacts> {
        let t = root
            .read("/proc/interrupts")
            .ok()
            .and_then(|t| Interrupts::parse(&t).ok());
        collect_nics(root, t.as_ref())
    }

    #[test]
    fn speeds() {
        assert_eq!(parse_speed("100000\n"), Some(100000));
        assert_eq!(parse_speed("-1"), None);
        assert_eq!(parse_speed("4294967295"), None);
        assert_eq!(parse_speed("65535"), None);
        assert_eq!(parse_speed(""), None);
    }

    #[test]
    fn crow_x4_nic() {
        let all = nics(&fixture("crow-9900x-cx5-x4"));
        let names: Vec<&str> = all.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["eno1", "eno2", "enp1s0f0np0", "enp1s0f1np1"]);
        let n = all.iter().find(|n| n.name == "enp1s0f0np0").unwrap();
        assert_eq!(n.pci_address, "0000:01:00.0");
        assert_eq!(n.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(n.speed_mbps, Some(100000));
        assert_eq!(n.numa_node, Some(-1));
        assert_eq!(n.node(), None);
        let p = n.pcie.as_ref().unwrap();
        assert_eq!(p.function.current_width, Some(4));
        assert_eq!(p.available_mbps, Some(31504));
        assert_eq!(p.capable_mbps, Some(126016));
        assert_eq!(p.downgraded, Some(true));
        let up = p.upstream.as_ref().unwrap();
        assert_eq!(up.address, "0000:00:01.1");
        assert_eq!(up.max_speed.as_deref(), Some("32.0 GT/s PCIe"));
        assert_eq!(n.irqs.len(), 13);
        let i98 = n.irqs.iter().find(|i| i.irq == 98).unwrap();
        assert_eq!(i98.kind, IrqKind::Control);
        assert_eq!(i98.requested.as_ref().unwrap().to_string(), "0-11");
        assert_eq!(i98.effective.as_ref().unwrap().to_string(), "10");
        assert_eq!(
            i98.effective_source.as_deref(),
            Some("/proc/irq/98/effective_affinity_list")
        );
        assert_eq!(n.queue_irqs().len(), 12);
        assert_eq!(n.irq_cpus().to_string(), "3,7-11");
        let h = n.hwmon.as_ref().unwrap();
        assert_eq!(h.hwmon, "hwmon1");
        assert_eq!(h.hottest().unwrap().input_millicelsius, 74000);
        assert_eq!(h.hottest().unwrap().crit_millicelsius, Some(105000));
        assert_eq!(n.rx_queues.len(), 12);
        assert_eq!(n.rx_queues[2].name, "rx-2");
        assert_eq!(n.ethtool, None);
        // a down port has no speed: unknown, not zero
        let down = all.iter().find(|n| n.name == "enp1s0f1np1").unwrap();
        assert_eq!(down.speed_mbps, None);
        assert!(!down.is_up());
    }

    #[test]
    fn mlx4_shared_function_and_old_kernel() {
        let all = nics(&fixture("sl-w9-x3650-cx3"));
        let n = all.iter().find(|n| n.name == "p2p1").unwrap();
        assert_eq!(n.node(), Some(1));
        assert_eq!(n.driver.as_deref(), Some("mlx4_core"));
        assert_eq!(n.irqs.len(), 20);
        assert_eq!(n.hwmon, None);
        let q: Vec<u32> = n.queue_irqs().iter().map(|i| i.irq).collect();
        assert!(q.contains(&106) && q.contains(&114) && !q.contains(&108));
        assert_eq!(n.irq_cpus().to_string(), "8-15");
    }

    #[test]
    fn virtio_and_virtual_interfaces() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let dev = d.join("sys/devices/pci0000:00/0000:00:03.0");
        std::fs::create_dir_all(dev.join("virtio2/net/eth0")).unwrap();
        std::fs::create_dir_all(dev.join("msi_irqs")).unwrap();
        for i in ["37", "38", "39"] {
            std::fs::write(dev.join("msi_irqs").join(i), "msix\n").unwrap();
        }
        std::fs::write(dev.join("numa_node"), "-1\n").unwrap();
        std::fs::write(dev.join("virtio2/net/eth0/speed"), "-1\n").unwrap();
        std::fs::write(dev.join("virtio2/net/eth0/mtu"), "1500\n").unwrap();
        std::fs::create_dir_all(d.join("sys/devices/virtual/net/lo")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0",
            d.join("sys/class/net/eth0"),
        )
        .unwrap();
        std::os::unix::fs::symlink("../../devices/virtual/net/lo", d.join("sys/class/net/lo"))
            .unwrap();
        std::fs::create_dir_all(d.join("proc/irq/38")).unwrap();
        std::fs::write(d.join("proc/irq/38/smp_affinity_list"), "0-1\n").unwrap();
        std::fs::write(d.join("proc/irq/38/effective_affinity_list"), "\n").unwrap();
        let ints = Interrupts::parse(
            "CPU0 CPU1\n 37: 0 0 PCI-MSIX-0000:00:03.0 0-edge virtio2-config\n 38: 1 2 PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0\n 39: 3 4 PCI-MSIX-0000:00:03.0 2-edge virtio2-output.0\n",
        )
        .unwrap();
        std::fs::write(dev.join("vendor"), "0x1af4\n").unwrap();
        std::fs::write(dev.join("device"), "0x1041\n").unwrap();
        std::fs::create_dir_all(d.join("usr/share/hwdata")).unwrap();
        std::fs::write(
            d.join("usr/share/hwdata/pci.ids"),
            "1af4  Red Hat, Inc.\n\t1041  Virtio 1.0 network device\n",
        )
        .unwrap();
        let root = Root::new(d);
        let all = collect_nics(&root, Some(&ints));
        assert_eq!(all[0].vendor_name.as_deref(), Some("Red Hat, Inc."));
        assert_eq!(
            all[0].device_name.as_deref(),
            Some("Virtio 1.0 network device")
        );
        assert_eq!(all.len(), 1);
        let n = &all[0];
        assert_eq!(n.virtio.as_deref(), Some("virtio2"));
        assert_eq!(n.pci_address, "0000:00:03.0");
        assert_eq!(n.pcie, None);
        assert_eq!(n.speed_mbps, None);
        assert_eq!(
            n.queue_irqs().iter().map(|i| i.irq).collect::<Vec<_>>(),
            [38, 39]
        );
        // empty effective list falls back to the requested affinity
        let i38 = n.irqs.iter().find(|i| i.irq == 38).unwrap();
        assert_eq!(i38.effective.as_ref().unwrap().to_string(), "0-1");
        assert_eq!(
            i38.effective_source.as_deref(),
            Some("/proc/irq/38/smp_affinity_list")
        );
        // no affinity files at all: unknown
        assert_eq!(n.irqs[0].effective, None);
    }

    #[test]
    fn vectors_no_driver_requested_are_listed_but_not_the_interfaces() {
        // an ice function with two queue vectors and two vectors reserved for an RDMA driver
        // that never requested them: no row in /proc/interrupts, empty effective list,
        // smp_affinity_list every CPU
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let dev = d.join("sys/devices/pci0000:80/0000:80:02.0/0000:81:00.0");
        std::fs::create_dir_all(dev.join("net/ens1f0")).unwrap();
        std::fs::create_dir_all(dev.join("msi_irqs")).unwrap();
        for i in ["200", "201", "202", "203", "204"] {
            std::fs::write(dev.join("msi_irqs").join(i), "msix\n").unwrap();
        }
        std::fs::create_dir_all(d.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:80/0000:80:02.0/0000:81:00.0/net/ens1f0",
            d.join("sys/class/net/ens1f0"),
        )
        .unwrap();
        for (irq, eff) in [
            ("200", "16"),
            ("201", "17"),
            ("202", "18"),
            ("203", ""),
            ("204", ""),
        ] {
            let p = d.join("proc/irq").join(irq);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("smp_affinity_list"), "0-31\n").unwrap();
            std::fs::write(p.join("effective_affinity_list"), format!("{eff}\n")).unwrap();
        }
        let ints = Interrupts::parse(
            "CPU0 CPU1\n 200: 0 9 IR-PCI-MSIX-0000:81:00.0 0-edge ice-0000:81:00.0:misc\n 201: 5 7 IR-PCI-MSIX-0000:81:00.0 1-edge ice-ens1f0-TxRx-0\n 202: 3 4 IR-PCI-MSIX-0000:81:00.0 2-edge ice-ens1f0-TxRx-1\n",
        )
        .unwrap();
        let all = collect_nics(&Root::new(d), Some(&ints));
        let n = &all[0];
        assert_eq!(n.irqs.len(), 5);
        let own: Vec<u32> = n.own_irqs().map(|i| i.irq).collect();
        assert_eq!(own, [200, 201, 202]);
        let unreq: Vec<u32> = n.unrequested_irqs().map(|i| i.irq).collect();
        assert_eq!(unreq, [203, 204]);
        // their smp_affinity_list (every CPU) is not taken as CPUs serving them
        assert_eq!(n.irqs[3].effective, None);
        assert_eq!(n.irqs[3].requested.as_ref().unwrap().to_string(), "0-31");
        assert_eq!(n.irq_cpus().to_string(), "16-18");
        assert_eq!(n.queue_irq_cpus().to_string(), "17-18");
        assert!(is_unrequested(&[], 0, true));
        assert!(!is_unrequested(&[], 3, true));
        assert!(!is_unrequested(&["x".into()], 0, true));
        assert!(!is_unrequested(&[], 0, false));
    }

    #[test]
    fn pcie_downgrade_compares_the_function_with_itself() {
        let link = |cur: &str, cw, max: &str, mw| PcieLink {
            address: "0000:01:00.0".into(),
            path: String::new(),
            current_speed: Some(cur.into()),
            current_rate: parse_link_speed(cur),
            current_width: Some(cw),
            max_speed: Some(max.into()),
            max_rate: parse_link_speed(max),
            max_width: Some(mw),
        };
        // Gen3 x16 card in a Gen5 slot at Gen3 x16: full speed for the card.
        let p = PcieFacts::from_links(
            link("8.0 GT/s PCIe", 16, "8.0 GT/s PCIe", 16),
            Some(link("8.0 GT/s PCIe", 16, "32.0 GT/s PCIe", 16)),
        );
        assert_eq!(p.downgraded, Some(false));
        // Gen4 card trained at Gen3: downgraded in speed.
        let p = PcieFacts::from_links(link("8.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16), None);
        assert_eq!(p.downgraded, Some(true));
        // Link down: Unknown speed; width pair still compared.
        let p = PcieFacts::from_links(link("Unknown", 16, "8.0 GT/s PCIe", 16), None);
        assert_eq!(p.downgraded, Some(false));
        assert_eq!(p.available_mbps, None);
    }
}
