//! The rows `specula gpu bench` writes: one per (batch, prompt length,
//! repeat) in decode_bandwidth.csv and synthetic_speedup.csv, and one per
//! (batch, prompt length) in scaling.csv, the medians over the repeats (the
//! scaling table of a GPU, in one file).

use specula::sweep::measure::median;

/// What one repeat of one (batch, prompt length) case measured.
#[derive(Debug, Clone, Default)]
pub struct CaseRepeat {
    /// Sequences decoded together.
    pub batch: usize,
    /// Prompt tokens per sequence.
    pub prompt_len: usize,
    /// Repeat index.
    pub repeat: usize,
    /// Median CUDA-event time of a baseline decode step, microseconds.
    pub step_us: f64,
    /// Bytes a baseline step reads: weights (+ touched experts) + KV.
    pub bytes_read: f64,
    /// KV bytes a baseline step reads (mean context).
    pub kv_bytes: f64,
    /// Baseline decode tokens per second.
    pub tok_s: f64,
    /// Baseline prefill (target forward over the prompts), milliseconds.
    pub prefill_ms: f64,
    /// Device memory in use after the baseline run (total - free), bytes.
    pub device_used_bytes: u64,
    /// Floating-point operations of a baseline step (linears + attention).
    pub step_flops: f64,
    /// Kernel launches a baseline step replays (its CUDA graph's kernel
    /// nodes; none without graphs).
    pub kernels: Option<usize>,
    /// The synthetic run, when there is a draft.
    pub synthetic: Option<SyntheticRepeat>,
}

/// The synthetic-acceptance half of a repeat.
#[derive(Debug, Clone, Default)]
pub struct SyntheticRepeat {
    /// Mean accepted length per verify step.
    pub tau: f64,
    /// Speculative decode tokens per second.
    pub tok_s: f64,
    /// Median verify forward, microseconds.
    pub verify_us: f64,
    /// Drafting per step, microseconds.
    pub draft_us_per_step: f64,
    /// Drafting and verifying summed over the run, microseconds.
    pub draft_verify_us: f64,
    /// Tokens emitted by decode steps, summed over sequences.
    pub decode_tokens: usize,
    /// Verify steps per sequence, mean over the batch (the batch steps
    /// until its slowest sequence is done: `steps` >= this).
    pub sequence_steps: f64,
    /// Routed experts a verify forward touches per MoE layer, mean over the
    /// run (0 on dense targets): the union of every verified token's experts,
    /// what makes a MoE target's verify cost more than its decode step.
    pub experts_per_layer: f64,
    /// The same for independently, uniformly routed tokens
    /// (`MoeConfig::uniform_experts` of the verify forward's rows).
    pub uniform_experts_per_layer: f64,
    /// Prefill with the draft's extend over the prompts, milliseconds.
    pub prefill_ms: f64,
    /// The draft's extend over the prompts alone (its `draft_prefill`
    /// spans), milliseconds.
    pub draft_prefill_ms: f64,
    /// Decode steps the batch took.
    pub steps: usize,
}

impl CaseRepeat {
    /// The step's time beyond what its bytes take at the copy rate, per
    /// kernel launch (microseconds): what each launch costs past streaming
    /// its bytes (ramp, tail, latency-bound work), the figure fusing or
    /// overlapping launches lowers. None without a kernel count.
    pub fn beyond_copy_per_kernel_us(&self, copy_gb_s: f64) -> Option<f64> {
        let at_copy_us = self.bytes_read / (copy_gb_s * 1e3);
        self.kernels
            .filter(|&k| k > 0)
            .map(|k| (self.step_us - at_copy_us) / k as f64)
    }

    /// Measured speedup over the same repeat's baseline.
    pub fn speedup(&self, s: &SyntheticRepeat) -> f64 {
        s.tok_s / self.tok_s
    }

