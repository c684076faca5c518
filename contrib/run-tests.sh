#!/usr/bin/env bash
# The test command: on a fresh Debian 12 machine, installs what is missing,
# builds coll/gpu (with CUDA when /usr/local/cuda exists) and runs every test
# (make check: unit tests, mpirun tests on 1-5 ranks over host and emulated
# device buffers, the instruction-count check).  Device-only tests skip where
# there is no GPU; contrib/gpu-check.sh runs them on a GPU machine.
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

# Every test's result, then the closing line CI reads.
logs=$(find "$build/tests" -name '*.trs' | sort)
pass=$(cat $logs /dev/null | grep -c '^:test-result: PASS' || true)
fail=$(cat $logs /dev/null | grep -cE '^:test-result: (FAIL|ERROR|XPASS)' || true)
skip=$(cat $logs /dev/null | grep -c '^:test-result: SKIP' || true)
for f in $logs; do
    printf '%-6s %s\n' "$(sed -n 's/^:test-result: //p' "$f" | head -1)" "${f#"$build"/}"
done
for f in $(grep -lE '^:test-result: (FAIL|ERROR)' $logs /dev/null); do
    echo "===== ${f%.trs}.log"
    tail -n 60 "${f%.trs}.log"
done
echo "times: dependencies $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s"
echo "$pass passed, $fail failed, $skip skipped"
[ "$status" -eq 0 ] && [ "$fail" -eq 0 ]
