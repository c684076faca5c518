/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc backend ("accelerator IPC"): device memory of the local peers.
 *
 * Everything device-specific is behind the accelerator's ipc_export /
 * ipc_import / ipc_close (legacy CUDA IPC handles or cuMem POSIX-FD handles
 * with CUDA; shared memory with the emulated backend in CI), and copies go
 * through its memcpy, which is synchronous: a put is complete when it returns.
 *
 * An import maps a peer's whole allocation; it is kept once per team and
 * (peer, buffer id), shared by every mapping that falls in it, and closed with
 * the last.  A freed and reallocated buffer has a new id, so it is imported
 * anew and never served the old mapping.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cgt_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t status;
    uint32_t pad;
    accel_ipc_handle_t handle;
} cgt_ipc_info_t;

bool cgt_ipc_available(const cgt_team_t *team) {
    const accel_ops_t *accel = team->params.accel;

    return accel != NULL && (team->backends & CGT_BACKEND_CUDA_IPC) && accel->ipc_export != NULL &&
           accel->ipc_import != NULL && accel->ipc_close != NULL;
}

cgt_status_t cgt_ipc_import_get(cgt_team_t *team, int peer, const accel_ipc_handle_t *handle,
                                cgt_ipc_import_t **import_p) {
    cgt_ipc_import_t *import;
    accel_status_t astatus;
    cgt_list_t *elem;

    if (handle->pid != (int32_t)team->pids[peer]) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "IPC handle exported by pid %d, but rank %d is pid %d",
                             (int)handle->pid, peer, (int)team->pids[peer]);
    }
    for (elem = team->imports.next; elem != &team->imports; elem = elem->next) {
        import = cgt_container_of(elem, cgt_ipc_import_t, list);
        if (import->peer == peer && import->buffer_id == handle->buffer_id &&
            import->alloc_size == handle->alloc_size) {
            ++import->refcount;
            *import_p = import;
            return CGT_OK;
        }
    }
    import = calloc(1, sizeof(*import));
    if (import == NULL) {
        return cgt_error_set(team, CGT_ERR_NO_MEMORY, "IPC import: out of host memory");
    }
    astatus = team->params.accel->ipc_import(handle, &import->base);
    if (astatus != ACCEL_OK) {
        free(import);
        return cgt_error_accel(team, astatus, "importing a local peer's device memory");
    }
    import->peer = peer;
    import->buffer_id = handle->buffer_id;
    import->alloc_size = handle->alloc_size;
    import->refcount = 1;
    cgt_list_push_front(&team->imports, &import->list);
    cgt_log(team, 3, "shmem: imported rank %d's buffer %" PRIu64 " (%" PRIu64 " bytes) at %p", peer,
            import->buffer_id, import->alloc_size, import->base);
    *import_p = import;
    return CGT_OK;
}

void cgt_ipc_import_put(cgt_team_t *team, cgt_ipc_import_t *import) {
    accel_status_t astatus;

    if (--import->refcount > 0) {
        return;
    }
    cgt_list_del(&import->list);
    astatus = team->params.accel->ipc_close(import->base);
    if (astatus != ACCEL_OK) {
        /* nothing to give back to: the caller is releasing */
        cgt_log(team, 2, "shmem: closing rank %d's imported buffer failed: %s", import->peer,
                accel_status_string(astatus));
    }
    free(import);
}

cgt_status_t cgt_ipc_mem_create(cgt_team_t *team, cgt_mem_t *mem) {
    const accel_ops_t *accel = team->params.accel;
    cgt_ipc_info_t *mine, *all;
    accel_status_t astatus;
    cgt_status_t status = CGT_OK;
    int peer;

    mine = calloc((size_t)team->size + 1, sizeof(*mine));
    if (mine == NULL) {
        status = cgt_error_set(team, CGT_ERR_NO_MEMORY, "cgt_alloc: out of host memory");
        cgt_team_agree(team, status, "device memory export"); /* the others' handle exchange */
        return status;
    }
    all = mine + 1;
    astatus = accel->mem_alloc(ACCEL_MEM_DEVICE, mem->len, &mem->local);
    if (astatus != ACCEL_OK) {
        mem->local = NULL;
        status = cgt_error_accel(team, astatus, "cgt_alloc of device memory");
    } else if (team->nlocal > 1) {
        if (!cgt_ipc_available(team)) {
            status = cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                                   "cgt_alloc of device memory: the accelerator (%s) has no "
                                   "IPC",
                                   accel->name);
        } else {
            astatus = accel->ipc_export(mem->local, &mine->handle);
            if (astatus != ACCEL_OK) {
                status = cgt_error_accel(team, astatus, "exporting device memory");
            }
        }
    }
    mine->status = status;
    if (cgt_team_oob_allgather(team, mine, all, sizeof(*mine)) != CGT_OK) {
        status = CGT_ERR_BOOTSTRAP;
        goto out_free;
    }
    for (int r = 0; r < team->size && status == CGT_OK; ++r) {
        if (all[r].status != CGT_OK) {
            status = cgt_error_set(team, (cgt_status_t)all[r].status,
                                   "cgt_alloc: rank %d could not allocate or export its "
                                   "device memory",
                                   r);
        }
    }
    if (status != CGT_OK) {
        goto out_free; /* every rank saw the same statuses */
    }
    for (int i = 0; i < team->nlocal && status == CGT_OK; ++i) {
        peer = team->local_ranks[i];
        if (peer == team->rank) {
            continue;
        }
        if (all[peer].handle.offset + mem->len > all[peer].handle.alloc_size) {
            status = cgt_error_set(team, CGT_ERR_INVALID,
                                   "rank %d exported less device memory than requested", peer);
            break;
        }
        status = cgt_ipc_import_get(team, peer, &all[peer].handle, &mem->imports[peer]);
        if (status == CGT_OK) {
            mem->peers[peer].kind = CGT_RMEM_IPC;
            mem->peers[peer].ptr = (char *)mem->imports[peer]->base + all[peer].handle.offset;
            mem->peers[peer].size = mem->len;
        }
    }
    status = cgt_team_agree(team, status, "importing the local peers' device memory");
out_free:
    free(mine);
    return status;
}

void cgt_ipc_mem_destroy(cgt_team_t *team, cgt_mem_t *mem) {
    accel_status_t astatus;

    for (int r = 0; r < team->size; ++r) {
        if (mem->imports[r] != NULL) {
            cgt_ipc_import_put(team, mem->imports[r]);
            mem->imports[r] = NULL;
        }
    }
    if (mem->local != NULL) {
        astatus = team->params.accel->mem_free(mem->local);
        if (astatus != ACCEL_OK) {
            cgt_log(team, 2, "shmem: freeing symmetric device memory failed: %s",
                    accel_status_string(astatus));
        }
        mem->local = NULL;
    }
}
