//! `wirespeed lab`: a two-host lab on this machine (see the `wirespeed-lab` crate).

use std::process::{Command, ExitCode};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{Args, Subcommand};
use wirespeed_host::CpuSet;
use wirespeed_lab::{self as lab, Lab, LabError, RelayHost, Side, Spec};

use crate::exit;
use wirespeed_doctor::target::{Ask, Command as TargetCommand};

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    /// Build the lab (replacing one of the same name): namespaces NAME-a (client) and NAME-b
    /// (server), with routers NAME-r1 and NAME-r2 between them when the path needs a middle.
    Up(UpArgs),
    /// Run a command inside one side: a|client, b|server, r1, r2.
    Exec(ExecArgs),
    /// Show the lab's namespaces, addresses, MTUs, qdiscs and drop counters.
    Status(NameArg),
    /// Remove the lab (nothing to do when it is not up); its delay line's relay ends with it.
    Down(NameArg),
    /// The delay line's relay (what `lab up --delay` starts in the background on a kernel
    /// without netem): holds each packet half of MS in the lab's router 1, in the foreground,
    /// until the lab is removed or Ctrl-C.
    Relay(RelayArgs),
}

#[derive(Debug, Args)]
struct RelayArgs {
    #[command(flatten)]
    name: NameArg,
    /// The added round-trip time in ms (half each way), as given to `lab up --delay`.
    #[arg(long, value_name = "MS")]
    delay: f64,
}

#[derive(Debug, Args)]
struct NameArg {
    /// The lab's name (its namespaces' prefix).
    #[arg(long, default_value = "wslab")]
    name: String,
}

#[derive(Debug, Args)]
struct UpArgs {
    #[command(flatten)]
    name: NameArg,
    /// MTU of the ends' interfaces (default 1500).
    #[arg(long, value_name = "BYTES")]
    mtu: Option<u32>,
    /// MTU of the link between the routers (a smaller one than --mtu: path MTU discovery).
    #[arg(long, value_name = "BYTES")]
    path_mtu: Option<u32>,
    /// Bottleneck rate each direction (2G, 400M; a bare number is Mbit/s), by tbf on the path.
    #[arg(long, value_name = "RATE", value_parser = crate::common::rate)]
    rate: Option<wirespeed_model::units::Rate>,
    /// Random loss each direction: a fraction (0.005) or a percentage (0.5%). netem where the
    /// kernel has it, otherwise an nftables random drop.
    #[arg(long, value_name = "P")]
    loss: Option<String>,
    /// Added round-trip time in ms (half each way): netem where the kernel has it, otherwise a
    /// delay line (a relay process in the background, ended by `lab down`).
    #[arg(long, value_name = "MS")]
    delay: Option<f64>,
    /// Steer both ends' receive softirq (RPS) to these CPUs, e.g. 1 or 0-1.
    #[arg(long, value_name = "LIST")]
    rps_cpus: Option<String>,
    /// With --path-mtu: only the middle link's far end has it, so larger frames toward the
    /// server vanish without an ICMP answer (an MTU black hole, a switch dropping jumbo frames).
    #[arg(long)]
    blackhole: bool,
    /// Print the lab's rate, loss and delay and the commands `lab up` would run (on a kernel
    /// with netem), without running them: needs no root.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct ExecArgs {
    #[command(flatten)]
    name: NameArg,
    /// a|client, b|server, r1, r2.
    side: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// A fraction (`0.005`) or a percentage (`0.5%`), above 0 and below 1.
pub fn parse_fraction(text: &str, what: &str) -> anyhow::Result<f64> {
    let t = text.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v / scale > 0.0 && v / scale < 1.0 => Ok(v / scale),
        _ => Err(exit::fail(
            exit::USAGE,
            format!(
                "invalid {what} '{text}': a fraction above 0 and below 1 (0.005) or a percentage (0.5%)"
            ),
        )),
    }
}

fn lab_fail(e: LabError) -> anyhow::Error {
    let code = match e {
        LabError::BadSpec(_) => exit::USAGE,
        LabError::Interrupted => exit::INTERRUPTED,
        _ => exit::HOST,
    };
    exit::fail(code, format!("lab: {e}"))
}

