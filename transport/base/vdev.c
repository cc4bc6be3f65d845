/* Virtual devices: the rules every fusing transport applies (vdev.h). */
#include <limits.h>
#include <string.h>

#include "transport/base/vdev.h"
#include "util/fuse.h"
#include "util/log.h"
#include "util/param.h"

#define VDEV_FNV_BASIS 0xcbf29ce484222325ull   /* FNV-1a 64-bit offset basis */
#define VDEV_FNV_PRIME 0x100000001b3ull        /* FNV-1a 64-bit prime */

strata_status_t stt_vdev_check(const char *who, const stt_vdev_dev_t *list, int count,
                               const int *members, int n)
{
    if (members == NULL || n < 2 || n > STT_MAX_VDEV_MEMBERS) {
        STU_WARN("%s: a virtual device fuses 2..%d devices, not %d", who, STT_MAX_VDEV_MEMBERS,
                 members == NULL ? 0 : n);
        return STRATA_ERR_INVALID;
    }
    for (int i = 0; i < n; i++) {
        int m = members[i];
        if (m < 0 || m >= count || list[m].nmembers != 1) {
            STU_WARN("%s: device %d cannot be fused (%s)", who, m,
                     m < 0 || m >= count ? "no such device" : "already a virtual device");
            return STRATA_ERR_INVALID;
        }
        for (int j = 0; j < i; j++) {
            if (members[j] == m) {
                STU_WARN("%s: device %d (%s) named twice in one virtual device", who, m,
                         list[m].name);
                return STRATA_ERR_INVALID;
            }
        }
    }
    return STRATA_OK;
}

/* Appends "+name" (or name) to out; a name past len - 1 bytes is cut, which is only cosmetic. */
static void vdev_name_add(char *out, size_t len, const char *name, bool first)
{
    size_t used = strlen(out);

    if (!first && used + 1 < len)
        out[used++] = '+';
    while (*name != '\0' && used + 1 < len)
        out[used++] = *name++;
    out[used] = '\0';
}

static int vdev_cmp(const stt_vdev_dev_t *a, const stt_vdev_dev_t *b)
{
    int c = strcmp(a->name, b->name);
    return c != 0 ? c : a->port - b->port;
}

void stt_vdev_order(const stt_vdev_dev_t *list, int *m, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && vdev_cmp(&list[m[j - 1]], &list[m[j]]) > 0; j--) {
            int t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
}

strata_status_t stt_vdev_members(const char *who, const stt_vdev_dev_t *list, int count,
                                 const int *asked, int n, int *members)
{
    strata_status_t status = stt_vdev_check(who, list, count, asked, n);

    if (status != STRATA_OK)
        return status;
    memcpy(members, asked, (size_t)n * sizeof(members[0]));
    stt_vdev_order(list, members, n);
    return STRATA_OK;
}

void stt_vdev_props(const stt_vdev_dev_t *list, const int *members, int n, stt_props_t *out)
{
    int64_t speed = 0;
    uint64_t guid = VDEV_FNV_BASIS;

    *out = *list[members[0]].props;
    out->name[0] = '\0';
    for (int i = 0; i < n; i++) {
        const stt_props_t *p = list[members[i]].props;
        vdev_name_add(out->name, sizeof(out->name), list[members[i]].name, i == 0);
        speed += p->speed_mbps;
        guid = (guid ^ p->guid) * VDEV_FNV_PRIME;
        if (p->max_comms < out->max_comms)
            out->max_comms = p->max_comms;
        if (p->max_recvs < out->max_recvs)
            out->max_recvs = p->max_recvs;
        if (p->max_p2p_bytes < out->max_p2p_bytes)
            out->max_p2p_bytes = p->max_p2p_bytes;
        if (p->max_coll_bytes < out->max_coll_bytes)
            out->max_coll_bytes = p->max_coll_bytes;
        if (p->latency_us > out->latency_us)
            out->latency_us = p->latency_us;
        out->ptr_support &= p->ptr_support;
    }
    out->speed_mbps = speed > INT_MAX ? INT_MAX : (int)speed;
    out->guid = guid;
}

void stt_vdev_groups_plan(const char *who, const stt_vdev_dev_t *list, int count,
                          stt_vdev_groups_t *groups)
{
    stu_fuse_t plan;
    char why[128];
    const char *text = stu_param_str(STU_PARAM_NET_FUSE);

    groups->ngroups = 0;
    if (stu_fuse_parse(text, &plan, why, sizeof(why)) != STRATA_OK ||
        (plan.mode != STU_FUSE_ALL && plan.mode != STU_FUSE_GROUPS))
        return;              /* a bad value failed the parameter check already */
    int nplan = plan.mode == STU_FUSE_ALL ? 1 : plan.ngroups;
    for (int g = 0; g < nplan && g < STT_MAX_VDEV_MEMBERS; g++) {
        int *m = groups->members[groups->ngroups], n = 0, seen = 0;
        for (int d = 0; d < count; d++) {
            if (list[d].nmembers != 1 ||
                (plan.mode == STU_FUSE_GROUPS && stu_fuse_group_of(&plan, list[d].name) != g))
                continue;
            seen++;
            if (n < STT_MAX_VDEV_MEMBERS)
                m[n++] = d;
        }
        if (plan.mode == STU_FUSE_GROUPS && seen != plan.nnames[g]) {
            STU_WARN("%s: STRATA_NET_FUSE=%s: %d of the %d devices of group %d are here; not"
                     " fused", who, text, seen, plan.nnames[g], g + 1);
            continue;
        }
        if (seen != n || n < 2) {
            STU_WARN("%s: STRATA_NET_FUSE=%s: %d device(s) in group %d, 2..%d fuse; not fused",
                     who, text, seen, g + 1, STT_MAX_VDEV_MEMBERS);
            continue;
        }
        stt_vdev_order(list, m, n);
        groups->n[groups->ngroups++] = n;
    }
}

int stt_vdev_groups_place(const stt_vdev_groups_t *groups, const bool *built, int count,
                          int *out)
{
    int n = 0;

    for (int d = 0; d < count; d++) {
        int place = d;
        for (int g = 0; g < groups->ngroups; g++) {
            if (!built[g])
                continue;
            for (int i = 0; i < groups->n[g]; i++)
                if (groups->members[g][i] == d)
                    place = i == 0 ? -1 - g : INT_MIN;     /* INT_MIN: leaves the list */
        }
        if (place != INT_MIN)
            out[n++] = place;
    }
    return n;
}
