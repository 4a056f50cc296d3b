//! What the `.deb` carries, checked without building it: `scripts/package --assets-only` writes
//! the man pages and completions from the binary, every asset the cargo-deb metadata names then
//! exists, the pages are valid roff, the bash completion loads, and the systemd unit passes
//! `systemd-analyze verify`. (Building the .deb itself needs cargo-deb: `scripts/package`.)
//! The RPM is built for real, around the binary under test (`scripts/package --rpm --bin`,
//! rpmbuild from Debian's `rpm`), queried (`rpm -qip`, `-qlp`, `--requires`, `--scripts`) and
//! installed into a scratch root (`rpm --root DIR -i --nodeps --noscripts`).

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

/// `rpm ARGS` (a query or a scratch-root install); its stdout.
fn rpm(args: &[&str], rpm_file: &Path) -> String {
    let o = Command::new("rpm")
        .args(args)
        .arg(rpm_file)
        .output()
        .expect("rpm");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "rpm {args:?}: {err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn rpm_carries_binary_pages_completions_and_the_debs_sandboxed_unit() {
    let me = "rpm_carries_binary_pages_completions_and_the_debs_sandboxed_unit";
    if !crate::need::tool(me, "rpmbuild", "--version", "rpm") {
        return;
    }
    // scripts/package --rpm around the binary under test (CI's debug build: the release build
    // and a real run are `scripts/package --rpm`, as README's Install says).
    let dir = tempfile::tempdir().unwrap();
    // starts: by path (scripts/package, read as a script)
    let o = Command::new(workspace().join("scripts/package"))
        .args(["--rpm", "--bin"])
        .arg(wirespeed())
        .arg("--out")
        .arg(dir.path())
        .output()
        .expect("scripts/package --rpm");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "scripts/package --rpm: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let version = env!("CARGO_PKG_VERSION");
    let file = dir.path().join(format!(
        "wirespeed-{version}-1.{}.rpm",
        std::env::consts::ARCH
    ));
    assert!(file.is_file(), "no {file:?}:\n{out}");
    let printed = out.lines().last().unwrap_or("");
    assert_eq!(
        std::fs::canonicalize(printed).ok(),
        std::fs::canonicalize(&file).ok(),
        "the last line names the package"
    );

    let info = rpm(&["-qip"], &file);
    for want in [
        "Name        : wirespeed\n".to_string(),
        format!("Version     : {version}\n"),
        "Release     : 1\n".to_string(),
        format!("Architecture: {}\n", std::env::consts::ARCH),
        "License     : MIT OR Apache-2.0\n".to_string(),
    ] {
        assert!(info.contains(&want), "rpm -qip lacks {want:?}:\n{info}");
    }
    // Every file the .deb carries, at the Red Hat family's paths.
    let files = rpm(&["-qlp"], &file);
    let files: Vec<&str> = files.lines().collect();
    let man = tempfile::tempdir().unwrap();
    run_ok(
        Command::new(wirespeed())
            .arg("man")
            .arg("--dir")
            .arg(man.path()),
        "wirespeed man --dir",
    );
    let mut want = vec![
        "/usr/bin/wirespeed".to_string(),
        "/usr/lib/systemd/system/wirespeed.service".to_string(),
        "/usr/share/bash-completion/completions/wirespeed".to_string(),
        "/usr/share/zsh/site-functions/_wirespeed".to_string(),
        "/usr/share/fish/vendor_completions.d/wirespeed.fish".to_string(),
        "/usr/share/doc/wirespeed/README.md".to_string(),
    ];
    for page in std::fs::read_dir(man.path()).unwrap() {
        let name = page.unwrap().file_name().into_string().unwrap();
        want.push(format!("/usr/share/man/man1/{name}.gz"));
    }
    for w in &want {
        assert!(
            files.contains(&w.as_str()),
            "rpm -qlp lacks {w}: {files:#?}"
        );
    }
    // Its requirements come from the binary (glibc), not from Debian's package names.
    let requires = rpm(&["-qp", "--requires"], &file);
    assert!(requires.contains("libc.so.6()(64bit)"), "{requires}");
    // The scriptlets: the service manager reloads; an erase stops and disables the unit; the
    // unit is never enabled by the install (as the .deb); each is valid sh.
    let scripts = rpm(&["-qp", "--scripts"], &file);
    for want in [
        "postinstall scriptlet",
        "preuninstall scriptlet",
        "postuninstall scriptlet",
        "systemctl daemon-reload",
        "systemctl --no-reload disable --now wirespeed.service",
        "systemctl try-restart wirespeed.service",
    ] {
        assert!(
            scripts.contains(want),
            "rpm --scripts lacks {want:?}:\n{scripts}"
        );
    }
    assert!(!scripts.contains("enable --now"), "{scripts}");
    let mut body = String::new();
    for l in scripts.lines() {
        if l.ends_with("scriptlet (using /bin/sh):") {
            body.push('\n');
            continue;
        }
        body.push_str(l);
        body.push('\n');
    }
    run_ok(
        Command::new("sh").arg("-n").arg("-c").arg(&body),
        "sh -n on the scriptlets",
    );

    // Installed into a scratch root (no scripts: the root has no shell), the files are there and
    // intact, the binary runs, the unit is the .deb's byte for byte (the same sandbox).
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    run_ok(
        Command::new("rpm").args(["--root", r, "--dbpath", "/var/lib/rpm", "--initdb"]),
        "rpm --initdb",
    );
    rpm(
        &[
            "--root",
            r,
            "--dbpath",
            "/var/lib/rpm",
            "-i",
            "--nodeps",
            "--noscripts",
        ],
        &file,
    );
    let q = run_ok(
        Command::new("rpm").args(["--root", r, "--dbpath", "/var/lib/rpm", "-q", "wirespeed"]),
        "rpm -q in the scratch root",
    );
    assert!(q.starts_with(&format!("wirespeed-{version}-1.")), "{q}");
    run_ok(
        Command::new("rpm").args([
            "--root",
            r,
            "--dbpath",
            "/var/lib/rpm",
            "-V",
            "--nodeps",
            "wirespeed",
        ]),
        "rpm -V in the scratch root",
    );
    let v = run_ok(
        // starts: wirespeed (as the RPM installed it)
        Command::new(root.path().join("usr/bin/wirespeed")).arg("--version"),
        "the installed binary",
    );
    assert_eq!(v.trim(), format!("wirespeed {version}"));
    assert_eq!(
        std::fs::read(root.path().join("usr/lib/systemd/system/wirespeed.service")).unwrap(),
        std::fs::read(workspace().join("packaging/debian/wirespeed.service")).unwrap(),
        "the RPM's unit is the .deb's"
    );
    eprintln!("{}", info.lines().take(4).collect::<Vec<_>>().join("; "));
}

