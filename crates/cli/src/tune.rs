//! `tune`: print a plan (or its script), apply it with a journal, revert a journal, list journals.
//!
//! `WIRESPEED_TUNE_STEP_DELAY_MS` (tests only) pauses apply after each step, so a test can land a
//! real `kill -9` in the middle of an apply.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use wirespeed_tune::doc::{JournalRow, Written};

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use wirespeed_doctor::placement::PlacementError;
use wirespeed_host::ethtool::{CoalesceSet, PauseSet};
use wirespeed_host::{CpuSet, Root};
use wirespeed_tune::engine::{self, RevertStatus, StepStatus};
use wirespeed_tune::journal;
use wirespeed_tune::planner::{self, Category, HostPlanError, IrqPolicy, PlanError, PlanOptions};
use wirespeed_tune::{ApplyOptions, TuneError};

use crate::{diagnose, exit};
use wirespeed_doctor::target::{Ask, Command};

/// Write to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
fn out(text: &str) {
    let _ = diagnose::emit(text.as_bytes());
}

/// The plan as text, on stdout.
fn emit_plan(plan: &wirespeed_tune::Plan) {
    let _ = diagnose::emit_text(|w| wirespeed_report::plan::write_plan(w, plan), "the plan");
}

macro_rules! say {
    () => { out("\n") };
    ($($arg:tt)*) => { out(&format!("{}\n", format!($($arg)*))) };
}

#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Without --apply, tune only prints the plan. `wirespeed tune revert` undoes the \
                  newest applied journal; `wirespeed tune status` lists journals."
)]
pub struct TuneArgs {
    #[command(subcommand)]
    cmd: Option<TuneCmd>,
    #[command(flatten)]
    plan: PlanArgs,
}

