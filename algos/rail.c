/*
 * Rail map parsing and the local rank -> NIC mapping (algos/rail.h).
 *
 * Terms: L = local_size ranks per node, ndev NICs per node; nrails = the
 * distinct NICs the L ranks use, min(L, ndev) by default. In the cost model
 * L/nrails concurrent inter-node rings share each NIC (algos/cost_model.c).
 */
#include "algos/rail.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "util/log.h"
#include "util/param.h"

/* Parses blanks, digits, blanks from *pp up to ',' or the end; advances *pp past the entry. */
static int rail_entry_parse(const char **pp, long *value_p)
{
    const char *p = *pp;
    long v = 0;
    int digits = 0;

    while (*p == ' ' || *p == '\t')
        p++;
    while (*p >= '0' && *p <= '9') {
        if (v > (LONG_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*p - '0');
        p++;
        digits++;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (digits == 0 || (*p != ',' && *p != '\0'))
        return -1;
    *pp = p;
    *value_p = v;
    return 0;
}

strata_status_t sta_rail_map_parse(const char *spec, int local_size, int ndev,
                                   sta_rail_map_t *map)
{
    sta_rail_map_t tmp;
    const char *p = spec;
    int n = 0;

    if (local_size < 1 || ndev < 1 || local_size > STA_RAIL_MAP_MAX) {
        STU_WARN("rail map: need 1..%d local ranks and a device (local_size %d, ndev %d)",
                 STA_RAIL_MAP_MAX, local_size, ndev);
        return STRATA_ERR_INVALID;
    }
    tmp.nentries = 0;
    if (spec == NULL || spec[strspn(spec, " \t")] == '\0') {
        *map = tmp;
        return STRATA_OK;
    }
    for (;;) {
        long v;
        if (rail_entry_parse(&p, &v) != 0) {
            STU_WARN("rail map '%s': entry %d is not a device index", spec, n);
            return STRATA_ERR_INVALID;
        }
        if (v >= ndev) {
            STU_WARN("rail map '%s': entry %d is device %ld, but there are %d devices", spec, n,
                     v, ndev);
            return STRATA_ERR_INVALID;
        }
        if (n == local_size) {
            STU_WARN("rail map '%s': more entries than the %d local ranks", spec, local_size);
            return STRATA_ERR_INVALID;
        }
        tmp.dev[n++] = (int)v;
        if (*p == '\0')
            break;
        p++;                               /* the ',' */
    }
    if (n != local_size) {
        STU_WARN("rail map '%s': %d entries for %d local ranks", spec, n, local_size);
        return STRATA_ERR_INVALID;
    }
    tmp.nentries = n;
    *map = tmp;
    return STRATA_OK;
}

strata_status_t sta_rail_map_env_read(int local_size, int ndev, sta_rail_map_t *map)
{
    return sta_rail_map_parse(stu_param_str(STU_PARAM_RAIL_MAP), local_size, ndev, map);
}

int sta_rail_device(int local_rank, int ndev, const sta_rail_map_t *map)
{
    if (local_rank < 0 || ndev < 1)
        return -1;
    if (map != NULL && local_rank < map->nentries)
        return map->dev[local_rank];
    return local_rank % ndev;
}

int sta_rail_count(int local_size, int ndev, const sta_rail_map_t *map)
{
    int count = 0;

    if (local_size < 1 || ndev < 1)
        return 0;
    if (map == NULL || map->nentries == 0)
        return local_size < ndev ? local_size : ndev;
    for (int d = 0; d < ndev; d++) {
        for (int r = 0; r < local_size; r++) {
            if (sta_rail_device(r, ndev, map) == d) {
                count++;
                break;
            }
        }
    }
    return count;
}
