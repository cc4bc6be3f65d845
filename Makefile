# Strata: plain make. `make` builds the plugin, the collective library (libstrata.so,
# libstrata.a) and the tools, and ends with one line naming what the build has; `make test`
# runs every test binary under a timeout. See mk/config.mk for the knobs (DEBUG, ASAN,
# UBSAN, TSAN, WERROR) and feature detection.

include mk/config.mk

# V=1 prints every command.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)

# The one version number. include/strata/strata.h carries it too, for programs compiled
# against the header; make stops here when the two disagree.
VERSION := 0.1.0
VERSION_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
HEADER_VERSION := $(shell sed -n 's/^\#define STRATA_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\)$$/\2/p' \
	include/strata/strata.h | paste -sd.)
HEADER_VERSION_STRING := $(shell sed -n 's/^\#define STRATA_VERSION_STRING "\(.*\)"$$/\1/p' \
	include/strata/strata.h)
ifneq ($(VERSION) $(VERSION),$(HEADER_VERSION) $(HEADER_VERSION_STRING))
$(error VERSION is $(VERSION) but include/strata/strata.h says $(HEADER_VERSION) \
	("$(HEADER_VERSION_STRING)"): update STRATA_VERSION_MAJOR/MINOR/PATCH/STRING)
endif
LDFLAGS_BASE += -Wl,--as-needed

# One line that says what this build has; make's last line, and strata-params and
# strata-doctor print it too (through the generated header below).
comma := ,
BUILD_SUMMARY := strata $(VERSION): transports $(BUILD_TRANSPORTS)$(if $(BUILD_MISSING), \
	(not built: $(subst :, needs ,$(subst $() ,$(comma) ,$(BUILD_MISSING)))$(comma) \
	run scripts/setup-debian.sh then make)); sanitizers $(BUILD_SANITIZERS); $(BUILD_MODE)

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
ALGOS_OBJ := $(call objs_of,$(call srcs_in,algos))
COLL_OBJ := $(ALGOS_OBJ) $(call objs_of,$(call srcs_in,coll))
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
# The collective library as shipped: libstrata.so.X.Y.Z (soname libstrata.so.X) exporting
# only strata_* (coll/libstrata.map), and libstrata.a, the same objects linked into one
# whose internal symbols are made local, so a static link sees only strata_* too.
LIBSTRATA_REAL := $(BUILD)/lib/libstrata.so.$(VERSION)
LIBSTRATA_SONAME := libstrata.so.$(VERSION_MAJOR)
LIBSTRATA_SO := $(BUILD)/lib/libstrata.so
LIBSTRATA_A := $(BUILD)/lib/libstrata.a
LIBSTRATA := $(LIBSTRATA_REAL) $(BUILD)/lib/$(LIBSTRATA_SONAME) $(LIBSTRATA_SO) $(LIBSTRATA_A)
# Every object of util/, transport/, algos/ and coll/ with every symbol, for the tools and
# tests that call internal functions.
INTERNAL_LIB := $(BUILD)/lib/libstrata_internal.a
# algos/ as an archive: the plugin's tuner and CollNet link from it only what they use.
ALGOS_LIB := $(BUILD)/lib/libstrata_algos.a
# The plugin's objects as an archive, for the unit tests of its shims.
PLUGIN_LIB := $(BUILD)/lib/libstrata_plugin.a
# tools/lib and the tools' and benchmarks' own files, so unit tests can link the pure parts.
TOOL_LIB := $(BUILD)/lib/libstrata_tools.a
PLUGIN_PATH_DEF := -DSTRATA_PLUGIN_PATH='"$(abspath $(PLUGIN_SO))"' \
	-DSTRATA_SOURCE_DIR='"$(CURDIR)"' \
	-DSTRATA_BUILD_DIR='"$(abspath $(BUILD))"'

CFLAGS := $(CFLAGS_BASE) $(CFLAGS)
TEST_CFLAGS := $(CFLAGS) $(CMOCKA_CFLAGS) $(PLUGIN_PATH_DEF) -Itests/support

.PHONY: all lib tools tests test check lint clean install demo bench test-install test-config FORCE
.SECONDARY:   # keep every intermediate object (tools, tests/support) test-rdma
# The last line of `make` and `make lib`: what this build has.
say_summary = @echo "$(BUILD_SUMMARY); tests $(if $(filter 1,$(HAVE_CMOCKA)),can be built,\
	cannot be built (needs libcmocka-dev)); in $(BUILD)/"
all: $(PLUGIN_SO) $(PLUGIN_LINK) $(LIBSTRATA) $(INTERNAL_LIB) tools
	$(say_summary)
lib: $(PLUGIN_SO) $(PLUGIN_LINK) $(LIBSTRATA) $(INTERNAL_LIB)
	$(say_summary)
tools: $(TOOLS)

