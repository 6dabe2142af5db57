#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what building gpushare, running it and running its tests need on
# Debian 12 (the README's two commands).  With --dev, also what developing
# it needs beyond that (.ci/run): clang and libFuzzer for the fuzzers,
# valgrind, GNU indent, and what builds and checks the Debian package.
#
# With --torch, only Debian's PyTorch (CPU build): the Python module's
# tests read frames through torch.from_dlpack where it is installed
# (.ci/run installs it meanwhile the soak runs).
#
#   bash .ci/install-deps.sh [--dev | --torch]
set -euo pipefail
# building the plugin, and the GStreamer it runs in
pkgs=(meson ninja-build gcc pkg-config
  libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base
  # the tests' and the examples' elements; nvcodec's CUDA elements and
  # GStreamer's CUDA library (the GPU path on the pads) are in -bad
  gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  # the Python examples: PyGObject, GStreamer's introspection data and
  # Python overrides (buffers mapped in place, stats arrays), numpy
  python3-gi python3-gst-1.0 gir1.2-gstreamer-1.0
  gir1.2-gst-plugins-base-1.0 python3-numpy
  # the Python module gpushare (ext/python): Python's, PyGObject's and
  # DLPack's headers
  python3-dev python-gi-dev libdlpack-dev
  python3-yaml  # the container examples' check
  gnuplot-nox)  # gpushare-bench --plot
if [ "${1:-}" = --torch ]; then
  pkgs=(python3-torch)
elif [ "${1:-}" = --dev ]; then
  pkgs+=(clang libclang-rt-dev  # the codec fuzzer: libFuzzer is in libclang-rt
    valgrind
    indent  # GStreamer's indent style (tests/indent.sh)
    build-essential debhelper lintian dpkg-dev git dh-python  # the Debian packages (debian/)
    debootstrap)  # the GStreamer 1.26 and newest roots (.ci/gst-root.sh)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  # another install (a root's) may hold the lock meanwhile: wait for it
  apt=(apt-get -o DPkg::Lock::Timeout=600)
  $SUDO "${apt[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO "${apt[@]}" install -y -qq \
    --no-install-recommends "${missing[@]}"
fi
