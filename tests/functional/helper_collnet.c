/*
 * One CollNet member of tests/functional/test_collnet.c: loads the built plugin as NCCL does
 * (dlopen, ncclNetPlugin_v11 init, then ncclCollNetPlugin_v<version> init), listens, sends
 * its handle to the test over the control socket, gets every member's handle back in the
 * order NCCL would pass them, connects, and drives one scenario the way NCCL's proxy does:
 * a staging region registered 2 x nChannels times, calls issued several deep before the
 * oldest is tested, counts padded to NCCL's 512-byte grain with garbage (NaN included) in
 * the padding, test() with and without a size pointer. Every result is checked against a
 * reference (tests/functional/coll_check.h). Reports one STS_CTL_RESULT; exits 0 only if
 * every check passed.
 *
 *   helper_collnet <ctl fd> <scenario> <nranks> <rank> <collnet version> [cycles]
 *
 * Scenarios: types, windows, depth, kill, stall, cycles, threads, split. STS_CN_VICTIM
 * names the member that dies (kill), stops progressing (stall) or sees other handles
 * (split). STS_CN_ODD_ENV, where set, is one NAME=VALUE the odd-ranked members put in their
 * environment (members that differ: how many collectives they run at once, what order they
 * would pick alone).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/lib/tool_data.h"
#include "sts_proc.h"
#include "sts_util.h"
#include "tools/lib/plugin_collnet.h"
#include "util/compiler.h"

#define CN_MAX_MEMBERS 16
#define CN_NCH 2                              /* channels: the region is registered 4 times */
#define CN_SLOTS 8                            /* NCCL_STEPS: slots per half of the region */
#define CN_SLOT_BYTES ((size_t)128 << 10)     /* buffSize / 8 with a 1 MiB buffSize */
#define CN_GRAIN 512                          /* NCCL's SIMPLE grain: counts are padded to it */
#define CN_DEPTH 64                           /* NCCL's most requests in flight per collComm */
#define CN_TIMEOUT_S 120.0

typedef struct member {
    int fd, nranks, rank, version, cycles;
    const char *scenario;
    stb_plugin_t *plugin;
    stb_collnet_t *cn;
    void *ccomm;
    uint8_t *region;                          /* 2 halves x CN_SLOTS x CN_SLOT_BYTES */
    void *mh_send[CN_NCH], *mh_recv[CN_NCH];  /* the region's registrations, as NCCL's */
    uint64_t deadline;
    char err[512];
} member_t;

__attribute__((format(printf, 2, 3))) static int fail(member_t *m, const char *fmt, ...)
{
    va_list ap;
    if (m->err[0] != '\0')
        return -1;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof(m->err), fmt, ap);
    va_end(ap);
    return -1;
}

static uint8_t *send_slot(member_t *m, int k)
{
    return m->region + (size_t)k * CN_SLOT_BYTES;
}

static uint8_t *recv_slot(member_t *m, int k)
{
    return m->region + (size_t)(CN_SLOTS + k) * CN_SLOT_BYTES;
}

static int victim(void)
{
    const char *v = getenv("STS_CN_VICTIM");
    return v != NULL ? atoi(v) : -1;
}

/* Byte 72 of a CollNet handle starts its nonce (docs/collnet-protocol.md, "The handle"). */
#define CN_HANDLE_NONCE_AT 72

/* listen, swap handles through the test, connect: NCCL's sharedListen + sharedConnect.
 * Scenario split: the victim's copy of the next member's handle carries another nonce, so
 * its view of the group differs from everyone else's. */
static int member_join(member_t *m)
{
    uint8_t handle[STB_PLUGIN_HANDLE_SIZE], all[CN_MAX_MEMBERS][STB_PLUGIN_HANDLE_SIZE];
    void *ptrs[CN_MAX_MEMBERS];
    void *lcomm = NULL;

    memset(handle, 0, sizeof(handle));
    if (stb_collnet_listen(m->cn, 0, handle, &lcomm) != STRATA_OK)
        return fail(m, "listen failed");
    if (sts_ctl_send(m->fd, STS_CTL_HANDLE, handle, sizeof(handle)) != 0)
        return fail(m, "control socket: sending the handle");
    for (int i = 0; i < m->nranks; i++) {
        if (sts_ctl_expect(m->fd, STS_CTL_HANDLE, all[i], STB_PLUGIN_HANDLE_SIZE,
                           m->deadline) != 0)
            return fail(m, "control socket: handle %d of %d", i, m->nranks);
        ptrs[i] = all[i];
    }
    if (strcmp(m->scenario, "split") == 0 && m->rank == victim())
        all[(m->rank + 1) % m->nranks][CN_HANDLE_NONCE_AT] ^= 0x01;
    strata_status_t status = stb_collnet_connect(m->cn, ptrs, m->nranks, m->rank, lcomm,
                                                 &m->ccomm);
    /* NCCL's handles are freed right after connect: scribble on them */
    memset(all, 0xa5, sizeof(all));
    if (status != STRATA_OK)
        return fail(m, "connect failed: %s", strata_status_str(status));
    stb_collnet_close_listen(m->cn, lcomm);    /* as NCCL does after a successful connect */
    return 0;
}

