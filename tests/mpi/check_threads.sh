#!/bin/bash
#
# MPI_THREAD_MULTIPLE (test_threads): 2 ranks, each with 2 threads running allreduce, bcast,
# allgather, alltoall and reduce_scatter_block on their own communicator at the same time,
# and each creating a communicator, running an allreduce on it and freeing it every
# iteration; every result against an independent reference, and the calls counted as native
# by the coll_gpu_calls_native pvar:
#   - one node (posix transport), host buffers through the native algorithms
#     (coll_gpu_host_buffers=1) and emulated device memory;
#   - emulated nodes of one rank (coll_gpu_ranks_per_node=1): every collective crosses UCX
#     (UCX_TLS=tcp,self, as check_team.sh runs it), host and device buffers.
#     Before the component's locking, these runs abort in UCX
#     (ucp_worker.c "Assertion 'worker->inprogress++ == 0' failed") or crash.
# THREAD_ITERATIONS (default 1000) sets the iterations of each run.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"
NODES="coll_gpu_ranks_per_node=1"
ITERS="--iterations=${THREAD_ITERATIONS:-1000}"
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n

check_run "one node, host buffers" 2 "$EMU coll_gpu_host_buffers=1" test_threads --kinds=host \
    --expect-native "$ITERS"
check_run "one node, device buffers" 2 "$EMU" test_threads --expect-native "$ITERS"
if [ "${COLL_GPU_HAVE_UCX:-1}" = 1 ]; then
check_run "1 rank per node (ucx), host buffers" 2 "$EMU coll_gpu_host_buffers=1 $NODES" \
    test_threads --kinds=host --expect-native "$ITERS"
check_run "1 rank per node (ucx), device buffers" 2 "$EMU $NODES" test_threads \
    --expect-native "$ITERS"
fi

check_finish
