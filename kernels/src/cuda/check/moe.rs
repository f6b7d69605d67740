//! The mixture-of-experts kernels against CPU references: router logits,
//! the routing (on the device's own logits: the same experts exactly), the
//! grouped expert products with the combine (each row's experts summed in
//! ascending id, the shared output added; fused into the next RMSNorm, the
//! same bits), and batch invariance bit for bit (a row alone, in other
//! batches, and with many rows per expert).

use super::moe_routing::{route_ref, QWEN_ROUTER, V2_LITE_ROUTER, V2_ROUTER, V3_ROUTER};
use super::{differing, download, normwise_error, random, round, row_recorder, upload, CheckRow};
use crate::cuda::{
    moe_combine, moe_combine_norm, moe_grouped, moe_route, moe_routes, rms_norm_residual,
    ExpertProduct, ExpertWeights, ExpertsOutput, Gpu, GpuElement, GpuError, MoePlan, OneRowRouting,
    RouteInput, RouterSpec,
};
use cudarc::driver::CudaSlice;
use rand_chacha::ChaCha8Rng;

/// A layer's experts on the device and on the host.
struct Experts<T> {
    gate: CudaSlice<T>,
    bias: Option<CudaSlice<f32>>,
    gate_up: CudaSlice<T>,
    down: CudaSlice<T>,
    shared: CudaSlice<T>,
    gate_h: Vec<f32>,
    bias_h: Option<Vec<f32>>,
    gate_up_h: Vec<f32>,
    down_h: Vec<f32>,
    hidden: usize,
    inner: usize,
}

/// What one MoE run gives back: logits, each row's experts and weights, the
/// output, and the values where the combine fused into an RMSNorm differs
/// from the combine and then the norm.
struct MoeRun {
    logits: Vec<f32>,
    ids: Vec<i32>,
    weights: Vec<f32>,
    out: Vec<f32>,
    fused_diff: usize,
    /// Expert outputs differing between the grouped launches' two L2 forms.
    l2_diff: usize,
}

/// The grouped gate|up (with SiLU) of `x` and the grouped down of that for
/// every pair of `plan`, by stacked `(gate_up, down)` weights: each route's
/// expert output, `[pairs, h]`.
pub(super) fn grouped_experts<T: GpuElement>(
    gpu: &Gpu,
    plan: &MoePlan,
    x: &CudaSlice<T>,
    (gate_up, down): (&CudaSlice<T>, &CudaSlice<T>),
    h: usize,
    inner: usize,
) -> Result<CudaSlice<T>, GpuError> {
    let s = &gpu.stream;
    let pairs = plan.pairs();
    let mut act = s.alloc_zeros::<T>(pairs * inner)?;
    let gu = ExpertWeights {
        w: gate_up,
        n: 2 * inner,
        k: h,
    };
    moe_grouped(
        gpu,
        &mut act,
        x,
        gu,
        plan,
        ExpertProduct::GateUp,
        Some(down),
    )?;
    let mut yexp = s.alloc_zeros::<T>(pairs * h)?;
    let dn = ExpertWeights {
        w: down,
        n: h,
        k: inner,
    };
    moe_grouped(gpu, &mut yexp, &act, dn, plan, ExpertProduct::Down, None)?;
    Ok(yexp)
}

