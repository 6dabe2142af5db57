/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writes the seed corpus of the codec fuzz target (format: fuzz_proto.h):
 *
 *   make-corpus DIR
 *
 * One seed-* file per message type and variant, built by the codec's own
 * builder: small and maximal values, every memory type and sync mode of
 * SLOTS with and without fds and handles, every string at its cap; whole
 * sessions read at once, byte by byte and in odd pieces; then a few
 * broken ones (truncated, bad magic or version, over a cap, wrong fd
 * counts, bad UTF-8, garbage), patched at the offsets docs/protocol.md
 * gives.  Every type of the codec's table gets a seed: one that none of
 * those names gets its message with an all-zero body (write_every_type ()),
 * so that a new type is seeded before it has seeds of its own.
 *
 * The seed-* files already in DIR are removed first, so that a seed no
 * longer written leaves the corpus; every other file stays.
 * tests/fuzz/corpus/proto/ holds these files and what the fuzzer added
 * to them (run-fuzzer.sh -u); when the protocol changes, one command
 * writes its seeds again:
 *
 *   ninja -C build fuzz-corpus
 */

#include "fuzz_proto.h"

#include <stdlib.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/video/video.h>

#include "gpushareframemeta.h"

static const gchar *out_dir;
/* the types some seed holds a message of */
static gboolean seeded[GPUSHARE_MSG_LAST + 1];

/* offsets within a message, from docs/protocol.md */
#define HDR_MAGIC 0
#define HDR_VERSION_MAJOR 4
#define HDR_VERSION_MINOR 6
#define HDR_TYPE 8
#define HDR_FLAGS 10
#define HDR_PAYLOAD_LEN 12
#define HDR_N_FDS 16
#define HDR_RESERVED 20
#define P(off) (GPUSHARE_HEADER_SIZE + (off))
#define ANNOUNCE_NAME_LEN P (20)
#define ANNOUNCE_CAPS_LEN P (40 + 80)
#define ANNOUNCE_NAME P (160)
#define SLOTS_N_HANDLES P (40)
#define ERROR_TEXT P (8)
#define LANE_N_ENTRIES P (0)

static void
put16 (GByteArray * s, gsize off, guint16 v)
{
  g_assert (off + 2 <= s->len);
  s->data[off] = v & 0xff;
  s->data[off + 1] = v >> 8;
}

static void
put32 (GByteArray * s, gsize off, guint32 v)
{
  guint i;

  g_assert (off + 4 <= s->len);
  for (i = 0; i < 4; i++)
    s->data[off + i] = (v >> (8 * i)) & 0xff;
}

/* a new input: fds that arrive with the first read, bytes per read */
static GByteArray *
start (guint8 n_fds, guint8 per_read)
{
  GByteArray *s = g_byte_array_new ();
  guint8 prefix[FUZZ_PREFIX_SIZE] = { n_fds, per_read };

  g_byte_array_append (s, prefix, sizeof (prefix));
  return s;
}

static void
add (GByteArray * s, const GpuShareMsg * msg, guint32 n_fds)
{
  if (!gpushare_msg_build (msg, n_fds, s))
    g_error ("the builder refuses seed message %s",
        gpushare_msg_type_to_string (msg->type));
  seeded[msg->type] = TRUE;
}

static void
save (const gchar * name, GByteArray * s)
{
  g_autoptr (GError) error = NULL;
  g_autofree gchar *fname = g_strconcat ("seed-", name, NULL);
  g_autofree gchar *path = g_build_filename (out_dir, fname, NULL);

  if (!g_file_set_contents (path, (const gchar *) s->data, s->len, &error))
    g_error ("%s", error->message);
  g_byte_array_unref (s);
}

/* one message alone, read at once */
static void
save_one (const gchar * name, const GpuShareMsg * msg, guint32 n_fds)
{
  GByteArray *s = start (n_fds, 0);

  add (s, msg, n_fds);
  save (name, s);
}

/* exactly len bytes of valid UTF-8 with 1- to 4-byte sequences */
static void
fill_utf8 (gchar * dst, gsize len)
{
  static const gchar *const seqs[] = { "g", "\xc3\xa9", "\xe2\x82\xac",
    "\xf0\x9f\x8e\xa5", "=",
  };
  gsize pos = 0;
  guint i = 0;

  while (pos < len) {
    const gchar *seq = seqs[i++ % G_N_ELEMENTS (seqs)];
    gsize n = strlen (seq);

    if (n > len - pos) {
      seq = "x";
      n = 1;
    }
    memcpy (dst + pos, seq, n);
    pos += n;
  }
  dst[len] = '\0';
}

static void
set_string (gchar * dst, guint32 * len, const gchar * s)
{
  *len = strlen (s);
  memcpy (dst, s, *len + 1);
}

static void
layout_small (GpuShareLayout * l, guint32 n_slots)
{
  l->epoch = 1;
  l->frame_size = 1920 * 1080 * 3 / 2;
  l->slot_size = 4 * 1024 * 1024;
  l->n_slots = n_slots;
  l->n_planes = 2;
  l->offsets[1] = 1920 * 1080;
  l->strides[0] = 1920;
  l->strides[1] = 1920;
  if (!gpushare_layout_set_caps (l, "video/x-raw,format=NV12,width=1920,"
          "height=1080,framerate=30/1"))
    g_assert_not_reached ();
}

static void
layout_max (GpuShareLayout * l)
{
  l->epoch = G_MAXUINT64;
  l->frame_size = GPUSHARE_MAX_SLOT_SIZE;
  l->slot_size = GPUSHARE_MAX_SLOT_SIZE;
  l->n_slots = GPUSHARE_MAX_SLOTS;
  l->n_planes = GPUSHARE_MAX_PLANES;
  l->offsets[1] = 1;
  l->offsets[2] = GPUSHARE_MAX_SLOT_SIZE / 2;
  l->offsets[3] = GPUSHARE_MAX_SLOT_SIZE - 1;
  l->strides[0] = G_MININT32;
  l->strides[1] = -1;
  l->strides[3] = G_MAXINT32;
  fill_utf8 (l->caps, GPUSHARE_MAX_CAPS_LEN);
  l->caps_len = GPUSHARE_MAX_CAPS_LEN;
}

static void
init (GpuShareMsg * msg, GpuShareMsgType type)
{
  memset (msg, 0, sizeof (*msg));
  msg->type = type;
}

