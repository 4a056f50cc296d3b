//! `client --live`: a full-screen terminal view refreshed every interval — a throughput
//! sparkline per stream and for the sum, retransmits, both ends' CPUs as bars (user, system,
//! IRQ, softirq, steal) with the NIC's interrupts per CPU (this host's, and the server's when it
//! is wirespeed: it sends its observation of each interval on the control connection), and the
//! verdict over the intervals so far. `q`, `Esc` or Ctrl-C end the test; the terminal is
//! restored and the usual text summary follows, with the end-of-test verdict.
//!
//! It is a [`Reporter`]: the engine calls it at the start, at every interval (with both ends'
//! observation and the verdict so far, [`LiveEvent`]) and at the end. What is drawn is a
//! [`Screen`], and [`render`] draws one into any ratatui frame: a pure function, tested on a
//! test backend.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::{DefaultTerminal, Frame};

use wirespeed_engine::Reporter;
use wirespeed_model::observation::CpuUse;
use wirespeed_report::html::rate;
use wirespeed_report::{Interval, LiveEvent, Start, TestResult};

use crate::draw::{
    busiest, cpu_line, fit, push, quits, scale_top, scale_words, sparkline, sum_now, STREAM, SUM,
    WORK,
};

/// Intervals without a frame from the peer after which it is taken not to send them.
const PEER_SILENT_AFTER: u32 = 3;

/// Everything one frame of the live view shows.
#[derive(Debug, Clone, Default)]
pub struct Screen {
    pub title: String,
    pub elapsed: f64,
    pub duration: f64,
    /// Per stream: the history (Mbit/s) and the latest rate (bit/s).
    pub streams: BTreeMap<u32, (Vec<u64>, f64)>,
    /// The sum's history (Mbit/s) and latest rate (bit/s).
    pub sum: Vec<u64>,
    pub sum_now: f64,
    pub retransmits: u64,
    pub local_cpus: Vec<CpuUse>,
    pub local_nic: Option<String>,
    pub peer_cpus: Vec<CpuUse>,
    pub peer_nic: Option<String>,
    /// The peer's latest interval (seconds since its start).
    pub peer_at: Option<(f64, f64)>,
    /// Intervals seen since the last frame from the peer.
    pub peer_silent: u32,
    /// The verdict over the intervals so far.
    pub verdict_so_far: Option<String>,
    /// Its id, to say what changed when the end's verdict is another.
    pub so_far_id: Option<wirespeed_model::VerdictId>,
    /// The end-of-test verdict, which replaces it.
    pub verdict: Option<String>,
}

impl Screen {
    /// An interval of this end's report.
    pub fn interval(&mut self, iv: &Interval) {
        for s in &iv.streams {
            let e = self.streams.entry(s.socket.unwrap_or(0)).or_default();
            push(&mut e.0, s.bits_per_second);
            e.1 = s.bits_per_second;
        }
        push(&mut self.sum, iv.sum.bits_per_second);
        self.sum_now = iv.sum.bits_per_second;
        self.retransmits += iv.sum.retransmits.unwrap_or(0);
        self.elapsed = iv.sum.end;
    }

    /// Both ends' observation of an interval and the verdict so far.
    pub fn live(&mut self, ev: &LiveEvent) {
        if let Some(l) = &ev.local {
            self.local_cpus = l.cpus.clone();
        }
        if ev.local_iface.is_some() {
            self.local_nic = ev.local_iface.clone();
        }
        match &ev.peer {
            Some(p) if p.start.zip(p.end).is_none() || p.start.zip(p.end) != self.peer_at => {
                self.peer_cpus = p.cpus.clone();
                self.peer_at = p.start.zip(p.end);
                self.peer_silent = 0;
            }
            _ => self.peer_silent = self.peer_silent.saturating_add(1),
        }
        if ev.peer_iface.is_some() {
            self.peer_nic = ev.peer_iface.clone();
        }
        if let Some(v) = &ev.verdict_so_far {
            self.verdict_so_far = Some(v.line.clone());
            self.so_far_id = Some(v.id);
        }
    }

