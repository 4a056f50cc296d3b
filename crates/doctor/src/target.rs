//! The host target a command is about, resolved once from the command line and the host
//! (live, `--root` or `--snapshot`): the interface, the rate and where it came from, the RTT and
//! whether it was given, and the CPUs a person named (online, allowed for this process, on which
//! NUMA node). `doctor`, `tune`, `model`, `lab`, `sweep`, `latency` and the client resolve their
//! options here ([`resolve`]) and receive the [`HostTarget`]; none checks them again, and each
//! says the target in the same words ([`HostTarget::line`]).
//!
//! Which interface a command is about when `--iface` names none, one rule ([`fastest_up`]):
//! among the PCI NICs whose link is up, the fastest (a NIC that reports no speed counts below any
//! that does); several as fast → the first by name, and the words name the others and say
//! `--iface` chooses. The client's interface is the one its test takes: the device it binds to
//! (`--bind-dev`, `-B ADDR%DEV`, `HOST%DEV`), else the route to its server's address (looked up
//! on the host by the caller: [`Ask::route`]). The rate: `--rate`, else (doctor and tune) the
//! chosen interface's link speed — for an upper device (bond, VLAN, bridge) the fastest NIC
//! beneath it that is up —, else the instance type's ([`crate::rate::Basis`]). The RTT: `--rtt`
//! within [`units::MAX_RTT_MS`], else [`DEFAULT_RTT_MS`] where the command assumes one.

use std::net::IpAddr;

use wirespeed_host::{CpuSet, HostFacts, UnusableCpus};
use wirespeed_model::units::{self, Rate, UnitError, DEFAULT_RTT_MS};

use crate::rate::Basis;

use wirespeed_host::nic::NicFacts;

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
        IfaceTarget::from(self).words()
    }
}

impl From<&NicChoice<'_>> for IfaceTarget {
    fn from(c: &NicChoice<'_>) -> IfaceTarget {
        IfaceTarget {
            name: c.nic.name.clone(),
            how: IfaceHow::Fastest,
            speed_mbps: c.nic.speed_mbps,
            tied: c.tied.clone(),
        }
    }
}

/// A command that takes a host target, and what it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Doctor,
    Tune,
    Model,
    Lab,
    Sweep,
    Latency,
    Client,
}

impl Command {
    pub const ALL: [Command; 7] = [
        Command::Doctor,
        Command::Tune,
        Command::Model,
        Command::Lab,
        Command::Sweep,
        Command::Latency,
        Command::Client,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Command::Doctor => "doctor",
            Command::Tune => "tune",
            Command::Model => "model",
            Command::Lab => "lab up",
            Command::Sweep => "sweep",
            Command::Latency => "latency",
            Command::Client => "client",
        }
    }

    /// Whether it reads a host (`model` and `lab up` read none: their target is what was
    /// asked).
    pub fn reads_host(self) -> bool {
        !matches!(self, Command::Model | Command::Lab)
    }

    /// Whether it is about an interface: doctor and tune a NIC (`--iface`, the fastest that is
    /// up without it), the client the one its test takes (the device it binds to, else the
    /// route to its server).
    pub fn takes_iface(self) -> bool {
        matches!(self, Command::Doctor | Command::Tune | Command::Client)
    }

    /// Whether, without `--rate`, the rate is the interface's link speed (else the instance
    /// type's): doctor and tune size for it. The client's cost projection has `--rate` only
    /// (without it the projection reads both ends' interfaces after the test).
    pub fn rate_from_link(self) -> bool {
        matches!(self, Command::Doctor | Command::Tune)
    }

    /// Whether it takes `--rate`.
    pub fn takes_rate(self) -> bool {
        matches!(
            self,
            Command::Doctor | Command::Tune | Command::Model | Command::Lab | Command::Client
        )
    }

    /// Whether it takes `--rtt`, and assumes [`DEFAULT_RTT_MS`] without it.
    pub fn takes_rtt(self) -> Option<Rtt> {
        match self {
            Command::Doctor | Command::Tune => Some(Rtt::Defaulted),
            Command::Model => Some(Rtt::Optional),
            _ => None,
        }
    }
}

