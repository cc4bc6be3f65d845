#!/usr/bin/env bash
# Watches the host's placement of this machine's two vCPUs next to what it does to the one-node
# collectives (docs/benchmarks.md, "Large messages on one node": the slow mode). Every PERIOD
# seconds, one line: the load average; the CPU 0 <-> CPU 1 cache-line round trip (strata-reduce
# --rtt: fastest batch and median, ns); the hand-over rate from CPU 0 to CPU 1 through shared
# slots (--xcore 1M, GB/s); the 2-thread memcpy rate (--membw 2, GB/s); and the 2-rank allreduce
# at 64 MiB and 512 KiB (strata-perf, out of place, us). Then a summary per state: lines with a
# round trip under RTT_SPLIT ns ("near") against the others ("far").
#
#   bench/placement_watch.sh [SECONDS] [PERIOD]     # defaults 600 and 45; BUILD=build
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bin
DURATION=${1:-600}
PERIOD=${2:-45}
RTT_SPLIT=${RTT_SPLIT:-150}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores; time load rtt_fastest rtt_median xcore_GBps membw2_GBps ar64M_us ar512K_us"
end=$(($(date +%s) + DURATION))
while [ "$(date +%s)" -lt "$end" ]; do
    rtt=$("$B"/strata-reduce --rtt --reps 500 | awk '{print $7, $11}')
    xc=$("$B"/strata-reduce --sizes 64M --xcore 1M --reps 3 | awk '{print $6}')
    mb=$("$B"/strata-reduce --membw 2 --sizes 64M --reps 3 | awk '{print $6}')
    big=$("$B"/strata-run -n 2 -- "$B"/strata-perf -b 64M -e 64M -n 5 -w 1 -c 0 2>&1 |
        awk '/^ +[0-9]/ {print $6}')
    small=$("$B"/strata-run -n 2 -- "$B"/strata-perf -b 512K -e 512K -n 20 -w 2 -c 0 2>&1 |
        awk '/^ +[0-9]/ {print $6}')
    echo "$(date -u +%H:%M:%S) $(cut -d' ' -f1 /proc/loadavg) $rtt $xc $mb $big $small" | tee -a "$LOG"
    sleep "$PERIOD"
done
awk -v cut="$RTT_SPLIT" '
function med(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ s = $3 < cut ? "near" : "far"; n[s]++; if (prev != "" && s != prev) flips++; prev = s
  rtt[s] = rtt[s] " " $3; ld[s] = ld[s] " " $2; xc[s] = xc[s] " " $5; mb[s] = mb[s] " " $6
  big[s] = big[s] " " $7; small[s] = small[s] " " $8 }
END {
    printf "# %d lines, %d changes of state; medians per state:\n", NR, flips
    for (s in n)
        printf "# %-4s %3d lines: rtt %s ns, load %s, xcore %s GB/s, membw2 %s GB/s, 64 MiB %s us, 512 KiB %s us\n",
            s, n[s], med(rtt[s]), med(ld[s]), med(xc[s]), med(mb[s]), med(big[s]), med(small[s])
}' "$LOG"
