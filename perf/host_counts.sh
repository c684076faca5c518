#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What one blocking MPI_Allreduce on (emulated) device memory asks of rank 0's host, per
# algorithm row, from coll/gpu's MPI_T counters (gpucoll_perf prints them under every size):
# device submissions, host waits on streams, signals to peers and waits for them, call-board
# words; with each row's time per call.  The rows alternate within every repetition, so that
# machine noise hits them alike; the counts do not vary, the times do (the best is printed).
#
#   perf/host_counts.sh [--reps R] [--iters N] [--ranks "2 4"] [--algs "one_shot device_one_shot"]
#                       [--nodes K] (K emulated nodes: coll_gpu_ranks_per_node = ranks / K)
set -euo pipefail
reps=3 iters=200 ranks="2 4" algs="one_shot device_one_shot" nodes=1
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --algs) algs=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    *) echo "usage: $0 [--reps R] [--iters N] [--ranks LIST] [--algs LIST] [--nodes K]" >&2; exit 2 ;;
    esac
done
# shellcheck source=perf/perf_env.sh
. "$(dirname "$0")/perf_env.sh"
perf=$top_build/perf/gpucoll_perf
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for np in $ranks; do
    rpn=$((np / nodes))
    for r in $(seq "$reps"); do
        for alg in $algs; do
            $MPIRUN -np "$np" $COLL_GPU_MCA --mca coll_gpu_accelerator emulated \
                --mca coll_gpu_ranks_per_node "$rpn" --mca coll_gpu_allreduce_algorithm "$alg" \
                "$perf" -o allreduce -m device -a emulated -b 8 -e 64M -f 8 -n "$iters" -w 10 \
                -i 0 -T 10 >"$out/$alg.$np.$r"
        done
    done
    echo "# $np ranks on $nodes node(s), MPI_Allreduce on emulated device memory (float sum), per call on rank 0: best time of $reps runs of $iters calls (at most 10 s a size)"
    printf '%10s %-16s %10s %6s %6s %6s %6s %6s\n' bytes algorithm time_us subm waits sigs pwaits board
    for alg in $algs; do
        awk -v alg="$alg" '
            /^ *[0-9]+ / { bytes = $1; t = $6; if (!(bytes in best) || t + 0 < best[bytes] + 0) best[bytes] = t; order[bytes] = ++n }
            /per call on rank 0/ {
                line = $0; sub(/.*host:/, "", line); gsub(/[a-z ]+/, " ", line); split(line, v, /[ ,]+/)
                counts[bytes] = sprintf("%6s %6s %6s %6s %6s", v[2], v[3], v[4], v[5], v[6])
            }
            END { for (b in best) printf "%10d %-16s %10s %s\n", b, alg, best[b], counts[b] }' \
            "$out/$alg.$np."* | sort -n
    done
done
