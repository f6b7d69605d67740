//! `e^x` for f32 the way glibc (2.27 and later, from Arm's optimized
//! routines) computes `expf` on x86-64 machines with FMA: the same double
//! precision steps, so the same bits as this platform's library, written as
//! plain arithmetic that vectorizes (the gated MLP's SiLU calls it for every
//! element of every row; one libm call per element cost more than the
//! attention of a row).
//!
//! `x / ln2 * 32 = k + r` with `k` rounded to the nearest integer (ties to
//! even, by adding and subtracting 1.5 * 2^52), `2^(k / 32)` from a 32-entry
//! table with `k / 32` added to its exponent, `2^(r / 32)` by a cubic in `r`,
//! the product rounded once to f32. Inputs of magnitude 88 or more (and
//! NaN, the infinities) take the library's own special cases.

/// `2^(i / 32)` as f64 bits, less `i << 47`: for an integer `k`,
/// `f64::from_bits(TABLE[k % 32] + (k << 47))` is `2^(k / 32)`.
pub(super) const TABLE: [u64; 32] = [
    0x3ff0000000000000,
    0x3fefd9b0d3158574,
    0x3fefb5586cf9890f,
    0x3fef9301d0125b51,
    0x3fef72b83c7d517b,
    0x3fef54873168b9aa,
    0x3fef387a6e756238,
    0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb,
    0x3feedea64c123422,
    0x3feece086061892d,
    0x3feebfdad5362a27,
    0x3feeb42b569d4f82,
    0x3feeab07dd485429,
    0x3feea47eb03a5585,
    0x3feea09e667f3bcd,
    0x3fee9f75e8ec5f74,
    0x3feea11473eb0187,
    0x3feea589994cce13,
    0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5,
    0x3feec49182a3f090,
    0x3feed503b23e255d,
    0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47,
    0x3fef199bdd85529c,
    0x3fef3720dcef9069,
    0x3fef5818dcfba487,
    0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da,
    0x3fefd0765b6e4540,
];
/// `32 / ln 2` (0x1.71547652b82fep+5).
pub(super) const INV_LN2_32: u64 = 0x40471547652b82fe;
/// `1.5 * 2^52`: added and subtracted, it rounds to an integer.
pub(super) const SHIFT: u64 = 0x4338000000000000;
/// The cubic's coefficients of `r^3`, `r^2` and `r` (0x1.c6af84b912394p-20,
/// 0x1.ebfce50fac4f3p-13, 0x1.62e42ff0c52d6p-6).
pub(super) const C: [u64; 3] = [0x3ebc6af84b912394, 0x3f2ebfce50fac4f3, 0x3f962e42ff0c52d6];

/// Whether `x` takes the arithmetic of [`expf_in_range`] (magnitude below 88).
#[inline(always)]
fn in_range(x: f32) -> bool {
    (x.to_bits() >> 20) & 0x7ff <= 0x42a
}

/// `e^x` for `x` of magnitude below 88 ([`in_range`]), branch-free.
#[inline(always)]
fn expf_in_range(x: f32) -> f32 {
    let xd = x as f64;
    let inv = f64::from_bits(INV_LN2_32);
    let shift = f64::from_bits(SHIFT);
    let kd = inv.mul_add(xd, shift);
    let ki = kd.to_bits();
    let kd = kd - shift;
    let r = inv.mul_add(xd, -kd);
    let t = TABLE[(ki % 32) as usize].wrapping_add(ki << 47);
    let s = f64::from_bits(t);
    let z = r.mul_add(f64::from_bits(C[0]), f64::from_bits(C[1]));
    let r2 = r * r;
    let y = r.mul_add(f64::from_bits(C[2]), 1.0);
    let y = z.mul_add(r2, y);
    (y * s) as f32
}

/// `e^x` for any `x`, with the library's results outside `(-88, 88)`:
/// NaN for NaN, 0 for minus infinity and below `log(2^-150)`, the smallest
/// subnormal up to `log(2^-149)`, infinity above `log(2^128)`.
#[inline]
pub fn expf(x: f32) -> f32 {
    if !in_range(x) {
        if x == f32::NEG_INFINITY {
            return 0.0;
        }
        if (x.to_bits() >> 20) & 0x7ff > 0x7f7 {
            return x + x;
        }
        if x > f32::from_bits(0x42b17217) {
            return f32::INFINITY;
        }
        if x < f32::from_bits(0xc2cff1b4) {
            return 0.0;
        }
        if x < f32::from_bits(0xc2ce8ecf) {
            return f32::from_bits(1);
        }
    }
    expf_in_range(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 61st f32 bit pattern of both signs over the whole range, and
    /// the special values: the bits of this platform's `expf` (glibc with
    /// FMA; elsewhere the library computes differently).
    #[test]
    #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
    fn the_bits_of_glibc_expf() {
        if !std::arch::is_x86_feature_detected!("fma") {
            return;
        }
        let specials = [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            88.0,
            -88.0,
            88.72283,
            88.72284,
            -103.27892,
            -103.97208,
            -104.0,
            1e-30,
            -1e-30,
        ];
        let sample = (0..u32::MAX / 61).map(|i| f32::from_bits(i * 61));
        for x in specials.into_iter().chain(sample) {
            let (ours, libm) = (expf(x), x.exp());
            assert!(
                ours.to_bits() == libm.to_bits() || (ours.is_nan() && libm.is_nan()),
                "expf({x:e}) = {ours:e}, the library's {libm:e}"
            );
        }
    }
}
