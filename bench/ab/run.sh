#!/usr/bin/env bash
# run.sh: the A/B harness. Runs the same allreduce sweep for Strata and for its peers
# (OpenMPI 4.1 over shared memory and over TCP, Gloo ring and halving-doubling) on the
# same ranks and sizes, in one run, systems interleaved in time and repeated, then
# writes per rank count a markdown table (busbw per size per system, ratios Strata /
# peer, the targets docs/benchmarks.md states, and on one node each system's time against the memory
# bound) and a busbw-vs-size plot (PNG, log-log).
#
#   bench/ab/run.sh [--ranks 2,4] [-b 8] [-e 256M] [-f 4] [options]
#   bench/ab/run.sh --ranks 4 --nodes 2 [options]      # 2 emulated nodes of 2 ranks (root)
#
# Options:
#   --ranks LIST       rank counts, comma separated (default 2,4), all on this host
#   --nodes K          emulated nodes (default 1): the ranks of each count go to K network
#                      and mount namespaces in contiguous blocks, as `strata-run --nodes K
#                      --netns` places them (needs root); every system runs across them
#   -b, -e, -f         sweep: first size, last size, factor (default 8, 256M, 4); the
#                      last size is measured even where the factor steps over it
#   -n ITERS           timed calls per size (default 20)
#   -w WARMUP          untimed calls per size (default 5)
#   --split SIZE:N     sizes below SIZE get N timed calls instead (default 1M:200): small
#                      messages need many calls to average out a noisy machine; "none"
#                      runs one sweep
#   --runs R           repetitions of everything; tables show medians (default 3)
#   --systems LIST     subset of strata,mpi-vader,mpi-tcp,gloo-ring,gloo-hd (default all),
#                      and strata-base (needs --base-build)
#   --place oop|ip     which nccl-tests block the tables use (default oop)
#   --membound SIZE    on one node, from SIZE up, each system's time against the memory
#                      bound, (3L-1)·n bytes at the 2-thread copy rate `strata-reduce
#                      --membw 2` measures at the start of every run (default 16M; "none")
#   --out DIR          results (default build/ab/<date-time>); raw outputs under DIR/raw
#   --build-dir DIR    where make put things (default build): DIR/bin/strata-{run,perf,
#                      reduce}, DIR/bench/ab/{mpi,gloo}_allreduce
#   --strata-cmd CMD   how to start Strata's benchmark on {n} ranks ({nodes}: the emulated
#                      nodes); sweep flags are appended (default "DIR/bin/strata-run -n {n}
#                      -- DIR/bin/strata-perf", with "--nodes {nodes} --netns" when K > 1)
#   --base-build DIR   another tree's build (e.g. main before a change): system strata-base
#                      runs that build's strata-run and strata-perf as strata runs this one's,
#                      interleaved with the rest; its ratio column (base / this) says what the
#                      change made faster (above 1) or slower (below 1)
#   --mpirun PATH      OpenMPI's launcher (default: mpirun from PATH)
#   --timeout S        bound on each benchmark invocation (default 900)
#   --tables-only      run nothing: rebuild the tables and plots in --out DIR from its raw/
#                      outputs (same --ranks, --nodes, --systems, --runs as the run that
#                      made them)
# A system whose program or launcher is missing is skipped with the reason in the table.
#
# On K emulated nodes, OpenMPI runs as on a cluster: `strata-run -n K --nodes K --netns`
# starts one holder per node (this script, --node-hold: a hostname of its own in a UTS
# namespace); node 0's holder runs mpirun with a hostfile of the nodes' veth addresses and
# this script as its rsh agent (--rsh-agent), which starts orted in the node's namespaces
# with nsenter. mpi-vader is then vader inside a node and TCP between nodes; mpi-tcp is TCP
# everywhere. Gloo's ranks are started by strata-run itself (gloo_allreduce --store).
# Exit: 0 when every run that was not skipped succeeded, 1 otherwise, 2 on bad usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# The emulated nodes' addresses and interface: node k is <subnet>.(k+1) on veth0
# (tools/lib/tool_netns.h, STB_NETNS_SUBNET and STB_NETNS_IFNAME).
node_subnet=198.51.100
node_if=veth0
# How long node 0's holder waits for the other holders to come up (tenths of a second).
node_hold_wait=600

