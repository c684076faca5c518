#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Communicators of more ranks than a transport team's default signal slots (64): every rank
# of a native communicator has one slot per peer, so these runs are native only when the team
# sizes its signal area to the communicator (they were staged when a native communicator had
# at most 63 ranks).  Emulated device memory, oversubscribed on purpose: the cases are small.
#   - MPI_Allreduce on 65 ranks, one_shot and two_shot forced: the pvar of the forced
#     algorithm, the rank-order reference, the same bits from both;
#   - every native collective on 65 ranks (--small counts);
#   - MPI_Allreduce on 66 ranks across 2 emulated nodes of 33 (hierarchical, UCX between them).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"
trap 'rm -rf "$CHECK_LOGDIR"' EXIT

for alg in one_shot two_shot; do
    check_run "65 ranks, $alg" 65 "$EMU coll_gpu_allreduce_algorithm=$alg" test_allreduce_native
    check_digest 65-$alg
done
check_same_digest "65 ranks: one_shot = two_shot" 65-one_shot 65-two_shot
check_run "65 ranks, every native collective" 65 "$EMU" test_native_collectives --small
check_run "66 ranks on 2 emulated nodes, hierarchical" 66 \
    "$EMU coll_gpu_ranks_per_node=33" test_allreduce_native

check_finish
