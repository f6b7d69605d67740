//! What `specula serve` counts across requests: the vLLM spec-decode
//! counters (served on `/metrics` under vLLM's names, as
//! `prometheus_client` writes counters: `_total` suffix, `position` label
//! 0-based) and SGLang's running `avg_spec_accept_length`.

use super::field_set::FieldSet;
use specula_engine::generation::SequenceResult;
use specula_engine::speculative::SpeculativeConfig;
use std::fmt::Write;

/// Counters since the server started.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Finished requests.
    pub requests: u64,
    /// Prompt tokens of every request.
    pub prompt_tokens: u64,
    /// Generated tokens of every request.
    pub generation_tokens: u64,
    /// Verify steps with a draft (vLLM `num_drafts`).
    pub drafts: u64,
    /// Draft slots verified (verify steps x (num_draft_tokens - 1)).
    pub draft_tokens: u64,
    /// Accepted draft tokens.
    pub accepted: u64,
    /// Verify steps whose accepted path reached depth k + 1.
    pub accepted_per_pos: Vec<u64>,
    /// Tokens emitted by verify steps (SGLang's accept length numerator).
    pub emitted: u64,
    /// Batches generated.
    pub batches: u64,
    /// Requests in the largest batch.
    pub largest_batch: u64,
}

impl Counters {
    /// Counts a batch of `n` requests.
    pub fn batch(&mut self, n: usize) {
        self.batches += 1;
        self.largest_batch = self.largest_batch.max(n as u64);
    }

    /// Adds one finished sequence generated under `speculative`.
    pub fn record(&mut self, r: &SequenceResult, speculative: SpeculativeConfig) {
        self.requests += 1;
        self.prompt_tokens += r.prompt_len as u64;
        self.generation_tokens += r.output.len() as u64;
        if speculative.is_baseline() {
            return;
        }
        self.accepted_per_pos.resize(speculative.steps, 0);
        self.drafts += r.verify_steps as u64;
        self.draft_tokens +=
            (r.verify_steps * speculative.num_draft_tokens.saturating_sub(1)) as u64;
        for &a in &r.accepted_per_step {
            self.accepted += a as u64;
            for k in 0..(a as usize).min(speculative.steps) {
                self.accepted_per_pos[k] += 1;
            }
        }
        self.emitted += r.emitted_per_step.iter().map(|&e| e as u64).sum::<u64>();
    }

    /// Tokens emitted per verify step so far (SGLang's `avg_spec_accept_length`).
    pub fn avg_accept_length(&self) -> Option<f64> {
        (self.drafts > 0).then(|| self.emitted as f64 / self.drafts as f64)
    }

    /// The Prometheus text of `/metrics` (spec-decode counters only when
    /// speculating): current vLLM's `_total` names with `engine` and
    /// `model_name` labels, or (legacy) bare names with `model_name` only.
    pub fn prometheus(
        &self,
        model: &str,
        speculative: SpeculativeConfig,
        fields: FieldSet,
    ) -> String {
        let mut out = String::new();
        let model = model.replace('"', "\\\"");
        let (labels, suffix) = match fields {
            FieldSet::Current => (format!("engine=\"0\",model_name=\"{model}\""), "_total"),
            FieldSet::Legacy => (format!("model_name=\"{model}\""), ""),
        };
        let mut counter = |name: &str, help: &str, samples: &[(String, u64)]| {
            let _ = writeln!(out, "# HELP {name}{suffix} {help}");
            let _ = writeln!(out, "# TYPE {name}{suffix} counter");
            for (extra, v) in samples {
                let _ = writeln!(out, "{name}{suffix}{{{labels}{extra}}} {v}.0");
            }
        };
        let one = |v: u64| vec![(String::new(), v)];
        counter(
            "vllm:request_success",
            "Finished requests.",
            &one(self.requests),
        );
        counter(
            "vllm:prompt_tokens",
            "Prefill tokens processed.",
            &one(self.prompt_tokens),
        );
        counter(
            "vllm:generation_tokens",
            "Generation tokens processed.",
            &one(self.generation_tokens),
        );
        if !speculative.is_baseline() {
            counter(
                "vllm:spec_decode_num_drafts",
                "Number of spec decoding drafts.",
                &one(self.drafts),
            );
            counter(
                "vllm:spec_decode_num_draft_tokens",
                "Number of draft tokens.",
                &one(self.draft_tokens),
            );
            counter(
                "vllm:spec_decode_num_accepted_tokens",
                "Number of accepted tokens.",
                &one(self.accepted),
            );
            let per_pos: Vec<(String, u64)> = (0..speculative.steps)
                .map(|k| {
                    (
                        format!(",position=\"{k}\""),
                        self.accepted_per_pos.get(k).copied().unwrap_or(0),
                    )
                })
                .collect();
            counter(
                "vllm:spec_decode_num_accepted_tokens_per_pos",
                "Accepted tokens per draft position.",
                &per_pos,
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::prometheus::Metrics;

    #[test]
    fn counters_follow_vllm_semantics_and_read_back_through_the_parser() {
        let speculative = SpeculativeConfig::new(3, 1, 4).unwrap();
        let seq = SequenceResult {
            prompt_len: 5,
            output: vec![1; 9],
            verify_steps: 3,
            accepted_per_step: vec![3, 0, 1],
            emitted_per_step: vec![4, 1, 2],
            ..SequenceResult::default()
        };
        let mut c = Counters::default();
        c.record(&seq, speculative);
        assert_eq!((c.drafts, c.draft_tokens, c.accepted), (3, 9, 4));
        assert_eq!(c.accepted_per_pos, vec![2, 1, 1]);
        assert_eq!(c.avg_accept_length(), Some(7.0 / 3.0));
        let m = Metrics::parse(&c.prometheus("m", speculative, FieldSet::Current)).unwrap();
        let legacy = Metrics::parse(&c.prometheus("m", speculative, FieldSet::Legacy)).unwrap();
        assert_eq!(legacy.sum("vllm:spec_decode_num_drafts"), 3.0);
        assert!(!legacy.samples.iter().any(|s| s.name.ends_with("_total")));
        assert_eq!(m.sum("vllm:spec_decode_num_drafts"), 3.0);
        assert_eq!(m.sum("vllm:spec_decode_num_accepted_tokens"), 4.0);
        let pos = m.sum_by("vllm:spec_decode_num_accepted_tokens_per_pos", "position");
        assert_eq!(pos["0"], 2.0);
        assert_eq!(pos["2"], 1.0);
        // A baseline server has no spec-decode counters, as vLLM without a speculative config.
        assert!(!Metrics::parse(&c.prometheus(
            "m",
            SpeculativeConfig::BASELINE,
            FieldSet::Current
        ))
        .unwrap()
        .has("vllm:spec_decode_num_drafts"));
    }
}
