//! RSA keys and a users file made as iperf3's documentation makes them (`openssl genrsa`,
//! `openssl rsa -pubout`; the users file in iperf3's format with mario/rossi). One file for two
//! test binaries: this crate's and the binary's (`crates/cli/tests/cli/auth.rs` includes it by
//! path). The caller checks that openssl is installed first.

use std::path::PathBuf;
use std::process::Command;

use wirespeed_protocol::auth::users_line;

/// The key files, removed when this is dropped.
pub struct Keys {
    _dir: tempfile::TempDir,
    pub private: PathBuf,
    pub public: PathBuf,
    /// The public half of a second key pair: a key the server does not hold.
    pub other_public: PathBuf,
    pub users: PathBuf,
}

fn openssl(args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A key pair, the public half of another, and a users file with mario/rossi.
pub fn keys() -> Keys {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = |n: &str| dir.path().join(n).to_str().expect("utf-8").to_string();
    for (private, public) in [
        ("private.pem", "public.pem"),
        ("other.pem", "other_public.pem"),
    ] {
        openssl(&["genrsa", "-out", &p(private), "2048"]);
        openssl(&["rsa", "-in", &p(private), "-pubout", "-out", &p(public)]);
    }
    std::fs::write(
        p("users.csv"),
        format!("# iperf3 users\n{}\n", users_line("mario", "rossi")),
    )
    .expect("users file");
    Keys {
        private: p("private.pem").into(),
        public: p("public.pem").into(),
        other_public: p("other_public.pem").into(),
        users: p("users.csv").into(),
        _dir: dir,
    }
}
