//! From a host view and the user's options to a plan.
//!
//! The rules, each tied to the doctor finding it answers:
//! - IRQ placement (`irq-on-app-core`, `irq-cross-l3`, `irq-numa-remote`): the NIC's queue IRQs
//!   round-robin over the IRQ CPUs, chosen by `--irq-cpus LIST`, `--irq-policy node` (the NIC's
//!   node) or `--irq-policy l3` (the app CPUs' L3 group); the app CPUs and their SMT siblings are
//!   never IRQ CPUs unless explicitly allowed. A control vector moves only when it sits on an app
//!   CPU or outside the IRQ CPUs. Without a policy flag, IRQs move only when doctor reports one
//!   of the three findings (then `l3` with app CPUs, else `node`).
//! - Socket buffers (`socket-buffers-small`): `tcp_rmem`/`tcp_wmem` maximum = 2 × link speed ×
//!   RTT rounded up to a power of two, capped at `i32::MAX` (the kernel's limit), `rmem_max` /
//!   `wmem_max` at least that; a value already larger is never lowered.
//! - Congestion control (`congestion-control-loss-based`): doctor's rule
//!   ([`wirespeed_doctor::checks::cc_choice`]): bbr, then htcp, loaded or shipped as a module the
//!   sysctl write loads; else unchanged with doctor's words in a note.
//! - `default_qdisc` fq (`default-qdisc-not-fq`) and `tcp_mtu_probing` 1 with a jumbo MTU
//!   (`tcp-mtu-probing-off`): doctor's file writes; `netdev_max_backlog` / `netdev_budget` when
//!   softnet shows drops / squeezes.
//! - `--mtu N`, `--txqueuelen N`; governor `performance` on the app and IRQ CPUs
//!   (`cpu-governor-not-performance`), one write per cpufreq policy; ring sizes to the maximum
//!   (live only); irqbalance stopped with `--stop-irqbalance`, else a warning.
//! - Interrupt coalescing only as requested (`--adaptive-rx`, `--rx-usecs`, `--tx-usecs`): a
//!   low-latency setting cannot be told from a bad one, so no finding asks for it. Unknown (no
//!   step, a note) when the NIC did not answer `ETHTOOL_GCOALESCE`.
//! - Doctor's file writes for `tcp-options-off`, `txqueuelen-short`, `arfs-off` (and its
//!   `ethtool -K IF ntuple on` through `ETHTOOL_SFEATURES` when the NIC can); deep C-states
//!   off (`cstates-deep`) on the CPUs that serve the NIC after the IRQ moves; rings by doctor's
//!   `ring-below-max` rule.
//! - Socket buffers sized for the rate the command's target resolved (`--rate`, else the link
//!   speed, else the instance type's rate: `wirespeed_doctor::target`), passed in
//!   ([`PlanOptions::rate`]): the planner chooses no rate itself.
//! - An app on another NUMA node than the NIC: the plan's first line says where to run it, and
//!   the plan is made for the app there (no dead end).
//! - BIG TCP (`big-tcp-off`): GSO/GRO sizes (and the IPv4 ones the kernel reports) to doctor's
//!   size, at most the driver's limit, through rtnetlink; flow control only as requested
//!   (`--pause`), since the switch port is the other half.
//! - Notes for findings software cannot fix (a PCIe link, a temperature) or should not change
//!   live (the IOMMU mode, PCIe payload sizes: boot parameters, firmware), saying what to do.

use std::collections::BTreeSet;

use wirespeed_doctor::placement::{self, auto_policy, IrqCpus, PlacementError, Vector};
use wirespeed_doctor::rate::Basis;
use wirespeed_doctor::sizing;
use wirespeed_doctor::target::{HostTarget, RateTarget};
use wirespeed_host::ethtool::{CoalesceSet, PauseSet, NTUPLE};
use wirespeed_host::link::SizesSet;
use wirespeed_host::CpuSet;
use wirespeed_model::units;

use crate::plan::{command_for, Change, Note, Plan, Step, PERSIST, REQUESTED};
use crate::value::Form;
use crate::view::{HostView, VectorKind};

pub use wirespeed_doctor::placement::IrqPolicy;
pub use wirespeed_doctor::sizing::{buffer_target, BUFFER_CAP};

/// Finding ids: doctor's contract, plus tune's own for settings no doctor check covers.
pub mod ids {
    /// `default_qdisc` is not fq (doctor's finding).
    pub use wirespeed_doctor::ids::DEFAULT_QDISC_NOT_FQ as QDISC;
    /// `tcp_mtu_probing` is off with a jumbo MTU (doctor's finding).
    pub use wirespeed_doctor::ids::TCP_MTU_PROBING_OFF as MTU_PROBING;
    pub use wirespeed_doctor::ids::{
        APP_NUMA_REMOTE, CONGESTION_CONTROL_LOSS_BASED as CC_LOSS_BASED,
        CPU_GOVERNOR_NOT_PERFORMANCE as GOVERNOR, IRQBALANCE_RUNNING as IRQBALANCE, IRQ_CROSS_L3,
        IRQ_NUMA_REMOTE, IRQ_ON_APP_CORE, MTU_BELOW_JUMBO, NIC_TEMPERATURE_HIGH as NIC_TEMPERATURE,
        PCIE_BANDWIDTH_BELOW_LINE_RATE as PCIE_BANDWIDTH, PCIE_LINK_DOWNGRADED,
        SOCKET_BUFFERS_SMALL, SOFTNET_DROPS,
    };
    /// IRQ placement for the application moved to the NIC's NUMA node (the plan's first line);
    /// doctor, run with the CPUs the user gave, cannot confirm it.
    pub const APP_ON_NIC_NODE: &str = "app-on-nic-node";
    /// NIC rings below the driver's maximum (doctor's `ring-below-max`).
    pub use wirespeed_doctor::ids::RING_BELOW_MAX as RING;
    pub use wirespeed_doctor::ids::{ARFS_OFF, CSTATES_DEEP, TCP_OPTIONS_OFF, TXQUEUELEN_SHORT};
    pub use wirespeed_doctor::ids::{
        BIG_TCP_OFF, IOMMU_TRANSLATED, PAUSE_FRAMES_OFF, PCIE_MAXREADREQ_SMALL, PCIE_MPS_SMALL,
    };
}

