/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The producer core (gpushareserver.h).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpushareserver.h"
#include "gpushareside.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib-unix.h>
#include <gst/gst.h>

#include "gpushareconn.h"
#include "gpusharecontrol.h"
#include "gpushareids.h"
#include "gpusharelane.h"
#include "gpusharenegotiate.h"
#include "gpusharering.h"
#include "gpushareretain.h"
#include "gpusharetest.h"

GST_DEBUG_CATEGORY_STATIC (gpushare_server_debug);
#define GST_CAT_DEFAULT gpushare_server_debug

/* How often housekeeping () runs while the producer waits for a free
 * slot (leases are judged), and at most when nothing is due: processes
 * that exited are reaped within that.  Otherwise it runs when something
 * is due (a handshake deadline, a stall notice, an observer's status):
 * a stream that only streams wakes its control thread once a second. */
#define HOUSEKEEPING_MS 50
#define HOUSEKEEPING_IDLE_MS 1000
/* a handshake step past its deadline with the consumer's reply unread on
 * the socket: the time this thread has to read it */
#define HANDSHAKE_STRETCH_US (1000 * 1000)
/* how long a producer out of file descriptors does not take consumers,
 * where it has no spare one to refuse them with */
#define LISTEN_PAUSE_MS 100
/* how often a wait for consumers asks whether upstream stopped */
#define GATHER_LOOK_US (100 * 1000)
#define MAX_CLIENTS GPUSHARE_MAX_HOLDERS
/* a goodbye is best effort: never hold a stopping pipeline for long */
#define GOODBYE_FLUSH_MS 100
#define HANGUP_GRACE_MS 100
#define QUARANTINE_WINDOW_US \
  (GPUSHARE_SERVER_QUARANTINE_WINDOW_S * G_USEC_PER_SEC)
#define QUARANTINE_PROCESSES 16
#define QUARANTINE_UIDS 8

/* how often one process, or one uid, left slots quarantined lately */
typedef struct
{
  gint64 id;
  gint64 since;
  guint count;
} QuarantineTally;
/* an ERROR before a consumer is dropped: a moment to reach it */
#define REFUSAL_FLUSH_MS 10

typedef enum
{
  CLIENT_CONNECTED,             /* waiting for caps to announce */
  CLIENT_ANNOUNCED,             /* waiting for ACCEPT */
  CLIENT_EXPORTED,              /* SLOTS sent, waiting for MAPPED */
  CLIENT_READY,                 /* receives frames */
  CLIENT_OBSERVING,             /* an observer: STATUS only, no frames */
} ClientState;

typedef struct
{
  GpuShareServer *server;
  guint id;                     /* opaque, for logs and events */
  guint index;                  /* holder bit in the ring */
  ClientState state;
  GpuShareConn *conn;
  guint minor;                  /* of its protocol version, from ACCEPT */
  pid_t pid;
  gint pidfd;                   /* its process, from the connect on; -1 */
  uid_t uid;
  gid_t gid;                    /* its primary group, as it connected */
  guint32 mem_types;            /* offered to it in its ANNOUNCE */
  gchar *name;
  GpuShareMemType mem_type;
  GpuShareSyncMode sync_mode;   /* GPU memory only */
  gchar *mem_reason;
  gboolean connected_emitted;
  /* a consumer that streamed and maps a new ring (EXPORTED): the events
   * of the stream meanwhile (GpuShareEvent), sent in their order once it
   * has MAPPED, before the new ring's frames; at most MAX_HELD_EVENTS */
  GPtrArray *held_events;
  gint64 deadline;              /* monotonic us: its next step is due; 0 */
  gint64 exported_at;           /* monotonic us: its SLOTS went */
  gboolean deadline_stretched;  /* this step: its reply waited unread */
  guint64 mapped_epoch;
  guint64 frames_sent;
  guint64 frames_released;
  guint64 frames_dropped;
  guint64 stale_releases;       /* of frames of an earlier ring */
  /* its GOODBYE said buffers in its process still read the slots it holds
   * of frames up to held_upto (GPUSHARE_GOODBYE_FLAG_HELD) */
  gboolean goodbye_held;
  guint64 held_upto;
  /* why we refused it, once a protocol error failed its connection: the
   * transport's error code cannot say resource from unsupported */
  gboolean refused;
  GpuShareRemoveReason refused_reason;
  /* the GPU ring it was added to, and whether the SLOTS of a new one are
   * due from the control thread */
  GpuShareXferRing *gpu_ring;
  gboolean needs_slots;
  /* an observer (OBSERVE instead of ACCEPT): its STATUS interval, and
   * when the next is due (monotonic us) */
  gboolean observer;
  gboolean asked_to_observe;    /* sent OBSERVE, admitted or not */
  guint status_interval;
  gint64 next_status;
  /* connected while max-clients consumers were: only an observer, or a
   * consumer once a place is free at its ACCEPT, may stay */
  gboolean over_limit;
  /* leaky: the share its last FRAME said; the first frame sent to it
   * while it held its share or more (0: it holds less); and since when
   * (monotonic us; 0: it was not) it has been skipped, how many frames in
   * a row, and whether that was said (once per stall) */
  guint share;
  guint64 over_since;
  gint64 first_frame_us;        /* monotonic: its first frame; 0: none */
  guint64 frames_lent;          /* sent past its share as it started */
  gint64 skipped_since;
  guint64 skipped_run;
  gboolean stall_reported;
  /* its socket closed while its process may live on: the grace of
   * HANGUP_GRACE_MS for its pidfd to say it exited, watched by the control
   * thread (drop_client () decides after it) */
  GSource *grace_exit;
  GSource *grace_timeout;
  gchar *grace_detail;
  /* its pidfd, watched from the connect on: the process that connected
   * ended while its connection lived on (another process holds it: a
   * child it forked, a process it handed the socket to), so that the end
   * of its process says nothing of that connection's mappings (outlived) */
  GSource *watch_exit;
  gboolean outlived;
  /* its frame lane (LANE), written under the server lock, and the marks
   * put in it so far (one after each CAPS, META, EVENT or EOS); NULL:
   * its FRAMEs go on the socket */
  GpuShareLane *lane;
  guint64 lane_marks;
  gboolean lane_failed;         /* its releases in the lane did not read */
  gboolean heads_up;            /* it asked for heads-up in its lane */
  gboolean lane_metas;          /* and a meta region (since minor 9) */
  /* its last SLOTS gave it the side memory of its epoch (since minor 10):
   * it reads the payloads of the metas there */
  gboolean side;
} Client;

struct _GpuShareServer
{
  gint ref_count;
  GpuShareServerConfig config;
  gpointer log_object;
  GpuShareServerEventFunc event_func;
  gpointer user_data;

  /* control thread */
  GMainContext *context;        /* run by the process's control thread */
  gboolean attached;
  GSource *listen_source;
  GSource *listen_resume;       /* the listening paused: see out_of_fds () */
  GSource *housekeeping;
  gint listen_fd;
  /* held open, given up to accept a consumer this process has no
   * descriptor left for, and to tell it so: see out_of_fds () */
  gint spare_fd;
  gchar *bound_path;

  /* sockets of consumers gone with bytes of ours unread, descriptors
   * among them (gpushare_conn_set_linger_func ()), each until drained:
   * Lingering, under linger_lock, which no other lock is taken under */
  GMutex linger_lock;
  GArray *lingering;
  GSource *linger_source;       /* closes the drained ones while any is */

  /* everything below under lock */
  GMutex lock;
  GCond cond;
  guint cond_waiters;           /* threads in a wait on cond */
  /* when housekeeping () runs next (monotonic us): see housekeeping_by () */
  gint64 housekeeping_at;
  GQueue events;                /* GpuShareServerEvent, to deliver */
  gboolean flushing;
  Client *clients[MAX_CLIENTS];
  guint n_clients;              /* consumers: observers are not */
  guint n_observers;
  guint n_over_limit;           /* connected past max-clients, not counted
                                 * in n_clients */
  GpuShareServerStatusFunc status_func;
  gpointer status_data;
  guint64 busy_index;           /* holder bits still being torn down */
  guint next_client_id;
  guint64 instance;
  guint64 epoch;
  guint64 sequence;
  /* frames wait for consumers: at the start, and when a frame finds none
   * connected, until the number asked for are ready */
  gboolean gathering;
  /* the wait was announced (a WAITING event) */
  gboolean gathering_told;
  /* a lossless frame waits for the consumers that map a new ring: they
   * get one handshake step for it, not GPUSHARE_SERVER_MAP_TIMEOUTS */
  gboolean remap_waited;
  /* upstream stopped during a wait for consumers (stop_func: an EOS sent
   * to the source, as gst-launch-1.0 -e does on Ctrl-C), and the frames
   * after it go to nobody rather than wait, until a flush or a state
   * change */
  gboolean gathering_abandoned;
  GpuShareServerStopFunc stop_func;
  gpointer stop_data;
  /* the sticky events of the stream (GpuShareEvent), for consumers that
   * join: its stream-start first, the last tags, the last custom sticky
   * event of each name */
  GPtrArray *sticky;
  GpuShareRing ring;
  /* ring-size 0: the ring grows with the consumers of a leaky stream */
  gboolean ring_auto;
  GpuShareXferRing *system;     /* the system ring of this epoch */
  /* its side memory, where the metas' large payloads go (NULL: none), and
   * each slot's pages of it, asked for at the caps (0: none) */
  GpuShareSide *side;
  guint32 side_pages;
  /* the GPU rings of this epoch have side_pages of room past the frame
   * in each slot, for payloads in GPU memory */
  gboolean device_side;
  gboolean have_layout;
  GpuShareLayout layout;
  gboolean live;
  gboolean eos;
  guint64 latency;
  guint64 frames_rendered;
  /* meta entries of frames sent to a consumer without them: too large
   * for a META, and no room in its lane's meta region */
  guint64 metas_not_sent;
  gboolean told_metas_not_sent;
  /* a frame's metas as a META, for the consumers that take them so */
  GpuShareMeta *wire_meta;
  guint64 frames_dropped;
  guint64 frames_in_place;
  guint64 frames_copied;
  guint64 frames_to_gpu;
  gint64 waiting_since;
  guint n_waiting;
  guint64 slots_quarantined;
  guint64 rings_replaced;
  guint64 rings_grown;
  /* the processes whose consumers left slots quarantined lately, and
   * their uids (a process that forks a child for each is one uid) */
  QuarantineTally quarantined_by[QUARANTINE_PROCESSES];
  QuarantineTally quarantined_by_uid[QUARANTINE_UIDS];

  /* the GPU, probed at start, and the memory types offered */
  gboolean gpu_ok;
  gchar *gpu_reason;
  GpuShareGpuInfo gpu;
  guint32 offered_mem_types;
  /* a ring per memory type other than system memory that consumers
   * chose, by gpushare_mem_type_index (), made outside the lock on first
   * use */
  GpuShareXferRing *rings[GPUSHARE_MEM_N_TYPES];
  /* for a kind whose rings are retired (GPUSHARE_KIND_RETIRE): the
   * processes its ring of this epoch went to, and its rings of earlier
   * epochs, each kept until every process it went to said it closed it
   * (UNMAPPED, GOODBYE) or exited */
  GpuShareHolders *ring_holders[GPUSHARE_MEM_N_TYPES];
  GpuShareRetained *retired[GPUSHARE_MEM_N_TYPES];
};

static const gchar *const reason_names[] = {
  "goodbye", "hangup", "protocol", "version", "not-authorized",
  "unsupported", "slow", "too-many-clients", "peer-error", "resource",
  "shutdown", "timeout", "lease",
};

const gchar *
gpushare_remove_reason_to_string (GpuShareRemoveReason reason)
{
  if ((guint) reason < G_N_ELEMENTS (reason_names))
    return reason_names[reason];
  return "?";
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
    case CLIENT_OBSERVING:
      return "observing";
  }
  return "unknown";
}

/* ------------------------------------------------------------------------ */
/* Events: queued under the lock, delivered after it */

static void
queue_event (GpuShareServer * self, GpuShareServerEventType type, guint id,
    GpuShareRemoveReason reason, guint slots)
{
  GpuShareServerEvent *ev = g_new0 (GpuShareServerEvent, 1);

  ev->type = type;
  ev->client_id = id;
  ev->reason = reason;
  ev->slots = slots;
  g_queue_push_tail (&self->events, ev);
}

/* lock held: CONNECTED or REMOVED, with who the consumer is (client may
 * be NULL: refused before it became one, then pid and uid are those of
 * the peer) */
static void
queue_client_event (GpuShareServer * self, GpuShareServerEventType type,
    Client * client, gint pid, guint uid, GpuShareRemoveReason reason,
    const gchar * detail)
{
  GpuShareServerEvent *ev = g_new0 (GpuShareServerEvent, 1);

  ev->type = type;
  ev->reason = reason;
  ev->pid = pid;
  ev->uid = uid;
  if (client) {
    ev->client_id = client->id;
    ev->pid = client->pid;
    ev->uid = client->uid;
    ev->mem_type = client->mem_type;
    if (client->name)
      g_strlcpy (ev->name, client->name, sizeof (ev->name));
  }
  if (detail)
    g_strlcpy (ev->detail, detail, sizeof (ev->detail));
  g_queue_push_tail (&self->events, ev);
}

/* lock NOT held */
static void
deliver_events (GpuShareServer * self)
{
  GQueue events = G_QUEUE_INIT;
  GpuShareServerEvent *ev;

  g_mutex_lock (&self->lock);
  events = self->events;
  g_queue_init (&self->events);
  g_mutex_unlock (&self->lock);
  while ((ev = g_queue_pop_head (&events))) {
    if (self->event_func)
      self->event_func (self, ev, self->user_data);
    g_free (ev);
  }
}

/* ------------------------------------------------------------------------ */
/* Clients */

/* lock held: housekeeping () runs at the latest at (monotonic us).  Any
 * thread: the source is there from start to stop, the streaming thread's
 * calls between them. */
static void
housekeeping_by (GpuShareServer * self, gint64 at)
{
  if (!self->housekeeping || (self->housekeeping_at
          && self->housekeeping_at <= at))
    return;
  self->housekeeping_at = at;
  g_source_set_ready_time (self->housekeeping, at);
}

/* the one place a client's state changes */
static void
client_set_state (Client * client, ClientState state)
{
  GpuShareServer *self = client->server;
  guint timeout = self->config.handshake_timeout;

  GST_DEBUG_OBJECT (self->log_object, "client %u: %s -> %s", client->id,
      client_state_to_string (client->state), client_state_to_string (state));
  client->state = state;
  /* waiting for the consumer's ACCEPT or MAPPED: that step has a deadline;
   * waiting for our own caps, or streaming, has none */
  if (state == CLIENT_EXPORTED)
    client->exported_at = g_get_monotonic_time ();
  client->deadline_stretched = FALSE;
  if (timeout && (state == CLIENT_ANNOUNCED || state == CLIENT_EXPORTED)) {
    client->deadline = g_get_monotonic_time () + (gint64) timeout *1000;
    housekeeping_by (self, client->deadline);
  } else {
    client->deadline = 0;
  }
}

/* lock held.  Waits on the server's condition, until end_time (monotonic
 * us) when not 0; wake_waiters () wakes every thread in here.  A broadcast
 * is a system call even with nobody to wake, and one comes with every
 * release of every consumer: it is made only when a thread waits. */
static void
cond_wait (GpuShareServer * self, gint64 end_time)
{
  self->cond_waiters++;
  if (end_time)
    g_cond_wait_until (&self->cond, &self->lock, end_time);
  else
    g_cond_wait (&self->cond, &self->lock);
  self->cond_waiters--;
}

/* lock held */
static void
wake_waiters (GpuShareServer * self)
{
  if (self->cond_waiters)
    g_cond_broadcast (&self->cond);
}

/* a source of ours, if any, destroyed and let go; any thread */
static void
clear_source (GSource ** source)
{
  if (*source) {
    g_source_destroy (*source);
    g_clear_pointer (source, g_source_unref);
  }
}

/* the sources of a hang-up's grace, if any; any thread */
static void
grace_end (Client * client)
{
  clear_source (&client->grace_exit);
  clear_source (&client->grace_timeout);
}

typedef struct
{
  gint fd;
  uid_t uid;
} Lingering;

/* linger_lock held: closes the sockets drained (every one with all) */
static void
lingering_prune (GpuShareServer * self, gboolean all)
{
  guint i = 0;

  while (i < self->lingering->len) {
    Lingering *l = &g_array_index (self->lingering, Lingering, i);

    if (all || gpushare_socket_unread (l->fd) == 0) {
      close (l->fd);
      g_array_remove_index_fast (self->lingering, i);
    } else {
      i++;
    }
  }
}

