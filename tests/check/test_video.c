/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Plane geometry from the format alone: the row lengths a consumer checks
 * a producer's strides against, and the row-by-row copy both ends use.
 */

#include <gst/check/gstcheck.h>
#include <gst/video/video.h>
#include <string.h>

#include "gpusharevideo.h"

#include "gpusharemetapriv.h"

static void
info_for (GstVideoInfo * info, GstVideoFormat format, guint w, guint h)
{
  fail_unless (gst_video_info_set_format (info, format, w, h));
}

static guint64
row_of (GstVideoFormat format, guint w, guint plane, guint * rows)
{
  GstVideoInfo info;
  guint64 row = 0;
  guint r = 0;

  info_for (&info, format, w, 8);
  fail_unless (gpushare_video_plane_geometry (&info, plane, &row, &r));
  if (rows)
    *rows = r;
  return row;
}

GST_START_TEST (test_row_bytes)
{
  guint rows;

  /* packed 4:2:2 at an odd width: 3 macropixels of 4 bytes, not 5 * 2 */
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_YUY2, 5, 0, NULL), 12);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_UYVY, 5, 0, NULL), 12);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_YVYU, 6, 0, NULL), 12);
  /* tight rows, not GStreamer's default 4-byte alignment */
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_RGB, 5, 0, NULL), 15);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_GRAY8, 5, 0, NULL), 5);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_I420, 5, 0, NULL), 5);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_I420, 5, 1, &rows), 3);
  fail_unless_equals_int (rows, 4);
  /* interleaved chroma: U at 0, V at 1 of each pair */
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_NV12, 5, 1, &rows), 6);
  fail_unless_equals_int (rows, 4);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_P010_10LE, 5, 0,
          NULL), 10);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_RGB16, 5, 0, NULL), 10);
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_ARGB64, 32767, 0,
          NULL), 32767 * 8);
  /* no pixel stride: GStreamer's own row (v210: 48 pixels in 128 bytes) */
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_v210, 5, 0, NULL), 128);
  /* a palette is one row of 256 entries */
  fail_unless_equals_uint64 (row_of (GST_VIDEO_FORMAT_RGB8P, 5, 1, &rows),
      1024);
  fail_unless_equals_int (rows, 1);
}

GST_END_TEST;

/* every format GStreamer knows at a few widths: GStreamer's own default
 * layout always passes the check, and its strides are never shorter than
 * the rows computed here */
GST_START_TEST (test_default_layouts_pass)
{
  static const guint widths[] = { 1, 2, 3, 5, 64, 1921 };
  const GstVideoFormat *formats;
  guint n_checked = 0, n_formats, k, i;

  formats = gst_video_formats_raw (&n_formats);
  for (k = 0; k < n_formats; k++) {
    GstVideoFormat f = formats[k];
    const GstVideoFormatInfo *finfo = gst_video_format_get_info (f);

    if (GST_VIDEO_FORMAT_INFO_IS_TILED (finfo))
      continue;
    for (i = 0; i < G_N_ELEMENTS (widths); i++) {
      GstVideoInfo info;
      gchar *why = NULL;

      if (!gst_video_info_set_format (&info, f, widths[i], 7))
        continue;
      fail_unless (gpushare_video_check_info (&info, &why),
          "%s at width %u: %s", GST_VIDEO_INFO_NAME (&info), widths[i], why);
      n_checked++;
    }
  }
  fail_unless (n_checked > 300, "only %u layouts checked", n_checked);
}

GST_END_TEST;

static gboolean
check (GstVideoFormat format, guint w, guint h, const guint64 * offsets,
    const gint32 * strides, guint64 frame_size, const gchar * expect)
{
  GstVideoInfo info;
  gchar *why = NULL;
  gboolean ok;

  info_for (&info, format, w, h);
  ok = gpushare_video_check_planes (&info, GST_VIDEO_INFO_N_PLANES (&info),
      offsets, strides, frame_size, &why);
  if (!ok) {
    fail_unless (expect != NULL, "refused: %s", why);
    fail_unless (strstr (why, expect) != NULL, "'%s' does not say '%s'", why,
        expect);
  }
  g_free (why);
  return ok;
}

