//! Network stack facts: socket buffer and TCP sysctls, congestion control, qdisc, backlog,
//! `/proc/net/softnet_stat` drops and time squeezes per CPU, TCP counters from `/proc/net/snmp`,
//! and whether irqbalance runs (process names from `/proc/*/comm` only).

use crate::{CpuSet, Root};
use serde::{Deserialize, Serialize};
pub use wirespeed_model::observation::{TcpRxDrops, UdpRx};

/// One CPU's row of `/proc/net/softnet_stat` (hex columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftnetCpu {
    /// The CPU: the last column on kernels that print it (5.10+ with 13 columns), else the n-th
    /// online CPU for the n-th row.
    pub cpu: Option<u32>,
    /// Packets processed (column 1).
    pub processed: u64,
    /// Packets dropped because the backlog queue was full (`netdev_max_backlog`) (column 2).
    pub dropped: u64,
    /// Times net_rx_action ran out of budget or time with work left (column 3).
    pub time_squeeze: u64,
    /// Received RPS IPIs (column 10), when printed.
    pub received_rps: Option<u64>,
    /// Flow-limit drops (column 11), when printed.
    pub flow_limit_count: Option<u64>,
}

/// `/proc/net/softnet_stat` that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("/proc/net/softnet_stat line {line}: {reason}")]
pub struct SoftnetError {
    pub line: usize,
    pub reason: String,
}

/// Parse `/proc/net/softnet_stat`. `online` maps rows to CPUs on kernels without the CPU column
/// (rows are printed for online CPUs in order).
pub fn parse_softnet_stat(
    text: &str,
    online: Option<&CpuSet>,
) -> Result<Vec<SoftnetCpu>, SoftnetError> {
    let online: Option<Vec<u32>> = online.map(|s| s.iter().collect());
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: &str| SoftnetError {
            line: i + 1,
            reason: reason.to_string(),
        };
        let cols: Vec<u64> = line
            .split_whitespace()
            .map(|t| u64::from_str_radix(t, 16))
            .collect::<Result<_, _>>()
            .map_err(|_| bad("not hexadecimal"))?;
        if cols.len() < 3 {
            return Err(bad("fewer than 3 columns"));
        }
        let row = out.len();
        let cpu = if cols.len() >= 13 {
            Some(u32::try_from(cols[12]).map_err(|_| bad("CPU column out of range"))?)
        } else {
            online.as_ref().and_then(|o| o.get(row).copied())
        };
        out.push(SoftnetCpu {
            cpu,
            processed: cols[0],
            dropped: cols[1],
            time_squeeze: cols[2],
            received_rps: cols.get(9).copied(),
            flow_limit_count: cols.get(10).copied(),
        });
    }
    Ok(out)
}

/// The CPU-numbered rows of `/proc/net/softnet_stat` through `root` (`online` as for
/// [`parse_softnet_stat`]); `None` when the file is missing, unreadable or does not parse, or a
/// row's CPU is unknown.
pub fn read_softnet(root: &Root, online: Option<&CpuSet>) -> Option<Vec<SoftnetCpu>> {
    let rows = parse_softnet_stat(&root.read(paths::SOFTNET_STAT).ok()?, online).ok()?;
    rows.iter().all(|r| r.cpu.is_some()).then_some(rows)
}

/// TCP's receive-side drop counters (`TcpExt` of `/proc/net/netstat`, since boot or since the
/// network namespace was made); `None` when the text has no `TcpExt` table. A counter the
/// kernel does not print reads 0.
pub fn parse_tcp_rx_drops(text: &str) -> Option<TcpRxDrops> {
    snmp_field(text, "TcpExt", "TCPBacklogDrop")
        .or_else(|| snmp_field(text, "TcpExt", "PruneCalled"))?;
    let get = |f| {
        snmp_field(text, "TcpExt", f)
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0)
    };
    Some(TcpRxDrops {
        backlog: get("TCPBacklogDrop"),
        rcvq: get("TCPRcvQDrop"),
        ofo: get("TCPOFODrop"),
        zero_window: get("TCPZeroWindowDrop"),
        pruned: get("RcvPruned"),
    })
}

