/* sysfs reads of the ib transport and the property helpers built on them. */
#include "transport/ib/ib_sysfs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/pci.h"

static char sysfs_root[1024] = STT_IB_SYSFS_DEFAULT_ROOT;

void stt_ib_sysfs_set_root(const char *root)
{
    snprintf(sysfs_root, sizeof(sysfs_root), "%s", root ? root : STT_IB_SYSFS_DEFAULT_ROOT);
}

const char *stt_ib_sysfs_root(void)
{
    return sysfs_root;
}

strata_status_t stt_ib_sysfs_read(const char *rel, char *buf, size_t len, int *errno_p)
{
    char path[PATH_MAX];
    int err = 0;

    if (snprintf(path, sizeof(path), "%s/%s", sysfs_root, rel) >= (int)sizeof(path)) {
        err = ENAMETOOLONG;
        goto err_out;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        err = errno;
        goto err_out;
    }
    errno = 0;
    if (fgets(buf, (int)len, f) == NULL) {
        err = errno != 0 ? errno : EIO;
        fclose(f);
        goto err_out;
    }
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return STRATA_OK;

err_out:
    if (errno_p != NULL)
        *errno_p = err;
    return err == ENOENT || err == ENOTDIR ? STRATA_ERR_NOT_FOUND : STRATA_ERR_IO;
}

bool stt_ib_pci_fold(char *path)
{
    char *last = strrchr(path, '/');
    last = last != NULL ? last + 1 : path;
    if (!stu_pci_is_function(last))
        return false;
    last[11] = '0';
    return true;
}

void stt_ib_sysfs_pci_path(const char *dev, char *path, size_t len)
{
    char link[PATH_MAX], real[PATH_MAX];

    path[0] = '\0';
    if (snprintf(link, sizeof(link), "%s/class/infiniband/%s/device", sysfs_root, dev) >=
            (int)sizeof(link) || realpath(link, real) == NULL)
        return;                        /* virtual device: no parent */
    if (!stt_ib_pci_fold(real) || strlen(real) >= len)
        return;
    snprintf(path, len, "%s", real);
}

bool stt_ib_sysfs_peermem(void)
{
    static const char *const probes[] = {
        "module/nvidia_peermem/version",   /* in-tree since driver 470 */
        "kernel/mm/memory_peers/nv_mem/version",      /* MLNX_OFED nv_peer_mem */
        "kernel/mm/memory_peers/nv_mem_nc/version",
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
        if (stt_ib_sysfs_read(probes[i], buf, sizeof(buf), NULL) == STRATA_OK)
            return true;
    return false;
}

int stt_ib_speed_mbps(uint32_t active_speed, uint32_t active_width)
{
    /*
     * Per-lane data rates by the bit set in active_speed (IBTA: SDR, DDR, QDR,
     * FDR10, FDR, EDR, HDR, NDR, XDR), lane counts by the bit in active_width
     * (1x, 4x, 8x, 12x, 2x).
     */
    static const int lane_mbps[] = {2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000,
                                    200000};
    static const int lanes[] = {1, 4, 8, 12, 2};
    int s = -1, w = -1;

    for (int i = 0; i < (int)(sizeof(lane_mbps) / sizeof(lane_mbps[0])); i++)
        if (active_speed == (1u << i))
            s = i;
    for (int i = 0; i < (int)(sizeof(lanes) / sizeof(lanes[0])); i++)
        if (active_width == (1u << i))
            w = i;
    if (s < 0 || w < 0)
        return 0;
    return lane_mbps[s] * lanes[w];
}
