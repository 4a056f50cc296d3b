//! The files in `deploy/`: the systemd unit and its tuning drop-in, the Kubernetes manifests,
//! the Prometheus example and the Grafana dashboard, parsed and checked for the properties
//! docs/agent.md promises (sandboxing, read-only by default, opt-in tuning, probes, limits), and
//! every flag they pass to `wirespeed agent` is one it has. `systemd-analyze verify` and
//! `promtool check config` run when they are installed. The Kubernetes manifests take their
//! image from kustomization.yaml alone (`kubectl kustomize`) and pass the API's schemas
//! (`kubernetes-validate`, offline); the dashboard queries only names a running agent exposes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;
use serde_norway::Value;

fn deploy(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(p)
}

fn read(p: &str) -> String {
    std::fs::read_to_string(deploy(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// A systemd unit file: section → key → values in order (an empty assignment resets).
fn unit(text: &str) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let vals = out
            .entry(section.clone())
            .or_default()
            .entry(k.trim().to_string())
            .or_default();
        if v.trim().is_empty() {
            vals.clear();
        } else {
            vals.push(v.trim().to_string());
        }
    }
    out
}

fn one<'a>(u: &'a BTreeMap<String, BTreeMap<String, Vec<String>>>, s: &str, k: &str) -> &'a str {
    u.get(s)
        .and_then(|m| m.get(k))
        .and_then(|v| v.last())
        .map_or("", String::as_str)
}

