//! Tune's documents as text: a plan (`wirespeed tune`) and what `--apply` did with it. The
//! plan's JSON is its serde form; its shell script is tune's own (`Plan::render_script`, what
//! `--persist` installs too).

use std::fmt::Write as _;
use std::io::{self, Write};

use wirespeed_tune::doc::JournalRow;
use wirespeed_tune::engine::RevertStatus;
use wirespeed_tune::plan::table_setting;
use wirespeed_tune::{ApplyReport, Plan, RevertReport, Step, StepStatus};

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

/// What `tune revert` did with the journal `shown` (its path as the reader finds it): one line
/// per change with its outcome, the counts, and what was not reverted or may be missing.
pub fn write_reverted<W: Write + ?Sized>(
    w: &mut W,
    report: &RevertReport,
    shown: &str,
) -> io::Result<()> {
    let mut out = String::new();
    if report.already_reverted {
        let _ = writeln!(out, "{shown}: already reverted; nothing to do.");
        return w.write_all(out.as_bytes());
    }
    for i in &report.items {
        let _ = writeln!(
            out,
            "{:>3}  {:<26} {}{}",
            i.seq,
            i.status.as_str(),
            i.setting,
            i.detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        );
    }
    let left = report.count(RevertStatus::LeftChanged);
    let failed = report.count(RevertStatus::Failed);
    let _ = writeln!(
        out,
        "{shown}: {} restored, {} already original, {left} left alone (changed since), {failed} failed.",
        report.count(RevertStatus::Restored),
        report.count(RevertStatus::AlreadyOriginal),
    );
    if left > 0 {
        let _ = writeln!(
            out,
            "Values changed by someone else were left alone; `--force` restores them too."
        );
    }
    if !report.unreadable.is_empty() {
        let lines: Vec<String> = report
            .unreadable
            .iter()
            .map(|u| u.line.to_string())
            .collect();
        let _ = writeln!(
            out,
            "{shown}: could not read line(s) {}; every readable change was reverted, any change on those lines was not:",
            lines.join(", ")
        );
        for u in &report.unreadable {
            let _ = writeln!(out, "  line {}: {}", u.line, u.reason.escape_debug());
        }
    }
    if let Some(why) = &report.truncated {
        let _ = writeln!(
            out,
            "{shown}: truncated: {why}; every change it still names was reverted, check what tune changed after that by hand."
        );
    } else if report.interrupted {
        let _ = writeln!(
            out,
            "{shown}: has no end record: the apply was interrupted (or the journal cut short after a change); every change it names was reverted."
        );
    }
    w.write_all(out.as_bytes())
}

/// `tune status`: one line per journal (named by `shown`, its path as the reader finds it):
/// its state, when it was made, the interface, the changes, and why it is unreadable or cut
/// short.
pub fn write_journals<W: Write + ?Sized>(
    w: &mut W,
    rows: &[JournalRow],
    shown: impl Fn(&str) -> String,
) -> io::Result<()> {
    let mut out = String::new();
    for row in rows {
        let _ = match row {
            JournalRow::Unreadable { journal, error } => {
                writeln!(out, "{}  unreadable: {error}", shown(journal))
            }
            JournalRow::Read {
                journal,
                created,
                state,
                iface,
                changes,
                not_movable,
                truncated,
            } => writeln!(
                out,
                "{}  {:<16} {:<24} iface {:<14} {changes} changes{}{}",
                shown(journal),
                state.as_str(),
                created,
                iface.as_deref().unwrap_or("-"),
                match not_movable {
                    0 => String::new(),
                    n => format!(", {n} IRQs not movable"),
                },
                truncated
                    .as_deref()
                    .map(|why| format!("; truncated: {why}"))
                    .unwrap_or_default()
            ),
        };
    }
    w.write_all(out.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_tune::State;

    #[test]
    fn journals_one_line_each_named_as_the_reader_finds_them() {
        let rows = [
            JournalRow::Read {
                journal: "/var/lib/j-1.jsonl".into(),
                created: "2025-11-22T07:55:01.123Z".into(),
                state: State::Applied,
                iface: Some("eth0".into()),
                changes: 3,
                not_movable: 2,
                truncated: Some("line 4 cut".into()),
            },
            JournalRow::Unreadable {
                journal: "/var/lib/j-2.jsonl".into(),
                error: "bad".into(),
            },
        ];
        let mut out = Vec::new();
        write_journals(&mut out, &rows, |p| format!("/copy{p}")).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("/copy/var/lib/j-1.jsonl  "), "{text}");
        assert!(
            lines[0].ends_with(
                "iface eth0           3 changes, 2 IRQs not movable; truncated: line 4 cut"
            ),
            "{text}"
        );
        assert_eq!(lines[1], "/copy/var/lib/j-2.jsonl  unreadable: bad");
    }

    #[test]
    fn an_already_reverted_journal_is_one_line() {
        let report = RevertReport {
            journal: "/j".into(),
            already_reverted: true,
            items: Vec::new(),
            unreadable: Vec::new(),
            truncated: None,
            interrupted: false,
        };
        let mut out = Vec::new();
        write_reverted(&mut out, &report, "/shown").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "/shown: already reverted; nothing to do.\n"
        );
        let counted = RevertReport {
            already_reverted: false,
            interrupted: true,
            ..report
        };
        let mut out = Vec::new();
        write_reverted(&mut out, &counted, "/shown").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "/shown: 0 restored, 0 already original, 0 left alone (changed since), 0 failed.\n"
            ),
            "{text}"
        );
        assert!(text.contains("/shown: has no end record"), "{text}");
    }
}