/// What a command does without `--rtt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rtt {
    /// It assumes [`DEFAULT_RTT_MS`] and says so.
    Defaulted,
    /// It has none (`model --table`).
    Optional,
}

/// What a person asked for, each read by the one parser of its kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ask {
    pub iface: Option<String>,
    /// The option that named `iface` when it is not `--iface` (the client's `--bind-dev`,
    /// `-B ADDR%DEV`, `HOST%DEV`).
    pub iface_flag: Option<String>,
    /// The client with no interface named: the one its route to the server takes, looked up
    /// on the host by the caller (`None`: not looked up, or no route).
    pub route: Option<RouteTo>,
    pub rate: Option<Rate>,
    pub rtt_ms: Option<f64>,
    /// CPU lists by the option that named them (`--app-cpus`, `--irq-cpus`, `--cpus`, `-A`).
    pub cpus: Vec<(String, CpuSet)>,
}

impl Ask {
    /// Read the strings a person typed: `--rate` by [`Rate::parse`], `--rtt` by
    /// [`units::parse_rtt_ms`], CPU lists (`(flag, text)`) by [`CpuSet::parse_nonempty`].
    pub fn parse(
        iface: Option<&str>,
        rate: Option<&str>,
        rtt: Option<&str>,
        cpus: &[(&str, &str)],
    ) -> Result<Ask, TargetError> {
        Ok(Ask {
            iface: iface.map(str::to_string),
            iface_flag: None,
            route: None,
            rate: rate.map(|r| Rate::parse(r, "--rate")).transpose()?,
            rtt_ms: rtt.map(|r| units::parse_rtt_ms(r, "--rtt")).transpose()?,
            cpus: cpus
                .iter()
                .map(|(flag, text)| {
                    CpuSet::parse_nonempty(text)
                        .map(|c| (flag.to_string(), c))
                        .map_err(|e| TargetError::CpuList {
                            flag: flag.to_string(),
                            text: text.to_string(),
                            why: e.to_string(),
                        })
                })
                .collect::<Result<_, _>>()?,
        })
    }

    /// The interface `flag` named (the client's `--bind-dev`, `-B ADDR%DEV`, `HOST%DEV`).
    pub fn with_iface(mut self, flag: &str, iface: Option<&str>) -> Ask {
        if let Some(i) = iface {
            self.iface = Some(i.to_string());
            self.iface_flag = (flag != "--iface").then(|| flag.to_string());
        }
        self
    }

    /// Add a CPU list named by `flag`, when there is one.
    pub fn with_cpus(mut self, flag: &str, cpus: Option<&CpuSet>) -> Ask {
        if let Some(c) = cpus {
            self.cpus.push((flag.to_string(), c.clone()));
        }
        self
    }
}

/// The interface a route to a peer takes, and the peer's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTo {
    pub iface: String,
    pub peer: IpAddr,
}

/// The host a target is resolved on: its facts and the CPUs this process may run on
/// (`wirespeed_host::cgroup::allowed_cpus`; `None` where the tree does not say).
#[derive(Debug, Clone, Copy)]
pub struct Host<'a> {
    pub facts: &'a HostFacts,
    pub allowed: Option<&'a CpuSet>,
}

/// Why a target cannot be resolved: one sentence naming the option.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    /// A `--rate` or `--rtt` out of its bounds.
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error("{flag} '{text}': {why}")]
    CpuList {
        flag: String,
        text: String,
        why: String,
    },
    #[error("{flag}: the CPU list is empty")]
    EmptyCpus { flag: String },
    /// CPUs not online or not allowed for this process.
    #[error(transparent)]
    Cpus(#[from] UnusableCpus),
}

impl TargetError {
    /// Whether the host refused it (CPUs it lacks) rather than the words (a bad value).
    pub fn is_host(&self) -> bool {
        matches!(self, TargetError::Cpus(_))
    }
}

/// How the interface was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfaceHow {
    /// An option named it: `--iface`, or the client's `--bind-dev`, `-B ADDR%DEV`, `HOST%DEV`.
    Named(String),
    /// The rule: the fastest NIC that is up ([`fastest_up`]), with its speed and the NICs as
    /// fast.
    Fastest,
    /// The route to the client's server, at this address.
    Route(IpAddr),
}

