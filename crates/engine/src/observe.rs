//! Where the work ran (issue 6), wired into both runners.
//!
//! Each runner owns a [`TestObserver`]: started when its data phase starts, sampled at every
//! interval tick, closed at the final tick (with the workers' CPUs and the senders' `TCP_INFO`
//! limits, while the sockets are still open). Each end sends its observation in the
//! `observation` slot of its results' extension; each joins the peer's with its own, computes the
//! verdict and stores both under its report's `wirespeed.observation` and `wirespeed.verdict`, so
//! the server's output shows where the work ran as the client's does.
//! Observation never fails a test: when `/proc` cannot be read, the observation is absent.

use std::net::IpAddr;

use wirespeed_datapath::tcp::TcpInfo;
use wirespeed_explain::model::{
    BitsPerSecond, EndObservation, Role, TcpLimits, TestObservation, WorkerRun,
};
use wirespeed_explain::observe::{NicSpec, Observer};
use wirespeed_explain::verdict::verdict;
use wirespeed_host::Root;
use wirespeed_protocol::{Direction, ResultsExt, WorkerInfo};
use wirespeed_report::WirespeedExt;

/// The role of one end for a direction.
pub fn role(direction: Direction, client: bool) -> Role {
    match (direction, client) {
        (Direction::Both, _) => Role::Both,
        (Direction::ClientToServer, true) | (Direction::ServerToClient, false) => Role::Sender,
        _ => Role::Receiver,
    }
}

/// The workers (as `assemble::worker_infos` lists them) as the observation records them.
pub fn worker_runs(workers: &[WorkerInfo]) -> Vec<WorkerRun> {
    workers
        .iter()
        .enumerate()
        .map(|(i, w)| WorkerRun {
            worker: i as u32,
            cpu_requested: w.cpu_requested,
            cpus_seen: w.cpus_seen.clone(),
            streams: w
                .streams
                .iter()
                .filter_map(|&s| i32::try_from(s).ok())
                .collect(),
        })
        .collect()
}

/// The senders' `TCP_INFO` limits summed over their streams; `None` without senders or when the
/// kernel has no busy-time counters (before 4.10).
pub fn tcp_limits<'a>(infos: impl IntoIterator<Item = &'a TcpInfo>) -> Option<TcpLimits> {
    let mut total: Option<TcpLimits> = None;
    for i in infos {
        let Some(busy) = i.busy_time_us else { continue };
        let one = TcpLimits {
            busy_us: busy,
            rwnd_limited_us: i.rwnd_limited_us.unwrap_or(0),
            sndbuf_limited_us: i.sndbuf_limited_us.unwrap_or(0),
            pmtu: (i.pmtu > 0).then_some(i.pmtu),
        };
        match &mut total {
            Some(t) => t.add(&one),
            None => total = Some(one),
        }
    }
    total
}

/// The observer of one end of one test.
#[derive(Debug, Default)]
pub struct TestObserver {
    running: Option<Observer>,
    end: Option<EndObservation>,
}

impl TestObserver {
    /// Start observing (first snapshot). `peer` finds the NIC through the route to it.
    pub fn start(direction: Direction, client: bool, peer: IpAddr, local: Option<IpAddr>) -> Self {
        TestObserver {
            running: Observer::new(
                Root::live(),
                role(direction, client),
                NicSpec::Peer { peer, local },
            )
            .ok(),
            end: None,
        }
    }

    /// An interval tick.
    pub fn tick(&mut self, start: f64, end: f64) {
        if let Some(o) = &mut self.running {
            let _ = o.sample(Some((start, end)), &[], None);
        }
    }

    /// The final tick: close the totals with the workers and the senders' limits.
    pub fn close(&mut self, workers: &[WorkerInfo], tcp: Option<TcpLimits>) {
        if let Some(o) = self.running.take() {
            self.end = o.close(&worker_runs(workers), tcp).ok();
        }
    }

    /// This end's observation, once closed.
    pub fn end(&self) -> Option<&EndObservation> {
        self.end.as_ref()
    }

    /// This end's observation as the extension carries it.
    pub fn value(&self) -> Option<EndObservation> {
        self.end.clone()
    }

    /// Join the peer's observation (from its results' extension; `peer` is `None` when the
    /// peer is iperf3) with this end's, compute the verdict from the receiver's throughput, and
    /// store both in the report. The client and the server each do it for their own report.
    pub fn attach(
        &self,
        ext: &mut WirespeedExt,
        peer: Option<&ResultsExt>,
        receiver_bps: Option<f64>,
    ) {
        let Some(local) = self.end.clone() else {
            return;
        };
        let remote = match peer {
            Some(ResultsExt {
                observation_error: Some(e),
                ..
            }) => Err(e.as_str()),
            p => Ok(p.and_then(|p| p.observation.as_ref())),
        };
        let test = TestObservation::combine(local, remote, peer.is_some());
        ext.verdict = Some(verdict(&test, receiver_bps.map(BitsPerSecond)));
        ext.observation = Some(test);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::CpuSet;

    #[test]
    fn roles_by_direction_and_end() {
        assert_eq!(role(Direction::ClientToServer, true), Role::Sender);
        assert_eq!(role(Direction::ClientToServer, false), Role::Receiver);
        assert_eq!(role(Direction::ServerToClient, true), Role::Receiver);
        assert_eq!(role(Direction::ServerToClient, false), Role::Sender);
        assert_eq!(role(Direction::Both, false), Role::Both);
    }

    #[test]
    fn workers_and_tcp_limits_convert() {
        let w = worker_runs(&[WorkerInfo {
            cpu_requested: Some(3),
            cpus_seen: CpuSet::from_cpus([3, 5]),
            streams: vec![1, 3],
        }]);
        assert_eq!(w[0].cpus_seen.to_string(), "3,5");
        assert_eq!(w[0].streams, vec![1, 3]);
        assert_eq!(tcp_limits(&[]), None);
    }

    #[test]
    fn observer_on_this_host_closes_with_workers() {
        let mut o = TestObserver::start(
            Direction::ClientToServer,
            true,
            "127.0.0.1".parse().unwrap(),
            None,
        );
        o.tick(0.0, 1.0);
        o.close(&[], None);
        let e = o.end().expect("observation of this host");
        assert_eq!(e.role, Role::Sender);
        assert_eq!(e.iface.as_deref(), Some("lo"));
        assert_eq!(e.intervals.len(), 1);
        let mut ext = WirespeedExt::default();
        o.attach(&mut ext, None, Some(1e9));
        let obs = ext.observation.unwrap();
        assert!(obs.remote_absent.unwrap().contains("iperf3"));
        assert!(!ext.verdict.unwrap().line.is_empty());
    }
}
