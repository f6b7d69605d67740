//! The roofline of this CPU under models/tiny-llama's forwards: what the
//! cores and caches can do at best (bench/src/roofline.rs), the linear
//! kernel's rate on weights in L1 beside it, and the floors that puts
//! under a decode step, a 6-row verify and a draft forward, counted from
//! the models' configs.
//!
//! `cargo bench -p specula-bench --bench roofline`

use specula_bench::roofline::{core_ghz, fma_bf16_widened, fma_f32_peak, read_bandwidth, Widened};
use specula_bench::tiny_pair::model_dir;
use specula_engine::config::{DraftConfig, TargetConfig};
use specula_kernels::cpu::{linear, Matrix};
use std::time::Instant;

/// Multiply-adds of one target forward row: (trunk, head); its weights
/// are one bfloat16 per multiply-add.
fn target_fmas(c: &TargetConfig) -> (f64, f64) {
    let (h, i) = (c.hidden_size, c.intermediate_size);
    let q = c.num_attention_heads * c.head_dim;
    let kv = c.num_key_value_heads * c.head_dim;
    let layer = h * q + 2 * h * kv + q * h + 3 * h * i;
    (
        (layer * c.num_hidden_layers) as f64,
        (h * c.vocab_size) as f64,
    )
}

/// Multiply-adds of one EAGLE-3 draft row after its first (no `fc`): the
/// layer over `[embedding, hidden]` and the draft head.
fn draft_fmas(c: &DraftConfig) -> f64 {
    let (h, i) = (c.hidden_size, c.intermediate_size);
    let q = c.num_attention_heads * c.head_dim;
    let kv = c.num_key_value_heads * c.head_dim;
    (2 * h * q + 2 * 2 * h * kv + q * h + 3 * h * i + h * c.draft_vocab_size) as f64
}

/// f32 multiply-adds per second of the engine's linear kernel (one
/// thread) on `rows` rows against bfloat16 weights `[64, 256]` (32 KB:
/// in L1).
fn kernel_in_l1(rows: usize) -> f64 {
    let (n, k) = (64, 256);
    let w: Vec<u16> = (0..n * k).map(|i| 0x3c00 + (i % 97) as u16).collect();
    let x: Vec<f32> = (0..rows * k).map(|i| (i % 13) as f32 * 0.01).collect();
    let mut out = vec![0f32; rows * n];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a thread");
    let calls = 20_000 / rows;
    let mut best = f64::INFINITY;
    pool.install(|| {
        for _ in 0..6 {
            let start = Instant::now();
            for _ in 0..calls {
                linear(&x, rows, k, Matrix::Bf16(&w), n, None, &mut out);
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
    });
    (calls * rows * n * k) as f64 / best
}

fn main() {
    // criterion's harness passes --bench; nothing else to parse.
    let dir = model_dir();
    let target = TargetConfig::load(&dir).expect("models/tiny-llama");
    let draft = DraftConfig::load(&dir.join("eagle3")).expect("its eagle3 draft");
    let Some(ghz) = core_ghz() else {
        println!("roofline: x86-64 only");
        return;
    };
    let g = |r: Option<f64>| r.unwrap_or(f64::NAN) / 1e9;
    let peak = g(fma_f32_peak());
    let w256 = g(fma_bf16_widened(Widened::OneRow256));
    let w512 = g(fma_bf16_widened(Widened::OneRow512));
    let w6 = g(fma_bf16_widened(Widened::SixRows512));
    let (k1, k6) = (kernel_in_l1(1) / 1e9, kernel_in_l1(6) / 1e9);
    let bw = |mb: usize, t: usize| g(read_bandwidth(mb << 20, t));
    let (l2_1, l3_1, l3_2) = (bw(1, 1), bw(16, 1), bw(16, 2));
    println!("clock {ghz:.2} GHz (dependent adds)");
    println!("per core, G multiply-adds/s (per cycle):");
    let line = |name: &str, v: f64| println!("  {name:<44} {v:>6.1} ({:>5.1})", v / ghz);
    line("f32 peak, 12 chains of 512-bit FMA", peak);
    line("bf16 widened, 1 row, 256-bit (decode kernel)", w256);
    line("bf16 widened, 1 row, 512-bit", w512);
    line("bf16 widened, 6 rows in pairs (verify kernel)", w6);
    line("engine linear, 1 row, weights in L1", k1);
    line("engine linear, 6 rows, weights in L1", k6);
    println!("read bandwidth, GB/s (bytes per cycle per core):");
    println!("  1 MB, 1 thread     {l2_1:>6.1} ({:.1})", l2_1 / ghz);
    println!("  16 MB, 1 thread    {l3_1:>6.1} ({:.1})", l3_1 / ghz);
    println!("  16 MB, 2 threads   {l3_2:>6.1} ({:.1})", l3_2 / ghz / 2.0);

    let (trunk, head) = target_fmas(&target);
    let d = draft_fmas(&draft);
    let cores = 2.0;
    // A decode row reads every weight once (2 bytes each) and multiplies
    // it once; six rows multiply each weight six times.
    let decode_bw = (trunk + head) * 2.0 / (l3_2 * 1e9);
    let decode_fma = (trunk + head) / (w512.max(w256) * 1e9 * cores);
    let decode = decode_bw.max(decode_fma);
    let verify = |head_rows: f64| (6.0 * trunk + head_rows * head) / (peak * 1e9 * cores);
    let draft_t = (d * 2.0 / (l3_2 * 1e9)).max(d / (w512.max(w256) * 1e9 * cores));
    println!(
        "tiny-llama: {:.2} M multiply-adds a decode row ({:.2} M trunk, {:.2} M head), draft row {:.2} M",
        (trunk + head) / 1e6,
        trunk / 1e6,
        head / 1e6,
        d / 1e6
    );
    println!("floors on {cores} cores (us):");
    println!(
        "  decode {:.0} (bandwidth {:.0}, widened FMA {:.0})",
        decode * 1e6,
        decode_bw * 1e6,
        decode_fma * 1e6
    );
    println!(
        "  verify6 {:.0} (head over 6 rows), {:.0} (head over 2)",
        verify(6.0) * 1e6,
        verify(2.0) * 1e6
    );
    println!("  draft {:.0}", draft_t * 1e6);
    println!(
        "  verify6 / decode at the floors: {:.2} (head over 6), {:.2} (head over 2)",
        verify(6.0) / decode,
        verify(2.0) / decode
    );
}
