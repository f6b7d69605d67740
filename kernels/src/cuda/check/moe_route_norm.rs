//! The routing that runs the post-attention norm itself (`RouteInput::Norm`)
//! against the norm apart: the normed rows, the logits, the routes, and the
//! next norm's combine (which then adds the attention's output first) the
//! same bits, for one row, a few and many rows a block, with and without
//! stacked shared slices.

use super::moe::grouped_experts;
use super::moe_routing::{QWEN_ROUTER, V3_ROUTER};
use super::{differing, download, random, row_recorder, upload, CheckRow};
use crate::cuda::{
    moe_combine_norm, moe_route, moe_routes, rms_norm_residual, ExpertsOutput, Gpu, GpuElement,
    GpuError, MoePlan, RouteInput, RouterSpec,
};
use cudarc::driver::CudaSlice;
use rand_chacha::ChaCha8Rng;

/// One layer's inputs and weights on the device.
struct Layer<T> {
    residual: CudaSlice<T>,
    attn: CudaSlice<T>,
    post_w: CudaSlice<T>,
    next_w: CudaSlice<T>,
    gate: CudaSlice<T>,
    gate_up: CudaSlice<T>,
    down: CudaSlice<T>,
    hidden: usize,
    inner: usize,
}

/// What one path leaves: normed rows, logits, routes, the residual after
/// the next norm and that norm's output.
struct PathOut {
    normed: Vec<f32>,
    logits: Vec<f32>,
    ids: Vec<i32>,
    weights: Vec<f32>,
    residual: Vec<f32>,
    out: Vec<f32>,
}

/// The post-attention norm apart (`fused` false) or in the routing, then
/// the experts and the next norm's combine.
fn path<T: GpuElement>(
    gpu: &Gpu,
    sp: RouterSpec,
    l: &Layer<T>,
    rows: usize,
    fused: bool,
) -> Result<PathOut, GpuError> {
    let s = &gpu.stream;
    let (h, inner) = (l.hidden, l.inner);
    // The first `rows` rows of the layer's (the norms take exactly `rows`).
    let mut residual = s.clone_dtod(&l.residual.slice(..rows * h))?;
    let attn = s.clone_dtod(&l.attn.slice(..rows * h))?;
    let mut normed = s.alloc_zeros::<T>(rows * h)?;
    let mut plan = MoePlan::new(gpu, rows, sp)?;
    if fused {
        let input = RouteInput::Norm {
            normed: &mut normed,
            residual: &residual,
            attn: &attn,
            w: &l.post_w,
            eps: 1e-6,
        };
        moe_route(gpu, &mut plan, input, &l.gate, None, h, None)?;
    } else {
        rms_norm_residual(
            gpu,
            &mut normed,
            &mut residual,
            Some(&attn),
            &l.post_w,
            1e-6,
            h,
        )?;
        let input = RouteInput::Normed(&normed);
        moe_route(gpu, &mut plan, input, &l.gate, None, h, None)?;
    }
    let yexp = grouped_experts(gpu, &plan, &normed, (&l.gate_up, &l.down), h, inner)?;
    let mut out = s.alloc_zeros::<T>(rows * h)?;
    let yo = ExpertsOutput {
        yexp: &yexp,
        shared: None,
        plan: &plan,
        attn: fused.then_some(&attn),
    };
    moe_combine_norm(gpu, &mut out, &mut residual, yo, &l.next_w, 1e-6)?;
    let (ids, weights) = moe_routes(gpu, &plan)?;
    Ok(PathOut {
        normed: download(gpu, &normed)?,
        logits: s.clone_dtoh(&plan.logits)?,
        ids,
        weights,
        residual: download(gpu, &residual)?,
        out: download(gpu, &out)?,
    })
}

/// Checks the routing with the norm for element type `T`.
pub(super) fn check_moe_route_norm<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let v3 = RouterSpec {
        shared: 2,
        ..V3_ROUTER
    };
    let qwen = QWEN_ROUTER;
    // 40 wide: a vector a thread; 2048: four (V2-Lite's residual).
    for (sp, h, inner) in [(v3, 256, 96), (qwen, 40, 20), (v3, 2048, 64)] {
        let e = sp.stacked();
        let max_rows = 64;
        let up = |rng: &mut ChaCha8Rng, n: usize, scale: f32| -> Result<CudaSlice<T>, GpuError> {
            Ok(upload::<T>(gpu, &random(rng, n, scale))?.0)
        };
        let layer = Layer {
            residual: up(rng, max_rows * h, 2.0)?,
            attn: up(rng, max_rows * h, 1.0)?,
            post_w: up(rng, h, 1.5)?,
            next_w: up(rng, h, 1.5)?,
            gate: up(rng, sp.experts * h, 1.0 / (h as f32).sqrt())?,
            gate_up: up(rng, e * 2 * inner * h, 2.0 / (h as f32).sqrt())?,
            down: up(rng, e * h * inner, 2.0 / (inner as f32).sqrt())?,
            hidden: h,
            inner,
        };
        for rows in [1, 3, 64] {
            let apart = path(gpu, sp, &layer, rows, false)?;
            let fused = path(gpu, sp, &layer, rows, true)?;
            let words = format!(
                "{rows} rows, hidden {h}, {} experts top {} + {} shared: the norm in the routing vs apart, differing values",
                sp.experts, sp.top_k, sp.shared
            );
            let ids_diff = apart
                .ids
                .iter()
                .zip(&fused.ids)
                .filter(|(a, b)| a != b)
                .count();
            let diff = differing(&apart.normed, &fused.normed)
                + differing(&apart.logits, &fused.logits)
                + ids_diff
                + differing(&apart.weights, &fused.weights);
            row("moe_route_normed", words.clone(), diff as f64, 0.0);
            let after =
                differing(&apart.residual, &fused.residual) + differing(&apart.out, &fused.out);
            row(
                "moe_combine_norm_attn",
                format!("{words} of the next norm (residual and output)"),
                after as f64,
                0.0,
            );
        }
    }
    Ok(())
}
