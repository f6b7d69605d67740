//! How fast the CPU engine runs models/tiny-llama, as the ratios that decide
//! whether speculation can pay on a CPU (criterion, then one interleaved run).
//!
//! Speculation wins when verifying a chain of draft tokens costs little more
//! than one decode step and a draft forward costs a small part of one. So
//! this bench times, at a 128-token context:
//! - `forward/decode`: one target forward of one row (a decode step);
//! - `forward/verify6`: one target forward of a 6-token chain (steps 5);
//! - `verify6_walk2` (interleaved run only): the same forward without its
//!   head, then the head over 2 rows, as greedy verification's first round
//!   runs it on the CPU (engine/src/generate/head.rs);
//! - `forward/draft`: one EAGLE-3 draft forward of one row;
//! - `linears/{new,legacy}/m{1,6}`: every linear of one target forward, with
//!   today's kernel (bfloat16 weights) and with the kernel before issue 19
//!   (bench/src/legacy_linear.rs: scalar, f32 weights), one row and six.
//!
//! Then it runs the forwards round after round in one process (their
//! weights stay in the cache, as in a decode loop), then the linears, also
//! on paired bfloat16 weights (`pair_bf16`, which the engine does not
//! use), and prints the ratios of their medians (verify6 / decode,
//! draft / decode, legacy / new, new / paired),
//! also written to target/criterion/cpu_speed_ratios.csv.
//!
//! `cargo bench -p specula-bench --bench cpu_speed`

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use specula_bench::interleaved::{medians, Case};
use specula_bench::legacy_linear;
use specula_bench::tiny_pair::{prefill, Prefilled, CONTEXT};
use specula_engine::kv_cache::KvCache;
use specula_engine::model::{ForwardBatch, HiddenInput, TargetModel};
use specula_kernels::cpu::{default_cpu_threads, linear, pair_bf16, Matrix};
use std::time::{Duration, Instant};

/// Tokens verified at once: a chain of 5 drafted tokens after the last one.
const VERIFY_ROWS: usize = 6;

/// One target forward of `rows` new tokens after the prefill, every row's logits.
fn target_step(target: &TargetModel, cache: &mut KvCache, rows: usize) -> f32 {
    let tokens: Vec<u32> = (0..rows as u32).map(|i| 7 + i).collect();
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, CONTEXT, &tokens, CONTEXT, false);
    batch.logit_rows = (0..rows).collect();
    let out = target.forward(&batch, std::slice::from_mut(cache), &[]);
    cache.rollback();
    out.logits[0]
}

/// [`target_step`] as greedy verification runs it on the CPU: the forward
/// without its head, then the head over the first `head_rows` rows (the
/// first round of the walk, engine/src/generate/head.rs).
fn target_step_walk(
    target: &TargetModel,
    cache: &mut KvCache,
    rows: usize,
    head_rows: usize,
) -> f32 {
    let tokens: Vec<u32> = (0..rows as u32).map(|i| 7 + i).collect();
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, CONTEXT, &tokens, CONTEXT, false);
    batch.logit_rows = (0..rows).collect();
    let (_, finals) = target.forward_trunk(&batch, std::slice::from_mut(cache), &[]);
    cache.rollback();
    let h = target.config().hidden_size;
    target.head(&finals[..head_rows * h])[0]
}

/// One draft forward of one row after the prefill (a drafting step).
fn draft_step(p: &Prefilled, cache: &mut KvCache) -> f32 {
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, CONTEXT, &[7], CONTEXT, true);
    let out = p.draft.forward(
        &batch,
        HiddenInput::Own(&p.draft_hidden),
        std::slice::from_mut(cache),
    );
    cache.rollback();
    out.logits[0]
}

/// How the linears' weights are laid out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Plain bfloat16, as the engine keeps them.
    Plain,
    /// Paired bfloat16 ([`pair_bf16`]), which the engine does not use (see
    /// DESIGN.md 6.4).
    Paired,
    /// f32, through the pre-issue-19 kernel.
    Legacy,
}

/// Every linear of one target forward: `(out, in)` shapes and their weights
/// as bfloat16 (today's memory layout) and f32 (the legacy layout).
struct Linears {
    shapes: Vec<(usize, usize)>,
    bf16: Vec<Vec<u16>>,
    /// `bf16` in the paired layout ([`pair_bf16`]).
    paired: Vec<Vec<u16>>,
    f32: Vec<Vec<f32>>,
}

