//! A two-host lab on one machine: two network namespaces joined by veth, and two router
//! namespaces between them when the path needs a middle (a path MTU other than the ends', a
//! rate, loss or delay).
//!
//! ```text
//!  plain:   NAME-a ws0 10.77.0.1 ──veth── ws0 10.77.0.2 NAME-b
//!  routed:  NAME-a ws0 10.77.1.1 ── wsa NAME-r1 wsb ══ middle link ══ wsa NAME-r2 wsb ── ws0 10.77.3.2 NAME-b
//! ```
//!
//! The middle link carries the path: its MTU is `--path-mtu` (the ends keep `--mtu`, and the
//! routers answer with ICMP "fragmentation needed"), its two egresses carry the rate (`tbf`) and,
//! where the kernel has `sch_netem`, the delay and loss. Without netem, loss is an nftables
//! random drop (`numgen random mod 1000000 < ppm`) on each router's forward hook, counted; a
//! delay is a real one, a delay line: router 1 routes everything it forwards into a TUN device,
//! and a relay ([`relay`], scheduled by [`delay`]) holds each packet half the round trip before
//! writing it back to be forwarded on. The relay is a thread of the process that owns the
//! [`Lab`], or (for `wirespeed lab up`) a process of its own ([`RelayHost::External`]).
//!
//! [`plan`] is pure: a [`Spec`] and the probed [`Kernel`] in, the `ip`/`tc`/`nft` commands out,
//! unit-tested line by line. [`Lab`] runs them, and removes the lab on drop (unless
//! [`Lab::keep`]), on a failed step, and before building one of the same name (so `up` is
//! idempotent). Tests name their labs with [`unique_name`] (process id and a counter).

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

pub mod delay;
pub mod plan;
pub mod relay;
pub mod words;

pub use delay::LineStats;
pub use plan::{Kernel, Side, Spec, Step};
pub use relay::Relay;

/// Why a lab could not be built or used.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the lab needs root (it creates network namespaces); run it as root")]
    NotRoot,
    #[error("the lab needs `{0}`, which is not installed (Debian: apt-get install iproute2 nftables ethtool)")]
    MissingTool(&'static str),
    #[error("the delay line: {0}")]
    Relay(String),
    #[error("{0}")]
    BadSpec(String),
    #[error("`{step}` failed: {message}")]
    Step { step: String, message: String },
    #[error("no namespace '{0}': the lab is not up, or it has no routers (only a lab with a path has r1 and r2; see `wirespeed lab status`)")]
    NotFound(String),
    #[error("interrupted; what was built is removed")]
    Interrupted,
}

/// Root and the tools are there; the reason otherwise (for a test's `SKIP:` line).
pub fn check_can_run(loss: bool) -> Result<(), LabError> {
    if !rustix::process::geteuid().is_root() {
        return Err(LabError::NotRoot);
    }
    let tools: &[&'static str] = if loss {
        &["ip", "tc", "nft", "ethtool"]
    } else {
        &["ip", "tc"]
    };
    for &t in tools {
        // starts: ip tc nft ethtool
        let found = Command::new(t)
            .arg(if t == "nft" || t == "ethtool" {
                "--version"
            } else {
                "-V"
            })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Err(LabError::MissingTool(t));
        }
    }
    Ok(())
}

