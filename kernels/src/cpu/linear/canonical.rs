//! The one reduction order every dot product of the CPU kernels follows,
//! written out in portable Rust: the reference the SIMD kernels match bit
//! for bit, and the kernel of machines without them.
//!
//! For `a . b` over `k` elements (docs/DESIGN.md, 6.4): one accumulator of
//! [`LANES`] lanes; element `i` of the first `k - k % LANES` is fused into
//! lane `i % LANES` with a multiply-add, in order; the last `k % LANES`
//! elements are fused into a scalar tail, in order; then the lanes are
//! summed as `((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7))` and the tail
//! is added last. The order depends on `k` alone: never on how many rows or
//! columns are computed together, on which kernel runs, or on the thread
//! count. (The SIMD kernels compute several dot products at once, one
//! accumulator register each, for instruction-level parallelism.)

/// Lanes of the accumulator.
pub const LANES: usize = 8;

/// The canonical sum of an accumulator's lanes and the tail.
#[inline]
pub fn finish(l: &[f32; LANES], tail: f32) -> f32 {
    ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7])) + tail
}

/// `a . b` in the canonical order, `b` read through `widen`.
#[inline]
fn dot_with<T: Copy>(a: &[f32], b: &[T], widen: impl Fn(T) -> f32) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0f32; LANES];
    let body = a.len() / LANES * LANES;
    for (x, y) in a[..body]
        .chunks_exact(LANES)
        .zip(b[..body].chunks_exact(LANES))
    {
        for l in 0..LANES {
            acc[l] = x[l].mul_add(widen(y[l]), acc[l]);
        }
    }
    let mut tail = 0f32;
    for (x, y) in a[body..].iter().zip(&b[body..]) {
        tail = x.mul_add(widen(*y), tail);
    }
    finish(&acc, tail)
}

/// `a . b`, both f32.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    dot_with(a, b, |v| v)
}

/// `a . b` with `b` in bfloat16 (the top half of an f32's bits).
pub fn dot_bf16(a: &[f32], b: &[u16]) -> f32 {
    dot_with(a, b, bf16_to_f32)
}

/// A bfloat16 value as f32 (exact).
#[inline]
pub fn bf16_to_f32(v: u16) -> f32 {
    f32::from_bits(u32::from(v) << 16)
}
