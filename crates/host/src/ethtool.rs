//! Ring sizes, channels, interrupt coalescing, offloads and driver info of an interface through
//! the kernel's ethtool ioctl interface (`SIOCETHTOOL`: `ETHTOOL_GDRVINFO`, `ETHTOOL_GRINGPARAM`,
//! `ETHTOOL_GCHANNELS`, `ETHTOOL_GCOALESCE`, and `ETHTOOL_GSSET_INFO` + `ETHTOOL_GSTRINGS` +
//! `ETHTOOL_GFEATURES` for named offloads), and the setters wirespeed uses: ring sizes
//! (`ETHTOOL_SRINGPARAM`, [`set_ring`]), the requested interrupt-coalescing fields
//! (`ETHTOOL_SCOALESCE`, [`set_coalesce`]), flow control (`ETHTOOL_SPAUSEPARAM`,
//! [`set_pause`]) and one named feature such as `rx-ntuple-filter` (`ETHTOOL_SFEATURES`,
//! [`set_feature`]).
//!
//! On a live root each query is an ioctl; a driver that does not implement one answers
//! `EOPNOTSUPP` and that part stays `None`. In a snapshot the answers are files under
//! `/wirespeed/ethtool/<iface>/` (`drvinfo.json`, `ring.json`, `channels.json`, `coalesce.json`,
//! `features.json`, `pause.json` from `ETHTOOL_GPAUSEPARAM`, `tcp_data_split.json` from the
//! ethtool netlink family's rings answer, [`crate::link::tcp_data_split`]) written by `capture`; a recording root stores them there as it queries.
//! [`get_ring`], [`set_ring`], [`get_coalesce`], [`set_coalesce`], [`get_pause`],
//! [`set_pause`], [`get_feature`] and [`set_feature`] talk to the running kernel only (there is
//! no ring, coalescing, flow control or feature to set in a captured tree).

use crate::Root;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;

/// `ETHTOOL_GDRVINFO`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrvInfo {
    pub driver: String,
    pub version: String,
    pub fw_version: String,
    pub bus_info: String,
}

/// `ETHTOOL_GRINGPARAM`: descriptor ring sizes (current and maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ring {
    pub rx: u32,
    pub rx_max: u32,
    pub rx_mini: u32,
    pub rx_mini_max: u32,
    pub rx_jumbo: u32,
    pub rx_jumbo_max: u32,
    pub tx: u32,
    pub tx_max: u32,
}

/// `ETHTOOL_GCHANNELS`: queue counts (current and maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channels {
    pub rx: u32,
    pub tx: u32,
    pub other: u32,
    pub combined: u32,
    pub max_rx: u32,
    pub max_tx: u32,
    pub max_other: u32,
    pub max_combined: u32,
}

/// `ETHTOOL_GCOALESCE`: the commonly tuned interrupt-coalescing fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coalesce {
    pub rx_usecs: u32,
    pub rx_max_frames: u32,
    pub tx_usecs: u32,
    pub tx_max_frames: u32,
    pub adaptive_rx: bool,
    pub adaptive_tx: bool,
    pub rx_usecs_irq: u32,
    pub tx_usecs_irq: u32,
    pub pkt_rate_low: u32,
    pub pkt_rate_high: u32,
    pub rate_sample_interval: u32,
}

/// The coalescing fields wirespeed sets (`ethtool -C IF adaptive-rx on rx-usecs N tx-usecs N`);
/// `None` leaves a field as the driver has it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoalesceSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_rx: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_usecs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_usecs: Option<u32>,
}

impl CoalesceSet {
    /// True when no field is requested.
    pub fn is_empty(&self) -> bool {
        self.adaptive_rx.is_none() && self.rx_usecs.is_none() && self.tx_usecs.is_none()
    }

    /// The values `c` holds for the fields this set names (what a journal saves before a write).
    pub fn current_in(&self, c: &Coalesce) -> CoalesceSet {
        CoalesceSet {
            adaptive_rx: self.adaptive_rx.map(|_| c.adaptive_rx),
            rx_usecs: self.rx_usecs.map(|_| c.rx_usecs),
            tx_usecs: self.tx_usecs.map(|_| c.tx_usecs),
        }
    }

    /// True when `c` holds every field this set names.
    pub fn holds_in(&self, c: &Coalesce) -> bool {
        self.current_in(c) == *self
    }

    /// `c` with this set's fields changed.
    pub fn applied_to(&self, c: &Coalesce) -> Coalesce {
        Coalesce {
            adaptive_rx: self.adaptive_rx.unwrap_or(c.adaptive_rx),
            rx_usecs: self.rx_usecs.unwrap_or(c.rx_usecs),
            tx_usecs: self.tx_usecs.unwrap_or(c.tx_usecs),
            ..*c
        }
    }

