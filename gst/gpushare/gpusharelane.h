/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A frame lane (docs/protocol.md, "Frame lane"): a ring of entries in a
 * memfd that one producer writes and one consumer reads, with a futex
 * word for a doorbell.  The producer's streaming thread writes FRAMEs
 * (and MARKs, where an ordered message of the socket goes) straight into
 * it; the consumer's streaming thread reads them, with no thread between.
 *
 * Each side keeps its own index and reads the other's from the shared
 * memory as input from a peer: a value that cannot be is reported, never
 * followed.  No lock: one writer, one reader; the caller keeps it so.
 */

#ifndef __GPUSHARE_LANE_H__
#define __GPUSHARE_LANE_H__

#include <glib.h>

#include "gpushareproto.h"

G_BEGIN_DECLS

typedef struct _GpuShareLane GpuShareLane;

typedef enum
{
  GPUSHARE_LANE_OK = 0,
  GPUSHARE_LANE_EMPTY,          /* pop: nothing new */
  GPUSHARE_LANE_FULL,           /* push: the reader has every entry unread */
  GPUSHARE_LANE_BAD_INDEX,      /* the peer's index cannot be */
  GPUSHARE_LANE_BAD_ENTRY,      /* pop: an entry that does not parse, or
                                 * not in its place */
  GPUSHARE_LANE_NO_ROOM,        /* push: the meta region has no room for
                                 * the frame's metas (the entry was not
                                 * written) */
  GPUSHARE_LANE_BAD_METAS,      /* pop: a frame's metas outside the meta
                                 * region, or not after the last ones */
} GpuShareLaneResult;

/* entries of the lanes this version makes */
#define GPUSHARE_LANE_ENTRIES 256

const gchar *gpushare_lane_result_to_string (GpuShareLaneResult res);

/* The producer's side: a new sealed memfd of n_entries entries and a meta
 * region of meta_size bytes (0: none; since minor 9), mapped.  NULL with
 * error when the kernel refuses. */
GpuShareLane *gpushare_lane_new (guint32 n_entries, guint32 meta_size,
    GError ** error);
/* what LANE says of it */
void gpushare_lane_get_info (GpuShareLane * lane, GpuShareLaneInfo * info);
/* a duplicate of its fd, to send (the sender closes it); -1 with error */
gint gpushare_lane_dup_fd (GpuShareLane * lane, GError ** error);
/* writes e (its index set here) and rings the bell if the reader sleeps.
 * A FRAME's metas (NULL: none) go into the meta region first, e pointing
 * at them; NO_ROOM where the lane has no region, or its reader left too
 * little of it read (the caller sends them another way).  Bytes of the
 * region are written again only once the reader read past the entry
 * that points at them. */
GpuShareLaneResult gpushare_lane_push (GpuShareLane * lane,
    GpuShareLaneEntry * e, const GpuShareFrameMetas * metas);

/* The consumer's side: maps fd (taken, closed here in every case) after
 * checking that it is a memfd sealed against shrinking and growing of
 * exactly info->size bytes.  NULL with error otherwise. */
GpuShareLane *gpushare_lane_open (gint fd, const GpuShareLaneInfo * info,
    GError ** error);
/* the next entry, checked (index, parse); EMPTY when none.  A FRAME's
 * metas in the meta region, copied out before the entry counts as read
 * (then the producer may write over them), go into *metas (NULL: none;
 * sequence left 0); metas NULL: not copied.  What they say is the
 * caller's to check (gpushare_frame_meta_check ()); where they are is
 * checked here: in the region, without wrapping around its end, after
 * the previous frame's. */
GpuShareLaneResult gpushare_lane_pop (GpuShareLane * lane,
    GpuShareLaneEntry * e, GpuShareFrameMetas ** metas);
/* The doorbell, for the reader: read the bell first, then look for work
 * (the lane, anything else that rings it), then sleep with the value
 * read: a ring after the read ends the sleep at once.  timeout_us < 0
 * waits without a limit.  Returns FALSE on timeout. */
