//! Pictures of results: `wirespeed report FILE.json… -o report.html` (or `--csv`), `wirespeed
//! diff A.json B.json [--threshold PCT]`, and the `--html FILE` / `--csv FILE` options of
//! client, sweep, latency and doctor. The renderers are the report crate's (`html`, `csv`,
//! `diff`); this module reads files, picks exit codes and writes the output.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use wirespeed_host::Root;
use wirespeed_observe::topology::Topology;
use wirespeed_report::doc::{Budget, Document, MAX_DOCUMENT_BYTES};
use wirespeed_report::{csv, diff, html};

use crate::common::heading;
use crate::exit;

/// `--html FILE` of client, sweep, latency and doctor.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HtmlArg {
    /// Also write the result as one self-contained HTML page (charts inline; docs/report.md).
    #[arg(help_heading = heading::OUTPUT, long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `--csv [FILE]` of client, sweep and latency: one convention for every command that writes
/// CSV beside its usual output. `-` (or no FILE) is stdout, which then holds only the CSV: what
/// the command prints there otherwise goes to stderr, and `-J` (also stdout) is refused with it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CsvFileArg {
    /// Also write the result as CSV to FILE (a test one row per interval and stream, a --repeat
    /// one row per run, a sweep one row per cell, latency one row per pair); `-` or no FILE:
    /// to stdout, the text then goes to stderr.
    #[arg(help_heading = heading::OUTPUT, long = "csv", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "-")]
    pub csv: Option<PathBuf>,
}

impl CsvFileArg {
    /// Whether the CSV goes to stdout (`--csv -` or `--csv` alone).
    pub fn to_stdout(&self) -> bool {
        self.csv.as_deref().is_some_and(|p| p == Path::new("-"))
    }

