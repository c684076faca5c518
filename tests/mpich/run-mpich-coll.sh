#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPICH's collective test suite (test/mpi/coll of Debian's mpich source package, MPICH 4.x)
# against Open MPI, with and without coll/gpu:
#
#   plain   Open MPI alone (--mca coll ^gpu)
#   host    through coll/gpu in host-buffer mode (coll_gpu_host_buffers=1, accelerator
#           emulated): host buffers run the component's native algorithms
#   nodes   the same on emulated nodes (coll_gpu_ranks_per_node: 2, 1 below 4 ranks), UCX
#           between the nodes over tcp (UCX_TLS=tcp,self)
#
# Every test of coll/testlist.in runs with its rank count and arguments, under a per-test
# timeout; it passes when it exits 0 and prints MPICH's " No Errors".  The modes run in
# parallel; a component mode's timeout where plain Open MPI passed is run once more, alone,
# and counts as passed ("pass-rerun", both times printed) when it passes then.  Prints a table of the three columns, the tests that pass on plain Open MPI and
# fail through the component (with the command to rerun each), and ends with "N passed, M
# failed": N component runs passed, M failed where plain Open MPI passes.  Exit 1 when M > 0,
# 77 (skip) when MPICH's sources cannot be fetched.
#
# The sources are fetched at test time (never part of this tree): "apt-get source mpich"
# through a private apt configuration (deb-src of this machine's Debian release, nothing of
# the system's apt changed), only test/mpi extracted; tests/mpich/build-mpich-coll.sh builds
# coll/ with mpicc.  Sources and programs are kept in the work directory for the next run.
#
#   tests/mpich/run-mpich-coll.sh [--modes plain,host,nodes] [--only NAME,...] [--timeout S]
#
# From "make check" (test_env.sh sourced), or by hand:
#   TEST_ENV=build/tests/test_env.sh TEST_BIN_DIR=build/tests/mpi tests/mpich/run-mpich-coll.sh
# Environment: MPICH_COLL_WORK (work directory, default /var/tmp/coll-gpu-mpich),
#   MPICH_TEST_SRC (an MPICH test/mpi directory to use instead of fetching), DEBIAN_MIRROR,
#   MPICH_COLL_TIMEOUT (seconds per test, default 60; a testlist timeLimit above it wins,
#   up to 180), MPICH_COLL_DEADLINE (seconds for each mode's whole run, default 1500: the tests
#   left when it passes are not run and count as failed), MPICH_COLL_EXTRA_MCA ("NAME=VALUE ..." added to the component modes),
#   MPICH_COLL_MPIRUN_ARGS (more mpirun arguments for every run, e.g. a hostfile),
#   MPICH_COLL_MPIRUN (the mpirun to run, default test_env.sh's).
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
modes="plain host nodes"
only=""
while [ $# -gt 0 ]; do
    case $1 in
    --modes) modes=${2//,/ }; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    --timeout) MPICH_COLL_TIMEOUT=$2; shift 2 ;;
    *) echo "usage: $0 [--modes plain,host,nodes] [--only NAME,...] [--timeout S]" >&2; exit 2 ;;
    esac
done
# test_env.sh, the component's MCA arguments, mpirun as root and oversubscribed
# shellcheck source=../mpi/check_common.sh
. "$here/../mpi/check_common.sh"
work=${MPICH_COLL_WORK:-/var/tmp/coll-gpu-mpich}
MPIRUN=${MPICH_COLL_MPIRUN:-$MPIRUN}
timeout_s=${MPICH_COLL_TIMEOUT:-60}
[ "${COLL_GPU_SKIP_MPICH:-0}" = 1 ] && { echo "SKIP: COLL_GPU_SKIP_MPICH=1"; exit 77; }
t0=$(date +%s)
mkdir -p "$work" || check_die "cannot create $work"

skip() {
    echo "SKIP: $*"
    echo "0 passed, 0 failed"
    exit 77
}

