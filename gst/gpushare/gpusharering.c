/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpusharering.h"

#include <string.h>

/* generations wrap: newer means ahead by less than half the range */
static gboolean
generation_newer (guint32 a, guint32 b)
{
  return (gint32) (a - b) > 0;
}

void
gpushare_ring_init (GpuShareRing * ring, guint n_slots, guint64 epoch)
{
  guint i;

  g_return_if_fail (n_slots >= 1 && n_slots <= GPUSHARE_MAX_SLOTS);

  memset (ring, 0, sizeof (*ring));
  ring->epoch = epoch;
  ring->n_slots = n_slots;
  /* never used: slot 0 counts as freed last, so a fresh ring hands its
   * slots out in order */
  for (i = 0; i < n_slots; i++)
    ring->slots[i].freed = n_slots - i;
  ring->clock = n_slots;
}

GpuShareRingResult
gpushare_ring_acquire (GpuShareRing * ring, guint * slot)
{
  GpuShareSlot *s = NULL;
  guint i, idx = 0;

  /* the slot that came free last: its memory is the most likely to still
   * be in the CPU's cache (measured: at 1080p NV12 a ring of 8 cycled in
   * turn does not fit in cache, and copies into it run at half speed).
   * A consumer released it, so nobody reads it any more. */
  for (i = 0; i < ring->n_slots; i++) {
    GpuShareSlot *c = &ring->slots[i];

    if (c->state == GPUSHARE_SLOT_FREE && (!s || c->freed > s->freed)) {
      s = c;
      idx = i;
    }
  }
  if (!s)
    return GPUSHARE_RING_NO_SLOT;
  s->state = GPUSHARE_SLOT_WRITING;
  s->generation++;
  if (s->generation == 0)
    s->generation = 1;          /* 0 means "never written" */
  s->holders = 0;
  *slot = idx;
  return GPUSHARE_RING_OK;
}

/* the one place a slot comes free, or goes into quarantine */
static void
set_free (GpuShareRing * ring, GpuShareSlot * s)
{
  if (s->tainted) {
    s->state = GPUSHARE_SLOT_QUARANTINED;
    return;
  }
  s->state = GPUSHARE_SLOT_FREE;
  s->freed = ++ring->clock;
}

static GpuShareRingResult
check_slot (GpuShareRing * ring, guint slot, GpuShareSlotState state)
{
  if (slot >= ring->n_slots)
    return GPUSHARE_RING_BAD_SLOT;
  if (ring->slots[slot].state != state)
    return GPUSHARE_RING_BAD_STATE;
  return GPUSHARE_RING_OK;
}

GpuShareRingResult
gpushare_ring_abort (GpuShareRing * ring, guint slot)
{
  GpuShareRingResult res = check_slot (ring, slot, GPUSHARE_SLOT_WRITING);

  if (res == GPUSHARE_RING_OK)
    set_free (ring, &ring->slots[slot]);
  return res;
}

GpuShareRingResult
gpushare_ring_ready (GpuShareRing * ring, guint slot, guint64 sequence)
{
  GpuShareRingResult res = check_slot (ring, slot, GPUSHARE_SLOT_WRITING);

  if (res == GPUSHARE_RING_OK) {
    ring->slots[slot].state = GPUSHARE_SLOT_READY;
    ring->slots[slot].sequence = sequence;
  }
  return res;
}

GpuShareRingResult
gpushare_ring_publish (GpuShareRing * ring, guint slot, guint64 holders)
{
  return gpushare_ring_publish_at (ring, slot, holders, 0);
}

GpuShareRingResult
gpushare_ring_publish_at (GpuShareRing * ring, guint slot, guint64 holders,
    gint64 now_us)
{
  GpuShareRingResult res = check_slot (ring, slot, GPUSHARE_SLOT_READY);

  if (res == GPUSHARE_RING_OK) {
    ring->slots[slot].holders = holders;
    ring->slots[slot].published_at = now_us;
    if (holders)
      ring->slots[slot].state = GPUSHARE_SLOT_HELD;
    else
      set_free (ring, &ring->slots[slot]);
  }
  return res;
}

