/*
 * What this build of Strata has: version, transports compiled in, sanitizers, debug.
 * make writes the answers into a generated header (the Makefile's CONFIG_H) on every
 * run; this is the one place that reads it. Thread-safe, no allocation.
 */
#ifndef STU_BUILD_INFO_H
#define STU_BUILD_INFO_H

typedef struct stu_build_info {
    const char *version;      /* the Makefile's VERSION, "0.1.0" */
    const char *transports;   /* built in, in registry order, space separated: "ib ucx tcp loop" */
    const char *missing;      /* left out, as "name:debian-package" words; "" when none */
    const char *sanitizers;   /* "asan ubsan", "tsan", ... or "none" */
    int debug;                /* 1 for a DEBUG=1 build (-O0, assertions) */
    const char *summary;      /* the line make prints last: all of the above in words */
} stu_build_info_t;

const stu_build_info_t *stu_build_info(void);

#endif /* STU_BUILD_INFO_H */
