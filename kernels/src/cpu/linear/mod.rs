//! `y = x W^T (+ b)` with a fixed, row-independent reduction order.
//!
//! Every output element is one dot product in the canonical order of
//! [`canonical`] (docs/DESIGN.md, 6.4), computed by the fastest kernel this
//! machine has ([`DotKernel`], chosen once per process): AVX-512 or AVX2+FMA
//! on x86-64, NEON on aarch64, portable Rust elsewhere, all bit-identical.
//! Each weight row is read from memory once for every row of `x` (rows go
//! through it in blocks that share each weight load), bfloat16 weights stay
//! bfloat16 in memory and are widened in registers, and large products are
//! split over output columns across threads, which changes no element's
//! arithmetic. So a row's output is the same bits for any batch size, any
//! thread count and any kernel.

mod canonical;
#[cfg(target_arch = "aarch64")]
mod neon;
mod paired;
mod products;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_pairs;

pub use canonical::bf16_to_f32;
pub use paired::{pair_bf16, unpair_bf16, PAIR_BLOCK};
pub use products::{linear, linear_with, products, products_with, Product};

use products::OutPtr;
use std::sync::OnceLock;

/// A weight matrix `[n, k]` in the Hugging Face `[out_features, in_features]` layout.
#[derive(Debug, Clone, Copy)]
pub enum Matrix<'a> {
    /// f32 elements.
    F32(&'a [f32]),
    /// bfloat16 elements (the top half of an f32's bits), widened in registers.
    Bf16(&'a [u16]),
    /// bfloat16 elements in the paired layout of [`pair_bf16`] (rows of
    /// `k`, the product's input width): the bits of the plain matrix,
    /// widened with fewer instructions by the x86 kernels.
    Bf16Paired(&'a [u16]),
}

impl Matrix<'_> {
    /// Elements in the matrix.
    pub fn len(&self) -> usize {
        match self {
            Matrix::F32(w) => w.len(),
            Matrix::Bf16(w) | Matrix::Bf16Paired(w) => w.len(),
        }
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An implementation of the canonical dot product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotKernel {
    /// Portable Rust (`f32::mul_add`).
    Portable,
    /// x86-64 AVX2 with FMA.
    Avx2,
    /// x86-64 AVX-512F.
    Avx512,
    /// aarch64 NEON.
    Neon,
}

impl DotKernel {
    /// Every kernel, fastest last.
    pub const ALL: [DotKernel; 4] = [
        DotKernel::Portable,
        DotKernel::Neon,
        DotKernel::Avx2,
        DotKernel::Avx512,
    ];

    /// The kernel's name (`portable`, `avx2`, `avx512`, `neon`).
    pub fn name(self) -> &'static str {
        match self {
            DotKernel::Portable => "portable",
            DotKernel::Avx2 => "avx2",
            DotKernel::Avx512 => "avx512",
            DotKernel::Neon => "neon",
        }
    }

    /// Whether this machine can run it.
    pub fn available(self) -> bool {
        match self {
            DotKernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            DotKernel::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            DotKernel::Avx512 => {
                DotKernel::Avx2.available() && std::arch::is_x86_feature_detected!("avx512f")
            }
            #[cfg(target_arch = "aarch64")]
            DotKernel::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The fastest kernel this machine runs; `SPECULA_CPU_KERNEL` (a kernel
    /// name) picks a slower one, for comparisons. Chosen once per process.
    pub fn current() -> DotKernel {
        static KERNEL: OnceLock<DotKernel> = OnceLock::new();
        *KERNEL.get_or_init(|| {
            let wanted = std::env::var("SPECULA_CPU_KERNEL").ok();
            let by_name = DotKernel::ALL
                .into_iter()
                .find(|k| Some(k.name()) == wanted.as_deref() && k.available());
            by_name.unwrap_or_else(|| {
                DotKernel::ALL
                    .into_iter()
                    .rev()
                    .find(|k| k.available())
                    .unwrap_or(DotKernel::Portable)
            })
        })
    }
}

/// The dot products of the `R` rows `xs` with the `C` weight rows `cols` of
/// `w` (each `k` long), by `kernel` (which must be available); with `ahead
/// > 0` the weight rows that many elements on are prefetched meanwhile.
fn block<const R: usize, const C: usize>(
    kernel: DotKernel,
    xs: [&[f32]; R],
    w: Matrix<'_>,
    k: usize,
    cols: [usize; C],
    ahead: usize,
) -> [[f32; C]; R] {
    match w {
        Matrix::F32(w) => slices_f32(kernel, xs, cols.map(|j| &w[j * k..(j + 1) * k]), ahead),
        Matrix::Bf16(w) => slices_bf16(kernel, xs, cols.map(|j| &w[j * k..(j + 1) * k]), ahead),
        Matrix::Bf16Paired(w) => {
            slices_bf16_paired(kernel, xs, cols.map(|j| &w[j * k..(j + 1) * k]), ahead)
        }
    }
}

/// `out[r][c] = xs[r] . ws[c]` for paired bfloat16 rows `ws` (all `k`
/// long) by `kernel` (which must be available); kernels without a paired
/// loop run the portable one.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn slices_bf16_paired<const R: usize, const C: usize>(
    kernel: DotKernel,
    xs: [&[f32]; R],
    ws: [&[u16]; C],
    ahead: usize,
) -> [[f32; C]; R] {
    let k = xs.first().map_or(0, |x| x.len());
    assert!(
        xs.iter().all(|x| x.len() == k) && ws.iter().all(|w| w.len() == k),
        "dot: lengths differ"
    );
    match kernel {
        // SAFETY: `kernel` is available, so the CPU has the instructions
        // the function is compiled for; every slice is `k` long.
        #[cfg(target_arch = "x86_64")]
        DotKernel::Avx2 => unsafe { x86::block_avx2_bf16_paired(xs, ws, ahead) },
        #[cfg(target_arch = "x86_64")]
        DotKernel::Avx512 => unsafe { x86::block_avx512_bf16_paired(xs, ws, ahead) },
        _ => xs.map(|x| ws.map(|w| paired::dot_bf16_paired(x, w))),
    }
}

macro_rules! slices {
    ($name:ident, $t:ty, $portable:path, $avx2:ident, $avx512:ident, $neon:ident) => {
        /// `out[r][c] = xs[r] . ws[c]` (all `k` long) by `kernel` (which
        /// must be available); with `ahead > 0` the memory `ahead` elements
        /// past each of `ws` is prefetched meanwhile.
        fn $name<const R: usize, const C: usize>(
            kernel: DotKernel,
            xs: [&[f32]; R],
            ws: [&[$t]; C],
            ahead: usize,
        ) -> [[f32; C]; R] {
            let k = xs.first().map_or(0, |x| x.len());
            assert!(
                xs.iter().all(|x| x.len() == k) && ws.iter().all(|w| w.len() == k),
                "dot: lengths differ"
            );
            match kernel {
                // SAFETY: `kernel` is available, so the CPU has the
                // instructions the function is compiled for; every slice is
                // `k` long.
                #[cfg(target_arch = "x86_64")]
                DotKernel::Avx2 => unsafe { x86::$avx2(xs, ws, ahead) },
                #[cfg(target_arch = "x86_64")]
                DotKernel::Avx512 => unsafe { x86::$avx512(xs, ws, ahead) },
                #[cfg(target_arch = "aarch64")]
                DotKernel::Neon => unsafe { neon::$neon(xs, ws, ahead) },
                _ => xs.map(|x| ws.map(|w| $portable(x, w))),
            }
        }
    };
}

slices!(
    slices_f32,
    f32,
    canonical::dot_f32,
    block_avx2_f32,
    block_avx512_f32,
    block_f32
);
slices!(
    slices_bf16,
    u16,
    canonical::dot_bf16,
    block_avx2_bf16,
    block_avx512_bf16,
    block_bf16
);

/// `out[r][c] = xs[r] . ws[c]` for `R` rows and `C` other slices, all one
/// length, in the canonical order by this machine's kernel: each element
/// the same bits as [`dot`] of its pair, computed together so that every
/// load feeds several (the attention's query heads against keys).
#[inline]
pub fn dots<const R: usize, const C: usize>(xs: [&[f32]; R], ws: [&[f32]; C]) -> [[f32; C]; R] {
    slices_f32(DotKernel::current(), xs, ws, 0)
}

/// Output columns `j0..j1` of `x W^T + bias` for all `m` rows, written into
/// `out` (`[m, n]`): blocks of `C` columns times `R` rows, the widest the
/// kernel has registers for, then narrower ones for what is left. Every
/// element is the same canonical dot product whatever block computes it.
#[allow(clippy::too_many_arguments)]
fn columns(
    kernel: DotKernel,
    x: &[f32],
    m: usize,
    k: usize,
    w: Matrix<'_>,
    n: usize,
    bias: Option<&[f32]>,
    out: OutPtr,
    (j0, j1): (usize, usize),
) {
    let row = |i: usize| &x[i * k..(i + 1) * k];
    let put = |i: usize, j: usize, v: f32| {
        // SAFETY: element (i, j) lies in `out` ([m, n]); column `j` belongs
        // to this call alone, so no other thread writes it.
        unsafe { out.write(i * n + j, v + bias.map_or(0.0, |b| b[j])) }
    };
    // Every weight load feeds `R` rows of x, every accumulator stays in a
    // register, and a block's dot products finish eight at a time: (1, 8)
    // for a decode row, (4, 2) for more rows with AVX2's sixteen registers,
    // (6, 4) with AVX-512's thirty-two ((6, 3) for paired weights). A block's weight rows are read from
    // memory once; the next row blocks over the same columns find them in L1.
    macro_rules! rows_of {
        ($c:literal, $j:expr, $($r:literal)+) => {{
            let cols: [usize; $c] = std::array::from_fn(|c| $j + c);
            let mut i = 0;
            $(
                while m - i >= $r {
                    let xs: [&[f32]; $r] = std::array::from_fn(|r| row(i + r));
                    // The next block of columns follows these in memory.
                    let v = block::<$r, $c>(kernel, xs, w, k, cols, $c * k);
                    for (r, vr) in v.iter().enumerate() {
                        for (c, &x) in vr.iter().enumerate() {
                            put(i + r, cols[c], x);
                        }
                    }
                    i += $r;
                }
            )+
        }};
    }
    #[cfg(target_arch = "x86_64")]
    if kernel == DotKernel::Avx512
        && (m == 2 || m == 4 || m >= 6)
        && !matches!(w, Matrix::Bf16Paired(_))
        && x86_pairs::available()
    {
        // Two rows per 512-bit register: measured on the 2-core AVX-512
        // Xeon of issue 19 (one thread, bfloat16 weights of tiny-llama's
        // shapes), 4 and 6 rows 9-18% faster than the 256-bit blocks; 3
        // rows no faster (they keep the 256-bit blocks), 5 (4 + 1) slower.
        // 2 rows (greedy verification's head rounds, engine/src/generate/
        // head.rs) no faster there, 22% faster on the 2-core Zen 5 VM
        // (tiny-llama's head, 8192 x 256, 2 threads: 100 us against 130).
        return x86_pairs::columns(x, m, k, w, n, bias, out, (j0, j1));
    }
    let mut j = j0;
    if m == 1 {
        while j + 8 <= j1 {
            rows_of!(8, j, 1);
            j += 8;
        }
    } else if kernel == DotKernel::Avx512 && matches!(w, Matrix::Bf16Paired(_)) {
        // A paired block's two halves need registers a plain one's do not:
        // (6, 4) spills its accumulators, (6, 3) does not.
        while j + 3 <= j1 {
            rows_of!(3, j, 6 5 4 3 2 1);
            j += 3;
        }
    } else if kernel == DotKernel::Avx512 {
        while j + 4 <= j1 {
            rows_of!(4, j, 6 5 4 3 2 1);
            j += 4;
        }
    } else {
        while j + 2 <= j1 {
            rows_of!(2, j, 4 3 2 1);
            j += 2;
        }
    }
    while j < j1 {
        rows_of!(1, j, 6 5 4 3 2 1);
        j += 1;
    }
}

/// `a . b` in the canonical order (the attention's and RMSNorm's dot too).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dots([a], [b])[0][0]
}
