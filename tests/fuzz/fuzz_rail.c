/*
 * The rail map (STRATA_RAIL_MAP, algos/rail.c): a user's text. A map that
 * parses has one entry per local rank, each a device that exists, and every
 * rank's device and the rail count stay in range.
 */
#include "fuzz.h"
#include "algos/rail.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sta_rail_map_t map;
    fuzz_in_t in = {data, size};
    int local_size = (int)(fuzz_u32(&in) % (STA_RAIL_MAP_MAX + 2)); /* 0 and max+1 too */
    int ndev = (int)(fuzz_u8(&in) % 18);
    char *spec = fuzz_rest_str(&in);

    if (sta_rail_map_parse(spec, local_size, ndev, &map) == STRATA_OK) {
        FUZZ_CHECK(local_size >= 1 && ndev >= 1);
        FUZZ_CHECK(map.nentries == 0 || map.nentries == local_size);
        int rails = sta_rail_count(local_size, ndev, &map);
        FUZZ_CHECK(rails >= 1 && rails <= ndev && rails <= local_size);
        for (int r = 0; r < local_size; r++) {
            int d = sta_rail_device(r, ndev, &map);
            FUZZ_CHECK(d >= 0 && d < ndev);
        }
    }
    free(spec);
    return 0;
}
