/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the gpushare wire codec.
 *
 * Hostile input is written byte by byte by the raw_* helpers below, from the
 * offsets in docs/protocol.md, never through gpushare_msg_build (): the
 * builder refuses exactly what these tests need to send, and a bug shared by
 * builder and parser would otherwise go unseen.  One test checks that the
 * raw encoder and the builder agree byte for byte on valid messages, and
 * golden byte strings pin the layout itself.
 *
 * Payloads handed to the parser are copied into heap blocks of exactly
 * their length, so that AddressSanitizer catches any read past the end.
 */

#include <gst/check/gstcheck.h>
#include <string.h>

#include "gpushareproto.h"
#include "stackdepth.h"

static const guint all_types[] = {
  GPUSHARE_MSG_ANNOUNCE, GPUSHARE_MSG_ACCEPT, GPUSHARE_MSG_SLOTS,
  GPUSHARE_MSG_MAPPED, GPUSHARE_MSG_FRAME, GPUSHARE_MSG_RELEASE,
  GPUSHARE_MSG_CAPS, GPUSHARE_MSG_EOS, GPUSHARE_MSG_GOODBYE,
  GPUSHARE_MSG_ERROR, GPUSHARE_MSG_PING, GPUSHARE_MSG_UNMAPPED,
  GPUSHARE_MSG_META, GPUSHARE_MSG_EVENT, GPUSHARE_MSG_OBSERVE,
  GPUSHARE_MSG_STATUS, GPUSHARE_MSG_NOTICE, GPUSHARE_MSG_LANE,
};

/* the first type this version does not know */
#define FIRST_UNKNOWN_TYPE 19

/* ------------------------------------------------------------------ */
/* raw little-endian writers, independent of the codec's own           */

static void
put16 (guint8 * b, gsize off, guint16 v)
{
  b[off] = v & 0xff;
  b[off + 1] = v >> 8;
}

static void
put32 (guint8 * b, gsize off, guint32 v)
{
  guint i;

  for (i = 0; i < 4; i++)
    b[off + i] = (v >> (8 * i)) & 0xff;
}

static void
put64 (guint8 * b, gsize off, guint64 v)
{
  guint i;

  for (i = 0; i < 8; i++)
    b[off + i] = (v >> (8 * i)) & 0xff;
}

static guint32
get32 (const guint8 * b, gsize off)
{
  return b[off] | b[off + 1] << 8 | b[off + 2] << 16 |
      (guint32) b[off + 3] << 24;
}

static guint64
get64 (const guint8 * b, gsize off)
{
  return get32 (b, off) | (guint64) get32 (b, off + 4) << 32;
}

/* wire sizes and offsets, as docs/protocol.md gives them */
#define HDR_SIZE 24
#define ANNOUNCE_FIXED 160
#define ANNOUNCE_NAME_LEN 20
#define ANNOUNCE_LAYOUT 40
#define ANNOUNCE_DEVICE_UUID 128
#define ANNOUNCE_DEVICE_CAPS 144
#define ANNOUNCE_SYNC_MODES 148
#define ANNOUNCE_COMPUTE_MODE 152
#define ANNOUNCE_RESERVED 156
#define ACCEPT_FIXED 56
#define ACCEPT_FLAGS 8
#define ACCEPT_NAME_LEN 24
#define ACCEPT_SYNC_MODE 28
#define ACCEPT_UUID 32
#define ACCEPT_REASON_LEN 48
#define ACCEPT_RESERVED 52
#define SLOTS_FIXED 48
#define SLOTS_N_SLOTS 16
#define SLOTS_MEM_TYPE 20
#define SLOTS_SYNC_MODE 24
#define SLOTS_N_SYNC_FDS 28
#define SLOTS_SYNC_SIZE 32
#define SLOTS_N_HANDLES 40
#define SLOTS_SIDE_PAGES 44
#define HANDLE_SIZE 64
#define MAPPED_FIXED 8
#define FRAME_FIXED 72
#define FRAME_SHARE 72
#define FRAME_RESERVED 76
#define FRAME_SHARE_FIXED 80
#define RELEASE_FIXED 24
#define CAPS_FIXED 104
#define CAPS_LAYOUT 16
#define EOS_FIXED 8
#define GOODBYE_FIXED 4
#define GOODBYE_HELD_FIXED 16
#define ERROR_FIXED 8
#define ERROR_TEXT_LEN 4
#define PING_FIXED 0
#define META_FIXED 16
#define EVENT_FIXED 8
#define OBSERVE_FIXED 16
#define STATUS_FIXED 8
#define NOTICE_FIXED 32
#define NOTICE_SHARE 4
#define NOTICE_SLOTS_HELD 8
#define NOTICE_N_CONSUMERS 12
#define LANE_FIXED 16
#define LANE_METAS_FIXED 24
#define LANE_N_ENTRIES 0
#define LANE_ENTRY_SIZE 4
#define LANE_SIZE 8
#define LAYOUT_CAPS_LEN 80
/* the lane's memory: its header, its entries (docs/protocol.md, "Frame
 * lane") */
#define LANE_HEADER 128
#define LANE_HEAD 0
#define LANE_BELL 64
#define LANE_WAITING 68
#define LANE_TAIL 72
#define ENTRY_SIZE 128
#define ENTRY_INDEX 0
#define ENTRY_KIND 8
#define ENTRY_LENGTH 12
#define ENTRY_BODY 16
#define ENTRY_BODY_MAX 112
#define ENTRY_FRAME_LEN 88
#define ENTRY_FRAME_METAS_LEN 104
/* in a FRAME entry's body: the producer's clock when it wrote it */
#define ENTRY_WRITTEN 80
#define ENTRY_MARK_LEN 8

static void
raw_header (guint8 * b, guint32 magic, guint16 major, guint16 minor,
    guint16 type, guint16 flags, guint32 payload_len, guint32 n_fds,
    guint32 reserved)
{
  put32 (b, 0, magic);
  put16 (b, 4, major);
  put16 (b, 6, minor);
  put16 (b, 8, type);
  put16 (b, 10, flags);
  put32 (b, 12, payload_len);
  put32 (b, 16, n_fds);
  put32 (b, 20, reserved);
}

static void
raw_layout (guint8 * b, const GpuShareLayout * l)
{
  guint i;

  put64 (b, 0, l->epoch);
  put64 (b, 8, l->frame_size);
  put64 (b, 16, l->slot_size);
  put32 (b, 24, l->n_slots);
  put32 (b, 28, l->n_planes);
  for (i = 0; i < 4; i++) {
    put64 (b, 32 + 8 * i, l->offsets[i]);
    put32 (b, 64 + 4 * i, (guint32) l->strides[i]);
  }
  put32 (b, 80, l->caps_len);
  put32 (b, 84, 0);
}

/* Writes the fixed part of msg with whatever values it holds, valid or
 * not, and returns its size. */
static gsize
raw_fixed (const GpuShareMsg * msg, guint8 * b)
{
  switch (msg->type) {
    case GPUSHARE_MSG_ANNOUNCE:{
      const GpuShareAnnounce *a = &msg->u.announce;

      put16 (b, 0, a->schema_major);
      put16 (b, 2, a->schema_minor);
      put32 (b, 4, a->mem_types);
      put32 (b, 8, a->flags);
      put32 (b, 12, a->pid);
      put32 (b, 16, a->uid);
      put32 (b, 20, a->name_len);
      put64 (b, 24, a->instance);
      put64 (b, 32, a->latency);
      raw_layout (b + 40, &a->layout);
      memcpy (b + 128, a->device.uuid, 16);
      put32 (b, 144, a->device.caps);
      put32 (b, 148, a->device.sync_modes);
      put32 (b, 152, (guint32) a->device.compute_mode);
      put32 (b, 156, 0);
      return ANNOUNCE_FIXED;
    }
    case GPUSHARE_MSG_ACCEPT:{
      const GpuShareAccept *a = &msg->u.accept;

      put16 (b, 0, a->schema_major);
      put16 (b, 2, a->schema_minor);
      put32 (b, 4, a->mem_type);
      put32 (b, 8, a->flags);
      put32 (b, 12, a->pid);
      put64 (b, 16, a->instance);
      put32 (b, 24, a->name_len);
      put32 (b, 28, a->sync_mode);
      memcpy (b + 32, a->uuid, 16);
      put32 (b, 48, a->reason_len);
      put32 (b, 52, 0);
      return ACCEPT_FIXED;
    }
    case GPUSHARE_MSG_SLOTS:{
      const GpuShareSlots *s = &msg->u.slots;

      put64 (b, 0, s->epoch);
      put64 (b, 8, s->slot_size);
      put32 (b, 16, s->n_slots);
      put32 (b, 20, s->mem_type);
      put32 (b, 24, s->sync_mode);
      put32 (b, 28, s->n_sync_fds);
      put64 (b, 32, s->sync_size);
      put32 (b, SLOTS_N_HANDLES, s->n_handles);
      put32 (b, SLOTS_SIDE_PAGES, s->side_pages);
      return SLOTS_FIXED;
    }
    case GPUSHARE_MSG_MAPPED:
    case GPUSHARE_MSG_UNMAPPED:
      put64 (b, 0, msg->u.mapped.epoch);
      return MAPPED_FIXED;
    case GPUSHARE_MSG_FRAME:{
      const GpuShareFrame *f = &msg->u.frame;

      put64 (b, 0, f->epoch);
      put32 (b, 8, f->slot);
      put32 (b, 12, f->generation);
      put64 (b, 16, f->sequence);
      put64 (b, 24, f->pts);
      put64 (b, 32, f->dts);
      put64 (b, 40, f->duration);
      put64 (b, 48, f->offset);
      put64 (b, 56, f->offset_end);
      put32 (b, 64, f->buffer_flags);
      put32 (b, 68, f->flags);
      /* minor 6: only from a leaky producer, whose share is not 0 */
      if (!f->share)
        return FRAME_FIXED;
      put32 (b, FRAME_SHARE, f->share);
      put32 (b, FRAME_RESERVED, 0);
      return FRAME_SHARE_FIXED;
    }
    case GPUSHARE_MSG_RELEASE:
      put64 (b, 0, msg->u.release.epoch);
      put32 (b, 8, msg->u.release.slot);
      put32 (b, 12, msg->u.release.generation);
      put64 (b, 16, msg->u.release.sequence);
      return RELEASE_FIXED;
    case GPUSHARE_MSG_CAPS:
      put32 (b, 0, msg->u.caps.flags);
      put32 (b, 4, 0);
      put64 (b, 8, msg->u.caps.latency);
      raw_layout (b + 16, &msg->u.caps.layout);
      return CAPS_FIXED;
    case GPUSHARE_MSG_EOS:
      put64 (b, 0, msg->u.eos.last_sequence);
      return EOS_FIXED;
    case GPUSHARE_MSG_GOODBYE:
      put32 (b, 0, msg->u.goodbye.reason);
      /* minor 3: only when it says something */
      if (!msg->u.goodbye.flags && !msg->u.goodbye.last_sequence)
        return GOODBYE_FIXED;
      put32 (b, 4, msg->u.goodbye.flags);
      put64 (b, 8, msg->u.goodbye.last_sequence);
      return GOODBYE_HELD_FIXED;
    case GPUSHARE_MSG_ERROR:
      put32 (b, 0, msg->u.error.code);
      put32 (b, 4, msg->u.error.text_len);
      return ERROR_FIXED;
    case GPUSHARE_MSG_PING:
      return PING_FIXED;
    case GPUSHARE_MSG_META:
      put64 (b, 0, msg->u.meta.sequence);
      put32 (b, 8, msg->u.meta.n_entries);
      put32 (b, 12, msg->u.meta.data_len);
      return META_FIXED;
    case GPUSHARE_MSG_EVENT:
      put32 (b, 0, msg->u.event.kind);
      put32 (b, 4, msg->u.event.text_len);
      return EVENT_FIXED;
    case GPUSHARE_MSG_OBSERVE:
      put16 (b, 0, msg->u.observe.schema_major);
      put16 (b, 2, msg->u.observe.schema_minor);
      put32 (b, 4, msg->u.observe.interval_ms);
      put32 (b, 8, msg->u.observe.pid);
      put32 (b, 12, msg->u.observe.name_len);
      return OBSERVE_FIXED;
    case GPUSHARE_MSG_STATUS:
      put32 (b, 0, msg->u.status.flags);
      put32 (b, 4, msg->u.status.text_len);
      return STATUS_FIXED;
    case GPUSHARE_MSG_NOTICE:
      put32 (b, 0, msg->u.notice.code);
      put32 (b, NOTICE_SHARE, msg->u.notice.share);
      put32 (b, NOTICE_SLOTS_HELD, msg->u.notice.slots_held);
      put32 (b, NOTICE_N_CONSUMERS, msg->u.notice.n_consumers);
      put64 (b, 16, msg->u.notice.skipped);
      put64 (b, 24, msg->u.notice.sequence);
      return NOTICE_FIXED;
    case GPUSHARE_MSG_LANE:
      put32 (b, LANE_N_ENTRIES, msg->u.lane.n_entries);
      put32 (b, LANE_ENTRY_SIZE, msg->u.lane.entry_size);
      put64 (b, LANE_SIZE, msg->u.lane.size);
      if (!msg->u.lane.meta_size)
        return LANE_FIXED;
      /* minor 9: the meta region's size, then 4 reserved bytes */
      put32 (b, LANE_FIXED, msg->u.lane.meta_size);
      put32 (b, LANE_FIXED + 4, 0);
      return LANE_METAS_FIXED;
    default:
      g_assert_not_reached ();
  }
  return 0;
}

/* Fixed part, then each variable part's declared length of bytes
 * (declared lengths must fit their buffers here): strings, and the opaque
 * handles of SLOTS.  b must hold GPUSHARE_MAX_PAYLOAD bytes. */
static gsize
raw_payload (const GpuShareMsg * msg, guint8 * b)
{
  gsize len = raw_fixed (msg, b);

  switch (msg->type) {
    case GPUSHARE_MSG_ANNOUNCE:
      memcpy (b + len, msg->u.announce.name, msg->u.announce.name_len);
      len += msg->u.announce.name_len;
      memcpy (b + len, msg->u.announce.layout.caps,
          msg->u.announce.layout.caps_len);
      len += msg->u.announce.layout.caps_len;
      break;
    case GPUSHARE_MSG_ACCEPT:
      memcpy (b + len, msg->u.accept.name, msg->u.accept.name_len);
      len += msg->u.accept.name_len;
      memcpy (b + len, msg->u.accept.reason, msg->u.accept.reason_len);
      len += msg->u.accept.reason_len;
      break;
    case GPUSHARE_MSG_SLOTS:
      g_assert (msg->u.slots.n_handles <= GPUSHARE_MAX_HANDLES);
      memcpy (b + len, msg->u.slots.handles,
          msg->u.slots.n_handles * HANDLE_SIZE);
      len += msg->u.slots.n_handles * HANDLE_SIZE;
      break;
    case GPUSHARE_MSG_CAPS:
      memcpy (b + len, msg->u.caps.layout.caps, msg->u.caps.layout.caps_len);
      len += msg->u.caps.layout.caps_len;
      break;
    case GPUSHARE_MSG_ERROR:
      memcpy (b + len, msg->u.error.text, msg->u.error.text_len);
      len += msg->u.error.text_len;
      break;
    case GPUSHARE_MSG_META:
      memcpy (b + len, msg->u.meta.data, msg->u.meta.data_len);
      len += msg->u.meta.data_len;
      break;
    case GPUSHARE_MSG_EVENT:
      memcpy (b + len, msg->u.event.text, msg->u.event.text_len);
      len += msg->u.event.text_len;
      break;
    case GPUSHARE_MSG_OBSERVE:
      memcpy (b + len, msg->u.observe.name, msg->u.observe.name_len);
      len += msg->u.observe.name_len;
      break;
    case GPUSHARE_MSG_STATUS:
      memcpy (b + len, msg->u.status.text, msg->u.status.text_len);
      len += msg->u.status.text_len;
      break;
    default:
      break;
  }
  return len;
}

/* Parses payload from a heap copy of exactly len bytes (ASan sees any
 * over-read), with a header that declares len. */
static GpuShareParseResult
parse_payload (guint type, guint32 n_fds, const guint8 * payload, gsize len,
    GpuShareMsg * msg)
{
  GpuShareHeader hdr = { 0, };
  GpuShareParseResult res;
  guint8 *copy = len ? g_memdup2 (payload, len) : NULL;

  hdr.magic = GPUSHARE_MAGIC;
  hdr.version_major = GPUSHARE_VERSION_MAJOR;
  hdr.version_minor = GPUSHARE_VERSION_MINOR;
  hdr.type = type;
  hdr.payload_len = len;
  hdr.n_fds = n_fds;
  res = gpushare_msg_parse (&hdr, copy, len, msg);
  g_free (copy);
  return res;
}

static GpuShareParseResult
parse_raw_msg (const GpuShareMsg * in, guint32 n_fds, GpuShareMsg * out)
{
  guint8 buf[GPUSHARE_MAX_PAYLOAD];
  gsize len = raw_payload (in, buf);

  return parse_payload (in->type, n_fds, buf, len, out);
}

/* ------------------------------------------------------------------ */
/* sample messages                                                     */

/* exactly len bytes of valid UTF-8 mixing 1- to 4-byte sequences,
 * NUL-terminated */
static void
fill_utf8 (gchar * dst, gsize len)
{
  static const gchar *const seqs[] = { "a", "\xc3\xa9", "\xe2\x82\xac",
    "\xf0\x9d\x84\x9e", "Z",
  };
  gsize pos = 0;
  guint i = 0;

  while (pos < len) {
    const gchar *s = seqs[i++ % G_N_ELEMENTS (seqs)];
    gsize n = strlen (s);

    /* too little room left for this sequence: pad with ASCII */
    if (n > len - pos) {
      s = "x";
      n = 1;
    }
    memcpy (dst + pos, s, n);
    pos += n;
  }
  dst[len] = '\0';
  g_assert (g_utf8_validate (dst, len, NULL));
}

/* big: every extreme the caps allow */
static void
fill_layout_max (GpuShareLayout * l)
{
  l->epoch = G_MAXUINT64;
  l->slot_size = GPUSHARE_MAX_SLOT_SIZE;
  l->frame_size = GPUSHARE_MAX_SLOT_SIZE;
  l->n_slots = GPUSHARE_MAX_SLOTS;
  l->n_planes = GPUSHARE_MAX_PLANES;
  l->offsets[0] = 0;
  l->offsets[1] = 1;
  l->offsets[2] = GPUSHARE_MAX_SLOT_SIZE / 2;
  l->offsets[3] = GPUSHARE_MAX_SLOT_SIZE - 1;
  l->strides[0] = G_MININT32;
  l->strides[1] = -1;
  l->strides[2] = 1;
  l->strides[3] = G_MAXINT32;
  fill_utf8 (l->caps, GPUSHARE_MAX_CAPS_LEN);
  l->caps_len = GPUSHARE_MAX_CAPS_LEN;
}

/* small: a realistic 1080p NV12 layout */
static void
fill_layout_small (GpuShareLayout * l)
{
  l->epoch = 0;
  l->frame_size = 3110400;
  l->slot_size = 4 * 1024 * 1024;
  l->n_slots = 1;
  l->n_planes = 2;
  l->offsets[0] = 0;
  l->offsets[1] = 1920 * 1080;
  l->strides[0] = 1920;
  l->strides[1] = 1920;
  fail_unless (gpushare_layout_set_caps (l, "video/x-raw,format=NV12,"
          "width=1920,height=1080,framerate=30/1"));
}

/* 16 bytes from seed up, so that a swapped or shifted byte shows */
static void
fill_uuid (guint8 * uuid, guint8 seed)
{
  guint i;

  for (i = 0; i < 16; i++)
    uuid[i] = seed + i;
}

/* n opaque handles (memory or event), each one different and every byte
 * value present: handle i holds (i * 64 + j) * 3 + 1, modulo 256, at
 * byte j; the first and last handles are all 0x00 and all 0xff */
static void
fill_handles (guint8 handles[][GPUSHARE_HANDLE_SIZE], guint32 n)
{
  guint i, j;

  for (i = 0; i < n; i++) {
    for (j = 0; j < GPUSHARE_HANDLE_SIZE; j++)
      handles[i][j] = ((i * GPUSHARE_HANDLE_SIZE + j) * 3 + 1) & 0xff;
  }
  if (n > 0)
    memset (handles[0], 0x00, GPUSHARE_HANDLE_SIZE);
  if (n > 1)
    memset (handles[n - 1], 0xff, GPUSHARE_HANDLE_SIZE);
}

/* What docs/protocol.md asks of a SLOTS, written from the document and
 * not from the codec: legacy and fabric slots travel as one memory handle
 * each, at the start of the handles, and then without an fd; event sync
 * adds a ready and a done handle per slot. */
static gboolean
slots_in_handles (guint32 mem_type)
{
  return mem_type == GPUSHARE_MEM_CUDA_LEGACY ||
      mem_type == GPUSHARE_MEM_CUDA_FABRIC;
}

static guint32
want_handles (guint32 mem_type, guint32 sync_mode, guint32 n_slots)
{
  return (slots_in_handles (mem_type) ? n_slots : 0) +
      (sync_mode == GPUSHARE_SYNC_EVENT ? 2 * n_slots : 0);
}

static guint32
want_fds (guint32 mem_type, guint32 n_slots, guint32 n_sync_fds)
{
  return (slots_in_handles (mem_type) ? 0 : n_slots) + n_sync_fds;
}

/* META entries: big, as many as fit (the most entries, the whole data),
 * else one small entry of an unknown kind */
static void
fill_meta (GpuShareMeta * m, gboolean big)
{
  guint i, n = big ? GPUSHARE_MAX_META_ENTRIES : 1;
  gsize body = big ? GPUSHARE_MAX_META_LEN / n - GPUSHARE_META_ENTRY_HEADER : 5;

  m->sequence = big ? G_MAXUINT64 : 1;
  m->n_entries = n;
  m->data_len = 0;
  for (i = 0; i < n; i++) {
    guint8 *e = m->data + m->data_len;

    put16 (e, 0, big ? 0xffff : 0x7777);
    put16 (e, 2, 0);
    put32 (e, 4, body);
    memset (e + GPUSHARE_META_ENTRY_HEADER, 0xa5 ^ i, body);
    m->data_len += GPUSHARE_META_ENTRY_HEADER + body;
  }
}

/* variant 2, where a type has one: GPU memory with its sync fields;
 * variant 3, SLOTS only: legacy memory handles and a semaphore block */
static guint
n_variants (guint type)
{
  switch (type) {
    case GPUSHARE_MSG_SLOTS:
      return 4;
    case GPUSHARE_MSG_ANNOUNCE:
    case GPUSHARE_MSG_ACCEPT:
      return 3;
    default:
      return 2;
  }
}

/* A valid, non-trivial message of type; variant 0 is the largest and most
 * extreme, variant 1 small or zero values (system memory), variant 2 (see
 * n_variants ()) a realistic CUDA one, variant 3 a second CUDA SLOTS.
 * *n_fds is what it needs. */
static void
sample_msg (guint type, guint variant, GpuShareMsg * msg, guint32 * n_fds)
{
  gboolean big = (variant == 0);
  gboolean gpu = (variant == 2);
  gboolean legacy = (variant == 3);

  memset (msg, 0, sizeof (*msg));
  msg->type = type;
  *n_fds = 0;

  switch (type) {
    case GPUSHARE_MSG_ANNOUNCE:{
      GpuShareAnnounce *a = &msg->u.announce;

      a->schema_major = GPUSHARE_VERSION_MAJOR;
      a->schema_minor = big ? G_MAXUINT16 : 0;
      a->mem_types = big ? G_MAXUINT32 : GPUSHARE_MEM_SYSTEM;
      a->flags = big ? G_MAXUINT32 : 0;
      a->pid = big ? G_MAXUINT32 : 1;
      a->uid = big ? G_MAXUINT32 : 0;
      a->instance = big ? G_MAXUINT64 : 0;
      a->latency = big ? G_MAXUINT64 : 0;
      if (big) {
        fill_layout_max (&a->layout);
        fill_utf8 (a->name, GPUSHARE_MAX_NAME_LEN);
        a->name_len = GPUSHARE_MAX_NAME_LEN;
        memset (a->device.uuid, 0xff, 16);
        a->device.caps = G_MAXUINT32;
        a->device.sync_modes = G_MAXUINT32;
        a->device.compute_mode = G_MININT32;
      } else {
        fill_layout_small (&a->layout);
      }
      if (gpu) {
        a->mem_types = GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM |
            GPUSHARE_MEM_CUDA_LEGACY;
        a->pid = 4242;
        a->uid = 1000;
        a->instance = G_GUINT64_CONSTANT (0x0123456789abcdef);
        a->latency = 33333333;
        fill_uuid (a->device.uuid, 0x10);
        a->device.caps = GPUSHARE_DEVICE_CAP_VMM_FD |
            GPUSHARE_DEVICE_CAP_IPC_EVENT | GPUSHARE_DEVICE_CAP_MEM_OPS |
            GPUSHARE_DEVICE_CAP_LEGACY_IPC;
        a->device.sync_modes = GPUSHARE_SYNC_HOST | GPUSHARE_SYNC_SEMAPHORE |
            GPUSHARE_SYNC_EVENT;
        a->device.compute_mode = 3;     /* EXCLUSIVE_PROCESS */
        memcpy (a->name, "gpusharesink0", 13);
        a->name_len = 13;
      }
      break;
    }
    case GPUSHARE_MSG_ACCEPT:{
      GpuShareAccept *a = &msg->u.accept;

      a->schema_major = GPUSHARE_VERSION_MAJOR;
      a->schema_minor = big ? G_MAXUINT16 : 0;
      a->mem_type = big ? GPUSHARE_MEM_CUDA_FABRIC : GPUSHARE_MEM_SYSTEM;
      a->flags = big ? G_MAXUINT32 : 0;
      a->pid = big ? G_MAXUINT32 : 0;
      a->instance = big ? G_MAXUINT64 : 0;
      if (big) {
        fill_utf8 (a->name, GPUSHARE_MAX_NAME_LEN);
        a->name_len = GPUSHARE_MAX_NAME_LEN;
        a->sync_mode = GPUSHARE_SYNC_EVENT;
        memset (a->uuid, 0xff, 16);
        fill_utf8 (a->reason, GPUSHARE_MAX_REASON_LEN);
        a->reason_len = GPUSHARE_MAX_REASON_LEN;
      }
      if (gpu) {
        a->mem_type = GPUSHARE_MEM_CUDA_VMM;
        a->pid = 4343;
        a->instance = G_GUINT64_CONSTANT (0xfedcba9876543210);
        a->sync_mode = GPUSHARE_SYNC_SEMAPHORE;
        fill_uuid (a->uuid, 0x10);
        memcpy (a->name, "gpusharesrc0", 12);
        a->name_len = 12;
        memcpy (a->reason, "same GPU: VMM fd, 64-bit semaphores", 35);
        a->reason_len = 35;
      }
      break;
    }
    case GPUSHARE_MSG_SLOTS:{
      GpuShareSlots *s = &msg->u.slots;

      s->epoch = big ? G_MAXUINT64 : 0;
      s->slot_size = big ? GPUSHARE_MAX_SLOT_SIZE : 1;
      s->n_slots = big ? GPUSHARE_MAX_SLOTS : 1;
      s->mem_type = big ? GPUSHARE_MEM_CUDA_VMM : GPUSHARE_MEM_SYSTEM;
      /* a slot's fd each */
      *n_fds = big ? GPUSHARE_MAX_SLOTS + 3 : 1;
      if (big) {
        /* every fd there is room for: one a slot, the block's, its ready
         * words' and the side memory's, of the largest size */
        s->sync_mode = GPUSHARE_SYNC_SEMAPHORE;
        s->n_sync_fds = 2;
        s->sync_size = GPUSHARE_MAX_SLOT_SIZE;
        s->side_pages = GPUSHARE_MAX_SIDE_PAGES;
      }
      if (gpu) {
        /* the largest payload: for every slot a fabric memory handle,
         * then a ready and a done event handle; no fd at all */
        s->epoch = 7;
        s->slot_size = 4 * 1024 * 1024;
        s->n_slots = GPUSHARE_MAX_SLOTS;
        s->mem_type = GPUSHARE_MEM_CUDA_FABRIC;
        s->sync_mode = GPUSHARE_SYNC_EVENT;
        s->n_handles = 3 * GPUSHARE_MAX_SLOTS;
        fill_handles (s->handles, s->n_handles);
        *n_fds = 0;
      }
      if (legacy) {
        /* a legacy memory handle a slot, and the semaphore block: its fd
         * is the only one */
        s->epoch = 8;
        s->slot_size = 2 * 1024 * 1024;
        s->n_slots = 3;
        s->mem_type = GPUSHARE_MEM_CUDA_LEGACY;
        s->sync_mode = GPUSHARE_SYNC_SEMAPHORE;
        s->n_sync_fds = 1;
        s->sync_size = 3 * 16;
        s->n_handles = 3;
        fill_handles (s->handles, s->n_handles);
        *n_fds = 1;
      }
      break;
    }
    case GPUSHARE_MSG_MAPPED:
    case GPUSHARE_MSG_UNMAPPED:
      msg->u.mapped.epoch = big ? G_MAXUINT64 : 0;
      break;
    case GPUSHARE_MSG_FRAME:{
      GpuShareFrame *f = &msg->u.frame;

      f->epoch = big ? G_MAXUINT64 : 0;
      f->slot = big ? G_MAXUINT32 : 0;
      f->generation = big ? G_MAXUINT32 : 0;
      f->sequence = big ? G_MAXUINT64 : 0;
      f->pts = big ? G_MAXUINT64 : 0;
      f->dts = big ? G_MAXUINT64 - 1 : 0;
      f->duration = big ? G_GUINT64_CONSTANT (0x8000000000000000) : 0;
      f->offset = big ? G_GUINT64_CONSTANT (0x0123456789abcdef) : 0;
      f->offset_end = big ? G_MAXUINT64 : 0;
      f->buffer_flags = big ? G_MAXUINT32 : 0;
      f->flags = big ? GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME : 0;
      /* minor 6: a leaky producer's FRAME, 80 bytes; a lossless one's is
       * minor 5's 72 */
      f->share = big ? G_MAXUINT32 : 0;
      break;
    }
    case GPUSHARE_MSG_RELEASE:{
      GpuShareRelease *r = &msg->u.release;

      r->epoch = big ? G_MAXUINT64 : 0;
      r->slot = big ? G_MAXUINT32 : 0;
      r->generation = big ? 0x80000000u : 0;
      r->sequence = big ? G_MAXUINT64 : 0;
      break;
    }
    case GPUSHARE_MSG_CAPS:{
      GpuShareCaps *c = &msg->u.caps;

      c->flags = big ? G_MAXUINT32 : GPUSHARE_STREAM_FLAG_LIVE;
      c->latency = big ? G_MAXUINT64 : 0;
      if (big)
        fill_layout_max (&c->layout);
      else
        fill_layout_small (&c->layout);
      break;
    }
    case GPUSHARE_MSG_EOS:
      msg->u.eos.last_sequence = big ? G_MAXUINT64 : 0;
      break;
    case GPUSHARE_MSG_GOODBYE:
      /* with the part minor 3 added; without it in test_goodbye_held */
      msg->u.goodbye.reason = big ? G_MAXUINT32 : GPUSHARE_ERR_SHUTDOWN;
      msg->u.goodbye.flags = big ? G_MAXUINT32 : GPUSHARE_GOODBYE_FLAG_HELD;
      msg->u.goodbye.last_sequence = big ? G_MAXUINT64 : 1;
      break;
    case GPUSHARE_MSG_ERROR:{
      GpuShareError *e = &msg->u.error;

      e->code = big ? G_MAXUINT32 : GPUSHARE_ERR_NONE;
      if (big) {
        fill_utf8 (e->text, GPUSHARE_MAX_TEXT_LEN);
        e->text_len = GPUSHARE_MAX_TEXT_LEN;
      }
      break;
    }
    case GPUSHARE_MSG_PING:
      /* nothing to fill: the empty heartbeat */
      break;
    case GPUSHARE_MSG_META:
      fill_meta (&msg->u.meta, big);
      break;
    case GPUSHARE_MSG_EVENT:
      msg->u.event.kind = big ? G_MAXUINT32 : GPUSHARE_EVENT_TAGS;
      if (big) {
        fill_utf8 (msg->u.event.text, GPUSHARE_MAX_EVENT_LEN);
        msg->u.event.text_len = GPUSHARE_MAX_EVENT_LEN;
      } else {
        strcpy (msg->u.event.text, "taglist, title=(string)x");
        msg->u.event.text_len = strlen (msg->u.event.text);
      }
      break;
    case GPUSHARE_MSG_OBSERVE:{
      GpuShareObserve *o = &msg->u.observe;

      o->schema_major = GPUSHARE_VERSION_MAJOR;
      o->schema_minor = big ? G_MAXUINT16 : 0;
      o->interval_ms = big ? GPUSHARE_MAX_OBSERVE_INTERVAL :
          GPUSHARE_MIN_OBSERVE_INTERVAL;
      o->pid = big ? G_MAXUINT32 : 0;
      if (big) {
        fill_utf8 (o->name, GPUSHARE_MAX_NAME_LEN);
        o->name_len = GPUSHARE_MAX_NAME_LEN;
      }
      break;
    }
    case GPUSHARE_MSG_STATUS:
      msg->u.status.flags = big ? G_MAXUINT32 : 0;
      if (big) {
        fill_utf8 (msg->u.status.text, GPUSHARE_MAX_STATUS_LEN);
        msg->u.status.text_len = GPUSHARE_MAX_STATUS_LEN;
      } else {
        strcpy (msg->u.status.text, "application/x-gpushare-status");
        msg->u.status.text_len = strlen (msg->u.status.text);
      }
      break;
    case GPUSHARE_MSG_NOTICE:{
      GpuShareNotice *n = &msg->u.notice;

      /* a code this version does not know travels: the consumer skips it */
      n->code = big ? G_MAXUINT32 : GPUSHARE_NOTICE_STALLED;
      n->share = big ? GPUSHARE_MAX_SLOTS : 1;
      n->slots_held = big ? GPUSHARE_MAX_SLOTS : 1;
      n->n_consumers = big ? GPUSHARE_MAX_HOLDERS_WIRE : 2;
      n->skipped = big ? G_MAXUINT64 : 60;
      n->sequence = big ? G_MAXUINT64 : 61;
      break;
    }
    case GPUSHARE_MSG_LANE:{
      GpuShareLaneInfo *l = &msg->u.lane;

      /* the largest lane and the smallest, written out rather than
       * computed by the codec: 128 + 1024 * (128 + 32), 128 + 16 * 160 */
      l->n_entries = big ? 1024 : 16;
      l->entry_size = 128;
      /* the largest with the largest meta region (16 MiB) */
      l->meta_size = big ? 16777216 : 0;
      l->size = big ? 163968 + 16777216 : 2688;
      /* the lane's memfd */
      *n_fds = 1;
      break;
    }
    default:
      g_assert_not_reached ();
  }
}

