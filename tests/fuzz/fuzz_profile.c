/*
 * Fabric profiles (STRATA_PROFILE, algos/profile.c), a user's file, parsed
 * from memory as the library does after its bounded read. A profile that
 * parses yields a model every field of which is in range (α >= 0, β and γ
 * > 0, all finite); a failed parse leaves the model alone.
 */
#include <math.h>

#include "fuzz.h"
#include "algos/profile.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sta_model_t m, before;
    if (size > STA_PROFILE_MAX_BYTES)
        return 0; /* the bounded read refuses it before any parsing */
    sta_model_default(&m);
    before = m;
    if (sta_profile_parse((const char *)data, size, "fuzz", &m) != STRATA_OK) {
        FUZZ_CHECK(memcmp(&m, &before, sizeof(m)) == 0);
        return 0;
    }
    const sta_tier_t *t[2] = {&m.shm, &m.net};
    for (int i = 0; i < 2; i++) {
        FUZZ_CHECK(isfinite(t[i]->alpha_us) && t[i]->alpha_us >= 0.0);
        FUZZ_CHECK(isfinite(t[i]->beta_gbps) && t[i]->beta_gbps > 0.0);
    }
    FUZZ_CHECK(isfinite(m.gamma_gbps) && m.gamma_gbps > 0.0);
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        FUZZ_CHECK(m.source[f] == STA_SRC_DEFAULT || m.source[f] == STA_SRC_PROFILE);
    return 0;
}
