//! The request fields both protocols read, read strictly: a field of the
//! wrong type or out of range is a 400 that names it, never a value
//! reinterpreted (`input_ids: [4294967301]` is not token 5; `temperature:
//! "0"` is not the default; a `top_p` the server cannot honour is refused,
//! not ignored).

use super::engine::Failure;
use serde_json::Value;

fn refuse(name: &str, what: &str, got: &Value) -> Failure {
    (400, format!("`{name}` must be {what} (got {got})"))
}

/// `body[name]` when present and not null.
pub fn present<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body.get(name).filter(|v| !v.is_null())
}

/// A list of token ids: each an integer in `0..=u32::MAX` (the vocabulary
/// bound is the engine's check).
pub fn token_ids(name: &str, list: &[Value]) -> Result<Vec<u32>, Failure> {
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| refuse(&format!("{name}[{i}]"), "a token id (0 to 4294967295)", v))
        })
        .collect()
}

/// An optional non-negative integer.
pub fn u64_field(body: &Value, name: &str) -> Result<Option<u64>, Failure> {
    present(body, name)
        .map(|v| {
            v.as_u64()
                .ok_or_else(|| refuse(name, "a non-negative integer", v))
        })
        .transpose()
}

/// An optional number.
pub fn f64_field(body: &Value, name: &str) -> Result<Option<f64>, Failure> {
    present(body, name)
        .map(|v| v.as_f64().ok_or_else(|| refuse(name, "a number", v)))
        .transpose()
}

/// An optional boolean.
pub fn bool_field(body: &Value, name: &str) -> Result<Option<bool>, Failure> {
    present(body, name)
        .map(|v| v.as_bool().ok_or_else(|| refuse(name, "true or false", v)))
        .transpose()
}

/// Refuses sampling filters this server does not apply (it samples from
/// the whole distribution): `top_p` must be 1 and `top_k` -1 or 0 when
/// given, and anything outside their ranges is named as such.
pub fn whole_distribution(body: &Value) -> Result<(), Failure> {
    if let Some(p) = f64_field(body, "top_p")? {
        if !(p > 0.0 && p <= 1.0) {
            return Err((400, format!("`top_p` must be in (0, 1] (got {p})")));
        }
        if p < 1.0 {
            return Err((
                400,
                format!(
                    "`top_p` {p}: this server samples from the whole distribution (top_p 1 only)"
                ),
            ));
        }
    }
    if let Some(v) = present(body, "top_k") {
        match v.as_i64() {
            Some(-1 | 0) => {}
            Some(k) if k > 0 => {
                return Err((400, format!("`top_k` {k}: this server samples from the whole distribution (top_k -1 or 0 only)")))
            }
            _ => return Err(refuse("top_k", "an integer, -1 or 0 here", v)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_token_id_past_u32_is_refused_not_wrapped() {
        let e = token_ids("input_ids", &[json!(7), json!(4_294_967_301u64)]).unwrap_err();
        assert_eq!(e.0, 400);
        assert!(
            e.1.contains("`input_ids[1]`") && e.1.contains("4294967301"),
            "{}",
            e.1
        );
        assert!(token_ids("input_ids", &[json!(-1)]).is_err());
        assert!(token_ids("input_ids", &[json!(1.5)]).is_err());
        assert_eq!(
            token_ids("p", &[json!(0), json!(4_294_967_295u64)]).unwrap(),
            [0, u32::MAX]
        );
    }

    #[test]
    fn a_number_given_as_a_string_is_refused_not_defaulted() {
        let e = f64_field(&json!({"temperature": "0"}), "temperature").unwrap_err();
        assert!(
            e.1.contains("`temperature` must be a number") && e.1.contains("\"0\""),
            "{}",
            e.1
        );
        assert_eq!(
            f64_field(&json!({"temperature": 0}), "temperature").unwrap(),
            Some(0.0)
        );
        assert_eq!(
            f64_field(&json!({"temperature": null}), "temperature").unwrap(),
            None
        );
        assert!(u64_field(&json!({"seed": -3}), "seed").is_err());
        assert!(bool_field(&json!({"ignore_eos": "yes"}), "ignore_eos").is_err());
    }

    #[test]
    fn sampling_filters_the_server_cannot_apply_are_refused_not_ignored() {
        for bad in [
            json!({"top_p": 5}),
            json!({"top_p": 0}),
            json!({"top_p": 0.9}),
            json!({"top_k": 40}),
            json!({"top_k": "all"}),
        ] {
            assert_eq!(whole_distribution(&bad).unwrap_err().0, 400, "{bad}");
        }
        for fine in [
            json!({}),
            json!({"top_p": 1}),
            json!({"top_k": -1}),
            json!({"top_k": 0, "top_p": null}),
        ] {
            assert!(whole_distribution(&fine).is_ok(), "{fine}");
        }
    }
}
