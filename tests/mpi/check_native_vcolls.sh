#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Native MPI_Allgatherv, MPI_Reduce_scatter, MPI_Alltoall (direct, hierarchical) and
# MPI_Alltoallv (direct), inside a
# node and across emulated nodes (test_native_vcolls, emulated device memory whose cuda_ipc
# transport runs over the emulated backend's IPC; other nodes over UCX):
#   - 1 to 8 ranks, auto; per-rank (per-pair) counts with empty blocks, 1, odd, uneven, a few
#     hundred KiB, and 16 MiB per rank and call on 3 and 4 ranks; MPI_IN_PLACE; world, odd/even
#     split, reversed order; receive blocks in reverse order with gaps that must stay untouched;
#     results against references, reduce_scatter's blocks = MPI_Allreduce's bit for bit, the
#     pvar of the path taken (a call staged where it should be native fails); auto's staging
#     of small calls on device buffers (allgatherv, reduce_scatter and alltoallv by their
#     largest block, alltoall by its block) with its logged reason, the other runs with it off;
#   - each algorithm forced (native, staged) and a tiny scratch that cuts every call into many
#     steps: the same digest (staged: its integer and copy part, Open MPI's float order
#     differing); host-buffer mode (coll_gpu_host_buffers=1, --kinds=host): the same digests;
#     16 MiB cases on 4 ranks only, and small counts across nodes, to keep the check short;
#   - emulated nodes (coll_gpu_ranks_per_node): 2 nodes of 2 ranks, 3 nodes of 3, 3 and 1 ranks:
#     host and device buffers native across nodes (UCX gets; the emulated device scratch read
#     through host scratch), auto taking hierarchical for allgatherv and reduce_scatter (and
#     alltoall on its band, the suites' up to 16 KiB per block, direct above): the
#     same integer and copy digest as one node (reduce_scatter's floats in hierarchical order:
#     test_native_vcolls checks them against hierarchical MPI_Allreduce, bit for bit), direct
#     forced across nodes the same digest as one node; alltoall hierarchical forced on 2+2, 3+3+1
#     (device and host buffers, many steps, one get in flight) the same digest as one node;
#     hierarchical forced on one node = direct; allgatherv hierarchical_doubling and
#     reduce_scatter hierarchical_halving forced on 3+3+1 (host buffers, many steps), 2+2
#     (device buffers) and 6 nodes of 1: the same integer and copy digest as one node;
#     auto's reduce_scatter hierarchical_halving (its parameters lowered) on 6 nodes of 1;
#   - a peer missing from a native MPI_Alltoall: MPI_ERR_OTHER and the help message, no hang.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

# (auto's staging of small calls off where the native algorithms' bits are compared: every run
# but the EMU_AUTO one, where the test expects small calls staged, v-forms by their largest block)
EMU_AUTO="coll_gpu_accelerator=emulated"
EMU="$EMU_AUTO $CHECK_NO_STAGING"
BIG=--big-bytes=16777216
ALL_NATIVE="coll_gpu_allgatherv_algorithm=direct coll_gpu_reduce_scatter_algorithm=direct coll_gpu_alltoall_algorithm=direct coll_gpu_alltoallv_algorithm=direct"
ALL_STAGED="coll_gpu_allgatherv_algorithm=staged coll_gpu_reduce_scatter_algorithm=staged coll_gpu_alltoall_algorithm=staged coll_gpu_alltoallv_algorithm=staged"
TINY="coll_gpu_native_chunk_size=256 coll_gpu_allreduce_one_shot_max_bytes=1024"

for np in 1 2 4 5 6 8; do
    check_run "$np ranks, auto" $np "$EMU" test_native_vcolls
    check_digest $np-auto
