//! Per-sequence key/value cache with a committed prefix and a scratch tail.
//!
//! Every forward appends its tokens' keys and values as scratch entries.
//! After verification the accepted entries are compacted onto the committed
//! prefix ([`KvCache::commit`]) and the rest dropped; drafting drops all of
//! its scratch ([`KvCache::rollback`]). Nothing is ever recomputed.

use specula_kernels::cpu::compact_rows;

/// Keys and values of one model (all layers) for one sequence.
#[derive(Debug, Clone)]
pub struct KvCache {
    /// Per layer: keys and values, `[entries, kv_heads, head_dim]` each.
    layers: Vec<(Vec<f32>, Vec<f32>)>,
    width: usize,
    committed: usize,
}

impl KvCache {
    /// An empty cache for `layers` layers of `width = kv_heads * head_dim` floats per entry.
    pub fn new(layers: usize, width: usize) -> KvCache {
        KvCache {
            layers: vec![(Vec::new(), Vec::new()); layers],
            width,
            committed: 0,
        }
    }

    /// Entries held (committed and scratch).
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, |(k, _)| k.len() / self.width)
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries kept for good.
    pub fn committed(&self) -> usize {
        self.committed
    }

    /// Appends one entry's key and value rows to `layer` (as scratch).
    pub fn push(&mut self, layer: usize, k: &[f32], v: &[f32]) {
        debug_assert_eq!(k.len(), self.width);
        let (ks, vs) = &mut self.layers[layer];
        ks.extend_from_slice(k);
        vs.extend_from_slice(v);
    }

    /// Keys and values of `layer`.
    pub fn layer(&self, layer: usize) -> (&[f32], &[f32]) {
        let (k, v) = &self.layers[layer];
        (k, v)
    }

    /// Keeps the scratch entries `keep` (ascending, each at or past the
    /// committed prefix) as the next committed entries, in that order, and
    /// drops every other scratch entry.
    pub fn commit(&mut self, keep: &[usize]) {
        let len = self.len();
        assert!(
            keep.windows(2).all(|w| w[0] < w[1]),
            "kv commit: entries must be ascending"
        );
        assert!(
            keep.iter().all(|&e| e >= self.committed && e < len),
            "kv commit: entry outside the scratch tail"
        );
        let w = self.width;
        let kept = self.committed + keep.len();
        for (ks, vs) in &mut self.layers {
            compact_rows(ks, w, self.committed, keep);
            compact_rows(vs, w, self.committed, keep);
            ks.truncate(kept * w);
            vs.truncate(kept * w);
        }
        self.committed += keep.len();
    }

    /// Commits every scratch entry.
    pub fn commit_all(&mut self) {
        self.committed = self.len();
    }

    /// Drops the scratch entries from `len` on (`len` at or past the
    /// committed prefix; a `len` past the end changes nothing).
    pub fn truncate(&mut self, len: usize) {
        let keep = len.max(self.committed) * self.width;
        for (ks, vs) in &mut self.layers {
            ks.truncate(keep);
            vs.truncate(keep);
        }
    }

    /// Drops every scratch entry.
    pub fn rollback(&mut self) {
        let keep = self.committed * self.width;
        for (ks, vs) in &mut self.layers {
            ks.truncate(keep);
            vs.truncate(keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(c: &KvCache, layer: usize, e: usize) -> (Vec<f32>, Vec<f32>) {
        let (k, v) = c.layer(layer);
        (k[e * 2..e * 2 + 2].to_vec(), v[e * 2..e * 2 + 2].to_vec())
    }

    #[test]
    fn commit_compacts_kept_entries_and_drops_the_rest() {
        let mut c = KvCache::new(2, 2);
        let push = |c: &mut KvCache, e: usize| {
            for l in 0..2 {
                let x = (10 * l + e) as f32;
                c.push(l, &[x, x], &[-x, -x]);
            }
        };
        (0..3).for_each(|e| push(&mut c, e));
        c.commit(&[0, 1]);
        assert_eq!((c.len(), c.committed()), (2, 2), "entry 2 is dropped");
        (2..6).for_each(|e| push(&mut c, e));
        c.commit(&[3, 5]);
        assert_eq!((c.len(), c.committed()), (4, 4));
        assert_eq!(entry(&c, 1, 2), (vec![13.0, 13.0], vec![-13.0, -13.0]));
        assert_eq!(entry(&c, 0, 3), (vec![5.0, 5.0], vec![-5.0, -5.0]));
        push(&mut c, 9);
        c.rollback();
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn truncate_drops_scratch_past_a_length_but_never_committed_entries() {
        let mut c = KvCache::new(1, 2);
        for e in 0..3 {
            c.push(0, &[e as f32; 2], &[0.0; 2]);
        }
        c.commit_all();
        for e in 3..7 {
            c.push(0, &[e as f32; 2], &[0.0; 2]);
        }
        c.truncate(5);
        assert_eq!((c.len(), c.committed()), (5, 3));
        assert_eq!(entry(&c, 0, 4).0, vec![4.0, 4.0]);
        c.truncate(1);
        assert_eq!((c.len(), c.committed()), (3, 3), "committed entries stay");
    }
}
