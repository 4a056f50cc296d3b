//! The rules of the verdict, one unit each (or a few related ones together): each has its
//! name, the ids its findings have and a check over the one [`Context`]; none looks at
//! another's findings. Which finding leads is decided after all have run, by
//! [`wirespeed_model::precedence`]'s table.

pub(crate) mod bond;
pub(crate) mod cpu;
pub(crate) mod ending;
pub(crate) mod path;
pub(crate) mod rates;
pub(crate) mod setup;
pub(crate) mod tcp;
pub(crate) mod udp;

use super::finding::Rule;

#[cfg(doc)]
use super::context::Context;

/// Every rule. Their order matters only between findings of one row with equal strength.
pub(crate) const RULES: &[Rule] = &[
    ending::FOREIGN,
    ending::STALL,
    ending::SILENT,
    rates::LINE_RATE,
    bond::BOND_MEMBER,
    setup::PMTU,
    setup::MTU_MISMATCH,
    setup::QUOTA,
    udp::UDP_LOSS,
    rates::AT_TARGET,
    path::PATH,
    setup::SAME_HOST,
    tcp::WINDOW,
    tcp::SNDBUF,
    path::LOSS,
    cpu::SATURATED,
    cpu::CONTENDED,
    cpu::STEAL,
];