# Internal: one emulated node's holder, started by strata-run (one rank per node).
#   run.sh --node-hold DIR PER -- COMMAND...
# Takes a hostname of its own, leaves its pid in DIR/node<k>.pid for the rsh agent; node 0
# writes DIR/hosts (PER slots per node) once every node is up, runs COMMAND (mpirun) and
# then DIR/done, which lets the others exit.
node_hold() {
    # One holder per node: its rank is its node.
    local dir=$1 per=$2 id=${STRATA_RANK:-} nodes=${STRATA_NRANKS:-} k t pid rc
    shift 3
    if ! [[ $id =~ ^[0-9]+$ && $nodes =~ ^[0-9]+$ ]]; then
        echo "run.sh --node-hold: STRATA_RANK and STRATA_NRANKS unset: start it with" \
            "strata-run -n K --nodes K --netns" >&2
        exit 2
    fi
    if [ -z "${STRATA_AB_UTS:-}" ]; then
        STRATA_AB_UTS=1 exec unshare --uts "$here/run.sh" --node-hold "$dir" "$per" -- "$@"
    fi
    hostname "strata-ab-n$id" || exit 1
    echo $$ >"$dir/node$id.tmp" && mv "$dir/node$id.tmp" "$dir/node$id.pid" || exit 1
    if [ "$id" != 0 ]; then
        # Node 0 ends the run; if it fails, strata-run stops this holder.
        while [ ! -e "$dir/done" ]; do sleep 0.1; done
        exit 0
    fi
    for ((k = 0; k < nodes; k++)); do
        t=0
        while [ ! -e "$dir/node$k.pid" ] && [ $((t++)) -lt "$node_hold_wait" ]; do sleep 0.1; done
        [ -e "$dir/node$k.pid" ] || { echo "run.sh --node-hold: node $k never came up" >&2; exit 1; }
        echo "$node_subnet.$((k + 1)) slots=$per"
    done >"$dir/hosts"
    "$@" &
    pid=$!
    trap 'kill "$pid" 2>/dev/null' TERM INT HUP
    wait "$pid"
    rc=$?
    # A signal ends the first wait early; the second collects the launcher's own status.
    [ "$rc" -le 128 ] || { wait "$pid"; rc=$?; }
    : >"$dir/done"
    exit "$rc"
}

# Internal: mpirun's rsh agent on emulated nodes ("ssh HOST COMMAND" into the node's
# namespaces: network, mount (its /dev/shm), UTS).   run.sh --rsh-agent DIR HOST COMMAND...
rsh_agent() {
    local dir=$1 host pid
    shift
    while [[ ${1:-} == -* ]]; do shift; done   # ssh options, should a launcher pass any
    host=$1
    shift
    [[ $host == "$node_subnet".* ]] || { echo "run.sh --rsh-agent: unknown node $host" >&2; exit 255; }
    pid=$(cat "$dir/node$((${host##*.} - 1)).pid") || exit 255
    exec nsenter --target "$pid" --net --mount --uts -- /bin/sh -c "$*"
}

case ${1:-} in
--node-hold) shift; node_hold "$@" ;;
--rsh-agent) shift; rsh_agent "$@" ;;
esac
ranks=2,4
nodes=1
minb=8
maxb=256M
factor=4
iters=20
warmup=5
split=1M:200
runs=3
systems=strata,mpi-vader,mpi-tcp,gloo-ring,gloo-hd
place=oop
membound=16M
out=""
build=""
strata_cmd=""
base_build=""
base_cmd=""
mpirun=""
timeout_s=900
tables_only=0
orig_args=("$@")

