//! `doctor`, `topo` and `capture`: host facts and findings.
//!
//! The host is read through a root directory: `/` (live), `--root DIR` (a captured tree), or
//! `--snapshot FILE.tar.gz` (unpacked safely into a temporary directory). Doctor exits 0 when it
//! has no finding, 1 when it has some, and with the codes of `exit.rs` on errors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use wirespeed_doctor::report::{HostInfo, Report};
use wirespeed_doctor::target::{Ask, Command};
use wirespeed_doctor::{diagnose_target, topo, DoctorError, Options};
use wirespeed_host::{capture, collect, CpuSet, Root, Snapshot};

use crate::exit;

/// Where the host is read from.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    /// Read a captured tree (a directory standing for `/`) instead of this host.
    #[arg(long, value_name = "DIR", conflicts_with = "snapshot")]
    root: Option<PathBuf>,
    /// Read a snapshot written by `wirespeed capture` instead of this host.
    #[arg(long, value_name = "FILE")]
    snapshot: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Diagnose only this interface (default: every PCI NIC). No short form: `-i` is
    /// `--interval` in client and server.
    #[arg(long, value_name = "IFACE")]
    iface: Option<String>,
    /// CPUs the application runs on (e.g. 6 or 6-7,10): enables the placement checks.
    #[arg(long, value_name = "LIST", value_parser = crate::common::cpu_list)]
    app_cpus: Option<CpuSet>,
    /// Round-trip time of the paths to serve, in ms (socket buffers vs bandwidth × RTT)
    /// [default: 10].
    #[arg(long, value_name = "MS", value_parser = crate::common::rtt)]
    rtt: Option<f64>,
    /// The rate wanted from the path (50G, 2.5G, 400M; a bare number is Mbit/s): sizes buffers
    /// for it, and is the rate checked against when the NIC reports no speed (virtual NICs).
    #[arg(long, value_name = "RATE", value_parser = crate::common::rate)]
    rate: Option<wirespeed_model::units::Rate>,
    #[command(flatten)]
    source: SourceArgs,
    /// Print the versioned JSON report (docs/doctor.md) instead of text.
    #[arg(short = 'J', long)]
    json: bool,
    #[command(flatten)]
    html: crate::pictures::HtmlArg,
    /// Exit 1 when a finding of this severity or worse is reported; 0 otherwise.
    #[arg(long = "fail-on", value_name = "SEVERITY", value_enum, default_value_t = FailOn::Warning)]
    fail_on: FailOn,
}

/// `--fail-on`: the least severity that makes doctor exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FailOn {
    Info,
    Warning,
    Critical,
}