#[derive(Debug, Subcommand)]
enum TuneCmd {
    /// Restore every value a journal recorded, newest change first.
    Revert(RevertArgs),
    /// List the journals under the root and their state.
    Status(StatusArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    /// The NIC's NUMA node (its local CPUs), without the app CPUs.
    Node,
    /// The app CPUs' L3 group (CCD/CCX), without the app CPUs.
    L3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

/// `--pause`: which directions of flow control to turn on (the others off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PauseArg {
    Rx,
    Tx,
    Both,
    Off,
}

#[derive(Debug, clap::Args)]
struct RootArgs {
    /// Directory standing for the host's `/` (a captured tree); default the live host.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Where journals live, a path below the root.
    #[arg(long, value_name = "DIR", default_value = journal::DEFAULT_DIR)]
    journal_dir: String,
}

#[derive(Debug, clap::Args)]
struct PlanArgs {
    #[command(flatten)]
    root: RootArgs,
    /// Plan from a snapshot written by `wirespeed capture` (plan only: nothing to apply to).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["root", "apply"])]
    snapshot: Option<PathBuf>,
    /// The interface to tune; default the fastest PCI NIC whose link is up.
    #[arg(long, value_name = "IFACE")]
    iface: Option<String>,
    /// CPUs the application runs on (kept free of NIC queue IRQs).
    #[arg(long, value_name = "LIST")]
    app_cpus: Option<String>,
    /// Round-trip time the socket buffers are sized for, in milliseconds [default: 10].
    #[arg(long, value_name = "MS", value_parser = crate::common::rtt)]
    rtt: Option<f64>,
    /// The rate wanted from the path (50G, 2.5G, 400M; a bare number is Mbit/s): socket buffers
    /// are sized for it; needed for a NIC that reports no speed when DMI names no known
    /// instance type.
    #[arg(long, value_name = "RATE", value_parser = crate::common::rate)]
    rate: Option<wirespeed_model::units::Rate>,
    /// Round-robin the NIC's queue IRQs over these CPUs.
    #[arg(long, value_name = "LIST", conflicts_with = "irq_policy")]
    irq_cpus: Option<String>,
    /// Choose the IRQ CPUs by rule.
    #[arg(long, value_enum, value_name = "POLICY")]
    irq_policy: Option<PolicyArg>,
    /// Let --irq-cpus include app CPUs.
    #[arg(long)]
    allow_irq_on_app_cpus: bool,
    /// Set the interface's MTU (the switch and the peer must carry it).
    #[arg(long, value_name = "BYTES")]
    mtu: Option<u32>,
    /// Set the interface's transmit queue length.
    #[arg(long, value_name = "PACKETS")]
    txqueuelen: Option<u32>,
    /// Set the NIC's rx interrupt coalescing time (`ethtool -C IF rx-usecs N`); only on request.
    #[arg(long, value_name = "USECS")]
    rx_usecs: Option<u32>,
    /// Set the NIC's tx interrupt coalescing time (`ethtool -C IF tx-usecs N`).
    #[arg(long, value_name = "USECS")]
    tx_usecs: Option<u32>,
    /// Turn the NIC's adaptive rx coalescing on or off (`ethtool -C IF adaptive-rx on|off`).
    #[arg(long, value_enum, value_name = "on|off")]
    adaptive_rx: Option<OnOff>,
    /// Set the NIC's flow control (`ethtool -A IF rx on tx on`): rx, tx, both or off; only on
    /// request, since the switch port must do its half.
    #[arg(long, value_enum, value_name = "rx|tx|both|off", conflicts_with_all = ["rx_pause", "tx_pause"])]
    pause: Option<PauseArg>,
    /// Turn the NIC's RX pause (honouring the switch's pause frames) on or off.
    #[arg(long, value_enum, value_name = "on|off")]
    rx_pause: Option<OnOff>,
    /// Turn the NIC's TX pause (sending pause frames when its buffers fill) on or off.
    #[arg(long, value_enum, value_name = "on|off")]
    tx_pause: Option<OnOff>,
    /// Stop irqbalance (it would undo IRQ pinning); with --persist also disable it.
    #[arg(long)]
    stop_irqbalance: bool,
    /// Only these groups of settings: irq, stack, link, governor, ring, coalesce, pause,
    /// irqbalance (comma list).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    only: Vec<String>,
    /// Also write a sysctl.d drop-in and a boot-time unit that re-applies the plan.
    #[arg(long)]
    persist: bool,
    /// Perform the plan, journaling every change first.
    #[arg(long)]
    apply: bool,
    /// Print the plan as a standalone shell script instead.
    #[arg(long, conflicts_with_all = ["apply", "json"])]
    emit_script: bool,
    /// Print JSON (the plan, or the plan and the apply report).
    #[arg(short = 'J', long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct RevertArgs {
    #[command(flatten)]
    root: RootArgs,
    /// The journal: a name in the journal directory or a host path below the root; default the
    /// newest one not completely reverted.
    journal: Option<String>,
    /// Restore values someone changed since tune wrote them.
    #[arg(long)]
    force: bool,
    /// Print the revert report as JSON.
    #[arg(short = 'J', long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct StatusArgs {
    #[command(flatten)]
    root: RootArgs,
    /// Print the journals and their state as JSON.
    #[arg(short = 'J', long)]
    json: bool,
}

pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        Some(TuneCmd::Revert(a)) => run_revert(a),
        Some(TuneCmd::Status(a)) => run_status(a),
        None => run_plan(args.plan),
    }
}

fn root_of(a: &RootArgs) -> anyhow::Result<Root> {
    match &a.root {
        None => Ok(Root::live()),
        Some(dir) => diagnose::root_dir(dir),
    }
}

fn cpu_list(flag: &str, s: &str) -> anyhow::Result<CpuSet> {
    CpuSet::parse_nonempty(s).map_err(|e| exit::fail(exit::USAGE, format!("{flag}: {e}")))
}

fn tune_fail(e: TuneError) -> anyhow::Error {
    let code = match &e {
        TuneError::NotPrivileged
        | TuneError::MissingCapability { .. }
        | TuneError::NotWritable { .. }
        | TuneError::Busy { .. } => exit::HOST,
        TuneError::Root(_) | TuneError::Journal { .. } | TuneError::BadJournal { .. } => exit::IO,
    };
    exit::fail(code, e.to_string())
}

