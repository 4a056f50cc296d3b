//! The OCI image `scripts/image` builds, built around the binary under test and run with podman:
//! what its root holds (the binary, the libraries ldd names, three files in /etc, nothing else:
//! no shell), its user, default command and labels; the agent on the host network answering
//! `/metrics`; the default command (the agent on 9762 and 5201) in a namespace of its own; a
//! client container and a server container in the two network namespaces of a `wirespeed lab`
//! running a test; and the tuning profile, which needs `CAP_NET_ADMIN` and a writable `/sys`
//! of the namespace it tunes, refusing before it changes anything when either is missing.
//!
//! Every podman call here uses a storage, state and configuration of its own under
//! `CARGO_TARGET_TMPDIR` (emptied at the start of each run), never the machine's images. Two
//! settings of that configuration are for machines like CI's, with no `CAP_SYS_RESOURCE` and
//! cgroups v1 beside v2: the containers' `nofile`/`nproc` limits at or under this process's own
//! (podman would raise them), and runc as the runtime (crun 1.8 refuses hybrid cgroups).
//!
//! Needs root, podman, runc and iproute2; prints `SKIP:` otherwise, and fails when `CI` is set.

use crate::need;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use wirespeed_lab::{unique_name, Lab, Side, Spec};

/// Hang bound for a line a container should print (a stuck container fails the test).
const HANG: Duration = Duration::from_secs(300);

fn wirespeed() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The image, built once per test run into a podman storage of this test binary's own.
struct Image {
    dir: PathBuf,
    reference: String,
}

