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
 * lossless otherwise.
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

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib-unix.h>
#include <gst/video/video.h>

#include "gpusharebackend.h"
#include "gpushareconn.h"
#include "gpushareids.h"
#include "gpushareproto.h"
#include "gpusharering.h"
#include "gpushareretain.h"
#include "gpusharetest.h"
#include "gpusharevideo.h"
#ifdef HAVE_CUDA
#include "gpusharecudaxfer.h"
#include "gpusharegstcuda.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gst_gpu_share_sink_debug);
#define GST_CAT_DEFAULT gst_gpu_share_sink_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_WAIT_FOR_CONNECTION FALSE
#define DEFAULT_RING_SIZE 8
#define DEFAULT_POLICY GST_GPU_SHARE_POLICY_AUTO
#define DEFAULT_SOCKET_MODE 0600
#define DEFAULT_MAX_CLIENTS 16
#define DEFAULT_CUDA_DEVICE_ID 0
#define DEFAULT_HANDSHAKE_TIMEOUT 5000  /* ms */
#define DEFAULT_MAX_PENDING 8
#define DEFAULT_HEARTBEAT_INTERVAL 1000 /* ms */
#define DEFAULT_LEASE_TIMEOUT 5000      /* ms */
/* how often handshake deadlines are looked at */
#define HOUSEKEEPING_MS 50
#define MAX_CLIENTS GPUSHARE_MAX_HOLDERS
/* legacy IPC rings of earlier epochs kept for consumers' processes that
 * may still have them open; past this, no new legacy ring is made */
#define MAX_RETIRED_LEGACY 4
/* a goodbye is best effort: never hold a stopping pipeline for long */
#define GOODBYE_FLUSH_MS 100
#define HANGUP_GRACE_MS 100

enum
{
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_WAIT_FOR_CONNECTION,
  PROP_RING_SIZE,
  PROP_POLICY,
  PROP_SOCKET_MODE,
  PROP_MAX_CLIENTS,
  PROP_HANDSHAKE_TIMEOUT,
  PROP_LEASE_TIMEOUT,
  PROP_MAX_PENDING,
  PROP_HEARTBEAT_INTERVAL,
  PROP_ALLOWED_UIDS,
  PROP_ALLOWED_GIDS,
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

typedef enum
{
  CLIENT_CONNECTED,             /* waiting for caps to announce */
  CLIENT_ANNOUNCED,             /* waiting for ACCEPT */
  CLIENT_EXPORTED,              /* SLOTS sent, waiting for MAPPED */
  CLIENT_READY,                 /* receives frames */
} ClientState;

typedef struct
{
  GstGpuShareSink *sink;
  guint id;                     /* opaque, for logs and signals */
  guint index;                  /* holder bit in the ring */
  ClientState state;
  GpuShareConn *conn;
  pid_t pid;
  gint pidfd;                   /* its process, from the connect on; -1 */
  uid_t uid;
  gchar *name;
  GpuShareMemType mem_type;
  GpuShareSyncMode sync_mode;   /* GPU memory only */
  gchar *mem_reason;
  gboolean connected_emitted;
  gint64 deadline;              /* monotonic us: its next step is due; 0 */
  guint64 mapped_epoch;
  guint64 frames_sent;
  guint64 frames_released;
  guint64 frames_dropped;
  /* its GOODBYE said buffers in its process still read the slots it holds
   * of frames up to held_upto (GPUSHARE_GOODBYE_FLAG_HELD) */
  gboolean goodbye_held;
  guint64 held_upto;
} Client;

typedef struct
{
  GpuShareAllocation *alloc;
  guint slot;
  guint32 generation;
} SlotTag;

struct _GstGpuShareSink
{
  GstBaseSink parent;

  /* properties, under the object lock */
  gchar *socket_path;
  gboolean wait_for_connection;
  guint ring_size;
  GstGpuShareSlowPolicy policy;
  guint socket_mode;
  guint max_clients;
  guint handshake_timeout;      /* ms, 0: none */
  guint lease_timeout;          /* ms, 0: none */
  guint max_pending;            /* consumers not streaming yet, at most */
  guint heartbeat_interval;     /* ms, 0: none */
  GArray *allowed_uids;         /* guint; our own uid is always allowed */
  GArray *allowed_gids;         /* guint: a peer's primary gid */
  gint cuda_device_id;

  /* control thread */
  GMainContext *context;
  GMainLoop *loop;
  GThread *thread;
  GSource *listen_source;
  GSource *housekeeping;
  gint listen_fd;
  gchar *bound_path;

  /* streaming state: everything below under lock */
  GMutex lock;
  GCond cond;
  gboolean flushing;
  Client *clients[MAX_CLIENTS];
  guint n_clients;
  guint next_client_id;
  guint64 instance;
  guint64 epoch;
  guint64 sequence;
  GpuShareRing ring;
  GpuShareAllocation *alloc;
  GstVideoInfo vinfo;
  gboolean have_layout;
  GpuShareLayout layout;
  gboolean live_known;
  gboolean live;
  gboolean eos;
  guint64 latency;
  guint64 frames_rendered;
  guint64 frames_dropped;
  guint64 frames_in_place;      /* upstream wrote into a slot: no copy */
  guint64 frames_copied;
  guint64 frames_to_gpu;        /* written into a CUDA slot */
  gint64 sent_at[GPUSHARE_MAX_SLOTS];   /* when the slot's frame went out */
  gint64 waiting_since;         /* since when a thread waits for a slot */
  guint n_waiting;              /* threads waiting for a slot */
  guint64 slots_quarantined;
  guint64 rings_replaced;

  /* the GPU, probed at start; the CUDA ring, made for the first consumer
   * that takes GPU memory, under lock */
  gboolean cuda_ok;
  gchar *cuda_reason;           /* why there is no GPU memory to offer */
#ifdef HAVE_CUDA
  GpuShareCudaCaps cuda_caps;
  GstObject *gst_cuda_ctx;      /* GstCudaContext shared with neighbours */
  /* one ring per kind of GPU memory consumers chose: VMM, legacy, fabric */
  GpuShareCudaRing *cuda_rings[3];
  /* the processes the legacy IPC ring of this epoch went to, and the
   * legacy rings of earlier epochs: the driver forbids freeing memory
   * another process may still have open, so each goes once every process
   * it went to said it closed it (UNMAPPED, GOODBYE) or exited */
  GpuShareHolders *legacy_holders;
  GpuShareRetained *retired_legacy;
#endif
};

static GQuark slot_tag_quark;
static GEnumClass *remove_reason_class;

#define gst_gpu_share_sink_parent_class parent_class
G_DEFINE_TYPE (GstGpuShareSink, gst_gpu_share_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (gpusharesink, "gpusharesink", GST_RANK_NONE,
    GST_TYPE_GPU_SHARE_SINK);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
#ifdef HAVE_CUDA
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE_WITH_FEATURES ("memory:CUDAMemory",
            GST_VIDEO_FORMATS_ALL) "; "
        GST_VIDEO_CAPS_MAKE (GST_VIDEO_FORMATS_ALL)));
#else
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (GST_VIDEO_FORMATS_ALL)));
#endif

