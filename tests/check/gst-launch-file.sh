#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Two gst-launch-1.0 processes: a producer of N 1080p NV12 frames into
# gpusharesink, and a consumer writing what gpusharesrc gives it to a file.
# The file must be byte for byte what the producer's source makes.
set -euo pipefail
N=${GPUSHARE_FRAMES:-1000}
caps="video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1"
dir=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

gst-launch-1.0 -q gpusharesrc socket-path="$dir/sock" connection-timeout=30000 \
  ! filesink location="$dir/received.raw" &
consumer=$!
gst-launch-1.0 -q videotestsrc num-buffers="$N" pattern=ball ! "$caps" \
  ! gpusharesink socket-path="$dir/sock" wait-for-connection=true
wait "$consumer"

# the reference: the same deterministic source, straight into a hash
want=$(gst-launch-1.0 -q videotestsrc num-buffers="$N" pattern=ball ! "$caps" \
  ! fdsink fd=1 | sha256sum | cut -d' ' -f1)
got=$(sha256sum < "$dir/received.raw" | cut -d' ' -f1)
size=$(stat -c %s "$dir/received.raw")
echo "frames=$N bytes=$size expected=$((N * 3110400))"
echo "want=$want"
echo "got =$got"
[ "$size" -eq $((N * 3110400)) ]
[ "$want" = "$got" ]
echo "received file identical to what the producer sent"