static void
announce (GpuShareMsg * msg, guint variant)
{
  GpuShareAnnounce *a = &msg->u.announce;
  guint i;

  init (msg, GPUSHARE_MSG_ANNOUNCE);
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->mem_types = GPUSHARE_MEM_SYSTEM;
  a->pid = 1234;
  a->uid = 1000;
  a->instance = G_GUINT64_CONSTANT (0x0123456789abcdef);
  a->latency = 33333333;
  layout_small (&a->layout, 4);
  set_string (a->name, &a->name_len, "gpusharesink0");
  if (variant >= 1) {
    a->mem_types |= GPUSHARE_MEM_CUDA_VMM | GPUSHARE_MEM_CUDA_LEGACY |
        GPUSHARE_MEM_CUDA_FABRIC;
    for (i = 0; i < 16; i++)
      a->device.uuid[i] = 0xa0 + i;
    a->device.caps = GPUSHARE_DEVICE_CAP_VMM_FD | GPUSHARE_DEVICE_CAP_FABRIC |
        GPUSHARE_DEVICE_CAP_IPC_EVENT | GPUSHARE_DEVICE_CAP_MEM_OPS |
        GPUSHARE_DEVICE_CAP_LEGACY_IPC;
    a->device.sync_modes = GPUSHARE_SYNC_KNOWN_MASK;
  }
  if (variant >= 2) {
    a->schema_minor = G_MAXUINT16;
    a->mem_types = G_MAXUINT32;
    a->flags = G_MAXUINT32;
    a->pid = G_MAXUINT32;
    a->uid = G_MAXUINT32;
    a->instance = G_MAXUINT64;
    a->latency = G_MAXUINT64;
    layout_max (&a->layout);
    a->device.caps = G_MAXUINT32;
    a->device.sync_modes = G_MAXUINT32;
    a->device.compute_mode = G_MININT32;
    fill_utf8 (a->name, GPUSHARE_MAX_NAME_LEN);
    a->name_len = GPUSHARE_MAX_NAME_LEN;
  }
}

static void
accept_msg (GpuShareMsg * msg, guint32 mem_type, guint32 sync_mode,
    gboolean max)
{
  GpuShareAccept *a = &msg->u.accept;
  guint i;

  init (msg, GPUSHARE_MSG_ACCEPT);
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->mem_type = mem_type;
  a->sync_mode = sync_mode;
  a->pid = 4321;
  a->instance = G_GUINT64_CONSTANT (0x0123456789abcdef);
  if (mem_type != GPUSHARE_MEM_SYSTEM) {
    for (i = 0; i < 16; i++)
      a->uuid[i] = 0xa0 + i;
  }
  set_string (a->name, &a->name_len, "gpusharesrc0");
  set_string (a->reason, &a->reason_len, "same GPU");
  if (max) {
    a->schema_minor = G_MAXUINT16;
    a->flags = G_MAXUINT32;
    a->pid = G_MAXUINT32;
    a->instance = G_MAXUINT64;
    fill_utf8 (a->name, GPUSHARE_MAX_NAME_LEN);
    a->name_len = GPUSHARE_MAX_NAME_LEN;
    fill_utf8 (a->reason, GPUSHARE_MAX_REASON_LEN);
    a->reason_len = GPUSHARE_MAX_REASON_LEN;
  }
}

/* a valid SLOTS and the fds it needs, as docs/protocol.md counts them */
static guint32
slots (GpuShareMsg * msg, guint32 mem_type, guint32 sync_mode, guint32 n_slots)
{
  GpuShareSlots *s = &msg->u.slots;
  gboolean in_handles = mem_type == GPUSHARE_MEM_CUDA_LEGACY ||
      mem_type == GPUSHARE_MEM_CUDA_FABRIC;
  guint i, j;

  init (msg, GPUSHARE_MSG_SLOTS);
  s->epoch = n_slots == GPUSHARE_MAX_SLOTS ? G_MAXUINT64 : 1;
  s->slot_size = n_slots == GPUSHARE_MAX_SLOTS ? GPUSHARE_MAX_SLOT_SIZE :
      4 * 1024 * 1024;
  s->n_slots = n_slots;
  s->mem_type = mem_type;
  s->sync_mode = sync_mode;
  if (sync_mode == GPUSHARE_SYNC_SEMAPHORE) {
    s->n_sync_fds = 1;
    s->sync_size = 16 * n_slots;
  }
  s->n_handles = (in_handles ? n_slots : 0) +
      (sync_mode == GPUSHARE_SYNC_EVENT ? 2 * n_slots : 0);
  for (i = 0; i < s->n_handles; i++) {
    for (j = 0; j < GPUSHARE_HANDLE_SIZE; j++)
      s->handles[i][j] = (i * GPUSHARE_HANDLE_SIZE + j) * 7 + 1;
  }
  return (in_handles ? 0 : n_slots) + s->n_sync_fds;
}

static void
frame (GpuShareMsg * msg, gboolean max)
{
  GpuShareFrame *f = &msg->u.frame;

  init (msg, GPUSHARE_MSG_FRAME);
  f->epoch = max ? G_MAXUINT64 : 1;
  f->slot = max ? G_MAXUINT32 : 2;
  f->generation = max ? G_MAXUINT32 : 3;
  f->sequence = max ? G_MAXUINT64 : 4;
  f->pts = max ? G_MAXUINT64 : 1000000000;
  f->dts = max ? G_MAXUINT64 : 1000000000;
  f->duration = max ? G_MAXUINT64 : 33333333;
  f->offset = max ? G_MAXUINT64 : 4;
  f->offset_end = max ? G_MAXUINT64 : 5;
  f->buffer_flags = max ? G_MAXUINT32 : 0;
  f->flags = max ? G_MAXUINT32 : GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME;
}

static void
release (GpuShareMsg * msg, gboolean max)
{
  GpuShareRelease *r = &msg->u.release;

  init (msg, GPUSHARE_MSG_RELEASE);
  r->epoch = max ? G_MAXUINT64 : 1;
  r->slot = max ? G_MAXUINT32 : 2;
  r->generation = max ? G_MAXUINT32 : 3;
  r->sequence = max ? G_MAXUINT64 : 4;
}

static void
caps (GpuShareMsg * msg, gboolean max)
{
  GpuShareCaps *c = &msg->u.caps;

  init (msg, GPUSHARE_MSG_CAPS);
  c->flags = max ? G_MAXUINT32 : GPUSHARE_STREAM_FLAG_LIVE;
  c->latency = max ? G_MAXUINT64 : 0;
  if (max)
    layout_max (&c->layout);
  else
    layout_small (&c->layout, 4);
}