GType
gst_gpu_share_client_remove_reason_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_REMOVE_GOODBYE, "The consumer said goodbye", "goodbye"},
    {GST_GPU_SHARE_REMOVE_HANGUP, "The consumer's socket closed", "hangup"},
    {GST_GPU_SHARE_REMOVE_PROTOCOL, "Malformed or illegal message",
        "protocol"},
    {GST_GPU_SHARE_REMOVE_VERSION, "Unknown protocol version", "version"},
    {GST_GPU_SHARE_REMOVE_NOT_AUTHORIZED, "Credentials refused",
        "not-authorized"},
    {GST_GPU_SHARE_REMOVE_UNSUPPORTED, "No common memory type",
        "unsupported"},
    {GST_GPU_SHARE_REMOVE_SLOW, "The consumer stopped reading", "slow"},
    {GST_GPU_SHARE_REMOVE_TOO_MANY, "Too many clients", "too-many-clients"},
    {GST_GPU_SHARE_REMOVE_PEER_ERROR, "The consumer reported an error",
        "peer-error"},
    {GST_GPU_SHARE_REMOVE_RESOURCE, "Exporting the slots failed",
        "resource"},
    {GST_GPU_SHARE_REMOVE_SHUTDOWN, "The sink stopped", "shutdown"},
    {GST_GPU_SHARE_REMOVE_TIMEOUT, "The consumer did not finish its "
          "handshake in time, or fell silent", "timeout"},
    {GST_GPU_SHARE_REMOVE_LEASE, "The consumer held a slot longer than "
          "lease-timeout while the producer waited for one", "lease"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareClientRemoveReason", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_share_slow_policy_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_POLICY_AUTO, "Leaky for live upstreams, lossless otherwise",
        "auto"},
    {GST_GPU_SHARE_POLICY_LOSSLESS, "Wait until every consumer released",
        "lossless"},
    {GST_GPU_SHARE_POLICY_LEAKY,
        "A consumer holding its share of slots misses frames", "leaky"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareSlowPolicy", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static const gchar *
client_state_to_string (ClientState state)
{
  switch (state) {
    case CLIENT_CONNECTED:
      return "connected";
    case CLIENT_ANNOUNCED:
      return "announced";
    case CLIENT_EXPORTED:
      return "exported";
    case CLIENT_READY:
      return "ready";
  }
  return "unknown";
}

/* the one place a client's state changes */
static void
client_set_state (Client * client, ClientState state)
{
  GstGpuShareSink *self = client->sink;
  guint timeout;

  GST_DEBUG_OBJECT (self, "client %u: %s -> %s", client->id,
      client_state_to_string (client->state), client_state_to_string (state));
  client->state = state;
  /* waiting for the consumer's ACCEPT or MAPPED: that step has a deadline;
   * waiting for our own caps, or streaming, has none */
  GST_OBJECT_LOCK (self);
  timeout = self->handshake_timeout;
  GST_OBJECT_UNLOCK (self);
  if (timeout && (state == CLIENT_ANNOUNCED || state == CLIENT_EXPORTED))
    client->deadline = g_get_monotonic_time () + (gint64) timeout * 1000;
  else
    client->deadline = 0;
}

static void
client_free (Client * client)
{
  if (client->conn) {
    gpushare_conn_close (client->conn);
    gpushare_conn_unref (client->conn);
  }
  if (client->pidfd >= 0)
    close (client->pidfd);
  g_free (client->name);
  g_free (client->mem_reason);
  g_free (client);
}

/* ------------------------------------------------------------------------ */
/* Sending, under self->lock */

static void
fill_layout (GstGpuShareSink * self, GstCaps * caps)
{
  GpuShareLayout *l = &self->layout;
  GstCaps *plain = gst_caps_copy (caps);
  gchar *str;
  guint i;

  /* the caps describe the picture; which memory it travels in is each
   * consumer's own choice, so the announced caps carry no memory feature */
  gst_caps_set_features (plain, 0, NULL);
  str = gst_caps_to_string (plain);
  gst_caps_unref (plain);
  memset (l, 0, sizeof (*l));
  l->epoch = self->epoch;
  l->frame_size = GST_VIDEO_INFO_SIZE (&self->vinfo);
  l->slot_size = self->alloc->slot_size;
  l->n_slots = self->alloc->n_slots;
  l->n_planes = GST_VIDEO_INFO_N_PLANES (&self->vinfo);
  for (i = 0; i < l->n_planes; i++) {
    l->offsets[i] = GST_VIDEO_INFO_PLANE_OFFSET (&self->vinfo, i);
    l->strides[i] = GST_VIDEO_INFO_PLANE_STRIDE (&self->vinfo, i);
  }
  if (!gpushare_layout_set_caps (l, str))
    GST_WARNING_OBJECT (self, "caps too long for the protocol");
  g_free (str);
  self->have_layout = TRUE;
}

static guint32
stream_flags (GstGpuShareSink * self)
{
  return self->live ? GPUSHARE_STREAM_FLAG_LIVE : 0;
}

#ifdef HAVE_CUDA
static guint32 gpu_mem_types (GstGpuShareSink * self);
#endif

static gboolean
send_announce (GstGpuShareSink * self, Client * client)
{
  GpuShareMsg msg = { 0, };
  GpuShareAnnounce *a = &msg.u.announce;
  const gchar *name = GST_OBJECT_NAME (self);

  msg.type = GPUSHARE_MSG_ANNOUNCE;
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->schema_minor = GPUSHARE_VERSION_MINOR;
  a->mem_types = GPUSHARE_MEM_SYSTEM;
#ifdef HAVE_CUDA
  if (self->cuda_ok) {
    a->mem_types |= gpu_mem_types (self);
    memcpy (a->device.uuid, self->cuda_caps.uuid, 16);
    a->device.caps = (self->cuda_caps.posix_fd ? GPUSHARE_DEVICE_CAP_VMM_FD :
        0) | (self->cuda_caps.fabric ? GPUSHARE_DEVICE_CAP_FABRIC : 0) |
        (self->cuda_caps.ipc_event ? GPUSHARE_DEVICE_CAP_IPC_EVENT : 0) |
        (self->cuda_caps.mem_ops_64 ? GPUSHARE_DEVICE_CAP_MEM_OPS : 0) |
        (self->cuda_caps.unified_addressing ? GPUSHARE_DEVICE_CAP_LEGACY_IPC :
        0) | (self->cuda_caps.mig ? GPUSHARE_DEVICE_CAP_MIG : 0);
    a->device.sync_modes = gpushare_cuda_sync_modes (&self->cuda_caps);
    a->device.compute_mode = self->cuda_caps.compute_mode;
  }
#endif
  a->flags = stream_flags (self);
  a->pid = getpid ();
  a->uid = getuid ();
  a->instance = self->instance;
  a->latency = self->latency;
  a->layout = self->layout;
  a->name_len = MIN (strlen (name), GPUSHARE_MAX_NAME_LEN);
  memcpy (a->name, name, a->name_len);
  if (!gpushare_conn_send (client->conn, &msg, NULL, 0, NULL))
    return FALSE;
  client_set_state (client, CLIENT_ANNOUNCED);
  gpushare_test_point ("sink", "announce");
  return TRUE;
}

static void protocol_error (Client * client, GpuShareErrorCode code,
    const gchar * text);

#ifdef HAVE_CUDA
static guint
gpu_index (GpuShareMemType type)
{
  return type == GPUSHARE_MEM_CUDA_LEGACY ? 1 :
      type == GPUSHARE_MEM_CUDA_FABRIC ? 2 : 0;
}

/* the GPU memory types this GPU can offer */
static guint32
gpu_mem_types (GstGpuShareSink * self)
{
  if (!self->cuda_ok)
    return 0;
  return (self->cuda_caps.posix_fd ? GPUSHARE_MEM_CUDA_VMM : 0) |
      (self->cuda_caps.unified_addressing ? GPUSHARE_MEM_CUDA_LEGACY : 0) |
      (self->cuda_caps.fabric ? GPUSHARE_MEM_CUDA_FABRIC : 0);
}

/* lock held.  The ring of that GPU memory type for the current epoch,
 * made on first use. */
static GpuShareCudaRing *
ensure_cuda_ring (GstGpuShareSink * self, GpuShareMemType type,
    GError ** error)
{
  GpuShareCudaRing **ring = &self->cuda_rings[gpu_index (type)];

  if (*ring && gpushare_cuda_ring_epoch (*ring) == self->epoch)
    return *ring;
  if (*ring && type == GPUSHARE_MEM_CUDA_LEGACY && self->legacy_holders
      && gpushare_holders_reap (self->legacy_holders) > 0) {
    if (!self->retired_legacy)
      self->retired_legacy = gpushare_retained_new (MAX_RETIRED_LEGACY,
          (GDestroyNotify) gpushare_cuda_ring_free);
    if (!gpushare_retained_has_room (self->retired_legacy)) {
      /* freeing one of them could hand its memory to whatever the driver
       * allocates next while a consumer still reads it */
      g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NO_SPACE_LEFT,
          "%u legacy IPC rings of earlier epochs are still open in "
          "consumers' processes", MAX_RETIRED_LEGACY);
      GST_WARNING_OBJECT (self, "no new legacy IPC ring: %u of earlier "
          "epochs are still open in consumers' processes",
          MAX_RETIRED_LEGACY);
      return NULL;
    }
    gpushare_retained_add (self->retired_legacy,
        gpushare_cuda_ring_epoch (*ring), *ring, self->legacy_holders);
    self->legacy_holders = NULL;
    *ring = NULL;
    GST_DEBUG_OBJECT (self, "%u legacy IPC rings of earlier epochs kept",
        gpushare_retained_count (self->retired_legacy));
  }
  g_clear_pointer (ring, gpushare_cuda_ring_free);
  /* the primary context: the IPC events and semaphore blocks live there,
   * and an event is recorded only on a stream of its own context; copies
   * from neighbours' CUDA memory work across contexts of one device */
  *ring = gpushare_cuda_ring_new (self->cuda_device_id, NULL, type,
      self->epoch, self->alloc->n_slots,
      gpushare_backend_slot_size (&gpushare_cuda_vmm_backend,
          GST_VIDEO_INFO_SIZE (&self->vinfo)), error);
  if (*ring)
    GST_DEBUG_OBJECT (self, "%s ring for epoch %" G_GUINT64_FORMAT,
        gpushare_mem_type_to_string (type), self->epoch);
  return *ring;
}

static gboolean
send_cuda_slots (GstGpuShareSink * self, Client * client)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[GPUSHARE_MAX_FDS];
  GError *error = NULL;
  GpuShareCudaRing *ring = ensure_cuda_ring (self, client->mem_type, &error);
  gboolean ok;

  if (!ring || !gpushare_cuda_ring_add_consumer (ring, client->index,
          client->sync_mode, &error)
      || !gpushare_cuda_ring_export (ring, client->index, &msg->u.slots, fds,
          &error)) {
    gchar *text = g_strdup_printf ("the producer could not export its %s "
        "slots: %s", gpushare_mem_type_to_string (client->mem_type),
        error->message);

    g_clear_error (&error);
    g_free (msg);
    protocol_error (client, GPUSHARE_ERR_RESOURCE, text);
    g_free (text);
    return FALSE;
  }
  if (client->mem_type == GPUSHARE_MEM_CUDA_LEGACY) {
    /* from here on the consumer may open the ring */
    if (!self->legacy_holders)
      self->legacy_holders = gpushare_holders_new ();
    gpushare_holders_add (self->legacy_holders, client->id, client->pid,
        client->pidfd);
  }
  msg->type = GPUSHARE_MSG_SLOTS;
  ok = gpushare_conn_send (client->conn, msg, fds,
      (msg->u.slots.mem_type == GPUSHARE_MEM_CUDA_VMM ? msg->u.slots.n_slots :
          0) + msg->u.slots.n_sync_fds, NULL);
  g_free (msg);
  if (ok) {
    client_set_state (client, CLIENT_EXPORTED);
    gpushare_test_point ("sink", "export");
  }
  return ok;
}
#endif

static gboolean
send_slots (GstGpuShareSink * self, Client * client)
{
  GpuShareMsg msg = { 0, };
  gint fds[GPUSHARE_MAX_SLOTS];
  GError *error = NULL;
  guint i;

#ifdef HAVE_CUDA
  if (client->mem_type != GPUSHARE_MEM_SYSTEM)
    return send_cuda_slots (self, client);
#endif
  for (i = 0; i < self->alloc->n_slots; i++) {
    fds[i] = gpushare_allocation_export (self->alloc, i, &error);
    if (fds[i] < 0) {
      GST_WARNING_OBJECT (self, "client %u: %s", client->id, error->message);
      g_clear_error (&error);
      gpushare_close_fds (fds, i);
      protocol_error (client, GPUSHARE_ERR_RESOURCE,
          "the producer could not export its slots");
      return FALSE;
    }
  }
  msg.type = GPUSHARE_MSG_SLOTS;
  msg.u.slots.epoch = self->alloc->epoch;
  msg.u.slots.slot_size = self->alloc->slot_size;
  msg.u.slots.n_slots = self->alloc->n_slots;
  msg.u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  if (!gpushare_conn_send (client->conn, &msg, fds, self->alloc->n_slots,
          NULL))
    return FALSE;
  client_set_state (client, CLIENT_EXPORTED);
  gpushare_test_point ("sink", "export");
  return TRUE;
}

static void
send_caps (GstGpuShareSink * self, Client * client)
{
  GpuShareMsg msg = { 0, };

  msg.type = GPUSHARE_MSG_CAPS;
  msg.u.caps.flags = stream_flags (self);
  msg.u.caps.latency = self->latency;
  msg.u.caps.layout = self->layout;
  gpushare_conn_send (client->conn, &msg, NULL, 0, NULL);
}

static void
send_simple (Client * client, GpuShareMsgType type, guint64 value)
{
  GpuShareMsg msg = { 0, };

  msg.type = type;
  if (type == GPUSHARE_MSG_EOS)
    msg.u.eos.last_sequence = value;
  else if (type == GPUSHARE_MSG_GOODBYE)
    msg.u.goodbye.reason = (guint32) value;
  gpushare_conn_send (client->conn, &msg, NULL, 0, NULL);
}

/* ------------------------------------------------------------------------ */
/* Clients, from the control thread */

#ifdef HAVE_CUDA
/* lock held: the consumer closed the legacy ring of epoch (every one for
 * G_MAXUINT64); a ring of an earlier epoch nobody holds any more goes */
static void
release_legacy (GstGpuShareSink * self, Client * client, guint64 epoch)
{
  GpuShareCudaRing *ring = self->cuda_rings[gpu_index
      (GPUSHARE_MEM_CUDA_LEGACY)];
  guint freed;

  if (self->legacy_holders && ring && (epoch == G_MAXUINT64
          || epoch == gpushare_cuda_ring_epoch (ring)))
    gpushare_holders_release (self->legacy_holders, client->id);
  if (!self->retired_legacy)
    return;
  freed = gpushare_retained_release (self->retired_legacy, client->id,
      epoch);
  if (freed)
    GST_INFO_OBJECT (self, "%u legacy IPC rings of earlier epochs freed, %u "
        "still open in consumers' processes", freed,
        gpushare_retained_count (self->retired_legacy));
}
#endif

/* lock held: the legacy rings nobody holds any more, to be freed once the
 * lock is let go (freeing one waits for its streams); NULL when none */
static GPtrArray *
take_freed_rings (GstGpuShareSink * self)
{
#ifdef HAVE_CUDA
  return gpushare_retained_take_freed (self->retired_legacy);
#else
  return NULL;
#endif
}

