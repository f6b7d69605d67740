//! The CPU kernels against naive f64 references on fresh random inputs, and
//! their batch invariance.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula_kernels::cpu::*;

fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

fn rel_err(a: f32, b: f64) -> f64 {
    (a as f64 - b).abs() / b.abs().max(1e-3)
}

#[test]
fn linear_matches_naive_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for &(m, k, n) in &[(1, 7, 3), (5, 64, 130), (9, 257, 300), (3, 512, 1024)] {
        let x = random(&mut rng, m * k);
        let w = random(&mut rng, n * k);
        let b = random(&mut rng, n);
        let mut out = vec![0f32; m * n];
        linear(&x, m, k, Matrix::F32(&w), n, Some(&b), &mut out);
        for i in 0..m {
            for j in 0..n {
                let r: f64 = (0..k)
                    .map(|t| x[i * k + t] as f64 * w[j * k + t] as f64)
                    .sum::<f64>()
                    + b[j] as f64;
                assert!(
                    (out[i * n + j] as f64 - r).abs() < 1e-4 * (k as f64).sqrt(),
                    "({m},{k},{n}) [{i},{j}]: {} vs {r}",
                    out[i * n + j]
                );
            }
        }
    }
}

#[test]
fn linear_rows_are_bitwise_independent_of_batch() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (k, n) = (384, 1100);
    let w = random(&mut rng, n * k);
    let x = random(&mut rng, 16 * k);
    let mut full = vec![0f32; 16 * n];
    linear(&x, 16, k, Matrix::F32(&w), n, None, &mut full);
    for i in [0, 7, 15] {
        let mut one = vec![0f32; n];
        linear(
            &x[i * k..(i + 1) * k],
            1,
            k,
            Matrix::F32(&w),
            n,
            None,
            &mut one,
        );
        assert_eq!(
            one,
            full[i * n..(i + 1) * n],
            "row {i} differs between m=1 and m=16"
        );
    }
}

#[test]
fn rms_norm_matches_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let dim = 96;
    let x = random(&mut rng, 4 * dim);
    let w = random(&mut rng, dim);
    let mut y = x.clone();
    rms_norm(&mut y, dim, &w, 1e-6);
    for r in 0..4 {
        let row = &x[r * dim..(r + 1) * dim];
        let ms: f64 = row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / dim as f64;
        for i in 0..dim {
            let want = row[i] as f64 / (ms + 1e-6).sqrt() * w[i] as f64;
            assert!(rel_err(y[r * dim + i], want) < 1e-5);
        }
    }
}

#[test]
fn rope_rotates_pairs_by_position_times_frequency() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let hd = 16;
    let rope = Rope::new(hd, 10000.0, None);
    let x = random(&mut rng, 2 * hd);
    let mut y = x.clone();
    rope.apply(&mut y, 37);
    for h in 0..2 {
        for i in 0..hd / 2 {
            let f = 1.0 / 10000f64.powf(2.0 * i as f64 / hd as f64);
            let (s, c) = (37.0 * f).sin_cos();
            let (a, b) = (x[h * hd + i] as f64, x[h * hd + i + hd / 2] as f64);
            assert!((y[h * hd + i] as f64 - (a * c - b * s)).abs() < 1e-4);
            assert!((y[h * hd + i + hd / 2] as f64 - (b * c + a * s)).abs() < 1e-4);
        }
    }
    // Position 0 is the identity.
    let mut z = x.clone();
    rope.apply(&mut z, 0);
    assert_eq!(z, x);
}

#[test]
fn llama3_scaling_keeps_high_and_divides_low_frequencies() {
    let s = Llama3RopeScaling {
        factor: 8.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_position_embeddings: 8192,
    };
    let plain = Rope::new(128, 500000.0, None);
    let scaled = Rope::new(128, 500000.0, Some(s));
    let (p, q) = (plain.inv_freq(), scaled.inv_freq());
    assert_eq!(p[0], q[0], "the highest frequency is kept");
    assert!(
        (q[63] - p[63] / 8.0).abs() < 1e-12,
        "the lowest frequency is divided by factor"
    );
    let mid: Vec<usize> = (0..64)
        .filter(|&i| {
            let wl = 2.0 * std::f32::consts::PI / p[i];
            wl > 8192.0 / 4.0 && wl < 8192.0
        })
        .collect();
    assert!(!mid.is_empty());
    for i in mid {
        assert!(q[i] < p[i] && q[i] > p[i] / 8.0, "band {i} is interpolated");
    }
}

fn naive_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    keys: &[usize],
    shape: AttentionShape,
    scale: f32,
) -> Vec<f64> {
    let AttentionShape {
        n_heads,
        n_kv_heads,
        head_dim,
    } = shape;
    let w = n_kv_heads * head_dim;
    let mut out = vec![0f64; n_heads * head_dim];
    for h in 0..n_heads {
        let kvh = h / (n_heads / n_kv_heads);
        let s: Vec<f64> = keys
            .iter()
            .map(|&e| {
                (0..head_dim)
                    .map(|d| q[h * head_dim + d] as f64 * k[e * w + kvh * head_dim + d] as f64)
                    .sum::<f64>()
                    * scale as f64
            })
            .collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
        for (j, &e) in keys.iter().enumerate() {
            let p = (s[j] - m).exp() / z;
            for d in 0..head_dim {
                out[h * head_dim + d] += p * v[e * w + kvh * head_dim + d] as f64;
            }
        }
    }
    out
}

