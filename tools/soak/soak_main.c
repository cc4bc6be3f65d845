/*
 * strata-soak: a long run of random collectives with every result checked.
 * Every rank draws the same pseudo-random sequence from the seed (soak_draw.h)
 * and runs it (soak_exec.h); every `batch` calls the ranks sum their wrong
 * calls and rank 0 says whether to stop (the call count or the duration is
 * reached). At the end rank 0 prints the calls per collective and algorithm,
 * the wrong ones, and each rank's descriptors, resident memory and
 * shared-memory segments before init, after the first batch and before
 * destroy; each rank then compares its descriptors and segments after destroy
 * with those before init. Exit 0 only when nothing was wrong, failed or left.
 *
 * Rank, size and the rendezvous come from the environment (strata_comm_init),
 * so it runs under strata-run (-n ranks, --nodes emulated nodes), mpirun or srun.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "coll/introspect.h"
#include "strata/strata.h"
#include "tools/lib/tool_res.h"
#include "tools/soak/soak_exec.h"
#include "util/time.h"

#define SOAK_MIB (1024.0 * 1024.0)

/* The whole-job check after a batch: every rank's wrong and failed calls, rank 0's stop. */
enum { SYNC_WRONG, SYNC_STOP, SYNC_COUNT };

/* The samples each rank reports: before init, after the first batch, before destroy. */
enum { RES_START, RES_WARM, RES_END, RES_COUNT };
#define RES_FIELDS 4

static void soak_res_pack(const stb_res_t *r, int64_t *out)
{
    out[0] = r->fds;
    out[1] = r->rss_bytes;
    out[2] = r->shm_maps;
    out[3] = r->dev_shm;
}

static void soak_header(const stb_soak_t *s, const stb_soak_opts_t *o)
{
    printf("# strata-soak: %d ranks on %d node(s) (%d local), transport %s, seed %" PRIu64
           ", buffers up to %zu B, ", s->nranks, strata_comm_nnodes(s->comm),
           strata_comm_local_size(s->comm), stb_comm_transport(s->comm), s->seed, o->max_bytes);
    if (o->calls > 0)
        printf("calls %" PRIu64 " .. %" PRIu64 "\n", o->first, o->first + o->calls - 1);
    else
        printf("from call %" PRIu64 " for %d s\n", o->first, o->seconds);
    fflush(stdout);
}

/* Rank 0's table; wrong[][] is summed over the ranks, the rest is rank 0's (the same on all). */
static void soak_table(const stb_soak_t *s, int64_t wrong[STA_COLL_COUNT][STA_ALGO_COUNT])
{
    const stb_soak_counts_t *c = &s->counts;
    printf("# %-15s %-13s %9s %8s %8s %8s %10s %6s\n", "collective", "algorithm", "calls",
           "forced", "nb", "in-place", "MiB", "wrong");
    for (int k = 0; k < STA_COLL_COUNT; k++)
        for (int a = 0; a < STA_ALGO_COUNT; a++) {
            if (c->calls[k][a] == 0)
                continue;
            printf("  %-15s %-13s %9" PRId64 " %8" PRId64 " %8" PRId64 " %8" PRId64
                   " %10.1f %6" PRId64 "\n", sta_coll_name((sta_coll_t)k),
                   sta_algo_name((sta_algo_t)a), c->calls[k][a], c->forced[k][a],
                   c->nonblocking[k][a], c->in_place[k][a], (double)c->bytes[k][a] / SOAK_MIB,
                   wrong[k][a]);
        }
    printf("  %-15s %-13s %9" PRId64 "\n", "barrier", "recursive", c->barriers);
}

static void soak_res_table(const int64_t *all, int nranks)
{
    static const char *const names[RES_COUNT] = {"before init", "after batch 1", "before destroy"};
    printf("# resources per rank (%s / %s / %s): descriptors, resident MiB, strata segments "
           "mapped, /dev/shm entries\n", names[0], names[1], names[2]);
    for (int r = 0; r < nranks; r++) {
        const int64_t *v = all + (size_t)r * RES_COUNT * RES_FIELDS;
        printf("  rank %d: fds %" PRId64 " %" PRId64 " %" PRId64 ", rss %.1f %.1f %.1f, "
               "segments %" PRId64 " %" PRId64 " %" PRId64 ", /dev/shm %" PRId64 " %" PRId64
               " %" PRId64 "\n", r, v[0], v[4], v[8], (double)v[1] / SOAK_MIB,
               (double)v[5] / SOAK_MIB, (double)v[9] / SOAK_MIB, v[2], v[6], v[10], v[3], v[7],
               v[11]);
    }
}

