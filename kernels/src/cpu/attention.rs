//! Scaled dot-product attention of one query token over a gathered key list
//! (grouped-query; causal, tree and prefix masks are all expressed as the list
//! of cache entries the token may see).

use super::dot;

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
    fn len(&self) -> usize {
        self.prefix + self.extra.len()
    }

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
    let mut scores = vec![0f32; keys.len()];
    for h in 0..n_heads {
        let kvh = h / group;
        let qh = &q[h * head_dim..(h + 1) * head_dim];
        let mut max = f32::NEG_INFINITY;
        for (s, e) in scores.iter_mut().zip(keys.iter()) {
            let k = &k_cache[e * width + kvh * head_dim..][..head_dim];
            *s = dot(qh, k) * scale;
            max = max.max(*s);
        }
        let mut sum = 0f32;
        for s in scores.iter_mut() {
            *s = (*s - max).exp();
            sum += *s;
        }
        let oh = &mut out[h * head_dim..(h + 1) * head_dim];
        oh.fill(0.0);
        for (p, e) in scores.iter().zip(keys.iter()) {
            let v = &v_cache[e * width + kvh * head_dim..][..head_dim];
            for (o, x) in oh.iter_mut().zip(v) {
                *o += p * x;
            }
        }
        let inv = 1.0 / sum;
        for o in oh.iter_mut() {
            *o *= inv;
        }
    }
}
