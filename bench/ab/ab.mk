# A/B benchmarks against peers (bench/ab/, see docs/benchmarks.md "A/B against peers"):
# our own small MPI_Allreduce and Gloo allreduce programs in nccl-tests' output layout,
# built into $(BUILD)/bench/ab/ when mpicc and Gloo's headers are found. Included by the
# top-level Makefile; `make ab` builds just these.
#
# They are built without sanitizers even in ASAN/UBSAN builds: they time other
# libraries, whose own leaks LeakSanitizer would report as ours.

MPICC ?= mpicc
AB_HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo 1 || echo 0)
AB_HAVE_GLOO := $(shell printf '\043include <gloo/allreduce_ring.h>\n' | \
	$(CXX) -std=c++17 -x c++ -E - >/dev/null 2>&1 && echo 1 || echo 0)

AB_DIR := $(BUILD)/bench/ab
AB_MPI := $(AB_DIR)/mpi_allreduce
AB_GLOO := $(AB_DIR)/gloo_allreduce
AB_COMMON_OBJ := $(AB_DIR)/ab_common.o
AB_CFLAGS := $(filter-out $(SAN_FLAGS),$(CFLAGS))
AB_CXXFLAGS := -std=c++17 -O2 -g -pthread -Wall -Wextra -Wshadow -Wno-unused-parameter \
	$(if $(filter 1,$(WERROR)),-Werror)
AB_LDFLAGS := $(filter-out $(SAN_FLAGS),$(LDFLAGS_BASE))

AB_TARGETS := $(if $(filter 1,$(AB_HAVE_MPI)),$(AB_MPI)) \
	$(if $(filter 1,$(AB_HAVE_GLOO)),$(AB_GLOO))

.PHONY: ab
all: ab
ab: $(AB_TARGETS)
ifneq ($(AB_HAVE_MPI),1)
	@echo "bench/ab: $(MPICC) not found: the OpenMPI A/B program is not built" \
		"(apt-get install openmpi-bin libopenmpi-dev, or scripts/setup-debian.sh)"
endif
ifneq ($(AB_HAVE_GLOO),1)
	@echo "bench/ab: Gloo headers not found by $(CXX): the Gloo A/B program is not built" \
		"(apt-get install libgloo-dev, or scripts/setup-debian.sh)"
endif

$(AB_COMMON_OBJ): bench/ab/ab_common.c bench/ab/ab_common.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(AB_CFLAGS) -c $< -o $@

$(AB_MPI): bench/ab/mpi_allreduce.c bench/ab/ab_common.h $(AB_COMMON_OBJ)
	@mkdir -p $(dir $@)
	@echo "  MPICC   $@"
	$(Q)$(MPICC) $(AB_CFLAGS) -o $@ $< $(AB_COMMON_OBJ) $(AB_LDFLAGS) -lm

$(AB_GLOO): bench/ab/gloo_allreduce.cc bench/ab/ab_common.h $(AB_COMMON_OBJ)
	@mkdir -p $(dir $@)
	@echo "  CXX     $@"
	$(Q)$(CXX) $(AB_CXXFLAGS) -Ibench/ab -o $@ $< $(AB_COMMON_OBJ) $(AB_LDFLAGS) -lgloo -lm

# The functional test runs bench/ab/run.sh and nccl_ab.sh from the source tree
# against the programs above.
$(BUILD)/tests/functional/test_bench_ab: TEST_CFLAGS += -DSTRATA_SOURCE_DIR='"$(abspath .)"'
$(BUILD)/tests/functional/test_bench_ab: | ab
