#!/usr/bin/env bash
# compare.sh: one comparison table (markdown) and one busbw-vs-size plot (gnuplot PNG,
# log-log) from several nccl-tests-format outputs, each under a label. Used by run.sh
# (Strata against OpenMPI and Gloo) and nccl_ab.sh (stock NCCL against NCCL with
# Strata's plugin); needs only bash, awk and gnuplot.
#
#   bench/ab/compare.sh [options] LABEL=FILE[,FILE...] ...
#
# Several files under one label are repeated runs: each cell is their median.
# busbw is recomputed from each row's time (see extract.awk). Ratios are ref / system.
#
# Options:
#   --title TEXT     heading of the markdown and title of the plot
#   --md FILE        write the markdown here (default: standard output)
#   --png FILE       write the plot here (skipped with a warning without gnuplot)
#   --place oop|ip   out-of-place (default) or in-place columns
#   --ref LABEL      the label ratios are taken against (default: the first)
#   --large SIZE     where the summary's large-size line starts (default 1M)
#   --goal G:S:R     target: ref >= R x each system matching glob G at every size >= S
#                    (repeatable; e.g. --goal 'mpi-*:1M:1.5')
#   --membound L:GBPS:SIZE
#                    from SIZE up, each system's time against the memory bound of an
#                    L-rank allreduce on one node: time_bound = (3L-1)·n bytes / GBPS (the
#                    least traffic: each rank reads its n bytes of input and the (L-1)/L·n
#                    of the other blocks' results and writes n; bench/membound.sh)
#   --note TEXT      a line for the notes under the heading (repeatable)
# Exit: 0 when the table was written, 1 when no input had rows, 2 on bad usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
title="allreduce busbw"
md=""
png=""
place=oop
ref=""
large=1M
goals=()
membound=""
notes=()
specs=()

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

# 8, 64K, 1M, 2G -> bytes
to_bytes() {
    local v=$1 n mult=1
    case $v in
    *[kK]) n=${v%?}; mult=1024 ;;
    *[mM]) n=${v%?}; mult=1048576 ;;
    *[gG]) n=${v%?}; mult=1073741824 ;;
    *) n=$v ;;
    esac
    [[ $n =~ ^[0-9]+$ ]] || { echo "compare.sh: '$v' is not a size" >&2; exit 2; }
    echo $((n * mult))
}

while [ $# -gt 0 ]; do
    case $1 in
    --title) title=$2; shift 2 ;;
    --md) md=$2; shift 2 ;;
    --png) png=$2; shift 2 ;;
    --place) place=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    --large) large=$2; shift 2 ;;
    --goal) goals+=("$2"); shift 2 ;;
    --membound) membound=$2; shift 2 ;;
    --note) notes+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    -*) echo "compare.sh: unknown option $1" >&2; usage ;;
    *=*) specs+=("$1"); shift ;;
    *) echo "compare.sh: '$1' is not LABEL=FILE[,FILE...]" >&2; usage ;;
    esac
done
[ ${#specs[@]} -gt 0 ] || usage
case $place in oop|ip) ;; *) echo "compare.sh: --place is oop or ip" >&2; exit 2 ;; esac
large=$(to_bytes "$large")
goal_list=""
for g in "${goals[@]+"${goals[@]}"}"; do
    IFS=: read -r gg gs gr <<<"$g"
    if ! [[ -n $gg && -n $gs && $gr =~ ^[0-9.]+$ ]]; then
        echo "compare.sh: bad --goal '$g'" >&2
        exit 2
    fi
    goal_list+="${goal_list:+;}$gg:$(to_bytes "$gs"):$gr"
done

mb_l=0 mb_bw=0 mb_from=0
if [ -n "$membound" ]; then
    IFS=: read -r mb_l mb_bw mb_from <<<"$membound"
    if ! [[ $mb_l =~ ^[0-9]+$ && $mb_bw =~ ^[0-9.]+$ && -n $mb_from ]]; then
        echo "compare.sh: bad --membound '$membound' (L:GBPS:SIZE)" >&2
        exit 2
    fi
    mb_from=$(to_bytes "$mb_from")
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

