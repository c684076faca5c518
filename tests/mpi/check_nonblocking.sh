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
# Native nonblocking calls (test_nonblocking --native: the communicators' native scratch set up
# by a blocking call first, and coll_gpu_memory_kinds_uniform=1, the user's promise that every
# rank passes the same memory kind; the same groups and kinds, the counters must show the native
# runs; not with ranks of different kinds, which break that promise: --kinds=mixed gives
# MPI_Ibcast's root host memory and the others device memory); across emulated nodes too (the
# communicator's thread and opal_progress share the team's UCX worker under its lock;
# allgather(v) hierarchical_doubling, reduce_scatter(_block) hierarchical_halving, bcast, reduce,
# gather and scatter binomial forced on 2+2+1 too, and allreduce hierarchical_rabenseifner in
# 1 KiB chunks).  test_overlap:
# the results of MPI_Iallreduce/Ibcast/Iallgather/Ialltoall land while the rank makes no MPI
# call (and, staged, do not: the check can tell).
# The persistent collectives (test_nonblocking --persistent: MPI_*_init, MPIX_*_init on Open
# MPI 4.1), each started twice with new inputs, in the same groups and kinds; with --native
# (the scratch set up first) those whose nonblocking form runs natively post it at every start
# (the counters show a native call per start), the later starts posting the plan the first
# recorded (the verbose log says so; the results with new inputs prove it reads the buffers
# anew).
# With coll_gpu_native_setup=create the same groups run natively without the blocking call
# first (the scratch is set up when each communicator is created), on one node and 2+2+1.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536"
# the runs of native nonblocking and persistent calls: every rank passes the same memory kind
# to them, which the user promises with coll_gpu_memory_kinds_uniform (without it they are
# staged: a nonblocking call cannot agree on the ranks' kinds)
NATIVE_NB="$EMU coll_gpu_memory_kinds_uniform=1"

for np in 1 2 3 5; do
    check_run "$np ranks, host and device" $np "$EMU" test_nonblocking \
        --kinds=host,device --big=1m
done
check_run "3 ranks, mixed kinds" 3 "$EMU" test_nonblocking --kinds=mixed --big=256k
check_run "4 ranks, host/device per rank" 4 "$EMU" test_nonblocking \
    --rank-kinds=host,device --big=256k
for np in 1 2 3 5; do
    check_run "$np ranks, native, host and device" $np "$NATIVE_NB" test_nonblocking --native \
        --kinds=host,device --big=1m
done
# the device-driven rows' nonblocking and persistent calls: launched by the calling thread (no
# communicator thread), completed when MPI_Test/MPI_Wait find the event after the kernel reached
for np in 2 3; do
    check_run "$np ranks, native, allreduce device_one_shot, persistent" $np \
        "$NATIVE_NB coll_gpu_allreduce_algorithm=device_one_shot" test_nonblocking --native \
        --persistent --kinds=device --big=256k
done
check_run "3 ranks, native, allreduce device_two_shot, persistent" 3 \
    "$NATIVE_NB coll_gpu_allreduce_algorithm=device_two_shot" test_nonblocking --native \
    --persistent --kinds=device --big=2m
# from the first call: no blocking call sets the communicators up first; the setup the first
# nonblocking call starts makes the rows' area too (a parameter forces one of the rows)
check_run "3 ranks, allreduce device_two_shot, persistent, native from the first call" 3 \
    "$NATIVE_NB coll_gpu_allreduce_algorithm=device_two_shot coll_gpu_verbose=1" \
    test_nonblocking --persistent --kinds=device --big=2m
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the first call's setup makes the rows' area" \
    "native setup at its first nonblocking call: ready" \
    "device-driven algorithms' area 2 x"
# across nodes: device_hierarchical's kernel launched by the calling thread, its proxy on the
# communicator's thread, the request complete once both are; persistent, and from the first call
check_run "4 ranks, 2 emulated nodes, allreduce device_hierarchical, persistent" 4 \
    "$NATIVE_NB coll_gpu_ranks_per_node=2 coll_gpu_allreduce_algorithm=device_hierarchical" \
    test_nonblocking --native --persistent --kinds=device --big=2m
