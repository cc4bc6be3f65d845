#!/usr/bin/env bash
# Strata's demo: a 4-rank allreduce over two emulated nodes, nccl-tests style.
#
#   strata-run -n 4 --nodes 2 --netns --inter-rate 2gbit -- strata-perf -b 8 -e 64M -f 4 -c 1
#
# Each emulated node is a network namespace (and a private /dev/shm) with its own address;
# the two nodes talk TCP over a veth bridge shaped by tbf to 2 Gbit/s, while the two ranks
# inside a node share memory, so the two tiers differ as on a real cluster. It prints the
# nccl-tests table with the algorithm the α-β model chose per size and its predicted time,
# the tiers' α, β and crossover n*, and draws busbw and time-vs-model plots into build/demo/.
#
# Without root (or where namespaces are unavailable) it falls back to two nodes told apart by
# STRATA_NODE_ID only, over loopback TCP without shaping, and says so.
#
# Knobs: BUILD (build), DEMO_RATE (2gbit), DEMO_ARGS (the strata-perf flags).
# Runs in well under two minutes on the 2-core CI machine.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
RATE=${DEMO_RATE:-2gbit}
read -r -a PERF_ARGS <<<"${DEMO_ARGS:--b 8 -e 64M -f 4 -c 1}"
OUT=$BUILD/demo
RUN=$BUILD/bin/strata-run
PERF=$BUILD/bin/strata-perf
mkdir -p "$OUT"
[ -x "$RUN" ] && [ -x "$PERF" ] || { echo "demo: build first (make -j2 demo)" >&2; exit 1; }

# The rate in GB/s (10^9 B/s), for the model's net tier and the plot's reference line.
rate_gbps=$(awk -v r="$RATE" 'BEGIN {
    n = r + 0; u = tolower(substr(r, length(n "") + 1));
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "tbit") ? 1e12 : 1;
    printf "%g", n * m / 8 / 1e9 }')

mode=netns
if [ "$(id -u)" != 0 ]; then
    mode=plain
    echo "demo: not root, so no network namespaces: the 2 nodes are told apart by" \
         "STRATA_NODE_ID only and talk over loopback TCP, unshaped (sudo $0 for the real thing)"
fi

run_perf() {
    if [ "$mode" = netns ]; then
        # The model learns the emulated link's bandwidth; α and the shm tier keep their
        # defaults (docs/algorithms.md).
        STRATA_NET_BETA_GBPS=${STRATA_NET_BETA_GBPS:-$rate_gbps} \
            "$RUN" -n 4 --nodes 2 --netns --inter-rate "$RATE" -- "$PERF" "${PERF_ARGS[@]}" "$@"
    else
        "$RUN" -n 4 --nodes 2 -- "$PERF" "${PERF_ARGS[@]}" "$@"
    fi
}

echo "== strata-run -n 4 --nodes 2$([ $mode = netns ] && echo " --netns --inter-rate $RATE")" \
     "-- strata-perf ${PERF_ARGS[*]}"
start=$(date +%s)
set +e
run_perf | tee "$OUT/allreduce.txt"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" = 3 ] && [ "$mode" = netns ]; then
    echo "demo: namespaces are not available here; falling back to STRATA_NODE_ID only," \
         "over loopback TCP, unshaped"
    mode=plain
    set +e
    run_perf | tee "$OUT/allreduce.txt"
    rc=${PIPESTATUS[0]}
    set -e
fi
[ "$rc" = 0 ] || { echo "demo: strata-perf failed (exit $rc)" >&2; exit "$rc"; }
echo "demo: the run took $(( $(date +%s) - start )) s ($mode mode)"

# Rows: size count type redop root | time algbw busbw #wrong (out) | same (in) | algo model
awk '!/^#/ && NF >= 15 { print $1, $8, $12, $6, $10, $15, $14 }' "$OUT/allreduce.txt" \
    > "$OUT/allreduce.dat"
if ! command -v gnuplot >/dev/null; then
    echo "demo: gnuplot not installed (scripts/setup-debian.sh installs it): no plot"
    exit 0
fi
title="allreduce float sum, 4 ranks = 2 nodes x 2"
[ "$mode" = netns ] && link="inter-node link $RATE (tbf)" || link="nodes by STRATA_NODE_ID only"
gnuplot <<EOF
set terminal pngcairo size 1000,600 font ",11"
set output "$OUT/allreduce-busbw.png"
set title "Strata: $title, $link"
set logscale x 2
set format x "%.0b%B"
set xlabel "message size (bytes)"
set ylabel "bus bandwidth (GB/s)"
set key top left
set grid
set yrange [0:*]
plot "$OUT/allreduce.dat" using 1:2 with linespoints lw 2 pt 7 title "out-of-place", \
     "" using 1:3 with linespoints lw 2 pt 5 title "in-place", \
     "" using 1:2:7 with labels rotate by 45 offset 0,1.5 font ",8" notitle$(
     [ "$mode" = netns ] && printf ', \\\n     %s with lines dt 2 lc rgb "gray40" %s' \
         "$rate_gbps" "title \"inter-node link rate ($rate_gbps GB/s)\"")

set output "$OUT/allreduce-model.png"
set title "Strata: measured time vs the alpha-beta model's prediction for the chosen algorithm"
set logscale y 10
set format y "%g"
set ylabel "time per allreduce (us)"
set yrange [*:*]
plot "$OUT/allreduce.dat" using 1:4 with linespoints lw 2 pt 7 title "measured, out-of-place", \
     "" using 1:6 with linespoints lw 2 pt 6 dt 2 title "model, chosen algorithm", \
     "" using 1:4:7 with labels rotate by 45 offset 0,1.5 font ",8" notitle
EOF
echo "demo: plots $OUT/allreduce-busbw.png and $OUT/allreduce-model.png, table $OUT/allreduce.txt"