/* The batches until rank 0 says stop. OK, or the first failed call's status. */
static strata_status_t soak_loop(stb_soak_t *s, const stb_soak_opts_t *o, stb_res_t *warm,
                                 uint64_t *ran_p, int64_t *wrong_p)
{
    const uint64_t t0 = stu_time_ns();
    uint64_t index = o->first, next_progress = (uint64_t)o->progress_s;
    strata_status_t status = STRATA_OK;
    int64_t sync[SYNC_COUNT] = {0, 0};
    int batch_no = 0;

    while (status == STRATA_OK) {
        for (int b = 0; b < o->batch && status == STRATA_OK; b++) {
            if (o->calls > 0 && index >= o->first + o->calls)
                break;
            status = stb_soak_call(s, index++);
        }
        if (status == STRATA_OK)
            status = stb_soak_drain(s);
        if (status != STRATA_OK)
            break;
        double el = (double)(stu_time_ns() - t0) / 1e9;
        sync[SYNC_WRONG] = s->wrong_calls;
        sync[SYNC_STOP] = s->rank == 0 && (o->calls > 0 ? index >= o->first + o->calls
                                                        : el >= (double)o->seconds);
        status = strata_allreduce(sync, sync, SYNC_COUNT, STRATA_INT64, STRATA_SUM, s->comm);
        if (status != STRATA_OK) {
            fprintf(stderr, "strata-soak: rank %d: the check after call %" PRIu64 " failed: %s "
                    "(%s)\n", s->rank, index, strata_status_str(status),
                    strata_comm_error(s->comm));
            break;
        }
        if (batch_no++ == 0)
            stb_res_sample(warm);
        if (s->rank == 0 && o->progress_s > 0 && el >= (double)next_progress) {
            printf("progress: %" PRIu64 " calls in %.0f s, %" PRId64 " wrong; rank 0: fds %d, "
                   "rss %.1f MiB, heap in use %.2f MiB\n", index - o->first, el,
                   sync[SYNC_WRONG], stb_res_fd_count(), (double)stb_res_rss_bytes() / SOAK_MIB,
                   (double)stb_res_heap_bytes() / SOAK_MIB);
            fflush(stdout);
            next_progress += (uint64_t)o->progress_s;
        }
        if (sync[SYNC_STOP] != 0)
            break;
    }
    *ran_p = index - o->first;
    *wrong_p = sync[SYNC_WRONG];
    return status;
}

int main(int argc, char **argv)
{
    stb_soak_opts_t o;
    char err[256];
    strata_comm_t *comm = NULL;
    stb_soak_t s;
    stb_res_t res[RES_COUNT], after;
    int64_t wrong_all = 0, wrong_table[STA_COLL_COUNT][STA_ALGO_COUNT];
    uint64_t seed, ran = 0;
    int fail = 0;

    if (stb_soak_opts_parse(argc, argv, &o, err, sizeof(err)) != STRATA_OK) {
        fprintf(stderr, "strata-soak: %s\n%s", err, stb_soak_usage());
        return 2;
    }
    if (o.help) {
        fputs(stb_soak_usage(), stdout);
        return 0;
    }
    memset(res, 0, sizeof(res));
    stb_res_sample(&res[RES_START]);
    strata_status_t status = strata_comm_init(&comm);
    if (status != STRATA_OK) {
        fprintf(stderr, "strata-soak: init failed: %s\n", strata_status_str(status));
        return 1;
    }
    seed = o.seed;
    while (seed == 0 && strata_comm_rank(comm) == 0)
        if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
            seed = stu_time_ns();
    if (o.seed == 0 &&
        (status = strata_broadcast(&seed, &seed, 1, STRATA_UINT64, 0, comm)) != STRATA_OK) {
        fprintf(stderr, "strata-soak: the seed's broadcast failed: %s\n",
                strata_status_str(status));
        strata_comm_destroy(comm);
        return 1;
    }
    if ((status = stb_soak_init(&s, comm, &o, seed)) != STRATA_OK) {
        fprintf(stderr, "strata-soak: no memory for the buffers\n");
        strata_comm_destroy(comm);
        return 1;
    }
    if (s.rank == 0)
        soak_header(&s, &o);
    res[RES_WARM] = res[RES_START];
    uint64_t t0 = stu_time_ns();
    status = soak_loop(&s, &o, &res[RES_WARM], &ran, &wrong_all);
    double secs = (double)(stu_time_ns() - t0) / 1e9;
    stb_res_sample(&res[RES_END]);

    if (status == STRATA_OK) {
        memcpy(wrong_table, s.counts.wrong, sizeof(wrong_table));
        status = strata_allreduce(wrong_table, wrong_table, STA_COLL_COUNT * STA_ALGO_COUNT,
                                  STRATA_INT64, STRATA_SUM, comm);
    }
    int64_t *all = calloc((size_t)s.nranks * RES_COUNT * RES_FIELDS, sizeof(int64_t));
    int64_t mine[RES_COUNT * RES_FIELDS];
    for (int i = 0; i < RES_COUNT; i++)
        soak_res_pack(&res[i], mine + i * RES_FIELDS);
    if (status == STRATA_OK && all != NULL)
        status = strata_allgather(mine, all, RES_COUNT * RES_FIELDS, STRATA_INT64, comm);
    if (status == STRATA_OK && s.rank == 0) {
        soak_table(&s, wrong_table);
        if (all != NULL)
            soak_res_table(all, s.nranks);
    }
    free(all);
    fail = status != STRATA_OK || wrong_all != 0 || s.failed != 0;
    if (s.rank == 0 || status != STRATA_OK)
        printf("# result (rank %d): %" PRIu64 " calls from %" PRIu64 " in %.1f s, seed %" PRIu64
               ", %" PRId64 " wrong, %s%s: %s\n", s.rank, ran, o.first, secs, seed, wrong_all,
               status == STRATA_OK ? "no call failed" : "a call failed: ",
               status == STRATA_OK ? "" : strata_status_str(status), fail ? "FAIL" : "PASS");
    stb_soak_fini(&s);
    strata_comm_destroy(comm);

    stb_res_sample(&after);
    /* fewer is fine: init closes the listening socket strata-run hands rank 0 */
    int left = after.fds > res[RES_START].fds || after.shm_maps > res[RES_START].shm_maps;
    printf("# rank %d after destroy: fds %d (%d before init), strata segments mapped %d (%d), "
           "/dev/shm entries %d (%d)%s\n", s.rank, after.fds, res[RES_START].fds, after.shm_maps,
           res[RES_START].shm_maps, after.dev_shm, res[RES_START].dev_shm,
           left ? ": LEFT BEHIND" : "");
    fflush(stdout);
    return fail || left ? 1 : 0;
}
