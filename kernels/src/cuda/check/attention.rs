//! The attention launch against its CPU reference (decode, tree and prefill
//! rows over one pool), its split-K forms against each other, and the
//! invariances the lossless contract needs, bit for bit: a tree row gives
//! the same bits alone or in any batch, a verify chain row the same bits as
//! the decode row with the same keys, a prefill row the same bits in any
//! tile. Run for the 8B shape (32/8 heads x 128) and tiny-llama's (8/2 x 32).

use super::{
    differing, download, normwise_error, random, row_recorder, tolerance, upload, CheckRow,
};
use crate::cpu;
use crate::cuda::{
    attention, uses_tree_kernel, AttentionKernel, AttentionScratch, Gpu, GpuElement, GpuError,
    KeyLists, KvPools, TreeStages,
};
use cudarc::driver::CudaSlice;
use rand_chacha::ChaCha8Rng;

/// One row of a check batch: its query's id and `(base, prefix, extra)`.
type Row = (usize, (usize, usize, Vec<usize>));

/// A pool of random keys and values and random queries by id.
struct Case<T: GpuElement> {
    shape: cpu::AttentionShape,
    kp: CudaSlice<T>,
    vp: CudaSlice<T>,
    kp_h: Vec<f32>,
    vp_h: Vec<f32>,
    q_h: Vec<f32>,
    scale: f32,
}

impl<T: GpuElement> Case<T> {
    fn new(
        gpu: &Gpu,
        rng: &mut ChaCha8Rng,
        shape: cpu::AttentionShape,
        entries: usize,
        queries: usize,
    ) -> Result<Self, GpuError> {
        let (kp, kp_h) = upload::<T>(gpu, &random(rng, entries * shape.kv_width(), 1.0))?;
        let (vp, vp_h) = upload::<T>(gpu, &random(rng, entries * shape.kv_width(), 1.0))?;
        let q_h = random(rng, queries * shape.n_heads * shape.head_dim, 1.0)
            .into_iter()
            .map(super::round::<T>)
            .collect();
        Ok(Case {
            shape,
            kp,
            vp,
            kp_h,
            vp_h,
            q_h,
            scale: 1.0 / (shape.head_dim as f32).sqrt(),
        })
    }

    fn qd(&self) -> usize {
        self.shape.n_heads * self.shape.head_dim
    }

    /// The GPU's outputs of `rows` (poisoned first: an unwritten value fails).
    fn gpu(
        &self,
        gpu: &Gpu,
        rows: &[Row],
        kernel: Option<AttentionKernel>,
    ) -> Result<Vec<f32>, GpuError> {
        self.gpu_split(gpu, rows, kernel, None)
    }

    /// [`Case::gpu`] with the tree kernel's splits of `tiles` 64-key tiles.
    fn gpu_split(
        &self,
        gpu: &Gpu,
        rows: &[Row],
        kernel: Option<AttentionKernel>,
        tiles: Option<usize>,
    ) -> Result<Vec<f32>, GpuError> {
        self.gpu_with(gpu, rows, kernel, tiles, true, TreeStages::Auto)
    }

    /// [`Case::gpu_split`], the tree kernel's vector sets shared between
    /// warps or not (`share`), with `stages` tiles in shared memory.
    fn gpu_with(
        &self,
        gpu: &Gpu,
        rows: &[Row],
        kernel: Option<AttentionKernel>,
        tiles: Option<usize>,
        share: bool,
        stages: TreeStages,
    ) -> Result<Vec<f32>, GpuError> {
        let qd = self.qd();
        let lists: Vec<_> = rows.iter().map(|r| r.1.clone()).collect();
        let q: Vec<f32> = rows
            .iter()
            .flat_map(|r| self.q_h[r.0 * qd..(r.0 + 1) * qd].iter().copied())
            .collect();
        let (q, _) = upload::<T>(gpu, &q)?;
        let keys = KeyLists::upload(gpu, &lists)?;
        let mut scratch = AttentionScratch::new(gpu, &keys, self.shape)?;
        if let Some(k) = kernel {
            scratch.force_kernel(k);
        }
        if let Some(t) = tiles {
            scratch.set_tree_split_tiles(t)?;
        }
        scratch.set_tree_share(share);
        scratch.set_tree_stages(stages);
        let (mut out, _) = upload::<T>(gpu, &vec![3e38; rows.len() * qd])?;
        let pools = KvPools {
            k: &self.kp,
            v: &self.vp,
            offset: 0,
        };
        attention(
            gpu,
            &mut out,
            &q,
            pools,
            &keys,
            &mut scratch,
            self.shape,
            self.scale,
        )?;
        download(gpu, &out)
    }

