/*
 * Devices of the TCP transport: the network interfaces that pass
 * STRATA_SOCKET_IFNAME and STRATA_SOCKET_FAMILY, IPv4 ones first, each with the
 * first address of the preferred family. Discovered once by the first init,
 * dropped by the last fini.
 *
 * Without STRATA_SOCKET_IFNAME, every up interface except loopback and docker*
 * qualifies, and loopback is used when nothing else does. With it, the filter
 * alone decides (loopback included if it matches). IPv6 link-local addresses are
 * skipped: they need a scope id the peer cannot interpret.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "plugin/transport/tcp/tcp_internal.h"
#include "util/pci.h"
#include "util/log.h"
#include "util/name_filter.h"
#include "util/param.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static int dev_refs;
static int dev_count;
static stt_tcp_dev_t dev_table[STT_TCP_MAX_DEVS];

typedef struct dev_scan {
    stu_name_filter_t filter;
    bool user_filter;          /* STRATA_SOCKET_IFNAME was set */
    int families[2];
    int nfamilies;
} dev_scan_t;

static strata_status_t dev_scan_setup(dev_scan_t *scan)
{
    const char *spec = stu_param_str(STU_PARAM_SOCKET_IFNAME);
    const char *family = stu_param_str(STU_PARAM_SOCKET_FAMILY);

    if (stu_name_filter_parse(spec, &scan->filter) != STRATA_OK)
        return STRATA_ERR_INVALID;     /* the parser named the bad entry */
    scan->user_filter = spec[0] != '\0';
    if (family[0] == '\0') {
        scan->families[0] = AF_INET;
        scan->families[1] = AF_INET6;
        scan->nfamilies = 2;
    } else if (strcasecmp(family, "AF_INET") == 0 || strcasecmp(family, "ipv4") == 0) {
        scan->families[0] = AF_INET;
        scan->nfamilies = 1;
    } else if (strcasecmp(family, "AF_INET6") == 0 || strcasecmp(family, "ipv6") == 0) {
        scan->families[0] = AF_INET6;
        scan->nfamilies = 1;
    } else {
        STU_WARN("tcp: STRATA_SOCKET_FAMILY='%s' is not AF_INET, AF_INET6 or empty", family);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

static bool dev_is_listed(const char *name)
{
    for (int i = 0; i < dev_count; i++)
        if (strcmp(dev_table[i].name, name) == 0)
            return true;
    return false;
}

static bool dev_addr_usable(const struct ifaddrs *ifa, int family)
{
    if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != family)
        return false;
    if (!(ifa->ifa_flags & IFF_UP))
        return false;
    if (family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr))
        return false;
    return true;
}

/* fallback: the loopback-only pass used when the default filter found nothing. */
static bool dev_name_wanted(const dev_scan_t *scan, const struct ifaddrs *ifa, bool fallback)
{
    bool loop = (ifa->ifa_flags & IFF_LOOPBACK) != 0;

    if (scan->user_filter)
        return stu_name_filter_match(&scan->filter, ifa->ifa_name, -1);
    if (fallback)
        return loop;
    return !loop && strncmp(ifa->ifa_name, "docker", 6) != 0;
}

/*
 * The PCI function under the interface: realpath of /sys/class/net/<if>/device,
 * cut back to its last PCI function (virtio puts a "virtioN" node below it).
 * Leaves path "" when the interface sits on no PCI device.
 */
static void dev_pci_path(const char *ifname, char *path, size_t len)
{
    char link[PATH_MAX], real[PATH_MAX];

    path[0] = '\0';
    snprintf(link, sizeof(link), "/sys/class/net/%s/device", ifname);
    if (realpath(link, real) == NULL || strncmp(real, "/sys/devices/pci", 16) != 0)
        return;
    for (char *slash = strrchr(real, '/'); slash != NULL; slash = strrchr(real, '/')) {
        if (stu_pci_is_function(slash + 1)) {
            if (strlen(real) < len)
                snprintf(path, len, "%s", real);
            return;
        }
        *slash = '\0';
    }
}

