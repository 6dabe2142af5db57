/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-gpusharesink
 * @title: gpusharesink
 * @see_also: gpusharesrc
 *
 * Shares raw video frames with consumers in other processes on the same
 * host.  Frames are written into a ring of shared slots (sealed memfds in
 * system memory) that every consumer maps once, read-only; per frame only a
 * slot index, a generation and the timestamps cross the control socket.
 * Upstream elements that accept the offered buffer pool write straight into
 * the slots; other buffers are copied in once.
 *
 * Each consumer (gpusharesrc) receives every frame.  #GstGpuShareSink:policy
 * says what happens when a consumer is slow: `lossless` makes the producer
 * wait until every consumer released a slot, `leaky` makes a consumer that
 * holds its share of slots miss frames while the producer and the other
 * consumers go on.  `auto` (the default) is leaky when upstream is live and
 * lossless otherwise.  A leaky consumer's share is told with every frame:
 * its gpusharesrc copies what its pipeline would keep past it, and the
 * ring (#GstGpuShareSink:ring-size 0, the default) grows so that each share
 * is 3 slots.  A consumer skipped for 2 s is named in a WARNING.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc ! video/x-raw,format=NV12,width=1920,height=1080 ! gpusharesink socket-path=/tmp/gpushare.sock
 * gst-launch-1.0 gpusharesrc socket-path=/tmp/gpushare.sock ! videoconvert ! autovideosink
 * ]|
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gstgpusharesink.h"
#include "gpushareside.h"

#include <string.h>
#include <time.h>
#include <gst/video/video.h>

#include "gpushareframemeta.h"
#include "gpushareids.h"
#include "gpushareserver.h"
#include "gpusharetiming.h"
#include "gstgpusharesinkpool.h"
#include "gpusharevideo.h"
#include "gpusharexfer.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpu_share_sink_debug);
#define GST_CAT_DEFAULT gst_gpu_share_sink_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_WAIT_FOR_CONNECTION FALSE
#define DEFAULT_MIN_CONSUMERS 1
#define DEFAULT_RING_SIZE 0     /* auto */
#define DEFAULT_POLICY GST_GPU_SHARE_POLICY_AUTO
#define DEFAULT_SOCKET_MODE 0600
#define DEFAULT_MAX_CLIENTS 16
#define DEFAULT_CUDA_DEVICE_ID 0
#define DEFAULT_HANDSHAKE_TIMEOUT 5000  /* ms */
#define DEFAULT_MAX_PENDING 8
#define DEFAULT_HEARTBEAT_INTERVAL 1000 /* ms */
/* room for a 16-bit mask as large as the frame */
#define DEFAULT_META_SLOT_SIZE -1
#define DEFAULT_LEASE_TIMEOUT 5000      /* ms */
#define MAX_CLIENTS 64

/* the server's reasons are the element's enum */
G_STATIC_ASSERT ((gint) GPUSHARE_REMOVE_LEASE ==
    (gint) GST_GPU_SHARE_REMOVE_LEASE);
G_STATIC_ASSERT ((gint) GPUSHARE_REMOVE_GOODBYE ==
    (gint) GST_GPU_SHARE_REMOVE_GOODBYE);

enum
{
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_WAIT_FOR_CONNECTION,
  PROP_MIN_CONSUMERS,
  PROP_RING_SIZE,
  PROP_POLICY,
  PROP_SOCKET_MODE,
  PROP_MAX_CLIENTS,
  PROP_HANDSHAKE_TIMEOUT,
  PROP_LEASE_TIMEOUT,
  PROP_MAX_PENDING,
  PROP_HEARTBEAT_INTERVAL,
  PROP_META_SLOT_SIZE,
  PROP_ALLOWED_UIDS,
  PROP_ALLOWED_GIDS,
  PROP_GPU_UIDS,
  PROP_GPU_GIDS,
  PROP_CUDA_DEVICE_ID,
  PROP_NUM_CLIENTS,
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

enum
{
  SIGNAL_CLIENT_CONNECTED,
  SIGNAL_CLIENT_REMOVED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

struct _GstGpuShareSink
{
  GstBaseSink parent;

  /* properties, and vinfo, under the object lock */
  gchar *socket_path;
  gboolean wait_for_connection;
  guint min_consumers;
  /* streaming thread: the metas of the frame being sent; the counts are
   * read by the stats (atomic) */
  GpuShareFrameMetas *meta;
  gint metas_sent;
  gint metas_not_carried;
  gint events_sent;             /* atomic */
  gint events_not_carried;      /* atomic */
  /* where a frame's time goes in render: the wait for a slot (consumers,
   * the policy), the write into it (copies, the GPU's wait), the publish
   * (signals, FRAME messages), and of the publish the frame's metas
   * (collected, their payloads copied into the side memory or the GPU
   * slots) */
  GpuShareTiming slot_wait;
  GpuShareTiming write;
  GpuShareTiming publish;
  GpuShareTiming metas;
  /* the pool of the buffer in render, for upstream_stopped () */
  GstBufferPool *render_pool;
  /* the host's waits for the device within write and publish (and the
   * pool's prepare before them), and the microseconds spent spinning in
   * them since start */
  GpuShareTiming device_wait;
  guint64 device_spin_us;
  gboolean told_not_carried;
  guint ring_size;
  GstGpuShareSlowPolicy policy;
  guint socket_mode;
  guint max_clients;
  guint handshake_timeout;      /* ms, 0: none */
  guint lease_timeout;          /* ms, 0: none */
  guint max_pending;            /* consumers not streaming yet, at most */
  guint heartbeat_interval;     /* ms, 0: none */
  gint64 meta_slot_size;        /* bytes, 0: none, -1: auto */
  GArray *allowed_uids;         /* guint; our own uid is always allowed */
  GArray *allowed_gids;         /* guint: a peer's primary gid */
  GArray *gpu_uids;             /* guint: who may map GPU memory; both */
  GArray *gpu_gids;             /* empty: every consumer admitted */
  gint cuda_device_id;
  GstVideoInfo vinfo;           /* the negotiated caps */

  /* the producer core, from start on (kept after stop for its stats) */
  GpuShareServer *server;
  GstObject *gpu_ctx;           /* GStreamer's GPU context, shared */

