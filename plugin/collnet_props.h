/*
 * Device properties as NCCL's v11 and v12 tables report them, shared by the net (v12) and
 * the CollNet (v11, v12): the CollNet's devices are the net's, one for one, with the same
 * names, order and limits, because NCCL 2.28.9 imports CollNet devices into the topology
 * first and matches the net's to them by name (src/graph/topo.cc), and NCCL 2.30 fails a
 * communicator whose ranks count different CollNet devices.
 *
 * railId: from the rail map (algos/rail.h): the NICs that local ranks use, numbered in order
 * of first use (STRATA_RAIL_MAP "2,3,2,3": device 2 is rail 0, device 3 rail 1, the others
 * none); without a map local rank r uses NIC r mod ndev, so device d is rail d. An entry of
 * STRATA_IB_HCA in NCCL's hca:port:rail:plane form sets the rail and plane of the device it
 * names; planeId is undefined otherwise.
 *
 * Thread-safe; valid between the plugin's first init and its last finalize.
 */
#ifndef STP_COLLNET_PROPS_H
#define STP_COLLNET_PROPS_H

#include "nccl/net.h"

/* Devices of the CollNet: the net's, or 0 with STRATA_COLLNET=0. */
int stp_cn_ndev(void);

/* v11 properties of net device dev (the CollNet's maxCollBytes is always valid). */
ncclResult_t stp_cn_props_v11(int dev, ncclNetProperties_v11_t *props);

/* v12: the v11 ones plus railId and planeId. */
ncclResult_t stp_cn_props_v12(int dev, ncclNetProperties_v12_t *props);

/* railId and planeId of net device dev (NCCL_NET_ID_UNDEF where none). */
void stp_cn_rail_plane(int dev, int16_t *rail_p, int16_t *plane_p);

#endif /* STP_COLLNET_PROPS_H */
