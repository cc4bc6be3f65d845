/*
 * The NCCL net plugin ABI, every version Strata exports (v6 to v12), and
 * unversioned names for the current one.
 *
 * NCCL 2.28.9 looks up ncclNetPlugin_v11, then _v10 ... _v6, in the loaded
 * library and uses the first it finds; NCCL 2.30 starts at _v12; older NCCL
 * releases stop at the newest version they know. The same goes for
 * ncclCollNetPlugin_vN. The unversioned names below are v11's: the version the
 * plugin implements natively (v12 adds two properties, plugin/net_v12.c).
 */
#ifndef STRATA_NCCL_NET_H
#define STRATA_NCCL_NET_H

#include "nccl/common.h"
#include "nccl/net_device.h"
#include "nccl/net_v6.h"
#include "nccl/net_v7.h"
#include "nccl/net_v8.h"
#include "nccl/net_v9.h"
#include "nccl/net_v10.h"
#include "nccl/net_v11.h"
#include "nccl/net_v12.h"

typedef ncclNet_v11_t ncclNet_t;
typedef ncclCollNet_v11_t ncclCollNet_t;
typedef ncclNetProperties_v11_t ncclNetProperties_t;
typedef ncclNetVDeviceProps_v11_t ncclNetVDeviceProps_t;
typedef ncclNetCommConfig_v11_t ncclNetCommConfig_t;
typedef ncclNetAttr_v11_t ncclNetAttr_t;
typedef ncclNetSGE_v11_t ncclNetSGE_t;

#endif /* STRATA_NCCL_NET_H */
