/* The job secret and the key derived from it (see coll/secret.h). */
#define _GNU_SOURCE
#include "coll/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/hmac.h"
#include "util/log.h"
#include "util/param.h"

#define SECRET_LABEL "strata job key 1"
#define SECRET_RANDOM_BYTES 32 /* a made secret: 256 random bits, written as hex */
#define SECRET_DIR_LEN 512
#define SECRET_PATH_LEN (SECRET_DIR_LEN + 32)

void stc_job_key_derive(const void *secret, size_t len, uint8_t key[STC_BOOT_KEY_BYTES])
{
    const void *parts[1] = {SECRET_LABEL};
    size_t lens[1] = {sizeof(SECRET_LABEL) - 1};
    stu_hmac_sha256(secret, len, 1, parts, lens, key);
}

/* Checks the length of a secret (trailing white space of a file dropped) and derives K. */
static strata_status_t secret_take(const char *bytes, size_t len, int trim, const char *source,
                                   stc_job_key_t *out)
{
    while (trim && len > 0 &&
           (bytes[len - 1] == '\n' || bytes[len - 1] == '\r' || bytes[len - 1] == ' ' ||
            bytes[len - 1] == '\t'))
        len--;
    if (len < STC_SECRET_MIN || len > STC_SECRET_MAX) {
        STU_WARN("job secret from %s has %zu bytes; it takes %d to %d (e.g. openssl rand -hex "
                 "32)",
                 source, len, STC_SECRET_MIN, STC_SECRET_MAX);
        return STRATA_ERR_INVALID;
    }
    stc_job_key_derive(bytes, len, out->key);
    snprintf(out->source, sizeof(out->source), "%s", source);
    return STRATA_OK;
}

static strata_status_t secret_from_buf(char *buf, size_t len, const char *source,
                                       stc_job_key_t *out)
{
    strata_status_t status = secret_take(buf, len, 1, source, out);
    stu_secure_zero(buf, len);
    free(buf);
    return status;
}

/* A directory only this user can change: owned by it, not a symlink, no write for others. */
static int secret_dir_ok(const char *dir, mode_t forbidden)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & forbidden) != 0) {
        STU_INFO(STU_LOG_INIT,
                 "job secret: %s is not a directory of uid %u closed to others; "
                 "not used",
                 dir, (unsigned)geteuid());
        return 0;
    }
    return 1;
}

