/*
 * Virtual devices of the TCP transport: several interfaces fused into one
 * device (make_vdev). A connection on it opens its sockets round robin over
 * the members, socket j from member j % n's address to the peer's member
 * j % n, so striped messages spread over every member and rotated ones take
 * the members in turn (tcp_wire.h). This file builds the device entry; the
 * sockets are opened by tcp_conn.c and tcp_listen.c.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "transport/tcp/tcp_internal.h"
#include "util/fuse.h"
#include "util/log.h"
#include "util/param.h"

/* Appends "+name" (or name) to the fused name; a name past 63 bytes is cut, which is only cosmetic. */
static void vdev_name_add(char *out, size_t len, const char *name, bool first)
{
    size_t used = strlen(out);
    if (used < len)
        snprintf(out + used, len - used, "%s%s", first ? "" : "+", name);
}

static strata_status_t vdev_check(const stt_tcp_dev_t *table, int count, const int *members,
                                  int n)
{
    if (n < 2 || n > STT_MAX_VDEV_MEMBERS) {
        STU_WARN("tcp: a virtual device fuses 2..%d devices, not %d", STT_MAX_VDEV_MEMBERS, n);
        return STRATA_ERR_INVALID;
    }
    int family = -1;
    for (int i = 0; i < n; i++) {
        int m = members[i];
        if (m < 0 || m >= count || table[m].nmembers != 1) {
            STU_WARN("tcp: device %d cannot be fused (%s)", m,
                     m < 0 || m >= count ? "no such device" : "already a virtual device");
            return STRATA_ERR_INVALID;
        }
        for (int j = 0; j < i; j++) {
            if (members[j] == m) {
                STU_WARN("tcp: device %d (%s) named twice in one virtual device", m,
                         table[m].name);
                return STRATA_ERR_INVALID;
            }
        }
        if (family >= 0 && table[m].addr.sa.sa_family != family) {
            STU_WARN("tcp: cannot fuse %s with %s: IPv4 and IPv6 interfaces", table[m].name,
                     table[members[0]].name);
            return STRATA_ERR_UNSUPPORTED;
        }
        family = table[m].addr.sa.sa_family;
    }
    if (family == AF_INET6 && n > STT_TCP_VNIC_MAX_IN6) {
        STU_WARN("tcp: %d IPv6 interfaces do not fit one handle; at most %d fuse", n,
                 STT_TCP_VNIC_MAX_IN6);
        return STRATA_ERR_UNSUPPORTED;
    }
    return STRATA_OK;
}

/* Members by interface name: the same order in every process, whatever order NCCL asked. */
static void vdev_order(const stt_tcp_dev_t *table, int *m, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(table[m[j - 1]].name, table[m[j]].name) > 0; j--) {
            int t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
}

strata_status_t stt_tcp_vdev_fill(const stt_tcp_dev_t *table, int count, const int *asked,
                                  int n, stt_tcp_dev_t *vdev)
{
    int members[STT_MAX_VDEV_MEMBERS];
    strata_status_t status = vdev_check(table, count, asked, n);

    if (status != STRATA_OK)
        return status;
    memcpy(members, asked, (size_t)n * sizeof(members[0]));
    vdev_order(table, members, n);
    const stt_tcp_dev_t *first = &table[members[0]];
    memset(vdev, 0, sizeof(*vdev));
    memcpy(vdev->name, first->name, sizeof(vdev->name));
    vdev->addr = first->addr;
    vdev->nmembers = n;
    vdev->props = first->props;
    vdev->props.name[0] = '\0';
    int64_t speed = 0;
    uint64_t guid = 0xcbf29ce484222325ull;   /* FNV-1a offset basis, over the members' guids */
    for (int i = 0; i < n; i++) {
        const stt_tcp_dev_t *m = &table[members[i]];
        vdev->members[i] = members[i];
        vdev->member_addr[i] = m->addr;
        vdev_name_add(vdev->props.name, sizeof(vdev->props.name), m->name, i == 0);
        speed += m->props.speed_mbps;
        guid = (guid ^ m->props.guid) * 0x100000001b3ull;   /* FNV-1a prime */
        if (m->props.max_comms < vdev->props.max_comms)
            vdev->props.max_comms = m->props.max_comms;
        if (m->props.max_recvs < vdev->props.max_recvs)
            vdev->props.max_recvs = m->props.max_recvs;
        if (m->props.latency_us > vdev->props.latency_us)
            vdev->props.latency_us = m->props.latency_us;
    }
    vdev->props.speed_mbps = speed > INT_MAX ? INT_MAX : (int)speed;
    vdev->props.guid = guid;
    return STRATA_OK;
}

