/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Python module's core: a frame from gpusharesrc (a Gst.Sample, or a
 * Gst.Buffer and its caps) as one array object per plane, read where it
 * is.  A GPU frame (memory:GpuShareCUDA: GstGpuShareCudaMeta) gives
 * __cuda_array_interface__ (version 3) and DLPack on the CUDA device; a
 * frame in system memory gives __array_interface__ (numpy, read-only) and
 * DLPack on the CPU.  The data pointer is the producer's slot, never a
 * copy: a Frame holds the buffer (a system-memory one mapped), each Plane
 * holds its Frame, and every DLPack capsule or array made from a plane
 * holds the plane, so the slot goes back when the last of them goes.
 *
 * GStreamer's own CUDA memory (memory:CUDAMemory: gpusharesrc's slots in
 * place on 1.24+, its copies on the device, a decoder's frames) gives the
 * same GPU planes, at the addresses its map gives; memory that carries a
 * stream is waited for when the Frame is made.
 *
 * The layout of each plane comes from the buffer's video meta (through
 * gst_video_frame_map) or from the GPU meta, never from the caps alone.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <pygobject.h>
#include <dlpack/dlpack.h>
#include <gmodule.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpusharemeta.h"

#define MAX_DIMS 3

/* GStreamer's CUDA memory (caps memory:CUDAMemory: gpusharesrc's slots in
 * place on 1.24+, its copies, a decoder's frames), read without its
 * headers, which not every distribution ships: the memory type and the
 * map flag that gives the device address are the same in every version
 * (gst/cuda/gstcudamemory.h) */
#define CUDA_MEMORY_TYPE "gst.cuda.memory"
#define MAP_CUDA (GST_MAP_FLAG_LAST << 1)
/* cuPointerGetAttribute's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
#define POINTER_DEVICE_ORDINAL 9

/* ------------------------------------------------------------------------ */
/* Frame */

/* one plane's place and layout */
typedef struct
{
  guintptr ptr;
  gint ndim;
  Py_ssize_t shape[MAX_DIMS];
  Py_ssize_t strides[MAX_DIMS]; /* bytes */
  guint itemsize;               /* 1 or 2 */
  gboolean big_endian;
} PlaneDesc;

/* No reference cycle: a Plane holds its Frame, and the Frame makes its
 * Planes when asked, so the last reference gone frees the buffer at once
 * (the producer waits for that slot), with no garbage collection. */
typedef struct
{
  PyObject_HEAD GstBuffer *buffer;
  gboolean mapped;              /* system memory: vframe holds the map */
  GstVideoFrame vframe;
  gboolean cuda;
  gint device_id;
  GstVideoFormat format;
  guint width, height;
  gboolean in_place;
  guint n_planes;
  PlaneDesc planes[GST_VIDEO_MAX_PLANES];
} Frame;

typedef struct
{
  PyObject_HEAD PyObject *frame;
  guint index;
  PlaneDesc d;
} Plane;

static PyTypeObject FrameType;
static PyTypeObject PlaneType;

/* The dimensions of plane p of a frame of finfo at width x height: rows,
 * and per row pixels of one or more equal elements (NV12's UV plane:
 * pairs; RGBA: 4; P010: 16-bit elements), or the row's bytes where the
 * plane's components differ in pitch (YUY2) or are packed below a byte
 * (v210). */
