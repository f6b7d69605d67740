//! Batch-invariant CPU kernels (and CPU references for the CUDA kernels).

mod activation;
mod attention;
mod exp;
mod exp64;
mod expf;
mod linear;
mod norm;
mod rope;
mod select;
mod threads;
mod tree;

pub use activation::silu_and_mul;
pub use attention::{attention, AttentionShape, KeyList};
pub use exp::exp;
pub use expf::expf;
pub use linear::{
    bf16_to_f32, dot, dots, linear, linear_with, pair_bf16, products, products_with, unpair_bf16,
    DotKernel, Matrix, Product, PAIR_BLOCK,
};
pub use norm::{add_inplace, rms_norm};
pub use rope::{Llama3RopeScaling, Rope};
pub use select::{argmax, log_softmax, softmax_with_temperature, top_k};
pub use threads::{current_cpu_threads, default_cpu_threads, with_cpu_threads};
pub use tree::{compact_rows, greedy_tree_accept};