# --- the sources: test/mpi of Debian's mpich source package
fetch_sources() {
    local apt=$work/apt codename mirror orig dir
    command -v apt-get >/dev/null || skip "no apt-get here: cannot fetch MPICH's sources (set MPICH_TEST_SRC)"
    # shellcheck disable=SC1091
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || skip "no Debian release name in /etc/os-release (set MPICH_TEST_SRC)"
    mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
    rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl"
    echo "deb-src $mirror $codename main" >"$apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1
        -o APT::Sandbox::User=root -q)
    if ! apt-get "${opts[@]}" update >"$apt/log" 2>&1 ||
        ! (cd "$apt/dl" && apt-get "${opts[@]}" source --download-only mpich) >>"$apt/log" 2>&1; then
        tail -n 5 "$apt/log"
        skip "cannot fetch MPICH's sources (apt-get source mpich from $mirror $codename)"
    fi
    orig=$(ls "$apt"/dl/mpich_*.orig.tar.* 2>/dev/null | head -n 1)
    [ -n "$orig" ] || skip "apt-get source mpich gave no .orig tarball"
    dir=$(tar tf "$orig" | head -n 1 | cut -d/ -f1)
    rm -rf "${work:?}/src" && mkdir -p "$work/src"
    tar xf "$orig" -C "$work/src" --wildcards "$dir/test/mpi/coll/*" "$dir/test/mpi/util/*" \
        "$dir/test/mpi/include/*" "$dir/test/mpi/dtpools/*" ||
        check_die "cannot extract test/mpi from $orig"
    rm -rf "$apt/dl"
    echo "$work/src/$dir/test/mpi" >"$work/src/path"
}
# one run at a time: two runs share the work directory (the fetch and the build), and two
# suites at once on a 2-core machine would only time each other out
exec 9>"$work/lock"
flock 9
if [ -n "$MPICH_TEST_SRC" ]; then
    src=$MPICH_TEST_SRC
else
    [ -r "$work/src/path" ] && [ -r "$(cat "$work/src/path")/coll/testlist.in" ] || fetch_sources
    src=$(cat "$work/src/path")
fi
[ -r "$src/coll/testlist.in" ] || check_die "$src/coll/testlist.in not found"
echo "MPICH tests: $src"

