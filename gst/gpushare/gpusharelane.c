/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A frame lane: see gpusharelane.h and docs/protocol.md, "Frame lane".
 *
 * The words of the header are read and written whole with the compiler's
 * atomics: head with release (the producer, after the entry) and acquire
 * (the consumer, before it), tail the other way round, and a full barrier
 * on each side between its own store and its look at the other's
 * (waiting, head) so that a reader that goes to sleep is always seen by
 * the writer that follows, or sees its entry.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define _GNU_SOURCE
#include "gpusharelane.h"
#include "gpusharetiming.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

struct _GpuShareLane
{
  guint8 *base;
  gsize size;
  guint32 n_entries;
  gint fd;                      /* the producer's; -1 in the consumer */
  /* our own index: the producer's head, the consumer's tail; the copy in
   * the shared memory is for the peer, never read back.  rindex: of the
   * releases, the consumer's rhead or the producer's rtail */
  guint64 index;
  guint64 rindex;
  /* the peer's index of the same ring, as last read: it only grows, and
   * never past ours (the producer's tail, the consumer's rtail) */
  guint64 peer;
  guint64 rpeer;
  /* the consumer's heads-up (gpushare_lane_set_heads_up ()): the longest
   * it spins for one entry (0: never) and what is left of that for the
   * next one; entries to read before it spins again, and how many a miss
   * sets that to */
  gint64 spin_max_us;
  gint64 spin_left_us;
  guint spin_skip;
  guint spin_penalty;
  /* the meta region (since minor 9): meta_size bytes after the releases
   * (0: none).  meta_head: the producer's position in its bytes as
   * written (the next metas go there or, not to wrap, at the region's next
   * start), and meta_end[] where it was once each entry was written, so
   * that an entry read frees what came before; the consumer's meta_head
   * is where the last metas read ended */
  guint8 *meta_base;
  guint32 meta_size;
  guint64 meta_head;
  guint64 *meta_end;
  /* what the peer has read of ours, for the heartbeat: when we wrote each
   * item still in the lane (the producer's entries, the consumer's
   * releases), and when we wrote the newest one the peer has read (0:
   * none yet) */
  gint64 *wrote_us;
  gint64 heard_us;
};

static guint64 *
word64 (GpuShareLane * lane, gsize offset)
{
  return (guint64 *) (lane->base + offset);
}

static guint32 *
word32 (GpuShareLane * lane, gsize offset)
{
  return (guint32 *) (lane->base + offset);
}

static guint8 *
entry_at (GpuShareLane * lane, guint64 index)
{
  return lane->base + GPUSHARE_LANE_HEADER_SIZE +
      (index & (lane->n_entries - 1)) * GPUSHARE_LANE_ENTRY_SIZE;
}

const gchar *
gpushare_lane_result_to_string (GpuShareLaneResult res)
{
  switch (res) {
    case GPUSHARE_LANE_OK:
      return "ok";
    case GPUSHARE_LANE_EMPTY:
      return "empty";
    case GPUSHARE_LANE_FULL:
      return "the reader left every entry of the lane unread";
    case GPUSHARE_LANE_BAD_INDEX:
      return "the peer's index of the lane cannot be";
    case GPUSHARE_LANE_BAD_ENTRY:
      return "an entry of the lane that does not parse or is out of place";
    case GPUSHARE_LANE_NO_ROOM:
      return "no room in the lane's meta region";
    case GPUSHARE_LANE_BAD_METAS:
      return "a frame's metas outside the lane's meta region, or not after "
          "the last ones";
  }
  return "unknown";
}

static gboolean
map (GpuShareLane * lane, gint fd, GError ** error)
{
  lane->base = mmap (NULL, lane->size, PROT_READ | PROT_WRITE, MAP_SHARED,
      fd, 0);
  if (lane->base == MAP_FAILED) {
    gint err = errno;

    lane->base = NULL;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
        "could not map the frame lane: %s", g_strerror (err));
    return FALSE;
  }
  if (lane->meta_size)
    lane->meta_base = lane->base + gpushare_lane_size (lane->n_entries);
  return TRUE;
}

