/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-gpusharesrc
 * @title: gpusharesrc
 * @see_also: gpusharesink
 *
 * Receives the frames a gpusharesink in another process shares.  The
 * producer's slots are mapped once per connection, read-only, and every
 * buffer pushed wraps a slot in place (a #GstVideoMeta carries the strides);
 * when its last reference goes, the slot is given back to the producer.
 * At most #GstGpuShareSrc:max-in-place such buffers live at once: past
 * that a frame is copied and its slot given back at once, so that a sink
 * or a queue that keeps buffers never holds up the producer.
 *
 * The src may start before the producer: it waits up to
 * #GstGpuShareSrc:connection-timeout for it, and gets the caps from the
 * handshake before any frame.  With #GstGpuShareSrc:is-live, timestamps of
 * a live producer are mapped through CLOCK_MONOTONIC into this pipeline's
 * running time, and the producer's latency is reported.
 *
 * The memory type in use, and why, is in #GstGpuShareSrc:stats and in a
 * `gpushare-transport` element message.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 gpusharesrc socket-path=/tmp/gpushare.sock ! videoconvert ! autovideosink
 * ]|
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstgpusharesrc.h"

#include "gpusharemetapriv.h"

#include <string.h>
#include <time.h>
#include <gst/video/video.h>
#include <gst/allocators/allocators.h>

#include "gpushareclient.h"
#include "gpushareids.h"
#include "gpusharenegotiate.h"
#include "gpushareframemeta.h"
#include "gpusharetext.h"
#include "gpusharetiming.h"
#include "gpusharetest.h"
#include "gpusharevideo.h"
#include "gpusharexfer.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpu_share_src_debug);
#define GST_CAT_DEFAULT gst_gpu_share_src_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_CONNECTION_TIMEOUT 10000
#define DEFAULT_IS_LIVE FALSE
#define DEFAULT_TRANSPORT GST_GPU_SHARE_TRANSPORT_AUTO
#define DEFAULT_SYNC GST_GPU_SHARE_SYNC_AUTO
#define DEFAULT_CUDA_DEVICE_ID 0
#define DEFAULT_PRODUCER_LOST GST_GPU_SHARE_PRODUCER_LOST_ERROR
#define DEFAULT_HEARTBEAT_INTERVAL 1000 /* ms */
#define DEFAULT_MAX_IN_PLACE 0  /* half the producer's ring */
#define DEFAULT_IO_MODE GST_GPU_SHARE_IO_AUTO
#define DEFAULT_FRAME_LANE TRUE
#define DEFAULT_WAKE_AHEAD 0
/* the producer's events held back until the first buffer, at most */

/* the client's settings are the element's enums */
G_STATIC_ASSERT ((gint) GPUSHARE_PRODUCER_LOST_RECONNECT ==
    (gint) GST_GPU_SHARE_PRODUCER_LOST_RECONNECT);

enum
{
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_CONNECTION_TIMEOUT,
  PROP_IS_LIVE,
  PROP_PRODUCER_LOST,
  PROP_TRANSPORT,
  PROP_SYNC_MODE,
  PROP_CUDA_DEVICE_ID,
  PROP_HEARTBEAT_INTERVAL,
  PROP_ALLOWED_PRODUCER_UIDS,
  PROP_MAX_IN_PLACE,
  PROP_IO_MODE,
  PROP_FRAME_LANE,
  PROP_WAKE_AHEAD,
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

struct _GstGpuShareSrc
{
  GstPushSrc parent;

  /* properties, under the object lock */
  gchar *socket_path;
  guint connection_timeout;
  gboolean is_live;
  GstGpuShareProducerLost producer_lost;
  GstGpuShareTransport transport;
  GstGpuShareSync sync;
  gint cuda_device_id;
  guint heartbeat_interval;     /* ms, 0: none */
  GArray *allowed_producer_uids;        /* guint, beside our own and root */
  guint max_in_place;           /* 0: half the producer's ring */
  GstGpuShareIoMode io_mode;
  gboolean frame_lane;
  guint wake_ahead;

  /* the consumer core, from start on (kept after stop for its stats) */
  GpuShareClient *client;
  GstObject *gpu_ctx;           /* GStreamer's GPU context, shared */
  gint frames_copied;           /* atomic */
  gint frames_in_place;         /* atomic */
  /* reads in place whose ready word was seen on the host, and the time
   * spent looking for it (atomic; gpushare_xfer_view_take_ready ()) */
  guint64 ready_on_host;
  guint64 ready_spin_us;
  /* downstream takes fd memory (it proposed an fd allocator): frames in
   * place go as GstFdMemory on the slot's fd, which elements that pass
   * fds on (unixfdsink) send as they are */
  gint fd_memory;               /* atomic */
  GstAllocator *fd_allocator;
  gint metas_received;          /* atomic */
  gint metas_dropped;           /* atomic */
  gboolean told_metas_dropped;
  gboolean told_device_payloads;
  gint events_received;         /* atomic */
  gint events_dropped;          /* atomic */
  gboolean told_events_dropped;
  /* streaming thread: the producer's events before the first buffer,
   * pushed after its segment (early_probe) */
  GQueue early_events;
  gboolean first_pushed;
  /* from a FRAME read by the control thread to its buffer made here */
  GpuShareTiming handoff;
  /* of the handoff, the frame's metas: checked as it was read, and
   * added to its buffer (their payloads wrapped or copied) */
  GpuShareTiming metas;
  gulong early_probe_id;

  /* streaming thread; caps and in_caps also read by get_caps under the
   * object lock */
  GstBufferPool *out_pool;      /* for copies out of GPU slots */
  gboolean out_gpu;             /* negotiated GPU memory */
  gboolean out_slot;            /* negotiated the application's route
                                 * (memory:GpuShareCUDA) */
  /* frames may be pushed in place (under the object lock: stats), and why
   * not (a static string) */
  gboolean in_place;
  gchar *copy_reason;
  GstCaps *caps;                /* the output caps */
  GstCaps *in_caps;             /* the producer's caps, system memory */
  GstVideoInfo vinfo;           /* the slots' layout */
  GpuShareLayout layout;
  /* not live here: the producer's running times map to ours as
   * first_rt + (abs - first_abs); anchored again at the first frame
   * received after each start of playing (reanchor, playing_since_us:
   * under the object lock) */
  gboolean have_first_abs;
  guint64 first_abs;
  guint64 first_rt;
  gboolean reanchor;
  gint64 playing_since_us;
  /* the stream times of the producer: a segment starts at the first frame
   * taken from each producer (need_segment), and running time goes on from
   * where it was (running_end) or from now */
  gboolean need_segment;
  /* a new stream-start went: a segment follows at the next frame even
   * where it is the one the pad had */
  gboolean resend_segment;
  GstClockTime running_end;
  /* the end of the last buffer, in its segment: a GAP event covers the
   * frames missed after it (NONE: none in this segment yet) */
  GstClockTime last_end;
};

#define gst_gpu_share_src_parent_class parent_class
G_DEFINE_TYPE (GstGpuShareSrc, gst_gpu_share_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (gpusharesrc, "gpusharesrc", GST_RANK_NONE,
    GST_TYPE_GPU_SHARE_SRC);

/* The client's events, delivered without any lock held */
static void
client_event (GpuShareClient * client, const GpuShareClientEvent * ev,
    gpointer user_data)
{
  GstGpuShareSrc *self = user_data;

  switch (ev->type) {
    case GPUSHARE_CLIENT_EVENT_TRANSPORT:
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self),
              gst_structure_new ("gpushare-transport",
                  "memory-type", G_TYPE_STRING,
                  gpushare_mem_type_to_string (ev->mem_type),
                  "reason", G_TYPE_STRING, ev->reason, NULL)));
      /* connected to a producer: the first, or one after a reconnect */
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self),
              gst_structure_new ("gpushare-producer-connected",
                  "pid", G_TYPE_INT, ev->producer_pid,
                  "name", G_TYPE_STRING, ev->producer_name,
                  "reconnects", G_TYPE_UINT, ev->reconnects, NULL)));
      break;
    case GPUSHARE_CLIENT_EVENT_PRODUCER_LOST:{
      GEnumClass *k = g_type_class_ref (GST_TYPE_GPU_SHARE_PRODUCER_LOST);
      GEnumValue *v = g_enum_get_value (k, ev->action);

      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self),
              gst_structure_new ("gpushare-producer-lost",
                  "pid", G_TYPE_INT, ev->producer_pid,
                  "detail", G_TYPE_STRING, ev->detail,
                  "action", G_TYPE_STRING, v ? v->value_nick : "error",
                  "reconnects", G_TYPE_UINT, ev->reconnects, NULL)));
      g_type_class_unref (k);
      break;
    }
    case GPUSHARE_CLIENT_EVENT_STALLED:
      /* once per stall; the stats say it too (stalled, frames-missed) */
      GST_ELEMENT_WARNING_WITH_DETAILS (self, RESOURCE, BUSY,
          ("The producer skips this consumer: downstream keeps its whole "
              "share of the producer's slots"), ("%s", ev->detail),
          ("share", G_TYPE_UINT, ev->share,
              "slots-held", G_TYPE_UINT, ev->slots_held,
              "frames-skipped", G_TYPE_UINT64, ev->skipped, NULL));
      break;
  }
}

static GstPadProbeReturn early_probe (GstPad * pad, GstPadProbeInfo * info,
    gpointer user_data);

/* GStreamer's CUDA context, shared with the neighbouring GPU elements (the
 * query goes to them: no lock held).  At start, and again when GPU slots
 * come and there is none yet: a GPU that had no room for one more context
 * as many processes started may have it once the slots are mapped (this
 * process's primary context, which it wraps, exists by then). */
/* ctx (a reference) becomes the GPU context unless there is one already
 * (the streaming thread and the application's set_context may each find
 * one at once).  The field only goes from NULL to a context while the
 * src runs; stop () clears it. */
