/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The differences between the coll framework interfaces of the Open MPI
 * releases coll/gpu builds against, in one place.  Everything else in the
 * component is written once against the names defined here.
 *
 *   Open MPI 4.1: coll component 2.0.0, module 2.3.0
 *   Open MPI 5.0: coll component 2.4.0, module 2.4.0
 */
#ifndef COLL_GPU_COMPAT_H
#define COLL_GPU_COMPAT_H

#include "ompi/mca/coll/coll.h"
#include "ompi_config.h"

#if OMPI_MAJOR_VERSION >= 5
#include "ompi/runtime/ompi_rte.h"
#include "opal/mca/threads/mutex.h"
#else
#include "ompi/mca/rte/rte.h"
#include "opal/threads/mutex.h"
#endif

#if OMPI_MAJOR_VERSION >= 5
#define COLL_GPU_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#elif OMPI_MAJOR_VERSION == 4
#define COLL_GPU_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#else
#error "coll/gpu needs Open MPI 4.1 or 5.0"
#endif

/* The unversioned names track the newest interface of each release. */
typedef mca_coll_base_component_t coll_gpu_base_component_t;
typedef mca_coll_base_module_t coll_gpu_base_module_t;

/* The one symbol the DSO exports (everything else is hidden); Open MPI 5
 * no longer defines OMPI_MODULE_DECLSPEC for components. */
#define COLL_GPU_EXPORT __attribute__((visibility("default")))

/* The modex (a process's key-value records, published before MPI_Init's fence, read by any peer
 * after it): Open MPI 4.1 reaches PMIx through opal_pmix's function table, which is empty in a
 * process that has none (ompi_info); Open MPI 5 calls PMIx itself. */
#if OMPI_MAJOR_VERSION >= 5
#include "opal/mca/pmix/pmix-internal.h"
#define COLL_GPU_MODEX_UP() (PMIx_Initialized())
#define COLL_GPU_MODEX_GLOBAL PMIX_GLOBAL
#define COLL_GPU_MODEX_UINT64 PMIX_UINT64
#define COLL_GPU_MODEX_OK PMIX_SUCCESS
#else
#include "opal/mca/pmix/pmix.h"
#define COLL_GPU_MODEX_UP()                                                                        \
    ((NULL != opal_pmix.initialized) && (NULL != opal_pmix.put) && opal_pmix.initialized())
#define COLL_GPU_MODEX_GLOBAL OPAL_PMIX_GLOBAL
#define COLL_GPU_MODEX_UINT64 OPAL_UINT64
#define COLL_GPU_MODEX_OK OPAL_SUCCESS
#endif

/* The node name in help messages. */
#define COLL_GPU_HOSTNAME (ompi_process_info.nodename)

#endif /* COLL_GPU_COMPAT_H */
