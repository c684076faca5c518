#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# 10,000 MPI_Comm_dup/MPI_Comm_free cycles, then 10,000 more with a device collective on the
# dup'ed communicator every 100 cycles (test_comm_cycles): no growth of resident memory
# beyond a small bound, live emulated allocations back to the baseline, the same open file
# descriptors, nothing new in /dev/shm.  Under coll_gpu_native_setup=create (the scratch set up
# inside every creation), with MPI_Comm_idup and MPI_Iallreduce, on one node and 3 emulated
# nodes.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536"
# the MPI_Iallreduce runs: every rank passes device memory (coll_gpu_memory_kinds_uniform, the
# user's promise, lets a nonblocking call run natively)
UNIFORM="coll_gpu_memory_kinds_uniform=1"

# AddressSanitizer keeps freed memory in quarantine (256 MiB by default): resident memory
# then says nothing about leaks, which ASan's own leak check covers instead.
RSS=
[ "${COLL_GPU_ASAN:-0}" = 1 ] && RSS=--rss-limit=1048576
check_run "2 ranks, device collectives" 2 "$EMU" test_comm_cycles --kinds=device --cycles=10000 $RSS
check_run "4 ranks, device collectives" 4 "$EMU" test_comm_cycles --kinds=device --cycles=3000 $RSS
# the default staging buffer (4 MiB per communicator that stages): released with it too
check_run "3 ranks, default staging buffer" 3 "coll_gpu_accelerator=emulated" test_comm_cycles \
    --kinds=device --cycles=3000 --every=10 $RSS
# coll_gpu_native_setup=create: every dup sets the native scratch up inside its creation (Open
# MPI selects the components from the creation request's progress: MPI_Comm_idup too) and
# frees it with the communicator; MPI_Iallreduce native from the first call
check_run "3 ranks, setup at creation, MPI_Comm_idup, MPI_Iallreduce" 3 \
    "$EMU coll_gpu_native_setup=create $UNIFORM" test_comm_cycles --kinds=device --cycles=1000 \
    --every=10 --idup --nonblocking $RSS
check_run "3 ranks on 3 emulated nodes, setup at creation, MPI_Comm_idup, MPI_Iallreduce" 3 \
    "$EMU coll_gpu_native_setup=create coll_gpu_ranks_per_node=1 $UNIFORM" test_comm_cycles \
    --kinds=device --cycles=100 --every=5 --idup --nonblocking $RSS

check_finish
