//! Requests as an attacker writes them: raw bytes on a loopback socket,
//! and the status of whatever comes back.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A connection to the server on `port`, reads timing out after `timeout`.
pub fn connect(port: u16, timeout: Duration) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    s
}

/// The head of a POST of `path` with `headers` (each ending in CRLF).
pub fn post_head(path: &str, headers: &str) -> String {
    format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n")
}

/// Everything the server sends on `s` until it closes or stops for the read timeout.
pub fn read_answer(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Writes `bytes` (stopping quietly if the server closes first) and reads the answer.
pub fn exchange(port: u16, bytes: &[u8], timeout: Duration) -> String {
    let mut s = connect(port, timeout);
    let _ = s.write_all(bytes);
    read_answer(&mut s)
}

/// The status code of a raw HTTP answer (0 when there is none).
pub fn status_of(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}
