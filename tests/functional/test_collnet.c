/*
 * The plugin's CollNet (ncclCollNetPlugin_v11 / _v12) driven the way NCCL's proxy drives
 * it, across processes that act as nodes (tests/functional/helper_collnet.c is one member):
 * handles gathered here and handed to every member in NCCL's order (or permuted, so that
 * handle order and NCCL rank differ), connect on each member, the staging region registered
 * per channel and direction, every type x operator with padded counts several calls deep,
 * allgather and reduce-scatter windows, NCCL's depth and back-pressure, a member killed or
 * stalled mid-collective, 100 create/destroy cycles, NCCL's service and progress threads,
 * the GPU-memory staging path run on host buffers (STRATA_COLLNET_STAGE=1);
 * on loopback and across network namespaces. In this process: the devices mirror the net's,
 * reduceSupport, STRATA_COLLNET=0, bad handles, a group of one, the v10 and v9 tables.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tools/lib/tool_netns.h"
#include "nccl/net.h"
#include "sts_proc.h"
#include "sts_util.h"
#include "tools/lib/plugin_collnet.h"

#define CN_HELPER STRATA_BUILD_DIR "/tests/functional/helper_collnet"
#define CN_MAX 8
#define CN_WAIT_S 240.0
#define CN_ENV_MAX 6

typedef struct cn_job {
    const char *scenario;
    int nranks, version;
    int permute;                 /* handles reach connect in reverse NCCL-rank order */
    int cycles;
    int netns;                   /* 1: one network namespace per member */
    const char *qdisc;           /* netns: tc qdisc on every link, or NULL */
    const char *env[CN_ENV_MAX]; /* NAME=value for every member */
    int victim;                  /* kill / stall: the member that fails; -1 none */
} cn_job_t;

typedef struct cn_spawn_arg {
    char scenario[32], nranks[12], rank[12], version[12], cycles[12];
} cn_spawn_arg_t;

/* Runs inside a namespace: the helper, with the control socket as its descriptor. */
static int cn_exec_helper(void *varg, int ctl)
{
    cn_spawn_arg_t *a = varg;
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", ctl);
    fcntl(ctl, F_SETFD, 0);
    char *argv[] = {CN_HELPER, fd, a->scenario, a->nranks, a->rank, a->version, a->cycles,
                    NULL};
    execv(CN_HELPER, argv);
    return 127;
}

static void cn_env(const cn_job_t *job, int set)
{
    for (int i = 0; i < CN_ENV_MAX && job->env[i] != NULL; i++) {
        char name[64];
        const char *eq = strchr(job->env[i], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - job->env[i]), job->env[i]);
        if (set)
            setenv(name, eq + 1, 1);
        else
            unsetenv(name);
    }
    char v[16];
    snprintf(v, sizeof(v), "%d", job->victim);
    if (set && job->victim >= 0)
        setenv("STS_CN_VICTIM", v, 1);
    else
        unsetenv("STS_CN_VICTIM");
}