/// The interface a command is about, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceTarget {
    pub name: String,
    pub how: IfaceHow,
    pub speed_mbps: Option<u64>,
    pub tied: Vec<String>,
}

impl IfaceTarget {
    /// Whether an option named it.
    pub fn is_named(&self) -> bool {
        matches!(self.how, IfaceHow::Named(_))
    }

    /// `interface eth0 (--iface)`, `interface eth0 (--bind-dev)`, `interface eth0: the route to
    /// 192.0.2.1`, or the rule's words ([`NicChoice::words`]).
    pub fn words(&self) -> String {
        match &self.how {
            IfaceHow::Named(flag) => return format!("interface {} ({flag})", self.name),
            IfaceHow::Route(peer) => {
                return format!("interface {}: the route to {peer}", self.name)
            }
            IfaceHow::Fastest => {}
        }
        let speed = self
            .speed_mbps
            .map_or("no link speed".to_string(), units::speed_mbps);
        let mut s = format!(
            "interface {}: the fastest NIC that is up ({speed})",
            self.name
        );
        if !self.tied.is_empty() {
            s += &format!(
                "; as fast: {}, the first by name is taken (--iface chooses)",
                self.tied.join(", ")
            );
        }
        s
    }
}

/// The rate a command sizes for or shapes to, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateTarget {
    /// Exactly as given for `--rate`; the link's or the instance type's otherwise.
    pub rate: Rate,
    pub basis: Basis,
}

impl RateTarget {
    /// `rate 40 Gbit/s (--rate)`, `rate 100 Gbit/s (link speed)`.
    pub fn words(&self) -> String {
        format!("rate {}", self.rate.from_source(&self.basis.whence()))
    }
}

/// The round-trip time a command sizes for, and whether `--rtt` gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RttTarget {
    pub ms: f64,
    pub given: bool,
}

impl RttTarget {
    /// `RTT 25 ms (--rtt)`, `RTT 10 ms (default)`.
    pub fn words(&self) -> String {
        let whence = if self.given { "--rtt" } else { "default" };
        format!("RTT {} ms ({whence})", self.ms)
    }
}

/// CPUs a person named, checked on the host: online, allowed, and their NUMA nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTarget {
    pub flag: String,
    pub cpus: CpuSet,
    /// Their NUMA nodes (empty where the host shows none).
    pub nodes: Vec<u32>,
}

impl CpuTarget {
    /// `--app-cpus 2-3 (NUMA node 0)`.
    pub fn words(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(u32::to_string).collect();
        match nodes.len() {
            0 => format!("{} {}", self.flag, self.cpus),
            1 => format!("{} {} (NUMA node {})", self.flag, self.cpus, nodes[0]),
            _ => format!(
                "{} {} (NUMA nodes {})",
                self.flag,
                self.cpus,
                nodes.join(",")
            ),
        }
    }
}

/// Everything a command is about, resolved once.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTarget {
    pub command: Command,
    /// `None`: the command is about no NIC, or none is up.
    pub iface: Option<IfaceTarget>,
    pub rate: Option<RateTarget>,
    /// Why a command that sizes for a rate has none (no `--rate`, no link speed, no known
    /// instance type).
    pub no_rate: Option<String>,
    pub rtt: Option<RttTarget>,
    pub cpus: Vec<CpuTarget>,
    /// The CPUs this process can use on the host (online, and allowed where known); empty
    /// without a host.
    pub usable: CpuSet,
}

impl HostTarget {
    /// The CPUs named by `flag`, checked.
    pub fn cpus(&self, flag: &str) -> Option<&CpuSet> {
        self.cpus.iter().find(|c| c.flag == flag).map(|c| &c.cpus)
    }

    /// The interface an option named (`None`: the rule, the route, or every NIC for doctor).
    pub fn named_iface(&self) -> Option<&str> {
        self.iface
            .as_ref()
            .filter(|i| i.is_named())
            .map(|i| i.name.as_str())
    }