    /// The speedup the measured span costs allow: the run's decode tokens
    /// over its drafting and verifying time alone, against the baseline's
    /// tokens per second. measured / ideal is the share of the speculative
    /// decode time spent drafting and verifying; the rest is the engine's
    /// host work between them (tree building, acceptance, KV commits,
    /// launches). The batch's tail (sequences that need more steps than
    /// the mean keep the batch stepping with fewer rows) is in both.
    pub fn ideal(&self, s: &SyntheticRepeat) -> f64 {
        s.decode_tokens as f64 / (s.draft_verify_us * 1e-6) / self.tok_s
    }

    /// The speedup if every sequence took its mean steps at the median
    /// span costs: tau steps' worth of baseline time per (draft + verify).
    /// Below [`CaseRepeat::ideal`] by the batch's tail: a batch of
    /// fixed-length sequences steps until its slowest sequence is done.
    pub fn tau_ideal(&self, s: &SyntheticRepeat) -> f64 {
        s.tau * self.step_us / (s.draft_us_per_step + s.verify_us)
    }
}

/// Ceilings measured in the same run.
#[derive(Debug, Clone, Copy)]
pub struct Ceilings {
    /// Device-to-device copy, GB/s (read + write).
    pub copy_gb_s: f64,
    /// bf16 GEMM, TFLOP/s.
    pub gemm_tflops: f64,
}

/// Header of decode_bandwidth.csv.
pub const DECODE_HEADER: &str = "batch_size,prompt_len,repeat,dtype,cuda_graphs,weight_bytes,step_us_p50,weight_gb_s,copy_gb_s,fraction_of_copy,tok_s,experts_per_moe_layer,expert_bytes,kv_bytes,bytes_read,read_gb_s,read_fraction_of_copy,prefill_ms,prefill_tok_s,device_used_bytes,tflops,tflops_fraction_of_gemm,uniform_experts_per_moe_layer,kernels_per_step,us_beyond_copy_per_kernel";

/// Header of synthetic_speedup.csv.
pub const SYNTHETIC_HEADER: &str = "batch_size,prompt_len,repeat,synthetic,profile,steps,topk,num_draft_tokens,tau,expected_tau,base_tok_s,spec_tok_s,measured_speedup,base_step_us,draft_us_per_step,verify_us,verify_over_decode,ideal_speedup,fraction_of_ideal,spec_prefill_ms,batch_steps,sequence_steps,tau_ideal_speedup,fraction_of_tau_ideal,verify_experts_per_moe_layer,verify_uniform_experts_per_moe_layer";

/// Header of scaling.csv.
pub const SCALING_HEADER: &str = "batch_size,prompt_len,repeats,step_us,bytes_read,kv_bytes,read_fraction_of_copy,tok_s,tflops,tflops_fraction_of_gemm,prefill_ms,prefill_tok_s,device_used_bytes,tau,verify_us,verify_over_decode,draft_us_per_step,measured_speedup,ideal_speedup,fraction_of_ideal,draft_extend_ms,batch_steps,sequence_steps,tau_ideal_speedup,fraction_of_tau_ideal,verify_experts_per_moe_layer,verify_uniform_experts_per_moe_layer,kernels_per_step,us_beyond_copy_per_kernel";

/// Fields of decode_bandwidth.csv that are not in [`CaseRepeat`].
pub struct DecodeContext<'a> {
    /// Element type name.
    pub dtype: &'a str,
    /// Whether forwards replay as CUDA graphs.
    pub graphs: bool,
    /// Bytes of the target's weights (every step reads them).
    pub weight_bytes: usize,
    /// Experts touched per MoE layer per forward (0 on dense targets).
    pub experts_per_layer: f64,
    /// Bytes of the experts a step reads.
    pub expert_bytes: f64,
    /// Experts per MoE layer the batch would touch if routed independently
    /// and uniformly (0 on dense targets).
    pub uniform_experts_per_layer: f64,
}

