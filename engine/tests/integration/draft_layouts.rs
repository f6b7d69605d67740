//! Drafts in every published layout (`specula fixtures draft-layouts`;
//! the `.bin` ones rewritten by torch with
//! `tools/pytorch_fixtures/write_layouts.py`) load, decode losslessly, and
//! compute exactly what their safetensors twins compute.

use specula_engine::capture::{CaptureChoice, CaptureSource};
use specula_engine::config::DraftKind;
use specula_engine::fixtures::LAYOUTS;
use specula_engine::generate::GenerateParams;
use specula_engine::model::{DraftModel, DraftOutput, ForwardBatch, HiddenInput, TargetModel};
use specula_engine::pair::load_drafter;
use specula_engine::speculative::{Drafter, SpeculativeConfig};
use specula_engine::timing::NullRecorder;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/draft_layouts")
}

fn target() -> TargetModel {
    TargetModel::load(&fixtures().join("target")).unwrap()
}

const PROMPT: [u32; 7] = [3, 41, 7, 200, 15, 99, 256];

/// One forward of the draft in `layout` over [`PROMPT`], fed the target
/// streams its own capture resolves to (served as `served_as`).
fn draft_forward(target: &TargetModel, layout: &str, served_as: Option<DraftKind>) -> DraftOutput {
    let draft = DraftModel::load(&fixtures().join(layout), target).unwrap();
    let c = draft.config();
    let choice = CaptureChoice {
        served_as,
        ..CaptureChoice::default()
    };
    let capture = choice
        .resolve_for(
            c.kind(),
            c.aux_layer_ids.as_deref(),
            target.config().num_hidden_layers,
        )
        .unwrap();
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, 0, &PROMPT, 0, true);
    let mut caches = vec![target.new_cache()];
    let out = target.forward(&batch, &mut caches, &capture.points);
    // Draft position i takes the streams of position i and token i + 1.
    let mut dbatch = ForwardBatch::default();
    dbatch.push_causal(0, 0, &PROMPT[1..], 0, true);
    let width = out.aux.len() / PROMPT.len();
    let aux = &out.aux[..(PROMPT.len() - 1) * width];
    let mut dcaches = vec![draft.new_cache()];
    draft.forward(&dbatch, HiddenInput::Aux(aux), &mut dcaches)
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn every_layout_with_a_twin_computes_its_safetensors_twin_bit_for_bit() {
    let target = target();
    let mut compared = 0;
    for layout in LAYOUTS.iter().filter(|l| l.twin.is_some()) {
        let twin = layout.twin.unwrap();
        let (a, b) = (
            draft_forward(&target, layout.name, None),
            draft_forward(&target, twin, None),
        );
        assert!(
            same_bits(&a.hidden, &b.hidden),
            "{}: hidden states differ from {twin}'s",
            layout.name
        );
        assert!(
            same_bits(&a.logits, &b.logits),
            "{}: logits differ from {twin}'s",
            layout.name
        );
        assert!(
            a.logits.iter().any(|&x| x != 0.0),
            "{}: logits are not all zero",
            layout.name
        );
        let (da, db) = (
            DraftModel::load(&fixtures().join(layout.name), &target).unwrap(),
            DraftModel::load(&fixtures().join(twin), &target).unwrap(),
        );
        assert_eq!(
            da.draft_to_target(),
            db.draft_to_target(),
            "{}: d2t",
            layout.name
        );
        assert_eq!(
            da.config().kind(),
            db.config().kind(),
            "{}: generation",
            layout.name
        );
        compared += 1;
    }
    assert_eq!(compared, 11, "layouts compared with a twin");
}

#[test]
fn pytorch_layouts_really_ship_as_pytorch_model_bin() {
    for layout in LAYOUTS.iter().filter(|l| l.pytorch_bin) {
        let dir = fixtures().join(layout.name);
        let bins = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".bin"))
            .count();
        assert!(bins >= 1, "{}: no .bin file", layout.name);
        assert!(
            !dir.join("model.safetensors").exists(),
            "{}: a safetensors file too",
            layout.name
        );
    }
}

#[test]
fn the_config_variants_change_what_the_draft_computes() {
    let target = target();
    let reference = draft_forward(&target, "specforge", None);
    for variant in [
        "llama3-rope",
        "specforge-fc-norm",
        "vllm-norm-before-residual",
    ] {
        let out = draft_forward(&target, variant, None);
        assert!(
            !same_bits(&out.hidden, &reference.hidden),
            "{variant} computes what specforge does: its config key is ignored"
        );
    }
}

