/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the planes of a video frame occupy, computed from the format alone,
 * never from a stride a peer sent.
 *
 * Two uses: a consumer checks a producer's layout with it before any buffer
 * points into a mapping (a stride shorter than a row would let downstream
 * read past the slot), and both ends copy planes row by row with it.
 * GStreamer 1.22's gst_video_frame_copy () copies COMP_WIDTH * PSTRIDE bytes
 * of a plane's first component, which for packed 4:2:2 at odd widths (YUY2,
 * UYVY, ...) leaves out the last chroma sample of each row: the row length
 * here is the furthest byte of any component of the plane.
 */

#ifndef __GPUSHARE_VIDEO_H__
#define __GPUSHARE_VIDEO_H__

#include <gst/video/video.h>
#include "gpushareproto.h"

G_BEGIN_DECLS

/* The buffer flags a FRAME carries: every GstBufferFlags and
 * GstVideoBufferFlags bit (the video ones start at bit 20), but not the
 * mini-object's own (LOCKABLE, LOCK_READONLY, MAY_BE_LEAKED) nor
 * TAG_MEMORY, which speak of a buffer of one process, not of the frame. */
#define GPUSHARE_BUFFER_FLAGS_CARRIED \
  ((guint32) ~(GST_MINI_OBJECT_FLAG_LOCKABLE | \
      GST_MINI_OBJECT_FLAG_LOCK_READONLY | \
      GST_MINI_OBJECT_FLAG_MAY_BE_LEAKED | GST_BUFFER_FLAG_TAG_MEMORY))

/* The bytes one row of plane p holds and its number of rows, for the
 * format, width and height of info (its strides are not read).  FALSE for a
 * format whose rows are not described this way (tiled formats). */
gboolean gpushare_video_plane_geometry (const GstVideoInfo * info, guint p,
    guint64 * row_bytes, guint * rows);

/* Checks that planes with these offsets and strides fit the format of info
 * inside frame_size bytes: per plane a stride of at least a row, the whole
 * plane (rows * stride from its offset) inside the frame, no product
 * overflowing.  On failure *why names the plane and the field. */
gboolean gpushare_video_check_planes (const GstVideoInfo * info,
    guint n_planes, const guint64 * offsets, const gint32 * strides,
    guint64 frame_size, gchar ** why);

/* the same check of info's own offsets, strides and size: whether a
 * consumer accepts a layout GStreamer made for these caps */
gboolean gpushare_video_check_info (const GstVideoInfo * info, gchar ** why);

/* gst_video_frame_copy () with the row lengths above; both frames of the
 * same format and size */
gboolean gpushare_video_frame_copy (GstVideoFrame * dest,
    const GstVideoFrame * src);

/* caps a consumer takes from a producer's text (gpushare_caps_from_peer
 * ()): fixed raw video, vinfo set from them; NULL for any other text */
GstCaps *gpushare_video_caps_from_peer (const gchar * text,
    GstVideoInfo * vinfo);

/* The caps of a layout a producer announced, with vinfo set to its planes
 * and frame size, after every check of gpushare_video_check_planes () and
 * more: fixed raw video, no memory feature, the plane count of the format,
 * the frame inside the slot.  NULL with *why (allocated) otherwise. */
GstCaps *gpushare_video_layout_to_caps (const GpuShareLayout * layout,
    GstVideoInfo * vinfo, gchar ** why);

G_END_DECLS

#endif /* __GPUSHARE_VIDEO_H__ */