static void
take_gpu_context (GstGpuShareSrc * self, GstObject * ctx)
{
  GST_OBJECT_LOCK (self);
  if (!self->gpu_ctx) {
    self->gpu_ctx = ctx;
    ctx = NULL;
  }
  GST_OBJECT_UNLOCK (self);
  if (ctx)
    gst_object_unref (ctx);
}

static gboolean
ensure_gpu_context (GstGpuShareSrc * self)
{
  GstObject *ctx = NULL;

  if (self->gpu_ctx)
    return TRUE;
  if (gpushare_test_fails ("src", "gpu-context"))
    return FALSE;
  if (!gpushare_xfer_gpu_context_ensure (GST_ELEMENT (self),
          self->cuda_device_id, &ctx) || !ctx)
    return self->gpu_ctx != NULL;
  take_gpu_context (self, ctx);
  return TRUE;
}

static gboolean
gst_gpu_share_src_start (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);
  GpuShareClientConfig config = { 0, };
  GpuShareClient *client;
  GError *error = NULL;

  GST_OBJECT_LOCK (self);
  if (!self->socket_path) {
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("No socket path set"),
        ("set the socket-path property"));
    return FALSE;
  }
  config.socket_path = self->socket_path;
  config.connection_timeout = self->connection_timeout;
  config.producer_lost = (GpuShareProducerLost) self->producer_lost;
  config.transport = self->transport;
  config.sync = self->sync;
  config.cuda_device_id = self->cuda_device_id;
  config.heartbeat_interval = self->heartbeat_interval;
  config.lane = self->frame_lane;
  config.wake_ahead_us = self->wake_ahead;
  config.copies = self->io_mode == GST_GPU_SHARE_IO_COPY;
  config.allowed_producer_uids = self->allowed_producer_uids;
  config.name = GST_OBJECT_NAME (self);
  /* copied: the settings of this run */
  client = gpushare_client_new (&config, self, client_event, self);
  g_clear_pointer (&self->client, gpushare_client_free);
  self->client = client;
  GST_OBJECT_UNLOCK (self);

  g_atomic_int_set (&self->frames_copied, 0);
  g_atomic_int_set (&self->frames_in_place, 0);
  __atomic_store_n (&self->ready_on_host, 0, __ATOMIC_RELAXED);
  __atomic_store_n (&self->ready_spin_us, 0, __ATOMIC_RELAXED);
  g_atomic_int_set (&self->metas_received, 0);
  g_atomic_int_set (&self->metas_dropped, 0);
  self->told_metas_dropped = FALSE;
  g_atomic_int_set (&self->events_received, 0);
  g_atomic_int_set (&self->events_dropped, 0);
  self->told_events_dropped = FALSE;
  self->have_first_abs = FALSE;
  self->first_pushed = FALSE;
  gpushare_timing_reset (&self->handoff);
  gpushare_timing_reset (&self->metas);
  g_queue_clear_full (&self->early_events, (GDestroyNotify) gst_event_unref);
  if (!self->early_probe_id)
    self->early_probe_id = gst_pad_add_probe (GST_BASE_SRC_PAD (self),
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
        early_probe, self, NULL);
  self->need_segment = TRUE;
  self->resend_segment = FALSE;
  self->last_end = GST_CLOCK_TIME_NONE;
  self->running_end = 0;
  gst_video_info_init (&self->vinfo);
  if (!gpushare_client_start (client, &error)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("This process is out "
            "of file descriptors: raise its limit (ulimit -n, LimitNOFILE=) "
            "or read fewer streams in it"), ("%s", error ? error->message :
            "?"));
    g_clear_error (&error);
    return FALSE;
  }
  /* share a GPU context with neighbouring GPU elements (the query goes to
   * them: no lock held) */
  if (gpushare_client_gpu_ok (client))
    ensure_gpu_context (self);
  return TRUE;
}

static gboolean
gst_gpu_share_src_stop (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);
  GstObject *ctx;

  if (self->client)
    gpushare_client_stop (self->client);
  GST_OBJECT_LOCK (self);
  gst_clear_caps (&self->caps);
  gst_clear_caps (&self->in_caps);
  GST_OBJECT_UNLOCK (self);
  if (self->out_pool) {
    gst_buffer_pool_set_active (self->out_pool, FALSE);
    gst_clear_object (&self->out_pool);
  }
  self->out_gpu = FALSE;
  self->out_slot = FALSE;
  GST_OBJECT_LOCK (self);
  ctx = g_steal_pointer (&self->gpu_ctx);
  GST_OBJECT_UNLOCK (self);
  gst_clear_object (&ctx);
  return TRUE;
}

static GstClockTime running_now (GstGpuShareSrc * self);

/* the running time here of the producer's running time abs, in a
 * pipeline that is not live: its spacing kept, from the anchor */
static guint64
abs_mapped (GstGpuShareSrc * self, guint64 abs)
{
  if (abs >= self->first_abs)
    return self->first_rt + (abs - self->first_abs);
  return self->first_rt > self->first_abs - abs ?
      self->first_rt - (self->first_abs - abs) : 0;
}

/* Not live here: the producer's spacing is kept, from 0 at the first
 * frame.  A live producer's frames come at the rate it renders them,
 * whatever this pipeline does: those that arrived while it prerolled
 * (its other sources still starting) or was paused would make every
 * frame after them wait that long in a synchronising sink, for good, and
 * frames waiting there hold their slots, which a leaky producer counts
 * against this consumer's share.  So at the first frame received after
 * the pipeline started playing, a frame that would wait is made due when
 * it was received, and the spacing goes on from there (the frames queued
 * before it come late, and are rendered at once). */
static guint64
abs_to_running_not_live (GstGpuShareSrc * self, guint64 abs, gint64 received_us)
{
  gboolean reanchor;

  if (!self->have_first_abs) {
    self->first_abs = abs;
    self->first_rt = 0;
    self->have_first_abs = TRUE;
  }
  GST_OBJECT_LOCK (self);
  reanchor = self->reanchor && received_us >= self->playing_since_us;
  GST_OBJECT_UNLOCK (self);
  if (reanchor) {
    /* none until the element is PLAYING: the next frame then */
    GstClockTime now = running_now (self);
    GstClockTime waited = (GstClockTime) MAX (0,
        g_get_monotonic_time () - received_us) * GST_USECOND;

    if (GST_CLOCK_TIME_IS_VALID (now)) {
      GstClockTime received = now > waited ? now - waited : 0;

      GST_OBJECT_LOCK (self);
      self->reanchor = FALSE;
      GST_OBJECT_UNLOCK (self);
      if (received < abs_mapped (self, abs)) {
        GST_DEBUG_OBJECT (self, "frames due %" GST_TIME_FORMAT " earlier",
            GST_TIME_ARGS (abs_mapped (self, abs) - received));
        self->first_abs = abs;
        self->first_rt = received;
      }
    }
  }
  return abs_mapped (self, abs);
}

static guint64
abs_to_running (GstGpuShareSrc * self, guint64 abs, gint64 received_us)
{
  GstClock *clock;
  GstClockTime base, clock_now;
  struct timespec ts;
  guint64 mono_now;
  gint64 rt;

  if (!GST_CLOCK_TIME_IS_VALID (abs))
    return GST_CLOCK_TIME_NONE;
  clock = gst_element_get_clock (GST_ELEMENT (self));
  if (!self->is_live || !clock) {
    if (clock)
      gst_object_unref (clock);
    return abs_to_running_not_live (self, abs, received_us);
  }
  base = gst_element_get_base_time (GST_ELEMENT (self));
  clock_now = gst_clock_get_time (clock);
  gst_object_unref (clock);
  clock_gettime (CLOCK_MONOTONIC, &ts);
  mono_now = GST_TIMESPEC_TO_TIME (ts);
  /* monotonic -> this pipeline's clock -> running time */
  rt = (gint64) abs + ((gint64) clock_now - (gint64) mono_now) - (gint64) base;
  return rt > 0 ? (guint64) rt : 0;
}

/* timestamps, offsets and flags of a FRAME onto buf */
static void
set_frame_fields (GstGpuShareSrc * self, GstBuffer * buf,
    const GpuShareFrame * f, gboolean discont, gint64 received_us)
{
  if (f->flags & GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME) {
    guint64 pts = abs_to_running (self, f->pts, received_us);

    GST_BUFFER_PTS (buf) = pts;
    GST_BUFFER_DTS (buf) = GST_CLOCK_TIME_IS_VALID (f->dts)
        && GST_CLOCK_TIME_IS_VALID (pts) && f->dts <= f->pts ?
        pts - (f->pts - f->dts) : GST_CLOCK_TIME_NONE;
  } else {
    GST_BUFFER_PTS (buf) = f->pts;
    GST_BUFFER_DTS (buf) = f->dts;
  }
  GST_BUFFER_DURATION (buf) = f->duration;
  GST_BUFFER_OFFSET (buf) = f->offset;
  GST_BUFFER_OFFSET_END (buf) = f->offset_end;
  if (discont) {
    /* the first frame of a new producer */
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  }
  GST_MINI_OBJECT_FLAGS (buf) |=
      f->buffer_flags & GPUSHARE_BUFFER_FLAGS_CARRIED;
}

typedef struct
{
  GstGpuShareSrc *self;
  GpuShareClientFrame *frame;
} DeviceGet;

/* A payload of the frame's metas in GPU memory (a mask of format, or
 * bytes), past the frame in its GPU slot: read in place where the frame
 * is (it holds the frame), else copied on the device.  NULL: not here (no
 * GPU context: a copy in the side memory serves, where there is one) */
