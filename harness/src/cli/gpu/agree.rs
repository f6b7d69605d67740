//! `specula gpu agree`: the GPU engine gives the CPU engine's greedy tokens
//! (f32; bf16 agreement is reported), and speculative decoding on the GPU
//! equals the GPU baseline token for token for every config tried (bf16 and f32).

use super::{open_gpu, write};
use crate::cli::output::outln;
use crate::cli::CliError;
use clap::Args;
use specula_engine::backend::cuda::{
    invariant_linear_rows, GpuDtype, GpuModels, GpuOptions, LoadOptions,
};
use specula_engine::capture::CaptureChoice;
use specula_engine::generate::GenerateParams;
use specula_engine::pair::ModelPair;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::NullRecorder;
use std::path::PathBuf;

/// Arguments of `specula gpu agree`.
#[derive(Args, Debug)]
pub struct AgreeArgs {
    /// Target model folder.
    #[arg(long, default_value = "models/tiny-llama")]
    target: PathBuf,
    /// EAGLE-3 draft folder.
    #[arg(long, default_value = "models/tiny-llama/eagle3")]
    draft: PathBuf,
    /// Built-in prompts to use.
    #[arg(long, default_value_t = 8)]
    prompts: usize,
    /// Tokens to generate per prompt.
    #[arg(long, default_value_t = 48)]
    max_new_tokens: usize,
    /// Batch sizes of the lossless checks, comma-separated (a batch larger
    /// than --prompts cycles the prompts; a config whose verify forward
    /// would exceed the batch-invariant rows is skipped).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    batch_sizes: Vec<usize>,
    /// Folder for agreement.csv.
    #[arg(long, default_value = "results/gpu")]
    out: PathBuf,
}

fn configs() -> Vec<SpeculativeConfig> {
    let mut v: Vec<SpeculativeConfig> = (1..=5).map(SpeculativeConfig::chain).collect();
    for (s, k, n) in [(3, 2, 6), (5, 2, 8), (2, 4, 8), (4, 4, 16), (5, 3, 12)] {
        v.push(SpeculativeConfig::new(s, k, n).expect("valid config"));
    }
    v
}

fn params(speculative: SpeculativeConfig, max_new_tokens: usize) -> GenerateParams {
    GenerateParams {
        speculative,
        max_new_tokens,
        ignore_eos: true,
        ..GenerateParams::default()
    }
}