/// Groups of settings, to restrict a plan (`--only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Irq,
    Stack,
    Link,
    Governor,
    Ring,
    Coalesce,
    Pause,
    Irqbalance,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Category::Irq,
        Category::Stack,
        Category::Link,
        Category::Governor,
        Category::Ring,
        Category::Coalesce,
        Category::Pause,
        Category::Irqbalance,
    ];

    pub fn parse(s: &str) -> Option<Category> {
        Some(match s {
            "irq" => Category::Irq,
            "stack" => Category::Stack,
            "link" => Category::Link,
            "governor" => Category::Governor,
            "ring" => Category::Ring,
            "coalesce" => Category::Coalesce,
            "pause" => Category::Pause,
            "irqbalance" => Category::Irqbalance,
            _ => return None,
        })
    }

    /// The categories `--only` names (`list`, each word trimmed), every one when it names
    /// none; the first word that is not a category is the error.
    pub fn parse_only(list: &[String]) -> Result<BTreeSet<Category>, String> {
        if list.is_empty() {
            return Ok(Category::ALL.into_iter().collect());
        }
        list.iter()
            .map(|s| {
                Category::parse(s.trim()).ok_or_else(|| {
                    format!(
                        "--only {s}: not one of irq, stack, link, governor, ring, coalesce, pause, irqbalance"
                    )
                })
            })
            .collect()
    }
}

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub root: String,
    pub app_cpus: Option<CpuSet>,
    pub rtt_ms: f64,
    /// The rate socket buffers are sized for, and where it came from: the command's target's
    /// (`wirespeed_doctor::target::resolve`: `--rate`, else the interface's link speed, else the
    /// instance type's advertised rate). The planner sizes for it and chooses none itself;
    /// `None`: no rate, and the plan says buffers are not sized.
    pub rate: Option<RateTarget>,
    pub irq: Option<IrqPolicy>,
    /// Let `--irq-cpus` include app CPUs.
    pub allow_irq_on_app_cpus: bool,
    pub mtu: Option<u32>,
    pub txqueuelen: Option<u32>,
    /// Interrupt coalescing the user asked for (`--adaptive-rx`, `--rx-usecs`, `--tx-usecs`);
    /// empty: coalescing is not planned.
    pub coalesce: CoalesceSet,
    /// Flow control the user asked for (`--pause`, `--rx-pause`, `--tx-pause`); empty: not
    /// planned (the switch port is the other half, so no finding asks for it alone).
    pub pause: PauseSet,
    pub stop_irqbalance: bool,
    pub persist: bool,
    pub only: BTreeSet<Category>,
}

impl PlanOptions {
    pub fn new(root: &str) -> PlanOptions {
        PlanOptions {
            root: root.to_string(),
            app_cpus: None,
            rtt_ms: wirespeed_model::units::DEFAULT_RTT_MS,
            rate: None,
            irq: None,
            allow_irq_on_app_cpus: false,
            mtu: None,
            txqueuelen: None,
            coalesce: CoalesceSet::default(),
            pause: PauseSet::default(),
            stop_irqbalance: false,
            persist: false,
            only: Category::ALL.into_iter().collect(),
        }
    }

    /// What the resolved target says: its RTT, its rate and where that came from, and the CPUs
    /// `--app-cpus` named (each checked once, by the target).
    pub fn with_target(self, t: &HostTarget) -> PlanOptions {
        PlanOptions {
            rtt_ms: t.rtt_ms(),
            rate: t.rate.clone(),
            app_cpus: t.cpus("--app-cpus").cloned(),
            ..self
        }
    }

    /// The rate `--rate` asked for, Mbit/s: what doctor's checks take (without it each NIC is
    /// checked at its own link speed, as `wirespeed doctor` does).
    pub fn requested_mbps(&self) -> Option<u64> {
        self.rate
            .as_ref()
            .filter(|r| matches!(r.basis, Basis::Requested(_)))
            .map(|r| r.rate.mbps())
    }
}

/// A request the planner refuses; each names the flag and the value. The RTT, the rate and
/// the CPUs come checked from the command's target (`wirespeed_doctor::target`): the planner
/// does not check them again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("--irq-cpus {irq} overlaps --app-cpus {app} on CPUs {overlap}; pass --allow-irq-on-app-cpus if that is what you want")]
    Overlap {
        irq: CpuSet,
        app: CpuSet,
        overlap: CpuSet,
    },
    /// The placement rule (doctor's) refuses: its words, not a copy.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    #[error("{flag} {value}: {reason}")]
    BadValue {
        flag: String,
        value: String,
        reason: String,
    },
}

struct Builder<'a> {
    view: &'a HostView,
    opts: &'a PlanOptions,
    plan: Plan,
}

impl Builder<'_> {
    /// Want `change`: it joins the boot state (except services and persistence files) and,
    /// when `current` is not already `new`, the steps.
    fn push(
        &mut self,
        finding: &str,
        summary: String,
        setting: String,
        current: String,
        new: String,
        change: Change,
    ) {
        let command = command_for(&change);
        let holds = match &change {
            Change::Write { form, .. } => form.same(&current, &new),
            Change::IrqAffinity { .. } => Form::CpuList.same(&current, &new),
            Change::Ring { .. }
            | Change::Coalesce { .. }
            | Change::LinkSizes { .. }
            | Change::Pause { .. }
            | Change::Feature { .. } => current == new,
            Change::Create { .. } | Change::Link { .. } | Change::Service { .. } => false,
        };
        let step = Step {
            finding: finding.to_string(),
            summary,
            setting,
            current,
            new,
            command,
            change,
        };
        if !matches!(
            step.change,
            Change::Create { .. } | Change::Link { .. } | Change::Service { .. }
        ) {
            self.plan.boot.push(step.clone());
        }
        if !holds {
            self.plan.steps.push(step);
        }
    }

    fn sysctl(&mut self, finding: &str, key: &str, current: String, new: String, summary: String) {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let change = Change::Write {
            path,
            form: Form::Words,
            value: new.clone(),
        };
        self.push(finding, summary, key.to_string(), current, new, change);
    }

    fn note(&mut self, finding: Option<&str>, text: String) {
        self.plan.notes.push(Note {
            finding: finding.map(str::to_string),
            text,
        });
    }

    fn on(&self, c: Category) -> bool {
        self.opts.only.contains(&c)
    }
}

