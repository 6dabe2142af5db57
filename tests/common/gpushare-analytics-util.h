/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inference results for the tests, with GStreamer's analytics library
 * (1.24+): what a detector and a tracker would attach to a frame, and a
 * text of everything GStreamer's accessors say of a buffer's
 * GstAnalyticsRelationMeta, so that two processes' metas compare as
 * strings.  Only with HAVE_GST_ANALYTICS.
 */

#ifndef __GPUSHARE_ANALYTICS_UTIL_H__
#define __GPUSHARE_ANALYTICS_UTIL_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* buf's tensors (1.26), then the mtds of its analytics meta in id order
 * and every relation between them, as lines of text ("" without them);
 * mtds of other types than object detection, classification, tracking,
 * segmentation and (1.28) tensor end the list (they do not travel) */
gchar *gpushare_test_analytics_describe (GstBuffer * buf);

/* a mask's format, size and pixels row by row (its video meta's), as a
 * digest; NULL without a video meta */
gchar *gpushare_test_mask_digest (GstBuffer * mask);

/* a detector: n detections (with a rotation on 1.26) of frame, each with
 * its classification, the two related; buf must be writable */
void gpushare_test_analytics_detect (GstBuffer * buf, guint frame, guint n);

/* a tracker: a track for each detection of buf's analytics meta, related
 * to it, and (1.28) the track's re-identification embedding, a tensor mtd
 * related to the track; buf must be writable */
void gpushare_test_analytics_track (GstBuffer * buf);

/* a segmentation mtd with a width x height GRAY8 mask (rows padded to 64
 * bytes) that differs from frame to frame; cuda: in GStreamer's CUDA
 * memory, pitched as its allocator does; FALSE before GStreamer 1.26,
 * which has no segmentation mtd, and with cuda where there is no GPU or
 * the tests were built without GStreamer's CUDA library */
gboolean gpushare_test_analytics_segment (GstBuffer * buf, guint frame,
    guint width, guint height, gboolean cuda);

/* a tensor meta of one tensor "scores", FLOAT32 1 x n, that differs from
 * frame to frame, its data in system memory or (cuda) in CUDA memory;
 * FALSE as above */
gboolean gpushare_test_tensor_attach (GstBuffer * buf, guint frame, guint n,
    gboolean cuda);

/* where the payloads of buf's metas (masks, tensor data) lie: "none",
 * "system", "cuda" (GStreamer's CUDA memory) or "mixed" */
const gchar *gpushare_test_payload_memory (GstBuffer * buf);

G_END_DECLS

#endif /* __GPUSHARE_ANALYTICS_UTIL_H__ */
