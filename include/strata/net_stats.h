/*
 * Telemetry of the NCCL net plugin (libnccl-net-strata.so), readable while a
 * job runs. The plugin exports these two functions beside its ncclNet tables;
 * a program that loaded the plugin (NCCL, or a tool) looks them up with
 * dlsym on the plugin's handle. Both are thread-safe and never block on the
 * data path (they take the plugin's counter registry lock, which only
 * connect, accept and close also take).
 *
 * The document is one JSON object, described field by field in
 * docs/multirail.md ("Telemetry"): per device (bytes and messages each way,
 * errors, reconnects, time blocked on back-pressure, comms) and per
 * connection (open ones, then the closed ones the plugin kept).
 * STRATA_STATS=path has the plugin write the same document at each finalize.
 */
#ifndef STRATA_NET_STATS_H
#define STRATA_NET_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Prints the document into buf (len bytes, NUL-terminated when len > 0) and
 * returns the length it needs without the NUL, as snprintf: call with
 * (NULL, 0) to size a buffer.
 */
size_t strata_net_stats_json(char *buf, size_t len);
typedef size_t (*strata_net_stats_json_fn)(char *buf, size_t len);

/*
 * Writes the document to path ("%p" becomes the process id, "%h" the host
 * name) through a temporary file renamed into place: 0, or -1 (logged).
 */
int strata_net_stats_write(const char *path);
typedef int (*strata_net_stats_write_fn)(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_NET_STATS_H */
