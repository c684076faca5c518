#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The cg example, unchanged, with and without coll/gpu: the same answer, bit for bit.
#
#   1. cg_host, Open MPI alone                                  -> the reference answer
#   2. cg_host, coll/gpu loaded and active (emulated backend)   -> the same bits
#   3. cg_emulated, reduction buffers in emulated device memory, coll/gpu staging every
#      MPI_Allreduce (coll_gpu_allreduce_algorithm staged; coll_gpu_verbose 10 shows each
#      call)                                                      -> the same bits
#   3b. cg_emulated with coll/gpu's native allreduce (one-shot forced: auto stages these
#      8-byte calls; rank order: another order than Open MPI's, so compared within 1e-9),
#      twice                                                      -> the same bits both times
#   3c. cg_emulated with the defaults: auto stages every 8-byte allreduce (the cost model has
#      staging faster there)                                      -> the bits of 1
#   4. cg_cuda, when built and a GPU is present: coll/gpu with the cuda backend; its kernels
#      sum in another order than the host loops, so the answer is compared to the reference
#      within a tolerance (same iteration count, residual and sum(x) within 1e-9 relative)
#
# Every run is deterministic: the local sums have a fixed order, and Open MPI's allreduce
# (which coll/gpu's staging calls on the staged host copy) has a fixed order for a given
# number of ranks and count; so the bits must agree, not only the digits.
#
# From "make check" (test_env.sh sourced), or by hand in the build's contrib/examples:
#   . ../../tests/test_env.sh && ./check_cg.sh [/path/to/srcdir]
NP=${CG_NP:-4}
ARGS=${CG_ARGS:--n 64}
bin=${builddir:-.}
: "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
[ -n "$COLL_GPU_MCA" ] || { echo "COLL_GPU_MCA not set: source tests/test_env.sh"; exit 1; }
read -r -a COMPONENT <<<"$COLL_GPU_MCA"
BASE=(--mca op ^avx) # Debian's Open MPI 4.1.4 op/avx (open-mpi/ompi#8045)
pass=0 fail=0
log=$(mktemp -d "${TMPDIR:-/tmp}/check_cg.XXXXXX")
trap 'rm -rf "$log"' EXIT

# run NAME PROGRAM MPIRUN_ARGS...: prints the output, keeps the answer line in $log/NAME
run() {
    local name=$1 prog=$2
    shift 2
    echo "=== $name: $MPIRUN -np $NP $* $bin/$prog $ARGS"
    # shellcheck disable=SC2086
    timeout -k 10 300 "$MPIRUN" -np "$NP" "$@" "$bin/$prog" $ARGS >"$log/$name.out" 2>&1
    local rc=$?
    grep -v 'coll:gpu' "$log/$name.out"
    grep '^cg answer:' "$log/$name.out" >"$log/$name"
    if [ $rc != 0 ] || [ ! -s "$log/$name" ]; then
        cat "$log/$name.out"
        echo "    FAIL (exit $rc)"
        fail=$((fail + 1))
        return 1
    fi
}

same() {
    if cmp -s "$log/$1" "$log/$2"; then
        echo "    PASS: $2 has the answer of $1, bit for bit"
        pass=$((pass + 1))
    else
        echo "    FAIL: $1 and $2 differ:"
        cat "$log/$1" "$log/$2"
        fail=$((fail + 1))
    fi
}

# Open MPI alone: coll/gpu excluded by name too, since make install puts it where mpirun
# finds it without the component path
run host-without cg_host "${BASE[@]}" --mca coll ^gpu && pass=$((pass + 1))
run host-with cg_host "${COMPONENT[@]}" "${BASE[@]}" --mca coll_gpu_accelerator emulated &&
    same host-without host-with
