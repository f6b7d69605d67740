//! Times the warpgroup-mma linear ([`LinearLayer::wg`], `linear_wg.cu`) in
//! every compiled layout against the form the engine runs otherwise
//! ([`MmaForm::for_shape`]: the small-row or the tiled kernel), for each
//! projection of a model shape at each row count, with cold weights (each
//! launch reads another copy, the copies together past the L2 cache), and
//! counts the outputs whose bits differ from the engine's form (none may:
//! they are the same sums). Past 8 rows also the small-row kernel's other
//! form: looped (`mma/looped8`) where the engine runs it pipelined
//! ([`MmaLaunch::pipelined_for`]), pipelined (`mma/tile4`, `mma/tile8`)
//! where looped.
//! `specula-gpu-check --wgmma-timing`.

use super::check::{differing, download};
use super::split_sweep::projections;
use super::timing::ModelShape;
use super::{fill_uniform, Gpu, GpuError, GpuTimer, LinearLayer, WgLaunch};
use crate::mma_layout::{mma_k_parts, pipelined_tiles, MmaLaunch, MMA_PIPELINED_MAX_ROWS};
use crate::tile_layout::MmaForm;
use cudarc::driver::CudaSlice;
use half::bf16;

/// Bytes of weight copies a timing cycles through (past the 50 MB L2).
const COLD_BYTES: usize = 256 << 20;

/// Timed launches per (projection, rows, form); the median is kept.
const REPS: usize = 21;

/// One (projection, rows, form) timing.
#[derive(Debug, Clone)]
pub struct WgTiming {
    /// Projection name (`qkv`, `o`, ..., `draft lm_head`).
    pub projection: &'static str,
    /// Output columns.
    pub n: usize,
    /// Reduction width.
    pub k: usize,
    /// Rows (tokens).
    pub rows: usize,
    /// `engine` (the small-row or tiled kernel the engine picks) or a
    /// [`WgLaunch::label`].
    pub form: String,
    /// Whether the engine runs this form: the layout [`WgLaunch::for_shape`]
    /// picks, or `engine` where it picks none.
    pub chosen: bool,
    /// Median time of one launch alone, microseconds.
    pub time_us: f64,
    /// Time per launch of `REPS` (21) launches back to back (each on the next
    /// cold copy, programmatic dependents of each other as in a decode
    /// step: one launch's weight stream starts while the last drains),
    /// microseconds.
    pub stream_us: f64,
    /// Compulsory bytes (weights, inputs, outputs).
    pub bytes: f64,
    /// Outputs whose bits differ from the engine form's.
    pub differ: usize,
}

