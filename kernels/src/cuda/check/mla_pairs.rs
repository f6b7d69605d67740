//! The tensor-core latent attention with rows two a block: a verify's rows
//! of one sequence stage each chunk of their cached prefix once, and each
//! row's bits must be those of the row alone (one row a block).

use super::differing;
use super::mla::QueryRow;
use super::mla_forms::{run_rows, AbsorbedCase};
use crate::cuda::{
    mla_mma_pairs, Gpu, GpuElement, GpuError, MlaAttentionForms, MLA_MMA_HEADS, MLA_SCRATCH_BYTES,
};
use crate::mla_layout::{MlaSplits, MLA_MMA_MAX_SPLITS};

/// Rows in pairs as a launch takes them: two rows of a chain (the second's
/// tree keys extend the first's), two tree siblings (their last keys
/// differ), and a row with a pair partner of another sequence; the cached
/// prefix ends two keys into a chunk. Under one-chunk splits, five-chunk
/// splits (shared chunks, then the tail chunk, in one split) and the FMA
/// form's rule: each row of the batch against the row alone, differing
/// values.
pub(super) fn check_pairs<T: GpuElement>(
    gpu: &Gpu,
    row: &mut impl FnMut(&'static str, String, f64, f64),
    case: &AbsorbedCase<'_, T>,
) -> Result<(), GpuError> {
    let tree = |pos: usize, extra: &[usize]| QueryRow {
        seq: 3,
        pos,
        prefix: 1090,
        extra: extra.to_vec(),
    };
    let queries = [
        tree(1093, &[1093]),
        tree(1096, &[1093, 1096]),
        tree(1096, &[1093, 1096]),
        tree(1099, &[1093, 1099]),
        QueryRow {
            seq: 3,
            pos: 1099,
            prefix: 1100,
            extra: vec![],
        },
        QueryRow {
            seq: 1,
            pos: 39,
            prefix: 40,
            extra: vec![],
        },
    ];
    let width = case.sh.heads * case.sh.v_dim;
    let plain = MlaAttentionForms::PLAIN;
    let rule = |cap, min_chunks| MlaSplits { cap, min_chunks };
    let mut diff = 0;
    for splits in [rule(MLA_MMA_MAX_SPLITS, 1), rule(8, 2), MlaSplits::FMA] {
        let forced = (Some(MLA_MMA_HEADS), None, Some(splits));
        let (batch, _) = run_rows(gpu, case, &queries, forced, MLA_SCRATCH_BYTES, plain)?;
        for (i, q) in queries.iter().enumerate() {
            let one = std::slice::from_ref(q);
            let (alone, _) = run_rows(gpu, case, one, forced, MLA_SCRATCH_BYTES, plain)?;
            diff += differing(&alone, &batch[i * width..(i + 1) * width]);
        }
    }
    let sh = case.sh;
    row(
        "mla_pairs",
        format!(
            "6 rows two a block ({}: a chain, tree siblings, no partner; prefix ending mid-chunk) under 128x1, 8x2 and 32x1 splits vs each row alone: differing values; {} heads, latent {} + rope {}",
            if mla_mma_pairs() { "on" } else { "off: SPECULA_MLA_PAIRS=0" },
            sh.heads,
            sh.lora,
            sh.rope
        ),
        diff as f64,
        0.0,
    );
    Ok(())
}
