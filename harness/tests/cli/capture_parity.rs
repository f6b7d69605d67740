//! The two capture writers agree: `specula capture` (the built-in engine)
//! and tools/capture/capture_hf.py (transformers) write the same file for
//! models/tiny-llama, up to bfloat16 rounding. The transformers file is a
//! committed fixture, written once on a machine with torch by
//!
//! ```sh
//! python tools/capture/capture_hf.py --model models/tiny-llama \
//!     --prompts tools/capture/parity_prompts.txt --max-new-tokens 16 \
//!     --dtype float32 --device-map cpu --attn-implementation eager \
//!     --out models/tiny-llama/golden/capture_hf.safetensors
//! ```

use crate::common;

use specula_engine::capture_file::{CaptureFile, StatesSource};

/// Where the transformers-written capture is committed.
const FIXTURE: &str = "models/tiny-llama/golden/capture_hf.safetensors";

#[test]
fn specula_capture_and_capture_hf_py_write_the_same_states_for_tiny_llama() {
    let fixture = common::repo().join(FIXTURE);
    if !fixture.exists() {
        println!("skipped: {FIXTURE} is not there yet (write it with tools/capture/capture_hf.py, see this file's header)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let ours = t.path().join("ours.safetensors");
    let (target, prompts) = (
        common::repo().join("models/tiny-llama"),
        common::repo().join("tools/capture/parity_prompts.txt"),
    );
    common::ok(&common::specula_in(
        t.path(),
        &[
            "capture",
            "--target",
            target.to_str().unwrap(),
            "--prompts",
            prompts.to_str().unwrap(),
            "--samples",
            "0",
            "--max-new-tokens",
            "16",
            "--out",
            ours.to_str().unwrap(),
        ],
    ));
    let (a, b) = (
        CaptureFile::open(&ours).unwrap(),
        CaptureFile::open(&fixture).unwrap(),
    );
    let (ma, mb) = (a.meta(), b.meta());
    assert!(mb.writer.starts_with("capture_hf.py"), "{}", mb.writer);
    assert_eq!(
        (
            ma.num_hidden_layers,
            ma.hidden_size,
            ma.vocab_size,
            &ma.model_type,
            &ma.architectures
        ),
        (
            mb.num_hidden_layers,
            mb.hidden_size,
            mb.vocab_size,
            &mb.model_type,
            &mb.architectures
        )
    );
    assert_eq!(ma.boundaries, mb.boundaries);
    assert_eq!(
        ma.prompt_lengths, mb.prompt_lengths,
        "the prompts tokenize alike"
    );
    let (mut agree, mut positions, mut worst) = (0usize, 0usize, 0f32);
    for i in 0..a.prompt_count() {
        let (pa, pb) = (
            a.prompt(i, &ma.boundaries).unwrap(),
            b.prompt(i, &ma.boundaries).unwrap(),
        );
        assert_eq!(
            pa.tokens, pb.tokens,
            "prompt {i}: the greedy continuations differ"
        );
        agree += pa
            .argmax
            .iter()
            .zip(&pb.argmax)
            .filter(|(x, y)| x == y)
            .count();
        positions += pa.argmax.len();
        for b in &ma.boundaries {
            for (k, (x, y)) in pa.hidden[b].iter().zip(&pb.hidden[b]).enumerate() {
                // Two f32 computations a hair apart can round to neighbouring bfloat16 values.
                let tolerance = x.abs().max(y.abs()) * 2f32.powi(-6) + 1e-3;
                assert!(
                    (x - y).abs() <= tolerance,
                    "prompt {i}, boundary {b}, value {k}: {x} vs {y}"
                );
                worst = worst.max((x - y).abs());
            }
        }
    }
    assert!(
        agree * 100 >= positions * 99,
        "greedy choices agree at {agree} of {positions} positions"
    );
    println!(
        "{positions} positions, greedy choices agree at {agree}, largest state difference {worst}"
    );
}
