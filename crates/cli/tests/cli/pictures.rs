//! `wirespeed report`, `diff` and the `--html` / `--csv` options end to end: real results
//! (a loopback test, a `--repeat 5`, a sweep against a server started here, a latency matrix,
//! doctor on the 9900X fixture) rendered and opened in headless Chromium, which must log no
//! console message (the page's Content-Security-Policy turns any attempted fetch into one);
//! a control page that does try a fetch proves the check sees it.
//!
//! Without Chromium the browser half says `SKIP:`; with the environment variable `CI` set it
//! fails instead. Set `WIRESPEED_SCREENS=DIR` to keep the screenshots.

use crate::measure_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use measure_common::{assert_success, online_cpus, start_server, wirespeed, ws};

fn fixture(name: &str) -> String {
    crate::host_common::fixtures()
        .join(name)
        .display()
        .to_string()
}

fn recorded(name: &str) -> String {
    format!("{}/../report/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The browser, or `None` after saying why the caller skips (a failure under CI).
fn chromium(test: &str) -> Option<&'static str> {
    match Command::new("chromium").arg("--version").output() {
        Ok(o) if o.status.success() => Some("chromium"),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: chromium is not installed (CI installs it: apt-get install chromium)"
            );
            eprintln!("SKIP: {test}: chromium is not installed (apt-get install chromium)");
            None
        }
    }
}

/// Open `page` in headless Chromium: the DOM it built, the console lines it logged, and a
/// screenshot written to `png`.
fn open(browser: &str, page: &Path, png: &Path) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let base = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", page.display());
    let dom = measure_common::run(
        // starts: chromium
        Command::new(browser)
            .args(base)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(["--dump-dom", &url]),
        Duration::from_secs(90),
    );
    assert!(
        dom.status.success(),
        "chromium --dump-dom: {}",
        stderr(&dom)
    );
    let console: Vec<String> = stderr(&dom)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    let profile2 = tempfile::tempdir().unwrap();
    let shot = measure_common::run(
        // starts: chromium
        Command::new(browser)
            .args(base)
            .arg(format!("--user-data-dir={}", profile2.path().display()))
            .args([
                "--window-size=1280,2400",
                &format!("--screenshot={}", png.display()),
                &url,
            ]),
        Duration::from_secs(90),
    );
    assert!(
        shot.status.success(),
        "chromium --screenshot: {}",
        stderr(&shot)
    );
    let bytes = std::fs::read(png).expect("the screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000,
        "{png:?}"
    );
    (String::from_utf8_lossy(&dom.stdout).into_owned(), console)
}

fn screens_dir(tmp: &Path) -> PathBuf {
    match std::env::var_os("WIRESPEED_SCREENS") {
        Some(d) => {
            std::fs::create_dir_all(&d).unwrap();
            PathBuf::from(d)
        }
        None => tmp.to_path_buf(),
    }
}

