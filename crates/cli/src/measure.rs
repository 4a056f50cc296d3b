//! `client` and `server`: the measuring engine's command line.
//!
//! iperf3's flags mean what they mean in iperf3 (sizes take K/M/G suffixes, powers of 1024;
//! `--connect-timeout` is in milliseconds). `wirespeed -s ...` and `wirespeed -c HOST ...`
//! are rewritten to the subcommands, so iperf3 command lines work unchanged.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wirespeed_datapath::SendPath;
use wirespeed_drive::hooks::IrqTune;
use wirespeed_engine::output::SharedWriter;
use wirespeed_engine::targets::{split_dev, DEFAULT_HOST, DEFAULT_PORT};
use wirespeed_engine::tune::TuneConfig;
use wirespeed_engine::{
    ClientConfig, Family, Format, Limits, Reporter, Server, ServerConfig, StandardReporter,
};

use crate::common::{limit, live_observer, read_psk, read_small};
use wirespeed_doctor::target::{Ask, Command as TargetCommand, HostTarget, RouteTo};
use wirespeed_host::{CpuSet, Root};
use wirespeed_protocol::Direction;
use wirespeed_report::text::TextOptions;
use wirespeed_report::units::UnitFormat;

use crate::exit::{self, engine_fail};
use wirespeed_engine::values::{
    affinity, bind_addr, bitrate_limit, interval_secs, memory_budget, rate, rate_burst, send_path,
    size, Affinity,
};

/// `--ipv6-prefix-shares`: `LEN:PEERS,...` or `none`, as one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixShares(pub Vec<wirespeed_guard::PrefixShare>);

fn prefix_shares(s: &str) -> Result<PrefixShares, String> {
    wirespeed_guard::PrefixShare::parse_list(s)
        .map(PrefixShares)
        .map_err(|e| e.to_string())
}

pub use crate::common::heading;

/// A CPU list argument (`6-11`, `0,2,4`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub CpuSet);

fn client_auth(a: &ClientArgs) -> anyhow::Result<Option<wirespeed_protocol::auth::ClientAuth>> {
    rsa_client_auth(
        a.username.as_deref(),
        a.rsa_public_key_path.as_deref(),
        a.use_pkcs1_padding,
        "--",
    )
}

/// iperf3's RSA credentials of a client: the user, the server's public key (PEM) and the
/// password from IPERF3_PASSWORD. `flags` prefixes the flag names in messages (`--` or
/// `--probe.`).
pub(crate) fn rsa_client_auth(
    user: Option<&str>,
    path: Option<&std::path::Path>,
    pkcs1: bool,
    flags: &str,
) -> anyhow::Result<Option<wirespeed_protocol::auth::ClientAuth>> {
    use wirespeed_protocol::auth;
    let (Some(user), Some(path)) = (user, path) else {
        return Ok(None);
    };
    let flag = format!("{flags}rsa-public-key-path");
    let pem = String::from_utf8_lossy(&read_small(path, &flag)?).into_owned();
    // iperf3 reads IPERF3_PASSWORD, else prompts; wirespeed never prompts.
    let password = std::env::var("IPERF3_PASSWORD").map_err(|_| {
        exit::fail(
            exit::USAGE,
            format!(
                "{flags}username: set the password in the environment variable IPERF3_PASSWORD \
                 (wirespeed does not prompt for it)"
            ),
        )
    })?;
    auth::ClientAuth::new(user, password, &pem, pkcs1)
        .map(Some)
        .map_err(|e| exit::fail(exit::USAGE, format!("{flag} {}: {e}", path.display())))
}

fn cpu_list(s: &str) -> Result<CpuList, String> {
    crate::common::cpu_list(s).map(CpuList)
}

fn unit_format(s: &str) -> Result<UnitFormat, String> {
    UnitFormat::parse(s).map_err(|e| e.to_string())
}

/// Output flags shared by client and server.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output in JSON (iperf3's -J shape).
    #[arg(help_heading = heading::OUTPUT, short = 'J', long = "json")]
    pub json: bool,
    /// Output one JSON object per line as events happen (with -J too, as iperf3).
    #[arg(help_heading = heading::OUTPUT, long = "json-stream")]
    pub json_stream: bool,
    /// Write output to this file instead of stdout (appended).
    #[arg(help_heading = heading::OUTPUT, long = "logfile", value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// Bitrate unit: k/m/g/t (bits), K/M/G/T (bytes), a = adaptive.
    #[arg(help_heading = heading::OUTPUT, short = 'f', long = "format", value_parser = unit_format)]
    pub format: Option<UnitFormat>,
    /// More detail (test parameters, CPU utilisation, where the work ran as full tables).
    #[arg(help_heading = heading::OUTPUT, short = 'V', long = "verbose")]
    pub verbose: bool,
    /// Where the work ran as full per-CPU tables for each end (default: one line per end).
    #[arg(help_heading = heading::OBSERVATION, long = "where")]
    pub where_tables: bool,
    /// Seconds between interval reports (0 = none).
    #[arg(help_heading = heading::OUTPUT, short = 'i', long = "interval", value_parser = interval_secs, default_value = "1")]
    pub interval: f64,
    #[command(flatten)]
    pub iperf3: crate::iperf3::CommonArgs,
}

impl OutputArgs {
    fn format(&self) -> Format {
        if self.json_stream {
            Format::JsonStream
        } else if self.json {
            Format::Json
        } else {
            Format::Text
        }
    }

    fn text_options(&self) -> TextOptions {
        TextOptions {
            format: self.format.unwrap_or(UnitFormat::AdaptiveBits),
            verbose: self.verbose,
            done_line: true,
            where_tables: self.where_tables,
        }
    }

    /// Where the report goes: --logfile, else stdout, else (`--csv -` holds stdout) stderr.
    fn writer(&self, csv: Option<&crate::pictures::CsvFileArg>) -> anyhow::Result<SharedWriter> {
        let csv_stdout = csv.is_some_and(|c| c.to_stdout());
        let w: Box<dyn Write + Send> = match &self.logfile {
            Some(p) => Box::new(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| exit::fail(exit::IO, format!("--logfile {}: {e}", p.display())))?,
            ),
            None if csv_stdout => Box::new(std::io::stderr()),
            None => Box::new(std::io::stdout()),
        };
        let c = &self.iperf3;
        let w: Box<dyn Write + Send> =
            if self.format() == Format::Text && c.timestamps.is_some() || c.forceflush {
                let stamps = (self.format() == Format::Text)
                    .then(|| c.timestamps.clone())
                    .flatten();
                Box::new(crate::iperf3::Decorated::new(w, stamps, c.forceflush))
            } else {
                w
            };
        Ok(Arc::new(Mutex::new(w)))
    }
}

