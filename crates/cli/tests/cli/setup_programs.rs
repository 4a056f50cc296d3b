//! A new machine has only what `scripts/setup` installs: every program that the product, the
//! tests, the benchmark and the scripts start must be named in the list that `scripts/setup`
//! installs from, or the next new CI machine fails where this one passed.
//!
//! The code is read as text for the ways it starts programs:
//! - Rust: `Command::new` of a string literal; the lab's `command(SIDE, NAME)` with a literal
//!   NAME; the lab plan's steps (`Step::new(&["NAME", …])`, `argv: ["NAME", …]`); `ip netns exec
//!   NS NAME`; `need::tool(_, "NAME", …)`; and the literal arguments passed to a function that
//!   hands its parameter to
//!   `Command::new`. A `Command::new(EXPR)` that is none of these and not wirespeed itself
//!   must say what it starts in a `// starts: NAME …` comment just above it (words after `;`
//!   or `(` are for people; `// starts: by path` for programs started by their full path,
//!   which nothing installs);
//! - shell scripts: the first word of each simple command (keywords, builtins, the script's own
//!   functions, variables and paths aside), and every script's `#!` interpreter;
//! - Python scripts: `subprocess.run(["NAME", …])` and its siblings, and the `#!` interpreter.
//!
//! A second test checks the list against this machine's packages with dpkg: a program that is
//! installed comes from the package the list names (or one it depends on), and one marked
//! `essential` from a package of Debian's Essential set. Under CI (setup has run) every listed
//! program must be installed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;

/// One line of the list in `scripts/setup`.
#[derive(Debug)]
struct Listed {
    package: String,
    essential: bool,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rel(path: &Path) -> String {
    path.strip_prefix(workspace())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The list in `scripts/setup` (between `<<'LIST'` and `LIST`): program → where it comes from.
fn listed() -> BTreeMap<String, Listed> {
    let text =
        std::fs::read_to_string(workspace().join("scripts/setup")).expect("read scripts/setup");
    let (_, rest) = text
        .split_once("<<'LIST'")
        .expect("scripts/setup has its list in a <<'LIST' here-document");
    let (list, _) = rest
        .split_once("\nLIST\n")
        .expect("the list ends with LIST");
    let mut out = BTreeMap::new();
    for line in list.lines().skip(1) {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let w: Vec<&str> = line.split(':').collect();
        let essential = match w.as_slice() {
            [_, _] => false,
            [_, _, "essential"] => true,
            _ => panic!("scripts/setup: want `PROGRAM:PACKAGE[:essential]`, got `{line}`"),
        };
        let prev = out.insert(
            w[0].to_string(),
            Listed {
                package: w[1].to_string(),
                essential,
            },
        );
        assert!(prev.is_none(), "scripts/setup lists {} twice", w[0]);
    }
    assert!(out.len() > 10, "scripts/setup's list reads as {out:?}");
    out
}

/// Every file under `dir` (recursively) whose name passes `keep`, `target` folders aside.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            if e.file_name() != "target" && e.file_name() != "fixtures" {
                files(&p, keep, out);
            }
        } else if t.is_file() && keep(&p) {
            out.push(p);
        }
    }
}

fn rust_sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let is_rs = |p: &Path| p.extension().is_some_and(|e| e == "rs");
    for dir in ["crates", "bench", "fuzz"] {
        files(&workspace().join(dir), &is_rs, &mut out);
    }
    // this file names the forms it looks for
    out.retain(|p| !p.ends_with("tests/cli/setup_programs.rs"));
    out
}

/// Executable text files with a `#!` line: the scripts.
fn scripts() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let has_shebang = |p: &Path| {
        std::fs::read(p).is_ok_and(|b| b.starts_with(b"#!") && !b[..b.len().min(4096)].contains(&0))
    };
    for dir in ["scripts", ".ci", "deploy", "packaging", "bench"] {
        files(&workspace().join(dir), &has_shebang, &mut out);
    }
    out
}

