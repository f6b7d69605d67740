//! The draft tree handed to verification.

use std::sync::Arc;

/// How a draft node was proposed, which the sampling verifier needs.
#[derive(Debug, Clone)]
pub enum Proposal {
    /// Chosen deterministically (top-k): a point mass on the token.
    PointMass,
    /// Sampled from this distribution over the target vocabulary.
    Sampled(Arc<Vec<f32>>),
}

/// One drafted token.
#[derive(Debug, Clone)]
pub struct DraftNode {
    /// Target token id.
    pub token: u32,
    /// Parent node index; `None` for a child of the root.
    pub parent: Option<usize>,
    /// Depth below the root (1 for the root's children).
    pub depth: usize,
    /// How it was proposed.
    pub proposal: Proposal,
}

/// Draft tokens below a root (the last emitted token). Nodes are ordered so
/// that a parent precedes its children, and siblings in preference order.
#[derive(Debug, Clone, Default)]
pub struct DraftTree {
    /// The nodes.
    pub nodes: Vec<DraftNode>,
}

impl DraftTree {
    /// Node indices whose parent is `parent` (`None`: the root), in order.
    pub fn children(&self, parent: Option<usize>) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.parent == parent)
            .map(|(i, _)| i)
    }

    /// Ancestors of node `i`, root side first, `i` itself last.
    pub fn path_to(&self, i: usize) -> Vec<usize> {
        let mut path = vec![i];
        let mut cur = self.nodes[i].parent;
        while let Some(p) = cur {
            path.push(p);
            cur = self.nodes[p].parent;
        }
        path.reverse();
        path
    }

    /// Deepest node depth (0 for an empty tree).
    pub fn depth(&self) -> usize {
        self.nodes.iter().map(|n| n.depth).max().unwrap_or(0)
    }

    /// Number of draft nodes (the root excluded).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree has no draft node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}
