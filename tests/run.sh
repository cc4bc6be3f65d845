#!/usr/bin/env bash
# Runs each test binary under a timeout, one after the other, and sums cmocka's
# per-binary counts into one closing line "N passed, N failed". A binary that
# times out, crashes, or prints no cmocka summary counts as one failure.
#
#   tests/run.sh build/tests/unit/test_x build/tests/transport/test_y ...
#
# STRATA_TEST_TIMEOUT (seconds, default 300) bounds each binary; the machines
# are 2-core and noisy, so it is generous. STS_SHOW (an extended regular expression)
# also prints the matching lines of binaries that passed, e.g. STS_SHOW='^ *matrix' for the
# fault matrix's times.
set -u
show=${STS_SHOW:-}
timeout_s=${STRATA_TEST_TIMEOUT:-300}
# UCX's known leak reports under LeakSanitizer (the file says which, and why).
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp:print_suppressions=0}
passed=0 failed=0 skipped=0
failed_bins=()
log=$(mktemp -d /tmp/strata-tests.XXXXXX)
trap 'rm -rf "$log"' EXIT

for bin in "$@"; do
    name=${bin#*/tests/}
    out="$log/$(echo "$name" | tr / _).log"
    start=$(date +%s)
    timeout --kill-after=10 "$timeout_s" "$bin" >"$out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
    summary=$(grep -c '^\[==========\] .* run\.' "$out")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1   # crashed, timed out, or failed outside a test case
    fi
    if [ "$summary" -eq 0 ] && [ "$f" -eq 0 ]; then
        f=1   # no cmocka summary at all
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    if [ "$f" -gt 0 ]; then
        failed_bins+=("$name")
        printf 'FAIL  %-48s %4ss  rc=%s  (%s passed, %s failed)\n' "$name" "$secs" "$rc" "$p" "$f"
        # the failed cases and their messages first, wherever they are in the output (a
        # long log's tail may not reach them), then the tail
        grep -n -B10 -A1 '^\[  ERROR   \] ' "$out" | head -n 60 | sed 's/^/    ! /'
        sed 's/^/    | /' "$out" | tail -n 60
    else
        printf 'ok    %-48s %4ss  (%s passed, %s skipped)\n' "$name" "$secs" "$p" "$s"
        if [ -n "$show" ]; then
            grep -E -- "$show" "$out" | sed 's/^/    = /'
        fi
    fi
done

echo
if [ ${#failed_bins[@]} -gt 0 ]; then
    echo "failed binaries: ${failed_bins[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
