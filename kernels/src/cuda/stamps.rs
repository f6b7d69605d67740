//! Wait-return stamps: where a replayed step's time goes, kernel by kernel,
//! with the overlap of programmatic dependents included (`SPECULA_STAMPS=1`
//! compiles them into every kernel's `pdl_wait`, `prelude.cu`). Thread 0 of
//! each launch's first block stores the device's global timer as its wait
//! on the kernel before returns (in a slot taken before the wait, so slots
//! need not follow time: [`take_stamps`] sorts them). In one stream that wait returns as the
//! kernel before completes, so the gap between two consecutive stamps is
//! the first kernel's share of the step as it ran, which neither a kernel
//! timed alone (no overlap) nor events between kernels (which break the
//! programmatic edges) give. Each stamp is named by the kernels the host
//! launched with its shape ([`stamp_kernels`]). Off, the kernels hold no
//! trace of them.

use super::device::{Gpu, GpuError};
use crate::switch::Switch;
use cudarc::driver::LaunchConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// Stamps the device keeps at most (`SPECULA_STAMPS_CAP` in `prelude.cu`);
/// later ones are counted but dropped.
pub const STAMPS_CAP: usize = 65536;

/// One launch's wait-return stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The device's global timer, nanoseconds.
    pub ns: u64,
    /// Blocks of the launch.
    pub blocks: u32,
    /// Threads a block.
    pub threads: u32,
}

/// Whether the kernels are compiled with stamps (`SPECULA_STAMPS=1`; read
/// once).
pub fn stamps_on() -> bool {
    static ON: Switch<bool> = Switch::on_off("SPECULA_STAMPS", false);
    ON.get()
}

/// The kernels launched so far by launch shape (blocks, threads a block),
/// noted while stamps are on: a replayed graph launches nothing from the
/// host, so its stamps are named from the launches its capture made.
static LAUNCHED: Mutex<BTreeMap<(u32, u32), BTreeSet<String>>> = Mutex::new(BTreeMap::new());

/// Notes a launch of `kernel` with `cfg` (while stamps are on).
pub(super) fn note_launch(kernel: &str, cfg: &LaunchConfig) {
    if !stamps_on() {
        return;
    }
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    note_shape(kernel, (g.0 * g.1 * g.2, b.0 * b.1 * b.2));
}

/// Notes `kernel` under `shape` (blocks, threads a block).
fn note_shape(kernel: &str, shape: (u32, u32)) {
    let mut launched = LAUNCHED.lock().unwrap_or_else(|e| e.into_inner());
    let names = launched.entry(shape).or_default();
    if !names.contains(kernel) {
        names.insert(kernel.to_string());
    }
}

/// The kernels launched with `stamp`'s shape so far, '/'-joined (several
/// kernels can share a shape); empty for a shape no noted launch had (a
/// cuBLAS kernel leaves no stamp: its time falls in the gap before it).
pub fn stamp_kernels(stamp: &Stamp) -> String {
    let launched = LAUNCHED.lock().unwrap_or_else(|e| e.into_inner());
    launched
        .get(&(stamp.blocks, stamp.threads))
        .map(|names| names.iter().cloned().collect::<Vec<_>>().join("/"))
        .unwrap_or_default()
}

/// Block counts of the host's marks start here (one thread a block: no
/// engine kernel has that shape).
pub const HOST_MARK_BASE: u32 = 900;

/// Marks the host's progress in the stamps (while stamps are on; else
/// nothing): a launch of `host_mark` (`hold.cu`), [`HOST_MARK_BASE`] + `code`
/// blocks of one thread, named `label` in [`stamp_kernels`]. Where the GPU
/// is idle its stamp is (a launch's latency after) when the host got here,
/// so the gaps between marks and kernels show where a step waits for the
/// host. Never inside a graph capture (it would be captured).
pub fn host_mark(gpu: &Gpu, code: u32, label: &str) -> Result<(), GpuError> {
    if !stamps_on() {
        return Ok(());
    }
    let blocks = HOST_MARK_BASE + code;
    let f = gpu.function("host_mark")?;
    let one = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: host_mark takes no arguments.
    unsafe { gpu.stream.launch_builder(&f).launch(one) }?;
    note_shape(label, (blocks, 1));
    Ok(())
}