    /// The CPU reference of `rows`.
    fn cpu(&self, rows: &[Row]) -> Vec<f32> {
        let (qd, w) = (self.qd(), self.shape.kv_width());
        let mut want = vec![0f32; rows.len() * qd];
        for (i, (id, (base, prefix, extra))) in rows.iter().enumerate() {
            cpu::attention(
                &self.q_h[id * qd..(id + 1) * qd],
                &self.kp_h[base * w..],
                &self.vp_h[base * w..],
                cpu::KeyList {
                    prefix: *prefix,
                    extra,
                },
                self.shape,
                self.scale,
                &mut want[i * qd..(i + 1) * qd],
            );
        }
        want
    }
}

/// Checks the attention for element type `T` into `rows_out`.
pub(super) fn check_attention<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    // 16 query heads per kv head: a 40-row group's merge takes two passes.
    for (heads, kv_heads, head_dim) in [(32, 8, 128), (8, 2, 32), (32, 2, 64)] {
        let shape = cpu::AttentionShape {
            n_heads: heads,
            n_kv_heads: kv_heads,
            head_dim,
        };
        check_shape::<T>(gpu, rng, shape, rows_out)?;
    }
    Ok(())
}

fn check_shape<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    shape: cpu::AttentionShape,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let what = format!(
        "{}/{} heads x {}",
        shape.n_heads, shape.n_kv_heads, shape.head_dim
    );
    let tree_kernel = if uses_tree_kernel::<T>(shape) {
        "tree kernel"
    } else {
        "split-K kernel"
    };
    // Pool: A = prefix 1000 + a 16-node binary tree (1017 entries) at 0;
    // B = 700 decode entries at 1100; C = prefix 500 + a 6-token chain at
    // 1900; D = a 300-token prompt at 2500, E = a 70-token one at 2900.
    let (a, b, c, d, e) = (0usize, 1100usize, 1900usize, 2500usize, 2900usize);
    let case = Case::<T>::new(gpu, rng, shape, 3000, 600)?;
    let mut verify: Vec<Row> = vec![(0, (b, 699, vec![699]))];
    verify.push((1, (a, 1000, vec![1000])));
    for n in 1..=16usize {
        let mut path = vec![n];
        while let Some(&p) = path.last().filter(|&&p| p > 0) {
            path.push((p - 1) / 2);
        }
        path.reverse(); // root (node 0) .. n
        let extra = path.iter().map(|&i| 1000 + i).collect();
        verify.push((1 + n, (a, 1000, extra)));
    }
    // A decode row of 2951 keys (47 splits: more than a warp's lanes in the
    // merge) and a 40-token chain over a 64-entry prefix (its rows end in one
    // split: up to 640 (row, head) pairs for one block's merge).
    verify.push((30, (a, 2950, vec![2950])));
    for i in 0..40usize {
        verify.push((40 + i, (c, 64, (64..=64 + i).collect())));
    }
    for i in 0..6usize {
        verify.push((20 + i, (c, 500, (500..=500 + i).collect())));
    }
    let got = case.gpu(gpu, &verify, None)?;
    row(
        "attention_tree",
        format!("{} decode/verify rows (16-node tree, 40- and 6-chains, a 2951-key row), {what}, {tree_kernel}", verify.len()),
        normwise_error(&got, &case.cpu(&verify)),
        tolerance::<T>(),
    );
    // Other split lengths of the tree kernel (the timings compare them).
    if uses_tree_kernel::<T>(shape) {
        let want = case.cpu(&verify);
        let worst = [1usize, 2, 8, 16]
            .iter()
            .map(|&t| {
                Ok(normwise_error(
                    &case.gpu_split(gpu, &verify, None, Some(t))?,
                    &want,
                ))
            })
            .collect::<Result<Vec<f64>, GpuError>>()?
            .into_iter()
            .fold(0f64, f64::max);
        row(
            "attention_tree_splits",
            format!("{what}: tree kernel in splits of 1, 2, 8 and 16 tiles vs CPU (worst)"),
            worst,
            tolerance::<T>(),
        );
    }
    // Every row alone, and the batch reversed: the same bits.
    let qd = case.qd();
    let mut alone = Vec::new();
    for r in &verify {
        alone.extend(case.gpu(gpu, std::slice::from_ref(r), None)?);
    }
    let rev: Vec<Row> = verify.iter().rev().cloned().collect();
    let mut back: Vec<f32> = Vec::new();
    for chunk in case.gpu(gpu, &rev, None)?.chunks(qd).rev() {
        back.extend_from_slice(chunk);
    }
    row(
        "attention_tree_invariance",
        format!("{what}: each row alone and the batch reversed vs the batch: differing values"),
        (differing(&alone, &got) + differing(&back, &got)) as f64,
        0.0,
    );
    // Nothing shared (one warp to a set of vectors, each chain row its own
    // tiles past the prefix) against the batch: the same bits.
    let single = case.gpu_with(gpu, &verify, None, None, false, TreeStages::Auto)?;
    row(
        "attention_tree_share",
        format!("{what}: one warp a set of 16 vectors, each row its own tail tiles vs shared: differing values"),
        differing(&single, &got) as f64,
        0.0,
    );
    // Four stages of tiles in flight and two, against the launch's own
    // choice (each row alone above ran four, a large batch two): the same
    // bits.
    let four = case.gpu_with(gpu, &verify, None, None, true, TreeStages::Four)?;
    let two = case.gpu_with(gpu, &verify, None, None, true, TreeStages::Two)?;
    row(
        "attention_tree_stages",
        format!("{what}: four and two stages of tiles vs the launch's choice: differing values"),
        (differing(&four, &got) + differing(&two, &got)) as f64,
        0.0,
    );
    // The chain's rows against decode rows over the same keys (prefix 500 + i).
    let decode: Vec<Row> = (0..6usize)
        .map(|i| (20 + i, (c, 500 + i, vec![500 + i])))
        .collect();
    let chain = &got[(verify.len() - 6) * qd..];
    row(
        "attention_decode_vs_verify",
        format!("{what}: 6-token chain verify rows vs decode rows, same keys: differing values"),
        differing(&case.gpu(gpu, &decode, None)?, chain) as f64,
        0.0,
    );
    // The split-K kernel in both forms (what f32 tree rows run).
    let lean = case.gpu(gpu, &verify, Some(AttentionKernel::Lean))?;
    row(
        "attention_split_k",
        format!("{what}: split-K kernel (lean) on the verify rows vs CPU"),
        normwise_error(&lean, &case.cpu(&verify)),
        tolerance::<T>(),
    );
    row(
        "attention_ahead",
        format!("{what}: split-K loads-ahead kernel vs lean: differing values"),
        differing(
            &case.gpu(gpu, &verify, Some(AttentionKernel::Ahead))?,
            &lean,
        ) as f64,
        0.0,
    );
    // Prefill: two prompts' causal rows (and a tree row between them).
    let mut prefill: Vec<Row> = (0..300usize)
        .map(|i| (100 + i, (d, i + 1, vec![])))
        .collect();
    prefill.push((0, (b, 699, vec![699])));
    prefill.extend((0..70usize).map(|i| (400 + i, (e, i + 1, vec![]))));
    let full = case.gpu(gpu, &prefill, None)?;
    row(
        "flash_prefill",
        format!("{what}: 300- and 70-token prompts' causal rows and a decode row vs CPU"),
        normwise_error(&full, &case.cpu(&prefill)),
        tolerance::<T>(),
    );
    // Rows 100..130 of the first prompt as their own batch (other tiles).
    let part = case.gpu(gpu, &prefill[100..130], None)?;
    row(
        "flash_prefill_invariance",
        format!("{what}: prompt rows 100..130 alone vs in the whole prefill: differing values"),
        differing(&part, &full[100 * qd..130 * qd]) as f64,
        0.0,
    );
    Ok(())
}
