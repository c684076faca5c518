#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The programs that hung when ranks passed different memory kinds to one call, with default
# parameters (test_memory_kinds; emulated device memory, a 64 KiB staging buffer, so that the
# 1 MiB calls would pipeline), each in a run of its own under a short timeout (a hang fails):
#   - every rank sends a device array, rank 0 receives MPI_Reduce / MPI_Gather into host memory
#     (and reduces in place on host memory): blocking, nonblocking, persistent;
#   - rank 0's data in host memory, MPI_Bcast / MPI_Scatter into the others' device arrays:
#     blocking, nonblocking, persistent;
#   - even ranks host, odd ranks device: MPI_Allreduce of 8 int8 and of 1 MiB, 2 and 3 ranks;
#   - one host rank: MPI_Reduce_scatter_block, MPI_Allgatherv;
#   - intercommunicators (even and odd ranks; the odd group's buffers on the device, the even
#     group's on the device, then on the host): allreduce, allgather, alltoall, bcast, reduce,
#     gather, scatter (MPI_ROOT / MPI_PROC_NULL), iallreduce, ibcast, on 2, 4 and 5 ranks and on
#     2 emulated nodes: Open MPI's coll/inter and libnbc would hand device memory to the
#     point-to-point layer, which is not CUDA-aware (a crash before the component staged them);
#   - coll_gpu_native_nonblocking=0 on one rank only: MPI_Iallreduce on device memory after
#     the native context's setup (every rank stages it), also where every rank promised
#     uniform kinds (coll_gpu_memory_kinds_uniform=1): a parameter that changes the protocol,
#     set differently on one rank;
# then every case together on 1, 4 and 5 ranks, and on 2 and 3 emulated nodes where a whole
# node passes host memory (--host-ranks, coll_gpu_ranks_per_node 1 and 2).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
# a hang fails within a minute and a half (a run takes seconds)
: "${TEST_TIMEOUT:=90}"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536"
# a case that has not ended in this time has hung: the job ends there, naming it
CASE="--case-timeout=${MEMORY_KINDS_CASE_TIMEOUT:-45}"
RUN=(test_memory_kinds --big=1m "$CASE")
# every case but intercomm (its runs below)
ALL="--cases=output,input,output_nb,input_nb,output_pers,input_pers,allreduce,one_host,iallreduce"

# each program on its own
for cases in output input output_nb input_nb output_pers input_pers one_host; do
    check_run "3 ranks, $cases" 3 "$EMU" "${RUN[@]}" --cases="$cases"
done
for np in 2 3; do
    check_run "$np ranks, allreduce, even ranks host, odd ranks device" $np "$EMU" "${RUN[@]}" \
        --cases=allreduce
done
ODD="--odd-env=OMPI_MCA_coll_gpu_native_nonblocking=0"
check_run "2 ranks, MPI_Iallreduce, native_nonblocking=0 on rank 1" 2 "$EMU" "${RUN[@]}" \
    --cases=iallreduce $ODD --expect-staged
check_run "2 ranks, MPI_Iallreduce, uniform kinds promised, native_nonblocking=0 on rank 1" 2 \
    "$EMU coll_gpu_memory_kinds_uniform=1" "${RUN[@]}" --cases=iallreduce $ODD --expect-staged

for np in 2 4 5; do
    check_run "$np ranks, intercommunicator" $np "$EMU" "${RUN[@]}" --cases=intercomm
done
check_run "4 ranks on 2 emulated nodes, intercommunicator" 4 "$EMU coll_gpu_ranks_per_node=2" \
    "${RUN[@]}" --cases=intercomm

# every case together
for np in 1 4 5; do
    check_run "$np ranks, every case" $np "$EMU" "${RUN[@]}" "$ALL"
done
if [ "${COLL_GPU_HAVE_UCX:-1}" = 1 ]; then
    check_run "2 ranks on 2 emulated nodes, every case, node 0 host" 2 \
        "$EMU coll_gpu_ranks_per_node=1" "${RUN[@]}" "$ALL" --host-ranks=1
    check_run "3 ranks on 3 emulated nodes, every case" 3 "$EMU coll_gpu_ranks_per_node=1" \
        "${RUN[@]}" "$ALL"
    check_run "4 ranks on 2 emulated nodes of 2, every case, node 0 host" 4 \
        "$EMU coll_gpu_ranks_per_node=2" "${RUN[@]}" "$ALL" --host-ranks=2
    check_run "5 ranks on 3 emulated nodes (2+2+1), every case, node 0 host" 5 \
        "$EMU coll_gpu_ranks_per_node=2" "${RUN[@]}" "$ALL" --host-ranks=2
fi

check_finish
