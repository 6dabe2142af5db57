/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The slot ring as pure state: no sockets, no memory, no locks (callers
 * hold theirs).  The producer owns a GpuShareRing; each consumer keeps a
 * GpuShareSlotView that checks what the producer tells it.
 *
 * Producer slot states:
 *
 *   FREE --acquire--> WRITING --ready--> READY --publish(k>0)--> HELD(k)
 *     ^                  |                 |                        |
 *     +------abort-------+                 +--publish(k=0)--+       |
 *     +-----------------------------------------------------+       |
 *     +----------- release by the last of its k holders ------------+
 *
 *   A holder that is dropped without giving its slots back properly (its
 *   reads cannot be confirmed done: a GPU consumer that vanished, a lease
 *   that expired) taints them: such a slot becomes QUARANTINED instead of
 *   FREE once its last holder is gone, and is never handed out again in
 *   this epoch.  The producer replaces the whole ring (a new epoch) to get
 *   its slots back.
 *
 * Every acquire bumps the slot's generation, so a release or a frame that
 * names an older generation is recognised as stale.  The epoch names one
 * allocation of the ring: a new allocation (caps change that needs larger
 * slots) is a new epoch and everything of the old one is stale.
 *
 * Holders are consumer indices 0..63 (a bit each).
 */

#ifndef __GPUSHARE_RING_H__
#define __GPUSHARE_RING_H__

#include <glib.h>
#include "gpushareproto.h"

G_BEGIN_DECLS

#define GPUSHARE_MAX_HOLDERS 64

/* Leaky shares.  Each consumer of a leaky producer may hold its share of
 * the ring, (n_slots - 1) / consumers, at least 1: one slot always stays
 * with the producer, so that it never waits.  A ring of auto size grows
 * (a new epoch) so that the share is at least GPUSHARE_RING_MIN_SHARE:
 * a sink keeps the last buffer it showed (1), the next frame arrives
 * while it does (2), and one more lets a queue or a slow render overlap
 * without copies (3).  See docs/design.md, "Shares of a leaky ring". */
#define GPUSHARE_RING_MIN_SHARE 3
/* A consumer's first frames come while its process starts every other
 * stream it reads: for this long after its first frame, a leaky producer
 * lends it free slots past its share (gpushare_ring_leaky_spare ())
 * rather than skip it */
#define GPUSHARE_RING_START_GRACE_MS 2000
#define GPUSHARE_RING_DEFAULT_SLOTS 8

typedef enum
{
  GPUSHARE_SLOT_FREE = 0,
  GPUSHARE_SLOT_WRITING,
  GPUSHARE_SLOT_READY,
  GPUSHARE_SLOT_HELD,
  GPUSHARE_SLOT_QUARANTINED,
} GpuShareSlotState;

typedef enum
{
  GPUSHARE_RING_OK = 0,
  GPUSHARE_RING_NO_SLOT,        /* every slot is in use */
  GPUSHARE_RING_BAD_SLOT,       /* index out of range */
  GPUSHARE_RING_BAD_STATE,      /* transition not legal from this state */
  GPUSHARE_RING_STALE_EPOCH,
  GPUSHARE_RING_STALE_GENERATION,
  GPUSHARE_RING_NOT_HELD,       /* releasing what this holder does not hold */
  GPUSHARE_RING_STALE_SEQUENCE,
} GpuShareRingResult;

typedef struct
{
  GpuShareSlotState state;
  guint32 generation;           /* 0 = never written */
  guint64 sequence;             /* of the frame in the slot */
  guint64 holders;              /* bit per consumer index */
  guint64 freed;                /* when it last came free (ring->clock) */
  gboolean tainted;             /* quarantined once its holders are gone */
  gint64 published_at;          /* when its frame went out (the caller's
                                 * clock, microseconds; 0 when not said) */
} GpuShareSlot;

typedef struct
{
  guint64 epoch;
  guint n_slots;
  guint64 clock;                /* counts slots coming free */
  GpuShareSlot slots[GPUSHARE_MAX_SLOTS];
} GpuShareRing;

void gpushare_ring_init (GpuShareRing * ring, guint n_slots, guint64 epoch);
GpuShareRingResult gpushare_ring_acquire (GpuShareRing * ring, guint * slot);
GpuShareRingResult gpushare_ring_abort (GpuShareRing * ring, guint slot);
GpuShareRingResult gpushare_ring_ready (GpuShareRing * ring, guint slot,
    guint64 sequence);
GpuShareRingResult gpushare_ring_publish (GpuShareRing * ring, guint slot,
    guint64 holders);
/* publish, and remember when (now_us, any monotonic clock in microseconds)
 * for gpushare_ring_expired_holders (); plain publish remembers 0 */
