//! Every document kind in every format it has, from one place: [`write`] takes a [`Document`]
//! and a [`Format`] and calls the kind's one exporter for that format ([`crate::text`],
//! [`crate::repeat`], [`crate::sweep`], [`crate::latency`], [`crate::doctor`] for text;
//! [`crate::json`] and the documents' serde forms for JSON; [`crate::html`]; [`crate::csv`]).
//! [`formats`] says which formats a kind has: a doctor report has no CSV, every other
//! combination is written.

use std::io::{self, Write};

use serde::Serialize;

use crate::doc::{Document, Kind, LatencyDoc, RepeatDoc, SweepDoc};
use crate::text::TextOptions;

/// An output format of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// For a terminal: iperf3's text for a test, each other kind's own.
    Text,
    /// The document as wirespeed writes and reads it back (`-J`, `--json`).
    Json,
    /// One self-contained page ([`crate::html`]).
    Html,
    /// For spreadsheets ([`crate::csv`]).
    Csv,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Text, Format::Json, Format::Html, Format::Csv];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "JSON",
            Format::Html => "HTML",
            Format::Csv => "CSV",
        }
    }
}

/// Why a document was not written.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("a {kind} document has no {} form", format.as_str())]
    Unsupported { kind: Kind, format: Format },
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The formats a document of `kind` is written in.
pub fn formats(kind: Kind) -> &'static [Format] {
    match kind {
        Kind::Doctor => &[Format::Text, Format::Json, Format::Html],
        _ => &Format::ALL,
    }
}

/// wirespeed's own documents by reference, tagged with their `kind` as [`crate::doc::Written`]
/// writes them (so JSON written here is read back as the same kind).
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum WrittenRef<'a> {
    Repeat(&'a RepeatDoc),
    Sweep(&'a SweepDoc),
    Latency(&'a LatencyDoc),
}

/// Write `doc` as `format` to `w`; `title` heads an HTML page.
pub fn write<W: Write + ?Sized>(
    w: &mut W,
    doc: &Document,
    format: Format,
    title: &str,
) -> Result<(), RenderError> {
    if !formats(doc.kind()).contains(&format) {
        return Err(RenderError::Unsupported {
            kind: doc.kind(),
            format,
        });
    }
    match format {
        Format::Text => text(w, doc)?,
        Format::Json => json(w, doc)?,
        Format::Html => crate::html::render(&[crate::html::Input { name: title, doc }], title, w)?,
        Format::Csv => crate::csv::render(doc, w).map_err(|e| match e {
            crate::csv::CsvError::Io(e) => RenderError::Io(e),
            crate::csv::CsvError::Unsupported(kind) => RenderError::Unsupported { kind, format },
            other => RenderError::Io(io::Error::other(other)),
        })?,
    }
    Ok(())
}

fn text<W: Write + ?Sized>(w: &mut W, doc: &Document) -> io::Result<()> {
    match doc {
        Document::Test(t) => crate::text::render_text(w, t, TextOptions::default()),
        Document::Repeat(r) => crate::repeat::write_text(w, &r.repeat),
        Document::Sweep(s) => {
            crate::sweep::write_heatmap(w, &s.matrix, false)?;
            if let Some(summary) = &s.summary {
                crate::sweep::write_summary(w, &s.matrix, summary)?;
            }
            if s.interrupted {
                writeln!(w, "(interrupted: the matrix is partial)")?;
            }
            Ok(())
        }
        Document::Latency(l) => crate::latency::write_table(w, &l.matrix),
        Document::Doctor(d) => crate::doctor::write_report(w, d),
    }
}

fn json<W: Write + ?Sized>(w: &mut W, doc: &Document) -> Result<(), RenderError> {
    match doc {
        Document::Test(t) => return Ok(crate::json::write_json(w, t)?),
        Document::Repeat(r) => serde_json::to_writer_pretty(&mut *w, &WrittenRef::Repeat(r))?,
        Document::Sweep(s) => serde_json::to_writer_pretty(&mut *w, &WrittenRef::Sweep(s))?,
        Document::Latency(l) => serde_json::to_writer_pretty(&mut *w, &WrittenRef::Latency(l))?,
        Document::Doctor(d) => serde_json::to_writer_pretty(&mut *w, d)?,
    }
    writeln!(w)?;
    Ok(())
}