done
# auto stages small blocking calls on device buffers (allgatherv and reduce_scatter by their
# largest block, alltoallv by the largest of any pair of ranks, which the ranks agree on first,
# alltoall by its block)
check_run "4 ranks, auto stages small calls" 4 "$EMU_AUTO coll_gpu_verbose=10" test_native_vcolls
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto stages small calls inside a node" \
    "MPI_Allgatherv on .*: $CHECK_STAGED_WHY""_allgather_staged_max_bytes=20480\)" \
    "MPI_Reduce_scatter on .*: $CHECK_STAGED_WHY""_reduce_scatter_staged_max_bytes=7168\)" \
    "MPI_Alltoall on .*: $CHECK_STAGED_WHY""_alltoall_staged_max_bytes=16384\)" \
    "MPI_Alltoallv on .*: $CHECK_STAGED_WHY""_alltoall_staged_max_bytes=16384\)" \
    "MPI_Alltoallv on .*device memory: direct" \
    "MPI_Allgatherv on .*device memory: direct" \
    "MPI_Reduce_scatter on .*device memory: direct"
check_digest 4-auto-staged
check_same_digest "4 ranks: auto's staging, integers and copies = native" 4-auto-staged 4-auto int

# forced native, staged, many steps, host buffers: the same bits (staged: integers and copies)
for np in 3 4; do
    [ $np = 4 ] && big=$BIG || big=""
    check_run "$np ranks, native forced" $np "$EMU $ALL_NATIVE" test_native_vcolls $big
    check_digest $np-native
    check_run "$np ranks, staged" $np "$EMU $ALL_STAGED" test_native_vcolls $big
    check_digest $np-staged
    check_same_digest "$np ranks: staged integers and copies = native" $np-staged $np-native int
    check_run "$np ranks, host buffers" $np "$EMU coll_gpu_host_buffers=1" \
        test_native_vcolls --kinds=host $big
    check_digest $np-host
    check_same_digest "$np ranks: host buffers = device" $np-host $np-native
done
# hierarchical forced on one node: its order is rank order there, direct's bits
check_run "3 ranks, hierarchical forced" 3 \
    "$EMU coll_gpu_allgatherv_algorithm=hierarchical coll_gpu_reduce_scatter_algorithm=hierarchical coll_gpu_alltoall_algorithm=hierarchical" \
    test_native_vcolls
check_digest 3-hier
check_same_digest "3 ranks: hierarchical on one node = direct" 3-hier 3-native
check_run "3 ranks, 1 KiB scratch halves" 3 "$EMU $TINY" test_native_vcolls
check_digest 3-tiny
check_same_digest "3 ranks: many steps = native" 3-tiny 3-native
check_run "3 ranks, native off" 3 "$EMU coll_gpu_native=0" test_native_vcolls

# emulated nodes: host buffers native across them (UCX gets), the bits of one node
check_run "4 ranks, host buffers, 2 per node" 4 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" \
    test_native_vcolls --kinds=host
check_digest 4-host-nodes
[ "$CHECK_RESULT" = PASS ] && check_expect_output "native across nodes" \
    "MPI_Allgatherv on MPI COMM(UNICATOR)? 3 DUP.*host memory: hierarchical" \
    "MPI_Reduce_scatter on MPI COMM(UNICATOR)? 3 DUP.*host memory: hierarchical" \
    "MPI_Alltoall on MPI COMM(UNICATOR)? 3 DUP.*host memory: hierarchical \(2 nodes, some with several ranks\)" \
    "MPI_Alltoall on MPI COMM(UNICATOR)? 3 DUP.*host memory: direct \(not hierarchical's band: 2 nodes >= coll_gpu_alltoall_hierarchical_min_nodes=2; coll_gpu_alltoall_hierarchical_min_bytes=0 <= [0-9]+ bytes per block <= coll_gpu_alltoall_hierarchical_max_bytes=16384\)" \
    "MPI_Alltoallv on MPI COMM(UNICATOR)? 3 DUP.*host memory: direct"