GpuShareRingResult gpushare_ring_publish_at (GpuShareRing * ring, guint slot,
    guint64 holders, gint64 now_us);
GpuShareRingResult gpushare_ring_release (GpuShareRing * ring, guint64 epoch,
    guint slot, guint32 generation, guint holder);
guint gpushare_ring_release_holder (GpuShareRing * ring, guint holder);
/* gives back only the holder's slots whose frames have a sequence after
 * sequence: a consumer that left never read those */
guint gpushare_ring_release_holder_after (GpuShareRing * ring, guint holder,
    guint64 sequence);
/* like release_holder, but taints every slot the holder held */
guint gpushare_ring_quarantine_holder (GpuShareRing * ring, guint holder);
/* slots tainted in this epoch, quarantined already or still held */
guint gpushare_ring_n_tainted (const GpuShareRing * ring);
guint gpushare_ring_n_free (const GpuShareRing * ring);
guint gpushare_ring_n_held_by (const GpuShareRing * ring, guint holder);
/* Leases.  The holders (a bit each) that hold a frame published more than
 * limit_us before now_us which is not the newest frame they hold: keeping
 * the newest one on display holds nobody up, since no newer frame comes
 * while the producer waits.  held_seq[holder] and held_us[holder] (arrays
 * of GPUSHARE_MAX_HOLDERS, either may be NULL) get each such holder's
 * longest held frame and for how long; 0 for every other holder. */
guint64 gpushare_ring_expired_holders (const GpuShareRing * ring,
    gint64 now_us, gint64 limit_us, guint64 * held_seq, gint64 * held_us);
/* the share of each of n_consumers consumers in a ring of n_slots */
guint gpushare_ring_share (guint n_slots, guint n_consumers);
/* The size of an auto-sized ring of n_slots for n_consumers: n_slots while
 * that gives each a share of GPUSHARE_RING_MIN_SHARE, else twice n_slots,
 * or more where that is not enough, up to GPUSHARE_MAX_SLOTS.  Doubling:
 * every consumer maps a ring that grew again (and a GPU consumer misses a
 * few frames meanwhile), so consumers that join one by one cost a few
 * replacements, not one each. */
guint gpushare_ring_auto_slots (guint n_slots, guint n_consumers);
/* Leaky: does holder get the next frame?  When it holds fewer than share
 * slots.  A consumer that knows its share (may_exceed: protocol minor 6)
 * copies each frame past it and gives the slot back at once, and only new
 * frames make its downstream let go of older ones (a sink's last buffer,
 * an appsink's newest): such a consumer that holds more than its share
 * because its share shrank as consumers joined still gets the frame that
 * tells it (told_share, the share its last frame said, is larger), and
 * then each next frame while it holds none of those sent since it went
 * over (over_since, the sequence of the first; 0: not over).  One that
 * keeps those too does not take frames now: it is skipped. */
gboolean gpushare_ring_leaky_admits (const GpuShareRing * ring, guint holder,
    guint share, guint told_share, guint64 over_since, gboolean may_exceed);
/* Leaky, a consumer just started: the slots the ring can lend holder
 * beyond its share now without taking any from the others (the holders in
 * others) or from the producer: the free slots, less one for the
 * producer's next frame and, for each other holder, the part of share it
 * does not hold yet. */
guint gpushare_ring_leaky_spare (const GpuShareRing * ring, guint holder,
    guint64 others, guint share);
/* does any consumer hold a slot (that is, will one come back by itself) */
gboolean gpushare_ring_any_held (const GpuShareRing * ring);
/* is slot being written, still as acquired at that generation: not
 * aborted, published or handed out again since */
gboolean gpushare_ring_is_writing (const GpuShareRing * ring, guint slot,
    guint32 generation);
/* the slot's generation (a FRAME names it), 0 for a slot out of range */
guint32 gpushare_ring_generation (const GpuShareRing * ring, guint slot);
const gchar *gpushare_ring_result_to_string (GpuShareRingResult res);
const gchar *gpushare_slot_state_to_string (GpuShareSlotState state);

/* Consumer side: what the producer may legally say next. */
typedef struct
{
  guint64 epoch;
  guint n_slots;
  gboolean have_sequence;
  guint64 last_sequence;
  guint32 generation[GPUSHARE_MAX_SLOTS];
  gboolean held[GPUSHARE_MAX_SLOTS];
} GpuShareSlotView;

void gpushare_slot_view_init (GpuShareSlotView * view, guint n_slots,
    guint64 epoch);
GpuShareRingResult gpushare_slot_view_frame (GpuShareSlotView * view,
    guint64 epoch, guint slot, guint32 generation, guint64 sequence);
GpuShareRingResult gpushare_slot_view_release (GpuShareSlotView * view,
    guint slot, guint32 generation);

G_END_DECLS

#endif /* __GPUSHARE_RING_H__ */
