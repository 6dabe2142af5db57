#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/check/live-consumers.sh over GPU memory: the live camera's frames
# uploaded into the sink's GPU slots, consumers that ask for CUDA memory
# (in place from GStreamer 1.24 on, a device copy on 1.22), and the K
# streams row with 32 streams in one process read by 4 consumer processes.
#
#   gpu-live-consumers.sh GPUSHARE_INSPECT
set -u
. "$(dirname "$0")/gpu-skip.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "GStreamer: $(gst-launch-1.0 --version | sed -n 2p)"
LIVE_STREAMS=${LIVE_STREAMS:-32} exec bash \
  "$(dirname "$0")/../check/live-consumers.sh" "$1" --gpu
