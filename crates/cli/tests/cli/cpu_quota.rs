//! `cpu-quota` induced for real: a cgroup allowed 0.3 CPU (cgroup v1 `cpu.cfs_quota_us` or v2
//! `cpu.max`, whichever this host has), the test run inside it — both ends (`--loopback`), then
//! only the server, each direction — and what wirespeed says: the verdict names the cgroup and the
//! end it holds back, the observation carries the limit and its throttling, and the cost's
//! projection says what the cgroup allows.

use crate::measure_common::{self, free_port, wait_listening, wirespeed};
use crate::need;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// A cgroup made for one test, removed when dropped (its processes have ended by then).
struct Group {
    dir: PathBuf,
    /// Its path in the hierarchy, as `/proc/PID/cgroup` names it.
    name: String,
}

impl Drop for Group {
    fn drop(&mut self) {
        // the kernel needs a moment to let go of an exited process's membership
        for _ in 0..200 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!("note: could not remove {}", self.dir.display());
    }
}

/// Where this host's cpu controller can make a group: a v1 hierarchy with `cpu`, else the v2
/// hierarchy when its root offers `cpu` (enabled for its children here). `None` with the
/// reason otherwise.
fn cpu_hierarchy() -> Result<(PathBuf, bool), String> {
    use wirespeed_host::cgroup::parse_mountinfo;
    let mi = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    let mounts = parse_mountinfo(&mi);
    if let Some(m) = mounts
        .iter()
        .find(|m| !m.v2 && m.controllers.iter().any(|c| c == "cpu"))
    {
        return Ok((PathBuf::from(&m.mount_point), false));
    }
    let v2 = mounts
        .iter()
        .find(|m| m.v2 && m.root == "/")
        .map(|m| PathBuf::from(&m.mount_point));
    let root = v2.ok_or("no cgroup hierarchy has the cpu controller")?;
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "cpu") {
        return Err("the cgroup v2 root does not offer the cpu controller".into());
    }
    std::fs::write(root.join("cgroup.subtree_control"), "+cpu")
        .map_err(|e| format!("cannot enable cpu for the v2 root's children: {e}"))?;
    Ok((root, true))
}

/// A new group allowed `quota_us` of every 100 ms, or why not.
fn group(tag: &str, quota_us: u64) -> Result<Group, String> {
    let (root, v2) = cpu_hierarchy()?;
    let name = format!("wirespeed-test-{tag}-{}", std::process::id());
    let dir = root.join(&name);
    std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let g = Group {
        dir,
        name: format!("/{name}"),
    };
    let w = |f: &str, v: String| std::fs::write(g.dir.join(f), v).map_err(|e| format!("{f}: {e}"));
    if v2 {
        w("cpu.max", format!("{quota_us} 100000"))?;
    } else {
        w("cpu.cfs_period_us", "100000".into())?;
        w("cpu.cfs_quota_us", quota_us.to_string())?;
    }
    Ok(g)
}

