# Sourced by the scripts/gpu_*.sh run on the GPU machine (from the
# repository root): puts the CUDA toolkit's and PyPI's CUDA 13 libraries
# (libnvrtc, libcublas) on LD_LIBRARY_PATH where they exist. Returns 0.
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do
    if [ -d "$d" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; fi
done
