//! Rotary position embedding (Hugging Face `rotate_half` layout), with the
//! Llama 3 frequency scaling.

/// Llama 3 `rope_scaling` (`rope_type: "llama3"`) parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Llama3RopeScaling {
    /// Overall context extension factor.
    pub factor: f32,
    /// Wavelengths longer than `original_max_position_embeddings / low_freq_factor` are divided by `factor`.
    pub low_freq_factor: f32,
    /// Wavelengths shorter than `original_max_position_embeddings / high_freq_factor` are kept.
    pub high_freq_factor: f32,
    /// Context length the model was pre-trained with.
    pub original_max_position_embeddings: usize,
}

/// Rotary embedding tables for one head size.
#[derive(Debug, Clone)]
pub struct Rope {
    head_dim: usize,
    inv_freq: Vec<f32>,
}

impl Rope {
    /// Frequencies `1 / theta^(2i/d)` for a rotary dimension of `head_dim`,
    /// optionally rescaled as Llama 3 does.
    pub fn new(head_dim: usize, theta: f32, scaling: Option<Llama3RopeScaling>) -> Rope {
        assert!(head_dim.is_multiple_of(2), "rope: head_dim must be even");
        let half = head_dim / 2;
        let mut inv_freq: Vec<f32> = (0..half)
            .map(|i| 1.0 / theta.powf((2 * i) as f32 / head_dim as f32))
            .collect();
        if let Some(s) = scaling {
            let old = s.original_max_position_embeddings as f32;
            let low_wavelen = old / s.low_freq_factor;
            let high_wavelen = old / s.high_freq_factor;
            for f in &mut inv_freq {
                let wavelen = 2.0 * std::f32::consts::PI / *f;
                if wavelen < high_wavelen {
                    continue;
                }
                if wavelen > low_wavelen {
                    *f /= s.factor;
                } else {
                    let smooth = (old / wavelen - s.low_freq_factor)
                        / (s.high_freq_factor - s.low_freq_factor);
                    *f = (1.0 - smooth) * *f / s.factor + smooth * *f;
                }
            }
        }
        Rope { head_dim, inv_freq }
    }

    /// The per-pair inverse frequencies.
    pub fn inv_freq(&self) -> &[f32] {
        &self.inv_freq
    }

    /// Rotates every head of `x: [heads, head_dim]` (one token) to `position`.
    /// The angles' sines and cosines are computed once for all heads (the
    /// same calls, so the same bits, as computing them per head).
    pub fn apply(&self, x: &mut [f32], position: usize) {
        let half = self.head_dim / 2;
        assert_eq!(
            x.len() % self.head_dim,
            0,
            "rope: x is not [heads, head_dim]"
        );
        // Up to 64 pairs on the stack (head_dim 128), more on the heap.
        let mut small = [(0f32, 0f32); 64];
        let mut large = Vec::new();
        let table: &mut [(f32, f32)] = if half <= small.len() {
            &mut small[..half]
        } else {
            large.resize(half, (0f32, 0f32));
            &mut large
        };
        for (t, f) in table.iter_mut().zip(&self.inv_freq) {
            let angle = position as f32 * f;
            *t = angle.sin_cos();
        }
        for head in x.chunks_exact_mut(self.head_dim) {
            let (lo, hi) = head.split_at_mut(half);
            for ((a, b), &(sin, cos)) in lo.iter_mut().zip(hi.iter_mut()).zip(table.iter()) {
                let (x0, x1) = (*a, *b);
                *a = x0 * cos - x1 * sin;
                *b = x1 * cos + x0 * sin;
            }
        }
    }
}
