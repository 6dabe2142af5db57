#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs a command against the GStreamer of a Debian release, in a root made
# from Debian's own packages (debootstrap, a few minutes, once per machine),
# with this project bind-mounted at its own path (so that a build directory
# made in the root names the same files outside it) and the CUDA toolkit at
# /usr/local/cuda when this machine has it.  Needs root.
#
#   bash .ci/gst-root.sh DIST 'meson setup build-x && ninja -C build-x'
#
# DIST: trixie (Debian 13, GStreamer 1.26: .ci/gst126.sh) or sid (the
# newest GStreamer Debian serves: .ci/gst-newest.sh).  GPUSHARE_GST_ROOT
# says where the root lives (default /var/tmp/gpushare-DIST); it is reused
# while its packages are there.  GPUSHARE_GST_ROOT_TOOLKIT=no leaves the CUDA
# toolkit out (sid's gcc is newer than the toolkit's nvcc takes); so does a
# toolkit whose nvcc fails to build a kernel in the root.
set -u
dist=$1
root=${GPUSHARE_GST_ROOT:-/var/tmp/gpushare-$dist}
project=$(cd "$(dirname "$0")/.." && pwd)
cmd=$2
# sid's Release file may be older than its validity where the mirror is a
# snapshot
apt=(apt-get -o Acquire::Check-Valid-Until=false)

# g++: nvcc builds the gpu suite's kernel with it
packages="meson ninja-build gcc g++ pkg-config libglib2.0-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  libgstreamer-plugins-bad1.0-dev gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad python3-gi python3-gst-1.0 gir1.2-gstreamer-1.0
  gir1.2-gst-plugins-base-1.0 python3-numpy python3-yaml python3-dev
  python-gi-dev libdlpack-dev"

# the packages installed, once: a marker holds the list they came from
marker=$root/var/lib/gpushare-packages
if [ ! -f "$marker" ] || [ "$(cat "$marker")" != "$(echo $packages)" ]; then
  command -v debootstrap > /dev/null || \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap \
    > /dev/null || { echo "gst-root: cannot install debootstrap" >&2; exit 1; }
  if [ ! -x "$root/usr/bin/apt-get" ]; then
    debootstrap --variant=minbase "$dist" "$root" \
      http://deb.debian.org/debian > /dev/null || {
      echo "gst-root: debootstrap of Debian $dist failed" >&2; exit 1; }
  fi
  chroot "$root" bash -c "${apt[*]} update -qq && \
    DEBIAN_FRONTEND=noninteractive ${apt[*]} install -y -qq \
    --no-install-recommends $(echo $packages)" > /dev/null || {
    echo "gst-root: installing GStreamer in the $dist root failed" >&2; exit 1; }
  echo $packages > "$marker"
fi

mkdir -p "$root$project" "$root/usr/local/cuda"
mounts=()
mount_bind () {
  mount --bind "$1" "$2" && mounts+=("$2")
}
# the toolkit stays only where its nvcc builds a kernel with the root's
# compiler and C library (an nvcc older than them fails in their headers)
toolkit_probe () {
  local nvcc=/usr/local/cuda/bin/nvcc
  if ! chroot "$root" bash -c "d=\$(mktemp -d) &&
      echo '__global__ void k (int *p) { *p = 1; }' > \$d/k.cu &&
      $nvcc -ptx -arch=compute_80 -o \$d/k.ptx \$d/k.cu > /dev/null 2>&1;
      r=\$?; rm -rf \$d; exit \$r"; then
    echo "gst-root ($dist): the CUDA toolkit's nvcc ($($nvcc --version |
      sed -n 's/.*\(release [0-9.]*\).*/\1/p')) does not build with this" \
      "root's compiler: left out"
    umount "$root/usr/local/cuda" && unset 'mounts[${#mounts[@]}-1]'
  fi
}
mount_bind /proc "$root/proc" && mount_bind /dev "$root/dev" \
  && mount_bind "$project" "$root$project" || {
  echo "gst-root: cannot bind-mount into the root" >&2; rc=1; }
if [ -z "${rc:-}" ]; then
  [ -d /usr/local/cuda/include ] && [ "${GPUSHARE_GST_ROOT_TOOLKIT:-yes}" = yes ] && \
    mount_bind /usr/local/cuda "$root/usr/local/cuda" && toolkit_probe
  echo "gst-root ($dist): $(chroot "$root" gst-launch-1.0 --version | sed -n 2p)"
  chroot "$root" bash -c "cd '$project' && $cmd"
  rc=$?
fi
for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
  umount "${mounts[$i]}"
done
exit "$rc"
