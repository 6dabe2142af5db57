#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A gpushare consumer in Python: frames from gpusharesrc through appsink,
read with numpy where they are (no copy), one line per frame.

    python3 examples/gpushare-consumer.py SOCKET [--frames N] [--timeout MS]

Needs PyGObject and GStreamer's introspection data (python3-gi,
gir1.2-gstreamer-1.0, gir1.2-gst-plugins-base-1.0), numpy
(python3-numpy) and GStreamer's Python overrides (python3-gst-1.0):
without the overrides a mapped buffer comes as a copy of its bytes, and
stats arrays (GstValueArray) cannot be read.

Buffer lifetime: a buffer that gpusharesrc pushes in place is the
producer's slot.  The slot goes back to the producer when the last
reference to the buffer goes, and until then the producer cannot write it
(lossless) or skips this consumer (leaky).  So map, read, unmap, and let
the sample go; keep a copy (numpy's .copy ()) of what must outlive it,
never a view into the mapping.

Prints, per frame: 'frame OFFSET pts=NS mean-y=V' (the mean of the luma
plane, in its own stride), then the src's stats and 'received N frames'.
Waits for the producer as long as --timeout says (gpusharesrc's
connection-timeout), then reads until the end of the stream or N frames.
Exits 0 once it read N frames (or, without --frames, at least one frame
before the end of the stream); otherwise 1, with the reason on stderr: no
producer came, the producer failed or went away, or the stream ended
early.
"""

import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstApp, GstVideo  # noqa: E402

import numpy  # noqa: E402


_told_copy = False


def note_copy():
    global _told_copy
    if not _told_copy:
        print("note: buffers are mapped as copies (install python3-gst-1.0 "
              "to read them in place)", file=sys.stderr)
        _told_copy = True


def mean_luma(sample):
    """The mean of the first plane, read in place."""
    info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
    buf = sample.get_buffer()
    ok, mapinfo = buf.map(Gst.MapFlags.READ)
    if not ok:
        raise RuntimeError("could not map the buffer")
    try:
        # with python3-gst-1.0, mapinfo.data is a memoryview of the slot
        if not isinstance(mapinfo.data, memoryview):
            note_copy()
        data = numpy.frombuffer(mapinfo.data, dtype=numpy.uint8)
        stride = info.stride[0]
        offset = info.offset[0]
        rows = data[offset:offset + stride * info.height]
        plane = rows.reshape(info.height, stride)[:, :info.width]
        value = float(plane.mean())
        # no view into the mapping may outlive the unmap below
        del data, rows, plane
    finally:
        buf.unmap(mapinfo)
    return value


def on_message(msg):
    """gpusharesrc's element messages: its producer connected or lost."""
    s = msg.get_structure()
    if msg.type == Gst.MessageType.ELEMENT and s and \
            s.get_name().startswith("gpushare-"):
        print(f"message {s.get_name()}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("socket", help="the producer's socket-path")
    ap.add_argument("--frames", type=int, default=0,
                    help="stop after N frames (default: until EOS)")
    ap.add_argument("--timeout", type=int, default=10000,
                    help="connection-timeout, ms")
    args = ap.parse_args()

    Gst.init(None)
    pipeline = Gst.parse_launch(
        "gpusharesrc name=src connection-timeout=%d ! "
        "appsink name=sink sync=false max-buffers=2" % args.timeout)
    src = pipeline.get_by_name("src")
    src.set_property("socket-path", args.socket)
    sink = pipeline.get_by_name("sink")
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)

    n = 0
    failure = None
    while failure is None and (args.frames == 0 or n < args.frames):
        # short pulls: the bus is looked at in between, and how long to
        # wait for the producer is gpusharesrc's connection-timeout
        sample = sink.try_pull_sample(Gst.SECOND // 10)
        while True:
            msg = bus.pop()
            if not msg:
                break
            if msg.type == Gst.MessageType.ERROR:
                err, debug = msg.parse_error()
                # the first says why; the rest follow from it
                if failure is None:
                    failure = err.message
            else:
                on_message(msg)
        if failure is not None:
            break
        if sample is None:
            if sink.is_eos():
                if args.frames:
                    failure = (f"the stream ended after {n} of "
                               f"{args.frames} frames")
                elif n == 0:
                    failure = "the stream ended before any frame"
                break
            continue
        buf = sample.get_buffer()
        print(f"frame {buf.offset} pts={buf.pts} "
              f"mean-y={mean_luma(sample):.1f}", flush=True)
        # the sample, and with it the slot, goes back here
        del sample, buf
        n += 1

    stats = src.get_property("stats")
    for field in ("memory-type", "io", "frames-received", "frames-missed",
                  "frames-in-place", "frames-copied"):
        print(f"stats {field}={stats.get_value(field)}")
    pipeline.set_state(Gst.State.NULL)
    print(f"received {n} frames")
    if failure is not None:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
