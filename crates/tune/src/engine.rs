//! Apply a plan through a root with the journal, and revert a journal exactly.
//!
//! Apply, for each step: read the current value; when it already is the new value, skip; else
//! append a `change` record (old and new, exact bytes) and sync it, write, read back, append the
//! `result`. An IRQ the kernel manages answers EIO: the step is "not movable" and the plan goes
//! on. Revert walks the changes in reverse: a value still holding what tune wrote goes back to the
//! old bytes; a value someone changed since is reported and left alone unless forced.

use rustix::io::Errno;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use wirespeed_host::{CpuSet, Root};

use crate::journal::{
    self, sync_parent, Entry, Journal, JournalFile, Outcome, Record, Saved, State, Undo,
};
use crate::plan::{irq_affinity_path, Change, Plan, Step};
use crate::value::Form;
use crate::{service, TuneError};
use wirespeed_host::ethtool::{self, CoalesceSet, PauseSet};
use wirespeed_host::link::{self, LinkSizes, SizesSet};

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Journal directory, a host path below the root.
    pub journal_dir: String,
    /// Pause after each step (tests use it to land a signal mid-apply).
    pub step_delay: Duration,
    /// Name and version of the tool, recorded in the journal.
    pub tool: String,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            journal_dir: journal::DEFAULT_DIR.to_string(),
            step_delay: Duration::ZERO,
            tool: concat!("wirespeed-tune ", env!("CARGO_PKG_VERSION")).to_string(),
        }
    }
}

pub use crate::plan::{ApplyReport, StepReport, StepStatus};

const LIVE_ONLY_SERVICE: &str = "services can only be controlled on the live host";
const LIVE_ONLY_RING: &str = "ring sizes can only be set on the live host";
const LIVE_ONLY_COALESCE: &str = "interrupt coalescing can only be set on the live host";
const LIVE_ONLY_SIZES: &str = "GSO/GRO sizes can only be set on the live host";
const LIVE_ONLY_PAUSE: &str = "flow control can only be set on the live host";
const LIVE_ONLY_FEATURE: &str = "NIC features can only be set on the live host";

fn not_writable(path: &str, source: io::Error) -> TuneError {
    TuneError::NotWritable {
        path: path.to_string(),
        source,
    }
}

/// The nearest existing ancestor directory of a host path.
fn existing_ancestor(root: &Root, host_path: &str) -> Result<std::path::PathBuf, TuneError> {
    let mut p = root.path(host_path)?;
    while !p.exists() {
        match p.parent() {
            Some(parent) => p = parent.to_path_buf(),
            None => break,
        }
    }
    Ok(p)
}

fn access_w(p: &Path) -> io::Result<()> {
    Ok(rustix::fs::access(p, rustix::fs::Access::WRITE_OK)?)
}

/// Refuse to change the live host without root: the kernel files tune writes are root's.
pub fn check_privileged(root: &Root) -> Result<(), TuneError> {
    if root.is_live() && !rustix::process::geteuid().is_root() {
        return Err(TuneError::NotPrivileged);
    }
    Ok(())
}

/// Whether the kernel checks `CAP_NET_ADMIN` for this change, whatever the file's mode says: a
/// network device's sysfs attributes (MTU, `tx_queue_len`, a queue's `rps_cpus`/`xps_cpus`)
/// and every ethtool or rtnetlink set. Root without it (a container's default set) opens the
/// file for writing and is refused only at the write, which would leave a plan half applied.
pub fn needs_net_admin(change: &Change) -> bool {
    match change {
        Change::Write { .. } => change
            .path()
            .is_some_and(|p| p.starts_with("/sys/class/net/")),
        Change::Ring { .. }
        | Change::Coalesce { .. }
        | Change::LinkSizes { .. }
        | Change::Pause { .. }
        | Change::Feature { .. } => true,
        Change::IrqAffinity { .. }
        | Change::Create { .. }
        | Change::Link { .. }
        | Change::Service { .. } => false,
    }
}

/// `EROFS`, the error of a write to a file on a read-only mount.
fn libc_erofs() -> i32 {
    rustix::io::Errno::ROFS.raw_os_error()
}

/// Refuse a live plan with a step that needs a capability this process lacks.
fn check_capabilities(plan: &Plan) -> Result<(), TuneError> {
    let Some(step) = plan.steps.iter().find(|s| needs_net_admin(&s.change)) else {
        return Ok(());
    };
    // An unreadable set (no capget) is left to the writes themselves.
    let Ok(caps) = rustix::thread::capabilities(None) else {
        return Ok(());
    };
    if caps
        .effective
        .contains(rustix::thread::CapabilitySet::NET_ADMIN)
    {
        return Ok(());
    }
    Err(TuneError::MissingCapability {
        capability: "CAP_NET_ADMIN",
        short: "NET_ADMIN",
        step: format!("setting {}", step.setting),
    })
}

/// Check, before anything is journaled or written, that every file the plan writes can be
/// opened for writing and that the journal directory can be created. Opening a kernel file for
/// writing changes nothing until a `write`.
///
/// IRQ affinity files are checked only for a read-only mount (`/proc/irq` in an unprivileged
/// container): the kernel makes a managed IRQ's file read-only, and such an IRQ is reported as
/// not movable while the plan goes on.
pub fn preflight(root: &Root, plan: &Plan, journal_dir: &str) -> Result<(), TuneError> {
    check_privileged(root)?;
    if root.is_live() {
        check_capabilities(plan)?;
    }
    let jd = existing_ancestor(root, journal_dir)?;
    access_w(&jd).map_err(|e| not_writable(journal_dir, e))?;
    for step in &plan.steps {
        match &step.change {
            Change::IrqAffinity { .. } => {
                // A managed IRQ's file is one the kernel refuses (reported, the plan goes on);
                // a read-only /proc/irq (any unprivileged container) refuses every IRQ step.
                let path = path_of(&step.change);
                if let Ok(p) = root.path(&path) {
                    if let Err(e) = access_w(&p) {
                        if e.raw_os_error() == Some(libc_erofs()) {
                            return Err(not_writable(&path, e));
                        }
                    }
                }
            }
            Change::Write { .. } => {
                let path = path_of(&step.change);
                root.can_write(&path).map_err(|e| match e {
                    wirespeed_host::RootError::Io { source, .. } => not_writable(&path, source),
                    other => TuneError::Root(other),
                })?;
            }
            Change::Create { path, .. } | Change::Link { path, .. } => {
                // Refuses a path that leads out of the root (a link on the way).
                root.lstat(path)?;
                let anc = existing_ancestor(root, path)?;
                let target = root.path(path)?;
                let probe = if target.exists() { &target } else { &anc };
                access_w(probe).map_err(|e| not_writable(path, e))?;
                if target != anc {
                    if let Some(parent) = target.parent().filter(|p| p.exists()) {
                        access_w(parent).map_err(|e| not_writable(path, e))?;
                    }
                }
            }
            Change::Service { .. }
            | Change::Ring { .. }
            | Change::Coalesce { .. }
            | Change::LinkSizes { .. }
            | Change::Pause { .. }
            | Change::Feature { .. } => {}
        }
    }
    Ok(())
}

fn path_of(change: &Change) -> String {
    change.path().unwrap_or_default()
}

struct Applier<'a> {
    root: &'a Root,
    journal: Journal,
    seq: u32,
    /// Where GSO/GRO sizes and flow control are set: the kernel on a live root, a stand-in in
    /// tests, `None` on a captured tree (those steps are skipped).
    link: Option<&'a dyn LinkDevice>,
}

