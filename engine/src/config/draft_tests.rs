//! Tests of the draft shapes the benchmarks use (`default_draft_config`,
//! `bench/drafts`).

use super::default_draft_config;
use crate::config::TargetConfig;

fn bench_config(name: &str) -> TargetConfig {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/configs");
    TargetConfig::load_file(&dir.join(name)).unwrap()
}

/// Regression (results/h200/ideal-2026-12-04/call4): the random draft of a
/// DeepSeek-V3-shaped target had the target's 128 heads, 56 wide, which no
/// attention kernel is built for; its pass over an 8192-token prompt then
/// took the slow path.
#[test]
fn a_latent_attention_targets_random_draft_has_heads_128_wide() {
    for (name, heads) in [
        ("deepseek-v3-4-layers.json", 56),
        ("kimi-k2-4-layers.json", 56),
        ("deepseek-v2-lite.json", 16),
        ("moonlight-16b-a3b.json", 16),
    ] {
        let d = default_draft_config(&bench_config(name));
        assert_eq!(
            (d.num_attention_heads, d.num_key_value_heads, d.head_dim),
            (heads, heads, 128),
            "{name}"
        );
        assert_eq!(d.num_attention_heads * d.head_dim, d.hidden_size, "{name}");
    }
    // A dense target's draft keeps the target's own heads.
    let llama = bench_config("llama-3.1-8b.json");
    let d = default_draft_config(&llama);
    assert_eq!(
        (d.num_attention_heads, d.num_key_value_heads, d.head_dim),
        (32, 8, 128)
    );
}

/// The served family's draft shapes (`bench/drafts`, for `specula gpu
/// bench --draft-config`) load and fit the bench's targets.
#[test]
fn the_served_draft_shapes_fit_the_bench_targets() {
    let drafts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/drafts");
    for (draft, target, shape) in [
        (
            "deepseek-v3-eagle3.json",
            "deepseek-v3-4-layers.json",
            (56, 8, 128, 40960),
        ),
        (
            "kimi-k25-eagle3.json",
            "kimi-k2-4-layers.json",
            (64, 64, 128, 18432),
        ),
    ] {
        let d = super::DraftConfig::load_file(&drafts.join(draft)).unwrap();
        let t = bench_config(target);
        assert_eq!(
            (
                d.num_attention_heads,
                d.num_key_value_heads,
                d.head_dim,
                d.intermediate_size
            ),
            shape,
            "{draft}"
        );
        assert_eq!(d.draft_vocab_size, 32000, "{draft}");
        assert_eq!(
            (d.hidden_size, d.target_hidden_size),
            (t.hidden_size, t.hidden_size)
        );
        assert_eq!(d.vocab_size, t.vocab_size, "{draft}");
        assert_eq!(
            d.aux_layer_ids, None,
            "{draft}: the 4-layer targets take the default capture"
        );
    }
}
