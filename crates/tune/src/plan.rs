//! The plan: steps that each fix one doctor finding, and notes for what software cannot fix.
//!
//! A plan is data (it serializes to JSON and back): the planner builds it from host facts, the
//! renderer (`wirespeed_report::plan`) prints it as a table, [`Plan::render_script`] writes it as
//! a standalone shell script (what `--persist` installs too), and the engine applies it.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use wirespeed_host::ethtool::{CoalesceSet, PauseSet};
use wirespeed_host::link::SizesSet;
use wirespeed_host::CpuSet;

use crate::value::{shell_quote, sysctl_key, Form};

/// Version of the plan's JSON shape.
pub const PLAN_SCHEMA: u32 = 1;

/// Finding id for a change the user asked for by flag (`--mtu`, `--txqueuelen`) that no doctor
/// finding calls for.
pub const REQUESTED: &str = "requested";
/// Finding id for the files `--persist` writes.
pub const PERSIST: &str = "persist";

/// What a step changes, in terms the engine can journal and undo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Change {
    /// Write a value into an existing kernel file (a sysctl under `/proc/sys`, a sysfs
    /// attribute).
    Write {
        path: String,
        form: Form,
        value: String,
    },
    /// Set an IRQ's requested affinity (`/proc/irq/N/smp_affinity_list`) and read the effective
    /// affinity back. `name` is the action name in `/proc/interrupts`, which survives a reboot
    /// where the number may not.
    IrqAffinity {
        irq: u32,
        name: Option<String>,
        cpus: CpuSet,
    },
    /// Create or replace a file we own (persistence); a replaced file's content is journaled.
    Create {
        path: String,
        contents: String,
        mode: u32,
    },
    /// Create a symbolic link we own (`systemctl enable` does the same).
    Link { path: String, target: String },
    /// Stop (and with `disable`, disable) a systemd service; live hosts only.
    Service {
        unit: String,
        stop: bool,
        disable: bool,
    },
    /// NIC ring sizes through the ethtool interface; live hosts only.
    Ring { iface: String, rx: u32, tx: u32 },
    /// NIC interrupt coalescing through the ethtool interface (only the fields `set` names, as
    /// the user asked); live hosts only.
    Coalesce { iface: String, set: CoalesceSet },
    /// GSO/GRO packet sizes (BIG TCP) through rtnetlink (`RTM_NEWLINK`); the IPv4 sizes only
    /// where the kernel reports them; live hosts only.
    LinkSizes { iface: String, set: SizesSet },
    /// Ethernet flow control (pause frames) through the ethtool interface, as the user asked
    /// (the switch port is the other half); live hosts only.
    Pause { iface: String, set: PauseSet },
    /// One named NIC feature (`feature` as the kernel names it, e.g. `rx-ntuple-filter`) on or
    /// off through the ethtool interface (`ETHTOOL_SFEATURES`, only that feature's bit);
    /// live hosts only.
    Feature {
        iface: String,
        feature: String,
        on: bool,
    },
}

impl Change {
    /// The file this change writes, when it writes one.
    pub fn path(&self) -> Option<String> {
        match self {
            Change::Write { path, .. }
            | Change::Create { path, .. }
            | Change::Link { path, .. } => Some(path.clone()),
            Change::IrqAffinity { irq, .. } => Some(irq_affinity_path(*irq)),
            Change::Service { .. }
            | Change::Ring { .. }
            | Change::Coalesce { .. }
            | Change::LinkSizes { .. }
            | Change::Pause { .. }
            | Change::Feature { .. } => None,
        }
    }

    /// True when the change needs the running host (a service manager, an ioctl), not files.
    pub fn live_only(&self) -> bool {
        matches!(
            self,
            Change::Service { .. }
                | Change::Ring { .. }
                | Change::Coalesce { .. }
                | Change::LinkSizes { .. }
                | Change::Pause { .. }
                | Change::Feature { .. }
        )
    }
}

