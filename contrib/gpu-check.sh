#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
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
# --out DIR keeps the logs and the benchmark output there, and the gpucoll_perf sweep
# (allreduce, reduce_scatter, allgather, bcast on device buffers, 4 ranks, 8 B .. 1 GiB, about
# 2-4 minutes; --sweep-max 64M shortens it, --no-sweep skips it) as sweep-COLL.json/.csv/.txt
# and sweep/compare.png (busbw against size; needs gnuplot or python3-matplotlib).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tarball= out= quick=0 sweep_max=1G
while [ $# -gt 0 ]; do
    case "$1" in
    --tarball) tarball=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --sweep-max) sweep_max=$2; shift 2 ;;
    --no-sweep) sweep_max=0; shift ;;
    *) echo "usage: $0 [--tarball FILE] [--out DIR] [--quick] [--sweep-max SIZE|--no-sweep]" >&2; exit 2 ;;
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
# shmem-transport's cuda_ipc backend: 2 and 4 processes on one GPU map each other's memory
step "shmem: cuda_ipc, 2 and 4 processes on one GPU" 180 tests/unit/test_shmem_ipc --accel=cuda 2 4
step "bench: shmem put, cuda_ipc, 2 processes" 300 \
    bash -o pipefail -c "perf/cgt_bench -b ipc -a cuda | tee $out/bench-shmem-ipc.txt"
# Reduction kernels: every (op, type) pair, bit-exact against the test's reference.
step "unit: reduction kernels, CUDA backend" 300 tests/unit/test_accel_reduce --backend cuda
# CUDA IPC: the test's parent exports device memory (cuMemAlloc and cuMemCreate) that two
# forked peer processes on the same GPU import, read and write.
step "unit: CUDA IPC, 3 processes" 120 tests/unit/test_accel_ipc --backend cuda
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
# MPI_Reduce_local on device buffers: every (MPI type, op) through the component's kernels
step "reduce_local: kernels through the component, device" 300 \
    $MPIRUN -np 2 $mca "$build/tests/mpi/test_reduce_local" --device=cuda --kinds=device
# transport teams with real CUDA IPC: 4 processes on one GPU, as 1 node and as 2 emulated nodes
step "teams: transport check, 4 ranks on one GPU" 300 \
    $MPIRUN -np 4 $mca --mca coll_gpu_transport_check 1 "$build/tests/mpi/test_team" \
    --device=cuda --kinds=device --cycles=3
step "teams: transport check, 4 ranks as 2 nodes (ucx)" 300 \
    $MPIRUN -np 4 $mca --mca coll_gpu_transport_check 1 --mca coll_gpu_ranks_per_node 2 \
    "$build/tests/mpi/test_team" --device=cuda --kinds=device --cycles=3
step "nonblocking, 4 ranks, device" 300 \
    $MPIRUN -np 4 $mca "$build/tests/mpi/test_nonblocking" --device=cuda --kinds=device,mixed
# The native algorithms on real CUDA IPC: 4 processes on one GPU, each allreduce algorithm
# (bit-exact against the tests' references, the pvar of the path taken), as one node and as
# 2 emulated nodes (hierarchical and ring over UCX), and the other native collectives
tan=$build/tests/mpi/test_allreduce_native
for alg in auto one_shot two_shot ring hierarchical recursive_doubling; do
    step "native allreduce, 4 ranks, cuda, $alg" 300 \
        $MPIRUN -np 4 $mca --mca coll_gpu_allreduce_algorithm $alg "$tan" --device=cuda \
        --big-count=4194304
done
for alg in auto ring; do
    step "native allreduce, 4 ranks as 2 nodes, cuda, $alg" 300 \
        $MPIRUN -np 4 $mca --mca coll_gpu_ranks_per_node 2 --mca coll_gpu_allreduce_algorithm $alg \
        "$tan" --device=cuda
done
step "native collectives, 4 ranks, cuda" 300 \
    $MPIRUN -np 4 $mca "$build/tests/mpi/test_native_collectives" --device=cuda --big-bytes=16777216
step "native collectives, 4 ranks as 2 nodes, cuda" 300 \
    $MPIRUN -np 4 $mca --mca coll_gpu_ranks_per_node 2 "$build/tests/mpi/test_native_collectives" \
    --device=cuda
# the two-level bcast: a leader per node gets from the root over UCX, its node loads from it
step "native bcast two-level, 4 ranks as 2 nodes, cuda" 300 \
    $MPIRUN -np 4 $mca --mca coll_gpu_ranks_per_node 2 "$build/tests/mpi/test_bcast_native" \
    --device=cuda --big-bytes=16777216
# The issue's targets: float allreduce on 4 ranks, 256 MiB native >= 20x the staged path's
# bandwidth, 8 B latency <= 30 us
for native in 1 0; do
    step "bench: native=$native allreduce, 4 ranks, cuda, 8 B - 256 MiB" 300 \
        bash -o pipefail -c "$MPIRUN -np 4 $mca --mca coll_gpu_native $native $build/perf/gpucoll_perf -o allreduce -m device -a cuda -b 8 -e 256M -f 16 -n 20 -w 3 -T 1 | tee $out/bench-native$native.txt"
