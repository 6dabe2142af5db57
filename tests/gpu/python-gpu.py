#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Python module gpushare on the GPU, against real processes: a
gst-launch-1.0 producer decodes a clip with NVDEC into gpusharesink, and
gpusharesrc in this process hands its frames (memory:GpuShareCUDA) to
gpushare.Frame.  Each plane is read where the interfaces say it is, by
ctypes calls into libcuda (no array library with CUDA runs on every GPU
machine), and compared with a decode of the same clip in this process:

  - every frame of the 1080p clip identical, in host and in semaphore sync;
  - zero copies: __cuda_array_interface__'s and the DLPack tensor's data
    pointer is the same device address, one the driver knows as mapped
    from a shareable allocation (cuMemRetainAllocationHandle: the
    producer's slot), and the frames cycle over a few such addresses;
  - the readiness contract (stream None: complete when pushed): with the
    producer's copies delayed 20 ms on its stream (test plugin,
    GPUSHARE_TEST_CUDA_LATE_US), frames read at once are still the right
    ones; a src that handed a slot on before its copy was in would give
    the slot's previous frame;
  - GStreamer's CUDA memory (memory:CUDAMemory) out of gpusharesrc, the
    slot itself from 1.24 on, a copy with 1.22: the same frames, read
    through the same interfaces;
  - lifetime: a plane kept alone holds its slot (the producer writes no
    later frame into it), and the slot comes round again once it is gone.

    PYTHONPATH=BUILD/ext/python python3 tests/gpu/python-gpu.py [CLIP]