/// Routes `x` (`rows` rows) and runs the experts.
fn run<T: GpuElement>(
    gpu: &Gpu,
    sp: RouterSpec,
    ex: &Experts<T>,
    x: &CudaSlice<T>,
    shared: Option<&CudaSlice<T>>,
    rows: usize,
) -> Result<MoeRun, GpuError> {
    let s = &gpu.stream;
    let (h, inner) = (ex.hidden, ex.inner);
    let mut plan = MoePlan::new(gpu, rows, sp)?;
    moe_route(
        gpu,
        &mut plan,
        RouteInput::Normed(x),
        &ex.gate,
        ex.bias.as_ref(),
        h,
        None,
    )?;
    let yexp = grouped_experts(gpu, &plan, x, (&ex.gate_up, &ex.down), h, inner)?;
    // The grouped launches' other L2 form (streamed weights, the shared
    // slices' down asked of L2 early): the same bits.
    plan.l2_ahead = !plan.l2_ahead;
    let other = grouped_experts(gpu, &plan, x, (&ex.gate_up, &ex.down), h, inner)?;
    plan.l2_ahead = !plan.l2_ahead;
    let l2_diff = differing(&download(gpu, &yexp)?, &download(gpu, &other)?);
    let mut out = s.alloc_zeros::<T>(rows * h)?;
    moe_combine(gpu, &mut out, &yexp, shared, &plan, h)?;
    // The combine into the next RMSNorm, one launch or two: x itself as the
    // residual, the shared output's first row as the norm's weight.
    let norm_w = s.clone_dtod(&ex.shared.slice(..h))?;
    let (mut res_a, mut res_b) = (s.clone_dtod(x)?, s.clone_dtod(x)?);
    let (mut norm_a, mut norm_b) = (s.alloc_zeros::<T>(rows * h)?, s.alloc_zeros::<T>(rows * h)?);
    rms_norm_residual(gpu, &mut norm_a, &mut res_a, Some(&out), &norm_w, 1e-6, h)?;
    let yo = ExpertsOutput {
        yexp: &yexp,
        shared,
        plan: &plan,
        attn: None,
    };
    moe_combine_norm(gpu, &mut norm_b, &mut res_b, yo, &norm_w, 1e-6)?;
    let fused_diff = differing(&download(gpu, &norm_a)?, &download(gpu, &norm_b)?)
        + differing(&download(gpu, &res_a)?, &download(gpu, &res_b)?);
    let (ids, weights) = moe_routes(gpu, &plan)?;
    Ok(MoeRun {
        logits: s.clone_dtoh(&plan.logits)?,
        ids,
        weights,
        out: download(gpu, &out)?,
        fused_diff,
        l2_diff,
    })
}

/// Values of one row's plan (routes, weights, slot table, pairs) that
/// differ between the one-row routing's cluster and its ticket.
fn one_row_plans_differ<T: GpuElement>(
    gpu: &Gpu,
    sp: RouterSpec,
    ex: &Experts<T>,
    x: &CudaSlice<T>,
) -> Result<usize, GpuError> {
    let s = &gpu.stream;
    let mut plans = Vec::new();
    for one_row in [OneRowRouting::Cluster, OneRowRouting::Ticket] {
        let mut plan = MoePlan::new(gpu, 1, sp)?;
        plan.one_row = one_row;
        let input = RouteInput::Normed(x);
        moe_route(
            gpu,
            &mut plan,
            input,
            &ex.gate,
            ex.bias.as_ref(),
            ex.hidden,
            None,
        )?;
        let (ids, w) = moe_routes(gpu, &plan)?;
        let table: Vec<i32> = [
            s.clone_dtoh(&plan.slot_table)?,
            s.clone_dtoh(&plan.pair_row)?,
            s.clone_dtoh(&plan.pair_route)?,
        ]
        .concat();
        plans.push((ids, w, table));
    }
    let (a, b) = (&plans[0], &plans[1]);
    let ids = a.0.iter().zip(&b.0).filter(|(p, q)| p != q).count();
    let table = a.2.iter().zip(&b.2).filter(|(p, q)| p != q).count();
    Ok(ids + differing(&a.1, &b.1) + table)
}

