//! The 37-byte test cookie: 36 characters and a NUL.
//!
//! The client makes one per test and sends it first on the control connection and first on
//! every data connection; the server matches data connections to their test by it. iperf3
//! draws the 36 characters from `a-z2-7`; wirespeed generates the same alphabet and accepts
//! any 36 printable ASCII characters (iperf3 compares with `strcmp`), but nothing else.

use crate::WireError;

/// Bytes on the wire, NUL included.
pub const COOKIE_LEN: usize = 37;

const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A validated test cookie.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie([u8; COOKIE_LEN]);

impl Cookie {
    /// Make a cookie from 36 random bytes (the caller supplies the entropy: no I/O here).
    pub fn from_entropy(entropy: &[u8; COOKIE_LEN - 1]) -> Cookie {
        let mut b = [0u8; COOKIE_LEN];
        for (o, e) in b.iter_mut().zip(entropy.iter()) {
            *o = ALPHABET[(*e as usize) % ALPHABET.len()];
        }
        Cookie(b)
    }

    /// Decode the first [`COOKIE_LEN`] bytes of `buf` (a peer's first bytes).
    pub fn parse(buf: &[u8]) -> Result<Cookie, WireError> {
        if buf.len() < COOKIE_LEN {
            return Err(WireError::Truncated {
                needed: COOKIE_LEN - buf.len(),
            });
        }
        let mut b = [0u8; COOKIE_LEN];
        b.copy_from_slice(&buf[..COOKIE_LEN]);
        if b[COOKIE_LEN - 1] != 0 {
            return Err(WireError::BadCookie("byte 37 is not NUL"));
        }
        if !b[..COOKIE_LEN - 1].iter().all(|c| c.is_ascii_graphic()) {
            return Err(WireError::BadCookie(
                "the first 36 bytes are not printable ASCII",
            ));
        }
        Ok(Cookie(b))
    }

    /// The 37 bytes to send.
    pub fn as_bytes(&self) -> &[u8; COOKIE_LEN] {
        &self.0
    }

    /// The 36 characters, without the NUL (as iperf3 prints it in `start.cookie`).
    pub fn as_str(&self) -> &str {
        // Validated (or generated) as ASCII at construction.
        std::str::from_utf8(&self.0[..COOKIE_LEN - 1]).unwrap_or("")
    }
}

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cookie({})", self.as_str())
    }
}

impl std::fmt::Display for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_cookie_is_iperf3_shaped_and_parses() {
        let mut e = [0u8; 36];
        for (i, b) in e.iter_mut().enumerate() {
            *b = (i * 37 + 11) as u8;
        }
        let c = Cookie::from_entropy(&e);
        assert_eq!(c.as_bytes().len(), 37);
        assert_eq!(c.as_bytes()[36], 0);
        assert!(c
            .as_str()
            .bytes()
            .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)));
        assert_eq!(Cookie::parse(c.as_bytes()).unwrap(), c);
    }

    #[test]
    fn rejects_short_unterminated_and_binary_cookies() {
        assert_eq!(
            Cookie::parse(b"abc"),
            Err(WireError::Truncated { needed: 34 })
        );
        let mut b = [b'a'; 37];
        assert!(matches!(Cookie::parse(&b), Err(WireError::BadCookie(_))));
        b[36] = 0;
        assert!(Cookie::parse(&b).is_ok());
        b[3] = 0;
        assert!(matches!(Cookie::parse(&b), Err(WireError::BadCookie(_))));
        b[3] = 0xff;
        assert!(matches!(Cookie::parse(&b), Err(WireError::BadCookie(_))));
        // An HTTP request line is not a cookie.
        let mut http = [0u8; 37];
        http.copy_from_slice(b"GET / HTTP/1.1\r\nHost: example\r\n\r\nxyzw");
        assert!(Cookie::parse(&http).is_err());
    }
}
