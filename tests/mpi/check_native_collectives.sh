#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Native MPI_Reduce_scatter_block, MPI_Allgather, MPI_Reduce, MPI_Gather and MPI_Scatter (direct,
# hierarchical), MPI_Bcast (pipelined) (test_native_collectives, emulated device
# memory whose cuda_ipc transport runs over the emulated backend's IPC):
#   - 1 to 8 ranks, auto; counts 1, odd, not a multiple of the ranks, a few hundred KiB, and
#     16 MiB per call on 3 and 4 ranks; MPI_IN_PLACE; world, odd/even split, reversed order;
#     results against references, reduce_scatter_block's blocks = MPI_Allreduce's bit for bit,
#     the same bits on every rank, the pvar of the path taken;
#   - each algorithm forced (native, staged, and the device-driven rows `device`: one kernel
#     per call, 16 MiB in 1 MiB steps inside it; also with the kernels' blocks run apart,
#     ACCEL_EMULATED_LANES=apart) and a tiny scratch that cuts every call into
#     many steps: the same digest (staged: its integer part, Open MPI's float order differing);
#   - emulated nodes (coll_gpu_ranks_per_node): every collective here runs natively across
#     nodes (gets over UCX), on device buffers (the emulated device's scratch read through
#     host scratch) and host buffers alike, also with many steps and uneven nodes, with the
#     same digests as one node (integers and copies; allreduce's order differs across nodes),
#     auto taking hierarchical for all here but bcast (reduce_scatter_block's floats checked
#     against hierarchical MPI_Allreduce, bit for bit); hierarchical, allgather
#     hierarchical_doubling, reduce_scatter_block hierarchical_halving, reduce, bcast, gather and
#     scatter binomial forced on one node = direct;
#     allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving, reduce, bcast,
#     gather and scatter binomial forced on 2+2 (device buffers), 2+2+1 (many steps) and 5 nodes
#     of 1: the same digests (integers and copies; on 2+2 floats too); auto's choice of all but
#     bcast (coll_gpu_allgather_doubling_min_nodes, coll_gpu_reduce_scatter_halving_min_nodes,
#     coll_gpu_{reduce,gather,scatter}_binomial_min_nodes and their _max_bytes lowered) on 5
#     nodes of 1 and 3 of 2, the pvar of every call;
#   - a tuning rule choosing staged for one collective; coll_gpu_verbose 10 says why;
#   - host-buffer mode (coll_gpu_host_buffers=1, --kinds=host): the same digests;
#   - a peer missing from a native MPI_Bcast, and from an MPI_Reduce across nodes: MPI_ERR_OTHER
#     and the help message, no hang.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

# (auto's staging of small calls off where the native algorithms are tested: every run but the
# EMU_AUTO ones, where the test expects small calls staged)
EMU_AUTO="coll_gpu_accelerator=emulated"
EMU="$EMU_AUTO $CHECK_NO_STAGING"
BIG=--big-bytes=16777216
TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_native_collectives.XXXXXX") || exit 1
trap 'rm -rf "$TMP" "$CHECK_LOGDIR"' EXIT
ALL_NATIVE="coll_gpu_reduce_scatter_block_algorithm=direct coll_gpu_allgather_algorithm=direct coll_gpu_bcast_algorithm=pipelined coll_gpu_reduce_algorithm=direct coll_gpu_gather_algorithm=direct coll_gpu_scatter_algorithm=direct"
ALL_STAGED="coll_gpu_reduce_scatter_block_algorithm=staged coll_gpu_allgather_algorithm=staged coll_gpu_bcast_algorithm=staged coll_gpu_reduce_algorithm=staged coll_gpu_gather_algorithm=staged coll_gpu_scatter_algorithm=staged"
TINY="coll_gpu_native_chunk_size=256 coll_gpu_allreduce_one_shot_max_bytes=1024"
# the device-driven rows (one kernel per call; gather and scatter have none)
ALL_DEVICE="coll_gpu_reduce_scatter_block_algorithm=device coll_gpu_allgather_algorithm=device coll_gpu_bcast_algorithm=device coll_gpu_reduce_algorithm=device"