static void
error_msg (GpuShareMsg * msg, gboolean max)
{
  GpuShareError *e = &msg->u.error;

  init (msg, GPUSHARE_MSG_ERROR);
  e->code = max ? G_MAXUINT32 : GPUSHARE_ERR_PROTOCOL;
  if (max) {
    fill_utf8 (e->text, GPUSHARE_MAX_TEXT_LEN);
    e->text_len = GPUSHARE_MAX_TEXT_LEN;
  } else {
    set_string (e->text, &e->text_len, "bad FRAME message");
  }
}

/* a valid LANE of n_entries entries; it carries one fd */
static void
lane (GpuShareMsg * msg, guint32 n_entries)
{
  init (msg, GPUSHARE_MSG_LANE);
  msg->u.lane.n_entries = n_entries;
  msg->u.lane.entry_size = GPUSHARE_LANE_ENTRY_SIZE;
  msg->u.lane.size = gpushare_lane_size (n_entries);
}

/* the small messages, each in its minimal and maximal form */
static void
write_simple (GpuShareMsg * msg)
{
  init (msg, GPUSHARE_MSG_MAPPED);
  save_one ("mapped", msg, 0);
  msg->u.mapped.epoch = G_MAXUINT64;
  save_one ("mapped-max", msg, 0);
  init (msg, GPUSHARE_MSG_UNMAPPED);
  msg->u.mapped.epoch = 1;
  save_one ("unmapped", msg, 0);

  frame (msg, FALSE);
  save_one ("frame", msg, 0);
  frame (msg, TRUE);
  save_one ("frame-max", msg, 0);
  /* minor 6: a leaky producer's FRAME, with the consumer's share */
  frame (msg, FALSE);
  msg->u.frame.share = 3;
  save_one ("frame-share", msg, 0);
  frame (msg, TRUE);
  msg->u.frame.share = G_MAXUINT32;
  save_one ("frame-share-max", msg, 0);

  release (msg, FALSE);
  save_one ("release", msg, 0);
  release (msg, TRUE);
  save_one ("release-max", msg, 0);

  caps (msg, FALSE);
  save_one ("caps", msg, 0);
  caps (msg, TRUE);
  save_one ("caps-max", msg, 0);

  init (msg, GPUSHARE_MSG_EOS);
  msg->u.eos.last_sequence = 41;
  save_one ("eos", msg, 0);
  msg->u.eos.last_sequence = G_MAXUINT64;
  save_one ("eos-max", msg, 0);

  init (msg, GPUSHARE_MSG_GOODBYE);
  msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  save_one ("goodbye", msg, 0);
  msg->u.goodbye.reason = G_MAXUINT32;
  save_one ("goodbye-max", msg, 0);
  /* minor 3: a consumer leaving while its buffers still read slots */
  msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  msg->u.goodbye.flags = GPUSHARE_GOODBYE_FLAG_HELD;
  msg->u.goodbye.last_sequence = 41;
  save_one ("goodbye-held", msg, 0);
  msg->u.goodbye.flags = G_MAXUINT32;
  msg->u.goodbye.last_sequence = G_MAXUINT64;
  save_one ("goodbye-held-max", msg, 0);

  error_msg (msg, FALSE);
  save_one ("error", msg, 0);
  error_msg (msg, TRUE);
  save_one ("error-max", msg, 0);
  init (msg, GPUSHARE_MSG_ERROR);
  save_one ("error-empty", msg, 0);

  /* the heartbeat: nothing but a header */
  init (msg, GPUSHARE_MSG_PING);
  save_one ("ping", msg, 0);

  /* NOTICE (minor 6): a consumer stalled, then every field at its
   * bound */
  init (msg, GPUSHARE_MSG_NOTICE);
  msg->u.notice.code = GPUSHARE_NOTICE_STALLED;
  msg->u.notice.share = 2;
  msg->u.notice.slots_held = 2;
  msg->u.notice.n_consumers = 4;
  msg->u.notice.skipped = 60;
  msg->u.notice.sequence = 1000;
  save_one ("notice", msg, 0);
  msg->u.notice.code = G_MAXUINT32;
  msg->u.notice.share = GPUSHARE_MAX_SLOTS;
  msg->u.notice.slots_held = GPUSHARE_MAX_SLOTS;
  msg->u.notice.n_consumers = GPUSHARE_MAX_HOLDERS_WIRE;
  msg->u.notice.skipped = G_MAXUINT64;
  msg->u.notice.sequence = G_MAXUINT64;
  save_one ("notice-max", msg, 0);

  /* LANE (minor 7): the smallest lane and the largest, each with its
   * memfd */
  lane (msg, GPUSHARE_LANE_MIN_ENTRIES);
  save_one ("lane", msg, 1);
  lane (msg, GPUSHARE_LANE_MAX_ENTRIES);
  save_one ("lane-max", msg, 1);
  /* and (minor 9) with the largest meta region */
  msg->u.lane.meta_size = GPUSHARE_LANE_MAX_META_REGION;
  msg->u.lane.size += GPUSHARE_LANE_MAX_META_REGION;
  save_one ("lane-metas", msg, 1);
}