  /* streaming thread */
  gboolean live_known;
  gboolean live;
  /* the stream's format as set_caps gave it to the server, and whether
   * the GPU slots have room past the frame for payloads in GPU memory
   * (asked for once a frame has some) */
  GpuShareLayout layout;
  guint layout_ring_size;
  guint32 side_pages;
  gboolean device_side;
  gboolean told_device_payloads;
};


#define gst_gpu_share_sink_parent_class parent_class
G_DEFINE_TYPE (GstGpuShareSink, gst_gpu_share_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (gpusharesink, "gpusharesink", GST_RANK_NONE,
    GST_TYPE_GPU_SHARE_SINK);

static gchar *status_text (GpuShareServer * server, gpointer user_data);

/* From the server's wait for consumers, in render's thread: the pool of
 * the buffer being rendered was set flushing (or deactivated) from
 * another thread, which is what a source does when an EOS is sent to it
 * (gst-launch-1.0 -e on Ctrl-C): it then waits for its streaming thread,
 * which waits here, and the EOS would never come.  Our own pools wake the
 * wait as they flush; another pool is looked at every 100 ms.  (A caps
 * change that replaces upstream's pool behind a queue looks the same: the
 * frames then go to nobody until the next flush or state change.) */
static gboolean
upstream_stopped (gpointer user_data)
{
  GstGpuShareSink *self = user_data;

  return self->render_pool && (GST_BUFFER_POOL_IS_FLUSHING (self->render_pool)
      || !gst_buffer_pool_is_active (self->render_pool));
}

/* ------------------------------------------------------------------------ */
/* The server's events, delivered without any lock held */

/* A consumer dropped for what it did or did not do (not one that said
 * goodbye, hung up or was refused at the door): the setting that decided
 * it, or "none" */
static const gchar *
drop_setting (const GpuShareServerEvent * ev)
{
  switch (ev->reason) {
    case GPUSHARE_REMOVE_TIMEOUT:
      return strstr (ev->detail, "heartbeat") ? "heartbeat-interval" :
          "handshake-timeout";
    case GPUSHARE_REMOVE_LEASE:
      return "lease-timeout";
    case GPUSHARE_REMOVE_SLOW:
      return "policy";
    case GPUSHARE_REMOVE_PROTOCOL:
    case GPUSHARE_REMOVE_RESOURCE:
      return "none";
    default:
      return NULL;
  }
}

/* once per consumer dropped: a warning gst-launch-1.0 prints without -m,
 * with the consumer, the reason and the setting involved */
static void
warn_dropped (GstGpuShareSink * self, const GpuShareServerEvent * ev)
{
  const gchar *setting = drop_setting (ev);
  const gchar *reason = gpushare_remove_reason_to_string (ev->reason);
  gboolean named;

  if (!setting || ev->client_id == 0)
    return;
  named = strcmp (setting, "none") != 0;
  GST_ELEMENT_WARNING_WITH_DETAILS (self, RESOURCE, READ,
      ("Dropped consumer %u (pid %d, \"%s\"): %s", ev->client_id, ev->pid,
          ev->name, reason),
      ("%s%s%s", ev->detail, named ? "; the setting involved: " : "",
          named ? setting : ""),
      ("client-id", G_TYPE_UINT, ev->client_id,
          "pid", G_TYPE_INT, ev->pid,
          "name", G_TYPE_STRING, ev->name,
          "reason", G_TYPE_STRING, reason,
          "detail", G_TYPE_STRING, ev->detail,
          "setting", G_TYPE_STRING, setting, NULL));
}

static void
server_event (GpuShareServer * server, const GpuShareServerEvent * ev,
    gpointer user_data)
{
  GstGpuShareSink *self = user_data;

  switch (ev->type) {
    case GPUSHARE_SERVER_EVENT_CONNECTED:
      g_signal_emit (self, signals[SIGNAL_CLIENT_CONNECTED], 0, ev->client_id);
      /* and on the bus, for gst-launch and applications that watch it */
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self),
              gst_structure_new ("gpushare-client-connected",
                  "client-id", G_TYPE_UINT, ev->client_id,
                  "pid", G_TYPE_INT, ev->pid,
                  "uid", G_TYPE_UINT, ev->uid,
                  "name", G_TYPE_STRING, ev->name,
                  "memory-type", G_TYPE_STRING,
                  gpushare_mem_type_to_string (ev->mem_type), NULL)));
      break;
    case GPUSHARE_SERVER_EVENT_REMOVED:
      g_signal_emit (self, signals[SIGNAL_CLIENT_REMOVED], 0, ev->client_id,
          (GstGpuShareClientRemoveReason) ev->reason);
      /* a refusal (client-id 0) too, with who was refused */
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self),
              gst_structure_new ("gpushare-client-removed",
                  "client-id", G_TYPE_UINT, ev->client_id,
                  "pid", G_TYPE_INT, ev->pid,
                  "uid", G_TYPE_UINT, ev->uid,
                  "name", G_TYPE_STRING, ev->name,
                  "reason", G_TYPE_STRING,
                  gpushare_remove_reason_to_string (ev->reason),
                  "detail", G_TYPE_STRING, ev->detail, NULL)));
      warn_dropped (self, ev);
      break;
    case GPUSHARE_SERVER_EVENT_QUARANTINE:
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self),
              gst_structure_new ("gpushare-quarantine",
                  "client-id", G_TYPE_UINT, ev->client_id,
                  "slots", G_TYPE_UINT, ev->slots,
                  "reason", G_TYPE_STRING,
                  gpushare_remove_reason_to_string (ev->reason), NULL)));
      break;
    case GPUSHARE_SERVER_EVENT_NUM_CLIENTS:
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_NUM_CLIENTS]);
      break;
    case GPUSHARE_SERVER_EVENT_STALLED:
      /* a warning, not an error: the producer and the other consumers go
       * on; once per stall, with what an application needs to find it
       * (the fields of the message's "details" structure) */
      GST_ELEMENT_WARNING_WITH_DETAILS (self, RESOURCE, BUSY,
          ("A consumer takes no more frames: it holds its whole share of "
              "the ring"), ("%s", ev->detail),
          ("client-id", G_TYPE_UINT, ev->client_id,
              "pid", G_TYPE_INT, ev->pid,
              "name", G_TYPE_STRING, ev->name,
              "share", G_TYPE_UINT, ev->share,
              "slots-held", G_TYPE_UINT, ev->slots,
              "consumers", G_TYPE_UINT, ev->n_consumers,
              "frames-skipped", G_TYPE_UINT64, ev->skipped,
              "skipped-ms", G_TYPE_UINT, ev->skipped_ms, NULL));
      break;
    case GPUSHARE_SERVER_EVENT_WAITING:{
      gchar *path;
      guint min;
      gboolean wfc;

      GST_OBJECT_LOCK (self);
      path = g_strdup (self->socket_path);
      min = self->min_consumers;
      wfc = self->wait_for_connection;
      GST_OBJECT_UNLOCK (self);
      /* once a wait, and on the bus: gst-launch-1.0 prints it */
      GST_INFO_OBJECT (self, "waiting for %u consumers (%u ready)",
          ev->n_consumers, ev->slots);
      GST_ELEMENT_INFO_WITH_DETAILS (self, RESOURCE, BUSY,
          ("Waiting for %u consumer%s at %s", ev->n_consumers,
              ev->n_consumers == 1 ? "" : "s", path),
          ("waiting for %u consumer%s at %s: %u of %u ready "
              "(min-consumers=%u, wait-for-connection=%s); the frames wait "
              "for them.  A state change, or an EOS sent to a source that "
              "allocates from a pool (gst-launch-1.0 -e and Ctrl-C), ends "
              "the wait", ev->n_consumers, ev->n_consumers == 1 ? "" : "s",
              path, ev->slots, ev->n_consumers, min,
              wfc ? "true" : "false"),
          ("consumers", G_TYPE_UINT, ev->n_consumers,
              "ready", G_TYPE_UINT, ev->slots, NULL));
      g_free (path);
      break;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Base class */

/* object lock held: the server's settings, pointing into ours */
static void
server_config (GstGpuShareSink * self, GpuShareServerConfig * config)
{
  memset (config, 0, sizeof (*config));
  config->socket_path = self->socket_path;
  config->socket_mode = self->socket_mode;
  config->max_clients = self->max_clients;
  config->max_pending = self->max_pending;
  config->handshake_timeout = self->handshake_timeout;
  config->lease_timeout = self->lease_timeout;
  config->heartbeat_interval = self->heartbeat_interval;
  config->allowed_uids = self->allowed_uids;
  config->allowed_gids = self->allowed_gids;
  config->gpu_uids = self->gpu_uids;
  config->gpu_gids = self->gpu_gids;
  config->cuda_device_id = self->cuda_device_id;
  config->name = GST_OBJECT_NAME (self);
}

static gboolean
gst_gpu_share_sink_start (GstBaseSink * bsink)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  GpuShareServerConfig config;
  GpuShareServer *server;
  GError *error = NULL;

  gpushare_timing_reset (&self->slot_wait);
  gpushare_timing_reset (&self->write);
  gpushare_timing_reset (&self->publish);
  gpushare_timing_reset (&self->metas);
  gpushare_timing_reset (&self->device_wait);
  __atomic_store_n (&self->device_spin_us, 0, __ATOMIC_RELAXED);
  GST_OBJECT_LOCK (self);
  if (self->socket_mode > 0777) {
    guint mode = self->socket_mode;

    GST_OBJECT_UNLOCK (self);
    /* 666 is read as a decimal number (01232): what was meant is 0666 */
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("socket-mode %u is not a file mode: write it in octal with its "
            "leading 0 (socket-mode=0%u)", mode, mode),
        ("a file mode is at most 0777; %u is 0%o", mode, mode));
    return FALSE;
  }
  if (!self->socket_path) {
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("No socket path set"), ("set the socket-path property"));
    return FALSE;
  }
  server_config (self, &config);
  /* copied: the settings of this run */
  server = gpushare_server_new (&config, self, server_event, self);
  gpushare_server_set_status_func (server, status_text, self);
  gpushare_server_set_stop_func (server, upstream_stopped, self);
  GST_OBJECT_UNLOCK (self);

  if (!gpushare_server_start (server, &error)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ_WRITE,
        ("Could not listen on the socket path"), ("%s", error->message));
    g_clear_error (&error);
    gpushare_server_unref (server);
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  g_clear_pointer (&self->server, gpushare_server_unref);
  self->server = server;
  GST_OBJECT_UNLOCK (self);
  self->live_known = FALSE;
  self->live = FALSE;
  self->device_side = FALSE;
  /* share a GPU context with neighbouring GPU elements, where GStreamer's
   * library for it is here; without it the primary context serves */
  if (gpushare_server_gpu_ok (server))
    gpushare_xfer_gpu_context_ensure (GST_ELEMENT (self),
        self->cuda_device_id, &self->gpu_ctx);
  return TRUE;
}

