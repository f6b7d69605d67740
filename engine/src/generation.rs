//! What a generation produced, and the acceptance metrics of docs/DESIGN.md (section 7)
//! computed from it.

use crate::speculative::SpeculativeConfig;

/// Why a sequence stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It emitted an end-of-sequence token.
    Eos,
    /// It reached `max_new_tokens`.
    #[default]
    Length,
    /// Whoever asked for it went away before it finished (a server's
    /// client that disconnected).
    Cancelled,
}

impl std::fmt::Display for FinishReason {
    /// The reason as JSON and the servers' `finish_reason` spell it: `eos`, `length`, `cancelled`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FinishReason::Eos => "eos",
            FinishReason::Length => "length",
            FinishReason::Cancelled => "cancelled",
        })
    }
}

/// One sequence's output and acceptance record.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SequenceResult {
    /// Prompt tokens.
    pub prompt_len: usize,
    /// Generated token ids (the prefill's token first).
    pub output: Vec<u32>,
    /// Why it stopped.
    pub finish: FinishReason,
    /// Decode (verify) steps it took part in.
    pub verify_steps: usize,
    /// Draft tokens accepted and emitted at each verify step (tokens past EOS
    /// or the length limit are not credited).
    pub accepted_per_step: Vec<u16>,
    /// Tokens emitted at each verify step (bonus included, after EOS/length truncation).
    pub emitted_per_step: Vec<u16>,
    /// Seconds from the start to its first token.
    pub ttft_s: f64,
    /// Seconds from the start to its last token.
    pub finished_s: f64,
}

impl SequenceResult {
    /// Acceptance length: tokens emitted per verify step (the prefill's token excluded).
    pub fn tau(&self) -> f64 {
        if self.verify_steps == 0 {
            return 0.0;
        }
        self.emitted_per_step.iter().map(|&e| e as f64).sum::<f64>() / self.verify_steps as f64
    }

    /// Seconds per output token after the first.
    pub fn tpot_s(&self) -> Option<f64> {
        (self.output.len() > 1)
            .then(|| (self.finished_s - self.ttft_s) / (self.output.len() - 1) as f64)
    }
}

/// A batch's generation.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Generation {
    /// Per sequence, in prompt order.
    pub sequences: Vec<SequenceResult>,
    /// Seconds of the prefill phase.
    pub prefill_s: f64,
    /// Seconds of the decode phase.
    pub decode_s: f64,
    /// Decode steps of the batch.
    pub batch_steps: usize,
    /// The speculation knobs used.
    pub speculative: SpeculativeConfig,
}

impl Generation {
    /// Verify steps summed over sequences.
    pub fn verify_steps(&self) -> usize {
        self.sequences.iter().map(|s| s.verify_steps).sum()
    }

    /// Tokens emitted by verify steps, summed over sequences.
    pub fn emitted_in_decode(&self) -> usize {
        self.sequences
            .iter()
            .flat_map(|s| &s.emitted_per_step)
            .map(|&e| e as usize)
            .sum()
    }

    /// Generated tokens, summed over sequences (prefill tokens included).
    pub fn output_tokens(&self) -> usize {
        self.sequences.iter().map(|s| s.output.len()).sum()
    }

    /// Run acceptance length: tokens emitted by verify steps / verify steps (1.00 for the baseline).
    pub fn tau(&self) -> f64 {
        let v = self.verify_steps();
        if v == 0 {
            0.0
        } else {
            self.emitted_in_decode() as f64 / v as f64
        }
    }

    /// Accepted draft tokens / (verify steps * (num_draft_tokens - 1)); 0 for the baseline.
    pub fn accept_rate(&self) -> f64 {
        let slots = self.verify_steps() * self.speculative.num_draft_tokens.saturating_sub(1);
        if slots == 0 {
            return 0.0;
        }
        let accepted: usize = self
            .sequences
            .iter()
            .flat_map(|s| &s.accepted_per_step)
            .map(|&a| a as usize)
            .sum();
        accepted as f64 / slots as f64
    }

    /// `a_k` for k = 1..=steps: the fraction of verify steps whose accepted path reaches depth k.
    pub fn per_position_acceptance(&self) -> Vec<f64> {
        let v = self.verify_steps();
        (1..=self.speculative.steps)
            .map(|k| {
                let reach = self
                    .sequences
                    .iter()
                    .flat_map(|s| &s.accepted_per_step)
                    .filter(|&&a| a as usize >= k)
                    .count();
                if v == 0 {
                    0.0
                } else {
                    reach as f64 / v as f64
                }
            })
            .collect()
    }

    /// Output tokens per second of the decode phase.
    pub fn decode_throughput(&self) -> f64 {
        if self.decode_s <= 0.0 {
            return 0.0;
        }
        (self.output_tokens() - self.sequences.len()) as f64 / self.decode_s
    }
}