static GstBuffer *
payload_from_gpu_slot (gpointer user_data, gsize offset, GstVideoFormat format,
    gsize row_bytes, guint rows)
{
  DeviceGet *d = user_data;
  GstGpuShareSrc *self = d->self;
  GpuShareXferView *view = gpushare_client_frame_view (d->frame);
  guint slot = gpushare_client_frame_info (d->frame)->slot;
  gsize room_at = 0;
  GstVideoInfo info;
  GstMemory *mem = NULL;
  GError *error = NULL;
  GstBuffer *buf;
  gboolean bytes = format == GST_VIDEO_FORMAT_UNKNOWN;

  if (!self->gpu_ctx || row_bytes > G_MAXINT || rows == 0 || rows > G_MAXINT)
    return NULL;
  gpushare_client_frame_device_room (d->frame, &room_at);
  /* its rows packed, as they came */
  if (!gst_video_info_set_format (&info, bytes ? GST_VIDEO_FORMAT_GRAY8 :
          format, bytes ? (guint) row_bytes : (guint) (row_bytes /
              GST_VIDEO_FORMAT_INFO_PSTRIDE (gst_video_format_get_info
                  (format), 0)), rows))
    return NULL;
  GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) = (gint) row_bytes;
  GST_VIDEO_INFO_SIZE (&info) = row_bytes * rows;
  if (gpushare_client_frame_in_place (d->frame)) {
    GpuShareClientFrame *hold = gpushare_client_frame_ref (d->frame);

    mem = gpushare_xfer_view_import_region (view, slot, room_at + offset,
        &info, self->gpu_ctx, hold,
        (GDestroyNotify) gpushare_client_frame_release, &error);
    if (!mem)
      gpushare_client_frame_release (hold);
    g_clear_error (&error);
  }
  if (!mem)
    mem = gpushare_xfer_view_copy_region (view, slot, room_at + offset, &info,
        self->gpu_ctx, &error);
  if (!mem) {
    if (!self->told_device_payloads) {
      GST_WARNING_OBJECT (self, "a meta's payload in GPU memory could not be "
          "read: %s", error->message);
      self->told_device_payloads = TRUE;
    }
    g_clear_error (&error);
    return NULL;
  }
  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);
  if (bytes)
    gst_buffer_resize (buf, 0, row_bytes);
  else
    gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (&info), GST_VIDEO_INFO_WIDTH (&info),
        GST_VIDEO_INFO_HEIGHT (&info), 1, info.offset, info.stride);
  return buf;
}

/* the producer's metas onto buf; those that could not be added (a kind
 * this version does not know, a value GStreamer refused) are counted.
 * Their payloads in the side memory of the frame's slot, or past the
 * frame in its GPU slot, are read in place while the frame is (each holds
 * it), copied where it was */
static void
add_metas (GstGpuShareSrc * self, GstBuffer * buf, const GpuShareFrameMetas * m,
    GpuShareClientFrame * frame)
{
  GpuShareMetaSide side = { NULL, };
  DeviceGet get = { self, frame };
  gsize room_at;
  guint dropped = 0, added;

  side.data = gpushare_client_frame_side (frame, &side.size);
  if (side.data && gpushare_client_frame_in_place (frame)) {
    side.hold = frame;
    side.ref_func = (gpointer (*)(gpointer)) gpushare_client_frame_ref;
    side.unref_func = (GDestroyNotify) gpushare_client_frame_release;
  }
  side.device_size = gpushare_client_frame_device_room (frame, &room_at);
  if (side.device_size) {
    side.device_get = payload_from_gpu_slot;
    side.device_user_data = &get;
  }
  added = gpushare_frame_meta_apply_side (m, buf, side.data || side.device_size
      ? &side : NULL, &dropped);

  g_atomic_int_add (&self->metas_received, added);
  if (dropped) {
    g_atomic_int_add (&self->metas_dropped, dropped);
    if (!self->told_metas_dropped) {
      GST_INFO_OBJECT (self, "%u of the producer's metas could not be "
          "added, counted in the stats (metas-dropped)", dropped);
      self->told_metas_dropped = TRUE;
    }
  }
}

/* The producer's stream-start, when it is not the stream the pad already
 * started (the src's own at first, or the last producer's): it goes at
 * once; once data flowed, the caps again after it and a segment before
 * the next frame, in the order a pad must see them.  NULL: nothing to
 * push. */
static GstEvent *
stream_start_event (GstGpuShareSrc * self, const GpuShareEvent * e,
    gboolean * bad)
{
  GstPad *pad = GST_BASE_SRC_PAD (self);
  GstStructure *s = gpushare_structure_from_peer (e->text);
  const gchar *id = s ? gst_structure_get_string (s, "stream-id") : NULL;
  GstEvent *event = NULL, *now;
  guint group = 0, flags = 0;
  gboolean has_group;

  *bad = !id || !gst_structure_has_name (s, "stream-start");
  if (*bad) {
    if (s)
      gst_structure_free (s);
    return NULL;
  }
  /* 0 is GST_GROUP_ID_INVALID, which no event may carry: no group */
  has_group = gst_structure_get_uint (s, "group-id", &group) && group != 0;
  gst_structure_get_uint (s, "flags", &flags);
  now = gst_pad_get_sticky_event (pad, GST_EVENT_STREAM_START, 0);
  if (now) {
    const gchar *now_id = NULL;
    guint now_group = 0;
    gboolean now_has_group = gst_event_parse_group_id (now, &now_group);

    gst_event_parse_stream_start (now, &now_id);
    if (g_strcmp0 (now_id, id) == 0 && now_has_group == has_group
        && now_group == group) {
      gst_event_unref (now);
      gst_structure_free (s);
      return NULL;
    }
    gst_event_unref (now);
  }
  event = gst_event_new_stream_start (id);
  if (has_group)
    gst_event_set_group_id (event, group);
  gst_event_set_stream_flags (event, (GstStreamFlags) flags);
  gst_structure_free (s);
  return event;
}

static void
push_stream_start (GstGpuShareSrc * self, GstEvent * event)
{
  GstPad *pad = GST_BASE_SRC_PAD (self);
  GstCaps *caps;

  /* not its id: a hash, which a log must not show as it would a handle */
  GST_DEBUG_OBJECT (self, "the producer's stream starts");
  gst_pad_push_event (pad, event);
  /* before the first buffer no data flowed yet: the caps already sent
   * stand, and the base class's segment is still to go */
  if (!self->first_pushed)
    return;
  caps = gst_pad_get_current_caps (pad);
  if (caps)
    gst_pad_push_event (pad, gst_event_new_caps (caps));
  gst_clear_caps (&caps);
  self->need_segment = TRUE;
  self->resend_segment = TRUE;
}

/* the producer's stream-start, tags or custom event, downstream in its
 * place; one whose text does not parse is counted and said once */
static void
push_producer_event (GstGpuShareSrc * self, const GpuShareEvent * e)
{
  GstEvent *event = NULL;

  if (e->kind == GPUSHARE_EVENT_STREAM_START) {
    gboolean bad;

    event = stream_start_event (self, e, &bad);
    if (!bad) {
      g_atomic_int_inc (&self->events_received);
      if (event)
        push_stream_start (self, event);
      return;
    }
  } else if (e->kind == GPUSHARE_EVENT_TAGS) {
    GstTagList *tags = gpushare_tag_list_from_peer (e->text);

    if (tags)
      event = gst_event_new_tag (tags);
  } else if (e->kind == GPUSHARE_EVENT_CUSTOM
      || e->kind == GPUSHARE_EVENT_CUSTOM_STICKY) {
    GstStructure *s = gpushare_structure_from_peer (e->text);

    if (s)
      event = gst_event_new_custom (e->kind == GPUSHARE_EVENT_CUSTOM ?
          GST_EVENT_CUSTOM_DOWNSTREAM : GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, s);
  }
  if (!event) {
    g_atomic_int_inc (&self->events_dropped);
    if (!self->told_events_dropped) {
      GST_INFO_OBJECT (self, "an event of the producer (kind %u) could not "
          "be made, counted in the stats (events-dropped)", e->kind);
      self->told_events_dropped = TRUE;
    }
    return;
  }
  g_atomic_int_inc (&self->events_received);
  /* before the first buffer the segment is not out yet: a tag or sticky
   * event would come before it.  At most GST_GPU_SHARE_SRC_MAX_EARLY_EVENTS wait: past that
   * the oldest goes, counted (docs/security.md, promise 5) */
  if (!self->first_pushed) {
    if (g_queue_get_length (&self->early_events) >=
        GST_GPU_SHARE_SRC_MAX_EARLY_EVENTS) {
      gst_event_unref (g_queue_pop_head (&self->early_events));
      g_atomic_int_add (&self->events_received, -1);
      g_atomic_int_inc (&self->events_dropped);
    }
    g_queue_push_tail (&self->early_events, event);
  } else
    gst_pad_push_event (GST_BASE_SRC_PAD (self), event);
}

/* the first buffer: the segment went just before it, so the events that
 * came before it may go now, in their order */
static GstPadProbeReturn
early_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstGpuShareSrc *self = user_data;
  GstEvent *event;

  self->first_pushed = TRUE;
  self->early_probe_id = 0;
  while ((event = g_queue_pop_head (&self->early_events)))
    gst_pad_push_event (pad, event);
  return GST_PAD_PROBE_REMOVE;
}

/* now, in this pipeline's running time, when it is PLAYING with a clock */
static GstClockTime
running_now (GstGpuShareSrc * self)
{
  GstClock *clock = gst_element_get_clock (GST_ELEMENT (self));
  GstClockTime now = GST_CLOCK_TIME_NONE, base;

  if (!clock)
    return now;
  GST_OBJECT_LOCK (self);
  if (GST_STATE (self) == GST_STATE_PLAYING) {
    base = GST_ELEMENT_CAST (self)->base_time;
    now = gst_clock_get_time (clock);
    now = now > base ? now - base : 0;
  }
  GST_OBJECT_UNLOCK (self);
  gst_object_unref (clock);
  return now;
}

/* Frames of the producer's stream time (not ABSOLUTE_TIME): the first one
 * taken from a producer starts a segment at its own timestamp, so that a
 * consumer that joins a stream under way, or a producer that restarted at
 * 0, does not leave a synchronising sink waiting for, or dropping, every
 * frame.  Running time goes on from the end of the last buffer, or from
 * now when the pipeline is playing and that is later: the segment's base.
 * Stream time stays the producer's (segment time = start). */
