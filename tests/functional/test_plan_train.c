/*
 * strata-plan train end to end: the --json document carries every documented key (and
 * --search's ranking), a profile file sets the fabric and says so, --plot-data writes the
 * per-layout lines the plot script reads, bad input exits 2 with its reason, and a profile
 * written by strata-doctor --write-profile (measured here, through strata-run) is one a
 * plan starts from. No timing assertions; temporary files are removed.
 */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define PLAN_BIN STRATA_BUILD_DIR "/bin/strata-plan"
#define DOCTOR_BIN STRATA_BUILD_DIR "/bin/strata-doctor"
/* A bound for one command on a loaded 2-core machine: a hang fails, it never blocks. */
#define CMD_TIMEOUT_S 240
#define OUT_MAX (1 << 20)

/* A 7B model on two HGX-like nodes: TP in the node, 4 micro-batches. */
#define PLAN_ARGS " train --params 7B --layers 32 --hidden 4096 --seq 4096 --nodes 2 --tp 8" \
                  " --micro-batches 4 --nic-bw 400Gb/s"

/* Runs a shell command under timeout with stderr joined to stdout; returns its exit
 * status and the output in a static buffer. */
static int run(const char *cmd, char **out_p)
{
    static char out[OUT_MAX];
    char full[4096];
    size_t n = 0;

    snprintf(full, sizeof(full), "timeout --kill-after=10 %d %s 2>&1", CMD_TIMEOUT_S, cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    while (n < sizeof(out) - 1) {
        size_t got = fread(out + n, 1, sizeof(out) - 1 - n, p);
        if (got == 0)
            break;
        n += got;
    }
    out[n] = '\0';
    int status = pclose(p);
    *out_p = out;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void expect(const char *out, const char *needle)
{
    if (strstr(out, needle) == NULL)
        fail_msg("output lacks %s:\n%.4000s", needle, out);
}

/* Braces and brackets outside strings balance, and nothing follows the document. */
static void expect_balanced(const char *s)
{
    int depth = 0, in_str = 0, closed = 0;
    for (; *s != '\0'; s++) {
        if (in_str) {
            if (*s == '\\' && s[1] != '\0')
                s++;
            else if (*s == '"')
                in_str = 0;
            continue;
        }
        if (closed && *s != '\n' && *s != ' ')
            fail_msg("text after the JSON document: %.40s", s);
        if (*s == '"')
            in_str = 1;
        else if (*s == '{' || *s == '[')
            depth++;
        else if (*s == '}' || *s == ']')
            closed = --depth == 0;
        assert_true(depth >= 0);
    }
    assert_int_equal(depth, 0);
    assert_true(closed);
}

static void test_json_keys(void **state)
{
    static const char *const keys[] = {
        "\"tool\": \"strata-plan train\"", "\"model\": {", "\"params\":", "\"active_params\":",
        "\"cluster\": {", "\"intra\": {", "\"kind\": \"switch\"", "\"nic\": {",
        "\"gbps_per_direction\": 50", "\"compute\": {", "\"layout\": {", "\"tp\": 8",
        "\"axes\": [", "\"axis\": \"tp\"", "\"collective\": \"allreduce\"",
        "\"bytes_per_gpu_per_step\":", "\"tier\": \"intra\"", "\"exposed_ms\":", "\"hidden\":",
        "\"algorithm\":", "\"tokens_per_step\":", "\"model_flops\":", "\"compute_ms\":",
        "\"bubble\": {", "\"one_f_one_b\":", "\"pipeline_efficiency\":", "\"step_ms\":",
        "\"mfu\":", "\"hfu\":", "\"memory_gb\": {", "\"fits\":", "\"inter_stage_gbps\": {",
        "\"buckets_best\":", "\"warnings\": [", "\"search\": {", "\"ranking\": [",
        "\"rank\": 1",
    };
    char *out;

    assert_int_equal(run(PLAN_BIN PLAN_ARGS " --json --search --top 2", &out), 0);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        expect(out, keys[i]);
    expect_balanced(out);
    assert_null(strstr(out, "\"rank\": 3"));   /* --top 2 */
}

static void test_table_profile_and_plot(void **state)
{
    char prof[] = "/tmp/strata-test-plan-profile.XXXXXX";
    char plot[] = "/tmp/strata-test-plan-plot.XXXXXX";
    char cmd[1024], *out;
    int fd = mkstemp(prof);
    assert_true(fd >= 0);
    const char *text = "shm.kind = pcie\nshm.beta_gbps = 32\nnet.alpha_us = 4\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    fd = mkstemp(plot);
    assert_true(fd >= 0);
    close(fd);

    snprintf(cmd, sizeof(cmd), PLAN_BIN PLAN_ARGS " --profile %s --search --top 3 "
             "--plot-data %s", prof, plot);
    int rc = run(cmd, &out);
    unlink(prof);
    assert_int_equal(rc, 0);
    expect(out, "# intra    : pcie, 32 GB/s per GPU per direction (profile)");
    expect(out, "alpha 4 us (profile)");
    expect(out, "400 Gb/s = 50 GB/s per direction");
    expect(out, "# step time");
    expect(out, "# search:");

    FILE *f = fopen(plot, "r");
    assert_non_null(f);
    char line[512];
    int chosen = 0, ranked = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        chosen += strncmp(line, "\"chosen: TP8 ", 13) == 0;
        ranked += strncmp(line, "\"#", 2) == 0;
    }
    fclose(f);
    unlink(plot);
    assert_int_equal(chosen, 1);
    assert_true(ranked >= 1 && ranked <= 3);
}

/* Bad input exits 2 (1 for an unreadable file) with the reason; --global-batch sets M. */
static void test_bad_input_and_global_batch(void **state)
{
    char *out;

    assert_int_equal(run(PLAN_BIN PLAN_ARGS " --pp 5", &out), 2);
    expect(out, "--pp 5 must divide");
    assert_int_equal(run(PLAN_BIN " train --params 7B --layers 32 --hidden 4096 --nic-bw fast",
                         &out), 2);
    expect(out, "--nic-bw 'fast'");
    assert_int_equal(run(PLAN_BIN " train --layers 32 --hidden 4096", &out), 2);
    expect(out, "--params");
    assert_int_equal(run(PLAN_BIN PLAN_ARGS " --profile /nonexistent/profile", &out), 1);
    assert_int_equal(run(PLAN_BIN PLAN_ARGS " --global-batch 3", &out), 2);
    expect(out, "--global-batch 3 is not a whole multiple of DP 2");
    assert_int_equal(run(PLAN_BIN PLAN_ARGS " --global-batch 16 --json", &out), 0);
    expect(out, "\"micro_batches\": 8");
}

/* Measured here, planned from: the doctor's profile carries every value and the plan
 * reports them as the profile's. */
static void test_doctor_profile_to_plan(void **state)
{
    char prof[] = "/tmp/strata-test-doctor-profile.XXXXXX";
    char cmd[1024], *out;
    int fd = mkstemp(prof);
    assert_true(fd >= 0);
    close(fd);

    snprintf(cmd, sizeof(cmd), DOCTOR_BIN " --write-profile %s", prof);
    int rc = run(cmd, &out);
    if (rc != 0) {
        unlink(prof);
        fail_msg("strata-doctor --write-profile exited %d:\n%.4000s", rc, out);
    }
    expect(out, "strata-doctor: wrote");
    snprintf(cmd, sizeof(cmd), PLAN_BIN " train --params 125M --layers 12 --hidden 768 "
             "--seq 1024 --nodes 2 --gpus-per-node 2 --nics 1 --compute-ms 1000 --profile %s "
             "--json", prof);
    rc = run(cmd, &out);
    FILE *f = fopen(prof, "r");
    char text[4096] = "";
    if (f != NULL) {
        text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
        fclose(f);
    }
    unlink(prof);
    assert_int_equal(rc, 0);
    expect(text, "shm.beta_gbps");
    expect(text, "net.alpha_us");
    expect(text, "# calibrated");
    expect(out, "\"kind\": \"shm\"");
    expect(out, "\"bw_source\": \"profile\"");
    expect(out, "\"alpha_source\": \"profile\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_keys),
        cmocka_unit_test(test_table_profile_and_plot),
        cmocka_unit_test(test_bad_input_and_global_batch),
        cmocka_unit_test(test_doctor_profile_to_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