/* ------------------------------------------------------------------ */
/* comparison                                                          */

static void
assert_string_equal (const gchar * got, guint32 got_len, const gchar * want,
    guint32 want_len)
{
  fail_unless_equals_int (got_len, want_len);
  fail_unless (memcmp (got, want, want_len) == 0);
  /* the parser terminates what the wire does not */
  fail_unless (got[got_len] == '\0');
}

static void
assert_layout_equal (const GpuShareLayout * a, const GpuShareLayout * b)
{
  guint i;

  fail_unless_equals_uint64 (a->epoch, b->epoch);
  fail_unless_equals_uint64 (a->frame_size, b->frame_size);
  fail_unless_equals_uint64 (a->slot_size, b->slot_size);
  fail_unless_equals_int (a->n_slots, b->n_slots);
  fail_unless_equals_int (a->n_planes, b->n_planes);
  for (i = 0; i < GPUSHARE_MAX_PLANES; i++) {
    fail_unless_equals_uint64 (a->offsets[i], b->offsets[i]);
    fail_unless_equals_int (a->strides[i], b->strides[i]);
  }
  assert_string_equal (a->caps, a->caps_len, b->caps, b->caps_len);
}

static void
assert_frame_equal (const GpuShareFrame * a, const GpuShareFrame * b)
{
  fail_unless_equals_uint64 (a->epoch, b->epoch);
  fail_unless_equals_uint64 (a->slot, b->slot);
  fail_unless_equals_uint64 (a->generation, b->generation);
  fail_unless_equals_uint64 (a->sequence, b->sequence);
  fail_unless_equals_uint64 (a->pts, b->pts);
  fail_unless_equals_uint64 (a->dts, b->dts);
  fail_unless_equals_uint64 (a->duration, b->duration);
  fail_unless_equals_uint64 (a->offset, b->offset);
  fail_unless_equals_uint64 (a->offset_end, b->offset_end);
  fail_unless_equals_uint64 (a->buffer_flags, b->buffer_flags);
  fail_unless_equals_uint64 (a->flags, b->flags);
  fail_unless_equals_uint64 (a->share, b->share);
}

static void
assert_msg_equal (const GpuShareMsg * got, const GpuShareMsg * want)
{
  fail_unless_equals_int (got->type, want->type);

  switch (want->type) {
    case GPUSHARE_MSG_ANNOUNCE:{
      const GpuShareAnnounce *a = &got->u.announce, *b = &want->u.announce;

      fail_unless_equals_int (a->schema_major, b->schema_major);
      fail_unless_equals_int (a->schema_minor, b->schema_minor);
      fail_unless_equals_uint64 (a->mem_types, b->mem_types);
      fail_unless_equals_uint64 (a->flags, b->flags);
      fail_unless_equals_uint64 (a->pid, b->pid);
      fail_unless_equals_uint64 (a->uid, b->uid);
      fail_unless_equals_uint64 (a->instance, b->instance);
      fail_unless_equals_uint64 (a->latency, b->latency);
      assert_layout_equal (&a->layout, &b->layout);
      fail_unless (memcmp (a->device.uuid, b->device.uuid, 16) == 0);
      fail_unless_equals_uint64 (a->device.caps, b->device.caps);
      fail_unless_equals_uint64 (a->device.sync_modes, b->device.sync_modes);
      fail_unless_equals_int (a->device.compute_mode, b->device.compute_mode);
      assert_string_equal (a->name, a->name_len, b->name, b->name_len);
      break;
    }
    case GPUSHARE_MSG_ACCEPT:{
      const GpuShareAccept *a = &got->u.accept, *b = &want->u.accept;

      fail_unless_equals_int (a->schema_major, b->schema_major);
      fail_unless_equals_int (a->schema_minor, b->schema_minor);
      fail_unless_equals_uint64 (a->mem_type, b->mem_type);
      fail_unless_equals_uint64 (a->flags, b->flags);
      fail_unless_equals_uint64 (a->pid, b->pid);
      fail_unless_equals_uint64 (a->instance, b->instance);
      fail_unless_equals_uint64 (a->sync_mode, b->sync_mode);
      fail_unless (memcmp (a->uuid, b->uuid, 16) == 0);
      assert_string_equal (a->name, a->name_len, b->name, b->name_len);
      assert_string_equal (a->reason, a->reason_len, b->reason, b->reason_len);
      break;
    }
    case GPUSHARE_MSG_SLOTS:{
      const GpuShareSlots *a = &got->u.slots, *b = &want->u.slots;

      fail_unless_equals_uint64 (a->epoch, b->epoch);
      fail_unless_equals_uint64 (a->slot_size, b->slot_size);
      fail_unless_equals_uint64 (a->n_slots, b->n_slots);
      fail_unless_equals_uint64 (a->mem_type, b->mem_type);
      fail_unless_equals_uint64 (a->sync_mode, b->sync_mode);
      fail_unless_equals_uint64 (a->n_sync_fds, b->n_sync_fds);
      fail_unless_equals_uint64 (a->sync_size, b->sync_size);
      fail_unless_equals_uint64 (a->n_handles, b->n_handles);
      fail_unless_equals_uint64 (a->side_pages, b->side_pages);
      fail_unless (b->n_handles <= GPUSHARE_MAX_HANDLES);
      fail_unless (memcmp (a->handles, b->handles,
              b->n_handles * GPUSHARE_HANDLE_SIZE) == 0);
      break;
    }
    case GPUSHARE_MSG_MAPPED:
    case GPUSHARE_MSG_UNMAPPED:
      fail_unless_equals_uint64 (got->u.mapped.epoch, want->u.mapped.epoch);
      break;
    case GPUSHARE_MSG_FRAME:
      assert_frame_equal (&got->u.frame, &want->u.frame);
      break;
    case GPUSHARE_MSG_RELEASE:{
      const GpuShareRelease *a = &got->u.release, *b = &want->u.release;

      fail_unless_equals_uint64 (a->epoch, b->epoch);
      fail_unless_equals_uint64 (a->slot, b->slot);
      fail_unless_equals_uint64 (a->generation, b->generation);
      fail_unless_equals_uint64 (a->sequence, b->sequence);
      break;
    }
    case GPUSHARE_MSG_CAPS:
      fail_unless_equals_uint64 (got->u.caps.flags, want->u.caps.flags);
      fail_unless_equals_uint64 (got->u.caps.latency, want->u.caps.latency);
      assert_layout_equal (&got->u.caps.layout, &want->u.caps.layout);
      break;
    case GPUSHARE_MSG_EOS:
      fail_unless_equals_uint64 (got->u.eos.last_sequence,
          want->u.eos.last_sequence);
      break;
    case GPUSHARE_MSG_GOODBYE:
      fail_unless_equals_uint64 (got->u.goodbye.reason, want->u.goodbye.reason);
      fail_unless_equals_uint64 (got->u.goodbye.flags, want->u.goodbye.flags);
      fail_unless_equals_uint64 (got->u.goodbye.last_sequence,
          want->u.goodbye.last_sequence);
      break;
    case GPUSHARE_MSG_ERROR:
      fail_unless_equals_uint64 (got->u.error.code, want->u.error.code);
      assert_string_equal (got->u.error.text, got->u.error.text_len,
          want->u.error.text, want->u.error.text_len);
      break;
    case GPUSHARE_MSG_PING:
      break;
    case GPUSHARE_MSG_EVENT:
      fail_unless_equals_uint64 (got->u.event.kind, want->u.event.kind);
      assert_string_equal (got->u.event.text, got->u.event.text_len,
          want->u.event.text, want->u.event.text_len);
      break;
    case GPUSHARE_MSG_OBSERVE:{
      const GpuShareObserve *a = &got->u.observe, *b = &want->u.observe;

      fail_unless_equals_int (a->schema_major, b->schema_major);
      fail_unless_equals_int (a->schema_minor, b->schema_minor);
      fail_unless_equals_uint64 (a->interval_ms, b->interval_ms);
      fail_unless_equals_uint64 (a->pid, b->pid);
      assert_string_equal (a->name, a->name_len, b->name, b->name_len);
      break;
    }
    case GPUSHARE_MSG_STATUS:
      fail_unless_equals_uint64 (got->u.status.flags, want->u.status.flags);
      assert_string_equal (got->u.status.text, got->u.status.text_len,
          want->u.status.text, want->u.status.text_len);
      break;
    case GPUSHARE_MSG_NOTICE:{
      const GpuShareNotice *a = &got->u.notice, *b = &want->u.notice;

      fail_unless_equals_uint64 (a->code, b->code);
      fail_unless_equals_uint64 (a->share, b->share);
      fail_unless_equals_uint64 (a->slots_held, b->slots_held);
      fail_unless_equals_uint64 (a->n_consumers, b->n_consumers);
      fail_unless_equals_uint64 (a->skipped, b->skipped);
      fail_unless_equals_uint64 (a->sequence, b->sequence);
      break;
    }
    case GPUSHARE_MSG_LANE:
      fail_unless_equals_uint64 (got->u.lane.n_entries, want->u.lane.n_entries);
      fail_unless_equals_uint64 (got->u.lane.entry_size,
          want->u.lane.entry_size);
      fail_unless_equals_uint64 (got->u.lane.size, want->u.lane.size);
      fail_unless_equals_uint64 (got->u.lane.meta_size, want->u.lane.meta_size);
      break;
    case GPUSHARE_MSG_META:
      fail_unless_equals_uint64 (got->u.meta.sequence, want->u.meta.sequence);
      fail_unless_equals_int (got->u.meta.n_entries, want->u.meta.n_entries);
      fail_unless_equals_int (got->u.meta.data_len, want->u.meta.data_len);
      fail_unless (memcmp (got->u.meta.data, want->u.meta.data,
              want->u.meta.data_len) == 0);
      break;
    default:
      g_assert_not_reached ();
  }
}

/* Builds msg, parses it back through both layers, compares. */
static void
round_trip (const GpuShareMsg * msg, guint32 n_fds)
{
  GByteArray *out = g_byte_array_new ();
  GpuShareHeader hdr;
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);

  fail_unless (gpushare_msg_build (msg, n_fds, out));
  fail_unless (out->len >= GPUSHARE_HEADER_SIZE);
  fail_unless_equals_int (gpushare_header_parse (out->data, out->len, &hdr),
      GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (hdr.magic, GPUSHARE_MAGIC);
  fail_unless_equals_int (hdr.version_major, GPUSHARE_VERSION_MAJOR);
  fail_unless_equals_int (hdr.version_minor, GPUSHARE_VERSION_MINOR);
  fail_unless_equals_int (hdr.type, msg->type);
  fail_unless_equals_int (hdr.flags, 0);
  fail_unless_equals_int (hdr.reserved, 0);
  fail_unless_equals_int (hdr.n_fds, n_fds);
  fail_unless_equals_int (hdr.payload_len, out->len - GPUSHARE_HEADER_SIZE);

  fail_unless_equals_int (parse_payload (hdr.type, hdr.n_fds,
          out->data + GPUSHARE_HEADER_SIZE, hdr.payload_len, back),
      GPUSHARE_PARSE_OK);
  assert_msg_equal (back, msg);

  /* and what came back builds to the same bytes */
  {
    GByteArray *again = g_byte_array_new ();

    fail_unless (gpushare_msg_build (back, n_fds, again));
    fail_unless_equals_int (again->len, out->len);
    fail_unless (memcmp (again->data, out->data, out->len) == 0);
    g_byte_array_unref (again);
  }

  g_free (back);
  g_byte_array_unref (out);
}

/* ------------------------------------------------------------------ */
/* round trips                                                         */

GST_START_TEST (test_round_trip_every_type)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  guint i, variant;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 0; variant < n_variants (all_types[i]); variant++) {
      sample_msg (all_types[i], variant, msg, &n_fds);
      round_trip (msg, n_fds);
    }
  }
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_round_trip_mem_types)
{
  static const guint32 one_bit[] = { GPUSHARE_MEM_SYSTEM,
    GPUSHARE_MEM_CUDA_VMM, GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_MEM_CUDA_FABRIC,
  };
  /* offers may carry bits of a newer minor beside a known one */
  static const guint32 offers[] = { 0x1, 0xf, 0x8, 0x10 | 0x2, G_MAXUINT32 };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (one_bit); i++) {
    /* GPU memory comes with a sync mode, system memory without */
    guint32 sync = one_bit[i] == GPUSHARE_MEM_SYSTEM ? 0 : GPUSHARE_SYNC_HOST;

    sample_msg (GPUSHARE_MSG_ACCEPT, 1, msg, &n_fds);
    msg->u.accept.mem_type = one_bit[i];
    msg->u.accept.sync_mode = sync;
    round_trip (msg, n_fds);
    /* legacy and fabric memory: the slot's handle, and no fd */
    sample_msg (GPUSHARE_MSG_SLOTS, 1, msg, &n_fds);
    msg->u.slots.mem_type = one_bit[i];
    msg->u.slots.sync_mode = sync;
    if (slots_in_handles (one_bit[i])) {
      msg->u.slots.n_handles = 1;
      fill_handles (msg->u.slots.handles, 1);
      n_fds = 0;
    }
    round_trip (msg, n_fds);
  }
  for (i = 0; i < G_N_ELEMENTS (offers); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 1, msg, &n_fds);
    msg->u.announce.mem_types = offers[i];
    msg->u.announce.device.sync_modes = GPUSHARE_SYNC_HOST;
    round_trip (msg, n_fds);
  }
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_round_trip_string_lengths)
{
  static const guint32 lens[] = { 0, 1, 2, 3, 4, 5, 127, 128 };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (lens); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 0, msg, &n_fds);
    fill_utf8 (msg->u.announce.name, lens[i]);
    msg->u.announce.name_len = lens[i];
    round_trip (msg, n_fds);

    sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
    fill_utf8 (msg->u.accept.name, lens[i]);
    msg->u.accept.name_len = lens[i];
    round_trip (msg, n_fds);

    sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
    fill_utf8 (msg->u.accept.reason, lens[i]);
    msg->u.accept.reason_len = lens[i];
    round_trip (msg, n_fds);
    /* each string in its place when the other is empty */
    msg->u.accept.name_len = 0;
    msg->u.accept.name[0] = '\0';
    round_trip (msg, n_fds);

    sample_msg (GPUSHARE_MSG_ERROR, 0, msg, &n_fds);
    fill_utf8 (msg->u.error.text, lens[i]);
    msg->u.error.text_len = lens[i];
    round_trip (msg, n_fds);

    /* caps cannot be empty */
    if (lens[i] > 0) {
      sample_msg (GPUSHARE_MSG_CAPS, 0, msg, &n_fds);
      fill_utf8 (msg->u.caps.layout.caps, lens[i]);
      msg->u.caps.layout.caps_len = lens[i];
      round_trip (msg, n_fds);
    }
  }
  g_free (msg);
}

GST_END_TEST;

/* Offsets and byte order are frozen: these bytes must never change. */
GST_START_TEST (test_golden_bytes)
{
  static const guint8 release[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x06, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
    0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55,
    0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99,
  };
  static const guint8 error[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x0a, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    'b', 'y', 'e',
  };
  /* 3 slots of CUDA VMM memory with a semaphore block: 4 fds */
  static const guint8 slots[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x30, 0x01, 0xef, 0xcd, 0xab, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  /* the same 3 slots of CUDA fabric memory: 3 memory handles, and the
   * block's fd alone; the 192 bytes of handles follow these */
  static const guint8 slots_fabric[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x03, 0x00, 0x00, 0x00, 0xf0, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x30, 0x01, 0xef, 0xcd, 0xab, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  /* 1 slot of CUDA VMM memory with its two event handles: 1 fd; the
   * 128 bytes of handles follow these */
  static const guint8 slots_events[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x03, 0x00, 0x00, 0x00, 0xb0, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  /* 1 slot of legacy CUDA memory with events: its memory handle, then
   * the ready and the done handle, and no fd; the 192 bytes of handles
   * follow these */
  static const guint8 slots_legacy_events[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x03, 0x00, 0x00, 0x00, 0xf0, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  static const guint8 accept[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x3d, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x04, 0x03, 0x02, 0x01,
    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
    0x03, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
    0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    's', 'r', 'c', 'o', 'k',
  };
  /* NOTICE (minor 6): a consumer stalled, 5 slots its share, 4 held, of
   * 12 consumers */
  static const guint8 notice[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x11, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00,
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
    0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99,
  };
  /* LANE (minor 7): a lane of 64 entries of 128 bytes and 64 releases of
   * 32, 128 + 64 * 160 = 10368 bytes, with its memfd: 1 fd */
  static const guint8 lane[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x12, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x40, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    0x80, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  /* ANNOUNCE's device block, payload bytes 128 .. 160 */
  static const guint8 device[] = {
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
    0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    0x0d, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00,
    0xfe, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i;

  /* GPUSHARE_MAGIC reads "GPSH" in memory order */
  fail_unless_equals_uint64 (GPUSHARE_MAGIC,
      'G' | 'P' << 8 | 'S' << 16 | (guint32) 'H' << 24);

  msg->type = GPUSHARE_MSG_RELEASE;
  msg->u.release.epoch = G_GUINT64_CONSTANT (0x0102030405060708);
  msg->u.release.slot = 0x11223344;
  msg->u.release.generation = 0x55667788;
  msg->u.release.sequence = G_GUINT64_CONSTANT (0x99aabbccddeeff00);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (release));
  fail_unless (memcmp (out->data, release, sizeof (release)) == 0);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_ERROR;
  msg->u.error.code = GPUSHARE_ERR_SHUTDOWN;
  memcpy (msg->u.error.text, "bye", 4);
  msg->u.error.text_len = 3;
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (error));
  fail_unless (memcmp (out->data, error, sizeof (error)) == 0);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.epoch = 42;
  msg->u.slots.slot_size = 4 * 1024 * 1024;
  msg->u.slots.n_slots = 3;
  msg->u.slots.mem_type = GPUSHARE_MEM_CUDA_VMM;
  msg->u.slots.sync_mode = GPUSHARE_SYNC_SEMAPHORE;
  msg->u.slots.n_sync_fds = 1;
  msg->u.slots.sync_size = G_GUINT64_CONSTANT (0xabcdef0130);
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 4, out));
  fail_unless_equals_int (out->len, sizeof (slots));
  fail_unless (memcmp (out->data, slots, sizeof (slots)) == 0);

  msg->u.slots.mem_type = GPUSHARE_MEM_CUDA_FABRIC;
  msg->u.slots.n_handles = 3;
  for (i = 0; i < HANDLE_SIZE; i++) {
    msg->u.slots.handles[0][i] = 0x40 + i;
    msg->u.slots.handles[1][i] = 0x80 + i;
    msg->u.slots.handles[2][i] = 0xc0 ^ i;
  }
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 1, out));
  fail_unless_equals_int (out->len, sizeof (slots_fabric) + 3 * HANDLE_SIZE);
  fail_unless (memcmp (out->data, slots_fabric, sizeof (slots_fabric)) == 0);
  /* slot 0's handle, then slot 1's, then slot 2's, byte for byte */
  for (i = 0; i < HANDLE_SIZE; i++) {
    fail_unless_equals_int (out->data[sizeof (slots_fabric) + i], 0x40 + i);
    fail_unless_equals_int (out->data[sizeof (slots_fabric) + HANDLE_SIZE +
            i], 0x80 + i);
    fail_unless_equals_int (out->data[sizeof (slots_fabric) +
            2 * HANDLE_SIZE + i], 0xc0 ^ i);
  }

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.epoch = 5;
  msg->u.slots.slot_size = 4096;
  msg->u.slots.n_slots = 1;
  msg->u.slots.mem_type = GPUSHARE_MEM_CUDA_VMM;
  msg->u.slots.sync_mode = GPUSHARE_SYNC_EVENT;
  msg->u.slots.n_handles = 2;
  for (i = 0; i < HANDLE_SIZE; i++) {
    msg->u.slots.handles[0][i] = i;
    msg->u.slots.handles[1][i] = 0xff - i;
  }
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 1, out));
  fail_unless_equals_int (out->len, sizeof (slots_events) + 2 * HANDLE_SIZE);
  fail_unless (memcmp (out->data, slots_events, sizeof (slots_events)) == 0);
  /* the ready handle, then the done handle, byte for byte */
  for (i = 0; i < HANDLE_SIZE; i++) {
    fail_unless_equals_int (out->data[sizeof (slots_events) + i], i);
    fail_unless_equals_int (out->data[sizeof (slots_events) + HANDLE_SIZE + i],
        0xff - i);
  }

  msg->u.slots.mem_type = GPUSHARE_MEM_CUDA_LEGACY;
  msg->u.slots.n_handles = 3;
  for (i = 0; i < HANDLE_SIZE; i++) {
    msg->u.slots.handles[0][i] = 0x55 ^ i;
    msg->u.slots.handles[1][i] = i;
    msg->u.slots.handles[2][i] = 0xff - i;
  }
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (slots_legacy_events) +
      3 * HANDLE_SIZE);
  fail_unless (memcmp (out->data, slots_legacy_events,
          sizeof (slots_legacy_events)) == 0);
  /* the memory handle, then the ready handle, then the done handle */
  for (i = 0; i < HANDLE_SIZE; i++) {
    fail_unless_equals_int (out->data[sizeof (slots_legacy_events) + i],
        0x55 ^ i);
    fail_unless_equals_int (out->data[sizeof (slots_legacy_events) +
            HANDLE_SIZE + i], i);
    fail_unless_equals_int (out->data[sizeof (slots_legacy_events) +
            2 * HANDLE_SIZE + i], 0xff - i);
  }

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_ACCEPT;
  msg->u.accept.schema_major = 1;
  msg->u.accept.mem_type = GPUSHARE_MEM_CUDA_VMM;
  msg->u.accept.pid = 0x01020304;
  msg->u.accept.instance = G_GUINT64_CONSTANT (0x1122334455667788);
  msg->u.accept.sync_mode = GPUSHARE_SYNC_EVENT;
  for (i = 0; i < 16; i++)
    msg->u.accept.uuid[i] = 0xa0 + i;
  memcpy (msg->u.accept.name, "src", 4);
  msg->u.accept.name_len = 3;
  memcpy (msg->u.accept.reason, "ok", 3);
  msg->u.accept.reason_len = 2;
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (accept));
  fail_unless (memcmp (out->data, accept, sizeof (accept)) == 0);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_NOTICE;
  msg->u.notice.code = GPUSHARE_NOTICE_STALLED;
  msg->u.notice.share = 5;
  msg->u.notice.slots_held = 4;
  msg->u.notice.n_consumers = 12;
  msg->u.notice.skipped = G_GUINT64_CONSTANT (0x0102030405060708);
  msg->u.notice.sequence = G_GUINT64_CONSTANT (0x99aabbccddeeff00);
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (notice));
  fail_unless (memcmp (out->data, notice, sizeof (notice)) == 0);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_LANE;
  msg->u.lane.n_entries = 64;
  msg->u.lane.entry_size = 128;
  msg->u.lane.size = 10368;
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 1, out));
  fail_unless_equals_int (out->len, sizeof (lane));
  fail_unless (memcmp (out->data, lane, sizeof (lane)) == 0);
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build_lane (&msg->u.lane, out));
  fail_unless_equals_int (out->len, sizeof (lane));
  fail_unless (memcmp (out->data, lane, sizeof (lane)) == 0);

  sample_msg (GPUSHARE_MSG_ANNOUNCE, 1, msg, &n_fds);
  msg->u.announce.mem_types = GPUSHARE_MEM_CUDA_VMM;
  for (i = 0; i < 16; i++)
    msg->u.announce.device.uuid[i] = 0x10 + i;
  msg->u.announce.device.caps = GPUSHARE_DEVICE_CAP_VMM_FD |
      GPUSHARE_DEVICE_CAP_IPC_EVENT | GPUSHARE_DEVICE_CAP_MEM_OPS;
  msg->u.announce.device.sync_modes = GPUSHARE_SYNC_SEMAPHORE |
      GPUSHARE_SYNC_EVENT;
  msg->u.announce.device.compute_mode = -2;
  memcpy (msg->u.announce.name, "sink", 5);
  msg->u.announce.name_len = 4;
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, HDR_SIZE + 160 + 4 +
      msg->u.announce.layout.caps_len);
  fail_unless_equals_int (get32 (out->data, 12), 160 + 4 +
      msg->u.announce.layout.caps_len);
  fail_unless (memcmp (out->data + HDR_SIZE + 128, device,
          sizeof (device)) == 0);
  /* the name right after the fixed part, then the caps */
  fail_unless (memcmp (out->data + HDR_SIZE + 160, "sink", 4) == 0);
  fail_unless (memcmp (out->data + HDR_SIZE + 164, msg->u.announce.layout.caps,
          msg->u.announce.layout.caps_len) == 0);

  g_byte_array_unref (out);
  g_free (msg);
}

GST_END_TEST;

/* The test's raw encoder, written from the documented offsets, and the
 * builder agree on every valid message, so the hostile payloads below are
 * the real layout with one field changed. */
GST_START_TEST (test_raw_encoder_matches_builder)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint i, variant;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 0; variant < n_variants (all_types[i]); variant++) {
      GByteArray *out = g_byte_array_new ();
      gsize len;

      sample_msg (all_types[i], variant, msg, &n_fds);
      fail_unless (gpushare_msg_build (msg, n_fds, out));
      len = raw_payload (msg, raw);
      fail_unless_equals_int (out->len, GPUSHARE_HEADER_SIZE + len);
      fail_unless (memcmp (out->data + GPUSHARE_HEADER_SIZE, raw, len) == 0);
      g_byte_array_unref (out);
    }
  }

  /* variable parts follow the fixed part in field order: name, then caps */
  sample_msg (GPUSHARE_MSG_ANNOUNCE, 0, msg, &n_fds);
  raw_payload (msg, raw);
  fail_unless (memcmp (raw + ANNOUNCE_FIXED, msg->u.announce.name,
          GPUSHARE_MAX_NAME_LEN) == 0);
  fail_unless (memcmp (raw + ANNOUNCE_FIXED + GPUSHARE_MAX_NAME_LEN,
          msg->u.announce.layout.caps, GPUSHARE_MAX_CAPS_LEN) == 0);
  /* name, then reason */
  sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
  raw_payload (msg, raw);
  fail_unless (memcmp (raw + ACCEPT_FIXED, msg->u.accept.name,
          GPUSHARE_MAX_NAME_LEN) == 0);
  fail_unless (memcmp (raw + ACCEPT_FIXED + GPUSHARE_MAX_NAME_LEN,
          msg->u.accept.reason, GPUSHARE_MAX_REASON_LEN) == 0);
  /* the handles, in index order: 64 memory handles, 64 ready and 64
   * done event handles */
  sample_msg (GPUSHARE_MSG_SLOTS, 2, msg, &n_fds);
  fail_unless_equals_int (raw_payload (msg, raw),
      SLOTS_FIXED + 3 * GPUSHARE_MAX_SLOTS * HANDLE_SIZE);
  fail_unless_equals_int (get32 (raw, SLOTS_N_HANDLES), 3 * GPUSHARE_MAX_SLOTS);
  fail_unless (memcmp (raw + SLOTS_FIXED, msg->u.slots.handles,
          3 * GPUSHARE_MAX_SLOTS * HANDLE_SIZE) == 0);

  g_free (raw);
  g_free (msg);
}

GST_END_TEST;

/* A stream of messages back to back, as the transport sees it. */
GST_START_TEST (test_stream_of_messages)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  gsize pos = 0;
  guint i, variant;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 0; variant < n_variants (all_types[i]); variant++) {
      guint before = out->len;

      sample_msg (all_types[i], variant, msg, &n_fds);
      fail_unless (gpushare_msg_build (msg, n_fds, out));
      /* appended after what was there, which is left alone */
      fail_unless (out->len > before);
    }
  }

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 0; variant < n_variants (all_types[i]); variant++) {
      GpuShareHeader hdr;

      sample_msg (all_types[i], variant, msg, &n_fds);
      fail_unless_equals_int (gpushare_header_parse (out->data + pos,
              out->len - pos, &hdr), GPUSHARE_PARSE_OK);
      fail_unless (out->len - pos >= GPUSHARE_HEADER_SIZE + hdr.payload_len);
      fail_unless_equals_int (gpushare_msg_parse (&hdr,
              out->data + pos + GPUSHARE_HEADER_SIZE, hdr.payload_len, back),
          GPUSHARE_PARSE_OK);
      assert_msg_equal (back, msg);
      pos += GPUSHARE_HEADER_SIZE + hdr.payload_len;
    }
  }
  fail_unless_equals_int (pos, out->len);

  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* header                                                              */

static void
valid_header (guint8 * b, guint16 type, guint32 payload_len, guint32 n_fds)
{
  raw_header (b, GPUSHARE_MAGIC, GPUSHARE_VERSION_MAJOR,
      GPUSHARE_VERSION_MINOR, type, 0, payload_len, n_fds, 0);
}

/* exact-size heap copy, for ASan */
static GpuShareParseResult
parse_header_bytes (const guint8 * b, gsize len, GpuShareHeader * hdr)
{
  guint8 *copy = len ? g_memdup2 (b, len) : NULL;
  GpuShareParseResult res = gpushare_header_parse (copy, len, hdr);

  g_free (copy);
  return res;
}

GST_START_TEST (test_header_need_more)
{
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  gsize len;

  valid_header (b, GPUSHARE_MSG_FRAME, FRAME_FIXED, 0);
  for (len = 0; len < HDR_SIZE; len++)
    fail_unless_equals_int (parse_header_bytes (b, len, &hdr),
        GPUSHARE_PARSE_NEED_MORE);
  fail_unless_equals_int (gpushare_header_parse (NULL, 0, &hdr),
      GPUSHARE_PARSE_NEED_MORE);
  /* even a garbage prefix only asks for more */
  memset (b, 0xff, sizeof (b));
  fail_unless_equals_int (parse_header_bytes (b, HDR_SIZE - 1, &hdr),
      GPUSHARE_PARSE_NEED_MORE);
  valid_header (b, GPUSHARE_MSG_FRAME, FRAME_FIXED, 0);
  fail_unless_equals_int (parse_header_bytes (b, HDR_SIZE, &hdr),
      GPUSHARE_PARSE_OK);
}

GST_END_TEST;

GST_START_TEST (test_header_fields)
{
  guint8 b[HDR_SIZE + 8];
  GpuShareHeader hdr;

  /* flags and reserved are ignored, for a later minor to use */
  raw_header (b, GPUSHARE_MAGIC, GPUSHARE_VERSION_MAJOR, 0xbeef,
      GPUSHARE_MSG_SLOTS, 0xa55a, GPUSHARE_MAX_PAYLOAD, GPUSHARE_MAX_FDS,
      0xdeadbeef);
  /* bytes after the header are not its business */
  memset (b + HDR_SIZE, 0xee, 8);
  fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
      GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (hdr.magic, GPUSHARE_MAGIC);
  fail_unless_equals_int (hdr.version_major, GPUSHARE_VERSION_MAJOR);
  fail_unless_equals_int (hdr.version_minor, 0xbeef);
  fail_unless_equals_int (hdr.type, GPUSHARE_MSG_SLOTS);
  fail_unless_equals_int (hdr.flags, 0xa55a);
  fail_unless_equals_int (hdr.payload_len, GPUSHARE_MAX_PAYLOAD);
  fail_unless_equals_int (hdr.n_fds, GPUSHARE_MAX_FDS);
  fail_unless_equals_uint64 (hdr.reserved, 0xdeadbeef);
}