/// `wirespeed agent --help`: every `--flag` given to the agent must appear there.
fn assert_agent_flags(args: &[String], what: &str) {
    let help = Command::new(env!("CARGO_BIN_EXE_wirespeed"))
        .args(["agent", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for a in args.iter().filter(|a| a.starts_with("--")) {
        let flag = a.split('=').next().unwrap();
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
            "{what}: {flag} is not a flag of wirespeed agent"
        );
    }
}

#[test]
fn systemd_unit_is_sandboxed_and_tuning_is_a_separate_drop_in() {
    let base = unit(&read("systemd/wirespeed-agent.service"));
    let exec = one(&base, "Service", "ExecStart");
    assert!(exec.starts_with("/usr/bin/wirespeed agent "), "{exec}");
    assert!(exec.contains("--web.listen-address") && !exec.contains("--allow-tune"));
    let args: Vec<String> = exec.split_whitespace().map(String::from).collect();
    assert_agent_flags(&args, "ExecStart");
    for (k, v) in [
        ("DynamicUser", "yes"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        ("PrivateDevices", "yes"),
        ("RestrictNamespaces", "yes"),
    ] {
        assert_eq!(one(&base, "Service", k), v, "{k}");
    }
    // Reading needs no capability: the bounding set is empty.
    let caps = &base["Service"]["CapabilityBoundingSet"];
    assert!(
        caps.is_empty(),
        "read-only unit keeps capabilities: {caps:?}"
    );
    assert!(base["Service"]["AmbientCapabilities"].is_empty());

    // The drop-in adds exactly what tuning needs.
    let tune = unit(&read("systemd/wirespeed-agent.service.d/tune.conf"));
    let exec = one(&tune, "Service", "ExecStart");
    // A tune request needs the pre-shared key: --allow-tune without --psk does not start.
    assert!(
        exec.contains("--allow-tune") && exec.contains("--psk "),
        "{exec}"
    );
    assert_eq!(
        tune["Service"]["ExecStart"].len(),
        1,
        "ExecStart= must reset first"
    );
    let args: Vec<String> = exec.split_whitespace().map(String::from).collect();
    assert_agent_flags(&args, "tune ExecStart");
    assert_eq!(
        one(&tune, "Service", "CapabilityBoundingSet"),
        "CAP_NET_ADMIN"
    );
    assert_eq!(one(&tune, "Service", "User"), "root");
    assert_eq!(one(&tune, "Service", "DynamicUser"), "no");
    assert_eq!(one(&tune, "Service", "StateDirectory"), "wirespeed");
    let rw = one(&tune, "Service", "ReadWritePaths");
    assert!(rw.contains("/proc/irq"), "{rw}");

    verify_with_systemd();
}

/// `systemd-analyze verify` on the unit alone and with the drop-in (ExecStart pointed at the
/// test binary, which must exist for verify); any complaint about our files fails.
fn verify_with_systemd() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIP: systemd-analyze verify: systemd-analyze is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_wirespeed");
    for with_tune in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let fix = |s: String| s.replace("/usr/bin/wirespeed", bin);
        std::fs::write(
            dir.path().join("wirespeed-agent.service"),
            fix(read("systemd/wirespeed-agent.service")),
        )
        .unwrap();
        if with_tune {
            let d = dir.path().join("wirespeed-agent.service.d");
            std::fs::create_dir(&d).unwrap();
            std::fs::write(
                d.join("tune.conf"),
                fix(read("systemd/wirespeed-agent.service.d/tune.conf")),
            )
            .unwrap();
        }
        let o = Command::new("systemd-analyze")
            .args(["verify", "wirespeed-agent.service"])
            .env("SYSTEMD_UNIT_PATH", format!("{}:", dir.path().display()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let ours: Vec<&str> = err
            .lines()
            .filter(|l| l.contains(&*dir.path().to_string_lossy()))
            .collect();
        assert!(
            o.status.success() && ours.is_empty(),
            "systemd-analyze verify (tune drop-in: {with_tune}): {err}"
        );
    }
}

fn docs(p: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(&read(p))
        .map(|d| {
            <Value as serde::Deserialize>::deserialize(d).unwrap_or_else(|e| panic!("{p}: {e}"))
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn kind<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks both DaemonSets share: host network, probes on the HTTP endpoint, limits.
fn check_agent_pod(ds: &Value, what: &str) -> Value {
    let spec = &ds["spec"]["template"]["spec"];
    assert_eq!(
        spec["hostNetwork"].as_bool(),
        Some(true),
        "{what}: hostNetwork"
    );
    let c = &spec["containers"][0];
    let args = strings(&c["args"]);
    assert_eq!(args.first().map(String::as_str), Some("agent"), "{what}");
    assert_agent_flags(&args, what);
    let ports: Vec<(&str, u64)> = c["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["containerPort"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(ports.contains(&("metrics", 9762)), "{what}: {ports:?}");
    assert!(args.iter().any(|a| a.contains(":9762")), "{what}: {args:?}");
    for (probe, path) in [
        ("readinessProbe", "/-/ready"),
        ("livenessProbe", "/-/healthy"),
    ] {
        assert_eq!(
            c[probe]["httpGet"]["path"].as_str(),
            Some(path),
            "{what}: {probe}"
        );
        assert_eq!(
            c[probe]["httpGet"]["port"].as_str(),
            Some("metrics"),
            "{what}: {probe}"
        );
    }
    for r in ["cpu", "memory"] {
        assert!(!c["resources"]["limits"][r].is_null(), "{what}: limits.{r}");
        assert!(
            !c["resources"]["requests"][r].is_null(),
            "{what}: requests.{r}"
        );
    }
    c.clone()
}

#[test]
fn kubernetes_daemonset_is_read_only_by_default_and_tuning_is_opt_in() {
    let ro = docs("kubernetes/wirespeed-agent.yaml");
    let ds = kind(&ro, "DaemonSet", "wirespeed-agent");
    let c = check_agent_pod(ds, "read-only DaemonSet");
    let spec = &ds["spec"]["template"]["spec"];
    let args = strings(&c["args"]);
    assert!(!args.iter().any(|a| a.contains("allow-tune")), "{args:?}");
    assert!(args.iter().any(|a| a == "--root=/host"), "{args:?}");
    let sc = &c["securityContext"];
    assert_ne!(sc["privileged"].as_bool(), Some(true));
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(strings(&sc["capabilities"]["drop"]), vec!["ALL"]);
    assert!(sc["capabilities"]["add"].is_null());
    assert_eq!(
        spec["securityContext"]["runAsNonRoot"].as_bool(),
        Some(true)
    );
    for m in c["volumeMounts"].as_sequence().unwrap() {
        assert_eq!(m["readOnly"].as_bool(), Some(true), "{m:?}");
    }
    // Nodes opted in to tuning run the tuning profile instead.
    let expr = &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchExpressions"][0];
    assert_eq!(expr["operator"].as_str(), Some("NotIn"));
    let label = expr["key"].as_str().unwrap().to_string();

    let tune = docs("kubernetes/wirespeed-agent-tune.yaml");
    let tds = kind(&tune, "DaemonSet", "wirespeed-agent-tune");
    let tc = check_agent_pod(tds, "tuning DaemonSet");
    assert!(strings(&tc["args"]).iter().any(|a| a == "--allow-tune"));
    assert!(strings(&tc["args"]).iter().any(|a| a.starts_with("--psk=")));
    assert_eq!(tc["securityContext"]["privileged"].as_bool(), Some(true));
    let sel = &tds["spec"]["template"]["spec"]["nodeSelector"];
    assert_eq!(
        sel[label.as_str()].as_str(),
        Some("true"),
        "opt-in by node label {label}"
    );

    // Service and ServiceMonitor find the pods and their metrics port.
    let svc = kind(&ro, "Service", "wirespeed-agent");
    let pod_labels = &ds["spec"]["template"]["metadata"]["labels"];
    let tune_labels = &tds["spec"]["template"]["metadata"]["labels"];
    for (k, v) in svc["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(&pod_labels[k.as_str().unwrap()], v);
        assert_eq!(&tune_labels[k.as_str().unwrap()], v);
    }
    let svc_port = &svc["spec"]["ports"][0];
    assert_eq!(svc_port["name"].as_str(), Some("metrics"));
    assert_eq!(svc_port["port"].as_u64(), Some(9762));
    let sm = kind(&ro, "ServiceMonitor", "wirespeed-agent");
    assert_eq!(sm["apiVersion"].as_str(), Some("monitoring.coreos.com/v1"));
    for (k, v) in sm["spec"]["selector"]["matchLabels"].as_mapping().unwrap() {
        assert_eq!(&svc["metadata"]["labels"][k.as_str().unwrap()], v);
    }
    assert_eq!(sm["spec"]["endpoints"][0]["port"].as_str(), Some("metrics"));
    assert_eq!(
        sm["spec"]["endpoints"][0]["path"].as_str(),
        Some("/metrics")
    );
}

/// Metric names the agent can expose (the names in its source).
fn agent_metric_names() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/src");
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for piece in text.split('"').skip(1).step_by(2) {
            if piece.starts_with("wirespeed_")
                && piece.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            {
                names.push(piece.to_string());
            }
        }
    }
    names
}

fn metric_names_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("wirespeed_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[test]
fn prometheus_example_and_grafana_dashboard_use_the_agents_metrics() {
    let known = agent_metric_names();
    assert!(known.iter().any(|n| n == "wirespeed_probe_success"));

    let prom = docs("prometheus/prometheus.yml").remove(0);
    let jobs = prom["scrape_configs"].as_sequence().unwrap();
    let probe = jobs
        .iter()
        .find(|j| j["job_name"].as_str() == Some("wirespeed_probe"))
        .expect("a probe job");
    assert_eq!(probe["metrics_path"].as_str(), Some("/probe"));
    let relabels = probe["relabel_configs"].as_sequence().unwrap();
    assert!(relabels
        .iter()
        .any(|r| r["target_label"].as_str() == Some("__param_target")));
    assert!(relabels
        .iter()
        .any(|r| r["target_label"].as_str() == Some("__address__")));
    if Command::new("promtool").arg("--version").output().is_ok() {
        let o = Command::new("promtool")
            .args(["check", "config"])
            .arg(deploy("prometheus/prometheus.yml"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "promtool check config: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    } else {
        eprintln!("SKIP: promtool check config: promtool is not installed");
    }

    let dash: Json = serde_json::from_str(&read("grafana/wirespeed.json")).unwrap();
    let panels = dash["panels"].as_array().unwrap();
    assert!(!panels.is_empty());
    let mut used = Vec::new();
    for p in panels {
        for t in p["targets"].as_array().unwrap() {
            for n in metric_names_in(t["expr"].as_str().unwrap()) {
                assert!(
                    known.contains(&n),
                    "dashboard uses {n}, which the agent never exposes"
                );
                used.push(n);
            }
        }
    }
    for must in [
        "wirespeed_probe_received_bytes_per_second",
        "wirespeed_host_finding",
        "wirespeed_nic_pcie_link_width_lanes",
    ] {
        assert!(used.iter().any(|u| u == must), "dashboard lacks {must}");
    }
}

/// Every container of every DaemonSet in `docs` with its image.
fn images(docs: &[Value]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for d in docs
        .iter()
        .filter(|d| d["kind"].as_str() == Some("DaemonSet"))
    {
        for c in d["spec"]["template"]["spec"]["containers"]
            .as_sequence()
            .unwrap()
        {
            out.push((
                format!(
                    "{}/{}",
                    d["metadata"]["name"].as_str().unwrap(),
                    c["name"].as_str().unwrap()
                ),
                c["image"].as_str().unwrap_or("").to_string(),
            ));
        }
    }
    out
}

/// The image's user as `scripts/image` sets it (`USER uid:gid` of its Containerfile).
fn image_user() -> (u64, u64) {
    let script = std::fs::read_to_string(deploy("../scripts/image")).unwrap();
    let user = script
        .lines()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("scripts/image sets USER");
    let (u, g) = user.trim().split_once(':').expect("USER uid:gid");
    (u.parse().unwrap(), g.parse().unwrap())
}

#[test]
fn kubernetes_image_is_named_in_one_place_and_runs_as_the_images_user() {
    let me = "kubernetes_image_is_named_in_one_place_and_runs_as_the_images_user";
    let k = docs("kubernetes/kustomization.yaml").remove(0);
    let listed = strings(&k["resources"]);
    // Every manifest in the directory is a resource of the kustomization.
    let mut files: Vec<String> = std::fs::read_dir(deploy("kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".yaml") && f != "kustomization.yaml")
        .collect();
    files.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, files, "kustomization.yaml's resources");
    let image = &k["images"][0];
    let name = image["name"].as_str().expect("images[0].name");
    assert_eq!(name, "localhost/wirespeed", "the name scripts/image tags");
    assert_eq!(image["newTag"].as_str(), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(k["images"].as_sequence().unwrap().len(), 1);
    let mut all = Vec::new();
    for f in &listed {
        all.extend(images(&docs(&format!("kubernetes/{f}"))));
    }
    assert_eq!(all.len(), 2, "{all:?}");
    for (who, img) in &all {
        let bare = img.rsplit_once(':').map_or(img.as_str(), |(n, _)| n);
        assert_eq!(
            bare, name,
            "{who} runs {img}, which kustomization.yaml does not set"
        );
    }
    // The read-only DaemonSet runs as the image's own user; the tuning one as root (the kernel
    // files it writes are root's), which the image allows (its journal directory is root's).
    let (uid, gid) = image_user();
    let ro = docs("kubernetes/wirespeed-agent.yaml");
    let sc =
        &kind(&ro, "DaemonSet", "wirespeed-agent")["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(sc["runAsUser"].as_u64(), Some(uid), "{sc:?}");
    assert_eq!(sc["runAsGroup"].as_u64(), Some(gid), "{sc:?}");
    let tune = docs("kubernetes/wirespeed-agent-tune.yaml");
    let tc = &kind(&tune, "DaemonSet", "wirespeed-agent-tune")["spec"]["template"]["spec"]
        ["containers"][0];
    assert_eq!(tc["securityContext"]["runAsUser"].as_u64(), Some(0));

    // kubectl's kustomize: setting newName and newTag in that one place changes every image.
    if !crate::need::tool(me, "kubectl", "help", "kubernetes-client") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for f in &listed {
        std::fs::copy(deploy(&format!("kubernetes/{f}")), dir.path().join(f)).unwrap();
    }
    let mine = read("kubernetes/kustomization.yaml")
        .replace(
            "newName: localhost/wirespeed",
            "newName: registry.example.invalid/ops/wirespeed",
        )
        .replace(
            &format!("newTag: \"{}\"", env!("CARGO_PKG_VERSION")),
            "newTag: \"9.9.9\"",
        );
    std::fs::write(dir.path().join("kustomization.yaml"), mine).unwrap();
    let o = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "kubectl kustomize: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out: Vec<Value> = serde_norway::Deserializer::from_slice(&o.stdout)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .collect();
    let built = images(&out);
    assert_eq!(built.len(), all.len(), "{built:?}");
    for (who, img) in built {
        assert_eq!(img, "registry.example.invalid/ops/wirespeed:9.9.9", "{who}");
    }
}

/// `python3 -m kubernetes_validate --strict FILES` (PyPI's kubernetes-validate, which ships
/// the API's JSON schemas and needs no network): (success, output).
fn kubernetes_validate(files: &[PathBuf]) -> (bool, String) {
    let o = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--strict"])
        .args(files)
        .output()
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn kubernetes_manifests_validate_against_the_api_schemas_offline() {
    let me = "kubernetes_manifests_validate_against_the_api_schemas_offline";
    if !Command::new("python3")
        .args(["-m", "kubernetes_validate", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        crate::need::unavailable(
            me,
            "kubernetes-validate is missing (pip install kubernetes-validate)",
        );
        return;
    }
    let files = [
        deploy("kubernetes/wirespeed-agent.yaml"),
        deploy("kubernetes/wirespeed-agent-tune.yaml"),
    ];
    let (ok, out) = kubernetes_validate(&files);
    assert!(ok, "kubernetes-validate --strict: {out}");
    for r in [
        "namespace/wirespeed",
        "daemonset/wirespeed-agent ",
        "service/wirespeed-agent",
        "daemonset/wirespeed-agent-tune",
    ] {
        assert!(
            out.lines()
                .any(|l| l.contains("passed for resource") && l.contains(r)),
            "{r} was not validated:\n{out}"
        );
    }
    // The ServiceMonitor is the Prometheus Operator's kind: no API schema (its fields are
    // checked in kubernetes_daemonset_is_read_only_by_default_and_tuning_is_opt_in).
    // The validator does reject what the API server would: a misspelt field, a wrong type.
    let dir = tempfile::tempdir().unwrap();
    for (bad, from, to) in [
        ("misspelt.yaml", "hostNetwork: true", "hostNetwrk: true"),
        ("type.yaml", "runAsUser: 65532", "runAsUser: \"wirespeed\""),
    ] {
        let text = read("kubernetes/wirespeed-agent.yaml");
        assert!(text.contains(from));
        let p = dir.path().join(bad);
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
        let (ok, out) = kubernetes_validate(&[p]);
        assert!(
            !ok && out.contains("did not validate"),
            "{bad} passed:\n{out}"
        );
    }
}

/// The sample names in a Prometheus text exposition.
fn exposed_names(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next().map(String::from))
        .collect()
}

#[test]
fn grafana_dashboard_queries_only_series_a_running_agent_exposes() {
    use crate::agent_common::{fixture, get, start_agent};
    // An agent on a captured host (a NIC with PCIe, temperature and link speed) with its test
    // server; its /metrics, and a TCP and a UDP probe of its own server, are every family the
    // dashboard can draw.
    let root = fixture("crow-9900x-cx5-x4").display().to_string();
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--root",
            &root,
        ],
    );
    let port = a.test_port.expect("the agent's test server");
    let mut exposed = Vec::new();
    for path in [
        "/metrics".to_string(),
        format!("/probe?target=127.0.0.1:{port}&duration=1"),
        format!("/probe?target=127.0.0.1:{port}&duration=1&udp_rate=10M"),
    ] {
        let (code, text) = get(a.web, &path);
        assert_eq!(code, 200, "{path}: {text}");
        exposed.extend(exposed_names(&text));
    }
    let dash: Json = serde_json::from_str(&read("grafana/wirespeed.json")).unwrap();
    let mut queried = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            queried.extend(metric_names_in(t["expr"].as_str().unwrap()));
        }
    }
    queried.sort();
    queried.dedup();
    assert!(queried.len() > 10, "{queried:?}");
    let missing: Vec<&String> = queried.iter().filter(|n| !exposed.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries {missing:?}, which the running agent does not expose"
    );
    eprintln!(
        "dashboard: {} metric names, all exposed by the agent",
        queried.len()
    );
}
