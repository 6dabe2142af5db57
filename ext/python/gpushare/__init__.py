# SPDX-License-Identifier: LGPL-2.1-or-later
"""gpushare: frames from gpusharesrc as arrays, read where they are.

    import gpushare
    frame = gpushare.Frame(appsink.pull_sample())
    y, uv = frame.planes                      # NV12: two planes
    t = torch.from_dlpack(y)                  # GPU: on the frame's device
    a = numpy.asarray(y)                      # system memory: read-only

A frame in GPU memory (caps video/x-raw(memory:GpuShareCUDA) after
gpusharesrc) gives planes with __cuda_array_interface__ (version 3) and
DLPack on the CUDA device: torch.from_dlpack, cupy.from_dlpack and
numba.cuda.as_cuda_array read the producer's slot in place.  A frame in
system memory gives planes with numpy's __array_interface__ and DLPack on
the CPU.  Either way the planes are read-only: the slot is shared with the
other consumers (a system-memory slot is mapped read-only: a write
faults).

Lifetime: a Frame holds its buffer, and so the producer's slot; every
plane, DLPack capsule and array made from it holds the frame.  The slot
goes back to the producer when the last of them goes, at once (no cycle
waits for the garbage collector).  In system memory gpusharesrc lets
downstream hold at most max-in-place buffers in place; past that it copies
frames into ordinary memory, and Frame.in_place is False (warn_copies()
says so once).  A GPU frame is always the slot: planes kept hold the
producer's slots, and while all it can give this consumer are held, a
lossless producer waits and a leaky one skips it.

Synchronisation: gpusharesrc pushes a GPU frame once it is complete, so
__cuda_array_interface__'s stream is None and __dlpack__'s stream argument
asks for nothing: any stream may read the frame at once.
"""

import warnings

from ._gpushare import Frame, Plane  # noqa: F401

__all__ = ["Frame", "Plane", "frame", "warn_copies"]

_warned = False


def warn_copies(frame):
    """Warns once per process when frame is a copy, not the slot."""
    global _warned
    if not frame.in_place and not _warned:
        _warned = True
        warnings.warn("gpushare: this frame is a copy, not the producer's "
                      "slot: downstream holds max-in-place frames already "
                      "(keep fewer frames or arrays, or raise gpusharesrc's "
                      "max-in-place), or io-mode=copy", stacklevel=2)
    return frame


def frame(sample, caps=None):
    """Frame(sample, caps), warning once if it is a copy."""
    return warn_copies(Frame(sample, caps))
