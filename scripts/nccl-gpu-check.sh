#!/usr/bin/env bash
# nccl-gpu-check.sh: real NCCL with Strata's plugin, on one machine with an NVIDIA GPU.
#
# Two processes share one GPU and act as two nodes: each gets its own NCCL_HOSTID, so NCCL
# sees two hosts with one GPU each and every byte between them goes through the net plugin
# (P2P and SHM need the same host; NCCL >= 2.30 also gets NCCL_MULTI_RANK_GPU_ENABLE=1).
# PyTorch's bundled NCCL is used unless --nccl names a libnccl.so.2 (preloaded).
# Each mode runs allreduce, allgather, reduce-scatter and broadcast on GPU tensors across
# sizes with every result checked (scripts/nccl_gpu_rank.py):
#   stock    NCCL_NET=Socket, no external plugin (the baseline)
#   plain    NCCL_NET_PLUGIN=<our .so> NCCL_NET=Strata, STRATA_TUNER=0 (transport only)
#   collnet  plain + NCCL_COLLNET_ENABLE=1 NCCL_ALGO=allreduce:CollNetChain, and allreduce
#            for every type and op
#   tuner    plain with Strata's tuner on (NCCL finds it in the net .so; STRATA_TUNER=1) and
#            NCCL_COLLNET_ENABLE=1 with no algorithm forced: the tuner prices CollNet Chain as
#            Strata's CollNet runs it and NCCL picks per size
#   tuner-all  tuner with STRATA_TUNER=2: Ring and Tree priced from the net tier's alpha-beta
# and keeps each rank's NCCL_DEBUG=INFO log. The summary quotes the log lines that prove
# our net, CollNet and tuner were loaded and used, and prints busbw per mode next to stock.
#
#   scripts/nccl-gpu-check.sh [--plugin SO] [--nccl LIB] [--python PY] [--modes LIST]
#                             [-b MIN] [-e MAX] [-f FACTOR] [--iters N] [--out DIR]
#                             [--mps auto|on|off] [--timeout S]
#
# Without a GPU it prints "skipped: no GPU" and exits 0 (that is not a pass). Exit 1 when a
# result is wrong, a mode fails, or a proof line is missing; 2 on a usage error.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
plugin=$root/build/lib/libnccl-net-strata.so
nccl_lib=""
py=${PYTHON:-python3}
modes=stock,plain,collnet,tuner,tuner-all
bmin=8
bmax=64M
factor=8
iters=10
out=""
mps=auto
timeout_s=300

die() { echo "nccl-gpu-check: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --plugin) plugin=$2; shift 2 ;;
    --nccl) nccl_lib=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    -b) bmin=$2; shift 2 ;;
    -e) bmax=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mps) mps=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
    esac
done

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "skipped: no GPU"
    exit 0
fi
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    { echo "skipped: no GPU (or PyTorch without CUDA under $py)"; exit 0; }
plugin=$(readlink -f "$plugin") || die "no plugin at $plugin"
[ -f "$plugin" ] || die "no plugin at $plugin (make first)"
if [ -n "$nccl_lib" ]; then
    nccl_lib=$(readlink -f "$nccl_lib")
    [ -f "$nccl_lib" ] || die "no NCCL library at $nccl_lib"
fi
[ -n "$out" ] || out=$root/build/nccl-gpu-check/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || die "cannot create $out"

echo "== machine"
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader
"$py" - <<'EOF'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "nccl", ".".join(str(v) for v in torch.cuda.nccl.version()))
EOF
nccl_ver=$("$py" -c 'import torch; v=torch.cuda.nccl.version(); print(v[0]*10000+v[1]*100+v[2])')
[ -n "$nccl_lib" ] && echo "NCCL from $nccl_lib (LD_PRELOAD)"
echo "plugin $plugin"
echo "  exports: $( (nm -D --defined-only "$plugin" 2>/dev/null || true) | awk '/ nccl/ {print $3}' | tr '\n' ' ')"
echo "  needs:   $( (objdump -p "$plugin" 2>/dev/null || true) | awk '/NEEDED/ {print $2}' | tr '\n' ' ')"