static gboolean
lingering_tick (gpointer user_data)
{
  GpuShareServer *self = user_data;
  gboolean more;

  g_mutex_lock (&self->linger_lock);
  lingering_prune (self, FALSE);
  more = self->lingering->len > 0;
  if (!more)
    g_clear_pointer (&self->linger_source, g_source_unref);
  g_mutex_unlock (&self->linger_lock);
  return more ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

/* a consumer's connection closed with bytes of ours unread in its socket
 * (gpushare_conn_set_linger_func ()): counted against its uid until the
 * peer reads them or closes its socket, looked at every 100 ms */
static void
client_lingers (gint fd, gpointer user_data)
{
  GpuShareServer *self = user_data;
  Lingering l = { fd, (uid_t) - 1 };
  struct ucred cred;
  socklen_t len = sizeof (cred);

  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
    l.uid = cred.uid;
  g_mutex_lock (&self->linger_lock);
  g_array_append_val (self->lingering, l);
  if (!self->linger_source) {
    self->linger_source = g_timeout_source_new (100);
    g_source_set_callback (self->linger_source, lingering_tick, self, NULL);
    g_source_attach (self->linger_source, self->context);
  }
  g_mutex_unlock (&self->linger_lock);
}

/* sockets of uid's consumers that left bytes of ours unread, drained ones
 * closed first */
static guint
lingering_of (GpuShareServer * self, uid_t uid)
{
  guint i, n = 0;

  g_mutex_lock (&self->linger_lock);
  lingering_prune (self, FALSE);
  for (i = 0; i < self->lingering->len; i++)
    n += g_array_index (self->lingering, Lingering, i).uid == uid;
  g_mutex_unlock (&self->linger_lock);
  return n;
}

static void
client_free (Client * client)
{
  grace_end (client);
  clear_source (&client->watch_exit);
  g_free (client->grace_detail);
  if (client->conn) {
    gpushare_conn_close (client->conn);
    gpushare_conn_unref (client->conn);
  }
  if (client->pidfd >= 0)
    close (client->pidfd);
  g_clear_pointer (&client->gpu_ring, gpushare_xfer_ring_unref);
  gpushare_lane_free (client->lane);
  g_clear_pointer (&client->held_events, g_ptr_array_unref);
  g_free (client->name);
  g_free (client->mem_reason);
  g_free (client);
}

static gboolean
retires (GpuShareMemType type)
{
  return gpushare_xfer_kind_has (type, GPUSHARE_KIND_RETIRE);
}

static guint32
stream_flags (GpuShareServer * self)
{
  return self->live ? GPUSHARE_STREAM_FLAG_LIVE : 0;
}

/* lock held: refuse a client; it is dropped from the control thread with
 * this reason */
static void
refuse (Client * client, GpuShareErrorCode code, GpuShareRemoveReason reason,
    const gchar * text)
{
  GError *error = g_error_new (GPUSHARE_CONN_ERROR,
      GPUSHARE_CONN_ERROR_CLOSED, "%s", text);

  GST_WARNING_OBJECT (client->server->log_object, "client %u: %s",
      client->id, text);
  client->refused = TRUE;
  client->refused_reason = reason;
  /* queued before the failure: the transport sends what it holds before
   * it closes the socket */
  gpushare_conn_send_error (client->conn, code, text);
  gpushare_conn_fail (client->conn, error);
  g_error_free (error);
}

/* lock held: may this client map memory it could write (gpu-uids,
 * gpu-gids)? */
static gboolean
trusted_with_writable (GpuShareServer * self, Client * client)
{
  GArray *uids = self->config.gpu_uids, *gids = self->config.gpu_gids;

  if ((!uids || !uids->len) && (!gids || !gids->len))
    return TRUE;
  return client->uid == getuid () || gpushare_ids_contain (uids, client->uid)
      || gpushare_ids_contain (gids, client->gid);
}

/* lock held: what this client may be offered now.  Withheld from one not
 * trusted: every device memory type (failing closed for a kind registered
 * without GPUSHARE_KIND_WRITABLE), and host memory a transfer marks so */
static guint32
client_mem_types (GpuShareServer * self, Client * client)
{
  if (trusted_with_writable (self, client))
    return self->offered_mem_types;
  return self->offered_mem_types & GPUSHARE_MEM_HOST_MASK &
      ~gpushare_negotiate_mem_types_with (gpushare_xfer_policies (),
      GPUSHARE_KIND_WRITABLE);
}

#define NO_LONGER_TRUSTED "this consumer is no longer trusted with the " \
  "memory it took (the producer's gpu-uids and gpu-gids changed): it may " \
  "connect again for system memory"

/* lock held: gpu-uids or gpu-gids changed: what each client past its
 * ANNOUNCE may still take narrows, and one that took what it may no longer
 * have is dropped (its mappings stay its own; no new ring goes to it) */
static void
retrust_clients (GpuShareServer * self)
{
  guint i;

  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];
    guint32 allowed;

    if (!c || c->refused || c->state == CLIENT_CONNECTED)
      continue;
    allowed = client_mem_types (self, c);
    c->mem_types &= allowed;
    if (c->mem_type && !(c->mem_type & allowed))
      refuse (c, GPUSHARE_ERR_NOT_AUTHORIZED, GPUSHARE_REMOVE_NOT_AUTHORIZED,
          NO_LONGER_TRUSTED);
  }
}

static gboolean
send_announce (GpuShareServer * self, Client * client)
{
  GpuShareAnnounce *a = g_new0 (GpuShareAnnounce, 1);
  const gchar *name = self->config.name ? self->config.name : "";
  gboolean ok;

  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->schema_minor = GPUSHARE_VERSION_MINOR;
  client->mem_types = client_mem_types (self, client);
  a->mem_types = client->mem_types;
  /* the device block stays zero where no GPU memory is offered to it */
  if (self->gpu_ok && (client->mem_types & ~GPUSHARE_MEM_HOST_MASK)) {
    memcpy (a->device.uuid, self->gpu.uuid, 16);
    a->device.caps = self->gpu.device_caps;
    a->device.sync_modes = self->gpu.sync_modes;
    a->device.compute_mode = self->gpu.compute_mode;
  }
  a->flags = stream_flags (self);
  if (client->mem_types != self->offered_mem_types) {
    a->flags |= GPUSHARE_ANNOUNCE_FLAG_WITHHELD;
    GST_INFO_OBJECT (self->log_object, "client %u (uid %u, gid %u) is not "
        "offered GPU memory: not in gpu-uids or gpu-gids", client->id,
        (guint) client->uid, (guint) client->gid);
  }
  a->pid = getpid ();
  a->uid = getuid ();
  a->instance = self->instance;
  a->latency = self->latency;
  a->layout = self->layout;
  a->name_len = gpushare_utf8_prefix (name, GPUSHARE_MAX_NAME_LEN);
  memcpy (a->name, name, a->name_len);
  ok = gpushare_conn_send_announce (client->conn, a);
  g_free (a);
  if (!ok)
    return FALSE;
  client_set_state (client, CLIENT_ANNOUNCED);
  gpushare_test_point ("sink", "announce");
  return TRUE;
}

static void protocol_error (Client * client, const gchar * text);

/* lock held: an entry into the client's lane.  A lane its reader left
 * full, or whose reader's index cannot be, fails its connection: it is
 * dropped from the control thread (slow, protocol), as for a send queue
 * past its bound or a malformed message. */
static gboolean
lane_push (GpuShareServer * self, Client * client, GpuShareLaneEntry * e,
    const GpuShareFrameMetas * metas, gboolean * no_room)
{
  GpuShareLaneResult res = gpushare_lane_push (client->lane, e, metas);
  GError *error;

  if (no_room)
    *no_room = res == GPUSHARE_LANE_NO_ROOM;
  if (res == GPUSHARE_LANE_OK || res == GPUSHARE_LANE_NO_ROOM) {
    /* what it read of the lane it counts as hearing from us: no PING on
     * its socket while it reads (and no wake-up of its control thread) */
    if (client->minor >= GPUSHARE_MINOR_LANE_ALIVE)
      gpushare_conn_note_heard (client->conn,
          gpushare_lane_heard_us (client->lane));
    return res == GPUSHARE_LANE_OK;
  }
  if (res != GPUSHARE_LANE_FULL) {
    /* told why, as for a malformed message */
    gchar *text = g_strdup_printf ("frame lane: %s",
        gpushare_lane_result_to_string (res));

    protocol_error (client, text);
    g_free (text);
    return FALSE;
  }
  error = g_error_new (GPUSHARE_CONN_ERROR, GPUSHARE_CONN_ERROR_OVERFLOW,
      "frame lane: %s", gpushare_lane_result_to_string (res));
  GST_WARNING_OBJECT (self->log_object, "client %u: %s", client->id,
      error->message);
  gpushare_conn_fail (client->conn, error);
  g_error_free (error);
  return FALSE;
}

/* lock held: heads-up to the consumers of GPU memory of these types that
 * asked for it (docs/protocol.md, "Heads-up"): the frame begun is coming.
 * One that will not get it after all (skipped for its share) spins
 * for nothing once, which its lane's reader pays for with spins left out
 * later. */
static void
announce_frame (GpuShareServer * self, guint32 mem_types)
{
  guint i;

  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (c && c->heads_up && c->state == CLIENT_READY
        && c->mapped_epoch == self->epoch && (c->mem_type & mem_types))
      gpushare_lane_announce (c->lane);
  }
}

/* lock held: an ordered message (CAPS, META, EVENT, EOS) was just queued
 * on the client's socket; with a lane, its place among the frames */
static void
lane_mark (GpuShareServer * self, Client * client, gboolean sent)
{
  GpuShareLaneEntry e = { 0, };

  if (!client->lane || !sent)
    return;
  e.kind = GPUSHARE_LANE_ENTRY_MARK;
  e.mark = ++client->lane_marks;
  lane_push (self, client, &e, NULL, NULL);
}

static gboolean
send_eos (GpuShareServer * self, Client * client)
{
  gboolean sent = gpushare_conn_send_eos (client->conn, self->sequence);

  lane_mark (self, client, sent);
  return sent;
}

static gboolean
send_event (GpuShareServer * self, Client * client, const GpuShareEvent * ev)
{
  gboolean sent = gpushare_conn_send_event (client->conn, ev);

  lane_mark (self, client, sent);
  return sent;
}

/* lock held: a consumer that asked for a lane gets one, before its SLOTS.
 * One that cannot be made is no failure: its frames go on the socket. */
static void
send_lane (GpuShareServer * self, Client * client)
{
  GpuShareLaneInfo info;
  GError *error = NULL;
  GpuShareLane *lane = gpushare_lane_new (GPUSHARE_LANE_ENTRIES,
      client->lane_metas ? GPUSHARE_LANE_META_REGION : 0, &error);
  gint fd = lane ? gpushare_lane_dup_fd (lane, &error) : -1;

  if (fd < 0) {
    GST_WARNING_OBJECT (self->log_object, "client %u: no frame lane, its "
        "frames go on the socket: %s", client->id, error->message);
    g_clear_error (&error);
    gpushare_lane_free (lane);
    return;
  }
  gpushare_lane_get_info (lane, &info);
  if (!gpushare_conn_send_lane (client->conn, &info, fd)) {
    gpushare_lane_free (lane);
    return;
  }
  client->lane = lane;
  /* a PING from it now says its releases wait in the lane */
  gpushare_conn_deliver_pings (client->conn);
  GST_DEBUG_OBJECT (self->log_object, "client %u reads its frames from a "
      "lane of %u entries, with a meta region of %u bytes", client->id,
      info.n_entries, info.meta_size);
}

static void
send_caps (GpuShareServer * self, Client * client)
{
  GpuShareCaps *caps = g_new0 (GpuShareCaps, 1);

  caps->flags = stream_flags (self);
  caps->latency = self->latency;
  caps->layout = self->layout;
  lane_mark (self, client, gpushare_conn_send_caps (client->conn, caps));
  g_free (caps);
}


/* ------------------------------------------------------------------------ */
/* GPU rings: made and torn down outside the lock */

/* lock held.  The ring of type of an earlier epoch that consumers'
 * processes may still have open is kept aside (or, past
 * GPUSHARE_SERVER_MAX_RETIRED, no new ring of type is made).  FALSE with
 * error in that last case. */
static gboolean
retire_ring (GpuShareServer * self, GpuShareMemType type, GError ** error)
{
  guint t = gpushare_mem_type_index (type);
  GpuShareXferRing **ring = &self->rings[t];

  if (!*ring || !self->ring_holders[t]
      || gpushare_holders_reap (self->ring_holders[t]) == 0)
    return TRUE;
  if (!self->retired[t])
    self->retired[t] = gpushare_retained_new (GPUSHARE_SERVER_MAX_RETIRED,
        (GDestroyNotify) gpushare_xfer_ring_unref);
  if (!gpushare_retained_has_room (self->retired[t])) {
    /* freeing one of them could hand its memory to whatever the driver
     * allocates next while a consumer still reads it */
    g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
        "%u %s rings of earlier epochs are still open in consumers' "
        "processes", GPUSHARE_SERVER_MAX_RETIRED,
        gpushare_mem_type_to_string (type));
    GST_WARNING_OBJECT (self->log_object, "no new %s ring: %u of earlier "
        "epochs are still open in consumers' processes",
        gpushare_mem_type_to_string (type), GPUSHARE_SERVER_MAX_RETIRED);
    return FALSE;
  }
  gpushare_retained_add (self->retired[t], (*ring)->epoch, *ring,
      self->ring_holders[t]);
  self->ring_holders[t] = NULL;
  *ring = NULL;
  GST_DEBUG_OBJECT (self->log_object, "%u %s rings of earlier epochs kept",
      gpushare_retained_count (self->retired[t]),
      gpushare_mem_type_to_string (type));
  return TRUE;
}

/* lock held, and let go while the ring is made.  A reference to the GPU
 * ring of type for the current epoch, or NULL with error. */
static GpuShareXferRing *
ensure_gpu_ring (GpuShareServer * self, GpuShareMemType type, GError ** error)
{
  GpuShareXferRing **slot = &self->rings[gpushare_mem_type_index (type)];
  GpuShareXferRing *ring, *old = NULL;
  guint64 epoch = self->epoch;
  guint n_slots = self->ring.n_slots;
  /* slots as large as the ring's system slots, which take every frame of
   * the epoch (caps that shrank, then grow again within them, make no new
   * ring), and room past them for payloads in GPU memory, where asked for */
  gsize frame_size = self->device_side ?
      GPUSHARE_DEVICE_SIDE_START (self->layout.slot_size) +
      (gsize) self->side_pages * GPUSHARE_SIDE_PAGE : self->layout.slot_size;

  if (*slot && (*slot)->epoch == epoch)
    return gpushare_xfer_ring_ref (*slot);
  if (retires (type) && !retire_ring (self, type, error))
    return NULL;

  g_mutex_unlock (&self->lock);
  gpushare_conn_busy_begin ();
  ring = gpushare_xfer_ring_new (type, self->config.cuda_device_id, epoch,
      n_slots, frame_size, error);
  gpushare_conn_busy_end ();
  g_mutex_lock (&self->lock);
  if (!ring)
    return NULL;
  if (self->epoch != epoch || (*slot && (*slot)->epoch == epoch)) {
    /* made meanwhile by the other thread, or outdated already */
    GpuShareXferRing *have = *slot && (*slot)->epoch == self->epoch ?
        gpushare_xfer_ring_ref (*slot) : NULL;

    g_mutex_unlock (&self->lock);
    gpushare_xfer_ring_unref (ring);
    g_mutex_lock (&self->lock);
    if (!have)
      g_set_error (error, GPUSHARE_XFER_ERROR, GPUSHARE_XFER_ERROR_RESOURCE,
          "the ring changed while its GPU memory was made");
    return have;
  }
  old = *slot;
  *slot = ring;
  GST_DEBUG_OBJECT (self->log_object, "%s ring for epoch %" G_GUINT64_FORMAT,
      gpushare_mem_type_to_string (type), epoch);
  if (old) {
    g_mutex_unlock (&self->lock);
    gpushare_xfer_ring_unref (old);
    g_mutex_lock (&self->lock);
  }
  return gpushare_xfer_ring_ref (ring);
}

/* lock held: the consumer closed the ring of its retired kind of epoch
 * (every one for G_MAXUINT64); a ring of an earlier epoch nobody holds any
 * more goes */
static void
release_ring (GpuShareServer * self, Client * client, guint64 epoch)
{
  guint t = gpushare_mem_type_index (client->mem_type);
  GpuShareXferRing *ring = self->rings[t];
  guint freed;

  if (self->ring_holders[t] && ring && (epoch == G_MAXUINT64
          || epoch == ring->epoch))
    gpushare_holders_release (self->ring_holders[t], client->id);
  if (!self->retired[t])
    return;
  freed = gpushare_retained_release (self->retired[t], client->id, epoch);
  if (freed)
    GST_INFO_OBJECT (self->log_object, "%u %s rings of earlier epochs "
        "freed, %u still open in consumers' processes", freed,
        gpushare_mem_type_to_string (client->mem_type),
        gpushare_retained_count (self->retired[t]));
}

/* lock held: the retired rings nobody holds any more, to be freed once
 * the lock is let go (freeing one waits for its streams); NULL when none */
static GPtrArray *
take_freed_rings (GpuShareServer * self)
{
  GPtrArray *all = NULL;
  guint t, i;

  for (t = 0; t < GPUSHARE_MEM_N_TYPES; t++) {
    GPtrArray *freed = gpushare_retained_take_freed (self->retired[t]);

    if (!freed)
      continue;
    if (!all) {
      all = freed;
      continue;
    }
    for (i = 0; i < freed->len; i++)
      g_ptr_array_add (all, g_ptr_array_steal_index (freed, i--));
    g_ptr_array_unref (freed);
  }
  return all;
}

/* ------------------------------------------------------------------------ */
/* SLOTS */

/* lock held.  Sends client the slots of the current ring of its memory
 * type.  For GPU memory the lock is let go while the slots are exported
 * (device work): that is only done from the control thread, the one that
 * drops clients, so that client stays valid. */
static gboolean export_pending (gpointer user_data);

/* lock held.  The GPU slots of the current ring for client, from the
 * control thread: exporting GPU slots is device work, done without the
 * lock, and only the control thread may let the lock go with a client in
 * hand (it is the one that drops clients) */
static void
schedule_export (GpuShareServer * self, Client * client)
{
  GSource *source;

  if (client->needs_slots)
    return;
  client->needs_slots = TRUE;
  source = g_idle_source_new ();
  g_source_set_callback (source, export_pending, self, NULL);
  g_source_attach (source, self->context);
  g_source_unref (source);
}

/* lock held: a consumer of id is connected */
static gboolean
client_connected (guint id, gpointer user_data)
{
  GpuShareServer *self = user_data;
  guint i;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->id == id)
      return TRUE;
  return FALSE;
}

/* lock held: the ring of client's retired kind may go to its process,
 * unless that process is a new one of a uid whose processes that hung up
 * without a word and live on already hold it
 * GPUSHARE_SERVER_MAX_GONE_HOLDERS times (each a pidfd kept, without end
 * while they lived: a process that forked children that each took the
 * ring and hung up) */
