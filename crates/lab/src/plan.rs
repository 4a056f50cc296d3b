//! The lab as data: a [`Spec`] and the kernel's abilities in, the `ip`/`tc`/`nft` commands out.
//! Nothing here runs a process; [`crate::Lab`] does.

use std::fmt;
use std::net::Ipv4Addr;

use wirespeed_host::CpuSet;

use crate::LabError;

/// The interface of an end (client or server) inside its namespace.
pub const END_DEV: &str = "ws0";
/// A router's interface toward the client side.
pub const ROUTER_DEV_A: &str = "wsa";
/// A router's interface toward the server side.
pub const ROUTER_DEV_B: &str = "wsb";
/// The name of the nftables table the lab's loss rules live in.
pub const NFT_TABLE: &str = "wirespeed_lab";
/// The MTU of an end when `--mtu` is not given (the kernel's veth default).
pub const DEFAULT_MTU: u32 = 1500;
/// The delay line's TUN device in the client side's router (a kernel without netem).
pub const DELAY_DEV: &str = "wsd";
/// The routing table that sends everything the router forwards into the delay line.
pub const DELAY_TABLE: &str = "77";

/// What to build.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Prefix of the namespaces: `NAME-a`, `NAME-b`, and `NAME-r1`, `NAME-r2` for a routed lab.
    pub name: String,
    /// MTU of the ends' interfaces (and of the links next to them).
    pub mtu: Option<u32>,
    /// MTU of the middle link between the two routers.
    pub path_mtu: Option<u32>,
    /// Bottleneck rate in bit/s, each direction (tbf on the middle link).
    pub rate_bps: Option<u64>,
    /// Random loss as a fraction (0.005 = 0.5 %), each direction.
    pub loss: Option<f64>,
    /// Added round-trip time in ms, half in each direction (netem, or the delay line where the
    /// kernel has no netem).
    pub delay_ms: Option<f64>,
    /// CPUs the ends' receive packet steering (RPS) sends the receive softirq to.
    pub rps_cpus: Option<CpuSet>,
    /// Only the far end of the middle link (the server side's router) has `path_mtu`; the near
    /// end keeps the ends' MTU, so larger frames toward the server vanish without an ICMP
    /// "fragmentation needed" (a switch that drops jumbo frames): an MTU black hole.
    pub blackhole: bool,
}

impl Spec {
    pub fn new(name: impl Into<String>) -> Spec {
        Spec {
            name: name.into(),
            mtu: None,
            path_mtu: None,
            rate_bps: None,
            loss: None,
            delay_ms: None,
            rps_cpus: None,
            blackhole: false,
        }
    }

    /// The ends' MTU.
    pub fn end_mtu(&self) -> u32 {
        self.mtu.unwrap_or(DEFAULT_MTU)
    }

    /// A lab with routers: a path MTU that differs from the ends', or rate, loss or delay on
    /// the path (so the bottleneck and its queue are on the path, not in the sender's own qdisc).
    pub fn routed(&self) -> bool {
        self.path_mtu.is_some_and(|p| p != self.end_mtu())
            || self.rate_bps.is_some()
            || self.loss.is_some()
            || self.delay_ms.is_some()
    }

    /// Refuse values the kernel would refuse or that mean nothing.
    pub fn validate(&self) -> Result<(), LabError> {
        let bad = |m: String| Err(LabError::BadSpec(m));
        let n = &self.name;
        if n.is_empty()
            || n.len() > 40
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return bad(format!(
                "lab name '{n}': use 1 to 40 letters, digits, '-' or '_'"
            ));
        }
        for (what, v) in [("--mtu", self.mtu), ("--path-mtu", self.path_mtu)] {
            if let Some(v) = v {
                if !(68..=65535).contains(&v) {
                    return bad(format!("{what} {v}: an MTU is 68 to 65535 bytes"));
                }
            }
        }
        if self.rate_bps == Some(0) {
            return bad("--rate 0: a rate must be above zero".into());
        }
        if let Some(p) = self.loss {
            if !(p > 0.0 && p < 1.0) {
                return bad(format!(
                    "--loss {p}: a loss is a fraction above 0 and below 1 (0.005 = 0.5 %)"
                ));
            }
        }
        if let Some(d) = self.delay_ms {
            if !(d > 0.0 && d <= 10_000.0) {
                return bad(format!(
                    "--delay {d}: a delay is above 0 and at most 10000 ms"
                ));
            }
        }
        if self.blackhole && self.path_mtu.is_none_or(|p| p >= self.end_mtu()) {
            return bad(format!(
                "--blackhole needs a --path-mtu below the ends' MTU {}",
                self.end_mtu()
            ));
        }
        if self.rps_cpus.as_ref().is_some_and(|c| c.is_empty()) {
            return bad("--rps-cpus: the list is empty".into());
        }
        Ok(())
    }
}

