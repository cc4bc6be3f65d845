/*
 * Devices of the TCP transport: the network interfaces netif.h selects
 * (STRATA_SOCKET_IFNAME, STRATA_SOCKET_FAMILY). Discovered by the first init,
 * dropped by the last fini (base/devref.h); probe, init and fini live here.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/devref.h"
#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/param.h"

static stt_tcp_dev_t dev_table[STT_TCP_MAX_DEVS];
static int dev_nphys;           /* interfaces; virtual devices follow them */

static void dev_params_check(void)
{
    int64_t nsocks = stu_param_int(STU_PARAM_SOCKET_NSOCKS);
    if (nsocks < 1 || nsocks > STT_TCP_MAX_SOCKS)
        STU_WARN("tcp: STRATA_SOCKET_NSOCKS=%lld is outside 1..%d, clamped", (long long)nsocks,
                 STT_TCP_MAX_SOCKS);
    if (stu_param_int(STU_PARAM_SOCKET_STRIPE_MIN) < 0)
        STU_WARN("tcp: STRATA_SOCKET_STRIPE_MIN is negative, every message will be striped");
}

/* The first init's discovery (under the devref's lock). */
static strata_status_t dev_open(int *count_p)
{
    stt_netif_t nifs[STT_NETIF_MAX];
    int count = 0;
    strata_status_t status = stt_netif_discover("tcp", nifs, STT_NETIF_MAX, &count);

    if (status != STRATA_OK)
        return status;
    for (int i = 0; i < count; i++) {
        stt_tcp_dev_t *dev = &dev_table[i];
        stt_props_t *p = &dev->props;
        memset(dev, 0, sizeof(*dev));
        memcpy(dev->name, nifs[i].name, sizeof(dev->name));   /* both IF_NAMESIZE */
        dev->addr = nifs[i].addr;
        dev->nmembers = 1;
        dev->members[0] = i;
        dev->member_addr[0] = nifs[i].addr;
        stt_netif_props_fill(&nifs[i], p);
        p->latency_us = STT_TCP_LATENCY_US;
        p->tags_block = 1;       /* one byte stream per connection (tcp-protocol.md) */
        p->max_comms = STT_TCP_MAX_COMMS;
        p->max_p2p_bytes = STT_TCP_MAX_MSG_BYTES;
        p->max_coll_bytes = STT_TCP_MAX_COLL_BYTES;
    }
    dev_params_check();
    stt_tcp_vdev_force(dev_table, &count);
    dev_nphys = count;
    *count_p = count;
    return STRATA_OK;
}

static stt_devref_t devs_ref = STT_DEVREF_INIT("tcp", dev_open, NULL);

strata_status_t stt_tcp_probe(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "tcp: no TCP sockets here: %s", strerror(errno));
        return STRATA_ERR_UNSUPPORTED;
    }
    close(fd);
    return STRATA_OK;
}

strata_status_t stt_tcp_init(void)
{
    return stt_devref_init(&devs_ref);
}

void stt_tcp_fini(void)
{
    stt_devref_fini(&devs_ref);
}

strata_status_t stt_tcp_devices(int *ndev_p)
{
    return stt_devref_count(&devs_ref, ndev_p);
}

strata_status_t stt_tcp_device_get(int dev, stt_tcp_dev_t *dev_p)
{
    return stt_devref_lookup(&devs_ref, dev, dev_table, sizeof(dev_table[0]), dev_p);
}

size_t stt_tcp_stripe_bytes(int members)
{
    /* tcp_send.c stripes messages from STRATA_SOCKET_STRIPE_MIN up (0 and below: all) */
    int64_t stripe_min = stu_param_int(STU_PARAM_SOCKET_STRIPE_MIN);

    if (stt_tcp_conn_nsocks(members < 1 ? 1 : members) < 2)
        return 0;
    return stripe_min < 1 ? 1 : (size_t)stripe_min;
}

strata_status_t stt_tcp_get_props(int dev, stt_props_t *props_p)
{
    stt_tcp_dev_t d;
    strata_status_t status;

    if (props_p == NULL) {
        STU_WARN("tcp: get_props(%d) called with a NULL output", dev);
        return STRATA_ERR_INVALID;
    }
    status = stt_tcp_device_get(dev, &d);
    if (status != STRATA_OK)
        return status;
    *props_p = d.props;
    props_p->stripe_min = stt_tcp_stripe_bytes(d.nmembers);
    props_p->cpu_copies = 1;    /* the kernel copies every byte through the socket buffers */
    return STRATA_OK;
}

/* Under the devref's lock: the same members in the same order reuse their device. */
static strata_status_t vdev_add(int count, bool room, void *arg, int *index_p)
{
    const stt_tcp_dev_t *want = arg;

    for (int d = dev_nphys; d < count; d++) {
        if (dev_table[d].nmembers == want->nmembers &&
            memcmp(dev_table[d].members, want->members, sizeof(want->members)) == 0) {
            *index_p = d;
            return STRATA_OK;
        }
    }
    if (!room) {
        STU_WARN("tcp: no room for virtual device %s (%d devices)", want->props.name, count);
        return STRATA_ERR_NO_RESOURCE;
    }
    dev_table[count] = *want;
    *index_p = count;
    return STRATA_OK;
}

strata_status_t stt_tcp_make_vdev(const int *devs, int n, int *vdev_p)
{
    stt_tcp_dev_t snapshot[STT_NETIF_MAX], vdev;
    int count = 0;
    strata_status_t status;

    if (devs == NULL || vdev_p == NULL) {
        STU_WARN("tcp: make_vdev called with a NULL %s", devs ? "output" : "device list");
        return STRATA_ERR_INVALID;
    }
    if ((status = stt_tcp_devices(&count)) != STRATA_OK)
        return status;
    /* The interfaces never change between init and fini: copy them to check the members. */
    int nphys = count < dev_nphys ? count : dev_nphys;
    for (int d = 0; d < nphys; d++)
        if ((status = stt_tcp_device_get(d, &snapshot[d])) != STRATA_OK)
            return status;
    if ((status = stt_tcp_vdev_fill(snapshot, nphys, devs, n, &vdev)) != STRATA_OK)
        return status;
    status = stt_devref_add(&devs_ref, STT_TCP_MAX_DEVS, vdev_add, &vdev, vdev_p);
    if (status == STRATA_OK)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "tcp: virtual device %d = %s (%d members, %d Mbps)",
                 *vdev_p, vdev.props.name, n, vdev.props.speed_mbps);
    return status;
}
