/* Bounded reads of small configuration files (see util/file.h). */
#define _GNU_SOURCE
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

static const char *file_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

static strata_status_t file_check(const struct stat *st, size_t max_bytes, int flags,
                                  const char *what, const char *name)
{
    if (!S_ISREG(st->st_mode)) {
        STU_WARN("%s: %s is %s; a regular file is required", what, name,
                 file_kind(st->st_mode));
        return STRATA_ERR_INVALID;
    }
    if ((uint64_t)st->st_size > (uint64_t)max_bytes) {
        STU_WARN("%s: %s has %lld bytes; at most %zu are read", what, name,
                 (long long)st->st_size, max_bytes);
        return STRATA_ERR_INVALID;
    }
    if ((flags & STU_FILE_PRIVATE) && (st->st_uid != geteuid() || (st->st_mode & 077) != 0)) {
        STU_WARN("%s: %s must be owned by uid %u and closed to group and others (chmod 600); "
                 "it is owned by uid %u with mode %03o",
                 what, name, (unsigned)geteuid(), (unsigned)st->st_uid,
                 (unsigned)(st->st_mode & 0777));
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

/* Reads at most max_bytes + 1 from offset 0: a file that grew past the bound is caught too. */
static strata_status_t file_slurp(int fd, size_t max_bytes, const char *what, const char *name,
                                  char **buf_p, size_t *len_p)
{
    char *buf = malloc(max_bytes + 2);
    size_t got = 0;

    if (buf == NULL) {
        STU_WARN("%s: %s: cannot allocate %zu bytes", what, name, max_bytes + 2);
        return STRATA_ERR_NO_MEMORY;
    }
    while (got <= max_bytes) {
        ssize_t n = pread(fd, buf + got, max_bytes + 1 - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            STU_WARN("%s: %s: read: %s", what, name, strerror(errno));
            free(buf);
            return STRATA_ERR_IO;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got > max_bytes) {
        STU_WARN("%s: %s is longer than %zu bytes", what, name, max_bytes);
        free(buf);
        return STRATA_ERR_INVALID;
    }
    buf[got] = '\0';
    *buf_p = buf;
    *len_p = got;
    return STRATA_OK;
}

strata_status_t stu_file_read_fd(int fd, size_t max_bytes, int flags, const char *what,
                                 char **buf_p, size_t *len_p)
{
    struct stat st;
    char name[32];

    snprintf(name, sizeof(name), "descriptor %d", fd);
    if (fstat(fd, &st) != 0) {
        STU_WARN("%s: %s: %s", what, name, strerror(errno));
        return STRATA_ERR_IO;
    }
    strata_status_t status = file_check(&st, max_bytes, flags, what, name);
    if (status != STRATA_OK)
        return status;
    return file_slurp(fd, max_bytes, what, name, buf_p, len_p);
}

strata_status_t stu_file_read(const char *path, size_t max_bytes, int flags, const char *what,
                              char **buf_p, size_t *len_p)
{
    struct stat st;

    /* O_NONBLOCK: opening a FIFO without a writer must not wait; fstat then rejects it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        STU_WARN("%s: cannot open %s: %s", what, path, strerror(errno));
        return STRATA_ERR_IO;
    }
    strata_status_t status = STRATA_ERR_IO;
    if (fstat(fd, &st) != 0)
        STU_WARN("%s: %s: %s", what, path, strerror(errno));
    else if ((status = file_check(&st, max_bytes, flags, what, path)) == STRATA_OK)
        status = file_slurp(fd, max_bytes, what, path, buf_p, len_p);
    close(fd);
    return status;
}