/// [`parse_tcp_rx_drops`] of `/proc/net/netstat` through `root` (this process's network
/// namespace).
pub fn read_tcp_rx_drops(root: &Root) -> Option<TcpRxDrops> {
    parse_tcp_rx_drops(&root.read(paths::NETSTAT).ok()?)
}

/// UDP's receive counters of `/proc/net/snmp` text; `None` without a `Udp` table or either
/// counter.
pub fn parse_udp_rx(text: &str) -> Option<UdpRx> {
    let get = |f| snmp_field(text, "Udp", f).and_then(|v| u64::try_from(v).ok());
    Some(UdpRx {
        delivered: get("InDatagrams")?,
        rcvbuf_errors: get("RcvbufErrors")?,
    })
}

/// [`parse_udp_rx`] of `/proc/net/snmp` through `root` (this process's network namespace).
pub fn read_udp_rx(root: &Root) -> Option<UdpRx> {
    parse_udp_rx(&root.read(paths::SNMP).ok()?)
}

/// TCP counters of `/proc/net/snmp` (since boot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpCounters {
    pub in_segs: Option<u64>,
    pub out_segs: Option<u64>,
    pub retrans_segs: Option<u64>,
    pub in_errs: Option<u64>,
}

/// A `Proto: Name Name ...` / `Proto: v v ...` pair of `/proc/net/snmp` (or `netstat`), looked up
/// by protocol and field name.
pub fn snmp_field(text: &str, proto: &str, field: &str) -> Option<i64> {
    let prefix = format!("{proto}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        let names: Vec<&str> = names[prefix.len()..].split_whitespace().collect();
        let values: Vec<&str> = values[prefix.len()..].split_whitespace().collect();
        if let Some(i) = names.iter().position(|n| *n == field) {
            return values.get(i)?.parse().ok();
        }
    }
    None
}

/// TCP counters from `/proc/net/snmp` text.
pub fn parse_tcp_counters(text: &str) -> TcpCounters {
    let get = |f| snmp_field(text, "Tcp", f).and_then(|v| u64::try_from(v).ok());
    TcpCounters {
        in_segs: get("InSegs"),
        out_segs: get("OutSegs"),
        retrans_segs: get("RetransSegs"),
        in_errs: get("InErrs"),
    }
}

/// Parse a `min default max` triple (`tcp_rmem`, `tcp_wmem`).
pub fn parse_triple(s: &str) -> Option<[u64; 3]> {
    let v: Vec<u64> = s
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    <[u64; 3]>::try_from(v).ok()
}

/// The network stack's settings and counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackFacts {
    pub rmem_default: Option<u64>,
    pub rmem_max: Option<u64>,
    pub wmem_default: Option<u64>,
    pub wmem_max: Option<u64>,
    /// `net.ipv4.tcp_rmem`: min, default, max bytes.
    pub tcp_rmem: Option<[u64; 3]>,
    pub tcp_wmem: Option<[u64; 3]>,
    pub tcp_congestion_control: Option<String>,
    pub tcp_available_congestion_control: Option<Vec<String>>,
    /// Congestion-control algorithms the kernel ships as modules or built in, loaded or not
    /// (`tcp_*` in `/lib/modules/RELEASE/modules.dep` and `modules.builtin`): writing
    /// `tcp_congestion_control` loads such a module. `None` when neither file could be read
    /// (a captured tree without them): unknown, not "none".
    #[serde(default)]
    pub tcp_loadable_congestion_control: Option<Vec<String>>,
    pub default_qdisc: Option<String>,
    pub netdev_max_backlog: Option<u64>,
    pub netdev_budget: Option<u64>,
    pub netdev_budget_usecs: Option<u64>,
    pub tcp_mtu_probing: Option<u32>,
    pub tcp_timestamps: Option<u32>,
    pub tcp_sack: Option<u32>,
    pub tcp_window_scaling: Option<u32>,
    pub tcp_slow_start_after_idle: Option<u32>,
    /// `net.core.rps_sock_flow_entries`: the global flow table of RFS (0 = RFS off).
    #[serde(default)]
    pub rps_sock_flow_entries: Option<u64>,
    /// Per-CPU softnet counters; `None` when the file is missing or unreadable.
    pub softnet: Option<Vec<SoftnetCpu>>,
    pub tcp: Option<TcpCounters>,
    /// `None` when `/proc` shows no processes (a tree captured without them).
    pub irqbalance_running: Option<bool>,
    /// PIDs of irqbalance processes.
    pub irqbalance_pids: Vec<u32>,
}