GST_END_TEST;

GST_START_TEST (test_header_bad_magic)
{
  static const guint32 magics[] = { 0, 0x48535046, 0x48535048, 0x47505348,
    0x485350c7, 0xc8535047, G_MAXUINT32,
  };
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint i, bit;

  for (i = 0; i < G_N_ELEMENTS (magics); i++) {
    raw_header (b, magics[i], GPUSHARE_VERSION_MAJOR, GPUSHARE_VERSION_MINOR,
        GPUSHARE_MSG_EOS, 0, EOS_FIXED, 0, 0);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        GPUSHARE_PARSE_BAD_MAGIC);
  }
  /* any single bit flipped */
  for (bit = 0; bit < 32; bit++) {
    raw_header (b, GPUSHARE_MAGIC ^ (1u << bit), GPUSHARE_VERSION_MAJOR,
        GPUSHARE_VERSION_MINOR, GPUSHARE_MSG_EOS, 0, EOS_FIXED, 0, 0);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        GPUSHARE_PARSE_BAD_MAGIC);
  }
}

GST_END_TEST;

GST_START_TEST (test_header_version)
{
  static const guint16 bad_major[] = { 0, GPUSHARE_VERSION_MAJOR + 1,
    0x100 | GPUSHARE_VERSION_MAJOR, G_MAXUINT16,
  };
  static const guint16 minors[] = { 0, GPUSHARE_VERSION_MINOR,
    GPUSHARE_VERSION_MINOR + 1, G_MAXUINT16,
  };
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (bad_major); i++) {
    raw_header (b, GPUSHARE_MAGIC, bad_major[i], GPUSHARE_VERSION_MINOR,
        GPUSHARE_MSG_ANNOUNCE, 0, 0, 0, 0);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        GPUSHARE_PARSE_BAD_VERSION);
    /* reported, so that the caller can say which version it refused */
    fail_unless_equals_int (hdr.version_major, bad_major[i]);
  }
  /* a different minor is compatible by definition */
  for (i = 0; i < G_N_ELEMENTS (minors); i++) {
    raw_header (b, GPUSHARE_MAGIC, GPUSHARE_VERSION_MAJOR, minors[i],
        GPUSHARE_MSG_ANNOUNCE, 0, 0, 0, 0);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        GPUSHARE_PARSE_OK);
    fail_unless_equals_int (hdr.version_minor, minors[i]);
  }
}

GST_END_TEST;

GST_START_TEST (test_header_payload_len)
{
  static const struct
  {
    guint32 len;
    GpuShareParseResult res;
  } table[] = {
    {0, GPUSHARE_PARSE_OK},
    {1, GPUSHARE_PARSE_OK},
    {GPUSHARE_MAX_PAYLOAD - 1, GPUSHARE_PARSE_OK},
    {GPUSHARE_MAX_PAYLOAD, GPUSHARE_PARSE_OK},
    {GPUSHARE_MAX_PAYLOAD + 1, GPUSHARE_PARSE_TOO_LARGE},
    {0x7fffffff, GPUSHARE_PARSE_TOO_LARGE},
    {0x80000000, GPUSHARE_PARSE_TOO_LARGE},
    {G_MAXUINT32 - GPUSHARE_HEADER_SIZE + 1, GPUSHARE_PARSE_TOO_LARGE},
    {G_MAXUINT32, GPUSHARE_PARSE_TOO_LARGE},
  };
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint i, t;

  /* unknown types are capped too: the caller must skip their payload */
  for (t = 0; t < 3; t++) {
    guint16 type = t == 0 ? GPUSHARE_MSG_FRAME : t == 1 ? 0 : 0xffff;

    for (i = 0; i < G_N_ELEMENTS (table); i++) {
      valid_header (b, type, table[i].len, 0);
      fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
          table[i].res);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_header_fd_count)
{
  static const guint32 counts[] = { 0, 1, 2, GPUSHARE_MAX_FDS - 1,
    GPUSHARE_MAX_FDS, GPUSHARE_MAX_FDS + 1, 0x80000000, G_MAXUINT32,
  };
  static const guint16 unknown[] = { 0, FIRST_UNKNOWN_TYPE, 0x7fff,
    G_MAXUINT16,
  };
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint i, t;

  for (t = 0; t < G_N_ELEMENTS (all_types); t++) {
    for (i = 0; i < G_N_ELEMENTS (counts); i++) {
      GpuShareParseResult want;

      if (counts[i] > GPUSHARE_MAX_FDS)
        want = GPUSHARE_PARSE_BAD_FD_COUNT;
      /* the types that carry fds: their count is judged with the
       * payload */
      else if (all_types[t] == GPUSHARE_MSG_SLOTS ||
          all_types[t] == GPUSHARE_MSG_LANE || counts[i] == 0)
        want = GPUSHARE_PARSE_OK;
      else
        want = GPUSHARE_PARSE_BAD_FD_COUNT;
      valid_header (b, all_types[t], 64, counts[i]);
      fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr), want);
    }
  }
  /* an unknown type may carry fds, up to the cap: the caller closes them */
  for (t = 0; t < G_N_ELEMENTS (unknown); t++) {
    for (i = 0; i < G_N_ELEMENTS (counts); i++) {
      valid_header (b, unknown[t], 64, counts[i]);
      fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
          counts[i] > GPUSHARE_MAX_FDS ? GPUSHARE_PARSE_BAD_FD_COUNT :
          GPUSHARE_PARSE_OK);
    }
  }
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* payloads                                                            */

GST_START_TEST (test_payload_truncated)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint i, variant;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 0; variant < n_variants (all_types[i]); variant++) {
      gsize len, cut;

      sample_msg (all_types[i], variant, msg, &n_fds);
      len = raw_payload (msg, raw);
      for (cut = 0; cut < len; cut++) {
        GpuShareParseResult res;

        /* a GOODBYE cut inside the part minor 3 added is a whole GOODBYE
         * without it (test_goodbye_held) */
        if (msg->type == GPUSHARE_MSG_GOODBYE && cut >= GOODBYE_FIXED)
          continue;
        /* and a FRAME cut inside the share minor 6 added, a FRAME without
         * a share (test_frame_share) */
        if (msg->type == GPUSHARE_MSG_FRAME && cut >= FRAME_FIXED)
          continue;
        res = parse_payload (msg->type, n_fds, raw, cut, back);
        /* a LANE cut inside the meta region's part minor 9 added is one
         * without a region, smaller than the size it says (test_lane) */
        if (msg->type == GPUSHARE_MSG_LANE && cut >= LANE_FIXED) {
          fail_unless_equals_int (res, GPUSHARE_PARSE_MALFORMED);
          continue;
        }

        /* every length field sits in the fixed part, which is checked
         * first: a cut never makes a length inconsistent, only short */
        fail_if (res == GPUSHARE_PARSE_OK, "%s cut to %" G_GSIZE_FORMAT
            " of %" G_GSIZE_FORMAT " bytes parsed",
            gpushare_msg_type_to_string (msg->type), cut, len);
        fail_unless_equals_int (res, GPUSHARE_PARSE_TRUNCATED);
      }
      fail_unless_equals_int (parse_payload (msg->type, n_fds, raw, len,
              back), GPUSHARE_PARSE_OK);
    }
  }
  g_free (raw);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* Room for minor-version extensions: extra bytes are ignored. */
GST_START_TEST (test_payload_trailing_bytes)
{
  static const gsize extra[] = { 1, 7, 8, 100 };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint i, j, variant;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 0; variant < n_variants (all_types[i]); variant++) {
      gsize len;

      sample_msg (all_types[i], variant, msg, &n_fds);
      len = raw_payload (msg, raw);
      for (j = 0; j < G_N_ELEMENTS (extra) + 1; j++) {
        /* the last case fills the payload to its cap */
        gsize more = j < G_N_ELEMENTS (extra) ? extra[j] :
            GPUSHARE_MAX_PAYLOAD - len;

        memset (raw + len, 0xa5, more);
        if (msg->type == GPUSHARE_MSG_LANE && len == LANE_FIXED
            && more >= LANE_METAS_FIXED - LANE_FIXED) {
          /* minor 9's meta region, which these bytes do not describe
           * (test_lane) */
          fail_unless_equals_int (parse_payload (msg->type, n_fds, raw,
                  len + more, back), GPUSHARE_PARSE_MALFORMED);
          continue;
        }
        fail_unless_equals_int (parse_payload (msg->type, n_fds, raw,
                len + more, back), GPUSHARE_PARSE_OK);
        /* but the first 8 bytes after minor 5's FRAME are minor 6's
         * share, read once they are all there (test_frame_share) */
        if (msg->type == GPUSHARE_MSG_FRAME && len == FRAME_FIXED) {
          fail_unless_equals_uint64 (back->u.frame.share,
              more >= FRAME_SHARE_FIXED - FRAME_FIXED ? 0xa5a5a5a5 : 0);
          back->u.frame.share = 0;
        }
        assert_msg_equal (back, msg);
      }
    }
  }
  g_free (raw);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_payload_len_mismatch)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 raw[FRAME_FIXED];
  GpuShareHeader hdr = { 0, };
  static const guint32 lies[] = { 0, FRAME_FIXED - 1, FRAME_FIXED + 1,
    GPUSHARE_MAX_PAYLOAD, G_MAXUINT32,
  };
  guint32 n_fds;
  guint i;

  sample_msg (GPUSHARE_MSG_FRAME, 0, msg, &n_fds);
  /* minor 5's 72 bytes */
  msg->u.frame.share = 0;
  fail_unless_equals_int (raw_payload (msg, raw), sizeof (raw));
  hdr.magic = GPUSHARE_MAGIC;
  hdr.version_major = GPUSHARE_VERSION_MAJOR;
  hdr.type = GPUSHARE_MSG_FRAME;
  for (i = 0; i < G_N_ELEMENTS (lies); i++) {
    hdr.payload_len = lies[i];
    fail_unless_equals_int (gpushare_msg_parse (&hdr, raw, sizeof (raw),
            back), GPUSHARE_PARSE_MALFORMED);
  }
  hdr.payload_len = sizeof (raw);
  fail_unless_equals_int (gpushare_msg_parse (&hdr, raw, sizeof (raw), back),
      GPUSHARE_PARSE_OK);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_payload_unknown_type)
{
  static const guint16 types[] = { 0, FIRST_UNKNOWN_TYPE, 0x100, 0x7fff,
    G_MAXUINT16,
  };
  static const gsize lens[] = { 0, 1, 24, GPUSHARE_MAX_PAYLOAD };
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *raw = g_malloc (GPUSHARE_MAX_PAYLOAD);
  guint i, j;

  memset (raw, 0xff, GPUSHARE_MAX_PAYLOAD);
  for (i = 0; i < G_N_ELEMENTS (types); i++) {
    for (j = 0; j < G_N_ELEMENTS (lens); j++) {
      fail_unless_equals_int (parse_payload (types[i], 0, raw, lens[j], back),
          GPUSHARE_PARSE_UNKNOWN_TYPE);
      fail_unless_equals_int (parse_payload (types[i], GPUSHARE_MAX_FDS, raw,
              lens[j], back), GPUSHARE_PARSE_UNKNOWN_TYPE);
    }
  }
  g_free (raw);
  g_free (back);
}

GST_END_TEST;

/* A known type that carries no fds (all but SLOTS and LANE) with fds,
 * handed straight to the parser: refused there too, in case a caller
 * skipped the header check. */