GpuShareLane *
gpushare_lane_new (guint32 n_entries, guint32 meta_size, GError ** error)
{
  GpuShareLane *lane;
  gint fd, err;

  g_return_val_if_fail (n_entries >= GPUSHARE_LANE_MIN_ENTRIES
      && n_entries <= GPUSHARE_LANE_MAX_ENTRIES
      && (n_entries & (n_entries - 1)) == 0, NULL);
  g_return_val_if_fail (meta_size == 0
      || (meta_size >= GPUSHARE_LANE_MIN_META_REGION
          && meta_size <= GPUSHARE_LANE_MAX_META_REGION
          && meta_size % GPUSHARE_LANE_META_ALIGN == 0), NULL);

  lane = g_new0 (GpuShareLane, 1);
  lane->n_entries = n_entries;
  lane->meta_size = meta_size;
  lane->wrote_us = g_new0 (gint64, n_entries);
  if (meta_size)
    lane->meta_end = g_new0 (guint64, n_entries);
  /* the region's pages are the kernel's until metas are written there */
  lane->size = gpushare_lane_size (n_entries) + meta_size;
  lane->fd = -1;
  fd = memfd_create ("gpushare-lane", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    goto failed;
  lane->fd = fd;
  if (ftruncate (fd, lane->size) < 0
      || fcntl (fd, F_ADD_SEALS, REQUIRED_SEALS | F_SEAL_SEAL) < 0)
    goto failed;
  if (!map (lane, fd, error)) {
    gpushare_lane_free (lane);
    return NULL;
  }
  return lane;

failed:
  err = errno;
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
      "could not make a frame lane: %s", g_strerror (err));
  gpushare_lane_free (lane);
  return NULL;
}

void
gpushare_lane_get_info (GpuShareLane * lane, GpuShareLaneInfo * info)
{
  info->n_entries = lane->n_entries;
  info->entry_size = GPUSHARE_LANE_ENTRY_SIZE;
  info->size = lane->size;
  info->meta_size = lane->meta_size;
}

gint
gpushare_lane_dup_fd (GpuShareLane * lane, GError ** error)
{
  gint fd;

  g_return_val_if_fail (lane->fd >= 0, -1);

  fd = fcntl (lane->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    gint err = errno;

    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
        "could not duplicate the frame lane's fd: %s", g_strerror (err));
  }
  return fd;
}

