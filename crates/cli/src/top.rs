//! `wirespeed top`: the tests a running `wirespeed server --stats-socket` is serving, live, in
//! a full-screen terminal view — per test a throughput sparkline per stream and for the sum,
//! retransmits, the verdict so far and then the test's verdict, and the client's busiest CPUs
//! when the client is wirespeed (it sends its observation of each interval); below, this host's CPUs as bars (user,
//! system, IRQ, softirq, steal) with the NIC's interrupts per CPU. `q`, `Esc` or Ctrl-C quit.
//!
//! The test figures come from the server's stats socket (see [`crate::stats`]); the CPU and
//! interrupt counters are read here, from the live host (top runs beside the server), through
//! the observe crate's [`Observer`]. Lines from the socket are parsed defensively: anything
//! malformed or overlong is skipped.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline, Wrap};
use ratatui::DefaultTerminal;

use wirespeed_host::Root;
use wirespeed_model::observation::{CpuUse, Role};
use wirespeed_observe::observer::{NicSpec, Observer};
use wirespeed_report::html::rate;

use crate::exit;
use crate::live::{busiest, cpu_line, fit, push, scale_top, scale_words, sum_now};
use wirespeed_engine::feed::{parse_line, LineReader, StatsLine};

/// Tests kept on screen (running ones first, then the latest finished).
const KEEP: usize = 8;
/// Streams drawn per test (the sum counts them all).
const STREAMS_SHOWN: usize = 4;

#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// The server's stats socket (`server --stats-socket`); default
    /// `$XDG_RUNTIME_DIR/wirespeed/stats.sock`, else `/run/wirespeed/stats.sock` for root,
    /// else `/tmp/wirespeed-UID/stats.sock`.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Count this interface's interrupts (default: the interface that routes to the first
    /// test's client).
    #[arg(long, value_name = "IFACE")]
    pub iface: Option<String>,
}

/// One test as seen through the feed.
#[derive(Debug, Default)]
struct TestView {
    peer: String,
    receiver: bool,
    t: f64,
    duration: f64,
    streams: BTreeMap<u32, (Vec<u64>, f64)>,
    sum: Vec<u64>,
    retransmits: Option<u64>,
    done: bool,
    verdict: Option<String>,
    error: Option<String>,
    /// The client's CPUs over its latest interval (a wirespeed client sends them).
    peer_cpus: Vec<CpuUse>,
    peer_iface: Option<String>,
    verdict_so_far: Option<String>,
}

/// The client's CPUs drawn per test (the busiest).
const PEER_CPUS_SHOWN: usize = 4;

/// What top shows: the tests by number.
#[derive(Debug, Default)]
struct Tests(BTreeMap<u64, TestView>);

impl Tests {
    fn apply(&mut self, l: StatsLine) {
        let v = self.0.entry(l.test).or_default();
        v.peer = l.peer;
        v.receiver = l.receiver;
        v.duration = l.duration;
        if l.done {
            v.done = true;
            v.verdict = l.verdict;
            v.error = l.error;
            if l.t > 0.0 {
                v.t = l.t;
            }
        } else {
            v.t = l.t;
            for (id, bps) in l.streams {
                let s = v.streams.entry(id).or_default();
                push(&mut s.0, bps);
                s.1 = bps;
            }
            push(&mut v.sum, l.sum_bps);
            if let Some(r) = l.retransmits {
                *v.retransmits.get_or_insert(0) += r;
            }
            if !l.peer_cpus.is_empty() {
                v.peer_cpus = l.peer_cpus;
                v.peer_iface = l.peer_iface;
            }
            if l.verdict_so_far.is_some() {
                v.verdict_so_far = l.verdict_so_far;
            }
        }
        // Bounded: the oldest finished tests go first, then the oldest.
        while self.0.len() > KEEP {
            let victim = self
                .0
                .iter()
                .find(|(_, v)| v.done)
                .or_else(|| self.0.iter().next())
                .map(|(k, _)| *k);
            match victim {
                Some(k) => self.0.remove(&k),
                None => break,
            };
        }
    }

    fn running(&self) -> usize {
        self.0.values().filter(|v| !v.done).count()
    }

    /// The tests to draw, newest first, at most `n`.
    fn shown(&self, n: usize) -> Vec<(&u64, &TestView)> {
        self.0.iter().rev().take(n).collect()
    }
}

