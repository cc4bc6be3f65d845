#!/usr/bin/env bash
# Checks Strata's layering and file-size rules (docs/style.md, docs/architecture.md), that the
# scripts parse, and the real-NCCL check's answer on a machine without a GPU.
# Prints every violation and exits non-zero if there is one.
#
#   util <- transport <- algos <- coll <- tools, bench
#   plugin/ (the NCCL edge) <- transport; its CollNet and tuner also <- algos; never coll
#
# Includes are written from the repository root ("transport/tcp/tcp_wire.h"), so a
# grep per folder sees every dependency.
set -u
cd "$(dirname "$0")/.." || exit 2
bad=0
report() { echo "lint: $*"; bad=1; }
# includes DIRS REGEX: the files under DIRS that include a header matching REGEX.
includes() {
    local re=$1
    shift
    grep -rlE "#include *[<\"]($re)" "$@" 2>/dev/null
}

# Only plugin/ speaks the NCCL ABI; tools/lib/plugin_loader.*, plugin_collnet.* and
# nccl_model.* stand where NCCL stands (the first two dlopen the plugin and call it as NCCL
# does, the third computes NCCL's own cost table for the tuner to be called with).
for f in $(includes 'nccl/' util transport algos coll tools bench include/strata |
           grep -vE '^tools/lib/(plugin_loader|plugin_collnet|nccl_model)\.[ch]$'); do
    report "$f includes an NCCL ABI header (only plugin/ may)"
done
# util is the bottom layer.
for f in $(includes '(transport|algos|coll|plugin|tools|bench)/' util); do
    report "$f (util) includes an upper layer"
done
# Transports know util and each other's shared base only.
for f in $(includes '(algos|coll|plugin|tools|bench)/' transport); do
    report "$f (transport) includes an upper layer"
done
# A transport's private headers stay inside its folder (tests aside).
for t in tcp ucx ib loop; do
    for f in $(includes "transport/$t/" transport util algos coll plugin tools bench | grep -v "^transport/$t/"); do
        case "$f" in plugin/net_state.c|transport/registry.c) continue ;; esac
        grep -qE "#include *\"transport/$t/$t\\.h\"" "$f" &&
            ! grep -qE "#include *\"transport/$t/[a-z_]+_internal\\.h\"" "$f" && continue
        report "$f reaches into transport/$t/ (use its $t.h or transport/transport.h)"
    done
done
# Every transport folder follows one file plan (docs/architecture.md, "Inside a transport"),
# and its calls go one way: <t>_send.c and <t>_recv.c call <t>_conn.c, never the reverse, and
# never each other.
for t in tcp ucx ib loop; do
    d=transport/$t
    [ -d "$d" ] || continue
    for f in $t.h ${t}_internal.h ${t}_ops.c ${t}_listen.c ${t}_conn.c ${t}_send.c ${t}_recv.c \
             ${t}_wire.h; do
        [ -f "$d/$f" ] || report "$d lacks $f (the transport file plan)"
    done
    calls() { grep -nE "\b($2) *\(" "$1" 2>/dev/null | sed "s|^|$1:|"; }
    send_fns="stt_${t}_send_[a-z0-9_]+|stt_${t}_isend"
    recv_fns="stt_${t}_recv_[a-z0-9_]+|stt_${t}_irecv|stt_${t}_iflush"
    for hit in $(calls "$d/${t}_conn.c" "$send_fns|$recv_fns" | cut -d: -f1,2); do
        report "$hit: ${t}_conn.c calls the data path (only ${t}_send.c/${t}_recv.c call conn)"
    done
    for hit in $(calls "$d/${t}_send.c" "$recv_fns" | cut -d: -f1,2); do
        report "$hit: ${t}_send.c calls the receive side"
    done
    for hit in $(calls "$d/${t}_recv.c" "$send_fns" | cut -d: -f1,2); do
        report "$hit: ${t}_recv.c calls the send side"
    done
done
# algos use the transport contract, never one transport.
for f in $(includes 'transport/(tcp|ucx|ib|loop|base)/' algos); do
    report "$f (algos) includes one transport (use transport/transport.h)"
