/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The slot ring and the consumer's slot view are pure state,
 * so every legal and every illegal transition is tested here without a
 * plugin, a socket or a GPU.  An illegal call must answer the right result
 * and leave every byte of the state as it was.  Three randomized runs with
 * fixed seeds check the ring, the view, and the two together against
 * reference models written here.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <string.h>

#include "gpushare-check-util.h"
#include "gpusharering.h"

#define EPOCH G_GUINT64_CONSTANT (7)
#define BIT(h) (G_GUINT64_CONSTANT (1) << (h))
#define HALF_RANGE G_GUINT64_CONSTANT (0x80000000)

/* ---- helpers ---- */

#define assert_result(call, expected) G_STMT_START {                    \
  GpuShareRingResult _r = (call);                                       \
  GpuShareRingResult _e = (expected);                                   \
  fail_unless (_r == _e, "%s: got '%s', expected '%s'", #call,          \
      gpushare_ring_result_to_string (_r),                              \
      gpushare_ring_result_to_string (_e));                             \
} G_STMT_END

/* an illegal call answers @expected and changes nothing */
#define assert_ring_rejects(ring, call, expected) G_STMT_START {        \
  GpuShareRing _before;                                                 \
  memcpy (&_before, (ring), sizeof (_before));                          \
  assert_result (call, expected);                                       \
  fail_unless (memcmp (&_before, (ring), sizeof (_before)) == 0,        \
      "%s changed the ring", #call);                                    \
} G_STMT_END

#define assert_view_rejects(view, call, expected) G_STMT_START {        \
  GpuShareSlotView _before;                                             \
  memcpy (&_before, (view), sizeof (_before));                          \
  assert_result (call, expected);                                       \
  fail_unless (memcmp (&_before, (view), sizeof (_before)) == 0,        \
      "%s changed the view", #call);                                    \
} G_STMT_END

#define assert_slot(ring, idx, st, gen, hold) G_STMT_START {            \
  const GpuShareSlot *_s = &(ring)->slots[idx];                         \
  fail_unless (_s->state == (st), "slot %u is %s, expected %s",         \
      (guint) (idx), gpushare_slot_state_to_string (_s->state),         \
      gpushare_slot_state_to_string (st));                              \
  fail_unless_equals_uint64 (_s->generation, (guint32) (gen));          \
  fail_unless_equals_uint64_hex (_s->holders, (guint64) (hold));        \
} G_STMT_END

/* acquire a slot and take it to @state (HELD needs @holders != 0) */
static guint
make_slot (GpuShareRing * ring, GpuShareSlotState state, guint64 sequence,
    guint64 holders)
{
  guint idx = G_MAXUINT;

  assert_result (gpushare_ring_acquire (ring, &idx), GPUSHARE_RING_OK);
  switch (state) {
    case GPUSHARE_SLOT_FREE:
      assert_result (gpushare_ring_abort (ring, idx), GPUSHARE_RING_OK);
      /* colder than any slot never used: the next make_slot () takes the
       * next slot */
      ring->slots[idx].freed = 0;
      break;
    case GPUSHARE_SLOT_WRITING:
      break;
    case GPUSHARE_SLOT_READY:
      assert_result (gpushare_ring_ready (ring, idx, sequence),
          GPUSHARE_RING_OK);
      break;
    case GPUSHARE_SLOT_HELD:
      fail_unless (holders != 0);
      assert_result (gpushare_ring_ready (ring, idx, sequence),
          GPUSHARE_RING_OK);
      assert_result (gpushare_ring_publish (ring, idx, holders),
          GPUSHARE_RING_OK);
      break;
    case GPUSHARE_SLOT_QUARANTINED:
      assert_result (gpushare_ring_ready (ring, idx, sequence),
          GPUSHARE_RING_OK);
      assert_result (gpushare_ring_publish (ring, idx, BIT (0)),
          GPUSHARE_RING_OK);
      gpushare_ring_quarantine_holder (ring, 0);
      break;
  }
  fail_unless (ring->slots[idx].state == state);
  return idx;
}

/* no test may leak a file descriptor */
static guint fds_at_start;

static void
fd_setup (void)
{
  fds_at_start = count_fds ();
}

static void
fd_teardown (void)
{
  fail_unless_equals_int (count_fds (), fds_at_start);
}

/* ---- producer ring ---- */

GST_START_TEST (test_ring_init)
{
  static const guint sizes[] = { 1, 2, GPUSHARE_MAX_SLOTS };
  GpuShareRing ring;
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    memset (&ring, 0xa5, sizeof (ring));
    gpushare_ring_init (&ring, sizes[i], EPOCH);
    fail_unless_equals_uint64 (ring.epoch, EPOCH);
    fail_unless_equals_int (ring.n_slots, sizes[i]);
    for (j = 0; j < GPUSHARE_MAX_SLOTS; j++) {
      assert_slot (&ring, j, GPUSHARE_SLOT_FREE, 0, 0);
      fail_unless_equals_uint64 (ring.slots[j].sequence, 0);
    }
    fail_unless_equals_int (gpushare_ring_n_free (&ring), sizes[i]);
    for (j = 0; j <= GPUSHARE_MAX_HOLDERS; j++)
      fail_unless_equals_int (gpushare_ring_n_held_by (&ring, j), 0);
  }
}

GST_END_TEST;

GST_START_TEST (test_ring_init_invalid)
{
  GpuShareRing ring, before;
  GpuShareSlotView view, view_before;

  memset (&ring, 0xa5, sizeof (ring));
  memcpy (&before, &ring, sizeof (ring));
  ASSERT_CRITICAL (gpushare_ring_init (&ring, 0, EPOCH));
  ASSERT_CRITICAL (gpushare_ring_init (&ring, GPUSHARE_MAX_SLOTS + 1, EPOCH));
  fail_unless (memcmp (&ring, &before, sizeof (ring)) == 0);

  memset (&view, 0xa5, sizeof (view));
  memcpy (&view_before, &view, sizeof (view));
  ASSERT_CRITICAL (gpushare_slot_view_init (&view, 0, EPOCH));
  ASSERT_CRITICAL (gpushare_slot_view_init (&view, GPUSHARE_MAX_SLOTS + 1,
          EPOCH));
  fail_unless (memcmp (&view, &view_before, sizeof (view)) == 0);
}

GST_END_TEST;

GST_START_TEST (test_ring_acquire_bumps_generation)
{
  GpuShareRing ring;
  guint i, idx;

  gpushare_ring_init (&ring, 1, EPOCH);
  for (i = 1; i <= 5; i++) {
    idx = G_MAXUINT;
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    fail_unless_equals_int (idx, 0);
    assert_slot (&ring, 0, GPUSHARE_SLOT_WRITING, i, 0);
    fail_unless_equals_int (gpushare_ring_n_free (&ring), 0);
    /* every way back to FREE, then the next acquire bumps again */
    switch (i % 3) {
      case 0:
        assert_result (gpushare_ring_abort (&ring, 0), GPUSHARE_RING_OK);
        break;
      case 1:
        assert_result (gpushare_ring_ready (&ring, 0, i), GPUSHARE_RING_OK);
        assert_result (gpushare_ring_publish (&ring, 0, 0), GPUSHARE_RING_OK);
        break;
      case 2:
        assert_result (gpushare_ring_ready (&ring, 0, i), GPUSHARE_RING_OK);
        assert_result (gpushare_ring_publish (&ring, 0, BIT (3)),
            GPUSHARE_RING_OK);
        assert_result (gpushare_ring_release (&ring, EPOCH, 0, i, 3),
            GPUSHARE_RING_OK);
        break;
    }
    assert_slot (&ring, 0, GPUSHARE_SLOT_FREE, i, 0);
  }
}

GST_END_TEST;

GST_START_TEST (test_ring_generation_wrap)
{
  GpuShareRing ring;
  guint idx;

  gpushare_ring_init (&ring, 1, EPOCH);
  ring.slots[0].generation = G_MAXUINT32 - 1;

  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  assert_slot (&ring, 0, GPUSHARE_SLOT_WRITING, G_MAXUINT32, 0);
  assert_result (gpushare_ring_abort (&ring, 0), GPUSHARE_RING_OK);

  /* 0 means "never written" and is skipped */
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  assert_slot (&ring, 0, GPUSHARE_SLOT_WRITING, 1, 0);
  assert_result (gpushare_ring_abort (&ring, 0), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  assert_slot (&ring, 0, GPUSHARE_SLOT_WRITING, 2, 0);
  assert_result (gpushare_ring_abort (&ring, 0), GPUSHARE_RING_OK);

  /* straight from G_MAXUINT32 */
  ring.slots[0].generation = G_MAXUINT32;
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  assert_slot (&ring, 0, GPUSHARE_SLOT_WRITING, 1, 0);
  assert_result (gpushare_ring_ready (&ring, 0, 1), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_publish (&ring, 0, BIT (0)), GPUSHARE_RING_OK);

  /* a release of the generation before the wrap, or of 0, is stale */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, 0,
          G_MAXUINT32, 0), GPUSHARE_RING_STALE_GENERATION);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, 0, 0, 0),
      GPUSHARE_RING_STALE_GENERATION);
  assert_result (gpushare_ring_release (&ring, EPOCH, 0, 1, 0),
      GPUSHARE_RING_OK);
  assert_slot (&ring, 0, GPUSHARE_SLOT_FREE, 1, 0);
}

GST_END_TEST;

GST_START_TEST (test_ring_abort)
{
  GpuShareRing ring;
  guint idx;

  gpushare_ring_init (&ring, 2, EPOCH);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 1);
  assert_result (gpushare_ring_abort (&ring, idx), GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_FREE, 1, 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 2);
  /* a second abort of the same slot is illegal */
  assert_ring_rejects (&ring, gpushare_ring_abort (&ring, idx),
      GPUSHARE_RING_BAD_STATE);
}

GST_END_TEST;

GST_START_TEST (test_ring_ready)
{
  GpuShareRing ring;
  guint idx;

  gpushare_ring_init (&ring, 2, EPOCH);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_ready (&ring, idx, 42), GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_READY, 1, 0);
  fail_unless_equals_uint64 (ring.slots[idx].sequence, 42);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 1);
  assert_ring_rejects (&ring, gpushare_ring_ready (&ring, idx, 43),
      GPUSHARE_RING_BAD_STATE);

  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_ready (&ring, idx, G_MAXUINT64),
      GPUSHARE_RING_OK);
  fail_unless_equals_uint64 (ring.slots[idx].sequence, G_MAXUINT64);
}

GST_END_TEST;

GST_START_TEST (test_ring_publish)
{
  GpuShareRing ring;
  guint idx;

  gpushare_ring_init (&ring, 3, EPOCH);

  idx = make_slot (&ring, GPUSHARE_SLOT_READY, 1, 0);
  assert_result (gpushare_ring_publish (&ring, idx, BIT (0) | BIT (1)
          | BIT (3)), GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_HELD, 1, BIT (0) | BIT (1) | BIT (3));
  fail_unless_equals_uint64 (ring.slots[idx].sequence, 1);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 0), 1);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 1), 1);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 2), 0);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 3), 1);
  assert_ring_rejects (&ring, gpushare_ring_publish (&ring, idx, BIT (2)),
      GPUSHARE_RING_BAD_STATE);

  /* every consumer */
  idx = make_slot (&ring, GPUSHARE_SLOT_READY, 2, 0);
  assert_result (gpushare_ring_publish (&ring, idx, G_MAXUINT64),
      GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_HELD, 1, G_MAXUINT64);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 63), 1);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 0), 2);

  /* nobody to send it to: straight back to FREE */
  idx = make_slot (&ring, GPUSHARE_SLOT_READY, 3, 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 0);
  assert_result (gpushare_ring_publish (&ring, idx, 0), GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_FREE, 1, 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 1);
}

GST_END_TEST;

