//! The forms of the mixture-of-experts launches the engine picks by switch:
//! how a single row's routing gathers its logits, how many pairs a grouped
//! block takes, and where the grouped launches keep the shared slices'
//! down weights in L2. Every form gives the same bits.

use crate::switch::Switch;

/// How the routing of a single row (a decode step at batch 1) brings the
/// logits of its blocks together; the same routes and plan either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneRowRouting {
    /// The last block to finish (a ticket counter) reads them back from L2,
    /// as for any number of rows (`SPECULA_ROUTE_ONE=ticket`).
    Ticket,
    /// The logit blocks, at most [`MOE_ROUTE_CLUSTER`], are one thread-block
    /// cluster and the first reads the others' logits from their shared
    /// memory (`moe_route_one`; the default: V2-Lite batch 1 2.0% faster on
    /// an H100, results/h200/step-2026-12-06 call 17); a ticket where there
    /// are more.
    Cluster,
}

/// Logit blocks (of 8 experts each) the one-row routing takes as one
/// cluster at most (the portable cluster size).
pub const MOE_ROUTE_CLUSTER: usize = 8;

/// How this process routes a single row (`SPECULA_ROUTE_ONE`, read once).
pub fn one_row_routing() -> OneRowRouting {
    static ONE: Switch<OneRowRouting> = Switch::new(
        "SPECULA_ROUTE_ONE",
        &[
            ("ticket", OneRowRouting::Ticket),
            ("cluster", OneRowRouting::Cluster),
        ],
        OneRowRouting::Cluster,
        "cluster",
    );
    ONE.get()
}

/// Pairs a grouped block takes at most (`SPECULA_MOE_SLOT`: `32`, the
/// default, or `off`, an expert's pairs in one block however many); read
/// once. The same bits either way: a pair's result does not depend on the
/// pairs beside it.
pub(super) fn moe_slot_pairs() -> Option<usize> {
    static CHUNK: Switch<Option<usize>> = Switch::new(
        "SPECULA_MOE_SLOT",
        &[("32", Some(32)), ("off", None)],
        Some(32),
        "32",
    );
    CHUNK.get()
}

/// Whether a single row's routing of `blocks` logit blocks runs as one
/// cluster under `one_row`.
pub(super) fn routes_in_a_cluster(one_row: OneRowRouting, blocks: usize) -> bool {
    one_row == OneRowRouting::Cluster && (1..=MOE_ROUTE_CLUSTER).contains(&blocks)
}

/// Where the grouped launches load their weights as streaming data and the
/// early shared slices' gate|up asks L2 for their down weights while the
/// routing runs, so that the shared slices' down reads them from L2 (the
/// same bits every way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoeL2 {
    /// Nowhere (`SPECULA_MOE_L2=off`).
    Off,
    /// In every forward (`SPECULA_MOE_L2=ahead`).
    Ahead,
    /// Where every expert's pairs fit one slot (rows at most the slot's
    /// pairs), so that no two blocks read the same weights: evict-first
    /// loads would then read them from DRAM twice (the default; V2-Lite on
    /// an H100, results/h200/step-2026-12-06 call 17: batch 1 1.9% faster,
    /// 8 1.0%, 32 0.4%, a 6-row verify 2.2%; a 48-row verify 2% slower and
    /// a 192-row one 9% with it everywhere).
    OneSlot,
}

impl MoeL2 {
    /// Whether a forward of `rows` rows in slots of `chunk` pairs takes it.
    pub fn applies(self, rows: usize, chunk: usize) -> bool {
        match self {
            MoeL2::Off => false,
            MoeL2::Ahead => true,
            MoeL2::OneSlot => rows <= chunk,
        }
    }
}

/// This process's [`MoeL2`] (`SPECULA_MOE_L2`, read once).
pub fn moe_l2() -> MoeL2 {
    static L2: Switch<MoeL2> = Switch::new(
        "SPECULA_MOE_L2",
        &[
            ("off", MoeL2::Off),
            ("ahead", MoeL2::Ahead),
            ("one-slot", MoeL2::OneSlot),
        ],
        MoeL2::OneSlot,
        "where every expert's pairs fit one slot",
    );
    L2.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_l2_form_applies_by_default_only_where_no_two_blocks_read_one_experts_weights() {
        // Decode at batch 1, 8 and 32, a 6-row verify: slots of 32 pairs hold each expert's.
        for rows in [1, 6, 8, 32] {
            assert!(MoeL2::OneSlot.applies(rows, 32));
        }
        // A 48- or 192-row verify: the shared slices' pairs take two slots or more.
        assert!(!MoeL2::OneSlot.applies(48, 32) && !MoeL2::OneSlot.applies(192, 32));
        // SPECULA_MOE_SLOT=off: one slot an expert, however many rows.
        assert!(MoeL2::OneSlot.applies(192, 192 * 8));
        assert!(MoeL2::Ahead.applies(192, 32) && !MoeL2::Off.applies(1, 32));
    }

    #[test]
    fn a_single_row_routes_in_a_cluster_only_when_its_logit_blocks_fit_one() {
        // V2-Lite and Moonlight: 64 experts, 8 blocks of 8 warps.
        assert!(routes_in_a_cluster(OneRowRouting::Cluster, 8));
        assert!(routes_in_a_cluster(OneRowRouting::Cluster, 1));
        assert!(!routes_in_a_cluster(OneRowRouting::Ticket, 8));
        // DeepSeek-V3 and Kimi-K2: 256 experts, 32 blocks: the ticket.
        assert!(!routes_in_a_cluster(OneRowRouting::Cluster, 32));
    }
}
