#!/usr/bin/env bash
# A CUDA 13.0 toolkit from NVIDIA's PyPI wheels, for
# `cargo build --release --features cuda` on a machine without one
# (no root, no distribution packages). Usage:
#
#   scripts/cuda_toolkit.sh DIR [COMPUTE_CAP]     # e.g. DIR=~/cuda13 90
#   source DIR/env.sh && cargo build --release --features cuda
#
# COMPUTE_CAP is the GPU's compute capability without the dot (90 for
# H100/H200, 89 for L4/L40/RTX 40xx, 80 for A100; default 90): the kernels
# are compiled for it. The binary links libcuda.so.1 (the driver's) and the
# CUDA 13 libraries by soname; on the GPU machine the driver must support
# CUDA 13.0 (r580 or later), and the libraries come from the same wheels
# (or PyTorch's cu13 install: add its nvidia/cu13/lib to LD_LIBRARY_PATH).
# Where no driver is installed (a build machine), libcuda.so is a stub made
# from the driver functions cudarc binds, only for linking.
set -euo pipefail
dir=${1:?usage: scripts/cuda_toolkit.sh DIR [COMPUTE_CAP]}
cap=${2:-90}
mkdir -p "$dir/wheels" "$dir/stub"
dir=$(cd "$dir" && pwd)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dir/wheels" \
    "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*" \
    "nvidia-cuda-cccl==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-nvrtc==13.0.*" \
    "nvidia-cublas==13.0.*" "nvidia-curand<11"
for wheel in "$dir"/wheels/*.whl; do
    python3 -m zipfile -e "$wheel" "$dir/site"
done
home="$dir/site/nvidia/cu13"
chmod +x "$home"/bin/* "$home"/nvvm/bin/*
# nvcc looks for the C++ core libraries (nv/target, cuda/std) beside its
# own headers; the wheel keeps them under include/cccl.
for sub in "$home"/include/cccl/*; do
    [ -e "$home/include/$(basename "$sub")" ] || ln -s "$sub" "$home/include/$(basename "$sub")"
done
# The linker asks for unversioned names.
for lib in cudart cublas cublasLt curand nvrtc; do
    ln -sf "$(basename "$(ls "$home"/lib/lib$lib.so.* | head -1)")" "$home/lib/lib$lib.so"
done
driver=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
if [ -n "$driver" ]; then
    ln -sf "$driver" "$dir/stub/libcuda.so"
else
    cargo fetch --locked >/dev/null
    bindings=$(ls -d ~/.cargo/registry/src/*/cudarc-*/src/driver/sys/mod.rs | tail -1)
    grep -o 'fn cu[A-Z][A-Za-z0-9_]*' "$bindings" | sort -u |
        awk '{print "void " $2 "(void) {}"}' >"$dir/stub/cuda.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$dir/stub/libcuda.so" "$dir/stub/cuda.c"
fi
cat >"$dir/env.sh" <<EOF
export CUDA_HOME=$home CUDA_PATH=$home CUDA_COMPUTE_CAP=$cap
export PATH=$home/bin:\$PATH
export LIBRARY_PATH=$home/lib:$dir/stub\${LIBRARY_PATH:+:\$LIBRARY_PATH}
export LD_LIBRARY_PATH=$home/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
EOF
echo "CUDA toolkit in $home; now: source $dir/env.sh && cargo build --release --features cuda"