GST_PLUGIN_PATH_1_0 names the plugin; GPUSHARE_TEST_PLUGIN_DIR the test
build's copy (the readiness part).  Exits 77 with one line without the
module, PyGObject, the CUDA driver, a GPU or nvh264dec.
"""

import ctypes
import gc
import hashlib
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLIP = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "media", "clip-h264-1080p.mp4")
LATE_US = 20000


def skip(why):
    print("SKIP: %s" % why)
    sys.exit(77)


try:
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    from gi.repository import Gst, GstApp  # noqa: F401
    import gpushare
except (ImportError, ValueError) as e:
    skip("the Python module gpushare or PyGObject: %s" % e)

try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError:
    skip("no CUDA driver (libcuda.so.1)")
if cuda.cuInit(0) != 0:
    skip("the CUDA driver found no usable GPU")
Gst.init(None)
if not Gst.ElementFactory.find("nvh264dec"):
    skip("no nvh264dec (GStreamer's nvcodec plugin, NVDEC)")
if not Gst.ElementFactory.find("gpusharesrc"):
    print("FAIL: gpusharesrc is not found (GST_PLUGIN_PATH_1_0)")
    sys.exit(1)

TIMEOUT_NS = 20 * Gst.SECOND
CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE = 1, 2
KDL_CUDA = 2


class Memcpy2D(ctypes.Structure):
    _fields_ = [("srcXInBytes", ctypes.c_size_t),
                ("srcY", ctypes.c_size_t),
                ("srcMemoryType", ctypes.c_int),
                ("srcHost", ctypes.c_void_p),
                ("srcDevice", ctypes.c_ulonglong),
                ("srcArray", ctypes.c_void_p),
                ("srcPitch", ctypes.c_size_t),
                ("dstXInBytes", ctypes.c_size_t),
                ("dstY", ctypes.c_size_t),
                ("dstMemoryType", ctypes.c_int),
                ("dstHost", ctypes.c_void_p),
                ("dstDevice", ctypes.c_ulonglong),
                ("dstArray", ctypes.c_void_p),
                ("dstPitch", ctypes.c_size_t),
                ("WidthInBytes", ctypes.c_size_t),
                ("Height", ctypes.c_size_t)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER)]


capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = ctypes.c_void_p
capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_rename = ctypes.pythonapi.PyCapsule_SetName
capsule_rename.restype = ctypes.c_int
capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]


def check(res, what):
    if res != 0:
        raise RuntimeError("%s failed: CUDA error %d" % (what, res))


def cuda_context():
    dev = ctypes.c_int()
    ctx = ctypes.c_void_p()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
          "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def is_shareable_mapping(ptr):
    """The driver knows ptr as mapped from a cuMemCreate allocation (what
    gpusharesink exports): a copy in cuMemAlloc memory is not."""
    handle = ctypes.c_ulonglong()
    if cuda.cuMemRetainAllocationHandle(ctypes.byref(handle),
                                        ctypes.c_void_p(ptr)) != 0:
        return False
    check(cuda.cuMemRelease(handle), "cuMemRelease")
    return True


def layout(iface):
    """(pointer, rows, bytes a row, pitch) of an array interface."""
    ptr, readonly = iface["data"]
    shape = iface["shape"]
    itemsize = int(iface["typestr"][2:])
    row = itemsize
    for n in shape[1:]:
        row *= n
    strides = iface.get("strides")
    pitch = strides[0] if strides else row
    return ptr, readonly, shape[0], row, pitch


def read_device(iface):
    """A GPU plane's bytes, row by row, copied by the driver from where
    the interface points (synchronously, on no stream the producer uses)."""
    ptr, _, rows, row, pitch = layout(iface)
    host = ctypes.create_string_buffer(rows * row)
    m = Memcpy2D(srcMemoryType=CU_MEMORYTYPE_DEVICE, srcDevice=ptr,
                 srcPitch=pitch, dstMemoryType=CU_MEMORYTYPE_HOST,
                 dstHost=ctypes.addressof(host), dstPitch=row,
                 WidthInBytes=row, Height=rows)
    check(cuda.cuMemcpy2D_v2(ctypes.byref(m)), "cuMemcpy2D")
    return host.raw


def read_host(iface):
    ptr, _, rows, row, pitch = layout(iface)
    return b"".join(ctypes.string_at(ptr + r * pitch, row)
                    for r in range(rows))


def dlpack_pointer(plane, iface):
    """The DLPack tensor of a GPU plane, taken as a consumer takes it:
    checked against the array interface, then let go."""
    dev = plane.__dlpack_device__()
    assert dev[0] == KDL_CUDA, "DLPack device %r, not CUDA" % (dev,)
    capsule = plane.__dlpack__(stream=None)
    p = capsule_pointer(capsule, b"dltensor")
    m = DLManagedTensor.from_address(p)
    t = m.dl_tensor
    assert t.device.device_type == KDL_CUDA
    assert t.device.device_id == dev[1]
    shape = tuple(t.shape[i] for i in range(t.ndim))
    assert shape == tuple(iface["shape"]), (shape, iface["shape"])
    itemsize = t.dtype.bits // 8
    if iface.get("strides"):
        strides = tuple(t.strides[i] * itemsize for i in range(t.ndim))
        assert strides == tuple(iface["strides"]), (strides,
                                                    iface["strides"])
    data = t.data + t.byte_offset
    capsule_rename(capsule, b"used_dltensor")
    m.deleter(p)
    return data


def producer(sock, env=None):
    cmd = ("filesrc location=%s ! qtdemux ! h264parse ! nvh264dec ! "
           "gpusharesink socket-path=%s wait-for-connection=true "
           "policy=lossless" % (CLIP, sock))
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen(["gst-launch-1.0", "-q"] + cmd.split(),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=e)


def finish(prod):
    try:
        _, err = prod.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        prod.kill()
        _, err = prod.communicate()
    return prod.returncode, err.decode(errors="replace")


def reference():
    """Each frame's digest, decoded in this process to system memory and
    read through the module's system-memory route."""
    pipe = Gst.parse_launch(
        "filesrc location=%s ! qtdemux ! h264parse ! nvh264dec ! "
        "video/x-raw,format=NV12 ! appsink name=out sync=false" % CLIP)
    out = pipe.get_by_name("out")
    pipe.set_state(Gst.State.PLAYING)
    digests = []
    while True:
        sample = out.try_pull_sample(TIMEOUT_NS)
        if sample is None:
            break
        frame = gpushare.Frame(sample)
        h = hashlib.md5()
        for plane in frame.planes:
            h.update(read_host(plane.__array_interface__))
        digests.append(h.hexdigest())
    pipe.set_state(Gst.State.NULL)
    return digests


