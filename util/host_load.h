/*
 * The host's runnable tasks at this instant: the running count the kernel keeps for the load
 * average (the numerator of /proc/loadavg's fourth field, "0.02 0.66 1.05 2/110 27188": 2).
 * It counts every runnable thread of the host (network namespaces share it: the emulated
 * nodes of one machine see one count), the caller's own thread included. Used by the
 * CollNet's wait to tell an otherwise idle host from a busy one (plugin/collnet_load.h).
 *
 * Thread-safe; a read of a few microseconds (open, read, close) on the caller's thread.
 */
#ifndef STU_HOST_LOAD_H
#define STU_HOST_LOAD_H

/* The running count in text (the contents of /proc/loadavg), or -1 when text is not of that
 * form (five fields, the fourth "running/total" with running >= 1 and <= total). */
int stu_loadavg_runnable(const char *text);

/* The host's running count now, or -1 when /proc/loadavg cannot be read or parsed. */
int stu_host_runnable(void);

#endif /* STU_HOST_LOAD_H */
