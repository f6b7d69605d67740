//! The decode loop's own host work per verify step, at Llama-3.1-8B's sizes,
//! with backends that do no model work (criterion). What it measures is the
//! time a GPU sits idle between spans: the tree search, batch building,
//! acceptance and bookkeeping, plus moving the 8B-sized aux and hidden states
//! around on the host. The decode loop's first step folds every prompt
//! token's aux states into the draft (3 x 4096 floats a token; read in
//! place from the prefill's output), so a share of the per-step figure is
//! that one step spread over the others. The null target fills its aux
//! output with zeros where a GPU backend would download it: that is counted.
//!
//! Measured on a 2-core VM (2026-11-30): 21 us per verify step at batch 1,
//! 174 us at batch 4 (139 and 977 us before the prefill's aux states stayed
//! in place).
//!
//! `cargo bench -p specula-bench --bench host_overhead`

use criterion::{criterion_group, criterion_main, Criterion};
use specula_engine::backend::null::{NullDraft, NullTarget};
use specula_engine::capture::CaptureChoice;
use specula_engine::config::{default_draft_config, TargetConfig};
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::speculative::{Drafter, EagleDrafter, SpeculativeConfig, SyntheticAcceptance};
use specula_engine::timing::NullRecorder;
use std::time::Duration;

fn host_overhead(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/llama-3.1-8b.json");
    let config = TargetConfig::load_file(std::path::Path::new(path)).expect("8B config");
    let layers = config.num_hidden_layers;
    let target = NullTarget::new(config);
    let draft = NullDraft::new(default_draft_config(target_config(&target)));
    let mut group = c.benchmark_group("host_overhead_per_verify_step");
    for batch in [1usize, 4] {
        let prompts: Vec<Vec<u32>> = (0..batch as u32)
            .map(|b| (0..128).map(|i| (i * 31 + b * 7) % 32000).collect())
            .collect();
        for (name, speculative, synthetic) in [
            ("baseline", SpeculativeConfig::BASELINE, None),
            (
                "steps5_topk1_synthetic0.8",
                SpeculativeConfig::chain(5),
                Some(SyntheticAcceptance::new(vec![0.8]).expect("valid profile")),
            ),
        ] {
            let params = GenerateParams {
                speculative,
                synthetic,
                max_new_tokens: 128,
                ignore_eos: true,
                ..GenerateParams::default()
            };
            group.bench_function(format!("b{batch}/{name}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let capture = CaptureChoice::default()
                            .resolve(None, layers)
                            .expect("default capture");
                        let mut d = EagleDrafter::new(draft.clone(), capture).expect("drafter");
                        let drafter: Option<&mut dyn Drafter> =
                            (!speculative.is_baseline()).then_some(&mut d as &mut dyn Drafter);
                        let g = generate(&target, &prompts, &params, drafter, &mut NullRecorder)
                            .expect("generate");
                        // The decode loop only (not the prefill), per verify step.
                        total += Duration::from_secs_f64(g.decode_s / g.batch_steps.max(1) as f64);
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

fn target_config(t: &NullTarget) -> &TargetConfig {
    use specula_engine::backend::TargetBackend;
    t.config()
}

criterion_group!(benches, host_overhead);
criterion_main!(benches);