/// Checks the MoE kernels for element type `T` on three routers (DeepSeek-V3's
/// grouped sigmoid with bias, DeepSeek-V2's grouped softmax by max, Qwen3-MoE's softmax).
pub(super) fn check_moe<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let (v3, v2, qwen) = (V3_ROUTER, V2_ROUTER, QWEN_ROUTER);
    // bf16 on tensor cores (k multiples of 32) and a scalar-path shape; the
    // wider one splits k in 4 (gate|up) and 2 (down); inner 352 gives the
    // down product a whole stage of 8 chunks and 3 past it (as V2-Lite's
    // 1408: five stages and four). With shared slices (DeepSeek's shared
    // experts stacked with the routed ones): every row reaches them, so the
    // batch's 64 pairs of each take two slots of 32.
    for (sp, hidden, inner, bias) in [
        (v3, 256, 96, true),
        (v2, 256, 64, false),
        (qwen, 40, 20, false),
        (v2, 1024, 512, false),
        (v3, 512, 352, true),
        (RouterSpec { shared: 2, ..v3 }, 256, 96, true),
        (RouterSpec { shared: 1, ..qwen }, 40, 20, false),
        (V2_LITE_ROUTER, 256, 32, false),
    ] {
        check_router::<T>(gpu, rng, rows_out, sp, hidden, inner, bias)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn check_router<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
    sp: RouterSpec,
    h: usize,
    inner: usize,
    with_bias: bool,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (e, stacked) = (sp.experts, sp.stacked());
    let (gate, gate_h) = upload::<T>(gpu, &random(rng, e * h, 1.0 / (h as f32).sqrt()))?;
    let bias_h = with_bias.then(|| random(rng, e, 0.3));
    let (gate_up, gate_up_h) = upload::<T>(
        gpu,
        &random(rng, stacked * 2 * inner * h, 2.0 / (h as f32).sqrt()),
    )?;
    let (down, down_h) = upload::<T>(
        gpu,
        &random(rng, stacked * h * inner, 2.0 / (inner as f32).sqrt()),
    )?;
    let ex = Experts {
        gate,
        bias: match &bias_h {
            Some(b) => Some(s.clone_htod(b)?),
            None => None,
        },
        gate_up,
        down,
        shared: upload::<T>(gpu, &random(rng, 64 * h, 0.5))?.0,
        gate_h,
        bias_h,
        gate_up_h,
        down_h,
        hidden: h,
        inner,
    };
    let shared_h = download(gpu, &ex.shared)?;
    let rows = 64;
    let (x, x_h) = upload::<T>(gpu, &random(rng, rows * h, 1.0))?;
    let MoeRun {
        logits,
        ids,
        weights: w,
        out,
        fused_diff,
        mut l2_diff,
    } = run(gpu, sp, &ex, &x, Some(&ex.shared), rows)?;
    let words = format!(
        "{rows} rows, {e} experts top {} + {} shared ({}, {} groups keep {}), hidden {h}, inner {inner}",
        sp.top_k,
        sp.shared,
        if sp.sigmoid { "sigmoid" } else { "softmax" },
        sp.n_group,
        sp.topk_group
    );
    // Logits in f32 from the stored inputs.
    let mut want_logits = vec![0f32; rows * e];
    for r in 0..rows {
        for j in 0..e {
            want_logits[r * e + j] = (0..h)
                .map(|i| x_h[r * h + i] as f64 * ex.gate_h[j * h + i] as f64)
                .sum::<f64>() as f32;
        }
    }
    row(
        "moe_router_logits",
        words.clone(),
        normwise_error(&logits, &want_logits),
        1e-5,
    );
    // Routing of the device's logits: the same experts, weights within f32 rounding.
    let (mut id_diff, mut w_err) = (0usize, 0f64);
    let mut routes = Vec::new();
    for r in 0..rows {
        let want = route_ref(&sp, &logits[r * e..(r + 1) * e], ex.bias_h.as_deref());
        for (j, &(id, wt)) in want.iter().enumerate() {
            id_diff += usize::from(ids[r * sp.routes() + j] != id as i32);
            w_err = w_err.max(((w[r * sp.routes() + j] - wt) / wt.abs().max(1e-30)).abs() as f64);
        }
        routes.push(want);
    }
    row(
        "moe_route_ids",
        format!("{words}: experts differing from the CPU router"),
        id_diff as f64,
        0.0,
    );
    row(
        "moe_route_weights",
        format!("{words}: largest relative weight error"),
        w_err,
        1e-5,
    );
    row(
        "moe_combine_norm",
        format!("{words}: the combine fused into the next RMSNorm vs the two launches: differing values"),
        fused_diff as f64,
        0.0,
    );
    // The experts and the combine against the CPU: gate and up rounded to T, the activation and
    // each expert's output stored as T, the weighted sum in ascending expert id, then shared.
    let mut want = vec![0f32; rows * h];
    for r in 0..rows {
        let xr = &x_h[r * h..(r + 1) * h];
        let mut acc = vec![0f32; h];
        for &(ei, wt) in &routes[r] {
            let gu = &ex.gate_up_h[ei * 2 * inner * h..(ei + 1) * 2 * inner * h];
            let act: Vec<f32> = (0..inner)
                .map(|i| {
                    let dot = |row: usize| -> f32 {
                        gu[row * h..(row + 1) * h]
                            .iter()
                            .zip(xr)
                            .map(|(a, b)| a * b)
                            .sum()
                    };
                    let (g, u) = (round::<T>(dot(2 * i)), round::<T>(dot(2 * i + 1)));
                    round::<T>(g / (1.0 + (-g).exp()) * u)
                })
                .collect();
            let dn = &ex.down_h[ei * h * inner..(ei + 1) * h * inner];
            for (o, a) in acc.iter_mut().enumerate() {
                let y: f32 = dn[o * inner..(o + 1) * inner]
                    .iter()
                    .zip(&act)
                    .map(|(p, q)| p * q)
                    .sum();
                *a += round::<T>(y) * wt;
            }
        }
        for (o, a) in acc.iter().enumerate() {
            want[r * h + o] = a + shared_h[r * h + o];
        }
    }
    row(
        "moe_experts_combine",
        format!("{words}: grouped gate|up + SiLU, grouped down, combine with shared"),
        normwise_error(&out, &want),
        if T::BYTES == 2 { 2e-2 } else { 1e-4 },
    );
    // Batch invariance: rows alone, a small batch, and the first 24 rows give the batch's bits.
    let mut diff = 0;
    let sub = |idx: &[usize]| -> Vec<f32> {
        idx.iter()
            .flat_map(|&r| x_h[r * h..(r + 1) * h].to_vec())
            .collect()
    };
    let sets: [Vec<usize>; 4] = [vec![7], vec![63], vec![40, 3, 22], (0..24).collect()];
    let mut plans_differ = 0;
    for idx in &sets {
        let (xs, _) = upload::<T>(gpu, &sub(idx))?;
        let sh: Vec<f32> = idx
            .iter()
            .flat_map(|&r| shared_h[r * h..(r + 1) * h].to_vec())
            .collect();
        let (shd, _) = upload::<T>(gpu, &sh)?;
        let sub_run = run(gpu, sp, &ex, &xs, Some(&shd), idx.len())?;
        l2_diff += sub_run.l2_diff;
        let o = sub_run.out;
        for (i, &r) in idx.iter().enumerate() {
            diff += differing(&o[i * h..(i + 1) * h], &out[r * h..(r + 1) * h]);
        }
        if idx.len() == 1 {
            plans_differ += one_row_plans_differ(gpu, sp, &ex, &xs)?;
        }
    }
    row(
        "moe_batch_invariant",
        format!("{words}: rows alone, 3 rows, 24 rows vs 64: differing values"),
        diff as f64,
        0.0,
    );
    row(
        "moe_l2_ahead",
        format!("{words}: the grouped launches with streamed weights and the shared slices' down asked of L2 early vs not, at 64, 24, 3 and 1 rows: differing values"),
        l2_diff as f64,
        0.0,
    );
    row(
        "moe_route_one",
        format!(
            "{words}: a row alone routed by its logit blocks as one cluster vs the ticket: differing routes, weights, slots and pairs ({} blocks)",
            (e * 32).div_ceil(256)
        ),
        plans_differ as f64,
        0.0,
    );
    Ok(())
}