# --- the programs (rebuilt when the sources, mpicc or the build script change)
bin=$work/build
stamp="$src $(mpicc --showme:version 2>&1) $(cksum <"$here/build-mpich-coll.sh")"
if [ "$(cat "$bin/stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$bin"
    tb=$(date +%s)
    "$here/build-mpich-coll.sh" "$src" "$bin" || check_die "the MPICH tests did not build"
    echo "build: $(($(date +%s) - tb)) s"
    echo "$stamp" >"$bin/stamp"
fi
t1=$(date +%s)

# --- the test list: "INDEX NAME NP TIMEOUT ARGS..." (largetest lines are off in MPICH too)
list=$CHECK_LOGDIR/list
awk -v def="$timeout_s" '
    !/^[ \t]*(#|$|@)/ {
        args = ""; t = def
        for (i = 3; i <= NF; i++) {
            if ($i ~ /^arg=/) args = args " " substr($i, 5)
            else if ($i ~ /^timeLimit=/) { v = substr($i, 11) + 0; if (v > t) t = (v > 180 ? 180 : v) }
        }
        print ++n, $1, $2, t args
    }' "$src/coll/testlist.in" >"$list"

# mode_args MODE NP: the MCA arguments of a mode (in MODE_ARGS)
mode_args() {
    local extra=""
    [ "$1" = plain ] || extra="coll_gpu_accelerator=emulated coll_gpu_host_buffers=1 ${MPICH_COLL_EXTRA_MCA:-}"
    [ "$1" = nodes ] && extra="$extra coll_gpu_ranks_per_node=$(($2 >= 4 ? 2 : 1))"
    # shellcheck disable=SC2086
    if [ "$1" = plain ]; then
        CHECK_NO_COMPONENT=1 check_mca_args $CHECK_DEFAULT_MCA
    else
        check_mca_args $CHECK_DEFAULT_MCA $extra
    fi
    read -r -a more <<<"${MPICH_COLL_MPIRUN_ARGS:-}"
    MODE_ARGS=("${more[@]}" "${CHECK_MCA_ARGS[@]}")
}

# run_one MODE IDX NAME NP TL ARGS...: one test, its log in MODE.IDX.log; prints "RESULT SECONDS"
run_one() {
    local mode=$1 idx=$2 name=$3 np=$4 tl=$5 rc res s e
    shift 5
    mode_args "$mode" "$np"
    s=$(date +%s.%N)
    timeout -k 10 "$tl" "$MPIRUN" -n "$np" "${MODE_ARGS[@]}" "$bin/$name" "$@" \
        >"$CHECK_LOGDIR/$mode.$idx.log" 2>&1 </dev/null
    rc=$?
    e=$(date +%s.%N)
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        res=timeout
    elif [ $rc = 0 ] && grep -aq '^ No Errors$' "$CHECK_LOGDIR/$mode.$idx.log"; then
        res=pass
    else
        res=fail:$rc
    fi
    echo "$res $(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }')"
}

# run_mode MODE: every test, one after the other; "INDEX RESULT SECONDS" lines in MODE.res
run_mode() {
    local mode=$1 idx name np args tl argv log
    export UCX_WARN_UNUSED_ENV_VARS=n
    [ "$mode" = nodes ] && export UCX_TLS=tcp,self
    : >"$CHECK_LOGDIR/$mode.res"
    while read -r idx name np tl args; do
        [ -z "$only" ] || [ "${only#*,"$name",}" != "$only" ] || continue
        [ -x "$bin/$name" ] || continue
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "$idx not-run -" >>"$CHECK_LOGDIR/$mode.res"
            continue
        fi
        read -r -a argv <<<"$args"
        echo "$idx $(run_one "$mode" "$idx" "$name" "$np" "$tl" "${argv[@]}")" >>"$CHECK_LOGDIR/$mode.res"
    done <"$list"
    [ "$mode" = plain ] && return
    # that the component ran the calls: its native MPI_Bcast, two-level across the nodes
    local want="MPI_Bcast on MPI_COMM_WORLD: pipelined (flat|two-level) from root 0"
    [ "$mode" = nodes ] && want="MPI_Bcast on MPI_COMM_WORLD: pipelined two-level from root 0 over 2 nodes"
    mode_args "$mode" 4
    log=$CHECK_LOGDIR/$mode.proof.log
    timeout -k 10 "$timeout_s" "$MPIRUN" -n 4 "${MODE_ARGS[@]}" --mca coll_gpu_verbose 10 \
        "$bin/bcasttest" >"$log" 2>&1 </dev/null
    if grep -aqE "coll:gpu: $want" "$log"; then
        echo "pass $want" >"$CHECK_LOGDIR/$mode.proof"
    else
        echo "fail no \"$want\" at coll_gpu_verbose 10 (bcasttest, 4 ranks)" >"$CHECK_LOGDIR/$mode.proof"
    fi
}

deadline=$(($(date +%s) + ${MPICH_COLL_DEADLINE:-1500}))
pids=()
for m in $modes; do
    run_mode "$m" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

# A component mode's timeout where plain Open MPI passed: run once more, alone (the modes ran
# side by side on a loaded machine; the emulated nodes' tcp loopback is slower than plain's
# shared memory under that load).  A hang times out again and fails; a pass says so, with both
# times, in the table and the summary.
for m in $modes; do
    [ "$m" = plain ] && continue
    while read -r idx res secs; do
        [ "$res" = timeout ] || continue
        grep -q "^$idx pass " "$CHECK_LOGDIR/plain.res" 2>/dev/null || continue
        read -r name np tl args < <(awk -v i="$idx" '$1 == i { $1 = ""; print }' "$list")
        read -r -a argv <<<"$args"
        (
            [ "$m" = nodes ] && export UCX_TLS=tcp,self
            export UCX_WARN_UNUSED_ENV_VARS=n
            read -r res2 secs2 < <(run_one "$m" "$idx" "$name" "$np" "$tl" "${argv[@]}")
            [ "$res2" = pass ] && res2=pass-rerun
            sed -i "s/^$idx timeout .*/$idx $res2 $secs2/" "$CHECK_LOGDIR/$m.res"
            echo "rerun alone: $name ($np ranks), mode $m: timeout after $secs s beside the other modes, $res2 alone in $secs2 s"
        ) >>"$CHECK_LOGDIR/reruns"
    done <"$CHECK_LOGDIR/$m.res"
done
t2=$(date +%s)

# --- the table
declare -A R T
for m in $modes; do
    while read -r idx res secs; do
        R[$m.$idx]=$res
        T[$m.$idx]=$secs
    done <"$CHECK_LOGDIR/$m.res"
done
printf '%-4s %-22s %3s  %-34s' "#" test np arguments
for m in $modes; do printf ' %-14s' "$m"; done
echo
declare -A P F NB
regressions=()
npass=0 nfail=0 plain_fail=0
while read -r idx name np tl args; do
    [ -z "$only" ] || [ "${only#*,"$name",}" != "$only" ] || continue
    a=$args
    [ ${#a} -gt 34 ] && a="${a:0:31}..."
    printf '%-4s %-22s %3s  %-34s' "$idx" "$name" "$np" "$a"
    for m in $modes; do
        if [ ! -x "$bin/$name" ]; then
            printf ' %-14s' "not-buildable"
            NB[$m]=$((${NB[$m]:-0} + 1))
            continue
        fi
        res=${R[$m.$idx]:-missing}
        printf ' %-14s' "$res ${T[$m.$idx]:-}"
        if [ "$res" = pass ] || [ "$res" = pass-rerun ]; then
            P[$m]=$((${P[$m]:-0} + 1))
        else
            F[$m]=$((${F[$m]:-0} + 1))
        fi
        [ "$m" = plain ] && continue
        if [ "$res" = pass ] || [ "$res" = pass-rerun ]; then
            npass=$((npass + 1))
        elif [ "${R[plain.$idx]:-pass}" = pass ]; then
            # passes on plain Open MPI (or plain was not run): the component's failure
            nfail=$((nfail + 1))
            regressions+=("$m $idx $name $np")
        else
            plain_fail=$((plain_fail + 1))
        fi
    done
    echo
done <"$list"
echo
printf '%-16s' "mode"
printf ' %8s %8s %14s\n' passed failed not-buildable
for m in $modes; do
    printf '%-16s %8s %8s %14s\n' "$m" "${P[$m]:-0}" "${F[$m]:-0}" "${NB[$m]:-0}"
done
if [ -s "$bin/not-buildable.txt" ]; then
    echo "not buildable against this MPI:"
    sed 's/^/  /' "$bin/not-buildable.txt"
fi
for r in "${regressions[@]}"; do
    read -r m idx name np <<<"$r"
    echo "===== $name ($np ranks), mode $m: ${R[$m.$idx]} (plain Open MPI: ${R[plain.$idx]:-not run})"
    # the test's own complaints come first; mpirun's abort notice after them
    grep -av -e '^-----' -e '^Primary job' -e '^a non-zero exit' -e '^Per user-direction' \
        -e '^mpirun detected' -e '^the job to be' -e '^ *Process name' -e '^ *Exit code' \
        -e '^$' "$CHECK_LOGDIR/$m.$idx.log" | head -n 12
    mode_args "$m" "$np"
    args=$(awk -v i="$idx" '$1 == i { $1 = $2 = $3 = $4 = ""; sub(/^ */, ""); print }' "$list")
    env=""
    [ "$m" = nodes ] && env="UCX_TLS=tcp,self "
    echo "  rerun: $here/run-mpich-coll.sh --modes plain,$m --only $name"
    echo "     or: ${env}timeout 60 $MPIRUN -n $np ${MODE_ARGS[*]} $bin/$name${args:+ $args}"
done
for m in $modes; do
    [ -r "$CHECK_LOGDIR/$m.proof" ] || continue
    read -r res why <"$CHECK_LOGDIR/$m.proof"
    echo "mode $m: the component's algorithms ran: $res ($why)"
    if [ "$res" = pass ]; then
        npass=$((npass + 1))
    else
        nfail=$((nfail + 1))
        tail -n 20 "$CHECK_LOGDIR/$m.proof.log"
    fi
done
[ -s "$CHECK_LOGDIR/reruns" ] && cat "$CHECK_LOGDIR/reruns"
echo "times: sources and build $((t1 - t0)) s, tests $((t2 - t1)) s (modes in parallel: $modes)"
[ "$plain_fail" -gt 0 ] && echo "($plain_fail component runs failed where plain Open MPI fails too: not counted)"
echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ] || exit 1
exit 0
