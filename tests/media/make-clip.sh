#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# make-clip.sh: make the H.264 clips the decode tests feed through
# gpushare: tests/media/clip-h264.mp4 and tests/media/clip-h264-1080p.mp4.
#
#   tests/media/make-clip.sh [OUTPUT [WIDTH HEIGHT FRAMES QUANTIZER]]
#   tests/media/make-clip.sh tests/media/clip-h264-1080p.mp4 1920 1080 300 48
#
# What it makes by default (next to this script): 60 frames (2 s) of
# 1280x720 at 30 fps (quantizer 26), H.264 High profile,
# 8-bit 4:2:0, in MP4.  A moving zone plate (videotestsrc pattern=zone-plate
# kt=1), so that every frame differs and carries texture.  GOP of 30 with two
# B-frames between references (b-adapt=false: a fixed I B B P pattern), so
# that decode order is not display order and PTS != DTS is exercised all
# the way through a demuxer, a parser and a decoder.  About 320 KB.
#
# On the GPU machine the decode test runs this clip through nvh264dec
# (NVDEC).  NVDEC there refuses 10-bit and 4:4:4 H.264, which is what
# x264enc picks when given other input: hence format=I420 in front of the
# encoder and profile=high behind it.
#
# Deterministic: one encoder thread and a constant quantizer, no rate
# control that depends on timing; mp4mux stamps the wall clock into the
# mvhd, tkhd and mdhd boxes, so those times are set to zero afterwards
# (with python3, when it is there).  The same x264 build gives the same
# bytes.
#
# Needs gst-launch-1.0 with videotestsrc (gstreamer1.0-plugins-base),
# x264enc (gstreamer1.0-plugins-ugly), h264parse (gstreamer1.0-plugins-bad),
# mp4mux and qtdemux (gstreamer1.0-plugins-good).  The check at the end
# decodes with avdec_h264 (gstreamer1.0-libav) if it is installed, and
# otherwise only demuxes and parses.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/clip-h264.mp4"}
width=${2:-1280}
height=${3:-720}
frames=${4:-60}
quantizer=${5:-26}

for e in videotestsrc x264enc h264parse mp4mux qtdemux; do
  if ! gst-inspect-1.0 --exists "$e"; then
    echo "make-clip: GStreamer element $e is missing" >&2
    case $e in
      x264enc) echo "  apt-get install gstreamer1.0-plugins-ugly" >&2 ;;
      h264parse) echo "  apt-get install gstreamer1.0-plugins-bad" >&2 ;;
      *) echo "  apt-get install gstreamer1.0-plugins-good" >&2 ;;
    esac
    exit 1
  fi
done

tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp"' EXIT

gst-launch-1.0 -q \
  videotestsrc pattern=zone-plate kx2=20 ky2=20 kt=1 num-buffers=$frames ! \
  video/x-raw,format=I420,width=$width,height=$height,framerate=30/1 ! \
  x264enc threads=1 key-int-max=30 bframes=2 b-adapt=false \
    pass=quant quantizer=$quantizer ! \
  video/x-h264,profile=high ! \
  h264parse ! mp4mux ! filesink location="$tmp"

# zero the creation and modification times mp4mux took from the clock
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp" <<'EOF'
import struct
import sys

CONTAINERS = {b"moov", b"trak", b"mdia"}
TIMED = {b"mvhd", b"tkhd", b"mdhd"}

with open(sys.argv[1], "r+b") as f:
    data = bytearray(f.read())

    def walk(start, end):
        pos = start
        while pos + 8 <= end:
            size, kind = struct.unpack(">I4s", data[pos:pos + 8])
            head = 8
            if size == 1:
                size = struct.unpack(">Q", data[pos + 8:pos + 16])[0]
                head = 16
            elif size == 0:
                size = end - pos
            if size < head or pos + size > end:
                raise SystemExit("make-clip: malformed box in the MP4")
            if kind in CONTAINERS:
                walk(pos + head, pos + size)
            elif kind in TIMED:
                body = pos + head
                width = 8 if data[body] == 1 else 4
                data[body + 4:body + 4 + 2 * width] = bytes(2 * width)
            pos += size

    walk(0, len(data))
    f.seek(0)
    f.write(data)
EOF
else
  echo "make-clip: no python3, the clip keeps mp4mux's time stamps" >&2
fi

# Check: every frame there, decode order differs from display order (some
# PTS goes backwards after qtdemux), and it decodes or at least parses.
pts_back=$(gst-launch-1.0 -v filesrc location="$tmp" ! qtdemux ! \
  identity silent=false ! fakesink 2>&1 | \
  sed -n 's/.*chain.*pts: \([0-9:.]*\),.*/\1/p' | \
  awk -F: '{ t = $1 * 3600 + $2 * 60 + $3; if (NR > 1 && t < last) n++;
             last = t } END { print n + 0 }')
if [ "$pts_back" -eq 0 ]; then
  echo "make-clip: no B-frames in the clip (PTS never goes back)" >&2
  exit 1
fi

if gst-inspect-1.0 --exists avdec_h264; then
  check="avdec_h264 ! video/x-raw,format=I420,width=$width,height=$height"
else
  echo "make-clip: no avdec_h264 (gstreamer1.0-libav): parsing only" >&2
  check="video/x-h264,profile=high,stream-format=avc"
fi
n=$(gst-launch-1.0 -v filesrc location="$tmp" ! qtdemux ! h264parse ! \
  $check ! identity silent=false ! fakesink 2>&1 | grep -c 'chain') || true
if [ "$n" -ne $frames ]; then
  echo "make-clip: $n frames came out of the check, not $frames" >&2
  exit 1
fi

chmod 0644 "$tmp"
mv -f "$tmp" "$out"
trap - EXIT
echo "make-clip: $out: $(wc -c <"$out") bytes, $frames frames," \
  "$pts_back of them with a PTS earlier than the frame before (B-frames)"
if command -v gst-discoverer-1.0 >/dev/null 2>&1; then
  gst-discoverer-1.0 "$out" | sed -n '/Topology/,$p'
fi