usage() {
    sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
die() { echo "run.sh: $*" >&2; exit 2; }

to_bytes() {
    local v=$1 n mult=1
    case $v in
    *[kK]) n=${v%?}; mult=1024 ;;
    *[mM]) n=${v%?}; mult=1048576 ;;
    *[gG]) n=${v%?}; mult=1073741824 ;;
    *) n=$v ;;
    esac
    [[ $n =~ ^[0-9]+$ ]] || die "'$v' is not a size"
    echo $((n * mult))
}

while [ $# -gt 0 ]; do
    case $1 in
    --tables-only) tables_only=1; shift; continue ;;
    -h|--help) usage ;;
    esac
    [ $# -ge 2 ] || die "$1 needs a value"
    case $1 in
    --ranks) ranks=$2 ;;
    --nodes) nodes=$2 ;;
    -b) minb=$2 ;;
    -e) maxb=$2 ;;
    -f) factor=$2 ;;
    -n) iters=$2 ;;
    -w) warmup=$2 ;;
    --split) split=$2 ;;
    --runs) runs=$2 ;;
    --systems) systems=$2 ;;
    --place) place=$2 ;;
    --membound) membound=$2 ;;
    --out) out=$2 ;;
    --build-dir) build=$2 ;;
    --strata-cmd) strata_cmd=$2 ;;
    --base-build) base_build=$2 ;;
    --mpirun) mpirun=$2 ;;
    --timeout) timeout_s=$2 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift 2
done

minb=$(to_bytes "$minb") || exit 2
maxb=$(to_bytes "$maxb") || exit 2
for v in "$factor" "$iters" "$warmup" "$runs" "$timeout_s" "$nodes"; do
    [[ $v =~ ^[0-9]+$ ]] || die "'$v' is not a number"
done
[ "$factor" -ge 2 ] || die "-f must be at least 2"
[ "$minb" -ge 1 ] && [ "$maxb" -ge "$minb" ] || die "need 1 <= -b <= -e"
[ "$runs" -ge 1 ] && [ "$iters" -ge 1 ] || die "--runs and -n must be at least 1"
[[ $ranks =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--ranks is a comma-separated list of numbers"
case $place in oop|ip) ;; *) die "--place is oop or ip" ;; esac
[ "$nodes" -ge 1 ] || die "--nodes must be at least 1"
if [ "$nodes" -gt 1 ]; then
    IFS=, read -r -a rank_list <<<"$ranks"
    for n in "${rank_list[@]}"; do
        [ $((n % nodes)) -eq 0 ] && [ "$n" -ge "$nodes" ] ||
            die "--nodes $nodes: every rank count must be a multiple of it ($n is not)"
    done
    membound=none   # the bound below is one node's memory