# all_staged RUN WHY: every MPI_Allreduce of run RUN was staged (the short line of each staged
# call: the ranks' longer lines may interleave), and the log has WHY (grep pattern)
all_staged() {
    local iterations staged
    iterations=$(sed -n 's/^cg answer: iterations \([0-9]*\),.*/\1/p' "$log/$1")
    staged=$(grep -c 'coll:gpu: MPI_Allreduce: staged' "$log/$1.out")
    # 2 allreduces per iteration, 2 outside the loop, on every rank
    if [ "$staged" -ge $(((2 * iterations + 2) * NP)) ] && grep -q "$2" "$log/$1.out"; then
        echo "    PASS: $1: coll/gpu staged $staged MPI_Allreduce calls on device buffers ($2)"
        pass=$((pass + 1))
    else
        echo "    FAIL: $1: $staged staged MPI_Allreduce calls (iterations $iterations), or no '$2'"
        fail=$((fail + 1))
    fi
}
if run emulated-with cg_emulated "${COMPONENT[@]}" "${BASE[@]}" \
    --mca coll_gpu_accelerator emulated --mca coll_gpu_verbose 10 \
    --mca coll_gpu_allreduce_algorithm staged; then
    same host-without emulated-with
    all_staged emulated-with 'coll_gpu_allreduce_algorithm=staged'
fi
# the defaults: auto stages the small allreduces, Open MPI's order on the staged copies
if run emulated-auto cg_emulated "${COMPONENT[@]}" "${BASE[@]}" \
    --mca coll_gpu_accelerator emulated --mca coll_gpu_verbose 10; then
    same host-without emulated-auto
    all_staged emulated-auto 'algorithm_staged: auto, 8 bytes <= coll_gpu_allreduce_staged_max_bytes'
fi
# the native allreduce: its own fixed order, so the same bits run to run, and the answer of
# the host reference within rounding
if run emulated-native cg_emulated "${COMPONENT[@]}" "${BASE[@]}" \
    --mca coll_gpu_accelerator emulated --mca coll_gpu_verbose 10 \
    --mca coll_gpu_allreduce_algorithm one_shot &&
    run emulated-native2 cg_emulated "${COMPONENT[@]}" "${BASE[@]}" \
        --mca coll_gpu_accelerator emulated --mca coll_gpu_allreduce_algorithm one_shot; then
    same emulated-native emulated-native2
    native=$(grep -c 'coll:gpu: MPI_Allreduce on .*: one_shot' "$log/emulated-native.out")
    if [ "$native" -ge "$NP" ] &&
        awk '{ for (i = 1; i <= NF; i++) if ($i == "iterations") it[NR] = $(i + 1);
               r[NR] = $6; s[NR] = $9 }
             END { ok = it[1] == it[2] && (r[1] - r[2]) ^ 2 <= (1e-9 * r[1]) ^ 2 &&
                   (s[1] - s[2]) ^ 2 <= (1e-9 * s[1]) ^ 2; exit !ok }' \
            "$log/host-without" "$log/emulated-native"; then
        echo "    PASS: native allreduce ($native one-shot calls) agrees with cg_host within 1e-9"
        pass=$((pass + 1))
    else
        echo "    FAIL: native allreduce: $native one-shot calls, answers:"
        cat "$log/host-without" "$log/emulated-native"
        fail=$((fail + 1))
    fi
fi
if [ -x "$bin/cg_cuda" ] && nvidia-smi -L >/dev/null 2>&1; then
    if run cuda-with cg_cuda "${COMPONENT[@]}" "${BASE[@]}" --mca coll_gpu_accelerator cuda; then
        if awk '{ for (i = 1; i <= NF; i++) if ($i == "iterations") it[NR] = $(i + 1);
                  r[NR] = $6; s[NR] = $9 }
                END { ok = it[1] == it[2] && (r[1] - r[2]) ^ 2 <= (1e-9 * r[1]) ^ 2 &&
                      (s[1] - s[2]) ^ 2 <= (1e-9 * s[1]) ^ 2; exit !ok }' \
            "$log/host-without" "$log/cuda-with"; then
            echo "    PASS: cg_cuda agrees with cg_host (same iterations, within 1e-9)"
            pass=$((pass + 1))
        else
            echo "    FAIL: cg_cuda and cg_host disagree:"
            cat "$log/host-without" "$log/cuda-with"
            fail=$((fail + 1))
        fi
    fi
else
    echo "=== cg_cuda: skipped (not built, or no GPU)"
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