    /// The rate `--rate` gave, Mbit/s (what doctor's checks and tune's planner take).
    pub fn requested_mbps(&self) -> Option<u64> {
        self.rate
            .as_ref()
            .filter(|r| matches!(r.basis, Basis::Requested(_)))
            .map(|r| r.rate.mbps())
    }

    /// The rate and the NIC whose link it stands for ([`link_nic`]; with `--rate`, the NIC the
    /// command is about): what buffers are sized for. `None` without a rate or a NIC.
    pub fn sized_for<'a>(&'a self, facts: &'a HostFacts) -> Option<(&'a Basis, &'a NicFacts)> {
        let nic = link_nic(facts, &self.iface.as_ref()?.name)?;
        Some((&self.rate.as_ref()?.basis, nic))
    }

    /// The RTT, ms ([`DEFAULT_RTT_MS`] where the command has none).
    pub fn rtt_ms(&self) -> f64 {
        self.rtt.map_or(DEFAULT_RTT_MS, |r| r.ms)
    }

    /// Each part in words, in one order: interface, rate, RTT, CPUs.
    pub fn parts(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.iface.as_ref().map(IfaceTarget::words));
        out.extend(self.rate.as_ref().map(RateTarget::words));
        out.extend(self.rtt.as_ref().map(RttTarget::words));
        out.extend(self.cpus.iter().map(CpuTarget::words));
        out
    }

    /// The line every command prints: `target: interface eth0 (--iface); rate 40 Gbit/s
    /// (--rate); RTT 10 ms (default)`; `None` when there is nothing to say.
    pub fn line(&self) -> Option<String> {
        let parts = self.parts();
        (!parts.is_empty()).then(|| format!("target: {}", parts.join("; ")))
    }
}

/// The NIC whose link speed stands for interface `name`: the NIC itself, or for an upper device
/// (bond, VLAN, bridge, macvlan) the fastest NIC beneath it that is up (what one flow can
/// reach; ties by name), else the first beneath it.
pub fn link_nic<'a>(facts: &'a HostFacts, name: &str) -> Option<&'a NicFacts> {
    if let Some(n) = facts.nic(name) {
        return Some(n);
    }
    let mut leaves: Vec<&NicFacts> = facts
        .upper(name)?
        .leaves()
        .into_iter()
        .filter_map(|l| facts.nic(&l.name))
        .collect();
    leaves.sort_by(|a, b| {
        b.is_up()
            .cmp(&a.is_up())
            .then(b.speed_mbps.cmp(&a.speed_mbps))
            .then(a.name.cmp(&b.name))
    });
    leaves.first().copied()
}

