/*
 * strata-doctor: is this host's fabric ready for Strata (and NCCL)?
 *
 *   strata-doctor [--sysfs ROOT] [--plugin PATH] [--no-plugin] [--counters MS] [-v]
 *   strata-doctor --write-profile FILE [--ranks N] [--nodes K]
 *
 * Reads the RDMA devices and ports from sysfs (state, link, rate, LID or RoCE v2 GID,
 * netdev MTU, uverbs node, GPU peer memory), the ports' counters (retransmits, sequence
 * errors, congestion notifications, link errors: totals, or with --counters MS what grew in
 * MS milliseconds, tools/doctor/doctor_counters.h), what this build has (version, transports,
 * sanitizers) against what the host asks, whether each transport's run-time library
 * (libibverbs, libucp) loads, the memlock limit, then loads the plugin as
 * NCCL does and moves 1 MiB through it over a connection to itself on every device, checking
 * the bytes. One line per finding with what to do; exit status 0 when nothing failed, 1 when
 * something did, 2 for a bad command line. Between two hosts, strata-netperf's --listen /
 * --connect is the next step (docs/benchmarks.md).
 *
 * --write-profile measures the fabric through the collective library instead and writes the
 * profile file the library and strata-plan read (tools/doctor/doctor_profile.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tools/lib/plugin_loader.h"
#include "tools/lib/tool_util.h"
#include "tools/doctor/doctor_checks.h"
#include "tools/doctor/doctor_counters.h"
#include "tools/doctor/doctor_profile.h"
#include "transport/transport.h"
#include "util/time.h"

#define SELF_TEST_BYTES ((size_t)1 << 20)
#define SELF_TEST_TIMEOUT_MS 30000
#define COUNTERS_MAX_MS 3600000    /* --counters: an hour at most */

typedef struct doctor_opts {
    const char *sysroot;
    const char *plugin;
    int no_plugin;
    int verbose;
    const char *write_profile;  /* --write-profile FILE */
    const char *calibrate_rank; /* --calibrate-rank FILE: what --write-profile's ranks run */
    int ranks, nodes;
    int counters_ms;            /* --counters MS: the interval between two counter readings */
} doctor_opts_t;

static int usage(FILE *out, int status)
{
    fprintf(out, "usage: strata-doctor [--sysfs ROOT] [--plugin PATH] [--no-plugin] "
                 "[--counters MS] [-v]\n"
                 "       strata-doctor --write-profile FILE [--ranks N] [--nodes K]\n"
                 "Checks RDMA devices and ports, memlock, and the plugin's data path on this "
                 "host.\n"
                 "--counters MS reads the RDMA ports' counters twice, MS ms apart, and reports "
                 "what grew\n(without it: the totals since the driver loaded).\n"
                 "--write-profile measures the fabric through the collective library instead "
                 "(N ranks, 4,\non K emulated nodes, 2, under strata-run) and writes the "
                 "profile file that STRATA_PROFILE\nand strata-plan --profile read.\n");
    return status;
}

/* Polls a request to its end; STRATA_ERR_TIMEOUT past the deadline. */
static strata_status_t self_wait(stb_plugin_t *pl, void **req, uint64_t deadline, int *size_p)
{
    while (*req != NULL) {
        int done = 0;
        strata_status_t s = stb_plugin_check(stb_plugin_test(pl, *req, &done, size_p), "test");
        if (s != STRATA_OK)
            return s;
        if (done)
            *req = NULL;
        else if (stu_deadline_passed(deadline))
            return STRATA_ERR_TIMEOUT;
    }
    return STRATA_OK;
}