GST_START_TEST (test_ring_release_each_holder)
{
  GpuShareRing ring;
  guint idx;
  guint32 gen;

  gpushare_ring_init (&ring, 2, EPOCH);
  idx = make_slot (&ring, GPUSHARE_SLOT_HELD, 1, BIT (0) | BIT (5) | BIT (63));
  gen = ring.slots[idx].generation;

  assert_result (gpushare_ring_release (&ring, EPOCH, idx, gen, 5),
      GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_HELD, gen, BIT (0) | BIT (63));
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 5), 0);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, idx, gen,
          5), GPUSHARE_RING_NOT_HELD);

  assert_result (gpushare_ring_release (&ring, EPOCH, idx, gen, 63),
      GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_HELD, gen, BIT (0));
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 1);

  /* only the last holder frees the slot */
  assert_result (gpushare_ring_release (&ring, EPOCH, idx, gen, 0),
      GPUSHARE_RING_OK);
  assert_slot (&ring, idx, GPUSHARE_SLOT_FREE, gen, 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 2);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, idx, gen,
          0), GPUSHARE_RING_NOT_HELD);
}

GST_END_TEST;

GST_START_TEST (test_ring_release_illegal)
{
  GpuShareRing ring;
  guint free_idx, writing, ready, held;
  guint32 gen;

  gpushare_ring_init (&ring, 4, EPOCH);
  free_idx = make_slot (&ring, GPUSHARE_SLOT_FREE, 0, 0);
  writing = make_slot (&ring, GPUSHARE_SLOT_WRITING, 0, 0);
  ready = make_slot (&ring, GPUSHARE_SLOT_READY, 1, 0);
  held = make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (1) | BIT (2));
  gen = ring.slots[held].generation;
  fail_unless_equals_int (gen, 1);

  /* stale epoch, whatever else is right */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH - 1, held,
          gen, 1), GPUSHARE_RING_STALE_EPOCH);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH + 1, held,
          gen, 1), GPUSHARE_RING_STALE_EPOCH);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, 0, held, gen, 1),
      GPUSHARE_RING_STALE_EPOCH);

  /* stale (or impossible) generation */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held,
          gen - 1, 1), GPUSHARE_RING_STALE_GENERATION);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held,
          gen + 1, 1), GPUSHARE_RING_STALE_GENERATION);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held,
          G_MAXUINT32, 1), GPUSHARE_RING_STALE_GENERATION);

  /* not a holder of this slot */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held, gen,
          0), GPUSHARE_RING_NOT_HELD);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held, gen,
          63), GPUSHARE_RING_NOT_HELD);

  /* a slot that is not HELD, with its current generation */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, free_idx,
          ring.slots[free_idx].generation, 1), GPUSHARE_RING_NOT_HELD);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, writing,
          ring.slots[writing].generation, 1), GPUSHARE_RING_NOT_HELD);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, ready,
          ring.slots[ready].generation, 1), GPUSHARE_RING_NOT_HELD);

  /* out of range slot: also one the array has but the ring does not use */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, 4, gen, 1),
      GPUSHARE_RING_BAD_SLOT);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH,
          GPUSHARE_MAX_SLOTS, gen, 1), GPUSHARE_RING_BAD_SLOT);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, G_MAXUINT,
          gen, 1), GPUSHARE_RING_BAD_SLOT);

  /* holder index past the mask (a shift by >= 64 would be undefined) */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held, gen,
          GPUSHARE_MAX_HOLDERS), GPUSHARE_RING_BAD_SLOT);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held, gen,
          G_MAXUINT), GPUSHARE_RING_BAD_SLOT);

  /* twice */
  assert_result (gpushare_ring_release (&ring, EPOCH, held, gen, 1),
      GPUSHARE_RING_OK);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, held, gen,
          1), GPUSHARE_RING_NOT_HELD);
  assert_slot (&ring, held, GPUSHARE_SLOT_HELD, gen, BIT (2));
}

GST_END_TEST;

GST_START_TEST (test_ring_release_after_reuse)
{
  GpuShareRing ring;
  guint idx;

  gpushare_ring_init (&ring, 1, EPOCH);
  idx = make_slot (&ring, GPUSHARE_SLOT_HELD, 1, BIT (0) | BIT (1));
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 0), 1);
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 1), 1);
  idx = make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (0));
  fail_unless_equals_int (ring.slots[idx].generation, 2);

  /* a late release of generation 1 must not free generation 2 */
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, idx, 1, 0),
      GPUSHARE_RING_STALE_GENERATION);
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, idx, 1, 1),
      GPUSHARE_RING_STALE_GENERATION);

  /* nor may a release from before a new allocation of the ring */
  gpushare_ring_init (&ring, 1, EPOCH + 1);
  idx = make_slot (&ring, GPUSHARE_SLOT_HELD, 1, BIT (0));
  assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, idx, 1, 0),
      GPUSHARE_RING_STALE_EPOCH);
  assert_result (gpushare_ring_release (&ring, EPOCH + 1, idx, 1, 0),
      GPUSHARE_RING_OK);
}

GST_END_TEST;

/* Every operation from every state, on a one-slot ring (so that acquire
 * reaches the slot too). */
typedef enum
{
  OP_ACQUIRE,
  OP_ABORT,
  OP_READY,
  OP_PUBLISH,
  OP_PUBLISH_NONE,
  OP_RELEASE,
  N_OPS
} RingOp;

static const gchar *const op_names[N_OPS] = {
  "acquire", "abort", "ready", "publish", "publish (nobody)", "release"
};

typedef struct
{
  GpuShareRingResult res;
  GpuShareSlotState to;         /* when res is OK */
} Transition;

#define OK_TO(s) { GPUSHARE_RING_OK, GPUSHARE_SLOT_ ## s }
#define REJECT(r) { GPUSHARE_RING_ ## r, GPUSHARE_SLOT_FREE }

static const Transition transitions[4][N_OPS] = {
  /* FREE */
  {OK_TO (WRITING), REJECT (BAD_STATE), REJECT (BAD_STATE),
      REJECT (BAD_STATE), REJECT (BAD_STATE), REJECT (NOT_HELD)},
  /* WRITING */
  {REJECT (NO_SLOT), OK_TO (FREE), OK_TO (READY),
      REJECT (BAD_STATE), REJECT (BAD_STATE), REJECT (NOT_HELD)},
  /* READY */
  {REJECT (NO_SLOT), REJECT (BAD_STATE), REJECT (BAD_STATE),
      OK_TO (HELD), OK_TO (FREE), REJECT (NOT_HELD)},
  /* HELD by holder 4 alone */
  {REJECT (NO_SLOT), REJECT (BAD_STATE), REJECT (BAD_STATE),
      REJECT (BAD_STATE), REJECT (BAD_STATE), OK_TO (FREE)},
};

static GpuShareRingResult
apply_op (GpuShareRing * ring, RingOp op)
{
  guint idx;

  switch (op) {
    case OP_ACQUIRE:
      return gpushare_ring_acquire (ring, &idx);
    case OP_ABORT:
      return gpushare_ring_abort (ring, 0);
    case OP_READY:
      return gpushare_ring_ready (ring, 0, 99);
    case OP_PUBLISH:
      return gpushare_ring_publish (ring, 0, BIT (4));
    case OP_PUBLISH_NONE:
      return gpushare_ring_publish (ring, 0, 0);
    case OP_RELEASE:
      return gpushare_ring_release (ring, EPOCH, 0,
          ring->slots[0].generation, 4);
    case N_OPS:
      break;
  }
  g_assert_not_reached ();
  return GPUSHARE_RING_OK;
}

GST_START_TEST (test_ring_transition_table)
{
  GpuShareSlotState from;
  RingOp op;

  for (from = GPUSHARE_SLOT_FREE; from <= GPUSHARE_SLOT_HELD; from++) {
    for (op = 0; op < N_OPS; op++) {
      const Transition *t = &transitions[from][op];
      GpuShareRing ring, before;
      GpuShareRingResult res;

      gpushare_ring_init (&ring, 1, EPOCH);
      make_slot (&ring, from, 5, BIT (4));
      memcpy (&before, &ring, sizeof (ring));

      res = apply_op (&ring, op);
      fail_unless (res == t->res, "%s from %s: got '%s', expected '%s'",
          op_names[op], gpushare_slot_state_to_string (from),
          gpushare_ring_result_to_string (res),
          gpushare_ring_result_to_string (t->res));
      if (res != GPUSHARE_RING_OK) {
        fail_unless (memcmp (&before, &ring, sizeof (ring)) == 0,
            "illegal %s from %s changed the ring", op_names[op],
            gpushare_slot_state_to_string (from));
        continue;
      }
      fail_unless (ring.slots[0].state == t->to, "%s from %s: now %s",
          op_names[op], gpushare_slot_state_to_string (from),
          gpushare_slot_state_to_string (ring.slots[0].state));
      fail_unless_equals_int (ring.slots[0].generation,
          op == OP_ACQUIRE ? before.slots[0].generation + 1 :
          before.slots[0].generation);
      if (op == OP_READY)
        fail_unless_equals_uint64 (ring.slots[0].sequence, 99);
      fail_unless_equals_uint64 (ring.slots[0].holders,
          t->to == GPUSHARE_SLOT_HELD ? BIT (4) : 0);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_ring_bad_slot)
{
  static const guint bad[] = { 3, 4, GPUSHARE_MAX_SLOTS - 1,
    GPUSHARE_MAX_SLOTS, G_MAXUINT
  };
  GpuShareRing ring;
  guint i, j;

  gpushare_ring_init (&ring, 3, EPOCH);
  make_slot (&ring, GPUSHARE_SLOT_WRITING, 0, 0);
  /* slots past n_slots that would allow the transition if they counted:
   * the range check must come first */
  for (j = 3; j < GPUSHARE_MAX_SLOTS; j++)
    ring.slots[j].state = (j % 2) ? GPUSHARE_SLOT_WRITING : GPUSHARE_SLOT_READY;

  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    assert_ring_rejects (&ring, gpushare_ring_abort (&ring, bad[i]),
        GPUSHARE_RING_BAD_SLOT);
    assert_ring_rejects (&ring, gpushare_ring_ready (&ring, bad[i], 1),
        GPUSHARE_RING_BAD_SLOT);
    assert_ring_rejects (&ring, gpushare_ring_publish (&ring, bad[i], 1),
        GPUSHARE_RING_BAD_SLOT);
    assert_ring_rejects (&ring, gpushare_ring_publish (&ring, bad[i], 0),
        GPUSHARE_RING_BAD_SLOT);
  }
}

GST_END_TEST;

GST_START_TEST (test_ring_no_slot)
{
  static const guint sizes[] = { 1, 3, GPUSHARE_MAX_SLOTS };
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    GpuShareRing ring;
    guint idx = 0;

    gpushare_ring_init (&ring, sizes[i], EPOCH);
    for (j = 0; j < sizes[i]; j++)
      make_slot (&ring, GPUSHARE_SLOT_WRITING + j % 3, j, BIT (j % 64));
    fail_unless_equals_int (gpushare_ring_n_free (&ring), 0);
    assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
        GPUSHARE_RING_NO_SLOT);
    /* slots past n_slots are FREE in the array but not part of the ring */
    if (sizes[i] < GPUSHARE_MAX_SLOTS)
      fail_unless (ring.slots[sizes[i]].state == GPUSHARE_SLOT_FREE);

    /* free the last one; it is the only one acquire may take */
    j = sizes[i] - 1;
    switch (ring.slots[j].state) {
      case GPUSHARE_SLOT_WRITING:
        assert_result (gpushare_ring_abort (&ring, j), GPUSHARE_RING_OK);
        break;
      case GPUSHARE_SLOT_READY:
        assert_result (gpushare_ring_publish (&ring, j, 0), GPUSHARE_RING_OK);
        break;
      default:
        assert_result (gpushare_ring_release (&ring, EPOCH, j,
                ring.slots[j].generation, j % 64), GPUSHARE_RING_OK);
        break;
    }
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    fail_unless_equals_int (idx, j);
    fail_unless_equals_int (ring.slots[j].generation, 2);
    assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
        GPUSHARE_RING_NO_SLOT);
  }
}

GST_END_TEST;