/// The namespaces of a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The client end (`a`).
    Client,
    /// The server end (`b`).
    Server,
    /// The router next to the client (`r1`).
    Router1,
    /// The router next to the server (`r2`).
    Router2,
}

impl Side {
    pub const ALL: [Side; 4] = [Side::Client, Side::Router1, Side::Router2, Side::Server];

    /// The suffix of its namespace name.
    pub fn suffix(self) -> &'static str {
        match self {
            Side::Client => "a",
            Side::Server => "b",
            Side::Router1 => "r1",
            Side::Router2 => "r2",
        }
    }

    /// `a`/`client`, `b`/`server`, `r1`, `r2`.
    pub fn parse(s: &str) -> Option<Side> {
        match s {
            "a" | "client" => Some(Side::Client),
            "b" | "server" => Some(Side::Server),
            "r1" => Some(Side::Router1),
            "r2" => Some(Side::Router2),
            _ => None,
        }
    }

    /// The namespace of this side in lab `name`.
    pub fn netns(self, name: &str) -> String {
        format!("{name}-{}", self.suffix())
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.suffix())
    }
}

/// What the running kernel can do (probed by the executor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kernel {
    /// `sch_netem` exists: delay and loss in the qdisc.
    pub netem: bool,
}

/// One command to run, with what to feed its stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub argv: Vec<String>,
    pub stdin: Option<String>,
}

impl Step {
    fn new(argv: &[&str]) -> Step {
        Step {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            stdin: None,
        }
    }

    /// `argv` run inside the namespace `ns` (`ip netns exec NS ...`).
    fn in_ns(ns: &str, argv: &[&str]) -> Step {
        Step::new(&[&["ip", "netns", "exec", ns], argv].concat())
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.argv.join(" "))?;
        if let Some(input) = &self.stdin {
            write!(f, " <<< '{}'", input.replace('\n', " "))?;
        }
        Ok(())
    }
}

/// The addresses of a lab (fixed: namespaces keep labs apart).
pub fn address(spec: &Spec, side: Side) -> Option<Ipv4Addr> {
    match (spec.routed(), side) {
        (false, Side::Client) => Some(Ipv4Addr::new(10, 77, 0, 1)),
        (false, Side::Server) => Some(Ipv4Addr::new(10, 77, 0, 2)),
        (false, _) => None,
        (true, Side::Client) => Some(Ipv4Addr::new(10, 77, 1, 1)),
        (true, Side::Server) => Some(Ipv4Addr::new(10, 77, 3, 2)),
        (true, Side::Router1) => Some(Ipv4Addr::new(10, 77, 1, 254)),
        (true, Side::Router2) => Some(Ipv4Addr::new(10, 77, 3, 254)),
    }
}

/// The namespaces of this lab, client first.
pub fn sides(spec: &Spec) -> Vec<Side> {
    if spec.routed() {
        Side::ALL.to_vec()
    } else {
        vec![Side::Client, Side::Server]
    }
}

/// Create the namespaces (run first, so the executor can probe the kernel inside one).
pub fn namespaces(spec: &Spec) -> Vec<Step> {
    sides(spec)
        .into_iter()
        .flat_map(|s| {
            let ns = s.netns(&spec.name);
            [
                Step::new(&["ip", "netns", "add", &ns]),
                Step::new(&["ip", "-n", &ns, "link", "set", "lo", "up"]),
            ]
        })
        .collect()
}

