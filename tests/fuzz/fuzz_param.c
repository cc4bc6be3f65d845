/*
 * User input through the parameter table (util/param.c) and launcher
 * detection (coll/launch.c). An integer that parses must be exactly what the
 * text says; a value of a STRATA_* variable is accepted only when the table
 * says so (integer in range, one of the choices, a filter that parses), and
 * the value in use is then that value, else the default; a rejected value is
 * an error of validation. Launcher variables that parse give a rank below
 * the size and bounded text fields.
 */
#include <inttypes.h>

#include "fuzz.h"
#include "coll/launch.h"
#include "util/param.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    for (int i = 0; i < STU_PARAM_COUNT; i++)
        unsetenv(stu_param_def((stu_param_id_t)i)->name);
    return 0;
}

static void fuzz_parse_int(const char *text)
{
    int64_t v = 77;
    char back[32];
    if (stu_param_parse_int(text, &v) != STRATA_OK) {
        FUZZ_CHECK(v == 77);
        return;
    }
    /* plain decimals read back exactly */
    if (text[0] >= '1' && text[0] <= '9' && strspn(text, "0123456789") == strlen(text)) {
        snprintf(back, sizeof(back), "%" PRId64, v);
        FUZZ_CHECK(strcmp(back, text) == 0);
    }
}

static void fuzz_variable(stu_param_id_t id, const char *text)
{
    const stu_param_def_t *d = stu_param_def(id);
    setenv(d->name, text, 1);
    strata_status_t st = stu_param_reload();
    FUZZ_CHECK(st == STRATA_OK || st == STRATA_ERR_INVALID);
    FUZZ_CHECK(stu_param_validate() == st);
    if (d->type == STU_PARAM_TYPE_INT) {
        int64_t v = stu_param_int(id), parsed;
        FUZZ_CHECK(v >= d->min && v <= d->max);
        if (st == STRATA_OK)
            FUZZ_CHECK(stu_param_parse_int(text, &parsed) == STRATA_OK && parsed == v);
    } else {
        FUZZ_CHECK(strcmp(stu_param_str(id), text) == 0);
    }
    unsetenv(d->name);
}

/* An environment of launcher variables, the values cut from the input. */
static const char *launch_vals[8];
static const char *const launch_names[8] = {
    "STRATA_RANK",
    "STRATA_NRANKS",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "STRATA_ROOT_ADDR",
    "MASTER_PORT",
    "STRATA_NODE_ID",
};

static const char *launch_env(const char *name)
{
    for (int i = 0; i < 8; i++)
        if (strcmp(name, launch_names[i]) == 0)
            return launch_vals[i];
    if (strcmp(name, "MASTER_ADDR") == 0)
        return "h";
    return NULL;
}

static void fuzz_launch(char *text)
{
    /* '\n' separates the values; an empty value means unset */
    char *tok = text;
    for (int i = 0; i < 8; i++) {
        char *nl = tok != NULL ? strchr(tok, '\n') : NULL;
        if (nl != NULL)
            *nl = '\0';
        launch_vals[i] = tok != NULL && *tok != '\0' ? tok : NULL;
        tok = nl != NULL ? nl + 1 : NULL;
    }
    stc_launch_t l;
    if (stc_launch_detect(launch_env, &l) != STRATA_OK)
        return;
    FUZZ_CHECK(l.nranks >= 1 && l.rank >= 0 && l.rank < l.nranks);
    FUZZ_CHECK(strnlen(l.root_addr, sizeof(l.root_addr)) < sizeof(l.root_addr));
    FUZZ_CHECK(strnlen(l.node_id, sizeof(l.node_id)) < sizeof(l.node_id));
    FUZZ_CHECK(l.single_host == 0 || l.single_host == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t mode = fuzz_u8(&in);
    uint8_t which = fuzz_u8(&in);
    char *text = fuzz_rest_str(&in);
    if (mode % 3 == 0)
        fuzz_parse_int(text);
    else if (mode % 3 == 1)
        fuzz_variable((stu_param_id_t)(which % STU_PARAM_COUNT), text);
    else
        fuzz_launch(text);
    free(text);
    return 0;
}
