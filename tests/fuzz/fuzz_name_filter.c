/*
 * Device and interface filters (STRATA_SOCKET_IFNAME, STRATA_IB_HCA:
 * util/name_filter.c), a user's text. A filter that parses has at most
 * STU_NAME_FILTER_MAX entries, each a terminated name shorter than the limit
 * with a port in range; a failed parse leaves the output alone; matching any
 * name against it is safe, and an exclusion filter is the complement.
 */
#include "fuzz.h"
#include "util/name_filter.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *names[] = {"eth0", "ib0", "lo", "mlx5_0", "docker0", "", "e"};
    stu_name_filter_t f, before;
    fuzz_in_t in = {data, size};
    int port = (int)(fuzz_u8(&in)) - 1;
    char *spec = fuzz_rest_str(&in);

    memset(&f, 0x5a, sizeof(f));
    before = f;
    if (stu_name_filter_parse(spec, &f) != STRATA_OK) {
        FUZZ_CHECK(memcmp(&f, &before, sizeof(f)) == 0);
        free(spec);
        return 0;
    }
    FUZZ_CHECK(f.count >= 0 && f.count <= STU_NAME_FILTER_MAX);
    for (int i = 0; i < f.count; i++) {
        size_t n = strnlen(f.entries[i].name, STU_NAME_FILTER_NAMELEN);
        FUZZ_CHECK(n > 0 && n < STU_NAME_FILTER_NAMELEN);
        FUZZ_CHECK(f.entries[i].port >= -1 && f.entries[i].port <= 255);
    }
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        bool hit = stu_name_filter_match(&f, names[k], port);
        if (f.count > 0) {
            stu_name_filter_t g = f;
            g.exclude = !g.exclude;
            FUZZ_CHECK(stu_name_filter_match(&g, names[k], port) == !hit);
        }
    }
    /* an entry's own name always matches (or is excluded), at any port it allows */
    if (f.count > 0)
        FUZZ_CHECK(stu_name_filter_match(&f, f.entries[0].name, f.entries[0].port) ==
                   !f.exclude);
    free(spec);
    return 0;
}
