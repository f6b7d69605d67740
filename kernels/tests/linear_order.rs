//! The canonical reduction order holds everywhere: every kernel this machine
//! runs gives the portable code's bits, for f32 and bfloat16 weights, for any
//! k (tails and partial steps too), any number of rows computed together and
//! any thread count.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula_kernels::cpu::{
    bf16_to_f32, dot, linear_with, pair_bf16, products_with, DotKernel, Matrix, Product,
};

fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

fn bf16(rng: &mut ChaCha8Rng, n: usize) -> Vec<u16> {
    (0..n)
        .map(|_| (rng.random_range(-1.0f32..1.0).to_bits() >> 16) as u16)
        .collect()
}

fn run(kernel: DotKernel, x: &[f32], m: usize, k: usize, w: Matrix<'_>, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    linear_with(kernel, x, m, k, w, n, None, &mut out);
    out
}

fn available() -> Vec<DotKernel> {
    let v: Vec<DotKernel> = DotKernel::ALL
        .into_iter()
        .filter(|k| k.available())
        .collect();
    eprintln!("kernels here: {:?} (current {:?})", v, DotKernel::current());
    v
}

#[test]
fn every_kernel_gives_the_portable_bits_for_any_k_and_weight_type() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for &(m, k, n) in &[
        (1, 7, 5),
        (3, 37, 9),
        (5, 100, 33),
        (2, 256, 70),
        (7, 257, 40),
        (1, 768, 130),
        (4, 64, 9),
        (6, 256, 24),
        (8, 33, 12),
        (13, 100, 19),
    ] {
        let x = random(&mut rng, m * k);
        let wf = random(&mut rng, n * k);
        let wb = bf16(&mut rng, n * k);
        for w in [Matrix::F32(&wf), Matrix::Bf16(&wb)] {
            let want = run(DotKernel::Portable, &x, m, k, w, n);
            for kernel in available() {
                let got = run(kernel, &x, m, k, w, n);
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(
                    same,
                    "{kernel:?} differs from portable at m={m} k={k} n={n} ({w:?})"
                );
            }
        }
    }
}

#[test]
fn a_row_is_the_same_bits_alone_in_any_batch_and_on_any_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let (k, n) = (384, 1100);
    let wf = random(&mut rng, n * k);
    let wb = bf16(&mut rng, n * k);
    let x = random(&mut rng, 19 * k);
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for w in [Matrix::F32(&wf), Matrix::Bf16(&wb)] {
        for kernel in available() {
            let all = run(kernel, &x, 19, k, w, n);
            let serial = one_thread.install(|| run(kernel, &x, 19, k, w, n));
            assert_eq!(all, serial, "{kernel:?}: one thread vs the pool");
            for (i0, m) in [(0, 1), (3, 2), (5, 3), (8, 6), (0, 16), (18, 1)] {
                let part = run(kernel, &x[i0 * k..(i0 + m) * k], m, k, w, n);
                assert_eq!(
                    part,
                    all[i0 * n..(i0 + m) * n],
                    "{kernel:?}: rows {i0}.. in a batch of {m}"
                );
            }
        }
    }
}

#[test]
fn bfloat16_weights_give_the_bits_of_their_f32_widening() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let (m, k, n) = (4, 200, 50);
    let x = random(&mut rng, m * k);
    let wb = bf16(&mut rng, n * k);
    let wf: Vec<f32> = wb.iter().map(|&b| bf16_to_f32(b)).collect();
    for kernel in available() {
        assert_eq!(
            run(kernel, &x, m, k, Matrix::Bf16(&wb), n),
            run(kernel, &x, m, k, Matrix::F32(&wf), n),
            "{kernel:?}"
        );
    }
}

#[test]
fn dot_is_the_linear_kernel_s_dot() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    for k in [1, 8, 31, 32, 33, 130] {
        let a = random(&mut rng, k);
        let b = random(&mut rng, k);
        let via_linear = run(DotKernel::current(), &a, 1, k, Matrix::F32(&b), 1)[0];
        assert_eq!(dot(&a, &b).to_bits(), via_linear.to_bits(), "k = {k}");
        let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
        assert!((dot(&a, &b) as f64 - exact).abs() < 1e-5 * (k as f64).sqrt());
    }
}

