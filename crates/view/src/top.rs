//! `wirespeed top`: the tests a running `wirespeed server --stats-socket` is serving, live, in
//! a full-screen terminal view — per test a throughput sparkline per stream and for the sum,
//! retransmits, the verdict so far and then the test's verdict, and the client's busiest CPUs
//! when the client is wirespeed (it sends its observation of each interval); below, this host's
//! CPUs as bars (user, system, IRQ, softirq, steal) with the NIC's interrupts per CPU. `q`,
//! `Esc` or Ctrl-C quit.
//!
//! The test figures are the lines of the server's stats feed ([`wirespeed_engine::feed`]), read
//! by the caller and passed in; the CPU and interrupt counters come from the caller's
//! [`HostCpus`] (the live host's: top runs beside the server). [`render`] draws a [`Top`] into
//! any ratatui frame.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Stylize;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::{DefaultTerminal, Frame};

use wirespeed_engine::feed::StatsLine;
use wirespeed_model::observation::CpuUse;
use wirespeed_report::html::rate;

use crate::draw::{
    busiest, cpu_line, push, quits, scale_top, scale_words, sparkline, sum_now, STREAM, SUM,
};

/// Tests kept on screen (running ones first, then the latest finished).
const KEEP: usize = 8;
/// Streams drawn per test (the sum counts them all).
const STREAMS_SHOWN: usize = 4;

/// This host's side of top: its CPUs and the NIC whose interrupts are counted (the caller
/// reads them from the host; the view only draws them).
pub trait HostCpus {
    /// The first test's client: count the interrupts of the NIC towards it, unless an
    /// interface was named.
    fn towards(&mut self, peer: SocketAddr);
    /// This host's CPUs since the previous sample (`None`: no new figures).
    fn sample(&mut self) -> Option<Vec<CpuUse>>;
    /// The interface whose interrupts are counted.
    fn iface(&self) -> Option<String>;
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

/// Draw the tests of `feed` and `host`'s CPUs full-screen until `q`, `Esc` or Ctrl-C (the
/// terminal is restored on the way out); `title` heads the screen.
pub fn run(title: String, feed: &Receiver<StatsLine>, host: &mut dyn HostCpus) -> io::Result<()> {
    let mut top = Top {
        title,
        ..Top::default()
    };
    let mut term = ratatui::init();
    let r = top.run(&mut term, feed, host);
    ratatui::restore();
    r
}

/// What top shows: the tests, this host's CPUs and its NIC, whether the feed ended.
#[derive(Debug, Default)]
pub struct Top {
    pub title: String,
    tests: Tests,
    pub cpus: Vec<CpuUse>,
    pub nic: Option<String>,
    /// The server closed the feed.
    pub closed: bool,
}

impl Top {
    /// One line of the feed.
    pub fn apply(&mut self, l: StatsLine) {
        self.tests.apply(l);
    }