/* Connects dev to itself and moves SELF_TEST_BYTES, as NCCL's own probes connect to self. */
static strata_status_t self_test(stb_plugin_t *pl, int dev, double *us_p)
{
    uint8_t handle[STB_PLUGIN_HANDLE_SIZE];
    void *lc = NULL, *sc = NULL, *rc = NULL, *sreq = NULL, *rreq = NULL, *smh = NULL,
         *rmh = NULL;
    uint8_t *src = malloc(SELF_TEST_BYTES), *dst = calloc(1, SELF_TEST_BYTES);
    uint64_t deadline = stu_deadline_ms(SELF_TEST_TIMEOUT_MS);
    size_t size = SELF_TEST_BYTES;
    int tag = 0;
    strata_status_t s = STRATA_ERR_NO_MEMORY;

    if (src == NULL || dst == NULL)
        goto out;
    stb_pattern_fill(src, SELF_TEST_BYTES, 0x5eed);
    if ((s = stb_plugin_check(stb_plugin_listen(pl, dev, handle, &lc), "listen")) != STRATA_OK ||
        (s = stb_plugin_check(stb_plugin_connect_accept(pl, dev, handle, lc, deadline, NULL,
                                                        NULL, &sc, &rc),
                              "connect/accept")) != STRATA_OK)
        goto out;
    if ((s = stb_plugin_check(stb_plugin_reg_mr(pl, sc, src, size, NCCL_PTR_HOST, &smh),
                              "regMr")) != STRATA_OK ||
        (s = stb_plugin_check(stb_plugin_reg_mr(pl, rc, dst, size, NCCL_PTR_HOST, &rmh),
                              "regMr")) != STRATA_OK)
        goto out;
    uint64_t t0 = stu_time_ns();
    void *data = dst;
    while (s == STRATA_OK && rreq == NULL)
        s = stb_plugin_check(stb_plugin_irecv(pl, rc, 1, &data, &size, &tag, &rmh, &rreq),
                             "irecv");
    while (s == STRATA_OK && sreq == NULL)
        s = stb_plugin_check(stb_plugin_isend(pl, sc, src, size, tag, smh, &sreq), "isend");
    int sent = 0, got = 0;
    while (s == STRATA_OK && (sreq != NULL || rreq != NULL)) {
        s = self_wait(pl, &sreq, deadline, &sent);
        if (s == STRATA_OK)
            s = self_wait(pl, &rreq, deadline, &got);
    }
    *us_p = (double)(stu_time_ns() - t0) / 1e3;
    if (s == STRATA_OK && ((size_t)got != SELF_TEST_BYTES ||
                           stb_pattern_check(dst, SELF_TEST_BYTES, 0x5eed) != 0))
        s = STRATA_ERR_INTERNAL;
out:
    if (smh != NULL)
        stb_plugin_dereg_mr(pl, sc, smh);
    if (rmh != NULL)
        stb_plugin_dereg_mr(pl, rc, rmh);
    if (sc != NULL)
        stb_plugin_close_send(pl, sc);
    if (rc != NULL)
        stb_plugin_close_recv(pl, rc);
    if (lc != NULL)
        stb_plugin_close_listen(pl, lc);
    free(src);
    free(dst);
    return s;
}

/* Each transport's run-time library, loaded here as the plugin would load it. */
static void check_libraries(stb_doc_t *doc, int rdma_ports)
{
    for (int i = 0; i < stt_registry_count(); i++) {
        const stt_ops_t *ops = stt_registry_at(i);
        const char *why = NULL;
        const char *lib = stt_library(ops, &why);
        if (lib != NULL)
            stb_doc_check_library(doc, stt_name(ops), lib, why, getenv("STRATA_TRANSPORT"),
                                  rdma_ports);
    }
}

