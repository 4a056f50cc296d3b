//! The results each end sends after `EXCHANGE_RESULTS`, with iperf3's exact keys.
//!
//! The client sends its results first, then the server sends its own. Each end reports the
//! streams it holds, by iperf3 stream id: a sender reports bytes it sent (after omit) and its
//! retransmits; a receiver reports bytes it received and, for UDP, jitter and loss.

use serde_json::{Map, Value};

use crate::ext::{ResultsExt, EXT_KEY};
use crate::fields::{self, finite, Obj};
use crate::frame::{
    self, JsonFrame, MAX_CLIENT_RESULTS_LEN, MAX_CLIENT_RESULTS_TOKENS, MAX_JSON_TOKENS,
    MAX_RESULTS_LEN,
};
use crate::WireError;

/// Most streams one results message may list.
pub const MAX_RESULT_STREAMS: usize = 1 << 16;

/// One stream's entry in `streams`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamResult {
    /// iperf3 stream id (1, 3, 4, 5, ...).
    pub id: u32,
    /// Bytes sent (sender, after omit) or received (receiver).
    pub bytes: u64,
    /// Sender's retransmits; -1 when not known (receivers, or no TCP_INFO).
    pub retransmits: i64,
    /// UDP receiver jitter in seconds (iperf3 keeps seconds on the wire).
    pub jitter: f64,
    /// UDP receiver: datagrams lost.
    pub errors: i64,
    /// `omitted_errors` (iperf3 3.16+).
    pub omitted_errors: Option<i64>,
    /// UDP: datagrams sent (sender) or highest sequence seen (receiver).
    pub packets: i64,
    /// `omitted_packets` (iperf3 3.16+).
    pub omitted_packets: Option<i64>,
    /// Seconds, relative to this stream's start (always 0 from iperf3).
    pub start_time: Option<f64>,
    /// Seconds of the stream's measured life.
    pub end_time: Option<f64>,
}

/// One end's results.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestResults {
    /// Percent of one CPU used by the process over the test (user+system)/wall.
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1 if this end sent TCP and has retransmit counts, 0 if not, -1 if it only received.
    pub sender_has_retransmits: i64,
    /// This end's congestion control algorithm.
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamResult>,
    /// Server only, with `get_server_output` and a `-J` server: the server's whole document.
    pub server_output_json: Option<Value>,
    /// Server only, with `get_server_output` and a text server.
    pub server_output_text: Option<String>,
    /// wirespeed's extension; `Some` means the peer is wirespeed.
    pub wirespeed: Option<ResultsExt>,
}

impl TestResults {
    /// Decode a complete length-prefixed frame at the start of `buf`: a server's results,
    /// as a client reads them (up to [`MAX_RESULTS_LEN`]).
    pub fn decode_frame(buf: &[u8]) -> Result<(TestResults, usize), WireError> {
        let f = JsonFrame::new_checked(buf, MAX_RESULTS_LEN)?;
        Ok((
            TestResults::parse_capped(f.payload(), MAX_JSON_TOKENS)?,
            f.total_len(),
        ))
    }

    /// Decode a client's results, as a server reads them: capped at
    /// [`MAX_CLIENT_RESULTS_LEN`] bytes and [`MAX_CLIENT_RESULTS_TOKENS`] values, so an
    /// unauthenticated peer cannot make the server buffer or parse more than a few MiB.
    pub fn decode_client_frame(buf: &[u8]) -> Result<(TestResults, usize), WireError> {
        let f = JsonFrame::new_checked(buf, MAX_CLIENT_RESULTS_LEN)?;
        Ok((
            TestResults::parse_capped(f.payload(), MAX_CLIENT_RESULTS_TOKENS)?,
            f.total_len(),
        ))
    }

    /// Parse the JSON payload. Required keys are the ones iperf3 requires (it fails the test
    /// with "unable to receive results" without them).
    pub fn parse(json: &[u8]) -> Result<TestResults, WireError> {
        TestResults::parse_capped(json, MAX_JSON_TOKENS)
    }

