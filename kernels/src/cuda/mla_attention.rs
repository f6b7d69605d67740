//! The latent attention over the compressed cache (`mla_split.cu` in FMA,
//! `mla_mma.cu` on tensor cores): which form a forward takes, the split-K
//! scratch, the launch.

use super::attention::KeyLists;
use super::device::{Gpu, GpuElement, GpuError};
use super::launch::need;
use super::mla::{mla_head_linear, HeadProduct, HeadStrides, MlaShape};
use super::mla_forms::{row_forms, uv_fits_merge, MlaAttentionForms, MlaMerge, MlaUvPlace};
use super::mla_launch::{launch_rows, RowsLaunch};
use super::mla_scratch::MlaScratch;
use crate::mla_layout::{MlaSplits, MLA_MMA_MAX_SPLITS};
use crate::switch::Switch;
use cudarc::driver::CudaSlice;

/// Heads one block of the latent attention covers (`MLA_HEADS` in `mla.cu`)
/// when its launch has more than [`MLA_FEW_BLOCKS`] blocks of one head.
pub(super) const MLA_HEADS: usize = 4;

/// Blocks of one head each up to which a latent attention launch gives
/// every block one head (`mla_attention_h1`): a decode or short verify
/// forward then spreads over more of the GPU, each block with a quarter of
/// the work. Past it, four heads share each block's copy of the keys. A
/// head's sums are the same either way, so the choice may follow the rows.
const MLA_FEW_BLOCKS: usize = 1024;

/// Query heads one block of the tensor-core latent attention covers (the
/// 16 rows of mma.m16n8k16; `mla_mma.cu`).
pub const MLA_MMA_HEADS: usize = 16;

/// Where the tensor-core latent attention runs (`SPECULA_MLA`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MlaMmaUse {
    /// Every row of a forward of causal rows (prefill chunks), and the
    /// decode and verification rows of at least [`mla_long_from`] keys (the
    /// default): the FMA kernel's split-K form is faster for the few blocks
    /// of a short row, the tensor-core form reads a long row's cache once
    /// for 16 heads. A row's form follows its own key count, so a
    /// sequence's decode and verify rows at one position share one form's
    /// bits.
    PrefillAndLong,
    /// Every forward it fits (`SPECULA_MLA=mma`).
    Always,
    /// None (`SPECULA_MLA=fma`).
    Never,
}

fn mla_mma_use() -> MlaMmaUse {
    static USE: Switch<MlaMmaUse> = Switch::new(
        "SPECULA_MLA",
        &[("mma", MlaMmaUse::Always), ("fma", MlaMmaUse::Never)],
        MlaMmaUse::PrefillAndLong,
        "tensor cores for a prefill and for long rows",
    );
    USE.get()
}

/// Keys from which a decode or verification row takes the tensor-core
/// latent attention (`SPECULA_MLA_LONG`: 64, 256, 512, 1024, 2048, 4096 or
/// `off`; unset 512); read once. V2-Lite on an H100 with rows of 512 keys
/// and more on tensor cores against none: batch 1 the same at prompt 512
/// (2553 / 2546 us), 9% faster at 2048 and 25% at 8192; batch 8 6%, 18%
/// and 43% faster (results/h200/mla-long-2026-12-07, call 1).
pub fn mla_long_from() -> Option<usize> {
    static FROM: Switch<Option<usize>> = Switch::new(
        "SPECULA_MLA_LONG",
        &[
            ("64", Some(64)),
            ("256", Some(256)),
            ("512", Some(512)),
            ("1024", Some(1024)),
            ("2048", Some(2048)),
            ("4096", Some(4096)),
            ("off", None),
        ],
        Some(512),
        "512",
    );
    FROM.get()
}

