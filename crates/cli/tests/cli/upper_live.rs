//! Upper devices on this machine's kernel, which has the bridge and macvlan modules (but neither
//! bonding nor 8021q: bonds and VLANs are tested on the captured trees): a bridge of a veth and
//! a macvlan on the veth's peer, made in a network namespace of this test's own. `wirespeed
//! doctor --iface` on each, run inside the namespace (where `/sys` shows its devices), accepts
//! the device, resolves it to what is beneath it, and says whether bridged frames pass
//! netfilter exactly as the namespace's own sysctl says.

use std::process::{Command, Output};

use crate::need;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

/// A namespace of this test's own with `br0` (port `v0`) and `mv0` (macvlan on `v1`, the peer
/// of `v0`), deleted on drop.
struct Ns(String);

impl Ns {
    fn up() -> Ns {
        let ns = Ns(format!("ws-stack-{}", std::process::id()));
        let ip = |args: &[&str]| {
            // starts: ip (the namespace and its devices)
            let o = Command::new("ip").args(args).output().unwrap();
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        ip(&["netns", "add", &ns.0]);
        let n = ns.0.as_str();
        ip(&["-n", n, "link", "add", "br0", "type", "bridge"]);
        ip(&[
            "-n", n, "link", "add", "v0", "type", "veth", "peer", "name", "v1",
        ]);
        ip(&["-n", n, "link", "set", "v0", "master", "br0"]);
        ip(&[
            "-n", n, "link", "add", "mv0", "link", "v1", "type", "macvlan", "mode", "bridge",
        ]);
        for d in ["br0", "v0", "v1", "mv0"] {
            ip(&["-n", n, "link", "set", d, "up"]);
        }
        ns
    }

    fn doctor(&self, iface: &str) -> Output {
        // starts: ip (ip netns exec NS wirespeed: /sys remounted for the namespace)
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.0,
                bin(),
                "doctor",
                "--iface",
                iface,
                "--json",
            ])
            .output()
            .unwrap()
    }

    fn read(&self, path: &str) -> Option<String> {
        // starts: ip (ip netns exec NS cat: the namespace's own sysctl)
        let o = Command::new("ip")
            .args(["netns", "exec", &self.0, "cat", path])
            .output()
            .ok()?;
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn report(o: &Output) -> serde_json::Value {
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e})"))
}

fn upper<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["facts"]["uppers"]
        .as_array()
        .and_then(|a| a.iter().find(|u| u["top"]["name"] == name))
        .unwrap_or_else(|| {
            panic!(
                "{name} not among the upper devices: {}",
                r["facts"]["uppers"]
            )
        })
}

#[test]
fn doctor_resolves_a_live_bridge_and_macvlan() {
    let test = "doctor_resolves_a_live_bridge_and_macvlan";
    if !(need::root(test) && need::tool(test, "ip", "-V", "iproute2")) {
        return;
    }
    let ns = Ns::up();

    let r = report(&ns.doctor("br0"));
    let br = upper(&r, "br0");
    assert_eq!(br["top"]["kind"], "bridge");
    let lowers: Vec<&str> = br["top"]["lowers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(lowers, ["v0"]);
    assert_eq!(br["top"]["lowers"][0]["kind"], "virtual");
    // bridge-netfilter exactly when the namespace's sysctl (or the bridge's option) is 1
    let calls = ns
        .read("/proc/sys/net/bridge/bridge-nf-call-iptables")
        .as_deref()
        == Some("1")
        || ns
            .read("/proc/sys/net/bridge/bridge-nf-call-ip6tables")
            .as_deref()
            == Some("1");
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.contains(&"bridge-netfilter"), calls, "{ids:?}");
    // veths alone are no NICs: no finding about a member, and the notes say why
    assert!(!ids.iter().any(|i| i.starts_with("irq-")), "{ids:?}");

    let r = report(&ns.doctor("mv0"));
    let mv = upper(&r, "mv0");
    assert_eq!(mv["top"]["kind"], "macvlan");
    assert_eq!(mv["top"]["lowers"][0]["name"], "v1");
    // the bridge is found from the macvlan's doctor run too: every upper device is collected
    assert_eq!(upper(&r, "br0")["top"]["kind"], "bridge");

    // a name that is no device: the usual refusal, exit 6
    let o = ns.doctor("nope0");
    assert_eq!(
        o.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("upper device"));
}