static void check_plugin(stb_doc_t *doc, const doctor_opts_t *o)
{
    stb_plugin_t *pl = NULL;
    int ndev = 0;

    if (stb_plugin_open(o->plugin, 0x5d0c70a11ull, o->verbose, &pl) != STRATA_OK) {
        stb_doc_report(doc, STB_DOC_FAIL, "plugin", "%s did not load or init (messages above; "
                       "NCCL would fall back to its own transports)", o->plugin);
        return;
    }
    if (stb_plugin_check(stb_plugin_devices(pl, &ndev), "devices") != STRATA_OK || ndev < 1) {
        stb_doc_report(doc, STB_DOC_FAIL, "plugin", "%s (%s) has no device", o->plugin,
                       stb_plugin_name(pl));
        stb_plugin_close(pl);
        return;
    }
    stb_doc_report(doc, STB_DOC_OK, "plugin", "%s (\"%s\"), %d device(s); STRATA_TRANSPORT=%s",
                   o->plugin, stb_plugin_name(pl), ndev,
                   getenv("STRATA_TRANSPORT") ? getenv("STRATA_TRANSPORT") : "auto");
    for (int d = 0; d < ndev; d++) {
        stb_plugin_props_t p;
        char what[96];
        double us = 0;
        snprintf(what, sizeof(what), "plugin device %d", d);
        if (stb_plugin_check(stb_plugin_props(pl, d, &p), "getProperties") != STRATA_OK) {
            stb_doc_report(doc, STB_DOC_FAIL, what, "getProperties failed");
            continue;
        }
        stb_doc_report(doc, STB_DOC_OK, what, "%s, %d Mbps, pci %s, memory %s%s%s", p.name,
                       p.speed_mbps, p.pci_path[0] ? p.pci_path : "-",
                       (p.ptr_support & 1) ? "host" : "", (p.ptr_support & 2) ? "+cuda" : "",
                       (p.ptr_support & 4) ? "+dmabuf" : "");
        strata_status_t s = self_test(pl, d, &us);
        if (s == STRATA_OK)
            stb_doc_report(doc, STB_DOC_OK, what, "1 MiB through a connection to itself, intact, in %.0f us",
                           us);
        else
            stb_doc_report(doc, STB_DOC_FAIL, what, "1 MiB to itself: %s",
                           strata_status_str(s));
    }
    stb_plugin_close(pl);
}

int main(int argc, char **argv)
{
    doctor_opts_t o = {.sysroot = "/sys", .plugin = STRATA_PLUGIN_PATH,
                       .ranks = STB_DOC_PROFILE_RANKS, .nodes = STB_DOC_PROFILE_NODES};
    stb_doc_t doc = {.out = stdout};
    struct rlimit rl;
    int bad = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sysfs") == 0 && i + 1 < argc)
            o.sysroot = argv[++i];
        else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc)
            o.plugin = argv[++i];
        else if (strcmp(argv[i], "--no-plugin") == 0)
            o.no_plugin = 1;
        else if (strcmp(argv[i], "--counters") == 0 && i + 1 < argc)
            bad |= stb_int_parse(argv[++i], 1, COUNTERS_MAX_MS, &o.counters_ms) != STRATA_OK;
        else if (strcmp(argv[i], "-v") == 0)
            o.verbose = 1;
        else if (strcmp(argv[i], "--write-profile") == 0 && i + 1 < argc)
            o.write_profile = argv[++i];
        else if (strcmp(argv[i], "--calibrate-rank") == 0 && i + 1 < argc)
            o.calibrate_rank = argv[++i];
        else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
            bad |= stb_int_parse(argv[++i], 2, 256, &o.ranks) != STRATA_OK;
        else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
            bad |= stb_int_parse(argv[++i], 1, 64, &o.nodes) != STRATA_OK;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return usage(stdout, 0);
        else
            return usage(stderr, 2);
    }
    if (bad || o.nodes > o.ranks)
        return usage(stderr, 2);
    stb_log_tag_set("strata-doctor");
    if (o.calibrate_rank != NULL)
        return stb_doc_profile_rank(o.calibrate_rank);
    if (o.write_profile != NULL)
        return stb_doc_profile_run("/proc/self/exe", o.write_profile, o.ranks, o.nodes);
    printf("# strata-doctor: the fabric as Strata sees it (sysfs %s)\n", o.sysroot);
    int rdma_ports = stb_doc_check_rdma(&doc, o.sysroot);
    stb_doc_check_counters(&doc, o.sysroot, o.counters_ms);
    stb_doc_check_build(&doc, stu_build_info(), getenv("STRATA_TRANSPORT"), rdma_ports);
    check_libraries(&doc, rdma_ports);
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
        stb_doc_check_memlock(&doc, (uint64_t)rl.rlim_cur, rl.rlim_cur == RLIM_INFINITY);
    if (!o.no_plugin)
        check_plugin(&doc, &o);
    printf("# %d ok, %d info, %d warning(s), %d failure(s)\n", doc.count[STB_DOC_OK],
           doc.count[STB_DOC_INFO], doc.count[STB_DOC_WARN], doc.count[STB_DOC_FAIL]);
    return doc.count[STB_DOC_FAIL] > 0 ? 1 : 0;
}
