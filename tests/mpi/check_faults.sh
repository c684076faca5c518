#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Accelerator failures inside coll/gpu (test_faults, emulated backend):
#   - the n-th copy of a collective fails on one rank (or all): that rank's call returns
#     MPI_ERR_OTHER, no rank hangs, the next collective on the communicator is correct, and
#     Open MPI prints the component's help message naming the MPI call, the failed accelerator
#     call and its error (checked here in the output);
#   - where the failed copy is a blocking call's input (or a pipeline's), every rank of the
#     call returns MPI_ERR_OTHER ("staged peer error"), on one node and across 2 and 3
#     emulated nodes;
#   - every pinned allocation fails: staging falls back to pageable memory, results correct,
#     coll_gpu_pageable_fallbacks > 0.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

# every help message printed, not one per topic: the check looks for each MPI call
no_aggregate=$CHECK_NO_HELP_AGGREGATE
# The staged path's faults, copy by copy: the collectives with native algorithms staged too.
EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536 $no_aggregate"
EMU="$EMU coll_gpu_allreduce_algorithm=staged coll_gpu_reduce_scatter_block_algorithm=staged"
EMU="$EMU coll_gpu_allgather_algorithm=staged coll_gpu_bcast_algorithm=staged"
EMU="$EMU coll_gpu_alltoallv_algorithm=staged coll_gpu_alltoall_algorithm=staged"
EMU="$EMU coll_gpu_reduce_algorithm=staged coll_gpu_gather_algorithm=staged"
EMU="$EMU coll_gpu_scatter_algorithm=staged coll_gpu_allgatherv_algorithm=staged"
EMU="$EMU coll_gpu_reduce_scatter_algorithm=staged"

# What every help message must say, and the MPI calls test_faults makes fail.  Open MPI 4.1
# loses some help messages on their way from the ranks to mpirun (here 14 to 21 of 22 arrive,
# at random): the fault pass runs 3 times per job, and the calls are looked for in the output
# of all jobs together, so that a lost message does not fail the check.
HELP_TEXT=("coll/gpu" "EMULATED_ERROR_INJECTED" "emuMemcpy")
CALLS=("MPI_Allreduce" "MPI_Reduce([^_a-z]|$)" "MPI_Allgather" "MPI_Alltoallv" "MPI_Gather"
    "MPI_Scatter" "MPI_Scan" "MPI_Reduce_scatter_block" "MPI_Reduce_local" "MPI_Iallreduce"
    "MPI_Bcast" "MPI_Ibcast")
ALL_LOGS="$CHECK_LOGDIR/all_faults.log"
: >"$ALL_LOGS"

for np in 1 2 3; do
    check_run "$np ranks, memcpy faults" $np "$EMU" test_faults --kinds=device --big=1m \
        --repeat=3
    if [ "$CHECK_RESULT" != SKIP ]; then
        check_expect_output "help message text ($np ranks)" "${HELP_TEXT[@]}"
        cat "$LAST_LOG" >>"$ALL_LOGS"
    fi
done
# across emulated nodes: the word of a rank whose input copy failed reaches the other nodes
# through their leaders (3 nodes of 1 rank; 2 nodes of 2 and 1)
for cfg in 3:1 3:2; do
    np=${cfg%:*} rpn=${cfg#*:}
    check_run "$np ranks, $rpn per node, memcpy faults" $np "$EMU coll_gpu_ranks_per_node=$rpn" \
        test_faults --kinds=device --big=1m
done
check_expect_output "a peer's failed input copy is reported" "staged through host memory failed"
if [ -s "$ALL_LOGS" ]; then
    LAST_LOG=$ALL_LOGS
    check_expect_output "help messages name every failed MPI call" "${CALLS[@]}"
fi
check_run "2 ranks, pinned allocations fail" 2 "$EMU" test_faults --pinned-fault \
    --kinds=device --big=1m
# (nonblocking calls staged: the native ones would not use the staging memory under test)
check_run "3 ranks, pinned allocations fail, default staging" 3 \
    "coll_gpu_accelerator=emulated coll_gpu_native_nonblocking=0" test_faults --pinned-fault \
    --kinds=device --big=8m

check_finish
