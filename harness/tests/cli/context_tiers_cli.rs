//! Context tiers on tiny-llama (2048 positions): tiers that fit run and are
//! shown side by side by `specula analyze`; a tier past the model's context
//! is skipped with the reason, in the output and in meta.json, never dropped.

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
