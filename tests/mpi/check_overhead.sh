#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The cost coll/gpu adds to a host-buffer call: at most 50 instructions per
# 8-byte MPI_Allreduce with the component active (callgrind counts
# instructions, so this is deterministic, not a timing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top_src=$(cd "$here/../.." && pwd)
if [ "${COLL_GPU_ASAN:-0}" = 1 ]; then
    echo "SKIP: AddressSanitizer build (valgrind cannot run it, and ASan's own checks change the count)"
    exit 77
fi
exec "$top_src/perf/overhead.sh" --calls 5000 --max 50
