/*
 * Devices of the ib transport: every ACTIVE port with an IB or Ethernet
 * (RoCE) link layer that passes STRATA_IB_HCA. Discovered by the first init,
 * dropped by the last fini (base/devref.h); probe, init and fini live here.
 * Each opened verbs device (a context) gets one protection domain, one
 * registration cache and one async-event thread, shared by its ports.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/devref.h"
#include "transport/ib/ib_internal.h"
#include "transport/ib/ib_sysfs.h"
#include "util/log.h"
#include "util/name_filter.h"
#include "util/param.h"

/*
 * Guarded by the devref's lock (devs, below): written by open and close, and
 * make_vdev appends. port_table holds every kept port; dev_table the devices
 * callers see: ports, and virtual devices fusing some (ib_vdev.c), whose
 * member pointers lead back into port_table.
 */
static int port_count;
static stt_ib_dev_t port_table[STT_IB_MAX_DEVS];
static int dev_count;
static int dev_nphys;            /* devices discovery made; virtual ones follow */
static stt_ib_dev_t dev_table[STT_IB_MAX_DEVS + STT_IB_MAX_VDEVS];
static int ctx_count;
static stt_ib_ctx_t *ctx_table[STT_IB_MAX_DEVS];
static stt_ib_gid_owner_t local_gids[64];
static int local_ngids;
static stt_netif_addr_t oob_addr;

strata_status_t stt_ib_probe(void)
{
    int n = 0;
    struct ibv_device **list;

    if (stt_ib_verbs_load(NULL) != STRATA_OK)
        return STRATA_ERR_UNSUPPORTED;   /* said why, once */
    list = stt_ib_verbs.get_device_list(&n);
    if (list == NULL || n == 0) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: no verbs device here (%s)",
                 list == NULL ? strerror(errno) : "empty device list");
        if (list != NULL)
            stt_ib_verbs.free_device_list(list);
        return STRATA_ERR_NOT_FOUND;
    }
    stt_ib_verbs.free_device_list(list);
    return STRATA_OK;
}

/* ------------------------------------------------------------------ side-channel address */

/*
 * The side channel binds to the first up interface that passes
 * STRATA_SOCKET_IFNAME (the TCP transport's knob: one notion of "the
 * network to bootstrap over"), IPv4 before IPv6, loopback and docker* only
 * when named or when nothing else exists.
 */
static bool oob_try(const char *spec_text, bool allow_loopback)
{
    stu_name_filter_t filter;
    struct ifaddrs *list;
    bool found = false;

    if (stu_name_filter_parse(spec_text, &filter) != STRATA_OK || getifaddrs(&list) != 0)
        return false;
    for (int pass = 0; pass < 2 && !found; pass++) {
        int family = pass == 0 ? AF_INET : AF_INET6;
        for (struct ifaddrs *ifa = list; ifa != NULL && !found; ifa = ifa->ifa_next) {
            if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != family ||
                !(ifa->ifa_flags & IFF_UP))
                continue;
            bool loop = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
            if (spec_text[0] != '\0') {
                if (!stu_name_filter_match(&filter, ifa->ifa_name, -1))
                    continue;
            } else if (loop != allow_loopback || strncmp(ifa->ifa_name, "docker", 6) == 0) {
                continue;
            }
            if (family == AF_INET6 &&
                IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr))
                continue;
            memset(&oob_addr, 0, sizeof(oob_addr));
            if (family == AF_INET)
                oob_addr.in4 = *(const struct sockaddr_in *)ifa->ifa_addr;
            else
                oob_addr.in6 = *(const struct sockaddr_in6 *)ifa->ifa_addr;
            oob_addr.in4.sin_port = 0;           /* same offset in both families */
            found = true;
        }
    }
    freeifaddrs(list);
    return found;
}

static strata_status_t oob_pick(void)
{
    const char *spec = stu_param_str(STU_PARAM_SOCKET_IFNAME);
    char text[STT_IB_ADDR_STRLEN];

    if (!oob_try(spec, false) && (spec[0] != '\0' || !oob_try(spec, true))) {
        STU_WARN("ib: no interface for the side channel (STRATA_SOCKET_IFNAME='%s')", spec);
        return STRATA_ERR_NOT_FOUND;
    }
    stt_netif_addr_format(&oob_addr, text, sizeof(text));
    STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: side channel on %s", text);
    return STRATA_OK;
}

/* ------------------------------------------------------------------ GIDs */

