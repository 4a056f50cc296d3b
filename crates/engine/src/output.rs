//! Where a test's live events go. The engine calls a [`Reporter`] as things happen; the
//! standard one renders with the report crate's renderers (text like iperf3, `-J`,
//! `--json-stream`) to any writer.

use std::io::Write;
use std::sync::{Arc, Mutex};

use wirespeed_report::json;
use wirespeed_report::text::{
    prefix_lines, write_done, write_error, write_server_output, write_server_output_json,
    TextContext, TextOptions, TextRenderer,
};
use wirespeed_report::where_ran::write_where_as;
use wirespeed_report::{Interval, LiveEvent, Start, TestResult};

/// Live events of one test.
pub trait Reporter: Send {
    /// Client: before the control connection (`Connecting to host ...`).
    fn connecting(&mut self, _host: &str, _port: u16) {}
    /// The streams are connected; `start` is complete.
    fn start(&mut self, _start: &Start) {}
    /// One interval ended.
    fn interval(&mut self, _iv: &Interval) {}
    /// `true` when this reporter shows [`Reporter::live`] (the engine decides the verdict so
    /// far only then).
    fn wants_live(&self) -> bool {
        false
    }
    /// After each interval of a running test: this end's and the peer's latest observation
    /// and the verdict so far (see [`wirespeed_report::LiveEvent`]).
    fn live(&mut self, _ev: &LiveEvent) {}
    /// A frame from the peer arrived after this end's latest tick (the peer's frame of an
    /// interval comes just after this end's tick of it): that tick's event again, now with it.
    /// A screen redraws, so that the peer's figures belong to the tick the rest shows; a stream
    /// of events ignores it (it had the tick once).
    fn peer_frame(&mut self, _ev: &LiveEvent) {}
    /// The test ended; `result.error` is set when it failed.
    fn finish(&mut self, _result: &TestResult) {}
    /// Text captured for iperf3's `--get-server-output` (server side), if this reporter keeps it.
    fn captured_text(&self) -> Option<String> {
        None
    }
}

/// Discards everything.
#[derive(Debug, Default)]
pub struct NullReporter;

impl Reporter for NullReporter {}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// iperf3's human output.
    #[default]
    Text,
    /// `-J`: one JSON document at the end.
    Json,
    /// `--json-stream`: one JSON object per line as events happen.
    JsonStream,
}

/// A writer several tests may share; each write of a whole block is atomic.
pub type SharedWriter = Arc<Mutex<Box<dyn Write + Send>>>;

/// Renders to a shared writer in the chosen format.
pub struct StandardReporter {
    out: SharedWriter,
    format: Format,
    opts: TextOptions,
    text: Option<TextRenderer>,
    /// A copy of the text output (server `--get-server-output`).
    capture: Option<Vec<u8>>,
    /// Text mode: print `wirespeed: error - ...` for a failed test (the server does; the
    /// client leaves its one error line to the command line).
    print_errors: bool,
    /// Text mode: print where the work ran (and any tune change) under each test's summary
    /// (the server does; the client's command line prints it after its `wirespeed:` line).
    print_where: bool,
    /// Only what iperf3 prints (strict iperf3 mode): no `wirespeed` section, no where-ran text.
    strict: bool,
    /// `-T`: text lines prefixed with `TITLE:  `, as iperf3 does.
    title: Option<String>,
    /// The last failed test's report (its `error` set), for the command line to add what it
    /// prints after a report (where the work ran, the verdict).
    failed: Option<TestResult>,
}

impl StandardReporter {
    pub fn new(out: SharedWriter, format: Format, opts: TextOptions) -> StandardReporter {
        StandardReporter {
            out,
            format,
            opts,
            text: None,
            capture: None,
            print_errors: false,
            print_where: false,
            strict: false,
            title: None,
            failed: None,
        }
    }

    /// The report of the last failed test, once.
    pub fn take_failed(&mut self) -> Option<TestResult> {
        self.failed.take()
    }

    /// `-T TITLE` (text output): prefix the lines as iperf3 does.
    pub fn titled(mut self, title: Option<String>) -> StandardReporter {
        self.title = title.filter(|_| self.format == Format::Text);
        self
    }

    /// Print only what iperf3 prints (see [`wirespeed_report::strict`]).
    pub fn strict(mut self) -> StandardReporter {
        self.strict = true;
        self
    }

    /// Print where the work ran under each finished test (text output).
    pub fn printing_where(mut self) -> StandardReporter {
        self.print_where = true;
        self
    }

