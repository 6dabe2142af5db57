#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the Python module gpushare costs a frame: a producer process
(gst-launch-1.0, videotestsrc into gpusharesink, lossless) and
gpusharesrc ! appsink here, at full speed; for each frame, the time from
the sample in hand to an array of every plane (gpushare.Frame, its planes,
and numpy.from_dlpack or torch.from_dlpack on each, or only the
__cuda_array_interface__ dicts and DLPack capsules of a GPU frame), and
the process's CPU time a frame over the whole run.

    PYTHONPATH=BUILD/ext/python python3 examples/gpushare-tensor-bench.py \\
        [--frames N] [--size WxH] [--format NV12] [--to numpy|torch|capsule]
        [--gpu]

--gpu asks for video/x-raw(memory:GpuShareCUDA) (the producer uploads with
cudaupload): a GPU and the nvcodec plugin in both processes.  Prints one
line: frames, p50 and p99 of the arrays' time (us), and CPU us a frame.
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import Gst, GstApp  # noqa: E402,F401

import gpushare  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--format", default="NV12")
    ap.add_argument("--to", choices=["numpy", "torch", "capsule"],
                    default="numpy")
    ap.add_argument("--gpu", action="store_true")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))

    if args.to == "numpy":
        import numpy
        convert = numpy.from_dlpack
    elif args.to == "torch":
        import torch
        convert = torch.from_dlpack
    else:
        def convert(plane):
            if args.gpu:
                plane.__cuda_array_interface__
            return plane.__dlpack__()
    if args.gpu and args.to == "numpy":
        sys.exit("--gpu: numpy reads no GPU memory; --to torch or capsule")

    Gst.init(None)
    tmp = tempfile.TemporaryDirectory()
    sock = os.path.join(tmp.name, "sock")
    caps = "video/x-raw,format=%s,width=%d,height=%d" % (args.format, width,
                                                        height)
    up = " ! cudaupload ! video/x-raw(memory:CUDAMemory)" if args.gpu else ""
    prod = subprocess.Popen(
        ["gst-launch-1.0", "-q"] +
        ("videotestsrc num-buffers=1 pattern=smpte ! %s%s ! imagefreeze "
         "num-buffers=%d ! gpusharesink socket-path=%s policy=lossless "
         "wait-for-connection=true sync=false"
         % (caps, up, args.frames, sock)).split())
    out_caps = ("video/x-raw(memory:GpuShareCUDA)" if args.gpu
                else "video/x-raw")
    pipe = Gst.parse_launch(
        "gpusharesrc socket-path=%s connection-timeout=10000 ! %s ! "
        "appsink name=out sync=false max-buffers=2" % (sock, out_caps))
    sink = pipe.get_by_name("out")
    pipe.set_state(Gst.State.PLAYING)

    times = []
    copies = 0
    cpu0 = None
    n = 0
    while n < args.frames:
        sample = sink.try_pull_sample(10 * Gst.SECOND)
        if sample is None:
            break
        if cpu0 is None:
            r = resource.getrusage(resource.RUSAGE_SELF)
            cpu0 = r.ru_utime + r.ru_stime
        t0 = time.perf_counter_ns()
        frame = gpushare.Frame(sample)
        arrays = [convert(p) for p in frame.planes]
        t1 = time.perf_counter_ns()
        times.append((t1 - t0) / 1000.0)
        copies += not frame.in_place
        del arrays, frame, sample
        n += 1
    r = resource.getrusage(resource.RUSAGE_SELF)
    cpu = r.ru_utime + r.ru_stime - (cpu0 or 0)
    pipe.set_state(Gst.State.NULL)
    prod.wait(timeout=30)
    if not times:
        sys.exit("no frame came")
    times.sort()
    p50 = times[len(times) // 2]
    p99 = times[min(len(times) - 1, len(times) * 99 // 100)]
    print("gpushare-tensor-bench: %s %dx%d %s -> %s: %d frames (%d copies), "
          "arrays p50 %.1f us, p99 %.1f us; consumer CPU %.1f us a frame"
          % ("GPU" if args.gpu else "system memory", width, height,
             args.format, args.to, len(times), copies, p50, p99,
             cpu * 1e6 / max(1, len(times) - 1)))


if __name__ == "__main__":
    main()