fn run_plan(a: PlanArgs) -> anyhow::Result<ExitCode> {
    let app = a
        .app_cpus
        .as_deref()
        .map(|s| cpu_list("--app-cpus", s))
        .transpose()?;
    let irq = match (&a.irq_cpus, a.irq_policy) {
        (Some(list), _) => Some(IrqPolicy::Cpus(cpu_list("--irq-cpus", list)?)),
        (None, Some(PolicyArg::Node)) => Some(IrqPolicy::Node),
        (None, Some(PolicyArg::L3)) => Some(IrqPolicy::L3),
        (None, None) => None,
    };
    let only = Category::parse_only(&a.only).map_err(|e| exit::fail(exit::USAGE, e))?;

    let snapshot = a
        .snapshot
        .as_deref()
        .map(diagnose::open_snapshot)
        .transpose()?;
    let root = match &snapshot {
        Some(s) => s.root().clone(),
        None => root_of(&a.root)?,
    };
    let root_shown = match (&a.snapshot, &a.root.root) {
        (Some(p), _) => format!("snapshot {}", p.display()),
        (None, Some(d)) => d.display().to_string(),
        (None, None) => "/".to_string(),
    };
    if a.apply {
        engine::check_privileged(&root).map_err(tune_fail)?;
    }
    // the one resolution of the interface, rate, RTT and CPUs; the planner checks none again
    let facts = wirespeed_host::collect(&root);
    let irq_cpus = match &irq {
        Some(IrqPolicy::Cpus(c)) => Some(c),
        _ => None,
    };
    let ask = Ask {
        iface: a.iface.clone(),
        rate: a.rate,
        rtt_ms: a.rtt,
        ..Ask::default()
    }
    .with_cpus("--app-cpus", app.as_ref())
    .with_cpus("--irq-cpus", irq_cpus);
    let target = crate::common::resolve_target(Command::Tune, Some((&root, &facts)), &ask)?;
    let opts = PlanOptions {
        irq,
        allow_irq_on_app_cpus: a.allow_irq_on_app_cpus,
        mtu: a.mtu,
        txqueuelen: a.txqueuelen,
        coalesce: CoalesceSet {
            adaptive_rx: a.adaptive_rx.map(|o| o == OnOff::On),
            rx_usecs: a.rx_usecs,
            tx_usecs: a.tx_usecs,
        },
        pause: match a.pause {
            Some(p) => PauseSet {
                rx: Some(matches!(p, PauseArg::Rx | PauseArg::Both)),
                tx: Some(matches!(p, PauseArg::Tx | PauseArg::Both)),
            },
            None => PauseSet {
                rx: a.rx_pause.map(|o| o == OnOff::On),
                tx: a.tx_pause.map(|o| o == OnOff::On),
            },
        },
        stop_irqbalance: a.stop_irqbalance,
        persist: a.persist,
        only,
        // the target's RTT, rate (and where it came from) and app CPUs: the planner takes them
        ..PlanOptions::new(&root_shown).with_target(&target)
    };
    // an upper device (bond, VLAN, bridge) with NICs beneath it: a plan for each, and the stack's;
    // the interface the target's --iface named (else the view takes the same rule's NIC)
    let plan = planner::plan_host(&root, &facts, target.named_iface(), &opts).map_err(|e| {
        let code = match e {
            HostPlanError::Plan(PlanError::Placement(PlacementError::NoNic)) => exit::HOST,
            HostPlanError::Plan(_) => exit::USAGE,
            HostPlanError::Collect(_) => exit::HOST,
        };
        exit::fail(code, e.to_string())
    })?;

    if a.emit_script {
        out(&plan.render_script());
        return Ok(ExitCode::from(exit::OK));
    }
    if !a.apply {
        if a.json {
            say!("{}", serde_json::to_string_pretty(&plan)?);
        } else {
            // the target under the plan's heading, with its context (text only: the JSON plan
            // is the plan's data)
            let mut shown = plan.clone();
            shown.context.splice(0..0, target.line());
            emit_plan(&shown);
            if !plan.steps.is_empty() {
                say!("\nDry run: nothing changed. Add --apply to perform the plan with a journal.");
            }
        }
        return Ok(ExitCode::from(exit::OK));
    }

    if plan.steps.is_empty() {
        if a.json {
            say!(
                "{}",
                serde_json::to_string_pretty(&Written::TuneApplied {
                    plan: &plan,
                    apply: None
                })?
            );
        } else {
            emit_plan(&plan);
            say!("\nNothing to apply.");
        }
        return Ok(ExitCode::from(exit::OK));
    }
    let delay_ms: u64 = std::env::var("WIRESPEED_TUNE_STEP_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let aopts = ApplyOptions {
        journal_dir: a.root.journal_dir.clone(),
        step_delay: Duration::from_millis(delay_ms),
        tool: concat!("wirespeed ", env!("CARGO_PKG_VERSION")).to_string(),
    };
    let report = engine::apply(&root, &plan, &aopts, &mut |_, _| {}).map_err(tune_fail)?;
    let failed = report.count(StepStatus::Failed);
    if a.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&Written::TuneApplied {
                plan: &plan,
                apply: Some(&report)
            })?
        );
    } else {
        let _ = diagnose::emit_text(
            |w| wirespeed_report::plan::write_applied(w, &plan, &report),
            "what --apply did",
        );
        let root_flag = a
            .root
            .root
            .as_ref()
            .map(|d| format!(" --root {}", d.display()))
            .unwrap_or_default();
        // The file itself: under --root DIR, DIR's copy of the journal directory.
        say!(
            "Journal: {}\nUndo with: wirespeed tune revert{root_flag}",
            journal::shown_path(&root, &report.journal)
        );
    }
    Ok(ExitCode::from(if failed > 0 {
        exit::HOST
    } else {
        exit::OK
    }))
}