fn linears(target: &TargetModel) -> Linears {
    let c = target.config();
    let (h, i) = (c.hidden_size, c.intermediate_size);
    let (q, kv) = (
        c.num_attention_heads * c.head_dim,
        c.num_key_value_heads * c.head_dim,
    );
    let mut shapes = Vec::new();
    for _ in 0..c.num_hidden_layers {
        shapes.extend([(q, h), (kv, h), (kv, h), (h, q), (i, h), (i, h), (h, i)]);
    }
    shapes.push((c.vocab_size, h));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(19);
    let bf16: Vec<Vec<u16>> = shapes
        .iter()
        .map(|&(n, k)| {
            (0..n * k)
                .map(|_| (rng.random_range(-0.1f32..0.1).to_bits() >> 16) as u16)
                .collect()
        })
        .collect();
    let f32 = bf16
        .iter()
        .map(|w| {
            w.iter()
                .map(|&b| f32::from_bits(u32::from(b) << 16))
                .collect()
        })
        .collect();
    let paired = bf16
        .iter()
        .zip(&shapes)
        .map(|(w, &(_, k))| pair_bf16(w, k))
        .collect();
    Linears {
        shapes,
        bf16,
        paired,
        f32,
    }
}

impl Linears {
    /// Runs every linear on `rows` rows with today's kernel or the legacy one.
    fn run(&self, rows: usize, legacy: bool, x: &[f32], out: &mut [f32]) {
        self.run_as(
            rows,
            if legacy {
                Layout::Legacy
            } else {
                Layout::Plain
            },
            x,
            out,
        )
    }

    /// Runs every linear on `rows` rows with weights in `layout`.
    fn run_as(&self, rows: usize, layout: Layout, x: &[f32], out: &mut [f32]) {
        for (j, &(n, k)) in self.shapes.iter().enumerate() {
            let (x, out) = (&x[..rows * k], &mut out[..rows * n]);
            if layout == Layout::Legacy {
                legacy_linear::linear(x, rows, k, &self.f32[j], n, out);
            } else if layout == Layout::Paired {
                linear(
                    x,
                    rows,
                    k,
                    Matrix::Bf16Paired(&self.paired[j]),
                    n,
                    None,
                    out,
                );
            } else {
                linear(x, rows, k, Matrix::Bf16(&self.bf16[j]), n, None, out);
            }
        }
    }

    fn widest(&self) -> (usize, usize) {
        let k = self.shapes.iter().map(|s| s.1).max().unwrap_or(0);
        let n = self.shapes.iter().map(|s| s.0).max().unwrap_or(0);
        (k, n)
    }
}

