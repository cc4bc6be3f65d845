/*
 * Device properties shared by the CollNet tables and the v12 net table (collnet_props.h):
 * v11's getProperties gives the net's properties, v12 widens vProps and adds the rail
 * (algos/rail.h's map) and the plane (STRATA_IB_HCA).
 */
#include "plugin/collnet_props.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "algos/rail.h"
#include "plugin/net_compat.h"
#include "plugin/plugin.h"
#include "util/log.h"
#include "util/name_filter.h"
#include "util/param.h"

int stp_cn_ndev(void)
{
    if (stu_param_int(STU_PARAM_COLLNET) == 0)
        return 0;
    return stp_state_ndev();
}

ncclResult_t stp_cn_props_v11(int dev, ncclNetProperties_v11_t *props)
{
    ncclResult_t res = ncclNetPlugin_v11.getProperties(dev, props);

    if (res != ncclSuccess)
        return res;
    /* NCCL fails proxy setup outside (0, 1 TiB] ("invalid value for maxCollBytes"). */
    if (props->maxCollBytes == 0 || props->maxCollBytes > (size_t)NCCL_MAX_NET_SIZE_BYTES)
        props->maxCollBytes = MAX_COLLNET_SIZE;
    return ncclSuccess;
}

/* The rail of dev under STRATA_RAIL_MAP, or -1. */
static int props_rail(int dev, int ndev)
{
    const char *spec = stu_param_str(STU_PARAM_RAIL_MAP);
    static sta_rail_map_t map;     /* 4 KiB: kept off the proxy threads' stacks */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int nentries = 1, rail = -1, seen = 0;
    int first_use[STP_MAX_DEVS];

    if (spec[0] == '\0')
        return dev;                /* local rank r uses NIC r mod ndev: NIC d is rail d */
    for (const char *p = spec; *p != '\0'; p++)
        nentries += *p == ',';
    pthread_mutex_lock(&lock);
    if (sta_rail_map_parse(spec, nentries, ndev, &map) == STRATA_OK) {
        for (int d = 0; d < STP_MAX_DEVS; d++)
            first_use[d] = -1;
        for (int i = 0; i < map.nentries; i++) {
            int d = map.dev[i];
            if (d >= 0 && d < STP_MAX_DEVS && first_use[d] < 0)
                first_use[d] = seen++;
        }
        rail = dev < STP_MAX_DEVS ? first_use[dev] : -1;
    }
    pthread_mutex_unlock(&lock);
    return rail;
}

void stp_cn_rail_plane(int dev, int16_t *rail_p, int16_t *plane_p)
{
    const stt_props_t *p = stp_state_props(dev);
    const stt_ops_t *ops = stp_state_transport();
    int rail, plane = NCCL_NET_ID_UNDEF;

    *rail_p = *plane_p = NCCL_NET_ID_UNDEF;
    if (p == NULL || ops == NULL)
        return;
    rail = props_rail(dev, stp_state_ndev());
    if (strcmp(stt_name(ops), "ib") == 0) {
        stu_name_filter_t filter;
        if (stu_name_filter_parse(stu_param_str(STU_PARAM_IB_HCA), &filter) == STRATA_OK) {
            int i = stu_name_filter_find(&filter, p->name, p->port);
            if (i >= 0 && filter.entries[i].rail >= 0)
                rail = filter.entries[i].rail;
            if (i >= 0 && filter.entries[i].plane >= 0)
                plane = filter.entries[i].plane;
        }
    }
    *rail_p = (int16_t)(rail >= 0 ? rail : NCCL_NET_ID_UNDEF);
    *plane_p = (int16_t)plane;
}

ncclResult_t stp_cn_props_v12(int dev, ncclNetProperties_v12_t *props)
{
    ncclNetProperties_v11_t v11;
    ncclResult_t res = stp_cn_props_v11(dev, &v11);

    if (res != ncclSuccess)
        return res;
    /* v12 has v11's layout up to vProps (include/nccl/net_v12.h checks the offsets) */
    _Static_assert(offsetof(ncclNetProperties_v12_t, vProps) ==
                   offsetof(ncclNetProperties_v11_t, vProps), "v11 and v12 agree up to vProps");
    memset(props, 0, sizeof(*props));
    memcpy(props, &v11, offsetof(ncclNetProperties_v11_t, vProps));
    int members[STT_MAX_VDEV_MEMBERS];
    props->vProps.ndevs = stp_state_vmembers(dev, members);
    for (int i = 0; i < props->vProps.ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC_V12; i++)
        props->vProps.devs[i] = members[i];
    props->maxP2pBytes = v11.maxP2pBytes;
    props->maxCollBytes = v11.maxCollBytes;
    props->maxMultiRequestSize = v11.maxMultiRequestSize;
    stp_cn_rail_plane(dev, &props->railId, &props->planeId);
    return ncclSuccess;
}
