#!/usr/bin/env bash
# Installs what Strata needs to build, test and benchmark on Debian 12.
# Idempotent; run as root (or with sudo). Used by the README and .ci/run.
set -euo pipefail
PKGS="build-essential pkg-config libcmocka-dev libibverbs-dev ibverbs-providers ibverbs-utils
librdmacm-dev rdmacm-utils libucx-dev ucx-utils libhwloc-dev openmpi-bin libopenmpi-dev clang
libgloo-dev perftest gnuplot-nox iproute2 procps psmisc qemu-system-x86 kmod cpio"
missing=()
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get -o DPkg::Lock::Timeout=600 -qq update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 -y -qq \
        install --no-install-recommends "${missing[@]}"
fi
echo "setup-debian: all packages present"