    /// The test ended: its verdict replaces the one so far.
    pub fn finish(&mut self, result: &TestResult) {
        if let Some(v) = result.verdict() {
            // the same rules decide both: another id means the figures changed (the whole
            // test's, with the senders' RTT samples and MSS the running figures lack)
            let changed = self
                .so_far_id
                .filter(|id| *id != v.id)
                .map_or(String::new(), |id| {
                    format!(" (while running: {id}; the whole test's figures decided otherwise — --why shows how)")
                });
            self.verdict = Some(format!("{}{changed}", v.line));
        }
    }

    fn head(&self) -> String {
        format!(
            " {}   {:.0}/{:.0} s   sum {}   retransmits {}   q: quit ",
            self.title,
            self.elapsed,
            self.duration,
            rate(self.sum_now),
            self.retransmits
        )
    }

    fn verdict_line(&self) -> Line<'static> {
        match (&self.verdict, &self.verdict_so_far) {
            (Some(v), _) => Line::from(vec![Span::raw(" verdict: ").bold(), Span::raw(v.clone())]),
            (None, Some(v)) => Line::from(vec![
                Span::raw(" verdict so far: ").bold(),
                Span::raw(v.clone()),
            ]),
            (None, None) => {
                let b = busiest(&self.local_cpus);
                Line::from(if b.is_empty() {
                    " the verdict comes with the first interval".to_string()
                } else {
                    format!(" {b}; the verdict comes with the first interval")
                })
            }
        }
    }

    fn peer_placeholder(&self) -> &'static str {
        if self.peer_silent >= PEER_SILENT_AFTER && self.peer_at.is_none() {
            "(the peer sends no CPUs: it is iperf3, or its -i is 0; its end comes with the results)"
        } else {
            "(the peer's CPUs come with its first interval)"
        }
    }
}

/// The colours' key, one line: the CPU bars' kinds of work, then the sparklines'.
fn key_line() -> Line<'static> {
    let mut spans = vec![Span::raw(" key: CPU")];
    for (name, colour) in WORK {
        spans.push(Span::styled(" █", Style::default().fg(colour)));
        spans.push(Span::raw(name));
    }
    spans.push(Span::raw(" · rate"));
    spans.push(Span::styled(" ▇", Style::default().fg(STREAM)));
    spans.push(Span::raw("stream"));
    spans.push(Span::styled(" ▇", Style::default().fg(SUM)));
    spans.push(Span::raw("sum"));
    Line::from(spans)
}

/// A pane of CPU bars: `who` (this host, the peer), its NIC, the bars, in `height` rows
/// (borders included): every CPU when they fit, else the busiest (in CPU order) and a line
/// that counts the rest.
fn cpu_pane<'a>(
    who: &str,
    nic: Option<&str>,
    cpus: &[CpuUse],
    (width, height): (u16, u16),
    empty: &str,
) -> Paragraph<'a> {
    let inner = usize::from(width.saturating_sub(2));
    let rows = usize::from(height.saturating_sub(2)).max(1);
    let mut shown: Vec<&CpuUse> = cpus.iter().collect();
    let mut rest = None;
    if shown.len() > rows {
        shown.sort_by(|a, b| b.busy().get().total_cmp(&a.busy().get()));
        let keep = rows.saturating_sub(1);
        let below = shown.get(keep).map(|c| c.busy().get()).unwrap_or(0.0);
        rest = Some(format!(
            "… {} more CPUs, each at most {below:.0} % busy",
            shown.len() - keep
        ));
        shown.truncate(keep);
        shown.sort_by_key(|c| c.cpu);
    }
    let digits = shown
        .iter()
        .map(|c| c.nic_irqs.to_string().len())
        .max()
        .unwrap_or(1);
    let mut lines: Vec<Line> = shown
        .iter()
        .map(|c| cpu_line_fit(c, inner, digits))
        .collect();
    if let Some(r) = rest {
        lines.push(Line::from(r).dim());
    }
    if lines.is_empty() {
        lines.push(Line::from(empty.to_string()));
    }
    let title = format!(
        "CPUs of {who}{}",
        nic.map(|n| format!(" ({n})")).unwrap_or_default()
    );
    Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title))
}

/// Rows a sparkline box takes at least (borders and one line of bars).
const BOX_MIN: u16 = 3;
/// Rows the CPU panes take at least.
const CPU_MIN: u16 = 4;