pub fn run(args: LabArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        LabCommand::Up(a) => up(a),
        LabCommand::Exec(a) => exec(a),
        LabCommand::Status(a) => status(&a.name),
        LabCommand::Relay(a) => relay(a),
        LabCommand::Down(a) => {
            lab::check_can_run(false).map_err(lab_fail)?;
            if lab::remove(&a.name) {
                println!("lab {} removed", a.name);
            } else {
                println!("lab {} was not up", a.name);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn up(a: UpArgs) -> anyhow::Result<ExitCode> {
    let usage = |e: String| exit::fail(exit::USAGE, e);
    let ask = Ask {
        rate: a.rate,
        ..Ask::default()
    };
    let target = crate::common::resolve_target(TargetCommand::Lab, None, &ask)?;
    let spec = Spec {
        name: a.name.name,
        mtu: a.mtu,
        path_mtu: a.path_mtu,
        rate_bps: target.rate.as_ref().map(|r| r.rate.bps()),
        loss: a.loss.map(|l| parse_fraction(&l, "--loss")).transpose()?,
        delay_ms: a.delay,
        rps_cpus: a
            .rps_cpus
            .map(|c| CpuSet::parse_nonempty(&c))
            .transpose()
            .map_err(|e| usage(format!("--rps-cpus: {e}")))?,
        blackhole: a.blackhole,
    };
    spec.validate().map_err(lab_fail)?;
    if a.dry_run {
        return dry_run(&spec, target.line());
    }
    // Ctrl-C or SIGTERM while building: stop between steps and remove what was built
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| exit::fail(exit::INTERNAL, format!("installing a signal handler: {e}")))?;
    }
    // the delay line's relay must outlive this command: a process of its own
    let lab = Lab::up_with(spec, &stop, RelayHost::External).map_err(lab_fail)?;
    let relay_pid = match lab.relay_hold_ns() {
        Some(_) => Some(spawn_relay(&lab)?),
        None => None,
    };
    // interrupted while the relay attached: the lab goes (and the relay with it)
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        drop(lab);
        return Err(lab_fail(LabError::Interrupted));
    }
    for line in target.line().into_iter().chain(describe(&lab, relay_pid)) {
        println!("{line}");
    }
    lab.keep();
    Ok(ExitCode::SUCCESS)
}

/// Start `wirespeed lab relay` for `lab` in a session of its own (Ctrl-C in this terminal and
/// this command's end leave it running), and wait until it has attached to the delay line.
/// It ends by itself when the lab is removed.
fn spawn_relay(lab: &Lab) -> anyhow::Result<u32> {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let host = |m: String| exit::fail(exit::HOST, format!("lab: the delay line: {m}"));
    let me = std::env::current_exe().map_err(|e| host(format!("finding this program: {e}")))?;
    let delay = lab.spec().delay_ms.unwrap_or_default().to_string();
    // starts: wirespeed (this program, for the relay)
    let mut cmd = Command::new(me);
    cmd.args([
        "lab",
        "relay",
        "--name",
        &lab.spec().name,
        "--delay",
        &delay,
    ])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches nothing of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let _ = rustix::process::setsid();
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| host(format!("starting the relay: {e}")))?;
    let mut first = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = std::io::BufReader::new(out).read_line(&mut first);
    }
    if first.trim() == "ready" {
        return Ok(child.id());
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(host(match first.trim() {
        "" => "the relay ended before it attached".into(),
        why => why.trim_start_matches("error: ").to_string(),
    }))
}

/// `wirespeed lab relay`: attach, say `ready` on stdout (`lab up` reads that one line), relay
/// until the lab goes or a signal.
fn relay(a: RelayArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let name = a.name.name;
    let spec = Spec {
        delay_ms: Some(a.delay),
        ..Spec::new(name.clone())
    };
    spec.validate().map_err(lab_fail)?;
    lab::check_can_run(false).map_err(lab_fail)?;
    let hold = lab::plan::relay_hold_ns(&spec, lab::Kernel { netem: false }).unwrap_or_default();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| exit::fail(exit::INTERNAL, format!("installing a signal handler: {e}")))?;
    }
    let got = lab::relay::serve(
        &Side::Router1.netns(&name),
        lab::plan::DELAY_DEV,
        hold,
        lab::delay::DEFAULT_BOUNDS,
        &stop,
        || {
            let mut out = std::io::stdout();
            let _ = writeln!(out, "ready");
            let _ = out.flush();
            // nothing else goes to stdout: `lab up` read this line and let go of the pipe
        },
    );
    match got {
        Ok(st) => {
            eprintln!(
                "lab {name}: delay line stopped: {} packets relayed, {} dropped (queue full), at most {} held at once",
                st.released, st.dropped, st.peak_packets
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // `lab up` reads the reason from stdout (if it still listens)
            let _ = writeln!(std::io::stdout(), "error: {e}");
            Err(lab_fail(e))
        }
    }
}

