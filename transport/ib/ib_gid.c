/* RoCE GID choice: reading the table from sysfs and ranking its entries. */
#include "transport/ib/ib_gid.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "transport/ib/ib_sysfs.h"
#include "util/log.h"

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

int stt_ib_gid_family(const uint8_t raw[16])
{
    return memcmp(raw, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0 ? AF_INET : AF_INET6;
}

bool stt_ib_gid_is_zero(const uint8_t raw[16])
{
    for (int i = 0; i < 16; i++)
        if (raw[i] != 0)
            return false;
    return true;
}

static bool gid_is_link_local(const uint8_t raw[16])
{
    return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

void stt_ib_gid_format(const uint8_t raw[16], char *buf, size_t len)
{
    char text[INET6_ADDRSTRLEN];

    if (inet_ntop(AF_INET6, raw, text, sizeof(text)) == NULL)
        snprintf(text, sizeof(text), "?");
    snprintf(buf, len, "%s", text);
}

static bool bits_match(const uint8_t *a, const uint8_t *b, int bits)
{
    int bytes = bits / 8, rest = bits % 8;

    if (memcmp(a, b, (size_t)bytes) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[bytes] & mask) == (b[bytes] & mask);
}

static bool gid_in_range(const uint8_t raw[16], const stt_ib_gid_pref_t *pref)
{
    int family = stt_ib_gid_family(raw);

    if (!pref->has_range || family != pref->range_family)
        return false;
    if (family == AF_INET)
        return bits_match(raw + 12, pref->range_addr, pref->range_bits);
    return bits_match(raw, pref->range_addr, pref->range_bits);
}

strata_status_t stt_ib_gid_pref_parse(const char *family, const char *range,
                                      stt_ib_gid_pref_t *pref_p)
{
    stt_ib_gid_pref_t p;
    char addr[INET6_ADDRSTRLEN + 1];

    memset(&p, 0, sizeof(p));
    if (family == NULL || family[0] == '\0' || strcasecmp(family, "AF_INET") == 0 ||
        strcasecmp(family, "ipv4") == 0) {
        p.family = AF_INET;
    } else if (strcasecmp(family, "AF_INET6") == 0 || strcasecmp(family, "ipv6") == 0) {
        p.family = AF_INET6;
    } else {
        STU_WARN("ib: STRATA_IB_ADDR_FAMILY='%s' is not AF_INET or AF_INET6", family);
        return STRATA_ERR_INVALID;
    }
    if (range != NULL && range[0] != '\0') {
        const char *slash = strchr(range, '/');
        char *end;
        if (slash == NULL || (size_t)(slash - range) >= sizeof(addr))
            goto err_range;
        memcpy(addr, range, (size_t)(slash - range));
        addr[slash - range] = '\0';
        long bits = strtol(slash + 1, &end, 10);
        if (slash[1] == '\0' || *end != '\0')
            goto err_range;
        if (inet_pton(AF_INET, addr, p.range_addr) == 1 && bits >= 0 && bits <= 32)
            p.range_family = AF_INET;
        else if (inet_pton(AF_INET6, addr, p.range_addr) == 1 && bits >= 0 && bits <= 128)
            p.range_family = AF_INET6;
        else
            goto err_range;
        p.has_range = true;
        p.range_bits = (int)bits;
    }
    *pref_p = p;
    return STRATA_OK;

err_range:
    STU_WARN("ib: STRATA_IB_ADDR_RANGE='%s' is not 'address/prefix-length'", range);
    return STRATA_ERR_INVALID;
}

int stt_ib_gid_table_read(const char *dev, int port, int tbl_len, stt_ib_gid_entry_t *entries,
                          int max)
{
    int n = 0;

    if (tbl_len > STT_IB_GID_MAX)
        tbl_len = STT_IB_GID_MAX;
    for (int i = 0; i < tbl_len && n < max; i++) {
        char rel[256], text[128];
        stt_ib_gid_entry_t e;
        memset(&e, 0, sizeof(e));
        e.index = i;
        snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/gids/%d", dev, port, i);
        if (stt_ib_sysfs_read(rel, text, sizeof(text), NULL) != STRATA_OK ||
            inet_pton(AF_INET6, text, e.raw) != 1 || stt_ib_gid_is_zero(e.raw))
            continue;
        /* An entry whose type cannot be read (EINVAL) is not in use. */
        snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/gid_attrs/types/%d", dev, port,
                 i);
        if (stt_ib_sysfs_read(rel, text, sizeof(text), NULL) != STRATA_OK)
            continue;
        if (strcasecmp(text, "RoCE v2") == 0)
            e.roce_version = 2;
        else if (strcasecmp(text, "IB/RoCE v1") == 0 || strcasecmp(text, "RoCE v1") == 0)
            e.roce_version = 1;
        entries[n++] = e;
    }
    return n;
}

static int gid_score(const stt_ib_gid_entry_t *e, const stt_ib_gid_pref_t *pref)
{
    int score = 0;

    if (stt_ib_gid_family(e->raw) == pref->family)
        score += 8;
    if (gid_in_range(e->raw, pref))
        score += 4;
    if (e->roce_version == 2)
        score += 2;
    if (!gid_is_link_local(e->raw))
        score += 1;
    return score;
}

int stt_ib_gid_choose(const stt_ib_gid_entry_t *entries, int n, const stt_ib_gid_pref_t *pref)
{
    int best = -1, best_score = -1;

    for (int i = 0; i < n; i++) {
        int s = gid_score(&entries[i], pref);
        if (s > best_score) {
            best = i;
            best_score = s;
        }
    }
    return best;
}

int stt_ib_gid_link_local(const stt_ib_gid_entry_t *entries, int n)
{
    int found = -1;

    for (int i = 0; i < n; i++) {
        if (!gid_is_link_local(entries[i].raw))
            continue;
        if (entries[i].roce_version == 2)
            return i;
        if (found < 0)
            found = i;
    }
    return found;
}

int stt_ib_gid_local_scan(stt_ib_gid_owner_t *list, int max)
{
    char path[1200];
    int n = 0;

    snprintf(path, sizeof(path), "%s/class/infiniband", stt_ib_sysfs_root());
    DIR *d = opendir(path);
    if (d == NULL)
        return 0;
    for (struct dirent *de = readdir(d); de != NULL && n < max; de = readdir(d)) {
        stt_ib_gid_entry_t e[16];
        if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(list[0].dev))
            continue;
        for (int port = 1; port <= 2 && n < max; port++) {
            int k = stt_ib_gid_table_read(de->d_name, port, STT_IB_GID_MAX, e, 16);
            for (int i = 0; i < k && n < max; i++) {
                memcpy(list[n].dev, de->d_name, strlen(de->d_name) + 1);   /* length checked */
                memcpy(list[n].raw, e[i].raw, 16);
                n++;
            }
        }
    }
    closedir(d);
    return n;
}