#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    /// Server host name or address (not with --loopback); several (`h1,h2`) run one test
    /// per host at once and sum them.
    #[arg(required_unless_present = "loopback")]
    pub host: Option<String>,
    /// Start a server inside this process on 127.0.0.1 and test against it.
    #[arg(help_heading = heading::CONNECTION, long, conflicts_with = "host")]
    pub loopback: bool,
    /// Server port; several (`-p 5201,5202`) run one test per port at once and sum them.
    #[arg(help_heading = heading::CONNECTION,
        short = 'p',
        long = "port",
        value_delimiter = ',',
        default_values_t = [DEFAULT_PORT]
    )]
    pub port: Vec<u16>,
    /// Seconds to transmit.
    #[arg(help_heading = heading::TEST, short = 't', long = "time", default_value_t = 10)]
    pub time: u32,
    /// Bytes to transmit instead of a time (K/M/G).
    #[arg(help_heading = heading::TEST, short = 'n', long = "bytes", value_parser = size, conflicts_with = "blockcount")]
    pub bytes: Option<u64>,
    /// Blocks to transmit instead of a time (K/M/G).
    #[arg(help_heading = heading::TEST, short = 'k', long = "blockcount", value_parser = size)]
    pub blockcount: Option<u64>,
    /// Parallel streams (per direction).
    #[arg(help_heading = heading::TEST, short = 'P', long = "parallel", default_value_t = 1,
          value_parser = limit::u32_in::<1, { wirespeed_engine::client::MAX_STREAMS as u64 }>)]
    pub parallel: u32,
    /// Reverse: the server sends.
    #[arg(help_heading = heading::TEST, short = 'R', long = "reverse", conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(help_heading = heading::TEST, long = "bidir")]
    pub bidir: bool,
    /// Block size (K/M/G), default 128K: what a TCP sender writes per call (a receiver reads up
    /// to the larger of it and 1 MiB), or a UDP datagram.
    #[arg(help_heading = heading::TEST, short = 'l', long = "length", value_parser = size)]
    pub length: Option<u64>,
    /// Socket buffer size (K/M/G).
    #[arg(help_heading = heading::TEST, short = 'w', long = "window", value_parser = size)]
    pub window: Option<u64>,
    /// TCP maximum segment size.
    #[arg(help_heading = heading::TEST, short = 'M', long = "set-mss")]
    pub mss: Option<u32>,
    /// TCP_NODELAY.
    #[arg(help_heading = heading::TEST, short = 'N', long = "no-delay")]
    pub nodelay: bool,
    /// TCP congestion control algorithm.
    #[arg(help_heading = heading::TEST, short = 'C', long = "congestion", alias = "linux-congestion")]
    pub congestion: Option<String>,
    /// Seconds at the start not counted.
    #[arg(help_heading = heading::TEST, short = 'O', long = "omit", default_value_t = 0)]
    pub omit: u32,
    /// CPU affinity: N (client) or N,M (client, server) or ,M.
    #[arg(help_heading = heading::PLACEMENT, short = 'A', long = "affinity", value_parser = affinity)]
    pub affinity: Option<Affinity>,
    /// Zero-copy send: -Z is sendfile; --zerocopy=splice|msg_zerocopy|sendfile|copy.
    #[arg(help_heading = heading::TEST, short = 'Z', long = "zerocopy", num_args = 0..=1, require_equals = true,
          default_missing_value = "sendfile", value_parser = send_path)]
    pub zerocopy: Option<SendPath>,
    /// Receive with MSG_TRUNC (the kernel discards the data without copying it out).
    #[arg(help_heading = heading::TEST, long = "skip-rx-copy")]
    pub skip_rx_copy: bool,
    /// Zero-copy receive (TCP_ZEROCOPY_RECEIVE): whichever end receives maps whole pages of
    /// the data and copies the rest; falls back to copying where nothing maps (needs a NIC
    /// that splits headers; on loopback, a -Z=msg_zerocopy sender). A wirespeed peer only.
    #[arg(help_heading = heading::TEST, long = "zerocopy-rx", conflicts_with = "skip_rx_copy")]
    pub zerocopy_rx: bool,
    /// Milliseconds without data before a test this end receives (-R, --bidir) is ended:
    /// "idle timeout for receiving data" (iperf3's --rcv-timeout; default 120000).
    #[arg(help_heading = heading::CONNECTION, long = "rcv-timeout", value_name = "MS", value_parser = limit::u64_in::<100, { limit::DAY_MS }>)]
    pub rcv_timeout: Option<u64>,
    /// IPv4 only.
    #[arg(help_heading = heading::CONNECTION, short = '4', long = "version4", conflicts_with = "v6")]
    pub v4: bool,
    /// IPv6 only.
    #[arg(help_heading = heading::CONNECTION, short = '6', long = "version6")]
    pub v6: bool,
    /// Milliseconds to wait for the control connection.
    #[arg(help_heading = heading::CONNECTION, long = "connect-timeout", value_name = "MS", value_parser = limit::u64_in::<1, { limit::DAY_MS }>)]
    pub connect_timeout: Option<u64>,
    /// Fixed source port of the data connections (stream k uses PORT+k).
    #[arg(help_heading = heading::CONNECTION, long = "cport")]
    pub cport: Option<u16>,
    /// Local address to bind; `ADDR%DEV` also binds to the interface DEV (as --bind-dev).
    #[arg(help_heading = heading::CONNECTION, short = 'B', long = "bind", value_parser = bind_addr, value_name = "ADDR[%DEV]")]
    pub bind: Option<(IpAddr, Option<String>)>,
    /// One pinned worker per CPU on this end; streams spread round-robin (e.g. 6-11).
    #[arg(help_heading = heading::PLACEMENT, long = "cpus", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    /// One pinned worker per CPU on the server (wirespeed servers).
    #[arg(help_heading = heading::PLACEMENT, long = "server-cpus", value_parser = cpu_list)]
    pub server_cpus: Option<CpuList>,
    /// Run the test N times, then min / median / max / spread and the modes with the placement
    /// each mode's runs share (docs/explain.md).
    #[arg(help_heading = heading::OBSERVATION, long, value_name = "N", value_parser = limit::u32_in::<1, 1000>)]
    pub repeat: Option<u32>,
    /// The link rate the cost projection is for (100G, 400Gbit; a bare number is Mbit/s): the
    /// cores it would need at this test's cost per bit. Without it, a real interface's speed.
    #[arg(help_heading = heading::OBSERVATION, long = "rate", value_name = "RATE", value_parser = crate::common::rate)]
    pub rate: Option<wirespeed_model::units::Rate>,
    /// Ask the server to move its NIC's queue IRQs to these CPUs (in turn) for this test and
    /// back after it (a wirespeed server started with --allow-tune --psk; needs --psk).
    #[arg(help_heading = heading::PLACEMENT, long = "server-irq-cpus", value_parser = cpu_list, value_name = "LIST")]
    pub server_irq_cpus: Option<CpuList>,
    /// Prefix for the output (iperf3 -T).
    #[arg(help_heading = heading::OUTPUT, short = 'T', long = "title")]
    pub title: Option<String>,
    /// Data string included in the JSON output.
    #[arg(help_heading = heading::OUTPUT, long = "extra-data")]
    pub extra_data: Option<String>,
    /// Ask for the server's output in the results.
    #[arg(help_heading = heading::OUTPUT, long = "get-server-output")]
    pub get_server_output: bool,
    /// UDP instead of TCP.
    #[arg(help_heading = heading::TEST, short = 'u', long = "udp")]
    pub udp: bool,
    /// iperf3's RSA authentication: the user name (the password from IPERF3_PASSWORD).
    #[arg(help_heading = heading::SECURITY, long = "username", requires = "rsa_public_key_path")]
    pub username: Option<String>,
    /// iperf3's RSA authentication: the server's public key (PEM).
    #[arg(help_heading = heading::SECURITY,
        long = "rsa-public-key-path",
        value_name = "FILE",
        requires = "username"
    )]
    pub rsa_public_key_path: Option<PathBuf>,
    /// Encrypt the token with PKCS#1 v1.5 instead of OAEP (iperf3 servers up to 3.16).
    #[arg(help_heading = heading::SECURITY, long = "use-pkcs1-padding")]
    pub use_pkcs1_padding: bool,
    /// A pre-shared key file, the same as the wirespeed server's --psk.
    #[arg(help_heading = heading::SECURITY, long = "psk", value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// Target bits/s per stream (K/M/G = 10^3/6/9); UDP default 1M, 0 = unlimited.
    /// With TCP the kernel paces each stream (SO_MAX_PACING_RATE).
    /// `/BURST` after the rate sends BURST packets back to back per pacing tick (iperf3's burst
    /// mode; passed to an iperf3 sender).
    #[arg(help_heading = heading::TEST, short = 'b', long = "bitrate", alias = "bandwidth", value_parser = rate_burst,
          value_name = "RATE[/BURST]")]
    pub bitrate: Option<(u64, Option<u32>)>,
    /// Per-stream pacing rate in bits/s set with SO_MAX_PACING_RATE.
    #[arg(help_heading = heading::TEST, long = "fq-rate", value_parser = rate)]
    pub fq_rate: Option<u64>,
    /// 64-bit UDP sequence numbers (both ends must support them).
    #[arg(help_heading = heading::TEST, long = "udp-counters-64bit")]
    pub udp_counters_64bit: bool,
    /// IP type of service byte for the data (0-255; 52, 064 and 0x34 are the same); the
    /// server sets it on its data sockets too.
    #[arg(help_heading = heading::TEST, short = 'S', long = "tos", value_parser = wirespeed_engine::extras::tos, value_name = "N")]
    pub tos: Option<u32>,
    /// DSCP for the data: 0-63 or a name (ef, af11..af43, cs0..cs7, le, va); sets the TOS.
    #[arg(help_heading = heading::TEST, long = "dscp", value_parser = wirespeed_engine::extras::dscp_tos, conflicts_with = "tos",
          value_name = "N|NAME")]
    pub dscp: Option<u32>,
    /// Bind every socket to this network interface (SO_BINDTODEVICE); also `-B ADDR%DEV`
    /// and `HOST%DEV`.
    #[arg(help_heading = heading::CONNECTION, long = "bind-dev", value_name = "IFACE")]
    pub bind_dev: Option<String>,
    /// IPv6 flow label (1-0xfffff) of the TCP data connections.
    #[arg(help_heading = heading::TEST, short = 'L', long = "flowlabel", value_parser = wirespeed_engine::extras::flowlabel, value_name = "N")]
    pub flowlabel: Option<u32>,
    /// Set the IPv4 don't-fragment bit on UDP data (the server sets it on its side too).
    #[arg(help_heading = heading::TEST, long = "dont-fragment")]
    pub dont_fragment: bool,
    /// Milliseconds sent data may stay unacknowledged before the connection is dropped
    /// (TCP_USER_TIMEOUT on the data connections).
    #[arg(help_heading = heading::CONNECTION, long = "snd-timeout", value_name = "MS", value_parser = limit::u64_in::<0, { limit::DAY_MS }>)]
    pub snd_timeout: Option<u64>,
    /// TCP keepalive on the control connection: `--cntl-ka` or `--cntl-ka=IDLE/INTERVAL/COUNT`
    /// (seconds, seconds, probes; each part optional).
    #[arg(help_heading = heading::CONNECTION, long = "cntl-ka", value_name = "IDLE/INTERVAL/COUNT", num_args = 0..=1,
          require_equals = true, default_missing_value = "", value_parser = wirespeed_engine::extras::keepalive)]
    pub cntl_ka: Option<wirespeed_engine::Keepalive>,
    /// Pacing timer in microseconds asked of an iperf3 sender (deprecated in iperf3;
    /// wirespeed's own sender paces by its clock).
    #[arg(help_heading = heading::TEST, long = "pacing-timer", value_parser = size, value_name = "USECS")]
    pub pacing_timer: Option<u64>,
    /// Ask the sender for a repeating payload pattern instead of random bytes (iperf3 peers).
    #[arg(help_heading = heading::TEST, long = "repeating-payload")]
    pub repeating_payload: bool,
    #[command(flatten)]
    pub sctp: crate::iperf3::SctpArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    /// A full-screen view refreshed every interval (throughput per stream and sum, this host's
    /// CPUs, NIC interrupts); q or Ctrl-C ends the test, then the usual summary.
    #[arg(help_heading = heading::OUTPUT, long, conflicts_with_all = ["json", "json_stream", "repeat", "logfile"])]
    pub live: bool,
    /// After the report, how the verdict was decided: every rule that fired with its evidence
    /// and strength, and why the verdict outranked the rest (`explain --why` on a saved -J).
    #[arg(help_heading = heading::OUTPUT, long, conflicts_with_all = ["json", "json_stream", "repeat"])]
    pub why: bool,
    #[command(flatten)]
    pub html: crate::pictures::HtmlArg,
    #[command(flatten)]
    pub csv: crate::pictures::CsvFileArg,
}