# ---------------------------------------------------------------- configuration
# The build's configuration as a header: what detection found, the flags it implies, the
# summary line. Remade on every make (FORCE) but written only when its text changes, so its
# date moves only then; every object depends on it and rebuilds when it does.
CONFIG_H := $(BUILD)/gen/strata_config.h
define CONFIG_H_TEXT
/* Generated by make from mk/config.mk's detection; rewritten only when it changes. */
#ifndef STRATA_CONFIG_H
#define STRATA_CONFIG_H
#define STRATA_CONFIG_VERSION "$(VERSION)"
#define STRATA_CONFIG_TRANSPORTS "$(BUILD_TRANSPORTS)"
#define STRATA_CONFIG_MISSING "$(BUILD_MISSING)"
#define STRATA_CONFIG_SANITIZERS "$(BUILD_SANITIZERS)"
#define STRATA_CONFIG_DEBUG $(DEBUG)
#define STRATA_CONFIG_SUMMARY "$(BUILD_SUMMARY)"
/* cc: $(CC) */
/* cflags: $(CFLAGS) */
/* ldflags: $(LDFLAGS_BASE) */
/* ldlibs: $(LDLIBS_BASE) */
#endif
endef
$(CONFIG_H): FORCE
	$(shell mkdir -p $(dir $@))$(file >$@.tmp,$(CONFIG_H_TEXT))
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; \
		echo "  CONFIG  $@: $(BUILD_TRANSPORTS), sanitizers $(BUILD_SANITIZERS)"; fi

# ---------------------------------------------------------------- rules
$(BUILD)/obj/%.o: %.c $(CONFIG_H)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) $(PLUGIN_PATH_DEF) -MMD -MP -c $< -o $@