#[test]
fn the_eagle_authors_plain_llama_configs_are_told_apart_by_their_fc() {
    let target = target();
    for (layout, kind) in [
        ("eagle-authors", DraftKind::Eagle3),
        ("eagle-authors-full-vocab", DraftKind::Eagle3),
        ("eagle1-authors", DraftKind::Eagle),
        ("eagle1-sglang", DraftKind::Eagle),
    ] {
        let d = DraftModel::load(&fixtures().join(layout), &target).unwrap();
        assert_eq!(d.config().kind(), kind, "{layout}");
    }
    let d = load_drafter(
        &fixtures().join("eagle-authors"),
        &target,
        &CaptureChoice::default(),
    )
    .unwrap();
    assert_eq!(
        d.capture().source,
        CaptureSource::Default,
        "no ids: the engine default"
    );
    assert_eq!(d.capture_points(), vec![2, 4, 5]);
    let d = load_drafter(
        &fixtures().join("vllm-top-level-ids"),
        &target,
        &CaptureChoice::default(),
    )
    .unwrap();
    assert_eq!(
        d.capture().source,
        CaptureSource::DraftConfig,
        "top-level ids are read"
    );
    let d = load_drafter(
        &fixtures().join("eagle1-authors"),
        &target,
        &CaptureChoice::default(),
    )
    .unwrap();
    assert_eq!(
        d.capture_points(),
        vec![8],
        "an EAGLE-1/2 draft is fed point L, the last hidden state"
    );
}

#[test]
fn an_eagle3_draft_served_as_eagle_skips_fc_and_is_fed_the_last_hidden_state() {
    let target = target();
    let right = draft_forward(&target, "specforge", None);
    let wrong = draft_forward(&target, "specforge", Some(DraftKind::Eagle));
    assert_eq!(right.hidden.len(), wrong.hidden.len());
    assert!(!same_bits(&right.logits, &wrong.logits));
    let e = CaptureChoice {
        served_as: Some(DraftKind::Eagle3),
        ..CaptureChoice::default()
    }
    .resolve_for(DraftKind::Eagle, None, 8)
    .unwrap_err();
    assert!(e.to_string().contains("cannot be served as EAGLE-3"), "{e}");
}

#[test]
fn every_layout_decodes_losslessly() {
    let target = target();
    let prompts = vec![PROMPT.to_vec(), vec![9, 8, 7]];
    let params = |speculative| GenerateParams {
        speculative,
        max_new_tokens: 20,
        ignore_eos: true,
        ..GenerateParams::default()
    };
    let baseline = specula_engine::generate::generate(
        &target,
        &prompts,
        &params(SpeculativeConfig::BASELINE),
        None,
        &mut NullRecorder,
    )
    .unwrap();
    let names = LAYOUTS.iter().map(|l| l.name).chain(["eagle1-sglang"]);
    for name in names {
        for served_as in [None, Some(DraftKind::Eagle)] {
            let choice = CaptureChoice {
                served_as,
                ..CaptureChoice::default()
            };
            let loaded = load_drafter(&fixtures().join(name), &target, &choice);
            if name == "small-hidden" && served_as.is_some() {
                let e = loaded
                    .err()
                    .expect("a narrow draft cannot take the last hidden state");
                assert!(e.to_string().contains("served as EAGLE"), "{e}");
                continue;
            }
            let mut d = loaded.unwrap();
            for cfg in [
                SpeculativeConfig::new(3, 1, 4).unwrap(),
                SpeculativeConfig::new(3, 2, 6).unwrap(),
            ] {
                let g = specula_engine::generate::generate(
                    &target,
                    &prompts,
                    &params(cfg),
                    Some(&mut d as &mut dyn Drafter),
                    &mut NullRecorder,
                )
                .unwrap();
                for (s, b) in g.sequences.iter().zip(&baseline.sequences) {
                    assert_eq!(
                        s.output, b.output,
                        "{name} served as {served_as:?} at {cfg}: lossless"
                    );
                }
            }
        }
    }
}

#[test]
fn the_bool_t2d_of_a_pytorch_draft_is_skipped_by_name_not_read() {
    let f = specula_engine::pytorch_file::PytorchFile::open(
        &fixtures().join("eagle-authors/pytorch_model.bin"),
    )
    .unwrap();
    assert_eq!(f.skipped(), ["t2d"]);
    assert!(f.infos().contains_key("d2t") && f.infos().contains_key("fc.weight"));
    let fc = f.get("fc.weight").unwrap().unwrap();
    assert_eq!(fc.dims(), [64, 192]);
    assert_eq!(fc.dtype(), candle_core::DType::F16);
    assert!(f.get("no.such.tensor").unwrap().is_none());
}

#[test]
fn the_audit_static_checks_pass_every_published_layout() {
    use specula_engine::audit::{static_checks, CheckStatus};
    let names = LAYOUTS.iter().map(|l| l.name).chain(["eagle1-sglang"]);
    for name in names {
        let checks = static_checks(&fixtures().join("target"), &fixtures().join(name));
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| c.status == CheckStatus::Error)
            .map(|c| format!("{}: {}", c.name, c.message))
            .collect();
        assert!(failed.is_empty(), "{name}: {failed:?}");
        if name.starts_with("eagle1") {
            assert_eq!(checks.len(), 1, "{name}: only the generation is said");
            assert!(checks[0].message.contains("EAGLE-1/2"), "{name}");
        }
    }
}
