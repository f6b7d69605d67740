//! The per-request speculative fields each engine version answers with,
//! read current names first and the older ones as a fallback
//! (docs/DESIGN.md 7.11 cites the engines' source for every name):
//!
//! - SGLang `/generate` `meta_info`: `spec_verify_ct`,
//!   `spec_num_correct_drafts` (alias `spec_accepted_drafts`),
//!   `spec_num_proposed_drafts` (alias `spec_proposed_drafts`),
//!   `spec_correct_drafts_histogram` (alias `spec_accept_histogram`);
//! - SGLang OpenAI endpoints: the same fields under
//!   `sglext.spec_tokens_details` (an object, or one per choice) when the
//!   request carried `return_spec_tokens_details`;
//! - vLLM OpenAI endpoints (`--per-request-spec-decode-metrics`):
//!   `metrics.speculative_decoding` with `num_spec_steps`,
//!   `num_accepted_draft_tokens`, `num_draft_tokens`, `acceptance_histogram`,
//!   and in the `detailed` mode each step's `per_step_accepted` and
//!   `per_step_drafted`, on the last streamed chunk;
//! - SGLang `/server_info` (alias `/get_server_info`): the running
//!   `avg_spec_accept_length`, per data-parallel rank in `internal_states`.

use serde_json::Value;

/// Which names a response used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldForm {
    /// The engine's current names.
    Current,
    /// Names kept as aliases or used by older versions.
    Legacy,
}

/// One request's speculative figures, as its response reports them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpecFields {
    /// Verify steps of the request.
    pub verify_steps: Option<usize>,
    /// Draft tokens accepted (correct drafts, the bonus token excluded).
    pub accepted: Option<usize>,
    /// Draft tokens proposed (with adaptive drafting, not steps x (n - 1)).
    pub proposed: Option<usize>,
    /// Verify steps by accepted drafts (index j: steps that accepted exactly j).
    pub histogram: Option<Vec<u64>>,
    /// Which names were found (`None` when no speculative field was).
    pub form: Option<FieldForm>,
}

fn count(v: &Value, name: &str) -> Option<usize> {
    v.get(name).and_then(Value::as_u64).map(|n| n as usize)
}

fn list(v: &Value, name: &str) -> Option<Vec<u64>> {
    v.get(name)
        .and_then(Value::as_array)
        .map(|h| h.iter().map(|x| x.as_u64().unwrap_or(0)).collect())
}

/// The current name's value, else the alias's; says which was used.
fn either<T>(
    v: &Value,
    current: &str,
    alias: &str,
    read: impl Fn(&Value, &str) -> Option<T>,
) -> (Option<T>, Option<FieldForm>) {
    match read(v, current) {
        Some(x) => (Some(x), Some(FieldForm::Current)),
        None => match read(v, alias) {
            Some(x) => (Some(x), Some(FieldForm::Legacy)),
            None => (None, None),
        },
    }
}

impl SpecFields {
    /// SGLang's fields in a `meta_info` object (or `sglext.spec_tokens_details`).
    pub fn sglang(meta: &Value) -> SpecFields {
        let (accepted, f1) = either(
            meta,
            "spec_num_correct_drafts",
            "spec_accepted_drafts",
            count,
        );
        let (proposed, f2) = either(
            meta,
            "spec_num_proposed_drafts",
            "spec_proposed_drafts",
            count,
        );
        let (histogram, f3) = either(
            meta,
            "spec_correct_drafts_histogram",
            "spec_accept_histogram",
            list,
        );
        let verify_steps = count(meta, "spec_verify_ct");
        // Current as soon as one current name is there; legacy when only aliases
        // (or only `spec_verify_ct`, which both forms carry) are.
        let forms = [f1, f2, f3];
        let form = if forms.contains(&Some(FieldForm::Current)) {
            Some(FieldForm::Current)
        } else if forms.contains(&Some(FieldForm::Legacy)) || verify_steps.is_some() {
            Some(FieldForm::Legacy)
        } else {
            None
        };
        SpecFields {
            verify_steps,
            accepted,
            proposed,
            histogram,
            form,
        }
    }

    /// SGLang's OpenAI-compatible answer: `sglext.spec_tokens_details`
    /// (an object, or a list with one per choice: the first is read).
    pub fn sglang_openai(answer: &Value) -> Option<SpecFields> {
        let d = answer.pointer("/sglext/spec_tokens_details")?;
        let d = match d {
            Value::Array(a) => a.first()?,
            d => d,
        };
        Some(SpecFields::sglang(d))
    }

    /// vLLM's per-request `metrics.speculative_decoding` (absent unless the
    /// server runs with `--per-request-spec-decode-metrics`). In its
    /// `detailed` mode each step's accepted and drafted counts
    /// (`per_step_accepted`, `per_step_drafted`) are there too: the
    /// histogram and the totals are built from them where the summary
    /// fields are missing, so per-position acceptance is read either way.
    pub fn vllm(answer: &Value) -> Option<SpecFields> {
        let s = answer.pointer("/metrics/speculative_decoding")?;
        let per_step_accepted = list(s, "per_step_accepted");
        let per_step_drafted = list(s, "per_step_drafted");
        let histogram = list(s, "acceptance_histogram").or_else(|| {
            let steps = per_step_accepted.as_ref()?;
            let deepest = steps.iter().copied().max().unwrap_or(0) as usize;
            let mut h = vec![0u64; deepest + 1];
            for &a in steps {
                h[a as usize] += 1;
            }
            Some(h)
        });
        let total = |v: &Option<Vec<u64>>| v.as_ref().map(|v| v.iter().sum::<u64>() as usize);
        Some(SpecFields {
            verify_steps: count(s, "num_spec_steps")
                .or_else(|| per_step_accepted.as_ref().map(Vec::len)),
            accepted: count(s, "num_accepted_draft_tokens").or_else(|| total(&per_step_accepted)),
            proposed: count(s, "num_draft_tokens").or_else(|| total(&per_step_drafted)),
            histogram,
            form: Some(FieldForm::Current),
        })
    }

    /// Verify steps reaching depth k, for k = 1..=steps, from the histogram.
    pub fn reached(&self, steps: usize) -> Option<Vec<u64>> {
        let h = self.histogram.as_ref()?;
        Some((1..=steps).map(|k| h.iter().skip(k).sum::<u64>()).collect())
    }
}

/// The running acceptance length of an SGLang `/server_info` answer: the
/// top-level value, else the ranks of `internal_states` combined, each
/// weighted by the requests it reports (`num_reqs`, `load.num_reqs`, or
/// else one each): a mean over ranks, not the first rank's.
pub fn sglang_server_tau(info: &Value) -> Option<f64> {
    if let Some(t) = info.get("avg_spec_accept_length").and_then(Value::as_f64) {
        return Some(t);
    }
    let ranks = info.get("internal_states")?.as_array()?;
    let (mut sum, mut weight) = (0.0, 0.0);
    for r in ranks {
        let Some(t) = r.get("avg_spec_accept_length").and_then(Value::as_f64) else {
            continue;
        };
        let w = r
            .get("num_reqs")
            .or_else(|| r.pointer("/load/num_reqs"))
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        sum += t * w;
        weight += w;
    }
    (weight > 0.0).then(|| sum / weight)
}

/// The engine version a server reports (SGLang `/server_info` `version`,
/// vLLM `/version` `version`).
pub fn version_of(answer: &Value) -> Option<String> {
    answer
        .get("version")
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
#[path = "spec_fields_tests.rs"]
mod tests;
