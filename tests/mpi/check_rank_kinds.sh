#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Ranks that pass different memory kinds to one call, with default parameters (no
# coll_gpu_check_memory_kinds): the case engine's every collective, type, op, count (0, 1, 1001
# and 1 MiB calls that pipeline through a 64 KiB staging buffer), in place or not, on every
# communicator, with --rank-kinds giving each world rank its own kinds (a memory for all its
# buffers, or SEND>RECV).  Every call must end, with the right result, on the path its rank
# must take: passed through where the rank's whole call is on host memory, staged as one host
# collective (no pipelined chunks) by the device ranks of such a call, native only where every
# rank passes device memory for all its buffers (or, where no rank passes through, where the
# native algorithm takes a call some rank's root buffer in host memory).  Patterns:
#   - host root / device others (host,device,device,...), the root sending from host memory
#     into device receivers (host>device,device,...);
#   - even ranks host, odd ranks device (host,device);
#   - the root sending from device memory, receiving into host memory (device>host,device,...),
#     odd ranks so (device,device>host), and the in-place calls of the roots among them;
#   - pinned and managed beside device (pinned,device,managed);
#   - on 1 to 5 ranks of one node, and on 2 and 3 emulated nodes (coll_gpu_ranks_per_node),
#     a whole node passing host memory;
# and the nonblocking and persistent collectives (test_nonblocking: staged by default, whatever
# the kinds, the native context set up or not), MPI_Alltoallw and the neighborhood collectives
# (test_neighbor) alike.
# Before coll/gpu made such calls meet in one protocol they hung (a host rank in Open MPI's
# host collective, its peers in the native algorithm or in chunks of a pipelined staging).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536"
# a case that has not ended in this time has hung: the job ends there, naming it
CASE="--case-timeout=${RANK_KINDS_CASE_TIMEOUT:-60}"

# one node
check_run "1 rank, device send, host receive" 1 "$EMU" test_collectives \
    --rank-kinds='device>host' --big=1m "$CASE"
check_run "2 ranks, even host, odd device" 2 "$EMU" test_collectives --rank-kinds=host,device \
    --big=1m "$CASE"
check_run "2 ranks, rank 0 device send, host receive" 2 "$EMU" test_collectives \
    --rank-kinds='device>host,device' --big=1m "$CASE"
check_run "3 ranks, rank 0 host, the others device" 3 "$EMU" test_collectives \
    --rank-kinds=host,device,device --big=1m "$CASE"
check_run "3 ranks, rank 0 device send, host receive" 3 "$EMU" test_collectives \
    --rank-kinds='device>host,device,device' --big=1m "$CASE"
check_run "3 ranks, pinned, device, managed" 3 "$EMU" test_collectives \
    --rank-kinds=pinned,device,managed --big=1m "$CASE"
check_run "4 ranks, even host, odd device" 4 "$EMU" test_collectives --rank-kinds=host,device \
    --big=1m "$CASE"
check_run "4 ranks, rank 0 host send, device receive" 4 "$EMU" test_collectives \
    --rank-kinds='host>device,device,device,device' --big=1m "$CASE"
# every communicator and root for every case
check_run "4 ranks, device>host, host, device, device, every communicator and root" 4 "$EMU" \
    test_collectives --rank-kinds='device>host,host,device,device' --full --small-only "$CASE"
check_run "5 ranks, rank 0 host, the others device" 5 "$EMU" test_collectives \
    --rank-kinds=host,device,device,device,device --big=1m "$CASE"
check_run "5 ranks, odd ranks device send, host receive" 5 "$EMU" test_collectives \
    --rank-kinds='device,device>host' --big=1m "$CASE"

# emulated nodes: the inter-node algorithms, a whole node on host memory
if [ "${COLL_GPU_HAVE_UCX:-1}" = 1 ]; then
    check_run "2 ranks on 2 emulated nodes, even host, odd device" 2 \
        "$EMU coll_gpu_ranks_per_node=1" test_collectives --rank-kinds=host,device --big=1m "$CASE"
    check_run "3 ranks on 3 emulated nodes, device>host, device, host" 3 \
        "$EMU coll_gpu_ranks_per_node=1" test_collectives \
        --rank-kinds='device>host,device,host' --big=1m "$CASE"
    check_run "4 ranks on 2 emulated nodes of 2, node 0 host" 4 \
        "$EMU coll_gpu_ranks_per_node=2" test_collectives --rank-kinds=host,host,device,device \
        --big=1m "$CASE"
    check_run "5 ranks on 3 emulated nodes (2+2+1), node 1 host, rank 4 device>host" 5 \
        "$EMU coll_gpu_ranks_per_node=2" test_collectives \
        --rank-kinds='device,device,host,host,device>host' --big=1m "$CASE"
fi

# nonblocking and persistent: staged by default on device memory, whatever the peers' kinds,
# even where the communicators' native context is set up (--native: a blocking call on device
# memory first), which lets them run natively only under coll_gpu_memory_kinds_uniform
check_run "3 ranks, nonblocking, native context, device>host, device, host" 3 "$EMU" \
    test_nonblocking --native --rank-kinds='device>host,device,host' --big=256k "$CASE"
check_run "3 ranks, persistent, native context, rank 0 host, the others device" 3 "$EMU" \
    test_nonblocking --native --persistent --rank-kinds=host,device,device --big=256k "$CASE"
if [ "${COLL_GPU_HAVE_UCX:-1}" = 1 ]; then
    check_run "4 ranks on 2 emulated nodes, nonblocking, native context, node 0 host" 4 \
        "$EMU coll_gpu_ranks_per_node=2" test_nonblocking --native \
        --rank-kinds=host,host,device,device --big=256k "$CASE"
fi
# alltoallw and the neighborhood collectives
check_run "3 ranks, neighborhood, device>host, host>device, device" 3 "$EMU" test_neighbor \
    --rank-kinds='device>host,host>device,device' "$CASE"

check_finish