/* The region, registered by the send and the receive side of every channel. */
static int region_register(member_t *m)
{
    for (int ch = 0; ch < CN_NCH; ch++) {
        if (stb_collnet_reg(m->cn, m->ccomm, m->region, 2 * CN_SLOTS * CN_SLOT_BYTES,
                            &m->mh_send[ch]) != STRATA_OK ||
            stb_collnet_reg(m->cn, m->ccomm, m->region, 2 * CN_SLOTS * CN_SLOT_BYTES,
                            &m->mh_recv[ch]) != STRATA_OK)
            return fail(m, "regMr of the staging region (channel %d)", ch);
    }
    return 0;
}

static void region_deregister(member_t *m)
{
    for (int ch = 0; ch < CN_NCH; ch++) {
        if (m->mh_send[ch] != NULL)
            stb_collnet_dereg(m->cn, m->ccomm, m->mh_send[ch]);
        if (m->mh_recv[ch] != NULL)
            stb_collnet_dereg(m->cn, m->ccomm, m->mh_recv[ch]);
        m->mh_send[ch] = m->mh_recv[ch] = NULL;
    }
}

/* test() until done; with_size: check the size NCCL would trace. */
static int wait_req(member_t *m, void *req, int with_size, int want_size, const char *what)
{
    int done = 0, size = -1;
    while (!done) {
        strata_status_t status = stb_collnet_test(m->cn, req, &done, with_size ? &size : NULL);
        if (status != STRATA_OK)
            return fail(m, "%s: test failed: %s", what, strata_status_str(status));
        if (!done && stu_deadline_passed(m->deadline))
            return fail(m, "%s: not done by the deadline", what);
        if (!done)
            sts_relax();           /* up to 8 members share 2 cores: let the others run */
    }
    if (with_size && size != want_size)
        return fail(m, "%s: test reported %d bytes, %d were reduced", what, size, want_size);
    return 0;
}

/* Bytes that make garbage of every kind in any type: NaN, Inf, denormals, huge values. */
static void garbage(uint8_t *p, size_t n, uint32_t seed)
{
    static const uint8_t pat[] = {0xff, 0x7f, 0x80, 0x00, 0x7c, 0xfe, 0x01, 0xc0};
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(pat[(i + seed) % sizeof(pat)] ^ (uint8_t)((i * 131 + seed) >> 5));
}

static size_t pad_count(size_t n, size_t esz)
{
    size_t bytes = (n * esz + CN_GRAIN - 1) / CN_GRAIN * CN_GRAIN;
    return bytes / esz;
}

/* ------------------------------------------------------------------ types */

