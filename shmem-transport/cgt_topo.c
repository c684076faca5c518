/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NIC nearest to a GPU, as a UCX_NET_DEVICES value.
 *
 * hwloc's topology with its I/O objects gives the GPU's PCI device (by the bus id the
 * accelerator reports) and the OpenFabrics OS devices (mlx5_0, ...).  Every HCA gets a
 * distance class to the GPU through their lowest common ancestor:
 *   3  a PCI switch (a PCI-to-PCI bridge or a device) above both: GPUDirect RDMA's best case;
 *   2  the same host bridge (root complex);
 *   1  the same NUMA node;
 *   0  anywhere else.
 * The HCAs of the best class are chosen (several: UCX stripes over them), port 1 of each, and
 * confirmed against rdma-core's device list when built with verbs (hwloc may list a device
 * whose driver verbs cannot open).  No GPU, no HCA or no hwloc: "" and why, so that UCX uses
 * what it finds.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cgt_ucx.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if COLL_GPU_HAVE_HWLOC
#include <hwloc.h>
#endif
#if COLL_GPU_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

/* HCAs considered at most (a node has a handful). */
#define CGT_TOPO_MAX_NICS 32
#define CGT_TOPO_NAME_MAX 64

typedef struct {
    char name[CGT_TOPO_NAME_MAX];
    int distance_class; /* 0..3, see above */
} cgt_topo_nic_t;

static const char *const cgt_topo_class_names[] = {
    "a different NUMA node",
    "the same NUMA node",
    "the same PCI host bridge",
    "the same PCI switch",
};

static void cgt_topo_why(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cgt_topo_why(char *why, size_t why_len, const char *fmt, ...) {
    va_list ap;

    if ((why == NULL) || (why_len == 0)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
}

#if COLL_GPU_HAVE_VERBS
/* Whether rdma-core can open an HCA of that name; *count_p: how many it lists. */
static bool cgt_topo_verbs_has(const char *name, int *count_p) {
    struct ibv_device **list;
    bool found = false;
    int i, count = 0;

    list = ibv_get_device_list(&count);
    if (list == NULL) {
        *count_p = 0;
        return false;
    }
    for (i = 0; i < count; ++i) {
        if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
            found = true;
        }
    }
    ibv_free_device_list(list);
    *count_p = count;
    return found;
}
#endif

#if COLL_GPU_HAVE_HWLOC
static int cgt_topo_distance_class(hwloc_topology_t topo, hwloc_obj_t gpu, hwloc_obj_t nic) {
    hwloc_obj_t common = hwloc_get_common_ancestor_obj(topo, gpu, nic);
    hwloc_obj_t gpu_parent, nic_parent;

    if (common != NULL) {
        if ((common->type == HWLOC_OBJ_PCI_DEVICE) ||
            ((common->type == HWLOC_OBJ_BRIDGE) &&
             (common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI))) {
            return 3;
        }
        if (common->type == HWLOC_OBJ_BRIDGE) {
            return 2;
        }
    }
    /* The CPU-side objects the two hang from: NUMA locality through their node sets. */
    gpu_parent = hwloc_get_non_io_ancestor_obj(topo, gpu);
    nic_parent = hwloc_get_non_io_ancestor_obj(topo, nic);
    if ((gpu_parent != NULL) && (nic_parent != NULL) && (gpu_parent->nodeset != NULL) &&
        (nic_parent->nodeset != NULL) &&
        hwloc_bitmap_intersects(gpu_parent->nodeset, nic_parent->nodeset)) {
        return 1;
    }
    return 0;
}

/* The HCAs of the topology with their distance class to gpu; their number. */
static int cgt_topo_list_nics(hwloc_topology_t topo, hwloc_obj_t gpu, cgt_topo_nic_t *nics,
                              int max_nics) {
    hwloc_obj_t osdev = NULL;
    int n = 0;

    while ((n < max_nics) && ((osdev = hwloc_get_next_osdev(topo, osdev)) != NULL)) {
        if ((osdev->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS) || (osdev->name == NULL)) {
            continue;
        }
        snprintf(nics[n].name, sizeof(nics[n].name), "%s", osdev->name);
        nics[n].distance_class = cgt_topo_distance_class(topo, gpu, osdev);
        ++n;
    }
    return n;
}

static cgt_status_t cgt_topo_choose(const char *bus_id, char *buf, size_t len, char *why,
                                    size_t why_len) {
    cgt_topo_nic_t nics[CGT_TOPO_MAX_NICS];
    hwloc_topology_t topo;
    hwloc_obj_t gpu;
    int i, n, best = -1, chosen = 0, skipped = 0, verbs_count = -1;
    size_t used = 0;

    buf[0] = '\0'; /* every early way out answers "": UCX's default devices */
    if ((hwloc_topology_init(&topo) != 0)) {
        cgt_topo_why(why, why_len, "hwloc_topology_init failed");
        return CGT_OK;
    }
    /* I/O objects are off by default: keep the PCI devices and bridges that lead to GPUs
     * and NICs, and their OS devices (mlx5_0). */
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        cgt_topo_why(why, why_len, "hwloc_topology_load failed");
        goto out_destroy_topo;
    }

    gpu = hwloc_get_pcidev_by_busidstring(topo, bus_id);
    if (gpu == NULL) {
        cgt_topo_why(why, why_len, "the GPU at %s is not in hwloc's topology", bus_id);
        goto out_destroy_topo;
    }
    n = cgt_topo_list_nics(topo, gpu, nics, CGT_TOPO_MAX_NICS);
    if (n == 0) {
        cgt_topo_why(why, why_len, "hwloc finds no OpenFabrics device");
        goto out_destroy_topo;
    }

    for (i = 0; i < n; ++i) {
#if COLL_GPU_HAVE_VERBS
        if (!cgt_topo_verbs_has(nics[i].name, &verbs_count)) {
            nics[i].distance_class = -1; /* listed by hwloc, not openable by verbs */
            ++skipped;
            continue;
        }
#endif
        if (nics[i].distance_class > best) {
            best = nics[i].distance_class;
        }
    }
    if (best < 0) {
        cgt_topo_why(why, why_len,
                     "none of the %d OpenFabrics devices hwloc lists is among the %d of verbs", n,
                     verbs_count);
        goto out_destroy_topo;
    }

    for (i = 0; i < n; ++i) {
        int ret;
        if (nics[i].distance_class != best) {
            continue;
        }
        ret = snprintf(buf + used, len - used, "%s%s:1", (chosen > 0) ? "," : "", nics[i].name);
        if ((ret < 0) || ((size_t)ret >= len - used)) {
            buf[used] = '\0'; /* keep whole names only */
            break;
        }
        used += (size_t)ret;
        ++chosen;
    }
    cgt_topo_why(why, why_len, "%d of %d HCA(s) in %s as the GPU at %s%s", chosen, n,
                 cgt_topo_class_names[best], bus_id,
                 (skipped > 0) ? ", some listed by hwloc are unknown to verbs" : "");

out_destroy_topo:
    hwloc_topology_destroy(topo);
    return CGT_OK;
}

