//! Scaled dot-product attention of one query token over a gathered key list
//! (grouped-query; causal, tree and prefix masks are all expressed as the list
//! of cache entries the token may see).

use super::dots;
use super::exp::exp;

/// Head layout of an attention layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    /// Query heads.
    pub n_heads: usize,
    /// Key/value heads (`n_heads` is a multiple of it).
    pub n_kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
}

impl AttentionShape {
    /// Floats in one cache entry (one token's keys, or values, over all kv heads).
    pub fn kv_width(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }
}

/// The cache entries one query sees, in order: entries `0..prefix`, then
/// each index of `extra` (tree ancestors, then the token itself).
#[derive(Debug, Clone, Copy)]
pub struct KeyList<'a> {
    /// Every entry below this index is visible.
    pub prefix: usize,
    /// Further visible entries, in increasing position order.
    pub extra: &'a [usize],
}

impl KeyList<'_> {
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.prefix).chain(self.extra.iter().copied())
    }
}

/// Attention output for one token: `out[h] = softmax(q[h] . K^T * scale) V`
/// over the entries of `keys`, for every query head `h` (kv head `h / group`).
///
/// `q` and `out` are `[n_heads, head_dim]`; `k_cache` and `v_cache` are
/// `[entries, n_kv_heads, head_dim]`. The reduction runs over the key list in
/// order, so the result depends only on the visible entries, not on masked
/// ones or on other queries: tree verification reproduces plain decoding
/// bitwise.
pub fn attention(
    q: &[f32],
    k_cache: &[f32],
    v_cache: &[f32],
    keys: KeyList<'_>,
    shape: AttentionShape,
    scale: f32,
    out: &mut [f32],
) {
    let AttentionShape {
        n_heads,
        n_kv_heads,
        head_dim,
    } = shape;
    assert_eq!(
        q.len(),
        n_heads * head_dim,
        "attention: q is not [n_heads, head_dim]"
    );
    assert_eq!(
        out.len(),
        n_heads * head_dim,
        "attention: out is not [n_heads, head_dim]"
    );
    assert!(
        n_kv_heads > 0 && n_heads % n_kv_heads == 0,
        "attention: n_heads must be a multiple of n_kv_heads"
    );
    let width = shape.kv_width();
    let entries = k_cache.len() / width;
    assert!(
        keys.iter().all(|e| e < entries),
        "attention: key list points past the cache"
    );
    let group = n_heads / n_kv_heads;
    let entries: Vec<usize> = keys.iter().collect();
    let n = entries.len();
    // The scores (then weights) of one kv head's query heads: [group, n],
    // linear in the context.
    let mut scores = vec![0f32; group * n];
    for kvh in 0..n_kv_heads {
        let at = |e: usize| e * width + kvh * head_dim;
        let key = |e: usize| &k_cache[at(e)..][..head_dim];
        let query = |g: usize| &q[(kvh * group + g) * head_dim..][..head_dim];
        // Up to four query heads against two keys at a time: each key is
        // loaded once for all of them.
        let mut g = 0;
        while g < group {
            let rows = &mut scores[g * n..];
            g += match group - g {
                1 => score_rows::<1>([query(g)], &entries, key, scale, rows),
                2 => score_rows::<2>([0, 1].map(|d| query(g + d)), &entries, key, scale, rows),
                3 => score_rows::<3>([0, 1, 2].map(|d| query(g + d)), &entries, key, scale, rows),
                _ => score_rows::<4>(
                    [0, 1, 2, 3].map(|d| query(g + d)),
                    &entries,
                    key,
                    scale,
                    rows,
                ),
            };
        }
        let heads = &mut out[kvh * group * head_dim..(kvh + 1) * group * head_dim];
        let values = Values {
            cache: v_cache,
            entries: &entries,
            width,
            offset: kvh * head_dim,
            head_dim,
        };
        weigh(&mut scores, values, heads);
    }
}

