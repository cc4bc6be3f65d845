/* Anonymous shared-memory segments passed through /proc/<pid>/fd (see util/shm.h). */
#define _GNU_SOURCE
#include "util/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

#define SHM_LINK_PREFIX "/memfd:" /* how /proc/<pid>/fd/<n> names a memfd (memfd_create(2)) */

static strata_status_t shm_map(int fd, size_t size, const char *what, stu_shm_t *shm_p)
{
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        STU_WARN("shm %s: mmap of %zu bytes: %s", what, size, strerror(errno));
        return STRATA_ERR_NO_MEMORY;
    }
    shm_p->base = base;
    shm_p->size = size;
    return STRATA_OK;
}

strata_status_t stu_shm_create(const char *tag, size_t size, stu_shm_t *shm_p)
{
    strata_status_t status;
    stu_shm_t shm = STU_SHM_NONE;

    if (strlen(tag) >= STU_SHM_TAGLEN || size == 0)
        return STRATA_ERR_INVALID;
    int fd = memfd_create(tag, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        STU_WARN("shm %s: memfd_create: %s", tag, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        STU_WARN("shm %s: size %zu: %s", tag, size, strerror(errno));
        status = STRATA_ERR_NO_MEMORY;
        goto err_close;
    }
    /* nobody may shrink it under the others' mappings (SIGBUS) or grow it */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        STU_INFO(STU_LOG_SHM, "shm %s: sealing: %s (ignored)", tag, strerror(errno));
    if ((status = shm_map(fd, size, tag, &shm)) != STRATA_OK)
        goto err_close;
    shm.fd = fd;
    *shm_p = shm;
    return STRATA_OK;
err_close:
    close(fd);
    return status;
}

strata_status_t stu_shm_attach(int pid, int fd, const char *tag, size_t size, stu_shm_t *shm_p)
{
    char path[64], link[128], want[STU_SHM_TAGLEN + sizeof(SHM_LINK_PREFIX)];
    struct stat st;
    stu_shm_t shm = STU_SHM_NONE;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    snprintf(want, sizeof(want), SHM_LINK_PREFIX "%s", tag);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n < 0) {
        STU_WARN("shm: cannot see the segment at %s: %s (ranks sharing memory must run as one "
                 "user in one PID namespace)",
                 path, strerror(errno));
        return STRATA_ERR_IO;
    }
    link[n] = '\0';
    size_t wlen = strlen(want);
    if (strncmp(link, want, wlen) != 0 || (link[wlen] != '\0' && link[wlen] != ' ')) {
        STU_WARN("shm: %s is '%s', not the segment %s (pid reused?)", path, link, want);
        return STRATA_ERR_IO;
    }
    int sfd = open(path, O_RDWR | O_CLOEXEC);
    if (sfd < 0) {
        STU_WARN("shm: open %s: %s (ranks sharing memory must run as one user in one PID "
                 "namespace)",
                 path, strerror(errno));
        return STRATA_ERR_IO;
    }
    strata_status_t status = STRATA_ERR_IO;
    if (fstat(sfd, &st) != 0)
        STU_WARN("shm: fstat %s: %s", path, strerror(errno));
    else if ((size_t)st.st_size != size)
        STU_WARN("shm: %s has %lld bytes, expected %zu", path, (long long)st.st_size, size);
    else
        status = shm_map(sfd, size, path, &shm);
    close(sfd);
    if (status == STRATA_OK)
        *shm_p = shm;
    return status;
}

void stu_shm_release(stu_shm_t *shm)
{
    if (shm->fd >= 0)
        close(shm->fd);
    shm->fd = -1;
}

void stu_shm_detach(stu_shm_t *shm)
{
    stu_shm_release(shm);
    if (shm->base != NULL)
        munmap(shm->base, shm->size);
    shm->base = NULL;
}
