#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Wall time of host-buffer MPI_Allreduce with and without coll/gpu (active,
# accelerator=emulated), on 2 and 4 ranks, alternating the two configurations
# so that machine noise hits both alike.  Prints, per size, the best of the
# repetitions' average latencies and their ratio.
#
#   perf/host_overhead.sh [--reps R] [--iters N] [--max-bytes B]
set -euo pipefail
reps=5 iters=2000 max_bytes=65536
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    *) echo "usage: $0 [--reps R] [--iters N] [--max-bytes B]" >&2; exit 2 ;;
    esac
done
# shellcheck source=perf/perf_env.sh
. "$(dirname "$0")/perf_env.sh"
bench=$top_build/perf/coll_gpu_bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for np in 2 4; do
    for r in $(seq "$reps"); do
        # coll ^gpu: not an installed copy (make install) from Open MPI's own directory either
        $MPIRUN -np "$np" --mca coll ^gpu "$bench" -c allreduce -m host -b 8 -e "$max_bytes" -n "$iters" \
            >"$out/without.$np.$r"
        $MPIRUN -np "$np" $COLL_GPU_MCA --mca coll_gpu_accelerator emulated "$bench" -c allreduce \
            -m host -b 8 -e "$max_bytes" -n "$iters" >"$out/with.$np.$r"
    done
    echo "# $np ranks, host buffers, MPI_Allreduce (float sum), best of $reps runs of $iters calls"
    printf '%10s %14s %14s %8s\n' bytes "without_us" "coll/gpu_us" ratio
    # best (lowest) average per size and configuration; plain awk (Debian's mawk)
    awk '!/^#/ { print (FILENAME ~ /\/with\./ ? "w" : "o"), $1, $2 }' \
        "$out"/without."$np".* "$out"/with."$np".* | sort -k2,2n |
        awk '{ if (!(($1, $2) in best) || $3 < best[$1, $2]) best[$1, $2] = $3
               if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
             END { for (i = 0; i < n; i++) { s = order[i]
                       printf "%10s %14.2f %14.2f %8.3f\n", s, best["o", s], best["w", s],
                              best["w", s] / best["o", s] } }'
done