/// How the tensor-core latent attention splits the keys of a decode or
/// verification row (`SPECULA_MLA_SPLITS`: `32`, `64`, `128` (unset): at
/// most that many splits of one 32-key chunk or more; `64x2`, `128x2`,
/// `128x4`: at most that many of at least 2 or 4 chunks); read once. A
/// prefill's causal rows keep the FMA form's rule ([`MlaSplits::FMA`]: its
/// many rows fill the GPU, and more splits only add partials). Every rule
/// is batch-invariant (a row's splits follow its own key count), but the
/// rules' sums differ in the last places, so one process keeps one.
/// V2-Lite decode step on an H100 (results/h200/mla-splits-2026-12-07,
/// calls 3 and 3b), `128` against `32`: batch 1 2370 / 2369 us at prompt
/// 512, 2413 / 2616 at 2048, 2758 / 3384 at 8192; batch 8 7551 / 7554,
/// 8123 / 8146 and 10230 / 9766 (128 partials a row cost 5% there).
pub fn mla_mma_splits() -> MlaSplits {
    const fn rule(cap: usize, min_chunks: usize) -> MlaSplits {
        MlaSplits { cap, min_chunks }
    }
    static SPLITS: Switch<MlaSplits> = Switch::new(
        "SPECULA_MLA_SPLITS",
        &[
            ("32", MlaSplits::FMA),
            ("64", rule(64, 1)),
            ("128", rule(MLA_MMA_MAX_SPLITS, 1)),
            ("64x2", rule(64, 2)),
            ("128x2", rule(MLA_MMA_MAX_SPLITS, 2)),
            ("128x4", rule(MLA_MMA_MAX_SPLITS, 4)),
        ],
        rule(MLA_MMA_MAX_SPLITS, 1),
        "128",
    );
    SPLITS.get()
}

/// Whether the tensor-core latent attention takes a launch's rows two a
/// block (`SPECULA_MLA_PAIRS`: `1` (unset) or `0`: one a block); read once.
/// Two rows of one sequence's tree stage each chunk of their shared cached
/// prefix once, so a verify's rows read the cache once a pair; rows that
/// share nothing walk their keys one after the other in the block. A row's
/// bits are the same either way (check rows `mla_pairs`).
pub fn mla_mma_pairs() -> bool {
    static PAIRS: Switch<bool> = Switch::new(
        "SPECULA_MLA_PAIRS",
        &[("0", false), ("1", true)],
        true,
        "on: two rows a block",
    );
    PAIRS.get()
}

/// The tensor-core form's split rule for a forward over `keys`: a forward
/// with tree rows (decode, verification) takes [`mla_mma_splits`], a
/// prefill's causal rows the FMA form's rule.
pub fn mla_mma_rule(keys: &KeyLists) -> MlaSplits {
    if keys.has_tree {
        mla_mma_splits()
    } else {
        MlaSplits::FMA
    }
}

/// Heads a block of the FMA latent attention covers, where set
/// (`SPECULA_MLA_HEADS`: 1 or 4; unset: one while the launch has at most
/// 1024 one-head blocks, else four); read once. A head's sums are the same
/// either way (check rows `mla_batch_invariant`: four heads a block against
/// one, 0 differing values), so every choice keeps the lossless invariant.
/// For measuring long rows, whose one-head blocks each read the whole cache
/// for their head alone.
pub fn mla_heads_per_block() -> Option<usize> {
    static HEADS: Switch<Option<usize>> = Switch::new(
        "SPECULA_MLA_HEADS",
        &[("1", Some(1)), ("4", Some(MLA_HEADS))],
        None,
        "one head a block up to 1024 such blocks, else four",
    );
    HEADS.get()
}

/// Whether a forward whose longest key list has `longest` keys has rows
/// that take the tensor-core latent attention as long rows (at least
/// [`mla_long_from`] keys): part of a CUDA graph's shape, since it adds that
/// form's launches.
pub fn mla_long_rows(longest: usize) -> bool {
    mla_long_from().is_some_and(|from| longest >= from)
}

/// The key count from which a row of a latent attention of `shape` in `T`
/// over `keys` runs on tensor cores (`mla_attention_mma_bf16`), or `None`
/// for none: where the shape fits ([`mla_mma_fits`]), every row of a
/// forward of causal rows and, in a forward with tree rows, the rows of at
/// least [`mla_long_from`] keys (see `MlaMmaUse`). The tensor-core form's
/// bits differ from the FMA kernel's in the last places (p is rounded to
/// bf16 for the output product); each form is batch-invariant on its own,
/// and a row's form follows its own key count alone.
pub fn mla_mma_from<T: GpuElement>(gpu: &Gpu, shape: MlaShape, keys: &KeyLists) -> Option<usize> {
    if !mla_mma_fits::<T>(gpu, shape) {
        return None;
    }
    match mla_mma_use() {
        MlaMmaUse::Always => Some(0),
        MlaMmaUse::Never => None,
        MlaMmaUse::PrefillAndLong if !keys.has_tree => Some(0),
        MlaMmaUse::PrefillAndLong => mla_long_from(),
    }
}