/// A program the code starts, and where.
#[derive(Debug)]
struct Start {
    program: String,
    at: String,
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// What `Command::new(` at byte `open` (just after the parenthesis) takes, up to its closing one.
fn call_argument(text: &str, open: usize) -> &str {
    let mut depth = 1;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return text[open..open + i].trim();
                }
            }
            _ => {}
        }
    }
    text[open..].trim()
}

/// The arguments wirespeed's own binary is started with in the tests and the CLI.
const OURS: &[&str] = &["wirespeed()", "bin()", "env!(\"CARGO_BIN_EXE_wirespeed\")"];

/// `(name, parameter index)` of the function around byte `at` when `ident` is one of its
/// parameters.
fn enclosing_parameter(text: &str, at: usize, ident: &str) -> Option<(String, usize)> {
    let fn_re = Regex::new(r"fn\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^>]*>)?\s*\(([^)]*)\)").unwrap();
    let last = fn_re.captures_iter(&text[..at]).last()?;
    let params: Vec<&str> = last[2].split(',').map(str::trim).collect();
    let k = params
        .iter()
        .position(|p| p.split(':').next().map(str::trim) == Some(ident))?;
    Some((last[1].to_string(), k))
}

/// The `// starts: …` comment within the four lines above byte `at` (or on its line).
fn annotation(text: &str, at: usize) -> Option<Vec<String>> {
    let line = line_of(text, at);
    let lines: Vec<&str> = text.lines().collect();
    let from = line.saturating_sub(5);
    lines[from..line.min(lines.len())]
        .iter()
        .rev()
        .find_map(|l| {
            let (_, rest) = l.split_once("// starts:")?;
            // names, then after `;` or `(` words for people; `by path` alone names nothing
            let names = rest.split([';', '(']).next().unwrap_or_default().trim();
            if names == "by path" {
                return Some(vec![]);
            }
            Some(names.split_whitespace().map(String::from).collect())
        })
}

