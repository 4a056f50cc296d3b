//! What `wirespeed lab` says: the shaping a [`Spec`] asks for, what `lab up` built, what
//! `lab up --dry-run` would run, and what `lab status` finds, one fact a line.

use std::process::Command;

use wirespeed_model::units::{self, Rate};

use crate::delay::LineStats;
use crate::{plan, Kernel, Lab, LabError, Side, Spec};

/// The rate each direction, in the words every command uses for a `--rate` it understood.
pub fn rate_line(spec: &Spec) -> Option<String> {
    let r = spec.rate_bps?;
    let r = Rate::from_bps(r).map_or_else(|| units::speed(r), |r| r.from_source("--rate"));
    Some(format!(
        "  rate: {r} each direction (tbf on the middle link)"
    ))
}

/// The shaping a spec asks for (before the kernel says how it is done).
pub fn shaping(spec: &Spec) -> Vec<String> {
    let mut out: Vec<String> = rate_line(spec).into_iter().collect();
    if let Some(p) = spec.loss {
        out.push(format!("  loss: {}% each direction", p * 100.0));
    }
    if let Some(d) = spec.delay_ms {
        out.push(format!("  delay: {d} ms added round trip"));
    }
    out
}

/// `lab up --dry-run`: the shaping the spec asks for and the commands that build it on a
/// kernel with netem (after the `target` line, when there is one), nothing run.
pub fn dry_run(spec: &Spec, target: Option<String>) -> Result<Vec<String>, LabError> {
    let kernel = Kernel { netem: true };
    let mut out = vec![format!("lab {} (dry run: nothing is built)", spec.name)];
    out.extend(target.map(|line| format!("  {line}")));
    out.extend(shaping(spec));
    let steps = plan::links(spec, kernel)?;
    for step in plan::namespaces(spec).iter().chain(&steps) {
        out.push(format!("  {step}"));
    }
    Ok(out)
}

/// What `lab up` built, one fact a line; `relay_pid` is the delay line's relay process, when
/// it has one of its own.
pub fn describe(lab: &Lab, relay_pid: Option<u32>) -> Vec<String> {
    let s = lab.spec();
    let addr = |side| lab.addr(side).map_or("-".into(), |a| a.to_string());
    let mut out = vec![
        format!(
            "lab {} up: client {} ({}), server {} ({}), ends' MTU {}",
            s.name,
            lab.netns(Side::Client),
            addr(Side::Client),
            lab.netns(Side::Server),
            addr(Side::Server),
            s.end_mtu()
        ),
        format!(
            "  run: wirespeed lab exec server --name {0} -- wirespeed server   and   wirespeed lab exec client --name {0} -- wirespeed client {1}",
            s.name,
            addr(Side::Server)
        ),
    ];
    if s.routed() {
        out.push(format!(
            "  path: routers {} and {}; middle link MTU {}{}",
            lab.netns(Side::Router1),
            lab.netns(Side::Router2),
            s.path_mtu.unwrap_or(s.end_mtu()),
            if s.blackhole {
                format!(
                    " at its far end only: frames above it toward the server vanish (a black hole; {} sends {})",
                    lab.netns(Side::Router1),
                    s.end_mtu()
                )
            } else {
                String::new()
            }
        ));
    }
    out.extend(rate_line(s));
    if let Some(p) = s.loss {
        let how = if lab.kernel().netem {
            "netem"
        } else {
            "nftables random drop, counted (this kernel has no netem)"
        };
        out.push(format!("  loss: {}% each direction ({how})", p * 100.0));
    }
    if let Some(d) = s.delay_ms {
        out.push(match relay_pid {
            None => format!("  delay: {d} ms added round trip (netem)"),
            Some(pid) => format!(
                "  delay: {d} ms added round trip by a delay line (this kernel has no netem): {} routes what it forwards through TUN device {}, where relay process {pid} holds each packet {} ms; `lab down` ends it",
                lab.netns(Side::Router1),
                plan::DELAY_DEV,
                d / 2.0
            ),
        });
    }
    if let Some(c) = &s.rps_cpus {
        out.push(format!("  RPS: the ends' receive softirq on {}", c.words()));
    }
    out
}

