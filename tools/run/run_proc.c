/* strata-run's ranks: job secret, spawn, stderr relay (see run_proc.h). */
#define _GNU_SOURCE 1   /* pipe2 */
#include "tools/run/run_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* A run's job secret: 256 random bits. */
#define STB_JOB_SECRET_BYTES 32

strata_status_t stb_prog_resolve(const char *name, char *path, size_t len)
{
    char self[PATH_MAX];

    if (strchr(name, '/') != NULL) {
        snprintf(path, len, "%s", name);
        return access(path, X_OK) == 0 ? STRATA_OK : STRATA_ERR_NOT_FOUND;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            if ((size_t)snprintf(path, len, "%s/%s", self, name) < len &&
                access(path, X_OK) == 0)
                return STRATA_OK;
        }
    }
    const char *env = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof(dirs), "%s", env != NULL ? env : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d != NULL;
         d = strtok_r(NULL, ":", &save))
        if ((size_t)snprintf(path, len, "%s/%s", *d ? d : ".", name) < len &&
            access(path, X_OK) == 0)
            return STRATA_OK;
    return STRATA_ERR_NOT_FOUND;
}

strata_status_t stb_job_secret_make(int *fd_p)
{
    unsigned char raw[STB_JOB_SECRET_BYTES];
    char text[2 * STB_JOB_SECRET_BYTES];

    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        fprintf(stderr, "strata-run: getrandom: %s\n", strerror(errno));
        return STRATA_ERR_IO;
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        static const char digits[] = "0123456789abcdef";
        text[2 * i] = digits[raw[i] >> 4];
        text[2 * i + 1] = digits[raw[i] & 15];
    }
    int fd = memfd_create("strata-job-secret", MFD_CLOEXEC);
    strata_status_t status = STRATA_ERR_IO;
    if (fd < 0)
        fprintf(stderr, "strata-run: memfd_create: %s\n", strerror(errno));
    else if (write(fd, text, sizeof(text)) != (ssize_t)sizeof(text))
        fprintf(stderr, "strata-run: writing the job secret: %s\n", strerror(errno));
    else
        status = STRATA_OK;
    memset(raw, 0, sizeof(raw));
    memset(text, 0, sizeof(text));
    if (status != STRATA_OK) {
        if (fd >= 0)
            close(fd);
        return status;
    }
    *fd_p = fd;
    return STRATA_OK;
}

/* In the child, before exec: the environment of this rank. */
static int rank_env(const stb_launch_t *l, int rank, int node)
{
    char v[64];
    /* the job secret survives exec in every rank */
    int sflags = fcntl(l->secret_fd, F_GETFD);
    if (sflags < 0 || fcntl(l->secret_fd, F_SETFD, sflags & ~FD_CLOEXEC) != 0)
        return -1;
    snprintf(v, sizeof(v), "%d", l->secret_fd);
    if (setenv("STRATA_JOB_SECRET_FD", v, 1) != 0)
        return -1;
    snprintf(v, sizeof(v), "%d", rank);
    if (setenv("STRATA_RANK", v, 1) != 0)
        return -1;
    snprintf(v, sizeof(v), "%d", l->opts->nranks);
    if (setenv("STRATA_NRANKS", v, 1) != 0 || setenv("STRATA_ROOT_ADDR", l->root_addr, 1) != 0)
        return -1;
    snprintf(v, sizeof(v), "node%d", node);
    if (setenv("STRATA_NODE_ID", v, 1) != 0)
        return -1;
    if (rank != 0)   /* the listening socket survives exec for rank 0 only (stb_spawn_t.keep) */
        return unsetenv("STRATA_ROOT_FD");
    snprintf(v, sizeof(v), "%d", l->root_fd);
    return setenv("STRATA_ROOT_FD", v, 1);
}

/*
 * Pins rank i to core i mod ncpu, as mpirun binds to cores: unpinned ranks can end up
 * stacked on one core while the other idles (seen on the 2-core CI machines). Not when ranks
 * outnumber cores, unless asked: then the scheduler balances better than a fixed split.
 */
static void rank_bind(const stb_run_opts_t *o, int rank)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int bind = o->bind == STB_RUN_BIND_CORE ||
               (o->bind == STB_RUN_BIND_AUTO && ncpu > 0 && o->nranks <= ncpu);
    if (!bind || ncpu <= 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(rank % ncpu), &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        fprintf(stderr, "strata-run: binding rank %d to core %ld: %s (running unbound)\n", rank,
                rank % ncpu, strerror(errno));
}

typedef struct rank_place {
    const stb_launch_t *l;
    int rank, node;
} rank_place_t;

/* The rank's setup in the child (stb_spawn_t.setup): namespaces, core, environment. */
static int rank_setup(void *arg)
{
    const rank_place_t *p = arg;
    if (p->l->ns != NULL && stb_netns_enter(p->l->ns, p->node, p->l->cwd) != STRATA_OK)
        return -1;
    rank_bind(p->l->opts, p->rank);
    if (rank_env(p->l, p->rank, p->node) != 0) {
        fprintf(stderr, "strata-run: setting the environment: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

strata_status_t stb_rank_spawn(const stb_launch_t *l, int rank, stb_rank_t *r)
{
    int p[2];

    memset(r, 0, sizeof(*r));
    r->err_fd = -1;
    r->node = stb_run_node_of(rank, l->opts->nranks, l->opts->nodes);
    if (pipe2(p, O_CLOEXEC) != 0) {
        fprintf(stderr, "strata-run: pipe: %s\n", strerror(errno));
        return STRATA_ERR_IO;
    }
    rank_place_t place = {.l = l, .rank = rank, .node = r->node};
    stb_spawn_t s = {.argv = l->argv, .path = l->prog, .setup = rank_setup, .setup_arg = &place,
                     .stderr_fd = p[1], .keep = {l->root_fd}, .nkeep = rank == 0};
    pid_t pid;
    strata_status_t status = stb_proc_spawn(&s, &pid);
    close(p[1]);
    if (status != STRATA_OK) {
        close(p[0]);
        return status;
    }
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    r->pid = pid;
    r->err_fd = p[0];
    return STRATA_OK;
}

static void rank_emit(stb_rank_t *r, int rank)
{
    fprintf(stderr, "[rank %d] %.*s\n", rank, (int)r->len, r->line);
    r->len = 0;
}

void stb_rank_relay(stb_rank_t *r, int rank)
{
    char buf[4096];

    while (r->err_fd >= 0) {
        ssize_t n = read(r->err_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {                  /* EOF, or an error that ends the stream alike */
            if (r->len > 0)
                rank_emit(r, rank);
            close(r->err_fd);
            r->err_fd = -1;
            break;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                rank_emit(r, rank);
                continue;
            }
            r->line[r->len++] = buf[i];
            if (r->len == sizeof(r->line))
                rank_emit(r, rank);
        }
    }
    fflush(stderr);
}
