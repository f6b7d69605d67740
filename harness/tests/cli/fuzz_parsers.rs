//! Fuzzing the parsers that read what users and networks hand specula
//! (issue 20): a model's config.json, a draft's config.json, a checkpoint's
//! safetensors header, a sweep spec and the server's request bodies. Each
//! bent input must give `Ok` or a clear error: never a panic, never an
//! abort. CI runs a few hundred inputs per parser; `scripts/fuzz.sh` runs
//! each for minutes (see `common/fuzz.rs` for the budget and replay).

use crate::common;

use crate::common::fuzz::{bytes_near, fuzz, json_near};
use serde_json::Value;
use specula::serve::engine::Engine;
use specula::serve::protocol::Protocol;
use specula::serve::ServeLimits;
use specula::sweep::spec_source::SpecSource;
use specula_engine::capture::CaptureChoice;
use specula_engine::fixtures::{write_random_pair, StoreDtype, TargetShape};
use specula_engine::model::TargetModel;
use specula_engine::pair::{load_drafter, ModelPair};
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::tokenizer::TextTokenizer;
use std::path::Path;

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A random tiny pair's folders, copied to `bent/target` and `bent/draft`
/// for their files to be bent one at a time.
fn tiny_pair(t: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let shape = TargetShape::named("tiny").unwrap();
    let pair = write_random_pair(&t.join("fx"), &shape, 7, StoreDtype::F32, None).unwrap();
    (pair.target, pair.draft)
}

#[test]
fn target_and_draft_configs_never_panic_or_abort() {
    let t = tempfile::tempdir().unwrap();
    let (target, draft) = tiny_pair(t.path());
    let config = target.join("config.json");
    let good = std::fs::read(&config).unwrap();
    fuzz("target config.json", json_near(json_of(&config)), |text| {
        std::fs::write(&config, text).unwrap();
        // The whole load: a config is checked against the tensors it names.
        let _ = TargetModel::load(&target);
    });
    std::fs::write(&config, good).unwrap();
    let model = TargetModel::load(&target).unwrap();
    let draft_config = draft.join("config.json");
    fuzz(
        "draft config.json",
        json_near(json_of(&draft_config)),
        |text| {
            std::fs::write(&draft_config, text).unwrap();
            let _ = load_drafter(&draft, &model, &CaptureChoice::default());
        },
    );
}

#[test]
fn safetensors_headers_never_panic_or_abort() {
    let t = tempfile::tempdir().unwrap();
    let (target, _) = tiny_pair(t.path());
    let file = std::fs::read(target.join("model.safetensors")).unwrap();
    // Bend the 8-byte length and the JSON header (and a little data after it).
    let header_end = 8 + u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let cut = (header_end + 64).min(file.len());
    let (head, data) = (file[..cut].to_vec(), file[cut..].to_vec());
    let dir = t.path().join("bent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(target.join("config.json"), dir.join("config.json")).unwrap();
    fuzz("safetensors header", bytes_near(head), |bent| {
        let mut f = bent.clone();
        f.extend_from_slice(&data);
        std::fs::write(dir.join("model.safetensors"), f).unwrap();
        let _ = TargetModel::load(&dir);
    });
}

#[test]
fn sweep_specs_never_panic() {
    for name in ["default.toml", "gate.toml", "served.toml"] {
        let path = common::repo().join("bench/sweeps").join(name);
        let seed = std::fs::read(&path).unwrap();
        fuzz(&format!("sweep spec {name}"), bytes_near(seed), |bent| {
            let source = SpecSource {
                path: path.clone(),
                text: String::from_utf8_lossy(bent).into_owned(),
            };
            let _ = source.parse();
        });
    }
}

#[test]
fn request_bodies_never_panic() {
    let target = common::repo().join("models/tiny-llama");
    let pair = ModelPair::load(&target, None, &CaptureChoice::default()).unwrap();
    let tokenizer = TextTokenizer::load(&target).unwrap();
    let engine = Engine::new(
        pair,
        tokenizer,
        SpeculativeConfig::BASELINE,
        "tiny".into(),
        None,
    );
    let limits = ServeLimits::default();
    let seeds = [
        (
            Protocol::Sglang,
            serde_json::json!({"text": "def f(x):", "input_ids": [1, 2, 3], "stream": false,
                "sampling_params": {"max_new_tokens": 8, "temperature": 0.7, "top_p": 1.0,
                                    "top_k": -1, "sampling_seed": 3, "ignore_eos": true}}),
        ),
        (
            Protocol::Vllm,
            serde_json::json!({"model": "tiny", "prompt": "def f(x):", "max_tokens": 8,
                "temperature": 0.7, "top_p": 1.0, "top_k": -1, "seed": 3, "ignore_eos": true,
                "stream": true, "stream_options": {"include_usage": true}}),
        ),
    ];
    for (protocol, seed) in seeds {
        fuzz(&format!("{protocol:?} request"), json_near(seed), |body| {
            if let Ok((_, job)) = protocol.job(&engine, body) {
                let _ = engine.check(&job, &limits);
            }
        });
    }
}
