/*
 * strata-params: prints every STRATA_* variable with its default, its current
 * value, what it accepts and its help text, from the one parameter table
 * (util/param_table.c); secrets are never shown. The first line says what this
 * build has (version, transports, sanitizers). --markdown prints the README's
 * table. Exits 1 when a variable set in the environment is bad.
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
        printf("| variable | default | accepts | meaning |\n|---|---|---|---|\n");
    else
        printf("# %s\n", stu_build_info()->summary);
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        const stu_param_def_t *d = stu_param_def((stu_param_id_t)i);
        char range[128];
        stu_param_range_str((stu_param_id_t)i, range, sizeof(range));
        const char *value = stu_param_str((stu_param_id_t)i);
        if ((d->flags & STU_PARAM_SECRET) && value[0] != '\0')
            value = "(set, not shown)";
        if (markdown)
            printf("| `%s` | `%s` | %s%s%s | %s |\n", d->name, d->dflt[0] ? d->dflt : "(empty)",
                   range[0] ? "`" : "", range[0] ? range : "text", range[0] ? "`" : "",
                   d->help);
        else
            printf("%-28s = %-10s (default %s%s%s)\n    %s\n", d->name, value,
                   d->dflt[0] ? d->dflt : "(empty)", range[0] ? "; accepts " : "", range,
                   d->help);
    }
    return stu_param_validate() == STRATA_OK ? 0 : 1;
}