    fn parse_capped(json: &[u8], max_tokens: usize) -> Result<TestResults, WireError> {
        let mut o = frame::parse_object_capped(json, max_tokens)?;
        let req_f =
            |k: &str| fields::float(&o, k)?.ok_or_else(|| WireError::MissingField(k.into()));
        let mut r = TestResults {
            cpu_util_total: req_f("cpu_util_total")?,
            cpu_util_user: req_f("cpu_util_user")?,
            cpu_util_system: req_f("cpu_util_system")?,
            sender_has_retransmits: fields::int(&o, "sender_has_retransmits", -1, 1)?
                .ok_or_else(|| WireError::MissingField("sender_has_retransmits".into()))?,
            congestion_used: fields::string(&o, "congestion_used", 256)?,
            ..TestResults::default()
        };
        let streams = match o.get("streams") {
            Some(Value::Array(a)) => a,
            Some(_) => return Err(WireError::field("streams", "expected an array")),
            None => return Err(WireError::MissingField("streams".into())),
        };
        if streams.len() > MAX_RESULT_STREAMS {
            return Err(WireError::field(
                "streams",
                format!("{} entries, more than {MAX_RESULT_STREAMS}", streams.len()),
            ));
        }
        r.streams.reserve(streams.len());
        for s in streams {
            let Value::Object(s) = s else {
                return Err(WireError::field("streams[]", "expected an object"));
            };
            r.streams.push(parse_stream(s)?);
        }
        r.server_output_json = match o.remove("server_output_json") {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v),
            Some(_) => return Err(WireError::field("server_output_json", "expected an object")),
        };
        r.server_output_text = fields::string(&o, "server_output_text", MAX_RESULTS_LEN as usize)?;
        r.wirespeed = match o.get(EXT_KEY) {
            None | Some(Value::Null) => None,
            Some(v) => Some(ResultsExt::from_value(v)?),
        };
        Ok(r)
    }

    /// The JSON object in iperf3's key order; floats are always finite.
    pub fn to_json(&self) -> Value {
        let mut j = Map::new();
        j.insert("cpu_util_total".into(), finite(self.cpu_util_total));
        j.insert("cpu_util_user".into(), finite(self.cpu_util_user));
        j.insert("cpu_util_system".into(), finite(self.cpu_util_system));
        j.insert(
            "sender_has_retransmits".into(),
            self.sender_has_retransmits.into(),
        );
        if let Some(c) = &self.congestion_used {
            j.insert("congestion_used".into(), Value::String(c.clone()));
        }
        if let Some(v) = &self.server_output_json {
            j.insert("server_output_json".into(), v.clone());
        } else if let Some(t) = &self.server_output_text {
            j.insert("server_output_text".into(), Value::String(t.clone()));
        }
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("id".into(), s.id.into());
                m.insert("bytes".into(), s.bytes.into());
                m.insert("retransmits".into(), s.retransmits.into());
                m.insert("jitter".into(), finite(s.jitter));
                m.insert("errors".into(), s.errors.into());
                m.insert(
                    "omitted_errors".into(),
                    s.omitted_errors.unwrap_or(0).into(),
                );
                m.insert("packets".into(), s.packets.into());
                m.insert(
                    "omitted_packets".into(),
                    s.omitted_packets.unwrap_or(0).into(),
                );
                m.insert("start_time".into(), finite(s.start_time.unwrap_or(0.0)));
                m.insert("end_time".into(), finite(s.end_time.unwrap_or(0.0)));
                Value::Object(m)
            })
            .collect();
        j.insert("streams".into(), Value::Array(streams));
        if let Some(e) = &self.wirespeed {
            if let Ok(v) = serde_json::to_value(e) {
                j.insert(EXT_KEY.into(), v);
            }
        }
        Value::Object(j)
    }

    /// The length-prefixed frame to send.
    pub fn encode_frame(&self) -> Result<Vec<u8>, WireError> {
        frame::encode(&self.to_json(), MAX_RESULTS_LEN)
    }

    /// The entry for stream `id`.
    pub fn stream(&self, id: u32) -> Option<&StreamResult> {
        self.streams.iter().find(|s| s.id == id)
    }
}