GST_START_TEST (test_check_planes)
{
  guint64 off[4] = { 0, 0, 0, 0 };
  gint32 st[4] = { 0, 0, 0, 0 };

  /* the layout that crashed a consumer: ARGB64, 32767 wide, stride 1, at
   * the end of the frame */
  st[0] = 1;
  off[0] = 1000;
  fail_if (check (GST_VIDEO_FORMAT_ARGB64, 32767, 2, off, st, 4096,
          "plane 0: stride 1 is shorter than a row"));
  /* YUY2 at an odd width: 10 bytes is one byte short */
  off[0] = 0;
  st[0] = 10;
  fail_if (check (GST_VIDEO_FORMAT_YUY2, 5, 2, off, st, 4096,
          "shorter than a row"));
  st[0] = 12;
  fail_unless (check (GST_VIDEO_FORMAT_YUY2, 5, 2, off, st, 24, NULL));
  fail_if (check (GST_VIDEO_FORMAT_YUY2, 5, 2, off, st, 23, "end past"));
  /* tight RGB rows are a valid layout */
  st[0] = 15;
  fail_unless (check (GST_VIDEO_FORMAT_RGB, 5, 3, off, st, 45, NULL));
  st[0] = 0;
  fail_if (check (GST_VIDEO_FORMAT_RGB, 5, 3, off, st, 45, "is not positive"));
  st[0] = -15;
  fail_if (check (GST_VIDEO_FORMAT_RGB, 5, 3, off, st, 45, "is not positive"));
  /* NV12: the chroma plane's stride and end */
  st[0] = 64;
  st[1] = 63;
  off[1] = 64 * 48;
  fail_if (check (GST_VIDEO_FORMAT_NV12, 64, 48, off, st, 64 * 72,
          "plane 1: stride 63"));
  st[1] = 64;
  fail_unless (check (GST_VIDEO_FORMAT_NV12, 64, 48, off, st, 64 * 72, NULL));
  off[1] = 64 * 48 + 1;
  fail_if (check (GST_VIDEO_FORMAT_NV12, 64, 48, off, st, 64 * 72,
          "plane 1: offset"));
  /* an offset near 2^64 cannot wrap the end back inside the frame */
  off[1] = G_MAXUINT64 - 64;
  fail_if (check (GST_VIDEO_FORMAT_NV12, 64, 48, off, st, 64 * 72,
          "plane 1: offset"));
  /* the largest stride: products in 64 bits, no wrap, right answer both
   * sides of the frame's end */
  off[1] = 0;
  st[0] = G_MAXINT32;
  st[1] = G_MAXINT32;
  fail_unless (check (GST_VIDEO_FORMAT_NV12, 64, 48, off, st,
          (guint64) G_MAXINT32 * 48, NULL));
  fail_if (check (GST_VIDEO_FORMAT_NV12, 64, 48, off, st,
          (guint64) G_MAXINT32 * 48 - 1, "plane 0: offset"));
}

GST_END_TEST;

/* the last chroma sample of an odd-width YUY2 row survives the copy */
GST_START_TEST (test_frame_copy_odd_yuy2)
{
  GstVideoInfo info;
  GstBuffer *a, *b;
  GstVideoFrame fa, fb;
  GstMapInfo map;
  guint i, r;

  info_for (&info, GST_VIDEO_FORMAT_YUY2, 5, 3);
  a = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  b = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_map (a, &map, GST_MAP_WRITE);
  for (i = 0; i < map.size; i++)
    map.data[i] = i + 1;
  gst_buffer_unmap (a, &map);
  gst_buffer_memset (b, 0, 0, GST_VIDEO_INFO_SIZE (&info));

  fail_unless (gst_video_frame_map (&fa, &info, a, GST_MAP_READ));
  fail_unless (gst_video_frame_map (&fb, &info, b, GST_MAP_WRITE));
  fail_unless (gpushare_video_frame_copy (&fb, &fa));
  for (r = 0; r < 3; r++) {
    const guint8 *s = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fa, 0) +
        r * GST_VIDEO_FRAME_PLANE_STRIDE (&fa, 0);
    const guint8 *d = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fb, 0) +
        r * GST_VIDEO_FRAME_PLANE_STRIDE (&fb, 0);

    /* 12 bytes: Y0 U0 Y1 V0 Y2 U1 Y3 V1 Y4 U2 (Y5) V2 */
    fail_unless (memcmp (s, d, 12) == 0, "row %u differs", r);
  }
  gst_video_frame_unmap (&fb);
  gst_video_frame_unmap (&fa);
  gst_buffer_unref (a);
  gst_buffer_unref (b);
}

