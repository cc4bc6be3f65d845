/*
 * strata-doctor's sysfs checks on fixture trees made in a temporary
 * directory: no device, an InfiniBand port with and without a LID, ports
 * down and stuck in INIT, RoCE with a v2 GID on a 1500-byte netdev, RoCE
 * without a v2 GID, a device without its uverbs node, the peer-memory module,
 * the memlock limit, and the ports' counters (totals, growth between two
 * readings, classes). Each case checks the counts and the advice printed.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tools/doctor/doctor_checks.h"
#include "tools/doctor/doctor_counters.h"

static char root[PATH_MAX];

static void put(const char *rel, const char *text)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", text);
    fclose(f);
}

static int setup(void **state)
{
    snprintf(root, sizeof(root), "/tmp/strata-doctor-XXXXXX");
    return mkdtemp(root) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* A report written into a string: doc_begin, the checks, then doc_end gives the text. */
static char *doc_text;
static size_t doc_len;

static void doc_begin(stb_doc_t *doc)
{
    memset(doc, 0, sizeof(*doc));
    doc_text = NULL;
    doc->out = open_memstream(&doc_text, &doc_len);
    assert_non_null(doc->out);
}

static char *doc_end(stb_doc_t *doc)
{
    fclose(doc->out);
    return doc_text;
}

/* Runs the rdma checks into a string; *usable_p gets the return value. */
static char *run(stb_doc_t *doc, int *usable_p)
{
    doc_begin(doc);
    *usable_p = stb_doc_check_rdma(doc, root);
    return doc_end(doc);
}

static void ib_port(const char *dev, const char *state, const char *phys, const char *lid)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/state", dev);
    put(rel, state);
    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/phys_state", dev);
    put(rel, phys);
    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/link_layer", dev);
    put(rel, lid != NULL ? "InfiniBand" : "Ethernet");
    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/rate", dev);
    put(rel, "200 Gb/sec (4X HDR)");
    if (lid != NULL) {
        snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/lid", dev);
        put(rel, lid);
    }
}

static void test_no_device(void **state)
{
    stb_doc_t doc;
    int usable;
    char *out = run(&doc, &usable);
    assert_int_equal(usable, 0);
    assert_int_equal(doc.count[STB_DOC_WARN], 1);
    assert_int_equal(doc.count[STB_DOC_FAIL], 0);
    assert_non_null(strstr(out, "the plugin will use TCP"));
    free(out);
}

static void test_infiniband(void **state)
{
    stb_doc_t doc;
    int usable;

    ib_port("mlx5_0", "4: ACTIVE", "5: LinkUp", "0x12");
    put("class/infiniband_verbs/uverbs0/ibdev", "mlx5_0");
    char *out = run(&doc, &usable);
    assert_int_equal(usable, 1);
    assert_int_equal(doc.count[STB_DOC_FAIL], 0);
    assert_non_null(strstr(out, "[ ok ] mlx5_0 port 1: ACTIVE, 5: LinkUp, InfiniBand, 200 Gb"));
    assert_non_null(strstr(out, "LID 0x12"));
    assert_non_null(strstr(out, "/dev/infiniband/uverbs0"));
    assert_non_null(strstr(out, "[info] GPU Direct RDMA"));
    free(out);

    /* no subnet manager: ACTIVE needs one on IB, a LID of 0 says none swept the fabric */
    ib_port("mlx5_0", "4: ACTIVE", "5: LinkUp", "0x0");
    out = run(&doc, &usable);
    assert_int_equal(usable, 0);
    assert_int_equal(doc.count[STB_DOC_FAIL], 1);
    assert_non_null(strstr(out, "without a LID"));
    free(out);

    ib_port("mlx5_0", "2: INIT", "5: LinkUp", "0x0");
    out = run(&doc, &usable);
    assert_int_equal(doc.count[STB_DOC_FAIL], 1);
    assert_non_null(strstr(out, "subnet manager running"));
    free(out);

    ib_port("mlx5_0", "1: DOWN", "3: Disabled", "0x0");
    out = run(&doc, &usable);
    assert_int_equal(doc.count[STB_DOC_FAIL], 1);
    assert_non_null(strstr(out, "no link"));
    free(out);

    put("module/nvidia_peermem/refcnt", "0");
    ib_port("mlx5_0", "4: ACTIVE", "5: LinkUp", "0x12");
    out = run(&doc, &usable);
    assert_non_null(strstr(out, "[ ok ] GPU Direct RDMA: nvidia_peermem loaded"));
    free(out);
}