impl FailOn {
    fn severity(self) -> wirespeed_doctor::Severity {
        match self {
            FailOn::Info => wirespeed_doctor::Severity::Info,
            FailOn::Warning => wirespeed_doctor::Severity::Warning,
            FailOn::Critical => wirespeed_doctor::Severity::Critical,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct TopoArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Print JSON instead of text.
    #[arg(short = 'J', long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// The snapshot to write (.tar.gz).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: PathBuf,
    /// Capture from a tree standing for `/` instead of this host.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

/// An opened source; holds the unpacked snapshot alive while it is read.
struct Source {
    root: Root,
    info: HostInfo,
    _snapshot: Option<Snapshot>,
}

/// `--root DIR`: a directory standing for the host's `/`.
pub(crate) fn root_dir(dir: &Path) -> anyhow::Result<Root> {
    if !dir.is_dir() {
        return Err(exit::fail(
            exit::IO,
            format!("--root {}: not a directory", dir.display()),
        ));
    }
    Ok(Root::new(dir))
}

/// `--snapshot FILE`: a snapshot written by `wirespeed capture`, unpacked while it lives.
pub(crate) fn open_snapshot(file: &Path) -> anyhow::Result<Snapshot> {
    // An interrupted run must not leave the unpacked tree in $TMPDIR.
    wirespeed_host::snapshot::remove_on_signals()
        .map_err(|e| exit::fail(exit::INTERNAL, format!("signal handler: {e}")))?;
    Snapshot::open(file).map_err(|e| exit::fail(exit::IO, format!("--snapshot: {e}")))
}

fn open_source(a: &SourceArgs) -> anyhow::Result<Source> {
    if let Some(file) = &a.snapshot {
        let snap = open_snapshot(file)?;
        return Ok(Source {
            root: snap.root().clone(),
            info: HostInfo {
                hostname: None,
                kernel: None,
                source: "snapshot".into(),
                path: Some(file.display().to_string()),
            },
            _snapshot: Some(snap),
        });
    }
    if let Some(dir) = &a.root {
        return Ok(Source {
            root: root_dir(dir)?,
            info: HostInfo {
                hostname: None,
                kernel: None,
                source: "root".into(),
                path: Some(dir.display().to_string()),
            },
            _snapshot: None,
        });
    }
    Ok(Source {
        root: Root::live(),
        info: HostInfo {
            hostname: None,
            kernel: None,
            source: "live".into(),
            path: None,
        },
        _snapshot: None,
    })
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn emit(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    exit::stdout_written(out.write_all(bytes).and_then(|_| out.flush()))
}

fn emit_json(mut doc: String) -> anyhow::Result<()> {
    doc.push('\n');
    emit(doc.as_bytes())
}

pub(crate) fn emit_text(
    render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    what: &str,
) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    render(&mut buf).with_context(|| format!("rendering {what}"))?;
    emit(&buf)
}

pub fn run_doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut src = open_source(&args.source)?;
    let facts = collect(&src.root);
    let ask = Ask {
        iface: args.iface.clone(),
        rate: args.rate,
        rtt_ms: args.rtt,
        ..Ask::default()
    }
    .with_cpus("--app-cpus", args.app_cpus.as_ref());
    let target = crate::common::resolve_target(Command::Doctor, Some((&src.root, &facts)), &ask)?;
    let opts = Options::from(&target);
    let findings = diagnose_target(&facts, &target).map_err(|e| {
        let code = match &e {
            DoctorError::Target(t) if !t.is_host() => exit::USAGE,
            DoctorError::UnknownInterface { .. } | DoctorError::Target(_) => exit::HOST,
        };
        exit::fail(code, e.to_string())
    })?;
    src.info.hostname = facts.hostname.clone();
    src.info.kernel = facts.kernel.clone();
    let notes = wirespeed_doctor::notes(&facts, &opts);
    let report = Report::new(
        format!("wirespeed {}", env!("CARGO_PKG_VERSION")),
        src.info.clone(),
        &opts,
        findings,
        facts,
    )
    .with_notes(notes)
    .with_target(&target);
    crate::pictures::save(
        &args.html,
        None,
        "doctor",
        || {
            Ok(wirespeed_report::doc::Document::Doctor(Box::new(
                report.clone(),
            )))
        },
        None,
    )?;
    if args.json {
        emit_json(report.to_json())?;
    } else {
        emit_text(
            |w| wirespeed_report::doctor::write_report(w, &report),
            "the report",
        )?;
    }
    Ok(ExitCode::from(
        if report.fails_at(args.fail_on.severity()) {
            exit::FINDINGS
        } else {
            exit::OK
        },
    ))
}

pub fn run_topo(args: TopoArgs) -> anyhow::Result<ExitCode> {
    let src = open_source(&args.source)?;
    let facts = collect(&src.root);
    let t = topo::build(&facts);
    if args.json {
        emit_json(t.to_json())?;
    } else {
        emit_text(
            |w| wirespeed_report::doctor::write_topo(w, &t),
            "the topology",
        )?;
    }
    Ok(ExitCode::from(exit::OK))
}

pub fn run_capture(args: CaptureArgs) -> anyhow::Result<ExitCode> {
    let root = match &args.root {
        Some(d) => root_dir(d)?,
        None => Root::live(),
    };
    let s =
        capture(&root, &args.output).map_err(|e| exit::fail(exit::IO, format!("capture: {e}")))?;
    let size = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!(
        "wirespeed capture: {} files ({} bytes), {} placeholders, {} links, {} directories, {} NIC{} -> {} ({} KiB)",
        s.files,
        s.bytes,
        s.placeholders,
        s.links,
        s.dirs,
        s.facts.nics.len(),
        if s.facts.nics.len() == 1 { "" } else { "s" },
        args.output.display(),
        size.div_ceil(1024)
    );
    Ok(ExitCode::from(exit::OK))
}