# (hierarchical reduce_scatter: node partials in node order, other float bits than one node's)
check_same_digest "4 ranks: 2 nodes = 1 node (integers and copies)" 4-host-nodes 4-auto int
check_run "4 ranks, host buffers, 2 per node, direct forced" 4 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 $ALL_NATIVE" test_native_vcolls --kinds=host
check_digest 4-host-nodes-direct
check_same_digest "4 ranks: 2 nodes direct = 1 node" 4-host-nodes-direct 4-auto
# many steps across nodes (small counts: a step over UCX costs a round trip)
check_run "4 ranks, host buffers, 2 per node, 1 KiB scratch halves" 4 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=2 $TINY" test_native_vcolls \
    --kinds=host --small
check_digest 4-host-nodes-tiny
check_run "4 ranks, small counts" 4 "$EMU" test_native_vcolls --small
check_digest 4-small
check_same_digest "4 ranks: 2 nodes, many steps = 1 node (integers and copies)" 4-host-nodes-tiny \
    4-small int
# uneven nodes: 3, 3 and 1 ranks
check_run "7 ranks, host buffers, 3 per node" 7 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=3" test_native_vcolls --kinds=host --small
check_digest 7-host-nodes
check_run "7 ranks, small counts" 7 "$EMU" test_native_vcolls --small
check_digest 7-small
check_same_digest "7 ranks: 3 uneven nodes = 1 node (integers and copies)" 7-host-nodes 7-small int
# alltoall node-aggregated at every size (hierarchical forced): uneven nodes, many steps with one
# get in flight, device buffers; the bits of one node
A2A_HIER="coll_gpu_alltoall_algorithm=hierarchical"
check_run "7 ranks, host buffers, 3 per node, alltoall hierarchical, 1 KiB scratch halves, one get in flight" \
    7 "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=3 $A2A_HIER $TINY coll_gpu_alltoall_max_outstanding=1" \
    test_native_vcolls --kinds=host --small
check_digest 7-host-nodes-a2a-hier
check_same_digest "7 ranks: alltoall hierarchical on 3+3+1, many steps = 1 node (integers and copies)" \
    7-host-nodes-a2a-hier 7-small int
check_run "4 ranks, 2 per node, alltoall hierarchical" 4 \
    "$EMU coll_gpu_ranks_per_node=2 $A2A_HIER coll_gpu_verbose=10" test_native_vcolls
check_digest 4-dev-nodes-a2a-hier
[ "$CHECK_RESULT" = PASS ] && check_expect_output "alltoall hierarchical on device memory" \
    "MPI_Alltoall on MPI COMM(UNICATOR)? 3 DUP.*device memory: hierarchical \(coll_gpu_alltoall_algorithm=hierarchical\)"
check_same_digest "4 ranks: alltoall hierarchical across nodes, device = 1 node (integers and copies)" \
    4-dev-nodes-a2a-hier 4-auto int
# allgatherv hierarchical_doubling (forced): uneven nodes (3+3+1: one node paired beyond the
# power of two), many steps, device buffers, 6 nodes of 1 (two pairs); the bits of one node
# reduce_scatter hierarchical_halving (forced) in the same runs: integers and copies as one node's
AGV_DBL="coll_gpu_allgatherv_algorithm=hierarchical_doubling coll_gpu_reduce_scatter_algorithm=hierarchical_halving"
check_run "7 ranks, host buffers, 3 per node, allgatherv hierarchical_doubling, reduce_scatter hierarchical_halving, 1 KiB scratch halves" \
    7 "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=3 $AGV_DBL $TINY" \
    test_native_vcolls --kinds=host --small
check_digest 7-host-nodes-agv-dbl
check_same_digest "7 ranks: allgatherv hierarchical_doubling, reduce_scatter hierarchical_halving on 3+3+1, many steps = 1 node (integers and copies)" \
    7-host-nodes-agv-dbl 7-small int
check_run "4 ranks, 2 per node, allgatherv hierarchical_doubling, reduce_scatter hierarchical_halving" 4 \
    "$EMU coll_gpu_ranks_per_node=2 $AGV_DBL coll_gpu_verbose=10" test_native_vcolls
