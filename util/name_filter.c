/* Parser and matcher for NCCL_SOCKET_IFNAME / NCCL_IB_HCA style filters. */
#include "util/name_filter.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static strata_status_t parse_entry(const char *s, size_t len, char *name, int *port)
{
    const char *colon = memchr(s, ':', len);
    size_t nlen = colon ? (size_t)(colon - s) : len;

    if (nlen == 0 || nlen >= STU_NAME_FILTER_NAMELEN)
        return STRATA_ERR_INVALID;
    memcpy(name, s, nlen);
    name[nlen] = '\0';
    *port = -1;
    if (colon != NULL) {
        size_t plen = len - nlen - 1;
        char buf[16];
        char *end;
        if (plen == 0 || plen >= sizeof(buf))
            return STRATA_ERR_INVALID;
        memcpy(buf, colon + 1, plen);
        buf[plen] = '\0';
        long p = strtol(buf, &end, 10);
        if (*end != '\0' || p < 0 || p > 255)
            return STRATA_ERR_INVALID;
        *port = (int)p;
    }
    return STRATA_OK;
}

strata_status_t stu_name_filter_parse(const char *spec, stu_name_filter_t *filter)
{
    stu_name_filter_t f;
    const char *p = spec;

    memset(&f, 0, sizeof(f));
    if (p == NULL || *p == '\0') {
        *filter = f;
        return STRATA_OK;
    }
    if (*p == '^') {
        f.exclude = true;
        p++;
    }
    if (*p == '=') {
        f.exact = true;
        p++;
    }
    while (*p != '\0') {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (f.count == STU_NAME_FILTER_MAX) {
            STU_WARN("filter '%s': more than %d entries", spec, STU_NAME_FILTER_MAX);
            return STRATA_ERR_INVALID;
        }
        if (parse_entry(p, len, f.entries[f.count].name, &f.entries[f.count].port) != STRATA_OK) {
            STU_WARN("filter '%s': bad entry '%.*s' (empty, longer than %d, or bad :port)", spec,
                     (int)len, p, STU_NAME_FILTER_NAMELEN - 1);
            return STRATA_ERR_INVALID;
        }
        f.count++;
        p += len;
        if (*p == ',')
            p++;
    }
    *filter = f;
    return STRATA_OK;
}

bool stu_name_filter_match(const stu_name_filter_t *filter, const char *name, int port)
{
    bool hit = false;

    if (filter->count == 0)
        return true;
    for (int i = 0; i < filter->count && !hit; i++) {
        const char *e = filter->entries[i].name;
        bool name_ok = filter->exact ? strcmp(name, e) == 0 : strncmp(name, e, strlen(e)) == 0;
        bool port_ok = filter->entries[i].port < 0 || port < 0 || filter->entries[i].port == port;
        hit = name_ok && port_ok;
    }
    return filter->exclude ? !hit : hit;
}
