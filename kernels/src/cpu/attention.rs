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
/// (`[heads, head_dim]`), with AVX2 or AVX-512 registers where the machine
/// has them (the same operations, so the same bits, in wider registers).
fn weigh(scores: &mut [f32], values: Values<'_>, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    match super::DotKernel::current() {
        // SAFETY: this kernel runs only where AVX-512F, AVX2 and FMA do.
        super::DotKernel::Avx512 => return unsafe { weigh_avx512(scores, values, out) },
        // SAFETY: this kernel runs only where AVX2 and FMA do.
        super::DotKernel::Avx2 => return unsafe { weigh_avx2(scores, values, out) },
        _ => {}
    }
    weigh_portable::<2>(scores, values, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn weigh_avx2(scores: &mut [f32], values: Values<'_>, out: &mut [f32]) {
    // Sixteen registers: two heads' 32 sums (eight) beside a value chunk (four).
    weigh_portable::<2>(scores, values, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn weigh_avx512(scores: &mut [f32], values: Values<'_>, out: &mut [f32]) {
    // Thirty-two registers: four heads' 32 sums (sixteen) beside a value chunk.
    weigh_portable::<4>(scores, values, out)
}

/// [`weigh`]: per head, `p = exp(s - max)` and their sum over the keys in
/// list order; every output element sums `p * v` over the keys in list
/// order (from zero, multiply then add), and is scaled by `1 / sum` last.
/// Up to `H` heads (which read the same value rows) are summed together, so
/// each value chunk is loaded once for all of them and their sums, which do
/// not depend on each other, overlap in the pipeline; each element's
/// operations and their order are the same for any `H`.
#[inline(always)]
fn weigh_portable<const H: usize>(scores: &mut [f32], values: Values<'_>, out: &mut [f32]) {
    let (n, head_dim) = (values.entries.len(), values.head_dim);
    for row in scores.chunks_exact_mut(n) {
        let max = max_of(row);
        for s in row.iter_mut() {
            *s = exp(*s - max);
        }
    }
    let heads = out.len() / head_dim;
    let mut h = 0;
    while h < heads {
        let (o, p) = (&mut out[h * head_dim..], &scores[h * n..]);
        h += match heads - h {
            1 => weigh_heads::<1>(p, values, o),
            x if x < H || H < 4 => weigh_heads::<2>(p, values, o),
            _ => weigh_heads::<4>(p, values, o),
        };
    }
    // Each head's sum runs over its keys in order; H heads' sums side by
    // side, so that their additions overlap.
    let mut h = 0;
    while h < heads {
        let g = H.min(heads - h);
        let mut sums = [0f32; H];
        for i in 0..n {
            for (d, sum) in sums.iter_mut().enumerate().take(g) {
                *sum += scores[(h + d) * n + i];
            }
        }
        for (d, sum) in sums.iter().enumerate().take(g) {
            let inv = 1.0 / sum;
            for o in out[(h + d) * head_dim..][..head_dim].iter_mut() {
                *o *= inv;
            }
        }
        h += g;
    }
}

/// The largest of `row` (NaN ignored, as `f32::max` does), over eight
/// running maxima: the maximum of a set is the same whatever the order
/// (zeros of either sign give the same `exp(s - max)`).
#[inline(always)]
fn max_of(row: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for (a, &b) in m.iter_mut().zip(c) {
            *a = a.max(b);
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    m.iter().fold(tail, |a, &b| a.max(b))
}

/// The unscaled weighted value sums of `G` heads: `out[g * head_dim + d] =
/// sum over keys i (in order, from zero) of p[g * n + i] * value(i)[d]`,
/// 32 elements of every head at a time held in registers over the whole
/// key list, the rest one by one. Returns `G`, the heads done.
#[inline(always)]
fn weigh_heads<const G: usize>(p: &[f32], values: Values<'_>, out: &mut [f32]) -> usize {
    const CHUNK: usize = 32;
    let (n, head_dim) = (values.entries.len(), values.head_dim);
    let value = |e: usize| &values.cache[e * values.width + values.offset..][..head_dim];
    let ps: [&[f32]; G] = std::array::from_fn(|g| &p[g * n..(g + 1) * n]);
    let chunks = head_dim / CHUNK;
    for c in 0..chunks {
        let mut acc = [[0f32; CHUNK]; G];
        for (i, &e) in values.entries.iter().enumerate() {
            let v: &[f32; CHUNK] = value(e)[c * CHUNK..(c + 1) * CHUNK]
                .try_into()
                .expect("a chunk");
            for g in 0..G {
                let pe = ps[g][i];
                for (a, x) in acc[g].iter_mut().zip(v) {
                    *a += pe * x;
                }
            }
        }
        for (g, a) in acc.iter().enumerate() {
            out[g * head_dim + c * CHUNK..][..CHUNK].copy_from_slice(a);
        }
    }
    for g in 0..G {
        for d in chunks * CHUNK..head_dim {
            let mut acc = 0f32;
            for (&pe, &e) in ps[g].iter().zip(values.entries) {
                acc += pe * value(e)[d];
            }
            out[g * head_dim + d] = acc;
        }
    }
    G
}

/// `rows[r * n + i] = qs[r] . key(entries[i]) * scale` for the `n` entries:
/// `R` query heads against four keys at a time with AVX-512's thirty-two
/// registers, two otherwise ([`dots`]: each score the bits of one canonical
/// dot product, whichever block computes it). Returns `R`, the heads done.
fn score_rows<'a, const R: usize>(
    qs: [&[f32]; R],
    entries: &[usize],
    key: impl Fn(usize) -> &'a [f32],
    scale: f32,
    rows: &mut [f32],
) -> usize {
    let n = entries.len();
    let mut i = 0;
    let mut put = |i: usize, d: &[f32], r: usize| {
        for (c, v) in d.iter().enumerate() {
            rows[r * n + i + c] = v * scale;
        }
    };
    if super::DotKernel::current() == super::DotKernel::Avx512 {
        while n - i >= 4 {
            let e = &entries[i..i + 4];
            let d = dots(qs, [key(e[0]), key(e[1]), key(e[2]), key(e[3])]);
            for (r, dr) in d.iter().enumerate() {
                put(i, dr, r);
            }
            i += 4;
        }
    }
    while n - i >= 2 {
        let d = dots(qs, [key(entries[i]), key(entries[i + 1])]);
        for (r, dr) in d.iter().enumerate() {
            put(i, dr, r);
        }
        i += 2;
    }
    if i < n {
        let d = dots(qs, [key(entries[i])]);
        for (r, dr) in d.iter().enumerate() {
            put(i, dr, r);
        }
    }
    R
}
