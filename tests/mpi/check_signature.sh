#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Ranks passing different datatypes of one type signature, with the defaults (no parameter asks
# the ranks to agree; test_signature): dense and non-dense layouts, different counts, MPI_IN_PLACE
# roots passing count -1 and MPI_DATATYPE_NULL, in bcast, gather, scatter, allgather(v) and
# alltoall(v).  Natively on emulated device memory and on host buffers (one node, and 2 emulated
# nodes over UCX), and staged with a small staging buffer so that MPI_Bcast is pipelined in
# bytes of the signature.  The component before this check hung on every one of these runs.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"
HOST="$EMU coll_gpu_host_buffers=1"

check_run "3 ranks, device memory" 3 "$EMU" test_signature
check_run "4 ranks on 2 emulated nodes, device memory" 4 "$EMU coll_gpu_ranks_per_node=2" \
    test_signature
check_run "3 ranks, host buffers" 3 "$HOST" test_signature --kinds=host
check_run "4 ranks on 2 emulated nodes, host buffers" 4 "$HOST coll_gpu_ranks_per_node=2" \
    test_signature --kinds=host
check_run "3 ranks, device memory staged, bcast pipelined in bytes" 3 \
    "$EMU coll_gpu_native=0 coll_gpu_staging_buffer_size=16384 coll_gpu_verbose=10" test_signature
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the staged bcast was pipelined" \
    "MPI_Bcast.*pipelined"

check_finish