static void dev_gid_choose(stt_ib_dev_t *d, const stt_ib_gid_pref_t *pref,
                           const struct ibv_port_attr *pa)
{
    stt_ib_gid_entry_t entries[STT_IB_GID_MAX];
    int64_t forced = stu_param_int(STU_PARAM_IB_GID_INDEX);
    char text[STT_IB_GID_STRLEN], alt[STT_IB_GID_STRLEN];
    union ibv_gid g;
    int n;

    d->gid_index = 0;
    d->has_alt = false;
    if (d->link_layer != IBV_LINK_LAYER_ETHERNET || forced >= 0) {
        d->gid_index = forced >= 0 ? (int)forced : 0;
        if (stt_ib_verbs.query_gid(d->ctx->vctx, (uint8_t)d->port, d->gid_index, &g) == 0)
            memcpy(d->gid, g.raw, 16);
        goto out;
    }
    n = stt_ib_gid_table_read(d->ctx->name, d->port, pa->gid_tbl_len, entries, STT_IB_GID_MAX);
    if (n == 0) {
        /* sysfs unreadable (a container): ask verbs, without RoCE versions. */
        for (int i = 0; i < pa->gid_tbl_len && i < STT_IB_GID_MAX; i++) {
            if (stt_ib_verbs.query_gid(d->ctx->vctx, (uint8_t)d->port, i, &g) != 0 ||
                stt_ib_gid_is_zero(g.raw))
                continue;
            entries[n] = (stt_ib_gid_entry_t){.index = i, .roce_version = 0};
            memcpy(entries[n++].raw, g.raw, 16);
        }
    }
    int best = stt_ib_gid_choose(entries, n, pref);
    if (best < 0) {
        STU_WARN("ib: %s port %d has no usable GID; using index 0", d->ctx->name, d->port);
        goto out;
    }
    d->gid_index = entries[best].index;
    memcpy(d->gid, entries[best].raw, 16);
    int ll = stt_ib_gid_link_local(entries, n);
    if (ll >= 0 && ll != best) {
        d->has_alt = true;
        d->alt_index = entries[ll].index;
        memcpy(d->alt_gid, entries[ll].raw, 16);
    }
out:
    stt_ib_gid_format(d->gid, text, sizeof(text));
    if (d->has_alt)
        stt_ib_gid_format(d->alt_gid, alt, sizeof(alt));
    STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: %s:%d %s GID index %d %s%s%s%s%s", d->ctx->name,
             d->port, d->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB", d->gid_index,
             text, forced >= 0 ? " (STRATA_IB_GID_INDEX)" : "",
             d->has_alt ? ", link-local fallback " : "", d->has_alt ? alt : "",
             d->link_layer == IBV_LINK_LAYER_ETHERNET ? "" : " (LID routed)");
}

/* ------------------------------------------------------------------ discovery */

static void dev_props_fill(stt_ib_dev_t *d, const struct ibv_port_attr *pa, bool peermem)
{
    stt_props_t *p = &d->props;
    const struct ibv_device_attr *a = &d->ctx->attr;

    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", d->ctx->name);
    stt_ib_sysfs_pci_path(d->ctx->name, p->pci_path, sizeof(p->pci_path));
    p->guid = a->sys_image_guid != 0 ? a->sys_image_guid : a->node_guid;
    p->ptr_support = STT_PTR_HOST | (peermem ? STT_PTR_CUDA : 0);   /* DMA-BUF: after the probe */
    p->reg_is_global = 1;
    p->force_flush = 0;
    p->speed_mbps = stt_ib_speed_mbps(pa->active_speed, pa->active_width);
    p->port = d->port;
    p->latency_us = STT_IB_LATENCY_US;
    p->max_comms = a->max_qp;
    p->max_recvs = STT_IB_MAX_RECVS;
    p->max_p2p_bytes = STT_IB_MAX_MSG_BYTES;
    p->max_coll_bytes = STT_IB_MAX_COLL_BYTES;
}

/* Does ibv_reg_dmabuf_mr work on this device? Called with fd -1, it fails either way. */
static bool ctx_dmabuf_probe(stt_ib_ctx_t *ctx)
{
    if (stt_ib_verbs.reg_dmabuf_mr == NULL)
        return false;                    /* a library older than the call (ib_verbs_load.h) */
    errno = 0;
    struct ibv_mr *mr = stt_ib_verbs.reg_dmabuf_mr(ctx->pd, 0, 0, 0, -1, 0);
    if (mr != NULL) {
        stt_ib_verbs.dereg_mr(mr);
        return true;
    }
    return errno != EOPNOTSUPP && errno != EPROTONOSUPPORT && errno != ENOSYS;
}