static void
follow_stream_time (GstGpuShareSrc * self, GstBuffer * buf, gboolean absolute)
{
  GstBaseSrc *bsrc = GST_BASE_SRC (self);
  GstClockTime pts = GST_BUFFER_PTS (buf), dts = GST_BUFFER_DTS (buf);
  GstClockTime end;

  if (absolute) {
    /* already running times (set_frame_fields): the segment from 0, as
     * it is unless a producer of stream times came first */
    if (self->need_segment && (bsrc->segment.start != 0
            || bsrc->segment.base != 0 || self->resend_segment)) {
      GstSegment segment;

      gst_segment_init (&segment, GST_FORMAT_TIME);
      gst_base_src_new_segment (bsrc, &segment);
    }
    self->need_segment = FALSE;
  } else if (self->need_segment && GST_CLOCK_TIME_IS_VALID (pts)) {
    GstClockTime start = GST_CLOCK_TIME_IS_VALID (dts) && dts < pts ? dts : pts;
    GstClockTime now = running_now (self);
    GstSegment segment;

    gst_segment_init (&segment, GST_FORMAT_TIME);
    segment.start = segment.time = segment.position = start;
    segment.base = GST_CLOCK_TIME_IS_VALID (now) ?
        MAX (now, self->running_end) : self->running_end;
    GST_DEBUG_OBJECT (self, "the producer's stream from %" GST_TIME_FORMAT
        " at running time %" GST_TIME_FORMAT, GST_TIME_ARGS (start),
        GST_TIME_ARGS (segment.base));
    if (!gst_base_src_new_segment (bsrc, &segment))
      GST_WARNING_OBJECT (self, "the new segment was refused");
    self->need_segment = FALSE;
  }
  if (!self->need_segment)
    self->resend_segment = FALSE;
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return;
  end = gst_segment_to_running_time (&bsrc->segment, GST_FORMAT_TIME,
      pts + (GST_BUFFER_DURATION_IS_VALID (buf) ?
          GST_BUFFER_DURATION (buf) : 0));
  if (GST_CLOCK_TIME_IS_VALID (end) && end > self->running_end)
    self->running_end = end;
}

/* Frames of the producer this consumer missed (a leaky producer skipped
 * it): downstream learns that no data comes for the time they covered, a
 * GAP event from the end of the last buffer to this one, in the segment
 * both are in; buf's end is remembered for the next */
static void
push_gap (GstGpuShareSrc * self, GstBuffer * buf, gboolean missed)
{
  GstClockTime pts = GST_BUFFER_PTS (buf);

  if (missed && GST_CLOCK_TIME_IS_VALID (self->last_end)
      && GST_CLOCK_TIME_IS_VALID (pts) && pts > self->last_end) {
    GST_LOG_OBJECT (self, "frames missed: a gap from %" GST_TIME_FORMAT
        " to %" GST_TIME_FORMAT, GST_TIME_ARGS (self->last_end),
        GST_TIME_ARGS (pts));
    gst_pad_push_event (GST_BASE_SRC_PAD (self),
        gst_event_new_gap (self->last_end, pts - self->last_end));
  }
  self->last_end = GST_CLOCK_TIME_IS_VALID (pts) ? pts +
      (GST_BUFFER_DURATION_IS_VALID (buf) ? GST_BUFFER_DURATION (buf) : 0) :
      GST_CLOCK_TIME_NONE;
}

/* what the src pushes, as the stats and messages say it */
static const gchar *
output_memory (GstGpuShareSrc * self)
{
  return self->out_slot ? "GpuShareCUDA" : self->out_gpu ? "CUDAMemory" :
      "system";
}

/* the reason frames are copied (NULL: pushed in place); a
 * frame that could not go in place stops the others too */
static void
set_copy_reason (GstGpuShareSrc * self, const gchar * why)
{
  GST_OBJECT_LOCK (self);
  self->in_place = why == NULL;
  g_free (self->copy_reason);
  self->copy_reason = g_strdup (why);
  GST_OBJECT_UNLOCK (self);
}

/* TRUE when this frame may go downstream in place: in-place frames are
 * possible and downstream holds fewer than max-in-place of them */
static gboolean
hold_in_place (GstGpuShareSrc * self, GpuShareClientFrame * frame)
{
  guint max, share;
  gboolean in_place;

  GST_OBJECT_LOCK (self);
  max = self->max_in_place;
  in_place = self->in_place;
  GST_OBJECT_UNLOCK (self);
  if (!in_place)
    return FALSE;
  /* half the ring: the producer always finds a slot for the next frames
   * while downstream keeps the other half */
  if (max == 0)
    max = MAX (1, gpushare_client_frame_view (frame)->n_slots / 2);
  /* a leaky producer's share: it skips us while we hold all of it, and
   * downstream (a sink's last buffer, a queue, an appsink) lets go of
   * what it holds only when new buffers come.  So at most share - 1 stay
   * in place with this one counted, and past that the frame is copied:
   * the slot of the next frame is always free (docs/design.md, "Shares
   * of a leaky ring") */
  share = gpushare_client_frame_info (frame)->share;
  if (share)
    max = MIN (max, share - 1);
  return gpushare_client_frame_hold_in_place (frame, max);
}

/* A buffer of a frame in system memory: the slot wrapped in place,
 * read-only, while downstream holds fewer than max-in-place of them; a
 * copy, and the slot back at once, past that (or with io-mode=copy). */
static GstBuffer *
make_buffer (GstGpuShareSrc * self, GpuShareClientFrame * frame)
{
  GpuShareXferView *view = gpushare_client_frame_view (frame);
  const GpuShareFrame *f = gpushare_client_frame_info (frame);
  GstVideoInfo *vi = &self->vinfo;
  GstBuffer *buf = NULL;
  GError *error = NULL;
  GstMemory *mem;

  if (hold_in_place (self, frame)) {
    mem = NULL;
    if (g_atomic_int_get (&self->fd_memory))
      mem = gpushare_xfer_view_wrap_fd (view, f->slot,
          self->layout.frame_size, self->fd_allocator, frame,
          (GDestroyNotify) gpushare_client_frame_release);
    if (!mem)
      mem = gpushare_xfer_view_wrap (view, f->slot, self->layout.frame_size,
          frame, (GDestroyNotify) gpushare_client_frame_release);
    if (mem) {
      buf = gst_buffer_new ();
      gst_buffer_append_memory (buf, mem);
      g_atomic_int_inc (&self->frames_in_place);
    }
  }
  if (!buf) {
    /* downstream holds max of our buffers already: a sink that batches
     * its writes (filesink keeps 64 KiB), a queue.  Held in place they
     * would starve the producer until the lease dropped us, so, as
     * v4l2src copies out of its pool when downstream holds too many of
     * its buffers, this frame is copied and its slot goes back at once.
     * The same bytes and the same video meta: downstream sees the same
     * layout either way */
    buf = gst_buffer_new_allocate (NULL, self->layout.frame_size, NULL);
    if (!gpushare_xfer_view_read (view, f->slot, f->sequence, vi, vi, buf,
            FALSE, &error)) {
      /* never the bytes of a buffer nobody wrote, as a frame; a flush
       * that ended the read's wait for its frame is no error (the caller
       * sees the client flushing) */
      if (!gpushare_client_flushing (self->client))
        GST_ELEMENT_ERROR (self, STREAM, FAILED, ("A frame could not be read"),
            ("frame %" G_GUINT64_FORMAT ": %s", f->sequence, error ?
                error->message : "unknown error"));
      g_clear_error (&error);
      gst_buffer_unref (buf);
      gpushare_client_frame_release (frame);
      return NULL;
    }
    gpushare_client_frame_copied (frame);
    gpushare_client_frame_release (frame);
    g_atomic_int_inc (&self->frames_copied);
    GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " copied", f->sequence);
  }
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (vi), GST_VIDEO_INFO_WIDTH (vi),
      GST_VIDEO_INFO_HEIGHT (vi), GST_VIDEO_INFO_N_PLANES (vi), vi->offset,
      vi->stride);
  return buf;
}

/* streaming thread, after a read in place of view: what its wait for the
 * frame's ready word counted, for the stats */
static void
take_ready (GstGpuShareSrc * self, GpuShareXferView * view)
{
  guint64 on_host = 0, spin_us = 0;

  gpushare_xfer_view_take_ready (view, &on_host, &spin_us);
  if (on_host)
    __atomic_add_fetch (&self->ready_on_host, on_host, __ATOMIC_RELAXED);
  if (spin_us)
    __atomic_add_fetch (&self->ready_spin_us, spin_us, __ATOMIC_RELAXED);
}

/* GPU memory that is the slot itself (GStreamer 1.24+), read-only; the
 * slot goes back to the producer when the last reference goes.  NULL when
 * it cannot be made: the reason is then in the stats, or, with
 * io-mode=import, an error is posted. */
static GstBuffer *
import_gpu_buffer (GstGpuShareSrc * self, GpuShareClientFrame * frame,
    GstFlowReturn * failed)
{
  GpuShareXferView *view = gpushare_client_frame_view (frame);
  const GpuShareFrame *f = gpushare_client_frame_info (frame);
  GstVideoInfo *vi = &self->vinfo;
  GError *error = NULL;
  GstMemory *mem;
  GstBuffer *buf;

  mem = gpushare_xfer_view_import (view, f->slot, f->sequence, vi,
      self->gpu_ctx, frame, (GDestroyNotify) gpushare_client_frame_release,
      &error);
  take_ready (self, view);
  if (!mem && gpushare_client_flushing (self->client)) {
    /* a flush ended the wait for the frame */
    g_clear_error (&error);
    *failed = GST_FLOW_FLUSHING;
    return NULL;
  }
  if (!mem) {
    /* the frame is still ours: the caller copies it (or fails); its
     * in-place count goes when it is released */
    GST_WARNING_OBJECT (self, "frame %" G_GUINT64_FORMAT " copied: %s",
        f->sequence, error->message);
    set_copy_reason (self, error->message);
    if (self->io_mode == GST_GPU_SHARE_IO_IMPORT) {
      GST_ELEMENT_ERROR (self, RESOURCE, READ,
          ("io-mode=import, but a frame could not be pushed in place"),
          ("%s", error->message));
      *failed = GST_FLOW_ERROR;
    }
    g_clear_error (&error);
    return NULL;
  }
  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (vi), GST_VIDEO_INFO_WIDTH (vi),
      GST_VIDEO_INFO_HEIGHT (vi), GST_VIDEO_INFO_N_PLANES (vi), vi->offset,
      vi->stride);
  g_atomic_int_inc (&self->frames_in_place);
  return buf;
}