fi
membound_at=0
[ "$membound" = none ] || membound_at=$(to_bytes "$membound") || exit 2
split_at=0
split_iters=$iters
if [ "$split" != none ]; then
    [[ $split =~ ^[0-9]+[kKmMgG]?:[0-9]+$ ]] || die "--split is SIZE:ITERS or none"
    split_at=$(to_bytes "${split%%:*}") || exit 2
    split_iters=${split#*:}
fi
build=${build:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || die "no build directory $build (run make first)"
[ "$tables_only" = 0 ] || [ -n "$out" ] || die "--tables-only needs --out DIR"
out=${out:-$build/ab/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/raw" || die "cannot create $out"
out=$(cd "$out" && pwd)
abdir=$build/bench/ab
if [ -z "$strata_cmd" ]; then
    strata_cmd="$build/bin/strata-run -n {n}"
    [ "$nodes" = 1 ] || strata_cmd+=" --nodes {nodes} --netns"
    strata_cmd+=" -- $build/bin/strata-perf"
fi
if [ -n "$base_build" ]; then
    base_build=$(cd "$base_build" 2>/dev/null && pwd) || die "no build directory $base_build"
    base_cmd="$base_build/bin/strata-run -n {n}"
    [ "$nodes" = 1 ] || base_cmd+=" --nodes {nodes} --netns"
    base_cmd+=" -- $base_build/bin/strata-perf"
fi
[ -n "$mpirun" ] || mpirun=$(command -v mpirun || echo mpirun)

# Scratch for everything the benchmarks create (Gloo's file store, OpenMPI's session
# directory): removed on exit, even when a run was killed by its timeout.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/strata-ab.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

# Why a system cannot run here ("" when it can).
why_skipped() {
    local prog
    if [ "$nodes" -gt 1 ]; then
        [ "$(id -u)" = 0 ] || { echo "emulated nodes need root (network namespaces)"; return; }
        [ -x "$build/bin/strata-run" ] || { echo "$build/bin/strata-run not built (it" \
            "makes the emulated nodes)"; return; }
        case $1 in
        mpi-*)
            for prog in unshare nsenter hostname; do
                command -v "$prog" >/dev/null 2>&1 || { echo "$prog not found (util-linux," \
                    "hostname)"; return; }
            done ;;
        esac
    fi
    case $1 in
    strata|strata-base)
        local c=$strata_cmd
        if [ "$1" = strata-base ]; then
            [ -n "$base_cmd" ] || { echo "no --base-build given"; return; }
            c=$base_cmd
        fi
        for prog in $c; do
            case $prog in
            */strata-run|*/strata-perf)
                [ -x "$prog" ] || { echo "$prog not built (make all in that tree)"; return; } ;;
            esac
        done ;;
    mpi-*)
        [ -x "$abdir/mpi_allreduce" ] || { echo "$abdir/mpi_allreduce not built (needs" \
            "mpicc: apt-get install libopenmpi-dev)"; return; }
        command -v "$mpirun" >/dev/null 2>&1 || { echo "$mpirun not found (apt-get install" \
            "openmpi-bin)"; return; } ;;
    gloo-*)
        [ -x "$abdir/gloo_allreduce" ] || echo "$abdir/gloo_allreduce not built (needs" \
            "Gloo: apt-get install libgloo-dev)" ;;
    *) echo "unknown system" ;;
    esac
}

# The command for system $1 on $2 ranks (sweep flags appended by the caller), one word per line.
command_for() {
    local sys=$1 n=$2 w c
    local mpi=("$mpirun" -np "$n" --oversubscribe --allow-run-as-root --mca pml ob1)
    if [ "$sys" = strata ] || [ "$sys" = strata-base ]; then
        c=$strata_cmd
        [ "$sys" = strata ] || c=$base_cmd
        c=${c//\{n\}/$n}
        for w in ${c//\{nodes\}/$nodes}; do printf '%s\n' "$w"; done
        return
    fi
    if [ "$nodes" -gt 1 ]; then
        command_for_nodes "$sys" "$n"
        return
    fi
    case $sys in
    mpi-vader) printf '%s\n' "${mpi[@]}" --mca btl vader,self "$abdir/mpi_allreduce" ;;
    mpi-tcp) printf '%s\n' "${mpi[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo \
        "$abdir/mpi_allreduce" ;;
    gloo-ring) printf '%s\n' "$abdir/gloo_allreduce" --np "$n" -A ring ;;
    gloo-hd) printf '%s\n' "$abdir/gloo_allreduce" --np "$n" -A hd ;;
    esac
}