/// A decode_bandwidth.csv row.
pub fn decode_row(r: &CaseRepeat, c: &DecodeContext, ceil: Ceilings) -> String {
    let step_s = r.step_us * 1e-6;
    let gb_s = c.weight_bytes as f64 / step_s / 1e9;
    let read_gb_s = r.bytes_read / step_s / 1e9;
    let tflops = r.step_flops / step_s / 1e12;
    format!(
        "{},{},{},{},{},{},{:.1},{gb_s:.1},{:.1},{:.4},{:.2},{:.2},{:.0},{:.0},{:.0},{read_gb_s:.1},{:.4},{:.2},{:.1},{},{tflops:.2},{:.4},{:.2},{},{}\n",
        r.batch,
        r.prompt_len,
        r.repeat,
        c.dtype,
        c.graphs,
        c.weight_bytes,
        r.step_us,
        ceil.copy_gb_s,
        gb_s / ceil.copy_gb_s,
        r.tok_s,
        c.experts_per_layer,
        c.expert_bytes,
        r.kv_bytes,
        r.bytes_read,
        read_gb_s / ceil.copy_gb_s,
        r.prefill_ms,
        prefill_tok_s(r),
        r.device_used_bytes,
        tflops / ceil.gemm_tflops,
        c.uniform_experts_per_layer,
        r.kernels.map_or(String::new(), |k| k.to_string()),
        r.beyond_copy_per_kernel_us(ceil.copy_gb_s)
            .map_or(String::new(), |u| format!("{u:.2}")),
    )
}

/// The synthetic profile's columns that are not in [`CaseRepeat`].
pub struct SyntheticContext {
    /// Conditional acceptance per position, `;`-joined.
    pub profile: String,
    /// Draft depth.
    pub steps: usize,
    /// Branching.
    pub topk: usize,
    /// Tokens verified per step.
    pub num_draft_tokens: usize,
    /// Tau the profile implies.
    pub expected_tau: f64,
}

/// A synthetic_speedup.csv row (None without a synthetic run).
pub fn synthetic_row(r: &CaseRepeat, c: &SyntheticContext) -> Option<String> {
    let s = r.synthetic.as_ref()?;
    let (measured, ideal, tau_ideal) = (r.speedup(s), r.ideal(s), r.tau_ideal(s));
    Some(format!(
        "{},{},{},true,{},{},{},{},{:.4},{:.4},{:.2},{:.2},{measured:.4},{:.1},{:.1},{:.1},{:.4},{ideal:.4},{:.4},{:.2},{},{:.2},{tau_ideal:.4},{:.4},{:.2},{:.2}\n",
        r.batch,
        r.prompt_len,
        r.repeat,
        c.profile,
        c.steps,
        c.topk,
        c.num_draft_tokens,
        s.tau,
        c.expected_tau,
        r.tok_s,
        s.tok_s,
        r.step_us,
        s.draft_us_per_step,
        s.verify_us,
        s.verify_us / r.step_us,
        measured / ideal,
        s.prefill_ms,
        s.steps,
        s.sequence_steps,
        measured / tau_ideal,
        s.experts_per_layer,
        s.uniform_experts_per_layer,
    ))
}

fn prefill_tok_s(r: &CaseRepeat) -> f64 {
    (r.batch * r.prompt_len) as f64 / (r.prefill_ms * 1e-3)
}

/// Median of `f` over `rows` (0 when empty).
fn med(rows: &[&CaseRepeat], f: impl Fn(&CaseRepeat) -> f64) -> f64 {
    let v: Vec<f64> = rows.iter().map(|r| f(r)).collect();
    median(v).unwrap_or(0.0)
}

/// Median of `f` over the synthetic halves of `rows` (empty when none).
fn med_syn(rows: &[&CaseRepeat], f: impl Fn(&CaseRepeat, &SyntheticRepeat) -> f64) -> String {
    let v: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.synthetic.as_ref().map(|s| f(r, s)))
        .collect();
    median(v).map_or(String::new(), |m| format!("{m:.4}"))
}

