//! Gated-MLP activation.

/// `out[r, i] = silu(gate[r, i]) * up[r, i]`, written into `gate`.
pub fn silu_and_mul(gate: &mut [f32], up: &[f32]) {
    assert_eq!(gate.len(), up.len(), "silu_and_mul: length mismatch");
    for (g, u) in gate.iter_mut().zip(up) {
        let s = *g / (1.0 + (-*g).exp());
        *g = s * u;
    }
}
