#!/usr/bin/env bash
# The build follows the machine: make looks for libibverbs and ucx on every run and
# rebuilds when the answer changes. In a scratch build directory:
#   1. with libibverbs.pc and ucx.pc hidden from pkg-config (a search path holding every
#      other .pc file), `make lib` builds tcp and loop only and its last line says so;
#   2. with them visible again (the setup script has run), `make lib` rebuilds: the
#      registry now holds the ib and ucx transports, and the last line names them;
#   3. a third `make lib` compiles nothing and leaves the configuration header alone.
# Needs libibverbs-dev and libucx-dev installed (it skips otherwise). ~1 minute on 2 cores.
#
#   MAKE=make tests/build_config.sh     (what `make test-config` runs)
set -u
cd "$(dirname "$0")/.." || exit 2
MAKE=${MAKE:-make}
for p in libibverbs ucx; do
    pkg-config --exists $p || { echo "build-config: skipped ($p not installed)"; exit 0; }
done
tmp=$(mktemp -d /tmp/strata-config.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
build=$tmp/build
bad=0
fail() { echo "build-config: $*"; bad=1; }

# A pkg-config search path with every .pc file but libibverbs' and ucx's.
mkdir "$tmp/pc"
IFS=: read -r -a dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for d in "${dirs[@]}"; do
    for pc in "$d"/*.pc; do
        [ -e "$pc" ] || continue
        case $(basename "$pc") in libibverbs.pc|ucx.pc) continue ;; esac
        [ -e "$tmp/pc/$(basename "$pc")" ] || ln -s "$pc" "$tmp/pc/"
    done
done

# mk NAME [VAR=VALUE...]: `make lib` in the scratch build; output in $tmp/NAME.log
mk() {
    local name=$1
    shift
    env "$@" $MAKE --no-print-directory -j2 lib BUILD="$build" >"$tmp/$name.log" 2>&1 ||
        { cat "$tmp/$name.log"; fail "$name: make failed"; return 1; }
}
has_ib() {   # the registry object refers to the ib transport's ops table
    nm "$build/obj/transport/registry.o" | grep -q ' U stt_ib_ops$'
}
config=$build/gen/strata_config.h

mk before-setup PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$tmp/pc" || exit 1
grep -q '"tcp loop"' "$config" || fail "without the packages: $(grep TRANSPORTS "$config")"
tail -n 1 "$tmp/before-setup.log" | grep -q 'transports tcp loop (not built: ib needs libibverbs-dev' ||
    fail "without the packages, the last line is: $(tail -n 1 "$tmp/before-setup.log")"
has_ib && fail "without libibverbs, the registry still has ib"

mk after-setup || exit 1
grep -q '"ib ucx tcp loop"' "$config" || fail "with the packages: $(grep TRANSPORTS "$config")"
grep -q '  CONFIG ' "$tmp/after-setup.log" || fail "the configuration header was not rewritten"
grep -q '  CC      transport/registry.c' "$tmp/after-setup.log" || fail "registry.c was not rebuilt"
grep -q '  CC      transport/ib/' "$tmp/after-setup.log" || fail "the ib transport was not built"
has_ib || fail "with libibverbs, the registry has no ib"
tail -n 1 "$tmp/after-setup.log" | grep -q 'transports ib ucx tcp loop;' ||
    fail "with the packages, the last line is: $(tail -n 1 "$tmp/after-setup.log")"

stamp=$(stat -c %Y.%y "$config")
mk again || exit 1
grep -qE '  (CC|LD|AR|CONFIG) ' "$tmp/again.log" && fail "a make with nothing new rebuilt: $(grep -E '  (CC|LD|AR|CONFIG) ' "$tmp/again.log" | head -3)"
[ "$(stat -c %Y.%y "$config")" = "$stamp" ] || fail "a make with nothing new rewrote $config"

[ $bad = 0 ] && echo "build-config: ok (tcp loop -> ib ucx tcp loop after the packages appear, rebuilt; then nothing to do)"
exit $bad
