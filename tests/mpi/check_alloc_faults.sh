#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One rank failing to allocate (test_alloc_faults, emulated device memory): a stream, the
# native scratch, a packing temporary or the staging stream that one rank alone cannot have.
# No rank hangs; either every rank takes a common fallback and succeeds, or every rank returns
# the faulting rank's error (its help message names the call and the cause, the peers' names
# the rank); nobody gets a wrong result reported as success; the next call is right everywhere.
# One node, 2 emulated nodes, and the staged path; and the setup of coll_gpu_native_setup=create
# (started inside MPI_Comm_dup, complete at the first call) failing on one rank.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated $CHECK_NO_HELP_AGGREGATE"
# the setup at creation is what lets the first MPI_Iallreduce run natively, where every rank
# promised the same memory kind (coll_gpu_memory_kinds_uniform)
UNIFORM="coll_gpu_memory_kinds_uniform=1"

check_run "3 ranks, native" 3 "$EMU" test_alloc_faults
check_run "4 ranks on 2 emulated nodes, native" 4 "$EMU coll_gpu_ranks_per_node=2" \
    test_alloc_faults
check_run "3 ranks, staged" 3 "$EMU coll_gpu_native=0" test_alloc_faults --staged
# the scratch's allocation or IPC export failing in the setup started by MPI_Comm_dup
# (coll_gpu_native_setup=create): every rank staged on one node, one path everywhere on 2
check_run "3 ranks, setup at creation" 3 "$EMU coll_gpu_native_setup=create $UNIFORM" \
    test_alloc_faults --at-create --expect-staged
check_run "4 ranks on 2 emulated nodes, setup at creation" 4 \
    "$EMU coll_gpu_native_setup=create coll_gpu_ranks_per_node=2 $UNIFORM" test_alloc_faults \
    --at-create
# the same faults in the setup a first MPI_Iallreduce starts (no setup at creation), with
# Open MPI's host collectives posted behind it
check_run "3 ranks, setup at the first nonblocking call, host calls behind" 3 "$EMU $UNIFORM" \
    test_alloc_faults --at-create --expect-staged --host-beside
check_run "4 ranks on 2 emulated nodes, setup at the first nonblocking call, host calls behind" \
    4 "$EMU coll_gpu_ranks_per_node=2 $UNIFORM" test_alloc_faults --at-create --host-beside

# the device-driven rows' area failing on one rank: every rank takes one path, right
check_run "3 ranks, the device rows' area" 3 "$EMU coll_gpu_allreduce_algorithm=device_two_shot" \
    test_alloc_faults --area
check_run "4 ranks on 2 emulated nodes, device_hierarchical's area and stage" 4 \
    "$EMU coll_gpu_ranks_per_node=2 coll_gpu_allreduce_algorithm=device_hierarchical" \
    test_alloc_faults --area

check_finish
