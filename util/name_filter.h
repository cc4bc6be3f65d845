/*
 * Device-name filters in the syntax of NCCL_SOCKET_IFNAME and NCCL_IB_HCA:
 *
 *   "eth,ib"          names starting with "eth" or "ib"
 *   "=eth0,eth1"      exactly these names
 *   "^docker,lo"      everything except names starting with these
 *   "^=lo"            everything except exactly "lo"
 *   "mlx5_0:1,mlx5_1" an optional ":port" restricts an entry to one port
 *   "mlx5_0:1:0:1"    NCCL 2.30's hca:port:rail:plane: the entry also names the device's
 *                     rail and network plane (read by the plugin's v12 properties)
 *
 * An empty or NULL spec matches everything. Pure logic, no allocation after parse.
 */
#ifndef STU_NAME_FILTER_H
#define STU_NAME_FILTER_H

#include <stdbool.h>

#include "strata/status.h"

#define STU_NAME_FILTER_MAX 32
#define STU_NAME_FILTER_NAMELEN 64

typedef struct stu_name_filter {
    bool exclude;   /* '^': the list names what to skip */
    bool exact;     /* '=': whole names, not prefixes */
    int count;      /* 0: match everything */
    struct {
        char name[STU_NAME_FILTER_NAMELEN];
        int port;   /* -1: any port */
        int rail;   /* -1: not given */
        int plane;  /* -1: not given */
    } entries[STU_NAME_FILTER_MAX];
} stu_name_filter_t;

/*
 * Parses spec into *filter. STRATA_ERR_INVALID (and a warning naming the bad
 * part) for an entry that is empty, too long, has a bad port, or for more than
 * STU_NAME_FILTER_MAX entries; *filter is then unchanged.
 */
strata_status_t stu_name_filter_parse(const char *spec, stu_name_filter_t *filter);

/* Does (name, port) pass the filter? port -1 means "the device as a whole". */
bool stu_name_filter_match(const stu_name_filter_t *filter, const char *name, int port);

/*
 * The first entry of a selective filter that names (name, port) (port -1: the device as a
 * whole), or -1 when none does or the filter excludes.
 */
int stu_name_filter_find(const stu_name_filter_t *filter, const char *name, int port);

/* True when the spec named entries to keep (an explicit user choice). */
static inline bool stu_name_filter_is_selective(const stu_name_filter_t *filter)
{
    return filter->count > 0 && !filter->exclude;
}

#endif /* STU_NAME_FILTER_H */
