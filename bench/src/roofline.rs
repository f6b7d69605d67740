//! What this CPU can do at best, measured: the clock, the AVX-512
//! multiply-add rate on f32 in registers and with bfloat16 weights widened
//! from L1 (the linear kernels' inner loops), and the read bandwidth of a
//! buffer that lives in L2 or L3. `cargo bench -p specula-bench --bench
//! roofline` prints them beside the floors they put under tiny-llama's
//! forwards (DESIGN 6.4).
//!
//! Every loop here is x86-64 AVX-512 code; on other machines (or without
//! AVX-512) the functions return `None`.

use std::time::Instant;

/// Multiply-adds per second (counting each of a vector's f32 lanes), or
/// bytes per second, of the best of `tries` timings of `f`, which does
/// `per_call` of them per call.
fn best_rate(tries: usize, per_call: f64, mut f: impl FnMut()) -> f64 {
    f();
    let mut best = f64::INFINITY;
    for _ in 0..tries {
        let start = Instant::now();
        f();
        best = best.min(start.elapsed().as_secs_f64());
    }
    per_call / best
}

/// The core clock in GHz: a chain of dependent integer adds runs one per
/// cycle.
pub fn core_ghz() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        const ROUNDS: u64 = 20_000_000;
        let adds = (ROUNDS * 16) as f64;
        Some(best_rate(5, adds, || unsafe { x86::add_chain(ROUNDS) }) / 1e9)
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// f32 multiply-adds per second of one core from registers: twelve
/// independent 512-bit accumulator chains (enough to cover the FMA
/// latency on both pipes).
pub fn fma_f32_peak() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if x86::avx512() {
        const ROUNDS: usize = 2_000_000;
        let fmas = (ROUNDS * 12 * 16) as f64;
        return Some(best_rate(5, fmas, || unsafe {
            std::hint::black_box(x86::fma_chains(ROUNDS));
        }));
    }
    None
}

/// The shape of a widened-bfloat16 inner loop ([`fma_bf16_widened`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Widened {
    /// The one-row (decode) kernel's: eight bfloat16 weights zero-extended
    /// and shifted into a 256-bit register, one 256-bit multiply-add, eight
    /// weight rows at once.
    OneRow256,
    /// The same with 512-bit registers: sixteen weights (two groups of
    /// eight) widened at once, one 512-bit multiply-add.
    OneRow512,
    /// The multi-row kernel's (`x86_pairs`): eight weights widened into
    /// both halves of a 512-bit register, multiplied into three registers
    /// of two rows each (six rows), four weight rows at once.
    SixRows512,
}

/// f32 multiply-adds per second of one core with bfloat16 weights read
/// from a 16 KB buffer (in L1) and widened in registers, in `shape`.
pub fn fma_bf16_widened(shape: Widened) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if x86::avx512() {
        // 8 weight rows of 1024 elements: 16 KB.
        let w: Vec<u16> = (0..8 * 1024).map(|i| 0x3f80 + (i % 7) as u16).collect();
        const PASSES: usize = 2000;
        type Loop = unsafe fn(&[u16], usize) -> f32;
        let (per_pass, f): (usize, Loop) = match shape {
            Widened::OneRow256 => (w.len(), x86::widened_one_row_256),
            Widened::OneRow512 => (w.len(), x86::widened_one_row_512),
            Widened::SixRows512 => (6 * w.len(), x86::widened_six_rows),
        };
        let fmas = (PASSES * per_pass) as f64;
        return Some(best_rate(5, fmas, || unsafe {
            std::hint::black_box(f(&w, PASSES));
        }));
    }
    None
}