/* The user's secret file for single-host runs: the first usable directory of three. */
static strata_status_t secret_user_path(char *path, size_t len)
{
    char dir[SECRET_DIR_LEN];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *home = getenv("HOME");

    if (xdg != NULL && xdg[0] == '/' && strlen(xdg) < sizeof(dir) - 32 &&
        secret_dir_ok(xdg, 077)) {
        snprintf(path, len, "%s/strata-job-secret", xdg);
        return STRATA_OK;
    }
    if (home != NULL && home[0] == '/' && strlen(home) < sizeof(dir) - 32) {
        snprintf(dir, sizeof(dir), "%s/.strata", home);
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            STU_INFO(STU_LOG_INIT, "job secret: mkdir %s: %s", dir, strerror(errno));
        if (secret_dir_ok(dir, 022)) {
            snprintf(path, len, "%s/job-secret", dir);
            return STRATA_OK;
        }
    }
    snprintf(dir, sizeof(dir), "/tmp/strata-%u", (unsigned)geteuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        STU_INFO(STU_LOG_INIT, "job secret: mkdir %s: %s", dir, strerror(errno));
    if (secret_dir_ok(dir, 077)) {
        snprintf(path, len, "%s/job-secret", dir);
        return STRATA_OK;
    }
    STU_WARN("job secret: no private directory for the user's secret file ($XDG_RUNTIME_DIR, "
             "~/.strata, %s); set STRATA_JOB_SECRET_FILE",
             dir);
    return STRATA_ERR_IO;
}

/* Makes path with a new random secret unless it exists; ranks racing here agree (link). */
static strata_status_t secret_user_make(const char *path)
{
    uint8_t raw[SECRET_RANDOM_BYTES];
    char text[2 * SECRET_RANDOM_BYTES + 2], tmp[SECRET_PATH_LEN + 32];
    struct stat st;

    if (lstat(path, &st) == 0)
        return STRATA_OK;
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        STU_WARN("job secret: getrandom: %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(text + 2 * i, 3, "%02x", raw[i]);
    text[2 * sizeof(raw)] = '\n';
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    strata_status_t status = STRATA_ERR_IO;
    if (fd < 0) {
        STU_WARN("job secret: create %s: %s", tmp, strerror(errno));
    } else {
        if (write(fd, text, 2 * sizeof(raw) + 1) == (ssize_t)(2 * sizeof(raw) + 1) &&
            (link(tmp, path) == 0 || errno == EEXIST))
            status = STRATA_OK;
        else
            STU_WARN("job secret: write %s: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
    }
    stu_secure_zero(raw, sizeof(raw));
    stu_secure_zero(text, sizeof(text));
    return status;
}

static strata_status_t secret_user(stc_job_key_t *out)
{
    char path[SECRET_PATH_LEN], source[STC_SECRET_SOURCE_LEN];
    char *buf;
    size_t len;
    strata_status_t status = secret_user_path(path, sizeof(path));

    if (status == STRATA_OK)
        status = secret_user_make(path);
    if (status == STRATA_OK)
        status =
            stu_file_read(path, STC_SECRET_MAX, STU_FILE_PRIVATE, "job secret", &buf, &len);
    if (status != STRATA_OK)
        return status;
    snprintf(source, sizeof(source), "the user's file %.120s (a single-host run)", path);
    return secret_from_buf(buf, len, source, out);
}

strata_status_t stc_job_key_load(const void *secret, size_t len, int single_host,
                                 stc_job_key_t *key_p)
{
    stc_job_key_t k;
    strata_status_t status;
    char *buf;
    size_t n;

    memset(&k, 0, sizeof(k));
    int64_t fd = stu_param_int(STU_PARAM_JOB_SECRET_FD);
    const char *file = stu_param_str(STU_PARAM_JOB_SECRET_FILE);
    const char *env = stu_param_str(STU_PARAM_JOB_SECRET);

    if (secret != NULL) {
        status = secret_take(secret, len, 0, "the communicator's configuration", &k);
    } else if (fd >= 0) {
        status = stu_file_read_fd((int)fd, STC_SECRET_MAX, 0, "STRATA_JOB_SECRET_FD", &buf, &n);
        if (status == STRATA_OK)
            status = secret_from_buf(buf, n, "STRATA_JOB_SECRET_FD", &k);
    } else if (*file != '\0') {
        status = stu_file_read(file, STC_SECRET_MAX, STU_FILE_PRIVATE, "STRATA_JOB_SECRET_FILE",
                               &buf, &n);
        if (status == STRATA_OK)
            status = secret_from_buf(buf, n, "STRATA_JOB_SECRET_FILE", &k);
    } else if (*env != '\0') {
        status = secret_take(env, strlen(env), 0, "STRATA_JOB_SECRET", &k);
    } else if (single_host) {
        status = secret_user(&k);
    } else {
        STU_WARN("no job secret for a run across hosts: every rank needs the same secret, in a "
                 "file named by STRATA_JOB_SECRET_FILE (mode 600; e.g. `openssl rand -hex 32 > "
                 "~/.strata-job && chmod 600 ~/.strata-job` on a shared home) or in "
                 "STRATA_JOB_SECRET; strata-run makes one itself (docs/reliability.md)");
        status = STRATA_ERR_INVALID;
    }
    if (status == STRATA_OK) {
        STU_INFO(STU_LOG_INIT, "job secret from %s", k.source);
        *key_p = k;
    }
    stu_secure_zero(&k, sizeof(k));
    return status;
}
