#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test command: on a fresh Debian 12 machine, installs what is missing,
# builds coll/gpu (with CUDA when /usr/local/cuda exists) and runs every test
# (make check: unit tests, mpirun tests on 1-5 ranks over host and emulated
# device buffers, the instruction-count check) against Debian 12's Open MPI
# 4.1, then builds and runs the same suite against Open MPI 5.0 in a Debian 13
# root (contrib/ompi5-check.sh; COLL_GPU_SKIP_OMPI5=1 skips that part).
# Device-only tests skip where there is no GPU; contrib/gpu-check.sh runs them
# on a GPU machine.
#
#   contrib/run-tests.sh [BUILD_DIR]        (default: build/)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
jobs=$(nproc 2>/dev/null || echo 2)

t0=$(date +%s)
"$top/contrib/install-deps.sh"
t1=$(date +%s)
(cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
cd "$build"
"$top/configure" --enable-werror ${COLL_GPU_CONFIGURE_FLAGS:-}
make -j"$jobs"
t2=$(date +%s)

status=0
make -j"$jobs" check || status=$?
t3=$(date +%s)

# Every test's result and the failures, then the closing line CI reads.
. "$top/contrib/test-summary.sh"
test_summary "$build/tests" "$build/" ""
pass=$test_pass fail=$test_fail skip=$test_skip
# MPICH's collective suite: its per-mode counts (the whole table is in its log)
mpich_log=$build/tests/mpich/run-mpich-coll.log
if [ -r "$mpich_log" ]; then
    echo "===== MPICH test/mpi/coll (tests/mpich/run-mpich-coll.log):"
    grep -aE '^(mode +passed|(plain|host|nodes) +[0-9]+ +[0-9]+ +[0-9]+$|SKIP:|times:)' "$mpich_log"
fi
echo "Open MPI 4.1 times: dependencies $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s"
echo "Open MPI 4.1: $pass passed, $fail failed, $skip skipped"
[ "$status" -eq 0 ] || [ "$fail" -gt 0 ] || fail=1

if [ "${COLL_GPU_SKIP_OMPI5:-0}" != 1 ]; then
    out5=$(mktemp)
    status5=0
    "$top/contrib/ompi5-check.sh" 2>&1 | tee "$out5" || status5=$?
    counts=$(sed -n 's/^Open MPI 5: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$out5")
    rm -f "$out5"
    read -r pass5 fail5 skip5 <<<"${counts:-0 1 0}"
    [ "$status5" -eq 0 ] || [ "$fail5" -gt 0 ] || fail5=1
    pass=$((pass + pass5)) fail=$((fail + fail5)) skip=$((skip + skip5))
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
