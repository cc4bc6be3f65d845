/*
 * Virtual devices, the part every transport that fuses shares (tcp, ib): the
 * checks of a member list, the member order, the fused device's properties,
 * and the groups STRATA_NET_FUSE names at discovery (docs/multirail.md).
 * Pure logic over the caller's device list: no locks, no allocation. A
 * transport keeps its own table; these functions see it through a
 * stt_vdev_dev_t array it fills (name, port, properties, members).
 */
#ifndef STT_BASE_VDEV_H
#define STT_BASE_VDEV_H

#include <stdbool.h>

#include "strata/status.h"
#include "transport/transport.h"

/* One device of the caller's list, as the fusion rules see it. */
typedef struct stt_vdev_dev {
    const char *name;            /* the ordering key: interface or HCA name */
    int port;                    /* second key (ib ports of one HCA); 0 where none */
    const stt_props_t *props;
    int nmembers;                /* 1 for a physical device */
} stt_vdev_dev_t;

/*
 * Checks members[0..n) against list[0..count): 2..STT_MAX_VDEV_MEMBERS distinct
 * physical devices. STRATA_ERR_INVALID, with a warning prefixed by who, otherwise.
 */
strata_status_t stt_vdev_check(const char *who, const stt_vdev_dev_t *list, int count,
                               const int *members, int n);

/* Sorts members[0..n) by (name, port): the same order in every process. */
void stt_vdev_order(const stt_vdev_dev_t *list, int *members, int n);

/* stt_vdev_check of asked[0..n), then the members in order into members[0..n). */
strata_status_t stt_vdev_members(const char *who, const stt_vdev_dev_t *list, int count,
                                 const int *asked, int n, int *members);

/*
 * The fused device's properties from its (ordered) members: name "a+b", speed
 * the sum, the first member's PCI path and port, the largest latency, the
 * smallest limits, a guid hashed from the members'.
 */
void stt_vdev_props(const stt_vdev_dev_t *list, const int *members, int n, stt_props_t *out);

/* The groups STRATA_NET_FUSE asks to fuse at discovery. */
typedef struct stt_vdev_groups {
    int ngroups;
    int n[STT_MAX_VDEV_MEMBERS];
    int members[STT_MAX_VDEV_MEMBERS][STT_MAX_VDEV_MEMBERS];   /* ordered */
} stt_vdev_groups_t;

/*
 * Reads STRATA_NET_FUSE ("all" or groups of names) against list[0..count) and
 * fills *groups with the groups that can fuse (ordered, checked). A group whose
 * names are not all present, or of a size outside 2..8, is left out with a
 * warning prefixed by who. No group for "", "auto" and "off".
 */
void stt_vdev_groups_plan(const char *who, const stt_vdev_dev_t *list, int count,
                          stt_vdev_groups_t *groups);

/*
 * Where each device goes once the groups that could be built (built[g]) fuse:
 * for the new list position i, out[i] is the device d that stays there, or
 * -1 - g for group g's fused device, which takes its first member's place (its
 * other members leave). Returns the new count (at most count).
 */
int stt_vdev_groups_place(const stt_vdev_groups_t *groups, const bool *built, int count,
                          int *out);

#endif /* STT_BASE_VDEV_H */
