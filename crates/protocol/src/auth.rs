//! iperf3's RSA authentication, both ends, as pure functions: keys and the authorized-users
//! file come in as text, the clock as a number, randomness as a parameter.
//!
//! The scheme (iperf3 3.x, `iperf_auth.c`):
//! - The client writes `user: <user>\npwd:  <password>\nts:   <unix seconds>`, encrypts it
//!   with the server's RSA public key, base64-encodes it (standard alphabet, padded, one line)
//!   and sends it as the `authtoken` key of the parameters.
//! - Padding: PKCS#1 v1.5 up to iperf3 3.16; OAEP (SHA-1, MGF1-SHA-1, no label: OpenSSL's
//!   defaults) from 3.17, where `--use-pkcs1-padding` selects the old one. Debian 12's iperf3
//!   is 3.12: PKCS#1 v1.5. [`Padding`] names both; a server may try both ([`ServerAuth`]).
//! - The server decrypts, reads the three fields back as `sscanf` would, refuses a timestamp
//!   more than `--time-skew-threshold` seconds (default 10) from its clock either way, and
//!   looks for the line `<user>,<sha256 hex of "{user}password">` in the authorized-users file
//!   (lines starting with `#`, empty lines and lines without a comma are skipped).
//! - A refusal is `SERVER_ERROR` with `i_errno` 142 (`IEAUTHTEST`), which an iperf3 client
//!   prints as "test authorization failed".
//!
//! Keys: private keys in PKCS#1 (`BEGIN RSA PRIVATE KEY`, what older `openssl genrsa` and
//! `openssl rsa -traditional` write) or PKCS#8 (`BEGIN PRIVATE KEY`, OpenSSL 3's default);
//! public keys as SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`, `openssl rsa -pubout`) or PKCS#1
//! (`BEGIN RSA PUBLIC KEY`). Encrypted (passphrase) PEM files are not read: iperf3 asks for
//! an unprotected copy too.
//!
//! The RSA arithmetic is the `rsa` crate's. Its decryption is not constant-time
//! (RUSTSEC-2023-0071, "Marvin"); an attacker who can time many refusals precisely could in
//! principle learn the key. Use a key made for this server only, as iperf3's docs advise.

use base64::Engine as _;
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::rand_core::CryptoRngCore;
use rsa::traits::PublicKeyParts;
use rsa::{Oaep, Pkcs1v15Encrypt, RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256};

use crate::server_error::errno::IEAUTHTEST;

/// The operating system's random numbers, for [`encode_token`]'s `rng`.
pub use rand_core::OsRng;

/// iperf3's default `--time-skew-threshold`, seconds.
pub const DEFAULT_SKEW_THRESHOLD: u32 = 10;

/// Longest `authtoken` accepted: base64 of a 16384-bit key's ciphertext, with room.
pub const MAX_TOKEN_LEN: usize = 4096;

/// RSA padding of the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    /// OAEP with SHA-1 (iperf3 3.17+ default).
    Oaep,
    /// PKCS#1 v1.5 (iperf3 up to 3.16, and 3.17+ with `--use-pkcs1-padding`).
    Pkcs1v15,
}

/// Why a key, a token or a check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// iperf3's `IESETCLIENTAUTH` / `IESETSERVERAUTH` situations, with the reason.
    #[error("not a usable RSA {what} key: {reason}")]
    BadKey { what: &'static str, reason: String },
    /// The credentials do not fit in one RSA block of this key.
    #[error("user name and password too long for a {bits}-bit key")]
    TooLong { bits: usize },
    #[error("cannot encrypt the token: {0}")]
    Encrypt(String),
    /// A user name or password with white space cannot be sent: the server reads the fields
    /// with `sscanf("%s")`.
    #[error("user names and passwords cannot contain white space or be empty (iperf3 reads them as words)")]
    BadCredentials,
}