#[test]
fn attention_matches_reference_with_prefix_and_tree_keys() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let shape = AttentionShape {
        n_heads: 8,
        n_kv_heads: 2,
        head_dim: 16,
    };
    let entries = 40;
    let k = random(&mut rng, entries * shape.kv_width());
    let v = random(&mut rng, entries * shape.kv_width());
    let q = random(&mut rng, shape.n_heads * shape.head_dim);
    let extra = [31, 33, 38];
    let mut out = vec![0f32; q.len()];
    attention(
        &q,
        &k,
        &v,
        KeyList {
            prefix: 30,
            extra: &extra,
        },
        shape,
        0.25,
        &mut out,
    );
    let keys: Vec<usize> = (0..30).chain(extra).collect();
    let want = naive_attention(&q, &k, &v, &keys, shape, 0.25);
    for (a, b) in out.iter().zip(&want) {
        assert!((*a as f64 - b).abs() < 1e-5, "{a} vs {b}");
    }
}

#[test]
fn attention_ignores_entries_outside_the_key_list() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let shape = AttentionShape {
        n_heads: 4,
        n_kv_heads: 4,
        head_dim: 8,
    };
    let k = random(&mut rng, 20 * shape.kv_width());
    let v = random(&mut rng, 20 * shape.kv_width());
    let q = random(&mut rng, 32);
    // Contiguous prefix 0..12 == the same entries copied so that 10, 11 sit at 15, 19.
    let mut a = vec![0f32; 32];
    attention(
        &q,
        &k,
        &v,
        KeyList {
            prefix: 12,
            extra: &[],
        },
        shape,
        0.3,
        &mut a,
    );
    let (mut k2, mut v2) = (k.clone(), v.clone());
    let w = shape.kv_width();
    k2.copy_within(10 * w..11 * w, 15 * w);
    k2.copy_within(11 * w..12 * w, 19 * w);
    v2.copy_within(10 * w..11 * w, 15 * w);
    v2.copy_within(11 * w..12 * w, 19 * w);
    let mut b = vec![0f32; 32];
    attention(
        &q,
        &k2,
        &v2,
        KeyList {
            prefix: 10,
            extra: &[15, 19],
        },
        shape,
        0.3,
        &mut b,
    );
    assert_eq!(
        a, b,
        "the same visible entries in the same order give bitwise the same output"
    );
}

#[test]
fn selection_helpers_agree_with_definitions() {
    let x = [0.5f32, 2.0, -1.0, 2.0, 1.5];
    assert_eq!(argmax(&x), Some(1), "ties go to the lower index");
    assert_eq!(argmax(&[]), None);
    let t = top_k(&x, 3);
    assert_eq!(t.iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 3, 4]);
    let p = softmax_with_temperature(&x, 0.5);
    assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    let ls = log_softmax(&x);
    let z: f64 = x.iter().map(|v| (*v as f64).exp()).sum();
    for (l, v) in ls.iter().zip(&x) {
        assert!(((*l as f64) - (*v as f64 - z.ln())).abs() < 1e-5);
    }
    let mut g = vec![1.0f32, -2.0];
    silu_and_mul(&mut g, &[2.0, 3.0]);
    assert!((g[0] - 2.0 / (1.0 + (-1f32).exp())).abs() < 1e-6);
    assert!((g[1] - 3.0 * (-2.0 / (1.0 + 2f32.exp()))).abs() < 1e-6);
}

#[test]
fn greedy_tree_accept_follows_the_targets_choices_through_siblings() {
    // root -> {5 (node 0), 7 (node 1)}; node 1 -> {2 (node 2), 9 (node 3)}; node 3 -> {4 (node 4)}
    let parents = [-1, -1, 1, 1, 3];
    let tokens = [5, 7, 2, 9, 4];
    // Target: 7 at the root, 9 at node 1, 4 at node 3, 8 at node 4.
    let choice = [7, 0, 9, 0, 4, 8];
    assert_eq!(
        greedy_tree_accept(&parents, &tokens, &choice),
        (vec![1, 3, 4], 8)
    );
    // Target disagrees at the root: nothing accepted, its choice is the bonus.
    assert_eq!(
        greedy_tree_accept(&parents, &tokens, &[3, 0, 0, 0, 0, 0]),
        (vec![], 3)
    );
    // An empty tree is plain decoding.
    assert_eq!(greedy_tree_accept(&[], &[], &[11]), (vec![], 11));
}

#[test]
fn compact_rows_moves_kept_rows_in_order() {
    let mut buf: Vec<f32> = (0..14).map(|v| v as f32).collect(); // 7 rows of width 2
    compact_rows(&mut buf, 2, 2, &[2, 4, 5]);
    assert_eq!(&buf[4..10], &[4.0, 5.0, 8.0, 9.0, 10.0, 11.0]);
    assert_eq!(
        &buf[..4],
        &[0.0, 1.0, 2.0, 3.0],
        "rows below the destination are untouched"
    );
}