static gboolean
gst_gpu_share_sink_stop (GstBaseSink * bsink)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);

  if (self->server)
    gpushare_server_stop (self->server);
  gst_clear_object (&self->gpu_ctx);
  return TRUE;
}

/* the stream's format, as set_caps kept it, to the server (a new ring
 * where it needs one); FALSE with the error posted */
static gboolean
set_format (GstGpuShareSink * self)
{
  GError *error = NULL;

  if (!gpushare_server_set_format (self->server, &self->layout,
          self->layout_ring_size, self->side_pages, self->device_side,
          &error)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Could not allocate the slot ring"), ("%s", error->message));
    g_clear_error (&error);
    return FALSE;
  }
  return TRUE;
}

/* text into layout's caps where its consumers take it
 * (gpushare_video_layout_to_caps ()) */
static gboolean
announceable (GpuShareLayout * layout, const gchar * text)
{
  GstVideoInfo info;
  GstCaps *caps;

  if (!gpushare_layout_set_caps (layout, text))
    return FALSE;
  caps = gpushare_video_caps_from_peer (layout->caps, &info);
  if (!caps)
    return FALSE;
  gst_caps_unref (caps);
  return TRUE;
}

static gboolean
gst_gpu_share_sink_set_caps (GstBaseSink * bsink, GstCaps * caps)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  GpuShareLayout layout;
  GstVideoInfo vinfo;
  GstCaps *plain;
  gchar *str, *why = NULL;
  guint ring_size, i;
  guint32 side_pages;

  if (!gst_video_info_from_caps (&vinfo, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Unsupported caps"),
        ("cannot parse %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  /* the layout we announce must pass the consumers' check of it
   * (gpusharevideo.h): tiled formats, whose rows are not described by a
   * stride, would have every consumer refuse the stream */
  if (!gpushare_video_check_info (&vinfo, &why)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Format %s cannot be shared", GST_VIDEO_INFO_NAME (&vinfo)),
        ("%s", why));
    g_free (why);
    return FALSE;
  }

  /* the caps describe the picture; which memory it travels in is each
   * consumer's own choice, so the announced caps carry no memory feature */
  memset (&layout, 0, sizeof (layout));
  plain = gst_caps_copy (caps);
  gst_caps_set_features (plain, 0, NULL);
  str = gst_caps_to_string (plain);
  gst_caps_unref (plain);
  layout.frame_size = GST_VIDEO_INFO_SIZE (&vinfo);
  layout.n_planes = GST_VIDEO_INFO_N_PLANES (&vinfo);
  for (i = 0; i < layout.n_planes; i++) {
    layout.offsets[i] = GST_VIDEO_INFO_PLANE_OFFSET (&vinfo, i);
    layout.strides[i] = GST_VIDEO_INFO_PLANE_STRIDE (&vinfo, i);
  }
  if (!announceable (&layout, str)) {
    /* what every consumer would refuse (never sent: a refusal ends the
     * stream there) goes as the picture's caps alone */
    GstCaps *picture = gst_video_info_to_caps (&vinfo);
    gchar *bare = gst_caps_to_string (picture);

    gst_caps_unref (picture);
    GST_ELEMENT_WARNING (self, STREAM, FORMAT, ("Caps the consumers would "
            "not take are announced as the picture's alone"), ("longer "
            "than %d bytes, not UTF-8, or not parsed back as a peer's "
            "text: %s", GPUSHARE_MAX_CAPS_LEN, bare));
    if (!announceable (&layout, bare)) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Caps cannot be "
              "announced"), ("%s", bare));
      g_free (bare);
      g_free (str);
      return FALSE;
    }
    g_free (bare);
  }
  g_free (str);

  GST_OBJECT_LOCK (self);
  ring_size = self->ring_size;
  side_pages = gpushare_side_pages_for (self->meta_slot_size,
      GST_VIDEO_INFO_WIDTH (&vinfo), GST_VIDEO_INFO_HEIGHT (&vinfo));
  self->vinfo = vinfo;
  GST_OBJECT_UNLOCK (self);
  if (ring_size == 1) {
    /* one slot would be the producer's, none a consumer's */
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("ring-size 1 is too "
            "small: 2 slots at least, or 0 for a ring of auto size"), (NULL));
    return FALSE;
  }
  self->layout = layout;
  self->layout_ring_size = ring_size;
  self->side_pages = side_pages;
  return set_format (self);
}

/* The first frame whose metas have payloads in GPU memory (masks, tensor
 * data): from now on the GPU slots have room past the frame for them,
 * as large as the side memory, which a new ring gives (once a stream) */
static gboolean
want_device_side (GstGpuShareSink * self, GstBuffer * buf)
{
  if (self->device_side || self->side_pages == 0
      || !gpushare_frame_meta_has_device_payloads (buf,
          gpushare_xfer_gpu_is_memory))
    return TRUE;
  self->device_side = TRUE;
  GST_INFO_OBJECT (self, "metas with payloads in GPU memory: the GPU slots "
      "get %u bytes of room for them past each frame (a new ring)",
      self->side_pages * GPUSHARE_SIDE_PAGE);
  return set_format (self);
}

static void
learn_liveness (GstGpuShareSink * self)
{
  gboolean live = FALSE, upstream_live = FALSE;
  GstClockTime min = 0, max = 0;

  gst_base_sink_query_latency (GST_BASE_SINK (self), &live, &upstream_live,
      &min, &max);
  self->live_known = TRUE;
  self->live = upstream_live;
  GST_DEBUG_OBJECT (self, "upstream is %slive", upstream_live ? "" : "not ");
  gpushare_server_set_live (self->server, upstream_live,
      upstream_live ? min : GST_CLOCK_TIME_NONE);
}

