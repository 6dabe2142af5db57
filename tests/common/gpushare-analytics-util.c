/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gpushare-analytics-util.h"

#include <string.h>

#if HAVE_GST_ANALYTICS
#include <gst/analytics/analytics.h>
#include <gst/video/video.h>
#if HAVE_GST_CUDA_TEST
#include <gst/cuda/gstcuda.h>
#endif

/* "cuda" for GStreamer's CUDA memory, "system" otherwise */
static const gchar *
memory_kind (GstBuffer * buf)
{
  GstMemory *mem = gst_buffer_n_memory (buf) ?
      gst_buffer_peek_memory (buf, 0) : NULL;

  return mem && mem->allocator && g_str_equal (mem->allocator->mem_type,
      "gst.cuda.memory") ? "cuda" : "system";
}

#if GST_CHECK_VERSION(1, 26, 0)
/* a tensor, as the rest of a line: its id, type, order, dims and data */
static void
describe_tensor (GString * s, const GstTensor * t)
{
  GstMapInfo map;
  gsize d;

  g_string_append_printf (s, "tensor %s type %d order %d dims",
      g_quark_to_string (t->id), t->data_type, t->dims_order);
  for (d = 0; d < t->num_dims; d++)
    g_string_append_printf (s, " %" G_GSIZE_FORMAT, t->dims[d]);
  if (t->data && gst_buffer_map (t->data, &map, GST_MAP_READ)) {
    gchar *sum = g_compute_checksum_for_data (G_CHECKSUM_SHA1, map.data,
        map.size);

    g_string_append_printf (s, " %" G_GSIZE_FORMAT " bytes %s\n", map.size,
        sum);
    g_free (sum);
    gst_buffer_unmap (t->data, &map);
  } else {
    g_string_append (s, " no data\n");
  }
}
#endif

/* tensor meta of buf, as lines ("" without one) */
static void
describe_tensors (GString * s, GstBuffer * buf)
{
#if GST_CHECK_VERSION(1, 26, 0)
  GstTensorMeta *tm = gst_buffer_get_tensor_meta (buf);
  gsize i;

  for (i = 0; tm && i < tm->num_tensors; i++)
    describe_tensor (s, gst_tensor_meta_get (tm, i));
#endif
}

const gchar *
gpushare_test_payload_memory (GstBuffer * buf)
{
  const gchar *kind = "none";
#if GST_CHECK_VERSION(1, 26, 0)
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  GstTensorMeta *tm = gst_buffer_get_tensor_meta (buf);
  GstAnalyticsMtd m;
  gpointer state = NULL;
  gsize i;

  while (rmeta && gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_segmentation_mtd_get_mtd_type (), &m)) {
    gint x, y;
    guint w, h;
    GstBuffer *mask = gst_analytics_segmentation_mtd_get_mask (&m, &x, &y,
        &w, &h);

    if (mask) {
      kind = g_str_equal (kind, "none") || g_str_equal (kind,
          memory_kind (mask)) ? memory_kind (mask) : "mixed";
      gst_buffer_unref (mask);
    }
  }
  for (i = 0; tm && i < tm->num_tensors; i++) {
    const GstTensor *t = gst_tensor_meta_get (tm, i);

    if (t && t->data)
      kind = g_str_equal (kind, "none") || g_str_equal (kind,
          memory_kind (t->data)) ? memory_kind (t->data) : "mixed";
  }
#endif
  return kind;
}

#if HAVE_GST_CUDA_TEST
/* a context of GPU 0, made once */
static GstCudaContext *
cuda_context (void)
{
  static GstCudaContext *ctx;

  if (!ctx && gst_cuda_load_library ()) {
    gst_cuda_memory_init_once ();
    ctx = gst_cuda_context_new (0);
  }
  return ctx;
}

/* a buffer of one CUDA memory whose first plane is width x height bytes
 * (pitched by GStreamer's allocator, which makes no GRAY8 memory: the
 * luma plane of an NV12 one), its rows written through its host mapping
 * by fill, with a GRAY8 video meta of that plane; NULL without a GPU */
static GstBuffer *
cuda_buffer (guint width, guint height, void (*fill) (guint8 * row, guint y,
        guint bytes, gpointer data), gpointer data)
{
  GstCudaContext *ctx = cuda_context ();
  GstVideoInfo info;
  GstMemory *mem;
  GstCudaMemory *cmem;
  GstBuffer *buf;
  GstMapInfo map;
  guint y;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, (width + 1) & ~1u,
      (height + 1) & ~1u);
  mem = ctx ? gst_cuda_allocator_alloc (NULL, ctx, NULL, &info) : NULL;
  if (!mem)
    return NULL;
  cmem = (GstCudaMemory *) mem;
  gst_memory_map (mem, &map, GST_MAP_WRITE);
  for (y = 0; y < height; y++)
    fill (map.data + (gsize) y * cmem->info.stride[0], y, width, data);
  gst_memory_unmap (mem, &map);
  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_FORMAT_GRAY8, width, height, 1, cmem->info.offset,
      cmem->info.stride);
  return buf;
}
#endif

