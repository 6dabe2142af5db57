/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpusharevideo.h"
#include "gpusharetext.h"

#include <string.h>

/* a paletted format's second plane: 256 entries of 4 bytes, whatever the
 * stride says (GStreamer gives it a stride of 4) */
#define PALETTE_BYTES (256 * 4)

static gboolean
is_palette_plane (const GstVideoFormatInfo * finfo, guint p)
{
  return GST_VIDEO_FORMAT_INFO_HAS_PALETTE (finfo) && p == 1;
}

gboolean
gpushare_video_plane_geometry (const GstVideoInfo * info, guint p,
    guint64 * row_bytes, guint * rows)
{
  const GstVideoFormatInfo *finfo = info->finfo;
  gint comp[GST_VIDEO_MAX_COMPONENTS];
  guint width = GST_VIDEO_INFO_WIDTH (info);
  guint height = GST_VIDEO_INFO_FIELD_HEIGHT (info);
  guint64 row = 0;
  guint i;

  if (!finfo || p >= GST_VIDEO_INFO_N_PLANES (info) || width == 0
      || height == 0 || GST_VIDEO_FORMAT_INFO_IS_TILED (finfo))
    return FALSE;
  if (is_palette_plane (finfo, p)) {
    *row_bytes = PALETTE_BYTES;
    *rows = 1;
    return TRUE;
  }
  gst_video_format_info_component (finfo, p, comp);
  if (comp[0] < 0)
    return FALSE;
  *rows = GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT (finfo, comp[0], height);

  /* the furthest byte any component of the plane reaches in a row: the
   * last sample's offset plus the bytes its bits span, and never less than
   * its whole pixel groups (UYVY at width 5 ends with V2 at byte 10, but
   * readers unpack the third macropixel whole: 12 bytes) */
  for (i = 0; i < GST_VIDEO_MAX_COMPONENTS && comp[i] >= 0; i++) {
    gint c = comp[i];
    guint pstride = GST_VIDEO_FORMAT_INFO_PSTRIDE (finfo, c);
    guint64 samples = GST_VIDEO_FORMAT_INFO_SCALE_WIDTH (finfo, c, width);
    guint bits = GST_VIDEO_FORMAT_INFO_SHIFT (finfo, c) +
        GST_VIDEO_FORMAT_INFO_DEPTH (finfo, c);

    if (pstride == 0)
      break;
    row = MAX (row, GST_VIDEO_FORMAT_INFO_POFFSET (finfo, c) +
        (samples - 1) * pstride + (bits + 7) / 8);
    row = MAX (row, samples * pstride);
  }
  if (i < GST_VIDEO_MAX_COMPONENTS && comp[i] >= 0) {
    GstVideoInfo def;

    /* bit-packed formats without a pixel stride (v210, UYVP, the 10-bit
     * 32- and 40-bit packings): GStreamer's own row for the width */
    if (!gst_video_info_set_format (&def, GST_VIDEO_INFO_FORMAT (info), width,
            GST_VIDEO_INFO_HEIGHT (info)))
      return FALSE;
    row = (guint64) GST_VIDEO_INFO_PLANE_STRIDE (&def, p);
  }
  *row_bytes = row;
  return TRUE;
}

