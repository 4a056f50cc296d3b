//! A client's tune request on a wirespeed server (`sweep --irq-cpus` without `-R`, `client
//! --server-irq-cpus`), end to end on loopback.
//!
//! A tune request needs the pre-shared key on both ends: `--allow-tune` without `--psk` does not
//! start, a client without `--psk` does not send the request, and a server refuses a request
//! whose parameters its key does not verify (one log line). The refusals run against real
//! servers: without `--allow-tune` the client gets exit code 4 and one line naming the flag;
//! with it, a test over `lo` (no NIC interrupts) is refused with a clear reason. The moves themselves run against a copy of the Ryzen fixture (its ConnectX-5
//! has 12 queue IRQs) given to the server as its host state, with the interface named
//! (`--tune-iface`: the fixture has no routing table and the test runs over lo anyway). In the
//! in-process servers the kernel is EMULATED explicitly (`emulate_kernel_irq_affinity` after
//! every affinity write and every revert: the mask view and the effective affinity follow the
//! request), so the IRQs really "move" for the test; the server process of the signal test has
//! no emulation, and there tune's own writes (`smp_affinity_list`) are all that changes. After
//! every test the tree is byte-identical to before, apart from tune's journal directory.

use crate::host_common;
use crate::measure_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use measure_common::{
    assert_success, free_port, json_of, online_cpus, signal, spawn, start_server, wait_listening,
    wait_until, wirespeed, ws, HANG,
};
use wirespeed_drive::hooks::IrqTune;
use wirespeed_engine::tune::TuneConfig;
use wirespeed_engine::{ClientConfig, EngineError, NullReporter, Server, ServerConfig};
use wirespeed_host::Root;

const IFACE: &str = "enp1s0f0np0";
/// The pre-shared key of every tuning server and client here.
const KEY: &[u8] = b"server-tune-test-key-0123456789";

fn psk(key: &[u8]) -> wirespeed_protocol::psk::Psk {
    wirespeed_protocol::psk::Psk::from_file_contents(key).unwrap()
}

/// [`KEY`] in a file, for `--psk`.
fn key_file() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("wirespeed.psk");
    std::fs::write(&f, KEY).unwrap();
    let f = f.to_str().unwrap().to_string();
    (d, f)
}
/// The fixture's queue IRQs of enp1s0f0np0.
const QUEUE_IRQS: [u32; 12] = [99, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119];

fn crow() -> (tempfile::TempDir, PathBuf) {
    host_common::temp_copy(&host_common::fixtures().join("crow-9900x-cx5-x4"))
}

fn irq_file(dir: &Path, irq: u32, file: &str) -> String {
    std::fs::read_to_string(dir.join(format!("proc/irq/{irq}/{file}")))
        .unwrap()
        .trim()
        .to_string()
}

/// Every queue IRQ requested on `cpu` (and, with `effective`, delivered there).
fn all_on(dir: &Path, cpu: u32, effective: bool) -> bool {
    QUEUE_IRQS.iter().all(|&i| {
        irq_file(dir, i, "smp_affinity_list") == cpu.to_string()
            && (!effective || irq_file(dir, i, "effective_affinity_list") == cpu.to_string())
    })
}

fn assert_unchanged(before: &std::collections::BTreeMap<String, String>, dir: &Path) {
    let d = host_common::diff(before, &host_common::snapshot(dir));
    assert!(d.is_empty(), "the tree differs after the test: {d:?}");
}

/// A wirespeed server in this process, tuning the tree `dir` with the kernel emulated there,
/// holding [`KEY`].
fn tuning_server(dir: &Path) -> wirespeed_engine::ServerHandle {
    tuning_server_with(dir, Some(psk(KEY)), None)
}

fn tuning_server_with(
    dir: &Path,
    key: Option<wirespeed_protocol::psk::Psk>,
    log: Option<wirespeed_engine::server::LogHook>,
) -> wirespeed_engine::ServerHandle {
    let mut irq = IrqTune::new(Root::new(dir));
    irq.iface = Some(IFACE.into());
    irq.kernel = Some(Arc::new(|root: &Root| {
        host_common::emulate_kernel_irq_affinity(root.dir());
    }));
    let tune = TuneConfig::new(irq);
    let cfg = ServerConfig {
        bind: Some("127.0.0.1".parse().unwrap()),
        port: 0,
        interval: Duration::ZERO,
        tune: Some(tune),
        psk: key,
        log,
        ..ServerConfig::default()
    };
    Server::bind(cfg)
        .unwrap()
        .spawn(Arc::new(|_| {
            Box::new(NullReporter) as Box<dyn wirespeed_engine::Reporter>
        }))
        .unwrap()
}

