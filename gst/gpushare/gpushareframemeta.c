/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gpushareframemeta.h"
#include "gpusharetext.h"

#include <math.h>
#include <string.h>
#include <gst/video/video.h>
#if HAVE_GST_ANALYTICS
#include <gst/analytics/analytics.h>
#endif

GST_DEBUG_CATEGORY_STATIC (gpushare_frame_meta_debug);
#define GST_CAT_DEFAULT gpushare_frame_meta_debug

/* custom metas a consumer registers for a producer's names, at most: the
 * registry is process-wide and never shrinks */

static void
debug_init (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gpushare_frame_meta_debug, "gpushareframemeta", 0,
        "gpushare metadata on the wire");
    g_once_init_leave (&once, 1);
  }
}

/* bits an element of a GstTensorDataType takes; 0 for a value GStreamer
 * does not define (INT4 .. BFLOAT16, 1.26) */
static guint
tensor_bits (guint32 type)
{
  static const guint8 bits[] = { 4, 8, 16, 32, 64, 4, 8, 16, 32, 64, 16, 32,
    64, 16
  };

  return type < G_N_ELEMENTS (bits) ? bits[type] : 0;
}

/* a tensor's elements counted dim by dim into *elems: FALSE when their
 * product overflows; a dim of 0 (dynamic, as long as the data makes it)
 * sets *dynamic and counts as 1, so that *elems is the least the data of
 * a dynamic tensor holds */
static gboolean
count_elements (guint64 * elems, guint64 dim, gboolean * dynamic)
{
  if (dim == 0) {
    *dynamic = TRUE;
    return TRUE;
  }
  return g_uint64_checked_mul (elems, *elems, dim);
}

/* the bytes elems elements of a data type take, 4-bit types rounded up
 * to a byte; 0 past 32 bits, or for a type GStreamer has not */
static guint64
elements_bytes (guint64 elems, guint32 type)
{
  guint64 bits;

  if (tensor_bits (type) == 0
      || !g_uint64_checked_mul (&bits, elems, tensor_bits (type)))
    return 0;
  bits = bits / 8 + (bits % 8 != 0);
  return bits <= G_MAXUINT32 ? bits : 0;
}

/* ------------------------------------------------------------------------ */
/* writing */

/* where a Writer is: what rewind_to () takes it back to */
typedef struct
{
  gsize data_len;
  /* what of the side memory and of the GPU slots' room was used */
  gsize side_used;
  gsize device_used;
  gboolean overflow;
} Mark;

typedef struct
{
  GpuShareFrameMetas *m;
  Mark entry;                   /* where the open entry starts */
  /* what is being written cannot be: no room for it, or a value the
   * consumer would refuse (gpushare_frame_meta_check_side ()), which must
   * never be sent: a META or a lane entry that does not parse ends the
   * stream there */
  gboolean overflow;
  /* the frame's side memory, or NULL */
  GpuShareMetaSide *side;
} Writer;

static void
put (Writer * w, gconstpointer data, gsize len)
{
  if (w->overflow || len > w->m->capacity - w->m->data_len) {
    w->overflow = TRUE;
    return;
  }
  memcpy (w->m->data + w->m->data_len, data, len);
  w->m->data_len += len;
}

static void
put_u16 (Writer * w, guint16 v)
{
  v = GUINT16_TO_LE (v);
  put (w, &v, 2);
}

static void
put_u32 (Writer * w, guint32 v)
{
  v = GUINT32_TO_LE (v);
  put (w, &v, 4);
}

static void
put_u64 (Writer * w, guint64 v)
{
  v = GUINT64_TO_LE (v);
  put (w, &v, 8);
}

#if HAVE_GST_ANALYTICS
/* a finite float (a model's NaN is not sent) */
static void
put_f32 (Writer * w, gfloat f)
{
  guint32 v;

  if (!isfinite (f)) {
    w->overflow = TRUE;
    return;
  }
  memcpy (&v, &f, 4);
  put_u32 (w, v);
}

/* a count written once what it counts is: at is where put_u32 (w, 0) put
 * its place */
static void
patch_u32 (Writer * w, gsize at, guint32 v)
{
  if (w->overflow)
    return;
  v = GUINT32_TO_LE (v);
  memcpy (w->m->data + at, &v, 4);
}

#endif

static void
put_bytes (Writer * w, gconstpointer data, gsize len)
{
  if (len > G_MAXUINT32) {
    w->overflow = TRUE;
    return;
  }
  put_u32 (w, len);
  put (w, data, len);
}

/* s holds UTF-8 alone: ASCII looked at here, the rest by GLib */
static gboolean
is_utf8 (const gchar * s, gsize len)
{
  gsize i;

  for (i = 0; i < len; i++)
    if ((guchar) s[i] >= 0x80)
      return g_utf8_validate_len (s + i, len - i, NULL);
  return TRUE;
}

/* a string of UTF-8 (a GQuark, a label, may hold any bytes) */
static void
put_str (Writer * w, const gchar * s)
{
  gsize len = s ? strlen (s) : 0;

  if (len > GPUSHARE_META_MAX_STRING || (len && !is_utf8 (s, len))) {
    w->overflow = TRUE;
    return;
  }
  put_bytes (w, s, len);
}

#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
/* Room for a payload of len bytes in the frame's side memory, aligned to
 * 64 bytes; its place written into the entry (GPUSHARE_META_IN_SIDE, the
 * offset, the length).  NULL (nothing written) when there is no side
 * memory or no room left in it: the caller writes the payload inline. */
static guint8 *
put_side (Writer * w, gsize len)
{
  GpuShareMetaSide *side = w->side;
  gsize at;

  /* and room in the entry for where it is */
  if (!side || !side->data || w->overflow || len == 0
      || w->m->capacity - w->m->data_len < 20)
    return NULL;
  at = (side->used + 63) & ~(gsize) 63;
  if (at > side->size || len > side->size - at)
    return NULL;
  side->used = at + len;
  put_u32 (w, GPUSHARE_META_IN_SIDE);
  put_u64 (w, at);
  put_u64 (w, len);
  return side->data + at;
}

/* rows rows of row_bytes, src_stride apart from src_offset on, lie
 * within size bytes */
static gboolean
rows_fit (gsize size, gsize src_offset, gsize src_stride, gsize row_bytes,
    guint rows)
{
  return (guint64) src_offset + (guint64) src_stride *(rows - 1) + row_bytes
      <= size;
}

/* rows rows of row_bytes, src_stride apart, copied to dest packed */
static void
pack_rows (guint8 * dest, const guint8 * src, gsize src_stride,
    gsize row_bytes, guint rows)
{
  guint row;

  if (src_stride == row_bytes) {
    memcpy (dest, src, row_bytes * rows);
    return;
  }
  for (row = 0; row < rows; row++)
    memcpy (dest + (gsize) row * row_bytes, src + (gsize) row * src_stride,
        row_bytes);
}

/* A payload in GPU memory that no GPU slot takes: downloaded into the
 * side memory, where there is room, for consumers of system memory */
static gboolean
put_download (Writer * w, GstBuffer * src, gsize src_offset, gsize src_stride,
    gsize row_bytes, guint rows)
{
  GstMapInfo map;
  guint8 *dest = NULL;

  if (!w->side || !w->side->data || !gst_buffer_map (src, &map, GST_MAP_READ))
    return FALSE;
  if (rows_fit (map.size, src_offset, src_stride, row_bytes, rows))
    dest = put_side (w, (gsize) row_bytes * rows);
  if (dest)
    pack_rows (dest, map.data + src_offset, src_stride, row_bytes, rows);
  gst_buffer_unmap (src, &map);
  return dest != NULL;
}

/* A payload in GPU memory (rows rows of row_bytes, src_stride apart from
 * src_offset on in src's memory) copied on the device, packed, into the
 * room of the frame's GPU slots past the frame, aligned to 256 bytes, and,
 * where a consumer of the frame reads system memory, downloaded into the
 * side memory too; its places written into the entry
 * (GPUSHARE_META_IN_DEVICE, the offset, the length, the offset of the
 * copy).  Without GPU slots that take it, downloaded into the side memory
 * alone (put_download ()).  FALSE (nothing written) when there is no
 * room, or the copy could not be made: the payload does not travel. */
static gboolean
put_device (Writer * w, GstBuffer * src, gsize src_offset, gsize src_stride,
    gsize row_bytes, guint rows)
{
  GpuShareMetaSide *side = w->side;
  guint64 len = (guint64) row_bytes * rows, host_at = G_MAXUINT64;
  gsize at, hat = 0;
  GstMapInfo map;

  if (!side || w->overflow || len == 0 || len >= GPUSHARE_META_IN_SIDE)
    return FALSE;
  if (!side->device_put || side->device_size == 0)
    return put_download (w, src, src_offset, src_stride, row_bytes, rows);
  if (w->m->capacity - w->m->data_len < 28)
    return FALSE;
  at = (side->device_used + 255) & ~(gsize) 255;
  if (at > side->device_size || len > side->device_size - at)
    return FALSE;
  if (side->device_host_copy && side->data) {
    hat = (side->used + 63) & ~(gsize) 63;
    if (hat > side->size || len > side->size - hat)
      return FALSE;
  }
  if (!side->device_put (side->device_user_data, at, src, src_offset,
          src_stride, row_bytes, rows))
    return FALSE;
  side->device_used = at + len;
  /* the download: GPU memory mapped for the host is copied there first */
  if (side->device_host_copy && side->data
      && gst_buffer_map (src, &map, GST_MAP_READ)) {
    if (rows_fit (map.size, src_offset, src_stride, row_bytes, rows)) {
      pack_rows (side->data + hat, map.data + src_offset, src_stride,
          row_bytes, rows);
      side->used = hat + len;
      host_at = hat;
    }
    gst_buffer_unmap (src, &map);
  }
  put_u32 (w, GPUSHARE_META_IN_DEVICE);
  put_u64 (w, at);
  put_u64 (w, len);
  put_u64 (w, host_at);
  return TRUE;
}
#endif

