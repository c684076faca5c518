#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GPU check: on a machine with one (or more) NVIDIA GPUs, build coll/gpu with
# CUDA and run what CI cannot: the CUDA backend and the device tests with
# several processes on the GPU, plus the device benchmark.  Finishes in a few
# minutes and prints a summary.
#
#   contrib/gpu-check.sh [--tarball coll-gpu-X.tar.gz] [--out DIR] [--quick] [--budget S]
#
# The steps run in order of what they prove: the CUDA backend, kernels and IPC first, then
# the collectives on device memory, then the issues' targets, then the sweep.  --budget S
# caps the whole check near S seconds (a lent GPU machine's minutes are few): each step's
# timeout is cut to what is left, and a step with under 20 s left is recorded as SKIP.
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
tarball= out= quick=0 sweep_max=1G budget=0
while [ $# -gt 0 ]; do
    case "$1" in
    --tarball) tarball=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --sweep-max) sweep_max=$2; shift 2 ;;
    --no-sweep) sweep_max=0; shift ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "usage: $0 [--tarball FILE] [--out DIR] [--quick] [--sweep-max SIZE|--no-sweep] [--budget S]" >&2; exit 2 ;;
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
# step NAME TIMEOUT CMD...: runs CMD, records PASS / FAIL / SKIP (exit 77); with --budget,
# the timeout is cut to the time left, and the step skipped when under 20 s is left
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS rc
    if [ "$budget" -gt 0 ]; then
        local left=$((budget - SECONDS))
        if [ "$left" -lt 20 ]; then
            results+=("SKIP  $name (budget spent)")
            return 0
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
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

pack_flags=()
if [ -f "$top/.dev/ompi/env.sh" ] && ! command -v mpicc >/dev/null 2>&1; then
    # shellcheck disable=SC1091
    source "$top/.dev/ompi/env.sh"
fi
if [ -d "$top/.dev/ompi/root/usr/include" ] && [ "$(command -v mpicc)" = "$top/.dev/ompi/root/usr/bin/mpicc" ]; then
    # the packed Open MPI's hwloc, UCX and verbs headers and libraries are beside it, not in /usr
    pack_flags=(CPPFLAGS="-I$top/.dev/ompi/root/usr/include"
        LDFLAGS="-L$top/.dev/ompi/root/usr/lib/x86_64-linux-gnu -L$top/.dev/ompi/root/lib/x86_64-linux-gnu")
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
# kernels for this GPU's architecture only (the build is on the clock)
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
step configure 300 "$src/configure" --with-cuda="$cuda" --with-mca-dir="$work/mca" \
    ${arch:+--with-cuda-arch="$arch"} "${pack_flags[@]}"
sed -n '/^coll\/gpu .* configuration$/,/^  -Werror/p' "$log"
step build 600 make -j"$(nproc)"
[ -f "$build/ompi-coll-gpu/.libs/mca_coll_gpu.so" ] || { say "build failed"; printf '%s\n' "${results[@]}"; exit 1; }
# shellcheck disable=SC1091
. "$build/tests/test_env.sh"
(cd tests && make -j"$(nproc)" check TESTS= >>"$log" 2>&1)

mca="$COLL_GPU_MCA --mca coll_gpu_accelerator cuda --mca op ^avx"
# the runs and benchmarks of native nonblocking and persistent calls: every rank passes device
# memory to them, the user's promise (without it they are staged)
uniform="--mca coll_gpu_memory_kinds_uniform 1"
tc=$build/tests/mpi/test_collectives
tan=$build/tests/mpi/test_allreduce_native
perf=$build/perf/gpucoll_perf
bench=$build/perf/coll_gpu_bench
# mpirun_step NAME TIMEOUT NP ARGS...: an MPI run of NP ranks through the component on CUDA
mpirun_step() {
    local name=$1 limit=$2 np=$3; shift 3
    step "$name" "$limit" $MPIRUN -np "$np" $mca "$@"
}
# bench_step NAME TIMEOUT FILE CMD: a benchmark whose output is kept as $out/FILE
bench_step() {
    local name=$1 limit=$2 file=$3; shift 3
    step "$name" "$limit" bash -o pipefail -c "$* | tee $out/$file"
}

