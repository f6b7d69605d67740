//! The canonical dot products of two rows of `x` at once in one 512-bit
//! register (AVX-512): lanes 0..8 hold one row's eight-lane accumulator,
//! lanes 8..16 the next row's, against the same eight weights loaded once
//! into both halves. Each lane receives the multiply-adds of the 256-bit
//! kernels ([`super::x86`]) in the same order, so every dot product is the
//! same bits; one 512-bit multiply-add does the work of two 256-bit ones,
//! which doubles the multiply-add rate of a forward over several rows (a
//! tree verification, a draft's extend step, the head over a greedy walk's
//! rows). A single row (decode) keeps the 256-bit kernels.

#![allow(unsafe_op_in_unsafe_fn)]

use super::canonical::{bf16_to_f32, LANES};
use super::x86::finish_block;
use super::{block, DotKernel, Matrix, OutPtr};
use std::arch::x86_64::*;
use std::sync::OnceLock;

/// Whether this machine runs the row-pair kernels: AVX-512F, BW and VL. `SPECULA_ROW_PAIRS=off`
/// turns them off (the 256-bit blocks then run every row), for comparisons.
pub(super) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        DotKernel::Avx512.available()
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && crate::switch::switch(
                "SPECULA_ROW_PAIRS",
                &[("off", false), ("on", true)],
                true,
                "on",
            )
    })
}

/// Eight f32 of each of two rows, `a`'s in lanes 0..8 and `b`'s in 8..16.
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
#[inline]
unsafe fn two_rows(a: *const f32, b: *const f32) -> __m512 {
    let lo = _mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(a)));
    let hi = _mm256_castps_pd(_mm256_loadu_ps(b));
    _mm512_castpd_ps(_mm512_insertf64x4::<1>(lo, hi))
}

/// Eight f32 weights at `p` in both halves.
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
#[inline]
unsafe fn both_halves_f32(p: *const f32) -> __m512 {
    let v = _mm256_castps_pd(_mm256_loadu_ps(p));
    _mm512_castpd_ps(_mm512_broadcast_f64x4(v))
}

/// Eight bfloat16 weights at `p` widened to f32 in both halves.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
#[inline]
unsafe fn both_halves_bf16(p: *const u16) -> __m512 {
    // Both halves of a 256-bit register hold the eight words (a load),
    // zero-extended to sixteen lanes and shifted into the high halves.
    let v = _mm256_broadcastsi128_si256(_mm_loadu_si128(p.cast()));
    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(v)))
}

/// The upper eight lanes.
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
#[inline]
unsafe fn upper(a: __m512) -> __m256 {
    _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(a)))
}