static void
futex_wake (guint32 * word)
{
  syscall (SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void
gpushare_lane_ring (GpuShareLane * lane)
{
  guint32 *bell = word32 (lane, GPUSHARE_LANE_BELL_OFFSET);

  __atomic_fetch_add (bell, 1, __ATOMIC_SEQ_CST);
  futex_wake (bell);
}

/* producer: metas into the region, e pointing at them; FALSE: no room.
 * What entries before tail pointed at is free. */
static gboolean
put_metas (GpuShareLane * lane, guint64 tail, GpuShareLaneEntry * e,
    const GpuShareFrameMetas * m)
{
  guint64 freed = tail > 0 ?
      lane->meta_end[(tail - 1) & (lane->n_entries - 1)] : 0;
  guint64 at = lane->meta_head;
  gsize off;

  if (!lane->meta_size || m->data_len > GPUSHARE_LANE_MAX_META_LEN
      || m->data_len > lane->meta_size)
    return FALSE;
  /* never across the region's end: on from its start */
  off = at % lane->meta_size;
  if (off + m->data_len > lane->meta_size)
    at += lane->meta_size - off;
  if (at + m->data_len - freed > lane->meta_size)
    return FALSE;
  memcpy (lane->meta_base + at % lane->meta_size, m->data, m->data_len);
  e->meta_at = at;
  e->meta_len = m->data_len;
  e->meta_entries = m->n_entries;
  return TRUE;
}

/* the peer has read up to read (a valid index, at most written): the
 * newest item it read, read - 1, was written when wrote_us says, while
 * its place holds no later item (written - (read - 1) <= n_entries, looked
 * at before the next write) */
static void
note_read (GpuShareLane * lane, guint64 read, guint64 last_look,
    guint64 written)
{
  if (read > last_look && read > 0 && written - read < lane->n_entries)
    lane->heard_us = MAX (lane->heard_us,
        lane->wrote_us[(read - 1) & (lane->n_entries - 1)]);
}

gint64
gpushare_lane_heard_us (GpuShareLane * lane)
{
  return lane->heard_us;
}

GpuShareLaneResult
gpushare_lane_push (GpuShareLane * lane, GpuShareLaneEntry * e,
    const GpuShareFrameMetas * metas)
{
  guint64 tail = __atomic_load_n (word64 (lane, GPUSHARE_LANE_TAIL_OFFSET),
      __ATOMIC_ACQUIRE);
  guint64 unread = lane->index - tail;

  /* a reader that read what was never written, or went back */
  if (tail > lane->index || tail < lane->peer || unread > lane->n_entries)
    return GPUSHARE_LANE_BAD_INDEX;
  note_read (lane, tail, lane->peer, lane->index);
  lane->peer = tail;
  if (unread == lane->n_entries)
    return GPUSHARE_LANE_FULL;
  e->index = lane->index;
  e->meta_at = 0;
  e->meta_len = e->meta_entries = 0;
  if (metas && metas->data_len > 0 && !put_metas (lane, tail, e, metas))
    return GPUSHARE_LANE_NO_ROOM;
  if (!gpushare_lane_entry_build (e, entry_at (lane, lane->index)))
    return GPUSHARE_LANE_BAD_ENTRY;
  if (lane->meta_size) {
    /* the next ones start 8-byte aligned */
    if (e->meta_len)
      lane->meta_head = e->meta_at + ((e->meta_len + 7) & ~(guint64) 7);
    lane->meta_end[lane->index & (lane->n_entries - 1)] = lane->meta_head;
  }
  lane->wrote_us[lane->index & (lane->n_entries - 1)] = g_get_monotonic_time ();
  lane->index++;
  __atomic_store_n (word64 (lane, GPUSHARE_LANE_HEAD_OFFSET), lane->index,
      __ATOMIC_RELEASE);
  /* against the reader's store of waiting and its second look at head */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  if (__atomic_load_n (word32 (lane, GPUSHARE_LANE_WAITING_OFFSET),
          __ATOMIC_RELAXED))
    gpushare_lane_ring (lane);
  return GPUSHARE_LANE_OK;
}

void
gpushare_lane_announce (GpuShareLane * lane)
{
  __atomic_store_n (word64 (lane, GPUSHARE_LANE_ANNOUNCED_OFFSET),
      lane->index + 1, __ATOMIC_RELAXED);
  /* against the reader's store of waiting and its look at announced; a
   * reader that would not poll for it now sleeps on until the entry */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  if (__atomic_load_n (word32 (lane, GPUSHARE_LANE_WAITING_OFFSET),
          __ATOMIC_RELAXED) == GPUSHARE_LANE_WAITING_ANY)
    gpushare_lane_ring (lane);
}

GpuShareLane *
gpushare_lane_open (gint fd, const GpuShareLaneInfo * info, GError ** error)
{
  GpuShareLane *lane = NULL;
  struct stat st;
  gint seals;
  const gchar *why = NULL;

  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    why = "not a file";
  else if ((seals = fcntl (fd, F_GET_SEALS)) < 0)
    why = "not a memfd";
  else if ((seals & REQUIRED_SEALS) != REQUIRED_SEALS)
    why = "not sealed against shrinking and growing";
  else if ((guint64) st.st_size != info->size)
    why = "not of the size LANE said";
  if (why) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "the producer's frame lane is %s", why);
    close (fd);
    return NULL;
  }
  lane = g_new0 (GpuShareLane, 1);
  lane->n_entries = info->n_entries;
  lane->meta_size = info->meta_size;
  lane->size = info->size;
  lane->fd = -1;
  lane->wrote_us = g_new0 (gint64, info->n_entries);
  if (!map (lane, fd, error)) {
    g_free (lane->wrote_us);
    g_free (lane);
    lane = NULL;
  }
  close (fd);
  return lane;
}