#[test]
fn reports_of_real_results_render_in_chromium_without_console_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let p = |n: &str| t.join(n).display().to_string();

    // A real loopback test, with its page and CSV written by the client itself.
    let o = ws(&[
        "client",
        "--loopback",
        "-t",
        "3",
        "-J",
        "--html",
        &p("test.html"),
        "--csv",
        &p("test.csv"),
    ]);
    assert_success(&o, "client --loopback -t 3 -J --html --csv");
    std::fs::write(t.join("test.json"), &o.stdout).unwrap();
    let csv = std::fs::read_to_string(t.join("test.csv")).unwrap();
    assert!(
        csv.starts_with("stream,start_s,end_s,bytes,bits_per_second,"),
        "{csv}"
    );
    assert!(csv.lines().count() >= 4, "{csv}");

    let o = ws(&[
        "client",
        "--loopback",
        "-t",
        "1",
        "--repeat",
        "5",
        "-J",
        "--html",
        &p("repeat.html"),
        "--csv",
        &p("repeat.csv"),
    ]);
    assert_success(&o, "client --loopback --repeat 5 -J --html");
    std::fs::write(t.join("repeat.json"), &o.stdout).unwrap();
    let csv = std::fs::read_to_string(t.join("repeat.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        6,
        "a header and one row per run: {csv}"
    );

    let mut pages = vec!["test.html", "repeat.html"];
    if online_cpus() >= 2 {
        let (_srv, port) = start_server(&[]);
        let o = ws(&[
            "sweep",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--cpus",
            "0-1",
            "--server-cpus",
            "0-1",
            "-t",
            "1",
            "-J",
            "--html",
            &p("sweep.html"),
            "--csv",
            &p("sweep.csv"),
        ]);
        assert_success(&o, "sweep --html");
        std::fs::write(t.join("sweep.json"), &o.stdout).unwrap();
        let csv = std::fs::read_to_string(t.join("sweep.csv")).unwrap();
        assert_eq!(
            csv.lines().count(),
            5,
            "a header and one row per cell: {csv}"
        );
        pages.push("sweep.html");

        let o = ws(&[
            "latency",
            "--samples",
            "30",
            "--json",
            "--html",
            &p("latency.html"),
        ]);
        assert_success(&o, "latency --html");
        pages.push("latency.html");
    } else {
        eprintln!("SKIP: sweep and latency pages need 2 online CPUs");
    }

    let o = ws(&[
        "doctor",
        "--root",
        &fixture("crow-9900x-cx5-x4"),
        "--app-cpus",
        "6-7",
        "--json",
        "--html",
        &p("doctor.html"),
    ]);
    assert_eq!(
        code(&o),
        1,
        "doctor finds things on this fixture: {}",
        stderr(&o)
    );
    std::fs::write(t.join("doctor.json"), &o.stdout).unwrap();
    pages.push("doctor.html");

    // `report` of several documents: a comparison page.
    let o = ws(&[
        "report",
        &p("test.json"),
        &p("repeat.json"),
        &p("doctor.json"),
        "-o",
        &p("all.html"),
    ]);
    assert_success(&o, "report of three documents");
    pages.push("all.html");
    // The L3-grouped pictures: the recorded sweep and latency laid over the 9900X fixture.
    let o = ws(&[
        "report",
        &recorded("latency.json"),
        "--root",
        &fixture("crow-9900x-cx5-x4"),
        "-o",
        &p("latency-root.html"),
    ]);
    assert_success(&o, "report --root");
    pages.push("latency-root.html");

    for page in &pages {
        let html = std::fs::read_to_string(t.join(page)).unwrap();
        assert!(html.contains("Content-Security-Policy"), "{page}");
        assert!(!html.contains("<script"), "{page}");
    }

    let Some(browser) = chromium("reports_of_real_results_render_in_chromium") else {
        return;
    };
    let shots = screens_dir(t);
    // The control: a page that tries to fetch is caught by the same check.
    std::fs::write(
        t.join("control.html"),
        format!(
            "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"{}\"></head>\
             <body><img src=\"http://127.0.0.1:9/x.png\"></body></html>",
            wirespeed_report::html::CSP
        ),
    )
    .unwrap();
    let (_, console) = open(browser, &t.join("control.html"), &t.join("control.png"));
    assert!(
        console
            .iter()
            .any(|l| l.contains("Content Security Policy")),
        "the control page's blocked fetch must show on the console: {console:?}"
    );
    for page in &pages {
        let png = shots.join(page.replace(".html", ".png"));
        let (dom, console) = open(browser, &t.join(page), &png);
        assert!(console.is_empty(), "{page}: console: {console:?}");
        assert!(dom.contains("<svg"), "{page}: no SVG in the DOM");
        assert!(dom.contains("wirespeed report"), "{page}");
    }
}