/// What the relay of lab `name` did, when it stopped.
pub fn relay_stopped(name: &str, st: &LineStats) -> String {
    format!(
        "lab {name}: delay line stopped: {} packets relayed, {} dropped (queue full), at most {} held at once",
        st.released, st.dropped, st.peak_packets
    )
}

/// `lab status`: each namespace of lab `name` and its addresses, MTUs, shaping qdiscs, delay
/// line and random-drop counters; `None` when the lab is not up.
pub fn status(name: &str) -> Option<Vec<String>> {
    let sides = crate::existing(name);
    if sides.is_empty() {
        return None;
    }
    let show = |args: &[&str]| {
        // starts: ip tc (the lab status lines)
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for side in sides {
        let ns = side.netns(name);
        out.push(format!("{ns}:"));
        for l in show(&["ip", "-n", &ns, "-br", "addr"]).lines() {
            let dev = l.split_whitespace().next().unwrap_or("");
            if dev == "lo" {
                continue;
            }
            let dev = dev.split('@').next().unwrap_or(dev);
            let mtu = show(&[
                "ip",
                "netns",
                "exec",
                &ns,
                "cat",
                &format!("/sys/class/net/{dev}/mtu"),
            ]);
            out.push(format!("  {l}  mtu {}", mtu.trim()));
        }
        for l in show(&["tc", "-n", &ns, "qdisc", "show"]).lines() {
            if l.contains("tbf") || l.contains("netem") {
                out.push(format!("  {l}"));
            }
        }
        let nft = show(&[
            "ip",
            "netns",
            "exec",
            &ns,
            "nft",
            "list",
            "table",
            "inet",
            "wirespeed_lab",
        ]);
        let carrier = show(&[
            "ip",
            "netns",
            "exec",
            &ns,
            "cat",
            &format!("/sys/class/net/{}/carrier", plan::DELAY_DEV),
        ]);
        if show(&["ip", "-n", &ns, "link", "show", plan::DELAY_DEV]).contains(plan::DELAY_DEV) {
            out.push(format!(
                "  delay line: {}",
                if carrier.trim() == "1" {
                    "a relay is attached"
                } else {
                    "no relay attached: the path carries nothing (run `wirespeed lab up` again)"
                }
            ));
        }
        if let Some(c) = crate::parse_drop_counters(&nft) {
            out.push(format!(
                "  random drop: {} of {} packets forwarded from its end ({:.3}%)",
                c.dropped,
                c.seen,
                if c.seen > 0 {
                    c.dropped as f64 * 100.0 / c.seen as f64
                } else {
                    0.0
                }
            ));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shaping_says_rate_loss_and_delay_in_the_commands_words() {
        let spec = Spec {
            rate_bps: Some(40_000_000_000),
            loss: Some(0.005),
            delay_ms: Some(20.0),
            ..Spec::new("t")
        };
        assert_eq!(
            shaping(&spec),
            [
                "  rate: 40 Gbit/s (--rate) each direction (tbf on the middle link)",
                "  loss: 0.5% each direction",
                "  delay: 20 ms added round trip",
            ]
        );
        assert!(shaping(&Spec::new("t")).is_empty());
    }

    #[test]
    fn dry_run_names_the_lab_then_the_target_then_the_steps() {
        let spec = Spec {
            rate_bps: Some(1_000_000_000),
            ..Spec::new("t")
        };
        let lines = dry_run(&spec, Some("target: x".into())).unwrap();
        assert_eq!(lines[0], "lab t (dry run: nothing is built)");
        assert_eq!(lines[1], "  target: x");
        assert!(lines[2].starts_with("  rate: 1"), "{lines:?}");
        assert!(lines.len() > 3 && lines[3..].iter().all(|l| l.starts_with("  ")));
    }

    #[test]
    fn relay_stopped_counts_what_the_line_did() {
        let st = LineStats {
            released: 7,
            dropped: 1,
            peak_packets: 3,
            ..LineStats::default()
        };
        assert_eq!(
            relay_stopped("t", &st),
            "lab t: delay line stopped: 7 packets relayed, 1 dropped (queue full), at most 3 held at once"
        );
    }
}
