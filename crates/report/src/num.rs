//! Number writing for the JSON model.
//!
//! iperf3 (through cJSON) prints a double whose value is integral without a
//! fraction (`0`, not `0.0`), and JSON has no NaN or infinities. These
//! serializers do the same: integral finite values become JSON integers,
//! other finite values are written as the shortest round-tripping float,
//! and a non-finite value — which the builder never produces — is written
//! as `0` so the document always stays valid JSON.

use serde::Serializer;

/// Largest magnitude below which every integral f64 is exactly an i64.
const EXACT_INT: f64 = 9_007_199_254_740_992.0; // 2^53

/// Replace NaN and infinities by 0.0.
pub fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// Serialize an `f64` the way iperf3 prints it (see module docs).
pub fn f64<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    let v = finite(*v);
    if v.fract() == 0.0 && v.abs() < EXACT_INT {
        // Exact: |v| < 2^53 and integral.
        s.serialize_i64(v as i64)
    } else {
        s.serialize_f64(v)
    }
}

/// Serialize an `Option<f64>`; `None` as `null` (fields using this also skip `None`).
pub fn opt_f64<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => f64(x, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize)]
    struct T {
        #[serde(serialize_with = "super::f64")]
        v: f64,
    }

    fn ser(v: f64) -> String {
        serde_json::to_string(&T { v }).expect("serialize")
    }

    #[test]
    fn integral_values_print_without_fraction() {
        assert_eq!(ser(0.0), r#"{"v":0}"#);
        assert_eq!(ser(-0.0), r#"{"v":0}"#);
        assert_eq!(ser(1048576.0), r#"{"v":1048576}"#);
        assert_eq!(ser(-3.0), r#"{"v":-3}"#);
    }

    #[test]
    fn fractions_round_trip() {
        assert_eq!(ser(23356643367.040882), r#"{"v":23356643367.040882}"#);
        assert_eq!(ser(0.0040732421875), r#"{"v":0.0040732421875}"#);
        // Beyond 2^53 integral values stay floats (no silent truncation).
        assert_eq!(ser(1e300), r#"{"v":1e+300}"#);
    }

    #[test]
    fn non_finite_becomes_zero() {
        assert_eq!(ser(f64::NAN), r#"{"v":0}"#);
        assert_eq!(ser(f64::INFINITY), r#"{"v":0}"#);
        assert_eq!(ser(f64::NEG_INFINITY), r#"{"v":0}"#);
    }
}
