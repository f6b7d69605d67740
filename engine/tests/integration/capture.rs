//! Aux hidden-state capture: which residual streams each id convention
//! captures, pinned against a hand-written f64 forward of the 4-layer fixture.

use crate::common;

use crate::common::reference::reference_forward;

use specula_engine::capture::{
    default_points, resolve_ids, CaptureChoice, CaptureSource, IdConvention,
};
use specula_engine::model::{ForwardBatch, TargetModel};

#[test]
fn conventions_resolve_ids_to_the_documented_points() {
    let l = 4;
    assert_eq!(default_points(l), vec![2, 2, 1], "[2, L/2, L-3]");
    assert_eq!(default_points(32), vec![2, 16, 29]);
    assert_eq!(
        resolve_ids(&[0, 1, 2], IdConvention::Legacy, l).unwrap(),
        vec![1, 2, 3],
        "legacy shifts every id"
    );
    assert_eq!(
        resolve_ids(&[0, 1, 2], IdConvention::Boundary, l).unwrap(),
        vec![0, 1, 2],
        "boundary keeps ids whose first is not 1"
    );
    assert_eq!(
        resolve_ids(&[1, 2, 2], IdConvention::Boundary, l).unwrap(),
        vec![2, 3, 3],
        "boundary shifts when the first id is 1"
    );
    assert_eq!(
        resolve_ids(&[-1, 1, 2], IdConvention::Boundary, l).unwrap(),
        vec![0, 1, 2],
        "-1 is the embedding output"
    );
    assert_eq!(
        resolve_ids(&[-1, 1, 2], IdConvention::Legacy, l).unwrap(),
        vec![0, 2, 3],
        "-1 is the embedding output under legacy too"
    );
    let e = resolve_ids(&[1, 2, 3], IdConvention::Boundary, l)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("id 3 resolves to capture point 4") && e.contains("4 layers"),
        "{e}"
    );
    assert!(resolve_ids(&[-2, 1, 2], IdConvention::Legacy, l).is_err());
    let legacy = CaptureChoice {
        override_ids: None,
        convention: IdConvention::Legacy,
        ..CaptureChoice::default()
    };
    let d = legacy.resolve(None, 32).unwrap();
    assert_eq!(
        (d.points.clone(), d.source.clone()),
        (vec![2, 16, 29], CaptureSource::Default)
    );
    let o = CaptureChoice {
        override_ids: Some(vec![3, 31, 59]),
        convention: IdConvention::Legacy,
        ..CaptureChoice::default()
    }
    .resolve(Some(&[-1, 3, 31]), 64)
    .unwrap();
    assert_eq!(
        (o.points.clone(), o.source.clone()),
        (vec![4, 32, 60], CaptureSource::Override),
        "an override wins over the draft's ids"
    );
    let dc = CaptureChoice::default()
        .resolve(Some(&[-1, 3, 31]), 64)
        .unwrap();
    assert_eq!(
        (dc.points, dc.source),
        (vec![0, 3, 31], CaptureSource::DraftConfig)
    );
}

#[test]
fn the_resolver_refuses_a_capture_an_eagle3_fc_cannot_consume() {
    for ids in [vec![2, 4], vec![-1, 2, 4, 6]] {
        let choice = CaptureChoice {
            override_ids: Some(ids.clone()),
            convention: IdConvention::Boundary,
            ..CaptureChoice::default()
        };
        let e = choice.resolve(None, 32).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{} capture points", ids.len())) && e.contains("exactly 3"),
            "{ids:?}: {e}"
        );
        let from_draft = CaptureChoice::default().resolve(Some(&ids), 32);
        assert!(from_draft.is_err(), "{ids:?} from the draft config too");
    }
}

#[test]
fn captured_streams_match_a_hand_written_forward_of_the_4_layer_fixture() {
    let fx = common::fixture("tiny");
    let target = TargetModel::load(&fx.target).unwrap();
    assert_eq!(target.config().num_hidden_layers, 4);
    let tokens: Vec<u32> = "Capture me!".bytes().map(u32::from).collect();
    let (streams, logits) = reference_forward(&fx.target, &tokens);
    let h = target.config().hidden_size;
    // Every convention's points for a few id lists, and the default.
    let cases: Vec<(Vec<usize>, &str)> = vec![
        (
            resolve_ids(&[0, 1, 2], IdConvention::Legacy, 4).unwrap(),
            "legacy [0,1,2]",
        ),
        (
            resolve_ids(&[0, 1, 2], IdConvention::Boundary, 4).unwrap(),
            "boundary [0,1,2]",
        ),
        (
            resolve_ids(&[-1, 1, 3], IdConvention::Boundary, 4).unwrap(),
            "boundary [-1,1,3]",
        ),
        (
            resolve_ids(&[1, 2, 2], IdConvention::Boundary, 4).unwrap(),
            "boundary [1,2,2]",
        ),
        (default_points(4), "default"),
    ];
    for (points, name) in cases {
        let mut batch = ForwardBatch::default();
        batch.push_causal(0, 0, &tokens, 0, true);
        let mut caches = vec![target.new_cache()];
        let out = target.forward(&batch, &mut caches, &points);
        for (t, _) in tokens.iter().enumerate() {
            for (slot, &p) in points.iter().enumerate() {
                let got =
                    &out.aux[(t * points.len() + slot) * h..(t * points.len() + slot + 1) * h];
                for (g, want) in got.iter().zip(&streams[p][t]) {
                    assert!(
                        (*g as f64 - want).abs() < 1e-4 * (1.0 + want.abs()),
                        "{name}: point {p} at position {t}: {g} vs {want}"
                    );
                }
            }
        }
        // The embedding output is the raw embedding row; entering layer 1 is not.
        assert_ne!(streams[0][0], streams[1][0]);
        for (g, want) in out.logits.iter().zip(logits.last().unwrap()) {
            assert!(
                (*g as f64 - want).abs() < 1e-3 * (1.0 + want.abs()),
                "{name}: logits {g} vs {want}"
            );
        }
    }
}
