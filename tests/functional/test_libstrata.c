/*
 * The library as a user gets it: this file includes only <strata/strata.h> (compiled with
 * include/ alone on its path, none of the tree's internal headers) and links only
 * libstrata.so (the Makefile's rule for it says so). It checks the version the library
 * reports, runs collectives across two processes in two emulated nodes, and reads the
 * dynamic symbol tables: libstrata.so and libstrata.a let out strata_* only, the NCCL plugin
 * only ncclNetPlugin_v*, ncclCollNetPlugin_v*, ncclTunerPlugin_v* and its telemetry readers
 * (strata_net_stats_*, <strata/net_stats.h>).
 *
 * LIBDIR (set by the Makefile, or by make test-install to an installed tree) holds the
 * libraries whose symbols are read.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#ifndef LIBDIR
#error "LIBDIR: the directory of libstrata.so and libnccl-net-strata.so"
#endif

#define NRANKS 2
#define COUNT 1031                  /* odd, not divisible by the rank count */
#define RANK_TIMEOUT_MS 60000       /* the library's bound on init and each collective */
#define RANK_ALARM_S 120            /* a rank that outlives every bound kills itself */
#define WAIT_RANKS_S 180            /* the parent's bound on both ranks */

/* One rank: init from an explicit config, allreduce, iallreduce + wait, checks. 0 if right. */
static int rank_main(int rank, const char *root_addr, int root_fd)
{
    strata_comm_config_t cfg;
    strata_comm_t *comm = NULL;
    int32_t send[COUNT], recv[COUNT];
    strata_request_t *req = NULL;
    int wrong = 0;

    alarm(RANK_ALARM_S);
    strata_comm_config_init(&cfg);
    cfg.rank = rank;
    cfg.nranks = NRANKS;
    cfg.node_id = rank == 0 ? "libstrata-test-a" : "libstrata-test-b";
    cfg.root_addr = root_addr;
    cfg.root_fd = rank == 0 ? root_fd : -1;
    cfg.timeout_ms = RANK_TIMEOUT_MS;
    if (rank != 0)
        close(root_fd);
    strata_status_t s = strata_comm_init_config(&cfg, &comm);
    if (s != STRATA_OK) {
        fprintf(stderr, "rank %d: init: %s\n", rank, strata_status_str(s));
        return 1;
    }
    if (strata_comm_rank(comm) != rank || strata_comm_nranks(comm) != NRANKS ||
        strata_comm_nnodes(comm) != NRANKS) {
        fprintf(stderr, "rank %d: comm says rank %d of %d in %d nodes\n", rank,
                strata_comm_rank(comm), strata_comm_nranks(comm), strata_comm_nnodes(comm));
        wrong++;
    }
    for (int i = 0; i < COUNT; i++)
        send[i] = (rank + 1) * i;
    s = strata_allreduce(send, recv, COUNT, STRATA_INT32, STRATA_SUM, comm);
    for (int i = 0; s == STRATA_OK && i < COUNT; i++)
        wrong += recv[i] != 3 * i;   /* (0 + 1) * i + (1 + 1) * i */
    if (s == STRATA_OK)
        s = strata_iallreduce(send, send, COUNT, STRATA_INT32, STRATA_MAX, comm, &req);
    if (s == STRATA_OK)
        s = strata_wait(req);
    for (int i = 0; s == STRATA_OK && i < COUNT; i++)
        wrong += send[i] != 2 * i;
    const char *algo = strata_comm_algo_for(comm, "allreduce", sizeof(send));
    if (strcmp(algo, "ring") != 0 && strcmp(algo, "recursive") != 0 &&
        strcmp(algo, "hierarchical") != 0 && strcmp(algo, "leader") != 0) {
        fprintf(stderr, "rank %d: strata_comm_algo_for says '%s'\n", rank, algo);
        wrong++;
    }
    if (strcmp(strata_comm_algo_for(comm, "alltoall", 8), "?") != 0)
        wrong++;
    if (s != STRATA_OK)
        fprintf(stderr, "rank %d: %s (%s)\n", rank, strata_status_str(s), strata_comm_error(comm));
    if (wrong != 0)
        fprintf(stderr, "rank %d: %d wrong values\n", rank, wrong);
    strata_comm_destroy(comm);
    return s != STRATA_OK || wrong != 0;
}

static void test_version(void **state)
{
    char text[32];

    assert_int_equal(strata_version(), STRATA_VERSION_CODE);
    assert_int_equal(STRATA_VERSION_CODE,
                     STRATA_VERSION(STRATA_VERSION_MAJOR, STRATA_VERSION_MINOR,
                                    STRATA_VERSION_PATCH));
    snprintf(text, sizeof(text), "%d.%d.%d", STRATA_VERSION_MAJOR, STRATA_VERSION_MINOR,
             STRATA_VERSION_PATCH);
    assert_string_equal(text, STRATA_VERSION_STRING);
    assert_true(STRATA_VERSION(0, 10, 0) > STRATA_VERSION(0, 9, 99));
    assert_string_equal(strata_status_str(STRATA_ERR_REMOTE), "STRATA_ERR_REMOTE");
    assert_int_equal(strata_dtype_size(STRATA_BF16), 2);
}