/// Why no plan could be made for a host.
#[derive(Debug, thiserror::Error)]
pub enum HostPlanError {
    /// The interface named is not one of the host's.
    #[error(transparent)]
    Collect(#[from] crate::collect::CollectError),
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// The plan for a host read through `root` (`facts` collected through it), for the interface
/// named or else the host's NIC: an upper device (bond, VLAN, bridge) with NICs beneath it gets
/// a plan for each NIC and one for the stack ([`plan_stack`]), anything else the one view's
/// ([`plan`]), each with doctor's findings at the options' RTT, rate and app CPUs.
pub fn plan_host(
    root: &wirespeed_host::Root,
    facts: &wirespeed_host::HostFacts,
    iface: Option<&str>,
    opts: &PlanOptions,
) -> Result<Plan, HostPlanError> {
    use crate::collect;
    let (app, rtt, rate) = (opts.app_cpus.as_ref(), opts.rtt_ms, opts.requested_mbps());
    if let Some(i) = iface {
        if let Some(sv) = collect::stack_views_of(root, facts, i, app, rtt, rate)? {
            return Ok(plan_stack(&sv, opts)?);
        }
    }
    let mut view = collect::view(root, facts, iface)?;
    let nic = view.nic.as_ref().map(|n| n.name.clone());
    view.findings = collect::findings(facts, nic.as_deref(), app, rtt, rate);
    Ok(plan(&view, opts)?)
}

/// Build the plan.
pub fn plan(view: &HostView, opts: &PlanOptions) -> Result<Plan, PlanError> {
    if let Some(m) = opts.mtu {
        if !(68..=65535).contains(&m) {
            return Err(PlanError::BadValue {
                flag: "--mtu".into(),
                value: m.to_string(),
                reason: "must be between 68 and 65535".into(),
            });
        }
    }
    for (flag, v) in [
        ("--rx-usecs", opts.coalesce.rx_usecs),
        ("--tx-usecs", opts.coalesce.tx_usecs),
    ] {
        if let Some(u) = v.filter(|u| *u > MAX_COALESCE_USECS) {
            return Err(PlanError::BadValue {
                flag: flag.into(),
                value: u.to_string(),
                reason: format!("must be at most {MAX_COALESCE_USECS} microseconds"),
            });
        }
    }
    if let Some(q) = opts.txqueuelen {
        if q == 0 || q > 1_000_000 {
            return Err(PlanError::BadValue {
                flag: "--txqueuelen".into(),
                value: q.to_string(),
                reason: "must be between 1 and 1000000".into(),
            });
        }
    }
    // The app on another NUMA node than the NIC: say where to run it, and plan for that.
    let moved = relocate_app(view, opts);
    let moved_opts;
    let opts = match &moved {
        Some(m) => {
            moved_opts = PlanOptions {
                app_cpus: Some(m.cpus.clone()),
                ..opts.clone()
            };
            &moved_opts
        }
        None => opts,
    };
    let mut b = Builder {
        view,
        opts,
        plan: Plan::new(&opts.root),
    };
    b.plan.hostname = view.hostname.clone();
    b.plan.iface = view.nic.as_ref().map(|n| n.name.clone());
    b.plan.app_cpus = opts.app_cpus.clone();
    b.plan.rtt_ms = opts.rtt_ms;
    if let Some(m) = &moved {
        b.plan.run_app = Some(m.line.clone());
    }
    context(&mut b);

    let irq_cpus = irq_targets(&mut b)?;
    if b.on(Category::Irqbalance) {
        irqbalance(&mut b);
    }
    let mut handling = CpuSet::new();
    if b.on(Category::Irq) {
        handling = place_irqs(&mut b, irq_cpus.as_ref());
    } else if let Some(nic) = &view.nic {
        handling = nic
            .irqs
            .iter()
            .fold(CpuSet::new(), |acc, i| acc.union(&i.effective));
    }
    if b.on(Category::Stack) {
        stack(&mut b);
    }
    if b.on(Category::Link) {
        link(&mut b);
        big_tcp(&mut b);
    }
    if b.on(Category::Governor) {
        governor(&mut b, &handling);
    }
    if b.on(Category::Ring) {
        ring(&mut b);
    }
    if b.on(Category::Coalesce) {
        coalesce(&mut b);
    }
    if b.on(Category::Pause) {
        pause(&mut b);
    }
    doctor_writes(&mut b);
    leftover_notes(&mut b);
    // what no setting can fix comes first
    let hardware = |n: &Note| {
        matches!(
            n.finding.as_deref(),
            Some(ids::PCIE_LINK_DOWNGRADED | ids::PCIE_BANDWIDTH | ids::NIC_TEMPERATURE)
        )
    };
    b.plan.notes.sort_by_key(|n| !hardware(n));
    if opts.persist {
        persist(&mut b);
    }
    Ok(b.plan)
}

/// Where to run an application that the user placed on another NUMA node than the NIC.
struct AppMove {
    /// The CPUs the plan assumes for the application: as many as were given, on the NIC's
    /// node, one per core first.
    cpus: CpuSet,
    /// The first line of the plan.
    line: String,
}

/// When every app CPU is on another NUMA node than the NIC (Red Hat's "most expensive mistake":
/// each packet crosses the inter-socket link), the CPUs on the NIC's node to run the
/// application on instead.
fn relocate_app(view: &HostView, opts: &PlanOptions) -> Option<AppMove> {
    let app = opts.app_cpus.as_ref()?;
    let layout = &view.layout;
    if !layout.multi_node() {
        return None;
    }
    let nic = view.nic.as_ref()?;
    let node = nic.numa_node?;
    let node_cpus = layout.numa_nodes.get(&node)?;
    if node_cpus.is_empty() || app.intersects(node_cpus) {
        return None;
    }
    // one CPU per core first (an SMT sibling shares the core's caches and execution units)
    let mut pick = CpuSet::new();
    for c in node_cpus.iter() {
        if pick.len() >= app.len() {
            break;
        }
        let sibs = layout.with_siblings(&CpuSet::from_cpus([c]));
        if !sibs.intersects(&pick) {
            pick.insert(c);
        }
    }
    for c in node_cpus.iter() {
        if pick.len() >= app.len() {
            break;
        }
        pick.insert(c);
    }
    let app_nodes: BTreeSet<u32> = app.iter().filter_map(|c| layout.node_of(c)).collect();
    let from = app_nodes
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let first = pick.first().unwrap_or(0);
    let line = format!(
        "run the application on {}'s NUMA node {node} ({}), not on {} (node {from}): e.g. --app-cpus {pick}, `wirespeed -c HOST -A {first}` or `wirespeed -c HOST --cpus {pick}`, `iperf3 -A {first}`, or `numactl --cpunodebind={node} --membind={node} -- APP`; this plan places the IRQs for the application on {}",
        nic.name,
        wirespeed_model::units::cpu_list(node_cpus),
        wirespeed_model::units::cpu_list(app),
        wirespeed_model::units::cpu_list(&pick),
    );
    Some(AppMove { cpus: pick, line })
}

fn context(b: &mut Builder<'_>) {
    let v = b.view;
    if let Some(nic) = &v.nic {
        let mut parts = vec![];
        if let Some(d) = &nic.driver {
            parts.push(d.clone());
        }
        match nic.speed_mbps {
            Some(s) => parts.push(wirespeed_model::units::speed_mbps(s)),
            None => parts.push("link speed unknown".into()),
        }
        if let Some(m) = nic.mtu {
            parts.push(format!("MTU {m}"));
        }
        match (nic.numa_node, &nic.local_cpus) {
            (Some(n), _) => parts.push(format!("NUMA node {n}")),
            (None, Some(l)) => parts.push(format!("local {}", wirespeed_model::units::cpu_list(l))),
            _ => {}
        }
        let q = nic
            .irqs
            .iter()
            .filter(|i| i.kind == VectorKind::Queue)
            .count();
        let c = nic.irqs.len() - q;
        parts.push(format!("{q} queue IRQs, {c} control"));
        b.plan
            .context
            .push(format!("interface {} ({})", nic.name, parts.join(", ")));
    }
    if let Some(words) = &v.nic_choice {
        b.plan.context.push(words.clone());
    }
    let layout = &v.layout;
    if !layout.l3_groups.is_empty() {
        let groups: Vec<String> = layout.l3_groups.iter().map(|g| g.to_string()).collect();
        let nodes = layout.numa_nodes.len().max(1);
        b.plan.context.push(format!(
            "{} online; L3 group{} {}; {nodes} NUMA node{}",
            wirespeed_model::units::cpu_list(&layout.online),
            if groups.len() == 1 { "" } else { "s" },
            groups.join(" | "),
            if nodes == 1 { "" } else { "s" }
        ));
    }
    b.plan.context.push(format!(
        "app {}; socket buffers sized for RTT {} ms{}",
        b.opts
            .app_cpus
            .as_ref()
            .map_or_else(|| "CPUs not given".into(), wirespeed_model::units::cpu_list),
        b.opts.rtt_ms,
        rate_basis(b.opts)
            .map(|(_, words)| format!(" and {words}"))
            .unwrap_or_default()
    ));
}

/// Resolve the IRQ CPUs from the options (and findings when no policy is given) by the rule
/// doctor's fixes use ([`placement`]).
fn irq_targets(b: &mut Builder<'_>) -> Result<Option<CpuSet>, PlanError> {
    let v = b.view;
    let app = b.opts.app_cpus.clone().unwrap_or_default();
    let nic = v.nic.as_ref().map(|n| n.locality());
    let explicit = b.opts.irq.clone();
    let policy = match explicit.clone() {
        Some(p) => Some(p),
        None if b.on(Category::Irq)
            && (v.has(ids::IRQ_ON_APP_CORE)
                || v.has(ids::IRQ_CROSS_L3)
                || v.has(ids::IRQ_NUMA_REMOTE)) =>
        {
            Some(auto_policy(&v.layout, nic, &app))
        }
        None => None,
    };
    let Some(policy) = policy else {
        return Ok(None);
    };
    let chosen = if explicit.is_some() {
        ""
    } else {
        ", chosen because doctor reports IRQ placement findings; --irq-policy/--irq-cpus to choose"
    };
    if let IrqPolicy::Cpus(cpus) = &policy {
        let overlap = cpus.intersection(&app);
        if !overlap.is_empty() && !b.opts.allow_irq_on_app_cpus {
            return Err(PlanError::Overlap {
                irq: cpus.clone(),
                app,
                overlap,
            });
        }
    }
    let IrqCpus { cpus, rule } = placement::irq_cpus(&v.layout, nic, &app, &policy)?;
    b.plan.irq_cpus = Some(cpus.clone());
    b.plan.irq_rule = Some(format!("{rule}{chosen}"));
    b.plan.context.push(format!(
        "IRQ {} {cpus} ({rule}{chosen})",
        if cpus.len() == 1 { "CPU" } else { "CPUs" }
    ));
    Ok(Some(cpus))
}

fn irqbalance(b: &mut Builder<'_>) {
    if b.view.irqbalance_running != Some(true) {
        return;
    }
    if b.opts.stop_irqbalance {
        let change = Change::Service {
            unit: "irqbalance.service".into(),
            stop: true,
            disable: b.opts.persist,
        };
        b.push(
            ids::IRQBALANCE,
            "stop irqbalance so it does not move the pinned IRQs back".into(),
            "irqbalance.service".into(),
            "running".into(),
            if b.opts.persist {
                "stopped, disabled"
            } else {
                "stopped"
            }
            .into(),
            change,
        );
    } else {
        b.note(
            Some(ids::IRQBALANCE),
            "irqbalance is running and will undo the IRQ pinning of this plan within seconds; pass --stop-irqbalance (or ban these CPUs in its IRQBALANCE_BANNED_CPULIST)".into(),
        );
    }
}

/// Place the NIC's IRQs; returns the CPUs that will handle the NIC afterwards.
fn place_irqs(b: &mut Builder<'_>, targets: Option<&CpuSet>) -> CpuSet {
    let v = b.view;
    let Some(nic) = &v.nic else {
        return CpuSet::new();
    };
    let Some(targets) = targets else {
        return nic
            .irqs
            .iter()
            .fold(CpuSet::new(), |acc, i| acc.union(&i.effective));
    };
    let app = b.opts.app_cpus.clone().unwrap_or_default();
    let app_l3 = v.layout.l3_union(&app);
    let nic_node_cpus = nic
        .numa_node
        .and_then(|n| v.layout.numa_nodes.get(&n))
        .cloned()
        .filter(|_| v.layout.multi_node());
    // IRQs that already sit where the layout wants them keep the layout's reason in the boot state
    let layout_finding = [
        ids::IRQ_ON_APP_CORE,
        ids::IRQ_CROSS_L3,
        ids::IRQ_NUMA_REMOTE,
    ]
    .into_iter()
    .find(|id| v.has(id))
    .unwrap_or(REQUESTED);
    let vectors: Vec<Vector> = nic.irqs.iter().map(|i| i.vector()).collect();
    let wanted = placement::place(&vectors, targets, &app);
    let mut handling = CpuSet::new();
    let mut moved_queue = 0usize;
    let queue_count = vectors
        .iter()
        .filter(|v| v.kind == VectorKind::Queue)
        .count();
    for irq in &nic.irqs {
        // a control vector that already sits well stays
        let Some(new) = wanted.get(&irq.irq).cloned() else {
            handling = handling.union(&irq.effective);
            continue;
        };
        handling = handling.union(&new);
        // Which finding this move fixes: the most specific one that holds before and not after.
        let finding = if irq.requested == new {
            layout_finding
        } else if irq.effective.intersects(&app) && !new.intersects(&app) {
            ids::IRQ_ON_APP_CORE
        } else if nic_node_cpus
            .as_ref()
            .is_some_and(|n| !irq.effective.is_subset(n) && new.is_subset(n))
        {
            ids::IRQ_NUMA_REMOTE
        } else if !app.is_empty()
            && irq.kind == VectorKind::Queue
            && !irq.effective.is_subset(&app_l3)
            && new.is_subset(&app_l3)
        {
            ids::IRQ_CROSS_L3
        } else {
            REQUESTED
        };
        // placement for an application the plan moved to the NIC's node answers no finding
        // doctor reports for the CPUs the user gave
        let finding = if b.plan.run_app.is_some() && finding != REQUESTED && !v.has(finding) {
            ids::APP_ON_NIC_NODE
        } else {
            finding
        };
        if irq.kind == VectorKind::Queue && irq.requested != new {
            moved_queue += 1;
        }
        let label = irq
            .name
            .as_deref()
            .map(|n| n.split('@').next().unwrap_or(n))
            .unwrap_or("");
        let kind = match irq.kind {
            VectorKind::Queue => "queue",
            VectorKind::Control => "control",
        };
        let label = if label.is_empty() {
            String::new()
        } else {
            format!(" {label}")
        };
        let summary = if irq.requested == new {
            format!("IRQ {}{label} ({kind} vector) on CPU {new}", irq.irq)
        } else if irq.requested == irq.effective {
            format!(
                "IRQ {}{label} ({kind} vector) from CPU {} to CPU {new}",
                irq.irq, irq.effective
            )
        } else {
            format!(
                "IRQ {}{label} ({kind} vector) from {} (effective {}) to CPU {new}",
                irq.irq,
                wirespeed_model::units::cpu_list(&irq.requested),
                irq.effective
            )
        };
        let change = Change::IrqAffinity {
            irq: irq.irq,
            name: irq.name.clone(),
            cpus: new.clone(),
        };
        b.push(
            finding,
            summary,
            crate::plan::irq_affinity_path(irq.irq),
            irq.requested.to_string(),
            new.to_string(),
            change,
        );
    }
    if queue_count > 0 && moved_queue == 0 {
        b.plan.context.push(format!(
            "the {queue_count} queue IRQs already spread evenly over {targets}"
        ));
    }
    handling
}

/// The rate socket buffers are sized for, Mbit/s, and the words that say it and where it came
/// from: the target's ([`PlanOptions::rate`]), `40 Gbit/s (--rate)`, `100 Gbit/s (link speed)`.
fn rate_basis(opts: &PlanOptions) -> Option<(u64, String)> {
    let r = opts.rate.as_ref()?;
    Some((r.rate.mbps(), r.rate.from_source(&r.basis.whence())))
}

fn stack(b: &mut Builder<'_>) {
    let v = b.view;
    let s = &v.stack;
    match rate_basis(b.opts) {
        Some((speed, rate_words)) => {
            let target = buffer_target(speed, b.opts.rtt_ms);
            let bdp = sizing::bdp_bytes(speed, b.opts.rtt_ms);
            let why = format!(
                "2 x BDP (BDP = {rate_words} x {} ms = {}) rounded up to a power of two: {}",
                b.opts.rtt_ms,
                units::bytes(bdp),
                units::bytes(target)
            );
            // a value already at least the target stays (never lowered); it is still part of
            // the wanted state a boot script restores
            for (key, cur) in [
                ("net.core.rmem_max", s.rmem_max),
                ("net.core.wmem_max", s.wmem_max),
            ] {
                if let Some(cur) = cur {
                    b.sysctl(
                        ids::SOCKET_BUFFERS_SMALL,
                        key,
                        cur.to_string(),
                        cur.max(target).to_string(),
                        format!("largest buffer an application may request: {why}"),
                    );
                }
            }
            for (key, cur) in [
                ("net.ipv4.tcp_rmem", s.tcp_rmem),
                ("net.ipv4.tcp_wmem", s.tcp_wmem),
            ] {
                if let Some([min, def, max]) = cur {
                    b.sysctl(
                        ids::SOCKET_BUFFERS_SMALL,
                        key,
                        format!("{min} {def} {max}"),
                        format!("{min} {def} {}", max.max(target)),
                        format!("TCP autotuning maximum: {why}"),
                    );
                }
            }
        }
        None => {
            if v.has(ids::SOCKET_BUFFERS_SMALL) || v.nic.is_some() {
                b.note(
                    Some(ids::SOCKET_BUFFERS_SMALL),
                    "the link speed is unknown (the link is down, or a virtual NIC does not report one) and DMI names no known instance type, so socket buffers are not sized; pass --rate (e.g. --rate 50G) to size them for the rate wanted".into(),
                );
            }
        }
    }

    // Congestion control.
    if let Some(cur) = &s.congestion_control {
        if cur == "bbr" || cur == "htcp" {
            b.sysctl(
                ids::CC_LOSS_BASED,
                "net.ipv4.tcp_congestion_control",
                cur.clone(),
                cur.clone(),
                format!("{cur} is not loss-based"),
            );
        }
        if cur == "reno" || cur == "cubic" {
            // Doctor's rule: what this kernel offers, loaded or shipped as a module.
            use wirespeed_doctor::checks::{cc_choice, cc_neither_words, CcChoice};
            let avail = &s.available_congestion_control;
            match cc_choice(avail, s.loadable_congestion_control.as_deref()) {
                CcChoice::Available(cc) | CcChoice::Module(cc) => {
                    let how = if avail.iter().any(|a| a == cc) {
                        format!("{cc} is available")
                    } else {
                        format!("{cc} ships as a module; the kernel loads tcp_{cc} on this write")
                    };
                    b.sysctl(
                        ids::CC_LOSS_BASED,
                        "net.ipv4.tcp_congestion_control",
                        cur.clone(),
                        cc.to_string(),
                        format!("{cur} is loss-based; {how}"),
                    );
                }
                CcChoice::Neither { known } => b.note(
                    Some(ids::CC_LOSS_BASED),
                    format!("{cur} stays: {}", cc_neither_words(avail, known)),
                ),
            }
        }
    }

    // fq (`default-qdisc-not-fq`) and MTU probing (`tcp-mtu-probing-off`) are doctor's
    // findings with their file writes (`doctor_writes`). An MTU this plan raises to a jumbo
    // one (`--mtu`) is not one doctor sees yet: probing comes with it, as requested.
    if let (Some(m), Some(0)) = (b.opts.mtu, s.tcp_mtu_probing) {
        if m >= 9000 && !v.has(ids::MTU_PROBING) {
            b.sysctl(
                REQUESTED,
                "net.ipv4.tcp_mtu_probing",
                "0".into(),
                "1".into(),
                format!("MTU {m} (--mtu): probe the path MTU when ICMP is filtered"),
            );
        }
    }

    // Softnet drops / squeezes: the values doctor's fix names (sizing), never lowered.
    for (counted, key, cur, want, why) in [
        (
            s.softnet_dropped,
            "net.core.netdev_max_backlog",
            s.netdev_max_backlog,
            sizing::NETDEV_MAX_BACKLOG,
            "softnet_stat counts backlog drops: a longer per-CPU backlog",
        ),
        (
            s.softnet_time_squeeze,
            "net.core.netdev_budget",
            s.netdev_budget,
            sizing::NETDEV_BUDGET,
            "softnet_stat counts time squeezes: more packets per softirq run",
        ),
    ] {
        if let Some(cur) = cur.filter(|&c| counted.unwrap_or(0) > 0 && c < want) {
            b.sysctl(
                ids::SOFTNET_DROPS,
                key,
                cur.to_string(),
                want.to_string(),
                why.into(),
            );
        }
    }
}

fn link(b: &mut Builder<'_>) {
    let Some(nic) = &b.view.nic else {
        return;
    };
    let name = nic.name.clone();
    if let Some(m) = b.opts.mtu {
        {
            let fixes_jumbo = m >= 9000
                && nic.speed_mbps.unwrap_or(0) >= 10_000
                && nic.mtu.is_some_and(|c| c < 9000);
            let change = Change::Write {
                path: format!("/sys/class/net/{name}/mtu"),
                form: Form::Words,
                value: m.to_string(),
            };
            b.push(
                if fixes_jumbo {
                    ids::MTU_BELOW_JUMBO
                } else {
                    REQUESTED
                },
                format!("MTU of {name} (the switch and the peer must carry it too)"),
                format!("{name} mtu"),
                nic.mtu
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "unknown".into()),
                m.to_string(),
                change,
            );
        }
    }
    if let Some(q) = b.opts.txqueuelen {
        {
            let change = Change::Write {
                path: format!("/sys/class/net/{name}/tx_queue_len"),
                form: Form::Words,
                value: q.to_string(),
            };
            b.push(
                REQUESTED,
                format!("transmit queue length of {name}"),
                format!("{name} txqueuelen"),
                nic.txqueuelen
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "unknown".into()),
                q.to_string(),
                change,
            );
        }
    }
}