static GstGpuShareSlowPolicy
effective_policy (GstGpuShareSink * self)
{
  GstGpuShareSlowPolicy policy;

  GST_OBJECT_LOCK (self);
  policy = self->policy;
  GST_OBJECT_UNLOCK (self);
  if (policy == GST_GPU_SHARE_POLICY_AUTO)
    policy = gpushare_server_is_live (self->server) ?
        GST_GPU_SHARE_POLICY_LEAKY : GST_GPU_SHARE_POLICY_LOSSLESS;
  return policy;
}

/* what the pools ask before they hand out a slot (GstGpuShareSinkPoolOwner):
 * are buffers of vinfo those of the current caps, and is the policy leaky
 * now */
static gboolean
pool_state (GstElement * owner, const GstVideoInfo * vinfo, gboolean * leaky)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (owner);
  gboolean current;

  *leaky = effective_policy (self) == GST_GPU_SHARE_POLICY_LEAKY;
  GST_OBJECT_LOCK (self);
  current = gst_video_info_is_equal (vinfo, &self->vinfo);
  GST_OBJECT_UNLOCK (self);
  return current;
}

/* the buffer is still the slot the pool handed out: upstream wrote it in
 * place (its memory could have been replaced on the way) */
static const GpuShareServerTag *
in_place_tag (GstBuffer * buf)
{
  const GpuShareServerTag *tag = gst_gpu_share_sink_pool_buffer_tag (buf);

  if (!tag || gst_buffer_n_memory (buf) != 1)
    return NULL;
  return gpushare_xfer_ring_holds (tag->ring, tag->slot,
      gst_buffer_peek_memory (buf, 0)) ? tag : NULL;
}

static guint64
to_monotonic (GstGpuShareSink * self, GstClockTime running)
{
  GstClock *clock = gst_element_get_clock (GST_ELEMENT (self));
  GstClockTime base = gst_element_get_base_time (GST_ELEMENT (self));
  struct timespec ts;
  guint64 mono_now, clock_now;

  if (!clock)
    return GST_CLOCK_TIME_NONE;
  clock_now = gst_clock_get_time (clock);
  gst_object_unref (clock);
  clock_gettime (CLOCK_MONOTONIC, &ts);
  mono_now = GST_TIMESPEC_TO_TIME (ts);
  /* running + base is clock time; shift it onto CLOCK_MONOTONIC */
  return running + base + mono_now - clock_now;
}

/* the FRAME's timestamps and flags: a live producer's in CLOCK_MONOTONIC,
 * which every process on the host shares */
static void
frame_fields (GstGpuShareSink * self, GstBuffer * buf, GpuShareFrame * f)
{
  GstSegment *segment = &GST_BASE_SINK (self)->segment;

  memset (f, 0, sizeof (*f));
  f->pts = GST_BUFFER_PTS (buf);
  f->dts = GST_BUFFER_DTS (buf);
  f->duration = GST_BUFFER_DURATION (buf);
  f->offset = GST_BUFFER_OFFSET (buf);
  f->offset_end = GST_BUFFER_OFFSET_END (buf);
  f->buffer_flags = GST_MINI_OBJECT_FLAGS (buf) & GPUSHARE_BUFFER_FLAGS_CARRIED;
  if (self->live && GST_CLOCK_TIME_IS_VALID (f->pts)) {
    GstClockTime rt = gst_segment_to_running_time (segment, GST_FORMAT_TIME,
        f->pts);
    GstClockTime rdts = GST_CLOCK_TIME_IS_VALID (f->dts) ?
        gst_segment_to_running_time (segment, GST_FORMAT_TIME, f->dts) :
        GST_CLOCK_TIME_NONE;
    guint64 mono = GST_CLOCK_TIME_IS_VALID (rt) ? to_monotonic (self, rt) :
        GST_CLOCK_TIME_NONE;

    if (GST_CLOCK_TIME_IS_VALID (mono)) {
      f->flags |= GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME;
      f->dts = GST_CLOCK_TIME_IS_VALID (rdts) ? mono - rt + rdts :
          GST_CLOCK_TIME_NONE;
      f->pts = mono;
    }
  }
}

typedef struct
{
  GstGpuShareSink *self;
  const GpuShareServerFrame *frame;
} DevicePut;

/* a payload in GPU memory, past the frame in each of its GPU slots */
static gboolean
put_in_gpu_slots (gpointer user_data, gsize offset, GstBuffer * src,
    gsize src_offset, gsize src_stride, gsize row_bytes, guint rows)
{
  DevicePut *d = user_data;
  const GpuShareServerFrame *frame = d->frame;
  GError *error = NULL;
  guint i;

  for (i = 0; i < frame->n_rings; i++) {
    if (!gpushare_xfer_ring_write_region (frame->rings[i], frame->slot,
            frame->device_offset + offset, src, src_offset, src_stride,
            row_bytes, rows, &error)) {
      if (!d->self->told_device_payloads) {
        GST_WARNING_OBJECT (d->self, "a meta's payload in GPU memory could "
            "not be copied into the GPU slots, and does not travel: %s",
            error->message);
        d->self->told_device_payloads = TRUE;
      }
      g_clear_error (&error);
      return FALSE;
    }
  }
  return TRUE;
}

/* the metas of buf that travel (NULL: none); those that cannot are
 * counted, and said once */
static GpuShareFrameMetas *
frame_metas (GstGpuShareSink * self, GstBuffer * buf,
    const GpuShareServerFrame * frame)
{
  const gchar *name = NULL;
  gboolean any;
  guint skipped = 0;
  GpuShareMetaSide side = { NULL, };
  DevicePut put = { self, frame };

  /* large payloads beside the frame, in its slot's side memory */
  if (frame->side) {
    side.data = gpushare_side_region (frame->side, frame->slot);
    side.size = gpushare_side_region_size (frame->side);
  }
  /* and those in GPU memory past it in its GPU slots, a copy in the side
   * memory for consumers of system memory */
  if (frame->device_size) {
    side.device_size = frame->device_size;
    side.device_put = put_in_gpu_slots;
    side.device_user_data = &put;
    side.device_host_copy = frame->staged != NULL;
  }
  any = gpushare_frame_meta_collect_side (buf, self->meta,
      frame->side || frame->device_size ? &side : NULL, &skipped, &name);
  if (skipped) {
    g_atomic_int_add (&self->metas_not_carried, skipped);
    if (!self->told_not_carried) {
      GST_INFO_OBJECT (self, "metadata that cannot travel is left out, "
          "counted in the stats (metas-not-carried): %s first", name);
      self->told_not_carried = TRUE;
    }
  }
  if (!any)
    return NULL;
  g_atomic_int_add (&self->metas_sent, self->meta->n_entries);
  return self->meta;
}

