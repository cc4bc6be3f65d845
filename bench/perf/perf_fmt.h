/*
 * strata-perf's output, laid out as nccl-tests (v2.19) lays out its own
 * (its src/common.cu and src/util.cu print the same table) so the two diff line
 * by line: the same header lines, the same columns and widths, the same
 * footer. Strata's additions go to the right of a row (the algorithm and the
 * model's prediction) or on lines of their own that start with "#".
 *
 * Pure formatting: rows into a caller's buffer, headers and footers to a
 * FILE * (tests pass open_memstream). Thread-safe.
 */
#ifndef STB_PERF_FMT_H
#define STB_PERF_FMT_H

#include <stddef.h>
#include <stdio.h>

#include "bench/perf/perf_opts.h"

/* One row of the table: both placements of one size. */
typedef struct stb_perf_row {
    size_t bytes;               /* the "size" column */
    size_t count;               /* per-rank parameter count */
    const char *type;           /* nccl-tests' type name */
    const char *redop;          /* op name, or "none" */
    int root;                   /* -1 where the collective has none */
    double time_us[2];          /* [0] out-of-place, [1] in-place */
    double algbw[2];            /* GB/s = 10^9 B/s */
    double busbw[2];
    long long wrong[2];         /* wrong elements summed over ranks */
    int checked;                /* 0: #wrong prints N/A, as with -c 0 */
    const char *algo;           /* the selector's choice, or NULL: no extra columns */
    double model_us;            /* predicted time; < 0 prints "-" */
} stb_perf_row_t;

/* What the header says about the run (nccl-tests' "# nThread ..." line and the devices). */
typedef struct stb_perf_hdr {
    const char *version;        /* strata's version string */
    const char *test;           /* stb_perf_test_name() */
    const stb_perf_opts_t *opts;
} stb_perf_hdr_t;

/*
 * Formats value into exactly `width` characters (wider only if the value needs it), with
 * two, one or no decimals as its integer digits leave room, as nccl-tests does, then an
 * exponent form when even the integer part does not fit. buf must hold width + 16 bytes.
 */
void stb_perf_float_str(double value, int width, char *buf, size_t len);

/* The row, newline included, into buf. Returns snprintf's count (>= len means truncated). */
int stb_perf_row_format(const stb_perf_row_t *row, char *buf, size_t len);

/* The opening lines, up to and including "# Using devices". */
void stb_perf_header_print(FILE *out, const stb_perf_hdr_t *hdr);

/* One "#  Rank ..." device line. */
void stb_perf_device_print(FILE *out, int rank, int pid, const char *host, int node,
                           int local_rank, const char *what);

/* "#" and the three column-title lines; extra = 1 adds strata's algo and model columns. */
void stb_perf_columns_print(FILE *out, int extra);

/* The footer: out-of-bounds count, average bus bandwidth, the closing line. */
void stb_perf_footer_print(FILE *out, long long wrong, double avg_busbw, const char *test);

#endif /* STB_PERF_FMT_H */
