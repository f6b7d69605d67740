//! `e^x` for the softmax, as plain arithmetic that vectorizes: the same
//! operations (fused multiply-adds, a rounding to the nearest even integer,
//! an exponent written into the bits) give the same bits in scalar code, in
//! any SIMD width, and on any machine, where a libm call would leave the
//! softmax to the platform's library and to one element at a time.
//!
//! Range reduction `x = n ln2 + r` with `|r| <= ln2 / 2` (ln2 in two parts),
//! then Cephes' degree-6 polynomial for `e^r`, then `2^n`. Relative error
//! within 2 ulp of `f32::exp` over the softmax's range (`x <= 0`); inputs
//! below `-87.3` (where `e^x` leaves the normal floats) give `e^-87.3`, about
//! `1.2e-38`, and a NaN stays NaN.

/// The lowest input taken as it is: `2^-126` is the smallest normal float.
const LOWEST: f32 = -87.336_55;
/// `1 / ln 2`.
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// `ln 2` in two parts whose sum is exact to about 40 bits.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes `expf` polynomial coefficients, highest degree first.
const POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    0.5,
];

/// `e^x` (see the module comment for its range and accuracy).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = if x < LOWEST { LOWEST } else { x };
    let n = (x * LOG2_E).round_ties_even();
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let mut p = POLY[0];
    for c in &POLY[1..] {
        p = p.mul_add(r, *c);
    }
    let y = (p * r).mul_add(r, r) + 1.0;
    // 2^n for n in -126..=127 (x <= 88.7 keeps it finite; n = 128, from
    // larger x, gives the bits of inf). The biased exponent n + 127 (1 to
    // 255) lands in the low bits of 2^23 + n + 127, exactly, and the shift
    // drops the rest: float arithmetic that vectorizes, where a float to
    // integer cast (saturating, NaN to 0) goes one element at a time. A NaN
    // n gives 0, and `y`, a NaN then too, is the result as before.
    let n = n.clamp(-126.0, 128.0);
    let two_n = f32::from_bits(((n + 127.0) + 8_388_608.0).to_bits() << 23);
    y * two_n
}

#[cfg(test)]
mod tests {
    use super::exp;

    #[test]
    fn within_two_ulp_of_the_library_exp_over_the_softmax_range() {
        let mut worst = 0u32;
        let mut x = -87.0f32;
        while x <= 10.0 {
            let (a, b) = (exp(x), x.exp());
            let ulp = (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32;
            worst = worst.max(ulp);
            assert!(ulp <= 2, "exp({x}) = {a}, library {b}");
            x += 0.000_731;
        }
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NAN).is_nan());
        assert!(exp(f32::NEG_INFINITY) < 1.3e-38);
        assert_eq!(exp(100.0), f32::INFINITY);
    }

    /// The exponent was once written by a float-to-integer cast, which does
    /// not vectorize; the float adds that replaced it give its bits (on all
    /// 2^32 inputs when it was made; here every 257th bit pattern).
    #[test]
    fn two_to_the_n_by_float_adds_gives_the_cast_s_bits() {
        fn with_cast(x: f32) -> f32 {
            let x = if x < super::LOWEST { super::LOWEST } else { x };
            let n = (x * super::LOG2_E).round_ties_even();
            let r = n.mul_add(-super::LN2_LO, n.mul_add(-super::LN2_HI, x));
            let mut p = super::POLY[0];
            for c in &super::POLY[1..] {
                p = p.mul_add(r, *c);
            }
            let y = (p * r).mul_add(r, r) + 1.0;
            let n = n.clamp(-126.0, 128.0) as i32;
            let two_n = if n > 127 {
                f32::INFINITY
            } else {
                f32::from_bits(((n + 127) as u32) << 23)
            };
            y * two_n
        }
        for b in (0..=u32::MAX).step_by(257) {
            let x = f32::from_bits(b);
            assert_eq!(exp(x).to_bits(), with_cast(x).to_bits(), "{x:e} ({b:#x})");
        }
    }
}