impl Applier<'_> {
    fn change(&mut self, step: usize, finding: &str, undo: Undo) -> Result<u32, TuneError> {
        self.seq += 1;
        self.journal.append(&Record::Change {
            seq: self.seq,
            step,
            finding: finding.to_string(),
            undo,
        })?;
        Ok(self.seq)
    }

    fn result(
        &mut self,
        seq: u32,
        outcome: Outcome,
        detail: &Option<String>,
    ) -> Result<(), TuneError> {
        self.journal.append(&Record::Result {
            seq,
            outcome,
            detail: detail.clone(),
        })
    }

    /// Record how the write announced as `seq` ended: applied, or failed with the reason.
    fn finish(&mut self, seq: u32, res: Result<(), String>) -> StepResult {
        let (status, outcome, detail) = match res {
            Ok(()) => (StepStatus::Applied, Outcome::Applied, None),
            Err(e) => (StepStatus::Failed, Outcome::Failed, Some(e)),
        };
        self.result(seq, outcome, &detail)?;
        Ok((status, detail))
    }

    /// Journal and create the missing directories above `host_path`, top down.
    fn make_dirs(&mut self, step: usize, finding: &str, host_path: &str) -> Result<(), String> {
        let mut missing: Vec<String> = Vec::new();
        let mut cur = host_path.trim_end_matches('/').to_string();
        while let Some(pos) = cur.rfind('/') {
            cur.truncate(pos);
            if cur.is_empty() {
                break;
            }
            if self.root.lstat(&cur).map_err(|e| e.to_string())?.is_some() {
                break;
            }
            missing.push(cur.clone());
        }
        for dir in missing.into_iter().rev() {
            let seq = self
                .change(step, finding, Undo::Dir { path: dir.clone() })
                .map_err(|e| e.to_string())?;
            let made = self.root.mkdir(&dir, 0o755).map_err(|e| e.to_string());
            if made.is_ok() {
                let _ = self.root.path(&dir).map(|real| sync_parent(&real));
            }
            let (outcome, detail) = match &made {
                Ok(()) => (Outcome::Applied, None),
                Err(e) => (Outcome::Failed, Some(e.clone())),
            };
            self.result(seq, outcome, &detail)
                .map_err(|e| e.to_string())?;
            made?;
        }
        Ok(())
    }
}

/// Apply a plan. `after_step` runs after each step (tests emulate the kernel there). Errors are
/// for the journal itself (nothing can be applied safely without it); a step that fails is
/// reported in the result and the plan goes on.
pub fn apply(
    root: &Root,
    plan: &Plan,
    opts: &ApplyOptions,
    after_step: &mut dyn FnMut(&Root, &Step),
) -> Result<ApplyReport, TuneError> {
    let kernel = KernelLink;
    let link = root.is_live().then_some(&kernel as &dyn LinkDevice);
    apply_inner(root, plan, opts, after_step, link)
}

/// [`apply`] with GSO/GRO sizes and flow control set through `link` whatever the root (tests
/// put an in-memory NIC there to run those steps on a captured tree).
pub fn apply_with(
    root: &Root,
    plan: &Plan,
    opts: &ApplyOptions,
    after_step: &mut dyn FnMut(&Root, &Step),
    link: &dyn LinkDevice,
) -> Result<ApplyReport, TuneError> {
    apply_inner(root, plan, opts, after_step, Some(link))
}

fn apply_inner(
    root: &Root,
    plan: &Plan,
    opts: &ApplyOptions,
    after_step: &mut dyn FnMut(&Root, &Step),
    link: Option<&dyn LinkDevice>,
) -> Result<ApplyReport, TuneError> {
    preflight(root, plan, &opts.journal_dir)?;
    let _lock = journal::ApplyLock::acquire(root, &opts.journal_dir)?;
    let begin = Record::Begin {
        schema: journal::JOURNAL_SCHEMA,
        created: journal::rfc3339(SystemTime::now()),
        tool: opts.tool.clone(),
        root: root.dir().display().to_string(),
        iface: plan.iface.clone(),
        steps: plan.steps.len(),
        addressed: plan.addressed(),
    };
    let journal = Journal::create(root, &opts.journal_dir, &begin)?;
    let mut a = Applier {
        root,
        journal,
        seq: 0,
        link,
    };
    let mut reports = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let (status, detail) = apply_step(&mut a, i, step)?;
        reports.push(StepReport {
            step: i,
            setting: step.setting.clone(),
            status,
            detail,
        });
        after_step(root, step);
        if !opts.step_delay.is_zero() && i + 1 < plan.steps.len() {
            std::thread::sleep(opts.step_delay);
        }
    }
    let count = |s: StepStatus| reports.iter().filter(|r| r.status == s).count();
    a.journal.append(&Record::End {
        finished: journal::rfc3339(SystemTime::now()),
        applied: count(StepStatus::Applied),
        not_movable: count(StepStatus::NotMovable),
        failed: count(StepStatus::Failed),
    })?;
    Ok(ApplyReport {
        journal: a.journal.host_path().to_string(),
        steps: reports,
    })
}

type StepResult = Result<(StepStatus, Option<String>), TuneError>;

fn apply_step(a: &mut Applier<'_>, i: usize, step: &Step) -> StepResult {
    let finding = step.finding.as_str();
    match &step.change {
        Change::Write { path, form, value } => write_value(a, i, finding, path, *form, value, None),
        Change::IrqAffinity { irq, cpus, .. } => write_value(
            a,
            i,
            finding,
            &irq_affinity_path(*irq),
            Form::CpuList,
            &cpus.to_string(),
            Some(*irq),
        ),
        Change::Create {
            path,
            contents,
            mode,
        } => create_file(a, i, finding, path, contents, *mode),
        Change::Link { path, target } => create_link(a, i, finding, path, target),
        Change::Service {
            unit,
            stop,
            disable,
        } => stop_service(a, i, finding, unit, *stop, *disable),
        Change::Ring { iface, rx, tx } => set_ring(a, i, finding, iface, *rx, *tx),
        Change::Coalesce { iface, set } => {
            if !a.root.is_live() {
                return Ok((StepStatus::Skipped, Some(LIVE_ONLY_COALESCE.into())));
            }
            set_coalesce(a, i, finding, iface, set, &KernelCoalesce)
        }
        Change::LinkSizes { iface, set } => match a.link {
            Some(dev) => set_sizes(a, i, finding, iface, set, dev),
            None => Ok((StepStatus::Skipped, Some(LIVE_ONLY_SIZES.into()))),
        },
        Change::Pause { iface, set } => match a.link {
            Some(dev) => set_pause(a, i, finding, iface, set, dev),
            None => Ok((StepStatus::Skipped, Some(LIVE_ONLY_PAUSE.into()))),
        },
        Change::Feature { iface, feature, on } => match a.link {
            Some(dev) => set_feature(a, i, finding, iface, feature, *on, dev),
            None => Ok((StepStatus::Skipped, Some(LIVE_ONLY_FEATURE.into()))),
        },
    }
}