/// How the streams are drawn: a box each (and the sum's), of these heights, or — when too many
/// for boxes — one box with a line per stream.
#[derive(Debug, PartialEq)]
enum Streams {
    Boxes {
        each: u16,
        sum: u16,
    },
    /// The list's rows (borders included) and the sum's box below it (0: the sum is the list's
    /// first line).
    List {
        rows: u16,
        sum: u16,
    },
}

/// The vertical plan for `height` rows with `verdict` rows for the verdict: (rows for the
/// streams, rows for the CPU panes, how the streams are drawn).
/// The CPU panes get what their CPUs need (at least [`CPU_MIN`], at most half of what is left
/// when the streams need more); the streams get the rest.
fn plan(height: u16, streams: usize, cpus: usize, verdict: u16) -> (u16, u16, Streams) {
    // The head, the key and the verdict's lines.
    let free = height.saturating_sub(2 + verdict);
    let boxes = streams as u16 + 1;
    let cpu_need = (cpus as u16 + 2).max(CPU_MIN);
    let boxes_need = boxes * BOX_MIN;
    let cpu = if boxes_need + cpu_need <= free {
        cpu_need
    } else {
        cpu_need.min((free / 2).max(CPU_MIN)).min(free)
    };
    let top = free.saturating_sub(cpu);
    if boxes_need <= top {
        // The sum gets a double share of the spare rows.
        let spare = top - boxes_need;
        let each = BOX_MIN + spare / (boxes + 1);
        let sum = top - each * (boxes - 1);
        (top, cpu, Streams::Boxes { each, sum })
    } else {
        let list = streams as u16 + 2;
        if top >= list + BOX_MIN {
            (
                top,
                cpu,
                Streams::List {
                    rows: list,
                    sum: top - list,
                },
            )
        } else {
            (top, cpu, Streams::List { rows: top, sum: 0 })
        }
    }
}

/// A sparkline's bars as text, `width` columns (for the compact list of streams).
fn bars_text(v: &[u64], width: u16, max: u64) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    fit(v, width)
        .iter()
        .map(|&x| {
            if max == 0 || x == 0 {
                ' '
            } else {
                let i = ((x as f64 / max as f64) * 7.0).round() as usize;
                LEVELS[i.min(7)]
            }
        })
        .collect()
}

