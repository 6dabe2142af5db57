#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Inference results along a chain of three processes in CUDA memory: the
# producer uploads 1080p frames to the GPU and adds 8 to 12 detections and
# a 1080p segmentation mask (GStreamer 1.26+) to each, the relay reads
# them (the frames in place in GPU memory, the masks in place in the side
# memory) and adds tracks, the consumer takes CUDA memory; every hop's
# metas and every picture equal (tests/check/analytics-chain.sh), then the
# same with the frames in CUDA memory into the producer only, then with
# the masks and a tensor of 1000 scores made in CUDA memory too: they
# travel in the GPU slots, past the frames, and reach the relay and the
# consumer in CUDA memory, read in place.
#
#   gpu-analytics-chain.sh PEER
set -u
. "$(dirname "$0")/gpu-skip.sh"
chain=$(dirname "$0")/../check/analytics-chain.sh
CHAIN_PRODUCER_ARGS="--source videotestsrc --gpu-input" \
  CHAIN_CONSUMER_ARGS="--gpu-output" bash "$chain" "$1" 1920 1080 1920x1080 ||
  exit $?
CHAIN_PRODUCER_ARGS="--source videotestsrc --gpu-input" \
  bash "$chain" "$1" 1920 1080 1920x1080 || exit $?
CHAIN_PRODUCER_ARGS="--source videotestsrc --gpu-input --payload-memory cuda" \
  CHAIN_CONSUMER_ARGS="--gpu-output" CHAIN_PAYLOADS=cuda bash "$chain" "$1" 1920 1080 1920x1080 1000
