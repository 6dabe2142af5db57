#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The gpu suite against GStreamer 1.26 on the GPU machine, from the bundle
# that tests/gpu/bundle-gst126.sh made (.gst126/) and the test copy of the
# plugin built in the 1.26 root (BUILD/tests/plugin).  One line per
# program as meson test prints it; each program's output in LOGDIR.
#
#   bash tests/gpu/run-gst126.sh [BUILD [LOGDIR [TEST...]]]
set -u
cd "$(dirname "$0")/../.."
build=${1:-build-126}
logs=${2:-/tmp/gpushare-gst126-logs}
shift $(($# > 2 ? 2 : $#))
b=$PWD/${GPUSHARE_BUNDLE:-.gst126}
. "$b/env.sh"
mkdir -p "$logs"
export GST_PLUGIN_PATH_1_0=$PWD/$build/tests/plugin
export GST_DEBUG='*:1,gpushare*:2' GST_DEBUG_NO_COLOR=1
# built with the CUDA toolkit only
[ -x "$b/bin/gpushare-cuda-app" ] && export GPUSHARE_CUDA_APP=$b/bin/gpushare-cuda-app
clip=$PWD/tests/media/clip-h264.mp4
# name, timeout (s), command
tests=(
  "gstcuda 60 $b/bin/test_gstcuda"
  "cuda_vmm 300 $b/bin/test_cuda_vmm"
  "cuda_sync 600 $b/bin/test_cuda_sync"
  "cuda_faults 600 $b/bin/test_cuda_faults"
  "cuda_settle 120 $b/bin/test_cuda_settle"
  "cuda_limits 60 $b/bin/test_cuda_limits"
  "cuda_stalls 120 $b/bin/test_cuda_stalls"
  "gpu_checksum 600 $b/bin/test_gpu_checksum"
  "gpu_streams 300 $b/bin/test_gpu_streams"
  "gpu_cycles 600 $b/bin/test_gpu_cycles"
  "gpu_restarts 600 $b/bin/test_gpu_restarts"
  "gpu_relink 600 $b/bin/test_gpu_relink"
  "gpu_legacy 600 $b/bin/test_gpu_legacy"
  "cuda_context 120 $b/bin/test_cuda_context $clip"
  "gpu_transfer 600 bash tests/gpu/gpu-transfer.sh $b/bin/gpushare-test-peer"
  "gpu_peer 600 bash tests/gpu/gpu-peer.sh $b/bin/gpushare-test-peer"
  "gpu_stalls 300 bash tests/gpu/gpu-stalls.sh $b/bin/gpushare-test-peer"
  "gpu_containers 600 bash tests/gpu/gpu-containers.sh $b/bin/gpushare-test-peer"
  "gpu_live_consumers 600 bash tests/gpu/gpu-live-consumers.sh $b/bin/gpushare-inspect"
  "gpu_no_context 120 bash tests/gpu/gpu-no-context.sh"
  "gpu_analytics_chain 240 bash tests/gpu/gpu-analytics-chain.sh $b/bin/gpushare-test-peer"
  "gpu_soak 400 bash tests/gpu/gpu-soak.sh $b/bin/gpushare-test-peer"
)
echo "GStreamer: $(gst-launch-1.0 --version | sed -n 2p)"
failed=0
for t in "${tests[@]}"; do
  read -r name timeout cmd <<< "$t"
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then
    continue
  fi
  start=$(date +%s%N)
  GST_REGISTRY_1_0=/tmp/gpushare-gst126-$name.bin GPUSHARE_TEST_PEER=$b/bin/gpushare-test-peer \
    timeout "$timeout" $cmd > "$logs/$name.log" 2>&1
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  case $rc in
    0) res=OK ;;
    77) res=SKIP ;;
    124) res=TIMEOUT; failed=$((failed + 1)) ;;
    *) res="FAIL (exit $rc)"; failed=$((failed + 1)) ;;
  esac
  printf "%-14s %-16s %6d.%03ds\n" "$name" "$res" $((ms / 1000)) $((ms % 1000))
done
echo "$failed failed"
[ $failed -eq 0 ]