    /// The fields as `ethtool -C` takes them: `adaptive-rx on rx-usecs 64 tx-usecs 64`.
    pub fn ethtool_args(&self) -> String {
        let mut parts = Vec::new();
        if let Some(a) = self.adaptive_rx {
            parts.push(format!("adaptive-rx {}", if a { "on" } else { "off" }));
        }
        if let Some(u) = self.rx_usecs {
            parts.push(format!("rx-usecs {u}"));
        }
        if let Some(u) = self.tx_usecs {
            parts.push(format!("tx-usecs {u}"));
        }
        parts.join(" ")
    }
}

/// `ETHTOOL_GPAUSEPARAM`: Ethernet flow control (pause frames), `ethtool -a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    pub autoneg: bool,
    /// The NIC honours pause frames from the switch (stops sending when told).
    pub rx: bool,
    /// The NIC sends pause frames when its receive buffers fill.
    pub tx: bool,
}

/// The flow-control directions wirespeed sets (`ethtool -A IF rx on tx off`); `None` leaves a
/// direction as the driver has it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx: Option<bool>,
}

impl PauseSet {
    pub fn is_empty(&self) -> bool {
        self.rx.is_none() && self.tx.is_none()
    }

    /// The values `p` holds for the directions this set names.
    pub fn current_in(&self, p: &Pause) -> PauseSet {
        PauseSet {
            rx: self.rx.map(|_| p.rx),
            tx: self.tx.map(|_| p.tx),
        }
    }

    pub fn holds_in(&self, p: &Pause) -> bool {
        self.current_in(p) == *self
    }

    /// The directions as `ethtool -A` takes them: `rx on tx off`.
    pub fn ethtool_args(&self) -> String {
        let on = |b: bool| if b { "on" } else { "off" };
        let mut parts = Vec::new();
        if let Some(r) = self.rx {
            parts.push(format!("rx {}", on(r)));
        }
        if let Some(t) = self.tx {
            parts.push(format!("tx {}", on(t)));
        }
        parts.join(" ")
    }
}

/// One named offload/feature (`ethtool -k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    pub active: bool,
    /// False when the feature is `[fixed]` (not in the device's changeable set).
    pub changeable: bool,
}

/// Whether the NIC splits TCP headers from payload into separate buffers (ethtool's ring
/// parameter `tcp-data-split`, Linux 6.0+ over netlink): what zero-copy receive needs off
/// loopback, since only a payload in whole pages can be mapped into the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpDataSplit {
    /// The driver answers but does not say (or decides per packet).
    Unknown,
    Off,
    On,
}

impl TcpDataSplit {
    /// From `ETHTOOL_A_RINGS_TCP_DATA_SPLIT` (0 unknown, 1 disabled, 2 enabled).
    pub fn from_raw(v: u8) -> TcpDataSplit {
        match v {
            1 => TcpDataSplit::Off,
            2 => TcpDataSplit::On,
            _ => TcpDataSplit::Unknown,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            TcpDataSplit::Unknown => "unknown",
            TcpDataSplit::Off => "off",
            TcpDataSplit::On => "on",
        }
    }
}

/// Whatever the kernel answered for one interface; each part `None` when not answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EthtoolFacts {
    pub drvinfo: Option<DrvInfo>,
    pub ring: Option<Ring>,
    pub channels: Option<Channels>,
    pub coalesce: Option<Coalesce>,
    pub features: Option<BTreeMap<String, Feature>>,
    #[serde(default)]
    pub pause: Option<Pause>,
    /// `tcp-data-split` of the rings (netlink only; `None` where the kernel or driver does not
    /// report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_data_split: Option<TcpDataSplit>,
}

impl EthtoolFacts {
    pub fn is_empty(&self) -> bool {
        self.pause.is_none()
            && self.tcp_data_split.is_none()
            && self.drvinfo.is_none()
            && self.ring.is_none()
            && self.channels.is_none()
            && self.coalesce.is_none()
            && self.features.is_none()
    }

    /// Whether a named feature is active (`Some(true)`), off, or not reported.
    pub fn feature(&self, name: &str) -> Option<bool> {
        self.features.as_ref()?.get(name).map(|f| f.active)
    }
}

/// Directory of one interface's ethtool answers inside a snapshot.
pub fn snapshot_dir(iface: &str) -> String {
    format!("/wirespeed/ethtool/{iface}")
}

fn store<T: Serialize>(root: &Root, iface: &str, part: &str, v: &Option<T>) {
    if let Some(v) = v {
        if let Ok(bytes) = serde_json::to_vec_pretty(v) {
            root.record_synthetic(&format!("{}/{part}.json", snapshot_dir(iface)), &bytes);
        }
    }
}