/// Whether `shape` in `T` can take the tensor-core latent attention: bf16
/// on sm_80+, heads a multiple of 16, an entry of at most 768 values in
/// 32-wide chunks, a latent of at most 512 values in 64-column warp slices.
pub fn mla_mma_fits<T: GpuElement>(gpu: &Gpu, shape: MlaShape) -> bool {
    let d = shape.entry();
    T::SUFFIX == "bf16"
        && gpu.arch[3..].parse::<u32>().is_ok_and(|sm| sm >= 80)
        && shape.heads.is_multiple_of(MLA_MMA_HEADS)
        && d.is_multiple_of(32)
        && d <= 768
        && shape.lora.is_multiple_of(64)
        && shape.lora <= 512
}

/// Keys one block of the latent attention covers: 16-byte-per-key slices
/// of shared memory, so 32 for bf16 and 16 for f32 (a function of the
/// element type alone: a row's splits never depend on the batch).
pub fn mla_chunk<T: GpuElement>() -> usize {
    64 / T::BYTES
}

/// The latent attention's inputs: the rows' `[q_lat | q_pe]` (`qcat: [rows,
/// heads, lora + rope]`), the layer's pool (`[entries, lora + rope]`,
/// starting `pool_offset` elements in) and each row's key list.
pub(super) struct MlaAttentionInput<'a, T> {
    pub(super) qcat: &'a CudaSlice<T>,
    pub(super) pool: &'a CudaSlice<T>,
    pub(super) pool_offset: usize,
    pub(super) keys: &'a KeyLists,
    pub(super) shape: MlaShape,
    pub(super) scale: f32,
}

/// Latent attention, `olat[r, h] = sum_e softmax_e(qcat[r, h] . entry_e *
/// scale) * latent_e` (`olat: [rows, heads, lora]`) over each row's key
/// list in the layer's pool (`[entries, lora + rope]`, starting
/// `pool_offset` elements in), then `W_UV` (`w_uv: [heads, v_dim, lora]`) of
/// it into `heads_out: [rows, heads, v_dim]`: in the attention's merging
/// blocks when `forms.uv` says so and the launch takes one head a block,
/// else as [`mla_head_linear`] after it with `forms.dots` outputs a warp; the
/// splits merged as `forms.merge` says where the launch allows (the same
/// bits every way). Whether the merge ran `W_UV`.
#[allow(clippy::too_many_arguments)]
pub fn mla_attention_uv<T: GpuElement>(
    gpu: &Gpu,
    olat: &mut CudaSlice<T>,
    heads_out: &mut CudaSlice<T>,
    w_uv: &CudaSlice<T>,
    qcat: &CudaSlice<T>,
    pool: &CudaSlice<T>,
    pool_offset: usize,
    keys: &KeyLists,
    scratch: &mut MlaScratch,
    shape: MlaShape,
    scale: f32,
    forms: MlaAttentionForms,
) -> Result<bool, GpuError> {
    let (rows, nh, lora, v) = (keys.base.len(), shape.heads, shape.lora, shape.v_dim);
    let input = MlaAttentionInput {
        qcat,
        pool,
        pool_offset,
        keys,
        shape,
        scale,
    };
    let uv = (forms.uv == MlaUvPlace::InMerge).then_some(MlaUvOut {
        w: w_uv,
        y: &mut *heads_out,
    });
    let merged = attention_launches(gpu, olat, &input, scratch, uv, forms.merge)?;
    if !merged {
        let product = HeadProduct {
            rows,
            heads: nh,
            n: v,
            k: lora,
        };
        let (ys, xs) = (
            HeadStrides {
                row: nh * v,
                head: v,
            },
            HeadStrides {
                row: nh * lora,
                head: lora,
            },
        );
        mla_head_linear(gpu, heads_out, ys, olat, xs, w_uv, product, forms.dots)?;
    }
    Ok(merged)
}

/// `W_UV` for the merging blocks: its weights and output rows.
pub(super) struct MlaUvOut<'a, T> {
    pub(super) w: &'a CudaSlice<T>,
    pub(super) y: &'a mut CudaSlice<T>,
}

