#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/check/soak.sh over GPU memory: a live producer whose frames are
# uploaded into its GPU slots, four consumers (fast, slow, killed and
# started again every 2 s, reconnecting) that take CUDA memory over the
# cuda transport; every frame checked, the producer's memory, descriptors
# and GPU memory sampled against their bounds.  SOAK_SECONDS (180).
#
#   gpu-soak.sh GPUSHARE_TEST_PEER
set -u
. "$(dirname "$0")/gpu-skip.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "GStreamer: $(gst-launch-1.0 --version | sed -n 2p)"
exec bash "$(dirname "$0")/../check/soak.sh" "$1" --gpu