static void
plane_dims (PlaneDesc * d, const GstVideoFormatInfo * finfo, guint width,
    guint height, guint p, gint stride)
{
  guint bits = GST_VIDEO_FORMAT_INFO_BITS (finfo);
  guint bytes = bits > 8 ? 2 : 1;
  guint c, n = 0, row_bytes = 0, rows = 0, cols = 0;
  gint pstride = 0;
  gboolean uniform = !GST_VIDEO_FORMAT_INFO_IS_TILED (finfo)
      && (bits <= 8 || bits == 10 || bits == 12 || bits == 16);

  for (c = 0; c < GST_VIDEO_FORMAT_INFO_N_COMPONENTS (finfo); c++) {
    guint w, h, end;
    gint ps;

    if (GST_VIDEO_FORMAT_INFO_PLANE (finfo, c) != p)
      continue;
    w = GST_VIDEO_FORMAT_INFO_SCALE_WIDTH (finfo, c, width);
    h = GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT (finfo, c, height);
    ps = GST_VIDEO_FORMAT_INFO_PSTRIDE (finfo, c);
    end = GST_VIDEO_FORMAT_INFO_POFFSET (finfo, c)
        + (w > 0 ? (w - 1) * MAX (ps, 0) : 0)
        + (GST_VIDEO_FORMAT_INFO_DEPTH (finfo, c) + 7) / 8;
    row_bytes = MAX (row_bytes, end);
    rows = MAX (rows, h);
    if (n == 0) {
      pstride = ps;
      cols = w;
    } else if (ps != pstride || w != cols) {
      uniform = FALSE;
    }
    if (GST_VIDEO_FORMAT_INFO_SHIFT (finfo, c)
        + GST_VIDEO_FORMAT_INFO_DEPTH (finfo, c) > bytes * 8
        || GST_VIDEO_FORMAT_INFO_POFFSET (finfo, c) % bytes != 0)
      uniform = FALSE;
    n++;
  }
  if (pstride <= 0 || pstride % bytes != 0)
    uniform = FALSE;

  d->shape[0] = rows;
  d->strides[0] = stride;
  if (uniform) {
    guint elems = pstride / bytes;

    d->itemsize = bytes;
    d->big_endian = bytes > 1 && !GST_VIDEO_FORMAT_INFO_IS_LE (finfo);
    d->shape[1] = cols;
    d->strides[1] = pstride;
    d->ndim = 2;
    if (elems > 1) {
      d->ndim = 3;
      d->shape[2] = elems;
      d->strides[2] = bytes;
    }
  } else {
    d->itemsize = 1;
    d->big_endian = FALSE;
    d->ndim = 2;
    d->shape[1] = MIN (row_bytes, (guint) ABS (stride));
    d->strides[1] = 1;
  }
}

static void
frame_set_plane (Frame * f, guint p, guintptr ptr, gint stride)
{
  PlaneDesc *d = &f->planes[p];

  memset (d, 0, sizeof (*d));
  d->ptr = ptr;
  plane_dims (d, gst_video_format_get_info (f->format), f->width, f->height,
      p, stride);
}

static gboolean
buffer_read_only (GstBuffer * buf)
{
  guint i, n = gst_buffer_n_memory (buf);

  for (i = 0; i < n; i++)
    if (!GST_MEMORY_IS_READONLY (gst_buffer_peek_memory (buf, i)))
      return FALSE;
  return n > 0;
}

static GstBuffer *
unwrap_buffer (PyObject * obj, GstCaps ** caps)
{
  if (pyg_boxed_check (obj, GST_TYPE_SAMPLE)) {
    GstSample *sample = pyg_boxed_get (obj, GstSample);
    GstBuffer *buf = gst_sample_get_buffer (sample);

    if (!*caps)
      *caps = gst_sample_get_caps (sample);
    if (!buf)
      PyErr_SetString (PyExc_ValueError, "the sample has no buffer");
    return buf;
  }
  if (pyg_boxed_check (obj, GST_TYPE_BUFFER))
    return pyg_boxed_get (obj, GstBuffer);
  PyErr_SetString (PyExc_TypeError, "expected a Gst.Sample or a Gst.Buffer");
  return NULL;
}

/* libgstcuda's and libcuda's entry points, from the libraries the
 * memory's allocator loaded already: gst_cuda_memory_sync () exists from
 * 1.24 (before, CUDA memory has no stream and is complete) */
typedef struct
{
  void (*memory_sync) (GstMemory * mem);
  int (*pointer_attribute) (void *data, int attribute, guintptr ptr);
} CudaCalls;

