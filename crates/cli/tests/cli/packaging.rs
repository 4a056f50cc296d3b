//! What the `.deb` carries, checked without building it: `scripts/package --assets-only` writes
//! the man pages and completions from the binary, every asset the cargo-deb metadata names then
//! exists, the pages are valid roff, the bash completion loads, and the systemd unit passes
//! `systemd-analyze verify`. (Building the package itself needs cargo-deb: `scripts/package`.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn wirespeed() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wirespeed"))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// `true` if `tool` runs; otherwise a SKIP line (a failure under CI, which installs it).
fn have(tool: &str, test: &str, package: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !in_ci(),
            "{test}: {tool} is missing under CI (apt-get install {package})"
        );
        eprintln!("SKIP: {test} because {tool} is not installed (apt-get install {package})");
    }
    ok
}

fn run_ok(cmd: &mut Command, what: &str) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{what} failed ({}):\n{text}", o.status);
    text
}

/// The generated assets, in a fresh directory.
fn assets() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    run_ok(
        // starts: by path (scripts/package, read as a script)
        Command::new(workspace().join("scripts/package"))
            .arg("--assets-only")
            .arg("--bin")
            .arg(wirespeed())
            .arg("--out")
            .arg(dir.path()),
        "scripts/package --assets-only",
    );
    dir
}

