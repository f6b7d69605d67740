//! The mixture-of-experts feed-forward (DeepSeek V2/V3, Kimi, Qwen3-MoE) on
//! the CPU, batch-invariant: each token is routed from its own router
//! logits ([`super::router::route`]); each expert runs the gated MLP over
//! the rows that chose it (a row's output does not depend on which other
//! rows are there); a token's routed outputs, each times its weight, are
//! summed in ascending expert id (the order transformers' loop over
//! experts adds them), then the shared experts' output is added.

use super::blocks::{Linear, Mlp};
use super::router::{route, Route};
use crate::checkpoint::Checkpoint;
use crate::config::MoeConfig;
use crate::error::Result;

/// The MoE block of one decoder layer.
pub struct MoeBlock {
    pub(crate) gate: Linear,
    pub(crate) bias: Option<Vec<f32>>,
    pub(crate) experts: Vec<Mlp>,
    pub(crate) shared: Option<Mlp>,
    pub(crate) config: MoeConfig,
}

impl MoeBlock {
    /// Loads `{prefix}.gate` (with `e_score_correction_bias` when the config
    /// has one), `{prefix}.experts.{e}` and `{prefix}.shared_experts`.
    pub fn load(ck: &Checkpoint, prefix: &str, hidden: usize, m: &MoeConfig) -> Result<MoeBlock> {
        let why = "hidden_size, n_routed_experts, moe_intermediate_size";
        let gate = Linear::load(
            ck,
            &format!("{prefix}.gate"),
            m.n_routed_experts,
            hidden,
            false,
            why,
        )?;
        let bias = if m.correction_bias {
            Some(ck.f32(
                &format!("{prefix}.gate.e_score_correction_bias"),
                &[m.n_routed_experts],
                "n_routed_experts",
            )?)
        } else {
            None
        };
        let experts = (0..m.n_routed_experts)
            .map(|e| {
                Mlp::load(
                    ck,
                    &format!("{prefix}.experts.{e}"),
                    hidden,
                    m.moe_intermediate_size,
                    why,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let shared = if m.n_shared_experts > 0 {
            Some(Mlp::load(
                ck,
                &format!("{prefix}.shared_experts"),
                hidden,
                m.moe_intermediate_size * m.n_shared_experts,
                "hidden_size, moe_intermediate_size * n_shared_experts",
            )?)
        } else {
            None
        };
        Ok(MoeBlock {
            gate,
            bias,
            experts,
            shared,
            config: m.clone(),
        })
    }

    /// The routes of the rows of `x: [rows, hidden]`.
    pub fn routes(&self, x: &[f32]) -> Vec<Route> {
        let logits = self.gate.forward(x);
        logits
            .chunks_exact(self.config.n_routed_experts)
            .map(|l| route(&self.config, l, self.bias.as_deref()))
            .collect()
    }

    /// `x: [rows, hidden]` (normalised) -> `[rows, hidden]`.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let h = self.gate.in_dim;
        let rows = x.len() / h;
        let routes = self.routes(x);
        let mut out = vec![0f32; rows * h];
        for (e, expert) in self.experts.iter().enumerate() {
            let users: Vec<(usize, f32)> = routes
                .iter()
                .enumerate()
                .filter_map(|(r, route)| {
                    route
                        .experts
                        .iter()
                        .find(|(id, _)| *id == e)
                        .map(|&(_, w)| (r, w))
                })
                .collect();
            if users.is_empty() {
                continue;
            }
            let mut input = Vec::with_capacity(users.len() * h);
            for &(r, _) in &users {
                input.extend_from_slice(&x[r * h..(r + 1) * h]);
            }
            let y = expert.forward(&input);
            for (i, &(r, w)) in users.iter().enumerate() {
                let acc = &mut out[r * h..(r + 1) * h];
                for (a, v) in acc.iter_mut().zip(&y[i * h..(i + 1) * h]) {
                    *a += v * w;
                }
            }
        }
        if let Some(shared) = &self.shared {
            let s = shared.forward(x);
            out.iter_mut().zip(&s).for_each(|(a, b)| *a += b);
        }
        out
    }
}
