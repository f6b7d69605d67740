//! The canonical dot product ([`super::canonical`]) with x86-64 SIMD: one
//! 256-bit accumulator register per dot product, `R` rows of `x` times `C`
//! weight rows at once (every weight load feeds `R` dots, every `x` load
//! `C`), and eight finished at a time through an 8 x 8 transpose whose adds
//! are the canonical ones. AVX2 + FMA, or the same code with AVX-512's
//! thirty-two registers for larger blocks. Same operations in the same
//! order as the portable code, so the same bits. Written once for f32
//! weights and once for bfloat16 weights (widened in registers: the top
//! half of an f32).

#![allow(unsafe_op_in_unsafe_fn)]

use super::canonical::{bf16_to_f32, LANES};
use super::paired::PAIR_BLOCK;
use std::arch::x86_64::*;

/// Eight f32 at `p`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn f32x8(p: *const f32) -> __m256 {
    _mm256_loadu_ps(p)
}

/// Eight bfloat16 values at `p` as f32 lanes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn bf16x8(p: *const u16) -> __m256 {
    let h = _mm_loadu_si128(p.cast());
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
}

/// An f32 as it is.
#[inline]
fn same(v: f32) -> f32 {
    v
}

/// Eight dot products from their accumulators and tails: the lanes are
/// transposed so that `t[l]` holds lane `l` of every accumulator, then
/// summed as `((t0 + t4) + (t1 + t5)) + ((t2 + t6) + (t3 + t7)) + tails`,
/// the canonical adds, eight at a time.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn finish8(a: [__m256; 8], tails: [f32; 8]) -> [f32; 8] {
    let t0 = _mm256_unpacklo_ps(a[0], a[1]);
    let t1 = _mm256_unpackhi_ps(a[0], a[1]);
    let t2 = _mm256_unpacklo_ps(a[2], a[3]);
    let t3 = _mm256_unpackhi_ps(a[2], a[3]);
    let t4 = _mm256_unpacklo_ps(a[4], a[5]);
    let t5 = _mm256_unpackhi_ps(a[4], a[5]);
    let t6 = _mm256_unpacklo_ps(a[6], a[7]);
    let t7 = _mm256_unpackhi_ps(a[6], a[7]);
    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    // Lane l of every accumulator: l = 0..4 from the low halves, 4..8 from the high.
    let l0 = _mm256_permute2f128_ps::<0x20>(u0, u4);
    let l1 = _mm256_permute2f128_ps::<0x20>(u1, u5);
    let l2 = _mm256_permute2f128_ps::<0x20>(u2, u6);
    let l3 = _mm256_permute2f128_ps::<0x20>(u3, u7);
    let l4 = _mm256_permute2f128_ps::<0x31>(u0, u4);
    let l5 = _mm256_permute2f128_ps::<0x31>(u1, u5);
    let l6 = _mm256_permute2f128_ps::<0x31>(u2, u6);
    let l7 = _mm256_permute2f128_ps::<0x31>(u3, u7);
    let s = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(l0, l4), _mm256_add_ps(l1, l5)),
        _mm256_add_ps(_mm256_add_ps(l2, l6), _mm256_add_ps(l3, l7)),
    );
    let s = _mm256_add_ps(s, _mm256_loadu_ps(tails.as_ptr()));
    let mut out = [0f32; 8];
    _mm256_storeu_ps(out.as_mut_ptr(), s);
    out
}

/// One dot product from its accumulator and tail, in the canonical order:
/// the halves added give `l0 + l4, l1 + l5, l2 + l6, l3 + l7`, then pairs,
/// then the two pair sums, then the tail.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn finish1(a: __m256, tail: f32) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
    let t = _mm_add_ps(s, _mm_movehdup_ps(s));
    let u = _mm_add_ss(t, _mm_movehl_ps(t, t));
    _mm_cvtss_f32(u) + tail
}

/// Every dot product of an `R x C` block from its accumulators and tails:
/// eight at a time through [`finish8`] (a last partial eight padded with
/// zero accumulators whose results are dropped), or one at a time when the
/// block has fewer than four. `R` and `C` are constants, so every index
/// here is too and the accumulators stay in registers.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn finish_block<const R: usize, const C: usize>(
    acc: [[__m256; C]; R],
    tails: [[f32; C]; R],
) -> [[f32; C]; R] {
    let mut out = [[0f32; C]; R];
    if R * C < 4 {
        for r in 0..R {
            for c in 0..C {
                out[r][c] = finish1(acc[r][c], tails[r][c]);
            }
        }
        return out;
    }
    let mut base = 0;
    while base < R * C {
        let at = |d: usize| ((base + d) / C, (base + d) % C);
        let a: [__m256; 8] = std::array::from_fn(|d| match base + d < R * C {
            true => acc[at(d).0][at(d).1],
            false => _mm256_setzero_ps(),
        });
        let t: [f32; 8] = std::array::from_fn(|d| match base + d < R * C {
            true => tails[at(d).0][at(d).1],
            false => 0.0,
        });
        let e = finish8(a, t);
        for (d, v) in e.into_iter().enumerate().take(R * C - base) {
            out[at(d).0][at(d).1] = v;
        }
        base += 8;
    }
    out
}