static const CudaCalls *
cuda_calls (void)
{
  static CudaCalls calls;
  static gsize once;

  if (g_once_init_enter (&once)) {
    GModule *gst_cuda = g_module_open ("libgstcuda-1.0.so.0",
        G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
    GModule *cuda = g_module_open ("libcuda.so.1",
        G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);

    /* kept open: the process has them loaded anyway */
    if (!gst_cuda || !g_module_symbol (gst_cuda, "gst_cuda_memory_sync",
            (gpointer *) & calls.memory_sync))
      calls.memory_sync = NULL;
    if (!cuda || !g_module_symbol (cuda, "cuPointerGetAttribute",
            (gpointer *) & calls.pointer_attribute))
      calls.pointer_attribute = NULL;
    g_once_init_leave (&once, 1);
  }
  return &calls;
}

static gboolean
buffer_is_cuda_memory (GstBuffer * buf)
{
  guint i, n = gst_buffer_n_memory (buf);

  for (i = 0; i < n; i++)
    if (!gst_memory_is_type (gst_buffer_peek_memory (buf, i), CUDA_MEMORY_TYPE))
      return FALSE;
  return n > 0;
}

/* A frame in GStreamer's CUDA memory: complete first (the work of its
 * stream, 1.24+, waited for here, so that the planes need no stream),
 * then mapped for its device addresses, with the video meta's layout */
static gboolean
frame_map_cuda (Frame * f, GstBuffer * buf, GstVideoInfo * info)
{
  const CudaCalls *calls = cuda_calls ();
  guint i, p;
  int ordinal = -1;

  if (!calls->pointer_attribute) {
    PyErr_SetString (PyExc_ValueError, "CUDA memory, but no CUDA driver in "
        "this process to tell its device");
    return FALSE;
  }
  if (calls->memory_sync) {
    Py_BEGIN_ALLOW_THREADS;
    for (i = 0; i < gst_buffer_n_memory (buf); i++)
      calls->memory_sync (gst_buffer_peek_memory (buf, i));
    Py_END_ALLOW_THREADS;
  }
  if (!gst_video_frame_map (&f->vframe, info, buf, GST_MAP_READ | MAP_CUDA)) {
    PyErr_SetString (PyExc_ValueError, "cannot map the CUDA memory for its "
        "device address");
    return FALSE;
  }
  f->mapped = TRUE;
  if (calls->pointer_attribute (&ordinal, POINTER_DEVICE_ORDINAL,
          (guintptr) GST_VIDEO_FRAME_PLANE_DATA (&f->vframe, 0)) != 0
      || ordinal < 0) {
    PyErr_SetString (PyExc_ValueError, "the CUDA driver does not know the "
        "memory's device address");
    return FALSE;
  }
  f->cuda = TRUE;
  f->device_id = ordinal;
  f->format = GST_VIDEO_INFO_FORMAT (info);
  f->width = GST_VIDEO_INFO_WIDTH (info);
  f->height = GST_VIDEO_INFO_HEIGHT (info);
  /* gpusharesrc's slots are read-only; its copies and others' frames
   * are not */
  f->in_place = buffer_read_only (buf);
  f->n_planes = GST_VIDEO_FRAME_N_PLANES (&f->vframe);
  for (p = 0; p < f->n_planes; p++)
    frame_set_plane (f, p,
        (guintptr) GST_VIDEO_FRAME_PLANE_DATA (&f->vframe, p),
        GST_VIDEO_FRAME_PLANE_STRIDE (&f->vframe, p));
  return TRUE;
}

static PyObject *
Frame_new (PyTypeObject * type, PyObject * args, PyObject * kwds)
{
  static char *kwlist[] = { "sample", "caps", NULL };
  PyObject *obj, *caps_obj = Py_None;
  GstCaps *caps = NULL;
  GstBuffer *buf;
  GstGpuShareCudaMeta *meta;
  Frame *f;
  guint p;

  if (!PyArg_ParseTupleAndKeywords (args, kwds, "O|O", kwlist, &obj, &caps_obj))
    return NULL;
  if (caps_obj != Py_None) {
    if (!pyg_boxed_check (caps_obj, GST_TYPE_CAPS)) {
      PyErr_SetString (PyExc_TypeError, "caps: expected a Gst.Caps");
      return NULL;
    }
    caps = pyg_boxed_get (caps_obj, GstCaps);
  }
  if (!(buf = unwrap_buffer (obj, &caps)))
    return NULL;

  f = (Frame *) type->tp_alloc (type, 0);
  if (!f)
    return NULL;
  f->buffer = gst_buffer_ref (buf);
  f->device_id = -1;

  meta = gst_buffer_get_gpu_share_cuda_meta (buf);
  if (meta) {
    const GstVideoFormatInfo *finfo;

    if (meta->version < 1 || meta->size < sizeof (GstGpuShareCudaMeta)) {
      PyErr_SetString (PyExc_ValueError, "the GPU meta is of an unknown "
          "layout");
      goto fail;
    }
    finfo = gst_video_format_get_info (meta->format);
    if (!finfo || meta->format == GST_VIDEO_FORMAT_UNKNOWN
        || meta->n_planes != GST_VIDEO_FORMAT_INFO_N_PLANES (finfo)
        || meta->n_planes > GST_VIDEO_MAX_PLANES) {
      PyErr_SetString (PyExc_ValueError, "the GPU meta's format and planes "
          "disagree");
      goto fail;
    }
    f->cuda = TRUE;
    f->device_id = meta->device;
    f->format = meta->format;
    f->width = meta->width;
    f->height = meta->height;
    /* a GPU frame is always the slot itself */
    f->in_place = TRUE;
    f->n_planes = meta->n_planes;
    for (p = 0; p < f->n_planes; p++)
      frame_set_plane (f, p, (guintptr) (meta->device_ptr + meta->offset[p]),
          meta->stride[p]);
    return (PyObject *) f;
  } else {
    GstVideoInfo info;

    if (!caps || !gst_video_info_from_caps (&info, caps)) {
      PyErr_SetString (PyExc_ValueError, "a frame without the GPU meta "
          "needs its video caps (pass a Gst.Sample, or caps=)");
      goto fail;
    }
    if (buffer_is_cuda_memory (buf)) {
      if (!frame_map_cuda (f, buf, &info))
        goto fail;
      return (PyObject *) f;
    }
    if (gst_buffer_n_memory (buf) > 0 && gst_memory_is_type
        (gst_buffer_peek_memory (buf, 0), "GpuShareCUDA")) {
      PyErr_SetString (PyExc_ValueError, "a GPU slot without its meta");
      goto fail;
    }
    /* the video meta's offsets and strides, where there is one */
    if (!gst_video_frame_map (&f->vframe, &info, buf, GST_MAP_READ)) {
      PyErr_SetString (PyExc_ValueError, "cannot map the buffer in system "
          "memory (GPU memory of another kind?)");
      goto fail;
    }
    f->mapped = TRUE;
    f->format = GST_VIDEO_INFO_FORMAT (&info);
    f->width = GST_VIDEO_INFO_WIDTH (&info);
    f->height = GST_VIDEO_INFO_HEIGHT (&info);
    f->in_place = buffer_read_only (buf);
    f->n_planes = GST_VIDEO_FRAME_N_PLANES (&f->vframe);
    for (p = 0; p < f->n_planes; p++)
      frame_set_plane (f, p,
          (guintptr) GST_VIDEO_FRAME_PLANE_DATA (&f->vframe, p),
          GST_VIDEO_FRAME_PLANE_STRIDE (&f->vframe, p));
    return (PyObject *) f;
  }

fail:
  Py_DECREF (f);
  return NULL;
}

static void
Frame_dealloc (Frame * f)
{
  if (f->mapped)
    gst_video_frame_unmap (&f->vframe);
  f->mapped = FALSE;
  if (f->buffer)
    gst_buffer_unref (f->buffer);
  f->buffer = NULL;
  Py_TYPE (f)->tp_free ((PyObject *) f);
}

static PyObject *
Frame_get_device (Frame * f, void *closure)
{
  return PyUnicode_FromString (f->cuda ? "cuda" : "cpu");
}

static PyObject *
Frame_get_format (Frame * f, void *closure)
{
  return PyUnicode_FromString (gst_video_format_to_string (f->format));
}

static PyObject *
Frame_get_in_place (Frame * f, void *closure)
{
  return PyBool_FromLong (f->in_place);
}

static PyObject *
Frame_get_planes (Frame * f, void *closure)
{
  PyObject *t = PyTuple_New (f->n_planes);
  guint p;

  if (!t)
    return NULL;
  for (p = 0; p < f->n_planes; p++) {
    Plane *pl = PyObject_New (Plane, &PlaneType);

    if (!pl) {
      Py_DECREF (t);
      return NULL;
    }
    Py_INCREF (f);
    pl->frame = (PyObject *) f;
    pl->index = p;
    pl->d = f->planes[p];
    PyTuple_SET_ITEM (t, p, (PyObject *) pl);
  }
  return t;
}

static PyObject *
Frame_get_pts (Frame * f, void *closure)
{
  if (!GST_BUFFER_PTS_IS_VALID (f->buffer))
    Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong (GST_BUFFER_PTS (f->buffer));
}

static PyObject *
Frame_get_offset (Frame * f, void *closure)
{
  if (GST_BUFFER_OFFSET (f->buffer) == GST_BUFFER_OFFSET_NONE)
    Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong (GST_BUFFER_OFFSET (f->buffer));
}

static PyGetSetDef Frame_getset[] = {
  {"device", (getter) Frame_get_device, NULL,
      "'cuda' for a GPU frame, 'cpu' for one in system memory", NULL},
  {"format", (getter) Frame_get_format, NULL,
        "the GstVideoFormat's name, as the caps say it (NV12, I420, RGBA...)",
      NULL},
  {"in_place", (getter) Frame_get_in_place, NULL,
      "True when the planes are the producer's slot; False for a copy "
        "(past gpusharesrc's max-in-place, or io-mode=copy)", NULL},
  {"planes", (getter) Frame_get_planes, NULL, "a Plane per plane", NULL},
  {"pts", (getter) Frame_get_pts, NULL, "the buffer's PTS (ns) or None",
      NULL},
  {"offset", (getter) Frame_get_offset, NULL,
      "the buffer's offset (the producer's frame number) or None", NULL},
  {NULL}
};

static PyMemberDef Frame_members[] = {
  {"device_id", T_INT, offsetof (Frame, device_id), READONLY,
      "the CUDA ordinal of the frame's GPU in this process; -1 on the CPU"},
  {"width", T_UINT, offsetof (Frame, width), READONLY, "pixels"},
  {"height", T_UINT, offsetof (Frame, height), READONLY, "rows"},
  {NULL}
};

static PyTypeObject FrameType = {
  PyVarObject_HEAD_INIT (NULL, 0)
      .tp_name = "gpushare._gpushare.Frame",
  .tp_basicsize = sizeof (Frame),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Frame(sample, caps=None): a frame from gpusharesrc, read in "
      "place.\n\nsample: a Gst.Sample (its caps are used), or a Gst.Buffer "
      "with caps= (a GPU frame needs none).  The frame holds the buffer "
      "(and so the producer's slot) until it and every plane and array "
      "made from it are gone.",
  .tp_new = Frame_new,
  .tp_dealloc = (destructor) Frame_dealloc,
  .tp_getset = Frame_getset,
  .tp_members = Frame_members,
};

/* ------------------------------------------------------------------------ */
/* Plane */

static void
Plane_dealloc (Plane * pl)
{
  Py_CLEAR (pl->frame);
  PyObject_Free (pl);
}

static gboolean
plane_cuda (Plane * pl)
{
  return ((Frame *) pl->frame)->cuda;
}

static PyObject *
shape_tuple (Plane * pl, gboolean strides)
{
  PyObject *t = PyTuple_New (pl->d.ndim);
  gint i;

  if (!t)
    return NULL;
  for (i = 0; i < pl->d.ndim; i++)
    PyTuple_SET_ITEM (t, i, PyLong_FromSsize_t (strides ? pl->d.strides[i] :
            pl->d.shape[i]));
  return t;
}

static const gchar *
typestr (Plane * pl)
{
  if (pl->d.itemsize == 1)
    return "|u1";
  return pl->d.big_endian ? ">u2" : "<u2";
}

/* the array interfaces: shape, typestr, data, strides, version */
static PyObject *
interface_dict (Plane * pl, gint version)
{
  PyObject *d = PyDict_New (), *v;

  if (!d)
    return NULL;
#define SET(key, value) \
  if (!(v = (value)) || PyDict_SetItemString (d, key, v) < 0) { \
    Py_XDECREF (v); Py_DECREF (d); return NULL; } \
  Py_DECREF (v);
  SET ("shape", shape_tuple (pl, FALSE));
  SET ("strides", shape_tuple (pl, TRUE));
  SET ("typestr", PyUnicode_FromString (typestr (pl)));
  /* read-only: the slot is mapped so, and shared with other consumers */
  SET ("data", Py_BuildValue ("(KO)", (unsigned long long) pl->d.ptr, Py_True));
  SET ("version", PyLong_FromLong (version));
#undef SET
  return d;
}

static PyObject *
Plane_get_array_interface (Plane * pl, void *closure)
{
  if (plane_cuda (pl)) {
    PyErr_SetString (PyExc_AttributeError, "a GPU plane has no "
        "__array_interface__: use __cuda_array_interface__ or DLPack");
    return NULL;
  }
  return interface_dict (pl, 3);
}

static PyObject *
Plane_get_cuda_array_interface (Plane * pl, void *closure)
{
  PyObject *d;

  if (!plane_cuda (pl)) {
    PyErr_SetString (PyExc_AttributeError, "a plane in system memory has no "
        "__cuda_array_interface__: use __array_interface__ or DLPack");
    return NULL;
  }
  if (!(d = interface_dict (pl, 3)))
    return NULL;
  /* gpusharesrc pushes a GPU frame once it is complete (memory:GpuShareCUDA
   * is waited for before it leaves the src): no stream to wait on */
  if (PyDict_SetItemString (d, "stream", Py_None) < 0) {
    Py_DECREF (d);
    return NULL;
  }
  return d;
}

typedef struct
{
  DLManagedTensor tensor;
  int64_t shape[MAX_DIMS];
  int64_t strides[MAX_DIMS];
} Managed;

static void
managed_deleter (DLManagedTensor * t)
{
  Managed *m = (Managed *) t;
  PyGILState_STATE gil = PyGILState_Ensure ();

  Py_XDECREF ((PyObject *) m->tensor.manager_ctx);
  PyGILState_Release (gil);
  g_free (m);
}

static void
capsule_destructor (PyObject * capsule)
{
  DLManagedTensor *t;

  /* a consumer that took it renamed it "used_dltensor" */
  if (!PyCapsule_IsValid (capsule, "dltensor"))
    return;
  t = PyCapsule_GetPointer (capsule, "dltensor");
  if (t && t->deleter)
    t->deleter (t);
}

static PyObject *
Plane_dlpack (Plane * pl, PyObject * args, PyObject * kwds)
{
  static char *kwlist[] = { "stream", NULL };
  PyObject *stream = Py_None, *capsule;
  Managed *m;
  gint i;

  if (!PyArg_ParseTupleAndKeywords (args, kwds, "|$O", kwlist, &stream))
    return NULL;
  if (!plane_cuda (pl) && stream != Py_None) {
    PyErr_SetString (PyExc_BufferError, "a plane in system memory takes no "
        "stream");
    return NULL;
  }
  /* a GPU frame is complete when gpusharesrc pushes it: whatever stream
   * the consumer names may read it at once */
  if (pl->d.big_endian) {
    PyErr_SetString (PyExc_BufferError, "DLPack has no big-endian data "
        "type");
    return NULL;
  }
  m = g_new0 (Managed, 1);
  m->tensor.dl_tensor.data = (void *) pl->d.ptr;
  m->tensor.dl_tensor.device.device_type = plane_cuda (pl) ? kDLCUDA : kDLCPU;
  m->tensor.dl_tensor.device.device_id = plane_cuda (pl) ?
      ((Frame *) pl->frame)->device_id : 0;
  m->tensor.dl_tensor.ndim = pl->d.ndim;
  m->tensor.dl_tensor.dtype.code = kDLUInt;
  m->tensor.dl_tensor.dtype.bits = pl->d.itemsize * 8;
  m->tensor.dl_tensor.dtype.lanes = 1;
  for (i = 0; i < pl->d.ndim; i++) {
    m->shape[i] = pl->d.shape[i];
    /* DLPack counts strides in elements */
    m->strides[i] = pl->d.strides[i] / (gint) pl->d.itemsize;
  }
  m->tensor.dl_tensor.shape = m->shape;
  m->tensor.dl_tensor.strides = m->strides;
  m->tensor.dl_tensor.byte_offset = 0;
  Py_INCREF (pl);
  m->tensor.manager_ctx = pl;
  m->tensor.deleter = managed_deleter;
  capsule = PyCapsule_New (&m->tensor, "dltensor", capsule_destructor);
  if (!capsule) {
    Py_DECREF (pl);
    g_free (m);
  }
  return capsule;
}

static PyObject *
Plane_dlpack_device (Plane * pl, PyObject * unused)
{
  if (plane_cuda (pl))
    return Py_BuildValue ("(ii)", kDLCUDA, ((Frame *) pl->frame)->device_id);
  return Py_BuildValue ("(ii)", kDLCPU, 0);
}

static PyObject *
Plane_get_shape (Plane * pl, void *closure)
{
  return shape_tuple (pl, FALSE);
}

static PyObject *
Plane_get_strides (Plane * pl, void *closure)
{
  return shape_tuple (pl, TRUE);
}

static PyObject *
Plane_get_typestr (Plane * pl, void *closure)
{
  return PyUnicode_FromString (typestr (pl));
}

static PyObject *
Plane_get_ptr (Plane * pl, void *closure)
{
  return PyLong_FromUnsignedLongLong (pl->d.ptr);
}

static PyObject *
Plane_get_frame (Plane * pl, void *closure)
{
  Py_INCREF (pl->frame);
  return pl->frame;
}

static PyMethodDef Plane_methods[] = {
  {"__dlpack__", (PyCFunction) (void (*)(void)) Plane_dlpack,
        METH_VARARGS | METH_KEYWORDS,
      "__dlpack__(*, stream=None): a DLPack capsule of the plane, in place"},
  {"__dlpack_device__", (PyCFunction) Plane_dlpack_device, METH_NOARGS,
      "(device type, device id): (2, n) on CUDA device n, (1, 0) on the CPU"},
  {NULL}
};

static PyGetSetDef Plane_getset[] = {
  {"__array_interface__", (getter) Plane_get_array_interface, NULL,
      "numpy's array interface (system memory only; read-only)", NULL},
  {"__cuda_array_interface__", (getter) Plane_get_cuda_array_interface, NULL,
      "the CUDA array interface, version 3 (GPU only; read-only)", NULL},
  {"shape", (getter) Plane_get_shape, NULL,
      "(rows, pixels) or (rows, pixels, elements a pixel); (rows, bytes) "
        "where the plane's components differ in size", NULL},
  {"strides", (getter) Plane_get_strides, NULL, "in bytes", NULL},
  {"typestr", (getter) Plane_get_typestr, NULL, "'|u1', '<u2' or '>u2'",
      NULL},
  {"ptr", (getter) Plane_get_ptr, NULL,
      "the first byte: a device address on the GPU, a host address "
        "otherwise", NULL},
  {"frame", (getter) Plane_get_frame, NULL, "the Frame it is of", NULL},
  {NULL}
};

static PyMemberDef Plane_members[] = {
  {"index", T_UINT, offsetof (Plane, index), READONLY, "plane number"},
  {"itemsize", T_UINT, offsetof (Plane, d.itemsize), READONLY,
      "bytes an element"},
  {NULL}
};

static PyTypeObject PlaneType = {
  PyVarObject_HEAD_INIT (NULL, 0)
      .tp_name = "gpushare._gpushare.Plane",
  .tp_basicsize = sizeof (Plane),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "One plane of a Frame, in place: __cuda_array_interface__ or "
      "__array_interface__, and DLPack.",
  .tp_dealloc = (destructor) Plane_dealloc,
  .tp_methods = Plane_methods,
  .tp_getset = Plane_getset,
  .tp_members = Plane_members,
};

/* ------------------------------------------------------------------------ */

static struct PyModuleDef module = {
  PyModuleDef_HEAD_INIT,
  .m_name = "gpushare._gpushare",
  .m_doc = "gpushare frames as arrays, in place (the core of gpushare)",
  .m_size = -1,
};

PyMODINIT_FUNC PyInit__gpushare (void);

PyMODINIT_FUNC
PyInit__gpushare (void)
{
  PyObject *m;

  if (!pygobject_init (3, 0, 0))
    return NULL;
  if (!gst_is_initialized ())
    gst_init (NULL, NULL);
  if (PyType_Ready (&FrameType) < 0 || PyType_Ready (&PlaneType) < 0)
    return NULL;
  if (!(m = PyModule_Create (&module)))
    return NULL;
  Py_INCREF (&FrameType);
  Py_INCREF (&PlaneType);
  if (PyModule_AddObject (m, "Frame", (PyObject *) & FrameType) < 0
      || PyModule_AddObject (m, "Plane", (PyObject *) & PlaneType) < 0) {
    Py_DECREF (m);
    return NULL;
  }
  return m;
}
