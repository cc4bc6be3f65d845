# The ThreadSanitizer pass: `make check-tsan` builds everything with TSAN=1 into build/tsan
# and runs the tests that exercise threads and the plugin's and the library's concurrency:
# the NCCL-plugin functional tests (over tcp, and over ucx when built with UCX), the
# CollNet's (driven from NCCL's service and progress threads), the collective library's tests, the connection-authentication test and the transport
# conformance suites. A report fails the run (halt_on_error); tests/tsan.supp holds the
# suppressions, and says why UCX's memory hooks are turned off for the pass. About 15
# minutes on the 2-core machines, so it is not part of `make check` (docs/reliability.md).
# Network-namespace cases skip under TSan (tools/lib/tool_netns.c says why).
#
# `make check-tsan-ci` is CI's subset (.ci/run): only what it needs is built, and only the
# tests most exposed to threads run: the CollNet driven from NCCL's service and progress
# threads (test_collnet), connections used from several threads (test_conformance_conn,
# test_connect_auth), the collective library's worker thread (test_coll_others'
# non-blocking cases), and, over ucx, the plugin whose closes finish on UCX's linger
# thread (test_plugin_lifecycle, test_plugin_data). A few minutes with its build.

TSAN_BUILD := build/tsan
TSAN_ENV := UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no STRATA_TEST_TIMEOUT=900 \
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp"
tsan_tests = $(wildcard $(addprefix $(TSAN_BUILD)/tests/,$(1)))
TSAN_TESTS = $(filter-out %.d,$(call tsan_tests,functional/test_plugin_* functional/test_coll_* \
	functional/test_collnet unit/test_connect_auth transport/test_conformance transport/test_conformance_conn))
TSAN_UCX_TESTS = $(filter-out %.d,$(call tsan_tests,functional/test_plugin_*))

TSAN_CI_TCP := functional/test_collnet transport/test_conformance_conn unit/test_connect_auth
TSAN_CI_WORKER := functional/test_coll_others
TSAN_CI_UCX := functional/test_plugin_lifecycle functional/test_plugin_data
TSAN_CI_BINS := $(addprefix $(TSAN_BUILD)/tests/,$(TSAN_CI_TCP) $(TSAN_CI_WORKER) \
	$(if $(filter 1,$(HAVE_UCX)),$(TSAN_CI_UCX)))

.PHONY: check-tsan tsan-run check-tsan-ci tsan-ci-run
check-tsan:
	$(MAKE) TSAN=1 BUILD=$(TSAN_BUILD) all tests
	$(MAKE) BUILD=$(TSAN_BUILD) TSAN=1 tsan-run

tsan-run:
	@$(TSAN_ENV) BUILD=$(TSAN_BUILD) tests/run.sh $(TSAN_TESTS)
ifeq ($(HAVE_UCX),1)
	@echo "-- again over the ucx transport (STRATA_TRANSPORT=ucx)"
	@$(TSAN_ENV) STRATA_TRANSPORT=ucx STS_CYCLES=300 BUILD=$(TSAN_BUILD) tests/run.sh $(TSAN_UCX_TESTS)
endif

check-tsan-ci:
	$(MAKE) TSAN=1 BUILD=$(TSAN_BUILD) $(TSAN_BUILD)/lib/libnccl-net-strata.so \
		$(TSAN_BUILD)/tests/functional/helper_collnet $(TSAN_BUILD)/tests/functional/helper_peer \
		$(TSAN_CI_BINS)
	$(MAKE) BUILD=$(TSAN_BUILD) TSAN=1 tsan-ci-run

tsan-ci-run:
	@$(TSAN_ENV) BUILD=$(TSAN_BUILD) tests/run.sh $(addprefix $(TSAN_BUILD)/tests/,$(TSAN_CI_TCP))
	@echo "-- the library's worker thread (non-blocking collectives)"
	@$(TSAN_ENV) STS_FILTER='test_nonblocking*' BUILD=$(TSAN_BUILD) tests/run.sh \
		$(TSAN_BUILD)/tests/$(TSAN_CI_WORKER)
ifeq ($(HAVE_UCX),1)
	@echo "-- the plugin over ucx (STRATA_TRANSPORT=ucx)"
	@$(TSAN_ENV) STRATA_TRANSPORT=ucx BUILD=$(TSAN_BUILD) tests/run.sh \
		$(addprefix $(TSAN_BUILD)/tests/,$(TSAN_CI_UCX))
endif
