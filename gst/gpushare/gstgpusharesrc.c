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

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gst/video/video.h>

#include "gpusharebackend.h"
#include "gpushareconn.h"
#include "gpushareids.h"
#include "gpushareproto.h"
#include "gpusharering.h"
#include "gpusharetest.h"
#include "gpusharevideo.h"
#ifdef HAVE_CUDA
#include "gpusharecudaxfer.h"
#include "gpusharegstcuda.h"
#endif

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
#define RETRY_MIN_MS 10
#define RETRY_MAX_MS 250
#define GOODBYE_FLUSH_MS 100

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
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

typedef enum
{
  STATE_IDLE,
  STATE_CONNECTING,
  STATE_CONNECTED,              /* waiting for ANNOUNCE */
  STATE_ACCEPTED,               /* waiting for SLOTS */
  STATE_READY,                  /* receiving frames */
  STATE_REMAP,                  /* new epoch announced, waiting for SLOTS */
  STATE_DONE,                   /* EOS received */
  STATE_FAILED,
} SrcState;

/* What buffers need after the element let go: the connection, to send
 * releases, and the view, to check them.  Reference counted because a
 * buffer may outlive the element's session. */
typedef struct
{
  gint ref_count;
  GMutex lock;
  GpuShareConn *conn;           /* NULL once the session is over */
  GpuShareSlotView view;
  /* live buffers that wrap a slot of the ring of epoch in_place_epoch, the
   * newest one buffers were made of: the slots of a replaced ring are no
   * longer the producer's to write, nor to wait for */
  guint n_in_place;
  guint64 in_place_epoch;
} Session;

/* the consumer's mapping of a CUDA ring: frames queued for the streaming
 * thread keep it alive across a caps change.  Once it is closed, the
 * producer hears so (UNMAPPED): it may then free a legacy IPC ring of an
 * earlier epoch, which it may not while a process has it open. */
typedef struct
{
  gint ref_count;
#ifdef HAVE_CUDA
  GpuShareCudaView *view;
#endif
  guint64 epoch;
  Session *session;
} CudaView;

typedef struct
{
  Session *session;
  GpuShareImport *import;
  guint64 epoch;
  guint slot;
  guint32 generation;
  guint64 sequence;
  gboolean in_place;            /* counted in session->n_in_place */
} SlotRef;

typedef enum
{
  ITEM_CAPS,
  ITEM_FRAME,
  ITEM_EOS,
} ItemType;

typedef struct
{
  ItemType type;
  GstCaps *caps;
  GpuShareLayout *layout;
  GpuShareFrame frame;
  Session *session;             /* a FRAME's: drop_session () may run
                                 * while create () makes its buffer */
  GpuShareImport *import;
  CudaView *cuda;
} Item;

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

  /* control thread */
  GMainContext *context;
  GMainLoop *loop;
  GThread *thread;
  gint64 deadline;
  guint retry_ms;

  /* under lock */
  GMutex lock;
  GCond cond;
  SrcState state;
  Session *session;
  GQueue items;
  gboolean flushing;
  GQuark error_domain;
  gint error_code;
  gchar *error_text;
  gchar *error_debug;
  GpuShareLayout pending;       /* announced, slots not yet mapped */
  /* the shape of the ring mapped now (epoch 0: none), as its SLOTS said
   * and the import checked */
  guint64 mapped_epoch;
  guint mapped_n_slots;
  guint64 mapped_slot_size;
  GpuShareImport *import;
  GpuShareMemType mem_type;
  GpuShareSyncMode sync_mode;
  gchar *mem_reason;
  gint peer_device;             /* the producer's GPU when not ours, or -1 */
  CudaView *cuda;               /* current CUDA mapping */

  /* the GPU, probed at start */
  gboolean cuda_ok;
  gchar *cuda_reason;
#ifdef HAVE_CUDA
  GpuShareCudaCaps cuda_caps;
  GstObject *gst_cuda_ctx;      /* GstCudaContext shared with neighbours */
#endif
  GstBufferPool *out_pool;      /* for copies out of GPU slots */
  gboolean out_gpu;             /* negotiated memory:CUDAMemory */
  gboolean producer_live;
  guint64 latency;
  guint64 producer_instance;
  guint producer_minor;         /* of its protocol version */
  guint64 frames_received;
  guint64 frames_copied;        /* past max-in-place */
  guint reconnects;
  gboolean discont;             /* the next buffer starts a new producer */

  /* streaming thread only; read by get_caps under the object lock */
  GstCaps *caps;                /* the output caps */
  GstCaps *in_caps;             /* the producer's caps, system memory */
  GstVideoInfo vinfo;
  GpuShareLayout layout;
  gboolean have_first_abs;
  guint64 first_abs;
};

#define gst_gpu_share_src_parent_class parent_class
G_DEFINE_TYPE (GstGpuShareSrc, gst_gpu_share_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (gpusharesrc, "gpusharesrc", GST_RANK_NONE,
    GST_TYPE_GPU_SHARE_SRC);

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
#ifdef HAVE_CUDA
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE_WITH_FEATURES ("memory:CUDAMemory",
            GST_VIDEO_FORMATS_ALL) "; "
        GST_VIDEO_CAPS_MAKE (GST_VIDEO_FORMATS_ALL)));
#else
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (GST_VIDEO_FORMATS_ALL)));
#endif

