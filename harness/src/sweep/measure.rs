//! From the `generate` calls of one row to its measures (docs/DESIGN.md's
//! definitions): the batches' generations are concatenated into one, so tau,
//! accept rate and a_k are ratios of sums over every sequence of the row,
//! and throughput is decode-phase tokens over decode seconds summed over
//! batches.

use crate::run_folder::Measures;
use specula_engine::generation::Generation;
use specula_engine::speculative::SpeculativeConfig;

/// The row's generations joined: sequences in prompt order, times and steps summed.
pub fn join(gens: Vec<Generation>, speculative: SpeculativeConfig) -> Generation {
    let mut all = Generation {
        sequences: Vec::new(),
        prefill_s: 0.0,
        decode_s: 0.0,
        batch_steps: 0,
        speculative,
    };
    for g in gens {
        all.sequences.extend(g.sequences);
        all.prefill_s += g.prefill_s;
        all.decode_s += g.decode_s;
        all.batch_steps += g.batch_steps;
    }
    all
}

/// The median of `xs` (mean of the middle two for an even count); `None` when empty.
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

/// Measures of a joined generation; `speedup` and `lossless` are filled in by the runner.
pub fn measures(g: &Generation, wall_s: f64) -> Measures {
    let decode_tokens = g.output_tokens().saturating_sub(g.sequences.len());
    Measures {
        output_tokens: g.output_tokens(),
        verify_steps: g.verify_steps(),
        wall_s,
        prefill_s: g.prefill_s,
        decode_s: g.decode_s,
        throughput_tok_s: if g.decode_s > 0.0 {
            decode_tokens as f64 / g.decode_s
        } else {
            0.0
        },
        tau: g.tau(),
        accept_rate: g.accept_rate(),
        speedup: None,
        ttft_ms_p50: median(g.sequences.iter().map(|s| s.ttft_s * 1e3).collect()),
        tpot_ms_p50: median(
            g.sequences
                .iter()
                .filter_map(|s| s.tpot_s())
                .map(|s| s * 1e3)
                .collect(),
        ),
        lossless: None,
        decode_cpu_s: 0.0,
        cpu_tok_s: 0.0,
        cpu_speedup: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