/* consumer: the metas e points at, where they may be, copied out */
static GpuShareLaneResult
take_metas (GpuShareLane * lane, const GpuShareLaneEntry * e,
    GpuShareFrameMetas ** metas)
{
  GpuShareFrameMetas *m;
  gsize off;

  /* the parser bounded meta_len; the place is ours to judge: after the
   * last metas, by less than a lap (what is skipped not to wrap), and
   * inside the region */
  if (!lane->meta_size || e->meta_at < lane->meta_head
      || e->meta_at - lane->meta_head >= lane->meta_size
      || e->meta_len > lane->meta_size)
    return GPUSHARE_LANE_BAD_METAS;
  off = e->meta_at % lane->meta_size;
  if (off + e->meta_len > lane->meta_size)
    return GPUSHARE_LANE_BAD_METAS;
  lane->meta_head = e->meta_at + e->meta_len;
  if (!metas)
    return GPUSHARE_LANE_OK;
  m = gpushare_frame_metas_new (e->meta_len);
  memcpy (m->data, lane->meta_base + off, e->meta_len);
  m->data_len = e->meta_len;
  m->n_entries = e->meta_entries;
  *metas = m;
  return GPUSHARE_LANE_OK;
}

GpuShareLaneResult
gpushare_lane_pop (GpuShareLane * lane, GpuShareLaneEntry * e,
    GpuShareFrameMetas ** metas)
{
  GpuShareLaneResult res;
  guint8 copy[GPUSHARE_LANE_ENTRY_SIZE];
  guint64 head = __atomic_load_n (word64 (lane, GPUSHARE_LANE_HEAD_OFFSET),
      __ATOMIC_ACQUIRE);
  guint64 unread = head - lane->index;

  if (metas)
    *metas = NULL;
  if (unread == 0)
    return GPUSHARE_LANE_EMPTY;
  if (unread > lane->n_entries)
    return GPUSHARE_LANE_BAD_INDEX;
  /* copied first: the producer may write what it likes meanwhile, what is
   * checked is what is used */
  memcpy (copy, entry_at (lane, lane->index), sizeof (copy));
  if (gpushare_lane_entry_parse (copy, e) != GPUSHARE_PARSE_OK
      || e->index != lane->index)
    return GPUSHARE_LANE_BAD_ENTRY;
  if (e->kind == GPUSHARE_LANE_ENTRY_FRAME && e->meta_len
      && (res = take_metas (lane, e, metas)) != GPUSHARE_LANE_OK)
    return res;
  lane->index++;
  __atomic_store_n (word64 (lane, GPUSHARE_LANE_TAIL_OFFSET), lane->index,
      __ATOMIC_RELEASE);
  lane->spin_left_us = lane->spin_max_us;
  if (lane->spin_skip > 0)
    lane->spin_skip--;
  return GPUSHARE_LANE_OK;
}

guint32
gpushare_lane_bell (GpuShareLane * lane)
{
  return __atomic_load_n (word32 (lane, GPUSHARE_LANE_BELL_OFFSET),
      __ATOMIC_SEQ_CST);
}

/* consumer: the producer announced the entry we read next, and we may
 * spin for it */
static gboolean
spin_due (GpuShareLane * lane)
{
  return lane->spin_left_us > 0 && lane->spin_skip == 0
      && __atomic_load_n (word64 (lane, GPUSHARE_LANE_ANNOUNCED_OFFSET),
      __ATOMIC_RELAXED) == lane->index + 1;
}

void
gpushare_lane_set_heads_up (GpuShareLane * lane, gint64 spin_max_us)
{
  lane->spin_max_us = lane->spin_left_us = MAX (spin_max_us, 0);
  lane->spin_skip = lane->spin_penalty = 0;
}

/* polls head and the bell from now until until_us: HIT, RUNG or MISSED;
 * *spun_us at least 1 */