/* Spawns the members, brokers the handles, collects and checks every result. */
static void cn_run(const cn_job_t *job)
{
    const int N = job->nranks;
    sts_peer_t peers[CN_MAX];
    cn_spawn_arg_t args[CN_MAX];
    int fds[CN_MAX];
    stb_netns_t net;
    uint64_t deadline = sts_deadline(CN_WAIT_S * sts_timeout_scale());
    int failed = 0;

    assert_true(N >= 1 && N <= CN_MAX);
    const char *xport = getenv("STRATA_TRANSPORT");
    if (job->netns && xport != NULL && strcmp(xport, "ib") == 0) {
        /* the ib transport has no device in these namespaces (tcp and ucx run on their veth) */
        print_message("namespaces have no RDMA device; STRATA_TRANSPORT=%s: skipped\n", xport);
        skip();
    }
    if (job->netns) {
        if (stb_netns_create(&net, N < 2 ? 2 : N, 0) != STRATA_OK) {
            stb_netns_destroy(&net);
            skip();   /* no namespaces here (not root, or no kernel support) */
        }
        if (job->qdisc != NULL)
            for (int n = 0; n < N; n++)
                assert_int_equal(stb_netns_shape(&net, n, job->qdisc), STRATA_OK);
    }
    cn_env(job, 1);
    if (job->netns)
        setenv("STRATA_SOCKET_IFNAME", "=" STB_NETNS_IFNAME, 1);
    for (int r = 0; r < N; r++) {
        cn_spawn_arg_t *a = &args[r];
        snprintf(a->scenario, sizeof(a->scenario), "%s", job->scenario);
        snprintf(a->nranks, sizeof(a->nranks), "%d", N);
        snprintf(a->rank, sizeof(a->rank), "%d", r);
        snprintf(a->version, sizeof(a->version), "%d", job->version);
        snprintf(a->cycles, sizeof(a->cycles), "%d", job->cycles > 0 ? job->cycles : 1);
        if (job->netns) {
            assert_int_equal(sts_peer_fork(&peers[r], &net, r, cn_exec_helper, a), 0);
            fds[r] = peers[r].fd;
        } else {
            const char *argv[] = {a->scenario, a->nranks, a->rank, a->version, a->cycles, NULL};
            assert_int_equal(sts_peer_spawn(&peers[r], CN_HELPER, argv), 0);
            fds[r] = peers[r].fd;
        }
    }
    if (job->netns)
        unsetenv("STRATA_SOCKET_IFNAME");
    cn_env(job, 0);
    for (int c = 0; c < (job->cycles > 0 ? job->cycles : 1) && !failed; c++) {
        uint8_t handles[CN_MAX][STB_PLUGIN_HANDLE_SIZE];
        for (int r = 0; r < N && !failed; r++) {
            if (sts_ctl_expect(fds[r], STS_CTL_HANDLE, handles[r], STB_PLUGIN_HANDLE_SIZE,
                               deadline) != 0) {
                char msg[512];
                sts_ctl_wait_result(fds[r], msg, sizeof(msg), sts_deadline(1));
                print_error("member %d sent no handle in cycle %d: %s\n", r, c, msg);
                failed++;
            }
        }
        for (int r = 0; r < N && !failed; r++)
            for (int i = 0; i < N; i++) {
                int owner = job->permute ? N - 1 - i : i;
                assert_int_equal(sts_ctl_send(fds[r], STS_CTL_HANDLE, handles[owner],
                                              STB_PLUGIN_HANDLE_SIZE), 0);
            }
    }
    int kill_victim = job->victim >= 0 && strcmp(job->scenario, "kill") == 0;
    int split = strcmp(job->scenario, "split") == 0;
    for (int i = 0; i < N; i++) {
        /* the victim first: a kill happens once the others are inside the collective */
        int r = job->victim >= 0 ? (job->victim + i) % N : i;
        char msg[1024];
        if (i == 1 && kill_victim) {
            struct timespec ts = {0, 300 * 1000 * 1000};
            nanosleep(&ts, NULL);
            kill(peers[job->victim].pid, SIGKILL);
        }
        int32_t st = sts_ctl_wait_result(fds[r], msg, sizeof(msg), deadline);
        print_message("member %d: %d %s\n", r, (int)st, msg);
        if (st != 0)
            failed++;
        else if (split && strncmp(msg, "connect failed", 14) != 0)
            failed++;                        /* split: every member, the victim too */
        else if (!split && job->victim >= 0 && r != job->victim &&
                 strncmp(msg, "error after", 11) != 0)
            failed++;
    }
    for (int r = 0; r < N; r++) {
        if (r == job->victim)
            sts_peer_kill(&peers[r]);
        int code = sts_peer_wait(&peers[r], deadline);
        if (code != 0 && r != job->victim) {
            print_error("member %d exited with %d\n", r, code);
            failed++;
        }
    }
    if (job->netns)
        stb_netns_destroy(&net);
    assert_int_equal(failed, 0);
}

static int cn_teardown(void **state)
{
    sts_peer_kill_all();
    return 0;
}

/* ------------------------------------------------------------------ across processes */

static void test_types_2_v11(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 2, .version = 11, .victim = -1});
}

