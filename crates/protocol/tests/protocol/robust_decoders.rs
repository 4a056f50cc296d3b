//! Every decoder of peer input, fed thousands of pseudo-random and mutated inputs from a fixed
//! seed: none may panic, and none may allocate much more than the bytes it was given (a frame
//! announcing 2 GiB must not make anyone reserve 2 GiB).
//!
//! This is the stable-toolchain companion of the cargo-fuzz targets in `fuzz/`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use wirespeed_protocol::server_error::{self, ServerErrorBody};
use wirespeed_protocol::udp::{self, DatagramHeader};
use wirespeed_protocol::{
    frame, ClientSession, Cookie, ParamsExt, ResultsExt, ServerSession, State, StreamResult,
    TestParams, TestResults, Timeouts, WorkerInfo,
};

/// Counts the live bytes this thread holds and their peak.
struct Tracking;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    let _ = LIVE.try_with(|l| {
        let v = l.get() + delta;
        l.set(v);
        let _ = PEAK.try_with(|p| {
            if v > p.get() {
                p.set(v)
            }
        });
    });
}

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// Peak extra live bytes while `f` runs.
fn peak_of(f: impl FnOnce()) -> isize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    f();
    PEAK.with(Cell::get) - base
}

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let mut p = TestParams::new_tcp(10, 4);
    p.len = Some(131_072);
    p.window = Some(1 << 20);
    p.congestion = Some("cubic".into());
    p.client_version = Some("3.12".into());
    p.wirespeed = Some(ParamsExt {
        version: "0.1.0".into(),
        server_cpus: Some(wirespeed_model::CpuSet::from_cpus([0, 1, 2])),
        observe: true,
        ..ParamsExt::default()
    });
    let r = TestResults {
        cpu_util_total: 12.5,
        cpu_util_user: 0.5,
        cpu_util_system: 12.0,
        sender_has_retransmits: 1,
        congestion_used: Some("cubic".into()),
        streams: (0..4)
            .map(|i| StreamResult {
                id: wirespeed_protocol::stream_id(i),
                bytes: 123_456_789,
                retransmits: 2,
                jitter: 0.001,
                errors: 1,
                packets: 10,
                start_time: Some(0.0),
                end_time: Some(10.0),
                ..StreamResult::default()
            })
            .collect(),
        wirespeed: Some(ResultsExt {
            version: "0.1.0".into(),
            workers: vec![WorkerInfo {
                cpu_requested: Some(1),
                paired: false,
                cpus_seen: wirespeed_model::CpuSet::from_cpus([1]),
                streams: vec![1, 3],
                rx_zerocopy: None,
                wake: Some(wirespeed_model::worker::Wake::Batch),
                tid: None,
            }],
            ..ResultsExt::default()
        }),
        ..TestResults::default()
    };
    let mut udp16 = [0u8; 16];
    DatagramHeader {
        sec: 1,
        usec: 2,
        seq: 3,
    }
    .emit(&mut udp16, true)
    .unwrap();
    let mut se = vec![State::ServerError.to_byte()];
    se.extend_from_slice(
        &ServerErrorBody {
            i_errno: 6,
            errno: server_error::DETAIL_MAGIC,
        }
        .emit(),
    );
    se.extend_from_slice(&server_error::encode_detail("max 8 streams"));
    vec![
        p.encode_frame().unwrap(),
        r.encode_frame().unwrap(),
        Cookie::from_entropy(&[3u8; 36]).as_bytes().to_vec(),
        se,
        udp16.to_vec(),
        udp::CONNECT_MSG.to_vec(),
        vec![9, 10, 1, 2, 13, 14],
        br#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#.to_vec(),
        vec![0x7f, 0xff, 0xff, 0xff, b'{'],
        vec![0x00, 0x00, 0x10, 0x00],
        wirespeed_protocol::LiveInterval {
            seq: 1,
            start: 0.0,
            end: 1.0,
            head: None,
            observation: Some(Default::default()),
        }
        .encode()
        .unwrap(),
        udp::connect_msg_with_token(&Cookie::from_entropy(&[5u8; 36])).to_vec(),
    ]
}

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(v.len() + 1);
                let n = rng.below(16);
                let extra = rng.bytes(n);
                v.splice(i..i, extra);
            }
            3 if !v.is_empty() => {
                let cut = rng.below(v.len());
                v.truncate(cut);
            }
            4 if v.len() >= 4 => {
                // Tamper with a length prefix.
                let len = match rng.below(4) {
                    0 => u32::MAX,
                    1 => 0,
                    2 => rng.next() as u32,
                    _ => (v.len() as u32)
                        .wrapping_sub(4)
                        .wrapping_add(rng.below(3) as u32),
                };
                v[..4].copy_from_slice(&len.to_be_bytes());
            }
            5 if !v.is_empty() => {
                let i = rng.below(v.len());
                let j = rng.below(v.len());
                let (a, b) = (i.min(j), i.max(j));
                let dup = v[a..b].to_vec();
                v.splice(b..b, dup);
            }
            _ => {
                let interesting = [
                    0u8, 0xff, 0xfe, b'{', b'}', b'"', b'[', b'9', b'-', b'e', 4, 13,
                ];
                let i = rng.below(v.len() + 1);
                v.insert(i, interesting[rng.below(interesting.len())]);
            }
        }
    }
    v
}