GType
gst_gpu_share_transport_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_TRANSPORT_AUTO,
        "GPU memory on the same GPU, system memory otherwise", "auto"},
    {GST_GPU_SHARE_TRANSPORT_SYSTEM, "System memory only", "system"},
    {GST_GPU_SHARE_TRANSPORT_CUDA, "CUDA VMM memory, or an error", "cuda"},
    {GST_GPU_SHARE_TRANSPORT_CUDA_LEGACY,
        "Legacy CUDA IPC memory handles, or an error", "cuda-legacy"},
    {GST_GPU_SHARE_TRANSPORT_CUDA_FABRIC,
        "CUDA fabric handles (needs an IMEX channel), or an error",
        "cuda-fabric"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareTransport", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_share_producer_lost_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_PRODUCER_LOST_ERROR, "Post an error", "error"},
    {GST_GPU_SHARE_PRODUCER_LOST_EOS, "End the stream", "eos"},
    {GST_GPU_SHARE_PRODUCER_LOST_RECONNECT,
        "Connect again within connection-timeout and go on", "reconnect"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareProducerLost", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_share_sync_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_SYNC_AUTO, "The fastest mode both ends support", "auto"},
    {GST_GPU_SHARE_SYNC_HOST, "Each side synchronises its CUDA stream",
        "host"},
    {GST_GPU_SHARE_SYNC_SEMAPHORE, "64-bit words in shared GPU memory",
        "semaphore"},
    {GST_GPU_SHARE_SYNC_EVENT, "CUDA IPC events (needs a shared /dev/shm)",
        "event"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareSync", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static const gchar *
state_to_string (SrcState state)
{
  static const gchar *names[] = { "idle", "connecting", "connected",
    "accepted", "ready", "remap", "done", "failed"
  };
  return names[state];
}

/* lock held; the one place the state changes */
static void
set_state (GstGpuShareSrc * self, SrcState state)
{
  GST_DEBUG_OBJECT (self, "%s -> %s", state_to_string (self->state),
      state_to_string (state));
  self->state = state;
  g_cond_broadcast (&self->cond);
}

static Session *
session_ref (Session * s)
{
  g_atomic_int_inc (&s->ref_count);
  return s;
}

static void
session_unref (Session * s)
{
  if (!g_atomic_int_dec_and_test (&s->ref_count))
    return;
  if (s->conn)
    gpushare_conn_unref (s->conn);
  g_mutex_clear (&s->lock);
  g_free (s);
}

static CudaView *
cuda_view_ref (CudaView * v)
{
  g_atomic_int_inc (&v->ref_count);
  return v;
}

static void
cuda_view_unref (CudaView * v)
{
  Session *s = v->session;

  if (!g_atomic_int_dec_and_test (&v->ref_count))
    return;
#ifdef HAVE_CUDA
  gpushare_cuda_view_free (v->view);
#endif
  g_mutex_lock (&s->lock);
  if (s->conn) {
    GpuShareMsg msg = { 0, };

    msg.type = GPUSHARE_MSG_UNMAPPED;
    msg.u.mapped.epoch = v->epoch;
    gpushare_conn_send (s->conn, &msg, NULL, 0, NULL);
  }
  g_mutex_unlock (&s->lock);
  session_unref (s);
  g_free (v);
}

static void
item_free (Item * item)
{
  gst_clear_caps (&item->caps);
  g_free (item->layout);
  g_clear_pointer (&item->import, gpushare_import_unref);
  g_clear_pointer (&item->cuda, cuda_view_unref);
  g_clear_pointer (&item->session, session_unref);
  g_free (item);
}

/* lock held: a fatal problem, reported by create () */
static void
fail (GstGpuShareSrc * self, GQuark domain, gint code, const gchar * text,
    const gchar * debug)
{
  if (self->state == STATE_FAILED)
    return;
  GST_WARNING_OBJECT (self, "%s: %s", text, debug ? debug : "");
  self->error_domain = domain;
  self->error_code = code;
  g_free (self->error_text);
  self->error_text = g_strdup (text);
  g_free (self->error_debug);
  self->error_debug = g_strdup (debug);
  set_state (self, STATE_FAILED);
}

/* lock held: the producer broke the protocol; tell it and give up */
static void
producer_error (GstGpuShareSrc * self, const gchar * debug)
{
  GpuShareConn *conn = self->session ? self->session->conn : NULL;

  if (conn) {
    gpushare_conn_send_error (conn, GPUSHARE_ERR_PROTOCOL, debug);
    gpushare_conn_flush (conn, 10);
  }
  fail (self, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      "The producer sent an invalid message", debug);
}

static GstCaps *
layout_to_caps (const GpuShareLayout * l, GstVideoInfo * vinfo,
    gchar ** why)
{
  GstCaps *caps = gst_caps_from_string (l->caps);
  guint i;

  if (!caps || !gst_caps_is_fixed (caps)
      || !gst_video_info_from_caps (vinfo, caps)) {
    *why = g_strdup ("caps are not fixed raw video");
    goto bad;
  }
  /* the memory is ours to say: a feature in the producer's caps would
   * make downstream take our buffers for something they are not */
  if (gst_caps_get_features (caps, 0)
      && !gst_caps_features_is_equal (gst_caps_get_features (caps, 0),
          GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY)) {
    *why = g_strdup ("caps name a memory feature");
    goto bad;
  }
  if (l->n_planes != GST_VIDEO_INFO_N_PLANES (vinfo)) {
    *why = g_strdup ("plane count does not match the caps");
    goto bad;
  }
  /* every plane must fit its format's rows and lie inside the frame, and
   * the frame inside the slot, before any buffer points into the mapping:
   * downstream reads whole rows from the strides given here */
  if (l->frame_size > l->slot_size) {
    *why = g_strdup ("frame larger than slot");
    goto bad;
  }
  if (!gpushare_video_check_planes (vinfo, l->n_planes, l->offsets,
          l->strides, l->frame_size, why))
    goto bad;
  for (i = 0; i < l->n_planes; i++) {
    vinfo->offset[i] = l->offsets[i];
    vinfo->stride[i] = l->strides[i];
  }
  vinfo->size = l->frame_size;
  return caps;

bad:
  gst_clear_caps (&caps);
  return NULL;
}

/* lock held: the caps of a layout, or NULL after a protocol error that
 * says what is wrong with it */
static GstCaps *
checked_caps (GstGpuShareSrc * self, const GpuShareLayout * layout)
{
  GstVideoInfo vinfo;
  gchar *why = NULL;
  GstCaps *caps = layout_to_caps (layout, &vinfo, &why);

  if (!caps) {
    gchar *debug = g_strdup_printf ("bad layout: %s", why);

    producer_error (self, debug);
    g_free (debug);
    g_free (why);
  }
  return caps;
}

/* lock held: queue a caps item for the streaming thread */
static gboolean
queue_caps (GstGpuShareSrc * self, const GpuShareLayout * layout)
{
  GstCaps *caps = checked_caps (self, layout);
  Item *item;

  if (!caps)
    return FALSE;
  item = g_new0 (Item, 1);
  item->type = ITEM_CAPS;
  item->caps = caps;
  item->layout = g_memdup2 (layout, sizeof (*layout));
  g_queue_push_tail (&self->items, item);
  g_cond_broadcast (&self->cond);
  return TRUE;
}

static void
update_latency (GstGpuShareSrc * self, guint32 flags, guint64 latency)
{
  gboolean changed;

  g_mutex_lock (&self->lock);
  changed = self->latency != latency;
  self->latency = latency;
  self->producer_live = (flags & GPUSHARE_STREAM_FLAG_LIVE) != 0;
  g_mutex_unlock (&self->lock);
  if (changed && GST_CLOCK_TIME_IS_VALID (latency))
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
}

#ifdef HAVE_CUDA
/* The GPU memory type to take, 0 if none; *note says why legacy memory was
 * taken, and what it costs, or why nothing was.  Fabric memory is only
 * ever taken when asked for. */
static GpuShareMemType
pick_gpu_memory (GstGpuShareSrc * self, const GpuShareAnnounce * a,
    GstGpuShareTransport transport, const gchar ** note)
{
  gboolean vmm = (a->mem_types & GPUSHARE_MEM_CUDA_VMM)
      && self->cuda_caps.posix_fd;
  gboolean legacy = (a->mem_types & GPUSHARE_MEM_CUDA_LEGACY)
      && self->cuda_caps.unified_addressing;
  gboolean fabric = (a->mem_types & GPUSHARE_MEM_CUDA_FABRIC)
      && self->cuda_caps.fabric;

  *note = NULL;
  switch (transport) {
    case GST_GPU_SHARE_TRANSPORT_AUTO:
      if (vmm)
        return GPUSHARE_MEM_CUDA_VMM;
      /* cuIpcOpenMemHandle has no read-only mode: say so wherever it
       * is chosen */
      if (legacy) {
        *note = "legacy CUDA IPC, because VMM file descriptors are not "
            "possible between these ends; legacy IPC memory cannot be "
            "mapped read-only: this consumer could write the producer's "
            "slots";
        return GPUSHARE_MEM_CUDA_LEGACY;
      }
      *note = "neither VMM nor legacy CUDA IPC is possible between these "
          "ends";
      return 0;
    case GST_GPU_SHARE_TRANSPORT_CUDA:
      if (!vmm)
        *note = "VMM file descriptors are not possible between these ends";
      return vmm ? GPUSHARE_MEM_CUDA_VMM : 0;
    case GST_GPU_SHARE_TRANSPORT_CUDA_LEGACY:
      *note = legacy ? "legacy CUDA IPC as asked for; legacy IPC memory "
          "cannot be mapped read-only: this consumer could write the "
          "producer's slots" :
          "legacy CUDA IPC is not possible between these ends";
      return legacy ? GPUSHARE_MEM_CUDA_LEGACY : 0;
    case GST_GPU_SHARE_TRANSPORT_CUDA_FABRIC:
      if (!fabric)
        *note = "the GPUs do not support fabric handles";
      return fabric ? GPUSHARE_MEM_CUDA_FABRIC : 0;
    default:
      return 0;
  }
}
#endif

#ifdef HAVE_CUDA
/* The producer's GPU is another one: can this consumer read its memory in
 * place?  Returns the sync modes that stay possible (an event is recorded
 * only on a stream of its own GPU, and a consumer records its done events
 * on its stream: they belong to the producer's GPU), sets *peer_note for
 * the reason, or returns 0 with *why_not. */
static guint32
peer_sync_modes (GstGpuShareSrc * self, const GpuShareAnnounce * a,
    guint32 modes, gchar ** peer_note, gchar ** why_not)
{
  GError *error = NULL;
  gchar *uuid = gpushare_cuda_uuid_to_string (a->device.uuid);
  gboolean atomics;
  gint owner, rank;

  owner = gpushare_cuda_find_device (a->device.uuid);
  if (owner < 0) {
    *why_not = g_strdup_printf ("the producer's GPU (%s) is not visible to "
        "this consumer (another host's GPU, or hidden by "
        "CUDA_VISIBLE_DEVICES)", uuid);
  } else if (!gpushare_cuda_peer_probe (self->cuda_device_id, owner,
          &atomics, &rank, &error)) {
    *why_not = g_strdup_printf ("the producer is on another GPU (%s): %s",
        uuid, error->message);
    g_clear_error (&error);
  } else {
    self->peer_device = owner;
    modes &= ~(guint32) GPUSHARE_SYNC_EVENT;
    *peer_note = g_strdup_printf ("producer on %s (device %d here), read "
        "over peer access by device %d (link rank %d%s)", uuid, owner,
        self->cuda_device_id, rank, atomics ? ", native atomics" : "");
  }
  g_free (uuid);
  return *peer_note ? modes : 0;
}
#endif

/* lock held.  Picks this consumer's memory type and synchronisation for
 * what the producer offers; sets mem_reason either way.  FALSE when
 * nothing fits (a forced transport that cannot work included). */
static gboolean
choose_memory (GstGpuShareSrc * self, const GpuShareAnnounce * a)
{
  GstGpuShareTransport transport;
  GstGpuShareSync sync G_GNUC_UNUSED;   /* GPU memory only */
  const gchar *why_not = NULL;
  gchar *why_owned = NULL;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  transport = self->transport;
  sync = self->sync;
  GST_OBJECT_UNLOCK (self);
  self->sync_mode = 0;
  self->peer_device = -1;

  if (transport == GST_GPU_SHARE_TRANSPORT_SYSTEM) {
    why_not = "system memory was asked for (transport=system)";
  } else if (!self->cuda_ok) {
    /* this end's own reason first: on a host without the driver it is
     * the one that matters */
    why_not = self->cuda_reason;
  } else if (!(a->mem_types & ~GPUSHARE_MEM_SYSTEM)) {
    why_not = "the producer offers no GPU memory";
  } else {
#ifdef HAVE_CUDA
    guint32 common = a->device.sync_modes &
        gpushare_cuda_sync_modes (&self->cuda_caps);
    gchar *peer_note = NULL;
    GpuShareMemType type = 0;

    if (memcmp (a->device.uuid, self->cuda_caps.uuid, 16) != 0) {
      guint32 all = common;

      common = peer_sync_modes (self, a, common, &peer_note, &why_owned);
      why_not = why_owned;
      if (peer_note && sync == GST_GPU_SHARE_SYNC_EVENT
          && (all & GPUSHARE_SYNC_EVENT))
        why_not = "event synchronisation is not possible across GPUs (an "
            "event can only be recorded on its own GPU's streams)";
    }
    if (!why_not) {
      const gchar *note = NULL;

      type = pick_gpu_memory (self, a, transport, &note);
      if (sync != GST_GPU_SHARE_SYNC_AUTO)
        common &= (guint32) sync;
      if (!type)
        why_not = note;
      else if (!common)
        why_not = "no synchronisation mode in common";
      else {
        gchar *uuid = gpushare_cuda_uuid_to_string (self->cuda_caps.uuid);
        gchar *where = peer_note ? g_strdup (peer_note) :
            g_strdup_printf ("both ends on %s", uuid);

        self->mem_type = type;
        self->sync_mode = sync != GST_GPU_SHARE_SYNC_AUTO ? (guint32) sync :
            gpushare_cuda_sync_mode_pick (common, self->cuda_caps.mps);
        self->mem_reason = g_strdup_printf ("GPU memory (%s): %s, %s "
            "synchronisation%s%s%s", gpushare_mem_type_to_string (type), where,
            gpushare_sync_mode_to_string (self->sync_mode),
            sync != GST_GPU_SHARE_SYNC_AUTO ? "" : self->cuda_caps.mps ?
            " (auto: MPS is on)" : " (auto: no MPS)",
            note ? "; " : "", note ? note : "");
        g_free (where);
        g_free (uuid);
        g_free (peer_note);
        g_free (why_owned);
        return TRUE;
      }
    }
    g_free (peer_note);
#endif
  }
  if (!why_not)
    why_not = "GPU memory is not possible here";
  if ((transport != GST_GPU_SHARE_TRANSPORT_AUTO
          && transport != GST_GPU_SHARE_TRANSPORT_SYSTEM)
      || !(a->mem_types & GPUSHARE_MEM_SYSTEM)) {
    self->mem_reason = g_strdup_printf ("GPU memory was asked for but is "
        "not possible: %s", why_not);
    ok = FALSE;
  } else {
    self->mem_type = GPUSHARE_MEM_SYSTEM;
    self->mem_reason = g_strdup_printf ("system memory: %s", why_not);
    ok = TRUE;
  }
  self->peer_device = -1;
  g_free (why_owned);
  return ok;
}

static void
handle_announce (GstGpuShareSrc * self, const GpuShareAnnounce * a)
{
  GpuShareMsg msg = { 0, };
  const gchar *name = GST_OBJECT_NAME (self);

  if (self->state != STATE_CONNECTED) {
    producer_error (self, "ANNOUNCE out of order");
    return;
  }
  g_clear_pointer (&self->mem_reason, g_free);
  if (!choose_memory (self, a)) {
    gpushare_conn_send_error (self->session->conn, GPUSHARE_ERR_UNSUPPORTED,
        self->mem_reason);
    fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "The producer offers no memory type this consumer can use",
        self->mem_reason);
    return;
  }
  if (!queue_caps (self, &a->layout))
    return;
  self->pending = a->layout;
  self->producer_instance = a->instance;
  self->producer_minor = a->schema_minor;

  msg.type = GPUSHARE_MSG_ACCEPT;
  msg.u.accept.sync_mode = self->sync_mode;
#ifdef HAVE_CUDA
  if (self->cuda_ok)
    memcpy (msg.u.accept.uuid, self->cuda_caps.uuid, 16);
#endif
  msg.u.accept.reason_len = MIN (strlen (self->mem_reason),
      GPUSHARE_MAX_REASON_LEN);
  while (msg.u.accept.reason_len > 0 && !g_utf8_validate (self->mem_reason,
          msg.u.accept.reason_len, NULL))
    msg.u.accept.reason_len--;
  memcpy (msg.u.accept.reason, self->mem_reason, msg.u.accept.reason_len);
  msg.u.accept.schema_major = GPUSHARE_VERSION_MAJOR;
  msg.u.accept.schema_minor = GPUSHARE_VERSION_MINOR;
  msg.u.accept.mem_type = self->mem_type;
  msg.u.accept.pid = getpid ();
  msg.u.accept.instance = a->instance;
  msg.u.accept.name_len = MIN (strlen (name), GPUSHARE_MAX_NAME_LEN);
  memcpy (msg.u.accept.name, name, msg.u.accept.name_len);
  gpushare_conn_send (self->session->conn, &msg, NULL, 0, NULL);
  set_state (self, STATE_ACCEPTED);
  gpushare_test_point ("src", "accept");
  GST_INFO_OBJECT (self, "transport: %s (%s)",
      gpushare_mem_type_to_string (self->mem_type), self->mem_reason);
}

static void
post_transport (GstGpuShareSrc * self, GpuShareMemType type,
    const gchar * reason)
{
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("gpushare-transport",
              "memory-type", G_TYPE_STRING,
              gpushare_mem_type_to_string (type),
              "reason", G_TYPE_STRING, reason, NULL)));
}