/// Draw `s` into `f`: the head line, the colours' key, a sparkline per stream and the sum (a
/// box each, as tall as the room allows; a line each when there are too many for boxes), this
/// host's and the peer's CPUs side by side, and the verdict (so far) at the bottom.
pub fn render(f: &mut Frame, s: &Screen) {
    let area = f.area();
    let cpus = s.local_cpus.len().max(s.peer_cpus.len());
    // The verdict wraps: two rows, three when a narrow screen needs them.
    let verdict_len = s.verdict_line().width() as u16;
    let verdict = verdict_len.div_ceil(area.width.max(1)).clamp(2, 3);
    let (top, cpu, how) = plan(area.height, s.streams.len(), cpus, verdict);
    let areas = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(top),
        Constraint::Length(cpu),
        Constraint::Length(verdict),
    ])
    .split(area);
    f.render_widget(Paragraph::new(s.head().bold().reversed()), areas[0]);
    f.render_widget(Paragraph::new(key_line()), areas[1]);
    let stream_hist: Vec<u64> = s
        .streams
        .values()
        .flat_map(|(h, _)| h.iter().copied())
        .collect();
    let stream_max = scale_top(&stream_hist);
    let sum_max = scale_top(&s.sum);
    let sum_title = format!("sum: {} · {}", rate(sum_now(&s.sum)), scale_words(sum_max));
    match how {
        Streams::Boxes { each, sum } => {
            let mut rows: Vec<Constraint> =
                s.streams.iter().map(|_| Constraint::Length(each)).collect();
            rows.push(Constraint::Length(sum));
            let boxes = Layout::vertical(rows).split(areas[2]);
            for (i, (id, (hist, now))) in s.streams.iter().enumerate() {
                let title = format!("stream {id}: {} · {}", rate(*now), scale_words(stream_max));
                let spark = sparkline(title, hist, boxes[i].width, stream_max, STREAM);
                f.render_widget(spark, boxes[i]);
            }
            let last = boxes[boxes.len() - 1];
            f.render_widget(sparkline(sum_title, &s.sum, last.width, sum_max, SUM), last);
        }
        Streams::List { rows, sum } => {
            let parts = Layout::vertical([Constraint::Length(rows), Constraint::Length(sum)])
                .split(areas[2]);
            // One line per stream: its rate and its bars to the box's edge.
            let inner = areas[2].width.saturating_sub(2);
            let label = |name: &str, bps: f64| format!("{name:<10} {:>13} ", rate(bps));
            let line = |l: String, hist: &[u64], max: u64, colour: Color| {
                let w = inner.saturating_sub(l.chars().count() as u16);
                Line::from(vec![
                    Span::raw(l),
                    Span::styled(bars_text(hist, w, max), Style::default().fg(colour)),
                ])
            };
            let mut lines = Vec::new();
            if sum == 0 {
                lines.push(line(label("sum", sum_now(&s.sum)), &s.sum, sum_max, SUM).bold());
            }
            let room = usize::from(rows.saturating_sub(2)).saturating_sub(lines.len());
            let n = s.streams.len();
            let shown = if n > room { room.saturating_sub(1) } else { n };
            for (id, (hist, now)) in s.streams.iter().take(shown) {
                lines.push(line(
                    label(&format!("stream {id}"), *now),
                    hist,
                    stream_max,
                    STREAM,
                ));
            }
            if shown < n {
                lines.push(Line::from(format!("… {} more streams (in the sum)", n - shown)).dim());
            }
            f.render_widget(
                Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(format!(
                    "{n} streams, one line each · streams {}{}",
                    scale_words(stream_max),
                    if sum == 0 {
                        format!(", sum {}", scale_words(sum_max))
                    } else {
                        String::new()
                    }
                ))),
                parts[0],
            );
            if sum > 0 {
                let spark = sparkline(sum_title, &s.sum, parts[1].width, sum_max, SUM);
                f.render_widget(spark, parts[1]);
            }
        }
    }
    let panes = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(areas[3]);
    f.render_widget(
        cpu_pane(
            "this host",
            s.local_nic.as_deref(),
            &s.local_cpus,
            (panes[0].width, panes[0].height),
            "(no per-CPU counters yet)",
        ),
        panes[0],
    );
    let peer_who = match s.peer_at {
        Some((a, b)) => format!("the peer at {a:.0}-{b:.0} s"),
        None => "the peer".to_string(),
    };
    f.render_widget(
        cpu_pane(
            &peer_who,
            s.peer_nic.as_deref(),
            &s.peer_cpus,
            (panes[1].width, panes[1].height),
            s.peer_placeholder(),
        ),
        panes[1],
    );
    f.render_widget(
        Paragraph::new(s.verdict_line()).wrap(Wrap { trim: false }),
        areas[4],
    );
}

pub struct Live {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    keys: Option<JoinHandle<()>>,
    term: Option<DefaultTerminal>,
    screen: Screen,
    result: Option<TestResult>,
}

impl Live {
    /// `stop` is the test's interrupt flag: a quit key sets it.
    pub fn new(title: String, duration: f64, stop: Arc<AtomicBool>) -> Live {
        Live {
            stop,
            done: Arc::new(AtomicBool::new(false)),
            keys: None,
            term: None,
            screen: Screen {
                title,
                duration,
                ..Screen::default()
            },
            result: None,
        }
    }

    /// The result the engine finished with (also on failure, with `error` set).
    pub fn take_result(&mut self) -> Option<TestResult> {
        self.result.take()
    }

    fn open(&mut self) {
        if self.term.is_some() {
            return;
        }
        self.term = Some(ratatui::init());
        let stop = Arc::clone(&self.stop);
        let done = Arc::clone(&self.done);
        self.keys = Some(std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if !event::poll(Duration::from_millis(100)).unwrap_or(false) {
                    continue;
                }
                if matches!(event::read(), Ok(Event::Key(k)) if quits(&k)) {
                    stop.store(true, Ordering::SeqCst);
                }
            }
        }));
        self.draw();
    }

    /// Restore the terminal (idempotent).
    pub fn close(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.keys.take() {
            let _ = h.join();
        }
        if self.term.take().is_some() {
            ratatui::restore();
        }
    }

    fn draw(&mut self) {
        let Some(term) = self.term.as_mut() else {
            return;
        };
        let screen = &self.screen;
        let _ = term.draw(|f| render(f, screen));
    }
}

