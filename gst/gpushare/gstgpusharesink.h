/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GPU_SHARE_SINK_H__
#define __GST_GPU_SHARE_SINK_H__

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS

#define GST_TYPE_GPU_SHARE_SINK (gst_gpu_share_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuShareSink, gst_gpu_share_sink, GST, GPU_SHARE_SINK,
    GstBaseSink);

/**
 * GstGpuShareClientRemoveReason:
 * @GST_GPU_SHARE_REMOVE_GOODBYE: the consumer said goodbye
 * @GST_GPU_SHARE_REMOVE_HANGUP: the consumer's socket closed (it exited or died)
 * @GST_GPU_SHARE_REMOVE_PROTOCOL: the consumer sent a malformed or illegal message
 * @GST_GPU_SHARE_REMOVE_VERSION: the consumer speaks another major version
 * @GST_GPU_SHARE_REMOVE_NOT_AUTHORIZED: the consumer's credentials were refused
 * @GST_GPU_SHARE_REMOVE_UNSUPPORTED: no memory type in common
 * @GST_GPU_SHARE_REMOVE_SLOW: the consumer stopped reading its socket
 * @GST_GPU_SHARE_REMOVE_TOO_MANY: the sink had max-clients already
 * @GST_GPU_SHARE_REMOVE_PEER_ERROR: the consumer reported an error
 * @GST_GPU_SHARE_REMOVE_RESOURCE: exporting the slots failed
 * @GST_GPU_SHARE_REMOVE_SHUTDOWN: the sink stopped
 * @GST_GPU_SHARE_REMOVE_TIMEOUT: the consumer did not finish its handshake
 *   (or the mapping of a new ring) within handshake-timeout, or sent
 *   nothing, not even a PING, for 3 heartbeat-interval
 * @GST_GPU_SHARE_REMOVE_LEASE: the consumer held a frame's slot for longer
 *   than lease-timeout while the producer waited for a free slot; the slots
 *   it held are quarantined
 */
typedef enum
{
  GST_GPU_SHARE_REMOVE_GOODBYE,
  GST_GPU_SHARE_REMOVE_HANGUP,
  GST_GPU_SHARE_REMOVE_PROTOCOL,
  GST_GPU_SHARE_REMOVE_VERSION,
  GST_GPU_SHARE_REMOVE_NOT_AUTHORIZED,
  GST_GPU_SHARE_REMOVE_UNSUPPORTED,
  GST_GPU_SHARE_REMOVE_SLOW,
  GST_GPU_SHARE_REMOVE_TOO_MANY,
  GST_GPU_SHARE_REMOVE_PEER_ERROR,
  GST_GPU_SHARE_REMOVE_RESOURCE,
  GST_GPU_SHARE_REMOVE_SHUTDOWN,
  GST_GPU_SHARE_REMOVE_TIMEOUT,
  GST_GPU_SHARE_REMOVE_LEASE,
} GstGpuShareClientRemoveReason;

#define GST_TYPE_GPU_SHARE_CLIENT_REMOVE_REASON \
  (gst_gpu_share_client_remove_reason_get_type ())
GType gst_gpu_share_client_remove_reason_get_type (void);

/**
 * GstGpuShareSlowPolicy:
 * @GST_GPU_SHARE_POLICY_AUTO: leaky for live upstreams, lossless otherwise
 * @GST_GPU_SHARE_POLICY_LOSSLESS: the producer waits for every consumer
 * @GST_GPU_SHARE_POLICY_LEAKY: a consumer holding its share of slots misses frames
 */
typedef enum
{
  GST_GPU_SHARE_POLICY_AUTO,
  GST_GPU_SHARE_POLICY_LOSSLESS,
  GST_GPU_SHARE_POLICY_LEAKY,
} GstGpuShareSlowPolicy;

#define GST_TYPE_GPU_SHARE_SLOW_POLICY (gst_gpu_share_slow_policy_get_type ())
GType gst_gpu_share_slow_policy_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (gpusharesink);

G_END_DECLS

#endif /* __GST_GPU_SHARE_SINK_H__ */