guint32 gpushare_lane_bell (GpuShareLane * lane);
gboolean gpushare_lane_sleep (GpuShareLane * lane, guint32 bell,
    gint64 timeout_us);
/* wakes the reader, from any thread of either side */
void gpushare_lane_ring (GpuShareLane * lane);

/* Heads-up (docs/protocol.md, "Heads-up"; since minor 8).  The producer,
 * as it begins to write a frame that takes it a while (a copy on the
 * GPU), says that the next entry is on its way, and rings the bell if the
 * reader sleeps: the reader's wake-up then runs beside the write. */
void gpushare_lane_announce (GpuShareLane * lane);

/* the reader asked for heads-up: spin_max_us is the longest it spins for
 * one announced entry (0: it never spins, and sleeps as before); what
 * misses made it leave out starts afresh */
void gpushare_lane_set_heads_up (GpuShareLane * lane, gint64 spin_max_us);

/* a miss makes the reader skip up to this many entries before it spins
 * again */
#define GPUSHARE_LANE_SPIN_MAX_SKIP 64

typedef enum
{
  GPUSHARE_LANE_SPIN_NONE = 0,  /* nothing announced, or not now */
  GPUSHARE_LANE_SPIN_HIT,       /* the entry came */
  GPUSHARE_LANE_SPIN_RUNG,      /* the bell rang: look at everything */
  GPUSHARE_LANE_SPIN_MISSED,    /* it did not come in time */
} GpuShareLaneSpin;

/* The reader, with nothing to read (after gpushare_lane_bell ()): if the
 * producer announced the next entry, polls for it instead of sleeping,
 * for what is left of spin_max_us for this entry, and says how it ended
 * and for how long it spun.  The announced word is a peer's: any value but
 * the next entry's number is no announcement, and a miss (or an entry
 * that came only after half of spin_max_us) costs the spins of the next
 * entries, the one waited for included (1, 2, 4 ..
 * GPUSHARE_LANE_SPIN_MAX_SKIP in a row). */
GpuShareLaneSpin gpushare_lane_spin (GpuShareLane * lane, guint32 bell,
    gint64 * spun_us);

/* The reader, with nothing to read (after gpushare_lane_bell ()), awake
 * before the producer's next entry is due (wake-ahead): polls for it until
 * the monotonic time until_us, whatever was announced, and says how it
 * ended (HIT, RUNG, MISSED; NONE when until_us has passed) and for how
 * long it polled.  Leaves heads-up's budget and backoff alone. */
GpuShareLaneSpin gpushare_lane_poll (GpuShareLane * lane, guint32 bell,
    gint64 until_us, gint64 * polled_us);

/* The way back: the consumer writes its releases into the lane (any
 * thread, serialised by the caller), the producer reads them from its
 * streaming or control thread, under its lock.  push returns FULL when the
 * producer left every one unread (the caller sends a RELEASE instead), and
 * says in *kick whether the producer waits for a slot and must be woken
 * (a PING on the socket: docs/protocol.md, "Frame lane"). */
GpuShareLaneResult gpushare_lane_release_push (GpuShareLane * lane,
    const GpuShareRelease * r, gboolean * kick);
/* the next release, its index checked; EMPTY when none */
GpuShareLaneResult gpushare_lane_release_pop (GpuShareLane * lane,
    GpuShareRelease * r);
/* the producer says it waits for a slot (TRUE) or no longer does; after
 * TRUE it reads the releases again before it sleeps */
void gpushare_lane_release_waiting (GpuShareLane * lane, gboolean waiting);

/* Either side: when it wrote the newest of its items (entries, or
 * releases) that the peer is known to have read, as last seen at a push
 * (0: none yet).  The peer heard from us then or later: a peer of minor 8
 * or later counts what it reads from the lane as a sign of life
 * (docs/protocol.md, "Heartbeat"). */
gint64 gpushare_lane_heard_us (GpuShareLane * lane);

void gpushare_lane_free (GpuShareLane * lane);

G_END_DECLS

#endif /* __GPUSHARE_LANE_H__ */