/// `lab up --dry-run`: the shaping the spec asks for and the commands that build it, nothing
/// run.
fn dry_run(spec: &Spec, target: Option<String>) -> anyhow::Result<ExitCode> {
    let kernel = lab::Kernel { netem: true };
    println!("lab {} (dry run: nothing is built)", spec.name);
    if let Some(line) = target {
        println!("  {line}");
    }
    for line in shaping(spec) {
        println!("{line}");
    }
    let steps = lab::plan::links(spec, kernel).map_err(lab_fail)?;
    for step in lab::plan::namespaces(spec).iter().chain(&steps) {
        println!("  {step}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The rate each direction, in the words every command uses for a `--rate` it understood.
fn rate_line(spec: &Spec) -> Option<String> {
    let r = spec.rate_bps?;
    let r = wirespeed_model::units::Rate::from_bps(r).map_or_else(
        || wirespeed_model::units::speed(r),
        |r| r.from_source("--rate"),
    );
    Some(format!(
        "  rate: {r} each direction (tbf on the middle link)"
    ))
}

/// The shaping a spec asks for (before the kernel says how it is done).
fn shaping(spec: &Spec) -> Vec<String> {
    let mut out: Vec<String> = rate_line(spec).into_iter().collect();
    if let Some(p) = spec.loss {
        out.push(format!("  loss: {}% each direction", p * 100.0));
    }
    if let Some(d) = spec.delay_ms {
        out.push(format!("  delay: {d} ms added round trip"));
    }
    out
}

/// What `lab up` built, one fact a line.
fn describe(lab: &Lab, relay_pid: Option<u32>) -> Vec<String> {
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
                lab::plan::DELAY_DEV,
                d / 2.0
            ),
        });
    }
    if let Some(c) = &s.rps_cpus {
        out.push(format!("  RPS: the ends' receive softirq on {}", c.words()));
    }
    out
}

fn exec(a: ExecArgs) -> anyhow::Result<ExitCode> {
    let side = Side::parse(&a.side).ok_or_else(|| {
        exit::fail(
            exit::USAGE,
            format!(
                "lab exec: side '{}': use a|client, b|server, r1 or r2",
                a.side
            ),
        )
    })?;
    lab::check_can_run(false).map_err(lab_fail)?;
    if !lab::existing(&a.name.name).contains(&side) {
        return Err(lab_fail(LabError::NotFound(side.netns(&a.name.name))));
    }
    let status = Command::new("ip")
        .args(["netns", "exec", &side.netns(&a.name.name)])
        .args(&a.command)
        .status()
        .map_err(|e| exit::fail(exit::HOST, format!("lab exec: cannot run ip: {e}")))?;
    // the command's own exit code, as a shell would give it
    let code = status.code().unwrap_or(128 + 1);
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

fn status(name: &str) -> anyhow::Result<ExitCode> {
    lab::check_can_run(false).map_err(lab_fail)?;
    let sides = lab::existing(name);
    if sides.is_empty() {
        println!("lab {name} is not up");
        return Ok(ExitCode::SUCCESS);
    }
    for side in sides {
        let ns = side.netns(name);
        println!("{ns}:");
        let show = |args: &[&str]| {
            // starts: ip (the lab status lines)
            Command::new(args[0])
                .args(&args[1..])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
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
            println!("  {l}  mtu {}", mtu.trim());
        }
        for l in show(&["tc", "-n", &ns, "qdisc", "show"]).lines() {
            if l.contains("tbf") || l.contains("netem") {
                println!("  {l}");
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
            &format!("/sys/class/net/{}/carrier", lab::plan::DELAY_DEV),
        ]);
        if show(&["ip", "-n", &ns, "link", "show", lab::plan::DELAY_DEV])
            .contains(lab::plan::DELAY_DEV)
        {
            println!(
                "  delay line: {}",
                if carrier.trim() == "1" {
                    "a relay is attached"
                } else {
                    "no relay attached: the path carries nothing (run `wirespeed lab up` again)"
                }
            );
        }
        if let Some(c) = lab::parse_drop_counters(&nft) {
            println!(
                "  random drop: {} of {} packets forwarded from its end ({:.3}%)",
                c.dropped,
                c.seen,
                if c.seen > 0 {
                    c.dropped as f64 * 100.0 / c.seen as f64
                } else {
                    0.0
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