static GpuShareLaneSpin
poll_head (GpuShareLane * lane, guint32 bell, gint64 start, gint64 until_us,
    gint64 * spun_us)
{
  const guint64 *head = word64 (lane, GPUSHARE_LANE_HEAD_OFFSET);
  const guint32 *bellw = word32 (lane, GPUSHARE_LANE_BELL_OFFSET);
  GpuShareLaneSpin res = GPUSHARE_LANE_SPIN_MISSED;
  gint64 now = start, yield_at = start + GPUSHARE_POLL_YIELD_US;

  while (now < until_us) {
    if (__atomic_load_n (head, __ATOMIC_ACQUIRE) != lane->index) {
      res = GPUSHARE_LANE_SPIN_HIT;
      break;
    }
    /* anything else for the reader (a flush, a message): it looks */
    if (__atomic_load_n (bellw, __ATOMIC_RELAXED) != bell) {
      res = GPUSHARE_LANE_SPIN_RUNG;
      break;
    }
    gpushare_cpu_relax ();
    now = g_get_monotonic_time ();
    /* a thread that woke up on this CPU (the producer's, on a small host)
     * runs now rather than after our time slice */
    if (now >= yield_at) {
      sched_yield ();
      yield_at = now + GPUSHARE_POLL_YIELD_US;
    }
  }
  /* a ring at the first look costs a microsecond all the same, so that
   * rings alone also use a budget up */
  *spun_us = MAX (g_get_monotonic_time () - start, 1);
  return res;
}

GpuShareLaneSpin
gpushare_lane_poll (GpuShareLane * lane, guint32 bell, gint64 until_us,
    gint64 * polled_us)
{
  gint64 start = g_get_monotonic_time ();

  *polled_us = 0;
  if (start >= until_us)
    return GPUSHARE_LANE_SPIN_NONE;
  return poll_head (lane, bell, start, until_us, polled_us);
}

GpuShareLaneSpin
gpushare_lane_spin (GpuShareLane * lane, guint32 bell, gint64 * spun_us)
{
  GpuShareLaneSpin res;
  gint64 start;

  *spun_us = 0;
  if (!spin_due (lane))
    return GPUSHARE_LANE_SPIN_NONE;
  start = g_get_monotonic_time ();
  res = poll_head (lane, bell, start, start + lane->spin_left_us, spun_us);
  /* one entry's spins, however often the bell rings, add up to
   * spin_max_us at most */
  lane->spin_left_us -= *spun_us;
  if (res == GPUSHARE_LANE_SPIN_HIT && *spun_us <= lane->spin_max_us / 2) {
    lane->spin_penalty = 0;
  } else if (res != GPUSHARE_LANE_SPIN_RUNG) {
    /* the entry did not come in time, or only after half the budget: spin
     * again only after as many entries as this makes, the one waited for
     * included (1, 2, 4 .. GPUSHARE_LANE_SPIN_MAX_SKIP in a row), so that
     * a producer whose writes take longer, or one that announces and
     * never writes or writes late, costs a spin now and then */
    lane->spin_penalty = CLAMP (lane->spin_penalty * 2, 1,
        GPUSHARE_LANE_SPIN_MAX_SKIP);
    lane->spin_skip = lane->spin_penalty;
    if (res == GPUSHARE_LANE_SPIN_MISSED)
      lane->spin_left_us = lane->spin_max_us;
  }
  return res;
}

gboolean
gpushare_lane_sleep (GpuShareLane * lane, guint32 bell, gint64 timeout_us)
{
  guint32 *waiting = word32 (lane, GPUSHARE_LANE_WAITING_OFFSET);
  struct timespec ts, *tsp = NULL;
  gboolean woken = TRUE;

  /* an announcement wakes us only if we would poll for the entry: not
   * while polls are skipped, nor once this entry's budget is spent (both
   * stay as they are until an entry is read) */
  __atomic_store_n (waiting, lane->spin_left_us > 0 && lane->spin_skip == 0 ?
      GPUSHARE_LANE_WAITING_ANY : GPUSHARE_LANE_WAITING_ENTRIES,
      __ATOMIC_RELAXED);
  /* against the writer's store of head (or announced) and its look at
   * waiting */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  if (__atomic_load_n (word64 (lane, GPUSHARE_LANE_HEAD_OFFSET),
          __ATOMIC_RELAXED) == lane->index && !spin_due (lane)) {
    if (timeout_us >= 0) {
      ts.tv_sec = timeout_us / G_USEC_PER_SEC;
      ts.tv_nsec = (timeout_us % G_USEC_PER_SEC) * 1000;
      tsp = &ts;
    }
    if (syscall (SYS_futex, word32 (lane, GPUSHARE_LANE_BELL_OFFSET),
            FUTEX_WAIT, bell, tsp, NULL, 0) < 0 && errno == ETIMEDOUT)
      woken = FALSE;
  }
  __atomic_store_n (waiting, 0, __ATOMIC_RELAXED);
  return woken;
}

