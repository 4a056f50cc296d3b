#![no_main]
//! The agent's `/probe` query decoder: never panics; what it accepts is within the limits.
use libfuzzer_sys::fuzz_target;
use wirespeed_agent::probe::{parse_probe, ProbeLimits};

fuzz_target!(|data: &[u8]| {
    let Ok(q) = std::str::from_utf8(data) else {
        return;
    };
    let lim = ProbeLimits::default();
    if let Ok(p) = parse_probe(q, &lim) {
        assert!(!p.host.is_empty());
        assert!((1..=lim.max_duration).contains(&p.duration));
        assert!((1..=lim.max_streams).contains(&p.streams));
    }
});