/// `cstates-deep`: the deep idle states off on the CPUs that serve the NIC after the IRQ moves
/// and on the app CPUs, by doctor's rule ([`wirespeed_doctor::knobs::cstate_writes`]).
fn cstates(b: &mut Builder<'_>, cpus: &CpuSet) {
    if !b.view.has(ids::CSTATES_DEEP) {
        return;
    }
    for w in wirespeed_doctor::knobs::cstate_writes(&b.view.cstates, cpus) {
        let change = Change::Write {
            path: w.path.clone(),
            form: Form::Words,
            value: w.value.clone(),
        };
        b.push(
            ids::CSTATES_DEEP,
            w.what,
            w.path,
            w.current,
            w.value,
            change,
        );
    }
}

fn governor(b: &mut Builder<'_>, handling: &CpuSet) {
    let v = b.view;
    let cpus = handling.union(&b.opts.app_cpus.clone().unwrap_or_default());
    cstates(b, &cpus);
    let mut done: Vec<String> = Vec::new();
    let mut missing = CpuSet::new();
    let mut unavailable = CpuSet::new();
    // one write per cpufreq policy: group the CPUs by policy file
    let mut by_path: Vec<(String, String, CpuSet)> = Vec::new();
    for cpu in cpus.iter() {
        let Some(g) = v.governors.get(&cpu) else {
            missing.insert(cpu);
            continue;
        };
        if g.current != "performance"
            && !g.available.is_empty()
            && !g.available.iter().any(|a| a == "performance")
        {
            unavailable.insert(cpu);
            continue;
        }
        match by_path.iter_mut().find(|(p, _, _)| *p == g.path) {
            Some((_, _, set)) => {
                set.insert(cpu);
            }
            None => by_path.push((g.path.clone(), g.current.clone(), CpuSet::from_cpus([cpu]))),
        }
    }
    for (path, current, set) in by_path {
        if done.contains(&path) {
            continue;
        }
        done.push(path.clone());
        let change = Change::Write {
            path: path.clone(),
            form: Form::Words,
            value: "performance".into(),
        };
        let role = |c: u32| {
            if b.opts.app_cpus.as_ref().is_some_and(|a| a.contains(c)) {
                "app"
            } else {
                "IRQ"
            }
        };
        let roles: BTreeSet<&str> = set.iter().map(role).collect();
        let roles = roles.into_iter().collect::<Vec<_>>().join("+");
        b.push(
            ids::GOVERNOR,
            if current == "performance" {
                format!("CPU {set} ({roles} CPU) runs performance")
            } else {
                format!("CPU {set} ({roles} CPU) from {current} to performance")
            },
            path,
            current,
            "performance".into(),
            change,
        );
    }
    if !unavailable.is_empty() {
        b.note(
            Some(ids::GOVERNOR),
            format!(
                "{} {} no performance governor",
                unavailable.words(),
                if unavailable.len() == 1 {
                    "offers"
                } else {
                    "offer"
                }
            ),
        );
    }
    if !missing.is_empty() && v.has(ids::GOVERNOR) {
        b.note(
            Some(ids::GOVERNOR),
            format!(
                "{} {} no cpufreq governor here",
                missing.words(),
                if missing.len() == 1 { "shows" } else { "show" }
            ),
        );
    }
}