gboolean
gpushare_video_check_planes (const GstVideoInfo * info, guint n_planes,
    const guint64 * offsets, const gint32 * strides, guint64 frame_size,
    gchar ** why)
{
  guint i;

  for (i = 0; i < n_planes; i++) {
    guint64 row, end;
    guint rows;

    if (!gpushare_video_plane_geometry (info, i, &row, &rows)) {
      *why = g_strdup_printf ("plane %u: the rows of format %s cannot be "
          "checked", i, GST_VIDEO_INFO_NAME (info));
      return FALSE;
    }
    if (strides[i] <= 0) {
      *why = g_strdup_printf ("plane %u: stride %d is not positive", i,
          strides[i]);
      return FALSE;
    }
    if ((guint64) strides[i] < row && !is_palette_plane (info->finfo, i)) {
      *why = g_strdup_printf ("plane %u: stride %d is shorter than a row of "
          "%s at width %d (%" G_GUINT64_FORMAT " bytes)", i, strides[i],
          GST_VIDEO_INFO_NAME (info), GST_VIDEO_INFO_WIDTH (info), row);
      return FALSE;
    }
    /* rows < 2^31, stride < 2^31, row < 2^63 / 2: no product overflows,
     * and the offset is compared before it is added */
    end = MAX ((guint64) rows * (guint64) strides[i],
        (guint64) (rows - 1) * (guint64) strides[i] + row);
    if (offsets[i] > frame_size || end > frame_size - offsets[i]) {
      *why = g_strdup_printf ("plane %u: offset %" G_GUINT64_FORMAT " + %u "
          "rows of stride %d end past the frame of %" G_GUINT64_FORMAT
          " bytes", i, offsets[i], rows, strides[i], frame_size);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
gpushare_video_check_info (const GstVideoInfo * info, gchar ** why)
{
  guint64 offsets[GST_VIDEO_MAX_PLANES];
  gint32 strides[GST_VIDEO_MAX_PLANES];
  guint p;

  for (p = 0; p < GST_VIDEO_INFO_N_PLANES (info); p++) {
    offsets[p] = GST_VIDEO_INFO_PLANE_OFFSET (info, p);
    strides[p] = GST_VIDEO_INFO_PLANE_STRIDE (info, p);
  }
  return gpushare_video_check_planes (info, GST_VIDEO_INFO_N_PLANES (info),
      offsets, strides, GST_VIDEO_INFO_SIZE (info), why);
}

gboolean
gpushare_video_frame_copy (GstVideoFrame * dest, const GstVideoFrame * src)
{
  const GstVideoInfo *si = &src->info;
  guint p, r;

  g_return_val_if_fail (GST_VIDEO_INFO_FORMAT (&dest->info) ==
      GST_VIDEO_INFO_FORMAT (si), FALSE);
  g_return_val_if_fail (GST_VIDEO_INFO_WIDTH (&dest->info) ==
      GST_VIDEO_INFO_WIDTH (si), FALSE);
  g_return_val_if_fail (GST_VIDEO_INFO_HEIGHT (&dest->info) ==
      GST_VIDEO_INFO_HEIGHT (si), FALSE);

  /* tiles are GStreamer's business */
  if (GST_VIDEO_FORMAT_INFO_IS_TILED (si->finfo))
    return gst_video_frame_copy (dest, src);

  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (src); p++) {
    const guint8 *s = GST_VIDEO_FRAME_PLANE_DATA (src, p);
    guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (dest, p);
    gint ss = GST_VIDEO_FRAME_PLANE_STRIDE (src, p);
    gint ds = GST_VIDEO_FRAME_PLANE_STRIDE (dest, p);
    guint64 row;
    guint rows;

    if (!gpushare_video_plane_geometry (si, p, &row, &rows))
      return FALSE;
    if (rows > 1 && (row > (guint64) MAX (ss, 0) || row > (guint64) MAX (ds,
                0)))
      return FALSE;
    for (r = 0; r < rows; r++)
      memcpy (d + (gsize) r * ds, s + (gsize) r * ss, row);
  }
  return TRUE;
}

GstCaps *
gpushare_video_caps_from_peer (const gchar * text, GstVideoInfo * vinfo)
{
  GstCaps *caps = gpushare_caps_from_peer (text);

  if (caps && gst_caps_is_fixed (caps)
      && gst_video_info_from_caps (vinfo, caps))
    return caps;
  if (caps)
    gst_caps_unref (caps);
  return NULL;
}

GstCaps *
gpushare_video_layout_to_caps (const GpuShareLayout * l,
    GstVideoInfo * vinfo, gchar ** why)
{
  GstCaps *caps = gpushare_video_caps_from_peer (l->caps, vinfo);
  guint i;

  if (!caps) {
    *why = g_strdup ("caps are not fixed raw video");
    goto bad;
  }
  /* the memory is ours to say: a feature in the producer's caps would
   * make downstream take our buffers for something they are not */
  if (gst_caps_get_features (caps, 0)
      && !gst_caps_features_is_equal (gst_caps_get_features (caps, 0),
          GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY)) {
    *why = g_strdup ("caps name a memory feature");
    goto bad;
  }
  if (l->n_planes != GST_VIDEO_INFO_N_PLANES (vinfo)) {
    *why = g_strdup ("plane count does not match the caps");
    goto bad;
  }
  /* every plane must fit its format's rows and lie inside the frame, and
   * the frame inside the slot, before any buffer points into the mapping:
   * downstream reads whole rows from the strides given here */
  if (l->frame_size > l->slot_size) {
    *why = g_strdup ("frame larger than slot");
    goto bad;
  }
  if (!gpushare_video_check_planes (vinfo, l->n_planes, l->offsets,
          l->strides, l->frame_size, why))
    goto bad;
  for (i = 0; i < l->n_planes; i++) {
    vinfo->offset[i] = l->offsets[i];
    vinfo->stride[i] = l->strides[i];
  }
  vinfo->size = l->frame_size;
  return caps;

bad:
  gst_clear_caps (&caps);
  return NULL;
}
