/*
 * Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c, built by `make fuzz`
 * with clang -fsanitize=fuzzer,address,undefined): quiet but fully formatted
 * logging, a cursor that takes typed values from the input, and the check
 * that turns a broken invariant into a crash the fuzzer reports.
 */
#ifndef STF_FUZZ_H
#define STF_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* Every message is formatted (a bad format argument is caught), none is printed. */
static void fuzz_log_sink(int level, unsigned long flags, const char *file, int line,
                          const char *msg)
{
    (void)level, (void)flags, (void)file, (void)line, (void)msg;
}

static inline void fuzz_quiet(void)
{
    stu_log_set_sink(fuzz_log_sink, STU_LOG_TRACE);
}

/* An invariant of the parser under test; a failure is a finding. */
#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

typedef struct fuzz_in {
    const uint8_t *p;
    size_t left;
} fuzz_in_t;

/* n bytes into out, zero-filled once the input runs out. */
static inline void fuzz_take(fuzz_in_t *in, void *out, size_t n)
{
    size_t k = n < in->left ? n : in->left;
    memcpy(out, in->p, k);
    memset((uint8_t *)out + k, 0, n - k);
    in->p += k;
    in->left -= k;
}

static inline uint8_t fuzz_u8(fuzz_in_t *in)
{
    uint8_t v;
    fuzz_take(in, &v, 1);
    return v;
}

static inline uint32_t fuzz_u32(fuzz_in_t *in)
{
    uint32_t v;
    fuzz_take(in, &v, sizeof(v));
    return v;
}

static inline uint64_t fuzz_u64(fuzz_in_t *in)
{
    uint64_t v;
    fuzz_take(in, &v, sizeof(v));
    return v;
}

/* The rest of the input as a NUL-terminated string in a heap buffer (free it). */
static inline char *fuzz_rest_str(fuzz_in_t *in)
{
    char *s = malloc(in->left + 1);
    if (s == NULL)
        abort();
    memcpy(s, in->p, in->left);
    s[in->left] = '\0';
    in->p += in->left;
    in->left = 0;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif /* STF_FUZZ_H */