    fn run(
        &mut self,
        term: &mut DefaultTerminal,
        rx: &Receiver<StatsLine>,
        host: &mut dyn HostCpus,
    ) -> io::Result<()> {
        // The counters need a second to say something.
        let mut next_sample = Instant::now() + Duration::from_secs(1);
        self.nic = host.iface();
        let mut dirty = true;
        loop {
            loop {
                match rx.try_recv() {
                    Ok(l) => {
                        if self.tests.0.is_empty() {
                            if let Ok(p) = l.peer.parse::<SocketAddr>() {
                                host.towards(p);
                                self.nic = host.iface();
                            }
                        }
                        self.apply(l);
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
                if let Some(cpus) = host.sample() {
                    self.cpus = cpus;
                }
                self.nic = host.iface();
                next_sample = Instant::now() + Duration::from_secs(1);
                dirty = true;
            }
            if dirty {
                term.draw(|f| render(f, self))?;
                dirty = false;
            }
            if event::poll(Duration::from_millis(100))? {
                match event::read()? {
                    Event::Key(k) if quits(&k) => return Ok(()),
                    Event::Resize(..) => dirty = true,
                    _ => {}
                }
            }
        }
    }
}

/// Draw `top` into `f`: a head line, per test its head, the client's busiest CPUs and the
/// sparklines of its streams and sum (newest test first, as many as fit), this host's CPUs,
/// and a footer.
pub fn render(f: &mut Frame, top: &Top) {
    let head = format!(
        "{}   {} running{}   q: quit ",
        top.title,
        top.tests.running(),
        if top.closed {
            "   (the server closed the feed)"
        } else {
            ""
        }
    );
    let area = f.area();
    // Room for the tests: what the CPU block (at least 4 rows) leaves.
    let cpu_rows = (top.cpus.len() as u16 + 2).clamp(4, area.height / 2);
    let mut budget = area.height.saturating_sub(cpu_rows + 2);
    let mut rows = vec![Constraint::Length(1)];
    let mut items: Vec<Item> = Vec::new();
    for (n, t) in top.tests.shown(KEEP) {
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
    f.render_widget(Paragraph::new(head.bold().reversed()), areas[0]);
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
                let lines: Vec<Line> = busiest.iter().map(|c| cpu_line(c, width, false)).collect();
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
                let max = scale_top(h);
                let title = format!(
                    "test {n} stream {id}: {} · {}",
                    rate(*now),
                    scale_words(max)
                );
                f.render_widget(sparkline(title, h, a.width, max, STREAM), a);
            }
            Item::Sum(n, h) => {
                let max = scale_top(h);
                let title = format!("test {n} sum: {} · {}", rate(sum_now(h)), scale_words(max));
                f.render_widget(sparkline(title, h, a.width, max, SUM), a);
            }
        }
    }
    let k = items.len() + 1;
    let width = areas[k].width.saturating_sub(34).clamp(10, 60) as usize;
    let mut lines: Vec<Line> = top.cpus.iter().map(|c| cpu_line(c, width, false)).collect();
    if lines.is_empty() {
        lines.push(Line::from("(no per-CPU counters yet)"));
    }
    let title = format!(
        "CPUs of this host{}   user system irq softirq steal · NIC irqs",
        top.nic
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    );
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        areas[k],
    );
    f.render_widget(Paragraph::new(footer(&top.cpus, &top.tests)), areas[k + 1]);
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

    /// `top` at 100×40: the head counts the running test, each test has its head (peer,
    /// direction, time, retransmits, verdict so far), the client's CPUs, a sparkline per stream
    /// and the sum with their rates; this host's CPUs and its NIC below, the footer last.
    #[test]
    fn a_frame_shows_each_test_and_this_hosts_cpus() {
        let mut top = Top {
            title: " wirespeed top  /run/stats.sock".into(),
            cpus: vec![CpuUse {
                cpu: 3,
                nic_irqs: 77,
                ..CpuUse::default()
            }],
            nic: Some("eth0".into()),
            ..Top::default()
        };
        top.apply(line(1, 1.0, false));
        top.apply(line(1, 2.0, false));
        top.apply(line(2, 1.0, true));
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 40)).unwrap();
        t.draw(|f| render(f, &top)).unwrap();
        let buf = t.backend().buffer().clone();
        let got: String = (0..40)
            .map(|y| (0..100).map(|x| buf[(x, y)].symbol()).collect::<String>() + "\n")
            .collect();
        assert!(
            got.contains("wirespeed top  /run/stats.sock   1 running"),
            "{got}"
        );
        assert!(
            got.contains("test 2 from 127.0.0.1:1, receiving, 1/5 s · done: fine"),
            "{got}"
        );
        assert!(got.contains("test 1 from 127.0.0.1:1, receiving, 2/5 s, retransmits 2 · verdict so far: so far fine"), "{got}");
        assert!(
            got.contains("test 1: CPUs of the client (eth1) (busiest 1)"),
            "{got}"
        );
        assert!(
            got.contains("test 1 stream 1: 2.00 Gbit/s · scale 0–2.50 Gbit/s"),
            "{got}"
        );
        assert!(got.contains("test 1 sum: 2.00 Gbit/s"), "{got}");
        assert!(got.contains("CPUs of this host (eth0)"), "{got}");
        assert!(got.contains("NIC irqs 77"), "{got}");
        assert!(got.contains("busiest CPU so far: 3"), "{got}");
        let idle = Top::default();
        t.draw(|f| render(f, &idle)).unwrap();
        let buf = t.backend().buffer().clone();
        let row: String = (0..100).map(|x| buf[(x, 1)].symbol()).collect();
        assert!(row.contains("no test yet"), "{row}");
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