fn run_revert(a: RevertArgs) -> anyhow::Result<ExitCode> {
    let root = root_of(&a.root)?;
    let path = match &a.journal {
        Some(j) => journal::resolve(&a.root.journal_dir, j),
        None => match engine::latest_unreverted(&root, &a.root.journal_dir).map_err(tune_fail)? {
            Some(p) => p,
            None => {
                eprintln!(
                    "wirespeed: nothing to revert: no journal under {} that is not reverted",
                    journal::shown_path(&root, &a.root.journal_dir)
                );
                return Ok(ExitCode::from(exit::OK));
            }
        },
    };
    engine::check_privileged(&root).map_err(tune_fail)?;
    if !root.exists(&path) {
        return Err(exit::fail(exit::IO, format!("journal {path}: not found")));
    }
    let report = engine::revert(&root, &path, a.force)
        .map_err(tune_fail)
        .with_context(|| format!("revert {path}"))?;
    // Text names the file itself (under --root DIR, DIR's copy); JSON keeps the host path.
    let shown = journal::shown_path(&root, &path);
    if a.json {
        say!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let _ = diagnose::emit_text(
            |w| wirespeed_report::plan::write_reverted(w, &report, &shown),
            "what revert did",
        );
    }
    let code = if report.count(RevertStatus::Failed) > 0 {
        exit::HOST
    } else if report.count(RevertStatus::LeftChanged) > 0
        || !report.unreadable.is_empty()
        || report.truncated.is_some()
    {
        exit::FINDINGS
    } else {
        exit::OK
    };
    Ok(ExitCode::from(code))
}

fn run_status(a: StatusArgs) -> anyhow::Result<ExitCode> {
    let root = root_of(&a.root)?;
    let rows = JournalRow::list(&root, &a.root.journal_dir);
    let damaged = rows.iter().any(JournalRow::damaged);
    let code = ExitCode::from(if damaged { exit::FINDINGS } else { exit::OK });
    if a.json {
        let doc = Written::TuneJournals { journals: rows };
        say!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(code);
    }
    if rows.is_empty() {
        say!(
            "No journals under {}.",
            journal::shown_path(&root, &a.root.journal_dir)
        );
        return Ok(ExitCode::from(exit::OK));
    }
    let _ = diagnose::emit_text(
        |w| wirespeed_report::plan::write_journals(w, &rows, |p| journal::shown_path(&root, p)),
        "the journals",
    );
    Ok(code)
}
