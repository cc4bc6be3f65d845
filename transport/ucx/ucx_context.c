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
#include <string.h>

#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctx_refs;               /* the device table's + one per live worker */
static bool table_holds;           /* the device table's reference is among them */
static ucp_context_h ctx;

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

/* Called with ctx_lock held. */
static strata_status_t ctx_create(void)
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
    us = stt_ucx_lib_init(&params, config, &ctx);
    stt_ucx_lib.config_release(config);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_init: %s", stt_ucx_lib.status_string(us));
        return stt_ucx_status(us);
    }
    return STRATA_OK;
}

/* Called with ctx_lock held, when a reference went. */
static void ctx_release(void)
{
    if (ctx_refs > 0 && --ctx_refs == 0) {
        stt_ucx_lib.cleanup(ctx);
        ctx = NULL;
    }
}

strata_status_t stt_ucx_context_open(void)
{
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&ctx_lock);
    if (ctx_refs == 0)
        status = ctx_create();
    if (status == STRATA_OK) {
        ctx_refs++;
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
        ctx_release();
    }
    pthread_mutex_unlock(&ctx_lock);
}

/* A reference for a new worker, while the device table holds one. */
static strata_status_t ctx_get(ucp_context_h *ctx_p)
{
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&ctx_lock);
    if (!table_holds) {
        status = STRATA_ERR_INVALID;
    } else {
        ctx_refs++;
        *ctx_p = ctx;
    }
    pthread_mutex_unlock(&ctx_lock);
    if (status != STRATA_OK)
        STU_WARN("ucx: a comm was requested before init (or after the last fini)");
    return status;
}

static void ctx_put(void)
{
    pthread_mutex_lock(&ctx_lock);
    ctx_release();
    pthread_mutex_unlock(&ctx_lock);
}

strata_status_t stt_ucx_worker_open(stt_ucx_worker_t *w, const char *peer)
{
    ucp_context_h uctx;
    ucs_status_t us;
    strata_status_t status;
    ucp_worker_params_t params = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };

    memset(w, 0, sizeof(*w));
    status = ctx_get(&uctx);
    if (status != STRATA_OK)
        return status;
    us = stt_ucx_lib.worker_create(uctx, &params, &w->worker);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_worker_create for the connection with %s: %s", peer,
                 stt_ucx_lib.status_string(us));
        status = stt_ucx_status(us);
        goto err_put;
    }
    us = stt_ucx_lib.worker_get_address(w->worker, &w->addr, &w->addr_len);
    if (us != UCS_OK || w->addr_len == 0 || w->addr_len > STT_UCX_MAX_ADDR_BYTES) {
        STU_WARN("ucx: ucp_worker_get_address for the connection with %s: %s (%zu bytes,"
                 " limit %u)", peer, stt_ucx_lib.status_string(us), w->addr_len, STT_UCX_MAX_ADDR_BYTES);
        status = us != UCS_OK ? stt_ucx_status(us) : STRATA_ERR_INVALID;
        goto err_destroy;
    }
    return STRATA_OK;

err_destroy:
    if (us == UCS_OK)
        stt_ucx_lib.worker_release_address(w->worker, w->addr);
    stt_ucx_lib.worker_destroy(w->worker);
    w->worker = NULL;
err_put:
    ctx_put();
    return status;
}

void stt_ucx_worker_close(stt_ucx_worker_t *w)
{
    if (w->addr != NULL)
        stt_ucx_lib.worker_release_address(w->worker, w->addr);
    stt_ucx_lib.worker_destroy(w->worker);
    ctx_put();
    memset(w, 0, sizeof(*w));
}