pub fn run(a: TopArgs) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() {
        return Err(exit::fail(exit::USAGE, "top needs a terminal on stdout"));
    }
    let path = a
        .socket
        .clone()
        .unwrap_or_else(wirespeed_engine::feed::default_path);
    let conn = UnixStream::connect(&path).map_err(|e| {
        exit::fail(
            exit::IO,
            format!(
                "{}: {e} (is a server running with --stats-socket?)",
                path.display()
            ),
        )
    })?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("top-feed".into())
        .spawn(move || {
            let mut r = LineReader::new(conn);
            while let Some(line) = r.next_line() {
                if let Some(l) = parse_line(&line) {
                    if tx.send(l).is_err() {
                        return;
                    }
                }
            }
        })?;
    let mut view = View {
        title: format!(" wirespeed top  {}", path.display()),
        iface: a.iface.clone(),
        peer: None,
        observer: None,
        cpus: Vec::new(),
        tests: Tests::default(),
        closed: false,
    };
    view.observe(None);
    let mut term = ratatui::init();
    let r = view.run(&mut term, &rx);
    ratatui::restore();
    r?;
    Ok(ExitCode::SUCCESS)
}

struct View {
    title: String,
    iface: Option<String>,
    peer: Option<SocketAddr>,
    observer: Option<Observer>,
    cpus: Vec<CpuUse>,
    tests: Tests,
    closed: bool,
}

impl View {
    /// (Re)start the counters: for `--iface`, else the interface towards `peer`, else none.
    fn observe(&mut self, peer: Option<SocketAddr>) {
        self.peer = peer;
        let nic = match (&self.iface, peer) {
            (Some(i), _) => NicSpec::Iface(i.clone()),
            (None, Some(p)) => NicSpec::Peer {
                peer: p.ip().to_canonical(),
                local: None,
            },
            (None, None) => NicSpec::None,
        };
        self.observer = Observer::new(Root::live(), Role::Receiver, nic).ok();
    }

    fn sample(&mut self) {
        // The observer keeps every interval; start afresh now and then to stay bounded.
        let long = self
            .observer
            .as_ref()
            .is_some_and(|o| o.intervals().len() > 600);
        if long {
            let peer = self.peer;
            self.observe(peer);
        }
        if let Some(o) = self.observer.as_mut() {
            if let Ok(obs) = o.sample(None, &[], None) {
                self.cpus = obs.cpus.clone();
            }
        }
    }

