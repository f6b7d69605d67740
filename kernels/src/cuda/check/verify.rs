//! Check of greedy tree verification on many random trees at once (exact:
//! the same accepted paths and bonus tokens as `cpu::greedy_tree_accept`).

use super::CheckRow;
use crate::cpu;
use crate::cuda::{verify_greedy_tree, Gpu, GpuError};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Greedy tree verification on 64 random trees at once.
pub(super) fn check_verify_greedy_tree(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let (mut tokens, mut parents, mut choice, mut off) =
        (Vec::new(), Vec::new(), Vec::new(), vec![0i32]);
    let mut want = Vec::new();
    for _ in 0..64 {
        let n = rng.random_range(0..16usize);
        let p: Vec<i32> = (0..n).map(|i| rng.random_range(-1..i as i32)).collect();
        let t: Vec<u32> = (0..n).map(|_| rng.random_range(0..3)).collect();
        let c: Vec<u32> = (0..=n).map(|_| rng.random_range(0..3)).collect();
        want.push(cpu::greedy_tree_accept(&p, &t, &c));
        tokens.extend(t.iter().map(|&x| x as i32));
        parents.extend(p);
        choice.extend(c.iter().map(|&x| x as i32));
        off.push(tokens.len() as i32);
    }
    if tokens.is_empty() {
        tokens.push(0);
        parents.push(-1);
    }
    let v = verify_greedy_tree(
        gpu,
        &s.clone_htod(&choice)?,
        &s.clone_htod(&tokens)?,
        &s.clone_htod(&parents)?,
        &s.clone_htod(&off)?,
    )?;
    let (acc, len, bonus) = (
        s.clone_dtoh(&v.accepted)?,
        s.clone_dtoh(&v.accept_len)?,
        s.clone_dtoh(&v.bonus)?,
    );
    let deep = want.iter().filter(|w| w.0.len() >= 2).count();
    let wrong = want
        .iter()
        .enumerate()
        .filter(|(i, (path, b))| {
            let o = off[*i] as usize;
            let got: Vec<usize> = acc[o..o + len[*i] as usize]
                .iter()
                .map(|&x| x as usize)
                .collect();
            got != *path || bonus[*i] as u32 != *b
        })
        .count();
    rows_out.push(CheckRow {
        kernel: "verify_greedy_tree",
        dtype: "i32",
        shape: format!("64 random trees, {deep} accepted 2+ deep"),
        error: wrong as f64,
        tolerance: 0.0,
    });
    Ok(())
}
