//! Each engine version's field set, read from a hand-written response.

use super::*;
use serde_json::json;

#[test]
fn sglang_current_meta_info_is_read_by_its_current_names() {
    // The shape of SGLang after pull request #24081 (aliases still sent).
    let meta = json!({
        "completion_tokens": 13, "spec_verify_ct": 4,
        "spec_num_correct_drafts": 8, "spec_num_proposed_drafts": 12,
        "spec_accept_rate": 0.6667, "spec_accept_length": 3.25,
        "spec_correct_drafts_histogram": [0, 1, 2, 1],
        "spec_accepted_drafts": 999, "spec_proposed_drafts": 999,
        "spec_accept_histogram": [9, 9, 9, 9]
    });
    let f = SpecFields::sglang(&meta);
    assert_eq!(f.form, Some(FieldForm::Current));
    assert_eq!(
        (f.verify_steps, f.accepted, f.proposed),
        (Some(4), Some(8), Some(12))
    );
    assert_eq!(f.histogram, Some(vec![0, 1, 2, 1]), "not the alias");
    assert_eq!(f.reached(3), Some(vec![4, 3, 1]));
}

#[test]
fn sglang_older_meta_info_falls_back_to_the_aliases() {
    let before_rename = json!({
        "completion_tokens": 9, "spec_verify_ct": 3,
        "spec_accepted_drafts": 5, "spec_proposed_drafts": 9,
        "spec_accept_histogram": [1, 0, 1, 1]
    });
    let f = SpecFields::sglang(&before_rename);
    assert_eq!(f.form, Some(FieldForm::Legacy));
    assert_eq!((f.accepted, f.proposed), (Some(5), Some(9)));
    assert_eq!(f.histogram, Some(vec![1, 0, 1, 1]));
    // The oldest: only the verify count.
    let oldest = SpecFields::sglang(&json!({"completion_tokens": 9, "spec_verify_ct": 3}));
    assert_eq!(oldest.form, Some(FieldForm::Legacy));
    assert_eq!((oldest.verify_steps, oldest.accepted), (Some(3), None));
    // A baseline server's meta_info has none.
    assert_eq!(
        SpecFields::sglang(&json!({"completion_tokens": 9})).form,
        None
    );
}

#[test]
fn sglang_openai_answers_carry_the_fields_under_sglext() {
    let answer = json!({
        "choices": [{"index": 0, "text": "x", "finish_reason": "length"}],
        "usage": {"completion_tokens": 106},
        "sglext": {"spec_tokens_details": {
            "spec_accept_rate": 0.293, "spec_accept_length": 2.465,
            "spec_num_correct_drafts": 63, "spec_num_proposed_drafts": 215,
            "spec_verify_ct": 43, "spec_correct_drafts_histogram": [11, 14, 11, 4, 0, 3]
        }}
    });
    let f = SpecFields::sglang_openai(&answer).unwrap();
    assert_eq!(
        (f.verify_steps, f.accepted, f.proposed),
        (Some(43), Some(63), Some(215))
    );
    let per_choice = json!({"sglext": {"spec_tokens_details": [{"spec_verify_ct": 2}]}});
    assert_eq!(
        SpecFields::sglang_openai(&per_choice).unwrap().verify_steps,
        Some(2)
    );
    assert!(SpecFields::sglang_openai(&json!({"choices": []})).is_none());
}

#[test]
fn vllm_per_request_metrics_on_the_last_chunk_are_read() {
    // The usage chunk of a stream served with --per-request-spec-decode-metrics summary.
    let last_chunk = json!({
        "id": "cmpl-1", "object": "text_completion", "choices": [],
        "usage": {"prompt_tokens": 11, "completion_tokens": 44},
        "metrics": {"speculative_decoding": {
            "mean_acceptance_length": 1.2326, "draft_acceptance_rate": 0.0775,
            "acceptance_histogram": [39, 1, 0, 3], "num_spec_steps": 43,
            "num_accepted_draft_tokens": 10, "num_draft_tokens": 129, "num_spec_tokens": 3
        }}
    });
    let f = SpecFields::vllm(&last_chunk).unwrap();
    assert_eq!(
        (f.verify_steps, f.accepted, f.proposed),
        (Some(43), Some(10), Some(129))
    );
    assert_eq!(f.reached(3), Some(vec![4, 3, 3]));
    assert!(SpecFields::vllm(&json!({"choices": [], "usage": {}})).is_none());
}

#[test]
fn sglang_data_parallel_ranks_are_combined_weighted_by_requests() {
    let info = json!({"internal_states": [
        {"avg_spec_accept_length": 2.0, "num_reqs": 30},
        {"avg_spec_accept_length": 4.0, "num_reqs": 10},
        {"last_gen_throughput": 1.0}
    ], "version": "0.5.9"});
    assert_eq!(sglang_server_tau(&info), Some(2.5), "not rank 0's 2.0");
    let unweighted = json!({"internal_states": [
        {"avg_spec_accept_length": 2.0}, {"avg_spec_accept_length": 3.0}
    ]});
    assert_eq!(sglang_server_tau(&unweighted), Some(2.5));
    assert_eq!(
        sglang_server_tau(&json!({"avg_spec_accept_length": 3.5})),
        Some(3.5)
    );
    assert_eq!(sglang_server_tau(&json!({"internal_states": []})), None);
    assert_eq!(version_of(&info).as_deref(), Some("0.5.9"));
}

#[test]
fn vllm_detailed_per_step_counts_give_per_position_acceptance_when_the_summary_is_missing() {
    // The `detailed` mode's fields (vLLM's per-request spec-decode metrics
    // test checks num_spec_steps = sum(histogram) = len(per_step_accepted)).
    let detailed = json!({"metrics": {"speculative_decoding": {
        "per_step_accepted": [3, 0, 1, 3, 2],
        "per_step_drafted": [3, 3, 3, 3, 2]
    }}});
    let f = SpecFields::vllm(&detailed).unwrap();
    assert_eq!(
        (f.verify_steps, f.accepted, f.proposed),
        (Some(5), Some(9), Some(14))
    );
    assert_eq!(f.histogram, Some(vec![1, 1, 1, 2]));
    assert_eq!(f.reached(3), Some(vec![4, 3, 2]), "depth 1: 4 of 5 steps");
}

#[test]
fn vllm_summary_fields_win_over_the_per_step_lists_when_both_are_there() {
    let both = json!({"metrics": {"speculative_decoding": {
        "num_spec_steps": 2, "num_accepted_draft_tokens": 3, "num_draft_tokens": 6,
        "acceptance_histogram": [0, 1, 1, 0],
        "per_step_accepted": [1, 2], "per_step_drafted": [3, 3]
    }}});
    let f = SpecFields::vllm(&both).unwrap();
    assert_eq!(f.histogram, Some(vec![0, 1, 1, 0]));
    assert_eq!(f.reached(3), Some(vec![2, 1, 0]));
    assert_eq!(
        (f.verify_steps, f.accepted, f.proposed),
        (Some(2), Some(3), Some(6))
    );
}