static void
write_handshake (GpuShareMsg * msg)
{
  static const struct
  {
    const gchar *name;
    guint32 mem_type, sync_mode, n_slots;
  } s[] = {
    {"slots-system", GPUSHARE_MEM_SYSTEM, 0, 1},
    {"slots-system-max", GPUSHARE_MEM_SYSTEM, 0, GPUSHARE_MAX_SLOTS},
    {"slots-vmm-host", GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_HOST, 4},
    {"slots-vmm-semaphore", GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE,
        4},
    {"slots-vmm-semaphore-max", GPUSHARE_MEM_CUDA_VMM,
        GPUSHARE_SYNC_SEMAPHORE, GPUSHARE_MAX_SLOTS},
    {"slots-vmm-event", GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_EVENT, 4},
    {"slots-legacy-host", GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_SYNC_HOST, 3},
    {"slots-legacy-semaphore", GPUSHARE_MEM_CUDA_LEGACY,
        GPUSHARE_SYNC_SEMAPHORE, 3},
    {"slots-legacy-event", GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_SYNC_EVENT, 2},
    {"slots-fabric-event-max", GPUSHARE_MEM_CUDA_FABRIC,
        GPUSHARE_SYNC_EVENT, GPUSHARE_MAX_SLOTS},
  };
  guint i;

  announce (msg, 0);
  save_one ("announce-system", msg, 0);
  announce (msg, 1);
  save_one ("announce-cuda", msg, 0);
  announce (msg, 2);
  save_one ("announce-max", msg, 0);

  accept_msg (msg, GPUSHARE_MEM_SYSTEM, 0, FALSE);
  save_one ("accept-system", msg, 0);
  accept_msg (msg, GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE, FALSE);
  save_one ("accept-vmm-semaphore", msg, 0);
  accept_msg (msg, GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_SYNC_EVENT, TRUE);
  save_one ("accept-max", msg, 0);
  /* minor 7: a consumer that asks for a frame lane */
  accept_msg (msg, GPUSHARE_MEM_SYSTEM, 0, FALSE);
  msg->u.accept.schema_minor = GPUSHARE_MINOR_LANE;
  msg->u.accept.flags = GPUSHARE_ACCEPT_FLAG_LANE;
  save_one ("accept-lane", msg, 0);

  for (i = 0; i < G_N_ELEMENTS (s); i++) {
    guint32 n_fds = slots (msg, s[i].mem_type, s[i].sync_mode, s[i].n_slots);

    save_one (s[i].name, msg, n_fds);
  }
  /* minor 10: side memory, its fd last; a page a slot, and the most */
  {
    guint32 n_fds = slots (msg, GPUSHARE_MEM_SYSTEM, 0, 4);

    msg->u.slots.side_pages = 1;
    save_one ("slots-system-side", msg, n_fds + 1);
    n_fds = slots (msg, GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE,
        GPUSHARE_MAX_SLOTS);
    msg->u.slots.side_pages = GPUSHARE_MAX_SIDE_PAGES;
    save_one ("slots-vmm-semaphore-side-max", msg, n_fds + 1);
  }
  /* minor 12: the semaphore block's ready words in host memory, after it;
   * and every fd a SLOTS may carry */
  {
    guint32 n_fds = slots (msg, GPUSHARE_MEM_CUDA_VMM,
        GPUSHARE_SYNC_SEMAPHORE, 4);

    msg->u.slots.n_sync_fds = 2;
    save_one ("slots-vmm-semaphore-words", msg, n_fds + 1);
    n_fds = slots (msg, GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE,
        GPUSHARE_MAX_SLOTS);
    msg->u.slots.n_sync_fds = 2;
    msg->u.slots.side_pages = GPUSHARE_MAX_SIDE_PAGES;
    save_one ("slots-vmm-semaphore-words-side-max", msg, n_fds + 2);
  }
}

/* a whole system-memory session, then a CUDA one, in one stream */
static GByteArray *
session (guint8 per_read)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *s = start (2 + 5, per_read);
  guint32 n_fds;

  announce (msg, 1);
  add (s, msg, 0);
  accept_msg (msg, GPUSHARE_MEM_SYSTEM, 0, FALSE);
  add (s, msg, 0);
  n_fds = slots (msg, GPUSHARE_MEM_SYSTEM, 0, 2);
  add (s, msg, n_fds);
  init (msg, GPUSHARE_MSG_MAPPED);
  msg->u.mapped.epoch = 1;
  add (s, msg, 0);
  frame (msg, FALSE);
  add (s, msg, 0);
  init (msg, GPUSHARE_MSG_PING);
  add (s, msg, 0);
  release (msg, FALSE);
  add (s, msg, 0);
  caps (msg, FALSE);
  add (s, msg, 0);
  n_fds = slots (msg, GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE, 4);
  add (s, msg, n_fds);
  init (msg, GPUSHARE_MSG_EOS);
  add (s, msg, 0);
  init (msg, GPUSHARE_MSG_GOODBYE);
  msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  add (s, msg, 0);
  g_free (msg);
  return s;
}

/* minor 7: a consumer that asked for a lane gets LANE before its first
 * SLOTS; ordered messages after it stay on the socket */
static GByteArray *
session_lane (void)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *s = start (1 + 2, 0);
  guint32 n_fds;

  announce (msg, 0);
  add (s, msg, 0);
  accept_msg (msg, GPUSHARE_MEM_SYSTEM, 0, FALSE);
  msg->u.accept.schema_minor = GPUSHARE_MINOR_LANE;
  msg->u.accept.flags = GPUSHARE_ACCEPT_FLAG_LANE;
  add (s, msg, 0);
  lane (msg, GPUSHARE_LANE_MIN_ENTRIES);
  add (s, msg, 1);
  n_fds = slots (msg, GPUSHARE_MEM_SYSTEM, 0, 2);
  add (s, msg, n_fds);
  init (msg, GPUSHARE_MSG_MAPPED);
  msg->u.mapped.epoch = 1;
  add (s, msg, 0);
  caps (msg, FALSE);
  add (s, msg, 0);
  init (msg, GPUSHARE_MSG_EOS);
  add (s, msg, 0);
  g_free (msg);
  return s;
}

static void
write_streams (GpuShareMsg * msg)
{
  GByteArray *s;
  guint len;
  guint8 ext[32];

  save ("session", session (0));
  save ("session-bytewise", session (1));
  save ("session-pieces-7", session (7));
  save ("session-lane", session_lane ());

  /* a newer minor: header flags and reserved set, a FRAME with a longer
   * payload, then an unknown type with fds, then a known message */
  s = start (3, 0);
  frame (msg, FALSE);
  add (s, msg, 0);
  memset (ext, 0x5a, sizeof (ext));
  g_byte_array_append (s, ext, sizeof (ext));
  put16 (s, FUZZ_PREFIX_SIZE + HDR_VERSION_MINOR, 9);
  put16 (s, FUZZ_PREFIX_SIZE + HDR_FLAGS, 0xffff);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_RESERVED, G_MAXUINT32);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_PAYLOAD_LEN,
      s->len - FUZZ_PREFIX_SIZE - GPUSHARE_HEADER_SIZE);
  len = s->len;
  init (msg, GPUSHARE_MSG_MAPPED);
  add (s, msg, 0);
  g_byte_array_append (s, ext, sizeof (ext));
  put16 (s, len + HDR_TYPE, 0x7fff);
  put32 (s, len + HDR_PAYLOAD_LEN, 8 + sizeof (ext));
  put32 (s, len + HDR_N_FDS, 3);
  add (s, msg, 0);
  save ("newer-minor", s);

  /* a newer minor's PING with a payload, between two pings */
  s = start (0, 0);
  init (msg, GPUSHARE_MSG_PING);
  add (s, msg, 0);
  len = s->len;
  add (s, msg, 0);
  g_byte_array_append (s, ext, sizeof (ext));
  put16 (s, len + HDR_VERSION_MINOR, 9);
  put32 (s, len + HDR_PAYLOAD_LEN, sizeof (ext));
  add (s, msg, 0);
  save ("ping-payload", s);

  /* a GOODBYE whose minor 3 part is cut short: one that says nothing
   * more, then a whole one */
  s = start (0, 0);
  init (msg, GPUSHARE_MSG_GOODBYE);
  msg->u.goodbye.flags = GPUSHARE_GOODBYE_FLAG_HELD;
  msg->u.goodbye.last_sequence = 7;
  add (s, msg, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_PAYLOAD_LEN, 10);
  g_byte_array_set_size (s, FUZZ_PREFIX_SIZE + GPUSHARE_HEADER_SIZE + 10);
  add (s, msg, 0);
  save ("goodbye-held-cut", s);

  /* a FRAME whose minor 6 share is cut short: one without a share, then
   * a whole one */
  s = start (0, 0);
  frame (msg, FALSE);
  msg->u.frame.share = 3;
  add (s, msg, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_PAYLOAD_LEN, 76);
  g_byte_array_set_size (s, FUZZ_PREFIX_SIZE + GPUSHARE_HEADER_SIZE + 76);
  add (s, msg, 0);
  save ("frame-share-cut", s);
}

