//! bfloat16 weights in the paired layout: the same numbers as a plain
//! bfloat16 row, stored so that the x86 kernels widen sixteen of them with
//! one AND and one shift (no lane-crossing zero-extension), while computing
//! the one canonical order of [`super::canonical`].
//!
//! A row of `k` elements is cut into blocks of [`PAIR_BLOCK`] from its start.
//! In a block, 32-bit word `j` (`j` < 8) holds element `8 + j` in its low
//! half and element `j` in its high half. So a 256-bit load of a block,
//! ANDed with `0xffff0000` in every word, is elements `0..8` as f32 (the
//! canonical lanes' step for that group of eight), and the same load shifted
//! left by 16 bits is elements `8..16` (the next step). The last `k % 16`
//! elements of a row stay as they are. Pairing changes where elements lie,
//! never which multiply-adds run in which order: a paired matrix gives the
//! bits of its plain one.

use super::canonical::{bf16_to_f32, finish, LANES};

/// Elements of a row paired together: two canonical groups of eight.
pub const PAIR_BLOCK: usize = 2 * LANES;

/// Where element `i` of a `k`-element row lies in its paired copy.
#[inline]
pub fn paired_index(i: usize, k: usize) -> usize {
    let body = k / PAIR_BLOCK * PAIR_BLOCK;
    if i >= body {
        return i;
    }
    let (base, r) = (i - i % PAIR_BLOCK, i % PAIR_BLOCK);
    match r < LANES {
        true => base + 2 * r + 1,
        false => base + 2 * (r - LANES),
    }
}

/// The paired copy of `w`, rows of `k` bfloat16 elements each.
pub fn pair_bf16(w: &[u16], k: usize) -> Vec<u16> {
    assert!(
        k > 0 && w.len().is_multiple_of(k),
        "pair_bf16: w is not [n, {k}]"
    );
    let mut out = vec![0u16; w.len()];
    for (src, dst) in w.chunks_exact(k).zip(out.chunks_exact_mut(k)) {
        for (i, &v) in src.iter().enumerate() {
            dst[paired_index(i, k)] = v;
        }
    }
    out
}

/// The plain copy of a paired `w`, rows of `k` elements each.
pub fn unpair_bf16(w: &[u16], k: usize) -> Vec<u16> {
    assert!(
        k > 0 && w.len().is_multiple_of(k),
        "unpair_bf16: w is not [n, {k}]"
    );
    let mut out = vec![0u16; w.len()];
    for (src, dst) in w.chunks_exact(k).zip(out.chunks_exact_mut(k)) {
        for (i, d) in dst.iter_mut().enumerate() {
            *d = src[paired_index(i, k)];
        }
    }
    out
}

/// `a . b` in the canonical order with `b` a paired bfloat16 row (the
/// portable reference of the paired kernels).
pub fn dot_bf16_paired(a: &[f32], b: &[u16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let k = a.len();
    let mut acc = [0f32; LANES];
    let body = k / LANES * LANES;
    for (g, x) in a[..body].chunks_exact(LANES).enumerate() {
        for l in 0..LANES {
            let i = g * LANES + l;
            acc[l] = x[l].mul_add(bf16_to_f32(b[paired_index(i, k)]), acc[l]);
        }
    }
    let mut tail = 0f32;
    for (x, y) in a[body..].iter().zip(&b[body..]) {
        tail = x.mul_add(bf16_to_f32(*y), tail);
    }
    finish(&acc, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairing_is_a_permutation_undone_by_unpairing() {
        for k in [1, 8, 15, 16, 17, 24, 31, 32, 40, 256, 259] {
            let w: Vec<u16> = (0..3 * k as u16).collect();
            let p = pair_bf16(&w, k);
            assert_eq!(unpair_bf16(&p, k), w, "k = {k}");
            let mut seen = p.clone();
            seen.sort_unstable();
            assert_eq!(seen, w, "k = {k}: not a permutation");
        }
    }

    #[test]
    fn a_paired_word_holds_element_j_high_and_element_8_plus_j_low() {
        let w: Vec<u16> = (0..32).collect();
        let p = pair_bf16(&w, 32);
        for b in 0..2 {
            for j in 0..8 {
                let word = u32::from(p[b * 16 + 2 * j]) | (u32::from(p[b * 16 + 2 * j + 1]) << 16);
                assert_eq!(word >> 16, (b * 16 + j) as u32);
                assert_eq!(word & 0xffff, (b * 16 + 8 + j) as u32);
            }
        }
    }
}
