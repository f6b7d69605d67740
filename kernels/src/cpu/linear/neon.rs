//! The canonical dot product ([`super::canonical`]) with aarch64 NEON: the
//! eight-lane accumulator of a dot product is two 128-bit registers, `R`
//! rows of `x` times `C` weight rows at once. Same operations in the same
//! order as the portable code, so the same bits.

#![allow(unsafe_op_in_unsafe_fn)]

use super::canonical::{bf16_to_f32, finish, LANES};
use std::arch::aarch64::*;

/// One group of eight lanes: low and high four.
type Group = [float32x4_t; 2];

/// Eight f32 at `p`.
#[inline]
unsafe fn f32x8(p: *const f32) -> Group {
    [vld1q_f32(p), vld1q_f32(p.add(4))]
}

/// Eight bfloat16 values at `p` as f32 lanes.
#[inline]
unsafe fn bf16x8(p: *const u16) -> Group {
    let h = vld1q_u16(p);
    [
        vreinterpretq_f32_u32(vshll_n_u16::<16>(vget_low_u16(h))),
        vreinterpretq_f32_u32(vshll_n_u16::<16>(vget_high_u16(h))),
    ]
}

/// An f32 as it is.
#[inline]
fn same(v: f32) -> f32 {
    v
}

macro_rules! block {
    ($name:ident, $t:ty, $load8:ident, $widen:ident) => {
        /// The dot products of `R` rows of `x` with `C` weight rows (all of
        /// one length): `out[r][c] = xs[r] . ws[c]`.
        #[target_feature(enable = "neon")]
        pub(super) unsafe fn $name<const R: usize, const C: usize>(
            xs: [&[f32]; R],
            ws: [&[$t]; C],
            _ahead: usize,
        ) -> [[f32; C]; R] {
            let zero: Group = [vdupq_n_f32(0.0); 2];
            let mut acc = [[zero; C]; R];
            let k = ws[0].len();
            let groups = k / LANES;
            for g in 0..groups {
                let at = g * LANES;
                let mut xv = [zero; R];
                for r in 0..R {
                    xv[r] = f32x8(xs[r].as_ptr().add(at));
                }
                for c in 0..C {
                    let wv = $load8(ws[c].as_ptr().add(at));
                    for r in 0..R {
                        acc[r][c] = [
                            vfmaq_f32(acc[r][c][0], xv[r][0], wv[0]),
                            vfmaq_f32(acc[r][c][1], xv[r][1], wv[1]),
                        ];
                    }
                }
            }
            let mut out = [[0f32; C]; R];
            for r in 0..R {
                for c in 0..C {
                    let mut tail = 0f32;
                    for i in groups * LANES..k {
                        tail = xs[r][i].mul_add($widen(ws[c][i]), tail);
                    }
                    let mut lanes = [0f32; LANES];
                    vst1q_f32(lanes.as_mut_ptr(), acc[r][c][0]);
                    vst1q_f32(lanes.as_mut_ptr().add(4), acc[r][c][1]);
                    out[r][c] = finish(&lanes, tail);
                }
            }
            out
        }
    };
}

block!(block_f32, f32, f32x8, same);
block!(block_bf16, u16, bf16x8, bf16_to_f32);