GST_START_TEST (test_payload_fds_on_wrong_type)
{
  static const guint32 counts[] = { 1, GPUSHARE_MAX_FDS,
    GPUSHARE_MAX_FDS + 1, G_MAXUINT32,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint i, j;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    /* their counts: test_payload_slots, test_lane_bounds */
    if (all_types[i] == GPUSHARE_MSG_SLOTS || all_types[i] == GPUSHARE_MSG_LANE)
      continue;
    sample_msg (all_types[i], 1, msg, &n_fds);
    for (j = 0; j < G_N_ELEMENTS (counts); j++) {
      fail_unless_equals_int (parse_raw_msg (msg, counts[j], back),
          GPUSHARE_PARSE_BAD_FD_COUNT);
      /* and the builder will not write it */
      fail_if (gpushare_msg_build (msg, counts[j], out));
      fail_unless_equals_int (out->len, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* Hand-crafted: a string length field of cap + 1, G_MAXUINT32, or longer
 * than the bytes that follow. */
typedef enum
{
  STR_ANNOUNCE_NAME,
  STR_ANNOUNCE_CAPS,
  STR_ACCEPT_NAME,
  STR_ACCEPT_REASON,
  STR_CAPS_CAPS,
  STR_ERROR_TEXT,
  N_STR
} StrField;

static guint
str_field_type (StrField f)
{
  switch (f) {
    case STR_ANNOUNCE_NAME:
    case STR_ANNOUNCE_CAPS:
      return GPUSHARE_MSG_ANNOUNCE;
    case STR_ACCEPT_NAME:
    case STR_ACCEPT_REASON:
      return GPUSHARE_MSG_ACCEPT;
    case STR_CAPS_CAPS:
      return GPUSHARE_MSG_CAPS;
    case STR_ERROR_TEXT:
    default:
      return GPUSHARE_MSG_ERROR;
  }
}

static guint32
str_field_cap (StrField f)
{
  switch (f) {
    case STR_ANNOUNCE_NAME:
    case STR_ACCEPT_NAME:
      return GPUSHARE_MAX_NAME_LEN;
    case STR_ACCEPT_REASON:
      return GPUSHARE_MAX_REASON_LEN;
    case STR_ANNOUNCE_CAPS:
    case STR_CAPS_CAPS:
      return GPUSHARE_MAX_CAPS_LEN;
    case STR_ERROR_TEXT:
    default:
      return GPUSHARE_MAX_TEXT_LEN;
  }
}

/* Writes a raw payload whose string f declares `declared` bytes, of which
 * `present` follow (any other string of the message is left empty or, for
 * caps and the strings around an ACCEPT's, a few bytes; a string after f
 * is written only when f is whole), filled from `bytes` (or valid UTF-8
 * when NULL).  Returns the payload length; b holds
 * GPUSHARE_MAX_PAYLOAD * 2. */
static gsize
raw_with_string (StrField f, guint32 declared, gsize present,
    const gchar * bytes, guint8 * b)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *fill = g_malloc (present + 1);
  gsize len;
  guint32 n_fds;

  if (bytes)
    memcpy (fill, bytes, present);
  else
    fill_utf8 (fill, present);

  sample_msg (str_field_type (f), 1, msg, &n_fds);
  switch (f) {
    case STR_ANNOUNCE_NAME:
      msg->u.announce.name_len = 0;
      fail_unless (gpushare_layout_set_caps (&msg->u.announce.layout, "c"));
      len = raw_fixed (msg, b);
      put32 (b, ANNOUNCE_NAME_LEN, declared);
      memcpy (b + len, fill, present);
      len += present;
      /* the caps after the name */
      if (present == declared)
        b[len++] = 'c';
      break;
    case STR_ANNOUNCE_CAPS:
      msg->u.announce.name_len = 0;
      len = raw_fixed (msg, b);
      put32 (b, ANNOUNCE_LAYOUT + LAYOUT_CAPS_LEN, declared);
      memcpy (b + len, fill, present);
      len += present;
      break;
    case STR_ACCEPT_NAME:
      msg->u.accept.reason_len = 1;
      len = raw_fixed (msg, b);
      put32 (b, ACCEPT_NAME_LEN, declared);
      memcpy (b + len, fill, present);
      len += present;
      /* the reason after the name */
      if (present == declared)
        b[len++] = 'r';
      break;
    case STR_ACCEPT_REASON:
      msg->u.accept.name_len = 3;
      len = raw_fixed (msg, b);
      put32 (b, ACCEPT_REASON_LEN, declared);
      memcpy (b + len, "src", 3);
      len += 3;
      memcpy (b + len, fill, present);
      len += present;
      break;
    case STR_CAPS_CAPS:
      len = raw_fixed (msg, b);
      put32 (b, CAPS_LAYOUT + LAYOUT_CAPS_LEN, declared);
      memcpy (b + len, fill, present);
      len += present;
      break;
    case STR_ERROR_TEXT:
    default:
      len = raw_fixed (msg, b);
      put32 (b, ERROR_TEXT_LEN, declared);
      memcpy (b + len, fill, present);
      len += present;
      break;
  }
  g_free (fill);
  g_free (msg);
  return len;
}

GST_START_TEST (test_payload_string_lengths)
{
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *b = g_malloc0 (GPUSHARE_MAX_PAYLOAD * 2);
  guint f;

  for (f = 0; f < N_STR; f++) {
    guint type = str_field_type (f);
    guint32 cap = str_field_cap (f);
    gsize len;

    /* cap, with its bytes: accepted */
    len = raw_with_string (f, cap, cap, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_OK);
    /* cap + 1, with its bytes: over the cap, whatever follows */
    len = raw_with_string (f, cap + 1, cap + 1, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_MALFORMED);
    /* cap + 1, with only cap bytes */
    len = raw_with_string (f, cap + 1, cap, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_MALFORMED);
    /* huge lengths must not wrap any sum */
    len = raw_with_string (f, G_MAXUINT32, 4, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_MALFORMED);
    len = raw_with_string (f, G_MAXUINT32 - ANNOUNCE_FIXED + 1, 4, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_MALFORMED);
    len = raw_with_string (f, 0x80000000, 0, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_MALFORMED);
    /* within the cap but longer than the payload */
    len = raw_with_string (f, cap, cap - 1, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_TRUNCATED);
    len = raw_with_string (f, 1, 0, NULL, b);
    fail_unless_equals_int (parse_payload (type, 0, b, len, back),
        GPUSHARE_PARSE_TRUNCATED);
  }
  g_free (b);
  g_free (back);
}

GST_END_TEST;

/* A payload that is one wire length over: NUL and bad UTF-8 inside. */
GST_START_TEST (test_payload_string_bytes)
{
  static const struct
  {
    const gchar *bytes;
    gsize len;
    GpuShareParseResult res;
  } table[] = {
    {"abc", 3, GPUSHARE_PARSE_OK},
    {"\xc3\xa9\xe2\x82\xac", 5, GPUSHARE_PARSE_OK},
    {"\0bc", 3, GPUSHARE_PARSE_MALFORMED},      /* NUL first */
    {"a\0c", 3, GPUSHARE_PARSE_MALFORMED},      /* NUL inside */
    {"ab\0", 3, GPUSHARE_PARSE_MALFORMED},      /* NUL last */
    {"\0", 1, GPUSHARE_PARSE_MALFORMED},        /* only a NUL */
    {"a\xff" "c", 3, GPUSHARE_PARSE_MALFORMED}, /* never valid */
    {"\x80", 1, GPUSHARE_PARSE_MALFORMED},      /* lone continuation */
    {"ab\xc3", 3, GPUSHARE_PARSE_MALFORMED},    /* cut sequence */
    {"\xe2\x82", 2, GPUSHARE_PARSE_MALFORMED},  /* cut sequence */
    {"\xc0\xaf", 2, GPUSHARE_PARSE_MALFORMED},  /* overlong '/' */
    {"\xed\xa0\x80", 3, GPUSHARE_PARSE_MALFORMED},      /* surrogate */
    {"\xf4\x90\x80\x80", 4, GPUSHARE_PARSE_MALFORMED},  /* > U+10FFFF */
  };
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *b = g_malloc0 (GPUSHARE_MAX_PAYLOAD * 2);
  guint f, i;

  for (f = 0; f < N_STR; f++) {
    guint type = str_field_type (f);

    for (i = 0; i < G_N_ELEMENTS (table); i++) {
      gsize len = raw_with_string (f, table[i].len, table[i].len,
          table[i].bytes, b);

      fail_unless_equals_int (parse_payload (type, 0, b, len, back),
          table[i].res);
    }
  }
  g_free (b);
  g_free (back);
}

GST_END_TEST;

/* The same bad strings, offered to the builder: it refuses them and
 * leaves the output as it was. */
GST_START_TEST (test_build_refuses_strings)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;

  g_byte_array_append (out, (const guint8 *) "keep", 4);

  sample_msg (GPUSHARE_MSG_ANNOUNCE, 0, msg, &n_fds);
  msg->u.announce.name_len = GPUSHARE_MAX_NAME_LEN + 1;
  /* no NUL at the cap to give it away: the length alone is refused */
  msg->u.announce.name[GPUSHARE_MAX_NAME_LEN] = 'x';
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.announce.name_len = G_MAXUINT32;
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.announce.name_len = 3;
  msg->u.announce.name[1] = '\0';
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.announce.name[1] = '\xff';
  fail_if (gpushare_msg_build (msg, n_fds, out));

  sample_msg (GPUSHARE_MSG_ANNOUNCE, 0, msg, &n_fds);
  msg->u.announce.layout.caps_len = GPUSHARE_MAX_CAPS_LEN + 1;
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.announce.layout.caps_len = 0;
  fail_if (gpushare_msg_build (msg, n_fds, out));

  sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
  msg->u.accept.name_len = GPUSHARE_MAX_NAME_LEN + 1;
  /* no NUL at the cap to give it away: the length alone is refused */
  msg->u.accept.name[GPUSHARE_MAX_NAME_LEN] = 'x';
  fail_if (gpushare_msg_build (msg, n_fds, out));

  sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
  msg->u.accept.reason_len = GPUSHARE_MAX_REASON_LEN + 1;
  /* no NUL at the cap to give it away: the length alone is refused */
  msg->u.accept.reason[GPUSHARE_MAX_REASON_LEN] = 'x';
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.accept.reason_len = G_MAXUINT32;
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.accept.reason_len = 3;
  memcpy (msg->u.accept.reason, "ab\0", 4);
  fail_if (gpushare_msg_build (msg, n_fds, out));
  memcpy (msg->u.accept.reason, "\x80" "bc", 4);
  fail_if (gpushare_msg_build (msg, n_fds, out));
  memcpy (msg->u.accept.reason, "ab\xc3", 4);
  fail_if (gpushare_msg_build (msg, n_fds, out));
  /* and the same reason, whole, builds */
  memcpy (msg->u.accept.reason, "abc", 4);
  fail_unless (gpushare_msg_build (msg, n_fds, out));
  g_byte_array_set_size (out, 4);

  sample_msg (GPUSHARE_MSG_CAPS, 0, msg, &n_fds);
  msg->u.caps.layout.caps_len = GPUSHARE_MAX_CAPS_LEN + 1;
  /* no NUL at the cap to give it away: the length alone is refused */
  msg->u.caps.layout.caps[GPUSHARE_MAX_CAPS_LEN] = 'x';
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.caps.layout.caps_len = 0;
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.caps.layout.caps_len = 4;
  memcpy (msg->u.caps.layout.caps, "ab\xc3", 4);
  fail_if (gpushare_msg_build (msg, n_fds, out));

  sample_msg (GPUSHARE_MSG_ERROR, 0, msg, &n_fds);
  msg->u.error.text_len = GPUSHARE_MAX_TEXT_LEN + 1;
  /* no NUL at the cap to give it away: the length alone is refused */
  msg->u.error.text[GPUSHARE_MAX_TEXT_LEN] = 'x';
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.error.text_len = G_MAXUINT32;
  fail_if (gpushare_msg_build (msg, n_fds, out));
  msg->u.error.text_len = 2;
  memcpy (msg->u.error.text, "\0a", 2);
  fail_if (gpushare_msg_build (msg, n_fds, out));

  fail_unless_equals_int (out->len, 4);
  fail_unless (memcmp (out->data, "keep", 4) == 0);
  g_byte_array_unref (out);
  g_free (msg);
}

GST_END_TEST;

/* One hostile layout field, in ANNOUNCE and in CAPS, raw and built. */
typedef struct
{
  const gchar *what;
  guint32 n_slots;
  guint32 n_planes;
  guint64 frame_size;
  guint64 slot_size;
  guint64 offset3;              /* offsets[0..2] stay 0 */
  GpuShareParseResult res;
} LayoutCase;

static const LayoutCase layout_cases[] = {
  {"n_slots 0", 0, 4, 100, 100, 99, GPUSHARE_PARSE_MALFORMED},
  {"n_slots 1", 1, 4, 100, 100, 99, GPUSHARE_PARSE_OK},
  {"n_slots max", GPUSHARE_MAX_SLOTS, 4, 100, 100, 99, GPUSHARE_PARSE_OK},
  {"n_slots max+1", GPUSHARE_MAX_SLOTS + 1, 4, 100, 100, 99,
      GPUSHARE_PARSE_MALFORMED},
  {"n_slots uint32", G_MAXUINT32, 4, 100, 100, 99, GPUSHARE_PARSE_MALFORMED},
  {"n_planes 0", 4, 0, 100, 100, 1000, GPUSHARE_PARSE_OK},
  {"n_planes max+1", 4, GPUSHARE_MAX_PLANES + 1, 100, 100, 0,
      GPUSHARE_PARSE_MALFORMED},
  {"n_planes uint32", 4, G_MAXUINT32, 100, 100, 0, GPUSHARE_PARSE_MALFORMED},
  {"slot_size 0", 4, 0, 0, 0, 0, GPUSHARE_PARSE_MALFORMED},
  {"slot_size 1", 4, 1, 1, 1, 0, GPUSHARE_PARSE_OK},
  {"slot_size max", 4, 4, GPUSHARE_MAX_SLOT_SIZE, GPUSHARE_MAX_SLOT_SIZE,
      GPUSHARE_MAX_SLOT_SIZE - 1, GPUSHARE_PARSE_OK},
  {"slot_size max+1", 4, 4, 100, GPUSHARE_MAX_SLOT_SIZE + 1, 99,
      GPUSHARE_PARSE_MALFORMED},
  {"slot_size uint64", 4, 4, 100, G_MAXUINT64, 99, GPUSHARE_PARSE_MALFORMED},
  {"frame_size 0", 4, 4, 0, 100, G_MAXUINT64, GPUSHARE_PARSE_OK},
  {"frame == slot", 4, 4, 100, 100, 99, GPUSHARE_PARSE_OK},
  {"frame > slot", 4, 4, 101, 100, 99, GPUSHARE_PARSE_MALFORMED},
  {"frame uint64", 4, 4, G_MAXUINT64, 100, 99, GPUSHARE_PARSE_MALFORMED},
  {"offset frame-1", 4, 4, 100, 200, 99, GPUSHARE_PARSE_OK},
  {"offset frame", 4, 4, 100, 200, 100, GPUSHARE_PARSE_MALFORMED},
  {"offset uint64", 4, 4, 100, 200, G_MAXUINT64, GPUSHARE_PARSE_MALFORMED},
  /* planes past n_planes are not described, so not checked */
  {"unused offset", 4, 3, 100, 200, G_MAXUINT64, GPUSHARE_PARSE_OK},
};

static void
apply_layout_case (GpuShareLayout * l, const LayoutCase * c)
{
  l->n_slots = c->n_slots;
  l->n_planes = c->n_planes;
  l->frame_size = c->frame_size;
  l->slot_size = c->slot_size;
  l->offsets[0] = l->offsets[1] = l->offsets[2] = 0;
  l->offsets[3] = c->offset3;
}

GST_START_TEST (test_payload_layout)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i, t;

  for (t = 0; t < 2; t++) {
    guint type = t == 0 ? GPUSHARE_MSG_ANNOUNCE : GPUSHARE_MSG_CAPS;

    for (i = 0; i < G_N_ELEMENTS (layout_cases); i++) {
      const LayoutCase *c = &layout_cases[i];
      GpuShareLayout *l;

      sample_msg (type, 0, msg, &n_fds);
      l = t == 0 ? &msg->u.announce.layout : &msg->u.caps.layout;
      apply_layout_case (l, c);
      fail_unless (parse_raw_msg (msg, 0, back) == c->res,
          "%s, %s: got %s", gpushare_msg_type_to_string (type), c->what,
          gpushare_parse_result_to_string (parse_raw_msg (msg, 0, back)));
      g_byte_array_set_size (out, 0);
      fail_unless_equals_int (gpushare_msg_build (msg, 0, out),
          c->res == GPUSHARE_PARSE_OK);
      if (c->res == GPUSHARE_PARSE_OK)
        round_trip (msg, 0);
      else
        fail_unless_equals_int (out->len, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_payload_slots)
{
  static const struct
  {
    guint32 n_slots;
    guint32 n_fds;
    guint64 slot_size;
    guint32 mem_type;
    GpuShareParseResult res;
  } table[] = {
    {1, 1, 4096, GPUSHARE_MEM_SYSTEM, GPUSHARE_PARSE_OK},
    {GPUSHARE_MAX_SLOTS, GPUSHARE_MAX_SLOTS, 4096, 1, GPUSHARE_PARSE_OK},
    {0, 0, 4096, 1, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MAX_SLOTS + 1, GPUSHARE_MAX_SLOTS, 4096, 1,
        GPUSHARE_PARSE_MALFORMED},
    {G_MAXUINT32, GPUSHARE_MAX_SLOTS, 4096, 1, GPUSHARE_PARSE_MALFORMED},
    /* lying fd counts */
    {4, 3, 4096, 1, GPUSHARE_PARSE_BAD_FD_COUNT},
    {4, 5, 4096, 1, GPUSHARE_PARSE_BAD_FD_COUNT},
    {4, 0, 4096, 1, GPUSHARE_PARSE_BAD_FD_COUNT},
    {1, GPUSHARE_MAX_FDS, 4096, 1, GPUSHARE_PARSE_BAD_FD_COUNT},
    {4, GPUSHARE_MAX_FDS + 1, 4096, 1, GPUSHARE_PARSE_BAD_FD_COUNT},
    {4, G_MAXUINT32, 4096, 1, GPUSHARE_PARSE_BAD_FD_COUNT},
    /* slot sizes */
    {4, 4, 0, 1, GPUSHARE_PARSE_MALFORMED},
    {4, 4, 1, 1, GPUSHARE_PARSE_OK},
    {4, 4, GPUSHARE_MAX_SLOT_SIZE, 1, GPUSHARE_PARSE_OK},
    {4, 4, GPUSHARE_MAX_SLOT_SIZE + 1, 1, GPUSHARE_PARSE_MALFORMED},
    {4, 4, G_MAXUINT64, 1, GPUSHARE_PARSE_MALFORMED},
    /* memory types: exactly one known bit */
    {4, 4, 4096, 0, GPUSHARE_PARSE_MALFORMED},
    {4, 4, 4096, GPUSHARE_MEM_CUDA_VMM, GPUSHARE_PARSE_OK},
    {4, 0, 4096, GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_PARSE_OK},
    {4, 0, 4096, GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_PARSE_OK},
    {4, 4, 4096, 0x3, GPUSHARE_PARSE_MALFORMED},
    {4, 4, 4096, 0x10, GPUSHARE_PARSE_MALFORMED},
    {4, 4, 4096, 0x11, GPUSHARE_PARSE_MALFORMED},
    {4, 4, 4096, 0x80000000, GPUSHARE_PARSE_MALFORMED},
    {4, 4, 4096, G_MAXUINT32, GPUSHARE_PARSE_MALFORMED},
    /* legacy and fabric slots travel as handles, never as fds */
    {4, 4, 4096, GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_PARSE_BAD_FD_COUNT},
    {4, 1, 4096, GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_PARSE_BAD_FD_COUNT},
    {4, 4, 4096, GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_PARSE_BAD_FD_COUNT},
    {4, 5, 4096, GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_PARSE_BAD_FD_COUNT},
    {GPUSHARE_MAX_SLOTS, GPUSHARE_MAX_SLOTS, 4096, GPUSHARE_MEM_CUDA_FABRIC,
        GPUSHARE_PARSE_BAD_FD_COUNT},
    {GPUSHARE_MAX_SLOTS, 0, 4096, GPUSHARE_MEM_CUDA_FABRIC,
        GPUSHARE_PARSE_OK},
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (table); i++) {
    sample_msg (GPUSHARE_MSG_SLOTS, 1, msg, &n_fds);
    msg->u.slots.n_slots = table[i].n_slots;
    msg->u.slots.slot_size = table[i].slot_size;
    msg->u.slots.mem_type = table[i].mem_type;
    /* sync without a block or event handles: its rules are tested
     * below */
    msg->u.slots.sync_mode = table[i].mem_type == GPUSHARE_MEM_SYSTEM ? 0 :
        GPUSHARE_SYNC_HOST;
    /* legacy and fabric slots: their memory handles */
    if (slots_in_handles (table[i].mem_type)) {
      g_assert (table[i].n_slots <= GPUSHARE_MAX_SLOTS);
      msg->u.slots.n_handles = table[i].n_slots;
      fill_handles (msg->u.slots.handles, table[i].n_slots);
    }
    fail_unless (parse_raw_msg (msg, table[i].n_fds, back) == table[i].res,
        "case %u: got %s", i,
        gpushare_parse_result_to_string (parse_raw_msg (msg, table[i].n_fds,
                back)));
    g_byte_array_set_size (out, 0);
    fail_unless_equals_int (gpushare_msg_build (msg, table[i].n_fds, out),
        table[i].res == GPUSHARE_PARSE_OK);
    if (table[i].res != GPUSHARE_PARSE_OK)
      fail_unless_equals_int (out->len, 0);
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_payload_mem_types)
{
  static const struct
  {
    guint32 value;
    GpuShareParseResult offer;  /* ANNOUNCE mem_types */
    GpuShareParseResult choice; /* ACCEPT mem_type */
  } table[] = {
    {0, GPUSHARE_PARSE_MALFORMED, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_SYSTEM, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_VMM, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_OK},
    /* host memory: chosen without a sync mode */
    {GPUSHARE_MEM_HOST_TEST, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_OK},
    {0x3, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_KNOWN_MASK, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_MALFORMED},
    {0x10, GPUSHARE_PARSE_MALFORMED, GPUSHARE_PARSE_MALFORMED},
    {0x11, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_MALFORMED},
    {~GPUSHARE_MEM_KNOWN_MASK, GPUSHARE_PARSE_MALFORMED,
        GPUSHARE_PARSE_MALFORMED},
    {0x80000000, GPUSHARE_PARSE_MALFORMED, GPUSHARE_PARSE_MALFORMED},
    {G_MAXUINT32, GPUSHARE_PARSE_OK, GPUSHARE_PARSE_MALFORMED},
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (table); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 0, msg, &n_fds);
    msg->u.announce.mem_types = table[i].value;
    fail_unless_equals_int (parse_raw_msg (msg, 0, back), table[i].offer);
    fail_unless_equals_int (gpushare_msg_build (msg, 0, out),
        table[i].offer == GPUSHARE_PARSE_OK);

    sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
    msg->u.accept.mem_type = table[i].value;
    msg->u.accept.sync_mode = gpushare_mem_type_is_host (table[i].value) ?
        0 : GPUSHARE_SYNC_HOST;
    fail_unless_equals_int (parse_raw_msg (msg, 0, back), table[i].choice);
    fail_unless_equals_int (gpushare_msg_build (msg, 0, out),
        table[i].choice == GPUSHARE_PARSE_OK);
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_payload_schema_version)
{
  static const guint16 majors[] = { 0, GPUSHARE_VERSION_MAJOR,
    GPUSHARE_VERSION_MAJOR + 1, G_MAXUINT16,
  };
  static const guint16 minors[] = { 0, GPUSHARE_VERSION_MINOR + 1,
    G_MAXUINT16,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i, t;

  for (t = 0; t < 2; t++) {
    guint type = t == 0 ? GPUSHARE_MSG_ANNOUNCE : GPUSHARE_MSG_ACCEPT;

    for (i = 0; i < G_N_ELEMENTS (majors); i++) {
      GpuShareParseResult want = majors[i] == GPUSHARE_VERSION_MAJOR ?
          GPUSHARE_PARSE_OK : GPUSHARE_PARSE_BAD_VERSION;

      sample_msg (type, 0, msg, &n_fds);
      if (t == 0)
        msg->u.announce.schema_major = majors[i];
      else
        msg->u.accept.schema_major = majors[i];
      fail_unless_equals_int (parse_raw_msg (msg, 0, back), want);
      fail_unless_equals_int (gpushare_msg_build (msg, 0, out),
          want == GPUSHARE_PARSE_OK);

      /* another major is reported as such even when the rest would not
       * parse: the answer is ERROR VERSION, not PROTOCOL */
      if (want != GPUSHARE_PARSE_OK) {
        guint8 fixed[ANNOUNCE_FIXED];
        gsize len;

        if (t == 0) {
          msg->u.announce.mem_types = 0;
          msg->u.announce.device.sync_modes = 0;
        } else {
          msg->u.accept.mem_type = 0;
          msg->u.accept.sync_mode = G_MAXUINT32;
        }
        fail_unless_equals_int (parse_raw_msg (msg, 0, back), want);

        /* a string length this major would call malformed, and no bytes
         * after the fixed part */
        if (t == 0) {
          msg->u.announce.name_len = G_MAXUINT32;
        } else {
          msg->u.accept.name_len = G_MAXUINT32;
          msg->u.accept.reason_len = G_MAXUINT32;
        }
        len = raw_fixed (msg, fixed);
        fail_unless_equals_int (parse_payload (type, 0, fixed, len, back),
            want);
      }
    }
    for (i = 0; i < G_N_ELEMENTS (minors); i++) {
      sample_msg (type, 0, msg, &n_fds);
      if (t == 0)
        msg->u.announce.schema_minor = minors[i];
      else
        msg->u.accept.schema_minor = minors[i];
      round_trip (msg, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* SLOTS's side memory (minor 10): its pages, bounded, and its fd, last */
GST_START_TEST (test_slots_side)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint32 n_fds;
  gsize len;
  guint variant;

  for (variant = 0; variant < n_variants (GPUSHARE_MSG_SLOTS); variant++) {
    sample_msg (GPUSHARE_MSG_SLOTS, variant, msg, &n_fds);
    if (msg->u.slots.side_pages)
      continue;
    /* one page a slot: one fd more, read back */
    msg->u.slots.side_pages = 1;
    len = raw_payload (msg, raw);
    fail_unless_equals_int (parse_payload (msg->type, n_fds + 1, raw, len,
            back), GPUSHARE_PARSE_OK);
    assert_msg_equal (back, msg);
    fail_unless_equals_int (back->u.slots.side_pages, 1);
    fail_unless_equals_int (gpushare_slots_fd_count (&msg->u.slots), n_fds + 1);
    /* without its fd, or with one fd too many */
    fail_unless_equals_int (parse_payload (msg->type, n_fds, raw, len, back),
        GPUSHARE_PARSE_BAD_FD_COUNT);
    fail_unless_equals_int (parse_payload (msg->type, n_fds + 2, raw, len,
            back), GPUSHARE_PARSE_BAD_FD_COUNT);
    fail_if (gpushare_msg_build_slots (&msg->u.slots, n_fds, out));
    fail_unless (gpushare_msg_build_slots (&msg->u.slots, n_fds + 1, out));
    /* the most, and one page more */
    put32 (raw, SLOTS_SIDE_PAGES, GPUSHARE_MAX_SIDE_PAGES);
    fail_unless_equals_int (parse_payload (msg->type, n_fds + 1, raw, len,
            back), GPUSHARE_PARSE_OK);
    put32 (raw, SLOTS_SIDE_PAGES, GPUSHARE_MAX_SIDE_PAGES + 1);
    fail_unless_equals_int (parse_payload (msg->type, n_fds + 1, raw, len,
            back), GPUSHARE_PARSE_MALFORMED);
    put32 (raw, SLOTS_SIDE_PAGES, G_MAXUINT32);
    fail_unless_equals_int (parse_payload (msg->type, n_fds + 1, raw, len,
            back), GPUSHARE_PARSE_MALFORMED);
    msg->u.slots.side_pages = GPUSHARE_MAX_SIDE_PAGES + 1;
    fail_if (gpushare_msg_build_slots (&msg->u.slots, n_fds + 1, out));
  }

  g_free (raw);
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* Reserved words in the fixed parts are ignored, like the header's. */
GST_START_TEST (test_payload_reserved_ignored)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  gsize len;
  guint32 n_fds;

  sample_msg (GPUSHARE_MSG_ANNOUNCE, 0, msg, &n_fds);
  len = raw_payload (msg, raw);
  put32 (raw, ANNOUNCE_LAYOUT + 84, G_MAXUINT32);
  put32 (raw, ANNOUNCE_RESERVED, G_MAXUINT32);
  fail_unless_equals_int (parse_payload (msg->type, 0, raw, len, back),
      GPUSHARE_PARSE_OK);
  assert_msg_equal (back, msg);

  sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
  len = raw_payload (msg, raw);
  put32 (raw, ACCEPT_RESERVED, G_MAXUINT32);
  fail_unless_equals_int (parse_payload (msg->type, 0, raw, len, back),
      GPUSHARE_PARSE_OK);
  assert_msg_equal (back, msg);

  /* SLOTS has no reserved field left: minor 10 made it side_pages
   * (test_slots_side) */

  sample_msg (GPUSHARE_MSG_CAPS, 0, msg, &n_fds);
  len = raw_payload (msg, raw);
  put32 (raw, 4, G_MAXUINT32);
  put32 (raw, CAPS_LAYOUT + 84, G_MAXUINT32);
  fail_unless_equals_int (parse_payload (msg->type, 0, raw, len, back),
      GPUSHARE_PARSE_OK);
  assert_msg_equal (back, msg);

  /* the word after FRAME's share (minor 6) */
  sample_msg (GPUSHARE_MSG_FRAME, 0, msg, &n_fds);
  len = raw_payload (msg, raw);
  fail_unless_equals_int (len, FRAME_SHARE_FIXED);
  put32 (raw, FRAME_RESERVED, G_MAXUINT32);
  fail_unless_equals_int (parse_payload (msg->type, 0, raw, len, back),
      GPUSHARE_PARSE_OK);
  assert_msg_equal (back, msg);

  g_free (raw);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_build_refuses)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  static const guint types[] = { 0, FIRST_UNKNOWN_TYPE, G_MAXUINT16 };
  guint32 n_fds;
  guint i;

  g_byte_array_append (out, (const guint8 *) "keep", 4);

  /* nobody could decode an unknown type */
  for (i = 0; i < G_N_ELEMENTS (types); i++) {
    memset (msg, 0, sizeof (*msg));
    msg->type = types[i];
    fail_if (gpushare_msg_build (msg, 0, out));
  }
  /* fds: only SLOTS, exactly n_slots, never over the cap */
  sample_msg (GPUSHARE_MSG_SLOTS, 0, msg, &n_fds);
  fail_unless_equals_int (n_fds, GPUSHARE_MAX_FDS);
  fail_if (gpushare_msg_build (msg, n_fds - 1, out));
  fail_if (gpushare_msg_build (msg, n_fds + 1, out));
  fail_if (gpushare_msg_build (msg, G_MAXUINT32, out));
  sample_msg (GPUSHARE_MSG_FRAME, 0, msg, &n_fds);
  fail_if (gpushare_msg_build (msg, 1, out));
  /* LANE: its one fd, never over the cap */
  sample_msg (GPUSHARE_MSG_LANE, 0, msg, &n_fds);
  fail_unless_equals_int (n_fds, 1);
  fail_if (gpushare_msg_build (msg, GPUSHARE_MAX_FDS + 1, out));
  fail_if (gpushare_msg_build (msg, G_MAXUINT32, out));
  sample_msg (GPUSHARE_MSG_FRAME, 0, msg, &n_fds);

  fail_unless_equals_int (out->len, 4);
  fail_unless (memcmp (out->data, "keep", 4) == 0);

  /* and a valid one lands after what was there: a FRAME with its share */
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, 4 + HDR_SIZE + FRAME_SHARE_FIXED);
  fail_unless (memcmp (out->data, "keepGPSH", 8) == 0);

  g_byte_array_unref (out);
  g_free (msg);
}

GST_END_TEST;

/* Sets each byte of msg's wire form to each boundary value in turn. */
static void
sweep_bytes (const GpuShareMsg * msg, guint32 n_fds, GpuShareMsg * back,
    GByteArray * out)
{
  static const guint8 values[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
  GByteArray *wire = g_byte_array_new ();
  gsize pos;
  guint v;

  fail_unless (gpushare_msg_build (msg, n_fds, wire));
  for (pos = 0; pos < wire->len; pos++) {
    for (v = 0; v < G_N_ELEMENTS (values); v++) {
      guint8 *b = g_memdup2 (wire->data, wire->len);
      GpuShareHeader hdr;
      GpuShareParseResult res;

      b[pos] = values[v];
      res = gpushare_header_parse (b, wire->len, &hdr);
      if (res == GPUSHARE_PARSE_OK &&
          hdr.payload_len == wire->len - GPUSHARE_HEADER_SIZE) {
        res = gpushare_msg_parse (&hdr, b + GPUSHARE_HEADER_SIZE,
            hdr.payload_len, back);
        /* what parses also builds, to a prefix-equal message */
        if (res == GPUSHARE_PARSE_OK) {
          g_byte_array_set_size (out, 0);
          fail_unless (gpushare_msg_build (back, hdr.n_fds, out));
        }
      }
      g_free (b);
    }
  }
  g_byte_array_unref (wire);
}

/* Every header byte and every payload byte of every message (small, and
 * with GPU memory where the type has such a form) set to each boundary
 * value in turn: the parser returns some result, never crashes, never
 * reads past the end (ASan), and never accepts what it would not build. */
GST_START_TEST (test_byte_sweep)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint i, variant;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 1; variant < n_variants (all_types[i]); variant++) {
      sample_msg (all_types[i], variant, msg, &n_fds);
      sweep_bytes (msg, n_fds, back, out);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* GPU memory: device block, sync modes, semaphore block, event handles */

/* The numbers docs/protocol.md gives: a change here is a wire change. */
GST_START_TEST (test_constants)
{
  guint i;

  fail_unless_equals_int (GPUSHARE_MAX_FDS, 67);
  fail_unless_equals_int (GPUSHARE_MAX_FDS, GPUSHARE_MAX_SLOTS + 3);
  fail_unless_equals_int (GPUSHARE_HOST_WORDS_SIZE, 4096);
  fail_unless_equals_int (GPUSHARE_SIDE_PAGE, 4096);
  fail_unless_equals_int (GPUSHARE_MAX_SIDE_PAGES, 16384);
  fail_unless_equals_int (GPUSHARE_MAX_HANDLES, 192);
  fail_unless_equals_int (GPUSHARE_MAX_HANDLES, 3 * GPUSHARE_MAX_SLOTS);
  fail_unless_equals_int (GPUSHARE_HANDLE_SIZE, HANDLE_SIZE);
  fail_unless_equals_int (GPUSHARE_EVENT_HANDLE_SIZE, HANDLE_SIZE);
  fail_unless_equals_int (GPUSHARE_MAX_REASON_LEN, 128);

  /* minor 1 added PING, minor 2 UNMAPPED, minor 3 the GOODBYE's HELD
   * part, minor 4 META and EVENT, minor 5 OBSERVE and STATUS, minor 6
   * FRAME's share and NOTICE, minor 7 LANE and ACCEPT's LANE flag, minor
   * 8 ACCEPT's HEADS_UP flag and the lane's announced word, minor 9 the
   * LANE_METAS flag, LANE's meta region and a FRAME entry's metas, minor
   * 10 SLOTS's side memory, minor 11 payloads in GPU memory past the
   * frame, minor 12 ready words in host memory, minor 13 ANNOUNCE's
   * WITHHELD flag; the types this version knows, in wire order */
  fail_unless_equals_int (GPUSHARE_VERSION_MAJOR, 1);
  fail_unless_equals_int (GPUSHARE_VERSION_MINOR, 13);
  fail_unless_equals_int (GPUSHARE_MINOR_WITHHELD, 13);
  fail_unless_equals_int (GPUSHARE_ANNOUNCE_FLAG_WITHHELD, 2);
  fail_unless_equals_int (GPUSHARE_MINOR_SIDE, 10);
  fail_unless_equals_int (GPUSHARE_MINOR_DEVICE_SIDE, 11);
  fail_unless_equals_int (GPUSHARE_MINOR_HOST_WORDS, 12);
  fail_unless_equals_int (GPUSHARE_DEVICE_SIDE_ALIGN, 512);
  fail_unless_equals_int (GPUSHARE_MINOR_BASE, 0);
  fail_unless_equals_int (GPUSHARE_MINOR_PING, 1);
  fail_unless_equals_int (GPUSHARE_MINOR_UNMAPPED, 2);
  fail_unless_equals_int (GPUSHARE_MINOR_GOODBYE_HELD, 3);
  fail_unless_equals_int (GPUSHARE_MINOR_SEALED, 3);
  fail_unless_equals_int (GPUSHARE_MINOR_META, 4);
  fail_unless_equals_int (GPUSHARE_MINOR_EVENT, 4);
  fail_unless_equals_int (GPUSHARE_MINOR_OBSERVE, 5);
  fail_unless_equals_int (GPUSHARE_MINOR_SHARE, 6);
  fail_unless_equals_int (GPUSHARE_MINOR_NOTICE, 6);
  fail_unless_equals_int (GPUSHARE_MINOR_LANE, 7);
  fail_unless_equals_int (GPUSHARE_MINOR_HEADS_UP, 8);
  fail_unless_equals_int (GPUSHARE_MINOR_LANE_METAS, 9);
  fail_unless_equals_int (GPUSHARE_GOODBYE_FLAG_HELD, 1);
  fail_unless_equals_int (GPUSHARE_ACCEPT_FLAG_LANE, 1);
  fail_unless_equals_int (GPUSHARE_ACCEPT_FLAG_HEADS_UP, 2);
  fail_unless_equals_int (GPUSHARE_ACCEPT_FLAG_LANE_METAS, 4);
  fail_unless_equals_int (GPUSHARE_LANE_MIN_META_REGION, 64 * 1024);
  fail_unless_equals_int (GPUSHARE_LANE_MAX_META_REGION, 16 * 1024 * 1024);
  fail_unless_equals_int (GPUSHARE_LANE_META_ALIGN, 64);
  fail_unless_equals_int (GPUSHARE_LANE_MAX_META_LEN, 256 * 1024);
  fail_unless_equals_int (GPUSHARE_MSG_UNMAPPED, 12);
  fail_unless_equals_string (gpushare_msg_type_to_string (12), "UNMAPPED");
  fail_unless_equals_int (GPUSHARE_MSG_META, 13);
  fail_unless_equals_int (GPUSHARE_MSG_EVENT, 14);
  fail_unless_equals_string (gpushare_msg_type_to_string (14), "EVENT");
  fail_unless_equals_int (GPUSHARE_MSG_OBSERVE, 15);
  fail_unless_equals_string (gpushare_msg_type_to_string (15), "OBSERVE");
  fail_unless_equals_int (GPUSHARE_MSG_STATUS, 16);
  fail_unless_equals_string (gpushare_msg_type_to_string (16), "STATUS");
  fail_unless_equals_int (GPUSHARE_MSG_NOTICE, 17);
  fail_unless_equals_string (gpushare_msg_type_to_string (17), "NOTICE");
  fail_unless_equals_int (GPUSHARE_NOTICE_STALLED, 1);
  fail_unless_equals_int (GPUSHARE_STALL_NOTICE_MS, 2000);
  fail_unless_equals_int (GPUSHARE_MSG_LANE, 18);
  fail_unless_equals_string (gpushare_msg_type_to_string (18), "LANE");
  fail_unless_equals_int (GPUSHARE_MSG_LAST, GPUSHARE_MSG_LANE);
  /* the lane's memory: a header, then entries, at the offsets
   * docs/protocol.md gives */
  fail_unless_equals_int (GPUSHARE_LANE_HEADER_SIZE, LANE_HEADER);
  fail_unless_equals_int (GPUSHARE_LANE_HEADER_SIZE, 128);
  fail_unless_equals_int (GPUSHARE_LANE_ENTRY_SIZE, ENTRY_SIZE);
  fail_unless_equals_int (GPUSHARE_LANE_ENTRY_SIZE, 128);
  fail_unless_equals_int (GPUSHARE_LANE_MIN_ENTRIES, 16);
  fail_unless_equals_int (GPUSHARE_LANE_MAX_ENTRIES, 1024);
  fail_unless_equals_int (GPUSHARE_LANE_HEAD_OFFSET, LANE_HEAD);
  fail_unless_equals_int (GPUSHARE_LANE_HEAD_OFFSET, 0);
  fail_unless_equals_int (GPUSHARE_LANE_BELL_OFFSET, LANE_BELL);
  fail_unless_equals_int (GPUSHARE_LANE_BELL_OFFSET, 64);
  fail_unless_equals_int (GPUSHARE_LANE_WAITING_OFFSET, LANE_WAITING);
  fail_unless_equals_int (GPUSHARE_LANE_WAITING_OFFSET, 68);
  fail_unless_equals_int (GPUSHARE_LANE_TAIL_OFFSET, LANE_TAIL);
  fail_unless_equals_int (GPUSHARE_LANE_TAIL_OFFSET, 72);
  /* head on a cache line of its own, tail with the consumer's words */
  fail_unless (LANE_TAIL + 8 <= LANE_HEADER);
  fail_unless_equals_int (GPUSHARE_LANE_ENTRY_FRAME, 1);
  fail_unless_equals_int (GPUSHARE_LANE_ENTRY_MARK, 2);
  /* an entry's body holds a FRAME with its share, and no more */
  fail_unless_equals_int (ENTRY_BODY + ENTRY_BODY_MAX, ENTRY_SIZE);
  fail_unless (ENTRY_BODY + FRAME_SHARE_FIXED <= ENTRY_SIZE);
  fail_unless_equals_uint64 (gpushare_lane_size (16), 2688);
  fail_unless_equals_uint64 (gpushare_lane_size (1024), 163968);
  fail_unless_equals_uint64 (gpushare_lane_size (0), 128);
  /* no wrap at 32 bits */
  fail_unless_equals_uint64 (gpushare_lane_size (G_MAXUINT32),
      128 + (guint64) G_MAXUINT32 * 160);
  fail_unless_equals_int (GPUSHARE_LANE_RELEASE_SIZE, 32);
  fail_unless_equals_int (GPUSHARE_LANE_RHEAD_OFFSET, 80);
  fail_unless_equals_int (GPUSHARE_LANE_RTAIL_OFFSET, 88);
  fail_unless_equals_int (GPUSHARE_LANE_RWAITING_OFFSET, 96);
  fail_unless_equals_int (GPUSHARE_LANE_ANNOUNCED_OFFSET, 104);
  fail_unless_equals_int (GPUSHARE_MAX_HOLDERS_WIRE, 64);
  fail_unless_equals_int (GPUSHARE_MAX_STATUS_LEN, 15 * 1024);
  fail_unless_equals_int (GPUSHARE_MIN_OBSERVE_INTERVAL, 100);
  fail_unless_equals_int (GPUSHARE_MAX_OBSERVE_INTERVAL, 60000);
  fail_unless_equals_int (GPUSHARE_MAX_EVENT_LEN, 8192);
  fail_unless_equals_string (gpushare_msg_type_to_string (13), "META");
  fail_unless_equals_int (GPUSHARE_MAX_META_LEN, 12 * 1024);
  fail_unless_equals_int (GPUSHARE_MAX_META_ENTRIES, 64);
  for (i = 0; i < G_N_ELEMENTS (all_types); i++)
    fail_unless_equals_int (all_types[i], i + 1);
  fail_unless_equals_int (G_N_ELEMENTS (all_types), FIRST_UNKNOWN_TYPE - 1);

  fail_unless_equals_int (GPUSHARE_SYNC_HOST, 1);
  fail_unless_equals_int (GPUSHARE_SYNC_SEMAPHORE, 2);
  fail_unless_equals_int (GPUSHARE_SYNC_EVENT, 4);
  fail_unless_equals_int (GPUSHARE_SYNC_KNOWN_MASK, 0x7);

  fail_unless_equals_int (GPUSHARE_DEVICE_CAP_VMM_FD, 0x01);
  fail_unless_equals_int (GPUSHARE_DEVICE_CAP_FABRIC, 0x02);
  fail_unless_equals_int (GPUSHARE_DEVICE_CAP_IPC_EVENT, 0x04);
  fail_unless_equals_int (GPUSHARE_DEVICE_CAP_MEM_OPS, 0x08);
  fail_unless_equals_int (GPUSHARE_DEVICE_CAP_LEGACY_IPC, 0x10);
  fail_unless_equals_int (GPUSHARE_DEVICE_CAP_MIG, 0x20);

  /* the largest payload of all: SLOTS of legacy or fabric memory with
   * events, a memory, a ready and a done handle per slot */
  fail_unless (SLOTS_FIXED + GPUSHARE_MAX_HANDLES * HANDLE_SIZE <=
      GPUSHARE_MAX_PAYLOAD);
  fail_unless_equals_int (SLOTS_FIXED + GPUSHARE_MAX_HANDLES * HANDLE_SIZE,
      12336);
  fail_unless_equals_int (ANNOUNCE_FIXED + GPUSHARE_MAX_NAME_LEN +
      GPUSHARE_MAX_CAPS_LEN, 4384);
}

GST_END_TEST;

/* The codec's message table (gpushare_msg_info ()) against the header,
 * the documented sizes and what the codec does: every type up to
 * GPUSHARE_MSG_LAST has a row, named as gpushare_msg_type_to_string ()
 * names it, of a minor this version speaks; its fixed size is what a
 * message of that type has in its oldest form, less the variable parts
 * its fields declare; only a row that allows fds takes them, and those
 * are SLOTS and LANE; past the last type nothing is known. */
GST_START_TEST (test_msg_table)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GHashTable *names = g_hash_table_new (g_str_hash, g_str_equal);
  guint8 *raw = g_malloc (GPUSHARE_MAX_PAYLOAD);
  GByteArray *out = g_byte_array_new ();
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint type;

  fail_unless_equals_int (GPUSHARE_MSG_LAST + 1, FIRST_UNKNOWN_TYPE);

  fail_unless (gpushare_msg_info (0) == NULL);
  for (type = GPUSHARE_MSG_ANNOUNCE; type <= GPUSHARE_MSG_LAST; type++) {
    const GpuShareMsgInfo *info = gpushare_msg_info (type);
    gsize variable;
    guint32 n_fds;

    fail_unless (info != NULL, "type %u has no row", type);
    fail_unless (info->name != NULL && info->name[0] != '\0');
    fail_unless_equals_string (gpushare_msg_type_to_string (type), info->name);
    fail_if (g_hash_table_contains (names, info->name), "two types named %s",
        info->name);
    g_hash_table_add (names, (gpointer) info->name);
    fail_unless (info->direction >= GPUSHARE_DIR_PRODUCER_TO_CONSUMER &&
        info->direction <= GPUSHARE_DIR_PRODUCER_TO_OBSERVER, "%s: direction "
        "%d", info->name, info->direction);
    fail_unless (info->first_minor <= GPUSHARE_VERSION_MINOR, "%s: minor %u",
        info->name, info->first_minor);

    /* its oldest form: no share in FRAME, no HELD in GOODBYE */
    sample_msg (type, 1, msg, &n_fds);
    if (type == GPUSHARE_MSG_FRAME)
      msg->u.frame.share = 0;
    if (type == GPUSHARE_MSG_GOODBYE) {
      msg->u.goodbye.flags = 0;
      msg->u.goodbye.last_sequence = 0;
    }
    g_byte_array_set_size (out, 0);
    fail_unless (gpushare_msg_build (msg, n_fds, out), "%s", info->name);
    fail_unless_equals_int (parse_header_bytes (out->data, out->len, &hdr),
        GPUSHARE_PARSE_OK);
    fail_unless_equals_int (hdr.type, type);
    variable = raw_payload (msg, raw) - raw_fixed (msg, raw);
    fail_unless_equals_int (hdr.payload_len - variable, info->fixed_size);
    /* a byte less than the fixed part is never read */
    if (info->fixed_size > 0) {
      fail_unless_equals_int (parse_payload (type, n_fds,
              out->data + HDR_SIZE, info->fixed_size - 1, back),
          GPUSHARE_PARSE_TRUNCATED);
    }

    /* fds: only where the row allows them, in the header, the parser and
     * the builder */
    fail_unless_equals_int (info->carries_fds, type == GPUSHARE_MSG_SLOTS ||
        type == GPUSHARE_MSG_LANE);
    valid_header (b, type, hdr.payload_len, 1);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        info->carries_fds ? GPUSHARE_PARSE_OK : GPUSHARE_PARSE_BAD_FD_COUNT);
    if (!info->carries_fds) {
      fail_unless_equals_int (parse_payload (type, 1, out->data + HDR_SIZE,
              out->len - HDR_SIZE, back), GPUSHARE_PARSE_BAD_FD_COUNT);
      g_byte_array_set_size (out, 0);
      fail_if (gpushare_msg_build (msg, 1, out));
      fail_unless_equals_int (out->len, 0);
    }
  }

  /* the first type past the table: unknown everywhere, fds and all */
  type = GPUSHARE_MSG_LAST + 1;
  fail_unless (gpushare_msg_info (type) == NULL);
  fail_unless (gpushare_msg_info (G_MAXUINT) == NULL);
  fail_unless_equals_string (gpushare_msg_type_to_string (type), "UNKNOWN");
  valid_header (b, type, 8, 1);
  fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
      GPUSHARE_PARSE_OK);
  memset (raw, 0, 8);
  fail_unless_equals_int (parse_payload (type, 0, raw, 8, back),
      GPUSHARE_PARSE_UNKNOWN_TYPE);
  memset (msg, 0, sizeof (*msg));
  msg->type = type;
  g_byte_array_set_size (out, 0);
  fail_if (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, 0);

  g_byte_array_unref (out);
  g_hash_table_unref (names);
  g_free (raw);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_round_trip_announce_device)
{
  static const guint32 caps[] = { 0, GPUSHARE_DEVICE_CAP_VMM_FD,
    GPUSHARE_DEVICE_CAP_FABRIC, GPUSHARE_DEVICE_CAP_IPC_EVENT,
    GPUSHARE_DEVICE_CAP_MEM_OPS, GPUSHARE_DEVICE_CAP_LEGACY_IPC,
    GPUSHARE_DEVICE_CAP_MIG, 0x3f,
    /* bits this version does not know are carried unchanged */
    0x40, 0x80000000, G_MAXUINT32,
  };
  static const guint32 sync_modes[] = { GPUSHARE_SYNC_HOST,
    GPUSHARE_SYNC_SEMAPHORE, GPUSHARE_SYNC_EVENT, 0x3, 0x5, 0x6, 0x7,
    /* unknown bits beside a known one: a newer minor's offer */
    0x9, 0x80000004, G_MAXUINT32,
  };
  static const gint32 compute_modes[] = { 0, 1, 2, 3, -1, G_MININT32,
    G_MAXINT32,
  };
  static const guint8 seeds[] = { 0x00, 0x01, 0x80, 0xf0 };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (caps); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 2, msg, &n_fds);
    msg->u.announce.device.caps = caps[i];
    round_trip (msg, n_fds);
  }
  for (i = 0; i < G_N_ELEMENTS (sync_modes); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 2, msg, &n_fds);
    msg->u.announce.device.sync_modes = sync_modes[i];
    round_trip (msg, n_fds);
  }
  for (i = 0; i < G_N_ELEMENTS (compute_modes); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 2, msg, &n_fds);
    msg->u.announce.device.compute_mode = compute_modes[i];
    round_trip (msg, n_fds);
  }
  for (i = 0; i < G_N_ELEMENTS (seeds); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 2, msg, &n_fds);
    fill_uuid (msg->u.announce.device.uuid, seeds[i]);
    round_trip (msg, n_fds);
  }
  /* system memory alone: the block may be all zero */
  sample_msg (GPUSHARE_MSG_ANNOUNCE, 1, msg, &n_fds);
  round_trip (msg, n_fds);

  /* each field read from its own offset */
  sample_msg (GPUSHARE_MSG_ANNOUNCE, 2, msg, &n_fds);
  raw_payload (msg, raw);
  fail_unless (memcmp (raw + ANNOUNCE_DEVICE_UUID, msg->u.announce.device.uuid,
          16) == 0);
  put32 (raw, ANNOUNCE_DEVICE_CAPS, 0x11111111);
  put32 (raw, ANNOUNCE_SYNC_MODES, 0x22222222);
  put32 (raw, ANNOUNCE_COMPUTE_MODE, 0xfffffffd);
  raw[ANNOUNCE_DEVICE_UUID + 15] = 0x99;
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ANNOUNCE, 0, raw,
          ANNOUNCE_FIXED + msg->u.announce.name_len +
          msg->u.announce.layout.caps_len, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->u.announce.device.caps, 0x11111111);
  fail_unless_equals_uint64 (back->u.announce.device.sync_modes, 0x22222222);
  fail_unless_equals_int (back->u.announce.device.compute_mode, -3);
  fail_unless (memcmp (back->u.announce.device.uuid,
          msg->u.announce.device.uuid, 15) == 0);
  fail_unless_equals_int (back->u.announce.device.uuid[15], 0x99);

  g_free (raw);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_round_trip_accept_sync)
{
  static const guint32 cuda[] = { GPUSHARE_MEM_CUDA_VMM,
    GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_MEM_CUDA_FABRIC,
  };
  static const guint32 sync[] = { GPUSHARE_SYNC_HOST,
    GPUSHARE_SYNC_SEMAPHORE, GPUSHARE_SYNC_EVENT,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint32 n_fds;
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (cuda); i++) {
    for (j = 0; j < G_N_ELEMENTS (sync); j++) {
      sample_msg (GPUSHARE_MSG_ACCEPT, 2, msg, &n_fds);
      msg->u.accept.mem_type = cuda[i];
      msg->u.accept.sync_mode = sync[j];
      fill_uuid (msg->u.accept.uuid, 0x10 * (i * 3 + j));
      round_trip (msg, n_fds);
    }
  }
  /* system memory, no GPU: sync 0 and a zero uuid, with a reason */
  sample_msg (GPUSHARE_MSG_ACCEPT, 1, msg, &n_fds);
  memcpy (msg->u.accept.reason, "other GPU", 10);
  msg->u.accept.reason_len = 9;
  round_trip (msg, n_fds);
  /* the uuid is not checked: a system-memory consumer may still name
   * its GPU */
  memset (msg->u.accept.uuid, 0xff, 16);
  round_trip (msg, n_fds);

  /* each field read from its own offset, the reason right after the
   * name */
  sample_msg (GPUSHARE_MSG_ACCEPT, 2, msg, &n_fds);
  raw_payload (msg, raw);
  fail_unless_equals_uint64 (get32 (raw, ACCEPT_SYNC_MODE),
      GPUSHARE_SYNC_SEMAPHORE);
  fail_unless (memcmp (raw + ACCEPT_UUID, msg->u.accept.uuid, 16) == 0);
  fail_unless_equals_int (get32 (raw, ACCEPT_REASON_LEN), 35);
  fail_unless (memcmp (raw + ACCEPT_FIXED + 12, msg->u.accept.reason, 35) == 0);
  put32 (raw, ACCEPT_SYNC_MODE, GPUSHARE_SYNC_EVENT);
  raw[ACCEPT_UUID] = 0x77;
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, raw,
          ACCEPT_FIXED + 12 + 35, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->u.accept.sync_mode, GPUSHARE_SYNC_EVENT);
  fail_unless_equals_int (back->u.accept.uuid[0], 0x77);
  fail_unless (memcmp (back->u.accept.uuid + 1, msg->u.accept.uuid + 1,
          15) == 0);
  fail_unless_equals_string (back->u.accept.name, "gpusharesrc0");
  fail_unless_equals_string (back->u.accept.reason,
      "same GPU: VMM fd, 64-bit semaphores");

  g_free (raw);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* n_slots fds for VMM slots, then one for the semaphore block; legacy
 * and fabric slots as handles, and the block's fd alone */
