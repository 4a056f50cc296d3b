//! A bond that hashes flows onto its members: a rate held at one member's speed is that
//! member's line, the per-flow (or, with a `layer2` policy, per-host-pair) limit of the bond.

use wirespeed_model::observation::IfaceStack;
use wirespeed_model::{Bound, Rank, VerdictId};

use super::super::context::Context;
use super::super::evidence;
use super::super::finding::{Finding, Out, Rule};
use super::super::words::end_of;
use wirespeed_model::observation::BitsPerSecond;

pub(crate) const BOND_MEMBER: Rule = Rule {
    name: "at one bond member's speed",
    ids: &[VerdictId::BondMemberLimited],
    check: bond_member,
};

/// How near one member's speed a rate must be to be held at it (%): a member's line, less the
/// headers and the gaps a real link leaves (the line-rate rule's 95, less a margin).
const AT_MEMBER: f64 = 85.0;

/// `bond-member-limited`: an end's interface is (or sits on) a bond whose mode hashes flows
/// onto members (802.3ad, balance-xor), its members up at known speeds, one member slower than
/// the bond, and the rate at ≥ 85 % of one member's speed (and not above it by more than the
/// margin: more than one member carried it then). As strong as the share of the member reached.
fn bond_member(cx: &Context) -> Vec<Out> {
    let Some(bps) = cx.m.throughput.filter(|b| b.0 > 0.0) else {
        return Vec::new();
    };
    let streams = cx
        .test
        .ends()
        .flat_map(|e| e.total.workers.iter().map(|w| w.streams.len()))
        .max()
        .unwrap_or(1)
        .max(1);
    for e in cx.test.ends() {
        let Some(stack) = e.iface_stack.as_ref() else {
            continue;
        };
        let (Some(bond), Some(one), Some(all)) = (
            stack.bond.as_ref(),
            stack.one_member_ceiling_mbps(),
            stack.bond_speed_mbps(),
        ) else {
            continue;
        };
        let one_bps = one as f64 * 1e6;
        if !bond.hashes()
            || one >= all
            || bps.0 < one_bps * AT_MEMBER / 100.0
            || bps.0 > one_bps * 1.02
        {
            continue;
        }
        let who = end_of(e, e.role.receives());
        let fix = fix_words(stack, streams);
        return vec![Out::Finding(
            Finding::new(
                VerdictId::BondMemberLimited,
                Some(who),
                format!(
                    "bond-member-limited: {bps} is one member's line ({} of {}'s {}, {} up, mode {}, xmit_hash_policy {}) at the {who}: the bond hashes each {} onto one member — {fix}",
                    BitsPerSecond(one_bps),
                    bond.name,
                    BitsPerSecond(all as f64 * 1e6),
                    stack.bond_members_up().len(),
                    bond.mode.as_deref().unwrap_or("?"),
                    bond.xmit_hash_policy.as_deref().unwrap_or("?"),
                    if bond.per_host_pair() {
                        "pair of hosts"
                    } else {
                        "flow"
                    },
                ),
                Rank::BondMember,
                Bound::Binding,
                bps.0 / one_bps,
            )
            .reads(&[
                "receiver throughput",
                "the bond's mode and xmit_hash_policy (/sys/class/net/BOND/bonding)",
                "each member's speed and state",
                "the test's streams",
            ])
            .agreed(evidence::rates(&cx.m, &|x| {
                x * 100.0 >= one_bps * AT_MEMBER
            })),
        )];
    }
    Vec::new()
}

/// What to do: a per-host-pair policy puts every flow between two hosts on one member
/// (`layer3+4` spreads them, with several streams); with `layer3+4` one stream is one member.
fn fix_words(stack: &IfaceStack, streams: usize) -> String {
    let bond = stack.bond.as_ref().map_or("BOND", |b| b.name.as_str());
    let per_pair = stack.bond.as_ref().is_some_and(|b| b.per_host_pair());
    match (per_pair, streams) {
        (true, _) => format!(
            "set xmit_hash_policy to layer3+4 (wirespeed tune --iface {bond}) and run several streams (-P 4), or one member's speed is this host pair's ceiling"
        ),
        (false, 1) => "run several streams (-P 4): one flow is one member's".to_string(),
        (false, _) => format!(
            "{streams} streams hashed onto one member (their ports collided, or the peer's bond chose): more streams (-P 8), or one member's speed is the ceiling"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::observation::{StackBond, StackMember};

    fn stack(policy: &str, speeds: &[u64]) -> IfaceStack {
        IfaceStack {
            iface: "bond0".into(),
            layers: vec!["bond".into()],
            bond: Some(StackBond {
                name: "bond0".into(),
                mode: Some("802.3ad".into()),
                xmit_hash_policy: Some(policy.into()),
            }),
            members: speeds
                .iter()
                .enumerate()
                .map(|(i, s)| StackMember {
                    name: format!("ens1f{i}np{i}"),
                    speed_mbps: Some(*s),
                    up: true,
                    nic: true,
                    numa_node: Some(0),
                    irqs: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn the_fix_follows_the_policy_and_the_streams() {
        let l2 = stack("layer2", &[100_000, 100_000]);
        assert!(fix_words(&l2, 4).contains("layer3+4"));
        let l34 = stack("layer3+4", &[100_000, 100_000]);
        assert!(fix_words(&l34, 1).contains("-P 4"));
        assert!(fix_words(&l34, 8).contains("8 streams hashed onto one member"));
    }
}
