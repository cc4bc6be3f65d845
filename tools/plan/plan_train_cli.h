/* strata-plan train's entry point, called by strata-plan's main for "strata-plan train ...". */
#ifndef STB_PLAN_TRAIN_CLI_H
#define STB_PLAN_TRAIN_CLI_H

/* argv[0] is "train". Prints to stdout (the plan) and stderr (errors); returns the exit
 * status: 0, 1 (a file could not be read or written), 2 (bad input). */
int stb_train_main(int argc, char **argv);

#endif /* STB_PLAN_TRAIN_CLI_H */
