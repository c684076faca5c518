#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The component's transport teams (test_team with coll_gpu_transport_check): created lazily on
# the first device-buffer collective of a communicator, one per communicator, over the node
# map of MPI_Comm_split_type split into emulated nodes by coll_gpu_ranks_per_node, carried by
# posix / cuda_ipc (emulated) inside a node and ucx (tcp) between; freed with the
# communicator, leaving nothing behind.  The verbose lines must say "ok" and the node count.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

CHECK="coll_gpu_accelerator=emulated coll_gpu_transport_check=1 coll_gpu_verbose=1"
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n

check_run "1 rank" 1 "$CHECK" test_team --kinds=device --cycles=3
check_run "2 ranks, one node" 2 "$CHECK" test_team --kinds=device
[ "$CHECK_RESULT" = PASS ] && check_expect_output "one node" "transport check on .*: ok .*of 2 ranks on 1 nodes"
check_run "4 ranks, 2 per node" 4 "$CHECK coll_gpu_ranks_per_node=2" test_team --kinds=device
[ "$CHECK_RESULT" = PASS ] && check_expect_output "two nodes" "transport check on .*: ok .*of 4 ranks on 2 nodes"
check_run "5 ranks, 2 per node (uneven)" 5 "$CHECK coll_gpu_ranks_per_node=2" test_team \
    --kinds=device --cycles=4
[ "$CHECK_RESULT" = PASS ] && check_expect_output "three nodes" "transport check on .*: ok .*of 5 ranks on 3 nodes"
check_run "8 ranks, 1 per node" 8 "$CHECK coll_gpu_ranks_per_node=1" test_team --kinds=device \
    --cycles=2
[ "$CHECK_RESULT" = PASS ] && check_expect_output "eight nodes" "transport check on .*: ok .*of 8 ranks on 8 nodes"
check_run "4 ranks, host buffers: no team" 4 "$CHECK coll_gpu_ranks_per_node=2" test_team \
    --kinds=host --host --cycles=3

check_finish