/// The programs the Rust sources start; problems (a site that names nothing) go to `errors`.
fn rust_starts(errors: &mut Vec<String>) -> Vec<Start> {
    let sources: Vec<(PathBuf, String)> = rust_sources()
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap_or_default();
            (p, t)
        })
        .collect();
    let literal_forms = [
        r#"Command::new\(\s*"([^"]+)"\s*\)"#,
        r#"\.command\(\s*[^,()]+,\s*"([^"]+)""#,
        r#"Step::new\(\s*&\[\s*"([^"]+)""#,
        r#"argv:\s*(?:vec!)?\[\s*"([^"]+)""#,
        r#""exec",\s*&?[A-Za-z_][A-Za-z0-9_.]*,\s*"([^"]+)""#,
        r#"need::tool\(\s*[^,]+,\s*"([^"]+)""#,
    ]
    .map(|r| Regex::new(r).unwrap());
    let new_re = Regex::new(r"Command::new\(").unwrap();
    let ident_re = Regex::new(r"^&?([A-Za-z_][A-Za-z0-9_]*)$").unwrap();
    let mut out = Vec::new();
    // functions that pass one of their parameters to Command::new: (name, index)
    // (a helper of one file: its callers are looked for in that file)
    let mut forwarders: Vec<(usize, String, usize, String)> = Vec::new();
    let mut ours = 0;
    // a file that names clap's `Command` (and not the process one) builds commands for clap,
    // not processes: there only `process::Command::new` starts a program
    let clap_cmd = Regex::new(r"use clap::(?:\{[^}]*\bCommand\b[^}]*\}|Command\b)").unwrap();
    let process_cmd =
        Regex::new(r"use std::process::(?:\{[^}]*\bCommand\b[^}]*\}|Command\b)").unwrap();
    for (file, (path, text)) in sources.iter().enumerate() {
        let clap_only = clap_cmd.is_match(text) && !process_cmd.is_match(text);
        let clap_new = |at: usize| clap_only && !text[..at].ends_with("process::");
        let here = |at: usize| format!("{}:{}", rel(path), line_of(text, at));
        for (k, re) in literal_forms.iter().enumerate() {
            for c in re.captures_iter(text) {
                let m = c.get(1).unwrap();
                if k == 0 && clap_new(c.get(0).unwrap().start()) {
                    continue;
                }
                out.push(Start {
                    program: m.as_str().to_string(),
                    at: here(m.start()),
                });
            }
        }
        for m in new_re.find_iter(text) {
            if clap_new(m.start()) {
                continue;
            }
            let arg = call_argument(text, m.end());
            if arg.starts_with('"') {
                continue;
            }
            // `wirespeed()`, also as `crate::agent_common::wirespeed()`
            let last = arg.rsplit("::").next().unwrap_or(arg);
            if OURS.iter().any(|o| arg.starts_with(o) || last == *o) {
                ours += 1;
                continue;
            }
            if let Some(names) = annotation(text, m.start()) {
                out.extend(names.into_iter().map(|program| Start {
                    program,
                    at: here(m.start()),
                }));
                continue;
            }
            let param = ident_re
                .captures(arg)
                .and_then(|c| enclosing_parameter(text, m.start(), &c[1]));
            match param {
                Some((name, k)) => forwarders.push((file, name, k, here(m.start()))),
                None => errors.push(format!(
                    "{}: Command::new({arg}) starts a program this test cannot name: say which \
                     above it (`// starts: NAME …`, or `// starts: by path`)",
                    here(m.start())
                )),
            }
        }
    }
    if ours > 0 {
        out.push(Start {
            program: "wirespeed".into(),
            at: format!("{ours} places"),
        });
    }
    for (file, name, k, site) in forwarders {
        let call_re = Regex::new(&format!(r"\b{name}\(")).unwrap();
        let mut found = 0;
        let (path, text) = &sources[file];
        for m in call_re.find_iter(text) {
            // the definition itself
            if text[..m.start()].trim_end().ends_with("fn") {
                continue;
            }
            let args = call_argument(text, m.end());
            let Some(a) = split_top_level(args).into_iter().nth(k) else {
                continue;
            };
            if let Some(lit) = a.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                found += 1;
                out.push(Start {
                    program: lit.to_string(),
                    at: format!("{}:{}", rel(path), line_of(text, m.start())),
                });
            }
        }
        if found == 0 {
            errors.push(format!(
                "{site}: {name}() passes its parameter to Command::new, but no caller names the \
                 program literally: say which above it (`// starts: NAME …`)"
            ));
        }
    }
    out
}