/* Loading the topology with its I/O devices costs milliseconds (more on large nodes), and a
 * team is created per communicator: the answer is kept per GPU for the life of the process. */
#define CGT_TOPO_CACHE_SIZE 16

static struct {
    char bus_id[64];
    char nics[256];
    char why[256];
} cgt_topo_cache[CGT_TOPO_CACHE_SIZE];
static int cgt_topo_cache_used;
static pthread_mutex_t cgt_topo_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static cgt_status_t cgt_topo_choose_cached(const char *bus_id, char *buf, size_t len, char *why,
                                           size_t why_len) {
    char nics[sizeof(cgt_topo_cache[0].nics)], reason[sizeof(cgt_topo_cache[0].why)];
    cgt_status_t status;
    int i;

    pthread_mutex_lock(&cgt_topo_cache_lock);
    for (i = 0; i < cgt_topo_cache_used; ++i) {
        if (strcmp(cgt_topo_cache[i].bus_id, bus_id) == 0) {
            if (strlen(cgt_topo_cache[i].nics) < len) {
                strcpy(buf, cgt_topo_cache[i].nics);
                cgt_topo_why(why, why_len, "%s", cgt_topo_cache[i].why);
                pthread_mutex_unlock(&cgt_topo_cache_lock);
                return CGT_OK;
            }
            break;
        }
    }
    pthread_mutex_unlock(&cgt_topo_cache_lock);

    status = cgt_topo_choose(bus_id, nics, sizeof(nics), reason, sizeof(reason));
    if (status != CGT_OK) {
        return status;
    }
    pthread_mutex_lock(&cgt_topo_cache_lock);
    if (cgt_topo_cache_used < CGT_TOPO_CACHE_SIZE) {
        i = cgt_topo_cache_used++;
        snprintf(cgt_topo_cache[i].bus_id, sizeof(cgt_topo_cache[i].bus_id), "%s", bus_id);
        snprintf(cgt_topo_cache[i].nics, sizeof(cgt_topo_cache[i].nics), "%s", nics);
        snprintf(cgt_topo_cache[i].why, sizeof(cgt_topo_cache[i].why), "%s", reason);
    }
    pthread_mutex_unlock(&cgt_topo_cache_lock);
    /* whole names only when buf is shorter than the answer */
    buf[0] = '\0';
    for (char *save, *name = strtok_r(nics, ",", &save); name != NULL;
         name = strtok_r(NULL, ",", &save)) {
        size_t used = strlen(buf);
        if (used + (used > 0) + strlen(name) + 1 > len) {
            break;
        }
        snprintf(buf + used, len - used, "%s%s", (used > 0) ? "," : "", name);
    }
    cgt_topo_why(why, why_len, "%s", reason);
    return CGT_OK;
}
#endif /* COLL_GPU_HAVE_HWLOC */

cgt_status_t cgt_topo_nearest_nics_why(const accel_ops_t *accel, int device, char *buf, size_t len,
                                       char *why, size_t why_len) {
    char bus_id[64];

    if ((buf == NULL) || (len == 0)) {
        return CGT_ERR_INVALID;
    }
    buf[0] = '\0';
    cgt_topo_why(why, why_len, "no reason");

    if ((accel == NULL) || (device < 0)) {
        cgt_topo_why(why, why_len, "no accelerator device");
        return CGT_OK;
    }
    if ((accel->device_pci_bus_id == NULL) ||
        (accel->device_pci_bus_id(device, bus_id, sizeof(bus_id)) != ACCEL_OK)) {
        cgt_topo_why(why, why_len, "the %s accelerator gives no PCI bus id for device %d",
                     accel->name, device);
        return CGT_OK;
    }
#if COLL_GPU_HAVE_HWLOC
    return cgt_topo_choose_cached(bus_id, buf, len, why, why_len);
#else
    cgt_topo_why(why, why_len, "built without hwloc");
    return CGT_OK;
#endif
}

cgt_status_t cgt_topo_nearest_nics(const accel_ops_t *accel, int device, char *buf, size_t len) {
    return cgt_topo_nearest_nics_why(accel, device, buf, len, NULL, 0);
}
