#!/usr/bin/env bash
# run.sh: the A/B harness. Runs the same allreduce sweep for Strata and for its peers
# (OpenMPI 4.1 over shared memory and over TCP, Gloo ring and halving-doubling) on the
# same ranks and sizes, in one run, systems interleaved in time and repeated, then
# writes per rank count a markdown table (busbw per size per system, ratios Strata /
# peer, the issue's targets) and a busbw-vs-size plot (PNG, log-log).
#
#   bench/ab/run.sh [--ranks 2,4] [-b 8] [-e 256M] [-f 4] [options]
#
# Options:
#   --ranks LIST       rank counts, comma separated (default 2,4), all on this host
#   -b, -e, -f         sweep: first size, last size, factor (default 8, 256M, 4)
#   -n ITERS           timed calls per size (default 20)
#   -w WARMUP          untimed calls per size (default 5)
#   --split SIZE:N     sizes below SIZE get N timed calls instead (default 1M:200): small
#                      messages need many calls to average out a noisy machine; "none"
#                      runs one sweep
#   --runs R           repetitions of everything; tables show medians (default 3)
#   --systems LIST     subset of strata,mpi-vader,mpi-tcp,gloo-ring,gloo-hd (default all)
#   --place oop|ip     which nccl-tests block the tables use (default oop)
#   --out DIR          results (default build/ab/<date-time>); raw outputs under DIR/raw
#   --build-dir DIR    where make put things (default build): DIR/bin/strata-{run,perf},
#                      DIR/bench/ab/{mpi,gloo}_allreduce
#   --strata-cmd CMD   how to start Strata's benchmark on {n} ranks; sweep flags are
#                      appended (default "DIR/bin/strata-run -n {n} -- DIR/bin/strata-perf")
#   --mpirun PATH      OpenMPI's launcher (default: mpirun from PATH)
#   --timeout S        bound on each benchmark invocation (default 900)
# A system whose program or launcher is missing is skipped with the reason in the table.
# Exit: 0 when every run that was not skipped succeeded, 1 otherwise, 2 on bad usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
ranks=2,4
minb=8
maxb=256M
factor=4
iters=20
warmup=5
split=1M:200
runs=3
systems=strata,mpi-vader,mpi-tcp,gloo-ring,gloo-hd
place=oop
out=""
build=""
strata_cmd=""
mpirun=""
timeout_s=900

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
    [ $# -ge 2 ] || case $1 in -h|--help) ;; *) die "$1 needs a value" ;; esac
    case $1 in
    --ranks) ranks=$2 ;;
    -b) minb=$2 ;;
    -e) maxb=$2 ;;
    -f) factor=$2 ;;
    -n) iters=$2 ;;
    -w) warmup=$2 ;;
    --split) split=$2 ;;
    --runs) runs=$2 ;;
    --systems) systems=$2 ;;
    --place) place=$2 ;;
    --out) out=$2 ;;
    --build-dir) build=$2 ;;
    --strata-cmd) strata_cmd=$2 ;;
    --mpirun) mpirun=$2 ;;
    --timeout) timeout_s=$2 ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift 2
done

minb=$(to_bytes "$minb") || exit 2
maxb=$(to_bytes "$maxb") || exit 2
for v in "$factor" "$iters" "$warmup" "$runs" "$timeout_s"; do
    [[ $v =~ ^[0-9]+$ ]] || die "'$v' is not a number"
done
[ "$factor" -ge 2 ] || die "-f must be at least 2"
[ "$minb" -ge 1 ] && [ "$maxb" -ge "$minb" ] || die "need 1 <= -b <= -e"
[ "$runs" -ge 1 ] && [ "$iters" -ge 1 ] || die "--runs and -n must be at least 1"
[[ $ranks =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--ranks is a comma-separated list of numbers"
case $place in oop|ip) ;; *) die "--place is oop or ip" ;; esac
split_at=0
split_iters=$iters
if [ "$split" != none ]; then
    [[ $split =~ ^[0-9]+[kKmMgG]?:[0-9]+$ ]] || die "--split is SIZE:ITERS or none"
    split_at=$(to_bytes "${split%%:*}") || exit 2
    split_iters=${split#*:}
fi
build=${build:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || die "no build directory $build (run make first)"
out=${out:-$build/ab/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/raw" || die "cannot create $out"
out=$(cd "$out" && pwd)
abdir=$build/bench/ab
[ -n "$strata_cmd" ] || strata_cmd="$build/bin/strata-run -n {n} -- $build/bin/strata-perf"
[ -n "$mpirun" ] || mpirun=$(command -v mpirun || echo mpirun)

# Scratch for everything the benchmarks create (Gloo's file store, OpenMPI's session
# directory): removed on exit, even when a run was killed by its timeout.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/strata-ab.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

# Why a system cannot run here ("" when it can).
why_skipped() {
    local prog
    case $1 in
    strata)
        for prog in $strata_cmd; do
            case $prog in
            */strata-run|*/strata-perf)
                [ -x "$prog" ] || { echo "$prog not built (strata-perf and strata-run" \
                    "come from branch perf)"; return; } ;;
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
    local sys=$1 n=$2
    local mpi=("$mpirun" -np "$n" --oversubscribe --allow-run-as-root --mca pml ob1)
    case $sys in
    strata) local w; for w in ${strata_cmd//\{n\}/$n}; do printf '%s\n' "$w"; done ;;
    mpi-vader) printf '%s\n' "${mpi[@]}" --mca btl vader,self "$abdir/mpi_allreduce" ;;
    mpi-tcp) printf '%s\n' "${mpi[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo \
        "$abdir/mpi_allreduce" ;;
    gloo-ring) printf '%s\n' "$abdir/gloo_allreduce" --np "$n" -A ring ;;
    gloo-hd) printf '%s\n' "$abdir/gloo_allreduce" --np "$n" -A hd ;;
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

