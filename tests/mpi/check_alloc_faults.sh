#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One rank failing to allocate (test_alloc_faults, emulated device memory): a stream, the
# native scratch, a packing temporary or the staging stream that one rank alone cannot have.
# No rank hangs; either every rank takes a common fallback and succeeds, or every rank returns
# the faulting rank's error (its help message names the call and the cause, the peers' names
# the rank); nobody gets a wrong result reported as success; the next call is right everywhere.
# One node, 2 emulated nodes, and the staged path.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated $CHECK_NO_HELP_AGGREGATE"

check_run "3 ranks, native" 3 "$EMU" test_alloc_faults
check_run "4 ranks on 2 emulated nodes, native" 4 "$EMU coll_gpu_ranks_per_node=2" \
    test_alloc_faults
check_run "3 ranks, staged" 3 "$EMU coll_gpu_native=0" test_alloc_faults --staged

check_finish