/* one message of type built by the builder, then broken */
static GByteArray *
broken (guint8 n_fds, void (*fill) (GpuShareMsg *), guint32 msg_fds)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *s = start (n_fds, 0);

  fill (msg);
  add (s, msg, msg_fds);
  g_free (msg);
  return s;
}

static void
fill_announce (GpuShareMsg * msg)
{
  announce (msg, 1);
}

static void
fill_frame (GpuShareMsg * msg)
{
  frame (msg, FALSE);
}

static void
fill_ping (GpuShareMsg * msg)
{
  init (msg, GPUSHARE_MSG_PING);
}

static void
fill_error (GpuShareMsg * msg)
{
  error_msg (msg, FALSE);
}

static void
fill_lane (GpuShareMsg * msg)
{
  lane (msg, 64);
}

static void
fill_slots_vmm (GpuShareMsg * msg)
{
  slots (msg, GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_HOST, 4);
}

static void
fill_slots_fabric (GpuShareMsg * msg)
{
  slots (msg, GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_SYNC_EVENT, 2);
}

static void
write_broken (void)
{
  GByteArray *s;
  guint8 junk[256];
  guint32 state = 0x9e3779b9;
  guint i;

  /* half a payload: the connection waits for the rest */
  s = broken (0, fill_announce, 0);
  g_byte_array_set_size (s, s->len / 2);
  save ("announce-cut", s);

  /* half a header */
  s = broken (0, fill_frame, 0);
  g_byte_array_set_size (s, FUZZ_PREFIX_SIZE + GPUSHARE_HEADER_SIZE / 2);
  save ("header-cut", s);

  /* payload_len shorter than the fixed part */
  s = broken (0, fill_frame, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_PAYLOAD_LEN, 16);
  g_byte_array_set_size (s, FUZZ_PREFIX_SIZE + GPUSHARE_HEADER_SIZE + 16);
  save ("frame-short", s);

  /* strings longer than the payload */
  s = broken (0, fill_announce, 0);
  put32 (s, FUZZ_PREFIX_SIZE + ANNOUNCE_NAME_LEN, GPUSHARE_MAX_NAME_LEN);
  save ("announce-name-past-end", s);

  s = broken (0, fill_announce, 0);
  put32 (s, FUZZ_PREFIX_SIZE + ANNOUNCE_CAPS_LEN, GPUSHARE_MAX_CAPS_LEN + 1);
  save ("announce-caps-over-cap", s);

  s = broken (0, fill_announce, 0);
  s->data[FUZZ_PREFIX_SIZE + ANNOUNCE_NAME + 3] = '\0';
  save ("announce-nul-in-name", s);

  s = broken (0, fill_error, 0);
  s->data[FUZZ_PREFIX_SIZE + ERROR_TEXT + 1] = 0xc3;
  save ("error-bad-utf8", s);

  s = broken (0, fill_frame, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_MAGIC, 0x48535048);
  save ("bad-magic", s);

  s = broken (0, fill_frame, 0);
  put16 (s, FUZZ_PREFIX_SIZE + HDR_VERSION_MAJOR, GPUSHARE_VERSION_MAJOR + 1);
  save ("bad-version", s);

  s = broken (0, fill_frame, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_PAYLOAD_LEN, GPUSHARE_MAX_PAYLOAD + 1);
  save ("payload-over-cap", s);

  /* fds on a type that carries none */
  s = broken (1, fill_frame, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_N_FDS, 1);
  save ("frame-with-fd", s);

  s = broken (1, fill_ping, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_N_FDS, 1);
  save ("ping-with-fd", s);

  /* a LANE without its fd, with two, and of a size no lane has */
  s = broken (0, fill_lane, 1);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_N_FDS, 0);
  save ("lane-no-fd", s);

  s = broken (2, fill_lane, 1);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_N_FDS, 2);
  save ("lane-two-fds", s);

  s = broken (1, fill_lane, 1);
  put32 (s, FUZZ_PREFIX_SIZE + LANE_N_ENTRIES, 48);
  save ("lane-entries-odd", s);

  /* fewer fds arrived than the header claims */
  s = broken (3, fill_slots_vmm, 4);
  save ("slots-fd-missing", s);

  /* the header claims one more fd than the slots need */
  s = broken (5, fill_slots_vmm, 4);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_N_FDS, 5);
  save ("slots-fd-extra", s);

  /* fds with handle-borne slots */
  s = broken (2, fill_slots_fabric, 0);
  put32 (s, FUZZ_PREFIX_SIZE + HDR_N_FDS, 2);
  save ("slots-fabric-with-fds", s);

  s = broken (0, fill_slots_fabric, 0);
  put32 (s, FUZZ_PREFIX_SIZE + SLOTS_N_HANDLES, GPUSHARE_MAX_HANDLES + 1);
  save ("slots-handles-over-cap", s);

  /* more fds than the transport queues */
  s = broken (FUZZ_IN_FD_CAP + 1, fill_slots_vmm, 4);
  save ("fds-over-queue", s);

  /* garbage, from a fixed xorshift so that it is the same every time */
  s = start (0, 0);
  for (i = 0; i < sizeof (junk); i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    junk[i] = state & 0xff;
  }
  g_byte_array_append (s, junk, sizeof (junk));
  save ("garbage", s);
}

/* layouts the codec accepts and a consumer refuses (docs/security.md,
 * promise 2): a hostile producer's, for the fuzzer to start from */