GST_START_TEST (test_ring_most_recently_freed)
{
  GpuShareRing ring;
  guint i, idx;

  gpushare_ring_init (&ring, 4, EPOCH);
  /* a fresh ring hands out its slots in order */
  for (i = 0; i < 3; i++) {
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    fail_unless_equals_int (idx, i);
  }
  /* slot 0 comes free: it was freed after 3 (never used), so it comes
   * first, then 3 */
  assert_result (gpushare_ring_abort (&ring, 0), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (idx, 0);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (idx, 3);
  assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
      GPUSHARE_RING_NO_SLOT);

  /* 2 then 1 come free: 1 came free last, so 1 first */
  assert_result (gpushare_ring_abort (&ring, 2), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_abort (&ring, 1), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (idx, 1);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (idx, 2);

  /* every way of coming free counts: release by the last holder, a
   * holder dropped, a publish to nobody */
  gpushare_ring_init (&ring, 3, EPOCH);
  for (i = 0; i < 3; i++) {
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    assert_result (gpushare_ring_ready (&ring, idx, i), GPUSHARE_RING_OK);
    assert_result (gpushare_ring_publish (&ring, idx, i == 2 ? 0 : 0x3),
        GPUSHARE_RING_OK);
  }
  /* slot 2 is free already; holder 0 lets go of 1, then 0 and 1 come free
   * when holder 1 goes, 0 first (slot order) */
  assert_result (gpushare_ring_release (&ring, EPOCH, 1,
          ring.slots[1].generation, 0), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_release (&ring, EPOCH, 0,
          ring.slots[0].generation, 0), GPUSHARE_RING_OK);
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 1), 2);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (idx, 1);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (idx, 0);
  assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
  fail_unless_equals_int (idx, 2);

  /* a ring whose frames always come straight back keeps one hot slot,
   * with a new generation each time */
  gpushare_ring_init (&ring, 3, EPOCH);
  for (i = 0; i < 9; i++) {
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    fail_unless_equals_int (idx, 0);
    fail_unless_equals_int (ring.slots[idx].generation, i + 1);
    assert_result (gpushare_ring_ready (&ring, idx, i), GPUSHARE_RING_OK);
    assert_result (gpushare_ring_publish (&ring, idx, 0), GPUSHARE_RING_OK);
  }
}

GST_END_TEST;

GST_START_TEST (test_ring_quarantine_holder)
{
  GpuShareRing ring;
  guint slot, i;

  gpushare_ring_init (&ring, 4, EPOCH);
  make_slot (&ring, GPUSHARE_SLOT_HELD, 0, BIT (1));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 1, BIT (1) | BIT (2));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (2));
  fail_unless_equals_int (gpushare_ring_n_tainted (&ring), 0);

  /* holder 1 is dropped unconfirmed: slot 0 goes into quarantine at once,
   * slot 1 once holder 2 is done with it; slot 2 is untouched */
  fail_unless_equals_int (gpushare_ring_quarantine_holder (&ring, 1), 2);
  fail_unless_equals_int (ring.slots[0].state, GPUSHARE_SLOT_QUARANTINED);
  fail_unless_equals_int (ring.slots[1].state, GPUSHARE_SLOT_HELD);
  fail_unless_equals_int (ring.slots[2].state, GPUSHARE_SLOT_HELD);
  fail_unless_equals_int (gpushare_ring_n_tainted (&ring), 2);
  fail_unless_equals_int (gpushare_ring_release (&ring, EPOCH, 1,
          ring.slots[1].generation, 2), GPUSHARE_RING_OK);
  fail_unless_equals_int (ring.slots[1].state, GPUSHARE_SLOT_QUARANTINED);
  fail_unless_equals_int (gpushare_ring_release (&ring, EPOCH, 2,
          ring.slots[2].generation, 2), GPUSHARE_RING_OK);
  fail_unless_equals_int (ring.slots[2].state, GPUSHARE_SLOT_FREE);
  fail_unless_equals_string (gpushare_slot_state_to_string
      (GPUSHARE_SLOT_QUARANTINED), "quarantined");

  /* a quarantined slot is never handed out again, nor released */
  for (i = 0; i < 2; i++) {
    fail_unless_equals_int (gpushare_ring_acquire (&ring, &slot),
        GPUSHARE_RING_OK);
    fail_unless (slot == 2 || slot == 3);
    fail_unless_equals_int (gpushare_ring_ready (&ring, slot, 10 + i),
        GPUSHARE_RING_OK);
    fail_unless_equals_int (gpushare_ring_publish (&ring, slot, BIT (3)),
        GPUSHARE_RING_OK);
  }
  fail_unless_equals_int (gpushare_ring_acquire (&ring, &slot),
      GPUSHARE_RING_NO_SLOT);
  fail_unless_equals_int (gpushare_ring_release (&ring, EPOCH, 0,
          ring.slots[0].generation, 1), GPUSHARE_RING_NOT_HELD);
  fail_unless_equals_int (gpushare_ring_abort (&ring, 0),
      GPUSHARE_RING_BAD_STATE);

  /* an ordinary release of the holder taints nothing */
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 3), 2);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 2);
  fail_unless_equals_int (gpushare_ring_n_tainted (&ring), 2);

  /* a new epoch starts clean */
  gpushare_ring_init (&ring, 4, EPOCH + 1);
  fail_unless_equals_int (gpushare_ring_n_tainted (&ring), 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 4);
}

GST_END_TEST;

/* A consumer that leaves while its buffers still read slots: its slots
 * whose frames came after the last one it received (on their way as it
 * left) go back, the rest it still reads are quarantined. */
GST_START_TEST (test_ring_release_holder_after)
{
  GpuShareRing ring;

  gpushare_ring_init (&ring, 4, EPOCH);
  make_slot (&ring, GPUSHARE_SLOT_HELD, 5, BIT (1));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 6, BIT (1) | BIT (2));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 7, BIT (1) | BIT (2));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 8, BIT (2));

  /* holder 1 received up to frame 6: 7 goes back (to holder 2) */
  fail_unless_equals_int (gpushare_ring_release_holder_after (&ring, 1, 6), 1);
  fail_unless_equals_int (ring.slots[2].holders, BIT (2));
  fail_unless_equals_int (ring.slots[0].holders, BIT (1));
  fail_unless_equals_int (ring.slots[1].holders, BIT (1) | BIT (2));
  fail_unless_equals_int (gpushare_ring_n_tainted (&ring), 0);
  /* what it still reads stays out of use */
  fail_unless_equals_int (gpushare_ring_quarantine_holder (&ring, 1), 2);
  fail_unless_equals_int (ring.slots[0].state, GPUSHARE_SLOT_QUARANTINED);
  fail_unless_equals_int (ring.slots[1].state, GPUSHARE_SLOT_HELD);
  fail_unless_equals_int (gpushare_ring_n_tainted (&ring), 2);

  /* nothing after: nothing changes; everything after: all go back */
  fail_unless_equals_int (gpushare_ring_release_holder_after (&ring, 2, 8), 0);
  fail_unless_equals_int (gpushare_ring_release_holder_after (&ring, 2, 0), 3);
  fail_unless_equals_int (ring.slots[1].state, GPUSHARE_SLOT_QUARANTINED);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 2);
  fail_unless_equals_int (gpushare_ring_release_holder_after (&ring,
          GPUSHARE_MAX_HOLDERS, 0), 0);
}

GST_END_TEST;

GST_START_TEST (test_ring_release_holder)
{
  GpuShareRing ring, before;
  guint i;

  gpushare_ring_init (&ring, 7, EPOCH);
  make_slot (&ring, GPUSHARE_SLOT_HELD, 0, BIT (1));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 1, BIT (1) | BIT (2));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (2));
  make_slot (&ring, GPUSHARE_SLOT_WRITING, 3, 0);
  make_slot (&ring, GPUSHARE_SLOT_READY, 4, 0);
  make_slot (&ring, GPUSHARE_SLOT_FREE, 5, 0);
  make_slot (&ring, GPUSHARE_SLOT_HELD, 6, BIT (1) | BIT (63));
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 1), 3);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 2), 2);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 63), 1);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 1);

  memcpy (&before, &ring, sizeof (ring));
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 1), 3);
  assert_slot (&ring, 0, GPUSHARE_SLOT_FREE, 1, 0);
  assert_slot (&ring, 1, GPUSHARE_SLOT_HELD, 1, BIT (2));
  assert_slot (&ring, 6, GPUSHARE_SLOT_HELD, 1, BIT (63));
  for (i = 2; i <= 5; i++)
    fail_unless (memcmp (&ring.slots[i], &before.slots[i],
            sizeof (GpuShareSlot)) == 0, "slot %u changed", i);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 1), 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 2);

  /* nothing left to release, or a holder that cannot exist */
  memcpy (&before, &ring, sizeof (ring));
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 1), 0);
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 5), 0);
  fail_unless_equals_int (gpushare_ring_release_holder (&ring,
          GPUSHARE_MAX_HOLDERS), 0);
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, G_MAXUINT), 0);
  fail_unless (memcmp (&before, &ring, sizeof (ring)) == 0);

  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 2), 2);
  assert_slot (&ring, 1, GPUSHARE_SLOT_FREE, 1, 0);
  assert_slot (&ring, 2, GPUSHARE_SLOT_FREE, 1, 0);
  fail_unless_equals_int (gpushare_ring_release_holder (&ring, 63), 1);
  assert_slot (&ring, 6, GPUSHARE_SLOT_FREE, 1, 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 5);
  assert_slot (&ring, 3, GPUSHARE_SLOT_WRITING, 1, 0);
  assert_slot (&ring, 4, GPUSHARE_SLOT_READY, 1, 0);
}

GST_END_TEST;

GST_START_TEST (test_ring_counts)
{
  GpuShareRing ring;
  guint idx;

  gpushare_ring_init (&ring, 4, EPOCH);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 4);
  idx = make_slot (&ring, GPUSHARE_SLOT_WRITING, 0, 0);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 3);
  assert_result (gpushare_ring_ready (&ring, idx, 1), GPUSHARE_RING_OK);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 3);
  /* WRITING and READY are held by nobody */
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 0), 0);
  assert_result (gpushare_ring_publish (&ring, idx, G_MAXUINT64),
      GPUSHARE_RING_OK);
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 3);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 0), 1);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 63), 1);
  /* out of range holders hold nothing, even with every bit set */
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring,
          GPUSHARE_MAX_HOLDERS), 0);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, G_MAXUINT), 0);

  make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 3, BIT (9));
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 1);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 0), 2);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 9), 2);
  fail_unless_equals_int (gpushare_ring_n_held_by (&ring, 10), 1);
}

GST_END_TEST;

GST_START_TEST (test_ring_size_one)
{
  GpuShareRing ring;
  guint i, idx;

  gpushare_ring_init (&ring, 1, EPOCH);
  for (i = 1; i <= 4; i++) {
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    fail_unless_equals_int (idx, 0);
    assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
        GPUSHARE_RING_NO_SLOT);
    assert_result (gpushare_ring_ready (&ring, 0, i), GPUSHARE_RING_OK);
    assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
        GPUSHARE_RING_NO_SLOT);
    assert_result (gpushare_ring_publish (&ring, 0, BIT (0) | BIT (1)),
        GPUSHARE_RING_OK);
    assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
        GPUSHARE_RING_NO_SLOT);
    assert_result (gpushare_ring_release (&ring, EPOCH, 0, i, 1),
        GPUSHARE_RING_OK);
    assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
        GPUSHARE_RING_NO_SLOT);
    assert_result (gpushare_ring_release (&ring, EPOCH, 0, i, 0),
        GPUSHARE_RING_OK);
    assert_slot (&ring, 0, GPUSHARE_SLOT_FREE, i, 0);
  }
}

GST_END_TEST;