static gboolean
may_hold_ring (GpuShareServer * self, Client * client)
{
  guint t = gpushare_mem_type_index (client->mem_type);
  GpuShareHolders *h = self->ring_holders[t];
  guint n;
  gchar *text;

  if (!h || !self->rings[t])
    return TRUE;
  gpushare_holders_reap (h);
  if (gpushare_holders_has_pid (h, client->pid))
    return TRUE;
  n = gpushare_holders_count_gone (h, client->uid, client_connected, self);
  if (n < GPUSHARE_SERVER_MAX_GONE_HOLDERS)
    return TRUE;
  text = g_strdup_printf ("%u processes of uid %u that hung up still hold "
      "the %s ring: no other one of that uid takes it until one exits", n,
      (guint) client->uid, gpushare_mem_type_to_string (client->mem_type));
  refuse (client, GPUSHARE_ERR_RESOURCE, GPUSHARE_REMOVE_RESOURCE, text);
  g_free (text);
  return FALSE;
}

static gboolean
send_slots (GpuShareServer * self, Client * client)
{
  GpuShareSlots *slots = g_new0 (GpuShareSlots, 1);
  gint fds[GPUSHARE_MAX_FDS];
  guint n_fds = 0;
  GError *error = NULL;
  GpuShareXferRing *ring = NULL, *had = NULL;
  guint64 epoch = self->epoch;
  gboolean ok;

  /* GPU slots are device work, maybe for many consumers in a row on this
   * thread: the peers of all its connections hear from it meanwhile */
  gpushare_conn_pulse ();
  if (retires (client->mem_type) && !may_hold_ring (self, client)) {
    g_free (slots);
    return FALSE;
  }
  /* a ring of memory this client may no longer have (its offer, narrowed
   * by retrust_clients ()) never goes to it */
  if (!(client->mem_type & client->mem_types)) {
    refuse (client, GPUSHARE_ERR_NOT_AUTHORIZED,
        GPUSHARE_REMOVE_NOT_AUTHORIZED, NO_LONGER_TRUSTED);
    g_free (slots);
    return FALSE;
  }
  /* and while one piece of it takes long */
  gpushare_conn_busy_begin ();
  gpushare_test_slow ("sink", "preexport");
  if (client->mem_type == GPUSHARE_MEM_SYSTEM) {
    /* self->system keeps it: no device work, no unlock */
    ok = gpushare_xfer_ring_export (self->system, client->index,
        slots, fds, &n_fds, &error);
  } else {
    ring = ensure_gpu_ring (self, client->mem_type, &error);
    ok = ring != NULL;
    if (ok) {
      had = client->gpu_ring;
      client->gpu_ring = gpushare_xfer_ring_ref (ring);
      g_mutex_unlock (&self->lock);
      if (had) {
        gpushare_xfer_ring_remove_consumer (had, client->index);
        gpushare_xfer_ring_unref (had);
      }
      ok = gpushare_xfer_ring_add_consumer (ring, client->index,
          client->sync_mode, client->minor, &error)
          && gpushare_xfer_ring_export (ring, client->index, slots, fds,
          &n_fds, &error);
      gpushare_xfer_ring_unref (ring);
      g_mutex_lock (&self->lock);
    }
  }
  gpushare_conn_busy_end ();
  /* a new ring came while GPU slots were made or exported (the streaming
   * thread grew the ring, or the caps changed): the new ring's follow
   * (announce_layout ()), and a ring out of date before it was made is
   * no resource missing.  A consumer whose first SLOTS these were had
   * not been exported to yet, so announce_layout () gave it the caps
   * alone: its slots are due all the same */
  if (self->epoch != epoch) {
    g_clear_error (&error);
    if (ok)
      gpushare_close_fds (fds, n_fds);
    g_free (slots);
    if (client->state == CLIENT_ANNOUNCED)
      schedule_export (self, client);
    return FALSE;
  }
  if (!ok) {
    gchar *text = g_strdup_printf ("the producer could not export its %s "
        "slots: %s", gpushare_mem_type_to_string (client->mem_type),
        error ? error->message : "unknown error");

    g_clear_error (&error);
    g_free (slots);
    refuse (client, GPUSHARE_ERR_RESOURCE, GPUSHARE_REMOVE_RESOURCE, text);
    g_free (text);
    return FALSE;
  }
  if (retires (client->mem_type)) {
    guint t = gpushare_mem_type_index (client->mem_type);

    /* from here on the consumer may open the ring */
    if (!self->ring_holders[t])
      self->ring_holders[t] = gpushare_holders_new ();
    gpushare_holders_add (self->ring_holders[t], client->id, client->pid,
        client->uid, client->pidfd);
  }
  /* the side memory of the epoch, last, to a consumer that knows it; one
   * that cannot have it reads the payloads inline (or not at all) */
  client->side = FALSE;
  if (self->side && client->minor >= GPUSHARE_MINOR_SIDE) {
    fds[n_fds] = gpushare_side_export (self->side, &error);
    if (fds[n_fds] >= 0) {
      n_fds++;
      slots->side_pages = gpushare_side_pages (self->side);
      client->side = TRUE;
    } else {
      GST_WARNING_OBJECT (self->log_object, "client %u: no side memory: %s",
          client->id, error->message);
      g_clear_error (&error);
    }
  }
  ok = gpushare_conn_send_slots (client->conn, slots, fds, n_fds);
  g_free (slots);
  /* before the lock is let go: its MAPPED may be waiting for it already */
  if (ok) {
    client_set_state (client, CLIENT_EXPORTED);
    gpushare_test_point ("sink", "export");
  }
  return ok;
}

/* control thread: the GPU slots of a new ring, for the GPU consumers that
 * mapped the old one (see announce_layout ()) */
static gboolean
export_pending (gpointer user_data)
{
  GpuShareServer *self = user_data;
  guint i;

  g_mutex_lock (&self->lock);
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c || !c->needs_slots)
      continue;
    c->needs_slots = FALSE;
    /* ANNOUNCED: its ACCEPT came, its first export met a new ring */
    if (c->state == CLIENT_EXPORTED || c->state == CLIENT_READY
        || (c->state == CLIENT_ANNOUNCED && c->mem_type))
      send_slots (self, c);
  }
  g_mutex_unlock (&self->lock);
  deliver_events (self);
  return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------------ */
/* Removal */

static guint quarantine_burst (GpuShareServer * self, pid_t pid, uid_t uid,
    gint64 now, gboolean * of_uid);

/* lock held: process pid reached its quarantine burst: its other
 * consumers go too, at once, as a new one of its would be refused.  The
 * burst was judged only as a process connected: one that opened its
 * connections first and left slots quarantined on each in turn replaced
 * the ring once a connection (15 times in 0.7 s, the bound 4).  (A uid's
 * burst refuses its new connections only: its processes are often every
 * consumer there is.) */
static void
refuse_at_burst (GpuShareServer * self, pid_t pid, uid_t uid)
{
  gboolean of_uid;
  guint n = quarantine_burst (self, pid, uid, g_get_monotonic_time (),
      &of_uid), i;
  gchar *text;

  if (!n || of_uid || pid <= 0)
    return;
  text = g_strdup_printf ("this process left slots quarantined %u times in "
      "%u s (each a new ring): its consumers are refused for the rest of "
      "that time", n, (guint) (QUARANTINE_WINDOW_US / G_USEC_PER_SEC));
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    /* those that hung up already go as what they did */
    if (c && !c->refused && !c->observer && c->pid == pid
        && !gpushare_conn_peer_closed (c->conn))
      refuse (c, GPUSHARE_ERR_TOO_MANY_CLIENTS, GPUSHARE_REMOVE_TOO_MANY, text);
  }
  g_free (text);
}

/* one more for id in t (n entries), within the window; a new id takes
 * the entry seen longest ago */
static void
tally_note (QuarantineTally * t, guint n, gint64 id, gint64 now)
{
  guint i, at = 0;

  for (i = 0; i < n; i++) {
    if (t[i].count && t[i].id == id) {
      at = i;
      break;
    }
    if (t[i].since < t[at].since)
      at = i;
  }
  if (!t[at].count || t[at].id != id
      || now - t[at].since > QUARANTINE_WINDOW_US) {
    t[at].id = id;
    t[at].since = now;
    t[at].count = 0;
  }
  t[at].count++;
}

/* id's count within the window, when it is limit or more; 0 otherwise */
static guint
tally_burst (const QuarantineTally * t, guint n, gint64 id, gint64 now,
    guint limit)
{
  guint i;

  for (i = 0; i < n; i++)
    if (t[i].count && t[i].id == id && now - t[i].since <= QUARANTINE_WINDOW_US
        && t[i].count >= limit)
      return t[i].count;
  return 0;
}

/* lock held: a consumer of pid and uid left slots quarantined now */
static void
note_quarantine (GpuShareServer * self, pid_t pid, uid_t uid, gint64 now)
{
  if (pid > 0)
    tally_note (self->quarantined_by, QUARANTINE_PROCESSES, pid, now);
  tally_note (self->quarantined_by_uid, QUARANTINE_UIDS, uid, now);
}

/* lock held: how many times pid, or else its uid, left slots quarantined
 * within the window, when that is GPUSHARE_SERVER_QUARANTINE_BURST or more
 * for the process, GPUSHARE_SERVER_QUARANTINE_BURST_UID for the uid; 0
 * otherwise.  *of_uid: the uid's count it is */
static guint
quarantine_burst (GpuShareServer * self, pid_t pid, uid_t uid, gint64 now,
    gboolean * of_uid)
{
  guint n = pid > 0 ? tally_burst (self->quarantined_by,
      QUARANTINE_PROCESSES, pid, now, GPUSHARE_SERVER_QUARANTINE_BURST) : 0;

  *of_uid = FALSE;
  if (n)
    return n;
  n = tally_burst (self->quarantined_by_uid, QUARANTINE_UIDS, uid, now,
      GPUSHARE_SERVER_QUARANTINE_BURST_UID);
  *of_uid = n > 0;
  return n;
}

/* lock NOT held; the one way a client goes (but at stop).  outlives: its
 * socket closed while its process lived on (hang_up ()) */
static void
drop_client_full (GpuShareServer * self, Client * client,
    GpuShareRemoveReason reason, const gchar * detail, gboolean outlives)
{
  const gchar *nick = gpushare_remove_reason_to_string (reason);
  guint id = client->id, index = client->index;
  GPtrArray *freed;
  GpuShareXferRing *gpu_ring;
  guint released, unseen = 0;
  gboolean quarantine, held;

  g_mutex_lock (&self->lock);
  if (self->clients[index] != client) {
    g_mutex_unlock (&self->lock);
    return;
  }
  self->clients[index] = NULL;
  if (client->observer)
    self->n_observers--;
  else if (client->over_limit)
    self->n_over_limit--;
  else
    self->n_clients--;
  /* a consumer that leaves while buffers in its process still wrap slots
   * in place says so in its GOODBYE, after a RELEASE for every other frame
   * it received: what it still holds of the frames up to the last it
   * received is read by those buffers.  The frames sent after that were
   * on their way as it left: it never read them.  A GPU consumer holds
   * slots in place too (io-mode import, the application's route), except
   * of a retired kind (legacy IPC), which its src only copies out of: its
   * mappings are closed at its goodbye, so that retired rings can be
   * freed (a HELD from it is not believed) */
  held = reason == GPUSHARE_REMOVE_GOODBYE && client->goodbye_held
      && !retires (client->mem_type);
  if (held)
    unseen = gpushare_ring_release_holder_after (&self->ring, index,
        client->held_upto);
  /* a consumer whose reads of its slots cannot be confirmed done may
   * still read them: they are never written again, the ring is replaced
   * instead.  Only a goodbye, a hang-up (its process, and so its mappings,
   * gone) or our own stop give slots back; for a GPU consumer not even a
   * hang-up (its copy out of a slot may still run on the GPU) */
  quarantine = held || outlives || (reason != GPUSHARE_REMOVE_GOODBYE
      && reason != GPUSHARE_REMOVE_SHUTDOWN
      && (reason != GPUSHARE_REMOVE_HANGUP
          || (client->mem_type != 0
              && !gpushare_mem_type_is_host (client->mem_type))));
  if (quarantine) {
    guint before = gpushare_ring_n_tainted (&self->ring);

    released = gpushare_ring_quarantine_holder (&self->ring, index);
    /* a slot two dropped consumers held counts once */
    self->slots_quarantined += gpushare_ring_n_tainted (&self->ring) - before;
  } else {
    released = gpushare_ring_release_holder (&self->ring, index);
  }
  /* its src closes every mapping before its goodbye */
  if (reason == GPUSHARE_REMOVE_GOODBYE && retires (client->mem_type))
    release_ring (self, client, G_MAXUINT64);
  /* its index is not handed out again before its GPU objects are gone */
  gpu_ring = client->gpu_ring;
  client->gpu_ring = NULL;
  if (gpu_ring)
    self->busy_index |= G_GUINT64_CONSTANT (1) << index;
  freed = take_freed_rings (self);
  if (quarantine && released > 0) {
    queue_event (self, GPUSHARE_SERVER_EVENT_QUARANTINE, id, reason, released);
    note_quarantine (self, client->pid, client->uid, g_get_monotonic_time ());
    refuse_at_burst (self, client->pid, client->uid);
  }
  /* an observer was never a consumer: its leaving is no consumer's */
  if (!client->observer && !client->asked_to_observe) {
    queue_event (self, GPUSHARE_SERVER_EVENT_NUM_CLIENTS, 0, 0, 0);
    queue_client_event (self, GPUSHARE_SERVER_EVENT_REMOVED, client, 0, 0,
        reason, detail);
  }
  wake_waiters (self);
  g_mutex_unlock (&self->lock);

  /* device work: forcing its semaphore words may take a while, and only
   * this ring's writers wait for it */
  if (gpu_ring) {
    gpushare_xfer_ring_remove_consumer (gpu_ring, index);
    gpushare_xfer_ring_unref (gpu_ring);
    g_mutex_lock (&self->lock);
    self->busy_index &= ~(G_GUINT64_CONSTANT (1) << index);
    g_mutex_unlock (&self->lock);
  }
  g_clear_pointer (&freed, g_ptr_array_unref);

  /* a peer that misbehaved is worth a warning; one that left is not */
  if (reason == GPUSHARE_REMOVE_GOODBYE || reason == GPUSHARE_REMOVE_HANGUP
      || reason == GPUSHARE_REMOVE_SHUTDOWN)
    GST_INFO_OBJECT (self->log_object, "client %u removed (%s): %s; %u "
        "slots reclaimed", id, nick, detail ? detail : "", released + unseen);
  else
    GST_WARNING_OBJECT (self->log_object, "client %u removed (%s): %s; %u "
        "slots reclaimed", id, nick, detail ? detail : "", released);
  if (quarantine && released > 0)
    GST_WARNING_OBJECT (self->log_object, "client %u: %u slots quarantined "
        "(%s); the ring is replaced at the next frame", id, released, held ?
        "buffers in its process still read them" :
        "its reads cannot be confirmed done");
  client_free (client);
  deliver_events (self);
}

static void
drop_client (GpuShareServer * self, Client * client,
    GpuShareRemoveReason reason, const gchar * detail)
{
  drop_client_full (self, client, reason, detail, FALSE);
}

/* control thread.  The end of a hang-up's grace: the consumer's process
 * exited (its pidfd is readable), or HANGUP_GRACE_MS passed first and it
 * lives on */
static void
hang_up_decided (Client * client, gboolean outlives)
{
  gchar *detail = g_steal_pointer (&client->grace_detail);

  grace_end (client);
  drop_client_full (client->server, client, GPUSHARE_REMOVE_HANGUP, detail,
      outlives);
  g_free (detail);
}

static gboolean
grace_exited (gint fd, GIOCondition condition, gpointer user_data)
{
  hang_up_decided (user_data, FALSE);
  return G_SOURCE_REMOVE;
}

static gboolean
grace_passed (gpointer user_data)
{
  hang_up_decided (user_data, TRUE);
  return G_SOURCE_REMOVE;
}

/* control thread.  A system-memory consumer whose socket closed while its
 * process lives on (its src lost us and connects again, or it closed the
 * socket itself) may still have buffers that read its slots in place: as
 * for a GOODBYE that says HELD, they are quarantined.  Its socket closes as
 * it exits, a moment before its pidfd says it exited: the process is given
 * HANGUP_GRACE_MS to show its end, watched from the control thread's main
 * loop, so that consumers hanging up at once hold up nobody (the wait used
 * to be a poll () on this thread: N of them stalled every other consumer
 * N x 100 ms).  Without a pidfd (a kernel without them) it counts as gone,
 * as it always did. */
static void
hang_up (GpuShareServer * self, Client * client, const gchar * detail)
{
  if (client->grace_exit)
    return;
  if (client->mem_type != GPUSHARE_MEM_SYSTEM || client->pidfd < 0) {
    drop_client (self, client, GPUSHARE_REMOVE_HANGUP, detail);
    return;
  }
  /* the process that connected ended before its connection did: whoever
   * held the connection since may map the slots still (outlived_process
   * ()) */
  if (client->outlived) {
    drop_client_full (self, client, GPUSHARE_REMOVE_HANGUP, detail, TRUE);
    return;
  }
  client->grace_detail = g_strdup (detail);
  client->grace_exit = g_unix_fd_source_new (client->pidfd, G_IO_IN);
  g_source_set_callback (client->grace_exit, G_SOURCE_FUNC (grace_exited),
      client, NULL);
  g_source_attach (client->grace_exit, self->context);
  client->grace_timeout = g_timeout_source_new (HANGUP_GRACE_MS);
  g_source_set_callback (client->grace_timeout, grace_passed, client, NULL);
  g_source_attach (client->grace_timeout, self->context);
}