static void
write_hostile_layouts (GpuShareMsg * msg)
{
  GpuShareLayout *l;

  /* an ARGB64 plane 32767 wide with stride 1 near the end of the slot */
  announce (msg, 0);
  l = &msg->u.announce.layout;
  l->frame_size = 8192;
  l->slot_size = 8192;
  l->n_planes = 1;
  l->offsets[0] = 8190;
  l->offsets[1] = 0;
  l->strides[0] = 1;
  l->strides[1] = 0;
  if (!gpushare_layout_set_caps (l, "video/x-raw,format=ARGB64,"
          "width=32767,height=2,framerate=30/1"))
    g_assert_not_reached ();
  save_one ("announce-stride-short", msg, 0);

  /* YUY2 at width 5 with rows one byte short of 3 macropixels */
  announce (msg, 0);
  l = &msg->u.announce.layout;
  l->frame_size = 48;
  l->slot_size = 4096;
  l->n_planes = 1;
  l->offsets[1] = 0;
  l->strides[0] = 10;
  l->strides[1] = 0;
  if (!gpushare_layout_set_caps (l, "video/x-raw,format=YUY2,width=5,"
          "height=4,framerate=30/1"))
    g_assert_not_reached ();
  save_one ("announce-yuy2-odd", msg, 0);

  /* caps naming a memory the consumer's buffers are not in */
  init (msg, GPUSHARE_MSG_CAPS);
  msg->u.caps.latency = G_MAXUINT64;
  layout_small (&msg->u.caps.layout, 4);
  if (!gpushare_layout_set_caps (&msg->u.caps.layout, "video/x-raw("
          "memory:CUDAMemory),format=NV12,width=1920,height=1080,"
          "framerate=30/1"))
    g_assert_not_reached ();
  save_one ("caps-memory-feature", msg, 0);

  /* the epoch of the mapped ring, a frame four times its slots */
  init (msg, GPUSHARE_MSG_CAPS);
  msg->u.caps.latency = G_MAXUINT64;
  layout_small (&msg->u.caps.layout, 4);
  l = &msg->u.caps.layout;
  l->frame_size = 3840 * 2160 * 3 / 2;
  l->slot_size = 16 * 1024 * 1024;
  l->offsets[1] = 3840 * 2160;
  l->strides[0] = 3840;
  l->strides[1] = 3840;
  if (!gpushare_layout_set_caps (l, "video/x-raw,format=NV12,width=3840,"
          "height=2160,framerate=30/1"))
    g_assert_not_reached ();
  save_one ("caps-same-epoch-larger", msg, 0);
}

static void
meta_put (GpuShareMeta * m, gconstpointer data, gsize len)
{
  memcpy (m->data + m->data_len, data, len);
  m->data_len += len;
}

static void
meta_u32 (GpuShareMeta * m, guint32 v)
{
  v = GUINT32_TO_LE (v);
  meta_put (m, &v, 4);
}

static void
meta_str (GpuShareMeta * m, const gchar * s)
{
  meta_u32 (m, strlen (s));
  meta_put (m, s, strlen (s));
}

static void
meta_f32 (GpuShareMeta * m, gfloat f)
{
  guint32 v;

  memcpy (&v, &f, 4);
  meta_u32 (m, v);
}

/* an mtd's header: its type, and its body's length patched in by the
 * caller at the returned place */
static gsize
meta_mtd (GpuShareMeta * m, const gchar * type)
{
  gsize at;

  meta_str (m, type);
  at = m->data_len;
  meta_u32 (m, 0);
  return at;
}

static void
meta_mtd_end (GpuShareMeta * m, gsize at)
{
  guint32 len = GUINT32_TO_LE (m->data_len - at - 4);

  memcpy (m->data + at, &len, 4);
}

/* an entry of kind, its length patched in by meta_entry_end () at the
 * returned place */
static gsize
meta_entry_begin (GpuShareMeta * m, guint16 kind)
{
  gsize entry = m->data_len;
  guint16 k = GUINT16_TO_LE (kind), zero = 0;

  meta_put (m, &k, 2);
  meta_put (m, &zero, 2);
  meta_u32 (m, 0);
  return entry;
}

static void
meta_entry_end (GpuShareMeta * m, gsize entry)
{
  guint32 len = GUINT32_TO_LE (m->data_len - entry -
      GPUSHARE_META_ENTRY_HEADER);

  memcpy (m->data + entry + 4, &len, 4);
  m->n_entries++;
}

/* a GPUSHARE_META_TENSORS entry of one float32 tensor "scores" of 2x2, up
 * to its data, which the caller writes before meta_entry_end () */
static gsize
meta_tensor_head (GpuShareMeta * m)
{
  gsize entry = meta_entry_begin (m, GPUSHARE_META_TENSORS);
  guint64 two = GUINT64_TO_LE (2);

  meta_u32 (m, 1);
  meta_str (m, "scores");
  meta_u32 (m, 0);
  meta_u32 (m, 11);
  meta_u32 (m, 0);
  meta_u32 (m, 2);
  meta_put (m, &two, 8);
  meta_put (m, &two, 8);
  return entry;
}

/* GPUSHARE_META_ANALYTICS as docs/protocol.md lays it out */
static void
write_analytics_entry (GpuShareMeta * m)
{
  guint64 v;
  gsize entry = meta_entry_begin (m, GPUSHARE_META_ANALYTICS), at;

  meta_u32 (m, 5);
  at = meta_mtd (m, "object-detection");
  meta_str (m, "car");
  meta_u32 (m, 10);
  meta_u32 (m, 20);
  meta_u32 (m, 64);
  meta_u32 (m, 48);
  meta_f32 (m, 0.75f);
  meta_f32 (m, 0.125f);
  meta_mtd_end (m, at);
  at = meta_mtd (m, "classification");
  meta_u32 (m, 2);
  meta_str (m, "sedan");
  meta_f32 (m, 0.5f);
  meta_str (m, "van");
  meta_f32 (m, 0.25f);
  meta_mtd_end (m, at);
  at = meta_mtd (m, "object-tracking");
  for (v = 7; v < 10; v++) {
    guint64 le = GUINT64_TO_LE (v);

    meta_put (m, &le, 8);
  }
  meta_u32 (m, 0);
  meta_mtd_end (m, at);
  /* a segmentation of two regions, its 4x2 GRAY8 mask (format 25) */
  at = meta_mtd (m, "segmentation");
  meta_u32 (m, 0);
  meta_u32 (m, 0);
  meta_u32 (m, 4);
  meta_u32 (m, 2);
  meta_u32 (m, 2);
  meta_u32 (m, 1);
  meta_u32 (m, 2);
  meta_u32 (m, 25);
  meta_u32 (m, 4);
  meta_u32 (m, 2);
  meta_u32 (m, 8);
  meta_put (m, "\1\1\2\2\1\2\2\1", 8);
  meta_mtd_end (m, at);
  /* a tensor (1.28): "embedding", float32 (11) 1x2, row major, inline */
  at = meta_mtd (m, "tensor");
  meta_str (m, "embedding");
  meta_u32 (m, 0);
  meta_u32 (m, 11);
  meta_u32 (m, 0);
  meta_u32 (m, 2);
  for (v = 1; v <= 2; v++) {
    guint64 le = GUINT64_TO_LE (v);

    meta_put (m, &le, 8);
  }
  meta_u32 (m, 8);
  meta_f32 (m, 0.5f);
  meta_f32 (m, -0.25f);
  meta_mtd_end (m, at);
  meta_u32 (m, 3);
  meta_u32 (m, 0);
  meta_u32 (m, 1);
  meta_u32 (m, 4);
  meta_u32 (m, 2);
  meta_u32 (m, 0);
  meta_u32 (m, 8);
  meta_u32 (m, 4);
  meta_u32 (m, 0);
  meta_u32 (m, 8);
  meta_entry_end (m, entry);
}

