#!/usr/bin/env bash
# A stand-in for nccl-tests' *_perf binaries, for testing nccl_ab.sh where there is no
# GPU: prints the canned output of the collective named by $0 for the variant the
# environment asks for, as NCCL would behave:
#   NCCL_NET_PLUGIN=none                  -> <coll>.stock.txt (NCCL's own IB)
#   NCCL_NET_PLUGIN=strata NCCL_NET=Strata -> <coll>.strata.txt, if a directory of
#       LD_LIBRARY_PATH holds libnccl-net-strata.so (NCCL's name rule), else NCCL's
#       "Failed to initialize any NET plugin" and exit 1
# FAKE_NCCL_IGNORE_PLUGIN=1 plays an NCCL that ignores the request and assigns IB
# (what nccl_ab.sh must refuse to report); FAKE_NCCL_HIDE_PLUGIN=1 a node where the
# plugin is not on the path; FAKE_NCCL_FAIL=1 a crash.
set -u
data=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
coll=$(basename "$0")
coll=${coll%_perf}
info="fakehost:4242:4242 [0] NCCL INFO"
if [ "${FAKE_NCCL_FAIL:-0}" = 1 ]; then
    echo "fakehost:4242:4242 [0] NCCL WARN simulated failure"
    exit 1
fi
variant=stock
if [ "${NCCL_NET_PLUGIN:-}" = strata ] && [ "${FAKE_NCCL_IGNORE_PLUGIN:-0}" != 1 ]; then
    found=0
    IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
    [ "${FAKE_NCCL_HIDE_PLUGIN:-0}" = 1 ] && dirs=()
    for d in "${dirs[@]+"${dirs[@]}"}"; do
        [ -n "$d" ] && [ -f "$d/libnccl-net-strata.so" ] && found=1
    done
    if [ "$found" = 0 ]; then
        echo "$info NET/Plugin: Could not find: strata libnccl-net-strata.so"
        [ "${NCCL_NET:-}" != Strata ] || {
            echo "fakehost:4242:4242 [0] NCCL WARN Failed to initialize any NET plugin"
            exit 1
        }
    elif [ "${NCCL_NET:-}" = Strata ] && [ "${NCCL_NET_PLUGIN_REF_COUNT:-}" = 1 ]; then
        variant=strata
    fi
fi
cat "$data/$coll.$variant.txt"
