#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Set up and run: on a fresh Debian 12 machine, installs the dependencies,
# builds coll/gpu, installs mca_coll_gpu.so into Open MPI's component
# directory (make install; root or a writable Open MPI) and runs an
# MPI_Allreduce sweep through it on 4 ranks: on CUDA device buffers when a
# GPU is present, otherwise on emulated device memory.
#
#   contrib/setup-and-run.sh [BUILD_DIR]        (default: build/)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
jobs=$(nproc 2>/dev/null || echo 2)

"$top/contrib/install-deps.sh"
(cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
cd "$build"
"$top/configure" ${COLL_GPU_CONFIGURE_FLAGS:-}
make -j"$jobs"
make install

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    backend=cuda
else
    echo "no GPU here: device buffers are emulated (coll_gpu_accelerator=emulated)"
    backend=emulated
fi
mpirun -np 4 --oversubscribe --mca coll_gpu_accelerator "$backend" --mca coll_gpu_verbose 1 \
    perf/coll_gpu_bench -c allreduce -m device -a "$backend" -b 8 -e 16M -n 20 -w 3