GpuShareRingResult
gpushare_ring_release (GpuShareRing * ring, guint64 epoch, guint slot,
    guint32 generation, guint holder)
{
  GpuShareSlot *s;
  guint64 bit;

  if (epoch != ring->epoch)
    return GPUSHARE_RING_STALE_EPOCH;
  if (slot >= ring->n_slots || holder >= GPUSHARE_MAX_HOLDERS)
    return GPUSHARE_RING_BAD_SLOT;
  s = &ring->slots[slot];
  if (generation != s->generation)
    return GPUSHARE_RING_STALE_GENERATION;
  bit = G_GUINT64_CONSTANT (1) << holder;
  if (s->state != GPUSHARE_SLOT_HELD || !(s->holders & bit))
    return GPUSHARE_RING_NOT_HELD;
  s->holders &= ~bit;
  if (s->holders == 0)
    set_free (ring, s);
  return GPUSHARE_RING_OK;
}

/* the holder's slots whose frames came after the sequence after, or all
 * of them when !some */
static guint
drop_holder (GpuShareRing * ring, guint holder, gboolean taint,
    gboolean some, guint64 after)
{
  guint64 bit;
  guint i, n = 0;

  if (holder >= GPUSHARE_MAX_HOLDERS)
    return 0;
  bit = G_GUINT64_CONSTANT (1) << holder;
  for (i = 0; i < ring->n_slots; i++) {
    GpuShareSlot *s = &ring->slots[i];

    if (s->state != GPUSHARE_SLOT_HELD || !(s->holders & bit)
        || (some && s->sequence <= after))
      continue;
    s->holders &= ~bit;
    s->tainted |= taint;
    if (s->holders == 0)
      set_free (ring, s);
    n++;
  }
  return n;
}

guint
gpushare_ring_release_holder (GpuShareRing * ring, guint holder)
{
  return drop_holder (ring, holder, FALSE, FALSE, 0);
}

guint
gpushare_ring_release_holder_after (GpuShareRing * ring, guint holder,
    guint64 sequence)
{
  return drop_holder (ring, holder, FALSE, TRUE, sequence);
}

guint
gpushare_ring_quarantine_holder (GpuShareRing * ring, guint holder)
{
  return drop_holder (ring, holder, TRUE, FALSE, 0);
}

guint
gpushare_ring_n_tainted (const GpuShareRing * ring)
{
  guint i, n = 0;

  for (i = 0; i < ring->n_slots; i++)
    n += ring->slots[i].tainted ? 1 : 0;
  return n;
}

guint
gpushare_ring_n_free (const GpuShareRing * ring)
{
  guint i, n = 0;

  for (i = 0; i < ring->n_slots; i++)
    if (ring->slots[i].state == GPUSHARE_SLOT_FREE)
      n++;
  return n;
}

guint
gpushare_ring_n_held_by (const GpuShareRing * ring, guint holder)
{
  guint64 bit;
  guint i, n = 0;

  if (holder >= GPUSHARE_MAX_HOLDERS)
    return 0;
  bit = G_GUINT64_CONSTANT (1) << holder;
  for (i = 0; i < ring->n_slots; i++)
    if (ring->slots[i].state == GPUSHARE_SLOT_HELD
        && (ring->slots[i].holders & bit))
      n++;
  return n;
}

guint
gpushare_ring_share (guint n_slots, guint n_consumers)
{
  if (n_slots < 2)
    return 1;
  return MAX (1, (n_slots - 1) / MAX (1, n_consumers));
}

guint
gpushare_ring_auto_slots (guint n_slots, guint n_consumers)
{
  guint need = GPUSHARE_RING_MIN_SHARE * MIN (n_consumers,
      GPUSHARE_MAX_HOLDERS) + 1;

  n_slots = MAX (n_slots, GPUSHARE_RING_DEFAULT_SLOTS);
  if (need <= n_slots || n_slots >= GPUSHARE_MAX_SLOTS)
    return MIN (n_slots, GPUSHARE_MAX_SLOTS);
  return MIN (MAX (need, 2 * n_slots), GPUSHARE_MAX_SLOTS);
}

