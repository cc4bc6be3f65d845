/*
 * Shared memory for the ranks of one node, with no name anywhere: the
 * creator makes an anonymous file (memfd_create) and maps it; the others
 * open it through the creator's descriptor table (/proc/<pid>/fd/<n>, which
 * the kernel allows to processes of the same user only) and map it too; the
 * creator then closes its descriptor. Nothing ever appears in /dev/shm, so
 * ranks killed at any moment leave nothing behind: the memory goes with the
 * last mapping.
 *
 * Ranks that share a segment must run as one user in one PID namespace, and
 * the creator must be dumpable (the default; prctl(PR_SET_DUMPABLE, 0) or a
 * set-uid program closes /proc/<pid>/fd to its own user too).
 */
#ifndef STU_SHM_H
#define STU_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define STU_SHM_TAGLEN 32

typedef struct stu_shm {
    void *base;
    size_t size;
    int fd; /* the creator's descriptor until released; else -1 */
} stu_shm_t;

/* An empty (unmapped) segment: stu_shm_detach on it is a no-op. */
#define STU_SHM_NONE ((stu_shm_t){.base = NULL, .size = 0, .fd = -1})

/*
 * Creates and maps a zero-filled segment of size bytes, tagged `tag` (shown
 * as /memfd:<tag> in /proc/<pid>/fd, and checked by stu_shm_attach). Its
 * size is sealed. shm_p->fd is the number to pass to the other processes.
 */
strata_status_t stu_shm_create(const char *tag, size_t size, stu_shm_t *shm_p);

/*
 * Maps the segment process pid created, descriptor fd, after checking it is a
 * memfd tagged `tag` of exactly size bytes. STRATA_ERR_IO (logged with the
 * cause) when it cannot be opened: pid gone, another user, another PID
 * namespace.
 */
strata_status_t stu_shm_attach(int pid, int fd, const char *tag, size_t size, stu_shm_t *shm_p);

/* The creator closes its descriptor once everyone attached (the mapping stays). */
void stu_shm_release(stu_shm_t *shm);

/* Unmaps, and releases the descriptor if still held. */
void stu_shm_detach(stu_shm_t *shm);

#endif /* STU_SHM_H */
