#!/usr/bin/env bash
# nccl_ab.sh: stock NCCL against NCCL with Strata's net plugin, through nccl-tests, on
# a GPU cluster. For each collective (all_reduce_perf, all_gather_perf,
# reduce_scatter_perf, broadcast_perf, reduce_perf) and each run it starts nccl-tests
# under your launcher twice, interleaved:
#   stock    NCCL_NET_PLUGIN=none (NCCL's own IB / Socket; no external plugin)
#   strata   NCCL_NET_PLUGIN=strata NCCL_NET=Strata NCCL_NET_PLUGIN_REF_COUNT=1, with
#            the plugin's directory first in LD_LIBRARY_PATH
# with NCCL_DEBUG=INFO, and reads the log: a strata run counts only if NCCL said
# "Assigned NET plugin Strata" and never assigned another plugin; a stock run only if
# it never assigned Strata. A run that fails that check, exits non-zero or prints no
# rows is refused: kept under raw/ for reading, left out of the tables, exit status 1.
# Then compare.sh writes one table and one plot per collective (ratios strata / stock).
#
#   bench/ab/nccl_ab.sh --tests ~/nccl-tests [--build] [options] -- LAUNCHER [ARGS...]
#   e.g. ... -- mpirun -np 16 -H node1:8,node2:8 --bind-to numa
#        ... -- srun -N 2 --ntasks-per-node=8 --gpus-per-node=8 --mpi=pmix
#
# Options:
#   --tests DIR        your nccl-tests checkout (we do not ship it)
#   --build            build it first: make -C DIR MPI=1 [MPI_HOME= CUDA_HOME= NCCL_HOME=]
#   --mpi-home DIR, --cuda-home DIR, --nccl-home DIR   passed to nccl-tests' make
#   --bin-dir DIR      where the *_perf binaries are (default DIR/build)
#   --plugin-dir DIR   holds libnccl-net-strata.so (default: this tree's build/lib); must
#                      be the same path on every node
#   --colls LIST       default all_reduce,all_gather,reduce_scatter,broadcast,reduce
#   --args "ARGS"      nccl-tests flags (default "-b 8 -e 1G -f 2 -g 1")
#   --runs R           repetitions (default 1); tables show medians
#   --stock-net NAME   set NCCL_NET=NAME for the stock runs too (e.g. IB), to fail
#                      rather than fall back to Socket
#   --out DIR          results (default build/nccl-ab/<date-time>)
#   --timeout S        bound on each nccl-tests invocation (default 1800)
# The launcher must pass the environment to every rank: srun does by default; for an
# mpirun/mpiexec that says "Open MPI" we add -x VAR, for MPICH/Hydra -genv VAR VALUE;
# for any other launcher forward NCCL_* and LD_LIBRARY_PATH yourself. With no launcher
# the binaries run directly (one process, -g GPUs).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tests=""
build=0
mpi_home=""
cuda_home=""
nccl_home=""
bin_dir=""
plugin_dir=$root/build/lib
colls=all_reduce,all_gather,reduce_scatter,broadcast,reduce
targs="-b 8 -e 1G -f 2 -g 1"
runs=1
stock_net=""
out=""
timeout_s=1800
launcher=()

usage() {
    sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
die() { echo "nccl_ab.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    --) shift; launcher=("$@"); break ;;
    --build) build=1; shift; continue ;;
    -h|--help) usage ;;
    esac
    [ $# -ge 2 ] || die "$1 needs a value"
    case $1 in
    --tests) tests=$2 ;;
    --mpi-home) mpi_home=$2 ;;
    --cuda-home) cuda_home=$2 ;;
    --nccl-home) nccl_home=$2 ;;
    --bin-dir) bin_dir=$2 ;;
    --plugin-dir) plugin_dir=$2 ;;
    --colls) colls=$2 ;;
    --args) targs=$2 ;;
    --runs) runs=$2 ;;
    --stock-net) stock_net=$2 ;;
    --out) out=$2 ;;
    --timeout) timeout_s=$2 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift 2
done

