/*
 * strata-doctor's reading of the RDMA ports' counters from sysfs: the driver's
 * hardware counters (<port>/hw_counters/: mlx5's retransmit, sequence-error
 * and congestion-notification counters, rxe's retry and sequence counters) and
 * the InfiniBand port counters (<port>/counters/: link and receive errors,
 * discards, transmit wait). Each known counter belongs to one class; a port's
 * report sums each class and names its nonzero counters. Counters run from the
 * driver's load, so a single reading is history (info); with an interval the
 * report is what grew during it, which is what is going wrong now.
 */
#ifndef STB_DOCTOR_COUNTERS_H
#define STB_DOCTOR_COUNTERS_H

#include <stdint.h>

#include "tools/doctor/doctor_checks.h"

typedef enum stb_doc_counter_class {
    STB_DOC_CNT_RETRANSMIT = 0,   /* the sender resent: timeouts, RNR and sequence NAKs */
    STB_DOC_CNT_SEQUENCE,         /* packets out of sequence: loss or reordering */
    STB_DOC_CNT_CONGESTION,       /* ECN marks, CNPs sent and handled, transmit wait */
    STB_DOC_CNT_ERROR,            /* link errors, downs, receive errors, discards */
    STB_DOC_CNT_CLASSES
} stb_doc_counter_class_t;

#define STB_DOC_CNT_MAX 64          /* counters kept per port (mlx5 has about 40) */
#define STB_DOC_CNT_NAME 48

typedef struct stb_doc_counters {
    int n;                                   /* known counters read */
    char name[STB_DOC_CNT_MAX][STB_DOC_CNT_NAME];
    stb_doc_counter_class_t cls[STB_DOC_CNT_MAX];
    uint64_t value[STB_DOC_CNT_MAX];
} stb_doc_counters_t;

/* The class of a counter's sysfs name; -1 for a counter the doctor does not judge
 * (traffic, packets, unknown names). */
int stb_doc_counter_class(const char *name);

/* Reads the known counters of <root>/class/infiniband/<dev>/ports/<port>/{hw_counters,
 * counters}. Returns the number read (0: the port has none in sysfs). */
int stb_doc_counters_read(const char *root, const char *dev, const char *port,
                          stb_doc_counters_t *c);

/*
 * One port's finding (what: its name): per class the sum and its nonzero counters, e.g.
 * "retransmits 12 (local_ack_timeout_err 10, duplicate_request 2)"; with before (a reading
 * interval_ms earlier, interval_ms > 0) what grew since, as stb_doc_check_counters judges it.
 */
void stb_doc_counters_report(stb_doc_t *doc, const char *what, const stb_doc_counters_t *now,
                             const stb_doc_counters_t *before, int interval_ms);

/*
 * One finding per port of every device: with interval_ms 0, the totals since the driver
 * loaded (info, or ok when every class is 0); with interval_ms > 0, two readings that far
 * apart and what grew: a warning for retransmits, sequence errors or errors, info for
 * congestion notifications alone (ECN and CNPs are the fabric's congestion control at
 * work), ok when nothing grew. Returns the number of ports whose counters were read.
 */
int stb_doc_check_counters(stb_doc_t *doc, const char *root, int interval_ms);

#endif /* STB_DOCTOR_COUNTERS_H */