/* Small pieces: every ring step pipelined in 4 KiB pieces. */
static void test_types_3_v12_pieces(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 3, .version = 12, .victim = -1,
                       .env = {"STRATA_COLLNET_CHUNK=4K"}});
}

/* Recursive doubling on a group that is not a power of two (fold and unfold). */
static void test_types_5_recursive(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 5, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_ALGO=recursive"}});
}

static void test_types_4_ring(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 4, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_ALGO=ring", "STRATA_COLLNET_CHUNK=16K"}});
}

/* Pieces from the model (STRATA_COLLNET_CHUNK=0): a net α of 10 ns makes sqrt(block·α·γ) a
 * few KiB, so the ring's steps are cut into several pieces of that size. */
static void test_types_4_model_pieces(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 4, .version = 12, .victim = -1,
                       .env = {"STRATA_COLLNET_ALGO=ring", "STRATA_COLLNET_CHUNK=0",
                               "STRATA_NET_ALPHA_US=0.01"}});
}

/* The GPU path without a GPU: host buffers staged through the self link (IN, RUN, OUT). */
static void test_types_3_staged(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 3, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_STAGE=1", "STRATA_COLLNET_CHUNK=8K"}});
}

static void test_windows_4_staged(void **state)
{
    cn_run(&(cn_job_t){.scenario = "windows", .nranks = 4, .version = 12, .victim = -1,
                       .env = {"STRATA_COLLNET_STAGE=1"}});
}

/* Windows with NCCL ranks in another order than the handles. */
static void test_windows_8_permuted(void **state)
{
    cn_run(&(cn_job_t){.scenario = "windows", .nranks = 8, .version = 12, .permute = 1,
                       .victim = -1});
}

static void test_windows_4_recursive(void **state)
{
    cn_run(&(cn_job_t){.scenario = "windows", .nranks = 4, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_ALGO=recursive", "STRATA_COLLNET_CHUNK=4K"}});
}

/* 64 calls deep with test() sleeping in poll() when nothing moves (what auto does where
 * the members take every core), and the same types with test() returning at once (what it
 * does on a host with cores to spare, NCCL's assumption): both ways, whatever the machine. */
static void test_depth_3_poll(void **state)
{
    cn_run(&(cn_job_t){.scenario = "depth", .nranks = 3, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_WAIT=poll"}});
}

/* STRATA_COLLNET_INFLIGHT: every call alone (a cap below any call's bytes: only the oldest
 * runs) on the even members, 4 at once whatever their size (0) on the odd ones; members
 * that run different numbers at once still post in the same order. And both on all. */
static void test_depth_4_inflight_mixed(void **state)
{
    cn_run(&(cn_job_t){.scenario = "depth", .nranks = 4, .version = 12, .victim = -1,
                       .env = {"STRATA_COLLNET_INFLIGHT=1",
                               "STS_CN_ODD_ENV=STRATA_COLLNET_INFLIGHT=0"}});
}

static void test_types_3_inflight_one(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 3, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_INFLIGHT=1"}});
}

static void test_types_3_inflight_uncapped(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 3, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_INFLIGHT=0"}});
}

/* STRATA_COLLNET_ORDER: member 0's order is everyone's. Rings of 4 KiB pieces (several a
 * step) posted piece by piece on member 0 and step by step on the odd members' own setting,
 * and the reverse: a member that followed its own setting would pair its pieces with the
 * wrong ones of its neighbours, and the results would differ from the reference. */
static void test_types_4_order_piece_mixed(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 4, .version = 12, .victim = -1,
                       .env = {"STRATA_COLLNET_ALGO=ring", "STRATA_COLLNET_CHUNK=4K",
                               "STRATA_COLLNET_ORDER=piece",
                               "STS_CN_ODD_ENV=STRATA_COLLNET_ORDER=step"}});
}

static void test_windows_4_order_step_mixed(void **state)
{
    cn_run(&(cn_job_t){.scenario = "windows", .nranks = 4, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_CHUNK=4K", "STRATA_COLLNET_ORDER=step",
                               "STS_CN_ODD_ENV=STRATA_COLLNET_ORDER=piece"}});
}

static void test_types_3_spin(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 3, .version = 11, .victim = -1,
                       .env = {"STRATA_COLLNET_WAIT=spin"}});
}

