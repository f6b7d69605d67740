"""Compile the CUDA backend's kernels for sm_90 with NVRTC on a machine with no GPU.

The engine compiles `SOURCE` (kernels/src/cuda/device.rs: the .cu files in
its include_str! order) with NVRTC at run time on the GPU machine; this runs
the same compile here, so that a kernel edit's errors, registers and spills
are known before device time is spent. NVRTC needs no driver. Get it once
(PyPI's wheel carries libnvrtc; 13.0 matches the H200 machine's CUDA):

    pip download --no-deps -d /tmp/nvrtc "nvidia-cuda-nvrtc==13.0.*"
    unzip -q -o /tmp/nvrtc/nvidia_cuda_nvrtc-*.whl -d /tmp/nvrtc/w
    LD_LIBRARY_PATH=/tmp/nvrtc/w/nvidia/cu13/lib python3 tools/gpu/nvrtc_check.py [--kernels moe_,mla_]

Prints the compile log's errors, then registers, stack and spills of every
kernel whose name starts with one of --kernels (all by default); exits 1 if
the compile fails. The macros the engine defines by default
(SPECULA_PDL_EARLY, unless SPECULA_PDL=late) are defined here too;
--late leaves them out, --define adds more. --lab FILE compiles the prelude
and a separately compiled device file instead (kernels/src/cuda/wgmma_bits.cu,
with --arch sm_90a). --cubin FILE writes the compiled cubin, whose machine code
`nvdisasm -c FILE` prints (nvdisasm from PyPI's nvidia-cuda-nvdisasm wheel);
tools/gpu/sass_functions.py reads such listings (kernel sizes; which kernels
two builds compile differently).
"""
import argparse
import ctypes
import ctypes.util
import glob
import os
import re
import sys


def load_nvrtc():
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        for f in sorted(glob.glob(os.path.join(d, "libnvrtc.so*"))):
            if "builtins" not in f and ".alt." not in f:
                return ctypes.CDLL(f)
    name = ctypes.util.find_library("nvrtc")
    if not name:
        raise SystemExit("libnvrtc not found: put the wheel's nvidia/cu13/lib on LD_LIBRARY_PATH (see --help)")
    return ctypes.CDLL(name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--kernels", default="", help="comma-separated name prefixes to report")
    ap.add_argument("--define", action="append", default=[], help="one more macro to define (as -D)")
    ap.add_argument("--late", action="store_true", help="compile as SPECULA_PDL=late does (no SPECULA_PDL_EARLY)")
    ap.add_argument("--lab", action="append", default=[], help="a device file compiled after the prelude instead of the engine's files (repeat for several, in order)")
    ap.add_argument("--arch", default="sm_90", help="target architecture (sm_90a for wgmma)")
    ap.add_argument("--cubin", help="also write the compiled cubin here (for nvdisasm)")
    a = ap.parse_args()
    cuda = os.path.join(a.root, "kernels", "src", "cuda")
    dev = open(os.path.join(cuda, "device.rs")).read()
    files = re.findall(r'include_str!\("([^"]+)"\)', dev[dev.index("pub const SOURCE"):])
    paths = [os.path.join(cuda, f) for f in files]
    if a.lab:
        paths = [os.path.join(cuda, "prelude.cu")] + a.lab
    src = "".join(open(p).read() for p in paths).encode()
    lib = load_nvrtc()
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"specula.cu", 0, None, None) != 0:
        raise SystemExit("nvrtcCreateProgram failed")
    opts = [f"--gpu-architecture={a.arch}".encode(), b"-Xptxas", b"-v"] + [f"-D{d}".encode() for d in ([] if a.late else ["SPECULA_PDL_EARLY"]) + a.define]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    for line in log.splitlines():
        if "error" in line or "warning" in line:
            print(line)
    want = [p for p in a.kernels.split(",") if p]
    name = None
    for line in log.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            name = m.group(1)
            stack = ""
            continue
        if name and "stack frame" in line:
            stack = line.split(".", 1)[1].strip()
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            if not want or any(name.startswith(p) for p in want):
                print(f"{name:40} {m.group(1):>4} registers  {stack}")
            name = None
    if rc == 0 and a.cubin:
        size = ctypes.c_size_t()
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, cubin)
        with open(a.cubin, "wb") as f:
            f.write(cubin.raw)
    print(f"nvrtc compile {'ok' if rc == 0 else 'FAILED'} ({len(paths)} files)")
    sys.exit(0 if rc == 0 else 1)


if __name__ == "__main__":
    main()
