//! The compiled kernels of [`SOURCE`], from NVRTC or from a cubin cache.
//!
//! NVRTC takes about a minute for the whole source on a fresh machine (70 s
//! on the H200 machines, 49 s on a CPU here), and a device machine lent for
//! minutes is fresh on every call. With `SPECULA_KERNEL_CACHE=DIR` the
//! kernels are compiled to a cubin once, kept as `DIR/kernels-<target>-<key>.cubin`
//! (the key a hash of the source, target and options, so an edited kernel
//! never loads a stale cubin) and loaded from there after; the cubin can be
//! built on a machine without a GPU (`specula-gpu-check --compile-only DIR
//! --arch sm_90a`) and taken along. Without the variable, NVRTC compiles to
//! PTX on every start, as before.

use super::device::{GpuError, SOURCE};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::path::{Path, PathBuf};

/// How [`kernel_image`] got the kernels.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelOrigin {
    /// Compiled by NVRTC in this process, in seconds.
    Compiled(f64),
    /// Read from this cubin.
    Cached(PathBuf),
}

impl std::fmt::Display for KernelOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelOrigin::Compiled(s) => write!(f, "kernels compiled by NVRTC in {s:.2} s"),
            KernelOrigin::Cached(p) => write!(f, "kernels loaded from {}", p.display()),
        }
    }
}

/// The engine's NVRTC options for `target` (`sm_90a`, `sm_80`, ...): the
/// early programmatic-dependent launch unless `SPECULA_PDL=late`, the
/// wait-return stamps with `SPECULA_STAMPS=1` ([`super::stamps`]).
pub fn compile_options() -> Vec<String> {
    let mut options = Vec::new();
    if super::device::pdl_switch() != super::device::PdlSwitch::Late {
        options.push("-DSPECULA_PDL_EARLY".into());
    }
    if super::stamps::stamps_on() {
        options.push("-DSPECULA_STAMPS".into());
    }
    options
}

