#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Frames from a gpushare producer as tensors, read where they are, and
something computed on each: the start of an analytics consumer.

    python3 examples/gpushare-infer.py SOCKET [--gpu] [--frames N]
        [--timeout MS] [--with numpy|torch]

Needs the Python module gpushare (installed with the plugin, or
PYTHONPATH=BUILD/ext/python), PyGObject and GStreamer's introspection data
(python3-gi, gir1.2-gstreamer-1.0), and numpy or PyTorch (python3-torch).

--gpu asks gpusharesrc for GPU frames (video/x-raw(memory:GpuShareCUDA)):
the luma plane becomes a CUDA tensor on the frame's GPU through DLPack,
with no copy (PyTorch with CUDA).  Without it, frames come in system memory
and become numpy arrays or CPU tensors, also in place.

Per frame, on the luma plane: normalised to [0, 1], its mean and standard
deviation (a reduction), and the mean magnitude of a 3x3 Sobel filter (the
smallest model there is: one convolution), printed as

    frame OFFSET pts=NS mean=M std=S edges=E

then 'received N frames in T s (F fps)'.  Waits for the producer as long
as --timeout says, reads until the end of the stream or N frames; a
producer that goes away ends the run with its reason on stderr and exit
status 1 (gpusharesrc's producer-lost=error, the default).

Lifetime: a tensor made from a plane holds the producer's slot until it
and everything made from it are gone; compute, keep the results (small
Python numbers here), and let the frame go.  gpusharesrc pushes a GPU
frame once it is complete: any CUDA stream may read it at once.
"""

import argparse
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import Gst, GstApp  # noqa: E402,F401

import gpushare  # noqa: E402


class Numpy:
    """The per-frame work with numpy (system memory only)."""

    def __init__(self):
        import numpy
        self.np = numpy
        self.kx = numpy.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]],
                              dtype=numpy.float32)

    def run(self, plane):
        np = self.np
        y = np.from_dlpack(plane).astype(np.float32) / 255.0
        mean, std = float(y.mean()), float(y.std())
        # a 3x3 Sobel as two sums of shifted views (no SciPy needed)
        gx = sum(self.kx[i, j] * y[i:y.shape[0] - 2 + i, j:y.shape[1] - 2 + j]
                 for i in range(3) for j in range(3) if self.kx[i, j])
        gy = sum(self.kx[j, i] * y[i:y.shape[0] - 2 + i, j:y.shape[1] - 2 + j]
                 for i in range(3) for j in range(3) if self.kx[j, i])
        return mean, std, float(np.sqrt(gx * gx + gy * gy).mean())


class Torch:
    """The same with PyTorch, on the frame's device (CPU or CUDA)."""

    def __init__(self):
        import torch
        self.torch = torch
        k = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0],
                          [-1.0, 0.0, 1.0]])
        self.kernels = torch.stack([k, k.t()]).unsqueeze(1)
        self.on = {}

    def run(self, plane):
        torch = self.torch
        y = torch.from_dlpack(plane)
        dev = y.device
        if dev not in self.on:
            self.on[dev] = self.kernels.to(dev)
        x = y.to(torch.float32).div_(255.0)
        mean, std = x.mean(), x.std()
        g = torch.nn.functional.conv2d(x[None, None], self.on[dev])
        edges = g.pow(2).sum(dim=1).sqrt().mean()
        # .item () waits for the device: the results are plain numbers
        return mean.item(), std.item(), edges.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("socket", help="the producer's socket-path")
    ap.add_argument("--gpu", action="store_true",
                    help="GPU frames (memory:GpuShareCUDA), as CUDA tensors")
    ap.add_argument("--frames", type=int, default=0,
                    help="stop after N frames (default: until EOS)")
    ap.add_argument("--timeout", type=int, default=10000,
                    help="connection-timeout, ms")
    ap.add_argument("--with", dest="lib", choices=["numpy", "torch"],
                    help="numpy or torch (default: torch where installed)")
    args = ap.parse_args()

    lib = args.lib
    if lib is None:
        try:
            import torch  # noqa: F401
            lib = "torch"
        except ImportError:
            lib = "numpy"
    if args.gpu and lib != "torch":
        print("error: --gpu needs PyTorch with CUDA", file=sys.stderr)
        return 2
    work = Torch() if lib == "torch" else Numpy()

    Gst.init(None)
    caps = "video/x-raw(memory:GpuShareCUDA)" if args.gpu else "video/x-raw"
    pipeline = Gst.parse_launch(
        "gpusharesrc name=src connection-timeout=%d ! %s ! "
        "appsink name=sink sync=false max-buffers=2" % (args.timeout, caps))
    pipeline.get_by_name("src").set_property("socket-path", args.socket)
    sink = pipeline.get_by_name("sink")
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)

    n = 0
    start = None
    failure = None
    while failure is None and (args.frames == 0 or n < args.frames):
        sample = sink.try_pull_sample(Gst.SECOND // 10)
        msg = bus.pop_filtered(Gst.MessageType.ERROR)
        if msg is not None:
            failure = msg.parse_error()[0].message
            break
        if sample is None:
            if sink.is_eos():
                if args.frames or n == 0:
                    failure = "the stream ended after %d frames" % n
                break
            continue
        if start is None:
            start = time.monotonic()
        frame = gpushare.warn_copies(gpushare.Frame(sample))
        mean, std, edges = work.run(frame.planes[0])
        print("frame %s pts=%s mean=%.4f std=%.4f edges=%.4f"
              % (frame.offset, frame.pts, mean, std, edges), flush=True)
        # the frame, and with it the producer's slot, goes back here
        del frame, sample
        n += 1

    pipeline.set_state(Gst.State.NULL)
    took = time.monotonic() - start if start else 0.0
    print("received %d frames in %.2f s (%.1f fps) with %s"
          % (n, took, n / took if took > 0 else 0.0, lib))
    if failure is not None:
        print("error: %s" % failure, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