/// `a, f(b, c), "d"` → `["a", "f(b, c)", "\"d\""]`.
fn split_top_level(args: &str) -> Vec<&str> {
    let (mut depth, mut from, mut out, mut quoted) = (0i32, 0, Vec::new(), false);
    for (i, c) in args.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '{' if !quoted => depth += 1,
            ')' | ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(args[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(args[from..].trim());
    out
}

/// Shell words that are not programs: keywords and builtins.
const SHELL_WORDS: &[&str] = &[
    "[", "[[", "]]", "test", "echo", "printf", "read", "local", "export", "set", "shift", "exit",
    "return", "cd", "source", ".", "eval", "trap", "wait", "true", "false", "case", "esac", "for",
    "in", "fi", "done", "declare", "unset", "command", "getopts", "break", "continue", "let",
    "type", "hash", "ulimit", "umask", "readonly", "mapfile", "select", "function", "}", "{", ";;",
    "exec", ":",
];

/// Words that run the command after them.
const PREFIX_WORDS: &[&str] = &[
    "!", "then", "do", "else", "elif", "if", "while", "until", "time",
];

/// The interpreter of a `#!` line: `#!/usr/bin/env python3` → python3, `#!/bin/sh` → sh.
fn interpreter(first_line: &str) -> Option<String> {
    let rest = first_line.strip_prefix("#!")?;
    let mut w = rest.split_whitespace();
    let prog = w.next()?;
    let name = prog.rsplit('/').next()?;
    if name == "env" {
        w.next().map(String::from)
    } else {
        Some(name.to_string())
    }
}

fn shell_starts(path: &Path, text: &str) -> Vec<Start> {
    let at = |n: usize| format!("{}:{}", rel(path), n + 1);
    let func_re = Regex::new(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)").unwrap();
    let heredoc_re = Regex::new(r#"<<-?\s*['"]?([A-Za-z_]+)['"]?"#).unwrap();
    let var_re = Regex::new(r"\$\{[^}]*\}").unwrap();
    let arith_re = Regex::new(r"\$\(\([^)]*\)\)").unwrap();
    let word_re = Regex::new(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$").unwrap();
    let functions: BTreeSet<String> = text
        .lines()
        .filter_map(|l| func_re.captures(l).map(|c| c[1].to_string()))
        .collect();
    let mut out = Vec::new();
    let mut heredoc: Option<String> = None;
    for (n, raw) in text.lines().enumerate() {
        if let Some(tag) = &heredoc {
            if raw.trim() == tag {
                heredoc = None;
            }
            continue;
        }
        if n == 0 {
            if let Some(p) = interpreter(raw) {
                out.push(Start {
                    program: p,
                    at: at(n),
                });
            }
            continue;
        }
        if let Some(c) = heredoc_re.captures(raw) {
            heredoc = Some(c[1].to_string());
        }
        let line = strip_shell_comment(raw);
        let line = var_re.replace_all(&line, "$$V");
        // arithmetic is no command
        let line = arith_re.replace_all(&line, "$$V");
        // quoted text is arguments: blank it so its words are not read as commands
        let line = blank_quotes(&line);
        let line = line
            .replace("$(", ";")
            .replace('`', ";")
            .replace("&&", ";")
            .replace("||", ";")
            .replace(['|', '(', ')', '{', '}'], " ; ");
        for segment in line.split(';') {
            let mut words = segment.split_whitespace().peekable();
            while let Some(w) = words.peek() {
                if PREFIX_WORDS.contains(w) || w.contains('=') && !w.starts_with('=') {
                    words.next();
                } else {
                    break;
                }
            }
            let Some(w) = words.next() else { continue };
            let not_a_program = SHELL_WORDS.contains(&w)
                || functions.contains(w)
                || !word_re.is_match(w)
                || w.chars().all(|c| c.is_ascii_digit());
            if !not_a_program {
                out.push(Start {
                    program: w.to_string(),
                    at: at(n),
                });
            }
        }
    }
    out
}

/// A shell line without its `# comment`.
fn strip_shell_comment(line: &str) -> String {
    let (mut out, mut quote, mut prev) = (String::new(), None, ' ');
    for c in line.chars() {
        match (quote, c) {
            (None, '#') if prev.is_whitespace() || prev == ';' => break,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            _ => {}
        }
        out.push(c);
        prev = c;
    }
    out
}

/// Quoted strings replaced by a placeholder word (their `$(…)` aside: those run commands).
fn blank_quotes(line: &str) -> String {
    let (mut out, mut quote) = (String::new(), None);
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                out.push_str(" $Q ");
            }
            None => out.push(c),
            Some(q) if c == q => quote = None,
            // a command substitution inside double quotes still runs
            Some('"') if c == '$' && chars.get(i + 1) == Some(&'(') => {
                let mut depth = 0;
                while i < chars.len() {
                    match chars[i] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                out.push(')');
                                break;
                            }
                        }
                        _ => {}
                    }
                    out.push(chars[i]);
                    i += 1;
                }
            }
            Some(_) => {}
        }
        i += 1;
    }
    out
}