fn ring(b: &mut Builder<'_>) {
    let Some(nic) = &b.view.nic else {
        return;
    };
    let Some(r) = nic.ring else {
        return;
    };
    // doctor's rule (ring-below-max): 10 Gbit/s and faster, or a speed nobody reports
    if nic.speed_mbps.is_some_and(|s| s < 10_000) {
        return;
    }
    let rx = sizing::ring_target(r.rx, r.rx_max);
    let tx = sizing::ring_target(r.tx, r.tx_max);
    let change = Change::Ring {
        iface: nic.name.clone(),
        rx,
        tx,
    };
    b.push(
        ids::RING,
        match nic.speed_mbps {
            Some(s) => format!(
                "deeper rings absorb bursts at {}",
                wirespeed_model::units::speed_mbps(s)
            ),
            None => "deeper rings absorb bursts".into(),
        },
        format!("ethtool -G {}", nic.name),
        format!("rx {} tx {}", r.rx, r.tx),
        format!("rx {rx} tx {tx}"),
        change,
    );
}

/// Largest `rx-usecs`/`tx-usecs` accepted: 100 ms of holding back an interrupt is a typo.
pub const MAX_COALESCE_USECS: u32 = 100_000;

fn coalesce(b: &mut Builder<'_>) {
    let want = b.opts.coalesce;
    if want.is_empty() {
        return;
    }
    let Some(nic) = &b.view.nic else {
        return;
    };
    let Some(cur) = nic.coalesce else {
        b.note(
            None,
            format!(
                "interrupt coalescing on {} is unknown: the NIC did not answer ETHTOOL_GCOALESCE (ethtool -c), so `{}` is not planned",
                nic.name,
                want.ethtool_args()
            ),
        );
        return;
    };
    let change = Change::Coalesce {
        iface: nic.name.clone(),
        set: want,
    };
    b.push(
        REQUESTED,
        "interrupt coalescing as requested (fewer interrupts, or lower latency)".into(),
        format!("ethtool -C {}", nic.name),
        want.current_in(&cur).ethtool_args(),
        want.ethtool_args(),
        change,
    );
}