/// The requested-affinity file of an IRQ.
pub fn irq_affinity_path(irq: u32) -> String {
    format!("/proc/irq/{irq}/smp_affinity_list")
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The doctor finding id this step fixes ([`REQUESTED`] or [`PERSIST`] for the two kinds of
    /// step no finding calls for).
    pub finding: String,
    /// What the step does, in a few words.
    pub summary: String,
    /// The setting as people name it: a sysctl key, a file, a service, `ethtool -G IF`.
    pub setting: String,
    /// The value now ("absent" for a file that does not exist).
    pub current: String,
    /// The value the step sets.
    pub new: String,
    /// The equivalent shell command.
    pub command: String,
    pub change: Change,
}

/// Something the plan does not change, and why: a finding software cannot fix (a PCIe link, a
/// temperature), a choice left to the user, or a warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// The finding the note is about, when there is one.
    pub finding: Option<String>,
    pub text: String,
}

/// A tuning plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub schema: u32,
    /// The root directory the plan was made from (`/` on the live host).
    pub root: String,
    /// The host's name, when known.
    pub hostname: Option<String>,
    pub iface: Option<String>,
    pub app_cpus: Option<CpuSet>,
    /// The CPUs the NIC's queue IRQs go to, and the rule that chose them.
    pub irq_cpus: Option<CpuSet>,
    pub irq_rule: Option<String>,
    /// Round-trip time the socket buffers were sized for, in milliseconds.
    pub rtt_ms: f64,
    /// Lines describing the host as the planner saw it.
    pub context: Vec<String>,
    pub steps: Vec<Step>,
    pub notes: Vec<Note>,
    /// The whole state the plan wants, including settings that already hold their value: what
    /// a post-boot script must set again (IRQ placement and governors do not survive a reboot).
    #[serde(default)]
    pub boot: Vec<Step>,
    /// Where to run the application, when the CPUs given are on another NUMA node than the
    /// NIC: the plan's first line, and the app CPUs the plan was made for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_app: Option<String>,
}

impl Plan {
    pub fn new(root: &str) -> Plan {
        Plan {
            schema: PLAN_SCHEMA,
            root: root.to_string(),
            hostname: None,
            iface: None,
            app_cpus: None,
            irq_cpus: None,
            irq_rule: None,
            rtt_ms: 0.0,
            context: Vec::new(),
            steps: Vec::new(),
            notes: Vec::new(),
            boot: Vec::new(),
            run_app: None,
        }
    }

    /// The finding ids the steps address (each once, in step order).
    pub fn addressed(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for s in &self.steps {
            if s.finding != REQUESTED && s.finding != PERSIST && !ids.contains(&s.finding) {
                ids.push(s.finding.clone());
            }
        }
        ids
    }

    /// The plan as a standalone shell script: what a post-boot script would hold, so the whole
    /// wanted state ([`Plan::boot`], or the steps when a plan has no boot list), including values
    /// that already hold. Services are left out (a boot script does not stop services; `--persist`
    /// disables them instead), and so are the files `--persist` would create.
    pub fn render_script(&self) -> String {
        self.render_script_filtered(&|_| true)
    }

    /// [`Plan::render_script`] restricted to the steps `keep` accepts.
    pub fn render_script_filtered(&self, keep: &dyn Fn(&Step) -> bool) -> String {
        let items: Vec<&Step> = if self.boot.is_empty() {
            self.steps.iter().collect()
        } else {
            self.boot.iter().collect()
        };
        let items: Vec<&Step> = items
            .into_iter()
            .filter(|s| {
                !matches!(
                    s.change,
                    Change::Create { .. } | Change::Link { .. } | Change::Service { .. }
                )
            })
            .filter(|s| keep(s))
            .collect();
        let mut out = String::new();
        out.push_str("#!/bin/sh\n");
        let host = self.hostname.as_deref().unwrap_or("this host");
        let _ = writeln!(out, "# wirespeed tune plan for {host}");
        if let Some(line) = &self.run_app {
            let _ = writeln!(out, "# FIRST: {line}");
        }
        for c in &self.context {
            let _ = writeln!(out, "#   {c}");
        }
        out.push_str(
            "# Run as root. Each command follows a comment naming the finding it answers.\n",
        );
        out.push_str("set -u\n\n");
        if items
            .iter()
            .any(|s| matches!(&s.change, Change::IrqAffinity { name: Some(_), .. }))
        {
            out.push_str(SCRIPT_IRQ_FN);
            out.push('\n');
        }
        for s in items {
            let _ = writeln!(out, "# {}: {}", s.finding, s.summary);
            let _ = writeln!(out, "{}", script_command(s));
        }
        for n in &self.notes {
            let _ = writeln!(
                out,
                "# not changed: {}{}",
                n.finding
                    .as_deref()
                    .map(|f| format!("{f}: "))
                    .unwrap_or_default(),
                n.text
            );
        }
        out
    }
}