/// [`cpu_line`] in `inner` columns, the NIC's counts `digits` wide at most: the bars take what
/// the text leaves (6 to 60), the text shortened when the full one leaves fewer than 6.
fn cpu_line_fit(c: &CpuUse, inner: usize, digits: usize) -> Line<'static> {
    // "CPU nnn " and "| nnn.n% busy  NIC irqs " (compact: "| nnn% irqs ") and the count.
    let full = 8 + 24 + digits;
    let short = 8 + 12 + digits;
    if inner >= full + 6 {
        cpu_line(c, (inner - full).min(60), false)
    } else {
        cpu_line(c, inner.saturating_sub(short).clamp(1, 60), true)
    }
}

impl Reporter for Live {
    fn start(&mut self, _start: &Start) {
        self.open();
    }

    fn interval(&mut self, iv: &Interval) {
        self.open();
        self.screen.interval(iv);
        self.draw();
    }

    fn wants_live(&self) -> bool {
        true
    }

    fn live(&mut self, ev: &LiveEvent) {
        self.screen.live(ev);
        self.draw();
    }

    fn peer_frame(&mut self, ev: &LiveEvent) {
        self.screen.live(ev);
        self.draw();
    }

    fn finish(&mut self, result: &TestResult) {
        self.screen.finish(result);
        self.draw();
        self.result = Some(result.clone());
        self.close();
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use wirespeed_model::observation::{IntervalObservation, Percent};
    use wirespeed_model::Verdict;
    use wirespeed_report::IntervalStats;

    fn cpu(n: u32, user: f64, sys: f64, sirq: f64, irqs: u64) -> CpuUse {
        CpuUse {
            cpu: n,
            user: Percent::new(user),
            system: Percent::new(sys),
            softirq: Percent::new(sirq),
            idle: Percent::new(100.0 - user - sys - sirq),
            nic_irqs: irqs,
            ..CpuUse::default()
        }
    }

    fn interval(end: f64, gbps: f64) -> Interval {
        let st = |socket| IntervalStats {
            socket,
            start: end - 1.0,
            end,
            bits_per_second: gbps * 1e9,
            retransmits: Some(2),
            ..IntervalStats::default()
        };
        Interval {
            streams: vec![st(Some(1))],
            sum: st(None),
            ..Interval::default()
        }
    }

    fn text(s: &Screen, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| render(f, s)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..h {
            let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    fn verdict(line: &str) -> Verdict {
        Verdict::new(
            wirespeed_model::VerdictId::ReceiverSharesCpuWithSoftirq,
            Some(wirespeed_model::VerdictEnd::Receiver),
            line,
        )
    }

    /// Three intervals with both ends' CPUs and a verdict so far: the frame shows the
    /// stream, the sum, both panes (the peer's with its interval and NIC) and "so far"; the
    /// end-of-test verdict then replaces it. Compared with a snapshot
    /// (`WIRESPEED_UPDATE_SNAPSHOTS=1` rewrites it).
    #[test]
    fn a_frame_shows_both_ends_cpus_and_the_verdict_so_far() {
        let mut s = Screen {
            title: "wirespeed --live 192.0.2.7:5201".into(),
            duration: 10.0,
            ..Screen::default()
        };
        for k in 1..=3 {
            s.interval(&interval(k as f64, 9.0 + k as f64 / 10.0));
            s.live(&LiveEvent {
                start: k as f64 - 1.0,
                end: k as f64,
                local: Some(IntervalObservation {
                    cpus: vec![cpu(0, 3.0, 61.0, 4.0, 0), cpu(1, 1.0, 2.0, 0.5, 0)],
                    ..IntervalObservation::default()
                }),
                local_iface: Some("eth0".into()),
                peer: (k > 1).then(|| IntervalObservation {
                    start: Some(k as f64 - 2.0),
                    end: Some(k as f64 - 1.0),
                    cpus: vec![cpu(2, 0.0, 20.0, 2.0, 12), cpu(3, 1.0, 4.0, 93.0, 48_210)],
                    ..IntervalObservation::default()
                }),
                peer_iface: Some("ens1f0np0".into()),
                verdict_so_far: Some(verdict(
                    "receiver softirq-bound: CPU 3 at 98 % (softirq 93 %)",
                )),
            });
        }
        let got = text(&s, 120, 24);
        assert!(got.contains("CPUs of this host (eth0)"), "{got}");
        assert!(
            got.contains("CPUs of the peer at 1-2 s (ens1f0np0)"),
            "{got}"
        );
        assert!(got.contains("CPU   3 "), "the peer's CPU: {got}");
        assert!(got.contains("NIC irqs 48210"), "{got}");
        assert!(
            got.contains("verdict so far: receiver softirq-bound: CPU 3 at 98 %"),
            "{got}"
        );
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live_frame.txt");
        if std::env::var_os("WIRESPEED_UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (WIRESPEED_UPDATE_SNAPSHOTS=1 writes it)",
                path.display()
            )
        });
        assert_eq!(got, want, "the frame differs from its snapshot");

        let end = TestResult {
            wirespeed: Some(wirespeed_report::WirespeedExt {
                verdict: Some(verdict(
                    "receiver softirq-bound: CPU 3 at 97 % over the test",
                )),
                ..Default::default()
            }),
            ..TestResult::default()
        };
        s.finish(&end);
        let got = text(&s, 120, 24);
        assert!(
            got.contains("verdict: receiver softirq-bound: CPU 3 at 97 %"),
            "{got}"
        );
        assert!(!got.contains("so far"), "{got}");
        assert!(!got.contains("while running"), "the same id: {got}");
        // a running verdict of another id: the end's says what changed
        s.so_far_id = Some(wirespeed_model::VerdictId::PathLimited);
        s.finish(&end);
        assert!(
            s.verdict.as_deref().is_some_and(|v| v.contains(
                "(while running: path-limited; the whole test's figures decided otherwise"
            )),
            "{:?}",
            s.verdict
        );
    }

    /// `streams` streams over `k` intervals, both ends with `cpus` CPUs (one of them busy with
    /// softirq and the NIC's interrupts), the peer's frame of each interval in.
    fn running(streams: u32, k: u32, cpus: u32) -> Screen {
        let mut s = Screen {
            title: "wirespeed --live 127.0.0.1:5201".into(),
            duration: 10.0,
            ..Screen::default()
        };
        for i in 1..=k {
            let end = f64::from(i);
            let st = |socket: Option<u32>, gbps: f64| IntervalStats {
                socket,
                start: end - 1.0,
                end,
                bits_per_second: gbps * 1e9,
                retransmits: Some(1),
                ..IntervalStats::default()
            };
            s.interval(&Interval {
                streams: (1..=streams)
                    .map(|n| st(Some(n), 1.0 + f64::from((n + i) % 3)))
                    .collect(),
                sum: st(None, 2.0 * f64::from(streams)),
                ..Interval::default()
            });
            let obs = |start: f64| IntervalObservation {
                start: Some(start),
                end: Some(start + 1.0),
                cpus: (0..cpus)
                    .map(|c| {
                        if c == 1 {
                            cpu(c, 2.0, 10.0, 80.0, 40_000)
                        } else {
                            cpu(c, 30.0, 20.0, 1.0, 0)
                        }
                    })
                    .collect(),
                ..IntervalObservation::default()
            };
            s.live(&LiveEvent {
                start: end - 1.0,
                end,
                local: Some(obs(end - 1.0)),
                local_iface: Some("lo".into()),
                peer: Some(obs(end - 1.0)),
                peer_iface: Some("lo".into()),
                verdict_so_far: Some(verdict("receiver softirq-bound: CPU 1 at 92 %")),
            });
        }
        s
    }

    /// Rows of `got` that hold something besides box borders and blanks.
    fn content_rows(got: &str) -> usize {
        got.lines()
            .filter(|l| {
                l.chars()
                    .any(|c| !matches!(c, '│' | '─' | '┌' | '┐' | '└' | '┘' | ' '))
            })
            .count()
    }

    /// The longest run of sparkline bars on one row.
    fn widest_bars(got: &str) -> usize {
        got.lines()
            .map(|l| l.chars().filter(|c| ('▁'..='█').contains(c)).count())
            .max()
            .unwrap_or(0)
    }

    /// 100×30 with eight streams: too many for a box each, so a line each — every stream's
    /// rate and bars present, the sum, both CPU panes with their CPUs, the key and the verdict.
    #[test]
    fn eight_streams_at_100_by_30_are_a_list_with_content() {
        let s = running(8, 5, 2);
        let got = text(&s, 100, 30);
        for n in 1..=8 {
            let row = got
                .lines()
                .find(|l| l.contains(&format!("stream {n} ")))
                .unwrap_or_else(|| panic!("stream {n}: {got}"));
            assert!(row.contains("Gbit/s"), "{row}");
            assert!(row.chars().any(|c| "▁▂▃▄▅▆▇█".contains(c)), "bars: {row}");
            // The bars reach the box's edge.
            assert!(
                row.trim_end_matches('│').ends_with(|c: char| c != ' '),
                "{row}"
            );
        }
        assert!(got.contains("8 streams, one line each"), "{got}");
        assert!(got.contains("sum: 16.00 Gbit/s"), "{got}");
        assert!(
            got.contains("key: CPU █user █system █irq █softirq █steal · rate ▇stream ▇sum"),
            "{got}"
        );
        assert!(got.contains("CPUs of the peer at 4-5 s (lo)"), "{got}");
        assert_eq!(got.matches("NIC irqs 40000").count(), 2, "{got}");
        assert!(
            got.contains("verdict so far: receiver softirq-bound"),
            "{got}"
        );
        assert!(
            got.lines().count() == 30 && content_rows(&got) >= 20,
            "{got}"
        );
    }

    /// 160×45 with one stream and two CPUs: the sparklines span their boxes (not one column
    /// per interval), the CPU panes take the rows their CPUs need and the sparklines the rest.
    #[test]
    fn one_stream_at_160_by_45_fills_the_width_and_height() {
        let s = running(1, 5, 2);
        let got = text(&s, 160, 45);
        assert!(widest_bars(&got) >= 150, "bars across the box: {got}");
        assert!(got.contains("stream 1: "), "{got}");
        assert!(got.contains("sum: 2.00 Gbit/s"), "{got}");
        // The CPU panes hold exactly their CPUs: four rows with borders.
        let pane_top = got
            .lines()
            .position(|l| l.contains("CPUs of this host"))
            .unwrap();
        assert!(pane_top >= 40 - 4, "the panes sit at the bottom: {got}");
        let blank_in_panes = got
            .lines()
            .skip(pane_top)
            .filter(|l| l.starts_with('│') && l.trim_matches(|c| c == '│' || c == ' ').is_empty())
            .count();
        assert_eq!(blank_in_panes, 0, "no empty rows in the CPU panes: {got}");
        // The sparkline boxes take the rest, drawn from zero: each box's bottom row is bars
        // across its width (the rows above the peak stay empty: the scale's top is above it).
        let rows: Vec<&str> = got.lines().collect();
        let bottoms: Vec<&str> = rows[..pane_top]
            .windows(2)
            .filter(|w| w[1].starts_with('└') && w[0].contains('█'))
            .map(|w| w[0])
            .collect();
        assert_eq!(bottoms.len(), 2, "the stream's box and the sum's: {got}");
        assert!(
            bottoms.iter().all(|b| b.matches('█').count() >= 150),
            "{got}"
        );
        assert!(pane_top >= 36 && content_rows(&got) >= 20, "{got}");
    }

    /// 80×24 with four streams: boxes still fit, and every box has bars in it.
    #[test]
    fn four_streams_at_80_by_24_keep_content_in_every_box() {
        let s = running(4, 3, 2);
        let got = text(&s, 80, 24);
        for n in 1..=4 {
            assert!(got.contains(&format!("stream {n}")), "stream {n}: {got}");
        }
        assert!(got.contains("sum: "), "{got}");
        // Narrow panes: the short form of each CPU's line, every CPU's count whole.
        assert!(got.contains("CPU   1"), "{got}");
        assert_eq!(got.matches("|  92% irqs 40000│").count(), 2, "{got}");
        // No box collapsed to its borders: each title row is followed by a row with bars.
        let lines: Vec<&str> = got.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.contains("┌stream") || l.contains("┌sum") {
                assert!(
                    lines[i + 1].chars().any(|c| ('▁'..='█').contains(&c)),
                    "an empty box at row {i}: {got}"
                );
            }
        }
    }

