//! Two network namespaces joined by a veth pair, torn down on drop.
//! Addresses 10.213.0.1 (a, client side) and 10.213.0.2 (b, server side) exist
//! only inside these namespaces.

use std::process::Command;

pub struct VethPair {
    pub ns_a: String,
    pub ns_b: String,
    pub addr_a: String,
    pub addr_b: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl VethPair {
    pub fn create() -> Result<VethPair, String> {
        let id = std::process::id();
        let pair = VethPair {
            ns_a: format!("wsbench{id}a"),
            ns_b: format!("wsbench{id}b"),
            addr_a: "10.213.0.1".into(),
            addr_b: "10.213.0.2".into(),
        };
        // On any error below, `pair` is dropped and Drop removes what exists.
        pair.setup(id)?;
        Ok(pair)
    }

    fn setup(&self, id: u32) -> Result<(), String> {
        let pair = self;
        let (va, vb) = (format!("wsb{id}a"), format!("wsb{id}b"));
        ip(&["netns", "add", &pair.ns_a])?;
        ip(&["netns", "add", &pair.ns_b])?;
        ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb])?;
        ip(&["link", "set", &va, "netns", &pair.ns_a])?;
        ip(&["link", "set", &vb, "netns", &pair.ns_b])?;
        for (ns, dev, addr) in [
            (&pair.ns_a, &va, &pair.addr_a),
            (&pair.ns_b, &vb, &pair.addr_b),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        // Deleting a namespace destroys the veth end inside it (and so the pair).
        let _ = ip(&["netns", "del", &self.ns_a]);
        let _ = ip(&["netns", "del", &self.ns_b]);
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
