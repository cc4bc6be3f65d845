# Strata: plain make. `make` builds the plugin, the internal library and the
# tools; `make test` runs every test binary under a timeout. See mk/config.mk
# for the knobs (DEBUG, ASAN, UBSAN, TSAN, WERROR) and feature detection.

include mk/config.mk

# V=1 prints every command.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)

VERSION := 0.1.0
LDFLAGS_BASE += -Wl,--as-needed

# ---------------------------------------------------------------- sources
# The library: util <- transport <- algos <- plugin/api. Each folder is
# globbed, so adding a file needs no Makefile edit. Optional transports are
# compiled only when their dependency was found.
LIB_DIRS := util plugin/transport plugin/transport/tcp plugin/transport/loop algos coll plugin/api
ifeq ($(HAVE_IBVERBS),1)
LIB_DIRS += plugin/transport/ib
endif
ifeq ($(HAVE_UCX),1)
LIB_DIRS += plugin/transport/ucx
endif
LIB_SRC := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)

SUPPORT_SRC := $(wildcard tests/support/*.c)
SUPPORT_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)
BENCHLIB_SRC := $(wildcard bench/lib/*.c)
BENCHLIB_OBJ := $(BENCHLIB_SRC:%.c=$(BUILD)/obj/%.o)

# Every bench/<name>.c is a tool, build/bin/strata-<name>.
TOOL_SRC := $(wildcard bench/*.c)
TOOLS := $(patsubst bench/%.c,$(BUILD)/bin/strata-%,$(TOOL_SRC))

# Every tests/<tier>/test_<name>.c is one cmocka binary.
TEST_SRC := $(wildcard tests/unit/test_*.c tests/transport/test_*.c tests/functional/test_*.c)
# Helper programs tests spawn (tests/<tier>/helper_<name>.c).
HELPER_SRC := $(wildcard tests/*/helper_*.c)
ifneq ($(HAVE_IBVERBS),1)
# The ib transport's own tests and helpers need its objects.
not_ib = $(foreach f,$(1),$(if $(findstring _ib_,$(notdir $(f))),,$(f)))
TEST_SRC := $(call not_ib,$(TEST_SRC))
HELPER_SRC := $(call not_ib,$(HELPER_SRC))
endif
ifneq ($(HAVE_UCX),1)
# Likewise the ucx transport's (test_ucx_*).
not_ucx = $(foreach f,$(1),$(if $(findstring _ucx_,$(notdir $(f))),,$(f)))
TEST_SRC := $(call not_ucx,$(TEST_SRC))
endif
TESTS := $(TEST_SRC:%.c=$(BUILD)/%)
HELPERS := $(HELPER_SRC:%.c=$(BUILD)/%)

PLUGIN_SO := $(BUILD)/lib/libnccl-net-strata.so
PLUGIN_LINK := $(BUILD)/lib/libnccl-net.so
INTERNAL_LIB := $(BUILD)/lib/libstrata_internal.a
# The tools' helpers (bench/lib) as an archive, so unit tests can link the pure parts.
BENCH_LIB := $(BUILD)/lib/libstrata_bench.a
PLUGIN_PATH_DEF := -DSTRATA_PLUGIN_PATH='"$(abspath $(PLUGIN_SO))"' \
	-DSTRATA_SOURCE_DIR='"$(CURDIR)"' \
	-DSTRATA_BUILD_DIR='"$(abspath $(BUILD))"'

CFLAGS := $(CFLAGS_BASE) $(CFLAGS)
TEST_CFLAGS := $(CFLAGS) $(CMOCKA_CFLAGS) $(PLUGIN_PATH_DEF) -Itests/support -Ibench/lib

.PHONY: all lib tools tests test check lint clean install demo bench
.SECONDARY:   # keep every intermediate object (bench/lib, tests/support) test-rdma
all: $(PLUGIN_SO) $(PLUGIN_LINK) $(INTERNAL_LIB) tools
lib: $(PLUGIN_SO) $(PLUGIN_LINK) $(INTERNAL_LIB)
tools: $(TOOLS)

# ---------------------------------------------------------------- rules
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) $(PLUGIN_PATH_DEF) -MMD -MP -c $< -o $@

