/*
 * RoCE GID choice of the ib transport. Pure logic over a GID table read
 * from sysfs (ports/<p>/gids/<i> and gid_attrs/types/<i>), so tests run it
 * on a fixture tree.
 *
 * Automatic rule, best first (ties go to the lowest index):
 *   the address family of STRATA_IB_ADDR_FAMILY (IPv4-mapped GIDs are AF_INET),
 *   inside STRATA_IB_ADDR_RANGE when one is set,
 *   RoCE v2,
 *   not link-local (fe80::/10).
 * Zero GIDs and entries sysfs cannot read (EINVAL in containers or for unset
 * entries) are skipped. The link-local GID, when there is one, is kept as the
 * alternate that connection setup falls back to when the chosen pair cannot
 * reach (Soft-RoCE between two devices of one host; docs/ib-protocol.md).
 */
#ifndef STT_IB_GID_H
#define STT_IB_GID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define STT_IB_GID_MAX 256          /* table entries examined per port */
#define STT_IB_GID_STRLEN 46        /* INET6_ADDRSTRLEN */

typedef struct stt_ib_gid_entry {
    int index;
    uint8_t raw[16];
    int roce_version;               /* 1 (IB/RoCE v1), 2 (RoCE v2), 0 unknown */
} stt_ib_gid_entry_t;

typedef struct stt_ib_gid_pref {
    int family;                     /* AF_INET or AF_INET6 */
    bool has_range;
    int range_family;
    uint8_t range_addr[16];         /* IPv4 in the first 4 bytes */
    int range_bits;
} stt_ib_gid_pref_t;

/*
 * Parses STRATA_IB_ADDR_FAMILY ("AF_INET", "AF_INET6", "ipv4", "ipv6") and
 * STRATA_IB_ADDR_RANGE ("192.0.2.0/24", "fd00::/64", or ""). STRATA_ERR_INVALID
 * with a warning on a bad value; *pref_p written only on success.
 */
strata_status_t stt_ib_gid_pref_parse(const char *family, const char *range,
                                      stt_ib_gid_pref_t *pref_p);

/*
 * Reads the usable entries (non-zero, readable) of device dev, port port, up
 * to tbl_len entries, into entries (capacity max). Returns how many.
 */
int stt_ib_gid_table_read(const char *dev, int port, int tbl_len, stt_ib_gid_entry_t *entries,
                          int max);

/* Position in entries of the best entry by the rule above; -1 when n is 0. */
int stt_ib_gid_choose(const stt_ib_gid_entry_t *entries, int n, const stt_ib_gid_pref_t *pref);

/* Position of the first link-local entry, preferring RoCE v2; -1 if none. */
int stt_ib_gid_link_local(const stt_ib_gid_entry_t *entries, int n);

/* A GID of this host and the device that holds it. */
typedef struct stt_ib_gid_owner {
    char dev[64];
    uint8_t raw[16];
} stt_ib_gid_owner_t;

/*
 * Collects the usable GIDs of every verbs device in sysfs (filtered or not)
 * into list; returns how many. Connection setup uses it to notice a peer on
 * another device of this very host.
 */
int stt_ib_gid_local_scan(stt_ib_gid_owner_t *list, int max);

/* AF_INET for an IPv4-mapped GID (::ffff:a.b.c.d), AF_INET6 otherwise. */
int stt_ib_gid_family(const uint8_t raw[16]);
bool stt_ib_gid_is_zero(const uint8_t raw[16]);

/* Text form for logs: "::ffff:192.0.2.1", "fe80::2849:43ff:fe13:bec". */
void stt_ib_gid_format(const uint8_t raw[16], char *buf, size_t len);

#endif /* STT_IB_GID_H */
