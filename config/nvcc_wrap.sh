#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# nvcc_wrap.sh NVCC ARGS...
#
# Runs nvcc with arguments written for a C compiler, as libtool and the make rules pass them.
# libtool's compile mode treats its "compiler" as gcc: it adds -fPIC -DPIC, -o .libs/x.o,
# and it would itself eat a -Xcompiler in the command.  This wrapper keeps the options nvcc
# understands (-c -o -I -D -U -O0..3 -g -G -M*, -gencode, --long-options, ...) and passes
# host-compiler options (-fPIC, -fvisibility=..., -W..., -fsanitize=..., -pthread, -m...)
# to the host compiler with -Xcompiler.  C-only options (-std=c11/gnu11) are dropped: .cu is
# C++.  POSIX sh; arguments with spaces survive.  (The idea of UCX's config/nvcc_wrap.sh.)
#
# Set NVCC_WRAP_VERBOSE=1 to print the nvcc command.

if [ $# -lt 1 ]; then
    echo "usage: $0 NVCC [ARGS...]" >&2
    exit 1
fi

nvcc=$1
shift
output=

# Rebuild "$@": take the first argument, push its translation at the end, n times.
n=$#
while [ "$n" -gt 0 ]; do
    arg=$1
    shift
    n=$((n - 1))
    case $arg in
    # Options with a separate value, nvcc's own.
    -o | -MF | -MT | -MQ | -I | -D | -U | -isystem | -include | -x | -ccbin | \
    -gencode | -arch | -code | -Xptxas | -Xnvlink | -Xfatbin | -Xcompiler | \
    --compiler-bindir | --generate-code | --gpu-architecture | --gpu-code | \
    --compiler-options | --ptxas-options | --nvlink-options | --threads | -t)
        if [ "$n" -eq 0 ]; then
            echo "nvcc_wrap.sh: $arg needs a value" >&2
            exit 1
        fi
        if [ "$arg" = -o ]; then
            output=$1
        fi
        set -- "$@" "$arg" "$1"
        shift
        n=$((n - 1))
        ;;
    # nvcc's own single options.
    -c | -E | -M | -MM | -MD | -MMD | -MP | -g | -G | -w | -m64 | -lineinfo | \
    -I?* | -D?* | -U?* | -O[0-3] | -O | -gencode=* | -arch=* | -code=* | \
    -Xptxas=* | -Xnvlink=* | -Xcompiler=* | -maxrregcount=* | -t=* | \
    -rdc=* | -dc | -dw | -dlink | -use_fast_math | -ftz=* | -fmad=* | -prec-div=* | \
    -prec-sqrt=* | -extra-device-vectorization | -expt-* | -allow-unsupported-compiler | \
    -std=c++* | -keep | -res-usage | -src-in-ptx | -Werror=* | \
    -Wno-deprecated-gpu-targets | -Wno-deprecated-declarations | -Wreorder | \
    -Wdefault-stream-launch | -Wmissing-launch-bounds | -Wext-lambda-captures-this | \
    --*)
        set -- "$@" "$arg"
        ;;
    # C-only: meaningless for CUDA C++.
    -std=*)
        ;;
    # Preprocessor options through -Wp,: they are nvcc's (-D, -U, ...).
    -Wp,*)
        rest=${arg#-Wp,}
        while [ -n "$rest" ]; do
            case $rest in
            *,*) item=${rest%%,*}; rest=${rest#*,} ;;
            *) item=$rest; rest= ;;
            esac
            set -- "$@" "$item"
        done
        ;;
    # Everything else that looks like an option goes to the host compiler; nvcc splits
    # -Xcompiler values at commas, so escape them (-Wa,--noexecstack).
    -*)
        case $arg in
        *,*) arg=$(printf '%s\n' "$arg" | sed 's/,/\\,/g') ;;
        esac
        set -- "$@" -Xcompiler "$arg"
        ;;
    # Sources, objects.
    *)
        set -- "$@" "$arg"
        ;;
    esac
done

# nvcc, unlike gcc, does not create the output's directory.
if [ -n "$output" ]; then
    mkdir -p "$(dirname "$output")" || exit 1
fi
if [ -n "$NVCC_WRAP_VERBOSE" ]; then
    echo "$nvcc $*"
fi
exec "$nvcc" "$@"