macro_rules! block {
    ($name:ident, $features:literal, $t:ty, $load8:ident, $widen:ident) => {
        /// The dot products of `R` rows of `x` with `C` weight rows (all of
        /// one length): `out[r][c] = xs[r] . ws[c]`; with `ahead > 0`, the
        /// weight rows `ahead` elements on (the next block's) are prefetched.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name<const R: usize, const C: usize>(
            xs: [&[f32]; R],
            ws: [&[$t]; C],
            ahead: usize,
        ) -> [[f32; C]; R] {
            let k = ws[0].len();
            let groups = k / LANES;
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            // Groups of eight in one 64-byte cache line.
            let per_line = 64 / std::mem::size_of::<$t>() / LANES;
            let mut g = 0;
            while g < groups {
                if ahead > 0 {
                    for w in ws {
                        // The same line of the weight row `ahead` elements on (a
                        // prefetch of an address past the matrix does nothing).
                        let p = w.as_ptr().wrapping_add(ahead + g * LANES);
                        _mm_prefetch::<_MM_HINT_T0>(p.cast());
                    }
                }
                for g in g..(g + per_line).min(groups) {
                    let at = g * LANES;
                    let xv: [__m256; R] = std::array::from_fn(|r| f32x8(xs[r].as_ptr().add(at)));
                    for c in 0..C {
                        let wv = $load8(ws[c].as_ptr().add(at));
                        for r in 0..R {
                            acc[r][c] = _mm256_fmadd_ps(xv[r], wv, acc[r][c]);
                        }
                    }
                }
                g += per_line;
            }
            let mut tails = [[0f32; C]; R];
            for r in 0..R {
                for c in 0..C {
                    for i in groups * LANES..k {
                        tails[r][c] = xs[r][i].mul_add($widen(ws[c][i]), tails[r][c]);
                    }
                }
            }
            finish_block(acc, tails)
        }
    };
}

/// The words of a paired block ([`super::paired`]) whose high halves are
/// the block's first eight elements.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn high_halves() -> __m256i {
    _mm256_set1_epi32(0xffff_0000_u32 as i32)
}

macro_rules! paired_block {
    ($name:ident, $features:literal) => {
        /// [`block!`]'s dot products for paired bfloat16 weight rows
        /// ([`super::paired`]): each 256-bit load of sixteen weights is
        /// widened by an AND (elements 0..8, the first group's step) and a
        /// shift (elements 8..16, the next group's), the same multiply-adds
        /// in the same order as a plain row's.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name<const R: usize, const C: usize>(
            xs: [&[f32]; R],
            ws: [&[u16]; C],
            ahead: usize,
        ) -> [[f32; C]; R] {
            let k = ws[0].len();
            let blocks = k / PAIR_BLOCK;
            let mask = high_halves();
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            for b in 0..blocks {
                let at = b * PAIR_BLOCK;
                // Two blocks in one 64-byte cache line: prefetch the line
                // `ahead` elements on once per line.
                if ahead > 0 && b % 2 == 0 {
                    for w in ws {
                        let p = w.as_ptr().wrapping_add(ahead + at);
                        _mm_prefetch::<_MM_HINT_T0>(p.cast());
                    }
                }
                let xv: [__m256; R] = std::array::from_fn(|r| f32x8(xs[r].as_ptr().add(at)));
                for c in 0..C {
                    let v = _mm256_loadu_si256(ws[c].as_ptr().add(at).cast());
                    let wv = _mm256_castsi256_ps(_mm256_and_si256(v, mask));
                    for r in 0..R {
                        acc[r][c] = _mm256_fmadd_ps(xv[r], wv, acc[r][c]);
                    }
                }
                let xv: [__m256; R] =
                    std::array::from_fn(|r| f32x8(xs[r].as_ptr().add(at + LANES)));
                for c in 0..C {
                    let v = _mm256_loadu_si256(ws[c].as_ptr().add(at).cast());
                    let wv = _mm256_castsi256_ps(_mm256_slli_epi32::<16>(v));
                    for r in 0..R {
                        acc[r][c] = _mm256_fmadd_ps(xv[r], wv, acc[r][c]);
                    }
                }
            }
            // A last group of eight past the blocks, as it is.
            let mut done = blocks * PAIR_BLOCK;
            if k - done >= LANES {
                let xv: [__m256; R] = std::array::from_fn(|r| f32x8(xs[r].as_ptr().add(done)));
                for c in 0..C {
                    let wv = bf16x8(ws[c].as_ptr().add(done));
                    for r in 0..R {
                        acc[r][c] = _mm256_fmadd_ps(xv[r], wv, acc[r][c]);
                    }
                }
                done += LANES;
            }
            let mut tails = [[0f32; C]; R];
            for r in 0..R {
                for c in 0..C {
                    for i in done..k {
                        tails[r][c] = xs[r][i].mul_add(bf16_to_f32(ws[c][i]), tails[r][c]);
                    }
                }
            }
            finish_block(acc, tails)
        }
    };
}

paired_block!(block_avx2_bf16_paired, "avx2,fma");
paired_block!(block_avx512_bf16_paired, "avx512f,avx512vl,avx2,fma");

block!(block_avx2_f32, "avx2,fma", f32, f32x8, same);
block!(block_avx2_bf16, "avx2,fma", u16, bf16x8, bf16_to_f32);
block!(
    block_avx512_f32,
    "avx512f,avx512vl,avx2,fma",
    f32,
    f32x8,
    same
);
block!(
    block_avx512_bf16,
    "avx512f,avx512vl,avx2,fma",
    u16,
    bf16x8,
    bf16_to_f32
);