# The same on $nodes emulated nodes (see the header). Each node's hostfile slots look like
# the host's cores to OpenMPI, so it is told what --oversubscribe tells it on one host when
# the ranks outnumber the cores: bind nothing, and yield when idle instead of spinning (it
# spun 2-8 ms per call without). Strata and Gloo share the cores the same way (strata-run
# binds none when the ranks outnumber the cores).
command_for_nodes() {
    local sys=$1 n=$2
    local holders=("$build/bin/strata-run" -n "$nodes" --nodes "$nodes" --netns --bind none
                   --timeout "$timeout_s" -- "$here/run.sh" --node-hold "$scratch/nodes"
                   $((n / nodes)) --)
    local mpi=("$mpirun" -np "$n" --hostfile "$scratch/nodes/hosts" --allow-run-as-root
               --bind-to none --mca mpi_yield_when_idle 1 --mca pml ob1
               --mca oob_tcp_if_include "$node_if"
               --mca btl_tcp_if_include "$node_if"
               --mca plm_rsh_agent "$here/run.sh --rsh-agent $scratch/nodes")
    local gloo=("$build/bin/strata-run" -n "$n" --nodes "$nodes" --netns --timeout "$timeout_s"
                -- "$abdir/gloo_allreduce" --store "$scratch/gloo-store" --iface "$node_if")
    case $sys in
    mpi-vader) printf '%s\n' "${holders[@]}" "${mpi[@]}" --mca btl vader,tcp,self \
        "$abdir/mpi_allreduce" ;;
    mpi-tcp) printf '%s\n' "${holders[@]}" "${mpi[@]}" --mca btl tcp,self "$abdir/mpi_allreduce" ;;
    gloo-ring) printf '%s\n' "${gloo[@]}" -A ring ;;
    gloo-hd) printf '%s\n' "${gloo[@]}" -A hd ;;
    esac
}

# Sweep segments "first last iters": small sizes (below the split) get more calls.
segments=()
s=$minb
last_small=0
while [ "$s" -le "$maxb" ] && [ "$s" -lt "$split_at" ]; do
    last_small=$s
    s=$((s * factor))
done
[ "$last_small" -eq 0 ] || segments+=("$minb $last_small $split_iters")
[ "$s" -gt "$maxb" ] || segments+=("$s $maxb $iters")
# The sweep ends at -e even when the factor steps over it (8 B x 4^k never hits 256 MiB).
last=$minb
while [ $((last * factor)) -le "$maxb" ]; do last=$((last * factor)); done
if [ "$last" -lt "$maxb" ]; then
    if [ "$maxb" -lt "$split_at" ]; then
        segments+=("$maxb $maxb $split_iters")
    else
        segments+=("$maxb $maxb $iters")
    fi
fi

IFS=, read -r -a sys_list <<<"$systems"
IFS=, read -r -a rank_list <<<"$ranks"
declare -A skip_reason=()
for sys in "${sys_list[@]}"; do
    case $sys in
    strata|strata-base|mpi-vader|mpi-tcp|gloo-ring|gloo-hd) ;;
    *) die "unknown system '$sys'" ;;
    esac
    reason=$(why_skipped "$sys")
    if [ -n "$reason" ]; then
        skip_reason[$sys]=$reason
        echo "run.sh: skipping $sys: $reason"
    fi
done

# One invocation per segment, appended to one nccl-tests-format file.
run_one() {
    local sys=$1 n=$2 file=$3 seg first last it rc=0
    local -a cmd
    : >"$file"
    for seg in "${segments[@]}"; do
        read -r first last it <<<"$seg"
        mapfile -t cmd < <(command_for "$sys" "$n")
        cmd+=(-b "$first" -e "$last" -f "$factor" -n "$it" -w "$warmup")
        case $sys in strata|strata-base) ;; *) cmd+=(-T "$timeout_s") ;; esac
        printf '%q ' "${cmd[@]}" >>"$out/commands.txt"
        echo >>"$out/commands.txt"
        # Fresh rendezvous state for every invocation on emulated nodes.
        rm -rf "$scratch/nodes" "$scratch/gloo-store"
        mkdir -p "$scratch/nodes" "$scratch/gloo-store"
        TMPDIR=$scratch timeout --kill-after=10 "$timeout_s" "${cmd[@]}" >>"$file" 2>&1 || rc=$?
        [ "$rc" -eq 0 ] || break
    done
    return "$rc"
}