    /// Print failed tests' errors in the text output.
    pub fn printing_errors(mut self) -> StandardReporter {
        self.print_errors = true;
        self
    }

    /// Keep a copy of the text output.
    pub fn capturing(mut self) -> StandardReporter {
        self.capture = Some(Vec::new());
        self
    }

    fn emit(&mut self, f: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) {
        let mut buf = Vec::new();
        if f(&mut buf).is_err() {
            return;
        }
        if let Some(t) = &self.title {
            buf = prefix_lines(&buf, t);
        }
        self.write_out(buf);
    }

    /// Write as it is (the server's output, which iperf3 does not prefix with the title).
    fn emit_raw(&mut self, f: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) {
        let mut buf = Vec::new();
        if f(&mut buf).is_err() {
            return;
        }
        self.write_out(buf);
    }

    fn write_out(&mut self, buf: Vec<u8>) {
        if let Some(c) = &mut self.capture {
            c.extend_from_slice(&buf);
        }
        if let Ok(mut w) = self.out.lock() {
            let _ = w.write_all(&buf);
            let _ = w.flush();
        }
    }
}

impl Reporter for StandardReporter {
    fn connecting(&mut self, host: &str, port: u16) {
        if self.format == Format::Text {
            self.emit(|b| wirespeed_report::text::write_connecting(b, host, port));
        }
    }

    fn start(&mut self, start: &Start) {
        match self.format {
            Format::Text => {
                // `iperf Done.` is written by `finish`, after the server's output.
                let opts = TextOptions {
                    done_line: false,
                    ..self.opts
                };
                let mut r = TextRenderer::new(TextContext::from_start(start), opts);
                if start.connecting_to.is_some() {
                    // `connecting` already printed the first line.
                    self.emit(|b| r.start_after_connecting(b, start));
                } else {
                    self.emit(|b| r.start(b, start));
                }
                self.text = Some(r);
            }
            Format::JsonStream => self.emit(|b| json::stream_start(b, start)),
            Format::Json => {}
        }
    }

    fn interval(&mut self, iv: &Interval) {
        match self.format {
            Format::Text => {
                if let Some(mut r) = self.text.take() {
                    self.emit(|b| r.interval(b, iv));
                    self.text = Some(r);
                }
            }
            Format::JsonStream => self.emit(|b| json::stream_interval(b, iv)),
            Format::Json => {}
        }
    }

    fn wants_live(&self) -> bool {
        self.format == Format::JsonStream && !self.strict
    }

    fn live(&mut self, ev: &LiveEvent) {
        if self.wants_live() {
            self.emit(|b| json::stream_live(b, ev));
        }
    }

    fn finish(&mut self, result: &TestResult) {
        if result.error.is_some() {
            self.failed = Some(result.clone());
        }
        match self.format {
            Format::Text => {
                let err = result.error.clone();
                let has_end = result.end.sum_sent.is_some() || result.end.sum.is_some();
                if let (Some(mut r), true) = (self.text.take(), has_end) {
                    self.emit(|b| r.end(b, result));
                    if r.context().role == wirespeed_model::End::Client {
                        if let Some(t) = &result.server_output_text {
                            self.emit(|b| b.write_all(b"\n"));
                            self.emit_raw(|b| write_server_output(b, t));
                        } else if let Some(j) = &result.server_output_json {
                            self.emit(|b| b.write_all(b"\n"));
                            self.emit_raw(|b| write_server_output_json(b, j));
                        }
                        if self.opts.done_line && result.error.is_none() {
                            self.emit(write_done);
                        }
                    }
                }
                if self.print_where && has_end && !self.strict {
                    let tables = self.opts.verbose || self.opts.where_tables;
                    self.emit(|b| write_where_as(b, result, tables));
                }
                if let (Some(e), true) = (err, self.print_errors) {
                    let program = if self.strict { "iperf3" } else { "wirespeed" };
                    self.emit(|b| write_error(b, program, &e));
                }
            }
            Format::Json | Format::JsonStream => {
                let shaped;
                let result = if self.strict {
                    let server = result.start.accepted_connection.is_some();
                    shaped = wirespeed_report::strict::iperf3_strict(result, server);
                    &shaped
                } else {
                    result
                };
                if self.format == Format::Json {
                    self.emit(|b| json::write_json(b, result));
                } else {
                    self.emit(|b| json::stream_finish(b, result));
                }
            }
        }
    }

    fn captured_text(&self) -> Option<String> {
        self.capture
            .as_ref()
            .map(|c| String::from_utf8_lossy(c).into_owned())
    }
}