static GstFlowReturn
gst_gpu_share_sink_render (GstBaseSink * bsink, GstBuffer * buf)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  GpuShareServerFrame frame;
  GpuShareServerResult res;
  GpuShareFrame fields;
  GstVideoInfo vinfo;
  GpuShareFrameMetas *metas;
  GError *error = NULL;
  gboolean lossless, gpu_buffer;
  guint i, wait_for;
  gint64 t0 = g_get_monotonic_time (), t1, t2;

  if (!self->live_known)
    learn_liveness (self);
  lossless = effective_policy (self) == GST_GPU_SHARE_POLICY_LOSSLESS;
  GST_OBJECT_LOCK (self);
  /* a file is not thrown away while nobody reads it, nor a camera held up
   * unless asked */
  if (self->wait_for_connection)
    wait_for = MAX (self->min_consumers, 1);
  else
    wait_for = self->live ? 0 : self->min_consumers;
  vinfo = self->vinfo;
  GST_OBJECT_UNLOCK (self);
  gpu_buffer = gst_buffer_n_memory (buf) > 0
      && gpushare_xfer_gpu_is_memory (gst_buffer_peek_memory (buf, 0));

  if (!want_device_side (self, buf))
    return GST_FLOW_ERROR;
  self->render_pool = buf->pool;
  res = gpushare_server_begin_frame (self->server, lossless, wait_for,
      gpu_buffer, in_place_tag (buf), &frame, &error);
  self->render_pool = NULL;
  switch (res) {
    case GPUSHARE_SERVER_OK:
      break;
    case GPUSHARE_SERVER_DROPPED:
      return GST_FLOW_OK;
    case GPUSHARE_SERVER_FLUSHING:{
      /* unlock () woke us: a flush, or a state change to PAUSED.  The base
       * class contract is to wait for preroll and then try again. */
      GstFlowReturn ret = gst_base_sink_wait_preroll (bsink);

      if (ret != GST_FLOW_OK)
        return ret;
      return gst_gpu_share_sink_render (bsink, buf);
    }
    case GPUSHARE_SERVER_NO_FORMAT:
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before data"),
          (NULL));
      return GST_FLOW_NOT_NEGOTIATED;
    case GPUSHARE_SERVER_ERROR:
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Could not replace the slot ring"), ("%s", error->message));
      g_clear_error (&error);
      return GST_FLOW_ERROR;
    case GPUSHARE_SERVER_ERROR_GPU:
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Could not write a frame into GPU memory"), ("%s", error->message));
      g_clear_error (&error);
      return GST_FLOW_ERROR;
  }

  t1 = g_get_monotonic_time ();
  gpushare_timing_add (&self->slot_wait, t1 - t0);
  /* only we write a slot the server handed us: no lock held */
  if (frame.system && !gpushare_xfer_ring_write (frame.system, frame.slot,
          &vinfo, buf, NULL, &error)) {
    gpushare_server_end_frame (self->server, &frame, FALSE, NULL, NULL, NULL);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not copy a frame"),
        ("%s", error->message));
    g_clear_error (&error);
    return GST_FLOW_ERROR;
  }
  for (i = 0; i < frame.n_rings; i++) {
    if (!gpushare_xfer_ring_write (frame.rings[i], frame.slot, &vinfo, buf,
            frame.staged, &error)) {
      gpushare_server_end_frame (self->server, &frame, FALSE, NULL, NULL, NULL);
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Could not write a frame into GPU memory"), ("%s", error->message));
      g_clear_error (&error);
      return GST_FLOW_ERROR;
    }
  }
  t2 = g_get_monotonic_time ();
  gpushare_timing_add (&self->write, t2 - t1);
  frame_fields (self, buf, &fields);
  metas = frame_metas (self, buf, &frame);
  gpushare_timing_add (&self->metas, g_get_monotonic_time () - t2);
  if (!gpushare_server_end_frame (self->server, &frame, TRUE, &fields,
          metas, &error)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not signal a frame to the consumers"), ("%s", error->message));
    g_clear_error (&error);
    return GST_FLOW_ERROR;
  }
  gpushare_timing_add (&self->publish, g_get_monotonic_time () - t2);
  gpushare_timing_add (&self->device_wait, (gint64) frame.device_wait_us);
  __atomic_fetch_add (&self->device_spin_us, frame.device_spin_us,
      __ATOMIC_RELAXED);
  return GST_FLOW_OK;
}

/* stream-start, tags and custom downstream events travel to the
 * consumers, in their place in the stream; one that does not fit is
 * counted */
static void
forward_event (GstGpuShareSink * self, GstEvent * event)
{
  GpuShareEvent *ev;
  gchar *text = NULL;
  guint kind;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_TAG:{
      GstTagList *tags = NULL;

      gst_event_parse_tag (event, &tags);
      kind = GPUSHARE_EVENT_TAGS;
      text = tags ? gst_tag_list_to_string (tags) : NULL;
      break;
    }
    case GST_EVENT_STREAM_START:{
      const gchar *id = NULL;
      GstStreamFlags flags = GST_STREAM_FLAG_NONE;
      GstStructure *st;
      guint group;

      gst_event_parse_stream_start (event, &id);
      gst_event_parse_stream_flags (event, &flags);
      if (!id)
        return;
      st = gst_structure_new ("stream-start", "stream-id", G_TYPE_STRING,
          id, "flags", G_TYPE_UINT, (guint) flags, NULL);
      if (gst_event_parse_group_id (event, &group))
        gst_structure_set (st, "group-id", G_TYPE_UINT, group, NULL);
      kind = GPUSHARE_EVENT_STREAM_START;
      text = gst_structure_to_string (st);
      gst_structure_free (st);
      break;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM:
    case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:
      kind = GST_EVENT_TYPE (event) == GST_EVENT_CUSTOM_DOWNSTREAM ?
          GPUSHARE_EVENT_CUSTOM : GPUSHARE_EVENT_CUSTOM_STICKY;
      text = gst_event_get_structure (event) ?
          gst_structure_to_string (gst_event_get_structure (event)) : NULL;
      break;
    default:
      return;
  }
  if (!text || !*text || strlen (text) > GPUSHARE_MAX_EVENT_LEN
      || !self->server) {
    g_atomic_int_inc (&self->events_not_carried);
    GST_INFO_OBJECT (self, "%s event not carried (%s)",
        GST_EVENT_TYPE_NAME (event), text ? "too long" : "nothing to send");
    g_free (text);
    return;
  }
  ev = g_new0 (GpuShareEvent, 1);
  ev->kind = kind;
  ev->text_len = strlen (text);
  memcpy (ev->text, text, ev->text_len);
  gpushare_server_send_event (self->server, ev);
  g_atomic_int_inc (&self->events_sent);
  g_free (ev);
  g_free (text);
}

static gboolean
gst_gpu_share_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);

  forward_event (self, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      gpushare_server_eos (self->server);
      break;
    case GST_EVENT_FLUSH_STOP:
      self->live_known = FALSE;
      gpushare_server_reset_eos (self->server);
      break;
    default:
      break;
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

static gboolean
gst_gpu_share_sink_unlock (GstBaseSink * bsink)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);

  if (self->server)
    gpushare_server_set_flushing (self->server, TRUE);
  return TRUE;
}

static gboolean
gst_gpu_share_sink_unlock_stop (GstBaseSink * bsink)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);

  if (self->server)
    gpushare_server_set_flushing (self->server, FALSE);
  return TRUE;
}

static gboolean
caps_are_gpu (GstCaps * caps)
{
  GstCapsFeatures *f = gst_caps_get_size (caps) ?
      gst_caps_get_features (caps, 0) : NULL;
  const gchar *feature = gpushare_xfer_gpu_caps_feature ();

  return f && feature && gst_caps_features_contains (f, feature);
}

static void
gst_gpu_share_sink_set_context (GstElement * element, GstContext * context)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (element);

  gpushare_xfer_gpu_context_set (element, context, self->cuda_device_id,
      &self->gpu_ctx);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static gboolean
gst_gpu_share_sink_query (GstBaseSink * bsink, GstQuery * query)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);

  if (gpushare_xfer_gpu_context_query (GST_ELEMENT (self), query,
          self->cuda_device_id, &self->gpu_ctx))
    return TRUE;
  return GST_BASE_SINK_CLASS (parent_class)->query (bsink, query);
}