GST_START_TEST (test_ring_size_max)
{
  GpuShareRing ring;
  guint i, h, idx;

  gpushare_ring_init (&ring, GPUSHARE_MAX_SLOTS, EPOCH);
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++) {
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    fail_unless_equals_int (idx, i);
    assert_result (gpushare_ring_ready (&ring, idx, i), GPUSHARE_RING_OK);
  }
  assert_ring_rejects (&ring, gpushare_ring_acquire (&ring, &idx),
      GPUSHARE_RING_NO_SLOT);

  /* slot i to holder i: every holder bit, every slot index */
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++)
    assert_result (gpushare_ring_publish (&ring, i, BIT (i)), GPUSHARE_RING_OK);
  for (h = 0; h < GPUSHARE_MAX_HOLDERS; h++)
    fail_unless_equals_int (gpushare_ring_n_held_by (&ring, h), 1);
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++) {
    assert_ring_rejects (&ring, gpushare_ring_release (&ring, EPOCH, i, 1,
            (i + 1) % GPUSHARE_MAX_HOLDERS), GPUSHARE_RING_NOT_HELD);
    assert_result (gpushare_ring_release (&ring, EPOCH, i, 1, i),
        GPUSHARE_RING_OK);
  }
  fail_unless_equals_int (gpushare_ring_n_free (&ring), GPUSHARE_MAX_SLOTS);

  /* the second lap takes the slot freed last first, and bumps every
   * generation */
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++) {
    assert_result (gpushare_ring_acquire (&ring, &idx), GPUSHARE_RING_OK);
    fail_unless_equals_int (idx, GPUSHARE_MAX_SLOTS - 1 - i);
    fail_unless_equals_int (ring.slots[idx].generation, 2);
    assert_result (gpushare_ring_ready (&ring, idx, 100 + i), GPUSHARE_RING_OK);
    assert_result (gpushare_ring_publish (&ring, idx, G_MAXUINT64),
        GPUSHARE_RING_OK);
  }
  for (h = 0; h < GPUSHARE_MAX_HOLDERS; h++) {
    fail_unless_equals_int (gpushare_ring_n_held_by (&ring, h),
        GPUSHARE_MAX_SLOTS);
    fail_unless_equals_int (gpushare_ring_n_free (&ring), 0);
    fail_unless_equals_int (gpushare_ring_release_holder (&ring, h),
        GPUSHARE_MAX_SLOTS);
  }
  fail_unless_equals_int (gpushare_ring_n_free (&ring), GPUSHARE_MAX_SLOTS);
}

GST_END_TEST;

GST_START_TEST (test_ring_strings)
{
  GpuShareRingResult r;
  GpuShareSlotState s;
  GHashTable *seen = g_hash_table_new (g_str_hash, g_str_equal);

  for (r = GPUSHARE_RING_OK; r <= GPUSHARE_RING_STALE_SEQUENCE; r++) {
    const gchar *str = gpushare_ring_result_to_string (r);

    fail_unless (str != NULL && strcmp (str, "unknown") != 0);
    fail_unless (g_hash_table_add (seen, (gpointer) str), "'%s' twice", str);
  }
  fail_unless_equals_string (gpushare_ring_result_to_string (
          (GpuShareRingResult) 1000), "unknown");

  g_hash_table_remove_all (seen);
  for (s = GPUSHARE_SLOT_FREE; s <= GPUSHARE_SLOT_HELD; s++) {
    const gchar *str = gpushare_slot_state_to_string (s);

    fail_unless (str != NULL && strcmp (str, "unknown") != 0);
    fail_unless (g_hash_table_add (seen, (gpointer) str), "'%s' twice", str);
  }
  fail_unless_equals_string (gpushare_slot_state_to_string (
          (GpuShareSlotState) 1000), "unknown");
  g_hash_table_unref (seen);
}

GST_END_TEST;

/* ---- publish times and the queries the producer makes ---- */

/* ready + publish_at of a fresh slot, with its time */
static guint
make_published (GpuShareRing * ring, guint64 sequence, guint64 holders,
    gint64 when)
{
  guint idx = G_MAXUINT;

  assert_result (gpushare_ring_acquire (ring, &idx), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_ready (ring, idx, sequence), GPUSHARE_RING_OK);
  assert_result (gpushare_ring_publish_at (ring, idx, holders, when),
      GPUSHARE_RING_OK);
  return idx;
}

/* expired_holders () with both arrays, first filled with garbage that
 * must not survive */
static guint64
expired (const GpuShareRing * ring, gint64 now, gint64 limit,
    guint64 * seq, gint64 * us)
{
  memset (seq, 0x5a, GPUSHARE_MAX_HOLDERS * sizeof (guint64));
  memset (us, 0x5a, GPUSHARE_MAX_HOLDERS * sizeof (gint64));
  return gpushare_ring_expired_holders (ring, now, limit, seq, us);
}

GST_START_TEST (test_ring_publish_at)
{
  GpuShareRing ring;
  guint idx;

  gpushare_ring_init (&ring, 4, EPOCH);
  idx = make_published (&ring, 1, BIT (0), 12345);
  assert_slot (&ring, idx, GPUSHARE_SLOT_HELD, 1, BIT (0));
  fail_unless_equals_int64 (ring.slots[idx].published_at, 12345);
  /* plain publish says no time: 0 */
  idx = make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (1));
  fail_unless_equals_int64 (ring.slots[idx].published_at, 0);
  /* nobody to hold it: free at once, like publish */
  idx = make_published (&ring, 3, 0, 777);
  assert_slot (&ring, idx, GPUSHARE_SLOT_FREE, 1, 0);
  /* an illegal publish_at changes nothing, its time included */
  idx = make_slot (&ring, GPUSHARE_SLOT_WRITING, 0, 0);
  assert_ring_rejects (&ring, gpushare_ring_publish_at (&ring, idx, BIT (0),
          999), GPUSHARE_RING_BAD_STATE);
  assert_ring_rejects (&ring, gpushare_ring_publish_at (&ring, 4, BIT (0),
          999), GPUSHARE_RING_BAD_SLOT);
  assert_ring_rejects (&ring, gpushare_ring_publish_at (&ring, 0, BIT (0),
          999), GPUSHARE_RING_BAD_STATE);
  /* a new ring forgets the times */
  gpushare_ring_init (&ring, 4, EPOCH + 1);
  for (idx = 0; idx < 4; idx++)
    fail_unless_equals_int64 (ring.slots[idx].published_at, 0);
}

GST_END_TEST;

GST_START_TEST (test_ring_expired_holders)
{
  GpuShareRing ring;
  guint64 seq[GPUSHARE_MAX_HOLDERS];
  gint64 us[GPUSHARE_MAX_HOLDERS];
  guint i, a, b;

  gpushare_ring_init (&ring, 8, EPOCH);
  /* nothing held: nobody expired, and every entry is 0 */
  fail_unless_equals_uint64 (expired (&ring, 1000000, 0, seq, us), 0);
  for (i = 0; i < GPUSHARE_MAX_HOLDERS; i++) {
    fail_unless_equals_uint64 (seq[i], 0);
    fail_unless_equals_int64 (us[i], 0);
  }

  /* holder 0 keeps frame 1 (at 1000) besides its newest, frame 2 */
  a = make_published (&ring, 1, BIT (0), 1000);
  make_published (&ring, 2, BIT (0), 2000);
  /* not past the limit: held exactly limit_us is still within it */
  fail_unless_equals_uint64 (expired (&ring, 1500, 500, seq, us), 0);
  fail_unless_equals_uint64 (expired (&ring, 1500, 1000, seq, us), 0);
  fail_unless_equals_uint64 (expired (&ring, 3000, 2000, seq, us), 0);
  /* past it */
  fail_unless_equals_uint64_hex (expired (&ring, 3001, 2000, seq, us), BIT (0));
  fail_unless_equals_uint64 (seq[0], 1);
  fail_unless_equals_int64 (us[0], 2001);
  for (i = 1; i < GPUSHARE_MAX_HOLDERS; i++) {
    fail_unless_equals_uint64 (seq[i], 0);
    fail_unless_equals_int64 (us[i], 0);
  }
  /* the newest frame alone never expires, however old */
  fail_unless_equals_uint64 (expired (&ring, G_MAXINT64 / 2, 0, seq, us),
      BIT (0));
  fail_unless_equals_uint64 (seq[0], 1);
  assert_result (gpushare_ring_release (&ring, EPOCH, a, 1, 0),
      GPUSHARE_RING_OK);
  fail_unless_equals_uint64 (expired (&ring, G_MAXINT64 / 2, 0, seq, us), 0);
  fail_unless_equals_uint64 (seq[0], 0);
  fail_unless_equals_int64 (us[0], 0);

  /* several old frames: the one held longest is named, whatever the slot
   * order */
  gpushare_ring_init (&ring, 8, EPOCH);
  make_published (&ring, 10, BIT (3), 500);
  make_published (&ring, 11, BIT (3), 100);
  make_published (&ring, 12, BIT (3), 300);
  make_published (&ring, 13, BIT (3), 900);
  fail_unless_equals_uint64_hex (expired (&ring, 1000, 50, seq, us), BIT (3));
  fail_unless_equals_uint64 (seq[3], 11);
  fail_unless_equals_int64 (us[3], 900);
  /* frames held no longer than the limit do not count */
  fail_unless_equals_uint64_hex (expired (&ring, 1000, 600, seq, us), BIT (3));
  fail_unless_equals_uint64 (seq[3], 11);
  fail_unless_equals_uint64 (expired (&ring, 1000, 900, seq, us), 0);
  /* a tie names the frame of the lower slot */
  gpushare_ring_init (&ring, 8, EPOCH);
  make_published (&ring, 21, BIT (1), 100);
  make_published (&ring, 20, BIT (1), 100);
  make_published (&ring, 22, BIT (1), 100);
  fail_unless_equals_uint64_hex (expired (&ring, 1000, 10, seq, us), BIT (1));
  fail_unless_equals_uint64 (seq[1], 21);
  fail_unless_equals_int64 (us[1], 900);

  /* a frame shared by two holders: only the one that has a newer frame
   * loses its lease; holder 63 is a holder like any other */
  gpushare_ring_init (&ring, 8, EPOCH);
  a = make_published (&ring, 1, BIT (0) | BIT (63) | BIT (5), 0);
  b = make_published (&ring, 2, BIT (63), 10);
  fail_unless_equals_uint64_hex (expired (&ring, 1000, 100, seq, us), BIT (63));
  fail_unless_equals_uint64 (seq[63], 1);
  fail_unless_equals_int64 (us[63], 1000);
  fail_unless_equals_uint64 (seq[0], 0);
  fail_unless_equals_uint64 (seq[5], 0);
  /* the arrays are optional */
  fail_unless_equals_uint64_hex (gpushare_ring_expired_holders (&ring, 1000,
          100, NULL, NULL), BIT (63));
  fail_unless_equals_uint64_hex (gpushare_ring_expired_holders (&ring, 1000,
          100, seq, NULL), BIT (63));
  fail_unless_equals_uint64 (seq[63], 1);
  fail_unless_equals_uint64_hex (gpushare_ring_expired_holders (&ring, 1000,
          100, NULL, us), BIT (63));
  fail_unless_equals_int64 (us[63], 1000);
  /* a slot tainted by a dropped holder is still held by the others */
  gpushare_ring_quarantine_holder (&ring, 5);
  fail_unless_equals_uint64_hex (expired (&ring, 1000, 100, seq, us), BIT (63));
  /* plain publish counts as published at 0 */
  make_slot (&ring, GPUSHARE_SLOT_HELD, 3, BIT (0));
  fail_unless_equals_uint64_hex (expired (&ring, 1000, 100, seq, us),
      BIT (0) | BIT (63));
  fail_unless_equals_uint64 (seq[0], 1);
  fail_unless_equals_int64 (us[0], 1000);
  /* slots not held never count, however old */
  assert_result (gpushare_ring_release (&ring, EPOCH, a, 1, 0),
      GPUSHARE_RING_OK);
  assert_result (gpushare_ring_release (&ring, EPOCH, a, 1, 63),
      GPUSHARE_RING_OK);
  assert_slot (&ring, a, GPUSHARE_SLOT_QUARANTINED, 1, 0);
  make_slot (&ring, GPUSHARE_SLOT_READY, 4, 0);
  make_slot (&ring, GPUSHARE_SLOT_WRITING, 0, 0);
  fail_unless_equals_uint64 (expired (&ring, 1000000, 0, seq, us), 0);
  assert_slot (&ring, b, GPUSHARE_SLOT_HELD, 1, BIT (63));
}

GST_END_TEST;

/* The lease rule said per holder, as the producer states it: of the frames
 * a holder holds, those published more than limit ago that are not its
 * newest; the longest held of them is named (the lower slot on a tie). */
