//! Helpers shared by the CLI tests of doctor, topo, capture and tune: the tree helpers of tune's
//! own tests (captured hosts, copies, byte-identical snapshots; one file for both crates), running
//! the binary, and the explicit kernel emulation.

#![allow(dead_code)]

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use wirespeed_host::CpuSet;

#[path = "../../../tune/tests/tune/common.rs"]
mod tree;
pub use tree::*;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

/// Run `wirespeed ARGS`.
pub fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run wirespeed")
}

/// Run `wirespeed tune --root ROOT ARGS`.
pub fn tune(root: &str, args: &[&str]) -> Output {
    run(&[&["tune", "--root", root][..], args].concat())
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// EMULATION OF THE KERNEL — in a captured tree nothing plays the kernel, so after tune writes
/// `/proc/irq/N/smp_affinity_list` this function does what the kernel would: the mask view
/// `smp_affinity` shows the same CPUs, and when the effective CPUs are no longer within the
/// request, the effective affinity (`effective_affinity_list` and `effective_affinity`) becomes
/// the request's first CPU (x86 delivers a vector to one CPU of its mask). An IRQ whose
/// effective CPUs already lie within the request keeps them, as the kernel does. Returns the
/// IRQs it changed.
pub fn emulate_kernel_irq_affinity(tree: &Path) -> Vec<u32> {
    let mut changed = Vec::new();
    let irq_dir = tree.join("proc/irq");
    let Ok(entries) = fs::read_dir(&irq_dir) else {
        return changed;
    };
    for e in entries {
        let e = e.unwrap();
        let Ok(irq) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let d = e.path();
        let Ok(req_text) = fs::read_to_string(d.join("smp_affinity_list")) else {
            continue;
        };
        let Ok(req) = CpuSet::parse_list(&req_text) else {
            continue;
        };
        let mut touched = false;
        // the mask view follows the list view
        if let Ok(mask_text) = fs::read_to_string(d.join("smp_affinity")) {
            let width = mask_width(&mask_text);
            if CpuSet::parse_mask(&mask_text).ok().as_ref() != Some(&req) {
                fs::write(d.join("smp_affinity"), format!("{}\n", req.to_mask(width))).unwrap();
                touched = true;
            }
        }
        let eff_path = d.join("effective_affinity_list");
        if let Ok(eff_text) = fs::read_to_string(&eff_path) {
            let eff = CpuSet::parse_list(&eff_text).unwrap_or_default();
            // an IRQ with no effective CPU (never started) stays so
            if !req.is_empty() && !eff.is_empty() && !eff.is_subset(&req) {
                let first = CpuSet::from_cpus(req.first());
                fs::write(&eff_path, format!("{first}\n")).unwrap();
                if let Ok(m) = fs::read_to_string(d.join("effective_affinity")) {
                    let width = mask_width(&m);
                    fs::write(
                        d.join("effective_affinity"),
                        format!("{}\n", first.to_mask(width)),
                    )
                    .unwrap();
                }
                touched = true;
            }
        }
        if touched {
            changed.push(irq);
        }
    }
    changed.sort();
    changed
}

/// The number of CPUs a mask text is printed for (its hex digits × 4, words of 32).
fn mask_width(text: &str) -> u32 {
    let words: Vec<&str> = text.trim().split(',').collect();
    let first = words.first().map(|w| w.len()).unwrap_or(1) as u32;
    (words.len() as u32 - 1) * 32 + first * 4
}

/// The EXPECTED.json of a host, and its (app CPUs) cases: the main one and the variants.
pub fn cases(host: &Path) -> (String, Vec<String>) {
    let v = expected(host);
    let iface = v["iface"].as_str().unwrap().to_string();
    let mut apps = vec![v["app_cpus"].as_str().unwrap().to_string()];
    if let Some(vars) = v["variants"].as_array() {
        // the variants of the same interface with other app CPUs (not those naming another
        // interface of the stack, or a rate)
        for var in vars {
            if let (Some(app), None) = (var["app_cpus"].as_str(), var.get("iface")) {
                apps.push(app.to_string());
            }
        }
    }
    (iface, apps)
}

/// Doctor's finding ids for a tree (the library, as `wirespeed doctor` runs it).
pub fn doctor_ids(tree: &Path, iface: &str, app: &str, rtt_ms: f64) -> Vec<String> {
    let root = wirespeed_host::Root::new(tree);
    let facts = wirespeed_host::collect(&root);
    let opts = wirespeed_doctor::Options {
        iface: Some(iface.to_string()),
        app_cpus: Some(CpuSet::parse_list(app).unwrap()),
        rtt_ms,
        rate_mbps: None,
    };
    wirespeed_doctor::diagnose(&facts, &opts)
        .unwrap()
        .into_iter()
        .map(|f| f.id)
        .collect()
}
