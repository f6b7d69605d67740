//! The served client on its async stack against `specula serve`: SGLang's
//! OpenAI-compatible endpoint is driven (acceptance from
//! `sglext.spec_tokens_details`), open-loop requests leave at their
//! scheduled times, and streamed answers carry one event per verify step,
//! with the server's own clock of those steps to set the client's gaps beside.

use crate::common::served::*;
use crate::common::*;
use std::collections::BTreeMap;

/// A served spec on tiny-llama: one chain of 3; `server` is added to the [server] table.
fn spec(backend: &str, server: &str, extra: &str) -> String {
    format!(
        "name = \"streams\"\nmax_new_tokens = 12\nwarmup = 0\nbackend = \"{backend}\"\n{extra}\n\
[server]\ncommand = \"{BIN} serve --target {{target}} --port {{port}} --served-model-name tiny\"\n\
speculative_args = \"--draft {{draft}} --steps {{steps}} --num-draft-tokens {{num_draft_tokens}}\"\n\
model = \"tiny\"\nstartup_timeout_s = 60\nrequest_timeout_s = 60\n{server}\n\n[[drafts]]\nsteps = 3\n{}",
        prompts_and_tiny_pair(3)
    )
}

fn num(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{s:?} is not a number"))
}

type Lines = Vec<BTreeMap<String, String>>;

fn run(
    dir: &std::path::Path,
    name: &str,
    text: &str,
) -> (BTreeMap<String, BTreeMap<String, String>>, Lines) {
    ok(&sweep(dir, &format!("{name}.toml"), text));
    let run = dir.join(name);
    (
        Csv::read(&run.join("runs.csv")).by_key(),
        Csv::read(&run.join("requests.csv")).rows,
    )
}

const KEY: &str = "tiny.s3k1n4.b1.builtin.t0.r0";

#[test]
fn an_sglang_sweep_on_the_openai_endpoint_reads_sglext_and_matches_generate() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (generate, _) = run(t.path(), "generate", &spec("sglang", "", ""));
    for stream in ["true", "false"] {
        let server = format!("endpoint = \"openai\"\nstream = {stream}");
        let name = format!("openai-{stream}");
        let (openai, requests) = run(t.path(), &name, &spec("sglang", &server, ""));
        for col in [
            "tau",
            "accept_rate",
            "verify_steps",
            "output_tokens",
            "lossless",
        ] {
            assert_eq!(
                openai[KEY][col], generate[KEY][col],
                "{col} (stream {stream})"
            );
        }
        let mine: Vec<_> = requests.iter().filter(|r| r["row_key"] == KEY).collect();
        assert_eq!(mine.len(), 3);
        for r in &mine {
            assert_eq!(r["field_form"], "current", "{r:?}");
            assert_eq!(r["reached_per_position"].split(';').count(), 3, "{r:?}");
            assert!(num(&r["verify_steps"]) > 0.0);
        }
    }
}

#[test]
fn the_openai_endpoint_is_refused_for_vllm_which_has_no_other() {
    let t = tempfile::tempdir().unwrap();
    let out = sweep(
        t.path(),
        "bad.toml",
        &spec("vllm", "endpoint = \"openai\"", ""),
    );
    assert_bad_input(&out, &["endpoint", "vllm"]);
}

#[test]
fn open_loop_requests_leave_at_their_seeded_poisson_times_and_the_lag_is_recorded() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let load = "batch_sizes = [4]\n[load]\nrequest_rates = [4]\narrival = \"poisson\"\nnum_requests = 8\nseed = 5";
    let (_, first) = run(t.path(), "a", &spec("vllm", "", load));
    let (_, second) = run(t.path(), "b", &spec("vllm", "", load));
    let key = "tiny.s3k1n4.b4-rr4.builtin.t0.r0";
    let times = |lines: &Lines| -> Vec<(f64, f64)> {
        lines
            .iter()
            .filter(|r| r["row_key"] == key)
            .map(|r| (num(&r["scheduled_at_s"]), num(&r["sent_at_s"])))
            .collect()
    };
    let (a, b) = (times(&first), times(&second));
    assert_eq!(a.len(), 8);
    let scheduled = |v: &[(f64, f64)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(
        scheduled(&a),
        scheduled(&b),
        "the schedule is the seed's, not the run's"
    );
    assert!(scheduled(&a).windows(2).all(|w| w[1] > w[0]), "{a:?}");
    for (at, sent) in a.iter().chain(&b) {
        // Never early; late only by a wake-up or a full concurrency bound.
        assert!(sent >= at, "sent {sent} before its time {at}");
    }
    let closed = first
        .iter()
        .find(|r| r["row_key"].ends_with(".b1.builtin.t0.r0"));
    if let Some(r) = closed {
        assert_eq!(
            r["scheduled_at_s"], "",
            "a closed-loop request has no schedule"
        );
    }
}

#[test]
fn a_streamed_answer_has_one_event_per_verify_step_so_itl_is_the_servers_step_time() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    for backend in ["sglang", "vllm"] {
        let mut text = spec(backend, "", "");
        if backend == "vllm" {
            text = text.replace(
                "--served-model-name tiny",
                "--served-model-name tiny --per-request-spec-decode-metrics summary",
            );
        }
        let (_, requests) = run(t.path(), backend, &text);
        let mine: Vec<_> = requests.iter().filter(|r| r["row_key"] == KEY).collect();
        assert_eq!(mine.len(), 3);
        for r in mine {
            let gaps: Vec<f64> = r["itl_ms"].split(';').map(num).collect();
            let steps = num(&r["verify_steps"]) as usize;
            // One event for the prefill's token, then one per verify step
            // (vLLM's events carry text pieces: a step whose tokens end
            // mid-character sends its piece with the next).
            if backend == "sglang" {
                assert_eq!(gaps.len(), steps, "{r:?}");
            } else {
                assert!(gaps.len() <= steps && gaps.len() * 2 >= steps, "{r:?}");
            }
            let decode_ms = num(&r["e2e_ms"]) - num(&r["ttft_ms"]);
            let streamed: f64 = gaps.iter().sum();
            assert!(
                streamed <= decode_ms + 1e-6 && streamed >= 0.7 * decode_ms,
                "the gaps cover the decode phase: {streamed} of {decode_ms} ms ({r:?})"
            );
            // The server's clock of the same gaps: one step time per gap,
            // each positive; their sum is the client's within what delivery
            // adds at the ends (the sums telescope to the first and last
            // events' delivery delays, which a 2-core CI machine running the
            // other tests beside this one stretched by 7.3 ms once: 10 ms).
            let server: Vec<f64> = r["server_step_ms"].split(';').map(num).collect();
            assert_eq!(server.len(), gaps.len(), "{r:?}");
            assert!(server.iter().all(|&g| g > 0.0), "{r:?}");
            let engine: f64 = server.iter().sum();
            assert!(
                (streamed - engine).abs() <= 10.0 + 0.1 * engine,
                "client gaps {streamed} ms against the server's steps {engine} ms ({r:?})"
            );
            let median = num(&r["itl_minus_server_ms_p50"]);
            assert!(median.abs() <= 5.0, "{r:?}");
            assert!(num(&r["itl_minus_server_ms_max"]) >= median, "{r:?}");
        }
    }
}