/// `big-tcp-off`: GSO/GRO sizes (and their IPv4 variants where the kernel reports them) to
/// doctor's BIG TCP size, at most the driver's `tso_max_size`, through rtnetlink.
fn big_tcp(b: &mut Builder<'_>) {
    if !b.view.has(ids::BIG_TCP_OFF) {
        return;
    }
    let Some(nic) = &b.view.nic else {
        return;
    };
    let Some(cur) = nic.sizes else {
        return; // doctor read the sizes from the same root; without them there is no finding
    };
    let size = cur
        .tso_max_size
        .map_or(wirespeed_doctor::knobs::BIG_TCP_SIZE, |t| {
            wirespeed_doctor::knobs::BIG_TCP_SIZE.min(t)
        });
    let set = SizesSet::all(size).supported_by(&cur);
    if set.is_empty() {
        return;
    }
    let change = Change::LinkSizes {
        iface: nic.name.clone(),
        set,
    };
    b.push(
        ids::BIG_TCP_OFF,
        format!(
            "BIG TCP on {}: GSO/GRO packets up to {size} bytes (the driver takes {}), fewer packets through the stack per byte",
            nic.name,
            cur.tso_max_size.map_or("?".into(), |t| t.to_string())
        ),
        format!("ip link set dev {}", nic.name),
        set.current_in(&cur).ip_args(),
        set.ip_args(),
        change,
    );
}

/// Flow control only as requested: it works only when the switch port does its half, which
/// nothing on this host can see. Unknown (a note, no step) when the NIC did not answer
/// `ETHTOOL_GPAUSEPARAM`.
fn pause(b: &mut Builder<'_>) {
    let want = b.opts.pause;
    if want.is_empty() {
        return;
    }
    let Some(nic) = &b.view.nic else {
        return;
    };
    let Some(cur) = nic.pause else {
        b.note(
            None,
            format!(
                "flow control on {} is unknown: the NIC did not answer ETHTOOL_GPAUSEPARAM (ethtool -a), so `ethtool -A {} {}` is not planned",
                nic.name,
                nic.name,
                want.ethtool_args()
            ),
        );
        return;
    };
    let turns_on = want.rx == Some(true) && !cur.rx || want.tx == Some(true) && !cur.tx;
    let finding = if turns_on && b.view.has(ids::PAUSE_FRAMES_OFF) {
        ids::PAUSE_FRAMES_OFF
    } else {
        REQUESTED
    };
    let change = Change::Pause {
        iface: nic.name.clone(),
        set: want,
    };
    b.push(
        finding,
        "flow control as requested (the switch port must have it on too)".into(),
        format!("ethtool -A {}", nic.name),
        want.current_in(&cur).ethtool_args(),
        want.ethtool_args(),
        change,
    );
}

