/*
 * The job secret: what proves a process is a rank of this job, to rank 0's
 * rendezvous and to every rank it connects to (coll/boot_wire.h). Only the
 * key derived from it is kept, K = HMAC-SHA256(secret, "strata job key 1");
 * neither ever travels.
 *
 * Where the secret comes from, first found wins:
 *   1. strata_comm_config_t.job_secret (a program that launches its own ranks)
 *   2. STRATA_JOB_SECRET_FD: an inherited descriptor of a file (strata-run
 *      passes a new random secret per run this way)
 *   3. STRATA_JOB_SECRET_FILE: a regular file owned by the user, mode 600
 *   4. STRATA_JOB_SECRET: the value itself
 *   5. single-host runs only (the root address is loopback, or the launcher
 *      says every rank is on one node): the user's own secret file, made once
 *      with 32 random bytes: $XDG_RUNTIME_DIR/strata-job-secret, else
 *      ~/.strata/job-secret, else /tmp/strata-<uid>/job-secret (each checked:
 *      owned by the user, closed to group and others). Any process of the user
 *      can read it, and any such process can already read the ranks' memory;
 *      no other user can.
 *   6. otherwise STRATA_ERR_INVALID with what to set.
 * A secret is 16 to 4096 bytes; trailing white space of a file is dropped.
 *
 * Blocking file I/O; thread-safe.
 */
#ifndef STC_SECRET_H
#define STC_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "coll/boot_wire.h"
#include "strata/status.h"

#define STC_SECRET_MIN 16   /* bytes: 128 bits when random */
#define STC_SECRET_MAX 4096 /* bytes read from a file or descriptor at most */
#define STC_SECRET_SOURCE_LEN 160

typedef struct stc_job_key {
    uint8_t key[STC_BOOT_KEY_BYTES];
    char source[STC_SECRET_SOURCE_LEN]; /* where the secret came from, for messages */
} stc_job_key_t;

/*
 * Resolves the job key from the sources above. secret/len: the caller's own
 * (config), or NULL/0. single_host: 1 when every rank certainly runs on this
 * host. Outputs only on success; errors are logged with the variable to set.
 */
strata_status_t stc_job_key_load(const void *secret, size_t len, int single_host,
                                 stc_job_key_t *key_p);

/* K from secret bytes (exported for tests and the fuzz harnesses). */
void stc_job_key_derive(const void *secret, size_t len, uint8_t key[STC_BOOT_KEY_BYTES]);

#endif /* STC_SECRET_H */