static void
mark (Writer * w, Mark * at)
{
  at->data_len = w->m->data_len;
  at->side_used = w->side ? w->side->used : 0;
  at->device_used = w->side ? w->side->device_used : 0;
  at->overflow = w->overflow;
}

/* what w has written since at taken back, and the side memory and the
 * GPU slots' room to what they had used (a copy queued for what is taken
 * back lands where nobody reads) */
static void
rewind_to (Writer * w, const Mark * at)
{
  w->m->data_len = at->data_len;
  if (w->side) {
    w->side->used = at->side_used;
    w->side->device_used = at->device_used;
  }
  w->overflow = at->overflow;
}

static void
begin (Writer * w, GpuShareMetaKind kind)
{
  mark (w, &w->entry);
  w->overflow = w->m->n_entries >= GPUSHARE_MAX_META_ENTRIES;
  put_u16 (w, kind);
  put_u16 (w, 0);
  put_u32 (w, 0);
}

/* closes the entry: FALSE (and nothing of it left) if it did not fit */
static gboolean
end (Writer * w)
{
  guint32 len;

  if (w->overflow) {
    rewind_to (w, &w->entry);
    w->overflow = FALSE;
    return FALSE;
  }
  len = GUINT32_TO_LE (w->m->data_len - w->entry.data_len -
      GPUSHARE_META_ENTRY_HEADER);
  memcpy (w->m->data + w->entry.data_len + 4, &len, 4);
  w->m->n_entries++;
  return TRUE;
}

static void
put_structure (Writer * w, const GstStructure * s)
{
  gchar *str = gst_structure_to_string (s);

  put_str (w, str);
  g_free (str);
}

typedef struct
{
  Writer w;
  guint n_skipped;
  const gchar *skipped_name;
} Collect;

/* bytes a pixel of a segmentation mask of this format (0: not carried) */
static guint
mask_pixel_bytes (GstVideoFormat format)
{
  switch (format) {
    case GST_VIDEO_FORMAT_GRAY8:
      return 1;
    case GST_VIDEO_FORMAT_GRAY16_LE:
    case GST_VIDEO_FORMAT_GRAY16_BE:
      return 2;
    default:
      return 0;
  }
}

#if HAVE_GST_ANALYTICS

#if GST_CHECK_VERSION(1, 26, 0)
/* tensor data or a mask that may go through the socket: mappable host
 * memory, not a GPU's (whose tensors must not be copied through the CPU) */
static gboolean
host_memory (GstBuffer * data)
{
  guint i, n = gst_buffer_n_memory (data);

  for (i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (data, i);

    if (!gst_memory_is_type (mem, GST_ALLOCATOR_SYSMEM)
        && !gst_memory_is_type (mem, "memfd")
        && !gst_memory_is_type (mem, "fdmem"))
      return FALSE;
  }
  return n > 0;
}

/* a segmentation mtd: where its mask lies, its region ids and the mask
 * itself, its rows packed (GRAY8 or GRAY16 with a GstVideoMeta, all of it
 * where the map says): inline or in the side memory, or, in GPU memory,
 * in the room of the GPU slots past the frame (put_device ()); FALSE when
 * it cannot be written, with what of it was written left for the caller
 * to take back */
static gboolean
write_segmentation (Writer * w, GstAnalyticsMtd * mtd)
{
  gint x = 0, y = 0;
  guint mw = 0, mh = 0, bpp = 0, row;
  gsize i, n = gst_analytics_segmentation_mtd_get_region_count (mtd), len_at;
  GstBuffer *mask = gst_analytics_segmentation_mtd_get_mask (mtd, &x, &y,
      &mw, &mh);
  GstVideoMeta *vm = mask ? gst_buffer_get_video_meta (mask) : NULL;
  guint64 packed = 0;
  GstMapInfo map = GST_MAP_INFO_INIT;
  gboolean ok = FALSE, device = FALSE, mapped = FALSE;
  guint8 *dest;

  if (!vm || n > GPUSHARE_META_MAX_REGIONS || vm->n_planes != 1
      || !(bpp = mask_pixel_bytes (vm->format)) || vm->width == 0
      || vm->height == 0)
    goto out;
  packed = (guint64) vm->width * vm->height * bpp;
  if (vm->stride[0] < 0 || (guint64) vm->stride[0] < (guint64) vm->width * bpp
      || packed > G_MAXUINT32)
    goto out;
  /* GPU memory is not copied through the CPU: it goes in the GPU slots,
   * or not at all */
  device = !host_memory (mask);
  if (device) {
    if (!w->side || !rows_fit (gst_buffer_get_size (mask), vm->offset[0],
            vm->stride[0], (gsize) vm->width * bpp, vm->height))
      goto out;
  } else {
    /* inline, unless the side memory takes it */
    if ((packed + 64 + 4 * n > w->m->capacity - w->m->data_len
            && (!w->side || packed > w->side->size))
        || !gst_buffer_map (mask, &map, GST_MAP_READ))
      goto out;
    mapped = TRUE;
    if (!rows_fit (map.size, vm->offset[0], vm->stride[0],
            (gsize) vm->width * bpp, vm->height))
      goto out;
  }
  put_str (w, "segmentation");
  len_at = w->m->data_len;
  put_u32 (w, 0);
  put_u32 (w, (guint32) x);
  put_u32 (w, (guint32) y);
  put_u32 (w, mw);
  put_u32 (w, mh);
  put_u32 (w, n);
  for (i = 0; i < n; i++)
    put_u32 (w, gst_analytics_segmentation_mtd_get_region_id (mtd, i));
  put_u32 (w, vm->format);
  put_u32 (w, vm->width);
  put_u32 (w, vm->height);
  if (device) {
    if (!put_device (w, mask, vm->offset[0], vm->stride[0],
            (gsize) vm->width * bpp, vm->height))
      goto out;
  } else if ((dest = put_side (w, packed))) {
    /* rows packed, as inline */
    pack_rows (dest, map.data + vm->offset[0], vm->stride[0],
        (gsize) vm->width * bpp, vm->height);
  } else {
    put_u32 (w, (guint32) packed);
    for (row = 0; row < vm->height; row++)
      put (w, map.data + vm->offset[0] + (gsize) row * vm->stride[0],
          vm->width * bpp);
  }
  patch_u32 (w, len_at, w->m->data_len - len_at - 4);
  ok = TRUE;
out:
  if (mapped)
    gst_buffer_unmap (mask, &map);
  if (mask)
    gst_buffer_unref (mask);
  return ok;
}

/* the bytes a tensor's dims and data type make (elements_bytes ()):
 * where a dim is 0 (dynamic, which GStreamer does not check), all of its
 * data, which must hold at least what the other dims make; 0 when they
 * overflow, or for a type GStreamer has not, as the consumer refuses
 * them (read_tensor ()) */
static guint64
tensor_bytes (const GstTensor * t)
{
  guint64 elems = 1, bytes, size;
  gboolean dynamic = FALSE;
  gsize d;

  for (d = 0; d < t->num_dims; d++)
    if (!count_elements (&elems, t->dims[d], &dynamic))
      return 0;
  bytes = elements_bytes (elems, t->data_type);
  if (!dynamic || bytes == 0)
    return bytes;
  size = gst_buffer_get_size (t->data);
  return size >= bytes && size <= G_MAXUINT32 ? size : 0;
}

/* one tensor: its fields and its data (as many bytes as its dims and type
 * make: an allocator may have padded its memory), inline or in the side
 * memory, or, in GPU memory, in the room of the GPU slots past the frame;
 * FALSE when it cannot be written, with what of it was written left for
 * the caller to take back */
static gboolean
put_tensor (Writer * w, const GstTensor * t)
{
  guint64 bytes = t ? tensor_bytes (t) : 0;
  GstMapInfo map;
  guint8 *dest;
  gsize d;

  /* CONTIGUOUS; ROW_MAJOR or COL_MAJOR (an application may set others) */
  if (!t || !t->data || t->num_dims == 0
      || t->num_dims > GPUSHARE_META_MAX_TENSOR_DIMS || bytes == 0
      || gst_buffer_get_size (t->data) < bytes || t->layout != 0
      || t->dims_order > 1)
    return FALSE;
  put_str (w, g_quark_to_string (t->id));
  put_u32 (w, t->layout);
  put_u32 (w, t->data_type);
  put_u32 (w, t->dims_order);
  put_u32 (w, t->num_dims);
  for (d = 0; d < t->num_dims; d++)
    put_u64 (w, t->dims[d]);
  /* on the device, or downloaded */
  if (!host_memory (t->data))
    return put_device (w, t->data, 0, bytes, bytes, 1);
  if (!gst_buffer_map (t->data, &map, GST_MAP_READ))
    return FALSE;
  /* in the side memory where there is room, else inline */
  dest = put_side (w, bytes);
  if (dest)
    memcpy (dest, map.data, bytes);
  else
    put_bytes (w, map.data, bytes);
  gst_buffer_unmap (t->data, &map);
  return TRUE;
}