/* the fds a SLOTS message came with (the codec checked the count) */
static guint
slots_n_fds (const GpuShareSlots * s)
{
  return (s->mem_type == GPUSHARE_MEM_CUDA_LEGACY
      || s->mem_type == GPUSHARE_MEM_CUDA_FABRIC ? 0 : s->n_slots) +
      s->n_sync_fds;
}

/* lock held: import a CUDA ring; takes every fd */
static gboolean
map_cuda_slots (GstGpuShareSrc * self, const GpuShareSlots * s, gint * fds)
{
#ifdef HAVE_CUDA
  GError *error = NULL;
  GpuShareCudaView *view;
  CudaView *v;
  gint device;

  GST_OBJECT_LOCK (self);
  device = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);
  /* the primary context, as the producer's ring: see ensure_cuda_ring () */
  view = gpushare_cuda_view_new (device, NULL, s, fds, &error);
  if (!view) {
    gpushare_conn_send_error (self->session->conn, GPUSHARE_ERR_RESOURCE,
        "the consumer could not map the GPU slots");
    fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
        "Could not map the producer's GPU slots", error->message);
    g_clear_error (&error);
    return FALSE;
  }
  v = g_new0 (CudaView, 1);
  v->ref_count = 1;
  v->view = view;
  v->epoch = s->epoch;
  v->session = session_ref (self->session);
  g_clear_pointer (&self->cuda, cuda_view_unref);
  self->cuda = v;
  g_clear_pointer (&self->import, gpushare_import_unref);
  return TRUE;
#else
  gpushare_close_fds (fds, slots_n_fds (s));
  producer_error (self, "GPU slots sent to a consumer built without CUDA");
  return FALSE;
#endif
}

