#!/usr/bin/env bash
# Which parallelism survives this fabric, as a picture: strata-plan train's communication per
# step for each axis (TP, PP, DP/ZeRO, EP; hidden or not) as bars, against the compute per
# step as a line, for the chosen layout and the search's fastest few.
#
#   scripts/plan-train-plot.sh OUT.png [strata-plan train options]
#
# e.g. scripts/plan-train-plot.sh build/plan/70b.png --params 70B --layers 80 --hidden 8192 \
#        --heads 64 --seq 4096 --nodes 16 --tp 8 --pp 4 --micro-batches 8 --nic-bw 400Gb/s
#
# Writes OUT.png and, next to it, OUT.txt (the plan's table and ranking) and OUT.dat (the
# plotted numbers). Knobs: BUILD (build), TOP (4: layouts of the ranking drawn).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
TOP=${TOP:-4}
PLAN=$BUILD/bin/strata-plan
[ $# -ge 1 ] || { echo "usage: $0 OUT.png [strata-plan train options]" >&2; exit 2; }
out=$1
shift
[ -x "$PLAN" ] || { echo "plan-train-plot: build first (make -j2)" >&2; exit 1; }
command -v gnuplot >/dev/null ||
    { echo "plan-train-plot: gnuplot not installed (scripts/setup-debian.sh installs it)" >&2
      exit 1; }
mkdir -p "$(dirname "$out")"
base=${out%.png}

"$PLAN" train "$@" --search --top "$TOP" --plot-data "$base.dat" | tee "$base.txt"
compute=$(awk '!/^#/ { print $(NF-6); exit }' "$base.dat")

gnuplot <<EOF
set terminal pngcairo size 1100,620 font ",11"
set output "$out"
set title "strata-plan train: communication per step by axis vs compute per step (${compute} ms)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set ylabel "ms per step per GPU"
set yrange [0:*]
set grid ytics
set key outside right top
set xtics rotate by -20 font ",9"
plot "$base.dat" using 3:xtic(1) title "TP (allreduce)", \
     "" using 4 title "PP (send/recv)", \
     "" using 5 title "DP / ZeRO", \
     "" using 6 title "EP (alltoall)", \
     "" using 0:2 with linespoints lw 2 pt 7 lc rgb "black" title "compute per step", \
     "" using 0:8 with points pt 9 ps 1.5 lc rgb "red" title "step time"
EOF
echo "plan-train-plot: $out (data $base.dat, plan $base.txt)"