/* lock held */
static void
handle_unmapped (GstGpuShareSink * self, Client * client,
    const GpuShareMapped * m)
{
  if (client->state != CLIENT_EXPORTED && client->state != CLIENT_READY) {
    protocol_error (client, GPUSHARE_ERR_PROTOCOL, "UNMAPPED out of order");
    return;
  }
  if (m->epoch > self->epoch) {
    protocol_error (client, GPUSHARE_ERR_PROTOCOL,
        "UNMAPPED of a future ring");
    return;
  }
#ifdef HAVE_CUDA
  if (client->mem_type == GPUSHARE_MEM_CUDA_LEGACY)
    release_legacy (self, client, m->epoch);
#endif
}

/* Is the process of a client whose socket closed still alive?  Its socket
 * closes as it exits, a moment before its pidfd says it exited: the
 * process is given HANGUP_GRACE_MS to show its end.  Without a pidfd
 * (a kernel without them) it counts as gone, as it always did. */
static gboolean
peer_outlives_hangup (Client * client)
{
  struct pollfd pfd;
  gint r;

  if (client->pidfd < 0)
    return FALSE;
  pfd.fd = client->pidfd;
  pfd.events = POLLIN;
  do
    r = poll (&pfd, 1, HANGUP_GRACE_MS);
  while (r < 0 && errno == EINTR);
  return r == 0;
}

static void
drop_client (GstGpuShareSink * self, Client * client,
    GstGpuShareClientRemoveReason reason, const gchar * detail)
{
  GEnumValue *ev = g_enum_get_value (remove_reason_class, reason);
  guint id = client->id;
  GPtrArray *freed;
  guint released, unseen = 0;
  gboolean quarantine, held, outlives = FALSE;

  /* a system-memory consumer whose connection dropped while its process
   * lives on (its src lost us and connects again, or it closed the socket
   * itself) may still have buffers that read its slots in place: as for a
   * GOODBYE that says HELD, they are quarantined.  Checked before the lock:
   * it may wait a moment */
  if (reason == GST_GPU_SHARE_REMOVE_HANGUP
      && client->mem_type == GPUSHARE_MEM_SYSTEM)
    outlives = peer_outlives_hangup (client);

  g_mutex_lock (&self->lock);
  if (self->clients[client->index] != client) {
    g_mutex_unlock (&self->lock);
    return;
  }
  self->clients[client->index] = NULL;
  self->n_clients--;
  /* a consumer that leaves while buffers in its process still wrap slots
   * in place says so in its GOODBYE, after a RELEASE for every other frame
   * it received: what it still holds of the frames up to the last it
   * received is read by those buffers.  The frames sent after that were
   * on their way as it left: it never read them.  A GPU consumer copies
   * every frame out: nothing of it stays in place */
  held = reason == GST_GPU_SHARE_REMOVE_GOODBYE && client->goodbye_held
      && client->mem_type == GPUSHARE_MEM_SYSTEM;
  if (held)
    unseen = gpushare_ring_release_holder_after (&self->ring, client->index,
        client->held_upto);
  /* a consumer whose reads of its slots cannot be confirmed done may
   * still read them: they are never written again, the ring is replaced
   * instead.  Only a goodbye, a hang-up (its process, and so its mappings,
   * gone) or our own stop give slots back; for a GPU consumer not even a
   * hang-up (its copy out of a slot may still run on the GPU) */
  quarantine = held || outlives || (reason != GST_GPU_SHARE_REMOVE_GOODBYE
      && reason != GST_GPU_SHARE_REMOVE_SHUTDOWN
      && (reason != GST_GPU_SHARE_REMOVE_HANGUP
          || (client->mem_type != GPUSHARE_MEM_SYSTEM
              && client->mem_type != 0)));
  if (quarantine) {
    guint before = gpushare_ring_n_tainted (&self->ring);

    released = gpushare_ring_quarantine_holder (&self->ring, client->index);
    /* a slot two dropped consumers held counts once */
    self->slots_quarantined += gpushare_ring_n_tainted (&self->ring) - before;
  } else {
    released = gpushare_ring_release_holder (&self->ring, client->index);
  }
#ifdef HAVE_CUDA
  /* its src closes every mapping before its goodbye */
  if (reason == GST_GPU_SHARE_REMOVE_GOODBYE
      && client->mem_type == GPUSHARE_MEM_CUDA_LEGACY)
    release_legacy (self, client, G_MAXUINT64);
  if (client->mem_type != GPUSHARE_MEM_SYSTEM
      && self->cuda_rings[gpu_index (client->mem_type)])
    gpushare_cuda_ring_remove_consumer (self->cuda_rings[gpu_index
            (client->mem_type)], client->index);
#endif
  freed = take_freed_rings (self);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  g_clear_pointer (&freed, g_ptr_array_unref);

  /* a peer that misbehaved is worth a warning; one that left is not */
  if (reason == GST_GPU_SHARE_REMOVE_GOODBYE
      || reason == GST_GPU_SHARE_REMOVE_HANGUP
      || reason == GST_GPU_SHARE_REMOVE_SHUTDOWN)
    GST_INFO_OBJECT (self, "client %u removed (%s): %s; %u slots reclaimed",
        id, ev ? ev->value_nick : "?", detail ? detail : "",
        released + unseen);
  else
    GST_WARNING_OBJECT (self, "client %u removed (%s): %s; %u slots "
        "reclaimed", id, ev ? ev->value_nick : "?", detail ? detail : "",
        released);

  if (quarantine && released > 0) {
    GST_WARNING_OBJECT (self, "client %u: %u slots quarantined (%s); the "
        "ring is replaced at the next frame", id, released, held ?
        "buffers in its process still read them" :
        "its reads cannot be confirmed done");
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self),
            gst_structure_new ("gpushare-quarantine",
                "client-id", G_TYPE_UINT, id,
                "slots", G_TYPE_UINT, released,
                "reason", G_TYPE_STRING, ev ? ev->value_nick : "?", NULL)));
  }
  client_free (client);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_NUM_CLIENTS]);
  g_signal_emit (self, signals[SIGNAL_CLIENT_REMOVED], 0, id, reason);
}

/* lock held: refuse a message; the client is dropped from the context */
static void
protocol_error (Client * client, GpuShareErrorCode code, const gchar * text)
{
  /* CLOSED stands for "we refused it" and maps to the unsupported and
   * resource reasons in reason_from_error () */
  GError *error = g_error_new (GPUSHARE_CONN_ERROR,
      code == GPUSHARE_ERR_PROTOCOL ? GPUSHARE_CONN_ERROR_PROTOCOL :
      GPUSHARE_CONN_ERROR_CLOSED, "%s", text);

  GST_WARNING_OBJECT (client->sink, "client %u: %s", client->id, text);
  gpushare_conn_send_error (client->conn, code, text);
  gpushare_conn_flush (client->conn, 10);
  gpushare_conn_fail (client->conn, error);
  g_error_free (error);
}

static void
handle_accept (GstGpuShareSink * self, Client * client,
    const GpuShareAccept * acc)
{
  if (client->state != CLIENT_ANNOUNCED) {
    protocol_error (client, GPUSHARE_ERR_PROTOCOL, "ACCEPT out of order");
    return;
  }
  g_free (client->name);
  client->name = g_strndup (acc->name, acc->name_len);
  g_free (client->mem_reason);
  client->mem_reason = acc->reason_len ?
      g_strndup (acc->reason, acc->reason_len) : g_strdup ("not given");
  if (acc->mem_type == GPUSHARE_MEM_SYSTEM) {
    client->mem_type = GPUSHARE_MEM_SYSTEM;
#ifdef HAVE_CUDA
  } else if ((acc->mem_type & gpu_mem_types (self))
      && (acc->sync_mode & gpushare_cuda_sync_modes (&self->cuda_caps))) {
    client->mem_type = acc->mem_type;
    client->sync_mode = acc->sync_mode;
#endif
  } else {
    protocol_error (client, GPUSHARE_ERR_UNSUPPORTED,
        "the chosen memory type or synchronisation was not offered");
    return;
  }
  GST_INFO_OBJECT (self, "client %u takes %s memory (%s)", client->id,
      gpushare_mem_type_to_string (client->mem_type), client->mem_reason);
  send_slots (self, client);
}

static void
handle_mapped (GstGpuShareSink * self, Client * client,
    const GpuShareMapped * m)
{
  gboolean connected;

  if (client->state != CLIENT_EXPORTED && client->state != CLIENT_READY) {
    protocol_error (client, GPUSHARE_ERR_PROTOCOL, "MAPPED out of order");
    return;
  }
  if (m->epoch > self->epoch) {
    protocol_error (client, GPUSHARE_ERR_PROTOCOL, "MAPPED of a future ring");
    return;
  }
  /* a MAPPED for a ring that a caps change replaced meanwhile: the SLOTS of
   * the new ring are on their way, wait for their MAPPED */
  if (m->epoch != self->epoch || client->state == CLIENT_READY)
    return;
  client->mapped_epoch = m->epoch;
  connected = !client->connected_emitted;
  client->connected_emitted = TRUE;
  client_set_state (client, CLIENT_READY);
  gpushare_test_point ("sink", "ready");
  /* a consumer that joins after the end still learns it ended */
  if (self->eos)
    send_simple (client, GPUSHARE_MSG_EOS, self->sequence);
  g_cond_broadcast (&self->cond);
  if (connected) {
    guint id = client->id;

    /* emitted without the lock: handlers may read properties */
    g_mutex_unlock (&self->lock);
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_NUM_CLIENTS]);
    g_signal_emit (self, signals[SIGNAL_CLIENT_CONNECTED], 0, id);
    g_mutex_lock (&self->lock);
  }
}

static void
handle_release (GstGpuShareSink * self, Client * client,
    const GpuShareRelease * r)
{
  GpuShareRingResult res;

  if (client->state != CLIENT_EXPORTED && client->state != CLIENT_READY) {
    protocol_error (client, GPUSHARE_ERR_PROTOCOL, "RELEASE out of order");
    return;
  }
  res = gpushare_ring_release (&self->ring, r->epoch, r->slot, r->generation,
      client->index);
  if (res == GPUSHARE_RING_STALE_EPOCH && r->epoch < self->epoch) {
    /* a slot of a replaced ring: nothing to give back */
    return;
  }
  if (res != GPUSHARE_RING_OK) {
    gchar *text = g_strdup_printf ("bad RELEASE: %s",
        gpushare_ring_result_to_string (res));

    protocol_error (client, GPUSHARE_ERR_PROTOCOL, text);
    g_free (text);
    return;
  }
  client->frames_released++;
  GST_LOG_OBJECT (self, "client %u released slot %u", client->id, r->slot);
  g_cond_broadcast (&self->cond);
}

