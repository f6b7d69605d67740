//! `specula serve` under attack (issue 20, items 1-3): every attack that
//! once aborted the server, locked its engine or killed its threads is
//! answered with the status a serving engine gives, at once, and the
//! server goes on answering within a second with its memory bounded.

use crate::common::attack_client::*;
use crate::common::raw_http::*;
use crate::common::served::*;
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

#[test]
fn regression_a_declared_terabyte_body_aborted_the_server_now_413_before_reading() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "2", &[]);
    let mut attack = post_head("/generate", "Content-Length: 1000000000000\r\n").into_bytes();
    attack.extend_from_slice(br#"{"text":"hi"}"#);
    let answer = exchange(server.port(), &attack, Duration::from_secs(5));
    assert_eq!(status_of(&answer), 413, "{answer}");
    assert!(answer.contains("--max-body-bytes"), "{answer}");
    assert_eq!(quick_generate(&server).0, 200, "the server lives on");
}

#[test]
fn regression_a_50_mb_body_aborted_the_server_now_413_declared_or_chunked() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "2", &[]);
    let start_rss = server.status_field("VmRSS");
    let fifty_mb = 50 << 20;
    let chunk = vec![b'a'; 1 << 16];
    for chunked in [false, true] {
        let mut s = connect(server.port(), Duration::from_secs(10));
        let head = if chunked {
            post_head("/generate", "Transfer-Encoding: chunked\r\n")
        } else {
            post_head("/generate", &format!("Content-Length: {fifty_mb}\r\n"))
        };
        s.write_all(head.as_bytes()).unwrap();
        // The server answers and closes long before 50 MB are sent.
        for _ in 0..fifty_mb / chunk.len() {
            let sent = if chunked {
                s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                    .and_then(|_| s.write_all(&chunk))
                    .and_then(|_| s.write_all(b"\r\n"))
            } else {
                s.write_all(&chunk)
            };
            if sent.is_err() {
                break;
            }
        }
        let answer = read_answer(&mut s);
        assert_eq!(status_of(&answer), 413, "chunked {chunked}: {answer}");
    }
    assert_eq!(quick_generate(&server).0, 200);
    let rss = server.status_field("VmRSS");
    assert!(rss < 2 * start_rss, "RSS {start_rss} kB -> {rss} kB");
}

#[test]
fn regression_a_100k_token_prompt_or_max_new_tokens_of_10_to_the_12_locked_the_engine_now_400s_at_once(
) {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "2", &["--max-new-tokens", "512"]);
    let long_text = "hello world ".repeat(50_000);
    let mut attacks = vec![
        (
            "/generate",
            json!({"input_ids": vec![5; 100_000]}),
            "max_position_embeddings",
        ),
        (
            "/generate",
            json!({"text": long_text}),
            "max_position_embeddings",
        ),
        // 4 MB: refused from its length alone, never tokenized.
        (
            "/generate",
            json!({"text": "a".repeat(4_000_000)}),
            "no token of this tokenizer",
        ),
        (
            "/generate",
            json!({"text": "hi", "sampling_params": {"max_new_tokens": 1_000_000_000_000u64, "ignore_eos": true}}),
            "--max-new-tokens",
        ),
        (
            "/v1/completions",
            json!({"prompt": "hi", "max_tokens": 600}),
            "--max-new-tokens",
        ),
        (
            "/generate",
            json!({"input_ids": vec![5; 2000], "sampling_params": {"max_new_tokens": 100}}),
            "max_position_embeddings",
        ),
    ];
    let with_flag = Serving::tiny(t.path(), "2", &["--max-prompt-tokens", "16"]);
    for (path, body, why) in attacks.drain(..) {
        let t0 = Instant::now();
        let (status, answer) = post(&server, path, &body);
        assert_eq!(status, 400, "{path}: {answer}");
        assert!(answer.contains(why), "{path}: {answer}");
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "{path}: took {:?}",
            t0.elapsed()
        );
    }
    let (status, answer) = post(&with_flag, "/generate", &json!({"input_ids": vec![5; 17]}));
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("--max-prompt-tokens"), "{answer}");
    assert_eq!(quick_generate(&server).0, 200);
}