/// A lab name no other lab of this process or another process uses: `TAG` + pid + counter.
pub fn unique_name(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{tag}{}n{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Run one step; its stderr (or how it could not start) on failure.
pub fn run_step(step: &Step) -> Result<String, LabError> {
    let fail = |message: String| LabError::Step {
        step: step.to_string(),
        message,
    };
    // starts: ip tc (the plan's steps, whose argv the setup test reads where they are built)
    let mut cmd = Command::new(&step.argv[0]);
    cmd.args(&step.argv[1..])
        .stdin(if step.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| fail(e.to_string()))?;
    if let (Some(input), Some(mut w)) = (&step.stdin, child.stdin.take()) {
        w.write_all(input.as_bytes())
            .map_err(|e| fail(e.to_string()))?;
    }
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(fail(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

/// The namespaces of lab `name` that exist now.
pub fn existing(name: &str) -> Vec<Side> {
    let list = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    Side::ALL
        .into_iter()
        .filter(|s| names.contains(&s.netns(name).as_str()))
        .collect()
}

/// Remove lab `name` (whatever of it exists). `true` when something was there.
pub fn remove(name: &str) -> bool {
    let there = existing(name);
    for side in &there {
        let _ = run_step(&Step {
            argv: ["ip", "netns", "del"]
                .iter()
                .map(|s| s.to_string())
                .chain([side.netns(name)])
                .collect(),
            stdin: None,
        });
    }
    !there.is_empty()
}

/// Does the kernel have netem? Tried on `lo` inside `ns`, then removed.
pub fn probe_netem(ns: &str) -> bool {
    let add = Step {
        argv: ["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem"]
            .map(String::from)
            .to_vec(),
        stdin: None,
    };
    let ok = run_step(&add).is_ok();
    if ok {
        let _ = run_step(&Step {
            argv: ["tc", "-n", ns, "qdisc", "del", "dev", "lo", "root"]
                .map(String::from)
                .to_vec(),
            stdin: None,
        });
    }
    ok
}

/// Random-drop counters of one router: packets it saw from its end and packets it dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropCounters {
    pub seen: u64,
    pub dropped: u64,
}

/// Parse `nft list table` output: the first `counter packets N` is what was seen, the one on
/// the `drop` rule what was dropped.
pub fn parse_drop_counters(text: &str) -> Option<DropCounters> {
    let packets = |l: &str| -> Option<u64> {
        let mut it = l.split_whitespace();
        while let Some(w) = it.next() {
            if w == "packets" {
                return it.next()?.parse().ok();
            }
        }
        None
    };
    let mut seen = None;
    let mut dropped = None;
    for l in text.lines().filter(|l| l.contains("counter packets")) {
        if l.trim_end().ends_with("drop") {
            dropped = packets(l);
        } else if seen.is_none() {
            seen = packets(l);
        }
    }
    Some(DropCounters {
        seen: seen?,
        dropped: dropped?,
    })
}

/// Who runs the delay line's relay (a lab with `--delay` on a kernel without netem).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayHost {
    /// A thread of this process, stopped when the [`Lab`] is dropped.
    Thread,
    /// Someone else attaches to the TUN device (`wirespeed lab relay`); until then the delayed
    /// path carries nothing.
    External,
}

/// A running lab. Dropping it removes it, unless [`Lab::keep`] was called.
#[derive(Debug)]
pub struct Lab {
    spec: Spec,
    kernel: Kernel,
    keep: bool,
    relay: Option<Relay>,
}

impl Lab {
    /// Build the lab (replacing one of the same name). On any failure what was built is removed.
    pub fn up(spec: Spec) -> Result<Lab, LabError> {
        Lab::up_until(spec, &AtomicBool::new(false))
    }

    /// [`Lab::up`], stopping between steps once `stop` is set (a signal handler's flag): what
    /// was built is removed and the answer is [`LabError::Interrupted`].
    pub fn up_until(spec: Spec, stop: &AtomicBool) -> Result<Lab, LabError> {
        Lab::up_with(spec, stop, RelayHost::Thread)
    }

    /// [`Lab::up_until`], with the delay line's relay run by `relay`.
    pub fn up_with(spec: Spec, stop: &AtomicBool, relay: RelayHost) -> Result<Lab, LabError> {
        let step = |s: &Step| {
            if stop.load(Ordering::Relaxed) {
                return Err(LabError::Interrupted);
            }
            // a step killed by the same signal fails: say why
            run_step(s).map(drop).map_err(|e| {
                if stop.load(Ordering::Relaxed) {
                    LabError::Interrupted
                } else {
                    e
                }
            })
        };
        spec.validate()?;
        check_can_run(spec.loss.is_some())?;
        remove(&spec.name);
        // From here on, dropping `lab` removes whatever exists.
        let mut lab = Lab {
            spec,
            kernel: Kernel::default(),
            keep: false,
            relay: None,
        };
        for s in plan::namespaces(&lab.spec) {
            step(&s)?;
        }
        if lab.spec.loss.is_some() || lab.spec.delay_ms.is_some() {
            lab.kernel.netem = probe_netem(&Side::Client.netns(&lab.spec.name));
        }
        for s in plan::links(&lab.spec, lab.kernel)? {
            step(&s)?;
        }
        if let (Some(hold), RelayHost::Thread) = (lab.relay_hold_ns(), relay) {
            lab.relay = Some(Relay::start(
                &lab.netns(Side::Router1),
                plan::DELAY_DEV,
                hold,
                delay::DEFAULT_BOUNDS,
            )?);
        }
        Ok(lab)
    }

    /// How long the delay line holds a packet (half the added round trip), when the lab has one.
    pub fn relay_hold_ns(&self) -> Option<u64> {
        plan::relay_hold_ns(&self.spec, self.kernel)
    }

    /// The in-process delay line's counters (as of the last quarter second).
    pub fn delay_stats(&self) -> Option<LineStats> {
        self.relay.as_ref().map(Relay::stats)
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// What the kernel could do when the lab was built.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The namespace of a side.
    pub fn netns(&self, side: Side) -> String {
        side.netns(&self.spec.name)
    }

    /// The address of a side (the routers: the address toward their end).
    pub fn addr(&self, side: Side) -> Option<Ipv4Addr> {
        plan::address(&self.spec, side)
    }

    /// `ip netns exec NS program`, ready for arguments.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns(side), program]);
        c
    }

    /// The random-drop counters of the two routers (client→server first), when loss is an
    /// nftables rule.
    pub fn drop_counters(&self) -> Result<Vec<DropCounters>, LabError> {
        let mut out = Vec::new();
        for side in [Side::Router1, Side::Router2] {
            let text = run_step(&Step {
                argv: vec![
                    "ip".into(),
                    "netns".into(),
                    "exec".into(),
                    self.netns(side),
                    "nft".into(),
                    "list".into(),
                    "table".into(),
                    "inet".into(),
                    plan::NFT_TABLE.into(),
                ],
                stdin: None,
            })?;
            if let Some(c) = parse_drop_counters(&text) {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Leave the lab up when this handle goes (for `wirespeed lab up`).
    /// An in-process relay stops with this handle (the delayed path then carries nothing):
    /// keep a delayed lab with [`RelayHost::External`].
    pub fn keep(mut self) -> Spec {
        self.keep = true;
        self.spec.clone()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // the relay first: its TUN device holds router 1's namespace
        drop(self.relay.take());
        if !self.keep {
            remove(&self.spec.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_counters_from_nft_list_table() {
        let text = "table inet wirespeed_lab {\n\tchain forward {\n\t\ttype filter hook forward priority filter - 10; policy accept;\n\t\tiifname \"wsa\" counter packets 20000 bytes 3000000\n\t\tiifname \"wsa\" numgen random mod 1000000 < 5000 counter packets 101 bytes 151500 drop\n\t}\n}\n";
        assert_eq!(
            parse_drop_counters(text),
            Some(DropCounters {
                seen: 20000,
                dropped: 101
            })
        );
        assert_eq!(parse_drop_counters("table inet x {}"), None);
    }

    #[test]
    fn unique_names_differ_within_a_process() {
        let (a, b) = (unique_name("t"), unique_name("t"));
        assert_ne!(a, b);
        assert!(a.contains(&std::process::id().to_string()));
    }

    #[test]
    fn a_lab_comes_up_answers_ping_and_goes_away_on_drop() {
        if let Err(e) = check_can_run(false) {
            if std::env::var_os("CI").is_some() {
                panic!("CI: {e}");
            }
            eprintln!("SKIP: a_lab_comes_up_answers_ping_and_goes_away_on_drop because {e}");
            return;
        }
        let name = unique_name("wslt");
        let lab = Lab::up(Spec {
            mtu: Some(9000),
            path_mtu: Some(1500),
            ..Spec::new(name.clone())
        })
        .unwrap();
        assert_eq!(existing(&name).len(), 4);
        let to = lab.addr(Side::Server).unwrap().to_string();
        // a 1472-byte payload fits the 1500 path; 8972 does not, and with DF set the router
        // says so (ping fails), while the ends' own MTU is 9000
        let ping = |size: &str| {
            lab.command(Side::Client, "ping")
                .args(["-c1", "-W2", "-M", "do", "-s", size, &to])
                .output()
                .unwrap()
        };
        let small = ping("1472");
        assert!(
            small.status.success(),
            "{}",
            String::from_utf8_lossy(&small.stdout)
        );
        assert!(!ping("8972").status.success());
        drop(lab);
        assert!(existing(&name).is_empty());
        // interrupted before the first step: nothing is left
        let stopped = Lab::up_until(Spec::new(name.clone()), &AtomicBool::new(true));
        assert!(matches!(stopped, Err(LabError::Interrupted)), "{stopped:?}");
        assert!(existing(&name).is_empty());
    }

    /// `rtt min/avg/max/mdev = 20.1/20.3/20.6/0.2 ms` → the smallest, in ms.
    fn ping_min_ms(out: &str) -> Option<f64> {
        let l = out.lines().find(|l| l.contains("min/avg/max"))?;
        l.split('=').nth(1)?.trim().split('/').next()?.parse().ok()
    }

    #[test]
    fn a_delay_without_netem_is_a_real_delay_line_that_goes_away_on_drop() {
        if let Err(e) = check_can_run(false) {
            if std::env::var_os("CI").is_some() {
                panic!("CI: {e}");
            }
            eprintln!("SKIP: a_delay_without_netem_is_a_real_delay_line because {e}");
            return;
        }
        let name = unique_name("wsld");
        let lab = Lab::up(Spec {
            delay_ms: Some(20.0),
            ..Spec::new(name.clone())
        })
        .unwrap();
        if lab.kernel().netem {
            eprintln!("SKIP: a_delay_without_netem_is_a_real_delay_line because this kernel has netem (netem delays)");
            return;
        }
        assert_eq!(lab.relay_hold_ns(), Some(10_000_000));
        let to = lab.addr(Side::Server).unwrap().to_string();
        let out = lab
            .command(Side::Client, "ping")
            .args(["-c3", "-i0.2", "-W2", &to])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        // a packet cannot come back before it was held 10 ms each way
        let min = ping_min_ms(&text).unwrap_or_else(|| panic!("no rtt line: {text}"));
        assert!(
            min >= 20.0,
            "round trip {min} ms through a 20 ms delay line: {text}"
        );
        drop(lab);
        assert!(existing(&name).is_empty());
    }
}
