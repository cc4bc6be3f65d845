# Feature detection and build knobs. Included by the top-level Makefile.
#
#   make DEBUG=1     -O0 -g3, assertions on
#   make ASAN=1      AddressSanitizer (+ LeakSanitizer)
#   make UBSAN=1     UndefinedBehaviorSanitizer, aborting on the first report
#   make TSAN=1      ThreadSanitizer
#   make WERROR=1    warnings are errors
#
# A sanitizer build goes to build/san unless BUILD is given, so it never mixes
# objects with the plain build in build/.

DEBUG  ?= 0
ASAN   ?= 0
UBSAN  ?= 0
TSAN   ?= 0
WERROR ?= 0
PREFIX ?= /usr/local

ifneq ($(ASAN)$(UBSAN)$(TSAN),000)
BUILD ?= build/san
else
BUILD ?= build
endif

# Optional dependencies are looked for on every make (a few pkg-config calls). The answer,
# with the flags it implies, goes to $(BUILD)/gen/strata_config.h (see the Makefile), which is
# rewritten only when it changes and on which every object depends: installing libibverbs-dev
# after a first build and running make again rebuilds with the ib transport.
PKG_CONFIG ?= pkg-config
have_pkg = $(shell $(PKG_CONFIG) --exists $(1) 2>/dev/null && echo 1 || echo 0)

HAVE_CMOCKA := $(call have_pkg,cmocka)
HAVE_IBVERBS := $(call have_pkg,libibverbs)
HAVE_UCX := $(call have_pkg,ucx)

# What a build has, in the transport registry's order (transport/registry.c), and what it
# lacks with the Debian package that brings it.
BUILD_TRANSPORTS := $(strip $(if $(filter 1,$(HAVE_IBVERBS)),ib) \
	$(if $(filter 1,$(HAVE_UCX)),ucx) tcp loop)
BUILD_MISSING := $(strip $(if $(filter 1,$(HAVE_IBVERBS)),,ib:libibverbs-dev) \
	$(if $(filter 1,$(HAVE_UCX)),,ucx:libucx-dev))
BUILD_SANITIZERS := $(or $(strip $(if $(filter 1,$(ASAN)),asan) $(if $(filter 1,$(UBSAN)),ubsan) \
	$(if $(filter 1,$(TSAN)),tsan)),none)
BUILD_MODE := $(if $(filter 1,$(DEBUG)),debug (-O0),optimised (-O2))

CC ?= cc
CFLAGS_BASE := -std=gnu11 -fPIC -fvisibility=hidden -pthread \
	-Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -Wmissing-prototypes \
	-I. -Iinclude -I$(BUILD)/gen
ifeq ($(DEBUG),1)
CFLAGS_BASE += -O0 -g3
else
CFLAGS_BASE += -O2 -g -DNDEBUG
endif
ifeq ($(WERROR),1)
CFLAGS_BASE += -Werror
endif
SAN_FLAGS :=
ifeq ($(ASAN),1)
SAN_FLAGS += -fsanitize=address -fno-omit-frame-pointer
endif
ifeq ($(UBSAN),1)
SAN_FLAGS += -fsanitize=undefined -fno-sanitize-recover=undefined
endif
ifeq ($(TSAN),1)
SAN_FLAGS += -fsanitize=thread
endif
CFLAGS_BASE += $(SAN_FLAGS)
LDFLAGS_BASE := -pthread $(SAN_FLAGS)
LDLIBS_BASE := -ldl -lm

# libibverbs and UCX: headers at build time only. The transports dlopen them at run time
# (transport/ib/ib_verbs_load.h, transport/ucx/ucx_load.h), so nothing links them and one
# build loads on a node without rdma-core or UCX (and runs over tcp there).
ifeq ($(HAVE_IBVERBS),1)
CFLAGS_BASE += -DSTRATA_HAVE_IBVERBS=1 $(shell $(PKG_CONFIG) --cflags libibverbs)
endif
ifeq ($(HAVE_UCX),1)
CFLAGS_BASE += -DSTRATA_HAVE_UCX=1 $(shell $(PKG_CONFIG) --cflags ucx)
endif
ifeq ($(HAVE_CMOCKA),1)
CMOCKA_CFLAGS := $(shell $(PKG_CONFIG) --cflags cmocka)
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka)
endif