#[test]
fn regression_sixteen_stalled_bodies_hung_every_endpoint_now_408_after_the_read_timeout() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "2", &["--read-timeout-s", "1"]);
    let mut stalled: Vec<_> = (0..16)
        .map(|_| {
            let mut s = connect(server.port(), Duration::from_secs(10));
            let head = post_head("/generate", "Content-Length: 100\r\n");
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(br#"{"text":"#).unwrap();
            s
        })
        .collect();
    // A client that sends half a head and stops.
    let mut half_head = connect(server.port(), Duration::from_secs(10));
    half_head
        .write_all(b"POST /generate HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let (status, took) = quick_generate(&server);
    assert_eq!(status, 200);
    assert!(
        took < Duration::from_secs(1),
        "took {took:?} beside stalled clients"
    );
    let t0 = Instant::now();
    for s in &mut stalled {
        let answer = read_answer(s);
        assert_eq!(status_of(&answer), 408, "{answer}");
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "stalled bodies were cut off at 1 s"
    );
    let t1 = Instant::now();
    assert_eq!(
        read_answer(&mut half_head),
        "",
        "a half head gets no answer"
    );
    assert!(
        t1.elapsed() < Duration::from_secs(5),
        "a half head was closed at 1 s, not at the client's 10 s read timeout"
    );
}

#[test]
fn regression_a_client_that_disconnected_did_not_cancel_its_request_now_it_does() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // One request at a time: every queued long request would run in turn.
    let server = Serving::tiny(t.path(), "2", &["--max-batch", "1"]);
    let t0 = Instant::now();
    let mut one = start_long(server.port(), false);
    let whole = read_answer(&mut one);
    let long_took = t0.elapsed();
    assert_eq!(status_of(&whole), 200, "{whole}");
    let before = finished_requests(&server);
    // Four long requests, whole and streamed, whose clients go away.
    let gone: Vec<_> = (0..4)
        .map(|i| start_long(server.port(), i % 2 == 1))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    drop(gone);
    std::thread::sleep(Duration::from_millis(100));
    let (status, took) = quick_generate(&server);
    assert_eq!(status, 200);
    // Had the abandoned requests run, this one would wait for all four.
    assert!(
        took < long_took / 2,
        "a request after 4 abandoned ones of {long_took:?} each took {took:?}"
    );
    assert_eq!(
        finished_requests(&server),
        before + 1.0,
        "abandoned requests are not counted as finished"
    );
    // A streamed request abandoned after its first event.
    let mut s = start_long(server.port(), true);
    let mut first = [0u8; 512];
    let n = std::io::Read::read(&mut s, &mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).contains("200 OK"));
    drop(s);
    let (status, took) = quick_generate(&server);
    assert_eq!(status, 200);
    assert!(
        took < long_took / 2,
        "after an abandoned stream (a whole one takes {long_took:?}): {took:?}"
    );
}

#[test]
fn regression_panics_killed_worker_threads_for_good_now_each_costs_one_500() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    for fault in ["--fault=panic-in-parse", "--fault=panic-in-engine"] {
        let mut server = Serving::tiny(t.path(), "2", &[fault]);
        // Twice as many panics as there are threads of any kind in the server.
        let panics = 2 * server.status_field("Threads").max(16);
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let asks: Vec<_> = (0..panics)
                .map(|_| {
                    s.spawn(|| {
                        post(
                            &server,
                            "/v1/completions",
                            &json!({"prompt": "hi", "max_tokens": 3}),
                        )
                        .0
                    })
                })
                .collect();
            asks.into_iter().map(|a| a.join().unwrap()).collect()
        });
        assert!(statuses.iter().all(|&s| s == 500), "{fault}: {statuses:?}");
        assert!(server.running(), "{fault}: the server is still up");
        let (status, answer) = post(
            &server,
            "/v1/completions",
            &json!({"prompt": "hi", "max_tokens": 3}),
        );
        assert_eq!(
            status, 500,
            "{fault}: still answering, with the reason: {answer}"
        );
        assert!(answer.contains("fail"), "{answer}");
        let health = ureq::get(format!("{}/health", server.url)).call().unwrap();
        assert_eq!(health.status().as_u16(), 200);
    }
}

