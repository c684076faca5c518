#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The intercepted nonblocking collectives (test_nonblocking): one request at a time (MPI_Wait,
# MPI_Test loops), every collective outstanding on three communicators (MPI_Waitall), out of
# order completion (reverse MPI_Wait, MPI_Waitany, MPI_Testall, MPI_Waitsome), host and device
# requests interleaved, and big requests outstanding together; host and emulated-device
# memory, mixed kinds, ranks with different kinds (nonblocking calls never pipeline, so that
# is valid without coll_gpu_check_memory_kinds), and real CUDA memory (skips without a GPU).
# Requests freed before they complete, then MPI_Finalize (test_finalize_pending): every
# result must have landed in the device buffers when MPI_Finalize returns.
# The persistent collectives (test_nonblocking --persistent: MPI_*_init, MPIX_*_init on Open
# MPI 4.1), each started twice with new inputs, in the same groups and kinds.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536"

for np in 1 2 3 5; do
    check_run "$np ranks, host and device" $np "$EMU" test_nonblocking \
        --kinds=host,device --big=1m
done
check_run "3 ranks, mixed kinds" 3 "$EMU" test_nonblocking --kinds=mixed --big=256k
check_run "4 ranks, host/device per rank" 4 "$EMU" test_nonblocking \
    --rank-kinds=host,device --big=256k
for np in 1 2 3; do
    check_run "$np ranks, persistent, host and device" $np "$EMU" test_nonblocking --persistent \
        --kinds=host,device --big=256k
done
check_run "3 ranks, persistent, mixed kinds" 3 "$EMU" test_nonblocking --persistent \
    --kinds=mixed --big=256k
check_run "4 ranks, persistent, host/device per rank" 4 "$EMU" test_nonblocking --persistent \
    --rank-kinds=host,device --big=256k
for np in 2 3; do
    check_run "$np ranks, freed requests pending at MPI_Finalize" $np "$EMU" test_finalize_pending
    check_run "$np ranks, freed active persistent requests at MPI_Finalize" $np "$EMU" \
        test_finalize_pending --persistent
done
check_run "2 ranks, CUDA device memory" 2 "coll_gpu_accelerator=cuda" test_nonblocking \
    --device=cuda --kinds=host,device --big=4m
check_run "2 ranks, persistent, CUDA device memory" 2 "coll_gpu_accelerator=cuda" \
    test_nonblocking --persistent --device=cuda --kinds=host,device --big=4m

check_finish
