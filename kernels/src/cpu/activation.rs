//! Gated-MLP activation.

use super::expf::expf;

/// Elements whose exponentials AVX-512 computes together.
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 16;

/// `out[r, i] = silu(gate[r, i]) * up[r, i]`, written into `gate`:
/// `g / (1 + e^-g) * u` in f32 with [`expf`] (the bits of glibc's `expf`),
/// sixteen elements at a time with AVX-512; every element's operations are
/// the same in any width.
pub fn silu_and_mul(gate: &mut [f32], up: &[f32]) {
    assert_eq!(gate.len(), up.len(), "silu_and_mul: length mismatch");
    #[cfg(target_arch = "x86_64")]
    match super::DotKernel::current() {
        // SAFETY: this kernel runs only where AVX-512F, AVX2 and FMA do.
        super::DotKernel::Avx512 => return unsafe { silu_and_mul_avx512(gate, up) },
        // SAFETY: this kernel runs only where AVX2 and FMA do.
        super::DotKernel::Avx2 => return unsafe { silu_and_mul_avx2(gate, up) },
        _ => {}
    }
    silu_and_mul_portable(gate, up)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn silu_and_mul_avx2(gate: &mut [f32], up: &[f32]) {
    silu_and_mul_portable(gate, up)
}

/// [`silu_and_mul`] with AVX-512: sixteen elements at a time, their
/// exponentials as `expf_in_range` (`expf.rs`) computes them (eight f64 lanes twice,
/// the table read by two-register permutes), blocks with an input outside
/// its range element by element through [`expf`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn silu_and_mul_avx512(gate: &mut [f32], up: &[f32]) {
    use std::arch::x86_64::*;
    let table = super::expf::TABLE;
    let tab: [__m512i; 4] =
        std::array::from_fn(|q| _mm512_loadu_si512(table[q * 8..].as_ptr().cast()));
    let c = super::expf::C.map(|v| _mm512_set1_pd(f64::from_bits(v)));
    let inv = _mm512_set1_pd(f64::from_bits(super::expf::INV_LN2_32));
    let shift = _mm512_set1_pd(f64::from_bits(super::expf::SHIFT));
    let one = _mm512_set1_pd(1.0);
    // e^x of eight in-range inputs.
    let exp8 = |x: __m256| -> __m256 {
        let xd = _mm512_cvtps_pd(x);
        let kd = _mm512_fmadd_pd(inv, xd, shift);
        let ki = _mm512_castpd_si512(kd);
        let r = _mm512_fmsub_pd(inv, xd, _mm512_sub_pd(kd, shift));
        // TABLE[ki % 32]: entries 0..16 and 16..32 by bit 4 of the index.
        let low = _mm512_permutex2var_epi64(tab[0], ki, tab[1]);
        let high = _mm512_permutex2var_epi64(tab[2], ki, tab[3]);
        let upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
        let t = _mm512_mask_blend_epi64(upper, low, high);
        let s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64::<47>(ki)));
        let z = _mm512_fmadd_pd(r, c[0], c[1]);
        let r2 = _mm512_mul_pd(r, r);
        let y = _mm512_fmadd_pd(r, c[2], one);
        let y = _mm512_fmadd_pd(z, r2, y);
        _mm512_cvtpd_ps(_mm512_mul_pd(y, s))
    };
    let sign = _mm512_set1_ps(-0.0);
    let mut gs = gate.chunks_exact_mut(BLOCK);
    let mut us = up.chunks_exact(BLOCK);
    for (g, u) in (&mut gs).zip(&mut us) {
        let gv = _mm512_loadu_ps(g.as_ptr());
        let neg = _mm512_xor_ps(gv, sign);
        let top = _mm512_and_si512(
            _mm512_srli_epi32::<20>(_mm512_castps_si512(neg)),
            _mm512_set1_epi32(0x7ff),
        );
        if _mm512_cmple_epu32_mask(top, _mm512_set1_epi32(0x42a)) != 0xffff {
            for (g, u) in g.iter_mut().zip(u) {
                *g = *g / (1.0 + expf(-*g)) * u;
            }
            continue;
        }
        let lo = exp8(_mm512_castps512_ps256(neg));
        let hi = exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
            _mm512_castps_pd(neg),
        )));
        let e = _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo), hi);
        let s = _mm512_div_ps(gv, _mm512_add_ps(_mm512_set1_ps(1.0), e));
        _mm512_storeu_ps(
            g.as_mut_ptr(),
            _mm512_mul_ps(s, _mm512_loadu_ps(u.as_ptr())),
        );
    }
    for (g, u) in gs.into_remainder().iter_mut().zip(us.remainder()) {
        *g = *g / (1.0 + expf(-*g)) * u;
    }
}

/// [`silu_and_mul`] one element at a time.
#[inline(always)]
fn silu_and_mul_portable(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + expf(-*g)) * u;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_is_the_scalar_definition_with_expf() {
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32
        };
        for n in [1, 15, 16, 17, 48, 100] {
            let mut gate: Vec<f32> = (0..n).map(|_| (next() - 0.5) * 40.0).collect();
            let up: Vec<f32> = (0..n).map(|_| next() - 0.5).collect();
            // Some blocks with an input past the main range.
            if n > 20 {
                gate[3] = 95.0;
                gate[18] = -120.0;
                gate[19] = f32::INFINITY;
            }
            let want: Vec<f32> = gate
                .iter()
                .zip(&up)
                .map(|(&g, &u)| g / (1.0 + expf(-g)) * u)
                .collect();
            silu_and_mul(&mut gate, &up);
            for (i, (a, b)) in gate.iter().zip(&want).enumerate() {
                assert!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    "n = {n}, element {i}: {a} vs {b}"
                );
            }
        }
    }
}