static guint64
model_expired (const GpuShareRing * ring, gint64 now, gint64 limit,
    guint64 * seq, gint64 * us)
{
  guint64 mask = 0;
  guint h, i;

  for (h = 0; h < GPUSHARE_MAX_HOLDERS; h++) {
    guint64 newest = 0;
    gboolean any = FALSE;

    seq[h] = 0;
    us[h] = 0;
    for (i = 0; i < ring->n_slots; i++)
      if (ring->slots[i].state == GPUSHARE_SLOT_HELD
          && (ring->slots[i].holders & BIT (h)))
        newest = MAX (newest, ring->slots[i].sequence);
    for (i = 0; i < ring->n_slots; i++) {
      const GpuShareSlot *s = &ring->slots[i];
      gint64 held = now - s->published_at;

      if (s->state != GPUSHARE_SLOT_HELD || !(s->holders & BIT (h))
          || s->sequence == newest || held <= limit)
        continue;
      if (!any || held > us[h]) {
        seq[h] = s->sequence;
        us[h] = held;
      }
      any = TRUE;
    }
    if (any)
      mask |= BIT (h);
  }
  return mask;
}

GST_START_TEST (test_ring_expired_random)
{
  GRand *rand = g_rand_new_with_seed (0x1ea5e);
  guint64 seq[GPUSHARE_MAX_HOLDERS], want_seq[GPUSHARE_MAX_HOLDERS];
  gint64 us[GPUSHARE_MAX_HOLDERS], want_us[GPUSHARE_MAX_HOLDERS];
  guint round;

  for (round = 0; round < 2000; round++) {
    GpuShareRing ring;
    guint n_slots = g_rand_int_range (rand, 1, GPUSHARE_MAX_SLOTS + 1);
    guint64 sequence = 0;
    gint64 now = 0, limit;
    guint i;

    gpushare_ring_init (&ring, n_slots, EPOCH);
    for (i = 0; i < n_slots; i++) {
      guint idx;
      /* few holders, so that they share slots */
      guint64 holders = 0;
      guint k, n = g_rand_int_range (rand, 0, 4);

      for (k = 0; k < n; k++)
        holders |= BIT (g_rand_int_range (rand, 0, 2) ?
            g_rand_int_range (rand, 0, 3) : g_rand_int_range (rand, 0, 64));
      now += g_rand_int_range (rand, 0, 100);
      if (gpushare_ring_acquire (&ring, &idx) != GPUSHARE_RING_OK)
        break;
      if (g_rand_int_range (rand, 0, 8) == 0)
        continue;               /* left WRITING */
      /* sequences mostly rise, as the producer's do */
      sequence += g_rand_int_range (rand, 0, 3);
      gpushare_ring_ready (&ring, idx, sequence);
      gpushare_ring_publish_at (&ring, idx, holders, now);
    }
    now += g_rand_int_range (rand, 0, 1000);
    limit = g_rand_int_range (rand, 0, 2000);
    fail_unless_equals_uint64_hex (expired (&ring, now, limit, seq, us),
        model_expired (&ring, now, limit, want_seq, want_us));
    fail_unless (memcmp (seq, want_seq, sizeof (seq)) == 0, "round %u", round);
    fail_unless (memcmp (us, want_us, sizeof (us)) == 0, "round %u", round);
  }
  g_rand_free (rand);
}

GST_END_TEST;

GST_START_TEST (test_ring_any_held)
{
  GpuShareRing ring;
  guint a, b;

  gpushare_ring_init (&ring, 4, EPOCH);
  fail_if (gpushare_ring_any_held (&ring));
  /* slots the producer itself has do not come back by themselves */
  make_slot (&ring, GPUSHARE_SLOT_WRITING, 0, 0);
  make_slot (&ring, GPUSHARE_SLOT_READY, 1, 0);
  fail_if (gpushare_ring_any_held (&ring));
  a = make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (0) | BIT (1));
  fail_unless (gpushare_ring_any_held (&ring));
  assert_result (gpushare_ring_release (&ring, EPOCH, a, 1, 0),
      GPUSHARE_RING_OK);
  fail_unless (gpushare_ring_any_held (&ring));
  assert_result (gpushare_ring_release (&ring, EPOCH, a, 1, 1),
      GPUSHARE_RING_OK);
  fail_if (gpushare_ring_any_held (&ring));
  /* quarantined is not held: nobody gives it back */
  b = make_slot (&ring, GPUSHARE_SLOT_QUARANTINED, 3, 0);
  fail_unless (ring.slots[b].state == GPUSHARE_SLOT_QUARANTINED);
  fail_if (gpushare_ring_any_held (&ring));
}

GST_END_TEST;

GST_START_TEST (test_ring_is_writing)
{
  GpuShareRing ring;
  guint idx, other;
  guint32 gen;

  gpushare_ring_init (&ring, 2, EPOCH);
  fail_unless_equals_int (gpushare_ring_generation (&ring, 0), 0);
  fail_if (gpushare_ring_is_writing (&ring, 0, 0));
  idx = make_slot (&ring, GPUSHARE_SLOT_WRITING, 0, 0);
  gen = gpushare_ring_generation (&ring, idx);
  fail_unless_equals_int (gen, 1);
  fail_unless (gpushare_ring_is_writing (&ring, idx, gen));
  fail_if (gpushare_ring_is_writing (&ring, idx, gen + 1));
  fail_if (gpushare_ring_is_writing (&ring, idx, 0));
  /* out of range, within the array or not */
  fail_if (gpushare_ring_is_writing (&ring, 2, gen));
  fail_if (gpushare_ring_is_writing (&ring, GPUSHARE_MAX_SLOTS, gen));
  fail_if (gpushare_ring_is_writing (&ring, G_MAXUINT, gen));
  fail_unless_equals_int (gpushare_ring_generation (&ring, 2), 0);
  fail_unless_equals_int (gpushare_ring_generation (&ring, G_MAXUINT), 0);
  /* aborted, then acquired again: the old acquisition is over */
  assert_result (gpushare_ring_abort (&ring, idx), GPUSHARE_RING_OK);
  fail_if (gpushare_ring_is_writing (&ring, idx, gen));
  fail_unless_equals_int (gpushare_ring_generation (&ring, idx), gen);
  assert_result (gpushare_ring_acquire (&ring, &other), GPUSHARE_RING_OK);
  fail_unless_equals_int (other, idx);
  fail_if (gpushare_ring_is_writing (&ring, idx, gen));
  fail_unless (gpushare_ring_is_writing (&ring, idx, gen + 1));
  fail_unless_equals_int (gpushare_ring_generation (&ring, idx), gen + 1);
  /* ready and published are past writing; the generation stays for the
   * FRAME */
  assert_result (gpushare_ring_ready (&ring, idx, 5), GPUSHARE_RING_OK);
  fail_if (gpushare_ring_is_writing (&ring, idx, gen + 1));
  assert_result (gpushare_ring_publish_at (&ring, idx, BIT (2), 10),
      GPUSHARE_RING_OK);
  fail_if (gpushare_ring_is_writing (&ring, idx, gen + 1));
  fail_unless_equals_int (gpushare_ring_generation (&ring, idx), gen + 1);
  /* the generation past its wrap is never 0 */
  ring.slots[1].generation = G_MAXUINT32;
  assert_result (gpushare_ring_acquire (&ring, &other), GPUSHARE_RING_OK);
  fail_unless_equals_int (other, 1);
  fail_unless_equals_int (gpushare_ring_generation (&ring, 1), 1);
  fail_unless (gpushare_ring_is_writing (&ring, 1, 1));
}

GST_END_TEST;

/* ---- consumer slot view ---- */

GST_START_TEST (test_view_init)
{
  GpuShareSlotView view;
  guint i;

  memset (&view, 0xa5, sizeof (view));
  gpushare_slot_view_init (&view, 4, EPOCH);
  fail_unless_equals_uint64 (view.epoch, EPOCH);
  fail_unless_equals_int (view.n_slots, 4);
  fail_unless (!view.have_sequence);
  for (i = 0; i < GPUSHARE_MAX_SLOTS; i++) {
    fail_unless_equals_int (view.generation[i], 0);
    fail_unless (!view.held[i]);
  }
}

GST_END_TEST;

GST_START_TEST (test_view_in_order)
{
  GpuShareSlotView view;
  guint i;

  gpushare_slot_view_init (&view, 4, EPOCH);
  /* the first sequence may be anything, 0 included */
  for (i = 0; i < 4; i++) {
    assert_result (gpushare_slot_view_frame (&view, EPOCH, i, 1, i),
        GPUSHARE_RING_OK);
    fail_unless (view.held[i]);
    fail_unless_equals_int (view.generation[i], 1);
    fail_unless_equals_uint64 (view.last_sequence, i);
  }
  for (i = 0; i < 4; i++) {
    assert_result (gpushare_slot_view_release (&view, i, 1), GPUSHARE_RING_OK);
    fail_unless (!view.held[i]);
  }
  /* the second lap: newer generations, larger sequences, gaps allowed */
  for (i = 0; i < 4; i++) {
    assert_result (gpushare_slot_view_frame (&view, EPOCH, i, 2 + i,
            10 + 3 * i), GPUSHARE_RING_OK);
    assert_result (gpushare_slot_view_release (&view, i, 2 + i),
        GPUSHARE_RING_OK);
  }
  fail_unless_equals_uint64 (view.last_sequence, 19);
}

GST_END_TEST;

GST_START_TEST (test_view_stale_epoch)
{
  GpuShareSlotView view;

  gpushare_slot_view_init (&view, 4, EPOCH);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH - 1, 0,
          1, 1), GPUSHARE_RING_STALE_EPOCH);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH + 1, 0,
          1, 1), GPUSHARE_RING_STALE_EPOCH);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 1, 1),
      GPUSHARE_RING_OK);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, 0, 1, 1, 2),
      GPUSHARE_RING_STALE_EPOCH);
}

GST_END_TEST;

GST_START_TEST (test_view_bad_slot)
{
  static const guint bad[] = { 4, GPUSHARE_MAX_SLOTS - 1, GPUSHARE_MAX_SLOTS,
    G_MAXUINT
  };
  GpuShareSlotView view;
  guint i;

  gpushare_slot_view_init (&view, 4, EPOCH);
  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH,
            bad[i], 1, 1), GPUSHARE_RING_BAD_SLOT);
    assert_view_rejects (&view, gpushare_slot_view_release (&view, bad[i],
            0), GPUSHARE_RING_BAD_SLOT);
  }
}

GST_END_TEST;

GST_START_TEST (test_view_generation_not_newer)
{
  GpuShareSlotView view;

  gpushare_slot_view_init (&view, 2, EPOCH);
  /* 0 is "never written": no frame can carry it */
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 0,
          1), GPUSHARE_RING_STALE_GENERATION);

  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 5, 1),
      GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_release (&view, 0, 5), GPUSHARE_RING_OK);

  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 5,
          2), GPUSHARE_RING_STALE_GENERATION);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 4,
          2), GPUSHARE_RING_STALE_GENERATION);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 1,
          2), GPUSHARE_RING_STALE_GENERATION);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 0,
          2), GPUSHARE_RING_STALE_GENERATION);
  /* half the range ahead counts as behind */
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0,
          5 + HALF_RANGE, 2), GPUSHARE_RING_STALE_GENERATION);
  /* one short of that is still newer */
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0,
          5 + HALF_RANGE - 1, 2), GPUSHARE_RING_OK);

  /* a generation seen in another slot says nothing about this one */
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 1, 1, 3),
      GPUSHARE_RING_OK);
}

GST_END_TEST;

GST_START_TEST (test_view_slot_still_held)
{
  GpuShareSlotView view;

  gpushare_slot_view_init (&view, 2, EPOCH);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 1, 1),
      GPUSHARE_RING_OK);
  /* the producer must not reuse a slot we still read from, even with a
   * newer generation and sequence */
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 2,
          2), GPUSHARE_RING_BAD_STATE);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 1,
          2), GPUSHARE_RING_BAD_STATE);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 1, 1, 2),
      GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_release (&view, 0, 1), GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 2, 3),
      GPUSHARE_RING_OK);
}

GST_END_TEST;

