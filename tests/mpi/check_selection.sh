#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Selection of coll/gpu (test_selection) and its parameters:
#   - ompi_info lists every parameter of the contract with a help string;
#   - with the component: its counters exist and count, host memory passes straight through,
#     device memory is staged; at coll_gpu_verbose 10 one line per staged call;
#   - coll_gpu_enable 0: collectives correct on host memory, counters stay 0;
#   - coll_gpu_accelerator cuda / auto without a GPU: the component disables itself, says why
#     at coll_gpu_verbose 1, and stays out of the way;
#   - without the component path: Open MPI alone, the same programs are correct.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

PARAMS="priority enable verbose accelerator staging_buffer_size staged_pipeline
check_memory_kinds memory_kinds_uniform"

# --- ompi_info: ignores --mca, so the component path goes through the environment
component_path=${COLL_GPU_COMPONENT_PATH:-$(echo "$COLL_GPU_MCA" |
    sed -n 's/.*mca_base_component_path[ =]\([^ ]*\).*/\1/p')}
echo "=== ompi_info --param coll gpu --level 9"
info_log="$CHECK_LOGDIR/ompi_info.log"
# ompi_info is no ASan program: an ASan component needs the runtime preloaded into it
preload=
[ "${COLL_GPU_ASAN:-0}" = 1 ] && preload=$(${CC:-gcc} -print-file-name=libasan.so)
LD_PRELOAD=$preload OMPI_MCA_mca_base_component_path=$component_path timeout 60 "$OMPI_INFO" \
    --param coll gpu --level 9 --parsable >"$info_log" 2>&1
missing=""
for p in $PARAMS; do
    # mca:coll:gpu:param:coll_gpu_<p>:help:<text>
    if ! grep -Eq "^mca:coll:gpu:param:coll_gpu_${p}:help:.*[^[:space:]]" "$info_log"; then
        missing="$missing coll_gpu_$p"
    fi
done
if [ -z "$missing" ]; then
    echo "    every parameter listed with a help string: PASS"
    check_count PASS "ompi_info"
else
    cat "$info_log"
    echo "    missing or without help:$missing: FAIL"
    check_count FAIL "ompi_info:$missing"
fi

EMU="coll_gpu_accelerator=emulated"
# test_selection's nonblocking device calls run natively (every rank passes device memory to
# them: coll_gpu_memory_kinds_uniform, the user's promise)
UNIFORM="coll_gpu_memory_kinds_uniform=1"

# --- the component active
for np in 1 3; do
    check_run "$np ranks, enabled" $np "$EMU $UNIFORM" test_selection --expect=enabled \
        --kinds=host,device
done

# --- one line per staged call at verbose 10 (the test prints how many calls it staged)
check_run "2 ranks, enabled, coll_gpu_verbose 10" 2 "$EMU coll_gpu_verbose=10" \
    test_selection --expect=enabled --kinds=host,device
if [ "$CHECK_RESULT" = PASS ]; then
    staged=$(sed -n 's/.*staged calls: \([0-9][0-9]*\).*/\1/p' "$LAST_LOG" | tail -n 1)
    lines=$(grep -ac 'coll:gpu' "$LAST_LOG")
    if [ -n "$staged" ] && [ "$staged" -gt 0 ] && [ "$lines" -ge "$staged" ]; then
        echo "    $lines coll:gpu lines for $staged staged calls: PASS"
        check_count PASS "verbose 10"
    else
        cat "$LAST_LOG"
        echo "    $lines coll:gpu lines for ${staged:-?} staged calls: FAIL"
        check_count FAIL "verbose 10: $lines lines for ${staged:-?} staged calls"
    fi
fi

# --- disabled by parameter
check_run "2 ranks, coll_gpu_enable 0" 2 "$EMU coll_gpu_enable=0" test_selection \
    --expect=disabled

# --- cuda / auto: disabled without a GPU (where there is one, the component must be active)
if [ "${COLL_GPU_HAVE_CUDA:-0}" = 1 ] && { [ -e /dev/nvidia0 ] || nvidia-smi -L >/dev/null 2>&1; }; then
    for acc in cuda auto; do
        check_run "2 ranks, accelerator $acc on a GPU machine" 2 \
            "coll_gpu_accelerator=$acc coll_gpu_verbose=1" test_selection --expect=enabled \
            --device=cuda --kinds=host,device
    done
else
    for acc in cuda auto; do
        check_run "2 ranks, accelerator $acc without a GPU" 2 \
            "coll_gpu_accelerator=$acc coll_gpu_verbose=1" test_selection --expect=disabled
        # e.g. "coll:gpu: disabled: libcuda.so.1 not found (no NVIDIA driver)"
        check_expect_output "verbose 1 says why ($acc)" "coll:gpu: disabled: .+"
    done
fi

# --- Open MPI alone
CHECK_NO_COMPONENT=1 check_run "2 ranks, without the component" 2 "" test_selection \
    --expect=absent

check_finish
