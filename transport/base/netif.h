/*
 * Network interfaces as devices, shared by the transports whose devices are
 * interfaces (tcp, ucx): discovery filtered by STRATA_SOCKET_IFNAME and
 * STRATA_SOCKET_FAMILY, the properties sysfs gives (speed, PCI path) and the
 * socket address helpers both use. Stateless; every function is thread-safe.
 *
 * Selection: without STRATA_SOCKET_IFNAME, every up interface except loopback
 * and docker* qualifies, and loopback is used when nothing else does. With it,
 * the filter alone decides (loopback included if it matches). IPv4 interfaces
 * come first, each with the first address of the preferred family; IPv6
 * link-local addresses are skipped (they need a scope id the peer cannot use).
 */
#ifndef STT_NETIF_H
#define STT_NETIF_H

#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/transport.h"

#define STT_NETIF_MAX 32                  /* interfaces kept after filtering */
#define STT_NETIF_DEFAULT_SPEED_MBPS 10000 /* when sysfs has no speed (virtual, or -1) */
#define STT_NETIF_ADDR_STRLEN (INET6_ADDRSTRLEN + 8)

typedef union stt_netif_addr {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
} stt_netif_addr_t;

typedef struct stt_netif {
    char name[IF_NAMESIZE];
    stt_netif_addr_t addr;   /* port 0 */
    char pci_path[256];      /* "" when the interface sits on no PCI device */
    int speed_mbps;
    uint64_t guid;           /* a stable hash of the name: same in every process */
} stt_netif_t;

/*
 * Fills table (max entries) with the interfaces that qualify and *count_p
 * with their number (0 is not an error: the warning names the filter). who
 * prefixes log lines ("tcp", "ucx"). STRATA_ERR_INVALID for a malformed
 * filter or family, STRATA_ERR_IO when the interfaces cannot be listed.
 */
strata_status_t stt_netif_discover(const char *who, stt_netif_t *table, int max, int *count_p);

/*
 * The properties every interface-backed device shares: name, PCI path,
 * speed, guid, host pointers, STT_MAX_RECVS. Zeroes the rest, which the
 * transport fills (latency, limits).
 */
void stt_netif_props_fill(const stt_netif_t *netif, stt_props_t *props);

/* "192.0.2.1:4242" or "[fd00::1]:4242"; never fails (writes "?" for unknown families). */
void stt_netif_addr_format(const stt_netif_addr_t *addr, char *buf, size_t len);
socklen_t stt_netif_addr_len(const stt_netif_addr_t *addr);

/* Best effort 64-bit random value for ids (not secret, only distinct). */
uint64_t stt_netif_random_u64(void);

#endif /* STT_NETIF_H */