/* control thread.  The process that connected a consumer ended.  As it
 * exits, the kernel closes its files before its pidfd says it ended: a
 * connection still open then is held by another process, which got it
 * with a fork or over a socket, and may map the slots too.  Its hang-up
 * will say nothing of that process's end, so what it holds then is
 * quarantined, as for a process that lives on (hang_up ()). */
static gboolean
outlived_process (gint fd, GIOCondition condition, gpointer user_data)
{
  Client *client = user_data;

  if (!gpushare_conn_peer_closed (client->conn)) {
    client->outlived = TRUE;
    GST_INFO_OBJECT (client->server->log_object, "consumer %u: the process "
        "that connected it (pid %d) ended, another holds its connection",
        client->id, (gint) client->pid);
  }
  g_clear_pointer (&client->watch_exit, g_source_unref);
  return G_SOURCE_REMOVE;
}

/* why one more consumer is refused, in words that count right */
static gchar *
too_many_text (guint n, guint max)
{
  return g_strdup_printf ("%u consumer%s connected already (max-clients %u)",
      n, n == 1 ? " is" : "s are", max);
}

static GpuShareRemoveReason
reason_from_error (const GError * error)
{
  if (!error || error->domain != GPUSHARE_CONN_ERROR)
    return GPUSHARE_REMOVE_PROTOCOL;
  switch (error->code) {
    case GPUSHARE_CONN_ERROR_HANGUP:
    case GPUSHARE_CONN_ERROR_IO:
      return GPUSHARE_REMOVE_HANGUP;
    case GPUSHARE_CONN_ERROR_VERSION:
      return GPUSHARE_REMOVE_VERSION;
    case GPUSHARE_CONN_ERROR_OVERFLOW:
      return GPUSHARE_REMOVE_SLOW;
    case GPUSHARE_CONN_ERROR_TIMEOUT:
      return GPUSHARE_REMOVE_TIMEOUT;
    default:
      return GPUSHARE_REMOVE_PROTOCOL;
  }
}

static void
client_closed (GpuShareConn * conn, const GError * error, gpointer user_data)
{
  Client *client = user_data;
  GpuShareServer *self = client->server;
  GpuShareRemoveReason reason;

  g_mutex_lock (&self->lock);
  /* the transport already told the peer why, where it broke the protocol;
   * where we refused it, we said why ourselves */
  reason = client->refused ? client->refused_reason : reason_from_error (error);
  g_mutex_unlock (&self->lock);
  if (reason == GPUSHARE_REMOVE_HANGUP)
    hang_up (self, client, error ? error->message : NULL);
  else
    drop_client (self, client, reason, error ? error->message : NULL);
}

/* ------------------------------------------------------------------------ */
/* Messages from consumers, on the control thread, lock held */

static void
protocol_error (Client * client, const gchar * text)
{
  refuse (client, GPUSHARE_ERR_PROTOCOL, GPUSHARE_REMOVE_PROTOCOL, text);
}

/* lock held: consumers past their ACCEPT */
static guint
n_accepted_consumers (GpuShareServer * self)
{
  guint i, n = 0;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && (self->clients[i]->state == CLIENT_EXPORTED
            || self->clients[i]->state == CLIENT_READY))
      n++;
  return n;
}

static void
handle_accept (GpuShareServer * self, Client * client,
    const GpuShareAccept * acc)
{
  const gchar *why_not = NULL;

  if (client->state != CLIENT_ANNOUNCED) {
    protocol_error (client, "ACCEPT out of order");
    return;
  }
  /* max-clients holds at the ACCEPT too: a connection counted at its
   * connect may have turned out an observer, and one that connected past
   * the limit may find a place now; the first to accept take them */
  if (n_accepted_consumers (self) >= MIN (self->config.max_clients,
          MAX_CLIENTS)) {
    gchar *text = too_many_text (n_accepted_consumers (self),
        MIN (self->config.max_clients, MAX_CLIENTS));

    refuse (client, GPUSHARE_ERR_TOO_MANY_CLIENTS, GPUSHARE_REMOVE_TOO_MANY,
        text);
    g_free (text);
    return;
  }
  if (client->over_limit) {
    client->over_limit = FALSE;
    self->n_over_limit--;
    self->n_clients++;
  }
  g_free (client->name);
  client->name = g_strndup (acc->name, acc->name_len);
  g_free (client->mem_reason);
  client->mem_reason = acc->reason_len ?
      g_strndup (acc->reason, acc->reason_len) : g_strdup ("not given");
  /* what its ANNOUNCE offered it, not what others are offered */
  if (!gpushare_negotiate_check_accept (acc, client->mem_types,
          self->gpu_ok ? self->gpu.sync_modes : 0, &why_not)) {
    refuse (client, GPUSHARE_ERR_UNSUPPORTED, GPUSHARE_REMOVE_UNSUPPORTED,
        why_not);
    return;
  }
  client->mem_type = acc->mem_type;
  client->minor = acc->schema_minor;
  client->sync_mode = gpushare_mem_type_is_host (acc->mem_type) ? 0 :
      acc->sync_mode;
  GST_INFO_OBJECT (self->log_object, "client %u takes %s memory (%s)",
      client->id, gpushare_mem_type_to_string (client->mem_type),
      client->mem_reason);
  client->lane_metas = (acc->flags & GPUSHARE_ACCEPT_FLAG_LANE_METAS)
      && client->minor >= GPUSHARE_MINOR_LANE_METAS;
  if ((acc->flags & GPUSHARE_ACCEPT_FLAG_LANE)
      && client->minor >= GPUSHARE_MINOR_LANE)
    send_lane (self, client);
  client->heads_up = client->lane
      && (acc->flags & GPUSHARE_ACCEPT_FLAG_HEADS_UP)
      && client->minor >= GPUSHARE_MINOR_HEADS_UP;
  send_slots (self, client);
}

/* An observer instead of a consumer: it takes no frames, holds no slot
 * and counts neither against max-clients nor towards min-consumers; it
 * gets a STATUS every interval (housekeeping ()) and the stream's CAPS
 * and EOS.  It was admitted as a consumer is, by its credentials. */
static void
handle_observe (GpuShareServer * self, Client * client,
    const GpuShareObserve * obs)
{
  /* out of order, from a consumer that streams or is mapping its slots:
   * its going is a consumer's (client-removed) */
  if (client->state != CLIENT_ANNOUNCED || client->mem_type) {
    protocol_error (client, "OBSERVE out of order");
    return;
  }
  /* whatever comes of it now, it never was a consumer */
  client->asked_to_observe = TRUE;
  if (self->n_observers >= GPUSHARE_SERVER_MAX_OBSERVERS) {
    gchar *text = g_strdup_printf ("%u observers are connected already "
        "(at most %u)", self->n_observers, GPUSHARE_SERVER_MAX_OBSERVERS);

    refuse (client, GPUSHARE_ERR_TOO_MANY_CLIENTS, GPUSHARE_REMOVE_TOO_MANY,
        text);
    g_free (text);
    return;
  }
  g_free (client->name);
  client->name = g_strndup (obs->name, obs->name_len);
  client->minor = obs->schema_minor;
  client->observer = TRUE;
  client->status_interval = obs->interval_ms;
  client->next_status = 0;
  housekeeping_by (self, g_get_monotonic_time ());
  client_set_state (client, CLIENT_OBSERVING);
  if (client->over_limit) {
    client->over_limit = FALSE;
    self->n_over_limit--;
  } else {
    self->n_clients--;
  }
  self->n_observers++;
  queue_event (self, GPUSHARE_SERVER_EVENT_NUM_CLIENTS, 0, 0, 0);
  GST_INFO_OBJECT (self->log_object, "client %u (pid %d) observes, a status "
      "every %u ms", client->id, (gint) client->pid, obs->interval_ms);
}

#define MAX_HELD_EVENTS 64

static GpuShareEvent *
event_copy (const GpuShareEvent * ev)
{
  return g_memdup2 (ev, G_STRUCT_OFFSET (GpuShareEvent, text) +
      ev->text_len + 1);
}

/* lock held: ev kept for a client that maps a new ring (Client's
 * held_events); past MAX_HELD_EVENTS the oldest goes, said */
static void
hold_event (GpuShareServer * self, Client * client, const GpuShareEvent * ev)
{
  if (!client->held_events)
    client->held_events = g_ptr_array_new_with_free_func (g_free);
  if (client->held_events->len >= MAX_HELD_EVENTS) {
    GST_WARNING_OBJECT (self->log_object, "client %u: more than %u events "
        "while it maps a new ring: the oldest is dropped", client->id,
        MAX_HELD_EVENTS);
    g_ptr_array_remove_index (client->held_events, 0);
  }
  g_ptr_array_add (client->held_events, event_copy (ev));
}

/* lock held */
static void
send_held_events (GpuShareServer * self, Client * client)
{
  guint i;

  for (i = 0; client->held_events && i < client->held_events->len; i++)
    send_event (self, client, g_ptr_array_index (client->held_events, i));
  g_clear_pointer (&client->held_events, g_ptr_array_unref);
}

/* lock held */
static void
send_sticky (GpuShareServer * self, Client * client)
{
  guint i;

  for (i = 0; client->minor >= GPUSHARE_MINOR_EVENT && self->sticky
      && i < self->sticky->len; i++)
    send_event (self, client, g_ptr_array_index (self->sticky, i));
}

static void
handle_mapped (GpuShareServer * self, Client * client, const GpuShareMapped * m)
{
  if (client->state != CLIENT_EXPORTED && client->state != CLIENT_READY) {
    protocol_error (client, "MAPPED out of order");
    return;
  }
  if (m->epoch > self->epoch) {
    protocol_error (client, "MAPPED of a future ring");
    return;
  }
  /* a MAPPED for a ring that a caps change replaced meanwhile: the SLOTS of
   * the new ring are on their way, wait for their MAPPED */
  if (m->epoch != self->epoch || client->state == CLIENT_READY)
    return;
  client->mapped_epoch = m->epoch;
  client_set_state (client, CLIENT_READY);
  gpushare_test_point ("sink", "ready");
  /* the stream's sticky events before its first frame; or those it
   * missed while it mapped a new ring */
  if (!client->connected_emitted)
    send_sticky (self, client);
  send_held_events (self, client);
  /* a consumer that joins after the end still learns it ended */
  if (self->eos)
    send_eos (self, client);
  wake_waiters (self);
  if (!client->connected_emitted) {
    client->connected_emitted = TRUE;
    queue_event (self, GPUSHARE_SERVER_EVENT_NUM_CLIENTS, 0, 0, 0);
    queue_client_event (self, GPUSHARE_SERVER_EVENT_CONNECTED, client, 0, 0,
        0, NULL);
  }
}

static void
handle_unmapped (GpuShareServer * self, Client * client,
    const GpuShareMapped * m)
{
  if (client->state != CLIENT_EXPORTED && client->state != CLIENT_READY) {
    protocol_error (client, "UNMAPPED out of order");
    return;
  }
  if (m->epoch > self->epoch) {
    protocol_error (client, "UNMAPPED of a future ring");
    return;
  }
  if (retires (client->mem_type))
    release_ring (self, client, m->epoch);
}

static gboolean
handle_release (GpuShareServer * self, Client * client,
    const GpuShareRelease * r)
{
  GpuShareRingResult res;

  if (client->state != CLIENT_EXPORTED && client->state != CLIENT_READY) {
    protocol_error (client, "RELEASE out of order");
    return FALSE;
  }
  /* each frame it was sent comes back once at most, in its ring or as a
   * release of a ring replaced since: one that gives back more (releases
   * of an earlier ring, which cost nothing to write, as fast as they are
   * read) would keep the producer reading them under its lock */
  if (client->frames_released + client->stale_releases >= client->frames_sent) {
    protocol_error (client, "more RELEASEs than frames it was sent");
    return FALSE;
  }
  res = gpushare_ring_release (&self->ring, r->epoch, r->slot, r->generation,
      client->index);
  if (res == GPUSHARE_RING_STALE_EPOCH && r->epoch < self->epoch) {
    /* a slot of a replaced ring: nothing to give back */
    client->stale_releases++;
    return TRUE;
  }
  if (res != GPUSHARE_RING_OK) {
    gchar *text = g_strdup_printf ("bad RELEASE: %s",
        gpushare_ring_result_to_string (res));

    protocol_error (client, text);
    g_free (text);
    return FALSE;
  }
  client->frames_released++;
  GST_LOG_OBJECT (self->log_object, "client %u released slot %u",
      client->id, r->slot);
  wake_waiters (self);
  return TRUE;
}

/* lock held: the releases a client wrote into its lane, each as its
 * RELEASE message would be (handle_release ()).  An index or a release
 * that cannot be fails it, once. */
static void
drain_client (GpuShareServer * self, Client * client)
{
  GpuShareLaneResult res;
  GpuShareRelease r;
  gboolean any = FALSE;

  if (!client->lane || client->lane_failed)
    return;
  while ((res = gpushare_lane_release_pop (client->lane, &r)) ==
      GPUSHARE_LANE_OK) {
    if (!handle_release (self, client, &r)) {
      client->lane_failed = TRUE;
      return;
    }
    any = TRUE;
  }
  /* its releases say it lives, as its RELEASE messages did for the
   * heartbeat: a busy consumer's control thread may be late to PING */
  if (any)
    gpushare_conn_note_alive (client->conn);
  if (res != GPUSHARE_LANE_EMPTY) {
    gchar *text = g_strdup_printf ("releases of the frame lane: %s",
        gpushare_lane_result_to_string (res));

    client->lane_failed = TRUE;
    protocol_error (client, text);
    g_free (text);
  }
}

/* lock held: every client's releases in its lane */
static void
drain_releases (GpuShareServer * self)
{
  guint i;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i])
      drain_client (self, self->clients[i]);
}

/* lock held: the producer waits for a slot (TRUE), or no longer does.
 * Its consumers then wake it (a PING) when they write a release into
 * their lanes; after TRUE the lanes are read again, so that a release
 * written just before is not waited for. */
static void
lanes_waiting (GpuShareServer * self, gboolean waiting)
{
  guint i;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->lane)
      gpushare_lane_release_waiting (self->clients[i]->lane, waiting);
  if (waiting)
    drain_releases (self);
}

static void
client_message (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, gpointer user_data)
{
  Client *client = user_data;
  GpuShareServer *self = client->server;
  GPtrArray *freed;
  gboolean pending;

  /* no message from a consumer carries fds: refuse and close them */
  if (n_fds > 0) {
    gpushare_close_fds (fds, n_fds);
    g_mutex_lock (&self->lock);
    protocol_error (client, "consumer sent file descriptors");
    g_mutex_unlock (&self->lock);
    return;
  }

  g_mutex_lock (&self->lock);
  /* what it released through its lane came before this message */
  drain_client (self, client);
  switch (msg->type) {
    case GPUSHARE_MSG_PING:
      /* its lane's releases, read above: the producer waits for them */
      break;
    case GPUSHARE_MSG_ACCEPT:
      handle_accept (self, client, &msg->u.accept);
      break;
    case GPUSHARE_MSG_OBSERVE:
      handle_observe (self, client, &msg->u.observe);
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
      drop_client (self, client, GPUSHARE_REMOVE_GOODBYE, "goodbye");
      return;
    case GPUSHARE_MSG_ERROR:{
      gchar *text = g_strdup_printf ("consumer error %s: %s",
          gpushare_error_code_to_string (msg->u.error.code),
          msg->u.error.text);

      g_mutex_unlock (&self->lock);
      drop_client (self, client, GPUSHARE_REMOVE_PEER_ERROR, text);
      g_free (text);
      return;
    }
    default:
      protocol_error (client, "message not allowed from a consumer");
      break;
  }
  freed = take_freed_rings (self);
  /* most messages (every RELEASE) queue none: no second lock for them */
  pending = !g_queue_is_empty (&self->events);
  g_mutex_unlock (&self->lock);
  g_clear_pointer (&freed, g_ptr_array_unref);
  if (pending)
    deliver_events (self);
}

/* ------------------------------------------------------------------------ */
/* Admission and housekeeping, on the control thread */

static void
refuse_connection (GpuShareServer * self, gint fd, GpuShareErrorCode code,
    const gchar * text)
{
  GpuShareConn *conn = gpushare_conn_new (fd, self->context, NULL, NULL,
      NULL);

  gpushare_conn_send_error (conn, code, text);
  gpushare_conn_flush (conn, REFUSAL_FLUSH_MS);
  gpushare_conn_close (conn);
  gpushare_conn_unref (conn);
}

/* lock NOT held: tell a client why and drop it */
static void
expel (GpuShareServer * self, Client * c, GpuShareErrorCode code,
    GpuShareRemoveReason reason, const gchar * text)
{
  gpushare_conn_send_error (c->conn, code, text);
  gpushare_conn_flush (c->conn, REFUSAL_FLUSH_MS);
  drop_client (self, c, reason, text);
}

/* control thread: a STATUS to each observer whose interval passed, one
 * text for all of them, made without the lock (it reads the stats) */
static void
send_status (GpuShareServer * self, gint64 now)
{
  GpuShareServerStatusFunc func;
  GpuShareStatus *st;
  gpointer data;
  gboolean due = FALSE;
  gchar *text;
  guint i;

  g_mutex_lock (&self->lock);
  func = self->status_func;
  data = self->status_data;
  for (i = 0; i < MAX_CLIENTS && self->n_observers; i++)
    if (self->clients[i] && self->clients[i]->observer
        && now >= self->clients[i]->next_status)
      due = TRUE;
  g_mutex_unlock (&self->lock);
  if (!due || !func || !(text = func (self, data)))
    return;
  st = g_new0 (GpuShareStatus, 1);
  st->text_len = strlen (text);
  if (st->text_len == 0 || st->text_len > GPUSHARE_MAX_STATUS_LEN) {
    GST_WARNING_OBJECT (self->log_object, "a status of %u bytes: not sent",
        st->text_len);
    g_free (text);
    g_free (st);
    return;
  }
  memcpy (st->text, text, st->text_len);
  g_free (text);
  g_mutex_lock (&self->lock);
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c || !c->observer || now < c->next_status)
      continue;
    c->next_status = now + (gint64) c->status_interval * 1000;
    gpushare_conn_send_status (c->conn, st);
  }
  g_mutex_unlock (&self->lock);
  g_free (st);
}

