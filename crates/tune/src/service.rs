//! systemd service state through `systemctl` (live host only).

use std::process::{Command, Stdio};

/// Run `systemctl ARGS`; `Ok(true)` for exit status 0.
fn systemctl(args: &[&str]) -> std::io::Result<bool> {
    Ok(Command::new("systemctl")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?
        .success())
}

/// Whether the unit is active (running).
pub fn is_active(unit: &str) -> std::io::Result<bool> {
    systemctl(&["is-active", "--quiet", unit])
}

/// Whether the unit is enabled at boot.
pub fn is_enabled(unit: &str) -> std::io::Result<bool> {
    systemctl(&["is-enabled", "--quiet", unit])
}

/// `systemctl VERB UNIT`, with an error that names both when it fails.
pub fn act(verb: &str, unit: &str) -> Result<(), String> {
    match systemctl(&[verb, unit]) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("systemctl {verb} {unit} failed")),
        Err(e) => Err(format!("systemctl {verb} {unit}: {e}")),
    }
}