/* The devices of table[0..count) in group g of the plan (all of them for "all"). */
static int vdev_group_members(const stt_tcp_dev_t *table, int count, const stu_fuse_t *plan,
                              int g, int *members)
{
    int n = 0;

    for (int d = 0; d < count; d++)
        if (plan->mode == STU_FUSE_ALL || stu_fuse_group_of(plan, table[d].name) == g)
            if (n < STT_MAX_VDEV_MEMBERS + 1)
                members[n++] = d;
    return n;
}

void stt_tcp_vdev_force(stt_tcp_dev_t *table, int *count_p)
{
    stu_fuse_t plan;
    char why[128];
    const char *text = stu_param_str(STU_PARAM_NET_FUSE);
    int count = *count_p;

    if (stu_fuse_parse(text, &plan, why, sizeof(why)) != STRATA_OK ||
        (plan.mode != STU_FUSE_ALL && plan.mode != STU_FUSE_GROUPS))
        return;              /* a bad value failed the parameter check already */
    int ngroups = plan.mode == STU_FUSE_ALL ? 1 : plan.ngroups;
    stt_tcp_dev_t vdevs[STU_FUSE_MAX_GROUPS];
    int first[STU_FUSE_MAX_GROUPS], gone[STT_NETIF_MAX] = {0};
    for (int g = 0; g < ngroups; g++) {
        int members[STT_MAX_VDEV_MEMBERS + 1];
        int n = vdev_group_members(table, count, &plan, g, members);
        first[g] = -1;
        if (plan.mode == STU_FUSE_GROUPS && n != plan.nnames[g]) {
            STU_WARN("tcp: STRATA_NET_FUSE=%s: %d of the %d interfaces of group %d are here;"
                     " not fused", text, n, plan.nnames[g], g + 1);
            continue;
        }
        if (n > STT_MAX_VDEV_MEMBERS || n < 2 ||
            stt_tcp_vdev_fill(table, count, members, n, &vdevs[g]) != STRATA_OK) {
            STU_WARN("tcp: STRATA_NET_FUSE=%s: %d interface(s) in group %d, 2..%d fuse; not"
                     " fused", text, n, g + 1, STT_MAX_VDEV_MEMBERS);
            continue;
        }
        first[g] = members[0];
        for (int i = 1; i < n; i++)
            gone[members[i]] = 1;
    }
    int out = 0;
    for (int d = 0; d < count; d++) {
        if (gone[d])
            continue;
        int g = 0;
        while (g < ngroups && first[g] != d)
            g++;
        stt_tcp_dev_t entry = g < ngroups ? vdevs[g] : table[d];
        if (g < ngroups) {
            for (int i = 0; i < entry.nmembers; i++)
                entry.members[i] = -1;        /* the members' slots are reused below */
            STU_INFO(STU_LOG_INIT | STU_LOG_NET, "tcp: STRATA_NET_FUSE=%s: device %d is %s"
                     " (%d interfaces, %d Mbps)", text, out, entry.props.name, entry.nmembers,
                     entry.props.speed_mbps);
        } else {
            entry.members[0] = out;
        }
        table[out++] = entry;
    }
    *count_p = out;
}