/* lock held: consumers that stream, whichever ring they have mapped */
static guint
n_streaming_clients (GpuShareServer * self)
{
  guint i, n = 0;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->state == CLIENT_READY)
      n++;
  return n;
}

/* lock held.  Consumers a leaky producer has skipped for
 * GPUSHARE_STALL_NOTICE_MS, not said yet: each is told (NOTICE, minor 6),
 * logged, and its event queued for the element to post.  Once per stall:
 * a frame sent ends it.  Returns how many. */
static guint
find_stalled (GpuShareServer * self, gint64 now)
{
  guint i, n = 0, n_streaming = n_streaming_clients (self);

  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];
    GpuShareServerEvent *ev;
    GpuShareNotice notice = { 0, };
    guint held, share;
    gint64 ms;

    if (!c || c->state != CLIENT_READY || !c->skipped_since
        || c->stall_reported)
      continue;
    ms = (now - c->skipped_since) / 1000;
    if (ms < GPUSHARE_STALL_NOTICE_MS)
      continue;
    c->stall_reported = TRUE;
    held = gpushare_ring_n_held_by (&self->ring, c->index);
    share = gpushare_ring_share (self->ring.n_slots, n_streaming);
    ev = g_new0 (GpuShareServerEvent, 1);
    n++;
    ev->type = GPUSHARE_SERVER_EVENT_STALLED;
    ev->client_id = c->id;
    ev->pid = c->pid;
    ev->uid = c->uid;
    ev->mem_type = c->mem_type;
    if (c->name)
      g_strlcpy (ev->name, c->name, sizeof (ev->name));
    ev->slots = held;
    ev->share = share;
    ev->n_consumers = n_streaming;
    ev->skipped = c->skipped_run;
    ev->skipped_ms = (guint) MIN (ms, G_MAXUINT);
    g_snprintf (ev->detail, sizeof (ev->detail), "consumer %u (pid %d) has "
        "been skipped for %u ms (%" G_GUINT64_FORMAT " frames): it holds %u "
        "slots, its share is %u (a ring of %u slots, %u consumers); its "
        "pipeline keeps the buffers it was given (paused or blocked "
        "downstream)", c->id, (gint) c->pid, ev->skipped_ms, ev->skipped,
        held, share, self->ring.n_slots, n_streaming);
    GST_WARNING_OBJECT (self->log_object, "%s", ev->detail);
    g_queue_push_tail (&self->events, ev);
    if (c->minor >= GPUSHARE_MINOR_NOTICE) {
      notice.code = GPUSHARE_NOTICE_STALLED;
      notice.share = share;
      notice.slots_held = held;
      notice.n_consumers = n_streaming;
      notice.skipped = c->skipped_run;
      notice.sequence = self->sequence;
      gpushare_conn_send_notice (c->conn, &notice);
    }
  }
  return n;
}

/* Drops the consumers whose handshake step is overdue (a half-open
 * handshake must not hold a client place, and a lossless producer must not
 * wait forever for a consumer that never maps a new ring), and those whose
 * slot lease expired while the producer waits for a slot. */
/* housekeeping's source runs at the ready time housekeeping_by () set */
static gboolean
housekeeping_dispatch (GSource * source, GSourceFunc callback,
    gpointer user_data)
{
  return callback ? callback (user_data) : G_SOURCE_REMOVE;
}

static GSourceFuncs housekeeping_funcs = {
  NULL, NULL, housekeeping_dispatch, NULL, NULL, NULL
};

/* when housekeeping () is due next, after it ran at now */
static void
housekeeping_next (GpuShareServer * self, gint64 now)
{
  gint64 next = now + HOUSEKEEPING_IDLE_MS * 1000;
  guint i;

  g_mutex_lock (&self->lock);
  if (self->waiting_since)
    next = MIN (next, now + HOUSEKEEPING_MS * 1000);
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c)
      continue;
    if (c->deadline)
      next = MIN (next, c->deadline);
    if (c->state == CLIENT_READY && c->skipped_since && !c->stall_reported)
      next = MIN (next, c->skipped_since + GPUSHARE_STALL_NOTICE_MS * 1000);
    /* a STATUS not sent (no text) keeps its time: at most every 50 ms */
    if (c->observer)
      next = MIN (next, MAX (c->next_status, now + HOUSEKEEPING_MS * 1000));
  }
  /* what is due now runs again at once, as a timeout of 0 would */
  self->housekeeping_at = 0;
  housekeeping_by (self, MAX (next, now + 1000));
  g_mutex_unlock (&self->lock);
}

/* lock held: client's handshake step is past its deadline at now; TRUE
 * where it gets more time (its deadline moved), FALSE where it is late */
static gboolean
deadline_extended (GpuShareServer * self, Client * c, gint64 now)
{
  gint64 timeout_us = (gint64) self->config.handshake_timeout * 1000;
  gint64 map_us = GPUSHARE_SERVER_MAP_TIMEOUTS * timeout_us;

  /* this thread was held up (device work, a busy host) with the
   * consumer's reply on the socket, unread: the step was on time.  Once
   * a step, for as long as it takes to read it */
  if (!c->deadline_stretched && gpushare_conn_input_pending (c->conn)) {
    c->deadline_stretched = TRUE;
    c->deadline = now + HANDSHAKE_STRETCH_US;
  } else if (c->state == CLIENT_EXPORTED
      && !(self->remap_waited && c->connected_emitted)
      && now - gpushare_conn_last_received (c->conn) < timeout_us
      && now - c->exported_at < map_us) {
    /* mapping its slots, heard from within the step's time: device work
     * that takes long on a busy GPU, up to GPUSHARE_SERVER_MAP_TIMEOUTS
     * steps; but one step only where a lossless producer waits for it (a
     * new ring after a caps change), or a consumer that says nothing
     * but PING would hold every frame up for twelve */
    c->deadline = MIN (now + timeout_us, c->exported_at + map_us);
    GST_DEBUG_OBJECT (self->log_object, "client %u maps its slots for %"
        G_GINT64_FORMAT " ms now, and is heard from", c->id,
        (now - c->exported_at) / 1000);
  } else {
    return FALSE;
  }
  housekeeping_by (self, c->deadline);
  return TRUE;
}

/* lock not held: the consumer at index i, if it is still there, told
 * ERROR TIMEOUT with text (freed) and dropped as lease, detail the
 * removal's */
static void
drop_for_lease (GpuShareServer * self, guint i, gchar * text,
    const gchar * detail)
{
  Client *c;

  g_mutex_lock (&self->lock);
  c = self->clients[i];
  g_mutex_unlock (&self->lock);
  if (c) {
    GST_WARNING_OBJECT (self->log_object, "client %u (pid %d): %s", c->id,
        (gint) c->pid, text);
    gpushare_conn_send_error (c->conn, GPUSHARE_ERR_TIMEOUT, text);
    gpushare_conn_flush (c->conn, REFUSAL_FLUSH_MS);
    drop_client (self, c, GPUSHARE_REMOVE_LEASE, detail);
  }
  g_free (text);
}

static gboolean
housekeeping (gpointer user_data)
{
  GpuShareServer *self = user_data;
  GPtrArray *freed;
  Client *late[MAX_CLIENTS];
  gint64 now;
  guint i, n = 0;
  guint lease_ms;
  guint64 expired = 0;
  /* per expired client: its oldest frame held, and for how long */
  guint64 held_seq[MAX_CLIENTS] = { 0, };
  gint64 held_us[MAX_CLIENTS] = { 0, };
  gint64 waited_us = 0;
  guint n_stalled;
  /* the GPU rings, whose device waits on consumers' done signals are
   * judged without the lock; the consumers found late, and their frames */
  GpuShareXferRing *gpu_rings[GPUSHARE_MEM_N_TYPES] = { NULL, };
  guint64 overdue = 0, overdue_seq[MAX_CLIENTS] = { 0, };
  guint done_ms;

  gpushare_test_slow ("sink", "housekeeping");
  /* after the hook: a thread held up finds its deadlines past */
  now = g_get_monotonic_time ();
  g_mutex_lock (&self->lock);
  /* leases judge what the consumers still hold */
  drain_releases (self);
  lease_ms = self->config.lease_timeout;
  /* processes that exited closed whatever they had open */
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++) {
    guint n_freed;

    if (self->ring_holders[i])
      gpushare_holders_reap (self->ring_holders[i]);
    if (!self->retired[i] || !gpushare_retained_count (self->retired[i]))
      continue;
    n_freed = gpushare_retained_reap (self->retired[i]);
    if (n_freed)
      GST_INFO_OBJECT (self->log_object, "%u %s rings of earlier epochs "
          "freed: their consumers' processes exited; %u still open",
          n_freed, gpushare_mem_type_to_string (1u << i),
          gpushare_retained_count (self->retired[i]));
  }
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (c && c->deadline && now > c->deadline
        && !deadline_extended (self, c, now)) {
      c->deadline = 0;
      late[n++] = c;
    }
  }
  n_stalled = find_stalled (self, now);
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
    waited_us = now - self->waiting_since;
    expired = gpushare_ring_expired_holders (&self->ring, now,
        (gint64) lease_ms * 1000, held_seq, held_us);
  }
  freed = take_freed_rings (self);
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++)
    if (self->rings[i])
      gpu_rings[i] = gpushare_xfer_ring_ref (self->rings[i]);
  g_mutex_unlock (&self->lock);
  g_clear_pointer (&freed, g_ptr_array_unref);
  if (n_stalled)
    deliver_events (self);
  /* a consumer that releases its frames but whose GPU never signals done
   * (its own work on the frame never ends, or it means harm) would hold
   * the ring's stream, and upstream's ordered after it, for ever: past
   * lease-timeout, and GPUSHARE_SERVER_DONE_TIMEOUT_MS at most (well within
   * the other consumers' own wait for a frame), it goes, its semaphore
   * words forced */
  done_ms = lease_ms ? MIN (lease_ms, GPUSHARE_SERVER_DONE_TIMEOUT_MS) :
      GPUSHARE_SERVER_DONE_TIMEOUT_MS;
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++) {
    if (!gpu_rings[i])
      continue;
    overdue |= gpushare_xfer_ring_overdue (gpu_rings[i], now,
        (gint64) done_ms * 1000, overdue_seq);
    gpushare_xfer_ring_unref (gpu_rings[i]);
  }
  for (i = 0; i < MAX_CLIENTS && overdue; i++)
    if (overdue & (G_GUINT64_CONSTANT (1) << i))
      drop_for_lease (self, i, g_strdup_printf ("done signal overdue: the "
              "GPU work of this consumer on frame %" G_GUINT64_FORMAT " did "
              "not signal that it was done within %u ms (lease-timeout, %u "
              "ms at most) while the producer waited to write its slot "
              "again", overdue_seq[i], done_ms,
              GPUSHARE_SERVER_DONE_TIMEOUT_MS), "done signal overdue");
  /* in words the consumer's user can act on: its pipeline stopped taking
   * buffers, or keeps them (a gpusharesrc copies the frames past its
   * max-in-place, so a sink or queue that only batches does not hold the
   * producer up) */
  for (i = 0; i < MAX_CLIENTS && expired; i++)
    if (expired & (G_GUINT64_CONSTANT (1) << i))
      drop_for_lease (self, i, g_strdup_printf ("slot lease expired: frame %"
              G_GUINT64_FORMAT " was held for %" G_GINT64_FORMAT " ms while "
              "the producer waited %" G_GINT64_FORMAT " ms for a free slot "
              "(lease-timeout %u ms); usually the pipeline downstream of "
              "gpusharesrc stopped taking buffers (paused, blocked) or keeps "
              "them", held_seq[i], held_us[i] / 1000, waited_us / 1000,
              lease_ms), "slot lease expired");
  for (i = 0; i < n; i++) {
    GST_WARNING_OBJECT (self->log_object, "client %u (pid %d): handshake "
        "timed out in state %s", late[i]->id, (gint) late[i]->pid,
        client_state_to_string (late[i]->state));
    expel (self, late[i], GPUSHARE_ERR_TIMEOUT, GPUSHARE_REMOVE_TIMEOUT,
        "handshake timed out");
  }
  send_status (self, now);
  housekeeping_next (self, now);
  return G_SOURCE_CONTINUE;
}

/* lock held: consumers connected that do not stream yet */
static guint
n_pending_clients (GpuShareServer * self)
{
  guint i, n = 0;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->state != CLIENT_READY
        && self->clients[i]->state != CLIENT_OBSERVING)
      n++;
  return n;
}

/* lock held: our own uid, an allowed uid, or an allowed primary gid */
static gboolean
peer_allowed (GpuShareServer * self, const struct ucred *cred)
{
  return cred->uid == getuid ()
      || gpushare_ids_contain (self->config.allowed_uids, cred->uid)
      || gpushare_ids_contain (self->config.allowed_gids, cred->gid);
}

static void
refuse_new (GpuShareServer * self, gint cfd, GpuShareErrorCode code,
    GpuShareRemoveReason reason, const gchar * text, const struct ucred *cred)
{
  refuse_connection (self, cfd, code, text);
  g_mutex_lock (&self->lock);
  queue_client_event (self, GPUSHARE_SERVER_EVENT_REMOVED, NULL, cred->pid,
      cred->uid, reason, text);
  g_mutex_unlock (&self->lock);
  deliver_events (self);
}

/* control thread, lock held (let go here): a new connection refused with
 * TOO_MANY_CLIENTS and text (freed) */
static void
refuse_too_many (GpuShareServer * self, gint cfd, gchar * text,
    const struct ucred *cred)
{
  g_mutex_unlock (&self->lock);
  GST_WARNING_OBJECT (self->log_object, "refused a consumer (pid %d): %s",
      (gint) cred->pid, text);
  refuse_new (self, cfd, GPUSHARE_ERR_TOO_MANY_CLIENTS,
      GPUSHARE_REMOVE_TOO_MANY, text, cred);
  g_free (text);
}

/* control thread: accept4 () failed, EMFILE.  The connection would wait
 * in the backlog, and the listening socket poll readable for ever (this
 * thread spinning): the spare descriptor is given up to take the
 * connection, the consumer is told why it is refused, and the spare is
 * taken again. */
static gboolean listen_dispatch (gint fd, GIOCondition cond,
    gpointer user_data);

/* control thread: listening again after a pause, with a spare */
static gboolean
listen_resume (gpointer user_data)
{
  GpuShareServer *self = user_data;

  if (self->spare_fd < 0)
    self->spare_fd = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  clear_source (&self->listen_resume);
  self->listen_source = g_unix_fd_source_new (self->listen_fd, G_IO_IN);
  g_source_set_callback (self->listen_source, G_SOURCE_FUNC (listen_dispatch),
      self, NULL);
  g_source_attach (self->listen_source, self->context);
  return G_SOURCE_REMOVE;
}

/* control thread: a connection that cannot be taken, with no spare to
 * take it with (another thread of the process took the descriptor, or
 * ENFILE: the whole host is out): the listening socket would poll
 * readable for ever, so it is not polled for a while */
static void
listen_pause (GpuShareServer * self)
{
  if (self->listen_resume)
    return;
  GST_WARNING_OBJECT (self->log_object, "out of file descriptors: no "
      "consumer is taken for %u ms", LISTEN_PAUSE_MS);
  clear_source (&self->listen_source);
  self->listen_resume = g_timeout_source_new (LISTEN_PAUSE_MS);
  g_source_set_callback (self->listen_resume, listen_resume, self, NULL);
  g_source_attach (self->listen_resume, self->context);
}

static void
out_of_fds (GpuShareServer * self, gint listen_fd)
{
  struct ucred cred = { 0, };
  guint64 limit;
  guint open_fds;
  gchar *text;
  gint cfd;

  close (self->spare_fd);
  self->spare_fd = -1;
  cfd = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (cfd < 0) {
    listen_pause (self);
    return;
  }
  gpushare_fd_usage (&open_fds, &limit);
  text = g_strdup_printf ("the producer is out of file descriptors: it has "
      "%u open of its limit of %" G_GUINT64_FORMAT ", and cannot take "
      "another consumer (raise its limit: ulimit -n, LimitNOFILE=)",
      open_fds, limit);
  gpushare_socket_get_peer (cfd, &cred.pid, &cred.uid, &cred.gid);
  GST_WARNING_OBJECT (self->log_object, "refused a consumer (pid %d): %s",
      (gint) cred.pid, text);
  refuse_new (self, cfd, GPUSHARE_ERR_RESOURCE, GPUSHARE_REMOVE_RESOURCE,
      text, &cred);
  g_free (text);
  self->spare_fd = open ("/dev/null", O_RDONLY | O_CLOEXEC);
}

