/* strata-doctor's RDMA port counters (tools/doctor/doctor_counters.h). */
#include "tools/doctor/doctor_counters.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/compiler.h"

/* The counters judged, by their sysfs names: mlx5's hw_counters, rxe's (the kernel's
 * rxe_hw_counters.c), and the InfiniBand port counters every verbs device has. */
static const struct {
    const char *name;
    stb_doc_counter_class_t cls;
} known[] = {
    {"local_ack_timeout_err", STB_DOC_CNT_RETRANSMIT},   /* mlx5: the ack timer fired */
    {"rnr_nak_retry_err", STB_DOC_CNT_RETRANSMIT},       /* mlx5: RNR retries ran out */
    {"roce_adp_retrans", STB_DOC_CNT_RETRANSMIT},        /* mlx5: adaptive retransmission */
    {"roce_adp_retrans_to", STB_DOC_CNT_RETRANSMIT},
    {"roce_slow_restart", STB_DOC_CNT_RETRANSMIT},
    {"duplicate_request", STB_DOC_CNT_RETRANSMIT},       /* mlx5, rxe: a resent request came */
    {"retry_exceeded_err", STB_DOC_CNT_RETRANSMIT},      /* rxe: the QP gave up */
    {"retry_rnr_exceeded_err", STB_DOC_CNT_RETRANSMIT},
    {"completer_retry_err", STB_DOC_CNT_RETRANSMIT},
    {"rcvd_rnr_err", STB_DOC_CNT_RETRANSMIT},            /* rxe: the peer had no receive */
    {"send_rnr_err", STB_DOC_CNT_RETRANSMIT},
    {"out_of_sequence", STB_DOC_CNT_SEQUENCE},           /* mlx5: a PSN gap on receive */
    {"packet_seq_err", STB_DOC_CNT_SEQUENCE},            /* mlx5: NAK-sequence errors received */
    {"implied_nak_seq_err", STB_DOC_CNT_SEQUENCE},
    {"out_of_seq_request", STB_DOC_CNT_SEQUENCE},        /* rxe */
    {"rcvd_seq_err", STB_DOC_CNT_SEQUENCE},              /* rxe */
    {"np_ecn_marked_roce_packets", STB_DOC_CNT_CONGESTION},   /* mlx5: ECN-marked arrivals */
    {"np_cnp_sent", STB_DOC_CNT_CONGESTION},             /* mlx5: CNPs this port sent */
    {"rp_cnp_handled", STB_DOC_CNT_CONGESTION},          /* mlx5: CNPs that slowed this port */
    {"rp_cnp_ignored", STB_DOC_CNT_CONGESTION},
    {"port_xmit_wait", STB_DOC_CNT_CONGESTION},          /* IB: ticks with data and no credit */
    {"symbol_error", STB_DOC_CNT_ERROR},                 /* IB port counters from here */
    {"link_error_recovery", STB_DOC_CNT_ERROR},
    {"link_downed", STB_DOC_CNT_ERROR},                  /* also rxe's */
    {"port_rcv_errors", STB_DOC_CNT_ERROR},
    {"port_rcv_remote_physical_errors", STB_DOC_CNT_ERROR},
    {"port_rcv_switch_relay_errors", STB_DOC_CNT_ERROR},
    {"port_xmit_discards", STB_DOC_CNT_ERROR},
    {"port_xmit_constraint_errors", STB_DOC_CNT_ERROR},
    {"port_rcv_constraint_errors", STB_DOC_CNT_ERROR},
    {"local_link_integrity_errors", STB_DOC_CNT_ERROR},
    {"excessive_buffer_overrun_errors", STB_DOC_CNT_ERROR},
    {"VL15_dropped", STB_DOC_CNT_ERROR},
    {"out_of_buffer", STB_DOC_CNT_ERROR},                /* mlx5: no receive WQE, dropped */
    {"send_err", STB_DOC_CNT_ERROR},                     /* rxe */
    {"req_cqe_error", STB_DOC_CNT_ERROR},                /* mlx5: completions in error */
    {"resp_cqe_error", STB_DOC_CNT_ERROR},
};

