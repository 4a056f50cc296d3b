//! `explain --why`: how a verdict was decided, from the verdict a report carries — every
//! finding that fired with its evidence, how it relates to the test (bound, consistent, a
//! fact) and how strongly, its row in the precedence table and why the headline outranked
//! each of the others. A pure renderer over the typed verdict and
//! [`wirespeed_model::precedence`]'s table.

use std::io::{self, Write};

use wirespeed_model::precedence::{position, row, PRECEDENCE};
use wirespeed_model::text::terminal_short;
use wirespeed_model::{Also, AlsoKind, Bound, Evidence, Standing, Verdict};

/// One finding as the decision saw it.
struct Entry<'a> {
    id: String,
    line: &'a str,
    standing: Standing,
    evidence: Option<&'a Evidence>,
}

impl<'a> Entry<'a> {
    fn of_verdict(v: &'a Verdict) -> Entry<'a> {
        Entry {
            id: v.id.to_string(),
            line: &v.line,
            standing: v.standing,
            evidence: v.evidence.as_ref(),
        }
    }

    fn of_also(a: &'a Also) -> Entry<'a> {
        Entry {
            id: a.id.map_or("?".to_string(), |i| i.to_string()),
            line: &a.line,
            standing: a.standing,
            evidence: a.evidence.as_ref(),
        }
    }

    /// `bound, strength 0.98, row 9 of 15`
    fn standing_words(&self) -> String {
        let mut s = self
            .standing
            .bound
            .map_or("?".to_string(), |b| b.word().to_string());
        if let Some(x) = self.standing.strength {
            s.push_str(&format!(", strength {x:.2}"));
        }
        if let Some(r) = self.standing.rank {
            s.push_str(&format!(
                ", row {} of {}",
                position(r) + 1,
                PRECEDENCE.len()
            ));
        }
        s
    }
}

/// Why `head` outranks `other` in the decision: its bound, then its row, then its strength.
fn outranks(head: &Entry, other: &Entry) -> String {
    match (head.standing.bound, other.standing.bound) {
        (Some(h), Some(o)) if h != o => {
            return match o {
                Bound::Fact => format!(
                "{} is a fact about the setup with no evidence that it bound this test; {} is {}",
                other.id,
                head.id,
                h.word()
            ),
                _ => format!(
                    "{} is {}, {} only {}",
                    head.id,
                    h.word(),
                    other.id,
                    o.word()
                ),
            }
        }
        _ => {}
    }
    match (head.standing.rank, other.standing.rank) {
        (Some(h), Some(o)) if position(h) < position(o) => format!(
            "row {} before row {}: {}",
            position(h) + 1,
            position(o) + 1,
            row(h).reason
        ),
        (Some(h), Some(o)) if h == o => match (head.standing.strength, other.standing.strength) {
            (Some(a), Some(b)) => format!("the same row; stronger ({a:.2} against {b:.2})"),
            _ => "the same row; decided first".to_string(),
        },
        (Some(_), Some(_)) => "ordered by the table".to_string(),
        _ => "a report of an earlier version: its findings carry no bound or row".to_string(),
    }
}

fn evidence_words(e: &Evidence) -> String {
    let mut s = format!("reads {}", e.counters.join("; "));
    if let Some(a) = e.intervals {
        s.push_str(&format!("; held in {} of {} intervals", a.agreed, a.of));
    }
    s.push_str(&format!(" ({})", e.confidence.words()));
    s
}

/// The decision behind `v` (and, for `--bidir`, behind each direction's verdict).
pub fn write_why<W: Write + ?Sized>(w: &mut W, v: &Verdict) -> io::Result<()> {
    let head = Entry::of_verdict(v);
    let direction = v
        .direction
        .map_or(String::new(), |d| format!(" ({})", d.words()));
    writeln!(
        w,
        "Verdict{direction}: {} ({})",
        head.id,
        head.standing_words()
    )?;
    writeln!(w, "  {}", terminal_short(head.line, 2000))?;
    if let Some(e) = head.evidence {
        writeln!(w, "  evidence: {}", evidence_words(e))?;
    }
    if let Some(r) = head.standing.rank {
        writeln!(w, "  its row: {}", row(r).reason)?;
    }
    let findings: Vec<&Also> = v
        .also
        .iter()
        .filter(|a| a.kind == AlsoKind::Finding && a.direction.is_none())
        .collect();
    if findings.is_empty() {
        writeln!(w, "No other rule fired.")?;
    } else {
        writeln!(w, "Other rules that fired, and why the verdict leads them:")?;
        for a in findings {
            let e = Entry::of_also(a);
            writeln!(w, "- {} ({})", e.id, e.standing_words())?;
            writeln!(w, "  {}", terminal_short(e.line, 2000))?;
            if let Some(ev) = e.evidence {
                writeln!(w, "  evidence: {}", evidence_words(ev))?;
            }
            writeln!(w, "  why not the verdict: {}", outranks(&head, &e))?;
        }
    }
    let notes: Vec<&Also> = v
        .also
        .iter()
        .filter(|a| {
            !matches!(a.kind, AlsoKind::Finding | AlsoKind::OtherDirection) && a.direction.is_none()
        })
        .collect();
    if !notes.is_empty() {
        writeln!(w, "Notes (no finding of their own):")?;
        for a in notes {
            writeln!(w, "- {}", terminal_short(&a.line, 2000))?;
        }
    }
    if v.standing.bound.is_none() {
        writeln!(
            w,
            "(a report of an earlier version: its verdict carries no bound, strength or row; run the test again for the decision)"
        )?;
    }
    if let Some(o) = &v.other_direction {
        writeln!(w)?;
        writeln!(
            w,
            "The other direction (the faster: the verdict is the slower one's):"
        )?;
        write_why(w, o)?;
    }
    Ok(())
}

/// The precedence table as text: one row a line.
pub fn write_table<W: Write + ?Sized>(w: &mut W) -> io::Result<()> {
    for (i, r) in PRECEDENCE.iter().enumerate() {
        let ids: Vec<String> = r.ids.iter().map(|id| id.to_string()).collect();
        writeln!(w, "{:>2}. {}: {}", i + 1, ids.join(", "), r.reason)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::{Agreement, Confidence, Rank, VerdictId};

    fn finding(id: VerdictId, line: &str, bound: Bound, strength: f64, rank: Rank) -> Verdict {
        let mut v = Verdict::new(id, None, line);
        v.standing = Standing {
            bound: Some(bound),
            strength: Some(strength),
            rank: Some(rank),
        };
        v.evidence = Some(Evidence {
            counters: vec!["the intervals' throughput".into()],
            intervals: Some(Agreement { agreed: 3, of: 3 }),
            confidence: Confidence::Clear,
        });
        v
    }

    #[test]
    fn why_names_each_finding_and_what_outranked_it() {
        let mut v = finding(
            VerdictId::PathLimited,
            "path-limited: 1.9 Gbit/s flat",
            Bound::Binding,
            0.99,
            Rank::Shaper,
        );
        let same = finding(
            VerdictId::SameHost,
            "both ends on one host",
            Bound::Fact,
            0.0,
            Rank::SharedCpus,
        );
        let cpu = finding(
            VerdictId::SenderCpuBound,
            "sender CPU-bound",
            Bound::Binding,
            0.95,
            Rank::SaturatedCpu,
        );
        v.also.push(Also::finding(&same));
        v.also.push(Also::finding(&cpu));
        v.also
            .push(Also::note(AlsoKind::Loss, "loss seen but did not bind"));
        let mut out = Vec::new();
        write_why(&mut out, &v).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.starts_with("Verdict: path-limited (bound, strength 0.99, row 9 of 16)"),
            "{s}"
        );
        assert!(s.contains("held in 3 of 3 intervals (clear)"), "{s}");
        assert!(
            s.contains("- same-host (fact, strength 0.00, row 10 of 16)"),
            "{s}"
        );
        assert!(
            s.contains("why not the verdict: same-host is a fact about the setup with no evidence that it bound this test"),
            "{s}"
        );
        assert!(
            s.contains("why not the verdict: row 9 before row 15:"),
            "{s}"
        );
        assert!(
            s.contains("Notes (no finding of their own):\n- loss seen"),
            "{s}"
        );
    }

    #[test]
    fn an_earlier_versions_verdict_is_said_to_carry_no_decision() {
        let v: Verdict = serde_json::from_str(
            r#"{"id":"same-host","line":"both ends on one host","also":["path-limited: flat"]}"#,
        )
        .unwrap();
        let mut out = Vec::new();
        write_why(&mut out, &v).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("Verdict: same-host (?)"), "{s}");
        assert!(s.contains("- path-limited: flat"), "{s}");
        assert!(s.contains("a report of an earlier version"), "{s}");
    }

    #[test]
    fn the_table_has_a_line_per_row() {
        let mut out = Vec::new();
        write_table(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap().lines().count(),
            PRECEDENCE.len()
        );
    }
}