# 1. The CUDA backend, its kernels and CUDA IPC, without MPI
step "unit: CUDA backend" 120 tests/unit/test_accel_cuda
# every (op, type) pair, bit-exact against the test's reference
step "unit: reduction kernels, CUDA backend" 180 tests/unit/test_accel_reduce --backend cuda
# the node collective kernels (accel_node_kernels.h, the code the emulated tests run): 2 to 17
# "ranks" of one process on streams of their own, every kind, up to 16 lanes, many steps,
# unaligned, bursts, calls without data
step "unit: node collective kernels, CUDA backend" 180 tests/unit/test_accel_node --backend cuda
# the test's parent exports device memory (cuMemAlloc and cuMemCreate) that two forked
# peer processes on the same GPU import, read and write
step "unit: CUDA IPC, 3 processes" 120 tests/unit/test_accel_ipc --backend cuda
# shmem-transport's cuda_ipc backend: 2 and 4 processes on one GPU map each other's memory
step "shmem: cuda_ipc, 2 and 4 processes on one GPU" 120 tests/unit/test_shmem_ipc --accel=cuda 2 4

# 2. The collectives on device memory, 4 processes on one GPU (CUDA IPC for real)
step "selection: auto picks cuda" 60 \
    bash -c "$MPIRUN -np 2 $COLL_GPU_MCA --mca coll_gpu_verbose 1 tests/mpi/test_selection 2>&1 | grep -q 'backend cuda selected'"
# each allreduce algorithm, bit-exact against the tests' references, the pvar of the path taken
for alg in auto one_shot two_shot ring hierarchical recursive_doubling device_one_shot device_two_shot; do
    mpirun_step "native allreduce, 4 ranks, cuda, $alg" 120 4 \
        --mca coll_gpu_allreduce_algorithm $alg "$tan" --device=cuda --big-count=4194304
done
# across 2 emulated nodes of 2 on the one GPU: the kernel's flags in the pinned stage, its proxy
# over UCX between the "nodes" (the CUDA flag loads of host memory, only a GPU can check)
mpirun_step "native allreduce, 4 ranks as 2 nodes, cuda, device_hierarchical" 120 4 \
    --mca coll_gpu_ranks_per_node 2 --mca coll_gpu_allreduce_algorithm device_hierarchical \
    "$tan" --device=cuda --big-count=4194304
mpirun_step "native collectives, 4 ranks, cuda" 180 4 \
    "$build/tests/mpi/test_native_collectives" --device=cuda --big-bytes=16777216
# the device-driven rows of bcast, reduce, allgather and reduce_scatter_block (one kernel each)
mpirun_step "native collectives, 4 ranks, cuda, rows device" 180 4 \
    --mca coll_gpu_bcast_algorithm device --mca coll_gpu_reduce_algorithm device \
    --mca coll_gpu_allgather_algorithm device --mca coll_gpu_reduce_scatter_block_algorithm device \
    "$build/tests/mpi/test_native_collectives" --device=cuda --big-bytes=16777216
mpirun_step "native v-collectives, 4 ranks, cuda" 120 4 "$build/tests/mpi/test_native_vcolls" --device=cuda
mpirun_step "collectives (staged and native), 4 ranks, device/mixed, pipelined" 180 4 \
    --mca coll_gpu_staging_buffer_size 65536 "$tc" --device=cuda --kinds=device,mixed --big=4m
mpirun_step "nonblocking and persistent, 4 ranks, device" 180 4 \
    "$build/tests/mpi/test_nonblocking" --device=cuda --kinds=device,mixed
# ranks of different memory kinds in one call, default parameters: one protocol, no hang
mpirun_step "memory kinds across ranks, 4 ranks, cuda" 180 4 \
    --mca coll_gpu_staging_buffer_size 65536 "$build/tests/mpi/test_memory_kinds" --device=cuda \
    --big=4m
mpirun_step "collectives, device>host, host, device per rank, 4 ranks, cuda" 180 4 \
    --mca coll_gpu_staging_buffer_size 65536 "$tc" --device=cuda \
    --rank-kinds='device>host,host,device,device' --big=4m
# shellcheck disable=SC2086
mpirun_step "nonblocking native, 4 ranks, device" 180 4 $uniform \
    "$build/tests/mpi/test_nonblocking" --device=cuda --kinds=device --native