    fn run(&mut self, term: &mut DefaultTerminal, rx: &Receiver<StatsLine>) -> anyhow::Result<()> {
        let mut next_sample = Instant::now() + Duration::from_secs(1);
        let mut dirty = true;
        loop {
            loop {
                match rx.try_recv() {
                    Ok(l) => {
                        let first = self.tests.0.is_empty() && self.iface.is_none();
                        if first && self.observer.as_ref().is_none_or(|o| o.iface().is_none()) {
                            if let Ok(p) = l.peer.parse::<SocketAddr>() {
                                self.observe(Some(p));
                            }
                        }
                        self.tests.apply(l);
                        dirty = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        dirty |= !self.closed;
                        self.closed = true;
                        break;
                    }
                }
            }
            if Instant::now() >= next_sample {
                self.sample();
                next_sample = Instant::now() + Duration::from_secs(1);
                dirty = true;
            }
            if dirty {
                self.draw(term)?;
                dirty = false;
            }
            if event::poll(Duration::from_millis(100))? {
                match event::read()? {
                    Event::Key(k) if k.kind == KeyEventKind::Press => {
                        let ctrl_c = k.code == KeyCode::Char('c')
                            && k.modifiers.contains(KeyModifiers::CONTROL);
                        if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                            return Ok(());
                        }
                    }
                    Event::Resize(..) => dirty = true,
                    _ => {}
                }
            }
        }
    }

    fn draw(&self, term: &mut DefaultTerminal) -> anyhow::Result<()> {
        let head = format!(
            "{}   {} running{}   q: quit ",
            self.title,
            self.tests.running(),
            if self.closed {
                "   (the server closed the feed)"
            } else {
                ""
            }
        );
        let nic = self
            .observer
            .as_ref()
            .and_then(|o| o.iface().map(String::from));
        term.draw(|f| {
            let area = f.area();
            // Room for the tests: what the CPU block (at least 4 rows) leaves.
            let cpu_rows = (self.cpus.len() as u16 + 2).clamp(4, area.height / 2);
            let mut budget = area.height.saturating_sub(cpu_rows + 2);
            let mut rows = vec![Constraint::Length(1)];
            let mut items: Vec<Item> = Vec::new();
            for (n, t) in self.tests.shown(KEEP) {
                let peer_rows = if t.peer_cpus.is_empty() {
                    0
                } else {
                    t.peer_cpus.len().min(PEER_CPUS_SHOWN) as u16 + 2
                };
                let want = 2 + peer_rows + 3 * (t.streams.len().min(STREAMS_SHOWN) as u16 + 1);
                if budget < 4 {
                    break;
                }
                budget = budget.saturating_sub(want);
                items.push(Item::Head(*n, t));
                rows.push(Constraint::Length(2));
                if peer_rows > 0 {
                    items.push(Item::PeerCpus(*n, t));
                    rows.push(Constraint::Length(peer_rows));
                }
                for (id, (h, now)) in t.streams.iter().take(STREAMS_SHOWN) {
                    items.push(Item::Stream(*n, *id, h, *now));
                    rows.push(Constraint::Length(3));
                }
                items.push(Item::Sum(*n, &t.sum));
                rows.push(Constraint::Length(3));
            }
            if items.is_empty() {
                items.push(Item::Idle);
                rows.push(Constraint::Length(1));
            }
            rows.push(Constraint::Min(4));
            rows.push(Constraint::Length(1));
            let areas = Layout::vertical(rows).split(area);
            f.render_widget(Paragraph::new(head.clone().bold().reversed()), areas[0]);
            for (i, item) in items.iter().enumerate() {
                let a = areas[i + 1];
                match item {
                    Item::Idle => f.render_widget(
                        Paragraph::new(" no test yet: waiting for the server's next interval"),
                        a,
                    ),
                    Item::Head(n, t) => f.render_widget(
                        Paragraph::new(test_head(*n, t)).wrap(Wrap { trim: false }),
                        a,
                    ),
                    Item::PeerCpus(n, t) => {
                        let width = a.width.saturating_sub(34).clamp(10, 60) as usize;
                        let mut busiest: Vec<&CpuUse> = t.peer_cpus.iter().collect();
                        busiest.sort_by(|x, y| y.busy().get().total_cmp(&x.busy().get()));
                        busiest.truncate(PEER_CPUS_SHOWN);
                        busiest.sort_by_key(|c| c.cpu);
                        let lines: Vec<Line> =
                            busiest.iter().map(|c| cpu_line(c, width, false)).collect();
                        let title = format!(
                            "test {n}: CPUs of the client{} (busiest {})",
                            t.peer_iface
                                .as_deref()
                                .map(|i| format!(" ({i})"))
                                .unwrap_or_default(),
                            busiest.len()
                        );
                        f.render_widget(
                            Paragraph::new(lines)
                                .block(Block::default().borders(Borders::ALL).title(title)),
                            a,
                        );
                    }
                    Item::Stream(n, id, h, now) => {
                        let data = fit(h, a.width.saturating_sub(2));
                        let top = scale_top(h);
                        f.render_widget(
                            Sparkline::default()
                                .block(Block::default().borders(Borders::ALL).title(format!(
                                    "test {n} stream {id}: {} · {}",
                                    rate(*now),
                                    scale_words(top)
                                )))
                                .data(&data)
                                .max(top)
                                .style(Style::default().fg(Color::Cyan)),
                            a,
                        );
                    }
                    Item::Sum(n, h) => {
                        let data = fit(h, a.width.saturating_sub(2));
                        let top = scale_top(h);
                        f.render_widget(
                            Sparkline::default()
                                .block(Block::default().borders(Borders::ALL).title(format!(
                                    "test {n} sum: {} · {}",
                                    rate(sum_now(h)),
                                    scale_words(top)
                                )))
                                .data(&data)
                                .max(top)
                                .style(Style::default().fg(Color::Green)),
                            a,
                        );
                    }
                }
            }
            let k = items.len() + 1;
            let width = areas[k].width.saturating_sub(34).clamp(10, 60) as usize;
            let mut lines: Vec<Line> = self
                .cpus
                .iter()
                .map(|c| cpu_line(c, width, false))
                .collect();
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
                areas[k],
            );
            f.render_widget(
                Paragraph::new(footer(&self.cpus, &self.tests)),
                areas[k + 1],
            );
        })?;
        Ok(())
    }
}

