/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The consumer core (gpushareclient.h).
 */

#include "gpushareclient.h"
#include "gpushareside.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <gst/gst.h>

#include "gpushareconn.h"
#include "gpusharecontrol.h"
#include "gpushareframemeta.h"
#include "gpushareids.h"
#include "gpusharelane.h"
#include "gpusharenegotiate.h"
#include "gpusharering.h"
#include "gpusharetest.h"
#include "gpusharevideo.h"

GST_DEBUG_CATEGORY_STATIC (gpushare_client_debug);
#define GST_CAT_DEFAULT gpushare_client_debug

#define RETRY_MIN_MS 10
#define RETRY_MAX_MS 250
#define GOODBYE_FLUSH_MS 100
/* after the end of the stream the lane is drained every so often by the
 * control thread: its frames go back unread */
#define LANE_DRAIN_MS 20
/* the longest the streaming thread sleeps on the lane's bell before it
 * looks again: the producer wakes it when it writes, but a wake-up lost
 * (a producer that does not ring, whatever the reason) then costs at most
 * this, never a stream that stops; ten looks a second cost nothing */
#define LANE_SLEEP_MAX_US (100 * 1000)
/* wake-ahead: the gaps between a producer's frames looked at, and the
 * most any of them may be off their median for the cadence to count as
 * steady (a quarter); gaps longer than CADENCE_MAX_GAP_US break it */
#define CADENCE_FRAMES 8
#define CADENCE_MAX_GAP_US (10 * G_USEC_PER_SEC)
/* an item of the lane's kind only: the META of the next frame */
#define ITEM_META ((GpuShareClientItemType) 100)
/* EVENTs of the producer waiting for the streaming thread, at most
 * (docs/security.md, promise 5) */

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
} ClientState;

/* What frames need after the client let go: the connection, to send
 * releases, and the view, to check them.  Reference counted because a
 * buffer may outlive the client's session. */
typedef struct
{
  gint ref_count;
  GMutex lock;
  GpuShareConn *conn;           /* NULL once the session is over */
  GpuShareSlotView view;
  /* live frames read in place from a slot of the ring of epoch
   * in_place_epoch, the newest one frames were made of: the slots of a
   * replaced ring are no longer the producer's to write, nor to wait for */
  guint n_in_place;
  guint64 in_place_epoch;
  /* the frame lane, if the producer gave one (LANE): read by the
   * streaming thread, then after the end of the stream by the control
   * thread; freed with the last reference.  lane_mapping is the mapping
   * the lane's frames are of now, lane_mappings (Mapping) the rings mapped
   * since, whose frames are still to come in it; both under lock */
  GpuShareLane *lane;
  struct _Mapping *lane_mapping;
  GQueue lane_mappings;
  /* the producer (minor 8 on) counts what it reads of the lane, our
   * releases, as hearing from us (under lock, with lane) */
  gboolean lane_alive;
} Session;

/* The consumer's mapping of a ring: frames queued for the streaming thread
 * keep it alive across a caps change.  Once a GPU mapping is closed, the
 * producer hears so (UNMAPPED): it may then free a retired ring (legacy IPC) of an
 * earlier epoch, which it may not while a process has it open. */
typedef struct _Mapping
{
  gint ref_count;
  GpuShareXferView *view;
  GpuShareSide *side;           /* the ring's side memory, or NULL */
  /* bytes of each GPU slot's room past the frame (since minor 11), where
   * payloads in GPU memory lie; 0: none */
  gsize device_offset;
  gsize device_size;
  Session *session;
  /* in its client's live mappings (under live_lock; client NULL once the
   * client is freed): a flush ends the reads of each */
  struct _GpuShareClient *client;
  GList live_link;
} Mapping;

/* a mapping outlives its client where a buffer does */
G_LOCK_DEFINE_STATIC (live_lock);

/* reference counted: a buffer of the frame, and the metas' payloads read
 * in place from its slot's side memory, each hold it */
struct _GpuShareClientFrame
{
  gint ref_count;
  GpuShareFrame info;
  Session *session;
  Mapping *mapping;
  gboolean in_place;            /* counted in session->n_in_place */
  GpuShareFrameMetas *meta;     /* its metas, or NULL */
  gint64 received_us;           /* monotonic: its FRAME was read */
};

typedef struct
{
  GpuShareClientItemType type;
  GpuShareLayout *layout;
  GpuShareClientFrame *frame;
  guint64 missed;               /* FRAME: the producer's frames before it
                                 * that never came */
  GpuShareEvent *event;         /* EVENT */
  GpuShareFrameMetas *meta;     /* ITEM_META */
  guint64 last_sequence;        /* EOS: the producer's last frame */
  gboolean after_lane;          /* with a lane: once it has nothing left
                                 * (the producer is lost) */
  guint64 mark;                 /* with a lane: the MARK it takes its place
                                 * at; 0 before the lane */
} Item;

struct _GpuShareClient
{
  GpuShareClientConfig config;
  gpointer log_object;
  GpuShareClientEventFunc event_func;
  gpointer user_data;

  /* control thread */
  GMainContext *context;        /* run by the process's control thread */
  gboolean attached;
  gint64 deadline;
  guint retry_ms;

  /* under lock */
  GMutex lock;
  GCond cond;
  ClientState state;
  Session *session;
  GQueue items;
  GQueue events;                /* GpuShareClientEvent, to deliver */
  gboolean flushing;
  GQuark error_domain;
  gint error_code;
  gchar *error_text;
  gchar *error_debug;
  const gchar *error_file;      /* where the error was found (static) */
  const gchar *error_function;
  gint error_line;
  GpuShareLayout pending;       /* announced, slots not yet mapped */
  /* the shape of the ring mapped now (epoch 0: none), as its SLOTS said
   * and the import checked */
  guint64 mapped_epoch;
  guint mapped_n_slots;
  guint64 mapped_slot_size;
  Mapping *mapping;             /* the current mapping */
  /* every mapping of this client still alive, the current one and those
   * of replaced rings that frames keep (Mapping, under live_lock) */
  GQueue live;
  /* the views whose waits a flush under way ended (references), let go
   * of when it ends */
  GPtrArray *cancelled;
  /* downstream takes fd memory: -1 not known yet (the views keep their
   * slots' fds), 0 no (they close them), 1 yes */
  gint fd_memory;
  GpuShareMemType mem_type;
  GpuShareSyncMode sync_mode;
  gchar *mem_reason;
  gint peer_device;             /* the producer's GPU when not ours, or -1 */
  gboolean producer_live;
  guint64 latency;
  guint64 producer_instance;
  guint producer_minor;         /* of its protocol version */
  gint producer_pid;            /* SO_PEERCRED of the connection */
  gchar *producer_name;         /* announced */
  guint64 frames_received;
  guint64 frames_missed;
  /* a leaky producer's word: our share (the last FRAME's), and whether it
   * said it skips us (NOTICE STALLED), as of its frame stall_sequence;
   * a FRAME ends that */
  guint share;
  gboolean stalled;
  guint64 stall_sequence;
  /* EVENT items queued, and those dropped past GPUSHARE_CLIENT_MAX_QUEUED_EVENTS */
  guint n_queued_events;
  guint64 events_dropped;
  /* the META of the next FRAME, checked */
  GpuShareFrameMetas *pending_meta;
  guint reconnects;
  gboolean discont;             /* the next frame starts a new producer */
  /* with a lane: the ordered messages received (CAPS, META, EVENT, EOS),
   * the MARKs read from the lane, the META of the next frame read from
   * it, and whether the streaming thread is done with it (EOS) */
  guint64 lane_marks_received;
  guint64 lane_mark_now;        /* of the message handled now; 0: none */
  guint64 lane_marks_read;
  GpuShareFrameMetas *lane_meta;
  gboolean lane_reader_done;
  /* the failure is the producer's death: what it wrote into the lane
   * before goes downstream first */
  gboolean error_after_lane;
  gboolean latency_changed;     /* not yet said with a frame */
  /* the epoch of the layout of the last CAPS item handed out: the frames
   * handed out after it are of its ring */
  guint64 out_epoch;
  /* entries read from the lane since: at most a lane's worth (what the
   * producer can have written before it left) */
  guint lane_read_after_error;
  GSource *lane_drain;
  /* heads-up: the frames a spin caught, the spins that missed, the
   * microseconds spun in all */
  guint64 lane_metas;
  guint64 lane_spins;
  guint64 lane_spin_misses;
  guint64 lane_spin_us;
  /* wake-ahead: the gaps between the producer's last frames in the lane
   * (its write times, never later than our clock), the last one's time,
   * whether the streaming thread polled for the next one already */
  gint64 cadence_gap[CADENCE_FRAMES];
  guint cadence_n;
  guint cadence_next;
  gint64 cadence_last_us;
  gboolean early_done;
  gboolean early_woken;         /* a poll of this window ran */
  gboolean early_caught;        /* the last poll ended with an entry */
  guint64 lane_early_wakes;
  guint64 lane_early_hits;

  /* the GPU, probed at start */
  gboolean gpu_ok;
  gchar *gpu_reason;
  GpuShareGpuInfo gpu;
};

static void wake (GpuShareClient * self);

static const gchar *
state_to_string (ClientState state)
{
  static const gchar *names[] = { "idle", "connecting", "connected",
    "accepted", "ready", "remap", "done", "failed"
  };
  return names[state];
}

/* lock held; the one place the state changes */
static void
set_state (GpuShareClient * self, ClientState state)
{
  GST_DEBUG_OBJECT (self->log_object, "%s -> %s", state_to_string
      (self->state), state_to_string (state));
  self->state = state;
  wake (self);
}

/* lock held: the streaming thread looks again at what it waits for,
 * asleep on the condition or on its lane's bell */
static void
wake (GpuShareClient * self)
{
  g_cond_broadcast (&self->cond);
  if (self->session && self->session->lane)
    gpushare_lane_ring (self->session->lane);
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
  gpushare_lane_free (s->lane);
  g_mutex_clear (&s->lock);
  g_free (s);
}

static GpuShareClientFrame *
frame_new (void)
{
  GpuShareClientFrame *f = g_new0 (GpuShareClientFrame, 1);

  f->ref_count = 1;
  return f;
}

static Mapping *
mapping_ref (Mapping * m)
{
  g_atomic_int_inc (&m->ref_count);
  return m;
}

static void
mapping_unref (Mapping * m)
{
  Session *s = m->session;
  guint64 epoch = m->view->epoch;
  gboolean tell = !gpushare_mem_type_is_host (m->view->mem_type);

  if (!g_atomic_int_dec_and_test (&m->ref_count))
    return;
  G_LOCK (live_lock);
  if (m->client)
    g_queue_unlink (&m->client->live, &m->live_link);
  G_UNLOCK (live_lock);
  /* unmapping GPU slots is device work too */
  gpushare_conn_busy_begin ();
  gpushare_xfer_view_unref (m->view);
  gpushare_conn_busy_end ();
  g_clear_pointer (&m->side, gpushare_side_unref);
  g_mutex_lock (&s->lock);
  if (tell && s->conn)
    gpushare_conn_send_mapped (s->conn, GPUSHARE_MSG_UNMAPPED, epoch);
  g_mutex_unlock (&s->lock);
  session_unref (s);
  g_free (m);
}