/// Every projection of `shape` at each of `rows` that `keep(projection,
/// rows)` accepts: the engine's form, then each compiled wgmma layout and
/// the small-row kernel's other form.
pub fn time_wg_linear(
    gpu: &Gpu,
    shape: ModelShape,
    rows: &[usize],
    keep: impl Fn(&str, usize) -> bool,
) -> Result<Vec<WgTiming>, GpuError> {
    let timer = GpuTimer::new(gpu)?;
    let mut out = Vec::new();
    for (projection, n, k) in projections(shape) {
        if !rows.iter().any(|&m| keep(projection, m)) {
            continue;
        }
        let copies = (COLD_BYTES / (2 * n * k)).clamp(1, 8);
        let mut ws: Vec<CudaSlice<bf16>> = Vec::with_capacity(copies);
        for c in 0..copies {
            let mut w = gpu.stream.alloc_zeros(n * k)?;
            fill_uniform(gpu, &mut w, 1 + c as u64, 0.04, -0.02)?;
            ws.push(w);
        }
        for &m in rows.iter().filter(|&&m| keep(projection, m)) {
            let mut x: CudaSlice<bf16> = gpu.stream.alloc_zeros(m * k)?;
            fill_uniform(gpu, &mut x, 99, 2.0, -1.0)?;
            let mut y: CudaSlice<bf16> = gpu.stream.alloc_zeros(m * n)?;
            let engine = MmaForm::for_shape(m, k, n);
            let pick = WgLaunch::for_shape(m, k, n);
            let run = |form: Form, y: &mut CudaSlice<bf16>, i: usize| {
                let layer = LinearLayer::new(gpu, &ws[i % copies], None, k, n);
                match (form, engine) {
                    (Form::Wg(l), _) => layer.wg(y, &x, m, l, false),
                    (Form::Mma(l), _) | (Form::Engine, MmaForm::Small(l)) => {
                        layer.mma(y, &x, m, l, false)
                    }
                    (Form::Engine, MmaForm::Tiles(l)) => layer.tiles(y, &x, m, l, false),
                }
            };
            let median = |form: Form, y: &mut CudaSlice<bf16>| -> Result<f64, GpuError> {
                for i in 0..3 {
                    run(form, y, i)?;
                }
                let mut v = Vec::with_capacity(REPS);
                for i in 0..REPS {
                    timer.start(gpu)?;
                    run(form, y, i)?;
                    v.push(f64::from(timer.stop_ms(gpu)?) * 1e3);
                }
                v.sort_by(f64::total_cmp);
                Ok(v[REPS / 2])
            };
            let stream = |form: Form, y: &mut CudaSlice<bf16>| -> Result<f64, GpuError> {
                timer.start(gpu)?;
                for i in 0..REPS {
                    run(form, y, i)?;
                }
                Ok(f64::from(timer.stop_ms(gpu)?) * 1e3 / REPS as f64)
            };
            let bytes = 2.0 * (n * k + m * k + m * n) as f64;
            // Each median's last launch reads copy REPS - 1 into y: the
            // engine's bits of it, then each layout's.
            let engine_us = median(Form::Engine, &mut y)?;
            let want = download(gpu, &y)?;
            let engine_stream_us = stream(Form::Engine, &mut y)?;
            out.push(WgTiming {
                projection,
                n,
                k,
                rows: m,
                form: "engine".into(),
                chosen: pick.is_none(),
                time_us: engine_us,
                stream_us: engine_stream_us,
                bytes,
                differ: 0,
            });
            // Another form against the engine's: its time alone and in a
            // stream, and its outputs whose bits differ.
            let mut against = |form: Form, label: String, chosen: bool| -> Result<(), GpuError> {
                let time_us = median(form, &mut y)?;
                let differ = differing(&download(gpu, &y)?, &want);
                let stream_us = stream(form, &mut y)?;
                out.push(WgTiming {
                    projection,
                    n,
                    k,
                    rows: m,
                    form: label,
                    chosen,
                    time_us,
                    stream_us,
                    bytes,
                    differ,
                });
                Ok(())
            };
            for l in WgLaunch::variants(mma_k_parts(k, n)) {
                if l.bm > 16 && m <= l.bm / 2 {
                    continue; // a tile more than half empty
                }
                against(Form::Wg(l), l.label(), Some(l) == pick)?;
            }
            // The small-row kernel's other form past one token tile: the
            // looped kernel where the engine runs the pipelined one, else
            // the pipelined one (eight tiles past 32 rows).
            let other = match engine {
                MmaForm::Small(l) if l.pipelined => Some(MmaLaunch::looped(l.parts)),
                MmaForm::Small(_) => MmaLaunch::pipelined_for(m, mma_k_parts(k, n)),
                MmaForm::Tiles(_) => None,
            };
            if let Some(other) = other.filter(|_| m > MMA_PIPELINED_MAX_ROWS) {
                let label = match pipelined_tiles(m) {
                    Some(t) if other.pipelined => format!("mma/tile{t}"),
                    _ => format!("mma/looped{}", other.chunks),
                };
                against(Form::Mma(other), label, false)?;
            }
        }
    }
    Ok(out)
}

/// What one timed launch runs.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// The form the engine picks without the wgmma linear.
    Engine,
    /// A wgmma layout.
    Wg(WgLaunch),
    /// A small-row layout (looped or pipelined).
    Mma(MmaLaunch),
}
