/*
 * The NCCL plugin ABI, part 2: device offload ("net device") descriptors.
 *
 * A plugin whose data path runs partly in GPU code (for example one that
 * scatters payload into GPU pages and lets an NCCL kernel gather it) says so
 * through netDeviceType/netDeviceVersion in its properties and hands NCCL a
 * device handle per connection. Strata is a host plugin: it reports
 * NCCL_NET_DEVICE_HOST and never fills a device handle, but the types are part
 * of the v7+ function signatures.
 */
#ifndef STRATA_NCCL_NET_DEVICE_H
#define STRATA_NCCL_NET_DEVICE_H

#include "nccl/common.h"

/* A netDeviceVersion no NCCL build accepts. */
#define NCCL_NET_DEVICE_INVALID_VERSION 0x0

/* The unit NCCL's device-side unpack code works in. */
#define NCCL_NET_MTU_SIZE 4096

/*
 * The one unpack version NCCL 2.28.9 understands; a plugin reporting
 * NCCL_NET_DEVICE_UNPACK with any other version is refused.
 */
#define NCCL_NET_DEVICE_UNPACK_VERSION 0x7

/* Where the plugin's data path runs. GIN_* are used by the GIN interface only. */
typedef enum {
    NCCL_NET_DEVICE_HOST = 0,
    NCCL_NET_DEVICE_UNPACK = 1,
    NCCL_NET_DEVICE_GIN_PROXY = 2,
    NCCL_NET_DEVICE_GIN_GDAKI = 3,
} ncclNetDeviceType;

/*
 * Per-connection device handle, returned through connect/accept's last
 * argument when NCCL asks for offload. `handle`/`size` describe the plugin's
 * device-side state; needsProxyProgress asks NCCL to keep calling the
 * plugin's progress from the proxy thread. The layout has not changed since
 * v7; the later names are aliases.
 */
typedef struct {
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    void *handle;
    size_t size;
    int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v11_t ncclNetDeviceHandle_t;

_Static_assert(sizeof(ncclNetDeviceType) == 4, "ncclNetDeviceType is an int-sized enum");
STP_ABI_CHECK_SIZE(ncclNetDeviceHandle_v7_t, 32);
STP_ABI_CHECK_OFFSET(ncclNetDeviceHandle_v7_t, netDeviceVersion, 4);
STP_ABI_CHECK_OFFSET(ncclNetDeviceHandle_v7_t, handle, 8);
STP_ABI_CHECK_OFFSET(ncclNetDeviceHandle_v7_t, size, 16);
STP_ABI_CHECK_OFFSET(ncclNetDeviceHandle_v7_t, needsProxyProgress, 24);

#endif /* STRATA_NCCL_NET_DEVICE_H */