/* Every type x operator, CN_SLOTS calls deep, padded counts, both test() forms. */
static int scenario_types(member_t *m)
{
    static const strata_op_t ops[] = {STRATA_SUM, STRATA_PROD, STRATA_MIN, STRATA_MAX};
    for (int t = 0; t < STRATA_DTYPE_COUNT; t++) {
        size_t esz = strata_dtype_size((strata_dtype_t)t);
        size_t counts[CN_SLOTS] = {1, 7, 100, 1000, 3001, 12345, CN_SLOT_BYTES / esz - 3,
                                   CN_SLOT_BYTES / esz / 2};
        for (size_t o = 0; o < 4; o++) {
            void *reqs[CN_SLOTS];
            size_t padded[CN_SLOTS];
            for (int k = 0; k < CN_SLOTS; k++) {
                padded[k] = STU_MIN(pad_count(counts[k], esz), CN_SLOT_BYTES / esz);
                stb_data_fill(send_slot(m, k), counts[k], (strata_dtype_t)t, ops[o], m->rank, 0);
                garbage(send_slot(m, k) + counts[k] * esz, (padded[k] - counts[k]) * esz,
                        (uint32_t)(m->rank + k));
                memset(recv_slot(m, k), 0x5a, CN_SLOT_BYTES);
                reqs[k] = NULL;
                while (reqs[k] == NULL) {
                    if (stb_collnet_iallreduce(m->cn, m->ccomm, send_slot(m, k), recv_slot(m, k),
                                               padded[k], (strata_dtype_t)t, ops[o],
                                               m->mh_send[k % CN_NCH], m->mh_recv[k % CN_NCH],
                                               &reqs[k]) != STRATA_OK)
                        return fail(m, "iallreduce %s/%s count %zu", strata_dtype_name(t),
                                    strata_op_name(ops[o]), padded[k]);
                }
            }
            for (int k = 0; k < CN_SLOTS; k++) {
                char what[64];
                snprintf(what, sizeof(what), "allreduce %s/%s count %zu", strata_dtype_name(t),
                         strata_op_name(ops[o]), padded[k]);
                if (wait_req(m, reqs[k], k % 2 == 0, (int)(padded[k] * esz), what) != 0)
                    return -1;
                if (stb_data_check(recv_slot(m, k), counts[k], (strata_dtype_t)t, ops[o], m->nranks,
                             0, what) != 0)
                    return fail(m, "%s: wrong result", what);
            }
        }
    }
    return 0;
}

/* A large allreduce from buffers registered once, as NCCL's registered path passes them;
 * in_place: one buffer for both (the registered path's in-place allreduce). */
static int scenario_large(member_t *m, strata_dtype_t t, size_t count, int in_place)
{
    size_t esz = strata_dtype_size(t);
    uint8_t *s = malloc(count * esz), *r = in_place ? s : malloc(count * esz);
    void *smh = NULL, *rmh = NULL, *req = NULL;
    int rc = -1;

    if (s == NULL || r == NULL)
        goto out;
    stb_data_fill(s, count, t, STRATA_SUM, m->rank, 0);
    if (stb_collnet_reg(m->cn, m->ccomm, s, count * esz, &smh) != STRATA_OK ||
        stb_collnet_reg(m->cn, m->ccomm, r, count * esz, &rmh) != STRATA_OK) {
        fail(m, "regMr of %zu bytes", count * esz);
        goto out;
    }
    while (req == NULL)
        if (stb_collnet_iallreduce(m->cn, m->ccomm, s, r, count, t, STRATA_SUM, smh, rmh,
                                   &req) != STRATA_OK) {
            fail(m, "large iallreduce");
            goto out;
        }
    if (wait_req(m, req, 1, (int)(count * esz), "large allreduce") == 0 &&
        stb_data_check(r, count, t, STRATA_SUM, m->nranks, 0, "large allreduce") == 0)
        rc = 0;
    else
        fail(m, "large allreduce of %zu %s: wrong result", count, strata_dtype_name(t));
out:
    if (smh != NULL)
        stb_collnet_dereg(m->cn, m->ccomm, smh);
    if (rmh != NULL)
        stb_collnet_dereg(m->cn, m->ccomm, rmh);
    free(s);
    if (!in_place)
        free(r);
    return rc == 0 ? 0 : fail(m, "large allreduce failed");
}

/* ------------------------------------------------------------------ windows */