static void ctx_close(stt_ib_ctx_t *ctx)
{
    if (ctx->async_running)
        stt_ib_async_stop(ctx);
    if (ctx->pd != NULL) {
        pthread_mutex_lock(&ctx->lock);
        stt_ib_mrc_clear(&ctx->mrc);
        pthread_mutex_unlock(&ctx->lock);
        stt_ib_verbs.dealloc_pd(ctx->pd);
    }
    pthread_mutex_destroy(&ctx->lock);
    stt_ib_verbs.close_device(ctx->vctx);
    free(ctx);
}

/* Adds every wanted ACTIVE port of one verbs device; keeps the context if any was. */
static void dev_scan_one(struct ibv_device *vdev, const stu_name_filter_t *filter,
                         const stt_ib_gid_pref_t *pref, bool peermem)
{
    const char *name = stt_ib_verbs.get_device_name(vdev);
    stt_ib_ctx_t *ctx;
    int first = port_count;

    /* A keep-list that names no port of this device: nothing to open. */
    if (!filter->exclude && !stu_name_filter_match(filter, name, -1))
        return;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        STU_WARN("ib: no memory for device %s", name);
        return;
    }
    snprintf(ctx->name, sizeof(ctx->name), "%s", name);
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->async_stop_fd = -1;
    ctx->vctx = stt_ib_verbs.open_device(vdev);
    if (ctx->vctx == NULL) {
        STU_WARN("ib: ibv_open_device(%s): %s", name, strerror(errno));
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return;
    }
    if (stt_ib_verbs.query_device(ctx->vctx, &ctx->attr) != 0) {
        STU_WARN("ib: ibv_query_device(%s): %s", name, strerror(errno));
        goto err_close;
    }
    for (int port = 1; port <= ctx->attr.phys_port_cnt; port++) {
        struct ibv_port_attr pa;
        if (stt_ib_query_port(ctx->vctx, (uint8_t)port, &pa) != 0) {
            STU_WARN("ib: ibv_query_port(%s, %d): %s", name, port, strerror(errno));
            continue;
        }
        uint8_t ll = pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED ? IBV_LINK_LAYER_INFINIBAND
                                                                  : pa.link_layer;
        if (pa.state != IBV_PORT_ACTIVE ||
            (ll != IBV_LINK_LAYER_INFINIBAND && ll != IBV_LINK_LAYER_ETHERNET)) {
            STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: %s:%d skipped (state %s, link layer %u)",
                     name, port, stt_ib_verbs.port_state_str(pa.state), pa.link_layer);
            continue;
        }
        if (!stu_name_filter_match(filter, name, port))
            continue;
        if (port_count == STT_IB_MAX_DEVS) {
            STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: more than %d ports, %s:%d skipped",
                     STT_IB_MAX_DEVS, name, port);
            continue;
        }
        stt_ib_dev_t *d = &port_table[port_count++];
        memset(d, 0, sizeof(*d));
        d->ctx = ctx;
        d->port = port;
        d->nmembers = 1;
        d->member[0] = d;
        int entry = stu_name_filter_find(filter, name, port);
        d->plane = entry >= 0 ? filter->entries[entry].plane : -1;
        d->link_layer = ll;
        d->mtu = pa.active_mtu;
        d->lid = pa.lid;
        d->max_qp_wr = (uint32_t)ctx->attr.max_qp_wr;
        dev_gid_choose(d, pref, &pa);
        dev_props_fill(d, &pa, peermem);
    }
    if (port_count == first)
        goto err_close;
    ctx->pd = stt_ib_verbs.alloc_pd(ctx->vctx);
    if (ctx->pd == NULL) {
        STU_WARN("ib: ibv_alloc_pd(%s): %s", name, strerror(errno));
        goto err_drop;
    }
    ctx->dmabuf = ctx_dmabuf_probe(ctx);
    stt_ib_mr_cache_init(ctx);
    if (stt_ib_async_start(ctx) != STRATA_OK)
        goto err_drop;
    for (int i = first; i < port_count; i++)
        if (ctx->dmabuf)
            port_table[i].props.ptr_support |= STT_PTR_DMABUF;
    ctx_table[ctx_count++] = ctx;
    return;

err_drop:
    port_count = first;
err_close:
    ctx_close(ctx);
}

