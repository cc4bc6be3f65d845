/* STRATA_NET_FUSE's syntax (fuse.h). */
#include "util/fuse.h"

#include <stdio.h>
#include <string.h>

static strata_status_t fuse_fail(char *why, size_t len, const char *what)
{
    snprintf(why, len, "%s", what);
    return STRATA_ERR_INVALID;
}

strata_status_t stu_fuse_parse(const char *text, stu_fuse_t *fuse, char *why, size_t len)
{
    stu_fuse_t f;

    memset(&f, 0, sizeof(f));
    if (text == NULL || text[0] == '\0' || strcmp(text, "auto") == 0) {
        f.mode = STU_FUSE_AUTO;
    } else if (strcmp(text, "off") == 0) {
        f.mode = STU_FUSE_OFF;
    } else if (strcmp(text, "all") == 0) {
        f.mode = STU_FUSE_ALL;
    } else {
        f.mode = STU_FUSE_GROUPS;
        const char *p = text;
        for (;;) {
            if (f.ngroups == STU_FUSE_MAX_GROUPS)
                return fuse_fail(why, len, "at most 8 ';'-separated groups");
            int g = f.ngroups++;
            for (;;) {
                size_t n = strcspn(p, ",;");
                if (n == 0)
                    return fuse_fail(why, len, "a group with an empty device name");
                if (n >= STU_FUSE_NAMELEN)
                    return fuse_fail(why, len, "device names shorter than 64 characters");
                if (f.nnames[g] == STU_FUSE_MAX_MEMBERS)
                    return fuse_fail(why, len, "groups of at most 8 devices");
                char *name = f.names[g][f.nnames[g]];
                memcpy(name, p, n);
                name[n] = '\0';
                for (int i = 0; i < f.nnames[g]; i++)
                    if (strcmp(f.names[g][i], name) == 0)
                        return fuse_fail(why, len, "a device named twice in one group");
                for (int h = 0; h < g; h++)
                    for (int i = 0; i < f.nnames[h]; i++)
                        if (strcmp(f.names[h][i], name) == 0)
                            return fuse_fail(why, len, "a device in two groups");
                f.nnames[g]++;
                p += n;
                if (*p != ',')
                    break;
                p++;
            }
            if (f.nnames[g] < 2)
                return fuse_fail(why, len, "groups of at least 2 devices");
            if (*p == '\0')
                break;
            p++;             /* ';' */
        }
    }
    *fuse = f;
    return STRATA_OK;
}

int stu_fuse_group_of(const stu_fuse_t *fuse, const char *name)
{
    for (int g = 0; g < fuse->ngroups; g++)
        for (int i = 0; i < fuse->nnames[g]; i++)
            if (strcmp(fuse->names[g][i], name) == 0)
                return g;
    return -1;
}
