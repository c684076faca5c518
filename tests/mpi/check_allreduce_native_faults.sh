#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Failures inside a native MPI_Allreduce (test_allreduce_native_faults, emulated device
# memory):
#   - an accelerator copy (memcpy) or reduction failing on one rank, one_shot, two_shot and
#     ring and hierarchical (several steps: small scratch), 2 and 3 ranks, one node and emulated nodes: that rank gets MPI_ERR_OTHER, no rank
#     hangs, the next allreduce on the communicator is native and correct; the help message
#     names MPI_Allreduce and the failed accelerator call (emuMemcpy, the reduction);
#   - a rank killed (SIGKILL) while its peers wait for it inside a native allreduce (two_shot,
#     ring: its neighbours and the others; device_one_shot: their kernels): the survivors return an error (the transport sees
#     the dead pid) and print so before mpirun tears the job down, in bounded time with no
#     coll_gpu_transport_timeout (the default: a dead peer is found by evidence, not a clock);
#     and across emulated nodes (hierarchical, the closing agreement through node leaders, in
#     one and in three rounds; hierarchical_doubling on 2+2+1) under mpirun --enable-recovery:
#     every survivor returns an error;
#   - hierarchical_doubling's and hierarchical_rabenseifner's accelerator faults on 4 nodes of 1
#     and 2+2+1, and a rank killed inside each on 2+2+1;
#   - the same accelerator faults inside MPI_Reduce_scatter_block hierarchical_halving and
#     MPI_Allgather hierarchical_doubling (copies only) on 4 nodes of 1 and 2+2+1, bcast,
#     reduce, gather and scatter binomial, and gather and scatter hierarchical with rails on 3
#     nodes of 2 (test_allreduce_native_faults --coll=);
#   - the device-driven rows' launch failing on one rank: allreduce device_one_shot and
#     device_two_shot, device_hierarchical across 2 emulated nodes, and the device row of
#     reduce_scatter_block, allgather, bcast and reduce.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

no_aggregate=$CHECK_NO_HELP_AGGREGATE
EMU="coll_gpu_accelerator=emulated $no_aggregate"
# one-shot steps of 4 KiB and two-shot chunks of 16 KiB: every call has many steps
SMALL="coll_gpu_native_chunk_size=16384 coll_gpu_allreduce_one_shot_max_bytes=4096"