static void
client_message (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, gpointer user_data)
{
  Client *client = user_data;
  GstGpuShareSink *self = client->sink;
  GPtrArray *freed;

  /* no message from a consumer carries fds: refuse and close them */
  if (n_fds > 0) {
    gpushare_close_fds (fds, n_fds);
    g_mutex_lock (&self->lock);
    protocol_error (client, GPUSHARE_ERR_PROTOCOL,
        "consumer sent file descriptors");
    g_mutex_unlock (&self->lock);
    return;
  }

  g_mutex_lock (&self->lock);
  switch (msg->type) {
    case GPUSHARE_MSG_ACCEPT:
      handle_accept (self, client, &msg->u.accept);
      break;
    case GPUSHARE_MSG_MAPPED:
      handle_mapped (self, client, &msg->u.mapped);
      break;
    case GPUSHARE_MSG_UNMAPPED:
      handle_unmapped (self, client, &msg->u.mapped);
      break;
    case GPUSHARE_MSG_RELEASE:
      handle_release (self, client, &msg->u.release);
      break;
    case GPUSHARE_MSG_GOODBYE:
      client->goodbye_held =
          (msg->u.goodbye.flags & GPUSHARE_GOODBYE_FLAG_HELD) != 0;
      client->held_upto = msg->u.goodbye.last_sequence;
      g_mutex_unlock (&self->lock);
      drop_client (self, client, GST_GPU_SHARE_REMOVE_GOODBYE, "goodbye");
      return;
    case GPUSHARE_MSG_ERROR:{
      gchar *text = g_strdup_printf ("consumer error %s: %s",
          gpushare_error_code_to_string (msg->u.error.code),
          msg->u.error.text);

      g_mutex_unlock (&self->lock);
      drop_client (self, client, GST_GPU_SHARE_REMOVE_PEER_ERROR, text);
      g_free (text);
      return;
    }
    default:
      protocol_error (client, GPUSHARE_ERR_PROTOCOL,
          "message not allowed from a consumer");
      break;
  }
  freed = take_freed_rings (self);
  g_mutex_unlock (&self->lock);
  g_clear_pointer (&freed, g_ptr_array_unref);
}

static GstGpuShareClientRemoveReason
reason_from_error (const GError * error)
{
  if (!error || error->domain != GPUSHARE_CONN_ERROR)
    return GST_GPU_SHARE_REMOVE_PROTOCOL;
  switch (error->code) {
    case GPUSHARE_CONN_ERROR_HANGUP:
    case GPUSHARE_CONN_ERROR_IO:
      return GST_GPU_SHARE_REMOVE_HANGUP;
    case GPUSHARE_CONN_ERROR_VERSION:
      return GST_GPU_SHARE_REMOVE_VERSION;
    case GPUSHARE_CONN_ERROR_OVERFLOW:
      return GST_GPU_SHARE_REMOVE_SLOW;
    case GPUSHARE_CONN_ERROR_CLOSED:
      return GST_GPU_SHARE_REMOVE_UNSUPPORTED;
    case GPUSHARE_CONN_ERROR_TIMEOUT:
      return GST_GPU_SHARE_REMOVE_TIMEOUT;
    default:
      return GST_GPU_SHARE_REMOVE_PROTOCOL;
  }
}

static void
client_closed (GpuShareConn * conn, const GError * error, gpointer user_data)
{
  Client *client = user_data;

  /* the transport already told the peer why, where it broke the protocol */
  drop_client (client->sink, client, reason_from_error (error),
      error ? error->message : NULL);
}

static void
refuse_connection (GstGpuShareSink * self, gint fd, GpuShareErrorCode code,
    const gchar * text)
{
  GpuShareConn *conn = gpushare_conn_new (fd, self->context, NULL, NULL,
      NULL);

  gpushare_conn_send_error (conn, code, text);
  gpushare_conn_flush (conn, 10);
  gpushare_conn_close (conn);
  gpushare_conn_unref (conn);
}

/* Drops the consumers whose handshake step is overdue (a half-open
 * handshake must not hold a client place, and a lossless producer must not
 * wait forever for a consumer that never maps a new ring), and those whose
 * slot lease expired while the producer waits for a slot. */
static gboolean
housekeeping (gpointer user_data)
{
  GstGpuShareSink *self = user_data;
  GPtrArray *freed;
  Client *late[MAX_CLIENTS];
  gint64 now = g_get_monotonic_time ();
  guint i, n = 0;

  guint lease_ms;
  guint64 expired = 0;
  /* per expired client: its oldest frame held, and for how long */
  guint64 held_seq[MAX_CLIENTS] = { 0, };
  gint64 held_us[MAX_CLIENTS] = { 0, };
  gint64 waited_us = 0;

  GST_OBJECT_LOCK (self);
  lease_ms = self->lease_timeout;
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&self->lock);
#ifdef HAVE_CUDA
  /* processes that exited closed whatever they had open */
  if (self->legacy_holders)
    gpushare_holders_reap (self->legacy_holders);
  if (self->retired_legacy && gpushare_retained_count (self->retired_legacy)) {
    guint n_freed = gpushare_retained_reap (self->retired_legacy);

    if (n_freed)
      GST_INFO_OBJECT (self, "%u legacy IPC rings of earlier epochs freed: "
          "their consumers' processes exited; %u still open", n_freed,
          gpushare_retained_count (self->retired_legacy));
  }
#endif
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (c && c->deadline && now > c->deadline) {
      c->deadline = 0;
      late[n++] = c;
    }
  }
  /* leases: only while the producer waits for a free slot (lossless, or
   * upstream waiting in our pool) for longer than lease-timeout.  Then a
   * consumer that holds a frame sent longer than lease-timeout ago loses
   * its lease, unless that frame is the newest it holds: keeping the frame
   * on display (a paused pipeline, an appsink's last sample) holds nobody
   * up, and while the producer waits no newer frame comes.  A leaky
   * producer never waits: a consumer there that holds its whole share
   * (paused, or stuck) costs that share and no more. */
  if (lease_ms && self->waiting_since
      && now - self->waiting_since > (gint64) lease_ms * 1000) {
    gint64 limit = (gint64) lease_ms * 1000;
    guint64 newest[MAX_CLIENTS] = { 0, };
    guint j;

    waited_us = now - self->waiting_since;
    for (i = 0; i < self->ring.n_slots; i++)
      for (j = 0; j < MAX_CLIENTS; j++)
        if (self->ring.slots[i].state == GPUSHARE_SLOT_HELD
            && (self->ring.slots[i].holders & (G_GUINT64_CONSTANT (1) << j)))
          newest[j] = MAX (newest[j], self->ring.slots[i].sequence);
    for (i = 0; i < self->ring.n_slots; i++) {
      const GpuShareSlot *slot = &self->ring.slots[i];

      if (slot->state != GPUSHARE_SLOT_HELD || now - self->sent_at[i] <= limit)
        continue;
      for (j = 0; j < MAX_CLIENTS; j++) {
        guint64 bit = G_GUINT64_CONSTANT (1) << j;

        if (!(slot->holders & bit) || slot->sequence == newest[j])
          continue;
        if (!(expired & bit) || now - self->sent_at[i] > held_us[j]) {
          held_seq[j] = slot->sequence;
          held_us[j] = now - self->sent_at[i];
        }
        expired |= bit;
      }
    }
  }
  freed = take_freed_rings (self);
  g_mutex_unlock (&self->lock);
  g_clear_pointer (&freed, g_ptr_array_unref);
  for (i = 0; i < MAX_CLIENTS && expired; i++) {
    gchar *text;
    Client *c;

    if (!(expired & (G_GUINT64_CONSTANT (1) << i)))
      continue;
    g_mutex_lock (&self->lock);
    c = self->clients[i];
    g_mutex_unlock (&self->lock);
    if (!c)
      continue;
    /* in words the consumer's user can act on: its pipeline stopped
     * taking buffers, or keeps them (a gpusharesrc copies the frames past
     * its max-in-place, so a sink or queue that only batches does not
     * hold the producer up) */
    text = g_strdup_printf ("slot lease expired: frame %" G_GUINT64_FORMAT
        " was held for %" G_GINT64_FORMAT " ms while the producer waited %"
        G_GINT64_FORMAT " ms for a free slot (lease-timeout %u ms); usually "
        "the pipeline downstream of gpusharesrc stopped taking buffers "
        "(paused, blocked) or keeps them", held_seq[i], held_us[i] / 1000,
        waited_us / 1000, lease_ms);
    GST_WARNING_OBJECT (self, "client %u (pid %d): %s", c->id, (gint) c->pid,
        text);
    gpushare_conn_send_error (c->conn, GPUSHARE_ERR_TIMEOUT, text);
    g_free (text);
    gpushare_conn_flush (c->conn, 10);
    drop_client (self, c, GST_GPU_SHARE_REMOVE_LEASE, "slot lease expired");
  }
  for (i = 0; i < n; i++) {
    GST_WARNING_OBJECT (self, "client %u (pid %d): handshake timed out in "
        "state %s", late[i]->id, (gint) late[i]->pid,
        client_state_to_string (late[i]->state));
    gpushare_conn_send_error (late[i]->conn, GPUSHARE_ERR_TIMEOUT,
        "handshake timed out");
    gpushare_conn_flush (late[i]->conn, 10);
    drop_client (self, late[i], GST_GPU_SHARE_REMOVE_TIMEOUT,
        "handshake timed out");
  }
  return G_SOURCE_CONTINUE;
}

/* lock held: consumers connected that do not stream yet */
static guint
n_pending_clients (GstGpuShareSink * self)
{
  guint i, n = 0;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->state != CLIENT_READY)
      n++;
  return n;
}

/* our own uid, an allowed uid, or an allowed primary gid */
static gboolean
peer_allowed (GstGpuShareSink * self, const struct ucred *cred)
{
  gboolean ok;

  if (cred->uid == getuid ())
    return TRUE;
  GST_OBJECT_LOCK (self);
  ok = gpushare_ids_contain (self->allowed_uids, cred->uid)
      || gpushare_ids_contain (self->allowed_gids, cred->gid);
  GST_OBJECT_UNLOCK (self);
  return ok;
}