/// A setting as the plan's table shows it: CPU files without their common directory
/// (`cpufreq/policy6/scaling_governor`); the step's command under it has the full path.
/// A setting as the plan's table writes it: sysfs CPU paths without their common prefix.
pub fn table_setting(setting: &str) -> &str {
    setting
        .strip_prefix("/sys/devices/system/cpu/")
        .unwrap_or(setting)
}

/// The shell function the script uses to find an IRQ by its action name (numbers change across
/// boots; names such as `mlx5_comp3@pci:0000:01:00.0` do not).
const SCRIPT_IRQ_FN: &str = r#"# set_irq NAME NUMBER CPUS: pin the IRQ whose /proc/interrupts action is NAME (NUMBER when the
# name is not found) to CPUS.
set_irq() {
    irq=$(awk -v n="$1" '{ for (i = 2; i <= NF; i++) if ($i == n) { sub(":", "", $1); print $1; exit } }' /proc/interrupts)
    [ -n "$irq" ] || irq=$2
    echo "$3" > /proc/irq/"$irq"/smp_affinity_list || echo "IRQ $irq ($1): not movable" >&2
}
"#;

/// The command for one step inside the script (IRQs by name, so the script survives a reboot).
fn script_command(s: &Step) -> String {
    match &s.change {
        Change::IrqAffinity {
            irq,
            name: Some(name),
            cpus,
        } => format!("set_irq {} {irq} {cpus}", shell_quote(name)),
        _ => s.command.clone(),
    }
}

/// The equivalent shell command for a change.
pub fn command_for(change: &Change) -> String {
    match change {
        Change::Write { path, value, .. } => match sysctl_key(path) {
            Some(key) => format!("sysctl -w {}", shell_quote(&format!("{key}={value}"))),
            None => format!("echo {} > {path}", shell_quote(value)),
        },
        Change::IrqAffinity { irq, cpus, .. } => {
            format!("echo {cpus} > {}", irq_affinity_path(*irq))
        }
        Change::Create { path, .. } => format!("cat > {path} <<'EOF' ... EOF"),
        Change::Link { path, target } => format!("ln -s {target} {path}"),
        Change::Service {
            unit,
            stop,
            disable,
        } => match (stop, disable) {
            (true, true) => format!("systemctl disable --now {unit}"),
            (true, false) => format!("systemctl stop {unit}"),
            (false, true) => format!("systemctl disable {unit}"),
            (false, false) => String::new(),
        },
        Change::Ring { iface, rx, tx } => format!("ethtool -G {iface} rx {rx} tx {tx}"),
        Change::Coalesce { iface, set } => format!("ethtool -C {iface} {}", set.ethtool_args()),
        Change::LinkSizes { iface, set } => format!("ip link set dev {iface} {}", set.ip_args()),
        Change::Pause { iface, set } => format!("ethtool -A {iface} {}", set.ethtool_args()),
        Change::Feature { iface, feature, on } => format!(
            "ethtool -K {iface} {} {}",
            wirespeed_host::ethtool::feature_arg(feature),
            if *on { "on" } else { "off" }
        ),
    }
}

