/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The producer core: everything gpusharesink does that is not GStreamer.
 *
 * It listens on the socket path, admits consumers (credentials, limits),
 * runs each one's handshake as a state machine with deadlines and a
 * heartbeat, exports the ring through the transfer interface, hands out
 * slots per frame under the slow-consumer policy, takes RELEASEs back,
 * and deals with consumers that leave or misbehave: leases, quarantine,
 * ring replacement, retention of retired rings (legacy IPC).  Its control thread
 * runs a GMainContext of its own.
 *
 * Locking: one mutex guards the clients and the ring state.  Nothing slow
 * runs under it: device work (GPU rings made, consumers added and removed,
 * frames written and published) happens on the transfer's rings after it
 * is let go, sockets are only queued to, and every notification is queued
 * and delivered through the event callback after unlocking.  The order is
 * server lock, then a transfer ring's lock; never the other way.
 */

#ifndef __GPUSHARE_SERVER_H__
#define __GPUSHARE_SERVER_H__

#include <glib.h>
#include <gst/video/video.h>
#include "gpushareproto.h"
#include "gpusharexfer.h"

G_BEGIN_DECLS

/* Bounds on what consumers can make a producer keep (docs/security.md,
 * "Bounds"; test_docs checks the table against these):
 * observers at once, beside the consumers */
#define GPUSHARE_SERVER_MAX_OBSERVERS 4
/* a process whose consumers left slots quarantined this many times within
 * GPUSHARE_SERVER_QUARANTINE_WINDOW_S is refused for the rest of that
 * window: each time costs a new ring, and the old ring's memory lives on
 * in that process's mappings (a consumer that said GOODBYE HELD again and
 * again pinned 79 MiB at VGA in 8 s) */
#define GPUSHARE_SERVER_QUARANTINE_BURST 4
#define GPUSHARE_SERVER_QUARANTINE_WINDOW_S 10
/* and the processes of one uid, this many times: a process that forks a
 * child for each quarantine is a new pid each time (40 children in 0.8 s
 * replaced the ring 40 times, a real consumer got a third of its frames) */
#define GPUSHARE_SERVER_QUARANTINE_BURST_UID 16
/* handshake-timeouts a consumer may take to map its slots (SLOTS sent,
 * MAPPED not back) for as long as its process is heard from within each
 * (its device work pulses: imports of seconds while many processes make
 * their CUDA contexts at once): 60 s by default; a silent one goes after
 * one, as in every step of the handshake */
#define GPUSHARE_SERVER_MAP_TIMEOUTS 12
/* rings of earlier epochs of a retired kind (GPUSHARE_KIND_RETIRE: legacy
 * IPC) kept for consumers' processes that may still have them open; past
 * this, no new ring of that kind is made */
#define GPUSHARE_SERVER_MAX_RETIRED 4
/* the longest the ring's device work waits on a consumer's done signal of
 * a frame it released before that consumer is dropped ("done signal
 * overdue"; lease-timeout when shorter): well within a consumer's own
 * 10 s wait for a frame, which the stall holds up too */
#define GPUSHARE_SERVER_DONE_TIMEOUT_MS 5000
/* processes of one uid that hung up without a word and live on, each
 * still holding the ring of a retired kind (the producer keeps a pidfd
 * of each, to free the ring once they exit), at most: a further process
 * of that uid is refused that ring until one of them exits */
#define GPUSHARE_SERVER_MAX_GONE_HOLDERS 16
/* connections of one uid that closed with bytes of the producer's unread
 * in their sockets (descriptors of its slots among them, which count
 * against the producer's uid in the kernel until read or closed: enough
 * of them and every send of descriptors fails), at most: a further
 * connection of that uid is refused until one is drained */
#define GPUSHARE_SERVER_MAX_LINGERING 4

typedef struct _GpuShareServer GpuShareServer;