static gboolean
listen_dispatch (gint fd, GIOCondition cond, gpointer user_data)
{
  GstGpuShareSink *self = user_data;
  gint cfd;
  struct ucred cred = { 0, };
  Client *client;
  guint i, max_clients, max_pending, heartbeat;

  cfd = accept4 (fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (cfd < 0)
    return G_SOURCE_CONTINUE;

  /* credentials before anything else leaves this process */
  if (!gpushare_socket_get_peer (cfd, &cred.pid, &cred.uid, &cred.gid)
      || !peer_allowed (self, &cred)) {
    GST_WARNING_OBJECT (self, "refused a consumer: pid %d uid %u gid %u is "
        "not allowed", (gint) cred.pid, (guint) cred.uid, (guint) cred.gid);
    refuse_connection (self, cfd, GPUSHARE_ERR_NOT_AUTHORIZED,
        "not authorized");
    g_signal_emit (self, signals[SIGNAL_CLIENT_REMOVED], 0, 0,
        GST_GPU_SHARE_REMOVE_NOT_AUTHORIZED);
    return G_SOURCE_CONTINUE;
  }

  GST_OBJECT_LOCK (self);
  max_clients = self->max_clients;
  max_pending = self->max_pending;
  heartbeat = self->heartbeat_interval;
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&self->lock);
  if (n_pending_clients (self) >= max_pending) {
    g_mutex_unlock (&self->lock);
    GST_WARNING_OBJECT (self, "refused a consumer (pid %d): %u handshakes "
        "are pending already", (gint) cred.pid, max_pending);
    refuse_connection (self, cfd, GPUSHARE_ERR_TOO_MANY_CLIENTS,
        "too many pending handshakes");
    g_signal_emit (self, signals[SIGNAL_CLIENT_REMOVED], 0, 0,
        GST_GPU_SHARE_REMOVE_TOO_MANY);
    return G_SOURCE_CONTINUE;
  }
  for (i = 0; i < MAX_CLIENTS; i++)
    if (!self->clients[i])
      break;
  if (self->n_clients >= max_clients || i == MAX_CLIENTS) {
    g_mutex_unlock (&self->lock);
    GST_WARNING_OBJECT (self, "refused a consumer (pid %d): max-clients "
        "reached", (gint) cred.pid);
    refuse_connection (self, cfd, GPUSHARE_ERR_TOO_MANY_CLIENTS,
        "too many clients");
    g_signal_emit (self, signals[SIGNAL_CLIENT_REMOVED], 0, 0,
        GST_GPU_SHARE_REMOVE_TOO_MANY);
    return G_SOURCE_CONTINUE;
  }

  client = g_new0 (Client, 1);
  client->sink = self;
  client->id = ++self->next_client_id;
  client->index = i;
  client->pid = cred.pid;
  /* opened now, while the pid is surely that peer's: a legacy IPC ring it
   * is sent is watched through this (gpushareretain.h), and a hang-up is
   * told from the end of its process (see drop_client ()) */
  client->pidfd = gpushare_pidfd_open (cred.pid);
  client->uid = cred.uid;
  client->state = CLIENT_CONNECTED;
  client->conn = gpushare_conn_new (cfd, self->context, client_message,
      client_closed, client);
  /* from the first byte on: a consumer that hangs mid-handshake is caught
   * even with handshake-timeout 0 */
  gpushare_conn_set_heartbeat (client->conn, heartbeat);
  self->clients[i] = client;
  self->n_clients++;
  GST_DEBUG_OBJECT (self, "client %u connected (pid %d)", client->id,
      (gint) cred.pid);
  if (self->have_layout)
    send_announce (self, client);
  gpushare_conn_start (client->conn);
  g_mutex_unlock (&self->lock);

  return G_SOURCE_CONTINUE;
}

static gpointer
control_thread (gpointer user_data)
{
  GstGpuShareSink *self = user_data;

  g_main_context_push_thread_default (self->context);
  g_main_loop_run (self->loop);
  g_main_context_pop_thread_default (self->context);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Base class */

/* Finds out, once per start, whether GPU memory can be offered, and says
 * why not where it cannot. */
static void
probe_gpu (GstGpuShareSink * self)
{
#ifdef HAVE_CUDA
  GError *error = NULL;
  gint device;

  GST_OBJECT_LOCK (self);
  device = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&self->cuda_reason, g_free);
  self->cuda_ok = gpushare_cuda_probe (device, &self->cuda_caps, &error);
  if (self->cuda_ok && !(self->cuda_caps.vmm && self->cuda_caps.posix_fd)) {
    self->cuda_ok = FALSE;
    self->cuda_reason = g_strdup ("the GPU cannot export VMM memory as file "
        "descriptors");
  } else if (!self->cuda_ok) {
    self->cuda_reason = g_strdup_printf ("no usable GPU: %s", error->message);
    g_clear_error (&error);
  }
  if (self->cuda_ok) {
    gchar *uuid = gpushare_cuda_uuid_to_string (self->cuda_caps.uuid);

    GST_INFO_OBJECT (self, "offering GPU memory of %s (%s)",
        self->cuda_caps.name, uuid);
    g_free (uuid);
    /* share a CUDA context with neighbouring CUDA elements, if GStreamer's
     * CUDA library is here; without it we work in the primary context */
    if (gpushare_gst_cuda_load (NULL))
      gpushare_gst_cuda_ensure_element_context (GST_ELEMENT (self), device,
          &self->gst_cuda_ctx);
  } else {
    GST_INFO_OBJECT (self, "system memory only: %s", self->cuda_reason);
  }
#else
  self->cuda_ok = FALSE;
  g_free (self->cuda_reason);
  self->cuda_reason = g_strdup ("built without CUDA");
#endif
}

static gboolean
gst_gpu_share_sink_start (GstBaseSink * bsink)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  GError *error = NULL;
  gchar *path;
  guint mode;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->socket_path);
  mode = self->socket_mode;
  GST_OBJECT_UNLOCK (self);

  if (!path) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("No socket path set"), ("set the socket-path property"));
    return FALSE;
  }

  self->listen_fd = gpushare_listen_path (path, mode, &error);
  if (self->listen_fd < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ_WRITE,
        ("Could not listen on the socket path"), ("%s", error->message));
    g_clear_error (&error);
    g_free (path);
    return FALSE;
  }
  self->bound_path = path;

  g_mutex_lock (&self->lock);
  self->instance = g_random_int () | ((guint64) g_random_int () << 32);
  self->epoch = 0;
  self->sequence = 0;
  self->flushing = FALSE;
  self->have_layout = FALSE;
  self->live_known = FALSE;
  self->live = FALSE;
  self->eos = FALSE;
  self->latency = GST_CLOCK_TIME_NONE;
  self->frames_rendered = 0;
  self->frames_dropped = 0;
  self->frames_in_place = 0;
  self->frames_copied = 0;
  self->frames_to_gpu = 0;
  self->slots_quarantined = 0;
  self->rings_replaced = 0;
  self->n_waiting = 0;
  self->waiting_since = 0;
  memset (self->sent_at, 0, sizeof (self->sent_at));
  g_mutex_unlock (&self->lock);
  probe_gpu (self);

  self->context = g_main_context_new ();
  self->loop = g_main_loop_new (self->context, FALSE);
  self->listen_source = g_unix_fd_source_new (self->listen_fd, G_IO_IN);
  g_source_set_callback (self->listen_source, G_SOURCE_FUNC (listen_dispatch),
      self, NULL);
  g_source_attach (self->listen_source, self->context);
  self->housekeeping = g_timeout_source_new (HOUSEKEEPING_MS);
  g_source_set_callback (self->housekeeping, housekeeping, self, NULL);
  g_source_attach (self->housekeeping, self->context);
  self->thread = g_thread_new ("gpusharesink", control_thread, self);
  GST_DEBUG_OBJECT (self, "listening");
  return TRUE;
}

static gboolean
gst_gpu_share_sink_stop (GstBaseSink * bsink)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  Client *gone[MAX_CLIENTS];
  guint i, n = 0;

  if (self->thread) {
    gpushare_control_thread_join (self->context, self->loop, self->thread);
    self->thread = NULL;
  }
  if (self->listen_source) {
    g_source_destroy (self->listen_source);
    g_clear_pointer (&self->listen_source, g_source_unref);
  }
  if (self->housekeeping) {
    g_source_destroy (self->housekeeping);
    g_clear_pointer (&self->housekeeping, g_source_unref);
  }

  /* the control thread is gone: nobody else touches the clients now */
  g_mutex_lock (&self->lock);
  for (i = 0; i < MAX_CLIENTS; i++) {
    if (self->clients[i])
      gone[n++] = self->clients[i];
    self->clients[i] = NULL;
  }
  self->n_clients = 0;
  g_mutex_unlock (&self->lock);

  for (i = 0; i < n; i++) {
    send_simple (gone[i], GPUSHARE_MSG_GOODBYE, GPUSHARE_ERR_SHUTDOWN);
    gpushare_conn_flush (gone[i]->conn, GOODBYE_FLUSH_MS);
    g_signal_emit (self, signals[SIGNAL_CLIENT_REMOVED], 0, gone[i]->id,
        GST_GPU_SHARE_REMOVE_SHUTDOWN);
    client_free (gone[i]);
  }
  if (n)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_NUM_CLIENTS]);

  g_clear_pointer (&self->loop, g_main_loop_unref);
  g_clear_pointer (&self->context, g_main_context_unref);
  if (self->listen_fd >= 0) {
    close (self->listen_fd);
    self->listen_fd = -1;
  }
  if (self->bound_path) {
    unlink (self->bound_path);
    g_clear_pointer (&self->bound_path, g_free);
  }

  g_mutex_lock (&self->lock);
  g_clear_pointer (&self->alloc, gpushare_allocation_unref);
#ifdef HAVE_CUDA
  for (i = 0; i < G_N_ELEMENTS (self->cuda_rings); i++)
    g_clear_pointer (&self->cuda_rings[i], gpushare_cuda_ring_free);
  g_clear_pointer (&self->retired_legacy, gpushare_retained_free);
  g_clear_pointer (&self->legacy_holders, gpushare_holders_free);
  gst_clear_object (&self->gst_cuda_ctx);
#endif
  self->have_layout = FALSE;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_gpu_share_sink_set_caps (GstBaseSink * bsink, GstCaps * caps)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  const GpuShareBackend *backend = &gpushare_sysmem_backend;
  GstVideoInfo vinfo;
  gsize slot_size;
  gboolean new_ring;
  guint ring_size, i;
  GError *error = NULL;
  gchar *why = NULL;

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
  GST_OBJECT_LOCK (self);
  ring_size = self->ring_size;
  GST_OBJECT_UNLOCK (self);

  slot_size = gpushare_backend_slot_size (backend,
      GST_VIDEO_INFO_SIZE (&vinfo));

  g_mutex_lock (&self->lock);
  new_ring = !self->alloc || slot_size > self->alloc->slot_size;
  if (new_ring) {
    GpuShareAllocation *alloc = gpushare_allocation_new (backend,
        self->epoch + 1, ring_size, slot_size, &error);

    if (!alloc) {
      g_mutex_unlock (&self->lock);
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Could not allocate the slot ring"), ("%s", error->message));
      g_clear_error (&error);
      return FALSE;
    }
    /* consumers keep their own mappings of the old ring until their last
     * buffer from it is gone; our references go with the pool buffers */
    g_clear_pointer (&self->alloc, gpushare_allocation_unref);
    self->alloc = alloc;
    self->epoch = alloc->epoch;
    gpushare_ring_init (&self->ring, ring_size, self->epoch);
    GST_DEBUG_OBJECT (self, "new ring: epoch %" G_GUINT64_FORMAT ", %u slots "
        "of %" G_GSIZE_FORMAT " bytes", self->epoch, ring_size, slot_size);
  }
  self->vinfo = vinfo;
  fill_layout (self, caps);

  /* the caps reach each consumer before the next frame: socket order */
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c)
      continue;
    if (c->state == CLIENT_CONNECTED) {
      send_announce (self, c);
      continue;
    }
    send_caps (self, c);
    if (new_ring && (c->state == CLIENT_EXPORTED || c->state == CLIENT_READY))
      send_slots (self, c);
  }
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static GstGpuShareSlowPolicy
effective_policy (GstGpuShareSink * self)
{
  GstGpuShareSlowPolicy policy;

  GST_OBJECT_LOCK (self);
  policy = self->policy;
  GST_OBJECT_UNLOCK (self);
  if (policy == GST_GPU_SHARE_POLICY_AUTO)
    policy = self->live ? GST_GPU_SHARE_POLICY_LEAKY :
        GST_GPU_SHARE_POLICY_LOSSLESS;
  return policy;
}

/* lock held.  FALSE when flushing. */
static gboolean
wait_locked (GstGpuShareSink * self)
{
  if (self->flushing)
    return FALSE;
  g_cond_wait (&self->cond, &self->lock);
  return !self->flushing;
}

static guint
n_ready_clients (GstGpuShareSink * self)
{
  guint i, n = 0;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->state == CLIENT_READY
        && self->clients[i]->mapped_epoch == self->epoch)
      n++;
  return n;
}

