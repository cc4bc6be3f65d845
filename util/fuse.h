/*
 * STRATA_NET_FUSE, parsed: which devices a transport fuses into virtual ones
 * at discovery, or whether it may fuse at all (docs/multirail.md).
 *
 *   ""  or "auto"          interfaces stay separate; NCCL's makeVDevice requests
 *                          are honoured (NCCL_NET_MERGE_LEVEL, NCCL_NET_FORCE_MERGE)
 *   "off"                  makeVDevice is refused: nothing is ever fused
 *   "all"                  every device of the transport becomes one virtual device
 *                          (2..8 devices; otherwise nothing is fused, with a warning)
 *   "eth1,eth2;eth3,eth4"  each ';'-separated group of 2..8 exact device names
 *                          becomes one virtual device, in the place of its first
 *                          member; the others leave the device list
 *
 * Pure logic, no allocation.
 */
#ifndef STU_FUSE_H
#define STU_FUSE_H

#include <stddef.h>

#include "strata/status.h"

#define STU_FUSE_MAX_GROUPS 8
#define STU_FUSE_MAX_MEMBERS 8      /* STT_MAX_VDEV_MEMBERS */
#define STU_FUSE_NAMELEN 64

typedef enum { STU_FUSE_AUTO, STU_FUSE_OFF, STU_FUSE_ALL, STU_FUSE_GROUPS } stu_fuse_mode_t;

typedef struct stu_fuse {
    stu_fuse_mode_t mode;
    int ngroups;                                   /* STU_FUSE_GROUPS only */
    int nnames[STU_FUSE_MAX_GROUPS];
    char names[STU_FUSE_MAX_GROUPS][STU_FUSE_MAX_MEMBERS][STU_FUSE_NAMELEN];
} stu_fuse_t;

/*
 * Parses text (NULL is "") into *fuse. STRATA_ERR_INVALID with why[] (len
 * bytes) filled for anything else than the forms above; *fuse is unchanged then.
 */
strata_status_t stu_fuse_parse(const char *text, stu_fuse_t *fuse, char *why, size_t len);

/* The group (0..ngroups-1) that names name, or -1. */
int stu_fuse_group_of(const stu_fuse_t *fuse, const char *name);

#endif /* STU_FUSE_H */
