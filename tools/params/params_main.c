/*
 * strata-params: prints every STRATA_* variable with its default, its current
 * value and its help text, from the one parameter table (util/param.c).
 * The first line says what this build has (version, transports, sanitizers).
 * --markdown prints the README's table.
 */
#include <stdio.h>
#include <string.h>

#include "util/build_info.h"
#include "util/param.h"

int main(int argc, char **argv)
{
    int markdown = argc > 1 && strcmp(argv[1], "--markdown") == 0;

    if (argc > 1 && !markdown) {
        fprintf(stderr, "usage: %s [--markdown]\n", argv[0]);
        return 2;
    }
    if (markdown)
        printf("| variable | default | meaning |\n|---|---|---|\n");
    else
        printf("# %s\n", stu_build_info()->summary);
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        const stu_param_def_t *d = stu_param_def((stu_param_id_t)i);
        if (markdown)
            printf("| `%s` | `%s` | %s |\n", d->name, d->dflt[0] ? d->dflt : "(empty)", d->help);
        else
            printf("%-28s = %-10s (default %s)\n    %s\n", d->name,
                   stu_param_str((stu_param_id_t)i), d->dflt[0] ? d->dflt : "(empty)", d->help);
    }
    return 0;
}