/* a reference to m, unless its last one is being let go (under
 * live_lock, where the client's list has it until then) */
static gboolean
mapping_try_ref (Mapping * m)
{
  gint n;

  do {
    n = g_atomic_int_get (&m->ref_count);
    if (n == 0)
      return FALSE;
  } while (!g_atomic_int_compare_and_exchange (&m->ref_count, n, n + 1));
  return TRUE;
}

static void
mapping_uncancel (gpointer data)
{
  Mapping *m = data;

  gpushare_xfer_view_cancel (m->view, FALSE);
  mapping_unref (m);
}

/* lock held, flushing, m a reference of ours: the waits of the reads of
 * m's ring end until the flush does.  The mapping, not only its view, is
 * kept until then: the producer hears UNMAPPED only once the ring is */
static void
cancel_mapping (GpuShareClient * self, Mapping * m)
{
  if (!self->cancelled)
    self->cancelled = g_ptr_array_new_with_free_func (mapping_uncancel);
  gpushare_xfer_view_cancel (m->view, TRUE);
  g_ptr_array_add (self->cancelled, m);
}

/* bytes of a slot's region of m's side memory; 0: none (or no m) */
static gsize
mapping_side_size (Mapping * m)
{
  return m && m->side ? gpushare_side_region_size (m->side) : 0;
}

/* bytes of a GPU slot's room past the frame, of m; 0: none (or no m) */
static gsize
mapping_device_size (Mapping * m)
{
  return m ? m->device_size : 0;
}

/* m checked against the side memory and the GPU room of mapping, the
 * time it took kept with it */
static gboolean
check_metas (GpuShareFrameMetas * m, Mapping * mapping, gchar ** why)
{
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok = gpushare_frame_meta_check_side (m, mapping_side_size (mapping),
      mapping_device_size (mapping), why);

  m->check_us = (guint64) (g_get_monotonic_time () - t0);
  return ok;
}

static GpuShareClientEvent *
queue_event (GpuShareClient * self, GpuShareClientEventType type)
{
  GpuShareClientEvent *ev = g_new0 (GpuShareClientEvent, 1);

  ev->type = type;
  g_queue_push_tail (&self->events, ev);
  return ev;
}

/* lock NOT held */
static void
deliver_events (GpuShareClient * self)
{
  GQueue events;
  GpuShareClientEvent *ev;
  gchar *reason, *name;

  g_mutex_lock (&self->lock);
  events = self->events;
  g_queue_init (&self->events);
  reason = g_strdup (self->mem_reason);
  name = g_strdup (self->producer_name);
  g_mutex_unlock (&self->lock);
  while ((ev = g_queue_pop_head (&events))) {
    ev->mem_type = self->mem_type;
    ev->reason = reason;
    ev->producer_name = name;
    if (self->event_func)
      self->event_func (self, ev, self->user_data);
    g_free (ev);
  }
  g_free (reason);
  g_free (name);
}

/* ------------------------------------------------------------------------ */
/* Frames */

/* session lock held: the slot of frame f goes back to the producer, once,
 * while the session lasts and f's ring is the one mapped (the producer
 * ignores releases of replaced rings anyway) */
static void
send_release (Session * s, const GpuShareFrame * f)
{
  GpuShareRelease r;

  if (!s->conn || s->view.epoch != f->epoch
      || gpushare_slot_view_release (&s->view, f->slot,
          f->generation) != GPUSHARE_RING_OK)
    return;
  r.epoch = f->epoch;
  r.slot = f->slot;
  r.generation = f->generation;
  r.sequence = f->sequence;
  /* with a lane, it goes there: the producer reads it when it next needs
   * a slot, and is woken by a PING only if it waits for one now.  A lane
   * the producer left full takes no more: the socket does. */
  if (s->lane) {
    gboolean kick;

    if (gpushare_lane_release_push (s->lane, &r, &kick) == GPUSHARE_LANE_OK) {
      /* what the producer read of our releases it counts as hearing
       * from us: no PING on the socket while it reads them */
      if (s->lane_alive)
        gpushare_conn_note_heard (s->conn, gpushare_lane_heard_us (s->lane));
      if (kick)
        gpushare_conn_send_ping (s->conn);
      return;
    }
  }
  gpushare_conn_send_release (s->conn, &r);
}

gint64
gpushare_client_frame_received (GpuShareClientFrame * f)
{
  return f->received_us;
}

GpuShareFrameMetas *
gpushare_client_frame_take_meta (GpuShareClientFrame * f)
{
  return g_steal_pointer (&f->meta);
}

const GpuShareFrame *
gpushare_client_frame_info (GpuShareClientFrame * f)
{
  return &f->info;
}

GpuShareXferView *
gpushare_client_frame_view (GpuShareClientFrame * f)
{
  return f->mapping->view;
}

gboolean
gpushare_client_frame_hold_in_place (GpuShareClientFrame * f, guint max)
{
  Session *s = f->session;

  /* gpushare_client_frame_release () runs in any thread, under the
   * session's lock */
  g_mutex_lock (&s->lock);
  /* frames come in order: a newer epoch starts a new count */
  if (f->info.epoch != s->in_place_epoch) {
    s->in_place_epoch = f->info.epoch;
    s->n_in_place = 0;
  }
  f->in_place = s->n_in_place < max;
  if (f->in_place)
    s->n_in_place++;
  g_mutex_unlock (&s->lock);
  return f->in_place;
}

/* frees f; with give_back, its slot goes back to the producer */
static void
frame_free (GpuShareClientFrame * f, gboolean give_back)
{
  Session *s = f->session;

  g_mutex_lock (&s->lock);
  if (give_back)
    send_release (s, &f->info);
  if (f->in_place && f->info.epoch == s->in_place_epoch)
    s->n_in_place--;
  g_mutex_unlock (&s->lock);
  mapping_unref (f->mapping);
  session_unref (s);
  g_free (f->meta);
  g_free (f);
}

GpuShareClientFrame *
gpushare_client_frame_ref (GpuShareClientFrame * f)
{
  g_atomic_int_inc (&f->ref_count);
  return f;
}

void
gpushare_client_frame_release (GpuShareClientFrame * f)
{
  if (g_atomic_int_dec_and_test (&f->ref_count))
    frame_free (f, TRUE);
}

gboolean
gpushare_client_frame_in_place (GpuShareClientFrame * f)
{
  return f->in_place;
}

void
gpushare_client_frame_copied (GpuShareClientFrame * f)
{
  Session *s = f->session;

  g_mutex_lock (&s->lock);
  if (f->in_place && f->info.epoch == s->in_place_epoch)
    s->n_in_place--;
  f->in_place = FALSE;
  g_mutex_unlock (&s->lock);
}

gsize
gpushare_client_frame_device_room (GpuShareClientFrame * f, gsize * offset)
{
  *offset = f->mapping->device_offset;
  return f->mapping->device_size;
}

guint8 *
gpushare_client_frame_side (GpuShareClientFrame * f, gsize * size)
{
  GpuShareSide *side = f->mapping->side;

  *size = side ? gpushare_side_region_size (side) : 0;
  return side ? gpushare_side_region (side, f->info.slot) : NULL;
}

static void
item_free (Item * item)
{
  g_free (item->layout);
  if (item->frame)
    gpushare_client_frame_release (item->frame);
  g_free (item->event);
  g_free (item->meta);
  g_free (item);
}

void
gpushare_client_item_clear (GpuShareClientItem * item)
{
  if (item->frame)
    gpushare_client_frame_release (item->frame);
  g_free (item->error_text);
  g_free (item->error_debug);
  g_clear_pointer (&item->event, g_free);
  memset (item, 0, sizeof (*item));
}

/* ------------------------------------------------------------------------ */
/* The control plane, lock held */

/* a fatal problem, reported to the streaming thread with the place that
 * found it (fail () and producer_error () give theirs) */
static void
fail_at (GpuShareClient * self, GQuark domain, gint code, const gchar * text,
    const gchar * debug, const gchar * file, const gchar * function, gint line)
{
  if (self->state == STATE_FAILED)
    return;
  GST_WARNING_OBJECT (self->log_object, "%s: %s", text, debug ? debug : "");
  self->error_file = file;
  self->error_function = function;
  self->error_line = line;
  self->error_domain = domain;
  self->error_code = code;
  self->error_after_lane = FALSE;
  g_free (self->error_text);
  self->error_text = g_strdup (text);
  g_free (self->error_debug);
  self->error_debug = g_strdup (debug);
  set_state (self, STATE_FAILED);
}

#define fail(self, domain, code, text, debug) \
  fail_at (self, domain, code, text, debug, __FILE__, G_STRFUNC, __LINE__)

/* the producer broke the protocol; tell it and give up */
static void
producer_error_at (GpuShareClient * self, const gchar * debug,
    const gchar * file, const gchar * function, gint line)
{
  GpuShareConn *conn = self->session ? self->session->conn : NULL;

  /* queued: it leaves with the GOODBYE that ends the session, whose
   * flush waits for both (not under our lock) */
  if (conn)
    gpushare_conn_send_error (conn, GPUSHARE_ERR_PROTOCOL, debug);
  fail_at (self, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      "The producer sent an invalid message", debug, file, function, line);
}

#define producer_error(self, debug) \
  producer_error_at (self, debug, __FILE__, G_STRFUNC, __LINE__)

/* the layout, checked, or FALSE after a protocol error that says what is
 * wrong with it */
static gboolean
layout_ok (GpuShareClient * self, const GpuShareLayout * layout)
{
  GstVideoInfo vinfo;
  gchar *why = NULL;
  GstCaps *caps = gpushare_video_layout_to_caps (layout, &vinfo, &why);

  if (!caps) {
    gchar *debug = g_strdup_printf ("bad layout: %s", why);

    producer_error (self, debug);
    g_free (debug);
    g_free (why);
    return FALSE;
  }
  gst_caps_unref (caps);
  return TRUE;
}

