//! The forms of the latent attention's tail the engine picks by switch:
//! where `W_UV` runs, how a head's splits merge, and how many outputs a
//! warp of the per-head products sums. Every form gives the same bits.

use super::mla::mla_head_dots;
use crate::switch::Switch;

/// Splits of a (row, head) one cluster of the latent attention may hold
/// (the portable cluster size; `MLA_CLUSTER_SPLITS` in `mla_split.cu`).
pub const MLA_CLUSTER_SPLITS: usize = 8;

/// Where `W_UV` runs after the latent attention (the engine's choice:
/// [`mla_uv_place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MlaUvPlace {
    /// Its own launch (`mla_head_linear`; `SPECULA_MLA_UV=apart`).
    Apart,
    /// In the attention's merging blocks where the launch has one head a
    /// block (`mla_attention_h1_uv`; the default): one launch fewer a layer,
    /// the same bits.
    InMerge,
}

/// Where this process runs `W_UV` (`SPECULA_MLA_UV`, read once).
pub fn mla_uv_place() -> MlaUvPlace {
    static PLACE: Switch<MlaUvPlace> = Switch::new(
        "SPECULA_MLA_UV",
        &[("apart", MlaUvPlace::Apart), ("merge", MlaUvPlace::InMerge)],
        MlaUvPlace::InMerge,
        "in the merge",
    );
    PLACE.get()
}

/// How the FMA latent attention merges a (row, head)'s splits (the
/// engine's choice: [`mla_merge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MlaMerge {
    /// Each split writes its partials to the scratch and the last block to
    /// count itself in merges them (`SPECULA_MLA_MERGE=last`).
    LastBlock,
    /// Where the launch has one head a block and a row at most
    /// [`MLA_CLUSTER_SPLITS`] splits: the splits are one thread-block
    /// cluster and merge through distributed shared memory, each block its
    /// share of the outputs (`mla_attention_h1c`; `SPECULA_MLA_MERGE=cluster`):
    /// no partials through global memory, no counter, the same bits.
    Cluster,
    /// [`MlaMerge::Cluster`] where the launch holds one row, else the last
    /// block (the default): the clusters measured faster at one row and
    /// slower at 6 and 8 (results/h200/step-2026-12-06, call 14).
    ClusterAtOneRow,
}

/// How this process merges the latent attention's splits
/// (`SPECULA_MLA_MERGE`, read once).
pub fn mla_merge() -> MlaMerge {
    static MERGE: Switch<MlaMerge> = Switch::new(
        "SPECULA_MLA_MERGE",
        &[
            ("last", MlaMerge::LastBlock),
            ("cluster", MlaMerge::Cluster),
            ("one-row", MlaMerge::ClusterAtOneRow),
        ],
        MlaMerge::ClusterAtOneRow,
        "clusters at one row, else the last block",
    );
    MERGE.get()
}

/// The latent attention's tail as one forward runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MlaAttentionForms {
    /// Where `W_UV` runs.
    pub uv: MlaUvPlace,
    /// How the splits merge.
    pub merge: MlaMerge,
    /// Outputs a warp of the per-head products (`W_UK`, and `W_UV` in its
    /// own launch or in the merge).
    pub dots: usize,
}

impl MlaAttentionForms {
    /// The first forms, which the checks compare the others with: `W_UV`
    /// apart, the last block merging, one output a warp.
    pub const PLAIN: MlaAttentionForms = MlaAttentionForms {
        uv: MlaUvPlace::Apart,
        merge: MlaMerge::LastBlock,
        dots: 1,
    };

    /// This process's forms (`SPECULA_MLA_UV`, `SPECULA_MLA_MERGE`,
    /// `SPECULA_MLA_DOTS`). Unset, `W_UV` in the merge, clusters at one row
    /// and four outputs a warp (results/h200/step-2026-12-06, call 14:
    /// V2-Lite 1.7% faster at batch 1, 1.5% at batch 8, 3.3% at 32 than
    /// [`MlaAttentionForms::PLAIN`]).
    pub fn from_env() -> MlaAttentionForms {
        MlaAttentionForms {
            uv: mla_uv_place(),
            merge: mla_merge(),
            dots: mla_head_dots(),
        }
    }
}

/// Whether `W_UV` can run in the merging blocks of a latent attention of
/// `rows` rows: one launch (`launch_rows`, the scratch's) of one head a block
/// (`per_block`), the latent (`lora` values of `elem_bytes`) whole 16-byte
/// slices as `mla_head_linear` reads it, so that its sums are that launch's.
pub(super) fn uv_fits_merge(
    rows: usize,
    launch_rows: usize,
    per_block: usize,
    lora: usize,
    elem_bytes: usize,
) -> bool {
    rows > 0 && rows <= launch_rows && per_block == 1 && lora.is_multiple_of(16 / elem_bytes)
}