gchar *
gpushare_test_mask_digest (GstBuffer * mask)
{
  GstVideoMeta *vm = mask ? gst_buffer_get_video_meta (mask) : NULL;
  GChecksum *sum;
  GstMapInfo map;
  gchar *text;
  guint row, bpp;

  if (!vm || !gst_buffer_map (mask, &map, GST_MAP_READ))
    return NULL;
  sum = g_checksum_new (G_CHECKSUM_SHA1);
  bpp = vm->format == GST_VIDEO_FORMAT_GRAY8 ? 1 : 2;
  for (row = 0; row < vm->height; row++)
    g_checksum_update (sum, map.data + vm->offset[0] +
        (gsize) row * vm->stride[0], vm->width * bpp);
  gst_buffer_unmap (mask, &map);
  text = g_strdup_printf ("%s %ux%u %s", gst_video_format_to_string
      (vm->format), vm->width, vm->height, g_checksum_get_string (sum));
  g_checksum_free (sum);
  return text;
}

gchar *
gpushare_test_analytics_describe (GstBuffer * buf)
{
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  GString *s = g_string_new (NULL);
  gsize n, i, j;

  describe_tensors (s, buf);
  if (!rmeta)
    return g_string_free (s, FALSE);
  n = gst_analytics_relation_get_length (rmeta);
  for (i = 0; i < n; i++) {
    GstAnalyticsMtd m;
    GstAnalyticsMtdType type;

    if (!gst_analytics_relation_meta_get_mtd (rmeta, i,
            GST_ANALYTICS_MTD_TYPE_ANY, &m)) {
      g_string_append_printf (s, "%" G_GSIZE_FORMAT " missing\n", i);
      continue;
    }
    type = gst_analytics_mtd_get_mtd_type (&m);
    if (type == gst_analytics_od_mtd_get_mtd_type ()) {
      gint x = 0, y = 0, w = 0, h = 0;
      gfloat conf = 0, r = 0;

#if GST_CHECK_VERSION(1, 26, 0)
      gst_analytics_od_mtd_get_oriented_location (&m, &x, &y, &w, &h, &r,
          &conf);
#else
      gst_analytics_od_mtd_get_location (&m, &x, &y, &w, &h, &conf);
#endif
      g_string_append_printf (s, "%" G_GSIZE_FORMAT " od %s %d %d %d %d "
          "%.9g %.9g\n", i, g_quark_to_string
          (gst_analytics_od_mtd_get_obj_type (&m)), x, y, w, h, conf, r);
    } else if (type == gst_analytics_cls_mtd_get_mtd_type ()) {
      g_string_append_printf (s, "%" G_GSIZE_FORMAT " cls", i);
      for (j = 0; j < gst_analytics_cls_mtd_get_length (&m); j++)
        g_string_append_printf (s, " %s %.9g",
            g_quark_to_string (gst_analytics_cls_mtd_get_quark (&m, j)),
            gst_analytics_cls_mtd_get_level (&m, j));
      g_string_append (s, "\n");
    } else if (type == gst_analytics_tracking_mtd_get_mtd_type ()) {
      guint64 id = 0;
      GstClockTime first = 0, last = 0;
      gboolean lost = FALSE;

      gst_analytics_tracking_mtd_get_info (&m, &id, &first, &last, &lost);
      g_string_append_printf (s, "%" G_GSIZE_FORMAT " trk %" G_GUINT64_FORMAT
          " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %d\n", i, id, first,
          last, lost);
#if GST_CHECK_VERSION(1, 26, 0)
    } else if (type == gst_analytics_segmentation_mtd_get_mtd_type ()) {
      gint x = 0, y = 0;
      guint w = 0, h = 0;
      GstBuffer *mask = gst_analytics_segmentation_mtd_get_mask (&m, &x, &y,
          &w, &h);
      gchar *digest = gpushare_test_mask_digest (mask);

      g_string_append_printf (s, "%" G_GSIZE_FORMAT " seg %d %d %u %u "
          "regions", i, x, y, w, h);
      for (j = 0; j < gst_analytics_segmentation_mtd_get_region_count (&m); j++)
        g_string_append_printf (s, " %u",
            gst_analytics_segmentation_mtd_get_region_id (&m, j));
      /* the mask: its size, format and pixels, row by row */
      if (digest)
        g_string_append_printf (s, " mask %s", digest);
      else
        g_string_append (s, " no mask");
      g_string_append (s, "\n");
      g_free (digest);
      if (mask)
        gst_buffer_unref (mask);
#endif
#if GST_CHECK_VERSION(1, 28, 0)
    } else if (type == gst_analytics_tensor_mtd_get_mtd_type ()) {
      g_string_append_printf (s, "%" G_GSIZE_FORMAT " ", i);
      describe_tensor (s, gst_analytics_tensor_mtd_get_tensor (&m));
#endif
    } else {
      n = i;
      break;
    }
  }
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) {
      GstAnalyticsRelTypes t =
          gst_analytics_relation_meta_get_relation (rmeta, i, j);

      if (t != GST_ANALYTICS_REL_TYPE_NONE)
        g_string_append_printf (s, "rel %" G_GSIZE_FORMAT " %" G_GSIZE_FORMAT
            " %d\n", i, j, t);
    }
  return g_string_free (s, FALSE);
}

