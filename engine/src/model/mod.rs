//! The target model and the EAGLE drafts (EAGLE-3 and EAGLE-1/2) on the
//! CPU, over ragged batches.

mod batch;
pub(crate) mod blocks;
mod draft;
pub(crate) mod draft_layout;
mod draft_model;
mod eagle_draft;
pub(crate) mod layer;
pub(crate) mod mla;
pub(crate) mod moe;
mod router;
mod target;

pub use batch::{ForwardBatch, Row, Visible};
pub use draft::{DraftOutput, Eagle3Draft, HiddenInput};
pub use draft_model::{draft_config, DraftModel};
pub use eagle_draft::EagleDraft;
pub use router::{route, Route};
pub use target::{TargetModel, TargetOutput};
