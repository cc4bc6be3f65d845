/*
 * What the ib transport reads from sysfs, under a root that tests can move
 * onto a fixture tree (stt_ib_sysfs_set_root), and the pure property helpers
 * built on it. No verbs here, so unit tests run on hosts without RDMA.
 *
 * Thread safety: set_root is for tests, before any other call; the readers
 * are thread-safe.
 */
#ifndef STT_IB_SYSFS_H
#define STT_IB_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define STT_IB_SYSFS_DEFAULT_ROOT "/sys"

/* Moves the sysfs root (a test's fixture directory); NULL restores /sys. */
void stt_ib_sysfs_set_root(const char *root);
const char *stt_ib_sysfs_root(void);

/*
 * Reads the first line of <root>/<rel> into buf without its newline.
 * OK; STRATA_ERR_NOT_FOUND when the file is absent; STRATA_ERR_IO otherwise.
 * *errno_p (may be NULL) gets the errno of a failure (EINVAL for unset GID
 * attributes, which sysfs reports at read time).
 */
strata_status_t stt_ib_sysfs_read(const char *rel, char *buf, size_t len, int *errno_p);

/*
 * The PCI path of a verbs device: realpath of <root>/class/infiniband/<dev>/device
 * with the PCI function digit folded to 0, so the ports and virtual functions
 * of one card agree. "" for a device on no PCI function (rxe, siw).
 */
void stt_ib_sysfs_pci_path(const char *dev, char *path, size_t len);

/*
 * Folds the function of the last "dddd:bb:dd.f" component of path to 0, in
 * place; returns false (path untouched) when path ends in no PCI function.
 */
bool stt_ib_pci_fold(char *path);

/* True when a GPU peer-memory module is loaded (nvidia_peermem or nv_peer_mem). */
bool stt_ib_sysfs_peermem(void);

/*
 * Port speed in Mbps from ibv_port_attr's active_speed and active_width codes
 * (one bit each); 0 for codes this table does not know.
 */
int stt_ib_speed_mbps(uint32_t active_speed, uint32_t active_width);

#endif /* STT_IB_SYSFS_H */
