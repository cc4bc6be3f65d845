/* strata-doctor --write-profile: this host's fabric, measured, as a profile file
 * (tools/doctor/doctor_profile.h). */
#define _GNU_SOURCE 1
#include "tools/doctor/doctor_profile.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "algos/profile.h"
#include "algos/reduce.h"
#include "coll/introspect.h"
#include "strata/strata.h"
#include "util/param.h"
#include "util/time.h"

/* γ: an fp32 sum of two sources into a third, 64 MiB each, twice the CI hosts' 32 MiB L3
 * (docs/machines.md: the case the library's default describes); the fastest of 5 timed
 * calls after one warm-up, as calibration keeps each size's fastest repetition (the least
 * disturbed on a shared host). */
#define GAMMA_BYTES ((size_t)64 << 20)
#define GAMMA_REPS 5

static double gamma_measure(void)
{
    size_t count = GAMMA_BYTES / sizeof(float);
    float *a = malloc(GAMMA_BYTES), *b = malloc(GAMMA_BYTES), *d = malloc(GAMMA_BYTES);
    double out = -1.0;

    if (a != NULL && b != NULL && d != NULL) {
        for (size_t i = 0; i < count; i++) {   /* ordinary values, every page touched */
            a[i] = (float)(i % 1000) * 0.25f;
            b[i] = (float)(i % 777) * 0.5f;
        }
        sta_reduce(d, a, b, count, STRATA_FP32, STRATA_SUM);
        for (int r = 0; r < GAMMA_REPS; r++) {
            uint64_t t0 = stu_time_ns();
            sta_reduce(d, a, b, count, STRATA_FP32, STRATA_SUM);
            double gbps = (double)GAMMA_BYTES / (double)(stu_time_ns() - t0);   /* B/ns */
            out = gbps > out ? gbps : out;
        }
    }
    free(a);
    free(b);
    free(d);
    return out;
}

/* Which of the model's values calibration did not provide (a STRATA_* variable or a profile
 * outranks it, or a tier could not be measured), as "shm.alpha_us (env), ..."; "" if none. */
static void not_measured(const sta_model_t *m, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int f = 0; f < STA_FIELD_COUNT && n < len; f++)
        if (m->source[f] != STA_SRC_CALIBRATED)
            n += (size_t)snprintf(buf + n, len - n, "%s%s (%s)", n ? ", " : "",
                                  sta_field_name((sta_field_t)f), sta_source_name(m->source[f]));
}

static int rank0_write(strata_comm_t *comm, const char *path)
{
    sta_model_t model;
    sta_dims_t dims;
    char host[HOST_NAME_MAX + 1] = "?", when[32] = "?", missing[256], comment[1024];
    time_t now = time(NULL);

    stb_comm_model(comm, &model, &dims);
    double g = gamma_measure();
    if (g > 0.0 && model.source[STA_FIELD_GAMMA] <= STA_SRC_CALIBRATED) {
        model.gamma_gbps = g;
        model.source[STA_FIELD_GAMMA] = STA_SRC_CALIBRATED;
    }
    gethostname(host, sizeof(host) - 1);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
    not_measured(&model, missing, sizeof(missing));
    snprintf(comment, sizeof(comment),
             "written by strata-doctor --write-profile on %s, %s\n"
             "%d ranks on %d node(s) of %d, transport %s; shm: node 0's segment broadcast, "
             "net: a ping-pong between nodes 0 and 1 (coll/calibrate.c), gamma: fp32 sum of two "
             "64 MiB buffers, fastest of 5 (%s kernels)\n"
             "%s%s", host, when, dims.nranks, dims.nnodes, dims.local_size,
             stb_comm_transport(comm), sta_reduce_isa(), missing[0] ? "not measured: " : "",
             missing);
    if (sta_profile_write(path, &model, comment) != STRATA_OK)
        return 1;
    printf("strata-doctor: wrote %s: shm alpha %.3f us beta %.3f GB/s, net alpha %.3f us beta "
           "%.3f GB/s, gamma %.3f GB/s%s%s\n", path, model.shm.alpha_us, model.shm.beta_gbps,
           model.net.alpha_us, model.net.beta_gbps, model.gamma_gbps,
           missing[0] ? "; not measured: " : "", missing);
    return 0;
}

int stb_doc_profile_rank(const char *path)
{
    strata_comm_t *comm = NULL;
    int rc = 0;

    setenv("STRATA_CALIBRATE", "1", 1);
    stu_param_reload();
    strata_status_t s = strata_comm_init(&comm);
    if (s != STRATA_OK) {
        fprintf(stderr, "strata-doctor: communicator: %s (run under strata-run, or use "
                        "--write-profile)\n", strata_status_str(s));
        return 1;
    }
    if (strata_comm_rank(comm) == 0)
        rc = rank0_write(comm, path);
    /* Nobody leaves before rank 0 has what it needs from the others. */
    if (strata_barrier(comm) != STRATA_OK)
        rc = 1;
    strata_comm_destroy(comm);
    return rc;
}

int stb_doc_profile_run(const char *self, const char *path, int nranks, int nodes)
{
    char exe[PATH_MAX], run[PATH_MAX + 16], n[16], k[16];
    ssize_t len = readlink(self, exe, sizeof(exe) - 1);
    int status;

    if (len <= 0) {
        fprintf(stderr, "strata-doctor: %s: %s\n", self, strerror(errno));
        return 1;
    }
    exe[len] = '\0';
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", exe);
    snprintf(run, sizeof(run), "%s/strata-run", dirname(dir));
    snprintf(n, sizeof(n), "%d", nranks);
    snprintf(k, sizeof(k), "%d", nodes);
    char *argv[] = {run, "-n", n, "--nodes", k, "--", exe, "--calibrate-rank", (char *)path,
                    NULL};
    printf("strata-doctor: %s -n %s --nodes %s -- %s --calibrate-rank %s (STRATA_CALIBRATE=1)\n",
           run, n, k, exe, path);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("strata-doctor: fork");
        return 1;
    }
    if (pid == 0) {
        setenv("STRATA_CALIBRATE", "1", 1);
        execv(run, argv);
        fprintf(stderr, "strata-doctor: %s: %s\n", run, strerror(errno));
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("strata-doctor: waitpid");
            return 1;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
