#!/usr/bin/env bash
# Checks Strata's layering and file-size rules (STYLE.md). Prints every
# violation and exits non-zero if there is one.
#   util <- transport <- algos <- coll (collective API), plugin/api (NCCL API)
set -u
cd "$(dirname "$0")/.." || exit 2
bad=0
report() { echo "lint: $*"; bad=1; }

# Only plugin/ may include the NCCL ABI headers, and only plugin/api/ at that.
for f in $(grep -rlE '#include *[<"]nccl/' util algos coll include/strata plugin/transport 2>/dev/null); do
    report "$f includes an NCCL ABI header (only plugin/api may)"
done
# util includes no upper layer.
for f in $(grep -rlE '#include *"(plugin|algos)/' util 2>/dev/null); do
    report "$f (util) includes an upper layer"
done
# transports include no algorithm or plugin-api header.
for f in $(grep -rlE '#include *"(algos|plugin/api)/' plugin/transport 2>/dev/null); do
    report "$f (transport) includes algos/ or plugin/api/"
done
# algos talk only to the transport contract, never to one transport.
for f in $(grep -rlE '#include *"plugin/' algos 2>/dev/null); do
    report "$f (algos) includes plugin/ (use include/strata/transport.h)"
done
# algos and below never reach up into the collective library's API layer.
for f in $(grep -rlE '#include *"coll/' util plugin algos 2>/dev/null); do
    report "$f includes coll/ (the layer above it)"
done
# Files past 800 lines ask to be split.
for f in $(find util plugin algos coll bench tests include -name '*.[ch]' 2>/dev/null); do
    n=$(wc -l <"$f")
    [ "$n" -gt 800 ] && report "$f has $n lines (split past 800)"
done
[ $bad = 0 ] && echo "lint: ok"
exit $bad
