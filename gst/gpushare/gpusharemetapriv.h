/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plugin's side of gpusharemeta.h: the meta's registration and the
 * memory that stands for a slot in GPU memory.  Not installed.
 */

#ifndef __GPUSHARE_META_PRIV_H__
#define __GPUSHARE_META_PRIV_H__

#include "gpusharemeta.h"

G_BEGIN_DECLS

GType gpushare_slot_meta_api_get_type (void);
const GstMetaInfo *gpushare_slot_meta_get_info (void);
/* version and size say this header's layout */
GstGpuShareCudaMeta *gpushare_buffer_add_slot_meta (GstBuffer * buf,
    guint64 device_ptr, gint device, const GstVideoInfo * info);
/* a memory of size bytes that cannot be mapped on the host (it stands for
 * device memory); notify (user_data) when it is freed */
GstMemory *gpushare_slot_memory_new (gsize size, gpointer user_data,
    GDestroyNotify notify);

G_END_DECLS

#endif /* __GPUSHARE_META_PRIV_H__ */