/// Why the server refuses a test; all are "test authorization failed" to the client, the
/// reason is for the server's log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthRefusal {
    #[error("no authtoken in the parameters")]
    NoToken,
    #[error("authtoken is not base64 or too long")]
    NotBase64,
    #[error("authtoken does not decrypt with this server's key")]
    Undecryptable,
    #[error("authtoken content is not \"user: .. pwd: .. ts: ..\"")]
    Malformed,
    /// The timestamp is more than the threshold away from the server's clock.
    #[error("user {user:?}: timestamp {ts} is {skew} s from the server's clock, more than {threshold} s")]
    Skew {
        user: String,
        ts: i64,
        skew: i64,
        threshold: u32,
    },
    #[error("user {user:?} is not in the authorized-users file, or the password is wrong")]
    Unknown { user: String },
}

impl AuthRefusal {
    /// iperf3's `i_errno` for every refusal: `IEAUTHTEST` (142).
    pub const I_ERRNO: i32 = IEAUTHTEST;

    /// iperf3's words for it, as its client prints them.
    pub const WORDS: &'static str = "test authorization failed";

    /// The authenticated user, when the token got that far (for the log line).
    pub fn user(&self) -> Option<&str> {
        match self {
            AuthRefusal::Skew { user, .. } | AuthRefusal::Unknown { user } => Some(user),
            _ => None,
        }
    }
}

/// Read an RSA public key from PEM text (SPKI or PKCS#1).
pub fn public_key_from_pem(pem: &str) -> Result<RsaPublicKey, AuthError> {
    RsaPublicKey::from_public_key_pem(pem.trim())
        .or_else(|_| RsaPublicKey::from_pkcs1_pem(pem.trim()))
        .map_err(|e| AuthError::BadKey {
            what: "public",
            reason: e.to_string(),
        })
}

/// Read an RSA private key from PEM text (PKCS#8 or PKCS#1, unencrypted).
pub fn private_key_from_pem(pem: &str) -> Result<RsaPrivateKey, AuthError> {
    if pem.contains("ENCRYPTED") || pem.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(AuthError::BadKey {
            what: "private",
            reason: "the key is protected by a passphrase; give an unprotected copy (openssl rsa -in KEY -out PLAIN)".into(),
        });
    }
    RsaPrivateKey::from_pkcs8_pem(pem.trim())
        .or_else(|_| RsaPrivateKey::from_pkcs1_pem(pem.trim()))
        .map_err(|e| AuthError::BadKey {
            what: "private",
            reason: e.to_string(),
        })
}

/// The plaintext iperf3 encrypts.
fn token_text(user: &str, password: &str, ts: i64) -> String {
    format!("user: {user}\npwd:  {password}\nts:   {ts}")
}

/// The client's `authtoken`: credentials and a Unix timestamp (seconds) encrypted with the
/// server's public key.
pub fn encode_token(
    user: &str,
    password: &str,
    ts: i64,
    key: &RsaPublicKey,
    padding: Padding,
    rng: &mut impl CryptoRngCore,
) -> Result<String, AuthError> {
    let word = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace);
    if !word(user) || !word(password) {
        return Err(AuthError::BadCredentials);
    }
    let text = token_text(user, password, ts);
    let bits = key.size() * 8;
    let max = match padding {
        Padding::Oaep => key.size().saturating_sub(2 * 20 + 2),
        Padding::Pkcs1v15 => key.size().saturating_sub(11),
    };
    if text.len() > max {
        return Err(AuthError::TooLong { bits });
    }
    let ct = match padding {
        Padding::Oaep => key.encrypt(rng, Oaep::new::<sha1::Sha1>(), text.as_bytes()),
        Padding::Pkcs1v15 => key.encrypt(rng, Pkcs1v15Encrypt, text.as_bytes()),
    }
    .map_err(|e| AuthError::Encrypt(e.to_string()))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(ct))
}

/// A client's credentials (`--username`, the password, `--rsa-public-key-path`).
#[derive(Debug, Clone)]
pub struct ClientAuth {
    pub user: String,
    pub password: String,
    pub key: RsaPublicKey,
    pub padding: Padding,
}

impl ClientAuth {
    /// Credentials from the server's public key (PEM), with OAEP padding unless `pkcs1`
    /// (`--use-pkcs1-padding`), as iperf3's client builds them.
    pub fn new(
        user: &str,
        password: String,
        key_pem: &str,
        pkcs1: bool,
    ) -> Result<Self, AuthError> {
        Ok(ClientAuth {
            user: user.to_string(),
            password,
            key: public_key_from_pem(key_pem)?,
            padding: if pkcs1 {
                Padding::Pkcs1v15
            } else {
                Padding::Oaep
            },
        })
    }