/* why a consumer went; the values of GstGpuShareClientRemoveReason */
typedef enum
{
  GPUSHARE_REMOVE_GOODBYE,
  GPUSHARE_REMOVE_HANGUP,
  GPUSHARE_REMOVE_PROTOCOL,
  GPUSHARE_REMOVE_VERSION,
  GPUSHARE_REMOVE_NOT_AUTHORIZED,
  GPUSHARE_REMOVE_UNSUPPORTED,
  GPUSHARE_REMOVE_SLOW,
  GPUSHARE_REMOVE_TOO_MANY,
  GPUSHARE_REMOVE_PEER_ERROR,
  GPUSHARE_REMOVE_RESOURCE,
  GPUSHARE_REMOVE_SHUTDOWN,
  GPUSHARE_REMOVE_TIMEOUT,
  GPUSHARE_REMOVE_LEASE,
} GpuShareRemoveReason;

const gchar *gpushare_remove_reason_to_string (GpuShareRemoveReason reason);

typedef enum
{
  GPUSHARE_SERVER_EVENT_CONNECTED,      /* a consumer receives frames */
  GPUSHARE_SERVER_EVENT_REMOVED,        /* a consumer is gone */
  GPUSHARE_SERVER_EVENT_QUARANTINE,     /* slots a consumer left tainted */
  GPUSHARE_SERVER_EVENT_NUM_CLIENTS,    /* the client count changed */
  GPUSHARE_SERVER_EVENT_STALLED,        /* a leaky producer skipped a
                                         * consumer for a while */
  GPUSHARE_SERVER_EVENT_WAITING,        /* frames wait for n_consumers
                                         * (slots: ready now), once a
                                         * wait */
} GpuShareServerEventType;

typedef struct
{
  GpuShareServerEventType type;
  guint client_id;              /* 0: refused before it got one */
  GpuShareRemoveReason reason;
  guint slots;                  /* QUARANTINE; STALLED: slots it holds */
  /* STALLED: its share, the consumers, frames skipped and for how long */
  guint share;
  guint n_consumers;
  guint64 skipped;
  guint skipped_ms;
  /* CONNECTED and REMOVED: the consumer's process (pid 0: unknown), the
   * name it gave, its memory type, and (REMOVED) what happened */
  gint pid;
  guint uid;
  gchar name[GPUSHARE_MAX_NAME_LEN + 1];
  GpuShareMemType mem_type;
  gchar detail[256];
} GpuShareServerEvent;

/* called from any thread, never with a lock of the server held */
typedef void (*GpuShareServerEventFunc) (GpuShareServer * server,
    const GpuShareServerEvent * event, gpointer user_data);

typedef struct
{
  gchar *socket_path;
  guint socket_mode;
  guint max_clients;
  guint max_pending;
  guint handshake_timeout;      /* ms, 0: none */
  guint lease_timeout;          /* ms, 0: none */
  guint heartbeat_interval;     /* ms, 0: none */
  GArray *allowed_uids;         /* guint; our own uid always may */
  GArray *allowed_gids;
  /* who is offered memory a consumer could write (GPUSHARE_KIND_WRITABLE):
   * both empty, every admitted consumer; else our own uid, these uids and
   * these primary gids, and the others get system memory */
  GArray *gpu_uids;
  GArray *gpu_gids;
  gint cuda_device_id;
  gchar *name;                  /* announced to consumers */
} GpuShareServerConfig;

typedef enum
{
  GPUSHARE_SERVER_OK,
  GPUSHARE_SERVER_DROPPED,      /* leaky, every slot taken: frame dropped */
  GPUSHARE_SERVER_FLUSHING,
  GPUSHARE_SERVER_NO_FORMAT,    /* a frame before the caps */
  GPUSHARE_SERVER_ERROR,        /* the ring could not be replaced */
  GPUSHARE_SERVER_ERROR_GPU,    /* a GPU ring could not be made */
} GpuShareServerResult;