$(INTERNAL_LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(ALGOS_LIB): $(ALGOS_OBJ)
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

# The plugin links the transports, the NCCL edge, and from algos/ only what its tuner and
# CollNet use (an archive: unreferenced objects stay out); never coll/.
$(PLUGIN_SO): $(PLUGIN_OBJ) $(XPORT_OBJ) $(ALGOS_LIB) plugin/exports.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@ $(PLUGIN_OBJ) $(ALGOS_LIB) $(XPORT_OBJ) $(LDFLAGS_BASE) \
		-Wl,--version-script=plugin/exports.map \
		-Wl,-soname,libnccl-net-strata.so -Wl,-z,defs $(LDLIBS_BASE)

$(PLUGIN_LINK): $(PLUGIN_SO)
	$(Q)ln -sf libnccl-net-strata.so $@

$(LIBSTRATA_REAL): $(LIB_OBJ) coll/libstrata.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@ $(LIB_OBJ) $(LDFLAGS_BASE) -Wl,--version-script=coll/libstrata.map \
		-Wl,-soname,$(LIBSTRATA_SONAME) -Wl,-z,defs $(LDLIBS_BASE)
$(BUILD)/lib/$(LIBSTRATA_SONAME): $(LIBSTRATA_REAL)
	$(Q)ln -sf $(notdir $<) $@
$(LIBSTRATA_SO): $(BUILD)/lib/$(LIBSTRATA_SONAME)
	$(Q)ln -sf $(notdir $<) $@

# ld -r joins the objects; --localize-hidden turns every symbol not marked STRATA_API local.
$(LIBSTRATA_A): $(LIB_OBJ)
	@mkdir -p $(dir $@) $(BUILD)/obj/libstrata
	@echo "  AR      $@"
	$(Q)ld -r -o $(BUILD)/obj/libstrata/libstrata.o $(LIB_OBJ) && \
		objcopy --localize-hidden $(BUILD)/obj/libstrata/libstrata.o && \
		rm -f $@ && ar rcs $@ $(BUILD)/obj/libstrata/libstrata.o

define tool_rule
$(BUILD)/bin/strata-$(call tool_name,$(1)): $(1) $(TOOL_LIB) $(INTERNAL_LIB) $(CONFIG_H)
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	$$(Q)$$(CC) $$(CFLAGS) $$(PLUGIN_PATH_DEF) \
		-MMD -MP -MF $$@.d -o $$@ $$< $(TOOL_LIB) $(INTERNAL_LIB) \
		$$(LDFLAGS_BASE) $$(LDLIBS_BASE)
endef
$(foreach m,$(TOOL_MAINS),$(eval $(call tool_rule,$(m))))

ifeq ($(HAVE_CMOCKA),1)
tests: $(TESTS) $(HELPERS) $(PLUGIN_SO) $(TOOLS)
$(BUILD)/tests/%: tests/%.c $(SUPPORT_OBJ) $(TOOL_LIB) $(PLUGIN_LIB) $(INTERNAL_LIB) $(CONFIG_H)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -MMD -MP -MF $@.d -o $@ $< $(SUPPORT_OBJ) $(TOOL_LIB) $(PLUGIN_LIB) \
		$(INTERNAL_LIB) \
		$(LDFLAGS_BASE) \
		$(CMOCKA_LIBS) $(LDLIBS_BASE)
# CUDA's nccl.h, when installed, for the ABI cross-checks (tests/support/sts_cuda_nccl.c).
CUDA_NCCL_H ?= $(wildcard /usr/local/cuda/include/nccl.h)
ifneq ($(CUDA_NCCL_H),)
$(BUILD)/obj/tests/support/sts_cuda_nccl.o: TEST_CFLAGS += -DSTS_HAVE_CUDA_NCCL=1 \
	-isystem $(dir $(CUDA_NCCL_H))
endif
$(BUILD)/obj/tests/support/%.o: tests/support/%.c $(CONFIG_H)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

# With UCX, the NCCL-plugin functional tests, one collective test and the CollNet's run a
# second time over the ucx transport (named only, so the first pass never uses it); ~90 s.
# A user's program: the public header (include/ only, not the tree's internal headers) and
# libstrata.so, nothing else; the test also reads the exports of both shared objects.
PUBLIC_CFLAGS := -std=gnu11 -pthread -Wall -Wextra -Wshadow -Wno-unused-parameter $(filter -O% -g% -Werror,$(CFLAGS)) \
	$(SAN_FLAGS) -Iinclude
$(BUILD)/tests/functional/test_libstrata: tests/functional/test_libstrata.c $(LIBSTRATA) \
		$(PLUGIN_SO) $(CONFIG_H)
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (libstrata.so)"
	$(Q)$(CC) $(PUBLIC_CFLAGS) $(CMOCKA_CFLAGS) -DLIBDIR='"$(abspath $(BUILD)/lib)"' \
		-MMD -MP -MF $@.d -o $@ $< -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lstrata \
		$(LDFLAGS_BASE) $(CMOCKA_LIBS)

# With UCX, the NCCL-plugin functional tests, two collective tests, the CollNet's and the
# virtual NICs' (their ucx cases) run a second time over the ucx transport (named only, so
# the first pass never uses it); ~90 s.
UCX_AGAIN := $(filter $(BUILD)/tests/functional/test_plugin_% \
	$(BUILD)/tests/functional/test_coll_allreduce $(BUILD)/tests/functional/test_coll_matrix \
	$(BUILD)/tests/functional/test_collnet $(BUILD)/tests/functional/test_net_vnic,$(TESTS))
# Under AddressSanitizer, LeakSanitizer's exit-time tracer thread crashes (SIGSEGV) in UCX's
# memory-event hooks when a process exits with the dlopen'ed UCX still initialised (the
# v10..v6 shims, which have no finalize; the CollNet's members): the sanitizer runs turn UCX's
# memory events off, as the TSan pass does (mk/tsan.mk). Plain runs keep UCX's defaults.
SAN_TEST_ENV := $(if $(filter 1,$(ASAN)),UCX_MEM_EVENTS=no)
test: all tests
	@$(SAN_TEST_ENV) BUILD=$(BUILD) tests/run.sh $(TESTS)
ifeq ($(HAVE_UCX),1)
	@echo "-- again over the ucx transport (STRATA_TRANSPORT=ucx)"
	@$(SAN_TEST_ENV) STRATA_TRANSPORT=ucx STS_CYCLES=300 BUILD=$(BUILD) tests/run.sh $(UCX_AGAIN)
endif

# What CI runs: the layering lint, the tests, the installed library, the build's
# re-detection, then the tests again under AddressSanitizer + UndefinedBehaviorSanitizer
# (a separate build in build/san). One after the other, so their outputs do not mix.
check: lint test
	@$(MAKE) --no-print-directory test-install
	@$(MAKE) --no-print-directory test-config
	$(MAKE) ASAN=1 UBSAN=1 test

# make install into a temporary prefix, then a program built from the installed headers
# and strata.pc, linked once against libstrata.so and once against libstrata.a
# (tests/install.sh). Plain builds only: the program is built without sanitizers.
test-install: all
	@BUILD=$(BUILD) MAKE="$(MAKE)" CC="$(CC)" tests/install.sh

# make before and after libibverbs and ucx become visible to pkg-config, in a scratch
# build directory (tests/build_config.sh, ~30 s).
test-config:
	@MAKE="$(MAKE)" tests/build_config.sh
else
tests test check test-install test-config:
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

# The plugin (and the libnccl-net.so name NCCL looks for by default), libstrata.so with its
# soname links, libstrata.a, the public headers, the tools and strata.pc. The internal
# archive and transport/transport.h are not installed.
INSTALL_LIB := $(DESTDIR)$(PREFIX)/lib
install: all
	install -d $(INSTALL_LIB) $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/strata \
		$(INSTALL_LIB)/pkgconfig
	install -m 755 $(PLUGIN_SO) $(INSTALL_LIB)/
	ln -sf libnccl-net-strata.so $(INSTALL_LIB)/libnccl-net.so
	install -m 755 $(LIBSTRATA_REAL) $(INSTALL_LIB)/
	ln -sf $(notdir $(LIBSTRATA_REAL)) $(INSTALL_LIB)/$(LIBSTRATA_SONAME)
	ln -sf $(LIBSTRATA_SONAME) $(INSTALL_LIB)/libstrata.so
	install -m 644 $(LIBSTRATA_A) $(INSTALL_LIB)/
	install -m 644 include/strata/*.h $(DESTDIR)$(PREFIX)/include/strata/
	for t in $(TOOLS); do install -m 755 $$t $(DESTDIR)$(PREFIX)/bin/; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@LIBS@|$(strip $(LDLIBS_BASE))|' strata.pc.in > $(INSTALL_LIB)/pkgconfig/strata.pc

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
