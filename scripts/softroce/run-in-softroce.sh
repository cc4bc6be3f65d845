#!/usr/bin/env bash
# run-in-softroce.sh -- Strata's Soft-RoCE runner: run a command inside a small
# QEMU guest that has a real RDMA verbs stack (Debian's own kernel with
# rdma_rxe), on CI machines whose kernel has no RDMA. `make test-rdma` uses it.
#
#   scripts/softroce/run-in-softroce.sh [--] COMMAND [ARGS...]
#
# The guest is built for Strata's needs only: the veth setup (rxe0 on veth0
# 192.0.2.1, rxe1 on veth1 192.0.2.2, each veth paired with a port of one bridge,
# so that either link goes down alone) or none. How it works:
#   * the kernel package linux-image-amd64 depends on, and busybox-static, are
#     downloaded with apt-get (not installed), extracted and pruned into
#     $SOFTROCE_CACHE (about 200 MB, built once, serialised by a lock file);
#   * a 1.5 MB initramfs (busybox + virtio/9p/overlay modules) mounts the host's
#     / read-only over 9p under a tmpfs overlay and switches into the host's own
#     bash, so every host binary and library runs unchanged in the guest;
#   * stage 2 loads rdma_rxe, turns off IPv6 DAD (the fe80:: GIDs are usable at
#     once), creates the veths, the bridge and the rxe devices, waits until the ports are
#     ACTIVE and the GIDs exist, then runs COMMAND in the host's current
#     directory, which is shared READ-WRITE at the same path (writes elsewhere
#     are discarded with the guest);
#   * COMMAND's stdout and stderr come back over two virtio serial ports, its
#     exit status through a 9p control directory; QEMU runs under timeout, and
#     every host process is tracked by PID and killed on exit, INT and TERM.
# Exit status: COMMAND's; 124 = timed out; 125 = the guest failed before COMMAND.
# Runs as root (apt-get, 9p passthrough). Under TCG, so RDMA runs at tens of MB/s:
# right for correctness, not for speed. Needs both host cores.
#
# GIDs: index 0 = fe80:: link-local, index 1 = IPv4-mapped, both RoCE v2.
# Between rxe0 and rxe1 only index 0 reaches (with IPv4 GIDs, modify-QP-to-RTR
# fails: both addresses are local in one network namespace and 6.1's rxe has no
# netns support); the ib transport picks the link-local pair itself there.
#
# Environment (all optional):
#   SOFTROCE_CACHE    cache directory (kernel, initramfs, per-run dirs). Default /tmp/softroce
#   SOFTROCE_TIMEOUT  seconds before the guest is killed. Default 1800
#   SOFTROCE_MEM      guest memory in MiB. Default 2048
#   SOFTROCE_SMP      guest vCPUs. Default 2 (busy-polling peers need one each)
#   SOFTROCE_NETDEV   "veth" (default) or "none" (load modules, add no rxe device)
#   SOFTROCE_ENV      space-separated names of host variables to pass in
#                     (PATH, LANG, LC_ALL, TERM are always passed)
#   SOFTROCE_RW       extra space-separated host directories to share read-write
#   SOFTROCE_VERBOSE  1: print the guest's console log at the end
#   SOFTROCE_QUIET    1: no "[softroce]" progress lines on stderr
#   SOFTROCE_KEEP     1: keep the per-run directory (console.log, scripts)
#   SOFTROCE_ACCEL    QEMU accelerator. Default tcg (this machine's KVM is PVM-only)
#   SOFTROCE_CPU      QEMU -cpu model. Default max
set -uo pipefail

CACHE=${SOFTROCE_CACHE:-/tmp/softroce}
TIMEOUT=${SOFTROCE_TIMEOUT:-1800}
MEM=${SOFTROCE_MEM:-2048}
SMP=${SOFTROCE_SMP:-2}
NETDEV=${SOFTROCE_NETDEV:-veth}
PASS_ENV="PATH LANG LC_ALL TERM ${SOFTROCE_ENV:-}"
RW_EXTRA=${SOFTROCE_RW:-}
VERBOSE=${SOFTROCE_VERBOSE:-0}
QUIET=${SOFTROCE_QUIET:-0}
KEEP=${SOFTROCE_KEEP:-0}
ACCEL=${SOFTROCE_ACCEL:-tcg}
CPU=${SOFTROCE_CPU:-max}

T0=$(date +%s%N)
say() {
  [ "$QUIET" = 1 ] && return 0
  local t=$(( ($(date +%s%N) - T0) / 100000000 ))
  printf '[softroce %4d.%ds] %s\n' $((t / 10)) $((t % 10)) "$*" >&2
}
die() { echo "[softroce] ERROR: $*" >&2; exit 125; }