# MPS lets the two processes' kernels run side by side instead of time-slicing the GPU.
mps_dir=""
stop_mps() {
    if [ -n "$mps_dir" ]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe nvidia-cuda-mps-control >/dev/null 2>&1
        sleep 1
        rm -rf "$mps_dir"
    fi
}
trap stop_mps EXIT
if [ "$mps" != off ] && command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    mps_dir=$(mktemp -d)
    mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    if CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log \
        nvidia-cuda-mps-control -d 2>/dev/null; then
        export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
        echo "MPS: started (the two ranks' kernels run concurrently)"
    else
        rm -rf "$mps_dir"; mps_dir=""
        [ "$mps" = on ] && die "MPS requested but nvidia-cuda-mps-control -d failed"
        echo "MPS: could not start; the two ranks time-slice the GPU (slow, still correct)"
    fi
elif [ "$mps" = on ]; then
    die "MPS requested but nvidia-cuda-mps-control is not installed"
else
    echo "MPS: off; the two ranks time-slice the GPU (slow, still correct)"
fi

# run_mode NAME: both ranks with the mode's environment; logs and JSON under $out.
run_mode() {
    local m=$1 store extra=() env_m=() r pids=() rc=0
    store=$out/$m.store
    rm -f "$store"
    env_m=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,TUNING,ENV
           NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0
           STRATA_SOCKET_IFNAME=lo STRATA_DEBUG=INFO)
    [ "$nccl_ver" -ge 23000 ] && env_m+=(NCCL_MULTI_RANK_GPU_ENABLE=1)
    [ -n "$nccl_lib" ] && env_m+=(LD_PRELOAD=$nccl_lib)
    case "$m" in
    stock) env_m+=(NCCL_NET=Socket NCCL_NET_PLUGIN=none NCCL_TUNER_PLUGIN=none) ;;
    plain) env_m+=(NCCL_NET_PLUGIN=$plugin NCCL_NET=Strata STRATA_TUNER=0) ;;
    collnet)
        env_m+=(NCCL_NET_PLUGIN=$plugin NCCL_NET=Strata STRATA_TUNER=0 NCCL_COLLNET_ENABLE=1
                NCCL_ALGO=allreduce:CollNetChain)
        extra=(--types) ;;
    tuner) env_m+=(NCCL_NET_PLUGIN=$plugin NCCL_NET=Strata STRATA_TUNER=1 NCCL_COLLNET_ENABLE=1) ;;
    tuner-all)
        env_m+=(NCCL_NET_PLUGIN=$plugin NCCL_NET=Strata STRATA_TUNER=2 NCCL_COLLNET_ENABLE=1) ;;
    *) echo "unknown mode $m"; return 1 ;;
    esac
    echo "== mode $m: ${env_m[*]}"
    for r in 0 1; do
        # NCCL logs to stdout unless NCCL_DEBUG_FILE says otherwise: keep it apart.
        env "${env_m[@]}" NCCL_DEBUG_FILE="$out/$m.rank$r.log" NCCL_HOSTID=strata-node$r CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} \
            timeout -k 10 "$timeout_s" "$py" "$here/nccl_gpu_rank.py" --rank $r --world 2 \
            --store "$store" --mode "$m" -b "$bmin" -e "$bmax" -f "$factor" --iters "$iters" \
            --json "$out/$m.jsonl" "${extra[@]}" >"$out/$m.rank$r.out" 2>"$out/$m.rank$r.err" &
        pids+=($!)
    done
    for r in 0 1; do
        wait "${pids[$r]}" || rc=1
    done
    cat "$out/$m.rank0.out"
    if [ $rc != 0 ]; then
        echo "mode $m FAILED; last lines of each rank's log:"
        for r in 0 1; do
            echo "-- rank $r"; cat "$out/$m.rank$r.err" "$out/$m.rank$r.log" 2>/dev/null |
                grep -v '^$' | tail -n 15
        done
    fi
    rm -f "$store"
    return $rc
}

