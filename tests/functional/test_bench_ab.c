/*
 * The A/B harness (bench/ab/): run.sh on a tiny sweep with 2 ranks must give a
 * table with a full column for every system that can run here, a note for every
 * system that cannot, a PNG, and each system's time against the memory bound; on
 * 2 emulated nodes of 2 ranks (root) the same columns or notes; --base-build puts
 * another build of Strata in a column of its own; nccl_ab.sh, fed canned nccl-tests
 * outputs through stand-in binaries and a stand-in mpirun (bench/ab/testdata/), must
 * build its tables and refuse a "Strata" run in which NCCL did not load the plugin;
 * compare.sh must read labelled (srun --label) and repeated outputs and judge targets.
 *
 * The scripts run under `timeout`, from the source tree, into a temporary directory
 * removed in teardown. A peer that is not installed is skipped by the harness itself;
 * the test checks the skip is reported, and skips only when nothing at all can run.
 */
#define _GNU_SOURCE /* nftw */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "sts_util.h"
#include "tools/lib/tool_netns.h"
#include "tools/lib/tool_proc.h"

#ifndef STRATA_SOURCE_DIR
#define STRATA_SOURCE_DIR "."
#endif

/* Bounds: the tiny sweep takes seconds; the machine is loaded and 2-core. */
#define AB_HARNESS_TIMEOUT_S 600
#define AB_SCRIPT_TIMEOUT_S 120
/* Beyond `timeout`'s own bound and its --kill-after=10: only a stuck `timeout` reaches it. */
#define AB_SLACK_S 30
#define AB_SYSTEMS 5
/* -b 8 -e 64K -f 4: 8, 32, 128, 512, 2K, 8K, 32K, and the -e size 64K. */
#define AB_TINY_ROWS 8
/* --membound 32K on that sweep: 32K and 64K. */
#define AB_TINY_MEMBOUND_ROWS 2
/* The emulated nodes' sweep, -b 8 -e 64 -f 8: 8 and 64. */
#define AB_NODES_ROWS 2
/* The canned outputs: -b 8 -e 128M -f 8 (all_gather, reduce_scatter lose a size-0 row). */
#define AB_CANNED_ROWS 9

static const char *const ab_systems[AB_SYSTEMS] = {
    "strata", "mpi-vader", "mpi-tcp", "gloo-ring", "gloo-hd",
};