check_digest 4-dev-nodes-agv-dbl
[ "$CHECK_RESULT" = PASS ] && check_expect_output "allgatherv hierarchical_doubling, reduce_scatter hierarchical_halving on device memory" \
    "MPI_Allgatherv on MPI COMM(UNICATOR)? 3 DUP.*device memory: hierarchical_doubling \(coll_gpu_allgatherv_algorithm=hierarchical_doubling\)" \
    "MPI_Reduce_scatter on MPI COMM(UNICATOR)? 3 DUP.*device memory: hierarchical_halving \(coll_gpu_reduce_scatter_algorithm=hierarchical_halving\)"
check_same_digest "4 ranks: allgatherv hierarchical_doubling, reduce_scatter hierarchical_halving across nodes, device = 1 node (integers and copies)" \
    4-dev-nodes-agv-dbl 4-auto int
check_run "6 ranks, host buffers, 1 per node, allgatherv hierarchical_doubling, reduce_scatter hierarchical_halving" 6 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=1 $AGV_DBL" test_native_vcolls \
    --kinds=host
check_digest 6-host-nodes-agv-dbl
check_same_digest "6 ranks: allgatherv hierarchical_doubling, reduce_scatter hierarchical_halving on 6 nodes = 1 node (integers and copies)" \
    6-host-nodes-agv-dbl 6-auto int
# auto's rule for reduce_scatter (lowered: from 3 nodes, calls of blocks x ranks up to 256 bytes):
# hierarchical_halving for the small counts, direct above (the pvar of each call)
check_run "6 ranks, host buffers, 1 per node, reduce_scatter auto from 3 nodes up to 256 bytes" 6 \
    "$EMU coll_gpu_host_buffers=1 coll_gpu_ranks_per_node=1 coll_gpu_reduce_scatter_halving_min_nodes=3 coll_gpu_reduce_scatter_halving_max_bytes=256 coll_gpu_verbose=10" \
    test_native_vcolls --kinds=host
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's reduce_scatter hierarchical_halving and direct" \
    "MPI_Reduce_scatter on MPI COMM(UNICATOR)? 3 DUP.*host memory: hierarchical_halving \(6 nodes >= coll_gpu_reduce_scatter_halving_min_nodes=3; [0-9]+ bytes \(largest block x ranks\) <= coll_gpu_reduce_scatter_halving_max_bytes=256\)" \
    "MPI_Reduce_scatter on MPI COMM(UNICATOR)? 3 DUP.*host memory: direct \(6 nodes, one rank each\)"
check_digest 6-host-nodes-rs-auto
check_same_digest "6 ranks: reduce_scatter auto on 6 nodes = 1 node (integers and copies)" \
    6-host-nodes-rs-auto 6-auto int

# device buffers across emulated nodes: native, other nodes reading the emulated device
# scratch through host scratch; the same bits as host buffers
check_run "4 ranks, 2 per node" 4 "$EMU coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" \
    test_native_vcolls
check_digest 4-dev-nodes
[ "$CHECK_RESULT" = PASS ] && check_expect_output "device across nodes native" \
    "MPI_Alltoallv on MPI COMM(UNICATOR)? 3 DUP.*device memory: direct" \
    "MPI_Reduce_scatter on MPI COMM(UNICATOR)? 3 DUP.*device memory: hierarchical" \
    "other nodes read device scratch through host scratch"
check_same_digest "4 ranks across nodes: device = host buffers" 4-dev-nodes 4-host-nodes

# a peer missing from a native call (an erroneous program): with coll_gpu_transport_timeout set,
# the job aborts with the help message naming the call, never a hang (repeated until the help
# message arrives: Open MPI 4.1 loses some, see check_faults.sh)
check_run_aborts "Call: +MPI_Alltoall on rank" "3 ranks, a peer missing from MPI_Alltoall" 3 \
    "$EMU coll_gpu_transport_timeout=2 $CHECK_NO_HELP_AGGREGATE" test_native_vcolls \
    --peer-missing
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the timeout's abort names the call" \
    "Call: +MPI_Alltoall on rank [01] of a communicator of 3 ranks" "still alive"

check_finish