/* Two processes, two emulated nodes: the collectives cross the library's transport. */
static void test_two_ranks(void **state)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    char root_addr[64];
    pid_t pids[NRANKS];
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);   /* port 0 */
    assert_int_equal(listen(lfd, NRANKS), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(root_addr, sizeof(root_addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    for (int r = 0; r < NRANKS; r++) {
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0)
            _exit(rank_main(r, root_addr, lfd));
    }
    close(lfd);

    int failed = 0, left = NRANKS;
    time_t deadline = time(NULL) + WAIT_RANKS_S;
    while (left > 0 && time(NULL) < deadline) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p <= 0) {
            usleep(20000);
            continue;
        }
        for (int r = 0; r < NRANKS; r++) {
            if (pids[r] != p)
                continue;
            pids[r] = 0;
            left--;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                print_error("rank %d: %s %d\n", r, WIFEXITED(st) ? "exit" : "signal",
                            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
                failed++;
            }
        }
    }
    for (int r = 0; r < NRANKS; r++) {
        if (pids[r] > 0) {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], NULL, 0);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

/* name starts with prefix; a prefix ending in "_v" (ncclNetPlugin_v) must be followed by digits. */
static int prefix_match(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0)
        return 0;
    if (n < 2 || strcmp(prefix + n - 2, "_v") != 0)
        return 1;
    return name[n] != '\0' && strspn(name + n, "0123456789") == strlen(name + n);
}

/*
 * Runs `nm ARGS LIBDIR/FILE` and checks every defined symbol it lists: each must match one
 * of the prefixes (a symbol version node such as STRATA_0 aside). Returns how many matched.
 */
static int check_symbols(const char *nm_args, const char *file, const char *const *prefixes,
                         const char *version_node)
{
    char cmd[512], line[512];
    int good = 0, bad = 0;

    snprintf(cmd, sizeof(cmd), "nm %s '%s/%s' 2>&1", nm_args, LIBDIR, file);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p) != NULL) {
        char addr[64], type[8], name[256];
        if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
            continue;   /* blank lines and "libstrata.o:" in an archive's listing */
        name[strcspn(name, "@")] = '\0';   /* strata_wait@@STRATA_0 */
        if (version_node != NULL && strcmp(type, "A") == 0 && strcmp(name, version_node) == 0)
            continue;
        int ok = 0;
        for (int i = 0; prefixes[i] != NULL && !ok; i++)
            ok = prefix_match(name, prefixes[i]);
        if (ok) {
            good++;
        } else {
            print_error("%s exports %s (%s)\n", file, name, type);
            bad++;
        }
    }
    assert_int_equal(pclose(p), 0);
    assert_int_equal(bad, 0);
    return good;
}

static const char *const strata_prefix[] = {"strata_", NULL};

static void test_shared_exports(void **state)
{
    char cmd[512], line[512];
    int soname_ok = 0;
    char want[64];

    /* Every function of the public API, and the version node named after the major. */
    assert_true(check_symbols("-D --defined-only", "libstrata.so", strata_prefix, "STRATA_0") >=
                30);
    snprintf(want, sizeof(want), "libstrata.so.%d", STRATA_VERSION_MAJOR);
    snprintf(cmd, sizeof(cmd), "objdump -p '%s/libstrata.so'", LIBDIR);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p) != NULL) {
        char key[32], value[128];
        if (sscanf(line, "%31s %127s", key, value) == 2 && strcmp(key, "SONAME") == 0)
            soname_ok = strcmp(value, want) == 0;
    }
    assert_int_equal(pclose(p), 0);
    assert_true(soname_ok);
}

static void test_static_exports(void **state)
{
    assert_true(check_symbols("-g --defined-only", "libstrata.a", strata_prefix, NULL) >= 30);
}

/*
 * The NCCL plugin links util, transport and plugin objects only and lets out NCCL's names
 * and the telemetry readers.
 */
static void test_plugin_exports(void **state)
{
    static const char *const nccl[] = {"ncclNetPlugin_v", "ncclCollNetPlugin_v",
                                       "ncclTunerPlugin_v", "strata_net_stats_", NULL};
    assert_true(check_symbols("-D --defined-only", "libnccl-net-strata.so", nccl, NULL) >= 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_shared_exports),
        cmocka_unit_test(test_static_exports),
        cmocka_unit_test(test_plugin_exports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