/* Called with the devref's lock held. */
static strata_status_t dev_discover(void)
{
    stu_name_filter_t filter;
    stt_ib_gid_pref_t pref;
    struct ibv_device **list;
    int n = 0;

    if (stu_name_filter_parse(stu_param_str(STU_PARAM_IB_HCA), &filter) != STRATA_OK)
        return STRATA_ERR_INVALID;     /* the parser named the bad entry */
    if (stt_ib_gid_pref_parse(stu_param_str(STU_PARAM_IB_ADDR_FAMILY),
                              stu_param_str(STU_PARAM_IB_ADDR_RANGE), &pref) != STRATA_OK)
        return STRATA_ERR_INVALID;
    port_count = 0;
    dev_count = 0;
    ctx_count = 0;
    list = stt_ib_verbs.get_device_list(&n);
    if (list == NULL || n == 0) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: no verbs device (%s)",
                 list == NULL ? strerror(errno) : "empty list");
        if (list != NULL)
            stt_ib_verbs.free_device_list(list);
        return STRATA_OK;
    }
    bool peermem = stt_ib_sysfs_peermem();
    local_ngids = stt_ib_gid_local_scan(local_gids, (int)STU_ARRAY_SIZE(local_gids));
    for (int i = 0; i < n; i++)
        dev_scan_one(list[i], &filter, &pref, peermem);
    stt_ib_verbs.free_device_list(list);
    if (port_count > 0 && oob_pick() != STRATA_OK) {
        for (int i = 0; i < ctx_count; i++)
            ctx_close(ctx_table[i]);
        port_count = 0;
        ctx_count = 0;
        return STRATA_ERR_NOT_FOUND;
    }
    for (int i = 0; i < port_count; i++)
        dev_table[i] = port_table[i];     /* member[0] still points into port_table */
    dev_count = port_count;
    if (dev_count == 0)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: no ACTIVE port passes STRATA_IB_HCA='%s'",
                 stu_param_str(STU_PARAM_IB_HCA));
    for (int i = 0; i < dev_count; i++) {
        const stt_props_t *p = &dev_table[i].props;
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: dev %d %s:%d speed %d Mbps guid %016llx"
                 " pci '%s' max_qp %d ptr 0x%x", i, p->name, p->port, p->speed_mbps,
                 (unsigned long long)p->guid, p->pci_path, p->max_comms, p->ptr_support);
    }
    return STRATA_OK;
}

static void dev_params_check(void)
{
    int64_t v = stu_param_int(STU_PARAM_IB_QPS_PER_CONNECTION);
    if (v < 1 || v > STT_IB_MAX_QPS)
        STU_WARN("ib: STRATA_IB_QPS_PER_CONNECTION=%lld is outside 1..%d, clamped",
                 (long long)v, STT_IB_MAX_QPS);
    v = stu_param_int(STU_PARAM_IB_TIMEOUT);
    if (v < 1 || v > 31)
        STU_WARN("ib: STRATA_IB_TIMEOUT=%lld is outside 1..31, clamped", (long long)v);
    v = stu_param_int(STU_PARAM_IB_RETRY_CNT);
    if (v < 0 || v > 7)
        STU_WARN("ib: STRATA_IB_RETRY_CNT=%lld is outside 0..7, clamped", (long long)v);
}

/* The first init (under the devref's lock). */
static strata_status_t dev_open(int *count_p)
{
    strata_status_t status = dev_discover();

    if (status != STRATA_OK)
        return status;
    dev_params_check();
    stt_ib_vdev_force(dev_table, &dev_count);
    dev_nphys = dev_count;
    *count_p = dev_count;
    return STRATA_OK;
}

/* The last fini (under the devref's lock). */
static void dev_close(void)
{
    for (int i = 0; i < ctx_count; i++)
        ctx_close(ctx_table[i]);
    ctx_count = 0;
    port_count = 0;
    dev_count = 0;
    dev_nphys = 0;
}

static stt_devref_t devs_ref = STT_DEVREF_INIT("ib", dev_open, dev_close);

strata_status_t stt_ib_init(void)
{
    /* Callers that skip the probe (tests, tools) get its answer too. */
    if (stt_ib_verbs_load(NULL) != STRATA_OK)
        return STRATA_ERR_UNSUPPORTED;
    return stt_devref_init(&devs_ref);
}

void stt_ib_fini(void)
{
    stt_devref_fini(&devs_ref);
}

strata_status_t stt_ib_devices(int *ndev_p)
{
    return stt_devref_count(&devs_ref, ndev_p);
}