fn load<T: for<'de> Deserialize<'de>>(root: &Root, iface: &str, part: &str) -> Option<T> {
    let text = root
        .read(&format!("{}/{part}.json", snapshot_dir(iface)))
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// The ethtool facts of `iface`: ioctls on a live root (stored into the recording when the root
/// records), answer files in any other root. `None` when nothing at all was answered.
pub fn collect_ethtool(root: &Root, iface: &str) -> Option<EthtoolFacts> {
    let facts = if root.is_live() {
        let f = sys::query(iface);
        store(root, iface, "drvinfo", &f.drvinfo);
        store(root, iface, "ring", &f.ring);
        store(root, iface, "channels", &f.channels);
        store(root, iface, "coalesce", &f.coalesce);
        store(root, iface, "features", &f.features);
        store(root, iface, "pause", &f.pause);
        store(root, iface, "tcp_data_split", &f.tcp_data_split);
        f
    } else {
        EthtoolFacts {
            drvinfo: load(root, iface, "drvinfo"),
            ring: load(root, iface, "ring"),
            channels: load(root, iface, "channels"),
            coalesce: load(root, iface, "coalesce"),
            features: load(root, iface, "features"),
            pause: load(root, iface, "pause"),
            tcp_data_split: load(root, iface, "tcp_data_split"),
        }
    };
    (!facts.is_empty()).then_some(facts)
}

/// Ring sizes of `iface` as the running kernel reports them (`ethtool -g`); an error (often
/// `EOPNOTSUPP`) when the driver does not answer, `InvalidInput` for a name no interface can have.
pub fn get_ring(iface: &str) -> io::Result<Ring> {
    sys::Sock::open()?.ring(iface)
}

/// Set the rx/tx ring sizes of `iface` (`ethtool -G IF rx RX tx TX`), keeping the mini and jumbo
/// rings as they are.
pub fn set_ring(iface: &str, rx: u32, tx: u32) -> io::Result<()> {
    let s = sys::Sock::open()?;
    let cur = s.ring(iface)?;
    s.set_ring(iface, &Ring { rx, tx, ..cur })
}

/// Interrupt coalescing of `iface` as the running kernel reports it (`ethtool -c`); an error
/// (often `EOPNOTSUPP`) when the driver does not answer.
pub fn get_coalesce(iface: &str) -> io::Result<Coalesce> {
    let s = sys::Sock::open()?;
    Ok(sys::coalesce_of(&s.coalesce_words(iface)?))
}

/// Change the fields `set` names (`ethtool -C IF ...`): the whole `struct ethtool_coalesce` is
/// read with `ETHTOOL_GCOALESCE`, only those fields are changed, and it is written back with
/// `ETHTOOL_SCOALESCE`, so every other field keeps the driver's value. A driver that does not
/// implement coalescing answers `EOPNOTSUPP`; one that refuses a value, `EINVAL`.
pub fn set_coalesce(iface: &str, set: &CoalesceSet) -> io::Result<()> {
    let s = sys::Sock::open()?;
    let mut w = s.coalesce_words(iface)?;
    sys::put_coalesce(&mut w, set);
    s.set_coalesce_words(iface, &w)
}

/// Flow control of `iface` as the running kernel reports it (`ethtool -a`); an error (often
/// `EOPNOTSUPP`) when the driver does not answer.
pub fn get_pause(iface: &str) -> io::Result<Pause> {
    sys::Sock::open()?.pause(iface)
}

/// Set the flow-control directions `set` names (`ethtool -A IF rx on|off tx on|off`), keeping
/// the other direction and pause autonegotiation as the driver has them (`ETHTOOL_GPAUSEPARAM`,
/// then `ETHTOOL_SPAUSEPARAM`). A driver without flow control (veth, virtio) answers
/// `EOPNOTSUPP`.
pub fn set_pause(iface: &str, set: &PauseSet) -> io::Result<()> {
    let s = sys::Sock::open()?;
    let cur = s.pause(iface)?;
    s.set_pause(
        iface,
        &Pause {
            rx: set.rx.unwrap_or(cur.rx),
            tx: set.tx.unwrap_or(cur.tx),
            ..cur
        },
    )
}

/// The kernel's name of the feature `ethtool -K IF ntuple on` sets (accelerated RFS needs it).
pub const NTUPLE: &str = "rx-ntuple-filter";

/// The name `ethtool -K` takes for a kernel feature name: `ntuple` for `rx-ntuple-filter`;
/// any other name as it is (ethtool takes the kernel's names too).
pub fn feature_arg(name: &str) -> &str {
    if name == NTUPLE {
        "ntuple"
    } else {
        name
    }
}

/// One named feature of `iface` as the running kernel reports it (`ethtool -k`): the feature
/// string set (`ETHTOOL_GSSET_INFO` + `ETHTOOL_GSTRINGS`) gives its bit, `ETHTOOL_GFEATURES`
/// its state. A name the kernel does not list is `EOPNOTSUPP`.
pub fn get_feature(iface: &str, name: &str) -> io::Result<Feature> {
    let s = sys::Sock::open()?;
    let (index, count) = s.feature_index(iface, name)?;
    s.feature_at(iface, index, count)
}

/// Turn one named feature of `iface` on or off (`ethtool -K IF ntuple on`) with
/// `ETHTOOL_SFEATURES`, whose mask names that feature's bit alone, so no other feature is
/// touched. A feature the device cannot change (`[fixed]`, as `rx-ntuple-filter` on veth and
/// lo) or that the kernel does not list is `EOPNOTSUPP`; a driver that keeps it as it was
/// (the kernel's "wish" answer) is an error naming the feature.
pub fn set_feature(iface: &str, name: &str, on: bool) -> io::Result<()> {
    let s = sys::Sock::open()?;
    let (index, count) = s.feature_index(iface, name)?;
    if !s.feature_at(iface, index, count)?.changeable {
        return Err(io::Error::from(rustix::io::Errno::OPNOTSUPP));
    }
    s.set_feature_at(iface, index, count, on)?;
    if s.feature_at(iface, index, count)?.active != on {
        return Err(io::Error::other(format!(
            "the driver kept {name} {}",
            if on { "off" } else { "on" }
        )));
    }
    Ok(())
}

/// The ioctl side.
mod sys {
    use super::*;
    use rustix::ioctl::{ioctl, Opcode, Updater};
    use rustix::net::{socket_with, AddressFamily, SocketFlags, SocketType};
    use std::io;
    use std::os::fd::OwnedFd;

    const SIOCETHTOOL: Opcode = 0x8946;
    const ETHTOOL_GDRVINFO: u32 = 0x03;
    const ETHTOOL_GCOALESCE: u32 = 0x0e;
    const ETHTOOL_SCOALESCE: u32 = 0x0f;
    const ETHTOOL_GRINGPARAM: u32 = 0x10;
    const ETHTOOL_GPAUSEPARAM: u32 = 0x12;
    const ETHTOOL_SRINGPARAM: u32 = 0x11;
    const ETHTOOL_SPAUSEPARAM: u32 = 0x13;
    const ETHTOOL_GSTRINGS: u32 = 0x1b;
    const ETHTOOL_GSSET_INFO: u32 = 0x37;
    const ETHTOOL_GFEATURES: u32 = 0x3a;
    const ETHTOOL_SFEATURES: u32 = 0x3b;
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    const ETH_SS_FEATURES: u32 = 4;
    const ETH_GSTRING_LEN: usize = 32;
    const IFNAMSIZ: usize = 16;
    /// Upper bound on the feature count we accept from the kernel (today ~70).
    const MAX_FEATURES: u32 = 4096;

    #[repr(C)]
    struct IfReq {
        name: [u8; IFNAMSIZ],
        data: *mut u8,
        _pad: [u8; 16],
    }

    pub(super) struct Sock {
        fd: OwnedFd,
    }

    impl Sock {
        pub(super) fn open() -> io::Result<Sock> {
            let fd = socket_with(
                AddressFamily::INET,
                SocketType::DGRAM,
                SocketFlags::CLOEXEC,
                None,
            )?;
            Ok(Sock { fd })
        }

        /// Issue SIOCETHTOOL for `iface` with `buf` as the command buffer (first u32 = command).
        fn ioctl(&self, iface: &str, buf: &mut [u8]) -> io::Result<()> {
            let mut req = IfReq {
                name: [0; IFNAMSIZ],
                data: buf.as_mut_ptr(),
                _pad: [0; 16],
            };
            let name = iface.as_bytes();
            if name.is_empty() || name.len() >= IFNAMSIZ || name.contains(&0) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("bad interface name {iface:?}"),
                ));
            }
            req.name[..name.len()].copy_from_slice(name);
            // SAFETY: SIOCETHTOOL reads and writes an ifreq, which `req` is; its data pointer refers
            // to `buf`, which outlives the call and is as large as the command structure the kernel
            // reads and writes for the command in its first word (callers size it per command).
            unsafe { ioctl(&self.fd, Updater::<SIOCETHTOOL, IfReq>::new(&mut req)) }?;
            Ok(())
        }

        /// A command whose structure is `cmd` + u32 words: sends `words`, returns the words
        /// after `cmd` as the kernel left them.
        fn words(&self, iface: &str, cmd: u32, words: &[u32]) -> io::Result<Vec<u32>> {
            let mut buf: Vec<u8> = std::iter::once(cmd)
                .chain(words.iter().copied())
                .flat_map(u32::to_ne_bytes)
                .collect();
            self.ioctl(iface, &mut buf)?;
            Ok(buf[4..]
                .chunks_exact(4)
                .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        }

        /// `struct ethtool_ringparam`: cmd, then the four maxima and the four current sizes.
        pub(super) fn ring(&self, iface: &str) -> io::Result<Ring> {
            let w = self.words(iface, ETHTOOL_GRINGPARAM, &[0; 8])?;
            Ok(Ring {
                rx_max: w[0],
                rx_mini_max: w[1],
                rx_jumbo_max: w[2],
                tx_max: w[3],
                rx: w[4],
                rx_mini: w[5],
                rx_jumbo: w[6],
                tx: w[7],
            })
        }

        pub(super) fn set_ring(&self, iface: &str, r: &Ring) -> io::Result<()> {
            let w = [
                r.rx_max,
                r.rx_mini_max,
                r.rx_jumbo_max,
                r.tx_max,
                r.rx,
                r.rx_mini,
                r.rx_jumbo,
                r.tx,
            ];
            self.words(iface, ETHTOOL_SRINGPARAM, &w).map(drop)
        }

        /// `struct ethtool_coalesce` after its cmd word: 22 u32 fields, as the kernel left them.
        pub(super) fn coalesce_words(&self, iface: &str) -> io::Result<Vec<u32>> {
            let w = self.words(iface, ETHTOOL_GCOALESCE, &[0; 22])?;
            if w.len() != 22 {
                return Err(io::Error::other("short ethtool_coalesce"));
            }
            Ok(w)
        }

        pub(super) fn set_coalesce_words(&self, iface: &str, w: &[u32]) -> io::Result<()> {
            self.words(iface, ETHTOOL_SCOALESCE, w).map(drop)
        }
    }

    // Word indices in `struct ethtool_coalesce` after `cmd`.
    const RX_USECS: usize = 0;
    const TX_USECS: usize = 4;
    const USE_ADAPTIVE_RX: usize = 9;

    /// The commonly tuned fields of the 22 words.
    pub(super) fn coalesce_of(w: &[u32]) -> Coalesce {
        Coalesce {
            rx_usecs: w[RX_USECS],
            rx_max_frames: w[1],
            rx_usecs_irq: w[2],
            tx_usecs: w[TX_USECS],
            tx_max_frames: w[5],
            tx_usecs_irq: w[6],
            adaptive_rx: w[USE_ADAPTIVE_RX] != 0,
            adaptive_tx: w[10] != 0,
            pkt_rate_low: w[11],
            pkt_rate_high: w[16],
            rate_sample_interval: w[21],
        }
    }

    /// Change the words `set` names, leaving every other one as read.
    pub(super) fn put_coalesce(w: &mut [u32], set: &CoalesceSet) {
        if let Some(u) = set.rx_usecs {
            w[RX_USECS] = u;
        }
        if let Some(u) = set.tx_usecs {
            w[TX_USECS] = u;
        }
        if let Some(a) = set.adaptive_rx {
            w[USE_ADAPTIVE_RX] = u32::from(a);
        }
    }

    fn cstr(b: &[u8]) -> String {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    }

    fn drvinfo(s: &Sock, iface: &str) -> Option<DrvInfo> {
        // struct ethtool_drvinfo: cmd, driver[32], version[32], fw_version[32], bus_info[32],
        // erom_version[32], reserved2[12], n_priv_flags, n_stats, testinfo_len, eedump_len,
        // regdump_len = 4 + 160 + 12 + 20 = 196 bytes.
        let mut buf = vec![0u8; 196];
        buf[..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
        s.ioctl(iface, &mut buf).ok()?;
        Some(DrvInfo {
            driver: cstr(&buf[4..36]),
            version: cstr(&buf[36..68]),
            fw_version: cstr(&buf[68..100]),
            bus_info: cstr(&buf[100..132]),
        })
    }

    fn channels(s: &Sock, iface: &str) -> Option<Channels> {
        let w = s.words(iface, ETHTOOL_GCHANNELS, &[0; 8]).ok()?;
        Some(Channels {
            max_rx: w[0],
            max_tx: w[1],
            max_other: w[2],
            max_combined: w[3],
            rx: w[4],
            tx: w[5],
            other: w[6],
            combined: w[7],
        })
    }

    /// The three words of `struct ethtool_pauseparam` after cmd: autoneg, rx_pause, tx_pause.
    pub(super) fn pause_words(p: &Pause) -> [u32; 3] {
        [u32::from(p.autoneg), u32::from(p.rx), u32::from(p.tx)]
    }

    impl Sock {
        /// `struct ethtool_pauseparam`: cmd, autoneg, rx_pause, tx_pause.
        pub(super) fn pause(&self, iface: &str) -> io::Result<Pause> {
            let w = self.words(iface, ETHTOOL_GPAUSEPARAM, &[0; 3])?;
            Ok(Pause {
                autoneg: w[0] != 0,
                rx: w[1] != 0,
                tx: w[2] != 0,
            })
        }

        pub(super) fn set_pause(&self, iface: &str, p: &Pause) -> io::Result<()> {
            self.words(iface, ETHTOOL_SPAUSEPARAM, &pause_words(p))
                .map(drop)
        }
    }

    fn pause(s: &Sock, iface: &str) -> Option<Pause> {
        s.pause(iface).ok()
    }

    fn coalesce(s: &Sock, iface: &str) -> Option<Coalesce> {
        s.coalesce_words(iface).ok().map(|w| coalesce_of(&w))
    }

    fn bad(what: &str) -> io::Error {
        io::Error::other(format!("malformed {what} answer"))
    }

    /// `struct ethtool_sfeatures` asking for feature `index` (of `count`) alone to be `on`:
    /// cmd, size, then `{valid, requested}` per 32-feature block, with only the feature's bit
    /// valid. The kernel takes exactly its own block count (`EINVAL` otherwise), which is the
    /// feature string set's size in blocks.
    pub(super) fn sfeatures_buf(index: usize, count: usize, on: bool) -> Vec<u8> {
        let blocks = count.max(index + 1).div_ceil(32);
        let bit = 1u32 << (index % 32);
        let mut w = vec![ETHTOOL_SFEATURES, blocks as u32];
        for b in 0..blocks {
            let mine = b == index / 32;
            w.push(if mine { bit } else { 0 });
            w.push(if mine && on { bit } else { 0 });
        }
        w.into_iter().flat_map(u32::to_ne_bytes).collect()
    }

    /// Feature `index`'s state in a `struct ethtool_gfeatures` answer (cmd, size, then
    /// `{available, requested, active, never_changed}` per block).
    pub(super) fn feature_in(gfeatures: &[u8], index: usize) -> Option<Feature> {
        let (b, bit) = (index / 32, 1u32 << (index % 32));
        let word = |f: usize| {
            let o = 8 + b * 16 + f * 4;
            let c = gfeatures.get(o..o + 4)?;
            Some(u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        };
        Some(Feature {
            active: word(2)? & bit != 0,
            changeable: word(0)? & bit != 0,
        })
    }

    impl Sock {
        /// The names of the feature string set, in bit order.
        fn feature_names(&self, iface: &str) -> io::Result<Vec<String>> {
            // struct ethtool_sset_info: cmd, reserved, u64 sset_mask, u32 data[].
            let mut info = vec![0u8; 24];
            info[..4].copy_from_slice(&ETHTOOL_GSSET_INFO.to_ne_bytes());
            info[8..16].copy_from_slice(&(1u64 << ETH_SS_FEATURES).to_ne_bytes());
            self.ioctl(iface, &mut info)?;
            let mask = u64::from_ne_bytes(info[8..16].try_into().map_err(|_| bad("sset"))?);
            if mask & (1 << ETH_SS_FEATURES) == 0 {
                return Err(io::Error::from(rustix::io::Errno::OPNOTSUPP));
            }
            let count = u32::from_ne_bytes(info[16..20].try_into().map_err(|_| bad("sset"))?);
            if count == 0 || count > MAX_FEATURES {
                return Err(bad("feature count"));
            }
            // struct ethtool_gstrings: cmd, string_set, len, data[len * 32].
            let n = count as usize;
            let mut strings = vec![0u8; 12 + n * ETH_GSTRING_LEN];
            strings[..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
            strings[4..8].copy_from_slice(&ETH_SS_FEATURES.to_ne_bytes());
            strings[8..12].copy_from_slice(&count.to_ne_bytes());
            self.ioctl(iface, &mut strings)?;
            Ok((0..n)
                .map(|i| cstr(&strings[12 + i * ETH_GSTRING_LEN..12 + (i + 1) * ETH_GSTRING_LEN]))
                .collect())
        }

        /// The `struct ethtool_gfeatures` answer for `count` features.
        fn gfeatures(&self, iface: &str, count: usize) -> io::Result<Vec<u8>> {
            let blocks = count.div_ceil(32);
            let mut feats = vec![0u8; 8 + blocks * 16];
            feats[..4].copy_from_slice(&ETHTOOL_GFEATURES.to_ne_bytes());
            feats[4..8].copy_from_slice(&(blocks as u32).to_ne_bytes());
            self.ioctl(iface, &mut feats)?;
            Ok(feats)
        }

        /// The bit of the feature called `name`, and how many features there are;
        /// `EOPNOTSUPP` when the kernel does not list it.
        pub(super) fn feature_index(&self, iface: &str, name: &str) -> io::Result<(usize, usize)> {
            let names = self.feature_names(iface)?;
            let index = names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| io::Error::from(rustix::io::Errno::OPNOTSUPP))?;
            Ok((index, names.len()))
        }

        pub(super) fn feature_at(
            &self,
            iface: &str,
            index: usize,
            count: usize,
        ) -> io::Result<Feature> {
            feature_in(&self.gfeatures(iface, count)?, index).ok_or_else(|| bad("features"))
        }

        pub(super) fn set_feature_at(
            &self,
            iface: &str,
            index: usize,
            count: usize,
            on: bool,
        ) -> io::Result<()> {
            self.ioctl(iface, &mut sfeatures_buf(index, count, on))
        }
    }

    fn features(s: &Sock, iface: &str) -> Option<BTreeMap<String, Feature>> {
        let names = s.feature_names(iface).ok()?;
        let feats = s.gfeatures(iface, names.len()).ok()?;
        let mut out = BTreeMap::new();
        for (i, name) in names.into_iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            out.insert(name, feature_in(&feats, i)?);
        }
        Some(out)
    }

    /// Everything the kernel answers for `iface`.
    pub fn query(iface: &str) -> EthtoolFacts {
        let tcp_data_split = crate::link::tcp_data_split(iface)
            .ok()
            .flatten()
            .map(TcpDataSplit::from_raw);
        let Ok(s) = Sock::open() else {
            return EthtoolFacts {
                tcp_data_split,
                ..EthtoolFacts::default()
            };
        };
        EthtoolFacts {
            tcp_data_split,
            drvinfo: drvinfo(&s, iface),
            ring: s.ring(iface).ok(),
            channels: channels(&s, iface),
            coalesce: coalesce(&s, iface),
            features: features(&s, iface),
            pause: pause(&s, iface),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_query_answers_or_skips() {
        let root = Root::live();
        let Some(iface) = root
            .list_opt("/sys/class/net")
            .into_iter()
            .find(|n| n != "lo" && root.exists(&format!("/sys/class/net/{n}/device")))
        else {
            eprintln!("SKIP: no interface with a device on this host");
            return;
        };
        match collect_ethtool(&root, &iface) {
            Some(f) => {
                if let Some(d) = &f.drvinfo {
                    assert!(!d.driver.is_empty());
                }
                if let Some(feats) = &f.features {
                    assert!(!feats.is_empty());
                }
                if let Some(r) = f.ring {
                    assert!(r.rx <= r.rx_max || r.rx_max == 0);
                }
            }
            None => eprintln!("SKIP: the kernel answered no ethtool query for {iface}"),
        }
        assert_eq!(
            sys::query("this-name-is-far-too-long-for-ifnamsiz"),
            EthtoolFacts::default()
        );
    }

    #[test]
    fn ring_rejects_bad_names_and_answers_or_errors_for_lo() {
        assert!(get_ring("").is_err());
        assert!(get_ring("a-name-far-too-long-for-ifnamsiz").is_err());
        assert!(set_ring("a-name-far-too-long-for-ifnamsiz", 1, 1).is_err());
        // lo has no rings: the kernel answers with an error, never a panic or garbage
        match get_ring("lo") {
            Ok(r) => assert!(r.rx <= r.rx_max || r.rx_max == 0),
            Err(e) => assert!(e.raw_os_error().is_some()),
        }
    }

    #[test]
    fn coalesce_set_changes_only_the_requested_words() {
        let mut w: Vec<u32> = (100..122).collect();
        let set = CoalesceSet {
            adaptive_rx: Some(true),
            rx_usecs: Some(64),
            tx_usecs: None,
        };
        sys::put_coalesce(&mut w, &set);
        let want: Vec<u32> = (100..122)
            .enumerate()
            .map(|(i, v)| match i {
                0 => 64,
                9 => 1,
                _ => v,
            })
            .collect();
        assert_eq!(w, want);
        let c = sys::coalesce_of(&w);
        assert!(set.holds_in(&c));
        assert_eq!(c.tx_usecs, 104);
        let old = set.current_in(&sys::coalesce_of(&(100..122).collect::<Vec<u32>>()));
        assert_eq!(old.rx_usecs, Some(100));
        assert_eq!(old.adaptive_rx, Some(true)); // word 9 was 109: nonzero
        assert_eq!(old.tx_usecs, None);
        assert_eq!(set.ethtool_args(), "adaptive-rx on rx-usecs 64");
        assert!(CoalesceSet::default().is_empty());
        assert_eq!(set.applied_to(&c), c);
    }

    #[test]
    fn pause_words_and_refusals() {
        let p = Pause {
            autoneg: true,
            rx: false,
            tx: true,
        };
        assert_eq!(sys::pause_words(&p), [1, 0, 1]);
        assert!(get_pause("a-name-far-too-long-for-ifnamsiz").is_err());
        let both = PauseSet {
            rx: Some(true),
            tx: Some(true),
        };
        assert!(set_pause("a-name-far-too-long-for-ifnamsiz", &both).is_err());
        // lo has no flow control: an error from the kernel, never a panic
        if let Err(e) = set_pause("lo", &both) {
            assert!(e.raw_os_error().is_some());
        }
        let rx_only = PauseSet {
            rx: Some(false),
            tx: None,
        };
        assert_eq!(rx_only.ethtool_args(), "rx off");
        assert_eq!(both.ethtool_args(), "rx on tx on");
        assert_eq!(
            rx_only.current_in(&p),
            PauseSet {
                rx: Some(false),
                tx: None
            }
        );
        assert!(rx_only.holds_in(&p));
        assert!(!both.holds_in(&p));
        assert!(PauseSet::default().is_empty());
    }

    #[test]
    fn sfeatures_names_only_the_one_bit() {
        let words = |b: Vec<u8>| -> Vec<u32> {
            b.chunks_exact(4)
                .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        // bit 3 of 64 features on: cmd, two blocks (the kernel wants all of its own), the
        // first with valid = requested = bit 3, the second naming nothing
        assert_eq!(
            words(sys::sfeatures_buf(3, 64, true)),
            [0x3b, 2, 8, 8, 0, 0]
        );
        // bit 35 of 66 off: three blocks, only the second names bit 3 (requested 0)
        assert_eq!(
            words(sys::sfeatures_buf(35, 66, false)),
            [0x3b, 3, 0, 0, 8, 0, 0, 0]
        );
        assert_eq!(
            words(sys::sfeatures_buf(31, 32, true)),
            [0x3b, 1, 1 << 31, 1 << 31]
        );
    }

    #[test]
    fn gfeatures_answers_are_read_per_bit_and_short_ones_refused() {
        // two blocks: block 1 has bit 2 available and active, bit 4 available only
        let words: [u32; 10] = [0x3a, 2, 0, 0, 0, 0, 0b10100, 0, 0b100, 0];
        let buf: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let f = |i| sys::feature_in(&buf, i);
        assert_eq!(
            f(34),
            Some(Feature {
                active: true,
                changeable: true
            })
        );
        assert_eq!(
            f(36),
            Some(Feature {
                active: false,
                changeable: true
            })
        );
        assert_eq!(
            f(1),
            Some(Feature {
                active: false,
                changeable: false
            })
        );
        assert_eq!(f(64), None, "past the answer");
        assert_eq!(feature_arg(NTUPLE), "ntuple");
        assert_eq!(feature_arg("rx-gro-hw"), "rx-gro-hw");
    }

    #[test]
    fn ntuple_on_lo_is_not_supported_and_bad_names_are_refused() {
        assert!(get_feature("a-name-far-too-long-for-ifnamsiz", NTUPLE).is_err());
        assert!(set_feature("a-name-far-too-long-for-ifnamsiz", NTUPLE, true).is_err());
        // lo lists rx-ntuple-filter as fixed off: reading answers, setting is not supported
        let Ok(f) = get_feature("lo", NTUPLE) else {
            eprintln!("SKIP: the kernel lists no features for lo");
            return;
        };
        assert!(!f.changeable && !f.active, "{f:?}");
        let e = set_feature("lo", NTUPLE, true).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::OPNOTSUPP.raw_os_error())
        );
        assert_eq!(
            get_feature("lo", "no-such-feature")
                .unwrap_err()
                .raw_os_error(),
            Some(rustix::io::Errno::OPNOTSUPP.raw_os_error())
        );
        assert_eq!(get_feature("lo", NTUPLE).unwrap(), f, "nothing changed");
    }

    #[test]
    fn coalesce_rejects_bad_names_and_answers_or_errors_for_lo() {
        assert!(get_coalesce("a-name-far-too-long-for-ifnamsiz").is_err());
        let set = CoalesceSet {
            rx_usecs: Some(1),
            ..CoalesceSet::default()
        };
        assert!(set_coalesce("a-name-far-too-long-for-ifnamsiz", &set).is_err());
        // lo does not coalesce: the kernel answers with an error, never a panic or garbage
        if let Err(e) = get_coalesce("lo") {
            assert!(e.raw_os_error().is_some());
        }
    }

    #[test]
    fn recording_root_stores_answers_and_snapshot_reads_them() {
        let live = Root::live().recording();
        let Some(iface) = live
            .list_opt("/sys/class/net")
            .into_iter()
            .find(|n| n != "lo" && live.exists(&format!("/sys/class/net/{n}/device")))
        else {
            eprintln!("SKIP: no interface with a device on this host");
            return;
        };
        let Some(facts) = collect_ethtool(&live, &iface) else {
            eprintln!("SKIP: the kernel answered no ethtool query for {iface}");
            return;
        };
        let rec = live.recorded().unwrap();
        let t = tempfile::tempdir().unwrap();
        for (path, bytes) in &rec.synthetic {
            let p = t.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        assert_eq!(collect_ethtool(&Root::new(t.path()), &iface), Some(facts));
    }

    #[test]
    fn snapshot_without_answers_is_unknown() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(collect_ethtool(&Root::new(t.path()), "eth0"), None);
        let d = t.path().join("wirespeed/ethtool/eth0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("ring.json"), r#"{"rx":1024,"rx_max":8192,"rx_mini":0,"rx_mini_max":0,"rx_jumbo":0,"rx_jumbo_max":0,"tx":1024,"tx_max":8192}"#).unwrap();
        std::fs::write(d.join("channels.json"), "garbage").unwrap();
        let f = collect_ethtool(&Root::new(t.path()), "eth0").unwrap();
        assert_eq!(f.ring.unwrap().rx_max, 8192);
        assert_eq!(f.channels, None);
    }
}
