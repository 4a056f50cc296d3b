//! What the measuring commands share (client, server, sweeps, latency, agent): the ranges of
//! the values a user sets, the small files they name, and the live host's observation. Here,
//! below each of them, so none imports another for it.

use wirespeed_doctor::target::{self, Ask, Command, Host, HostTarget};
use wirespeed_drive::hooks::HostObserve;
use wirespeed_engine::ObserveHook;
use wirespeed_host::{HostFacts, Root};
use wirespeed_model::units;

use crate::exit;

/// The headings `client --help` and `server --help` group their options under (also the iperf3
/// drop-in forms `-c HOST --help` and `-s --help`): every visible option sits under one.
pub mod heading {
    /// Where to connect or listen, addresses, interfaces, timeouts of the connections.
    pub const CONNECTION: &str = "Connection";
    /// What the test sends: iperf3's test flags.
    pub const TEST: &str = "Test (iperf3 flags)";
    /// Which CPUs the workers (and the NIC's IRQs) use.
    pub const PLACEMENT: &str = "Placement";
    /// Where the work ran, repeated runs, the cost projection.
    pub const OBSERVATION: &str = "Observation";
    /// What is printed or written, and where.
    pub const OUTPUT: &str = "Output";
    /// Authentication and who may connect.
    pub const SECURITY: &str = "Security";
    /// What a server allows one test, one address and all tests together.
    pub const LIMITS: &str = "Limits";
    /// A server's IRQ moves for its clients.
    pub const TUNING: &str = "Tuning";
}

/// The ranges of the limits and timeouts a user sets (checked when the command line is read,
/// so that no later `Duration` or sum built from them can overflow). iperf3's ranges where
/// iperf3 has the option.
pub mod limit {
    /// One day in milliseconds: iperf3's bound for its timeouts (`MAX_TIME` × 1000).
    pub const DAY_MS: u64 = 86_400_000;
    /// One day in seconds: iperf3's longest test.
    pub const DAY_S: u64 = 86_400;
    /// Stream and connection counts: what the test parameters allow (2^20).
    pub const COUNT: u64 = 1 << 20;

    /// A whole number in `LO..=HI` (`--handshake-timeout`: `u64_in::<1, 3600>`).
    pub fn u64_in<const LO: u64, const HI: u64>(s: &str) -> Result<u64, String> {
        s.trim()
            .parse::<u64>()
            .ok()
            .filter(|v| (LO..=HI).contains(v))
            .ok_or_else(|| format!("a whole number from {LO} to {HI}"))
    }

    /// [`u64_in`] for a `u32`.
    pub fn u32_in<const LO: u64, const HI: u64>(s: &str) -> Result<u32, String> {
        u64_in::<LO, HI>(s).map(|v| v as u32)
    }

    /// [`u64_in`] for a `usize`.
    pub fn usize_in<const LO: u64, const HI: u64>(s: &str) -> Result<usize, String> {
        u64_in::<LO, HI>(s).map(|v| v as usize)
    }
}

/// `--rate` in every command that takes it (`doctor`, `tune`, `model`, `lab up`, the client's
/// cost projection): one reading, a bare number is Mbit/s ([`units::Rate::parse`]).
pub fn rate(s: &str) -> Result<units::Rate, String> {
    units::Rate::parse(s, "--rate").map_err(|e| e.why().to_string())
}

/// A CPU list (`6-11`, `0,2,4`; not empty) in every command that takes one.
pub fn cpu_list(s: &str) -> Result<wirespeed_host::CpuSet, String> {
    wirespeed_host::CpuSet::parse_nonempty(s).map_err(|e| e.to_string())
}

/// `--rtt MS` in every command that takes it: one bound ([`units::parse_rtt_ms`]).
pub fn rtt(s: &str) -> Result<f64, String> {
    units::parse_rtt_ms(s, "--rtt").map_err(|e| e.why().to_string())
}

/// The host target of `command`, resolved once ([`wirespeed_doctor::target::resolve`]) from
/// what the command line asked and the host read through `root` (`None`: `model`, `lab up`):
/// its facts, and on the live host the CPUs this process may run on (its cgroup's cpuset and
/// affinity; a captured tree's are not this process's). A refusal exits with the usage code,
/// CPUs the host lacks with the host code.
pub(crate) fn resolve_target(
    command: Command,
    host: Option<(&Root, &HostFacts)>,
    ask: &Ask,
) -> anyhow::Result<HostTarget> {
    let allowed = host
        .filter(|(root, _)| root.is_live())
        .and_then(|(root, _)| wirespeed_host::cgroup::allowed_cpus(root, "self"));
    let host = host.map(|(_, facts)| Host {
        facts,
        allowed: allowed.as_ref(),
    });
    target::resolve(command, host, ask).map_err(|e| {
        let code = if e.is_host() { exit::HOST } else { exit::USAGE };
        exit::fail(code, e.to_string())
    })
}

/// A file the user named, read whole (keys and lists are small; a huge file is refused).
pub(crate) fn read_small(path: &std::path::Path, flag: &str) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path)
        .map_err(|e| exit::fail(exit::IO, format!("{flag} {}: {e}", path.display())))?;
    let mut v = Vec::new();
    f.take(1 << 20)
        .read_to_end(&mut v)
        .map_err(|e| exit::fail(exit::IO, format!("{flag} {}: {e}", path.display())))?;
    if v.len() >= 1 << 20 {
        return Err(exit::fail(
            exit::IO,
            format!("{flag} {}: larger than 1 MiB", path.display()),
        ));
    }
    Ok(v)
}

pub(crate) fn read_psk(path: &std::path::Path) -> anyhow::Result<wirespeed_protocol::psk::Psk> {
    let bytes = read_small(path, "--psk")?;
    wirespeed_protocol::psk::Psk::from_file_contents(&bytes)
        .map_err(|e| exit::fail(exit::USAGE, format!("--psk {}: {e}", path.display())))
}

/// Observation of this host (`/proc` and `/sys` of the live system), for every test either end
/// runs.
pub fn live_observer() -> ObserveHook {
    ObserveHook::new(HostObserve::new(Root::live()))
}
