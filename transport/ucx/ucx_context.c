/*
 * The process's UCP context, and the workers made from it.
 *
 * One ucp_context for the process, created with the first reference and
 * destroyed when the last goes: the device table holds one while an init
 * does (ucx_device.c), and so does every worker (a comm may outlive the fini
 * of its init, as with NCCL's teardown). New workers are made only while the
 * table holds its reference. UCX reads its own UCX_* variables when the
 * context is created; Strata never sets or rewrites them.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ucx/ucx_internal.h"
#include "util/le.h"
#include "util/log.h"

/*
 * Slot 0 is the process's context (every UCX_* variable as the user set
 * it); the others are a virtual device member's, the same but with
 * NET_DEVICES set to that member's interface, made for the first worker
 * on that member and gone with the last.
 */
#define CTX_SLOTS (1 + STT_NETIF_MAX)

typedef struct ctx_slot {
    char ifname[IF_NAMESIZE];      /* "" for slot 0 */
    int refs;                      /* workers, plus the device table's on slot 0 */
    ucp_context_h ctx;
} ctx_slot_t;

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static bool table_holds;           /* the device table's reference is on slot 0 */
static ctx_slot_t slots[CTX_SLOTS];

strata_status_t stt_ucx_status(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return STRATA_OK;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return STRATA_ERR_TRUNCATED;
    case UCS_ERR_NO_MEMORY:
        return STRATA_ERR_NO_MEMORY;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_CANCELED:
        return STRATA_ERR_REMOTE;
    default:
        return STRATA_ERR_IO;
    }
}

/* Called with ctx_lock held. ifname NULL: the process's context; else restricted to it. */
static strata_status_t ctx_create(const char *ifname, ucp_context_h *ctx_p)
{
    ucp_config_t *config;
    ucs_status_t us;
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_NAME,
        /* WAKEUP: the worker's event descriptor for poll_fds. */
        .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP,
        /* Workers of different comms run in different threads at once. */
        .mt_workers_shared = 1,
        .name = "strata",
    };

    us = stt_ucx_lib.config_read(NULL, NULL, &config);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_config_read: %s (check the UCX_* variables)", stt_ucx_lib.status_string(us));
        return STRATA_ERR_INVALID;
    }
    if (ifname != NULL && (us = stt_ucx_lib.config_modify(config, "NET_DEVICES", ifname)) !=
                              UCS_OK) {
        STU_WARN("ucx: ucp_config_modify(NET_DEVICES=%s): %s", ifname,
                 stt_ucx_lib.status_string(us));
        stt_ucx_lib.config_release(config);
        return STRATA_ERR_INVALID;
    }
    us = stt_ucx_lib_init(&params, config, ctx_p);
    stt_ucx_lib.config_release(config);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_init%s%s: %s", ifname ? " with NET_DEVICES=" : "", ifname ? ifname : "",
                 stt_ucx_lib.status_string(us));
        return stt_ucx_status(us);
    }
    return STRATA_OK;
}

/* Called with ctx_lock held, when a reference on slot i went. */
static void ctx_release(int i)
{
    if (slots[i].refs > 0 && --slots[i].refs == 0) {
        stt_ucx_lib.cleanup(slots[i].ctx);
        memset(&slots[i], 0, sizeof(slots[i]));
    }
}

strata_status_t stt_ucx_context_open(void)
{
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&ctx_lock);
    if (slots[0].refs == 0)
        status = ctx_create(NULL, &slots[0].ctx);
    if (status == STRATA_OK) {
        slots[0].refs++;
        table_holds = true;
    }
    pthread_mutex_unlock(&ctx_lock);
    return status;
}

void stt_ucx_context_close(void)
{
    pthread_mutex_lock(&ctx_lock);
    if (table_holds) {
        table_holds = false;
        ctx_release(0);
    }
    pthread_mutex_unlock(&ctx_lock);
}

/*
 * A reference for a new worker, while the device table holds one: on the
 * process's context (ifname NULL) or on ifname's, made now if no worker
 * holds it. *slot_p gets the slot to give back.
 */
