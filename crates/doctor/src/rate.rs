//! The rate a host must carry, when the link does not say: `--rate`, else the link speed, else
//! the cloud instance type DMI names (a small table of common 50–200 Gbit/s instance types),
//! else unknown, with the reason said in the report instead of a silent skip.
//!
//! Virtual NICs (ENA, virtio_net, gVNIC) often report no speed: reading `speed` fails or gives
//! -1. Their buffers still have to fit the rate the instance is sold with.

use crate::Options;
use wirespeed_host::facts::platform_paths;
use wirespeed_host::nic::NicFacts;
use wirespeed_host::HostFacts;

/// Advertised network bandwidth of common cloud instance types whose DMI `product_name` is the
/// instance type (AWS Nitro instances), in Mbit/s. The figure is the instance's "up to" rate
/// from the provider's instance-type tables; a single flow outside a placement group gets less
/// (5 Gbit/s on AWS). Providers whose DMI names only the platform ("Google Compute Engine",
/// "Virtual Machine") are not in the table: pass `--rate` there.
pub const INSTANCE_RATES: &[(&str, u64)] = &[
    ("c5n.9xlarge", 50_000),
    ("c5n.18xlarge", 100_000),
    ("c5n.metal", 100_000),
    ("c6gn.8xlarge", 50_000),
    ("c6gn.16xlarge", 100_000),
    ("c6i.32xlarge", 50_000),
    ("c6in.16xlarge", 100_000),
    ("c6in.32xlarge", 200_000),
    ("c6in.metal", 200_000),
    ("c7gn.8xlarge", 100_000),
    ("c7gn.16xlarge", 200_000),
    ("c7i.48xlarge", 50_000),
    ("hpc6a.48xlarge", 100_000),
    ("m5n.24xlarge", 100_000),
    ("m6i.32xlarge", 50_000),
    ("m6in.16xlarge", 100_000),
    ("m6in.32xlarge", 200_000),
    ("r5n.24xlarge", 100_000),
    ("r6in.32xlarge", 200_000),
];

/// The rate of an instance type from [`INSTANCE_RATES`].
pub fn instance_rate(product_name: &str) -> Option<u64> {
    let p = product_name.trim();
    INSTANCE_RATES
        .iter()
        .find(|(name, _)| *name == p)
        .map(|(_, r)| *r)
}

/// Where the rate a check sizes for comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// `--rate`.
    Requested(u64),
    /// The link's `speed`.
    Link(u64),
    /// The instance type DMI names.
    Instance { mbps: u64, product: String },
}

impl Basis {
    pub fn mbps(&self) -> u64 {
        match self {
            Basis::Requested(m) | Basis::Link(m) => *m,
            Basis::Instance { mbps, .. } => *mbps,
        }
    }