/// Resolve what `command` was asked (`ask`) on `host` (`None` for the commands that read no host:
/// `model`, `lab up`). Options the command does not take are left out. The one check of each
/// option: the RTT's bounds, CPUs online and allowed.
pub fn resolve(
    command: Command,
    host: Option<Host<'_>>,
    ask: &Ask,
) -> Result<HostTarget, TargetError> {
    let rtt = match (command.takes_rtt(), ask.rtt_ms) {
        (None, _) | (Some(Rtt::Optional), None) => None,
        (Some(_), Some(ms)) => Some(RttTarget {
            ms: units::check_rtt_ms(ms, "--rtt")?,
            given: true,
        }),
        (Some(Rtt::Defaulted), None) => Some(RttTarget {
            ms: DEFAULT_RTT_MS,
            given: false,
        }),
    };

    let mut cpus = Vec::new();
    let mut usable = CpuSet::new();
    if let Some(h) = host {
        let online = h.facts.cpu.online_set();
        usable = match h.allowed {
            Some(a) if !a.is_empty() && !online.is_empty() => online.intersection(a),
            Some(a) if online.is_empty() => a.clone(),
            _ => online.clone(),
        };
        for (flag, set) in &ask.cpus {
            if set.is_empty() {
                return Err(TargetError::EmptyCpus { flag: flag.clone() });
            }
            set.check_usable(flag, &online, h.allowed)?;
            cpus.push(CpuTarget {
                flag: flag.clone(),
                cpus: set.clone(),
                nodes: h.facts.cpu.nodes_of(set),
            });
        }
    } else {
        for (flag, set) in &ask.cpus {
            if set.is_empty() {
                return Err(TargetError::EmptyCpus { flag: flag.clone() });
            }
            cpus.push(CpuTarget {
                flag: flag.clone(),
                cpus: set.clone(),
                nodes: Vec::new(),
            });
        }
    }

    let speed_of = |name: &str| {
        host.and_then(|h| h.facts.nic(name))
            .and_then(|n| n.speed_mbps)
    };
    let iface = match (command.takes_iface(), &ask.iface, host) {
        (false, _, _) => None,
        (true, Some(name), _) => Some(IfaceTarget {
            name: name.clone(),
            how: IfaceHow::Named(ask.iface_flag.clone().unwrap_or("--iface".into())),
            speed_mbps: speed_of(name),
            tied: Vec::new(),
        }),
        (true, None, _) if command == Command::Client => ask.route.as_ref().map(|r| IfaceTarget {
            name: r.iface.clone(),
            how: IfaceHow::Route(r.peer),
            speed_mbps: speed_of(&r.iface),
            tied: Vec::new(),
        }),
        (true, None, Some(h)) => fastest_up(h.facts).map(|c| IfaceTarget::from(&c)),
        (true, None, None) => None,
    };

    let (mut rate, mut no_rate) = (None, None);
    if command.takes_rate() {
        if let Some(r) = ask.rate {
            rate = Some(RateTarget {
                rate: r,
                basis: Basis::Requested(r.mbps()),
            });
        } else if let (Some(h), true) = (host, command.rate_from_link()) {
            let nic = iface.as_ref().and_then(|i| link_nic(h.facts, &i.name));
            match nic.map(|n| crate::rate::basis_for(h.facts, n, None)) {
                Some(Ok(basis)) => match Rate::from_mbps(basis.mbps()) {
                    Some(r) => rate = Some(RateTarget { rate: r, basis }),
                    None => no_rate = Some(format!("{}: no usable rate", basis.value())),
                },
                Some(Err(why)) => no_rate = Some(why),
                None => {}
            }
        }
    }
    Ok(HostTarget {
        command,
        iface,
        rate,
        no_rate,
        rtt,
        cpus,
        usable,
    })
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

    /// A host with two NUMA nodes (CPUs 0-1 and 2-3), CPUs 0-3 online, 0-2 allowed for this
    /// process, and two NICs up at 100 Gbit/s (a tie) and one without a speed.
    fn two_node_host() -> HostFacts {
        let mut f = facts(vec![
            nic("eth1", true, Some(100_000)),
            nic("eth0", true, Some(100_000)),
            nic("ens5", true, None),
        ]);
        f.cpu.online = Some(CpuSet::from_cpus([0, 1, 2, 3]));
        f.cpu.numa_nodes.insert(0, CpuSet::from_cpus([0, 1]));
        f.cpu.numa_nodes.insert(1, CpuSet::from_cpus([2, 3]));
        f
    }

    /// What one row of strings must resolve to, whatever the command.
    struct Row {
        rate: Option<&'static str>,
        rtt: Option<&'static str>,
        iface: Option<&'static str>,
        cpus: &'static [(&'static str, &'static str)],
        /// The rate's words where the command takes `--rate` (`None`: no rate).
        rate_words: Option<&'static str>,
        rate_bps: Option<u64>,
        /// The RTT's words for a command that assumes the default.
        rtt_words: &'static str,
        iface_words: &'static str,
        /// The CPUs' words, or the refusal, for a command that reads the host.
        cpus_words: Result<&'static [&'static str], &'static str>,
    }

    const TIE: &str = "interface eth0: the fastest NIC that is up (100 Gbit/s); as fast: eth1, the first by name is taken (--iface chooses)";

    const ROWS: &[Row] = &[
        Row {
            rate: Some("40000"),
            rtt: Some("25"),
            iface: Some("eth1"),
            cpus: &[("--app-cpus", "0-1")],
            rate_words: Some("rate 40 Gbit/s (--rate)"),
            rate_bps: Some(40_000_000_000),
            rtt_words: "RTT 25 ms (--rtt)",
            iface_words: "interface eth1 (--iface)",
            cpus_words: Ok(&["--app-cpus 0-1 (NUMA node 0)"]),
        },
        Row {
            rate: Some("40G"),
            rtt: None,
            iface: None,
            cpus: &[("--cpus", "1-2")],
            rate_words: Some("rate 40 Gbit/s (--rate)"),
            rate_bps: Some(40_000_000_000),
            rtt_words: "RTT 10 ms (default)",
            iface_words: TIE,
            cpus_words: Ok(&["--cpus 1-2 (NUMA nodes 0,1)"]),
        },
        Row {
            rate: Some("2.5G"),
            rtt: Some("0.5"),
            iface: None,
            cpus: &[],
            rate_words: Some("rate 2.5 Gbit/s (--rate)"),
            rate_bps: Some(2_500_000_000),
            rtt_words: "RTT 0.5 ms (--rtt)",
            iface_words: TIE,
            cpus_words: Ok(&[]),
        },
        Row {
            rate: None,
            rtt: Some("10000"),
            iface: Some("ens5"),
            cpus: &[("--app-cpus", "2"), ("--irq-cpus", "1")],
            rate_words: None,
            rate_bps: None,
            rtt_words: "RTT 10000 ms (--rtt)",
            iface_words: "interface ens5 (--iface)",
            cpus_words: Ok(&["--app-cpus 2 (NUMA node 1)", "--irq-cpus 1 (NUMA node 0)"]),
        },
        Row {
            rate: Some("400"),
            rtt: None,
            iface: None,
            cpus: &[("--cpus", "1,5,7")],
            rate_words: Some("rate 400 Mbit/s (--rate)"),
            rate_bps: Some(400_000_000),
            rtt_words: "RTT 10 ms (default)",
            iface_words: TIE,
            cpus_words: Err("--cpus 1,5,7: CPUs 5,7 are not online on this host (online: 0-3)"),
        },
        Row {
            rate: Some("1G"),
            rtt: None,
            iface: None,
            cpus: &[("-A", "3")],
            rate_words: Some("rate 1 Gbit/s (--rate)"),
            rate_bps: Some(1_000_000_000),
            rtt_words: "RTT 10 ms (default)",
            iface_words: TIE,
            cpus_words: Err("-A 3: CPU 3 is not allowed for this process (allowed by its cgroup and affinity: 0-2)"),
        },
    ];

    /// The client's server, and the interface its route takes.
    fn route() -> RouteTo {
        RouteTo {
            iface: "eth1".into(),
            peer: "192.0.2.1".parse().unwrap(),
        }
    }

    /// The one table: the same `--rate`, `--rtt`, `--iface` and CPU strings give the same
    /// target, in the same words, in every command that takes them. The client names its
    /// interface with `--bind-dev` (it has no `--iface`), else takes its route's.
    #[test]
    fn the_same_strings_resolve_to_the_same_target_in_every_command() {
        let f = two_node_host();
        let allowed = CpuSet::from_cpus([0, 1, 2]);
        for (i, row) in ROWS.iter().enumerate() {
            let asked = Ask::parse(row.iface, row.rate, row.rtt, row.cpus).unwrap();
            let client = Ask {
                iface: None,
                route: Some(route()),
                ..asked.clone()
            }
            .with_iface("--bind-dev", row.iface);
            for cmd in Command::ALL {
                let ctx = format!("row {i}, {}", cmd.name());
                let ask = if cmd == Command::Client {
                    &client
                } else {
                    &asked
                };
                let host = cmd.reads_host().then_some(Host {
                    facts: &f,
                    allowed: Some(&allowed),
                });
                let t = match (resolve(cmd, host, ask), row.cpus_words) {
                    (Err(e), Err(why)) if host.is_some() => {
                        assert_eq!(e.to_string(), why, "{ctx}");
                        assert!(e.is_host(), "{ctx}");
                        continue;
                    }
                    (Ok(t), _) => t,
                    (Err(e), _) => panic!("{ctx}: {e}"),
                };
                assert!(host.is_none() || row.cpus_words.is_ok(), "{ctx}: accepted");
                // the rate: as given, or the chosen NIC's link speed where the command has a NIC
                let rate = t.rate.as_ref().map(RateTarget::words);
                // (the row without --rate names ens5, which reports no speed: no rate anywhere)
                let want = row
                    .rate_words
                    .filter(|_| cmd.takes_rate())
                    .map(str::to_string);
                assert_eq!(rate, want, "{ctx}");
                if cmd.takes_rate() {
                    assert_eq!(t.rate.as_ref().map(|r| r.rate.bps()), row.rate_bps, "{ctx}");
                }
                // the RTT: given, else the default where the command assumes one
                let rtt = t.rtt.as_ref().map(RttTarget::words);
                let want = match cmd.takes_rtt() {
                    None => None,
                    Some(Rtt::Optional) if row.rtt.is_none() => None,
                    Some(_) => Some(row.rtt_words.to_string()),
                };
                assert_eq!(rtt, want, "{ctx}");
                // the interface: named, or the one rule with the tie said; the client's: the
                // device it binds to, else its route's
                let iface = t.iface.as_ref().map(IfaceTarget::words);
                let want = match (cmd, row.iface) {
                    (Command::Client, Some(i)) => Some(format!("interface {i} (--bind-dev)")),
                    (Command::Client, None) => {
                        Some("interface eth1: the route to 192.0.2.1".to_string())
                    }
                    _ => cmd.takes_iface().then(|| row.iface_words.to_string()),
                };
                assert_eq!(iface, want, "{ctx}");
                // the CPUs: checked on the host, with their nodes
                if host.is_some() {
                    let words: Vec<String> = t.cpus.iter().map(CpuTarget::words).collect();
                    assert_eq!(words, row.cpus_words.unwrap(), "{ctx}");
                    assert_eq!(t.usable, CpuSet::from_cpus([0, 1, 2]), "{ctx}");
                }
                // the line is its parts, in one order
                let line = t.line();
                assert_eq!(line.is_some(), !t.parts().is_empty(), "{ctx}: {line:?}");
                if let Some(l) = line {
                    assert_eq!(l, format!("target: {}", t.parts().join("; ")), "{ctx}");
                }
            }
        }
    }

    /// The client's rate is `--rate` only (its cost projection reads both ends' interfaces
    /// after the test otherwise); doctor and tune size for the link.
    #[test]
    fn the_client_has_its_route_and_no_rate_from_the_link() {
        let f = two_node_host();
        let host = Some(Host {
            facts: &f,
            allowed: None,
        });
        let ask = Ask {
            route: Some(route()),
            ..Ask::default()
        };
        let t = resolve(Command::Client, host, &ask).unwrap();
        assert_eq!(
            t.line().as_deref(),
            Some("target: interface eth1: the route to 192.0.2.1")
        );
        assert_eq!(t.named_iface(), None);
        assert_eq!((t.rate, t.no_rate), (None, None));
        // doctor and tune never take a route: their rule
        let t = resolve(Command::Tune, host, &ask).unwrap();
        assert_eq!(t.iface.unwrap().words(), TIE);
        let ask = Ask::parse(None, Some("25G"), None, &[("-A", "1")])
            .unwrap()
            .with_iface("--bind-dev", Some("eth0"));
        let t = resolve(Command::Client, host, &ask).unwrap();
        assert_eq!(
            t.line().as_deref(),
            Some(
                "target: interface eth0 (--bind-dev); rate 25 Gbit/s (--rate); -A 1 (NUMA node 0)"
            )
        );
        assert_eq!(t.named_iface(), Some("eth0"));
    }

    /// An upper device named: the link speed of the fastest NIC beneath it that is up.
    #[test]
    fn an_upper_device_sizes_for_the_fastest_nic_beneath_it() {
        let mut f = two_node_host();
        f.nics.push(nic("eth2", true, Some(25_000)));
        f.nics.push(nic("eth3", false, Some(400_000)));
        let node = |name: &str, kind: &str, lowers: Vec<serde_json::Value>| {
            serde_json::json!({
                "name": name, "kind": kind, "sysfs": format!("/sys/class/net/{name}"),
                "speed_mbps": null, "mtu": null, "operstate": null, "carrier": null,
                "lowers": lowers,
            })
        };
        let leaves = ["eth2", "eth3", "ens5"].map(|n| node(n, "pci", vec![]));
        let top = node("bond0", "bond", leaves.to_vec());
        f.uppers
            .push(serde_json::from_value(serde_json::json!({ "top": top })).unwrap());
        let host = Some(Host {
            facts: &f,
            allowed: None,
        });
        let ask = Ask::parse(Some("bond0"), None, None, &[]).unwrap();
        for cmd in [Command::Doctor, Command::Tune] {
            let t = resolve(cmd, host, &ask).unwrap();
            assert_eq!(
                t.parts()[..2],
                ["interface bond0 (--iface)", "rate 25 Gbit/s (link speed)"],
                "{}",
                cmd.name()
            );
            // the rate the link gave is not one asked for: doctor's checks keep each NIC's own
            assert_eq!(t.requested_mbps(), None);
        }
        // a name that is neither a NIC nor an upper device: no link to size for
        let ask = Ask::parse(Some("veth0"), None, None, &[]).unwrap();
        let t = resolve(Command::Tune, host, &ask).unwrap();
        assert_eq!((t.rate, t.no_rate), (None, None));
    }

    #[test]
    fn the_rate_falls_back_to_the_link_then_the_instance_type() {
        let mut f = two_node_host();
        let ask = Ask::default();
        let t = resolve(
            Command::Doctor,
            Some(Host {
                facts: &f,
                allowed: None,
            }),
            &ask,
        )
        .unwrap();
        assert_eq!(
            t.rate.as_ref().unwrap().words(),
            "rate 100 Gbit/s (link speed)"
        );
        assert_eq!(t.requested_mbps(), None);
        // a named NIC with no speed on a known instance type
        f.platform.product_name = Some("c5n.18xlarge".into());
        let ask = Ask::parse(Some("ens5"), None, None, &[]).unwrap();
        let t = resolve(
            Command::Tune,
            Some(Host {
                facts: &f,
                allowed: None,
            }),
            &ask,
        )
        .unwrap();
        assert_eq!(
            t.rate.unwrap().words(),
            "rate 100 Gbit/s (instance type c5n.18xlarge: no link speed)"
        );
        // none: the reason, said
        f.platform.product_name = None;
        let t = resolve(
            Command::Doctor,
            Some(Host {
                facts: &f,
                allowed: None,
            }),
            &ask,
        )
        .unwrap();
        assert!(t.rate.is_none());
        assert!(t.no_rate.unwrap().contains("pass --rate"));
        // the lab and the model take no link: only --rate
        let t = resolve(Command::Lab, None, &Ask::default()).unwrap();
        assert_eq!((t.line(), t.rate), (None, None));
    }

    #[test]
    fn bad_strings_are_refused_in_the_words_of_their_parser() {
        let e = Ask::parse(None, Some("40x"), None, &[]).unwrap_err();
        assert!(
            e.to_string().starts_with("--rate '40x': expected a rate"),
            "{e}"
        );
        let e = Ask::parse(None, None, Some("10001"), &[]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--rtt '10001': expected a round-trip time"),
            "{e}"
        );
        let e = Ask::parse(None, None, None, &[("--app-cpus", "x")]).unwrap_err();
        assert!(e.to_string().starts_with("--app-cpus 'x': "), "{e}");
        assert!(!e.is_host());
        // a value built elsewhere still meets the RTT's bound, and an empty list is refused
        let ask = Ask {
            rtt_ms: Some(0.0),
            ..Ask::default()
        };
        assert!(matches!(
            resolve(Command::Model, None, &ask),
            Err(TargetError::Unit(_))
        ));
        let ask = Ask::default().with_cpus("--cpus", Some(&CpuSet::new()));
        assert_eq!(
            resolve(Command::Sweep, None, &ask).unwrap_err().to_string(),
            "--cpus: the CPU list is empty"
        );
    }
}