    /// A fresh token stamped `now` (Unix seconds), encrypted with the operating system's
    /// random numbers.
    pub fn token(&self, now: i64) -> Result<String, AuthError> {
        encode_token(
            &self.user,
            &self.password,
            now,
            &self.key,
            self.padding,
            &mut rand_core::OsRng,
        )
    }
}

/// What a token holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub user: String,
    pub password: String,
    /// Unix seconds, the client's clock.
    pub ts: i64,
}

/// Decrypt and read a token with the first padding in `paddings` that decrypts it.
pub fn decode_token(
    token: &str,
    key: &RsaPrivateKey,
    paddings: &[Padding],
) -> Result<Token, AuthRefusal> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(AuthRefusal::NotBase64);
    }
    let ct = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .map_err(|_| AuthRefusal::NotBase64)?;
    let mut plain = None;
    for p in paddings {
        let r = match p {
            Padding::Oaep => key.decrypt(Oaep::new::<sha1::Sha1>(), &ct),
            Padding::Pkcs1v15 => key.decrypt(Pkcs1v15Encrypt, &ct),
        };
        if let Ok(b) = r {
            plain = Some(b);
            break;
        }
    }
    let plain = plain.ok_or(AuthRefusal::Undecryptable)?;
    parse_token_text(&plain).ok_or(AuthRefusal::Malformed)
}

/// Read `user: %s\npwd:  %s\nts:   %ld` as C's `sscanf` does: white space in the format
/// matches any run of white space (or none), `%s` a run of non-white bytes.
fn parse_token_text(b: &[u8]) -> Option<Token> {
    struct Scan<'a> {
        b: &'a [u8],
        i: usize,
    }
    impl Scan<'_> {
        fn ws(&mut self) {
            while self.b.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
        }
        fn lit(&mut self, l: &[u8]) -> Option<()> {
            self.b.get(self.i..self.i + l.len()).filter(|s| *s == l)?;
            self.i += l.len();
            Some(())
        }
        fn word(&mut self) -> Option<String> {
            self.ws();
            let start = self.i;
            while self
                .b
                .get(self.i)
                .is_some_and(|c| !c.is_ascii_whitespace() && *c != 0)
            {
                self.i += 1;
            }
            (self.i > start).then(|| String::from_utf8_lossy(&self.b[start..self.i]).into_owned())
        }
    }
    let mut s = Scan { b, i: 0 };
    s.lit(b"user:")?;
    let user = s.word()?;
    s.ws();
    s.lit(b"pwd:")?;
    let password = s.word()?;
    s.ws();
    s.lit(b"ts:")?;
    let ts = s.word()?;
    // %ld stops at the first byte that is not part of a number.
    let digits: String = ts
        .chars()
        .enumerate()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))
        .map(|(_, c)| c)
        .collect();
    let ts = digits.parse().ok()?;
    Some(Token { user, password, ts })
}

