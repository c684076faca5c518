#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# MPI_Reduce_local on every predefined C type x op MPI defines, and on coll_gpu_ext.h's
# bfloat16/float16 (test_reduce_local), against the test's own reference:
#   - device memory (emulated backend): run by the accelerator's kernels, bit-exact;
#   - host memory, with and without the component: Open MPI's own ops agree with the same
#     reference (the kernels' semantics are Open MPI's).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated"
check_run "device memory, kernels" 1 "$EMU" test_reduce_local --kinds=device
# The kernel failure case: the help message names the call, the failed launch and its error.
# Open MPI 4.1 loses some help messages on their way to mpirun (see check_faults.sh): the
# failure runs up to 5 times, and the text is looked for in all their output.
check_run_until "EMULATED_ERROR_INJECTED" "kernel failure" 1 "$EMU $CHECK_NO_HELP_AGGREGATE" \
    test_reduce_local --kinds=device --fault-only
check_expect_output "help message of the kernel failure" "coll/gpu" "MPI_Reduce_local" \
    "emuReduce" "EMULATED_ERROR_INJECTED"
check_run "device memory, 2 ranks" 2 "$EMU" test_reduce_local --kinds=device
check_run "device memory, coll_gpu_native=0: staged" 1 "$EMU coll_gpu_native=0" \
    test_reduce_local --kinds=device --staged
check_run "host memory through the component" 1 "$EMU" test_reduce_local --kinds=host
CHECK_NO_COMPONENT=1 check_run "host memory, Open MPI alone" 1 "" test_reduce_local \
    --kinds=host --no-component

check_finish