/// A real loopback test's own page: its CPUs over time (busy and softirq, a column per
/// interval, the CPUs that ran the workers named) and its host's topology with the CPUs that
/// ran the workers marked — drawn once, both ends being this host.
#[test]
fn a_loopback_tests_page_has_its_cpus_over_time_and_its_topology() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("test.html");
    let o = ws(&[
        "client",
        "--loopback",
        "-t",
        "2",
        "--html",
        &page.display().to_string(),
    ]);
    assert_success(&o, "client --loopback -t 2 --html");
    let html = std::fs::read_to_string(&page).unwrap();
    for want in [
        "CPU busy (all but idle) per interval on ",
        "CPU softirq per interval on ",
        "(both ends)",
        "aria-label=\"topology\"",
        "Topology of ",
        "ran the workers</span>",
    ] {
        assert!(html.contains(want), "missing {want:?}");
    }
    assert_eq!(
        html.matches("aria-label=\"topology\"").count(),
        1,
        "one host, one drawing"
    );
    // A column per interval: the first second and the one after it. Their bounds are when the
    // ticks ran (`0–1 s`, or `0–1.01 s` on a busy host), so only where each column starts is
    // checked: at 0 and at the first interval's end, a second or a little later.
    let cells = |from: &str| html.matches(from).count();
    assert!(cells(", 0–1") >= 2, "the first interval's cells");
    assert!(
        cells(", 1–2") + cells(", 1.0") >= 2,
        "the second interval's cells"
    );
    assert!(
        html.contains("app · CPU ") || html.contains("app+irq · CPU "),
        "a worker's CPU named"
    );
}

#[test]
fn unreadable_and_unknown_documents_get_one_line_and_their_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::write(t.join("other.json"), br#"{"hello": "world"}"#).unwrap();
    std::fs::write(t.join("garbage.json"), b"\x00\x01 not json").unwrap();
    std::fs::write(t.join("deep.json"), "[".repeat(200_000)).unwrap();
    let cases: [(&str, Vec<String>, i32); 6] = [
        (
            "unknown kind",
            vec![t.join("other.json").display().to_string()],
            8,
        ),
        (
            "not JSON",
            vec![t.join("garbage.json").display().to_string()],
            8,
        ),
        (
            "nested too deep",
            vec![t.join("deep.json").display().to_string()],
            8,
        ),
        (
            "missing",
            vec![t.join("missing.json").display().to_string()],
            7,
        ),
        ("a directory", vec![t.display().to_string()], 7),
        (
            "CSV of a doctor report (every other kind has one)",
            vec![t.join("doctor.json").display().to_string(), "--csv".into()],
            8,
        ),
    ];
    let doctor = ws(&["doctor", "--root", &fixture("crow-9900x-cx5-x4"), "--json"]);
    std::fs::write(t.join("doctor.json"), &doctor.stdout).unwrap();
    for (what, args, want) in cases {
        let mut all = vec!["report".to_string()];
        all.extend(args);
        let o = measure_common::run(
            Command::new(wirespeed()).args(&all),
            Duration::from_secs(30),
        );
        assert_eq!(code(&o), want, "{what}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.starts_with("wirespeed: "), "{what}: {err}");
    }
    let o = ws(&["diff", &recorded("test.json"), &recorded("sweep.json")]);
    assert_eq!(code(&o), 8, "{}", stderr(&o));
}

/// Issue 22's amplification, bounded: a file of zeros made `report` and `diff` hold a JSON
/// value per zero (30 million zeros in 57 MiB: 3.0 GB), and several files multiplied it.
/// Values are capped before any is kept: one array past the cap, and documents that fit one by
/// one but not together, are refused in one line.
#[test]
fn report_and_diff_cap_values_across_documents() {
    let t = tempfile::tempdir().unwrap();
    let write = |name: &str, rows: usize, per_row: usize| -> String {
        let row = format!("[{}]", vec!["0"; per_row].join(","));
        let body = format!(
            "{{\"start\":{{}},\"intervals\":[],\"end\":{{}},\"padding\":[{}]}}",
            vec![row.as_str(); rows].join(",")
        );
        let p = t.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let long = write("long.json", 1, 100_001);
    // 0.8 M values each (under a key the reader ignores): one fits, three together do not;
    // 1.1 M each: two do not
    let a = write("a.json", 8, 100_000);
    let b = write("b.json", 11, 100_000);
    let o = ws(&["report", &a]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for (what, cmd, want) in [
        (
            "one long array",
            vec!["report", &long],
            "more than 100000 elements",
        ),
        (
            "three documents",
            vec!["report", &a, &a, &a],
            "too many values",
        ),
        ("diff", vec!["diff", &b, &b], "too many values"),
    ] {
        let o = measure_common::run(
            Command::new(wirespeed()).args(&cmd),
            Duration::from_secs(120),
        );
        let err = stderr(&o);
        assert_eq!(code(&o), 8, "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains(want), "{what}: {err}");
    }
}

#[test]
fn report_csv_of_a_recorded_sweep() {
    let o = ws(&["report", "--csv", &recorded("sweep.json")]);
    assert_success(&o, "report --csv");
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.starts_with("client_cpu,server_cpu,median_bits_per_second,"),
        "{s}"
    );
    assert_eq!(s.lines().count(), 5);
}

/// Issue 37, item 5, end to end: a sweep whose cells' errors are planted formulas (and one
/// negative throughput) through `wirespeed report --csv`: no cell a spreadsheet reads starts a
/// formula, each error is its text behind a `'`, and the negative number stays a bare number.
#[test]
fn report_csv_writes_no_cell_a_spreadsheet_runs() {
    let planted = [
        "=HYPERLINK(\"http://evil.example\",\"x\")",
        "-1+cmd|' /C calc'!A0",
        "@SUM(1)",
        "+1",
    ];
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(recorded("sweep.json")).unwrap()).unwrap();
    let mut k = 0;
    for row in doc["matrix"]["cells"].as_array_mut().unwrap() {
        for cell in row.as_array_mut().unwrap() {
            cell["error"] = planted[k % planted.len()].into();
            if k == 0 {
                cell["runs"] = serde_json::json!([-5.5]);
                cell["median"] = serde_json::json!(-5.5);
            }
            k += 1;
        }
    }
    for tab_or_cr in ["\t=1", "\r=1"] {
        doc["matrix"]["cells"][1][1]["error"] = tab_or_cr.into();
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("planted.json");
        std::fs::write(&f, doc.to_string()).unwrap();
        let o = ws(&["report", "--csv", &f.display().to_string()]);
        assert_success(&o, "report --csv");
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        // as a spreadsheet's import splits it: quoted fields keep their commas and line breaks
        let mut cells: Vec<Vec<String>> = vec![vec![String::new()]];
        let mut quoted = false;
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            let row = cells.last_mut().unwrap();
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    chars.next();
                    row.last_mut().unwrap().push('"');
                }
                '"' => quoted = !quoted,
                ',' if !quoted => row.push(String::new()),
                '\n' if !quoted => cells.push(vec![String::new()]),
                c => row.last_mut().unwrap().push(c),
            }
        }
        cells.pop(); // after the last line end
        assert_eq!(cells.len(), 5, "{s}");
        for cell in cells.iter().flatten() {
            if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                assert!(
                    cell.parse::<f64>().is_ok(),
                    "a cell that runs: {cell:?} in {s}"
                );
            }
        }
        let errors: Vec<&str> = cells[1..].iter().map(|r| r[5].as_str()).collect();
        assert_eq!(
            errors,
            [
                format!("'{}", planted[0]),
                format!("'{}", planted[1]),
                format!("'{}", planted[2]),
                format!("'{tab_or_cr}"),
            ],
            "{s}"
        );
        assert_eq!(&cells[1][2], "-5.5", "{s}");
        assert_eq!(&cells[1][4], "-5.5", "{s}");
    }
}

