//! CPU utilisation of one test, as iperf3 reports it: (user + system CPU time) / wall time,
//! in percent of one CPU. wirespeed counts the threads of the test (its control thread and
//! its workers), so concurrent tests in one server process do not see each other's load.

use std::time::{Duration, Instant};

use wirespeed_datapath::sys::thread_cpu_times;

/// Started on the test's control thread.
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    wall: Instant,
    user: Duration,
    system: Duration,
}

/// Percentages: total, user, system.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuPercent {
    pub total: f64,
    pub user: f64,
    pub system: f64,
}

impl CpuMeter {
    pub fn start() -> CpuMeter {
        let (user, system) = thread_cpu_times();
        CpuMeter {
            wall: Instant::now(),
            user,
            system,
        }
    }

    /// Finish on the same thread, adding the workers' CPU time.
    pub fn finish(&self, workers: (Duration, Duration)) -> CpuPercent {
        let (u, s) = thread_cpu_times();
        let wall = self.wall.elapsed().as_secs_f64();
        if wall <= 0.0 {
            return CpuPercent::default();
        }
        let user = (u.saturating_sub(self.user) + workers.0).as_secs_f64();
        let system = (s.saturating_sub(self.system) + workers.1).as_secs_f64();
        CpuPercent {
            total: 100.0 * (user + system) / wall,
            user: 100.0 * user / wall,
            system: 100.0 * system / wall,
        }
    }
}
