//! Where the work ran (issue 6), wired into both runners through the [`crate::hooks::Observe`]
//! hook of their configuration (no hook: no observation).
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
use wirespeed_model::observation::{BitsPerSecond, EndObservation, Role, TcpLimits, WorkerRun};
use wirespeed_model::{TestObservation, Worker};
use wirespeed_protocol::{Direction, ResultsExt};
use wirespeed_report::WirespeedExt;

use crate::hooks::{EndObserver, ObserveHook};

/// The role of one end for a direction.
pub fn role(direction: Direction, client: bool) -> Role {
    match (direction, client) {
        (Direction::Both, _) => Role::Both,
        (Direction::ClientToServer, true) | (Direction::ServerToClient, false) => Role::Sender,
        _ => Role::Receiver,
    }
}

/// The workers (as `assemble::worker_infos` lists them) as the observation records them.
pub fn worker_runs(workers: &[Worker]) -> Vec<WorkerRun> {
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
#[derive(Default)]
pub struct TestObserver {
    hook: Option<ObserveHook>,
    running: Option<Box<dyn EndObserver>>,
    end: Option<EndObservation>,
}

impl std::fmt::Debug for TestObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestObserver")
            .field("running", &self.running.is_some())
            .field("end", &self.end)
            .finish()
    }
}

impl TestObserver {
    /// Start observing (first snapshot) through `hook`, when there is one. `peer` finds the NIC
    /// through the route to it.
    pub fn start(
        hook: Option<&ObserveHook>,
        direction: Direction,
        client: bool,
        peer: IpAddr,
        local: Option<IpAddr>,
    ) -> Self {
        TestObserver {
            hook: hook.cloned(),
            running: hook.and_then(|h| h.0.start(role(direction, client), peer, local)),
            end: None,
        }
    }

    /// An interval tick.
    pub fn tick(&mut self, start: f64, end: f64) {
        if let Some(o) = &mut self.running {
            o.tick(start, end);
        }
    }

    /// The final tick: close the totals with the workers and the senders' limits.
    pub fn close(&mut self, workers: &[Worker], tcp: Option<TcpLimits>) {
        if let Some(o) = self.running.take() {
            self.end = o.close(&worker_runs(workers), tcp);
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
        let (Some(local), Some(hook)) = (self.end.clone(), &self.hook) else {
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
        ext.verdict = Some(hook.0.verdict(&test, receiver_bps.map(BitsPerSecond)));
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
        let w = worker_runs(&[Worker {
            cpu_requested: Some(3),
            cpus_seen: CpuSet::from_cpus([3, 5]),
            streams: vec![1, 3],
        }]);
        assert_eq!(w[0].cpus_seen.to_string(), "3,5");
        assert_eq!(w[0].streams, vec![1, 3]);
        assert_eq!(tcp_limits(&[]), None);
    }

    struct FakeObserve;
    struct FakeEnd(Role, Vec<(f64, f64)>);

    impl crate::hooks::Observe for FakeObserve {
        fn start(
            &self,
            role: Role,
            _peer: IpAddr,
            _local: Option<IpAddr>,
        ) -> Option<Box<dyn EndObserver>> {
            Some(Box::new(FakeEnd(role, Vec::new())))
        }
        fn verdict(
            &self,
            test: &TestObservation,
            receiver: Option<BitsPerSecond>,
        ) -> wirespeed_model::Verdict {
            wirespeed_model::Verdict {
                id: "fake".into(),
                end: None,
                line: format!(
                    "{} intervals at {:?}",
                    test.local.intervals.len(),
                    receiver.map(|b| b.0)
                ),
                also: vec![],
            }
        }
    }

    impl EndObserver for FakeEnd {
        fn tick(&mut self, start: f64, end: f64) {
            self.1.push((start, end));
        }
        fn close(
            self: Box<Self>,
            workers: &[WorkerRun],
            tcp: Option<TcpLimits>,
        ) -> Option<EndObservation> {
            Some(EndObservation {
                role: self.0,
                host: None,
                iface: Some("lo".into()),
                iface_mtu: None,
                iface_speed_mbps: None,
                nic_numa_node: None,
                nic_irqs: vec![],
                topology: Default::default(),
                intervals: self
                    .1
                    .iter()
                    .map(
                        |&(s, e)| wirespeed_model::observation::IntervalObservation {
                            start: Some(s),
                            end: Some(e),
                            ..Default::default()
                        },
                    )
                    .collect(),
                total: wirespeed_model::observation::IntervalObservation {
                    workers: workers.to_vec(),
                    tcp,
                    ..Default::default()
                },
                notes: vec![],
            })
        }
    }

    #[test]
    fn the_hook_sees_ticks_and_close_and_decides_the_verdict() {
        let hook = ObserveHook::new(FakeObserve);
        let mut o = TestObserver::start(
            Some(&hook),
            Direction::ClientToServer,
            true,
            "127.0.0.1".parse().unwrap(),
            None,
        );
        o.tick(0.0, 1.0);
        o.tick(1.0, 2.0);
        let workers = [Worker {
            cpu_requested: Some(2),
            cpus_seen: CpuSet::from_cpus([2]),
            streams: vec![1],
        }];
        o.close(&workers, None);
        o.close(&[], None);
        let e = o.end().expect("closed once");
        assert_eq!(e.role, Role::Sender);
        assert_eq!(e.intervals.len(), 2);
        assert_eq!(e.total.workers[0].cpus_seen, CpuSet::from_cpus([2]));
        let mut ext = WirespeedExt::default();
        o.attach(&mut ext, None, Some(1e9));
        let obs = ext.observation.unwrap();
        assert!(obs.remote_absent.unwrap().contains("iperf3"));
        assert_eq!(
            ext.verdict.unwrap().line,
            "2 intervals at Some(1000000000.0)"
        );
        // A peer whose observation did not parse: said so, the local end still counts.
        let peer = ResultsExt {
            observation_error: Some("bad role".into()),
            ..ResultsExt::default()
        };
        let mut ext = WirespeedExt::default();
        o.attach(&mut ext, Some(&peer), None);
        assert!(ext
            .observation
            .unwrap()
            .remote_absent
            .unwrap()
            .contains("does not parse: bad role"));
    }

    #[test]
    fn without_a_hook_nothing_is_observed() {
        let mut o = TestObserver::start(
            None,
            Direction::ServerToClient,
            false,
            "127.0.0.1".parse().unwrap(),
            None,
        );
        o.tick(0.0, 1.0);
        o.close(&[], None);
        assert!(o.end().is_none());
        let mut ext = WirespeedExt::default();
        o.attach(&mut ext, None, None);
        assert!(ext.observation.is_none() && ext.verdict.is_none());
    }
}