/* where a payload of len bytes lies: in the side memory at at (minor 10),
 * or (device) in GPU memory past the frame at at, its copy in the side
 * memory at host_at (minor 11) */
static void
meta_payload_place (GpuShareMeta * m, gboolean device, guint64 at,
    guint64 len, guint64 host_at)
{
  guint64 v[3] = { GUINT64_TO_LE (at), GUINT64_TO_LE (len),
    GUINT64_TO_LE (host_at)
  };

  meta_u32 (m, device ? GPUSHARE_META_IN_DEVICE : GPUSHARE_META_IN_SIDE);
  meta_put (m, v, device ? 24 : 16);
}

/* GPUSHARE_META_ANALYTICS of one segmentation whose 64x32 GRAY8 mask,
 * and GPUSHARE_META_TENSORS of one float32 tensor of 2x2, whose data lie
 * in the side memory (minor 10): at at, each; or (device) in GPU memory
 * past the frame, at at, each, copies in the side memory at host_at */
static void
write_side_entries (GpuShareMeta * m, gboolean device, guint64 at,
    guint64 host_at)
{
  gsize entry = meta_entry_begin (m, GPUSHARE_META_ANALYTICS), mtd;

  meta_u32 (m, 1);
  mtd = meta_mtd (m, "segmentation");
  meta_u32 (m, 0);
  meta_u32 (m, 0);
  meta_u32 (m, 64);
  meta_u32 (m, 32);
  meta_u32 (m, 1);
  meta_u32 (m, 1);
  meta_u32 (m, 25);
  meta_u32 (m, 64);
  meta_u32 (m, 32);
  meta_payload_place (m, device, at, 64 * 32, host_at);
  meta_mtd_end (m, mtd);
  meta_u32 (m, 0);
  meta_entry_end (m, entry);

  entry = meta_tensor_head (m);
  meta_payload_place (m, device, at + 4096, 16, host_at == G_MAXUINT64 ?
      host_at : host_at + 4096);
  meta_entry_end (m, entry);
}

/* GPUSHARE_META_TENSORS: one float32 tensor of 2x2 */
static void
write_tensors_entry (GpuShareMeta * m)
{
  gsize entry = meta_tensor_head (m);
  guint i;

  meta_u32 (m, 16);
  for (i = 0; i < 4; i++)
    meta_f32 (m, 0.25f * i);
  meta_entry_end (m, entry);
}

/* META (minor 4): the entries gpusharesink writes for a buffer with one
 * meta of every kind it knows, and a small one of an unknown kind */