GST_START_TEST (test_view_sequence)
{
  GpuShareSlotView view;

  gpushare_slot_view_init (&view, 3, EPOCH);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 1, 10),
      GPUSHARE_RING_OK);
  /* the sequence runs across slots: equal or older is rejected anywhere */
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 1, 1,
          10), GPUSHARE_RING_STALE_SEQUENCE);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 1, 1,
          9), GPUSHARE_RING_STALE_SEQUENCE);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 1, 1,
          0), GPUSHARE_RING_STALE_SEQUENCE);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 1, 1, 11),
      GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_release (&view, 0, 1), GPUSHARE_RING_OK);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0, 2,
          11), GPUSHARE_RING_STALE_SEQUENCE);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 2, G_MAXUINT64),
      GPUSHARE_RING_OK);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 2, 1,
          G_MAXUINT64), GPUSHARE_RING_STALE_SEQUENCE);
}

GST_END_TEST;

GST_START_TEST (test_view_release_illegal)
{
  GpuShareSlotView view;

  gpushare_slot_view_init (&view, 3, EPOCH);
  /* never had a frame there, whatever the generation */
  assert_view_rejects (&view, gpushare_slot_view_release (&view, 0, 0),
      GPUSHARE_RING_NOT_HELD);
  assert_view_rejects (&view, gpushare_slot_view_release (&view, 0, 1),
      GPUSHARE_RING_NOT_HELD);

  assert_result (gpushare_slot_view_frame (&view, EPOCH, 1, 7, 1),
      GPUSHARE_RING_OK);
  assert_view_rejects (&view, gpushare_slot_view_release (&view, 1, 6),
      GPUSHARE_RING_NOT_HELD);
  assert_view_rejects (&view, gpushare_slot_view_release (&view, 1, 8),
      GPUSHARE_RING_NOT_HELD);
  assert_view_rejects (&view, gpushare_slot_view_release (&view, 1, 0),
      GPUSHARE_RING_NOT_HELD);
  assert_view_rejects (&view, gpushare_slot_view_release (&view, 2, 7),
      GPUSHARE_RING_NOT_HELD);
  assert_result (gpushare_slot_view_release (&view, 1, 7), GPUSHARE_RING_OK);
  /* twice */
  assert_view_rejects (&view, gpushare_slot_view_release (&view, 1, 7),
      GPUSHARE_RING_NOT_HELD);
}

GST_END_TEST;

GST_START_TEST (test_view_generation_wrap)
{
  GpuShareSlotView view;

  gpushare_slot_view_init (&view, 1, EPOCH);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, G_MAXUINT32 - 1,
          1), GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_release (&view, 0, G_MAXUINT32 - 1),
      GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, G_MAXUINT32, 2),
      GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_release (&view, 0, G_MAXUINT32),
      GPUSHARE_RING_OK);
  /* the producer skips 0 */
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 1, 3),
      GPUSHARE_RING_OK);
  assert_result (gpushare_slot_view_release (&view, 0, 1), GPUSHARE_RING_OK);
  assert_view_rejects (&view, gpushare_slot_view_frame (&view, EPOCH, 0,
          G_MAXUINT32, 4), GPUSHARE_RING_STALE_GENERATION);
  assert_result (gpushare_slot_view_frame (&view, EPOCH, 0, 2, 4),
      GPUSHARE_RING_OK);
}

GST_END_TEST;

/* Guards a bug: the view took its initial 0 ("never seen") as a real
 * generation, so a consumer that connected once the producer's counter
 * for a slot had passed 2^31 rejected every frame in that slot as stale
 * (G_MAXUINT32 was "older" than 0). */
GST_START_TEST (test_view_late_join)
{
  static const guint32 gens[] = { 1, 0x7fffffff, 0x80000000, 0x80000001,
    0xfffffffe, G_MAXUINT32
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (gens); i++) {
    GpuShareSlotView view;
    GpuShareRing ring;
    guint idx;

    gpushare_ring_init (&ring, 1, EPOCH);
    ring.slots[0].generation = gens[i] - 1;
    idx = make_slot (&ring, GPUSHARE_SLOT_HELD, 1000, BIT (0));
    fail_unless_equals_int (ring.slots[idx].generation, gens[i]);

    gpushare_slot_view_init (&view, 1, EPOCH);
    assert_result (gpushare_slot_view_frame (&view, EPOCH, idx, gens[i],
            1000), GPUSHARE_RING_OK);
    assert_result (gpushare_slot_view_release (&view, idx, gens[i]),
        GPUSHARE_RING_OK);
    assert_result (gpushare_ring_release (&ring, EPOCH, idx, gens[i], 0),
        GPUSHARE_RING_OK);
  }
}

GST_END_TEST;

/* ---- randomized runs against reference models ---- */

#define N_RANDOM_OPS 3000

typedef struct
{
  GpuShareSlotState state;
  guint32 generation;
  guint64 sequence;
  guint64 holders;
} ModelSlot;

typedef struct
{
  guint64 epoch;
  guint n_slots;
  /* every slot index, the one that came free last at the end: the ring
   * hands out the free slot that came free last */
  guint recency[GPUSHARE_MAX_SLOTS];
  ModelSlot slot[GPUSHARE_MAX_SLOTS];
} RingModel;

static void
ring_model_came_free (RingModel * m, guint idx)
{
  guint i, j = 0;

  for (i = 0; i < m->n_slots; i++)
    if (m->recency[i] != idx)
      m->recency[j++] = m->recency[i];
  m->recency[j] = idx;
}

static void
ring_model_init (RingModel * m, guint n_slots, guint64 epoch)
{
  guint i;

  memset (m, 0, sizeof (*m));
  m->epoch = epoch;
  m->n_slots = n_slots;
  /* never used: slot 0 first, then 1, ... */
  for (i = 0; i < n_slots; i++)
    m->recency[i] = n_slots - 1 - i;
}

static GpuShareRingResult
ring_model_acquire (RingModel * m, guint * idx)
{
  guint k;

  for (k = m->n_slots; k > 0; k--) {
    guint i = m->recency[k - 1];
    ModelSlot *s = &m->slot[i];

    if (s->state != GPUSHARE_SLOT_FREE)
      continue;
    s->state = GPUSHARE_SLOT_WRITING;
    s->generation = s->generation == G_MAXUINT32 ? 1 : s->generation + 1;
    s->holders = 0;
    *idx = i;
    return GPUSHARE_RING_OK;
  }
  return GPUSHARE_RING_NO_SLOT;
}

static GpuShareRingResult
ring_model_move (RingModel * m, guint idx, GpuShareSlotState from,
    GpuShareSlotState to)
{
  if (idx >= m->n_slots)
    return GPUSHARE_RING_BAD_SLOT;
  if (m->slot[idx].state != from)
    return GPUSHARE_RING_BAD_STATE;
  m->slot[idx].state = to;
  if (to == GPUSHARE_SLOT_FREE)
    ring_model_came_free (m, idx);
  return GPUSHARE_RING_OK;
}

static GpuShareRingResult
ring_model_release (RingModel * m, guint64 epoch, guint idx, guint32 gen,
    guint holder)
{
  ModelSlot *s;

  if (epoch != m->epoch)
    return GPUSHARE_RING_STALE_EPOCH;
  if (idx >= m->n_slots || holder >= GPUSHARE_MAX_HOLDERS)
    return GPUSHARE_RING_BAD_SLOT;
  s = &m->slot[idx];
  if (gen != s->generation)
    return GPUSHARE_RING_STALE_GENERATION;
  if (s->state != GPUSHARE_SLOT_HELD || !(s->holders & BIT (holder)))
    return GPUSHARE_RING_NOT_HELD;
  s->holders &= ~BIT (holder);
  if (s->holders == 0) {
    s->state = GPUSHARE_SLOT_FREE;
    ring_model_came_free (m, idx);
  }
  return GPUSHARE_RING_OK;
}

static guint
ring_model_release_holder (RingModel * m, guint holder)
{
  guint i, n = 0;

  for (i = 0; i < m->n_slots && holder < GPUSHARE_MAX_HOLDERS; i++) {
    if (m->slot[i].state == GPUSHARE_SLOT_HELD
        && (m->slot[i].holders & BIT (holder))) {
      n++;
      ring_model_release (m, m->epoch, i, m->slot[i].generation, holder);
    }
  }
  return n;
}

static guint
ring_model_count (const RingModel * m, GpuShareSlotState state, guint holder)
{
  guint i, n = 0;

  for (i = 0; i < m->n_slots; i++) {
    if (m->slot[i].state != state)
      continue;
    if (state == GPUSHARE_SLOT_HELD && (holder >= GPUSHARE_MAX_HOLDERS
            || !(m->slot[i].holders & BIT (holder))))
      continue;
    n++;
  }
  return n;
}

static void
ring_model_compare (const RingModel * m, const GpuShareRing * ring, guint step)
{
  guint i;

  fail_unless_equals_uint64 (ring->epoch, m->epoch);
  fail_unless_equals_int (ring->n_slots, m->n_slots);
  for (i = 0; i < m->n_slots; i++) {
    const GpuShareSlot *s = &ring->slots[i];
    const ModelSlot *ms = &m->slot[i];

    fail_unless (s->state == ms->state && s->generation == ms->generation
        && s->holders == ms->holders, "step %u, slot %u: ring %s/%u/%"
        G_GINT64_MODIFIER "x, model %s/%u/%" G_GINT64_MODIFIER "x", step, i,
        gpushare_slot_state_to_string (s->state), s->generation, s->holders,
        gpushare_slot_state_to_string (ms->state), ms->generation, ms->holders);
    if (s->state == GPUSHARE_SLOT_READY || s->state == GPUSHARE_SLOT_HELD)
      fail_unless (s->sequence == ms->sequence, "step %u, slot %u: sequence",
          step, i);
    /* the invariant the ring's own checks lean on */
    fail_unless ((s->holders != 0) == (s->state == GPUSHARE_SLOT_HELD),
        "step %u, slot %u: holders without HELD or HELD without holders",
        step, i);
  }
}

/* a slot in @state if there is one, else (and now and then anyway) any
 * slot, in range or not */
static guint
pick_slot (GRand * rand, const RingModel * m, GpuShareSlotState state)
{
  guint candidates[GPUSHARE_MAX_SLOTS];
  guint i, n = 0;
  gint32 r = g_rand_int_range (rand, 0, 100);

  if (r < 5)
    return g_rand_boolean (rand) ? G_MAXUINT :
        (guint) g_rand_int_range (rand, m->n_slots, GPUSHARE_MAX_SLOTS + 2);
  for (i = 0; i < m->n_slots; i++)
    if (m->slot[i].state == state)
      candidates[n++] = i;
  if (n == 0 || r < 15)
    return g_rand_int_range (rand, 0, m->n_slots);
  return candidates[g_rand_int_range (rand, 0, n)];
}

static guint64
random_mask (GRand * rand)
{
  gint32 r = g_rand_int_range (rand, 0, 100);

  if (r < 15)
    return 0;
  if (r < 65)
    return g_rand_int_range (rand, 0, 16);      /* a few consumers */
  if (r < 85)
    return BIT (g_rand_int_range (rand, 0, 64));
  return ((guint64) g_rand_int (rand) << 32) | g_rand_int (rand);
}

static guint
random_holder (GRand * rand, guint64 holders)
{
  guint h;

  if (holders != 0 && g_rand_int_range (rand, 0, 100) < 80) {
    do {
      h = g_rand_int_range (rand, 0, 64);
    } while (!(holders & BIT (h)));
    return h;
  }
  return g_rand_int_range (rand, 0, GPUSHARE_MAX_HOLDERS + 2);
}