/* The application's route: a buffer that stands for the slot, with the
 * slot's device address and layout in a GstGpuShareCudaMeta.  Every frame
 * goes this way (there is nothing to copy it into). */
static GstFlowReturn
make_slot_buffer (GstGpuShareSrc * self, GpuShareClientFrame * frame,
    GstBuffer ** outbuf)
{
  GpuShareXferView *view = gpushare_client_frame_view (frame);
  const GpuShareFrame *f = gpushare_client_frame_info (frame);
  GError *error = NULL;
  GstMemory *mem;
  GstBuffer *buf;

  /* counted in place, whatever max-in-place says */
  gpushare_client_frame_hold_in_place (frame, G_MAXUINT);
  mem = gpushare_xfer_view_import_slot (view, f->slot, f->sequence,
      GST_VIDEO_INFO_SIZE (&self->vinfo), frame,
      (GDestroyNotify) gpushare_client_frame_release, &error);
  take_ready (self, view);
  if (!mem) {
    gpushare_xfer_view_skip (view, f->slot, f->sequence, NULL);
    gpushare_client_frame_release (frame);
    if (gpushare_client_flushing (self->client)) {
      g_clear_error (&error);
      return GST_FLOW_FLUSHING;
    }
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not hand the frame's GPU slot to the application"), ("%s",
            error->message));
    g_clear_error (&error);
    return GST_FLOW_ERROR;
  }
  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);
  gpushare_buffer_add_slot_meta (buf, view->device_ptr[f->slot],
      view->device, &self->vinfo);
  g_atomic_int_inc (&self->frames_in_place);
  *outbuf = buf;
  return GST_FLOW_OK;
}

/* A frame out of a GPU slot: the slot itself where it may go in place,
 * otherwise one copy, on the device into a buffer of a GPU pool or
 * downloaded into system memory, and the slot back to the producer as
 * soon as the copy is done. */
static GstFlowReturn
make_gpu_buffer (GstGpuShareSrc * self, GpuShareClientFrame * frame,
    GstBuffer ** outbuf)
{
  GpuShareXferView *view = gpushare_client_frame_view (frame);
  const GpuShareFrame *f = gpushare_client_frame_info (frame);
  GstVideoInfo *vi = &self->vinfo;
  GstVideoInfo tight;
  GstBuffer *buf = NULL;
  GError *error = NULL;
  GstFlowReturn failed = GST_FLOW_OK;
  gboolean ok;

  if (self->out_slot)
    return make_slot_buffer (self, frame, outbuf);
  if (self->out_gpu && hold_in_place (self, frame)) {
    *outbuf = import_gpu_buffer (self, frame, &failed);
    if (*outbuf)
      return GST_FLOW_OK;
    if (failed != GST_FLOW_OK) {
      gpushare_xfer_view_skip (view, f->slot, f->sequence, NULL);
      gpushare_client_frame_release (frame);
      return failed;
    }
  }
  /* copied, whatever was tried: the slot goes back once the copy is made,
   * the metas' payloads in its side memory are copied too */
  gpushare_client_frame_copied (frame);
  if (self->out_gpu) {
    if (!gst_buffer_pool_is_active (self->out_pool))
      gst_buffer_pool_set_active (self->out_pool, TRUE);
    if (gst_buffer_pool_acquire_buffer (self->out_pool, &buf, NULL) !=
        GST_FLOW_OK)
      buf = NULL;
  } else {
    /* downloaded into GStreamer's default layout for these caps, not the
     * slot's pitched one: downstream may not read a GstVideoMeta */
    gst_video_info_set_format (&tight, GST_VIDEO_INFO_FORMAT (vi),
        GST_VIDEO_INFO_WIDTH (vi), GST_VIDEO_INFO_HEIGHT (vi));
    vi = &tight;
    buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (vi), NULL);
    if (buf)
      gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
          GST_VIDEO_INFO_FORMAT (vi), GST_VIDEO_INFO_WIDTH (vi),
          GST_VIDEO_INFO_HEIGHT (vi), GST_VIDEO_INFO_N_PLANES (vi),
          vi->offset, vi->stride);
  }
  if (!buf) {
    /* the producer gets its slot back all the same */
    gpushare_xfer_view_skip (view, f->slot, f->sequence, NULL);
    gpushare_client_frame_release (frame);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Could not get an output buffer"), (NULL));
    return GST_FLOW_ERROR;
  }
  ok = gpushare_xfer_view_read (view, f->slot, f->sequence, &self->vinfo,
      vi, buf, self->out_gpu, &error);
  take_ready (self, view);
  if (ok)
    g_atomic_int_inc (&self->frames_copied);
  if (!ok)
    gpushare_xfer_view_skip (view, f->slot, f->sequence, NULL);
  gpushare_client_frame_release (frame);
  if (!ok && gpushare_client_flushing (self->client)) {
    /* a flush ended the wait for the frame */
    gst_buffer_unref (buf);
    g_clear_error (&error);
    return GST_FLOW_FLUSHING;
  }
  if (!ok) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not copy a frame out of GPU memory"), ("%s", error->message));
    g_clear_error (&error);
    return GST_FLOW_ERROR;
  }
  *outbuf = buf;
  return GST_FLOW_OK;
}

/* TRUE when downstream names GPU memory in its caps.  Downstream that
 * takes anything (filesink, fakesink, an appsink without caps) gets system
 * memory, as from nvh264dec: it would otherwise receive CUDA memory it can
 * only map through a download with the slot's pitch. */
static gboolean
downstream_names (GstGpuShareSrc * self, const gchar * feature)
{
  GstCaps *peer = gst_pad_peer_query_caps (GST_BASE_SRC_PAD (self), NULL);
  gboolean named = FALSE;
  guint i;

  if (!peer)
    return FALSE;
  if (!gst_caps_is_any (peer)) {
    for (i = 0; i < gst_caps_get_size (peer) && !named; i++) {
      GstCapsFeatures *f = gst_caps_get_features (peer, i);

      named = f && !gst_caps_features_is_any (f)
          && gst_caps_features_contains (f, feature);
    }
  }
  gst_caps_unref (peer);
  return named;
}

static gboolean
downstream_names_gpu (GstGpuShareSrc * self)
{
  const gchar *feature = gpushare_xfer_gpu_caps_feature ();

  return feature && downstream_names (self, feature);
}

/* the slots are host memory: system memory, or another transfer's */
static gboolean
slots_are_host (GstGpuShareSrc * self)
{
  return gpushare_mem_type_is_host (gpushare_client_mem_type (self->client));
}

/* the application's route: the producer's caps with the feature, when
 * downstream names it and the slots are GPU memory */
static GstCaps *
slot_caps (GstGpuShareSrc * self, GstCaps * caps)
{
  GstCaps *slot;

  if (slots_are_host (self)
      || !downstream_names (self, GPUSHARE_CAPS_FEATURE_MEMORY_GPUSHARE_CUDA))
    return NULL;
  slot = gst_caps_copy (caps);
  gst_caps_set_features_simple (slot,
      gst_caps_features_new (GPUSHARE_CAPS_FEATURE_MEMORY_GPUSHARE_CUDA, NULL));
  if (gst_pad_peer_query_accept_caps (GST_BASE_SRC_PAD (self), slot))
    return slot;
  gst_caps_unref (slot);
  return NULL;
}

/* the output caps for the producer's caps: GPU memory when the transport
 * is GPU memory, GStreamer's CUDA library is here and downstream asks for
 * it; system memory otherwise */
static GstCaps *
output_caps (GstGpuShareSrc * self, GstCaps * caps)
{
  GstCaps *gpu;

  self->out_gpu = FALSE;
  self->out_slot = FALSE;
  if ((gpu = slot_caps (self, caps))) {
    self->out_slot = TRUE;
    return gpu;
  }
  if (slots_are_host (self) || !downstream_names_gpu (self)
      || !ensure_gpu_context (self))
    return gst_caps_ref (caps);
  gpu = gst_caps_copy (caps);
  gst_caps_set_features_simple (gpu,
      gst_caps_features_new (gpushare_xfer_gpu_caps_feature (), NULL));
  if (gst_pad_peer_query_accept_caps (GST_BASE_SRC_PAD (self), gpu)) {
    GstBufferPool *pool;
    GstStructure *config;

    /* the same caps again (a new ring, a RECONFIGURE): the same pool */
    if (self->out_pool) {
      GstCaps *had = NULL;

      config = gst_buffer_pool_get_config (self->out_pool);
      gst_buffer_pool_config_get_params (config, &had, NULL, NULL, NULL);
      if (had && gst_caps_is_equal (had, gpu)) {
        gst_structure_free (config);
        self->out_gpu = TRUE;
        return gpu;
      }
      gst_structure_free (config);
    }
    pool = gpushare_xfer_gpu_pool_new (self->gpu_ctx);

    if (pool) {
      config = gst_buffer_pool_get_config (pool);
      gst_buffer_pool_config_set_params (config, gpu,
          GST_VIDEO_INFO_SIZE (&self->vinfo), 0, 0);
      if (gst_buffer_pool_set_config (pool, config)) {
        if (self->out_pool) {
          gst_buffer_pool_set_active (self->out_pool, FALSE);
          gst_object_unref (self->out_pool);
        }
        self->out_pool = pool;
        self->out_gpu = TRUE;
        return gpu;
      }
      gst_object_unref (pool);
    }
  }
  gst_caps_unref (gpu);
  return gst_caps_ref (caps);
}

/* streaming thread, once the output caps are set: whether frames go
 * downstream in place, said in the stats and in a "gpushare-output"
 * element message.  FALSE, with an error posted, when io-mode=import and
 * they cannot. */
