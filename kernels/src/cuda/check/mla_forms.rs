//! The latent attention's forms on one prepared check case: FMA with one
//! head a block (and `W_UV` in its merge), four heads a block, tensor cores
//! where the shape fits; each against the CPU engine's decompressed form,
//! and bit for bit against itself by batch.

use super::mla::{Layer, QueryRow};
use super::mla_pairs::check_pairs;
use super::{differing, download, normwise_error, row_recorder, CheckRow};
use crate::cuda::{
    mla_attention_uv, mla_chunk, mla_head_linear, mla_mma_fits, mla_mma_rule, Gpu, GpuElement,
    GpuError, HeadProduct, HeadStrides, KeyLists, MlaAttentionForms, MlaMerge, MlaScratch,
    MlaShape, MlaUvPlace, MLA_MMA_HEADS, MLA_SCRATCH_BYTES,
};
use crate::mla_layout::{MlaSplits, MLA_MMA_MAX_SPLITS};
use cudarc::driver::CudaSlice;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Heads per block of the FMA kernel's shared-keys form.
const MLA_HEADS_FMA: usize = 4;

/// One prepared case: the layer, every row's prepared query (`qcat_all`:
/// RoPE parts) and projected query (`q`), the cache, the query rows and the
/// sequences' first cache entries.
pub(super) struct AbsorbedCase<'a, T> {
    pub(super) layer: &'a Layer<T>,
    pub(super) qcat_all: &'a CudaSlice<T>,
    pub(super) q: &'a CudaSlice<T>,
    pub(super) pool: &'a CudaSlice<T>,
    pub(super) queries: &'a [QueryRow],
    pub(super) bases: &'a [usize],
    pub(super) sh: MlaShape,
    pub(super) scale: f32,
    /// The tensor-core split rule of the case's whole batch ([`batch_rule`]).
    pub(super) rule: MlaSplits,
}

/// The tensor-core split rule of a forward over `queries` (a forward with
/// tree rows takes its own): a row alone, whose lists may read as a
/// prefill's, is compared in its batch's kind of forward, as the engine's
/// decode and verify forwards share theirs (mla-splits call 4: 650 values
/// differed under the `128` rule, a lone row of 1100 keys taking the
/// prefill's 18 splits).
pub(super) fn batch_rule(
    gpu: &Gpu,
    queries: &[QueryRow],
    bases: &[usize],
) -> Result<MlaSplits, GpuError> {
    Ok(mla_mma_rule(&KeyLists::upload(
        gpu,
        &key_lists(queries, bases),
    )?))
}

/// Each row's (cache base, cached prefix, tree entries).
fn key_lists(queries: &[QueryRow], bases: &[usize]) -> Vec<(usize, usize, Vec<usize>)> {
    queries
        .iter()
        .map(|qr| (bases[qr.seq], qr.prefix, qr.extra.clone()))
        .collect()
}

