//! Tune's documents as text: a plan (`wirespeed tune`) and what `--apply` did with it. The
//! plan's JSON is its serde form; its shell script is tune's own (`Plan::render_script`, what
//! `--persist` installs too).

use std::fmt::Write as _;
use std::io::{self, Write};

use wirespeed_tune::plan::table_setting;
use wirespeed_tune::{ApplyReport, Plan, Step, StepStatus};

/// A tune plan as a table: the head (what is tuned, where), one row per step with the finding
/// it fixes, the setting, its current and new value, the command; then what it leaves alone.
pub fn write_plan<W: Write + ?Sized>(w: &mut W, plan: &Plan) -> io::Result<()> {
    let mut out = head(plan);
    if plan.steps.is_empty() {
        out.push_str("Nothing to change.\n");
    } else {
        let (wf, ws, wc) = widths(plan);
        let _ = writeln!(
            out,
            "{:>3}  {:wf$}  {:ws$}  {:wc$}  new",
            "#", "fixes", "setting", "current"
        );
        for (i, s) in plan.steps.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>3}  {:wf$}  {:ws$}  {:wc$}  {}",
                i + 1,
                s.finding,
                table_setting(&s.setting),
                s.current,
                s.new
            );
            let _ = writeln!(out, "     {:wf$}  # {}", "", s.summary);
            for line in s.command.lines() {
                let _ = writeln!(out, "     {:wf$}  $ {line}", "");
            }
        }
    }
    out.push_str(&notes(plan));
    w.write_all(out.as_bytes())
}

/// What `--apply` did, each step once: the plan's head, one line per step with its value
/// before, the value asked for and the outcome (and why, where it did not apply), then
/// what the plan leaves alone and the counts.
pub fn write_applied<W: Write + ?Sized>(
    w: &mut W,
    plan: &Plan,
    report: &ApplyReport,
) -> io::Result<()> {
    let mut out = head(plan);
    let (wf, ws, wc) = widths(plan);
    let wn = plan
        .steps
        .iter()
        .map(|s| s.new.len())
        .max()
        .unwrap_or(0)
        .clamp(3, 24);
    let _ = writeln!(
        out,
        "{:>3}  {:wf$}  {:ws$}  {:wc$}  {:wn$}  outcome",
        "#", "fixes", "setting", "was", "new"
    );
    for r in &report.steps {
        let Some(s) = plan.steps.get(r.step) else {
            continue;
        };
        let detail = r
            .detail
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:>3}  {:wf$}  {:ws$}  {:wc$}  {:wn$}  {}{detail}",
            r.step + 1,
            s.finding,
            table_setting(&s.setting),
            s.current,
            s.new,
            r.status.as_str(),
        );
    }
    out.push_str(&notes(plan));
    let _ = writeln!(
        out,
        "\nApplied {} of {} steps ({} already set, {} not movable, {} failed, {} skipped).",
        report.count(StepStatus::Applied),
        plan.steps.len(),
        report.count(StepStatus::AlreadySet),
        report.count(StepStatus::NotMovable),
        report.count(StepStatus::Failed),
        report.count(StepStatus::Skipped),
    );
    let unsupported = report.count(StepStatus::NotSupported);
    if unsupported > 0 {
        let _ = writeln!(
            out,
            "{unsupported} not supported by the driver (nothing changed there)."
        );
    }
    w.write_all(out.as_bytes())
}

/// The first lines: what is tuned, on which host and root.
fn head(plan: &Plan) -> String {
    let mut out = String::new();
    if let Some(line) = &plan.run_app {
        let _ = writeln!(out, "FIRST: {line}");
    }
    let host = plan.hostname.as_deref().unwrap_or("host");
    let _ = writeln!(out, "tune plan for {host} (root {})", plan.root);
    for c in &plan.context {
        let _ = writeln!(out, "  {c}");
    }
    out.push('\n');
    out
}

/// Column widths of the steps table: finding, setting, current value.
fn widths(plan: &Plan) -> (usize, usize, usize) {
    let width = |f: fn(&Step) -> &str| plan.steps.iter().map(|s| f(s).len()).max().unwrap_or(0);
    (
        width(|s| &s.finding).max(7),
        width(|s| table_setting(&s.setting)).max(7),
        width(|s| &s.current).clamp(7, 24),
    )
}

/// What the plan leaves alone, and why.
fn notes(plan: &Plan) -> String {
    let mut out = String::new();
    if !plan.notes.is_empty() {
        out.push_str("\nNot changed by this plan:\n");
        for n in &plan.notes {
            match &n.finding {
                Some(f) => {
                    let _ = writeln!(out, "  - {f}: {}", n.text);
                }
                None => {
                    let _ = writeln!(out, "  - {}", n.text);
                }
            }
        }
    }
    out
}