/* a tensor meta: every tensor (put_tensor ()); all of them or none */
static gboolean
write_tensors (Writer * w, GstTensorMeta * tm)
{
  gsize i;

  if (tm->num_tensors == 0 || tm->num_tensors > GPUSHARE_META_MAX_TENSORS)
    return FALSE;
  begin (w, GPUSHARE_META_TENSORS);
  put_u32 (w, tm->num_tensors);
  for (i = 0; i < tm->num_tensors && !w->overflow; i++)
    if (!put_tensor (w, gst_tensor_meta_get (tm, i)))
      w->overflow = TRUE;
  return end (w);
}

#if GST_CHECK_VERSION(1, 28, 0)
/* a tensor mtd (1.28): its tensor as a tensor meta's (put_tensor ());
 * FALSE when it cannot be written, with what of it was written left for
 * the caller to take back */
static gboolean
write_tensor_mtd (Writer * w, GstAnalyticsMtd * mtd)
{
  gsize len_at;

  put_str (w, "tensor");
  len_at = w->m->data_len;
  put_u32 (w, 0);
  if (!put_tensor (w, gst_analytics_tensor_mtd_get_tensor (mtd)))
    return FALSE;
  patch_u32 (w, len_at, w->m->data_len - len_at - 4);
  return TRUE;
}
#endif
#endif

/* one mtd's body; FALSE for a type this version does not write, or one
 * it cannot write, with what of it was written left for the caller to
 * take back (as where it sets w->overflow) */
static gboolean
write_mtd (Writer * w, GstAnalyticsMtd * mtd, GstAnalyticsMtdType type)
{
  gsize len_at;

  if (type == gst_analytics_od_mtd_get_mtd_type ()) {
    gint x = 0, y = 0, wd = 0, h = 0;
    gfloat conf = 0, r = 0;

#if GST_CHECK_VERSION(1, 26, 0)
    gst_analytics_od_mtd_get_oriented_location (mtd, &x, &y, &wd, &h, &r,
        &conf);
#else
    gst_analytics_od_mtd_get_location (mtd, &x, &y, &wd, &h, &conf);
#endif
    put_str (w, "object-detection");
    len_at = w->m->data_len;
    put_u32 (w, 0);
    put_str (w, g_quark_to_string (gst_analytics_od_mtd_get_obj_type (mtd)));
    put_u32 (w, (guint32) x);
    put_u32 (w, (guint32) y);
    put_u32 (w, (guint32) wd);
    put_u32 (w, (guint32) h);
    put_f32 (w, conf);
    put_f32 (w, r);
  } else if (type == gst_analytics_cls_mtd_get_mtd_type ()) {
    gsize i, n = gst_analytics_cls_mtd_get_length (mtd);

    if (n > GPUSHARE_META_MAX_CLASSES)
      return FALSE;
    put_str (w, "classification");
    len_at = w->m->data_len;
    put_u32 (w, 0);
    put_u32 (w, n);
    for (i = 0; i < n; i++) {
      put_str (w, g_quark_to_string (gst_analytics_cls_mtd_get_quark (mtd, i)));
      put_f32 (w, gst_analytics_cls_mtd_get_level (mtd, i));
    }
  } else if (type == gst_analytics_tracking_mtd_get_mtd_type ()) {
    guint64 id = 0;
    GstClockTime first = 0, last = 0;
    gboolean lost = FALSE;

    gst_analytics_tracking_mtd_get_info (mtd, &id, &first, &last, &lost);
    put_str (w, "object-tracking");
    len_at = w->m->data_len;
    put_u32 (w, 0);
    put_u64 (w, id);
    put_u64 (w, first);
    put_u64 (w, last);
    put_u32 (w, lost ? 1 : 0);
#if GST_CHECK_VERSION(1, 26, 0)
  } else if (type == gst_analytics_segmentation_mtd_get_mtd_type ()) {
    return write_segmentation (w, mtd);
#endif
#if GST_CHECK_VERSION(1, 28, 0)
  } else if (type == gst_analytics_tensor_mtd_get_mtd_type ()) {
    return write_tensor_mtd (w, mtd);
#endif
  } else {
    return FALSE;
  }
  patch_u32 (w, len_at, w->m->data_len - len_at - 4);
  return TRUE;
}

/* GstAnalyticsRelationMeta: its mtds of the types above, in id order, and
 * the relations between them.  *n_skipped and *skipped_name: mtds of
 * other types (segmentation, an application's own), left out with their
 * relations */
static gboolean
write_analytics (Writer * w, GstAnalyticsRelationMeta * rmeta,
    guint * n_skipped, const gchar ** skipped_name)
{
  gsize n = gst_analytics_relation_get_length (rmeta);
  gint index_of[GPUSHARE_META_MAX_MTDS];
  guint i, k = 0, n_rel = 0;
  gsize n_at, rel_at;
  Mark at;

  if (n > GPUSHARE_META_MAX_MTDS)
    return FALSE;
  begin (w, GPUSHARE_META_ANALYTICS);
  n_at = w->m->data_len;
  put_u32 (w, 0);
  for (i = 0; i < n; i++) {
    GstAnalyticsMtd mtd;
    GstAnalyticsMtdType type;

    index_of[i] = -1;
    if (!gst_analytics_relation_meta_get_mtd (rmeta, i,
            GST_ANALYTICS_MTD_TYPE_ANY, &mtd))
      continue;
    type = gst_analytics_mtd_get_mtd_type (&mtd);
    mark (w, &at);
    /* one that cannot be written (no room for its payload, a value the
     * consumer refuses) is left out alone, with its relations */
    if (!write_mtd (w, &mtd, type) || w->overflow != at.overflow) {
      rewind_to (w, &at);
      if ((*n_skipped)++ == 0)
        *skipped_name = gst_analytics_mtd_type_get_name (type);
      continue;
    }
    index_of[i] = k++;
  }
  patch_u32 (w, n_at, k);
  rel_at = w->m->data_len;
  put_u32 (w, 0);
  for (i = 0; i < n && !w->overflow; i++) {
    GstAnalyticsMtd rel;
    gpointer state = NULL;

    if (index_of[i] < 0)
      continue;
    while (gst_analytics_relation_meta_get_direct_related (rmeta, i,
            GST_ANALYTICS_REL_TYPE_ANY, GST_ANALYTICS_MTD_TYPE_ANY, &state,
            &rel)) {
      /* the types the protocol has (the consumer refuses others) */
      guint32 type;

      if (rel.id >= n || index_of[rel.id] < 0)
        continue;
      type = gst_analytics_relation_meta_get_relation (rmeta, i, rel.id) &
          GPUSHARE_META_RELATION_TYPES;
      if (type == 0)
        continue;
      if (++n_rel > GPUSHARE_META_MAX_RELATIONS) {
        w->overflow = TRUE;
        break;
      }
      put_u32 (w, index_of[i]);
      put_u32 (w, index_of[rel.id]);
      put_u32 (w, type);
    }
  }
  patch_u32 (w, rel_at, n_rel);
  return end (w);
}

#endif

static gboolean
write_meta (Writer * w, GstMeta * meta)
{
  GType api = meta->info->api;
  guint i;

  if (api == GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE) {
    GstVideoRegionOfInterestMeta *r = (GstVideoRegionOfInterestMeta *) meta;
    guint n = MIN (g_list_length (r->params), GPUSHARE_META_MAX_ROI_PARAMS);
    GList *l;

    begin (w, GPUSHARE_META_ROI);
    put_u32 (w, r->id);
    put_u32 (w, (guint32) r->parent_id);
    put_u32 (w, r->x);
    put_u32 (w, r->y);
    put_u32 (w, r->w);
    put_u32 (w, r->h);
    put_str (w, g_quark_to_string (r->roi_type));
    put_u32 (w, n);
    for (l = r->params, i = 0; l && i < n; l = l->next, i++)
      put_structure (w, l->data);
    return end (w);
  }
  if (api == GST_REFERENCE_TIMESTAMP_META_API_TYPE) {
    GstReferenceTimestampMeta *t = (GstReferenceTimestampMeta *) meta;
    gchar *caps = t->reference ? gst_caps_to_string (t->reference) : NULL;

    begin (w, GPUSHARE_META_REFERENCE_TIMESTAMP);
    put_str (w, caps);
    put_u64 (w, t->timestamp);
    put_u64 (w, t->duration);
    g_free (caps);
    return end (w);
  }
  if (api == GST_VIDEO_TIME_CODE_META_API_TYPE) {
    GstVideoTimeCode *tc = &((GstVideoTimeCodeMeta *) meta)->tc;

    begin (w, GPUSHARE_META_TIMECODE);
    put_u32 (w, tc->config.fps_n);
    put_u32 (w, tc->config.fps_d);
    put_u32 (w, tc->config.flags);
    put_u32 (w, tc->hours);
    put_u32 (w, tc->minutes);
    put_u32 (w, tc->seconds);
    put_u32 (w, tc->frames);
    put_u32 (w, tc->field_count);
    return end (w);
  }
  if (api == GST_VIDEO_CAPTION_META_API_TYPE) {
    GstVideoCaptionMeta *c = (GstVideoCaptionMeta *) meta;

    begin (w, GPUSHARE_META_CAPTION);
    put_u32 (w, c->caption_type);
    put_bytes (w, c->data, c->size);
    return end (w);
  }
  if (api == GST_VIDEO_AFD_META_API_TYPE) {
    GstVideoAFDMeta *a = (GstVideoAFDMeta *) meta;

    begin (w, GPUSHARE_META_AFD);
    put_u32 (w, a->field);
    put_u32 (w, a->spec);
    put_u32 (w, a->afd);
    return end (w);
  }
  if (api == GST_VIDEO_BAR_META_API_TYPE) {
    GstVideoBarMeta *b = (GstVideoBarMeta *) meta;

    begin (w, GPUSHARE_META_BAR);
    put_u32 (w, b->field);
    put_u32 (w, b->is_letterbox);
    put_u32 (w, b->bar_data1);
    put_u32 (w, b->bar_data2);
    return end (w);
  }
  if (gst_meta_info_is_custom (meta->info)) {
    const GstStructure *s =
        gst_custom_meta_get_structure ((GstCustomMeta *) meta);

    begin (w, GPUSHARE_META_CUSTOM);
    put_str (w, g_type_name (meta->info->type));
    put_structure (w, s);
    return end (w);
  }
#if GST_CHECK_VERSION(1, 24, 0)
  if (meta->info->serialize_func) {
    GByteArray *bytes = g_byte_array_new ();
    gboolean ok = gst_meta_serialize_simple (meta, bytes);

    if (ok) {
      begin (w, GPUSHARE_META_SERIALIZED);
      put (w, bytes->data, bytes->len);
      ok = end (w);
    }
    g_byte_array_unref (bytes);
    return ok;
  }
#endif
  return FALSE;
}

