/*
 * Virtual devices of the ib transport: 2..8 ports fused into one device
 * (make_vdev, STRATA_NET_FUSE). The rules are base/vdev.h's (members ordered by
 * HCA name then port, properties merged); ib adds two: members of different
 * planes (STRATA_IB_HCA's hca:port:rail:plane) never fuse, and every member
 * must have the same link layer (one connection's QPs are all RoCE or all IB).
 * A comm on the fused device has QPs on every member (ib_conn.c); this file
 * only builds the device entry.
 */
#include <stdio.h>
#include <string.h>

#include "transport/base/vdev.h"
#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/param.h"

/* The fusion rules' view of table[0..count). */
static void vdev_list(const stt_ib_dev_t *table, int count, stt_vdev_dev_t *list)
{
    for (int d = 0; d < count; d++)
        list[d] = (stt_vdev_dev_t){.name = table[d].member[0]->ctx->name,
                                   .port = table[d].member[0]->port,
                                   .props = &table[d].props,
                                   .nmembers = table[d].nmembers};
}

/* Fills *out from the ordered members m[0..n) of table. */
static strata_status_t vdev_build(const stt_ib_dev_t *table, const stt_vdev_dev_t *list,
                                  const int *m, int n, stt_ib_dev_t *out)
{
    const stt_ib_dev_t *first = &table[m[0]];

    for (int i = 1; i < n; i++) {
        const stt_ib_dev_t *d = &table[m[i]];
        if (d->plane != first->plane) {
            STU_WARN("ib: cannot fuse %s:%d (plane %d) with %s:%d (plane %d): ports of"
                     " different planes are never fused", d->ctx->name, d->port, d->plane,
                     first->ctx->name, first->port, first->plane);
            return STRATA_ERR_UNSUPPORTED;
        }
        if (d->link_layer != first->link_layer) {
            STU_WARN("ib: cannot fuse %s:%d with %s:%d: one is InfiniBand, the other RoCE",
                     d->ctx->name, d->port, first->ctx->name, first->port);
            return STRATA_ERR_UNSUPPORTED;
        }
    }
    *out = *first;                  /* member 0's port speaks for the device where one must */
    out->nmembers = n;
    memset(out->member, 0, sizeof(out->member));
    for (int i = 0; i < n; i++)
        out->member[i] = table[m[i]].member[0];
    stt_vdev_props(list, m, n, &out->props);
    out->props.pci_path[0] = '\0';   /* no single PCI device: NCCL places it by its members */
    return STRATA_OK;
}

strata_status_t stt_ib_vdev_fill(const stt_ib_dev_t *table, int count, const int *asked, int n,
                                 stt_ib_dev_t *out)
{
    stt_vdev_dev_t list[STT_IB_MAX_DEVS];
    int m[STT_MAX_VDEV_MEMBERS];
    strata_status_t status;

    vdev_list(table, count, list);
    if ((status = stt_vdev_members("ib", list, count, asked, n, m)) != STRATA_OK)
        return status;
    return vdev_build(table, list, m, n, out);
}

void stt_ib_vdev_force(stt_ib_dev_t *table, int *count_p)
{
    stt_vdev_dev_t list[STT_IB_MAX_DEVS];
    stt_vdev_groups_t groups;
    stt_ib_dev_t fused[STT_MAX_VDEV_MEMBERS], old[STT_IB_MAX_DEVS];
    bool built[STT_MAX_VDEV_MEMBERS];
    int count = *count_p, place[STT_IB_MAX_DEVS];

    vdev_list(table, count, list);
    stt_vdev_groups_plan("ib", list, count, &groups);
    if (groups.ngroups == 0)
        return;
    for (int g = 0; g < groups.ngroups; g++)
        built[g] = vdev_build(table, list, groups.members[g], groups.n[g], &fused[g]) ==
                   STRATA_OK;
    memcpy(old, table, (size_t)count * sizeof(old[0]));
    *count_p = stt_vdev_groups_place(&groups, built, count, place);
    for (int i = 0; i < *count_p; i++) {
        table[i] = place[i] >= 0 ? old[place[i]] : fused[-1 - place[i]];
        if (place[i] < 0)
            STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: STRATA_NET_FUSE=%s: device %d is %s (%d"
                     " ports, %d Mbps)", stu_param_str(STU_PARAM_NET_FUSE), i, table[i].props.name,
                     table[i].nmembers, table[i].props.speed_mbps);
    }
}