fn write_value(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    path: &str,
    form: Form,
    value: &str,
    irq: Option<u32>,
) -> StepResult {
    let old = match a.root.read(path) {
        Ok(v) => v,
        Err(e) => return Ok((StepStatus::Failed, Some(e.to_string()))),
    };
    if form.same(&old, value) {
        return Ok((StepStatus::AlreadySet, None));
    }
    let new = format!("{value}\n");
    let seq = a.change(
        i,
        finding,
        Undo::File {
            path: path.to_string(),
            form,
            old,
            new: new.clone(),
        },
    )?;
    let (status, outcome, detail) = match a.root.write(path, &new) {
        Ok(()) => {
            let detail = match irq {
                Some(n) if !a.root.is_live() => {
                    // The write is journaled: its result is recorded before the kernel's views.
                    a.result(seq, Outcome::Applied, &None)?;
                    let views = captured_irq_views(a, i, finding, n, value)?;
                    return Ok((
                        StepStatus::Applied,
                        irq_readback(a.root, n, value).map(|d| {
                            if views.is_empty() {
                                d
                            } else {
                                format!(
                                    "{d} (captured tree: also wrote {}, as the kernel would)",
                                    views.join(", ")
                                )
                            }
                        }),
                    ));
                }
                Some(n) => irq_readback(a.root, n, value),
                None => match a.root.read(path) {
                    Ok(now) if !form.same(&now, value) => {
                        Some(format!("kernel shows {} after writing {value}", now.trim()))
                    }
                    _ => None,
                },
            };
            (StepStatus::Applied, Outcome::Applied, detail)
        }
        Err(e)
            if irq.is_some()
                && e.raw_os_error().map(Errno::from_raw_os_error) == Some(Errno::IO) =>
        {
            (
                StepStatus::NotMovable,
                Outcome::NotMovable,
                Some("the kernel manages this IRQ (EIO): not movable".to_string()),
            )
        }
        Err(e)
            if irq.is_some()
                && matches!(
                    e.raw_os_error().map(Errno::from_raw_os_error),
                    Some(Errno::PERM | Errno::ACCESS)
                )
                && read_only(a.root, path) =>
        {
            (
                StepStatus::NotMovable,
                Outcome::NotMovable,
                Some(
                    "the kernel manages this IRQ (affinity file read-only): not movable"
                        .to_string(),
                ),
            )
        }
        Err(e) => (StepStatus::Failed, Outcome::Failed, Some(e.to_string())),
    };
    settle(a, seq, status, outcome, detail)
}

/// On a captured tree (a `--root` that is not `/`) nothing plays the kernel, so after an IRQ's
/// `smp_affinity_list` is written its other views are written as the kernel would show them:
/// `smp_affinity` (the same CPUs as a mask of the file's width) and, when the effective CPUs
/// are no longer within the request, `effective_affinity_list` and `effective_affinity` (the
/// request's first CPU: x86 delivers a vector to one CPU of its mask; effective CPUs already
/// within the request stay, as the kernel keeps them). Each write is journaled like any other,
/// so revert restores the tree byte for byte. A file the tree lacks is left absent. Returns
/// the files written.
fn captured_irq_views(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    irq: u32,
    requested: &str,
) -> Result<Vec<String>, TuneError> {
    let Ok(req) = CpuSet::parse_list(requested) else {
        return Ok(Vec::new());
    };
    let dir = format!("/proc/irq/{irq}");
    let mut writes: Vec<(String, Form, String)> = Vec::new();
    let mask_path = format!("{dir}/smp_affinity");
    if let Some(old) = a.root.read_opt(&mask_path) {
        if CpuSet::parse_mask(&old).ok().as_ref() != Some(&req) {
            writes.push((mask_path, Form::Mask, req.to_mask(mask_width(&old))));
        }
    }
    let eff_path = format!("{dir}/effective_affinity_list");
    if let Some(old) = a.root.read_opt(&eff_path) {
        let eff = CpuSet::parse_list(&old).unwrap_or_default();
        // an IRQ with no effective CPU (never started) stays so
        if !req.is_empty() && !eff.is_empty() && !eff.is_subset(&req) {
            let first = CpuSet::from_cpus(req.first());
            writes.push((eff_path, Form::CpuList, first.to_string()));
            let eff_mask = format!("{dir}/effective_affinity");
            if let Some(m) = a.root.read_opt(&eff_mask) {
                writes.push((eff_mask, Form::Mask, first.to_mask(mask_width(&m))));
            }
        }
    }
    let mut done = Vec::new();
    for (path, form, value) in writes {
        let old = match a.root.read(&path) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let new = format!("{value}\n");
        let seq = a.change(
            i,
            finding,
            Undo::File {
                path: path.clone(),
                form,
                old,
                new: new.clone(),
            },
        )?;
        let res = a.root.write(&path, &new).map_err(|e| e.to_string());
        let ok = res.is_ok();
        a.finish(seq, res)?;
        if ok {
            done.push(path.rsplit('/').next().unwrap_or(&path).to_string());
        }
    }
    Ok(done)
}

/// The CPUs a mask file's text spans (`ff,ffffffff` → 40), for writing a mask of its width.
fn mask_width(text: &str) -> u32 {
    let words: Vec<&str> = text.trim().split(',').collect();
    let first = words.first().map_or(1, |w| w.len()) as u32;
    (words.len() as u32 - 1) * 32 + first * 4
}

/// True when a file has no write permission bit at all (the kernel's mark of a managed IRQ).
fn read_only(root: &Root, path: &str) -> bool {
    root.stat(path)
        .ok()
        .is_some_and(|m| m.permissions().mode() & 0o222 == 0)
}

/// Read an IRQ's effective affinity after a write and say how it compares with the request.
fn irq_readback(root: &Root, irq: u32, requested: &str) -> Option<String> {
    let eff_path = format!("/proc/irq/{irq}/effective_affinity_list");
    let (eff, source) = match root.read_opt(&eff_path) {
        Some(v) => (v, "effective"),
        None => (
            root.read_opt(&irq_affinity_path(irq)).unwrap_or_default(),
            "requested",
        ),
    };
    let want = CpuSet::parse_list(requested).unwrap_or_default();
    match CpuSet::parse_list(&eff) {
        Ok(set) if !set.is_empty() && set.is_subset(&want) => {
            Some(format!("{source} {}", set.words()))
        }
        Ok(set) => Some(format!(
            "kernel reports {source} {}, not within {want} (yet)",
            set.words()
        )),
        Err(_) => Some(format!("{source} affinity unreadable: {eff:?}")),
    }
}