/// The authorized-users file's hash of a password: SHA-256 of `{user}password`, lowercase
/// hex.
pub fn password_hash(user: &str, password: &str) -> String {
    let d = Sha256::digest(format!("{{{user}}}{password}").as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A line of the authorized-users file, as iperf3 writes it: `user,<hash>`.
pub fn users_line(user: &str, password: &str) -> String {
    format!("{user},{}", password_hash(user, password))
}

/// The authorized-users file, read as iperf3 reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizedUsers {
    entries: Vec<(String, String)>,
}

impl AuthorizedUsers {
    /// Parse the file's text: each line up to its first `\r` or `\n`; empty lines, lines
    /// starting with `#` and lines without a comma skipped; the first two comma-separated
    /// non-empty fields are the user and the hash.
    pub fn parse(text: &str) -> AuthorizedUsers {
        let mut entries = Vec::new();
        for line in text.split('\n') {
            let line = line.split('\r').next().unwrap_or("");
            if line.is_empty() || line.starts_with('#') || !line.contains(',') {
                continue;
            }
            let mut fields = line.split(',').filter(|f| !f.is_empty());
            if let (Some(u), Some(h)) = (fields.next(), fields.next()) {
                entries.push((u.to_string(), h.to_string()));
            }
        }
        AuthorizedUsers { entries }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when `user` with `password` is listed.
    pub fn allows(&self, user: &str, password: &str) -> bool {
        let want = password_hash(user, password);
        self.entries.iter().any(|(u, h)| {
            u == user && subtle::ConstantTimeEq::ct_eq(h.as_bytes(), want.as_bytes()).into()
        })
    }
}

/// A server's authentication settings (`--rsa-private-key-path`, `--authorized-users-path`,
/// `--time-skew-threshold`).
#[derive(Debug, Clone)]
pub struct ServerAuth {
    pub key: RsaPrivateKey,
    pub users: AuthorizedUsers,
    pub skew_threshold: u32,
    /// Paddings tried in order. iperf3 tries one (OAEP, or PKCS#1 v1.5 with
    /// `--use-pkcs1-padding`); trying both lets clients of every iperf3 version in.
    pub paddings: Vec<Padding>,
}

impl ServerAuth {
    /// From the two files' contents, with iperf3's default threshold and both paddings.
    pub fn new(private_key_pem: &str, users_file: &str) -> Result<ServerAuth, AuthError> {
        Ok(ServerAuth {
            key: private_key_from_pem(private_key_pem)?,
            users: AuthorizedUsers::parse(users_file),
            skew_threshold: DEFAULT_SKEW_THRESHOLD,
            paddings: vec![Padding::Oaep, Padding::Pkcs1v15],
        })
    }

    /// Check a client's `authtoken` at `now` (Unix seconds, the server's clock); the user name
    /// when the test may run.
    pub fn authorize(&self, authtoken: Option<&str>, now: i64) -> Result<String, AuthRefusal> {
        let token = authtoken.ok_or(AuthRefusal::NoToken)?;
        let t = decode_token(token, &self.key, &self.paddings)?;
        let skew = now.saturating_sub(t.ts);
        if skew.unsigned_abs() > u64::from(self.skew_threshold) {
            return Err(AuthRefusal::Skew {
                user: t.user,
                ts: t.ts,
                skew,
                threshold: self.skew_threshold,
            });
        }
        if !self.users.allows(&t.user, &t.password) {
            return Err(AuthRefusal::Unknown { user: t.user });
        }
        Ok(t.user)
    }
}

/// What the server sends on any refusal: `SERVER_ERROR` with `IEAUTHTEST`.
pub fn refusal_decline(r: &AuthRefusal) -> crate::Decline {
    crate::Decline::Error {
        i_errno: AuthRefusal::I_ERRNO,
        errno: 0,
        detail: format!("{}: {r}", AuthRefusal::WORDS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::OsRng;

    /// A small key keeps the tests fast; interop tests use `openssl genrsa 2048`.
    fn key() -> RsaPrivateKey {
        RsaPrivateKey::new(&mut OsRng, 1024).unwrap()
    }

    #[test]
    fn token_round_trips_with_both_paddings_and_reads_like_sscanf() {
        let k = key();
        let pubk = k.to_public_key();
        for p in [Padding::Oaep, Padding::Pkcs1v15] {
            let t = encode_token("mario", "rossi", 1_700_000_000, &pubk, p, &mut OsRng).unwrap();
            let back = decode_token(&t, &k, &[p]).unwrap();
            assert_eq!(back.user, "mario");
            assert_eq!(back.password, "rossi");
            assert_eq!(back.ts, 1_700_000_000);
            // The other padding alone does not decrypt it; both in a list do.
            let other = if p == Padding::Oaep {
                Padding::Pkcs1v15
            } else {
                Padding::Oaep
            };
            assert_eq!(
                decode_token(&t, &k, &[other]),
                Err(AuthRefusal::Undecryptable)
            );
            assert!(decode_token(&t, &k, &[other, p]).is_ok());
        }
        let odd = parse_token_text(b"user:a\tpwd:b  ts:-12xyz").unwrap();
        assert_eq!(
            (odd.user.as_str(), odd.password.as_str(), odd.ts),
            ("a", "b", -12)
        );
        assert!(parse_token_text(b"user: a\npwd: b\n").is_none());
        assert!(parse_token_text(b"usr: a\npwd: b\nts: 1").is_none());
        assert_eq!(
            encode_token("a b", "c", 0, &pubk, Padding::Oaep, &mut OsRng),
            Err(AuthError::BadCredentials)
        );
        let long = "p".repeat(200);
        assert_eq!(
            encode_token("u", &long, 0, &pubk, Padding::Oaep, &mut OsRng),
            Err(AuthError::TooLong { bits: 1024 })
        );
    }

    #[test]
    fn users_file_reads_like_iperf3() {
        // iperf3's docs: mario/rossi.
        assert_eq!(
            password_hash("mario", "rossi"),
            "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b"
        );
        let text = format!(
            "# comment\n\n{}\r\nnocomma\n,,{}\nbob,{},extra\n",
            users_line("mario", "rossi"),
            users_line("luigi", "verdi"),
            password_hash("bob", "pw"),
        );
        let u = AuthorizedUsers::parse(&text);
        assert_eq!(u.len(), 3);
        assert!(u.allows("mario", "rossi"));
        assert!(u.allows("luigi", "verdi"));
        assert!(u.allows("bob", "pw"));
        assert!(!u.allows("mario", "verdi"));
        assert!(!u.allows("peach", "rossi"));
    }

    #[test]
    fn server_checks_key_user_and_skew() {
        let k = key();
        let pubk = k.to_public_key();
        let auth = ServerAuth {
            key: k,
            users: AuthorizedUsers::parse(&users_line("mario", "rossi")),
            skew_threshold: 10,
            paddings: vec![Padding::Oaep, Padding::Pkcs1v15],
        };
        let now = 1_800_000_000;
        let tok = |u: &str, p: &str, ts: i64| {
            encode_token(u, p, ts, &pubk, Padding::Pkcs1v15, &mut OsRng).unwrap()
        };
        assert_eq!(
            auth.authorize(Some(&tok("mario", "rossi", now - 10)), now),
            Ok("mario".into())
        );
        assert_eq!(
            auth.authorize(Some(&tok("mario", "rossi", now + 10)), now),
            Ok("mario".into())
        );
        assert!(matches!(
            auth.authorize(Some(&tok("mario", "rossi", now - 11)), now),
            Err(AuthRefusal::Skew { skew: 11, .. })
        ));
        assert!(matches!(
            auth.authorize(Some(&tok("mario", "verdi", now)), now),
            Err(AuthRefusal::Unknown { .. })
        ));
        assert_eq!(auth.authorize(None, now), Err(AuthRefusal::NoToken));
        assert_eq!(
            auth.authorize(Some("!!!"), now),
            Err(AuthRefusal::NotBase64)
        );
        let other = key().to_public_key();
        let wrong = encode_token("mario", "rossi", now, &other, Padding::Oaep, &mut OsRng).unwrap();
        assert_eq!(
            auth.authorize(Some(&wrong), now),
            Err(AuthRefusal::Undecryptable)
        );
        match refusal_decline(&AuthRefusal::NoToken) {
            crate::Decline::Error {
                i_errno, detail, ..
            } => {
                assert_eq!(i_errno, 142);
                assert!(detail.starts_with("test authorization failed"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keys_in_every_pem_form_iperf3_accepts() {
        use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
        use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
        let k = key();
        let p8 = k.to_pkcs8_pem(LineEnding::LF).unwrap();
        let p1 = k.to_pkcs1_pem(LineEnding::LF).unwrap();
        assert_eq!(private_key_from_pem(&p8).unwrap(), k);
        assert_eq!(private_key_from_pem(&p1).unwrap(), k);
        let pubk = k.to_public_key();
        let spki = pubk.to_public_key_pem(LineEnding::LF).unwrap();
        let pk1 = pubk.to_pkcs1_pem(LineEnding::LF).unwrap();
        assert_eq!(public_key_from_pem(&spki).unwrap(), pubk);
        assert_eq!(public_key_from_pem(&pk1).unwrap(), pubk);
        assert!(public_key_from_pem("junk").is_err());
        let enc =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let e = private_key_from_pem(enc).unwrap_err().to_string();
        assert!(e.contains("passphrase"), "{e}");
    }
}