/// The findings whose fix is a kernel file write that doctor computed (TCP options, transmit
/// queue length, RFS tables, C-states): exactly those writes, in the category they belong to.
/// A path another step already sets (`--txqueuelen`) is left to that step. `arfs-off` also
/// turns the NIC's `ntuple` feature on when the NIC reports it off and changeable (live only:
/// an ioctl).
fn doctor_writes(b: &mut Builder<'_>) {
    let findings = b.view.findings.clone();
    for f in findings {
        let cat = match f.id.as_str() {
            ids::TCP_OPTIONS_OFF | ids::ARFS_OFF | ids::QDISC | ids::MTU_PROBING => Category::Stack,
            ids::TXQUEUELEN_SHORT => Category::Link,
            _ => continue,
        };
        if !b.on(cat) {
            continue;
        }
        if f.id == ids::ARFS_OFF {
            ntuple_on(b, &f.id);
        }
        for w in &f.writes {
            let taken = b
                .plan
                .boot
                .iter()
                .chain(&b.plan.steps)
                .any(|s| s.change.path().as_deref() == Some(w.path.as_str()));
            if taken {
                continue;
            }
            let setting = crate::value::sysctl_key(&w.path).unwrap_or_else(|| w.path.clone());
            let change = Change::Write {
                path: w.path.clone(),
                form: Form::Words,
                value: w.value.clone(),
            };
            b.push(
                &f.id,
                w.what.clone(),
                setting,
                w.current.clone(),
                w.value.clone(),
                change,
            );
        }
    }
}

/// `ethtool -K IF ntuple on` for `arfs-off`: only when the NIC answered that its ntuple
/// filters are off and changeable (doctor's rule; fixed off means no aRFS at all).
fn ntuple_on(b: &mut Builder<'_>, finding: &str) {
    let Some(nic) = &b.view.nic else {
        return;
    };
    let Some(f) = nic.ntuple.filter(|f| !f.active && f.changeable) else {
        return;
    };
    let change = Change::Feature {
        iface: nic.name.clone(),
        feature: NTUPLE.to_string(),
        on: true,
    };
    b.push(
        finding,
        "ntuple filters on, so accelerated RFS can steer each flow to its reader's CPU".into(),
        format!("ethtool -K {} ntuple", nic.name),
        if f.active { "on" } else { "off" }.into(),
        "on".into(),
        change,
    );
}

/// Notes for the findings no step addresses.
fn leftover_notes(b: &mut Builder<'_>) {
    let addressed = b.plan.addressed();
    let noted: Vec<String> = b
        .plan
        .notes
        .iter()
        .filter_map(|n| n.finding.clone())
        .collect();
    let findings = b.view.findings.clone();
    for f in findings {
        if addressed.contains(&f.id) || noted.contains(&f.id) {
            continue;
        }
        let advice = match f.id.as_str() {
            ids::PCIE_LINK_DOWNGRADED => {
                "hardware, no setting fixes it: reseat the card (or move it to a slot wired for its full width) and check the slot's lanes in the BIOS".to_string()
            }
            ids::PCIE_BANDWIDTH => {
                "hardware, no setting fixes it: throughput stays capped below the line rate until the PCIe link trains at full width".to_string()
            }
            ids::NIC_TEMPERATURE => {
                "hardware, no setting fixes it: give the NIC airflow (a fan on its heat sink, case fans)".to_string()
            }
            ids::APP_NUMA_REMOTE => {
                let local = b
                    .view
                    .nic
                    .as_ref()
                    .and_then(|n| n.numa_node.and_then(|x| b.view.layout.numa_nodes.get(&x)).or(n.local_cpus.as_ref()))
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "the NIC's node".into());
                format!("run the application on the NIC's NUMA node (CPUs {local}) and plan again with those --app-cpus")
            }
            ids::MTU_BELOW_JUMBO => {
                "pass --mtu 9000 once the switch and the peer carry jumbo frames".to_string()
            }
            ids::IRQ_CROSS_L3 if b.view.has(ids::APP_NUMA_REMOTE) => {
                "the app runs on another NUMA node than the NIC; the IRQs stay on the NIC's node (on the app's L3 group they would be NUMA-remote): run the app on the NIC's node".to_string()
            }
            ids::IRQ_ON_APP_CORE | ids::IRQ_CROSS_L3 | ids::IRQ_NUMA_REMOTE => {
                if b.on(Category::Irq) {
                    "the chosen IRQ CPUs do not fix this; choose others with --irq-cpus or --irq-policy".to_string()
                } else {
                    "IRQs are not part of this plan (--only)".to_string()
                }
            }
            ids::SOFTNET_DROPS => {
                "softnet_stat counts since boot; the backlog and budget are already large, so look at the IRQ CPUs' load".to_string()
            }
            ids::PAUSE_FRAMES_OFF => {
                let name = b.view.nic.as_ref().map_or("IF", |n| n.name.as_str());
                format!("not changed by this plan: flow control works only when the switch port has it on too, which this host cannot see. Turn it on at the switch port first (receive, or both), then plan again with --pause both (or --rx-pause on / --tx-pause on) to set the NIC's half (ethtool -A {name} rx on tx on); leave it off on fabrics that use PFC, or where a paused port would spread congestion to other hosts")
            }
            ids::IOMMU_TRANSLATED => {
                "not changed by this plan: the IOMMU mode is a kernel boot parameter. Add iommu=pt to the kernel command line (on Intel hosts whose kernel does not turn the IOMMU on by default: intel_iommu=on iommu=pt; on AMD: iommu=pt) — GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub (Debian/Ubuntu) or grub2-mkconfig -o /boot/grub2/grub.cfg, or grubby --update-kernel=ALL --args=iommu=pt (RHEL/Fedora) — and reboot. Risk: pass-through gives the host's own drivers untranslated DMA, so a faulty or malicious device is no longer confined; keep translation on a host that passes devices to VMs or relies on DMA protection (Thunderbolt)".to_string()
            }
            ids::PCIE_MPS_SMALL => {
                "not changed by this plan: MaxPayload must match along the whole PCIe path, so the kernel sets it at boot. Boot with pci=pcie_bus_perf (kernel command line, as for iommu=pt) or raise MaxPayload in the firmware setup, and reboot. Risk: a payload one device on the path cannot take corrupts or drops its transactions, so never change it live with setpci".to_string()
            }
            ids::PCIE_MAXREADREQ_SMALL => {
                let dev = f.fix.first().and_then(|c| c.split_whitespace().nth(2)).unwrap_or("BUS:DEV.FN");
                format!("not changed by this plan: a PCIe configuration-space write, which software should not make under a running driver. To try it: setpci -s {dev} CAP_EXP+8.w=5000:7000 (Device Control, at offset 8 of the PCI Express capability: bits 14:12 = 5, MaxReadReq 4096; the mask leaves the other bits), check with lspci -s {dev} -vv | grep MaxReadReq, and set it again after every boot (a boot script) — or raise it in the NIC's firmware settings, which persist. Risk: some platforms and NICs misbehave with 4096-byte read requests (lower throughput for other devices, hangs); a reset of the function or a driver reload puts back the driver's value")
            }
            _ => String::new(),
        };
        let text = if advice.is_empty() {
            let fix = if f.fix.is_empty() {
                String::new()
            } else {
                format!(" (doctor suggests: {})", f.fix.join("; "))
            };
            format!("{}{fix}", f.summary)
        } else {
            format!("{} — {advice}", f.summary)
        };
        b.note(Some(&f.id), text);
    }
}

