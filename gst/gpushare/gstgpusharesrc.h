/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GPU_SHARE_SRC_H__
#define __GST_GPU_SHARE_SRC_H__

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

#define GST_TYPE_GPU_SHARE_SRC (gst_gpu_share_src_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuShareSrc, gst_gpu_share_src, GST, GPU_SHARE_SRC,
    GstPushSrc);

GST_ELEMENT_REGISTER_DECLARE (gpusharesrc);

G_END_DECLS

#endif /* __GST_GPU_SHARE_SRC_H__ */
