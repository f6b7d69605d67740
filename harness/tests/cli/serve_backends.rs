//! The `sglang` and `vllm` sweep backends, end to end against `specula
//! serve` processes that the sweep starts from its command template (the
//! test binary's own `specula serve`), on loopback, with the committed
//! tiny-llama pair: the served rows give the in-process engine's tau; a
//! sweep attaches to a running server; bad `[server]` tables are refused.

use crate::common::served::*;
use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;

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
    if !have_models() {
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

#[test]
fn a_sweep_attaches_to_a_running_server_for_its_one_config() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "3", &[]);
    let mut text = body(&format!(
        "backend = \"sglang\"\n[server]\nurl = \"{}\"\n",
        server.url
    ));
    text = text.replace("steps = [1, 3]", "steps = 3").replace(
        "[[drafts]]\nsteps = 2\ntopk = 2\nnum_draft_tokens = 4\n",
        "",
    );
    let out = sweep(t.path(), "attach.toml", &text);
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
fn a_model_that_is_not_on_this_machine_is_named_in_requests_and_prompted_as_text() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "2", &["--served-model-name", "org/remote-70b"]);
    let text = format!(
        "name = \"remote\"\nmax_new_tokens = 8\nbackend = \"vllm\"\n[server]\nurl = \"{}\"\n\
         [[drafts]]\nsteps = 2\n[[prompt_sets]]\nsample = 2\n\
         [[models]]\ntarget = \"org/remote-70b\"\ndraft = \"org/remote-70b-eagle3\"\n",
        server.url
    );
    ok(&sweep(t.path(), "remote.toml", &text));
    let runs = Csv::read(&t.path().join("remote/runs.csv"));
    assert_eq!(runs.rows.len(), 1);
    let r = &runs.rows[0];
    assert_eq!(r["target"], "org/remote-70b");
    assert_eq!(r["dtype"], "", "unknown without the model's files");
    assert_eq!(r["aux_layers_resolved"], "");
    assert!(r["tau"].parse::<f64>().unwrap() > 1.0, "{r:?}");
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

#[test]
fn specula_serve_batches_concurrent_requests_and_answers_each_as_if_alone() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "3", &[]);
    let ask = |text: &str| -> serde_json::Value {
        let body = serde_json::json!({
            "text": text,
            "sampling_params": {"max_new_tokens": 24, "temperature": 0, "ignore_eos": true},
        });
        let answer = ureq::post(format!("{}/generate", server.url))
            .send(body.to_string())
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    let prompts = [
        "def add(a, b):",
        "Question: 3 + 4 =",
        "import os\n",
        "The cat",
    ];
    let alone: Vec<serde_json::Value> = prompts.iter().map(|p| ask(p)).collect();
    let together: Vec<serde_json::Value> = std::thread::scope(|s| {
        let handles: Vec<_> = prompts.iter().map(|p| s.spawn(move || ask(p))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (a, b) in alone.iter().zip(&together) {
        assert_eq!(
            a["output_ids"], b["output_ids"],
            "batched output equals the lone one"
        );
        assert_eq!(
            a["meta_info"]["spec_verify_ct"],
            b["meta_info"]["spec_verify_ct"]
        );
    }
    let info: serde_json::Value = serde_json::from_str(
        &ureq::get(format!("{}/get_server_info", server.url))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap(),
    )
    .unwrap();
    assert!(
        info["specula_largest_batch"].as_u64().unwrap() >= 2,
        "requests waiting together are generated together: {info}"
    );
}

#[test]
fn fields_the_server_cannot_honour_are_400s_and_it_keeps_serving() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let server = Serving::tiny(t.path(), "2", &[]);
    let status = |path: &str, body: serde_json::Value| -> u16 {
        match ureq::post(format!("{}{path}", server.url)).send(body.to_string()) {
            Ok(r) => r.status().as_u16(),
            Err(ureq::Error::StatusCode(code)) => code,
            Err(e) => panic!("{path}: {e}"),
        }
    };
    use serde_json::json;
    // Each of these was once reinterpreted or accepted (issue 20).
    for (path, body) in [
        ("/generate", json!({"input_ids": [4_294_967_301u64]})),
        (
            "/generate",
            json!({"text": "hi", "sampling_params": {"temperature": "0"}}),
        ),
        (
            "/generate",
            json!({"text": "hi", "sampling_params": {"top_p": 5}}),
        ),
        (
            "/generate",
            json!({"text": "hi", "sampling_params": {"max_new_tokens": 1_000_000_000_000u64, "ignore_eos": true}}),
        ),
        ("/v1/completions", json!({"prompt": [4_294_967_301u64]})),
        (
            "/v1/completions",
            json!({"prompt": "hi", "temperature": "0"}),
        ),
        (
            "/v1/completions",
            json!({"prompt": "hi", "max_tokens": 5000}),
        ),
    ] {
        assert_eq!(status(path, body.clone()), 400, "{path} {body}");
    }
    let ok = json!({"text": "hi", "sampling_params": {"max_new_tokens": 3, "temperature": 0}});
    assert_eq!(status("/generate", ok), 200, "the server still serves");
}