/* queue a caps item for the streaming thread */
static gboolean
queue_caps (GpuShareClient * self, const GpuShareLayout * layout)
{
  Item *item;

  GList *l;

  if (!layout_ok (self, layout))
    return FALSE;
  /* caps that no frame followed yet are superseded, not queued again:
   * a producer that sends CAPS and no FRAME grows nothing here (the
   * frames queued are bounded by the slots, so are the caps).  With a
   * lane, each has its place there (bounded by the lane, lane_mark ()) */
  for (l = self->lane_mark_now ? NULL : self->items.tail; l; l = l->prev) {
    item = l->data;
    if (item->type == GPUSHARE_CLIENT_ITEM_FRAME)
      break;
    if (item->type == GPUSHARE_CLIENT_ITEM_CAPS) {
      *item->layout = *layout;
      wake (self);
      return TRUE;
    }
  }
  item = g_new0 (Item, 1);
  item->type = GPUSHARE_CLIENT_ITEM_CAPS;
  item->mark = self->lane_mark_now;
  item->layout = g_memdup2 (layout, sizeof (*layout));
  g_queue_push_tail (&self->items, item);
  wake (self);
  return TRUE;
}

/* said with the next frame (GpuShareClientItem.latency_changed): a
 * producer that changed it in every CAPS, with no frame between, had a
 * bus message posted for each */
static void
update_latency (GpuShareClient * self, guint32 flags, guint64 latency)
{
  if (self->latency != latency && latency != G_MAXUINT64)
    self->latency_changed = TRUE;
  self->latency = latency;
  self->producer_live = (flags & GPUSHARE_STREAM_FLAG_LIVE) != 0;
}

/* Picks this consumer's memory type and synchronisation for what the
 * producer offers (gpusharenegotiate.h); sets mem_reason either way.
 * FALSE when nothing fits (a forced transport that cannot work
 * included).  Lock held, let go while the producer's GPU is probed. */
static gboolean
choose_memory (GpuShareClient * self, const GpuShareAnnounce * a)
{
  gint transport = self->config.transport;
  GpuShareGpu gpu;
  GpuSharePeerProbe probe = { 0, };
  GpuSharePeerInfo info = { 0, };
  GpuShareNegotiation n;
  gboolean peer = FALSE, ok;

  gpushare_xfer_gpu_describe (&self->gpu, self->gpu_ok, self->gpu_reason, &gpu);
  gpu.device = self->config.cuda_device_id;
  gpu.copies = self->config.copies;
  if (self->producer_pid == 0)
    gpu.no_ipc_handles = GPUSHARE_NEGOTIATE_OTHER_PID_NS;
  if (gpushare_negotiate_needs_peer_probe (a, &gpu, transport)) {
    /* device queries: without the lock */
    g_mutex_unlock (&self->lock);
    gpushare_xfer_gpu_peer (self->config.cuda_device_id, a->device.uuid, &info);
    g_mutex_lock (&self->lock);
    probe.visible = info.visible;
    probe.owner = info.owner;
    probe.peer_ok = info.reachable;
    probe.error = info.error;
    probe.atomics = info.atomics;
    probe.rank = info.rank;
    peer = TRUE;
  }
  ok = gpushare_negotiate_consumer (a, &gpu, peer ? &probe : NULL, transport,
      (GpuShareSyncRequest) self->config.sync, gpushare_xfer_policies (), &n);
  if (ok)
    self->mem_type = n.mem_type;
  self->sync_mode = n.sync_mode;
  self->peer_device = n.peer_device;
  g_free (self->mem_reason);
  self->mem_reason = n.reason;
  n.reason = NULL;
  gpushare_negotiation_clear (&n);
  gpushare_peer_info_clear (&info);
  return ok;
}

static void
handle_announce (GpuShareClient * self, const GpuShareAnnounce * a)
{
  GpuShareAccept *acc;
  const gchar *name = self->config.name ? self->config.name : "";

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
  g_free (self->producer_name);
  self->producer_name = g_strndup (a->name, a->name_len);

  acc = g_new0 (GpuShareAccept, 1);
  acc->sync_mode = self->sync_mode;
  if (self->gpu_ok)
    memcpy (acc->uuid, self->gpu.uuid, 16);
  acc->reason_len = gpushare_utf8_prefix (self->mem_reason,
      GPUSHARE_MAX_REASON_LEN);
  memcpy (acc->reason, self->mem_reason, acc->reason_len);
  acc->schema_major = GPUSHARE_VERSION_MAJOR;
  acc->schema_minor = GPUSHARE_VERSION_MINOR;
  acc->flags = self->config.lane ? GPUSHARE_ACCEPT_FLAG_LANE |
      GPUSHARE_ACCEPT_FLAG_HEADS_UP | GPUSHARE_ACCEPT_FLAG_LANE_METAS : 0;
  acc->mem_type = self->mem_type;
  acc->pid = getpid ();
  acc->instance = a->instance;
  acc->name_len = gpushare_utf8_prefix (name, GPUSHARE_MAX_NAME_LEN);
  memcpy (acc->name, name, acc->name_len);
  gpushare_conn_send_accept (self->session->conn, acc);
  g_free (acc);
  set_state (self, STATE_ACCEPTED);
  gpushare_test_point ("src", "accept");
  GST_INFO_OBJECT (self->log_object, "transport: %s (%s)",
      gpushare_mem_type_to_string (self->mem_type), self->mem_reason);
}

/* lock held, let go while the ring is mapped (device work).  Takes every
 * fd.  FALSE when the session ended meanwhile or the map failed. */
static gboolean
map_slots (GpuShareClient * self, const GpuShareSlots * s, gint * fds)
{
  Session *session = session_ref (self->session);
  GpuShareXferView *view;
  GpuShareSide *side = NULL;
  GError *error = NULL;
  gint side_fd = -1;
  Mapping *m;

  /* the side memory's fd, last (since minor 10): mapped on its own */
  if (s->side_pages) {
    guint last = gpushare_slots_n_fds (s) - 1;

    side_fd = fds[last];
    fds[last] = -1;
  }
  g_mutex_unlock (&self->lock);
  /* the control thread may have many rings to map in a row (a process
   * that reads many streams, a ring grown): the peers of all its
   * connections hear from it meanwhile */
  gpushare_conn_pulse ();
  /* and while one map takes long */
  gpushare_conn_busy_begin ();
  gpushare_test_slow ("src", "premap");
  view = gpushare_xfer_view_new (self->config.cuda_device_id, s, fds, &error);
  if (view && side_fd >= 0) {
    side = gpushare_side_view_new (side_fd, s->n_slots, s->side_pages, &error);
    if (!side)
      g_clear_pointer (&view, gpushare_xfer_view_unref);
  } else if (side_fd >= 0) {
    close (side_fd);
  }
  gpushare_conn_busy_end ();
  g_mutex_lock (&self->lock);
  if (self->session != session) {
    /* stopped, or lost, while it was mapped */
    session_unref (session);
    g_clear_error (&error);
    if (view) {
      g_mutex_unlock (&self->lock);
      gpushare_xfer_view_unref (view);
      gpushare_side_unref (side);
      g_mutex_lock (&self->lock);
    }
    return FALSE;
  }
  if (!view) {
    gchar *debug = s->mem_type == GPUSHARE_MEM_SYSTEM
        && self->producer_minor < GPUSHARE_MINOR_SEALED ?
        g_strdup_printf ("%s; the "
        "producer speaks protocol %u.%u, whose slots are not sealed against "
        "consumers' writes: it must be upgraded", error->message,
        GPUSHARE_VERSION_MAJOR, self->producer_minor) :
        g_strdup (error->message);

    session_unref (session);
    gpushare_conn_send_error (self->session->conn, GPUSHARE_ERR_RESOURCE,
        gpushare_mem_type_is_host (s->mem_type) ?
        "the consumer could not map the slots" :
        "the consumer could not map the GPU slots");
    fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
        gpushare_mem_type_is_host (s->mem_type) ?
        "Could not map the producer's slots" :
        "Could not map the producer's GPU slots", debug);
    g_free (debug);
    g_clear_error (&error);
    return FALSE;
  }
  /* the slots' fds only serve a downstream that takes fd memory */
  if (self->fd_memory == 0)
    gpushare_xfer_view_drop_fds (view);
  m = g_new0 (Mapping, 1);
  m->ref_count = 1;
  m->view = view;
  m->side = side;
  /* GPU slots larger than the room of the epoch's frames: where payloads
   * in GPU memory may lie */
  m->device_offset = GPUSHARE_DEVICE_SIDE_START (self->pending.slot_size);
  if (view->n_slots > 0 && view->device_ptr[0]
      && view->slot_size > m->device_offset)
    m->device_size = view->slot_size - m->device_offset;
  m->session = session;
  m->client = self;
  m->live_link.data = m;
  G_LOCK (live_lock);
  g_queue_push_tail_link (&self->live, &m->live_link);
  G_UNLOCK (live_lock);
  if (self->flushing)
    cancel_mapping (self, mapping_ref (m));
  if (self->mapping) {
    Mapping *old = self->mapping;

    self->mapping = m;
    /* a GPU mapping closed here still says UNMAPPED on the connection */
    g_mutex_unlock (&self->lock);
    mapping_unref (old);
    g_mutex_lock (&self->lock);
  } else {
    self->mapping = m;
  }
  return TRUE;
}

static void
handle_slots (GpuShareClient * self, const GpuShareSlots * s, gint * fds)
{
  Session *session;
  guint64 last_seq;
  gboolean have_seq;

  if ((self->state != STATE_ACCEPTED && self->state != STATE_REMAP
          && (self->state != STATE_DONE || s->epoch == self->mapped_epoch))
      || s->epoch != self->pending.epoch
      || s->n_slots != self->pending.n_slots
      || (gpushare_mem_type_is_host (s->mem_type)
          && s->slot_size != self->pending.slot_size)
      || s->slot_size < self->pending.frame_size
      || s->mem_type != (guint32) self->mem_type
      || s->sync_mode != (guint32) self->sync_mode) {
    gpushare_close_fds (fds, gpushare_slots_n_fds (s));
    producer_error (self, "SLOTS do not match the announced ring");
    return;
  }
  /* epochs count from 1: 0 is no ring mapped (mapped_epoch), and a ring
   * of epoch 0 had a CAPS of its epoch pass unchecked against it */
  if (s->epoch == 0) {
    gpushare_close_fds (fds, gpushare_slots_n_fds (s));
    producer_error (self, "SLOTS of epoch 0");
    return;
  }
  if (self->session->lane
      && g_queue_get_length (&self->session->lane_mappings) >=
      GPUSHARE_CLIENT_MAX_LANE_RINGS) {
    gpushare_close_fds (fds, gpushare_slots_n_fds (s));
    producer_error (self, "more rings announced than frames of theirs read "
        "from the lane");
    return;
  }
  if (!map_slots (self, s, fds))
    return;

  session = self->session;
  self->mapped_epoch = s->epoch;
  self->mapped_n_slots = s->n_slots;
  self->mapped_slot_size = s->slot_size;
  g_mutex_lock (&session->lock);
  if (session->lane) {
    /* the lane's reader takes it up at its first frame (lane_frame ()):
     * the frames of the rings before it may still be in the lane */
    g_queue_push_tail (&session->lane_mappings, mapping_ref (self->mapping));
  } else {
    /* sequence continuity spans epochs */
    last_seq = session->view.last_sequence;
    have_seq = session->view.have_sequence;
    gpushare_slot_view_init (&session->view, s->n_slots, s->epoch);
    session->view.last_sequence = last_seq;
    session->view.have_sequence = have_seq;
  }
  g_mutex_unlock (&session->lock);

  gpushare_test_point ("src", "map");
  gpushare_conn_send_mapped (session->conn, GPUSHARE_MSG_MAPPED, s->epoch);
  if (self->state == STATE_ACCEPTED) {
    GpuShareClientEvent *ev = queue_event (self,
        GPUSHARE_CLIENT_EVENT_TRANSPORT);

    ev->producer_pid = self->producer_pid;
    ev->reconnects = self->reconnects;
  }
  /* after the end of the stream a new ring is only followed */
  if (self->state != STATE_DONE)
    set_state (self, STATE_READY);
  gpushare_test_point ("src", "ready");
}

