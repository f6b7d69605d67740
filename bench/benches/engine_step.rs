//! One decode step and one verify step of the tiny fixture (criterion).
//!
//! `cargo bench -p specula-bench` — results land in target/criterion; save a
//! baseline with `-- --save-baseline NAME` and compare with `--baseline NAME`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::SeedableRng;
use specula_engine::capture::CaptureChoice;
use specula_engine::fixtures::{write_random_pair, StoreDtype, TargetShape};
use specula_engine::generate::PREFILL_CHUNK_TOKENS;
use specula_engine::model::{ForwardBatch, TargetModel};
use specula_engine::pair::ModelPair;
use specula_engine::speculative::{
    verify_greedy, DraftNode, DraftRequest, DraftStep, DraftTree, Drafter, PendingAux, Proposal,
    SpeculativeConfig,
};
use specula_engine::timing::NullRecorder;
use specula_kernels::cpu::argmax;

const PROMPT: usize = 64;

fn prefilled(
    target: &TargetModel,
    prompt: &[u32],
    capture: &[usize],
) -> (specula_engine::kv_cache::KvCache, Vec<f32>) {
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, 0, prompt, 0, true);
    let mut caches = vec![target.new_cache()];
    let out = target.forward(&batch, &mut caches, capture);
    let mut c = caches.pop().unwrap();
    c.commit_all();
    (c, out.aux)
}

fn steps(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let fx = write_random_pair(
        dir.path(),
        &TargetShape::named("tiny").unwrap(),
        0,
        StoreDtype::F32,
        None,
    )
    .unwrap();
    let mut pair = ModelPair::load(&fx.target, Some(&fx.draft), &CaptureChoice::default()).unwrap();
    let prompt: Vec<u32> = (0..PROMPT as u32).map(|i| (i * 37) % 256).collect();
    let vocab = pair.target.config().vocab_size;
    let capture = pair.capture().unwrap().points.clone();
    let (cache, aux) = prefilled(&pair.target, &prompt, &capture);

    c.bench_function("decode_step/baseline", |b| {
        let mut caches = vec![cache.clone()];
        b.iter(|| {
            let mut batch = ForwardBatch::default();
            batch.push_causal(0, PROMPT, &[7], PROMPT, true);
            let out = pair.target.forward(&batch, &mut caches, &[]);
            let t = argmax(&out.logits).unwrap();
            caches[0].rollback();
            t
        })
    });

    let mut group = c.benchmark_group("verify_step");
    for nodes in [5usize, 15] {
        let tree = DraftTree {
            nodes: (0..nodes)
                .map(|i| DraftNode {
                    token: (i * 13 % 256) as u32,
                    parent: if i < 5 { i.checked_sub(1) } else { Some(i % 5) },
                    depth: if i < 5 { i + 1 } else { i % 5 + 2 },
                    proposal: Proposal::PointMass,
                })
                .collect(),
        };
        group.bench_with_input(BenchmarkId::from_parameter(nodes + 1), &tree, |b, tree| {
            let mut caches = vec![cache.clone()];
            b.iter(|| {
                let mut batch = ForwardBatch::default();
                batch.push_tree_node(0, 7, PROMPT, PROMPT, vec![PROMPT], true);
                for (n, node) in tree.nodes.iter().enumerate() {
                    let mut seen = vec![PROMPT];
                    seen.extend(tree.path_to(n).into_iter().map(|a| PROMPT + 1 + a));
                    batch.push_tree_node(0, node.token, PROMPT + node.depth, PROMPT, seen, true);
                }
                let out = pair.target.forward(&batch, &mut caches, &capture);
                let choice: Vec<u32> = out
                    .logits
                    .chunks_exact(vocab)
                    .map(|r| argmax(r).unwrap() as u32)
                    .collect();
                let acc = verify_greedy(tree, &choice);
                caches[0].rollback();
                acc
            })
        });
    }
    group.finish();

    let drafter = pair.drafter.as_mut().unwrap();
    let mut tokens = prompt.clone();
    tokens.push(7);
    c.bench_function("draft_step/extend_64_then_chain_5", |b| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        b.iter(|| {
            let req = DraftRequest {
                slot: 0,
                tokens: &tokens,
                pending_start: 0,
                pending_aux: PendingAux::of(&aux),
                pending_rows: &[],
            };
            let step = DraftStep {
                cfg: &SpeculativeConfig::chain(5),
                temperature: 0.0,
                rngs: &mut [&mut rng],
                rec: &mut NullRecorder,
                max_rows: PREFILL_CHUNK_TOKENS,
            };
            let trees = drafter.draft(&[req], step).unwrap();
            drafter.release(0);
            trees
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = steps
}
criterion_main!(benches);
