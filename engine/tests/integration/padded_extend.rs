//! A padded draft extend (`DraftBackend::extend_pad_rows`: a decode step's
//! pending pairs run as steps + 1 rows a sequence, dummy rows after the real
//! ones, their cache entries dropped after the forward; what a backend that
//! replays a graph per row count asks for) proposes exactly what the plain
//! extend does: the same tokens and the same acceptance at every step, on
//! the trained tiny pair, for chains and trees, one and several sequences.

use specula_engine::backend::DraftBackend;
use specula_engine::capture::CaptureChoice;
use specula_engine::config::DraftConfig;
use specula_engine::error::Result;
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::kv_cache::KvCache;
use specula_engine::model::{DraftModel, DraftOutput, ForwardBatch, HiddenInput, TargetModel};
use specula_engine::pair::load_drafter;
use specula_engine::speculative::{EagleDrafter, SpeculativeConfig};
use specula_engine::timing::HostRecorder;
use std::cell::RefCell;
use std::path::PathBuf;

fn models() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tiny-llama"))
}

/// The CPU draft, asking for padded extends and noting each forward's rows
/// and whether its input was the target's states (an extend).
struct Padded {
    model: DraftModel,
    extends: RefCell<Vec<usize>>,
}

impl DraftBackend for Padded {
    type Cache = KvCache;

    fn config(&self) -> &DraftConfig {
        DraftBackend::config(&self.model)
    }

    fn draft_to_target(&self) -> &[u32] {
        DraftBackend::draft_to_target(&self.model)
    }

    fn new_cache(&self) -> Result<KvCache> {
        DraftBackend::new_cache(&self.model)
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [KvCache],
        top_k: Option<usize>,
    ) -> Result<DraftOutput> {
        if let HiddenInput::Aux(_) = hidden {
            self.extends.borrow_mut().push(batch.rows.len());
        }
        DraftBackend::forward(&self.model, batch, hidden, caches, top_k)
    }

    fn commit_all(&self, cache: &mut KvCache) {
        cache.commit_all();
    }

    fn rollback(&self, cache: &mut KvCache) {
        cache.rollback();
    }

    fn truncate(&self, cache: &mut KvCache, len: usize) {
        cache.truncate(len);
    }

    fn extend_pad_rows(&self) -> Option<usize> {
        Some(64)
    }
}

#[test]
fn a_padded_draft_extend_proposes_exactly_what_the_plain_one_does() {
    let target = TargetModel::load(&models()).unwrap();
    let vocab = target.config().vocab_size as u32;
    let prompts: Vec<Vec<u32>> = [23usize, 9, 31]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            (0..n as u32)
                .map(|t| (t * 97 + i as u32 * 29 + 5) % vocab)
                .collect()
        })
        .collect();
    let load = || load_drafter(&models().join("eagle3"), &target, &CaptureChoice::default());
    for speculative in [
        SpeculativeConfig::new(5, 1, 6).unwrap(),
        SpeculativeConfig::new(4, 2, 8).unwrap(),
    ] {
        for batch in [&prompts[..1], &prompts[..]] {
            let params = GenerateParams {
                speculative,
                max_new_tokens: 40,
                ignore_eos: true,
                ..GenerateParams::default()
            };
            let run = |drafter: &mut dyn specula_engine::speculative::Drafter| {
                let g = generate(
                    &target,
                    batch,
                    &params,
                    Some(drafter),
                    &mut HostRecorder::default(),
                )
                .unwrap();
                g.sequences
                    .into_iter()
                    .map(|s| (s.output, s.accepted_per_step))
                    .collect::<Vec<_>>()
            };
            let plain = run(&mut load().unwrap());
            let (model, capture) = load().unwrap().into_parts();
            let padded_model = Padded {
                model,
                extends: RefCell::new(Vec::new()),
            };
            let mut padded = EagleDrafter::new(padded_model, capture).unwrap();
            let got = run(&mut padded);
            assert_eq!(got, plain, "{speculative}, {} sequences", batch.len());
            // Every extend after the prompts' catch-up ran steps + 1 rows a
            // sequence still decoding (all of them: no EOS, one length).
            let extends = padded.model().extends.borrow();
            let pad = speculative.steps + 1;
            assert!(extends.len() > 3, "{extends:?}");
            for &rows in &extends[1..] {
                assert_eq!(rows % pad, 0, "{speculative}: extends of {extends:?} rows");
                assert!(rows / pad <= batch.len(), "{extends:?}");
            }
            assert!(
                extends[1..].iter().any(|&r| r == pad * batch.len()),
                "{extends:?}"
            );
        }
    }
}