/// The server's limits, address lists, authentication and timeouts: the same flags, with
/// the same meanings, for `wirespeed server` and `wirespeed agent`'s test server.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerGuardArgs {
    /// Tests that may run at the same time.
    #[arg(help_heading = heading::LIMITS, long = "max-tests", default_value_t = 64, value_parser = limit::usize_in::<1, { limit::COUNT }>)]
    pub max_tests: usize,
    /// Streams (-P) one test may ask for.
    #[arg(help_heading = heading::LIMITS, long = "max-streams", default_value_t = 4096, value_parser = limit::u32_in::<1, { limit::COUNT }>)]
    pub max_streams: u32,
    /// Longest test in seconds (-t plus -O; -n/-k tests are stopped at this age).
    #[arg(help_heading = heading::LIMITS,
        long = "max-duration",
        alias = "server-max-duration",
        default_value_t = 86_400,
        value_parser = limit::u64_in::<1, { 365 * limit::DAY_S }>
    )]
    pub max_duration: u64,
    /// Connections that have not sent their parameters yet, server-wide.
    #[arg(help_heading = heading::LIMITS, long = "max-pending", default_value_t = 256, value_parser = limit::usize_in::<1, { limit::COUNT }>)]
    pub max_pending: usize,
    /// Streams of all running tests together.
    #[arg(help_heading = heading::LIMITS, long = "max-total-streams", default_value_t = 1024, value_parser = limit::u32_in::<1, { limit::COUNT }>)]
    pub max_total_streams: u32,
    /// Per client address (IPv4 address, IPv6 /64): connections not yet admitted.
    #[arg(help_heading = heading::LIMITS, long = "max-pending-per-address", default_value_t = 8, value_parser = limit::u32_in::<1, { limit::COUNT }>)]
    pub max_pending_per_address: u32,
    /// Per client address: tests running at once.
    #[arg(help_heading = heading::LIMITS, long = "max-tests-per-address", default_value_t = 2, value_parser = limit::u32_in::<1, { limit::COUNT }>)]
    pub max_tests_per_address: u32,
    /// Per client address: streams of all its running tests.
    #[arg(help_heading = heading::LIMITS, long = "max-streams-per-address", default_value_t = 128, value_parser = limit::u32_in::<1, { limit::COUNT }>)]
    pub max_streams_per_address: u32,
    /// Data buffers (every worker's block and read buffer) all running tests may hold
    /// together (K/M/G). A test above its share (this divided by --max-tests, at least 8M)
    /// takes from half of it only; more than is free now is a busy server, more than any
    /// limit is iperf3's "block size too large".
    #[arg(help_heading = heading::LIMITS, long = "max-memory", value_name = "SIZE", default_value = "128M", value_parser = memory_budget)]
    pub max_memory: u64,
    /// Per client address: data buffers of all its running tests (K/M/G).
    #[arg(help_heading = heading::LIMITS, long = "max-memory-per-address", value_name = "SIZE", default_value = "64M", value_parser = memory_budget)]
    pub max_memory_per_address: u64,
    /// IPv6 prefixes whose /64s share their per-address limits: LEN:N lets all the /64s of
    /// one /LEN hold N addresses' worth together (`none`: each /64 on its own).
    #[arg(help_heading = heading::LIMITS, long = "ipv6-prefix-shares", value_name = "LEN:N,...", default_value = "56:4,48:8", value_parser = prefix_shares)]
    pub ipv6_prefix_shares: PrefixShares,
    /// Only these addresses or prefixes may connect (repeatable or comma-separated).
    #[arg(help_heading = heading::SECURITY, long = "allow", value_name = "CIDR")]
    pub allow: Vec<String>,
    /// These addresses or prefixes may not connect (wins over --allow).
    #[arg(help_heading = heading::SECURITY, long = "deny", value_name = "CIDR")]
    pub deny: Vec<String>,
    /// iperf3's RSA authentication: the server's private key (PEM, not passphrase-protected).
    #[arg(help_heading = heading::SECURITY,
        long = "rsa-private-key-path",
        value_name = "FILE",
        requires = "authorized_users_path"
    )]
    pub rsa_private_key_path: Option<PathBuf>,
    /// iperf3's RSA authentication: `user,sha256("{user}password")` lines.
    #[arg(help_heading = heading::SECURITY,
        long = "authorized-users-path",
        value_name = "FILE",
        requires = "rsa_private_key_path"
    )]
    pub authorized_users_path: Option<PathBuf>,
    /// Seconds a token's (or a PSK tag's) timestamp may be off the server's clock.
    #[arg(help_heading = heading::SECURITY, long = "time-skew-threshold", default_value_t = 10, value_parser = limit::u32_in::<0, { limit::DAY_S }>)]
    pub time_skew_threshold: u32,
    /// Accepted for iperf3's command line; the server accepts both paddings anyway.
    #[arg(help_heading = heading::SECURITY, long = "use-pkcs1-padding")]
    pub use_pkcs1_padding: bool,
    /// A pre-shared key file: only wirespeed clients with the same key may test.
    #[arg(help_heading = heading::SECURITY, long = "psk", value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// Milliseconds a test may receive no data before it is ended (iperf3's --rcv-timeout).
    #[arg(help_heading = heading::LIMITS, long = "rcv-timeout", value_name = "MS", default_value_t = 120_000,
          value_parser = limit::u64_in::<100, { limit::DAY_MS }>)]
    pub rcv_timeout: u64,
    /// Seconds a running test may move no data and send no control message before it is
    /// ended; 0: never.
    #[arg(help_heading = heading::LIMITS, long = "idle-timeout", value_name = "SECS", default_value_t = 300,
          value_parser = limit::u64_in::<0, { limit::DAY_S }>)]
    pub idle_timeout: u64,
    /// A test above RATE bit/s averaged over SECS (default 5) is ended (K/M/G).
    #[arg(help_heading = heading::LIMITS, long = "server-bitrate-limit", value_name = "RATE[/SECS]", value_parser = bitrate_limit)]
    pub server_bitrate_limit: Option<(u64, u64)>,
    /// Seconds a new connection has to send its cookie, and a client each setup step.
    #[arg(help_heading = heading::LIMITS, long = "handshake-timeout", default_value_t = 10, value_parser = limit::u64_in::<1, 3600>)]
    pub handshake_timeout: u64,
}