/// Forgets the stamps taken so far (after the stream's work is done).
pub fn reset_stamps(gpu: &Gpu) -> Result<(), GpuError> {
    gpu.sync()?;
    let mut count = gpu
        .module()
        .get_global("specula_stamp_count", &gpu.stream)?;
    gpu.stream.memcpy_htod(&[0u8; 4], &mut count)?;
    gpu.sync()
}

/// The stamps taken since the last [`reset_stamps`] in time order, and how
/// many were dropped past [`STAMPS_CAP`].
pub fn take_stamps(gpu: &Gpu) -> Result<(Vec<Stamp>, usize), GpuError> {
    gpu.sync()?;
    let module = gpu.module();
    let count = module.get_global("specula_stamp_count", &gpu.stream)?;
    let mut n = [0u8; 4];
    gpu.stream.memcpy_dtoh(&count, &mut n)?;
    let n = u32::from_le_bytes(n) as usize;
    let raw = module.get_global("specula_stamps", &gpu.stream)?;
    let mut bytes = vec![0u8; raw.len()];
    gpu.stream.memcpy_dtoh(&raw, &mut bytes)?;
    gpu.sync()?;
    let kept = n.min(STAMPS_CAP);
    let mut stamps = decode_stamps(&bytes, kept);
    stamps.sort_by_key(|s| s.ns);
    Ok((stamps, n - kept))
}

/// The first `n` stamps of the device's array (pairs of little-endian u64:
/// the timer, then blocks | threads << 32).
fn decode_stamps(bytes: &[u8], n: usize) -> Vec<Stamp> {
    bytes
        .chunks_exact(16)
        .take(n)
        .map(|c| {
            let ns = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
            let info = u64::from_le_bytes(c[8..].try_into().expect("8 bytes"));
            Stamp {
                ns,
                blocks: info as u32,
                threads: (info >> 32) as u32,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_named_by_every_kernel_launched_with_its_shape() {
        let stamp = |blocks, threads| Stamp {
            ns: 0,
            blocks,
            threads,
        };
        note_shape("rms_norm_residual_bf16", (999_983, 7));
        note_shape("moe_combine_norm_bf16", (999_983, 7));
        note_shape("rms_norm_residual_bf16", (999_983, 7));
        note_shape("moe_route_bf16", (999_979, 7));
        assert_eq!(
            stamp_kernels(&stamp(999_983, 7)),
            "moe_combine_norm_bf16/rms_norm_residual_bf16"
        );
        assert_eq!(stamp_kernels(&stamp(999_979, 7)), "moe_route_bf16");
        assert_eq!(stamp_kernels(&stamp(999_983, 8)), "");
    }

    #[test]
    fn a_stamp_reads_back_its_timer_blocks_and_threads() {
        let mut bytes = Vec::new();
        for (ns, blocks, threads) in [(5_000_000_123u64, 1056u32, 32u32), (7, 1, 512)] {
            bytes.extend_from_slice(&ns.to_le_bytes());
            bytes
                .extend_from_slice(&(u64::from(blocks) | (u64::from(threads) << 32)).to_le_bytes());
        }
        bytes.extend_from_slice(&[0xff; 16]);
        let got = decode_stamps(&bytes, 2);
        assert_eq!(
            got,
            vec![
                Stamp {
                    ns: 5_000_000_123,
                    blocks: 1056,
                    threads: 32
                },
                Stamp {
                    ns: 7,
                    blocks: 1,
                    threads: 512
                }
            ]
        );
    }
}