static gboolean
listen_dispatch (gint fd, GIOCondition cond, gpointer user_data)
{
  GpuShareServer *self = user_data;
  gint cfd;
  struct ucred cred = { 0, };
  Client *client;
  gboolean allowed, over, of_uid;
  guint i;

  cfd = accept4 (fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (cfd < 0 && (errno == EMFILE || errno == ENFILE)) {
    if (errno == EMFILE && self->spare_fd >= 0)
      out_of_fds (self, fd);
    else
      listen_pause (self);
    /* the source may be gone: listen_resume () makes another */
    return self->listen_source ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
  }
  if (cfd < 0)
    return G_SOURCE_CONTINUE;

  /* credentials before anything else leaves this process */
  allowed = gpushare_socket_get_peer (cfd, &cred.pid, &cred.uid, &cred.gid);
  if (allowed) {
    g_mutex_lock (&self->lock);
    allowed = peer_allowed (self, &cred);
    g_mutex_unlock (&self->lock);
  }
  if (!allowed) {
    gchar *text = g_strdup_printf ("uid %u, gid %u is not allowed: the "
        "producer admits its own uid, root, and the uids and gids in its "
        "allowed-uids and allowed-gids", (guint) cred.uid, (guint) cred.gid);

    GST_WARNING_OBJECT (self->log_object, "refused a consumer (pid %d): %s",
        (gint) cred.pid, text);
    refuse_new (self, cfd, GPUSHARE_ERR_NOT_AUTHORIZED,
        GPUSHARE_REMOVE_NOT_AUTHORIZED, text, &cred);
    g_free (text);
    return G_SOURCE_CONTINUE;
  }

  g_mutex_lock (&self->lock);
  if ((i = quarantine_burst (self, cred.pid, cred.uid,
              g_get_monotonic_time (), &of_uid))) {
    gchar *text = g_strdup_printf ("%s left slots quarantined %u "
        "times in %u s (each a new ring): refused for the rest of that "
        "time", of_uid ? "the processes of this uid" : "this process", i,
        (guint) (QUARANTINE_WINDOW_US / G_USEC_PER_SEC));

    refuse_too_many (self, cfd, text, &cred);
    return G_SOURCE_CONTINUE;
  }
  if ((i = lingering_of (self, cred.uid)) >= GPUSHARE_SERVER_MAX_LINGERING) {
    gchar *text = g_strdup_printf ("%u connections of this uid closed with "
        "descriptors of ours it never read, which count against this "
        "process until it reads or closes them: refused until then", i);

    refuse_too_many (self, cfd, text, &cred);
    return G_SOURCE_CONTINUE;
  }
  if (n_pending_clients (self) >= self->config.max_pending) {
    gchar *text = g_strdup_printf ("%u handshakes are pending already "
        "(max-pending %u)", self->config.max_pending,
        self->config.max_pending);

    refuse_too_many (self, cfd, text, &cred);
    return G_SOURCE_CONTINUE;
  }
  for (i = 0; i < MAX_CLIENTS; i++)
    if (!self->clients[i]
        && !(self->busy_index & (G_GUINT64_CONSTANT (1) << i)))
      break;
  /* past max-clients, a few more may connect: observers (OBSERVE), which
   * count not, or consumers refused at their ACCEPT */
  over = self->n_clients >= self->config.max_clients;
  if ((over && self->n_over_limit >= GPUSHARE_SERVER_MAX_OBSERVERS)
      || i == MAX_CLIENTS) {
    gchar *text = too_many_text (self->n_clients,
        MIN (self->config.max_clients, MAX_CLIENTS));

    refuse_too_many (self, cfd, text, &cred);
    return G_SOURCE_CONTINUE;
  }

  client = g_new0 (Client, 1);
  client->server = self;
  client->id = ++self->next_client_id;
  client->index = i;
  client->pid = cred.pid;
  /* opened now, while the pid is surely that peer's: a legacy IPC ring it
   * is sent is watched through this (gpushareretain.h), and a hang-up is
   * told from the end of its process (see drop_client ()) */
  client->pidfd = gpushare_pidfd_open (cred.pid);
  client->uid = cred.uid;
  client->gid = cred.gid;
  client->state = CLIENT_CONNECTED;
  client->conn = gpushare_conn_new (cfd, self->context, client_message,
      client_closed, client);
  gpushare_conn_set_linger_func (client->conn, client_lingers, self);
  /* from the first byte on: a consumer that hangs mid-handshake is caught
   * even with handshake-timeout 0 */
  gpushare_conn_set_heartbeat (client->conn, self->config.heartbeat_interval);
  self->clients[i] = client;
  client->over_limit = over;
  if (over)
    self->n_over_limit++;
  else
    self->n_clients++;
  GST_DEBUG_OBJECT (self->log_object, "client %u connected (pid %d)",
      client->id, (gint) cred.pid);
  if (self->have_layout)
    send_announce (self, client);
  if (client->pidfd >= 0) {
    client->watch_exit = g_unix_fd_source_new (client->pidfd, G_IO_IN);
    g_source_set_callback (client->watch_exit,
        G_SOURCE_FUNC (outlived_process), client, NULL);
    g_source_attach (client->watch_exit, self->context);
  }
  gpushare_conn_start (client->conn);
  g_mutex_unlock (&self->lock);

  return G_SOURCE_CONTINUE;
}

/* ------------------------------------------------------------------------ */
/* Life cycle */

static GArray *
ids_copy (GArray * ids)
{
  return ids ? g_array_copy (ids) : NULL;
}

GpuShareServer *
gpushare_server_new (const GpuShareServerConfig * config,
    gpointer log_object, GpuShareServerEventFunc func, gpointer user_data)
{
  GpuShareServer *self = g_new0 (GpuShareServer, 1);
  static gsize once = 0;

  self->ref_count = 1;
  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gpushare_server_debug, "gpushareserver", 0,
        "gpushare producer core");
    g_once_init_leave (&once, 1);
  }
  self->config = *config;
  self->config.socket_path = g_strdup (config->socket_path);
  self->config.name = g_strdup (config->name);
  self->config.allowed_uids = ids_copy (config->allowed_uids);
  self->config.allowed_gids = ids_copy (config->allowed_gids);
  self->config.gpu_uids = ids_copy (config->gpu_uids);
  self->config.gpu_gids = ids_copy (config->gpu_gids);
  self->log_object = log_object;
  self->event_func = func;
  self->user_data = user_data;
  self->listen_fd = -1;
  self->spare_fd = -1;
  g_mutex_init (&self->lock);
  g_mutex_init (&self->linger_lock);
  self->lingering = g_array_new (FALSE, FALSE, sizeof (Lingering));
  g_cond_init (&self->cond);
  g_queue_init (&self->events);
  return self;
}

GpuShareServer *
gpushare_server_ref (GpuShareServer * self)
{
  g_atomic_int_inc (&self->ref_count);
  return self;
}

void
gpushare_server_unref (GpuShareServer * self)
{
  if (!g_atomic_int_dec_and_test (&self->ref_count))
    return;
  gpushare_server_stop (self);
  g_clear_pointer (&self->sticky, g_ptr_array_unref);
  g_free (self->config.socket_path);
  g_free (self->config.name);
  g_free (self->wire_meta);
  g_clear_pointer (&self->config.gpu_uids, g_array_unref);
  g_clear_pointer (&self->config.gpu_gids, g_array_unref);
  g_clear_pointer (&self->config.allowed_uids, g_array_unref);
  g_clear_pointer (&self->config.allowed_gids, g_array_unref);
  g_free (self->gpu_reason);
  g_queue_clear_full (&self->events, g_free);
  if (self->linger_source) {
    g_source_destroy (self->linger_source);
    g_clear_pointer (&self->linger_source, g_source_unref);
  }
  lingering_prune (self, TRUE);
  g_array_unref (self->lingering);
  g_mutex_clear (&self->linger_lock);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  g_free (self);
}

/* Finds out, once per start, whether GPU memory can be offered, and says
 * why not where it cannot. */
static void
probe_gpu (GpuShareServer * self)
{
  GError *error = NULL;
  GpuShareGpu offer;

  g_clear_pointer (&self->gpu_reason, g_free);
  self->gpu_ok = gpushare_xfer_gpu_probe (self->config.cuda_device_id,
      &self->gpu, &error);
  if (!gpushare_xfer_gpu ()) {
    self->gpu_reason = g_strdup ("built without CUDA");
    g_clear_error (&error);
  } else if (self->gpu_ok && !(self->gpu.vmm && self->gpu.posix_fd)) {
    self->gpu_ok = FALSE;
    self->gpu_reason = g_strdup ("the GPU cannot export VMM memory as file "
        "descriptors");
  } else if (!self->gpu_ok) {
    self->gpu_reason = g_strdup_printf ("no usable GPU: %s", error->message);
    g_clear_error (&error);
  }
  /* what the ANNOUNCE offers, as the negotiation says: every producer
   * has system memory */
  gpushare_xfer_gpu_describe (&self->gpu, self->gpu_ok, self->gpu_reason,
      &offer);
  self->offered_mem_types = GPUSHARE_MEM_SYSTEM |
      gpushare_negotiate_producer_mem_types (&offer, gpushare_xfer_policies ());
  if (self->gpu_ok) {
    gchar *uuid = gpushare_gpu_uuid_to_string (self->gpu.uuid);

    self->gpu.mem_types = self->offered_mem_types & ~GPUSHARE_MEM_HOST_MASK;

    GST_INFO_OBJECT (self->log_object, "offering GPU memory of %s (%s)",
        self->gpu.name, uuid);
    g_free (uuid);
  } else {
    GST_INFO_OBJECT (self->log_object, "system memory only: %s",
        self->gpu_reason);
  }
}

gboolean
gpushare_server_start (GpuShareServer * self, GError ** error)
{
  g_return_val_if_fail (!self->attached, FALSE);

  self->listen_fd = gpushare_listen_path (self->config.socket_path,
      self->config.socket_mode, error);
  if (self->listen_fd < 0)
    return FALSE;
  self->bound_path = g_strdup (self->config.socket_path);
  self->spare_fd = open ("/dev/null", O_RDONLY | O_CLOEXEC);

  g_mutex_lock (&self->lock);
  self->instance = g_random_int () | ((guint64) g_random_int () << 32);
  self->epoch = 0;
  self->sequence = 0;
  self->gathering = TRUE;
  self->flushing = FALSE;
  self->have_layout = FALSE;
  self->live = FALSE;
  self->eos = FALSE;
  self->latency = GST_CLOCK_TIME_NONE;
  self->frames_rendered = 0;
  self->metas_not_sent = 0;
  self->frames_dropped = 0;
  self->frames_in_place = 0;
  self->frames_copied = 0;
  self->frames_to_gpu = 0;
  self->slots_quarantined = 0;
  self->rings_replaced = 0;
  self->n_waiting = 0;
  self->waiting_since = 0;
  g_mutex_unlock (&self->lock);
  probe_gpu (self);

  self->context = g_main_context_new ();
  self->listen_source = g_unix_fd_source_new (self->listen_fd, G_IO_IN);
  g_source_set_callback (self->listen_source, G_SOURCE_FUNC (listen_dispatch),
      self, NULL);
  g_source_attach (self->listen_source, self->context);
  /* a source of its own: housekeeping_by () moves its time */
  self->housekeeping = g_source_new (&housekeeping_funcs, sizeof (GSource));
  g_source_set_name (self->housekeeping, "gpushare-housekeeping");
  g_source_set_callback (self->housekeeping, housekeeping, self, NULL);
  g_mutex_lock (&self->lock);
  self->housekeeping_at = 0;
  housekeeping_by (self, g_get_monotonic_time () + HOUSEKEEPING_MS * 1000);
  g_mutex_unlock (&self->lock);
  g_source_attach (self->housekeeping, self->context);
  gpushare_control_attach (self->context);
  self->attached = TRUE;
  GST_DEBUG_OBJECT (self->log_object, "listening");
  return TRUE;
}

void
gpushare_server_stop (GpuShareServer * self)
{
  Client *gone[MAX_CLIENTS];
  GpuShareXferRing *rings[GPUSHARE_MEM_N_TYPES + 1];
  GpuShareRetained *retired[GPUSHARE_MEM_N_TYPES];
  GpuShareHolders *holders[GPUSHARE_MEM_N_TYPES];
  guint i, n = 0;

  if (self->attached) {
    gpushare_control_detach (self->context);
    self->attached = FALSE;
  }
  clear_source (&self->listen_source);
  clear_source (&self->listen_resume);
  g_mutex_lock (&self->lock);
  clear_source (&self->housekeeping);
  self->housekeeping_at = 0;
  g_mutex_unlock (&self->lock);

  /* the control thread is gone: nobody else touches the clients now */
  g_mutex_lock (&self->lock);
  for (i = 0; i < MAX_CLIENTS; i++) {
    if (self->clients[i])
      gone[n++] = self->clients[i];
    self->clients[i] = NULL;
  }
  self->n_clients = 0;
  self->n_observers = 0;
  self->n_over_limit = 0;
  for (i = 0; i < n; i++)
    if (!gone[i]->observer && !gone[i]->asked_to_observe)
      queue_client_event (self, GPUSHARE_SERVER_EVENT_REMOVED, gone[i], 0, 0,
          GPUSHARE_REMOVE_SHUTDOWN, "the producer stopped");
  if (n)
    queue_event (self, GPUSHARE_SERVER_EVENT_NUM_CLIENTS, 0, 0, 0);
  g_mutex_unlock (&self->lock);

  for (i = 0; i < n; i++) {
    gpushare_conn_send_goodbye (gone[i]->conn, GPUSHARE_ERR_SHUTDOWN, 0, 0);
    gpushare_conn_flush (gone[i]->conn, GOODBYE_FLUSH_MS);
    client_free (gone[i]);
  }
  deliver_events (self);

  g_clear_pointer (&self->context, g_main_context_unref);
  if (self->listen_fd >= 0) {
    close (self->listen_fd);
    self->listen_fd = -1;
  }
  if (self->spare_fd >= 0) {
    close (self->spare_fd);
    self->spare_fd = -1;
  }
  if (self->bound_path) {
    unlink (self->bound_path);
    g_clear_pointer (&self->bound_path, g_free);
  }

  g_mutex_lock (&self->lock);
  rings[0] = self->system;
  self->system = NULL;
  g_clear_pointer (&self->side, gpushare_side_unref);
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++) {
    rings[i + 1] = self->rings[i];
    self->rings[i] = NULL;
    retired[i] = self->retired[i];
    self->retired[i] = NULL;
    holders[i] = self->ring_holders[i];
    self->ring_holders[i] = NULL;
  }
  self->have_layout = FALSE;
  g_mutex_unlock (&self->lock);
  /* device work, outside the lock */
  for (i = 0; i < G_N_ELEMENTS (rings); i++)
    g_clear_pointer (&rings[i], gpushare_xfer_ring_unref);
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++) {
    g_clear_pointer (&retired[i], gpushare_retained_free);
    g_clear_pointer (&holders[i], gpushare_holders_free);
  }
}

void
gpushare_server_configure (GpuShareServer * self,
    const GpuShareServerConfig * config)
{
  GArray *uids = ids_copy (config->allowed_uids);
  GArray *gids = ids_copy (config->allowed_gids);

  g_mutex_lock (&self->lock);
  self->config.max_clients = config->max_clients;
  self->config.max_pending = config->max_pending;
  self->config.handshake_timeout = config->handshake_timeout;
  self->config.lease_timeout = config->lease_timeout;
  self->config.heartbeat_interval = config->heartbeat_interval;
  g_clear_pointer (&self->config.allowed_uids, g_array_unref);
  g_clear_pointer (&self->config.allowed_gids, g_array_unref);
  self->config.allowed_uids = uids;
  self->config.allowed_gids = gids;
  g_clear_pointer (&self->config.gpu_uids, g_array_unref);
  g_clear_pointer (&self->config.gpu_gids, g_array_unref);
  self->config.gpu_uids = ids_copy (config->gpu_uids);
  self->config.gpu_gids = ids_copy (config->gpu_gids);
  retrust_clients (self);
  wake_waiters (self);
  g_mutex_unlock (&self->lock);
}

gboolean
gpushare_server_gpu_ok (GpuShareServer * self)
{
  return self->gpu_ok;
}


/* ------------------------------------------------------------------------ */
/* The stream */

/* lock held: to every client past its announce, the new layout, and the
 * new ring's slots where it has mapped one */
static void
announce_layout (GpuShareServer * self, gboolean new_ring)
{
  guint i;

  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c)
      continue;
    if (c->state == CLIENT_CONNECTED) {
      send_announce (self, c);
      continue;
    }
    send_caps (self, c);
    if (!new_ring || (c->state != CLIENT_EXPORTED && c->state != CLIENT_READY))
      continue;
    if (c->mem_type == GPUSHARE_MEM_SYSTEM)
      send_slots (self, c);
    else
      schedule_export (self, c);
  }
}

/* The side memory of a new ring of n_slots (NULL: none asked for).  A
 * producer that cannot make it goes on without: the payloads go inline,
 * where they fit. */
static GpuShareSide *
make_side (GpuShareServer * self, guint n_slots, guint32 pages)
{
  GError *error = NULL;
  GpuShareSide *side;

  if (pages == 0)
    return NULL;
  side = gpushare_side_new (n_slots, pages, &error);
  if (!side) {
    GST_WARNING_OBJECT (self->log_object, "no side memory for the metas' "
        "payloads: %s", error->message);
    g_clear_error (&error);
  }
  return side;
}

gboolean
gpushare_server_set_format (GpuShareServer * self,
    const GpuShareLayout * layout, guint ring_size, guint32 side_pages,
    gboolean device_side, GError ** error)
{
  GpuShareXferRing *ring = NULL, *old = NULL;
  GpuShareSide *side = NULL, *old_side = NULL;
  gboolean new_ring;
  guint64 epoch;

  g_mutex_lock (&self->lock);
  /* a ring whose slots, or whose side memory, are too small for the new
   * caps is made again */
  new_ring = !self->system || layout->frame_size > self->system->slot_size
      || side_pages > self->side_pages
      || (device_side && side_pages > 0 && !self->device_side);
  epoch = self->epoch + 1;
  /* auto: a ring that grew for its consumers keeps its size */
  self->ring_auto = ring_size == 0;
  if (ring_size == 0)
    ring_size = MAX (GPUSHARE_RING_DEFAULT_SLOTS,
        self->system ? self->ring.n_slots : 0);
  g_mutex_unlock (&self->lock);

  if (new_ring) {
    ring = gpushare_xfer_ring_new (GPUSHARE_MEM_SYSTEM, 0, epoch, ring_size,
        layout->frame_size, error);
    if (!ring)
      return FALSE;
    side = make_side (self, ring->n_slots, side_pages);
  }

  g_mutex_lock (&self->lock);
  if (ring) {
    /* consumers keep their own mappings of the old ring until their last
     * buffer from it is gone; our references go with the pool buffers */
    old = self->system;
    self->system = ring;
    old_side = self->side;
    self->side = side;
    self->side_pages = side_pages;
    self->device_side = device_side && side_pages > 0;
    self->epoch = epoch;
    gpushare_ring_init (&self->ring, ring_size, self->epoch);
    GST_DEBUG_OBJECT (self->log_object, "new ring: epoch %" G_GUINT64_FORMAT
        ", %u slots of %" G_GSIZE_FORMAT " bytes", self->epoch, ring_size,
        ring->slot_size);
  }
  self->layout = *layout;
  self->layout.epoch = self->epoch;
  self->layout.slot_size = self->system->slot_size;
  self->layout.n_slots = self->system->n_slots;
  self->have_layout = TRUE;
  /* the caps reach each consumer before the next frame: socket order */
  announce_layout (self, new_ring);
  wake_waiters (self);
  g_mutex_unlock (&self->lock);
  g_clear_pointer (&old, gpushare_xfer_ring_unref);
  g_clear_pointer (&old_side, gpushare_side_unref);
  deliver_events (self);
  return TRUE;
}


