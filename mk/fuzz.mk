# libFuzzer harnesses (tests/fuzz/fuzz_*.c), one per parser of a peer's or a user's input.
# `make fuzz` builds them with Debian's clang (-fsanitize=fuzzer,address,undefined) into
# build/fuzz and runs each for FUZZ_SECONDS on a corpus seeded by tests/fuzz/fuzz_seeds.c
# (scripts/fuzz.sh); FUZZ_RUNS=N runs each for N executions instead (the long run that
# docs/reliability.md records), FUZZ_ONLY="a b" only those. `make fuzz-build` only builds.

FUZZ_CC ?= clang
FUZZ_DIR := build/fuzz
FUZZ_SECONDS ?= 20
FUZZ_RUNS ?=
# (string entries of the parameter table leave min and max zero on purpose)
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fno-omit-frame-pointer -I. -Iinclude \
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
# The parsers and what they use; an archive, so each harness links only what it calls.
FUZZ_LIB_SRC := util/log.c util/param.c util/param_table.c util/name_filter.c util/fuse.c util/file.c \
	util/hmac.c util/status.c transport/tcp/tcp_wire.c transport/ib/ib_wire.c \
	transport/ib/ib_fifo.c transport/ucx/ucx_wire.c coll/boot_wire.c coll/launch.c \
	algos/profile.c algos/rail.c algos/cost_model.c algos/cost_names.c algos/cost_sizes.c \
	plugin/collnet_wire.c
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_LIB := $(FUZZ_DIR)/libstrata_fuzz.a
FUZZ_SRC := $(filter-out tests/fuzz/fuzz_seeds.c,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/%,$(FUZZ_SRC))

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS) $(FUZZ_DIR)/fuzz_seeds

fuzz: fuzz-build
	@FUZZ_ONLY="$(FUZZ_ONLY)" scripts/fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_RUNS)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BINS): $(FUZZ_DIR)/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_LIB)
	@echo "  FUZZLD  $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) -lm -pthread

$(FUZZ_DIR)/fuzz_seeds: tests/fuzz/fuzz_seeds.c $(FUZZ_LIB)
	@echo "  FUZZLD  $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_LIB) -lm -pthread

-include $(FUZZ_LIB_OBJ:.o=.d)