static const char *const class_names[STB_DOC_CNT_CLASSES] = {
    "retransmits", "out of sequence", "congestion", "errors"};

int stb_doc_counter_class(const char *name)
{
    for (size_t i = 0; i < STU_ARRAY_SIZE(known); i++)
        if (strcmp(known[i].name, name) == 0)
            return (int)known[i].cls;
    return -1;
}

/* The known counters of one directory of the port, appended to c. */
static void read_dir(const char *root, const char *dir, stb_doc_counters_t *c)
{
    char **names, buf[64];
    int n = stb_doc_list(root, dir, &names);

    for (int i = 0; i < n && c->n < STB_DOC_CNT_MAX; i++) {
        int cls = stb_doc_counter_class(names[i]);
        if (cls < 0 || !stb_doc_read(buf, sizeof(buf), root, "%s/%s", dir, names[i]))
            continue;
        char *end;
        unsigned long long v = strtoull(buf, &end, 0);
        if (end == buf)
            continue;   /* not a number: a driver that reports it otherwise */
        snprintf(c->name[c->n], STB_DOC_CNT_NAME, "%s", names[i]);
        c->cls[c->n] = (stb_doc_counter_class_t)cls;
        c->value[c->n] = (uint64_t)v;
        c->n++;
    }
    stb_doc_list_free(names, n);
}

int stb_doc_counters_read(const char *root, const char *dev, const char *port,
                          stb_doc_counters_t *c)
{
    char dir[PATH_MAX];

    memset(c, 0, sizeof(*c));
    snprintf(dir, sizeof(dir), "class/infiniband/%s/ports/%s/hw_counters", dev, port);
    read_dir(root, dir, c);
    snprintf(dir, sizeof(dir), "class/infiniband/%s/ports/%s/counters", dev, port);
    read_dir(root, dir, c);
    return c->n;
}

/* The value of counter i of now minus the same counter in before (0 where before lacks it
 * or a counter went back: a driver reload or a reset). */
static uint64_t grown(const stb_doc_counters_t *now, int i, const stb_doc_counters_t *before)
{
    if (before == NULL)
        return now->value[i];
    for (int j = 0; j < before->n; j++)
        if (strcmp(before->name[j], now->name[i]) == 0)
            return now->value[i] >= before->value[j] ? now->value[i] - before->value[j] : 0;
    return 0;
}

/* Appends to text (of size len, *used filled): bounded, never past the end. */
static void text_add(char *text, size_t len, size_t *used, const char *fmt, ...)
    STU_PRINTF(4, 5);
static void text_add(char *text, size_t len, size_t *used, const char *fmt, ...)
{
    va_list ap;
    if (*used >= len)
        return;
    va_start(ap, fmt);
    int k = vsnprintf(text + *used, len - *used, fmt, ap);
    va_end(ap);
    *used = k < 0 ? len : STU_MIN(len, *used + (size_t)k);
}

