//! Which attention kernel runs each row of a batch, worked out on the host:
//! causal rows (a plain prefix, no extra entries: prefill and draft
//! extends) go to the flash prefill kernel in tiles of up to
//! [`PREFILL_TILE_ROWS`] consecutive rows of one sequence; tree rows (extra
//! entries: decode and verification) go to the tree kernel in groups of up
//! to [`TREE_GROUP_ROWS`] consecutive rows of one sequence with the same
//! prefix, whose shared splits are read once for the whole group.

/// Rows of one flash prefill tile (four warps of 16).
pub const PREFILL_TILE_ROWS: usize = 64;

/// Rows of one tree-attention group (the kernel's `TREE_GROUP_MAX`).
pub const TREE_GROUP_ROWS: usize = 64;

/// One row as the plan sees it: its sequence's pool offset, visible prefix
/// and number of extra entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanRow {
    /// Pool offset of the row's sequence.
    pub base: usize,
    /// Visible prefix length.
    pub prefix: usize,
    /// Extra (tree) entries.
    pub extra: usize,
}

/// The batch's prefill tiles and tree groups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttentionPlan {
    /// `(first row, rows)` per prefill tile, flattened.
    pub tiles: Vec<i32>,
    /// `(first row, rows, common prefix)` per tree group, flattened.
    pub groups: Vec<i32>,
    /// Rows with no extra entries.
    pub causal_rows: usize,
    /// Rows with extra entries.
    pub tree_rows: usize,
    /// The longest key list of a tree row (0: none).
    pub max_tree_keys: usize,
}

impl AttentionPlan {
    /// The plan of `rows`, in batch order.
    pub fn new(rows: impl IntoIterator<Item = PlanRow>) -> AttentionPlan {
        let mut p = AttentionPlan::default();
        let mut prev: Option<PlanRow> = None;
        for r in rows {
            if r.extra == 0 {
                p.causal_rows += 1;
                let n = p.tiles.len();
                let joins = n > 0
                    && prev.is_some_and(|q| {
                        q.extra == 0 && q.base == r.base && q.prefix + 1 == r.prefix
                    })
                    && (p.tiles[n - 1] as usize) < PREFILL_TILE_ROWS;
                if joins {
                    p.tiles[n - 1] += 1;
                } else {
                    p.tiles
                        .extend([(p.causal_rows + p.tree_rows - 1) as i32, 1]);
                }
            } else {
                p.tree_rows += 1;
                p.max_tree_keys = p.max_tree_keys.max(r.prefix + r.extra);
                let n = p.groups.len();
                let joins = n > 0
                    && prev
                        .is_some_and(|q| q.extra > 0 && q.base == r.base && q.prefix == r.prefix)
                    && (p.groups[n - 2] as usize) < TREE_GROUP_ROWS;
                if joins {
                    p.groups[n - 2] += 1;
                } else {
                    let row = (p.causal_rows + p.tree_rows - 1) as i32;
                    p.groups.extend([row, 1, r.prefix as i32]);
                }
            }
            prev = Some(r);
        }
        p
    }

    /// Prefill tiles in the plan.
    pub fn n_tiles(&self) -> usize {
        self.tiles.len() / 2
    }

    /// Tree groups in the plan.
    pub fn n_groups(&self) -> usize {
        self.groups.len() / 3
    }

    /// The tile list padded with empty tiles to `cap` tiles.
    pub fn tiles_padded(&self, cap: usize) -> Vec<i32> {
        let mut t = self.tiles.clone();
        t.resize(2 * cap.max(1), 0);
        t
    }

    /// The group list padded with empty groups to `cap` groups.
    pub fn groups_padded(&self, cap: usize) -> Vec<i32> {
        let mut g = self.groups.clone();
        g.resize(3 * cap.max(1), 0);
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(base: usize, prefix: usize, extra: usize) -> PlanRow {
        PlanRow {
            base,
            prefix,
            extra,
        }
    }

    #[test]
    fn causal_runs_become_tiles_and_tree_rows_groups() {
        let mut rows: Vec<PlanRow> = (1..=70).map(|p| row(0, p, 0)).collect();
        rows.push(row(100, 5, 0)); // another sequence
        rows.extend((0..3).map(|i| row(200, 40, i + 1))); // a verify tree
        rows.push(row(300, 40, 1)); // another sequence's decode row
        rows.push(row(300, 41, 1)); // same base, other prefix
        let p = AttentionPlan::new(rows);
        assert_eq!(p.tiles, vec![0, 64, 64, 6, 70, 1]);
        assert_eq!(p.groups, vec![71, 3, 40, 74, 1, 40, 75, 1, 41]);
        assert_eq!((p.causal_rows, p.tree_rows, p.max_tree_keys), (71, 5, 43));
        assert_eq!(p.tiles_padded(4).len(), 8);
        assert_eq!(p.groups_padded(5)[9..], [0; 6]);
    }

    #[test]
    fn groups_stop_at_the_group_size() {
        let p = AttentionPlan::new((0..130).map(|_| row(0, 10, 2)));
        assert_eq!(p.groups, vec![0, 64, 10, 64, 64, 10, 128, 2, 10]);
    }
}
