//! `specula generate` and `specula sweep` on the latent-attention / MoE
//! targets (issue 16): the committed tiny DeepSeek-V3, Kimi-K2.5 wrapper,
//! DeepSeek-V2 and Qwen3-MoE fixtures with their EAGLE-3 drafts.

use crate::common::raw_http::{exchange, post_head, status_of};
use crate::common::served::Serving;
use crate::common::{ok, repo, specula_in, Csv};
use std::time::Duration;

const SHAPES: [&str; 4] = [
    "tiny-deepseek-v3",
    "tiny-kimi-k25",
    "tiny-deepseek-v2",
    "tiny-qwen3-moe",
];

fn fixture(shape: &str, part: &str) -> String {
    repo()
        .join("engine/tests/fixtures/moe")
        .join(shape)
        .join(part)
        .display()
        .to_string()
}

#[test]
fn generate_decodes_each_sparse_target_with_its_draft() {
    let t = tempfile::tempdir().unwrap();
    for shape in SHAPES {
        let (target, draft) = (fixture(shape, "target"), fixture(shape, "draft"));
        let out = specula_in(
            t.path(),
            &[
                "generate",
                "--target",
                &target,
                "--draft",
                &draft,
                "--steps",
                "3",
                "--aux-layers",
                "0,1,2",
                "--max-new-tokens",
                "12",
                "--prompt",
                "def f(n):",
            ],
        );
        let stdout = ok(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let all = format!("{stdout}{stderr}");
        assert!(all.contains("verify steps"), "{shape}: {all}");
        assert!(
            all.contains("[embeddings, entering layer 1, entering layer 2]"),
            "{shape}: {all}"
        );
        let note = stderr
            .lines()
            .filter(|l| l.contains("vision parts are ignored"))
            .count();
        assert_eq!(
            note,
            usize::from(shape == "tiny-kimi-k25"),
            "{shape}: {stderr}"
        );
    }
}

#[test]
fn a_sweep_over_the_sparse_targets_is_lossless_in_every_greedy_row() {
    let t = tempfile::tempdir().unwrap();
    let mut spec = String::from(
        "name = \"sparse\"\nmax_new_tokens = 10\nbatch_sizes = [1, 3]\ntemperatures = [0]\n\
         [[drafts]]\nsteps = [1, 3]\ntopk = 1\naux_layers = [0, 1, 2]\n\
         [[drafts]]\nsteps = 3\ntopk = 2\nnum_draft_tokens = 6\naux_layers = [0, 1, 2]\n\
         [[prompt_sets]]\nsource = \"builtin\"\n",
    );
    for shape in SHAPES {
        spec += &format!(
            "[[models]]\nname = \"{shape}\"\ntarget = \"{}\"\ndraft = \"{}\"\nchat_template = \"none\"\n",
            fixture(shape, "target"),
            fixture(shape, "draft")
        );
    }
    let path = t.path().join("sparse.toml");
    std::fs::write(&path, spec).unwrap();
    let run = t.path().join("run");
    ok(&specula_in(
        t.path(),
        &[
            "sweep",
            path.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
        ],
    ));
    let csv = Csv::read(&run.join("runs.csv"));
    let keys = csv.column("row_key");
    assert_eq!(
        keys.len(),
        4 * 2 * 4,
        "4 models x 2 batch sizes x (baseline + 3 configs)"
    );
    for shape in SHAPES {
        assert!(
            keys.iter()
                .any(|k| k.starts_with(&format!("{shape}.s3k2n6"))),
            "{shape}"
        );
    }
    assert!(
        csv.column("lossless").iter().all(|v| v == "true"),
        "{:?}",
        csv.column("lossless")
    );
}

#[test]
fn audit_runs_on_a_sparse_target() {
    let t = tempfile::tempdir().unwrap();
    let (target, draft) = (
        fixture("tiny-deepseek-v3", "target"),
        fixture("tiny-deepseek-v3", "draft"),
    );
    let out = ok(&specula_in(
        t.path(),
        &[
            "audit",
            "--target",
            &target,
            "--draft",
            &draft,
            "--samples",
            "2",
            "--json",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["configured"]["points"],
        serde_json::json!([2, 2, 1]),
        "the default points of a 4-layer target: {out}"
    );
    assert!(
        v["configured"]["positions"].as_u64().unwrap() > 100,
        "{out}"
    );
    // On 4 layers the shifted and most embedding-first variants of [2, 2, 1]
    // repeat a point and are left out; the served mapping stays.
    let candidates = v["candidates"].as_array().unwrap();
    assert!(candidates.len() >= 2, "{out}");
    assert_eq!(
        candidates[0]["points"],
        serde_json::json!([2, 2, 1]),
        "{out}"
    );
}

/// The `output_ids` of a greedy `/generate` of `text` on the server at `port`.
fn served_ids(port: u16, text: &str) -> Vec<u64> {
    let body = serde_json::json!({
        "text": text,
        "sampling_params": {"max_new_tokens": 12, "temperature": 0, "ignore_eos": true},
    })
    .to_string();
    let headers = format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    let request = format!("{}{body}", post_head("/generate", &headers));
    let answer = exchange(port, request.as_bytes(), Duration::from_secs(30));
    assert_eq!(status_of(&answer), 200, "{answer}");
    let json = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["output_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn serve_with_a_draft_answers_a_sparse_target_as_without_one() {
    let t = tempfile::tempdir().unwrap();
    let (target, draft) = (
        fixture("tiny-kimi-k25", "target"),
        fixture("tiny-kimi-k25", "draft"),
    );
    let plain = Serving::start(t.path(), &["--target", &target]);
    let speculative = Serving::start(
        t.path(),
        &[
            "--target",
            &target,
            "--draft",
            &draft,
            "--steps",
            "3",
            "--topk",
            "2",
            "--num-draft-tokens",
            "5",
            "--aux-layers",
            "0,1,2",
        ],
    );
    for text in ["def f(n):", "Latent attention"] {
        let want = served_ids(plain.port(), text);
        assert_eq!(want.len(), 12);
        assert_eq!(served_ids(speculative.port(), text), want, "{text:?}");
    }
}