/// The latent attention's launches (rows in groups the scratch holds), with
/// `W_UV` in the merge when `uv` is given and the rows fit one launch of
/// one head a block with whole 16-byte slices of latent (as
/// `mla_head_linear` reads them); whether it ran there. Each launch's
/// splits merge as `merge` says where it allows ([`merges_in_clusters`](super::mla_forms::merges_in_clusters)).
/// Each group of rows takes the FMA launch, the tensor-core launch or both
/// ([`row_forms`]), every row's blocks in one of them.
fn attention_launches<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    input: &MlaAttentionInput<'_, T>,
    scratch: &mut MlaScratch,
    uv: Option<MlaUvOut<'_, T>>,
    merge: MlaMerge,
) -> Result<bool, GpuError> {
    let MlaAttentionInput {
        qcat, keys, shape, ..
    } = *input;
    let rows = keys.base.len();
    let d = shape.entry();
    let chunk = mla_chunk::<T>();
    need(
        qcat.len() >= rows * shape.heads * d && out.len() >= rows * shape.heads * shape.lora,
        || "mla_attention: q/out sizes disagree".into(),
    )?;
    // The key count from which a row takes tensor cores: a check's forced
    // form, else the forward's (mla_mma_from). Rows below it take the FMA
    // launch, rows at or above it the tensor-core launch; a forward whose
    // longest key list is shorter has only the first (a CUDA graph's key
    // says whether its batch reached the cut: mla_long_rows).
    let mma_from = match scratch.heads_per_block {
        Some(MLA_MMA_HEADS) => Some(0),
        Some(_) => scratch.mma_from,
        None => scratch
            .mma_from
            .or_else(|| mla_mma_from::<T>(gpu, shape, keys)),
    };
    let (fma_rows, mma_rows, cut) = row_forms(mma_from, keys.longest);
    need(!mma_rows || mla_mma_fits::<T>(gpu, shape), || {
        format!(
            "mla_attention: no tensor-core form for {shape:?} in {}",
            T::SUFFIX
        )
    })?;
    // Each form's launches have as many splits as its rule gives the
    // longest row (a row's own splits are at most it) and as many rows as
    // the scratch holds at that count; they stride the scratch's slots by
    // their own splits and run one after the other (each one's partials
    // merged before the next writes), so their slots may overlap.
    let (fma_splits, mma_rule) = (MlaSplits::FMA, scratch.mma_rule(keys));
    let fma = fma_splits.launch(keys.max_keys, chunk);
    let mma = mma_rule.launch(keys.max_keys, chunk);
    let (heads, lora) = (shape.heads, shape.lora);
    let (fma_lr, mma_lr) = (
        scratch.launch_rows(heads, lora, fma),
        scratch.launch_rows(heads, lora, mma),
    );
    let fits = (!fma_rows || scratch.holds(fma_lr, heads, fma))
        && (!mma_rows || scratch.holds(mma_lr, heads, mma));
    need(fits, || {
        format!(
            "mla_attention: scratch made for other key lists ({} keys, {fma} / {mma} splits)",
            keys.max_keys
        )
    })?;
    let fma_per_block = |n: usize| match scratch.heads_per_block {
        Some(heads) if heads != MLA_MMA_HEADS => heads,
        _ => mla_heads_per_block().unwrap_or(if n * shape.heads * fma <= MLA_FEW_BLOCKS {
            1
        } else {
            MLA_HEADS
        }),
    };
    // W_UV in the merge only where every row takes the FMA launch.
    let uv = uv.filter(|_| {
        !mma_rows && uv_fits_merge(rows, fma_lr, fma_per_block(rows), shape.lora, T::BYTES)
    });
    if let Some(uv) = &uv {
        let (nh, v) = (shape.heads, shape.v_dim);
        need(
            uv.w.len() == nh * v * shape.lora && uv.y.len() >= rows * nh * v,
            || {
                format!(
                    "mla_attention: W_UV of {} values or its output of {} for {rows} rows \
                     of {nh} heads x {v}",
                    uv.w.len(),
                    uv.y.len()
                )
            },
        )?;
    }
    // The FMA launches, then the tensor-core ones (each with its merge).
    let forms = [
        fma_rows.then_some((None, fma_splits, fma, fma_lr)),
        mma_rows.then_some((Some(MLA_MMA_HEADS), mma_rule, mma, mma_lr)),
    ];
    for (heads_per_block, rule, splits, lr) in forms.into_iter().flatten() {
        for row0 in (0..rows).step_by(lr) {
            let n = lr.min(rows - row0);
            let launch = RowsLaunch {
                row0,
                rows: n,
                per_block: heads_per_block.unwrap_or_else(|| fma_per_block(n)),
                rule,
                splits,
                cut,
            };
            launch_rows(gpu, out, input, scratch, &launch, uv.as_ref(), merge)?;
        }
    }
    Ok(uv.is_some())
}