#[test]
fn products_together_are_each_product_alone() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let k = 256;
    // A layer's q, k and v projections (k and v too small to split alone).
    let shapes = [(256, true), (64, false), (64, true)];
    let ws: Vec<Vec<u16>> = shapes.iter().map(|&(n, _)| bf16(&mut rng, n * k)).collect();
    let biases: Vec<Vec<f32>> = shapes.iter().map(|&(n, _)| random(&mut rng, n)).collect();
    for m in [1, 6, 16] {
        let x = random(&mut rng, m * k);
        for kernel in available() {
            let mut outs: Vec<Vec<f32>> = shapes.iter().map(|&(n, _)| vec![0f32; m * n]).collect();
            let mut products: Vec<Product<'_>> = outs
                .iter_mut()
                .enumerate()
                .map(|(i, out)| Product {
                    w: Matrix::Bf16(&ws[i]),
                    n: shapes[i].0,
                    bias: shapes[i].1.then_some(&biases[i][..]),
                    out,
                })
                .collect();
            products_with(kernel, &x, m, k, &mut products);
            drop(products);
            for (i, &(n, has_bias)) in shapes.iter().enumerate() {
                let mut alone = vec![0f32; m * n];
                let bias = has_bias.then_some(&biases[i][..]);
                linear_with(kernel, &x, m, k, Matrix::Bf16(&ws[i]), n, bias, &mut alone);
                assert_eq!(outs[i], alone, "{kernel:?}: product {i} at m={m}");
            }
        }
    }
}

#[test]
fn paired_bfloat16_weights_give_the_plain_bits_on_every_kernel() {
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    // k below, at and past the paired blocks of 16, with and without a
    // last group of eight and a scalar tail; m past every row block.
    for &(m, k, n) in &[
        (1, 7, 5),
        (2, 8, 9),
        (3, 15, 9),
        (6, 16, 13),
        (5, 24, 33),
        (7, 31, 17),
        (1, 32, 70),
        (6, 40, 21),
        (13, 256, 70),
        (6, 259, 41),
        (1, 768, 130),
        (6, 768, 64),
    ] {
        let x = random(&mut rng, m * k);
        let wb = bf16(&mut rng, n * k);
        let paired = pair_bf16(&wb, k);
        let want = run(DotKernel::Portable, &x, m, k, Matrix::Bf16(&wb), n);
        for kernel in available() {
            let got = run(kernel, &x, m, k, Matrix::Bf16Paired(&paired), n);
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same,
                "{kernel:?} paired differs from plain portable at m={m} k={k} n={n}"
            );
        }
    }
}

#[test]
fn a_paired_row_is_the_same_bits_alone_in_any_batch_and_on_any_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let (k, n) = (384, 1100);
    let wb = bf16(&mut rng, n * k);
    let paired = pair_bf16(&wb, k);
    let w = Matrix::Bf16Paired(&paired);
    let x = random(&mut rng, 19 * k);
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for kernel in available() {
        let all = run(kernel, &x, 19, k, w, n);
        let serial = one_thread.install(|| run(kernel, &x, 19, k, w, n));
        assert_eq!(all, serial, "{kernel:?}: one thread vs the pool");
        assert_eq!(
            all,
            run(kernel, &x, 19, k, Matrix::Bf16(&wb), n),
            "{kernel:?}: plain"
        );
        for (i0, m) in [(0, 1), (3, 2), (5, 3), (8, 6), (0, 16), (18, 1)] {
            let part = run(kernel, &x[i0 * k..(i0 + m) * k], m, k, w, n);
            assert_eq!(
                part,
                all[i0 * n..(i0 + m) * n],
                "{kernel:?}: rows {i0}.. in a batch of {m}"
            );
        }
    }
}

/// Two rows in one 512-bit register (AVX-512 machines run every product of
/// exactly 2 rows, and the last 2 rows of 6q + 2, that way): each row the
/// bits it has alone, in every batch whose split ends in such a pair, on
/// one thread or the pool, for f32 and bfloat16 weights and a `k` with a
/// tail.
#[test]
fn a_row_in_a_two_row_register_is_the_same_bits_alone_and_on_any_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let (k, n) = (259, 530);
    let wf = random(&mut rng, n * k);
    let wb = bf16(&mut rng, n * k);
    let x = random(&mut rng, 14 * k);
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for w in [Matrix::F32(&wf), Matrix::Bf16(&wb)] {
        for kernel in available() {
            let alone: Vec<f32> = (0..14)
                .flat_map(|i| {
                    one_thread.install(|| run(kernel, &x[i * k..(i + 1) * k], 1, k, w, n))
                })
                .collect();
            for (i0, m) in [
                (0, 2),
                (5, 2),
                (12, 2),
                (0, 3),
                (11, 3),
                (0, 8),
                (6, 8),
                (0, 9),
                (0, 14),
            ] {
                let rows = &x[i0 * k..(i0 + m) * k];
                let pool = run(kernel, rows, m, k, w, n);
                let serial = one_thread.install(|| run(kernel, rows, m, k, w, n));
                assert_eq!(pool, serial, "{kernel:?}: {m} rows, one thread vs the pool");
                assert_eq!(
                    pool,
                    alone[i0 * n..(i0 + m) * n],
                    "{kernel:?}: rows {i0}.. in a batch of {m} against each alone"
                );
            }
        }
    }
}