#[test]
fn connections_past_the_cap_are_503s_and_idle_ones_are_closed_after_the_read_timeout() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(
        t.path(),
        "2",
        &["--max-connections", "4", "--read-timeout-s", "10"],
    );
    assert_eq!(quick_generate(&server).0, 200);
    // Every place is taken by a connection of this test: first, on one kept
    // open, until the server counts it alone (the client's last request's
    // connection let go), then three idle ones beside it. Regression: a CI
    // run on a loaded machine opened the idle ones while the server still
    // held the last request's connection, refused the fourth idle one, then
    // let the old one go, and the poll below found a free place (200 where
    // 503 was due).
    let mut asking = connect(server.port(), Duration::from_secs(5));
    wait_for_open_connections(&mut asking, 1);
    let mut idle: Vec<_> = (0..3)
        .map(|_| connect(server.port(), Duration::from_secs(5)))
        .collect();
    wait_for_open_connections(&mut asking, 4);
    idle.push(asking);
    let answer = exchange(
        server.port(),
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(5),
    );
    assert_eq!(status_of(&answer), 503, "{answer}");
    assert!(answer.contains("--max-connections"), "{answer}");
    // The idle ones are closed after 10 s, and the server takes new clients.
    let t0 = Instant::now();
    while quick_generate(&server).0 != 200 {
        assert!(
            t0.elapsed() < Duration::from_secs(25),
            "idle connections were not closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut first = idle.into_iter().next().unwrap();
    assert!(
        read_answer(&mut first).is_empty(),
        "an idle connection is closed without an answer"
    );
}

#[test]
fn requests_past_the_queue_cap_are_503s() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "2", &["--max-batch", "1", "--max-queue", "1"]);
    let mut running = start_long(server.port(), false);
    std::thread::sleep(Duration::from_millis(300));
    let mut waiting = start_long(server.port(), false);
    std::thread::sleep(Duration::from_millis(100));
    let (status, answer) = post(&server, "/generate", &json!({"text": "hi"}));
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("--max-queue"), "{answer}");
    assert_eq!(status_of(&read_answer(&mut running)), 200);
    assert_eq!(status_of(&read_answer(&mut waiting)), 200);
}

#[test]
fn after_every_attack_in_turn_the_server_answers_within_a_second_and_its_memory_stays_under_twice_its_start(
) {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let mut server = Serving::tiny(t.path(), "3", &["--read-timeout-s", "2"]);
    assert_eq!(quick_generate(&server).0, 200);
    let start_rss = server.status_field("VmRSS");
    let port = server.port();
    // A declared terabyte, then a 50 MB body.
    let mut terabyte = post_head("/generate", "Content-Length: 1000000000000\r\n").into_bytes();
    terabyte.extend_from_slice(br#"{"text":"hi"}"#);
    assert_eq!(
        status_of(&exchange(port, &terabyte, Duration::from_secs(5))),
        413
    );
    let mut big = connect(port, Duration::from_secs(10));
    big.write_all(post_head("/generate", &format!("Content-Length: {}\r\n", 50 << 20)).as_bytes())
        .unwrap();
    for _ in 0..800 {
        if big.write_all(&[b'a'; 1 << 16]).is_err() {
            break;
        }
    }
    assert_eq!(status_of(&read_answer(&mut big)), 413);
    // A 100k-token prompt as ids and as text; max_new_tokens 10^12.
    for body in [
        json!({"input_ids": vec![5; 100_000]}),
        json!({"text": "hello world ".repeat(50_000)}),
        json!({"text": "hi", "sampling_params": {"max_new_tokens": 1_000_000_000_000u64, "ignore_eos": true}}),
    ] {
        assert_eq!(post(&server, "/generate", &body).0, 400);
    }
    // 16 stalled bodies, and disconnects mid-request and mid-stream.
    let stalled: Vec<_> = (0..16)
        .map(|_| {
            let mut s = connect(port, Duration::from_secs(10));
            s.write_all(post_head("/generate", "Content-Length: 100\r\n").as_bytes())
                .unwrap();
            s
        })
        .collect();
    let gone: Vec<_> = (0..8).map(|i| start_long(port, i % 2 == 0)).collect();
    std::thread::sleep(Duration::from_millis(300));
    drop(gone);
    let (status, took) = quick_generate(&server);
    assert_eq!(status, 200);
    assert!(
        took < Duration::from_secs(1),
        "took {took:?} after the attacks"
    );
    drop(stalled);
    assert!(server.running());
    let rss = server.status_field("VmRSS");
    eprintln!("RSS {start_rss} kB at start, {rss} kB after the attacks; /generate in {took:?}");
    assert!(rss < 2 * start_rss, "RSS {start_rss} kB -> {rss} kB");
}
