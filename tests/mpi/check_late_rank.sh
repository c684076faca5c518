#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A slow rank is not a dead one (test_late_rank): one rank enters collectives 3 s after the
# others, three times.  With the defaults (no coll_gpu_transport_timeout) every call returns the right
# data with MPI_SUCCESS on every rank: host buffers through the native algorithms (posix, and
# UCX across emulated nodes, 2 nodes of 2 with the late rank carrying a node-aggregated
# alltoall, 2+2+1 with the leaders' algorithms of allgather and reduce_scatter_block and the
# binomial trees of bcast, reduce, gather and scatter, the late rank the leader paired beyond the
# power of two) and emulated device memory.  With coll_gpu_transport_timeout=1, a
# hang detector, the job aborts with the help message naming the call; no rank ever reports a
# wrong result first.  And ranks that read the call board late (a test parameter) stay in step.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"
HOST="$EMU coll_gpu_host_buffers=1"

check_run "2 ranks, host buffers, one late by 3 s" 2 "$HOST" test_late_rank --kinds=host
check_run "3 ranks, device memory, one late by 3 s" 3 "$EMU" test_late_rank
check_run "2 ranks on 2 emulated nodes, host buffers, one late by 3 s" 2 \
    "$HOST coll_gpu_ranks_per_node=1" test_late_rank --kinds=host --late-rank=0 --free-waits
# 2 nodes of 2: the late rank a carrier of the node-aggregated alltoall (local rank 1)
check_run "4 ranks on 2 emulated nodes of 2, host buffers, one late by 3 s" 4 \
    "$HOST coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_late_rank --kinds=host \
    --late-rank=3 --free-waits
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the late rank in a node-aggregated alltoall" \
    "MPI_Alltoall on MPI_COMM_WORLD: .*host memory: hierarchical \(2 nodes, some with several ranks\)"
# 2+2+1 with the leaders' algorithms forced: the late rank the leader of node 0, the extra that
# hands its part to node 1 first (allgather hierarchical_doubling, reduce_scatter_block
# hierarchical_halving), and a leader or a child in the binomial trees of bcast, reduce, gather
# and scatter as the roots rotate
check_run "5 ranks on 2+2+1 emulated nodes, host buffers, leaders' algorithms, node 0's leader late by 3 s" 5 \
    "$HOST coll_gpu_ranks_per_node=2 coll_gpu_allgather_algorithm=hierarchical_doubling coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving coll_gpu_bcast_algorithm=binomial coll_gpu_reduce_algorithm=binomial coll_gpu_gather_algorithm=binomial coll_gpu_scatter_algorithm=binomial coll_gpu_verbose=10" \
    test_late_rank --kinds=host --late-rank=0 --free-waits
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the late rank in the leaders' algorithms" \
    "MPI_Allgather on MPI_COMM_WORLD: .*host memory: hierarchical_doubling" \
    "MPI_Reduce_scatter_block on MPI_COMM_WORLD: .*host memory: hierarchical_halving" \
    "MPI_Bcast on MPI_COMM_WORLD: .*host memory: binomial" \
    "MPI_Reduce on MPI_COMM_WORLD: .*host memory: binomial" \
    "MPI_Gather on MPI_COMM_WORLD: .*host memory: binomial" \
    "MPI_Scatter on MPI_COMM_WORLD: .*host memory: binomial"
# late readers of the call board (coll_gpu_board_test_delay_us: a rank sleeps 2 ms between
# reading a word of its node leader's or peer's and reading whether that rank went on): the
# leader of 2 emulated nodes of 2 finishes a call, publishes its verdict and arrives at the
# staged path's next word while its non-leader still holds the old verdict.  Reading that as
# "the leader passed the call" put the non-leader one call behind its peers and hung the next
# device call (seen under load across real hosts, check_multihost.sh): every call must still
# complete with the right data, host and device, staged and native
check_run "4 ranks on 2 emulated nodes of 2, host and device memory, the call board read late" 4 \
    "$EMU coll_gpu_ranks_per_node=2 coll_gpu_board_test_delay_us=2000" test_collectives \
    --kinds=host,device --small-only --case-timeout=30
# the timeout set below the lateness: an abort naming the call, on every rank alike; never a
# result reported wrong (what happened before: wrong sums returned as success, then a hang)
check_run_aborts "still alive" "2 ranks, host buffers, coll_gpu_transport_timeout 1, one late by 3 s" 2 \
    "$HOST coll_gpu_transport_timeout=1 $CHECK_NO_HELP_AGGREGATE" test_late_rank --kinds=host
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the abort names the call and the timeout" \
    "Call: +MPI_[A-Za-z]+ on rank [01] of a communicator of 2 ranks" "coll_gpu_transport_timeout"
if grep -aqE "iteration [0-9]+: .*(expected|returned)" "$LAST_LOG"; then
    echo "    a wrong result or an error before the abort: FAIL"
    check_count FAIL "timeout: no wrong result before the abort"
else
    echo "    no wrong result before the abort: PASS"
    check_count PASS "timeout: no wrong result before the abort"
fi

check_finish
