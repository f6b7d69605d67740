//! What a server says it loaded, against what the sweep asked for: a
//! mismatch fails the point with the reason (docs/DESIGN.md 9.5).
//!
//! - SGLang: `/server_info` carries its server arguments,
//!   `speculative_algorithm`, `speculative_num_steps`,
//!   `speculative_eagle_topk`, `speculative_num_draft_tokens` (null or absent
//!   on a server without speculation).
//! - vLLM: the log line its EAGLE-3 setup writes when the model loads,
//!   `Using Eagle3 auxiliary layers from config: (a, b, c)` or, without ids
//!   in the draft's config, `... falling back to the default (a, b, c)`
//!   (`vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py`,
//!   `set_eagle3_aux_hidden_state_layers`, lines 26-35 at 0cfdd2e), read from
//!   servers.log.

use serde_json::Value;
use specula_engine::speculative::SpeculativeConfig;

/// Why the SGLang server's `/server_info` does not run `asked` (`None`:
/// the baseline) with `method` (SGLang's algorithm name, when the spec gives
/// one), if it does not. Fields the server leaves out are not judged.
pub fn sglang_mismatch(
    info: &Value,
    asked: Option<SpeculativeConfig>,
    method: Option<&str>,
) -> Option<String> {
    let algorithm = info
        .get("speculative_algorithm")
        .and_then(Value::as_str)
        .filter(|a| !a.eq_ignore_ascii_case("none"));
    let Some(asked) = asked else {
        return algorithm.map(|a| {
            format!("the baseline server runs speculative_algorithm {a} (expected none)")
        });
    };
    if info.get("speculative_algorithm").is_some() && algorithm.is_none() {
        return Some(
            "the server runs no speculative algorithm (speculative_algorithm is null)".into(),
        );
    }
    if let (Some(want), Some(got)) = (method, algorithm) {
        if !want.eq_ignore_ascii_case(got) {
            return Some(format!(
                "the server runs speculative_algorithm {got}, the spec asks for {want}"
            ));
        }
    }
    let knobs = [
        ("speculative_num_steps", asked.steps),
        ("speculative_eagle_topk", asked.topk),
        ("speculative_num_draft_tokens", asked.num_draft_tokens),
    ];
    let wrong: Vec<String> = knobs
        .iter()
        .filter_map(|&(name, want)| {
            let got = info.get(name).and_then(Value::as_u64)?;
            (got != want as u64).then(|| format!("{name} {got} (the spec asks for {want})"))
        })
        .collect();
    (!wrong.is_empty()).then(|| format!("the server loaded {}", wrong.join(", ")))
}

/// The ids in the last EAGLE-3 aux-layer line of `log`, and whether they
/// were vLLM's default (the draft's config named none).
pub fn vllm_aux_layers(log: &str) -> Option<(Vec<i64>, bool)> {
    const FROM_CONFIG: &str = "Using Eagle3 auxiliary layers from config: ";
    const DEFAULT: &str = "falling back to the default ";
    log.lines().rev().find_map(|line| {
        let (rest, default) = match (line.find(FROM_CONFIG), line.find(DEFAULT)) {
            (Some(i), _) => (&line[i + FROM_CONFIG.len()..], false),
            (None, Some(i)) => (&line[i + DEFAULT.len()..], true),
            _ => return None,
        };
        let inner = rest.strip_prefix(['(', '['])?;
        let end = inner.find([')', ']'])?;
        let ids = inner[..end]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect::<Option<Vec<i64>>>()?;
        Some((ids, default))
    })
}

/// Why the vLLM server's log says it feeds other layers than `expected`, if it does.
pub fn vllm_mismatch(log: &str, expected: &[i64]) -> Option<String> {
    let (ids, default) = vllm_aux_layers(log)?;
    (ids != expected).then(|| {
        format!(
            "the server feeds the draft aux layers {ids:?}{} (the spec expects {expected:?})",
            if default { ", vLLM's default" } else { "" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(steps: usize, topk: usize, n: usize) -> Option<SpeculativeConfig> {
        Some(SpeculativeConfig::new(steps, topk, n).unwrap())
    }

    #[test]
    fn sglang_server_info_is_checked_against_the_asked_config() {
        let info = json!({"speculative_algorithm": "EAGLE3", "speculative_num_steps": 3,
            "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4});
        assert_eq!(
            sglang_mismatch(&info, config(3, 1, 4), Some("eagle3")),
            None
        );
        let why = sglang_mismatch(&info, config(5, 1, 6), None).unwrap();
        assert!(
            why.contains("speculative_num_steps 3 (the spec asks for 5)"),
            "{why}"
        );
        assert!(
            why.contains("speculative_num_draft_tokens 4 (the spec asks for 6)"),
            "{why}"
        );
        let why = sglang_mismatch(&info, config(3, 1, 4), Some("NGRAM")).unwrap();
        assert!(why.contains("EAGLE3, the spec asks for NGRAM"), "{why}");
        let why = sglang_mismatch(&info, None, None).unwrap();
        assert!(why.contains("baseline server runs"), "{why}");
        let plain = json!({"speculative_algorithm": null, "speculative_num_steps": null});
        assert_eq!(sglang_mismatch(&plain, None, None), None);
        assert!(sglang_mismatch(&plain, config(3, 1, 4), None).is_some());
        // A server that says nothing is not judged.
        assert_eq!(sglang_mismatch(&json!({}), config(3, 1, 4), None), None);
    }

    #[test]
    fn vllm_log_lines_give_the_aux_layers_it_feeds() {
        let log = "=== 2026-12-01T00:00:00Z vllm serve ...\n\
INFO 12-01 00:00:05 [eagle3_utils.py:27] Using Eagle3 auxiliary layers from config: (0, 2, 4)\n";
        assert_eq!(vllm_aux_layers(log), Some((vec![0, 2, 4], false)));
        assert_eq!(vllm_mismatch(log, &[0, 2, 4]), None);
        let fallback =
            "WARNING 12-01 00:00:05 [eagle3_utils.py:29] Eagle3 aux layers not set in the \
draft model config; falling back to the default (2, 4, 5). Acceptance will be low";
        let why = vllm_mismatch(fallback, &[0, 2, 4]).unwrap();
        assert!(why.contains("[2, 4, 5], vLLM's default"), "{why}");
        assert_eq!(vllm_aux_layers("INFO nothing to see"), None);
    }
}
