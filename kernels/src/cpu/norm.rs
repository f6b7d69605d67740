//! RMSNorm and residual add.

use super::dot;

/// RMSNorm of each row of `x: [rows, dim]` in place: `x * w / sqrt(mean(x^2) + eps)`.
/// The mean uses [`dot`], so the result is independent of the batch.
pub fn rms_norm(x: &mut [f32], dim: usize, weight: &[f32], eps: f32) {
    assert_eq!(weight.len(), dim, "rms_norm: weight is not [dim]");
    assert_eq!(x.len() % dim, 0, "rms_norm: x is not [rows, dim]");
    for row in x.chunks_exact_mut(dim) {
        let mean_sq = dot(row, row) / dim as f32;
        let inv = 1.0 / (mean_sq + eps).sqrt();
        for (v, w) in row.iter_mut().zip(weight) {
            *v = *v * inv * w;
        }
    }
}

/// `acc += x`, element-wise (the residual connection).
pub fn add_inplace(acc: &mut [f32], x: &[f32]) {
    assert_eq!(acc.len(), x.len(), "add_inplace: length mismatch");
    for (a, b) in acc.iter_mut().zip(x) {
        *a += b;
    }
}
