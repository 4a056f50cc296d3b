//! Human output that reads like iperf3's.
//!
//! The layout is iperf3's, column for column: the connection lines, the
//! `[ ID] Interval  Transfer  Bitrate  Retr  Cwnd` header, one line per stream
//! per interval, `[SUM]` lines when the test has more than one stream, the
//! `- - -` separator, the sender/receiver summary, `[TX-C]`/`[RX-C]` role tags
//! for `--bidir`, UDP's `Jitter  Lost/Total Datagrams` columns, and units from
//! [`crate::units`].
//!
//! It streams: [`TextRenderer::start`] when the streams are connected,
//! [`TextRenderer::interval`] as each interval ends, [`TextRenderer::end`]
//! at the end, each writing only to the given `io::Write`. The renderer
//! keeps just enough state (how many intervals it printed) to decide between
//! header and separator, as iperf3 does. [`render_text`] does it all at once.
//!
//! What a line shows comes from the model only, so the same code renders a
//! wirespeed result and a parsed iperf3 `-J` document.

use std::io::{self, Write};

use crate::model::{
    Connected, End, EndStream, Interval, IntervalStats, Start, Summary, TestResult,
};
use crate::units::{c_g, format_bytes, format_rate, interval_span, UnitFormat};
use wirespeed_model::Transport;

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";

/// Display choices (iperf3's `-f` and `-V`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextOptions {
    /// Bitrate unit (`-f`); transfers are always adaptive bytes.
    pub format: UnitFormat,
    /// `-V`: extra lines (test parameters, summary title, CPU utilisation,
    /// congestion control, statistics not available on the server).
    pub verbose: bool,
    /// End the client's output with iperf3's blank line and `iperf Done.`.
    pub done_line: bool,
    /// Where the work ran as full per-CPU tables (`--where`, or `-V`), not one line per end.
    pub where_tables: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            format: UnitFormat::AdaptiveBits,
            verbose: false,
            done_line: true,
            where_tables: false,
        }
    }
}

/// The facts about a test that decide the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextContext {
    pub role: wirespeed_model::End,
    pub protocol: Transport,
    pub bidir: bool,
    pub reverse: bool,
    /// `-P`: streams per direction. `[SUM]` lines appear when it is above 1.
    pub num_streams: u32,
    /// TCP: whether the local sender reports retransmits (the `Retr  Cwnd` header).
    pub sender_has_retransmits: bool,
}

impl TextContext {
    /// Derive the context from a `start` section: the role from
    /// `connecting_to` (client) or `accepted_connection` (server), protocol,
    /// `-R`, `--bidir` and `-P` from `test_start`.
    pub fn from_start(start: &Start) -> TextContext {
        let role = if start.accepted_connection.is_some() && start.connecting_to.is_none() {
            wirespeed_model::End::Server
        } else {
            wirespeed_model::End::Client
        };
        let ts = start.test_start.as_ref();
        let protocol = match ts {
            Some(t) if t.protocol.eq_ignore_ascii_case("UDP") => Transport::Udp,
            _ => Transport::Tcp,
        };
        let bidir = ts.and_then(|t| t.bidir).is_some_and(|b| b != 0);
        let reverse = ts.is_some_and(|t| t.reverse != 0);
        let num_streams = ts
            .map(|t| t.num_streams)
            .unwrap_or_else(|| u32::try_from(start.connected.len()).unwrap_or(u32::MAX));
        TextContext {
            role,
            protocol,
            bidir,
            reverse,
            num_streams,
            sender_has_retransmits: protocol == Transport::Tcp
                && (role == wirespeed_model::End::Client || reverse || bidir),
        }
    }

    /// Like [`TextContext::from_start`], also recognising `--bidir` from the
    /// data for iperf3 versions that do not print `test_start.bidir`.
    pub fn from_result(result: &TestResult) -> TextContext {
        let mut c = TextContext::from_start(&result.start);
        if !c.bidir && result.is_bidir() {
            c.bidir = true;
            if c.protocol == Transport::Tcp {
                c.sender_has_retransmits = true;
            }
        }
        c
    }

