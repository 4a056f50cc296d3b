//! `client --live`: a full-screen terminal view refreshed every interval — a throughput
//! sparkline per stream and for the sum, retransmits, this host's CPUs as bars (user, system,
//! IRQ, softirq, steal) with the NIC's interrupts per CPU, and the busiest CPU as a running
//! hint. `q`, `Esc` or Ctrl-C end the test; the terminal is restored and the usual text summary
//! follows. The peer's CPUs arrive with the results at the end (the summary's "where the work
//! ran" block shows them).
//!
//! It is a [`Reporter`]: the engine calls it at the start, at every interval and at the end.
//! Per-CPU shares come from the explain crate's [`Observer`] over the live host, sampled at each
//! interval.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline};
use ratatui::DefaultTerminal;

use wirespeed_engine::Reporter;
use wirespeed_explain::observe::{NicSpec, Observer};
use wirespeed_host::Root;
use wirespeed_model::observation::{CpuUse, Role};
use wirespeed_report::{Interval, Start, TestResult};

/// How many samples each sparkline keeps.
const HISTORY: usize = 240;

pub struct Live {
    title: String,
    peer: Option<IpAddr>,
    role: Role,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    keys: Option<JoinHandle<()>>,
    term: Option<DefaultTerminal>,
    observer: Option<Observer>,
    streams: BTreeMap<u32, Vec<u64>>,
    last: BTreeMap<u32, f64>,
    sum: Vec<u64>,
    sum_now: f64,
    retransmits: u64,
    elapsed: f64,
    duration: f64,
    cpus: Vec<CpuUse>,
    result: Option<TestResult>,
}

impl Live {
    /// `stop` is the test's interrupt flag: a quit key sets it.
    pub fn new(
        title: String,
        peer: Option<IpAddr>,
        reverse: bool,
        duration: f64,
        stop: Arc<AtomicBool>,
    ) -> Live {
        Live {
            title,
            peer,
            role: if reverse {
                Role::Receiver
            } else {
                Role::Sender
            },
            stop,
            done: Arc::new(AtomicBool::new(false)),
            keys: None,
            term: None,
            observer: None,
            streams: BTreeMap::new(),
            last: BTreeMap::new(),
            sum: Vec::new(),
            sum_now: 0.0,
            retransmits: 0,
            elapsed: 0.0,
            duration,
            cpus: Vec::new(),
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
        if let Some(peer) = self.peer {
            self.observer =
                Observer::new(Root::live(), self.role, NicSpec::Peer { peer, local: None }).ok();
        }
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
        let streams = &self.streams;
        let last = &self.last;
        let sum = &self.sum;
        let cpus = &self.cpus;
        let head = format!(
            " {}   {:.0}/{:.0} s   sum {}   retransmits {}   q: quit ",
            self.title,
            self.elapsed,
            self.duration,
            wirespeed_report::html::rate(self.sum_now),
            self.retransmits
        );
        let nic = self
            .observer
            .as_ref()
            .and_then(|o| o.iface().map(String::from));
        let _ = term.draw(|f| {
            let shown: Vec<(&u32, &Vec<u64>)> = streams.iter().take(8).collect();
            let mut rows = vec![Constraint::Length(1)];
            rows.extend(shown.iter().map(|_| Constraint::Length(3)));
            rows.push(Constraint::Length(4));
            rows.push(Constraint::Min(4));
            rows.push(Constraint::Length(1));
            let areas = Layout::vertical(rows).split(f.area());
            f.render_widget(Paragraph::new(head.clone().bold().reversed()), areas[0]);
            for (i, (id, hist)) in shown.iter().enumerate() {
                let now = last.get(id).copied().unwrap_or(0.0);
                let data = tail(hist, areas[i + 1].width.saturating_sub(2));
                f.render_widget(
                    Sparkline::default()
                        .block(Block::default().borders(Borders::ALL).title(format!(
                            "stream {id}: {}",
                            wirespeed_report::html::rate(now)
                        )))
                        .data(&data)
                        .style(Style::default().fg(Color::Cyan)),
                    areas[i + 1],
                );
            }
            let k = shown.len() + 1;
            let data = tail(sum, areas[k].width.saturating_sub(2));
            f.render_widget(
                Sparkline::default()
                    .block(Block::default().borders(Borders::ALL).title(format!(
                        "sum: {}",
                        wirespeed_report::html::rate(sum_now(sum))
                    )))
                    .data(&data)
                    .style(Style::default().fg(Color::Green)),
                areas[k],
            );
            let width = areas[k + 1].width.saturating_sub(34).clamp(10, 60) as usize;
            let mut lines: Vec<Line> = cpus.iter().map(|c| cpu_line(c, width)).collect();
            if lines.is_empty() {
                lines.push(Line::from("(no per-CPU counters yet)"));
            }
            let title = format!(
                "CPUs of this host{}   user system irq softirq steal · NIC irqs",
                nic.as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            );
            f.render_widget(
                Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
                areas[k + 1],
            );
            let hint = busiest(cpus);
            f.render_widget(Paragraph::new(hint), areas[k + 2]);
        });
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
                " busiest CPU so far: {} at {:.0} % ({} {:.0} %); the verdict follows the test",
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
        for s in &iv.streams {
            let id = s.socket.unwrap_or(0);
            let h = self.streams.entry(id).or_default();
            h.push((s.bits_per_second / 1e6) as u64);
            if h.len() > HISTORY {
                h.remove(0);
            }
            self.last.insert(id, s.bits_per_second);
        }
        self.sum.push((iv.sum.bits_per_second / 1e6) as u64);
        if self.sum.len() > HISTORY {
            self.sum.remove(0);
        }
        self.sum_now = iv.sum.bits_per_second;
        self.retransmits += iv.sum.retransmits.unwrap_or(0);
        self.elapsed = iv.sum.end;
        if let Some(o) = self.observer.as_mut() {
            if let Ok(obs) = o.sample(Some((iv.sum.start, iv.sum.end)), &[], None) {
                self.cpus = obs.cpus.clone();
            }
        }
        self.draw();
    }

    fn finish(&mut self, result: &TestResult) {
        self.result = Some(result.clone());
        self.close();
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.close();
    }
}