/// scaling.csv: one row per (batch, prompt length), medians over repeats,
/// in the order the cases ran.
pub fn scaling_rows(all: &[CaseRepeat], ceil: Ceilings) -> String {
    let mut keys: Vec<(usize, usize)> = Vec::new();
    for r in all {
        if !keys.contains(&(r.batch, r.prompt_len)) {
            keys.push((r.batch, r.prompt_len));
        }
    }
    let mut out = String::new();
    for (batch, prompt_len) in keys {
        let rows: Vec<&CaseRepeat> = all
            .iter()
            .filter(|r| r.batch == batch && r.prompt_len == prompt_len)
            .collect();
        let step_us = med(&rows, |r| r.step_us);
        let read_frac = med(&rows, |r| r.bytes_read / (r.step_us * 1e-6) / 1e9) / ceil.copy_gb_s;
        let tflops = med(&rows, |r| r.step_flops / (r.step_us * 1e-6) / 1e12);
        out.push_str(&format!(
            "{batch},{prompt_len},{},{step_us:.1},{:.0},{:.0},{read_frac:.4},{:.2},{tflops:.2},{:.4},{:.2},{:.1},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            rows.len(),
            med(&rows, |r| r.bytes_read),
            med(&rows, |r| r.kv_bytes),
            med(&rows, |r| r.tok_s),
            tflops / ceil.gemm_tflops,
            med(&rows, |r| r.prefill_ms),
            med(&rows, prefill_tok_s),
            rows.iter().map(|r| r.device_used_bytes).max().unwrap_or(0),
            med_syn(&rows, |_, s| s.tau),
            med_syn(&rows, |_, s| s.verify_us),
            med_syn(&rows, |r, s| s.verify_us / r.step_us),
            med_syn(&rows, |_, s| s.draft_us_per_step),
            med_syn(&rows, |r, s| r.speedup(s)),
            med_syn(&rows, |r, s| r.ideal(s)),
            med_syn(&rows, |r, s| r.speedup(s) / r.ideal(s)),
            med_syn(&rows, |_, s| s.draft_prefill_ms),
            med_syn(&rows, |_, s| s.steps as f64),
            med_syn(&rows, |_, s| s.sequence_steps),
            med_syn(&rows, |r, s| r.tau_ideal(s)),
            med_syn(&rows, |r, s| r.speedup(s) / r.tau_ideal(s)),
            med_syn(&rows, |_, s| s.experts_per_layer),
            med_syn(&rows, |_, s| s.uniform_experts_per_layer),
            rows.iter()
                .filter_map(|r| r.kernels)
                .max()
                .map_or(String::new(), |k| k.to_string()),
            median(
                rows.iter()
                    .filter_map(|r| r.beyond_copy_per_kernel_us(ceil.copy_gb_s))
                    .collect::<Vec<f64>>()
            )
            .map_or(String::new(), |u| format!("{u:.2}")),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(batch: usize, step_us: f64, tau: f64) -> CaseRepeat {
        CaseRepeat {
            batch,
            prompt_len: 128,
            step_us,
            bytes_read: 1e9,
            tok_s: batch as f64 / (step_us * 1e-6),
            prefill_ms: 10.0,
            step_flops: 1e12,
            kernels: Some(100),
            synthetic: Some(SyntheticRepeat {
                tau,
                tok_s: tau * batch as f64 / (2.0 * step_us * 1e-6),
                verify_us: 1.5 * step_us,
                draft_us_per_step: 0.5 * step_us,
                // 10 steps of every sequence, each drafting and verifying.
                draft_verify_us: 10.0 * 2.0 * step_us,
                decode_tokens: (10.0 * tau * batch as f64).round() as usize,
                sequence_steps: 10.0,
                experts_per_layer: 0.0,
                uniform_experts_per_layer: 0.0,
                prefill_ms: 11.0,
                draft_prefill_ms: 0.8,
                steps: 10,
            }),
            ..CaseRepeat::default()
        }
    }

    #[test]
    fn scaling_has_one_row_per_case_with_the_median_of_its_repeats() {
        let ceil = Ceilings {
            copy_gb_s: 1000.0,
            gemm_tflops: 500.0,
        };
        let rows = vec![
            repeat(1, 1000.0, 2.0),
            repeat(1, 3000.0, 2.0),
            repeat(1, 2000.0, 2.0),
            repeat(8, 4000.0, 3.0),
        ];
        let csv = scaling_rows(&rows, ceil);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        let cells: Vec<&str> = lines[0].split(',').collect();
        assert_eq!(
            cells.len(),
            SCALING_HEADER.split(',').count(),
            "{}",
            lines[0]
        );
        assert_eq!(&cells[..4], ["1", "128", "3", "2000.0"]);
        // 1 GB over 2 ms is 500 GB/s: half the copy ceiling.
        assert_eq!(cells[6], "0.5000");
        // verify 1.5 steps; speedup tau/2 of an ideal tau/2: 100% of ideal.
        assert_eq!(cells[15], "1.5000");
        assert_eq!(cells[19], "1.0000");
        // the draft's extend over the prompts: its own spans (0.8 ms), not
        // the difference of two prefills (11 - 10 ms, whose noise at long
        // prompts outweighs it).
        assert_eq!(cells[20], "0.8000");
        // 1 GB at 1000 GB/s is 1000 us of the 2000 us step, over 100 kernels.
        assert_eq!(cells[27], "100");
        assert_eq!(cells[28], "10.00");
        // Without a kernel count (no graphs) both cells are empty.
        let eager: Vec<CaseRepeat> = rows
            .iter()
            .map(|r| CaseRepeat {
                kernels: None,
                ..r.clone()
            })
            .collect();
        let csv = scaling_rows(&eager, ceil);
        let cells: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        assert_eq!(&cells[27..], ["", ""]);
    }

    #[test]
    fn a_batch_tail_lowers_the_tau_ideal_but_not_the_span_ideal() {
        // Sequences need 10 steps on average but the batch steps 12 times
        // (its slowest sequence), with no host time between the spans: the
        // engine turned all of its drafting and verifying into tokens.
        let mut r = repeat(8, 1000.0, 3.0);
        let s = r.synthetic.as_mut().unwrap();
        s.steps = 12;
        s.draft_verify_us = 12.0 * 2.0 * 1000.0;
        s.tok_s = s.decode_tokens as f64 / (s.draft_verify_us * 1e-6);
        let s = r.synthetic.clone().unwrap();
        assert!((r.speedup(&s) / r.ideal(&s) - 1.0).abs() < 1e-9);
        assert!((r.speedup(&s) / r.tau_ideal(&s) - 10.0 / 12.0).abs() < 1e-9);
        // Host time between the spans (a quarter of the run) shows in both.
        let mut slow = s.clone();
        slow.tok_s = s.tok_s * 0.75;
        assert!((r.speedup(&slow) / r.ideal(&slow) - 0.75).abs() < 1e-9);
    }

    #[test]
    fn every_row_has_as_many_cells_as_its_header() {
        let r = repeat(4, 1000.0, 2.5);
        let ceil = Ceilings {
            copy_gb_s: 1000.0,
            gemm_tflops: 500.0,
        };
        let d = DecodeContext {
            dtype: "bf16",
            graphs: true,
            weight_bytes: 1,
            experts_per_layer: 0.0,
            expert_bytes: 0.0,
            uniform_experts_per_layer: 0.0,
        };
        let s = SyntheticContext {
            profile: "0.8".into(),
            steps: 5,
            topk: 1,
            num_draft_tokens: 6,
            expected_tau: 3.0,
        };
        for (row, header) in [
            (decode_row(&r, &d, ceil), DECODE_HEADER),
            (synthetic_row(&r, &s).unwrap(), SYNTHETIC_HEADER),
        ] {
            assert_eq!(
                row.trim_end().split(',').count(),
                header.split(',').count(),
                "{row}"
            );
        }
    }
}
