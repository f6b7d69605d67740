//! The speculation knobs, as SGLang names them.

use crate::error::{EngineError, Result};

/// `steps` (draft depth), `topk` (branching per step), `num_draft_tokens`
/// (tokens verified per step, root included). `steps = 0` is the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SpeculativeConfig {
    /// Draft forwards per step (depth of the tree); 0 = no speculation.
    pub steps: usize,
    /// Children kept per expanded node (1 = a chain).
    pub topk: usize,
    /// Tokens verified per step, the root included.
    pub num_draft_tokens: usize,
}

impl SpeculativeConfig {
    /// The plain-decoding baseline.
    pub const BASELINE: SpeculativeConfig = SpeculativeConfig {
        steps: 0,
        topk: 1,
        num_draft_tokens: 1,
    };

    /// Checks a combination: `steps = 0` gives the baseline whatever the
    /// other two say; otherwise `topk >= 1` and `2 <= num_draft_tokens <= steps * topk + 1`.
    pub fn new(steps: usize, topk: usize, num_draft_tokens: usize) -> Result<SpeculativeConfig> {
        if steps == 0 {
            return Ok(SpeculativeConfig::BASELINE);
        }
        if topk == 0 {
            return Err(EngineError::setting(
                "topk",
                "must be at least 1 when steps > 0",
            ));
        }
        if num_draft_tokens < 2 {
            return Err(EngineError::setting("num_draft_tokens", format!("{num_draft_tokens}: must be at least 2 (the root plus one draft token) when steps > 0")));
        }
        let max = steps * topk + 1;
        if num_draft_tokens > max {
            return Err(EngineError::setting(
                "num_draft_tokens",
                format!("{num_draft_tokens} > steps * topk + 1 = {steps} * {topk} + 1 = {max}: the tree cannot hold that many tokens"),
            ));
        }
        Ok(SpeculativeConfig {
            steps,
            topk,
            num_draft_tokens,
        })
    }

    /// The chain `steps` deep (`topk = 1`, `num_draft_tokens = steps + 1`).
    pub fn chain(steps: usize) -> SpeculativeConfig {
        SpeculativeConfig {
            steps,
            topk: 1,
            num_draft_tokens: steps + 1,
        }
    }

    /// Whether this is the no-speculation baseline.
    pub fn is_baseline(&self) -> bool {
        self.steps == 0
    }
}

impl std::fmt::Display for SpeculativeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_baseline() {
            write!(f, "baseline")
        } else {
            write!(
                f,
                "steps={} topk={} draft_tokens={}",
                self.steps, self.topk, self.num_draft_tokens
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_beyond_the_tree_capacity_are_refused() {
        assert!(SpeculativeConfig::new(3, 2, 7).is_ok());
        let e = SpeculativeConfig::new(3, 2, 8).unwrap_err().to_string();
        assert!(
            e.contains("num_draft_tokens") && e.contains("3 * 2 + 1 = 7"),
            "{e}"
        );
        assert!(SpeculativeConfig::new(2, 0, 2).is_err());
        assert!(SpeculativeConfig::new(2, 1, 1).is_err());
        assert_eq!(
            SpeculativeConfig::new(0, 4, 16).unwrap(),
            SpeculativeConfig::BASELINE
        );
    }
}
