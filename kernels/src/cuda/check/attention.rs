//! The attention launch against its CPU reference (decode, tree and prefill
//! rows over one pool), and its two kernel forms against each other.

use super::{
    differing, download, normwise_error, random, row_recorder, tolerance, upload, CheckRow,
};
use crate::cpu;
use crate::cuda::{
    attention, AttentionKernel, AttentionScratch, Gpu, GpuElement, GpuError, KeyLists, KvPools,
};
use rand_chacha::ChaCha8Rng;

/// Checks the attention for element type `T` into `rows_out`.
pub(super) fn check_attention<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    // Attention: three sequences in one pool; decode, tree and prefill rows.
    let shape = cpu::AttentionShape {
        n_heads: 32,
        n_kv_heads: 8,
        head_dim: 128,
    };
    let lens = [700usize, 300, 60];
    let bases: Vec<usize> = lens
        .iter()
        .scan(0, |acc, l| {
            let b = *acc;
            *acc += l;
            Some(b)
        })
        .collect();
    let total: usize = lens.iter().sum();
    let (kp, kp_h) = upload::<T>(gpu, &random(rng, total * shape.kv_width(), 1.0))?;
    let (vp, vp_h) = upload::<T>(gpu, &random(rng, total * shape.kv_width(), 1.0))?;
    let lists: Vec<(usize, usize, Vec<usize>)> = vec![
        (bases[0], 700, vec![]),              // decode: sees all
        (bases[1], 290, vec![290]),           // tree root
        (bases[1], 290, vec![290, 292, 295]), // tree node at depth 3
        (bases[2], 31, vec![]),               // causal prefill row
        (bases[2], 0, vec![0, 7, 59]),        // only extras
    ];
    let (q, q_h) = upload::<T>(
        gpu,
        &random(rng, lists.len() * shape.n_heads * shape.head_dim, 1.0),
    )?;
    let keys = KeyLists::upload(gpu, &lists)?;
    let scale = 1.0 / (shape.head_dim as f32).sqrt();
    let mut scratch = AttentionScratch::new(gpu, &keys, shape)?;
    // Lean, then loads ahead, on one scratch.
    let mut run = |kernel: AttentionKernel| -> Result<Vec<f32>, GpuError> {
        let mut out = s.alloc_zeros::<T>(q_h.len())?;
        let pools = KvPools {
            k: &kp,
            v: &vp,
            offset: 0,
        };
        scratch.force_kernel(kernel);
        attention(gpu, &mut out, &q, pools, &keys, &mut scratch, shape, scale)?;
        download(gpu, &out)
    };
    let first = run(AttentionKernel::Lean)?;
    let qd = shape.n_heads * shape.head_dim;
    let w = shape.kv_width();
    let mut want = vec![0f32; q_h.len()];
    for (r, (base, prefix, extra)) in lists.iter().enumerate() {
        let (kc, vc) = (&kp_h[base * w..], &vp_h[base * w..]);
        cpu::attention(
            &q_h[r * qd..(r + 1) * qd],
            kc,
            vc,
            cpu::KeyList {
                prefix: *prefix,
                extra,
            },
            shape,
            scale,
            &mut want[r * qd..(r + 1) * qd],
        );
    }
    row(
        "attention_tree",
        "5 rows (decode, tree, prefill), 32/8 heads x 128, 1060 pool entries".into(),
        normwise_error(&first, &want),
        tolerance::<T>(),
    );
    // Again on the same scratch with the loads-ahead kernel: the per-(row,
    // head) counters are back at zero, and whichever kernel ran and whichever
    // block merged, the bits are the same.
    row(
        "attention_ahead",
        "loads-ahead kernel vs lean, same scratch again: differing values".into(),
        differing(&run(AttentionKernel::Ahead)?, &first) as f64,
        0.0,
    );
    Ok(())
}