/* lock held.  Consumers that were streaming and are mapping the ring that a
 * caps change just made: lossless waits for them, leaky counts what they
 * miss meanwhile. */
static guint
n_remapping_clients (GstGpuShareSink * self)
{
  guint i, n = 0;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->connected_emitted
        && (self->clients[i]->state != CLIENT_READY
            || self->clients[i]->mapped_epoch != self->epoch))
      n++;
  return n;
}

static const SlotTag *
slot_tag (GstBuffer * buf)
{
  return gst_mini_object_get_qdata (GST_MINI_OBJECT (buf), slot_tag_quark);
}

/* lock held: is buf one of our pool's slots of the current ring, still as
 * the pool handed it out? */
static gboolean
is_current_slot (GstGpuShareSink * self, GstBuffer * buf, guint * slot)
{
  const SlotTag *tag = slot_tag (buf);
  GstMemory *mem;
  GstMapInfo map;
  gboolean ret;

  if (!tag || tag->alloc != self->alloc || gst_buffer_n_memory (buf) != 1)
    return FALSE;
  if (self->ring.slots[tag->slot].state != GPUSHARE_SLOT_WRITING
      || self->ring.slots[tag->slot].generation != tag->generation)
    return FALSE;
  mem = gst_buffer_peek_memory (buf, 0);
  if (!gst_memory_map (mem, &map, GST_MAP_READ))
    return FALSE;
  ret = map.data == self->alloc->data[tag->slot];
  gst_memory_unmap (mem, &map);
  *slot = tag->slot;
  return ret;
}

static gboolean
copy_into_slot (GstGpuShareSink * self, GstBuffer * buf, guint slot)
{
  GstBuffer *dest = gst_buffer_new_wrapped_full (0, self->alloc->data[slot],
      self->alloc->slot_size, 0, GST_VIDEO_INFO_SIZE (&self->vinfo), NULL,
      NULL);
  GstVideoFrame in, out;
  gboolean ret = FALSE;

  if (gst_video_frame_map (&in, &self->vinfo, buf, GST_MAP_READ)) {
    if (gst_video_frame_map (&out, &self->vinfo, dest, GST_MAP_WRITE)) {
      /* not gst_video_frame_copy (): it drops the last chroma sample of
       * odd-width packed 4:2:2 rows */
      ret = gpushare_video_frame_copy (&out, &in);
      gst_video_frame_unmap (&out);
    }
    gst_video_frame_unmap (&in);
  }
  gst_buffer_unref (dest);
  return ret;
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

/* lock held: which memory types the consumers of this frame read */
static void
memory_needs (GstGpuShareSink * self, gboolean * sys, guint32 * gpu)
{
  guint i;

  *sys = FALSE;
  *gpu = 0;
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c || c->state != CLIENT_READY || c->mapped_epoch != self->epoch)
      continue;
    if (c->mem_type == GPUSHARE_MEM_SYSTEM)
      *sys = TRUE;
    else
      *gpu |= c->mem_type;
  }
}

static gboolean
is_gpu_buffer (GstBuffer * buf)
{
#ifdef HAVE_CUDA
  return gst_buffer_n_memory (buf) > 0
      && gpushare_gst_cuda_is_cuda_memory (gst_buffer_peek_memory (buf, 0));
#else
  return FALSE;
#endif
}

#ifdef HAVE_CUDA
static void
planes_from_info (GpuSharePlanes * p, const GstVideoInfo * info,
    gboolean device, guintptr base)
{
  guint i;

  memset (p, 0, sizeof (*p));
  p->device = device;
  p->base = base;
  for (i = 0; i < GST_VIDEO_INFO_N_PLANES (info); i++) {
    p->offset[i] = GST_VIDEO_INFO_PLANE_OFFSET (info, i);
    p->stride[i] = GST_VIDEO_INFO_PLANE_STRIDE (info, i);
  }
}

/* lock held.  Writes the frame into the CUDA slot: from upstream's GPU
 * memory (one copy on the device), from the system-memory slot it is
 * already in, or from upstream's system memory (one upload). */
static gboolean
write_gpu_slot (GstGpuShareSink * self, GpuShareMemType type, GstBuffer * buf,
    guint slot, gboolean in_sys_slot, GError ** error)
{
  GpuShareCudaRing *ring = ensure_cuda_ring (self, type, error);
  GpuSharePlanes src, dst;
  GstVideoMeta *meta = gst_buffer_get_video_meta (buf);
  GstVideoFrame frame;
  GstMemory *mem = NULL;
  GstMapInfo map;
  gboolean ok, mapped_frame = FALSE;
  guint i;

  if (!ring || !gpushare_cuda_ring_begin (ring, slot, error))
    return FALSE;
  planes_from_info (&dst, &self->vinfo, TRUE, 0);
  if (is_gpu_buffer (buf)) {
    if (!meta) {
      /* CUDA memory is pitched: without its meta its layout is unknown */
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "CUDA memory without a GstVideoMeta");
      return FALSE;
    }
    mem = gst_buffer_peek_memory (buf, 0);
    if (!gst_memory_map (mem, &map, GST_MAP_READ | GPUSHARE_MAP_CUDA)) {
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "could not map upstream's CUDA memory");
      return FALSE;
    }
    planes_from_info (&src, &self->vinfo, TRUE, (guintptr) map.data);
    for (i = 0; meta && i < meta->n_planes; i++) {
      src.offset[i] = meta->offset[i];
      src.stride[i] = meta->stride[i];
    }
  } else if (in_sys_slot) {
    planes_from_info (&src, &self->vinfo, FALSE,
        (guintptr) self->alloc->data[slot]);
  } else {
    if (!gst_video_frame_map (&frame, &self->vinfo, buf, GST_MAP_READ)) {
      g_set_error (error, GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL,
          "could not map the frame");
      return FALSE;
    }
    mapped_frame = TRUE;
    planes_from_info (&src, &self->vinfo, FALSE, 0);
    for (i = 0; i < GST_VIDEO_FRAME_N_PLANES (&frame); i++) {
      src.offset[i] = (gsize) GST_VIDEO_FRAME_PLANE_DATA (&frame, i);
      src.stride[i] = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i);
    }
  }
  ok = gpushare_cuda_ring_copy_in (ring, slot, &self->vinfo, &src, &dst,
      error);
  if (mem)
    gst_memory_unmap (mem, &map);
  if (mapped_frame)
    gst_video_frame_unmap (&frame);
  return ok;
}
#endif

static void
learn_liveness (GstGpuShareSink * self)
{
  gboolean live = FALSE, upstream_live = FALSE;
  GstClockTime min = 0, max = 0;
  guint i;

  gst_base_sink_query_latency (GST_BASE_SINK (self), &live, &upstream_live,
      &min, &max);
  g_mutex_lock (&self->lock);
  self->live_known = TRUE;
  self->live = upstream_live;
  self->latency = upstream_live ? min : GST_CLOCK_TIME_NONE;
  GST_DEBUG_OBJECT (self, "upstream is %slive", upstream_live ? "" : "not ");
  /* tell consumers the liveness and latency, at this frame boundary */
  if (upstream_live && self->have_layout)
    for (i = 0; i < MAX_CLIENTS; i++)
      if (self->clients[i] && self->clients[i]->state != CLIENT_CONNECTED)
        send_caps (self, self->clients[i]);
  g_mutex_unlock (&self->lock);
}

/* lock held.  A thread starts or stops waiting for a free slot: leases run
 * while any does (render, and upstream in our pool, may both wait). */
static void
slot_wait_begin (GstGpuShareSink * self)
{
  if (self->n_waiting++ == 0)
    self->waiting_since = g_get_monotonic_time ();
}

static void
slot_wait_end (GstGpuShareSink * self)
{
  g_return_if_fail (self->n_waiting > 0);
  if (--self->n_waiting == 0)
    self->waiting_since = 0;
}

/* lock held.  A ring with quarantined slots is replaced by a new one of
 * the same layout (a new epoch, as for a caps change): every consumer maps
 * the new ring, the old one lives on only in the mappings of those that
 * still read it. */
static gboolean
replace_ring (GstGpuShareSink * self, GError ** error)
{
  GpuShareAllocation *alloc;
  guint n_slots = self->ring.n_slots, tainted, i;

  tainted = gpushare_ring_n_tainted (&self->ring);
  alloc = gpushare_allocation_new (&gpushare_sysmem_backend, self->epoch + 1,
      n_slots, self->alloc->slot_size, error);
  if (!alloc)
    return FALSE;
  g_clear_pointer (&self->alloc, gpushare_allocation_unref);
  self->alloc = alloc;
  self->epoch = alloc->epoch;
  gpushare_ring_init (&self->ring, n_slots, self->epoch);
  memset (self->sent_at, 0, sizeof (self->sent_at));
  self->rings_replaced++;
  GST_WARNING_OBJECT (self, "ring replaced (epoch %" G_GUINT64_FORMAT "): %u "
      "of its %u slots were quarantined", self->epoch, tainted, n_slots);
  /* as for a caps change: the new ring's layout, then its slots */
  self->layout.epoch = self->epoch;
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c || c->state == CLIENT_CONNECTED)
      continue;
    send_caps (self, c);
    if (c->state == CLIENT_EXPORTED || c->state == CLIENT_READY)
      send_slots (self, c);
  }
  g_cond_broadcast (&self->cond);
  return TRUE;
}

static GstFlowReturn
gst_gpu_share_sink_render (GstBaseSink * bsink, GstBuffer * buf)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  GstGpuShareSlowPolicy policy;
  GpuShareMsg msg = { 0, };
  GpuShareFrame *f = &msg.u.frame;
  gboolean wait_for_connection, need_sys, in_sys_slot = FALSE;
  guint32 need_gpu;             /* GPU memory types to write */
  guint64 holders = 0;
  guint slot, i, n_ready, quota;

  if (!self->live_known)
    learn_liveness (self);
  policy = effective_policy (self);
  GST_OBJECT_LOCK (self);
  wait_for_connection = self->wait_for_connection;
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&self->lock);
  if (!self->alloc) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before data"),
        (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
again:
  if (gpushare_ring_n_tainted (&self->ring) > 0) {
    GError *error = NULL;

    if (!replace_ring (self, &error)) {
      g_mutex_unlock (&self->lock);
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Could not replace the slot ring"), ("%s", error->message));
      g_clear_error (&error);
      return GST_FLOW_ERROR;
    }
  }
  while (wait_for_connection && n_ready_clients (self) == 0) {
    GST_LOG_OBJECT (self, "waiting for a consumer");
    if (!wait_locked (self))
      goto flushing;
  }
  while (policy == GST_GPU_SHARE_POLICY_LOSSLESS
      && n_remapping_clients (self) > 0) {
    GST_LOG_OBJECT (self, "waiting for consumers to map the new ring");
    if (!wait_locked (self))
      goto flushing;
  }

  memory_needs (self, &need_sys, &need_gpu);
  /* with nobody there, keep the system-memory slot current as before */
  if (!need_sys && !need_gpu && !is_gpu_buffer (buf))
    need_sys = TRUE;
  if (is_current_slot (self, buf, &slot)) {
    self->frames_in_place++;
    in_sys_slot = TRUE;
  } else {
    gboolean waiting = FALSE;

    for (;;) {
      if (gpushare_ring_acquire (&self->ring, &slot) == GPUSHARE_RING_OK)
        break;
      if (gpushare_ring_n_tainted (&self->ring) > 0) {
        /* a consumer was dropped meanwhile: its slots are quarantined */
        if (waiting)
          slot_wait_end (self);
        goto again;
      }
      if (policy == GST_GPU_SHARE_POLICY_LEAKY) {
        /* every slot is taken: drop this frame, never wait */
        self->frames_dropped++;
        g_mutex_unlock (&self->lock);
        GST_LOG_OBJECT (self, "no free slot: frame dropped");
        return GST_FLOW_OK;
      }
      if (!waiting) {
        slot_wait_begin (self);
        waiting = TRUE;
      }
      if (!wait_locked (self)) {
        slot_wait_end (self);
        goto flushing;
      }
    }
    if (waiting)
      slot_wait_end (self);
  }
  if (!in_sys_slot && need_sys) {
    g_mutex_unlock (&self->lock);
    /* only we write a slot in WRITING state: copy without the lock */
    if (!copy_into_slot (self, buf, slot)) {
      g_mutex_lock (&self->lock);
      gpushare_ring_abort (&self->ring, slot);
      g_mutex_unlock (&self->lock);
      GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not copy a frame"),
          (NULL));
      return GST_FLOW_ERROR;
    }
    g_mutex_lock (&self->lock);
    self->frames_copied++;
    in_sys_slot = TRUE;
  }