fn client(port: u16, time: u32, irq_cpus: &[u32]) -> ClientConfig {
    ClientConfig {
        host: "127.0.0.1".into(),
        port,
        time,
        interval: Duration::ZERO,
        server_irq_cpus: Some(irq_cpus.iter().copied().collect()),
        psk: Some(psk(KEY)),
        ..ClientConfig::default()
    }
}

/// `wirespeed client` asking for the IRQs on `cpu` for a long test (to be killed), with the
/// key file `key`.
fn long_client(port: u16, cpu: u32, key: &str) -> measure_common::Proc {
    spawn(Command::new(wirespeed()).args([
        "client",
        "--psk",
        key,
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-t",
        "30",
        "-i",
        "0",
        "--server-irq-cpus",
        &cpu.to_string(),
    ]))
}

/// The process exited with `code` (its stderr shown otherwise).
fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn one_line_err(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "one line on stderr: {err}");
    err
}

#[test]
fn a_server_without_allow_tune_refuses_with_exit_4() {
    let (_k, key) = key_file();
    let (_srv, port) = start_server(&["-B", "127.0.0.1"]);
    let p = port.to_string();
    let out = ws(&[
        "client",
        "127.0.0.1",
        "-p",
        &p,
        "-t",
        "1",
        "--psk",
        &key,
        "--server-irq-cpus",
        "0",
    ]);
    assert_exit(&out, 4);
    let err = one_line_err(&out);
    assert!(err.contains("--allow-tune"), "{err}");
    // The sweep without -R asks the server to move its IRQs: refused at the first test.
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        &p,
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "--irq-cpus",
        "1",
        "--psk",
        &key,
        "-t",
        "1",
    ]);
    assert_exit(&out, 4);
    let err = one_line_err(&out);
    assert!(err.contains("--allow-tune") && err.contains("-R"), "{err}");
    // The server goes on serving plain tests.
    let ok = ws(&["client", "127.0.0.1", "-p", &p, "-t", "1", "-J"]);
    assert_success(&ok, "a plain test after the refusals");
}

#[test]
fn a_tune_request_needs_psk_on_both_ends() {
    let (_t, dir) = crow();
    let (_k, key) = key_file();
    let d = dir.to_str().unwrap();
    // A server (or agent) that would take tune requests without a key does not start.
    for cmd in [
        vec![
            "server",
            "-B",
            "127.0.0.1",
            "-p",
            "0",
            "--allow-tune",
            "--root",
            d,
        ],
        vec![
            "agent",
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--allow-tune",
        ],
    ] {
        let out = ws(&cmd);
        assert_exit(&out, 2);
        let err = one_line_err(&out);
        assert!(
            err.contains("--allow-tune needs --psk FILE"),
            "{cmd:?}: {err}"
        );
    }
    // A client without the key does not send the request: refused before connecting (the
    // port is closed, so a connection attempt would exit 3).
    let closed = free_port().to_string();
    let out = ws(&[
        "client",
        "127.0.0.1",
        "-p",
        &closed,
        "-t",
        "1",
        "--server-irq-cpus",
        "0",
    ]);
    assert_exit(&out, 2);
    assert!(one_line_err(&out)
        .contains("--server-irq-cpus: asking the server to move its IRQs needs --psk FILE"));
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        &closed,
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "--irq-cpus",
        "1",
        "-t",
        "1",
    ]);
    assert_exit(&out, 2);
    assert!(one_line_err(&out).contains("needs --psk FILE"));
    // With the key, the server starts.
    let (srv, port) = start_server(&[
        "-B",
        "127.0.0.1",
        "--allow-tune",
        "--root",
        d,
        "--tune-iface",
        IFACE,
        "--psk",
        &key,
    ]);
    let ok = ws(&[
        "client",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-t",
        "1",
        "--psk",
        &key,
    ]);
    assert_success(&ok, "a plain test with the key");
    drop(srv);
    let _ = key;
}