    /// Whether the local end sends (outside `--bidir`).
    fn local_sends(&self) -> bool {
        (self.role == wirespeed_model::End::Client) != self.reverse
    }

    fn tag(&self, sender: bool) -> String {
        if self.bidir {
            format!(
                "[{}-{}]",
                if sender { "TX" } else { "RX" },
                if self.role == wirespeed_model::End::Client {
                    "C"
                } else {
                    "S"
                }
            )
        } else {
            String::new()
        }
    }

    fn id_header(&self) -> &'static str {
        if self.bidir {
            "[ ID][Role]"
        } else {
            "[ ID]"
        }
    }
}

fn id_col(socket: Option<u32>) -> String {
    match socket {
        Some(s) => format!("[{s:>3}]"),
        None => "[SUM]".to_string(),
    }
}

fn omitted(o: bool) -> &'static str {
    if o {
        "(omitted)"
    } else {
        ""
    }
}

/// `Connecting to host HOST, port PORT`.
pub fn write_connecting<W: Write + ?Sized>(w: &mut W, host: &str, port: u16) -> io::Result<()> {
    writeln!(w, "Connecting to host {host}, port {port}")
}

/// `Reverse mode, remote host HOST is sending`.
pub fn write_reverse<W: Write + ?Sized>(w: &mut W, host: &str) -> io::Result<()> {
    writeln!(w, "Reverse mode, remote host {host} is sending")
}

/// `Accepted connection from HOST, port PORT` (server).
pub fn write_accepted<W: Write + ?Sized>(w: &mut W, host: &str, port: u16) -> io::Result<()> {
    writeln!(w, "Accepted connection from {host}, port {port}")
}

/// `[  5] local A port P connected to B port Q`.
pub fn write_connected<W: Write + ?Sized>(w: &mut W, c: &Connected) -> io::Result<()> {
    writeln!(
        w,
        "[{:>3}] local {} port {} connected to {} port {}",
        c.socket, c.local_host, c.local_port, c.remote_host, c.remote_port
    )
}

/// The server's banner between tests.
pub fn write_server_listening<W: Write + ?Sized>(
    w: &mut W,
    port: u16,
    test_number: u64,
) -> io::Result<()> {
    let rule = "-----------------------------------------------------------";
    writeln!(
        w,
        "{rule}\nServer listening on {port} (test #{test_number})\n{rule}"
    )
}

/// The client's last line, after a blank one: `iperf Done.`.
pub fn write_done<W: Write + ?Sized>(w: &mut W) -> io::Result<()> {
    write!(w, "\niperf Done.\n")
}

/// `--get-server-output` in text mode, as iperf3 prints it before `iperf Done.`: `Server
/// output:`, the server's text and a newline (a blank line after text that ends with one).
/// The text is the peer's: control characters other than line feeds and tabs are escaped.
pub fn write_server_output<W: Write + ?Sized>(w: &mut W, text: &str) -> io::Result<()> {
    w.write_all(b"Server output:\n")?;
    w.write_all(wirespeed_model::text::terminal_lines(text).as_bytes())?;
    w.write_all(b"\n")
}

/// `--get-server-output` with a server writing JSON: `Server JSON output:` and its document
/// in iperf3's `-J` layout.
pub fn write_server_output_json<W: Write + ?Sized>(
    w: &mut W,
    doc: &serde_json::Value,
) -> io::Result<()> {
    w.write_all(b"Server JSON output:\n")?;
    crate::json::write_pretty_value(w, doc)
}

/// `-T TITLE`: every line of `text` (blank ones too) prefixed with `TITLE:  `, as iperf3
/// prefixes its output lines; a last line without its newline is prefixed too.
pub fn prefix_lines(text: &[u8], title: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 16);
    for line in text.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(title.as_bytes());
        out.extend_from_slice(b":  ");
        out.extend_from_slice(line);
    }
    out
}