# Files of a rank count: raw/n<ranks><sfx>/, ab-n<ranks><sfx>.md (sfx names the nodes).
sfx=""
[ "$nodes" = 1 ] || sfx=-${nodes}nodes
membw_cmd=("$build/bin/strata-reduce" --membw 2 --sizes 256M --reps 3)
membw_skip=""
[ "$maxb" -ge "$membound_at" ] || membound_at=0   # no size of the sweep reaches it
if [ "$membound_at" -gt 0 ] && [ ! -x "${membw_cmd[0]}" ]; then
    membw_skip="${membw_cmd[0]} not built: no memory bound"
    membound_at=0
fi

# Each finished run leaves "ranks system run ok|failed" in status.txt, the load average in
# load.txt and the memory bandwidth in membw.txt, so --tables-only can rebuild the tables.
failures=0
declare -A failed_runs=()
if [ "$tables_only" = 0 ]; then
    {
        echo "# bench/ab/run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        printf '# %q ' "$0" "${orig_args[@]+"${orig_args[@]}"}"
        echo
    } >"$out/commands.txt"
    : >"$out/status.txt"
    echo "start $(cut -d' ' -f1-3 /proc/loadavg)" >"$out/load.txt"
    : >"$out/membw.txt"
    for ((r = 1; r <= runs; r++)); do
        if [ "$membound_at" -gt 0 ]; then
            bw=$("${membw_cmd[@]}" 2>&1 | sed -n 's/^membw .*: \([0-9.]*\) GB\/s.*/\1/p')
            echo "run.sh: run $r/$runs, memory bandwidth (${membw_cmd[*]##*/}): ${bw:-failed} GB/s"
            [ -z "$bw" ] || echo "$r $bw" >>"$out/membw.txt"
        fi
        for n in "${rank_list[@]}"; do
            mkdir -p "$out/raw/n$n$sfx"
            for sys in "${sys_list[@]}"; do
                [ -z "${skip_reason[$sys]:-}" ] || continue
                file=$out/raw/n$n$sfx/$sys.r$r.txt
                start=$(date +%s)
                if run_one "$sys" "$n" "$file"; then
                    echo "run.sh: run $r/$runs, $n ranks, $sys: ok ($(($(date +%s) - start)) s)"
                    echo "$n $sys $r ok" >>"$out/status.txt"
                else
                    rc=$?
                    echo "run.sh: run $r/$runs, $n ranks, $sys: FAILED (exit $rc after" \
                        "$(($(date +%s) - start)) s); output: $file" >&2
                    tail -n 5 "$file" | sed 's/^/    | /' >&2
                    echo "$n $sys $r failed" >>"$out/status.txt"
                fi
            done
        done
    done
    echo "end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/load.txt"
fi
# A run counts when its output exists and status.txt (if any) does not say it failed.
for n in "${rank_list[@]}"; do
    for sys in "${sys_list[@]}"; do
        [ -z "${skip_reason[$sys]:-}" ] || continue
        for ((r = 1; r <= runs; r++)); do
            if [ ! -s "$out/raw/n$n$sfx/$sys.r$r.txt" ] ||
                grep -qx "$n $sys $r failed" "$out/status.txt" 2>/dev/null; then
                failures=$((failures + 1))
                failed_runs[$n/$sys]+="$r "
            fi
        done
    done