static void
handle_slots (GstGpuShareSrc * self, const GpuShareSlots * s, gint * fds)
{
  GpuShareImport *import;
  GpuShareMsg msg = { 0, };
  GError *error = NULL;
  const GpuShareBackend *backend;
  guint64 last_seq;
  gboolean have_seq;

  if ((self->state != STATE_ACCEPTED && self->state != STATE_REMAP
          && (self->state != STATE_DONE || s->epoch == self->mapped_epoch))
      || s->epoch != self->pending.epoch
      || s->n_slots != self->pending.n_slots
      || (s->mem_type == GPUSHARE_MEM_SYSTEM
          && s->slot_size != self->pending.slot_size)
      || s->slot_size < self->pending.frame_size
      || s->mem_type != (guint32) self->mem_type
      || s->sync_mode != (guint32) self->sync_mode) {
    gpushare_close_fds (fds, slots_n_fds (s));
    producer_error (self, "SLOTS do not match the announced ring");
    return;
  }
  if (s->mem_type != GPUSHARE_MEM_SYSTEM) {
    if (!map_cuda_slots (self, s, fds))
      return;
    goto mapped;
  }
  backend = gpushare_backend_get (s->mem_type);
  import = gpushare_import_new (backend, s->epoch, s->n_slots, s->slot_size,
      fds, &error);
  if (!import) {
    gchar *debug = self->producer_minor < 3 ? g_strdup_printf ("%s; the "
        "producer speaks protocol %u.%u, whose slots are not sealed against "
        "consumers' writes: it must be upgraded", error->message,
        GPUSHARE_VERSION_MAJOR, self->producer_minor) :
        g_strdup (error->message);

    gpushare_conn_send_error (self->session->conn, GPUSHARE_ERR_RESOURCE,
        "the consumer could not map the slots");
    fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
        "Could not map the producer's slots", debug);
    g_free (debug);
    g_clear_error (&error);
    return;
  }
  g_clear_pointer (&self->import, gpushare_import_unref);
  self->import = import;

mapped:
  self->mapped_epoch = s->epoch;
  self->mapped_n_slots = s->n_slots;
  self->mapped_slot_size = s->slot_size;
  g_mutex_lock (&self->session->lock);
  /* sequence continuity spans epochs */
  last_seq = self->session->view.last_sequence;
  have_seq = self->session->view.have_sequence;
  gpushare_slot_view_init (&self->session->view, s->n_slots, s->epoch);
  self->session->view.last_sequence = last_seq;
  self->session->view.have_sequence = have_seq;
  g_mutex_unlock (&self->session->lock);

  gpushare_test_point ("src", "map");
  msg.type = GPUSHARE_MSG_MAPPED;
  msg.u.mapped.epoch = s->epoch;
  gpushare_conn_send (self->session->conn, &msg, NULL, 0, NULL);
  if (self->state == STATE_ACCEPTED) {
    g_mutex_unlock (&self->lock);
    post_transport (self, self->mem_type, self->mem_reason);
    g_mutex_lock (&self->lock);
  }
  /* after the end of the stream a new ring is only followed */
  if (self->state != STATE_DONE)
    set_state (self, STATE_READY);
  gpushare_test_point ("src", "ready");
}

static void
handle_caps (GstGpuShareSrc * self, const GpuShareCaps * c)
{
  if (self->state != STATE_READY && self->state != STATE_ACCEPTED
      && self->state != STATE_REMAP && self->state != STATE_DONE) {
    producer_error (self, "CAPS out of order");
    return;
  }
  if (c->layout.epoch < self->pending.epoch) {
    producer_error (self, "CAPS for an old ring");
    return;
  }
  /* a layout for the ring mapped now must fit it: a ring of another
   * shape comes with a new epoch, and its SLOTS */
  if (self->mapped_epoch && c->layout.epoch == self->mapped_epoch) {
    gchar *debug = NULL;

    if (c->layout.n_slots != self->mapped_n_slots)
      debug = g_strdup_printf ("CAPS keeps epoch %" G_GUINT64_FORMAT
          " but changes n-slots from %u to %u", c->layout.epoch,
          self->mapped_n_slots, c->layout.n_slots);
    else if (self->mem_type == GPUSHARE_MEM_SYSTEM
        && c->layout.slot_size != self->mapped_slot_size)
      debug = g_strdup_printf ("CAPS keeps epoch %" G_GUINT64_FORMAT
          " but changes slot-size from %" G_GUINT64_FORMAT " to %"
          G_GUINT64_FORMAT, c->layout.epoch, self->mapped_slot_size,
          c->layout.slot_size);
    else if (c->layout.frame_size > self->mapped_slot_size)
      debug = g_strdup_printf ("CAPS keeps epoch %" G_GUINT64_FORMAT
          " but its frame-size %" G_GUINT64_FORMAT " exceeds the mapped "
          "slots of %" G_GUINT64_FORMAT " bytes", c->layout.epoch,
          c->layout.frame_size, self->mapped_slot_size);
    if (debug) {
      producer_error (self, debug);
      g_free (debug);
      return;
    }
  }
  if (self->state == STATE_DONE) {
    GstCaps *caps = checked_caps (self, &c->layout);

    /* the stream ended here, nothing more goes downstream; the ring is
     * followed all the same, so that the frames of a producer that goes
     * on come back unread (handle_frame_after_eos ()) */
    if (caps)
      self->pending = c->layout;
    gst_clear_caps (&caps);
    return;
  }
  if (!queue_caps (self, &c->layout))
    return;
  if (c->layout.epoch != self->pending.epoch && self->state == STATE_READY)
    set_state (self, STATE_REMAP);
  self->pending = c->layout;
}

/* session lock held: the slot of frame f goes back to the producer, once,
 * while the session lasts and f's ring is the one mapped (the producer
 * ignores releases of replaced rings anyway) */
static void
send_release (Session * s, const GpuShareFrame * f)
{
  GpuShareMsg msg = { 0, };

  if (!s->conn || s->view.epoch != f->epoch
      || gpushare_slot_view_release (&s->view, f->slot,
          f->generation) != GPUSHARE_RING_OK)
    return;
  msg.type = GPUSHARE_MSG_RELEASE;
  msg.u.release.epoch = f->epoch;
  msg.u.release.slot = f->slot;
  msg.u.release.generation = f->generation;
  msg.u.release.sequence = f->sequence;
  gpushare_conn_send (s->conn, &msg, NULL, 0, NULL);
}

/* lock held.  The stream ended here (EOS went downstream), but the
 * producer goes on, after a flush on its side: its frames are not read,
 * and their slots go back at once so that the producer is not kept
 * waiting for them.  A frame that does not fit the ring is ignored: there
 * is no stream left to fail. */
static void
handle_frame_after_eos (GstGpuShareSrc * self, const GpuShareFrame * f)
{
  Session *s = self->session;
  GpuShareRingResult res;

  g_mutex_lock (&s->lock);
  res = gpushare_slot_view_frame (&s->view, f->epoch, f->slot,
      f->generation, f->sequence);
#ifdef HAVE_CUDA
  /* a GPU slot is done only once its done signal is written */
  if (res == GPUSHARE_RING_OK && self->cuda)
    gpushare_cuda_view_skip (self->cuda->view, f->slot, f->sequence, NULL);
#endif
  if (res == GPUSHARE_RING_OK)
    send_release (s, f);
  g_mutex_unlock (&s->lock);
  GST_DEBUG_OBJECT (self, "frame %" G_GUINT64_FORMAT " after the end of the "
      "stream: %s", f->sequence, res == GPUSHARE_RING_OK ? "given back unread"
      : gpushare_ring_result_to_string (res));
}

static void
handle_frame (GstGpuShareSrc * self, const GpuShareFrame * f)
{
  GpuShareRingResult res;
  Item *item;

  if (self->state == STATE_DONE) {
    handle_frame_after_eos (self, f);
    return;
  }
  if (self->state != STATE_READY) {
    producer_error (self, "FRAME before the slots were mapped");
    return;
  }
  g_mutex_lock (&self->session->lock);
  res = gpushare_slot_view_frame (&self->session->view, f->epoch, f->slot,
      f->generation, f->sequence);
  g_mutex_unlock (&self->session->lock);
  if (res != GPUSHARE_RING_OK) {
    gchar *debug = g_strdup_printf ("FRAME rejected: %s",
        gpushare_ring_result_to_string (res));

    producer_error (self, debug);
    g_free (debug);
    return;
  }
  item = g_new0 (Item, 1);
  item->type = ITEM_FRAME;
  item->frame = *f;
  item->session = session_ref (self->session);
  if (self->cuda)
    item->cuda = cuda_view_ref (self->cuda);
  else
    item->import = gpushare_import_ref (self->import);
  g_queue_push_tail (&self->items, item);
  self->frames_received++;
  g_cond_broadcast (&self->cond);
}

static void producer_lost (GstGpuShareSrc * self, const gchar * text,
    const gchar * debug);

static void connect_again (GstGpuShareSrc * self);

