#!/usr/bin/env bash
# Installs what Strata needs to build, test and benchmark on Debian 12. Idempotent: with
# every package present it prints so and changes nothing (no root needed). Otherwise it runs
# apt-get as root directly, or through sudo for another user; a user without sudo is told to
# run it as root. Used by the README and .ci/run.
set -euo pipefail
PKGS="build-essential pkg-config libcmocka-dev libibverbs-dev ibverbs-providers ibverbs-utils
librdmacm-dev rdmacm-utils libucx-dev ucx-utils libhwloc-dev openmpi-bin libopenmpi-dev clang
libgloo-dev perftest gnuplot-nox iproute2 procps psmisc qemu-system-x86 kmod cpio clang-format"
missing=()
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    as_root=()
    if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "setup-debian: ${#missing[@]} package(s) missing (${missing[*]}) and this is" \
                "not root and has no sudo: run scripts/setup-debian.sh as root" >&2
            exit 1
        fi
        as_root=(sudo)
    fi
    echo "setup-debian: installing ${missing[*]}${as_root[*]:+ (through sudo)}"
    "${as_root[@]}" apt-get -o DPkg::Lock::Timeout=600 -qq update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq \
        install --no-install-recommends "${missing[@]}"
fi
echo "setup-debian: all packages present"