impl StackFacts {
    pub fn softnet_dropped_total(&self) -> Option<u64> {
        self.softnet
            .as_ref()
            .map(|v| v.iter().map(|c| c.dropped).sum())
    }

    pub fn softnet_time_squeeze_total(&self) -> Option<u64> {
        self.softnet
            .as_ref()
            .map(|v| v.iter().map(|c| c.time_squeeze).sum())
    }
}

/// Host paths of the stack sysctls, for evidence and fixes.
pub mod paths {
    pub const RMEM_DEFAULT: &str = "/proc/sys/net/core/rmem_default";
    pub const RMEM_MAX: &str = "/proc/sys/net/core/rmem_max";
    pub const WMEM_DEFAULT: &str = "/proc/sys/net/core/wmem_default";
    pub const WMEM_MAX: &str = "/proc/sys/net/core/wmem_max";
    pub const TCP_RMEM: &str = "/proc/sys/net/ipv4/tcp_rmem";
    pub const TCP_WMEM: &str = "/proc/sys/net/ipv4/tcp_wmem";
    pub const TCP_CC: &str = "/proc/sys/net/ipv4/tcp_congestion_control";
    pub const TCP_CC_AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    pub const DEFAULT_QDISC: &str = "/proc/sys/net/core/default_qdisc";
    pub const NETDEV_MAX_BACKLOG: &str = "/proc/sys/net/core/netdev_max_backlog";
    pub const NETDEV_BUDGET: &str = "/proc/sys/net/core/netdev_budget";
    pub const NETDEV_BUDGET_USECS: &str = "/proc/sys/net/core/netdev_budget_usecs";
    pub const TCP_MTU_PROBING: &str = "/proc/sys/net/ipv4/tcp_mtu_probing";
    pub const TCP_TIMESTAMPS: &str = "/proc/sys/net/ipv4/tcp_timestamps";
    pub const TCP_SACK: &str = "/proc/sys/net/ipv4/tcp_sack";
    pub const TCP_WINDOW_SCALING: &str = "/proc/sys/net/ipv4/tcp_window_scaling";
    pub const RPS_SOCK_FLOW_ENTRIES: &str = "/proc/sys/net/core/rps_sock_flow_entries";
    pub const SOFTNET_STAT: &str = "/proc/net/softnet_stat";
    pub const SNMP: &str = "/proc/net/snmp";
    pub const NETSTAT: &str = "/proc/net/netstat";
    pub const PROC_COMM: &str = "/proc/*/comm";
}

/// PIDs whose `/proc/PID/comm` is `name`; `None` when `/proc` lists no process at all.
pub fn find_processes(root: &Root, name: &str) -> Option<Vec<u32>> {
    let mut any = false;
    let mut pids = Vec::new();
    for entry in root.list_opt("/proc") {
        let Ok(pid) = entry.parse::<u32>() else {
            continue;
        };
        let Some(comm) = root.read_opt(&format!("/proc/{pid}/comm")) else {
            continue;
        };
        any = true;
        if comm == name {
            pids.push(pid);
        }
    }
    any.then_some(pids)
}