/* A member dies mid-collective: the others' test() fails, naming a member. */
static void test_kill_4(void **state)
{
    cn_run(&(cn_job_t){.scenario = "kill", .nranks = 4, .version = 11, .victim = 2});
}

/* A member stops calling the plugin: the others fail after STRATA_TIMEOUT. */
static void test_stall_3(void **state)
{
    cn_run(&(cn_job_t){.scenario = "stall", .nranks = 3, .version = 11, .victim = 1,
                       .env = {"STRATA_TIMEOUT=3000"}});
}

/* One member's view of the handles differs: connect fails on every member, bounded. */
static void test_split_handles_3(void **state)
{
    cn_run(&(cn_job_t){.scenario = "split", .nranks = 3, .version = 11, .victim = 1,
                       .env = {"STRATA_TIMEOUT=20000"}});
}

static void test_cycles_2(void **state)
{
    const char *env = getenv("STS_CYCLES");
    cn_run(&(cn_job_t){.scenario = "cycles", .nranks = 2, .version = 11, .victim = -1,
                       .cycles = env != NULL ? atoi(env) : 100});
}

static void test_threads_3(void **state)
{
    cn_run(&(cn_job_t){.scenario = "threads", .nranks = 3, .version = 11, .victim = -1});
}

static void test_netns_types_2(void **state)
{
    cn_run(&(cn_job_t){.scenario = "types", .nranks = 2, .version = 11, .netns = 1,
                       .victim = -1});
}

static void test_netns_windows_4_shaped(void **state)
{
    cn_run(&(cn_job_t){.scenario = "windows", .nranks = 4, .version = 12, .netns = 1,
                       .qdisc = "tbf rate 2gbit burst 64kb latency 50ms", .victim = -1});
}

static void test_netns_kill_3(void **state)
{
    cn_run(&(cn_job_t){.scenario = "kill", .nranks = 3, .version = 11, .netns = 1,
                       .victim = 0});
}

/* ------------------------------------------------------------------ in this process */

typedef struct cn_local {
    stb_plugin_t *plugin;
    stb_collnet_t *cn;
} cn_local_t;

static void cn_local_open(cn_local_t *l, int version)
{
    memset(l, 0, sizeof(*l));
    assert_int_equal(stb_plugin_open(STRATA_PLUGIN_PATH, 0x1234, 0, &l->plugin), STRATA_OK);
    assert_int_equal(stb_collnet_open(l->plugin, version, 0x1234, &l->cn), STRATA_OK);
}

static void cn_local_close(cn_local_t *l)
{
    stb_collnet_close(l->cn);
    stb_plugin_close(l->plugin);
}

/* The CollNet's devices are the net's, one for one; maxCollBytes is valid. */
static void test_devices_mirror(void **state)
{
    for (int v = 11; v <= 12; v++) {
        cn_local_t l;
        int ndev = 0, cndev = 0;
        cn_local_open(&l, v);
        assert_int_equal(stb_plugin_devices(l.plugin, &ndev), STRATA_OK);
        assert_int_equal(stb_collnet_devices(l.cn, &cndev), STRATA_OK);
        assert_int_equal(cndev, ndev);
        for (int d = 0; d < ndev; d++) {
            stb_plugin_props_t np, cp;
            int rail = -2, plane = -2;
            assert_int_equal(stb_plugin_props(l.plugin, d, &np), STRATA_OK);
            assert_int_equal(stb_collnet_props_get(l.cn, d, &cp, &rail, &plane), STRATA_OK);
            assert_string_equal(cp.name, np.name);
            assert_int_equal(cp.ptr_support, np.ptr_support);
            assert_int_equal(cp.speed_mbps, np.speed_mbps);
            assert_int_equal(cp.guid, np.guid);
            assert_true(cp.max_coll_bytes > 0 && cp.max_coll_bytes <= (1ull << 40));
            assert_int_equal(rail, v == 12 ? d : -1);    /* no rail map: NIC d is rail d */
            assert_int_equal(plane, -1);
        }
        cn_local_close(&l);
    }
}