static void
conn_message (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, gpointer user_data)
{
  GstGpuShareSrc *self = user_data;

  if (msg->type == GPUSHARE_MSG_CAPS || msg->type == GPUSHARE_MSG_ANNOUNCE) {
    const GpuShareCaps *c = &msg->u.caps;
    const GpuShareAnnounce *a = &msg->u.announce;

    if (msg->type == GPUSHARE_MSG_CAPS)
      update_latency (self, c->flags, c->latency);
    else
      update_latency (self, a->flags, a->latency);
  }

  g_mutex_lock (&self->lock);
  if (self->state == STATE_FAILED || !self->session
      || self->session->conn != conn) {
    gpushare_close_fds (fds, n_fds);
    g_mutex_unlock (&self->lock);
    return;
  }
  switch (msg->type) {
    case GPUSHARE_MSG_ANNOUNCE:
      handle_announce (self, &msg->u.announce);
      break;
    case GPUSHARE_MSG_SLOTS:
      handle_slots (self, &msg->u.slots, fds);
      fds = NULL;
      break;
    case GPUSHARE_MSG_CAPS:
      handle_caps (self, &msg->u.caps);
      break;
    case GPUSHARE_MSG_FRAME:
      handle_frame (self, &msg->u.frame);
      break;
    case GPUSHARE_MSG_EOS:{
      Item *item = g_new0 (Item, 1);

      item->type = ITEM_EOS;
      g_queue_push_tail (&self->items, item);
      set_state (self, STATE_DONE);
      break;
    }
    case GPUSHARE_MSG_GOODBYE:
      if (self->state == STATE_CONNECTED)
        /* stopping as we connected: as if nobody listened */
        connect_again (self);
      else if (self->state != STATE_DONE)
        producer_lost (self, "The producer stopped before the end of the "
            "stream", NULL);
      break;
    case GPUSHARE_MSG_ERROR:{
      const GpuShareError *e = &msg->u.error;
      gchar *debug = g_strdup_printf ("producer error %s: %s",
          gpushare_error_code_to_string (e->code), e->text);

      if (e->code == GPUSHARE_ERR_NOT_AUTHORIZED)
        fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_AUTHORIZED,
            "The producer refused this consumer", debug);
      else if (e->code == GPUSHARE_ERR_VERSION)
        fail (self, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
            "The producer speaks another protocol version", debug);
      else if (e->code == GPUSHARE_ERR_TOO_MANY_CLIENTS)
        fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_BUSY,
            "The producer has too many consumers", debug);
      else
        fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ,
            "The producer reported an error", debug);
      g_free (debug);
      break;
    }
    default:
      producer_error (self, "message not allowed from a producer");
      break;
  }
  if (fds)
    gpushare_close_fds (fds, n_fds);
  g_mutex_unlock (&self->lock);
}

/* lock held.  Ends the session: every frame still queued from it goes
 * back to the producer, then our mappings go (buffers already pushed keep
 * theirs), then a GOODBYE, and the connection is closed.  Whatever the
 * reason (our stop, a producer lost and connected to again), buffers that
 * still wrap slots in place read them after we left: the GOODBYE says so
 * (HELD, up to the last frame we received), and the producer never writes
 * those slots again.  Those freed from then on send no RELEASE, so what the
 * producer holds for us up to that frame is exactly what they read. */
static void
drop_session (GstGpuShareSrc * self, GpuShareErrorCode reason)
{
  Session *old = self->session;
  GpuShareMsg msg = { 0, };
  GpuShareConn *conn = NULL;
  GList *l;

  self->session = NULL;
  if (old) {
    /* on the same socket, before the GOODBYE */
    g_mutex_lock (&old->lock);
    for (l = self->items.head; l; l = l->next) {
      const Item *item = l->data;

      if (item->type == ITEM_FRAME && item->import)
        send_release (old, &item->frame);
    }
    g_mutex_unlock (&old->lock);
  }
  /* a CUDA mapping closed here still says UNMAPPED on the connection */
  g_queue_clear_full (&self->items, (GDestroyNotify) item_free);
  g_clear_pointer (&self->import, gpushare_import_unref);
  g_clear_pointer (&self->cuda, cuda_view_unref);
  memset (&self->pending, 0, sizeof (self->pending));
  self->mapped_epoch = 0;
  if (!old)
    return;

  msg.type = GPUSHARE_MSG_GOODBYE;
  msg.u.goodbye.reason = reason;
  g_mutex_lock (&old->lock);
  conn = old->conn;
  old->conn = NULL;
  if (old->n_in_place > 0 && old->in_place_epoch == old->view.epoch
      && old->view.have_sequence) {
    msg.u.goodbye.flags = GPUSHARE_GOODBYE_FLAG_HELD;
    msg.u.goodbye.last_sequence = old->view.last_sequence;
    GST_DEBUG_OBJECT (self, "%u buffers still read slots in place",
        old->n_in_place);
  }
  g_mutex_unlock (&old->lock);
  if (conn) {
    if (gpushare_conn_send (conn, &msg, NULL, 0, NULL))
      gpushare_conn_flush (conn, GOODBYE_FLUSH_MS);
    gpushare_conn_close (conn);
    gpushare_conn_unref (conn);
  }
  session_unref (old);
}

static gboolean try_connect (gpointer user_data);

/* lock held: connect again in retry_ms, and back off for the next time */
static void
schedule_connect (GstGpuShareSrc * self)
{
  GSource *retry = g_timeout_source_new (self->retry_ms);

  self->retry_ms = MIN (self->retry_ms * 2, RETRY_MAX_MS);
  g_source_set_callback (retry, try_connect, self, NULL);
  g_source_attach (retry, self->context);
  g_source_unref (retry);
}

/* lock held, control thread.  The producer hung up or said GOODBYE before
 * its ANNOUNCE: as when nobody listens, try again until the deadline. */
static void
connect_again (GstGpuShareSrc * self)
{
  if (self->deadline && g_get_monotonic_time () >= self->deadline) {
    fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
        "No producer appeared before the connection timeout",
        "the producer hung up before its announce");
    return;
  }
  GST_DEBUG_OBJECT (self, "hung up on before its announce: connecting again");
  drop_session (self, GPUSHARE_ERR_SHUTDOWN);
  set_state (self, STATE_CONNECTING);
  schedule_connect (self);
}

/* lock held, control thread.  The producer went away before the end of
 * the stream: what happens is the producer-lost setting. */
static void
producer_lost (GstGpuShareSrc * self, const gchar * text, const gchar * debug)
{
  GstGpuShareProducerLost what;
  guint timeout;

  GST_OBJECT_LOCK (self);
  what = self->producer_lost;
  timeout = self->connection_timeout;
  GST_OBJECT_UNLOCK (self);

  switch (what) {
    case GST_GPU_SHARE_PRODUCER_LOST_EOS:{
      Item *item = g_new0 (Item, 1);

      GST_WARNING_OBJECT (self, "%s: ending the stream", text);
      item->type = ITEM_EOS;
      g_queue_push_tail (&self->items, item);
      set_state (self, STATE_DONE);
      break;
    }
    case GST_GPU_SHARE_PRODUCER_LOST_RECONNECT:
      GST_WARNING_OBJECT (self, "%s: connecting again", text);
      drop_session (self, GPUSHARE_ERR_SHUTDOWN);
      self->reconnects++;
      self->discont = TRUE;
      self->deadline = timeout ? g_get_monotonic_time () +
          timeout * 1000ll : 0;
      self->retry_ms = RETRY_MIN_MS;
      set_state (self, STATE_CONNECTING);
      schedule_connect (self);
      break;
    default:
      fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ, text, debug);
      break;
  }
}

static void
conn_closed (GpuShareConn * conn, const GError * error, gpointer user_data)
{
  GstGpuShareSrc *self = user_data;

  g_mutex_lock (&self->lock);
  /* after an ERROR from the producer (a refusal) the stream has failed:
   * its hang-up is no loss to recover from */
  if (self->session && self->session->conn == conn
      && self->state != STATE_DONE && self->state != STATE_FAILED) {
    if (error && error->domain == GPUSHARE_CONN_ERROR
        && error->code == GPUSHARE_CONN_ERROR_VERSION) {
      fail (self, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
          "The producer speaks another protocol version", error->message);
    } else if (error && error->domain == GPUSHARE_CONN_ERROR
        && error->code == GPUSHARE_CONN_ERROR_TIMEOUT) {
      /* alive maybe, but hung: as good as gone */
      producer_lost (self, "The producer stopped responding",
          error->message);
    } else if (error && error->domain == GPUSHARE_CONN_ERROR
        && error->code != GPUSHARE_CONN_ERROR_HANGUP
        && error->code != GPUSHARE_CONN_ERROR_IO) {
      fail (self, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
          "The producer sent an invalid message", error->message);
    } else if (self->state == STATE_CONNECTED && (self->deadline == 0
            || g_get_monotonic_time () < self->deadline)) {
      /* hung up before it said a word: a producer on its way out (its
       * listening socket can outlive its connections for a moment, and
       * took our connection into its backlog), or one not ready for us */
      connect_again (self);
    } else {
      producer_lost (self, "The producer went away",
          error ? error->message : NULL);
    }
  }
  g_mutex_unlock (&self->lock);
}