/// Remove every namespace a lab of this name may have (removing a namespace removes its
/// interfaces, qdiscs and nftables tables with it).
pub fn teardown(name: &str) -> Vec<Step> {
    Side::ALL
        .iter()
        .map(|s| Step::new(&["ip", "netns", "del", &s.netns(name)]))
        .collect()
}

/// tbf's bucket: 4 ms at the rate, at least 128 KiB (so one GSO packet of 64 KiB fits).
pub fn tbf_burst(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 250).max(128 * 1024)
}

/// nftables' `numgen random mod 1000000 < N`: the loss in parts per million (at least 1).
pub fn loss_ppm(loss: f64) -> u64 {
    ((loss * 1e6).round() as u64).clamp(1, 999_999)
}

/// Links, addresses, routes, MTUs, shaping, loss and RPS, after [`namespaces`].
pub fn links(spec: &Spec, kernel: Kernel) -> Result<Vec<Step>, LabError> {
    spec.validate()?;
    let ns = |s: Side| s.netns(&spec.name);
    let (a, b, r1, r2) = (
        ns(Side::Client),
        ns(Side::Server),
        ns(Side::Router1),
        ns(Side::Router2),
    );
    let mtu = spec.end_mtu().to_string();
    let mut steps = Vec::new();
    let mut veth = |n1: &str, d1: &str, n2: &str, d2: &str, mtu1: &str, mtu2: &str| {
        steps.push(Step::new(&[
            "ip", "-n", n1, "link", "add", d1, "mtu", mtu1, "type", "veth", "peer", "name", d2,
            "mtu", mtu2, "netns", n2,
        ]));
    };
    let mut addrs: Vec<(&str, &str, &str)> = Vec::new();
    let routed = spec.routed();
    if !routed {
        veth(&a, END_DEV, &b, END_DEV, &mtu, &mtu);
        addrs.push((&a, END_DEV, "10.77.0.1/24"));
        addrs.push((&b, END_DEV, "10.77.0.2/24"));
    } else {
        let path = spec.path_mtu.unwrap_or(spec.end_mtu()).to_string();
        // a black hole: the near end of the middle link sends frames its far end drops
        let near = if spec.blackhole { &mtu } else { &path };
        veth(&a, END_DEV, &r1, ROUTER_DEV_A, &mtu, &mtu);
        veth(&r1, ROUTER_DEV_B, &r2, ROUTER_DEV_A, near, &path);
        veth(&r2, ROUTER_DEV_B, &b, END_DEV, &mtu, &mtu);
        addrs.extend([
            (a.as_str(), END_DEV, "10.77.1.1/24"),
            (r1.as_str(), ROUTER_DEV_A, "10.77.1.254/24"),
            (r1.as_str(), ROUTER_DEV_B, "10.77.2.1/24"),
            (r2.as_str(), ROUTER_DEV_A, "10.77.2.2/24"),
            (r2.as_str(), ROUTER_DEV_B, "10.77.3.254/24"),
            (b.as_str(), END_DEV, "10.77.3.2/24"),
        ]);
    }
    for (n, dev, cidr) in &addrs {
        steps.push(Step::new(&["ip", "-n", n, "addr", "add", cidr, "dev", dev]));
        steps.push(Step::new(&["ip", "-n", n, "link", "set", dev, "up"]));
    }
    if routed {
        for (n, route, via) in [
            (&a, "default", "10.77.1.254"),
            (&b, "default", "10.77.3.254"),
            (&r1, "10.77.3.0/24", "10.77.2.2"),
            (&r2, "10.77.1.0/24", "10.77.2.1"),
        ] {
            steps.push(Step::new(&[
                "ip", "-n", n, "route", "add", route, "via", via,
            ]));
        }
        for n in [&r1, &r2] {
            steps.push(Step::in_ns(n, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]));
        }
        // The bottleneck: each router's egress onto the middle link.
        for (n, dev) in [(&r1, ROUTER_DEV_B), (&r2, ROUTER_DEV_A)] {
            steps.extend(shaping(spec, kernel, n, dev));
        }
        steps.extend(delay_line(spec, kernel));
        // Loss is per packet, so the ends must send packets, not 64 KiB segmentation-offload
        // aggregates (veth carries those whole; one drop would lose ~40 segments at once).
        if spec.loss.is_some() {
            for n in [&a, &b] {
                steps.push(Step::in_ns(
                    n,
                    &["ethtool", "-K", END_DEV, "tso", "off", "gso", "off"],
                ));
            }
        }
        // Loss without netem: each router drops at random what it forwards from its end, so
        // each direction loses the fraction once.
        if let (Some(loss), false) = (spec.loss, kernel.netem) {
            for (n, from) in [(&r1, ROUTER_DEV_A), (&r2, ROUTER_DEV_B)] {
                steps.push(Step {
                    stdin: Some(nft_loss(from, loss)),
                    ..Step::in_ns(n, &["nft", "-f", "-"])
                });
            }
        }
    }
    if let Some(cpus) = &spec.rps_cpus {
        let nr = cpus.iter().next_back().map_or(1, |c| c + 1);
        let mask = cpus.to_mask(nr);
        for n in [&a, &b] {
            steps.push(Step::in_ns(
                n,
                &[
                    "sh",
                    "-c",
                    &format!(
                        "printf '%s\\n' {mask} > /sys/class/net/{END_DEV}/queues/rx-0/rps_cpus"
                    ),
                ],
            ));
        }
    }
    Ok(steps)
}