$(INTERNAL_LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BENCH_LIB): $(BENCHLIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(PLUGIN_SO): $(LIB_OBJ) plugin/exports.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@ $(LIB_OBJ) $(LDFLAGS_BASE) -Wl,--version-script=plugin/exports.map \
		-Wl,-soname,libnccl-net-strata.so -Wl,-z,defs $(LDLIBS_BASE)

$(PLUGIN_LINK): $(PLUGIN_SO)
	$(Q)ln -sf libnccl-net-strata.so $@

$(BUILD)/bin/strata-%: bench/%.c $(BENCHLIB_OBJ) $(INTERNAL_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(PLUGIN_PATH_DEF) -DSTRATA_VERSION='"$(VERSION)"' -Ibench/lib \
		-MMD -MP -MF $@.d -o $@ $< $(BENCHLIB_OBJ) $(INTERNAL_LIB) \
		$(LDFLAGS_BASE) $(LDLIBS_BASE)

ifeq ($(HAVE_CMOCKA),1)
tests: $(TESTS) $(HELPERS) $(PLUGIN_SO) $(TOOLS)
$(BUILD)/tests/%: tests/%.c $(SUPPORT_OBJ) $(BENCH_LIB) $(INTERNAL_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -MMD -MP -MF $@.d -o $@ $< $(SUPPORT_OBJ) $(BENCH_LIB) $(INTERNAL_LIB) \
		$(LDFLAGS_BASE) \
		$(CMOCKA_LIBS) $(LDLIBS_BASE)
$(BUILD)/obj/tests/support/%.o: tests/support/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

# With UCX, the NCCL-plugin functional tests and one collective test run a second time
# over the ucx transport (named only, so the first pass never uses it); ~30 s.
UCX_AGAIN := $(filter $(BUILD)/tests/functional/test_plugin_% \
	$(BUILD)/tests/functional/test_coll_allreduce,$(TESTS))
test: all tests
	@BUILD=$(BUILD) tests/run.sh $(TESTS)
ifeq ($(HAVE_UCX),1)
	@echo "-- again over the ucx transport (STRATA_TRANSPORT=ucx)"
	@STRATA_TRANSPORT=ucx STS_CYCLES=300 BUILD=$(BUILD) tests/run.sh $(UCX_AGAIN)
endif

# What CI runs: the layering lint, the tests, then the tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (a separate build in build/san).
check: lint test
	$(MAKE) ASAN=1 UBSAN=1 test
else
tests test check:
	@echo "cmocka not found (apt-get install libcmocka-dev): tests cannot be built" >&2; exit 1
endif

# The RDMA tests: boots the Soft-RoCE guest once (tools/softroce) and runs the
# ib transport's tests, the conformance suite, the functional tests over ib and
# perftest next to the transport's own figures inside it. Root, both cores.
SOFTROCE_TIMEOUT ?= 2400
test-rdma: all tests
	SOFTROCE_TIMEOUT=$(SOFTROCE_TIMEOUT) SOFTROCE_ENV="STRATA_DEBUG STS_TIMEOUT_SCALE" \
		tools/softroce/run-in-softroce.sh tools/softroce/guest-test-rdma.sh $(BUILD)

# Layering: only plugin/ may include the NCCL ABI; util includes no upper layer.
lint:
	@tools/lint.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/strata \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(PLUGIN_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libnccl-net-strata.so $(DESTDIR)$(PREFIX)/lib/libnccl-net.so
	install -m 644 $(INTERNAL_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/strata/*.h $(DESTDIR)$(PREFIX)/include/strata/
	for t in $(TOOLS); do install -m 755 $$t $(DESTDIR)$(PREFIX)/bin/; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@LIBS@|$(strip $(LDLIBS_BASE))|' strata.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/strata.pc

# The demo, the README's first command: build, then tools/demo.sh (a 4-rank allreduce over two
# emulated nodes, the nccl-tests table, plots in $(BUILD)/demo/).
demo: all
	@BUILD=$(BUILD) tools/demo.sh

clean:
	rm -rf build

# A/B programs against OpenMPI and Gloo, when those are installed.
include bench/ab/ab.mk

-include $(LIB_OBJ:.o=.d) $(SUPPORT_OBJ:.o=.d) $(BENCHLIB_OBJ:.o=.d) $(TESTS:=.d) $(HELPERS:=.d) \
	$(TOOLS:=.d)