/* Is the process at the other end of fd a producer this consumer may
 * take frames from: our own uid, root, or allowed-producer-uids?  Checked
 * before a byte is read from it: whoever binds the socket path first (in a
 * directory others may write to) would otherwise feed this pipeline. */
static gboolean
producer_trusted (GstGpuShareSrc * self, gint fd, gchar ** debug)
{
  pid_t pid;
  uid_t uid;
  gboolean ok;

  if (!gpushare_socket_get_peer (fd, &pid, &uid, NULL)) {
    *debug = g_strdup_printf ("the producer's credentials cannot be read: %s",
        g_strerror (errno));
    return FALSE;
  }
  if (uid == getuid () || uid == 0)
    return TRUE;
  GST_OBJECT_LOCK (self);
  ok = gpushare_ids_contain (self->allowed_producer_uids, uid);
  GST_OBJECT_UNLOCK (self);
  if (!ok)
    *debug = g_strdup_printf ("the process listening at the socket path "
        "(pid %d) runs as uid %u; this consumer takes frames only from uid "
        "%u, root or a uid in allowed-producer-uids", (gint) pid,
        (guint) uid, (guint) getuid ());
  return ok;
}

static gboolean
try_connect (gpointer user_data)
{
  GstGpuShareSrc *self = user_data;
  GError *error = NULL;
  gchar *path, *debug = NULL;
  gint fd;
  guint heartbeat;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->socket_path);
  heartbeat = self->heartbeat_interval;
  GST_OBJECT_UNLOCK (self);

  fd = gpushare_connect_path (path, &error);
  g_mutex_lock (&self->lock);
  if (self->state != STATE_CONNECTING) {
    if (fd >= 0)
      close (fd);
    goto done;
  }
  if (fd >= 0 && !producer_trusted (self, fd, &debug)) {
    close (fd);
    fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_AUTHORIZED,
        "The process at the socket path is not a producer this consumer "
        "trusts", debug);
    goto done;
  }
  if (fd >= 0) {
    Session *s = g_new0 (Session, 1);

    s->ref_count = 1;
    g_mutex_init (&s->lock);
    s->conn = gpushare_conn_new (fd, self->context, conn_message,
        conn_closed, self);
    gpushare_conn_set_heartbeat (s->conn, heartbeat);
    self->session = s;
    set_state (self, STATE_CONNECTED);
    gpushare_conn_start (s->conn);
    GST_DEBUG_OBJECT (self, "connected");
    goto done;
  }
  /* nobody listens yet: retry with back-off until the deadline */
  if (error->code == GPUSHARE_CONN_ERROR_HANGUP
      && (self->deadline == 0 || g_get_monotonic_time () < self->deadline)) {
    schedule_connect (self);
    goto done;
  }
  fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
      error->code == GPUSHARE_CONN_ERROR_HANGUP ?
      "No producer appeared before the connection timeout" :
      "Could not connect to the producer", error->message);

done:
  g_mutex_unlock (&self->lock);
  g_clear_error (&error);
  g_free (debug);
  g_free (path);
  return G_SOURCE_REMOVE;
}

static gpointer
control_thread (gpointer user_data)
{
  GstGpuShareSrc *self = user_data;

  g_main_context_push_thread_default (self->context);
  g_main_loop_run (self->loop);
  g_main_context_pop_thread_default (self->context);
  return NULL;
}

/* lock held: can this consumer take GPU memory, and if not why */
static void
probe_gpu (GstGpuShareSrc * self)
{
#ifdef HAVE_CUDA
  GError *error = NULL;
  gint device;

  GST_OBJECT_LOCK (self);
  device = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&self->cuda_reason, g_free);
  self->cuda_ok = gpushare_cuda_probe (device, &self->cuda_caps, &error);
  if (!self->cuda_ok) {
    self->cuda_reason = g_strdup_printf ("no usable GPU here: %s",
        error->message);
    g_clear_error (&error);
  } else if (!(self->cuda_caps.vmm && self->cuda_caps.posix_fd)) {
    self->cuda_ok = FALSE;
    self->cuda_reason = g_strdup ("this GPU cannot import VMM memory from "
        "file descriptors");
  } else if (!self->gst_cuda_ctx && gpushare_gst_cuda_load (NULL)) {
    /* unlocked: the context query goes to our neighbours */
    g_mutex_unlock (&self->lock);
    gpushare_gst_cuda_ensure_element_context (GST_ELEMENT (self), device,
        &self->gst_cuda_ctx);
    g_mutex_lock (&self->lock);
  }
#else
  g_free (self->cuda_reason);
  self->cuda_ok = FALSE;
  self->cuda_reason = g_strdup ("built without CUDA");
#endif
}

static gboolean
gst_gpu_share_src_start (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);
  guint timeout;
  GSource *source;

  GST_OBJECT_LOCK (self);
  timeout = self->connection_timeout;
  if (!self->socket_path) {
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("No socket path set"),
        ("set the socket-path property"));
    return FALSE;
  }
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&self->lock);
  self->deadline = timeout ? g_get_monotonic_time () + timeout * 1000ll : 0;
  self->retry_ms = RETRY_MIN_MS;
  self->flushing = FALSE;
  self->frames_received = 0;
  self->frames_copied = 0;
  self->reconnects = 0;
  self->discont = FALSE;
  self->latency = GST_CLOCK_TIME_NONE;
  self->producer_live = FALSE;
  self->mem_type = 0;
  self->sync_mode = 0;
  g_clear_pointer (&self->mem_reason, g_free);
  memset (&self->pending, 0, sizeof (self->pending));
  self->mapped_epoch = 0;
  probe_gpu (self);
  set_state (self, STATE_CONNECTING);
  g_mutex_unlock (&self->lock);
  self->have_first_abs = FALSE;
  gst_video_info_init (&self->vinfo);

  self->context = g_main_context_new ();
  self->loop = g_main_loop_new (self->context, FALSE);
  source = g_idle_source_new ();
  g_source_set_callback (source, try_connect, self, NULL);
  g_source_attach (source, self->context);
  g_source_unref (source);
  self->thread = g_thread_new ("gpusharesrc", control_thread, self);
  return TRUE;
}

static gboolean
gst_gpu_share_src_stop (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);

  if (self->thread) {
    gpushare_control_thread_join (self->context, self->loop, self->thread);
    self->thread = NULL;
  }

  g_mutex_lock (&self->lock);
  drop_session (self, GPUSHARE_ERR_SHUTDOWN);
  set_state (self, STATE_IDLE);
  g_clear_pointer (&self->error_text, g_free);
  g_clear_pointer (&self->error_debug, g_free);
  g_mutex_unlock (&self->lock);

  g_clear_pointer (&self->loop, g_main_loop_unref);
  g_clear_pointer (&self->context, g_main_context_unref);
  GST_OBJECT_LOCK (self);
  gst_clear_caps (&self->caps);
  gst_clear_caps (&self->in_caps);
  GST_OBJECT_UNLOCK (self);
  if (self->out_pool) {
    gst_buffer_pool_set_active (self->out_pool, FALSE);
    gst_clear_object (&self->out_pool);
  }
  self->out_gpu = FALSE;
#ifdef HAVE_CUDA
  gst_clear_object (&self->gst_cuda_ctx);
#endif
  return TRUE;
}

static void
slot_ref_free (gpointer data)
{
  SlotRef *ref = data;
  Session *s = ref->session;
  GpuShareFrame f = { 0, };

  f.epoch = ref->epoch;
  f.slot = ref->slot;
  f.generation = ref->generation;
  f.sequence = ref->sequence;
  g_mutex_lock (&s->lock);
  send_release (s, &f);
  if (ref->in_place && ref->epoch == s->in_place_epoch)
    s->n_in_place--;
  g_mutex_unlock (&s->lock);
  if (ref->import)
    gpushare_import_unref (ref->import);
  session_unref (s);
  g_free (ref);
}