void stb_doc_counters_report(stb_doc_t *doc, const char *what, const stb_doc_counters_t *now,
                             const stb_doc_counters_t *before, int interval_ms)
{
    uint64_t sum[STB_DOC_CNT_CLASSES] = {0};
    char text[1024] = "", part[768];
    size_t used = 0;

    for (int k = 0; k < STB_DOC_CNT_CLASSES; k++) {
        size_t pused = 0;
        part[0] = '\0';
        for (int i = 0; i < now->n; i++) {
            uint64_t v = now->cls[i] == (stb_doc_counter_class_t)k ? grown(now, i, before) : 0;
            if (v == 0)
                continue;
            text_add(part, sizeof(part), &pused, "%s%s %" PRIu64, sum[k] ? ", " : "",
                     now->name[i], v);
            sum[k] += v;
        }
        if (sum[k] > 0)
            text_add(text, sizeof(text), &used, "%s%s %" PRIu64 " (%s)", used ? "; " : "",
                     class_names[k], sum[k], part);
    }
    int trouble = sum[STB_DOC_CNT_RETRANSMIT] + sum[STB_DOC_CNT_SEQUENCE] +
                  sum[STB_DOC_CNT_ERROR] > 0;
    int any = trouble || sum[STB_DOC_CNT_CONGESTION] > 0;
    if (interval_ms <= 0) {
        if (!any)
            stb_doc_report(doc, STB_DOC_OK, what, "%d counters, none of retransmits, sequence "
                           "errors, congestion or errors since the driver loaded", now->n);
        else
            stb_doc_report(doc, STB_DOC_INFO, what, "since the driver loaded: %s (history; "
                           "--counters MS shows what grows now)", text);
    } else if (trouble) {
        stb_doc_report(doc, STB_DOC_WARN, what, "in %d ms: %s (loss, a flapping link or a "
                       "receiver out of buffers: check cables, PFC/ECN and the switch)",
                       interval_ms, text);
    } else if (any) {
        stb_doc_report(doc, STB_DOC_INFO, what, "in %d ms: %s (congestion control at work)",
                       interval_ms, text);
    } else {
        stb_doc_report(doc, STB_DOC_OK, what, "%d counters, none grew in %d ms", now->n,
                       interval_ms);
    }
}

/* Every port of every device: its name and counters; the caller frees *ports_p. */
typedef struct port_reading {
    char what[160];
    stb_doc_counters_t c;
} port_reading_t;

static int read_all(const char *root, port_reading_t **ports_p)
{
    char **devs, dir[PATH_MAX];
    port_reading_t *ports = NULL;
    int n = 0, ndev = stb_doc_list(root, "class/infiniband", &devs);

    for (int d = 0; d < ndev; d++) {
        char **pn;
        snprintf(dir, sizeof(dir), "class/infiniband/%s/ports", devs[d]);
        int np = stb_doc_list(root, dir, &pn);
        for (int p = 0; p < np; p++) {
            port_reading_t *grownp = realloc(ports, sizeof(*ports) * (size_t)(n + 1));
            if (grownp == NULL)
                break;
            ports = grownp;
            snprintf(ports[n].what, sizeof(ports[n].what), "%s port %s counters", devs[d],
                     pn[p]);
            stb_doc_counters_read(root, devs[d], pn[p], &ports[n].c);
            n++;
        }
        stb_doc_list_free(pn, np);
    }
    stb_doc_list_free(devs, ndev);
    *ports_p = ports;
    return n;
}

int stb_doc_check_counters(stb_doc_t *doc, const char *root, int interval_ms)
{
    port_reading_t *before = NULL, *now = NULL;
    int nb = 0, read = 0;

    if (interval_ms > 0) {
        nb = read_all(root, &before);
        struct timespec ts = {.tv_sec = interval_ms / 1000,
                              .tv_nsec = (long)(interval_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    int n = read_all(root, &now);
    for (int i = 0; i < n; i++) {
        if (now[i].c.n == 0) {
            stb_doc_report(doc, STB_DOC_INFO, now[i].what, "none in sysfs (this driver "
                           "exposes no hw_counters or port counters)");
            continue;
        }
        const stb_doc_counters_t *b = NULL;
        for (int j = 0; j < nb; j++)
            if (strcmp(before[j].what, now[i].what) == 0)
                b = &before[j].c;
        /* a port that appeared during the interval: nothing grew that we saw */
        if (interval_ms > 0 && b == NULL)
            b = &now[i].c;
        stb_doc_counters_report(doc, now[i].what, &now[i].c, b, interval_ms);
        read++;
    }
    free(before);
    free(now);
    return read;
}
