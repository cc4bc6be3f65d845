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
# Layers (docs/architecture.md): util <- transport <- algos <- coll <- tools, and plugin/
# (the NCCL edge) on transport. Each folder is globbed, so adding a file needs no Makefile
# edit. Optional transports are compiled only when their dependency was found.
XPORT_DIRS := transport transport/base transport/tcp transport/loop
ifeq ($(HAVE_IBVERBS),1)
XPORT_DIRS += transport/ib
endif
ifeq ($(HAVE_UCX),1)
XPORT_DIRS += transport/ucx
endif
srcs_in = $(foreach d,$(1),$(wildcard $(d)/*.c))
objs_of = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
XPORT_OBJ := $(call objs_of,$(call srcs_in,util $(XPORT_DIRS)))
COLL_OBJ := $(call objs_of,$(call srcs_in,algos coll))
PLUGIN_OBJ := $(call objs_of,$(call srcs_in,plugin))
LIB_OBJ := $(XPORT_OBJ) $(COLL_OBJ)

SUPPORT_SRC := $(wildcard tests/support/*.c)
SUPPORT_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)

# Tools and benchmarks: every tools/<name>/<name>_main.c and bench/<name>/<name>_main.c is
# build/bin/strata-<name>; the other files of those folders and tools/lib form one archive.
TOOL_MAINS := $(wildcard tools/*/*_main.c bench/*/*_main.c)
TOOLLIB_SRC := $(filter-out %_main.c,$(wildcard tools/*/*.c bench/perf/*.c bench/netperf/*.c \
	bench/reduce/*.c))
TOOLLIB_OBJ := $(TOOLLIB_SRC:%.c=$(BUILD)/obj/%.o)
tool_name = $(notdir $(patsubst %/,%,$(dir $(1))))
TOOLS := $(foreach m,$(TOOL_MAINS),$(BUILD)/bin/strata-$(call tool_name,$(m)))

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
# The plugin's objects as an archive, for the unit tests of its shims.
PLUGIN_LIB := $(BUILD)/lib/libstrata_plugin.a
# tools/lib and the tools' and benchmarks' own files, so unit tests can link the pure parts.
TOOL_LIB := $(BUILD)/lib/libstrata_tools.a
PLUGIN_PATH_DEF := -DSTRATA_PLUGIN_PATH='"$(abspath $(PLUGIN_SO))"' \
	-DSTRATA_SOURCE_DIR='"$(CURDIR)"' \
	-DSTRATA_BUILD_DIR='"$(abspath $(BUILD))"'

CFLAGS := $(CFLAGS_BASE) $(CFLAGS)
TEST_CFLAGS := $(CFLAGS) $(CMOCKA_CFLAGS) $(PLUGIN_PATH_DEF) -Itests/support

.PHONY: all lib tools tests test check lint clean install demo bench
.SECONDARY:   # keep every intermediate object (tools, tests/support) test-rdma
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

$(TOOL_LIB): $(TOOLLIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(PLUGIN_LIB): $(PLUGIN_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

# The plugin links the transports and the NCCL edge only: no algos/, no coll/.
$(PLUGIN_SO): $(PLUGIN_OBJ) $(XPORT_OBJ) plugin/exports.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@ $(PLUGIN_OBJ) $(XPORT_OBJ) $(LDFLAGS_BASE) \
		-Wl,--version-script=plugin/exports.map \
		-Wl,-soname,libnccl-net-strata.so -Wl,-z,defs $(LDLIBS_BASE)

$(PLUGIN_LINK): $(PLUGIN_SO)
	$(Q)ln -sf libnccl-net-strata.so $@

define tool_rule
$(BUILD)/bin/strata-$(call tool_name,$(1)): $(1) $(TOOL_LIB) $(INTERNAL_LIB)
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	$$(Q)$$(CC) $$(CFLAGS) $$(PLUGIN_PATH_DEF) -DSTRATA_VERSION='"$$(VERSION)"' \
		-MMD -MP -MF $$@.d -o $$@ $$< $(TOOL_LIB) $(INTERNAL_LIB) \
		$$(LDFLAGS_BASE) $$(LDLIBS_BASE)
endef
$(foreach m,$(TOOL_MAINS),$(eval $(call tool_rule,$(m))))

ifeq ($(HAVE_CMOCKA),1)
tests: $(TESTS) $(HELPERS) $(PLUGIN_SO) $(TOOLS)
$(BUILD)/tests/%: tests/%.c $(SUPPORT_OBJ) $(TOOL_LIB) $(PLUGIN_LIB) $(INTERNAL_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -MMD -MP -MF $@.d -o $@ $< $(SUPPORT_OBJ) $(TOOL_LIB) $(PLUGIN_LIB) \
		$(INTERNAL_LIB) \
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

# The RDMA tests: boots the Soft-RoCE guest once (scripts/softroce) and runs the
# ib transport's tests, the conformance suite, the functional tests over ib and
# perftest next to the transport's own figures inside it. Root, both cores.
SOFTROCE_TIMEOUT ?= 2400
test-rdma: all tests
	SOFTROCE_TIMEOUT=$(SOFTROCE_TIMEOUT) SOFTROCE_ENV="STRATA_DEBUG STS_TIMEOUT_SCALE" \
		scripts/softroce/run-in-softroce.sh scripts/softroce/guest-test-rdma.sh $(BUILD)

# Layering: only plugin/ may include the NCCL ABI; util includes no upper layer.
lint:
	@scripts/lint.sh

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

# The demo, the README's first command: build, then scripts/demo.sh (a 4-rank allreduce over two
# emulated nodes, the nccl-tests table, plots in $(BUILD)/demo/).
demo: all
	@BUILD=$(BUILD) scripts/demo.sh

clean:
	rm -rf build

# A/B programs against OpenMPI and Gloo, when those are installed.
include bench/ab/ab.mk

# libFuzzer harnesses (make fuzz) and the ThreadSanitizer pass (make check-tsan).
include mk/fuzz.mk
include mk/tsan.mk

-include $(LIB_OBJ:.o=.d) $(PLUGIN_OBJ:.o=.d) $(SUPPORT_OBJ:.o=.d) $(TOOLLIB_OBJ:.o=.d) $(TESTS:=.d) $(HELPERS:=.d) \
	$(TOOLS:=.d)
