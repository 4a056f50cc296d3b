//! `--web.config.file`: the web configuration every Prometheus exporter reads (the format of
//! Prometheus' exporter-toolkit), so one file serves the agent and the exporters beside it:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: agent.crt          # relative paths are taken from the file's own folder
//!   key_file: agent.key
//!   client_auth_type: RequireAndVerifyClientCert   # or VerifyClientCertIfGiven, NoClientCert
//!   client_ca_file: clients.crt
//!   min_version: TLS12            # TLS12 or TLS13
//! basic_auth_users:
//!   prometheus: $2y$10$...        # bcrypt hashes (htpasswd -nBC 10 prometheus)
//! http_server_config:
//!   headers:
//!     X-Frame-Options: deny
//! ```
//!
//! Reading and checking the file is here; the endpoint ([`crate::http`]) asks [`WebConfig`]
//! for its TLS acceptor, whether a request's credentials pass, and the extra headers. A key the
//! format has but wirespeed does not support (`cipher_suites`, `RequestClientCert`, TLS 1.0)
//! is refused by name when the file is read, never silently ignored.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

/// Largest web configuration file read.
const MAX_FILE: u64 = 1 << 20;
/// Credentials remembered as verified (a keyed hash of each), so a scraper's every request does
/// not pay bcrypt's cost; forgotten all at once when full.
const MAX_REMEMBERED: usize = 64;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<TlsFile>,
    http_server_config: Option<HttpFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    cert: Option<String>,
    key: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<PathBuf>,
    min_version: Option<String>,
    max_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpFile {
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The agent speaks HTTP/1.1 only; `http2: true` is refused.
    http2: Option<bool>,
}

/// Why the web configuration cannot be used; the text names the file.
#[derive(Debug, thiserror::Error)]
#[error("--web.config.file {path}: {reason}")]
pub struct WebConfigError {
    pub path: String,
    pub reason: String,
}

/// The web configuration, checked: a TLS server configuration, bcrypt users, extra headers.
pub struct WebConfig {
    tls: Option<Arc<rustls::ServerConfig>>,
    users: BTreeMap<String, String>,
    headers: Vec<(String, String)>,
    remembered: Mutex<HashSet<u64>>,
    keys: RandomState,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("headers", &self.headers)
            .finish()
    }
}

impl WebConfig {
    /// Read and check `path`: every file it names is read now, every hash parsed.
    pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
        let fail = |reason: String| WebConfigError {
            path: path.display().to_string(),
            reason,
        };
        let text = read_bounded(path).map_err(&fail)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        WebConfig::parse(&text, dir).map_err(fail)
    }

    /// The file's text, with relative paths taken from `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<WebConfig, String> {
        let file: File = if text.trim().is_empty() {
            File {
                tls_server_config: None,
                http_server_config: None,
                basic_auth_users: BTreeMap::new(),
            }
        } else {
            serde_norway::from_str(text).map_err(|e| e.to_string())?
        };
        for (user, hash) in &file.basic_auth_users {
            if user.contains(':') || user.is_empty() {
                return Err(format!(
                    "basic_auth_users: user {user:?} is empty or has a ':'"
                ));
            }
            // a hash that does not parse would refuse every request of that user
            bcrypt::verify("", hash)
                .map_err(|e| format!("basic_auth_users: {user}: not a bcrypt hash ({e})"))?;
        }
        let mut headers = Vec::new();
        if let Some(h) = &file.http_server_config {
            if h.http2 == Some(true) {
                return Err(
                    "http_server_config: http2 is not supported (the agent speaks HTTP/1.1)".into(),
                );
            }
            for (k, v) in &h.headers {
                let ok_name = !k.is_empty()
                    && k.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
                let ok_value = v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
                if !ok_name || !ok_value {
                    return Err(format!(
                        "http_server_config: header {k:?}: not a valid header"
                    ));
                }
                headers.push((k.clone(), v.clone()));
            }
        }
        let tls = file
            .tls_server_config
            .as_ref()
            .map(|t| tls_config(t, dir).map(Arc::new))
            .transpose()?;
        Ok(WebConfig {
            tls,
            users: file.basic_auth_users,
            headers,
            remembered: Mutex::new(HashSet::new()),
            keys: RandomState::new(),
        })
    }

    /// The TLS server configuration, when the file has one.
    pub fn tls(&self) -> Option<Arc<rustls::ServerConfig>> {
        self.tls.clone()
    }

    /// Whether requests must carry a user and password.
    pub fn needs_auth(&self) -> bool {
        !self.users.is_empty()
    }

    /// Extra response headers.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Whether an `Authorization` header's value was verified before (or none is needed): fast,
    /// no bcrypt, so the endpoint asks it before queueing a request for [`Self::authorized`].
    pub fn remembered(&self, authorization: Option<&[u8]>) -> bool {
        if !self.needs_auth() {
            return true;
        }
        let Some(value) = authorization else {
            return false;
        };
        let key = self.keys.hash_one(value);
        self.remembered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&key)
    }

    /// Whether an `Authorization` header's value lets the request in. Slow (bcrypt) the first
    /// time a pair of credentials is seen; an unknown user costs as much as a known one.
    pub fn authorized(&self, authorization: Option<&[u8]>) -> bool {
        if !self.needs_auth() {
            return true;
        }
        let Some(value) = authorization else {
            return false;
        };
        if self.remembered(Some(value)) {
            return true;
        }
        let key = self.keys.hash_one(value);
        let Some((user, password)) = basic_credentials(value) else {
            return false;
        };
        // an unknown user is checked against a known hash too, so the time taken does not
        // tell which users exist
        let (hash, known) = match self.users.get(&user) {
            Some(h) => (h, true),
            None => (self.users.values().next().expect("needs_auth"), false),
        };
        let ok = bcrypt::verify(&password, hash).unwrap_or(false) && known;
        if ok {
            let mut m = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
            if m.len() >= MAX_REMEMBERED {
                m.clear();
            }
            m.insert(key);
        }
        ok
    }
}