[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive number"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number"
if [ -z "$bin_dir" ]; then
    [ -n "$tests" ] || die "give --tests DIR (your nccl-tests checkout) or --bin-dir DIR"
    bin_dir=$tests/build
fi
if [ "$build" = 1 ]; then
    [ -n "$tests" ] && [ -f "$tests/Makefile" ] || die "--build needs --tests DIR with a Makefile"
    mk=(make -C "$tests" -j "$(nproc)" MPI=1)
    [ -z "$mpi_home" ] || mk+=("MPI_HOME=$mpi_home")
    [ -z "$cuda_home" ] || mk+=("CUDA_HOME=$cuda_home")
    [ -z "$nccl_home" ] || mk+=("NCCL_HOME=$nccl_home")
    echo "nccl_ab.sh: ${mk[*]}"
    "${mk[@]}" || die "building nccl-tests failed"
fi
[ -f "$plugin_dir/libnccl-net-strata.so" ] ||
    die "no libnccl-net-strata.so in $plugin_dir (run make, or give --plugin-dir)"
plugin_dir=$(cd "$plugin_dir" && pwd)
IFS=, read -r -a coll_list <<<"$colls"
for c in "${coll_list[@]}"; do
    case $c in all_reduce|all_gather|reduce_scatter|broadcast|reduce) ;;
    *) die "unknown collective '$c'" ;; esac
    [ -x "$bin_dir/${c}_perf" ] || die "$bin_dir/${c}_perf not found (build nccl-tests: --build)"
done
out=${out:-$root/build/nccl-ab/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/raw" || die "cannot create $out"
out=$(cd "$out" && pwd)
read -r -a targ_list <<<"$targs"

# How this launcher forwards a variable: "x" (Open MPI), "genv" (MPICH/Hydra), "" (none).
forward=""
if [ ${#launcher[@]} -gt 0 ]; then
    case $(basename "${launcher[0]}") in
    mpirun|mpiexec|orterun|mpiexec.*|mpirun.*)
        ver=$("${launcher[0]}" --version 2>&1 | head -n 5)
        case $ver in
        *"Open MPI"*|*OpenRTE*) forward=x ;;
        *HYDRA*|*MPICH*|*"Intel(R) MPI"*) forward=genv ;;
        esac ;;
    esac
fi

# The command line for one run: launcher, forwarded variables, binary, flags.
build_cmd() {
    local bin=$1 v
    shift
    cmd=()
    if [ ${#launcher[@]} -gt 0 ]; then
        cmd=("${launcher[0]}")
        for v in "$@"; do
            case $forward in
            x) cmd+=(-x "$v") ;;
            genv) cmd+=(-genv "$v" "${!v}") ;;
            esac
        done
        cmd+=("${launcher[@]:1}")
    fi
    cmd+=("$bin" "${targ_list[@]}")
}

# Which NET plugins NCCL assigned, one name per line, from "Assigned NET plugin X to
# comm" or, from NCCL releases before that line existed, "Using network X".
assigned_plugins() {
    local names
    names=$(sed -n 's/.*NCCL INFO Assigned NET plugin \([^ ]*\) to comm.*/\1/p' "$1")
    [ -n "$names" ] || names=$(sed -n 's/.*NCCL INFO Using network \([^ ]*\).*/\1/p' "$1")
    printf '%s\n' "$names" | sed '/^$/d'
}

# Why a finished run cannot be reported ("" when it can). $1 variant, $2 log, $3 exit code.
refuse_reason() {
    local variant=$1 log=$2 rc=$3 names others warn hint
    if [ "$rc" -ne 0 ]; then
        warn=$(grep -m 1 -o 'NCCL WARN.*' "$log")
        echo "nccl-tests exited with $rc${warn:+ ($warn)}"
        return
    fi
    awk -f "$here/extract.awk" -v label=x -v run=1 -v place=oop "$log" | grep -q . ||
        { echo "no nccl-tests rows in the output"; return; }
    names=$(assigned_plugins "$log")
    if [ "$variant" = strata ]; then
        [ -n "$names" ] || { echo "NCCL never said 'Assigned NET plugin' (NCCL_DEBUG=INFO" \
            "output missing?)"; return; }
        others=$(printf '%s\n' "$names" | grep -vix strata | sort -u | paste -sd, -)
        if [ -n "$others" ]; then
            hint=$(grep -m 2 -o 'NET/Plugin.*' "$log" | paste -sd';' -)
            echo "NCCL assigned NET plugin(s) $others, not Strata: the plugin did not" \
                "load${hint:+ ($hint)}"
            return
        fi
    else
        printf '%s\n' "$names" | grep -qix strata &&
            { echo "the stock run loaded Strata's plugin (libnccl-net.so on the path?)"; return; }
    fi
    grep -q '^# Out of bounds values : [1-9]' "$log" &&
        { echo "nccl-tests found wrong values"; return; }
}