static gboolean
gst_gpu_share_sink_propose_allocation (GstBaseSink * bsink, GstQuery * query)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  GstCaps *caps;
  gboolean need_pool;
  GstVideoInfo vinfo;

  gst_query_parse_allocation (query, &caps, &need_pool);
  if (!caps || !gst_video_info_from_caps (&vinfo, caps))
    return FALSE;
  /* GPU memory from upstream: from GStreamer 1.24 on, a pool whose buffers
   * are GPU slots (the frame is decoded or converted straight into shared
   * memory); otherwise it is copied on the device into a GPU slot and
   * upstream keeps its own GPU pool */
  if (caps_are_gpu (caps)) {
    if (need_pool && self->server && self->gpu_ctx) {
      GstGpuShareSinkPoolOwner owner = { GST_ELEMENT (self), pool_state };
      GstBufferPool *pool = gst_gpu_share_sink_gpu_pool_new (&owner,
          self->server, self->gpu_ctx, &vinfo);

      if (pool) {
        GstStructure *config = gst_buffer_pool_get_config (pool);

        gst_buffer_pool_config_set_params (config, caps,
            GST_VIDEO_INFO_SIZE (&vinfo), 0, 0);
        gst_buffer_pool_config_add_option (config,
            GST_BUFFER_POOL_OPTION_VIDEO_META);
        if (gst_buffer_pool_set_config (pool, config))
          gst_query_add_allocation_pool (query, pool,
              GST_VIDEO_INFO_SIZE (&vinfo), 0, 0);
        gst_object_unref (pool);
      }
    }
    gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
    return TRUE;
  }

  if (need_pool && self->server) {
    GstGpuShareSinkPoolOwner owner = { GST_ELEMENT (self), pool_state };
    GstBufferPool *pool = gst_gpu_share_sink_pool_new (&owner, self->server);
    GstStructure *config;

    config = gst_buffer_pool_get_config (GST_BUFFER_POOL (pool));
    gst_buffer_pool_config_set_params (config, caps,
        GST_VIDEO_INFO_SIZE (&vinfo), 0, 0);
    gst_buffer_pool_config_add_option (config,
        GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config (pool, config)) {
      gst_object_unref (pool);
      return FALSE;
    }
    gst_query_add_allocation_pool (query, pool,
        GST_VIDEO_INFO_SIZE (&vinfo), 0, 0);
    gst_object_unref (pool);
  }
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Properties */

/* the stats of server (NULL: none running) */
static GstStructure *
make_stats_of (GstGpuShareSink * self, GpuShareServer * server)
{
  GpuShareServerStats st;
  GstStructure *s;
  GValue list = G_VALUE_INIT;
  guint i;

  memset (&st, 0, sizeof (st));
  if (server)
    gpushare_server_get_stats (server, &st);
  g_value_init (&list, GST_TYPE_ARRAY);
  s = gst_structure_new ("application/x-gpushare-sink-stats",
      "epoch", G_TYPE_UINT64, st.epoch,
      "slots-quarantined", G_TYPE_UINT64, st.slots_quarantined,
      "rings-replaced", G_TYPE_UINT64, st.rings_replaced,
      "rings-grown", G_TYPE_UINT64, st.rings_grown,
      "ring-slots", G_TYPE_UINT, st.ring_slots,
      "legacy-rings-retained", G_TYPE_UINT, st.rings_retained,
      "frames-rendered", G_TYPE_UINT64, st.frames_rendered,
      "frames-dropped", G_TYPE_UINT64, st.frames_dropped,
      "frames-in-place", G_TYPE_UINT64, st.frames_in_place,
      "frames-copied", G_TYPE_UINT64, st.frames_copied,
      "frames-to-gpu", G_TYPE_UINT64, st.frames_to_gpu,
      "metas-sent", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->metas_sent),
      "metas-not-carried", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->metas_not_carried) +
      st.metas_not_sent,
      "events-sent", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->events_sent),
      "events-not-carried", G_TYPE_UINT64,
      (guint64) (guint) g_atomic_int_get (&self->events_not_carried),
      "gpu-memory", G_TYPE_STRING, st.gpu_memory ? st.gpu_memory :
      "not probed", "free-slots", G_TYPE_UINT, st.free_slots,
      "observers", G_TYPE_UINT, st.n_observers, NULL);
  gpushare_timing_set_fields (&self->slot_wait, s, "slot-wait-us");
  gpushare_timing_set_fields (&self->write, s, "write-us");
  gpushare_timing_set_fields (&self->publish, s, "publish-us");
  gpushare_timing_set_fields (&self->metas, s, "metas-us");
  gpushare_timing_set_fields (&self->device_wait, s, "device-wait-us");
  gst_structure_set (s, "device-wait-spin-us", G_TYPE_UINT64,
      __atomic_load_n (&self->device_spin_us, __ATOMIC_RELAXED), NULL);
  for (i = 0; i < st.n_clients; i++) {
    const GpuShareServerClientStats *c = &st.clients[i];
    GValue v = G_VALUE_INIT;

    g_value_init (&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&v, gst_structure_new ("client",
            "id", G_TYPE_UINT, c->id,
            "pid", G_TYPE_INT, c->pid,
            "uid", G_TYPE_UINT, c->uid,
            "name", G_TYPE_STRING, c->name,
            "state", G_TYPE_STRING, c->state,
            "memory-type", G_TYPE_STRING, c->memory_type,
            "sync-mode", G_TYPE_STRING, c->sync_mode,
            "memory-reason", G_TYPE_STRING, c->memory_reason,
            "frames-sent", G_TYPE_UINT64, c->frames_sent,
            "frames-released", G_TYPE_UINT64, c->frames_released,
            "frames-dropped", G_TYPE_UINT64, c->frames_dropped,
            "frames-lent", G_TYPE_UINT64, c->frames_lent,
            "slots-held", G_TYPE_UINT, c->slots_held,
            "share", G_TYPE_UINT, c->share,
            "stalled", G_TYPE_BOOLEAN, c->stalled, NULL));
    gst_value_array_append_and_take_value (&list, &v);
  }
  gpushare_server_stats_clear (&st);
  gst_structure_take_value (s, "clients", &list);
  return s;
}

static GstStructure *
make_stats (GstGpuShareSink * self)
{
  return make_stats_of (self, self->server);
}

/* What an observer (gpushare-inspect) is told every interval: the stats
 * and the settings that say how this producer treats its consumers.  On
 * the server's control thread; a status too long for one message goes
 * without its consumers' details. */
static gchar *
status_text (GpuShareServer * server, gpointer user_data)
{
  GstGpuShareSink *self = user_data;
  GstStructure *s = make_stats_of (self, server);
  GEnumClass *klass = g_type_class_ref (GST_TYPE_GPU_SHARE_SLOW_POLICY);
  GEnumValue *policy;
  gchar *text;

  gst_structure_set_name (s, "application/x-gpushare-status");
  GST_OBJECT_LOCK (self);
  policy = g_enum_get_value (klass, self->policy);
  gst_structure_set (s, "socket-path", G_TYPE_STRING, self->socket_path,
      "policy", G_TYPE_STRING, policy ? policy->value_nick : "unknown",
      "live", G_TYPE_BOOLEAN, self->live,
      "ring-size", G_TYPE_UINT, self->ring_size,
      "min-consumers", G_TYPE_UINT, self->min_consumers,
      "max-clients", G_TYPE_UINT, self->max_clients,
      "num-clients", G_TYPE_INT, gpushare_server_n_clients (server), NULL);
  GST_OBJECT_UNLOCK (self);
  g_type_class_unref (klass);
  text = gst_structure_to_string (s);
  if (strlen (text) > GPUSHARE_MAX_STATUS_LEN) {
    g_free (text);
    gst_structure_remove_field (s, "clients");
    gst_structure_set (s, "clients-omitted", G_TYPE_BOOLEAN, TRUE, NULL);
    text = gst_structure_to_string (s);
  }
  gst_structure_free (s);
  return text;
}

