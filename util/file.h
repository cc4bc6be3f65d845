/*
 * Reading a small configuration file whole, with a bound: only a regular file
 * is read (a FIFO, a device such as /dev/zero, a directory or a socket is an
 * error, opened without blocking), and a file longer than the caller's bound
 * is an error rather than an allocation of its size. Used for fabric profiles
 * (STRATA_PROFILE) and job secret files (STRATA_JOB_SECRET_FILE).
 *
 * Thread-safe; blocking file I/O on the caller's thread.
 */
#ifndef STU_FILE_H
#define STU_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "strata/status.h"

/* stu_file_read's checks beyond "regular file, at most max_bytes". */
#define STU_FILE_PRIVATE 0x1 /* owned by this user, no access for group or others */

/*
 * Reads the file at path into a new NUL-terminated buffer (*buf_p, free() it)
 * of *len_p bytes (the NUL not counted; the file may itself hold NUL bytes).
 * `what` names the file in messages ("STRATA_PROFILE"). Errors, each logged
 * once with what, the path and the cause:
 *   STRATA_ERR_IO       cannot open or read (errno text), or a short read
 *   STRATA_ERR_INVALID  not a regular file, longer than max_bytes, or (with
 *                       STU_FILE_PRIVATE) not owned by this user / readable
 *                       by group or others
 *   STRATA_ERR_NO_MEMORY the buffer could not be allocated
 * Outputs are set only on success.
 */
strata_status_t stu_file_read(const char *path, size_t max_bytes, int flags, const char *what,
                              char **buf_p, size_t *len_p);

/* The same over an open descriptor (read from offset 0 with pread; fd stays open). */
strata_status_t stu_file_read_fd(int fd, size_t max_bytes, int flags, const char *what,
                                 char **buf_p, size_t *len_p);

#endif /* STU_FILE_H */
