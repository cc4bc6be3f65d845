#!/usr/bin/env bash
# Runs every libFuzzer harness built by `make fuzz-build`, one after the other, each on its
# own corpus (seeded by fuzz_seeds, kept between runs in DIR/corpus), and prints one line
# per harness: executions, seconds, corpus size. Stops at the first crash, leak or broken
# invariant, with libFuzzer's report and the reproducing input (DIR/crash-<harness>-*).
#
#   scripts/fuzz.sh DIR SECONDS [RUNS]
#
# SECONDS bounds each harness; RUNS (optional) bounds it by executions instead (the long
# run: RUNS=10000000). FUZZ_ONLY="tcp_wire rail" runs only those harnesses.
set -u
dir=$1 secs=$2 runs=${3:-}
seeds=$dir/seeds corpus=$dir/corpus
"$dir/fuzz_seeds" "$seeds" || exit 1
mkdir -p "$corpus"
total=0
for bin in "$dir"/fuzz_*; do
    name=${bin##*/fuzz_}
    [ "$name" = seeds ] && continue
    if [ -n "${FUZZ_ONLY:-}" ] && [[ " $FUZZ_ONLY " != *" $name "* ]]; then
        continue
    fi
    mkdir -p "$corpus/$name" "$seeds/$name"
    args=(-print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=4096
          "-artifact_prefix=$dir/crash-$name-")
    if [ -n "$runs" ]; then
        args+=("-runs=$runs")
    else
        args+=("-max_total_time=$secs")
    fi
    log=$dir/fuzz-$name.log
    start=$(date +%s)
    "$bin" "${args[@]}" "$corpus/$name" "$seeds/$name" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    printf 'fuzz  %-12s %12s executions %5ss  corpus %s  rc=%s\n' "$name" "${execs:-?}" \
        "$(( $(date +%s) - start ))" "$(ls "$corpus/$name" | wc -l)" "$rc"
    if [ "$rc" -ne 0 ]; then
        tail -n 60 "$log"
        echo "fuzz: $name failed; the input is in $dir/crash-$name-*"
        exit 1
    fi
    total=$((total + ${execs:-0}))
done
echo "fuzz: every harness ran clean, $total executions in all"