/// The qdiscs on one egress of the middle link: netem (delay, loss) at the root with tbf below
/// it, or tbf alone.
fn shaping(spec: &Spec, kernel: Kernel, ns: &str, dev: &str) -> Vec<Step> {
    let mut netem: Vec<String> = Vec::new();
    if let (Some(d), true) = (spec.delay_ms, kernel.netem) {
        netem.extend(["delay".into(), format!("{}ms", fmt_num(d / 2.0))]);
    }
    if let (Some(p), true) = (spec.loss, kernel.netem) {
        netem.extend(["loss".into(), format!("{}%", fmt_num(p * 100.0))]);
    }
    let tbf = spec.rate_bps.map(|r| {
        vec![
            "tbf".to_string(),
            "rate".into(),
            format!("{r}bit"),
            "burst".into(),
            tbf_burst(r).to_string(),
            "latency".into(),
            "20ms".into(),
        ]
    });
    let base = ["tc", "-n", ns, "qdisc", "add", "dev", dev];
    let step = |tail: &[&str], kind: &[String]| {
        let mut argv: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        argv.extend(tail.iter().map(|s| s.to_string()));
        argv.extend(kind.iter().cloned());
        Step { argv, stdin: None }
    };
    let mut out = Vec::new();
    match (netem.is_empty(), tbf) {
        (true, None) => {}
        (true, Some(t)) => out.push(step(&["root", "handle", "1:"], &t)),
        (false, None) => {
            let mut k = vec!["netem".to_string()];
            k.extend(netem);
            out.push(step(&["root", "handle", "1:"], &k));
        }
        (false, Some(t)) => {
            let mut k = vec!["netem".to_string()];
            k.extend(netem);
            out.push(step(&["root", "handle", "1:"], &k));
            out.push(step(&["parent", "1:1", "handle", "10:"], &t));
        }
    }
    out
}

/// How long the delay line holds each packet, in ns: half the round trip, since each packet
/// passes it once each way. `None` when there is no delay, or netem has it.
pub fn relay_hold_ns(spec: &Spec, kernel: Kernel) -> Option<u64> {
    match (spec.delay_ms, kernel.netem) {
        (Some(d), false) => Some((d * 1e6 / 2.0).round() as u64),
        _ => None,
    }
}