GST_START_TEST (test_round_trip_slots_semaphore)
{
  static const guint32 n_slots[] = { 1, 2, 3, GPUSHARE_MAX_SLOTS - 1,
    GPUSHARE_MAX_SLOTS,
  };
  static const guint32 cuda[] = { GPUSHARE_MEM_CUDA_VMM,
    GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_MEM_CUDA_FABRIC,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i, j, k;

  for (i = 0; i < G_N_ELEMENTS (n_slots); i++) {
    for (j = 0; j < G_N_ELEMENTS (cuda); j++) {
      for (k = 0; k < 3; k++) {
        GpuShareSlots *s = &msg->u.slots;
        guint64 min = 16 * (guint64) n_slots[i];
        gboolean vmm = cuda[j] == GPUSHARE_MEM_CUDA_VMM;
        guint32 fds = vmm ? n_slots[i] + 1 : 1;

        sample_msg (GPUSHARE_MSG_SLOTS, 1, msg, &n_fds);
        s->slot_size = 2 * 1024 * 1024;
        s->n_slots = n_slots[i];
        s->mem_type = cuda[j];
        s->sync_mode = GPUSHARE_SYNC_SEMAPHORE;
        s->n_sync_fds = 1;
        s->sync_size = k == 0 ? min : k == 1 ? min + 1 : GPUSHARE_MAX_SLOT_SIZE;
        s->n_handles = vmm ? 0 : n_slots[i];
        fill_handles (s->handles, s->n_handles);
        round_trip (msg, fds);

        g_byte_array_set_size (out, 0);
        fail_unless (gpushare_msg_build (msg, fds, out));
        fail_unless_equals_int (get32 (out->data, 16), fds);
        fail_unless_equals_int (out->len, HDR_SIZE + SLOTS_FIXED +
            s->n_handles * HANDLE_SIZE);

        /* off by one either way; for legacy and fabric also an fd per
         * slot, with the block's or (where that is not 1) without */
        g_byte_array_set_size (out, 0);
        fail_if (gpushare_msg_build (msg, fds - 1, out));
        fail_if (gpushare_msg_build (msg, fds + 1, out));
        if (!vmm) {
          fail_if (gpushare_msg_build (msg, n_slots[i] + 1, out));
          if (n_slots[i] > 1)
            fail_if (gpushare_msg_build (msg, n_slots[i], out));
        }
        fail_unless_equals_int (out->len, 0);
      }
    }
  }
  g_byte_array_unref (out);
  g_free (msg);
}

GST_END_TEST;

/* Checks a built SLOTS against s, from the documented offsets: the
 * header's counts, the fixed part's n_handles, and handle e at 48 + 64 e. */
static void
assert_slots_wire (const GByteArray * out, const GpuShareSlots * s, guint32 fds)
{
  guint e;

  fail_unless_equals_int (out->len, HDR_SIZE + SLOTS_FIXED +
      s->n_handles * HANDLE_SIZE);
  fail_unless_equals_int (get32 (out->data, 12), SLOTS_FIXED +
      s->n_handles * HANDLE_SIZE);
  fail_unless_equals_int (get32 (out->data, 16), fds);
  fail_unless_equals_int (get32 (out->data, HDR_SIZE + SLOTS_N_HANDLES),
      s->n_handles);
  for (e = 0; e < s->n_handles; e++)
    fail_unless (memcmp (out->data + HDR_SIZE + SLOTS_FIXED +
            e * HANDLE_SIZE, s->handles[e], HANDLE_SIZE) == 0);
}

/* Parses out into a dirty message: the handles come back, and nothing is
 * left past n_handles. */
static void
assert_slots_parse_clean (const GByteArray * out, const GpuShareSlots * s,
    GpuShareMsg * back)
{
  GpuShareHeader hdr;
  guint e, j;

  memset (back, 0xa5, sizeof (*back));
  fail_unless_equals_int (gpushare_header_parse (out->data, out->len, &hdr),
      GPUSHARE_PARSE_OK);
  fail_unless_equals_int (gpushare_msg_parse (&hdr, out->data + HDR_SIZE,
          hdr.payload_len, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_int (back->u.slots.n_handles, s->n_handles);
  fail_unless (memcmp (back->u.slots.handles, s->handles,
          s->n_handles * HANDLE_SIZE) == 0);
  for (e = s->n_handles; e < GPUSHARE_MAX_HANDLES; e++) {
    for (j = 0; j < HANDLE_SIZE; j++)
      fail_unless_equals_int (back->u.slots.handles[e][j], 0);
  }
}

/* Legacy and fabric slots without event sync: n_slots memory handles
 * after the fixed part, in slot order, and no fd at all. */
GST_START_TEST (test_round_trip_slots_memory_handles)
{
  static const guint32 n_slots[] = { 1, 2, 3, GPUSHARE_MAX_SLOTS - 1,
    GPUSHARE_MAX_SLOTS,
  };
  static const guint32 mem[] = { GPUSHARE_MEM_CUDA_LEGACY,
    GPUSHARE_MEM_CUDA_FABRIC,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (n_slots); i++) {
    for (j = 0; j < G_N_ELEMENTS (mem); j++) {
      GpuShareSlots *s = &msg->u.slots;

      sample_msg (GPUSHARE_MSG_SLOTS, 1, msg, &n_fds);
      s->slot_size = 2 * 1024 * 1024;
      s->n_slots = n_slots[i];
      s->mem_type = mem[j];
      s->sync_mode = GPUSHARE_SYNC_HOST;
      s->n_handles = n_slots[i];
      memset (s->handles, 0, sizeof (s->handles));
      fill_handles (s->handles, s->n_handles);
      fail_unless_equals_int (s->n_handles, want_handles (mem[j],
              GPUSHARE_SYNC_HOST, n_slots[i]));
      fail_unless_equals_int (want_fds (mem[j], n_slots[i], 0), 0);
      round_trip (msg, 0);

      g_byte_array_set_size (out, 0);
      fail_unless (gpushare_msg_build (msg, 0, out));
      assert_slots_wire (out, s, 0);
      assert_slots_parse_clean (out, s, back);

      /* an fd, or one a slot as VMM memory would have, is refused */
      g_byte_array_set_size (out, 0);
      fail_if (gpushare_msg_build (msg, 1, out));
      fail_if (gpushare_msg_build (msg, n_slots[i], out));
      fail_if (gpushare_msg_build (msg, n_slots[i] + 1, out));
      /* and so are these handles with VMM memory, fds or not */
      s->mem_type = GPUSHARE_MEM_CUDA_VMM;
      fail_if (gpushare_msg_build (msg, 0, out));
      fail_if (gpushare_msg_build (msg, n_slots[i], out));
      fail_unless_equals_int (out->len, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* With EVENT, 2 * n_slots event handles, after the memory handles of
 * legacy and fabric slots, byte for byte; fds only for VMM slots. */
GST_START_TEST (test_round_trip_slots_events)
{
  static const guint32 n_slots[] = { 1, 2, 3, GPUSHARE_MAX_SLOTS - 1,
    GPUSHARE_MAX_SLOTS,
  };
  static const guint32 cuda[] = { GPUSHARE_MEM_CUDA_VMM,
    GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_MEM_CUDA_FABRIC,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (n_slots); i++) {
    for (j = 0; j < G_N_ELEMENTS (cuda); j++) {
      GpuShareSlots *s = &msg->u.slots;
      gboolean vmm = cuda[j] == GPUSHARE_MEM_CUDA_VMM;
      guint32 n_mem = vmm ? 0 : n_slots[i];
      guint32 fds = vmm ? n_slots[i] : 0;

      sample_msg (GPUSHARE_MSG_SLOTS, 2, msg, &n_fds);
      s->n_slots = n_slots[i];
      s->mem_type = cuda[j];
      s->n_handles = n_mem + 2 * n_slots[i];
      memset (s->handles, 0, sizeof (s->handles));
      fill_handles (s->handles, s->n_handles);
      fail_unless_equals_int (s->n_handles, want_handles (cuda[j],
              GPUSHARE_SYNC_EVENT, n_slots[i]));
      fail_unless_equals_int (fds, want_fds (cuda[j], n_slots[i], 0));
      round_trip (msg, fds);

      /* memory handles, then ready ones, then done ones, each at its
       * place on the wire */
      g_byte_array_set_size (out, 0);
      fail_unless (gpushare_msg_build (msg, fds, out));
      assert_slots_wire (out, s, fds);
      assert_slots_parse_clean (out, s, back);

      /* one fd more or fewer is refused, and so are the slots' fds with
       * legacy and fabric memory */
      g_byte_array_set_size (out, 0);
      if (fds > 0)
        fail_if (gpushare_msg_build (msg, fds - 1, out));
      fail_if (gpushare_msg_build (msg, fds + 1, out));
      if (!vmm)
        fail_if (gpushare_msg_build (msg, n_slots[i], out));
      /* the event handles alone, without the memory handles, or VMM
       * memory with memory handles */
      if (!vmm) {
        s->n_handles = 2 * n_slots[i];
        fail_if (gpushare_msg_build (msg, 0, out));
        fail_if (gpushare_msg_build (msg, n_slots[i], out));
      } else {
        s->n_handles = 3 * n_slots[i];
        fail_if (gpushare_msg_build (msg, n_slots[i], out));
        fail_if (gpushare_msg_build (msg, 0, out));
      }
      fail_unless_equals_int (out->len, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* The largest message of all: 64 slots of fabric (or legacy) memory with
 * events, GPUSHARE_MAX_HANDLES handles and no fd.  It fits the payload
 * cap, is byte for byte what the raw encoder writes, and comes back
 * unchanged. */
GST_START_TEST (test_round_trip_slots_largest)
{
  static const guint32 mem[] = { GPUSHARE_MEM_CUDA_FABRIC,
    GPUSHARE_MEM_CUDA_LEGACY,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 *raw = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint32 n_fds;
  guint i, k;

  for (i = 0; i < G_N_ELEMENTS (mem); i++) {
    GpuShareSlots *s = &msg->u.slots;
    const guint8 *h;

    sample_msg (GPUSHARE_MSG_SLOTS, 2, msg, &n_fds);
    s->mem_type = mem[i];
    fail_unless_equals_int (n_fds, 0);
    fail_unless_equals_int (s->n_slots, 64);
    fail_unless_equals_int (s->n_handles, 192);
    fail_unless_equals_int (s->n_handles, GPUSHARE_MAX_HANDLES);

    g_byte_array_set_size (out, 0);
    fail_unless (gpushare_msg_build (msg, 0, out));
    fail_unless_equals_int (out->len, HDR_SIZE + 48 + 192 * 64);
    fail_unless_equals_int (out->len - HDR_SIZE, 12336);
    fail_unless (out->len - HDR_SIZE <= GPUSHARE_MAX_PAYLOAD);
    assert_slots_wire (out, s, 0);
    fail_unless_equals_int (raw_payload (msg, raw), out->len - HDR_SIZE);
    fail_unless (memcmp (out->data + HDR_SIZE, raw, out->len - HDR_SIZE)
        == 0);

    /* slot k's memory handle at 48 + 64 k, its ready event 64 handles
     * later, its done event 128 handles later */
    h = out->data + HDR_SIZE + SLOTS_FIXED;
    for (k = 0; k < 64; k++) {
      fail_unless (memcmp (h + k * HANDLE_SIZE, s->handles[k],
              HANDLE_SIZE) == 0);
      fail_unless (memcmp (h + (64 + k) * HANDLE_SIZE, s->handles[64 + k],
              HANDLE_SIZE) == 0);
      fail_unless (memcmp (h + (128 + k) * HANDLE_SIZE, s->handles[128 + k],
              HANDLE_SIZE) == 0);
    }
    /* the first and the last handle on the wire, as fill_handles () made
     * them */
    for (k = 0; k < HANDLE_SIZE; k++) {
      fail_unless_equals_int (h[k], 0x00);
      fail_unless_equals_int (h[191 * HANDLE_SIZE + k], 0xff);
    }

    round_trip (msg, 0);
    assert_slots_parse_clean (out, s, back);

    /* and the raw bytes of the largest message, with every byte of slack
     * the payload cap leaves as a newer minor's extension */
    memset (raw + out->len - HDR_SIZE, 0x5a,
        GPUSHARE_MAX_PAYLOAD - (out->len - HDR_SIZE));
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_SLOTS, 0, raw,
            GPUSHARE_MAX_PAYLOAD, back), GPUSHARE_PARSE_OK);
    assert_msg_equal (back, msg);
  }
  g_free (raw);
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* GPU memory offered needs a way to synchronise it. */
GST_START_TEST (test_payload_announce_sync)
{
  static const struct
  {
    guint32 mem_types;
    guint32 sync_modes;
    GpuShareParseResult res;
  } table[] = {
    {GPUSHARE_MEM_SYSTEM, 0, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_SYSTEM, GPUSHARE_SYNC_HOST, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_SYSTEM, G_MAXUINT32, GPUSHARE_PARSE_OK},
    /* an unknown memory bit asks nothing of this version */
    {GPUSHARE_MEM_SYSTEM | 0x10, 0, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_VMM, 0, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_CUDA_LEGACY, 0, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_CUDA_FABRIC, 0, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM, 0,
        GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_KNOWN_MASK, 0, GPUSHARE_PARSE_MALFORMED},
    {G_MAXUINT32, 0, GPUSHARE_PARSE_MALFORMED},
    /* only bits this version does not know: no way it can use */
    {GPUSHARE_MEM_CUDA_VMM, 0x8, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_CUDA_VMM, 0xfffffff8, GPUSHARE_PARSE_MALFORMED},
    {GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_HOST, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_VMM, GPUSHARE_SYNC_SEMAPHORE, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_SYNC_EVENT, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_FABRIC, GPUSHARE_SYNC_KNOWN_MASK, GPUSHARE_PARSE_OK},
    {GPUSHARE_MEM_CUDA_VMM, 0x9, GPUSHARE_PARSE_OK},
    {G_MAXUINT32, G_MAXUINT32, GPUSHARE_PARSE_OK},
    /* no known memory type at all: refused for that first */
    {0x10, 0, GPUSHARE_PARSE_MALFORMED},
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (table); i++) {
    sample_msg (GPUSHARE_MSG_ANNOUNCE, 2, msg, &n_fds);
    msg->u.announce.mem_types = table[i].mem_types;
    msg->u.announce.device.sync_modes = table[i].sync_modes;
    fail_unless (parse_raw_msg (msg, 0, back) == table[i].res,
        "case %u: got %s", i,
        gpushare_parse_result_to_string (parse_raw_msg (msg, 0, back)));
    g_byte_array_set_size (out, 0);
    fail_unless_equals_int (gpushare_msg_build (msg, 0, out),
        table[i].res == GPUSHARE_PARSE_OK);
    if (table[i].res == GPUSHARE_PARSE_OK)
      round_trip (msg, 0);
    else
      fail_unless_equals_int (out->len, 0);
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* System memory: sync_mode 0.  GPU memory: exactly one known sync bit. */
GST_START_TEST (test_payload_accept_sync)
{
  static const guint32 mem[] = { GPUSHARE_MEM_SYSTEM, GPUSHARE_MEM_CUDA_VMM,
    GPUSHARE_MEM_CUDA_LEGACY, GPUSHARE_MEM_CUDA_FABRIC,
  };
  static const guint32 sync[] = { 0, GPUSHARE_SYNC_HOST,
    GPUSHARE_SYNC_SEMAPHORE, GPUSHARE_SYNC_EVENT,
    /* two or three bits */
    0x3, 0x5, 0x6, 0x7,
    /* unknown bits, alone or beside a known one */
    0x8, 0x10, 0x9, 0xc, 0x80000000, 0x80000001, G_MAXUINT32,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (mem); i++) {
    for (j = 0; j < G_N_ELEMENTS (sync); j++) {
      gboolean ok;
      GpuShareParseResult res;

      if (mem[i] == GPUSHARE_MEM_SYSTEM)
        ok = sync[j] == 0;
      else
        ok = sync[j] == GPUSHARE_SYNC_HOST ||
            sync[j] == GPUSHARE_SYNC_SEMAPHORE ||
            sync[j] == GPUSHARE_SYNC_EVENT;

      sample_msg (GPUSHARE_MSG_ACCEPT, 2, msg, &n_fds);
      msg->u.accept.mem_type = mem[i];
      msg->u.accept.sync_mode = sync[j];
      res = parse_raw_msg (msg, 0, back);
      fail_unless (res == (ok ? GPUSHARE_PARSE_OK :
              GPUSHARE_PARSE_MALFORMED), "%s with sync 0x%x: got %s",
          gpushare_mem_type_to_string (mem[i]), sync[j],
          gpushare_parse_result_to_string (res));
      g_byte_array_set_size (out, 0);
      fail_unless_equals_int (gpushare_msg_build (msg, 0, out), ok);
      if (ok)
        round_trip (msg, 0);
      else
        fail_unless_equals_int (out->len, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* The reason, after a name: its cap, its bytes, its place. */
GST_START_TEST (test_payload_accept_reason)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *b = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  gsize len, fixed;
  guint32 n_fds;

  /* a full name, then the reason */
  sample_msg (GPUSHARE_MSG_ACCEPT, 0, msg, &n_fds);
  fixed = raw_fixed (msg, b);
  memcpy (b + fixed, msg->u.accept.name, GPUSHARE_MAX_NAME_LEN);
  fixed += GPUSHARE_MAX_NAME_LEN;

  /* at the cap: accepted; the whole payload, nothing more.  One byte
   * more follows, for the cases over the cap */
  fill_utf8 ((gchar *) b + fixed, GPUSHARE_MAX_REASON_LEN);
  b[fixed + GPUSHARE_MAX_REASON_LEN] = 'x';
  put32 (b, ACCEPT_REASON_LEN, GPUSHARE_MAX_REASON_LEN);
  len = fixed + GPUSHARE_MAX_REASON_LEN;
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b, len,
          back), GPUSHARE_PARSE_OK);
  fail_unless_equals_int (back->u.accept.reason_len, GPUSHARE_MAX_REASON_LEN);
  fail_unless (memcmp (back->u.accept.reason, b + fixed,
          GPUSHARE_MAX_REASON_LEN) == 0);
  fail_unless_equals_int (back->u.accept.reason[GPUSHARE_MAX_REASON_LEN], 0);

  /* one byte short: truncated, whether the name is whole or not */
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b, len - 1,
          back), GPUSHARE_PARSE_TRUNCATED);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b, fixed,
          back), GPUSHARE_PARSE_TRUNCATED);
  put32 (b, ACCEPT_REASON_LEN, 1);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b, fixed,
          back), GPUSHARE_PARSE_TRUNCATED);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b,
          fixed + 1, back), GPUSHARE_PARSE_OK);

  /* over the cap: malformed, with its bytes present or not, and no sum
   * of the two lengths wraps */
  put32 (b, ACCEPT_REASON_LEN, GPUSHARE_MAX_REASON_LEN + 1);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b,
          fixed + GPUSHARE_MAX_REASON_LEN + 1, back), GPUSHARE_PARSE_MALFORMED);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b, fixed,
          back), GPUSHARE_PARSE_MALFORMED);
  put32 (b, ACCEPT_REASON_LEN, G_MAXUINT32);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b, fixed,
          back), GPUSHARE_PARSE_MALFORMED);
  put32 (b, ACCEPT_REASON_LEN, G_MAXUINT32 - GPUSHARE_MAX_NAME_LEN + 1);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b, fixed,
          back), GPUSHARE_PARSE_MALFORMED);

  /* not UTF-8, or a NUL: malformed */
  put32 (b, ACCEPT_REASON_LEN, 4);
  memcpy (b + fixed, "ok\xc3(", 4);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b,
          fixed + 4, back), GPUSHARE_PARSE_MALFORMED);
  memcpy (b + fixed, "\xfe" "abc", 4);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b,
          fixed + 4, back), GPUSHARE_PARSE_MALFORMED);
  memcpy (b + fixed, "ab\0c", 4);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b,
          fixed + 4, back), GPUSHARE_PARSE_MALFORMED);
  memcpy (b + fixed, "\xe2\x82\xac!", 4);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b,
          fixed + 4, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_string (back->u.accept.reason, "\xe2\x82\xac!");
  /* the name before it is still judged on its own */
  b[ACCEPT_FIXED] = 0xff;
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_ACCEPT, 0, b,
          fixed + 4, back), GPUSHARE_PARSE_MALFORMED);

  g_free (b);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

static gsize
handle_bytes (guint32 n_handles)
{
  return (gsize) n_handles *HANDLE_SIZE;
}

/* handle bytes for hostile SLOTS: any pattern, as long as it is known */
static guint8 slots_pattern[(GPUSHARE_MAX_HANDLES + 2) * HANDLE_SIZE];

static void
init_slots_pattern (void)
{
  guint i;

  for (i = 0; i < sizeof (slots_pattern); i++)
    slots_pattern[i] = (i * 7 + 3) & 0xff;
}

#define H(n) ((n) * HANDLE_SIZE)
#define SYS GPUSHARE_MEM_SYSTEM
#define VMM GPUSHARE_MEM_CUDA_VMM
#define LEG GPUSHARE_MEM_CUDA_LEGACY
#define FAB GPUSHARE_MEM_CUDA_FABRIC
#define HOST GPUSHARE_SYNC_HOST
#define SEM GPUSHARE_SYNC_SEMAPHORE
#define EVT GPUSHARE_SYNC_EVENT
#define OK GPUSHARE_PARSE_OK
#define BAD GPUSHARE_PARSE_MALFORMED
#define FDS GPUSHARE_PARSE_BAD_FD_COUNT
#define CUT GPUSHARE_PARSE_TRUNCATED

typedef struct
{
  const gchar *what;
  guint32 n_slots;
  guint32 mem_type;
  guint32 sync_mode;
  guint32 n_sync_fds;
  guint64 sync_size;
  guint32 n_handles;
  guint32 present;              /* bytes of handles in the payload */
  guint32 n_fds;                /* the header's */
  GpuShareParseResult res;
} SlotsSyncCase;

static const SlotsSyncCase slots_sync_cases[] = {
  /* sync_mode and mem_type */
  {"system", 4, SYS, 0, 0, 0, 0, 0, 4, OK},
  {"system, host", 4, SYS, HOST, 0, 0, 0, 0, 4, BAD},
  {"system, semaphore", 4, SYS, SEM, 1, 64, 0, 0, 5, BAD},
  {"system, event", 4, SYS, EVT, 0, 0, 8, H (8), 4, BAD},
  {"system, block fd", 4, SYS, 0, 1, 64, 0, 0, 5, BAD},
  {"system, handles", 4, SYS, 0, 0, 0, 8, H (8), 4, BAD},
  {"cuda, sync 0", 4, VMM, 0, 0, 0, 0, 0, 4, BAD},
  {"cuda, host", 4, VMM, HOST, 0, 0, 0, 0, 4, OK},
  {"cuda, two bits", 4, VMM, HOST | SEM, 0, 0, 0, 0, 4, BAD},
  {"cuda, semaphore + event", 4, VMM, SEM | EVT, 1, 64, 8, H (8), 5, BAD},
  {"cuda, every known bit", 4, VMM, 0x7, 0, 0, 0, 0, 4, BAD},
  {"cuda, unknown bit", 4, VMM, 0x8, 0, 0, 0, 0, 4, BAD},
  {"cuda, host + unknown", 4, VMM, 0x9, 0, 0, 0, 0, 4, BAD},
  {"cuda, top bit", 4, VMM, 0x80000000, 0, 0, 0, 0, 4, BAD},
  {"cuda, every bit", 4, VMM, G_MAXUINT32, 0, 0, 0, 0, 4, BAD},
  {"host, block fd", 4, VMM, HOST, 1, 64, 0, 0, 5, BAD},
  {"host, handles", 4, VMM, HOST, 0, 0, 8, H (8), 4, BAD},
  {"host, n+1 fds", 4, VMM, HOST, 0, 0, 0, 0, 5, FDS},
  {"host, n-1 fds", 4, VMM, HOST, 0, 0, 0, 0, 3, FDS},
  /* semaphore: the block is the last fd */
  {"semaphore", 4, VMM, SEM, 1, 64, 0, 0, 5, OK},
  {"semaphore, legacy", 4, LEG, SEM, 1, 64, 4, H (4), 1, OK},
  {"semaphore, fabric", 4, FAB, SEM, 1, 64, 4, H (4), 1, OK},
  {"semaphore, 1 slot", 1, VMM, SEM, 1, 16, 0, 0, 2, OK},
  {"semaphore, max slots", 64, VMM, SEM, 1, 1024, 0, 0, 65, OK},
  {"semaphore without its fd", 4, VMM, SEM, 0, 64, 0, 0, 4, BAD},
  {"semaphore without its fd, n+1 fds", 4, VMM, SEM, 0, 64, 0, 0, 5, BAD},
  /* since minor 12: the block, then its ready words in host memory */
  {"semaphore, ready words", 4, VMM, SEM, 2, 64, 0, 0, 6, OK},
  {"semaphore, ready words, legacy", 4, LEG, SEM, 2, 64, 4, H (4), 2, OK},
  {"semaphore, ready words, max slots", 64, VMM, SEM, 2, 1024, 0, 0, 66,
      OK},
  {"semaphore, ready words, n+1 fds", 4, VMM, SEM, 2, 64, 0, 0, 5, FDS},
  {"semaphore, ready words, n+3 fds", 4, VMM, SEM, 2, 64, 0, 0, 7, FDS},
  {"semaphore, 3 sync fds", 4, VMM, SEM, 3, 64, 0, 0, 7, BAD},
  {"host, 2 sync fds", 4, VMM, HOST, 2, 64, 0, 0, 6, BAD},
  {"event, 2 sync fds", 4, VMM, EVT, 2, 64, 8, H (8), 6, BAD},
  {"system, 2 sync fds", 4, SYS, 0, 2, 64, 0, 0, 6, BAD},
  {"semaphore, n_sync_fds uint32", 4, VMM, SEM, G_MAXUINT32, 64, 0, 0, 3,
      BAD},
  {"semaphore, n fds", 4, VMM, SEM, 1, 64, 0, 0, 4, FDS},
  {"semaphore, n+2 fds", 4, VMM, SEM, 1, 64, 0, 0, 6, FDS},
  {"semaphore, no fds", 4, VMM, SEM, 1, 64, 0, 0, 0, FDS},
  {"semaphore, 1 slot, 1 fd", 1, VMM, SEM, 1, 16, 0, 0, 1, FDS},
  {"semaphore, 1 slot, 3 fds", 1, VMM, SEM, 1, 16, 0, 0, 3, FDS},
  {"semaphore, max slots, 64 fds", 64, VMM, SEM, 1, 1024, 0, 0, 64, FDS},
  {"semaphore, max slots, 66 fds", 64, VMM, SEM, 1, 1024, 0, 0, 66, FDS},
  {"semaphore, handles", 4, VMM, SEM, 1, 64, 8, H (8), 5, BAD},
  /* the block holds 16 bytes a slot at least */
  {"sync_size 16n-1", 4, VMM, SEM, 1, 63, 0, 0, 5, BAD},
  {"sync_size 16n+1", 4, VMM, SEM, 1, 65, 0, 0, 5, OK},
  {"sync_size 0", 4, VMM, SEM, 1, 0, 0, 0, 5, BAD},
  {"sync_size 1 slot, 15", 1, VMM, SEM, 1, 15, 0, 0, 2, BAD},
  {"sync_size max slots, 1023", 64, VMM, SEM, 1, 1023, 0, 0, 65, BAD},
  {"sync_size max", 4, VMM, SEM, 1, GPUSHARE_MAX_SLOT_SIZE, 0, 0, 5, OK},
  {"sync_size max+1", 4, VMM, SEM, 1, GPUSHARE_MAX_SLOT_SIZE + 1, 0, 0, 5,
      BAD},
  {"sync_size uint64", 4, VMM, SEM, 1, G_MAXUINT64, 0, 0, 5, BAD},
  /* events: n_slots ready handles, then n_slots done handles */
  {"event", 4, VMM, EVT, 0, 0, 8, H (8), 4, OK},
  {"event, legacy", 4, LEG, EVT, 0, 0, 12, H (12), 0, OK},
  {"event, fabric", 4, FAB, EVT, 0, 0, 12, H (12), 0, OK},
  {"event, 1 slot", 1, VMM, EVT, 0, 0, 2, H (2), 1, OK},
  {"event, max slots", 64, VMM, EVT, 0, 0, 128, H (128), 64, OK},
  {"event, no handles", 4, VMM, EVT, 0, 0, 0, 0, 4, BAD},
  {"event, n handles", 4, VMM, EVT, 0, 0, 4, H (4), 4, BAD},
  {"event, 2n-1 handles", 4, VMM, EVT, 0, 0, 7, H (7), 4, BAD},
  {"event, 2n+1 handles", 4, VMM, EVT, 0, 0, 9, H (9), 4, BAD},
  {"event, 1 slot, 1 handle", 1, VMM, EVT, 0, 0, 1, H (1), 1, BAD},
  {"event, 1 slot, 3 handles", 1, VMM, EVT, 0, 0, 3, H (3), 1, BAD},
  {"event, max slots, 127", 64, VMM, EVT, 0, 0, 127, H (127), 64, BAD},
  {"event, max slots, 129", 64, VMM, EVT, 0, 0, 129, H (129), 64, BAD},
  {"event, block fd", 4, VMM, EVT, 1, 64, 8, H (8), 5, BAD},
  {"event, n+1 fds", 4, VMM, EVT, 0, 0, 8, H (8), 5, FDS},
  {"event, n-1 fds", 4, VMM, EVT, 0, 0, 8, H (8), 3, FDS},
  /* legacy and fabric memory: a memory handle a slot, then no slot fds */
  {"legacy, host", 4, LEG, HOST, 0, 0, 4, H (4), 0, OK},
  {"fabric, host", 4, FAB, HOST, 0, 0, 4, H (4), 0, OK},
  {"legacy, 1 slot", 1, LEG, HOST, 0, 0, 1, H (1), 0, OK},
  {"fabric, max slots", 64, FAB, HOST, 0, 0, 64, H (64), 0, OK},
  {"legacy, semaphore, 1 slot", 1, LEG, SEM, 1, 16, 1, H (1), 1, OK},
  {"fabric, semaphore, max slots", 64, FAB, SEM, 1, 1024, 64, H (64), 1,
      OK},
  {"legacy + event, 1 slot", 1, LEG, EVT, 0, 0, 3, H (3), 0, OK},
  {"fabric + event, max slots", 64, FAB, EVT, 0, 0, 192, H (192), 0, OK},
  {"legacy + event, max slots", 64, LEG, EVT, 0, 0, 192, H (192), 0, OK},
  /* ... with slot fds as VMM memory has them */
  {"legacy, slot fds", 4, LEG, HOST, 0, 0, 4, H (4), 4, FDS},
  {"legacy, 1 fd", 4, LEG, HOST, 0, 0, 4, H (4), 1, FDS},
  {"legacy, n-1 fds", 4, LEG, HOST, 0, 0, 4, H (4), 3, FDS},
  {"legacy, 1 slot, 1 fd", 1, LEG, HOST, 0, 0, 1, H (1), 1, FDS},
  {"fabric, slot fds", 4, FAB, HOST, 0, 0, 4, H (4), 4, FDS},
  {"fabric, max slots, slot fds", 64, FAB, HOST, 0, 0, 64, H (64), 64,
      FDS},
  {"fabric, max slots, max fds", 64, FAB, HOST, 0, 0, 64, H (64), 65, FDS},
  {"legacy, semaphore, slot fds + block", 4, LEG, SEM, 1, 64, 4, H (4), 5,
      FDS},
  {"legacy, semaphore, no fd", 4, LEG, SEM, 1, 64, 4, H (4), 0, FDS},
  {"fabric, semaphore, 2 fds", 4, FAB, SEM, 1, 64, 4, H (4), 2, FDS},
  {"legacy + event, slot fds", 4, LEG, EVT, 0, 0, 12, H (12), 4, FDS},
  {"legacy + event, 1 fd", 4, LEG, EVT, 0, 0, 12, H (12), 1, FDS},
  {"fabric + event, max slots, slot fds", 64, FAB, EVT, 0, 0, 192,
      H (192), 64, FDS},
  /* ... with a handle count off by one, or without the memory handles:
   * the count is judged before the fds */
  {"legacy, no handles", 4, LEG, HOST, 0, 0, 0, 0, 0, BAD},
  {"legacy, no handles, slot fds", 4, LEG, HOST, 0, 0, 0, 0, 4, BAD},
  {"legacy, n-1 handles", 4, LEG, HOST, 0, 0, 3, H (3), 0, BAD},
  {"legacy, n+1 handles", 4, LEG, HOST, 0, 0, 5, H (5), 0, BAD},
  {"legacy, 1 slot, 0 handles", 1, LEG, HOST, 0, 0, 0, 0, 0, BAD},
  {"legacy, 1 slot, 2 handles", 1, LEG, HOST, 0, 0, 2, H (2), 0, BAD},
  {"fabric, n-1 handles", 4, FAB, HOST, 0, 0, 3, H (3), 0, BAD},
  {"fabric, n+1 handles", 4, FAB, HOST, 0, 0, 5, H (5), 0, BAD},
  {"fabric, max slots, 63 handles", 64, FAB, HOST, 0, 0, 63, H (63), 0,
      BAD},
  {"fabric, max slots, 65 handles", 64, FAB, HOST, 0, 0, 65, H (65), 0,
      BAD},
  {"legacy, semaphore, n-1 handles", 4, LEG, SEM, 1, 64, 3, H (3), 1, BAD},
  {"legacy, semaphore, n+1 handles", 4, LEG, SEM, 1, 64, 5, H (5), 1, BAD},
  {"legacy + event, 3n-1 handles", 4, LEG, EVT, 0, 0, 11, H (11), 0, BAD},
  {"legacy + event, 3n+1 handles", 4, LEG, EVT, 0, 0, 13, H (13), 0, BAD},
  {"legacy + event, 2n handles", 4, LEG, EVT, 0, 0, 8, H (8), 0, BAD},
  {"legacy + event, 2n handles, slot fds", 4, LEG, EVT, 0, 0, 8, H (8), 4,
      BAD},
  {"fabric + event, 1 slot, 2 handles", 1, FAB, EVT, 0, 0, 2, H (2), 0,
      BAD},
  {"fabric + event, 1 slot, 4 handles", 1, FAB, EVT, 0, 0, 4, H (4), 0,
      BAD},
  {"fabric + event, max slots, 191", 64, FAB, EVT, 0, 0, 191, H (191), 0,
      BAD},
  /* VMM and system memory with memory handles: their slots are fds */
  {"vmm, memory handles", 4, VMM, HOST, 0, 0, 4, H (4), 0, BAD},
  {"vmm, memory handles and fds", 4, VMM, HOST, 0, 0, 4, H (4), 4, BAD},
  {"vmm, 1 slot, memory handle", 1, VMM, HOST, 0, 0, 1, H (1), 1, BAD},
  {"vmm, max slots, memory handles", 64, VMM, HOST, 0, 0, 64, H (64), 64,
      BAD},
  {"vmm, semaphore, memory handles", 4, VMM, SEM, 1, 64, 4, H (4), 5, BAD},
  {"vmm, semaphore, memory handles, block fd", 4, VMM, SEM, 1, 64, 4,
      H (4), 1, BAD},
  {"vmm + event, 3n handles", 4, VMM, EVT, 0, 0, 12, H (12), 4, BAD},
  {"vmm + event, 3n handles, no fds", 4, VMM, EVT, 0, 0, 12, H (12), 0,
      BAD},
  {"system, memory handles", 4, SYS, 0, 0, 0, 4, H (4), 4, BAD},
  {"system, memory handles, no fds", 4, SYS, 0, 0, 0, 4, H (4), 0, BAD},
  /* over the cap: refused before their bytes are looked for */
  {"handles max+1", 64, FAB, EVT, 0, 0, 193, H (193), 0, BAD},
  {"handles max+1, absent", 64, FAB, EVT, 0, 0, 193, 0, 0, BAD},
  {"handles max+1, legacy", 64, LEG, EVT, 0, 0, 193, H (193), 0, BAD},
  {"handles max+2", 64, FAB, EVT, 0, 0, 194, H (194), 0, BAD},
  {"handles max+1, vmm", 64, VMM, EVT, 0, 0, 193, H (193), 64, BAD},
  {"events 2^26 (x64 wraps 32 bits)", 4, VMM, EVT, 0, 0, 1u << 26, 0, 4,
      BAD},
  {"handles 2^26, fabric", 4, FAB, EVT, 0, 0, 1u << 26, 0, 0, BAD},
  {"events uint32", 4, VMM, EVT, 0, 0, G_MAXUINT32, 0, 4, BAD},
  {"handles uint32, legacy", 4, LEG, HOST, 0, 0, G_MAXUINT32, 0, 0, BAD},
  /* truncated */
  {"events cut by a byte", 4, VMM, EVT, 0, 0, 8, H (8) - 1, 4, CUT},
  {"events cut by a handle", 4, VMM, EVT, 0, 0, 8, H (7), 4, CUT},
  {"events absent", 4, VMM, EVT, 0, 0, 8, 0, 4, CUT},
  {"events max, cut by a byte", 64, VMM, EVT, 0, 0, 128, H (128) - 1, 64,
      CUT},
  {"legacy handles cut by a byte", 4, LEG, HOST, 0, 0, 4, H (4) - 1, 0,
      CUT},
  {"legacy handles cut by a handle", 4, LEG, HOST, 0, 0, 4, H (3), 0, CUT},
  {"legacy handles absent", 4, LEG, HOST, 0, 0, 4, 0, 0, CUT},
  {"fabric handles, 1 slot, cut by a byte", 1, FAB, HOST, 0, 0, 1,
      H (1) - 1, 0, CUT},
  {"fabric + event, max, cut by a byte", 64, FAB, EVT, 0, 0, 192,
      H (192) - 1, 0, CUT},
  {"fabric + event, max, cut by a handle", 64, FAB, EVT, 0, 0, 192,
      H (191), 0, CUT},
  {"fabric + event, max, only the memory handles", 64, FAB, EVT, 0, 0, 192,
      H (64), 0, CUT},
  {"legacy + semaphore, handles absent", 4, LEG, SEM, 1, 64, 4, 0, 1, CUT},
  /* lengths come before ranges, as for strings */
  {"events absent, n_slots 0", 0, VMM, EVT, 0, 0, 2, 0, 0, CUT},
  {"max slots, 129 events absent", 64, VMM, EVT, 0, 0, 129, 0, 64, CUT},
  {"legacy handles absent, slot fds", 4, LEG, HOST, 0, 0, 4, 0, 4, CUT},
  {"legacy, n+1 handles absent", 4, LEG, HOST, 0, 0, 5, 0, 0, CUT},
  /* a byte more: a newer minor's extension */
  {"events and a byte", 4, VMM, EVT, 0, 0, 8, H (8) + 1, 4, OK},
  {"legacy handles and a byte", 4, LEG, HOST, 0, 0, 4, H (4) + 1, 0, OK},
  {"fabric + event, max, and a handle", 64, FAB, EVT, 0, 0, 192, H (193), 0,
      OK},
};