for np in 1 2 5 6 7 8; do
    check_run "$np ranks, auto" $np "$EMU_AUTO" test_native_collectives
done
# auto stages the small calls (bytes of a message, or a block for gather, scatter, allgather and
# reduce_scatter_block) where the cost model has staging faster: inside a node, and across nodes
# up to the other threshold
check_run "2 ranks, auto stages small calls" 2 "$EMU_AUTO coll_gpu_verbose=10" \
    test_native_collectives
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto stages small calls inside a node" \
    "MPI_Bcast on .*: $CHECK_STAGED_WHY""_bcast_staged_max_bytes=5120\)" \
    "MPI_Reduce on .*: $CHECK_STAGED_WHY""_reduce_staged_max_bytes=2048\)" \
    "MPI_Gather on .*: $CHECK_STAGED_WHY""_gather_staged_max_bytes=20480\)" \
    "MPI_Scatter on .*: $CHECK_STAGED_WHY""_scatter_staged_max_bytes=4096\)" \
    "MPI_Allgather on .*: $CHECK_STAGED_WHY""_allgather_staged_max_bytes=20480\)" \
    "MPI_Reduce_scatter_block on .*: $CHECK_STAGED_WHY""_reduce_scatter_staged_max_bytes=7168\)" \
    "MPI_Bcast on .*device memory: pipelined" \
    "MPI_Allgather on .*device memory: direct"
check_run "6 ranks, 3 per node, auto stages small calls" 6 \
    "$EMU_AUTO coll_gpu_ranks_per_node=3 coll_gpu_verbose=10" test_native_collectives --small
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto stages small calls across nodes" \
    "MPI_Bcast on .*: $CHECK_STAGED_WHY""_bcast_staged_nodes_max_bytes=163840\)" \
    "MPI_Reduce on .*: $CHECK_STAGED_WHY""_reduce_staged_nodes_max_bytes=32768\)" \
    "MPI_Scatter on .*: $CHECK_STAGED_WHY""_scatter_staged_nodes_max_bytes=128\)" \
    "MPI_Allgather on .*: $CHECK_STAGED_WHY""_allgather_staged_nodes_max_bytes=10240\)" \
    "MPI_Reduce_scatter_block on .*: $CHECK_STAGED_WHY""_reduce_scatter_staged_nodes_max_bytes=12288\)" \
    "MPI_Scatter on .*device memory: hierarchical"

for np in 3 4; do
    check_run "$np ranks, native forced" $np "$EMU $ALL_NATIVE" test_native_collectives $BIG
    check_digest $np-native
    check_run "$np ranks, auto" $np "$EMU" test_native_collectives $BIG
    check_digest $np-auto
    check_run "$np ranks, device forced" $np "$EMU $ALL_DEVICE" test_native_collectives $BIG
    check_digest $np-device
    # the kernels' blocks apart, half of them slow (as a GPU may run them): many-step calls
    # and the calls after them, which cut the steps into lanes at other places
    ACCEL_EMULATED_LANES=apart check_run "$np ranks, device forced, lanes apart" $np \
        "$EMU $ALL_DEVICE" test_native_collectives $BIG
    check_digest $np-device-apart
    check_same_digest "$np ranks: device, lanes apart = native" $np-device-apart $np-native
    check_run "$np ranks, staged" $np "$EMU $ALL_STAGED" test_native_collectives $BIG
    check_digest $np-staged
    check_run "$np ranks, native off" $np "$EMU coll_gpu_native=0" test_native_collectives
    # 16 MiB in 256-byte chunks: tens of thousands of steps, 4 ranks on 2 loaded cores took
    # 250-300 s in CI (the default limit): twice the limit, still a hang's bound; one such
    # call (an MPI_Reduce) passed the test's 120 s per case on a slower day (Open MPI 5, CI of
    # 3dc6434): twice that too
    TEST_TIMEOUT=$((TEST_TIMEOUT * 2)) check_run "$np ranks, 1 KiB scratch halves" $np \
        "$EMU $TINY" test_native_collectives $BIG --case-timeout=240
    check_digest $np-tiny
    check_same_digest "$np ranks: auto = native" $np-auto $np-native
    check_same_digest "$np ranks: device = native" $np-device $np-native
    check_same_digest "$np ranks: many steps = native" $np-tiny $np-native
    check_same_digest "$np ranks: staged integers and copies = native" $np-staged $np-native int
    check_run "$np ranks, host buffers" $np "$EMU coll_gpu_host_buffers=1" \
        test_native_collectives --kinds=host $BIG
    check_digest $np-host
    check_same_digest "$np ranks: host buffers = device" $np-host $np-native