/// `wirespeed ARGS` started inside the group (the shell joins it, then becomes wirespeed).
fn inside(g: &Group, args: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(r#"echo $$ > "$1/cgroup.procs" && shift && exec "$@""#)
        .arg("sh")
        .arg(g.dir.as_os_str())
        .arg(wirespeed())
        .args(args);
    c
}

fn ready(test: &str) -> Option<Group> {
    if !need::root(test) {
        return None;
    }
    match group(test, 30_000) {
        Ok(g) => Some(g),
        Err(why) => {
            // a kernel feature, not something the CI machine installs: a plain skip
            eprintln!("SKIP: {test} because {why}");
            None
        }
    }
}

fn json(out: &std::process::Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn assert_quota(end: &serde_json::Value, g: &Group, throttled: bool, what: &str) {
    let q = &end["cpu_quota"];
    assert_eq!(q["cgroup"], g.name.as_str(), "{what}: {end}");
    assert_eq!(
        (q["quota_us"].as_u64(), q["period_us"].as_u64()),
        (Some(30_000), Some(100_000)),
        "{what}"
    );
    let periods = q["periods"].as_u64().unwrap_or(0);
    let t = q["throttled_periods"].as_u64().unwrap_or(0);
    assert!(periods > 0 && t <= periods, "{what}: {q}");
    if throttled {
        assert!(
            t > 0 && q["throttled_s"].as_f64().unwrap_or(0.0) > 0.0,
            "{what}: {q}"
        );
    }
}

#[test]
fn a_cgroup_cpu_quota_is_named_with_its_limit() {
    let test = "a_cgroup_cpu_quota_is_named_with_its_limit";
    let Some(g) = ready(test) else { return };
    let out = measure_common::run(
        &mut inside(
            &g,
            &["client", "--loopback", "-t", "2", "--rate", "100G", "-J"],
        ),
        Duration::from_secs(60),
    );
    let j = json(&out, "--loopback in the group");
    let v = &j["wirespeed"]["verdict"];
    assert_eq!(v["id"], "cpu-quota", "{v}");
    let line = v["line"].as_str().unwrap();
    assert!(
        line.starts_with(&format!(
            "CPU quota: both ends' cgroup {} may use 0.3 CPU (30000 µs of every 100000 µs) and ran out of it in ",
            g.name
        )),
        "{line}"
    );
    let obs = &j["wirespeed"]["observation"];
    for who in ["local", "remote"] {
        assert_quota(&obs[who], &g, true, who);
    }
    let p = &j["wirespeed"]["cost"]["projection"];
    assert_eq!(p["sender_quota_cpus"].as_f64(), Some(0.3), "{p}");
    assert_eq!(p["receiver_quota_cpus"].as_f64(), Some(0.3), "{p}");
    // the text says the same
    let out = measure_common::run(
        &mut inside(&g, &["client", "--loopback", "-t", "1", "--rate", "100G"]),
        Duration::from_secs(60),
    );
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(
        t.contains("\nVerdict: CPU quota: both ends' cgroup "),
        "{t}"
    );
    assert!(t.contains("its cgroup allows 0.3 CPU"), "{t}");
}

#[test]
fn a_quota_on_the_server_alone_is_named_at_its_end_both_ways() {
    let test = "a_quota_on_the_server_alone_is_named_at_its_end_both_ways";
    let Some(g) = ready(test) else { return };
    // -R: the server sends; forward: it receives. Either way the end it holds is the server's.
    for (extra, server_is) in [(&["-R"][..], "sender"), (&[][..], "receiver")] {
        let port = free_port();
        let srv = measure_common::spawn(&mut inside(
            &g,
            &["server", "-1", "-B", "127.0.0.1", "-p", &port.to_string()],
        ));
        wait_listening(port);
        let mut c = Command::new(wirespeed());
        c.args([
            "client",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "2",
            "-J",
        ])
        .args(extra);
        let j = json(
            &measure_common::run(&mut c, Duration::from_secs(60)),
            server_is,
        );
        drop(srv.wait_output(Duration::from_secs(30)));
        let v = &j["wirespeed"]["verdict"];
        let obs = &j["wirespeed"]["observation"];
        // the client ran outside the group: it has no limit of its own
        assert!(obs["local"]["cpu_quota"].is_null(), "{}", obs["local"]);
        assert_quota(&obs["remote"], &g, false, server_is);
        let throttled = obs["remote"]["cpu_quota"]["throttled_periods"]
            .as_u64()
            .unwrap_or(0);
        let periods = obs["remote"]["cpu_quota"]["periods"].as_u64().unwrap_or(1);
        if throttled * 5 >= periods && throttled >= 5 {
            assert_eq!(v["id"], "cpu-quota", "{server_is}: {v}");
            assert_eq!(v["end"], server_is, "{v}");
            assert!(
                v["line"].as_str().unwrap().starts_with(&format!(
                    "CPU quota: the {server_is}'s cgroup {} may use 0.3 CPU",
                    g.name
                )),
                "{v}"
            );
        } else {
            // held back in under a fifth of its periods: not the verdict
            eprintln!("note: {test}: the server as {server_is} was throttled in {throttled} of {periods} periods");
            assert_ne!(v["id"], "cpu-quota", "{v}");
        }
    }
}