static gboolean
choose_io (GstGpuShareSrc * self)
{
  const gchar *why = NULL;
  GstGpuShareIoMode mode;
  gboolean gpu_slots;

  GST_OBJECT_LOCK (self);
  mode = self->io_mode;
  GST_OBJECT_UNLOCK (self);
  gpu_slots = !slots_are_host (self);
  if (self->out_slot && mode == GST_GPU_SHARE_IO_COPY) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("io-mode=copy, but downstream asked for %s, which is the slot "
            "itself", GPUSHARE_CAPS_FEATURE_MEMORY_GPUSHARE_CUDA), (NULL));
    return FALSE;
  }
  if (self->out_slot)
    why = NULL;
  else if (mode == GST_GPU_SHARE_IO_COPY)
    why = "io-mode=copy";
  else if (gpu_slots && !self->out_gpu && !self->gpu_ctx
      && downstream_names_gpu (self))
    why = "no CUDA context for GStreamer's elements in this process: GPU "
        "frames are downloaded";
  else if (gpu_slots && !self->out_gpu)
    why = "downstream takes system memory: GPU frames are downloaded";
  else if (gpu_slots)
    gpushare_xfer_gpu_can_import (&why);
  set_copy_reason (self, why);
  GST_INFO_OBJECT (self, "frames %s%s", why ? "copied: " : "in place",
      why ? why : "");
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("gpushare-output",
              "output-memory", G_TYPE_STRING, output_memory (self),
              "io", G_TYPE_STRING, why ? "copy" : "in-place",
              "reason", G_TYPE_STRING, why ? why : "", NULL)));
  if (why && mode == GST_GPU_SHARE_IO_IMPORT) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("io-mode=import, but frames cannot be pushed in place"), ("%s", why));
    return FALSE;
  }
  return TRUE;
}

/* how a memory-reason for system memory begins (gpusharenegotiate.c) */
#define SYSTEM_MEMORY_PREFIX "system memory: "

/* caps with a structure that takes system memory (no feature, system
 * memory with metas, memory:ANY), ANY, or none at all: the refusal is not
 * about GPU memory then */
static gboolean
takes_system_memory (const GstCaps * caps)
{
  guint i;

  if (!caps || gst_caps_is_any (caps) || gst_caps_is_empty (caps))
    return TRUE;
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (!f || gst_caps_features_is_any (f) || gst_caps_features_contains (f,
            GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY))
      return TRUE;
  }
  return FALSE;
}

/* streaming thread.  Picks the output caps for the producer's caps and
 * sets them when they changed, or always when force (a RECONFIGURE). */
static gboolean
set_output_caps (GstGpuShareSrc * self, gboolean force)
{
  GstCaps *out;
  gboolean ok = TRUE;

  out = output_caps (self, self->in_caps);
  if (force || !self->caps || !gst_caps_is_equal (self->caps, out)) {
    GstPad *pad = GST_BASE_SRC_PAD (self);

    /* a refusal would only show at the next push, as GStreamer's
     * "Internal data stream error": say here what was refused and what
     * downstream takes */
    if (gst_pad_is_linked (pad) && !gst_pad_peer_query_accept_caps (pad, out)) {
      GstCaps *peer = gst_pad_peer_query_caps (pad, NULL);

      /* downstream takes device memory alone, the frames come in host
       * memory: why they do is what the user needs to know (no GPU, out
       * of device memory, another GPU, ...) */
      if (slots_are_host (self) && !takes_system_memory (peer)) {
        GpuShareClientStats st;
        const gchar *why;

        memset (&st, 0, sizeof (st));
        gpushare_client_get_stats (self->client, &st);
        why = st.mem_reason ? st.mem_reason :
            "the producer offered no GPU memory";
        if (g_str_has_prefix (why, SYSTEM_MEMORY_PREFIX))
          why += strlen (SYSTEM_MEMORY_PREFIX);
        GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
            ("Downstream takes GPU memory only, but the frames come in "
                "system memory: %s", why),
            ("the producer sends %" GST_PTR_FORMAT "; downstream accepts %"
                GST_PTR_FORMAT, out, peer));
        g_free (st.mem_reason);
        g_free (st.producer_name);
      } else if (!self->gpu_ctx && !takes_system_memory (peer)) {
        /* the slots are GPU memory, but GStreamer's elements have no
         * context here to take them in */
        GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
            ("Downstream takes GPU memory only, but this process has no "
                "CUDA context for GStreamer's elements on GPU %d: the GPU "
                "may be out of memory, or out of room for more processes' "
                "contexts (see \"Many streams\" in the user guide), or "
                "GStreamer's CUDA library failed to load",
                MAX (self->cuda_device_id, 0)),
            ("the producer sends %" GST_PTR_FORMAT "; downstream accepts %"
                GST_PTR_FORMAT, out, peer));
      } else {
        GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
            ("Downstream does not accept the producer's caps"),
            ("the producer sends %" GST_PTR_FORMAT "; downstream accepts %"
                GST_PTR_FORMAT, out, peer));
      }
      gst_clear_caps (&peer);
      gst_caps_unref (out);
      return FALSE;
    }
    GST_OBJECT_LOCK (self);
    gst_caps_replace (&self->caps, out);
    GST_OBJECT_UNLOCK (self);
    GST_DEBUG_OBJECT (self, "output caps %" GST_PTR_FORMAT, out);
    ok = gst_base_src_set_caps (GST_BASE_SRC (self), out);
  }
  gst_caps_unref (out);
  return ok;
}

static GstFlowReturn
gst_gpu_share_src_create (GstPushSrc * psrc, GstBuffer ** outbuf)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (psrc);
  GpuShareClientItem item;
  GpuShareClientFrame *frame;
  GstFlowReturn ret = GST_FLOW_OK;
  gchar *why = NULL;
  GstCaps *caps;

  for (;;) {
    gpushare_client_pop (self->client, &item);
    switch (item.type) {
      case GPUSHARE_CLIENT_ITEM_FLUSHING:
        return GST_FLOW_FLUSHING;
      case GPUSHARE_CLIENT_ITEM_ERROR:
        /* posted with the place in the consumer core that found it */
        gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR,
            item.error_domain, item.error_code, item.error_text,
            item.error_debug, item.error_file ? item.error_file : __FILE__,
            item.error_function ? item.error_function : GST_FUNCTION,
            item.error_file ? item.error_line : __LINE__);
        /* taken by the message */
        item.error_text = item.error_debug = NULL;
        gpushare_client_item_clear (&item);
        return GST_FLOW_ERROR;
      case GPUSHARE_CLIENT_ITEM_EOS:
        GST_DEBUG_OBJECT (self, "end of stream from the producer");
        return GST_FLOW_EOS;
      case GPUSHARE_CLIENT_ITEM_CAPS:
        /* negotiate at this frame boundary; checked when queued */
        self->layout = item.layout;
        caps = gpushare_video_layout_to_caps (&self->layout, &self->vinfo,
            &why);
        GST_OBJECT_LOCK (self);
        gst_caps_replace (&self->in_caps, caps);
        GST_OBJECT_UNLOCK (self);
        gst_clear_caps (&caps);
        g_clear_pointer (&why, g_free);
        /* a refusal is posted there */
        if (!set_output_caps (self, FALSE))
          return GST_FLOW_NOT_NEGOTIATED;
        if (!choose_io (self))
          return GST_FLOW_NOT_NEGOTIATED;
        continue;
      case GPUSHARE_CLIENT_ITEM_EVENT:
        push_producer_event (self, item.event);
        gpushare_client_item_clear (&item);
        continue;
      case GPUSHARE_CLIENT_ITEM_FRAME:
        break;
    }
    break;
  }

  frame = item.frame;
  item.frame = NULL;
  if (item.latency_changed)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " from slot %u",
      gpushare_client_frame_info (frame)->sequence,
      gpushare_client_frame_info (frame)->slot);
  {
    GpuShareFrame f = *gpushare_client_frame_info (frame);
    GpuShareFrameMetas *meta = gpushare_client_frame_take_meta (frame);
    gint64 received = gpushare_client_frame_received (frame), t0, t1;
    /* the frame's slot stays until its metas' payloads are read */
    GpuShareClientFrame *hold = meta ? gpushare_client_frame_ref (frame) : NULL;

    if (gpushare_client_frame_view (frame)->data[f.slot]) {
      *outbuf = make_buffer (self, frame);
      if (!*outbuf)
        ret = gpushare_client_flushing (self->client) ? GST_FLOW_FLUSHING :
            GST_FLOW_ERROR;
    } else {
      ret = make_gpu_buffer (self, frame, outbuf);
    }
    if (ret == GST_FLOW_OK) {
      gboolean same_segment;

      if (item.new_producer)
        self->need_segment = TRUE;
      same_segment = !self->need_segment;
      set_frame_fields (self, *outbuf, &f, item.discont, received);
      follow_stream_time (self, *outbuf,
          (f.flags & GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME) != 0);
      push_gap (self, *outbuf, item.missed && same_segment);
      t0 = g_get_monotonic_time ();
      if (meta)
        add_metas (self, *outbuf, meta, hold);
      t1 = g_get_monotonic_time ();
      /* and their check, as the frame was read */
      gpushare_timing_add (&self->metas, t1 - t0 + (meta ?
              (gint64) meta->check_us : 0));
      gpushare_timing_add (&self->handoff, t1 - received);
    }
    if (hold)
      gpushare_client_frame_release (hold);
    g_free (meta);
  }
  return ret;
}

static gboolean
gst_gpu_share_src_negotiate (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);

  /* caps come from the producer, in create (); nothing to pick before.
   * After a RECONFIGURE the output is chosen again: downstream may have
   * gone from CUDA memory to system memory or back. */
  if (!self->in_caps)
    return TRUE;
  return set_output_caps (self, TRUE) && choose_io (self);
}

