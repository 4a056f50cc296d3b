//! iperf3's flags that are not about the measurement itself: output decoration (`--timestamps`,
//! `--forceflush`), `-I/--pidfile`, `-d/--debug`, `--json-stream-full-output`, `-m/--mptcp`,
//! and the flags wirespeed refuses with the reason and what to use instead (`-F`, SCTP). The table of every
//! iperf3 flag and what wirespeed does with it is in docs/measure.md.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::common::heading;
use crate::exit;

/// Flags iperf3 accepts on both ends.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommonArgs {
    /// Write this process's id to FILE (removed at exit), as iperf3 -I.
    #[arg(help_heading = heading::OUTPUT, short = 'I', long = "pidfile", value_name = "FILE")]
    pub pidfile: Option<PathBuf>,
    /// Flush the output after every write (wirespeed never holds back more than a line).
    #[arg(help_heading = heading::OUTPUT, long = "forceflush")]
    pub forceflush: bool,
    /// Prefix every text output line with the time, formatted as strftime(3) FORMAT
    /// (default "%c ").
    #[arg(help_heading = heading::OUTPUT, long = "timestamps", value_name = "FORMAT", num_args = 0..=1,
          require_equals = true, default_missing_value = "%c ")]
    pub timestamps: Option<String>,
    /// Debugging output on stderr (the settings in effect); LEVEL 1-4 is accepted, every level
    /// prints the same.
    #[arg(help_heading = heading::OUTPUT, short = 'd', long = "debug", value_name = "LEVEL", num_args = 0..=1,
          require_equals = true, default_missing_value = "4")]
    pub debug: Option<u8>,
    /// With --json-stream: also print the whole JSON document at the end, as -J does.
    #[arg(help_heading = heading::OUTPUT, long = "json-stream-full-output")]
    pub json_stream_full_output: bool,
    /// iperf3's -F (send or receive a file): not supported, see docs/measure.md.
    #[arg(short = 'F', long = "file", value_name = "NAME", hide = true)]
    pub file: Option<PathBuf>,
    /// Multipath TCP instead of TCP (the client's connections, the server's listener); the
    /// kernel falls back to TCP when the other end does not speak it.
    #[arg(help_heading = heading::CONNECTION, short = 'm', long = "mptcp")]
    pub mptcp: bool,
    /// Behave as iperf3 in everything a script sees: no `wirespeed` key in JSON, nothing after
    /// `iperf Done.`, iperf3's exit status (1) on every failure. Implied when the binary is
    /// invoked as `iperf3` (a symlink or hard link).
    #[arg(help_heading = heading::OUTPUT, long = "iperf3-strict")]
    pub iperf3_strict: bool,
    /// Write wirespeed's additions to the report (its `wirespeed` section: paths, workers,
    /// where the work ran) to FILE as JSON; with --iperf3-strict the report itself has none.
    #[arg(help_heading = heading::OUTPUT, long = "wirespeed-json", value_name = "FILE")]
    pub wirespeed_json: Option<PathBuf>,
}

/// Whether the program was invoked under iperf3's name (argv[0]'s basename is `iperf3`).
pub fn invoked_as_iperf3(argv0: Option<&std::ffi::OsStr>) -> bool {
    argv0
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n == "iperf3")
}

/// Client flags of iperf3's SCTP build, refused.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SctpArgs {
    /// iperf3's --sctp: not supported (wirespeed measures TCP and UDP).
    #[arg(long = "sctp", hide = true)]
    pub sctp: bool,
    /// iperf3's -X/--xbind (SCTP): not supported.
    #[arg(short = 'X', long = "xbind", value_name = "NAME", hide = true)]
    pub xbind: Option<String>,
    /// iperf3's --nstreams (SCTP): not supported.
    #[arg(long = "nstreams", value_name = "N", hide = true)]
    pub nstreams: Option<u32>,
}

