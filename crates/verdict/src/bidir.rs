//! `--bidir`: each direction judged as a test of its own — the end that sends in it the sender —
//! the slower direction the verdict and the other under `also` and `other_direction`.

use wirespeed_model::verdict::{End, Flow, Measured};
use wirespeed_model::{Also, AlsoKind, Verdict};

use super::{one_direction, Thresholds};
use wirespeed_model::observation::{EndObservation, Role, TestObservation, WorkerRun};

/// `--bidir` judged per direction (`m.reverse` and `m.local` known, and neither a stalled
/// control connection nor a silent peer, which are the whole test's, judged once): the
/// client → server and server → client figures, each on its own (no `reverse`), and this end.
pub(super) fn directions(m: &Measured) -> Option<(Measured, Measured, End)> {
    let (rev, local) = (m.reverse.as_deref()?, m.local?);
    if m.control_stall.is_some() || m.peer_silent.is_some() {
        return None;
    }
    let own = |m: &Measured| Measured {
        reverse: None,
        local: Some(local),
        ..m.clone()
    };
    Some((own(m), own(rev), local))
}

/// The server → client direction of a `--bidir` test is the slower (its throughput, else its
/// intervals' mean): the verdict's. On equal rates, or unknown, client → server.
pub(super) fn reverse_slower(forward: &Measured, reverse: &Measured) -> bool {
    let rate = |m: &Measured| {
        m.throughput.map(|b| b.0).or_else(|| {
            let v = &m.interval_bps;
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
    };
    match (rate(forward), rate(reverse)) {
        (Some(f), Some(r)) => r < f,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// The observation of one direction of a `--bidir` test: the end that sends in `flow` the
/// sender, the other the receiver (each end's `TCP_INFO` limits are its own sending streams',
/// so they belong to the direction it sends in), each with its workers of that direction
/// ([`own_workers`]).
pub(super) fn one_way(test: &TestObservation, local: End, flow: Flow) -> TestObservation {
    let local_sends = Flow::sent_by(local) == flow;
    let (mine, peers) = if local_sends {
        (Role::Sender, Role::Receiver)
    } else {
        (Role::Receiver, Role::Sender)
    };
    let mut t = test.clone();
    t.local.role = mine;
    own_workers(&mut t.local);
    if let Some(r) = &mut t.remote {
        r.role = peers;
        own_workers(r);
    }
    t
}

/// Leave out of `e`'s workers (where they ran: its app CPUs, the workers followed) those of
/// the other direction, by their threads' roles; a worker whose thread does not say stays.
/// The threads all stay: the other direction's worker is still the test's, never another task
/// on a CPU, and the rules that judge a worker's own run and wait read only those that serve
/// the end's role ([`ThreadUse::serves`]).
///
/// [`ThreadUse::serves`]: wirespeed_model::observation::ThreadUse::serves
fn own_workers(e: &mut EndObservation) {
    let others: std::collections::BTreeSet<u32> = std::iter::once(&e.total)
        .chain(&e.intervals)
        .flat_map(|i| &i.threads)
        .filter(|t| !t.serves(e.role))
        .map(|t| t.tid)
        .collect();
    if others.is_empty() {
        return;
    }
    let theirs = |w: &WorkerRun| w.tid.is_some_and(|tid| others.contains(&tid));
    for i in std::iter::once(&mut e.total).chain(&mut e.intervals) {
        i.workers.retain(|w| !theirs(w));
    }
}

/// `--bidir`: each direction judged as a test of its own (its observation by [`one_way`], its
/// sums and intervals), the slower direction the verdict and the other under `also` (and in
/// `other_direction`), each line naming its direction.
pub(super) fn bidir(
    test: &TestObservation,
    forward: &Measured,
    reverse: &Measured,
    local: End,
    th: &Thresholds,
) -> Verdict {
    let one = |flow: Flow, m: &Measured| {
        let mut v = one_direction(&one_way(test, local, flow), test, m, th);
        v.direction = Some(flow);
        v.line = format!("{}: {}", flow.words(), v.line);
        v
    };
    let c2s = one(Flow::ClientToServer, forward);
    let s2c = one(Flow::ServerToClient, reverse);
    let (mut first, other) = if reverse_slower(forward, reverse) {
        (s2c, c2s)
    } else {
        (c2s, s2c)
    };
    // the other direction's line, then its own `also` lines, each naming that direction (its
    // busy-host line names the same CPUs as this verdict's, where this one has such a line:
    // said once)
    let said_busy = first.also.iter().any(|a| a.kind == AlsoKind::HostLoad);
    let flow = other.direction;
    let words = flow.map_or("", Flow::words);
    let mut head = Also::finding(&other);
    head.kind = AlsoKind::OtherDirection;
    let others_also = other
        .also
        .iter()
        .filter(|a| !(said_busy && a.kind == AlsoKind::HostLoad))
        .map(|a| Also {
            line: format!("{words}: {}", a.line),
            direction: flow,
            ..a.clone()
        });
    let lines: Vec<Also> = std::iter::once(head).chain(others_also).collect();
    first.also.splice(0..0, lines);
    first.other_direction = Some(Box::new(other));
    first
}