static strata_status_t ctx_get(const char *ifname, ucp_context_h *ctx_p, int *slot_p)
{
    strata_status_t status = STRATA_OK;
    int i = 0, free_slot = -1;

    pthread_mutex_lock(&ctx_lock);
    if (!table_holds) {
        pthread_mutex_unlock(&ctx_lock);
        STU_WARN("ucx: a comm was requested before init (or after the last fini)");
        return STRATA_ERR_INVALID;
    }
    if (ifname != NULL) {
        for (i = 1; i < CTX_SLOTS; i++) {
            if (slots[i].refs > 0 && strcmp(slots[i].ifname, ifname) == 0)
                break;
            if (slots[i].refs == 0 && free_slot < 0)
                free_slot = i;
        }
        if (i == CTX_SLOTS) {
            i = free_slot;
            if (i < 0)
                STU_WARN("ucx: no room for a context on %s (%d interfaces have one)", ifname,
                         CTX_SLOTS - 1);
            status = i < 0 ? STRATA_ERR_NO_RESOURCE : ctx_create(ifname, &slots[i].ctx);
            if (status == STRATA_OK)
                snprintf(slots[i].ifname, sizeof(slots[i].ifname), "%s", ifname);
        }
    }
    if (status == STRATA_OK) {
        slots[i].refs++;
        *ctx_p = slots[i].ctx;
        *slot_p = i;
    }
    pthread_mutex_unlock(&ctx_lock);
    return status;
}

static void ctx_put(int i)
{
    pthread_mutex_lock(&ctx_lock);
    ctx_release(i);
    pthread_mutex_unlock(&ctx_lock);
}

/* Lane i's worker, on ifname's context (NULL: the process's); its address appended to w's. */
static strata_status_t worker_lane_open(stt_ucx_worker_t *w, int i, const char *ifname,
                                        const char *peer)
{
    ucp_context_h uctx;
    ucp_address_t *addr = NULL;
    size_t len = 0;
    ucs_status_t us;
    strata_status_t status;
    ucp_worker_params_t params = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };

    status = ctx_get(ifname, &uctx, &w->ctx_slot[i]);
    if (status != STRATA_OK)
        return status;
    us = stt_ucx_lib.worker_create(uctx, &params, &w->lane[i]);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_worker_create for the connection with %s%s%s: %s", peer,
                 ifname ? " on " : "", ifname ? ifname : "", stt_ucx_lib.status_string(us));
        ctx_put(w->ctx_slot[i]);
        return stt_ucx_status(us);
    }
    w->n = i + 1;                        /* worker_close undoes it from here on */
    us = stt_ucx_lib.worker_get_address(w->lane[i], &addr, &len);
    if (us != UCS_OK || len == 0 || len > STT_UCX_MAX_ADDR_BYTES / STT_MAX_VDEV_MEMBERS) {
        STU_WARN("ucx: ucp_worker_get_address for the connection with %s: %s (%zu bytes,"
                 " limit %u)", peer, stt_ucx_lib.status_string(us), len,
                 STT_UCX_MAX_ADDR_BYTES / STT_MAX_VDEV_MEMBERS);
        if (us == UCS_OK)
            stt_ucx_lib.worker_release_address(w->lane[i], addr);
        return us != UCS_OK ? stt_ucx_status(us) : STRATA_ERR_INVALID;
    }
    uint8_t *grown = realloc(w->addr, w->addr_len + 4 + len);
    if (grown != NULL) {
        stt_ucx_addrs_put(grown, w->addr_len, addr, (uint32_t)len);
        w->addr = grown;
        w->addr_len += 4 + len;
    }
    stt_ucx_lib.worker_release_address(w->lane[i], addr);
    if (grown == NULL) {
        STU_WARN("ucx: no memory for a worker address (%zu bytes)", len);
        return STRATA_ERR_NO_MEMORY;
    }
    return STRATA_OK;
}

strata_status_t stt_ucx_worker_open(stt_ucx_worker_t *w, const stt_ucx_dev_t *dev,
                                    const char *peer)
{
    strata_status_t status = STRATA_OK;

    memset(w, 0, sizeof(*w));
    w->addr = malloc(4);
    if (w->addr == NULL) {
        STU_WARN("ucx: no memory for a worker address");
        return STRATA_ERR_NO_MEMORY;
    }
    w->addr_len = 4;
    stu_le_put32(w->addr, (uint32_t)dev->nmembers);
    for (int i = 0; i < dev->nmembers && status == STRATA_OK; i++)
        status = worker_lane_open(w, i, dev->nmembers > 1 ? dev->member_name[i] : NULL, peer);
    if (status != STRATA_OK) {
        stt_ucx_worker_close(w);
        return status;
    }
    w->worker = w->lane[0];
    return STRATA_OK;
}

void stt_ucx_worker_close(stt_ucx_worker_t *w)
{
    free(w->addr);
    for (int i = 0; i < w->n; i++) {
        stt_ucx_lib.worker_destroy(w->lane[i]);
        ctx_put(w->ctx_slot[i]);
    }
    memset(w, 0, sizeof(*w));
}
