/*
 * Network interfaces as devices (netif.h): discovery, sysfs properties and
 * socket address helpers shared by the tcp and ucx transports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "transport/base/netif.h"
#include "util/log.h"
#include "util/name_filter.h"
#include "util/param.h"
#include "util/pci.h"
#include "util/time.h"

typedef struct netif_scan {
    const char *who;
    stu_name_filter_t filter;
    bool user_filter;          /* STRATA_SOCKET_IFNAME was set */
    int families[2];
    int nfamilies;
    stt_netif_t *table;
    int max;
    int count;
} netif_scan_t;

static strata_status_t netif_scan_setup(netif_scan_t *scan)
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
        STU_WARN("%s: STRATA_SOCKET_FAMILY='%s' is not AF_INET, AF_INET6 or empty", scan->who,
                 family);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

static bool netif_is_listed(const netif_scan_t *scan, const char *name)
{
    for (int i = 0; i < scan->count; i++)
        if (strcmp(scan->table[i].name, name) == 0)
            return true;
    return false;
}

static bool netif_addr_usable(const struct ifaddrs *ifa, int family)
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
static bool netif_name_wanted(const netif_scan_t *scan, const struct ifaddrs *ifa, bool fallback)
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
static void netif_pci_path(const char *ifname, char *path, size_t len)
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

static void netif_sysfs_fill(stt_netif_t *nif)
{
    char path[PATH_MAX];
    uint64_t hash = 0xcbf29ce484222325ull;       /* FNV-1a offset basis */

    netif_pci_path(nif->name, nif->pci_path, sizeof(nif->pci_path));
    nif->speed_mbps = STT_NETIF_DEFAULT_SPEED_MBPS;
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", nif->name);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        int speed;
        if (fscanf(f, "%d", &speed) == 1 && speed > 0)
            nif->speed_mbps = speed;
        fclose(f);
    }
    /* Stable across processes and runs: a hash of the interface name. */
    for (const char *c = nif->name; *c != '\0'; c++) {
        hash ^= (uint8_t)*c;
        hash *= 0x100000001b3ull;                 /* FNV-1a prime */
    }
    nif->guid = hash;
}

static void netif_scan_pass(netif_scan_t *scan, struct ifaddrs *list, bool fallback)
{
    for (int f = 0; f < scan->nfamilies; f++) {
        for (struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
            if (!netif_addr_usable(ifa, scan->families[f]) ||
                !netif_name_wanted(scan, ifa, fallback) || netif_is_listed(scan, ifa->ifa_name))
                continue;
            if (scan->count == scan->max) {
                STU_INFO(STU_LOG_INIT | STU_LOG_NET, "%s: more than %d interfaces, '%s' skipped",
                         scan->who, scan->max, ifa->ifa_name);
                continue;
            }
            stt_netif_t *nif = &scan->table[scan->count];
            memset(nif, 0, sizeof(*nif));
            snprintf(nif->name, sizeof(nif->name), "%s", ifa->ifa_name);
            if (scan->families[f] == AF_INET)
                nif->addr.in4 = *(const struct sockaddr_in *)ifa->ifa_addr;
            else
                nif->addr.in6 = *(const struct sockaddr_in6 *)ifa->ifa_addr;
            nif->addr.in4.sin_port = 0;          /* same offset in both families */
            netif_sysfs_fill(nif);
            scan->count++;
        }
    }
}

strata_status_t stt_netif_discover(const char *who, stt_netif_t *table, int max, int *count_p)
{
    netif_scan_t scan = {.who = who, .table = table, .max = max};
    struct ifaddrs *list;
    strata_status_t status;

    status = netif_scan_setup(&scan);
    if (status != STRATA_OK)
        return status;
    if (getifaddrs(&list) != 0) {
        STU_WARN("%s: getifaddrs: %s", who, strerror(errno));
        return STRATA_ERR_IO;
    }
    netif_scan_pass(&scan, list, false);
    if (scan.count == 0 && !scan.user_filter)
        netif_scan_pass(&scan, list, true);
    freeifaddrs(list);

    if (scan.count == 0)
        STU_WARN("%s: no usable interface (STRATA_SOCKET_IFNAME='%s', "
                 "STRATA_SOCKET_FAMILY='%s')", who, stu_param_str(STU_PARAM_SOCKET_IFNAME),
                 stu_param_str(STU_PARAM_SOCKET_FAMILY));
    for (int i = 0; i < scan.count; i++) {
        char addr[STT_NETIF_ADDR_STRLEN];
        stt_netif_addr_format(&table[i].addr, addr, sizeof(addr));
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "%s: dev %d %s %s speed %d Mbps pci '%s'", who, i,
                 table[i].name, addr, table[i].speed_mbps, table[i].pci_path);
    }
    *count_p = scan.count;
    return STRATA_OK;
}

void stt_netif_props_fill(const stt_netif_t *nif, stt_props_t *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", nif->name);
    snprintf(p->pci_path, sizeof(p->pci_path), "%s", nif->pci_path);
    p->speed_mbps = nif->speed_mbps;
    p->guid = nif->guid;
    p->ptr_support = STT_PTR_HOST;
    p->max_recvs = STT_MAX_RECVS;
}

void stt_netif_addr_format(const stt_netif_addr_t *addr, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN];

    if (addr->sa.sa_family == AF_INET &&
        inet_ntop(AF_INET, &addr->in4.sin_addr, host, sizeof(host)) != NULL) {
        snprintf(buf, len, "%s:%u", host, ntohs(addr->in4.sin_port));
    } else if (addr->sa.sa_family == AF_INET6 &&
               inet_ntop(AF_INET6, &addr->in6.sin6_addr, host, sizeof(host)) != NULL) {
        snprintf(buf, len, "[%s]:%u", host, ntohs(addr->in6.sin6_port));
    } else {
        snprintf(buf, len, "?(family %d)", addr->sa.sa_family);
    }
}

socklen_t stt_netif_addr_len(const stt_netif_addr_t *addr)
{
    return addr->sa.sa_family == AF_INET6 ? sizeof(addr->in6) : sizeof(addr->in4);
}

uint64_t stt_netif_random_u64(void)
{
    uint64_t v;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
        return v;
    /* No entropy yet (early boot): mix the clock, pid and an address; ids only need
     * to differ between concurrent connections, not to be secret. */
    v = stu_time_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&v;
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
    return v;
}