#undef H
#undef SYS
#undef VMM
#undef LEG
#undef FAB
#undef HOST
#undef SEM
#undef EVT
#undef OK
#undef BAD
#undef FDS
#undef CUT

GST_START_TEST (test_payload_slots_sync)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 *b = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  guint32 n_fds;
  guint i;

  init_slots_pattern ();
  for (i = 0; i < G_N_ELEMENTS (slots_sync_cases); i++) {
    const SlotsSyncCase *c = &slots_sync_cases[i];
    GpuShareSlots *s = &msg->u.slots;
    GpuShareParseResult res;
    gsize len;

    sample_msg (GPUSHARE_MSG_SLOTS, 1, msg, &n_fds);
    s->slot_size = 4096;
    s->n_slots = c->n_slots;
    s->mem_type = c->mem_type;
    s->sync_mode = c->sync_mode;
    s->n_sync_fds = c->n_sync_fds;
    s->sync_size = c->sync_size;
    s->n_handles = c->n_handles;
    memcpy (s->handles, slots_pattern, sizeof (s->handles));

    g_assert (c->present <= sizeof (slots_pattern));
    len = raw_fixed (msg, b);
    memcpy (b + len, slots_pattern, c->present);
    len += c->present;
    res = parse_payload (GPUSHARE_MSG_SLOTS, c->n_fds, b, len, back);
    fail_unless (res == c->res, "%s: got %s", c->what,
        gpushare_parse_result_to_string (res));

    if (res == GPUSHARE_PARSE_OK) {
      fail_unless (memcmp (back->u.slots.handles, slots_pattern,
              handle_bytes (c->n_handles)) == 0);
      assert_msg_equal (back, msg);
    }

    /* where the payload is whole (or cannot be), the builder agrees */
    if (c->n_handles > GPUSHARE_MAX_HANDLES ||
        c->present == handle_bytes (c->n_handles)) {
      g_byte_array_set_size (out, 0);
      fail_unless (gpushare_msg_build (msg, c->n_fds, out) ==
          (c->res == GPUSHARE_PARSE_OK), "%s: builder disagrees", c->what);
      if (c->res == GPUSHARE_PARSE_OK)
        round_trip (msg, c->n_fds);
      else
        fail_unless_equals_int (out->len, 0);
    }
  }
  g_free (b);
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_layout_set_caps)
{
  GpuShareLayout *l = g_new0 (GpuShareLayout, 1);
  gchar *s = g_malloc (GPUSHARE_MAX_CAPS_LEN + 2);

  fail_unless (gpushare_layout_set_caps (l, "video/x-raw"));
  fail_unless_equals_int (l->caps_len, 11);
  fail_unless_equals_string (l->caps, "video/x-raw");

  fill_utf8 (s, GPUSHARE_MAX_CAPS_LEN);
  fail_unless (gpushare_layout_set_caps (l, s));
  fail_unless_equals_int (l->caps_len, GPUSHARE_MAX_CAPS_LEN);
  fail_unless_equals_string (l->caps, s);

  fail_unless (gpushare_layout_set_caps (l, "video/x-raw"));
  /* refused, and the layout keeps what it had */
  fill_utf8 (s, GPUSHARE_MAX_CAPS_LEN + 1);
  fail_if (gpushare_layout_set_caps (l, s));
  fail_if (gpushare_layout_set_caps (l, ""));
  fail_if (gpushare_layout_set_caps (l, "ab\xc3"));
  fail_unless_equals_int (l->caps_len, 11);
  fail_unless_equals_string (l->caps, "video/x-raw");

  g_free (s);
  g_free (l);
}

GST_END_TEST;

/* PING (minor 1): the empty heartbeat, either direction.  Exactly a
 * header on the wire; a longer payload is a newer minor's and ignored;
 * fds are refused as on every known type but SLOTS and LANE. */
GST_START_TEST (test_ping)
{
  static const guint8 golden[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  static const gsize extra[] = { 1, 4, 8, 100, GPUSHARE_MAX_PAYLOAD };
  static const guint32 counts[] = { 1, 2, GPUSHARE_MAX_FDS };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 *raw = g_malloc (GPUSHARE_MAX_PAYLOAD);
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint i;

  fail_unless_equals_int (GPUSHARE_MSG_PING, 11);
  fail_unless_equals_string (gpushare_msg_type_to_string (11), "PING");

  /* round trip, and the bytes themselves */
  msg->type = GPUSHARE_MSG_PING;
  round_trip (msg, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (golden));
  fail_unless (memcmp (out->data, golden, sizeof (golden)) == 0);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_PING, 0, NULL, 0,
          back), GPUSHARE_PARSE_OK);
  fail_unless_equals_int (back->type, GPUSHARE_MSG_PING);

  /* a payload: a newer minor's extension, ignored */
  memset (raw, 0x5a, GPUSHARE_MAX_PAYLOAD);
  for (i = 0; i < G_N_ELEMENTS (extra); i++) {
    valid_header (b, GPUSHARE_MSG_PING, extra[i], 0);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        GPUSHARE_PARSE_OK);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_PING, 0, raw,
            extra[i], back), GPUSHARE_PARSE_OK);
    fail_unless_equals_int (back->type, GPUSHARE_MSG_PING);
  }
  /* over the cap like any other type */
  valid_header (b, GPUSHARE_MSG_PING, GPUSHARE_MAX_PAYLOAD + 1, 0);
  fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
      GPUSHARE_PARSE_TOO_LARGE);

  /* fds: refused at the header, at the payload and by the builder */
  g_byte_array_set_size (out, 0);
  for (i = 0; i < G_N_ELEMENTS (counts); i++) {
    valid_header (b, GPUSHARE_MSG_PING, 0, counts[i]);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        GPUSHARE_PARSE_BAD_FD_COUNT);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_PING, counts[i],
            NULL, 0, back), GPUSHARE_PARSE_BAD_FD_COUNT);
    fail_if (gpushare_msg_build (msg, counts[i], out));
  }
  fail_unless_equals_int (out->len, 0);

  g_free (raw);
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* Minor 3 added flags and last_sequence to GOODBYE: on the wire only when
 * one of them is set, so that a GOODBYE that says nothing more is minor 2's
 * 4 bytes, and read only when the payload holds them whole, so that a
 * minor 2 GOODBYE (4 bytes, or a shorter tail of anything) says nothing
 * more. */
GST_START_TEST (test_goodbye_held)
{
  static const guint8 plain[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x09, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00,
  };
  static const guint8 held[] = {
    'G', 'P', 'S', 'H', 0x01, 0x00, 0x0d, 0x00,
    0x09, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 *raw = g_malloc (GPUSHARE_MAX_PAYLOAD);
  gsize len;

  fail_unless_equals_int (GPUSHARE_ERR_SHUTDOWN, 8);

  /* nothing held: minor 2's bytes */
  msg->type = GPUSHARE_MSG_GOODBYE;
  msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  round_trip (msg, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (plain));
  fail_unless (memcmp (out->data, plain, sizeof (plain)) == 0);

  /* held: 16 bytes */
  msg->u.goodbye.flags = GPUSHARE_GOODBYE_FLAG_HELD;
  msg->u.goodbye.last_sequence = G_GUINT64_CONSTANT (0x0102030405060708);
  round_trip (msg, 0);
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build (msg, 0, out));
  fail_unless_equals_int (out->len, sizeof (held));
  fail_unless (memcmp (out->data, held, sizeof (held)) == 0);

  /* either field alone takes the 16 bytes; unknown flags travel, for a
   * later minor to give them meaning */
  msg->u.goodbye.flags = 0;
  round_trip (msg, 0);
  msg->u.goodbye.flags = 0xfffffffeu;
  msg->u.goodbye.last_sequence = 0;
  round_trip (msg, 0);

  /* a payload of 4 to 15 bytes: a GOODBYE that says nothing more, whatever
   * the tail (a later minor's, or minor 2's padding) */
  memcpy (raw, held + HDR_SIZE, GOODBYE_HELD_FIXED);
  for (len = GOODBYE_FIXED; len < GOODBYE_HELD_FIXED; len++) {
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_GOODBYE, 0, raw, len,
            back), GPUSHARE_PARSE_OK);
    fail_unless_equals_uint64 (back->u.goodbye.reason, GPUSHARE_ERR_SHUTDOWN);
    fail_unless_equals_uint64 (back->u.goodbye.flags, 0);
    fail_unless_equals_uint64 (back->u.goodbye.last_sequence, 0);
  }
  /* shorter than minor 2's: truncated */
  for (len = 0; len < GOODBYE_FIXED; len++)
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_GOODBYE, 0, raw, len,
            back), GPUSHARE_PARSE_TRUNCATED);
  /* the whole part, and more after it */
  memset (raw + GOODBYE_HELD_FIXED, 0xa5, 8);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_GOODBYE, 0, raw,
          GOODBYE_HELD_FIXED + 8, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->u.goodbye.flags, GPUSHARE_GOODBYE_FLAG_HELD);
  fail_unless_equals_uint64 (back->u.goodbye.last_sequence,
      G_GUINT64_CONSTANT (0x0102030405060708));

  g_free (raw);
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_to_string)
{
  GHashTable *seen = g_hash_table_new (g_str_hash, g_str_equal);
  guint i;

  for (i = GPUSHARE_MSG_ANNOUNCE; i < FIRST_UNKNOWN_TYPE; i++) {
    const gchar *s = gpushare_msg_type_to_string (i);

    fail_unless (s != NULL);
    fail_if (g_str_equal (s, "UNKNOWN"));
    fail_if (g_hash_table_contains (seen, s));
    g_hash_table_add (seen, (gpointer) s);
  }
  fail_unless_equals_string (gpushare_msg_type_to_string (0), "UNKNOWN");
  fail_unless_equals_string (gpushare_msg_type_to_string
      (FIRST_UNKNOWN_TYPE), "UNKNOWN");
  fail_unless_equals_string (gpushare_msg_type_to_string (G_MAXUINT),
      "UNKNOWN");
  fail_unless_equals_string (gpushare_msg_type_to_string
      (GPUSHARE_MSG_FRAME), "FRAME");
  g_hash_table_remove_all (seen);

  for (i = GPUSHARE_PARSE_OK; i <= GPUSHARE_PARSE_UNKNOWN_TYPE; i++) {
    const gchar *s = gpushare_parse_result_to_string (i);

    fail_unless (s != NULL);
    fail_if (g_hash_table_contains (seen, s));
    g_hash_table_add (seen, (gpointer) s);
  }
  fail_unless (gpushare_parse_result_to_string (G_MAXINT) != NULL);
  g_hash_table_remove_all (seen);

  for (i = GPUSHARE_ERR_NONE; i <= GPUSHARE_ERR_INTERNAL; i++) {
    const gchar *s = gpushare_error_code_to_string (i);

    fail_unless (s != NULL);
    fail_if (g_hash_table_contains (seen, s));
    g_hash_table_add (seen, (gpointer) s);
  }
  fail_unless (gpushare_error_code_to_string (G_MAXINT) != NULL);
  g_hash_table_remove_all (seen);

  for (i = 0; i < 4; i++) {
    const gchar *s = gpushare_mem_type_to_string (1u << i);

    fail_unless (s != NULL);
    fail_if (g_hash_table_contains (seen, s));
    g_hash_table_add (seen, (gpointer) s);
  }
  fail_unless_equals_string (gpushare_mem_type_to_string (0), "unknown");
  fail_unless_equals_string (gpushare_mem_type_to_string (3), "unknown");

  g_hash_table_unref (seen);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* per-type builders                                                   */

/* msg's body, copied to a heap block of exactly its size (ASan sees any
 * read past it: a builder reads its body and nothing around it) */
#define BODY_COPY(msg, field) g_memdup2 (&(msg)->u.field, \
    sizeof ((msg)->u.field))

/* msg built by the builder of its type, from its body alone */
static gboolean
build_by_type (const GpuShareMsg * msg, guint32 n_fds, GByteArray * out)
{
  gpointer body = NULL;
  gboolean ok;

  /* fds go with SLOTS, whose builder takes a count, and LANE, whose
   * builder writes its one fd; no other builder takes a count */
  if (msg->type == GPUSHARE_MSG_LANE) {
    fail_unless_equals_int (n_fds, 1);
  } else if (msg->type != GPUSHARE_MSG_SLOTS) {
    fail_unless_equals_int (n_fds, 0);
  }
  switch (msg->type) {
    case GPUSHARE_MSG_ANNOUNCE:
      ok = gpushare_msg_build_announce (body = BODY_COPY (msg, announce), out);
      break;
    case GPUSHARE_MSG_ACCEPT:
      ok = gpushare_msg_build_accept (body = BODY_COPY (msg, accept), out);
      break;
    case GPUSHARE_MSG_SLOTS:
      ok = gpushare_msg_build_slots (body = BODY_COPY (msg, slots), n_fds, out);
      break;
    case GPUSHARE_MSG_MAPPED:
    case GPUSHARE_MSG_UNMAPPED:
      ok = gpushare_msg_build_mapped (msg->type, msg->u.mapped.epoch, out);
      break;
    case GPUSHARE_MSG_FRAME:
      ok = gpushare_msg_build_frame (body = BODY_COPY (msg, frame), out);
      break;
    case GPUSHARE_MSG_RELEASE:
      ok = gpushare_msg_build_release (body = BODY_COPY (msg, release), out);
      break;
    case GPUSHARE_MSG_CAPS:
      ok = gpushare_msg_build_caps (body = BODY_COPY (msg, caps), out);
      break;
    case GPUSHARE_MSG_EOS:
      ok = gpushare_msg_build_eos (msg->u.eos.last_sequence, out);
      break;
    case GPUSHARE_MSG_GOODBYE:
      ok = gpushare_msg_build_goodbye (body = BODY_COPY (msg, goodbye), out);
      break;
    case GPUSHARE_MSG_ERROR:
      /* the text alone, not the struct's 513 bytes */
      body = g_memdup2 (msg->u.error.text, msg->u.error.text_len);
      ok = gpushare_msg_build_error (msg->u.error.code, body,
          msg->u.error.text_len, out);
      break;
    case GPUSHARE_MSG_PING:
      ok = gpushare_msg_build_ping (out);
      break;
    case GPUSHARE_MSG_EVENT:
      /* the text alone, as the consumer keeps it */
      body = g_memdup2 (&msg->u.event, G_STRUCT_OFFSET (GpuShareEvent, text)
          + msg->u.event.text_len + 1);
      ok = gpushare_msg_build_event (body, out);
      break;
    case GPUSHARE_MSG_META:
      /* the entries alone, as the consumer keeps them, not the struct's
       * 12 KiB */
      body = g_memdup2 (&msg->u.meta, G_STRUCT_OFFSET (GpuShareMeta, data) +
          msg->u.meta.data_len);
      ok = gpushare_msg_build_meta (body, out);
      break;
    case GPUSHARE_MSG_OBSERVE:
      ok = gpushare_msg_build_observe (body = BODY_COPY (msg, observe), out);
      break;
    case GPUSHARE_MSG_STATUS:
      /* the text alone, as a producer makes it */
      body = g_memdup2 (&msg->u.status, G_STRUCT_OFFSET (GpuShareStatus,
              text) + msg->u.status.text_len + 1);
      ok = gpushare_msg_build_status (body, out);
      break;
    case GPUSHARE_MSG_NOTICE:
      ok = gpushare_msg_build_notice (body = BODY_COPY (msg, notice), out);
      break;
    case GPUSHARE_MSG_LANE:
      ok = gpushare_msg_build_lane (body = BODY_COPY (msg, lane), out);
      break;
    default:
      g_assert_not_reached ();
  }
  g_free (body);
  return ok;
}

/* Every type, every sample: the builder of the type writes the bytes the
 * raw encoder of this file writes from docs/protocol.md, which are those
 * the single builder wrote before the per-type builders existed
 * (test_raw_encoder_matches_builder, test_golden_bytes), and those
 * gpushare_msg_build () writes now.  Appended after what out holds. */
GST_START_TEST (test_type_builders_same_bytes)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  guint8 *want = g_malloc0 (GPUSHARE_HEADER_SIZE + GPUSHARE_MAX_PAYLOAD);
  guint i, variant;
  guint32 n_fds;

  for (i = 0; i < G_N_ELEMENTS (all_types); i++) {
    for (variant = 0; variant < n_variants (all_types[i]); variant++) {
      GByteArray *by_type = g_byte_array_new ();
      GByteArray *by_msg = g_byte_array_new ();
      gsize len;

      sample_msg (all_types[i], variant, msg, &n_fds);
      len = raw_payload (msg, want + HDR_SIZE);
      raw_header (want, GPUSHARE_MAGIC, GPUSHARE_VERSION_MAJOR,
          GPUSHARE_VERSION_MINOR, all_types[i], 0, len, n_fds, 0);
      g_byte_array_append (by_type, (const guint8 *) "keep", 4);
      fail_unless (build_by_type (msg, n_fds, by_type), "%s, variant %u",
          gpushare_msg_type_to_string (all_types[i]), variant);
      fail_unless (gpushare_msg_build (msg, n_fds, by_msg));
      fail_unless_equals_int (by_type->len, 4 + HDR_SIZE + len);
      fail_unless (memcmp (by_type->data, "keep", 4) == 0);
      fail_unless (memcmp (by_type->data + 4, want, HDR_SIZE + len) == 0,
          "%s, variant %u: not the documented bytes",
          gpushare_msg_type_to_string (all_types[i]), variant);
      fail_unless_equals_int (by_msg->len, HDR_SIZE + len);
      fail_unless (memcmp (by_msg->data, want, HDR_SIZE + len) == 0);
      g_byte_array_unref (by_type);
      g_byte_array_unref (by_msg);
    }
  }

  /* GOODBYE with and without its minor-3 part */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_GOODBYE;
  msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  for (i = 0; i < 3; i++) {
    GByteArray *by_type = g_byte_array_new ();
    GByteArray *by_msg = g_byte_array_new ();

    msg->u.goodbye.flags = i == 1 ? GPUSHARE_GOODBYE_FLAG_HELD : 0;
    msg->u.goodbye.last_sequence = i == 2 ? 77 : 0;
    fail_unless (build_by_type (msg, 0, by_type));
    fail_unless (gpushare_msg_build (msg, 0, by_msg));
    fail_unless_equals_int (by_type->len, HDR_SIZE + (i == 0 ?
            GOODBYE_FIXED : GOODBYE_HELD_FIXED));
    fail_unless (by_type->len == by_msg->len
        && memcmp (by_type->data, by_msg->data, by_msg->len) == 0);
    g_byte_array_unref (by_type);
    g_byte_array_unref (by_msg);
  }

  g_free (want);
  g_free (msg);
}

GST_END_TEST;

/* What a builder refuses, it refuses whole: out keeps its bytes. */
static void
refuse_by_type (const GpuShareMsg * msg, guint32 n_fds)
{
  GByteArray *out = g_byte_array_new ();

  g_byte_array_append (out, (const guint8 *) "keep", 4);
  fail_if (build_by_type (msg, n_fds, out), "%s built",
      gpushare_msg_type_to_string (msg->type));
  fail_if (gpushare_msg_build (msg, n_fds, out));
  fail_unless_equals_int (out->len, 4);
  fail_unless (memcmp (out->data, "keep", 4) == 0);
  g_byte_array_unref (out);
}

/* Each builder runs the checks of its type, as the parser does. */
GST_START_TEST (test_type_builders_refuse)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;

  sample_msg (GPUSHARE_MSG_ANNOUNCE, 1, msg, &n_fds);
  msg->u.announce.name_len = GPUSHARE_MAX_NAME_LEN + 1;
  refuse_by_type (msg, n_fds);
  sample_msg (GPUSHARE_MSG_ANNOUNCE, 1, msg, &n_fds);
  msg->u.announce.schema_major = GPUSHARE_VERSION_MAJOR + 1;
  refuse_by_type (msg, n_fds);
  sample_msg (GPUSHARE_MSG_ANNOUNCE, 1, msg, &n_fds);
  msg->u.announce.layout.caps_len = 0;
  refuse_by_type (msg, n_fds);
  sample_msg (GPUSHARE_MSG_ANNOUNCE, 2, msg, &n_fds);
  msg->u.announce.device.sync_modes = 0;
  refuse_by_type (msg, n_fds);

  sample_msg (GPUSHARE_MSG_ACCEPT, 1, msg, &n_fds);
  msg->u.accept.mem_type = GPUSHARE_MEM_SYSTEM | GPUSHARE_MEM_CUDA_VMM;
  refuse_by_type (msg, n_fds);
  sample_msg (GPUSHARE_MSG_ACCEPT, 2, msg, &n_fds);
  msg->u.accept.sync_mode = 0;
  refuse_by_type (msg, n_fds);
  sample_msg (GPUSHARE_MSG_ACCEPT, 1, msg, &n_fds);
  msg->u.accept.reason_len = GPUSHARE_MAX_REASON_LEN + 1;
  refuse_by_type (msg, n_fds);

  sample_msg (GPUSHARE_MSG_SLOTS, 1, msg, &n_fds);
  refuse_by_type (msg, n_fds + 1);
  fail_unless (n_fds > 0);
  refuse_by_type (msg, n_fds - 1);
  refuse_by_type (msg, GPUSHARE_MAX_FDS + 1);
  msg->u.slots.n_slots = 0;
  refuse_by_type (msg, n_fds);

  sample_msg (GPUSHARE_MSG_CAPS, 1, msg, &n_fds);
  msg->u.caps.layout.n_slots = GPUSHARE_MAX_SLOTS + 1;
  refuse_by_type (msg, n_fds);

  sample_msg (GPUSHARE_MSG_LANE, 1, msg, &n_fds);
  msg->u.lane.n_entries = 24;
  msg->u.lane.size = gpushare_lane_size (24);
  refuse_by_type (msg, n_fds);
  sample_msg (GPUSHARE_MSG_LANE, 1, msg, &n_fds);
  msg->u.lane.entry_size = 64;
  refuse_by_type (msg, n_fds);
  sample_msg (GPUSHARE_MSG_LANE, 1, msg, &n_fds);
  msg->u.lane.size++;
  refuse_by_type (msg, n_fds);

  sample_msg (GPUSHARE_MSG_ERROR, 1, msg, &n_fds);
  msg->u.error.text_len = GPUSHARE_MAX_TEXT_LEN + 1;
  refuse_by_type (msg, n_fds);
  msg->u.error.text_len = 2;
  memcpy (msg->u.error.text, "\xc3", 1);
  refuse_by_type (msg, n_fds);
  memcpy (msg->u.error.text, "a\0", 2);
  refuse_by_type (msg, n_fds);

  /* MAPPED's builder makes MAPPED and UNMAPPED, nothing else */
  g_byte_array_append (out, (const guint8 *) "keep", 4);
  fail_if (gpushare_msg_build_mapped (GPUSHARE_MSG_FRAME, 1, out));
  fail_if (gpushare_msg_build_mapped (0, 1, out));
  fail_if (gpushare_msg_build_mapped (FIRST_UNKNOWN_TYPE, 1, out));
  fail_unless_equals_int (out->len, 4);
  /* an empty ERROR text needs no text at all */
  fail_unless (gpushare_msg_build_error (GPUSHARE_ERR_SHUTDOWN, NULL, 0, out));
  fail_unless_equals_int (out->len, 4 + HDR_SIZE + ERROR_FIXED);

  g_byte_array_unref (out);
  g_free (msg);
}

GST_END_TEST;

/* The FRAME of a producer, from a GpuShareFrame alone, byte for byte as
 * docs/protocol.md gives it; no GpuShareMsg anywhere, in the test nor, as
 * the stack it takes shows, in the builder. */
static void
build_frame_on_stack (gpointer data)
{
  gpointer *args = data;

  fail_unless (gpushare_msg_build_frame (args[0], args[1]));
}

GST_START_TEST (test_frame_from_body)
{
  GpuShareFrame *f = g_new0 (GpuShareFrame, 1);
  GByteArray *out = g_byte_array_sized_new (1024);
  guint8 want[HDR_SIZE + FRAME_FIXED];
  gpointer args[2] = { f, out };
  gsize depth;

  f->epoch = 3;
  f->slot = 5;
  f->generation = 0x01020304;
  f->sequence = G_GUINT64_CONSTANT (0x1122334455667788);
  f->pts = 1000;
  f->dts = G_MAXUINT64;
  f->duration = 40;
  f->offset = 6;
  f->offset_end = 7;
  f->buffer_flags = 0x4040;
  f->flags = GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME;

  raw_header (want, GPUSHARE_MAGIC, GPUSHARE_VERSION_MAJOR,
      GPUSHARE_VERSION_MINOR, GPUSHARE_MSG_FRAME, 0, FRAME_FIXED, 0, 0);
  put64 (want, HDR_SIZE + 0, 3);
  put32 (want, HDR_SIZE + 8, 5);
  put32 (want, HDR_SIZE + 12, 0x01020304);
  put64 (want, HDR_SIZE + 16, G_GUINT64_CONSTANT (0x1122334455667788));
  put64 (want, HDR_SIZE + 24, 1000);
  put64 (want, HDR_SIZE + 32, G_MAXUINT64);
  put64 (want, HDR_SIZE + 40, 40);
  put64 (want, HDR_SIZE + 48, 6);
  put64 (want, HDR_SIZE + 56, 7);
  put32 (want, HDR_SIZE + 64, 0x4040);
  put32 (want, HDR_SIZE + 68, GPUSHARE_FRAME_FLAG_ABSOLUTE_TIME);

  fail_unless (gpushare_msg_build_frame (f, out));
  fail_unless_equals_int (out->len, sizeof (want));
  fail_unless (memcmp (out->data, want, sizeof (want)) == 0);

  /* the array has room: nothing but the builder on that stack */
  if (stack_depth_sees (sizeof (GpuShareMsg))) {
    g_byte_array_set_size (out, 0);
    depth = stack_depth (build_frame_on_stack, args);
    fail_unless (depth < sizeof (GpuShareMsg) / 8, "encoding a FRAME took "
        "%" G_GSIZE_FORMAT " bytes of stack", depth);
    fail_unless_equals_int (out->len, sizeof (want));
    fail_unless (memcmp (out->data, want, sizeof (want)) == 0);
  }

  g_byte_array_unref (out);
  g_free (f);
}

