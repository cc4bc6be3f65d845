/*
 * POSIX shared-memory segments for ranks of one node. The creator makes the
 * segment with a unique name, the others attach by name, and the creator
 * unlinks the name as soon as everyone attached (the callers' barrier), so a
 * crash later leaves nothing behind in /dev/shm. The mapping lives until
 * stu_shm_detach.
 */
#ifndef STU_SHM_H
#define STU_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define STU_SHM_NAMELEN 64

typedef struct stu_shm {
    void *base;
    size_t size;
    int owner;                    /* 1: this process created it (and unlinks it) */
    char name[STU_SHM_NAMELEN];
} stu_shm_t;

/* Creates and maps a zero-filled segment; fails if the name exists. */
strata_status_t stu_shm_create(const char *name, size_t size, stu_shm_t *shm_p);

/* Maps an existing segment of exactly this size, retrying until it appears or the deadline. */
strata_status_t stu_shm_attach(const char *name, size_t size, uint64_t deadline_ns,
                               stu_shm_t *shm_p);

/* Removes the name (owner only; harmless twice). The mapping stays valid. */
void stu_shm_unlink(stu_shm_t *shm);

/* Unmaps, and unlinks the name too if this process owns it and has not yet. */
void stu_shm_detach(stu_shm_t *shm);

#endif /* STU_SHM_H */