impl ServerGuardArgs {
    /// `--allow-tune` without `--psk` is refused at start: a tune request changes the host, so
    /// the server takes it only with parameters verified by its pre-shared key.
    pub fn tune_needs_psk(&self, allow_tune: bool) -> anyhow::Result<()> {
        if allow_tune {
            wirespeed_protocol::psk::tune_needs_key(
                wirespeed_model::End::Server,
                self.psk.is_some(),
            )
            .map_err(|e| exit::fail(exit::USAGE, e.to_string()))?;
        }
        Ok(())
    }

    /// Check the flags and set their fields of `cfg`: the limits, the address lists, RSA
    /// authentication, the pre-shared key, and every timeout.
    pub fn apply(&self, cfg: &mut ServerConfig) -> anyhow::Result<()> {
        let a = self;
        // Every limit's range was checked when the command line was read (`limit`).
        cfg.addrs = wirespeed_guard::AddrPolicy::new(&a.allow, &a.deny)
            .map_err(|e| exit::fail(exit::USAGE, format!("--allow/--deny: {e}")))?;
        cfg.auth = match (&a.rsa_private_key_path, &a.authorized_users_path) {
            (Some(k), Some(u)) => {
                let key =
                    String::from_utf8_lossy(&read_small(k, "--rsa-private-key-path")?).into_owned();
                let users = String::from_utf8_lossy(&read_small(u, "--authorized-users-path")?)
                    .into_owned();
                let mut auth =
                    wirespeed_protocol::auth::ServerAuth::new(&key, &users).map_err(|e| {
                        exit::fail(
                            exit::USAGE,
                            format!("--rsa-private-key-path {}: {e}", k.display()),
                        )
                    })?;
                auth.skew_threshold = a.time_skew_threshold;
                Some(Arc::new(auth))
            }
            _ => None,
        };
        cfg.psk = a.psk.as_deref().map(read_psk).transpose()?;
        cfg.limits = Limits {
            max_tests: a.max_tests,
            max_streams: a.max_streams,
            max_duration: Duration::from_secs(a.max_duration),
            max_pending: a.max_pending,
            max_total_streams: a.max_total_streams,
            max_memory: a.max_memory,
            per_peer: wirespeed_guard::PeerLimits {
                pending: a.max_pending_per_address,
                tests: a.max_tests_per_address,
                streams: a.max_streams_per_address,
                memory: a.max_memory_per_address,
                ..Limits::default().per_peer
            },
            prefixes: a.ipv6_prefix_shares.0.clone(),
            ..cfg.limits.clone()
        };
        cfg.skew_threshold = a.time_skew_threshold;
        cfg.rcv_timeout = Duration::from_millis(a.rcv_timeout);
        cfg.idle_timeout = (a.idle_timeout > 0).then(|| Duration::from_secs(a.idle_timeout));
        cfg.bitrate_limit =
            a.server_bitrate_limit
                .map(|(bps, secs)| wirespeed_engine::server::BitrateLimit {
                    bits_per_second: bps,
                    window: Duration::from_secs(secs),
                });
        cfg.set_handshake_timeout(Duration::from_secs(a.handshake_timeout));
        Ok(())
    }
}

