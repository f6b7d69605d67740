//! A naive f64 forward of a target checkpoint, written from the model
//! definitions (Llama / Qwen2 / Qwen3, llama3 RoPE scaling, tied
//! embeddings), independent of the engine's kernels.

use specula_engine::checkpoint::Checkpoint;
use specula_engine::config::{Family, TargetConfig};

/// Inverse RoPE frequencies, with the llama3 rescaling when configured.
fn inv_freq(c: &TargetConfig) -> Vec<f64> {
    let hd = c.head_dim;
    (0..hd / 2)
        .map(|i| {
            let f = 1.0 / (c.rope_theta as f64).powf(2.0 * i as f64 / hd as f64);
            let Some(s) = c.rope_scaling else { return f };
            let old = s.original_max_position_embeddings as f64;
            let wavelen = 2.0 * std::f64::consts::PI / f;
            if wavelen < old / s.high_freq_factor as f64 {
                f
            } else if wavelen > old / s.low_freq_factor as f64 {
                f / s.factor as f64
            } else {
                let smooth = (old / wavelen - s.low_freq_factor as f64)
                    / (s.high_freq_factor as f64 - s.low_freq_factor as f64);
                (1.0 - smooth) * f / s.factor as f64 + smooth * f
            }
        })
        .collect()
}

/// The residual streams entering every layer (`streams[i][t]`: index 0 =
/// embeddings, index i = output of layer i-1, at position t) and the final
/// logits of each position.
pub fn reference_forward(
    dir: &std::path::Path,
    tokens: &[u32],
) -> (Vec<Vec<Vec<f64>>>, Vec<Vec<f64>>) {
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
    let freqs = inv_freq(&c);
    let rope = |x: &mut [f64], pos: usize| {
        for head in x.chunks_mut(hd) {
            for (i, f) in freqs.iter().enumerate() {
                let (s, co) = (pos as f64 * f).sin_cos();
                let (a, b) = (head[i], head[i + hd / 2]);
                head[i] = a * co - b * s;
                head[i + hd / 2] = b * co + a * s;
            }
        }
    };
    let head_norm = |x: &mut Vec<f64>, g: &[f64]| {
        let normed: Vec<f64> = x.chunks(hd).flat_map(|head| rms(head, g)).collect();
        *x = normed;
    };
    let emb = w("model.embed_tokens.weight");
    let mut x: Vec<Vec<f64>> = tokens
        .iter()
        .map(|&t| emb[t as usize * h..(t as usize + 1) * h].to_vec())
        .collect();
    let mut streams = vec![x.clone()];
    for l in 0..c.num_hidden_layers {
        let p = |n: &str| w(&format!("model.layers.{l}.{n}"));
        let proj = |name: &str, r: &[f64], out: usize| -> Vec<f64> {
            let mut y = matvec(&p(&format!("self_attn.{name}.weight")), r, out);
            if c.family == Family::Qwen2 && name != "o_proj" {
                y.iter_mut()
                    .zip(p(&format!("self_attn.{name}.bias")))
                    .for_each(|(a, b)| *a += b);
            }
            y
        };
        let normed: Vec<Vec<f64>> = x
            .iter()
            .map(|r| rms(r, &p("input_layernorm.weight")))
            .collect();
        let mut qs = Vec::new();
        let mut ks = Vec::new();
        for (t, r) in normed.iter().enumerate() {
            let (mut q, mut k) = (proj("q_proj", r, nh * hd), proj("k_proj", r, nkv * hd));
            if c.family == Family::Qwen3 {
                head_norm(&mut q, &p("self_attn.q_norm.weight"));
                head_norm(&mut k, &p("self_attn.k_norm.weight"));
            }
            rope(&mut q, t);
            rope(&mut k, t);
            qs.push(q);
            ks.push(k);
        }
        let vs: Vec<Vec<f64>> = normed.iter().map(|r| proj("v_proj", r, nkv * hd)).collect();
        let o_w = p("self_attn.o_proj.weight");
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
    let nw = w("model.norm.weight");
    let lm = if ck.contains("lm_head.weight") {
        w("lm_head.weight")
    } else {
        emb.clone()
    };
    let logits = x
        .iter()
        .map(|r| matvec(&lm, &rms(r, &nw), c.vocab_size))
        .collect();
    (streams, logits)
}