gboolean
gpushare_ring_leaky_admits (const GpuShareRing * ring, guint holder,
    guint share, guint told_share, guint64 over_since, gboolean may_exceed)
{
  guint64 bit;
  guint i, n = 0;
  gboolean holds_since = FALSE;

  if (holder >= GPUSHARE_MAX_HOLDERS)
    return FALSE;
  bit = G_GUINT64_CONSTANT (1) << holder;
  for (i = 0; i < ring->n_slots; i++) {
    const GpuShareSlot *s = &ring->slots[i];

    if (s->state != GPUSHARE_SLOT_HELD || !(s->holders & bit))
      continue;
    n++;
    if (over_since && s->sequence >= over_since)
      holds_since = TRUE;
  }
  if (n < share)
    return TRUE;
  if (!may_exceed)
    return FALSE;
  if (told_share > share)
    return TRUE;
  return over_since != 0 && !holds_since;
}

guint
gpushare_ring_leaky_spare (const GpuShareRing * ring, guint holder,
    guint64 others, guint share)
{
  guint i, n_free, reserve = 1;

  g_return_val_if_fail (ring != NULL, 0);

  n_free = gpushare_ring_n_free (ring);
  for (i = 0; i < GPUSHARE_MAX_HOLDERS && reserve < n_free; i++) {
    guint held;

    if (i == holder || !(others & (G_GUINT64_CONSTANT (1) << i)))
      continue;
    held = gpushare_ring_n_held_by (ring, i);
    if (held < share)
      reserve += share - held;
  }
  return n_free > reserve ? n_free - reserve : 0;
}

guint64
gpushare_ring_expired_holders (const GpuShareRing * ring, gint64 now_us,
    gint64 limit_us, guint64 * held_seq, gint64 * held_us)
{
  guint64 newest[GPUSHARE_MAX_HOLDERS] = { 0, };
  guint64 seq[GPUSHARE_MAX_HOLDERS] = { 0, };
  gint64 age[GPUSHARE_MAX_HOLDERS] = { 0, };
  guint64 expired = 0;
  guint i, j;

  g_return_val_if_fail (ring != NULL, 0);

  /* each holder's newest frame: the one it may keep for as long as it
   * likes */
  for (i = 0; i < ring->n_slots; i++) {
    const GpuShareSlot *s = &ring->slots[i];

    if (s->state != GPUSHARE_SLOT_HELD)
      continue;
    for (j = 0; j < GPUSHARE_MAX_HOLDERS; j++)
      if (s->holders & (G_GUINT64_CONSTANT (1) << j))
        newest[j] = MAX (newest[j], s->sequence);
  }
  for (i = 0; i < ring->n_slots; i++) {
    const GpuShareSlot *s = &ring->slots[i];
    gint64 held = now_us - s->published_at;

    if (s->state != GPUSHARE_SLOT_HELD || held <= limit_us)
      continue;
    for (j = 0; j < GPUSHARE_MAX_HOLDERS; j++) {
      guint64 bit = G_GUINT64_CONSTANT (1) << j;

      if (!(s->holders & bit) || s->sequence == newest[j])
        continue;
      /* the frame held longest is the one worth naming */
      if (!(expired & bit) || held > age[j]) {
        seq[j] = s->sequence;
        age[j] = held;
      }
      expired |= bit;
    }
  }
  if (held_seq)
    memcpy (held_seq, seq, sizeof (seq));
  if (held_us)
    memcpy (held_us, age, sizeof (age));
  return expired;
}

gboolean
gpushare_ring_any_held (const GpuShareRing * ring)
{
  guint i;

  g_return_val_if_fail (ring != NULL, FALSE);

  for (i = 0; i < ring->n_slots; i++)
    if (ring->slots[i].state == GPUSHARE_SLOT_HELD)
      return TRUE;
  return FALSE;
}

