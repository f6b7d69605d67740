//! The target model and the EAGLE-3 draft on the CPU, over ragged batches.

mod batch;
pub(crate) mod blocks;
mod draft;
mod layer;
mod mla;
mod moe;
mod router;
mod target;

pub use batch::{ForwardBatch, Row, Visible};
pub use draft::{DraftOutput, Eagle3Draft, HiddenInput};
pub use router::{route, Route};
pub use target::{TargetModel, TargetOutput};
