//! Aux hidden-state capture: which residual streams each id convention
//! captures, pinned against a hand-written f64 forward of the 4-layer fixture.

mod common;

use specula_engine::capture::{
    default_points, resolve_ids, AuxCapture, CaptureSource, IdConvention,
};
use specula_engine::checkpoint::Checkpoint;
use specula_engine::config::TargetConfig;
use specula_engine::model::{ForwardBatch, TargetModel};

/// The residual streams entering every layer (index 0 = embeddings,
/// index i = output of layer i-1) and the final logits of each position,
/// computed naively in f64 from the checkpoint.
fn reference_forward(dir: &std::path::Path, tokens: &[u32]) -> (Vec<Vec<Vec<f64>>>, Vec<Vec<f64>>) {
    let c = TargetConfig::load(dir).unwrap();
    let ck = Checkpoint::open(dir).unwrap();
    let w = |n: &str| -> Vec<f64> {
        ck.f32(n, &ck.shape(n).unwrap(), "")
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect()
    };
    let (h, hd, nh, nkv) = (
        c.hidden_size,
        c.head_dim,
        c.num_attention_heads,
        c.num_key_value_heads,
    );
    let matvec = |m: &[f64], x: &[f64], out: usize| -> Vec<f64> {
        (0..out)
            .map(|o| (0..x.len()).map(|i| m[o * x.len() + i] * x[i]).sum())
            .collect()
    };
    let rms = |x: &[f64], g: &[f64]| -> Vec<f64> {
        let s =
            (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64 + c.rms_norm_eps as f64).sqrt();
        x.iter().zip(g).map(|(v, g)| v / s * g).collect()
    };
    let rope = |x: &mut [f64], pos: usize| {
        for head in x.chunks_mut(hd) {
            for i in 0..hd / 2 {
                let f = 1.0 / (c.rope_theta as f64).powf(2.0 * i as f64 / hd as f64);
                let (s, co) = (pos as f64 * f).sin_cos();
                let (a, b) = (head[i], head[i + hd / 2]);
                head[i] = a * co - b * s;
                head[i + hd / 2] = b * co + a * s;
            }
        }
    };
    let emb = w("model.embed_tokens.weight");
    let mut x: Vec<Vec<f64>> = tokens
        .iter()
        .map(|&t| emb[t as usize * h..(t as usize + 1) * h].to_vec())
        .collect();
    let mut streams = vec![x.clone()];
    for l in 0..c.num_hidden_layers {
        let p = |n: &str| w(&format!("model.layers.{l}.{n}"));
        let (q_w, k_w, v_w, o_w) = (
            p("self_attn.q_proj.weight"),
            p("self_attn.k_proj.weight"),
            p("self_attn.v_proj.weight"),
            p("self_attn.o_proj.weight"),
        );
        let normed: Vec<Vec<f64>> = x
            .iter()
            .map(|r| rms(r, &p("input_layernorm.weight")))
            .collect();
        let qs: Vec<Vec<f64>> = normed
            .iter()
            .enumerate()
            .map(|(t, r)| {
                let mut q = matvec(&q_w, r, nh * hd);
                rope(&mut q, t);
                q
            })
            .collect();
        let ks: Vec<Vec<f64>> = normed
            .iter()
            .enumerate()
            .map(|(t, r)| {
                let mut k = matvec(&k_w, r, nkv * hd);
                rope(&mut k, t);
                k
            })
            .collect();
        let vs: Vec<Vec<f64>> = normed.iter().map(|r| matvec(&v_w, r, nkv * hd)).collect();
        for t in 0..tokens.len() {
            let mut att = vec![0.0; nh * hd];
            for hq in 0..nh {
                let kv = hq / (nh / nkv);
                let s: Vec<f64> = (0..=t)
                    .map(|j| {
                        (0..hd)
                            .map(|d| qs[t][hq * hd + d] * ks[j][kv * hd + d])
                            .sum::<f64>()
                            / (hd as f64).sqrt()
                    })
                    .collect();
                let m = s.iter().cloned().fold(f64::MIN, f64::max);
                let z: f64 = s.iter().map(|v| (v - m).exp()).sum();
                for j in 0..=t {
                    for d in 0..hd {
                        att[hq * hd + d] += (s[j] - m).exp() / z * vs[j][kv * hd + d];
                    }
                }
            }
            let o = matvec(&o_w, &att, h);
            x[t].iter_mut().zip(o).for_each(|(a, b)| *a += b);
            let n2 = rms(&x[t], &p("post_attention_layernorm.weight"));
            let g = matvec(&p("mlp.gate_proj.weight"), &n2, c.intermediate_size);
            let u = matvec(&p("mlp.up_proj.weight"), &n2, c.intermediate_size);
            let act: Vec<f64> = g
                .iter()
                .zip(&u)
                .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
                .collect();
            let d = matvec(&p("mlp.down_proj.weight"), &act, h);
            x[t].iter_mut().zip(d).for_each(|(a, b)| *a += b);
        }
        streams.push(x.clone());
    }
    let (nw, lm) = (w("model.norm.weight"), w("lm_head.weight"));
    let logits = x
        .iter()
        .map(|r| matvec(&lm, &rms(r, &nw), c.vocab_size))
        .collect();
    // streams[i][t] = residual stream entering layer i at position t; transpose to [point][t].
    (streams, logits)
}

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
    let d = AuxCapture::resolve(None, None, IdConvention::Legacy, 32).unwrap();
    assert_eq!(
        (d.points.clone(), d.source.clone()),
        (vec![2, 16, 29], CaptureSource::Default)
    );
    let o = AuxCapture::resolve(
        Some(&[3, 31, 59]),
        Some(&[-1, 3, 31]),
        IdConvention::Legacy,
        64,
    )
    .unwrap();
    assert_eq!(
        (o.points.clone(), o.source.clone()),
        (vec![4, 32, 60], CaptureSource::Override),
        "an override wins over the draft's ids"
    );
    let dc = AuxCapture::resolve(None, Some(&[-1, 3, 31]), IdConvention::Boundary, 64).unwrap();
    assert_eq!(
        (dc.points, dc.source),
        (vec![0, 3, 31], CaptureSource::DraftConfig)
    );
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