/* STRATA_RAIL_MAP numbers the NICs local ranks use in order of first use. */
static void test_rail_from_map(void **state)
{
    cn_local_t l;
    int ndev = 0, rail = -2, plane = -2;
    stb_plugin_props_t p;

    setenv("STRATA_RAIL_MAP", "0,0", 1);
    cn_local_open(&l, 12);
    assert_int_equal(stb_collnet_devices(l.cn, &ndev), STRATA_OK);
    assert_int_equal(stb_collnet_props_get(l.cn, 0, &p, &rail, &plane), STRATA_OK);
    assert_int_equal(rail, 0);
    if (ndev > 1) {
        assert_int_equal(stb_collnet_props_get(l.cn, 1, &p, &rail, &plane), STRATA_OK);
        assert_int_equal(rail, -1);                       /* no local rank uses NIC 1 */
    }
    cn_local_close(&l);
    unsetenv("STRATA_RAIL_MAP");
}

/*
 * v12's rail and plane from STRATA_IB_HCA's hca:port:rail:plane: over ib (make test-rdma)
 * device 0's entry sets both; the other transports ignore the variable (rail d, no plane).
 */
static void test_plane_from_ib_hca(void **state)
{
    const char *xport = getenv("STRATA_TRANSPORT"), *old = getenv("STRATA_IB_HCA");
    int ib = xport != NULL && strcmp(xport, "ib") == 0, rail = -2, plane = -2;
    char saved[256] = "", spec[300];
    stb_plugin_props_t p;
    cn_local_t l;

    if (old != NULL)
        snprintf(saved, sizeof(saved), "%s", old);
    cn_local_open(&l, 12);                     /* device 0's name and port, as configured */
    assert_int_equal(stb_collnet_props_get(l.cn, 0, &p, &rail, &plane), STRATA_OK);
    cn_local_close(&l);
    snprintf(spec, sizeof(spec), "=%s:%d:3:2", p.name, p.port > 0 ? p.port : 1);
    setenv("STRATA_IB_HCA", spec, 1);
    cn_local_open(&l, 12);
    assert_int_equal(stb_collnet_props_get(l.cn, 0, &p, &rail, &plane), STRATA_OK);
    print_message("STRATA_IB_HCA=%s over %s: rail %d plane %d\n", spec, ib ? "ib" : "not ib",
                  rail, plane);
    assert_int_equal(rail, ib ? 3 : 0);
    assert_int_equal(plane, ib ? 2 : -1);
    cn_local_close(&l);
    if (old != NULL)
        setenv("STRATA_IB_HCA", saved, 1);
    else
        unsetenv("STRATA_IB_HCA");
}

/* Every type NCCL has with every operator it asks about; "no" (never an error) beyond. */
static void test_reduce_support(void **state)
{
    cn_local_t l;
    cn_local_open(&l, 11);
    for (int t = 0; t < 14; t++)
        for (int op = 0; op < 6; op++) {
            int s = -1;
            assert_int_equal(stb_collnet_reduce_support(l.cn, t, op, &s), STRATA_OK);
            assert_int_equal(s, t < 12 && op < 4);
        }
    cn_local_close(&l);
}

/* STRATA_COLLNET=0: no CollNet devices, and the net still works. */
static void test_disabled(void **state)
{
    cn_local_t l;
    int ndev = -1, netdev = 0;
    setenv("STRATA_COLLNET", "0", 1);
    cn_local_open(&l, 11);
    assert_int_equal(stb_collnet_devices(l.cn, &ndev), STRATA_OK);
    assert_int_equal(ndev, 0);
    assert_int_equal(stb_plugin_devices(l.plugin, &netdev), STRATA_OK);
    assert_true(netdev >= 1);
    cn_local_close(&l);
    unsetenv("STRATA_COLLNET");
}