impl Image {
    /// `podman` with this run's storage and configuration.
    fn podman(&self) -> Command {
        let mut c = Command::new("podman");
        c.env("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf"))
            .env("CONTAINERS_CONF", self.dir.join("containers.conf"));
        c
    }

    fn podman_ok(&self, args: &[&str]) -> String {
        let o = self.podman().args(args).output().expect("podman");
        assert!(o.status.success(), "podman {args:?}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

/// The image, or `None` after a `SKIP:` line; one build for all the tests of this module (the
/// lock also keeps two builds from racing for the same storage).
fn image(test: &str) -> Option<&'static Image> {
    if !need::root(test)
        || !need::tool(test, "podman", "--version", "podman")
        || !need::tool(test, "runc", "--version", "runc")
        || !need::tool(test, "ip", "-V", "iproute2")
    {
        return None;
    }
    static BUILT: OnceLock<Mutex<Option<&'static Image>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(|| Mutex::new(None)).lock().unwrap();
    if let Some(i) = *built {
        return Some(i);
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wirespeed-image");
    if dir.exists() {
        clear(&dir);
    }
    for d in ["storage", "run", "tmp"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(
        dir.join("storage.conf"),
        format!(
            "[storage]\ndriver = \"overlay\"\ngraphroot = \"{0}/storage\"\nrunroot = \"{0}/run\"\n\
             [storage.options.overlay]\nskip_mount_home = \"true\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let limit = |resource| {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into `r`, which lives for the call.
        assert_eq!(unsafe { libc::getrlimit(resource, &mut r) }, 0);
        r.rlim_cur.min(r.rlim_max)
    };
    let nofile = limit(libc::RLIMIT_NOFILE).min(1 << 20);
    let nproc = limit(libc::RLIMIT_NPROC).min(4096);
    std::fs::write(
        dir.join("containers.conf"),
        format!(
            "[containers]\ndefault_ulimits = [\"nofile={nofile}:{nofile}\", \"nproc={nproc}:{nproc}\"]\n\
             [engine]\nruntime = \"runc\"\nlock_type = \"file\"\ntmp_dir = \"{}/tmp\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let img = Image {
        dir,
        reference: String::new(),
    };
    // starts: by path (scripts/image, read as a script)
    let o = Command::new(workspace().join("scripts/image"))
        .args(["--bin", wirespeed()])
        .env("CONTAINERS_STORAGE_CONF", img.dir.join("storage.conf"))
        .env("CONTAINERS_CONF", img.dir.join("containers.conf"))
        .output()
        .expect("scripts/image");
    assert!(o.status.success(), "scripts/image: {}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let reference = out.lines().last().unwrap_or("").to_string();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        reference,
        format!("localhost/wirespeed:{version}"),
        "the last line is the image reference:\n{}",
        text(&o)
    );
    let img: &'static Image = Box::leak(Box::new(Image { reference, ..img }));
    *built = Some(img);
    Some(img)
}

/// The last run's storage: its containers removed, anything still mounted under it unmounted,
/// then deleted.
fn clear(dir: &Path) {
    let _ = Command::new("podman")
        .args(["rm", "--all", "--force", "--time=0"])
        .env("CONTAINERS_STORAGE_CONF", dir.join("storage.conf"))
        .env("CONTAINERS_CONF", dir.join("containers.conf"))
        .output();
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let prefix = dir.to_string_lossy().into_owned();
    for m in mounts.lines().rev() {
        if let Some(at) = m
            .split_whitespace()
            .nth(1)
            .filter(|p| p.starts_with(&prefix))
        {
            let _ = Command::new("umount").arg(at).output();
        }
    }
    std::fs::remove_dir_all(dir).unwrap_or_else(|e| panic!("{dir:?}: {e}"));
}

/// A container run in the foreground, removed (`podman rm -f`) when dropped; its output lines
/// arrive on `lines`.
struct Running<'a> {
    img: &'a Image,
    name: String,
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl<'a> Running<'a> {
    fn start(img: &'a Image, args: &[&str]) -> Running<'a> {
        let name = unique_name("wsimg");
        let mut child = img
            .podman()
            .arg("run")
            .arg("--rm")
            .arg(format!("--name={name}"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("podman run");
        let (tx, lines) = mpsc::channel();
        for r in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for l in BufReader::new(r).lines().map_while(Result::ok) {
                    let _ = tx.send(l);
                }
            });
        }
        Running {
            img,
            name,
            child,
            lines,
        }
    }

    /// The first line containing `needle` (earlier lines are kept in the panic message).
    fn wait_for(&self, needle: &str) -> String {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(HANG) {
                Ok(l) if l.contains(needle) => return l,
                Ok(l) => seen.push(l),
                Err(e) => {
                    panic!("no line with {needle:?} ({e}); the container printed:\n{seen:#?}")
                }
            }
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        // The container first (killing the podman client alone would leave it running).
        let _ = self
            .img
            .podman()
            .args(["rm", "--force", "--time=0", &self.name])
            .output();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain `wirespeed lab` (client and server namespaces joined by a veth pair), removed when
/// dropped; `None` after a `SKIP:` line when this host cannot build one.
fn lab(test: &str, tag: &str) -> Option<Lab> {
    if let Err(e) = wirespeed_lab::check_can_run(false) {
        need::unavailable(test, &e.to_string());
        return None;
    }
    match Lab::up(Spec::new(unique_name(tag))) {
        Ok(l) => Some(l),
        Err(e) => {
            need::unavailable(test, &format!("the lab could not be built: {e}"));
            None
        }
    }
}

fn netns_arg(lab: &Lab, side: Side) -> String {
    format!("--network=ns:/run/netns/{}", lab.netns(side))
}

/// The library paths the dynamic linker resolves for `bin`, without the leading `/`.
fn ldd_paths(bin: &str) -> Vec<String> {
    let o = Command::new("ldd").arg(bin).output().expect("ldd");
    assert!(o.status.success(), "ldd: {}", text(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once(" => ") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.strip_prefix('/').map(String::from)
        })
        .collect()
}

#[test]
fn image_holds_the_binary_its_libraries_and_a_non_root_user() {
    let me = "image_holds_the_binary_its_libraries_and_a_non_root_user";
    let Some(img) = image(me) else { return };
    let inspect: Value = serde_json::from_str(&img.podman_ok(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config}}",
        &img.reference,
    ]))
    .expect("the image's config as JSON");
    assert_eq!(inspect["User"], "65532:65532", "{inspect:#}");
    assert_eq!(
        inspect["Entrypoint"][0], "/usr/bin/wirespeed",
        "{inspect:#}"
    );
    assert_eq!(
        inspect["Cmd"][0], "agent",
        "the default command: {inspect:#}"
    );
    let labels = &inspect["Labels"];
    for key in ["title", "description", "revision", "created", "licenses"] {
        let v = labels[format!("org.opencontainers.image.{key}")]
            .as_str()
            .unwrap_or("");
        assert!(
            !v.is_empty(),
            "label org.opencontainers.image.{key}: {labels:#}"
        );
    }
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    // The manifests run the image as its own user (a runAsUser the image does not name would
    // still start, but as a user without a passwd entry).
    let ds = std::fs::read_to_string(workspace().join("deploy/kubernetes/wirespeed-agent.yaml"))
        .unwrap();
    assert!(
        ds.contains("runAsUser: 65532\n") && ds.contains("runAsGroup: 65532\n"),
        "the read-only DaemonSet runs as the image's user 65532:65532"
    );

    // Its root, file by file: exactly the binary, the libraries ldd names and /etc's three.
    let ctr = img.podman_ok(&["create", &img.reference]);
    let ctr = ctr.trim();
    let o = img.podman().args(["export", ctr]).output().expect("export");
    img.podman_ok(&["rm", ctr]);
    assert!(o.status.success(), "podman export: {}", text(&o));
    let mut files = Vec::new();
    for e in tar::Archive::new(&o.stdout[..]).entries().unwrap() {
        let e = e.unwrap();
        if e.header().entry_type().is_file() {
            files.push(e.path().unwrap().to_string_lossy().into_owned());
        }
    }
    files.sort();
    let mut want: Vec<String> = [
        "usr/bin/wirespeed",
        "etc/passwd",
        "etc/group",
        "etc/nsswitch.conf",
    ]
    .into_iter()
    .map(String::from)
    .chain(ldd_paths(wirespeed()))
    .collect();
    // podman adds empty mount points for the files it bind-mounts at run time.
    files.retain(|f| {
        !matches!(
            f.as_str(),
            "etc/hosts" | "etc/resolv.conf" | "etc/hostname" | "run/.containerenv"
        )
    });
    want.sort();
    assert_eq!(files, want, "the image's files");
    eprintln!("image {}: {} files: {files:?}", img.reference, files.len());
}

#[test]
fn agent_on_the_host_network_serves_metrics_and_the_default_command_is_the_agent() {
    let me = "agent_on_the_host_network_serves_metrics_and_the_default_command_is_the_agent";
    let Some(img) = image(me) else { return };
    let web = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let test = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (web_port, test_port) = (
        web.local_addr().unwrap().port(),
        test.local_addr().unwrap().port(),
    );
    drop((web, test));
    let agent = Running::start(
        img,
        &[
            "--network=host",
            &img.reference,
            "agent",
            &format!("--web.listen-address=127.0.0.1:{web_port}"),
            &format!("--port={test_port}"),
        ],
    );
    let ready = agent.wait_for("wirespeed agent: http://");
    eprintln!("{ready}");
    let (status, body) =
        crate::agent_common::get(format!("127.0.0.1:{web_port}").parse().unwrap(), "/metrics");
    assert_eq!(status, 200, "{body}");
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        body.contains(&format!("wirespeed_build_info{{version=\"{version}\"}} 1")),
        "{body}"
    );
    assert!(body.contains("wirespeed_host_diagnosis_ok"), "{body}");
    // The host's interfaces: the container sees the host's network.
    for l in body.lines().filter(|l| l.starts_with("wirespeed_nic_up")) {
        eprintln!("scraped: {l}");
    }
    drop(agent);

    // The image's default command, alone in a namespace of its own: the agent on 9762 and 5201.
    if !need::tool(me, "curl", "--version", "curl") {
        return;
    }
    let Some(lab) = lab(me, "wsimgd") else { return };
    let ns = lab.netns(Side::Server);
    let agent = Running::start(img, &[&netns_arg(&lab, Side::Server), &img.reference]);
    let ready = agent.wait_for("wirespeed agent: http://");
    assert!(
        ready.contains(":9762/metrics") && ready.contains(":5201"),
        "{ready}"
    );
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            "curl",
            "-sf",
            "http://127.0.0.1:9762/metrics",
        ])
        .output()
        .expect("curl");
    assert!(o.status.success(), "curl in {ns}: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("wirespeed_build_info"),
        "{}",
        text(&o)
    );
}

#[test]
fn client_and_server_containers_in_their_own_namespaces_run_a_test() {
    let me = "client_and_server_containers_in_their_own_namespaces_run_a_test";
    let Some(img) = image(me) else { return };
    let Some(lab) = lab(me, "wsimgt") else { return };
    let server_addr = lab.addr(Side::Server).expect("the lab's server address");
    let server = Running::start(
        img,
        &[
            &netns_arg(&lab, Side::Server),
            &img.reference,
            "server",
            "-1",
        ],
    );
    server.wait_for("Server listening on 5201");
    let o = img
        .podman()
        .args([
            "run",
            "--rm",
            &netns_arg(&lab, Side::Client),
            &img.reference,
        ])
        .args(["client", &server_addr.to_string(), "-t", "1", "-J"])
        .output()
        .expect("podman run client");
    assert!(o.status.success(), "client container: {}", text(&o));
    let j: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let received = j["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    let bps = j["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(received > 0, "{j:#}");
    assert_eq!(
        j["start"]["connected"][0]["remote_host"],
        server_addr.to_string()
    );
    eprintln!(
        "client container -> server container ({server_addr}): {received} bytes, {:.2} Gbit/s",
        bps / 1e9
    );
}

/// A sysfs of `ns`'s own (its network devices) mounted on a fresh directory; unmounted when
/// dropped.
struct Sysfs(tempfile::TempDir);

impl Sysfs {
    fn of(ns: &str) -> Sysfs {
        let d = tempfile::tempdir().unwrap();
        let o = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{ns}"))
            .args(["mount", "-t", "sysfs", "sysfs"])
            .arg(d.path())
            .output()
            .expect("nsenter");
        assert!(o.status.success(), "mount sysfs of {ns}: {}", text(&o));
        Sysfs(d)
    }
}

impl Drop for Sysfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).output();
    }
}

