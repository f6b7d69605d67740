//! Model configs read from Hugging Face `config.json` files.

mod bounds;
mod draft;
mod json;
mod target;

pub use bounds::{MAX_LAYERS, MAX_WIDTH};
pub use draft::{default_draft_config, DraftConfig, EAGLE3_ARCHITECTURE};
pub use json::read_json;
pub use target::{Family, RopeScaling, TargetConfig};