class Consumer:
    def __init__(self, sock, sync, extra="", memory="GpuShareCUDA"):
        self.pipe = Gst.parse_launch(
            "gpusharesrc socket-path=%s connection-timeout=20000 "
            "sync-mode=%s %s ! video/x-raw(memory:%s) ! "
            "appsink name=out sync=false max-buffers=1"
            % (sock, sync, extra, memory))
        self.out = self.pipe.get_by_name("out")
        self.pipe.set_state(Gst.State.PLAYING)

    def pull(self):
        return self.out.try_pull_sample(TIMEOUT_NS)

    def stop(self):
        self.pipe.set_state(Gst.State.NULL)


def gpu_frame_digest(frame, addresses):
    """Reads a GPU frame in place; checks the interfaces agree and point
    into a slot."""
    h = hashlib.md5()
    for i, plane in enumerate(frame.planes):
        iface = plane.__cuda_array_interface__
        assert iface["version"] == 3
        assert iface["stream"] is None
        ptr, readonly, _, _, _ = layout(iface)
        assert readonly, "a GPU plane must be read-only"
        assert dlpack_pointer(plane, iface) == ptr, \
            "DLPack and __cuda_array_interface__ point at different memory"
        if frame.in_place:
            assert is_shareable_mapping(ptr), \
                "plane %d of a frame in place is not in a mapped slot" % i
            if i == 0:
                addresses.add(ptr)
        h.update(read_device(iface))
    return h.hexdigest()


def split(sync, want, env=None, limit=None):
    """Producer process -> this process in sync; (digests, addresses,
    seconds)."""
    digests, addresses = [], set()
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "s")
        prod = producer(sock, env)
        cons = Consumer(sock, sync)
        start = time.monotonic()
        try:
            while limit is None or len(digests) < limit:
                sample = cons.pull()
                if sample is None:
                    break
                frame = gpushare.Frame(sample)
                assert frame.in_place, "frame %d is a copy" % len(digests)
                digests.append(gpu_frame_digest(frame, addresses))
                del frame, sample
        finally:
            seconds = time.monotonic() - start
            cons.stop()
            if limit is not None:
                prod.kill()
            rc, err = finish(prod)
    if limit is None and rc != 0:
        raise AssertionError("producer exit %d: %s" % (rc, err[-2000:]))
    return digests, addresses, seconds


def split_cuda_memory(want):
    """GStreamer's CUDA memory out of gpusharesrc (memory:CUDAMemory): the
    slot itself from 1.24 on, a copy on the device with 1.22; either way
    read through the same interfaces.  (digests, frames in place)"""
    digests, in_place = [], 0
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "s")
        prod = producer(sock)
        cons = Consumer(sock, "auto", memory="CUDAMemory")
        try:
            while True:
                sample = cons.pull()
                if sample is None:
                    break
                frame = gpushare.Frame(sample)
                assert frame.device == "cuda", frame.device
                in_place += frame.in_place
                digests.append(gpu_frame_digest(frame, set()))
                del frame, sample
        finally:
            cons.stop()
            rc, err = finish(prod)
    if rc != 0:
        raise AssertionError("producer exit %d: %s" % (rc, err[-2000:]))
    return digests, in_place


def compare(name, got, want):
    bad = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
    if len(got) != len(want) or bad:
        raise AssertionError("%s: %d frames of %d, %d differ (first: %s)"
                             % (name, len(got), len(want), len(bad),
                                bad[:8]))


