//! What `specula serve` refuses to take on, so that no client can exhaust
//! its memory or lock the engine for the others: request sizes, slow or
//! stalled connections, queue depth and generation lengths. Each is a flag
//! of `specula serve` with the default given here.

use std::time::Duration;

/// The server's limits (see each field for the answer past it).
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// Largest request body in bytes: 413 past it, from the declared
    /// `Content-Length` before any byte is read.
    pub max_body_bytes: usize,
    /// Largest request head (request line and headers) in bytes; past it
    /// the connection is answered 431 and closed.
    pub max_header_bytes: usize,
    /// Time a client has to send a request head, and the longest a
    /// keep-alive connection may sit idle; then the connection is closed.
    pub header_timeout: Duration,
    /// Time a client has to send the whole body once its head has arrived: 408 past it.
    pub body_timeout: Duration,
    /// Open connections at most; one more is answered 503 and closed.
    pub max_connections: usize,
    /// Requests waiting for the engine at most; one more is answered 503.
    pub max_queue: usize,
    /// New tokens one request may ask for at most; 400 past it.
    pub max_new_tokens: usize,
    /// Requests being parsed and tokenized at once at most (each holds its
    /// body and token ids in memory); others wait their turn.
    pub max_parsing: usize,
}

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            max_body_bytes: 4 << 20,
            max_header_bytes: 64 << 10,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: 256,
            max_queue: 256,
            max_new_tokens: 8192,
            max_parsing: 2,
        }
    }
}