done
check_run "4 ranks, host buffers, one node" 4 "$EMU coll_gpu_host_buffers=1" \
    test_native_collectives --kinds=host
check_digest 4-host-small
# hierarchical forced on one node: its order is rank order there, direct's bits
check_run "4 ranks, hierarchical forced" 4 \
    "$EMU coll_gpu_allgather_algorithm=hierarchical coll_gpu_reduce_scatter_block_algorithm=hierarchical coll_gpu_reduce_algorithm=hierarchical coll_gpu_gather_algorithm=hierarchical coll_gpu_scatter_algorithm=hierarchical" \
    test_native_collectives
check_digest 4-hier
check_same_digest "4 ranks: hierarchical on one node = direct" 4-hier 4-host-small
# the leaders' algorithms forced on one node: the leader reduces (or gathers) the node in rank
# order, direct's bits
check_run "4 ranks, allgather hierarchical_doubling and reduce_scatter_block hierarchical_halving forced" 4 \
    "$EMU coll_gpu_allgather_algorithm=hierarchical_doubling coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving coll_gpu_reduce_algorithm=binomial coll_gpu_bcast_algorithm=binomial coll_gpu_gather_algorithm=binomial coll_gpu_scatter_algorithm=binomial" \
    test_native_collectives
check_digest 4-leaders
check_same_digest "4 ranks: the leaders' algorithms on one node = direct" 4-leaders 4-host-small

# emulated nodes: every collective native across nodes on device buffers too (other nodes
# read the emulated device scratch through host scratch)
check_run "4 ranks, 2 per node" 4 "$EMU coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" \
    test_native_collectives
check_digest 4-dev-nodes
[ "$CHECK_RESULT" = PASS ] && check_expect_output "rooted native across nodes, device memory" \
    "MPI_Bcast on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: pipelined" \
    "MPI_Reduce on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: hierarchical" \
    "MPI_Gather on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: hierarchical" \
    "MPI_Scatter on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: hierarchical" \
    "other nodes read device scratch through host scratch"
check_run "6 ranks, 3 per node" 6 "$EMU coll_gpu_ranks_per_node=3" test_native_collectives
check_run "4 ranks, host buffers, 2 per node" 4 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" \
    test_native_collectives --kinds=host
[ "$CHECK_RESULT" = PASS ] && check_expect_output "rooted native across nodes" \
    "MPI_Bcast on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*host memory: pipelined" \
    "MPI_Reduce on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*host memory: hierarchical" \
    "MPI_Gather on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*host memory: hierarchical" \
    "MPI_Scatter on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*host memory: hierarchical" \
    "MPI_Allgather on MPI COMM(UNICATOR)? 3 DUP.*host memory: hierarchical" \
    "MPI_Reduce_scatter_block on MPI COMM(UNICATOR)? 3 DUP.*host memory: hierarchical"
check_digest 4-host-nodes
check_same_digest "4 ranks: host buffers across nodes = one node (integers and copies)" \
    4-host-nodes 4-host-small int
