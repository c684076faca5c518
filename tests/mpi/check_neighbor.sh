#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# MPI_Alltoallw, MPI_Ialltoallw and every neighborhood collective, blocking and nonblocking, on
# cartesian (periodic and not), graph and distributed-graph communicators (test_neighbor): on
# 1 to 4 ranks with host, emulated-device and mixed memory (send host / receive device and the
# reverse), and with device memory on some ranks and host memory on the others.  Before
# coll/gpu staged them, a device pointer reached Open MPI's PML and the job died (SIGSEGV).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"

for np in 1 2 3 4; do
    check_run "$np ranks, host, device and mixed" $np "$EMU" test_neighbor \
        --kinds=host,device,mixed
done
check_run "3 ranks, device/host per rank" 3 "$EMU" test_neighbor --rank-kinds=device,host
check_run "4 ranks, host/device per rank, small staging buffer" 4 \
    "$EMU coll_gpu_staging_buffer_size=4096" test_neighbor --rank-kinds=host,device

check_finish