[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "must run as root (apt-get, 9p passthrough)"

# ---------------------------------------------------------------- packages
HOST_PKGS="qemu-system-x86 ibverbs-providers ibverbs-utils perftest rdmacm-utils iproute2 kmod cpio"
apt_lists_fresh=0
apt_update() {
  [ $apt_lists_fresh = 1 ] && return 0
  local i
  for i in $(seq 1 60); do
    if apt-get -o DPkg::Lock::Timeout=600 -qq update >"$CACHE/apt-update.log" 2>&1; then
      apt_lists_fresh=1; return 0
    fi
    grep -q 'Could not get lock' "$CACHE/apt-update.log" || break
    sleep 5
  done
  cat "$CACHE/apt-update.log" >&2; die "apt-get update failed"
}
ensure_host_packages() {
  local missing=() p
  for p in $HOST_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "[softroce] apt-get install ${missing[*]}" >&2
  apt_update
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq \
    install --no-install-recommends "${missing[@]}" >"$CACHE/apt-install.log" 2>&1 \
    || { tail -20 "$CACHE/apt-install.log" >&2; die "apt-get install failed"; }
}

# ---------------------------------------------------------------- kernel + busybox-static (downloaded, not installed)
ensure_kernel() {
  KDIR=$CACHE/kernel
  if [ ! -f "$KDIR/.done" ]; then
    say "fetching Debian kernel and busybox-static into $KDIR"
    rm -rf "$KDIR"; mkdir -p "$KDIR/dl" "$KDIR/root" "$KDIR/bb"
    chmod 777 "$KDIR/dl"   # lets apt's _apt user write there (no sandbox warning)
    local kpkg
    kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    if [ -z "$kpkg" ]; then apt_update
      kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}'); fi
    [ -n "$kpkg" ] || die "cannot resolve linux-image-amd64"
    (cd "$KDIR/dl" && apt-get -qq download "$kpkg" busybox-static) >"$KDIR/download.log" 2>&1 \
      || { apt_update; (cd "$KDIR/dl" && apt-get -qq download "$kpkg" busybox-static) >"$KDIR/download.log" 2>&1; } \
      || { cat "$KDIR/download.log" >&2; die "apt-get download failed"; }
    dpkg-deb -x "$KDIR"/dl/linux-image-*.deb "$KDIR/root" || die "dpkg-deb kernel"
    dpkg-deb -x "$KDIR"/dl/busybox-static_*.deb "$KDIR/bb" || die "dpkg-deb busybox"
    rm -f "$KDIR"/dl/*.deb
    local kver; kver=$(ls "$KDIR/root/lib/modules")
    # drop big driver trees a guest without hardware never loads (~200 MB)
    (cd "$KDIR/root/lib/modules/$kver/kernel" && rm -rf sound drivers/gpu drivers/media \
      drivers/iio drivers/hwmon drivers/usb drivers/staging drivers/bluetooth \
      drivers/net/wireless drivers/net/ethernet drivers/infiniband/hw)
    depmod -b "$KDIR/root" "$kver" || die "depmod"
    echo "$kver" > "$KDIR/kver"
    touch "$KDIR/.done"
  fi
  KVER=$(cat "$KDIR/kver")
  VMLINUZ=$KDIR/root/boot/vmlinuz-$KVER
  MODDIR=$KDIR/root/lib/modules
}

# ---------------------------------------------------------------- initramfs (stage 1)
# Stage 1 is busybox: load virtio+9p+overlay, mount the host root (ro 9p) under a
# tmpfs overlay, mount the shares, switch_root into the host's own bash (stage 2).
STAGE1=$(cat <<'EOF'
#!/bin/busybox sh
B=/bin/busybox
fail() { echo "softroce stage1: $*"; echo o > /proc/sysrq-trigger; $B sleep 10; }
$B mount -t proc proc /proc
$B mount -t sysfs sysfs /sys
$B mount -t devtmpfs devtmpfs /dev
for m in $($B cat /mods/order); do $B insmod /mods/$m || echo "insmod $m failed"; done
O=trans=virtio,version=9p2000.L,msize=512000
$B mount -t 9p -o $O,ro,cache=loose hostroot /lower || fail "mount hostroot"
$B mount -t tmpfs -o mode=755 tmpfs /upper
$B mkdir -p /upper/u /upper/w
$B mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot || fail "overlay"
N=/newroot
$B mount -t tmpfs -o mode=755 tmpfs $N/run
$B mkdir -p $N/run/softroce $N/usr/lib/modules
$B mount -t 9p -o $O,cache=none ctl $N/run/softroce || fail "mount ctl"
$B mount -t 9p -o $O,ro,cache=loose kmods $N/usr/lib/modules || fail "mount kmods"
while read -r tag path; do
  [ -n "$tag" ] || continue
  $B mkdir -p "$N$path" && $B mount -t 9p -o $O,cache=mmap "$tag" "$N$path" || fail "mount $tag at $path"
done < $N/run/softroce/shares
$B mount --move /dev $N/dev
$B mount --move /sys $N/sys
$B mount --move /proc $N/proc
exec $B switch_root $N /bin/bash /run/softroce/stage2.sh
fail "switch_root"
EOF
)
BOOT_MODS="virtio_pci 9pnet_virtio 9p overlay virtio_console"
ensure_initrd() {
  local key; key=$(printf '%s\n%s\n%s\n' "$STAGE1" "$KVER" "$BOOT_MODS" | sha256sum | cut -c1-16)
  INITRD=$CACHE/initrd-$key.gz
  [ -f "$INITRD" ] && return 0
  say "building initramfs $INITRD"
  local d; d=$(mktemp -d "$CACHE/ird.XXXXXX")
  mkdir -p "$d"/{bin,mods,proc,sys,dev,lower,upper,newroot}
  cp "$KDIR/bb/bin/busybox" "$d/bin/busybox"
  printf '%s\n' "$STAGE1" > "$d/init"; chmod 755 "$d/init"
  local m p
  for m in $BOOT_MODS; do modprobe -d "$KDIR/root" -S "$KVER" --show-depends "$m"; done \
    | awk '$1=="insmod"{print $2}' | awk '!seen[$0]++' > "$d/mods/paths" || die "modprobe --show-depends"
  while read -r p; do cp "$p" "$d/mods/"; basename "$p" >> "$d/mods/order"; done < "$d/mods/paths"
  rm "$d/mods/paths"
  (cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD.tmp" && mv "$INITRD.tmp" "$INITRD"
  rm -rf "$d"
}

# ---------------------------------------------------------------- per-run files (stage 2)
write_run_files() {
  local cwd=$1; shift
  # the command, quoted, run from the shared current directory
  {
    echo "cd $(printf '%q' "$cwd") || exit 125"
    local v
    for v in $PASS_ENV; do
      [ -n "${!v+x}" ] && echo "export $v=$(printf '%q' "${!v}")"
    done
    printf 'exec'; printf ' %q' "$@"; echo
  } > "$RUN/cmd.sh"
  cat > "$RUN/stage2.sh" <<EOF
#!/bin/bash
# generated by run-in-softroce.sh; runs as PID 1 in the guest, host's bash
NETDEV=$(printf '%q' "$NETDEV")
EOF
  cat >> "$RUN/stage2.sh" <<'EOF'
exec </dev/null
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
up() { cut -d' ' -f1 /proc/uptime; }
off() { sync; echo o > /proc/sysrq-trigger; sleep 30; }
echo "softroce stage2 start at $(up)s"
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ln -sf /proc/self/fd /dev/fd; ln -sf fd/0 /dev/stdin; ln -sf fd/1 /dev/stdout; ln -sf fd/2 /dev/stderr
hostname softroce
ip link set lo up
ulimit -l unlimited
setup_rdma() {
  # no IPv6 duplicate-address detection: link-local addresses (and so the
  # fe80:: GIDs at index 0) are usable at once instead of ~2 s later
  echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad
  echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad
  modprobe rdma_rxe || return 1
  modprobe rdma_ucm; modprobe ib_umad
  case $NETDEV in
    none) return 0 ;;
    veth)
      # veth0 and veth1 each on its own pair, joined by a bridge: a down link
      # takes only its own port down (the two ends of one pair share a carrier,
      # so taking veth1 down would take rxe0's port down too)
      modprobe bridge || return 1
      ip link add br0 type bridge || return 1
      ip link add veth0 type veth peer name veth0b || return 1
      ip link add veth1 type veth peer name veth1b || return 1
      ip link set veth0b master br0; ip link set veth1b master br0
      ip addr add 192.0.2.1/24 dev veth0; ip addr add 192.0.2.2/24 dev veth1
      ip link set br0 up; ip link set veth0b up; ip link set veth1b up
      ip link set veth0 up; ip link set veth1 up
      rdma link add rxe0 type rxe netdev veth0 || return 1
      rdma link add rxe1 type rxe netdev veth1 || return 1 ;;
    *) echo "unknown SOFTROCE_NETDEV=$NETDEV"; return 1 ;;
  esac
  # wait (max 10 s) until every port is ACTIVE, no address is still tentative
  # and every device has its fe80:: GID (index 0)
  local i d
  for i in $(seq 1 100); do
    local ok=1
    grep -L ACTIVE /sys/class/infiniband/*/ports/1/state 2>/dev/null | grep -q . && ok=0
    [ -n "$(ip -6 addr show tentative)" ] && ok=0
    for d in /sys/class/infiniband/*; do
      case "$(cat "$d/ports/1/gids/0" 2>/dev/null)" in fe80:*) ;; *) ok=0 ;; esac
    done
    [ $ok = 1 ] && break
    sleep 0.1
  done
  rdma link show
}
setup_rdma || { echo "softroce: RDMA setup failed"; echo 125 > /run/softroce/rc; off; }
echo "softroce rdma ready at $(up)s"
OUT=/dev/null ERR=/dev/null
for n in /sys/class/virtio-ports/*; do
  case "$(cat "$n/name" 2>/dev/null)" in
    softroce.stdout) OUT=/dev/${n##*/} ;;
    softroce.stderr) ERR=/dev/${n##*/} ;;
  esac
done
bash /run/softroce/cmd.sh >"$OUT" 2>"$ERR"
rc=$?
echo "softroce command exited $rc at $(up)s"
echo $rc > /run/softroce/rc
off
EOF
  chmod 755 "$RUN/stage2.sh"
}

