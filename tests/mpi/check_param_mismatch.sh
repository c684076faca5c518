#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Parameters the ranks must agree on, given differently on one rank (test_param_mismatch).
#
# The list is the component's own: every parameter whose help, in "ompi_info --parsable",
# ends with the sentence of the parameters marked PROTOCOL in coll_gpu_params.h (deprecated
# synonyms left out).  For each, a legal value other than the one the ranks run with: a bool
# flipped, an enum's other value (a native algorithm where there is one), a flag set without
# its last flag, an integer halved (0 -> 1, 1 -> 2, -1 -> 0), a size halved (0 -> 4096, no end
# -> 1 MiB, at least 4096), tuning_file a file of one rule (allreduce: ring).  Then 3 ranks on
# the emulated accelerator, world rank 1 alone given that value (--odd-env, before MPI_Init),
# run MPI_Allreduce (8 B, 4 MiB), MPI_Bcast, MPI_Reduce,
# MPI_Allgather, MPI_Iallreduce + MPI_Wait and a persistent MPI_Allreduce_init on emulated
# device memory, on MPI_COMM_WORLD and on a dup: no hang, the right result on every rank.
# A value that keeps the component off rank 1 (coll_gpu_enable false, an accelerator it lacks,
# a priority below tuned's) leaves Open MPI's own collectives there, on host buffers: the other
# ranks must meet them (their modex records, coll_gpu_presence.h).  A last run has coll/gpu not
# loaded at all on rank 1 (OMPI_MCA_coll=^gpu).
# A run with every rank the same comes first.  The closing table says what each parameter did.
#
# One node by default (about 1 s a run; emulated nodes cost half a second more per run, over
# the script's 90 s): CHECK_PARAM_MISMATCH_MCA="coll_gpu_ranks_per_node=2" runs every case
# across 2 emulated nodes ({0,1}, {2}), where the band and rails parameters choose.
# Knobs: CHECK_PARAM_MISMATCH_TIMEOUT (seconds per mpirun, default 20),
# CHECK_PARAM_MISMATCH_CASE_TIMEOUT (seconds per case before the program calls it a hang,
# default 5), CHECK_PARAM_MISMATCH_ONLY (an extended regex: only the parameters it matches),
# CHECK_PARAM_MISMATCH_MCA (more NAME=VALUE for every rank).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

TEST_TIMEOUT=${CHECK_PARAM_MISMATCH_TIMEOUT:-20}
CASE_TIMEOUT=${CHECK_PARAM_MISMATCH_CASE_TIMEOUT:-5}
# the sentence coll_gpu_params.h's COLL_GPU_PARAM_PROTOCOL_HELP ends a marked help with
SENTENCE="Every rank must be given the same value (the ranks compare it; a mismatch stages the communicator's device collectives)."
RUN_MCA="coll_gpu_accelerator=emulated ${CHECK_PARAM_MISMATCH_MCA:-}"

# --- the marked parameters, from ompi_info (it ignores --mca: the path through the environment)
component_path=${COLL_GPU_COMPONENT_PATH:-$(echo "$COLL_GPU_MCA" |
    sed -n 's/.*mca_base_component_path[ =]\([^ ]*\).*/\1/p')}
info_log="$CHECK_LOGDIR/ompi_info.log"
preload=
[ "${COLL_GPU_ASAN:-0}" = 1 ] && preload=$(${CC:-gcc} -print-file-name=libasan.so)
LD_PRELOAD=$preload OMPI_MCA_mca_base_component_path=$component_path timeout 60 "$OMPI_INFO" \
    --param coll gpu --level 9 --parsable >"$info_log" 2>&1

# one line per marked parameter: NAME TYPE VALUE ENUM_NAMES (comma-separated, "-": none)
params="$CHECK_LOGDIR/params"
awk -F: -v sentence="$SENTENCE" '
    $1 == "mca" && $4 == "param" {
        name = $5; sub(/^coll_gpu_/, "", name)
        if (!(name in seen)) { seen[name] = 1; order[++n] = name }
        rest = $0
        for (k = 0; k < 6; k++) sub(/^[^:]*:/, "", rest)
        if ($6 == "type") type[name] = rest
        else if ($6 == "value") value[name] = rest
        else if ($6 == "deprecated") deprecated[name] = rest
        else if ($6 == "enumerator") {
            e = rest; sub(/^value:[^:]*:/, "", e)
            if (name in enums) enums[name] = enums[name] "," e
            else enums[name] = e
        } else if ($6 == "help") {
            tail = substr(rest, length(rest) - length(sentence) + 1)
            if (tail == sentence) marked[name] = 1
        }
    }
    END {
        for (i = 1; i <= n; i++) {
            p = order[i]
            if ((p in marked) && deprecated[p] != "yes")
                print p, type[p], (value[p] == "" ? "-" : value[p]), ((p in enums) ? enums[p] : "-")
        }
    }' "$info_log" >"$params"
count=$(wc -l <"$params")
# the list must be the component's: a changed sentence would otherwise test nothing
if [ "$count" -ge 40 ] && grep -q '^native_nonblocking ' "$params" &&
    grep -q '^allreduce_algorithm ' "$params" && grep -q '^tuning_file ' "$params"; then
    echo "=== ompi_info: $count parameters the ranks must agree on: PASS"
    check_count PASS "ompi_info"
else
    cat "$info_log"
    echo "=== ompi_info: $count parameters the ranks must agree on (native_nonblocking," \
        "allreduce_algorithm, tuning_file among them?): FAIL"
    check_count FAIL "ompi_info: the marked parameters"
fi

