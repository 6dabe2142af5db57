/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The consumer core: everything gpusharesrc does that is not GStreamer.
 *
 * It connects to the producer (waiting for it to appear, and checking who
 * it is before a byte is read), runs the handshake (the memory type and
 * synchronisation are negotiated in gpusharenegotiate.h), maps each ring
 * through the transfer interface, checks every message against the state
 * it is in, and queues what the streaming thread takes: caps, frames, the
 * end of the stream, a failure.  A frame taken is a GpuShareClientFrame,
 * whose slot goes back to the producer (RELEASE) when it is released,
 * once.  When the producer goes away the producer-lost setting applies:
 * an error, the end of the stream, or connecting again with back-off.
 *
 * Locking: the client's mutex guards its state and queue; each session (one
 * connection) has its own, taken by frames released from any thread.
 * Order: client, then session.  Device work (mapping a GPU ring, reading a
 * slot) is never done under either; events reach the callback after the
 * locks are let go.
 */

#ifndef __GPUSHARE_CLIENT_H__
#define __GPUSHARE_CLIENT_H__

#include <glib.h>
#include "gpushareproto.h"
#include "gpusharexfer.h"

G_BEGIN_DECLS

/* a producer's EVENTs waiting for the streaming thread, at most; the
 * oldest go first (docs/security.md, "Bounds") */
#define GPUSHARE_CLIENT_MAX_QUEUED_EVENTS 64
/* rings a producer may announce ahead of the frames its lane gave the
 * streaming thread: each waits, mapped, for the reader to reach its
 * frames (docs/security.md, "Bounds") */
#define GPUSHARE_CLIENT_MAX_LANE_RINGS 16
/* heads-up (docs/protocol.md): the longest the streaming thread polls for
 * one frame the producer announced, instead of sleeping.  A copy on the
 * GPU is announced, launched, waited for and published in 20-80 us on an
 * H200; a spin past this is a miss, and spins are then left out for 1 to
 * GPUSHARE_LANE_SPIN_MAX_SKIP frames (docs/security.md, "Bounds") */
#define GPUSHARE_CLIENT_LANE_SPIN_MAX_US 250

typedef struct _GpuShareClient GpuShareClient;
typedef struct _GpuShareClientFrame GpuShareClientFrame;

/* the values of GstGpuShareProducerLost */
typedef enum
{
  GPUSHARE_PRODUCER_LOST_ERROR,
  GPUSHARE_PRODUCER_LOST_EOS,
  GPUSHARE_PRODUCER_LOST_RECONNECT,
} GpuShareProducerLost;

typedef struct
{
  gchar *socket_path;
  guint connection_timeout;     /* ms, 0: forever */
  GpuShareProducerLost producer_lost;
  guint transport;              /* GstGpuShareTransport values */
  guint sync;                   /* GstGpuShareSync values */
  gint cuda_device_id;
  guint heartbeat_interval;     /* ms, 0: none */
  GArray *allowed_producer_uids;
  gchar *name;                  /* told to the producer */
  gboolean lane;                /* ask for a frame lane (LANE) */
  gboolean copies;              /* io-mode=copy: every frame is copied out
                                 * of its slot */
  guint wake_ahead_us;          /* with a lane: poll it that long before a
                                 * steady producer's next frame is due; 0:
                                 * never */
} GpuShareClientConfig;

typedef enum
{
  GPUSHARE_CLIENT_EVENT_TRANSPORT,      /* the first ring is mapped */
  GPUSHARE_CLIENT_EVENT_PRODUCER_LOST,  /* detail: what happened; action:
                                         * the GpuShareProducerLost done */
  GPUSHARE_CLIENT_EVENT_STALLED,        /* a leaky producer skips us: we
                                         * hold our share; detail says */
} GpuShareClientEventType;

typedef struct
{
  GpuShareClientEventType type;
  GpuShareMemType mem_type;
  const gchar *reason;
  /* TRANSPORT: the producer (its pid from the socket's credentials) and
   * the reconnects so far; PRODUCER_LOST: what happened, what is done */
  gint producer_pid;
  const gchar *producer_name;
  guint reconnects;
  gchar detail[256];
  guint action;
  /* STALLED: our share, what we hold of it, frames skipped so far */
  guint share;
  guint slots_held;
  guint64 skipped;
} GpuShareClientEvent;

typedef void (*GpuShareClientEventFunc) (GpuShareClient * client,
    const GpuShareClientEvent * event, gpointer user_data);

typedef enum
{
  GPUSHARE_CLIENT_ITEM_CAPS,
  GPUSHARE_CLIENT_ITEM_FRAME,
  GPUSHARE_CLIENT_ITEM_EOS,
  GPUSHARE_CLIENT_ITEM_ERROR,
  GPUSHARE_CLIENT_ITEM_FLUSHING,
  GPUSHARE_CLIENT_ITEM_EVENT,
} GpuShareClientItemType;