impl CommonArgs {
    /// `-I FILE` of either end: the pid written now, the file removed when the guard is dropped.
    pub fn write_pidfile(&self) -> anyhow::Result<Option<PidFile>> {
        self.pidfile.as_deref().map(PidFile::create).transpose()
    }

    /// Refuse what wirespeed does not do, with the reason and what to use instead.
    pub fn refuse_unsupported(&self) -> anyhow::Result<()> {
        if self.file.is_some() {
            return Err(exit::fail(
                exit::USAGE,
                "-F/--file: sending or receiving a file is not supported (disk speed is not the \
                 network's); use -n SIZE for a transfer of that size, and -Z to send without copies",
            ));
        }
        if let Some(l) = self.debug {
            if !(1..=4).contains(&l) {
                return Err(exit::fail(
                    exit::USAGE,
                    format!("--debug={l}: the level is 1 to 4"),
                ));
            }
        }
        Ok(())
    }

    /// `-d`: one line per setting on stderr.
    pub fn debug(&self, what: &dyn std::fmt::Debug) {
        if self.debug.is_some() {
            eprintln!("debug: {what:#?}");
        }
    }
}

impl SctpArgs {
    pub fn refuse(&self) -> anyhow::Result<()> {
        if self.sctp || self.xbind.is_some() || self.nstreams.is_some() {
            return Err(exit::fail(
                exit::USAGE,
                "--sctp, -X/--xbind, --nstreams: SCTP is not supported; wirespeed measures TCP \
                 (default) and UDP (-u)",
            ));
        }
        Ok(())
    }
}

/// `-I FILE`: the pid written at start, the file removed when this is dropped.
pub struct PidFile(PathBuf);

