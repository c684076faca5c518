#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per 8-byte MPI_Allreduce in host-buffer mode (coll_gpu_host_buffers=1: the
# native algorithms on host memory), 2 ranks, counted with callgrind on rank 0 (wall time on a
# shared machine is noisier than the effect).
#
#   perf/host_native_count.sh [--calls N] [--reps R] [--top K]
#
# Runs perf/coll_gpu_bench --loop N and --loop 3N on 2 ranks (accelerator=emulated, rank 0 under
# callgrind, collection on in bench_allreduce_loop() only), R times each, and prints the
# difference per call, which cancels the first call's setup: in all, and per function
# (exclusive, the K largest).  The spin waits (rank 0 waits for rank 1's words and signals:
# opal_progress and the progress callbacks, cgt_team_wait_slot, the call board's waits and
# liveness checks, and what they call) change from run to run with the scheduling, and only
# add: each function's count is the least of the R runs.  "without waits" is the rest, the
# same in every run.
set -euo pipefail
calls=4000
reps=3
top=40
while [ $# -gt 0 ]; do
    case "$1" in
    --calls) calls=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    *) echo "usage: $0 [--calls N] [--reps R] [--top K]" >&2; exit 2 ;;
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

# Exclusive instructions per function of a run of n calls, "function count" lines (the file
# and object names dropped: a function's entries summed).
count() {
    local n=$1 r=$2
    # shellcheck disable=SC2086
    $MPIRUN -np 1 $COLL_GPU_MCA --mca coll_gpu_accelerator emulated --mca op ^avx \
        --mca coll_gpu_host_buffers 1 valgrind --tool=callgrind \
        --callgrind-out-file="$out/cg.$n" --toggle-collect=bench_allreduce_loop "$bench" \
        --loop "$n" : -np 1 $COLL_GPU_MCA --mca coll_gpu_accelerator emulated --mca op ^avx \
        --mca coll_gpu_host_buffers 1 "$bench" --loop "$n" >"$out/log.$n" 2>&1 || {
        cat "$out/log.$n" >&2; exit 1; }
    callgrind_annotate --inclusive=no --auto=no --threshold=100 "$out/cg.$n" 2>/dev/null |
        awk '/^ *[0-9,]+ / {
                 v = $1; gsub(",", "", v)
                 line = $0; sub(/^ *[0-9,]+ +(\([^)]*\) +)?/, "", line); sub(/ \[.*$/, "", line)
                 if (line ~ /PROGRAM TOTALS/) { print "TOTAL", v; next }
                 if (index(line, ":") > 0) line = substr(line, index(line, ":") + 1)
                 sum[line] += v }
             END { for (f in sum) print f, sum[f] }' >"$out/fn.$n.$r"
}

n1=$calls
n2=$((3 * calls))
for r in $(seq "$reps"); do
    count "$n1" "$r"
    count "$n2" "$r"
done
# each function's least count over the repetitions, of each length
for n in "$n1" "$n2"; do
    cat "$out"/fn."$n".* | awk '!($1 in min) || $2 < min[$1] { min[$1] = $2 }
                                 END { for (f in min) print f, min[f] }' >"$out/fn.$n"
done
wait_re='^(opal_progress|0x[0-9a-f]+|cgt_team_wait_slot|cgt_team_progress|coll_gpu_teams_progress|coll_gpu_setup_progress|coll_gpu_setup_pause|coll_gpu_team_wait_progress|coll_gpu_board_wait_alive|coll_gpu_board_arrive|__tls_get_addr|sched_yield|clock_gettime.*|clock_nanosleep.*|nanosleep|swapcontext.*|cgt_proc_.*|kill|open|read|close|__vfprintf_internal|__vsnprintf_internal|snprintf|_IO_.*|__str[a-z0-9_]*|____strtoul_l_internal|strtoul|_itoa_word|__pthread_.*asynccancel|do_lookup_x|coll_gpu_setup_allgather|coll_gpu_native_async_on_thread)$'
awk -v n1="$n1" -v n2="$n2" -v reps="$reps" -v top="$top" -v wre="$wait_re" '
    FNR == 1 { file++ }
    { v[$1, file] = $2; seen[$1] = 1 }
    END {
        d = n2 - n1
        total = (v["TOTAL", 2] - v["TOTAL", 1]) / d
        for (f in seen) {
            if (f == "TOTAL") continue
            per[f] = (v[f, 2] - v[f, 1]) / d
            if (f ~ wre) waits += per[f]; else rest += per[f]
        }
        printf "# 8-byte MPI_Allreduce, host-buffer mode, 2 ranks, rank 0: instructions per call ((%d - %d calls) / %d, least of %d runs each)\n", n2, n1, d, reps
        printf "%10.1f  in all\n%10.1f  without waits\n%10.1f  waits (scheduling-dependent; coll_gpu_board_arrive counted here: its loop spins)\n", total, rest, waits
        n = 0
        for (f in per) order[++n] = f
        for (i = 2; i <= n; i++) { k = order[i]; j = i - 1
            while (j > 0 && per[order[j]] < per[k]) { order[j + 1] = order[j]; j-- }
            order[j + 1] = k }
        for (i = 1; i <= n && i <= top; i++)
            printf "%10.1f  %s%s\n", per[order[i]], order[i], (order[i] ~ wre) ? "  (wait)" : ""
    }' "$out/fn.$n1" "$out/fn.$n2"