/// Without netem, a delay is a delay line in router 1: a persistent TUN device (`wsd`, attached
/// by the relay, [`crate::relay`]), policy routing that sends everything arriving from either
/// side (`iif wsa`, `iif wsb`) into it by table [`DELAY_TABLE`], and the main table forwarding
/// what the relay writes back (`iif wsd`) on its way. Reverse-path filtering is off, since
/// packets from both sides come back on `wsd`. Packets to the router itself still go by the
/// local table (rule 0) and are not delayed.
pub fn delay_line(spec: &Spec, kernel: Kernel) -> Vec<Step> {
    if relay_hold_ns(spec, kernel).is_none() || !spec.routed() {
        return Vec::new();
    }
    let r1 = Side::Router1.netns(&spec.name);
    let mtu = spec.end_mtu().max(spec.path_mtu.unwrap_or(0)).to_string();
    let ip = |args: &[&str]| Step::new(&[&["ip", "-n", r1.as_str()], args].concat());
    let rule = |iif: &str, pref: &str| {
        ip(&[
            "rule",
            "add",
            "iif",
            iif,
            "lookup",
            DELAY_TABLE,
            "pref",
            pref,
        ])
    };
    vec![
        ip(&["tuntap", "add", "dev", DELAY_DEV, "mode", "tun"]),
        ip(&[
            "link",
            "set",
            DELAY_DEV,
            "mtu",
            &mtu,
            "txqueuelen",
            "10000",
            "up",
        ]),
        ip(&[
            "route",
            "add",
            "default",
            "dev",
            DELAY_DEV,
            "table",
            DELAY_TABLE,
        ]),
        rule(ROUTER_DEV_A, "100"),
        rule(ROUTER_DEV_B, "101"),
        Step::in_ns(
            &r1,
            &[
                "sysctl",
                "-qw",
                "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0",
                &format!("net.ipv4.conf.{DELAY_DEV}.rp_filter=0"),
            ],
        ),
    ]
}

/// The nftables table that drops `loss` of what arrives on `from` to be forwarded, counting
/// what it saw and what it dropped.
pub fn nft_loss(from: &str, loss: f64) -> String {
    format!(
        "table inet {NFT_TABLE} {{\n  chain forward {{\n    type filter hook forward priority -10; policy accept;\n    iifname \"{from}\" counter\n    iifname \"{from}\" numgen random mod 1000000 < {} counter drop\n  }}\n}}\n",
        loss_ppm(loss)
    )
}

