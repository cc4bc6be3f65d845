/*
 * Process-wide plugin state. NCCL 2.28 calls init once per communicator and
 * finalize when each is destroyed; device discovery must run once, so the
 * transport is selected and initialised by the first reference and released
 * by the last one. A mutex covers the state: NCCL calls from several threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/net_stats.h"
#include "plugin/plugin.h"
#include "util/build_info.h"
#include "util/fuse.h"
#include "util/log.h"
#include "util/param.h"

#define STP_CTX_MAGIC 0x5354524154414358ull   /* "STRATACX" */

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int state_refs;
static const stt_ops_t *state_ops;
static int state_ndev;
static stt_props_t state_props[STP_MAX_DEVS];
static stp_ctx_t *state_ctxs;   /* live contexts, for stp_state_has_comm */
/* Members of the devices makeVDevice made (n 0: a device NCCL sees as one). */
static int state_vn[STP_MAX_DEVS];
static int state_vdevs[STP_MAX_DEVS][STT_MAX_VDEV_MEMBERS];

static void state_log_devices(void)
{
    STU_INFO(STU_LOG_INIT | STU_LOG_NET, "Strata %s, net plugin v11 (v10..v6 shims), transport %s, "
             "%d device(s); built with transports %s", stu_build_info()->version,
             stt_name(state_ops), state_ndev, stu_build_info()->transports);
    for (int d = 0; d < state_ndev; d++) {
        const stt_props_t *p = &state_props[d];
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "  dev %d: %s speed %d Mbps pci %s max_recvs %d", d,
                 p->name, p->speed_mbps, p->pci_path[0] ? p->pci_path : "(none)", p->max_recvs);
    }
    stu_param_log_all();
}

/* Called with state_lock held and state_refs == 0. */
static strata_status_t state_open(void)
{
    strata_status_t status;
    const stt_ops_t *ops;
    int ndev;

    if ((status = stu_param_reload()) != STRATA_OK)
        return status; /* each bad STRATA_* variable was logged with what it takes */
    status = stt_registry_select(stu_param_str(STU_PARAM_TRANSPORT), &ops, &ndev);
    if (status != STRATA_OK)
        return status;
    if (ndev > STP_MAX_DEVS) {
        STU_WARN("transport %s reports %d devices; using the first %d", stt_name(ops), ndev,
                 STP_MAX_DEVS);
        ndev = STP_MAX_DEVS;
    }
    for (int d = 0; d < ndev; d++) {
        status = stt_get_props(ops, d, &state_props[d]);
        if (status != STRATA_OK) {
            STU_WARN("transport %s: properties of device %d: %s", stt_name(ops), d,
                     strata_status_str(status));
            stt_fini(ops);
            return status;
        }
        state_props[d].name[sizeof(state_props[d].name) - 1] = '\0';
        state_props[d].pci_path[sizeof(state_props[d].pci_path) - 1] = '\0';
    }
    state_ops = ops;
    state_ndev = ndev;
    memset(state_vn, 0, sizeof(state_vn));
    bool fuse = stt_can_fuse(ops) && strcmp(stu_param_str(STU_PARAM_NET_FUSE), "off") != 0;
    stp_net_fusion_offer(fuse);
    STU_INFO(STU_LOG_INIT | STU_LOG_NET, "makeVDevice %s (transport %s%s)",
             fuse ? "offered to NCCL" : "not offered: NCCL will not fuse devices", stt_name(ops),
             fuse ? " fuses devices" : stt_can_fuse(ops) ? ", STRATA_NET_FUSE=off"
                                                        : " cannot fuse devices");
    state_log_devices();
    return STRATA_OK;
}

strata_status_t stp_state_acquire(uint64_t comm_id, int traffic_class, stp_ctx_t **ctx_p)
{
    strata_status_t status = STRATA_OK;
    stp_ctx_t *ctx = calloc(1, sizeof(*ctx));

    if (ctx == NULL)
        return STRATA_ERR_NO_MEMORY;
    pthread_mutex_lock(&state_lock);
    if (state_refs == 0)
        status = state_open();
    if (status == STRATA_OK) {
        state_refs++;
        ctx->magic = STP_CTX_MAGIC;
        ctx->comm_id = comm_id;
        ctx->traffic_class = traffic_class;
        ctx->next = state_ctxs;
        state_ctxs = ctx;
    } else if (state_refs == 0) {
        stu_param_release();   /* a failed first init holds nothing: no heap left behind */
    }
    pthread_mutex_unlock(&state_lock);
    if (status != STRATA_OK) {
        free(ctx);
        return status;
    }
    *ctx_p = ctx;
    return STRATA_OK;
}

int stp_ctx_valid(const stp_ctx_t *ctx)
{
    return ctx != NULL && ctx->magic == STP_CTX_MAGIC;
}