# The value every rank runs with: ours, else check_common's, else the default.
run_value() {
    local name=$1 pair value=$2
    for pair in $CHECK_DEFAULT_MCA $RUN_MCA; do
        [ "${pair%%=*}" = "coll_gpu_$name" ] && value=${pair#*=}
    done
    echo "$value"
}

# A legal value of NAME other than BASE (TYPE, ENUM names), "" when none is found.
other_value() {
    local name=$1 type=$2 base=$3 enums=$4 e first="" flags=""
    if [ "$name" = tuning_file ]; then
        echo "allreduce * * * ring" >"$CHECK_LOGDIR/ring.conf"
        echo "$CHECK_LOGDIR/ring.conf"
        return
    fi
    if [ "$enums" != "-" ] && [ "$type" = unsigned_int ]; then
        # a flag set (transports): every flag but the last
        IFS=, read -r -a e <<<"$enums"
        flags=$(
            IFS=,
            echo "${e[*]:0:${#e[@]}-1}"
        )
        [ "$flags" != "$base" ] && echo "$flags"
        return
    fi
    if [ "$enums" != "-" ] && [ "$type" != bool ]; then
        # another value, a native one (neither auto nor staged) where there is one
        for e in ${enums//,/ }; do
            [ "$e" = "$base" ] && continue
            [ -z "$first" ] && first=$e
            if [ "$e" != auto ] && [ "$e" != staged ]; then
                echo "$e"
                return
            fi
        done
        echo "$first"
        return
    fi
    case $type in
    bool)
        case $base in
        true | 1) echo false ;;
        *) echo true ;;
        esac
        ;;
    size_t | unsigned_long | unsigned_long_long)
        if [ "${#base}" -ge 19 ]; then
            echo 1048576 # no end (SIZE_MAX)
        elif [ "$base" = 0 ]; then
            echo 4096
        elif [ "$base" -ge 8192 ]; then
            echo $((base / 2))
        elif [ "$base" = 4096 ]; then
            echo 8192
        else
            echo 4096
        fi
        ;;
    int | unsigned_int | long)
        if [ "$base" = 0 ]; then
            echo 1
        elif [ "$base" -lt 0 ]; then
            echo 0
        elif [ "$base" = 1 ]; then
            echo 2
        else
            echo $((base / 2))
        fi
        ;;
    esac
}

# What a failed run did, from its output (and its seconds: mpirun's timeout is a hang too).
failure_kind() {
    if grep -aq 'did not complete within' "$LAST_LOG" || [ "$1" -ge "$TEST_TIMEOUT" ]; then
        echo "hang"
    elif grep -aq 'element [0-9]* of' "$LAST_LOG"; then
        echo "wrong result"
    elif grep -aq ' returned [0-9]* (' "$LAST_LOG"; then
        echo "error returned"
    else
        echo "crash or abort"
    fi
}

summary="$CHECK_LOGDIR/summary"
: >"$summary"
check_run "every rank the same values" 3 "$RUN_MCA" test_param_mismatch \
    --case-timeout="$CASE_TIMEOUT"
echo "(every rank the same) $CHECK_RESULT" >>"$summary"

# (read first: mpirun would eat a loop's standard input)
mapfile -t rows <"$params"
for row in "${rows[@]}"; do
    read -r name type default enums <<<"$row"
    if [ -n "${CHECK_PARAM_MISMATCH_ONLY:-}" ] && ! [[ $name =~ $CHECK_PARAM_MISMATCH_ONLY ]]; then
        continue
    fi
    base=$(run_value "$name" "$default")
    value=$(other_value "$name" "$type" "$base" "$enums")
    if [ -z "$value" ] || [ "$value" = "$base" ]; then
        echo "=== coll_gpu_$name ($type, $base): no other legal value found: FAIL"
        check_count FAIL "coll_gpu_$name: no other value"
        echo "coll_gpu_$name FAIL (no other legal value of $type $base)" >>"$summary"
        continue
    fi
    started=$SECONDS
    check_run "coll_gpu_$name=$value on world rank 1 only (the others: $base)" 3 "$RUN_MCA" \
        test_param_mismatch --case-timeout="$CASE_TIMEOUT" \
        "--odd-env=OMPI_MCA_coll_gpu_$name=$value"
    if [ "$CHECK_RESULT" = FAIL ]; then
        echo "coll_gpu_$name=$value (others $base) FAIL: $(failure_kind $((SECONDS - started)))" >>"$summary"
    elif [ "$CHECK_RESULT" = SKIP ]; then
        echo "coll_gpu_$name=$value (others $base) SKIP: the component off on rank 1" >>"$summary"
    else
        echo "coll_gpu_$name=$value (others $base) $CHECK_RESULT" >>"$summary"
    fi
done

# not a parameter of the component: the component itself absent from rank 1
if [ -z "${CHECK_PARAM_MISMATCH_ONLY:-}" ] || [[ not_loaded =~ $CHECK_PARAM_MISMATCH_ONLY ]]; then
    started=$SECONDS
    check_run "coll/gpu not loaded on world rank 1 (OMPI_MCA_coll=^gpu)" 3 "$RUN_MCA" \
        test_param_mismatch --case-timeout="$CASE_TIMEOUT" "--odd-env=OMPI_MCA_coll=^gpu"
    if [ "$CHECK_RESULT" = FAIL ]; then
        echo "coll/gpu not loaded on rank 1 FAIL: $(failure_kind $((SECONDS - started)))" >>"$summary"
    else
        echo "coll/gpu not loaded on rank 1 $CHECK_RESULT" >>"$summary"
    fi
fi

echo "=== per parameter (world rank 1's value; the others'):"
sed 's/^/    /' "$summary"
check_finish
