/*
 * Process-wide plugin state. NCCL 2.28 calls init once per communicator and
 * finalize when each is destroyed; device discovery must run once, so the
 * transport is selected and initialised by the first reference and released
 * by the last one. A mutex covers the state: NCCL calls from several threads.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin.h"
#include "util/log.h"
#include "util/param.h"

#define STP_CTX_MAGIC 0x5354524154414358ull   /* "STRATACX" */

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int state_refs;
static const stt_ops_t *state_ops;
static int state_ndev;
static stt_props_t state_props[STP_MAX_DEVS];

static void state_log_devices(void)
{
    STU_INFO(STU_LOG_INIT | STU_LOG_NET, "Strata %s, net plugin v11 (v10..v6 shims), transport %s, "
             "%d device(s)", STP_VERSION, state_ops->name, state_ndev);
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
        return status;           /* each bad STRATA_* variable was logged with what it takes */
    status = stt_registry_select(stu_param_str(STU_PARAM_TRANSPORT), &ops, &ndev);
    if (status != STRATA_OK)
        return status;
    if (ndev > STP_MAX_DEVS) {
        STU_WARN("transport %s reports %d devices; using the first %d", ops->name, ndev,
                 STP_MAX_DEVS);
        ndev = STP_MAX_DEVS;
    }
    for (int d = 0; d < ndev; d++) {
        status = ops->get_props(d, &state_props[d]);
        if (status != STRATA_OK) {
            STU_WARN("transport %s: properties of device %d: %s", ops->name, d,
                     strata_status_str(status));
            ops->fini();
            return status;
        }
        state_props[d].name[sizeof(state_props[d].name) - 1] = '\0';
        state_props[d].pci_path[sizeof(state_props[d].pci_path) - 1] = '\0';
    }
    state_ops = ops;
    state_ndev = ndev;
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
    if (status == STRATA_OK)
        state_refs++;
    pthread_mutex_unlock(&state_lock);
    if (status != STRATA_OK) {
        free(ctx);
        return status;
    }
    ctx->magic = STP_CTX_MAGIC;
    ctx->comm_id = comm_id;
    ctx->traffic_class = traffic_class;
    *ctx_p = ctx;
    return STRATA_OK;
}

int stp_ctx_valid(const stp_ctx_t *ctx)
{
    return ctx != NULL && ctx->magic == STP_CTX_MAGIC;
}

void stp_state_release(stp_ctx_t *ctx)
{
    if (!stp_ctx_valid(ctx))
        return;
    ctx->magic = 0;
    free(ctx);
    pthread_mutex_lock(&state_lock);
    if (state_refs > 0 && --state_refs == 0) {
        state_ops->fini();
        state_ops = NULL;
        state_ndev = 0;
        stu_param_release();   /* NCCL may dlclose us now: leave no heap behind */
    }
    pthread_mutex_unlock(&state_lock);
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