static void test_roce(void **state)
{
    stb_doc_t doc;
    int usable;
    const char *p = "class/infiniband/rxe0/ports/1/";
    char rel[256];

    ib_port("rxe0", "4: ACTIVE", "5: LinkUp", NULL);
    snprintf(rel, sizeof(rel), "%sgids/0", p);
    put(rel, "fe80:0000:0000:0000:0000:00ff:fe00:0001");
    snprintf(rel, sizeof(rel), "%sgid_attrs/types/0", p);
    put(rel, "IB/RoCE v1");
    snprintf(rel, sizeof(rel), "%sgids/1", p);
    put(rel, "0000:0000:0000:0000:0000:0000:0000:0000");   /* an empty slot is skipped */
    /* no v2 GID yet: the netdev has no address */
    char *out = run(&doc, &usable);
    assert_int_equal(usable, 0);
    assert_non_null(strstr(out, "[FAIL] rxe0 port 1: no RoCE v2 GID"));
    assert_non_null(strstr(out, "[FAIL] rxe0: no uverbs node"));
    free(out);

    snprintf(rel, sizeof(rel), "%sgids/2", p);
    put(rel, "0000:0000:0000:0000:0000:ffff:c000:0201");
    snprintf(rel, sizeof(rel), "%sgid_attrs/types/2", p);
    put(rel, "RoCE v2");
    snprintf(rel, sizeof(rel), "%sgid_attrs/ndevs/2", p);
    put(rel, "veth9");
    put("class/net/veth9/mtu", "1500");
    put("class/infiniband_verbs/uverbs3/ibdev", "rxe0");
    out = run(&doc, &usable);
    assert_int_equal(usable, 1);
    assert_int_equal(doc.count[STB_DOC_FAIL], 0);
    assert_int_equal(doc.count[STB_DOC_WARN], 1);
    assert_non_null(strstr(out, "RoCE v2 GID index 2 0000:0000:0000:0000:0000:ffff:c000:0201 on "
                                "veth9 (IPv4)"));
    assert_non_null(strstr(out, "veth9 has MTU 1500"));
    free(out);

    put("class/net/veth9/mtu", "9000");
    out = run(&doc, &usable);
    assert_int_equal(doc.count[STB_DOC_WARN], 0);
    assert_non_null(strstr(out, "veth9 MTU 9000"));
    free(out);
}

static void test_memlock(void **state)
{
    stb_doc_t doc;
    char *text = NULL;
    size_t len = 0;

    memset(&doc, 0, sizeof(doc));
    doc.out = open_memstream(&text, &len);
    stb_doc_check_memlock(&doc, 0, 1);
    stb_doc_check_memlock(&doc, (uint64_t)2 << 30, 0);
    stb_doc_check_memlock(&doc, 64 << 10, 0);
    fclose(doc.out);
    assert_int_equal(doc.count[STB_DOC_OK], 2);
    assert_int_equal(doc.count[STB_DOC_WARN], 1);
    assert_non_null(strstr(text, "[ ok ] memlock: unlimited"));
    assert_non_null(strstr(text, "[ ok ] memlock: 2048 MiB"));
    assert_non_null(strstr(text, "[warn] memlock: 64 KiB"));
    free(text);
}

static char *run_build(stb_doc_t *doc, const stu_build_info_t *info, const char *env, int ports)
{
    char *text = NULL;
    size_t len = 0;
    memset(doc, 0, sizeof(*doc));
    doc->out = open_memstream(&text, &len);
    assert_non_null(doc->out);
    stb_doc_check_build(doc, info, env, ports);
    fclose(doc->out);
    return text;
}