GST_END_TEST;

/* Minor 6 added FRAME's share: on the wire only when it is not 0, so that
 * a lossless producer's FRAME is minor 5's 72 bytes, and read only when
 * the payload holds its 8 bytes whole, so that minor 5's FRAME (72 bytes,
 * or a shorter tail of anything) has no share.  Any share parses: past
 * the ring's size it limits nothing. */
GST_START_TEST (test_frame_share)
{
  static const guint32 shares[] = { 1, 2, 3, GPUSHARE_MAX_SLOTS,
    GPUSHARE_MAX_SLOTS + 1, 0x80000000, G_MAXUINT32,
  };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *plain = g_byte_array_new ();
  GByteArray *out = g_byte_array_new ();
  guint8 *raw = g_malloc (GPUSHARE_MAX_PAYLOAD);
  guint8 want[HDR_SIZE + FRAME_FIXED];
  guint32 n_fds;
  gsize len;
  guint i, t;

  /* no share: minor 5's 72 bytes, header and all */
  sample_msg (GPUSHARE_MSG_FRAME, 0, msg, &n_fds);
  msg->u.frame.share = 0;
  round_trip (msg, 0);
  fail_unless (gpushare_msg_build (msg, 0, plain));
  raw_header (want, GPUSHARE_MAGIC, GPUSHARE_VERSION_MAJOR,
      GPUSHARE_VERSION_MINOR, GPUSHARE_MSG_FRAME, 0, FRAME_FIXED, 0, 0);
  fail_unless_equals_int (raw_fixed (msg, want + HDR_SIZE), FRAME_FIXED);
  fail_unless_equals_int (plain->len, sizeof (want));
  fail_unless (memcmp (plain->data, want, sizeof (want)) == 0);
  g_byte_array_set_size (out, 0);
  fail_unless (gpushare_msg_build_frame (&msg->u.frame, out));
  fail_unless_equals_int (out->len, sizeof (want));
  fail_unless (memcmp (out->data, want, sizeof (want)) == 0);

  /* a share: 80 bytes, minor 5's 72 unchanged, then the share and a
   * reserved 0; from the per-type builder too */
  for (i = 0; i < G_N_ELEMENTS (shares); i++) {
    msg->u.frame.share = shares[i];
    round_trip (msg, 0);
    for (t = 0; t < 2; t++) {
      g_byte_array_set_size (out, 0);
      if (t == 0)
        fail_unless (gpushare_msg_build (msg, 0, out));
      else
        fail_unless (gpushare_msg_build_frame (&msg->u.frame, out));
      fail_unless_equals_int (out->len, HDR_SIZE + FRAME_SHARE_FIXED);
      fail_unless_equals_int (get32 (out->data, 12), FRAME_SHARE_FIXED);
      fail_unless (memcmp (out->data, want, 12) == 0);
      fail_unless (memcmp (out->data + 16, want + 16,
              HDR_SIZE - 16 + FRAME_FIXED) == 0);
      fail_unless_equals_uint64 (get32 (out->data, HDR_SIZE + FRAME_SHARE),
          shares[i]);
      fail_unless_equals_uint64 (get32 (out->data, HDR_SIZE + FRAME_RESERVED),
          0);
    }
  }

  /* minor 5's 72 bytes parse without a share, into a message that had
   * one */
  msg->u.frame.share = 0;
  fail_unless_equals_int (raw_payload (msg, raw), FRAME_FIXED);
  memset (back, 0xa5, sizeof (*back));
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_FRAME, 0, raw,
          FRAME_FIXED, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->u.frame.share, 0);
  assert_msg_equal (back, msg);
  /* shorter than that: truncated */
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_FRAME, 0, raw,
          FRAME_FIXED - 1, back), GPUSHARE_PARSE_TRUNCATED);

  /* 73 to 79 bytes: the share is not whole, and the tail is ignored,
   * whether it is a cut share of 3 or any other bytes */
  for (t = 0; t < 2; t++) {
    msg->u.frame.share = 3;
    fail_unless_equals_int (raw_payload (msg, raw), FRAME_SHARE_FIXED);
    if (t == 1)
      memset (raw + FRAME_FIXED, 0xa5, FRAME_SHARE_FIXED - FRAME_FIXED);
    msg->u.frame.share = 0;
    for (len = FRAME_FIXED + 1; len < FRAME_SHARE_FIXED; len++) {
      memset (back, 0xa5, sizeof (*back));
      fail_unless_equals_int (parse_payload (GPUSHARE_MSG_FRAME, 0, raw, len,
              back), GPUSHARE_PARSE_OK);
      fail_unless_equals_uint64 (back->u.frame.share, 0);
      assert_msg_equal (back, msg);
    }
  }

  /* all 80: the share, whatever the reserved word and whatever follows */
  msg->u.frame.share = 3;
  raw_payload (msg, raw);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_FRAME, 0, raw,
          FRAME_SHARE_FIXED, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->u.frame.share, 3);
  assert_msg_equal (back, msg);
  put32 (raw, FRAME_RESERVED, G_MAXUINT32);
  memset (raw + FRAME_SHARE_FIXED, 0x5a, 8);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_FRAME, 0, raw,
          FRAME_SHARE_FIXED + 8, back), GPUSHARE_PARSE_OK);
  assert_msg_equal (back, msg);

  /* any share parses, the largest too; 0 in the 80 bytes is no share */
  for (i = 0; i < G_N_ELEMENTS (shares); i++) {
    msg->u.frame.share = shares[i];
    put32 (raw, FRAME_SHARE, shares[i]);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_FRAME, 0, raw,
            FRAME_SHARE_FIXED, back), GPUSHARE_PARSE_OK);
    assert_msg_equal (back, msg);
  }
  put32 (raw, FRAME_SHARE, 0);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_FRAME, 0, raw,
          FRAME_SHARE_FIXED, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->u.frame.share, 0);

  /* every byte of a leaky producer's FRAME at each boundary value */
  sample_msg (GPUSHARE_MSG_FRAME, 1, msg, &n_fds);
  msg->u.frame.share = 3;
  sweep_bytes (msg, 0, back, out);

  g_free (raw);
  g_byte_array_unref (out);
  g_byte_array_unref (plain);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* META: the chain of entries fills data_len exactly, with 1 to
 * GPUSHARE_MAX_META_ENTRIES entries whose reserved field is 0; anything
 * else is MALFORMED, a payload shorter than data_len TRUNCATED.  The
 * builder refuses what the parser would. */
static gsize
meta_payload (guint8 * b, guint64 seq, guint32 n, guint32 data_len)
{
  put64 (b, 0, seq);
  put32 (b, 8, n);
  put32 (b, 12, data_len);
  return META_FIXED + data_len;
}

static void
meta_entry (guint8 * e, guint16 kind, guint16 reserved, guint32 len)
{
  put16 (e, 0, kind);
  put16 (e, 2, reserved);
  put32 (e, 4, len);
}

GST_START_TEST (test_meta_chain)
{
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *b = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  GByteArray *out = g_byte_array_new ();
  guint8 *d = b + META_FIXED;
  gsize len;
  guint i;

  /* two entries, 3 and 0 bytes of body */
  meta_entry (d, 1, 0, 3);
  meta_entry (d + 11, 9, 0, 0);
  len = meta_payload (b, 42, 2, 19);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len, back),
      GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->u.meta.sequence, 42);
  fail_unless (gpushare_msg_build_meta (&back->u.meta, out));
  fail_unless_equals_int (out->len, GPUSHARE_HEADER_SIZE + len);
  fail_unless (memcmp (out->data + GPUSHARE_HEADER_SIZE, b, len) == 0);
  /* fds never come with it */
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 1, b, len, back),
      GPUSHARE_PARSE_BAD_FD_COUNT);
  /* the payload shorter than data_len */
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len - 1,
          back), GPUSHARE_PARSE_TRUNCATED);
  /* more entries than the chain holds, fewer, none */
  for (i = 0; i < 3; i++) {
    static const guint32 counts[] = { 3, 1, 0 };

    len = meta_payload (b, 42, counts[i], 19);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len,
            back), GPUSHARE_PARSE_MALFORMED);
    fail_if (gpushare_msg_build_meta (&back->u.meta, out));
  }
  /* an entry longer than what is left; a reserved field set */
  meta_entry (d + 11, 9, 0, 1);
  len = meta_payload (b, 42, 2, 19);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len, back),
      GPUSHARE_PARSE_MALFORMED);
  meta_entry (d + 11, 9, 1, 0);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len, back),
      GPUSHARE_PARSE_MALFORMED);
  meta_entry (d + 11, 9, 0, G_MAXUINT32);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len, back),
      GPUSHARE_PARSE_MALFORMED);
  /* bytes after the last entry */
  meta_entry (d + 11, 9, 0, 0);
  len = meta_payload (b, 42, 2, 20);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len, back),
      GPUSHARE_PARSE_MALFORMED);
  /* data_len over the cap, whatever the payload */
  len = meta_payload (b, 42, 2, GPUSHARE_MAX_META_LEN + 1);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b,
          GPUSHARE_MAX_PAYLOAD, back), GPUSHARE_PARSE_MALFORMED);
  /* the most entries, and one more */
  for (i = 0; i <= GPUSHARE_MAX_META_ENTRIES; i++)
    meta_entry (d + i * GPUSHARE_META_ENTRY_HEADER, 5, 0, 0);
  len = meta_payload (b, 1, GPUSHARE_MAX_META_ENTRIES,
      GPUSHARE_MAX_META_ENTRIES * GPUSHARE_META_ENTRY_HEADER);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len, back),
      GPUSHARE_PARSE_OK);
  len = meta_payload (b, 1, GPUSHARE_MAX_META_ENTRIES + 1,
      (GPUSHARE_MAX_META_ENTRIES + 1) * GPUSHARE_META_ENTRY_HEADER);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_META, 0, b, len, back),
      GPUSHARE_PARSE_MALFORMED);

  g_byte_array_unref (out);
  g_free (b);
  g_free (back);
}

GST_END_TEST;

/* EVENT: a text of 1 to GPUSHARE_MAX_EVENT_LEN bytes of UTF-8 without
 * NUL, any kind (the consumer skips the kinds it does not know) */
GST_START_TEST (test_event_text)
{
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *b = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  GByteArray *out = g_byte_array_new ();
  static const struct
  {
    const gchar *text;
    guint32 len;
    GpuShareParseResult want;
  } cases[] = {
    {"taglist, title=(string)a", 24, GPUSHARE_PARSE_OK},
    {"", 0, GPUSHARE_PARSE_MALFORMED},
    {"a\0b", 3, GPUSHARE_PARSE_MALFORMED},
    {"\xff\xfe", 2, GPUSHARE_PARSE_MALFORMED},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    put32 (b, 0, 0x77);
    put32 (b, 4, cases[i].len);
    memcpy (b + EVENT_FIXED, cases[i].text, cases[i].len);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_EVENT, 0, b,
            EVENT_FIXED + cases[i].len, back), cases[i].want);
    if (cases[i].want == GPUSHARE_PARSE_OK) {
      fail_unless_equals_int (back->u.event.kind, 0x77);
      fail_unless (gpushare_msg_build_event (&back->u.event, out));
    }
  }
  /* over the cap, and cut short */
  put32 (b, 4, GPUSHARE_MAX_EVENT_LEN + 1);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_EVENT, 0, b,
          GPUSHARE_MAX_PAYLOAD, back), GPUSHARE_PARSE_MALFORMED);
  put32 (b, 4, 10);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_EVENT, 0, b,
          EVENT_FIXED + 9, back), GPUSHARE_PARSE_TRUNCATED);
  g_byte_array_unref (out);
  g_free (b);
  g_free (back);
}

GST_END_TEST;

/* OBSERVE: the interval in its range, the major version, the name; STATUS:
 * 1 .. GPUSHARE_MAX_STATUS_LEN bytes of UTF-8 without NUL */
GST_START_TEST (test_observe_status)
{
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  guint8 *b = g_malloc0 (GPUSHARE_MAX_PAYLOAD);
  static const struct
  {
    guint16 major;
    guint32 interval;
    GpuShareParseResult want;
  } observe[] = {
    {1, GPUSHARE_MIN_OBSERVE_INTERVAL, GPUSHARE_PARSE_OK},
    {1, GPUSHARE_MAX_OBSERVE_INTERVAL, GPUSHARE_PARSE_OK},
    {1, GPUSHARE_MIN_OBSERVE_INTERVAL - 1, GPUSHARE_PARSE_MALFORMED},
    {1, GPUSHARE_MAX_OBSERVE_INTERVAL + 1, GPUSHARE_PARSE_MALFORMED},
    {1, 0, GPUSHARE_PARSE_MALFORMED},
    {2, 1000, GPUSHARE_PARSE_BAD_VERSION},
  };
  static const struct
  {
    const gchar *text;
    guint32 len;
    GpuShareParseResult want;
  } status[] = {
    {"application/x-gpushare-status", 29, GPUSHARE_PARSE_OK},
    {"", 0, GPUSHARE_PARSE_MALFORMED},
    {"a\0b", 3, GPUSHARE_PARSE_MALFORMED},
    {"\xff\xfe", 2, GPUSHARE_PARSE_MALFORMED},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (observe); i++) {
    put16 (b, 0, observe[i].major);
    put16 (b, 2, 5);
    put32 (b, 4, observe[i].interval);
    put32 (b, 8, 42);
    put32 (b, 12, 3);
    memcpy (b + OBSERVE_FIXED, "obs", 3);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_OBSERVE, 0, b,
            OBSERVE_FIXED + 3, back), observe[i].want);
    if (observe[i].want == GPUSHARE_PARSE_OK) {
      fail_unless_equals_int (back->u.observe.interval_ms, observe[i].interval);
      fail_unless_equals_int (back->u.observe.pid, 42);
      fail_unless_equals_string (back->u.observe.name, "obs");
    }
  }
  /* a name over the cap, not UTF-8, cut short */
  put16 (b, 0, 1);
  put32 (b, 4, 1000);
  put32 (b, 12, GPUSHARE_MAX_NAME_LEN + 1);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_OBSERVE, 0, b,
          OBSERVE_FIXED + GPUSHARE_MAX_NAME_LEN + 1, back),
      GPUSHARE_PARSE_MALFORMED);
  put32 (b, 12, 2);
  memcpy (b + OBSERVE_FIXED, "\xff\xfe", 2);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_OBSERVE, 0, b,
          OBSERVE_FIXED + 2, back), GPUSHARE_PARSE_MALFORMED);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_OBSERVE, 0, b,
          OBSERVE_FIXED + 1, back), GPUSHARE_PARSE_TRUNCATED);

  for (i = 0; i < G_N_ELEMENTS (status); i++) {
    put32 (b, 0, 0);
    put32 (b, 4, status[i].len);
    memcpy (b + STATUS_FIXED, status[i].text, status[i].len);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_STATUS, 0, b,
            STATUS_FIXED + status[i].len, back), status[i].want);
  }
  put32 (b, 4, GPUSHARE_MAX_STATUS_LEN + 1);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_STATUS, 0, b,
          GPUSHARE_MAX_PAYLOAD, back), GPUSHARE_PARSE_MALFORMED);
  put32 (b, 4, 10);
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_STATUS, 0, b,
          STATUS_FIXED + 9, back), GPUSHARE_PARSE_TRUNCATED);
  g_free (b);
  g_free (back);
}

GST_END_TEST;

/* NOTICE (minor 6), producer -> consumer: 32 bytes, no fds, any code (a
 * consumer skips the codes it does not know), any skipped and sequence */
GST_START_TEST (test_notice)
{
  static const guint32 codes[] = { 0, GPUSHARE_NOTICE_STALLED, 2,
    G_MAXUINT32,
  };
  static const gsize extra[] = { 1, 8, 32, 100 };
  static const guint32 counts[] = { 1, 2, GPUSHARE_MAX_FDS };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 *raw = g_malloc (GPUSHARE_MAX_PAYLOAD);
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint32 n_fds;
  gsize len;
  guint i;

  fail_unless_equals_int (GPUSHARE_MSG_NOTICE, 17);
  fail_unless_equals_string (gpushare_msg_type_to_string (17), "NOTICE");

  /* each field read from its own offset */
  put32 (raw, 0, 0x11111111);
  put32 (raw, NOTICE_SHARE, 7);
  put32 (raw, NOTICE_SLOTS_HELD, 6);
  put32 (raw, NOTICE_N_CONSUMERS, 5);
  put64 (raw, 16, G_GUINT64_CONSTANT (0x0102030405060708));
  put64 (raw, 24, G_GUINT64_CONSTANT (0x1112131415161718));
  memset (back, 0xa5, sizeof (*back));
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_NOTICE, 0, raw,
          NOTICE_FIXED, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_int (back->type, GPUSHARE_MSG_NOTICE);
  fail_unless_equals_uint64 (back->u.notice.code, 0x11111111);
  fail_unless_equals_uint64 (back->u.notice.share, 7);
  fail_unless_equals_uint64 (back->u.notice.slots_held, 6);
  fail_unless_equals_uint64 (back->u.notice.n_consumers, 5);
  fail_unless_equals_uint64 (back->u.notice.skipped,
      G_GUINT64_CONSTANT (0x0102030405060708));
  fail_unless_equals_uint64 (back->u.notice.sequence,
      G_GUINT64_CONSTANT (0x1112131415161718));
  /* and built back to the same bytes */
  fail_unless (gpushare_msg_build_notice (&back->u.notice, out));
  fail_unless_equals_int (out->len, HDR_SIZE + NOTICE_FIXED);
  fail_unless_equals_int (get32 (out->data, 8), GPUSHARE_MSG_NOTICE);
  fail_unless_equals_int (get32 (out->data, 12), NOTICE_FIXED);
  fail_unless (memcmp (out->data + HDR_SIZE, raw, NOTICE_FIXED) == 0);

  /* any code, the extremes of skipped and sequence */
  for (i = 0; i < G_N_ELEMENTS (codes); i++) {
    sample_msg (GPUSHARE_MSG_NOTICE, 1, msg, &n_fds);
    msg->u.notice.code = codes[i];
    msg->u.notice.skipped = i % 2 ? G_MAXUINT64 : 0;
    msg->u.notice.sequence = i % 2 ? 0 : G_MAXUINT64;
    fail_unless_equals_int (parse_raw_msg (msg, 0, back), GPUSHARE_PARSE_OK);
    assert_msg_equal (back, msg);
    round_trip (msg, 0);
  }

  /* shorter than 32 bytes: truncated, out of range values or not */
  for (i = 0; i < 2; i++) {
    sample_msg (GPUSHARE_MSG_NOTICE, 0, msg, &n_fds);
    if (i == 1)
      msg->u.notice.share = G_MAXUINT32;
    fail_unless_equals_int (raw_payload (msg, raw), NOTICE_FIXED);
    for (len = 0; len < NOTICE_FIXED; len++)
      fail_unless_equals_int (parse_payload (GPUSHARE_MSG_NOTICE, 0, raw,
              len, back), GPUSHARE_PARSE_TRUNCATED);
  }
  /* longer: a newer minor's, ignored */
  sample_msg (GPUSHARE_MSG_NOTICE, 0, msg, &n_fds);
  raw_payload (msg, raw);
  memset (raw + NOTICE_FIXED, 0xff, GPUSHARE_MAX_PAYLOAD - NOTICE_FIXED);
  for (i = 0; i <= G_N_ELEMENTS (extra); i++) {
    len = NOTICE_FIXED + (i < G_N_ELEMENTS (extra) ? extra[i] :
        GPUSHARE_MAX_PAYLOAD - NOTICE_FIXED);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_NOTICE, 0, raw, len,
            back), GPUSHARE_PARSE_OK);
    assert_msg_equal (back, msg);
  }

  /* fds: refused at the header, at the payload and by the builder */
  g_byte_array_set_size (out, 0);
  for (i = 0; i < G_N_ELEMENTS (counts); i++) {
    valid_header (b, GPUSHARE_MSG_NOTICE, NOTICE_FIXED, counts[i]);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        GPUSHARE_PARSE_BAD_FD_COUNT);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_NOTICE, counts[i],
            raw, NOTICE_FIXED, back), GPUSHARE_PARSE_BAD_FD_COUNT);
    fail_if (gpushare_msg_build (msg, counts[i], out));
  }
  fail_unless_equals_int (out->len, 0);
  valid_header (b, GPUSHARE_MSG_NOTICE, NOTICE_FIXED, 0);
  fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
      GPUSHARE_PARSE_OK);

  g_free (raw);
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* NOTICE's bounds: share and slots_held at most GPUSHARE_MAX_SLOTS,
 * n_consumers at most GPUSHARE_MAX_HOLDERS_WIRE; over any of them is
 * MALFORMED */
typedef struct
{
  const gchar *what;
  guint32 share;
  guint32 slots_held;
  guint32 n_consumers;
  GpuShareParseResult res;
} NoticeCase;

#define SLOTS GPUSHARE_MAX_SLOTS
#define HOLDERS GPUSHARE_MAX_HOLDERS_WIRE
#define OK GPUSHARE_PARSE_OK
#define BAD GPUSHARE_PARSE_MALFORMED

static const NoticeCase notice_cases[] = {
  {"share 0", 0, 1, 2, OK},
  {"share 1", 1, 1, 2, OK},
  {"share max", SLOTS, 1, 2, OK},
  {"share max+1", SLOTS + 1, 1, 2, BAD},
  {"share top bit", 0x80000000, 1, 2, BAD},
  {"share uint32", G_MAXUINT32, 1, 2, BAD},
  {"slots_held 0", 1, 0, 2, OK},
  {"slots_held max", 1, SLOTS, 2, OK},
  {"slots_held max+1", 1, SLOTS + 1, 2, BAD},
  {"slots_held top bit", 1, 0x80000000, 2, BAD},
  {"slots_held uint32", 1, G_MAXUINT32, 2, BAD},
  {"n_consumers 0", 1, 1, 0, OK},
  {"n_consumers max", 1, 1, HOLDERS, OK},
  {"n_consumers max+1", 1, 1, HOLDERS + 1, BAD},
  {"n_consumers top bit", 1, 1, 0x80000000, BAD},
  {"n_consumers uint32", 1, 1, G_MAXUINT32, BAD},
  /* the codec does not judge one against another: the ring does */
  {"held over share", 1, SLOTS, 2, OK},
  {"all 0", 0, 0, 0, OK},
  {"all max", SLOTS, SLOTS, HOLDERS, OK},
  {"all max+1", SLOTS + 1, SLOTS + 1, HOLDERS + 1, BAD},
  {"all uint32", G_MAXUINT32, G_MAXUINT32, G_MAXUINT32, BAD},
  {"only share over", SLOTS + 1, SLOTS, HOLDERS, BAD},
  {"only slots_held over", SLOTS, SLOTS + 1, HOLDERS, BAD},
  {"only n_consumers over", SLOTS, SLOTS, HOLDERS + 1, BAD},
};

#undef SLOTS
#undef HOLDERS
#undef OK
#undef BAD