/// Runs the agreement checks; exit 1 when a required one fails.
pub fn run(a: AgreeArgs) -> Result<(), CliError> {
    let pair = ModelPair::load(&a.target, Some(&a.draft), &CaptureChoice::default())?;
    let set = specula_datasets::PromptSetSpec::builtin().load()?;
    let prompts: Vec<Vec<u32>> = set
        .prompts
        .iter()
        .take(a.prompts)
        .map(|p| pair.tokenizer.encode(p.text()))
        .collect::<Result<_, _>>()?;
    if prompts.is_empty() || a.batch_sizes.contains(&0) {
        return Err(CliError::Usage(
            "--prompts and --batch-sizes take positive numbers".into(),
        ));
    }
    let max_batch = a.batch_sizes.iter().copied().max().unwrap_or(1);
    // The lossless checks' prompts: the set, cycled up to the largest batch.
    let batch_prompts: Vec<Vec<u32>> = prompts
        .iter()
        .cycle()
        .take(prompts.len().max(max_batch))
        .cloned()
        .collect();
    let opts = GpuOptions {
        slots: GpuOptions::default().slots.max(max_batch),
        ..GpuOptions::default()
    };
    let mut cpu_pair = pair;
    let cpu = cpu_pair.generate(
        &prompts,
        &params(SpeculativeConfig::BASELINE, a.max_new_tokens),
        &mut NullRecorder,
    )?;
    let gpu = open_gpu()?;
    let mut csv = String::from("check,dtype,steps,topk,num_draft_tokens,batch_size,sequences,identical,first_divergence,tau,required,pass\n");
    let mut failed = 0;
    for dtype in [GpuDtype::F32, GpuDtype::Bf16] {
        // Loaded straight from the checkpoints (the loader users run); the
        // eager copy below is uploaded from the CPU model, so the graph-vs-eager
        // checks also hold the two load paths to the same weights.
        let quiet = LoadOptions { quiet: true };
        let (mut models, _) = GpuModels::load(gpu.clone(), &a.target, dtype, &opts, &quiet)?;
        models.load_drafter(&a.draft, &CaptureChoice::default(), &opts, &quiet)?;
        let base = models.generate(
            &prompts,
            &params(SpeculativeConfig::BASELINE, a.max_new_tokens),
            &mut NullRecorder,
        )?;
        // CUDA-graph replays against eager launches: the same tokens, speculative too.
        let eager_opts = GpuOptions {
            graphs: false,
            ..GpuOptions::default()
        };
        let mut eager = GpuModels::from_cpu(gpu.clone(), &cpu_pair, dtype, &eager_opts)?;
        for speculative in [
            SpeculativeConfig::BASELINE,
            SpeculativeConfig::new(4, 2, 8)?,
        ] {
            let p = params(speculative, a.max_new_tokens);
            let g = models.generate(&prompts, &p, &mut NullRecorder)?;
            let e = eager.generate(&prompts, &p, &mut NullRecorder)?;
            let (same, first) = compare(
                g.sequences.iter().map(|s| &s.output),
                e.sequences.iter().map(|s| &s.output),
            );
            let pass = same == prompts.len();
            failed += usize::from(!pass);
            csv.push_str(&format!(
                "graphs_vs_eager,{},{},{},{},{},{},{same},{first},{:.3},true,{pass}\n",
                dtype.name(),
                speculative.steps,
                speculative.topk,
                speculative.num_draft_tokens,
                prompts.len(),
                prompts.len(),
                g.tau()
            ));
            outln!(
                "{:>4} CUDA graphs vs eager, {speculative}: {same}/{} sequences identical",
                dtype.name(),
                prompts.len()
            );
        }
        drop(eager);
        let (same, first) = compare(
            cpu.sequences.iter().map(|s| &s.output),
            base.sequences.iter().map(|s| &s.output),
        );
        let required = dtype == GpuDtype::F32;
        let pass = same == prompts.len();
        failed += usize::from(required && !pass);
        csv.push_str(&format!(
            "gpu_vs_cpu_greedy,{},0,0,1,{},{},{same},{first},1.0,{required},{pass}\n",
            dtype.name(),
            prompts.len(),
            prompts.len()
        ));
        outln!(
            "{:>4} GPU baseline vs CPU engine: {same}/{} sequences identical (first divergence at token {first}){}",
            dtype.name(),
            prompts.len(),
            if required { "" } else { " [reported, bf16 rounds differently from the f32 CPU engine]" }
        );
        for &batch in &a.batch_sizes {
            let run = |m: &mut GpuModels, speculative| -> Result<Vec<(Vec<u32>, f64)>, CliError> {
                let mut out = Vec::new();
                for chunk in batch_prompts.chunks(batch) {
                    let g = m.generate(
                        chunk,
                        &params(speculative, a.max_new_tokens),
                        &mut NullRecorder,
                    )?;
                    let tau = g.tau();
                    out.extend(g.sequences.into_iter().map(|s| (s.output, tau)));
                }
                Ok(out)
            };
            let base_b = run(&mut models, SpeculativeConfig::BASELINE)?;
            for speculative in configs() {
                if batch * speculative.num_draft_tokens > invariant_linear_rows() {
                    continue;
                }
                let got = run(&mut models, speculative)?;
                let (same, first) = compare(base_b.iter().map(|s| &s.0), got.iter().map(|s| &s.0));
                let tau = got.iter().map(|s| s.1).sum::<f64>() / got.len() as f64;
                let pass = same == batch_prompts.len();
                failed += usize::from(!pass);
                csv.push_str(&format!(
                    "speculative_vs_baseline,{},{},{},{},{batch},{},{same},{first},{tau:.3},true,{pass}\n",
                    dtype.name(),
                    speculative.steps,
                    speculative.topk,
                    speculative.num_draft_tokens,
                    batch_prompts.len()
                ));
                outln!(
                    "{:>4} batch {batch} {speculative}: lossless {pass} ({same}/{} identical), tau {tau:.2}",
                    dtype.name(),
                    batch_prompts.len()
                );
            }
        }
    }
    write(&a.out, "agreement.csv", &csv)?;
    outln!("wrote {}", a.out.join("agreement.csv").display());
    if failed > 0 {
        return Err(CliError::Found(format!(
            "{failed} required GPU agreement checks failed"
        )));
    }
    Ok(())
}

/// Identical sequences, and the earliest token index where any pair differs
/// (`usize::MAX` printed as -1 when all agree).
fn compare<'a>(
    a: impl Iterator<Item = &'a Vec<u32>>,
    b: impl Iterator<Item = &'a Vec<u32>>,
) -> (usize, i64) {
    let mut same = 0;
    let mut first = i64::MAX;
    for (x, y) in a.zip(b) {
        match x.iter().zip(y).position(|(p, q)| p != q) {
            None if x.len() == y.len() => same += 1,
            None => first = first.min(x.len().min(y.len()) as i64),
            Some(i) => first = first.min(i as i64),
        }
    }
    (same, if first == i64::MAX { -1 } else { first })
}