/// Whether a launch of `rows` rows, `per_block` heads a block and `splits`
/// splits a row merges them in clusters under `merge`.
pub(super) fn merges_in_clusters(
    merge: MlaMerge,
    rows: usize,
    per_block: usize,
    splits: usize,
) -> bool {
    let asked = match merge {
        MlaMerge::LastBlock => false,
        MlaMerge::Cluster => true,
        MlaMerge::ClusterAtOneRow => rows == 1,
    };
    asked && per_block == 1 && (1..=MLA_CLUSTER_SPLITS).contains(&splits)
}

/// The launches of a latent attention whose rows of at least `mma_from`
/// keys take tensor cores (`None`: no row) and whose longest key list has
/// `longest` keys: `(FMA, tensor cores)`. The FMA launch runs unless every
/// row takes tensor cores; the tensor-core launch where some row reaches the
/// cut. And the cut as the kernels read it (`i32::MAX`: no row).
pub(super) fn row_forms(mma_from: Option<usize>, longest: usize) -> (bool, bool, i32) {
    let cut = mma_from.map_or(i32::MAX, |from| from.min(i32::MAX as usize) as i32);
    (
        mma_from != Some(0),
        mma_from.is_some_and(|from| longest >= from),
        cut,
    )
}

#[cfg(test)]
mod tests {
    use super::{merges_in_clusters, row_forms, uv_fits_merge, MlaMerge};

    #[test]
    fn a_row_takes_tensor_cores_from_the_cut_and_short_batches_launch_fma_alone() {
        // A prefill forward: every row on tensor cores, one launch.
        assert_eq!(row_forms(Some(0), 0), (false, true, 0));
        assert_eq!(row_forms(Some(0), 8192), (false, true, 0));
        // No tensor cores (f32, SPECULA_MLA=fma): FMA alone, no row past the cut.
        assert_eq!(row_forms(None, 8192), (true, false, i32::MAX));
        // Decode and verify at the cut of 512: FMA alone below it, both from it.
        assert_eq!(row_forms(Some(512), 511), (true, false, 512));
        assert_eq!(row_forms(Some(512), 512), (true, true, 512));
        // A cut past what the kernels' int holds: no row reaches it there either.
        assert_eq!(row_forms(Some(usize::MAX), 1 << 20).2, i32::MAX);
    }

    #[test]
    fn w_uv_runs_in_the_merge_only_for_one_launch_of_one_head_blocks_over_whole_slices() {
        // V2-Lite's latent (512) at batch 1 in bf16 and f32.
        assert!(uv_fits_merge(1, 1024, 1, 512, 2));
        assert!(uv_fits_merge(1, 1024, 1, 512, 4));
        // Four heads a block, or rows past one launch: its own launch.
        assert!(!uv_fits_merge(48, 1024, 4, 512, 2));
        assert!(!uv_fits_merge(9, 8, 1, 512, 2));
        assert!(!uv_fits_merge(0, 8, 1, 512, 2));
        // A latent of 13 values: not 16-byte slices (mla_head_linear's other order).
        assert!(!uv_fits_merge(1, 8, 1, 13, 2));
        assert!(uv_fits_merge(1, 8, 1, 8, 2) && !uv_fits_merge(1, 8, 1, 8 + 2, 4));
    }

    #[test]
    fn splits_merge_in_clusters_only_when_asked_for_one_head_blocks_of_a_cluster_or_fewer() {
        // V2-Lite at batch 1, prompt 128: 160 keys in bf16 chunks of 32, 5 splits.
        assert!(merges_in_clusters(MlaMerge::Cluster, 1, 1, 5));
        assert!(merges_in_clusters(MlaMerge::Cluster, 8, 1, 1));
        assert!(merges_in_clusters(MlaMerge::Cluster, 6, 1, 8));
        assert!(!merges_in_clusters(MlaMerge::LastBlock, 1, 1, 5));
        // A long prompt (more splits than a cluster holds), four heads a block.
        assert!(!merges_in_clusters(MlaMerge::Cluster, 1, 1, 9));
        assert!(!merges_in_clusters(MlaMerge::Cluster, 1, 4, 5));
    }

    #[test]
    fn the_default_merge_takes_clusters_only_for_a_launch_of_one_row() {
        // A decode row alone: clusters; a 6-token verify or batch 8: the last block.
        assert!(merges_in_clusters(MlaMerge::ClusterAtOneRow, 1, 1, 5));
        assert!(!merges_in_clusters(MlaMerge::ClusterAtOneRow, 6, 1, 5));
        assert!(!merges_in_clusters(MlaMerge::ClusterAtOneRow, 8, 1, 2));
        assert!(!merges_in_clusters(MlaMerge::ClusterAtOneRow, 1, 1, 9));
    }
}