macro_rules! pair_block {
    ($name:ident, $t:ty, $both:ident, $widen:ident) => {
        /// The dot products of `R = 2P` rows of `x` with `C` weight rows
        /// (all of one length): `out[r][c] = xs[r] . ws[c]`, rows `2p` and
        /// `2p + 1` sharing register `p`; with `ahead > 0`, the weight rows
        /// `ahead` elements on are prefetched.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
        unsafe fn $name<const P: usize, const R: usize, const C: usize>(
            xs: [&[f32]; R],
            ws: [&[$t]; C],
            ahead: usize,
        ) -> [[f32; C]; R] {
            assert_eq!(R, 2 * P, "pair block: R must be 2P");
            let k = ws[0].len();
            assert!(
                xs.iter().all(|x| x.len() == k) && ws.iter().all(|w| w.len() == k),
                "dot: lengths differ"
            );
            let groups = k / LANES;
            let mut acc = [[_mm512_setzero_ps(); C]; P];
            // Groups of eight in one 64-byte cache line.
            let per_line = 64 / std::mem::size_of::<$t>() / LANES;
            let mut g = 0;
            while g < groups {
                if ahead > 0 {
                    for w in ws {
                        let p = w.as_ptr().wrapping_add(ahead + g * LANES);
                        _mm_prefetch::<_MM_HINT_T0>(p.cast());
                    }
                }
                for g in g..(g + per_line).min(groups) {
                    let at = g * LANES;
                    let xv: [__m512; P] = std::array::from_fn(|p| {
                        two_rows(xs[2 * p].as_ptr().add(at), xs[2 * p + 1].as_ptr().add(at))
                    });
                    for c in 0..C {
                        let wv = $both(ws[c].as_ptr().add(at));
                        for p in 0..P {
                            acc[p][c] = _mm512_fmadd_ps(xv[p], wv, acc[p][c]);
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
            let mut halves = [[_mm256_setzero_ps(); C]; R];
            for p in 0..P {
                for c in 0..C {
                    halves[2 * p][c] = _mm512_castps512_ps256(acc[p][c]);
                    halves[2 * p + 1][c] = upper(acc[p][c]);
                }
            }
            finish_block(halves, tails)
        }
    };
}

/// An f32 as it is.
#[inline]
fn same(v: f32) -> f32 {
    v
}

pair_block!(pair_block_f32, f32, both_halves_f32, same);
pair_block!(pair_block_bf16, u16, both_halves_bf16, bf16_to_f32);

/// [`pair_block_f32`] or [`pair_block_bf16`] over weight rows `cols` of `w`
/// (plain f32 or bfloat16 rows, each `k` long).
fn pairs<const P: usize, const R: usize, const C: usize>(
    xs: [&[f32]; R],
    w: Matrix<'_>,
    k: usize,
    cols: [usize; C],
    ahead: usize,
) -> [[f32; C]; R] {
    assert!(available(), "row pairs: no AVX-512 (F, BW, VL) here");
    // SAFETY: the CPU has every feature the kernels are compiled for
    // (checked above); every slice is `k` long (checked inside).
    match w {
        Matrix::F32(w) => unsafe {
            pair_block_f32::<P, R, C>(xs, cols.map(|j| &w[j * k..(j + 1) * k]), ahead)
        },
        Matrix::Bf16(w) => unsafe {
            pair_block_bf16::<P, R, C>(xs, cols.map(|j| &w[j * k..(j + 1) * k]), ahead)
        },
        Matrix::Bf16Paired(_) => unreachable!("row pairs take plain rows"),
    }
}

/// Output columns `j0..j1` of `x W^T + bias` for all `m` rows of `x`
/// (`[m, k]`) into `out` (`[m, n]`), plain f32 or bfloat16 weights: blocks
/// of four columns times six, four or two rows (three, two or one
/// register per column: twelve accumulators at most, so that they stay in
/// registers beside the inputs), a last one or three rows by the 256-bit
/// blocks, then single columns. Every element is the canonical dot product.
#[allow(clippy::too_many_arguments)]
pub(super) fn columns(
    x: &[f32],
    m: usize,
    k: usize,
    w: Matrix<'_>,
    n: usize,
    bias: Option<&[f32]>,
    out: OutPtr,
    (j0, j1): (usize, usize),
) {
    let row = |i: usize| &x[i * k..(i + 1) * k];
    let put = |i: usize, j: usize, v: f32| {
        // SAFETY: element (i, j) lies in `out` ([m, n]); column `j` belongs
        // to this call alone, so no other thread writes it.
        unsafe { out.write(i * n + j, v + bias.map_or(0.0, |b| b[j])) }
    };
    macro_rules! rows_of {
        ($c:literal, $j:expr) => {{
            let cols: [usize; $c] = std::array::from_fn(|c| $j + c);
            let mut i = 0;
            // The next block of columns follows these in memory.
            let ahead = $c * k;
            macro_rules! rows {
                ($p:literal, $r:literal) => {
                    while m - i >= $r {
                        let xs: [&[f32]; $r] = std::array::from_fn(|r| row(i + r));
                        let v = pairs::<$p, $r, $c>(xs, w, k, cols, ahead);
                        for (r, vr) in v.iter().enumerate() {
                            for (c, &x) in vr.iter().enumerate() {
                                put(i + r, cols[c], x);
                            }
                        }
                        i += $r;
                    }
                };
            }
            rows!(3, 6);
            rows!(2, 4);
            // Two rows left: one register of two. One or three: the
            // 256-bit blocks (three as a pair and a single row measured
            // slower, reading the weights twice).
            if m - i == 2 {
                rows!(1, 2);
            }
            macro_rules! single {
                ($r:literal) => {{
                    let xs: [&[f32]; $r] = std::array::from_fn(|r| row(i + r));
                    let v = block::<$r, $c>(DotKernel::Avx512, xs, w, k, cols, ahead);
                    for (r, vr) in v.iter().enumerate() {
                        for (c, &x) in vr.iter().enumerate() {
                            put(i + r, cols[c], x);
                        }
                    }
                }};
            }
            match m - i {
                1 => single!(1),
                2 => single!(2),
                3 => single!(3),
                _ => {}
            }
        }};
    }
    let mut j = j0;
    while j + 4 <= j1 {
        rows_of!(4, j);
        j += 4;
    }
    while j < j1 {
        rows_of!(1, j);
        j += 1;
    }
}
