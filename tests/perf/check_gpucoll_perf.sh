#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# perf/gpucoll_perf checks its own arithmetic and reports wrong results as wrong:
#
#  1. --self-test: bus factors, algbw, sizes, expected values and the bit-exact comparison
#     against values worked out by hand;
#  2. every collective (alltoallv: alltoall's blocks) on 3 ranks (emulated device buffers
#     through coll/gpu, and host buffers for two of them: every run costs an mpirun start, about
#     a second here; the rooted ones from root 1): no #wrong, exit 0; in the CSV, algbw = size /
#     time and
#     busbw = algbw * nccl-tests' factor for n = 3, and the root column, on every line; JSON
#     and CSV agree; the MPI_T counters show the device calls were run by coll/gpu (native
#     inside the node where it has an algorithm, else staged);
#  3. --inject-error (one rank's input corrupted in the checked call): exit 1, and #wrong is
#     exactly the number of result elements the corrupted input reaches, per row (allreduce:
#     every rank; reduce, gather: the root; reduce_scatter, alltoall(v), scatter: one rank;
#     allgather: all);
#  4. the printed table (the text CI logs show) has the same #wrong as the CSV;
#  5. the nonblocking, persistent and stream-ordered forms (-F, graph included; scatter
#     nonblocking, gather persistent): correct results, the form's counters (native calls on
#     device buffers), and a post time and an overlap in [0, 100] % on every row; the
#     device-driven device_two_shot's nonblocking form with --compute sleep: one submission
#     and no host wait per call;
#  6. coll_gpu_bench -c dup_iallreduce (MPI_Comm_dup, MPI_Iallreduce, MPI_Comm_free): native
#     under coll_gpu_native_setup=first_call (the call starts the setup and waits for it) and
#     under create.
#
# Runs from "make check" (tests/, test_env.sh sourced) or by hand:
#   TEST_ENV=build/tests/test_env.sh PERF_BIN=build/perf/gpucoll_perf tests/perf/check_gpucoll_perf.sh
here=$(cd "$(dirname "$0")" && pwd)
# check_common.sh finds test_env.sh and the mpirun environment; its program search is for
# the tests/mpi programs, which this script does not use.
# shellcheck source=../mpi/check_common.sh
. "$here/../mpi/check_common.sh"

PERF=${PERF_BIN:-${abs_top_builddir:-$CHECK_BIN_DIR/../..}/perf/gpucoll_perf}
[ -x "$PERF" ] || check_die "gpucoll_perf not found at $PERF (build perf/, or set PERF_BIN)"
NP=3
# nccl-tests' bus factors, as awk expressions of n (evaluated there, in full precision)
FACTOR_allreduce="2 * (n - 1) / n"
FACTOR_reduce_scatter="(n - 1) / n"
FACTOR_allgather="(n - 1) / n"
FACTOR_alltoall="(n - 1) / n"
FACTOR_alltoallv="(n - 1) / n"
FACTOR_bcast="1"
FACTOR_reduce="1"
FACTOR_gather="(n - 1) / n"
FACTOR_scatter="(n - 1) / n"
# the CSV's root column in the runs of 2. and 3. (-r 1; -1: a collective without a root)
root_of() {
    case $1 in
    bcast | reduce | gather | scatter) echo 1 ;;
    *) echo -1 ;;
    esac
}

# perf_run LABEL EXPECTED_EXIT MCA ARGS...: one mpirun of gpucoll_perf (out: $LAST_LOG)
perf_run() {
    local label=$1 want=$2 mca=$3 rc
    shift 3
    # shellcheck disable=SC2086
    check_mca_args $CHECK_DEFAULT_MCA $mca
    LAST_LOG="$CHECK_LOGDIR/run$((CHECK_PASS + CHECK_FAIL + CHECK_SKIP)).log"
    echo "=== $label"
    echo "    $MPIRUN -n $NP ${CHECK_MCA_ARGS[*]} $PERF $*"
    timeout -k 10 "$TEST_TIMEOUT" "$MPIRUN" -n "$NP" "${CHECK_MCA_ARGS[@]}" "$PERF" "$@" \
        >"$LAST_LOG" 2>&1
    rc=$?
    if [ "$rc" = "$want" ]; then
        echo "    PASS (exit $rc)"
        check_count PASS "$label"
    else
        cat "$LAST_LOG"
        echo "    FAIL (exit $rc, expected $want)"
        check_count FAIL "$label"
    fi
    [ "${TEST_VERBOSE:-0}" = 1 ] && cat "$LAST_LOG"
    return 0
}

