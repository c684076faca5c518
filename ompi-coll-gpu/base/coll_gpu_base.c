/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every layer may call: the collectives' names, the module's kernel stream, a hook at
 * MPI_Finalize, and the messages of the two errors any layer meets (a failed accelerator call,
 * no host memory).
 */
#include "coll_gpu.h"

#include <stdlib.h>

#include "ompi/runtime/mpiruntime.h"
#include "opal/util/show_help.h"

const char *coll_gpu_coll_name(coll_gpu_coll_t coll) {
    static const char *const names[] = {
#define COLL_GPU_NAME_ENTRY(id, name, ...) name,
        COLL_GPU_FOREACH_COLL(COLL_GPU_NAME_ENTRY)
#undef COLL_GPU_NAME_ENTRY
    };

    return ((unsigned)coll < COLL_GPU_NUM_COLLS) ? names[coll] : "MPI collective";
}

accel_status_t coll_gpu_module_stream(mca_coll_gpu_module_t *module, accel_stream_h *stream_p) {
    accel_status_t status;

    if (OPAL_UNLIKELY(NULL == module->stream)) {
        status = mca_coll_gpu_component.accel->stream_create(&module->stream);
        if (ACCEL_OK != status) {
            module->stream = NULL;
            return status;
        }
    }
    *stream_p = module->stream;
    return ACCEL_OK;
}

int coll_gpu_accel_failed(accel_status_t status, const char *mpi_call,
                          struct ompi_communicator_t *comm) {
    const accel_error_t *error = accel_last_error();

    coll_gpu_count_add(&mca_coll_gpu_component.accelerator_errors, 1);
    opal_show_help("help-mpi-coll-gpu.txt", "accelerator error", true, COLL_GPU_HOSTNAME, mpi_call,
                   ompi_comm_rank(comm), ompi_comm_size(comm),
                   ('\0' != error->call[0]) ? error->call : "accelerator",
                   ('\0' != error->error[0]) ? error->error : accel_status_string(status));
    return (ACCEL_ERR_NO_MEMORY == status) ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
}

void coll_gpu_at_finalize(MPI_Comm_delete_attr_function *hook) {
    int keyval;

    /* through the MPI interface: Open MPI's attribute internals are not exported */
    if ((MPI_SUCCESS == PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, hook, &keyval, NULL)) &&
        (MPI_SUCCESS != PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL))) {
        (void)PMPI_Comm_free_keyval(&keyval);
    }
}

void coll_gpu_out_of_host_memory(size_t len) {
    opal_show_help("help-mpi-coll-gpu.txt", "out of host memory", true, COLL_GPU_HOSTNAME, len);
    ompi_mpi_abort(&ompi_mpi_comm_world.comm, MPI_ERR_NO_MEM);
    abort(); /* not reached: ompi_mpi_abort ends the process */
}