fn mode_of(root: &Root, path: &str) -> Option<u32> {
    root.stat(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

fn create_file(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    path: &str,
    contents: &str,
    mode: u32,
) -> StepResult {
    let old = if let Some(meta) = a.root.lstat(path)? {
        if !meta.is_file() {
            return Ok((
                StepStatus::Failed,
                Some(format!(
                    "{path} exists and is not a regular file; left alone"
                )),
            ));
        }
        match a.root.read(path) {
            Ok(text) => Some(Saved {
                contents: text,
                mode: mode_of(a.root, path).unwrap_or(0o644),
            }),
            Err(e) => {
                return Ok((
                    StepStatus::Failed,
                    Some(format!("{e}; cannot save the original, left alone")),
                ))
            }
        }
    } else {
        None
    };
    if old.as_ref().is_some_and(|o| o.contents == contents) {
        return Ok((StepStatus::AlreadySet, None));
    }
    if let Err(e) = a.make_dirs(i, finding, path) {
        return Ok((StepStatus::Failed, Some(e)));
    }
    let seq = a.change(
        i,
        finding,
        Undo::Created {
            path: path.to_string(),
            new: contents.to_string(),
            mode,
            old,
        },
    )?;
    let res = a
        .root
        .create_with_mode(path, contents.as_bytes(), mode)
        .map_err(|e| e.to_string());
    a.finish(seq, res)
}

fn create_link(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    path: &str,
    target: &str,
) -> StepResult {
    if a.root.lstat(path)?.is_some() {
        return Ok(match a.root.read_link(path) {
            Ok(t) if t == Path::new(target) => (StepStatus::AlreadySet, None),
            _ => (
                StepStatus::Failed,
                Some(format!("{path} exists; left alone")),
            ),
        });
    }
    if let Err(e) = a.make_dirs(i, finding, path) {
        return Ok((StepStatus::Failed, Some(e)));
    }
    let seq = a.change(
        i,
        finding,
        Undo::Link {
            path: path.to_string(),
            target: target.to_string(),
        },
    )?;
    let res = a.root.symlink(target, path).map_err(|e| e.to_string());
    if res.is_ok() {
        let _ = a.root.path(path).map(|real| sync_parent(&real));
    }
    a.finish(seq, res)
}

fn stop_service(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    unit: &str,
    stop: bool,
    disable: bool,
) -> StepResult {
    if !a.root.is_live() {
        return Ok((StepStatus::Skipped, Some(LIVE_ONLY_SERVICE.into())));
    }
    let (was_active, was_enabled) = match (service::is_active(unit), service::is_enabled(unit)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            return Ok((StepStatus::Failed, Some(format!("systemctl: {e}"))))
        }
    };
    let stopping = stop && was_active;
    let disabling = disable && was_enabled;
    if !stopping && !disabling {
        return Ok((StepStatus::AlreadySet, None));
    }
    let seq = a.change(
        i,
        finding,
        Undo::Service {
            unit: unit.to_string(),
            was_active,
            was_enabled,
            stopped: stopping,
            disabled: disabling,
        },
    )?;
    let mut res = Ok(());
    if disabling {
        res = service::act("disable", unit);
    }
    if res.is_ok() && stopping {
        res = service::act("stop", unit);
    }
    a.finish(seq, res)
}

fn set_ring(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    iface: &str,
    rx: u32,
    tx: u32,
) -> StepResult {
    if !a.root.is_live() {
        return Ok((StepStatus::Skipped, Some(LIVE_ONLY_RING.into())));
    }
    let cur = match ethtool::get_ring(iface) {
        Ok(c) => c,
        Err(e) => {
            return Ok((
                StepStatus::Skipped,
                Some(format!("ethtool -g {iface}: {e}")),
            ))
        }
    };
    if cur.rx == rx && cur.tx == tx {
        return Ok((StepStatus::AlreadySet, None));
    }
    let seq = a.change(
        i,
        finding,
        Undo::Ring {
            iface: iface.to_string(),
            old_rx: cur.rx,
            old_tx: cur.tx,
            new_rx: rx,
            new_tx: tx,
        },
    )?;
    let res = ethtool::set_ring(iface, rx, tx).map_err(|e| format!("ethtool -G {iface}: {e}"));
    a.finish(seq, res)
}

/// Where coalescing is read and set: the kernel's ethtool interface ([`KernelCoalesce`]), or a
/// stand-in in tests (no NIC on a test host coalesces).
pub trait CoalesceDevice {
    fn get(&self, iface: &str) -> io::Result<ethtool::Coalesce>;
    fn set(&self, iface: &str, set: &CoalesceSet) -> io::Result<()>;
}

/// The running kernel (`ETHTOOL_GCOALESCE` / `ETHTOOL_SCOALESCE`).
pub struct KernelCoalesce;

impl CoalesceDevice for KernelCoalesce {
    fn get(&self, iface: &str) -> io::Result<ethtool::Coalesce> {
        ethtool::get_coalesce(iface)
    }
    fn set(&self, iface: &str, set: &CoalesceSet) -> io::Result<()> {
        ethtool::set_coalesce(iface, set)
    }
}

/// The driver does not implement coalescing (`EOPNOTSUPP`) or refuses the value (`EINVAL`).
fn unsupported(e: &io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::OPNOTSUPP | Errno::INVAL)
    )
}

/// Set the coalescing fields `set` names: read, skip when they hold, journal the old values of
/// exactly those fields, write. A driver without coalescing (or refusing the value) is reported
/// as not supported, and the plan goes on.
fn set_coalesce(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    iface: &str,
    set: &CoalesceSet,
    dev: &dyn CoalesceDevice,
) -> StepResult {
    set_fields(
        a,
        (i, finding),
        set,
        (dev.get(iface), format!("ethtool -c {iface}")),
        |old| Undo::Coalesce {
            iface: iface.to_string(),
            old,
            new: *set,
        },
        (|| dev.set(iface, set), format!("ethtool -C {iface}")),
    )
}

/// The one way a set of device fields is changed: `now` is the device's reading (its second
/// item names the command that read it; a driver without the setting is not supported, any
/// other error a failure), skip when `set` holds there, journal `undo` of the old values of
/// exactly those fields, write (`write`, named by its second item) and record the outcome.
fn set_fields<S: FieldSet>(
    a: &mut Applier<'_>,
    (i, finding): (usize, &str),
    set: &S,
    now: (io::Result<S::Reading>, String),
    undo: impl FnOnce(S) -> Undo,
    write: (impl FnOnce() -> io::Result<()>, String),
) -> StepResult {
    let (now, read) = now;
    let cur = match now {
        Ok(c) => c,
        Err(e) if unsupported(&e) => {
            return Ok((StepStatus::NotSupported, Some(format!("{read}: {e}"))))
        }
        Err(e) => return Ok((StepStatus::Failed, Some(format!("{read}: {e}")))),
    };
    if set.holds_in(&cur) {
        return Ok((StepStatus::AlreadySet, None));
    }
    let seq = a.change(i, finding, undo(set.current_in(&cur)))?;
    let (write, what) = write;
    finish_write(a, seq, write(), &what)
}

/// Where GSO/GRO sizes (rtnetlink), flow control and named features (ethtool) are read and
/// set: the running kernel ([`KernelLink`]), or an in-memory NIC in tests.
pub trait LinkDevice {
    fn sizes(&self, iface: &str) -> io::Result<LinkSizes>;
    fn set_sizes(&self, iface: &str, set: &SizesSet) -> io::Result<()>;
    fn pause(&self, iface: &str) -> io::Result<ethtool::Pause>;
    fn set_pause(&self, iface: &str, set: &PauseSet) -> io::Result<()>;
    /// One named feature (`rx-ntuple-filter`); `EOPNOTSUPP` when the NIC does not list it.
    fn feature(&self, iface: &str, name: &str) -> io::Result<ethtool::Feature>;
    /// Turn one named feature on or off, touching no other; `EOPNOTSUPP` when it is fixed.
    fn set_feature(&self, iface: &str, name: &str, on: bool) -> io::Result<()>;
}

/// The running kernel: `RTM_GETLINK`/`RTM_NEWLINK`, `ETHTOOL_GPAUSEPARAM`/`ETHTOOL_SPAUSEPARAM`,
/// `ETHTOOL_GFEATURES`/`ETHTOOL_SFEATURES`.
pub struct KernelLink;

impl LinkDevice for KernelLink {
    fn sizes(&self, iface: &str) -> io::Result<LinkSizes> {
        link::get_sizes(iface)
    }
    fn set_sizes(&self, iface: &str, set: &SizesSet) -> io::Result<()> {
        link::set_sizes(iface, set)
    }
    fn pause(&self, iface: &str) -> io::Result<ethtool::Pause> {
        ethtool::get_pause(iface)
    }
    fn set_pause(&self, iface: &str, set: &PauseSet) -> io::Result<()> {
        ethtool::set_pause(iface, set)
    }
    fn feature(&self, iface: &str, name: &str) -> io::Result<ethtool::Feature> {
        ethtool::get_feature(iface, name)
    }
    fn set_feature(&self, iface: &str, name: &str, on: bool) -> io::Result<()> {
        ethtool::set_feature(iface, name, on)
    }
}