fn python_starts(path: &Path, text: &str) -> Vec<Start> {
    let re =
        Regex::new(r#"subprocess\.(?:run|Popen|call|check_call|check_output)\(\s*\[\s*"([^"]+)""#)
            .unwrap();
    let mut out: Vec<Start> = text
        .lines()
        .next()
        .and_then(interpreter)
        .map(|p| Start {
            program: p,
            at: format!("{}:1", rel(path)),
        })
        .into_iter()
        .collect();
    for c in re.captures_iter(text) {
        let m = c.get(1).unwrap();
        out.push(Start {
            program: m.as_str().to_string(),
            at: format!("{}:{}", rel(path), line_of(text, m.start())),
        });
    }
    out
}

fn all_starts() -> (Vec<Start>, Vec<String>) {
    let mut errors = Vec::new();
    let mut starts = rust_starts(&mut errors);
    for path in scripts() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let first = text.lines().next().unwrap_or_default();
        if interpreter(first).is_some_and(|i| i.starts_with("python")) {
            starts.extend(python_starts(&path, &text));
        } else {
            starts.extend(shell_starts(&path, &text));
        }
    }
    (starts, errors)
}

#[test]
fn every_program_the_code_starts_is_installed_by_setup() {
    let listed = listed();
    let (mut starts, mut errors) = all_starts();
    // this file is not read (it names the forms it looks for); what it starts itself
    starts.extend(["dpkg", "dpkg-query", "python3"].map(|p| Start {
        program: p.into(),
        at: "crates/cli/tests/cli/setup_programs.rs".into(),
    }));
    // the reader finds what it should: a few programs known to be started in several ways
    let names: BTreeSet<&str> = starts.iter().map(|s| s.program.as_str()).collect();
    for known in [
        "iperf3", "ip", "tc", "nft", "ping", "sysctl", "python3", "bash", "apt-get",
    ] {
        assert!(
            names.contains(known),
            "the reader no longer finds `{known}` (started in several places): it has lost a form"
        );
    }
    for s in &starts {
        if !listed.contains_key(&s.program) {
            errors.push(format!(
                "{} starts `{}`, which scripts/setup does not list: add `{}:PACKAGE` there \
                 so scripts/setup installs it on a new machine",
                s.at, s.program, s.program
            ));
        }
    }
    // and the list names nothing that nothing starts (a py- module is imported, not started)
    for name in listed.keys() {
        if !name.starts_with("py-") && !names.contains(name.as_str()) {
            errors.push(format!(
                "scripts/setup lists `{name}`, which nothing starts any more"
            ));
        }
    }
    errors.sort();
    errors.dedup();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The reader itself: each form, on text written for it.
#[test]
fn the_reader_finds_each_way_of_starting_a_program() {
    let sh = "#!/usr/bin/env bash\n\
              # ping is in a comment\n\
              f() { true; }\n\
              X=1 apt-get install -y \"$p\" | grep -q ok && f\n\
              if ! cargo deb --version >/dev/null; then echo \"run nft\"; fi\n\
              out=$(sort -u \"$skips\")\n\
              case $1 in\n  py-*) python3 -c \"import x\" ;;\nesac\n\
              cat <<EOF\nnot-a-program here\nEOF\n\
              [ -x \"$b\" ] || exit 1\n";
    let got: Vec<String> = shell_starts(Path::new("s"), sh)
        .into_iter()
        .map(|s| s.program)
        .collect();
    assert_eq!(
        got,
        ["bash", "apt-get", "grep", "cargo", "sort", "python3", "cat"],
        "{sh}"
    );
    let py =
        "#!/usr/bin/env python3\nsubprocess.run([\"ip\", \"link\"])\nsubprocess.Popen([BIN])\n";
    let got: Vec<String> = python_starts(Path::new("p"), py)
        .into_iter()
        .map(|s| s.program)
        .collect();
    assert_eq!(got, ["python3", "ip"]);
    assert_eq!(
        split_top_level(r#"a, f(b, c), "d, e""#),
        ["a", "f(b, c)", r#""d, e""#]
    );
    let rs = "fn sh(cmd: &str, args: &[&str]) {\n    Command::new(cmd).args(args);\n}\n";
    assert_eq!(
        enclosing_parameter(rs, rs.find("Command").unwrap(), "cmd"),
        Some(("sh".into(), 0))
    );
}

/// The path `command -v NAME` would run, if any.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The package dpkg says owns `path` (or its other half under Debian's merged /usr).
fn owner(path: &Path) -> Option<String> {
    let s = path.to_string_lossy().to_string();
    let twin = if let Some(rest) = s.strip_prefix("/usr") {
        rest.to_string()
    } else {
        format!("/usr{s}")
    };
    for p in [s, twin] {
        let out = Command::new("dpkg").args(["-S", &p]).output().ok()?;
        if !out.status.success() {
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if let Some(line) = text.lines().find(|l| !l.starts_with("diversion ")) {
            let pkg = line.split(':').next().unwrap_or_default().trim();
            return Some(pkg.split(',').next().unwrap_or_default().trim().to_string());
        }
    }
    None
}

fn dpkg_field(package: &str, field: &str) -> String {
    Command::new("dpkg-query")
        .args(["-W", &format!("-f=${{{field}}}"), package])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default()
}

#[test]
fn the_list_names_the_packages_the_programs_come_from() {
    let me = "the_list_names_the_packages_the_programs_come_from";
    if Command::new("dpkg").arg("--version").output().is_err() {
        crate::need::unavailable(me, "dpkg is missing (not a Debian machine)");
        return;
    }
    let mut errors = Vec::new();
    for (name, l) in listed() {
        // ours, the toolchain's, `cargo install`'s: no Debian package to check
        if l.package.starts_with('@') {
            continue;
        }
        // a Python module (from Debian or PyPI): importable after setup
        if let Some(module) = name.strip_prefix("py-") {
            let ok = Command::new("python3")
                .args(["-c", &format!("import {module}")])
                .output()
                .is_ok_and(|o| o.status.success());
            if !ok && crate::need::in_ci() {
                errors.push(format!(
                    "{name}: python3 cannot import {module} after setup"
                ));
            }
            continue;
        }
        if l.package.starts_with("pypi=") {
            continue;
        }
        let Some(path) = on_path(&name) else {
            if crate::need::in_ci() {
                errors.push(format!(
                    "{name} ({}) is not installed after setup",
                    l.package
                ));
            }
            continue;
        };
        let real = std::fs::canonicalize(&path).unwrap_or(path.clone());
        // Debian's folders; /usr/local and the like hold what was installed by other means
        let debian = |p: &Path| {
            ["/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/usr/lib/"]
                .iter()
                .any(|d| p.starts_with(d))
        };
        if !debian(&path) && !debian(&real) {
            eprintln!(
                "{name}: {} is not from a Debian package here, not checked",
                path.display()
            );
            continue;
        }
        let Some(pkg) = owner(&path).or_else(|| owner(&real)) else {
            errors.push(format!(
                "{name}: dpkg knows no package for {}",
                path.display()
            ));
            continue;
        };
        // `A|B`: either package may provide it (setup installs A)
        let alternatives: Vec<&str> = l.package.split('|').collect();
        let via_dependency = alternatives.iter().any(|a| {
            dpkg_field(a, "Depends")
                .split([',', '|'])
                .any(|d| d.split_whitespace().next() == Some(pkg.as_str()))
        });
        if !alternatives.contains(&pkg.as_str()) && !via_dependency {
            errors.push(format!(
                "{name}: {} comes from {pkg}, but scripts/setup says {}",
                path.display(),
                l.package
            ));
        }
        if l.essential && dpkg_field(&l.package, "Essential").trim() != "yes" {
            errors.push(format!(
                "{name}: scripts/setup marks {} essential, but it is not in Debian's Essential set",
                l.package
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
