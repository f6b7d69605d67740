//! What the models of `specula gpu bench` take of device memory: building
//! them (a checkpoint or random weights) with a KV cache for the largest
//! batch that fits, and which batches of a prompt length fit at all; and
//! which prompt lengths fit the target's positions.

use super::bench::BenchArgs;
use crate::cli::CliError;
use specula_engine::backend::cuda::{Gpu, GpuDtype, GpuModels, GpuOptions, LoadOptions, LoadStats};
use specula_engine::capture::CaptureChoice;
use specula_engine::config::{DraftConfig, TargetConfig};
use specula_engine::generate::past_positions;
use std::sync::Arc;

/// What `specula gpu bench` builds its models from: a checkpoint (and its
/// draft) or a config's shape with random weights drawn on the device.
pub(super) struct ModelSource<'a> {
    pub(super) args: &'a BenchArgs,
    pub(super) target: &'a TargetConfig,
    pub(super) random_draft: &'a DraftConfig,
    pub(super) dtype: GpuDtype,
}

impl ModelSource<'_> {
    /// The models with a KV cache of `opts.slots` x `opts.capacity`
    /// entries, and the checkpoint load's figures (none for random weights).
    pub(super) fn build(
        &self,
        gpu: &Arc<Gpu>,
        opts: &GpuOptions,
    ) -> Result<(GpuModels, Option<LoadStats>), CliError> {
        let a = self.args;
        let load_opts = LoadOptions { quiet: a.quiet };
        let build = || -> Result<_, CliError> {
            Ok(match &a.target {
                Some(t) => {
                    let (mut m, mut load) =
                        GpuModels::load(gpu.clone(), t, self.dtype, opts, &load_opts)?;
                    if let Some(d) = &a.draft {
                        let (_, s) =
                            m.load_drafter(d, &CaptureChoice::default(), opts, &load_opts)?;
                        load = load.plus(s);
                    }
                    (m, Some(load))
                }
                None => (
                    GpuModels::random(
                        gpu.clone(),
                        self.target.clone(),
                        Some(self.random_draft.clone()),
                        self.dtype,
                        a.seed,
                        opts,
                    )?,
                    None,
                ),
            })
        };
        build().map_err(|e| match e {
            e if out_of_memory(&e) => CliError::Gpu(format!(
                "out of device memory building the models with a KV cache of {} sequences x {} entries ({e})",
                opts.slots, opts.capacity
            )),
            e => e,
        })
    }

    /// The models for the largest batch of `fit` whose KV cache of
    /// `capacity` entries a sequence fits beside them (and the load's
    /// figures), `fit` cut to the batches that do (those cut reported
    /// through `skip`); `None` where none fits. `sizes` (what the models
    /// take beside the cache, the KV bytes of an entry) is learnt from the
    /// build: where the first build runs out of memory, from a build for the
    /// smallest batch. Device memory is read after a synchronize, when what
    /// earlier builds freed has gone back from the stream's memory pool.
    pub(super) fn build_largest(
        &self,
        gpu: &Arc<Gpu>,
        fit: &mut Vec<usize>,
        capacity: usize,
        sizes: &mut Option<ModelSizes>,
        skip: &mut impl FnMut(usize, String),
    ) -> Result<Option<(GpuModels, Option<LoadStats>)>, CliError> {
        let Some(&largest) = fit.last() else {
            return Ok(None);
        };
        let mut opts = GpuOptions {
            slots: largest,
            capacity,
            graphs: !self.args.eager,
        };
        let mut before = settled_device_used(gpu)?;
        let built = match self.build(gpu, &opts) {
            Err(e) if out_of_memory(&e) && sizes.is_none() && fit[0] < largest => {
                eprintln!(
                    "batch {largest}'s KV cache ({capacity} entries a sequence) does not fit beside the weights: sizing it by a build for batch {}",
                    fit[0]
                );
                before = settled_device_used(gpu)?;
                opts.slots = fit[0];
                let (m, _) = self.build(gpu, &opts)?;
                let learnt = ModelSizes::of(
                    &m,
                    self.target,
                    device_used(gpu)?.saturating_sub(before),
                    &opts,
                );
                drop(m);
                before = settled_device_used(gpu)?;
                *sizes = Some(learnt);
                let (smaller, too_big) = fitting_beside(gpu, fit, capacity, Some(learnt))?;
                for (b, why) in too_big {
                    skip(b, why);
                }
                *fit = smaller;
                let Some(&largest) = fit.last() else {
                    return Ok(None);
                };
                opts.slots = largest;
                self.build(gpu, &opts)
            }
            built => built,
        };
        let (models, load) = match built {
            Err(e) if out_of_memory(&e) && fit.len() == 1 => {
                skip(fit[0], e.to_string());
                fit.clear();
                return Ok(None);
            }
            built => built?,
        };
        *sizes = Some(ModelSizes::of(
            &models,
            self.target,
            device_used(gpu)?.saturating_sub(before),
            &opts,
        ));
        Ok(Some((models, load)))
    }
}

/// What the models take of device memory, learnt from a build.
#[derive(Debug, Clone, Copy)]
pub(super) struct ModelSizes {
    /// Bytes beside the KV cache (weights, buffers, graphs).
    beside_cache: f64,
    /// KV bytes a cache entry takes (target and draft).
    kv_per_entry: f64,
}

impl ModelSizes {
    /// The sizes of a build of `models` that took `built` bytes of device
    /// memory with a cache of `opts.slots` x `opts.capacity` entries.
    fn of(models: &GpuModels, target: &TargetConfig, built: u64, opts: &GpuOptions) -> Self {
        let layers = target.num_hidden_layers.max(1);
        let kv_per_entry =
            models.target_kv_bytes_per_token() as f64 * (layers + 1) as f64 / layers as f64;
        let cache = opts.slots as f64 * opts.capacity as f64 * kv_per_entry;
        ModelSizes {
            beside_cache: (built as f64 - cache).max(0.0),
            kv_per_entry,
        }
    }
}