#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    /// Port to listen on.
    #[arg(help_heading = heading::CONNECTION, short = 'p', long = "port", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Local address to listen on; `ADDR%DEV` also binds to the interface DEV.
    #[arg(help_heading = heading::CONNECTION, short = 'B', long = "bind", value_parser = bind_addr, value_name = "ADDR[%DEV]")]
    pub bind: Option<(IpAddr, Option<String>)>,
    /// Accept tests only through this network interface (SO_BINDTODEVICE on the listener).
    #[arg(help_heading = heading::CONNECTION, long = "bind-dev", value_name = "IFACE")]
    pub bind_dev: Option<String>,
    /// TCP keepalive on every accepted connection (the control one included):
    /// `--cntl-ka` or `--cntl-ka=IDLE/INTERVAL/COUNT`.
    #[arg(help_heading = heading::CONNECTION, long = "cntl-ka", value_name = "IDLE/INTERVAL/COUNT", num_args = 0..=1,
          require_equals = true, default_missing_value = "", value_parser = wirespeed_engine::extras::keepalive)]
    pub cntl_ka: Option<wirespeed_engine::Keepalive>,
    /// Milliseconds sent data may stay unacknowledged (TCP_USER_TIMEOUT on the data
    /// connections).
    #[arg(help_heading = heading::CONNECTION, long = "snd-timeout", value_name = "MS", value_parser = limit::u64_in::<0, { limit::DAY_MS }>)]
    pub snd_timeout: Option<u64>,
    /// Serve one test, then exit.
    #[arg(help_heading = heading::CONNECTION, short = '1', long = "one-off")]
    pub one_off: bool,
    /// iperf3's daemon mode: not supported, run the shipped systemd unit (wirespeed.service).
    #[arg(short = 'D', long = "daemon", hide = true)]
    pub daemon: bool,
    /// IPv4 only.
    #[arg(help_heading = heading::CONNECTION, short = '4', long = "version4", conflicts_with = "v6")]
    pub v4: bool,
    /// IPv6 only.
    #[arg(help_heading = heading::CONNECTION, short = '6', long = "version6")]
    pub v6: bool,
    /// Pin every test's workers to this CPU (unless the client asks otherwise).
    #[arg(help_heading = heading::PLACEMENT, short = 'A', long = "affinity")]
    pub affinity: Option<u32>,
    /// One pinned worker per CPU for each test (unless the client asks otherwise).
    #[arg(help_heading = heading::PLACEMENT, long = "cpus", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    #[command(flatten)]
    pub guard: ServerGuardArgs,
    /// Let clients move this host's NIC queue IRQs for their test (`sweep --irq-cpus`
    /// without -R, `client --server-irq-cpus`), through tune's journal, reverted after each
    /// test. Needs root and --psk (only requests verified by the key are taken).
    #[arg(help_heading = heading::TUNING, long = "allow-tune")]
    pub allow_tune: bool,
    /// With --allow-tune: the interface whose IRQs move (default: the interface of the route
    /// to the client).
    #[arg(help_heading = heading::TUNING, long = "tune-iface", value_name = "IFACE", requires = "allow_tune")]
    pub tune_iface: Option<String>,
    /// With --allow-tune: the host state (IRQ files, journal) under DIR instead of /, e.g. a
    /// copy of a captured host (tests, dry runs).
    #[arg(help_heading = heading::TUNING, long = "root", value_name = "DIR", requires = "allow_tune")]
    pub root: Option<PathBuf>,
    /// Serve one JSON line per interval per test on this Unix socket (mode 0600) for
    /// `wirespeed top`; without PATH, top's default socket.
    #[arg(help_heading = heading::OUTPUT, long = "stats-socket", value_name = "PATH", num_args = 0..=1, require_equals = true,
          default_missing_value = "")]
    pub stats_socket: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

