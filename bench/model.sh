#!/usr/bin/env bash
# Model vs measurement on the emulated 2-node cluster: strata-perf --model, which times every
# applicable algorithm forced at each size (rounds interleaved, medians) next to the α-β
# model's prediction, and reports the selection regret (docs/benchmarks.md, "Model vs
# measurement").
#
#   sudo bench/model.sh                       # allreduce; tables in build/model/
#   MODEL_COLLS="allreduce broadcast" sudo bench/model.sh
#
# Knobs: BUILD (build), MODEL_RATE (2gbit, the inter-node link), MODEL_COLLS (allreduce),
# MODEL_ARGS (strata-perf's flags). Without root it runs the 2 nodes without namespaces or
# shaping (STRATA_NODE_ID only) and says so.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
RATE=${MODEL_RATE:-2gbit}
COLLS=${MODEL_COLLS:-allreduce}
read -r -a ARGS <<<"${MODEL_ARGS:--b 8 -e 16M -f 4 -n 20 -w 1 -c 1 --rounds 5}"
OUT=$BUILD/model
mkdir -p "$OUT"
[ -x "$BUILD/bin/strata-run" ] && [ -x "$BUILD/bin/strata-perf" ] ||
    { echo "model: build first (make -j2)" >&2; exit 1; }

rate_gbps=$(awk -v r="$RATE" 'BEGIN {
    n = r + 0; u = tolower(substr(r, length(n "") + 1));
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "tbit") ? 1e12 : 1;
    printf "%g", n * m / 8 / 1e9 }')
launch=(--netns --inter-rate "$RATE")
if [ "$(id -u)" != 0 ]; then
    echo "model: not root: 2 nodes by STRATA_NODE_ID only, loopback TCP, unshaped"
    launch=()
fi
for coll in $COLLS; do
    echo "== strata-run -n 4 --nodes 2 ${launch[*]} -- strata-perf --coll $coll --model ${ARGS[*]}"
    # The model is told the emulated link's bandwidth, as in the demo.
    STRATA_NET_BETA_GBPS=${STRATA_NET_BETA_GBPS:-$rate_gbps} \
        "$BUILD/bin/strata-run" -n 4 --nodes 2 "${launch[@]}" -- \
        "$BUILD/bin/strata-perf" --coll "$coll" --model "${ARGS[@]}" | tee "$OUT/$coll.txt"
done
echo "model: tables in $OUT/"