/// README's Install block: one command per line (comments cut).
fn readme_install_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let section = &readme[readme
        .find("\n## Install\n")
        .expect("README has ## Install")..];
    let block = &section[section.find("```sh\n").expect("an sh block") + 6..];
    let block = &block[..block.find("```").unwrap()];
    block
        .lines()
        .map(|l| l.split(" #").next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn readme_install_lines_match_the_scripts() {
    let v = env!("CARGO_PKG_VERSION");
    let deb_arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let rpm_arch = std::env::consts::ARCH;
    let lines = readme_install_lines();
    assert_eq!(
        lines,
        vec![
            "cargo install --locked --path crates/cli".to_string(),
            format!("scripts/package && sudo apt install ./target/debian/wirespeed_{v}-1_{deb_arch}.deb"),
            format!("scripts/package --rpm && sudo dnf install ./target/rpm/wirespeed-{v}-1.{rpm_arch}.rpm"),
            format!("scripts/image && sudo podman run -d --network host localhost/wirespeed:{v}"),
        ],
        "README's Install lines (the version and paths are the ones the scripts produce)"
    );
    // The path installs the package whose binary is wirespeed.
    let manifest = std::fs::read_to_string(workspace().join("crates/cli/Cargo.toml")).unwrap();
    assert!(manifest.contains("[[bin]]\nname = \"wirespeed\"\n"));
    // scripts/check-install runs each line's build for real (the fast forms run in this suite:
    // packaging::rpm_*, image::), and its defaults are where README says the results land.
    let check = std::fs::read_to_string(workspace().join("scripts/check-install")).unwrap();
    for l in &lines {
        let build = l.split(" && ").next().unwrap();
        assert!(
            check.lines().any(|c| c.trim() == build
                || c.trim().starts_with(&format!("{build} "))
                || c.contains(&format!("$({build} "))),
            "scripts/check-install does not run {build:?}"
        );
    }
    let package = std::fs::read_to_string(workspace().join("scripts/package")).unwrap();
    assert!(package.contains("rpmdir=\"${out:-$target_dir/rpm}\""));
    let image = std::fs::read_to_string(workspace().join("scripts/image")).unwrap();
    assert!(image.contains("tag=\"${tag:-localhost/wirespeed:$version}\""));
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