# shellcheck disable=SC2086
mpirun_step "persistent native, 4 ranks, device" 180 4 $uniform \
    "$build/tests/mpi/test_nonblocking" --device=cuda --kinds=device --native --persistent
# the scratch's setup started by MPI_Comm_dup/split (coll_gpu_native_setup=create), carried on
# in the background on a stack of its own (the driver's allocations and IPC exports run there):
# native from each communicator's first nonblocking or persistent call
# shellcheck disable=SC2086
mpirun_step "nonblocking and persistent native from creation, 4 ranks, device" 180 4 $uniform \
    --mca coll_gpu_native_setup create "$build/tests/mpi/test_nonblocking" --device=cuda \
    --kinds=device --persistent
for nodes in "" "--mca coll_gpu_ranks_per_node 2"; do
    # shellcheck disable=SC2086
    mpirun_step "setup in the background, 4 ranks${nodes:+ as 2 nodes}, cuda" 180 4 \
        --mca coll_gpu_native_setup create $uniform $nodes "$build/tests/mpi/test_setup_create" \
        --device=cuda --rounds=8
done
# Stream-ordered allreduce (MPIX_Allreduce_enqueue): cuStreamWaitValue32/WriteValue32 on
# IPC-mapped flags
for np in 2 4; do
    mpirun_step "stream-ordered allreduce, $np ranks, cuda" 120 "$np" "$build/tests/mpi/test_stream" --device=cuda
done
# across 2 emulated nodes: each call a host function (cuLaunchHostFunc) posting it to the
# communicator's thread and a wait on a pinned flag, captured into a CUDA graph too
mpirun_step "stream-ordered allreduce, 4 ranks as 2 nodes, cuda" 120 4 \
    --mca coll_gpu_ranks_per_node 2 "$build/tests/mpi/test_stream" --device=cuda --calls=12
# across 2 emulated nodes of 2: UCX between the nodes, CUDA IPC inside
for alg in auto ring; do
    mpirun_step "native allreduce, 4 ranks as 2 nodes, cuda, $alg" 120 4 \
        --mca coll_gpu_ranks_per_node 2 --mca coll_gpu_allreduce_algorithm $alg "$tan" --device=cuda
done
mpirun_step "native collectives, 4 ranks as 2 nodes, cuda" 180 4 \
    --mca coll_gpu_ranks_per_node 2 "$build/tests/mpi/test_native_collectives" --device=cuda
mpirun_step "native bcast two-level, 4 ranks as 2 nodes, cuda" 120 4 \
    --mca coll_gpu_ranks_per_node 2 "$build/tests/mpi/test_bcast_native" --device=cuda --big-bytes=16777216

# 3. The issues' targets: float allreduce on 4 ranks, native >= 20x the staged path's
# bandwidth at 256 MiB, 8 B latency <= 30 us; nonblocking overlap >= 90 % from 1 MiB, a
# persistent start <= 1 us of host time, a stream-ordered allreduce back to the host <= 2 us
# (-F stream; -F graph: the same call captured into a CUDA graph, launched)
bench_step "bench: native allreduce, 4 ranks, cuda, 8 B - 256 MiB" 180 bench-native1.txt \
    "$MPIRUN -np 4 $mca $perf -o allreduce -m device -a cuda -b 8 -e 256M -f 16 -n 20 -w 3 -T 1"