# 4 KiB halves: still about a hundred steps for the largest counts (1 KiB ones took 300 s on
# 2 shared cores, the per-run limit)
check_run "4 ranks, host buffers, 2 per node, 4 KiB scratch halves" 4 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 coll_gpu_native_chunk_size=2048 coll_gpu_allreduce_one_shot_max_bytes=1024" \
    test_native_collectives --kinds=host
check_digest 4-host-nodes-tiny
check_same_digest "4 ranks across nodes: many steps = one step" 4-host-nodes-tiny 4-host-nodes
check_same_digest "4 ranks across nodes: device = host buffers" 4-dev-nodes 4-host-nodes
check_run "7 ranks, host buffers, 3 per node, 1 KiB scratch halves" 7 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=3 $TINY" test_native_collectives \
    --kinds=host --small

# allgather hierarchical_doubling (forced): 2+2 on device buffers (the emulated device's scratch
# read through host scratch), 2+2+1 with many steps and 5 nodes of 1 (one node paired beyond the
# power of two): the bits of one node
# reduce_scatter_block hierarchical_halving (forced) in the same runs: integers and copies as one
# node's (on 2 nodes its floats too: one pair of node partials, hierarchical's order)
# reduce and bcast binomial (forced) in the same runs too: reduce's integers as one node's (on 2
# nodes its floats too: two node partials, whose sum is the same either way round)
# gather and scatter binomial (forced) in the same runs: copies, one node's bits
AG_DBL="coll_gpu_allgather_algorithm=hierarchical_doubling coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving coll_gpu_reduce_algorithm=binomial coll_gpu_bcast_algorithm=binomial coll_gpu_gather_algorithm=binomial coll_gpu_scatter_algorithm=binomial"
check_run "4 ranks, 2 per node, allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving" 4 \
    "$EMU coll_gpu_ranks_per_node=2 $AG_DBL coll_gpu_verbose=10" test_native_collectives
[ "$CHECK_RESULT" = PASS ] && check_expect_output "allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving on device memory" \
    "MPI_Allgather on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: hierarchical_doubling \(coll_gpu_allgather_algorithm=hierarchical_doubling\)" \
    "MPI_Reduce_scatter_block on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: hierarchical_halving \(coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving\)" \
    "MPI_Reduce on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: binomial \(coll_gpu_reduce_algorithm=binomial\)" \
    "MPI_Bcast on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: binomial \(coll_gpu_bcast_algorithm=binomial\)" \
    "MPI_Gather on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: binomial \(coll_gpu_gather_algorithm=binomial\)" \
    "MPI_Scatter on MPI COMM(UNICATOR)? 3 DUP FROM 0: .*device memory: binomial \(coll_gpu_scatter_algorithm=binomial\)"
check_digest 4-dev-nodes-ag-dbl
check_same_digest "4 ranks: allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving across nodes = auto" 4-dev-nodes-ag-dbl \
    4-dev-nodes
check_run "5 ranks, host buffers, one node" 5 "$EMU coll_gpu_host_buffers=1" \
    test_native_collectives --kinds=host --small
check_digest 5-host-small
check_run "5 ranks, host buffers, 2 per node, allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving, 1 KiB scratch halves" 5 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 $AG_DBL $TINY" test_native_collectives \
    --kinds=host --small
check_digest 5-host-nodes-ag-dbl-tiny
check_same_digest "5 ranks: allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving on 2+2+1, many steps = 1 node (integers and copies)" \
    5-host-nodes-ag-dbl-tiny 5-host-small int
# rails (coll_gpu_tree_rails, on in the tests: bcast's and reduce's binomial chunks carried by each
# node's ranks in turn) change who reduces a chunk, not the order: every bit as without them,
# floats included, and with slow streams (every stream operation of the emulated device 100 us
# late: a chunk's leader reading inputs before they landed, or overwriting a half still read)
check_run "5 ranks, host buffers, 2 per node, binomial without rails, 1 KiB scratch halves" 5 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 $AG_DBL $TINY coll_gpu_tree_rails=0" \
    test_native_collectives --kinds=host --small
