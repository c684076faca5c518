/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stand-in for Open MPI's ompi/mpi/fortran/base/fint_2_int.h, which Debian's
 * libopenmpi-dev does not ship although ompi/op/op.h includes it (op.h is
 * reached through ompi/mca/coll/base/coll_base_util.h).  It is searched after
 * Open MPI's own include directories (-idirafter), so a complete devel tree
 * (--with-ompi-src) wins.  coll/gpu uses none of these conversions; op.h's
 * inline Fortran-op path needs them to compile.
 */
#ifndef COLL_GPU_SHIM_FINT_2_INT_H
#define COLL_GPU_SHIM_FINT_2_INT_H

#include "ompi_config.h"

#if OMPI_SIZEOF_FORTRAN_INTEGER != 0 && OMPI_SIZEOF_FORTRAN_INTEGER != SIZEOF_INT
#error "Fortran INTEGER is not a C int here: build with --with-ompi-src=<Open MPI source tree>"
#endif

#define OMPI_INT_2_FINT(a) (a)
#define OMPI_FINT_2_INT(a) (a)

#endif