#[test]
fn a_tune_request_with_the_wrong_key_or_to_a_keyless_server_is_refused_and_logged() {
    let (_t, dir) = crow();
    let before = host_common::snapshot(&dir);
    let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = || {
        let l = Arc::clone(&lines);
        Some(wirespeed_engine::server::LogHook::new(move |line: &str| {
            l.lock().unwrap().push(line.to_string())
        }))
    };
    // A server holding KEY, a client holding another key: the parameters' tag fails.
    let srv = tuning_server_with(&dir, Some(psk(KEY)), log());
    let wrong = ClientConfig {
        psk: Some(psk(b"another-key-not-the-servers-0123")),
        ..client(srv.addr.port(), 1, &[3])
    };
    // A tuning server built without a key (the library allows the configuration; the command
    // line does not): every tune request is refused.
    let keyless = tuning_server_with(&dir, None, log());
    let to_keyless = client(keyless.addr.port(), 1, &[3]);
    for (cfg, why) in [
        (&wrong, "not verified by the pre-shared key"),
        (&to_keyless, "this server has no pre-shared key (--psk)"),
    ] {
        match wirespeed_engine::run_client(cfg, &mut NullReporter) {
            Err(EngineError::Refused(r)) => {
                let r = r.to_string();
                assert!(r.contains("tune request refused") && r.contains(why), "{r}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert_unchanged(&before, &dir);
    assert!(!dir.join("var/lib/wirespeed").exists(), "no journal either");
    // One log line per refusal, with the address.
    let l = lines.lock().unwrap().clone();
    assert_eq!(l.len(), 2, "{l:?}");
    for line in &l {
        assert!(
            line.contains("127.0.0.1") && line.contains("tune request refused"),
            "{line}"
        );
    }
    // The server with the key still takes a plain test without a tune request.
    let plain = ClientConfig {
        server_irq_cpus: None,
        psk: Some(psk(KEY)),
        ..client(srv.addr.port(), 1, &[])
    };
    wirespeed_engine::run_client(&plain, &mut NullReporter).expect("a plain test");
    srv.stop().unwrap();
    keyless.stop().unwrap();
}

#[test]
fn allow_tune_over_lo_is_refused_clearly_and_changes_nothing() {
    let (_t, dir) = crow();
    let (_k, key) = key_file();
    let before = host_common::snapshot(&dir);
    let (_srv, port) = start_server(&[
        "-B",
        "127.0.0.1",
        "--allow-tune",
        "--psk",
        &key,
        "--root",
        dir.to_str().unwrap(),
    ]);
    let p = port.to_string();
    let ask = |cpus: &str| {
        ws(&[
            "client",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "--psk",
            &key,
            "--server-irq-cpus",
            cpus,
        ])
    };
    let out = ask("3");
    assert_exit(&out, 4);
    let err = one_line_err(&out);
    assert!(err.contains("lo, which has no NIC interrupts"), "{err}");
    let out = ask("40");
    assert_exit(&out, 4);
    assert!(one_line_err(&out).contains("CPU 40: not online"));
    assert_unchanged(&before, &dir);
    assert!(!dir.join("var/lib/wirespeed").exists(), "no journal either");
    // --tune-iface and --root belong to --allow-tune.
    let o = host_common::run(&["server", "--root", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_servers_irqs_move_for_the_test_and_come_back() {
    let (_t, dir) = crow();
    let before = host_common::snapshot(&dir);
    let srv = tuning_server(&dir);
    let cfg = client(srv.addr.port(), 2, &[3]);
    let run = std::thread::spawn(move || wirespeed_engine::run_client(&cfg, &mut NullReporter));
    // While the test runs every queue IRQ sits on CPU 3 (requested and, emulated, effective).
    wait_until("IRQs on CPU 3 during the test", || all_on(&dir, 3, true));
    let r = run.join().unwrap().expect("the test runs");
    let x = r.wirespeed.as_ref().unwrap();
    let m = x.remote_irq_move.as_ref().expect("the server's IRQ move");
    assert_eq!(m.iface, IFACE, "{m:?}");
    assert_eq!(m.outcome.moved.len(), 12, "{m:?}");
    assert_eq!(m.cpus.iter().collect::<Vec<_>>(), vec![3]);
    assert!(m.outcome.elsewhere.is_empty(), "{m:?}");
    assert!(m.outcome.reverted, "reverted before the results: {m:?}");
    // Back, byte for byte, as soon as the client has its results.
    assert_unchanged(&before, &dir);
    assert_eq!(journal_count(&dir), 1);
    srv.stop().unwrap();
}

/// Journals in the tree (the directory also holds tune's `lock`).
fn journal_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("var/lib/wirespeed"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        })
        .count()
}

#[test]
fn a_killed_client_gets_the_irqs_reverted() {
    let (_t, dir) = crow();
    let before = host_common::snapshot(&dir);
    let (_k, key) = key_file();
    let srv = tuning_server(&dir);
    let c = long_client(srv.addr.port(), 8, &key);
    wait_until("IRQs on CPU 8", || all_on(&dir, 8, true));
    signal(c.pid(), "-KILL");
    let _ = c.wait_output(Duration::from_secs(5));
    wait_until("the IRQs back after the client vanished", || {
        host_common::diff(&before, &host_common::snapshot(&dir)).is_empty()
    });
    assert_unchanged(&before, &dir);
    srv.stop().unwrap();
}

#[test]
fn one_tune_change_at_a_time_and_shutdown_reverts() {
    let (_t, dir) = crow();
    let before = host_common::snapshot(&dir);
    let srv = tuning_server(&dir);
    let port = srv.addr.port();
    let (_k, key) = key_file();
    let first = long_client(port, 8, &key);
    wait_until("IRQs on CPU 8", || all_on(&dir, 8, true));
    // A second test asking for another layout meanwhile is refused.
    match wirespeed_engine::run_client(&client(port, 1, &[9]), &mut NullReporter) {
        Err(EngineError::Refused(r)) => {
            assert!(r.to_string().contains("another test (#1)"), "{r}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(all_on(&dir, 8, true));
    // The server stops while the first test still runs: its change goes back first.
    srv.stop().unwrap();
    assert_unchanged(&before, &dir);
    drop(first);
}

#[test]
fn sigterm_on_the_server_reverts_the_running_tests_change() {
    let (_t, dir) = crow();
    let before = host_common::snapshot(&dir);
    let (_k, key) = key_file();
    let (srv, port) = start_server(&[
        "-B",
        "127.0.0.1",
        "-i",
        "0",
        "--allow-tune",
        "--psk",
        &key,
        "--root",
        dir.to_str().unwrap(),
        "--tune-iface",
        IFACE,
    ]);
    let c = long_client(port, 9, &key);
    // No kernel in this tree: the request moves, the effective affinity stays.
    wait_until("IRQs requested on CPU 9", || all_on(&dir, 9, false));
    signal(srv.pid(), "-TERM");
    let out = srv.wait_output(HANG);
    // A clean stop, as a service manager expects of SIGTERM.
    assert_exit(&out, 0);
    assert_unchanged(&before, &dir);
    drop(c);
}

#[test]
fn a_sweep_moves_the_servers_irqs_step_by_step() {
    if online_cpus() < 2 {
        eprintln!(
            "SKIP: a_sweep_moves_the_servers_irqs_step_by_step because fewer than 2 CPUs are online"
        );
        return;
    }
    let (_t, dir) = crow();
    let before = host_common::snapshot(&dir);
    let srv = tuning_server(&dir);
    let (_k, key) = key_file();
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        &srv.addr.port().to_string(),
        "--psk",
        &key,
        "--cpus",
        "0",
        "--server-cpus",
        "1",
        "--irq-cpus",
        "3,8",
        "-t",
        "1",
        "--json",
    ]);
    assert_success(&out, "sweep --irq-cpus");
    let j = json_of(&out.stdout, "sweep --irq-cpus");
    let s = &j["irq_sweep"];
    assert_eq!(s["iface"], IFACE);
    assert_eq!(s["irqs"].as_array().unwrap().len(), 12);
    assert_eq!(s["matrix"]["rows"], serde_json::json!([1]));
    assert_eq!(s["matrix"]["cols"], serde_json::json!([3, 8]));
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{s}");
    for (st, cpu) in steps.iter().zip([3, 8]) {
        assert_eq!(st["irq_cpu"], cpu);
        assert_eq!(st["moved"].as_array().unwrap().len(), 12, "{st}");
        assert!(st["elsewhere"].as_array().unwrap().is_empty(), "{st}");
        assert_eq!(st["reverted"], true);
    }
    for c in 0..2 {
        assert!(s["matrix"]["cells"][0][c]["median"].as_f64().unwrap() > 0.0);
    }
    assert!(j["summary"]["best"].is_object(), "{j}");
    assert_unchanged(&before, &dir);
    // One journal per test, each reverted.
    assert_eq!(journal_count(&dir), 2);
    srv.stop().unwrap();
}

/// An iperf3 server ignores the tune request, and it cannot tag its results with the key the
/// request needs: the client stops with exit 5 and says why.
#[test]
fn an_iperf3_server_cannot_take_a_tune_request_and_the_client_says_so() {
    if !measure_common::have_iperf3(
        "an_iperf3_server_cannot_take_a_tune_request_and_the_client_says_so",
    ) {
        return;
    }
    let (_k, key) = key_file();
    let port = free_port();
    let _srv =
        spawn(Command::new("iperf3").args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()]));
    wait_listening(port);
    let out = ws(&[
        "client",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-t",
        "1",
        "--psk",
        &key,
        "--server-irq-cpus",
        "0",
    ]);
    assert_exit(&out, 5);
    let err = one_line_err(&out);
    assert!(
        err.contains(
            "pre-shared key: no pre-shared key tag (the peer has no --psk, or is not wirespeed)"
        ),
        "{err}"
    );
}