fn client_config(a: &ClientArgs) -> anyhow::Result<ClientConfig> {
    // The range (iperf3's, 100 ms to a day) was checked when the command line was read.
    let rcv_timeout = Some(a.rcv_timeout.map_or(
        wirespeed_engine::client::DEFAULT_RCV_TIMEOUT,
        Duration::from_millis,
    ));
    let to_u32 = |v: u64, flag: &str| {
        u32::try_from(v).map_err(|_| exit::fail(exit::USAGE, format!("{flag} {v}: too large")))
    };
    let direction = if a.bidir {
        Direction::Both
    } else if a.reverse {
        Direction::ServerToClient
    } else {
        Direction::ClientToServer
    };
    a.out.iperf3.refuse_unsupported()?;
    a.sctp.refuse()?;
    // `HOST%DEV` and `-B ADDR%DEV` bind to DEV, as --bind-dev DEV does.
    let (host, host_dev) = split_dev(a.host.as_deref().unwrap_or(DEFAULT_HOST));
    let (host, host_dev) = (host.to_string(), host_dev.map(String::from));
    let bind_dev = a
        .bind_dev
        .clone()
        .or(host_dev)
        .or(a.bind.as_ref().and_then(|b| b.1.clone()));
    let pacing_timer = a
        .pacing_timer
        .map(|t| {
            u32::try_from(t).ok().filter(|&t| t > 0).ok_or_else(|| {
                exit::fail(exit::USAGE, format!("--pacing-timer {t}: 1 to 2^32-1 µs"))
            })
        })
        .transpose()?;
    let extras = wirespeed_engine::Extras {
        tos: a.tos.or(a.dscp),
        bind_dev,
        dont_fragment: a.dont_fragment,
        snd_timeout: a.snd_timeout.map(Duration::from_millis),
        cntl_keepalive: a.cntl_ka,
        burst: a.bitrate.and_then(|b| b.1),
        pacing_timer,
        repeating_payload: a.repeating_payload,
        mptcp: a.out.iperf3.mptcp,
        flowlabel: a.flowlabel,
    };
    let cfg = ClientConfig {
        host,
        port: a.port.first().copied().unwrap_or(DEFAULT_PORT),
        family: Family::from_flags(a.v4, a.v6),
        bind: a.bind.as_ref().map(|b| b.0),
        cport: a.cport,
        connect_timeout: a.connect_timeout.map(Duration::from_millis),
        time: a.time,
        bytes: a.bytes,
        blocks: a.blockcount,
        parallel: a.parallel,
        direction,
        block_len: a.length.map(|l| to_u32(l, "-l")).transpose()?,
        window: a.window.map(|w| to_u32(w, "-w")).transpose()?,
        mss: a.mss,
        nodelay: a.nodelay,
        congestion: a.congestion.clone(),
        omit: a.omit,
        interval: Duration::from_secs_f64(a.out.interval),
        affinity: a.affinity.and_then(|x| x.client),
        server_affinity: a.affinity.and_then(|x| x.server),
        cpus: a.cpus.clone().map(|c| c.0),
        server_cpus: a.server_cpus.clone().map(|c| c.0),
        server_irq_cpus: a.server_irq_cpus.clone().map(|c| c.0),
        send_path: a.zerocopy.unwrap_or(SendPath::Copy),
        skip_rx_copy: a.skip_rx_copy,
        zerocopy_rx: a.zerocopy_rx,
        title: a.title.clone(),
        extra_data: a.extra_data.clone(),
        get_server_output: a.get_server_output,
        udp: a.udp,
        bandwidth: a.bitrate.map(|b| b.0),
        fq_rate: a.fq_rate,
        udp_counters_64bit: a.udp_counters_64bit,
        observe: Some(live_observer()),
        extras,
        auth: client_auth(a)?,
        psk: a.psk.as_deref().map(read_psk).transpose()?,
        rcv_timeout,
        rate_bps: a.rate.map(|r| r.bps() as f64),
        command: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        ..ClientConfig::default()
    };
    Ok(cfg)
}

