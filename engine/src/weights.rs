//! A weight matrix as the CPU engine keeps it: f32, or bfloat16 as stored
//! (half the memory and half the bytes a decode step reads; the kernels
//! widen it in registers, which is exact).

use specula_kernels::cpu::{bf16_to_f32, Matrix};
use std::borrow::Cow;

/// A weight matrix's elements.
#[derive(Debug, Clone)]
pub enum Weights {
    /// f32 elements.
    F32(Vec<f32>),
    /// bfloat16 bit patterns.
    Bf16(Vec<u16>),
}

impl Weights {
    /// The matrix as the kernels take it.
    pub fn matrix(&self) -> Matrix<'_> {
        match self {
            Weights::F32(w) => Matrix::F32(w),
            Weights::Bf16(w) => Matrix::Bf16(w),
        }
    }

    /// The elements as f32 (borrowed when they are f32 already).
    pub fn to_f32(&self) -> Cow<'_, [f32]> {
        match self {
            Weights::F32(w) => Cow::Borrowed(w),
            Weights::Bf16(w) => Cow::Owned(w.iter().map(|&b| bf16_to_f32(b)).collect()),
        }
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.matrix().len()
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes in memory.
    pub fn bytes(&self) -> usize {
        match self {
            Weights::F32(w) => 4 * w.len(),
            Weights::Bf16(w) => 2 * w.len(),
        }
    }
}