typedef struct ab_fixture {
    char dir[64];
} ab_fixture_t;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int ab_setup(void **state)
{
    ab_fixture_t *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    strcpy(f->dir, "/tmp/strata-test-ab.XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int ab_teardown(void **state)
{
    ab_fixture_t *f = *state;

    nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/*
 * Runs argv (NULL-terminated) from the source tree under `timeout`, with
 * stdout and stderr in `log` and the "NAME=VALUE" strings of envs (NULL-
 * terminated, may be NULL) added. Returns the exit code, 128 + signal, or -1.
 */
typedef struct ab_child {
    const char *const *envs;
} ab_child_t;

/* In the child: the source tree as the working directory, the extra environment. */
static int ab_child_setup(void *arg)
{
    const ab_child_t *c = arg;

    if (chdir(STRATA_SOURCE_DIR) != 0)
        return -1;
    for (int i = 0; c->envs != NULL && c->envs[i] != NULL; i++)
        putenv((char *)c->envs[i]);
    return 0;
}

static int ab_run(const char *const *argv, const char *const *envs, const char *log,
                  int timeout_s)
{
    char secs[16];
    const char *full[32];
    int n = 0, ws = 0;
    pid_t pid;

    snprintf(secs, sizeof(secs), "%d", timeout_s);
    full[n++] = "timeout";
    full[n++] = "--kill-after=10";
    full[n++] = secs;
    for (int i = 0; argv[i] != NULL && n < 31; i++)
        full[n++] = argv[i];
    full[n] = NULL;

    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    ab_child_t c = {.envs = envs};
    stb_spawn_t s = {.argv = (char *const *)full, .search_path = 1, .setup = ab_child_setup,
                     .setup_arg = &c, .stdout_fd = fd, .stderr_fd = fd};
    strata_status_t status = stb_proc_spawn(&s, &pid);
    close(fd);
    /* `timeout` bounds the run; this bound only catches `timeout` itself stuck */
    if (status == STRATA_OK)
        status = stb_proc_wait(pid, stu_deadline_ms(1000ll * (timeout_s + AB_SLACK_S)), &ws);
    return status == STRATA_OK ? stb_proc_exit_code(ws) : -1;
}

/* The whole file, NUL-terminated, or NULL. */
static char *ab_slurp(const char *path)
{
    FILE *fp = fopen(path, "r");
    char *buf = NULL;
    long len;

    if (fp == NULL)
        return NULL;
    if (fseek(fp, 0, SEEK_END) == 0 && (len = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)len + 1);
        if (buf != NULL && fread(buf, 1, (size_t)len, fp) != (size_t)len) {
            free(buf);
            buf = NULL;
        } else if (buf != NULL) {
            buf[len] = '\0';
        }
    }
    fclose(fp);
    return buf;
}

static char *ab_path(const ab_fixture_t *f, const char *name)
{
    char *p = malloc(strlen(f->dir) + strlen(name) + 2);
    assert_non_null(p);
    sprintf(p, "%s/%s", f->dir, name);
    return p;
}

/* Shows the script's output when a check fails, so the log says why. */
static void ab_dump(const char *log)
{
    char *text = ab_slurp(log);
    if (text != NULL)
        print_message("---- %s ----\n%s\n----\n", log, text);
    free(text);
}

static void ab_assert_png(const char *path)
{
    static const unsigned char magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char head[8] = {0};
    FILE *fp = fopen(path, "rb");

    if (fp == NULL)
        fail_msg("no plot at %s", path);
    assert_int_equal(fread(head, 1, sizeof(head), fp), sizeof(head));
    fclose(fp);
    assert_memory_equal(head, magic, sizeof(magic));
}

/* Column of `name` in the markdown table row `header` ("| size | a | b |"), or -1. */
static int ab_md_column(const char *header, const char *name)
{
    int col = 0;
    size_t len = strlen(name);

    for (const char *p = header; *p != '\0' && *p != '\n'; p++) {
        if (*p != '|')
            continue;
        const char *c = p + 1;
        while (*c == ' ')
            c++;
        if (strncmp(c, name, len) == 0 && c[len] == ' ' && c[len + 1] == '|')
            return col;
        col++;
    }
    return -1;
}

/* Copies cell `col` of a markdown row into out (trimmed). */
static void ab_md_cell(const char *row, int col, char *out, size_t cap)
{
    const char *p = row;

    out[0] = '\0';
    for (int i = 0; i <= col; i++) {
        p = strchr(p, '|');
        if (p == NULL)
            return;
        p++;
    }
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, "|\n");
    while (n > 0 && p[n - 1] == ' ')
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

/*
 * In the first table (busbw) of md: the column of `name` has a positive number
 * on each of the `rows` rows, and no "wrong" flag. Returns 0, or -1 when the
 * column is absent.
 */
static int ab_md_check_column(const char *md, const char *name, int rows)
{
    const char *header = strstr(md, "| size |");
    char cell[64];
    int col, seen = 0;

    assert_non_null(header);
    col = ab_md_column(header, name);
    if (col < 0)
        return -1;
    const char *row = strchr(header, '\n');
    assert_non_null(row);
    row = strchr(row + 1, '\n');            /* past the |---:| rule */
    assert_non_null(row);
    for (row++; strncmp(row, "| ", 2) == 0; row = strchr(row, '\n') + 1) {
        ab_md_cell(row, col, cell, sizeof(cell));
        char *end;
        double v = strtod(cell, &end);
        if (end == cell || *end != '\0' || !(v > 0))
            fail_msg("%s: cell '%s' in row %.*s", name, cell, (int)strcspn(row, "\n"), row);
        seen++;
        if (strchr(row, '\n') == NULL)
            break;
    }
    assert_int_equal(seen, rows);
    return 0;
}

/*
 * Every system of md has a full column of `rows` rows (and, when membound_rows > 0, a
 * column in the memory-bound table) or a skip note; returns how many ran.
 */
static int ab_md_check_systems(const char *md, const char *md_path, int rows, int membound_rows)
{
    const char *bound = membound_rows > 0 ? strstr(md, "\nMemory bound, one node") : NULL;
    int ran = 0;

    if (membound_rows > 0 && bound == NULL) {
        ab_dump(md_path);
        fail_msg("no memory-bound table");
    }
    for (int i = 0; i < AB_SYSTEMS; i++) {
        char note[64];
        snprintf(note, sizeof(note), "- %s skipped: ", ab_systems[i]);
        if (ab_md_check_column(md, ab_systems[i], rows) == 0) {
            if (bound != NULL && ab_md_check_column(bound, ab_systems[i], membound_rows) != 0)
                fail_msg("%s: no column in the memory-bound table", ab_systems[i]);
            ran++;
            continue;
        }
        if (strstr(md, note) == NULL) {
            ab_dump(md_path);
            fail_msg("%s: neither a column nor a skip note", ab_systems[i]);
        }
        print_message("[ INFO     ] %s skipped by the harness (not installed or not built)\n",
                      ab_systems[i]);
    }
    return ran;
}

/* run.sh on 2 ranks, 8 B to 64 KiB: every system has a full column or a skip note. */
static void test_harness_tiny_sweep(void **state)
{
    ab_fixture_t *f = *state;
    char *out = ab_path(f, "out"), *log = ab_path(f, "run.log"), *md_path, *png, *md;
    const char *argv[] = {"bench/ab/run.sh", "--ranks", "2", "-b", "8", "-e", "64K",
                          "--runs", "1", "--membound", "32K", "--out", out,
                          "--build-dir", STRATA_BUILD_DIR, "--timeout", "300", NULL};
    int rc = ab_run(argv, NULL, log, AB_HARNESS_TIMEOUT_S), ran;

    md_path = ab_path(f, "out/ab-n2.md");
    png = ab_path(f, "out/ab-n2.png");
    md = ab_slurp(md_path);
    if (rc != 0 || md == NULL)
        ab_dump(log);
    assert_int_equal(rc, 0);
    assert_non_null(md);
    ran = ab_md_check_systems(md, md_path, AB_TINY_ROWS, AB_TINY_MEMBOUND_ROWS);
    if (ran == 0) {
        free(md);
        free(md_path);
        free(png);
        free(out);
        free(log);
        skip();
    }
    ab_assert_png(png);
    free(md);
    free(md_path);
    free(png);
    free(out);
    free(log);
}

/*
 * run.sh on 2 emulated nodes of 2 ranks: every system has a full column or a skip note,
 * OpenMPI's ranks ran on both nodes (their own hostnames), and nothing is left behind.
 */
static void test_harness_emulated_nodes(void **state)
{
    ab_fixture_t *f = *state;
    char *out = ab_path(f, "out"), *log = ab_path(f, "run.log");
    char *md_path = ab_path(f, "out/ab-n4-2nodes.md"), *md = NULL, *raw = NULL;
    char *raw_path = ab_path(f, "out/raw/n4-2nodes/mpi-vader.r1.txt");
    const char *argv[] = {"bench/ab/run.sh", "--ranks", "4", "--nodes", "2", "-b", "8", "-e",
                          "64", "-f", "8", "--runs", "1", "--out", out, "--build-dir",
                          STRATA_BUILD_DIR, "--timeout", "300", NULL};
    stb_netns_t probe;
    int ran = 0;

    stb_netns_init(&probe);
    if (stb_netns_create(&probe, 2, 0) == STRATA_OK) {   /* else: not root, or no kernel support */
        stb_netns_destroy(&probe);
        int rc = ab_run(argv, NULL, log, AB_HARNESS_TIMEOUT_S);
        md = ab_slurp(md_path);
        if (rc != 0 || md == NULL)
            ab_dump(log);
        assert_int_equal(rc, 0);
        assert_non_null(md);
        assert_non_null(strstr(md, "4 ranks on 2 emulated nodes"));
        ran = ab_md_check_systems(md, md_path, AB_NODES_ROWS, 0);
        raw = ab_slurp(raw_path);   /* NULL when OpenMPI is skipped here */
        if (raw != NULL) {
            assert_non_null(strstr(raw, " on strata-ab-n0 "));
            assert_non_null(strstr(raw, " on strata-ab-n1 "));
        }
    }
    stb_netns_destroy(&probe);
    free(raw);
    free(raw_path);
    free(md);
    free(md_path);
    free(out);
    free(log);
    if (ran == 0)
        skip();
}

/* A peer whose launcher is missing is skipped with its reason, and the rest still runs. */
static void test_harness_skips_missing_peer(void **state)
{
    ab_fixture_t *f = *state;
    char *out = ab_path(f, "out"), *log = ab_path(f, "run.log");
    const char *argv[] = {"bench/ab/run.sh", "--ranks", "2", "-b", "8", "-e", "32",
                          "--runs", "1", "--systems", "mpi-vader,gloo-ring", "--mpirun",
                          "/nonexistent/mpirun", "--out", out, "--build-dir", STRATA_BUILD_DIR,
                          NULL};
    int rc = ab_run(argv, NULL, log, AB_HARNESS_TIMEOUT_S);
    char *summary_path = ab_path(f, "out/summary.md"), *summary = ab_slurp(summary_path);
    char gloo[512];
    int have_gloo;

    snprintf(gloo, sizeof(gloo), "%s/bench/ab/gloo_allreduce", STRATA_BUILD_DIR);
    have_gloo = access(gloo, X_OK) == 0;
    if (summary == NULL || strstr(summary, "- mpi-vader skipped: ") == NULL) {
        ab_dump(log);
        ab_dump(summary_path);
    }
    assert_non_null(summary);
    assert_non_null(strstr(summary, "- mpi-vader skipped: /nonexistent/mpirun not found"));
    if (have_gloo) {
        assert_int_equal(rc, 0);
        assert_int_equal(ab_md_check_column(summary, "gloo-ring", 2), 0);
    } else {
        assert_int_equal(rc, 1);   /* nothing ran */
    }
    free(summary);
    free(summary_path);
    free(out);
    free(log);
}

/*
 * --base-build: system strata-base runs another build's strata-perf next to this one's
 * and gets a ratio column; without --base-build it is skipped with the reason.
 */
static void test_harness_base_build_column(void **state)
{
    ab_fixture_t *f = *state;
    char *out = ab_path(f, "out"), *log = ab_path(f, "run.log");
    char *out2 = ab_path(f, "out2"), *log2 = ab_path(f, "run2.log");
    const char *argv[] = {"bench/ab/run.sh", "--ranks", "2", "-b", "8", "-e", "32",
                          "--runs", "1", "--systems", "strata,strata-base", "--base-build",
                          STRATA_BUILD_DIR, "--out", out, "--build-dir", STRATA_BUILD_DIR,
                          "--timeout", "300", NULL};
    const char *argv2[] = {"bench/ab/run.sh", "--ranks", "2", "-b", "8", "-e", "32",
                           "--runs", "1", "--systems", "strata,strata-base", "--out", out2,
                           "--build-dir", STRATA_BUILD_DIR, "--timeout", "300", NULL};
    char *md_path = ab_path(f, "out/ab-n2.md"), *sum2_path = ab_path(f, "out2/summary.md");
    int rc = ab_run(argv, NULL, log, AB_HARNESS_TIMEOUT_S);
    char *md = ab_slurp(md_path), *sum2;

    if (rc != 0 || md == NULL)
        ab_dump(log);
    assert_int_equal(rc, 0);
    assert_non_null(md);
    assert_int_equal(ab_md_check_column(md, "strata", 2), 0);
    assert_int_equal(ab_md_check_column(md, "strata-base", 2), 0);
    assert_non_null(strstr(md, "strata-base: the build in "));

    rc = ab_run(argv2, NULL, log2, AB_HARNESS_TIMEOUT_S);
    sum2 = ab_slurp(sum2_path);
    if (rc != 0 || sum2 == NULL)
        ab_dump(log2);
    assert_int_equal(rc, 0);   /* strata still ran */
    assert_non_null(sum2);
    assert_non_null(strstr(sum2, "- strata-base skipped: no --base-build given"));
    free(sum2);
    free(sum2_path);
    free(md);
    free(md_path);
    free(out);
    free(log);
    free(out2);
    free(log2);
}

static const char *const ab_colls[] = {"all_reduce", "all_gather", "reduce_scatter",
                                       "broadcast", "reduce"};

/* nccl_ab.sh over canned outputs through a stand-in mpirun: tables, ratios, plots. */
static void test_nccl_ab_canned(void **state)
{
    ab_fixture_t *f = *state;
    char *out = ab_path(f, "nccl"), *log = ab_path(f, "nccl.log");
    const char *argv[] = {"bench/ab/nccl_ab.sh", "--bin-dir", "bench/ab/testdata/fake-bin",
                          "--plugin-dir", STRATA_BUILD_DIR "/lib", "--runs", "2", "--out", out,
                          "--", "bench/ab/testdata/fake-bin/mpirun", "-np", "4", NULL};
    int rc = ab_run(argv, NULL, log, AB_SCRIPT_TIMEOUT_S);
    char *text = ab_slurp(log);

    if (rc != 0)
        ab_dump(log);
    assert_int_equal(rc, 0);
    assert_non_null(text);
    free(text);
    /* The stand-in mpirun saw the plugin's variables forwarded with -x. */
    char *raw_path = ab_path(f, "nccl/raw/all_reduce.strata.r1.log");
    text = ab_slurp(raw_path);
    assert_non_null(text);
    assert_non_null(strstr(text, "fake mpirun: forwarding NCCL_NET_PLUGIN_REF_COUNT"));
    assert_non_null(strstr(text, "fake mpirun: forwarding LD_LIBRARY_PATH"));
    free(raw_path);
    free(text);
    text = ab_slurp(log);
    assert_non_null(strstr(text, "all_reduce strata run 2: ok (assigned: Strata x4)"));
    assert_non_null(strstr(text, "all_reduce stock run 1: ok (assigned: IB x4)"));
    free(text);
    for (size_t i = 0; i < sizeof(ab_colls) / sizeof(ab_colls[0]); i++) {
        char name[64];
        snprintf(name, sizeof(name), "nccl/%s.md", ab_colls[i]);
        char *md_path = ab_path(f, name), *md = ab_slurp(md_path);
        int rows = strcmp(ab_colls[i], "all_gather") == 0 ||
                           strcmp(ab_colls[i], "reduce_scatter") == 0
                       ? AB_CANNED_ROWS - 1
                       : AB_CANNED_ROWS;
        assert_non_null(md);
        assert_int_equal(ab_md_check_column(md, "stock", rows), 0);
        assert_int_equal(ab_md_check_column(md, "strata", rows), 0);
        assert_int_equal(ab_md_check_column(md, "strata/stock", rows), 0);
        assert_non_null(strstr(md, "Runs per system: stock 2, strata 2."));
        snprintf(name, sizeof(name), "nccl/%s.png", ab_colls[i]);
        char *png = ab_path(f, name);
        ab_assert_png(png);
        free(png);
        free(md);
        free(md_path);
    }
    /* Figures recomputed from the canned times: 128 MiB, 1.5 x 134217728 B / time. */
    char *md_path = ab_path(f, "nccl/all_reduce.md"), *md = ab_slurp(md_path);
    assert_non_null(md);
    assert_non_null(strstr(md, "| 128 MiB | 40.0 | 43.9 | 1.10 |"));
    assert_non_null(strstr(md, "| 8 B | 21.7 | 24.3 |"));
    free(md);
    free(md_path);
    free(out);
    free(log);
}

/* A "Strata" run in which NCCL assigned IB is refused and left out of the table. */
static void test_nccl_ab_refuses_unloaded_plugin(void **state)
{
    ab_fixture_t *f = *state;
    char *out = ab_path(f, "nccl"), *log = ab_path(f, "nccl.log");
    const char *argv[] = {"bench/ab/nccl_ab.sh", "--bin-dir", "bench/ab/testdata/fake-bin",
                          "--plugin-dir", STRATA_BUILD_DIR "/lib", "--colls", "all_reduce",
                          "--out", out, NULL};
    const char *envs[] = {"FAKE_NCCL_IGNORE_PLUGIN=1", NULL};
    int rc = ab_run(argv, envs, log, AB_SCRIPT_TIMEOUT_S);
    char *text = ab_slurp(log), *md_path = ab_path(f, "nccl/all_reduce.md");
    char *md = ab_slurp(md_path);

    assert_int_equal(rc, 1);
    assert_non_null(text);
    assert_non_null(strstr(text, "REFUSED all_reduce strata run 1: NCCL assigned NET plugin(s) "
                                 "IB, not Strata"));
    assert_non_null(md);
    assert_int_equal(ab_md_check_column(md, "stock", AB_CANNED_ROWS), 0);
    assert_int_equal(ab_md_check_column(md, "strata", AB_CANNED_ROWS), -1);
    assert_non_null(strstr(md, "- strata run 1 refused: "));
    free(md);
    free(md_path);
    free(text);
    free(out);
    free(log);
}

/*
 * A plugin NCCL cannot find on a node fails the Strata run ("Failed to initialize any
 * NET plugin"): refused, the stock run still reported. A crash refuses both.
 */
static void test_nccl_ab_refuses_failed_runs(void **state)
{
    ab_fixture_t *f = *state;
    char *out = ab_path(f, "nccl"), *log = ab_path(f, "nccl.log");
    char *sum_path = ab_path(f, "nccl/nccl-ab.md"), *md_path = ab_path(f, "nccl/broadcast.md");
    const char *argv[] = {"bench/ab/nccl_ab.sh", "--bin-dir", "bench/ab/testdata/fake-bin",
                          "--plugin-dir", STRATA_BUILD_DIR "/lib", "--colls", "broadcast",
                          "--out", out, NULL};
    const char *hide[] = {"FAKE_NCCL_HIDE_PLUGIN=1", NULL};
    const char *crash[] = {"FAKE_NCCL_FAIL=1", NULL};
    char *text, *md;

    assert_int_equal(ab_run(argv, hide, log, AB_SCRIPT_TIMEOUT_S), 1);
    text = ab_slurp(log);
    assert_non_null(text);
    assert_non_null(strstr(text, "broadcast stock run 1: ok (assigned: IB x4)"));
    assert_non_null(strstr(text, "REFUSED broadcast strata run 1: nccl-tests exited with 1 "
                                 "(NCCL WARN Failed to initialize any NET plugin)"));
    md = ab_slurp(md_path);
    assert_non_null(md);
    assert_int_equal(ab_md_check_column(md, "stock", AB_CANNED_ROWS), 0);
    assert_int_equal(ab_md_check_column(md, "strata", AB_CANNED_ROWS), -1);
    free(md);
    free(text);

    assert_int_equal(unlink(md_path), 0);
    assert_int_equal(ab_run(argv, crash, log, AB_SCRIPT_TIMEOUT_S), 1);
    text = ab_slurp(log);
    assert_non_null(text);
    assert_non_null(strstr(text, "REFUSED broadcast stock run 1: nccl-tests exited with 1 "
                                 "(NCCL WARN simulated failure)"));
    md = ab_slurp(sum_path);
    assert_non_null(md);
    assert_non_null(strstr(md, "## broadcast_perf: no valid run"));
    assert_int_equal(access(md_path, F_OK), -1);
    free(md);
    free(text);
    free(sum_path);
    free(md_path);
    free(out);
    free(log);
}

/* compare.sh: labelled and repeated inputs, medians, targets; no rows is an error. */
static void test_compare_parses_and_judges(void **state)
{
    ab_fixture_t *f = *state;
    char *md_path = ab_path(f, "cmp.md"), *log = ab_path(f, "cmp.log");
    const char *argv[] = {"bench/ab/compare.sh", "--md", md_path, "--ref", "strata",
                          "--goal", "st*:2M:1.04", "--goal", "stock:0:1.0",
                          "strata=bench/ab/testdata/all_reduce.strata.txt",
                          "stock=bench/ab/testdata/all_reduce.stock.txt,"
                          "bench/ab/testdata/all_reduce.srun-label.txt",
                          NULL};
    int rc = ab_run(argv, NULL, log, AB_SCRIPT_TIMEOUT_S);
    char *md = ab_slurp(md_path);

    if (rc != 0)
        ab_dump(log);
    assert_int_equal(rc, 0);
    assert_non_null(md);
    assert_int_equal(ab_md_check_column(md, "stock", AB_CANNED_ROWS), 0);
    assert_non_null(strstr(md, "Runs per system: strata 1, stock 2."));
    assert_non_null(strstr(md, "- strata >= 1.04 x stock at every size from 2 MiB: **met**"));
    assert_non_null(strstr(md, "- strata >= 1.0 x stock at every size from 0 B: **not met** "
                               "at 6 of 9 sizes"));
    free(md);

    const char *empty[] = {"bench/ab/compare.sh", "--md", md_path,
                           "x=bench/ab/testdata/README.md", NULL};
    assert_int_equal(ab_run(empty, NULL, log, AB_SCRIPT_TIMEOUT_S), 1);
    free(md_path);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compare_parses_and_judges, ab_setup, ab_teardown),
        cmocka_unit_test_setup_teardown(test_nccl_ab_canned, ab_setup, ab_teardown),
        cmocka_unit_test_setup_teardown(test_nccl_ab_refuses_unloaded_plugin, ab_setup,
                                        ab_teardown),
        cmocka_unit_test_setup_teardown(test_nccl_ab_refuses_failed_runs, ab_setup,
                                        ab_teardown),
        cmocka_unit_test_setup_teardown(test_harness_skips_missing_peer, ab_setup, ab_teardown),
        cmocka_unit_test_setup_teardown(test_harness_tiny_sweep, ab_setup, ab_teardown),
        cmocka_unit_test_setup_teardown(test_harness_base_build_column, ab_setup,
                                        ab_teardown),
        cmocka_unit_test_setup_teardown(test_harness_emulated_nodes, ab_setup, ab_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