/// The client's host target, resolved once ([`wirespeed_doctor::target::resolve`]) as every
/// command's is: the interface its test takes (the device it binds to, else the route to its
/// server; with one host and port), the rate `--rate` gave (the cost projection's; `-b` is
/// iperf3's sending rate, read as iperf3 reads it, not a target) and the CPUs `--cpus` or `-A`
/// named, checked on this host (online, allowed for this process) in every command's words.
/// Before the test, reads the route and, where CPUs are named, the online CPUs, the NUMA nodes
/// and what this process may use: a few files, nothing on the data path.
fn client_target(a: &ClientArgs, cfg: &ClientConfig, one: bool) -> anyhow::Result<HostTarget> {
    let root = Root::live();
    let facts = (cfg.cpus.is_some() || cfg.affinity.is_some())
        .then(|| wirespeed_host::HostFacts::of_cpus(wirespeed_host::cpu::collect_online(&root)));
    let dev = cfg.extras.bind_dev.as_deref();
    let host_dev = a.host.as_deref().and_then(|h| split_dev(h).1);
    let flag = [
        (a.bind_dev.is_some(), "--bind-dev"),
        (host_dev.is_some(), "HOST%DEV"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
    .unwrap_or("-B ADDR%DEV");
    let route = (dev.is_none() && one)
        .then(|| route_to(&root, cfg))
        .flatten();
    let client = CpuSet::from_cpus(cfg.affinity);
    let ask = Ask {
        rate: a.rate,
        route,
        ..Ask::default()
    }
    .with_iface(flag, dev)
    .with_cpus("--cpus", cfg.cpus.as_ref())
    .with_cpus("-A", cfg.affinity.is_some().then_some(&client));
    let host = facts.as_ref().map(|f| (&root, f));
    crate::common::resolve_target(TargetCommand::Client, host, &ask)
}

/// The interface the route to the client's server takes (the first address the engine would
/// connect to; the address `-B` binds to where no route says), and that address.
fn route_to(root: &Root, cfg: &ClientConfig) -> Option<RouteTo> {
    let peer = wirespeed_engine::net::resolve(&cfg.host, cfg.port, cfg.family).ok()?;
    let peer = peer.first()?.ip();
    let iface = wirespeed_observe::route::iface_for_peer(root, peer, cfg.bind)?;
    Some(RouteTo { iface, peer })
}

/// The target's line at the top of the human report (wirespeed's text, never iperf3's strict
/// output, a JSON document or the live view: `human`).
fn say_target(human: bool, out: &SharedWriter, target: &HostTarget) {
    if let (true, Some(line), Ok(mut w)) = (human, target.line(), out.lock()) {
        let _ = writeln!(w, "{line}");
    }
}

/// Whether a client or server runs in strict iperf3 mode: `--iperf3-strict`, or the program
/// was invoked as `iperf3` (`as_iperf3`).
pub fn strict(out: &OutputArgs, as_iperf3: bool) -> bool {
    as_iperf3 || out.iperf3.iperf3_strict
}

/// How a client or server with these output options reports a failure when it ends. With
/// `--csv -` stdout is the CSV's: a failure is one line on stderr, never a JSON document there.
pub fn failure_style(
    out: &OutputArgs,
    csv: Option<&crate::pictures::CsvFileArg>,
    as_iperf3: bool,
) -> exit::Style {
    let json =
        out.format() != Format::Text && !csv.is_some_and(crate::pictures::CsvFileArg::to_stdout);
    exit::Style::of_output(json, strict(out, as_iperf3))
}

/// `as_iperf3`: the program was invoked as `iperf3` (strict iperf3 mode).
pub fn run_client(a: ClientArgs, as_iperf3: bool) -> anyhow::Result<ExitCode> {
    // `--csv -` takes stdout: not with another output there (a usage error, before -J's style)
    let json = match a.out.format() {
        _ if a.out.logfile.is_some() => None,
        Format::Json => Some("-J"),
        Format::JsonStream => Some("--json-stream"),
        Format::Text => a.live.then_some("--live"),
    };
    a.csv.check_stdout(json)?;
    let strict = strict(&a.out, as_iperf3);
    let mut cfg = client_config(&a)?;
    let targets = targets(&a);
    // the command line's contradictions first, then the one resolution of the interface, the
    // rate and the CPUs (checked here, in every command's words); the engine checks the CPUs
    // again only as a library's guard, for callers that resolve no target
    cfg.check_choices().map_err(exit::engine_fail)?;
    let target = client_target(&a, &cfg, targets.len() == 1)?;
    let _pidfile = a.out.iperf3.write_pidfile()?;
    a.out.iperf3.debug(&cfg);
    let interrupt = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupt));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&interrupt));
    cfg.interrupt = Some(interrupt);
    let out = a.out.writer(Some(&a.csv))?;
    let format = a.out.format();
    let human = format == Format::Text && !strict && !a.live;
    if targets.len() > 1 {
        if a.loopback || a.repeat.is_some() || format == Format::JsonStream {
            return Err(exit::fail(
                exit::USAGE,
                "several hosts or ports cannot be combined with --loopback, --repeat or --json-stream",
            ));
        }
        if a.html.html.is_some() || a.csv.csv.is_some() {
            return Err(exit::fail(
                exit::USAGE,
                "--html and --csv write one test: not with several hosts or ports",
            ));
        }
        say_target(human, &out, &target);
        return run_targets(&cfg, &targets, &out, format, a.out.text_options());
    }
    let mut server = None;
    if a.loopback {
        let scfg = ServerConfig {
            observe: Some(live_observer()),
            ..ServerConfig::loopback(cfg.interval)
        };
        let h = Server::bind(scfg)
            .and_then(Server::spawn_quiet)
            .map_err(engine_fail)?;
        cfg.host = DEFAULT_HOST.into();
        cfg.port = h.addr.port();
        server = Some(h);
        if format == Format::Text {
            if let Ok(mut w) = out.lock() {
                let _ = writeln!(w, "{}", wirespeed_engine::sysinfo::host_summary());
            }
        }
    }
    say_target(human, &out, &target);
    if let Some(n) = a.repeat {
        let r = match out.lock() {
            Ok(mut w) => crate::explain::run_repeat(
                &cfg,
                n,
                &mut **w,
                format != Format::Text,
                (&a.html, &a.csv),
            ),
            Err(_) => Err(exit::fail(exit::INTERNAL, "output lock poisoned")),
        };
        if let Some(h) = server {
            let _ = h.stop();
        }
        return r;
    }
    if a.live {
        return run_live(&a, &cfg, server);
    }
    let mut rep = StandardReporter::new(Arc::clone(&out), format, a.out.text_options())
        .titled(a.title.clone());
    if strict {
        rep = rep.strict();
    }
    let r = wirespeed_engine::run_client(&cfg, &mut rep);
    if let Some(h) = server {
        let _ = h.stop();
    }
    // The reporter printed the report, partial or not, with its error; a partial report that
    // got its end (the server went silent after the data phase) gets where the work ran and
    // the verdict on the silence too.
    let tables = a.out.verbose || a.out.where_tables;
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            let partial = rep.take_failed().filter(|p| p.verdict().is_some());
            if let (Some(p), Format::Text, false) = (partial, format, strict) {
                if let Ok(mut w) = out.lock() {
                    let _ = wirespeed_report::where_ran::write_where_as(&mut **w, &p, tables);
                    let _ = w.flush();
                }
                // The one error line names a verdict that ended the test (a silent server) too
                // (`-J` keeps iperf3's words in `error`; the verdict is under `wirespeed`).
                if let Some(v) = p.ended_by() {
                    let why = format!("{e}: {} (see the verdict)", v.id);
                    return Err(exit::reported(exit::engine_code(&e), why));
                }
            }
            return Err(exit::engine_reported(e));
        }
    };
    if format == Format::JsonStream && a.out.iperf3.json_stream_full_output {
        // iperf3: the whole -J document after the stream's "end" event.
        if let Ok(mut w) = out.lock() {
            let _ = wirespeed_report::json::write_json(&mut **w, &r);
            let _ = w.flush();
        }
    }
    crate::pictures::save(
        &a.html,
        Some(&a.csv),
        "client",
        || Ok(wirespeed_report::doc::Document::Test(Box::new(r.clone()))),
        None,
    )?;
    if let Some(path) = &a.out.iperf3.wirespeed_json {
        let io = |e| {
            exit::fail(
                exit::IO,
                format!("--wirespeed-json {}: {e}", path.display()),
            )
        };
        let mut f = std::fs::File::create(path).map_err(io)?;
        wirespeed_report::json::write_wirespeed_section(&mut f, &r).map_err(io)?;
    }
    if strict {
        // iperf3 prints nothing after `iperf Done.`.
        return Ok(ExitCode::SUCCESS);
    }
    if format == Format::Text {
        if let Ok(mut w) = out.lock() {
            let _ = wirespeed_report::where_ran::write_client_tail(&mut **w, &r, tables, a.why);
        }
        let asked = cfg.server_irq_cpus.is_some();
        if let Some(warning) = wirespeed_report::where_ran::irq_request_ignored(&r, asked) {
            eprintln!("wirespeed: warning: {warning}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--live`: the full-screen view while the test runs, then the usual text summary (also when
/// the view was quit early, with what was measured by then).
fn run_live(
    a: &ClientArgs,
    cfg: &ClientConfig,
    server: Option<wirespeed_engine::ServerHandle>,
) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        if let Some(h) = server {
            let _ = h.stop();
        }
        return Err(exit::fail(exit::USAGE, "--live needs a terminal on stdout"));
    }
    let stop = cfg.interrupt.clone().unwrap_or_default();
    let mut live = wirespeed_view::live::Live::new(
        format!("wirespeed --live {}:{}", cfg.host, cfg.port),
        f64::from(a.time),
        stop,
    );
    let r = wirespeed_engine::run_client(cfg, &mut live);
    live.close();
    if let Some(h) = server {
        let _ = h.stop();
    }
    let partial = live.take_result();
    let mut out = std::io::stdout().lock();
    let shown = r.as_ref().ok().or(partial.as_ref());
    if let Some(res) = shown {
        let _ = wirespeed_report::render_text(&mut out, res, a.out.text_options());
        let _ = wirespeed_report::where_ran::write_where_as(
            &mut out,
            res,
            a.out.verbose || a.out.where_tables,
        );
    }
    let _ = out.flush();
    match r {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(engine_fail(e)),
    }
}

/// Every host × port the command line names.
fn targets(a: &ClientArgs) -> Vec<(String, u16)> {
    wirespeed_engine::targets::expand(a.host.as_deref(), &a.port)
}

/// Several targets at once, one thread each (the awk-over-several-iperf3 case): every
/// target's own report, then the sums over all of them (the engine runs them, the report's
/// `targets` document and text hold them).
fn run_targets(
    cfg: &ClientConfig,
    targets: &[(String, u16)],
    out: &SharedWriter,
    format: Format,
    opts: TextOptions,
) -> anyhow::Result<ExitCode> {
    let (doc, first_err) = wirespeed_engine::run_targets(cfg, targets);
    let mut w = out
        .lock()
        .map_err(|_| exit::fail(exit::INTERNAL, "output lock poisoned"))?;
    let _ = match format {
        Format::Text => wirespeed_report::targets::render_targets_text(&mut **w, &doc, opts),
        _ => wirespeed_report::targets::write_targets_json(&mut **w, &doc),
    }
    .and_then(|()| w.flush());
    match first_err {
        // With JSON the document above carries each target's error.
        Some(e) if format != Format::Text => Err(exit::engine_reported(e)),
        Some(e) => Err(engine_fail(e)),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `--allow-tune` on a server (`wirespeed server`, the agent's test server): the IRQ tuner
/// under `root`, or one line and the host exit code where moving IRQs is not allowed.
pub(crate) fn irq_tune(root: Root, iface: Option<String>) -> anyhow::Result<TuneConfig> {
    wirespeed_tune::engine::check_privileged(&root).map_err(|_| {
        exit::fail(
            exit::HOST,
            "--allow-tune: moving IRQs writes /proc/irq/*/smp_affinity_list, which needs root",
        )
    })?;
    let mut t = IrqTune::new(root);
    t.iface = iface;
    Ok(TuneConfig::new(t))
}

/// `as_iperf3`: the program was invoked as `iperf3` (strict iperf3 mode).
pub fn run_server(a: ServerArgs, as_iperf3: bool) -> anyhow::Result<ExitCode> {
    let strict = strict(&a.out, as_iperf3);
    if a.out.iperf3.wirespeed_json.is_some() {
        return Err(exit::fail(
            exit::USAGE,
            "--wirespeed-json: a client option (the server's report of each test has the \
             `wirespeed` section unless --iperf3-strict)",
        ));
    }
    if a.daemon {
        return Err(exit::fail(
            exit::USAGE,
            "-D/--daemon: not supported; run the server as a service: systemctl enable --now \
             wirespeed (the .deb's unit), or under any service manager",
        ));
    }
    a.out.iperf3.refuse_unsupported()?;
    if a.out.iperf3.json_stream_full_output {
        return Err(exit::fail(
            exit::USAGE,
            "--json-stream-full-output: the server prints each test's stream only; use -J for \
             whole documents",
        ));
    }
    let _pidfile = a.out.iperf3.write_pidfile()?;
    let mut guarded = ServerConfig::default();
    a.guard.apply(&mut guarded)?;
    a.guard.tune_needs_psk(a.allow_tune)?;
    let tune = if a.allow_tune {
        let root = match &a.root {
            Some(d) => crate::diagnose::root_dir(d)?,
            None => Root::live(),
        };
        Some(irq_tune(root, a.tune_iface.clone())?)
    } else {
        None
    };
    let log = wirespeed_engine::server::LogHook::new(|line: &str| {
        eprintln!("wirespeed server: {line}");
    });
    let cfg = ServerConfig {
        bind: a.bind.as_ref().map(|b| b.0),
        extras: wirespeed_engine::Extras {
            bind_dev: a
                .bind_dev
                .clone()
                .or(a.bind.as_ref().and_then(|b| b.1.clone())),
            cntl_keepalive: a.cntl_ka,
            snd_timeout: a.snd_timeout.map(Duration::from_millis),
            mptcp: a.out.iperf3.mptcp,
            ..Default::default()
        },
        port: a.port,
        family: Family::from_flags(a.v4, a.v6),
        one_off: a.one_off,
        log: Some(log),
        cpus: a.cpus.clone().map(|c| c.0),
        affinity: a.affinity,
        interval: Duration::from_secs_f64(a.out.interval),
        tune,
        observe: Some(live_observer()),
        ..guarded
    };
    a.out.iperf3.debug(&cfg);
    let out = a.out.writer(None)?;
    let format = a.out.format();
    let opts = TextOptions {
        done_line: false,
        ..a.out.text_options()
    };
    let server = Server::bind(cfg).map_err(engine_fail)?;
    let port = server.local_addr().map_err(engine_fail)?.port();
    if format == Format::Text {
        if let Ok(mut w) = out.lock() {
            let _ = wirespeed_report::text::write_server_listening(&mut *w, port, 1);
            let _ = w.flush();
        }
    }
    // SIGINT/SIGTERM stop the server cleanly (a tune change a running test holds goes back
    // first) and it exits 0, so a service manager sees a clean stop; a second signal ends it
    // at once (130).
    let stop = server.stop_flag();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(
            sig,
            i32::from(exit::INTERRUPTED),
            Arc::clone(&stop),
        );
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    let feed = a
        .stats_socket
        .as_deref()
        .map(|p| match p.as_os_str().is_empty() {
            true => wirespeed_engine::feed::Feed::open(&wirespeed_engine::feed::default_path()),
            false => wirespeed_engine::feed::Feed::open(p),
        })
        .transpose()
        .map_err(|e| exit::fail(exit::IO, e.to_string()))?;
    let out2 = Arc::clone(&out);
    let factory: wirespeed_engine::ReporterFactory = Arc::new(move |info| {
        let mut r = StandardReporter::new(Arc::clone(&out2), format, opts)
            .printing_errors()
            .printing_where();
        if strict {
            r = r.strict();
        }
        let r = Box::new(if format == Format::Text {
            r.capturing()
        } else {
            r
        }) as Box<dyn Reporter>;
        match &feed {
            Some(f) => Box::new(wirespeed_engine::feed::Tee::new(r, Arc::clone(f), info)),
            None => r,
        }
    });
    server.serve(factory).map_err(engine_fail)?;
    Ok(ExitCode::SUCCESS)
}