/// Checks each form of `case` against `want` (the decompressed form's
/// `[rows, heads * v]`).
pub(super) fn check_forms<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
    case: &AbsorbedCase<'_, T>,
    want: &[f32],
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let AbsorbedCase { sh, queries, .. } = *case;
    let (nh, lora, rd, nope, vd) = (sh.heads, sh.lora, sh.rope, sh.nope, sh.v_dim);
    // Each form the shape can take: FMA (one head per block; the shuffled
    // batch four), and on tensor cores where it fits.
    let mut forms = vec![(1, MLA_HEADS_FMA, "FMA")];
    if mla_mma_fits::<T>(gpu, sh) {
        forms.push((MLA_MMA_HEADS, MLA_MMA_HEADS, "tensor cores"));
    }
    let mut by_form = Vec::new();
    for (per_block, shuffled_per_block, form) in forms {
        let words = format!("{nh} heads, latent {lora} + rope {rd}, nope {nope}, v {vd}, {form}");
        // A row's output: its heads' W_UV outputs.
        let width = nh * vd;
        let run_at = |queries: &[QueryRow], per_block: usize, scratch_bytes: usize, forms| {
            run_rows::<T>(
                gpu,
                case,
                queries,
                (Some(per_block), None, None),
                scratch_bytes,
                forms,
            )
        };
        let run = |queries: &[QueryRow], per_block: usize, scratch_bytes: usize| {
            run_at(queries, per_block, scratch_bytes, MlaAttentionForms::PLAIN).map(|(out, _)| out)
        };
        let got = run(queries, per_block, MLA_SCRATCH_BYTES)?;
        by_form.push(got.clone());
        row(
            "mla_absorbed",
            format!("7 rows (decode, tree, prefill; 2 over 1100 keys) vs the decompressed form; {words}"),
            normwise_error(&got, want),
            if T::BYTES == 2 { 2e-2 } else { 1e-4 },
        );
        if per_block == 1 {
            // W_UV in the one-head launch's merging blocks: the bits of its
            // own launch after the attention (when the latent is whole
            // 16-byte slices; apart otherwise).
            let in_merge = MlaAttentionForms {
                uv: MlaUvPlace::InMerge,
                ..MlaAttentionForms::PLAIN
            };
            let (merged, ran) = run_at(queries, 1, MLA_SCRATCH_BYTES, in_merge)?;
            let slices = lora.is_multiple_of(16 / T::BYTES);
            row(
                "mla_uv_in_merge",
                format!(
                    "7 rows, W_UV in the merge ({}) vs its own launch: differing values; {words}",
                    if ran {
                        "ran"
                    } else {
                        "not taken: latent not 16-byte slices"
                    }
                ),
                if ran == slices {
                    differing(&merged, &got) as f64
                } else {
                    f64::INFINITY
                },
                0.0,
            );
            // The splits merged in clusters, W_UV apart and in the merge:
            // the first five rows (at most 70 keys; rows of 3 and 6 keys
            // leave splits empty), each of them alone, and all seven (1100
            // keys: more splits than a cluster, the last block merges),
            // against the last block's merge.
            let few = &queries[..5];
            let mut diff = 0;
            for uv in [MlaUvPlace::Apart, MlaUvPlace::InMerge] {
                let forms = MlaAttentionForms {
                    uv,
                    merge: MlaMerge::Cluster,
                    dots: 1,
                };
                let (all, _) = run_at(queries, 1, MLA_SCRATCH_BYTES, forms)?;
                diff += differing(&all, &got);
                let (some, _) = run_at(few, 1, MLA_SCRATCH_BYTES, forms)?;
                diff += differing(&some, &got[..few.len() * width]);
                for (i, qr) in few.iter().enumerate() {
                    let (one, _) = run_at(std::slice::from_ref(qr), 1, MLA_SCRATCH_BYTES, forms)?;
                    diff += differing(&one, &got[i * width..(i + 1) * width]);
                }
            }
            row(
                "mla_cluster_merge",
                format!(
                    "5 rows of up to 70 keys ({} splits a cluster), each alone, and all 7, W_UV apart and in the merge, vs the last block's merge: differing values; {words}",
                    MlaSplits::FMA.launch(70, mla_chunk::<T>())
                ),
                diff as f64,
                0.0,
            );
        }
        // Batch invariance: each row alone, and the rows in a shuffled order
        // one row per launch (a scratch of one row), give the same bits.
        let mut diff = 0;
        for (i, qr) in queries.iter().enumerate() {
            let one = run(std::slice::from_ref(qr), per_block, MLA_SCRATCH_BYTES)?;
            diff += differing(&one, &got[i * width..(i + 1) * width]);
        }
        let mut shuffled: Vec<usize> = (0..queries.len()).collect();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.random_range(0..=i));
        }
        let reordered: Vec<QueryRow> = shuffled
            .iter()
            .map(|&i| QueryRow {
                extra: queries[i].extra.clone(),
                ..queries[i]
            })
            .collect();
        let again = run(&reordered, shuffled_per_block, 1)?;
        for (j, &i) in shuffled.iter().enumerate() {
            diff += differing(
                &again[j * width..(j + 1) * width],
                &got[i * width..(i + 1) * width],
            );
        }
        row(
            "mla_batch_invariant",
            format!("each row alone and the batch shuffled ({shuffled_per_block} heads per block, a launch per row) vs the batch: differing values; {words}"),
            diff as f64,
            0.0,
        );
    }
    if let [fma, mma] = &by_form[..] {
        // Rows of 1093 and 1100 keys on tensor cores, the five short ones in FMA.
        let from = 100;
        row(
            "mla_long_rows",
            format!(
                "7 rows, those of at least {from} keys on tensor cores, the rest FMA (one launch; a launch per row, four heads a block; each long row alone) vs each form's batch: differing values; {nh} heads, latent {lora} + rope {rd}"
            ),
            mixed_rows_differ(gpu, case, from, fma, mma)? as f64,
            0.0,
        );
        split_rules(gpu, &mut row, case, want)?;
        check_pairs(gpu, &mut row, case)?;
    }
    Ok(())
}

