//! Many streams in one test, and several tests at once on one server.

use crate::measure_common;

use std::time::Duration;

use measure_common::*;

#[test]
fn p1024_on_loopback_has_correct_totals() {
    // One client with 1024 streams: above a public server's per-address default (128).
    let (srv, port) = start_server(&["-1", "-J", "-i", "0", "--max-streams-per-address", "1024"]);
    let out = run(
        &mut client_cmd(
            Side::Wirespeed,
            port,
            &["-t", "2", "-P", "1024", "-J", "-i", "0"],
        ),
        Duration::from_secs(60),
    );
    let sout = srv.wait_output(Duration::from_secs(20));
    assert_success(&out, "client");
    let cj = json_of(&out.stdout, "client");
    let sj = json_of(&sout.stdout, "server");
    let streams = cj["end"]["streams"].as_array().expect("end.streams");
    assert_eq!(streams.len(), 1024);
    assert_eq!(sj["end"]["streams"].as_array().map(Vec::len), Some(1024));
    // Stream ids as iperf3 numbers them: 1, 3, 4, ..., 1025.
    let ids: Vec<u64> = streams
        .iter()
        .filter_map(|s| s["sender"]["socket"].as_u64())
        .collect();
    let mut want = vec![1u64];
    want.extend(3..=1025);
    assert_eq!(ids, want);
    // Per-stream bytes add up to the sums, and both ends agree on every stream.
    let sum: u64 = streams
        .iter()
        .filter_map(|s| s["sender"]["bytes"].as_u64())
        .sum();
    let t = totals(&cj);
    assert_eq!(Some(sum), t[0]);
    assert_eq!(t[0], t[1], "sent != received");
    assert_eq!(totals(&sj)[0], t[0]);
    assert_eq!(totals(&sj)[1], t[1]);
    for (c, s) in streams
        .iter()
        .zip(sj["end"]["streams"].as_array().expect("server streams"))
    {
        assert_eq!(c["receiver"]["bytes"], s["receiver"]["bytes"]);
    }
    eprintln!(
        "-P 1024: {} bytes in {} s",
        t[0].unwrap_or(0),
        cj["end"]["sum_sent"]["seconds"]
    );
}

#[test]
fn two_clients_at_once_on_one_server() {
    let (_srv, port) = start_server(&["-i", "0"]);
    let a = spawn(&mut client_cmd(
        Side::Wirespeed,
        port,
        &["-t", "2", "-J", "-P", "2"],
    ));
    let b = spawn(&mut client_cmd(
        Side::Wirespeed,
        port,
        &["-t", "2", "-J", "-R"],
    ));
    let (oa, ob) = (
        a.wait_output(Duration::from_secs(30)),
        b.wait_output(Duration::from_secs(30)),
    );
    for (o, name) in [(&oa, "first"), (&ob, "second")] {
        assert_success(o, &format!("{name} client"));
        let j = json_of(&o.stdout, name);
        let t = totals(&j);
        assert!(t[0].unwrap_or(0) > 0, "{name}: nothing moved");
        assert_eq!(t[0], t[1], "{name}: sent != received");
        // The two tests overlapped in time.
        assert!(j["end"]["sum_sent"]["seconds"].as_f64().unwrap_or(0.0) > 1.5);
    }
    let ja = json_of(&oa.stdout, "a");
    let jb = json_of(&ob.stdout, "b");
    assert_ne!(ja["start"]["cookie"], jb["start"]["cookie"]);
    assert_eq!(ja["end"]["streams"].as_array().map(Vec::len), Some(2));
    assert_eq!(jb["start"]["test_start"]["reverse"], 1);
}
