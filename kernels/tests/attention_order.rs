//! Attention computes what its definition says in the documented order, for
//! every head grouping: each score is one canonical dot product times the
//! scale, the softmax runs over the key list in order, and each output sums
//! its keys in list order (the softmax with [`exp`]). So a query's output never depends on how the
//! heads or keys were blocked together, nor on the other queries.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula_kernels::cpu::{attention, dot, dots, exp, AttentionShape, KeyList};

fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// One head at a time, one key at a time, with [`dot`]: the definition.
fn one_at_a_time(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    keys: &[usize],
    s: AttentionShape,
    scale: f32,
) -> Vec<f32> {
    let (hd, w) = (s.head_dim, s.kv_width());
    let group = s.n_heads / s.n_kv_heads;
    let mut out = vec![0f32; s.n_heads * hd];
    for h in 0..s.n_heads {
        let kvh = h / group;
        let qh = &q[h * hd..(h + 1) * hd];
        let mut p: Vec<f32> = keys
            .iter()
            .map(|&e| dot(qh, &k[e * w + kvh * hd..][..hd]) * scale)
            .collect();
        let max = p.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let mut sum = 0f32;
        for x in p.iter_mut() {
            *x = exp(*x - max);
            sum += *x;
        }
        let oh = &mut out[h * hd..(h + 1) * hd];
        for (x, &e) in p.iter().zip(keys) {
            for (o, y) in oh.iter_mut().zip(&v[e * w + kvh * hd..][..hd]) {
                *o += x * y;
            }
        }
        for o in oh.iter_mut() {
            *o *= 1.0 / sum;
        }
    }
    out
}

#[test]
fn attention_is_the_one_head_one_key_definition_bit_for_bit_for_any_grouping() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    // (heads, kv heads, head_dim): groups of 1 to 8 query heads per kv head,
    // head widths with and without a tail past the eight lanes.
    for &(n_heads, n_kv_heads, head_dim) in &[
        (8, 2, 32),
        (4, 4, 8),
        (6, 2, 20),
        (5, 1, 16),
        (14, 2, 24),
        (8, 1, 64),
    ] {
        let s = AttentionShape {
            n_heads,
            n_kv_heads,
            head_dim,
        };
        for &(prefix, ref extra) in &[
            (0usize, vec![0usize]),
            (30, vec![31, 33, 38]),
            (57, vec![]),
            (1, vec![5, 6]),
        ] {
            let entries = 60;
            let k = random(&mut rng, entries * s.kv_width());
            let v = random(&mut rng, entries * s.kv_width());
            let q = random(&mut rng, n_heads * head_dim);
            let mut got = vec![0f32; q.len()];
            attention(&q, &k, &v, KeyList { prefix, extra }, s, 0.17, &mut got);
            let keys: Vec<usize> = (0..prefix).chain(extra.iter().copied()).collect();
            let want = one_at_a_time(&q, &k, &v, &keys, s, 0.17);
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same,
                "{s:?}, prefix {prefix}, extra {extra:?}: not the definition's bits"
            );
        }
    }
}

#[test]
fn dots_together_are_the_dots_alone() {
    let mut rng = ChaCha8Rng::seed_from_u64(24);
    for k in [1, 7, 8, 33, 128] {
        let x: Vec<Vec<f32>> = (0..3).map(|_| random(&mut rng, k)).collect();
        let w: Vec<Vec<f32>> = (0..2).map(|_| random(&mut rng, k)).collect();
        let d = dots([&x[0][..], &x[1], &x[2]], [&w[0][..], &w[1]]);
        for (r, dr) in d.iter().enumerate() {
            for (c, &v) in dr.iter().enumerate() {
                assert_eq!(
                    v.to_bits(),
                    dot(&x[r], &w[c]).to_bits(),
                    "k={k} row {r} col {c}"
                );
            }
        }
    }
}