GST_START_TEST (test_notice_bounds)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (notice_cases); i++) {
    const NoticeCase *c = &notice_cases[i];
    GpuShareParseResult res;

    sample_msg (GPUSHARE_MSG_NOTICE, 1, msg, &n_fds);
    msg->u.notice.share = c->share;
    msg->u.notice.slots_held = c->slots_held;
    msg->u.notice.n_consumers = c->n_consumers;
    res = parse_raw_msg (msg, 0, back);
    fail_unless (res == c->res, "%s: got %s", c->what,
        gpushare_parse_result_to_string (res));
    g_byte_array_set_size (out, 0);
    if (c->res == GPUSHARE_PARSE_OK) {
      assert_msg_equal (back, msg);
      fail_unless (gpushare_msg_build (msg, 0, out), "%s: not built", c->what);
      round_trip (msg, 0);
    } else {
      /* what the parser refuses, the builder does not write */
      fail_if (gpushare_msg_build (msg, 0, out), "%s: built", c->what);
      fail_if (gpushare_msg_build_notice (&msg->u.notice, out),
          "%s: built by the NOTICE builder", c->what);
      fail_unless_equals_int (out->len, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* LANE and the lane's entries (minor 7)                               */

/* bytes of a lane of n entries, from docs/protocol.md rather than the
 * codec: its header, then the entries, then as many releases */
#define LANE_BYTES(n) (LANE_HEADER + (guint64) (n) * (ENTRY_SIZE + 32))

/* LANE, producer -> consumer: 16 bytes and exactly one fd, the lane's
 * memfd; each field read from its own offset.  And the ACCEPT flag that
 * asks for it, carried like the other bits of ACCEPT's flags. */
/* the sample lane without its meta region, as minor 7 made it */
static void
lane_without_metas (GpuShareLaneInfo * l)
{
  l->size -= l->meta_size;
  l->meta_size = 0;
}

GST_START_TEST (test_lane)
{
  static const gsize extra[] = { 1, 8, 16, 100 };
  static const guint32 counts[] = { 0, 1, 2, GPUSHARE_MAX_FDS - 1,
    GPUSHARE_MAX_FDS, GPUSHARE_MAX_FDS + 1, G_MAXUINT32,
  };
  static const guint32 accept_flags[] = { GPUSHARE_ACCEPT_FLAG_LANE,
    GPUSHARE_ACCEPT_FLAG_LANE | 0x80000000, 0xfffffffe, G_MAXUINT32,
  };
  const GpuShareMsgInfo *info = gpushare_msg_info (GPUSHARE_MSG_LANE);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 *raw = g_malloc (GPUSHARE_MAX_PAYLOAD);
  guint8 b[HDR_SIZE];
  GpuShareHeader hdr;
  guint32 n_fds, n;
  gsize len;
  guint i;

  fail_unless_equals_int (GPUSHARE_MSG_LANE, 18);
  fail_unless_equals_string (gpushare_msg_type_to_string (18), "LANE");
  fail_unless (info != NULL);
  fail_unless_equals_int (info->direction, GPUSHARE_DIR_PRODUCER_TO_CONSUMER);
  fail_unless_equals_int (info->first_minor, 7);
  fail_unless_equals_int (info->fixed_size, LANE_FIXED);
  fail_unless (info->carries_fds);

  /* each field read from its own offset */
  put32 (raw, LANE_N_ENTRIES, 256);
  put32 (raw, LANE_ENTRY_SIZE, 128);
  put64 (raw, LANE_SIZE, LANE_BYTES (256));
  memset (back, 0xa5, sizeof (*back));
  fail_unless_equals_int (parse_payload (GPUSHARE_MSG_LANE, 1, raw,
          LANE_FIXED, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_int (back->type, GPUSHARE_MSG_LANE);
  fail_unless_equals_uint64 (back->u.lane.n_entries, 256);
  fail_unless_equals_uint64 (back->u.lane.entry_size, 128);
  fail_unless_equals_uint64 (back->u.lane.size, 41088);
  /* and built back to the same bytes, its one fd in the header */
  fail_unless (gpushare_msg_build_lane (&back->u.lane, out));
  fail_unless_equals_int (out->len, HDR_SIZE + LANE_FIXED);
  fail_unless_equals_int (get32 (out->data, 8), GPUSHARE_MSG_LANE);
  fail_unless_equals_int (get32 (out->data, 12), LANE_FIXED);
  fail_unless_equals_int (get32 (out->data, 16), 1);
  fail_unless (memcmp (out->data + HDR_SIZE, raw, LANE_FIXED) == 0);

  /* every size there is: each power of two from 16 to 1024 entries */
  for (n = 16; n <= 1024; n *= 2) {
    sample_msg (GPUSHARE_MSG_LANE, 1, msg, &n_fds);
    msg->u.lane.n_entries = n;
    msg->u.lane.size = LANE_BYTES (n);
    fail_unless_equals_uint64 (gpushare_lane_size (n), LANE_BYTES (n));
    fail_unless_equals_int (parse_raw_msg (msg, 1, back), GPUSHARE_PARSE_OK);
    assert_msg_equal (back, msg);
    round_trip (msg, 1);
  }

  /* shorter than 16 bytes: truncated, out of range values or not */
  for (i = 0; i < 2; i++) {
    sample_msg (GPUSHARE_MSG_LANE, 0, msg, &n_fds);
    lane_without_metas (&msg->u.lane);
    if (i == 1)
      msg->u.lane.n_entries = 17;
    fail_unless_equals_int (raw_payload (msg, raw), LANE_FIXED);
    for (len = 0; len < LANE_FIXED; len++)
      fail_unless_equals_int (parse_payload (GPUSHARE_MSG_LANE, 1, raw, len,
              back), GPUSHARE_PARSE_TRUNCATED);
  }
  /* minor 9's meta region: its size after the 16 bytes, the memfd that
   * much larger; 0, or 64 KiB to 16 MiB in steps of 64 bytes */
  {
    static const guint32 sizes[] = { 0, 64 * 1024, 1024 * 1024,
      16 * 1024 * 1024, 64 * 1024 + 64
    };
    static const guint32 bad[] = { 64, 64 * 1024 - 64, 64 * 1024 + 8,
      16 * 1024 * 1024 + 64, G_MAXUINT32
    };

    for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
      sample_msg (GPUSHARE_MSG_LANE, 0, msg, &n_fds);
      lane_without_metas (&msg->u.lane);
      msg->u.lane.meta_size = sizes[i];
      msg->u.lane.size += sizes[i];
      len = raw_payload (msg, raw);
      fail_unless_equals_int (len, sizes[i] ? LANE_METAS_FIXED : LANE_FIXED);
      fail_unless_equals_int (parse_payload (GPUSHARE_MSG_LANE, 1, raw, len,
              back), GPUSHARE_PARSE_OK);
      assert_msg_equal (back, msg);
      /* a size that leaves the region out, or counts it twice */
      msg->u.lane.size -= sizes[i] ? sizes[i] : 64 * 1024;
      fail_if (gpushare_msg_build_lane (&msg->u.lane, out));
    }
    for (i = 0; i < G_N_ELEMENTS (bad); i++) {
      sample_msg (GPUSHARE_MSG_LANE, 0, msg, &n_fds);
      lane_without_metas (&msg->u.lane);
      msg->u.lane.meta_size = bad[i];
      msg->u.lane.size += bad[i];
      fail_if (gpushare_msg_build_lane (&msg->u.lane, out));
      raw_payload (msg, raw);
      put32 (raw, 16, bad[i]);
      put32 (raw, 20, 0);
      fail_unless_equals_int (parse_payload (GPUSHARE_MSG_LANE, 1, raw,
              LANE_METAS_FIXED, back), GPUSHARE_PARSE_MALFORMED);
    }
  }
  /* longer: a newer minor's, ignored */
  sample_msg (GPUSHARE_MSG_LANE, 0, msg, &n_fds);
  lane_without_metas (&msg->u.lane);
  msg->u.lane.meta_size = 64 * 1024;
  msg->u.lane.size += 64 * 1024;
  raw_payload (msg, raw);
  memset (raw + LANE_METAS_FIXED, 0xff,
      GPUSHARE_MAX_PAYLOAD - LANE_METAS_FIXED);
  for (i = 0; i <= G_N_ELEMENTS (extra); i++) {
    len = LANE_METAS_FIXED + (i < G_N_ELEMENTS (extra) ? extra[i] :
        GPUSHARE_MAX_PAYLOAD - LANE_METAS_FIXED);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_LANE, 1, raw, len,
            back), GPUSHARE_PARSE_OK);
    assert_msg_equal (back, msg);
  }

  /* fds: the header lets any count up to the cap through, as for SLOTS;
   * the payload's check takes exactly one */
  for (i = 0; i < G_N_ELEMENTS (counts); i++) {
    valid_header (b, GPUSHARE_MSG_LANE, LANE_FIXED, counts[i]);
    fail_unless_equals_int (parse_header_bytes (b, sizeof (b), &hdr),
        counts[i] > GPUSHARE_MAX_FDS ? GPUSHARE_PARSE_BAD_FD_COUNT :
        GPUSHARE_PARSE_OK);
    fail_unless_equals_int (parse_payload (GPUSHARE_MSG_LANE, counts[i], raw,
            LANE_METAS_FIXED, back), counts[i] == 1 ? GPUSHARE_PARSE_OK :
        GPUSHARE_PARSE_BAD_FD_COUNT);
  }

  /* ACCEPT's flags: bit 0 asks for a lane; every bit travels unchanged,
   * at offset 8 */
  for (i = 0; i < G_N_ELEMENTS (accept_flags); i++) {
    sample_msg (GPUSHARE_MSG_ACCEPT, 1, msg, &n_fds);
    msg->u.accept.flags = accept_flags[i];
    raw_payload (msg, raw);
    fail_unless_equals_uint64 (get32 (raw, ACCEPT_FLAGS), accept_flags[i]);
    fail_unless_equals_int (parse_raw_msg (msg, 0, back), GPUSHARE_PARSE_OK);
    fail_unless_equals_uint64 (back->u.accept.flags, accept_flags[i]);
    round_trip (msg, 0);
  }

  g_free (raw);
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* LANE's shape: n_entries a power of two from 16 to 1024, entry_size
 * 128, size exactly 128 + n_entries * 160, else MALFORMED; and exactly
 * one fd, else BAD_FD_COUNT, judged after the shape (but a count over
 * GPUSHARE_MAX_FDS before anything) */
typedef struct
{
  const gchar *what;
  guint32 n_entries;
  guint32 entry_size;
  guint64 size;
  guint32 n_fds;
  GpuShareParseResult res;
} LaneCase;

#define OK GPUSHARE_PARSE_OK
#define BAD GPUSHARE_PARSE_MALFORMED
#define FDS GPUSHARE_PARSE_BAD_FD_COUNT
#define ES ENTRY_SIZE
#define SZ(n) LANE_BYTES (n)

static const LaneCase lane_cases[] = {
  {"16 entries", 16, ES, SZ (16), 1, OK},
  {"32 entries", 32, ES, SZ (32), 1, OK},
  {"512 entries", 512, ES, SZ (512), 1, OK},
  {"1024 entries", 1024, ES, SZ (1024), 1, OK},
  /* not a power of two */
  {"17 entries", 17, ES, SZ (17), 1, BAD},
  {"24 entries", 24, ES, SZ (24), 1, BAD},
  {"48 entries", 48, ES, SZ (48), 1, BAD},
  {"1000 entries", 1000, ES, SZ (1000), 1, BAD},
  {"1023 entries", 1023, ES, SZ (1023), 1, BAD},
  /* fewer than 16 */
  {"0 entries", 0, ES, SZ (0), 1, BAD},
  {"1 entry", 1, ES, SZ (1), 1, BAD},
  {"2 entries", 2, ES, SZ (2), 1, BAD},
  {"8 entries", 8, ES, SZ (8), 1, BAD},
  {"15 entries", 15, ES, SZ (15), 1, BAD},
  /* more than 1024 */
  {"1025 entries", 1025, ES, SZ (1025), 1, BAD},
  {"2048 entries", 2048, ES, SZ (2048), 1, BAD},
  {"65536 entries", 65536, ES, SZ (65536), 1, BAD},
  {"top bit entries", 0x80000000, ES, SZ (0x80000000), 1, BAD},
  {"uint32 entries", G_MAXUINT32, ES, SZ (G_MAXUINT32), 1, BAD},
  /* entries of any other size, the lane's size theirs or not */
  {"entry_size 0", 16, 0, SZ (16), 1, BAD},
  {"entry_size 64", 16, 64, SZ (16), 1, BAD},
  {"entry_size 64, its size", 16, 64, LANE_HEADER + 16 * 64, 1, BAD},
  {"entry_size 127", 16, 127, SZ (16), 1, BAD},
  {"entry_size 129", 16, 129, SZ (16), 1, BAD},
  {"entry_size 256, its size", 16, 256, LANE_HEADER + 16 * 256, 1, BAD},
  {"entry_size uint32", 16, G_MAXUINT32, SZ (16), 1, BAD},
  /* a memfd of another size */
  {"size - 1", 16, ES, SZ (16) - 1, 1, BAD},
  {"size + 1", 16, ES, SZ (16) + 1, 1, BAD},
  {"size 0", 16, ES, 0, 1, BAD},
  {"size without the header", 16, ES, 16 * ES, 1, BAD},
  {"size of 32 entries", 16, ES, SZ (32), 1, BAD},
  {"size of 8 entries", 16, ES, SZ (8), 1, BAD},
  {"size + 2^32", 16, ES, SZ (16) + (G_GUINT64_CONSTANT (1) << 32), 1, BAD},
  {"size uint64", 16, ES, G_MAXUINT64, 1, BAD},
  /* one fd, no more, no fewer */
  {"no fd", 16, ES, SZ (16), 0, FDS},
  {"2 fds", 16, ES, SZ (16), 2, FDS},
  {"1024 entries, 2 fds", 1024, ES, SZ (1024), 2, FDS},
  {"max fds", 16, ES, SZ (16), GPUSHARE_MAX_FDS, FDS},
  {"max+1 fds", 16, ES, SZ (16), GPUSHARE_MAX_FDS + 1, FDS},
  {"uint32 fds", 16, ES, SZ (16), G_MAXUINT32, FDS},
  /* the shape first, then the count; past the cap, the count first */
  {"17 entries, no fd", 17, ES, SZ (17), 0, BAD},
  {"entry_size 64, 2 fds", 16, 64, SZ (16), 2, BAD},
  {"size + 1, max fds", 16, ES, SZ (16) + 1, GPUSHARE_MAX_FDS, BAD},
  {"17 entries, max+1 fds", 17, ES, SZ (17), GPUSHARE_MAX_FDS + 1, FDS},
};

#undef OK
#undef BAD
#undef FDS
#undef ES
#undef SZ

GST_START_TEST (test_lane_bounds)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareMsg *back = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint32 n_fds;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (lane_cases); i++) {
    const LaneCase *c = &lane_cases[i];
    GpuShareParseResult res;

    sample_msg (GPUSHARE_MSG_LANE, 1, msg, &n_fds);
    msg->u.lane.n_entries = c->n_entries;
    msg->u.lane.entry_size = c->entry_size;
    msg->u.lane.size = c->size;
    res = parse_raw_msg (msg, c->n_fds, back);
    fail_unless (res == c->res, "%s: got %s", c->what,
        gpushare_parse_result_to_string (res));
    g_byte_array_set_size (out, 0);
    if (c->res == GPUSHARE_PARSE_OK) {
      assert_msg_equal (back, msg);
      fail_unless (gpushare_msg_build_lane (&msg->u.lane, out), "%s: not "
          "built", c->what);
      round_trip (msg, 1);
    } else if (c->res == GPUSHARE_PARSE_MALFORMED) {
      /* what the parser refuses, the builders do not write, whatever the
       * fds */
      fail_if (gpushare_msg_build (msg, 1, out), "%s: built", c->what);
      fail_if (gpushare_msg_build_lane (&msg->u.lane, out), "%s: built by "
          "the LANE builder", c->what);
      fail_unless_equals_int (out->len, 0);
    } else if (c->n_fds > GPUSHARE_MAX_FDS) {
      fail_if (gpushare_msg_build (msg, c->n_fds, out), "%s: built", c->what);
      fail_unless_equals_int (out->len, 0);
    }
  }
  g_byte_array_unref (out);
  g_free (back);
  g_free (msg);
}

GST_END_TEST;

/* an entry's header, at the offsets docs/protocol.md gives */
static void
raw_entry (guint8 * e, guint64 index, guint32 kind, guint32 length)
{
  put64 (e, ENTRY_INDEX, index);
  put32 (e, ENTRY_KIND, kind);
  put32 (e, ENTRY_LENGTH, length);
}

/* parses an entry from a heap copy of exactly its 128 bytes (ASan sees a
 * read past them) into a dirty entry */
static GpuShareParseResult
parse_entry (const guint8 * in, GpuShareLaneEntry * e)
{
  guint8 *copy = g_memdup2 (in, ENTRY_SIZE);
  GpuShareParseResult res;

  memset (e, 0xa5, sizeof (*e));
  res = gpushare_lane_entry_parse (copy, e);
  g_free (copy);
  return res;
}

/* builds into a heap block of exactly 128 bytes (ASan sees a write past
 * it), first filled with 0x5a */
static gboolean
build_entry (const GpuShareLaneEntry * e, guint8 * out)
{
  guint8 *block = g_malloc (ENTRY_SIZE);
  gboolean ok;

  memset (block, 0x5a, ENTRY_SIZE);
  ok = gpushare_lane_entry_build (e, block);
  memcpy (out, block, ENTRY_SIZE);
  g_free (block);
  return ok;
}

static void
assert_entry_equal (const GpuShareLaneEntry * got,
    const GpuShareLaneEntry * want)
{
  GpuShareFrame zero = { 0, };

  fail_unless_equals_uint64 (got->index, want->index);
  fail_unless_equals_uint64 (got->kind, want->kind);
  if (want->kind == GPUSHARE_LANE_ENTRY_FRAME) {
    assert_frame_equal (&got->frame, &want->frame);
    fail_unless_equals_uint64 (got->written_us, want->written_us);
    fail_unless_equals_uint64 (got->mark, 0);
    fail_unless_equals_uint64 (got->meta_at, want->meta_at);
    fail_unless_equals_uint64 (got->meta_len, want->meta_len);
    fail_unless_equals_uint64 (got->meta_entries, want->meta_entries);
  } else {
    fail_unless_equals_uint64 (got->mark, want->mark);
    fail_unless_equals_uint64 (got->written_us, 0);
    /* nothing of a frame in a MARK, whatever was there before */
    assert_frame_equal (&got->frame, &zero);
  }
}

/* a FRAME entry whose every field differs from the others, byte by
 * byte */
static void
distinct_frame_entry (GpuShareLaneEntry * e)
{
  GpuShareFrame *f = &e->frame;

  memset (e, 0, sizeof (*e));
  e->index = G_GUINT64_CONSTANT (0x0102030405060708);
  e->kind = GPUSHARE_LANE_ENTRY_FRAME;
  f->epoch = G_GUINT64_CONSTANT (0x1112131415161718);
  f->slot = 0x21222324;
  f->generation = 0x31323334;
  f->sequence = G_GUINT64_CONSTANT (0x4142434445464748);
  f->pts = G_GUINT64_CONSTANT (0x5152535455565758);
  f->dts = G_GUINT64_CONSTANT (0x6162636465666768);
  f->duration = G_GUINT64_CONSTANT (0x7172737475767778);
  f->offset = G_GUINT64_CONSTANT (0x8182838485868788);
  f->offset_end = G_GUINT64_CONSTANT (0x9192939495969798);
  f->buffer_flags = 0xa1a2a3a4;
  f->flags = 0xb1b2b3b4;
  f->share = 0xc1c2c3c4;
  e->written_us = G_GUINT64_CONSTANT (0xd1d2d3d4d5d6d7d8);
}

/* A FRAME entry: index at 0, kind 1 at 8, length 88 at 12, and at 16 the
 * 80 bytes of a FRAME message's payload with its share (at 72 of them),
 * even where the share is 0, then the producer's clock when it wrote the
 * entry; the rest of the 128 bytes 0.  Every field comes back. */
GST_START_TEST (test_lane_entry_frame)
{
  static const guint32 shares[] = { 0xc1c2c3c4, 0, 1, G_MAXUINT32 };
  GpuShareLaneEntry *e = g_new0 (GpuShareLaneEntry, 1);
  GpuShareLaneEntry *back = g_new0 (GpuShareLaneEntry, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *out = g_byte_array_new ();
  guint8 entry[ENTRY_SIZE], want[ENTRY_SIZE];
  guint i;

  for (i = 0; i < G_N_ELEMENTS (shares); i++) {
    distinct_frame_entry (e);
    e->frame.share = shares[i];
    fail_unless (build_entry (e, entry));

    /* the documented bytes: the header from the offsets, the body as
     * this file's raw encoder writes a FRAME's payload with a share */
    memset (want, 0, sizeof (want));
    raw_entry (want, e->index, GPUSHARE_LANE_ENTRY_FRAME, ENTRY_FRAME_LEN);
    msg->type = GPUSHARE_MSG_FRAME;
    msg->u.frame = e->frame;
    if (shares[i] == 0) {
      /* a FRAME message without a share is 72 bytes; the entry's body
       * still holds 80, the share 0 and the reserved word 0 */
      fail_unless_equals_int (raw_fixed (msg, want + ENTRY_BODY), FRAME_FIXED);
    } else {
      fail_unless_equals_int (raw_fixed (msg, want + ENTRY_BODY),
          FRAME_SHARE_FIXED);
    }
    put64 (want, ENTRY_BODY + ENTRY_WRITTEN, e->written_us);
    fail_unless (memcmp (entry, want, ENTRY_SIZE) == 0, "share %u: not the "
        "documented bytes", shares[i]);
    fail_unless_equals_uint64 (get32 (entry, ENTRY_BODY + FRAME_SHARE),
        shares[i]);
    fail_unless_equals_uint64 (get32 (entry, ENTRY_BODY + FRAME_RESERVED), 0);

    /* and the FRAME message's own builder writes the same body */
    if (shares[i] != 0) {
      g_byte_array_set_size (out, 0);
      fail_unless (gpushare_msg_build_frame (&e->frame, out));
      fail_unless_equals_int (out->len, HDR_SIZE + FRAME_SHARE_FIXED);
      fail_unless (memcmp (entry + ENTRY_BODY, out->data + HDR_SIZE,
              FRAME_SHARE_FIXED) == 0);
    }

    /* back, every field, and built again to the same bytes */
    fail_unless_equals_int (parse_entry (entry, back), GPUSHARE_PARSE_OK);
    assert_entry_equal (back, e);
    fail_unless (build_entry (back, want));
    fail_unless (memcmp (entry, want, ENTRY_SIZE) == 0);
  }

  /* the extremes: metas past what a frame may have in a meta region are
   * not built */
  memset (e, 0xff, sizeof (*e));
  e->kind = GPUSHARE_LANE_ENTRY_FRAME;
  fail_if (build_entry (e, entry));
  e->meta_len = GPUSHARE_LANE_MAX_META_LEN;
  fail_if (build_entry (e, entry));
  e->meta_entries = GPUSHARE_MAX_META_ENTRIES;
  fail_unless (build_entry (e, entry));
  fail_unless_equals_int (parse_entry (entry, back), GPUSHARE_PARSE_OK);
  assert_entry_equal (back, e);
  /* where there are none, nothing of them */
  e->meta_len = 0;
  fail_if (build_entry (e, entry));
  e->meta_at = e->meta_entries = 0;
  fail_unless (build_entry (e, entry));
  fail_unless_equals_int (get32 (entry, ENTRY_LENGTH), ENTRY_FRAME_LEN);
  e->meta_len = 1;
  fail_if (build_entry (e, entry));
  e->meta_entries = 1;
  fail_unless (build_entry (e, entry));
  fail_unless_equals_int (get32 (entry, ENTRY_LENGTH), ENTRY_FRAME_METAS_LEN);
  fail_unless_equals_int (parse_entry (entry, back), GPUSHARE_PARSE_OK);
  assert_entry_equal (back, e);
  memset (e, 0xff, sizeof (*e));
  e->kind = GPUSHARE_LANE_ENTRY_FRAME;
  e->meta_at = e->meta_len = e->meta_entries = 0;
  fail_unless (build_entry (e, entry));
  fail_unless_equals_int (parse_entry (entry, back), GPUSHARE_PARSE_OK);
  assert_entry_equal (back, e);
  memset (e, 0, sizeof (*e));
  e->kind = GPUSHARE_LANE_ENTRY_FRAME;
  fail_unless (build_entry (e, entry));
  fail_unless_equals_int (parse_entry (entry, back), GPUSHARE_PARSE_OK);
  assert_entry_equal (back, e);

  g_byte_array_unref (out);
  g_free (msg);
  g_free (back);
  g_free (e);
}

GST_END_TEST;

/* A release of a lane: index at 0, then the 24 bytes of a RELEASE's
 * payload (epoch, slot, generation, sequence), back the same */
GST_START_TEST (test_lane_release)
{
  GpuShareRelease r = { G_GUINT64_CONSTANT (0x1112131415161718), 0x21222324,
    0x31323334, G_GUINT64_CONSTANT (0x4142434445464748)
  }, back;
  guint8 b[GPUSHARE_LANE_RELEASE_SIZE + 8];
  guint64 index;

  memset (b, 0xee, sizeof (b));
  gpushare_lane_release_build (G_GUINT64_CONSTANT (0x0102030405060708), &r, b);
  fail_unless_equals_uint64 (get64 (b, 0),
      G_GUINT64_CONSTANT (0x0102030405060708));
  fail_unless_equals_uint64 (get64 (b, 8), r.epoch);
  fail_unless_equals_uint64 (get32 (b, 16), r.slot);
  fail_unless_equals_uint64 (get32 (b, 20), r.generation);
  fail_unless_equals_uint64 (get64 (b, 24), r.sequence);
  /* nothing past its 32 bytes */
  fail_unless_equals_int (b[GPUSHARE_LANE_RELEASE_SIZE], 0xee);
  memset (&back, 0, sizeof (back));
  gpushare_lane_release_parse (b, &index, &back);
  fail_unless_equals_uint64 (index, G_GUINT64_CONSTANT (0x0102030405060708));
  fail_unless (memcmp (&back, &r, sizeof (r)) == 0);
}

GST_END_TEST;

/* A MARK entry: index at 0, kind 2 at 8, length 8 at 12, the mark's
 * number at 16, the rest 0, whatever the entry's frame held */
GST_START_TEST (test_lane_entry_mark)
{
  static const guint64 marks[] = { 1, 2, 3, G_GUINT64_CONSTANT (1) << 32,
    G_MAXUINT64,
  };
  static const guint64 indexes[] = { 0, 1, 15, 16,
    G_GUINT64_CONSTANT (0x0102030405060708), G_MAXUINT64,
  };
  GpuShareLaneEntry *e = g_new0 (GpuShareLaneEntry, 1);
  GpuShareLaneEntry *back = g_new0 (GpuShareLaneEntry, 1);
  guint8 entry[ENTRY_SIZE], want[ENTRY_SIZE];
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (marks); i++) {
    for (j = 0; j < G_N_ELEMENTS (indexes); j++) {
      distinct_frame_entry (e);
      e->kind = GPUSHARE_LANE_ENTRY_MARK;
      e->index = indexes[j];
      e->mark = marks[i];
      fail_unless (build_entry (e, entry));

      memset (want, 0, sizeof (want));
      raw_entry (want, indexes[j], GPUSHARE_LANE_ENTRY_MARK, ENTRY_MARK_LEN);
      put64 (want, ENTRY_BODY, marks[i]);
      fail_unless (memcmp (entry, want, ENTRY_SIZE) == 0);

      fail_unless_equals_int (parse_entry (entry, back), GPUSHARE_PARSE_OK);
      assert_entry_equal (back, e);
    }
  }

  g_free (back);
  g_free (e);
}

GST_END_TEST;

/* What the parser refuses: an unknown kind, a length over 112 or a MARK
 * of 0 (MALFORMED), a body shorter than its kind's (TRUNCATED); what it
 * does not judge: the index, a FRAME body of 72 to 79 bytes (no share),
 * any length up to 112, the bytes past the length. */
GST_START_TEST (test_lane_entry_parse)
{
  static const guint32 unknown[] = { 0, 3, 4, 0x100, 0x80000001,
    G_MAXUINT32,
  };
  static const guint32 over[] = { ENTRY_BODY_MAX + 1, ENTRY_SIZE,
    ENTRY_SIZE + 1, 0x80000000, G_MAXUINT32,
  };
  GpuShareLaneEntry *e = g_new0 (GpuShareLaneEntry, 1);
  GpuShareLaneEntry *back = g_new0 (GpuShareLaneEntry, 1);
  guint8 frame[ENTRY_SIZE], mark[ENTRY_SIZE], b[ENTRY_SIZE];
  guint32 len;
  guint i;

  distinct_frame_entry (e);
  fail_unless (build_entry (e, frame));
  memset (e, 0, sizeof (*e));
  e->kind = GPUSHARE_LANE_ENTRY_MARK;
  e->index = 9;
  e->mark = 5;
  fail_unless (build_entry (e, mark));

  /* a kind this version does not know, with either body and any length
   * it could have: the lane is in order, so it cannot be skipped */
  for (i = 0; i < G_N_ELEMENTS (unknown); i++) {
    memcpy (b, frame, ENTRY_SIZE);
    put32 (b, ENTRY_KIND, unknown[i]);
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
    memcpy (b, mark, ENTRY_SIZE);
    put32 (b, ENTRY_KIND, unknown[i]);
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
    put32 (b, ENTRY_LENGTH, 0);
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
    put32 (b, ENTRY_LENGTH, ENTRY_BODY_MAX);
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
  }

  /* a length past the entry's 112 bytes of body, of either kind */
  for (i = 0; i < G_N_ELEMENTS (over); i++) {
    memcpy (b, frame, ENTRY_SIZE);
    put32 (b, ENTRY_LENGTH, over[i]);
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
    memcpy (b, mark, ENTRY_SIZE);
    put32 (b, ENTRY_LENGTH, over[i]);
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
  }

  /* FRAME: shorter than 72 bytes is truncated; 72 to 79 is a frame
   * without its share (a cut share is no share); 80 to 112 has it, and
   * from 88 the writer's clock; from 104 the reference of its metas
   * (minor 9), which these bytes do not make: malformed */
  distinct_frame_entry (e);
  memcpy (b, frame, ENTRY_SIZE);
  memset (b + ENTRY_BODY + ENTRY_FRAME_LEN, 0xff,
      ENTRY_BODY_MAX - ENTRY_FRAME_LEN);
  for (len = 0; len <= ENTRY_BODY_MAX; len++) {
    put32 (b, ENTRY_LENGTH, len);
    if (len < FRAME_FIXED) {
      fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_TRUNCATED);
      continue;
    }
    if (len >= ENTRY_FRAME_METAS_LEN) {
      fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
      continue;
    }
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_OK);
    e->frame.share = len < FRAME_SHARE_FIXED ? 0 : 0xc1c2c3c4;
    /* the writer's clock only whole, after the share */
    e->written_us = len < ENTRY_FRAME_LEN ? 0 :
        G_GUINT64_CONSTANT (0xd1d2d3d4d5d6d7d8);
    assert_entry_equal (back, e);
  }

  /* a reference of metas: read whole from 104 bytes on, the bytes after
   * it ignored; a length past GPUSHARE_LANE_MAX_META_LEN, entries past
   * GPUSHARE_MAX_META_ENTRIES, one of the two 0 without the other, or a
   * place for none is malformed */
  {
    static const struct
    {
      guint32 len, entries;
      GpuShareParseResult res;
    } refs[] = {
      {1, 1, GPUSHARE_PARSE_OK},
      {GPUSHARE_LANE_MAX_META_LEN, GPUSHARE_MAX_META_ENTRIES,
          GPUSHARE_PARSE_OK},
      {GPUSHARE_LANE_MAX_META_LEN + 1, 1, GPUSHARE_PARSE_MALFORMED},
      {8, GPUSHARE_MAX_META_ENTRIES + 1, GPUSHARE_PARSE_MALFORMED},
      {0, 1, GPUSHARE_PARSE_MALFORMED},
      {8, 0, GPUSHARE_PARSE_MALFORMED},
      /* none there, but a place */
      {0, 0, GPUSHARE_PARSE_MALFORMED},
    };

    for (i = 0; i < G_N_ELEMENTS (refs); i++) {
      for (len = ENTRY_FRAME_METAS_LEN; len <= ENTRY_BODY_MAX; len += 8) {
        memcpy (b, frame, ENTRY_SIZE);
        memset (b + ENTRY_BODY + ENTRY_FRAME_METAS_LEN, 0xee,
            ENTRY_BODY_MAX - ENTRY_FRAME_METAS_LEN);
        put32 (b, ENTRY_LENGTH, len);
        put64 (b, ENTRY_BODY + ENTRY_FRAME_LEN,
            G_GUINT64_CONSTANT (0xa1a2a3a4a5a6a7a8));
        put32 (b, ENTRY_BODY + ENTRY_FRAME_LEN + 8, refs[i].len);
        put32 (b, ENTRY_BODY + ENTRY_FRAME_LEN + 12, refs[i].entries);
        fail_unless_equals_int (parse_entry (b, back), refs[i].res);
        if (refs[i].res != GPUSHARE_PARSE_OK)
          continue;
        fail_unless_equals_uint64 (back->meta_at,
            G_GUINT64_CONSTANT (0xa1a2a3a4a5a6a7a8));
        fail_unless_equals_uint64 (back->meta_len, refs[i].len);
        fail_unless_equals_uint64 (back->meta_entries, refs[i].entries);
      }
    }
  }

  /* MARK: shorter than 8 bytes is truncated, even a mark of 0; 8 to
   * 112 holds the mark, the bytes after it ignored */
  memcpy (b, mark, ENTRY_SIZE);
  memset (b + ENTRY_BODY + ENTRY_MARK_LEN, 0xff,
      ENTRY_BODY_MAX - ENTRY_MARK_LEN);
  for (len = 0; len <= ENTRY_BODY_MAX; len++) {
    put32 (b, ENTRY_LENGTH, len);
    if (len < ENTRY_MARK_LEN) {
      fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_TRUNCATED);
      continue;
    }
    fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_OK);
    fail_unless_equals_uint64 (back->mark, 5);
    fail_unless_equals_uint64 (back->index, 9);
  }
  /* marks count from 1 */
  put32 (b, ENTRY_LENGTH, ENTRY_MARK_LEN);
  put64 (b, ENTRY_BODY, 0);
  fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
  put32 (b, ENTRY_LENGTH, ENTRY_BODY_MAX);
  fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_MALFORMED);
  put32 (b, ENTRY_LENGTH, ENTRY_MARK_LEN - 1);
  fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_TRUNCATED);

  /* the index is the reader's to judge, not the parser's */
  memcpy (b, mark, ENTRY_SIZE);
  put64 (b, ENTRY_INDEX, G_MAXUINT64);
  fail_unless_equals_int (parse_entry (b, back), GPUSHARE_PARSE_OK);
  fail_unless_equals_uint64 (back->index, G_MAXUINT64);

  g_free (back);
  g_free (e);
}

GST_END_TEST;

/* A kind the builder does not know: refused, and the 128 bytes are left
 * as they were.  An entry built in a lane writes its own 128 bytes and
 * nothing around them: entry i at 128 + (i mod n_entries) * 128. */
GST_START_TEST (test_lane_entry_build)
{
  static const guint32 unknown[] = { 0, 3, 0x100, G_MAXUINT32 };
  GpuShareLaneEntry *e = g_new0 (GpuShareLaneEntry, 1);
  GpuShareLaneEntry *back = g_new0 (GpuShareLaneEntry, 1);
  guint8 *lane = g_malloc (LANE_BYTES (16));
  guint8 entry[ENTRY_SIZE];
  guint64 i;
  guint j;

  for (j = 0; j < G_N_ELEMENTS (unknown); j++) {
    distinct_frame_entry (e);
    e->kind = unknown[j];
    e->mark = 1;
    fail_if (build_entry (e, entry));
    for (i = 0; i < ENTRY_SIZE; i++)
      fail_unless_equals_int (entry[i], 0x5a);
  }

  /* three turns of a lane of 16 entries, frames and marks; the header
   * and the entries around each are left alone */
  memset (lane, 0xcc, LANE_BYTES (16));
  for (i = 0; i < 48; i++) {
    guint8 *at = lane + LANE_HEADER + (i % 16) * ENTRY_SIZE;
    guint8 *before = g_memdup2 (lane, LANE_BYTES (16));

    distinct_frame_entry (e);
    e->index = i;
    if (i % 3 == 2) {
      e->kind = GPUSHARE_LANE_ENTRY_MARK;
      e->mark = i / 3 + 1;
    }
    fail_unless (gpushare_lane_entry_build (e, at));
    fail_unless_equals_int (parse_entry (at, back), GPUSHARE_PARSE_OK);
    assert_entry_equal (back, e);
    fail_unless (memcmp (lane, before, at - lane) == 0);
    fail_unless (memcmp (at + ENTRY_SIZE, before + (at - lane) + ENTRY_SIZE,
            LANE_BYTES (16) - (at - lane) - ENTRY_SIZE) == 0);
    g_free (before);
  }
  for (j = 0; j < LANE_HEADER; j++)
    fail_unless_equals_int (lane[j], 0xcc);
  /* the last turn is there, entry i at its place */
  for (i = 32; i < 48; i++) {
    fail_unless_equals_int (parse_entry (lane + LANE_HEADER + (i % 16) *
            ENTRY_SIZE, back), GPUSHARE_PARSE_OK);
    fail_unless_equals_uint64 (back->index, i);
    fail_unless_equals_uint64 (get32 (lane + LANE_HEADER + (i % 16) *
            ENTRY_SIZE, ENTRY_INDEX), i);
  }

  g_free (lane);
  g_free (back);
  g_free (e);
}

GST_END_TEST;

/* Every byte of a FRAME entry and of a MARK entry set to each boundary
 * value in turn: the parser returns some result, never reads past the
 * 128 bytes (ASan), and what it accepts builds, to an entry that parses
 * back the same. */
GST_START_TEST (test_lane_entry_sweep)
{
  static const guint8 values[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
  GpuShareLaneEntry *e = g_new0 (GpuShareLaneEntry, 1);
  GpuShareLaneEntry *back = g_new0 (GpuShareLaneEntry, 1);
  GpuShareLaneEntry *again = g_new0 (GpuShareLaneEntry, 1);
  guint8 start[ENTRY_SIZE], b[ENTRY_SIZE], built[ENTRY_SIZE];
  guint t, pos, v;

  for (t = 0; t < 2; t++) {
    distinct_frame_entry (e);
    if (t == 1) {
      e->kind = GPUSHARE_LANE_ENTRY_MARK;
      e->mark = 1;
    }
    fail_unless (build_entry (e, start));
    for (pos = 0; pos < ENTRY_SIZE; pos++) {
      for (v = 0; v < G_N_ELEMENTS (values); v++) {
        memcpy (b, start, ENTRY_SIZE);
        b[pos] = values[v];
        if (parse_entry (b, back) != GPUSHARE_PARSE_OK)
          continue;
        fail_unless (build_entry (back, built), "byte %u = 0x%02x", pos,
            values[v]);
        fail_unless_equals_int (parse_entry (built, again), GPUSHARE_PARSE_OK);
        assert_entry_equal (again, back);
      }
    }
  }

  g_free (again);
  g_free (back);
  g_free (e);
}

GST_END_TEST;

static Suite *
gpushareproto_suite (void)
{
  Suite *s = suite_create ("gpushareproto");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_round_trip_every_type);
  tcase_add_test (tc, test_round_trip_mem_types);
  tcase_add_test (tc, test_round_trip_string_lengths);
  tcase_add_test (tc, test_golden_bytes);
  tcase_add_test (tc, test_raw_encoder_matches_builder);
  tcase_add_test (tc, test_type_builders_same_bytes);
  tcase_add_test (tc, test_type_builders_refuse);
  tcase_add_test (tc, test_frame_from_body);
  tcase_add_test (tc, test_frame_share);
  tcase_add_test (tc, test_stream_of_messages);
  tcase_add_test (tc, test_header_need_more);
  tcase_add_test (tc, test_header_fields);
  tcase_add_test (tc, test_header_bad_magic);
  tcase_add_test (tc, test_header_version);
  tcase_add_test (tc, test_header_payload_len);
  tcase_add_test (tc, test_header_fd_count);
  tcase_add_test (tc, test_payload_truncated);
  tcase_add_test (tc, test_payload_trailing_bytes);
  tcase_add_test (tc, test_payload_len_mismatch);
  tcase_add_test (tc, test_payload_unknown_type);
  tcase_add_test (tc, test_payload_fds_on_wrong_type);
  tcase_add_test (tc, test_payload_string_lengths);
  tcase_add_test (tc, test_payload_string_bytes);
  tcase_add_test (tc, test_build_refuses_strings);
  tcase_add_test (tc, test_payload_layout);
  tcase_add_test (tc, test_payload_slots);
  tcase_add_test (tc, test_payload_mem_types);
  tcase_add_test (tc, test_payload_schema_version);
  tcase_add_test (tc, test_payload_reserved_ignored);
  tcase_add_test (tc, test_slots_side);
  tcase_add_test (tc, test_build_refuses);
  tcase_add_test (tc, test_byte_sweep);
  tcase_add_test (tc, test_constants);
  tcase_add_test (tc, test_msg_table);
  tcase_add_test (tc, test_round_trip_announce_device);
  tcase_add_test (tc, test_round_trip_accept_sync);
  tcase_add_test (tc, test_round_trip_slots_semaphore);
  tcase_add_test (tc, test_round_trip_slots_memory_handles);
  tcase_add_test (tc, test_round_trip_slots_events);
  tcase_add_test (tc, test_round_trip_slots_largest);
  tcase_add_test (tc, test_payload_announce_sync);
  tcase_add_test (tc, test_payload_accept_sync);
  tcase_add_test (tc, test_payload_accept_reason);
  tcase_add_test (tc, test_payload_slots_sync);
  tcase_add_test (tc, test_layout_set_caps);
  tcase_add_test (tc, test_ping);
  tcase_add_test (tc, test_meta_chain);
  tcase_add_test (tc, test_event_text);
  tcase_add_test (tc, test_observe_status);
  tcase_add_test (tc, test_notice);
  tcase_add_test (tc, test_notice_bounds);
  tcase_add_test (tc, test_lane);
  tcase_add_test (tc, test_lane_bounds);
  tcase_add_test (tc, test_lane_entry_frame);
  tcase_add_test (tc, test_lane_entry_mark);
  tcase_add_test (tc, test_lane_release);
  tcase_add_test (tc, test_lane_entry_parse);
  tcase_add_test (tc, test_lane_entry_build);
  tcase_add_test (tc, test_lane_entry_sweep);
  tcase_add_test (tc, test_goodbye_held);
  tcase_add_test (tc, test_to_string);

  return s;
}

GST_CHECK_MAIN (gpushareproto);