check_run "4 ranks, 2 emulated nodes, device_hierarchical, native from the first call" 4 \
    "$NATIVE_NB coll_gpu_ranks_per_node=2 coll_gpu_allreduce_algorithm=device_hierarchical" \
    test_nonblocking --persistent --kinds=device --big=2m
check_run "4 ranks, native, 2 emulated nodes" 4 "$NATIVE_NB coll_gpu_ranks_per_node=2" \
    test_nonblocking --native --kinds=device --big=256k
check_run "5 ranks, native, 3 emulated nodes (2+2+1), persistent" 5 \
    "$NATIVE_NB coll_gpu_ranks_per_node=2" test_nonblocking --native --persistent --kinds=device \
    --big=256k
check_run "5 ranks, native, 2+2+1 emulated nodes, allgather(v) hierarchical_doubling, reduce_scatter(_block) hierarchical_halving, bcast, reduce, gather and scatter binomial, persistent" 5 \
    "$NATIVE_NB coll_gpu_ranks_per_node=2 coll_gpu_allgather_algorithm=hierarchical_doubling coll_gpu_allgatherv_algorithm=hierarchical_doubling coll_gpu_reduce_scatter_algorithm=hierarchical_halving coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving coll_gpu_bcast_algorithm=binomial coll_gpu_reduce_algorithm=binomial coll_gpu_gather_algorithm=binomial coll_gpu_scatter_algorithm=binomial" \
    test_nonblocking --native --persistent --kinds=device --big=256k
# the pipelined hierarchical_rabenseifner on the communicator's thread: 1 KiB chunks (many per
# call, the steps of two chunks beside each one's rounds), 2+2+1 (a pair beyond the power of two)
check_run "5 ranks, native, 2+2+1 emulated nodes, allreduce hierarchical_rabenseifner, 1 KiB chunks, persistent" 5 \
    "$NATIVE_NB coll_gpu_ranks_per_node=2 coll_gpu_allreduce_algorithm=hierarchical_rabenseifner coll_gpu_native_chunk_size=1024" \
    test_nonblocking --native --persistent --kinds=device --big=256k
# coll_gpu_native_setup=create: every communicator's scratch set up when it is created, so its
# nonblocking and persistent calls run natively from the first, with no blocking call before
# (the counters must show the native runs: without the setup at creation they are staged, which
# the runs above without --native check)
CREATE="$NATIVE_NB coll_gpu_native_setup=create"
check_run "3 ranks, native from the communicators' creation, host and device" 3 \
    "$CREATE coll_gpu_verbose=1" test_nonblocking --kinds=host,device --big=1m
# the program's communicators set up from their creation on; MPI_COMM_WORLD (created in
# MPI_Init, before a program chooses its GPU) by its first blocking call
[ "$CHECK_RESULT" = PASS ] && check_expect_output "set up at creation, not MPI_COMM_WORLD" \
    "DUP FROM 0: native setup at its creation \(coll_gpu_native_setup=create\): ready" \
    "MPI_COMM_WORLD: no native setup at its creation \(in MPI_Init"
check_run "2 ranks, persistent, native from the communicators' creation" 2 "$CREATE" \
    test_nonblocking --persistent --kinds=host,device --big=256k
check_run "5 ranks, 2+2+1 emulated nodes, persistent, native from the communicators' creation" 5 \
    "$CREATE coll_gpu_ranks_per_node=2" test_nonblocking --persistent --kinds=device --big=256k
# the communicator's thread polling for the next call (coll_gpu_native_thread_spin; auto turns
# it off on this oversubscribed machine, set here it is honoured): calls taken from the queue
# while it polls
check_run "3 ranks, native from creation, the thread polling 2 ms between calls" 3 \
    "$CREATE coll_gpu_native_thread_spin=2000 coll_gpu_verbose=1" test_nonblocking \
    --kinds=device --big=256k
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the thread polls as set" \
    "the communicator's thread for native nonblocking calls, polling 2000 us"