void stp_state_release(stp_ctx_t *ctx)
{
    if (!stp_ctx_valid(ctx)) {
        /* NCCL's finalize after a failed init (ctx NULL): with no live context, drop what
         * the failure path read (the parameters its messages consulted) before a dlclose */
        pthread_mutex_lock(&state_lock);
        if (state_refs == 0)
            stu_param_release();
        pthread_mutex_unlock(&state_lock);
        return;
    }
    pthread_mutex_lock(&state_lock);
    for (stp_ctx_t **pp = &state_ctxs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == ctx) {
            *pp = ctx->next;
            break;
        }
    }
    ctx->magic = 0;
    free(ctx);
    stp_stats_finalize();
    if (state_refs > 0 && --state_refs == 0) {
        stp_stats_reset();
        stt_fini(state_ops);
        state_ops = NULL;
        state_ndev = 0;
        stu_param_release();   /* NCCL may dlclose us now: leave no heap behind */
    }
    pthread_mutex_unlock(&state_lock);
}

int stp_state_has_comm(uint64_t comm_id, int *ndev_p)
{
    int found = 0;

    pthread_mutex_lock(&state_lock);
    for (const stp_ctx_t *c = state_ctxs; c != NULL; c = c->next) {
        if (c->comm_id == comm_id) {
            found = 1;
            *ndev_p = state_ndev;
            break;
        }
    }
    pthread_mutex_unlock(&state_lock);
    return found;
}

const stt_ops_t *stp_state_transport(void)
{
    return __atomic_load_n(&state_ops, __ATOMIC_ACQUIRE);
}

int stp_state_ndev(void)
{
    return state_ndev;
}

const stt_props_t *stp_state_props(int dev)
{
    if (state_ops == NULL || dev < 0 || dev >= state_ndev)
        return NULL;
    return &state_props[dev];
}

/* "1,2" for the fusion log line. */
static void state_devs_format(const int *devs, int n, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", devs[i]);
}

strata_status_t stp_state_vdev_make(const int *devs, int n, int *dev_p)
{
    char list[STT_MAX_VDEV_MEMBERS * 12];
    strata_status_t status = STRATA_ERR_INVALID;
    int vdev = -1;

    state_devs_format(devs, n, list, sizeof(list));
    pthread_mutex_lock(&state_lock);
    if (state_ops == NULL) {
        STU_WARN("makeVDevice(%s) before init", list);
    } else if (strcmp(stu_param_str(STU_PARAM_NET_FUSE), "off") == 0) {
        STU_WARN("makeVDevice(%s) refused: STRATA_NET_FUSE=off forbids fusing devices (set"
                 " NCCL_NET_MERGE_LEVEL=LOC so that NCCL does not ask)", list);
        status = STRATA_ERR_UNSUPPORTED;
    } else if ((status = stt_make_vdev(state_ops, devs, n, &vdev)) != STRATA_OK) {
        STU_INFO(STU_LOG_NET, "makeVDevice(%s) refused by transport %s: %s", list,
                 stt_name(state_ops),
                 strata_status_str(status));
    } else if (vdev == state_ndev && state_ndev == STP_MAX_DEVS) {
        STU_WARN("makeVDevice(%s): no room for device %d", list, vdev);
        status = STRATA_ERR_NO_RESOURCE;
    } else if (vdev == state_ndev) {
        status = stt_get_props(state_ops, vdev, &state_props[vdev]);
        if (status == STRATA_OK) {
            state_props[vdev].name[sizeof(state_props[vdev].name) - 1] = '\0';
            state_props[vdev].pci_path[sizeof(state_props[vdev].pci_path) - 1] = '\0';
            state_vn[vdev] = n;
            memcpy(state_vdevs[vdev], devs, (size_t)n * sizeof(devs[0]));
            state_ndev++;
        }
    } else if (vdev > state_ndev || vdev < 0) {
        STU_WARN("makeVDevice(%s): transport %s answered device %d, expected at most %d", list,
                 stt_name(state_ops), vdev, state_ndev);
        status = STRATA_ERR_INTERNAL;
    }
    if (status == STRATA_OK)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "makeVDevice(%s): fused into device %d, %s,"
                 " %d Mbps", list, vdev, state_props[vdev].name, state_props[vdev].speed_mbps);
    pthread_mutex_unlock(&state_lock);
    if (status == STRATA_OK)
        *dev_p = vdev;
    return status;
}

int stp_state_vmembers(int dev, int *devs)
{
    if (dev < 0 || dev >= STP_MAX_DEVS || state_vn[dev] == 0) {
        devs[0] = dev;
        return 1;
    }
    memcpy(devs, state_vdevs[dev], (size_t)state_vn[dev] * sizeof(devs[0]));
    return state_vn[dev];
}