/// Every decoder, and both session machines with the input split at a random point.
fn decode_everything(rng: &mut Rng, input: &[u8]) {
    for &b in input.iter().take(64) {
        let _ = State::from_byte(b);
    }
    let _ = Cookie::parse(input);
    let _ = frame::JsonFrame::new_checked(input, frame::MAX_PARAMS_LEN);
    let _ = TestParams::decode_frame(input);
    let _ = TestParams::parse(input);
    let _ = TestResults::decode_frame(input);
    let _ = TestResults::parse(input);
    let _ = ServerErrorBody::parse(input);
    let _ = server_error::decode_detail(input);
    let _ = udp::check_connect_msg(input);
    let _ = udp::parse_connect(input);
    let _ = udp::check_connect_reply(input);
    let _ = DatagramHeader::parse(input, false);
    let _ = DatagramHeader::parse(input, true);
    let _ = TestResults::decode_client_frame(input);
    let _ = wirespeed_protocol::LiveInterval::decode(input);
    let _ = frame::prescan(input, frame::MAX_JSON_DEPTH, frame::MAX_JSON_TOKENS);
    if let Ok(text) = std::str::from_utf8(input) {
        let _ = wirespeed_protocol::auth::AuthorizedUsers::parse(text);
        let _ = wirespeed_protocol::auth::public_key_from_pem(text);
    }

    let t0 = Duration::ZERO;
    let cut = rng.below(input.len() + 1);
    let mut s = ServerSession::new(t0, Cookie::from_entropy(&[1; 36]), Timeouts::default());
    s.handle_input(t0, &input[..cut]);
    s.handle_input(t0, &input[cut..]);
    while let Some(ev) = s.poll_event() {
        if matches!(ev, wirespeed_protocol::ServerEvent::Params(_)) {
            let _ = s.accept(t0);
            let _ = s.streams_ready(t0);
        }
    }
    s.handle_eof(t0);
    let _ = s.take_transmit();

    let mut c = ClientSession::new(
        t0,
        Cookie::from_entropy(&[2; 36]),
        TestParams::new_tcp(1, 1),
        Timeouts::default(),
    );
    c.handle_input(t0, &input[..cut]);
    c.handle_input(t0, &input[cut..]);
    while c.poll_event().is_some() {}
    let _ = c.end_test(t0);
    c.handle_eof(t0);
    let _ = c.take_transmit();
}

#[test]
fn decoders_survive_random_and_mutated_input_with_bounded_memory() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let seeds = seeds();
    let mut worst_ratio = 0.0f64;
    let mut inputs = 0usize;
    for round in 0..6000 {
        let input = match round % 3 {
            0 => {
                let n = rng.below(300);
                rng.bytes(n)
            }
            _ => {
                let base = &seeds[rng.below(seeds.len())];
                mutate(&mut rng, base)
            }
        };
        let mut split_rng = Rng(rng.next() | 1);
        let peak = peak_of(|| decode_everything(&mut split_rng, &input));
        // Generous but finite: parsed JSON costs a few dozen bytes per input byte; a length
        // prefix alone must never be trusted.
        let bound = 96 * input.len() as isize + 256 * 1024;
        assert!(
            peak <= bound,
            "input of {} bytes peaked at {peak} bytes: {input:02x?}",
            input.len()
        );
        worst_ratio = worst_ratio.max(peak as f64 / (input.len().max(1)) as f64);
        inputs += 1;
    }
    // Large hostile inputs: long strings, deep nesting, many keys, a frame at the cap.
    let big: Vec<Vec<u8>> = vec![
        {
            let body = format!("{{\"title\":\"{}\"}}", "x".repeat(60_000));
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(body.as_bytes());
            f
        },
        "[".repeat(70_000).into_bytes(),
        {
            let mut s = String::from("{");
            for i in 0..5000 {
                s.push_str(&format!("\"k{i}\":{i},"));
            }
            s.push_str("\"tcp\":true}");
            s.into_bytes()
        },
        {
            let mut f = frame::MAX_PARAMS_LEN.to_be_bytes().to_vec();
            f.extend(std::iter::repeat_n(b' ', 1000));
            f
        },
    ];
    for input in &big {
        let peak = peak_of(|| decode_everything(&mut rng, input));
        assert!(
            peak <= 96 * input.len() as isize + 256 * 1024,
            "big input peaked at {peak}"
        );
        inputs += 1;
    }
    eprintln!("{inputs} inputs decoded; worst peak/input ratio {worst_ratio:.0}");
}

#[test]
fn valid_seeds_still_decode() {
    // The mutation test is only meaningful if the seeds themselves are accepted.
    let s = seeds();
    assert!(TestParams::decode_frame(&s[0]).is_ok());
    assert!(TestResults::decode_frame(&s[1]).is_ok());
    assert!(Cookie::parse(&s[2]).is_ok());
    assert!(TestParams::parse(&s[7]).is_ok());
}