static guint64
abs_to_running (GstGpuShareSrc * self, guint64 abs)
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
    /* not live here: keep the producer's spacing, starting from 0 */
    if (clock)
      gst_object_unref (clock);
    if (!self->have_first_abs) {
      self->first_abs = abs;
      self->have_first_abs = TRUE;
    }
    return abs >= self->first_abs ? abs - self->first_abs : 0;
  }
  base = gst_element_get_base_time (GST_ELEMENT (self));
  clock_now = gst_clock_get_time (clock);
  gst_object_unref (clock);
  clock_gettime (CLOCK_MONOTONIC, &ts);
  mono_now = GST_TIMESPEC_TO_TIME (ts);
  /* monotonic -> this pipeline's clock -> running time */
  rt = (gint64) abs + ((gint64) clock_now - (gint64) mono_now) -
      (gint64) base;
  return rt > 0 ? (guint64) rt : 0;
}

static void set_frame_fields (GstGpuShareSrc * self, GstBuffer * buf,
    const GpuShareFrame * f);

static GstBuffer *
make_buffer (GstGpuShareSrc * self, Item * item)
{
  const GpuShareFrame *f = &item->frame;
  GstVideoInfo *vi = &self->vinfo;
  SlotRef *ref = g_new0 (SlotRef, 1);
  GstBuffer *buf;
  guint max;

  GST_OBJECT_LOCK (self);
  max = self->max_in_place;
  GST_OBJECT_UNLOCK (self);
  /* half the ring: the producer always finds a slot for the next frames
   * while downstream keeps the other half */
  if (max == 0)
    max = MAX (1, item->import->n_slots / 2);

  ref->session = session_ref (item->session);
  ref->import = gpushare_import_ref (item->import);
  ref->epoch = f->epoch;
  ref->slot = f->slot;
  ref->generation = f->generation;
  ref->sequence = f->sequence;
  /* slot_ref_free () runs in any thread, under the session's lock */
  g_mutex_lock (&ref->session->lock);
  /* frames come in order: a newer epoch starts a new count */
  if (f->epoch != ref->session->in_place_epoch) {
    ref->session->in_place_epoch = f->epoch;
    ref->session->n_in_place = 0;
  }
  ref->in_place = ref->session->n_in_place < max;
  if (ref->in_place)
    ref->session->n_in_place++;
  g_mutex_unlock (&ref->session->lock);

  if (ref->in_place) {
    /* read-only: a writer downstream gets a copy, never our slot */
    buf = gst_buffer_new ();
    gst_buffer_append_memory (buf,
        gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY,
            (gpointer) item->import->data[f->slot], item->import->slot_size,
            0, self->layout.frame_size, ref, slot_ref_free));
  } else {
    /* downstream holds max of our buffers already: a sink that batches
     * its writes (filesink keeps 64 KiB), a queue.  Held in place they
     * would starve the producer until the lease dropped us, so, as
     * v4l2src copies out of its pool when downstream holds too many of
     * its buffers, this frame is copied and its slot goes back at once.
     * The same bytes and the same video meta: downstream sees the same
     * layout either way */
    buf = gst_buffer_new_memdup (item->import->data[f->slot],
        self->layout.frame_size);
    slot_ref_free (ref);
    g_mutex_lock (&self->lock);
    self->frames_copied++;
    g_mutex_unlock (&self->lock);
    GST_LOG_OBJECT (self, "%u buffers held in place: frame %" G_GUINT64_FORMAT
        " copied", max, f->sequence);
  }
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (vi), GST_VIDEO_INFO_WIDTH (vi),
      GST_VIDEO_INFO_HEIGHT (vi), GST_VIDEO_INFO_N_PLANES (vi), vi->offset,
      vi->stride);
  set_frame_fields (self, buf, f);
  return buf;
}

/* timestamps, offsets and flags of a FRAME onto buf */
static void
set_frame_fields (GstGpuShareSrc * self, GstBuffer * buf,
    const GpuShareFrame * f)
{
  if (f->flags & GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME) {
    guint64 pts = abs_to_running (self, f->pts);

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
  if (self->discont) {
    /* the first frame of a new producer */
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  }
  GST_MINI_OBJECT_FLAGS (buf) |= f->buffer_flags & 0xffff &
      ~(GST_MINI_OBJECT_FLAG_LOCKABLE | GST_MINI_OBJECT_FLAG_LOCK_READONLY |
      GST_MINI_OBJECT_FLAG_MAY_BE_LEAKED);
}

#ifdef HAVE_CUDA
/* One copy out of the GPU slot, on the device into a buffer of a CUDA pool
 * or downloaded into system memory; the slot goes back to the producer as
 * soon as the copy is done. */
static GstFlowReturn
make_gpu_buffer (GstGpuShareSrc * self, Item * item, GstBuffer ** outbuf)
{
  const GpuShareFrame *f = &item->frame;
  GstVideoInfo *vi = &self->vinfo;
  GstVideoInfo tight;
  SlotRef *ref = g_new0 (SlotRef, 1);
  GpuSharePlanes src, dst;
  GstVideoFrame frame;
  GstBuffer *buf = NULL;
  GError *error = NULL;
  gboolean ok;
  guint i;

  ref->session = session_ref (item->session);
  ref->epoch = f->epoch;
  ref->slot = f->slot;
  ref->generation = f->generation;
  ref->sequence = f->sequence;

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
  if (!buf || !gst_video_frame_map (&frame, vi, buf, GST_MAP_WRITE |
          (self->out_gpu ? GPUSHARE_MAP_CUDA : 0))) {
    /* the producer gets its slot back all the same */
    gpushare_cuda_view_skip (item->cuda->view, f->slot, f->sequence, NULL);
    slot_ref_free (ref);
    gst_clear_buffer (&buf);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Could not get an output buffer"), (NULL));
    return GST_FLOW_ERROR;
  }
  memset (&src, 0, sizeof (src));
  memset (&dst, 0, sizeof (dst));
  src.device = TRUE;
  dst.device = self->out_gpu;
  for (i = 0; i < GST_VIDEO_INFO_N_PLANES (vi); i++) {
    src.offset[i] = self->layout.offsets[i];
    src.stride[i] = self->layout.strides[i];
    dst.offset[i] = (gsize) GST_VIDEO_FRAME_PLANE_DATA (&frame, i);
    dst.stride[i] = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i);
  }
  ok = gpushare_cuda_view_read (item->cuda->view, f->slot, f->sequence, vi,
      &src, &dst, &error);
  gst_video_frame_unmap (&frame);
  slot_ref_free (ref);
  if (!ok) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not copy a frame out of GPU memory"), ("%s", error->message));
    g_clear_error (&error);
    return GST_FLOW_ERROR;
  }
  set_frame_fields (self, buf, f);
  *outbuf = buf;
  return GST_FLOW_OK;
}

/* TRUE when downstream names CUDA memory in its caps.  Downstream that
 * takes anything (filesink, fakesink, an appsink without caps) gets system
 * memory, as from nvh264dec: it would otherwise receive CUDA memory it can
 * only map through a download with the slot's pitch. */
static gboolean
downstream_names_cuda (GstGpuShareSrc * self)
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
          && gst_caps_features_contains (f, "memory:CUDAMemory");
    }
  }
  gst_caps_unref (peer);
  return named;
}

/* the output caps for the producer's caps: GPU memory when the transport
 * is GPU memory, GStreamer's CUDA library is here and downstream asks for
 * it; system memory otherwise */
