/*
 * A shared library a transport loads at run time, and the symbols it takes
 * from it (ib: libibverbs, ucx: libucp). The transport keeps a table of
 * function pointers; each entry of its symbol list names a symbol, an
 * optional version (dlvsym) and where in the table its address goes.
 *
 * stt_dynlib_open opens the file with RTLD_NOW | RTLD_LOCAL (nothing leaks
 * into the global namespace, where another copy of the library could clash
 * with it) and resolves the list; the handle is never closed (a transport's
 * threads and its library's own outlive any point where closing would be
 * safe, and a library such as UCX does not support being unloaded). Callers
 * serialise it (a pthread_once each). No logging here: the caller words the
 * message with its transport's name.
 */
#ifndef STT_BASE_DYNLIB_H
#define STT_BASE_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/status.h"

typedef struct stt_dynsym {
    const char *name;
    const char *version;    /* "IBVERBS_1.1"; NULL: the default version (dlsym) */
    size_t offset;          /* of the function pointer in the caller's table */
    bool optional;          /* missing leaves NULL instead of failing the load */
} stt_dynsym_t;

/* One entry: the table member's name, the symbol, its version, whether optional. */
#define STT_DYNSYM(type, member, sym, ver, opt) {sym, ver, offsetof(type, member), opt}

/* Room for a reason: dlerror's text with a path, or a symbol and version. */
#define STT_DYNLIB_WHY_BYTES 512

/* One library: what to load (set by its loader), and the answer (set by the load). */
typedef struct stt_dynlib {
    const char *who;              /* the transport, "ib", prefixing the message */
    const char *file;             /* "libibverbs.so.1" */
    const stt_dynsym_t *syms;
    int nsyms;
    void *table;                  /* only function pointers */
    size_t table_bytes;
    strata_status_t status;
    char why[STT_DYNLIB_WHY_BYTES];
} stt_dynlib_t;

/*
 * Opens d->file and fills d->table from d->syms: d->status OK, or STRATA_ERR_UNSUPPORTED
 * with d->why set (dlerror's text, or the first required symbol missing), the table left
 * all NULL, after the INFO line "<who>: <file> not loadable: <why>; the <who> transport is
 * unavailable". Called once, from the loader's pthread_once.
 */
void stt_dynlib_load(stt_dynlib_t *d);

/* The answer of the load: its status, and *why_p (may be NULL) NULL or the reason. */
strata_status_t stt_dynlib_result(const stt_dynlib_t *d, const char **why_p);

#endif /* STT_BASE_DYNLIB_H */