static gboolean
collect_one (GstBuffer * buf, GstMeta ** meta, gpointer data)
{
  Collect *c = data;
  GType api = (*meta)->info->api;

  /* the layout carries it */
  if (api == GST_VIDEO_META_API_TYPE)
    return TRUE;
  /* a reference that keeps a buffer of this process alive as long as
   * this one (imagefreeze's output from 1.26 on): the consumer's frame is
   * kept by its slot, and there is nothing to carry, nor to count */
  if (api == GST_PARENT_BUFFER_META_API_TYPE)
    return TRUE;
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
  if (api == GST_TENSOR_META_API_TYPE) {
    if (!write_tensors (&c->w, (GstTensorMeta *) * meta)
        && c->n_skipped++ == 0)
      c->skipped_name = g_type_name ((*meta)->info->type);
    return TRUE;
  }
#endif
#if HAVE_GST_ANALYTICS
  if (api == GST_ANALYTICS_RELATION_META_API_TYPE) {
    guint skipped = 0;
    const gchar *name = NULL;

    if (!write_analytics (&c->w, (GstAnalyticsRelationMeta *) * meta,
            &skipped, &name)) {
      /* the whole meta, not also the mtds it would have left out */
      skipped = 1;
      name = g_type_name ((*meta)->info->type);
    }
    if (skipped && c->n_skipped == 0)
      c->skipped_name = name;
    c->n_skipped += skipped;
    return TRUE;
  }
#endif
  if (!write_meta (&c->w, *meta)) {
    if (c->n_skipped++ == 0)
      c->skipped_name = g_type_name ((*meta)->info->type);
  }
  return TRUE;
}

gboolean
gpushare_frame_meta_collect (GstBuffer * buf, GpuShareFrameMetas * m,
    guint * n_skipped, const gchar ** skipped_name)
{
  return gpushare_frame_meta_collect_side (buf, m, NULL, n_skipped,
      skipped_name);
}

gboolean
gpushare_frame_meta_collect_side (GstBuffer * buf, GpuShareFrameMetas * m,
    GpuShareMetaSide * side, guint * n_skipped, const gchar ** skipped_name)
{
  Collect c = { {.m = m,.side = side}, 0, NULL };

  debug_init ();
  m->n_entries = 0;
  m->data_len = 0;
  m->side_len = 0;
  m->device_len = 0;
  if (side) {
    side->used = 0;
    side->device_used = 0;
  }
  gst_buffer_foreach_meta (buf, collect_one, &c);
  /* what the entries kept took of it (end () gave back a dropped one's) */
  m->side_len = side ? side->used : 0;
  m->device_len = side ? side->device_used : 0;
  if (n_skipped)
    *n_skipped = c.n_skipped;
  if (skipped_name)
    *skipped_name = c.skipped_name;
  return m->n_entries > 0;
}

#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
/* a memory of buf is one that is_device says is GPU memory */
static gboolean
in_memory_of (GstBuffer * buf, gboolean (*is_device) (GstMemory * mem))
{
  guint i;

  for (i = 0; i < gst_buffer_n_memory (buf); i++)
    if (is_device (gst_buffer_peek_memory (buf, i)))
      return TRUE;
  return FALSE;
}
#endif

gboolean
gpushare_frame_meta_has_device_payloads (GstBuffer * buf,
    gboolean (*is_device) (GstMemory * mem))
{
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  GstTensorMeta *tm = gst_buffer_get_tensor_meta (buf);
  gsize i;

  if (rmeta) {
    GstAnalyticsMtdType type = gst_analytics_segmentation_mtd_get_mtd_type ();
    GstAnalyticsMtd mtd;
    gpointer state = NULL;

    while (gst_analytics_relation_meta_iterate (rmeta, &state, type, &mtd)) {
      gint x, y;
      guint mw, mh;
      GstBuffer *mask = gst_analytics_segmentation_mtd_get_mask (&mtd, &x, &y,
          &mw, &mh);
      gboolean device = mask && in_memory_of (mask, is_device);

      if (mask)
        gst_buffer_unref (mask);
      if (device)
        return TRUE;
    }
#if GST_CHECK_VERSION(1, 28, 0)
    state = NULL;
    while (gst_analytics_relation_meta_iterate (rmeta, &state,
            gst_analytics_tensor_mtd_get_mtd_type (), &mtd)) {
      const GstTensor *t = gst_analytics_tensor_mtd_get_tensor (&mtd);

      if (t && t->data && in_memory_of (t->data, is_device))
        return TRUE;
    }
#endif
  }
  for (i = 0; tm && i < tm->num_tensors; i++) {
    const GstTensor *t = gst_tensor_meta_get (tm, i);

    if (t && t->data && in_memory_of (t->data, is_device))
      return TRUE;
  }
#else
  (void) buf;
  (void) is_device;
#endif
  return FALSE;
}

/* ------------------------------------------------------------------------ */
/* reading */

typedef struct
{
  const guint8 *p;
  gsize len;
  gsize at;
  const gchar *bad;             /* what did not parse */
  /* the frame's side memory (its data NULL while only checking), or NULL:
   * none, and a payload said to be there does not parse */
  const GpuShareMetaSide *side;
  /* while a frame's metas are checked: the bytes of their payloads so
   * far, in the side memory [0] and in GPU memory [1]; NULL otherwise */
  guint64 *taken;
} Reader;

static gboolean
take (Reader * r, gpointer out, gsize n, const gchar * what)
{
  if (r->bad)
    return FALSE;
  if (n > r->len - r->at) {
    r->bad = what;
    return FALSE;
  }
  if (out)
    memcpy (out, r->p + r->at, n);
  r->at += n;
  return TRUE;
}

static guint32
get_u32 (Reader * r, const gchar * what)
{
  guint32 v = 0;

  take (r, &v, 4, what);
  return GUINT32_FROM_LE (v);
}

static guint64
get_u64 (Reader * r, const gchar * what)
{
  guint64 v = 0;

  take (r, &v, 8, what);
  return GUINT64_FROM_LE (v);
}

/* a finite IEEE float (a confidence, an angle): NaN and infinities are a
 * peer's garbage */
static gfloat
get_f32 (Reader * r, const gchar * what)
{
  guint32 v = get_u32 (r, what);
  gfloat f;

  memcpy (&f, &v, 4);
  if (!r->bad && !isfinite (f))
    r->bad = what;
  return r->bad ? 0 : f;
}

/* a byte string: a pointer into the message */
static const guint8 *
get_bytes (Reader * r, guint32 * len, const gchar * what)
{
  const guint8 *p;

  *len = get_u32 (r, what);
  if (r->bad)
    return NULL;
  p = r->p + r->at;
  if (!take (r, NULL, *len, what))
    return NULL;
  return p;
}

typedef enum
{
  PAYLOAD_INLINE,
  PAYLOAD_SIDE,
  PAYLOAD_DEVICE,
} PayloadWhere;

/* where a payload lies, and a pointer to its bytes where the host reads
 * them (inline, in the side memory, the side memory's copy of one in GPU
 * memory; NULL while only checking, or for one in GPU memory alone) */
typedef struct
{
  PayloadWhere where;
  const guint8 *p;
  guint32 len;
  gboolean host_copy;           /* in GPU memory, a copy in the side memory */
  guint64 device_at;            /* in GPU memory: its offset in the room */
} Payload;

/* A payload (a mask's pixels, a tensor's data): inline, a byte string; in
 * the frame's side memory (GPUSHARE_META_IN_SIDE, its offset and length),
 * all of it inside the region of the frame's slot; or in GPU memory
 * (GPUSHARE_META_IN_DEVICE, its offset in the room of the frame's GPU
 * slot past the frame and its length, all of it inside that room where
 * this consumer reads GPU memory, then the offset of its copy in the side
 * memory, inside that region, or G_MAXUINT64).  FALSE when it does not
 * parse. */