void
gpushare_server_set_live (GpuShareServer * self, gboolean live, guint64 latency)
{
  guint i;

  g_mutex_lock (&self->lock);
  self->live = live;
  self->latency = latency;
  /* tell consumers the liveness and latency, at this frame boundary */
  if (live && self->have_layout)
    for (i = 0; i < MAX_CLIENTS; i++)
      if (self->clients[i] && self->clients[i]->state != CLIENT_CONNECTED)
        send_caps (self, self->clients[i]);
  g_mutex_unlock (&self->lock);
}

gboolean
gpushare_server_is_live (GpuShareServer * self)
{
  gboolean live;

  g_mutex_lock (&self->lock);
  live = self->live;
  g_mutex_unlock (&self->lock);
  return live;
}

void
gpushare_server_eos (GpuShareServer * self)
{
  guint i;

  g_mutex_lock (&self->lock);
  self->eos = TRUE;
  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->state != CLIENT_CONNECTED)
      send_eos (self, self->clients[i]);
  g_mutex_unlock (&self->lock);
}

/* the name of a custom event's structure: its text up to the first ',' */
static gsize
event_name_len (const GpuShareEvent * e)
{
  const gchar *comma = memchr (e->text, ',', e->text_len);

  return comma ? (gsize) (comma - e->text) : e->text_len;
}

/* the sticky event that ev replaces, or -1 */
static gint
sticky_index (GpuShareServer * self, const GpuShareEvent * ev)
{
  guint i;

  for (i = 0; self->sticky && i < self->sticky->len; i++) {
    const GpuShareEvent *s = g_ptr_array_index (self->sticky, i);

    if (s->kind != ev->kind)
      continue;
    if (ev->kind == GPUSHARE_EVENT_TAGS
        || ev->kind == GPUSHARE_EVENT_STREAM_START || (event_name_len (s) ==
            event_name_len (ev) && !memcmp (s->text, ev->text,
                event_name_len (ev))))
      return i;
  }
  return -1;
}

#define MAX_STICKY 16

void
gpushare_server_send_event (GpuShareServer * self, const GpuShareEvent * ev)
{
  guint i;

  g_mutex_lock (&self->lock);
  if (ev->kind == GPUSHARE_EVENT_TAGS
      || ev->kind == GPUSHARE_EVENT_CUSTOM_STICKY
      || ev->kind == GPUSHARE_EVENT_STREAM_START) {
    gint at = sticky_index (self, ev);
    GpuShareEvent *copy = event_copy (ev);

    if (!self->sticky)
      self->sticky = g_ptr_array_new_with_free_func (g_free);
    if (ev->kind == GPUSHARE_EVENT_STREAM_START) {
      /* a new stream: its tags are to come (as a pad drops its sticky
       * tags on stream-start), and the stream-start goes first */
      for (i = self->sticky->len; i > 0; i--)
        if (((GpuShareEvent *) g_ptr_array_index (self->sticky,
                    i - 1))->kind == GPUSHARE_EVENT_TAGS)
          g_ptr_array_remove_index (self->sticky, i - 1);
      at = sticky_index (self, ev);
      if (at >= 0)
        g_ptr_array_remove_index (self->sticky, at);
      g_ptr_array_insert (self->sticky, 0, copy);
    } else if (at >= 0) {
      g_free (g_ptr_array_index (self->sticky, at));
      g_ptr_array_index (self->sticky, at) = copy;
    } else if (self->sticky->len < MAX_STICKY) {
      g_ptr_array_add (self->sticky, copy);
    } else {
      g_free (copy);
      GST_WARNING_OBJECT (self->log_object, "more than %u sticky events: "
          "consumers that join later miss this one", MAX_STICKY);
    }
  }
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    if (!c || c->minor < GPUSHARE_MINOR_EVENT)
      continue;
    if (c->state == CLIENT_READY)
      send_event (self, c, ev);
    else if (c->state == CLIENT_EXPORTED && c->connected_emitted)
      hold_event (self, c, ev);
  }
  g_mutex_unlock (&self->lock);
}

void
gpushare_server_reset_eos (GpuShareServer * self)
{
  g_mutex_lock (&self->lock);
  self->eos = FALSE;
  g_mutex_unlock (&self->lock);
}

void
gpushare_server_set_stop_func (GpuShareServer * self,
    GpuShareServerStopFunc func, gpointer user_data)
{
  g_mutex_lock (&self->lock);
  self->stop_func = func;
  self->stop_data = user_data;
  g_mutex_unlock (&self->lock);
}

void
gpushare_server_set_flushing (GpuShareServer * self, gboolean flushing)
{
  g_mutex_lock (&self->lock);
  /* after a flush or a state change, the stream waits for consumers
   * again */
  if (!flushing)
    self->gathering_abandoned = FALSE;
  self->flushing = flushing;
  wake_waiters (self);
  g_mutex_unlock (&self->lock);
}

void
gpushare_server_wake (GpuShareServer * self)
{
  g_mutex_lock (&self->lock);
  wake_waiters (self);
  g_mutex_unlock (&self->lock);
}

void
gpushare_server_set_status_func (GpuShareServer * self,
    GpuShareServerStatusFunc func, gpointer user_data)
{
  g_mutex_lock (&self->lock);
  self->status_func = func;
  self->status_data = user_data;
  g_mutex_unlock (&self->lock);
}

guint
gpushare_server_n_clients (GpuShareServer * self)
{
  guint n;

  g_mutex_lock (&self->lock);
  n = self->n_clients;
  g_mutex_unlock (&self->lock);
  return n;
}

/* lock held.  FALSE when flushing. */
static gboolean
wait_locked (GpuShareServer * self)
{
  if (self->flushing)
    return FALSE;
  cond_wait (self, 0);
  return !self->flushing;
}

static guint
n_ready_clients (GpuShareServer * self)
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
n_remapping_clients (GpuShareServer * self)
{
  guint i, n = 0;

  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->connected_emitted
        && (self->clients[i]->state != CLIENT_READY
            || self->clients[i]->mapped_epoch != self->epoch))
      n++;
  return n;
}

/* lock held: which memory types the consumers of this frame read */
static void
memory_needs (GpuShareServer * self, gboolean * sys, guint32 * gpu)
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

/* lock held.  A thread starts or stops waiting for a free slot: leases run
 * while any does (render, and upstream in our pool, may both wait). */
static void
slot_wait_begin (GpuShareServer * self)
{
  if (self->n_waiting++ == 0) {
    self->waiting_since = g_get_monotonic_time ();
    housekeeping_by (self, self->waiting_since + HOUSEKEEPING_MS * 1000);
  }
}

static void
slot_wait_end (GpuShareServer * self)
{
  g_return_if_fail (self->n_waiting > 0);
  if (--self->n_waiting == 0)
    self->waiting_since = 0;
}

/* lock held, let go while the ring is made.  A ring with quarantined slots
 * is replaced by a new one of the same layout (a new epoch, as for a caps
 * change), and so is a ring of auto size that grows (n_slots more than it
 * has): every consumer maps the new ring, the old one lives on only in
 * the mappings of those that still read it. */
static gboolean
replace_ring (GpuShareServer * self, guint n_slots, GError ** error)
{
  GpuShareXferRing *ring, *old;
  GpuShareSide *side = NULL, *old_side;
  guint old_slots = self->ring.n_slots, tainted;
  guint32 side_pages = self->side_pages;

  tainted = gpushare_ring_n_tainted (&self->ring);
  g_mutex_unlock (&self->lock);
  ring = gpushare_xfer_ring_new (GPUSHARE_MEM_SYSTEM, 0, self->epoch + 1,
      n_slots, self->layout.frame_size, error);
  if (ring)
    side = make_side (self, n_slots, side_pages);
  g_mutex_lock (&self->lock);
  if (!ring)
    return FALSE;
  old = self->system;
  self->system = ring;
  /* a slot's side memory is reused with the slot: the new ring's own */
  old_side = self->side;
  self->side = side;
  self->epoch = ring->epoch;
  gpushare_ring_init (&self->ring, n_slots, self->epoch);
  self->rings_replaced++;
  if (n_slots > old_slots) {
    self->rings_grown++;
    GST_INFO_OBJECT (self->log_object, "ring grown from %u to %u slots "
        "(epoch %" G_GUINT64_FORMAT ") for %u consumers, a share of %u "
        "each", old_slots, n_slots, self->epoch, n_streaming_clients (self),
        gpushare_ring_share (n_slots, n_streaming_clients (self)));
  } else {
    GST_WARNING_OBJECT (self->log_object, "ring replaced (epoch %"
        G_GUINT64_FORMAT "): %u of its %u slots were quarantined",
        self->epoch, tainted, n_slots);
  }
  /* as for a caps change: the new ring's layout, then its slots */
  self->layout.epoch = self->epoch;
  self->layout.n_slots = ring->n_slots;
  self->layout.slot_size = ring->slot_size;
  announce_layout (self, TRUE);
  wake_waiters (self);
  g_mutex_unlock (&self->lock);
  gpushare_xfer_ring_unref (old);
  g_clear_pointer (&old_side, gpushare_side_unref);
  g_mutex_lock (&self->lock);
  return TRUE;
}

/* lock held: is tag a slot of the current ring, still as the pool handed
 * it out? */
/* lock held.  The current GPU ring that upstream may write in place: the
 * one of the first GPU memory type a ready consumer of this epoch uses
 * (VMM before legacy before fabric), made already; NULL if none. */
static GpuShareXferRing *
pool_gpu_ring (GpuShareServer * self)
{
  gboolean sys;
  guint32 gpu;
  guint i;

  memory_needs (self, &sys, &gpu);
  /* device memory only: upstream writes it with the GPU library's pool */
  gpu &= ~GPUSHARE_MEM_HOST_MASK;
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++) {
    GpuShareXferRing *ring;

    if (!(gpu & (1u << i)))
      continue;
    ring = self->rings[i];
    return ring && ring->epoch == self->epoch ? ring : NULL;
  }
  return NULL;
}

static gboolean
is_current_slot (GpuShareServer * self, const GpuShareServerTag * tag)
{
  if (!tag || !gpushare_ring_is_writing (&self->ring, tag->slot,
          tag->generation))
    return FALSE;
  if (tag->ring == self->system)
    return TRUE;
  /* a GPU slot of the current ring of its type */
  return tag->ring->mem_type != GPUSHARE_MEM_SYSTEM
      && self->rings[gpushare_mem_type_index (tag->ring->mem_type)] ==
      tag->ring && tag->ring->epoch == self->epoch;
}

static void
frame_clear (GpuShareServer * self, GpuShareServerFrame * frame)
{
  guint i;

  g_clear_pointer (&frame->system, gpushare_xfer_ring_unref);
  g_clear_pointer (&frame->staged, gpushare_xfer_ring_unref);
  g_clear_pointer (&frame->side, gpushare_side_unref);
  frame->device_wait_us = frame->device_spin_us = 0;
  for (i = 0; i < frame->n_rings; i++) {
    gpushare_xfer_ring_take_waits (frame->rings[i], &frame->device_wait_us,
        &frame->device_spin_us);
    g_clear_pointer (&frame->rings[i], gpushare_xfer_ring_unref);
  }
  frame->n_rings = 0;
}

/* lock held: where the payloads of this epoch's frames may go, every
 * consumer that has its slots able to read them there: *side, the side
 * memory (one that cannot, of an older minor, takes them inline);
 * *device, past the frames of the GPU slots (minor 11 or later: an older
 * one would read their place as inline bytes) */
static void
payload_places (GpuShareServer * self, gboolean * side, gboolean * device)
{
  guint i;

  *side = self->side != NULL;
  *device = self->device_side;
  for (i = 0; i < MAX_CLIENTS && (*side || *device); i++) {
    Client *c = self->clients[i];

    if (!c || (c->state != CLIENT_EXPORTED && c->state != CLIENT_READY))
      continue;
    if (!c->side)
      *side = FALSE;
    if (c->minor < GPUSHARE_MINOR_DEVICE_SIDE)
      *device = FALSE;
  }
}

GpuShareServerResult
gpushare_server_begin_frame (GpuShareServer * self, gboolean lossless,
    guint wait_for, gboolean gpu_buffer,
    const GpuShareServerTag * tag, GpuShareServerFrame * frame, GError ** error)
{
  gboolean need_sys, in_sys_slot = FALSE, stopped = FALSE, side, device_side;
  guint32 need_gpu;
  guint slot, i;

  memset (frame, 0, sizeof (*frame));
  frame->leaky = !lossless;
  g_mutex_lock (&self->lock);
  if (!self->system) {
    g_mutex_unlock (&self->lock);
    return GPUSHARE_SERVER_NO_FORMAT;
  }
again:
  /* what the consumers gave back through their lanes */
  drain_releases (self);
  if (gpushare_ring_n_tainted (&self->ring) > 0
      && !replace_ring (self, self->ring.n_slots, error)) {
    g_mutex_unlock (&self->lock);
    return GPUSHARE_SERVER_ERROR;
  }
  /* leaky, ring of auto size: a share of GPUSHARE_RING_MIN_SHARE for each
   * consumer, so that one whose sink keeps a frame or two is never
   * skipped for good (docs/design.md, "Shares of a leaky ring").  For the
   * consumers the stream waits for too, before they come: a ring that
   * grows once they are there has each of them map the new one while the
   * next frames go by, and miss them. */
  if (!lossless && self->ring_auto) {
    guint want = gpushare_ring_auto_slots (self->ring.n_slots,
        MAX (n_streaming_clients (self), wait_for));

    if (want > self->ring.n_slots && !replace_ring (self, want, error)) {
      g_mutex_unlock (&self->lock);
      return GPUSHARE_SERVER_ERROR;
    }
  }
  if (self->n_clients == 0 && !self->gathering_abandoned)
    self->gathering = TRUE;
  while (self->gathering && n_ready_clients (self) < wait_for) {
    if (stopped) {
      /* nobody comes for this frame, and nothing else ends this wait:
       * the EOS waits behind it */
      self->gathering = FALSE;
      self->gathering_abandoned = TRUE;
      self->gathering_told = FALSE;
      self->sequence++;
      g_mutex_unlock (&self->lock);
      GST_INFO_OBJECT (self->log_object, "upstream stops: no more waiting "
          "for consumers, the frame goes to nobody");
      return GPUSHARE_SERVER_DROPPED;
    }
    if (!self->gathering_told) {
      GpuShareServerEvent *ev = g_new0 (GpuShareServerEvent, 1);

      /* once a wait: said without the lock, then looked at again */
      self->gathering_told = TRUE;
      ev->type = GPUSHARE_SERVER_EVENT_WAITING;
      ev->n_consumers = wait_for;
      ev->slots = n_ready_clients (self);
      g_queue_push_tail (&self->events, ev);
      g_mutex_unlock (&self->lock);
      deliver_events (self);
      g_mutex_lock (&self->lock);
      continue;
    }
    GST_LOG_OBJECT (self->log_object, "waiting for %u consumers, %u ready",
        wait_for, n_ready_clients (self));
    if (self->flushing)
      goto flushing;
    cond_wait (self, g_get_monotonic_time () + GATHER_LOOK_US);
    if (self->flushing)
      goto flushing;
    if (self->stop_func) {
      GpuShareServerStopFunc func = self->stop_func;
      gpointer data = self->stop_data;

      /* the element looks at its upstream with locks of its own */
      g_mutex_unlock (&self->lock);
      stopped = func (data);
      g_mutex_lock (&self->lock);
    }
  }
  self->gathering = FALSE;
  self->gathering_told = FALSE;
  while (lossless && n_remapping_clients (self) > 0) {
    GST_LOG_OBJECT (self->log_object, "waiting for consumers to map the new "
        "ring");
    self->remap_waited = TRUE;
    if (!wait_locked (self)) {
      self->remap_waited = FALSE;
      goto flushing;
    }
  }
  self->remap_waited = FALSE;

  memory_needs (self, &need_sys, &need_gpu);
  /* with nobody there, keep the system-memory slot current as before */
  if (!need_sys && !need_gpu && !gpu_buffer)
    need_sys = TRUE;
  if (is_current_slot (self, tag)) {
    slot = tag->slot;
    self->frames_in_place++;
    /* a GPU slot: the system ring, if needed, is written from it */
    in_sys_slot = tag->ring == self->system;
    frame->in_place = TRUE;
  } else {
    gboolean waiting = FALSE;

    for (;;) {
      if (gpushare_ring_acquire (&self->ring, &slot) == GPUSHARE_RING_OK)
        break;
      if (gpushare_ring_n_tainted (&self->ring) > 0) {
        /* a consumer was dropped meanwhile: its slots are quarantined */
        if (waiting) {
          slot_wait_end (self);
          lanes_waiting (self, FALSE);
        }
        goto again;
      }
      if (!lossless) {
        /* every slot is taken: drop this frame, never wait.  It is
         * numbered all the same, so that the consumers see the gap */
        self->frames_dropped++;
        self->sequence++;
        g_mutex_unlock (&self->lock);
        GST_LOG_OBJECT (self->log_object, "no free slot: frame dropped");
        return GPUSHARE_SERVER_DROPPED;
      }
      if (!waiting) {
        slot_wait_begin (self);
        waiting = TRUE;
        /* a release written before the lanes said so is read now */
        lanes_waiting (self, TRUE);
        continue;
      }
      if (!wait_locked (self)) {
        slot_wait_end (self);
        lanes_waiting (self, FALSE);
        goto flushing;
      }
      drain_releases (self);
    }
    if (waiting) {
      slot_wait_end (self);
      lanes_waiting (self, FALSE);
    }
  }
  frame->slot = slot;
  if (!in_sys_slot && need_sys) {
    /* only we write a slot in WRITING state: written without the lock */
    frame->system = gpushare_xfer_ring_ref (self->system);
    in_sys_slot = TRUE;
  }
  if (in_sys_slot)
    frame->staged = gpushare_xfer_ring_ref (self->system);
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++) {
    GpuShareXferRing *ring;

    if (!(need_gpu & (1u << i)))
      continue;
    ring = ensure_gpu_ring (self, 1u << i, error);
    if (!ring) {
      gpushare_ring_abort (&self->ring, slot);
      g_mutex_unlock (&self->lock);
      frame_clear (self, frame);
      return GPUSHARE_SERVER_ERROR_GPU;
    }
    frame->rings[frame->n_rings++] = ring;
  }
  /* a copy from GPU memory into the GPU slots: launched, waited for
   * and published in some tens of microseconds, as long as a sleeping
   * consumer takes to wake up, so the wake-up runs beside it */
  if (gpu_buffer && !frame->in_place && frame->n_rings > 0)
    announce_frame (self, need_gpu);
  payload_places (self, &side, &device_side);
  if (side)
    frame->side = gpushare_side_ref (self->side);
  if (frame->n_rings > 0 && device_side) {
    frame->device_offset = GPUSHARE_DEVICE_SIDE_START (self->layout.slot_size);
    frame->device_size = (gsize) self->side_pages * GPUSHARE_SIDE_PAGE;
  }
  g_mutex_unlock (&self->lock);
  return GPUSHARE_SERVER_OK;

