/* POSIX shared-memory segments. */
#include "util/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/time.h"

#define SHM_ATTACH_RETRY_NS 2000000ull   /* 2 ms between looks for a segment not yet created */

static strata_status_t shm_map(int fd, size_t size, const char *name, stu_shm_t *shm_p, int owner)
{
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        STU_WARN("shm %s: mmap of %zu bytes: %s", name, size, strerror(errno));
        return STRATA_ERR_NO_MEMORY;
    }
    shm_p->base = base;
    shm_p->size = size;
    shm_p->owner = owner;
    snprintf(shm_p->name, sizeof(shm_p->name), "%s", name);
    return STRATA_OK;
}

strata_status_t stu_shm_create(const char *name, size_t size, stu_shm_t *shm_p)
{
    strata_status_t status;

    if (strlen(name) >= STU_SHM_NAMELEN || name[0] != '/')
        return STRATA_ERR_INVALID;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        STU_WARN("shm %s: create: %s", name, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        STU_WARN("shm %s: size %zu: %s (is /dev/shm large enough?)", name, size, strerror(errno));
        status = STRATA_ERR_NO_MEMORY;
        goto err_unlink;
    }
    status = shm_map(fd, size, name, shm_p, 1);
    if (status != STRATA_OK)
        goto err_unlink;
    close(fd);
    return STRATA_OK;
err_unlink:
    close(fd);
    shm_unlink(name);
    return status;
}

strata_status_t stu_shm_attach(const char *name, size_t size, uint64_t deadline_ns,
                               stu_shm_t *shm_p)
{
    for (;;) {
        int fd = shm_open(name, O_RDWR, 0);
        if (fd >= 0) {
            struct stat st;
            if (fstat(fd, &st) == 0 && (size_t)st.st_size == size) {
                strata_status_t status = shm_map(fd, size, name, shm_p, 0);
                close(fd);
                return status;
            }
            close(fd);   /* created but not sized yet */
        } else if (errno != ENOENT) {
            STU_WARN("shm %s: attach: %s", name, strerror(errno));
            return STRATA_ERR_IO;
        }
        if (stu_time_ns() >= deadline_ns) {
            STU_WARN("shm %s: not created (with %zu bytes) before the deadline", name, size);
            return STRATA_ERR_TIMEOUT;
        }
        struct timespec ts = {0, (long)SHM_ATTACH_RETRY_NS};
        nanosleep(&ts, NULL);
    }
}

void stu_shm_unlink(stu_shm_t *shm)
{
    if (shm->owner && shm->name[0] != '\0') {
        shm_unlink(shm->name);
        shm->name[0] = '\0';
    }
}

void stu_shm_detach(stu_shm_t *shm)
{
    stu_shm_unlink(shm);
    if (shm->base != NULL)
        munmap(shm->base, shm->size);
    shm->base = NULL;
}
