//! Times the decode and verification attention alone at long contexts, in
//! each kernel the engine can run for tree rows (the bf16 tree kernel at
//! 1, 2, 4, 8 and 16 tiles per split, the engine's 4 also with two and
//! with four stages of tiles in flight, and the split-K kernel), so the choice
//! between them and the KV bandwidth each reaches are read off
//! measurements: a decode row and a 6-token chain's verify rows per
//! sequence, at the contexts and sequence counts asked (cases of more than
//! [`MAX_TIMED_KEYS`] keys in all skipped).

use super::check::time_ms;
use super::timing::ModelShape;
use super::{
    attention, fill_uniform, AttentionKernel, AttentionScratch, Gpu, GpuError, KeyLists, KvPools,
    TreeStages,
};
use crate::cpu::AttentionShape;
use half::bf16;

/// One (kernel, case) timing.
#[derive(Debug, Clone)]
pub struct AttentionTiming {
    /// `tree/N` (the tree kernel, splits of N tiles of 64 keys, stages of
    /// the launch's choice), `tree/N/s2` or `tree/N/s4` (two or four
    /// stages), or `split-k`.
    pub kernel: String,
    /// `decode` (one row per sequence) or `verify6` (a 6-token chain).
    pub case: &'static str,
    /// Sequences in the launch.
    pub sequences: usize,
    /// Cached entries each sequence's rows see before their own.
    pub context: usize,
    /// Median time over repeats, microseconds.
    pub time_us: f64,
    /// The KV bytes the launch must read (each sequence's keys and values once).
    pub kv_bytes: f64,
}

impl AttentionTiming {
    /// KV bytes read per second, GB/s.
    pub fn gb_s(&self) -> f64 {
        self.kv_bytes / (self.time_us * 1e-6) / 1e9
    }
}

/// Keys (sequences x context) beyond which a case is not timed (the
/// split-K kernel's scratch grows with rows x keys).
pub const MAX_TIMED_KEYS: usize = 8 * 32768;

/// Key lists `(base, prefix, extra)` of `chain` rows a sequence for
/// `sequences` sequences `per_seq` entries apart: each row sees the
/// `context` cached entries and the chain's entries up to its own (one row:
/// a decode row).
pub(crate) fn chain_key_lists(
    sequences: usize,
    per_seq: usize,
    context: usize,
    chain: usize,
) -> Vec<(usize, usize, Vec<usize>)> {
    (0..sequences)
        .flat_map(|s| {
            (0..chain).map(move |i| (s * per_seq, context, (context..=context + i).collect()))
        })
        .collect()
}

/// Median bf16 times of `shape`'s attention for every kernel, case, batch
/// in `sequences` and context in `contexts`.
pub fn time_attention(
    gpu: &Gpu,
    shape: ModelShape,
    sequences: &[usize],
    contexts: &[usize],
) -> Result<Vec<AttentionTiming>, GpuError> {
    let ashape = AttentionShape {
        n_heads: shape.heads,
        n_kv_heads: shape.kv_heads,
        head_dim: shape.head_dim,
    };
    let width = ashape.kv_width();
    let qd = shape.heads * shape.head_dim;
    let mut out = Vec::new();
    for &n_seq in sequences {
        for &ctx in contexts {
            if n_seq * ctx > MAX_TIMED_KEYS {
                continue;
            }
            let per_seq = ctx + 6;
            let mut kp = gpu.stream.alloc_zeros::<bf16>(n_seq * per_seq * width)?;
            let mut vp = gpu.stream.alloc_zeros::<bf16>(n_seq * per_seq * width)?;
            fill_uniform(gpu, &mut kp, 11, 1.0, 0.0)?;
            fill_uniform(gpu, &mut vp, 12, 1.0, 0.0)?;
            let kv_bytes = (2 * n_seq * per_seq * width * 2) as f64;
            for (case, chain) in [("decode", 1usize), ("verify6", 6)] {
                let lists = chain_key_lists(n_seq, per_seq, ctx, chain);
                let rows = lists.len();
                let mut q = gpu.stream.alloc_zeros::<bf16>(rows * qd)?;
                fill_uniform(gpu, &mut q, 13, 1.0, 0.0)?;
                let mut o = gpu.stream.alloc_zeros::<bf16>(rows * qd)?;
                let keys = KeyLists::upload(gpu, &lists)?;
                // Splits of 1-16 tiles (the launch's choice of stages), the
                // engine's 4 with two and with four stages, split-K (0).
                let forms = [1, 2, 4, 8, 16].map(|t| (t, TreeStages::Auto));
                let stages = [
                    (4, TreeStages::Two),
                    (4, TreeStages::Four),
                    (0, TreeStages::Auto),
                ];
                for (tiles, stages) in forms.into_iter().chain(stages) {
                    let mut scratch = AttentionScratch::new(gpu, &keys, ashape)?;
                    let kernel = if tiles == 0 {
                        scratch.force_kernel(AttentionKernel::Lean);
                        "split-k".to_string()
                    } else {
                        scratch.set_tree_split_tiles(tiles)?;
                        scratch.set_tree_stages(stages);
                        match stages {
                            TreeStages::Auto => format!("tree/{tiles}"),
                            TreeStages::Two => format!("tree/{tiles}/s2"),
                            TreeStages::Four => format!("tree/{tiles}/s4"),
                        }
                    };
                    let ms = time_ms(gpu, 30, || {
                        let pools = KvPools {
                            k: &kp,
                            v: &vp,
                            offset: 0,
                        };
                        attention(gpu, &mut o, &q, pools, &keys, &mut scratch, ashape, 0.088)
                    })?;
                    out.push(AttentionTiming {
                        kernel,
                        case,
                        sequences: n_seq,
                        context: ctx,
                        time_us: ms * 1e3,
                        kv_bytes,
                    });
                }
            }
        }
    }
    Ok(out)
}