/* Allgather windows of a nranks x bpr byte buffer, 4 deep: every byte checked. */
static int windows_allgather(member_t *m, size_t bpr, size_t win)
{
    size_t total = bpr * (size_t)m->nranks;
    uint8_t *mine = malloc(bpr), *out = malloc(4 * win), *want = malloc(total);
    void *mine_mh = NULL, *out_mh = NULL;
    int rc = 0;

    for (int r = 0; r < m->nranks; r++)
        sts_pattern_fill(want + (size_t)r * bpr, bpr, 1000u + (uint32_t)r);
    memcpy(mine, want + (size_t)m->rank * bpr, bpr);
    if (stb_collnet_reg(m->cn, m->ccomm, mine, bpr, &mine_mh) != STRATA_OK ||
        stb_collnet_reg(m->cn, m->ccomm, out, 4 * win, &out_mh) != STRATA_OK)
        rc = fail(m, "regMr for allgather windows");
    for (size_t wo = 0; rc == 0 && wo < total; wo += 4 * win) {
        void *reqs[4] = {NULL};
        size_t offs[4], lens[4];
        int n = 0;
        for (; n < 4 && wo + (size_t)n * win < total; n++) {
            offs[n] = wo + (size_t)n * win;
            lens[n] = STU_MIN(win, total - offs[n]);
            size_t lo = (size_t)m->rank * bpr;
            size_t start = STU_MIN(STU_MAX(lo, offs[n]), lo + bpr);   /* NCCL's sendData */
            while (reqs[n] == NULL && rc == 0)
                if (stb_collnet_iallgather(m->cn, m->ccomm, mine + (start - lo), mine_mh,
                                           out + (size_t)n * win, out_mh, bpr, offs[n], lens[n],
                                           &reqs[n]) != STRATA_OK)
                    rc = fail(m, "iallgather window %zu+%zu", offs[n], lens[n]);
        }
        for (int k = 0; k < n && rc == 0; k++) {
            rc = wait_req(m, reqs[k], 1, (int)lens[k], "allgather window");
            if (rc == 0 && memcmp(out + (size_t)k * win, want + offs[k], lens[k]) != 0)
                rc = fail(m, "allgather window %zu+%zu of %d x %zu bytes: wrong bytes", offs[k],
                          lens[k], m->nranks, bpr);
        }
    }
    if (mine_mh != NULL)
        stb_collnet_dereg(m->cn, m->ccomm, mine_mh);
    if (out_mh != NULL)
        stb_collnet_dereg(m->cn, m->ccomm, out_mh);
    free(mine);
    free(out);
    free(want);
    return rc;
}

/* Reduce-scatter windows: each member's share of each window checked against the reference.
 * in_place: the output is the member's own block of the input (NCCL's registered path). */
static int windows_reduce_scatter(member_t *m, strata_dtype_t t, strata_op_t op, size_t bpr,
                                  size_t win, int in_place)
{
    size_t esz = strata_dtype_size(t), total = bpr * (size_t)m->nranks;
    uint8_t *in = malloc(total), *out = malloc(bpr);
    void *in_mh = NULL, *out_mh = NULL;
    int rc = 0;

    stb_data_fill(in, total / esz, t, op, m->rank, 0);
    if (stb_collnet_reg(m->cn, m->ccomm, in, total, &in_mh) != STRATA_OK ||
        stb_collnet_reg(m->cn, m->ccomm, out, bpr, &out_mh) != STRATA_OK)
        rc = fail(m, "regMr for reduce-scatter windows");
    for (size_t wo = 0; rc == 0 && wo < total; wo += win) {
        size_t len = STU_MIN(win, total - wo), lo = (size_t)m->rank * bpr;
        size_t a = STU_MIN(STU_MAX(lo, wo), wo + len), b = STU_MIN(STU_MAX(lo + bpr, wo), wo + len);
        void *req = NULL;
        uint8_t *dst = in_place ? in + a : out;
        if (!in_place)
            memset(out, 0x5a, bpr);
        while (req == NULL && rc == 0)
            if (stb_collnet_ireducescatter(m->cn, m->ccomm, in + wo, in_mh, dst,
                                           in_place ? in_mh : out_mh, bpr, wo, len, t, op,
                                           &req) != STRATA_OK)
                rc = fail(m, "ireducescatter window %zu+%zu", wo, len);
        if (rc == 0)
            rc = wait_req(m, req, 0, 0, "reduce-scatter window");
        if (rc == 0 && b > a &&
            stb_data_check(dst, (b - a) / esz, t, op, m->nranks, a / esz, "reduce-scatter") != 0)
            rc = fail(m, "reduce-scatter %s/%s window %zu+%zu: wrong result",
                      strata_dtype_name(t), strata_op_name(op), wo, len);
    }
    if (in_mh != NULL)
        stb_collnet_dereg(m->cn, m->ccomm, in_mh);
    if (out_mh != NULL)
        stb_collnet_dereg(m->cn, m->ccomm, out_mh);
    free(in);
    free(out);
    return rc;
}

