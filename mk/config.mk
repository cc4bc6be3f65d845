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

PKG_CONFIG ?= pkg-config
have_pkg = $(shell $(PKG_CONFIG) --exists $(1) 2>/dev/null && echo 1 || echo 0)

HAVE_CMOCKA := $(call have_pkg,cmocka)
HAVE_IBVERBS := $(call have_pkg,libibverbs)
HAVE_UCX := $(call have_pkg,ucx)

CC ?= cc
CFLAGS_BASE := -std=gnu11 -fPIC -fvisibility=hidden -pthread \
	-Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -Wmissing-prototypes \
	-I. -Iinclude
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

ifeq ($(HAVE_IBVERBS),1)
CFLAGS_BASE += -DSTRATA_HAVE_IBVERBS=1 $(shell $(PKG_CONFIG) --cflags libibverbs)
LDLIBS_BASE += $(shell $(PKG_CONFIG) --libs libibverbs)
endif
ifeq ($(HAVE_UCX),1)
CFLAGS_BASE += -DSTRATA_HAVE_UCX=1 $(shell $(PKG_CONFIG) --cflags ucx)
LDLIBS_BASE += $(shell $(PKG_CONFIG) --libs ucx)
endif
ifeq ($(HAVE_CMOCKA),1)
CMOCKA_CFLAGS := $(shell $(PKG_CONFIG) --cflags cmocka)
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka)
endif