/* The slot a frame is written to, between begin and end of the frame */
typedef struct
{
  guint slot;
  gboolean leaky;               /* consumers holding their share skip it */
  gboolean in_place;            /* upstream wrote the system slot itself */
  GpuShareXferRing *system;     /* to write first, or NULL; a reference */
  GpuShareXferRing *staged;     /* the system ring holding the frame after
                                 * that write, or NULL; a reference */
  /* rings of other memory types to write; references */
  GpuShareXferRing *rings[GPUSHARE_MEM_N_TYPES];
  guint n_rings;
  /* set by end_frame: the host's waits for those rings' device work
   * since the last frame, in microseconds, and the part spent spinning */
  guint64 device_wait_us;
  guint64 device_spin_us;
  /* the ring's side memory, where the frame's metas may put their
   * payloads (the region of slot), or NULL; a reference */
  struct _GpuShareSide *side;
  /* the room of the GPU slots past the frame, for payloads in GPU memory:
   * where it begins and its bytes (0: none, or not every consumer can
   * read it) */
  gsize device_offset;
  gsize device_size;
} GpuShareServerFrame;

/* a slot upstream holds from our pool */
typedef struct
{
  GpuShareXferRing *ring;       /* a reference */
  guint slot;
  guint32 generation;
} GpuShareServerTag;

typedef struct
{
  guint id;
  gint pid;
  guint uid;                    /* from the socket's credentials */
  gchar *name;
  const gchar *state;
  const gchar *memory_type;
  const gchar *sync_mode;       /* "none" for system memory */
  gchar *memory_reason;
  guint64 frames_sent;
  guint64 frames_released;
  guint64 frames_dropped;
  guint64 frames_lent;          /* past its share, as it started */
  guint slots_held;
  guint share;                  /* told in its last FRAME; 0: lossless */
  gboolean stalled;             /* skipped for GPUSHARE_STALL_NOTICE_MS */
} GpuShareServerClientStats;

typedef struct
{
  guint64 epoch;
  guint64 slots_quarantined;
  guint64 rings_replaced;
  guint64 rings_grown;          /* replaced to give consumers their share */
  guint ring_slots;
  guint rings_retained;         /* of retired kinds, all of them */
  guint64 frames_rendered;
  guint64 metas_not_sent;       /* meta entries of frames a consumer got
                                 * without them (too large for it) */
  guint64 frames_dropped;
  guint64 frames_in_place;
  guint64 frames_copied;
  guint64 frames_to_gpu;
  gchar *gpu_memory;
  guint free_slots;
  guint n_clients;
  GpuShareServerClientStats clients[64];
  guint n_observers;            /* connected with OBSERVE, not counted above */
} GpuShareServerStats;

void gpushare_server_stats_clear (GpuShareServerStats * stats);

/* log_object: what log lines name (the element), may be NULL */
GpuShareServer *gpushare_server_new (const GpuShareServerConfig * config,
    gpointer log_object, GpuShareServerEventFunc func, gpointer user_data);
GpuShareServer *gpushare_server_ref (GpuShareServer * server);
/* the last reference stops it (gpushare_server_stop ()) and frees it */
void gpushare_server_unref (GpuShareServer * server);

/* listens, probes the GPU, starts the control thread */
gboolean gpushare_server_start (GpuShareServer * server, GError ** error);
/* says GOODBYE to every consumer, stops the thread, frees the rings */
void gpushare_server_stop (GpuShareServer * server);

/* settings that apply from now on (limits, timeouts, heartbeat of new
 * connections, allowed ids); the socket and the GPU stay as started */
void gpushare_server_configure (GpuShareServer * server,
    const GpuShareServerConfig * config);

/* GPU memory offered to consumers (stats say why not) */
gboolean gpushare_server_gpu_ok (GpuShareServer * server);

/* The stream.  layout: the caps, frame size and planes; the ring's fields
 * are the server's.  A new ring is made when the frame needs larger
 * slots; consumers get the caps (and the slots) before the next frame.
 * ring_size 0: GPUSHARE_RING_DEFAULT_SLOTS, grown as a leaky stream's
 * consumers need (gpushare_ring_auto_slots ()). */
/* side_pages: each slot's side memory, in GPUSHARE_SIDE_PAGE pages (0:
 * none), for a new ring; device_side: the GPU slots get as much room
 * past the frame, for payloads in GPU memory (a new ring the first time,
 * and for every later one) */
gboolean gpushare_server_set_format (GpuShareServer * server,
    const GpuShareLayout * layout, guint ring_size, guint32 side_pages,
    gboolean device_side, GError ** error);