/// `Basic BASE64(user:password)` → (user, password).
fn basic_credentials(value: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(value).ok()?;
    let (scheme, b64) = text.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") || b64.len() > 4096 {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let pair = String::from_utf8(raw).ok()?;
    let (u, p) = pair.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    if !f.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("not a regular file".into());
    }
    let mut text = String::new();
    f.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE {
        return Err(format!("larger than {MAX_FILE} bytes"));
    }
    Ok(text)
}

fn tls_version(v: &str) -> Result<&'static rustls::SupportedProtocolVersion, String> {
    match v {
        "TLS12" => Ok(&rustls::version::TLS12),
        "TLS13" => Ok(&rustls::version::TLS13),
        "TLS10" | "TLS11" => Err(format!(
            "tls_server_config: {v} is not supported (TLS12 and TLS13 are)"
        )),
        _ => Err(format!(
            "tls_server_config: {v:?} is no TLS version (TLS12 or TLS13)"
        )),
    }
}

fn tls_config(t: &TlsFile, dir: &Path) -> Result<rustls::ServerConfig, String> {
    let auth = t.client_auth_type.as_deref().unwrap_or("NoClientCert");
    // Some(false): verify a certificate when one is given; Some(true): require one
    let verify_clients = match auth {
        "NoClientCert" => None,
        "VerifyClientCertIfGiven" => Some(false),
        "RequireAndVerifyClientCert" => Some(true),
        "RequestClientCert" | "RequireAnyClientCert" => {
            return Err(format!(
                "tls_server_config: client_auth_type {auth} (a certificate that is not verified) \
                 is not supported: use VerifyClientCertIfGiven or RequireAndVerifyClientCert"
            ))
        }
        other => {
            return Err(format!(
                "tls_server_config: client_auth_type {other:?} is none of NoClientCert, \
                 VerifyClientCertIfGiven, RequireAndVerifyClientCert"
            ))
        }
    };
    let min = t.min_version.as_deref().map(tls_version).transpose()?;
    let max = t.max_version.as_deref().map(tls_version).transpose()?;
    let pem =
        |inline: &Option<String>, file: &Option<PathBuf>, what: &str| -> Result<String, String> {
            match (inline, file) {
                (Some(_), Some(_)) => Err(format!(
                    "tls_server_config: both {what} and {what}_file are set"
                )),
                (Some(text), None) => Ok(text.clone()),
                (None, Some(f)) => read_bounded(&dir.join(f))
                    .map_err(|e| format!("{}: {e}", dir.join(f).display())),
                (None, None) => Err(format!("tls_server_config: {what}_file is missing")),
            }
        };
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pem(&t.cert, &t.cert_file, "cert")?.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("tls_server_config: the certificate: {e}"))?;
    if certs.is_empty() {
        return Err("tls_server_config: the certificate file holds no certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(pem(&t.key, &t.key_file, "key")?.as_bytes())
        .map_err(|e| format!("tls_server_config: the key: {e}"))?;
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        [&rustls::version::TLS12, &rustls::version::TLS13]
            .into_iter()
            .filter(|v| min.is_none_or(|m| u16::from(v.version) >= u16::from(m.version)))
            .filter(|v| max.is_none_or(|m| u16::from(v.version) <= u16::from(m.version)))
            .collect();
    if versions.is_empty() {
        return Err("tls_server_config: min_version is above max_version".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls_server_config: {e}"))?;
    let builder = match verify_clients {
        None => builder.with_no_client_auth(),
        Some(required) => {
            let Some(ca) = &t.client_ca_file else {
                return Err(format!(
                    "tls_server_config: client_auth_type {auth} needs client_ca_file"
                ));
            };
            let text = read_bounded(&dir.join(ca))
                .map_err(|e| format!("{}: {e}", dir.join(ca).display()))?;
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(text.as_bytes()) {
                let c = c.map_err(|e| format!("tls_server_config: client_ca_file: {e}"))?;
                roots
                    .add(c)
                    .map_err(|e| format!("tls_server_config: client_ca_file: {e}"))?;
            }
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = if required {
                v
            } else {
                v.allow_unauthenticated()
            };
            builder.with_client_cert_verifier(
                v.build()
                    .map_err(|e| format!("tls_server_config: client_ca_file: {e}"))?,
            )
        }
    };
    let mut cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls_server_config: the certificate and key: {e}"))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(p: &str) -> String {
        bcrypt::hash(p, 4).unwrap()
    }

    fn basic(u: &str, p: &str) -> Vec<u8> {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
        )
        .into_bytes()
    }

    #[test]
    fn an_empty_file_asks_for_nothing() {
        let w = WebConfig::parse("", Path::new(".")).unwrap();
        assert!(w.tls().is_none() && !w.needs_auth());
        assert!(w.authorized(None));
    }

    #[test]
    fn basic_auth_lets_in_the_right_password_only() {
        let text = format!("basic_auth_users:\n  prom: {}\n", hash("s3cret"));
        let w = WebConfig::parse(&text, Path::new(".")).unwrap();
        assert!(w.needs_auth());
        assert!(!w.authorized(None));
        assert!(!w.authorized(Some(&basic("prom", "wrong"))));
        assert!(!w.authorized(Some(&basic("other", "s3cret"))));
        assert!(!w.authorized(Some(b"Bearer abc")));
        assert!(!w.authorized(Some(b"Basic !!!not-base64")));
        assert!(
            !w.remembered(Some(&basic("prom", "s3cret"))),
            "not verified yet"
        );
        assert!(w.authorized(Some(&basic("prom", "s3cret"))));
        // remembered: the same header again, and still not the wrong one
        assert!(w.remembered(Some(&basic("prom", "s3cret"))));
        assert!(!w.remembered(Some(&basic("prom", "wrong"))));
        assert!(!w.remembered(None));
        assert!(w.authorized(Some(&basic("prom", "s3cret"))));
        assert!(!w.authorized(Some(&basic("prom", "wrong"))));
    }

    #[test]
    fn what_is_not_supported_is_refused_by_name() {
        let bad = [
            ("cipher_suites: []\n", "cipher_suites"),
            ("basic_auth_users:\n  a: plain\n", "not a bcrypt hash"),
            ("http_server_config:\n  http2: true\n", "http2"),
            (
                "tls_server_config:\n  cert: x\n  key: y\n  min_version: TLS10\n",
                "TLS10",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequestClientCert\n",
                "RequestClientCert",
            ),
            ("tls_server_config:\n  key_file: k\n", "cert_file is missing"),
            ("http_server_config:\n  headers:\n    \"Bad: x\": y\n", "not a valid header"),
        ];
        for (text, want) in bad {
            let e = WebConfig::parse(text, Path::new("/nonexistent")).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