static int scenario_windows(member_t *m)
{
    if (windows_allgather(m, 3000, 1024) != 0 || windows_allgather(m, 100000, 64 * 1024) != 0 ||
        windows_allgather(m, 7, 5) != 0)
        return -1;
    if (windows_reduce_scatter(m, STRATA_FP32, STRATA_SUM, 4096, 1536, 0) != 0 ||
        windows_reduce_scatter(m, STRATA_INT32, STRATA_MAX, 40000, 65536, 0) != 0 ||
        windows_reduce_scatter(m, STRATA_BF16, STRATA_SUM, 2048, 6144, 0) != 0 ||
        windows_reduce_scatter(m, STRATA_FP8_E4M3, STRATA_SUM, 999, 512, 0) != 0 ||
        windows_reduce_scatter(m, STRATA_FP32, STRATA_SUM, 4096, 1536, 1) != 0 ||
        windows_reduce_scatter(m, STRATA_INT64, STRATA_SUM, 80000, 1 << 20, 1) != 0)
        return -1;
    /* every type x operator over windows that straddle the ranks' blocks (1200 and 1000
     * bytes: whole elements of every type) */
    static const strata_op_t ops[] = {STRATA_SUM, STRATA_PROD, STRATA_MIN, STRATA_MAX};
    for (int t = 0; t < STRATA_DTYPE_COUNT; t++)
        for (size_t o = 0; o < 4; o++)
            if (windows_reduce_scatter(m, (strata_dtype_t)t, ops[o], 1200, 1000, 0) != 0)
                return -1;
    return 0;
}

/* ------------------------------------------------------------------ depth */