# Open MPI 4.1 loses some help messages on their way to mpirun: the failed calls are looked
# for in the output of all runs together.
ALL_LOGS="$CHECK_LOGDIR/all_faults.log"
: >"$ALL_LOGS"
for np in 2 3; do
    for alg in one_shot two_shot ring hierarchical; do
        check_run "$np ranks, $alg, accelerator faults" $np \
            "$EMU $SMALL coll_gpu_allreduce_algorithm=$alg" test_allreduce_native_faults
        [ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
    done
done
# device_one_shot (one kernel per call: its launch fails under the reduction's fault plan), 2 and
# 3 ranks: every rank returns the error (the failed rank's slot at its peers, read after their
# wait), the next call is right (the area outlives the peers' reads at MPI_Comm_free)
for np in 2 3; do
    check_run "$np ranks, device_one_shot, launch faults" $np \
        "$EMU coll_gpu_allreduce_algorithm=device_one_shot" test_allreduce_native_faults \
        --count=1000 --reduce-faults-only
    [ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
done
# device_two_shot alike, with calls of several steps inside the kernel (1 MiB each)
check_run "3 ranks, device_two_shot, launch faults" 3 \
    "$EMU coll_gpu_allreduce_algorithm=device_two_shot" test_allreduce_native_faults \
    --count=600000 --reduce-faults-only
[ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
# device_hierarchical across 2 emulated nodes: a rank whose launch fails still hands its proxy
# every step (the kernel without data), so the other nodes' proxies and kernels finish
check_run "4 ranks, 2 emulated nodes, device_hierarchical, launch faults" 4 \
    "$EMU coll_gpu_ranks_per_node=2 coll_gpu_allreduce_algorithm=device_hierarchical" \
    test_allreduce_native_faults --count=600000 --reduce-faults-only
[ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
# the device row of reduce_scatter_block, allgather, bcast and reduce (one kernel per call, its
# launch failing under the same plan; the data-movement kinds too), several steps for one
for coll in reduce_scatter_block allgather bcast reduce; do
    check_run "3 ranks, $coll device row, launch faults" 3 \
        "$EMU coll_gpu_${coll}_algorithm=device" test_allreduce_native_faults --coll=$coll \
        --count=1000 --reduce-faults-only
    [ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
done
check_run "3 ranks, allgather device row of several steps, launch faults" 3 \
    "$EMU coll_gpu_allgather_algorithm=device" test_allreduce_native_faults --coll=allgather \
    --count=200000 --reduce-faults-only
[ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
# hierarchical across emulated nodes: one and two ranks per node (gets between nodes)
for rpn in 1 2; do
    check_run "3 ranks, $rpn per node, hierarchical, accelerator faults" 3 \
        "$EMU $SMALL coll_gpu_ranks_per_node=$rpn coll_gpu_allreduce_algorithm=hierarchical" \
        test_allreduce_native_faults
    [ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
done
# the outcome through the agreement in rounds between node leaders (5 nodes of 1, radix 2: 3)
check_run "5 ranks, 1 per node, hierarchical, agreement radix 2, accelerator faults" 5 \
    "$EMU $SMALL coll_gpu_ranks_per_node=1 coll_gpu_agreement_radix=2 coll_gpu_allreduce_algorithm=hierarchical" \
    test_allreduce_native_faults
[ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
# hierarchical_doubling: 4 nodes of 1 (every rank reduces in every round) and 2+2+1 (an extra
# node pairs up; ranks 1 and 3 wait only on their leader).  (The faults hit rank 0 or the last
# rank, which must reduce: on 3 nodes of 1 rank 0 is the extra, which never does.)
for spec in "4 1" "5 2"; do
    read -r np rpn <<<"$spec"
    for alg in hierarchical_doubling hierarchical_rabenseifner; do
        check_run "$np ranks, $rpn per node, $alg, accelerator faults" $np \
            "$EMU $SMALL coll_gpu_ranks_per_node=$rpn coll_gpu_allreduce_algorithm=$alg" \
            test_allreduce_native_faults
        [ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
    done
done
# the leaders' algorithms of reduce_scatter_block (hierarchical_halving), allgather
# (hierarchical_doubling, copies only), bcast and reduce (binomial, the last rank the root:
# several chunks; the faults hit rank 0 or the last rank, which must copy or reduce: on 4 nodes
# of 1 rank 0 is a leaf alone on its node, which in bcast gets straight into its buffer and in
# reduce reduces nothing, hence bcast on 2 nodes of 2, where rank 0 loads from its leader), gather
# and scatter (binomial, copies only: on 4 nodes of 1 gather, on 2 of 2 scatter, and both on 2+2+1)
# on the same layouts: the same outcome on every rank
for spec in "4 1" "5 2" "4 2"; do
    read -r np rpn <<<"$spec"
    for coll_alg in reduce_scatter_block:hierarchical_halving allgather:hierarchical_doubling bcast:binomial reduce:binomial gather:binomial scatter:binomial; do
        coll=${coll_alg%%:*}
        alg=${coll_alg#*:}
        # (bcast's faulting ranks must copy: see above; the others on 4 nodes of 1 and 2+2+1)
        case "$spec $coll" in "4 1 bcast" | "4 1 reduce" | "4 2 reduce"* | "4 2 allgather" | "4 1 scatter" | "4 2 gather") continue ;; esac
        check_run "$np ranks, $rpn per node, $coll $alg, accelerator faults" $np \
            "$EMU $SMALL coll_gpu_ranks_per_node=$rpn coll_gpu_${coll}_algorithm=$alg" \
            test_allreduce_native_faults --coll=$coll --count=10007
        [ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
    done
done
# gather and scatter hierarchical on 3 nodes of 2 to the last rank: with rails (the default) the
# root's neighbour carries the middle node (copies only; rank 0 copies its chunk, the root its
# node's and the carried runs)
for coll in gather scatter; do
    check_run "6 ranks, 2 per node, $coll hierarchical (rails), accelerator faults" 6 \
        "$EMU $SMALL coll_gpu_ranks_per_node=2 coll_gpu_${coll}_algorithm=hierarchical" \
        test_allreduce_native_faults --coll=$coll --count=10007
    [ "$CHECK_RESULT" = SKIP ] || cat "$LAST_LOG" >>"$ALL_LOGS"
done
if [ -s "$ALL_LOGS" ]; then
    LAST_LOG=$ALL_LOGS
    check_expect_output "help messages name the calls and the failed accelerator calls" \
        "coll/gpu" "Call: +MPI_Allreduce on rank" "Call: +MPI_Reduce_scatter_block on rank" \
        "Call: +MPI_Allgather on rank" "Call: +MPI_Bcast on rank" "Call: +MPI_Reduce on rank" "Call: +MPI_Gather on rank" "Call: +MPI_Scatter on rank" "Failed: +emuMemcpy" "Failed: +emuReduce" \
        "EMULATED_ERROR_INJECTED" "Failed on: +rank [0-9]+ \\(MPI error class"
fi

# The kill: mpirun ends the job when a rank dies, so the survivors' line is what is checked,
# and the job's duration (a hang would last the test's timeout).
check_kill() {
    local alg=$1 label="3 ranks, one killed inside a native allreduce ($1)" log reports try rc
    shift
    local extra=("$@") # more arguments of the test (device_one_shot: a call its area takes)
    local start_ms elapsed_ms
    # shellcheck disable=SC2086
    check_mca_args $CHECK_DEFAULT_MCA $EMU \
        coll_gpu_allreduce_algorithm=$alg
    log="$CHECK_LOGDIR/kill-$alg.log"
    LAST_LOG=$log
    echo "=== $label"
    # The evidence: a survivor's own line (also written into a file: mpirun may drop a dying
    # job's output) says its call returned an error; when mpirun's teardown kills it before it
    # gets to write (the race is mpirun's), the component's help message, printed inside the
    # failing call, says the same.  Open MPI 4.1 may lose that message too: up to 3 jobs.
    reports="$CHECK_LOGDIR/reports-$alg"
    mkdir -p "$reports"
    for try in 1 2 3; do
        rm -f "$reports"/survivor.*
        start_ms=$(($(date +%s%N) / 1000000))
        timeout -k 5 60 "$MPIRUN" -n 3 "${CHECK_MCA_ARGS[@]}" \
            "$CHECK_BIN_DIR/test_allreduce_native_faults" --kill --report="$reports" "${extra[@]}" \
            >"$log" 2>&1
        rc=$?
        elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms)) # shell arithmetic: no bc needed
        echo "    job $try: exit $rc after $elapsed_ms ms"
        cat "$reports"/survivor.* >>"$log" 2>/dev/null
        # a hang, or a survivor whose call succeeded, fails at once: no retry hides those
        if grep -aq 'returned success' "$log" || [ "$elapsed_ms" -ge 4500 ]; then
            break
        fi
        if grep -aqE 'survivor rank [0-9]+ returned error' "$log" ||
            grep -aqE 'Detail: +rank 2 \(pid [0-9]+, on this node\) has died' "$log"; then
            break
        fi
    done
    if grep -aqE '^SKIP:' "$log"; then
        check_count SKIP "$label"
    elif { grep -aqE 'survivor rank [0-9]+ returned error' "$log" ||
        grep -aqE 'Detail: +rank 2 \(pid [0-9]+, on this node\) has died' "$log"; } &&
        ! grep -aq 'returned success' "$log" && [ "$elapsed_ms" -lt 4500 ]; then
        sort -u "$reports"/survivor.* 2>/dev/null | sed 's/^/    /'
        echo "    PASS"
        check_count PASS "$label"
    else
        cat "$log"
        echo "    FAIL: no survivor reported an error, or the job took ${elapsed_ms} ms"
        check_count FAIL "$label"
    fi
}

for alg in two_shot ring; do
    check_kill $alg
done
# device_one_shot: the survivors' kernels wait for the dead rank's flags; their host waits watch
# the node's processes, stand in for its flags and fail the call
check_kill device_one_shot --count=1000
check_kill device_two_shot --count=600000

# Across emulated nodes the death must reach every survivor, also those that wait on no other
# node in the algorithm: 5 ranks on 2+2+1 (hierarchical: ranks 1 and 3 own no shard and wait
# only on their node's leader, which waits on the dead rank 4, then fails the closing agreement
# it leads) and 5 nodes of 1 with coll_gpu_agreement_radix=2 (the agreement in 3 rounds).
# mpirun --enable-recovery keeps the survivors running, so each of the 4 must report an error.
check_kill_all() {
    local label="5 ranks, rank 4 killed inside a native allreduce: $1" log reports rc
    local start_ms elapsed_ms errors
    shift
    # shellcheck disable=SC2086
    check_mca_args $CHECK_DEFAULT_MCA $EMU coll_gpu_allreduce_algorithm=${KILL_ALG:-hierarchical} "$@"
    log="$CHECK_LOGDIR/kill-all-$#.log"
    LAST_LOG=$log
    reports="$CHECK_LOGDIR/reports-all-$#"
    echo "=== $label"
    rm -rf "$reports"
    mkdir -p "$reports"
    start_ms=$(($(date +%s%N) / 1000000))
    timeout -k 5 60 "$MPIRUN" -n 5 --enable-recovery "${CHECK_MCA_ARGS[@]}" \
        "$CHECK_BIN_DIR/test_allreduce_native_faults" --kill --report="$reports" >"$log" 2>&1
    rc=$?
    elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
    cat "$reports"/survivor.* >>"$log" 2>/dev/null
    errors=$(cat "$reports"/survivor.* 2>/dev/null | grep -c 'returned error' || true)
    echo "    exit $rc after $elapsed_ms ms, $errors survivors returned an error"
    if grep -aqE '^SKIP:' "$log"; then
        check_count SKIP "$label"
    elif [ "$errors" = 4 ] && ! grep -aq 'returned success' "$log" &&
        [ "$elapsed_ms" -lt 20000 ]; then
        sort -u "$reports"/survivor.* | sed 's/^/    /'
        echo "    PASS"
        check_count PASS "$label"
    else
        cat "$log"
        echo "    FAIL: not every survivor returned an error (or the job took ${elapsed_ms} ms)"
        check_count FAIL "$label"
    fi
}

check_kill_all "2+2+1 emulated nodes" coll_gpu_ranks_per_node=2
check_kill_all "5 emulated nodes of 1, agreement radix 2" coll_gpu_ranks_per_node=1 \
    coll_gpu_agreement_radix=2
# hierarchical_doubling on 2+2+1: rank 4 leads the third node, whose partner (rank 2) gives up
# on it; rank 0 (the extra) waits for rank 2's hand-back, ranks 1 and 3 for their leaders
KILL_ALG=hierarchical_doubling check_kill_all "2+2+1 emulated nodes, hierarchical_doubling" \
    coll_gpu_ranks_per_node=2
KILL_ALG=hierarchical_rabenseifner check_kill_all "2+2+1 emulated nodes, hierarchical_rabenseifner" \
    coll_gpu_ranks_per_node=2

check_finish
