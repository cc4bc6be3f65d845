/*
 * One binary for every node: the plugin and libstrata.so load and run over tcp where
 * libibverbs and UCX cannot be loaded, and naming ib or ucx then fails saying why.
 *
 * The libraries are made unloadable without root: a directory on LD_LIBRARY_PATH holds
 * files named libibverbs.so.1, libucp.so.0, libuct.so.0 and libucs.so.0 that are not ELF
 * (4 KiB of zeros). The dynamic loader takes the first file of a name it finds on that
 * path and fails on it ("invalid ELF header") instead of searching on, as dlopen fails
 * for a missing library; so a process started with that path cannot load them at all,
 * neither as a dependency (which would stop the plugin's dlopen or the program's start)
 * nor by the transports' run-time loaders. Each case runs a fresh process (the loader
 * reads LD_LIBRARY_PATH at start) under timeout(1), STRATA_TRANSPORT removed unless set:
 *
 *   strata-doctor: loads the plugin as NCCL does (dlopen, init, devices), connects a
 *     device to itself and moves 1 MiB through it, checking the bytes; and says per
 *     transport whether its library loaded.
 *   test_libstrata: a program linked with libstrata.so; two ranks in two processes run
 *     collectives and check every value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sts_util.h"
#include "transport/transport.h"

/* Files the loader must not load, one per library name it could look for. */
static const char *const broken_libs[] = {"libibverbs.so.1", "libucp.so.0", "libuct.so.0",
                                          "libucs.so.0"};
#define BROKEN_BYTES 4096       /* past an ELF header's size: "invalid ELF header" */
#define CHILD_TIMEOUT_S 240     /* timeout(1) on each child; the ranks bound themselves */
#define OUTPUT_MAX (256 * 1024) /* kept of a child's output */

static char libdir[64];        /* the directory of broken libraries */
static char sysdir[64];        /* an empty sysfs root for strata-doctor: no RDMA devices */

static int setup(void **state)
{
    snprintf(libdir, sizeof(libdir), "/tmp/strata-nolibs-XXXXXX");
    snprintf(sysdir, sizeof(sysdir), "/tmp/strata-nosys-XXXXXX");
    if (mkdtemp(libdir) == NULL || mkdtemp(sysdir) == NULL)
        return -1;
    static char zeros[BROKEN_BYTES];
    for (size_t i = 0; i < sizeof(broken_libs) / sizeof(broken_libs[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", libdir, broken_libs[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, zeros, sizeof(zeros)) != (ssize_t)sizeof(zeros))
            return -1;
        close(fd);
    }
    return 0;
}

static int teardown(void **state)
{
    for (size_t i = 0; i < sizeof(broken_libs) / sizeof(broken_libs[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", libdir, broken_libs[i]);
        unlink(path);
    }
    rmdir(libdir);
    rmdir(sysdir);
    return 0;
}

/*
 * Runs cmd (a shell command line) with the broken libraries first on LD_LIBRARY_PATH,
 * STRATA_TRANSPORT unset and then the assignments in env ("" for none); its stdout and
 * stderr go to *out (malloc'd). Returns its exit status, -1 when it did not exit normally.
 */
static int run_nolibs(const char *env, const char *cmd, char **out)
{
    char line[2048];
    const char *path = getenv("LD_LIBRARY_PATH");
    int secs = (int)(CHILD_TIMEOUT_S * sts_timeout_scale());

    snprintf(line, sizeof(line), "env -u STRATA_TRANSPORT %s LD_LIBRARY_PATH='%s%s%s' "
             "timeout -s KILL %d %s 2>&1", env, libdir, path ? ":" : "", path ? path : "", secs,
             cmd);
    FILE *p = popen(line, "r");
    assert_non_null(p);
    char *buf = calloc(1, OUTPUT_MAX + 1);
    assert_non_null(buf);
    size_t have = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0) {
        size_t keep = n < OUTPUT_MAX - have ? n : OUTPUT_MAX - have;
        memcpy(buf + have, chunk, keep);
        have += keep;
    }
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_in(const char *out, const char *want)
{
    if (strstr(out, want) == NULL) {
        print_error("expected \"%s\" in the output:\n%s\n", want, out);
        fail();
    }
}

static int built_in(const char *name)
{
    return stt_registry_find(name) != NULL;
}

/* The plugin loads, inits with tcp, and moves 1 MiB through a connection to itself. */
static void test_plugin_runs_without_libraries(void **state)
{
    char cmd[512], *out;

    snprintf(cmd, sizeof(cmd), "'%s/bin/strata-doctor' -v --sysfs '%s' --plugin '%s'",
             STRATA_BUILD_DIR, sysdir, STRATA_PLUGIN_PATH);
    int rc = run_nolibs("STRATA_DEBUG=INFO", cmd, &out);
    if (built_in("ib")) {
        /* the doctor's own check, and the plugin's INFO line */
        expect_in(out, "library ib: libibverbs.so.1 not loadable:");
        expect_in(out, "ib: libibverbs.so.1 not loadable:");
        expect_in(out, "invalid ELF header; the ib transport is unavailable");
    }
    if (built_in("ucx"))
        expect_in(out, "library ucx: libucp.so.0 not loadable:");
    expect_in(out, "transport tcp, ");
    expect_in(out, "1 MiB through a connection to itself, intact");
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    free(out);
}

/* Naming a transport whose library cannot load fails the plugin's init, saying why. */
static void test_named_transport_says_why(void **state)
{
    static const struct {
        const char *name, *lib;
    } cases[] = {{"ib", "libibverbs.so.1"}, {"ucx", "libucp.so.0"}};
    char cmd[512], env[64], want[256], *out;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (!built_in(cases[i].name))
            continue;
        snprintf(cmd, sizeof(cmd), "'%s/bin/strata-doctor' --sysfs '%s' --plugin '%s'",
                 STRATA_BUILD_DIR, sysdir, STRATA_PLUGIN_PATH);
        snprintf(env, sizeof(env), "STRATA_TRANSPORT=%s", cases[i].name);
        int rc = run_nolibs(env, cmd, &out);
        snprintf(want, sizeof(want), "transport '%s' was asked for (STRATA_TRANSPORT) but cannot "
                 "run here: %s is not loadable: %s/%s: invalid ELF header", cases[i].name,
                 cases[i].lib, libdir, cases[i].lib);
        expect_in(out, want);
        expect_in(out, "plugin init failed");
        assert_int_equal(rc, 1);
        free(out);
    }
}

/* A program linked with libstrata.so runs its two-rank collectives over tcp. */
static void test_collective_runs_without_libraries(void **state)
{
    char cmd[512], *out;

    snprintf(cmd, sizeof(cmd), "'%s/tests/functional/test_libstrata'", STRATA_BUILD_DIR);
    int rc = run_nolibs("", cmd, &out);
    if (rc != 0)
        print_error("%s\n", out);
    expect_in(out, "[       OK ] test_two_ranks");
    assert_int_equal(rc, 0);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plugin_runs_without_libraries),
        cmocka_unit_test(test_named_transport_says_why),
        cmocka_unit_test(test_collective_runs_without_libraries),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