/// Bytes per second read from a `bytes`-long buffer by `threads` threads
/// (each its own contiguous share, 512-bit loads, the buffer read over and
/// over so that it stays in whichever cache holds it).
pub fn read_bandwidth(bytes: usize, threads: usize) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if x86::avx512() {
        let words = bytes / 8;
        let buf: Vec<u64> = (0..words as u64).collect();
        let share = words / threads / 8 * 8;
        let passes = (512 << 20) / bytes.max(1);
        let total = (share * threads * 8 * passes) as f64;
        return Some(best_rate(5, total, || {
            std::thread::scope(|s| {
                for t in 0..threads {
                    let part = &buf[t * share..(t + 1) * share];
                    s.spawn(move || unsafe {
                        std::hint::black_box(x86::read_sum(part, passes));
                    });
                }
            })
        }));
    }
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    #![allow(unsafe_op_in_unsafe_fn)]
    use std::arch::x86_64::*;

    /// Whether AVX-512 F, BW and VL run here.
    pub(super) fn avx512() -> bool {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
    }

    /// `rounds` x 16 dependent integer adds.
    pub(super) unsafe fn add_chain(rounds: u64) {
        let mut x: u64 = 0;
        for _ in 0..rounds {
            std::arch::asm!(
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                x = inout(reg) x,
                options(nomem, nostack),
            );
        }
        std::hint::black_box(x);
    }

    /// `rounds` x 12 independent 512-bit multiply-adds.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn fma_chains(rounds: usize) -> f32 {
        let a = _mm512_set1_ps(std::hint::black_box(0.999));
        let b = _mm512_set1_ps(std::hint::black_box(1e-3));
        let mut acc = [_mm512_setzero_ps(); 12];
        for _ in 0..rounds {
            for v in acc.iter_mut() {
                *v = _mm512_fmadd_ps(*v, a, b);
            }
        }
        let mut s = _mm512_setzero_ps();
        for v in acc {
            s = _mm512_add_ps(s, v);
        }
        _mm512_reduce_add_ps(s)
    }

    /// One row against the eight weight rows of `w` (each `w.len() / 8`
    /// long), `passes` times, 256-bit: the decode kernel's loop.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    pub(super) unsafe fn widened_one_row_256(w: &[u16], passes: usize) -> f32 {
        let k = w.len() / 8;
        let x = _mm256_set1_ps(std::hint::black_box(0.5));
        let mut acc = [_mm256_setzero_ps(); 8];
        for _ in 0..passes {
            let mut at = 0;
            while at < k {
                for (c, a) in acc.iter_mut().enumerate() {
                    let h = _mm_loadu_si128(w.as_ptr().add(c * k + at).cast());
                    let wv = _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)));
                    *a = _mm256_fmadd_ps(x, wv, *a);
                }
                at += 8;
            }
        }
        let mut s = _mm256_setzero_ps();
        for v in acc {
            s = _mm256_add_ps(s, v);
        }
        let mut o = [0f32; 8];
        _mm256_storeu_ps(o.as_mut_ptr(), s);
        o.iter().sum()
    }

    /// [`widened_one_row_256`] sixteen weights at a time in 512-bit registers.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    pub(super) unsafe fn widened_one_row_512(w: &[u16], passes: usize) -> f32 {
        let k = w.len() / 8;
        let x = _mm512_set1_ps(std::hint::black_box(0.5));
        let mut acc = [_mm512_setzero_ps(); 8];
        for _ in 0..passes {
            let mut at = 0;
            while at < k {
                for (c, a) in acc.iter_mut().enumerate() {
                    let h = _mm256_loadu_si256(w.as_ptr().add(c * k + at).cast());
                    let wv = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)));
                    *a = _mm512_fmadd_ps(x, wv, *a);
                }
                at += 16;
            }
        }
        _mm512_reduce_add_ps(
            acc.iter()
                .fold(_mm512_setzero_ps(), |s, &v| _mm512_add_ps(s, v)),
        )
    }

    /// Six rows (three 512-bit registers of two) against four weight rows
    /// at a time of `w`'s eight, `passes` times: the multi-row kernel's loop.
    #[allow(clippy::needless_range_loop)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    pub(super) unsafe fn widened_six_rows(w: &[u16], passes: usize) -> f32 {
        let k = w.len() / 8;
        let xv = [
            _mm512_set1_ps(std::hint::black_box(0.5)),
            _mm512_set1_ps(std::hint::black_box(0.25)),
            _mm512_set1_ps(std::hint::black_box(0.125)),
        ];
        let mut total = _mm512_setzero_ps();
        for _ in 0..passes {
            for c0 in [0, 4] {
                let mut acc = [[_mm512_setzero_ps(); 4]; 3];
                let mut at = 0;
                while at < k {
                    for c in 0..4 {
                        let h = _mm256_broadcastsi128_si256(_mm_loadu_si128(
                            w.as_ptr().add((c0 + c) * k + at).cast(),
                        ));
                        let wv =
                            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)));
                        for p in 0..3 {
                            acc[p][c] = _mm512_fmadd_ps(xv[p], wv, acc[p][c]);
                        }
                    }
                    at += 8;
                }
                for row in acc {
                    for v in row {
                        total = _mm512_add_ps(total, v);
                    }
                }
            }
        }
        _mm512_reduce_add_ps(total)
    }

    /// Reads `words` `passes` times with 512-bit loads (four independent
    /// sums).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn read_sum(words: &[u64], passes: usize) -> u64 {
        let mut acc = [_mm512_setzero_si512(); 4];
        for _ in 0..passes {
            let mut at = 0;
            while at + 32 <= words.len() {
                for (j, a) in acc.iter_mut().enumerate() {
                    let v = _mm512_loadu_si512(words.as_ptr().add(at + 8 * j).cast());
                    *a = _mm512_add_epi64(*a, v);
                }
                at += 32;
            }
        }
        let s = acc
            .iter()
            .fold(_mm512_setzero_si512(), |s, &v| _mm512_add_epi64(s, v));
        _mm512_reduce_add_epi64(s) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every measurement gives a positive rate where the machine runs it.
    #[test]
    fn rates_are_positive_where_measured() {
        let all = [
            core_ghz(),
            fma_f32_peak(),
            fma_bf16_widened(Widened::OneRow256),
            fma_bf16_widened(Widened::SixRows512),
            read_bandwidth(1 << 20, 2),
        ];
        for r in all.into_iter().flatten() {
            assert!(r.is_finite() && r > 0.0, "{r}");
        }
    }
}