    /// Many CPUs and little room: the busiest are shown and the rest counted.
    #[test]
    fn more_cpus_than_rows_show_the_busiest() {
        let s = running(1, 2, 64);
        let got = text(&s, 100, 24);
        assert!(got.contains("CPU   1 "), "the busy one: {got}");
        assert!(got.contains("more CPUs, each at most"), "{got}");
    }

    /// The plan gives every box at least its minimum and uses every row.
    #[test]
    fn the_plan_uses_every_row() {
        for (h, n, cpus) in [(30, 8, 2), (45, 1, 2), (24, 4, 2), (24, 1, 64), (10, 2, 2)] {
            let (top, cpu, how) = plan(h, n, cpus, 2);
            assert_eq!(top + cpu, h.saturating_sub(4), "{h} {n} {cpus}");
            match how {
                Streams::Boxes { each, sum } => {
                    assert!(each >= BOX_MIN && sum >= BOX_MIN);
                    assert_eq!(each * n as u16 + sum, top);
                }
                Streams::List { rows, sum } => {
                    assert_eq!(rows + sum, top);
                    assert!(sum == 0 || (sum >= BOX_MIN && rows == n as u16 + 2));
                }
            }
        }
        assert!(matches!(plan(30, 8, 2, 2).2, Streams::List { .. }));
        assert!(matches!(plan(45, 1, 2, 2).2, Streams::Boxes { .. }));
    }