/// The tensor-core form under split rules other than the default: many
/// one-chunk splits (the 1100-key rows' 35 chunks, 35 splits) and few
/// splits of several chunks (cap 8, at least 2 chunks: five a split), each
/// against the decompressed form, and each row alone against the batch,
/// bit for bit.
fn split_rules<T: GpuElement>(
    gpu: &Gpu,
    row: &mut impl FnMut(&'static str, String, f64, f64),
    case: &AbsorbedCase<'_, T>,
    want: &[f32],
) -> Result<(), GpuError> {
    let (queries, sh) = (case.queries, case.sh);
    let width = sh.heads * sh.v_dim;
    let plain = MlaAttentionForms::PLAIN;
    for rule in [
        MlaSplits {
            cap: MLA_MMA_MAX_SPLITS,
            min_chunks: 1,
        },
        MlaSplits {
            cap: 8,
            min_chunks: 2,
        },
    ] {
        let forced = (Some(MLA_MMA_HEADS), None, Some(rule));
        let (got, _) = run_rows(gpu, case, queries, forced, MLA_SCRATCH_BYTES, plain)?;
        let mut diff = 0;
        for (i, qr) in queries.iter().enumerate() {
            let one = std::slice::from_ref(qr);
            let (alone, _) = run_rows(gpu, case, one, forced, MLA_SCRATCH_BYTES, plain)?;
            diff += differing(&alone, &got[i * width..(i + 1) * width]);
        }
        let words = format!(
            "at most {} splits of at least {} chunks; {} heads, latent {} + rope {}",
            rule.cap, rule.min_chunks, sh.heads, sh.lora, sh.rope
        );
        row(
            "mla_split_rule",
            format!("7 rows on tensor cores vs the decompressed form; {words}"),
            normwise_error(&got, want),
            2e-2,
        );
        row(
            "mla_split_rule_invariant",
            format!("each row alone vs the batch, on tensor cores: differing values; {words}"),
            diff as f64,
            0.0,
        );
    }
    Ok(())
}

/// A forward whose rows of at least `from` keys take tensor cores and the
/// shorter ones FMA (one head a block; four with a launch per row): each
/// row's bits must be those of its own form's launch over the whole batch
/// (`fma`, `mma`), each long row alone too. Differing values.
fn mixed_rows_differ<T: GpuElement>(
    gpu: &Gpu,
    case: &AbsorbedCase<'_, T>,
    from: usize,
    fma: &[f32],
    mma: &[f32],
) -> Result<usize, GpuError> {
    let queries = case.queries;
    let width = case.sh.heads * case.sh.v_dim;
    let keys = |q: &QueryRow| q.prefix + q.extra.len();
    let want = |i: usize| {
        let form = if keys(&queries[i]) >= from { mma } else { fma };
        &form[i * width..(i + 1) * width]
    };
    let mut diff = 0;
    for (per_block, bytes) in [(1, MLA_SCRATCH_BYTES), (MLA_HEADS_FMA, 1)] {
        let plain = MlaAttentionForms::PLAIN;
        let (all, _) = run_rows(
            gpu,
            case,
            queries,
            (Some(per_block), Some(from), None),
            bytes,
            plain,
        )?;
        for i in 0..queries.len() {
            diff += differing(&all[i * width..(i + 1) * width], want(i));
        }
    }
    for (i, q) in queries.iter().enumerate().filter(|(_, q)| keys(q) >= from) {
        let one = std::slice::from_ref(q);
        let plain = MlaAttentionForms::PLAIN;
        let (alone, _) = run_rows(
            gpu,
            case,
            one,
            (Some(1), Some(from), None),
            MLA_SCRATCH_BYTES,
            plain,
        )?;
        diff += differing(&alone, want(i));
    }
    Ok(diff)
}

/// The absorbed attention of `queries` over `pool`: q_lat = W_UK^T q_nope
/// into the rows' [q_lat | q_pe], attention, W_UV (in the `forms` given);
/// `[rows, heads * v]` and whether the attention's merge ran W_UV.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_rows<T: GpuElement>(
    gpu: &Gpu,
    case: &AbsorbedCase<'_, T>,
    queries: &[QueryRow],
    (heads_per_block, mma_from, rule): (Option<usize>, Option<usize>, Option<MlaSplits>),
    scratch_bytes: usize,
    forms: MlaAttentionForms,
) -> Result<(Vec<f32>, bool), GpuError> {
    let AbsorbedCase {
        layer,
        qcat_all,
        q,
        pool,
        bases,
        sh,
        scale,
        ..
    } = *case;
    let s = &gpu.stream;
    let (nh, d, qk) = (sh.heads, sh.entry(), sh.nope + sh.rope);
    let rows = queries.len();
    // Gather the rows' prepared query RoPE parts and projected queries.
    let (qcat_h, q_h) = (s.clone_dtoh(qcat_all)?, s.clone_dtoh(q)?);
    let mut qc = Vec::with_capacity(rows * nh * d);
    let mut qs = Vec::with_capacity(rows * nh * qk);
    for qr in queries {
        let src = bases[qr.seq] + qr.pos;
        qc.extend_from_slice(&qcat_h[src * nh * d..(src + 1) * nh * d]);
        qs.extend_from_slice(&q_h[src * nh * qk..(src + 1) * nh * qk]);
    }
    let mut qcat = s.clone_htod(&qc)?;
    let qrows = s.clone_htod(&qs)?;
    mla_head_linear(
        gpu,
        &mut qcat,
        HeadStrides {
            row: nh * d,
            head: d,
        },
        &qrows,
        HeadStrides {
            row: nh * qk,
            head: qk,
        },
        &layer.w_ukt,
        HeadProduct {
            rows,
            heads: nh,
            n: sh.lora,
            k: sh.nope,
        },
        1,
    )?;
    let keys = KeyLists::upload(gpu, &key_lists(queries, bases))?;
    let rule = rule.unwrap_or(case.rule);
    let mut scratch = MlaScratch::with_rule::<T>(gpu, &keys, sh, scratch_bytes, Some(rule))?;
    scratch.set_heads_per_block(heads_per_block)?;
    scratch.set_mma_from(mma_from);
    let mut olat = s.alloc_zeros::<T>(rows * nh * sh.lora)?;
    let mut out = s.alloc_zeros::<T>(rows * nh * sh.v_dim)?;
    let merged = mla_attention_uv(
        gpu,
        &mut olat,
        &mut out,
        &layer.w_uv,
        &qcat,
        pool,
        0,
        &keys,
        &mut scratch,
        sh,
        scale,
        forms,
    )?;
    Ok((download(gpu, &out)?, merged))
}