static gboolean
get_payload (Reader * r, Payload * pl, const gchar * what)
{
  guint32 n = get_u32 (r, what);
  const GpuShareMetaSide *side = r->side;
  guint64 at, plen, host_at = G_MAXUINT64;

  memset (pl, 0, sizeof (*pl));
  if (r->bad)
    return FALSE;
  if (n != GPUSHARE_META_IN_SIDE && n != GPUSHARE_META_IN_DEVICE) {
    pl->len = n;
    pl->p = r->p + r->at;
    return take (r, NULL, n, what);
  }
  at = get_u64 (r, what);
  plen = get_u64 (r, what);
  if (n == GPUSHARE_META_IN_DEVICE) {
    host_at = get_u64 (r, what);
    if (!r->bad && (plen == 0 || plen >= GPUSHARE_META_IN_SIDE
            || (side && side->device_size && (at > side->device_size
                    || plen > side->device_size - at))))
      r->bad = what;
    pl->where = PAYLOAD_DEVICE;
    pl->device_at = at;
    pl->host_copy = host_at != G_MAXUINT64;
    /* its copy, where there is one, lies where one in the side memory
     * does */
    at = host_at;
  } else {
    pl->where = PAYLOAD_SIDE;
  }
  if (!r->bad && (n == GPUSHARE_META_IN_SIDE || pl->host_copy)
      && (!side || side->size == 0 || plen == 0
          || plen >= GPUSHARE_META_IN_SIDE || at > side->size
          || plen > side->size - at))
    r->bad = what;
  /* each payload lies in a place of its own: together they are no larger
   * than the memory they lie in (a thousand payloads that each said all
   * of the region were a thousand copies of it where the frame was not
   * held, and as many GPU allocations) */
  if (!r->bad && r->taken) {
    if (n == GPUSHARE_META_IN_SIDE || pl->host_copy) {
      r->taken[0] += plen;
      if (r->taken[0] > side->size)
        r->bad = what;
    }
    if (n == GPUSHARE_META_IN_DEVICE) {
      r->taken[1] += plen;
      if (side && side->device_size && r->taken[1] > side->device_size)
        r->bad = what;
    }
  }
  if (r->bad)
    return FALSE;
  pl->len = (guint32) plen;
  if ((n == GPUSHARE_META_IN_SIDE || pl->host_copy) && side->data)
    pl->p = side->data + at;
  return TRUE;
}

#if HAVE_GST_ANALYTICS
/* a consumer's buffer of a payload (rows rows of row_bytes, of format for
 * a mask): in GPU memory, where this consumer reads it, in place or
 * copied, as the transfer can; otherwise the side memory in place,
 * keeping what holds it, where it may; otherwise a copy.  NULL: it cannot
 * be read here (in GPU memory alone, to a consumer of system memory) */
static GstBuffer *
payload_buffer (const Reader * r, const Payload * pl, GstVideoFormat format,
    gsize row_bytes, guint rows)
{
  const GpuShareMetaSide *side = r->side;
  GstBuffer *buf;

  if (pl->where == PAYLOAD_DEVICE && side && side->device_get
      && side->device_size) {
    buf = side->device_get (side->device_user_data, pl->device_at, format,
        row_bytes, rows);
    if (buf)
      return buf;
  }
  if (!pl->p)
    return NULL;
  if (pl->where != PAYLOAD_INLINE && side->hold)
    return gst_buffer_new_wrapped_full (GST_MEMORY_FLAG_READONLY,
        (gpointer) pl->p, pl->len, 0, pl->len, side->ref_func (side->hold),
        side->unref_func);
  return gst_buffer_new_memdup (pl->p, pl->len);
}
#endif

/* a string, copied and NUL-terminated; NULL when it does not parse */
static gchar *
get_str (Reader * r, const gchar * what)
{
  guint32 len;
  const guint8 *p = get_bytes (r, &len, what);

  if (!p)
    return NULL;
  if (len > GPUSHARE_META_MAX_STRING
      || !g_utf8_validate_len ((const gchar *) p, len, NULL)) {
    r->bad = what;
    return NULL;
  }
  return g_strndup ((const gchar *) p, len);
}

typedef struct
{
  guint kind;
  Reader body;
} Entry;

/* the entries of metas whose chain was checked */
static gboolean
next_entry (const GpuShareFrameMetas * m, const GpuShareMetaSide * side,
    gsize * at, Entry * e)
{
  guint16 kind;
  guint32 len;

  if (*at + GPUSHARE_META_ENTRY_HEADER > m->data_len)
    return FALSE;
  memcpy (&kind, m->data + *at, 2);
  memcpy (&len, m->data + *at + 4, 4);
  e->kind = GUINT16_FROM_LE (kind);
  len = GUINT32_FROM_LE (len);
  *at += GPUSHARE_META_ENTRY_HEADER;
  if (len > m->data_len - *at)
    return FALSE;
  e->body.p = m->data + *at;
  e->body.len = len;
  e->body.at = 0;
  e->body.bad = NULL;
  e->body.side = side;
  e->body.taken = NULL;
  *at += len;
  return TRUE;
}

/* The body of one entry, read in full: into the fields given (each may be
 * NULL when only checking).  Strings are returned allocated. */
typedef struct
{
  guint32 u[8];
  guint64 t[2];
  gchar *str[2];
  const guint8 *bytes;
  guint32 n_bytes;
  gchar *params[GPUSHARE_META_MAX_ROI_PARAMS];
  guint n_params;
} Body;

static void
body_clear (Body * b)
{
  guint i;

  g_free (b->str[0]);
  g_free (b->str[1]);
  for (i = 0; i < b->n_params; i++)
    g_free (b->params[i]);
  memset (b, 0, sizeof (*b));
}

/* ------------------------------------------------------------------------ */
/* analytics (GPUSHARE_META_ANALYTICS) */

/* a label of a peer's (an analytics label, a region of interest's type)
 * as a quark: one the process has, or a new one while the process has made
 * fewer than GPUSHARE_META_MAX_PEER_QUARKS for peers (quarks live as long
 * as the process); 0 past that */
static GQuark
peer_quark (const gchar * label)
{
  static gint made = 0;
  GQuark q = g_quark_try_string (label);

  if (q)
    return q;
  if (g_atomic_int_add (&made, 1) >= GPUSHARE_META_MAX_PEER_QUARKS)
    return 0;
  return g_quark_from_string (label);
}

/* The strings of one analytics entry (mtd types, labels, classes): a
 * detector's hundred detections repeat a handful, so each distinct one is
 * checked, copied and made a quark of once an entry, not once a use.  The
 * first LABELS_LOOKED_UP are looked up; the rest are kept until the entry
 * is read (a peer's, bounded by the entry's own size). */
#define LABELS_LOOKED_UP 16

typedef struct
{
  guint32 len;
  const guint8 *bytes;          /* in the entry */
  gchar *str;
  GQuark quark;                 /* 0: not yet asked for */
} Label;

typedef struct
{
  GArray *all;                  /* Label */
} Labels;

static void
labels_clear (Labels * l)
{
  guint i;

  if (!l->all)
    return;
  for (i = 0; i < l->all->len; i++)
    g_free (g_array_index (l->all, Label, i).str);
  g_array_free (l->all, TRUE);
  l->all = NULL;
}

/* a string of the entry, as get_str () checks it: its index in l, or -1
 * when it does not parse */
static gint
get_label (Reader * r, Labels * l, const gchar * what)
{
  guint32 len;
  const guint8 *p = get_bytes (r, &len, what);
  Label label = { 0, };
  guint i;

  if (!p)
    return -1;
  if (!l->all)
    l->all = g_array_new (FALSE, FALSE, sizeof (Label));
  for (i = 0; i < MIN (l->all->len, LABELS_LOOKED_UP); i++) {
    Label *e = &g_array_index (l->all, Label, i);

    if (e->len == len && memcmp (e->bytes, p, len) == 0)
      return (gint) i;
  }
  if (len > GPUSHARE_META_MAX_STRING
      || !g_utf8_validate_len ((const gchar *) p, len, NULL)) {
    r->bad = what;
    return -1;
  }
  label.len = len;
  label.bytes = p;
  label.str = g_strndup ((const gchar *) p, len);
  g_array_append_val (l->all, label);
  return (gint) l->all->len - 1;
}

static const gchar *
label_str (Labels * l, gint i)
{
  return g_array_index (l->all, Label, i).str;
}

#if HAVE_GST_ANALYTICS
static GQuark
label_quark (Labels * l, gint i)
{
  Label *e = &g_array_index (l->all, Label, i);

  if (!e->quark)
    e->quark = peer_quark (e->str);
  return e->quark;
}
#endif

/* A tensor's fields as read, every one checked; id to be freed */
typedef struct
{
  gchar *id;
  guint32 type;
  guint32 order;
  guint32 n_dims;
  guint64 dims[GPUSHARE_META_MAX_TENSOR_DIMS];
  Payload data;
} TensorFields;

/* one tensor (a tensor meta's, or a tensor mtd's) read through into *t,
 * every field checked: a data length that is not what the dims and the
 * type make (with a dynamic dim, less) is refused */
static void
read_tensor (Reader * r, TensorFields * t)
{
  guint32 layout;
  guint64 elems = 1, bytes = 0;
  gboolean dynamic = FALSE;
  guint d;

  t->id = get_str (r, "tensor id");
  layout = get_u32 (r, "tensor layout");
  t->type = get_u32 (r, "tensor data type");
  t->order = get_u32 (r, "tensor dims order");
  t->n_dims = get_u32 (r, "tensor dims count");
  /* CONTIGUOUS; ROW_MAJOR or COL_MAJOR */
  if (!r->bad && (layout != 0 || t->order > 1))
    r->bad = "tensor layout";
  if (!r->bad && tensor_bits (t->type) == 0)
    r->bad = "tensor data type";
  if (!r->bad && (t->n_dims == 0 || t->n_dims > GPUSHARE_META_MAX_TENSOR_DIMS))
    r->bad = "tensor dims count";
  for (d = 0; d < t->n_dims && !r->bad; d++) {
    t->dims[d] = get_u64 (r, "tensor dims");
    if (!r->bad && !count_elements (&elems, t->dims[d], &dynamic))
      r->bad = "tensor dims";
  }
  if (!r->bad && (bytes = elements_bytes (elems, t->type)) == 0)
    r->bad = "tensor dims";
  get_payload (r, &t->data, "tensor data");
  /* a dynamic dim's data is as long as it is, at least what the other
   * dims make: a downstream that trusts them reads no further */
  if (!r->bad && (dynamic ? t->data.len < bytes : t->data.len != bytes))
    r->bad = "tensor data";
}