fn parse_stream(s: &Obj) -> Result<StreamResult, WireError> {
    let req_i = |k: &str, min: i64, max: i64| {
        fields::int(s, k, min, max)?
            .ok_or_else(|| WireError::MissingField(format!("streams[].{k}")))
    };
    Ok(StreamResult {
        id: req_i("id", 0, i64::from(i32::MAX))? as u32,
        bytes: fields::uint(s, "bytes", u64::MAX)?
            .ok_or_else(|| WireError::MissingField("streams[].bytes".into()))?,
        retransmits: req_i("retransmits", -1, i64::MAX)?,
        jitter: fields::float(s, "jitter")?
            .ok_or_else(|| WireError::MissingField("streams[].jitter".into()))?,
        errors: req_i("errors", i64::MIN + 1, i64::MAX)?,
        omitted_errors: fields::int(s, "omitted_errors", i64::MIN + 1, i64::MAX)?,
        packets: req_i("packets", i64::MIN + 1, i64::MAX)?,
        omitted_packets: fields::int(s, "omitted_packets", i64::MIN + 1, i64::MAX)?,
        start_time: fields::float(s, "start_time")?,
        end_time: fields::float(s, "end_time")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::{ResultsExt, WorkerInfo};

    /// An iperf3 3.12 server's results for a 2-stream receive test (shape captured).
    const IPERF312: &str = r#"{"cpu_util_total":2.0419,"cpu_util_user":0.1,"cpu_util_system":1.94,"sender_has_retransmits":-1,"congestion_used":"cubic","streams":[{"id":1,"bytes":3567255552,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.000157},{"id":3,"bytes":3560964096,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.000163}]}"#;

    #[test]
    fn parses_iperf3_results() {
        let r = TestResults::parse(IPERF312.as_bytes()).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams.len(), 2);
        assert_eq!(r.stream(3).unwrap().bytes, 3_560_964_096);
        assert_eq!(r.stream(1).unwrap().omitted_errors, None);
        assert!(r.wirespeed.is_none());
    }

    #[test]
    fn round_trip_with_extension() {
        let r = TestResults {
            cpu_util_total: 50.5,
            cpu_util_user: 1.5,
            cpu_util_system: 49.0,
            sender_has_retransmits: 1,
            congestion_used: Some("bbr".into()),
            streams: vec![StreamResult {
                id: 1,
                bytes: 1 << 40,
                retransmits: 3,
                jitter: 0.0,
                errors: 0,
                omitted_errors: Some(0),
                packets: 0,
                omitted_packets: Some(0),
                start_time: Some(0.0),
                end_time: Some(1.25),
            }],
            server_output_json: None,
            server_output_text: None,
            wirespeed: Some(ResultsExt {
                version: "0.1.0".into(),
                protocol: 1,
                workers: vec![WorkerInfo {
                    cpu_requested: Some(1),
                    paired: false,
                    cpus_seen: wirespeed_model::CpuSet::from_cpus([1]),
                    streams: vec![1],
                    rx_zerocopy: None,
                    wake: Some(wirespeed_model::worker::Wake::Batch),
                    tid: None,
                }],
                send_path: Some("copy".into()),
                ..ResultsExt::default()
            }),
        };
        let f = r.encode_frame().unwrap();
        let (q, n) = TestResults::decode_frame(&f).unwrap();
        assert_eq!(n, f.len());
        assert_eq!(q, r);
    }

    #[test]
    fn missing_required_keys_and_nan_are_refused() {
        assert!(matches!(
            TestResults::parse(
                br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"streams":[]}"#
            ),
            Err(WireError::MissingField(_))
        ));
        assert!(TestResults::parse(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[{"id":1}]}"#).is_err());
        assert!(TestResults::parse(br#"{"cpu_util_total":NaN,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[]}"#).is_err());
        let r = TestResults {
            cpu_util_total: f64::NAN,
            ..TestResults::default()
        };
        let s = serde_json::to_string(&r.to_json()).unwrap();
        assert!(s.contains("\"cpu_util_total\":0"), "{s}");
    }
}
