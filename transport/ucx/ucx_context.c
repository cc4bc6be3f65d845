/*
 * The process's UCP context and the UCX transport's devices.
 *
 * One ucp_context for the process, created by the first init and destroyed
 * when the last reference goes: every init holds one, and so does every
 * worker (a comm may outlive the fini of its init, as with NCCL's teardown).
 * UCX reads its own UCX_* variables when the context is created; Strata never
 * sets or rewrites them.
 *
 * Devices are network interfaces (netif.h); the table lives while an init
 * reference does.
 */
#include <pthread.h>
#include <string.h>

#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_refs;              /* init calls not matched by fini yet */
static int ctx_refs;               /* init_refs + live workers */
static ucp_context_h ctx;
static int dev_count;
static stt_netif_t dev_table[STT_NETIF_MAX];

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

    us = ucp_config_read(NULL, NULL, &config);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_config_read: %s (check the UCX_* variables)", ucs_status_string(us));
        return STRATA_ERR_INVALID;
    }
    us = ucp_init(&params, config, &ctx);
    ucp_config_release(config);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_init: %s", ucs_status_string(us));
        return stt_ucx_status(us);
    }
    return STRATA_OK;
}

/* Called with ctx_lock held, when a reference went. */
static void ctx_release(void)
{
    if (--ctx_refs == 0) {
        ucp_cleanup(ctx);
        ctx = NULL;
    }
}

strata_status_t stt_ucx_probe(void)
{
    unsigned major, minor, release;

    /* The nbx API this transport uses appeared in UCX 1.10. */
    ucp_get_version(&major, &minor, &release);
    if (major < 1 || (major == 1 && minor < 10)) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ucx: UCX %u.%u.%u is older than 1.10", major,
                 minor, release);
        return STRATA_ERR_UNSUPPORTED;
    }
    return STRATA_OK;
}

strata_status_t stt_ucx_init(void)
{
    strata_status_t status = STRATA_OK;

    stu_log_init();
    pthread_mutex_lock(&ctx_lock);
    if (init_refs == 0) {
        int count = 0;
        status = stt_netif_discover("ucx", dev_table, STT_NETIF_MAX, &count);
        if (status == STRATA_OK && ctx_refs == 0)
            status = ctx_create();
        if (status == STRATA_OK)
            dev_count = count;
    }
    if (status == STRATA_OK) {
        init_refs++;
        ctx_refs++;
    }
    pthread_mutex_unlock(&ctx_lock);
    return status;
}

void stt_ucx_fini(void)
{
    pthread_mutex_lock(&ctx_lock);
    if (init_refs > 0) {
        if (--init_refs == 0)
            dev_count = 0;
        ctx_release();
    }
    pthread_mutex_unlock(&ctx_lock);
}

strata_status_t stt_ucx_context_get(ucp_context_h *ctx_p)
{
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&ctx_lock);
    if (init_refs == 0) {
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

void stt_ucx_context_put(void)
{
    pthread_mutex_lock(&ctx_lock);
    if (ctx_refs > 0)
        ctx_release();
    pthread_mutex_unlock(&ctx_lock);
}

strata_status_t stt_ucx_devices(int *ndev_p)
{
    if (ndev_p == NULL) {
        STU_WARN("ucx: devices() called with a NULL output");
        return STRATA_ERR_INVALID;
    }
    pthread_mutex_lock(&ctx_lock);
    int refs = init_refs, count = dev_count;
    pthread_mutex_unlock(&ctx_lock);
    if (refs == 0) {
        STU_WARN("ucx: devices() called before init");
        return STRATA_ERR_INVALID;
    }
    *ndev_p = count;
    return STRATA_OK;
}

strata_status_t stt_ucx_device_get(int dev, stt_netif_t *nif_p)
{
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&ctx_lock);
    if (init_refs == 0 || dev < 0 || dev >= dev_count)
        status = STRATA_ERR_NOT_FOUND;
    else
        *nif_p = dev_table[dev];
    int count = dev_count, refs = init_refs;
    pthread_mutex_unlock(&ctx_lock);
    if (status != STRATA_OK)
        STU_WARN("ucx: no device %d (%d devices%s)", dev, count, refs ? "" : ", not initialised");
    return status;
}

strata_status_t stt_ucx_get_props(int dev, stt_props_t *props_p)
{
    stt_netif_t nif;
    strata_status_t status;

    if (props_p == NULL) {
        STU_WARN("ucx: get_props(%d) called with a NULL output", dev);
        return STRATA_ERR_INVALID;
    }
    status = stt_ucx_device_get(dev, &nif);
    if (status != STRATA_OK)
        return status;
    stt_netif_props_fill(&nif, props_p);
    props_p->latency_us = STT_UCX_LATENCY_US;
    props_p->max_comms = STT_UCX_MAX_COMMS;
    props_p->max_p2p_bytes = STT_UCX_MAX_MSG_BYTES;
    props_p->max_coll_bytes = STT_UCX_MAX_COLL_BYTES;
    return STRATA_OK;
}