#[test]
fn tuning_profile_needs_net_admin_and_a_writable_sys_and_never_half_applies() {
    let me = "tuning_profile_needs_net_admin_and_a_writable_sys_and_never_half_applies";
    let Some(img) = image(me) else { return };
    let Some(lab) = lab(me, "wsimgu") else { return };
    let ns = lab.netns(Side::Client);
    let link = || {
        let o = Command::new("ip")
            .args(["-n", &ns, "-o", "link", "show", "ws0"])
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        let after = |k: &str| {
            let mut w = s.split_whitespace();
            w.find(|x| *x == k);
            // `-o` joins the lines with a backslash
            w.next().unwrap_or("").trim_end_matches('\\').to_string()
        };
        (after("mtu"), after("qlen"))
    };
    let before = link();
    assert_ne!(before, ("9000".to_string(), "5000".to_string()));
    let sys = Sysfs::of(&ns);
    let journal = tempfile::tempdir().unwrap();
    let sys_rw = format!("--volume={}:/sys", sys.0.path().display());
    let journal_rw = format!("--volume={}:/var/lib/wirespeed", journal.path().display());
    let tune = |extra: &[&str], args: &[&str]| {
        img.podman()
            .args([
                "run",
                "--rm",
                "--user=0",
                &netns_arg(&lab, Side::Client),
                &journal_rw,
            ])
            .args(extra)
            .arg(&img.reference)
            .arg("tune")
            .args(args)
            .output()
            .expect("podman run tune")
    };
    let apply = [
        "--iface",
        "ws0",
        "--mtu",
        "9000",
        "--txqueuelen",
        "5000",
        "--only",
        "link",
        "--apply",
    ];
    // Without the capability, without a writable /sys, without both: one line that says what
    // is missing, exit 6, and neither setting changed.
    for (extra, says) in [
        (vec![], "needs CAP_NET_ADMIN"),
        (vec![sys_rw.as_str()], "needs CAP_NET_ADMIN"),
        (vec!["--cap-add=NET_ADMIN"], "Read-only file system"),
    ] {
        let o = tune(&extra, &apply);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(6), "{extra:?}: {}", text(&o));
        assert!(err.contains(says), "{extra:?}: {}", text(&o));
        assert_eq!(link(), before, "{extra:?} changed the link: {}", text(&o));
        eprintln!("{extra:?}: {}", err.trim());
    }
    // With both: applied, then reverted from the journal the volume kept.
    let profile = ["--cap-add=NET_ADMIN", sys_rw.as_str()];
    let o = tune(&profile, &apply);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        link(),
        ("9000".to_string(), "5000".to_string()),
        "{}",
        text(&o)
    );
    eprintln!("applied in the container: ws0 mtu 9000 qlen 5000 (from {before:?})");
    let o = tune(&profile, &["revert"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(link(), before, "{}", text(&o));
}