/* A build without ib and ucx, asked for ib by name and by active ports; a full build. */
static void test_build(void **state)
{
    const stu_build_info_t lean = {"0.1.0", "tcp loop", "ib:libibverbs-dev ucx:libucx-dev",
                                   "none", 0, "strata 0.1.0: transports tcp loop"};
    const stu_build_info_t full = {"0.1.0", "ib ucx tcp loop", "", "asan ubsan", 0,
                                   "strata 0.1.0: transports ib ucx tcp loop"};
    stb_doc_t doc;

    char *text = run_build(&doc, &lean, "IB", 0);
    assert_int_equal(doc.count[STB_DOC_INFO], 1);
    assert_int_equal(doc.count[STB_DOC_FAIL], 1);
    assert_non_null(strstr(text, "[info] build: strata 0.1.0: transports tcp loop\n"));
    assert_non_null(strstr(text, "[FAIL] build: STRATA_TRANSPORT=IB is not built in (built in: "
                                 "tcp loop): install libibverbs-dev"));
    free(text);
    text = run_build(&doc, &lean, "tcp", 2);
    assert_int_equal(doc.count[STB_DOC_FAIL], 1);
    assert_non_null(strstr(text, "[FAIL] build: 2 RDMA port(s) are active but this build has no "
                                 "ib transport"));
    free(text);
    text = run_build(&doc, &lean, "auto", 0);
    assert_int_equal(doc.count[STB_DOC_FAIL], 0);
    free(text);
    text = run_build(&doc, &full, "ucx", 1);
    assert_int_equal(doc.count[STB_DOC_FAIL], 0);
    assert_int_equal(doc.count[STB_DOC_INFO], 1);
    free(text);
    text = run_build(&doc, &full, "verbs", 0);   /* no such transport at all */
    assert_int_equal(doc.count[STB_DOC_FAIL], 1);
    assert_non_null(strstr(text, "STRATA_TRANSPORT=verbs names no transport (built in: ib ucx"));
    free(text);
}

