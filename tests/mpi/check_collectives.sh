#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Every intercepted blocking collective (test_collectives) on 1 to 5 ranks:
#   - host and emulated-device memory, with a 64 KiB staging buffer so that the 4 MiB cases
#     pipeline through many chunks;
#   - mixed kinds (send host / receive device and the reverse), managed and pinned memory;
#   - the staged path without pipelining (coll_gpu_staged_pipeline 0);
#   - ranks passing different kinds to the same call, with coll_gpu_check_memory_kinds 1
#     (its help message must appear) and without (check_rank_kinds.sh runs more patterns);
#   - real CUDA memory (skips without a GPU).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536"

for np in 1 2 3 4 5; do
    check_run "$np ranks, host and device" $np "$EMU" test_collectives \
        --kinds=host,device --big=4m
done
# every communicator and root for every case, not one picked per case
check_run "4 ranks, host and device, every communicator and root" 4 "$EMU" test_collectives \
    --kinds=host,device --full --small-only
check_run "2 ranks, mixed kinds" 2 "$EMU" test_collectives --kinds=mixed --big=1m
check_run "3 ranks, mixed, managed and pinned" 3 "$EMU" test_collectives \
    --kinds=mixed,managed,pinned --big=1m
check_run "3 ranks, device, no pipelining" 3 "$EMU coll_gpu_staged_pipeline=0" \
    test_collectives --kinds=device --big=4m
check_run "4 ranks, host/device per rank, check_memory_kinds" 4 \
    "$EMU coll_gpu_check_memory_kinds=1" test_collectives --rank-kinds=host,device --big=1m
if [ "$CHECK_RESULT" != SKIP ]; then
    # the component's help message for a call with different kinds across ranks
    check_expect_output "memory kinds help message" "coll/gpu" "[Mm]emory"
fi
# without the check: the same calls, the big ones too (one host collective, no chunks)
check_run "3 ranks, device/host per rank, no check" 3 "$EMU" test_collectives \
    --rank-kinds=device,host --big=1m
check_run "2 ranks, CUDA device memory" 2 "coll_gpu_accelerator=cuda" test_collectives \
    --device=cuda --kinds=host,device,mixed --big=4m

check_finish