def lifetime(sync, want):
    """A plane alone (no sample, no frame) keeps its slot: while it lives
    the producer writes no frame into it (its bytes stay those of its
    frame, its address comes in no later frame); once it is gone the slot
    comes round again.  Returns (frames held over, frames until the slot
    came back)."""
    held_at, release_at = 10, 40
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "s")
        prod = producer(sock)
        cons = Consumer(sock, sync)
        kept = None
        back = None
        try:
            for n in range(len(want)):
                sample = cons.pull()
                assert sample is not None, "no frame %d" % n
                frame = gpushare.Frame(sample)
                assert frame.in_place
                ptr = frame.planes[0].__cuda_array_interface__["data"][0]
                if n == held_at:
                    kept = frame.planes[0]
                    addr = ptr
                    first = read_device(kept.__cuda_array_interface__)
                elif held_at < n < release_at:
                    assert ptr != addr, \
                        "frame %d in the slot of a plane still held" % n
                elif n > release_at and ptr == addr and back is None:
                    back = n - release_at
                del frame, sample
                if n == release_at:
                    again = read_device(kept.__cuda_array_interface__)
                    assert again == first, "the held plane was overwritten"
                    kept = None
                    gc.collect()
        finally:
            cons.stop()
            prod.kill()
            finish(prod)
    assert back is not None, "the slot did not come back once let go"
    return release_at - held_at, back


def main():
    cuda_context()
    want = reference()
    if len(want) < 60:
        print("FAIL: the one-process decode gave %d frames" % len(want))
        return 1
    print("one-process decode: %d frames" % len(want))
    failed = 0
    for sync in ("host", "semaphore"):
        try:
            got, addresses, _ = split(sync, want)
            compare(sync, got, want)
            # in place: the frames cycle over the ring's few slots
            assert 0 < len(addresses) <= 16, len(addresses)
            print("%s sync: %d frames identical, read in place at %d slot "
                  "addresses (each a mapped shareable allocation), DLPack "
                  "and __cuda_array_interface__ agree"
                  % (sync, len(got), len(addresses)))
        except AssertionError as e:
            print("FAIL: %s sync: %s" % (sync, e))
            failed += 1
    try:
        got, in_place = split_cuda_memory(want)
        compare("memory:CUDAMemory", got, want)
        # in place from 1.24 on (the slot wrapped as GstCudaMemory)
        if Gst.version() >= (1, 24, 0, 0):
            assert in_place == len(got), "%d of %d in place" % (in_place,
                                                               len(got))
        print("memory:CUDAMemory: %d frames identical, %d of them the slot "
              "itself" % (len(got), in_place))
    except AssertionError as e:
        print("FAIL: memory:CUDAMemory: %s" % e)
        failed += 1
    plugin = os.environ.get("GPUSHARE_TEST_PLUGIN_DIR")
    if plugin:
        for sync in ("semaphore", "host"):
            n = 30
            env = {"GST_PLUGIN_PATH_1_0": plugin,
                   "GPUSHARE_TEST_CUDA_LATE_US": str(LATE_US)}
            try:
                got, _, seconds = split(sync, want, env, limit=n)
                compare(sync + ", late copies", got, want[:n])
                # the delay was real: every copy waited LATE_US first
                assert seconds >= 0.8 * n * LATE_US / 1e6, \
                    "%d frames in %.2f s: the copies were not late" % (
                        n, seconds)
                print("%s sync, the producer's copies %d ms late: %d frames "
                      "read at once, all identical (%.2f s)"
                      % (sync, LATE_US // 1000, n, seconds))
            except AssertionError as e:
                print("FAIL: %s sync, late copies: %s" % (sync, e))
                failed += 1
    else:
        print("FAIL: GPUSHARE_TEST_PLUGIN_DIR is not set: the readiness "
              "part needs the test build's plugin")
        failed += 1
    try:
        held, back = lifetime("host", want)
        print("lifetime: a plane alone kept its slot over %d frames, "
              "unwritten; let go, the slot came round again %d frames later"
              % (held, back))
    except AssertionError as e:
        print("FAIL: lifetime: %s" % e)
        failed += 1
    print("%s" % ("all passed" if not failed else "%d failed" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