/// What applying a plan did to each of its steps (the engine fills it).
/// How one step of an apply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepStatus {
    Applied,
    /// The setting already held the new value; nothing written or journaled.
    AlreadySet,
    /// A managed IRQ: the kernel refused (EIO).
    NotMovable,
    Failed,
    /// The driver does not implement the setting or refuses the value (coalescing:
    /// `EOPNOTSUPP`/`EINVAL`); nothing changed.
    NotSupported,
    /// Not possible on this root (a service or ring on a captured tree).
    Skipped,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Applied => "applied",
            StepStatus::AlreadySet => "already set",
            StepStatus::NotMovable => "not movable",
            StepStatus::Failed => "FAILED",
            StepStatus::NotSupported => "not supported",
            StepStatus::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// Index into the plan's steps.
    pub step: usize,
    pub setting: String,
    pub status: StepStatus,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    /// Host path of the journal.
    pub journal: String,
    pub steps: Vec<StepReport>,
}

impl ApplyReport {
    pub fn count(&self, status: StepStatus) -> usize {
        self.steps.iter().filter(|s| s.status == status).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(finding: &str, change: Change) -> Step {
        Step {
            finding: finding.into(),
            summary: "s".into(),
            setting: "x".into(),
            current: "a".into(),
            new: "b".into(),
            command: command_for(&change),
            change,
        }
    }

    #[test]
    fn commands_read_like_what_an_engineer_types() {
        let w = Change::Write {
            path: "/proc/sys/net/ipv4/tcp_rmem".into(),
            form: Form::Words,
            value: "4096 131072 268435456".into(),
        };
        assert_eq!(
            command_for(&w),
            "sysctl -w 'net.ipv4.tcp_rmem=4096 131072 268435456'"
        );
        let m = Change::Write {
            path: "/sys/class/net/eth0/mtu".into(),
            form: Form::Words,
            value: "9000".into(),
        };
        assert_eq!(command_for(&m), "echo 9000 > /sys/class/net/eth0/mtu");
        let i = Change::IrqAffinity {
            irq: 111,
            name: Some("mlx5_comp3@pci:0000:01:00.0".into()),
            cpus: CpuSet::parse_list("10").unwrap(),
        };
        assert_eq!(command_for(&i), "echo 10 > /proc/irq/111/smp_affinity_list");
        let mut p = Plan::new("/");
        p.steps.push(step("irq-cross-l3", i));
        p.steps.push(step("socket-buffers-small", w));
        p.steps.push(step(REQUESTED, m));
        assert_eq!(p.addressed(), vec!["irq-cross-l3", "socket-buffers-small"]);
        let script = p.render_script();
        assert!(script.starts_with("#!/bin/sh\n"));
        assert!(script.contains("set_irq mlx5_comp3@pci:0000:01:00.0 111 10\n"));
        assert!(script.contains("sysctl -w 'net.ipv4.tcp_rmem=4096 131072 268435456'\n"));
        let json = serde_json::to_string(&p).unwrap();
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn the_script_function_finds_irqs_by_name() {
        // The awk program in the script, run by a real shell on recorded /proc/interrupts text.
        let dir = tempfile::tempdir().unwrap();
        let interrupts = dir.path().join("interrupts");
        std::fs::write(
            &interrupts,
            "           CPU0       CPU1\n 111:          0          2  IR-PCI-MSIX-0000:01:00.0    4-edge      mlx5_comp3@pci:0000:01:00.0\n  68:  1 2  IR-PCI-MSIX nvme0q7\n",
        )
        .unwrap();
        let awk = SCRIPT_IRQ_FN
            .lines()
            .find(|l| l.contains("awk"))
            .unwrap()
            .trim()
            .trim_start_matches("irq=$(")
            .trim_end_matches(')')
            .replace("/proc/interrupts", &interrupts.to_string_lossy())
            .replace("\"$1\"", "mlx5_comp3@pci:0000:01:00.0");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&awk)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "111");
    }
}