/// Journal the outcome of change `seq` and return the step's status with its detail: the end
/// of every write.
fn settle(
    a: &mut Applier<'_>,
    seq: u32,
    status: StepStatus,
    outcome: Outcome,
    detail: Option<String>,
) -> StepResult {
    a.result(seq, outcome, &detail)?;
    Ok((status, detail))
}

/// Record the outcome of a write announced as change `seq`.
fn finish_write(a: &mut Applier<'_>, seq: u32, res: io::Result<()>, what: &str) -> StepResult {
    let (status, outcome, detail) = match res {
        Ok(()) => (StepStatus::Applied, Outcome::Applied, None),
        Err(e) if unsupported(&e) => (
            StepStatus::NotSupported,
            Outcome::NotSupported,
            Some(format!("{what}: {e}")),
        ),
        Err(e) => (
            StepStatus::Failed,
            Outcome::Failed,
            Some(format!("{what}: {e}")),
        ),
    };
    settle(a, seq, status, outcome, detail)
}

/// Raise the GSO/GRO sizes `set` names (those the kernel reports: the IPv4 ones exist from
/// 6.3): read, skip when they hold, journal the old values of exactly those sizes, set, read
/// back. A size the driver refuses (above its `tso_max_size`: `EINVAL`) is not supported.
fn set_sizes(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    iface: &str,
    set: &SizesSet,
    dev: &dyn LinkDevice,
) -> StepResult {
    let cur = match dev.sizes(iface) {
        Ok(c) => c,
        Err(e) => {
            return Ok((
                StepStatus::Failed,
                Some(format!("RTM_GETLINK {iface}: {e}")),
            ))
        }
    };
    let set = set.supported_by(&cur);
    if set.is_empty() {
        return Ok((
            StepStatus::NotSupported,
            Some(format!("the kernel reports no GSO/GRO sizes for {iface}")),
        ));
    }
    if set.holds_in(&cur) {
        return Ok((StepStatus::AlreadySet, None));
    }
    let seq = a.change(
        i,
        finding,
        Undo::LinkSizes {
            iface: iface.to_string(),
            old: set.current_in(&cur),
            new: set,
        },
    )?;
    let what = format!("ip link set dev {iface} {}", set.ip_args());
    let res = dev.set_sizes(iface, &set);
    let ok = res.is_ok();
    let (status, detail) = finish_write(a, seq, res, &what)?;
    if !ok {
        return Ok((status, detail));
    }
    let back = dev
        .sizes(iface)
        .map(|now| set.current_in(&now).ip_args())
        .unwrap_or_else(|e| format!("not read back: {e}"));
    Ok((status, Some(format!("kernel reports {back}"))))
}

/// Set the flow-control directions `set` names: read, skip when they hold, journal, write. A
/// driver without flow control (`EOPNOTSUPP`) is not supported, and the plan goes on.
fn set_pause(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    iface: &str,
    set: &PauseSet,
    dev: &dyn LinkDevice,
) -> StepResult {
    set_fields(
        a,
        (i, finding),
        set,
        (dev.pause(iface), format!("ethtool -a {iface}")),
        |old| Undo::Pause {
            iface: iface.to_string(),
            old,
            new: *set,
        },
        (
            || dev.set_pause(iface, set),
            format!("ethtool -A {iface} {}", set.ethtool_args()),
        ),
    )
}

/// Turn one named NIC feature on or off: read, skip when it holds, journal the old state,
/// write that bit alone. A NIC without the feature, or with it fixed (veth, lo: `EOPNOTSUPP`),
/// or a driver that refuses it (`EINVAL`) is not supported, and the plan goes on.
fn set_feature(
    a: &mut Applier<'_>,
    i: usize,
    finding: &str,
    iface: &str,
    feature: &str,
    on: bool,
    dev: &dyn LinkDevice,
) -> StepResult {
    let arg = ethtool::feature_arg(feature);
    let cur = match dev.feature(iface, feature) {
        Ok(c) => c,
        Err(e) if unsupported(&e) => {
            return Ok((
                StepStatus::NotSupported,
                Some(format!("ethtool -k {iface} lists no {arg}: {e}")),
            ))
        }
        Err(e) => return Ok((StepStatus::Failed, Some(format!("ethtool -k {iface}: {e}")))),
    };
    if cur.active == on {
        return Ok((StepStatus::AlreadySet, None));
    }
    if !cur.changeable {
        return Ok((
            StepStatus::NotSupported,
            Some(format!("{arg} is fixed {} on {iface}", on_off(cur.active))),
        ));
    }
    let seq = a.change(
        i,
        finding,
        Undo::Feature {
            iface: iface.to_string(),
            feature: feature.to_string(),
            old: cur.active,
            new: on,
        },
    )?;
    let what = format!("ethtool -K {iface} {arg} {}", on_off(on));
    let res = dev.set_feature(iface, feature, on);
    finish_write(a, seq, res, &what)
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Put back a feature a journal saved: only when it still holds what tune set (or `force`).
fn undo_feature(
    iface: &str,
    feature: &str,
    old: bool,
    new: bool,
    force: bool,
    dev: &dyn LinkDevice,
) -> (RevertStatus, Option<String>) {
    let arg = ethtool::feature_arg(feature);
    let cur = match dev.feature(iface, feature) {
        Ok(c) => c.active,
        Err(err) => {
            return (
                RevertStatus::Failed,
                Some(format!("ethtool -k {iface}: {err}")),
            )
        }
    };
    if cur == old {
        return (RevertStatus::AlreadyOriginal, None);
    }
    if cur != new && !force {
        return (
            RevertStatus::LeftChanged,
            Some(format!(
                "now {arg} {}, tune set {}",
                on_off(cur),
                on_off(new)
            )),
        );
    }
    match dev.set_feature(iface, feature, old) {
        Ok(()) => (
            RevertStatus::Restored,
            Some(format!("{arg} {}", on_off(old))),
        ),
        Err(err) => (
            RevertStatus::Failed,
            Some(format!("ethtool -K {iface} {arg} {}: {err}", on_off(old))),
        ),
    }
}

/// Fields tune changed on a device, as a revert sees them: whether a reading of the device
/// still holds them, the reading's own values for those fields, and the command words.
trait FieldSet: Sized {
    type Reading;
    fn holds_in(&self, now: &Self::Reading) -> bool;
    fn current_in(&self, now: &Self::Reading) -> Self;
    fn args(&self) -> String;
}

/// [`FieldSet`] for one of the host crate's sets, through its own methods.
macro_rules! field_set {
    ($set:ty, $reading:ty, $args:ident) => {
        impl FieldSet for $set {
            type Reading = $reading;
            fn holds_in(&self, now: &$reading) -> bool {
                <$set>::holds_in(self, now)
            }
            fn current_in(&self, now: &$reading) -> Self {
                <$set>::current_in(self, now)
            }
            fn args(&self) -> String {
                self.$args()
            }
        }
    };
}

field_set!(SizesSet, LinkSizes, ip_args);
field_set!(PauseSet, ethtool::Pause, ethtool_args);
field_set!(CoalesceSet, ethtool::Coalesce, ethtool_args);

/// Put back the fields a journal saved (`old`), only while the device still holds what tune set
/// (`new`), or with `force`; `now` is the device's reading (`read` names the command that read
/// it), `write` puts `old` back (`write_cmd` names it).
fn undo_fields<S: FieldSet>(
    old: &S,
    new: &S,
    force: bool,
    now: io::Result<S::Reading>,
    read: &str,
    write: impl FnOnce(&S) -> io::Result<()>,
    write_cmd: &str,
) -> (RevertStatus, Option<String>) {
    let cur = match now {
        Ok(c) => c,
        Err(err) => return (RevertStatus::Failed, Some(format!("{read}: {err}"))),
    };
    if old.holds_in(&cur) {
        return (RevertStatus::AlreadyOriginal, None);
    }
    if !new.holds_in(&cur) && !force {
        return (
            RevertStatus::LeftChanged,
            Some(format!(
                "now {}, tune set {}",
                new.current_in(&cur).args(),
                new.args()
            )),
        );
    }
    match write(old) {
        Ok(()) => (RevertStatus::Restored, Some(old.args())),
        Err(err) => (RevertStatus::Failed, Some(format!("{write_cmd}: {err}"))),
    }
}

/// Put back the sizes a journal saved: only when they still hold what tune set (or `force`).
fn undo_sizes(
    iface: &str,
    old: &SizesSet,
    new: &SizesSet,
    force: bool,
    dev: &dyn LinkDevice,
) -> (RevertStatus, Option<String>) {
    undo_fields(
        old,
        new,
        force,
        dev.sizes(iface),
        &format!("RTM_GETLINK {iface}"),
        |o| dev.set_sizes(iface, o),
        &format!("ip link set dev {iface} {}", old.ip_args()),
    )
}

/// Put back the flow-control directions a journal saved (same rule as the sizes).
fn undo_pause(
    iface: &str,
    old: &PauseSet,
    new: &PauseSet,
    force: bool,
    dev: &dyn LinkDevice,
) -> (RevertStatus, Option<String>) {
    undo_fields(
        old,
        new,
        force,
        dev.pause(iface),
        &format!("ethtool -a {iface}"),
        |o| dev.set_pause(iface, o),
        &format!("ethtool -A {iface}"),
    )
}

/// Put back the coalescing fields a journal saved: only when they still hold what tune set
/// (or with `force`).
fn undo_coalesce(
    iface: &str,
    old: &CoalesceSet,
    new: &CoalesceSet,
    force: bool,
    dev: &dyn CoalesceDevice,
) -> (RevertStatus, Option<String>) {
    undo_fields(
        old,
        new,
        force,
        dev.get(iface),
        &format!("ethtool -c {iface}"),
        |o| dev.set(iface, o),
        &format!("ethtool -C {iface}"),
    )
}

/// What revert did with one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevertStatus {
    /// Put back to the journal's old value.
    Restored,
    /// Already holds the old value (an earlier revert, or the write never happened).
    AlreadyOriginal,
    /// The step failed or was refused at apply time; nothing to undo.
    NothingWritten,
    /// Someone changed it since tune did; left alone (use force to restore anyway).
    LeftChanged,
    /// Restoring failed.
    Failed,
}