# ---------------------------------------------------------------- main
mkdir -p "$CACHE" || die "mkdir $CACHE"
exec 9>"$CACHE/.lock"          # serialise installs/builds between parallel runs
flock 9
ensure_host_packages
say "packages ok"
ensure_kernel
ensure_initrd
flock -u 9; exec 9>&-
say "kernel $KVER, initramfs ready"

CWD=$(pwd -P)
RUN=$(mktemp -d "$CACHE/run.XXXXXX") || die "mktemp"
write_run_files "$CWD" "$@"
mkfifo "$RUN/out.fifo" "$RUN/err.fifo"

QPID= OPID= EPID=
cleanup() {
  local p
  for p in $QPID $OPID $EPID; do kill "$p" 2>/dev/null; done
  for p in $QPID $OPID $EPID; do wait "$p" 2>/dev/null; done
  [ "$KEEP" = 1 ] || rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 9p shares: host root (ro), kernel modules (ro), control dir, cwd + extras (rw)
SHARES=(
  -fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap"
  -device "virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot"
  -fsdev "local,id=fsmods,path=${MODDIR//,/,,},security_model=none,readonly=on"
  -device "virtio-9p-pci,fsdev=fsmods,mount_tag=kmods"
  -fsdev "local,id=fsctl,path=${RUN//,/,,},security_model=none"
  -device "virtio-9p-pci,fsdev=fsctl,mount_tag=ctl"
)
: > "$RUN/shares"
i=0
for d in "$CWD" $RW_EXTRA; do
  [ "$d" = / ] && continue
  d=$(cd "$d" 2>/dev/null && pwd -P) || die "SOFTROCE_RW: no such directory"
  SHARES+=(-fsdev "local,id=fsrw$i,path=${d//,/,,},security_model=none,multidevs=remap"
           -device "virtio-9p-pci,fsdev=fsrw$i,mount_tag=rw$i")
  echo "rw$i $d" >> "$RUN/shares"
  i=$((i+1))
done

# stdout/stderr of the command travel on two virtio serial ports into FIFOs
cat "$RUN/out.fifo" & OPID=$!
cat "$RUN/err.fifo" >&2 & EPID=$!

say "booting guest (accel=$ACCEL, smp=$SMP, mem=${MEM}M, netdev=$NETDEV)"
timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 \
  -M pc -accel "$ACCEL" -cpu "$CPU" -smp "$SMP" -m "$MEM" \
  -nodefaults -display none -no-reboot -monitor none \
  -serial "file:$RUN/console.log" \
  -kernel "$VMLINUZ" -initrd "$INITRD" \
  -append "console=ttyS0 quiet loglevel=3 panic=-1" \
  "${SHARES[@]}" \
  -device virtio-serial-pci \
  -chardev "file,id=cout,path=$RUN/out.fifo" -device virtserialport,chardev=cout,name=softroce.stdout \
  -chardev "file,id=cerr,path=$RUN/err.fifo" -device virtserialport,chardev=cerr,name=softroce.stderr \
  2>"$RUN/qemu.stderr" &
QPID=$!
wait $QPID; qrc=$?; QPID=
wait $OPID 2>/dev/null; wait $EPID 2>/dev/null; OPID= EPID=

if [ "$VERBOSE" = 1 ]; then
  echo "----- guest console -----" >&2; cat "$RUN/console.log" >&2; echo "-------------------------" >&2
fi
if [ $qrc = 124 ] || [ $qrc = 137 ]; then
  say "TIMEOUT after ${TIMEOUT}s"; tail -20 "$RUN/console.log" >&2; exit 124
fi
if [ ! -s "$RUN/rc" ]; then
  echo "[softroce] guest gave no exit status (qemu rc=$qrc)" >&2
  cat "$RUN/qemu.stderr" >&2; tail -40 "$RUN/console.log" >&2
  exit 125
fi
rc=$(cat "$RUN/rc")
say "guest done, command exit status $rc"
exit "$rc"
