/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Side memory: a memory file of a ring, a region for each slot, where the
 * large payloads of a frame's metas (segmentation masks, tensor data) go
 * beside the frame, written once for every consumer and read in place
 * (docs/protocol.md, "Side memory").  The region of a slot lives and is
 * reused with the slot: what a consumer reads there stays while it holds
 * the slot's frame.
 */

#ifndef __GPUSHARE_SIDE_H__
#define __GPUSHARE_SIDE_H__

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GpuShareSide GpuShareSide;

/* Producer: side memory of n_slots regions of slot_pages pages
 * (GPUSHARE_SIDE_PAGE bytes) each, 1 .. GPUSHARE_MAX_SIDE_PAGES; pages
 * take memory once written.  NULL with error. */
GpuShareSide *gpushare_side_new (guint n_slots, guint32 slot_pages,
    GError ** error);
/* Consumer: the producer's side memory, fd (taken: closed here, whatever
 * the outcome) checked as a slot's is (sealed, read-only, exactly as
 * large as said) and mapped read-only.  NULL with error. */
GpuShareSide *gpushare_side_view_new (gint fd, guint n_slots,
    guint32 slot_pages, GError ** error);
GpuShareSide *gpushare_side_ref (GpuShareSide * side);
void gpushare_side_unref (GpuShareSide * side);

/* the region of a slot, and its size in bytes */
guint8 *gpushare_side_region (GpuShareSide * side, guint slot);
gsize gpushare_side_region_size (GpuShareSide * side);
guint32 gpushare_side_pages (GpuShareSide * side);
/* Producer: a descriptor for a consumer, read-only; -1 with error */
gint gpushare_side_export (GpuShareSide * side, GError ** error);

/* each slot's side memory for frames of width x height, by the
 * meta-slot-size setting: -1 (auto) room for a 16-bit mask as large as
 * the frame, 0 none, otherwise bytes; in pages, capped */
guint32 gpushare_side_pages_for (gint64 setting, guint width, guint height);

G_END_DECLS

#endif /* __GPUSHARE_SIDE_H__ */
