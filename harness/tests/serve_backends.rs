//! The `sglang` and `vllm` sweep backends, end to end against `specula
//! serve` processes that the sweep starts from its command template (the
//! test binary's own `specula serve`), on loopback, with the committed
//! tiny-llama pair: the served rows give the in-process engine's tau, and
//! broken servers fail only their own rows, within their timeouts, leaving no
//! process behind.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn models() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tiny-llama"))
}

const BIN: &str = env!("CARGO_BIN_EXE_specula");

/// A spec on tiny-llama: baseline + two chains and a tree, batch 1 and 2, 3 prompts, 10 tokens.
fn body(backend_and_server: &str) -> String {
    let m = models();
    format!(
        r#"
name = "served"
max_new_tokens = 10
batch_sizes = [1, 2]
warmup = 0
{backend_and_server}

[[drafts]]
steps = [1, 3]

[[drafts]]
steps = 2
topk = 2
num_draft_tokens = 4

[[prompt_sets]]
sample = 3

[[models]]
name = "tiny"
target = "{}"
draft = "{}"
chat_template = "none"
"#,
        m.display(),
        m.join("eagle3").display()
    )
}

fn sweep(dir: &Path, name: &str, text: &str) -> std::process::Output {
    std::fs::write(dir.join(name), text).unwrap();
    specula_in(
        dir,
        &[
            "sweep",
            name,
            "--out",
            name.trim_end_matches(".toml"),
            "--quiet",
        ],
    )
}

type Rows = BTreeMap<String, BTreeMap<String, String>>;
type Positions = BTreeMap<(String, String), String>;

/// runs.csv rows by key, and positions.csv rates by (key, position).
fn read(run: &Path) -> (Rows, Positions) {
    let positions = Csv::read(&run.join("positions.csv"))
        .rows
        .into_iter()
        .map(|r| {
            (
                (r["row_key"].clone(), r["position"].clone()),
                r["acceptance_rate"].clone(),
            )
        })
        .collect();
    (Csv::read(&run.join("runs.csv")).by_key(), positions)
}