/* Handles that are not ours fail connect (and free the listen comm: LeakSanitizer). */
static void test_bad_handles(void **state)
{
    cn_local_t l;
    uint8_t mine[STB_PLUGIN_HANDLE_SIZE], junk[STB_PLUGIN_HANDLE_SIZE];
    void *handles[2] = {mine, junk}, *lcomm = NULL, *ccomm = NULL;

    cn_local_open(&l, 11);
    assert_int_equal(stb_collnet_listen(l.cn, 0, mine, &lcomm), STRATA_OK);
    memset(junk, 0x3c, sizeof(junk));
    assert_int_not_equal(stb_collnet_connect(l.cn, handles, 2, 0, lcomm, &ccomm), STRATA_OK);
    assert_null(ccomm);
    assert_int_equal(stb_collnet_listen(l.cn, 0, mine, &lcomm), STRATA_OK);
    handles[1] = mine;                                     /* the same listener twice */
    assert_int_not_equal(stb_collnet_connect(l.cn, handles, 2, 0, lcomm, &ccomm), STRATA_OK);
    cn_local_close(&l);
}

/* A group of one: connect alone, allreduce and allgather are copies. */
static void test_single_member(void **state)
{
    cn_local_t l;
    uint8_t handle[STB_PLUGIN_HANDLE_SIZE];
    void *handles[1] = {handle}, *lcomm = NULL, *ccomm = NULL, *mh = NULL, *req = NULL;
    float buf[64];
    int done = 0;

    cn_local_open(&l, 11);
    assert_int_equal(stb_collnet_listen(l.cn, 0, handle, &lcomm), STRATA_OK);
    assert_int_equal(stb_collnet_connect(l.cn, handles, 1, 0, lcomm, &ccomm), STRATA_OK);
    stb_collnet_close_listen(l.cn, lcomm);
    for (int i = 0; i < 32; i++)
        buf[i] = (float)i;
    assert_int_equal(stb_collnet_reg(l.cn, ccomm, buf, sizeof(buf), &mh), STRATA_OK);
    assert_int_equal(stb_collnet_iallreduce(l.cn, ccomm, buf, buf + 32, 32, STRATA_FP32,
                                            STRATA_SUM, mh, mh, &req), STRATA_OK);
    assert_non_null(req);
    while (!done)
        assert_int_equal(stb_collnet_test(l.cn, req, &done, NULL), STRATA_OK);
    for (int i = 0; i < 32; i++)
        assert_true(buf[32 + i] == (float)i);
    void *flush = (void *)1;
    assert_int_equal(stb_collnet_iflush(l.cn, ccomm, buf, 4, mh, &flush), STRATA_OK);
    assert_null(flush);                                    /* host memory: nothing to flush */
    assert_int_equal(stb_collnet_dereg(l.cn, ccomm, mh), STRATA_OK);
    stb_collnet_close_coll(l.cn, ccomm);
    cn_local_close(&l);
}

/*
 * ncclCollNetPlugin_v10 and _v9 (NCCL 2.23 to 2.27): no context, no finalize. Looked up in the
 * library the way those NCCL releases do; a group of one: listen, connect, an allreduce and
 * an allgather window, close.
 */