done
load_start=$(sed -n 's/^start //p' "$out/load.txt" 2>/dev/null)
load_end=$(sed -n 's/^end //p' "$out/load.txt" 2>/dev/null)
# The memory bound's rate: the median of the runs' measurements.
membw=""
[ "$membound_at" -eq 0 ] || membw=$(awk '{ print $2 }' "$out/membw.txt" 2>/dev/null | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
membw_runs=$(grep -c . "$out/membw.txt" 2>/dev/null)

# The tables, one per rank count, and a summary that strings them together.
machine="$(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1))"
machine+=", $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
machine+=", Linux $(uname -r)"
summary=$out/summary.md
{
    echo "# A/B allreduce: $systems"
    echo
    echo "- machine: $machine"
    echo "- load average (1, 5, 15 min) at start: ${load_start:-?}; at end: ${load_end:-?}"
    echo "- sweep: $(to_bytes "$minb") B to $maxb B, factor $factor, $warmup warmup calls," \
        "$iters timed calls per size$([ "$split_at" -gt 0 ] && echo \
        " ($split_iters below $split_at B)"), $runs runs, medians"
    [ "$nodes" = 1 ] || echo "- $nodes emulated nodes (network and mount namespaces), ranks in" \
        "contiguous blocks"
    [ -z "$membw" ] || echo "- memory bandwidth (2 threads, read + write): $membw GB/s, median of" \
        "$membw_runs runs' \`strata-reduce --membw 2\` ($(awk '{ printf "%s%s", s, $2; s = ", " }' \
        "$out/membw.txt"))"
    [ -z "$membw_skip" ] || echo "- $membw_skip"
    echo "- commands: commands.txt; raw outputs: raw/n<ranks>$sfx/<system>.r<run>.txt"
    echo
} >"$summary"
status=0
[ "$failures" -eq 0 ] || status=1
for n in "${rank_list[@]}"; do
    specs=()
    notes=()
    ref=""
    for sys in "${sys_list[@]}"; do
        if [ -n "${skip_reason[$sys]:-}" ]; then
            notes+=(--note "$sys skipped: ${skip_reason[$sys]}")
            continue
        fi
        files=""
        for ((r = 1; r <= runs; r++)); do
            case " ${failed_runs[$n/$sys]:-} " in *" $r "*) continue ;; esac
            files+="${files:+,}$out/raw/n$n$sfx/$sys.r$r.txt"
        done
        if [ -z "$files" ]; then
            notes+=(--note "$sys: every run failed (see raw/n$n$sfx/)")
            continue
        fi
        [ -z "${failed_runs[$n/$sys]:-}" ] ||
            notes+=(--note "$sys: run(s) ${failed_runs[$n/$sys]}failed and are left out")
        specs+=("$sys=$files")
        [ "$sys" != strata-base ] || notes+=(--note "strata-base: the build in $base_build")
        [ "$sys" != strata ] || ref=strata
    done
    if [ ${#specs[@]} -eq 0 ]; then
        echo "run.sh: $n ranks: nothing ran" >&2
        { echo "## $n ranks: nothing ran"; echo
          for ((i = 1; i < ${#notes[@]}; i += 2)); do echo "- ${notes[i]}"; done
          echo; } >>"$summary"
        status=1
        continue
    fi
    goals=()
    # The peers' targets; strata-base (another tree of Strata) is compared, not judged.
    [ -z "$ref" ] || goals=(--ref strata --goal 'mpi-*:0:1.0' --goal 'gloo-*:0:1.0'
                            --goal 'mpi-*:1M:1.5')
    [ -z "$membw" ] || goals+=(--membound "$n:$membw:$membound_at")
    where="one host"
    [ "$nodes" = 1 ] || where="$nodes emulated nodes ($((n / nodes)) per node)"
    if ! "$here/compare.sh" --title "allreduce, $n ranks on $where" --place "$place" \
        --md "$out/ab-n$n$sfx.md" --png "$out/ab-n$n$sfx.png" "${goals[@]+"${goals[@]}"}" \
        "${notes[@]+"${notes[@]}"}" "${specs[@]}"; then
        echo "run.sh: $n ranks: compare.sh failed" >&2
        { echo "## $n ranks: compare.sh failed"; echo
          for ((i = 1; i < ${#notes[@]}; i += 2)); do echo "- ${notes[i]}"; done
          echo; } >>"$summary"
        status=1
        continue
    fi
    { cat "$out/ab-n$n$sfx.md"; echo; echo "Plot: ab-n$n$sfx.png"; echo; } >>"$summary"
done
echo "run.sh: results in $out (summary.md, ab-n<ranks>$sfx.md/.png, raw/)"
exit "$status"
