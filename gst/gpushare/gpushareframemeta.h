/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The GstMetas of a frame on the wire: the entries of a META message or
 * of a lane's meta region (gpushareproto.h), written from a producer's
 * buffer and added to the consumer's.
 *
 * Each entry is one meta: a kind, and a body the kind describes (all
 * integers little-endian; a string is its length (32 bits) and that many
 * bytes of UTF-8 without NUL, at most GPUSHARE_META_MAX_STRING).  A
 * consumer skips kinds it does not know (a newer producer's), and refuses
 * a message whose known entries do not parse (gpushare_frame_meta_check),
 * before any of it reaches a buffer.  A meta that cannot be written (no
 * kind for it, larger than what is left of the message) is counted, never
 * fatal.
 */

#ifndef __GPUSHARE_FRAME_META_H__
#define __GPUSHARE_FRAME_META_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include "gpushareproto.h"

G_BEGIN_DECLS

#define GPUSHARE_META_MAX_STRING 4096
#define GPUSHARE_META_MAX_ROI_PARAMS 16
/* custom metas a producer may have registered in a consumer's process,
 * for the process's life (docs/security.md, "Bounds") */
#define GPUSHARE_META_MAX_CUSTOM_REGISTRATIONS 32

typedef enum
{
  /* GstVideoRegionOfInterestMeta: id (32), parent_id (32, signed), x, y,
   * w, h (32 each), roi_type (string), n_params (32), each param a
   * GstStructure as a string */
  GPUSHARE_META_ROI = 1,
  /* GstReferenceTimestampMeta: reference caps (string), timestamp (64),
   * duration (64) */
  GPUSHARE_META_REFERENCE_TIMESTAMP = 2,
  /* GstVideoTimeCodeMeta: fps_n, fps_d, flags, hours, minutes, seconds,
   * frames, field_count (32 each) */
  GPUSHARE_META_TIMECODE = 3,
  /* GstVideoCaptionMeta: caption_type (32), data (32-bit length, bytes) */
  GPUSHARE_META_CAPTION = 4,
  /* GstVideoAFDMeta: field, spec, afd (32 each) */
  GPUSHARE_META_AFD = 5,
  /* GstVideoBarMeta: field, is_letterbox, bar_data1, bar_data2 (32 each) */
  GPUSHARE_META_BAR = 6,
  /* GstCustomMeta: name (string), its structure as a string */
  GPUSHARE_META_CUSTOM = 7,
  /* any other meta with a serialize function (GStreamer 1.24+):
   * gst_meta_serialize ()'s bytes, which name the meta */
  GPUSHARE_META_SERIALIZED = 8,
  /* GstAnalyticsRelationMeta (GStreamer 1.24+): n_mtds (32), each mtd its
   * type's name (string: "object-detection", "classification",
   * "object-tracking"), the length of its body (32) and the body; then
   * n_relations (32), each the indices in this entry of its first and
   * second mtd and its GstAnalyticsRelTypes (32 each).  Bodies:
   * object-detection: object type (string), x, y, w, h (32, signed),
   * location confidence, rotation (32, IEEE float); classification: n
   * (32), each a class (string) and its confidence (32, float);
   * object-tracking: tracking id, first seen, last seen (64 each), lost
   * (32).  A type the consumer does not know is skipped, with its
   * relations (docs/protocol.md, "Analytics"). */
  GPUSHARE_META_ANALYTICS = 9,
  /* GstTensorMeta (GStreamer 1.26+), its tensors inline: n_tensors (32),
   * each its id (string), layout, data type, dims order, n_dims (32
   * each), the dims (64 each) and its data (32-bit length, bytes: as many
   * as the dims and the data type make).  Tensors in system memory only,
   * as long as the frame's metas fit in one META (docs/protocol.md) */
  GPUSHARE_META_TENSORS = 10,
} GpuShareMetaKind;

/* tensors of one tensor meta, and dims of one tensor, at most */
#define GPUSHARE_META_MAX_TENSORS 16
#define GPUSHARE_META_MAX_TENSOR_DIMS 8
/* regions of one segmentation mtd (1.26) */
#define GPUSHARE_META_MAX_REGIONS 256
/* a payload's length that says it lies in the side memory, where its
 * offset and length (64 bits each) follow */
#define GPUSHARE_META_IN_SIDE G_MAXUINT32
/* since minor 11: a payload's length that says it lies in GPU memory, in
 * the room of the frame's GPU slot past the frame, where its offset there
 * and its length follow, then where a copy of it lies in the side memory
 * (G_MAXUINT64: none), 64 bits each */
#define GPUSHARE_META_IN_DEVICE (G_MAXUINT32 - 1)

/* mtds, classes of a classification mtd and relations in one analytics
 * entry, at most (docs/security.md, "Bounds") */
#define GPUSHARE_META_MAX_MTDS 256
#define GPUSHARE_META_MAX_CLASSES 64
#define GPUSHARE_META_MAX_RELATIONS 4096
/* the GstAnalyticsRelTypes a relation may have, one or more: IS_PART_OF,
 * CONTAIN, RELATE_TO and (1.26) N_TO_N */
#define GPUSHARE_META_RELATION_TYPES 0x1eu
/* labels (object types, classes, regions of interest's types) a
 * consumer's process makes quarks of for its peers, for the process's
 * life: GQuarks are never freed */
#define GPUSHARE_META_MAX_PEER_QUARKS 4096

/* The side memory of a frame's slot (docs/protocol.md, "Side memory"):
 * where the large payloads of its metas go (segmentation masks, tensor
 * data), once for every consumer, read in place */
typedef struct
{
  guint8 *data;                 /* the region of the frame's slot; NULL
                                 * while a consumer only checks */
  gsize size;                   /* bytes of it */
  gsize used;                   /* producer: bytes written so far */
  /* consumer: a payload read in place holds hold (ref_func) until its
   * memory is freed (unref_func); NULL: payloads are copied */
  gpointer hold;
  gpointer (*ref_func) (gpointer hold);
  GDestroyNotify unref_func;
  /* the room of the frame's GPU slot past the frame (since minor 11):
   * where payloads in GPU memory go; device_size 0: none */
  gsize device_size;
  gsize device_used;            /* producer: bytes written so far */
  /* producer: a copy of each payload in GPU memory goes in data too (a
   * consumer of this frame reads system memory) */
  gboolean device_host_copy;
  /* producer: queues the copy of rows rows of row_bytes, src_stride
   * apart from src_offset on in src's memory (GPU memory), packed to
   * offset of the room; FALSE: not copied */
  gboolean (*device_put) (gpointer user_data, gsize offset, GstBuffer * src,
      gsize src_offset, gsize src_stride, gsize row_bytes, guint rows);
  /* consumer: a buffer of the payload at offset of the room, rows rows of
   * row_bytes packed (a mask of format, or bytes: GST_VIDEO_FORMAT_UNKNOWN,
   * one row), read in place or copied, with its GstVideoMeta for a mask;
   * NULL: none could be made */
  GstBuffer *(*device_get) (gpointer user_data, gsize offset,
      GstVideoFormat format, gsize row_bytes, guint rows);
  gpointer device_user_data;
} GpuShareMetaSide;

/* Producer: the metas of buf that travel, into m (sequence left to the
 * caller), up to its capacity.  FALSE when there is none (nothing to send).  *n_skipped:
 * metas of buf that could not be written (GstVideoMeta, which the layout
 * carries, is not one of them).  *skipped_names: the first one's name, if
 * the caller wants it (static). */
gboolean gpushare_frame_meta_collect (GstBuffer * buf, GpuShareFrameMetas * m,
    guint * n_skipped, const gchar ** skipped_name);
/* the same, with the payloads in side (NULL: none) where they fit; m's
 * side_len says how much of it they took */
gboolean gpushare_frame_meta_collect_side (GstBuffer * buf,
    GpuShareFrameMetas * m, GpuShareMetaSide * side, guint * n_skipped,
    const gchar ** skipped_name);

/* Producer: a meta of buf has its payload (a segmentation mask, tensor
 * data) in memory that is_device says is GPU memory */
gboolean gpushare_frame_meta_has_device_payloads (GstBuffer * buf,
    gboolean (*is_device) (GstMemory * mem));

/* Consumer, at receipt: the entries chain, and every entry of a known kind
 * parses.  On failure
 * *why says which and what (free it). */
gboolean gpushare_frame_meta_check (const GpuShareFrameMetas * m, gchar ** why);
/* the same, where the frame's slot has side_size bytes of side memory
 * and, read in GPU memory, device_size bytes of room past the frame (0:
 * none): a payload there lies inside it */
gboolean gpushare_frame_meta_check_side (const GpuShareFrameMetas * m,
    gsize side_size, gsize device_size, gchar ** why);
/* the same of a META's metas */
gboolean gpushare_frame_meta_check_meta (const GpuShareMeta * meta,
    gchar ** why);

/* Consumer: adds the metas of a checked m to buf.  Returns how many were
 * added; *n_dropped counts entries that were not (a kind this version
 * does not know, a value GStreamer refused, a custom meta past the
 * registrations allowed). */
guint gpushare_frame_meta_apply (const GpuShareFrameMetas * m, GstBuffer * buf,
    guint * n_dropped);
/* the same, the payloads in side (the region of the frame's slot, or NULL)
 * read in place or copied, as side says */
guint gpushare_frame_meta_apply_side (const GpuShareFrameMetas * m,
    GstBuffer * buf, const GpuShareMetaSide * side, guint * n_dropped);

G_END_DECLS

#endif /* __GPUSHARE_FRAME_META_H__ */
