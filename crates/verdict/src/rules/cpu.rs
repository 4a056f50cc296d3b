//! The CPUs: a saturated CPU the test's workers needed (with its cause: the receive softirq on
//! the worker's CPU, IRQs on another NUMA node or L3 group, steal), a worker another task held
//! off its CPU, and steal on a CPU that did not saturate.

use wirespeed_model::{Bound, Rank, VerdictEnd, VerdictId};

use super::super::context::Context;
use super::super::cpu::Candidate;
use super::super::evidence;
use super::super::finding::{Finding, Out, Rule};
use super::super::words::end_of;
use wirespeed_host::CpuSet;
use wirespeed_model::observation::Percent;

pub(crate) const SATURATED: Rule = Rule {
    name: "a saturated CPU",
    ids: wirespeed_model::precedence::SATURATED_CPU_IDS,
    check: saturated,
};

pub(crate) const CONTENDED: Rule = Rule {
    name: "another task on a worker's CPU",
    ids: &[VerdictId::CpuContended],
    check: contended,
};

pub(crate) const STEAL: Rule = Rule {
    name: "steal on a CPU that did work",
    ids: &[VerdictId::CpuSteal],
    check: steal,
};

const CPU_COUNTERS: &[&str] = &[
    "/proc/stat per-CPU time",
    "/proc/interrupts (NIC queue IRQs)",
    "/proc/softirqs (NET_RX, NET_TX)",
    "the workers' CPUs",
];

fn finding(cx: &Context, c: &Candidate, rank: Rank, line: String) -> Finding {
    let sat = cx.th.saturated;
    Finding::new(
        c.verdict.id,
        c.verdict.end,
        line,
        rank,
        Bound::Binding,
        c.busy / 100.0,
    )
    .reads(CPU_COUNTERS)
    .agreed(evidence::per_interval(cx.test, c.verdict.end, &|i| {
        evidence::saturated(i, sat)
    }))
    .on_cpu(c.cpu)
}

/// The saturated CPUs, the busiest first, each id once. The receive softirq taking a quarter
/// of a saturated receiver CPU leads its own row (the worker waits for its own packets' work)
/// unless other tasks took more of that CPU than the softirq did. An end's first line says
/// how many more of its CPUs were saturated too.
fn saturated(cx: &Context) -> Vec<Out> {
    let (test, th) = (cx.test, cx.th);
    // the receiver's workers' loads (the context's, made once)
    let receiver = test.receiver();
    let loads = cx
        .loads
        .iter()
        .find(|(e, _)| receiver.is_some_and(|r| std::ptr::eq(*e, r)))
        .map_or(&[][..], |(_, l)| l);
    let others_first = |cpu: u32| {
        loads
            .iter()
            .any(|t| t.cpu == Some(cpu) && t.others > t.interrupts)
    };
    let mut cands: Vec<&Candidate> = cx.cands.iter().collect();
    let mut out = Vec::new();
    if let Some(i) = cands.iter().position(|c| {
        c.verdict.id == VerdictId::ReceiverSharesCpuWithSoftirq
            && c.interrupts >= th.softirq_heavy
            && !others_first(c.cpu)
    }) {
        let c = cands.remove(i);
        cands.retain(|x| x.verdict.id != c.verdict.id);
        out.push(finding(cx, c, Rank::OwnSoftirq, c.verdict.line.clone()));
    }
    let mut saturated = [CpuSet::new(), CpuSet::new()];
    for c in &cands {
        saturated[usize::from(c.receiver)].insert(c.cpu);
    }
    let mut seen = Vec::new();
    let mut named = [CpuSet::new(), CpuSet::new()];
    let mut first: [Option<(usize, VerdictEnd)>; 2] = [None, None];
    let mut found: Vec<(&Candidate, String)> = Vec::new();
    for c in cands {
        if seen.contains(&c.verdict.id) {
            continue;
        }
        seen.push(c.verdict.id);
        let e = usize::from(c.receiver);
        named[e].insert(c.cpu);
        if first[e].is_none() {
            let who = c.verdict.end.unwrap_or(if c.receiver {
                VerdictEnd::Receiver
            } else {
                VerdictEnd::Sender
            });
            first[e] = Some((found.len(), who));
        }
        found.push((c, c.verdict.line.clone()));
    }
    for e in 0..2 {
        let more = saturated[e].difference(&named[e]);
        if let (Some((i, who)), false) = (first[e], more.is_empty()) {
            found[i].1.push_str(&format!(
                "; {} more of the {who}'s CPUs saturated too ({})",
                more.len(),
                more
            ));
        }
    }
    out.extend(
        found
            .into_iter()
            .map(|(c, line)| finding(cx, c, Rank::SaturatedCpu, line)),
    );
    out.into_iter().map(Out::Finding).collect()
}

fn contended(cx: &Context) -> Vec<Out> {
    cx.contention.iter().cloned().map(Out::Finding).collect()
}

/// `cpu-steal` on a CPU that did work but did not saturate (a saturated one is a CPU
/// finding): consistent with a VM's CPU not all its own, as strong as the steal.
fn steal(cx: &Context) -> Vec<Out> {
    if cx.cands.iter().any(|c| c.verdict.id == VerdictId::CpuSteal) {
        return Vec::new();
    }
    let th = cx.th;
    let Some((e, c)) = cx
        .test
        .ends()
        .flat_map(|e| e.total.cpus.iter().map(move |c| (e, c)))
        .filter(|(_, c)| c.steal.get() >= th.steal)
        .max_by(|a, b| a.1.steal.get().total_cmp(&b.1.steal.get()))
    else {
        return Vec::new();
    };
    let worst = e
        .intervals
        .iter()
        .filter_map(|i| i.cpu(c.cpu))
        .map(|x| x.steal.get())
        .fold(c.steal.get(), f64::max);
    let who = end_of(e, e.role.receives());
    vec![Out::Finding(
        Finding::new(
            VerdictId::CpuSteal,
            Some(who),
            format!(
                "the hypervisor took {} of {who}'s CPU {} (steal; up to {} in an interval): a VM's CPU is not all its own",
                c.steal,
                c.cpu,
                Percent::new(worst)
            ),
            Rank::SaturatedCpu,
            Bound::Consistent,
            c.steal.get() / 100.0,
        )
        .reads(&["/proc/stat steal per CPU"])
        .on_cpu(c.cpu),
    )]
}