static void
write_metas (GpuShareMsg * msg)
{
  static const guint8 cc[] = { 0xfc, 0x94, 0x20 };
  const gchar *tags[] = { NULL };
  GstBuffer *buf = gst_buffer_new ();
  GstCaps *ref = gst_caps_new_empty_simple ("timestamp/x-ntp");
  GstVideoRegionOfInterestMeta *roi;
  GpuShareFrameMetas *metas;
  GstCustomMeta *custom;
  guint skipped = 0;

  roi = gst_buffer_add_video_region_of_interest_meta (buf, "face", 1, 2, 3, 4);
  gst_video_region_of_interest_meta_add_param (roi,
      gst_structure_new ("detection", "confidence", G_TYPE_DOUBLE, 0.5, NULL));
  gst_buffer_add_reference_timestamp_meta (buf, ref, 1, 2);
  gst_caps_unref (ref);
  gst_buffer_add_video_time_code_meta_full (buf, 30, 1, NULL, 0, 1, 2, 3, 4, 0);
  gst_buffer_add_video_caption_meta (buf, GST_VIDEO_CAPTION_TYPE_CEA608_RAW,
      cc, sizeof (cc));
  gst_buffer_add_video_afd_meta (buf, 0, GST_VIDEO_AFD_SPEC_ATSC_A53,
      GST_VIDEO_AFD_4_3_FULL_16_9_FULL);
  gst_buffer_add_video_bar_meta (buf, 0, TRUE, 10, 20);
  gst_meta_register_custom ("gpushare-corpus-meta", tags, NULL, NULL, NULL);
  custom = gst_buffer_add_custom_meta (buf, "gpushare-corpus-meta");
  gst_structure_set (gst_custom_meta_get_structure (custom), "id",
      G_TYPE_INT, 7, NULL);

  init (msg, GPUSHARE_MSG_META);
  metas = gpushare_frame_metas_new (GPUSHARE_MAX_META_LEN);
  if (!gpushare_frame_meta_collect (buf, metas, &skipped, NULL)
      || skipped || gpushare_frame_metas_to_meta (metas, &msg->u.meta) != 0) {
    g_printerr ("make-corpus: the metas were not all written\n");
    exit (1);
  }
  g_free (metas);
  msg->u.meta.sequence = 5;
  save_one ("meta", msg, 0);
  gst_buffer_unref (buf);

  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = G_MAXUINT64;
  msg->u.meta.n_entries = 1;
  msg->u.meta.data[0] = 0x99;
  msg->u.meta.data[4] = 3;
  msg->u.meta.data_len = GPUSHARE_META_ENTRY_HEADER + 3;
  save_one ("meta-unknown-kind", msg, 0);

  /* an analytics entry (kind 9), written here byte for byte so that a
   * corpus made without GStreamer's analytics library has it too: a
   * detection, its classification and its track, two relations */
  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = 6;
  write_analytics_entry (&msg->u.meta);
  save_one ("meta-analytics", msg, 0);
  /* a tensors entry (kind 10): float32 2x2 */
  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = 7;
  write_tensors_entry (&msg->u.meta);
  save_one ("meta-tensors", msg, 0);
  /* payloads in the side memory (minor 10): inside a page, and past any */
  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = 8;
  write_side_entries (&msg->u.meta, FALSE, 0, 0);
  save_one ("meta-side-payloads", msg, 0);
  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = 9;
  write_side_entries (&msg->u.meta, FALSE, G_MAXUINT64 - 8, 0);
  save_one ("meta-side-payloads-past", msg, 0);
  /* payloads in GPU memory past the frame (minor 11): with copies in the
   * side memory, without, and past any room */
  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = 10;
  write_side_entries (&msg->u.meta, TRUE, 0, 8192);
  save_one ("meta-device-payloads", msg, 0);
  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = 11;
  write_side_entries (&msg->u.meta, TRUE, 512, G_MAXUINT64);
  save_one ("meta-device-payloads-alone", msg, 0);
  init (msg, GPUSHARE_MSG_META);
  msg->u.meta.sequence = 12;
  write_side_entries (&msg->u.meta, TRUE, G_MAXUINT64 - 8, G_MAXUINT64 - 8);
  save_one ("meta-device-payloads-past", msg, 0);

  /* EVENT (minor 4): tags, a custom event, the longest text */
  init (msg, GPUSHARE_MSG_EVENT);
  msg->u.event.kind = GPUSHARE_EVENT_TAGS;
  set_string (msg->u.event.text, &msg->u.event.text_len,
      "taglist, title=(string)first");
  save_one ("event-tags", msg, 0);
  msg->u.event.kind = GPUSHARE_EVENT_CUSTOM_STICKY;
  set_string (msg->u.event.text, &msg->u.event.text_len, "zone, id=(int)5");
  save_one ("event-custom-sticky", msg, 0);
  msg->u.event.kind = G_MAXUINT32;
  fill_utf8 (msg->u.event.text, GPUSHARE_MAX_EVENT_LEN);
  msg->u.event.text_len = GPUSHARE_MAX_EVENT_LEN;
  save_one ("event-max", msg, 0);

  /* OBSERVE and STATUS (minor 5): an observer's request, a producer's
   * state, the longest of each */
  init (msg, GPUSHARE_MSG_OBSERVE);
  msg->u.observe.schema_major = GPUSHARE_VERSION_MAJOR;
  msg->u.observe.schema_minor = GPUSHARE_VERSION_MINOR;
  msg->u.observe.interval_ms = 1000;
  msg->u.observe.pid = 4242;
  set_string (msg->u.observe.name, &msg->u.observe.name_len,
      "gpushare-inspect");
  save_one ("observe", msg, 0);
  msg->u.observe.interval_ms = GPUSHARE_MAX_OBSERVE_INTERVAL;
  fill_utf8 (msg->u.observe.name, GPUSHARE_MAX_NAME_LEN);
  msg->u.observe.name_len = GPUSHARE_MAX_NAME_LEN;
  save_one ("observe-max", msg, 0);
  init (msg, GPUSHARE_MSG_STATUS);
  set_string (msg->u.status.text, &msg->u.status.text_len,
      "application/x-gpushare-sink-stats, epoch=(guint64)1, "
      "clients=(structure)< \"client\\, id\\=\\(uint\\)1\\;\" >;");
  save_one ("status", msg, 0);
  fill_utf8 (msg->u.status.text, GPUSHARE_MAX_STATUS_LEN);
  msg->u.status.text_len = GPUSHARE_MAX_STATUS_LEN;
  save_one ("status-max", msg, 0);
}

/* A seed for every type of the table that none of the above holds: its
 * message with an all-zero body as the builder writes it, or where the
 * builder refuses that, its header and a zeroed fixed part, for the
 * fuzzer to make a valid one of. */
static void
write_every_type (GpuShareMsg * msg)
{
  guint type;

  for (type = GPUSHARE_MSG_ANNOUNCE; type <= GPUSHARE_MSG_LAST; type++) {
    const GpuShareMsgInfo *info = gpushare_msg_info (type);
    g_autofree gchar *name = NULL;
    GByteArray *s;

    if (!info)
      g_error ("the codec has no row for type %u", type);
    if (seeded[type])
      continue;
    name = g_ascii_strdown (info->name, -1);
    s = start (0, 0);
    init (msg, type);
    if (!gpushare_msg_build (msg, 0, s)) {
      g_byte_array_set_size (s, FUZZ_PREFIX_SIZE + GPUSHARE_HEADER_SIZE +
          info->fixed_size);
      memset (s->data + FUZZ_PREFIX_SIZE, 0, s->len - FUZZ_PREFIX_SIZE);
      put32 (s, FUZZ_PREFIX_SIZE + HDR_MAGIC, GPUSHARE_MAGIC);
      put16 (s, FUZZ_PREFIX_SIZE + HDR_VERSION_MAJOR, GPUSHARE_VERSION_MAJOR);
      put16 (s, FUZZ_PREFIX_SIZE + HDR_VERSION_MINOR, GPUSHARE_VERSION_MINOR);
      put16 (s, FUZZ_PREFIX_SIZE + HDR_TYPE, type);
      put32 (s, FUZZ_PREFIX_SIZE + HDR_PAYLOAD_LEN, info->fixed_size);
    }
    seeded[type] = TRUE;
    save (name, s);
  }
}

/* every seed-* file of out_dir: they are all written again */
static void
remove_old_seeds (void)
{
  g_autoptr (GError) error = NULL;
  GDir *dir = g_dir_open (out_dir, 0, &error);
  const gchar *name;

  if (!dir)
    g_error ("%s", error->message);
  while ((name = g_dir_read_name (dir))) {
    g_autofree gchar *path = NULL;

    if (!g_str_has_prefix (name, "seed-"))
      continue;
    path = g_build_filename (out_dir, name, NULL);
    if (g_unlink (path) != 0)
      g_error ("cannot remove %s", path);
  }
  g_dir_close (dir);
}

int
main (int argc, char **argv)
{
  GpuShareMsg *msg;

  if (argc != 2) {
    g_printerr ("usage: %s DIR\n", argv[0]);
    return 2;
  }
  out_dir = argv[1];
  if (g_mkdir_with_parents (out_dir, 0755) != 0) {
    g_printerr ("%s: cannot create %s\n", argv[0], out_dir);
    return 1;
  }

  remove_old_seeds ();
  gst_init (NULL, NULL);
  msg = g_new0 (GpuShareMsg, 1);
  write_metas (msg);
  write_handshake (msg);
  write_simple (msg);
  write_streams (msg);
  write_broken ();
  write_hostile_layouts (msg);
  write_every_type (msg);
  g_free (msg);
  return 0;
}