done
# Stream-ordered allreduce (MPIX_Allreduce_enqueue): cuStreamWaitValue32/WriteValue32 on
# IPC-mapped flags; the enqueue's host time (post column; goal <= 2 us) and the call's time
for np in 2 4; do
    step "stream-ordered allreduce, $np ranks, cuda" 300 \
        $MPIRUN -np "$np" $mca "$build/tests/mpi/test_stream" --device=cuda
done
step "bench: stream-ordered allreduce, 4 ranks, cuda, 8 B - 64 MiB" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 $mca $build/perf/gpucoll_perf -o allreduce -m device -a cuda -F stream -b 8 -e 64M -f 8 -n 50 -w 5 -T 1 | tee $out/bench-stream.txt"
step "selection: auto picks cuda" 120 \
    bash -c "$MPIRUN -np 2 $COLL_GPU_MCA --mca coll_gpu_verbose 1 tests/mpi/test_selection 2>&1 | grep -q 'backend cuda selected'"

# Reduction kernels against a device-to-device copy of the same bytes (float sum, 2 and 8
# inputs, 64 MiB and 1 GiB per buffer).
step "bench: reduction kernels, cuda" 300 \
    bash -o pipefail -c "perf/accel_reduce_bench --backend cuda | tee $out/bench-reduce-cuda.txt"
# Benchmarks: staged device allreduce against host-buffer allreduce, 4 ranks
bench=$build/perf/coll_gpu_bench
[ "$quick" -eq 1 ] || step "bench: allreduce, 4 ranks, cuda device" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 $mca $bench -c allreduce -m device -a cuda -b 8 -e 256M -n 20 -w 3 | tee $out/bench-allreduce-device.txt"
[ "$quick" -eq 1 ] || step "bench: allreduce, 4 ranks, host" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 $mca $bench -c allreduce -m host -b 8 -e 256M -n 20 -w 3 | tee $out/bench-allreduce-host.txt"
[ "$quick" -eq 1 ] || step "bench: host allreduce without coll/gpu, 4 ranks" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 --mca coll ^gpu --mca op ^avx $bench -c allreduce -m host -b 8 -e 64K -n 2000 | tee $out/bench-allreduce-host-without.txt"
[ "$quick" -eq 1 ] || step "bench: host allreduce with coll/gpu (cuda backend), 4 ranks" 300 \
    bash -o pipefail -c "$MPIRUN -np 4 $mca $bench -c allreduce -m host -b 8 -e 64K -n 2000 | tee $out/bench-allreduce-host-with.txt"
# alltoall across 2 emulated nodes of 2 (UCX between them): direct against node-aggregated
# hierarchical, to place coll_gpu_alltoall_aggregate_max_bytes (16 KiB by default, unmeasured)
for alg in direct hierarchical; do
    [ "$quick" -eq 1 ] || step "bench: alltoall $alg, 4 ranks on 2 emulated nodes, cuda device" 120 \
        bash -o pipefail -c "$MPIRUN -np 4 $mca --mca coll_gpu_ranks_per_node 2 --mca coll_gpu_alltoall_algorithm $alg $build/perf/gpucoll_perf -o alltoall -m device -a cuda -b 8 -e 1M -f 4 -n 50 -w 5 | tee $out/bench-alltoall-$alg-nodes.txt"
done

# The nccl-tests-style sweep: 4 processes on the GPU, device buffers, every result checked.
# -T 0.5 caps each size's timed loop near half a second (the largest sizes run 1-2 timed
# calls); each row is written to the JSON as it comes, so a cut-short run keeps its rows.
if [ "$sweep_max" != 0 ] && [ "$quick" -eq 0 ]; then
    sweep_plot=()
    for coll in allreduce reduce_scatter allgather bcast; do
        step "sweep: $coll, 4 ranks, cuda device, 8 B - $sweep_max" 70 \
            bash -o pipefail -c "$MPIRUN -np 4 $mca $build/perf/gpucoll_perf -o $coll -m device -a cuda -b 8 -e $sweep_max -f 2 -n 20 -w 2 -T 0.5 --json $out/sweep-$coll.json --csv $out/sweep-$coll.csv | tee $out/sweep-$coll.txt"
        [ -s "$out/sweep-$coll.json" ] && sweep_plot+=(--from-json "$coll=$out/sweep-$coll.json")
    done
    if [ ${#sweep_plot[@]} -gt 0 ] && command -v python3 >/dev/null; then
        python3 "$src/perf/compare" "${sweep_plot[@]}" --out "$out/sweep" >"$out/sweep.txt" 2>&1
    fi
fi
# The cg example, unchanged, on host buffers without coll/gpu and on the GPU with it.
step "example: cg, host and cuda builds" 120 make -C contrib/examples check

say ""
say "===== coll/gpu GPU check summary ($(nvidia-smi -L | head -1))"
for r in "${results[@]}"; do say "$r"; done
for f in "$out"/bench-*.txt "$out"/sweep.txt; do
    [ -f "$f" ] && { say "--- $(basename "$f")"; tee -a "$log" <"$f"; }
done
say "$(( ${#results[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
