#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# coll_gpu_native_setup=create, whose setup starts inside a communicator's creation and goes on
# in the background until the communicator's first native decision (test_setup_create):
# MPI_Comm_idup outstanding in crossed orders, a first MPI_Iallreduce posted while the peers
# wait in MPI_Recv, nonblocking host collectives beside the setup's messages, a duplicate left
# to MPI_Finalize.  No hang (each case's watchdog), results right, the device calls native.
# One node (cuda_ipc), nodes of one rank (UCX), 2 nodes of 2; MPI_THREAD_FUNNELED,
# MPI_THREAD_SERIALIZED (the setup inside the creation), ranks of different thread levels, and
# MPI_THREAD_MULTIPLE (the setup on a thread of its own).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

# (coll_gpu_memory_kinds_uniform: every rank passes device memory to the nonblocking calls,
# which may then run natively; without the promise they are staged)
CREATE="coll_gpu_accelerator=emulated coll_gpu_native_setup=create coll_gpu_memory_kinds_uniform=1"

check_run "2 ranks, one node" 2 "$CREATE coll_gpu_verbose=1" test_setup_create
# the setup started at creation, not left to a first blocking call (the verbose line the
# setup prints when it completes names how it ran)
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the setup at creation" \
    "DUP FROM 0: native setup at its creation \(coll_gpu_native_setup=create\): ready"
check_run "3 ranks, one node" 3 "$CREATE" test_setup_create
check_run "3 ranks, one node, MPI_THREAD_FUNNELED" 3 "$CREATE" test_setup_create --funneled \
    --rounds=8
# MPI_THREAD_SERIALIZED: the setup inside the creation; odd ranks SERIALIZED, even ones SINGLE:
# every rank sets up at creation all the same (a rank's first MPI_Iallreduce waits for its peers'
# setup: one that left its setup to a first blocking call hung it)
check_run "3 ranks, one node, MPI_THREAD_SERIALIZED" 3 "$CREATE" test_setup_create \
    --serialized --rounds=8
check_run "4 ranks, one node, odd ranks MPI_THREAD_SERIALIZED" 4 "$CREATE" test_setup_create \
    --mixed-levels --rounds=8
check_run "3 ranks, one node, MPI_THREAD_MULTIPLE" 3 "$CREATE coll_gpu_verbose=1" \
    test_setup_create --multiple --rounds=8
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the setup at creation, MPI_THREAD_MULTIPLE" \
    "DUP FROM 0: native setup at its creation \(coll_gpu_native_setup=create\): ready"
if [ "${COLL_GPU_HAVE_UCX:-1}" = 1 ]; then
    check_run "3 ranks on 3 emulated nodes (ucx)" 3 "$CREATE coll_gpu_ranks_per_node=1" \
        test_setup_create --rounds=8
    check_run "4 ranks on 2 emulated nodes of 2" 4 "$CREATE coll_gpu_ranks_per_node=2" \
        test_setup_create --rounds=8
    check_run "3 ranks on 3 emulated nodes (ucx), MPI_THREAD_MULTIPLE" 3 \
        "$CREATE coll_gpu_ranks_per_node=1" test_setup_create --multiple --rounds=8
fi

# Without coll_gpu_native_setup=create (the default): each communicator's setup starts at its
# first nonblocking call, which waits for it in a queue with the calls posted after it
# (test_setup_create --first-call: MPI_COMM_WORLD's first MPI_Iallreduce too, host collectives
# queued behind it); the same legal programs, native from the first call, never a hang.  Where
# a rank runs MPI_THREAD_SERIALIZED (no task there) every rank stages.
FIRST="coll_gpu_accelerator=emulated coll_gpu_memory_kinds_uniform=1"
check_run "2 ranks, one node, native from the first nonblocking call" 2 \
    "$FIRST coll_gpu_verbose=1" test_setup_create --first-call
[ "$CHECK_RESULT" = PASS ] && check_expect_output "MPI_COMM_WORLD set up by its first MPI_Iallreduce" \
    "MPI_COMM_WORLD: native setup started by its first nonblocking call" \
    "MPI_COMM_WORLD: native setup at its first nonblocking call: ready"
check_run "4 ranks, one node, first call, MPI_THREAD_FUNNELED" 4 "$FIRST" test_setup_create \
    --first-call --funneled --rounds=8
check_run "3 ranks, one node, first call, MPI_THREAD_MULTIPLE" 3 "$FIRST" test_setup_create \
    --first-call --multiple --rounds=8
check_run "4 ranks, first call, odd ranks MPI_THREAD_SERIALIZED (staged everywhere)" 4 "$FIRST" \
    test_setup_create --first-call --mixed-levels --rounds=8
if [ "${COLL_GPU_HAVE_UCX:-1}" = 1 ]; then
    check_run "4 ranks on 2 emulated nodes of 2, first call" 4 \
        "$FIRST coll_gpu_ranks_per_node=2" test_setup_create --first-call --rounds=8
fi

check_finish
