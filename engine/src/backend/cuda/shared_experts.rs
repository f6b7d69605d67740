//! Where a MoE layer's shared experts run on the GPU (`SPECULA_SHARED`):
//! as a dense MLP of their own, beside or in order with the routing and the
//! routed experts, or stacked with the routed experts as always-routed
//! expert-sized slices that the grouped launches read with them.

use crate::model::blocks::Mlp;
use specula_kernels::switch::Switch;

/// Where the shared experts run against the routing and the routed experts.
/// The dense placements give the same bits; [`SharedPlacement::Stacked`]
/// sums the shared experts' down product in slices (other bits, still
/// batch-invariant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SharedPlacement {
    /// `beside`: on the side stream, beside the routing and the routed
    /// experts ([`SharedPlacement::After`] while the clock times spans, or
    /// past the invariant linear's rows); where a layer cannot stack them.
    Beside,
    /// `before`: in the main stream, before the routing.
    Before,
    /// `between`: in the main stream, between the routing and the routed
    /// experts (their weights stream while the routing's latency runs).
    Between,
    /// `after`: in the main stream, after the routed experts.
    After,
    /// `stacked` (the default): `n_shared_experts` slices of
    /// `moe_intermediate_size`, stacked after the routed experts and routed
    /// to every row with weight 1, so each grouped launch reads the routed
    /// and the shared weights together (the shared slices' gate|up starting
    /// before the routing ends); combined after the routed experts, slice by
    /// slice. Layers whose shared width is not that (or with biases) keep
    /// theirs apart, beside. Faster than beside at batch 1 and 8 on
    /// DeepSeek-V2-Lite and Moonlight decode, the same at 32, a slower
    /// prefill (results/h200/step-2026-12-06 call 8).
    Stacked,
}

/// The placement `SPECULA_SHARED` asks for (`stacked`, the default,
/// `beside`, `before`, `between` or `after`); read once.
pub(crate) fn shared_placement() -> SharedPlacement {
    static PLACE: Switch<SharedPlacement> = Switch::new(
        "SPECULA_SHARED",
        &[
            ("beside", SharedPlacement::Beside),
            ("before", SharedPlacement::Before),
            ("between", SharedPlacement::Between),
            ("after", SharedPlacement::After),
            ("stacked", SharedPlacement::Stacked),
        ],
        SharedPlacement::Stacked,
        "stacked",
    );
    PLACE.get()
}

/// Appends the shared MLP `s` as `slices` experts of width `inner` to the
/// stacked expert weights: per slice its gate and up rows interleaved onto
/// `gate_up` (`[2 * inner, hidden]`) and its columns of down onto `down`
/// (`[hidden, inner]`). False (nothing appended) when `s` is not `slices x
/// inner` wide or has biases.
pub(crate) fn stack_shared_slices(
    s: &Mlp,
    slices: usize,
    inner: usize,
    gate_up: &mut Vec<f32>,
    down: &mut Vec<f32>,
) -> bool {
    let width = slices * inner;
    if slices == 0
        || s.gate.out_dim != width
        || s.up.out_dim != width
        || s.down.in_dim != width
        || s.gate.bias.is_some()
        || s.up.bias.is_some()
        || s.down.bias.is_some()
    {
        return false;
    }
    let hidden = s.gate.in_dim;
    let (g, u, d) = (s.gate.w.to_f32(), s.up.w.to_f32(), s.down.w.to_f32());
    for slice in 0..slices {
        let rows = slice * inner..(slice + 1) * inner;
        let span = |w: &[f32]| w[rows.start * hidden..rows.end * hidden].to_vec();
        let (gs, us) = (span(&g), span(&u));
        for (rg, ru) in gs.chunks_exact(hidden).zip(us.chunks_exact(hidden)) {
            gate_up.extend_from_slice(rg);
            gate_up.extend_from_slice(ru);
        }
        for row in d.chunks_exact(width) {
            down.extend_from_slice(&row[rows.clone()]);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::blocks::Linear;

    fn linear(out_dim: usize, in_dim: usize, base: f32) -> Linear {
        let w: Vec<f32> = (0..out_dim * in_dim).map(|i| base + i as f32).collect();
        Linear::from_weight(w, out_dim, in_dim)
    }

    /// The slices' products summed give the whole shared MLP's down input
    /// columns: slice s holds gate/up rows s*inner.. and down columns s*inner...
    #[test]
    fn shared_slices_hold_their_rows_and_columns() {
        let (hidden, inner, slices) = (3, 2, 2);
        let mlp = Mlp {
            gate: linear(4, hidden, 0.0),
            up: linear(4, hidden, 100.0),
            down: linear(hidden, 4, 1000.0),
        };
        let (mut gu, mut dn) = (vec![-1.0], vec![-2.0]);
        assert!(stack_shared_slices(&mlp, slices, inner, &mut gu, &mut dn));
        // Slice 1, its second gate row (shared row 3) and up row.
        let slice1 = 1 + 2 * inner * hidden;
        assert_eq!(
            &gu[slice1 + 2 * hidden..slice1 + 3 * hidden],
            &[9.0, 10.0, 11.0]
        );
        assert_eq!(
            &gu[slice1 + 3 * hidden..slice1 + 4 * hidden],
            &[109.0, 110.0, 111.0]
        );
        // Slice 0's down: each output row's first two columns; slice 1's the last two.
        assert_eq!(
            &dn[1..1 + hidden * inner],
            &[1000.0, 1001.0, 1004.0, 1005.0, 1008.0, 1009.0]
        );
        assert_eq!(
            &dn[1 + hidden * inner..],
            &[1002.0, 1003.0, 1006.0, 1007.0, 1010.0, 1011.0]
        );
        assert_eq!(gu.len(), 1 + slices * 2 * inner * hidden);
    }

    #[test]
    fn a_shared_mlp_of_another_width_is_not_stacked() {
        let mlp = Mlp {
            gate: linear(5, 3, 0.0),
            up: linear(5, 3, 0.0),
            down: linear(3, 5, 0.0),
        };
        let (mut gu, mut dn) = (Vec::new(), Vec::new());
        assert!(!stack_shared_slices(&mlp, 2, 2, &mut gu, &mut dn));
        assert!(gu.is_empty() && dn.is_empty());
    }
}