static guint8 *
release_at (GpuShareLane * lane, guint64 index)
{
  return lane->base + GPUSHARE_LANE_HEADER_SIZE +
      (gsize) lane->n_entries * GPUSHARE_LANE_ENTRY_SIZE +
      (index & (lane->n_entries - 1)) * GPUSHARE_LANE_RELEASE_SIZE;
}

GpuShareLaneResult
gpushare_lane_release_push (GpuShareLane * lane, const GpuShareRelease * r,
    gboolean * kick)
{
  guint64 rtail = __atomic_load_n (word64 (lane, GPUSHARE_LANE_RTAIL_OFFSET),
      __ATOMIC_ACQUIRE);
  guint64 unread = lane->rindex - rtail;

  *kick = FALSE;
  if (rtail > lane->rindex || rtail < lane->rpeer)
    return GPUSHARE_LANE_BAD_INDEX;
  note_read (lane, rtail, lane->rpeer, lane->rindex);
  lane->rpeer = rtail;
  /* an rtail that cannot be is the producer's business: we only stop
   * writing here, the socket takes the releases */
  if (unread >= lane->n_entries)
    return unread == lane->n_entries ? GPUSHARE_LANE_FULL :
        GPUSHARE_LANE_BAD_INDEX;
  gpushare_lane_release_build (lane->rindex, r, release_at (lane,
          lane->rindex));
  lane->wrote_us[lane->rindex & (lane->n_entries - 1)] =
      g_get_monotonic_time ();
  lane->rindex++;
  __atomic_store_n (word64 (lane, GPUSHARE_LANE_RHEAD_OFFSET), lane->rindex,
      __ATOMIC_RELEASE);
  /* against the producer's store of rwaiting and its second look */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  *kick = __atomic_load_n (word32 (lane, GPUSHARE_LANE_RWAITING_OFFSET),
      __ATOMIC_RELAXED) != 0;
  return GPUSHARE_LANE_OK;
}

GpuShareLaneResult
gpushare_lane_release_pop (GpuShareLane * lane, GpuShareRelease * r)
{
  guint8 copy[GPUSHARE_LANE_RELEASE_SIZE];
  guint64 rhead = __atomic_load_n (word64 (lane, GPUSHARE_LANE_RHEAD_OFFSET),
      __ATOMIC_ACQUIRE);
  guint64 unread = rhead - lane->rindex, index;

  if (unread == 0)
    return GPUSHARE_LANE_EMPTY;
  if (unread > lane->n_entries)
    return GPUSHARE_LANE_BAD_INDEX;
  memcpy (copy, release_at (lane, lane->rindex), sizeof (copy));
  gpushare_lane_release_parse (copy, &index, r);
  if (index != lane->rindex)
    return GPUSHARE_LANE_BAD_ENTRY;
  lane->rindex++;
  __atomic_store_n (word64 (lane, GPUSHARE_LANE_RTAIL_OFFSET), lane->rindex,
      __ATOMIC_RELEASE);
  return GPUSHARE_LANE_OK;
}

void
gpushare_lane_release_waiting (GpuShareLane * lane, gboolean waiting)
{
  __atomic_store_n (word32 (lane, GPUSHARE_LANE_RWAITING_OFFSET),
      waiting ? 1 : 0, __ATOMIC_RELAXED);
  /* against the consumer's store of rhead and its look at rwaiting */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
}

void
gpushare_lane_free (GpuShareLane * lane)
{
  if (!lane)
    return;
  if (lane->base)
    munmap (lane->base, lane->size);
  if (lane->fd >= 0)
    close (lane->fd);
  g_free (lane->meta_end);
  g_free (lane->wrote_us);
  g_free (lane);
}
