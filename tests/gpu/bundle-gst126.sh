#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The gpu suite against GStreamer 1.26 on a GPU machine that has no
# GStreamer: bundles the runtime of the Debian 13 root that .ci/gst126.sh
# makes (core, base, good's imagefreeze and isomp4, bad's nvcodec,
# videoparsers, shm and unixfd, with every library they need, glibc and its
# loader included) and the gpu suite's programs built in that root, each
# given the bundled loader and an RPATH to the bundled libraries (so the
# host's own tools, nvidia-smi and the MPS daemon, are left alone).
# libcuda and libnvcuvid come from the host.  Needs patchelf.
#
#   bash .ci/gst126.sh 'meson setup build-126 -Dtests=enabled \
#       -Dexamples=enabled && ninja -C build-126'
#   bash tests/gpu/bundle-gst126.sh [BUILD]       -> .gst126/ (about 30 MB)
#
# then, on the GPU machine, with .gst126 and BUILD/tests/plugin carried:
#
#   bash tests/gpu/run-gst126.sh [BUILD]
#
# The same for the newest GStreamer (.ci/gst-newest.sh, Debian sid):
# GPUSHARE_GST126_ROOT=/var/tmp/gpushare-gst-newest GPUSHARE_BUNDLE=.gst-newest
# here, and GPUSHARE_BUNDLE=.gst-newest there.  sid's glibc and gcc are newer
# than the CUDA toolkit takes: build there with GPUSHARE_GST_ROOT_TOOLKIT=no
# (no GPU kernels: gpu_checksum, gpu_streams and the CUDA example are not
# built).
set -eu
root=${GPUSHARE_GST126_ROOT:-/var/tmp/gpushare-gst126}
build=${1:-build-126}
out=$PWD/${GPUSHARE_BUNDLE:-.gst126}
ml=/usr/lib/x86_64-linux-gnu
plugins=$ml/gstreamer-1.0
command -v patchelf > /dev/null || {
  echo "bundle-gst126: patchelf is needed (apt-get install patchelf)" >&2
  exit 1
}
[ -x "$root/usr/bin/gst-launch-1.0" ] || {
  echo "bundle-gst126: no 1.26 root at $root (bash .ci/gst126.sh ...)" >&2
  exit 1
}
rm -rf "$out" "$root/tmp/gpushare-bundle"
mkdir -p "$out/lib" "$out/bin" "$out/plugins" "$root/tmp/gpushare-bundle"
# the executables: GStreamer's tools and the gpu suite's programs
for x in "$root/usr/bin/gst-launch-1.0" "$root/usr/bin/gst-inspect-1.0" \
    "$root$ml/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner"; do
  cp "$x" "$out/bin/"
done
for x in tests/peer/gpushare-test-peer tests/check/test_gstcuda \
    tests/gpu/test_cuda_vmm tests/gpu/test_cuda_sync tests/gpu/test_cuda_faults \
    tests/gpu/test_cuda_settle tests/gpu/test_cuda_limits tests/gpu/test_cuda_stalls \
    tests/gpu/test_gpu_checksum tests/gpu/test_gpu_streams \
    tests/gpu/test_gpu_cycles tests/gpu/test_gpu_restarts \
    tests/gpu/test_gpu_relink tests/gpu/test_gpu_legacy \
    tests/gpu/test_cuda_context tests/gpu/gpushare-cuda-app examples/gpushare-bench \
    tests/gpu/gpushare-copy-bench tests/gpu/gpushare-wake-bench \
    examples/gpushare-demo gst/inspect/gpushare-inspect; do
  [ -x "$build/$x" ] && cp "$build/$x" "$out/bin/"
done
for p in coreelements videotestsrc videoconvertscale app imagefreeze isomp4 \
    videoparsersbad nvcodec shm unixfd debug; do
  [ -f "$root$plugins/libgst$p.so" ] && cp "$root$plugins/libgst$p.so" \
    "$out/plugins/"
done
# every library any of them needs, resolved inside the root
cp "$out"/bin/* "$out"/plugins/* "$build"/tests/plugin/libgstgpushare.so \
  "$root/tmp/gpushare-bundle/"
libs=$(chroot "$root" bash -c 'for f in /tmp/gpushare-bundle/*; do ldd "$f"; done' \
  | awk '/=>/ {print $3} /ld-linux/ {print $1}' | sort -u)
for l in $libs; do
  [ -f "$root$l" ] && cp -L "$root$l" "$out/lib/"
done
# opened at run time, not linked
cp -L "$root$ml/libgstcuda-1.0.so.0" "$out/lib/"
rm -rf "$root/tmp/gpushare-bundle"
for x in "$out"/bin/*; do
  patchelf --set-interpreter "$out/lib/ld-linux-x86-64.so.2" --force-rpath \
    --set-rpath "$out/lib" "$x"
done
cat > "$out/env.sh" <<ENV
export GST_PLUGIN_SYSTEM_PATH_1_0=$out/plugins
export GST_PLUGIN_SCANNER_1_0=$out/bin/gst-plugin-scanner
export PATH=$out/bin:\$PATH
ENV
du -sh "$out"
