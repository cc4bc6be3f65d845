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

static stt_ucx_dev_t dev_table[STT_UCX_MAX_DEVS];
static int dev_nphys;           /* devices at init; make_vdev's follow them */

/* The first init (under the devref's lock): interfaces, STRATA_NET_FUSE, then the context. */
static strata_status_t dev_open(int *count_p)
{
    stt_netif_t nifs[STT_NETIF_MAX];
    int count = 0;
    strata_status_t status = stt_netif_discover("ucx", nifs, STT_NETIF_MAX, &count);

    if (status != STRATA_OK)
        return status;
    for (int i = 0; i < count; i++) {
        stt_ucx_dev_t *d = &dev_table[i];
        stt_props_t *p = &d->props;
        memset(d, 0, sizeof(*d));
        d->nif = nifs[i];
        d->nmembers = 1;
        memcpy(d->member_name[0], nifs[i].name, sizeof(d->member_name[0]));
        stt_netif_props_fill(&nifs[i], p);
        p->latency_us = STT_UCX_LATENCY_US;
        p->max_comms = STT_UCX_MAX_COMMS;
        p->max_p2p_bytes = STT_UCX_MAX_MSG_BYTES;
        p->max_coll_bytes = STT_UCX_MAX_COLL_BYTES;
    }
    stt_ucx_vdev_force(dev_table, &count);
    dev_nphys = count;
    *count_p = count;
    return stt_ucx_context_open();
}

/* The last fini (under the devref's lock): lingering closes finish, then the context goes. */
static void dev_close(void)
{
    stt_ucx_linger_drain();
    stt_ucx_context_close();
}

static stt_devref_t devs_ref = STT_DEVREF_INIT("ucx", dev_open, dev_close);

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
    return stt_devref_init(&devs_ref);
}

void stt_ucx_fini(void)
{
    stt_devref_fini(&devs_ref);
}

strata_status_t stt_ucx_devices(int *ndev_p)
{
    return stt_devref_count(&devs_ref, ndev_p);
}

strata_status_t stt_ucx_device_get(int dev, stt_ucx_dev_t *dev_p)
{
    return stt_devref_lookup(&devs_ref, dev, dev_table, sizeof(dev_table[0]), dev_p);
}

strata_status_t stt_ucx_get_props(int dev, stt_props_t *props_p)
{
    stt_ucx_dev_t d;
    strata_status_t status;

    if (props_p == NULL) {
        STU_WARN("ucx: get_props(%d) called with a NULL output", dev);
        return STRATA_ERR_INVALID;
    }
    status = stt_ucx_device_get(dev, &d);
    if (status != STRATA_OK)
        return status;
    *props_p = d.props;
    return STRATA_OK;
}

/* Under the devref's lock: the same members (in order) reuse their device. */
static strata_status_t vdev_add(int count, bool room, void *arg, int *index_p)
{
    const stt_ucx_dev_t *want = arg;

    for (int d = dev_nphys; d < count; d++) {
        if (dev_table[d].nmembers == want->nmembers &&
            memcmp(dev_table[d].member_name, want->member_name, sizeof(want->member_name)) == 0) {
            *index_p = d;
            return STRATA_OK;
        }
    }
    if (!room) {
        STU_WARN("ucx: no room for virtual device %s (%d devices)", want->props.name, count);
        return STRATA_ERR_NO_RESOURCE;
    }
    dev_table[count] = *want;
    *index_p = count;
    return STRATA_OK;
}

strata_status_t stt_ucx_make_vdev(const int *devs, int n, int *vdev_p)
{
    stt_ucx_dev_t snapshot[STT_NETIF_MAX], vdev;
    int count = 0;
    strata_status_t status;

    if (devs == NULL || vdev_p == NULL) {
        STU_WARN("ucx: make_vdev called with a NULL %s", devs ? "output" : "device list");
        return STRATA_ERR_INVALID;
    }
    if ((status = stt_ucx_devices(&count)) != STRATA_OK)
        return status;
    /* The interfaces never change between init and fini: copy them to check the members. */
    int nphys = count < dev_nphys ? count : dev_nphys;
    for (int d = 0; d < nphys; d++)
        if ((status = stt_ucx_device_get(d, &snapshot[d])) != STRATA_OK)
            return status;
    if ((status = stt_ucx_vdev_fill(snapshot, nphys, devs, n, &vdev)) != STRATA_OK)
        return status;
    status = stt_devref_add(&devs_ref, STT_UCX_MAX_DEVS, vdev_add, &vdev, vdev_p);
    if (status == STRATA_OK)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ucx: virtual device %d = %s (%d members, %d Mbps)",
                 *vdev_p, vdev.props.name, n, vdev.props.speed_mbps);
    return status;
}
