#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Stream-ordered MPI_Allreduce (test_stream: coll_gpu_ext.h's MPIX_Stream_create,
# MPIX_Stream_comm_create, MPIX_Allreduce_enqueue) on the emulated device, whose streams run
# later on threads of their own: the call returns while the stream is held (and the next stream
# work sees the sum with no host synchronization between), bursts of calls back to back (the
# area's halves reused while earlier calls are still queued), int32 and float, in place, host
# receive buffers, two stream communicators, a host MPI_Allreduce on the stream communicator
# while its stream holds a call, calls captured into a CUDA graph and launched, the error of a
# communicator that is not one, one rank's enqueue failing (an error there, reported at the
# others' next call), a call failing on the communicator's thread across nodes (reported at
# every rank's next call), one rank's host function not queued across nodes (its host sees the
# call through); on 1 to 5 ranks of one node, and with ACCEL_EMULATED_DELAY_US (slow streams);
# across emulated nodes the same cases run through the communicator's thread, posted by host
# functions on the stream (captured calls too).  On one node a call on device buffers is one
# kernel whatever its size (two-shot in steps of a half above 256 KiB or a half: halves of 4
# KiB here), also when one rank's enqueue fails (a call without data keeps the peers going).  Without native nonblocking calls across nodes the calls synchronize
# the stream and run MPI_Allreduce: still right.  The verbose log says which.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"

for np in 1 2 3 5; do
    check_run "$np ranks, one node" $np "$EMU" test_stream
done
# an enqueue failing on one rank: an error there, reported at every other rank's next call
# (the help message names the rank and the call), nothing hangs; repeated until the output has
# the message (check_run_until: Open MPI 4.1 loses some help messages on their way to mpirun)
for np in 2 4; do
    reported="rank $((np - 1))'s stream-ordered call [0-9]+ on this communicator failed there"
    check_run_until "$reported" "$np ranks, one rank's enqueue failing" $np \
        "$EMU $CHECK_NO_HELP_AGGREGATE" test_stream --fault --calls=4
    [ "$CHECK_RESULT" = PASS ] && check_expect_output "the failure reported to the others" \
        "$reported"
done
check_run "4 ranks, the log" 4 "$EMU coll_gpu_verbose=10" test_stream --calls=8
[ "$CHECK_RESULT" = PASS ] && check_expect_output "queued on the stream" \
    "MPIX_Allreduce_enqueue on .*: queued on the stream \(call [0-9]+\)" \
    "stream-ordered allreduce on 4 ranks"
ACCEL_EMULATED_DELAY_US=200 check_run "3 ranks, slow streams (200 us per operation)" 3 "$EMU" \
    test_stream --calls=12
check_run_until "stream-ordered call [0-9]+ on this communicator failed \(its outcome, agreed" \
    "4 ranks on 2 emulated nodes, a call failing on the thread" 4 \
    "$EMU coll_gpu_ranks_per_node=2 $CHECK_NO_HELP_AGGREGATE" test_stream --fault-across --calls=4
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the thread's failure reported" \
    "stream-ordered call [0-9]+ on this communicator failed \(its outcome, agreed"
check_run "4 ranks on 2 emulated nodes: the communicator's thread between stream flags" 4 \
    "$EMU coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_stream --calls=10
[ "$CHECK_RESULT" = PASS ] && check_expect_output "across nodes: the communicator's thread" \
    "MPIX_Allreduce_enqueue on .*: queued on the stream, run by the communicator's thread across 2 nodes" \
    "MPIX_Allreduce_enqueue on .*: recorded into the stream's CUDA graph, run by the communicator's thread across 2 nodes"
check_run "4 ranks on 2 emulated nodes, one rank's host function not queued" 4 \
    "$EMU coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_stream --fault-post --calls=4
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the host saw the call through" \
    "not queued, the host saw it through, run by the communicator's thread across 2 nodes \(the stream's host function failed\)"
ACCEL_EMULATED_DELAY_US=100 check_run "5 ranks on 3 emulated nodes (2+2+1), slow streams" 5 \
    "$EMU coll_gpu_ranks_per_node=2" test_stream --calls=8
check_run "4 ranks on 2 emulated nodes, no native nonblocking: MPI_Allreduce after a synchronization" 4 \
    "$EMU coll_gpu_ranks_per_node=2 coll_gpu_native_nonblocking=0 coll_gpu_verbose=10" \
    test_stream --expect-fallback --calls=10
[ "$CHECK_RESULT" = PASS ] && check_expect_output "across nodes without the thread: the fallback" \
    "MPIX_Allreduce_enqueue on .*: the stream is synchronized and MPI_Allreduce runs \(the native path does not take it across nodes"
check_run "3 ranks, halves of 4 KiB: larger calls one two-shot kernel" 3 \
    "$EMU coll_gpu_native_chunk_size=2048 coll_gpu_allreduce_one_shot_max_bytes=1024 coll_gpu_verbose=10" \
    test_stream --calls=10
[ "$CHECK_RESULT" = PASS ] && check_expect_output "larger than a half: one kernel in steps" \
    "MPIX_Allreduce_enqueue on .*: 65536 x 4 bytes: queued on the stream as one two-shot kernel, in steps of at most 4096 bytes" \
    "MPIX_Allreduce_enqueue on .*: 1500 x 4 bytes: recorded into the stream's CUDA graph as one two-shot kernel" \
    "MPIX_Allreduce_enqueue on .*: 7 x 4 bytes: queued on the stream \(call"
[ "$CHECK_RESULT" = PASS ] && check_expect_count "no fallback for size" 0 \
    "the stream is synchronized and MPI_Allreduce runs"
for np in 2 4; do
    reported="rank $((np - 1))'s stream-ordered call [0-9]+ on this communicator failed there"
    check_run_until "$reported" "$np ranks, halves of 4 KiB, one rank's enqueue failing in a call's first piece" $np \
        "$EMU coll_gpu_native_chunk_size=2048 coll_gpu_allreduce_one_shot_max_bytes=1024 $CHECK_NO_HELP_AGGREGATE" \
        test_stream --fault --calls=4
done

check_finish
