//! `/probe`'s query decoder fed thousands of seeded pseudo-random and mutated queries: it never
//! panics, and whatever it accepts is within the limits (the stable-toolchain companion of the
//! `probe_query` cargo-fuzz target).

use wirespeed_agent::probe::{parse_probe, parse_target, percent_decode, ProbeLimits, MAX_QUERY};

/// xorshift64*: a fixed-seed generator, so every run feeds the same inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "target=",
    "duration=",
    "streams=",
    "reverse=",
    "udp_rate=",
    "bind=",
    "&",
    "=",
    "%",
    "%2",
    "%3A",
    "%ff",
    "%00",
    "+",
    "[",
    "]",
    ":",
    "::1",
    "10.0.0.1",
    "h",
    "5201",
    "0",
    "-1",
    "99999999999999999999",
    "1e9",
    "10M",
    "1G",
    "true",
    "x",
    "\u{e9}",
    "\u{0}",
    "[::1]:7",
    "%5B",
    "%5D",
];

fn check(q: &str, lim: &ProbeLimits) {
    let _ = percent_decode(q);
    let _ = parse_target(q, 5201);
    if let Ok(p) = parse_probe(q, lim) {
        assert!(q.len() <= MAX_QUERY);
        assert!(!p.host.is_empty() && p.host.len() <= 253, "{q:?}");
        assert!(p.port > 0);
        assert!((1..=lim.max_duration).contains(&p.duration), "{q:?}");
        assert!((1..=lim.max_streams).contains(&p.streams), "{q:?}");
        if let Some(r) = p.udp_rate {
            assert!(r > 0 && r <= lim.max_udp_rate);
        }
        assert!(p
            .host
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b".-_:%".contains(&c)));
    }
}

#[test]
fn random_and_assembled_queries_never_panic_and_stay_in_bounds() {
    let lim = ProbeLimits::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        // Random bytes, as the HTTP layer could hand them over (lossy UTF-8).
        let n = rng.below(64);
        let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        check(&String::from_utf8_lossy(&bytes), &lim);
        // Queries assembled from meaningful pieces.
        let k = rng.below(12);
        let q: String = (0..k).map(|_| PIECES[rng.below(PIECES.len())]).collect();
        check(&q, &lim);
    }
    check(&"target=h&".repeat(200), &lim);
    check(&"%".repeat(5000), &lim);
}
