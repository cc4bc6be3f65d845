/* Run-time loading of a transport's library (dynlib.h). */
#define _GNU_SOURCE 1 /* dlvsym */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "transport/base/dynlib.h"
#include "util/log.h"

static strata_status_t dynlib_open(const char *file, const stt_dynsym_t *syms, int nsyms,
                                   void *table, size_t table_bytes, char *why, size_t why_len)
{
    void *lib;

    memset(table, 0, table_bytes);
    lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *err = dlerror();
        snprintf(why, why_len, "%s", err != NULL ? err : "dlopen failed");
        return STRATA_ERR_UNSUPPORTED;
    }
    for (int i = 0; i < nsyms; i++) {
        const stt_dynsym_t *s = &syms[i];
        void *fn = s->version != NULL ? dlvsym(lib, s->name, s->version) : dlsym(lib, s->name);
        if (fn == NULL && !s->optional) {
            snprintf(why, why_len, "%s has no %s%s%s (a library older than the build's headers)",
                     file, s->name, s->version != NULL ? "@" : "",
                     s->version != NULL ? s->version : "");
            memset(table, 0, table_bytes);
            dlclose(lib);
            return STRATA_ERR_UNSUPPORTED;
        }
        memcpy((char *)table + s->offset, &fn, sizeof(fn));
    }
    return STRATA_OK;
}

void stt_dynlib_load(stt_dynlib_t *d)
{
    d->status = dynlib_open(d->file, d->syms, d->nsyms, d->table, d->table_bytes, d->why,
                            sizeof(d->why));
    if (d->status != STRATA_OK)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "%s: %s not loadable: %s; the %s transport is"
                 " unavailable", d->who, d->file, d->why, d->who);
}

strata_status_t stt_dynlib_result(const stt_dynlib_t *d, const char **why_p)
{
    if (why_p != NULL)
        *why_p = d->status == STRATA_OK ? NULL : d->why;
    return d->status;
}
