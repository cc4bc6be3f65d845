/*
 * Virtual devices of the TCP transport: several interfaces fused into one
 * device (make_vdev). A connection on it opens its sockets round robin over
 * the members, socket j from member j % n's address to the peer's member
 * j % n, so striped messages spread over every member and rotated ones take
 * the members in turn (tcp_wire.h). This file builds the device entry; the
 * sockets are opened by tcp_conn.c and tcp_listen.c.
 */
#include <string.h>

#include "transport/base/vdev.h"
#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/param.h"

/* The fusion rules' view of table[0..count) (base/vdev.h). */
static void vdev_list(const stt_tcp_dev_t *table, int count, stt_vdev_dev_t *list)
{
    for (int d = 0; d < count; d++)
        list[d] = (stt_vdev_dev_t){.name = table[d].name, .port = 0, .props = &table[d].props,
                                   .nmembers = table[d].nmembers};
}

/* What tcp adds to the shared checks: one address family, and room in the handle. */
static strata_status_t vdev_family_check(const stt_tcp_dev_t *table, const int *members, int n)
{
    int family = table[members[0]].addr.sa.sa_family;

    for (int i = 1; i < n; i++) {
        if (table[members[i]].addr.sa.sa_family != family) {
            STU_WARN("tcp: cannot fuse %s with %s: IPv4 and IPv6 interfaces",
                     table[members[i]].name, table[members[0]].name);
            return STRATA_ERR_UNSUPPORTED;
        }
    }
    if (family == AF_INET6 && n > STT_TCP_VNIC_MAX_IN6) {
        STU_WARN("tcp: %d IPv6 interfaces do not fit one handle; at most %d fuse", n,
                 STT_TCP_VNIC_MAX_IN6);
        return STRATA_ERR_UNSUPPORTED;
    }
    return STRATA_OK;
}

/* The entry of the (ordered, checked) members m[0..n). */
static void vdev_build(const stt_tcp_dev_t *table, const stt_vdev_dev_t *list, const int *m,
                       int n, stt_tcp_dev_t *vdev)
{
    const stt_tcp_dev_t *first = &table[m[0]];

    memset(vdev, 0, sizeof(*vdev));
    memcpy(vdev->name, first->name, sizeof(vdev->name));
    vdev->addr = first->addr;
    vdev->nmembers = n;
    for (int i = 0; i < n; i++) {
        vdev->members[i] = m[i];
        vdev->member_addr[i] = table[m[i]].addr;
    }
    stt_vdev_props(list, m, n, &vdev->props);
}

strata_status_t stt_tcp_vdev_fill(const stt_tcp_dev_t *table, int count, const int *asked,
                                  int n, stt_tcp_dev_t *vdev)
{
    stt_vdev_dev_t list[STT_NETIF_MAX + STT_TCP_MAX_VDEVS];
    int members[STT_MAX_VDEV_MEMBERS];
    strata_status_t status;

    vdev_list(table, count, list);
    if ((status = stt_vdev_members("tcp", list, count, asked, n, members)) != STRATA_OK)
        return status;
    if ((status = vdev_family_check(table, members, n)) != STRATA_OK)
        return status;
    vdev_build(table, list, members, n, vdev);
    return STRATA_OK;
}

void stt_tcp_vdev_force(stt_tcp_dev_t *table, int *count_p)
{
    stt_vdev_dev_t list[STT_NETIF_MAX];
    stt_vdev_groups_t groups;
    stt_tcp_dev_t vdevs[STT_MAX_VDEV_MEMBERS], old[STT_NETIF_MAX];
    bool built[STT_MAX_VDEV_MEMBERS];
    int count = *count_p, place[STT_NETIF_MAX];

    vdev_list(table, count, list);
    stt_vdev_groups_plan("tcp", list, count, &groups);
    if (groups.ngroups == 0)
        return;
    for (int g = 0; g < groups.ngroups; g++) {
        built[g] = vdev_family_check(table, groups.members[g], groups.n[g]) == STRATA_OK;
        if (built[g])
            vdev_build(table, list, groups.members[g], groups.n[g], &vdevs[g]);
    }
    memcpy(old, table, (size_t)count * sizeof(old[0]));
    *count_p = stt_vdev_groups_place(&groups, built, count, place);
    for (int i = 0; i < *count_p; i++) {
        stt_tcp_dev_t entry = place[i] >= 0 ? old[place[i]] : vdevs[-1 - place[i]];
        if (place[i] < 0) {
            for (int m = 0; m < entry.nmembers; m++)
                entry.members[m] = -1;        /* the members' slots are reused */
            STU_INFO(STU_LOG_INIT | STU_LOG_NET, "tcp: STRATA_NET_FUSE=%s: device %d is %s"
                     " (%d interfaces, %d Mbps)", stu_param_str(STU_PARAM_NET_FUSE), i,
                     entry.props.name, entry.nmembers, entry.props.speed_mbps);
        } else {
            entry.members[0] = i;
        }
        table[i] = entry;
    }
}
