# The ThreadSanitizer pass: `make check-tsan` builds everything with TSAN=1 into build/tsan
# and runs the tests that exercise threads and the plugin's and the library's concurrency:
# the NCCL-plugin functional tests (over tcp, and over ucx when built with UCX), the
# CollNet's (driven from NCCL's service and progress threads), the collective library's tests, the connection-authentication test and the transport
# conformance suites. A report fails the run (halt_on_error); tests/tsan.supp holds the
# suppressions, and says why UCX's memory hooks are turned off for the pass. About 15
# minutes on the 2-core machines, so it is not part of `make check` (docs/reliability.md).

TSAN_BUILD := build/tsan
TSAN_ENV := UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no STRATA_TEST_TIMEOUT=900 \
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp"
tsan_tests = $(wildcard $(addprefix $(TSAN_BUILD)/tests/,$(1)))
TSAN_TESTS = $(filter-out %.d,$(call tsan_tests,functional/test_plugin_* functional/test_coll_* \
	functional/test_collnet unit/test_connect_auth transport/test_conformance transport/test_conformance_conn))
TSAN_UCX_TESTS = $(filter-out %.d,$(call tsan_tests,functional/test_plugin_*))

.PHONY: check-tsan tsan-run
check-tsan:
	$(MAKE) TSAN=1 BUILD=$(TSAN_BUILD) all tests
	$(MAKE) BUILD=$(TSAN_BUILD) TSAN=1 tsan-run

tsan-run:
	@$(TSAN_ENV) BUILD=$(TSAN_BUILD) tests/run.sh $(TSAN_TESTS)
ifeq ($(HAVE_UCX),1)
	@echo "-- again over the ucx transport (STRATA_TRANSPORT=ucx)"
	@$(TSAN_ENV) STRATA_TRANSPORT=ucx STS_CYCLES=300 BUILD=$(TSAN_BUILD) tests/run.sh $(TSAN_UCX_TESTS)
endif