void
gpushare_test_analytics_detect (GstBuffer * buf, guint frame, guint n)
{
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  guint d;

  if (!rmeta)
    rmeta = gst_buffer_add_analytics_relation_meta (buf);
  for (d = 0; d < n; d++) {
    GstAnalyticsODMtd od;
    GstAnalyticsClsMtd cls;
    gfloat levels[2] = { 0.75f - d / 256.0f, 0.25f };
    GQuark classes[2] = { g_quark_from_static_string ("sedan"),
      g_quark_from_static_string (d % 2 ? "truck" : "van")
    };
    GQuark type = g_quark_from_static_string (d % 3 ? "car" : "person");

#if GST_CHECK_VERSION(1, 26, 0)
    gst_analytics_relation_meta_add_oriented_od_mtd (rmeta, type,
        10 * d + frame, (gint) d - 5, 30 + frame % 7, 20, 0.125f * d,
        0.5f + d / 512.0f, &od);
#else
    gst_analytics_relation_meta_add_od_mtd (rmeta, type, 10 * d + frame,
        (gint) d - 5, 30 + frame % 7, 20, 0.5f + d / 512.0f, &od);
#endif
    gst_analytics_relation_meta_add_cls_mtd (rmeta, 2, levels, classes, &cls);
    gst_analytics_relation_meta_set_relation (rmeta,
        GST_ANALYTICS_REL_TYPE_CONTAIN, od.id, cls.id);
    gst_analytics_relation_meta_set_relation (rmeta,
        GST_ANALYTICS_REL_TYPE_IS_PART_OF, cls.id, od.id);
  }
}

#if GST_CHECK_VERSION(1, 26, 0)
static void
fill_mask_row (guint8 * row, guint y, guint bytes, gpointer data)
{
  guint frame = GPOINTER_TO_UINT (data), x;

  for (x = 0; x < bytes; x++)
    row[x] = (guint8) ((x / 16 + y / 16 + frame) % 3);
}

static void
fill_scores (guint8 * row, guint y, guint bytes, gpointer data)
{
  guint frame = GPOINTER_TO_UINT (data), i;

  for (i = 0; i + 4 <= bytes; i += 4) {
    gfloat f = (gfloat) ((i / 4 + frame) % 100) / 100.0f;

    memcpy (row + i, &f, 4);
  }
}
#endif

gboolean
gpushare_test_analytics_segment (GstBuffer * buf, guint frame, guint width,
    guint height, gboolean cuda)
{
#if GST_CHECK_VERSION(1, 26, 0)
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  /* rows padded to 64 bytes, as a model's output may be: the far end
   * gets them packed */
  gint stride[GST_VIDEO_MAX_PLANES] = { (gint) ((width + 63) & ~63u), };
  gsize offset[GST_VIDEO_MAX_PLANES] = { 0, };
  GstBuffer *mask = NULL;
  GstAnalyticsSegmentationMtd seg;
  guint regions[3] = { 0, 1, 2 };
  GstMapInfo map;
  guint y;

  if (cuda) {
#if HAVE_GST_CUDA_TEST
    mask = cuda_buffer (width, height, fill_mask_row, GUINT_TO_POINTER (frame));
#endif
    if (!mask)
      return FALSE;
  } else {
    mask = gst_buffer_new_allocate (NULL, (gsize) stride[0] * height, NULL);
    gst_buffer_map (mask, &map, GST_MAP_WRITE);
    memset (map.data, 0xee, map.size);
    for (y = 0; y < height; y++)
      fill_mask_row (map.data + (gsize) y * stride[0], y, width,
          GUINT_TO_POINTER (frame));
    gst_buffer_unmap (mask, &map);
    gst_buffer_add_video_meta_full (mask, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_FORMAT_GRAY8, width, height, 1, offset, stride);
  }
  if (!rmeta)
    rmeta = gst_buffer_add_analytics_relation_meta (buf);
  return gst_analytics_relation_meta_add_segmentation_mtd (rmeta, mask,
      GST_SEGMENTATION_TYPE_SEMANTIC, 3, regions, 0, 0, width, height, &seg);
#else
  return FALSE;
#endif
}

