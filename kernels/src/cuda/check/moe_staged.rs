//! The grouped linear's staged forms (`moe_staged.cu`) against its register
//! form, bit for bit, at DeepSeek-V2-Lite's expert shapes (hidden 2048,
//! inner 1408: the down product's k ends four chunks past a whole stage of
//! eight) on fresh random weights and rows, at 1, 8 and 64 rows.

use super::{differing, download, random, upload, CheckRow};
use crate::cuda::moe::{moe_grouped_in, MoeStaged, MOE_STAGED_FORMS};
use crate::cuda::{moe_route, ExpertProduct, ExpertWeights, Gpu, GpuError, MoePlan, RouterSpec};
use half::bf16;
use rand_chacha::ChaCha8Rng;

/// Each staged form's gate|up and down outputs against the register form's.
pub(super) fn check_moe_staged(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let (h, inner) = (2048, 1408);
    let sp = RouterSpec {
        experts: 8,
        top_k: 6,
        sigmoid: false,
        n_group: 1,
        topk_group: 1,
        top_two_sum: false,
        norm_topk_prob: false,
        scaling: 1.0,
    };
    let e = sp.experts;
    let gate = upload::<bf16>(gpu, &random(rng, e * h, 1.0 / (h as f32).sqrt()))?.0;
    let gate_up = upload::<bf16>(
        gpu,
        &random(rng, e * 2 * inner * h, 2.0 / (h as f32).sqrt()),
    )?
    .0;
    let down = upload::<bf16>(
        gpu,
        &random(rng, e * h * inner, 2.0 / (inner as f32).sqrt()),
    )?
    .0;
    for rows in [1, 8, 64] {
        let x = upload::<bf16>(gpu, &random(rng, rows * h, 1.0))?.0;
        let mut plan = MoePlan::new(gpu, rows, sp)?;
        moe_route(gpu, &mut plan, &x, &gate, None, h, None)?;
        let pairs = plan.pairs();
        let run = |staged: Option<MoeStaged>| -> Result<(Vec<f32>, Vec<f32>), GpuError> {
            let s = &gpu.stream;
            let mut act = s.alloc_zeros::<bf16>(pairs * inner)?;
            let gu = ExpertWeights {
                w: &gate_up,
                n: 2 * inner,
                k: h,
            };
            moe_grouped_in(gpu, &mut act, &x, gu, &plan, ExpertProduct::GateUp, staged)?;
            let mut yexp = s.alloc_zeros::<bf16>(pairs * h)?;
            let dn = ExpertWeights {
                w: &down,
                n: h,
                k: inner,
            };
            moe_grouped_in(gpu, &mut yexp, &act, dn, &plan, ExpertProduct::Down, staged)?;
            Ok((download(gpu, &act)?, download(gpu, &yexp)?))
        };
        let (act, yexp) = run(None)?;
        for (name, form) in MOE_STAGED_FORMS {
            let (sa, sy) = run(Some(form))?;
            let (da, dy) = (differing(&act, &sa), differing(&yexp, &sy));
            rows_out.push(CheckRow {
                kernel: "moe_staged",
                dtype: "bf16",
                shape: format!(
                    "{name} against the register form, {rows} rows, {e} experts top {}, hidden {h}, inner {inner}: gate|up {da} of {} values differ, down {dy} of {}",
                    sp.top_k,
                    act.len(),
                    yexp.len()
                ),
                error: (da + dy) as f64,
                tolerance: 0.0,
            });
        }
    }
    Ok(())
}