static void dev_props_fill(stt_tcp_dev_t *dev)
{
    stt_props_t *p = &dev->props;
    char path[PATH_MAX];
    uint64_t hash = 0xcbf29ce484222325ull;       /* FNV-1a offset basis */

    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", dev->name);

    dev_pci_path(dev->name, p->pci_path, sizeof(p->pci_path));

    p->speed_mbps = STT_TCP_DEFAULT_SPEED_MBPS;
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", dev->name);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        int speed;
        if (fscanf(f, "%d", &speed) == 1 && speed > 0)
            p->speed_mbps = speed;
        fclose(f);
    }

    /* Stable across processes and runs: a hash of the interface name. */
    for (const char *c = dev->name; *c != '\0'; c++) {
        hash ^= (uint8_t)*c;
        hash *= 0x100000001b3ull;                 /* FNV-1a prime */
    }
    p->guid = hash;
    p->ptr_support = STT_PTR_HOST;
    p->reg_is_global = 0;
    p->force_flush = 0;
    p->port = 0;
    p->latency_us = STT_TCP_LATENCY_US;
    p->max_comms = STT_TCP_MAX_COMMS;
    p->max_recvs = STT_MAX_RECVS;
    p->max_p2p_bytes = STT_TCP_MAX_MSG_BYTES;
    p->max_coll_bytes = STT_TCP_MAX_COLL_BYTES;
}

static void dev_scan_pass(const dev_scan_t *scan, struct ifaddrs *list, bool fallback)
{
    for (int f = 0; f < scan->nfamilies; f++) {
        for (struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
            if (!dev_addr_usable(ifa, scan->families[f]) ||
                !dev_name_wanted(scan, ifa, fallback) || dev_is_listed(ifa->ifa_name))
                continue;
            if (dev_count == STT_TCP_MAX_DEVS) {
                STU_INFO(STU_LOG_INIT | STU_LOG_NET, "tcp: more than %d interfaces, '%s' skipped",
                         STT_TCP_MAX_DEVS, ifa->ifa_name);
                continue;
            }
            stt_tcp_dev_t *dev = &dev_table[dev_count];
            memset(dev, 0, sizeof(*dev));
            snprintf(dev->name, sizeof(dev->name), "%s", ifa->ifa_name);
            if (scan->families[f] == AF_INET)
                dev->addr.in4 = *(const struct sockaddr_in *)ifa->ifa_addr;
            else
                dev->addr.in6 = *(const struct sockaddr_in6 *)ifa->ifa_addr;
            dev->addr.in4.sin_port = 0;          /* same offset in both families */
            dev_props_fill(dev);
            dev_count++;
        }
    }
}

/* Called with dev_lock held. */
static strata_status_t dev_discover(void)
{
    dev_scan_t scan;
    struct ifaddrs *list;
    strata_status_t status;

    status = dev_scan_setup(&scan);
    if (status != STRATA_OK)
        return status;
    if (getifaddrs(&list) != 0) {
        STU_WARN("tcp: getifaddrs: %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    dev_count = 0;
    dev_scan_pass(&scan, list, false);
    if (dev_count == 0 && !scan.user_filter)
        dev_scan_pass(&scan, list, true);
    freeifaddrs(list);

    if (dev_count == 0)
        STU_WARN("tcp: no usable interface (STRATA_SOCKET_IFNAME='%s', "
                 "STRATA_SOCKET_FAMILY='%s')", stu_param_str(STU_PARAM_SOCKET_IFNAME),
                 stu_param_str(STU_PARAM_SOCKET_FAMILY));
    for (int i = 0; i < dev_count; i++) {
        char addr[STT_TCP_ADDR_STRLEN];
        stt_tcp_addr_format(&dev_table[i].addr, addr, sizeof(addr));
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "tcp: dev %d %s %s speed %d Mbps pci '%s'", i,
                 dev_table[i].name, addr, dev_table[i].props.speed_mbps,
                 dev_table[i].props.pci_path);
    }
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