# The first GPU check's 8-byte native allreduce took 1.1 ms on 4 ranks sharing the GPU (463 us
# on 2): most likely the GPU time-slicing between the processes' contexts.  Under MPS they share
# one: the same latency bench there tells (skipped where the machine has no MPS daemon).
mps=$work/mps
step "bench: native, stream and graph allreduce under MPS, 4 ranks, cuda, 8 B - 64 KiB" 180 bash -c "
    command -v nvidia-cuda-mps-control >/dev/null || exit 77
    mkdir -p $mps/pipe $mps/log
    export CUDA_MPS_PIPE_DIRECTORY=$mps/pipe CUDA_MPS_LOG_DIRECTORY=$mps/log
    nvidia-cuda-mps-control -d || exit 77
    $MPIRUN -np 4 $mca -x CUDA_MPS_PIPE_DIRECTORY $perf -o allreduce -m device -a cuda -b 8 \
        -e 64K -f 8 -n 200 -w 10 | tee $out/bench-native-mps.txt
    rc=\${PIPESTATUS[0]}
    # the stream-ordered forms: one kernel per call whose blocks wait for the peers' (under
    # time-slicing a waiting kernel holds the GPU for its slice; under MPS they run together)
    for form in stream graph; do
        [ \$rc -eq 0 ] || break
        $MPIRUN -np 4 $mca -x CUDA_MPS_PIPE_DIRECTORY $perf -o allreduce -m device -a cuda \
            -F \$form -b 8 -e 64K -f 8 -n 200 -w 10 | tee $out/bench-\$form-mps.txt
        rc=\${PIPESTATUS[0]}
    done
    # the device-driven rows against one_shot and staged: one launch and one wait per call
    for alg in device_one_shot device_two_shot staged; do
        [ \$rc -eq 0 ] || break
        $MPIRUN -np 4 $mca -x CUDA_MPS_PIPE_DIRECTORY --mca coll_gpu_allreduce_algorithm \$alg \
            $perf -o allreduce -m device -a cuda -b 8 -e 256M -f 8 -n 50 -w 5 -T 1 | tee $out/bench-\$alg-mps.txt
        rc=\${PIPESTATUS[0]}
    done
    echo quit | nvidia-cuda-mps-control
    exit \$rc"
# where an 8-byte call's time goes: every driver call and kernel launch timed, per rank
bench_step "profile: native allreduce 8 B, 4 ranks, ACCEL_CUDA_PROFILE" 60 bench-profile.txt \
    "$MPIRUN -np 4 $mca -x ACCEL_CUDA_PROFILE=1 $perf -o allreduce -m device -a cuda -b 8 -e 8 -n 2000 -w 10 -i 0 2>&1"
for form in nonblocking persistent stream graph; do
    bench_step "bench: $form allreduce, 4 ranks, cuda, 8 B - 64 MiB" 120 bench-$form.txt \
        "$MPIRUN -np 4 $mca $uniform $perf -o allreduce -m device -a cuda -F $form -b 8 -e 64M -f 8 -n 50 -w 5 -T 0.5"
done
# across 2 emulated nodes: a host function and a wait per call (captured: -F graph)
for form in stream graph; do
    bench_step "bench: $form allreduce, 4 ranks as 2 nodes, cuda, 8 B - 1 MiB" 90 bench-$form-2nodes.txt \
        "$MPIRUN -np 4 $mca --mca coll_gpu_ranks_per_node 2 $perf -o allreduce -m device -a cuda -F $form -b 8 -e 1M -f 16 -n 50 -w 5 -T 0.5"
done
# the persistent start's host time without the communicator's thread polling between calls
# (coll_gpu_native_thread_spin 0: every post wakes it), against bench-persistent.txt's auto
bench_step "bench: persistent allreduce, thread not polling, 4 ranks, cuda, 8 B - 32 KiB" 60 \
    bench-persistent-nopoll.txt \
    "$MPIRUN -np 4 $mca $uniform --mca coll_gpu_native_thread_spin 0 $perf -o allreduce -m device -a cuda -F persistent -b 8 -e 32K -f 8 -n 200 -w 5 -T 0.5"
bench_step "bench: staged allreduce (native=0), 4 ranks, cuda, 8 B - 256 MiB" 180 bench-native0.txt \
    "$MPIRUN -np 4 $mca --mca coll_gpu_native 0 $perf -o allreduce -m device -a cuda -b 8 -e 256M -f 16 -n 10 -w 2 -T 0.5"
# Reduction kernels against a device-to-device copy of the same bytes (float sum, 2 and 8
# inputs, 64 MiB and 1 GiB per buffer); the transport's puts over cuda_ipc
bench_step "bench: reduction kernels, cuda" 120 bench-reduce-cuda.txt "perf/accel_reduce_bench --backend cuda"
bench_step "bench: shmem put, cuda_ipc, 2 processes" 120 bench-shmem-ipc.txt "perf/cgt_bench -b ipc -a cuda"

