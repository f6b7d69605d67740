//! The products' entry points and their split over threads: each thread
//! computes whole output columns, so the split changes no
//! element's arithmetic.

use super::{columns, DotKernel, Matrix};
use rayon::prelude::*;

/// Work (multiply-adds) below which [`linear`] stays on one thread. In a
/// pool the caller works in ([`crate::cpu::with_cpu_threads`]) a split costs a
/// few microseconds; measured on models/tiny-llama (2 cores), splitting
/// from 64k multiply-adds up (a 256 x 256 decode projection) beats 512k
/// (decode 1.4-1.9x faster: two cores draw more memory bandwidth than one).
const PARALLEL_MIN_WORK: usize = 1 << 16;
/// Output columns handed to one thread at a time.
const COLUMNS_PER_TASK: usize = 64;

/// [`linear`] with an explicit kernel (which must be available), for
/// comparing kernels; `linear` itself uses [`DotKernel::current`].
#[allow(clippy::too_many_arguments)]
pub fn linear_with(
    kernel: DotKernel,
    x: &[f32],
    m: usize,
    k: usize,
    w: Matrix<'_>,
    n: usize,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    let product = Product { w, n, bias, out };
    products_with(kernel, x, m, k, &mut [product]);
}

/// One product of [`products`]: `out = x W^T + bias` for a weight matrix
/// `w` (`[n, k]`), its bias (`[n]`) and its output (`[m, n]`).
#[derive(Debug)]
pub struct Product<'a> {
    /// The weights.
    pub w: Matrix<'a>,
    /// Output columns.
    pub n: usize,
    /// Added to every row.
    pub bias: Option<&'a [f32]>,
    /// Where the `[m, n]` result goes.
    pub out: &'a mut [f32],
}

/// [`products`] with an explicit kernel (which must be available).
pub fn products_with(
    kernel: DotKernel,
    x: &[f32],
    m: usize,
    k: usize,
    products: &mut [Product<'_>],
) {
    assert!(
        kernel.available(),
        "linear: the {} kernel does not run here",
        kernel.name()
    );
    assert_eq!(x.len(), m * k, "linear: x is not [m, k]");
    for p in products.iter() {
        assert_eq!(p.w.len(), p.n * k, "linear: w is not [n, k]");
        assert_eq!(p.out.len(), m * p.n, "linear: out is not [m, n]");
        if let Some(b) = p.bias {
            assert_eq!(b.len(), p.n, "linear: bias is not [n]");
        }
    }
    // What a thread needs of each product (shared, read-only but for the
    // disjoint columns each task writes).
    let shared: Vec<(Matrix<'_>, usize, Option<&[f32]>, OutPtr)> = products
        .iter_mut()
        .map(|p| (p.w, p.n, p.bias, OutPtr(p.out.as_mut_ptr())))
        .collect();
    let part = |p: usize, range: (usize, usize)| {
        let (w, n, bias, out) = shared[p];
        columns(kernel, x, m, k, w, n, bias, out, range)
    };
    let work: usize = shared.iter().map(|s| m * s.1 * k).sum();
    let tasks: usize = shared.iter().map(|s| s.1.div_ceil(COLUMNS_PER_TASK)).sum();
    if work < PARALLEL_MIN_WORK || tasks < 2 {
        for (p, s) in shared.iter().enumerate() {
            part(p, (0, s.1));
        }
        return;
    }
    // Task t: the t-th block of COLUMNS_PER_TASK columns, counting through
    // the products in order.
    (0..tasks).into_par_iter().for_each(|mut t| {
        for (p, s) in shared.iter().enumerate() {
            let here = s.1.div_ceil(COLUMNS_PER_TASK);
            if t < here {
                let j0 = t * COLUMNS_PER_TASK;
                part(p, (j0, (j0 + COLUMNS_PER_TASK).min(s.1)));
                return;
            }
            t -= here;
        }
    });
}

/// Several products of one input `x: [m, k]` (a layer's q, k and v
/// projections; gate and up), in one split over threads: their column
/// blocks are shared out together, so small ones (a 64-column k
/// projection) run beside the others instead of alone. Every element is
/// what [`linear`] gives.
pub fn products(x: &[f32], m: usize, k: usize, products: &mut [Product<'_>]) {
    products_with(DotKernel::current(), x, m, k, products);
}

/// `out[i, j] = x[i, :] . w[j, :] + bias[j]` for `x: [m, k]`, `w: [n, k]`,
/// `out: [m, n]`, with this machine's kernel; row `i` of the output is the
/// same bits for any `m`.
pub fn linear(
    x: &[f32],
    m: usize,
    k: usize,
    w: Matrix<'_>,
    n: usize,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    linear_with(DotKernel::current(), x, m, k, w, n, bias, out);
}

/// The output of [`linear_with`], shared by the threads that each write
/// their own columns of it.
#[derive(Clone, Copy)]
pub(super) struct OutPtr(*mut f32);

// SAFETY: the threads write disjoint elements (their own columns) of one
// buffer that outlives them (rayon's `for_each` returns when all are done).
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// Writes element `at`.
    ///
    /// # Safety
    /// `at` must be inside the buffer, and no other thread may touch it.
    pub(super) unsafe fn write(self, at: usize, v: f32) {
        *self.0.add(at) = v;
    }
}
