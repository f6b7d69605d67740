//! A ragged forward batch: rows of several sequences, each row with its own
//! position, KV cache and list of visible cache entries (causal, tree or
//! prefix masks all reduce to that list).

/// The cache entries one row attends to: `0..prefix`, then `extra` in order
/// (the row's own entry is the last of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visible {
    /// Every entry below this index is visible.
    pub prefix: usize,
    /// Further visible entries (tree ancestors, then the row itself), ascending.
    pub extra: Vec<usize>,
}

/// One token of a forward batch.
#[derive(Debug, Clone)]
pub struct Row {
    /// Input token.
    pub token: u32,
    /// RoPE position.
    pub position: usize,
    /// Index of the sequence's KV cache in the slice passed to the forward.
    pub cache: usize,
    /// What it attends to.
    pub visible: Visible,
}

/// Rows of one forward call, plus which rows need logits.
#[derive(Debug, Clone, Default)]
pub struct ForwardBatch {
    /// The tokens, in the order their cache entries are appended.
    pub rows: Vec<Row>,
    /// Rows whose logits the caller wants, in output order.
    pub logit_rows: Vec<usize>,
}

impl ForwardBatch {
    /// Appends a causal run of `tokens` to `cache` (which holds `cache_len`
    /// entries before this forward, `pending` of them appended by earlier
    /// rows of this batch), at positions `first_position..`; with
    /// `want_last_logits` the last token's logits are requested.
    pub fn push_causal(
        &mut self,
        cache: usize,
        cache_len: usize,
        tokens: &[u32],
        first_position: usize,
        want_last_logits: bool,
    ) {
        for (i, &token) in tokens.iter().enumerate() {
            self.rows.push(Row {
                token,
                position: first_position + i,
                cache,
                visible: Visible {
                    prefix: cache_len + i + 1,
                    extra: Vec::new(),
                },
            });
        }
        if want_last_logits && !tokens.is_empty() {
            self.logit_rows.push(self.rows.len() - 1);
        }
    }

    /// Appends one tree token that sees the committed prefix `0..committed`
    /// and `ancestors_and_self` (absolute cache entries, ascending, ending
    /// with its own entry). Returns its row index.
    pub fn push_tree_node(
        &mut self,
        cache: usize,
        token: u32,
        position: usize,
        committed: usize,
        ancestors_and_self: Vec<usize>,
        want_logits: bool,
    ) -> usize {
        self.rows.push(Row {
            token,
            position,
            cache,
            visible: Visible {
                prefix: committed,
                extra: ancestors_and_self,
            },
        });
        let r = self.rows.len() - 1;
        if want_logits {
            self.logit_rows.push(r);
        }
        r
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}