# 4. The rest of the coverage
if [ "$quick" -eq 0 ]; then
    mpirun_step "collectives, 3 ranks, managed/pinned" 120 3 "$tc" --device=cuda --kinds=managed,pinned --small-only
    mpirun_step "collectives, 4 ranks, unpipelined" 120 4 \
        --mca coll_gpu_staged_pipeline 0 "$tc" --device=cuda --kinds=device --small-only
fi
# MPI_Reduce_local on device buffers: every (MPI type, op) through the component's kernels
mpirun_step "reduce_local: kernels through the component, device" 120 2 \
    "$build/tests/mpi/test_reduce_local" --device=cuda --kinds=device
# transport teams with real CUDA IPC: 4 processes on one GPU, as 1 node and as 2 emulated nodes
mpirun_step "teams: transport check, 4 ranks on one GPU" 120 4 \
    --mca coll_gpu_transport_check 1 "$build/tests/mpi/test_team" --device=cuda --kinds=device --cycles=3
mpirun_step "teams: transport check, 4 ranks as 2 nodes (ucx)" 120 4 \
    --mca coll_gpu_transport_check 1 --mca coll_gpu_ranks_per_node 2 \
    "$build/tests/mpi/test_team" --device=cuda --kinds=device --cycles=3
# alltoall across 2 emulated nodes of 2 (UCX between them): direct against node-aggregated
# hierarchical, to check coll_gpu_alltoall_hierarchical's band (the cost model's: from 64 nodes
# up to 32 B blocks, on nodes of 8 H200) where the model's copy launches are real ones
for alg in direct hierarchical; do
    [ "$quick" -eq 1 ] || bench_step "bench: alltoall $alg, 4 ranks on 2 emulated nodes, cuda device" 90 \
        bench-alltoall-$alg-nodes.txt \
        "$MPIRUN -np 4 $mca --mca coll_gpu_ranks_per_node 2 --mca coll_gpu_alltoall_algorithm $alg $perf -o alltoall -m device -a cuda -b 8 -e 1M -f 4 -n 50 -w 5"
done
# alltoall direct on one node: a step's blocks in one strided copy (cuMemcpy2DAsync) where
# there was a copy per destination; 8 B to 1 MiB blocks, to compare with the cost model's
# launch-bound times (docs/cost-model.md, alltoall)
[ "$quick" -eq 1 ] || bench_step "bench: alltoall direct, 4 ranks on one node, cuda device" 90 \
    bench-alltoall-direct-node.txt \
    "$MPIRUN -np 4 $mca --mca coll_gpu_alltoall_algorithm direct $perf -o alltoall -m device -a cuda -b 8 -e 1M -f 8 -n 50 -w 5"
# Host buffers: what the component costs a host allreduce when a GPU is present
if [ "$quick" -eq 0 ]; then
    bench_step "bench: host allreduce without coll/gpu, 4 ranks" 90 bench-allreduce-host-without.txt \
        "$MPIRUN -np 4 --mca coll ^gpu --mca op ^avx $bench -c allreduce -m host -b 8 -e 64K -n 2000"
    bench_step "bench: host allreduce with coll/gpu (cuda backend), 4 ranks" 90 bench-allreduce-host-with.txt \
        "$MPIRUN -np 4 $mca $bench -c allreduce -m host -b 8 -e 64K -n 2000"
fi

# 5. The nccl-tests-style sweep: 4 processes on the GPU, device buffers, every result checked.
# -T 0.5 caps each size's timed loop near half a second (the largest sizes run 1-2 timed
# calls); each row is written to the JSON as it comes, so a cut-short run keeps its rows.
if [ "$sweep_max" != 0 ] && [ "$quick" -eq 0 ]; then
    sweep_plot=()
    for coll in allreduce reduce_scatter allgather bcast; do
        step "sweep: $coll, 4 ranks, cuda device, 8 B - $sweep_max" 70 \
            bash -o pipefail -c "$MPIRUN -np 4 $mca $perf -o $coll -m device -a cuda -b 8 -e $sweep_max -f 2 -n 20 -w 2 -T 0.5 --json $out/sweep-$coll.json --csv $out/sweep-$coll.csv | tee $out/sweep-$coll.txt"
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
skipped=$(printf '%s\n' "${results[@]}" | grep -c '^SKIP')
say "$(( ${#results[@]} - failed - skipped )) passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
