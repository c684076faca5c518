#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Ranks passing types of the same signature, a derived one on some ranks and MPI_INT on the
# others (legal MPI for the data-movement collectives; test_mixed_types): gather, scatter, bcast
# (derived at the root), allgather, allgatherv and alltoallv, with the defaults (the native
# algorithms decide on the signature) and under coll_gpu_check_memory_kinds=1 (the ranks agree
# per call), on one node and across emulated nodes, device and host buffers; the data is
# checked on every rank.  MPI_Allreduce with an int resized to two ints' extent on rank 0 against
# MPI_INT elsewhere, at a size whose dense data would be pipelined.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"
trap 'rm -rf "$CHECK_LOGDIR"' EXIT

# the defaults: the native algorithms decide on the type signature, no agreement needed
check_run "4 ranks, defaults" 4 "$EMU" test_mixed_types
check_run "3 ranks, host buffers, defaults" 3 "$EMU coll_gpu_host_buffers=1" test_mixed_types \
    --kinds=host

check_run "4 ranks" 4 "$EMU coll_gpu_check_memory_kinds=1" test_mixed_types
check_run "4 ranks, 2 per node" 4 "$EMU coll_gpu_check_memory_kinds=1 coll_gpu_ranks_per_node=2" \
    test_mixed_types
check_run "3 ranks, host buffers" 3 "$EMU coll_gpu_check_memory_kinds=1 coll_gpu_host_buffers=1" \
    test_mixed_types --kinds=host

# the reduction of a holey type on rank 0 at a size the others would pipeline: one staged host
# collective on every rank whatever each rank's type (forced staged: every rank arrives first)
check_run "3 ranks, 64 KiB staging" 3 "$EMU coll_gpu_staging_buffer_size=65536" test_mixed_types
check_run "3 ranks, 64 KiB staging, allreduce staged" 3 \
    "$EMU coll_gpu_staging_buffer_size=65536 coll_gpu_allreduce_algorithm=staged" test_mixed_types

check_finish