void gpushare_server_set_live (GpuShareServer * server, gboolean live,
    guint64 latency);
gboolean gpushare_server_is_live (GpuShareServer * server);
void gpushare_server_eos (GpuShareServer * server);
/* a downstream event of the stream, to the consumers that know EVENT; the
 * sticky ones (tags, custom sticky) are kept for those that join */
void gpushare_server_send_event (GpuShareServer * server,
    const GpuShareEvent * event);
void gpushare_server_reset_eos (GpuShareServer * server);
/* wakes every wait; frames are refused while flushing */
void gpushare_server_set_flushing (GpuShareServer * server,
    gboolean flushing);
/* asked, without the server's lock, whenever a wait for consumers wakes
 * (every 100 ms at least, and at gpushare_server_wake ()): TRUE when
 * upstream stopped, and then the wait gives up its frame, and the frames
 * after it go to nobody until the next flush
 * (gpushare_server_set_flushing (FALSE)) */
typedef gboolean (*GpuShareServerStopFunc) (gpointer user_data);
/* before gpushare_server_start () */
void gpushare_server_set_stop_func (GpuShareServer * server,
    GpuShareServerStopFunc func, gpointer user_data);
/* wakes every wait, so that settings read at the wait are seen */
void gpushare_server_wake (GpuShareServer * server);
guint gpushare_server_n_clients (GpuShareServer * server);

/* The text of a STATUS to observers (docs/protocol.md, OBSERVE): made on
 * the control thread, without the server's lock; NULL: none this time */
typedef gchar *(*GpuShareServerStatusFunc) (GpuShareServer * server,
    gpointer user_data);
/* before gpushare_server_start () */
void gpushare_server_set_status_func (GpuShareServer * server,
    GpuShareServerStatusFunc func, gpointer user_data);

/* A frame: a slot for it (waits as the policy says), written by the
 * caller through the rings in frame, then given to the consumers.
 * wait_for: consumers the frame waits for, at the start of the stream and
 * when it finds none connected (0: never waits for them).
 * tag: the pool slot the buffer is, when upstream wrote into it. */
GpuShareServerResult gpushare_server_begin_frame (GpuShareServer * server,
    gboolean lossless, guint wait_for, gboolean gpu_buffer,
    const GpuShareServerTag * tag, GpuShareServerFrame * frame,
    GError ** error);
/* written: FALSE when a write failed (the slot goes back).  fields: the
 * frame's timestamps and flags; the ring's fields are the server's.  meta:
 * the frame's metas or NULL, sent before the FRAME to the consumers that
 * know META (its sequence is set here) */
gboolean gpushare_server_end_frame (GpuShareServer * server,
    GpuShareServerFrame * frame, gboolean written,
    const GpuShareFrame * fields, GpuShareFrameMetas * meta,
    GError ** error);

/* The pool: a free system slot for upstream to write into.  FALSE when
 * none is to be had (upstream then gets a plain buffer); waits while
 * consumers hold every slot, unless leaky or *flushing. */
gboolean gpushare_server_pool_acquire (GpuShareServer * server,
    gboolean leaky, const gint * flushing, GpuShareServerTag * tag);
/* The pool of GPU slots: a free slot of the current GPU ring (the first
 * GPU memory type its consumers use), its last readers gone, for upstream
 * to write in place.  GST_FLOW_OK with tag (its ring a reference);
 * GST_FLOW_CUSTOM_SUCCESS when there is no GPU consumer or no free slot
 * (leaky, or every slot held and the wait would be a lease's); FLUSHING;
 * or ERROR when waiting for the readers failed. */
GstFlowReturn gpushare_server_pool_acquire_gpu (GpuShareServer * server,
    gboolean leaky, const gint * flushing, GpuShareServerTag * tag,
    GError ** error);
/* a slot that never reached a frame */
void gpushare_server_pool_release (GpuShareServer * server,
    const GpuShareServerTag * tag);

void gpushare_server_get_stats (GpuShareServer * server,
    GpuShareServerStats * stats);

G_END_DECLS

#endif /* __GPUSHARE_SERVER_H__ */
