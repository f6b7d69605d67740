//! `specula fixtures random` and `specula generate`, run as a user would.

use specula_engine::timing::Span;
use std::path::Path;
use std::process::Command;

fn specula(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_specula"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn write_fixture(dir: &Path, seed: &str) {
    let out = specula(&[
        "fixtures",
        "random",
        "--shape",
        "tiny",
        "--out",
        dir.to_str().unwrap(),
        "--seed",
        seed,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fixtures_are_written_in_the_hugging_face_layout_and_repeat_for_a_seed() {
    let t = tempfile::tempdir().unwrap();
    let (a, b, c) = (t.path().join("a"), t.path().join("b"), t.path().join("c"));
    write_fixture(&a, "5");
    write_fixture(&b, "5");
    write_fixture(&c, "6");
    for f in [
        "target/config.json",
        "target/model.safetensors",
        "target/tokenizer.json",
        "draft/config.json",
        "draft/model.safetensors",
    ] {
        assert!(a.join(f).exists(), "{f} missing");
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs between two runs with one seed"
        );
    }
    assert_ne!(
        std::fs::read(a.join("target/model.safetensors")).unwrap(),
        std::fs::read(c.join("target/model.safetensors")).unwrap()
    );
    let draft: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("draft/config.json")).unwrap()).unwrap();
    assert_eq!(draft["architectures"][0], "LlamaForCausalLMEagle3");
    assert_eq!(draft["target_hidden_size"], 64);
}

#[test]
fn a_config_json_path_gives_the_shape() {
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("shape.json");
    std::fs::write(&cfg, r#"{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 300, "tie_word_embeddings": true}"#).unwrap();
    let out = specula(&[
        "fixtures",
        "random",
        "--shape",
        cfg.to_str().unwrap(),
        "--out",
        t.path().join("m").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("m/target/config.json")).unwrap())
            .unwrap();
    assert_eq!(
        (c["hidden_size"].as_u64(), c["architectures"][0].as_str()),
        (Some(32), Some("Qwen2ForCausalLM"))
    );
    let gen = specula(&[
        "generate",
        "--target",
        t.path().join("m/target").to_str().unwrap(),
        "--draft",
        t.path().join("m/draft").to_str().unwrap(),
        "--prompt",
        "x",
        "--max-new-tokens",
        "6",
    ]);
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
}

#[test]
fn generate_json_reports_text_tokens_tau_capture_and_spans() {
    let t = tempfile::tempdir().unwrap();
    write_fixture(t.path(), "1");
    let (target, draft) = (t.path().join("target"), t.path().join("draft"));
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "generate",
            "--target",
            target.to_str().unwrap(),
            "--prompt",
            "Once upon a time",
            "--max-new-tokens",
            "24",
            "--ignore-eos",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = specula(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
    };
    let base = run(&[]);
    let spec = run(&[
        "--draft",
        draft.to_str().unwrap(),
        "--steps",
        "3",
        "--topk",
        "2",
        "--num-draft-tokens",
        "6",
        "--aux-layers",
        "-1,1,2",
        "--id-convention",
        "legacy",
    ]);
    for field in [
        "text",
        "token_ids",
        "tau",
        "verify_steps",
        "capture_layers",
        "spans",
    ] {
        assert!(spec.get(field).is_some(), "field {field} missing");
    }
    assert_eq!(
        spec["token_ids"], base["token_ids"],
        "greedy speculative output equals the baseline"
    );
    assert_eq!(spec["token_ids"].as_array().unwrap().len(), 24);
    assert_eq!(base["tau"].as_f64(), Some(1.0));
    assert_eq!(
        spec["capture_layers"],
        serde_json::json!([0, 2, 3]),
        "legacy shifts 1,2 to 2,3 and keeps -1 as the embeddings"
    );
    for span in Span::ALL.map(Span::name) {
        assert!(
            spec["spans"][span]["count"].as_u64().unwrap() > 0,
            "span {span} not recorded"
        );
    }
    assert_eq!(
        spec["spans"]["draft"]["count"].as_u64().unwrap(),
        3 * spec["verify_steps"].as_u64().unwrap(),
        "one draft forward per step of depth"
    );
    assert!(base["spans"].get("draft").is_none());
}

#[test]
fn help_explains_the_knobs() {
    let out = specula(&["generate", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for k in [
        "--steps",
        "--topk",
        "--num-draft-tokens",
        "--aux-layers",
        "--id-convention",
        "legacy",
        "boundary",
        "Examples",
    ] {
        assert!(help.contains(k), "{k} missing from --help");
    }
}

/// Regression: the in-process engine decoded past the target's
/// max_position_embeddings (positions it never saw) where a serving engine
/// refuses the request.
#[test]
fn a_prompt_and_new_tokens_past_max_position_embeddings_are_refused() {
    let t = tempfile::tempdir().unwrap();
    write_fixture(t.path(), "1");
    let target = t.path().join("target");
    let limit = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(target.join("config.json")).unwrap(),
    )
    .unwrap()["max_position_embeddings"]
        .as_u64()
        .unwrap();
    let too_many = limit.to_string();
    let out = specula(&[
        "generate",
        "--target",
        target.to_str().unwrap(),
        "--prompt",
        "Once upon a time",
        "--max-new-tokens",
        &too_many,
        "--ignore-eos",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("max_position_embeddings"), "{err}");
    assert!(err.contains(&format!("of {limit}")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
