#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions coll/gpu adds to a host-buffer MPI_Allreduce, counted with
# callgrind (wall time on a shared machine is noisier than the effect).
#
#   perf/overhead.sh [--calls N] [--max INSTR]
#
# Runs perf/coll_gpu_bench --loop N on one rank under callgrind three times:
# without the component, with it on accelerator=auto (on a node without CUDA
# it declines every communicator), and with it active on accelerator=emulated
# (every call classifies its buffers).  Prints the instructions per call spent
# in bench_allreduce_loop() (inclusive) and the difference.  With --max, exits
# 1 when the active component adds more than INSTR instructions per call.
set -euo pipefail
calls=20000
max=
while [ $# -gt 0 ]; do
    case "$1" in
    --calls) calls=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    *) echo "usage: $0 [--calls N] [--max INSTR]" >&2; exit 2 ;;
    esac
done
# shellcheck source=perf/perf_env.sh
. "$(dirname "$0")/perf_env.sh"
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; exit 77; }
bench=$top_build/perf/coll_gpu_bench
[ -x "$bench" ] || { echo "$bench not built (make)"; exit 1; }
# libtool wrapper scripts: run the real binary under valgrind
[ -x "$top_build/perf/.libs/coll_gpu_bench" ] && bench=$top_build/perf/.libs/coll_gpu_bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Instructions per call in bench_allreduce_loop, inclusive.
count() {
    local name=$1; shift
    $MPIRUN -np 1 "$@" valgrind --tool=callgrind --callgrind-out-file="$out/$name.%p" \
        --toggle-collect=bench_allreduce_loop "$bench" --loop "$calls" >"$out/$name.log" 2>&1 || {
        cat "$out/$name.log" >&2; exit 1; }
    local total
    total=$(callgrind_annotate "$out/$name".* 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
    echo $(( total / calls ))
}

# --mca coll ^gpu: an installed copy (make install) would load from Open MPI's own directory
base=$(count without --mca coll ^gpu)
auto=$(count auto $COLL_GPU_MCA --mca coll_gpu_accelerator auto)
emulated=$(count emulated $COLL_GPU_MCA --mca coll_gpu_accelerator emulated)
printf '%-44s %8s %8s\n' "8-byte MPI_Allreduce, 1 rank ($calls calls)" "instr" "added"
printf '%-44s %8d %8s\n' "without coll/gpu" "$base" "-"
printf '%-44s %8d %8d\n' "coll/gpu, accelerator=auto (no CUDA here)" "$auto" $((auto - base))
printf '%-44s %8d %8d\n' "coll/gpu active, accelerator=emulated" "$emulated" $((emulated - base))
if [ -n "$max" ] && [ $((emulated - base)) -gt "$max" ]; then
    echo "FAIL: coll/gpu adds $((emulated - base)) instructions per call (limit $max)"
    exit 1
fi
