//! The routers the MoE checks run (small DeepSeek-V3, V2 and Qwen3-MoE
//! ones, and DeepSeek-V2-Lite's own) and the CPU engine's routing of a row,
//! the checks' reference for the device's.

use crate::cuda::RouterSpec;

/// A small DeepSeek-V3 router: grouped sigmoid scores, the two best of a
/// group, renormalised and scaled.
pub(super) const V3_ROUTER: RouterSpec = RouterSpec {
    experts: 16,
    top_k: 3,
    sigmoid: true,
    n_group: 4,
    topk_group: 2,
    top_two_sum: true,
    norm_topk_prob: true,
    scaling: 2.5,
    shared: 0,
};

/// A small DeepSeek-V2 router: grouped softmax, a group's best, unnormalised.
pub(super) const V2_ROUTER: RouterSpec = RouterSpec {
    sigmoid: false,
    top_two_sum: false,
    norm_topk_prob: false,
    scaling: 1.0,
    top_k: 4,
    ..V3_ROUTER
};

/// DeepSeek-V2-Lite's router: 64 experts (eight logit blocks), softmax,
/// top 6, unnormalised, its two shared experts as slices.
pub(super) const V2_LITE_ROUTER: RouterSpec = RouterSpec {
    experts: 64,
    top_k: 6,
    n_group: 1,
    topk_group: 1,
    shared: 2,
    ..V2_ROUTER
};

/// A small Qwen3-MoE router: softmax over every expert, renormalised.
pub(super) const QWEN_ROUTER: RouterSpec = RouterSpec {
    n_group: 1,
    topk_group: 1,
    norm_topk_prob: true,
    experts: 12,
    top_k: 2,
    ..V2_ROUTER
};

/// The CPU engine's routing of one row (engine/src/model/router.rs): `(expert, weight)` by ascending id,
/// then the shared slices (`experts..`, weight 1).
pub(super) fn route_ref(
    sp: &RouterSpec,
    logits: &[f32],
    bias: Option<&[f32]>,
) -> Vec<(usize, f32)> {
    let n = sp.experts;
    let top = |v: &[f32], c: &mut Vec<usize>, k: usize| {
        c.sort_by(|&a, &b| v[b].total_cmp(&v[a]).then(a.cmp(&b)));
        c.truncate(k);
    };
    let scores: Vec<f32> = if sp.sigmoid {
        logits.iter().map(|&x| 1.0 / (1.0 + (-x).exp())).collect()
    } else {
        let mx = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = logits.iter().map(|&x| (x - mx).exp()).collect();
        let sum: f32 = e.iter().sum();
        e.iter().map(|v| v / sum).collect()
    };
    let choice: Vec<f32> = match bias {
        Some(b) => scores.iter().zip(b).map(|(s, b)| s + b).collect(),
        None => scores.clone(),
    };
    let mut cand = vec![true; n];
    if sp.n_group > 1 {
        let size = n / sp.n_group;
        let gs: Vec<f32> = (0..sp.n_group)
            .map(|g| {
                let mut m: Vec<usize> = (g * size..(g + 1) * size).collect();
                top(&choice, &mut m, 2);
                if sp.top_two_sum {
                    choice[m[0]] + choice[m[1]]
                } else {
                    choice[m[0]]
                }
            })
            .collect();
        let mut kept: Vec<usize> = (0..sp.n_group).collect();
        top(&gs, &mut kept, sp.topk_group);
        for (e, c) in cand.iter_mut().enumerate() {
            *c = kept.contains(&(e / size));
        }
    }
    let mut chosen: Vec<usize> = (0..n).filter(|&e| cand[e]).collect();
    top(&choice, &mut chosen, sp.top_k);
    let mut w: Vec<f32> = chosen.iter().map(|&e| scores[e]).collect();
    if sp.norm_topk_prob {
        let mut sum: f32 = w.iter().sum();
        if sp.sigmoid {
            sum += 1e-20;
        }
        w.iter_mut().for_each(|v| *v /= sum);
    }
    if sp.scaling != 1.0 {
        w.iter_mut().for_each(|v| *v *= sp.scaling);
    }
    let mut r: Vec<(usize, f32)> = chosen.into_iter().zip(w).collect();
    r.sort_by_key(|e| e.0);
    r.extend((n..sp.stacked()).map(|e| (e, 1.0)));
    r
}
