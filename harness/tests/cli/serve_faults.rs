//! Broken servers under the `sglang` and `vllm` backends: a server that
//! never becomes healthy, dies mid-run, answers garbage or stalls fails only
//! its own rows, within its timeouts, and leaves no process behind; Ctrl-C
//! stops a sweep stuck on a stalled request and reaps its server.

use crate::common::served::*;
use crate::common::*;
use std::time::{Duration, Instant};

#[test]
fn servers_that_never_get_healthy_die_answer_garbage_or_stall_fail_only_their_rows_and_leave_no_process(
) {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // One shell per server records its pid, then becomes `specula serve`; the
    // draft config's depth picks the fault: 1 never healthy, 2 exits after one
    // request, 3 answers garbage, 4 stalls, 5 works.
    let script = format!(
        "echo $$ >> pids; case {{steps}} in 1) F=--fault=never-healthy;; 2) F=--fault=exit-after=1;; 3) F=--fault=garbage;; 4) F=--fault=stall;; *) F=;; esac; \
         if [ {{steps}} = 0 ]; then exec {BIN} serve --target {{target}} --port {{port}}; fi; \
         exec {BIN} serve --target {{target}} --draft {{draft}} --steps {{steps}} --port {{port}} $F"
    );
    let spec = format!(
        r#"
name = "faults"
max_new_tokens = 6
batch_sizes = [1, 2]
warmup = 1
backend = "sglang"

[server]
command = "sh -c '{script}'"
startup_timeout_s = 3
request_timeout_s = 3

[[drafts]]
steps = [1, 2, 3, 4, 5]
{}"#,
        prompts_and_tiny_pair(2)
    );
    let t0 = Instant::now();
    let out = sweep(t.path(), "faults.toml", &spec);
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "failed points exit 1: {stderr}");
    assert!(stderr.contains("points failed: 8"), "{stderr}");
    // Bounded: 3 s of startup for the unhealthy one, 3 s per stalled request, a few s of work.
    assert!(took < Duration::from_secs(40), "took {took:?}");

    let run = t.path().join("faults");
    let runs = Csv::read(&run.join("runs.csv"));
    let kept: Vec<String> = runs.column("row_key");
    assert_eq!(
        kept,
        [
            "tiny.base.b1.builtin.t0.r0",
            "tiny.base.b2.builtin.t0.r0",
            "tiny.s5k1n6.b1.builtin.t0.r0",
            "tiny.s5k1n6.b2.builtin.t0.r0"
        ],
        "every finished row is kept, and the sweep went on past the broken servers"
    );
    assert!(runs.rows.iter().all(|r| r["lossless"] == "true"));
    let failures = Csv::read(&run.join("failures.csv")).by_key();
    let why = |k: &str| failures[&format!("tiny.{k}.builtin.t0.r0")]["error"].clone();
    assert!(
        why("s1k1n2.b1").contains("did not become healthy within 3.0 s"),
        "{}",
        why("s1k1n2.b1")
    );
    assert!(
        why("s1k1n2.b2").contains("did not become healthy"),
        "{}",
        why("s1k1n2.b2")
    );
    assert!(why("s2k1n3.b1").contains("exited"), "{}", why("s2k1n3.b1"));
    assert!(
        why("s2k1n3.b2").contains("not run: an earlier row of this server failed"),
        "{}",
        why("s2k1n3.b2")
    );
    assert!(
        why("s3k1n4.b1").starts_with("warm-up:") && why("s3k1n4.b1").contains("malformed"),
        "{}",
        why("s3k1n4.b1")
    );
    assert!(
        why("s4k1n5.b1").to_lowercase().contains("timeout")
            || why("s4k1n5.b1").contains("timed out"),
        "{}",
        why("s4k1n5.b1")
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "finished_with_failures");

    let pids: Vec<u32> = std::fs::read_to_string(t.path().join("pids"))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 6, "one server per config, baseline included");
    for pid in pids {
        assert!(!alive(pid), "server {pid} outlived the sweep");
    }
}

#[test]
fn ctrl_c_during_a_stalled_request_stops_the_sweep_keeps_finished_rows_and_reaps_the_server() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let script = format!(
        "echo $$ >> pids; if [ {{steps}} = 0 ]; then exec {BIN} serve --target {{target}} --port {{port}}; fi; \
         exec {BIN} serve --target {{target}} --draft {{draft}} --steps {{steps}} --port {{port}} --fault=stall"
    );
    let mut text = body(&format!(
        "backend = \"vllm\"\n[server]\ncommand = \"sh -c '{script}'\"\nrequest_timeout_s = 4\nstartup_timeout_s = 30\n"
    ));
    text = text.replace("batch_sizes = [1, 2]", "batch_sizes = 1");
    std::fs::write(t.path().join("cc.toml"), text).unwrap();
    let mut child = command(t.path(), &["sweep", "cc.toml", "--out", "cc", "--quiet"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids_file = t.path().join("pids");
    let count = || std::fs::read_to_string(&pids_file).map_or(0, |s| s.lines().count());
    let t0 = Instant::now();
    while count() < 2 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        count(),
        2,
        "the baseline server, then the stalling one, were started"
    );
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t1 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(15),
            "the sweep did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let runs = Csv::read(&t.path().join("cc/runs.csv"));
    assert_eq!(
        runs.column("row_key"),
        ["tiny.base.b1.builtin.t0.r0"],
        "the finished baseline row is kept"
    );
    for pid in std::fs::read_to_string(&pids_file).unwrap().lines() {
        assert!(
            !alive(pid.trim().parse().unwrap()),
            "server {pid} outlived the sweep"
        );
    }
}

#[test]
fn a_server_claiming_impossible_counters_fails_its_points_with_the_reason() {
    if !have_models() {
        return;
    }
    // The server claims a billion times the tokens it generated (fake
    // servers once gave tau 1.25e14 and 1.8e19 tok/s as results, exit 0).
    let t = tempfile::tempdir().unwrap();
    let spec = format!(
        r#"
name = "impossible"
max_new_tokens = 6
batch_sizes = 1
warmup = 0
backend = "sglang"

[server]
command = "{BIN} serve --target {{target}} --port {{port}} --fault=impossible"
speculative_args = "--draft {{draft}} --steps {{steps}}"
startup_timeout_s = 20
request_timeout_s = 20

[[drafts]]
steps = 2
{}"#,
        prompts_and_tiny_pair(2)
    );
    let out = sweep(t.path(), "impossible.toml", &spec);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "failed points exit 1: {stderr}");
    let run = t.path().join("impossible");
    let runs = std::fs::read_to_string(run.join("runs.csv")).unwrap();
    assert_eq!(
        runs.lines().count(),
        1,
        "no row is written from impossible figures: {runs}"
    );
    let failures = Csv::read(&run.join("failures.csv"));
    assert_eq!(
        failures.rows.len(),
        2,
        "the baseline and the draft row fail"
    );
    for f in &failures.rows {
        assert!(
            f["error"].contains("the server's figures are impossible")
                && f["error"].contains("output tokens for 2 requests of at most 6"),
            "{}",
            f["error"]
        );
    }
}
