//! Typed reads of JSON object members, with cJSON's number semantics and strict types.
//!
//! iperf3 encodes every number as a JSON number (a C double); it reads integers through
//! `valueint`, i.e. truncated toward zero. wirespeed does the same, but a wrong type, a
//! non-finite value or one outside the key's range is an error naming the key.

use serde_json::{Map, Value};

use crate::frame::kind_of;
use crate::WireError;

pub(crate) type Obj = Map<String, Value>;

/// An integer in `min..=max`, or `None` when the key is absent or `null`.
pub(crate) fn int(o: &Obj, key: &str, min: i64, max: i64) -> Result<Option<i64>, WireError> {
    let Some(v) = o.get(key) else { return Ok(None) };
    let n = match v {
        Value::Null => return Ok(None),
        Value::Number(n) => n,
        other => {
            return Err(WireError::field(
                key,
                format!("expected a number, got {}", kind_of(other)),
            ))
        }
    };
    let i = if let Some(i) = n.as_i64() {
        i
    } else if let Some(u) = n.as_u64() {
        // iperf3's cJSON prints negative integers as their 64-bit unsigned pattern
        // (-1 arrives as 18446744073709551615): read them back as signed.
        u as i64
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        if !f.is_finite() || f >= 9.2e18 || f <= -9.2e18 {
            return Err(WireError::field(
                key,
                format!("{n} is not a usable integer"),
            ));
        }
        f.trunc() as i64
    };
    if i < min || i > max {
        return Err(WireError::field(
            key,
            format!("{i} is out of range {min}..={max}"),
        ));
    }
    Ok(Some(i))
}

/// A non-negative integer up to `max`.
pub(crate) fn uint(o: &Obj, key: &str, max: u64) -> Result<Option<u64>, WireError> {
    let max_i = i64::try_from(max).unwrap_or(i64::MAX);
    Ok(int(o, key, 0, max_i)?.map(|i| i as u64))
}

/// A finite float (`None` when absent or `null`).
pub(crate) fn float(o: &Obj, key: &str) -> Result<Option<f64>, WireError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f)),
            _ => Err(WireError::field(key, format!("{n} is not finite"))),
        },
        Some(other) => Err(WireError::field(
            key,
            format!("expected a number, got {}", kind_of(other)),
        )),
    }
}

/// A flag in iperf3's style: present and `true` (or a non-zero number) means set.
pub(crate) fn flag(o: &Obj, key: &str) -> Result<bool, WireError> {
    match o.get(key) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(Value::Number(n)) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        Some(other) => Err(WireError::field(
            key,
            format!("expected true or a number, got {}", kind_of(other)),
        )),
    }
}

/// A string up to `max_len` bytes.
pub(crate) fn string(o: &Obj, key: &str, max_len: usize) -> Result<Option<String>, WireError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= max_len => Ok(Some(s.clone())),
        Some(Value::String(s)) => Err(WireError::field(
            key,
            format!("{} bytes, more than {max_len}", s.len()),
        )),
        Some(other) => Err(WireError::field(
            key,
            format!("expected a string, got {}", kind_of(other)),
        )),
    }
}

/// Insert a float that is always finite (JSON has no NaN): non-finite becomes 0.
pub(crate) fn finite(f: f64) -> Value {
    let f = if f.is_finite() { f } else { 0.0 };
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::from(0), Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Obj {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn numbers_follow_cjson_truncation_and_ranges() {
        let o = obj(
            json!({"a": 10, "b": 2.9, "c": -1, "d": 1e300, "e": "7", "f": null, "g": 18446744073709551615u64}),
        );
        assert_eq!(int(&o, "a", 0, 100).unwrap(), Some(10));
        assert_eq!(int(&o, "b", 0, 100).unwrap(), Some(2));
        assert!(uint(&o, "c", 100).is_err());
        assert!(int(&o, "d", 0, i64::MAX).is_err());
        assert!(int(&o, "e", 0, 100).is_err());
        assert_eq!(int(&o, "f", 0, 100).unwrap(), None);
        assert_eq!(int(&o, "missing", 0, 100).unwrap(), None);
        // iperf3 writes -1 as its unsigned 64-bit pattern.
        assert_eq!(int(&o, "g", -1, 1).unwrap(), Some(-1));
        assert!(uint(&o, "g", u64::MAX).is_err());
    }

    #[test]
    fn flags_are_presence_like_iperf3() {
        let o = obj(json!({"t": true, "f": false, "one": 1, "zero": 0, "s": "yes"}));
        assert!(flag(&o, "t").unwrap());
        assert!(!flag(&o, "f").unwrap());
        assert!(flag(&o, "one").unwrap());
        assert!(!flag(&o, "zero").unwrap());
        assert!(!flag(&o, "absent").unwrap());
        assert!(flag(&o, "s").is_err());
    }

    #[test]
    fn finite_never_emits_nan() {
        assert_eq!(finite(f64::NAN), json!(0));
        assert_eq!(finite(f64::INFINITY), json!(0));
        assert_eq!(finite(3.0), json!(3));
        assert_eq!(finite(0.25), json!(0.25));
    }
}