#ifdef HAVE_CUDA
  for (i = 0; i < 32; i++) {
    GError *error = NULL;

    if (!(need_gpu & (1u << i)))
      continue;
    if (!write_gpu_slot (self, 1u << i, buf, slot, in_sys_slot, &error)) {
      gpushare_ring_abort (&self->ring, slot);
      g_mutex_unlock (&self->lock);
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Could not write a frame into GPU memory"), ("%s",
              error->message));
      g_clear_error (&error);
      return GST_FLOW_ERROR;
    }
  }
  if (need_gpu)
    self->frames_to_gpu++;
#endif

  self->sequence++;
  gpushare_ring_ready (&self->ring, slot, self->sequence);

  n_ready = n_ready_clients (self);
  /* leaky: each consumer may hold its share of the ring, one slot always
   * stays with the producer */
  quota = MAX (1, (self->ring.n_slots - 1) / MAX (1, n_ready));
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c)
      continue;
    if (c->state != CLIENT_READY || c->mapped_epoch != self->epoch
        || (c->mem_type == GPUSHARE_MEM_SYSTEM ? !in_sys_slot :
            !(need_gpu & c->mem_type))) {
      /* still mapping a new ring (leaky only: lossless waited above), or
       * it joined while this frame was being written */
      if (c->connected_emitted)
        c->frames_dropped++;
      continue;
    }
    if (policy == GST_GPU_SHARE_POLICY_LEAKY
        && gpushare_ring_n_held_by (&self->ring, c->index) >= quota) {
      c->frames_dropped++;
      GST_LOG_OBJECT (self, "client %u holds its share: frame skipped", c->id);
      continue;
    }
    holders |= G_GUINT64_CONSTANT (1) << c->index;
  }
  gpushare_ring_publish (&self->ring, slot, holders);
  self->sent_at[slot] = g_get_monotonic_time ();
#ifdef HAVE_CUDA
  for (i = 0; i < 32; i++) {
    GError *error = NULL;
    guint64 gpu_holders = 0;
    guint j;

    if (!(need_gpu & (1u << i)))
      continue;
    for (j = 0; j < MAX_CLIENTS; j++)
      if ((holders & (G_GUINT64_CONSTANT (1) << j)) && self->clients[j]
          && self->clients[j]->mem_type == (1u << i))
        gpu_holders |= G_GUINT64_CONSTANT (1) << j;
    if (!gpushare_cuda_ring_publish (self->cuda_rings[gpu_index (1u << i)],
            slot, gpu_holders, self->sequence, &error)) {
      g_mutex_unlock (&self->lock);
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Could not signal a frame to the consumers"), ("%s",
              error->message));
      g_clear_error (&error);
      return GST_FLOW_ERROR;
    }
  }
#endif

  msg.type = GPUSHARE_MSG_FRAME;
  f->epoch = self->epoch;
  f->slot = slot;
  f->generation = self->ring.slots[slot].generation;
  f->sequence = self->sequence;
  f->pts = GST_BUFFER_PTS (buf);
  f->dts = GST_BUFFER_DTS (buf);
  f->duration = GST_BUFFER_DURATION (buf);
  f->offset = GST_BUFFER_OFFSET (buf);
  f->offset_end = GST_BUFFER_OFFSET_END (buf);
  f->buffer_flags = GST_MINI_OBJECT_FLAGS (buf) & 0xffff;
  if (self->live && GST_CLOCK_TIME_IS_VALID (f->pts)) {
    GstClockTime rt = gst_segment_to_running_time (&bsink->segment,
        GST_FORMAT_TIME, f->pts);
    GstClockTime rdts = GST_CLOCK_TIME_IS_VALID (f->dts) ?
        gst_segment_to_running_time (&bsink->segment, GST_FORMAT_TIME,
        f->dts) : GST_CLOCK_TIME_NONE;
    guint64 mono = GST_CLOCK_TIME_IS_VALID (rt) ? to_monotonic (self, rt) :
        GST_CLOCK_TIME_NONE;

    if (GST_CLOCK_TIME_IS_VALID (mono)) {
      f->flags |= GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME;
      f->dts = GST_CLOCK_TIME_IS_VALID (rdts) ? mono - rt + rdts :
          GST_CLOCK_TIME_NONE;
      f->pts = mono;
    }
  }

  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c || !(holders & (G_GUINT64_CONSTANT (1) << i)))
      continue;
    /* a failed send drops the client from the control thread, which
     * gives its slots back */
    if (gpushare_conn_send (c->conn, &msg, NULL, 0, NULL))
      c->frames_sent++;
  }
  self->frames_rendered++;
  gpushare_test_point ("sink", "frame");
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " in slot %u for %u "
      "consumers", self->sequence, slot, (guint) __builtin_popcountll
      (holders));
  g_mutex_unlock (&self->lock);
  return GST_FLOW_OK;

flushing:
  g_mutex_unlock (&self->lock);
  {
    /* unlock () woke us: a flush, or a state change to PAUSED.  The base
     * class contract is to wait for preroll and then try again. */
    GstFlowReturn ret = gst_base_sink_wait_preroll (bsink);

    if (ret != GST_FLOW_OK)
      return ret;
  }
  return gst_gpu_share_sink_render (bsink, buf);
}

static gboolean
gst_gpu_share_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);
  guint i;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      g_mutex_lock (&self->lock);
      self->eos = TRUE;
      for (i = 0; i < MAX_CLIENTS; i++)
        if (self->clients[i] && self->clients[i]->state != CLIENT_CONNECTED)
          send_simple (self->clients[i], GPUSHARE_MSG_EOS, self->sequence);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      self->live_known = FALSE;
      self->eos = FALSE;
      g_mutex_unlock (&self->lock);
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

  g_mutex_lock (&self->lock);
  self->flushing = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_gpu_share_sink_unlock_stop (GstBaseSink * bsink)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);

  g_mutex_lock (&self->lock);
  self->flushing = FALSE;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* The pool: buffers that are slots, so upstream writes into shared memory */

#define GST_TYPE_GPU_SHARE_SINK_POOL (gst_gpu_share_sink_pool_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuShareSinkPool, gst_gpu_share_sink_pool, GST,
    GPU_SHARE_SINK_POOL, GstBufferPool);

struct _GstGpuShareSinkPool
{
  GstBufferPool parent;
  GstGpuShareSink *sink;
  GstVideoInfo vinfo;
  gboolean flushing;
};

G_DEFINE_TYPE (GstGpuShareSinkPool, gst_gpu_share_sink_pool,
    GST_TYPE_BUFFER_POOL);

static void
slot_tag_free (gpointer data)
{
  SlotTag *tag = data;

  gpushare_allocation_unref (tag->alloc);
  g_free (tag);
}

static gboolean
pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;
  GstCaps *caps = NULL;

  if (!gst_buffer_pool_config_get_params (config, &caps, NULL, NULL, NULL)
      || !caps || !gst_video_info_from_caps (&self->vinfo, caps))
    return FALSE;
  return GST_BUFFER_POOL_CLASS (gst_gpu_share_sink_pool_parent_class)
      ->set_config (pool, config);
}

static const gchar **
pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_VIDEO_META, NULL };
  return options;
}

/* lock held: lossless waits only while consumers hold slots (they will come
 * back); slots that upstream holds itself would never come back */
static gboolean
pool_may_wait (GstGpuShareSink * sink)
{
  guint i;

  for (i = 0; i < sink->ring.n_slots; i++)
    if (sink->ring.slots[i].state == GPUSHARE_SLOT_HELD)
      return TRUE;
  return FALSE;
}

static GstFlowReturn
pool_acquire_buffer (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;
  GstGpuShareSink *sink = self->sink;
  gboolean leaky = effective_policy (sink) == GST_GPU_SHARE_POLICY_LEAKY;
  GstVideoInfo *vi = &self->vinfo;
  SlotTag *tag;
  GstBuffer *buf;
  guint slot;
  gboolean waiting = FALSE;

  g_mutex_lock (&sink->lock);
  while (sink->alloc && gst_video_info_is_equal (vi, &sink->vinfo)) {
    if (self->flushing) {
      if (waiting)
        slot_wait_end (sink);
      g_mutex_unlock (&sink->lock);
      return GST_FLOW_FLUSHING;
    }
    if (gpushare_ring_acquire (&sink->ring, &slot) == GPUSHARE_RING_OK)
      goto got_slot;
    /* quarantined slots: render replaces the ring, give it a frame */
    if (leaky || !pool_may_wait (sink)
        || gpushare_ring_n_tainted (&sink->ring) > 0)
      break;
    /* the producer waits for a slot: leases run */
    if (!waiting) {
      slot_wait_begin (sink);
      waiting = TRUE;
    }
    g_cond_wait (&sink->cond, &sink->lock);
  }
  if (waiting)
    slot_wait_end (sink);
  g_mutex_unlock (&sink->lock);
  /* no slot to hand out: a plain buffer, copied in at render */
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (vi), NULL);
  goto done;

got_slot:
  if (waiting)
    slot_wait_end (sink);
  tag = g_new0 (SlotTag, 1);
  tag->alloc = gpushare_allocation_ref (sink->alloc);
  tag->slot = slot;
  tag->generation = sink->ring.slots[slot].generation;
  buf = gst_buffer_new_wrapped_full (0, sink->alloc->data[slot],
      sink->alloc->slot_size, 0, GST_VIDEO_INFO_SIZE (vi),
      gpushare_allocation_ref (sink->alloc),
      (GDestroyNotify) gpushare_allocation_unref);
  gst_mini_object_set_qdata (GST_MINI_OBJECT (buf), slot_tag_quark, tag,
      slot_tag_free);
  g_mutex_unlock (&sink->lock);

done:
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (vi), GST_VIDEO_INFO_WIDTH (vi),
      GST_VIDEO_INFO_HEIGHT (vi), GST_VIDEO_INFO_N_PLANES (vi), vi->offset,
      vi->stride);
  *buffer = buf;
  return GST_FLOW_OK;
}