fn served_equals_engine(backend: &str) {
    if !models().join("config.json").exists() {
        eprintln!("SKIPPED: models/tiny-llama is not in this checkout");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    ok(&sweep(t.path(), "engine.toml", &body("")));
    let server = format!(
        "backend = \"{backend}\"\n[server]\ncommand = \"{BIN} serve --target {{target}} --port {{port}} --served-model-name tiny\"\n\
         speculative_args = \"--draft {{draft}} --steps {{steps}} --topk {{topk}} --num-draft-tokens {{num_draft_tokens}}\"\n\
         model = \"tiny\"\nstartup_timeout_s = 60\nrequest_timeout_s = 60\n"
    );
    let out = sweep(t.path(), "served.toml", &body(&server));
    ok(&out);
    let (engine, engine_pos) = read(&t.path().join("engine"));
    let (served, served_pos) = read(&t.path().join("served"));
    assert_eq!(engine.len(), 8, "baseline + 3 configs at 2 batch sizes");
    assert_eq!(
        served.keys().collect::<Vec<_>>(),
        engine.keys().collect::<Vec<_>>()
    );
    for (key, e) in &engine {
        let s = &served[key];
        assert_eq!(s["backend"], backend);
        assert!(s["device"].starts_with("http://127.0.0.1:"), "{s:?}");
        for col in [
            "tau",
            "accept_rate",
            "verify_steps",
            "output_tokens",
            "lossless",
            "aux_layers_resolved",
            "steps",
            "topk",
            "num_draft_tokens",
        ] {
            assert_eq!(
                s[col], e[col],
                "{key}: column {col} differs between {backend} and the engine"
            );
        }
        assert!(
            !s["ttft_ms_p50"].is_empty() && !s["tpot_ms_p50"].is_empty(),
            "{s:?}"
        );
    }
    assert!(
        engine
            .values()
            .any(|r| r["steps"] != "0" && r["tau"].parse::<f64>().unwrap() > 1.5),
        "the draft is accepted"
    );
    assert_eq!(
        served_pos, engine_pos,
        "per-position acceptance is the same"
    );
    // Served rows have the client-side spans, and no kernel spans.
    let kernels = Csv::read(&t.path().join("served/kernels.csv"));
    let spans: std::collections::BTreeSet<String> = kernels.column("span").into_iter().collect();
    assert_eq!(
        spans,
        ["e2e", "tpot", "ttft"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    let counts = histogram_counts(&t.path().join("served"));
    assert_eq!(
        counts[&("tiny.base.b1.builtin.t0.r0".to_string(), "e2e".to_string())],
        3,
        "one e2e sample per request"
    );
}

#[test]
fn an_sglang_sweep_against_specula_serve_gives_the_in_process_engine_tau() {
    served_equals_engine("sglang");
}

#[test]
fn a_vllm_sweep_against_specula_serve_gives_the_in_process_engine_tau() {
    served_equals_engine("vllm");
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.split(") ").nth(1).unwrap_or("").starts_with('Z'))
        .unwrap_or(false)
}

#[test]
fn servers_that_never_get_healthy_die_answer_garbage_or_stall_fail_only_their_rows_and_leave_no_process(
) {
    if !models().join("config.json").exists() {
        eprintln!("SKIPPED: models/tiny-llama is not in this checkout");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let m = models();
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
warmup = 0
backend = "sglang"

[server]
command = "sh -c '{script}'"
startup_timeout_s = 3
request_timeout_s = 3

[[drafts]]
steps = [1, 2, 3, 4, 5]

[[prompt_sets]]
sample = 2

[[models]]
name = "tiny"
target = "{}"
draft = "{}"
chat_template = "none"
"#,
        m.display(),
        m.join("eagle3").display()
    );
    let t0 = Instant::now();
    let out = sweep(t.path(), "faults.toml", &spec);
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "failed points exit 1: {stderr}");
    assert!(stderr.contains("8 points failed"), "{stderr}");
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
        why("s3k1n4.b1").contains("malformed"),
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
fn a_sweep_attaches_to_a_running_server_for_its_one_config() {
    if !models().join("config.json").exists() {
        eprintln!("SKIPPED: models/tiny-llama is not in this checkout");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let m = models();
    let mut server = command(
        t.path(),
        &[
            "serve",
            "--target",
            m.to_str().unwrap(),
            "--draft",
            m.join("eagle3").to_str().unwrap(),
            "--steps",
            "3",
            "--port",
            &port.to_string(),
        ],
    )
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let mut text = body(&format!(
        "backend = \"sglang\"\n[server]\nurl = \"http://127.0.0.1:{port}\"\n"
    ));
    text = text.replace("steps = [1, 3]", "steps = 3").replace(
        "[[drafts]]\nsteps = 2\ntopk = 2\nnum_draft_tokens = 4\n",
        "",
    );
    let t0 = Instant::now();
    let mut out = sweep(t.path(), "attach.toml", &text);
    while !out.status.success() && t0.elapsed() < Duration::from_secs(20) {
        // The server may still be loading: try again into a fresh folder.
        std::thread::sleep(Duration::from_millis(300));
        let _ = std::fs::remove_dir_all(t.path().join("attach"));
        out = sweep(t.path(), "attach.toml", &text);
    }
    let _ = server.kill();
    let _ = server.wait();
    ok(&out);
    let runs = Csv::read(&t.path().join("attach/runs.csv"));
    assert_eq!(
        runs.column("row_key"),
        [
            "tiny.s3k1n4.b1.builtin.t0.r0",
            "tiny.s3k1n4.b2.builtin.t0.r0"
        ]
    );
    assert!(runs
        .rows
        .iter()
        .all(|r| r["backend"] == "sglang" && r["tau"].parse::<f64>().unwrap() > 1.0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("baseline rows not run"));
}

#[test]
fn ctrl_c_during_a_stalled_request_stops_the_sweep_keeps_finished_rows_and_reaps_the_server() {
    if !models().join("config.json").exists() {
        eprintln!("SKIPPED: models/tiny-llama is not in this checkout");
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
fn a_served_backend_without_a_server_table_or_with_a_bad_one_is_unusable_input() {
    let t = workspace();
    for (text, want) in [
        (
            "backend = \"sglang\"\n",
            "backend `sglang` needs a [server] table",
        ),
        (
            "backend = \"vllm\"\n[server]\nurl = \"http://127.0.0.1:1\"\ncommand = \"x\"\n",
            "not both",
        ),
        (
            "backend = \"sglang\"\n[server]\ncommand = \"x 'unclosed\"\n",
            "unclosed single quote",
        ),
        (
            "backend = \"sglang\"\n[server]\ncommand = \"x\"\nrequest_timeout_s = 0\n",
            "request_timeout_s",
        ),
        ("backend = \"tgi\"\n", "unknown variant `tgi`"),
        (
            "[server]\ncommand = \"x\"\n",
            "the engine backend runs in process",
        ),
    ] {
        let path = spec(t.path(), "bad.toml", text);
        let out = specula_in(t.path(), &["sweep", path.to_str().unwrap(), "--dry-run"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains("bad.toml:") && stderr.contains(want),
            "{text}: {stderr}"
        );
    }
}