IFS=, read -r -a sys_list <<<"$systems"
IFS=, read -r -a rank_list <<<"$ranks"
declare -A skip_reason=()
for sys in "${sys_list[@]}"; do
    case $sys in strata|mpi-vader|mpi-tcp|gloo-ring|gloo-hd) ;; *) die "unknown system '$sys'" ;; esac
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
        [ "$sys" = strata ] || cmd+=(-T "$timeout_s")
        printf '%q ' "${cmd[@]}" >>"$out/commands.txt"
        echo >>"$out/commands.txt"
        TMPDIR=$scratch timeout --kill-after=10 "$timeout_s" "${cmd[@]}" >>"$file" 2>&1 || rc=$?
        [ "$rc" -eq 0 ] || break
    done
    return "$rc"
}

{
    echo "# bench/ab/run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf '# %q ' "$0" "$@"
    echo
} >"$out/commands.txt"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
failures=0
declare -A failed_runs=()
for ((r = 1; r <= runs; r++)); do
    for n in "${rank_list[@]}"; do
        mkdir -p "$out/raw/n$n"
        for sys in "${sys_list[@]}"; do
            [ -z "${skip_reason[$sys]:-}" ] || continue
            file=$out/raw/n$n/$sys.r$r.txt
            start=$(date +%s)
            if run_one "$sys" "$n" "$file"; then
                echo "run.sh: run $r/$runs, $n ranks, $sys: ok ($(($(date +%s) - start)) s)"
            else
                rc=$?
                echo "run.sh: run $r/$runs, $n ranks, $sys: FAILED (exit $rc after" \
                    "$(($(date +%s) - start)) s); output: $file" >&2
                tail -n 5 "$file" | sed 's/^/    | /' >&2
                failures=$((failures + 1))
                failed_runs[$n/$sys]+="$r "
            fi
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# The tables, one per rank count, and a summary that strings them together.
machine="$(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1))"
machine+=", $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
machine+=", Linux $(uname -r)"
summary=$out/summary.md
{
    echo "# A/B allreduce: $systems"
    echo
    echo "- machine: $machine"
    echo "- load average (1, 5, 15 min) at start: $load_start; at end: $load_end"
    echo "- sweep: $(to_bytes "$minb") B to $maxb B, factor $factor, $warmup warmup calls," \
        "$iters timed calls per size$([ "$split_at" -gt 0 ] && echo \
        " ($split_iters below $split_at B)"), $runs runs, medians"
    echo "- commands: commands.txt; raw outputs: raw/n<ranks>/<system>.r<run>.txt"
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
            files+="${files:+,}$out/raw/n$n/$sys.r$r.txt"
        done
        if [ -z "$files" ]; then
            notes+=(--note "$sys: every run failed (see raw/n$n/)")
            continue
        fi
        [ -z "${failed_runs[$n/$sys]:-}" ] ||
            notes+=(--note "$sys: run(s) ${failed_runs[$n/$sys]}failed and are left out")
        specs+=("$sys=$files")
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
    [ -z "$ref" ] || goals=(--ref strata --goal '*:0:1.0' --goal 'mpi-*:1M:1.5')
    if ! "$here/compare.sh" --title "allreduce, $n ranks on one host" --place "$place" \
        --md "$out/ab-n$n.md" --png "$out/ab-n$n.png" "${goals[@]+"${goals[@]}"}" \
        "${notes[@]+"${notes[@]}"}" "${specs[@]}"; then
        echo "run.sh: $n ranks: compare.sh failed" >&2
        { echo "## $n ranks: compare.sh failed"; echo
          for ((i = 1; i < ${#notes[@]}; i += 2)); do echo "- ${notes[i]}"; done
          echo; } >>"$summary"
        status=1
        continue
    fi
    { cat "$out/ab-n$n.md"; echo; echo "Plot: ab-n$n.png"; echo; } >>"$summary"
done
echo "run.sh: results in $out (summary.md, ab-n<ranks>.md/.png, raw/)"
exit "$status"