impl PidFile {
    pub fn create(path: &Path) -> anyhow::Result<PidFile> {
        std::fs::write(path, format!("{}\n", std::process::id()))
            .map_err(|e| exit::fail(exit::IO, format!("-I/--pidfile {}: {e}", path.display())))?;
        Ok(PidFile(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The output writer with `--timestamps` (a time prefix at the start of every line) and
/// `--forceflush` (a flush after every write).
pub struct Decorated<W: Write> {
    inner: W,
    timestamps: Option<String>,
    flush_each: bool,
    at_line_start: bool,
}

impl<W: Write> Decorated<W> {
    pub fn new(inner: W, timestamps: Option<String>, flush_each: bool) -> Decorated<W> {
        Decorated {
            inner,
            timestamps,
            flush_each,
            at_line_start: true,
        }
    }
}

/// The local UTC offset, read once by [`init_local_offset`] while the process has one thread
/// (the `time` crate refuses to read it later: another thread could change the environment
/// while libc reads it); UTC when it cannot be determined.
static LOCAL_OFFSET: std::sync::OnceLock<time::UtcOffset> = std::sync::OnceLock::new();

/// Read the local offset for `--timestamps`; call first thing in `main`, before any thread.
pub fn init_local_offset() {
    let _ = LOCAL_OFFSET
        .get_or_init(|| time::UtcOffset::current_local_offset().unwrap_or(time::UtcOffset::UTC));
}

/// `fmt` (strftime(3) syntax) at the current local time (UTC when the local offset could not
/// be read at startup); an invalid format prints as given.
pub fn timestamp(fmt: &str) -> String {
    let offset = LOCAL_OFFSET.get().copied().unwrap_or(time::UtcOffset::UTC);
    let now = time::OffsetDateTime::now_utc().to_offset(offset);
    format_at(fmt, now)
}

fn format_at(fmt: &str, at: time::OffsetDateTime) -> String {
    time::format_description::parse_strftime_borrowed(fmt)
        .ok()
        .and_then(|items| at.format(&items).ok())
        .unwrap_or_else(|| fmt.to_string())
}

impl<W: Write> Write for Decorated<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &self.timestamps {
            None => self.inner.write_all(buf)?,
            Some(fmt) => {
                for piece in buf.split_inclusive(|&b| b == b'\n') {
                    if self.at_line_start {
                        self.inner.write_all(timestamp(fmt).as_bytes())?;
                    }
                    self.inner.write_all(piece)?;
                    self.at_line_start = piece.ends_with(b"\n");
                }
            }
        }
        if self.flush_each {
            self.inner.flush()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Accept iperf3's spelling: `-s ...` becomes `server ...`, `-c HOST ...` becomes `client HOST ...`,
/// unless the first word is one of our subcommands (`subcommand`: their own arguments may
/// contain `-c`, e.g. `lab exec client -- ping -c1`) or asks for help or the version.
pub fn rewrite_iperf3_argv(
    argv: Vec<OsString>,
    subcommand: impl Fn(&str) -> bool,
) -> Vec<OsString> {
    let Some(first) = argv.get(1).map(|a| a.to_string_lossy()) else {
        return argv;
    };
    if subcommand(&first) || ["-h", "--help", "-v", "--version"].contains(&first.as_ref()) {
        return argv;
    }
    let mut rest: Vec<OsString> = Vec::with_capacity(argv.len());
    let mut mode: Option<(&str, Option<OsString>)> = None;
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].to_string_lossy().into_owned();
        if mode.is_none() && (a == "-s" || a == "--server") {
            mode = Some(("server", None));
        } else if mode.is_none() && (a == "-c" || a == "--client") && i + 1 < argv.len() {
            mode = Some(("client", Some(argv[i + 1].clone())));
            i += 1;
        } else if mode.is_none() && a.starts_with("--client=") {
            mode = Some(("client", Some(OsString::from(&a["--client=".len()..]))));
        } else if mode.is_none() && a.starts_with("-c") && a.len() > 2 && !a.starts_with("--") {
            mode = Some(("client", Some(OsString::from(&a[2..]))));
        } else {
            rest.push(argv[i].clone());
        }
        i += 1;
    }
    let Some((sub, host)) = mode else {
        return argv;
    };
    let mut out = vec![argv[0].clone(), OsString::from(sub)];
    out.extend(host);
    out.extend(rest);
    out
}

/// The iperf3 release whose flags, keys and output strict mode follows.
pub const IPERF3_VERSION: &str = "3.20";

/// Whether this command line asks for strict iperf3 mode: the binary is named `iperf3`, or
/// `--iperf3-strict` is among its words (looked at before parsing, so that help, version and
/// a bad command line come out in iperf3's shape too).
pub fn strict_requested(args: &[std::ffi::OsString], as_iperf3: bool) -> bool {
    as_iperf3 || args.iter().skip(1).any(|a| a == "--iperf3-strict")
}

/// Whether `word` is in `args` as a flag (after the program name, before a `--`).
pub fn has_flag(args: &[std::ffi::OsString], words: &[&str]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| words.iter().any(|w| a == w))
}

/// `iperf3 -v` in iperf3's shape: `iperf 3.20 (cJSON 1.7.15)`, the system line (uname's
/// sysname, nodename, release, version and machine, as iperf3 prints them) and the optional
/// features, the last of which names wirespeed and its version: a parser reading
/// `iperf (\d+)\.(\d+)` from the first line reads iperf3's release whose behaviour this is.
pub fn version_text() -> String {
    let system = wirespeed_engine::sysinfo::system_info();
    format!(
        "iperf {IPERF3_VERSION} (cJSON 1.7.15)\n{system}\nOptional features available: CPU \
         affinity setting, IPv6 flow label, TCP congestion algorithm setting, sendfile / \
         zerocopy, socket pacing, authentication, bind to device, support IPv4 don't fragment, \
         POSIX threads, GSO/GRO support, wirespeed {}\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// iperf3's two usage lines.
const USAGE_HEAD: &str =
    "Usage: iperf3 [-s|-c host] [options]\n       iperf3 [-h|--help] [-v|--version]\n";

/// What iperf3 (3.17 and later) prints after a bad command line's error, on stderr.
pub const SHORT_USAGE: &str =
    "\nUsage: iperf3 [-s|-c host] [options]\nTry `iperf3 --help' for more information.\n";

/// `iperf3 -h` in iperf3's shape: its two usage lines, then the options under iperf3's three
/// headings (`Server or Client:`, `Server specific:`, `Client specific:`), one per line as
/// `  -p, --port PORT           what it does`, and iperf3's `[KMG]` note; generated from the
/// client's and server's own definitions, so it lists what wirespeed accepts.
pub fn usage_text(root: &clap::Command) -> String {
    let find = |name: &str| root.get_subcommands().find(|c| c.get_name() == name);
    let (Some(client), Some(server)) = (find("client"), find("server")) else {
        return USAGE_HEAD.to_string();
    };
    let shown = |c: &clap::Command| -> Vec<clap::Arg> {
        c.get_arguments()
            .filter(|a| !a.is_hide_set() && !a.is_positional())
            .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
            .filter(|a| a.get_long().is_some())
            .cloned()
            .collect()
    };
    let (cargs, sargs) = (shown(client), shown(server));
    let in_server = |l: Option<&str>| sargs.iter().any(|a| a.get_long() == l);
    let in_client = |l: Option<&str>| cargs.iter().any(|a| a.get_long() == l);
    let line = |a: &clap::Arg| -> String {
        let mut left = match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => format!("-{s}, --{l}"),
            (None, Some(l)) => format!("--{l}"),
            _ => String::new(),
        };
        let takes = a.get_num_args().is_none_or(|n| n.takes_values());
        if takes
            && !matches!(
                a.get_action(),
                clap::ArgAction::SetTrue | clap::ArgAction::Count
            )
        {
            if let Some(v) = a.get_value_names().and_then(|v| v.first()) {
                left.push(' ');
                left.push_str(v);
            }
        }
        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
        option_line(&left, first_sentence(&help))
    };
    let mut out = String::from(USAGE_HEAD);
    out.push_str("\nServer or Client:\n");
    for a in cargs.iter().filter(|a| in_server(a.get_long())) {
        out.push_str(&line(a));
    }
    out.push_str(&option_line(
        "-v, --version",
        "show version information and quit",
    ));
    out.push_str(&option_line("-h, --help", "show this message and quit"));
    out.push_str("Server specific:\n");
    out.push_str(&option_line("-s, --server", "run in server mode"));
    for a in sargs.iter().filter(|a| !in_client(a.get_long())) {
        out.push_str(&line(a));
    }
    out.push_str("Client specific:\n");
    out.push_str(&option_line(
        "-c, --client HOST[%DEV]",
        "run in client mode, connecting to HOST",
    ));
    for a in cargs.iter().filter(|a| !in_server(a.get_long())) {
        out.push_str(&line(a));
    }
    out.push_str(
        "\n[KMG] indicates options that support a K/M/G suffix for kilo-, mega-, or giga-\n\n",
    );
    out.push_str(&format!(
        "wirespeed {} in iperf3's shape; `wirespeed --help` lists all it does\n",
        env!("CARGO_PKG_VERSION")
    ));
    out
}

/// The first sentence of a help text, without its full stop (`e.g. x` does not end one).
fn first_sentence(help: &str) -> &str {
    let mut from = 0;
    while let Some(i) = help[from..].find(". ") {
        let at = from + i;
        if help[at + 2..].starts_with(|c: char| c.is_uppercase()) {
            return &help[..at];
        }
        from = at + 2;
    }
    help.trim_end_matches('.')
}

/// One option of iperf3's usage: two spaces, the option padded to 26 columns, its text wrapped
/// at 80 columns under the text's column (iperf3's layout).
fn option_line(left: &str, help: &str) -> String {
    const COL: usize = 28;
    const WIDTH: usize = 80;
    let mut out = format!("  {left:<26}");
    if left.len() >= 26 {
        out.push(' ');
    }
    let mut col = out.len();
    let mut first = true;
    for word in help.split_whitespace() {
        if !first && col + 1 + word.len() > WIDTH {
            out.push('\n');
            out.push_str(&" ".repeat(COL));
            col = COL;
        } else if !first {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
        first = false;
    }
    out.push('\n');
    out
}

/// A bad command line in strict mode: iperf3's words where they differ from wirespeed's
/// (getopt's `unrecognized option '--x'`, the missing mode's parameter error), without
/// wirespeed's hints.
pub fn strict_error_line(e: &clap::Error, line: &str) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let typed = match e.get(ContextKind::InvalidArg) {
                Some(ContextValue::String(s)) => s.clone(),
                _ => String::new(),
            };
            if typed.starts_with('-') && typed != "-c" && typed != "--client" {
                format!("unrecognized option '{typed}'")
            } else {
                line.to_string()
            }
        }
        ErrorKind::MissingSubcommand
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        | ErrorKind::InvalidSubcommand => {
            "parameter error - must either be a client (-c) or server (-s)".to_string()
        }
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn rewrite(argv: Vec<OsString>) -> Vec<OsString> {
        rewrite_iperf3_argv(argv, |w| ["client", "doctor"].contains(&w))
    }

    #[test]
    fn iperf3_spellings_become_subcommands() {
        assert_eq!(
            rewrite(v(&["ws", "-s", "-p", "5202"])),
            v(&["ws", "server", "-p", "5202"])
        );
        assert_eq!(
            rewrite(v(&["ws", "-c", "10.0.0.1", "-t", "1", "-R"])),
            v(&["ws", "client", "10.0.0.1", "-t", "1", "-R"])
        );
        assert_eq!(
            rewrite(v(&["ws", "-t", "1", "-c", "h"])),
            v(&["ws", "client", "h", "-t", "1"])
        );
        assert_eq!(rewrite(v(&["ws", "-chost"])), v(&["ws", "client", "host"]));
        assert_eq!(
            rewrite(v(&["ws", "--client=h", "-P", "4"])),
            v(&["ws", "client", "h", "-P", "4"])
        );
        // iperf3's -V (verbose) may come first; -v alone is the version.
        assert_eq!(
            rewrite(v(&["ws", "-V", "-c", "h"])),
            v(&["ws", "client", "h", "-V"])
        );
        assert_eq!(rewrite(v(&["ws", "-v"])), v(&["ws", "-v"]));
        // Subcommands and bare invocations are left alone.
        assert_eq!(
            rewrite(v(&["ws", "client", "-c"])),
            v(&["ws", "client", "-c"])
        );
        assert_eq!(rewrite(v(&["ws"])), v(&["ws"]));
        assert_eq!(
            rewrite(v(&["ws", "doctor", "-s"])),
            v(&["ws", "doctor", "-s"])
        );
    }

    #[test]
    fn iperf3_by_name() {
        use std::ffi::OsStr;
        assert!(invoked_as_iperf3(Some(OsStr::new("iperf3"))));
        assert!(invoked_as_iperf3(Some(OsStr::new("/usr/local/bin/iperf3"))));
        assert!(!invoked_as_iperf3(Some(OsStr::new("/usr/bin/wirespeed"))));
        assert!(!invoked_as_iperf3(Some(OsStr::new("iperf3.sh"))));
        assert!(!invoked_as_iperf3(None));
    }

    #[test]
    fn timestamps_format_strftime() {
        let at = time::OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        assert_eq!(format_at("%c ", at), "Tue Nov 14 22:13:20 2023 ");
        assert_eq!(format_at("%Y-%m-%d %H:%M:%S|", at), "2023-11-14 22:13:20|");
        // Not a strftime format: printed as given.
        assert_eq!(format_at("%Q", at), "%Q");
    }

    #[test]
    fn timestamps_prefix_every_line_once() {
        let mut d = Decorated::new(Vec::new(), Some("T ".into()), true);
        d.write_all(b"one\ntw").unwrap();
        d.write_all(b"o\nthree\n").unwrap();
        assert_eq!(
            String::from_utf8(d.inner).unwrap(),
            "T one\nT two\nT three\n"
        );
    }
}
