//! The forms of the mixture-of-experts launches the engine picks by switch:
//! how a single row's routing gathers its logits, how many pairs a grouped
//! block takes, and whether the grouped launches keep the shared slices'
//! down weights in L2. Every form gives the same bits.

use crate::switch::Switch;

/// How the routing of a single row (a decode step at batch 1) brings the
/// logits of its blocks together; the same routes and plan either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneRowRouting {
    /// The last block to finish (a ticket counter) reads them back from L2,
    /// as for any number of rows (the default until the cluster is timed
    /// and checked on a GPU).
    Ticket,
    /// The logit blocks, at most [`MOE_ROUTE_CLUSTER`], are one thread-block
    /// cluster and the first reads the others' logits from their shared
    /// memory (`moe_route_one`; `SPECULA_ROUTE_ONE=cluster`); a ticket where
    /// there are more.
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
        OneRowRouting::Ticket,
        "ticket",
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

/// Whether the grouped launches load their weights as streaming data and the
/// early shared slices' gate|up asks L2 for their down weights while the
/// routing runs (`SPECULA_MOE_L2=ahead`; default off, read once): the
/// shared slices' down then reads them from L2; the same bits.
pub fn moe_l2_ahead() -> bool {
    static AHEAD: Switch<bool> = Switch::new(
        "SPECULA_MOE_L2",
        &[("off", false), ("ahead", true)],
        false,
        "off",
    );
    AHEAD.get()
}

#[cfg(test)]
mod tests {
    use super::*;

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
