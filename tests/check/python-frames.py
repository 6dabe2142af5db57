#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Python module gpushare against real processes (system memory here;
tests/gpu runs the GPU route): a gst-launch-1.0 producer, gpusharesrc in
this process, and each frame's planes through numpy's array interface and
DLPack (numpy.from_dlpack; torch.from_dlpack where python3-torch is
installed) byte-identical to what the producer sent, for NV12, I420 and
RGBA at odd widths; the arrays are the producer's slot (their data pointer
is the mapping's), read-only; and an array alone keeps its slot: held past
max-in-place, the next frames come as copies, and in place again once the
arrays are gone.

    PYTHONPATH=BUILD/ext/python python3 tests/check/python-frames.py

Exits 77 with one line where the module or numpy is missing.
"""

import gc
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import Gst, GstApp, GstVideo  # noqa: F401
    import numpy
    import gpushare
except (ImportError, ValueError) as e:
    print("SKIP: the Python module gpushare, PyGObject or numpy: %s" % e)
    sys.exit(77)

try:
    import torch
except ImportError:
    torch = None

Gst.init(None)

N_FRAMES = 6
TIMEOUT_NS = 10 * Gst.SECOND


def finish(prod):
    """Waits for the producer to end; kills it if it does not."""
    try:
        _, err = prod.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        prod.kill()
        _, err = prod.communicate()
    return err


def producer(sock, caps, frames, extra=""):
    """A gst-launch-1.0 producer of frames moving frames (pattern=ball)."""
    cmd = ("videotestsrc pattern=ball num-buffers=%d ! %s ! gpusharesink "
           "socket-path=%s wait-for-connection=true policy=lossless %s"
           % (frames, caps, sock, extra))
    return subprocess.Popen(["gst-launch-1.0", "-q"] + cmd.split(),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def expected_frames(caps, frames):
    """The same frames made here, each plane cut from its bytes by the
    caps' default layout (not the module's)."""
    pipe = Gst.parse_launch("videotestsrc pattern=ball num-buffers=%d ! %s ! "
                            "appsink name=out sync=false" % (frames, caps))
    out = pipe.get_by_name("out")
    pipe.set_state(Gst.State.PLAYING)
    info = GstVideo.VideoInfo.new_from_caps(Gst.Caps.from_string(caps))
    finfo = info.finfo
    result = []
    while True:
        sample = out.try_pull_sample(TIMEOUT_NS)
        if sample is None:
            break
        buf = sample.get_buffer()
        data = buf.extract_dup(0, buf.get_size())
        planes = []
        for p in range(info.finfo.n_planes):
            comps = [c for c in range(finfo.n_components)
                     if finfo.plane[c] == p]
            c = comps[0]
            w = -(-info.width >> finfo.w_sub[c]) if finfo.w_sub[c] else \
                info.width
            h = -(-info.height >> finfo.h_sub[c]) if finfo.h_sub[c] else \
                info.height
            row = w * finfo.pixel_stride[c]
            a = numpy.frombuffer(data, dtype=numpy.uint8,
                                 count=info.stride[p] * h,
                                 offset=info.offset[p])
            planes.append(a.reshape(h, info.stride[p])[:, :row].copy())
        result.append(planes)
    pipe.set_state(Gst.State.NULL)
    return result


def as_rows(plane_array):
    """A plane array as rows of bytes: (rows, pixels, n) -> (rows, bytes)."""
    a = numpy.asarray(plane_array)
    return a.reshape(a.shape[0], -1).view(numpy.uint8)


class Consumer:
    def __init__(self, sock, extra=""):
        self.pipe = Gst.parse_launch(
            "gpusharesrc socket-path=%s connection-timeout=10000 %s ! "
            "appsink name=out sync=false max-buffers=1" % (sock, extra))
        self.out = self.pipe.get_by_name("out")
        self.pipe.set_state(Gst.State.PLAYING)

    def pull(self):
        return self.out.try_pull_sample(TIMEOUT_NS)

    def stop(self):
        self.pipe.set_state(Gst.State.NULL)


class Frames(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.sock = os.path.join(self.dir.name, "sock")

    def tearDown(self):
        self.dir.cleanup()

    def check_format(self, fmt, width, height):
        caps = ("video/x-raw,format=%s,width=%d,height=%d,framerate=30/1"
                % (fmt, width, height))
        expected = expected_frames(caps, N_FRAMES)
        self.assertEqual(len(expected), N_FRAMES)
        prod = producer(self.sock, caps, N_FRAMES)
        cons = Consumer(self.sock)
        try:
            for k in range(N_FRAMES):
                sample = cons.pull()
                self.assertIsNotNone(sample, "frame %d of %s did not come"
                                     % (k, fmt))
                frame = gpushare.Frame(sample)
                self.assertEqual(frame.device, "cpu")
                self.assertEqual(frame.format, fmt)
                self.assertEqual((frame.width, frame.height),
                                 (width, height))
                self.assertTrue(frame.in_place)
                planes = frame.planes
                self.assertEqual(len(planes), len(expected[k]))
                for p, plane in enumerate(planes):
                    want = expected[k][p]
                    a = numpy.asarray(plane)
                    # in place: the array is the mapping of the slot
                    self.assertEqual(a.__array_interface__["data"][0],
                                     plane.ptr)
                    self.assertFalse(a.flags.writeable)
                    self.assertTrue(numpy.array_equal(as_rows(a), want),
                                    "%s frame %d plane %d differs"
                                    % (fmt, k, p))
                    d = numpy.from_dlpack(plane)
                    self.assertEqual(d.__array_interface__["data"][0],
                                     plane.ptr)
                    self.assertTrue(numpy.array_equal(as_rows(d), want))
                    self.assertEqual(plane.__dlpack_device__(), (1, 0))
                    if torch is not None:
                        t = torch.from_dlpack(plane)
                        self.assertEqual(t.data_ptr(), plane.ptr)
                        self.assertTrue(numpy.array_equal(
                            as_rows(t.numpy()), want))
                        del t
                    del a, d
                del planes, frame, sample
        finally:
            cons.stop()
            err = finish(prod)
        self.assertEqual(prod.returncode, 0, err)

    def test_nv12_odd(self):
        self.check_format("NV12", 321, 241)

    def test_i420_odd(self):
        self.check_format("I420", 323, 239)

    def test_rgba_odd(self):
        self.check_format("RGBA", 317, 243)

    def test_shapes(self):
        """NV12's UV plane is pairs; RGBA has 4 elements a pixel; strides
        are the slot's, at least a row."""
        caps = "video/x-raw,format=NV12,width=321,height=241,framerate=30/1"
        prod = producer(self.sock, caps, 2)
        cons = Consumer(self.sock)
        try:
            frame = gpushare.Frame(cons.pull())
            y, uv = frame.planes
            self.assertEqual(y.shape, (241, 321))
            self.assertEqual(uv.shape, (121, 161, 2))
            self.assertGreaterEqual(y.strides[0], 321)
            self.assertEqual(uv.strides[1:], (2, 1))
            self.assertEqual(y.typestr, "|u1")
            with self.assertRaises(AttributeError):
                y.__cuda_array_interface__
            with self.assertRaises(BufferError):
                y.__dlpack__(stream=1)
            del y, uv, frame
            # the producer ends once every frame is taken
            self.assertIsNotNone(cons.pull())
        finally:
            cons.stop()
            finish(prod)

    def test_arrays_hold_slots(self):
        """Arrays alone (no sample, no frame) keep their slots: past
        max-in-place the next frames are copies; once they are gone the
        frames are in place again.  Without arrays kept, every frame is."""
        caps = "video/x-raw,format=NV12,width=64,height=48,framerate=30/1"
        n = 40
        prod = producer(self.sock, caps, n, "ring-size=8")
        cons = Consumer(self.sock, "max-in-place=3")
        kept = []
        in_place = []
        try:
            for k in range(n):
                sample = cons.pull()
                self.assertIsNotNone(sample, "frame %d did not come" % k)
                frame = gpushare.Frame(sample)
                in_place.append(frame.in_place)
                if 10 <= k < 20:
                    # keep an array of the luma plane, nothing else
                    kept.append(numpy.from_dlpack(frame.planes[0]))
                del frame, sample
                gc.collect()
                if k == 20:
                    kept.clear()
        finally:
            cons.stop()
            finish(prod)
        self.assertTrue(all(in_place[:10]), in_place)
        # three arrays kept: the slots of max-in-place are taken
        self.assertIn(False, in_place[13:21], in_place)
        # all of them given back: in place again after the queue's frames
        self.assertTrue(all(in_place[24:]), in_place)

    def test_copy_warned(self):
        """A frame that is a copy says so, once."""
        caps = "video/x-raw,format=NV12,width=64,height=48,framerate=30/1"
        prod = producer(self.sock, caps, 4)
        cons = Consumer(self.sock, "max-in-place=1")
        kept = []
        try:
            import warnings
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                for k in range(4):
                    f = gpushare.frame(cons.pull())
                    kept.append(f)
                copies = [f for f in kept if not f.in_place]
                self.assertTrue(copies)
                self.assertEqual(len([x for x in w
                                      if "is a copy" in str(x.message)]), 1)
            kept.clear()
        finally:
            cons.stop()
            finish(prod)


if __name__ == "__main__":
    print("torch: %s" % (torch.__version__ if torch else
                         "not installed: its DLPack checks are left out"))
    unittest.main(verbosity=2)