# The environment of each variant (exported for the run only, in a subshell).
run_variant() {
    local variant=$1 coll=$2 log=$3 rc=0
    (
        export NCCL_DEBUG=INFO
        export NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
        vars=(NCCL_DEBUG NCCL_DEBUG_SUBSYS NCCL_NET_PLUGIN)
        if [ "$variant" = strata ]; then
            export NCCL_NET_PLUGIN=strata NCCL_NET=Strata NCCL_NET_PLUGIN_REF_COUNT=1
            export LD_LIBRARY_PATH=$plugin_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
            vars+=(NCCL_NET NCCL_NET_PLUGIN_REF_COUNT LD_LIBRARY_PATH)
        else
            export NCCL_NET_PLUGIN=none
            unset NCCL_NET NCCL_NET_PLUGIN_REF_COUNT
            if [ -n "$stock_net" ]; then
                export NCCL_NET=$stock_net
                vars+=(NCCL_NET)
            fi
            [ -z "${LD_LIBRARY_PATH:-}" ] || vars+=(LD_LIBRARY_PATH)
        fi
        build_cmd "$bin_dir/${coll}_perf" "${vars[@]}"
        {
            for v in "${vars[@]}"; do printf '%s=%q ' "$v" "${!v}"; done
            printf '%q ' "${cmd[@]}"
            echo
        } >>"$out/commands.txt"
        exec timeout --kill-after=30 "$timeout_s" "${cmd[@]}"
    ) >"$log" 2>&1 || rc=$?
    return "$rc"
}

echo "# bench/ab/nccl_ab.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$out/commands.txt"
status=0
declare -A good=()
declare -A refused=()
for ((r = 1; r <= runs; r++)); do
    for coll in "${coll_list[@]}"; do
        for variant in stock strata; do
            log=$out/raw/$coll.$variant.r$r.log
            rc=0
            run_variant "$variant" "$coll" "$log" || rc=$?
            why=$(refuse_reason "$variant" "$log" "$rc")
            if [ -n "$why" ]; then
                echo "nccl_ab.sh: REFUSED $coll $variant run $r: $why (log: $log)" >&2
                refused[$coll]+="- $variant run $r refused: $why"$'\n'
                status=1
                continue
            fi
            plugins=$(assigned_plugins "$log" | sort | uniq -c |
                awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
            echo "nccl_ab.sh: $coll $variant run $r: ok (assigned: ${plugins:-none})"
            good[$coll.$variant]+="${good[$coll.$variant]:+,}$log"
        done
    done
done

summary=$out/nccl-ab.md
{
    echo "# stock NCCL vs NCCL with Strata's net plugin (nccl-tests)"
    echo
    echo "- nccl-tests flags: $targs; runs: $runs; launcher: ${launcher[*]:-(none)}"
    echo "- plugin: $plugin_dir/libnccl-net-strata.so; commands: commands.txt; logs: raw/"
    echo
} >"$summary"
for coll in "${coll_list[@]}"; do
    specs=()
    notes=()
    [ -z "${good[$coll.stock]:-}" ] || specs+=("stock=${good[$coll.stock]}")
    [ -z "${good[$coll.strata]:-}" ] || specs+=("strata=${good[$coll.strata]}")
    while IFS= read -r line; do
        [ -z "$line" ] || notes+=(--note "${line#- }")
    done <<<"${refused[$coll]:-}"
    if [ ${#specs[@]} -eq 0 ]; then
        { echo "## ${coll}_perf: no valid run"; echo; printf '%s' "${refused[$coll]:-}"
          echo; } >>"$summary"
        continue
    fi
    if ! "$here/compare.sh" --title "${coll}_perf: stock NCCL vs Strata plugin" --ref strata \
        --md "$out/$coll.md" --png "$out/$coll.png" "${notes[@]+"${notes[@]}"}" "${specs[@]}"
    then
        echo "nccl_ab.sh: compare.sh failed for $coll" >&2
        status=1
        continue
    fi
    { cat "$out/$coll.md"; echo; echo "Plot: $coll.png"; echo; } >>"$summary"
done
echo "nccl_ab.sh: results in $out (nccl-ab.md, <coll>.md/.png, raw/)"
exit "$status"
