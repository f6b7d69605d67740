//! Clients of the serve attack tests (`serve_attacks.rs`): a JSON POST
//! through an ordinary client, short and long generations, and the server's
//! own counters read from `/metrics`.

use super::raw_http::*;
use super::served::Serving;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Status and body of a JSON POST through an ordinary client (status 0:
/// the connection failed, with the error as the body).
pub fn post(server: &Serving, path: &str, body: &Value) -> (u16, String) {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .new_agent();
    match agent
        .post(format!("{}{path}", server.url))
        .send(body.to_string())
    {
        Ok(mut r) => (r.status().as_u16(), r.body_mut().read_to_string().unwrap()),
        // A refused connection may be closed before the request is written.
        Err(e) => (0, e.to_string()),
    }
}

/// A short greedy request, timed.
pub fn quick_generate(server: &Serving) -> (u16, Duration) {
    let t0 = Instant::now();
    let body =
        json!({"text": "def f(x):", "sampling_params": {"max_new_tokens": 4, "temperature": 0}});
    (post(server, "/generate", &body).0, t0.elapsed())
}

/// A long generation's body (1000 tokens past EOS: seconds of work).
pub fn long_body(stream: bool) -> Vec<u8> {
    json!({"text": "hi", "stream": stream,
           "sampling_params": {"max_new_tokens": 1000, "temperature": 0, "ignore_eos": true}})
    .to_string()
    .into_bytes()
}

/// Sends a long generation on a new connection and leaves it open.
pub fn start_long(port: u16, stream: bool) -> std::net::TcpStream {
    let body = long_body(stream);
    // Generous: on a loaded 2-core CI runner one long request took over 30 s.
    let mut s = connect(port, Duration::from_secs(300));
    let head = post_head("/generate", &format!("Content-Length: {}\r\n", body.len()));
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    s
}

/// The server's count of finished requests (`vllm:request_success_total`).
pub fn finished_requests(server: &Serving) -> f64 {
    let text = ureq::get(format!("{}/metrics", server.url))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("vllm:request_success_total"))
        .unwrap();
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The server's count of open connections (the asking one included), asked
/// on the keep-alive connection `s`, which stays open.
pub fn open_connections(s: &mut std::net::TcpStream) -> u64 {
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let (head_end, length) = loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed the metrics connection");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_string())
                })
                .expect("a Content-Length")
                .parse::<usize>()
                .unwrap();
            break (end + 4, length);
        }
    };
    while got.len() < head_end + length {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed the metrics connection");
        got.extend_from_slice(&buf[..n]);
    }
    let body = String::from_utf8_lossy(&got[head_end..]).into_owned();
    body.lines()
        .find_map(|l| l.strip_prefix("specula_open_connections "))
        .expect("a specula_open_connections line")
        .parse()
        .unwrap()
}

/// Asks on `s` until the server counts `n` open connections (20 s at most).
pub fn wait_for_open_connections(s: &mut std::net::TcpStream, n: u64) {
    let t0 = Instant::now();
    loop {
        let open = open_connections(s);
        if open == n {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the server counts {open} open connections, not {n}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