/// The bottom line: this host's busiest CPU, and the running tests without a verdict so far
/// (a test appears with its first interval, so none is promised "with the first interval").
fn footer(cpus: &[CpuUse], tests: &Tests) -> String {
    let waiting: Vec<String> = tests
        .0
        .iter()
        .filter(|(_, t)| !t.done && t.verdict_so_far.is_none())
        .map(|(n, _)| n.to_string())
        .collect();
    let mut s = busiest(cpus);
    if !waiting.is_empty() {
        if !s.is_empty() {
            s.push(';');
        }
        s.push_str(&format!(
            " no verdict so far for test{} {}",
            if waiting.len() == 1 { "" } else { "s" },
            waiting.join(", ")
        ));
    }
    s
}

enum Item<'a> {
    Idle,
    Head(u64, &'a TestView),
    PeerCpus(u64, &'a TestView),
    Stream(u64, u32, &'a Vec<u64>, f64),
    Sum(u64, &'a Vec<u64>),
}

/// `test 3 from 10.0.0.2:40000, receiving, 4/10 s, retransmits 12 · done: <verdict>`
fn test_head(n: u64, t: &TestView) -> Line<'static> {
    let mut s = format!(
        " test {n} from {}, {}, {:.0}/{:.0} s",
        t.peer,
        if t.receiver { "receiving" } else { "sending" },
        t.t,
        t.duration
    );
    if let Some(r) = t.retransmits {
        s.push_str(&format!(", retransmits {r}"));
    }
    if t.done {
        s.push_str(" · done");
        if let Some(e) = &t.error {
            s.push_str(&format!(": {e}"));
        } else if let Some(v) = &t.verdict {
            s.push_str(&format!(": {v}"));
        }
    } else if let Some(v) = &t.verdict_so_far {
        s.push_str(&format!(" · verdict so far: {v}"));
    }
    Line::from(s.bold())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(test: u64, t: f64, done: bool) -> StatsLine {
        StatsLine {
            test,
            peer: "127.0.0.1:1".into(),
            receiver: true,
            t,
            duration: 5.0,
            streams: vec![(1, 2e9)],
            sum_bps: 2e9,
            retransmits: Some(1),
            done,
            verdict: done.then(|| "fine".into()),
            error: None,
            peer_cpus: vec![CpuUse {
                cpu: 5,
                ..CpuUse::default()
            }],
            peer_iface: Some("eth1".into()),
            verdict_so_far: (!done).then(|| "so far fine".into()),
        }
    }

    #[test]
    fn intervals_accumulate_and_old_tests_go() {
        let mut t = Tests::default();
        t.apply(line(1, 1.0, false));
        t.apply(line(1, 2.0, false));
        let v = &t.0[&1];
        assert_eq!(v.sum, vec![2000, 2000]);
        assert_eq!(v.retransmits, Some(2));
        assert_eq!(v.peer_cpus[0].cpu, 5);
        assert_eq!(v.verdict_so_far.as_deref(), Some("so far fine"));
        assert!(test_head(1, v)
            .to_string()
            .contains("verdict so far: so far fine"));
        assert_eq!(t.running(), 1);
        t.apply(line(1, 2.0, true));
        assert_eq!(t.running(), 0);
        assert_eq!(t.0[&1].verdict.as_deref(), Some("fine"));
        for n in 2..=(KEEP as u64 + 3) {
            t.apply(line(n, 1.0, false));
        }
        assert_eq!(t.0.len(), KEEP);
        assert!(!t.0.contains_key(&1), "the finished test goes first");
        assert_eq!(t.shown(2)[0].0, &(KEEP as u64 + 3), "newest first");
    }

    /// The footer names the running tests without a verdict, and stops once each has one
    /// (it said "the verdict comes with the first interval" after the verdict appeared).
    #[test]
    fn the_footer_agrees_with_the_verdicts() {
        let cpus = vec![CpuUse {
            cpu: 3,
            ..CpuUse::default()
        }];
        let mut t = Tests::default();
        let mut first = line(1, 1.0, false);
        first.verdict_so_far = None;
        t.apply(first);
        let f = footer(&cpus, &t);
        assert!(f.contains("busiest CPU so far: 3"), "{f}");
        assert!(f.ends_with("; no verdict so far for test 1"), "{f}");
        t.apply(line(1, 2.0, false));
        let f = footer(&cpus, &t);
        assert!(!f.contains("verdict"), "{f}");
        t.apply(line(1, 3.0, true));
        assert!(!footer(&cpus, &t).contains("verdict"));
        let mut other = line(2, 1.0, false);
        other.verdict_so_far = None;
        t.apply(other);
        assert_eq!(footer(&[], &t), " no verdict so far for test 2");
    }
}
