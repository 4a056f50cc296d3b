//! Bad command lines: one line on stderr that names the flag and what it takes, in iperf3's
//! words where iperf3 has them, instead of clap's multi-line report with its usage and tips.
//!
//! [`parse_command`] prepares the clap command (a value that looks like a negative number is a
//! value, so `-t -1` is read as `-t`'s value and judged, not taken for an unknown flag `-1`);
//! [`one_line`] turns clap's error into the line. Help and version requests are not errors and
//! are printed by clap as usual.

use clap::builder::ArgAction;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Command};

/// `cmd` with every option that needs a value taking one that starts with `-` and a digit
/// (`-t -1`), in every subcommand. Flags and options whose value is optional keep reading
/// such a word as the next flag (`-4`).
pub fn parse_command(cmd: Command) -> Command {
    cmd.mut_args(negative_values).mut_subcommands(parse_command)
}

fn negative_values(a: Arg) -> Arg {
    let takes_value = matches!(a.get_action(), ArgAction::Set | ArgAction::Append)
        && a.get_num_args().is_none_or(|r| r.min_values() >= 1)
        && a.get_long().is_some();
    if takes_value {
        a.allow_negative_numbers(true)
    } else {
        a
    }
}

/// iperf3's words for what a flag takes, where iperf3 has them (its `iperf_strerror` texts).
fn iperf3_words(long: &str) -> Option<&'static str> {
    Some(match long {
        "time" => "test duration valid values are 0 to 86400 seconds",
        "omit" => "bogus value for --omit (maximum = 600 seconds)",
        "port" => "port number must be between 1 and 65535 inclusive",
        "interval" => "invalid report interval (min = 0.1, max = 60 seconds)",
        "tos" => "bad TOS value (must be between 0 and 255 inclusive)",
        "format" => "bad format specifier (valid formats are in the set [kmgtKMGT])",
        "rcv-timeout" => "receive timeout value is incorrect or not in range (100 to 86400000 ms)",
        "snd-timeout" => "send timeout value is incorrect or not in range (0 to 86400000 ms)",
        _ => return None,
    })
}

/// What a value of this argument's type is, for a value that did not parse as one.
fn kind_of_value(a: &Arg) -> Option<String> {
    use std::any::TypeId as Id;
    let t = a.get_value_parser().type_id();
    let whole = |max: u128| Some(format!("a whole number from 0 to {max}"));
    if t == Id::of::<u8>() {
        whole(u8::MAX.into())
    } else if t == Id::of::<u16>() {
        whole(u16::MAX.into())
    } else if t == Id::of::<u32>() {
        whole(u32::MAX.into())
    } else if t == Id::of::<u64>() || t == Id::of::<usize>() {
        whole(u64::MAX.into())
    } else if t == Id::of::<f64>() || t == Id::of::<f32>() {
        Some("a number".into())
    } else {
        None
    }
}

/// `-t/--time`, `--bidir`, `HOST`.
fn name_of(a: &Arg) -> String {
    match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => format!("-{s}/--{l}"),
        (None, Some(l)) => format!("--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, None) => a
            .get_value_names()
            .and_then(|v| v.first())
            .map_or_else(|| a.get_id().to_string().to_uppercase(), |v| v.to_string()),
    }
}

/// The first sentence of the argument's help, as a phrase.
fn help_of(a: &Arg) -> Option<String> {
    let h = a.get_help()?.to_string();
    let first = h
        .split(". ")
        .next()
        .unwrap_or(&h)
        .trim()
        .trim_end_matches('.');
    let mut c = first.chars();
    let phrase = match c.next() {
        Some(f) if !first.starts_with("IP") && !first.starts_with("TCP") => {
            f.to_lowercase().collect::<String>() + c.as_str()
        }
        _ => first.to_string(),
    };
    (!phrase.is_empty()).then_some(phrase)
}

/// The commands the words of `argv` name, from the top: `wirespeed tune revert` → the three.
fn command_path<'a>(root: &'a Command, argv: &[String]) -> Vec<&'a Command> {
    let mut path = vec![root];
    for w in argv.iter().skip(1) {
        let here = *path.last().unwrap_or(&root);
        if let Some(sub) = here.find_subcommand(w) {
            path.push(sub);
        }
    }
    path
}