static void
run_ring_model (GRand * rand, guint n_slots)
{
  GpuShareRing ring;
  RingModel m;
  guint step;

  gpushare_ring_init (&ring, n_slots, EPOCH);
  ring_model_init (&m, n_slots, EPOCH);

  for (step = 0; step < N_RANDOM_OPS; step++) {
    GpuShareRingResult got = GPUSHARE_RING_OK, want = GPUSHARE_RING_OK;
    guint idx, midx, holder;
    gint32 r = g_rand_int_range (rand, 0, 100);

    if (r < 20) {
      idx = midx = G_MAXUINT;
      got = gpushare_ring_acquire (&ring, &idx);
      want = ring_model_acquire (&m, &midx);
      if (want == GPUSHARE_RING_OK)
        fail_unless_equals_int (idx, midx);
    } else if (r < 28) {
      idx = pick_slot (rand, &m, GPUSHARE_SLOT_WRITING);
      got = gpushare_ring_abort (&ring, idx);
      want = ring_model_move (&m, idx, GPUSHARE_SLOT_WRITING,
          GPUSHARE_SLOT_FREE);
    } else if (r < 43) {
      guint64 seq = ((guint64) g_rand_int (rand) << 32) | g_rand_int (rand);

      idx = pick_slot (rand, &m, GPUSHARE_SLOT_WRITING);
      got = gpushare_ring_ready (&ring, idx, seq);
      want = ring_model_move (&m, idx, GPUSHARE_SLOT_WRITING,
          GPUSHARE_SLOT_READY);
      if (want == GPUSHARE_RING_OK)
        m.slot[idx].sequence = seq;
    } else if (r < 58) {
      guint64 mask = random_mask (rand);

      idx = pick_slot (rand, &m, GPUSHARE_SLOT_READY);
      got = gpushare_ring_publish (&ring, idx, mask);
      want = ring_model_move (&m, idx, GPUSHARE_SLOT_READY,
          mask ? GPUSHARE_SLOT_HELD : GPUSHARE_SLOT_FREE);
      if (want == GPUSHARE_RING_OK)
        m.slot[idx].holders = mask;
    } else if (r < 93) {
      guint64 epoch = m.epoch;
      guint32 gen;
      gint32 q = g_rand_int_range (rand, 0, 100);

      idx = pick_slot (rand, &m, GPUSHARE_SLOT_HELD);
      gen = idx < n_slots ? m.slot[idx].generation : 1;
      holder = random_holder (rand, idx < n_slots ? m.slot[idx].holders : 0);
      if (q < 4)
        epoch += g_rand_boolean (rand) ? 1 : -1;
      else if (q < 12)
        gen += g_rand_boolean (rand) ? 1 : -1;
      else if (q < 14)
        gen = 0;
      got = gpushare_ring_release (&ring, epoch, idx, gen, holder);
      want = ring_model_release (&m, epoch, idx, gen, holder);
    } else if (r < 97) {
      holder = g_rand_int_range (rand, 0, GPUSHARE_MAX_HOLDERS + 2);
      fail_unless_equals_int (gpushare_ring_release_holder (&ring, holder),
          ring_model_release_holder (&m, holder));
    } else {
      /* put a FREE slot near the wrap, in both */
      idx = pick_slot (rand, &m, GPUSHARE_SLOT_FREE);
      if (idx < n_slots && m.slot[idx].state == GPUSHARE_SLOT_FREE) {
        m.slot[idx].generation = G_MAXUINT32 - g_rand_int_range (rand, 0, 3);
        ring.slots[idx].generation = m.slot[idx].generation;
      }
    }

    fail_unless (got == want, "step %u (r=%d): got '%s', model '%s'", step,
        r, gpushare_ring_result_to_string (got),
        gpushare_ring_result_to_string (want));
    ring_model_compare (&m, &ring, step);
    holder = g_rand_int_range (rand, 0, GPUSHARE_MAX_HOLDERS + 1);
    fail_unless_equals_int (gpushare_ring_n_free (&ring),
        ring_model_count (&m, GPUSHARE_SLOT_FREE, 0));
    fail_unless_equals_int (gpushare_ring_n_held_by (&ring, holder),
        ring_model_count (&m, GPUSHARE_SLOT_HELD, holder));
  }
}

GST_START_TEST (test_ring_random_model)
{
  static const guint sizes[] = { 1, 2, 3, 8, GPUSHARE_MAX_SLOTS };
  GRand *rand = g_rand_new_with_seed (0x67707573);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sizes); i++)
    run_ring_model (rand, sizes[i]);
  g_rand_free (rand);
}

GST_END_TEST;

typedef struct
{
  guint64 epoch;
  guint n_slots;
  gboolean have_sequence;
  guint64 last_sequence;
  guint32 seen[GPUSHARE_MAX_SLOTS];     /* 0: no frame yet */
  gboolean held[GPUSHARE_MAX_SLOTS];
} ViewModel;

/* written apart from the ring's own helper: ahead by 1 .. 2^31 - 1 modulo
 * 2^32; a slot with no frame yet takes any generation but 0 */
static gboolean
model_generation_newer (guint32 seen, guint32 gen)
{
  guint64 ahead;

  if (gen == 0)
    return FALSE;
  if (seen == 0)
    return TRUE;
  ahead = ((guint64) gen + (G_GUINT64_CONSTANT (1) << 32) - seen)
      % (G_GUINT64_CONSTANT (1) << 32);
  return ahead >= 1 && ahead < HALF_RANGE;
}

static GpuShareRingResult
view_model_frame (ViewModel * m, guint64 epoch, guint idx, guint32 gen,
    guint64 seq)
{
  if (epoch != m->epoch)
    return GPUSHARE_RING_STALE_EPOCH;
  if (idx >= m->n_slots)
    return GPUSHARE_RING_BAD_SLOT;
  if (m->held[idx])
    return GPUSHARE_RING_BAD_STATE;
  if (!model_generation_newer (m->seen[idx], gen))
    return GPUSHARE_RING_STALE_GENERATION;
  if (m->have_sequence && seq <= m->last_sequence)
    return GPUSHARE_RING_STALE_SEQUENCE;
  m->seen[idx] = gen;
  m->held[idx] = TRUE;
  m->have_sequence = TRUE;
  m->last_sequence = seq;
  return GPUSHARE_RING_OK;
}

static GpuShareRingResult
view_model_release (ViewModel * m, guint idx, guint32 gen)
{
  if (idx >= m->n_slots)
    return GPUSHARE_RING_BAD_SLOT;
  if (!m->held[idx] || m->seen[idx] != gen)
    return GPUSHARE_RING_NOT_HELD;
  m->held[idx] = FALSE;
  return GPUSHARE_RING_OK;
}

static void
view_model_compare (const ViewModel * m, const GpuShareSlotView * view,
    guint step)
{
  guint i;

  fail_unless_equals_uint64 (view->epoch, m->epoch);
  fail_unless_equals_int (view->n_slots, m->n_slots);
  fail_unless (!view->have_sequence == !m->have_sequence, "step %u", step);
  if (m->have_sequence)
    fail_unless (view->last_sequence == m->last_sequence, "step %u", step);
  for (i = 0; i < m->n_slots; i++) {
    fail_unless (!view->held[i] == !m->held[i], "step %u slot %u held",
        step, i);
    if (m->seen[i] != 0)
      fail_unless (view->generation[i] == m->seen[i],
          "step %u slot %u: generation %u, model %u", step, i,
          view->generation[i], m->seen[i]);
  }
}

static guint32
random_generation (GRand * rand, guint32 seen)
{
  gint32 r = g_rand_int_range (rand, 0, 100);

  if (r < 45)
    return seen + 1;            /* 0 after G_MAXUINT32: rejected */
  if (r < 60)
    return seen + g_rand_int_range (rand, 2, 10);
  if (r < 68)
    return seen;
  if (r < 76)
    return seen - g_rand_int_range (rand, 1, 4);
  if (r < 80)
    return 0;
  if (r < 86)
    return seen + HALF_RANGE + g_rand_int_range (rand, -1, 2);
  if (r < 93)
    return G_MAXUINT32 - g_rand_int_range (rand, 0, 4);
  return g_rand_int (rand);
}

GST_START_TEST (test_view_random_model)
{
  GRand *rand = g_rand_new_with_seed (0x76696577);
  GpuShareSlotView view;
  ViewModel m;
  guint step;
  const guint n_slots = 5;

  gpushare_slot_view_init (&view, n_slots, EPOCH);
  memset (&m, 0, sizeof (m));
  m.epoch = EPOCH;
  m.n_slots = n_slots;

  for (step = 0; step < N_RANDOM_OPS * 2; step++) {
    GpuShareRingResult got, want;
    guint idx;
    guint32 gen;
    gint32 r = g_rand_int_range (rand, 0, 100);

    idx = g_rand_int_range (rand, 0, 100) < 93 ?
        (guint) g_rand_int_range (rand, 0, n_slots) :
        (guint) g_rand_int_range (rand, n_slots, GPUSHARE_MAX_SLOTS + 2);
    gen = idx < n_slots ? m.seen[idx] : 1;

    if (r < 55) {
      guint64 epoch = m.epoch, seq = m.last_sequence;
      gint32 d = g_rand_int_range (rand, -2, 6);

      if (g_rand_int_range (rand, 0, 100) < 4)
        epoch += g_rand_boolean (rand) ? 1 : -1;
      /* keep clear of the top so that one jump does not end the run */
      if (d >= 0 || seq >= (guint64) (-d))
        seq += d;
      gen = random_generation (rand, gen);
      got = gpushare_slot_view_frame (&view, epoch, idx, gen, seq);
      want = view_model_frame (&m, epoch, idx, gen, seq);
    } else {
      if (g_rand_int_range (rand, 0, 100) < 15)
        gen += g_rand_int_range (rand, -1, 2);
      got = gpushare_slot_view_release (&view, idx, gen);
      want = view_model_release (&m, idx, gen);
    }
    fail_unless (got == want, "step %u: got '%s', model '%s'", step,
        gpushare_ring_result_to_string (got),
        gpushare_ring_result_to_string (want));
    view_model_compare (&m, &view, step);
  }
  g_rand_free (rand);
}

GST_END_TEST;

/* Producer and consumers together, as the elements will run them: every
 * frame the ring publishes must pass each receiver's view, every release a
 * consumer's view accepts must pass the ring, and the two must agree on who
 * holds what.  Consumers come and go; generations start near 2^31 and near
 * the wrap, so late joiners and the wrap are both exercised. */
#define N_CONSUMERS 3