/* The producer's frame lane: after our ACCEPT asked for it, before the
 * first SLOTS.  Takes fd. */
static void
handle_lane (GpuShareClient * self, const GpuShareLaneInfo * info, gint fd)
{
  Session *session = self->session;
  GError *error = NULL;
  GpuShareLane *lane;

  if (self->state != STATE_ACCEPTED || !self->config.lane || session->lane
      || self->mapped_epoch != 0) {
    close (fd);
    producer_error (self, "LANE out of order, or not asked for");
    return;
  }
  lane = gpushare_lane_open (fd, info, &error);
  if (!lane) {
    producer_error (self, error->message);
    g_error_free (error);
    return;
  }
  /* our ACCEPT asked for heads-up; a producer before minor 8 never
   * announces, and its reader sleeps as before */
  gpushare_lane_set_heads_up (lane, GPUSHARE_CLIENT_LANE_SPIN_MAX_US);
  g_mutex_lock (&session->lock);
  session->lane = lane;
  session->lane_alive = self->producer_minor >= GPUSHARE_MINOR_LANE_ALIVE;
  g_mutex_unlock (&session->lock);
  GST_DEBUG_OBJECT (self->log_object, "frames come through a lane of %u "
      "entries, metas through a region of %u bytes", info->n_entries,
      info->meta_size);
  /* a streaming thread asleep on the condition now sleeps on the bell */
  wake (self);
}

static void
handle_caps (GpuShareClient * self, const GpuShareCaps * c)
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
    else if (gpushare_mem_type_is_host (self->mem_type)
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
    /* the stream ended here, nothing more goes downstream; the ring is
     * followed all the same, so that the frames of a producer that goes
     * on come back unread (handle_frame_after_eos ()) */
    if (layout_ok (self, &c->layout))
      self->pending = c->layout;
    return;
  }
  if (!queue_caps (self, &c->layout))
    return;
  if (c->layout.epoch != self->pending.epoch && self->state == STATE_READY)
    set_state (self, STATE_REMAP);
  self->pending = c->layout;
}

/* The stream ended here (EOS went downstream), but the producer goes on,
 * after a flush on its side: its frames are not read, and their slots go
 * back at once so that the producer is not kept waiting for them.  A
 * frame that does not fit the ring is ignored: there is no stream left to
 * fail. */
static void
handle_frame_after_eos (GpuShareClient * self, const GpuShareFrame * f)
{
  Session *s = session_ref (self->session);
  Mapping *m = self->mapping ? mapping_ref (self->mapping) : NULL;
  GpuShareRingResult res;

  g_mutex_lock (&s->lock);
  res = gpushare_slot_view_frame (&s->view, f->epoch, f->slot,
      f->generation, f->sequence);
  g_mutex_unlock (&s->lock);
  /* a GPU slot is done only once its done signal is written: device
   * work, without the locks */
  g_mutex_unlock (&self->lock);
  if (res == GPUSHARE_RING_OK && m)
    gpushare_xfer_view_skip (m->view, f->slot, f->sequence, NULL);
  g_mutex_lock (&s->lock);
  if (res == GPUSHARE_RING_OK)
    send_release (s, f);
  g_mutex_unlock (&s->lock);
  g_clear_pointer (&m, mapping_unref);
  session_unref (s);
  g_mutex_lock (&self->lock);
  GST_DEBUG_OBJECT (self->log_object, "frame %" G_GUINT64_FORMAT " after "
      "the end of the stream: %s", f->sequence, res == GPUSHARE_RING_OK ?
      "given back unread" : gpushare_ring_result_to_string (res));
}

/* an event of the stream, in its place among the frames (the codec
 * checked its text is UTF-8; the src parses it); between the CAPS of a new
 * ring and its SLOTS too: a producer whose slots are exported by its
 * control thread (GPU memory) goes on sending meanwhile, and the events
 * after a caps change (a decoder's tags) come there */
static void
handle_event (GpuShareClient * self, const GpuShareEvent * e)
{
  Item *item;

  if (self->state == STATE_DONE)
    return;
  if (self->state != STATE_READY && self->state != STATE_REMAP) {
    producer_error (self, "EVENT before the slots were mapped");
    return;
  }
  /* at most GPUSHARE_CLIENT_MAX_QUEUED_EVENTS wait for the streaming thread (held up
   * downstream, or not started): past that the oldest goes, counted */
  if (self->n_queued_events >= GPUSHARE_CLIENT_MAX_QUEUED_EVENTS) {
    GList *l;

    for (l = self->items.head; l; l = l->next) {
      Item *old = l->data;

      if (old->type == GPUSHARE_CLIENT_ITEM_EVENT) {
        g_queue_delete_link (&self->items, l);
        item_free (old);
        self->n_queued_events--;
        self->events_dropped++;
        break;
      }
    }
  }
  item = g_new0 (Item, 1);
  item->type = GPUSHARE_CLIENT_ITEM_EVENT;
  item->mark = self->lane_mark_now;
  item->event = g_memdup2 (e, G_STRUCT_OFFSET (GpuShareEvent, text) +
      e->text_len + 1);
  g_queue_push_tail (&self->items, item);
  self->n_queued_events++;
  wake (self);
}

/* the metas of the next FRAME: checked, kept until it comes */
static void
handle_meta (GpuShareClient * self, const GpuShareMeta * meta)
{
  GpuShareFrameMetas *m;
  gchar *why = NULL;

  if (self->state == STATE_DONE)
    return;
  if (self->state != STATE_READY) {
    producer_error (self, "META before the slots were mapped");
    return;
  }
  if (self->pending_meta) {
    producer_error (self, "two METAs for one FRAME");
    return;
  }
  m = gpushare_frame_metas_new_from_meta (meta);
  /* its payloads in the side memory lie in the region of a slot of the
   * ring its FRAME comes in: the one mapped now, in socket order */
  if (!check_metas (m, self->mapping, &why)) {
    producer_error (self, why);
    g_free (why);
    g_free (m);
    return;
  }
  if (self->lane_mark_now) {
    /* the lane says which frame it is of (lane_frame ()) */
    Item *item = g_new0 (Item, 1);

    item->type = ITEM_META;
    item->mark = self->lane_mark_now;
    item->meta = m;
    g_queue_push_tail (&self->items, item);
    wake (self);
    return;
  }
  self->pending_meta = m;
}

/* lock held: a frame taken, from the socket or the lane, after missed
 * frames of the producer that never came */
static void
count_frame (GpuShareClient * self, const GpuShareFrame * f, guint64 missed)
{
  self->frames_received++;
  self->frames_missed += missed;
  self->share = f->share;
  if (self->stalled)
    GST_INFO_OBJECT (self->log_object, "frames again from the producer, "
        "after %" G_GUINT64_FORMAT " missed", missed);
  self->stalled = FALSE;
  if (missed)
    GST_LOG_OBJECT (self->log_object, "%" G_GUINT64_FORMAT " frames of the "
        "producer missed before frame %" G_GUINT64_FORMAT, missed, f->sequence);
}

static void
handle_frame (GpuShareClient * self, const GpuShareFrame * f)
{
  GpuShareRingResult res;
  GpuShareClientFrame *frame;
  guint64 missed = 0;
  Item *item;

  if (self->session->lane) {
    producer_error (self, "FRAME on the socket after LANE");
    return;
  }
  if (self->state == STATE_DONE) {
    handle_frame_after_eos (self, f);
    return;
  }
  if (self->state != STATE_READY) {
    producer_error (self, "FRAME before the slots were mapped");
    return;
  }
  g_mutex_lock (&self->session->lock);
  /* the producer numbers every frame it renders, those it sent nobody or
   * not us included: a gap is frames this consumer missed */
  if (self->session->view.have_sequence
      && f->sequence > self->session->view.last_sequence + 1)
    missed = f->sequence - self->session->view.last_sequence - 1;
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
  if (self->pending_meta && self->pending_meta->sequence != f->sequence) {
    gchar *debug = g_strdup_printf ("META of frame %" G_GUINT64_FORMAT
        ", then FRAME %" G_GUINT64_FORMAT, self->pending_meta->sequence,
        f->sequence);

    g_clear_pointer (&self->pending_meta, g_free);
    producer_error (self, debug);
    g_free (debug);
    return;
  }
  frame = frame_new ();
  frame->info = *f;
  frame->meta = g_steal_pointer (&self->pending_meta);
  frame->received_us = g_get_monotonic_time ();
  frame->session = session_ref (self->session);
  frame->mapping = mapping_ref (self->mapping);
  item = g_new0 (Item, 1);
  item->type = GPUSHARE_CLIENT_ITEM_FRAME;
  item->frame = frame;
  item->missed = missed;
  g_queue_push_tail (&self->items, item);
  count_frame (self, f, missed);
  wake (self);
}

static void producer_lost (GpuShareClient * self, const gchar * text,
    const gchar * debug);
static void connect_again (GpuShareClient * self);

/* lock held.  The producer's last frame: those after the last one we got
 * never came (no buffer follows to mark DISCONT; the stats count them) */
static void
add_missed_at_eos (GpuShareClient * self, Session * s, guint64 last_sequence)
{
  guint64 missed = 0;

  g_mutex_lock (&s->lock);
  if (s->view.have_sequence && last_sequence > s->view.last_sequence)
    missed = last_sequence - s->view.last_sequence;
  g_mutex_unlock (&s->lock);
  self->frames_missed += missed;
}

/* from the socket: the same, unless the lane's reader counts them */
static void
count_missed_at_eos (GpuShareClient * self, guint64 last_sequence)
{
  if (self->state == STATE_READY && self->session)
    add_missed_at_eos (self, self->session, last_sequence);
}

/* The producer says something about how it serves us.  Codes this
 * version does not know are skipped (a newer producer's). */