done
for f in $(includes '(coll|plugin|tools|bench)/' algos); do
    report "$f (algos) includes an upper layer"
done
# coll is the collective library; it never reaches the NCCL edge or the tools.
for f in $(includes '(plugin|tools|bench)/' coll); do
    report "$f (coll) includes plugin/, tools/ or bench/"
done
# Only coll/ (and its unit tests) see the communicator's insides.
for f in $(includes 'coll/comm\.h' util transport algos plugin tools bench); do
    report "$f includes coll/comm.h (the communicator's private header)"
done
# plugin/: the ncclNet edge uses transports only; the CollNet and tuner may use algos'
# headers; nothing in plugin/ uses coll/.
for f in $(includes '(coll|tools|bench)/' plugin); do
    report "$f (plugin) includes coll/, tools/ or bench/"
done
for f in $(includes 'algos/' plugin | grep -vE '^plugin/(collnet|tuner)[a-z0-9_]*\.[ch]$'); do
    report "$f (the ncclNet edge) includes algos/ (only plugin/collnet_* and tuner_* may)"
done
# Callers reach a transport through the stt_* wrappers of transport/transport.h, never its
# ops table (transport/ implements the tables; a test of one transport calls its functions
# by name).
ops_members='probe|init|fini|devices|get_props|listen|connect|accept|reg_mr|reg_mr_dmabuf'
ops_members+='|dereg_mr|isend|irecv|iflush|test|close_send|close_recv|close_listen|poll_fds|progress|name'
while IFS= read -r hit; do
    [ -n "$hit" ] && report "$hit: calls through an ops table (use the stt_* wrapper)"
done < <(grep -rnE "(^|[^A-Za-z0-9_])([A-Za-z0-9_]+_)?ops(\[[^]]*\])?(->|\.)($ops_members)\b" \
         --include='*.[ch]' util algos coll plugin tools bench tests | cut -d: -f1,2)
# The installed headers stand alone.
for f in $(includes '(util|transport|algos|coll|plugin|tools|bench)/' include/strata); do
    report "$f (installed header) includes a private header"
done
# ... and compile alone, as C99 with -pedantic and as C++ when a C++ compiler is here.
for h in include/strata/*.h; do
    echo "#include \"${h#include/}\"" | ${CC:-cc} -std=c99 -pedantic -Wall -Wextra -Werror \
        -Iinclude -fsyntax-only -x c - 2>/dev/null || report "$h does not compile alone as C99"
    if command -v "${CXX:-c++}" >/dev/null 2>&1; then
        echo "#include \"${h#include/}\"" | ${CXX:-c++} -std=c++11 -pedantic -Wall -Werror \
            -Iinclude -fsyntax-only -x c++ - 2>/dev/null || report "$h does not compile as C++"
    fi
done
# transport/transport.h is the internal contract; nothing public includes or installs it.
[ -e include/strata/transport.h ] && report "include/strata/transport.h exists (the contract is transport/transport.h, not installed)"
# Files past 800 lines ask to be split.
for f in $(find util transport plugin algos coll tools bench tests include -name '*.[ch]' 2>/dev/null); do
    n=$(wc -l <"$f")
    [ "$n" -gt 800 ] && report "$f has $n lines (split past 800)"
done
# The scripts parse (bash -n; Python through its parser, writing nothing).
for f in $(find scripts bench -name '*.sh' 2>/dev/null); do
    bash -n "$f" 2>/dev/null || report "$f: bash -n fails"
done
for f in $(find scripts bench -name '*.py' 2>/dev/null); do
    python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" \
        2>/dev/null || report "$f does not parse as Python 3"
done
# The real-NCCL check says so where there is no GPU, and exits 0 (this is not a pass).
if ! command -v nvidia-smi >/dev/null 2>&1; then
    out=$(scripts/nccl-gpu-check.sh 2>&1)
    [ $? = 0 ] && [ "$out" = "skipped: no GPU" ] ||
        report "scripts/nccl-gpu-check.sh without a GPU: '$out' (want 'skipped: no GPU', status 0)"
fi
[ $bad = 0 ] && echo "lint: ok"
exit $bad
