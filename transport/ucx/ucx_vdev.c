/*
 * Virtual devices of the UCX transport: 2..8 interfaces fused into one
 * device (make_vdev, STRATA_NET_FUSE). A comm on it has one UCP worker and
 * endpoint per member ("lane"), each made from a context whose NET_DEVICES
 * is that member's interface (ucx_context.c), so lane r's traffic leaves on
 * interface r; ucx_vnic_send.c and ucx_vnic_recv.c stripe and rotate over
 * the lanes. This file builds the device entry with the rules every fusing
 * transport shares (base/vdev.h).
 */
#include <string.h>

#include "transport/base/vdev.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"
#include "util/param.h"

/* The fusion rules' view of table[0..count). */
static void vdev_list(const stt_ucx_dev_t *table, int count, stt_vdev_dev_t *list)
{
    for (int d = 0; d < count; d++)
        list[d] = (stt_vdev_dev_t){.name = table[d].nif.name, .port = 0,
                                   .props = &table[d].props, .nmembers = table[d].nmembers};
}

/* The entry of the (ordered, checked) members m[0..n). */
static void vdev_build(const stt_ucx_dev_t *table, const stt_vdev_dev_t *list, const int *m,
                       int n, stt_ucx_dev_t *vdev)
{
    memset(vdev, 0, sizeof(*vdev));
    vdev->nif = table[m[0]].nif;
    vdev->nmembers = n;
    for (int i = 0; i < n; i++)
        memcpy(vdev->member_name[i], table[m[i]].nif.name, sizeof(vdev->member_name[i]));
    stt_vdev_props(list, m, n, &vdev->props);
}

strata_status_t stt_ucx_vdev_fill(const stt_ucx_dev_t *table, int count, const int *asked,
                                  int n, stt_ucx_dev_t *vdev)
{
    stt_vdev_dev_t list[STT_UCX_MAX_DEVS];
    int members[STT_MAX_VDEV_MEMBERS];
    strata_status_t status;

    vdev_list(table, count, list);
    if ((status = stt_vdev_members("ucx", list, count, asked, n, members)) != STRATA_OK)
        return status;
    vdev_build(table, list, members, n, vdev);
    return STRATA_OK;
}

void stt_ucx_vdev_force(stt_ucx_dev_t *table, int *count_p)
{
    stt_vdev_dev_t list[STT_NETIF_MAX];
    stt_vdev_groups_t groups;
    stt_ucx_dev_t vdevs[STT_MAX_VDEV_MEMBERS], old[STT_NETIF_MAX];
    bool built[STT_MAX_VDEV_MEMBERS];
    int count = *count_p, place[STT_NETIF_MAX];

    vdev_list(table, count, list);
    stt_vdev_groups_plan("ucx", list, count, &groups);
    if (groups.ngroups == 0)
        return;
    for (int g = 0; g < groups.ngroups; g++) {
        built[g] = true;
        vdev_build(table, list, groups.members[g], groups.n[g], &vdevs[g]);
    }
    memcpy(old, table, (size_t)count * sizeof(old[0]));
    *count_p = stt_vdev_groups_place(&groups, built, count, place);
    for (int i = 0; i < *count_p; i++) {
        table[i] = place[i] >= 0 ? old[place[i]] : vdevs[-1 - place[i]];
        if (place[i] < 0)
            STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ucx: STRATA_NET_FUSE=%s: device %d is %s"
                     " (%d interfaces, %d Mbps)", stu_param_str(STU_PARAM_NET_FUSE), i,
                     table[i].props.name, table[i].nmembers, table[i].props.speed_mbps);
    }
}
