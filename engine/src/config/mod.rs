//! Model configs read from Hugging Face `config.json` files.

mod bounds;
mod draft;
mod family;
mod json;
mod mla;
mod moe;
mod target;
mod wrapper;

pub use bounds::{MAX_LAYERS, MAX_WIDTH};
pub use draft::{default_draft_config, DraftConfig, DraftKind, EAGLE3_ARCHITECTURE};
pub use json::read_json;
pub use mla::{MlaConfig, LATENT_NORM_EPS};
pub use moe::{GroupScore, Grouping, MoeConfig, Scoring};
pub use target::{Family, RopeScaling, TargetConfig};
pub use wrapper::Wrapped;