    /// What the rate is, for evidence (`rate`, `link speed`, `instance type rate`).
    pub fn what(&self) -> &'static str {
        match self {
            Basis::Requested(_) => "wanted rate",
            Basis::Link(_) => "link speed",
            Basis::Instance { .. } => "instance type's advertised rate",
        }
    }

    /// The value as evidence shows it.
    pub fn value(&self) -> String {
        match self {
            Basis::Instance { mbps, product } => {
                format!("{} ({product})", wirespeed_model::units::speed_mbps(*mbps))
            }
            b => wirespeed_model::units::speed_mbps(b.mbps()),
        }
    }

    /// The one rule, for doctor and tune alike: the rate asked for (Mbit/s), else the link's
    /// speed, else the instance type's advertised rate (its product name and rate).
    pub fn choose(
        requested: Option<u64>,
        link: Option<u64>,
        instance: Option<(&str, u64)>,
    ) -> Option<Basis> {
        match (requested, link, instance) {
            (Some(r), _, _) => Some(Basis::Requested(r)),
            (None, Some(s), _) => Some(Basis::Link(s)),
            (None, None, Some((product, mbps))) => Some(Basis::Instance {
                mbps,
                product: product.to_string(),
            }),
            _ => None,
        }
    }

    /// The rate and where it came from in the words every command uses
    /// ([`wirespeed_model::units::Rate::from_source`]): `40 Gbit/s (--rate)`,
    /// `100 Gbit/s (link speed)`, `100 Gbit/s (instance type c5n.18xlarge: no link speed)`.
    pub fn words(&self) -> String {
        let whence = self.whence();
        match wirespeed_model::units::Rate::from_mbps(self.mbps()) {
            Some(r) => r.from_source(&whence),
            None => format!(
                "{} ({whence})",
                wirespeed_model::units::speed_mbps(self.mbps())
            ),
        }
    }

    /// Where it came from, in words: `--rate`, `link speed`, `instance type c5n.18xlarge: no
    /// link speed`.
    pub fn whence(&self) -> String {
        match self {
            Basis::Requested(_) => "--rate".to_string(),
            Basis::Link(_) => "link speed".to_string(),
            Basis::Instance { product, .. } => format!("instance type {product}: no link speed"),
        }
    }

    /// Where it came from.
    pub fn source(&self, nic: &NicFacts) -> String {
        match self {
            Basis::Requested(_) => "--rate".into(),
            Basis::Link(_) => format!("{}/speed", nic.sysfs),
            Basis::Instance { .. } => format!(
                "{} (table of instance types in docs/doctor.md)",
                platform_paths::PRODUCT_NAME
            ),
        }
    }
}

/// The rate to size for on `nic`, or why there is none.
pub fn basis(facts: &HostFacts, nic: &NicFacts, opts: &Options) -> Result<Basis, String> {
    basis_for(facts, nic, opts.rate_mbps)
}

/// [`basis`] for the rate asked for (`requested`, Mbit/s).
pub fn basis_for(
    facts: &HostFacts,
    nic: &NicFacts,
    requested: Option<u64>,
) -> Result<Basis, String> {
    let product = facts.platform.product_name.as_deref();
    let instance = product.and_then(|p| instance_rate(p).map(|m| (p.trim(), m)));
    if let Some(b) = Basis::choose(requested, nic.speed_mbps, instance) {
        return Ok(b);
    }
    let why = if !nic.is_up() && nic.operstate.is_some() {
        "the link is down"
    } else {
        "the driver reports no link speed"
    };
    Err(match product {
        Some(p) => format!(
            "{}: {why} and the instance type {p:?} is not in doctor's table; pass --rate (e.g. --rate 50G) for the checks that size buffers and queues",
            nic.name
        ),
        None => format!(
            "{}: {why} and DMI names no instance type; pass --rate (e.g. --rate 50G) for the checks that size buffers and queues",
            nic.name
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_the_rate_and_one_sentence() {
        let b = Basis::choose(Some(40_000), Some(100_000), Some(("c5n.18xlarge", 100_000)));
        assert_eq!(b, Some(Basis::Requested(40_000)));
        assert_eq!(b.unwrap().words(), "40 Gbit/s (--rate)");
        let b = Basis::choose(None, Some(100_000), Some(("c5n.18xlarge", 100_000))).unwrap();
        assert_eq!(b.words(), "100 Gbit/s (link speed)");
        let b = Basis::choose(None, None, Some(("c5n.18xlarge", 100_000))).unwrap();
        assert_eq!(
            b.words(),
            "100 Gbit/s (instance type c5n.18xlarge: no link speed)"
        );
        assert_eq!(Basis::choose(None, None, None), None);
    }

    #[test]
    fn instance_types() {
        assert_eq!(instance_rate("c5n.18xlarge\n"), Some(100_000));
        assert_eq!(instance_rate("c6in.32xlarge"), Some(200_000));
        assert_eq!(instance_rate("t3.micro"), None);
        assert_eq!(instance_rate("Google Compute Engine"), None);
        for (name, r) in INSTANCE_RATES {
            assert!((50_000..=200_000).contains(r), "{name}");
        }
    }
}
