//! Two network namespaces joined by a veth pair: a plain `wirespeed-lab` lab (client side
//! `a`, server side `b`), removed when dropped.

use wirespeed_lab::{unique_name, Lab, Side, Spec};

pub struct VethPair {
    pub ns_a: String,
    pub ns_b: String,
    pub addr_a: String,
    pub addr_b: String,
    // dropping it removes the namespaces
    _lab: Lab,
}

impl VethPair {
    pub fn create() -> Result<VethPair, String> {
        let lab = Lab::up(Spec::new(unique_name("wsbench"))).map_err(|e| e.to_string())?;
        let addr = |side| lab.addr(side).map(|a| a.to_string()).unwrap_or_default();
        Ok(VethPair {
            ns_a: lab.netns(Side::Client),
            ns_b: lab.netns(Side::Server),
            addr_a: addr(Side::Client),
            addr_b: addr(Side::Server),
            _lab: lab,
        })
    }
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
