//! Times the latent attention alone (with its `W_UV`) at long contexts, in
//! the FMA form and on tensor cores under each split rule asked, so that
//! the form and the rule for long decode and verification rows are read off
//! measurements of the kernels by themselves: a decode row and a 6-token
//! chain's verify rows per sequence over a random compressed cache, read
//! from memory (copies taken in turn, more than L2 holds).

use super::attention_timing::chain_key_lists;
use super::check::time_ms;
use super::{
    fill_uniform, mla_attention_uv, Gpu, GpuError, KeyLists, MlaAttentionForms, MlaScratch,
    MlaShape, MLA_MMA_HEADS, MLA_SCRATCH_BYTES,
};
use crate::mla_layout::MlaSplits;
use half::bf16;

/// Bytes of cache copies a case cycles through (beyond the H100's and
/// H200's 50 MB of L2).
const COLD_BYTES: usize = 256 << 20;

/// One (form, case) timing.
#[derive(Debug, Clone)]
pub struct MlaTiming {
    /// `fma` (the FMA form, heads a block by the launch's choice) or
    /// `mma/CAPxMIN` (tensor cores, at most CAP splits of at least MIN
    /// chunks).
    pub form: String,
    /// `decode` (one row per sequence) or `verify6` (a 6-token chain).
    pub case: &'static str,
    /// Sequences in the launch.
    pub sequences: usize,
    /// Cached entries each sequence's rows see before their own.
    pub context: usize,
    /// Median time over repeats, microseconds.
    pub time_us: f64,
    /// Cache bytes the launch must read (each sequence's entries once).
    pub cache_bytes: f64,
}

impl MlaTiming {
    /// Cache bytes read per second, GB/s.
    pub fn gb_s(&self) -> f64 {
        self.cache_bytes / (self.time_us * 1e-6) / 1e9
    }
}

/// Median bf16 times of `shape`'s latent attention in the FMA form and on
/// tensor cores under each of `rules`, for every case, sequence count in
/// `sequences` and context in `contexts`.
pub fn time_mla_attention(
    gpu: &Gpu,
    shape: MlaShape,
    sequences: &[usize],
    contexts: &[usize],
    rules: &[MlaSplits],
) -> Result<Vec<MlaTiming>, GpuError> {
    let (nh, d) = (shape.heads, shape.entry());
    let mut w_uv = gpu
        .stream
        .alloc_zeros::<bf16>(nh * shape.v_dim * shape.lora)?;
    fill_uniform(gpu, &mut w_uv, 21, 0.05, 0.0)?;
    let mut out = Vec::new();
    for &n_seq in sequences {
        for &ctx in contexts {
            let per_seq = ctx + 6;
            // Copies of the cache taken in turn, at least COLD_BYTES in all,
            // so that each repeat reads its cache from memory, as a layer
            // of the engine does (one copy of 8192 keys fits in L2).
            let pool_len = n_seq * per_seq * d;
            let copies = COLD_BYTES.div_ceil(pool_len * 2).max(1);
            let mut pool = gpu.stream.alloc_zeros::<bf16>(copies * pool_len)?;
            fill_uniform(gpu, &mut pool, 22, 1.0, 0.0)?;
            let cache_bytes = (pool_len * 2) as f64;
            for (case, chain) in [("decode", 1usize), ("verify6", 6)] {
                let lists = chain_key_lists(n_seq, per_seq, ctx, chain);
                let rows = lists.len();
                let keys = KeyLists::upload(gpu, &lists)?;
                let mut qcat = gpu.stream.alloc_zeros::<bf16>(rows * nh * d)?;
                fill_uniform(gpu, &mut qcat, 23, 0.1, 0.0)?;
                let mut olat = gpu.stream.alloc_zeros::<bf16>(rows * nh * shape.lora)?;
                let mut heads_out = gpu.stream.alloc_zeros::<bf16>(rows * nh * shape.v_dim)?;
                let forms = std::iter::once(None).chain(rules.iter().copied().map(Some));
                for rule in forms {
                    let mut scratch =
                        MlaScratch::with_rule::<bf16>(gpu, &keys, shape, MLA_SCRATCH_BYTES, rule)?;
                    let form = match rule {
                        None => {
                            scratch.set_mma_from(Some(usize::MAX));
                            "fma".to_string()
                        }
                        Some(r) => {
                            scratch.set_heads_per_block(Some(MLA_MMA_HEADS))?;
                            format!("mma/{}x{}", r.cap, r.min_chunks)
                        }
                    };
                    let mut turn = 0;
                    let ms = time_ms(gpu, 30, || {
                        turn = (turn + 1) % copies;
                        mla_attention_uv(
                            gpu,
                            &mut olat,
                            &mut heads_out,
                            &w_uv,
                            &qcat,
                            &pool,
                            turn * pool_len,
                            &keys,
                            &mut scratch,
                            shape,
                            0.07,
                            MlaAttentionForms::PLAIN,
                        )
                        .map(|_| ())
                    })?;
                    out.push(MlaTiming {
                        form,
                        case,
                        sequences: n_seq,
                        context: ctx,
                        time_us: ms * 1e3,
                        cache_bytes,
                    });
                }
            }
        }
    }
    Ok(out)
}