static GstCaps *
gst_gpu_share_src_get_caps (GstBaseSrc * bsrc, GstCaps * filter)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);
  GstCaps *caps;

  GST_OBJECT_LOCK (self);
  if (self->in_caps) {
    /* the producer's caps in both memories this src can output */
    caps = gst_caps_new_empty ();
    if (self->client && !slots_are_host (self)) {
      GstCaps *slot = gst_caps_copy (self->in_caps);

      gst_caps_set_features_simple (slot,
          gst_caps_features_new (GPUSHARE_CAPS_FEATURE_MEMORY_GPUSHARE_CUDA,
              NULL));
      caps = gst_caps_merge (caps, slot);
    }
    if (self->client && self->gpu_ctx && !slots_are_host (self)) {
      GstCaps *gpu = gst_caps_copy (self->in_caps);

      gst_caps_set_features_simple (gpu,
          gst_caps_features_new (gpushare_xfer_gpu_caps_feature (), NULL));
      caps = gst_caps_merge (caps, gpu);
    }
    caps = gst_caps_merge (caps, gst_caps_ref (self->in_caps));
  } else {
    caps = gst_pad_get_pad_template_caps (GST_BASE_SRC_PAD (bsrc));
  }
  GST_OBJECT_UNLOCK (self);
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (caps);
    caps = tmp;
  }
  return caps;
}

static GstStateChangeReturn
gst_gpu_share_src_change_state (GstElement * element, GstStateChange transition)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (element);

  /* a pipeline that is not live starts playing: anchor the producer's
   * running times again (abs_to_running_not_live ()) */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING) {
    GST_OBJECT_LOCK (self);
    self->reanchor = TRUE;
    self->playing_since_us = g_get_monotonic_time ();
    GST_OBJECT_UNLOCK (self);
  }
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

static void
gst_gpu_share_src_set_context (GstElement * element, GstContext * context)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (element);

  GstObject *ctx = NULL;

  if (gpushare_xfer_gpu_context_set (element, context, self->cuda_device_id,
          &ctx) && ctx)
    take_gpu_context (self, ctx);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static gboolean
gst_gpu_share_src_query (GstBaseSrc * bsrc, GstQuery * query)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);

  if (gpushare_xfer_gpu_context_query (GST_ELEMENT (self), query,
          self->cuda_device_id, &self->gpu_ctx))
    return TRUE;

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    GstClockTime min = 0;
    GstClockTime duration;
    guint64 latency = self->client ?
        gpushare_client_latency (self->client) : GST_CLOCK_TIME_NONE;

    if (GST_CLOCK_TIME_IS_VALID (latency))
      min = latency;
    /* a frame is on the wire for about one frame interval at most */
    duration = GST_VIDEO_INFO_FPS_N (&self->vinfo) > 0 ?
        gst_util_uint64_scale_int (GST_SECOND,
        GST_VIDEO_INFO_FPS_D (&self->vinfo),
        GST_VIDEO_INFO_FPS_N (&self->vinfo)) : 0;
    gst_query_set_latency (query, gst_base_src_is_live (bsrc),
        min + duration, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
  return GST_BASE_SRC_CLASS (parent_class)->query (bsrc, query);
}

static gboolean
gst_gpu_share_src_unlock (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);

  if (self->client)
    gpushare_client_set_flushing (self->client, TRUE);
  return TRUE;
}

static gboolean
gst_gpu_share_src_unlock_stop (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);

  if (self->client)
    gpushare_client_set_flushing (self->client, FALSE);
  return TRUE;
}

static GstStructure *
make_stats (GstGpuShareSrc * self)
{
  const gchar *io;
  gchar *io_reason;
  GpuShareClientStats st;
  GstStructure *s;

  memset (&st, 0, sizeof (st));
  st.state = "idle";
  st.peer_device = -1;
  if (self->client)
    gpushare_client_get_stats (self->client, &st);
  GST_OBJECT_LOCK (self);
  io = !self->caps ? "none" : self->in_place ? "in-place" : "copy";
  io_reason = g_strdup (self->copy_reason ? self->copy_reason : "");
  GST_OBJECT_UNLOCK (self);
  s = gst_structure_new ("application/x-gpushare-src-stats",
      "state", G_TYPE_STRING, st.state,
      "memory-type", G_TYPE_STRING, st.mem_type ?
      gpushare_mem_type_to_string (st.mem_type) : "none",
      "sync-mode", G_TYPE_STRING, st.sync_mode ?
      gpushare_sync_mode_to_string (st.sync_mode) : "none",
      "output-memory", G_TYPE_STRING, output_memory (self),
      "peer-device", G_TYPE_INT, st.peer_device,
      "memory-reason", G_TYPE_STRING, st.mem_reason ? st.mem_reason :
      "not connected",
      "epoch", G_TYPE_UINT64, st.epoch,
      "frames-received", G_TYPE_UINT64, st.frames_received,
      "frames-missed", G_TYPE_UINT64, st.frames_missed,
      "producer-pid", G_TYPE_INT, st.producer_pid,
      "producer-name", G_TYPE_STRING, st.producer_name ? st.producer_name :
      "",
      "metas-received", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->metas_received),
      "metas-dropped", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->metas_dropped),
      "events-received", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->events_received),
      "events-dropped", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->events_dropped) +
      st.events_dropped,
      "frames-copied", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->frames_copied),
      "frames-in-place", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->frames_in_place),
      "io", G_TYPE_STRING, io,
      "io-reason", G_TYPE_STRING, io_reason,
      "reconnects", G_TYPE_UINT, st.reconnects,
      "producer-live", G_TYPE_BOOLEAN, st.producer_live,
      "share", G_TYPE_UINT, st.share,
      "stalled", G_TYPE_BOOLEAN, st.stalled,
      "frame-lane", G_TYPE_BOOLEAN, st.lane,
      "metas-in-lane", G_TYPE_UINT64, st.lane_metas,
      "lane-spins", G_TYPE_UINT64, st.lane_spins,
      "lane-spin-misses", G_TYPE_UINT64, st.lane_spin_misses,
      "lane-spin-us", G_TYPE_UINT64, st.lane_spin_us,
      "lane-early-wakes", G_TYPE_UINT64, st.lane_early_wakes,
      "lane-early-hits", G_TYPE_UINT64, st.lane_early_hits,
      "ready-on-host", G_TYPE_UINT64,
      __atomic_load_n (&self->ready_on_host, __ATOMIC_RELAXED),
      "ready-spin-us", G_TYPE_UINT64,
      __atomic_load_n (&self->ready_spin_us, __ATOMIC_RELAXED),
      "fd-memory", G_TYPE_BOOLEAN, g_atomic_int_get (&self->fd_memory), NULL);
  g_free (st.mem_reason);
  gpushare_timing_set_fields (&self->handoff, s, "handoff-us");
  gpushare_timing_set_fields (&self->metas, s, "metas-us");
  g_free (st.producer_name);
  g_free (io_reason);
  return s;
}

static void
gst_gpu_share_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOCKET_PATH:
      g_free (self->socket_path);
      self->socket_path = g_value_dup_string (value);
      break;
    case PROP_CONNECTION_TIMEOUT:
      self->connection_timeout = g_value_get_uint (value);
      break;
    case PROP_TRANSPORT:
      self->transport = g_value_get_enum (value);
      break;
    case PROP_PRODUCER_LOST:
      self->producer_lost = g_value_get_enum (value);
      break;
    case PROP_SYNC_MODE:
      self->sync = g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      self->cuda_device_id = g_value_get_int (value);
      break;
    case PROP_FRAME_LANE:
      self->frame_lane = g_value_get_boolean (value);
      break;
    case PROP_WAKE_AHEAD:
      self->wake_ahead = g_value_get_uint (value);
      break;
    case PROP_HEARTBEAT_INTERVAL:
      self->heartbeat_interval = g_value_get_uint (value);
      break;
    case PROP_ALLOWED_PRODUCER_UIDS:
      gpushare_ids_from_value (&self->allowed_producer_uids, value);
      break;
    case PROP_IO_MODE:
      self->io_mode = g_value_get_enum (value);
      break;
    case PROP_MAX_IN_PLACE:
      self->max_in_place = g_value_get_uint (value);
      break;
    case PROP_IS_LIVE:
      self->is_live = g_value_get_boolean (value);
      GST_OBJECT_UNLOCK (self);
      gst_base_src_set_live (GST_BASE_SRC (self), self->is_live);
      return;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_share_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOCKET_PATH:
      g_value_set_string (value, self->socket_path);
      break;
    case PROP_CONNECTION_TIMEOUT:
      g_value_set_uint (value, self->connection_timeout);
      break;
    case PROP_IS_LIVE:
      g_value_set_boolean (value, self->is_live);
      break;
    case PROP_TRANSPORT:
      g_value_set_enum (value, self->transport);
      break;
    case PROP_PRODUCER_LOST:
      g_value_set_enum (value, self->producer_lost);
      break;
    case PROP_SYNC_MODE:
      g_value_set_enum (value, self->sync);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->cuda_device_id);
      break;
    case PROP_FRAME_LANE:
      g_value_set_boolean (value, self->frame_lane);
      break;
    case PROP_WAKE_AHEAD:
      g_value_set_uint (value, self->wake_ahead);
      break;
    case PROP_HEARTBEAT_INTERVAL:
      g_value_set_uint (value, self->heartbeat_interval);
      break;
    case PROP_ALLOWED_PRODUCER_UIDS:
      gpushare_ids_to_value (self->allowed_producer_uids, value);
      break;
    case PROP_IO_MODE:
      g_value_set_enum (value, self->io_mode);
      break;
    case PROP_MAX_IN_PLACE:
      g_value_set_uint (value, self->max_in_place);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* Downstream that proposes an fd allocator (unixfdsink's memfds) takes
 * fd memory: the frames in place then go as the slot's own fd, so that it
 * passes them on without a copy.  Only then: an fd memory maps the slot
 * anew for each frame, where the plain wrap reuses the view's mapping. */
static gboolean
gst_gpu_share_src_decide_allocation (GstBaseSrc * bsrc, GstQuery * query)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);
  gboolean fds = FALSE;
  guint i;

  for (i = 0; i < gst_query_get_n_allocation_params (query); i++) {
    GstAllocator *a = NULL;

    gst_query_parse_nth_allocation_param (query, i, &a, NULL);
    if (a && GST_IS_FD_ALLOCATOR (a))
      fds = TRUE;
    gst_clear_object (&a);
  }
  if (fds && !self->fd_allocator)
    self->fd_allocator = gst_fd_allocator_new ();
  if (fds != g_atomic_int_get (&self->fd_memory))
    GST_INFO_OBJECT (self, "downstream %s fd memory: frames in place go %s",
        fds ? "takes" : "does not ask for", fds ? "as the slot's fd" :
        "as a wrap of its mapping");
  g_atomic_int_set (&self->fd_memory, fds);
  if (self->client)
    gpushare_client_set_fd_memory (self->client, fds);
  return GST_BASE_SRC_CLASS (parent_class)->decide_allocation (bsrc, query);
}