static void cn_compat_case(void *dl, const char *sym)
{
    const ncclCollNet_v10_t *cn = dlsym(dl, sym);   /* v9's table has v10's layout */
    uint8_t handle[NCCL_NET_HANDLE_MAXSIZE];
    void *handles[1] = {handle}, *lcomm = NULL, *ccomm = NULL, *mh = NULL, *req = NULL;
    ncclNetProperties_v10_t props;
    float buf[64];
    int ndev = 0, done = 0;

    assert_non_null(cn);
    assert_int_equal(cn->init(NULL), ncclSuccess);
    assert_int_equal(cn->devices(&ndev), ncclSuccess);
    assert_true(ndev >= 1);
    assert_int_equal(cn->getProperties(0, &props), ncclSuccess);
    assert_true(props.maxCollBytes > 0 && props.name != NULL);
    assert_int_equal(cn->listen(0, handle, &lcomm), ncclSuccess);
    assert_int_equal(cn->connect(handles, 1, 0, lcomm, &ccomm), ncclSuccess);
    assert_int_equal(cn->closeListen(lcomm), ncclSuccess);
    for (int i = 0; i < 32; i++)
        buf[i] = (float)(i * 3);
    assert_int_equal(cn->regMr(ccomm, buf, sizeof(buf), NCCL_PTR_HOST, &mh), ncclSuccess);
    assert_int_equal(cn->iallreduce(ccomm, buf, buf + 32, 32, ncclFloat32, ncclSum, mh, mh, &req),
                     ncclSuccess);
    while (!done)
        assert_int_equal(cn->test(req, &done, NULL), ncclSuccess);
    for (int i = 0; i < 32; i++)
        assert_true(buf[32 + i] == (float)(i * 3));
    ncclNetSGE_v10_t part = {.mhandle = mh, .address = buf + 32, .size = 64};
    req = NULL;
    done = 0;
    assert_int_equal(cn->iallgather(ccomm, buf, 1, &part, 128, 0, 64, mh, &req), ncclSuccess);
    while (!done)
        assert_int_equal(cn->test(req, &done, NULL), ncclSuccess);
    assert_memory_equal(buf + 32, buf, 64);
    assert_int_equal(cn->deregMr(ccomm, mh), ncclSuccess);
    assert_int_equal(cn->closeColl(ccomm), ncclSuccess);
}

/* Runs after every other case of this process that loads the plugin: versions before v11
 * have no finalize, so their state lives as long as the library, which this case keeps
 * loaded (as test_plugin_versions does). */
static void test_compat_v10_v9(void **state)
{
    void *dl = dlopen(STRATA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    cn_compat_case(dl, "ncclCollNetPlugin_v10");
    cn_compat_case(dl, "ncclCollNetPlugin_v9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices_mirror),
        cmocka_unit_test(test_rail_from_map),
        cmocka_unit_test(test_plane_from_ib_hca),
        cmocka_unit_test(test_reduce_support),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_bad_handles),
        cmocka_unit_test(test_single_member),
        cmocka_unit_test(test_compat_v10_v9),
        cmocka_unit_test_teardown(test_types_2_v11, cn_teardown),
        cmocka_unit_test_teardown(test_types_3_v12_pieces, cn_teardown),
        cmocka_unit_test_teardown(test_types_5_recursive, cn_teardown),
        cmocka_unit_test_teardown(test_types_4_ring, cn_teardown),
        cmocka_unit_test_teardown(test_types_4_model_pieces, cn_teardown),
        cmocka_unit_test_teardown(test_types_3_staged, cn_teardown),
        cmocka_unit_test_teardown(test_windows_4_staged, cn_teardown),
        cmocka_unit_test_teardown(test_windows_8_permuted, cn_teardown),
        cmocka_unit_test_teardown(test_windows_4_recursive, cn_teardown),
        cmocka_unit_test_teardown(test_depth_3_poll, cn_teardown),
        cmocka_unit_test_teardown(test_depth_4_inflight_mixed, cn_teardown),
        cmocka_unit_test_teardown(test_types_3_inflight_one, cn_teardown),
        cmocka_unit_test_teardown(test_types_3_inflight_uncapped, cn_teardown),
        cmocka_unit_test_teardown(test_types_4_order_piece_mixed, cn_teardown),
        cmocka_unit_test_teardown(test_windows_4_order_step_mixed, cn_teardown),
        cmocka_unit_test_teardown(test_types_3_spin, cn_teardown),
        cmocka_unit_test_teardown(test_kill_4, cn_teardown),
        cmocka_unit_test_teardown(test_stall_3, cn_teardown),
        cmocka_unit_test_teardown(test_split_handles_3, cn_teardown),
        cmocka_unit_test_teardown(test_cycles_2, cn_teardown),
        cmocka_unit_test_teardown(test_threads_3, cn_teardown),
        cmocka_unit_test_teardown(test_netns_types_2, cn_teardown),
        cmocka_unit_test_teardown(test_netns_windows_4_shaped, cn_teardown),
        cmocka_unit_test_teardown(test_netns_kill_3, cn_teardown),
    };
    if (getenv("STS_FILTER") != NULL)       /* one case: STS_FILTER=test_kill_4 */
        cmocka_set_test_filter(getenv("STS_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