/// `PROG: error - MESSAGE`, iperf3's one error line.
pub fn write_error<W: Write + ?Sized>(w: &mut W, program: &str, message: &str) -> io::Result<()> {
    writeln!(w, "{program}: error - {message}")
}

/// Streaming text renderer (see the module docs).
#[derive(Debug, Clone)]
pub struct TextRenderer {
    ctx: TextContext,
    opts: TextOptions,
    intervals_written: usize,
}

impl TextRenderer {
    pub fn new(ctx: TextContext, opts: TextOptions) -> TextRenderer {
        TextRenderer {
            ctx,
            opts,
            intervals_written: 0,
        }
    }

    /// The context in use.
    pub fn context(&self) -> &TextContext {
        &self.ctx
    }

    /// The connection lines (and, with `-V`, the test parameters):
    /// `Connecting to host …` or `Accepted connection from …`, then
    /// everything [`TextRenderer::start_after_connecting`] prints.
    pub fn start<W: Write + ?Sized>(&mut self, w: &mut W, start: &Start) -> io::Result<()> {
        match (&start.connecting_to, &start.accepted_connection) {
            (Some(c), _) => write_connecting(w, &c.host, c.port)?,
            (None, Some(a)) => write_accepted(w, &a.host, a.port)?,
            (None, None) => {}
        }
        self.start_after_connecting(w, start)
    }

