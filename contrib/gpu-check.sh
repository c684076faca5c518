#!/usr/bin/env bash
# GPU check: on a machine with one (or more) NVIDIA GPUs, build coll/gpu with
# CUDA and run what CI cannot: the CUDA backend and the device tests with
# several processes on the GPU, plus the device benchmark.  Finishes in a few
# minutes and prints a summary.
#
#   contrib/gpu-check.sh [--tarball coll-gpu-X.tar.gz] [--out DIR] [--quick]
#
# Open MPI: the one on PATH, or .dev/ompi packed by ../shared/device/pack-openmpi.sh
# (sourced here when present).  Sources: the tarball of `make dist` when given (no
# autotools needed), else this checkout (needs autotools unless ./configure exists).
# --out DIR keeps the logs and the benchmark output there.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tarball= out= quick=0
while [ $# -gt 0 ]; do
    case "$1" in
    --tarball) tarball=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--tarball FILE] [--out DIR] [--quick]" >&2; exit 2 ;;
    esac
done
work=${GPU_CHECK_WORK:-/tmp/coll-gpu-check}
out=${out:-$work/out}
mkdir -p "$work" "$out"
log=$out/gpu-check.log
: >"$log"
results=()
failed=0

say() { echo "$*" | tee -a "$log"; }
# step NAME TIMEOUT CMD...: runs CMD, records PASS / FAIL / SKIP (exit 77)
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS rc
    say "=== $name: $*"
    timeout "$limit" "$@" >>"$log" 2>&1
    rc=$?
    case $rc in
    0) results+=("PASS  $name ($((SECONDS - t0)) s)") ;;
    77) results+=("SKIP  $name") ;;
    *) results+=("FAIL  $name (exit $rc)"); failed=$((failed + 1)) ;;
    esac
    tail -n 5 "$log"
    return 0
}

if [ -f "$top/.dev/ompi/env.sh" ] && ! command -v mpicc >/dev/null 2>&1; then
    # shellcheck disable=SC1091
    source "$top/.dev/ompi/env.sh"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
command -v mpicc >/dev/null || { say "no Open MPI (mpicc) on PATH"; exit 1; }
if ! nvidia-smi -L >>"$log" 2>&1; then
    say "SKIP: no NVIDIA GPU here (nvidia-smi -L failed)"
    exit 77
fi
nvidia-smi -L | tee -a "$log"
cuda=${CUDA_HOME:-/usr/local/cuda}

# Build
src=$top
if [ -n "$tarball" ]; then
    rm -rf "$work/src" && mkdir -p "$work/src"
    tar -xzf "$tarball" -C "$work/src" --strip-components=1 || exit 1
    src=$work/src
elif [ ! -x "$src/configure" ]; then
    (cd "$src" && ./autogen.sh) >>"$log" 2>&1 || { say "autogen.sh failed (no autotools? use --tarball)"; exit 1; }
fi
build=$work/build
rm -rf "$build" && mkdir -p "$build"
cd "$build" || exit 1
step configure 300 "$src/configure" --with-cuda="$cuda" --with-mca-dir="$work/mca"
step build 600 make -j"$(nproc)"
[ -f "$build/ompi-coll-gpu/.libs/mca_coll_gpu.so" ] || { say "build failed"; printf '%s\n' "${results[@]}"; exit 1; }
# shellcheck disable=SC1091
. "$build/tests/test_env.sh"
(cd tests && make -j"$(nproc)" check TESTS= >>"$log" 2>&1)

mca="$COLL_GPU_MCA --mca coll_gpu_accelerator cuda --mca op ^avx"
tc=$build/tests/mpi/test_collectives

step "unit: CUDA backend" 120 tests/unit/test_accel_cuda
for np in 2 4; do
    step "collectives, $np ranks, device/mixed, pipelined" 300 \
        $MPIRUN -np "$np" $mca --mca coll_gpu_staging_buffer_size 65536 "$tc" --device=cuda \
        --kinds=device,mixed --big=4m
done
if [ "$quick" -eq 0 ]; then
    step "collectives, 3 ranks, managed/pinned" 300 \
        $MPIRUN -np 3 $mca "$tc" --device=cuda --kinds=managed,pinned --small-only
    step "collectives, 4 ranks, unpipelined" 300 \
        $MPIRUN -np 4 $mca --mca coll_gpu_staged_pipeline 0 "$tc" --device=cuda --kinds=device \
        --small-only
fi
step "nonblocking, 4 ranks, device" 300 \
    $MPIRUN -np 4 $mca "$build/tests/mpi/test_nonblocking" --device=cuda --kinds=device,mixed
step "selection: auto picks cuda" 120 \
    bash -c "$MPIRUN -np 2 $COLL_GPU_MCA --mca coll_gpu_verbose 1 tests/mpi/test_selection 2>&1 | grep -q 'backend cuda selected'"

# Benchmarks: staged device allreduce against host-buffer allreduce, 4 ranks
bench=$build/perf/coll_gpu_bench
step "bench: allreduce, 4 ranks, cuda device" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 $mca $bench -c allreduce -m device -a cuda -b 8 -e 256M -n 20 -w 3 | tee $out/bench-allreduce-device.txt"
step "bench: allreduce, 4 ranks, host" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 $mca $bench -c allreduce -m host -b 8 -e 256M -n 20 -w 3 | tee $out/bench-allreduce-host.txt"
step "bench: host allreduce without coll/gpu, 4 ranks" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 --mca op ^avx $bench -c allreduce -m host -b 8 -e 64K -n 2000 | tee $out/bench-allreduce-host-without.txt"
step "bench: host allreduce with coll/gpu (cuda backend), 4 ranks" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 $mca $bench -c allreduce -m host -b 8 -e 64K -n 2000 | tee $out/bench-allreduce-host-with.txt"

say ""
say "===== coll/gpu GPU check summary ($(nvidia-smi -L | head -1))"
for r in "${results[@]}"; do say "$r"; done
for f in "$out"/bench-*.txt; do
    [ -f "$f" ] && { say "--- $(basename "$f")"; tee -a "$log" <"$f"; }
done
say "$(( ${#results[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