    /// A recorded flat rate (4.75 Gbit/s for ten intervals, one stream) draws as bars 95 % up
    /// a box whose title says the span, not as a box filled to its top.
    #[test]
    fn a_flat_rate_does_not_fill_its_box() {
        let mut s = Screen {
            title: "client".into(),
            duration: 10.0,
            ..Screen::default()
        };
        for k in 1..=10 {
            s.interval(&interval(f64::from(k), 4.75));
        }
        let got = text(&s, 100, 40);
        let rows: Vec<&str> = got.lines().collect();
        for title in [
            "sum: 4.75 Gbit/s · scale 0–5.00 Gbit/s",
            "stream 1: 4.75 Gbit/s · scale 0–5.00 Gbit/s",
        ] {
            let at = rows
                .iter()
                .position(|r| r.contains(title))
                .unwrap_or_else(|| panic!("no box titled {title}: {got}"));
            let inner = |r: &str| r.trim_start_matches('│').trim_end_matches('│').to_string();
            let top = inner(rows[at + 1]);
            let bottom = rows[at + 1..]
                .iter()
                .take_while(|r| !r.starts_with('└'))
                .last()
                .map(|r| inner(r))
                .unwrap();
            assert!(
                !top.contains('█'),
                "the top row of {title} is not filled: {got}"
            );
            assert!(bottom.chars().all(|c| c == '█'), "{got}");
        }
    }

    /// A long verdict on a narrow screen gets a third row rather than being cut.
    #[test]
    fn a_long_verdict_wraps_onto_three_rows_at_80_columns() {
        let mut s = running(1, 3, 2);
        s.verdict = Some(
            "both ends on one host (over lo): they compete for the same CPUs (sender on CPUs 0-1, \
             unpinned; receiver on CPUs 0-1, unpinned); this measures the host, not a path"
                .into(),
        );
        let got = text(&s, 80, 24);
        assert!(got.contains("this measures"), "{got}");
        assert!(got.contains("the host, not a path"), "{got}");
    }

    /// A peer that never sends (iperf3): its pane says so after a few intervals.
    #[test]
    fn a_silent_peer_is_named() {
        let mut s = Screen::default();
        let ev = LiveEvent::default();
        s.live(&ev);
        assert!(text(&s, 100, 20).contains("come with its first interval"));
        for _ in 0..3 {
            s.live(&ev);
        }
        let got = text(&s, 100, 20);
        assert!(got.contains("it is iperf3"), "{got}");
    }
}
