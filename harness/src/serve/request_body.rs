//! Reading a request body within the server's limits: a declared
//! `Content-Length` past the limit is refused before any byte is read (the
//! length is never allocated), an undeclared one stops at the limit, and a
//! body that stalls is cut off by the body timeout.

use super::engine::Failure;
use super::limits::ServeLimits;
use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_LENGTH;
use axum::http::HeaderMap;

/// The refusal of a body of `size` bytes (or more).
fn too_large(size: &str, limits: &ServeLimits) -> Failure {
    (
        413,
        format!(
            "a request body of {size} bytes: this server takes at most {} \
             (specula serve --max-body-bytes)",
            limits.max_body_bytes
        ),
    )
}

/// Whether a body error is the length limit (the error is the limit's own
/// type, somewhere in the chain, behind axum's wrapper).
fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.to_string().contains("length limit exceeded") {
            return true;
        }
        source = err.source();
    }
    false
}

/// The whole body of a request with `headers`, within `limits`.
pub async fn read(headers: &HeaderMap, body: Body, limits: &ServeLimits) -> Result<Bytes, Failure> {
    if let Some(declared) = headers.get(CONTENT_LENGTH) {
        let n = declared
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| (400, format!("Content-Length {declared:?} is not a number")))?;
        if n > limits.max_body_bytes as u64 {
            return Err(too_large(&n.to_string(), limits));
        }
    }
    let reading = axum::body::to_bytes(body, limits.max_body_bytes);
    match tokio::time::timeout(limits.body_timeout, reading).await {
        Err(_) => Err((
            408,
            format!(
                "the request body did not arrive within {} s",
                limits.body_timeout.as_secs_f64()
            ),
        )),
        Ok(Err(e)) if is_length_limit(&e) => Err(too_large(
            &format!("more than {}", limits.max_body_bytes),
            limits,
        )),
        Ok(Err(e)) => Err((400, format!("unreadable request body: {e}"))),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}