/// The `assets` of `[package.metadata.deb]`: (source, destination) pairs.
fn deb_assets() -> Vec<(String, String)> {
    let manifest = std::fs::read_to_string(workspace().join("crates/cli/Cargo.toml")).unwrap();
    let start = manifest
        .find("[package.metadata.deb]")
        .expect("crates/cli/Cargo.toml has [package.metadata.deb]");
    let meta = &manifest[start..];
    let list = &meta[meta.find("assets = [").expect("deb assets")..];
    let list = &list[..list.find("\n]").expect("end of the assets list")];
    list.lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("[\"")?;
            let mut parts = l.split("\", \"");
            Some((parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .collect()
}

#[test]
fn every_deb_asset_is_generated_or_in_the_tree() {
    let dir = assets();
    let assets = deb_assets();
    for want in [
        "usr/bin/",
        "usr/share/man/man1/",
        "usr/share/bash-completion/completions/wirespeed",
        "usr/share/zsh/vendor-completions/",
        "usr/share/fish/vendor_completions.d/",
    ] {
        assert!(
            assets.iter().any(|(_, d)| d == want),
            "the .deb installs nothing to {want}: {assets:?}"
        );
    }
    for (src, _) in &assets {
        if src == "target/release/wirespeed" {
            continue;
        }
        let (base, rel) = match src.strip_prefix("target/release/package/") {
            Some(rel) => (dir.path().to_path_buf(), rel.to_string()),
            None => (workspace().join("crates/cli"), src.clone()),
        };
        let matches: Vec<PathBuf> = match rel.strip_suffix("*.1.gz").or(rel.strip_suffix("*.md")) {
            Some(d) => std::fs::read_dir(base.join(d))
                .unwrap_or_else(|e| panic!("{src}: {e}"))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect(),
            None => vec![base.join(&rel)]
                .into_iter()
                .filter(|p| p.is_file())
                .collect(),
        };
        assert!(!matches.is_empty(), "deb asset {src} does not exist");
    }
    // The unit cargo-deb picks up (maintainer-scripts + systemd-units).
    assert!(workspace()
        .join("packaging/debian/wirespeed.service")
        .is_file());
}

#[test]
fn man_pages_cover_every_subcommand_and_are_valid_roff() {
    // The pages scripts/package gzips, uncompressed.
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().to_path_buf();
    run_ok(
        Command::new(wirespeed()).arg("man").arg("--dir").arg(&man),
        "wirespeed man --dir",
    );
    let packaged = assets();
    for page in std::fs::read_dir(&man).unwrap() {
        let name = page.unwrap().file_name().into_string().unwrap();
        assert!(
            packaged
                .path()
                .join("man")
                .join(format!("{name}.gz"))
                .is_file(),
            "scripts/package ships {name}.gz"
        );
    }
    let help = run_ok(Command::new(wirespeed()).arg("--help"), "wirespeed --help");
    for sub in [
        "client", "server", "doctor", "topo", "capture", "tune", "sweep", "latency",
    ] {
        assert!(help.contains(sub), "--help lists {sub}");
        let page = man.join(format!("wirespeed-{sub}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{page:?}: {e}"));
        assert!(
            text.contains(".SH OPTIONS"),
            "{page:?} has an OPTIONS section"
        );
    }
    let client = std::fs::read_to_string(man.join("wirespeed-client.1")).unwrap();
    assert!(
        client.contains("\\-\\-parallel"),
        "the client page documents -P/--parallel"
    );
    // `wirespeed man` alone prints the top-level page, the same as the file.
    let top = Command::new(wirespeed()).arg("man").output().unwrap();
    assert!(top.status.success());
    assert_eq!(
        String::from_utf8_lossy(&top.stdout),
        std::fs::read_to_string(man.join("wirespeed.1")).unwrap()
    );
    if !have("groff", "man_pages_are_valid_roff", "groff-base") {
        return;
    }
    // -k: UTF-8 input through preconv, as man does.
    for entry in std::fs::read_dir(&man).unwrap() {
        let page = entry.unwrap().path();
        let out = run_ok(
            Command::new("groff")
                .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
                .arg(&page),
            "groff",
        );
        assert!(out.trim().is_empty(), "groff warns on {page:?}:\n{out}");
    }
}

#[test]
fn completions_load_in_their_shells() {
    let dir = assets();
    let c = dir.path().join("completions");
    // bash: the script defines the completion for `wirespeed`, with the subcommands.
    let out = run_ok(
        Command::new("bash").arg("-c").arg(format!(
            "source {} && complete -p wirespeed && COMP_WORDS=(wirespeed cl) COMP_CWORD=1 && \
             _wirespeed wirespeed cl wirespeed && echo \"${{COMPREPLY[@]}}\"",
            c.join("wirespeed.bash").display()
        )),
        "bash completion",
    );
    assert!(out.contains("-F _wirespeed"), "{out}");
    assert!(out.lines().last().unwrap_or("").contains("client"), "{out}");
    let zsh = std::fs::read_to_string(c.join("_wirespeed")).unwrap();
    assert!(
        zsh.starts_with("#compdef wirespeed"),
        "zsh completion header"
    );
    if have("zsh", "zsh completion syntax", "zsh") {
        run_ok(
            Command::new("zsh").arg("-n").arg(c.join("_wirespeed")),
            "zsh -n",
        );
    }
    let fish = std::fs::read_to_string(c.join("wirespeed.fish")).unwrap();
    assert!(fish.contains("complete -c wirespeed"), "fish completion");
    if have("fish", "fish completion", "fish") {
        // fish offers the subcommands from the script alone.
        let out = run_ok(
            Command::new("fish").arg("-c").arg(format!(
                "source {}; complete -C 'wirespeed cl'",
                c.join("wirespeed.fish").display()
            )),
            "fish completion",
        );
        assert!(out.starts_with("client"), "{out}");
    }
    // Unknown shells are a usage error.
    let o = Command::new(wirespeed())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn systemd_unit_verifies() {
    if !have("systemd-analyze", "systemd_unit_verifies", "systemd") {
        return;
    }
    let unit = std::fs::read_to_string(workspace().join("packaging/debian/wirespeed.service"))
        .expect("the unit");
    assert!(unit.contains("ExecStart=/usr/bin/wirespeed server\n"));
    assert!(unit.contains("Type=exec\n"));
    // Verify the unit as shipped, with the binary under test standing in for /usr/bin/wirespeed.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wirespeed.service");
    let unit = unit.replace(
        "ExecStart=/usr/bin/wirespeed",
        &format!("ExecStart={}", wirespeed().display()),
    );
    std::fs::write(&path, unit).unwrap();
    let out = run_ok(
        Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&path),
        "systemd-analyze verify",
    );
    assert!(
        !out.contains("wirespeed.service"),
        "systemd-analyze verify complains about the unit:\n{out}"
    );
}

#[test]
fn every_page_has_exit_status_and_examples_and_shows_no_backticks() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        Command::new(wirespeed())
            .arg("man")
            .arg("--dir")
            .arg(dir.path()),
        "wirespeed man --dir",
    );
    // the README's exit-code table, row by row: `| CODE | MEANING |`
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let section = readme
        .split_once("## Exit codes")
        .map(|(_, r)| r)
        .expect("README has an Exit codes section");
    let codes: Vec<&str> = section
        .lines()
        .skip_while(|l| !l.starts_with("| 0 "))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1).map(str::trim))
        .collect();
    assert!(codes.len() >= 10, "README's exit codes: {codes:?}");
    for page in std::fs::read_dir(dir.path()).unwrap() {
        let path = page.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains('`'), "{name} shows a backtick");
        let status = text
            .split_once(".SH \"EXIT STATUS\"")
            .map(|(_, r)| r.split(".SH ").next().unwrap_or_default())
            .unwrap_or_else(|| panic!("{name} has no EXIT STATUS"));
        let listed: Vec<String> = status
            .lines()
            .filter_map(|l| {
                l.strip_prefix("\\fB")?
                    .strip_suffix("\\fR")
                    .map(String::from)
            })
            .collect();
        assert_eq!(listed, codes, "{name}: EXIT STATUS against README's table");
        // every command's own page (not the lab's and tune's sub-subcommands) has examples
        if name.matches('-').count() <= 1 {
            assert!(text.contains(".SH EXAMPLES"), "{name} has no EXAMPLES");
        }
    }
}