gboolean
gpushare_ring_is_writing (const GpuShareRing * ring, guint slot,
    guint32 generation)
{
  g_return_val_if_fail (ring != NULL, FALSE);

  /* the generation tells a slot acquired again (and maybe being written
   * by someone else now) from the acquisition the caller made */
  return slot < ring->n_slots
      && ring->slots[slot].state == GPUSHARE_SLOT_WRITING
      && ring->slots[slot].generation == generation;
}

guint32
gpushare_ring_generation (const GpuShareRing * ring, guint slot)
{
  g_return_val_if_fail (ring != NULL, 0);

  return slot < ring->n_slots ? ring->slots[slot].generation : 0;
}

const gchar *
gpushare_ring_result_to_string (GpuShareRingResult res)
{
  switch (res) {
    case GPUSHARE_RING_OK:
      return "ok";
    case GPUSHARE_RING_NO_SLOT:
      return "no free slot";
    case GPUSHARE_RING_BAD_SLOT:
      return "slot index out of range";
    case GPUSHARE_RING_BAD_STATE:
      return "illegal slot transition";
    case GPUSHARE_RING_STALE_EPOCH:
      return "stale epoch";
    case GPUSHARE_RING_STALE_GENERATION:
      return "stale generation";
    case GPUSHARE_RING_NOT_HELD:
      return "slot not held";
    case GPUSHARE_RING_STALE_SEQUENCE:
      return "sequence went backwards";
  }
  return "unknown";
}

const gchar *
gpushare_slot_state_to_string (GpuShareSlotState state)
{
  switch (state) {
    case GPUSHARE_SLOT_FREE:
      return "free";
    case GPUSHARE_SLOT_WRITING:
      return "writing";
    case GPUSHARE_SLOT_READY:
      return "ready";
    case GPUSHARE_SLOT_HELD:
      return "held";
    case GPUSHARE_SLOT_QUARANTINED:
      return "quarantined";
  }
  return "unknown";
}

void
gpushare_slot_view_init (GpuShareSlotView * view, guint n_slots, guint64 epoch)
{
  g_return_if_fail (n_slots >= 1 && n_slots <= GPUSHARE_MAX_SLOTS);

  memset (view, 0, sizeof (*view));
  view->epoch = epoch;
  view->n_slots = n_slots;
}

GpuShareRingResult
gpushare_slot_view_frame (GpuShareSlotView * view, guint64 epoch, guint slot,
    guint32 generation, guint64 sequence)
{
  if (epoch != view->epoch)
    return GPUSHARE_RING_STALE_EPOCH;
  if (slot >= view->n_slots)
    return GPUSHARE_RING_BAD_SLOT;
  /* the producer reused a slot we still read from: never accept that */
  if (view->held[slot])
    return GPUSHARE_RING_BAD_STATE;
  /* 0 is "no frame seen in this slot yet", not a generation: a consumer
   * that connects late must take whatever the producer's counter has
   * reached, even 2^31 or more past 0 */
  if (generation == 0 || (view->generation[slot] != 0
          && !generation_newer (generation, view->generation[slot])))
    return GPUSHARE_RING_STALE_GENERATION;
  if (view->have_sequence && sequence <= view->last_sequence)
    return GPUSHARE_RING_STALE_SEQUENCE;

  view->generation[slot] = generation;
  view->held[slot] = TRUE;
  view->last_sequence = sequence;
  view->have_sequence = TRUE;
  return GPUSHARE_RING_OK;
}

GpuShareRingResult
gpushare_slot_view_release (GpuShareSlotView * view, guint slot,
    guint32 generation)
{
  if (slot >= view->n_slots)
    return GPUSHARE_RING_BAD_SLOT;
  if (!view->held[slot] || view->generation[slot] != generation)
    return GPUSHARE_RING_NOT_HELD;
  view->held[slot] = FALSE;
  return GPUSHARE_RING_OK;
}