stt_ib_dev_t *stt_ib_device_at(int dev)
{
    if (stt_devref_lookup(&devs_ref, dev, NULL, 0, NULL) != STRATA_OK)
        return NULL;
    return &dev_table[dev];
}

strata_status_t stt_ib_device_oob_addr(stt_netif_addr_t *addr_p)
{
    pthread_mutex_lock(&devs_ref.lock);
    bool ok = devs_ref.refs > 0;
    *addr_p = oob_addr;
    pthread_mutex_unlock(&devs_ref.lock);
    if (!ok) {
        STU_WARN("ib: used before init");
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

bool stt_ib_device_gid_elsewhere(const stt_ib_dev_t *d, const uint8_t gid[16])
{
    bool found = false;

    pthread_mutex_lock(&devs_ref.lock);
    for (int i = 0; i < local_ngids && !found; i++)
        found = memcmp(local_gids[i].raw, gid, 16) == 0 &&
                strcmp(local_gids[i].dev, d->ctx->name) != 0;
    pthread_mutex_unlock(&devs_ref.lock);
    return found;
}

strata_status_t stt_ib_get_props(int dev, stt_props_t *props_p)
{
    if (props_p == NULL) {
        STU_WARN("ib: get_props(%d) called with a NULL output", dev);
        return STRATA_ERR_INVALID;
    }
    stt_ib_dev_t *d = stt_ib_device_at(dev);
    if (d == NULL)
        return STRATA_ERR_NOT_FOUND;
    *props_p = d->props;
    /* messages from STRATA_IB_SPLIT_MIN up are split across the connection's QPs
     * (ib_stripe.c; 0: all of them), where it has several */
    int64_t split_min = stu_param_int(STU_PARAM_IB_SPLIT_MIN);
    props_p->stripe_min = stt_ib_conn_nqps(d->nmembers) < 2 ? 0
                          : split_min < 1 ? 1 : (size_t)split_min;
    return STRATA_OK;
}

/* Under the devref's lock: the same members reuse their device (NCCL may ask twice). */
static strata_status_t vdev_add(int count, bool room, void *arg, int *index_p)
{
    const stt_ib_dev_t *want = arg;

    for (int d = dev_nphys; d < count; d++) {
        if (dev_table[d].nmembers == want->nmembers &&
            memcmp(dev_table[d].member, want->member, sizeof(want->member)) == 0) {
            *index_p = d;
            return STRATA_OK;
        }
    }
    if (!room) {
        STU_WARN("ib: no room for virtual device %s (%d devices)", want->props.name, count);
        return STRATA_ERR_NO_RESOURCE;
    }
    dev_table[count] = *want;
    dev_count = count + 1;
    *index_p = count;
    return STRATA_OK;
}

strata_status_t stt_ib_make_vdev(const int *devs, int n, int *vdev_p)
{
    stt_ib_dev_t snapshot[STT_IB_MAX_DEVS], vdev;
    int count = 0;
    strata_status_t status;

    if (devs == NULL || vdev_p == NULL) {
        STU_WARN("ib: make_vdev called with a NULL %s", devs ? "output" : "device list");
        return STRATA_ERR_INVALID;
    }
    if ((status = stt_ib_devices(&count)) != STRATA_OK)
        return status;
    /* Discovery's devices never change between init and fini: copy them to check the members. */
    pthread_mutex_lock(&devs_ref.lock);
    int nphys = dev_nphys;
    memcpy(snapshot, dev_table, (size_t)nphys * sizeof(snapshot[0]));
    pthread_mutex_unlock(&devs_ref.lock);
    if ((status = stt_ib_vdev_fill(snapshot, nphys, devs, n, &vdev)) != STRATA_OK)
        return status;
    status = stt_devref_add(&devs_ref, STT_IB_MAX_DEVS + STT_IB_MAX_VDEVS, vdev_add, &vdev,
                            vdev_p);
    if (status == STRATA_OK)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: virtual device %d = %s (%d ports, %d Mbps)",
                 *vdev_p, vdev.props.name, n, vdev.props.speed_mbps);
    return status;
}

bool stt_ib_flush_wanted(const stt_ib_dev_t *d)
{
    int64_t v = stu_param_int(STU_PARAM_IB_FLUSH);

    if (v >= 0)
        return v > 0;
    return (d->props.ptr_support & (STT_PTR_CUDA | STT_PTR_DMABUF)) != 0;
}
