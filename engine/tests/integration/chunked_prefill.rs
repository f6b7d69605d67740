//! Chunked prefill: prompts split over several target forwards (a long
//! prompt spanning chunks, each chunk attending to the entries the earlier
//! ones committed) decode exactly as one forward over every prompt does,
//! with and without speculation, on the trained tiny pair; the draft's
//! catch-up over the prompts runs in chunks of the same size and accepts
//! exactly what one forward over them does.

use specula_engine::capture::CaptureChoice;
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::model::TargetModel;
use specula_engine::pair::load_drafter;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::{HostRecorder, Span};
use std::path::PathBuf;

fn models() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tiny-llama"))
}

#[test]
fn chunked_prefill_decodes_exactly_as_one_forward_over_every_prompt() {
    let target = TargetModel::load(&models()).unwrap();
    let vocab = target.config().vocab_size as u32;
    // Prompts of different lengths, one longer than several chunks.
    let prompts: Vec<Vec<u32>> = [37usize, 5, 61, 12]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            (0..n as u32)
                .map(|t| (t * 131 + i as u32 * 17 + 3) % vocab)
                .collect()
        })
        .collect();
    for speculative in [
        SpeculativeConfig::BASELINE,
        SpeculativeConfig::new(5, 1, 6).unwrap(),
    ] {
        let run = |chunk: usize| {
            let params = GenerateParams {
                speculative,
                max_new_tokens: 24,
                ignore_eos: true,
                prefill_chunk_tokens: chunk,
                ..GenerateParams::default()
            };
            let mut drafter =
                load_drafter(&models().join("eagle3"), &target, &CaptureChoice::default()).unwrap();
            let d = (!speculative.is_baseline()).then_some(&mut drafter as &mut _);
            let mut rec = HostRecorder::default();
            let g = generate(&target, &prompts, &params, d, &mut rec).unwrap();
            let outputs: Vec<(Vec<u32>, Vec<u16>)> = g
                .sequences
                .into_iter()
                .map(|s| (s.output, s.accepted_per_step))
                .collect();
            (
                outputs,
                rec.log.count(Span::Prefill),
                rec.log.count(Span::DraftPrefill),
                rec.log.count(Span::Draft),
            )
        };
        let (whole, forwards, draft_prefills, drafts) = run(usize::MAX);
        assert_eq!(forwards, 1);
        let tokens: usize = prompts.iter().map(Vec::len).sum();
        if !speculative.is_baseline() {
            assert_eq!(draft_prefills, 1, "the draft's catch-up: one forward");
        }
        for chunk in [1, 7, 16, 40] {
            let (chunked, forwards, chunked_prefills, chunked_drafts) = run(chunk);
            assert_eq!(forwards, tokens.div_ceil(chunk), "chunks of {chunk} tokens");
            // Tokens and every step's acceptance: the draft saw the same states.
            assert_eq!(chunked, whole, "{speculative}: chunks of {chunk} tokens");
            if !speculative.is_baseline() {
                // The draft's catch-up over the prompts (every pair but each
                // prompt's last, which waits for the first output token) is
                // one draft forward per chunk of its pairs; a decode step's
                // extend of more than `chunk` pairs is cut too.
                let pairs = tokens - prompts.len();
                assert_eq!(
                    chunked_prefills,
                    pairs.div_ceil(chunk),
                    "chunks of {chunk}: the catch-up's forwards"
                );
                assert!(
                    chunked_drafts >= drafts,
                    "chunks of {chunk}: {chunked_drafts} draft forwards against {drafts} unchunked"
                );
            } else {
                assert_eq!((chunked_prefills, chunked_drafts), (0, 0));
            }
        }
    }
}

/// A prompt whose positions reach past the target's
/// `max_position_embeddings` (2048) is refused by default; with
/// `allow_past_context` it runs, over chunks, and speculative decoding
/// still reproduces the baseline token for token there.
#[test]
fn a_prompt_past_max_position_embeddings_runs_only_when_allowed_and_stays_lossless() {
    let target = TargetModel::load(&models()).unwrap();
    let limit = target.config().max_position_embeddings.unwrap();
    let vocab = target.config().vocab_size as u32;
    let prompts = vec![(0..limit as u32 - 8)
        .map(|t| (t * 131 + 3) % vocab)
        .collect::<Vec<u32>>()];
    let run = |speculative: SpeculativeConfig, allow: bool, chunk: usize| {
        let params = GenerateParams {
            speculative,
            max_new_tokens: 24,
            ignore_eos: true,
            prefill_chunk_tokens: chunk,
            allow_past_context: allow,
            ..GenerateParams::default()
        };
        let mut drafter =
            load_drafter(&models().join("eagle3"), &target, &CaptureChoice::default()).unwrap();
        let d = (!speculative.is_baseline()).then_some(&mut drafter as &mut _);
        generate(&target, &prompts, &params, d, &mut HostRecorder::default())
    };
    let refused = run(SpeculativeConfig::BASELINE, false, 1024).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("max_position_embeddings of 2048"),
        "{refused}"
    );
    let baseline = run(SpeculativeConfig::BASELINE, true, 1024).unwrap();
    let output = &baseline.sequences[0].output;
    assert_eq!(output.len(), 24);
    for (speculative, chunk) in [
        (SpeculativeConfig::new(3, 1, 4).unwrap(), 1024),
        (SpeculativeConfig::new(5, 1, 6).unwrap(), usize::MAX),
    ] {
        let g = run(speculative, true, chunk).unwrap();
        assert_eq!(
            &g.sequences[0].output, output,
            "{speculative}, chunks of {chunk}"
        );
    }
}