labels=""
: >"$tmp/long"
for spec in "${specs[@]}"; do
    label=${spec%%=*}
    files=${spec#*=}
    if ! [[ $label =~ ^[A-Za-z0-9._+-]+$ ]]; then
        echo "compare.sh: label '$label' may hold only letters, digits and . _ + -" >&2
        exit 2
    fi
    labels+="${labels:+ }$label"
    [ -n "$ref" ] || ref=$label
    run=0
    IFS=, read -r -a flist <<<"$files"
    for f in "${flist[@]}"; do
        run=$((run + 1))
        if [ ! -r "$f" ]; then
            echo "compare.sh: $label: cannot read $f" >&2
            continue
        fi
        before=$(wc -l <"$tmp/long")
        awk -v label="$label" -v run="$run" -v place="$place" -f "$here/extract.awk" "$f" \
            >>"$tmp/long"
        if [ "$(wc -l <"$tmp/long")" -eq "$before" ]; then
            echo "compare.sh: $label: no nccl-tests rows in $f" >&2
            notes+=("$label: no nccl-tests rows in $(basename "$f")")
        fi
    done
done
if [ ! -s "$tmp/long" ]; then
    echo "compare.sh: no rows in any input" >&2
    exit 1
fi

{
    echo "## $title"
    echo
    if [ "$place" = ip ]; then what="in-place"; else what="out-of-place"; fi
    echo "busbw = algbw x the collective's bus factor (GB/s, 1 GB = 10^9 B), $what columns,"
    echo "recomputed from each row's time; medians over runs. Ratios are $ref / system."
    for n in "${notes[@]+"${notes[@]}"}"; do
        echo "- $n"
    done
    echo
    awk -v labels="$labels" -v ref="$ref" -v large="$large" -v goals="$goal_list" \
        -v mb_l="$mb_l" -v mb_bw="$mb_bw" -v mb_from="$mb_from" \
        -v datfile="$tmp/plot.dat" -f "$here/compare.awk" "$tmp/long"
} >"$tmp/table.md"

if [ -n "$md" ]; then
    cp "$tmp/table.md" "$md"
else
    cat "$tmp/table.md"
fi

if [ -n "$png" ]; then
    if ! command -v gnuplot >/dev/null 2>&1; then
        echo "compare.sh: gnuplot not found: no plot (apt-get install gnuplot-nox)" >&2
        exit 0
    fi
    if ! awk 'NR > 1 { for (i = 2; i <= NF; i++) if ($i != "?") found = 1 }
              END { exit !found }' "$tmp/plot.dat"; then
        echo "compare.sh: no positive busbw to plot: no plot" >&2
        exit 0
    fi
    # Tic labels in binary units at the sweep's sizes (every other one past 14 sizes), none
    # closer than a factor 3 to the previous so they do not overlap; the last size wins.
    tics=$(awk 'NR > 1 { n++; v[n] = $1 }
        END {
            step = n > 14 ? 2 : 1
            k = 0
            for (i = 1; i <= n; i++) {
                if ((i - 1) % step != 0 && i != n) continue
                if (k > 0 && v[i] < at[k] * 3) {
                    if (i != n) continue
                    k--
                }
                at[++k] = v[i]
            }
            s = ""
            for (j = 1; j <= k; j++) {
                x = at[j]
                if (x >= 1073741824 && x % 1073741824 == 0) t = (x / 1073741824) "G"
                else if (x >= 1048576 && x % 1048576 == 0) t = (x / 1048576) "M"
                else if (x >= 1024 && x % 1024 == 0) t = (x / 1024) "K"
                else t = x
                s = s (s == "" ? "" : ", ") "\"" t "\" " x
            }
            print s
        }' "$tmp/plot.dat")
    xr=$(awk 'NR == 2 { lo = $1 } NR > 1 { hi = $1 } END { print lo / 1.5 ":" hi * 1.5 }' \
        "$tmp/plot.dat")
    term="pngcairo size 1000,640 noenhanced font ',10'"
    gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo || term="png size 1000,640 noenhanced"
    {
        echo "set terminal $term"
        echo "set output '$tmp/plot.png'"
        echo "set title \"${title//\"/}\""
        echo "set logscale xy"
        echo "set xlabel 'size (bytes)'"
        echo "set ylabel 'busbw (GB/s, log scale)'"
        echo "set format y '%g'"
        echo "set grid xtics ytics mytics"
        echo "set key top left box opaque"
        echo "set datafile missing '?'"
        [ -z "$tics" ] || echo "set xtics ($tics)"
        echo "set xrange [$xr]"
        printf 'plot '
        col=2
        for label in $labels; do
            [ $col -gt 2 ] && printf ', '
            printf "'%s' using 1:%d with linespoints lw 2 pt %d title '%s'" \
                "$tmp/plot.dat" "$col" "$((col + 3))" "$label"
            col=$((col + 1))
        done
        echo
    } >"$tmp/plot.gp"
    if ! gnuplot "$tmp/plot.gp" 2>"$tmp/gnuplot.err"; then
        echo "compare.sh: gnuplot failed:" >&2
        cat "$tmp/gnuplot.err" >&2
        exit 1
    fi
    cp "$tmp/plot.png" "$png"
fi