/// Paths of the files `--persist` writes.
pub mod persist_paths {
    pub const SYSCTL: &str = "/etc/sysctl.d/99-wirespeed.conf";
    pub const SCRIPT: &str = "/etc/wirespeed/tune.sh";
    pub const UNIT: &str = "/etc/systemd/system/wirespeed-tune.service";
    pub const WANTS: &str = "/etc/systemd/system/multi-user.target.wants/wirespeed-tune.service";
}

fn persist(b: &mut Builder<'_>) {
    use persist_paths::*;
    let mut sysctl = String::from(
        "# Written by `wirespeed tune --persist`; `wirespeed tune revert` removes it.\n",
    );
    for s in &b.plan.boot {
        if let Change::Write { path, value, .. } = &s.change {
            if let Some(key) = crate::value::sysctl_key(path) {
                sysctl.push_str(&format!(
                    "# {}: {}\n{key} = {value}\n",
                    s.finding, s.summary
                ));
            }
        }
    }
    let is_sysctl = |s: &Step| matches!(&s.change, Change::Write { path, .. } if path.starts_with("/proc/sys/"));
    let boot_script = b.plan.render_script_filtered(&|s| !is_sysctl(s));
    let has_script = b.plan.boot.iter().any(|s| !is_sysctl(s));
    let has_sysctl = b.plan.boot.iter().any(is_sysctl);
    if has_sysctl {
        let change = Change::Create {
            path: SYSCTL.into(),
            contents: sysctl,
            mode: 0o644,
        };
        b.push(
            PERSIST,
            "the wanted sysctls, applied at every boot by systemd-sysctl".into(),
            SYSCTL.into(),
            "-".into(),
            "created".into(),
            change,
        );
    }
    if has_script {
        let change = Change::Create {
            path: SCRIPT.into(),
            contents: boot_script,
            mode: 0o755,
        };
        b.push(PERSIST, "the wanted IRQ placement, governors and link settings as a boot-time script (IRQs found by name)".into(), SCRIPT.into(), "-".into(), "created".into(), change);
        let unit = format!(
            "# Written by `wirespeed tune --persist`; `wirespeed tune revert` removes it.\n\
             [Unit]\n\
             Description=wirespeed tune: re-apply the saved plan at boot\n\
             Wants=network-online.target\n\
             After=network-online.target irqbalance.service\n\
             \n\
             [Service]\n\
             Type=oneshot\n\
             RemainAfterExit=yes\n\
             ExecStart=/bin/sh {SCRIPT}\n\
             \n\
             [Install]\n\
             WantedBy=multi-user.target\n"
        );
        let change = Change::Create {
            path: UNIT.into(),
            contents: unit,
            mode: 0o644,
        };
        b.push(
            PERSIST,
            "a oneshot unit that runs the script at boot".into(),
            UNIT.into(),
            "-".into(),
            "created".into(),
            change,
        );
        let change = Change::Link {
            path: WANTS.into(),
            target: "../wirespeed-tune.service".into(),
        };
        b.push(
            PERSIST,
            "enable the unit (what `systemctl enable` does)".into(),
            WANTS.into(),
            "-".into(),
            "link".into(),
            change,
        );
    }
}

/// The plan for an upper device: each PCI member's plan (its IRQs, rings, coalescing, link),
/// merged — a host-wide step (a sysctl, a governor) the members share appears once — and the
/// stack's own file writes doctor's findings carry: the bond's `xmit_hash_policy` (and
/// `miimon`), each a journaled step whose revert writes back the text the kernel showed.
pub fn plan_stack(sv: &crate::collect::StackViews, opts: &PlanOptions) -> Result<Plan, PlanError> {
    // the persistence files are written once, for the merged plan (each member's own would
    // replace the other's)
    let member_opts = PlanOptions {
        persist: false,
        ..opts.clone()
    };
    let mut merged: Option<Plan> = None;
    for v in &sv.members {
        let p = plan(v, &member_opts)?;
        let Some(m) = merged.as_mut() else {
            merged = Some(p);
            continue;
        };
        for s in p.steps {
            if !m.steps.iter().any(|x| x.change == s.change) {
                m.steps.push(s);
            }
        }
        for s in p.boot {
            if !m.boot.iter().any(|x| x.change == s.change) {
                m.boot.push(s);
            }
        }
        for n in p.notes {
            if !m.notes.contains(&n) {
                m.notes.push(n);
            }
        }
        for c in p.context {
            if !m.context.contains(&c) {
                m.context.push(c);
            }
        }
        if m.run_app.is_none() {
            m.run_app = p.run_app;
        }
    }
    let mut plan = merged.ok_or(PlanError::Placement(PlacementError::NoNic))?;
    let names: Vec<&str> = sv
        .members
        .iter()
        .filter_map(|v| v.nic.as_ref())
        .map(|n| n.name.as_str())
        .collect();
    plan.iface = Some(sv.stack.name().to_string());
    plan.context.insert(
        0,
        format!(
            "upper device {} ({}): planned for each NIC beneath it: {}",
            sv.stack.name(),
            wirespeed_host::upper::describe(&sv.stack),
            names.join(", ")
        ),
    );
    if opts.only.contains(&Category::Link) {
        for f in &sv.findings {
            for w in &f.writes {
                let change = Change::Write {
                    path: w.path.clone(),
                    form: Form::Named,
                    value: w.value.clone(),
                };
                if plan
                    .steps
                    .iter()
                    .any(|s| s.change.path().as_deref() == Some(w.path.as_str()))
                {
                    continue;
                }
                let step = Step {
                    finding: f.id.clone(),
                    summary: w.what.clone(),
                    setting: w.path.clone(),
                    current: w.current.clone(),
                    new: w.value.clone(),
                    command: command_for(&change),
                    change,
                };
                plan.boot.push(step.clone());
                if !Form::Named.same(&w.current, &w.value) {
                    plan.steps.push(step);
                }
            }
        }
    }
    if opts.persist {
        let mut b = Builder {
            view: &sv.members[0],
            opts,
            plan,
        };
        persist(&mut b);
        plan = b.plan;
    }
    for f in &sv.findings {
        if f.writes.is_empty()
            && !plan
                .notes
                .iter()
                .any(|n| n.finding.as_deref() == Some(f.id.as_str()))
        {
            plan.notes.push(Note {
                finding: Some(f.id.clone()),
                text: format!("{} — {}", f.summary, f.fix.join("; ")),
            });
        }
    }
    Ok(plan)
}