flushing:
  g_mutex_unlock (&self->lock);
  return GPUSHARE_SERVER_FLUSHING;
}

/* lock held: FRAME f into c's lane, with its metas in the meta region
 * (NULL: none); FALSE only when they found no room there (nothing was
 * written: the caller sends them another way) */
static gboolean
lane_frame (GpuShareServer * self, Client * c, const GpuShareFrame * f,
    const GpuShareFrameMetas * metas)
{
  GpuShareLaneEntry e = { 0, };
  gboolean no_room = FALSE;

  e.kind = GPUSHARE_LANE_ENTRY_FRAME;
  e.frame = *f;
  e.written_us = g_get_monotonic_time ();
  if (lane_push (self, c, &e, metas, &no_room))
    c->frames_sent++;
  return !no_room;
}

/* lock held: a frame goes to c without n of its metas, which do not fit
 * a META, and without room in a lane's meta region: counted (once a
 * frame), said once */
static void
metas_not_sent (GpuShareServer * self, Client * c,
    const GpuShareFrameMetas * meta, guint n)
{
  self->metas_not_sent += n;
  if (self->told_metas_not_sent)
    return;
  self->told_metas_not_sent = TRUE;
  GST_WARNING_OBJECT (self->log_object, "client %u: %u of a frame's metas "
      "(%u bytes in all) do not fit a META (%u bytes)%s: sent without them, "
      "counted in the stats (metas-not-carried)", c->id, n, meta->data_len,
      GPUSHARE_MAX_META_LEN, c->lane_metas ? " nor its lane's meta region "
      "now" : ", and it takes none in its lane");
}

/* lock held.  Leaky: a consumer that holds its share in its first
 * GPUSHARE_RING_START_GRACE_MS gets the frame all the same where the ring
 * has a slot to lend it that neither the producer nor the other streaming
 * consumers (streaming) can want: its process is still starting the other
 * streams it reads, and would miss one of its first frames for it. */
static gboolean
starting_admits (GpuShareServer * self, Client * c, guint quota,
    guint64 streaming, gint64 now)
{
  if (!c->first_frame_us
      || now - c->first_frame_us >= GPUSHARE_RING_START_GRACE_MS * 1000)
    return FALSE;
  if (gpushare_ring_leaky_spare (&self->ring, c->index, streaming, quota) == 0)
    return FALSE;
  c->frames_lent++;
  return TRUE;
}

gboolean
gpushare_server_end_frame (GpuShareServer * self,
    GpuShareServerFrame * frame, gboolean written,
    const GpuShareFrame * fields, GpuShareFrameMetas * meta, GError ** error)
{
  gboolean wire_made = FALSE;   /* meta as a META in self->wire_meta */
  Client *sent_to[MAX_CLIENTS];
  guint sent_id[MAX_CLIENTS];
  GpuShareMemType sent_mem[MAX_CLIENTS] = { 0, };
  guint64 holders = 0, sequence;
  guint32 generation, gpu_types = 0;
  guint64 streaming = 0;
  guint slot = frame->slot, i, quota = 0;
  gboolean ok = TRUE;
  gint64 now;

  g_mutex_lock (&self->lock);
  /* the epoch cannot change in between: only the streaming thread, which
   * writes this frame, makes a new ring */
  if (!written) {
    gpushare_ring_abort (&self->ring, slot);
    wake_waiters (self);
    g_mutex_unlock (&self->lock);
    frame_clear (self, frame);
    return written;
  }
  if (frame->system)
    self->frames_copied++;
  for (i = 0; i < frame->n_rings; i++)
    gpu_types |= frame->rings[i]->mem_type;
  if (gpu_types)
    self->frames_to_gpu++;
  sequence = ++self->sequence;
  gpushare_ring_ready (&self->ring, slot, sequence);

  /* leaky: each consumer may hold its share of the ring, one slot always
   * stays with the producer; every FRAME tells the consumer its share, so
   * that it copies what its pipeline would keep past it */
  if (frame->leaky)
    quota = gpushare_ring_share (self->ring.n_slots,
        n_streaming_clients (self));
  for (i = 0; i < MAX_CLIENTS; i++)
    if (self->clients[i] && self->clients[i]->state == CLIENT_READY)
      streaming |= G_GUINT64_CONSTANT (1) << self->clients[i]->index;
  now = g_get_monotonic_time ();
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];

    sent_to[i] = NULL;
    if (!c)
      continue;
    if (c->state != CLIENT_READY || c->mapped_epoch != self->epoch
        || (c->mem_type == GPUSHARE_MEM_SYSTEM ? !frame->staged :
            !(gpu_types & c->mem_type))) {
      /* still mapping a new ring (leaky only: lossless waited above), or
       * it joined while this frame was being written */
      if (c->connected_emitted)
        c->frames_dropped++;
      continue;
    }
    /* a consumer of minor 6 or later knows its share: past it, it gives
     * each frame back at once */
    if (frame->leaky && !gpushare_ring_leaky_admits (&self->ring, c->index,
            quota, c->share, c->over_since, c->minor >= GPUSHARE_MINOR_SHARE)
        && !starting_admits (self, c, quota, streaming, now)) {
      c->frames_dropped++;
      if (!c->skipped_since) {
        c->skipped_since = now;
        housekeeping_by (self, now + GPUSHARE_STALL_NOTICE_MS * 1000);
      }
      c->skipped_run++;
      GST_LOG_OBJECT (self->log_object, "client %u holds its share of %u: "
          "frame skipped", c->id, quota);
      continue;
    }
    if (c->stall_reported)
      GST_INFO_OBJECT (self->log_object, "client %u (pid %d) receives frames "
          "again, after %" G_GUINT64_FORMAT " skipped", c->id, (gint) c->pid,
          c->skipped_run);
    c->skipped_since = 0;
    c->skipped_run = 0;
    c->stall_reported = FALSE;
    c->share = quota;
    if (frame->leaky
        && gpushare_ring_n_held_by (&self->ring, c->index) >= quota) {
      if (!c->over_since)
        c->over_since = sequence;
    } else {
      c->over_since = 0;
    }
    if (!c->first_frame_us)
      c->first_frame_us = now;
    holders |= G_GUINT64_CONSTANT (1) << c->index;
    sent_to[i] = c;
    sent_id[i] = c->id;
    sent_mem[i] = c->mem_type;
  }
  gpushare_ring_publish_at (&self->ring, slot, holders,
      g_get_monotonic_time ());
  generation = gpushare_ring_generation (&self->ring, slot);
  g_mutex_unlock (&self->lock);

  /* ready, signalled to the GPU holders: device work, without the lock
   * (the clients in sent_to[] are only compared from here on) */
  for (i = 0; ok && i < frame->n_rings; i++) {
    guint64 gpu_holders = 0;
    guint j;

    for (j = 0; j < MAX_CLIENTS; j++)
      if (sent_mem[j] == frame->rings[i]->mem_type)
        gpu_holders |= G_GUINT64_CONSTANT (1) << j;
    ok = gpushare_xfer_ring_publish (frame->rings[i], slot, gpu_holders,
        sequence, error);
  }

  g_mutex_lock (&self->lock);
  if (ok) {
    GpuShareFrame f = *fields;

    f.epoch = self->ring.epoch;
    f.slot = slot;
    f.generation = generation;
    f.sequence = sequence;
    f.share = quota;
    if (meta)
      meta->sequence = sequence;
    for (i = 0; i < MAX_CLIENTS; i++) {
      Client *c = sent_to[i];

      if (!c)
        continue;
      c = self->clients[i];
      if (!c || c->id != sent_id[i]) {
        /* gone meanwhile; its slots went with it */
        continue;
      }
      /* payloads in the side memory, or in GPU memory, to a consumer
       * that cannot read them (it came between the start of this frame
       * and now): without them */
      if (meta && ((meta->side_len && !c->side) || (meta->device_len
                  && c->minor < GPUSHARE_MINOR_DEVICE_SIDE))) {
        metas_not_sent (self, c, meta, meta->n_entries);
        if (c->lane)
          lane_frame (self, c, &f, NULL);
        else if (gpushare_conn_send_frame (c->conn, &f))
          c->frames_sent++;
        continue;
      }
      /* the frame's metas beside it in the lane's meta region, where it
       * has room: one write, no message */
      if (meta && c->lane && c->lane_metas && lane_frame (self, c, &f, meta))
        continue;
      /* else first, to a consumer that knows META, as one if they fit; a
       * failed send drops the client from the control thread, which
       * gives its slots back */
      if (meta && c->minor >= GPUSHARE_MINOR_META) {
        gboolean sent;

        /* made once a frame: the entries that fit, the others counted
         * (once, however many consumers take it so) */
        if (!wire_made) {
          guint left_out;

          if (!self->wire_meta)
            self->wire_meta = g_new0 (GpuShareMeta, 1);
          left_out = gpushare_frame_metas_to_meta (meta, self->wire_meta);
          if (left_out)
            metas_not_sent (self, c, meta, left_out);
          wire_made = TRUE;
        }
        if (self->wire_meta->n_entries > 0) {
          sent = gpushare_conn_send_meta (c->conn, self->wire_meta);
          lane_mark (self, c, sent);
          if (!sent)
            continue;
        }
      }
      if (c->lane) {
        lane_frame (self, c, &f, NULL);
      } else if (gpushare_conn_send_frame (c->conn, &f)) {
        c->frames_sent++;
      }
    }
    self->frames_rendered++;
    gpushare_test_point ("sink", "frame");
    GST_LOG_OBJECT (self->log_object, "frame %" G_GUINT64_FORMAT " in slot "
        "%u for %u consumers", sequence, slot,
        (guint) __builtin_popcountll (holders));
  }
  g_mutex_unlock (&self->lock);
  frame_clear (self, frame);
  return ok;
}

/* lock held: lossless waits only while consumers hold slots (they will come
 * back); slots that upstream holds itself would never come back */
/* The pools' wait for a free slot for upstream: of the system ring, or
 * (gpu) of the GPU ring its consumers use, none while there is no GPU
 * consumer.  GST_FLOW_OK with tag (its ring a reference), FLUSHING, or
 * CUSTOM_SUCCESS for none. */
static GstFlowReturn
pool_acquire (GpuShareServer * self, gboolean leaky, const gint * flushing,
    gboolean gpu, GpuShareServerTag * tag)
{
  GstFlowReturn ret = GST_FLOW_CUSTOM_SUCCESS;
  GpuShareXferRing *ring;
  gboolean waiting = FALSE;
  guint slot;

  g_mutex_lock (&self->lock);
  while (self->system) {
    if (g_atomic_int_get (flushing)) {
      ret = GST_FLOW_FLUSHING;
      break;
    }
    ring = gpu ? pool_gpu_ring (self) : self->system;
    if (!ring)
      break;
    drain_releases (self);
    if (gpushare_ring_acquire (&self->ring, &slot) == GPUSHARE_RING_OK) {
      tag->ring = gpushare_xfer_ring_ref (ring);
      tag->slot = slot;
      tag->generation = gpushare_ring_generation (&self->ring, slot);
      ret = GST_FLOW_OK;
      break;
    }
    /* quarantined slots: render replaces the ring, give it a frame */
    if (leaky || !gpushare_ring_any_held (&self->ring)
        || gpushare_ring_n_tainted (&self->ring) > 0)
      break;
    /* the producer waits for a slot: leases run */
    if (!waiting) {
      slot_wait_begin (self);
      waiting = TRUE;
      lanes_waiting (self, TRUE);
      continue;
    }
    cond_wait (self, 0);
  }
  if (waiting) {
    slot_wait_end (self);
    lanes_waiting (self, FALSE);
  }
  g_mutex_unlock (&self->lock);
  return ret;
}

gboolean
gpushare_server_pool_acquire (GpuShareServer * self, gboolean leaky,
    const gint * flushing, GpuShareServerTag * tag)
{
  return pool_acquire (self, leaky, flushing, FALSE, tag) == GST_FLOW_OK;
}

GstFlowReturn
gpushare_server_pool_acquire_gpu (GpuShareServer * self, gboolean leaky,
    const gint * flushing, GpuShareServerTag * tag, GError ** error)
{
  GstFlowReturn ret = pool_acquire (self, leaky, flushing, TRUE, tag);

  /* the slot's last readers may still read it on the GPU: upstream writes
   * it as soon as it has it, so they are waited for first */
  if (ret == GST_FLOW_OK
      && !gpushare_xfer_ring_prepare (tag->ring, tag->slot, error)) {
    gpushare_server_pool_release (self, tag);
    g_clear_pointer (&tag->ring, gpushare_xfer_ring_unref);
    ret = GST_FLOW_ERROR;
  }
  return ret;
}

void
gpushare_server_pool_release (GpuShareServer * self,
    const GpuShareServerTag * tag)
{
  g_mutex_lock (&self->lock);
  if (is_current_slot (self, tag)) {
    gpushare_ring_abort (&self->ring, tag->slot);
    wake_waiters (self);
  }
  g_mutex_unlock (&self->lock);
}

/* ------------------------------------------------------------------------ */
/* Stats */

void
gpushare_server_stats_clear (GpuShareServerStats * stats)
{
  guint i;

  g_free (stats->gpu_memory);
  for (i = 0; i < stats->n_clients; i++) {
    g_free (stats->clients[i].name);
    g_free (stats->clients[i].memory_reason);
  }
  memset (stats, 0, sizeof (*stats));
}

void
gpushare_server_get_stats (GpuShareServer * self, GpuShareServerStats * s)
{
  guint i;

  memset (s, 0, sizeof (*s));
  g_mutex_lock (&self->lock);
  drain_releases (self);
  s->epoch = self->epoch;
  s->slots_quarantined = self->slots_quarantined;
  s->rings_replaced = self->rings_replaced;
  s->rings_grown = self->rings_grown;
  s->ring_slots = self->system ? self->ring.n_slots : 0;
  for (i = 0; i < GPUSHARE_MEM_N_TYPES; i++)
    s->rings_retained += self->retired[i] ?
        gpushare_retained_count (self->retired[i]) : 0;
  s->frames_rendered = self->frames_rendered;
  s->metas_not_sent = self->metas_not_sent;
  s->frames_dropped = self->frames_dropped;
  s->frames_in_place = self->frames_in_place;
  s->frames_copied = self->frames_copied;
  s->frames_to_gpu = self->frames_to_gpu;
  s->gpu_memory = g_strdup (self->gpu_ok ? "offered" :
      self->gpu_reason ? self->gpu_reason : "not probed");
  s->free_slots = self->system ? gpushare_ring_n_free (&self->ring) : 0;
  s->n_observers = self->n_observers;
  for (i = 0; i < MAX_CLIENTS; i++) {
    Client *c = self->clients[i];
    GpuShareServerClientStats *cs;

    if (!c || c->observer)
      continue;
    cs = &s->clients[s->n_clients++];
    cs->id = c->id;
    cs->pid = (gint) c->pid;
    cs->uid = c->uid;
    cs->name = g_strdup (c->name ? c->name : "");
    cs->sync_mode = gpushare_sync_mode_to_string (c->sync_mode);
    cs->state = client_state_to_string (c->state);
    cs->memory_type = c->mem_type ?
        gpushare_mem_type_to_string (c->mem_type) : "none";
    cs->memory_reason = g_strdup (c->mem_reason ? c->mem_reason :
        "handshake not finished");
    cs->frames_sent = c->frames_sent;
    cs->frames_released = c->frames_released;
    cs->frames_dropped = c->frames_dropped;
    cs->frames_lent = c->frames_lent;
    cs->slots_held = self->system ?
        gpushare_ring_n_held_by (&self->ring, c->index) : 0;
    cs->share = c->share;
    cs->stalled = c->stall_reported;
  }
  g_mutex_unlock (&self->lock);
}
