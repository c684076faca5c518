#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# shmem-transport under mpirun (test_shmem): local peers from MPI_Comm_split_type, emulated
# nodes (--rpn) so that the inter-node path crosses UCX over tcp and shared-memory transports,
# 2 to 8 ranks; host memory, and emulated device memory through the accelerator's IPC.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

check_run "2 ranks, one node (posix)" 2 "" test_shmem
check_run "4 ranks, one node, emulated device memory (posix, cuda_ipc)" 4 "" test_shmem \
    --accel=emulated
if [ "${COLL_GPU_HAVE_UCX:-0}" = 1 ]; then
    check_run "2 ranks, 2 nodes, UCX tcp" 2 "" test_shmem --rpn=1 --tls=tcp
    check_run "4 ranks, 2 nodes, UCX shm" 4 "" test_shmem --rpn=2 --tls=shm
    check_run "8 ranks, 3 nodes, UCX tcp, emulated device memory" 8 "" test_shmem --rpn=3 \
        --tls=tcp --accel=emulated
fi
check_finish