#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
/* the tensor t read from r, its data read in place or copied (NULL: a
 * label the process would not make a quark of, or data that cannot be
 * read here) */
static GstTensor *
make_tensor (const Reader * r, const TensorFields * t)
{
  GQuark q = peer_quark (t->id);
  GstBuffer *data = q ? payload_buffer (r, &t->data, GST_VIDEO_FORMAT_UNKNOWN,
      t->data.len, 1) : NULL;
  gsize dims[GPUSHARE_META_MAX_TENSOR_DIMS];
  GstTensor *tensor;
  guint d;

  if (!data)
    return NULL;
  for (d = 0; d < t->n_dims; d++)
    dims[d] = t->dims[d];
  tensor = gst_tensor_new_simple (q, t->type, data, t->order, t->n_dims, dims);
  /* one GStreamer refuses does not take the data */
  if (!tensor)
    gst_buffer_unref (data);
  return tensor;
}
#endif

/* One analytics entry read through, every field checked; with rmeta (a
 * GstAnalyticsRelationMeta), its mtds and relations added there as they
 * are read.  An mtd of a type this version does not know, or whose label
 * the process would not make a quark of, is left out with its relations
 * and counted in *n_left_out. */
static void
read_analytics (Reader * r, gpointer rmeta, guint * n_left_out)
{
  gint new_id[GPUSHARE_META_MAX_MTDS];
  guint i, n, n_rel;
  Labels labels = { NULL };

  n = get_u32 (r, "analytics mtd count");
  if (!r->bad && n > GPUSHARE_META_MAX_MTDS)
    r->bad = "analytics mtd count";
  for (i = 0; i < n && !r->bad; i++) {
    gint type_at = get_label (r, &labels, "analytics mtd type");
    const gchar *type = type_at >= 0 ? label_str (&labels, type_at) : NULL;
    guint32 len = get_u32 (r, "analytics mtd length");
    Reader b = { NULL, 0, 0, NULL, r->side, r->taken };
    gboolean added = FALSE;

    new_id[i] = -1;
    if (!r->bad) {
      b.p = r->p + r->at;
      b.len = len;
      take (r, NULL, len, "analytics mtd length");
    }
    if (r->bad)
      break;
    if (g_str_equal (type, "object-detection")) {
      gint label = get_label (&b, &labels, "object detection type");
      gint32 v[4];
      gfloat conf, rot;
      guint j;

      for (j = 0; j < 4; j++)
        v[j] = (gint32) get_u32 (&b, "object detection location");
      conf = get_f32 (&b, "object detection confidence");
      rot = get_f32 (&b, "object detection rotation");
#if HAVE_GST_ANALYTICS
      if (!b.bad && rmeta) {
        GQuark q = label_quark (&labels, label);
        GstAnalyticsODMtd mtd;

#if GST_CHECK_VERSION(1, 26, 0)
        added = q && gst_analytics_relation_meta_add_oriented_od_mtd (rmeta,
            q, v[0], v[1], v[2], v[3], rot, conf, &mtd);
#else
        added = q && rot == 0 && gst_analytics_relation_meta_add_od_mtd
            (rmeta, q, v[0], v[1], v[2], v[3], conf, &mtd);
#endif
        if (added)
          new_id[i] = mtd.id;
      }
#else
      (void) v;
      (void) conf;
      (void) rot;
      (void) label;
#endif
    } else if (g_str_equal (type, "classification")) {
      gint classes[GPUSHARE_META_MAX_CLASSES];
      gfloat levels[GPUSHARE_META_MAX_CLASSES];
      guint j, k = get_u32 (&b, "classification count");

      if (!b.bad && k > GPUSHARE_META_MAX_CLASSES)
        b.bad = "classification count";
      for (j = 0; j < k && !b.bad; j++) {
        classes[j] = get_label (&b, &labels, "classification class");
        levels[j] = get_f32 (&b, "classification confidence");
      }
#if HAVE_GST_ANALYTICS
      if (!b.bad && rmeta && k > 0) {
        GQuark quarks[GPUSHARE_META_MAX_CLASSES];
        GstAnalyticsClsMtd mtd;

        added = TRUE;
        for (guint q = 0; q < k; q++)
          added = added && (quarks[q] = label_quark (&labels, classes[q])) != 0;
        added = added && gst_analytics_relation_meta_add_cls_mtd (rmeta, k,
            levels, quarks, &mtd);
        if (added)
          new_id[i] = mtd.id;
      }
#else
      (void) levels;
      (void) classes;
#endif
    } else if (g_str_equal (type, "object-tracking")) {
      guint64 id = get_u64 (&b, "tracking id");
      guint64 first = get_u64 (&b, "tracking first seen");
      guint64 last = get_u64 (&b, "tracking last seen");
      guint32 lost = get_u32 (&b, "tracking lost");

      if (!b.bad && lost > 1)
        b.bad = "tracking lost";
#if HAVE_GST_ANALYTICS
      if (!b.bad && rmeta) {
        GstAnalyticsTrackingMtd mtd;

        added = gst_analytics_relation_meta_add_tracking_mtd (rmeta, id,
            first, &mtd)
            && gst_analytics_tracking_mtd_update_last_seen (&mtd, last)
            && (!lost || gst_analytics_tracking_mtd_set_lost (&mtd));
        if (added)
          new_id[i] = mtd.id;
      }
#else
      (void) id;
      (void) first;
      (void) last;
#endif
    } else if (g_str_equal (type, "segmentation")) {
      guint32 ids[GPUSHARE_META_MAX_REGIONS], k, j, format, width, height;
      gint32 x = (gint32) get_u32 (&b, "segmentation location");
      gint32 y = (gint32) get_u32 (&b, "segmentation location");
      guint32 mw = get_u32 (&b, "segmentation location");
      guint32 mh = get_u32 (&b, "segmentation location");
      guint32 bpp;
      guint64 bytes = 0;
      Payload pl;

      k = get_u32 (&b, "segmentation region count");
      if (!b.bad && k > GPUSHARE_META_MAX_REGIONS)
        b.bad = "segmentation region count";
      for (j = 0; j < k && !b.bad; j++)
        ids[j] = get_u32 (&b, "segmentation region id");
      format = get_u32 (&b, "segmentation mask format");
      width = get_u32 (&b, "segmentation mask size");
      height = get_u32 (&b, "segmentation mask size");
      bpp = mask_pixel_bytes ((GstVideoFormat) format);
      if (!b.bad && !bpp)
        b.bad = "segmentation mask format";
      /* the bytes the mask's size makes, and no other count, before
       * anything is allocated for it; a row a stride holds, and no size
       * whose bytes wrap */
      get_payload (&b, &pl, "segmentation mask");
      if (!b.bad && (width == 0 || height == 0 || height > G_MAXINT
              || (guint64) width * bpp > G_MAXINT
              || !g_uint64_checked_mul (&bytes, (guint64) width * bpp, height)
              || bytes != pl.len))
        b.bad = "segmentation mask size";
#if GST_CHECK_VERSION(1, 26, 0)
      if (!b.bad && rmeta) {
        GstBuffer *mask = payload_buffer (&b, &pl, (GstVideoFormat) format,
            (gsize) width * bpp, height);
        gsize offset[GST_VIDEO_MAX_PLANES] = { 0, };
        gint stride[GST_VIDEO_MAX_PLANES] = { (gint) (width * bpp), };
        GstAnalyticsSegmentationMtd mtd;

        /* its rows as they came, packed: not GStreamer's default stride,
         * which rounds a row up to 4 bytes (GPU memory copied here says
         * its own) */
        if (mask && !gst_buffer_get_video_meta (mask))
          gst_buffer_add_video_meta_full (mask, GST_VIDEO_FRAME_FLAG_NONE,
              (GstVideoFormat) format, width, height, 1, offset, stride);
        /* its type, which GStreamer gives no way to read, is not carried */
        added = mask && gst_analytics_relation_meta_add_segmentation_mtd (rmeta,
            mask, GST_SEGMENTATION_TYPE_SEMANTIC, k, ids, x, y, mw, mh, &mtd);
        if (added)
          new_id[i] = mtd.id;
        else if (mask)
          gst_buffer_unref (mask);
      }
#else
      (void) ids;
      (void) x;
      (void) y;
      (void) mw;
      (void) mh;
#endif
    } else if (g_str_equal (type, "tensor")) {
      TensorFields t;

      read_tensor (&b, &t);
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 28, 0)
      if (!b.bad && rmeta) {
        GstTensor *made = make_tensor (&b, &t);
        GstAnalyticsTensorMtd mtd;

        /* the mtd's own tensor takes the fields and the data */
        added = made && gst_analytics_relation_meta_add_tensor_mtd (rmeta,
            made->num_dims, &mtd);
        if (added) {
          GstTensor *to = gst_analytics_tensor_mtd_get_tensor (&mtd);

          memcpy (to, made, sizeof (GstTensor) + made->num_dims *
              sizeof (made->dims[0]));
          made->data = NULL;
          new_id[i] = mtd.id;
        }
        if (made)
          gst_tensor_free (made);
      }
#endif
      g_free (t.id);
    }
    /* a newer producer may add fields at the end of a body: not read */
    if (b.bad)
      r->bad = b.bad;
    else if (rmeta && !added)
      (*n_left_out)++;
  }
  labels_clear (&labels);
  n_rel = get_u32 (r, "analytics relation count");
  if (!r->bad && n_rel > GPUSHARE_META_MAX_RELATIONS)
    r->bad = "analytics relation count";
  for (i = 0; i < n_rel && !r->bad; i++) {
    guint32 a = get_u32 (r, "analytics relation");
    guint32 b = get_u32 (r, "analytics relation");
    guint32 t = get_u32 (r, "analytics relation type");

    /* IS_PART_OF, CONTAIN, RELATE_TO and (1.26) N_TO_N, one or more */
    if (!r->bad && (a >= n || b >= n || t == 0
            || (t & ~GPUSHARE_META_RELATION_TYPES) != 0))
      r->bad = "analytics relation";
#if HAVE_GST_ANALYTICS
#if !GST_CHECK_VERSION(1, 26, 0)
    /* N_TO_N is 1.26's: GStreamer 1.24 refuses it with a CRITICAL, so a
     * relation of a newer producer keeps its other types, or is left out */
    t &= ~(1u << 4);
#endif
    if (!r->bad && rmeta && t && new_id[a] >= 0 && new_id[b] >= 0)
      gst_analytics_relation_meta_set_relation (rmeta, t, new_id[a], new_id[b]);
#else
    (void) new_id;
#endif
  }
}