# check_awk LABEL PROGRAM [VAR=VALUE...] FILE: awk -F, (VAR=VALUE operands set variables, FS
# too); the program prints "ok" when the check holds
check_awk() {
    local label=$1 prog=$2 out
    shift 2
    out=$(awk -F, "$prog" "$@" 2>&1)
    if [ "$out" = ok ]; then
        echo "    $label: PASS"
        check_count PASS "$label"
    else
        echo "    $label: FAIL: $out"
        check_count FAIL "$label: $out"
    fi
}

# 1. the arithmetic, alone
NP=1 perf_run "self-test" 0 "" --self-test
check_expect_output "self-test summary" '^self-test: [0-9]+ checks, 0 failed'

# (coll_gpu_memory_kinds_uniform: every rank passes device memory, so the nonblocking and
# persistent forms run natively, which section 5 counts)
DEVICE_MCA="coll_gpu_accelerator=emulated coll_gpu_memory_kinds_uniform=1"
SWEEP=(-b 1 -e 64K -f 16 -n 3 -w 1 -r 1)
for coll in allreduce reduce_scatter allgather bcast reduce alltoall alltoallv gather scatter; do
    factor_var=FACTOR_$coll
    factor=${!factor_var}
    mems=device
    case $coll in allreduce | allgather) mems="host device" ;; esac
    for mem in $mems; do
        csv=$CHECK_LOGDIR/$coll-$mem.csv json=$CHECK_LOGDIR/$coll-$mem.json
        mca=""
        [ $mem = device ] && mca=$DEVICE_MCA
        # 2. correct results, and the columns' arithmetic
        perf_run "$coll, $mem buffers" 0 "$mca" -o "$coll" -d int32 -m "$mem" -a emulated \
            "${SWEEP[@]}" --csv "$csv" --json "$json"
        check_expect_output "$coll $mem: no errors" '^# Out of bounds values : 0 OK'
        check_awk "$coll $mem: algbw = size/time, busbw = algbw * ($factor), 0 wrong" '
            BEGIN { n = '"$NP"'; f = '"$factor"'; root = '"$(root_of "$coll")"' }
            NR == 1 { next }
            $5 != n { bad = bad " nranks " $5 }
            $4 != root { bad = bad " root " $4 }
            { rows++
              algbw = $7 / $10 / 1e3
              if ($13 != 0) bad = bad " wrong=" $13 " at " $7
              if (($11 - algbw) ^ 2 > (1e-6 * algbw) ^ 2) bad = bad " algbw " $11 " != " algbw
              if (($12 - $11 * f) ^ 2 > (1e-6 * $12) ^ 2) bad = bad " busbw " $12 " != " $11 "*" f }
            END { if (rows < 4) bad = bad " only " rows " rows"; print bad ? bad : "ok" }' \
            "$csv"
        if [ $mem = device ]; then
            # the JSON names the counters: every timed and checked call run natively by
            # coll/gpu (every collective here has a native algorithm), but the small calls
            # auto stages (coll_gpu_<coll>_staged_max_bytes: every collective here)
            path=native staged="[1-9][0-9]*"
            check_expect_output "$coll device: native in coll/gpu" \
                "^# coll/gpu on rank 0: $coll calls: 0 passed through, $staged staged, [1-9][0-9]* native"
            if grep -q "\"calls_$path\": [1-9]" "$json" && grep -q '"memory": "device"' "$json" &&
                [ "$(grep -c '"size":' "$json")" = "$(grep -c out_of_place "$csv")" ]; then
                echo "    $coll device: JSON agrees with CSV: PASS"
                check_count PASS "$coll json"
            else
                cat "$json"
                echo "    $coll device: JSON agrees with CSV: FAIL"
                check_count FAIL "$coll json"
            fi
        fi
    done
done

# 3. a wrong result is counted: per row and placement, the elements the corrupted input
#    reaches (3 ranks; each size holds at least 2 elements per rank)
for coll in allreduce reduce_scatter allgather bcast reduce alltoall alltoallv gather scatter; do
    case $coll in
    allreduce | allgather | bcast) want=$NP ;; # every rank receives the element
    *) want=1 ;;                               # one rank: the root, or the block's owner
    esac
    mems=device
    case $coll in reduce_scatter | bcast) mems="host device" ;; esac
    for mem in $mems; do
        csv=$CHECK_LOGDIR/$coll-$mem-inject.csv
        mca=""
        [ $mem = device ] && mca=$DEVICE_MCA
        perf_run "$coll, $mem buffers, --inject-error" 1 "$mca" -o "$coll" -m "$mem" \
            -a emulated -b 64 -e 64K -f 32 -n 1 -w 0 -r 1 --inject-error --csv "$csv"
        check_expect_output "$coll $mem: reported" '^# Out of bounds values : [1-9][0-9]* FAILED'
        check_awk "$coll $mem: #wrong = $want on every row" '
            NR == 1 { next }
            { rows++; total += $13; if ($13 != w) bad = bad " " $7 "/" $9 ": " $13 }
            END { if (rows < 2) bad = bad " only " rows " rows"; print bad ? bad : "ok" }' \
            w="$want" "$csv"
        # 4. the table shows the same counts: column 9 (out-of-place #wrong) of each row
        check_awk "$coll $mem: the table shows #wrong" '
            /^ +[0-9]/ { rows++; if ($9 != w) bad = bad " " $1 ": " $9 }
            END { if (rows < 2) bad = bad " only " rows " rows"; print bad ? bad : "ok" }' \
            w="$want" "FS= " "$LAST_LOG"
    done