static void
handle_notice (GpuShareClient * self, const GpuShareNotice * n)
{
  GpuShareClientEvent *ev;

  if (self->state == STATE_DONE)
    return;
  if (self->state != STATE_READY) {
    producer_error (self, "NOTICE before the slots were mapped");
    return;
  }
  if (n->code != GPUSHARE_NOTICE_STALLED || self->stalled)
    return;
  self->stalled = TRUE;
  self->stall_sequence = n->sequence;
  ev = queue_event (self, GPUSHARE_CLIENT_EVENT_STALLED);
  ev->share = n->share;
  ev->slots_held = n->slots_held;
  ev->skipped = n->skipped;
  g_snprintf (ev->detail, sizeof (ev->detail), "the producer has skipped "
      "this consumer for %" G_GUINT64_FORMAT " frames: it holds %u slots, "
      "its whole share of %u (%u consumers share the ring); downstream "
      "keeps the buffers it was given (paused or blocked)", n->skipped,
      n->slots_held, n->share, n->n_consumers);
  GST_WARNING_OBJECT (self->log_object, "%s", ev->detail);
}

static void
push_eos (GpuShareClient * self, guint64 last_sequence)
{
  Item *item = g_new0 (Item, 1);

  item->last_sequence = last_sequence;
  item->type = GPUSHARE_CLIENT_ITEM_EOS;
  item->mark = self->lane_mark_now;
  g_queue_push_tail (&self->items, item);
  set_state (self, STATE_DONE);
}

static void
conn_message (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, gpointer user_data)
{
  GpuShareClient *self = user_data;
  gboolean pending;

  g_mutex_lock (&self->lock);
  if (self->state == STATE_FAILED || !self->session
      || self->session->conn != conn) {
    gpushare_close_fds (fds, n_fds);
    g_mutex_unlock (&self->lock);
    return;
  }
  self->lane_mark_now = 0;
  if (self->session->lane && (msg->type == GPUSHARE_MSG_CAPS
          || msg->type == GPUSHARE_MSG_META || msg->type == GPUSHARE_MSG_EVENT
          || msg->type == GPUSHARE_MSG_EOS)) {
    /* its place among the frames is a MARK in the lane, which comes
     * after it: one that no MARK could still be in the lane for is not a
     * message a producer sends */
    self->lane_mark_now = ++self->lane_marks_received;
    if (self->lane_mark_now > self->lane_marks_read +
        GPUSHARE_LANE_MAX_ENTRIES + 1) {
      producer_error (self, "more ordered messages than the lane holds "
          "places for");
      goto done;
    }
  }
  switch (msg->type) {
    case GPUSHARE_MSG_LANE:
      handle_lane (self, &msg->u.lane, fds[0]);
      fds = NULL;
      break;
    case GPUSHARE_MSG_ANNOUNCE:
      update_latency (self, msg->u.announce.flags, msg->u.announce.latency);
      handle_announce (self, &msg->u.announce);
      break;
    case GPUSHARE_MSG_SLOTS:
      handle_slots (self, &msg->u.slots, fds);
      fds = NULL;
      break;
    case GPUSHARE_MSG_CAPS:
      update_latency (self, msg->u.caps.flags, msg->u.caps.latency);
      handle_caps (self, &msg->u.caps);
      break;
    case GPUSHARE_MSG_META:
      handle_meta (self, &msg->u.meta);
      break;
    case GPUSHARE_MSG_EVENT:
      handle_event (self, &msg->u.event);
      break;
    case GPUSHARE_MSG_FRAME:
      handle_frame (self, &msg->u.frame);
      break;
    case GPUSHARE_MSG_NOTICE:
      handle_notice (self, &msg->u.notice);
      break;
    case GPUSHARE_MSG_EOS:
      /* one end of the stream: the items of further ones, which nothing
       * takes once it ended, would pile up (2 million EOS, 230 MB) */
      if (self->state == STATE_DONE)
        break;
      /* with a lane, what we missed is known once its reader is there */
      if (!self->lane_mark_now)
        count_missed_at_eos (self, msg->u.eos.last_sequence);
      push_eos (self, msg->u.eos.last_sequence);
      break;
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
      gchar *text = NULL;

      /* the producer's text says who was refused, or the limit reached,
       * and what to change */
      if (e->code == GPUSHARE_ERR_NOT_AUTHORIZED) {
        text = g_strdup_printf ("The producer refused this consumer: %s",
            e->text);
        fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_AUTHORIZED,
            text, debug);
      } else if (e->code == GPUSHARE_ERR_VERSION) {
        fail (self, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
            "The producer speaks another protocol version", debug);
      } else if (e->code == GPUSHARE_ERR_TOO_MANY_CLIENTS) {
        text = g_strdup_printf ("The producer has too many consumers: %s",
            e->text);
        fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_BUSY, text, debug);
      } else {
        fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ,
            "The producer reported an error", debug);
      }
      g_free (text);
      g_free (debug);
      break;
    }
    default:
      producer_error (self, "message not allowed from a producer");
      break;
  }
done:
  /* a reader that met this message's MARK waits for it */
  if (self->lane_mark_now)
    wake (self);
  self->lane_mark_now = 0;
  if (fds)
    gpushare_close_fds (fds, n_fds);
  /* most messages (every FRAME) queue none: no second lock for them */
  pending = !g_queue_is_empty (&self->events);
  g_mutex_unlock (&self->lock);
  if (pending)
    deliver_events (self);
}

/* lock held, and let go while it works.  Ends the session: every frame
 * still queued from it goes
 * back to the producer, then our mappings go (buffers already pushed keep
 * theirs), then a GOODBYE, and the connection is closed.  Whatever the
 * reason (our stop, a producer lost and connected to again), buffers that
 * still wrap slots in place read them after we left: the GOODBYE says so
 * (HELD, up to the last frame we received), and the producer never writes
 * those slots again.  Those freed from then on send no RELEASE, so what the
 * producer holds for us up to that frame is exactly what they read. */
static void
drop_session (GpuShareClient * self, GpuShareErrorCode reason)
{
  Session *old = self->session;
  guint32 flags = 0;
  guint64 last_sequence = 0;
  GpuShareConn *conn = NULL;
  GQueue items = self->items;
  Mapping *mapping = self->mapping;
  GQueue lane_mappings = G_QUEUE_INIT;
  Item *item;

  g_clear_pointer (&self->pending_meta, g_free);
  g_clear_pointer (&self->lane_meta, g_free);
  if (self->lane_drain) {
    g_source_destroy (self->lane_drain);
    g_clear_pointer (&self->lane_drain, g_source_unref);
  }
  self->lane_marks_received = 0;
  self->lane_marks_read = 0;
  self->lane_reader_done = FALSE;
  /* a streaming thread asleep on the lane's bell looks again */
  if (old && old->lane)
    gpushare_lane_ring (old->lane);
  self->session = NULL;
  self->mapping = NULL;
  self->stalled = FALSE;
  self->share = 0;
  g_queue_init (&self->items);
  self->n_queued_events = 0;
  memset (&self->pending, 0, sizeof (self->pending));
  self->mapped_epoch = 0;
  /* released on the same socket, before the GOODBYE; a GPU mapping closed
   * here still says UNMAPPED on it (device work: without our lock; the
   * control thread is the one that calls this, or it is stopped) */
  g_mutex_unlock (&self->lock);
  while ((item = g_queue_pop_head (&items))) {
    /* a GPU slot is done only once its done signal is written: the
     * producer learns from our GOODBYE that we read none of them */
    if (item->frame
        && !gpushare_mem_type_is_host (item->frame->mapping->view->mem_type)) {
      frame_free (item->frame, FALSE);
      item->frame = NULL;
    }
    item_free (item);
  }
  g_clear_pointer (&mapping, mapping_unref);
  if (!old) {
    g_mutex_lock (&self->lock);
    return;
  }

  /* the GOODBYE, and the wait for it to leave, also without our lock;
   * the lane's rings go (they hold the session: after this, no frame of
   * the lane is made) */
  g_mutex_lock (&old->lock);
  conn = old->conn;
  old->conn = NULL;
  lane_mappings = old->lane_mappings;
  g_queue_init (&old->lane_mappings);
  if (old->lane_mapping)
    g_queue_push_tail (&lane_mappings, g_steal_pointer (&old->lane_mapping));
  if (old->n_in_place > 0 && old->in_place_epoch == old->view.epoch
      && old->view.have_sequence) {
    flags = GPUSHARE_GOODBYE_FLAG_HELD;
    last_sequence = old->view.last_sequence;
    GST_DEBUG_OBJECT (self->log_object, "%u buffers still read slots in "
        "place", old->n_in_place);
  }
  g_mutex_unlock (&old->lock);
  g_queue_clear_full (&lane_mappings, (GDestroyNotify) mapping_unref);
  if (conn) {
    if (gpushare_conn_send_goodbye (conn, reason, flags, last_sequence))
      gpushare_conn_flush (conn, GOODBYE_FLUSH_MS);
    gpushare_conn_close (conn);
    gpushare_conn_unref (conn);
  }
  session_unref (old);
  g_mutex_lock (&self->lock);
}

static gboolean try_connect (gpointer user_data);

/* connect again in retry_ms, and back off for the next time */
static void
schedule_connect (GpuShareClient * self)
{
  GSource *retry = g_timeout_source_new (self->retry_ms);

  self->retry_ms = MIN (self->retry_ms * 2, RETRY_MAX_MS);
  g_source_set_callback (retry, try_connect, self, NULL);
  g_source_attach (retry, self->context);
  g_source_unref (retry);
}

/* control thread.  The producer hung up or said GOODBYE before its
 * ANNOUNCE: as when nobody listens, try again until the deadline. */
static void
connect_again (GpuShareClient * self)
{
  if (self->deadline && g_get_monotonic_time () >= self->deadline) {
    fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
        "No producer appeared before the connection timeout",
        "the producer hung up before its announce");
    return;
  }
  GST_DEBUG_OBJECT (self->log_object, "hung up on before its announce: "
      "connecting again");
  drop_session (self, GPUSHARE_ERR_SHUTDOWN);
  set_state (self, STATE_CONNECTING);
  schedule_connect (self);
}

/* control thread.  The producer went away before the end of the stream:
 * what happens is the producer-lost setting. */