static GstCaps *
output_caps (GstGpuShareSrc * self, GstCaps * caps)
{
  GstCaps *gpu;

  self->out_gpu = FALSE;
  if (self->mem_type == GPUSHARE_MEM_SYSTEM || !self->gst_cuda_ctx
      || !downstream_names_cuda (self))
    return gst_caps_ref (caps);
  gpu = gst_caps_copy (caps);
  gst_caps_set_features_simple (gpu,
      gst_caps_features_new ("memory:CUDAMemory", NULL));
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
    pool = gpushare_gst_cuda_buffer_pool_new (self->gst_cuda_ctx);

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
#endif

/* streaming thread.  Picks the output caps for the producer's caps and
 * sets them when they changed, or always when force (a RECONFIGURE). */
static gboolean
set_output_caps (GstGpuShareSrc * self, gboolean force)
{
  GstCaps *out;
  gboolean ok = TRUE;

#ifdef HAVE_CUDA
  out = output_caps (self, self->in_caps);
#else
  out = gst_caps_ref (self->in_caps);
#endif
  if (force || !self->caps || !gst_caps_is_equal (self->caps, out)) {
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
  gchar *why = NULL;
  Item *item;

  g_mutex_lock (&self->lock);
  for (;;) {
    if (self->flushing) {
      g_mutex_unlock (&self->lock);
      return GST_FLOW_FLUSHING;
    }
    item = g_queue_pop_head (&self->items);
    if (!item) {
      if (self->state == STATE_FAILED) {
        GQuark domain = self->error_domain;
        gint code = self->error_code;
        gchar *text = g_strdup (self->error_text);
        gchar *debug = g_strdup (self->error_debug);

        g_mutex_unlock (&self->lock);
        gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR,
            domain, code, text, debug, __FILE__, GST_FUNCTION, __LINE__);
        return GST_FLOW_ERROR;
      }
      g_cond_wait (&self->cond, &self->lock);
      continue;
    }
    if (item->type == ITEM_FRAME)
      break;
    if (item->type == ITEM_EOS) {
      g_mutex_unlock (&self->lock);
      item_free (item);
      GST_DEBUG_OBJECT (self, "end of stream from the producer");
      return GST_FLOW_EOS;
    }
    /* ITEM_CAPS: negotiate at this frame boundary */
    g_mutex_unlock (&self->lock);
    self->layout = *item->layout;
    /* validated when queued: this only fills vinfo */
    gst_caps_unref (layout_to_caps (&self->layout, &self->vinfo, &why));
    GST_OBJECT_LOCK (self);
    gst_caps_replace (&self->in_caps, item->caps);
    GST_OBJECT_UNLOCK (self);
    if (!set_output_caps (self, FALSE)) {
      item_free (item);
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Downstream refused the producer's caps"), (NULL));
      return GST_FLOW_NOT_NEGOTIATED;
    }
    item_free (item);
    g_mutex_lock (&self->lock);
  }
  g_mutex_unlock (&self->lock);

  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " from slot %u",
      item->frame.sequence, item->frame.slot);
  /* a crash here leaves the slot of this frame held */
  gpushare_test_point ("src", "frame");
#ifdef HAVE_CUDA
  if (item->cuda) {
    GstFlowReturn ret = make_gpu_buffer (self, item, outbuf);

    item_free (item);
    return ret;
  }
#endif
  *outbuf = make_buffer (self, item);
  item_free (item);
  return GST_FLOW_OK;
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
  return set_output_caps (self, TRUE);
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
#ifdef HAVE_CUDA
    if (self->mem_type != GPUSHARE_MEM_SYSTEM && self->gst_cuda_ctx) {
      GstCaps *gpu = gst_caps_copy (self->in_caps);

      gst_caps_set_features_simple (gpu,
          gst_caps_features_new ("memory:CUDAMemory", NULL));
      caps = gst_caps_merge (caps, gpu);
    }
#endif
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

static void
gst_gpu_share_src_set_context (GstElement * element, GstContext * context)
{
#ifdef HAVE_CUDA
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (element);

  if (gpushare_gst_cuda_load (NULL))
    gpushare_gst_cuda_handle_set_context (element, context,
        self->cuda_device_id, &self->gst_cuda_ctx);
#endif
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static gboolean
gst_gpu_share_src_query (GstBaseSrc * bsrc, GstQuery * query)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);

#ifdef HAVE_CUDA
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT && self->gst_cuda_ctx
      && gpushare_gst_cuda_handle_context_query (GST_ELEMENT (self), query,
          self->gst_cuda_ctx))
    return TRUE;
#endif

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    GstClockTime min = 0;
    GstClockTime duration;

    g_mutex_lock (&self->lock);
    if (GST_CLOCK_TIME_IS_VALID (self->latency))
      min = self->latency;
    g_mutex_unlock (&self->lock);
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

  g_mutex_lock (&self->lock);
  self->flushing = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_gpu_share_src_unlock_stop (GstBaseSrc * bsrc)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (bsrc);

  g_mutex_lock (&self->lock);
  self->flushing = FALSE;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static GstStructure *
make_stats (GstGpuShareSrc * self)
{
  GstStructure *s;

  g_mutex_lock (&self->lock);
  s = gst_structure_new ("application/x-gpushare-src-stats",
      "state", G_TYPE_STRING, state_to_string (self->state),
      "memory-type", G_TYPE_STRING, self->mem_type ?
      gpushare_mem_type_to_string (self->mem_type) : "none",
      "sync-mode", G_TYPE_STRING, self->sync_mode ?
#ifdef HAVE_CUDA
      gpushare_sync_mode_to_string (self->sync_mode) : "none",
#else
      "none" : "none",
#endif
      "output-memory", G_TYPE_STRING, self->out_gpu ? "CUDAMemory" : "system",
      "peer-device", G_TYPE_INT, self->peer_device,
      "memory-reason", G_TYPE_STRING, self->mem_reason ? self->mem_reason :
      "not connected",
      "epoch", G_TYPE_UINT64, self->import ? self->import->epoch : 0,
      "frames-received", G_TYPE_UINT64, self->frames_received,
      "frames-copied", G_TYPE_UINT64, self->frames_copied,
      "reconnects", G_TYPE_UINT, self->reconnects,
      "producer-live", G_TYPE_BOOLEAN, self->producer_live, NULL);
  g_mutex_unlock (&self->lock);
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
    case PROP_HEARTBEAT_INTERVAL:
      self->heartbeat_interval = g_value_get_uint (value);
      break;
    case PROP_ALLOWED_PRODUCER_UIDS:
      gpushare_ids_from_value (&self->allowed_producer_uids, value);
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
    case PROP_HEARTBEAT_INTERVAL:
      g_value_set_uint (value, self->heartbeat_interval);
      break;
    case PROP_ALLOWED_PRODUCER_UIDS:
      gpushare_ids_to_value (self->allowed_producer_uids, value);
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

static void
gst_gpu_share_src_finalize (GObject * object)
{
  GstGpuShareSrc *self = GST_GPU_SHARE_SRC (object);

  g_free (self->socket_path);
  g_free (self->mem_reason);
  g_free (self->cuda_reason);
  g_clear_pointer (&self->allowed_producer_uids, g_array_unref);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
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
      "producer", GST_TYPE_GPU_SHARE_PRODUCER_LOST, DEFAULT_PRODUCER_LOST,
      rw);
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
  properties[PROP_ALLOWED_PRODUCER_UIDS] =
      gst_param_spec_array ("allowed-producer-uids", "Allowed producer uids",
      "Producers of these uids are trusted, beside those of this process's "
      "own uid and root (which always are), e.g. <1000>; a process of any "
      "other uid listening at socket-path is refused before it is read",
      g_param_spec_uint ("uid", "uid", "A uid", 0, G_MAXUINT32, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS), rw);
  properties[PROP_MAX_IN_PLACE] = g_param_spec_uint ("max-in-place",
      "Max in place", "Buffers wrapping the producer's slots that downstream "
      "may hold at once (system memory); past that a frame is copied and its "
      "slot given back at once, so that a sink or queue that keeps buffers "
      "never holds up the producer (0 = half the producer's ring, at least "
      "1)", 0, GPUSHARE_MAX_SLOTS, DEFAULT_MAX_IN_PLACE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING
      | GST_PARAM_DOC_SHOW_DEFAULT);
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Memory type in use and why, frames received and copied",
      GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (gobject_class, N_PROPERTIES, properties);

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "GPU share source",
      "Source/Video", "Receives video frames a gpusharesink shares, in place",
      "gpushare developers");

  element_class->set_context =
      GST_DEBUG_FUNCPTR (gst_gpu_share_src_set_context);
  bsrc_class->start = GST_DEBUG_FUNCPTR (gst_gpu_share_src_start);
  bsrc_class->stop = GST_DEBUG_FUNCPTR (gst_gpu_share_src_stop);
  bsrc_class->negotiate = GST_DEBUG_FUNCPTR (gst_gpu_share_src_negotiate);
  bsrc_class->get_caps = GST_DEBUG_FUNCPTR (gst_gpu_share_src_get_caps);
  bsrc_class->query = GST_DEBUG_FUNCPTR (gst_gpu_share_src_query);
  bsrc_class->unlock = GST_DEBUG_FUNCPTR (gst_gpu_share_src_unlock);
  bsrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_gpu_share_src_unlock_stop);
  psrc_class->create = GST_DEBUG_FUNCPTR (gst_gpu_share_src_create);

  /* producers' caps may carry a multiview flag set: its type must be known
   * before gst_caps_from_string () meets it */
  g_type_ensure (GST_TYPE_VIDEO_MULTIVIEW_FLAGSET);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_TRANSPORT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_PRODUCER_LOST, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_SYNC, 0);

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
  self->peer_device = -1;
  self->heartbeat_interval = DEFAULT_HEARTBEAT_INTERVAL;
  self->max_in_place = DEFAULT_MAX_IN_PLACE;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->items);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
  gst_base_src_set_live (GST_BASE_SRC (self), DEFAULT_IS_LIVE);
}
