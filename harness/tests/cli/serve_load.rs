//! Served engines as users run them today, against `specula serve`:
//! open-loop load writes requests.csv and summary.json whose figures are the
//! client's own records; SGLang's and vLLM's current and older field sets
//! give the same acceptance; a server that loaded something else than the
//! spec asks fails its point with the reason.

use crate::common::served::*;
use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// A served spec on tiny-llama: one chain of 3, `server_args` added to `specula serve`.
fn spec(backend: &str, server_args: &str, extra: &str) -> String {
    format!(
        "name = \"load\"\nmax_new_tokens = 12\nwarmup = 0\nbackend = \"{backend}\"\n{extra}\n\
[server]\ncommand = \"{BIN} serve --target {{target}} --port {{port}} --served-model-name tiny {server_args}\"\n\
speculative_args = \"--draft {{draft}} --steps {{steps}} --num-draft-tokens {{num_draft_tokens}}\"\n\
model = \"tiny\"\nstartup_timeout_s = 60\nrequest_timeout_s = 60\n\n[[drafts]]\nsteps = 3\n{}",
        prompts_and_tiny_pair(3)
    )
}

fn num(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{s:?} is not a number"))
}

/// tau over a row's requests.csv lines: decode tokens / verify steps.
fn tau_of_requests(requests: &Csv, key: &str) -> f64 {
    let rows: Vec<_> = requests
        .rows
        .iter()
        .filter(|r| r["row_key"] == key)
        .collect();
    let decode: f64 = rows.iter().map(|r| num(&r["output_tokens"]) - 1.0).sum();
    let verify: f64 = rows.iter().map(|r| num(&r["verify_steps"])).sum();
    decode / verify
}

fn nearest_rank(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

fn summary(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn an_open_loop_sweep_sends_at_the_rate_and_its_summary_is_the_clients_own_records() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let load = "batch_sizes = [2]\n[load]\nrequest_rates = [8]\narrival = \"constant\"\nnum_requests = 6\ngoodput = { ttft_ms = 60000 }";
    let text = spec("vllm", "--per-request-spec-decode-metrics summary", load);
    ok(&sweep(t.path(), "open.toml", &text));
    let run = t.path().join("open");
    let runs = Csv::read(&run.join("runs.csv")).by_key();
    let requests = Csv::read(&run.join("requests.csv"));
    let key = "tiny.s3k1n4.b2-rr8.builtin.t0.r0";
    assert!(runs.contains_key(key), "{:?}", runs.keys());
    let mine: Vec<_> = requests
        .rows
        .iter()
        .filter(|r| r["row_key"] == key)
        .collect();
    assert_eq!(mine.len(), 6, "six requests, prompts cycled");
    // Constant arrivals at 8/s: the k-th request leaves at k/8 s, or later when both slots are busy.
    for (k, r) in mine.iter().enumerate() {
        assert!(num(&r["sent_at_s"]) >= k as f64 / 8.0 - 0.01, "{r:?}");
        assert_eq!(
            (r["request_rate"].as_str(), r["concurrency"].as_str()),
            ("8", "2")
        );
    }
    // tau from the requests' own figures equals tau from the server's counters.
    let counters = num(&runs[key]["tau"]);
    assert!(
        (tau_of_requests(&requests, key) - counters).abs() < 1e-9,
        "{counters}"
    );
    let s = summary(&run);
    let point = s["serving"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["row_key"] == key)
        .unwrap();
    assert_eq!(point["completed"], 6);
    assert_eq!(point["request_rate"], 8.0);
    assert_eq!(point["max_concurrency"], 2);
    let ttft: Vec<f64> = mine.iter().map(|r| num(&r["ttft_ms"])).collect();
    for (field, p) in [("p90_ttft_ms", 90.0), ("p99_ttft_ms", 99.0)] {
        assert!((point[field].as_f64().unwrap() - nearest_rank(ttft.clone(), p)).abs() < 1e-9);
    }
    let e2e: Vec<f64> = mine.iter().map(|r| num(&r["e2e_ms"])).collect();
    assert!((point["mean_e2el_ms"].as_f64().unwrap() - e2e.iter().sum::<f64>() / 6.0).abs() < 1e-9);
    assert!((point["accept_length"].as_f64().unwrap() - counters).abs() < 1e-9);
    let duration = point["duration"].as_f64().unwrap();
    assert!(
        (point["request_goodput"].as_f64().unwrap() - 6.0 / duration).abs() < 1e-9,
        "every request within the SLO"
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    assert!(
        meta["engine_version"]
            .as_str()
            .unwrap()
            .starts_with("specula "),
        "{meta}"
    );
}

#[test]
fn the_current_and_the_older_field_sets_of_both_engines_give_the_same_acceptance() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let mut taus = Vec::new();
    for (backend, args, form) in [
        ("sglang", "--field-set current", "current"),
        ("sglang", "--field-set legacy", "legacy"),
        (
            "vllm",
            "--field-set current --per-request-spec-decode-metrics summary",
            "current",
        ),
        ("vllm", "--field-set legacy", ""),
    ] {
        let name = format!("{backend}-{}.toml", args.len());
        ok(&sweep(t.path(), &name, &spec(backend, args, "")));
        let run = t.path().join(name.trim_end_matches(".toml"));
        let runs = Csv::read(&run.join("runs.csv")).by_key();
        let key = "tiny.s3k1n4.b1.builtin.t0.r0";
        taus.push((
            backend,
            args,
            runs[key]["tau"].clone(),
            runs[key]["accept_rate"].clone(),
        ));
        let requests = Csv::read(&run.join("requests.csv"));
        let mine: Vec<_> = requests
            .rows
            .iter()
            .filter(|r| r["row_key"] == key)
            .collect();
        assert_eq!(mine.len(), 3);
        assert!(
            mine.iter().all(|r| r["field_form"] == form),
            "{backend} {args}: {mine:?}"
        );
        if !form.is_empty() {
            assert!((tau_of_requests(&requests, key) - num(&runs[key]["tau"])).abs() < 1e-9);
            assert!(mine
                .iter()
                .all(|r| r["reached_per_position"].split(';').count() == 3));
        }
    }
    let first = (&taus[0].2, &taus[0].3);
    assert!(taus.iter().all(|t| (&t.2, &t.3) == first), "{taus:?}");
}

#[test]
fn a_server_that_loaded_other_knobs_than_the_spec_fails_its_point_with_the_reason() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // The template ignores {steps}: the server drafts 2 deep where the spec asks for 3.
    let text = spec("sglang", "", "").replace(
        "--steps {steps} --num-draft-tokens {num_draft_tokens}",
        "--steps 2 --num-draft-tokens 3",
    );
    let out = sweep(t.path(), "wrong.toml", &text);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let failures = Csv::read(&t.path().join("wrong/failures.csv"));
    let reason = &failures.rows[0]["error"];
    assert!(
        reason.contains("speculative_num_steps 2 (the spec asks for 3)"),
        "{reason}"
    );
}
