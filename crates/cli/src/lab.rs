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
        for line in lab::words::dry_run(&spec, target.line()).map_err(lab_fail)? {
            println!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
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
    for line in target
        .line()
        .into_iter()
        .chain(lab::words::describe(&lab, relay_pid))
    {
        println!("{line}");
    }
    lab.keep();
    Ok(ExitCode::SUCCESS)
}

/// Start `wirespeed lab relay` for `lab` (a process of its own, see
/// [`lab::relay::spawn_external`]); its process id.
fn spawn_relay(lab: &Lab) -> anyhow::Result<u32> {
    let me = std::env::current_exe()
        .map_err(|e| lab_fail(LabError::Relay(format!("finding this program: {e}"))))?;
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
    ]);
    lab::relay::spawn_external(cmd).map_err(lab_fail)
}

/// `wirespeed lab relay`: attach, say `ready` on stdout (`lab up` reads that one line), relay
/// until the lab goes or a signal.
fn relay(a: RelayArgs) -> anyhow::Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| exit::fail(exit::INTERNAL, format!("installing a signal handler: {e}")))?;
    }
    let st =
        lab::relay::serve_lab(&a.name.name, a.delay, &stop, std::io::stdout()).map_err(lab_fail)?;
    eprintln!("{}", lab::words::relay_stopped(&a.name.name, &st));
    Ok(ExitCode::SUCCESS)
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
    match lab::words::status(name) {
        None => println!("lab {name} is not up"),
        Some(lines) => lines.iter().for_each(|l| println!("{l}")),
    }
    Ok(ExitCode::SUCCESS)
}