/// FNV-1a 64 state `h` extended by `bytes`.
fn fnv1a_extend(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// FNV-1a 64's starting state.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// 64-bit FNV-1a of `parts`, each followed by a zero byte: stable across
/// builds and machines, unlike std's hasher.
fn fnv1a(parts: &[&str]) -> u64 {
    parts.iter().fold(FNV_OFFSET, |h, p| {
        fnv1a_extend(fnv1a_extend(h, p.as_bytes()), &[0])
    })
}

/// The cache file of `source` compiled for `target` with `options`, in `dir`.
pub fn cache_path(dir: &Path, source: &str, target: &str, options: &[String]) -> PathBuf {
    let mut parts = vec![source, target];
    parts.extend(options.iter().map(String::as_str));
    dir.join(format!("kernels-{target}-{:016x}.cubin", fnv1a(&parts)))
}

/// [`SOURCE`] compiled by NVRTC for `target` into a cubin (no GPU needed).
pub fn compile_cubin(target: &str, options: &[String]) -> Result<Vec<u8>, GpuError> {
    use cudarc::nvrtc::{result, sys};
    let fail = |what: &str, e: &dyn std::fmt::Debug| GpuError::Compile(format!("{what}: {e:?}"));
    let src = std::ffi::CString::new(SOURCE).map_err(|e| fail("source", &e))?;
    let prog = result::create_program(&src, None).map_err(|e| fail("nvrtcCreateProgram", &e))?;
    let mut opts = vec![format!("--gpu-architecture={target}")];
    opts.extend(options.iter().cloned());
    // SAFETY: `prog` was created above and is destroyed once, below; the
    // buffer is sized by nvrtcGetCUBINSize.
    unsafe {
        let compiled = result::compile_program(prog, &opts);
        let out = compiled.map_err(|_| {
            let log = result::get_program_log(prog).unwrap_or_default();
            let log: Vec<u8> = log
                .iter()
                .map(|&c| c as u8)
                .take_while(|&c| c != 0)
                .collect();
            fail("nvrtcCompileProgram", &String::from_utf8_lossy(&log))
        });
        let out = out.and_then(|()| {
            let mut size = 0usize;
            sys::nvrtcGetCUBINSize(prog, &mut size)
                .result()
                .map_err(|e| fail("nvrtcGetCUBINSize", &e))?;
            let mut cubin = vec![0u8; size];
            sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
                .result()
                .map_err(|e| fail("nvrtcGetCUBIN", &e))?;
            Ok(cubin)
        });
        result::destroy_program(prog).map_err(|e| fail("nvrtcDestroyProgram", &e))?;
        out
    }
}

/// Writes `cubin` to `path` (making its folder): whole under another name,
/// then renamed, so that a process starting beside this one finds no cubin
/// or the whole of it, never a part.
pub fn store_cubin(path: &Path, cubin: &[u8]) -> std::io::Result<()> {
    let partial = path.with_extension(format!("cubin.{}.part", std::process::id()));
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&partial, cubin))
        .and_then(|()| std::fs::rename(&partial, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// The kernels for `target`: from `SPECULA_KERNEL_CACHE`'s cubin when it
/// holds one for this source, target and options (else compiled to a cubin
/// and written there, a write that fails only warned about), or compiled
/// by NVRTC to PTX when the variable is unset.
pub fn kernel_image(target: &'static str) -> Result<(Ptx, KernelOrigin), GpuError> {
    let options = compile_options();
    let t0 = std::time::Instant::now();
    let Some(dir) = std::env::var_os("SPECULA_KERNEL_CACHE").filter(|d| !d.is_empty()) else {
        let opts = CompileOptions {
            arch: Some(target),
            options,
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(SOURCE, opts)
            .map_err(|e| GpuError::Compile(format!("{e:?}")))?;
        return Ok((ptx, KernelOrigin::Compiled(t0.elapsed().as_secs_f64())));
    };
    let path = cache_path(Path::new(&dir), SOURCE, target, &options);
    if let Ok(cubin) = std::fs::read(&path) {
        return Ok((Ptx::from_binary(cubin), KernelOrigin::Cached(path)));
    }
    let cubin = compile_cubin(target, &options)?;
    let secs = t0.elapsed().as_secs_f64();
    if let Err(e) = store_cubin(&path, &cubin) {
        eprintln!(
            "warning: {}: {e} (the kernels were not cached)",
            path.display()
        );
    }
    Ok((Ptx::from_binary(cubin), KernelOrigin::Compiled(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_file_changes_with_the_source_the_target_and_the_options() {
        let dir = Path::new("/cache");
        let early = vec!["-DSPECULA_PDL_EARLY".to_string()];
        let a = cache_path(dir, "kernel a", "sm_90a", &early);
        assert_eq!(a, cache_path(dir, "kernel a", "sm_90a", &early));
        assert!(a.starts_with(dir) && a.to_string_lossy().contains("kernels-sm_90a-"));
        assert_ne!(a, cache_path(dir, "kernel b", "sm_90a", &early));
        assert_ne!(a, cache_path(dir, "kernel a", "sm_80", &early));
        assert_ne!(a, cache_path(dir, "kernel a", "sm_90a", &[]));
        // The parts are separated: moving a byte between them changes the key.
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
    }

    #[test]
    fn a_stored_cubin_is_whole_and_leaves_no_partial_file() {
        let dir = std::env::temp_dir().join(format!("specula-cubin-{}", std::process::id()));
        let path = dir.join("nested").join("kernels-sm_90a-0.cubin");
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        store_cubin(&path, &bytes).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![path.file_name().unwrap().to_owned()]);
        // A folder that cannot be made is an error, with nothing left behind.
        let blocked = dir.join("file");
        std::fs::write(&blocked, b"x").unwrap();
        assert!(store_cubin(&blocked.join("k.cubin"), &bytes).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // Published FNV-1a 64 values.
        assert_eq!(fnv1a_extend(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_extend(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_extend(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a(&["a"]), fnv1a_extend(FNV_OFFSET, b"a\0"));
    }
}