static void
gst_gpu_share_src_finalize (GObject * object)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (object);

  g_clear_pointer (&self->client, gpushare_client_free);
  g_queue_clear_full (&self->early_events, (GDestroyNotify) gst_event_unref);
  gpushare_timing_clear (&self->handoff);
  gpushare_timing_clear (&self->metas);
  g_free (self->socket_path);
  g_free (self->copy_reason);
  g_clear_pointer (&self->allowed_producer_uids, g_array_unref);
  gst_clear_object (&self->fd_allocator);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_gpu_share_src_class_init (GstGpuShareSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *bsrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *psrc_class = GST_PUSH_SRC_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY | GST_PARAM_DOC_SHOW_DEFAULT;
  GstCaps *caps;

  gobject_class->set_property = gst_gpu_share_src_set_property;
  gobject_class->get_property = gst_gpu_share_src_get_property;
  gobject_class->finalize = gst_gpu_share_src_finalize;

  properties[PROP_SOCKET_PATH] = g_param_spec_string ("socket-path",
      "Socket path", "Path of the producer's Unix socket", DEFAULT_SOCKET_PATH,
      rw);
  properties[PROP_CONNECTION_TIMEOUT] =
      g_param_spec_uint ("connection-timeout", "Connection timeout",
      "Milliseconds to wait for a producer to appear (0 = forever)", 0,
      G_MAXUINT, DEFAULT_CONNECTION_TIMEOUT, rw);
  properties[PROP_IS_LIVE] = g_param_spec_boolean ("is-live", "Is live",
      "Act as a live source: map a live producer's timestamps into this "
      "pipeline's running time and report its latency", DEFAULT_IS_LIVE, rw);
  properties[PROP_PRODUCER_LOST] = g_param_spec_enum ("producer-lost",
      "Producer lost", "What to do when the producer goes away before the "
      "end of the stream: post an error, end the stream, or connect again "
      "(with back-off, within connection-timeout) and go on with the next "
      "producer", GST_TYPE_GPU_SHARE_PRODUCER_LOST, DEFAULT_PRODUCER_LOST, rw);
  properties[PROP_TRANSPORT] = g_param_spec_enum ("transport", "Transport",
      "Memory the frames travel in: auto takes GPU memory when both ends "
      "are on the same GPU, or on two GPUs that reach each other over peer "
      "access (not with sync-mode=event), and system memory otherwise; a "
      "forced transport that cannot work is an error",
      GST_TYPE_GPU_SHARE_TRANSPORT, DEFAULT_TRANSPORT, rw);
  properties[PROP_SYNC_MODE] = g_param_spec_enum ("sync-mode",
      "Synchronisation mode", "How GPU slots are handed over: auto picks "
      "the fastest mode both ends support", GST_TYPE_GPU_SHARE_SYNC,
      DEFAULT_SYNC, rw);
  properties[PROP_CUDA_DEVICE_ID] = g_param_spec_int ("cuda-device-id",
      "CUDA device id", "GPU this consumer reads GPU memory with", 0,
      G_MAXINT, DEFAULT_CUDA_DEVICE_ID, rw);
  properties[PROP_HEARTBEAT_INTERVAL] =
      g_param_spec_uint ("heartbeat-interval", "Heartbeat interval",
      "Milliseconds of silence after which a PING goes to the producer; a "
      "producer silent for 3 intervals is lost, as if it went away (see "
      "producer-lost; 0 = no heartbeat)", 0, G_MAXUINT / 4,
      DEFAULT_HEARTBEAT_INTERVAL, rw);
  properties[PROP_FRAME_LANE] = g_param_spec_boolean ("frame-lane",
      "Frame lane", "Take frames from a lane in shared memory that the "
      "streaming thread reads itself, woken by a futex (one wake-up a "
      "frame); FALSE takes them as messages on the socket, read by the "
      "control thread and handed on (the path of producers before protocol "
      "1.7, which get no lane either way)", DEFAULT_FRAME_LANE, rw);
  properties[PROP_WAKE_AHEAD] = g_param_spec_uint ("wake-ahead",
      "Wake ahead", "Microseconds before a steady producer's next frame is "
      "due that the streaming thread wakes up and polls the frame lane for "
      "it, rather than sleep until the producer rings: the wake-up's time "
      "is taken off each frame's latency, for up to twice this much CPU "
      "time a frame (in the stats: lane-spin-us, lane-early-wakes, "
      "lane-early-hits; 0 = off)", 0, GST_GPU_SHARE_SRC_MAX_WAKE_AHEAD,
      DEFAULT_WAKE_AHEAD, rw);
  properties[PROP_ALLOWED_PRODUCER_UIDS] =
      gpushare_ids_param_spec ("allowed-producer-uids",
      "Allowed producer uids", "Producers of these uids are trusted, beside "
      "those of this process's own uid and root (which always are), e.g. "
      "<1000>; a process of any other uid listening at socket-path is "
      "refused before it is read", "uid", rw);
  properties[PROP_MAX_IN_PLACE] = g_param_spec_uint ("max-in-place",
      "Max in place", "Buffers wrapping the producer's slots that downstream "
      "may hold at once (system memory); past that a frame is copied and its "
      "slot given back at once, so that a sink or queue that keeps buffers "
      "never holds up the producer (0 = half the producer's ring, at least "
      "1); from a leaky producer never more than this consumer's share "
      "less one", 0, GPUSHARE_MAX_SLOTS, DEFAULT_MAX_IN_PLACE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING
      | GST_PARAM_DOC_SHOW_DEFAULT);
  properties[PROP_IO_MODE] = g_param_spec_enum ("io-mode", "I/O mode",
      "How frames reach downstream: in place (the buffer is the producer's "
      "read-only slot, in system memory, and in GPU memory from GStreamer "
      "1.24 on), copied, or in place where possible (auto); see the stats' "
      "io and io-reason", GST_TYPE_GPU_SHARE_IO_MODE, DEFAULT_IO_MODE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY |
      GST_PARAM_DOC_SHOW_DEFAULT);
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Memory type in use and why, frames received and copied",
      GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (gobject_class, N_PROPERTIES, properties);

  caps = gpushare_xfer_template_caps ();
  /* the application's route, wherever the slots can be GPU memory */
  if (gpushare_xfer_gpu ())
    caps = gst_caps_merge (caps, gst_caps_from_string
        (GST_VIDEO_CAPS_MAKE_WITH_FEATURES
            (GPUSHARE_CAPS_FEATURE_MEMORY_GPUSHARE_CUDA,
                GST_VIDEO_FORMATS_ALL)));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  gst_element_class_set_static_metadata (element_class, "GPU share source",
      "Source/Video", "Receives the video frames a gpusharesink of another "
      "process on this host shares, read in place in its GPU (CUDA) or "
      "system memory slots where it can", "The gpushare authors");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_gpu_share_src_change_state);
  element_class->set_context =
      GST_DEBUG_FUNCPTR (gst_gpu_share_src_set_context);
  bsrc_class->start = GST_DEBUG_FUNCPTR (gst_gpu_share_src_start);
  bsrc_class->stop = GST_DEBUG_FUNCPTR (gst_gpu_share_src_stop);
  bsrc_class->negotiate = GST_DEBUG_FUNCPTR (gst_gpu_share_src_negotiate);
  bsrc_class->get_caps = GST_DEBUG_FUNCPTR (gst_gpu_share_src_get_caps);
  bsrc_class->query = GST_DEBUG_FUNCPTR (gst_gpu_share_src_query);
  bsrc_class->unlock = GST_DEBUG_FUNCPTR (gst_gpu_share_src_unlock);
  bsrc_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_gpu_share_src_decide_allocation);
  bsrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_gpu_share_src_unlock_stop);
  psrc_class->create = GST_DEBUG_FUNCPTR (gst_gpu_share_src_create);

  /* producers' caps may carry a multiview flag set: its type must be known
   * before gst_caps_from_string () meets it */
  g_type_ensure (GST_TYPE_VIDEO_MULTIVIEW_FLAGSET);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_TRANSPORT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_PRODUCER_LOST, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_SYNC, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_IO_MODE, 0);

  GST_DEBUG_CATEGORY_INIT (gst_gpu_share_src_debug, "gpusharesrc", 0,
      "gpushare consumer");
}

static void
gst_gpu_share_src_init (GstGpuShareSrc * self)
{
  self->socket_path = g_strdup (DEFAULT_SOCKET_PATH);
  self->connection_timeout = DEFAULT_CONNECTION_TIMEOUT;
  self->is_live = DEFAULT_IS_LIVE;
  self->transport = DEFAULT_TRANSPORT;
  self->producer_lost = DEFAULT_PRODUCER_LOST;
  self->sync = DEFAULT_SYNC;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->heartbeat_interval = DEFAULT_HEARTBEAT_INTERVAL;
  self->max_in_place = DEFAULT_MAX_IN_PLACE;
  self->io_mode = DEFAULT_IO_MODE;
  self->frame_lane = DEFAULT_FRAME_LANE;
  self->wake_ahead = DEFAULT_WAKE_AHEAD;
  gst_video_info_init (&self->vinfo);
  gpushare_timing_init (&self->handoff);
  gpushare_timing_init (&self->metas);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
  gst_base_src_set_live (GST_BASE_SRC (self), DEFAULT_IS_LIVE);
}