fn cpu_speed(c: &mut Criterion) {
    let p = prefill();
    let lin = linears(&p.pair.target);
    let (k_max, n_max) = lin.widest();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    let x: Vec<f32> = (0..VERIFY_ROWS * k_max)
        .map(|_| rng.random_range(-1f32..1.0))
        .collect();
    let mut out = vec![0f32; VERIFY_ROWS * n_max];

    // As the engine runs: the timing thread is one of the kernels' workers.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(default_cpu_threads())
        .build()
        .expect("worker threads");
    let pool = &pool;
    let timed = |b: &mut criterion::Bencher<'_>, f: &mut (dyn FnMut() + Send)| {
        b.iter_custom(|iters| {
            pool.install(|| {
                let start = Instant::now();
                for _ in 0..iters {
                    f();
                }
                start.elapsed()
            })
        })
    };

    let mut group = c.benchmark_group("forward");
    let mut cache = p.target_cache.clone();
    group.bench_function("decode", |b| {
        timed(b, &mut || {
            target_step(&p.pair.target, &mut cache, 1);
        })
    });
    group.bench_function("verify6", |b| {
        timed(b, &mut || {
            target_step(&p.pair.target, &mut cache, VERIFY_ROWS);
        })
    });
    let mut dcache = p.draft_cache.clone();
    group.bench_function("draft", |b| {
        timed(b, &mut || {
            draft_step(&p, &mut dcache);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("linears");
    for (name, legacy) in [("new", false), ("legacy", true)] {
        for rows in [1, VERIFY_ROWS] {
            group.bench_function(format!("{name}/m{rows}"), |b| {
                timed(b, &mut || lin.run(rows, legacy, &x, &mut out))
            });
        }
    }
    group.finish();

    pool.install(|| ratios(&p, &lin, &x));
}

/// The ratios, from one interleaved run.
fn ratios(p: &Prefilled, lin: &Linears, x: &[f32]) {
    let (_, n_max) = lin.widest();
    let mut tc = p.target_cache.clone();
    let mut tc6 = p.target_cache.clone();
    let mut tc62 = p.target_cache.clone();
    let mut dc = p.draft_cache.clone();
    let (mut o1, mut o2, mut o3, mut o4, mut o5, mut o6) = (
        vec![0f32; VERIFY_ROWS * n_max],
        vec![0f32; VERIFY_ROWS * n_max],
        vec![0f32; VERIFY_ROWS * n_max],
        vec![0f32; VERIFY_ROWS * n_max],
        vec![0f32; VERIFY_ROWS * n_max],
        vec![0f32; VERIFY_ROWS * n_max],
    );
    let target = &p.pair.target;
    let mut cases = vec![
        Case {
            name: "decode",
            run: Box::new(|| {
                target_step(target, &mut tc, 1);
            }),
        },
        Case {
            name: "verify6",
            run: Box::new(|| {
                target_step(target, &mut tc6, VERIFY_ROWS);
            }),
        },
        Case {
            name: "verify6_walk2",
            run: Box::new(|| {
                target_step_walk(target, &mut tc62, VERIFY_ROWS, 2);
            }),
        },
        Case {
            name: "draft",
            run: Box::new(|| {
                draft_step(p, &mut dc);
            }),
        },
        Case {
            name: "linears_new_m1",
            run: Box::new(|| lin.run(1, false, x, &mut o1)),
        },
        Case {
            name: "linears_new_m6",
            run: Box::new(|| lin.run(VERIFY_ROWS, false, x, &mut o2)),
        },
        Case {
            name: "linears_paired_m1",
            run: Box::new(|| lin.run_as(1, Layout::Paired, x, &mut o5)),
        },
        Case {
            name: "linears_paired_m6",
            run: Box::new(|| lin.run_as(VERIFY_ROWS, Layout::Paired, x, &mut o6)),
        },
        Case {
            name: "linears_legacy_m1",
            run: Box::new(|| lin.run(1, true, x, &mut o3)),
        },
        Case {
            name: "linears_legacy_m6",
            run: Box::new(|| lin.run(VERIFY_ROWS, true, x, &mut o4)),
        },
    ];
    let names: Vec<String> = cases.iter().map(|c| c.name.to_string()).collect();
    // Two interleaved runs: the forwards among themselves, then the
    // linears. The linears' weights (48 MB with the legacy f32 copies)
    // would evict tiny-llama's 16 MB from the 32 MB L3 between forwards,
    // which a decode loop or a speculative step (target and draft, 19 MB)
    // never does; mixed, decode read 299 us against 231 us warm
    // (verify6 / decode 1.93 against 2.48), 2026-12-04 on the Zen 5 VM.
    let forwards = cases
        .iter()
        .take_while(|c| !c.name.starts_with("linears"))
        .count();
    let (fwd, lin) = cases.split_at_mut(forwards);
    let mut t = medians(fwd, 41, 20);
    t.extend(medians(lin, 41, 20));
    drop(cases);
    let at = |n: &str| t[names.iter().position(|x| x == n).expect("a case")];
    let rows = [
        ("verify6 / decode", at("verify6") / at("decode")),
        (
            "verify6, head of 2 rows / decode",
            at("verify6_walk2") / at("decode"),
        ),
        ("draft / decode", at("draft") / at("decode")),
        (
            "linears m6 / m1 (new)",
            at("linears_new_m6") / at("linears_new_m1"),
        ),
        (
            "linears m6 / m1 (legacy)",
            at("linears_legacy_m6") / at("linears_legacy_m1"),
        ),
        (
            "new / paired, linears m1",
            at("linears_new_m1") / at("linears_paired_m1"),
        ),
        (
            "new / paired, linears m6",
            at("linears_new_m6") / at("linears_paired_m6"),
        ),
        (
            "legacy / new, linears m1",
            at("linears_legacy_m1") / at("linears_new_m1"),
        ),
        (
            "legacy / new, linears m6",
            at("linears_legacy_m6") / at("linears_new_m6"),
        ),
    ];
    println!(
        "\ninterleaved medians ({} threads):",
        rayon::current_num_threads()
    );
    for (n, s) in names.iter().zip(&t) {
        println!("  {n:<20} {:>9.1} us", s * 1e6);
    }
    let mut csv = String::from("ratio,value\n");
    for (name, v) in rows {
        println!("  {name:<26} {v:.2}");
        csv.push_str(&format!("{name},{v:.4}\n"));
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("cpu_speed_ratios.csv"), csv);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = cpu_speed
}
criterion_main!(benches);
