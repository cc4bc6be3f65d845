#!/usr/bin/env bash
# make install into a temporary prefix and use the result as a user would: the files are
# where strata.pc says, transport/transport.h and the internal archive are not installed,
# tests/functional/test_libstrata.c builds from the installed headers with
# `pkg-config --cflags --libs strata` and runs (libstrata.so), and builds again against
# libstrata.a with `pkg-config --static` and runs. Leaves nothing behind.
#
#   BUILD=build MAKE=make CC=cc tests/install.sh     (what `make test-install` runs)
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
CC=${CC:-cc}
prefix=$(mktemp -d /tmp/strata-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
bad=0
fail() { echo "install: $*"; bad=1; }

$MAKE --no-print-directory -s install BUILD="$BUILD" PREFIX="$prefix" >"$prefix.log" 2>&1 ||
    { cat "$prefix.log"; rm -f "$prefix.log"; echo "install: make install failed"; exit 1; }
rm -f "$prefix.log"

lib=$prefix/lib
version=$(sed -n 's/^Version: //p' "$lib/pkgconfig/strata.pc")
major=${version%%.*}
for f in lib/libnccl-net-strata.so lib/libstrata.so.$version lib/libstrata.a \
    include/strata/strata.h include/strata/status.h include/strata/types.h \
    lib/pkgconfig/strata.pc bin/strata-params bin/strata-doctor; do
    [ -f "$prefix/$f" ] || fail "$f is missing"
done
[ "$(readlink "$lib/libstrata.so.$major")" = "libstrata.so.$version" ] ||
    fail "libstrata.so.$major does not point at libstrata.so.$version"
[ "$(readlink "$lib/libstrata.so")" = "libstrata.so.$major" ] ||
    fail "libstrata.so does not point at libstrata.so.$major"
[ "$(readlink "$lib/libnccl-net.so")" = "libnccl-net-strata.so" ] ||
    fail "libnccl-net.so does not point at the plugin"
for f in include/strata/transport.h include/transport.h lib/libstrata_internal.a; do
    [ -e "$prefix/$f" ] && fail "$f is installed (internal)"
done

export PKG_CONFIG_PATH=$lib/pkgconfig
cflags=$(pkg-config --cflags strata cmocka) || fail "pkg-config --cflags strata"
libs=$(pkg-config --libs strata cmocka) || fail "pkg-config --libs strata"
# The static link names the archive; the private libraries come from --static.
static_libs=$(pkg-config --static --libs-only-l strata | sed 's/\(^\| \)-lstrata\b//')
src=tests/functional/test_libstrata.c
run() {   # NAME BINARY: runs a build of the test; it prints cmocka's summary
    echo "-- $1"
    LD_LIBRARY_PATH=$lib timeout --kill-after=10 300 "$2" || fail "$1: the program failed"
}
if [ $bad = 0 ]; then
    $CC -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -DLIBDIR="\"$lib\"" $cflags \
        -o "$prefix/user_shared" $src $libs -pthread || fail "build against libstrata.so"
    LD_LIBRARY_PATH=$lib ldd "$prefix/user_shared" | grep -q "$lib/libstrata.so.$major" ||
        fail "the program does not load $lib/libstrata.so.$major"
    run "linked against libstrata.so ($libs)" "$prefix/user_shared"
    $CC -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -DLIBDIR="\"$lib\"" $cflags \
        -o "$prefix/user_static" $src "$lib/libstrata.a" $static_libs \
        $(pkg-config --libs cmocka) -pthread || fail "build against libstrata.a"
    LD_LIBRARY_PATH=$lib ldd "$prefix/user_static" | grep -q libstrata && fail "the static program loads libstrata.so"
    run "linked against libstrata.a ($static_libs)" "$prefix/user_static"
fi
[ $bad = 0 ] && echo "install: ok (make install PREFIX=..., strata.pc, libstrata.so and libstrata.a)"
exit $bad