check_digest 5-host-nodes-ag-dbl-tiny-one-leader
check_same_digest "5 ranks on 2+2+1, many steps: rails = one leader per node (every bit)" \
    5-host-nodes-ag-dbl-tiny 5-host-nodes-ag-dbl-tiny-one-leader
ACCEL_EMULATED_DELAY_US=100 check_run "5 ranks, 2 per node, binomial with rails, slow streams, 4 KiB scratch halves" 5 \
    "$EMU coll_gpu_ranks_per_node=2 $AG_DBL coll_gpu_native_chunk_size=2048 coll_gpu_allreduce_one_shot_max_bytes=1024" \
    test_native_collectives --small
check_digest 5-dev-nodes-rails-slow
check_same_digest "5 ranks on 2+2+1, slow streams: rails = one leader per node (integers and copies)" \
    5-dev-nodes-rails-slow 5-host-nodes-ag-dbl-tiny-one-leader int
check_run "5 ranks, host buffers, 1 per node, allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving" 5 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=1 $AG_DBL" test_native_collectives \
    --kinds=host --small
check_digest 5-host-nodes-ag-dbl
check_same_digest "5 ranks: allgather hierarchical_doubling, reduce_scatter_block hierarchical_halving on 5 nodes = 1 node (integers and copies)" \
    5-host-nodes-ag-dbl 5-host-small int
# auto's rules (lowered: from 3 nodes, calls gathering, or of blocks x ranks, up to 256 bytes;
# reduce's messages up to 64 bytes),
# on nodes of one rank (direct above) and of two (hierarchical above): the pvar of each call says
# which ran
AG_AUTO="coll_gpu_allgather_doubling_min_nodes=3 coll_gpu_allgather_doubling_max_bytes=256 coll_gpu_reduce_scatter_halving_min_nodes=3 coll_gpu_reduce_scatter_halving_max_bytes=256 coll_gpu_reduce_binomial_min_nodes=3 coll_gpu_reduce_binomial_min_bytes=0 coll_gpu_reduce_binomial_max_bytes=64 coll_gpu_gather_binomial_min_nodes=3 coll_gpu_gather_binomial_min_bytes=0 coll_gpu_gather_binomial_max_bytes=64 coll_gpu_scatter_binomial_min_nodes=3 coll_gpu_scatter_binomial_min_bytes=0 coll_gpu_scatter_binomial_max_bytes=64"
check_run "5 ranks, host buffers, 1 per node, allgather and reduce_scatter_block auto from 3 nodes up to 256 bytes" 5 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=1 $AG_AUTO coll_gpu_verbose=10" \
    test_native_collectives --kinds=host --small
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's allgather hierarchical_doubling and direct, reduce_scatter_block hierarchical_halving and direct" \
    "MPI_Allgather on MPI COMM(UNICATOR)? 3 DUP FROM 0: 1 x 1 bytes, host memory: hierarchical_doubling \(5 nodes >= coll_gpu_allgather_doubling_min_nodes=3; 5 bytes gathered <= coll_gpu_allgather_doubling_max_bytes=256\)" \
    "MPI_Allgather on MPI COMM(UNICATOR)? 3 DUP FROM 0: [0-9]+ x 1 bytes, host memory: direct \(5 nodes, one rank each\)" \
    "MPI_Reduce_scatter_block on MPI COMM(UNICATOR)? 3 DUP FROM 0: 1 x 4 bytes, host memory: hierarchical_halving \(5 nodes >= coll_gpu_reduce_scatter_halving_min_nodes=3; 20 bytes \(largest block x ranks\) <= coll_gpu_reduce_scatter_halving_max_bytes=256\)" \
    "MPI_Reduce_scatter_block on MPI COMM(UNICATOR)? 3 DUP FROM 0: [0-9]+ x [0-9]+ bytes, host memory: direct \(5 nodes, one rank each\)" \
    "MPI_Reduce on MPI COMM(UNICATOR)? 3 DUP FROM 0: 1 x 4 bytes, host memory: binomial \(5 nodes >= coll_gpu_reduce_binomial_min_nodes=3; coll_gpu_reduce_binomial_min_bytes=0 <= 4 bytes <= coll_gpu_reduce_binomial_max_bytes=64\)" \
    "MPI_Reduce on MPI COMM(UNICATOR)? 3 DUP FROM 0: [0-9]+ x [0-9]+ bytes, host memory: direct \(5 nodes, one rank each\)" \
    "MPI_Gather on MPI COMM(UNICATOR)? 3 DUP FROM 0: 1 x 1 bytes, host memory: binomial \(5 nodes >= coll_gpu_gather_binomial_min_nodes=3; coll_gpu_gather_binomial_min_bytes=0 <= 5 bytes gathered <= coll_gpu_gather_binomial_max_bytes=64\)" \
    "MPI_Gather on MPI COMM(UNICATOR)? 3 DUP FROM 0: [0-9]+ x 1 bytes, host memory: direct \(5 nodes, one rank each\)" \
    "MPI_Scatter on MPI COMM(UNICATOR)? 3 DUP FROM 0: 1 x 1 bytes, host memory: binomial \(5 nodes >= coll_gpu_scatter_binomial_min_nodes=3; coll_gpu_scatter_binomial_min_bytes=0 <= 5 bytes scattered <= coll_gpu_scatter_binomial_max_bytes=64\)" \
    "MPI_Scatter on MPI COMM(UNICATOR)? 3 DUP FROM 0: [0-9]+ x 1 bytes, host memory: direct \(5 nodes, one rank each\)"