gboolean
gpushare_test_tensor_attach (GstBuffer * buf, guint frame, guint n,
    gboolean cuda)
{
#if GST_CHECK_VERSION(1, 26, 0)
  GstTensorMeta *tm;
  GstBuffer *data = NULL;
  GstTensor **tensors;
  gsize dims[2] = { 1, n };
  GstMapInfo map;

  if (cuda) {
#if HAVE_GST_CUDA_TEST
    data = cuda_buffer (n * 4, 1, fill_scores, GUINT_TO_POINTER (frame));
    if (data) {
      gst_buffer_remove_meta (data, (GstMeta *) gst_buffer_get_video_meta
          (data));
      gst_buffer_resize (data, 0, (gssize) n * 4);
    }
#endif
    if (!data)
      return FALSE;
  } else {
    data = gst_buffer_new_allocate (NULL, (gsize) n * 4, NULL);
    gst_buffer_map (data, &map, GST_MAP_WRITE);
    fill_scores (map.data, 0, n * 4, GUINT_TO_POINTER (frame));
    gst_buffer_unmap (data, &map);
  }
  tensors = g_new (GstTensor *, 1);
  tensors[0] = gst_tensor_new_simple (g_quark_from_static_string ("scores"),
      GST_TENSOR_DATA_TYPE_FLOAT32, data, GST_TENSOR_DIM_ORDER_ROW_MAJOR, 2,
      dims);
  tm = gst_buffer_add_tensor_meta (buf);
  gst_tensor_meta_set (tm, 1, tensors);
  return TRUE;
#else
  return FALSE;
#endif
}

void
gpushare_test_analytics_track (GstBuffer * buf)
{
  GstAnalyticsRelationMeta *rmeta =
      gst_buffer_get_analytics_relation_meta (buf);
  gsize i, n;

  if (!rmeta)
    return;
  n = gst_analytics_relation_get_length (rmeta);
  for (i = 0; i < n; i++) {
    GstAnalyticsODMtd od;
    GstAnalyticsTrackingMtd trk;

    if (!gst_analytics_relation_meta_get_od_mtd (rmeta, i, &od))
      continue;
    gst_analytics_relation_meta_add_tracking_mtd (rmeta, 1000 + i,
        GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) : 0, &trk);
    gst_analytics_tracking_mtd_update_last_seen (&trk,
        GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) + 1 : 1);
    if (i % 5 == 0)
      gst_analytics_tracking_mtd_set_lost (&trk);
    gst_analytics_relation_meta_set_relation (rmeta,
        GST_ANALYTICS_REL_TYPE_RELATE_TO, trk.id, od.id);
#if GST_CHECK_VERSION(1, 28, 0)
    {
      /* and its appearance, a re-identification embedding (FLOAT32 1 x 8,
       * from 1.28 a tensor mtd), related to the track */
      GstAnalyticsTensorMtd emb;
      gsize dims[2] = { 1, 8 };
      gfloat v[8];
      guint k;

      for (k = 0; k < 8; k++)
        v[k] = (gfloat) (i * 8 + k) / 64.0f + (GST_BUFFER_PTS_IS_VALID (buf) ?
            (gfloat) (GST_BUFFER_PTS (buf) % 1000) : 0.0f);
      if (gst_analytics_relation_meta_add_tensor_mtd_simple (rmeta,
              g_quark_from_static_string ("reid-embedding"),
              GST_TENSOR_DATA_TYPE_FLOAT32,
              gst_buffer_new_memdup (v, sizeof (v)),
              GST_TENSOR_DIM_ORDER_ROW_MAJOR, 2, dims, &emb))
        gst_analytics_relation_meta_set_relation (rmeta,
            GST_ANALYTICS_REL_TYPE_RELATE_TO, emb.id, trk.id);
    }
#endif
  }
}
#endif
