/*
 * strata-doctor's checks of a host's RDMA fabric, read from sysfs under a root
 * that tests move onto a fixture tree: every verbs device and port (state,
 * physical state, link layer, rate, LID on InfiniBand, a RoCE v2 GID and its
 * netdev's MTU on Ethernet), the user-space verbs nodes, and the GPU
 * peer-memory module. Each finding is one line, "[ ok ]", "[info]", "[warn]"
 * or "[FAIL]", with what to do about it; counts decide the exit status.
 *
 * No verbs calls and no global state: a report writes to its own FILE.
 */
#ifndef STB_DOCTOR_H
#define STB_DOCTOR_H

#include <stdint.h>
#include <stdio.h>

#include "util/build_info.h"
#include "util/compiler.h"

typedef enum stb_doc_level {
    STB_DOC_OK = 0,
    STB_DOC_INFO,
    STB_DOC_WARN,
    STB_DOC_FAIL,
    STB_DOC_LEVELS
} stb_doc_level_t;

typedef struct stb_doc {
    FILE *out;
    int count[STB_DOC_LEVELS];
} stb_doc_t;

/* First line of <root>/<rel...> without its newline; 0 when it cannot be read. */
int stb_doc_read(char *buf, size_t len, const char *root, const char *fmt, ...) STU_PRINTF(4, 5);

/* The entries of <root>/<rel> that do not start with '.', sorted (*names_p: the caller
 * frees it with stb_doc_list_free); 0 when the directory cannot be read. */
int stb_doc_list(const char *root, const char *rel, char ***names_p);
void stb_doc_list_free(char **names, int n);

/* Writes one finding: "[tag] <what>: <detail>". */
void stb_doc_report(stb_doc_t *doc, stb_doc_level_t level, const char *what, const char *fmt,
                    ...) STU_PRINTF(4, 5);

/*
 * Every device under <sysroot>/class/infiniband and each of its ports. No device is a
 * warning (the plugin then runs over TCP), not a failure. Returns the number of ports that
 * are ACTIVE with a usable address (a LID, or a RoCE v2 GID).
 */
int stb_doc_check_rdma(stb_doc_t *doc, const char *sysroot);

/* The memlock limit RDMA registration needs: unlimited or at least 1 GiB, else a warning. */
void stb_doc_check_memlock(stb_doc_t *doc, uint64_t soft_limit_bytes, int unlimited);

/*
 * The build itself: its summary line (version, transports, sanitizers) as info, and a
 * failure, with the package to install, when the host asks for what the build lacks:
 * STRATA_TRANSPORT (transport_env, may be NULL) naming a transport not built in, or
 * active RDMA ports (rdma_ports, from stb_doc_check_rdma) and no ib transport.
 */
void stb_doc_check_build(stb_doc_t *doc, const stu_build_info_t *info, const char *transport_env,
                         int rdma_ports);

/*
 * The run-time library of one transport built in (transport, e.g. "ib"; library, its
 * file, "libibverbs.so.1"; why, NULL when it loaded, else why not): ok when it loaded;
 * when not, a failure if STRATA_TRANSPORT names the transport or, for ib, RDMA ports are
 * active (traffic would fall back to TCP), else info (the transport is unavailable).
 */
void stb_doc_check_library(stb_doc_t *doc, const char *transport, const char *library,
                           const char *why, const char *transport_env, int rdma_ports);

#endif /* STB_DOCTOR_H */
