#!/usr/bin/env bash
# Selection quality and model error, measured: strata-perf --model on each cluster shape and
# collective (every applicable algorithm forced in turn at each size, rounds interleaved,
# medians, next to the alpha-beta model's prediction and auto's choice), then one summary over
# everything: selection regret (median, p95, the worst point named) and the model's error per
# size (docs/benchmarks.md, "Model vs measurement").
#
#   sudo bench/model.sh                     # every shape and collective; tables in build/model/
#   MODEL_SHAPES="2x2s" MODEL_COLLS=allreduce sudo bench/model.sh
#   MODEL_SHAPES=4x1 MODEL_OUT=build/model/4x1 sudo bench/model.sh     # a sweep in pieces: then
#   awk -f bench/model_summary.awk build/model/*/*.txt                  # one summary over all
#
# Shapes (nodes x ranks per node; nodes are network namespaces with their own /dev/shm):
#   1x2 1x4     one node, shared memory and loopback
#   2x2s 2x2u   two nodes of two, the inter-node link shaped to MODEL_RATE / unshaped (veth)
#   4x1         four nodes of one rank, unshaped
# Knobs: BUILD (build), MODEL_SHAPES ("1x2 1x4 2x2s 2x2u 4x1"), MODEL_COLLS ("allreduce
# reduce_scatter allgather broadcast"), MODEL_RATE (2gbit), MODEL_REPEAT (1: each table is
# measured that many times, whole sweep after whole sweep, and the summary takes each point's
# median), MODEL_ARGS (strata-perf's flags), MODEL_OUT ($BUILD/model: where the tables go; the
# script empties it of tables first). Without root the multi-node shapes run without
# namespaces or shaping (STRATA_NODE_ID only), and the summary says so.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
RATE=${MODEL_RATE:-2gbit}
SHAPES=${MODEL_SHAPES:-1x2 1x4 2x2s 2x2u 4x1}
COLLS=${MODEL_COLLS:-allreduce reduce_scatter allgather broadcast}
REPEAT=${MODEL_REPEAT:-1}
read -r -a ARGS <<<"${MODEL_ARGS:--b 8 -e 16M -f 4 -n 20 -w 1 -c 1 --rounds 5}"
OUT=${MODEL_OUT:-$BUILD/model}
mkdir -p "$OUT"
rm -f "$OUT"/*.txt
[ -x "$BUILD/bin/strata-run" ] && [ -x "$BUILD/bin/strata-perf" ] ||
    { echo "model: build first (make -j2)" >&2; exit 1; }

root=1
[ "$(id -u)" = 0 ] || { root=0; echo "model: not root: nodes by STRATA_NODE_ID only, unshaped"; }
rate_gbps=$(awk -v r="$RATE" 'BEGIN {
    n = r + 0; u = tolower(substr(r, length(n "") + 1));
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "tbit") ? 1e12 : 1;
    printf "%g", n * m / 8 / 1e9 }')
load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "# model sweep: $(nproc) cores, load average $(load) at the start; shapes: $SHAPES;" \
     "collectives: $COLLS; repeat $REPEAT; strata-perf ${ARGS[*]}"
for rep in $(seq 1 "$REPEAT"); do
    for shape in $SHAPES; do
        nodes=${shape%%x*}
        per=${shape#*x}; per=${per%[su]}
        launch=(-n $((nodes * per)) --nodes "$nodes")
        envs=()
        if [ "$nodes" -gt 1 ] && [ $root = 1 ]; then
            launch+=(--netns)
            if [ "${shape: -1}" = s ]; then
                launch+=(--inter-rate "$RATE")
                # The model is told the shaped link's bandwidth, as in the demo.
                envs+=("STRATA_NET_BETA_GBPS=${STRATA_NET_BETA_GBPS:-$rate_gbps}")
            fi
        fi
        for coll in $COLLS; do
            f="$OUT/$shape.$coll.$rep.txt"
            echo "== $shape $coll (round $rep of $REPEAT, load $(load)): strata-run ${launch[*]}" \
                 "-- strata-perf --coll $coll --model"
            {
                echo "## shape $shape coll $coll rep $rep"
                env "${envs[@]}" "$BUILD/bin/strata-run" "${launch[@]}" -- \
                    "$BUILD/bin/strata-perf" --coll "$coll" --model "${ARGS[@]}"
            } >"$f" 2>&1 || { echo "model: $shape $coll failed; see $f" >&2; tail -5 "$f" >&2; }
            grep -E '^# (Selection regret|Model error)' "$f" || true
        done
    done
done
echo "# load average $(load) at the end"
awk -f bench/model_summary.awk "$OUT"/*.txt | tee "$OUT/summary.txt"
echo "model: tables in $OUT/"