/// Read the stack facts through `root`. `online` maps softnet rows to CPUs on old kernels.
pub fn collect_stack(root: &Root, online: Option<&CpuSet>) -> StackFacts {
    use paths::*;
    let irq = find_processes(root, "irqbalance");
    StackFacts {
        rmem_default: root.parse_opt(RMEM_DEFAULT),
        rmem_max: root.parse_opt(RMEM_MAX),
        wmem_default: root.parse_opt(WMEM_DEFAULT),
        wmem_max: root.parse_opt(WMEM_MAX),
        tcp_rmem: root.read_opt(TCP_RMEM).and_then(|s| parse_triple(&s)),
        tcp_wmem: root.read_opt(TCP_WMEM).and_then(|s| parse_triple(&s)),
        tcp_congestion_control: root.read_opt(TCP_CC),
        tcp_available_congestion_control: root
            .read_opt(TCP_CC_AVAILABLE)
            .map(|s| s.split_whitespace().map(str::to_string).collect()),
        tcp_loadable_congestion_control: None,
        default_qdisc: root.read_opt(DEFAULT_QDISC),
        netdev_max_backlog: root.parse_opt(NETDEV_MAX_BACKLOG),
        netdev_budget: root.parse_opt(NETDEV_BUDGET),
        netdev_budget_usecs: root.parse_opt(NETDEV_BUDGET_USECS),
        tcp_mtu_probing: root.parse_opt(TCP_MTU_PROBING),
        tcp_timestamps: root.parse_opt(TCP_TIMESTAMPS),
        tcp_sack: root.parse_opt(TCP_SACK),
        tcp_window_scaling: root.parse_opt(TCP_WINDOW_SCALING),
        tcp_slow_start_after_idle: root.parse_opt("/proc/sys/net/ipv4/tcp_slow_start_after_idle"),
        rps_sock_flow_entries: root.parse_opt(RPS_SOCK_FLOW_ENTRIES),
        softnet: root
            .read(SOFTNET_STAT)
            .ok()
            .and_then(|t| parse_softnet_stat(&t, online).ok()),
        tcp: root.read(SNMP).ok().map(|t| parse_tcp_counters(&t)),
        irqbalance_running: irq.as_ref().map(|p| !p.is_empty()),
        irqbalance_pids: irq.unwrap_or_default(),
    }
}