    /// For a client that already printed `Connecting to host …` live
    /// ([`write_connecting`]) before `start` was known: the `Reverse mode …`
    /// line (client, `-R`), one `[ ID] local … connected to …` line per
    /// stream, and with `-V` the `Starting Test: …` line.
    pub fn start_after_connecting<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        start: &Start,
    ) -> io::Result<()> {
        if let (Some(c), true) = (&start.connecting_to, self.ctx.reverse) {
            write_reverse(w, &c.host)?;
        }
        for c in &start.connected {
            write_connected(w, c)?;
        }
        if self.opts.verbose {
            if let Some(t) = &start.test_start {
                let what = if t.bytes > 0 {
                    format!("{} bytes to send", t.bytes)
                } else if t.blocks > 0 {
                    format!("{} blocks to send", t.blocks)
                } else {
                    format!("{} second test", t.duration)
                };
                writeln!(
                    w,
                    "Starting Test: protocol: {}, {} streams, {} byte blocks, omitting {} seconds, {}, tos {}",
                    t.protocol, t.num_streams, t.blksize, t.omit, what, t.tos
                )?;
            }
        }
        Ok(())
    }

    fn interval_header(&self) -> String {
        let id = self.ctx.id_header();
        let cols = "Interval           Transfer     Bitrate";
        match self.ctx.protocol {
            Transport::Tcp => {
                if self.ctx.sender_has_retransmits {
                    format!("{id} {cols}         Retr  Cwnd\n")
                } else {
                    format!("{id} {cols}\n")
                }
            }
            Transport::Udp => {
                if !self.ctx.bidir && self.ctx.local_sends() {
                    format!("{id} {cols}         Total Datagrams\n")
                } else {
                    format!("{id} {cols}         Jitter    Lost/Total Datagrams\n")
                }
            }
        }
    }

    fn interval_line(&self, s: &IntervalStats, is_sum: bool) -> String {
        let id = id_col(if is_sum { None } else { s.socket });
        let tag = self.ctx.tag(s.sender);
        let span = interval_span(s.start, s.end);
        let bytes = format_bytes(s.bytes as f64);
        let rate = format_rate(s.bits_per_second, self.opts.format);
        let om = omitted(s.omitted);
        match self.ctx.protocol {
            Transport::Tcp => match (s.sender, s.retransmits) {
                (true, Some(r)) if is_sum => {
                    format!("{id}{tag} {span} sec  {bytes}  {rate}  {r:>3}             {om}\n")
                }
                (true, Some(r)) => {
                    let cwnd = format_bytes(s.snd_cwnd.unwrap_or(0) as f64);
                    format!("{id}{tag} {span} sec  {bytes}  {rate}  {r:>3}   {cwnd}       {om}\n")
                }
                _ => format!("{id}{tag} {span} sec  {bytes}  {rate}                  {om}\n"),
            },
            Transport::Udp => {
                if s.sender {
                    let z = if self.ctx.bidir { "          " } else { "" };
                    let p = s.packets.unwrap_or(0);
                    format!("{id}{tag} {span} sec  {bytes}  {rate} {z} {p}  {om}\n")
                } else {
                    let j = crate::num::finite(s.jitter_ms.unwrap_or(0.0));
                    let lost = s.lost_packets.unwrap_or(0);
                    let p = s.packets.unwrap_or(0);
                    let pct = c_g(crate::num::finite(s.lost_percent.unwrap_or(0.0)), 2);
                    format!("{id}{tag} {span} sec  {bytes}  {rate}  {j:5.3} ms  {lost}/{p} ({pct}%)  {om}\n")
                }
            }
        }
    }

    /// One interval: header (first interval) or separator (more than one
    /// stream), the stream lines, and `[SUM]` lines when `-P` > 1.
    pub fn interval<W: Write + ?Sized>(&mut self, w: &mut W, iv: &Interval) -> io::Result<()> {
        // iperf3 prints the header once (not again after the omit period).
        if self.intervals_written == 0 {
            w.write_all(self.interval_header().as_bytes())?;
        } else if self.ctx.num_streams > 1 {
            w.write_all(SEPARATOR.as_bytes())?;
        }
        let multi = self.ctx.num_streams > 1;
        let groups = split_groups(&iv.streams, self.ctx.bidir, |s| s.sender);
        for (gi, group) in groups.iter().enumerate() {
            for s in group {
                w.write_all(self.interval_line(s, false).as_bytes())?;
            }
            if multi {
                let sum = if gi == 0 {
                    Some(&iv.sum)
                } else {
                    iv.sum_bidir_reverse.as_ref()
                };
                if let Some(sum) = sum {
                    w.write_all(self.interval_line(sum, true).as_bytes())?;
                }
            }
        }
        if groups.is_empty() && multi {
            w.write_all(self.interval_line(&iv.sum, true).as_bytes())?;
        }
        self.intervals_written += 1;
        Ok(())
    }

    /// The separator, the summary header and the sender/receiver lines;
    /// with `-V` the CPU line; on the client, `iperf Done.`.
    pub fn end<W: Write + ?Sized>(&mut self, w: &mut W, result: &TestResult) -> io::Result<()> {
        let end = &result.end;
        w.write_all(SEPARATOR.as_bytes())?;
        if self.opts.verbose {
            writeln!(w, "Test Complete. Summary Results:")?;
        }
        let id = self.ctx.id_header();
        let cols = "Interval           Transfer     Bitrate";
        match self.ctx.protocol {
            Transport::Tcp => {
                let other_has = end
                    .streams
                    .iter()
                    .any(|s| s.sender.as_ref().is_some_and(|x| x.retransmits.is_some()));
                if self.ctx.sender_has_retransmits || other_has {
                    writeln!(w, "{id} {cols}         Retr")?;
                } else {
                    writeln!(w, "{id} {cols}")?;
                }
            }
            Transport::Udp => writeln!(w, "{id} {cols}         Jitter    Lost/Total Datagrams")?,
        }

        let groups = split_groups(&end.streams, self.ctx.bidir, end_stream_is_sender);
        let single_group = groups.len() <= 1;
        for (gi, group) in groups.iter().enumerate() {
            let gsender = group
                .first()
                .map(|s| end_stream_is_sender(s))
                .unwrap_or(false);
            let (sum_sent, sum_received) = if gi == 0 {
                (&end.sum_sent, &end.sum_received)
            } else {
                (&end.sum_sent_bidir_reverse, &end.sum_received_bidir_reverse)
            };
            for s in group {
                match self.ctx.protocol {
                    Transport::Tcp => self.end_tcp_stream(w, s)?,
                    Transport::Udp => {
                        let fallback = if group.len() == 1 && single_group {
                            sum_received.as_ref()
                        } else {
                            None
                        };
                        self.end_udp_stream(w, s, result, sum_received.as_ref(), fallback)?
                    }
                }
            }
            if self.ctx.num_streams > 1 {
                self.end_sums(w, gsender, sum_sent.as_ref(), sum_received.as_ref())?;
            }
        }
        if self.opts.verbose {
            self.cpu_and_congestion(w, end, &groups)?;
        }
        // A failed or interrupted test's partial summary ends without it, as iperf3's does.
        if self.ctx.role == wirespeed_model::End::Client
            && self.opts.done_line
            && result.error.is_none()
        {
            write_done(w)?;
        }
        Ok(())
    }

    fn skip_sender(&self, local_sender: bool) -> bool {
        self.ctx.role == wirespeed_model::End::Server && !local_sender
    }

    fn skip_receiver(&self, local_sender: bool) -> bool {
        self.ctx.role == wirespeed_model::End::Server && local_sender
    }

    fn not_available<W: Write + ?Sized>(
        &self,
        w: &mut W,
        socket: Option<u32>,
        what: &str,
    ) -> io::Result<()> {
        if self.opts.verbose {
            writeln!(w, "{} ({what} statistics not available)", id_col(socket))?;
        }
        Ok(())
    }

    fn summary_line(&self, s: &Summary, socket: Option<u32>, label: &str, retr: bool) -> String {
        let id = id_col(socket);
        let tag = self.ctx.tag(s.sender);
        let span = interval_span(s.start, s.end);
        let bytes = format_bytes(s.bytes as f64);
        let rate = format_rate(s.bits_per_second, self.opts.format);
        // iperf3 3.12-3.20 put 13 spaces after the retransmits, per stream and in [SUM].
        match (retr, s.retransmits) {
            (true, Some(r)) => {
                format!("{id}{tag} {span} sec  {bytes}  {rate}  {r:>3}             {label}\n")
            }
            _ => format!("{id}{tag} {span} sec  {bytes}  {rate}                  {label}\n"),
        }
    }

    /// A UDP sender summary line: iperf3 prints the sending side without loss or jitter.
    fn udp_sender_line(&self, s: &Summary, socket: Option<u32>, sender_flag: bool) -> String {
        self.udp_summary_line(
            socket,
            sender_flag,
            s.start,
            s.end,
            s.bytes,
            s.bits_per_second,
            0.0,
            0,
            s.packets.unwrap_or(0),
            0.0,
            "sender",
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn udp_summary_line(
        &self,
        socket: Option<u32>,
        sender_flag: bool,
        start: f64,
        end: f64,
        bytes: u64,
        bps: f64,
        jitter_ms: f64,
        lost: i64,
        packets: i64,
        pct: f64,
        label: &str,
    ) -> String {
        let id = id_col(socket);
        let tag = self.ctx.tag(sender_flag);
        let span = interval_span(start, end);
        let b = format_bytes(bytes as f64);
        let rate = format_rate(bps, self.opts.format);
        let j = crate::num::finite(jitter_ms);
        let pct = c_g(crate::num::finite(pct), 2);
        format!(
            "{id}{tag} {span} sec  {b}  {rate}  {j:5.3} ms  {lost}/{packets} ({pct}%)  {label}\n"
        )
    }

    fn end_tcp_stream<W: Write + ?Sized>(&self, w: &mut W, s: &EndStream) -> io::Result<()> {
        let local_sender = end_stream_is_sender(s);
        let socket = s
            .sender
            .as_ref()
            .or(s.receiver.as_ref())
            .and_then(|x| x.socket);
        if let Some(snd) = &s.sender {
            if self.skip_sender(local_sender) {
                self.not_available(w, socket, "sender")?;
            } else {
                w.write_all(
                    self.summary_line(snd, snd.socket, "sender", true)
                        .as_bytes(),
                )?;
            }
        }
        if let Some(rcv) = &s.receiver {
            if self.skip_receiver(local_sender) {
                self.not_available(w, socket, "receiver")?;
            } else {
                w.write_all(
                    self.summary_line(rcv, rcv.socket, "receiver", false)
                        .as_bytes(),
                )?;
            }
        }
        Ok(())
    }

    fn end_udp_stream<W: Write + ?Sized>(
        &self,
        w: &mut W,
        s: &EndStream,
        result: &TestResult,
        group_received: Option<&Summary>,
        single_stream_received: Option<&Summary>,
    ) -> io::Result<()> {
        let Some(u) = &s.udp else { return Ok(()) };
        let local_sender = u.sender;
        if self.skip_sender(local_sender) {
            self.not_available(w, u.socket, "sender")?;
        } else {
            w.write_all(self.udp_sender_line(u, u.socket, u.sender).as_bytes())?;
        }
        let ooo = u.out_of_order.unwrap_or(0);
        if ooo > 0 {
            writeln!(
                w,
                "[SUM]{} {:4.1}-{:4.1} sec  {ooo} datagrams received out-of-order",
                self.ctx.tag(u.sender),
                crate::num::finite(u.start),
                crate::num::finite(u.end)
            )?;
        }
        if self.skip_receiver(local_sender) {
            return self.not_available(w, u.socket, "receiver");
        }
        // The receiver's own counts: wirespeed's per-stream totals when present;
        // for an iperf3 document, the receive sum when this is the only stream,
        // else the figures in the `udp` entry.
        let totals = result
            .wirespeed
            .as_ref()
            .and_then(|x| x.streams.iter().find(|t| Some(t.socket) == u.socket));
        let receiver_time = group_received.map_or(u.end, |r| r.end);
        let (bytes, packets, lost, jitter) = match (totals, single_stream_received) {
            (Some(t), _) => (
                t.bytes_received,
                t.packets_received.unwrap_or(0),
                t.lost_packets.unwrap_or(0),
                t.jitter_ms.unwrap_or(0.0),
            ),
            (None, Some(r)) => (
                r.bytes,
                r.packets.unwrap_or(0),
                u.lost_packets.unwrap_or(0),
                u.jitter_ms.unwrap_or(0.0),
            ),
            (None, None) => (
                u.bytes,
                u.packets.unwrap_or(0),
                u.lost_packets.unwrap_or(0),
                u.jitter_ms.unwrap_or(0.0),
            ),
        };
        let line = self.udp_summary_line(
            u.socket,
            u.sender,
            u.start,
            receiver_time,
            bytes,
            crate::builder::bits_per_second(bytes, receiver_time),
            jitter,
            lost,
            packets,
            crate::builder::lost_percent(lost, packets),
            "receiver",
        );
        w.write_all(line.as_bytes())
    }

    fn end_sums<W: Write + ?Sized>(
        &self,
        w: &mut W,
        gsender: bool,
        sent: Option<&Summary>,
        received: Option<&Summary>,
    ) -> io::Result<()> {
        for (sum, sender_line) in [(sent, true), (received, false)] {
            let Some(s) = sum else { continue };
            let label = if sender_line { "sender" } else { "receiver" };
            let skip = if sender_line {
                self.skip_sender(gsender)
            } else {
                self.skip_receiver(gsender)
            };
            if skip {
                self.not_available(w, None, label)?;
                continue;
            }
            let line = match (self.ctx.protocol, sender_line) {
                (Transport::Tcp, _) => {
                    let s = Summary {
                        sender: gsender,
                        ..s.clone()
                    };
                    self.summary_line(&s, None, label, sender_line)
                }
                (Transport::Udp, true) => self.udp_sender_line(s, None, gsender),
                (Transport::Udp, false) => self.udp_summary_line(
                    None,
                    gsender,
                    s.start,
                    s.end,
                    s.bytes,
                    s.bits_per_second,
                    s.jitter_ms.unwrap_or(0.0),
                    s.lost_packets.unwrap_or(0),
                    s.packets.unwrap_or(0),
                    s.lost_percent.unwrap_or(0.0),
                    label,
                ),
            };
            w.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    fn cpu_and_congestion<W: Write + ?Sized>(
        &self,
        w: &mut W,
        end: &End,
        groups: &[Vec<&EndStream>],
    ) -> io::Result<()> {
        if let Some(c) = &end.cpu_utilization_percent {
            let local_sender = groups
                .first()
                .and_then(|g| g.first())
                .map(|s| end_stream_is_sender(s))
                .unwrap_or(self.ctx.local_sends());
            let (l, r) = if local_sender {
                ("sender", "receiver")
            } else {
                ("receiver", "sender")
            };
            let f = crate::num::finite;
            writeln!(
                w,
                "CPU Utilization: local/{l} {:.1}% ({:.1}%u/{:.1}%s), remote/{r} {:.1}% ({:.1}%u/{:.1}%s)",
                f(c.host_total),
                f(c.host_user),
                f(c.host_system),
                f(c.remote_total),
                f(c.remote_user),
                f(c.remote_system)
            )?;
        }
        if let Some(s) = &end.sender_tcp_congestion {
            writeln!(w, "snd_tcp_congestion {s}")?;
        }
        if let Some(r) = &end.receiver_tcp_congestion {
            writeln!(w, "rcv_tcp_congestion {r}")?;
        }
        Ok(())
    }
}

fn end_stream_is_sender(s: &EndStream) -> bool {
    s.sender
        .as_ref()
        .or(s.udp.as_ref())
        .or(s.receiver.as_ref())
        .is_some_and(|x| x.sender)
}

/// Split into iperf3's print groups: one group, or for `--bidir` the runs
/// of equal direction in the order they appear (first group, then second).
fn split_groups<T>(items: &[T], bidir: bool, is_sender: impl Fn(&T) -> bool) -> Vec<Vec<&T>> {
    if items.is_empty() {
        return Vec::new();
    }
    if !bidir {
        return vec![items.iter().collect()];
    }
    let first = is_sender(&items[0]);
    let (a, b): (Vec<&T>, Vec<&T>) = items.iter().partition(|x| is_sender(x) == first);
    let mut out = vec![a];
    if !b.is_empty() {
        out.push(b);
    }
    out
}

/// Render a whole result as iperf3 would have printed it live.
pub fn render_text<W: Write + ?Sized>(
    w: &mut W,
    result: &TestResult,
    opts: TextOptions,
) -> io::Result<()> {
    let mut r = TextRenderer::new(TextContext::from_result(result), opts);
    r.start(w, &result.start)?;
    for iv in &result.intervals {
        r.interval(w, iv)?;
    }
    if result.end.streams.is_empty() && result.error.is_some() {
        return Ok(());
    }
    r.end(w, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_prefixes_every_line_and_server_output_reads_as_iperf3s() {
        assert_eq!(prefix_lines(b"a\n\nb\n", "t"), b"t:  a\nt:  \nt:  b\n");
        assert_eq!(prefix_lines(b"a", "t"), b"t:  a");
        let mut v = Vec::new();
        write_server_output(&mut v, "x\ny\n").unwrap();
        assert_eq!(v, b"Server output:\nx\ny\n\n");
        // the peer's text cannot retitle the window or clear the screen
        let mut v = Vec::new();
        write_server_output(&mut v, "a\u{1b}]0;pwned\u{7}\n\u{1b}[2J\tb\r\n").unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "Server output:\na\\u{1b}]0;pwned\\u{7}\n\\u{1b}[2J\tb\\r\n\n"
        );
        let mut v = Vec::new();
        write_server_output_json(&mut v, &serde_json::json!({"a": 1})).unwrap();
        assert_eq!(v, b"Server JSON output:\n{\n\t\"a\":\t1\n}\n");
    }
}
