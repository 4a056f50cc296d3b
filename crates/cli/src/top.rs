//! `wirespeed top`: the tests a running `wirespeed server --stats-socket` is serving, drawn by
//! [`wirespeed_view::top`]. Here: the stats socket (its lines parsed defensively by the
//! engine's feed: anything malformed or overlong is skipped) and this host's CPU and interrupt
//! counters, read from the live host through explain's [`Observer`].

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;

use wirespeed_engine::feed::{parse_line, LineReader};
use wirespeed_host::Root;
use wirespeed_model::observation::{CpuUse, Role};
use wirespeed_observe::observer::{NicSpec, Observer};
use wirespeed_view::top::HostCpus;

use crate::exit;

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

pub fn run(a: TopArgs) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() {
        return Err(exit::fail(exit::USAGE, "top needs a terminal on stdout"));
    }
    let path = a
        .socket
        .clone()
        .unwrap_or_else(wirespeed_engine::feed::default_path);
    let conn = UnixStream::connect(&path).map_err(|e| {
        let hint = "is a server running with --stats-socket?";
        exit::fail(exit::IO, format!("{}: {e} ({hint})", path.display()))
    })?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("top-feed".into())
        .spawn(move || {
            let mut r = LineReader::new(conn);
            while let Some(line) = r.next_line() {
                if parse_line(&line).is_some_and(|l| tx.send(l).is_err()) {
                    return;
                }
            }
        })?;
    let mut host = Host {
        named: a.iface,
        peer: None,
        observer: None,
    };
    host.observe(None);
    let title = format!(" wirespeed top  {}", path.display());
    wirespeed_view::top::run(title, &rx, &mut host)?;
    Ok(ExitCode::SUCCESS)
}

/// This host's counters: for `--iface`, else the interface towards the first test's client.
struct Host {
    /// `--iface`.
    named: Option<String>,
    peer: Option<SocketAddr>,
    observer: Option<Observer>,
}

impl Host {
    /// (Re)start the counters: for `--iface`, else the interface towards `peer`, else none.
    fn observe(&mut self, peer: Option<SocketAddr>) {
        self.peer = peer;
        let nic = match (&self.named, peer) {
            (Some(i), _) => NicSpec::Iface(i.clone()),
            (None, Some(p)) => NicSpec::Peer {
                peer: p.ip().to_canonical(),
                local: None,
            },
            (None, None) => NicSpec::None,
        };
        self.observer = Observer::new(Root::live(), Role::Receiver, nic).ok();
    }
}

impl HostCpus for Host {
    fn towards(&mut self, peer: SocketAddr) {
        if self.named.is_none() && self.iface().is_none() {
            self.observe(Some(peer));
        }
    }

    fn sample(&mut self) -> Option<Vec<CpuUse>> {
        // The observer keeps every interval; start afresh now and then to stay bounded.
        if self
            .observer
            .as_ref()
            .is_some_and(|o| o.intervals().len() > 600)
        {
            self.observe(self.peer);
        }
        let o = self.observer.as_mut()?;
        o.sample(None, &[], None).ok().map(|obs| obs.cpus.clone())
    }

    fn iface(&self) -> Option<String> {
        self.observer.as_ref()?.iface().map(String::from)
    }
}