static void
gst_gpu_share_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOCKET_PATH:
      g_free (self->socket_path);
      self->socket_path = g_value_dup_string (value);
      break;
    case PROP_WAIT_FOR_CONNECTION:
      self->wait_for_connection = g_value_get_boolean (value);
      break;
    case PROP_MIN_CONSUMERS:
      self->min_consumers = g_value_get_uint (value);
      break;
    case PROP_RING_SIZE:
      self->ring_size = g_value_get_uint (value);
      break;
    case PROP_POLICY:
      self->policy = g_value_get_enum (value);
      break;
    case PROP_SOCKET_MODE:
      self->socket_mode = g_value_get_uint (value);
      break;
    case PROP_MAX_CLIENTS:
      self->max_clients = g_value_get_uint (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      self->cuda_device_id = g_value_get_int (value);
      break;
    case PROP_LEASE_TIMEOUT:
      self->lease_timeout = g_value_get_uint (value);
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      self->handshake_timeout = g_value_get_uint (value);
      break;
    case PROP_MAX_PENDING:
      self->max_pending = g_value_get_uint (value);
      break;
    case PROP_HEARTBEAT_INTERVAL:
      self->heartbeat_interval = g_value_get_uint (value);
      break;
    case PROP_META_SLOT_SIZE:
      self->meta_slot_size = g_value_get_int64 (value);
      break;
    case PROP_ALLOWED_UIDS:
      gpushare_ids_from_value (&self->allowed_uids, value);
      break;
    case PROP_ALLOWED_GIDS:
      gpushare_ids_from_value (&self->allowed_gids, value);
      break;
    case PROP_GPU_UIDS:
      gpushare_ids_from_value (&self->gpu_uids, value);
      break;
    case PROP_GPU_GIDS:
      gpushare_ids_from_value (&self->gpu_gids, value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  /* settings reach a running server at once (a consumer may now be
   * enough, or no longer needed, for one) */
  if (self->server) {
    GpuShareServerConfig config;

    server_config (self, &config);
    gpushare_server_configure (self->server, &config);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_share_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (object);

  switch (prop_id) {
    case PROP_NUM_CLIENTS:
      g_value_set_uint (value, self->server ?
          gpushare_server_n_clients (self->server) : 0);
      return;
    case PROP_STATS:
      g_value_take_boxed (value, make_stats (self));
      return;
    default:
      break;
  }

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOCKET_PATH:
      g_value_set_string (value, self->socket_path);
      break;
    case PROP_WAIT_FOR_CONNECTION:
      g_value_set_boolean (value, self->wait_for_connection);
      break;
    case PROP_MIN_CONSUMERS:
      g_value_set_uint (value, self->min_consumers);
      break;
    case PROP_RING_SIZE:
      g_value_set_uint (value, self->ring_size);
      break;
    case PROP_POLICY:
      g_value_set_enum (value, self->policy);
      break;
    case PROP_SOCKET_MODE:
      g_value_set_uint (value, self->socket_mode);
      break;
    case PROP_MAX_CLIENTS:
      g_value_set_uint (value, self->max_clients);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->cuda_device_id);
      break;
    case PROP_LEASE_TIMEOUT:
      g_value_set_uint (value, self->lease_timeout);
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      g_value_set_uint (value, self->handshake_timeout);
      break;
    case PROP_MAX_PENDING:
      g_value_set_uint (value, self->max_pending);
      break;
    case PROP_HEARTBEAT_INTERVAL:
      g_value_set_uint (value, self->heartbeat_interval);
      break;
    case PROP_META_SLOT_SIZE:
      g_value_set_int64 (value, self->meta_slot_size);
      break;
    case PROP_ALLOWED_UIDS:
      gpushare_ids_to_value (self->allowed_uids, value);
      break;
    case PROP_ALLOWED_GIDS:
      gpushare_ids_to_value (self->allowed_gids, value);
      break;
    case PROP_GPU_UIDS:
      gpushare_ids_to_value (self->gpu_uids, value);
      break;
    case PROP_GPU_GIDS:
      gpushare_ids_to_value (self->gpu_gids, value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_share_sink_finalize (GObject * object)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (object);

  g_clear_pointer (&self->server, gpushare_server_unref);
  gpushare_timing_clear (&self->slot_wait);
  gpushare_timing_clear (&self->write);
  gpushare_timing_clear (&self->publish);
  gpushare_timing_clear (&self->metas);
  gpushare_timing_clear (&self->device_wait);
  g_free (self->meta);
  g_free (self->socket_path);
  g_clear_pointer (&self->allowed_uids, g_array_unref);
  g_clear_pointer (&self->allowed_gids, g_array_unref);
  g_clear_pointer (&self->gpu_uids, g_array_unref);
  g_clear_pointer (&self->gpu_gids, g_array_unref);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_gpu_share_sink_class_init (GstGpuShareSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *bsink_class = GST_BASE_SINK_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY | GST_PARAM_DOC_SHOW_DEFAULT;
  GstCaps *caps;

  gobject_class->set_property = gst_gpu_share_sink_set_property;
  gobject_class->get_property = gst_gpu_share_sink_get_property;
  gobject_class->finalize = gst_gpu_share_sink_finalize;

  properties[PROP_SOCKET_PATH] = g_param_spec_string ("socket-path",
      "Socket path", "Path of the Unix socket consumers connect to",
      DEFAULT_SOCKET_PATH, rw);
  properties[PROP_WAIT_FOR_CONNECTION] =
      g_param_spec_boolean ("wait-for-connection", "Wait for connection",
      "Hold a live stream too until min-consumers consumers (at least one) "
      "have mapped the ring", DEFAULT_WAIT_FOR_CONNECTION,
      rw | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_MIN_CONSUMERS] = g_param_spec_uint ("min-consumers",
      "Min consumers", "Consumers a non-live stream waits for, at its start "
      "and when a frame finds none connected (0: never wait); a live stream "
      "waits only with wait-for-connection", 0, MAX_CLIENTS,
      DEFAULT_MIN_CONSUMERS, rw | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_RING_SIZE] = g_param_spec_uint ("ring-size", "Ring size",
      "Number of shared frame slots (0: auto, 8, doubled in a leaky stream "
      "while a consumer's share would be under 3 slots, up to 64); a leaky "
      "consumer's share is (slots - 1) / consumers", 0, GPUSHARE_MAX_SLOTS,
      DEFAULT_RING_SIZE, rw);
  properties[PROP_POLICY] = g_param_spec_enum ("policy", "Slow consumer policy",
      "What a slow consumer costs: auto is leaky for live upstreams and "
      "lossless otherwise", GST_TYPE_GPU_SHARE_SLOW_POLICY, DEFAULT_POLICY, rw);
  /* any number comes through, so that a mode written without its leading
   * 0 (socket-mode=666) is refused with the reason at start rather than
   * dropped with a GLib warning */
  properties[PROP_SOCKET_MODE] = g_param_spec_uint ("socket-mode",
      "Socket mode", "File mode of the socket, in octal with its leading 0 "
      "(0660, 0666); at most 0777 (default: owner only)", 0, G_MAXUINT,
      DEFAULT_SOCKET_MODE, rw);
  properties[PROP_MAX_CLIENTS] = g_param_spec_uint ("max-clients",
      "Max clients", "Most consumers connected at once", 1, MAX_CLIENTS,
      DEFAULT_MAX_CLIENTS, rw);
  properties[PROP_HANDSHAKE_TIMEOUT] = g_param_spec_uint ("handshake-timeout",
      "Handshake timeout", "Milliseconds a consumer has for each step of "
      "its handshake, and to map the ring of a caps change, before it is "
      "dropped (0 = forever)", 0, G_MAXUINT, DEFAULT_HANDSHAKE_TIMEOUT, rw);
  properties[PROP_LEASE_TIMEOUT] = g_param_spec_uint ("lease-timeout",
      "Slot lease timeout", "Milliseconds a consumer may hold a frame "
      "other than the newest it holds while the producer waits for a free "
      "slot; one that holds it longer is dropped and the slots it held are "
      "quarantined (0 = forever)", 0, G_MAXUINT, DEFAULT_LEASE_TIMEOUT, rw);
  properties[PROP_MAX_PENDING] = g_param_spec_uint ("max-pending",
      "Max pending handshakes", "Consumers connected that do not stream "
      "yet, at most: a flood of connections is refused beyond this", 1,
      MAX_CLIENTS, DEFAULT_MAX_PENDING, rw);
  properties[PROP_HEARTBEAT_INTERVAL] =
      g_param_spec_uint ("heartbeat-interval", "Heartbeat interval",
      "Milliseconds of silence after which a PING goes to a consumer; a "
      "consumer silent for 3 intervals is dropped (0 = no heartbeat)", 0,
      G_MAXUINT / 4, DEFAULT_HEARTBEAT_INTERVAL, rw);
  properties[PROP_META_SLOT_SIZE] = g_param_spec_int64 ("meta-slot-size",
      "Meta bytes a slot", "Bytes of side memory beside each slot for the "
      "large payloads of a frame's metas (segmentation masks, tensor data), "
      "written once for every consumer and read in place; pages take memory "
      "once written. -1: room for a 16-bit mask as large as the frame; 0: "
      "none (payloads go inline, up to 256 KiB a frame); at most 64 MiB. "
      "Takes effect with the next ring", -1, 64 * 1024 * 1024,
      DEFAULT_META_SLOT_SIZE, rw);
  properties[PROP_ALLOWED_UIDS] = gpushare_ids_param_spec ("allowed-uids",
      "Allowed uids", "Consumers of these uids may connect, beside those of "
      "this process's own uid (which always may), e.g. <1000,1001>", "uid", rw);
  properties[PROP_ALLOWED_GIDS] = gpushare_ids_param_spec ("allowed-gids",
      "Allowed gids", "Consumers whose primary group is one of these may "
      "connect, e.g. <44>", "gid", rw);
  properties[PROP_GPU_UIDS] = gpushare_ids_param_spec ("gpu-uids",
      "GPU uids", "Consumers that may map GPU memory, which a consumer that "
      "maps it could write: of these uids, of a primary group in gpu-gids, "
      "or of this process's own uid; the others get system memory, "
      "read-only. Empty (with gpu-gids): every consumer admitted may. "
      "Changed while streaming, a consumer that took GPU memory it may no "
      "longer have is dropped, e.g. <1000>", "uid", rw);
  properties[PROP_GPU_GIDS] = gpushare_ids_param_spec ("gpu-gids",
      "GPU gids", "Consumers whose primary group is one of these may map "
      "GPU memory (see gpu-uids), e.g. <44>", "gid", rw);
  properties[PROP_CUDA_DEVICE_ID] = g_param_spec_int ("cuda-device-id",
      "CUDA device id", "GPU whose memory holds the slots offered to "
      "consumers on the same GPU", 0, G_MAXINT, DEFAULT_CUDA_DEVICE_ID, rw);
  properties[PROP_NUM_CLIENTS] = g_param_spec_uint ("num-clients",
      "Number of clients", "Consumers connected now", 0, MAX_CLIENTS, 0,
      G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Ring and per-consumer statistics: memory type in use and why, frames "
      "sent, released and dropped", GST_TYPE_STRUCTURE,
      G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (gobject_class, N_PROPERTIES, properties);

  /**
   * GstGpuShareSink::client-connected:
   * @id: opaque id of the consumer
   *
   * A consumer finished its handshake and receives frames from now on.
   */
  signals[SIGNAL_CLIENT_CONNECTED] = g_signal_new ("client-connected",
      G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 1, G_TYPE_UINT);
  /**
   * GstGpuShareSink::client-removed:
   * @id: opaque id of the consumer (0 if it was refused before it got one)
   * @reason: a #GstGpuShareClientRemoveReason
   *
   * A consumer is gone; every slot it held was given back.
   */
  signals[SIGNAL_CLIENT_REMOVED] = g_signal_new ("client-removed",
      G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 2, G_TYPE_UINT, GST_TYPE_GPU_SHARE_CLIENT_REMOVE_REASON);

  caps = gpushare_xfer_template_caps ();
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  gst_element_class_set_static_metadata (element_class, "GPU share sink",
      "Sink/Video", "Shares video frames with gpusharesrc elements of other "
      "processes on this host: a ring of slots in GPU (CUDA) or system "
      "memory, handed over a Unix socket", "The gpushare authors");

  element_class->set_context =
      GST_DEBUG_FUNCPTR (gst_gpu_share_sink_set_context);
  bsink_class->query = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_query);
  bsink_class->start = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_start);
  bsink_class->stop = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_stop);
  bsink_class->set_caps = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_set_caps);
  bsink_class->render = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_render);
  bsink_class->event = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_event);
  bsink_class->unlock = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_unlock);
  bsink_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_gpu_share_sink_unlock_stop);
  bsink_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_gpu_share_sink_propose_allocation);

  GST_DEBUG_CATEGORY_INIT (gst_gpu_share_sink_debug, "gpusharesink", 0,
      "gpushare producer");
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_CLIENT_REMOVE_REASON, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_SLOW_POLICY, 0);
}

