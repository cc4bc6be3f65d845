/*
 * Devices of the UCX transport: network interfaces (base/netif.h), which
 * carry the side channel; which UCX transports move the data is UCX's
 * choice. The table lives from the first init to the last fini
 * (base/devref.h) and holds a reference on the process's ucp_context
 * meanwhile (ucx_context.c). Probe, init and fini live here.
 */
#include <string.h>

#include "transport/base/devref.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

static stt_netif_t dev_table[STT_NETIF_MAX];

/* The first init (under the devref's lock): interfaces, then the context. */
static strata_status_t dev_open(int *count_p)
{
    strata_status_t status = stt_netif_discover("ucx", dev_table, STT_NETIF_MAX, count_p);

    if (status == STRATA_OK)
        status = stt_ucx_context_open();
    return status;
}

/* The last fini (under the devref's lock): lingering closes finish, then the context goes. */
static void dev_close(void)
{
    stt_ucx_linger_drain();
    stt_ucx_context_close();
}

static stt_devref_t devs = STT_DEVREF_INIT("ucx", dev_open, dev_close);

strata_status_t stt_ucx_probe(void)
{
    unsigned major, minor, release;

    if (stt_ucx_lib_load(NULL) != STRATA_OK)
        return STRATA_ERR_UNSUPPORTED;   /* said why, once */
    /* The nbx API this transport uses appeared in UCX 1.10. */
    stt_ucx_lib.get_version(&major, &minor, &release);
    if (major < 1 || (major == 1 && minor < 10)) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ucx: UCX %u.%u.%u is older than 1.10", major,
                 minor, release);
        return STRATA_ERR_UNSUPPORTED;
    }
    return STRATA_OK;
}

strata_status_t stt_ucx_init(void)
{
    /* Callers that skip the probe (tests, tools) get its answer too. */
    if (stt_ucx_lib_load(NULL) != STRATA_OK)
        return STRATA_ERR_UNSUPPORTED;
    return stt_devref_init(&devs);
}

void stt_ucx_fini(void)
{
    stt_devref_fini(&devs);
}

strata_status_t stt_ucx_devices(int *ndev_p)
{
    return stt_devref_count(&devs, ndev_p);
}

strata_status_t stt_ucx_device_get(int dev, stt_netif_t *nif_p)
{
    return stt_devref_lookup(&devs, dev, dev_table, sizeof(dev_table[0]), nif_p);
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
