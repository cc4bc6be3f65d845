#!/usr/bin/env bash
# A one-node allreduce against the memory bound, measured in the same run (docs/benchmarks.md,
# "Large messages on one node"). Each round measures the memcpy bandwidth of 2 threads
# (strata-reduce --membw 2, 256 MiB each) and then the allreduce (fp32 sum) of every build
# named in MEMBOUND_BUILDS on NRANKS ranks, builds interleaved; the summary gives per build and
# size the medians over rounds of the time and of time_bound / time, where
#   time_bound = (3L - 1) * n / membw
# is the least memory traffic of an L-rank allreduce of n bytes (each rank reads the n bytes
# of its block's L sources and the (L-1)/L * n of the other blocks' results, and writes its n
# bytes of output; L = 2: 5n) moved at the 2-thread bandwidth of that round. Each round also
# times a cache line's round trip between CPU 0 and CPU 1 (strata-reduce --rtt, the fastest
# batch): the host's placement of the two vCPUs, which decides the slow mode (docs/benchmarks.md);
# a table per round follows the summary.
#
#   bench/membound.sh                                # build/, 2 ranks, 16M 64M 256M, 5 rounds
#   MEMBOUND_BUILDS="build /tmp/base/build" MEMBOUND_ROUNDS=3 bench/membound.sh
# Knobs: MEMBOUND_BUILDS (build), MEMBOUND_RANKS (2), MEMBOUND_SIZES (16M 64M 256M),
# MEMBOUND_ROUNDS (5), MEMBOUND_ITERS (10 timed calls per size), MEMBOUND_CHECK (1: checked
# calls per size, strata-perf -c; #wrong counts the wrong values).
set -euo pipefail
cd "$(dirname "$0")/.."

read -r -a BUILDS <<<"${MEMBOUND_BUILDS:-build}"
RANKS=${MEMBOUND_RANKS:-2}
read -r -a SIZES <<<"${MEMBOUND_SIZES:-16M 64M 256M}"
ROUNDS=${MEMBOUND_ROUNDS:-5}
ITERS=${MEMBOUND_ITERS:-10}
CHECK=${MEMBOUND_CHECK:-1}
RAW=$(mktemp)
trap 'rm -f "$RAW"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
    bw=$(build/bin/strata-reduce --membw 2 --sizes 256M --reps 3 | awk '{print $6}')
    rtt=$(build/bin/strata-reduce --rtt --reps 500 | awk '{print $7}')
    echo "round $r membw $bw rtt $rtt" >>"$RAW"
    for b in "${BUILDS[@]}"; do
        for s in "${SIZES[@]}"; do
            "$b/bin/strata-run" -n "$RANKS" -- "$b/bin/strata-perf" -b "$s" -e "$s" \
                -n "$ITERS" -w 2 -c "$CHECK" 2>&1 | awk -v r="$r" -v b="$b" -v bw="$bw" \
                '/^ +[0-9]/ {print "round", r, "build", b, "bytes", $1, "us", $6, "wrong", $9, "membw", bw}' \
                >>"$RAW"
        done
    done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg); $RANKS ranks, medians of $ROUNDS rounds"
awk -v L="$RANKS" '
function med(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$3 == "membw" { bws = bws " " $4; rtt[$2] = $6; mbw[$2] = $4; nr = $2 }
$3 == "build" {
    k = $4 SUBSEP $6; keys[k] = 1
    t[k] = t[k] " " $8
    bound = (3 * L - 1) * $6 / ($12 * 1e9) * 1e6
    ratio[k] = ratio[k] " " bound / $8
    wrong[k] += $10
    rt[$2, k] = $8
}
END {
    printf "# membw (2 threads, read + write): median %.1f GB/s over%s\n", med(bws), bws
    printf "| build | size | time (us) | time_bound / time | #wrong |\n|---|---:|---:|---:|---:|\n"
    for (k in keys) { split(k, p, SUBSEP); printf "| %s | %d MiB | %.0f | %.2f | %d |\n", p[1], p[2] / 1048576, med(t[k]), med(ratio[k]), wrong[k] | "sort -t\"|\" -k2,2 -k3,3n" }
    close("sort -t\"|\" -k2,2 -k3,3n")
    printf "# per round: membw (GB/s), CPU 0 <-> 1 cache-line round trip (ns), each build and size (us)\n"
    for (r = 1; r <= nr; r++) {
        line = sprintf("round %d: membw %s rtt %s", r, mbw[r], rtt[r])
        for (k in keys) { split(k, p, SUBSEP); line = line sprintf("  %s %dM %s", p[1], p[2] / 1048576, rt[r, k]) }
        print line
    }
}' "$RAW"