static void
gst_gpu_share_sink_init (GstGpuShareSink * self)
{
  self->socket_path = g_strdup (DEFAULT_SOCKET_PATH);
  /* room for what a lane's meta region takes: a META takes less */
  self->meta = gpushare_frame_metas_new (GPUSHARE_LANE_MAX_META_LEN);
  gpushare_timing_init (&self->slot_wait);
  gpushare_timing_init (&self->write);
  gpushare_timing_init (&self->publish);
  gpushare_timing_init (&self->metas);
  gpushare_timing_init (&self->device_wait);
  self->wait_for_connection = DEFAULT_WAIT_FOR_CONNECTION;
  self->min_consumers = DEFAULT_MIN_CONSUMERS;
  self->ring_size = DEFAULT_RING_SIZE;
  self->policy = DEFAULT_POLICY;
  self->socket_mode = DEFAULT_SOCKET_MODE;
  self->max_clients = DEFAULT_MAX_CLIENTS;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->handshake_timeout = DEFAULT_HANDSHAKE_TIMEOUT;
  self->lease_timeout = DEFAULT_LEASE_TIMEOUT;
  self->max_pending = DEFAULT_MAX_PENDING;
  self->heartbeat_interval = DEFAULT_HEARTBEAT_INTERVAL;
  self->meta_slot_size = DEFAULT_META_SLOT_SIZE;
  gst_video_info_init (&self->vinfo);
  /* frames go out as soon as they arrive; a live consumer syncs itself */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
}