static void
producer_lost (GpuShareClient * self, const gchar * text, const gchar * debug)
{
  guint timeout = self->config.connection_timeout;
  GpuShareClientEvent *ev = queue_event (self,
      GPUSHARE_CLIENT_EVENT_PRODUCER_LOST);

  g_strlcpy (ev->detail, text, sizeof (ev->detail));
  ev->action = self->config.producer_lost;
  ev->producer_pid = self->producer_pid;
  ev->reconnects = self->reconnects;
  switch (self->config.producer_lost) {
    case GPUSHARE_PRODUCER_LOST_EOS:
      GST_WARNING_OBJECT (self->log_object, "%s: ending the stream", text);
      /* after the frames it wrote into the lane, as after those it sent */
      push_eos (self, 0);
      if (self->session && self->session->lane) {
        ((Item *) g_queue_peek_tail (&self->items))->after_lane = TRUE;
        wake (self);
      }
      break;
    case GPUSHARE_PRODUCER_LOST_RECONNECT:
      GST_WARNING_OBJECT (self->log_object, "%s: connecting again", text);
      drop_session (self, GPUSHARE_ERR_SHUTDOWN);
      self->reconnects++;
      self->discont = TRUE;
      self->deadline = timeout ? g_get_monotonic_time () + timeout * 1000ll : 0;
      self->retry_ms = RETRY_MIN_MS;
      set_state (self, STATE_CONNECTING);
      schedule_connect (self);
      break;
    default:{
      gboolean failed = self->state == STATE_FAILED;
      /* what the user can set instead, in the text gst-launch prints */
      gchar *why = g_strdup_printf ("%s (producer-lost=reconnect waits for "
          "a producer to come back, producer-lost=eos ends the stream)", text);

      fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ, why, debug);
      /* after the frames it wrote into the lane, as producer-lost=eos */
      if (!failed) {
        self->error_after_lane = TRUE;
        self->lane_read_after_error = 0;
      }
      g_free (why);
      break;
    }
  }
}

static void
conn_closed (GpuShareConn * conn, const GError * error, gpointer user_data)
{
  GpuShareClient *self = user_data;

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
        && error->code == GPUSHARE_CONN_ERROR_NOT_GPUSHARE) {
      fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
          "The socket path is not a gpushare producer's: another program "
          "listens there (check socket-path)", error->message);
    } else if (error && error->domain == GPUSHARE_CONN_ERROR
        && error->code == GPUSHARE_CONN_ERROR_NO_FDS) {
      /* ours to mend, not the producer's: this stream ends, the process's
       * others go on */
      fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NO_SPACE_LEFT,
          "This process is out of file descriptors: raise its limit "
          "(ulimit -n, LimitNOFILE=) or read fewer streams in it",
          error->message);
    } else if (error && error->domain == GPUSHARE_CONN_ERROR
        && error->code == GPUSHARE_CONN_ERROR_TIMEOUT) {
      /* alive maybe, but hung: as good as gone */
      producer_lost (self, "The producer stopped responding", error->message);
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
  deliver_events (self);
}

/* Is the process at the other end of fd a producer this consumer may
 * take frames from: our own uid, root, or allowed-producer-uids?  Checked
 * before a byte is read from it: whoever binds the socket path first (in a
 * directory others may write to) would otherwise feed this pipeline. */
static gboolean
producer_trusted (GpuShareClient * self, gint fd, gchar ** debug)
{
  pid_t pid;
  uid_t uid;

  if (!gpushare_socket_get_peer (fd, &pid, &uid, NULL)) {
    *debug = g_strdup_printf ("the producer's credentials cannot be read: %s",
        g_strerror (errno));
    return FALSE;
  }
  if (uid == getuid () || uid == 0
      || gpushare_ids_contain (self->config.allowed_producer_uids, uid)) {
    self->producer_pid = pid;
    return TRUE;
  }
  *debug = g_strdup_printf ("the process listening at the socket path "
      "(pid %d) runs as uid %u; this consumer takes frames only from uid "
      "%u, root or a uid in allowed-producer-uids", (gint) pid,
      (guint) uid, (guint) getuid ());
  return FALSE;
}

static gboolean
try_connect (gpointer user_data)
{
  GpuShareClient *self = user_data;
  GError *error = NULL;
  gchar *debug = NULL;
  gint fd;

  fd = gpushare_connect_path (self->config.socket_path, &error);
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
    gpushare_conn_set_heartbeat (s->conn, self->config.heartbeat_interval);
    self->session = s;
    set_state (self, STATE_CONNECTED);
    gpushare_conn_start (s->conn);
    GST_DEBUG_OBJECT (self->log_object, "connected");
    goto done;
  }
  /* nobody listens yet: retry with back-off until the deadline */
  if (error->code == GPUSHARE_CONN_ERROR_HANGUP
      && (self->deadline == 0 || g_get_monotonic_time () < self->deadline)) {
    schedule_connect (self);
    goto done;
  }
  /* a path that no Unix socket address holds (108 bytes with its NUL)
   * is refused before anything is looked at */
  fail (self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
      error->code == GPUSHARE_CONN_ERROR_HANGUP ?
      "No producer appeared before the connection timeout" :
      error->code == GPUSHARE_CONN_ERROR_PATH
      && strlen (self->config.socket_path) >= GPUSHARE_SOCKET_PATH_MAX ?
      "The socket path is too long for a Unix socket: check socket-path" :
      error->code == GPUSHARE_CONN_ERROR_PATH ?
      "The socket path is not a socket: check socket-path" :
      error->code == GPUSHARE_CONN_ERROR_PERMISSION ?
      "The producer's socket does not let this user connect: the producer's "
      "socket-mode (0600 by default: its own user only) and the directory's "
      "permissions decide who may, then its allowed-uids and allowed-gids" :
      "Could not connect to the producer", error->message);

done:
  g_mutex_unlock (&self->lock);
  g_clear_error (&error);
  g_free (debug);
  return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------------ */
/* Life cycle */

GpuShareClient *
gpushare_client_new (const GpuShareClientConfig * config,
    gpointer log_object, GpuShareClientEventFunc func, gpointer user_data)
{
  GpuShareClient *self = g_new0 (GpuShareClient, 1);
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gpushare_client_debug, "gpushareclient", 0,
        "gpushare consumer core");
    g_once_init_leave (&once, 1);
  }
  self->config = *config;
  self->fd_memory = -1;
  self->config.socket_path = g_strdup (config->socket_path);
  self->config.name = g_strdup (config->name);
  self->config.allowed_producer_uids = config->allowed_producer_uids ?
      g_array_copy (config->allowed_producer_uids) : NULL;
  self->log_object = log_object;
  self->event_func = func;
  self->user_data = user_data;
  self->peer_device = -1;
  self->latency = G_MAXUINT64;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->items);
  g_queue_init (&self->live);
  g_queue_init (&self->events);
  return self;
}

void
gpushare_client_free (GpuShareClient * self)
{
  gpushare_client_stop (self);
  g_free (self->config.socket_path);
  g_free (self->config.name);
  g_clear_pointer (&self->config.allowed_producer_uids, g_array_unref);
  g_free (self->mem_reason);
  g_free (self->gpu_reason);
  g_free (self->error_text);
  g_free (self->error_debug);
  g_free (self->pending_meta);
  g_free (self->producer_name);
  g_queue_clear_full (&self->events, g_free);
  g_clear_pointer (&self->cancelled, g_ptr_array_unref);
  /* the mappings that buffers keep go on without us */
  G_LOCK (live_lock);
  while (self->live.head)
    ((Mapping *) g_queue_pop_head_link (&self->live)->data)->client = NULL;
  G_UNLOCK (live_lock);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  g_free (self);
}

/* can this consumer take GPU memory, and if not why */
static void
probe_gpu (GpuShareClient * self)
{
  GError *error = NULL;

  g_clear_pointer (&self->gpu_reason, g_free);
  self->gpu_ok = gpushare_xfer_gpu_probe (self->config.cuda_device_id,
      &self->gpu, &error);
  if (!gpushare_xfer_gpu ()) {
    self->gpu_reason = g_strdup ("built without CUDA");
    g_clear_error (&error);
  } else if (!self->gpu_ok) {
    self->gpu_reason = g_strdup_printf ("no usable GPU here: %s",
        error->message);
    g_clear_error (&error);
  } else if (!(self->gpu.vmm && self->gpu.posix_fd)) {
    self->gpu_ok = FALSE;
    self->gpu_reason = g_strdup ("this GPU cannot import VMM memory from "
        "file descriptors");
  }
}

/* what starting takes: the control thread's wake-up, the connection, and
 * a few for the handshake (the lane, a slot at a time) */
#define START_FDS 8

gboolean
gpushare_client_start (GpuShareClient * self, GError ** error)
{
  GSource *source;
  guint timeout = self->config.connection_timeout;

  g_return_val_if_fail (!self->attached, FALSE);
  if (!gpushare_fd_headroom (START_FDS, error))
    return FALSE;
  probe_gpu (self);
  g_mutex_lock (&self->lock);
  self->deadline = timeout ? g_get_monotonic_time () + timeout * 1000ll : 0;
  self->retry_ms = RETRY_MIN_MS;
  self->flushing = FALSE;
  set_state (self, STATE_CONNECTING);
  g_mutex_unlock (&self->lock);

  self->context = g_main_context_new ();
  source = g_idle_source_new ();
  g_source_set_callback (source, try_connect, self, NULL);
  g_source_attach (source, self->context);
  g_source_unref (source);
  gpushare_control_attach (self->context);
  self->attached = TRUE;
  return TRUE;
}

void
gpushare_client_stop (GpuShareClient * self)
{
  if (self->attached) {
    gpushare_control_detach (self->context);
    self->attached = FALSE;
  }
  g_mutex_lock (&self->lock);
  drop_session (self, GPUSHARE_ERR_SHUTDOWN);
  if (self->state != STATE_IDLE)
    set_state (self, STATE_IDLE);
  g_mutex_unlock (&self->lock);
  g_clear_pointer (&self->context, g_main_context_unref);
}

gboolean
gpushare_client_gpu_ok (GpuShareClient * self)
{
  return self->gpu_ok;
}

/* ------------------------------------------------------------------------ */
/* The streaming thread */

/* lock held: the reader of s's lane takes up the ring of epoch, mapped
 * meanwhile (handle_slots ()), in s->lane_mappings; rings before it had
 * no frame left in the lane.  Returns the mappings let go, to unref
 * without the session's lock.  Session lock held. */
static void
lane_take_ring (Session * s, guint64 epoch, GQueue * gone)
{
  Mapping *m;

  while ((m = g_queue_peek_head (&s->lane_mappings))
      && m->view->epoch <= epoch) {
    g_queue_pop_head (&s->lane_mappings);
    if (m->view->epoch < epoch) {
      g_queue_push_tail (gone, m);
      continue;
    }
    if (s->lane_mapping)
      g_queue_push_tail (gone, s->lane_mapping);
    s->lane_mapping = m;
    /* sequence continuity spans epochs */
    {
      guint64 last_seq = s->view.last_sequence;
      gboolean have_seq = s->view.have_sequence;

      gpushare_slot_view_init (&s->view, m->view->n_slots, epoch);
      s->view.last_sequence = last_seq;
      s->view.have_sequence = have_seq;
    }
    break;
  }
}

/* lock held: the write time of a frame read from the lane (never later
 * than our clock): a gap that goes back or is too long starts the cadence
 * afresh */
