//! The one-row projection with its norm in its prologue
//! ([`LinearLayer::rows_normed`]) against the norm's own launch followed by
//! the projection ([`rms_norm_residual`] or [`moe_combine_norm`], then
//! [`LinearLayer::rows`]): the output and the new residual the same bits,
//! for every delta (none, a stored row, an experts' combine with and
//! without the attention output its routing left out) and every block size
//! the layouts give (32 to 256 threads, one and two column tiles), each
//! launched twice on fresh copies (the block that writes the residual leaves
//! its counter at zero for the next launch).

use super::moe::grouped_experts;
use super::moe_routing::V2_LITE_ROUTER;
use super::{differing, download, random, row_recorder, upload, CheckRow};
use crate::cuda::{
    moe_combine_norm, moe_route, rms_norm_residual, ExpertsOutput, Gpu, GpuError, LinearLayer,
    MoePlan, NormDelta, NormedInput, RouteInput, RouterSpec,
};
use cudarc::driver::CudaSlice;
use half::bf16;
use rand_chacha::ChaCha8Rng;

/// `[n, k]` projections: V2-Lite's q + kv_a (128 threads, one tile a block),
/// the 8B's qkv (two tiles a block), V3's q_a + kv_a (eight k slices: 256
/// threads), and two narrow ones (64 and 32 threads).
const SHAPES: [(usize, usize); 5] = [
    (2048, 3648),
    (4096, 6144),
    (7168, 2112),
    (512, 1024),
    (256, 512),
];

/// What one way of running the norm and the projection leaves: the
/// projection's output and the residual.
struct Outcome {
    y: Vec<f32>,
    residual: Vec<f32>,
}

/// The norm apart then the projection (`fused` false), or the projection
/// with the norm in its prologue, on a fresh copy of `residual`.
fn norm_then_project(
    gpu: &Gpu,
    lin: LinearLayer<'_, bf16>,
    residual: &CudaSlice<bf16>,
    delta: NormDelta<'_, bf16>,
    (w, ticket): (&CudaSlice<bf16>, &mut CudaSlice<u32>),
    fused: bool,
) -> Result<Outcome, GpuError> {
    let s = &gpu.stream;
    let (k, n) = (lin.k, lin.n);
    let mut res = s.clone_dtod(residual)?;
    let mut y = s.alloc_zeros::<bf16>(n)?;
    if fused {
        let input = NormedInput {
            residual: &mut res,
            delta,
            w,
            eps: 1e-6,
            ticket,
        };
        lin.rows_normed(&mut y, input)?;
    } else {
        let mut normed = s.alloc_zeros::<bf16>(k)?;
        match delta {
            NormDelta::Nothing => rms_norm_residual(gpu, &mut normed, &mut res, None, w, 1e-6, k)?,
            NormDelta::Stored(d) => {
                rms_norm_residual(gpu, &mut normed, &mut res, Some(d), w, 1e-6, k)?
            }
            NormDelta::Experts(e) => moe_combine_norm(gpu, &mut normed, &mut res, e, w, 1e-6)?,
        }
        lin.rows(&mut y, &normed, 1)?;
    }
    Ok(Outcome {
        y: download(gpu, &y)?,
        residual: download(gpu, &res)?,
    })
}

/// One row routed to V2-Lite's experts (top 6 of 64, two shared slices
/// stacked after them) of width `k`: the experts' output of that row.
struct RoutedRow {
    plan: MoePlan,
    yexp: CudaSlice<bf16>,
    shared: CudaSlice<bf16>,
    attn: CudaSlice<bf16>,
}

/// Routes a random normed row of width `k` and runs its experts.
fn routed_row(gpu: &Gpu, rng: &mut ChaCha8Rng, k: usize) -> Result<RoutedRow, GpuError> {
    let sp = RouterSpec {
        shared: 2,
        ..V2_LITE_ROUTER
    };
    let inner = 32;
    let e = sp.stacked();
    let up = |rng: &mut ChaCha8Rng, n: usize, scale: f32| -> Result<CudaSlice<bf16>, GpuError> {
        Ok(upload::<bf16>(gpu, &random(rng, n, scale))?.0)
    };
    let normed = up(rng, k, 1.5)?;
    let gate = up(rng, sp.experts * k, 1.0 / (k as f32).sqrt())?;
    let gate_up = up(rng, e * 2 * inner * k, 2.0 / (k as f32).sqrt())?;
    let down = up(rng, e * k * inner, 2.0 / (inner as f32).sqrt())?;
    let mut plan = MoePlan::new(gpu, 1, sp)?;
    moe_route(
        gpu,
        &mut plan,
        RouteInput::Normed(&normed),
        &gate,
        None,
        k,
        None,
    )?;
    let yexp = grouped_experts(gpu, &plan, &normed, (&gate_up, &down), k, inner)?;
    Ok(RoutedRow {
        plan,
        yexp,
        shared: up(rng, k, 1.0)?,
        attn: up(rng, k, 1.0)?,
    })
}

/// Checks the projection with its norm in its prologue (bf16: the
/// tensor-core kernel's type).
pub(super) fn check_linear_normed(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<bf16>(rows_out);
    let mut ticket = gpu.stream.alloc_zeros::<u32>(1)?;
    for (k, n) in SHAPES {
        let up =
            |rng: &mut ChaCha8Rng, len: usize, scale: f32| -> Result<CudaSlice<bf16>, GpuError> {
                Ok(upload::<bf16>(gpu, &random(rng, len, scale))?.0)
            };
        let weight = up(rng, n * k, 2.0 / (k as f32).sqrt())?;
        let bias = up(rng, n, 0.5)?;
        let lin = LinearLayer::new(gpu, &weight, Some(&bias), k, n);
        if !lin.takes_normed(1) {
            row(
                "linear_mma_normed",
                format!("[{n}, {k}] at one row: takes its norm (1 = no)"),
                1.0,
                0.0,
            );
            continue;
        }
        let residual = up(rng, k, 2.0)?;
        let norm_w = up(rng, k, 1.5)?;
        let mlp = up(rng, k, 1.0)?;
        let routed = routed_row(gpu, rng, k)?;
        let combine = ExpertsOutput {
            yexp: &routed.yexp,
            shared: Some(&routed.shared),
            plan: &routed.plan,
            attn: None,
        };
        let with_attn = ExpertsOutput {
            attn: Some(&routed.attn),
            ..combine
        };
        let deltas = [
            ("no delta", NormDelta::Nothing),
            ("a stored delta", NormDelta::Stored(&mlp)),
            ("the experts' combine", NormDelta::Experts(combine)),
            (
                "the attention and the experts' combine",
                NormDelta::Experts(with_attn),
            ),
        ];
        for (what, delta) in deltas {
            let apart =
                norm_then_project(gpu, lin, &residual, delta, (&norm_w, &mut ticket), false)?;
            let mut diff = 0;
            for _ in 0..2 {
                let norm = (&norm_w, &mut ticket);
                let fused = norm_then_project(gpu, lin, &residual, delta, norm, true)?;
                diff += differing(&apart.y, &fused.y) + differing(&apart.residual, &fused.residual);
            }
            row(
                "linear_mma_normed",
                format!("[{n}, {k}] at one row, {what}: in the prologue (twice) vs apart, differing values of y and the residual"),
                diff as f64,
                0.0,
            );
        }
    }
    Ok(())
}