check_digest 5-host-nodes-ag-auto
check_same_digest "5 ranks: allgather and reduce_scatter_block auto across 5 nodes = 1 node (integers and copies)" \
    5-host-nodes-ag-auto 5-host-small int
check_run "6 ranks, 2 per node, allgather and reduce_scatter_block auto from 3 nodes up to 256 bytes" 6 \
    "$EMU coll_gpu_ranks_per_node=2 $AG_AUTO" test_native_collectives --small

# a tuning rule staging bcast: the test expects what the parameters say, so force the others
printf 'bcast * * * staged\nallgather * * * direct\n' >"$TMP/rules.conf"
check_run "3 ranks, tuning file" 3 \
    "$EMU coll_gpu_tuning_file=$TMP/rules.conf coll_gpu_bcast_algorithm=staged coll_gpu_verbose=10" \
    test_native_collectives
[ "$CHECK_RESULT" = PASS ] && check_expect_output "forced staged bcast, rule for allgather" \
    "MPI_Bcast on .*staged \(algorithm_staged: coll_gpu_bcast_algorithm=staged" \
    "MPI_Allgather on .*: direct \(rule at .*rules.conf:2\)"

# a peer missing from a native call (an erroneous program): with coll_gpu_transport_timeout set,
# the job aborts with the help message naming the call, never a hang.  Open MPI 4.1 sometimes
# loses help messages on their way to mpirun (see check_faults.sh): the run is repeated, up to 5
# times, until its output has the message.
check_run_aborts "Call: +MPI_Bcast on rank" "3 ranks, a peer missing from MPI_Bcast" 3 \
    "$EMU coll_gpu_transport_timeout=2 $CHECK_NO_HELP_AGGREGATE" test_native_collectives \
    --peer-missing
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the timeout's abort names the call" \
    "Call: +MPI_Bcast on rank [01] of a communicator of 3 ranks" "still alive"
check_run_aborts "Call: +MPI_Reduce on rank" "4 ranks on 2 nodes, a peer missing from MPI_Reduce" 4 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 coll_gpu_transport_timeout=2 $CHECK_NO_HELP_AGGREGATE" \
    test_native_collectives --kinds=host --peer-missing=reduce
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the timeout's abort across nodes names the call" \
    "Call: +MPI_Reduce on rank [0-2] of a communicator of 4 ranks" "still alive"

check_finish
