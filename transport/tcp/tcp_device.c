/*
 * Devices of the TCP transport: the network interfaces netif.h selects
 * (STRATA_SOCKET_IFNAME, STRATA_SOCKET_FAMILY). Discovered once by the first
 * init, dropped by the last fini.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/param.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static int dev_refs;
static int dev_count;
static stt_tcp_dev_t dev_table[STT_NETIF_MAX];

/* Called with dev_lock held. */
static strata_status_t dev_discover(void)
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
        stt_netif_props_fill(&nifs[i], p);
        p->latency_us = STT_TCP_LATENCY_US;
        p->max_comms = STT_TCP_MAX_COMMS;
        p->max_p2p_bytes = STT_TCP_MAX_MSG_BYTES;
        p->max_coll_bytes = STT_TCP_MAX_COLL_BYTES;
    }
    dev_count = count;
    return STRATA_OK;
}

static void dev_params_check(void)
{
    int64_t nsocks = stu_param_int(STU_PARAM_SOCKET_NSOCKS);
    if (nsocks < 1 || nsocks > STT_TCP_MAX_SOCKS)
        STU_WARN("tcp: STRATA_SOCKET_NSOCKS=%lld is outside 1..%d, clamped", (long long)nsocks,
                 STT_TCP_MAX_SOCKS);
    if (stu_param_int(STU_PARAM_SOCKET_STRIPE_MIN) < 0)
        STU_WARN("tcp: STRATA_SOCKET_STRIPE_MIN is negative, every message will be striped");
}

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
    strata_status_t status = STRATA_OK;

    stu_log_init();
    pthread_mutex_lock(&dev_lock);
    if (dev_refs == 0) {
        status = dev_discover();
        if (status == STRATA_OK)
            dev_params_check();
    }
    if (status == STRATA_OK)
        dev_refs++;
    pthread_mutex_unlock(&dev_lock);
    return status;
}

void stt_tcp_fini(void)
{
    pthread_mutex_lock(&dev_lock);
    if (dev_refs > 0 && --dev_refs == 0)
        dev_count = 0;
    pthread_mutex_unlock(&dev_lock);
}

strata_status_t stt_tcp_devices(int *ndev_p)
{
    if (ndev_p == NULL) {
        STU_WARN("tcp: devices() called with a NULL output");
        return STRATA_ERR_INVALID;
    }
    pthread_mutex_lock(&dev_lock);
    int refs = dev_refs, count = dev_count;
    pthread_mutex_unlock(&dev_lock);
    if (refs == 0) {
        STU_WARN("tcp: devices() called before init");
        return STRATA_ERR_INVALID;
    }
    *ndev_p = count;
    return STRATA_OK;
}

strata_status_t stt_tcp_device_get(int dev, stt_tcp_dev_t *dev_p)
{
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&dev_lock);
    if (dev_refs == 0 || dev < 0 || dev >= dev_count)
        status = STRATA_ERR_NOT_FOUND;
    else
        *dev_p = dev_table[dev];
    int count = dev_count, refs = dev_refs;
    pthread_mutex_unlock(&dev_lock);
    if (status != STRATA_OK)
        STU_WARN("tcp: no device %d (%d devices%s)", dev, count, refs ? "" : ", not initialised");
    return status;
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
    return STRATA_OK;
}