#[test]
fn diff_of_two_placements_reports_the_change_and_gates_on_the_threshold() {
    if online_cpus() < 2 {
        eprintln!("SKIP: diff of two -A placements needs 2 online CPUs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for cpu in ["0", "1"] {
        let o = ws(&["client", "--loopback", "-t", "1", "-A", cpu, "-J"]);
        assert_success(&o, "client -A");
        let f = tmp.path().join(format!("a{cpu}.json"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f.display().to_string());
    }
    let o = ws(&["diff", &files[0], &files[1], "--threshold", "0"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("throughput: "), "{out}");
    assert!(out.contains("setup: CPUs: local CPU 0"), "{out}");
    assert!(out.contains("-> local CPU 1"), "{out}");
    assert_eq!(code(&o), 9, "past a 0 % threshold: {out}{}", stderr(&o));
    let o = ws(&["diff", &files[0], &files[1], "--threshold", "100000"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = ws(&["diff", &files[0], &files[1]]);
    assert_eq!(code(&o), 0, "without --threshold diff only reports");
}

/// The y-axis labels of each chart captioned `caption` in `page`, in page order.
fn y_labels(page: &str, caption: &str) -> Vec<Vec<String>> {
    page.split(&format!("<figcaption>{caption}</figcaption>"))
        .skip(1)
        .map(|fig| {
            let svg = fig.split("</svg>").next().unwrap_or("");
            svg.split("text-anchor=\"end\">")
                .skip(1)
                .map(|t| t.split('<').next().unwrap_or("").to_string())
                .collect()
        })
        .collect()
}

#[test]
fn diff_names_the_setup_that_changed_and_side_by_side_shares_one_scale() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, args) in [
        ("one.json", &["-P", "1"][..]),
        ("two.json", &["-P", "2", "-Z", "-l", "64K", "-b", "2G"][..]),
    ] {
        let mut a = vec!["client", "--loopback", "-t", "2", "-J"];
        a.extend_from_slice(args);
        let o = ws(&a);
        assert_success(&o, &a.join(" "));
        let f = tmp.path().join(name);
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f.display().to_string());
    }
    let o = ws(&["diff", &files[0], &files[1]]);
    assert_success(&o, "diff");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("setup: streams (-P): 1 -> 2"), "{out}");
    assert!(out.contains("setup: block size (-l): "), "{out}");
    assert!(out.contains("128 KBytes -> 64.0 KBytes"), "{out}");
    assert!(
        out.contains("setup: bitrate (-b): unlimited -> 2.00 Gbit/s"),
        "{out}"
    );
    assert!(
        out.contains("setup: send path: ") && out.contains("-> sendfile"),
        "{out}"
    );
    assert!(out.contains("note: one run each"), "{out}");
    assert!(out.contains("--repeat"), "{out}");
    // the same file twice: the same setup, still one run each
    let o = ws(&["diff", &files[0], &files[0]]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("setup: the same"), "{out}");

    // side by side: one y scale for each chart (a -b 2G test beside an unlimited one)
    let page = tmp.path().join("both.html");
    let o = ws(&["report", &files[0], &files[1], "-o", page.to_str().unwrap()]);
    assert_success(&o, "report A B");
    let html = std::fs::read_to_string(&page).unwrap();
    let tp = y_labels(&html, "Throughput per stream and sum");
    assert_eq!(tp.len(), 2, "{tp:?}");
    assert_eq!(tp[0], tp[1], "two scales side by side");
    assert!(html.contains("setup changed") && html.contains("streams (-P)"));
    if let Some(browser) =
        chromium("diff_names_the_setup_that_changed_and_side_by_side_shares_one_scale")
    {
        let png = screens_dir(tmp.path()).join("side-by-side.png");
        let (_dom, console) = open(browser, &page, &png);
        assert!(console.is_empty(), "{console:?}");
    }
}

#[test]
fn diff_of_doctor_reports_names_findings_added_and_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for name in ["crow-9900x-cx5-x4", "crow-9900x-cx5-tuned"] {
        let o = ws(&["doctor", "--root", &fixture(name), "--json"]);
        let f = tmp.path().join(format!("{name}.json"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f.display().to_string());
    }
    let o = ws(&["diff", &files[0], &files[1], "--threshold", "5"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("finding gone: "), "{out}");
    let o2 = ws(&["diff", &files[1], &files[0], "--threshold", "5"]);
    let out2 = String::from_utf8_lossy(&o2.stdout);
    assert!(out2.contains("finding added: "), "{out2}");
    assert_eq!(code(&o2), 9, "a new finding is past any threshold: {out2}");
    if !out.contains("finding added: ") {
        assert_eq!(code(&o), 0, "only findings gone: {out}");
    }
}

/// `report --csv` of a latency matrix is the CSV `latency --csv` writes: one exporter per kind,
/// one row per measured pair.
#[test]
fn report_csv_of_a_latency_matrix() {
    let o = ws(&["report", &recorded("latency.json"), "--csv"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("cpu_a,cpu_b,mean_ns,stderr_ns,samples,round_trips,noisy")
    );
    let rows: Vec<&str> = lines.collect();
    assert!(!rows.is_empty(), "{out}");
    assert!(rows.iter().all(|r| r.split(',').count() == 7), "{out}");
}
