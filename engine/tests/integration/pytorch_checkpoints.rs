//! PyTorch checkpoints (`pytorch_model.bin`, sharded with
//! `pytorch_model.bin.index.json`) load to the very weights of their
//! safetensors twins and generate the same tokens. The `.bin` files in
//! `tests/fixtures/pytorch/bin` were written by torch 2.11's `torch.save`
//! from the safetensors pair beside them (`tools/pytorch_fixtures/write.py`).

use specula_engine::capture::CaptureChoice;
use specula_engine::checkpoint::Checkpoint;
use specula_engine::error::EngineError;
use specula_engine::generate::GenerateParams;
use specula_engine::pair::ModelPair;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::NullRecorder;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pytorch")
}

#[test]
fn a_sharded_bin_target_and_a_bin_draft_hold_the_tensors_of_their_safetensors_twins() {
    for part in ["target", "draft"] {
        let st = Checkpoint::open(&fixtures().join("safetensors").join(part)).unwrap();
        let pt = Checkpoint::open(&fixtures().join("bin").join(part)).unwrap();
        // t2d (bool) has no dtype in candle's reader, which skips it; the
        // engine never reads t2d (d2t maps draft ids to target ids).
        let names: Vec<String> = st.names().into_iter().filter(|n| n != "t2d").collect();
        assert_eq!(names, pt.names(), "{part}");
        for name in names {
            let shape = st.shape(&name).unwrap();
            assert_eq!(pt.shape(&name), Some(shape.clone()), "{part} {name}");
            if name == "d2t" || name == "t2d" {
                continue;
            }
            let (a, b) = (
                st.f32(&name, &shape, "test").unwrap(),
                pt.f32(&name, &shape, "test").unwrap(),
            );
            assert!(
                a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
                "{part} {name}: the same bits"
            );
        }
    }
}

#[test]
fn a_bin_pair_generates_the_tokens_of_its_safetensors_twin_losslessly() {
    let load = |format: &str| {
        let dir = fixtures().join(format);
        ModelPair::load(
            &dir.join("target"),
            Some(&dir.join("draft")),
            &CaptureChoice::default(),
        )
        .unwrap()
    };
    let prompts = vec![vec![1, 5, 9, 2], vec![7, 3]];
    let run = |pair: &mut ModelPair, speculative| {
        let params = GenerateParams {
            speculative,
            max_new_tokens: 24,
            ignore_eos: true,
            ..GenerateParams::default()
        };
        pair.generate(&prompts, &params, &mut NullRecorder).unwrap()
    };
    let (mut st, mut pt) = (load("safetensors"), load("bin"));
    let steps = SpeculativeConfig::new(3, 1, 4).unwrap();
    let baseline = run(&mut st, SpeculativeConfig::BASELINE);
    for (pair, name) in [(&mut st, "safetensors"), (&mut pt, "bin")] {
        let g = run(pair, steps);
        for (s, b) in g.sequences.iter().zip(&baseline.sequences) {
            assert_eq!(s.output, b.output, "{name}: lossless");
        }
    }
    let (a, b) = (run(&mut st, steps), run(&mut pt, steps));
    for (x, y) in a.sequences.iter().zip(&b.sequences) {
        assert_eq!(
            x.accepted_per_step, y.accepted_per_step,
            "same draft, same acceptance"
        );
    }
}

/// The error of opening a copy of the draft whose `.bin` is `bytes`.
fn open_error(bytes: &[u8]) -> String {
    let t = tempfile::tempdir().unwrap();
    let src = fixtures().join("bin/draft");
    std::fs::copy(src.join("config.json"), t.path().join("config.json")).unwrap();
    std::fs::write(t.path().join("pytorch_model.bin"), bytes).unwrap();
    match Checkpoint::open(t.path()) {
        Err(e @ EngineError::WeightFile { .. }) => e.to_string(),
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("a broken .bin opened"),
    }
}

#[test]
fn a_corrupt_or_truncated_bin_is_one_clear_error_naming_the_file() {
    let good = std::fs::read(fixtures().join("bin/draft/pytorch_model.bin")).unwrap();
    let truncated = &good[..good.len() / 2];
    let mut corrupt = good.clone();
    corrupt[..64].fill(0x5a);
    let not_zip = b"\x80\x02cposix\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.";
    for (what, bytes) in [
        ("truncated", truncated),
        ("corrupt", &corrupt[..]),
        ("a bare pickle", &not_zip[..]),
    ] {
        let e = open_error(bytes);
        assert!(
            e.contains("pytorch_model.bin") && e.contains("PyTorch checkpoint"),
            "{what}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{what}: one line: {e}");
    }
}