static void
pool_release_buffer (GstBufferPool * pool, GstBuffer * buffer)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;
  GstGpuShareSink *sink = self->sink;
  const SlotTag *tag = slot_tag (buffer);

  /* a slot that never reached render (upstream dropped it) goes back */
  if (tag) {
    g_mutex_lock (&sink->lock);
    if (tag->alloc == sink->alloc
        && sink->ring.slots[tag->slot].state == GPUSHARE_SLOT_WRITING
        && sink->ring.slots[tag->slot].generation == tag->generation) {
      gpushare_ring_abort (&sink->ring, tag->slot);
      g_cond_broadcast (&sink->cond);
    }
    g_mutex_unlock (&sink->lock);
  }
  /* slots are never pooled: the ring is the pool */
  gst_buffer_unref (buffer);
}

static void
pool_flush_start (GstBufferPool * pool)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;

  g_mutex_lock (&self->sink->lock);
  self->flushing = TRUE;
  g_cond_broadcast (&self->sink->cond);
  g_mutex_unlock (&self->sink->lock);
}

static void
pool_flush_stop (GstBufferPool * pool)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) pool;

  g_mutex_lock (&self->sink->lock);
  self->flushing = FALSE;
  g_mutex_unlock (&self->sink->lock);
}

static void
pool_finalize (GObject * object)
{
  GstGpuShareSinkPool *self = (GstGpuShareSinkPool *) object;

  gst_object_unref (self->sink);
  G_OBJECT_CLASS (gst_gpu_share_sink_pool_parent_class)->finalize (object);
}

static void
gst_gpu_share_sink_pool_class_init (GstGpuShareSinkPoolClass * klass)
{
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = pool_finalize;
  pool_class->set_config = pool_set_config;
  pool_class->get_options = pool_get_options;
  pool_class->acquire_buffer = pool_acquire_buffer;
  pool_class->release_buffer = pool_release_buffer;
  pool_class->flush_start = pool_flush_start;
  pool_class->flush_stop = pool_flush_stop;
}

static void
gst_gpu_share_sink_pool_init (GstGpuShareSinkPool * self)
{
}

static gboolean
caps_are_gpu (GstCaps * caps)
{
  GstCapsFeatures *f = gst_caps_get_size (caps) ?
      gst_caps_get_features (caps, 0) : NULL;

  return f && gst_caps_features_contains (f, "memory:CUDAMemory");
}

static void
gst_gpu_share_sink_set_context (GstElement * element, GstContext * context)
{
#ifdef HAVE_CUDA
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (element);

  if (gpushare_gst_cuda_load (NULL))
    gpushare_gst_cuda_handle_set_context (element, context,
        self->cuda_device_id, &self->gst_cuda_ctx);
#endif
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static gboolean
gst_gpu_share_sink_query (GstBaseSink * bsink, GstQuery * query)
{
#ifdef HAVE_CUDA
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (bsink);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT && self->gst_cuda_ctx
      && gpushare_gst_cuda_handle_context_query (GST_ELEMENT (self), query,
          self->gst_cuda_ctx))
    return TRUE;
#endif
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
  /* GPU memory from upstream is copied on the device into a GPU slot:
   * upstream keeps its own CUDA pool */
  if (caps_are_gpu (caps)) {
    gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
    return TRUE;
  }

  if (need_pool) {
    GstGpuShareSinkPool *pool = g_object_new (GST_TYPE_GPU_SHARE_SINK_POOL,
        NULL);
    GstStructure *config;

    gst_object_ref_sink (pool);
    pool->sink = gst_object_ref (self);
    config = gst_buffer_pool_get_config (GST_BUFFER_POOL (pool));
    gst_buffer_pool_config_set_params (config, caps,
        GST_VIDEO_INFO_SIZE (&vinfo), 0, 0);
    gst_buffer_pool_config_add_option (config,
        GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config (GST_BUFFER_POOL (pool), config)) {
      gst_object_unref (pool);
      return FALSE;
    }
    gst_query_add_allocation_pool (query, GST_BUFFER_POOL (pool),
        GST_VIDEO_INFO_SIZE (&vinfo), 0, 0);
    gst_object_unref (pool);
  }
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Properties */

static GstStructure *
make_stats (GstGpuShareSink * self)
{
  GstStructure *s;
  GValue list = G_VALUE_INIT;
  guint i;

  g_value_init (&list, GST_TYPE_ARRAY);
  g_mutex_lock (&self->lock);
  s = gst_structure_new ("application/x-gpushare-sink-stats",
      "epoch", G_TYPE_UINT64, self->epoch,
      "slots-quarantined", G_TYPE_UINT64, self->slots_quarantined,
      "rings-replaced", G_TYPE_UINT64, self->rings_replaced,
      "legacy-rings-retained", G_TYPE_UINT,
#ifdef HAVE_CUDA
      self->retired_legacy ? gpushare_retained_count (self->retired_legacy) :
#endif
      0, "frames-rendered", G_TYPE_UINT64, self->frames_rendered,
      "frames-dropped", G_TYPE_UINT64, self->frames_dropped,
      "frames-in-place", G_TYPE_UINT64, self->frames_in_place,
      "frames-copied", G_TYPE_UINT64, self->frames_copied,
      "frames-to-gpu", G_TYPE_UINT64, self->frames_to_gpu,
      "gpu-memory", G_TYPE_STRING, self->cuda_ok ? "offered" :
      self->cuda_reason ? self->cuda_reason : "not probed",
      "free-slots", G_TYPE_UINT, self->alloc ?
      gpushare_ring_n_free (&self->ring) : 0, NULL);
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];
    GValue v = G_VALUE_INIT;

    if (!c)
      continue;
    g_value_init (&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&v, gst_structure_new ("client",
            "id", G_TYPE_UINT, c->id,
            "pid", G_TYPE_INT, (gint) c->pid,
            "name", G_TYPE_STRING, c->name ? c->name : "",
            "state", G_TYPE_STRING, client_state_to_string (c->state),
            "memory-type", G_TYPE_STRING, c->mem_type ?
            gpushare_mem_type_to_string (c->mem_type) : "none",
            "memory-reason", G_TYPE_STRING, c->mem_reason ? c->mem_reason :
            "handshake not finished",
            "frames-sent", G_TYPE_UINT64, c->frames_sent,
            "frames-released", G_TYPE_UINT64, c->frames_released,
            "frames-dropped", G_TYPE_UINT64, c->frames_dropped,
            "slots-held", G_TYPE_UINT, self->alloc ?
            gpushare_ring_n_held_by (&self->ring, c->index) : 0, NULL));
    gst_value_array_append_and_take_value (&list, &v);
  }
  g_mutex_unlock (&self->lock);
  gst_structure_take_value (s, "clients", &list);
  return s;
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
    case PROP_ALLOWED_UIDS:
      gpushare_ids_from_value (&self->allowed_uids, value);
      break;
    case PROP_ALLOWED_GIDS:
      gpushare_ids_from_value (&self->allowed_gids, value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
  /* a consumer may now be enough, or no longer needed */
  g_mutex_lock (&self->lock);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

static void
gst_gpu_share_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstGpuShareSink *self = GST_GPU_SHARE_SINK (object);

  switch (prop_id) {
    case PROP_NUM_CLIENTS:
      g_mutex_lock (&self->lock);
      g_value_set_uint (value, self->n_clients);
      g_mutex_unlock (&self->lock);
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
    case PROP_ALLOWED_UIDS:
      gpushare_ids_to_value (self->allowed_uids, value);
      break;
    case PROP_ALLOWED_GIDS:
      gpushare_ids_to_value (self->allowed_gids, value);
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

  g_free (self->socket_path);
  g_free (self->cuda_reason);
  g_clear_pointer (&self->allowed_uids, g_array_unref);
  g_clear_pointer (&self->allowed_gids, g_array_unref);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
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

  gobject_class->set_property = gst_gpu_share_sink_set_property;
  gobject_class->get_property = gst_gpu_share_sink_get_property;
  gobject_class->finalize = gst_gpu_share_sink_finalize;

  properties[PROP_SOCKET_PATH] = g_param_spec_string ("socket-path",
      "Socket path", "Path of the Unix socket consumers connect to",
      DEFAULT_SOCKET_PATH, rw);
  properties[PROP_WAIT_FOR_CONNECTION] =
      g_param_spec_boolean ("wait-for-connection", "Wait for connection",
      "Hold the stream until a consumer has mapped the ring",
      DEFAULT_WAIT_FOR_CONNECTION, rw | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_RING_SIZE] = g_param_spec_uint ("ring-size", "Ring size",
      "Number of shared frame slots", 2, GPUSHARE_MAX_SLOTS,
      DEFAULT_RING_SIZE, rw);
  properties[PROP_POLICY] = g_param_spec_enum ("policy", "Slow consumer policy",
      "What a slow consumer costs: auto is leaky for live upstreams and "
      "lossless otherwise", GST_TYPE_GPU_SHARE_SLOW_POLICY, DEFAULT_POLICY,
      rw);
  properties[PROP_SOCKET_MODE] = g_param_spec_uint ("socket-mode",
      "Socket mode", "File mode of the socket (default: owner only)", 0, 0777,
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
  properties[PROP_ALLOWED_UIDS] = gst_param_spec_array ("allowed-uids",
      "Allowed uids", "Consumers of these uids may connect, beside those of "
      "this process's own uid (which always may), e.g. <1000,1001>",
      g_param_spec_uint ("uid", "uid", "A uid", 0, G_MAXUINT32, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS), rw);
  properties[PROP_ALLOWED_GIDS] = gst_param_spec_array ("allowed-gids",
      "Allowed gids", "Consumers whose primary group is one of these may "
      "connect, e.g. <44>", g_param_spec_uint ("gid", "gid", "A gid", 0,
          G_MAXUINT32, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS), rw);
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

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class, "GPU share sink",
      "Sink/Video", "Shares video frames with other processes through a ring "
      "of shared memory slots", "gpushare developers");

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

  slot_tag_quark = g_quark_from_static_string ("gpushare-slot-tag");
  /* kept for the process lifetime, like every registered enum */
  remove_reason_class =
      g_type_class_ref (GST_TYPE_GPU_SHARE_CLIENT_REMOVE_REASON);
  GST_DEBUG_CATEGORY_INIT (gst_gpu_share_sink_debug, "gpusharesink", 0,
      "gpushare producer");
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_CLIENT_REMOVE_REASON, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_SHARE_SLOW_POLICY, 0);
}

static void
gst_gpu_share_sink_init (GstGpuShareSink * self)
{
  self->socket_path = g_strdup (DEFAULT_SOCKET_PATH);
  self->wait_for_connection = DEFAULT_WAIT_FOR_CONNECTION;
  self->ring_size = DEFAULT_RING_SIZE;
  self->policy = DEFAULT_POLICY;
  self->socket_mode = DEFAULT_SOCKET_MODE;
  self->max_clients = DEFAULT_MAX_CLIENTS;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->handshake_timeout = DEFAULT_HANDSHAKE_TIMEOUT;
  self->lease_timeout = DEFAULT_LEASE_TIMEOUT;
  self->max_pending = DEFAULT_MAX_PENDING;
  self->heartbeat_interval = DEFAULT_HEARTBEAT_INTERVAL;
  self->listen_fd = -1;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  /* frames go out as soon as they arrive; a live consumer syncs itself */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
}
