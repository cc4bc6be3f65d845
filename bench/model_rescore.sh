#!/usr/bin/env bash
# Rescores the tables of bench/model.sh with this tree's model: every algorithm's time in a
# table is measured, so the model's predictions (strata-plan, for the table's shape, on this
# host's cores, the tcp transport's rule) and auto's choice can be replaced and the summary
# recomputed without measuring again. What it cannot redo: the two-tier pipeline's chunk,
# which the run took from the model of its day (docs/benchmarks.md, "Model vs measurement");
# strata-plan prices the chunk this tree would take (tcp's striping band included).
#
#   bench/model_rescore.sh SRC DST     # SRC: a MODEL_OUT folder; DST: the rescored tables
#   awk -f bench/model_summary.awk DST/*.txt
#
# Knobs: BUILD (build), MODEL_CORES (the cores the tables ran on: nproc), MODEL_RATE_GBPS
# (0.25: the shaped shape's STRATA_NET_BETA_GBPS, as bench/model.sh sets it), MODEL_CALIBRATED
# (1: price each table with the values its run calibrated, read from its "# Strata" header
# lines, for sweeps run with STRATA_CALIBRATE=1). STRATA_* model variables in the environment
# reach strata-plan, as they reach the library.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# = 2 ] || { echo "usage: $0 SRC DST" >&2; exit 2; }
SRC=$1 DST=$2
BUILD=${BUILD:-build}
CORES=${MODEL_CORES:-$(nproc)}
RATE=${MODEL_RATE_GBPS:-0.25}
[ -x "$BUILD/bin/strata-plan" ] || { echo "model_rescore: build first (make -j2)" >&2; exit 1; }
mkdir -p "$DST"

for f in "$SRC"/*.txt; do
    head=$(head -1 "$f")
    case $head in "## shape "*) ;; *) continue ;; esac
    read -r _ _ shape _ coll _ <<<"$head"
    nodes=${shape%%x*}
    per=${shape#*x}; per=${per%[su]}
    envs=()
    [ "${shape: -1}" = s ] && envs+=("STRATA_NET_BETA_GBPS=$RATE")
    if [ "${MODEL_CALIBRATED:-0}" = 1 ]; then
        # "# Strata tier shm: alpha A us (calibrated), beta B GB/s (calibrated), ..." and the
        # cache, wake-up and yield lines: each calibrated figure as the variable that sets it
        while read -r var val; do envs+=("$var=$val"); done < <(awk '
            /^# Strata tier (shm|net):/ {
                t = toupper(substr($4, 1, 3))
                if ($8 == "(calibrated),") print "STRATA_" t "_ALPHA_US", $6
                if ($12 == "(calibrated),") print "STRATA_" t "_BETA_GBPS", $10
            }
            /^# Strata shm cache:/ {
                if ($8 == "(calibrated)") print "STRATA_SHM_CACHE_BETA_GBPS", $6
                if ($16 == "(calibrated)") print "STRATA_SHM_CACHE_BYTES", $14
            }
            /^# Strata wake-up:/ && $6 == "(calibrated)," { print "STRATA_WAKE_US", $4 }
            /^# Strata yield turn:/ && $7 == "(calibrated)," { print "STRATA_YIELD_US", $5 }
            /^# Strata selection/ { exit }' "$f")
    fi
    plan=$(env "${envs[@]}" "$BUILD/bin/strata-plan" -N "$nodes" -L "$per" \
        --host-ranks $((nodes * per)) --host-cores "$CORES" --transport tcp \
        --coll "$coll" -b 8 -e 16M -f 4)
    # strata-plan's rows: size, ring, recursive, hierarchical, leader, chosen, ...
    awk -v plan="$plan" '
        BEGIN {
            n = split(plan, lines, "\n")
            for (i = 1; i <= n; i++) {
                k = split(lines[i], t, " ")
                if (k >= 6 && t[1] ~ /^[0-9]+$/)
                    row[t[1]] = t[2] " " t[3] " " t[4] " " t[5] " " t[6]
            }
        }
        /^# Model vs measurement/ { intable = 1 }
        /^# Selection regret/ { intable = 0 }
        intable && /^# +[0-9]+ +[a-z_]+ / && NF == 13 && ($2 in row) {
            split(row[$2], p, " ")
            line = sprintf("# %10s %12s", $2, p[5])
            for (a = 1; a <= 4; a++)
                line = line sprintf(" %10s %9s", $(2 + 2 * a) == "-" ? "-" : p[a], $(3 + 2 * a))
            print line sprintf(" %13s %8s", $12, $13)
            next
        }
        { print }' "$f" >"$DST/$(basename "$f")"
done
echo "model_rescore: tables in $DST/ (awk -f bench/model_summary.awk $DST/*.txt)"
