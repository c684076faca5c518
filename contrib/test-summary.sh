# SPDX-License-Identifier: BSD-3-Clause
# Sourced by run-tests.sh and ompi5-check.sh: the results of one `make check`.
#
#   test_summary TESTS_DIR STRIP LABEL
# prints every test's result (its path without the prefix STRIP, then LABEL), then for each
# failed test the failed checks of its log (a CI reader sees the cause, not only the log's
# last lines, which are often the passing checks of the processes that ended last) and its
# last lines; sets test_pass, test_fail and test_skip.
test_summary() {
    local dir=$1 strip=$2 label=$3 logs f
    logs=$(find "$dir" -name '*.trs' 2>/dev/null | sort)
    for f in $logs; do
        printf '%-6s %s%s\n' "$(sed -n 's/^:test-result: //p' "$f" | head -1)" "${f#"$strip"}" "$label"
    done
    for f in $(grep -lE '^:test-result: (FAIL|ERROR)' $logs /dev/null); do
        echo "===== ${f%.trs}.log$label: its failures"
        # (-m, not a pipe into head: under pipefail grep's SIGPIPE past 40 lines ended CI's
        # script here, before its counts and the Open MPI 5 half)
        grep -a -m 40 -E '^(FAIL|ERROR)|still running|killed|timed out|^ +FAIL' "${f%.trs}.log" || true
        echo "----- its last lines"
        tail -n 30 "${f%.trs}.log"
    done
    test_pass=$(cat $logs /dev/null | grep -c '^:test-result: PASS' || true)
    test_fail=$(cat $logs /dev/null | grep -cE '^:test-result: (FAIL|ERROR|XPASS)' || true)
    test_skip=$(cat $logs /dev/null | grep -c '^:test-result: SKIP' || true)
}