typedef struct
{
  GpuShareClientItemType type;
  /* CAPS: the producer's layout, checked; its caps string parses */
  GpuShareLayout layout;
  /* FRAME: released with gpushare_client_frame_release () */
  GpuShareClientFrame *frame;
  /* EVENT: the producer's event, freed by gpushare_client_item_clear () */
  GpuShareEvent *event;
  /* the first frame of a new producer, or after frames missed */
  gboolean discont;
  gboolean new_producer;        /* the first frame of a producer after a
                                 * reconnect */
  guint64 missed;               /* frames of the producer missed before it */
  /* FRAME: the producer's latency changed since the frame before (said
   * once a frame at most, however often its CAPS changed it) */
  gboolean latency_changed;
  /* ERROR, for GST_ELEMENT_ERROR */
  GQuark error_domain;
  gint error_code;
  gchar *error_text;
  gchar *error_debug;
  /* where it was found, for the error message (static strings) */
  const gchar *error_file;
  const gchar *error_function;
  gint error_line;
} GpuShareClientItem;

void gpushare_client_item_clear (GpuShareClientItem * item);

typedef struct
{
  const gchar *state;
  GpuShareMemType mem_type;
  GpuShareSyncMode sync_mode;
  gint peer_device;
  gchar *mem_reason;
  guint64 epoch;
  guint64 frames_received;
  guint64 frames_missed;        /* rendered by the producer, not received */
  gint producer_pid;            /* from the socket's credentials; 0 */
  gchar *producer_name;         /* the name it announced, or NULL */
  guint reconnects;
  gboolean producer_live;
  guint64 events_dropped;       /* queued past MAX_QUEUED_EVENTS */
  guint share;                  /* of a leaky producer's ring; 0: none */
  gboolean stalled;             /* it said it skips us, no frame since */
  gboolean lane;                /* frames come through a frame lane */
  guint64 lane_metas;           /* frames whose metas came through its
                                 * meta region */
  /* heads-up: frames a spin caught, spins that missed, microseconds
   * spun (docs/design.md, "Heads-up") */
  guint64 lane_spins;
  guint64 lane_spin_misses;
  guint64 lane_spin_us;
  /* wake-ahead: polls begun before a frame was due, and the frames they
   * caught (their time is in lane_spin_us) */
  guint64 lane_early_wakes;
  guint64 lane_early_hits;
} GpuShareClientStats;

GpuShareClient *gpushare_client_new (const GpuShareClientConfig * config,
    gpointer log_object, GpuShareClientEventFunc func, gpointer user_data);
void gpushare_client_free (GpuShareClient * client);
/* whether downstream takes fd memory (gpushare_xfer_view_wrap_fd ()):
 * until told, the views keep their slots' fds; FALSE closes them */
void gpushare_client_set_fd_memory (GpuShareClient * client,
    gboolean fd_memory);

/* probes the GPU and starts connecting, from a thread of its own; FALSE
 * where this process has too few file descriptors left to */
gboolean gpushare_client_start (GpuShareClient * client, GError ** error);
/* leaves the producer (GOODBYE), frees what is not held by buffers */
void gpushare_client_stop (GpuShareClient * client);

gboolean gpushare_client_gpu_ok (GpuShareClient * client);

/* streaming thread: the next item, waiting for it */
void gpushare_client_pop (GpuShareClient * client, GpuShareClientItem * item);
void gpushare_client_set_flushing (GpuShareClient * client,
    gboolean flushing);
/* between set_flushing (TRUE) and set_flushing (FALSE) */
gboolean gpushare_client_flushing (GpuShareClient * client);

/* the memory frames come in (0 before the handshake) */
GpuShareMemType gpushare_client_mem_type (GpuShareClient * client);
/* the producer's latency (GST_CLOCK_TIME_NONE: none) */
guint64 gpushare_client_latency (GpuShareClient * client);
void gpushare_client_get_stats (GpuShareClient * client,
    GpuShareClientStats * stats);

/* A frame taken */
const GpuShareFrame *gpushare_client_frame_info (GpuShareClientFrame * f);
/* when its FRAME was read (monotonic us) */
gint64 gpushare_client_frame_received (GpuShareClientFrame * f);
/* its metas (checked), or NULL; the caller frees them */
GpuShareFrameMetas *gpushare_client_frame_take_meta (GpuShareClientFrame * f);
GpuShareXferView *gpushare_client_frame_view (GpuShareClientFrame * f);
/* counts f among the frames read in place, if fewer than max are; TRUE
 * when it is (the GOODBYE of a consumer that leaves says such frames are
 * still read) */
gboolean gpushare_client_frame_hold_in_place (GpuShareClientFrame * f,
    guint max);
/* gives the slot back to the producer and frees f; any thread */
void gpushare_client_frame_release (GpuShareClientFrame * f);
/* one more holder of f, released as any (gpushare_client_frame_release ()):
 * what is read in place of its slot stays while it holds it */
GpuShareClientFrame *gpushare_client_frame_ref (GpuShareClientFrame * f);
/* f is held in place (gpushare_client_frame_hold_in_place ()) */
gboolean gpushare_client_frame_in_place (GpuShareClientFrame * f);
/* f is copied after all (what held it in place could not be made): no
 * longer counted in place, and what is read of its slot is copied too */
void gpushare_client_frame_copied (GpuShareClientFrame * f);
/* the region of f's slot in its ring's side memory, and its size (NULL
 * and 0: none) */
guint8 *gpushare_client_frame_side (GpuShareClientFrame * f, gsize * size);
/* bytes of the room of f's GPU slot past the frame, where payloads in GPU
 * memory lie (0: none), and *offset where in the slot it begins */
gsize gpushare_client_frame_device_room (GpuShareClientFrame * f,
    gsize * offset);

G_END_DECLS

#endif /* __GPUSHARE_CLIENT_H__ */
