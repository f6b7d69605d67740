//! Grid expansion, on a random tiny pair (4 layers: default capture [2, 2, 1]).

use super::*;
use crate::sweep::spec::SpecSource;
use specula_engine::fixtures::{write_random_pair, StoreDtype, TargetShape};

/// A folder with `fx/target` and `fx/draft`, and the grid of `body` (plus the pair) in it.
fn expand(body: &str) -> (tempfile::TempDir, Result<Grid, SweepError>) {
    let t = tempfile::tempdir().unwrap();
    let shape = TargetShape::named("tiny").unwrap();
    write_random_pair(&t.path().join("fx"), &shape, 3, StoreDtype::F32, None).unwrap();
    let src = SpecSource {
        path: "grid.toml".into(),
        text: format!(
            "{body}\n[[models]]\nname = \"rnd\"\ntarget = \"fx/target\"\ndraft = \"fx/draft\"\n"
        ),
    };
    let spec = src.parse().unwrap();
    let grid = Grid::expand(&spec, t.path());
    (t, grid)
}

fn keys(grid: &Grid, group: &Group) -> Vec<String> {
    group
        .points
        .iter()
        .map(|&p| grid.points[p].key.clone())
        .collect()
}

#[test]
fn groups_cross_batches_temperatures_and_repeats_with_the_baseline_first() {
    let (_t, grid) = expand(
        "batch_sizes = [1, 4]\ntemperatures = [0, 0.7]\nrepeats = 2\n\
         [[drafts]]\nsteps = [1, 3]\n[[prompt_sets]]\nsample = 2\n",
    );
    let grid = grid.unwrap();
    assert_eq!(grid.groups.len(), 2 * 2 * 2, "batch x temperature x repeat");
    assert_eq!(
        grid.points.len(),
        8 * 3,
        "a baseline and two configs per group"
    );
    let g = &grid.groups[0];
    assert_eq!((g.batch_size, g.temperature, g.repeat), (1, 0.0, 0));
    assert_eq!(
        keys(&grid, g),
        [
            "rnd.base.b1.builtin.t0.r0",
            "rnd.s1k1n2.b1.builtin.t0.r0",
            "rnd.s3k1n4.b1.builtin.t0.r0"
        ]
    );
    let last = grid.groups.last().unwrap();
    assert_eq!(
        (last.batch_size, last.temperature, last.repeat),
        (4, 0.7, 1)
    );
    assert_eq!(keys(&grid, last)[0], "rnd.base.b4.builtin.t0p7.r1");
    for (gi, g) in grid.groups.iter().enumerate() {
        assert!(grid.points[g.points[0]].config.is_none(), "baseline first");
        assert!(g.points.iter().all(|&p| grid.points[p].group == gi));
    }
    assert_eq!(grid.sets[0].len(), 2, "the sample is drawn");
    assert!(grid.skipped.is_empty());
}

#[test]
fn invalid_and_duplicate_configs_are_skipped_with_their_reason() {
    let (_t, grid) = expand(
        "[[drafts]]\nsteps = [0, 2]\nnum_draft_tokens = [3, 9]\n\
         [[drafts]]\nsteps = 2\nnum_draft_tokens = 3\n\
         [[drafts]]\nsteps = 2\naux_layers = [1, 2]\n",
    );
    let grid = grid.unwrap();
    assert_eq!(grid.configs[0].len(), 1, "only s2k1n3 runs");
    let reasons: Vec<(&str, &str)> = grid
        .skipped
        .iter()
        .map(|s| (s.config.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert!(reasons[0].1.contains("baseline, which runs in every group"));
    assert!(reasons[2].0.contains("num_draft_tokens=9") && reasons[2].1.contains("cannot hold"));
    assert!(reasons[3]
        .1
        .contains("duplicate of an earlier draft config"));
    assert!(
        reasons[4].0.contains("aux_layers=[1, 2]") && reasons[4].1.contains("exactly 3"),
        "{reasons:?}"
    );
}

#[test]
fn a_capture_override_is_resolved_and_named_in_the_key() {
    let (_t, grid) = expand(
        "[[drafts]]\nsteps = 2\n\
         [[drafts]]\nsteps = 2\naux_layers = [-1, 1, 2]\nid_convention = \"legacy\"\n",
    );
    let grid = grid.unwrap();
    let c = &grid.configs[0];
    assert_eq!(
        (c[0].label.as_str(), c[0].aux_points.as_str()),
        ("s2k1n3", "2;2;1")
    );
    assert_eq!(
        (c[1].label.as_str(), c[1].aux_points.as_str()),
        ("s2k1n3-auxm1_1_2-legacy", "0;2;3"),
        "legacy: -1 is the embedding output, l is l + 1"
    );
    assert_ne!(c[0].capture, c[1].capture, "two drafters");
}

#[test]
fn with_both_span_modes_a_config_s_rows_are_adjacent_and_flip_on_odd_repeats() {
    let (_t, grid) = expand(
        "repeats = 2\nspans = [\"on\", \"off\"]\n[[drafts]]\nsteps = 1\n[[prompt_sets]]\nsample = 1\n",
    );
    let grid = grid.unwrap();
    let spans =
        |g: &Group| -> Vec<SpanMode> { g.points.iter().map(|&p| grid.points[p].spans).collect() };
    use SpanMode::{Off, On};
    assert_eq!(spans(&grid.groups[0]), [On, Off, On, Off]);
    assert_eq!(spans(&grid.groups[1]), [Off, On, Off, On]);
    assert_eq!(
        keys(&grid, &grid.groups[1])[0],
        "rnd.base.b1.builtin.t0.r1.nospans"
    );
}

#[test]
fn two_points_with_one_key_are_refused() {
    let (_t, grid) = expand(
        "[[prompt_sets]]\nname = \"same\"\nsample = 1\n[[prompt_sets]]\nname = \"same\"\nsample = 2\n",
    );
    let e = grid.unwrap_err().to_string();
    assert!(
        e.contains("share the row key") && e.contains("distinct `name`s"),
        "{e}"
    );
}
