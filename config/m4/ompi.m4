# SPDX-License-Identifier: BSD-3-Clause
# ompi.m4: find Open MPI, its devel headers, version, component directory and tools.
#
# COLL_GPU_CHECK_OMPI substitutes
#   OMPI_CPPFLAGS OMPI_LDFLAGS OMPI_LIBS  compile/link MPI programs (tests, benchmarks)
#   OMPI_COMPONENT_LIBS                   what the component itself links (-lmpi as Open
#                                         MPI's coll components, and -lopen-rte/-lopen-pal)
#   OMPI_RPATH                            libtool -R flags for the programs
#   OMPI_MAJOR_VERSION OMPI_MINOR_VERSION OMPI_VERSION
#   OMPI_PKGLIBDIR OMPI_PKGDATADIR        Open MPI's component and data directories
#   MPIRUN OMPI_INFO MPICC_OMPI
#   COLL_GPU_MCA_DIR                      where "make install" puts mca_coll_gpu.so
AC_DEFUN([COLL_GPU_CHECK_OMPI], [
AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR],
        [Open MPI installation prefix (default: the Open MPI whose mpicc is in PATH)])],
    [], [with_ompi=])
AC_ARG_WITH([ompi-src],
    [AS_HELP_STRING([--with-ompi-src=DIR],
        [extra tree of Open MPI devel headers, searched after the installed ones (for
         packages that lack some, e.g. the source package of the same version)])],
    [], [with_ompi_src=])
AC_ARG_WITH([mca-dir],
    [AS_HELP_STRING([--with-mca-dir=DIR],
        [where "make install" puts mca_coll_gpu.so (default: Open MPI's component
         directory, as "ompi_info --path pkglibdir" reports it)])],
    [], [with_mca_dir=])

AS_CASE([$with_ompi],
    [no],     [AC_MSG_ERROR([coll/gpu is an Open MPI component: --without-ompi makes no sense])],
    [yes|""], [ompi_path=$PATH],
    [AS_IF([test -d "$with_ompi"], [],
           [AC_MSG_ERROR([--with-ompi=$with_ompi: no such directory])])
     ompi_path="$with_ompi/bin"])

AC_PATH_PROG([MPICC_OMPI], [mpicc], [], [$ompi_path])
AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [$ompi_path])
AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [], [$ompi_path])

# Include and library directories: from the wrapper compiler when there is one, else from
# the prefix.
ompi_incdirs=
ompi_libdirs=
AS_IF([test -n "$MPICC_OMPI"], [
    AC_MSG_CHECKING([Open MPI include directories ($MPICC_OMPI --showme:incdirs)])
    ompi_incdirs=`$MPICC_OMPI --showme:incdirs 2>/dev/null`
    AC_MSG_RESULT([${ompi_incdirs:-none}])
    AC_MSG_CHECKING([Open MPI library directories ($MPICC_OMPI --showme:libdirs)])
    ompi_libdirs=`$MPICC_OMPI --showme:libdirs 2>/dev/null`
    AC_MSG_RESULT([${ompi_libdirs:-none}])])
AS_IF([test -z "$ompi_incdirs" && test -n "$with_ompi" && test "x$with_ompi" != xyes],
      [ompi_incdirs="$with_ompi/include"])
AS_IF([test -z "$ompi_libdirs" && test -n "$with_ompi" && test "x$with_ompi" != xyes],
      [for d in "$with_ompi/lib" "$with_ompi/lib64"; do
           AS_IF([test -d "$d"], [ompi_libdirs="$ompi_libdirs $d"])
       done])
AS_IF([test -z "$ompi_incdirs"],
      [AC_MSG_ERROR([Open MPI not found: no mpicc in PATH.  Install it (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev) or use --with-ompi=PREFIX])])