/* Counters a mlx5 RoCE port and an rxe port would show; unknown names are not judged. */
static void counters_fixture(void)
{
    put("class/infiniband/mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "10");
    put("class/infiniband/mlx5_0/ports/1/hw_counters/duplicate_request", "2");
    put("class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "7");
    put("class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", "0");
    put("class/infiniband/mlx5_0/ports/1/hw_counters/some_new_counter", "99");
    put("class/infiniband/mlx5_0/ports/1/counters/symbol_error", "0");
    put("class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "123456");
    put("class/infiniband/rxe0/ports/1/hw_counters/rcvd_seq_err", "0");
    put("class/infiniband/rxe0/ports/1/hw_counters/sent_pkts", "5000");
    put("class/infiniband/rxe0/ports/1/state", "4: ACTIVE");
}

static char *check_counters(stb_doc_t *doc, int interval_ms, int *read_p)
{
    doc_begin(doc);
    *read_p = stb_doc_check_counters(doc, root, interval_ms);
    return doc_end(doc);
}

static void test_counter_classes(void **state)
{
    assert_int_equal(stb_doc_counter_class("local_ack_timeout_err"), STB_DOC_CNT_RETRANSMIT);
    assert_int_equal(stb_doc_counter_class("retry_exceeded_err"), STB_DOC_CNT_RETRANSMIT);
    assert_int_equal(stb_doc_counter_class("out_of_sequence"), STB_DOC_CNT_SEQUENCE);
    assert_int_equal(stb_doc_counter_class("rcvd_seq_err"), STB_DOC_CNT_SEQUENCE);
    assert_int_equal(stb_doc_counter_class("rp_cnp_handled"), STB_DOC_CNT_CONGESTION);
    assert_int_equal(stb_doc_counter_class("port_xmit_wait"), STB_DOC_CNT_CONGESTION);
    assert_int_equal(stb_doc_counter_class("link_downed"), STB_DOC_CNT_ERROR);
    assert_int_equal(stb_doc_counter_class("port_xmit_data"), -1);
    assert_int_equal(stb_doc_counter_class("sent_pkts"), -1);
    assert_int_equal(stb_doc_counter_class(""), -1);
}

/* One reading: totals since the driver loaded are history, info at most; a port whose
 * judged counters are all 0 is ok; unknown and traffic counters are left out. */
static void test_counters_totals(void **state)
{
    stb_doc_t doc;
    int read;
    counters_fixture();
    char *text = check_counters(&doc, 0, &read);

    assert_int_equal(read, 2);
    assert_int_equal(doc.count[STB_DOC_INFO], 1);
    assert_int_equal(doc.count[STB_DOC_OK], 1);
    assert_int_equal(doc.count[STB_DOC_WARN] + doc.count[STB_DOC_FAIL], 0);
    assert_non_null(strstr(text, "mlx5_0 port 1 counters: since the driver loaded: "
                                 "retransmits 12 (duplicate_request 2, local_ack_timeout_err "
                                 "10); congestion 7 (np_cnp_sent 7)"));
    assert_non_null(strstr(text, "rxe0 port 1 counters: 1 counters, none"));
    assert_null(strstr(text, "some_new_counter"));
    assert_null(strstr(text, "port_xmit_data"));
    free(text);
}

/* Two readings: only what grew counts; retransmits or errors that grew warn, congestion
 * notifications alone are info, nothing grown is ok, and a counter that went back (a
 * driver reload) counts as nothing grown. */
static void test_counters_growth(void **state)
{
    stb_doc_counters_t before, now;
    stb_doc_t doc;

    counters_fixture();
    assert_int_equal(stb_doc_counters_read(root, "mlx5_0", "1", &before), 5);
    doc_begin(&doc);
    assert_int_equal(stb_doc_counters_read(root, "mlx5_0", "1", &now), 5);
    stb_doc_counters_report(&doc, "a", &now, &before, 1000);
    put("class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "9");
    assert_int_equal(stb_doc_counters_read(root, "mlx5_0", "1", &now), 5);
    stb_doc_counters_report(&doc, "b", &now, &before, 1000);
    put("class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", "3");
    put("class/infiniband/mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "4");
    assert_int_equal(stb_doc_counters_read(root, "mlx5_0", "1", &now), 5);
    stb_doc_counters_report(&doc, "c", &now, &before, 1000);
    char *text = doc_end(&doc);

    assert_int_equal(doc.count[STB_DOC_OK], 1);
    assert_int_equal(doc.count[STB_DOC_INFO], 1);
    assert_int_equal(doc.count[STB_DOC_WARN], 1);
    assert_non_null(strstr(text, "a: 5 counters, none grew in 1000 ms"));
    assert_non_null(strstr(text, "b: in 1000 ms: congestion 2 (np_cnp_sent 2)"));
    assert_non_null(strstr(text, "c: in 1000 ms: out of sequence 3 (out_of_sequence 3); "
                                 "congestion 2 (np_cnp_sent 2)"));
    assert_null(strstr(text, "c: in 1000 ms: retransmits"));
    free(text);
}

/* A port without counter directories says so; the interval path reads twice and, with
 * nothing changing, finds nothing grown. */
static void test_counters_absent_and_interval(void **state)
{
    stb_doc_t doc;
    int read;
    put("class/infiniband/bare0/ports/1/state", "4: ACTIVE");
    put("class/infiniband/rxe0/ports/1/hw_counters/retry_exceeded_err", "1");
    char *text = check_counters(&doc, 1, &read);

    assert_int_equal(read, 1);
    assert_non_null(strstr(text, "bare0 port 1 counters: none in sysfs"));
    assert_non_null(strstr(text, "rxe0 port 1 counters: 1 counters, none grew in 1 ms"));
    assert_int_equal(doc.count[STB_DOC_WARN] + doc.count[STB_DOC_FAIL], 0);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_infiniband, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roce, setup, teardown),
        cmocka_unit_test(test_memlock),
        cmocka_unit_test(test_build),
        cmocka_unit_test(test_counter_classes),
        cmocka_unit_test_setup_teardown(test_counters_totals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counters_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counters_absent_and_interval, setup, teardown),
    };
    return cmocka_run_group_tests_name("doctor", tests, NULL, NULL);
}