impl RevertStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RevertStatus::Restored => "restored",
            RevertStatus::AlreadyOriginal => "already original",
            RevertStatus::NothingWritten => "nothing written",
            RevertStatus::LeftChanged => "CHANGED SINCE, left alone",
            RevertStatus::Failed => "FAILED",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RevertItem {
    pub seq: u32,
    pub setting: String,
    pub status: RevertStatus,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RevertReport {
    pub journal: String,
    /// True when the journal had already been reverted completely; nothing was done.
    pub already_reverted: bool,
    pub items: Vec<RevertItem>,
    /// Journal lines that could not be read: whatever change they held was not reverted.
    /// Every readable record was.
    pub unreadable: Vec<journal::Unreadable>,
    /// Why the journal is cut short, when it is ([`JournalFile::truncated`]): every change it
    /// still names was reverted, one after the cut could not be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    /// The journal had no end record (an interrupted apply, or a journal cut after a change):
    /// every change it names was reverted; one after its last record, if any, is not known.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl RevertReport {
    /// Every change the journal names is back, and the journal was whole (a cut-short one
    /// may have named more).
    pub fn complete(&self) -> bool {
        self.truncated.is_none()
            && self
                .items
                .iter()
                .all(|i| !matches!(i.status, RevertStatus::LeftChanged | RevertStatus::Failed))
    }
    pub fn count(&self, s: RevertStatus) -> usize {
        self.items.iter().filter(|i| i.status == s).count()
    }
}

/// The journal `tune revert` takes by default: the newest one not completely reverted.
pub fn latest_unreverted(root: &Root, dir: &str) -> Result<Option<String>, TuneError> {
    for path in journal::list(root, dir).into_iter().rev() {
        // A journal that cannot be read at all (a trap, a permission) is taken too: revert
        // then says what is wrong with it instead of silently passing to an older one.
        match JournalFile::read(root, &path) {
            Ok(jf) if jf.state() == State::Reverted => continue,
            _ => return Ok(Some(path)),
        }
    }
    Ok(None)
}

/// Revert every change of a journal, newest first.
pub fn revert(root: &Root, journal_path: &str, force: bool) -> Result<RevertReport, TuneError> {
    let kernel = KernelLink;
    let link = root.is_live().then_some(&kernel as &dyn LinkDevice);
    revert_inner(root, journal_path, force, link)
}

/// [`revert`] with GSO/GRO sizes and flow control put back through `link` whatever the root.
pub fn revert_with(
    root: &Root,
    journal_path: &str,
    force: bool,
    link: &dyn LinkDevice,
) -> Result<RevertReport, TuneError> {
    revert_inner(root, journal_path, force, Some(link))
}

fn revert_inner(
    root: &Root,
    journal_path: &str,
    force: bool,
    link: Option<&dyn LinkDevice>,
) -> Result<RevertReport, TuneError> {
    check_privileged(root)?;
    let dir = Path::new(journal_path)
        .parent()
        .and_then(|d| d.to_str())
        .filter(|d| !d.is_empty())
        .unwrap_or("/");
    let _lock = journal::ApplyLock::acquire(root, dir)?;
    let jf = JournalFile::read(root, journal_path)?;
    if jf.state() == State::Reverted {
        return Ok(RevertReport {
            journal: journal_path.to_string(),
            already_reverted: true,
            items: Vec::new(),
            unreadable: Vec::new(),
            truncated: None,
            interrupted: false,
        });
    }
    let mut items = Vec::new();
    for e in jf.entries().iter().rev() {
        let (status, detail) = match e.outcome {
            Some(Outcome::Failed) | Some(Outcome::NotMovable) | Some(Outcome::NotSupported) => {
                (RevertStatus::NothingWritten, None)
            }
            _ => undo(root, e, force, link),
        };
        items.push(RevertItem {
            seq: e.seq,
            setting: e.undo.setting(),
            status,
            detail,
        });
    }
    let report = RevertReport {
        journal: journal_path.to_string(),
        already_reverted: false,
        items,
        unreadable: jf.unreadable.clone(),
        truncated: jf.truncated(),
        interrupted: jf.state() == State::Interrupted,
    };
    let mut j = Journal::open_append(root, journal_path)?;
    if jf.torn_tail {
        j.end_torn_line()?;
    }
    j.append(&Record::Revert {
        at: journal::rfc3339(SystemTime::now()),
        complete: report.complete(),
        restored: report.count(RevertStatus::Restored),
        left: report
            .items
            .iter()
            .filter(|i| matches!(i.status, RevertStatus::LeftChanged | RevertStatus::Failed))
            .map(|i| i.seq)
            .collect(),
        forced: force,
    })?;
    Ok(report)
}

/// A value for a one-line report: white space runs (the kernel's tabs) as one space, at most
/// 60 bytes.
fn short(s: &str) -> String {
    let t = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.len() > 60 {
        let cut = (0..=60).rev().find(|&i| t.is_char_boundary(i)).unwrap_or(0);
        format!("{}...", &t[..cut])
    } else {
        t
    }
}

fn undo(
    root: &Root,
    e: &Entry,
    force: bool,
    link: Option<&dyn LinkDevice>,
) -> (RevertStatus, Option<String>) {
    // `None` outcome: the apply stopped between announcing this change and recording its end;
    // the write may not have happened, or (in a plain file) may have been cut short.
    let unconfirmed = e.outcome.is_none();
    match &e.undo {
        Undo::File {
            path,
            form,
            old,
            new,
        } => {
            let now = match root.read(path) {
                Ok(v) => v,
                Err(err) => return (RevertStatus::Failed, Some(err.to_string())),
            };
            if now == *old || form.same(&now, old) {
                return (RevertStatus::AlreadyOriginal, None);
            }
            let ours = form.same(&now, new) || (unconfirmed && new.starts_with(now.as_str()));
            if !ours && !force {
                return (
                    RevertStatus::LeftChanged,
                    Some(format!(
                        "now {}, tune wrote {}; original {}",
                        short(&now),
                        short(new),
                        short(old)
                    )),
                );
            }
            match root.write(path, old) {
                Ok(()) => (
                    RevertStatus::Restored,
                    Some(format!("back to {}", short(old))),
                ),
                Err(err) => (RevertStatus::Failed, Some(err.to_string())),
            }
        }
        Undo::Created { path, new, old, .. } => {
            undo_created(root, path, new, old.as_ref(), unconfirmed, force)
        }
        Undo::Dir { path } => {
            match root.lstat(path) {
                Ok(None) => return (RevertStatus::AlreadyOriginal, None),
                Ok(Some(_)) => {}
                Err(err) => return (RevertStatus::Failed, Some(err.to_string())),
            }
            match root.remove_dir(path) {
                Ok(()) => {
                    let _ = root.path(path).map(|real| sync_parent(&real));
                    (RevertStatus::Restored, Some("removed".into()))
                }
                Err(err) => (
                    RevertStatus::LeftChanged,
                    Some(format!("directory tune created is not empty now: {err}")),
                ),
            }
        }
        Undo::Link { path, target } => match root.read_link(path) {
            Err(_) if matches!(root.lstat(path), Ok(None)) => (RevertStatus::AlreadyOriginal, None),
            Ok(t) if t == Path::new(target) || force => match root.remove(path) {
                Ok(()) => {
                    let _ = root.path(path).map(|real| sync_parent(&real));
                    (RevertStatus::Restored, Some("removed".into()))
                }
                Err(err) => (RevertStatus::Failed, Some(err.to_string())),
            },
            _ => (
                RevertStatus::LeftChanged,
                Some(format!("{path} no longer the link tune made")),
            ),
        },
        Undo::Service {
            unit,
            was_active,
            was_enabled,
            stopped,
            disabled,
        } => {
            if !root.is_live() {
                return (RevertStatus::Failed, Some(LIVE_ONLY_SERVICE.into()));
            }
            let mut done = Vec::new();
            if *disabled && *was_enabled && service::is_enabled(unit).ok() == Some(false) {
                if let Err(err) = service::act("enable", unit) {
                    return (RevertStatus::Failed, Some(err));
                }
                done.push("enabled");
            }
            if *stopped && *was_active && service::is_active(unit).ok() == Some(false) {
                if let Err(err) = service::act("start", unit) {
                    return (RevertStatus::Failed, Some(err));
                }
                done.push("started");
            }
            if done.is_empty() {
                (RevertStatus::AlreadyOriginal, None)
            } else {
                (RevertStatus::Restored, Some(done.join(" and ")))
            }
        }
        Undo::Ring {
            iface,
            old_rx,
            old_tx,
            new_rx,
            new_tx,
        } => {
            if !root.is_live() {
                return (RevertStatus::Failed, Some(LIVE_ONLY_RING.into()));
            }
            let cur = match ethtool::get_ring(iface) {
                Ok(c) => c,
                Err(err) => {
                    return (
                        RevertStatus::Failed,
                        Some(format!("ethtool -g {iface}: {err}")),
                    )
                }
            };
            if cur.rx == *old_rx && cur.tx == *old_tx {
                return (RevertStatus::AlreadyOriginal, None);
            }
            let ours = cur.rx == *new_rx && cur.tx == *new_tx;
            if !ours && !force {
                return (
                    RevertStatus::LeftChanged,
                    Some(format!(
                        "now rx {} tx {}, tune set rx {new_rx} tx {new_tx}",
                        cur.rx, cur.tx
                    )),
                );
            }
            match ethtool::set_ring(iface, *old_rx, *old_tx) {
                Ok(()) => (
                    RevertStatus::Restored,
                    Some(format!("rx {old_rx} tx {old_tx}")),
                ),
                Err(err) => (
                    RevertStatus::Failed,
                    Some(format!("ethtool -G {iface}: {err}")),
                ),
            }
        }
        Undo::Coalesce { iface, old, new } => {
            if !root.is_live() {
                return (RevertStatus::Failed, Some(LIVE_ONLY_COALESCE.into()));
            }
            undo_coalesce(iface, old, new, force, &KernelCoalesce)
        }
        Undo::LinkSizes { iface, old, new } => match link {
            Some(dev) => undo_sizes(iface, old, new, force, dev),
            None => (RevertStatus::Failed, Some(LIVE_ONLY_SIZES.into())),
        },
        Undo::Pause { iface, old, new } => match link {
            Some(dev) => undo_pause(iface, old, new, force, dev),
            None => (RevertStatus::Failed, Some(LIVE_ONLY_PAUSE.into())),
        },
        Undo::Feature {
            iface,
            feature,
            old,
            new,
        } => match link {
            Some(dev) => undo_feature(iface, feature, *old, *new, force, dev),
            None => (RevertStatus::Failed, Some(LIVE_ONLY_FEATURE.into())),
        },
    }
}

fn undo_created(
    root: &Root,
    path: &str,
    new: &str,
    old: Option<&Saved>,
    unconfirmed: bool,
    force: bool,
) -> (RevertStatus, Option<String>) {
    // A crash inside Root::create can leave its temporary file behind.
    let tmp = Path::new(path)
        .with_extension("wirespeed-tmp")
        .display()
        .to_string();
    if unconfirmed && matches!(root.lstat(&tmp), Ok(Some(_))) {
        let _ = root.remove(&tmp);
    }
    let now = match root.lstat(path) {
        Ok(None) => None,
        Ok(Some(_)) => match root.read(path) {
            Ok(t) => Some(t),
            Err(err) => return (RevertStatus::LeftChanged, Some(err.to_string())),
        },
        Err(err) => return (RevertStatus::Failed, Some(err.to_string())),
    };
    let is_old = match (&now, old) {
        (None, None) => true,
        (Some(n), Some(o)) => *n == o.contents && mode_of(root, path) == Some(o.mode),
        _ => false,
    };
    if is_old {
        return (RevertStatus::AlreadyOriginal, None);
    }
    let ours = now.as_deref() == Some(new);
    if !ours && !force {
        return (
            RevertStatus::LeftChanged,
            Some(match now {
                None => format!("{path} was removed since"),
                Some(_) => format!("{path} was edited since"),
            }),
        );
    }
    match old {
        None => match root.remove(path) {
            Ok(()) => {
                let _ = root.path(path).map(|real| sync_parent(&real));
                (RevertStatus::Restored, Some("removed".into()))
            }
            Err(err) => (RevertStatus::Failed, Some(err.to_string())),
        },
        Some(o) => match root.create_with_mode(path, o.contents.as_bytes(), o.mode) {
            Ok(()) => (
                RevertStatus::Restored,
                Some("original content restored".into()),
            ),
            Err(err) => (RevertStatus::Failed, Some(err.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A NIC that coalesces, in memory: what a driver with `ETHTOOL_SCOALESCE` does (or one
    /// that answers `refuse` to every write). No NIC of a test host coalesces.
    struct FakeNic {
        state: RefCell<ethtool::Coalesce>,
        refuse: Option<i32>,
    }

    impl CoalesceDevice for FakeNic {
        fn get(&self, _iface: &str) -> io::Result<ethtool::Coalesce> {
            Ok(*self.state.borrow())
        }
        fn set(&self, _iface: &str, set: &CoalesceSet) -> io::Result<()> {
            if let Some(e) = self.refuse {
                return Err(io::Error::from_raw_os_error(e));
            }
            let new = set.applied_to(&self.state.borrow());
            *self.state.borrow_mut() = new;
            Ok(())
        }
    }

    #[test]
    fn net_admin_is_needed_for_netdev_attributes_and_ethtool_not_for_sysctls_or_irqs() {
        let write = |path: &str| Change::Write {
            path: path.into(),
            form: crate::value::Form::Words,
            value: "1".into(),
        };
        assert!(needs_net_admin(&write("/sys/class/net/eth0/mtu")));
        assert!(needs_net_admin(&write(
            "/sys/class/net/eth0/queues/rx-0/rps_cpus"
        )));
        assert!(!needs_net_admin(&write("/proc/sys/net/core/rmem_max")));
        assert!(needs_net_admin(&Change::Ring {
            iface: "eth0".into(),
            rx: 4096,
            tx: 4096
        }));
        assert!(!needs_net_admin(&Change::IrqAffinity {
            irq: 40,
            name: None,
            cpus: wirespeed_host::CpuSet::from_cpus([0]),
        }));
    }

    fn nic(refuse: Option<i32>) -> FakeNic {
        FakeNic {
            state: RefCell::new(ethtool::Coalesce {
                rx_usecs: 8,
                rx_max_frames: 128,
                tx_usecs: 16,
                tx_max_frames: 128,
                adaptive_rx: false,
                adaptive_tx: true,
                rx_usecs_irq: 0,
                tx_usecs_irq: 0,
                pkt_rate_low: 0,
                pkt_rate_high: 0,
                rate_sample_interval: 0,
            }),
            refuse,
        }
    }

    fn applier(root: &Root) -> Applier<'_> {
        let begin = Record::Begin {
            schema: journal::JOURNAL_SCHEMA,
            created: "t".into(),
            tool: "test".into(),
            root: root.dir().display().to_string(),
            iface: Some("eth9".into()),
            steps: 1,
            addressed: vec![],
        };
        Applier {
            root,
            journal: Journal::create(root, "/j", &begin).unwrap(),
            seq: 0,
            link: None,
        }
    }

    const SET: CoalesceSet = CoalesceSet {
        adaptive_rx: Some(true),
        rx_usecs: Some(64),
        tx_usecs: None,
    };

    #[test]
    fn coalesce_is_journaled_before_the_write_and_reverts_exactly() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let dev = nic(None);
        let before = *dev.state.borrow();
        let mut a = applier(&root);
        let (status, _) = set_coalesce(&mut a, 0, "requested", "eth9", &SET, &dev).unwrap();
        assert_eq!(status, StepStatus::Applied);
        let after = *dev.state.borrow();
        assert_eq!((after.rx_usecs, after.adaptive_rx), (64, true));
        // fields not asked for keep the driver's values
        assert_eq!(after.tx_usecs, 16);
        assert_eq!(after.rx_max_frames, 128);
        // applying again changes and journals nothing
        let (again, _) = set_coalesce(&mut a, 0, "requested", "eth9", &SET, &dev).unwrap();
        assert_eq!(again, StepStatus::AlreadySet);

        let path = a.journal.host_path().to_string();
        let jf = JournalFile::read(&root, &path).unwrap();
        let entries = jf.entries();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].outcome, Some(Outcome::Applied));
        let Undo::Coalesce { iface, old, new } = &entries[0].undo else {
            panic!("not a coalesce undo: {:?}", entries[0].undo);
        };
        assert_eq!(iface, "eth9");
        assert_eq!(
            *old,
            CoalesceSet {
                adaptive_rx: Some(false),
                rx_usecs: Some(8),
                tx_usecs: None
            }
        );
        assert_eq!(*new, SET);

        let (st, _) = undo_coalesce(iface, old, new, false, &dev);
        assert_eq!(st, RevertStatus::Restored);
        assert_eq!(*dev.state.borrow(), before);
        // reverting twice is harmless
        let (st, _) = undo_coalesce(iface, old, new, false, &dev);
        assert_eq!(st, RevertStatus::AlreadyOriginal);
        assert_eq!(*dev.state.borrow(), before);
    }

    #[test]
    fn coalesce_changed_since_is_left_alone_unless_forced() {
        let dev = nic(None);
        let before = *dev.state.borrow();
        let old = SET.current_in(&before);
        dev.set("eth9", &SET).unwrap();
        // someone else sets rx-usecs 32 after tune
        dev.set(
            "eth9",
            &CoalesceSet {
                rx_usecs: Some(32),
                ..CoalesceSet::default()
            },
        )
        .unwrap();
        let (st, detail) = undo_coalesce("eth9", &old, &SET, false, &dev);
        assert_eq!(st, RevertStatus::LeftChanged);
        assert_eq!(
            detail.as_deref(),
            Some("now adaptive-rx on rx-usecs 32, tune set adaptive-rx on rx-usecs 64")
        );
        assert_eq!(dev.state.borrow().rx_usecs, 32);
        let (st, _) = undo_coalesce("eth9", &old, &SET, true, &dev);
        assert_eq!(st, RevertStatus::Restored);
        assert_eq!(*dev.state.borrow(), before);
    }

    #[test]
    fn a_driver_refusing_coalescing_is_not_supported_and_nothing_is_left_to_revert() {
        for errno in [Errno::OPNOTSUPP, Errno::INVAL].map(Errno::raw_os_error) {
            let t = tempfile::tempdir().unwrap();
            let root = Root::new(t.path());
            let dev = nic(Some(errno));
            let before = *dev.state.borrow();
            let mut a = applier(&root);
            let (status, detail) =
                set_coalesce(&mut a, 0, "requested", "eth9", &SET, &dev).unwrap();
            assert_eq!(status, StepStatus::NotSupported, "{detail:?}");
            assert!(detail.unwrap().starts_with("ethtool -C eth9: "));
            assert_eq!(*dev.state.borrow(), before);
            let jf = JournalFile::read(&root, a.journal.host_path()).unwrap();
            assert_eq!(jf.entries()[0].outcome, Some(Outcome::NotSupported));
        }
        // any other error is a failure, not "not supported"
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let dev = nic(Some(Errno::BUSY.raw_os_error()));
        let mut a = applier(&root);
        let (status, _) = set_coalesce(&mut a, 0, "requested", "eth9", &SET, &dev).unwrap();
        assert_eq!(status, StepStatus::Failed);
    }
}