/* One tensors entry read through, every field checked; with tm (a
 * GstTensorMeta), its tensors set there.  FALSE when the meta is left
 * out (a label the process would not make a quark of). */
static gboolean
read_tensors (Reader * r, gpointer tm)
{
  gpointer tensors[GPUSHARE_META_MAX_TENSORS];
  guint i, n, k = 0;
  gboolean ok = TRUE;

  n = get_u32 (r, "tensor count");
  if (!r->bad && (n == 0 || n > GPUSHARE_META_MAX_TENSORS))
    r->bad = "tensor count";
  for (i = 0; i < n && !r->bad; i++) {
    TensorFields t;

    read_tensor (r, &t);
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
    if (!r->bad && tm && ok) {
      /* one that cannot be read here: the meta is left out */
      tensors[k] = make_tensor (r, &t);
      ok = tensors[k] != NULL;
      k += ok;
    }
#else
    (void) tensors;
#endif
    g_free (t.id);
  }
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
  if (tm && !r->bad && ok && k == n) {
    GstTensor **array = g_new (GstTensor *, n);

    memcpy (array, tensors, n * sizeof (GstTensor *));
    /* the meta takes the array and the tensors */
    gst_tensor_meta_set (tm, n, array);
    return TRUE;
  }
  for (i = 0; i < k; i++)
    gst_tensor_free (tensors[i]);
#else
  (void) k;
  (void) ok;
#endif
  return FALSE;
}

/* The metas of kind 8 that GStreamer's own deserializers would be handed
 * with what they trust unchecked (a reference timestamp of
 * GST_CLOCK_TIME_NONE, caps or a structure that do not parse, a video
 * meta's format and planes): each has a kind of its own, with its checks,
 * or is never carried (a GstVideoMeta: the slot's layout stands for it),
 * so a producer has no business sending them as kind 8 */
static const gchar *const serialized_refused[] = {
  "GstVideoMeta", "GstReferenceTimestampMeta",
};

/* kind 8, the bytes of gst_meta_serialize (): its header, read here with
 * no sum that can wrap (gst_meta_deserialize () adds the name's length to
 * 10 in 32 bits, then reads where that says: a length near 2^32 had it
 * read far past the entry), exactly the entry's bytes, a name of printable
 * ASCII ended by its NUL, and a meta that has no kind of its own */
static void
read_serialized (Reader * r)
{
  const guint8 *p = r->p;
  guint32 total, name_len;
  const GstMetaInfo *info;
  const gchar *name;
  guint i;

  if (r->len < 10) {
    r->bad = "serialized meta header";
    return;
  }
  /* the entry's bytes lie anywhere: no aligned load */
  memcpy (&total, p, 4);
  memcpy (&name_len, p + 4, 4);
  total = GUINT32_FROM_LE (total);
  name_len = GUINT32_FROM_LE (name_len);
  if (total != r->len || (guint64) name_len + 10 > total || name_len == 0
      || p[8 + name_len] != '\0') {
    r->bad = "serialized meta header";
    return;
  }
  name = (const gchar *) p + 8;
  for (i = 0; i < name_len; i++) {
    if (!g_ascii_isgraph (name[i])) {
      r->bad = "serialized meta name";
      return;
    }
  }
  for (i = 0; i < G_N_ELEMENTS (serialized_refused); i++) {
    if (strcmp (name, serialized_refused[i]) == 0) {
      r->bad = "serialized meta of a kind of its own";
      return;
    }
  }
  /* a custom meta is kind 7, its structure read as a peer's text */
  info = gst_meta_get_info (name);
  if (info && gst_meta_info_is_custom (info))
    r->bad = "serialized meta of a kind of its own";
}

/* FALSE with r->bad set when a known kind does not parse; TRUE, *known
 * FALSE, for a kind this version does not know */
static gboolean
read_body (Entry * e, Body * b, gboolean * known)
{
  Reader *r = &e->body;
  guint i, n;

  memset (b, 0, sizeof (*b));
  *known = TRUE;
  switch (e->kind) {
    case GPUSHARE_META_ROI:
      for (i = 0; i < 6; i++)
        b->u[i] = get_u32 (r, "region of interest");
      b->str[0] = get_str (r, "region of interest type");
      n = get_u32 (r, "region of interest parameters");
      if (!r->bad && n > GPUSHARE_META_MAX_ROI_PARAMS)
        r->bad = "region of interest parameters";
      for (i = 0; i < n && !r->bad; i++) {
        b->params[i] = get_str (r, "region of interest parameter");
        b->n_params = i + 1;
      }
      break;
    case GPUSHARE_META_REFERENCE_TIMESTAMP:
      b->str[0] = get_str (r, "reference timestamp caps");
      b->t[0] = get_u64 (r, "reference timestamp");
      b->t[1] = get_u64 (r, "reference timestamp duration");
      break;
    case GPUSHARE_META_TIMECODE:
      for (i = 0; i < 8; i++)
        b->u[i] = get_u32 (r, "time code");
      break;
    case GPUSHARE_META_CAPTION:
      b->u[0] = get_u32 (r, "caption type");
      b->bytes = get_bytes (r, &b->n_bytes, "caption data");
      break;
    case GPUSHARE_META_AFD:
      for (i = 0; i < 3; i++)
        b->u[i] = get_u32 (r, "active format description");
      break;
    case GPUSHARE_META_BAR:
      for (i = 0; i < 4; i++)
        b->u[i] = get_u32 (r, "bar data");
      break;
    case GPUSHARE_META_CUSTOM:
      b->str[0] = get_str (r, "custom meta name");
      b->str[1] = get_str (r, "custom meta structure");
      break;
    case GPUSHARE_META_SERIALIZED:
      read_serialized (r);
      b->bytes = r->p;
      b->n_bytes = r->len;
      break;
    case GPUSHARE_META_ANALYTICS:
      /* checked here, read again when added */
      read_analytics (r, NULL, NULL);
      b->bytes = r->p;
      b->n_bytes = r->len;
      break;
    case GPUSHARE_META_TENSORS:
      read_tensors (r, NULL);
      b->bytes = r->p;
      b->n_bytes = r->len;
      break;
    default:
      *known = FALSE;
      return TRUE;
  }
  /* a newer producer may add fields at the end of a kind: not read */
  return r->bad == NULL;
}

gboolean
gpushare_frame_meta_check (const GpuShareFrameMetas * m, gchar ** why)
{
  return gpushare_frame_meta_check_side (m, 0, 0, why);
}