# auto: no poll where the rank is bound to one core (its thread would take the core the rank
# posts from), 50 us where one rank may run anywhere on this machine (at least 2 CPUs).  The
# binding by Open MPI 4.1's parameter (PRRTE's under Open MPI 5 is another)
if [ "${OMPI_MAJOR_VERSION:-4}" -lt 5 ]; then
    check_run "1 rank bound to a core: the thread does not poll (auto)" 1 \
        "$NATIVE_NB coll_gpu_verbose=1 hwloc_base_binding_policy=core" test_nonblocking --native \
        --kinds=device
    [ "$CHECK_RESULT" = PASS ] && check_expect_output "no poll when bound to a core" \
        "the communicator's thread for native nonblocking calls, polling 0 us"
    check_run "1 rank unbound: the thread polls (auto)" 1 \
        "$NATIVE_NB coll_gpu_verbose=1 hwloc_base_binding_policy=none" test_nonblocking --native \
        --kinds=device
    [ "$CHECK_RESULT" = PASS ] && check_expect_output "a 50 us poll when unbound" \
        "the communicator's thread for native nonblocking calls, polling 50 us"
fi
check_run "2 ranks, persistent, native from creation, the thread polling 2 ms between calls" 2 \
    "$CREATE coll_gpu_native_thread_spin=2000" test_nonblocking --persistent --kinds=device \
    --big=256k
for np in 2 3 4; do
    check_run "$np ranks, results land without MPI calls" $np "$NATIVE_NB" test_overlap
done
check_run "4 ranks on 2 emulated nodes, results land without MPI calls" 4 \
    "$NATIVE_NB coll_gpu_ranks_per_node=2" test_overlap
check_run "2 ranks, staged results land only in MPI" 2 "$EMU coll_gpu_native_nonblocking=0" \
    test_overlap --expect-staged
for np in 1 2 3; do
    check_run "$np ranks, persistent, host and device" $np "$EMU" test_nonblocking --persistent \
        --kinds=host,device --big=256k
done
# native persistent: the scratch set up first, every MPI_Start posts the nonblocking form
for np in 2 3; do
    check_run "$np ranks, persistent, native, host and device" $np "$NATIVE_NB" test_nonblocking \
        --persistent --native --kinds=host,device --big=256k
done
# the plan: the first MPI_Start records the native call, the later ones post it as it is
check_run "2 ranks, persistent, native, the plan" 2 "$NATIVE_NB coll_gpu_verbose=10" \
    test_nonblocking --persistent --native --kinds=device
[ "$CHECK_RESULT" = PASS ] && check_expect_output "later starts post the plan" \
    "MPI_Allreduce_init on .*: MPI_Start of the plan: one_shot" \
    "MPI_Allgatherv_init on .*: MPI_Start of the plan: direct" \
    "MPI_Alltoall_init on .*: MPI_Start of the plan: direct" \
    "MPI_Alltoallv_init on .*: MPI_Start of the plan: direct" \
    "MPI_Alltoallv \(nonblocking, on the communicator's thread\) on .*: blocks agreed in the call"
check_run "3 ranks, persistent, mixed kinds" 3 "$EMU" test_nonblocking --persistent \
    --kinds=mixed --big=256k
check_run "4 ranks, persistent, host/device per rank" 4 "$EMU" test_nonblocking --persistent \
    --rank-kinds=host,device --big=256k
for np in 2 3; do
    check_run "$np ranks, freed requests pending at MPI_Finalize" $np "$EMU" test_finalize_pending
    check_run "$np ranks, freed active persistent requests at MPI_Finalize" $np "$EMU" \
        test_finalize_pending --persistent
    check_run "$np ranks, freed native requests pending at MPI_Finalize" $np "$NATIVE_NB" \
        test_finalize_pending --native
    check_run "$np ranks, freed active native persistent requests at MPI_Finalize" $np \
        "$NATIVE_NB" test_finalize_pending --native --persistent
done
check_run "2 ranks, CUDA device memory" 2 "coll_gpu_accelerator=cuda" test_nonblocking \
    --device=cuda --kinds=host,device --big=4m
check_run "2 ranks, persistent, CUDA device memory" 2 "coll_gpu_accelerator=cuda" \
    test_nonblocking --persistent --device=cuda --kinds=host,device --big=4m

check_finish
