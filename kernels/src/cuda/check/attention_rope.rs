//! Decode rows' RoPE and cache append inside the tree kernel
//! ([`decode_attention_with_rope`]) against the two launches it replaces
//! (`qkv_rope_append`, then `attention`), bit for bit: the attention output
//! and both pools, on fresh random pools, projections and positions, with
//! rows over one key, a split's worth and many splits, in the second layer of
//! a two-layer pool.

use super::{differing, download, random, row_recorder, upload, CheckRow};
use crate::cpu::{self, AttentionShape};
use crate::cuda::{
    attention, decode_attention_with_rope, qkv_rope_append, rope_in_attention, AttentionScratch,
    DecodeRope, Gpu, GpuElement, GpuError, KeyLists, KvPools, QkvLayout,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Entries each sequence of the check's pool holds.
const SEQ_CAP: usize = 4200;

/// The 8B's heads (32/8 x 128), tiny-llama's (8/2 x 32) and a 64-wide head.
pub(super) fn check_rope_in_attention<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    for (heads, kv_heads, head_dim) in [(32, 8, 128), (8, 2, 32), (16, 4, 64)] {
        let shape = AttentionShape {
            n_heads: heads,
            n_kv_heads: kv_heads,
            head_dim,
        };
        if !rope_in_attention::<T>(shape) {
            continue;
        }
        let layout = QkvLayout {
            heads,
            kv_heads,
            head_dim,
        };
        // Sequences' committed lengths: one key (the row's own), within one
        // split, past several.
        let prefixes = [0usize, 150, 700, 4000];
        let rows = prefixes.len();
        let kvw = kv_heads * head_dim;
        let layer = rows * SEQ_CAP * kvw;
        let k_init = random(rng, 2 * layer, 1.0);
        let v_init = random(rng, 2 * layer, 1.0);
        let (qkv, _) = upload::<T>(gpu, &random(rng, rows * (heads + 2 * kv_heads) * head_dim, 1.0))?;
        let pos: Vec<i32> = prefixes.iter().map(|_| rng.random_range(0..8000)).collect();
        let lists: Vec<(usize, usize, Vec<usize>)> = prefixes
            .iter()
            .enumerate()
            .map(|(i, &p)| (i * SEQ_CAP, p, vec![p]))
            .collect();
        let entries: Vec<i32> = lists.iter().map(|(b, p, _)| (b + p) as i32).collect();
        let keys = KeyLists::upload(gpu, &lists)?;
        let inv = cpu::Rope::new(head_dim, 10000.0, None);
        let (pos_d, inv_d, ent_d) = (
            s.clone_htod(&pos)?,
            s.clone_htod(inv.inv_freq())?,
            s.clone_htod(&entries)?,
        );
        let scale = 1.0 / (head_dim as f32).sqrt();
        // The two launches.
        let (mut ka, k_start) = upload::<T>(gpu, &k_init)?;
        let (mut va, _) = upload::<T>(gpu, &v_init)?;
        let mut q = s.alloc_zeros::<T>(rows * heads * head_dim)?;
        let mut out_a = s.alloc_zeros::<T>(rows * heads * head_dim)?;
        qkv_rope_append(
            gpu, &mut q, &mut ka, &mut va, &qkv, &pos_d, &inv_d, &ent_d, layer, layout, None,
        )?;
        let mut scratch = AttentionScratch::new(gpu, &keys, shape)?;
        let pools = KvPools {
            k: &ka,
            v: &va,
            offset: layer,
        };
        attention(gpu, &mut out_a, &q, pools, &keys, &mut scratch, shape, scale)?;
        // One launch.
        let (mut kb, _) = upload::<T>(gpu, &k_init)?;
        let (mut vb, _) = upload::<T>(gpu, &v_init)?;
        let mut out_b = s.alloc_zeros::<T>(rows * heads * head_dim)?;
        let rope = DecodeRope {
            qkv: &qkv,
            positions: &pos_d,
            inv_freq: &inv_d,
            entries: &ent_d,
        };
        decode_attention_with_rope(
            gpu, &mut out_b, rope, &mut kb, &mut vb, layer, &keys, &scratch, layout, scale,
        )?;
        let (a, b) = (download(gpu, &out_a)?, download(gpu, &out_b)?);
        let pools_differ = differing(&download(gpu, &ka)?, &download(gpu, &kb)?)
            + differing(&download(gpu, &va)?, &download(gpu, &vb)?);
        // The two launches wrote the rows' entries (nearly every value of
        // them changed), so the comparison above compared something.
        let written = differing(&download(gpu, &ka)?, &k_start) * 10 >= rows * kvw * 9;
        row(
            "attention_rope_decode",
            format!(
                "{heads}/{kv_heads} heads x {head_dim}, decode rows over 1/151/701/4001 keys: \
                 one launch vs RoPE + append then attention: differing values (output, pools){}",
                if written { "" } else { "; NO ENTRY WRITTEN" }
            ),
            (differing(&a, &b) + pools_differ + usize::from(!written)) as f64,
            0.0,
        );
    }
    Ok(())
}