gboolean
gpushare_frame_meta_check_side (const GpuShareFrameMetas * m,
    gsize side_size, gsize device_size, gchar ** why)
{
  GpuShareMetaSide side = { NULL, side_size, 0, };
  guint64 taken[2] = { 0, 0 };
  gsize at = 0;
  guint i;

  /* a META's parser checked its chain already; a lane's meta region is
   * read here first */
  if (!gpushare_frame_metas_check_chain (m)) {
    if (why)
      *why = g_strdup_printf ("the %u entries of %u bytes of a frame's "
          "metas do not chain", m->n_entries, m->data_len);
    return FALSE;
  }
  for (i = 0; i < m->n_entries; i++) {
    gboolean known;
    Entry e;
    Body b;

    side.device_size = device_size;
    if (!next_entry (m, side_size || device_size ? &side : NULL, &at, &e)) {
      if (why)
        *why = g_strdup_printf ("META entry %u of %u is cut short", i,
            m->n_entries);
      return FALSE;
    }
    e.body.taken = taken;
    if (!read_body (&e, &b, &known)) {
      if (why)
        *why = g_strdup_printf ("META entry %u (kind %u): bad %s", i, e.kind,
            e.body.bad);
      body_clear (&b);
      return FALSE;
    }
    body_clear (&b);
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* adding to a buffer */

static gboolean
set_field (GQuark field, const GValue * value, gpointer user_data)
{
  gst_structure_id_set_value (user_data, field, value);
  return TRUE;
}

/* a name GObject takes for a type: a letter, then letters, digits and
 * "-_+", three characters at least */
static gboolean
is_type_name (const gchar * name)
{
  gsize i, len = strlen (name);

  if (len < 3 || len > 96 || !g_ascii_isalpha (name[0]))
    return FALSE;
  for (i = 1; i < len; i++)
    if (!g_ascii_isalnum (name[i]) && !strchr ("-_+", name[i]))
      return FALSE;
  return TRUE;
}

/* GStreamer registers its metas when first used, not at start: a name a
 * producer gave its custom meta could take one of theirs for the whole
 * process, and whatever adds that meta later would crash (NULL infos,
 * assertions).  The metas this file adds are registered before any peer
 * name is looked at, and GStreamer's namespace is not a peer's to use:
 * the metas of its libraries this process has not loaded yet are
 * registered under "Gst..." names too. */
static void
register_known_metas (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    gst_video_region_of_interest_meta_get_info ();
    gst_reference_timestamp_meta_get_info ();
    gst_video_time_code_meta_get_info ();
    gst_video_caption_meta_get_info ();
    gst_video_afd_meta_get_info ();
    gst_video_bar_meta_get_info ();
    gst_video_meta_get_info ();
    g_once_init_leave (&once, 1);
  }
}

/* a custom meta of that name, registered here if it is not yet, within
 * GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS for the whole process.  Registering makes two
 * types, "name" and "name-api": neither may exist already, nor be in
 * GStreamer's namespace, and the name must hold a '-': GObject libraries
 * name their types in CamelCase without one, and a name of theirs taken
 * here before they register it (GSubprocess, say) breaks them in this
 * process for good (a CRITICAL, then a wait without end in g_once ()).
 * An application that reads a custom meta of another name registers it
 * itself first.  The look-up and the registration under one lock: two
 * sources of the process that meet one new name at once both found it
 * free, and the second registration was a CRITICAL. */
static const GstMetaInfo *
custom_info (const gchar * name)
{
  static GMutex lock;
  static gint registered = 0;
  static const gchar *no_tags[] = { NULL };
  const GstMetaInfo *info;
  gchar *api;
  gboolean free_names;

  register_known_metas ();
  info = gst_meta_get_info (name);
  if (info)
    return gst_meta_info_is_custom (info) ? info : NULL;
  if (!is_type_name (name) || g_ascii_strncasecmp (name, "gst", 3) == 0
      || !strchr (name, '-')) {
    GST_DEBUG ("custom meta name refused: not a type name of its own");
    return NULL;
  }
  g_mutex_lock (&lock);
  info = gst_meta_get_info (name);
  if (!info) {
    api = g_strconcat (name, "-api", NULL);
    free_names = g_type_from_name (name) == 0 && g_type_from_name (api) == 0;
    g_free (api);
    if (free_names && registered < GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS) {
      registered++;
      info = gst_meta_register_custom (name, no_tags, NULL, NULL, NULL);
    }
  } else if (!gst_meta_info_is_custom (info)) {
    info = NULL;
  }
  g_mutex_unlock (&lock);
  return info;
}

/* what gst_buffer_add_video_afd_meta () takes without a CRITICAL: a
 * field of 0 or 1, a known specification, a 4-bit value that no
 * specification reserves (1, 5 to 7, 12), and not 0 under DVB/ETSI */
static gboolean
afd_ok (guint32 field, guint32 spec, guint32 afd)
{
  return field <= 1 && spec <= GST_VIDEO_AFD_SPEC_SMPTE_ST2016_1
      && afd <= 0xf && afd != 1 && (afd < 5 || afd > 7) && afd != 12
      && (spec != GST_VIDEO_AFD_SPEC_DVB_ETSI || afd != 0);
}

static gboolean
add_meta (GstBuffer * buf, guint kind, Body * b,
    const GpuShareMetaSide * side, guint * n_left_out)
{
  guint i;

  switch (kind) {
    case GPUSHARE_META_ROI:{
      /* its type a quark, as the labels of analytics are: bounded */
      GQuark type = peer_quark (b->str[0]);
      GstVideoRegionOfInterestMeta *r = type ?
          gst_buffer_add_video_region_of_interest_meta_id (buf, type,
          b->u[2], b->u[3], b->u[4], b->u[5]) : NULL;

      if (!r)
        return FALSE;
      r->id = b->u[0];
      r->parent_id = (gint) b->u[1];
      for (i = 0; i < b->n_params; i++) {
        GstStructure *s = gpushare_structure_from_peer (b->params[i]);

        if (s)
          gst_video_region_of_interest_meta_add_param (r, s);
      }
      return TRUE;
    }
    case GPUSHARE_META_REFERENCE_TIMESTAMP:{
      GstCaps *caps = gpushare_caps_from_peer (b->str[0]);
      /* a timestamp there must be: GStreamer's precondition */
      gboolean ok = caps && gst_caps_is_fixed (caps)
          && GST_CLOCK_TIME_IS_VALID (b->t[0])
          && gst_buffer_add_reference_timestamp_meta (buf, caps, b->t[0],
          b->t[1]) != NULL;

      gst_clear_caps (&caps);
      return ok;
    }
    case GPUSHARE_META_TIMECODE:
      return b->u[1] != 0 && gst_buffer_add_video_time_code_meta_full (buf,
          b->u[0], b->u[1], NULL, b->u[2], b->u[3], b->u[4], b->u[5],
          b->u[6], b->u[7]) != NULL;
    case GPUSHARE_META_CAPTION:
      return b->u[0] <= GST_VIDEO_CAPTION_TYPE_CEA708_CDP && b->n_bytes > 0
          && gst_buffer_add_video_caption_meta (buf, b->u[0], b->bytes,
          b->n_bytes) != NULL;
    case GPUSHARE_META_AFD:
      return afd_ok (b->u[0], b->u[1], b->u[2])
          && gst_buffer_add_video_afd_meta (buf, b->u[0], b->u[1],
          b->u[2]) != NULL;
    case GPUSHARE_META_BAR:
      return b->u[0] <= 1 && b->u[1] <= 1
          && gst_buffer_add_video_bar_meta (buf, b->u[0], b->u[1], b->u[2],
          b->u[3]) != NULL;
    case GPUSHARE_META_CUSTOM:{
      const GstMetaInfo *info = custom_info (b->str[0]);
      GstStructure *from = gpushare_structure_from_peer (b->str[1]);
      GstCustomMeta *c = info && from ?
          gst_buffer_add_custom_meta (buf, b->str[0]) : NULL;

      if (c)
        gst_structure_foreach (from, set_field,
            gst_custom_meta_get_structure (c));
      if (from)
        gst_structure_free (from);
      return c != NULL;
    }
    case GPUSHARE_META_SERIALIZED:{
#if GST_CHECK_VERSION(1, 24, 0)
      guint32 consumed = 0;

      return gst_meta_deserialize (buf, b->bytes, b->n_bytes,
          &consumed) != NULL;
#else
      return FALSE;
#endif
    }
    case GPUSHARE_META_ANALYTICS:{
#if HAVE_GST_ANALYTICS
      Reader r = { b->bytes, b->n_bytes, 0, NULL, side, NULL }, head = r;
      guint32 n_mtds = get_u32 (&head, "analytics mtd count");
      /* made as large as its mtds need at once (their count, checked to be
       * at most GPUSHARE_META_MAX_MTDS, and about the bytes of their
       * bodies), so that adding them does not grow its storage and its
       * relations step by step */
      GstAnalyticsRelationMetaInitParams init;
      GstAnalyticsRelationMeta *rmeta;

      init.initial_relation_order = CLAMP (n_mtds, 1, GPUSHARE_META_MAX_MTDS);
      init.initial_buf_size = MAX (b->n_bytes, 64);
      rmeta = gst_buffer_add_analytics_relation_meta_full (buf, &init);

      if (!rmeta)
        return FALSE;
      read_analytics (&r, rmeta, n_left_out);
      return r.bad == NULL;
#else
      /* built without GStreamer's analytics library */
      return FALSE;
#endif
    }
    case GPUSHARE_META_TENSORS:{
#if HAVE_GST_ANALYTICS && GST_CHECK_VERSION(1, 26, 0)
      Reader r = { b->bytes, b->n_bytes, 0, NULL, side, NULL };
      GstTensorMeta *tm;

      if (gst_buffer_get_tensor_meta (buf))
        return FALSE;
      tm = gst_buffer_add_tensor_meta (buf);
      if (read_tensors (&r, tm))
        return TRUE;
      gst_buffer_remove_meta (buf, (GstMeta *) tm);
      return FALSE;
#else
      /* built without GStreamer's analytics library of 1.26 */
      return FALSE;
#endif
    }
    default:
      return FALSE;
  }
}

gboolean
gpushare_frame_meta_check_meta (const GpuShareMeta * meta, gchar ** why)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new_from_meta (meta);
  gboolean ok = gpushare_frame_meta_check (m, why);

  g_free (m);
  return ok;
}

guint
gpushare_frame_meta_apply (const GpuShareFrameMetas * m, GstBuffer * buf,
    guint * n_dropped)
{
  return gpushare_frame_meta_apply_side (m, buf, NULL, n_dropped);
}

guint
gpushare_frame_meta_apply_side (const GpuShareFrameMetas * m, GstBuffer * buf,
    const GpuShareMetaSide * side, guint * n_dropped)
{
  gsize at = 0;
  guint i, added = 0, dropped = 0, left_out = 0;

  debug_init ();
  for (i = 0; i < m->n_entries; i++) {
    gboolean known;
    Entry e;
    Body b;

    /* side without data: payloads in GPU memory alone (get_payload ()
     * leaves the others unread) */
    if (!next_entry (m, side, &at, &e))
      break;
    if (read_body (&e, &b, &known) && known
        && add_meta (buf, e.kind, &b, e.body.side, &left_out)) {
      added++;
    } else {
      dropped++;
      GST_LOG ("META entry %u (kind %u) not added", i, e.kind);
    }
    body_clear (&b);
  }
  /* an analytics meta's mtds left out count as metas dropped */
  if (n_dropped)
    *n_dropped = dropped + (m->n_entries - i) + left_out;
  return added;
}
