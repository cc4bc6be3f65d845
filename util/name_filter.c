/* Parser and matcher for NCCL_SOCKET_IFNAME / NCCL_IB_HCA style filters. */
#include "util/name_filter.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* One decimal field of an entry (port, rail or plane): 0 .. max. */
static strata_status_t parse_field(const char *s, size_t len, int max, int *value_p)
{
    char buf[16];
    char *end;

    if (len == 0 || len >= sizeof(buf))
        return STRATA_ERR_INVALID;
    memcpy(buf, s, len);
    buf[len] = '\0';
    long v = strtol(buf, &end, 10);
    if (*end != '\0' || v < 0 || v > max)
        return STRATA_ERR_INVALID;
    *value_p = (int)v;
    return STRATA_OK;
}

/* Ports are 8 bits in verbs; rails and planes are int16_t in NCCL's v12 properties. */
#define FILTER_PORT_MAX 255
#define FILTER_ID_MAX 32767

/* name[:port[:rail[:plane]]] */
static strata_status_t parse_entry(const char *s, size_t len, char *name, int *fields)
{
    static const int max[3] = {FILTER_PORT_MAX, FILTER_ID_MAX, FILTER_ID_MAX};
    const char *colon = memchr(s, ':', len);
    size_t nlen = colon ? (size_t)(colon - s) : len;

    if (nlen == 0 || nlen >= STU_NAME_FILTER_NAMELEN)
        return STRATA_ERR_INVALID;
    memcpy(name, s, nlen);
    name[nlen] = '\0';
    for (int i = 0; i < 3; i++)
        fields[i] = -1;
    for (int i = 0; colon != NULL; i++) {
        const char *f = colon + 1;
        size_t rest = len - (size_t)(f - s);
        colon = memchr(f, ':', rest);
        size_t flen = colon ? (size_t)(colon - f) : rest;
        if (i == 3 || parse_field(f, flen, max[i], &fields[i]) != STRATA_OK)
            return STRATA_ERR_INVALID;
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
        int fields[3];
        if (parse_entry(p, len, f.entries[f.count].name, fields) != STRATA_OK) {
            STU_WARN("filter '%s': bad entry '%.*s' (empty, longer than %d, or a bad"
                     " :port[:rail[:plane]])", spec, (int)len, p, STU_NAME_FILTER_NAMELEN - 1);
            return STRATA_ERR_INVALID;
        }
        f.entries[f.count].port = fields[0];
        f.entries[f.count].rail = fields[1];
        f.entries[f.count].plane = fields[2];
        f.count++;
        p += len;
        if (*p == ',')
            p++;
    }
    *filter = f;
    return STRATA_OK;
}

static bool filter_entry_hit(const stu_name_filter_t *filter, int i, const char *name, int port)
{
    const char *e = filter->entries[i].name;
    bool name_ok = filter->exact ? strcmp(name, e) == 0 : strncmp(name, e, strlen(e)) == 0;
    bool port_ok = filter->entries[i].port < 0 || port < 0 || filter->entries[i].port == port;
    return name_ok && port_ok;
}

bool stu_name_filter_match(const stu_name_filter_t *filter, const char *name, int port)
{
    bool hit = false;

    if (filter->count == 0)
        return true;
    for (int i = 0; i < filter->count && !hit; i++)
        hit = filter_entry_hit(filter, i, name, port);
    return filter->exclude ? !hit : hit;
}

int stu_name_filter_find(const stu_name_filter_t *filter, const char *name, int port)
{
    if (filter->exclude)
        return -1;
    for (int i = 0; i < filter->count; i++)
        if (filter_entry_hit(filter, i, name, port))
            return i;
    return -1;
}
