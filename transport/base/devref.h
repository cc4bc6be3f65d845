/*
 * The reference-counted device table of a transport: the first init
 * discovers the devices (open), the last fini releases them (close), and
 * devices(), get_props() and device lookups answer only in between. Every
 * transport with devices (tcp, ucx, ib) keeps one, statically initialised
 * with STT_DEVREF_INIT.
 *
 * Thread safety: init, fini and lookups may run in any thread at once (the
 * contract). One mutex guards the count and whatever the transport keeps
 * beside its table; open and close run under it, and the transport may take
 * it (lock) to read that state elsewhere.
 */
#ifndef STT_BASE_DEVREF_H
#define STT_BASE_DEVREF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "strata/status.h"

typedef struct stt_devref {
    const char *who;                        /* transport name, prefixes messages */
    strata_status_t (*open)(int *count_p);  /* first init: discover, set the device count */
    void (*close)(void);                    /* last fini: release what open made */
    pthread_mutex_t lock;
    int refs;                               /* init calls not matched by fini yet */
    int count;                              /* devices, while refs > 0 */
} stt_devref_t;

#define STT_DEVREF_INIT(who_, open_, close_) \
    {.who = (who_), .open = (open_), .close = (close_), .lock = PTHREAD_MUTEX_INITIALIZER}

/* The transport's init: reads the log level, opens on the first reference. */
strata_status_t stt_devref_init(stt_devref_t *devs);
/* The transport's fini: closes with the last reference; a fini without init is ignored. */
void stt_devref_fini(stt_devref_t *devs);

/* The transport's devices(): STRATA_ERR_INVALID (warned) for a NULL output or before init. */
strata_status_t stt_devref_count(stt_devref_t *devs, int *ndev_p);

/*
 * Checks dev under the lock and copies entry dev of table (elem bytes each)
 * into out; table and out may be NULL to check only. STRATA_ERR_NOT_FOUND,
 * with a warning, for an index out of range or before init.
 */
strata_status_t stt_devref_lookup(stt_devref_t *devs, int dev, const void *table, size_t elem,
                                  void *out);

/*
 * Adds a device after discovery (a virtual one), under the lock: add(count, room,
 * arg, &index) either names an existing device (index < count), or, when room is
 * true (count < max), writes the entry at index count and sets index to count,
 * which then joins the table; without room it returns STRATA_ERR_NO_RESOURCE. Any
 * other status leaves the table as it was. STRATA_ERR_INVALID (warned) before init.
 */
strata_status_t stt_devref_add(stt_devref_t *devs, int max,
                               strata_status_t (*add)(int count, bool room, void *arg,
                                                      int *index_p),
                               void *arg, int *index_p);

/* True while an init reference is held (a snapshot). */
bool stt_devref_held(stt_devref_t *devs);

#endif /* STT_BASE_DEVREF_H */
