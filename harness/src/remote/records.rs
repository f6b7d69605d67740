//! A served row's requests.csv records: each request's figures as its
//! server reported them. Accepted drafts: the server's count (SGLang
//! `spec_num_correct_drafts`, vLLM `num_accepted_draft_tokens`), else, for
//! SGLang, its decode tokens minus its verify steps (7.1); verify steps
//! reaching depth k from the request's histogram.

use super::spec_fields::{FieldForm, SpecFields};
use super::{EngineKind, RequestOutcome};
use crate::run_folder::RequestRecord;
use crate::sweep::context_fit::request_past;
use crate::sweep::grid::Grid;

/// The records of row `p`'s requests (prompt index, outcome), in sending order.
pub fn records(
    grid: &Grid,
    p: usize,
    requests: &[(usize, RequestOutcome)],
    kind: EngineKind,
) -> Vec<RequestRecord> {
    let point = &grid.points[p];
    let g = &grid.groups[point.group];
    let set = &grid.sets[g.prompt_set];
    let config = grid.config_of(point);
    let steps = config.map_or(0, |c| c.speculative.steps);
    requests
        .iter()
        .map(|(i, o)| {
            let prompt = set.prompts.get(*i);
            let accepted = o.accepted_drafts.or_else(|| {
                let v = o.verify_steps?;
                (kind == EngineKind::Sglang && steps > 0)
                    .then(|| o.completion_tokens.saturating_sub(1).saturating_sub(v))
            });
            let reached = SpecFields {
                histogram: o.accept_histogram.clone(),
                ..SpecFields::default()
            }
            .reached(steps)
            .filter(|_| steps > 0);
            RequestRecord {
                method: config.and_then(|c| c.method.clone()).unwrap_or_default(),
                category: prompt.map(|p| p.category.clone()).unwrap_or_default(),
                prompt_id: prompt.map(|p| p.id.clone()).unwrap_or_default(),
                prompt_tokens: o.prompt_tokens,
                output_tokens: o.completion_tokens,
                verify_steps: o.verify_steps.filter(|_| steps > 0),
                accepted_drafts: accepted.filter(|_| steps > 0),
                proposed_drafts: o.proposed_drafts.filter(|_| steps > 0),
                reached,
                sent_at_s: o.sent_at_s,
                scheduled_at_s: o.scheduled_at_s,
                ttft_s: o.ttft_s,
                e2e_s: o.e2e_s,
                itl_s: o.itl_s.clone(),
                server_step_s: o.server_step_s.clone(),
                request_rate: g.request_rate,
                concurrency: g.batch_size,
                field_form: match o.field_form {
                    Some(FieldForm::Current) => "current".into(),
                    Some(FieldForm::Legacy) => "legacy".into(),
                    None => String::new(),
                },
                past_trained_context: request_past(
                    grid.max_positions[g.model],
                    o.prompt_tokens,
                    o.completion_tokens,
                ),
            }
        })
        .collect()
}