# The internal (devel) headers live in <incdir>/openmpi for an installed Open MPI.
OMPI_CPPFLAGS=
for d in $ompi_incdirs; do
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d"
done
for d in $ompi_incdirs; do
    AS_IF([test -f "$d/openmpi/ompi_config.h"],
          [AS_CASE([" $OMPI_CPPFLAGS "], [*" -I$d/openmpi "*], [],
                   [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d/openmpi"])])
done
AS_IF([test -n "$with_ompi_src" && test "x$with_ompi_src" != xno], [
    AS_IF([test -d "$with_ompi_src"], [],
          [AC_MSG_ERROR([--with-ompi-src=$with_ompi_src: no such directory])])
    for d in "$with_ompi_src" "$with_ompi_src/opal/include" "$with_ompi_src/ompi/include" \
             "$with_ompi_src/oshmem/include" "$with_ompi_src/include"; do
        AS_IF([test -d "$d"], [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d"])
    done])

# Open MPI 5's internal headers include the external PMIx's <pmix.h>.
AS_IF([grep -qs '#include <pmix.h>' $(for d in $ompi_incdirs; do
          echo "$d/openmpi/opal/mca/pmix/pmix-internal.h $d/opal/mca/pmix/pmix-internal.h"; done)],
      [ompi_pmix_cflags=`${PKG_CONFIG:-pkg-config} --cflags pmix 2>/dev/null`
       AS_IF([test -n "$ompi_pmix_cflags"],
             [OMPI_CPPFLAGS="$OMPI_CPPFLAGS $ompi_pmix_cflags"],
             [AC_MSG_WARN([Open MPI's headers need PMIx's (pmix.h): install libpmix-dev])])])

OMPI_LDFLAGS=
OMPI_RPATH=
for d in $ompi_libdirs; do
    OMPI_LDFLAGS="$OMPI_LDFLAGS -L$d"
    OMPI_RPATH="$OMPI_RPATH -R$d"
done

# Devel headers.
ompi_devel_help="Open MPI's devel headers (ompi_config.h, ompi/mca/coll/coll.h, opal/mca/base/base.h) were not found with$OMPI_CPPFLAGS.
Install them (Debian/Ubuntu: apt-get install libopenmpi-dev), or point configure at them:
--with-ompi=PREFIX (an Open MPI installed with its devel headers) and/or --with-ompi-src=DIR
(a tree holding the missing headers, e.g. the Open MPI source package of the same version)."
coll_gpu_save_CPPFLAGS=$CPPFLAGS
CPPFLAGS="$OMPI_CPPFLAGS $CPPFLAGS"
AC_CHECK_HEADER([mpi.h], [],
    [AC_MSG_ERROR([mpi.h not found with$OMPI_CPPFLAGS (Debian/Ubuntu: apt-get install libopenmpi-dev)])])
AC_CHECK_HEADER([ompi_config.h], [], [AC_MSG_ERROR([$ompi_devel_help])])
AC_CHECK_HEADER([ompi/mca/coll/coll.h], [], [AC_MSG_ERROR([$ompi_devel_help])],
    [#include <ompi_config.h>])
AC_CHECK_HEADER([opal/mca/base/base.h], [], [AC_MSG_ERROR([$ompi_devel_help])],
    [#include <ompi_config.h>])

# Version, from the headers we compile against.
AC_MSG_CHECKING([Open MPI version])
AC_COMPUTE_INT([OMPI_MAJOR_VERSION], [OMPI_MAJOR_VERSION], [#include <mpi.h>],
    [AC_MSG_ERROR([cannot compute OMPI_MAJOR_VERSION from mpi.h: is this Open MPI?])])
AC_COMPUTE_INT([OMPI_MINOR_VERSION], [OMPI_MINOR_VERSION], [#include <mpi.h>],
    [AC_MSG_ERROR([cannot compute OMPI_MINOR_VERSION from mpi.h])])
AC_COMPUTE_INT([ompi_release_version], [OMPI_RELEASE_VERSION], [#include <mpi.h>],
    [ompi_release_version=0])
OMPI_VERSION="$OMPI_MAJOR_VERSION.$OMPI_MINOR_VERSION.$ompi_release_version"
AC_MSG_RESULT([$OMPI_VERSION])
CPPFLAGS=$coll_gpu_save_CPPFLAGS
AS_IF([test "$OMPI_MAJOR_VERSION" -lt 4],
      [AC_MSG_ERROR([Open MPI $OMPI_VERSION is too old: coll/gpu needs Open MPI 4.1 or later])])
# Prefixed: Open MPI's own headers already define OMPI_MAJOR_VERSION.
AC_DEFINE_UNQUOTED([COLL_GPU_OMPI_MAJOR_VERSION], [$OMPI_MAJOR_VERSION],
    [Major version of the Open MPI the component is built against])
AC_DEFINE_UNQUOTED([COLL_GPU_OMPI_MINOR_VERSION], [$OMPI_MINOR_VERSION],
    [Minor version of the Open MPI the component is built against])

# Libraries.  Programs link libmpi, and libopen-pal where it is a library of its own (the
# tests call opal_*).  The component links libmpi as Open MPI's own coll components do
# (readelf -d mca_coll_tuned.so: NEEDED libmpi.so.40), plus the libraries whose symbols it
# uses directly (4.x: libopen-rte for ompi_process_info, libopen-pal for opal_*; 5.x: libpmix
# for the modex, which Open MPI 5 calls directly): all already
# loaded with libmpi at run time, and named so that the component links with -z defs, which
# turns an unresolved symbol into a link error instead of a component Open MPI silently
# ignores at run time.
OMPI_LIBS="-lmpi"
OMPI_COMPONENT_LIBS="-lmpi"
coll_gpu_save_LDFLAGS=$LDFLAGS
coll_gpu_save_LIBS=$LIBS
LDFLAGS="$OMPI_LDFLAGS $LDFLAGS"
AC_CHECK_LIB([mpi], [MPI_Init], [:],
    [AC_MSG_ERROR([cannot link with -lmpi using$OMPI_LDFLAGS])])
AS_IF([test "$OMPI_MAJOR_VERSION" -lt 5],
      [AC_CHECK_LIB([open-rte], [orte_init], [OMPI_COMPONENT_LIBS="$OMPI_COMPONENT_LIBS -lopen-rte"])],
      [AC_CHECK_LIB([pmix], [PMIx_Put], [OMPI_COMPONENT_LIBS="$OMPI_COMPONENT_LIBS -lpmix"],
                    [AC_MSG_ERROR([cannot link with -lpmix (Open MPI 5's modex: the component's record)])])])
AC_CHECK_LIB([open-pal], [opal_init_util],
             [OMPI_LIBS="$OMPI_LIBS -lopen-pal"
              OMPI_COMPONENT_LIBS="$OMPI_COMPONENT_LIBS -lopen-pal"])
LDFLAGS=$coll_gpu_save_LDFLAGS
LIBS=$coll_gpu_save_LIBS

# Open MPI's component and data directories.
OMPI_PKGLIBDIR=
OMPI_PKGDATADIR=
AS_IF([test -n "$OMPI_INFO"], [
    AC_MSG_CHECKING([Open MPI component directory])
    OMPI_PKGLIBDIR=`$OMPI_INFO --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p'`
    AC_MSG_RESULT([${OMPI_PKGLIBDIR:-unknown}])
    AC_MSG_CHECKING([Open MPI data directory])
    OMPI_PKGDATADIR=`$OMPI_INFO --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p'`
    AC_MSG_RESULT([${OMPI_PKGDATADIR:-unknown}])])
AS_IF([test -z "$OMPI_PKGLIBDIR"], [
    for d in $ompi_libdirs; do
        AS_IF([test -z "$OMPI_PKGLIBDIR" && test -d "$d/openmpi"], [OMPI_PKGLIBDIR="$d/openmpi"])
    done
    AC_MSG_WARN([ompi_info did not give the component directory; guessing ${OMPI_PKGLIBDIR:-none}])])

AS_CASE([$with_mca_dir],
    [yes|no|""], [AS_IF([test -z "$OMPI_PKGLIBDIR"],
                        [AC_MSG_ERROR([cannot find Open MPI's component directory: use --with-mca-dir=DIR])])
                  COLL_GPU_MCA_DIR=$OMPI_PKGLIBDIR],
    [COLL_GPU_MCA_DIR=$with_mca_dir])

AS_IF([test -z "$MPIRUN"], [AC_MSG_WARN([mpirun not found: the MPI tests will be skipped])])

AC_SUBST([OMPI_CPPFLAGS])
AC_SUBST([OMPI_LDFLAGS])
AC_SUBST([OMPI_LIBS])
AC_SUBST([OMPI_COMPONENT_LIBS])
AC_SUBST([OMPI_RPATH])
AC_SUBST([OMPI_MAJOR_VERSION])
AC_SUBST([OMPI_MINOR_VERSION])
AC_SUBST([OMPI_VERSION])
AC_SUBST([OMPI_PKGLIBDIR])
AC_SUBST([OMPI_PKGDATADIR])
AC_SUBST([COLL_GPU_MCA_DIR])
])