/// The argument an error's `--time <TIME>` (or `-t`, `<HOST>`) names, in the innermost command
/// that has it.
fn find_arg<'a>(path: &[&'a Command], spec: &str) -> Option<&'a Arg> {
    let word = spec.split_whitespace().next().unwrap_or(spec);
    let word = word.split('=').next().unwrap_or(word);
    for cmd in path.iter().rev() {
        let found = cmd.get_arguments().find(|a| {
            if let Some(l) = word.strip_prefix("--") {
                a.get_long() == Some(l)
            } else if let Some(s) = word.strip_prefix('-') {
                s.chars().count() == 1 && a.get_short() == s.chars().next()
            } else {
                let v = word.trim_start_matches('<').trim_end_matches(['>', '.']);
                a.get_value_names()
                    .is_some_and(|n| n.iter().any(|n| n.as_str() == v))
                    || a.get_id().as_str().eq_ignore_ascii_case(v)
            }
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

fn string(e: &clap::Error, k: ContextKind) -> Option<String> {
    match e.get(k)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => Some(v.join(", ")),
        ContextValue::StyledStr(s) => Some(s.to_string()),
        ContextValue::StyledStrs(v) => Some(
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        _ => None,
    }
}

/// A suggestion worth making: a misspelling (two edits at most) or a prefix of a longer name.
fn near(typed: &str, suggested: &str) -> bool {
    let t = typed.trim_start_matches('-');
    let s = suggested.trim_start_matches('-');
    strsim::levenshtein(t, s) <= 2 || (t.len() >= 3 && s.starts_with(t))
}

/// The words of a flag's own range parser (`common::limit`: `a whole number from 1 to 65536`),
/// for a flag given without its value: the command line read again with an empty value after
/// the flag's last occurrence, so no value and a value out of range are said alike.
fn range_of(root: &Command, argv: &[String], a: &Arg) -> Option<String> {
    let short = a.get_short().map(|c| format!("-{c}"));
    let long = a.get_long().map(|l| format!("--{l}"));
    let at = argv
        .iter()
        .rposition(|w| Some(w) == short.as_ref() || Some(w) == long.as_ref())?;
    let mut again = argv.to_vec();
    again.insert(at + 1, String::new());
    let e = root.clone().try_get_matches_from(again).err()?;
    let s = std::error::Error::source(&e)?.to_string();
    s.starts_with("a whole number from ").then_some(s)
}

/// The line for a bad command line (without the program's prefix), or `None` for help and
/// version output, which clap prints itself.
pub fn one_line(e: &clap::Error, root: &Command, argv: &[String]) -> Option<String> {
    if !e.use_stderr() {
        return None;
    }
    let path = command_path(root, argv);
    let here: Vec<&str> = path.iter().map(|c| c.get_name()).collect();
    let here = here.join(" ");
    let invalid_arg = string(e, ContextKind::InvalidArg);
    let arg = invalid_arg.as_deref().and_then(|s| find_arg(&path, s));
    let flag = match (arg, invalid_arg.as_deref()) {
        (Some(a), _) => name_of(a),
        (None, Some(s)) => s.to_string(),
        (None, None) => String::new(),
    };
    let help = arg.and_then(help_of);
    let with_help = |what: String| match &help {
        Some(h) if !what.contains(h.as_str()) => format!("{what} - {h}"),
        _ => what,
    };
    let line = match e.kind() {
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => {
            let value = string(e, ContextKind::InvalidValue).unwrap_or_default();
            let source = std::error::Error::source(e).map(|s| s.to_string());
            // A value parser of ours explains itself; a bare number parse does not.
            let raw = source.as_deref().is_none_or(|s| {
                s.contains("invalid digit")
                    || s.contains("too large to fit")
                    || s.contains("too small to fit")
                    || s.contains("invalid float literal")
                    || s.contains("empty string")
                    || s.contains(" is not in ")
                    || s.starts_with("a whole number from ")
            });
            // iperf3's words belong to iperf3's own commands.
            let iperf3_command = path
                .last()
                .is_some_and(|c| matches!(c.get_name(), "client" | "server"));
            let words = arg
                .filter(|_| iperf3_command)
                .and_then(|a| iperf3_words(a.get_long()?));
            // A range parser's "N is not in LO..=HI", or our own range's words
            // (`common::limit`).
            let range = source
                .as_deref()
                .and_then(|s| {
                    if s.starts_with("a whole number from ") {
                        return Some(s.to_string());
                    }
                    let (lo, hi) = s.split_once(" is not in ")?.1.split_once("..=")?;
                    Some(format!("a whole number from {lo} to {hi}"))
                })
                .or_else(|| range_of(root, argv, arg?));
            // Our own parsers' words and iperf3's say what the flag takes; a bare type does
            // not, so the flag's help follows it.
            let with_help = |what: String| {
                if (raw && words.is_none()) || (value.is_empty() && source.is_none()) {
                    with_help(what)
                } else {
                    what
                }
            };
            let what = match (&source, raw) {
                (Some(s), false) => s.clone(),
                _ => words
                    .map(|words| match arg.and_then(kind_of_value) {
                        Some(k) if k.starts_with("a whole") => format!("{words} (a whole number)"),
                        _ => words.to_string(),
                    })
                    .or(range)
                    .or_else(|| arg.and_then(kind_of_value))
                    .or_else(|| {
                        let valid = string(e, ContextKind::ValidValue)?;
                        Some(format!("one of {valid}"))
                    })
                    .unwrap_or_else(|| source.clone().unwrap_or_default()),
            };
            if value.is_empty() && source.is_none() {
                // iperf3's (getopt's) words for a flag given without its value.
                with_help(format!("option requires an argument -- {flag}: {what}"))
            } else {
                with_help(format!("invalid value '{value}' for {flag}: {what}"))
            }
        }
        ErrorKind::UnknownArgument => {
            let typed = invalid_arg.clone().unwrap_or_default();
            if typed == "-c" || typed == "--client" {
                // `wirespeed -c` with nothing after it.
                "option requires an argument -- -c/--client: the server to test (-c HOST)"
                    .to_string()
            } else {
                let suggestion = string(e, ContextKind::SuggestedArg)
                    .filter(|s| near(&typed, s))
                    .map(|s| format!("; did you mean '{s}'?"))
                    .unwrap_or_default();
                let what = if typed.starts_with('-') {
                    "unrecognized option"
                } else {
                    "unexpected argument"
                };
                format!("{what} '{typed}'{suggestion} ('{here} --help' lists the options)")
            }
        }
        ErrorKind::InvalidSubcommand => {
            let typed = string(e, ContextKind::InvalidSubcommand).unwrap_or_default();
            let suggestion = string(e, ContextKind::SuggestedSubcommand)
                .map(|s| format!("; did you mean '{s}'?"))
                .unwrap_or_default();
            format!(
                "unrecognized command '{typed}'{suggestion} ('{here} --help' lists the commands)"
            )
        }
        ErrorKind::MissingRequiredArgument => {
            let missing = invalid_arg.clone().unwrap_or_default();
            let first = missing.split(", ").next().unwrap_or(&missing);
            match find_arg(&path, first) {
                Some(_) if path.last().is_some_and(|c| c.get_name() == "client") => {
                    // iperf3's `-c HOST`, or `wirespeed client HOST`.
                    "option requires an argument -- -c/--client: the server to test (-c HOST)"
                        .to_string()
                }
                Some(a) => {
                    let name = name_of(a);
                    match help_of(a) {
                        Some(h) => format!("{here} needs {name} - {h}"),
                        None => format!("{here} needs {name}"),
                    }
                }
                None => format!("{here} needs {missing}"),
            }
        }
        ErrorKind::ArgumentConflict => match string(e, ContextKind::PriorArg) {
            Some(p) if !flag.is_empty() => {
                let prior = find_arg(&path, &p).map_or(p, name_of);
                if prior == flag {
                    format!("{flag} cannot be given more than once")
                } else {
                    format!("{flag} cannot be used with {prior}")
                }
            }
            _ => first_line(e),
        },
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            format!("{here} needs a command ('{here} --help' lists them)")
        }
        _ => first_line(e),
    };
    Some(line)
}

/// clap's own first line, without its `error: ` prefix.
fn first_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cmd: &Command, args: &[&str]) -> String {
        let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let e = cmd.clone().try_get_matches_from(&argv).unwrap_err();
        one_line(&e, cmd, &argv).expect("an error")
    }

    #[test]
    fn every_kind_of_mistake_is_one_line_naming_the_flag() {
        // clap commands, not programs: their names through constants
        const TOP: &str = "ws";
        const SUB: &str = "client";
        let cmd = parse_command(
            Command::new(TOP).subcommand(
                Command::new(SUB)
                    .arg(Arg::new("host").value_name("HOST").required(true))
                    .arg(
                        Arg::new("time")
                            .short('t')
                            .long("time")
                            .help("Seconds to transmit.")
                            .value_parser(clap::value_parser!(u32)),
                    )
                    .arg(
                        Arg::new("parallel")
                            .short('P')
                            .long("parallel")
                            .help("Parallel streams (per direction).")
                            .value_parser(clap::value_parser!(u32)),
                    )
                    .arg(
                        Arg::new("bitrate")
                            .short('b')
                            .long("bitrate")
                            .help("Target bits/s."),
                    )
                    .arg(
                        Arg::new("v4")
                            .short('4')
                            .long("version4")
                            .action(ArgAction::SetTrue),
                    ),
            ),
        );
        assert_eq!(
            line(&cmd, &["ws", "client", "h", "-t", "-1"]),
            "invalid value '-1' for -t/--time: test duration valid values are 0 to 86400 \
             seconds (a whole number)"
        );
        assert_eq!(
            line(&cmd, &["ws", "client", "h", "-t", "0.5"]),
            "invalid value '0.5' for -t/--time: test duration valid values are 0 to 86400 \
             seconds (a whole number)"
        );
        assert_eq!(
            line(&cmd, &["ws", "client", "h", "-P", "x"]),
            "invalid value 'x' for -P/--parallel: a whole number from 0 to 4294967295 - \
             parallel streams (per direction)"
        );
        assert_eq!(
            line(&cmd, &["ws", "client", "h", "-P"]),
            "option requires an argument -- -P/--parallel: a whole number from 0 to \
             4294967295 - parallel streams (per direction)"
        );
        // a flag with a range of its own says it alike for no value and a value outside it
        let ranged = Command::new(TOP).subcommand(
            Command::new(SUB).arg(Arg::new("host")).arg(
                Arg::new("parallel")
                    .short('P')
                    .long("parallel")
                    .help("parallel streams (per direction)")
                    .value_parser(crate::common::limit::u32_in::<1, 65536>),
            ),
        );
        for (args, head) in [
            (
                &["ws", "client", "h", "-P"][..],
                "option requires an argument --",
            ),
            (
                &["ws", "client", "h", "-P", "0"][..],
                "invalid value '0' for",
            ),
        ] {
            assert_eq!(
                line(&ranged, args),
                format!(
                    "{head} -P/--parallel: a whole number from 1 to 65536 - parallel streams \
                     (per direction)"
                )
            );
        }
        assert_eq!(
            line(&cmd, &["ws", "client", "h", "--frobnicate"]),
            "unrecognized option '--frobnicate' ('ws client --help' lists the options)"
        );
        assert_eq!(
            line(&cmd, &["ws", "client", "h", "--bitrat", "1"]),
            "unrecognized option '--bitrat'; did you mean '--bitrate'? ('ws client --help' \
             lists the options)"
        );
        assert_eq!(
            line(&cmd, &["ws", "client"]),
            "option requires an argument -- -c/--client: the server to test (-c HOST)"
        );
        assert_eq!(
            line(&cmd, &["ws", "-c"]),
            "option requires an argument -- -c/--client: the server to test (-c HOST)"
        );
        // A flag that looks like a negative number is still a flag where no value is due.
        let ok = cmd
            .clone()
            .try_get_matches_from(["ws", "client", "h", "-4", "-t", "-1"]);
        assert!(ok.is_err_and(|e| e.kind() == ErrorKind::ValueValidation));
        assert!(cmd
            .clone()
            .try_get_matches_from(["ws", "client", "h", "-4"])
            .is_ok());
    }

    #[test]
    fn near_suggestions_only() {
        assert!(near("--bitrat", "--bitrate"));
        assert!(near("--para", "--parallel"));
        assert!(!near("--frobnicate", "--bitrate"));
    }
}
