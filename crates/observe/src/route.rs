//! Which interface carries traffic to a peer: the kernel's main routing table as
//! `/proc/net/route` and `/proc/net/ipv6_route` print it, longest prefix first, then lowest metric.
//!
//! Addresses in 127.0.0.0/8 and `::1`, and (on the live host) addresses of this host itself, go
//! through `lo`: they live in the kernel's local table, which these files do not show. Policy
//! routing (`ip rule`) and VRFs are not followed; when the route lookup finds nothing, the
//! interface holding the test's local address is used.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use wirespeed_host::Root;

const RTF_UP: u32 = 0x0001;
const RTF_REJECT: u32 = 0x0200;

/// One route of the main table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub iface: String,
    pub dest: IpAddr,
    pub prefix_len: u8,
    pub metric: u32,
    pub flags: u32,
}

impl Route {
    fn usable(&self) -> bool {
        self.flags & RTF_UP != 0 && self.flags & RTF_REJECT == 0
    }

    fn matches(&self, addr: IpAddr) -> bool {
        match (self.dest, addr) {
            (IpAddr::V4(d), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix_len.min(32)))
                    .unwrap_or(0);
                u32::from(d) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(d), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix_len.min(128)))
                    .unwrap_or(0);
                u128::from(d) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// Parse `/proc/net/route`. The kernel prints each address as the raw 32-bit word in host byte
/// order, so this reads it back the same way (a table captured on a machine of the other
/// endianness would read reversed). Malformed lines are skipped.
pub fn parse_route_v4(text: &str) -> Vec<Route> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let hex = |s: &str| u32::from_str_radix(s, 16).ok();
        let (Some(dest), Some(flags), Some(metric), Some(mask)) =
            (hex(f[1]), hex(f[3]), f[6].parse::<u32>().ok(), hex(f[7]))
        else {
            continue;
        };
        let mask = u32::from_be_bytes(mask.to_ne_bytes());
        out.push(Route {
            iface: f[0].to_string(),
            dest: IpAddr::V4(Ipv4Addr::from(dest.to_ne_bytes())),
            prefix_len: mask.leading_ones() as u8,
            metric,
            flags,
        });
    }
    out
}

/// Parse `/proc/net/ipv6_route` (32-hex-digit addresses, hex prefix lengths, metric and flags).
/// Malformed lines are skipped.
pub fn parse_route_v6(text: &str) -> Vec<Route> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let (Ok(dest), Ok(plen), Ok(metric), Ok(flags)) = (
            u128::from_str_radix(f[0], 16),
            u8::from_str_radix(f[1], 16),
            u32::from_str_radix(f[5], 16),
            u32::from_str_radix(f[8], 16),
        ) else {
            continue;
        };
        if f[0].len() != 32 || plen > 128 {
            continue;
        }
        out.push(Route {
            iface: f[9].to_string(),
            dest: IpAddr::V6(Ipv6Addr::from(dest)),
            prefix_len: plen,
            metric,
            flags,
        });
    }
    out
}

/// The interface of the best route to `addr` in `routes`: longest prefix, then lowest metric.
pub fn lookup(routes: &[Route], addr: IpAddr) -> Option<&str> {
    routes
        .iter()
        .filter(|r| r.usable() && r.matches(addr))
        .max_by(|a, b| {
            a.prefix_len
                .cmp(&b.prefix_len)
                .then(b.metric.cmp(&a.metric))
        })
        .map(|r| r.iface.as_str())
}

