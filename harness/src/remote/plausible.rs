//! What a server's figures can be. A row whose figures no engine could
//! produce (a tau past the tokens one verify step can emit, an accept rate
//! or an a_k outside [0, 1], more tokens than were asked for, a non-finite
//! number) is a failed point with the reason, never a result to plot: a
//! broken or foreign server once gave tau 1.25e14 and 1.8e19 tok/s.

use super::row::RowResult;

/// What the row asked for.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    /// Draft depth (0: a baseline).
    pub steps: usize,
    /// Tokens verified per step, the root included.
    pub num_draft_tokens: usize,
    /// Tokens per request at most.
    pub max_new_tokens: usize,
    /// Requests sent.
    pub requests: usize,
}

/// Why `r` cannot be what a server produced for `asked`, if it cannot.
pub fn impossible(r: &RowResult, asked: Asked) -> Option<String> {
    let m = &r.measures;
    let finite = [
        ("tau", m.tau),
        ("accept_rate", m.accept_rate),
        ("throughput_tok_s", m.throughput_tok_s),
        ("decode_s", m.decode_s),
        ("prefill_s", m.prefill_s),
    ];
    if let Some((name, v)) = finite.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
        return Some(format!("{name} = {v} (must be finite and >= 0)"));
    }
    let most = asked.requests * asked.max_new_tokens;
    if m.output_tokens > most {
        return Some(format!(
            "{} output tokens for {} requests of at most {} (at most {most})",
            m.output_tokens, asked.requests, asked.max_new_tokens
        ));
    }
    if m.verify_steps > m.output_tokens {
        return Some(format!(
            "{} verify steps for {} output tokens (each step emits at least one)",
            m.verify_steps, m.output_tokens
        ));
    }
    if asked.steps > 0 && m.verify_steps > 0 {
        // One verify step emits its accepted drafts (at most the depth, and
        // at most the drafted tokens) plus the target's own token.
        let longest = asked.steps.min(asked.num_draft_tokens.saturating_sub(1)) + 1;
        if !(1.0..=longest as f64).contains(&m.tau) {
            return Some(format!(
                "tau {} outside [1, {longest}] for steps {} and {} draft tokens",
                m.tau, asked.steps, asked.num_draft_tokens
            ));
        }
    }
    if m.accept_rate > 1.0 {
        return Some(format!("accept rate {} above 1", m.accept_rate));
    }
    if let Some((k, a)) = r
        .positions
        .iter()
        .enumerate()
        .find(|(_, a)| !(0.0..=1.0).contains(*a))
    {
        return Some(format!("a_{} = {a} outside [0, 1]", k + 1));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_folder::{Measures, SpanInterval};
    use std::time::Duration;

    fn row(
        tau: f64,
        accept_rate: f64,
        positions: Vec<f64>,
        output_tokens: usize,
        tok_s: f64,
    ) -> RowResult {
        RowResult {
            measures: Measures {
                output_tokens,
                verify_steps: 10,
                wall_s: 1.0,
                prefill_s: 0.1,
                decode_s: 0.5,
                throughput_tok_s: tok_s,
                tau,
                accept_rate,
                speedup: None,
                ttft_ms_p50: None,
                tpot_ms_p50: None,
                lossless: None,
                decode_cpu_s: 0.0,
                cpu_tok_s: 0.0,
                cpu_speedup: None,
            },
            positions,
            outputs: Vec::new(),
            interval: SpanInterval {
                start: Duration::ZERO,
                duration: Duration::ZERO,
                log: Default::default(),
                client: Default::default(),
            },
            server_tau: None,
            requests: Vec::new(),
        }
    }

    const ASKED: Asked = Asked {
        steps: 3,
        num_draft_tokens: 4,
        max_new_tokens: 16,
        requests: 2,
    };

    #[test]
    fn figures_a_server_could_give_pass() {
        assert_eq!(
            impossible(&row(2.5, 0.5, vec![0.8, 0.5, 0.2], 30, 900.0), ASKED),
            None
        );
        assert_eq!(
            impossible(&row(4.0, 1.0, vec![1.0, 1.0, 1.0], 32, 1e4), ASKED),
            None
        );
    }

    #[test]
    fn the_impossible_figures_seen_from_fake_servers_are_refused_with_a_reason() {
        let cases = [
            (
                row(1.25e14, 0.5, vec![], 30, 900.0),
                "tau 125000000000000 outside [1, 4]",
            ),
            (row(2.0, 33.0, vec![], 30, 900.0), "accept rate 33 above 1"),
            (
                row(2.0, 0.5, vec![0.5, 125000.0], 30, 900.0),
                "a_2 = 125000",
            ),
            (row(2.0, 0.5, vec![-20.0], 30, 900.0), "a_1 = -20"),
            (
                row(2.0, 0.5, vec![], 30, f64::INFINITY),
                "throughput_tok_s = inf",
            ),
            (
                row(2.0, 0.5, vec![], 18_000_000_000, 1.8e19),
                "18000000000 output tokens",
            ),
            (
                row(2.0, 0.5, vec![], 5, 900.0),
                "10 verify steps for 5 output tokens",
            ),
        ];
        for (r, why) in cases {
            let got = impossible(&r, ASKED).expect("refused");
            assert!(got.contains(why), "{got:?} should say {why:?}");
        }
    }
}