    /// `--csv -` and another output that takes stdout (`-J`) cannot both have it.
    pub fn check_stdout(&self, other: Option<&str>) -> anyhow::Result<()> {
        match other {
            Some(flag) if self.to_stdout() => Err(exit::fail(
                exit::USAGE,
                format!(
                    "--csv - and {flag} both write to stdout: give --csv a FILE (or leave out {flag})"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Whether the command's own output (`text_out`) goes to a terminal.
    pub fn text_is_terminal(&self) -> bool {
        use std::io::IsTerminal;
        if self.to_stdout() {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        }
    }

    /// Where the command's own output goes: stdout, or stderr when the CSV takes stdout.
    pub fn text_out(&self) -> Box<dyn Write> {
        if self.to_stdout() {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        }
    }
}

/// `-J`, `--html FILE` and `--csv [FILE]` of sweep and latency: their document on stdout as JSON
/// (or as text), and its pictures beside it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DocOutput {
    /// JSON output.
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub html: HtmlArg,
    #[command(flatten)]
    pub csv: CsvFileArg,
}

impl DocOutput {
    /// `--csv -` with `-J` is refused: both would write to stdout.
    pub fn check_stdout(&self) -> anyhow::Result<()> {
        self.csv.check_stdout(self.json.then_some("-J"))
    }
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// JSON results (client -J, client --repeat N -J, sweep -J, latency --json, doctor --json);
    /// several make a side-by-side comparison against the first.
    #[arg(required = true, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,
    /// Where to write the page (default: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write CSV instead of HTML (one document: a test, a repeat or a sweep).
    #[arg(long)]
    pub csv: bool,
    /// The page's title.
    #[arg(long, default_value = "wirespeed report")]
    pub title: String,
    /// Outline the L3 groups and NUMA nodes of this captured tree (a directory standing for
    /// `/`; `--root /` for this host) in sweep and latency heatmaps whose document has none.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["why", "table"])))]
pub struct ExplainArgs {
    /// How the verdict of a test's JSON result (client -J, or a server's) was decided: every
    /// rule that fired with its evidence and strength, and why the verdict outranked the rest.
    #[arg(long, value_name = "FILE.json")]
    pub why: Option<PathBuf>,
    /// The precedence table the verdict is decided by, one row a line.
    #[arg(long)]
    pub table: bool,
}

/// `explain --why FILE.json` / `explain --table`.
pub fn run_explain(a: ExplainArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let written = match &a.why {
        None => wirespeed_report::why::write_table(&mut out),
        Some(path) => {
            let doc = read_document(path, &mut Budget::default())?;
            let shown = path.display();
            let Document::Test(t) = doc else {
                return Err(exit::fail(
                    exit::DOCUMENT,
                    format!("{shown}: a {} document has no verdict: give a test's JSON result (client -J)", doc.kind().as_str()),
                ));
            };
            let Some(v) = t.verdict() else {
                return Err(exit::fail(
                    exit::DOCUMENT,
                    format!("{shown}: this result has no verdict (iperf3 wrote it, or its observation was off)"),
                ));
            };
            wirespeed_report::why::write_why(&mut out, v)
        }
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| exit::fail(exit::IO, format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The first (before) result.
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// The second (after) result.
    #[arg(value_name = "B.json")]
    pub b: PathBuf,
    /// Exit with status 9 when the headline figure (throughput, a repeat's median, a sweep's
    /// best pair, mean latency) moved by more than PCT percent, or a doctor finding appeared.
    #[arg(long, value_name = "PCT", value_parser = threshold)]
    pub threshold: Option<f64>,
}

fn threshold(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a percentage (a number ≥ 0)")),
    }
}

/// Read and recognise one document (a file or a pipe, at most `MAX_DOCUMENT_BYTES` read); a file
/// that cannot be read exits with `IO`, one that is not a result wirespeed knows with `DOCUMENT`.
/// Its values count against `budget`, shared by every document of the command.
pub fn read_document(path: &Path, budget: &mut Budget) -> anyhow::Result<Document> {
    let shown = path.display();
    let f = File::open(path).map_err(|e| exit::fail(exit::IO, format!("{shown}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| exit::fail(exit::IO, format!("{shown}: {e}")))?;
    if meta.is_dir() {
        return Err(exit::fail(exit::IO, format!("{shown}: a directory")));
    }
    let mut bytes = Vec::new();
    f.take(MAX_DOCUMENT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| exit::fail(exit::IO, format!("{shown}: {e}")))?;
    Document::parse_within(&bytes, budget)
        .map_err(|e| exit::fail(exit::DOCUMENT, format!("{shown}: {e}")))
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn create(path: &Path) -> anyhow::Result<File> {
    File::create(path).map_err(|e| exit::fail(exit::IO, format!("{}: {e}", path.display())))
}

fn io_fail(path: &Path, e: impl std::fmt::Display) -> anyhow::Error {
    exit::fail(exit::IO, format!("{}: {e}", path.display()))
}

/// Write `doc` as an HTML page to `path`.
fn write_html(path: &Path, name: &str, doc: &Document) -> anyhow::Result<()> {
    let mut f = create(path)?;
    html::render(&[html::Input { name, doc }], "wirespeed report", &mut f)
        .and_then(|()| f.flush())
        .map_err(|e| io_fail(path, e))
}

/// Write `doc` as CSV to `path` (`-`: stdout).
pub fn write_csv(path: &Path, doc: &Document) -> anyhow::Result<()> {
    write_csv_with(path, |w| csv::render(doc, w).map_err(io::Error::other))
}

/// Run `write` on the `--csv` target: the file at `path`, or stdout for `-`.
pub fn write_csv_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        return match write(&mut out).and_then(|()| out.flush()) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                Err(exit::fail(exit::IO, format!("writing to stdout: {e}")))
            }
            _ => Ok(()),
        };
    }
    let mut f = create(path)?;
    write(&mut f)
        .and_then(|()| f.flush())
        .map_err(|e| io_fail(path, e))
}

/// The `--html` / `--csv` files of a command, from its result as a document.
pub fn save(
    html: &HtmlArg,
    csv: Option<&CsvFileArg>,
    name: &str,
    doc: impl FnOnce() -> anyhow::Result<Document>,
    topo: Option<&Topology>,
) -> anyhow::Result<()> {
    let csv = csv.and_then(|c| c.csv.as_deref());
    if html.html.is_none() && csv.is_none() {
        return Ok(());
    }
    let mut doc = doc()?;
    if let Some(t) = topo {
        doc.set_topology_if_missing(t);
    }
    if let Some(p) = &html.html {
        write_html(p, name, &doc)?;
    }
    if let Some(p) = csv {
        write_csv(p, &doc)?;
    }
    Ok(())
}

pub fn run_report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut docs = Vec::new();
    let mut budget = Budget::default();
    for p in &a.files {
        docs.push((name_of(p), read_document(p, &mut budget)?));
    }
    if let Some(dir) = &a.root {
        let topo = wirespeed_observe::topology::read(&Root::new(dir));
        for (_, d) in &mut docs {
            d.set_topology_if_missing(&topo);
        }
    }
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(create(p)?),
        None => Box::new(std::io::stdout().lock()),
    };
    let target = a.output.clone().unwrap_or_else(|| PathBuf::from("stdout"));
    if a.csv {
        let [(_, doc)] = &docs[..] else {
            return Err(exit::fail(exit::USAGE, "--csv takes exactly one document"));
        };
        csv::render(doc, &mut out).map_err(|e| match e {
            csv::CsvError::Unsupported(_) => exit::fail(exit::DOCUMENT, e.to_string()),
            e => io_fail(&target, e),
        })?;
    } else {
        let inputs: Vec<html::Input<'_>> = docs
            .iter()
            .map(|(name, doc)| html::Input { name, doc })
            .collect();
        html::render(&inputs, &a.title, &mut out).map_err(|e| io_fail(&target, e))?;
    }
    out.flush().map_err(|e| io_fail(&target, e))?;
    Ok(ExitCode::from(exit::OK))
}

pub fn run_diff(a: DiffArgs) -> anyhow::Result<ExitCode> {
    let mut budget = Budget::default();
    let da = read_document(&a.a, &mut budget)?;
    let db = read_document(&a.b, &mut budget)?;
    let d = diff::diff(&da, &db);
    if !d.comparable() {
        return Err(exit::fail(
            exit::DOCUMENT,
            format!(
                "{} is a {} result and {} a {} result: nothing to compare",
                a.a.display(),
                d.kinds.0,
                a.b.display(),
                d.kinds.1
            ),
        ));
    }
    let mut out = std::io::stdout().lock();
    d.render_text(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| exit::fail(exit::IO, format!("writing to stdout: {e}")))?;
    match a.threshold {
        Some(t) if d.exceeds(t) => {
            eprintln!("wirespeed: diff: past the threshold of {t} %");
            Ok(ExitCode::from(exit::CHANGED))
        }
        _ => Ok(ExitCode::from(exit::OK)),
    }
}