GST_START_TEST (test_ring_view_random)
{
  GRand *rand = g_rand_new_with_seed (0x72696e67);
  GpuShareSlotView views[N_CONSUMERS];
  gboolean active[N_CONSUMERS] = { FALSE, };
  GpuShareRing ring;
  guint64 sequence = 1;
  guint step, i, k, idx;
  const guint n_slots = 4;

  gpushare_ring_init (&ring, n_slots, EPOCH);
  for (i = 0; i < n_slots; i++)
    ring.slots[i].generation = (i % 2 ? G_MAXUINT32 : (guint32) HALF_RANGE)
        - 40 + i;

  for (step = 0; step < N_RANDOM_OPS; step++) {
    gint32 r = g_rand_int_range (rand, 0, 100);

    k = g_rand_int_range (rand, 0, N_CONSUMERS);
    if (r < 45) {
      GpuShareRingResult res = gpushare_ring_acquire (&ring, &idx);
      guint64 mask = 0;
      guint32 gen;

      if (res == GPUSHARE_RING_NO_SLOT) {
        fail_unless_equals_int (gpushare_ring_n_free (&ring), 0);
        continue;
      }
      fail_unless (res == GPUSHARE_RING_OK);
      if (g_rand_int_range (rand, 0, 100) < 10) {
        assert_result (gpushare_ring_abort (&ring, idx), GPUSHARE_RING_OK);
        continue;
      }
      for (i = 0; i < N_CONSUMERS; i++)
        if (active[i] && g_rand_int_range (rand, 0, 100) < 80)
          mask |= BIT (i);
      gen = ring.slots[idx].generation;
      assert_result (gpushare_ring_ready (&ring, idx, sequence),
          GPUSHARE_RING_OK);
      assert_result (gpushare_ring_publish (&ring, idx, mask),
          GPUSHARE_RING_OK);
      for (i = 0; i < N_CONSUMERS; i++) {
        GpuShareRingResult vres;

        if (!(mask & BIT (i)))
          continue;
        vres = gpushare_slot_view_frame (&views[i], EPOCH, idx, gen, sequence);
        fail_unless (vres == GPUSHARE_RING_OK,
            "step %u: consumer %u rejected slot %u gen %u: %s", step, i,
            idx, gen, gpushare_ring_result_to_string (vres));
      }
      sequence += g_rand_int_range (rand, 1, 3);
    } else if (r < 85) {
      guint held[GPUSHARE_MAX_SLOTS], n = 0;

      if (!active[k])
        continue;
      for (i = 0; i < n_slots; i++)
        if (views[k].held[i])
          held[n++] = i;
      if (n == 0)
        continue;
      idx = held[g_rand_int_range (rand, 0, n)];
      assert_result (gpushare_slot_view_release (&views[k], idx,
              views[k].generation[idx]), GPUSHARE_RING_OK);
      assert_result (gpushare_ring_release (&ring, EPOCH, idx,
              views[k].generation[idx], k), GPUSHARE_RING_OK);
    } else if (r < 93) {
      if (active[k])
        continue;
      gpushare_slot_view_init (&views[k], n_slots, EPOCH);
      active[k] = TRUE;
    } else {
      guint n = 0;

      if (!active[k])
        continue;
      for (i = 0; i < n_slots; i++)
        n += views[k].held[i] ? 1 : 0;
      fail_unless_equals_int (gpushare_ring_release_holder (&ring, k), n);
      active[k] = FALSE;
    }

    for (k = 0; k < N_CONSUMERS; k++) {
      guint n = 0;

      for (i = 0; active[k] && i < n_slots; i++)
        n += views[k].held[i] ? 1 : 0;
      fail_unless (gpushare_ring_n_held_by (&ring, k) == n,
          "step %u: ring says consumer %u holds %u, its view %u", step, k,
          gpushare_ring_n_held_by (&ring, k), n);
    }
  }
  /* both ends of the range were crossed */
  for (i = 0; i < n_slots; i++)
    fail_unless (ring.slots[i].generation < 1000
        || (ring.slots[i].generation > HALF_RANGE
            && ring.slots[i].generation < HALF_RANGE + 1000),
        "slot %u generation %u", i, ring.slots[i].generation);
  g_rand_free (rand);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* Leaky shares                                                        */

GST_START_TEST (test_ring_share)
{
  /* (slots - 1) / consumers, at least 1; a ring under 2 slots gives 1 */
  fail_unless_equals_int (gpushare_ring_share (8, 0), 7);
  fail_unless_equals_int (gpushare_ring_share (8, 1), 7);
  fail_unless_equals_int (gpushare_ring_share (8, 2), 3);
  fail_unless_equals_int (gpushare_ring_share (8, 4), 1);
  fail_unless_equals_int (gpushare_ring_share (8, 16), 1);
  fail_unless_equals_int (gpushare_ring_share (16, 5), 3);
  fail_unless_equals_int (gpushare_ring_share (64, 21), 3);
  fail_unless_equals_int (gpushare_ring_share (64, 64), 1);
  fail_unless_equals_int (gpushare_ring_share (1, 1), 1);
  fail_unless_equals_int (gpushare_ring_share (0, 3), 1);
}

GST_END_TEST;

/* the sizes README.md gives for consumers that join one by one, and the
 * jumps of several at once */
GST_START_TEST (test_auto_slots)
{
  guint n, slots = GPUSHARE_RING_DEFAULT_SLOTS, last = slots;

  for (n = 1; n <= GPUSHARE_MAX_HOLDERS; n++) {
    slots = gpushare_ring_auto_slots (slots, n);
    fail_unless (slots >= last, "shrank at %u consumers", n);
    fail_unless (slots <= GPUSHARE_MAX_SLOTS);
    /* every consumer's share is 3 while 64 slots allow it */
    if (n <= 21)
      fail_unless (gpushare_ring_share (slots, n) >= GPUSHARE_RING_MIN_SHARE,
          "%u consumers, %u slots", n, slots);
    fail_unless_equals_int (slots, n <= 2 ? 8 : n <= 5 ? 16 : n <= 10 ? 32 :
        64);
    last = slots;
  }
  /* enough at once where doubling is not */
  fail_unless_equals_int (gpushare_ring_auto_slots (8, 11), 34);
  fail_unless_equals_int (gpushare_ring_auto_slots (8, 64), 64);
  /* a ring made larger by hand is not touched */
  fail_unless_equals_int (gpushare_ring_auto_slots (20, 2), 20);
  fail_unless_equals_int (gpushare_ring_auto_slots (0, 1), 8);
}

GST_END_TEST;

/* who gets the next frame of a leaky producer */
GST_START_TEST (test_ring_leaky_admits)
{
  GpuShareRing ring;

  gpushare_ring_init (&ring, 8, EPOCH);
  /* under its share: always */
  make_slot (&ring, GPUSHARE_SLOT_HELD, 1, BIT (0) | BIT (1));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (0));
  fail_unless (gpushare_ring_leaky_admits (&ring, 0, 3, 3, 0, FALSE));
  fail_unless (gpushare_ring_leaky_admits (&ring, 1, 3, 3, 0, FALSE));
  fail_unless (gpushare_ring_leaky_admits (&ring, 2, 1, 0, 0, FALSE));
  /* it holds its share, as it was told: skipped, whether it knows its
   * share or not (its pipeline stopped taking buffers) */
  make_slot (&ring, GPUSHARE_SLOT_HELD, 3, BIT (0));
  fail_unless (!gpushare_ring_leaky_admits (&ring, 0, 3, 3, 0, TRUE));
  fail_unless (!gpushare_ring_leaky_admits (&ring, 0, 3, 3, 0, FALSE));
  /* its share shrank from 5 to 3 as consumers joined (an appsink keeps
   * its 3 newest frames): one that knows its share gets the frame that
   * tells it; an older consumer does not */
  fail_unless (gpushare_ring_leaky_admits (&ring, 0, 3, 5, 0, TRUE));
  fail_unless (!gpushare_ring_leaky_admits (&ring, 0, 3, 5, 0, FALSE));
  /* told, it copied frame 4 and gave it back: the next comes too, while
   * it holds nothing sent since it went over */
  fail_unless (gpushare_ring_leaky_admits (&ring, 0, 3, 3, 4, TRUE));
  fail_unless (!gpushare_ring_leaky_admits (&ring, 0, 3, 3, 4, FALSE));
  /* it keeps frame 4: it takes no frames now */
  make_slot (&ring, GPUSHARE_SLOT_HELD, 4, BIT (0));
  fail_unless (!gpushare_ring_leaky_admits (&ring, 0, 3, 3, 4, TRUE));
  /* unless its share shrank again: a frame tells it (one per shrink,
   * that is per consumer that joins) */
  fail_unless (gpushare_ring_leaky_admits (&ring, 0, 2, 3, 4, TRUE));
  /* no such holder */
  fail_unless (!gpushare_ring_leaky_admits (&ring, GPUSHARE_MAX_HOLDERS, 3,
          5, 0, TRUE));
}

GST_END_TEST;

/* what a leaky producer can lend a consumer that just started, past its
 * share: free slots no one else can want */
GST_START_TEST (test_ring_leaky_spare)
{
  GpuShareRing ring;
  guint64 all = BIT (0) | BIT (1) | BIT (2) | BIT (3);

  gpushare_ring_init (&ring, 16, EPOCH);
  /* holder 0 holds its share of 3, holder 1 one frame, 2 and 3 none:
   * 12 free, less 1 for the producer, 2 + 3 + 3 for the others' shares */
  make_slot (&ring, GPUSHARE_SLOT_HELD, 1, BIT (0) | BIT (1));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 2, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 3, BIT (0));
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 13);
  fail_unless_equals_int (gpushare_ring_leaky_spare (&ring, 0, all, 3), 4);
  /* the frame being published is not free */
  make_slot (&ring, GPUSHARE_SLOT_READY, 4, 0);
  fail_unless_equals_int (gpushare_ring_leaky_spare (&ring, 0, all, 3), 3);
  /* a consumer that does not stream reserves nothing */
  fail_unless_equals_int (gpushare_ring_leaky_spare (&ring, 0,
          BIT (0) | BIT (1), 3), 9);
  /* the others take their shares: what is left is lent, no more */
  make_slot (&ring, GPUSHARE_SLOT_HELD, 5, BIT (1) | BIT (2) | BIT (3));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 6, BIT (1) | BIT (2) | BIT (3));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 7, BIT (2) | BIT (3));
  fail_unless_equals_int (gpushare_ring_leaky_spare (&ring, 0, all, 3), 8);
  /* lent until only the producer's slot is left */
  make_slot (&ring, GPUSHARE_SLOT_HELD, 8, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 9, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 10, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 11, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 12, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 13, BIT (0));
  make_slot (&ring, GPUSHARE_SLOT_HELD, 14, BIT (0));
  fail_unless_equals_int (gpushare_ring_leaky_spare (&ring, 0, all, 3), 1);
  make_slot (&ring, GPUSHARE_SLOT_HELD, 15, BIT (0));
  fail_unless_equals_int (gpushare_ring_n_free (&ring), 1);
  fail_unless_equals_int (gpushare_ring_leaky_spare (&ring, 0, all, 3), 0);
}

GST_END_TEST;

static Suite *
gpusharering_suite (void)
{
  Suite *s = suite_create ("gpusharering");
  TCase *tc_ring = tcase_create ("ring");
  TCase *tc_view = tcase_create ("view");
  TCase *tc_model = tcase_create ("model");

  suite_add_tcase (s, tc_ring);
  tcase_add_checked_fixture (tc_ring, fd_setup, fd_teardown);
  tcase_add_test (tc_ring, test_ring_init);
  tcase_add_test (tc_ring, test_ring_init_invalid);
  tcase_add_test (tc_ring, test_ring_acquire_bumps_generation);
  tcase_add_test (tc_ring, test_ring_generation_wrap);
  tcase_add_test (tc_ring, test_ring_abort);
  tcase_add_test (tc_ring, test_ring_ready);
  tcase_add_test (tc_ring, test_ring_publish);
  tcase_add_test (tc_ring, test_ring_quarantine_holder);
  tcase_add_test (tc_ring, test_ring_release_holder_after);
  tcase_add_test (tc_ring, test_ring_release_each_holder);
  tcase_add_test (tc_ring, test_ring_release_illegal);
  tcase_add_test (tc_ring, test_ring_release_after_reuse);
  tcase_add_test (tc_ring, test_ring_transition_table);
  tcase_add_test (tc_ring, test_ring_bad_slot);
  tcase_add_test (tc_ring, test_ring_no_slot);
  tcase_add_test (tc_ring, test_ring_most_recently_freed);
  tcase_add_test (tc_ring, test_ring_release_holder);
  tcase_add_test (tc_ring, test_ring_counts);
  tcase_add_test (tc_ring, test_ring_size_one);
  tcase_add_test (tc_ring, test_ring_size_max);
  tcase_add_test (tc_ring, test_ring_strings);
  tcase_add_test (tc_ring, test_ring_publish_at);
  tcase_add_test (tc_ring, test_ring_expired_holders);
  tcase_add_test (tc_ring, test_ring_expired_random);
  tcase_add_test (tc_ring, test_ring_any_held);
  tcase_add_test (tc_ring, test_ring_is_writing);
  tcase_add_test (tc_ring, test_ring_share);
  tcase_add_test (tc_ring, test_auto_slots);
  tcase_add_test (tc_ring, test_ring_leaky_admits);
  tcase_add_test (tc_ring, test_ring_leaky_spare);

  suite_add_tcase (s, tc_view);
  tcase_add_checked_fixture (tc_view, fd_setup, fd_teardown);
  tcase_add_test (tc_view, test_view_init);
  tcase_add_test (tc_view, test_view_in_order);
  tcase_add_test (tc_view, test_view_stale_epoch);
  tcase_add_test (tc_view, test_view_bad_slot);
  tcase_add_test (tc_view, test_view_generation_not_newer);
  tcase_add_test (tc_view, test_view_slot_still_held);
  tcase_add_test (tc_view, test_view_sequence);
  tcase_add_test (tc_view, test_view_release_illegal);
  tcase_add_test (tc_view, test_view_generation_wrap);
  tcase_add_test (tc_view, test_view_late_join);

  suite_add_tcase (s, tc_model);
  tcase_add_checked_fixture (tc_model, fd_setup, fd_teardown);
  tcase_add_test (tc_model, test_ring_random_model);
  tcase_add_test (tc_model, test_view_random_model);
  tcase_add_test (tc_model, test_ring_view_random);

  return s;
}

GST_CHECK_MAIN (gpusharering);