static void
cadence_add (GpuShareClient * self, gint64 written_us)
{
  if (self->cadence_last_us > 0) {
    gint64 gap = written_us - self->cadence_last_us;

    if (gap <= 0 || gap > CADENCE_MAX_GAP_US) {
      self->cadence_n = 0;
    } else {
      self->cadence_gap[self->cadence_next] = gap;
      self->cadence_next = (self->cadence_next + 1) % CADENCE_FRAMES;
      self->cadence_n = MIN (self->cadence_n + 1, CADENCE_FRAMES);
    }
  }
  self->cadence_last_us = written_us;
  self->early_done = self->early_woken = FALSE;
}

/* lock held: when the producer's next frame is due, from its last
 * CADENCE_FRAMES gaps, each within a quarter of their median; FALSE while
 * it is not that steady */
static gboolean
cadence_due (GpuShareClient * self, gint64 * due_us)
{
  gint64 gap[CADENCE_FRAMES], median, v;
  guint i, j;

  if (self->cadence_n < CADENCE_FRAMES)
    return FALSE;
  for (i = 0; i < CADENCE_FRAMES; i++) {
    v = self->cadence_gap[i];
    for (j = i; j > 0 && gap[j - 1] > v; j--)
      gap[j] = gap[j - 1];
    gap[j] = v;
  }
  median = gap[CADENCE_FRAMES / 2];
  if (gap[0] < median - median / 4
      || gap[CADENCE_FRAMES - 1] > median + median / 4)
    return FALSE;
  *due_us = self->cadence_last_us + median;
  return TRUE;
}

/* lock held: with wake-ahead, a steady producer and no poll for its next
 * frame yet, the time to wake up at and the time to poll until (the frame
 * due, give or take wake-ahead); FALSE: sleep until rung */
static gboolean
wake_ahead_window (GpuShareClient * self, gint64 * wake_us, gint64 * until_us)
{
  gint64 ahead = self->config.wake_ahead_us, due;

  /* frames closer than three times wake-ahead: the thread would poll two
   * thirds of the time or more */
  if (!ahead || self->early_done || !cadence_due (self, &due)
      || due - self->cadence_last_us < 3 * ahead)
    return FALSE;
  *wake_us = due - ahead;
  *until_us = due + ahead;
  return TRUE;
}

/* lock held: a FRAME read from s's lane, checked against the ring as one
 * on the socket is (handle_frame ()): the frame, or NULL (the session is
 * over, or the FRAME was refused: the client failed) */
static GpuShareClientFrame *
lane_frame (GpuShareClient * self, Session * s, const GpuShareFrame * f,
    guint64 written_us, GpuShareFrameMetas * metas, guint64 * missed_out)
{
  gchar *why = NULL;
  gint64 now = g_get_monotonic_time ();
  GpuShareRingResult res = GPUSHARE_RING_STALE_EPOCH;
  GpuShareClientFrame *frame;
  GQueue gone = G_QUEUE_INIT;
  Mapping *mapping = NULL;
  guint64 missed = 0;

  g_mutex_lock (&s->lock);
  if (!s->conn) {
    g_mutex_unlock (&s->lock);
    g_free (metas);
    return NULL;
  }
  /* a frame from the producer says it lives, as a FRAME message did */
  gpushare_conn_note_alive (s->conn);
  if (!s->lane_mapping || s->lane_mapping->view->epoch != f->epoch)
    lane_take_ring (s, f->epoch, &gone);
  if (s->lane_mapping) {
    if (s->view.have_sequence && f->sequence > s->view.last_sequence + 1)
      missed = f->sequence - s->view.last_sequence - 1;
    res = gpushare_slot_view_frame (&s->view, f->epoch, f->slot,
        f->generation, f->sequence);
    mapping = mapping_ref (s->lane_mapping);
  }
  g_mutex_unlock (&s->lock);
  g_queue_clear_full (&gone, (GDestroyNotify) mapping_unref);
  if (res != GPUSHARE_RING_OK) {
    gchar *debug = g_strdup_printf ("FRAME rejected: %s",
        gpushare_ring_result_to_string (res));

    g_clear_pointer (&mapping, mapping_unref);
    producer_error (self, debug);
    g_free (debug);
    g_free (metas);
    return NULL;
  }
  /* its metas beside it in the meta region, checked as a META's */
  if (metas) {
    metas->sequence = f->sequence;
    if (self->lane_meta)
      why = g_strdup ("two METAs for one FRAME: one on the socket, one in "
          "the lane");
    else if (check_metas (metas, mapping, &why)) {
      self->lane_meta = g_steal_pointer (&metas);
      self->lane_metas++;
    }
    g_free (metas);
  }
  if (!why && self->lane_meta && self->lane_meta->sequence != f->sequence)
    why = g_strdup_printf ("META of frame %" G_GUINT64_FORMAT ", then FRAME %"
        G_GUINT64_FORMAT, self->lane_meta->sequence, f->sequence);
  if (why) {
    g_clear_pointer (&self->lane_meta, g_free);
    producer_error (self, why);
    g_free (why);
    /* the slot is ours all the same: it goes back with the session */
    frame = frame_new ();
    frame->info = *f;
    frame->session = session_ref (s);
    frame->mapping = mapping;
    g_mutex_unlock (&self->lock);
    frame_free (frame, TRUE);
    g_mutex_lock (&self->lock);
    return NULL;
  }
  frame = frame_new ();
  frame->info = *f;
  frame->meta = g_steal_pointer (&self->lane_meta);
  /* it reached us when the producer wrote it into the lane (one clock on
   * one host; what a producer says is never later than now) */
  frame->received_us = written_us > 0 && written_us < (guint64) now ?
      (gint64) written_us : now;
  if (self->early_caught)
    self->lane_early_hits++;
  self->early_caught = FALSE;
  cadence_add (self, frame->received_us);
  frame->session = session_ref (s);
  frame->mapping = mapping;
  count_frame (self, f, missed);
  *missed_out = missed;
  return frame;
}

/* lock held: the next entry of s's lane.  TRUE with a frame in out; FALSE
 * when there is nothing to return yet (*empty: the lane has nothing new),
 * or the client failed. */
static gboolean
lane_read (GpuShareClient * self, Session * s, GpuShareClientItem * out,
    gboolean * empty, gboolean with_metas)
{
  GpuShareFrameMetas *metas = NULL;
  GpuShareLaneEntry e;
  GpuShareLaneResult res = gpushare_lane_pop (s->lane, &e,
      with_metas ? &metas : NULL);
  GpuShareClientFrame *frame;
  guint64 missed = 0;

  *empty = res == GPUSHARE_LANE_EMPTY;
  if (res == GPUSHARE_LANE_EMPTY)
    return FALSE;
  if (res != GPUSHARE_LANE_OK) {
    producer_error (self, gpushare_lane_result_to_string (res));
    /* nothing more is read from it: a producer that left (failed already,
     * its frames still read first) would otherwise have the same bad
     * entry read again and again */
    self->error_after_lane = FALSE;
    return FALSE;
  }
  if (e.kind == GPUSHARE_LANE_ENTRY_MARK) {
    if (e.mark != self->lane_marks_read + 1)
      producer_error (self, "a MARK of the lane out of order");
    else
      self->lane_marks_read = e.mark;
    return FALSE;
  }
  frame = lane_frame (self, s, &e.frame, e.written_us, metas, &missed);
  if (!frame)
    return FALSE;
  GST_LOG_OBJECT (self->log_object, "frame %" G_GUINT64_FORMAT " (slot %u, "
      "epoch %" G_GUINT64_FORMAT ") read from the lane", e.frame.sequence,
      e.frame.slot, e.frame.epoch);
  out->type = GPUSHARE_CLIENT_ITEM_FRAME;
  out->frame = frame;
  out->missed = missed;
  out->discont = missed > 0;
  return TRUE;
}

/* After the end of the stream, the control thread reads the lane: its
 * frames go back unread at once, their metas not read (handle_frame_after_eos ()
 * for a lane).  A lane's worth a call at most: a producer that writes
 * frames after its EOS as fast as they are read would otherwise keep the
 * control thread, which every connection of the process shares, and the
 * src's stop, which waits for it, here for as long as it liked. */
static gboolean
lane_drain (gpointer user_data)
{
  GpuShareClient *self = user_data;
  Session *s;
  guint n = 0;

  g_mutex_lock (&self->lock);
  s = self->session;
  while (s && s->lane && self->lane_reader_done && self->state != STATE_FAILED
      && n++ < GPUSHARE_LANE_MAX_ENTRIES) {
    GpuShareClientItem out = { 0, };
    gboolean empty;
    Item *item;

    /* what the reader would deliver goes: the stream is over here */
    while ((item = g_queue_peek_head (&self->items))
        && item->mark <= self->lane_marks_read) {
      g_queue_pop_head (&self->items);
      if (item->type == GPUSHARE_CLIENT_ITEM_EVENT)
        self->n_queued_events--;
      item_free (item);
    }
    if (self->lane_marks_received < self->lane_marks_read)
      break;
    if (!lane_read (self, s, &out, &empty, FALSE)) {
      if (empty)
        break;
      continue;
    }
    g_clear_pointer (&out.frame->meta, g_free);
    session_ref (s);
    g_mutex_unlock (&self->lock);
    /* a GPU slot is done only once its done signal is written: device
     * work, without the lock */
    gpushare_xfer_view_skip (out.frame->mapping->view, out.frame->info.slot,
        out.frame->info.sequence, NULL);
    GST_DEBUG_OBJECT (self->log_object, "frame %" G_GUINT64_FORMAT " after "
        "the end of the stream: given back unread", out.frame->info.sequence);
    frame_free (out.frame, TRUE);
    g_mutex_lock (&self->lock);
    session_unref (s);
    if (self->session != s)
      break;
  }
  g_mutex_unlock (&self->lock);
  return G_SOURCE_CONTINUE;
}

/* lock held: the item at the head, if the streaming thread may take it
 * now (with a lane: once the lane's reader reached its MARK) */
static Item *
pop_item (GpuShareClient * self, gboolean lane, gboolean drained)
{
  Item *item = g_queue_peek_head (&self->items);

  if (!item || (lane && (item->after_lane ? !drained :
              item->mark > self->lane_marks_read)))
    return NULL;
  return g_queue_pop_head (&self->items);
}

/* lock held: the error the client failed with, as an item */
static void
error_item (GpuShareClient * self, GpuShareClientItem * out)
{
  out->type = GPUSHARE_CLIENT_ITEM_ERROR;
  out->error_domain = self->error_domain;
  out->error_code = self->error_code;
  out->error_text = g_strdup (self->error_text);
  out->error_debug = g_strdup (self->error_debug);
  out->error_file = self->error_file;
  out->error_function = self->error_function;
  out->error_line = self->error_line;
}