GST_END_TEST;

/* The application's route (gpusharemeta.h): the meta the header finds by
 * name alone, with the layout it was given, and the memory that stands for
 * a slot: no host mapping, read-only, and its notify once, when freed */
static guint slot_freed;

static void
on_slot_freed (gpointer data)
{
  slot_freed++;
}

GST_START_TEST (test_slot_meta)
{
  GstGpuShareCudaMeta *m;
  GstVideoInfo info;
  GstMemory *mem;
  GstMapInfo map;
  GstBuffer *buf, *copy;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, 1920, 1080);
  mem = gpushare_slot_memory_new (GST_VIDEO_INFO_SIZE (&info), NULL,
      on_slot_freed);
  fail_unless (GST_MEMORY_IS_READONLY (mem));
  fail_if (gst_memory_map (mem, &map, GST_MAP_READ));
  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);
  fail_unless (gst_buffer_get_gpu_share_cuda_meta (buf) == NULL);
  gpushare_buffer_add_slot_meta (buf, G_GUINT64_CONSTANT (0x7f0000200000), 3,
      &info);
  /* found by the API type's name, as an application does */
  m = gst_buffer_get_gpu_share_cuda_meta (buf);
  fail_unless (m != NULL);
  fail_unless (g_type_from_name (GPUSHARE_CUDA_META_API_NAME) ==
      gpushare_slot_meta_api_get_type ());
  /* its layout, for an application built with another header */
  fail_unless_equals_int (m->version, GPUSHARE_CUDA_META_VERSION);
  fail_unless_equals_int (m->size, sizeof (GstGpuShareCudaMeta));
  fail_unless (GPUSHARE_CUDA_META_HAS (m, stride));
  m->size = G_STRUCT_OFFSET (GstGpuShareCudaMeta, stride);
  fail_if (GPUSHARE_CUDA_META_HAS (m, stride));
  fail_unless (GPUSHARE_CUDA_META_HAS (m, offset));
  m->size = sizeof (GstGpuShareCudaMeta);
  fail_unless (m->device_ptr == G_GUINT64_CONSTANT (0x7f0000200000));
  fail_unless_equals_int (m->device, 3);
  fail_unless_equals_int (m->format, GST_VIDEO_FORMAT_NV12);
  fail_unless_equals_int (m->width, 1920);
  fail_unless_equals_int (m->height, 1080);
  fail_unless_equals_int (m->n_planes, 2);
  fail_unless_equals_uint64 (m->offset[1], info.offset[1]);
  fail_unless_equals_int (m->stride[0], info.stride[0]);
  /* a copy of the buffer does not take the meta along: it would point
   * into a slot the copy does not hold */
  copy = gst_buffer_copy (buf);
  fail_unless (gst_buffer_get_gpu_share_cuda_meta (copy) == NULL);
  gst_buffer_unref (copy);
  fail_unless_equals_int (slot_freed, 0);
  gst_buffer_unref (buf);
  fail_unless_equals_int (slot_freed, 1);
}

GST_END_TEST;

static Suite *
video_suite (void)
{
  Suite *s = suite_create ("gpusharevideo");
  TCase *tc = tcase_create ("geometry");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_row_bytes);
  tcase_add_test (tc, test_default_layouts_pass);
  tcase_add_test (tc, test_check_planes);
  tcase_add_test (tc, test_frame_copy_odd_yuy2);
  tcase_add_test (tc, test_slot_meta);
  return s;
}

GST_CHECK_MAIN (video);