/* NCCL's depth: CN_DEPTH calls before any test, the next one is back-pressured. */
static int scenario_depth(member_t *m)
{
    void *reqs[CN_DEPTH], *extra = NULL;
    for (int k = 0; k < CN_DEPTH; k++) {
        float *s = (float *)send_slot(m, k % CN_SLOTS) + 64 * (k / CN_SLOTS);
        float *r = (float *)recv_slot(m, k % CN_SLOTS) + 64 * (k / CN_SLOTS);
        for (int i = 0; i < 64; i++)
            s[i] = (float)(m->rank + k + i);
        reqs[k] = NULL;
        if (stb_collnet_iallreduce(m->cn, m->ccomm, s, r, 64, STRATA_FP32, STRATA_SUM,
                                   m->mh_send[0], m->mh_recv[0], &reqs[k]) != STRATA_OK ||
            reqs[k] == NULL)
            return fail(m, "call %d of %d in flight was refused", k + 1, CN_DEPTH);
    }
    float *s = (float *)send_slot(m, 0);
    if (stb_collnet_iallreduce(m->cn, m->ccomm, s, s + 64, 1, STRATA_FP32, STRATA_SUM,
                               m->mh_send[0], m->mh_recv[0], &extra) != STRATA_OK)
        return fail(m, "call %d failed instead of waiting", CN_DEPTH + 1);
    if (extra != NULL)
        return fail(m, "call %d got a request: no back-pressure", CN_DEPTH + 1);
    for (int k = 0; k < CN_DEPTH; k++) {
        if (wait_req(m, reqs[k], k % 3 == 0, 256, "depth") != 0)
            return -1;
        float *r = (float *)recv_slot(m, k % CN_SLOTS) + 64 * (k / CN_SLOTS);
        for (int i = 0; i < 64; i++) {
            float want = 0;
            for (int q = 0; q < m->nranks; q++)
                want += (float)(q + k + i);
            if (r[i] != want)
                return fail(m, "depth call %d element %d: %g, want %g", k, i, r[i], want);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ failures */

/*
 * kill: the test SIGKILLs the victim while the others are inside a large allreduce; stall:
 * the victim stays alive but never calls the plugin again. Either way the victim never
 * starts its part, so the others' collective cannot complete: every other member must see
 * test() fail (not hang), and the plugin's warning must name a member.
 */
static int scenario_fault(member_t *m, int die)
{
    size_t count = (size_t)8 << 20, esz = 4;
    uint8_t *s = calloc(count, esz), *r = calloc(count, esz);
    void *smh = NULL, *rmh = NULL, *req = NULL;

    if (s == NULL || r == NULL ||
        stb_collnet_reg(m->cn, m->ccomm, s, count * esz, &smh) != STRATA_OK ||
        stb_collnet_reg(m->cn, m->ccomm, r, count * esz, &rmh) != STRATA_OK)
        return fail(m, "setup of the fault scenario");
    if (m->rank == victim()) {
        /* never takes part: its peers' collective waits for it. kill: the test SIGKILLs it
         * while they wait; stall: it stays alive and silent until they time out */
        sts_ctl_result(m->fd, 0, die ? "victim waits to be killed" : "victim stops progressing");
        sleep(600);
        _exit(0);
    }
    while (req == NULL)
        if (stb_collnet_iallreduce(m->cn, m->ccomm, s, r, count, STRATA_FP32, STRATA_SUM, smh,
                                   rmh, &req) != STRATA_OK)
            return fail(m, "iallreduce");
    uint64_t t0 = stu_time_ns();
    int done = 0;
    strata_status_t status = STRATA_OK;
    while (!done && status == STRATA_OK && !stu_deadline_passed(m->deadline)) {
        status = stb_collnet_test(m->cn, req, &done, NULL);
        sts_relax();
    }
    double secs = (double)(stu_time_ns() - t0) / 1e9;
    char warn[1024];
    stb_plugin_last_warning(warn, sizeof(warn));
    if (status == STRATA_OK)
        return fail(m, "test() never failed (done %d after %.1f s)", done, secs);
    if (strstr(warn, "NCCL rank") == NULL)
        return fail(m, "the warning names no member: '%s'", warn);
    sts_ctl_result(m->fd, 0, "error after %.2f s (%s): %s", secs, strata_status_str(status),
                   warn);
    stb_collnet_dereg(m->cn, m->ccomm, smh);
    stb_collnet_dereg(m->cn, m->ccomm, rmh);
    free(s);
    free(r);
    return 1;                                  /* reported */
}

/* ------------------------------------------------------------------ threads */

/* NCCL's threads: connect and registrations on a service thread, the data path on a
 * progress thread, a user buffer registered and released while collectives run. */
typedef struct thr {
    member_t *m;
    int running;             /* atomic: the progress thread is still at work */
    int rc_progress, rc_service;
} thr_t;

static void *thread_service(void *arg)
{
    thr_t *t = arg;
    member_t *m = t->m;
    uint8_t *buf = malloc(1 << 16);
    while (__atomic_load_n(&t->running, __ATOMIC_ACQUIRE)) {
        void *mh = NULL;
        if (stb_collnet_reg(m->cn, m->ccomm, buf, 1 << 16, &mh) != STRATA_OK ||
            stb_collnet_dereg(m->cn, m->ccomm, mh) != STRATA_OK) {
            t->rc_service = -1;
            break;
        }
    }
    free(buf);
    return NULL;
}

static void *thread_progress(void *arg)
{
    thr_t *t = arg;
    t->rc_progress = scenario_types(t->m);
    __atomic_store_n(&t->running, 0, __ATOMIC_RELEASE);
    return NULL;
}

static void *thread_setup(void *arg)
{
    member_t *m = arg;
    if (member_join(m) != 0 || region_register(m) != 0)
        return (void *)1;
    return NULL;
}

static int scenario_threads(member_t *m)
{
    pthread_t svc, prog;
    void *res = NULL;
    thr_t t = {.m = m, .running = 1};

    if (pthread_create(&svc, NULL, thread_setup, m) != 0)
        return fail(m, "pthread_create");
    pthread_join(svc, &res);
    if (res != NULL)
        return -1;
    if (pthread_create(&prog, NULL, thread_progress, &t) != 0)
        return fail(m, "pthread_create");
    if (pthread_create(&svc, NULL, thread_service, &t) != 0) {
        pthread_join(prog, NULL);
        return fail(m, "pthread_create");
    }
    pthread_join(prog, NULL);
    pthread_join(svc, NULL);
    if (t.rc_progress != 0)
        return -1;
    if (t.rc_service != 0)
        return fail(m, "the service thread's registrations failed");
    return 0;
}

/* ------------------------------------------------------------------ main */

static int member_open(member_t *m)
{
    uint64_t comm_id = 0x53434e00ull + (uint64_t)m->rank;
    if (stb_plugin_open(STRATA_PLUGIN_PATH, comm_id, 0, &m->plugin) != STRATA_OK)
        return fail(m, "cannot load the plugin");
    if (stb_collnet_open(m->plugin, m->version, comm_id, &m->cn) != STRATA_OK)
        return fail(m, "no CollNet v%d", m->version);
    int ndev = 0;
    if (stb_collnet_devices(m->cn, &ndev) != STRATA_OK || ndev < 1)
        return fail(m, "the CollNet has %d devices", ndev);
    return 0;
}

static void member_leave(member_t *m)
{
    region_deregister(m);
    stb_collnet_close_coll(m->cn, m->ccomm);
    m->ccomm = NULL;
}

/*
 * split: one member's handles differ (member_join). Every member's connect must fail, the
 * victim's included, none may hang: a member that succeeded while others failed would wait
 * for them forever in its first collective. Reported as a result of 0 ("connect failed
 * ..."): the test checks every member's message.
 */
static int scenario_split(member_t *m)
{
    uint64_t t0 = stu_time_ns();

    if (member_join(m) == 0)
        return fail(m, "connect succeeded although member %d saw other handles", victim());
    sts_ctl_result(m->fd, 0, "%s after %.1f s", m->err, (double)(stu_time_ns() - t0) / 1e9);
    return 1;
}

static int member_run(member_t *m)
{
    if (strcmp(m->scenario, "threads") == 0)
        return scenario_threads(m);
    if (strcmp(m->scenario, "split") == 0)
        return scenario_split(m);
    int cycles = strcmp(m->scenario, "cycles") == 0 ? m->cycles : 1, fds0 = 0;
    for (int c = 0; c < cycles; c++) {
        if (member_join(m) != 0 || region_register(m) != 0)
            return -1;
        int rc = 0;
        if (strcmp(m->scenario, "types") == 0)
            rc = scenario_types(m) || scenario_large(m, STRATA_FP32, (size_t)3 << 20, 0) ||
                 scenario_large(m, STRATA_BF16, 777777, 0) ||
                 scenario_large(m, STRATA_INT32, 100003, 1);
        else if (strcmp(m->scenario, "windows") == 0)
            rc = scenario_windows(m);
        else if (strcmp(m->scenario, "depth") == 0)
            rc = scenario_depth(m);
        else if (strcmp(m->scenario, "kill") == 0 || strcmp(m->scenario, "stall") == 0)
            return scenario_fault(m, strcmp(m->scenario, "kill") == 0);
        else if (strcmp(m->scenario, "cycles") == 0)
            rc = scenario_depth(m);
        else
            return fail(m, "unknown scenario %s", m->scenario);
        member_leave(m);
        if (rc != 0)
            return -1;
        if (c == 0)
            fds0 = sts_fd_count();
    }
    /* At most: the count after the first cycle may include a close still finishing in the
     * background (sts_fd_count_settle); a leak per cycle would still show many times over. */
    int fds = cycles > 1 ? sts_fd_count_settle(fds0, sts_deadline(CN_TIMEOUT_S)) : fds0;
    if (fds > fds0)
        return fail(m, "%d descriptors after %d cycles, %d after the first", fds, cycles, fds0);
    return 0;
}

int main(int argc, char **argv)
{
    member_t m = {.fd = -1};

    if (argc < 6) {
        fprintf(stderr, "usage: %s <ctl fd> <scenario> <nranks> <rank> <version> [cycles]\n",
                argv[0]);
        return 2;
    }
    m.fd = atoi(argv[1]);
    m.scenario = argv[2];
    m.nranks = atoi(argv[3]);
    m.rank = atoi(argv[4]);
    m.version = atoi(argv[5]);
    m.cycles = argc > 6 ? atoi(argv[6]) : 1;
    m.deadline = sts_deadline(CN_TIMEOUT_S * sts_timeout_scale());
    m.region = calloc(2 * CN_SLOTS, CN_SLOT_BYTES);
    if (m.nranks < 1 || m.nranks > CN_MAX_MEMBERS || m.region == NULL)
        return 2;
    const char *odd = getenv("STS_CN_ODD_ENV");
    if (odd != NULL && m.rank % 2 == 1 && strchr(odd, '=') != NULL) {
        char name[64];
        size_t len = (size_t)(strchr(odd, '=') - odd);
        if (len == 0 || len >= sizeof(name))
            return 2;
        memcpy(name, odd, len);
        name[len] = '\0';
        setenv(name, odd + len + 1, 1);
    }
    int rc = member_open(&m);
    if (rc == 0)
        rc = member_run(&m);
    if (rc <= 0)
        sts_ctl_result(m.fd, rc == 0 ? 0 : 1, "%s", rc == 0 ? "ok" : m.err);
    if (m.ccomm != NULL)
        member_leave(&m);
    stb_collnet_close(m.cn);
    stb_plugin_close(m.plugin);
    free(m.region);
    return rc < 0 ? 1 : 0;
}