void
gpushare_client_pop (GpuShareClient * self, GpuShareClientItem * out)
{
  GpuShareClientFrame *refused = NULL;
  Item *item;

  gboolean drained = FALSE;

  memset (out, 0, sizeof (*out));
  g_mutex_lock (&self->lock);
  for (;;) {
    Session *s = self->session;
    gboolean lane = s && s->lane && !self->lane_reader_done;
    guint32 bell = lane ? gpushare_lane_bell (s->lane) : 0;
    gboolean empty = FALSE;

    if (self->flushing) {
      out->type = GPUSHARE_CLIENT_ITEM_FLUSHING;
      break;
    }
    item = pop_item (self, lane, drained);
    if (item && item->type == ITEM_META) {
      if (self->lane_meta)
        producer_error (self, "two METAs for one FRAME");
      else
        self->lane_meta = g_steal_pointer (&item->meta);
      item_free (item);
      continue;
    }
    if (item) {
      out->type = item->type;
      if (item->layout)
        out->layout = *item->layout;
      out->frame = item->frame;
      item->frame = NULL;
      out->event = g_steal_pointer (&item->event);
      if (out->type == GPUSHARE_CLIENT_ITEM_EVENT)
        self->n_queued_events--;
      if (out->type == GPUSHARE_CLIENT_ITEM_EOS && lane) {
        /* the producer's frames after the last one read never came */
        add_missed_at_eos (self, s, item->last_sequence);
        /* the rest of the lane is the control thread's to give back */
        self->lane_reader_done = TRUE;
        self->lane_drain = g_timeout_source_new (LANE_DRAIN_MS);
        g_source_set_callback (self->lane_drain, lane_drain, self, NULL);
        g_source_attach (self->lane_drain, self->context);
      }
      out->missed = item->missed;
      item_free (item);
      break;
    }
    if (self->state == STATE_FAILED) {
      /* a producer that died: the frames it wrote into the lane before
       * go first; a MARK still on its way is not waited for */
      if (lane && self->error_after_lane
          && self->lane_marks_received >= self->lane_marks_read) {
        /* a lane's worth at most, whatever they are: a producer that
         * went on writing entries into it, refused or not, as fast as
         * they are read held this loop, and the lock, for as long as it
         * liked, the error never posted */
        if (++self->lane_read_after_error > GPUSHARE_LANE_MAX_ENTRIES)
          self->error_after_lane = FALSE;
        else if (lane_read (self, s, out, &empty, TRUE))
          break;
        else if (!empty)
          continue;
      }
      error_item (self, out);
      break;
    }
    /* with a lane: its next entry, unless a MARK read waits for its
     * message from the control thread */
    if (lane && self->lane_marks_received >= self->lane_marks_read) {
      if (lane_read (self, s, out, &empty, TRUE))
        break;
      if (!empty)
        continue;
      /* an item for after the lane can go now */
      if (!drained && !g_queue_is_empty (&self->items)) {
        drained = TRUE;
        continue;
      }
    }
    /* a MARK read, its message not yet here: the lane may hold more, the
     * control thread's wake () says when it came */
    if (lane && self->lane_marks_received < self->lane_marks_read) {
      g_cond_wait_until (&self->cond, &self->lock,
          g_get_monotonic_time () + LANE_SLEEP_MAX_US);
      continue;
    }
    if (lane) {
      GpuShareLaneSpin spin, early = GPUSHARE_LANE_SPIN_NONE;
      gint64 spun, polled = 0, wake_us = 0, until_us = 0, now;
      gboolean ahead = wake_ahead_window (self, &wake_us, &until_us);

      session_ref (s);
      g_mutex_unlock (&self->lock);
      /* a frame announced is polled for; otherwise, or after a miss,
       * the thread sleeps until the producer rings, or (wake-ahead) until
       * just before a steady producer's next frame is due, and polls for
       * it from then on */
      spin = gpushare_lane_spin (s->lane, bell, &spun);
      if (spin == GPUSHARE_LANE_SPIN_NONE && ahead) {
        now = g_get_monotonic_time ();
        if (now >= wake_us
            || (!gpushare_lane_sleep (s->lane, bell, MIN (wake_us - now,
                        LANE_SLEEP_MAX_US))
                && g_get_monotonic_time () >= wake_us))
          early = gpushare_lane_poll (s->lane, bell, until_us, &polled);
      } else if (spin == GPUSHARE_LANE_SPIN_NONE) {
        gpushare_lane_sleep (s->lane, bell, LANE_SLEEP_MAX_US);
      }
      g_mutex_lock (&self->lock);
      self->lane_spin_us += spun + polled;
      if (spin == GPUSHARE_LANE_SPIN_HIT)
        self->lane_spins++;
      else if (spin == GPUSHARE_LANE_SPIN_MISSED)
        self->lane_spin_misses++;
      /* a window counts once, however many polls a ring or a MARK split
       * it into; the frame read next after a poll that ended with an
       * entry counts as caught (lane_frame ()) */
      if (early != GPUSHARE_LANE_SPIN_NONE && !self->early_woken) {
        self->early_woken = TRUE;
        self->lane_early_wakes++;
      }
      self->early_caught = early == GPUSHARE_LANE_SPIN_HIT;
      /* one window a frame: the next frame read opens the next one */
      if (ahead && (early == GPUSHARE_LANE_SPIN_MISSED
              || g_get_monotonic_time () >= until_us))
        self->early_done = TRUE;
      session_unref (s);
      continue;
    }
    g_cond_wait (&self->cond, &self->lock);
  }
  if (out->type == GPUSHARE_CLIENT_ITEM_CAPS)
    self->out_epoch = out->layout.epoch;
  if (out->type == GPUSHARE_CLIENT_ITEM_FRAME
      && out->frame->info.epoch != self->out_epoch) {
    /* a frame is read under the layout handed out before it: one of
     * another ring (a lane's FRAME of the ring before the CAPS whose MARK
     * came first, or of the next ring before it) has other slots */
    gchar *debug = g_strdup_printf ("a FRAME of epoch %" G_GUINT64_FORMAT
        " under the layout of epoch %" G_GUINT64_FORMAT,
        out->frame->info.epoch, self->out_epoch);

    producer_error (self, debug);
    g_free (debug);
    refused = out->frame;
    memset (out, 0, sizeof (*out));
    error_item (self, out);
  }
  if (out->type == GPUSHARE_CLIENT_ITEM_FRAME) {
    out->latency_changed = self->latency_changed;
    self->latency_changed = FALSE;
  }
  if (out->type == GPUSHARE_CLIENT_ITEM_FRAME && self->discont) {
    out->discont = TRUE;
    out->new_producer = TRUE;
    self->discont = FALSE;
  }
  if (out->missed)
    out->discont = TRUE;
  g_mutex_unlock (&self->lock);
  if (refused)
    gpushare_client_frame_release (refused);
  /* a crash here leaves the slot of this frame held */
  if (out->type == GPUSHARE_CLIENT_ITEM_FRAME)
    gpushare_test_point ("src", "frame");
}

void
gpushare_client_set_fd_memory (GpuShareClient * self, gboolean fd_memory)
{
  Session *s;
  GList *l;

  g_mutex_lock (&self->lock);
  self->fd_memory = fd_memory;
  s = self->session;
  if (!fd_memory) {
    if (self->mapping)
      gpushare_xfer_view_drop_fds (self->mapping->view);
    if (s && s->lane_mapping)
      gpushare_xfer_view_drop_fds (s->lane_mapping->view);
    for (l = s ? s->lane_mappings.head : NULL; l; l = l->next)
      gpushare_xfer_view_drop_fds (((Mapping *) l->data)->view);
  }
  g_mutex_unlock (&self->lock);
}

void
gpushare_client_set_flushing (GpuShareClient * self, gboolean flushing)
{
  GPtrArray *ended = NULL;
  GList *l;

  g_mutex_lock (&self->lock);
  self->flushing = flushing;
  /* a read that waits for the producer's signal of its frame returns,
   * also one of a ring replaced since it began */
  if (flushing) {
    G_LOCK (live_lock);
    for (l = self->live.head; l; l = l->next)
      if (mapping_try_ref (l->data))
        cancel_mapping (self, l->data);
    G_UNLOCK (live_lock);
  }
  if (!flushing && self->cancelled) {
    guint i;

    /* under the lock, so that a flush that begins now cancels them again
     * after this, not before */
    ended = g_steal_pointer (&self->cancelled);
    for (i = 0; i < ended->len; i++)
      gpushare_xfer_view_cancel (((Mapping *) g_ptr_array_index (ended,
                  i))->view, FALSE);
    g_ptr_array_set_free_func (ended, (GDestroyNotify) mapping_unref);
  }
  wake (self);
  g_mutex_unlock (&self->lock);
  /* without the lock: the last reference to a view unmaps it */
  if (ended)
    g_ptr_array_unref (ended);
}

gboolean
gpushare_client_flushing (GpuShareClient * self)
{
  gboolean flushing;

  g_mutex_lock (&self->lock);
  flushing = self->flushing;
  g_mutex_unlock (&self->lock);
  return flushing;
}

GpuShareMemType
gpushare_client_mem_type (GpuShareClient * self)
{
  GpuShareMemType type;

  g_mutex_lock (&self->lock);
  type = self->mem_type;
  g_mutex_unlock (&self->lock);
  return type;
}

guint64
gpushare_client_latency (GpuShareClient * self)
{
  guint64 latency;

  g_mutex_lock (&self->lock);
  latency = self->latency;
  g_mutex_unlock (&self->lock);
  return latency;
}

void
gpushare_client_get_stats (GpuShareClient * self, GpuShareClientStats * s)
{
  memset (s, 0, sizeof (*s));
  g_mutex_lock (&self->lock);
  s->state = state_to_string (self->state);
  s->mem_type = self->mem_type;
  s->sync_mode = self->sync_mode;
  s->peer_device = self->peer_device;
  s->mem_reason = g_strdup (self->mem_reason);
  s->epoch = self->mapped_epoch;
  s->frames_received = self->frames_received;
  s->frames_missed = self->frames_missed;
  /* skipped now: the frames since the last one received are missed, as
   * the next frame's gap will count them */
  if (self->stalled && self->session) {
    g_mutex_lock (&self->session->lock);
    if (self->session->view.have_sequence
        && self->stall_sequence > self->session->view.last_sequence)
      s->frames_missed += self->stall_sequence -
          self->session->view.last_sequence;
    g_mutex_unlock (&self->session->lock);
  }
  s->share = self->share;
  s->stalled = self->stalled;
  s->events_dropped = self->events_dropped;
  s->producer_pid = self->producer_pid;
  s->producer_name = g_strdup (self->producer_name);
  s->reconnects = self->reconnects;
  s->producer_live = self->producer_live;
  s->lane = self->session && self->session->lane;
  s->lane_metas = self->lane_metas;
  s->lane_spins = self->lane_spins;
  s->lane_spin_misses = self->lane_spin_misses;
  s->lane_spin_us = self->lane_spin_us;
  s->lane_early_wakes = self->lane_early_wakes;
  s->lane_early_hits = self->lane_early_hits;
  g_mutex_unlock (&self->lock);
}