/// The value rows one kv head's query heads read: entry `e`'s is
/// `cache[e * width + offset..][..head_dim]`.
#[derive(Clone, Copy)]
struct Values<'a> {
    cache: &'a [f32],
    entries: &'a [usize],
    width: usize,
    offset: usize,
    head_dim: usize,
}

/// Turns each head's row of `scores` (`[heads, n]`) into softmax weights and
/// writes the weighted sum of the value rows into its row of `out`
/// (`[heads, head_dim]`), with AVX2 where the machine has it (the same
/// operations, so the same bits, in wider registers).
fn weigh(scores: &mut [f32], values: Values<'_>, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if matches!(
        super::DotKernel::current(),
        super::DotKernel::Avx2 | super::DotKernel::Avx512
    ) {
        // SAFETY: those kernels run only where AVX2 and FMA do.
        return unsafe { weigh_avx2(scores, values, out) };
    }
    weigh_portable(scores, values, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn weigh_avx2(scores: &mut [f32], values: Values<'_>, out: &mut [f32]) {
    weigh_portable(scores, values, out)
}

/// [`weigh`]: per head, `p = exp(s - max)` and their sum over the keys in
/// list order; every output element sums `p * v` over the keys in list
/// order (from zero, multiply then add), and is scaled by `1 / sum` last.
#[inline(always)]
fn weigh_portable(scores: &mut [f32], values: Values<'_>, out: &mut [f32]) {
    let (n, head_dim) = (values.entries.len(), values.head_dim);
    for row in scores.chunks_exact_mut(n) {
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
        for s in row.iter_mut() {
            *s = exp(*s - max);
        }
    }
    // Per head, 32 output elements at a time held in registers over the
    // whole key list (a fixed-size array), the rest one by one.
    const CHUNK: usize = 32;
    let value = |e: usize| &values.cache[e * values.width + values.offset..][..head_dim];
    for (oh, p) in out.chunks_exact_mut(head_dim).zip(scores.chunks_exact(n)) {
        let mut chunks = oh.chunks_exact_mut(CHUNK);
        for (c, oc) in (&mut chunks).enumerate() {
            let mut acc = [0f32; CHUNK];
            for (&pe, &e) in p.iter().zip(values.entries) {
                let v = &value(e)[c * CHUNK..(c + 1) * CHUNK];
                for (a, x) in acc.iter_mut().zip(v) {
                    *a += pe * x;
                }
            }
            oc.copy_from_slice(&acc);
        }
        let done = head_dim - chunks.into_remainder().len();
        for (d, o) in oh.iter_mut().enumerate().skip(done) {
            let mut acc = 0f32;
            for (&pe, &e) in p.iter().zip(values.entries) {
                acc += pe * value(e)[d];
            }
            *o = acc;
        }
    }
    for (oh, row) in out.chunks_exact_mut(head_dim).zip(scores.chunks_exact(n)) {
        let mut sum = 0f32;
        for p in row {
            sum += p;
        }
        let inv = 1.0 / sum;
        for o in oh.iter_mut() {
            *o *= inv;
        }
    }
}

/// `rows[r * n + i] = qs[r] . key(entries[i]) * scale` for the `n` entries:
/// `R` query heads against two keys at a time ([`dots`]: each score the
/// bits of one canonical dot product). Returns `R`, the heads done.
fn score_rows<'a, const R: usize>(
    qs: [&[f32]; R],
    entries: &[usize],
    key: impl Fn(usize) -> &'a [f32],
    scale: f32,
    rows: &mut [f32],
) -> usize {
    let n = entries.len();
    let mut pairs = entries.chunks_exact(2);
    let mut i = 0;
    for pair in &mut pairs {
        let d = dots(qs, [key(pair[0]), key(pair[1])]);
        for (r, dr) in d.iter().enumerate() {
            rows[r * n + i] = dr[0] * scale;
            rows[r * n + i + 1] = dr[1] * scale;
        }
        i += 2;
    }
    for &e in pairs.remainder() {
        let d = dots(qs, [key(e)]);
        for (r, dr) in d.iter().enumerate() {
            rows[r * n + i] = dr[0] * scale;
        }
    }
    R
}