done

# 5. the nonblocking, persistent and stream-ordered forms (graph: the enqueue captured into a
# CUDA graph, launched)
for form in nonblocking persistent stream graph; do
    case $form in
    nonblocking) colls="allreduce bcast alltoall scatter" ;;
    persistent) colls="allreduce bcast alltoall gather" ;;
    *) colls=allreduce ;;
    esac
    for coll in $colls; do
        csv=$CHECK_LOGDIR/$coll-$form.csv
        perf_run "$coll $form, device buffers" 0 "$DEVICE_MCA" -o "$coll" -d int32 -m device \
            -a emulated -F "$form" -b 64 -e 256K -f 64 -n 3 -w 1 -r 1 --csv "$csv"
        check_expect_output "$coll $form: no errors" '^# Out of bounds values : 0 OK'
        # nonblocking: the blocking form's algorithm on the communicator's thread (the
        # benchmark's first blocking call set the scratch up); persistent: every start posts
        # the nonblocking form; stream: MPIX_Allreduce_enqueue queued on the stream (graph: the
        # check's enqueue, outside the graph, is counted; the launches are not host calls)
        want="0 passed through, 0 staged, [1-9][0-9]* native"
        check_expect_output "$coll $form: $want" "^# coll/gpu on rank 0: $coll calls: $want"
        check_awk "$coll $form: post time and overlap on every row" '
            NR == 1 { next }
            $9 == "out_of_place" { rows++
              if ($14 != f) bad = bad " form " $14
              if ($15 < 0 || $15 > $10) bad = bad " post " $15 " of " $10
              if ($16 < 0 || $16 > 100) bad = bad " overlap " $16 }
            END { if (rows < 3) bad = bad " only " rows " rows"; print bad ? bad : "ok" }' \
            f="$form" "$csv"
    done
done

# the device-driven row's nonblocking form with a host that yields its core (--compute sleep):
# launched by the caller, one submission and no wait at the post, an overlap in [0, 100] %
csv=$CHECK_LOGDIR/allreduce-device-sleep.csv
perf_run "allreduce nonblocking, device_two_shot, --compute sleep" 0 \
    "$DEVICE_MCA coll_gpu_allreduce_algorithm=device_two_shot" -o allreduce -m device \
    -a emulated -F nonblocking --compute sleep -b 64K -e 1M -f 4 -n 3 -w 1 -r 1 --csv "$csv"
check_expect_output "device_two_shot nonblocking: no errors" '^# Out of bounds values : 0 OK'
check_expect_output "device_two_shot nonblocking: one submission, no wait, no signal per call" \
    '^#   per call on rank 0.s host: 1.00 device submissions, 0.00 stream waits, 0.00 signals'
check_awk "device_two_shot nonblocking: post time and overlap on every row" '
    NR == 1 { next }
    $9 == "out_of_place" { rows++
      if ($15 < 0 || $15 > $10) bad = bad " post " $15 " of " $10
      if ($16 < 0 || $16 > 100) bad = bad " overlap " $16 }
    END { if (rows < 3) bad = bad " only " rows " rows"; print bad ? bad : "ok" }' "$csv"

# 6. coll_gpu_bench -c dup_iallreduce: a fresh communicator's first MPI_Iallreduce, native
# under coll_gpu_native_setup=first_call (queued behind the setup it starts) and under create
# (passed through: MPI_Comm_dup's own host MPI_Iallreduce on MPI_COMM_WORLD, Open MPI's
# agreement on the new context id)
for setup in first_call create; do
    want="0 dup_iallreduce calls staged, [0-9]* passed through, [1-9][0-9]* native"
    PERF=${PERF%/*}/coll_gpu_bench perf_run "dup_iallreduce, setup $setup" 0 \
        "$DEVICE_MCA coll_gpu_native_setup=$setup" -c dup_iallreduce -m device -a emulated \
        -b 4K -e 4K -n 5 -w 1
    check_expect_output "dup_iallreduce, setup $setup: $want" "^# coll/gpu on rank 0: $want"
done

check_finish
