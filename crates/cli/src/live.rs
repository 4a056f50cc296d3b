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

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline, Wrap};
use ratatui::{DefaultTerminal, Frame};

use wirespeed_engine::Reporter;
use wirespeed_model::observation::CpuUse;
use wirespeed_report::{Interval, LiveEvent, Start, TestResult};

/// How many samples each sparkline keeps.
const HISTORY: usize = 240;
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
    /// The end-of-test verdict, which replaces it.
    pub verdict: Option<String>,
}

fn push(h: &mut Vec<u64>, bps: f64) {
    h.push((bps / 1e6) as u64);
    if h.len() > HISTORY {
        h.remove(0);
    }
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
        }
    }

    /// The test ended: its verdict replaces the one so far.
    pub fn finish(&mut self, result: &TestResult) {
        if let Some(v) = result.wirespeed.as_ref().and_then(|w| w.verdict.as_ref()) {
            self.verdict = Some(v.line.clone());
        }
    }

    fn head(&self) -> String {
        format!(
            " {}   {:.0}/{:.0} s   sum {}   retransmits {}   q: quit ",
            self.title,
            self.elapsed,
            self.duration,
            wirespeed_report::html::rate(self.sum_now),
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
            (None, None) => Line::from(format!(" {}", busiest(&self.local_cpus))),
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

/// A pane of CPU bars: `who` (this host, the peer), its NIC, the bars.
fn cpu_pane<'a>(
    who: &str,
    nic: Option<&str>,
    cpus: &[CpuUse],
    width: u16,
    empty: &str,
) -> Paragraph<'a> {
    let bars = (width.saturating_sub(46) as usize).clamp(6, 60);
    let mut lines: Vec<Line> = cpus.iter().map(|c| cpu_line(c, bars)).collect();
    if lines.is_empty() {
        lines.push(Line::from(empty.to_string()));
    }
    let title = format!(
        "CPUs of {who}{}",
        nic.map(|n| format!(" ({n})")).unwrap_or_default()
    );
    Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title))
}

/// Draw `s` into `f`: the head line, a sparkline per stream (up to 8) and the sum, this
/// host's and the peer's CPUs side by side, and the verdict (so far) at the bottom.
pub fn render(f: &mut Frame, s: &Screen) {
    let shown: Vec<(&u32, &(Vec<u64>, f64))> = s.streams.iter().take(8).collect();
    let mut rows = vec![Constraint::Length(1)];
    rows.extend(shown.iter().map(|_| Constraint::Length(3)));
    rows.push(Constraint::Length(4));
    rows.push(Constraint::Min(4));
    rows.push(Constraint::Length(2));
    let areas = Layout::vertical(rows).split(f.area());
    f.render_widget(Paragraph::new(s.head().bold().reversed()), areas[0]);
    for (i, (id, (hist, now))) in shown.iter().enumerate() {
        let data = tail(hist, areas[i + 1].width.saturating_sub(2));
        f.render_widget(
            Sparkline::default()
                .block(Block::default().borders(Borders::ALL).title(format!(
                    "stream {id}: {}",
                    wirespeed_report::html::rate(*now)
                )))
                .data(&data)
                .style(Style::default().fg(Color::Cyan)),
            areas[i + 1],
        );
    }
    let k = shown.len() + 1;
    let data = tail(&s.sum, areas[k].width.saturating_sub(2));
    f.render_widget(
        Sparkline::default()
            .block(Block::default().borders(Borders::ALL).title(format!(
                "sum: {}",
                wirespeed_report::html::rate(sum_now(&s.sum))
            )))
            .data(&data)
            .style(Style::default().fg(Color::Green)),
        areas[k],
    );
    let panes = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(areas[k + 1]);
    f.render_widget(
        cpu_pane(
            "this host · usr sys irq sirq steal",
            s.local_nic.as_deref(),
            &s.local_cpus,
            panes[0].width,
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
            panes[1].width,
            s.peer_placeholder(),
        ),
        panes[1],
    );
    f.render_widget(
        Paragraph::new(s.verdict_line()).wrap(Wrap { trim: false }),
        areas[k + 2],
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
                if let Ok(Event::Key(k)) = event::read() {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if k.kind == KeyEventKind::Press
                        && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc))
                    {
                        stop.store(true, Ordering::SeqCst);
                    }
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

pub(crate) fn sum_now(sum: &[u64]) -> f64 {
    sum.last().map(|v| *v as f64 * 1e6).unwrap_or(0.0)
}

pub(crate) fn tail(v: &[u64], n: u16) -> Vec<u64> {
    let n = usize::from(n).max(1);
    v[v.len().saturating_sub(n)..].to_vec()
}

/// `cpu  3 ████████▒▒▒     72% irqs 1234`, coloured by kind of work.
pub(crate) fn cpu_line(c: &CpuUse, width: usize) -> Line<'static> {
    let parts = [
        (c.user.get(), Color::Blue),
        (c.system.get(), Color::Yellow),
        (c.irq.get(), Color::Red),
        (c.softirq.get(), Color::Green),
        (c.steal.get(), Color::Magenta),
    ];
    let mut spans = vec![Span::raw(format!("CPU {:>3} ", c.cpu))];
    let mut used = 0;
    for (pct, colour) in parts {
        let n = ((pct.clamp(0.0, 100.0) / 100.0) * width as f64).round() as usize;
        let n = n.min(width - used);
        used += n;
        spans.push(Span::styled("█".repeat(n), Style::default().fg(colour)));
    }
    spans.push(Span::raw(format!(
        "{}| {:>5.1}% busy  NIC irqs {}",
        " ".repeat(width - used),
        c.busy().get(),
        c.nic_irqs
    )));
    Line::from(spans)
}

pub(crate) fn busiest(cpus: &[CpuUse]) -> String {
    match cpus
        .iter()
        .max_by(|a, b| a.busy().get().total_cmp(&b.busy().get()))
    {
        Some(c) => {
            let (what, p) = c.dominant();
            format!(
                " busiest CPU so far: {} at {:.0} % ({} {:.0} %); the verdict comes with the first interval",
                c.cpu,
                c.busy().get(),
                what,
                p.get()
            )
        }
        None => String::new(),
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
        Verdict {
            id: "receiver-softirq".into(),
            end: Some("receiver".into()),
            line: line.into(),
            also: vec![],
            evidence: None,
        }
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
        assert!(
            got.contains("CPUs of this host · usr sys irq sirq steal (eth0)"),
            "{got}"
        );
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
