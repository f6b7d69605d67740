//! The switches of the small-row tensor-core linear (`linear_mma.cu`), each
//! read once from the environment: how far the pipelined kernel reaches,
//! how many column tiles its blocks hold, and which of its launches start in
//! stream order. Every choice gives the same bits.

use crate::mma_layout::{
    mma_k_parts, pipelined_tiles, MmaLaunch, MMA_PIPELINED_EIGHT_TILES_MAX_ROWS,
};
use crate::switch::Switch;

/// Rows up to which the small-row linear runs the pipelined kernel
/// (`SPECULA_MMA_PIPELINED`): 8 (one token tile) or 16 (two), the looped
/// kernel ([`MmaLaunch::looped`]) past them, 32 (four,
/// [`MmaLaunch::for_shape`]'s rule) or 64 (the default: also eight tiles
/// where [`mma_eight_tiles`] takes them); read once. Every choice gives the
/// same bits.
pub fn mma_pipelined_rows() -> usize {
    static ROWS: Switch<usize> = Switch::new(
        "SPECULA_MMA_PIPELINED",
        &[("8", 8), ("16", 16), ("32", 32), ("64", 64)],
        MMA_PIPELINED_EIGHT_TILES_MAX_ROWS,
        "64",
    );
    ROWS.get()
}

/// Column tiles a block of the pipelined small-row kernel holds, where set
/// (`SPECULA_MMA_GROUPS`: 1, or 2 where `parts` leaves room,
/// [`MmaLaunch::with_groups`]; unset: [`MmaLaunch::for_shape`]'s two to 32
/// rows of a weight with at least 4096 outputs, else one); read once. Every
/// choice gives the same bits.
pub fn mma_pipelined_groups() -> Option<usize> {
    static GROUPS: Switch<Option<usize>> = Switch::new(
        "SPECULA_MMA_GROUPS",
        &[("1", Some(1)), ("2", Some(2))],
        None,
        "two to 32 rows of 4096 outputs or more, else one",
    );
    GROUPS.get()
}

/// `layout` with the column tiles a block `SPECULA_MMA_GROUPS` asks for, or
/// as its rule gave them where unset ([`mma_pipelined_groups`]).
pub fn mma_grouped(layout: MmaLaunch) -> MmaLaunch {
    layout.with_groups(mma_pipelined_groups().unwrap_or(layout.groups))
}

/// The fewest token tiles of a pipelined small-row launch that starts in
/// stream order rather than as a programmatic dependent of the kernel
/// before it (`SPECULA_MMA_IN_ORDER`: 1, 2, 4 or 8, the default; `off`: none
/// does); read once. Every choice gives the same bits. On an H100 the
/// eight-tile launches (33-64 rows) made the 8B batch-64 step 15% slower
/// as dependents and 4% faster in order; in order from one tile the
/// batch-1 step was 1.5% slower (results/h200/b64-2026-12-05, calls 2-3).
pub fn mma_in_order_tiles() -> Option<usize> {
    static TILES: Switch<Option<usize>> = Switch::new(
        "SPECULA_MMA_IN_ORDER",
        &[
            ("1", Some(1)),
            ("2", Some(2)),
            ("4", Some(4)),
            ("8", Some(8)),
            ("off", None),
        ],
        Some(8),
        "8",
    );
    TILES.get()
}

/// Which weights take the eight-tile layout at 33-64 rows
/// (`SPECULA_MMA_EIGHT_TILES`), read once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EightTiles {
    /// `narrow` (the default): where [`MmaLaunch::eight_tiles`] takes them,
    /// the weights that were faster so alone.
    Narrow,
    /// `all`: every weight (gate|up, the LM head and qkv past 48 rows too).
    /// Their comparison in the step ran with the launch as a programmatic
    /// dependent (results/h200/tile8-2026-12-05), which cost every
    /// eight-tile launch ~22 us; in stream order it is unmeasured.
    All,
}

impl EightTiles {
    /// The eight-tile layout for `m` rows of a `[n, k]` weight under this
    /// rule, or `None` (33-64 rows only).
    pub fn layout(self, m: usize, k: usize, n: usize) -> Option<MmaLaunch> {
        match self {
            EightTiles::Narrow => MmaLaunch::eight_tiles(m, k, n),
            EightTiles::All if pipelined_tiles(m) == Some(8) => {
                MmaLaunch::pipelined_for(m, mma_k_parts(k, n))
            }
            EightTiles::All => None,
        }
    }
}

/// The eight-tile layout for `m` rows of a `[n, k]` weight under
/// `SPECULA_MMA_EIGHT_TILES` ([`EightTiles::layout`]). Every choice gives
/// the same bits.
pub fn mma_eight_tiles(m: usize, k: usize, n: usize) -> Option<MmaLaunch> {
    static RULE: Switch<EightTiles> = Switch::new(
        "SPECULA_MMA_EIGHT_TILES",
        &[("narrow", EightTiles::Narrow), ("all", EightTiles::All)],
        EightTiles::Narrow,
        "narrow",
    );
    RULE.get().layout(m, k, n)
}

#[cfg(test)]
mod tests {
    use super::EightTiles;

    #[test]
    fn every_weight_takes_eight_tiles_at_33_to_64_rows_only_when_asked() {
        // gate|up (wide) and qkv at 64 rows (k in two slices): not narrow.
        for (k, n) in [(4096, 28_672), (4096, 6144)] {
            assert!(EightTiles::Narrow.layout(64, k, n).is_none());
            let all = EightTiles::All.layout(64, k, n).expect("all weights");
            assert!(all.pipelined && all.compiled() && all.holds(64) && all.groups == 1);
        }
        assert_eq!(
            EightTiles::All.layout(64, 4096, 4096),
            EightTiles::Narrow.layout(64, 4096, 4096),
            "a narrow weight: the same layout either way"
        );
        for m in [32, 65] {
            assert!(
                EightTiles::All.layout(m, 4096, 28_672).is_none(),
                "{m} rows"
            );
        }
    }
}