fn is_loopback(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.is_loopback(),
        IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// The interface that carries traffic to `peer` from the host under `root`; `local` is the
/// test's own address, when known (fallback when no route matches). `None` when nothing tells.
pub fn iface_for_peer(root: &Root, peer: IpAddr, local: Option<IpAddr>) -> Option<String> {
    let peer = match peer {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(peer, IpAddr::V4),
        v4 => v4,
    };
    if is_loopback(peer) {
        return Some("lo".to_string());
    }
    let own = if root.is_live() {
        wirespeed_host::link::addresses().unwrap_or_default()
    } else {
        Vec::new()
    };
    if own.iter().any(|(_, a)| *a == peer) {
        return Some("lo".to_string());
    }
    let routes = match peer {
        IpAddr::V4(_) => parse_route_v4(&root.read("/proc/net/route").unwrap_or_default()),
        IpAddr::V6(_) => parse_route_v6(&root.read("/proc/net/ipv6_route").unwrap_or_default()),
    };
    if let Some(i) = lookup(&routes, peer) {
        return Some(i.to_string());
    }
    let local = local?;
    own.into_iter().find(|(_, a)| *a == local).map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded on a little-endian host: default via 192.0.2.1 on eth0, 192.0.2.0/24 on eth0,
    // and a more specific 198.51.100.0/25 on eth1 with a worse metric than a /24 on eth0.
    const V4: &str =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
eth0\t006433C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
eth1\t006433C6\t00000000\t0001\t0\t0\t100\t80FFFFFF\t0\t0\t0\n\
eth2\t0000000A\t00000000\t0000\t0\t0\t0\t000000FF\t0\t0\t0\n";

    const V6: &str = "fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n\
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n\
20010db8000000000000000000000000 20 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth3\n\
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n\
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn v4_longest_prefix_wins_over_metric() {
        let r = parse_route_v4(V4);
        assert_eq!(r.len(), 5);
        assert_eq!(r[1].dest, ip("192.0.2.0"));
        assert_eq!(r[1].prefix_len, 24);
        assert_eq!(r[3].prefix_len, 25);
        assert_eq!(lookup(&r, ip("192.0.2.77")), Some("eth0"));
        assert_eq!(lookup(&r, ip("198.51.100.5")), Some("eth1"));
        assert_eq!(lookup(&r, ip("198.51.100.200")), Some("eth0"));
        assert_eq!(lookup(&r, ip("203.0.113.9")), Some("eth0")); // default route
                                                                 // eth2's route is not up.
        assert_eq!(lookup(&r, ip("10.1.2.3")), Some("eth0"));
    }

    #[test]
    fn v6_routes_and_reject_entries() {
        let r = parse_route_v6(V6);
        assert_eq!(r.len(), 5);
        assert_eq!(lookup(&r, ip("2001:db8::7")), Some("eth3"));
        assert_eq!(lookup(&r, ip("fd00::9")), Some("eth0"));
        assert_eq!(lookup(&r, ip("2a00::1")), Some("eth0"));
        // Only the reject route would match without the default: nothing.
        let only_reject = parse_route_v6(V6.lines().last().unwrap());
        assert_eq!(lookup(&only_reject, ip("2a00::1")), None);
    }

    #[test]
    fn loopback_and_tree_lookup() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        assert_eq!(
            iface_for_peer(&root, ip("127.0.0.1"), None).as_deref(),
            Some("lo")
        );
        assert_eq!(
            iface_for_peer(&root, ip("::1"), None).as_deref(),
            Some("lo")
        );
        assert_eq!(
            iface_for_peer(&root, ip("::ffff:127.0.0.1"), None).as_deref(),
            Some("lo")
        );
        assert_eq!(iface_for_peer(&root, ip("192.0.2.9"), None), None);
        std::fs::create_dir_all(t.path().join("proc/net")).unwrap();
        std::fs::write(t.path().join("proc/net/route"), V4).unwrap();
        std::fs::write(t.path().join("proc/net/ipv6_route"), V6).unwrap();
        assert_eq!(
            iface_for_peer(&root, ip("198.51.100.5"), None).as_deref(),
            Some("eth1")
        );
        assert_eq!(
            iface_for_peer(&root, ip("2001:db8::1"), None).as_deref(),
            Some("eth3")
        );
    }

    #[test]
    fn live_host_own_address_goes_through_lo() {
        let own = wirespeed_host::link::addresses().expect("RTM_GETADDR dump");
        let Some((_, addr)) = own.iter().find(|(i, _)| i != "lo") else {
            eprintln!("SKIP: live_host_own_address_goes_through_lo because this host has no non-lo address");
            return;
        };
        assert_eq!(
            iface_for_peer(&Root::live(), *addr, None).as_deref(),
            Some("lo")
        );
    }
}
