//! Context tiers on tiny-llama (2048 positions): tiers that fit run and are
//! shown side by side by `specula analyze`; a tier past the model's context
//! is skipped with the reason, in the output and in meta.json, never dropped;
//! with `allow_past_context` it runs, marked past the trained context in
//! meta.json, requests.csv and analyze.

use crate::common::served::*;
use crate::common::*;

fn tier_spec() -> String {
    let tiers = repo().join("datasets/context_tiers/context_tiers.jsonl");
    let m = models();
    format!(
        "name = \"tiers\"\nmax_new_tokens = 8\nwarmup = 0\nthreads = 1\n\
[[prompt_sets]]\nname = \"short\"\nsource = \"builtin\"\nsample = 2\n\
[[prompt_sets]]\nname = \"ctx256\"\nsource = \"{t}\"\ncategories = [\"ctx256\"]\n\
[[prompt_sets]]\nname = \"ctx4k\"\nsource = \"{t}\"\ncategories = [\"ctx4k\"]\n\
[[models]]\nname = \"tiny\"\ntarget = \"{}\"\ndraft = \"{}\"\nchat_template = \"none\"\n\
[[drafts]]\nsteps = 3\n",
        m.display(),
        m.join("eagle3").display(),
        t = tiers.display()
    )
}

#[test]
fn a_tier_past_the_models_context_is_skipped_with_the_reason_and_the_tiers_that_fit_are_compared() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let out = sweep(t.path(), "tiers.toml", &tier_spec());
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("skipped tiny prompt_set=ctx4k: its longest prompt is")
            && stderr.contains("max_position_embeddings of 2048"),
        "{stderr}"
    );
    let run = t.path().join("tiers");
    let keys: Vec<String> = Csv::read(&run.join("runs.csv")).column("row_key");
    assert_eq!(
        keys.len(),
        4,
        "baseline and chain on short and ctx256: {keys:?}"
    );
    assert!(keys.iter().all(|k| !k.contains("ctx4k")));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["skipped"][0]["config"], "prompt_set=ctx4k", "{meta}");
    let analysis = specula_in(t.path(), &["analyze", run.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&analysis.stdout);
    let view = text
        .split_once("acceptance by context tier")
        .unwrap_or_else(|| panic!("{text}"))
        .1;
    let short = view.find("short").unwrap();
    let ctx256 = view.find("ctx256").unwrap();
    assert!(short < ctx256, "shortest tier first: {view}");
    assert!(
        view.contains("skipped tiny ctx4k: its longest prompt is"),
        "{view}"
    );
}

#[test]
fn a_tier_past_the_models_context_runs_when_allowed_and_is_marked_past_the_trained_context() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // The flag: the dry run lists the ctx4k rows it would otherwise skip.
    std::fs::write(t.path().join("dry.toml"), tier_spec()).unwrap();
    let dry = specula_in(
        t.path(),
        &["sweep", "dry.toml", "--dry-run", "--allow-past-context"],
    );
    let listing = ok(&dry);
    assert!(listing.contains("run tiny.s3k1n4.b1.ctx4k"), "{listing}");
    let stderr = String::from_utf8_lossy(&dry.stderr);
    assert!(
        stderr.contains("past trained context tiny ctx4k: its longest prompt is")
            && !stderr.contains("skipped tiny prompt_set=ctx4k"),
        "{stderr}"
    );
    // The spec field: the run.
    let spec = tier_spec().replacen(
        "threads = 1\n",
        "threads = 1\nallow_past_context = true\n",
        1,
    );
    ok(&sweep(t.path(), "tiers.toml", &spec));
    let run = t.path().join("tiers");
    let runs = Csv::read(&run.join("runs.csv"));
    assert_eq!(runs.rows.len(), 6, "baseline and chain on three tiers");
    for r in runs.rows.iter().filter(|r| r["steps"] != "0") {
        assert_eq!(r["lossless"], "true", "past the context too: {r:?}");
    }
    let requests = Csv::read(&run.join("requests.csv"));
    for r in &requests.rows {
        let tokens: usize = r["prompt_tokens"].parse().unwrap();
        let outputs: usize = r["output_tokens"].parse().unwrap();
        let past = (tokens + outputs > 2048).to_string();
        assert_eq!(r["past_trained_context"], past, "{r:?}");
        assert_eq!(r["prompt_set"] == "ctx4k", past == "true", "{r:?}");
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    let past = &meta["past_trained_context"][0];
    assert_eq!(past["prompt_set"], "ctx4k", "{meta}");
    assert_eq!(past["max_position_embeddings"], 2048, "{meta}");
    assert!(past["positions_needed"].as_u64().unwrap() > 2048, "{meta}");
    assert!(meta["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["config"] != "prompt_set=ctx4k"));
    let analysis = specula_in(t.path(), &["analyze", run.to_str().unwrap()]);
    let text = ok(&analysis);
    let view = text.split_once("acceptance by context tier").unwrap().1;
    let ctx4k = view.lines().find(|l| l.contains("ctx4k")).unwrap();
    assert!(
        ctx4k.contains("past trained context: 2 of 2 requests over 2048 positions"),
        "{view}"
    );
    assert!(
        !view
            .lines()
            .any(|l| l.contains("ctx256") && l.contains("past trained")),
        "{view}"
    );
}

/// `specula serve --allow-past-context` answers a prompt whose positions run
/// past max_position_embeddings (the same request a plain server refuses
/// with 400, `serve_attacks.rs`), so a served past-context sweep has a
/// server to run against.
#[test]
fn specula_serve_takes_a_prompt_past_the_models_context_when_allowed() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let body = serde_json::json!({
        "input_ids": vec![5; 2040],
        "sampling_params": {"max_new_tokens": 24, "ignore_eos": true},
    });
    let ask = |server: &Serving| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent()
            .post(format!("{}/generate", server.url))
            .send(body.to_string())
            .map(|mut r| (r.status().as_u16(), r.body_mut().read_to_string().unwrap()))
            .unwrap()
    };
    let plain = Serving::tiny(t.path(), "3", &[]);
    let (status, answer) = ask(&plain);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("max_position_embeddings of 2048"),
        "{answer}"
    );
    drop(plain);
    let allowed = Serving::tiny(t.path(), "3", &["--allow-past-context"]);
    let (status, answer) = ask(&allowed);
    assert_eq!(status, 200, "{answer}");
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["meta_info"]["completion_tokens"], 24, "{v}");
    assert_eq!(v["meta_info"]["prompt_tokens"], 2040, "{v}");
}