/// A number without trailing zeros (`0.5`, `45`, `0.00455`).
fn fmt_num(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(steps: &[Step]) -> Vec<String> {
        steps.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_plain_lab_is_two_namespaces_and_one_veth_pair() {
        let s = Spec::new("t1");
        assert!(!s.routed());
        assert_eq!(
            lines(&namespaces(&s)),
            [
                "ip netns add t1-a",
                "ip -n t1-a link set lo up",
                "ip netns add t1-b",
                "ip -n t1-b link set lo up"
            ]
        );
        assert_eq!(
            lines(&links(&s, Kernel::default()).unwrap()),
            [
                "ip -n t1-a link add ws0 mtu 1500 type veth peer name ws0 mtu 1500 netns t1-b",
                "ip -n t1-a addr add 10.77.0.1/24 dev ws0",
                "ip -n t1-a link set ws0 up",
                "ip -n t1-b addr add 10.77.0.2/24 dev ws0",
                "ip -n t1-b link set ws0 up",
            ]
        );
        assert_eq!(address(&s, Side::Server), Some(Ipv4Addr::new(10, 77, 0, 2)));
        assert_eq!(address(&s, Side::Router1), None);
    }

    #[test]
    fn a_smaller_path_mtu_puts_two_routers_between_the_ends() {
        let s = Spec {
            mtu: Some(9000),
            path_mtu: Some(1500),
            ..Spec::new("t2")
        };
        assert!(s.routed());
        let l = lines(&links(&s, Kernel::default()).unwrap());
        assert_eq!(
            &l[..3],
            [
                "ip -n t2-a link add ws0 mtu 9000 type veth peer name wsa mtu 9000 netns t2-r1",
                "ip -n t2-r1 link add wsb mtu 1500 type veth peer name wsa mtu 1500 netns t2-r2",
                "ip -n t2-r2 link add wsb mtu 9000 type veth peer name ws0 mtu 9000 netns t2-b",
            ]
        );
        assert!(l.contains(&"ip -n t2-a route add default via 10.77.1.254".to_string()));
        assert!(l.contains(&"ip -n t2-r1 route add 10.77.3.0/24 via 10.77.2.2".to_string()));
        assert!(l.contains(&"ip netns exec t2-r2 sysctl -qw net.ipv4.ip_forward=1".to_string()));
        assert!(!l.iter().any(|x| x.contains("qdisc") || x.contains("nft")));
        // the same MTU on the path is a plain lab
        let same = Spec {
            mtu: Some(9000),
            path_mtu: Some(9000),
            ..Spec::new("t2")
        };
        assert!(!same.routed());
    }

    #[test]
    fn a_black_hole_is_a_middle_link_whose_ends_disagree() {
        let s = Spec {
            mtu: Some(9000),
            path_mtu: Some(1500),
            blackhole: true,
            ..Spec::new("t9")
        };
        let l = lines(&links(&s, Kernel::default()).unwrap());
        assert_eq!(
            l[1],
            "ip -n t9-r1 link add wsb mtu 9000 type veth peer name wsa mtu 1500 netns t9-r2"
        );
        let e = Spec {
            blackhole: true,
            ..Spec::new("t9")
        }
        .validate()
        .unwrap_err();
        assert!(
            e.to_string().contains("--blackhole needs a --path-mtu"),
            "{e}"
        );
    }

    #[test]
    fn rate_is_tbf_on_both_egresses_of_the_middle_link() {
        let s = Spec {
            rate_bps: Some(2_000_000_000),
            ..Spec::new("t3")
        };
        let l = lines(&links(&s, Kernel::default()).unwrap());
        let tc: Vec<_> = l.iter().filter(|x| x.starts_with("tc ")).collect();
        assert_eq!(
            tc,
            [
                "tc -n t3-r1 qdisc add dev wsb root handle 1: tbf rate 2000000000bit burst 1000000 latency 20ms",
                "tc -n t3-r2 qdisc add dev wsa root handle 1: tbf rate 2000000000bit burst 1000000 latency 20ms",
            ]
        );
        assert_eq!(tbf_burst(10_000_000), 128 * 1024);
    }

    #[test]
    fn loss_without_netem_is_an_nft_random_drop_per_direction() {
        let s = Spec {
            loss: Some(0.005),
            ..Spec::new("t4")
        };
        let st = links(&s, Kernel { netem: false }).unwrap();
        let nft: Vec<_> = st
            .iter()
            .filter(|x| x.argv.contains(&"nft".into()))
            .collect();
        let offload: Vec<_> = st
            .iter()
            .filter(|x| x.argv.contains(&"ethtool".into()))
            .map(|x| x.to_string())
            .collect();
        assert_eq!(
            offload,
            [
                "ip netns exec t4-a ethtool -K ws0 tso off gso off",
                "ip netns exec t4-b ethtool -K ws0 tso off gso off"
            ]
        );
        assert_eq!(nft.len(), 2);
        assert_eq!(
            nft[0].to_string().split(" <<<").next(),
            Some("ip netns exec t4-r1 nft -f -")
        );
        let rules = nft[0].stdin.as_deref().unwrap();
        assert!(
            rules.contains("iifname \"wsa\" numgen random mod 1000000 < 5000 counter drop"),
            "{rules}"
        );
        assert!(nft[1].stdin.as_deref().unwrap().contains("iifname \"wsb\""));
        assert!(!st.iter().any(|x| x.argv.contains(&"qdisc".into())));
        assert_eq!(loss_ppm(0.0000455), 46);
        assert_eq!(loss_ppm(1e-9), 1);
    }

    #[test]
    fn with_netem_loss_and_delay_are_netem_with_tbf_below() {
        let s = Spec {
            loss: Some(0.005),
            delay_ms: Some(20.0),
            rate_bps: Some(1_000_000_000),
            ..Spec::new("t5")
        };
        let l = lines(&links(&s, Kernel { netem: true }).unwrap());
        let tc: Vec<_> = l.iter().filter(|x| x.starts_with("tc -n t5-r1")).collect();
        assert_eq!(
            tc,
            [
                "tc -n t5-r1 qdisc add dev wsb root handle 1: netem delay 10ms loss 0.5%",
                "tc -n t5-r1 qdisc add dev wsb parent 1:1 handle 10: tbf rate 1000000000bit burst 500000 latency 20ms",
            ]
        );
        assert!(!l.iter().any(|x| x.contains("nft")));
    }

    #[test]
    fn delay_without_netem_is_a_delay_line_in_router_1() {
        let s = Spec {
            delay_ms: Some(20.0),
            mtu: Some(9000),
            path_mtu: Some(1500),
            ..Spec::new("t6")
        };
        assert_eq!(relay_hold_ns(&s, Kernel { netem: false }), Some(10_000_000));
        let l = lines(&links(&s, Kernel { netem: false }).unwrap());
        let tail: Vec<_> = l
            .iter()
            .filter(|x| x.contains("wsd") || x.contains("table 77") || x.contains("lookup"))
            .collect();
        assert_eq!(
            tail,
            [
                "ip -n t6-r1 tuntap add dev wsd mode tun",
                "ip -n t6-r1 link set wsd mtu 9000 txqueuelen 10000 up",
                "ip -n t6-r1 route add default dev wsd table 77",
                "ip -n t6-r1 rule add iif wsa lookup 77 pref 100",
                "ip -n t6-r1 rule add iif wsb lookup 77 pref 101",
                "ip netns exec t6-r1 sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.wsd.rp_filter=0",
            ]
        );
        // no qdisc pretends to delay
        assert!(!l.iter().any(|x| x.contains("netem")));
        // the line comes after the routes it relies on and before nothing else of router 2
        let at = |p: &str| l.iter().position(|x| x == p).unwrap();
        assert!(
            at("ip -n t6-r1 route add 10.77.3.0/24 via 10.77.2.2")
                < at("ip -n t6-r1 tuntap add dev wsd mode tun")
        );
        // with netem, netem delays and there is no line
        assert_eq!(relay_hold_ns(&s, Kernel { netem: true }), None);
        assert!(delay_line(&s, Kernel { netem: true }).is_empty());
        assert!(delay_line(&Spec::new("t6"), Kernel::default()).is_empty());
    }

    #[test]
    fn rps_writes_the_mask_on_both_ends() {
        let s = Spec {
            rps_cpus: Some(CpuSet::parse_list("1").unwrap()),
            ..Spec::new("t7")
        };
        let l = lines(&links(&s, Kernel::default()).unwrap());
        assert!(l.contains(
            &"ip netns exec t7-b sh -c printf '%s\\n' 2 > /sys/class/net/ws0/queues/rx-0/rps_cpus"
                .to_string()
        ), "{l:#?}");
    }

    #[test]
    fn bad_specs_are_refused_with_the_flag_named() {
        for (s, want) in [
            (
                Spec {
                    mtu: Some(40),
                    ..Spec::new("x")
                },
                "--mtu",
            ),
            (
                Spec {
                    loss: Some(1.5),
                    ..Spec::new("x")
                },
                "--loss",
            ),
            (
                Spec {
                    rate_bps: Some(0),
                    ..Spec::new("x")
                },
                "--rate",
            ),
            (Spec::new("a b"), "lab name"),
            (
                Spec {
                    delay_ms: Some(-1.0),
                    ..Spec::new("x")
                },
                "--delay",
            ),
        ] {
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn teardown_removes_every_possible_namespace() {
        assert_eq!(
            lines(&teardown("t8")),
            [
                "ip netns del t8-a",
                "ip netns del t8-r1",
                "ip netns del t8-r2",
                "ip netns del t8-b"
            ]
        );
        assert_eq!(Side::parse("server"), Some(Side::Server));
        assert_eq!(Side::parse("r2"), Some(Side::Router2));
        assert_eq!(Side::parse("c"), None);
    }
}