/// The batches that fit, and those that do not with the reason.
type Fitting = (Vec<usize>, Vec<(usize, String)>);

/// [`fitting`] against the device: the KV cache may take all but a tenth
/// of the device's memory (left for activations and graphs) beside what the
/// models take; every batch is tried while `sizes` is not known yet.
pub(super) fn fitting_beside(
    gpu: &Gpu,
    batches: &[usize],
    capacity: usize,
    sizes: Option<ModelSizes>,
) -> Result<Fitting, CliError> {
    let Some(sizes) = sizes else {
        return Ok(fitting(batches, capacity, 0.0, None));
    };
    let (_, total) = memory(gpu)?;
    let budget = 0.9 * total as f64 - sizes.beside_cache;
    Ok(fitting(batches, capacity, sizes.kv_per_entry, Some(budget)))
}

/// Device memory in use once the stream has finished its work, bytes:
/// what a build frees goes back to the stream's memory pool, and from it to
/// the device only at a synchronize.
fn settled_device_used(gpu: &Gpu) -> Result<u64, CliError> {
    gpu.stream
        .synchronize()
        .map_err(|e| CliError::Gpu(e.to_string()))?;
    device_used(gpu)
}

/// Device memory in use now (total - free), bytes.
pub(super) fn device_used(gpu: &Gpu) -> Result<u64, CliError> {
    let (free, total) = memory(gpu)?;
    Ok((total - free) as u64)
}

/// The device's free and total memory, bytes.
fn memory(gpu: &Gpu) -> Result<(usize, usize), CliError> {
    gpu.ctx
        .mem_get_info()
        .map_err(|e| CliError::Gpu(e.to_string()))
}

/// Whether `e` is the device running out of memory (a case too big for it,
/// reported as skipped; every other error stops the benchmark).
pub(super) fn out_of_memory(e: &CliError) -> bool {
    e.to_string().contains("OUT_OF_MEMORY")
}

/// The batches of `batches` whose KV cache (`capacity` entries of
/// `kv_per_token` bytes each) fits in `budget` bytes; the others with the
/// reason they do not.
fn fitting(batches: &[usize], capacity: usize, kv_per_token: f64, budget: Option<f64>) -> Fitting {
    let mut fit = Vec::new();
    let mut skipped = Vec::new();
    for &b in batches {
        let kv = b as f64 * capacity as f64 * kv_per_token;
        match budget {
            Some(budget) if kv > budget => skipped.push((
                b,
                format!(
                    "its KV cache ({b} x {capacity} entries, {:.1} GB) does not fit the {:.1} GB of device memory beside the weights",
                    kv / 1e9,
                    budget / 1e9
                ),
            )),
            _ => fit.push(b),
        }
    }
    (fit, skipped)
}

/// Refuses, before any device work, a prompt length whose tokens and
/// `max_new_tokens` would run past the target's `max_position_embeddings`
/// (the decode loop refuses such a request: found only when its case came
/// up, it ended the bench after the earlier cases' device time).
pub(super) fn check_prompt_lens(
    lens: &[usize],
    max_new_tokens: usize,
    max_positions: Option<usize>,
) -> Result<(), CliError> {
    let Some(limit) = max_positions else {
        return Ok(());
    };
    match lens
        .iter()
        .find(|&&p| past_positions(p, max_new_tokens, Some(limit)))
    {
        Some(&p) => Err(CliError::Usage(format!(
            "--prompt-lens {p} with --max-new-tokens {max_new_tokens} reaches position {}, past the target's max_position_embeddings of {limit}: give prompts of at most {} tokens",
            p + max_new_tokens,
            limit.saturating_sub(max_new_tokens)
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{check_prompt_lens, fitting};

    #[test]
    fn regression_a_prompt_length_past_the_positions_ended_the_bench_after_earlier_cases() {
        // Moonlight-16B-A3B: 8192 positions (--prompt-lens 2048,8192 ran the 2048
        // cases, then stopped at 8192 and wrote none of their rows); now refused
        // before any case runs, with the longest prompt that fits.
        let err = check_prompt_lens(&[2048, 8192], 32, Some(8192)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("--prompt-lens 8192"), "{text}");
        assert!(text.contains("position 8224"), "{text}");
        assert!(text.contains("at most 8160 tokens"), "{text}");
        assert!(check_prompt_lens(&[2048, 8160], 32, Some(8192)).is_ok());
        assert!(check_prompt_lens(&[1 << 20], 32, None).is_ok());
    }

    #[test]
    fn batches_whose_cache_outgrows_the_budget_are_cut_with_their_size() {
        // 1000 entries of 1 MB: 1 GB a sequence; 20 GB left beside the weights.
        let (fit, cut) = fitting(&[1, 8, 16, 32, 64], 1000, 1e6, Some(20e9));
        assert_eq!(fit, vec![1, 8, 16]);
        let cut_batches: Vec<usize> = cut.iter().map(|c| c.0).collect();
        assert_eq!(cut_batches, vec![32, 64]);
        assert!(cut[0].1.contains("32.0 GB"), "{}", cut[0].1);
        assert!(cut[0].1.contains("20.0 GB"), "{}", cut[0].1);
    }

    #[test]
    fn without_a_budget_every_batch_is_tried() {
        let (fit, cut) = fitting(&[1, 64], 1 << 20, 1e9, None);
        assert_eq!(fit, vec![1, 64]);
        assert!(cut.is_empty());
    }
}