/// The congestion-control algorithms kernel `release` ships (`tcp_NAME` modules listed in
/// `/lib/modules/RELEASE/modules.dep` or `modules.builtin`); `None` when neither file reads.
pub fn shipped_congestion_control(root: &Root, release: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut read_any = false;
    for file in ["modules.dep", "modules.builtin"] {
        let Ok(text) = root.read(&format!("/lib/modules/{release}/{file}")) else {
            continue;
        };
        read_any = true;
        for line in text.lines() {
            let module = line.split(':').next().unwrap_or("");
            let base = module.rsplit('/').next().unwrap_or("");
            if let Some(rest) = base.strip_prefix("tcp_") {
                let name = rest.split(".ko").next().unwrap_or("");
                if !name.is_empty() && !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
            }
        }
    }
    read_any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softnet_new_and_old_formats() {
        let new = "00196f38 00000002 00000010 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n\
                   001425d9 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000005 00000000 00000000 00000003\n";
        let v = parse_softnet_stat(new, None).unwrap();
        assert_eq!(v[0].cpu, Some(0));
        assert_eq!(v[0].processed, 0x196f38);
        assert_eq!(v[0].dropped, 2);
        assert_eq!(v[0].time_squeeze, 16);
        assert_eq!(v[1].cpu, Some(3)); // CPU column, not row order
        assert_eq!(v[1].received_rps, Some(5));
        let old = "010247c3 00000000 0000000a 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n\
                   00d54665 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n";
        let online = CpuSet::parse_list("0,2").unwrap();
        let v = parse_softnet_stat(old, Some(&online)).unwrap();
        assert_eq!((v[0].cpu, v[1].cpu), (Some(0), Some(2)));
        assert_eq!((v[0].time_squeeze, v[1].dropped), (10, 1));
        assert_eq!(parse_softnet_stat(old, None).unwrap()[1].cpu, None);
        assert!(parse_softnet_stat("zz 1 2\n", None).is_err());
        assert!(parse_softnet_stat("1 2\n", None).is_err());
    }

    #[test]
    fn softnet_rejects_hostile_text() {
        // binary junk, a CPU column past u32, a value past u64, a lone column
        for t in [
            "\0\0\0 1 2\n",
            "1 2 3 4 5 6 7 8 9 a b c 1ffffffff\n",
            "1ffffffffffffffffff 0 0\n",
            "00000001\n",
            "1 2 -3\n",
        ] {
            assert!(parse_softnet_stat(t, None).is_err(), "{t:?}");
        }
        // a very long row of valid columns is just a row
        let long = format!("1 2 3{}\n", " 0".repeat(10_000));
        assert_eq!(parse_softnet_stat(&long, None).unwrap()[0].time_squeeze, 3);
        assert!(parse_softnet_stat("", None).unwrap().is_empty());
    }

    #[test]
    fn softnet_rows_of_the_fixture_trees() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/hosts");
        let mut seen = 0;
        for (host, cpus) in [
            ("crow-9900x-cx5-x4", 12),
            ("ice-e810-2s-xeon", 64),
            ("sl-w9-x3650-cx3", 16),
        ] {
            let root = Root::new(format!("{fixtures}/{host}"));
            let online = root
                .read_opt("/sys/devices/system/cpu/online")
                .and_then(|t| CpuSet::parse_list(t.trim()).ok());
            let rows = read_softnet(&root, online.as_ref()).unwrap_or_else(|| panic!("{host}"));
            assert_eq!(rows.len(), cpus, "{host}");
            assert!(rows.iter().all(|r| r.cpu.is_some()), "{host}");
            seen += 1;
        }
        assert_eq!(seen, 3);
        // a tree without the file, and one whose file is not softnet_stat
        let dir = std::env::temp_dir().join(format!("ws-softnet-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("proc/net")).unwrap();
        let root = Root::new(&dir);
        assert_eq!(read_softnet(&root, None), None);
        std::fs::write(dir.join("proc/net/softnet_stat"), "Tcp: a b\nTcp: 1 2\n").unwrap();
        assert_eq!(read_softnet(&root, None), None);
        assert_eq!(read_tcp_rx_drops(&root), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tcp_rx_drops_from_netstat() {
        let t = "TcpExt: SyncookiesSent PruneCalled RcvPruned TCPBacklogDrop TCPOFODrop TCPZeroWindowDrop TCPRcvQDrop\n\
                 TcpExt: 0 4 1 7 2 0 3\n\
                 IpExt: InNoRoutes\nIpExt: 0\n";
        let d = parse_tcp_rx_drops(t).unwrap();
        assert_eq!((d.backlog, d.rcvq, d.ofo, d.pruned), (7, 3, 2, 1));
        assert_eq!(d.total(), 13);
        // an older kernel without TCPRcvQDrop: 0, not a failure
        let old = "TcpExt: PruneCalled TCPBacklogDrop\nTcpExt: 0 5\n";
        assert_eq!(parse_tcp_rx_drops(old).unwrap().rcvq, 0);
        // no TcpExt table, or junk
        assert_eq!(parse_tcp_rx_drops("Ip: a\nIp: 1\n"), None);
        assert_eq!(
            parse_tcp_rx_drops("TcpExt: TCPBacklogDrop\nTcpExt: -\n"),
            None
        );
        assert_eq!(parse_tcp_rx_drops("\0\u{1}garbage"), None);
    }

    #[test]
    fn udp_rx_from_snmp() {
        let t = "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
                 Udp: 109071 0 53714 1 53714 0\n";
        let u = parse_udp_rx(t).unwrap();
        assert_eq!((u.delivered, u.rcvbuf_errors), (109071, 53714));
        assert_eq!(u.rcvbuf_share().get(), 33.0);
        assert_eq!(parse_udp_rx("Udp: InDatagrams\nUdp: 5\n"), None);
        assert_eq!(
            parse_udp_rx("Udp: InDatagrams RcvbufErrors\nUdp: x -1\n"),
            None
        );
        assert_eq!(parse_udp_rx("\0garbage"), None);
    }

    #[test]
    fn snmp_fields() {
        let t = "Ip: Forwarding DefaultTTL\nIp: 2 64\nTcp: RtoAlgorithm RtoMin MaxConn InSegs OutSegs RetransSegs InErrs\nTcp: 1 200 -1 100 200 7 0\n";
        assert_eq!(snmp_field(t, "Tcp", "MaxConn"), Some(-1));
        let c = parse_tcp_counters(t);
        assert_eq!(c.retrans_segs, Some(7));
        assert_eq!(c.out_segs, Some(200));
        assert_eq!(snmp_field(t, "Udp", "InDatagrams"), None);
        assert_eq!(snmp_field(t, "Tcp", "Nope"), None);
    }

    #[test]
    fn triples() {
        assert_eq!(
            parse_triple("4096\t131072\t6291456\n"),
            Some([4096, 131072, 6291456])
        );
        assert_eq!(parse_triple("4096 131072"), None);
        assert_eq!(parse_triple("a b c"), None);
    }
}