# proof MODE PATTERN WHAT: quote the first log line of rank 0 matching PATTERN.
fail=0
proof() {
    local line
    line=$(grep -m1 -E "$2" "$out/$1.rank0.log" 2>/dev/null)
    if [ -n "$line" ]; then
        echo "  [$1] $3: $line"
    else
        echo "  [$1] $3: MISSING (no line matching '$2')"
        fail=1
    fi
}
absent() {
    if grep -q -E "$2" "$out/$1.rank0.log" 2>/dev/null; then
        echo "  [$1] $3: FOUND, should not be: $(grep -m1 -E "$2" "$out/$1.rank0.log")"
        fail=1
    else
        echo "  [$1] $3: absent, as it should be"
    fi
}

IFS=, read -r -a mode_list <<<"$modes"
for m in "${mode_list[@]}"; do
    run_mode "$m" || fail=1
done

echo "== proof from the NCCL_DEBUG=INFO logs (rank 0; all lines in $out)"
for m in "${mode_list[@]}"; do
    case "$m" in
    stock)
        proof stock 'Using network Socket|NET/Socket' "NCCL's own socket transport"
        absent stock 'Strata' "any Strata line" ;;
    plain)
        proof plain 'Loaded net plugin Strata|NET/Plugin.*Strata' "plugin loaded"
        proof plain 'Using network Strata|Assigned NET plugin Strata' "net assigned"
        proof plain 'via NET/Strata' "a channel over our net"
        proof plain 'TUNER/Plugin: Using Strata' "tuner loaded from the net .so"
        proof plain 'Strata tuner: off for comm' "our tuner opting out (STRATA_TUNER=0)" ;;
    collnet)
        proof collnet 'Loaded collnet plugin Strata' "CollNet loaded"
        proof collnet 'COLLNET/Strata|CollNet 0+/0' "a CollNet connection"
        proof collnet 'Algo COLLNET_CHAIN' "an allreduce run as CollNet Chain"
        proof collnet 'Strata.*collnet|collnet.*Strata' "our CollNet's own log" ;;
    tuner|tuner-all)
        proof "$m" 'TUNER/Plugin: Using Strata' "tuner loaded from the net .so"
        proof "$m" 'Strata tuner: comm ' "our tuner active on the communicator"
        proof "$m" 'Strata tuner: AllReduce [0-9]+ B, us' "the costs it hands NCCL (init)"
        proof "$m" 'Strata tuner: AllReduce [0-9]+ B: .*NCCL picks' "a decision it saw"
        [ "$m" = tuner-all ] &&
            proof "$m" 'Strata tuner: AllReduce [0-9]+ B: wrote .*Ring/' "Ring entries rewritten"
        grep -h -E 'Strata tuner: [A-Za-z]+ [0-9]+ B: ' "$out/$m.rank0.log" 2>/dev/null |
            sed -e 's/^.*Strata tuner: /    /' | head -n 40 ;;
    esac
done

echo "== busbw (GB/s) per mode; ratio to stock"
"$py" - "$out" "${mode_list[@]}" <<'EOF'
import json, os, sys
out, modes = sys.argv[1], sys.argv[2:]
data = {}
for m in modes:
    path = os.path.join(out, m + ".jsonl")
    if not os.path.exists(path):
        continue
    for line in open(path):
        r = json.loads(line)
        if "busbw" in r:
            data[(m, r["coll"], r["bytes"])] = r["busbw"]
keys = sorted({(c, b) for (_, c, b) in data})
head = "%-15s %12s" % ("collective", "size(B)") + "".join(" %9s" % m for m in modes)
ratios = [m for m in modes if m != "stock" and "stock" in modes]
head += "".join(" %9s" % (m + "/st") for m in ratios)
print(head)
for c, b in keys:
    row = "%-15s %12d" % (c, b)
    for m in modes:
        v = data.get((m, c, b))
        row += " %9s" % ("%.3f" % v if v is not None else "-")
    for m in ratios:
        v, s = data.get((m, c, b)), data.get(("stock", c, b))
        row += " %9s" % ("%.2f" % (v / s) if v and s else "-")
    print(row)
EOF
echo "logs and JSON: $out"
if [ $fail = 0 ]; then echo "nccl-gpu-check: PASS"; else echo "nccl-gpu-check: FAIL"; fi
exit $fail
