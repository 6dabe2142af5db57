/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: a hostile producer against a real gpusharesrc.
 *
 * Per input, a gpusharesrc ! fakesink pipeline in this process connects
 * to a raw producer played here, which completes the handshake (ANNOUNCE,
 * ACCEPT, four sealed memfd slots, MAPPED) and then makes the moves the
 * input says, each built by the codec so that it reaches the consumer's
 * logic and not only its parser: FRAMEs (slots, generations, sequences,
 * timestamps, flags and shares from the input, mostly right, sometimes
 * not), METAs of entries from the input, EVENTs of any kind and text,
 * CAPS of other sizes and formats, NOTICEs, EOS, raw messages of any type
 * and payload, and pauses that let the consumer release what it holds.
 * Then a GOODBYE, and the pipeline stops.
 *
 * Findings: what the sanitizers catch, a CRITICAL (fatal here), and a
 * descriptor the consumer kept after it stopped.  The corpus is in
 * tests/fuzz/corpus/src; replay_src replays it in the cpu suite.
 */

#include "fuzz_peer.h"

#include <gst/video/video.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_SLOTS 4
#define SLOT_SIZE 16384
#define INSTANCE 0x5eed

static void
make_layout (GpuShareLayout * l, const gchar * format, guint w, guint h)
{
  GstVideoInfo vi;
  GstCaps *caps;
  gchar *str;
  guint i;

  gst_video_info_set_format (&vi, gst_video_format_from_string (format), w, h);
  GST_VIDEO_INFO_FPS_N (&vi) = 30;
  GST_VIDEO_INFO_FPS_D (&vi) = 1;
  caps = gst_video_info_to_caps (&vi);
  str = gst_caps_to_string (caps);
  memset (l, 0, sizeof (*l));
  l->epoch = 1;
  l->frame_size = GST_VIDEO_INFO_SIZE (&vi);
  l->slot_size = SLOT_SIZE;
  l->n_slots = N_SLOTS;
  l->n_planes = GST_VIDEO_INFO_N_PLANES (&vi);
  for (i = 0; i < l->n_planes; i++) {
    l->offsets[i] = GST_VIDEO_INFO_PLANE_OFFSET (&vi, i);
    l->strides[i] = GST_VIDEO_INFO_PLANE_STRIDE (&vi, i);
  }
  gpushare_layout_set_caps (l, str);
  g_free (str);
  gst_caps_unref (caps);
}

typedef struct
{
  FuzzPeer peer;
  GpuShareMsg *msg;
  guint32 generation[N_SLOTS];
  gboolean held[N_SLOTS];       /* sent, not released */
  guint64 sequence;
} Producer;

/* what the consumer said meanwhile: its RELEASEs free slots */
static void
drain (Producer * p, gint timeout_ms)
{
  GpuShareMsg *in = g_new0 (GpuShareMsg, 1);

  while (fuzz_recv (&p->peer, in, timeout_ms)) {
    if (in->type == GPUSHARE_MSG_RELEASE && in->u.release.slot < N_SLOTS
        && in->u.release.generation == p->generation[in->u.release.slot])
      p->held[in->u.release.slot] = FALSE;
    timeout_ms = 0;
  }
  g_free (in);
}

static gboolean
handshake (Producer * p)
{
  GpuShareMsg *m = p->msg;
  GpuShareAnnounce *a = &m->u.announce;
  gint fds[N_SLOTS];
  gboolean ok;
  guint i;

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_ANNOUNCE;
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->schema_minor = GPUSHARE_VERSION_MINOR;
  a->mem_types = GPUSHARE_MEM_SYSTEM;
  a->flags = GPUSHARE_STREAM_FLAG_LIVE;
  a->pid = getpid ();
  a->uid = getuid ();
  a->instance = INSTANCE;
  a->latency = GST_MSECOND * 33;
  make_layout (&a->layout, "NV12", 64, 48);
  a->name_len = strlen ("fuzz-producer");
  memcpy (a->name, "fuzz-producer", a->name_len);
  if (!fuzz_send_msg (&p->peer, m, NULL, 0)
      || !fuzz_recv (&p->peer, m, 2000) || m->type != GPUSHARE_MSG_ACCEPT)
    return FALSE;
  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_SLOTS;
  m->u.slots.epoch = 1;
  m->u.slots.slot_size = SLOT_SIZE;
  m->u.slots.n_slots = N_SLOTS;
  m->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  for (i = 0; i < N_SLOTS; i++)
    fds[i] = fuzz_memfd (SLOT_SIZE);
  ok = fuzz_send_msg (&p->peer, m, fds, N_SLOTS);
  for (i = 0; i < N_SLOTS; i++)
    close (fds[i]);
  return ok && fuzz_recv (&p->peer, m, 2000)
      && m->type == GPUSHARE_MSG_MAPPED;
}

static void
move_frame (Producer * p, FuzzInput * in)
{
  GpuShareMsg *m = p->msg;
  GpuShareFrame *f = &m->u.frame;
  guint8 how = fuzz_byte (in);
  guint slot = fuzz_byte (in) % N_SLOTS, i;

  /* mostly a free slot, as a producer picks one */
  for (i = 0; i < N_SLOTS && p->held[slot] && !(how & 0x80); i++)
    slot = (slot + 1) % N_SLOTS;
  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_FRAME;
  f->epoch = (how & 0x40) ? fuzz_byte (in) : 1;
  f->slot = (how & 0x20) ? fuzz_byte (in) : slot;
  if (f->slot < N_SLOTS && !(how & 0x10))
    f->generation = ++p->generation[f->slot];
  else
    f->generation = fuzz_u32 (in);
  p->sequence += (how & 0x08) ? fuzz_byte (in) : 1;
  f->sequence = p->sequence;
  f->pts = (how & 0x04) ? G_MAXUINT64 : p->sequence * (GST_SECOND / 30);
  f->dts = (how & 0x02) ? fuzz_u32 (in) : G_MAXUINT64;
  f->duration = GST_SECOND / 30;
  f->offset = p->sequence;
  f->offset_end = p->sequence + 1;
  f->buffer_flags = (how & 0x01) ? fuzz_u32 (in) : 0;
  f->flags = fuzz_byte (in) & 0x3;
  f->share = fuzz_byte (in) % 6;
  if (f->slot < N_SLOTS)
    p->held[f->slot] = TRUE;
  fuzz_send_msg (&p->peer, m, NULL, 0);
}

static void
move_meta (Producer * p, FuzzInput * in)
{
  GpuShareMsg *m = p->msg;
  GpuShareMeta *meta = &m->u.meta;
  guint n = 1 + fuzz_byte (in) % 4, i;

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_META;
  meta->sequence = p->sequence + 1 + (fuzz_byte (in) == 0xff);
  /* entries: kind, 0, length, body, the body from the input */
  for (i = 0; i < n; i++) {
    guint16 kind = GUINT16_TO_LE (fuzz_byte (in) % 10);
    guint32 len = fuzz_byte (in), le;
    guint8 *e = meta->data + meta->data_len;

    if (meta->data_len + 8 + len > 1024)
      break;
    memcpy (e, &kind, 2);
    memset (e + 2, 0, 2);
    len = fuzz_bytes (in, e + 8, len);
    le = GUINT32_TO_LE (len);
    memcpy (e + 4, &le, 4);
    meta->data_len += 8 + len;
    meta->n_entries++;
  }
  if (meta->n_entries)
    fuzz_send_msg (&p->peer, m, NULL, 0);
}

static void
move_event (Producer * p, FuzzInput * in)
{
  GpuShareMsg *m = p->msg;
  GpuShareEvent *e = &m->u.event;
  static const gchar *const starts[] = { "s", "taglist, title=(string)",
    "stream-start, stream-id=(string)", "gpushare-x, a=(int)",
    "application/x-gst-rtsp, z=<", "", "{ }", "GstRegionOfInterest, x=",
  };
  guint8 buf[256];
  gsize n;

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_EVENT;
  e->kind = fuzz_byte (in) % 6;
  g_strlcpy (e->text, starts[fuzz_byte (in) % G_N_ELEMENTS (starts)],
      sizeof (e->text));
  n = fuzz_bytes (in, buf, fuzz_byte (in));
  /* text: UTF-8 without NUL, or the codec refuses it before the consumer
   * sees it */
  for (gsize i = 0; i < n; i++)
    buf[i] = buf[i] ? (buf[i] & 0x7f ? buf[i] & 0x7f : ' ') : ' ';
  memcpy (e->text + strlen (e->text), buf, n);
  e->text_len = strlen (e->text);
  if (e->text_len)
    fuzz_send_msg (&p->peer, m, NULL, 0);
}

static void
move_caps (Producer * p, FuzzInput * in)
{
  static const gchar *const formats[] = { "NV12", "I420", "RGBA", "GRAY8",
    "P010_10LE", "YUY2",
  };
  GpuShareMsg *m = p->msg;
  guint8 how = fuzz_byte (in);

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_CAPS;
  m->u.caps.flags = how & 1;
  m->u.caps.latency = (how & 2) ? G_MAXUINT64 : fuzz_u32 (in);
  make_layout (&m->u.caps.layout, formats[fuzz_byte (in) %
          G_N_ELEMENTS (formats)], 2 + fuzz_byte (in) % 96,
      2 + fuzz_byte (in) % 64);
  if (how & 4)
    m->u.caps.layout.epoch = fuzz_byte (in);
  if (how & 8)
    m->u.caps.layout.strides[0] = (gint32) fuzz_u32 (in);
  if (how & 16)
    m->u.caps.layout.frame_size = fuzz_u32 (in);
  fuzz_send_msg (&p->peer, m, NULL, 0);
}

static void
move_raw (Producer * p, FuzzInput * in)
{
  guint8 buf[GPUSHARE_HEADER_SIZE + 512];
  GpuShareHeader hdr = { 0, };
  guint32 len = fuzz_byte (in) * 2;

  hdr.magic = GUINT32_TO_LE (GPUSHARE_MAGIC);
  hdr.version_major = GUINT16_TO_LE (GPUSHARE_VERSION_MAJOR);
  hdr.version_minor = GUINT16_TO_LE (GPUSHARE_VERSION_MINOR);
  hdr.type = GUINT16_TO_LE (fuzz_byte (in) % 24);
  len = fuzz_bytes (in, buf + GPUSHARE_HEADER_SIZE, len);
  hdr.payload_len = GUINT32_TO_LE (len);
  memcpy (buf, &hdr, sizeof (hdr));
  fuzz_send (&p->peer, buf, GPUSHARE_HEADER_SIZE + len, NULL, 0);
}

static void
run (const uint8_t * data, size_t size)
{
  FuzzInput in = { data, size, 0 };
  Producer p = { 0, };
  GstElement *pipeline, *src;
  gint listen_fd;
  GError *error = NULL;

  listen_fd = fuzz_listen (fuzz_socket_path ());
  pipeline = gst_parse_launch ("gpusharesrc name=src connection-timeout=2000 "
      "heartbeat-interval=0 ! fakesink sync=false enable-last-sample=false",
      &error);
  if (!pipeline)
    abort ();
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  g_object_set (src, "socket-path", fuzz_socket_path (), NULL);
  gst_object_unref (src);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  p.msg = g_new0 (GpuShareMsg, 1);
  fuzz_peer_init (&p.peer, fuzz_accept (listen_fd, 2000));
  if (!p.peer.broken && handshake (&p)) {
    while (fuzz_more (&in) && !p.peer.broken) {
      switch (fuzz_byte (&in) % 10) {
        case 0:
        case 1:
        case 2:
          move_frame (&p, &in);
          break;
        case 3:
          move_meta (&p, &in);
          break;
        case 4:
          move_event (&p, &in);
          break;
        case 5:
          move_caps (&p, &in);
          break;
        case 6:
          memset (p.msg, 0, sizeof (*p.msg));
          p.msg->type = GPUSHARE_MSG_NOTICE;
          p.msg->u.notice.code = fuzz_byte (&in) % 3;
          p.msg->u.notice.share = fuzz_byte (&in);
          p.msg->u.notice.slots_held = fuzz_byte (&in);
          p.msg->u.notice.n_consumers = fuzz_byte (&in);
          p.msg->u.notice.skipped = fuzz_u32 (&in);
          p.msg->u.notice.sequence = p.sequence;
          fuzz_send_msg (&p.peer, p.msg, NULL, 0);
          break;
        case 7:
          memset (p.msg, 0, sizeof (*p.msg));
          p.msg->type = GPUSHARE_MSG_EOS;
          p.msg->u.eos.last_sequence = p.sequence + fuzz_byte (&in) % 3;
          fuzz_send_msg (&p.peer, p.msg, NULL, 0);
          break;
        case 8:
          move_raw (&p, &in);
          break;
        case 9:
          drain (&p, fuzz_byte (&in) % 20);
          break;
      }
      drain (&p, 0);
    }
    memset (p.msg, 0, sizeof (*p.msg));
    p.msg->type = GPUSHARE_MSG_GOODBYE;
    p.msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
    fuzz_send_msg (&p.peer, p.msg, NULL, 0);
    drain (&p, 20);
  }
  fuzz_drain_bus (pipeline, 50);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  fuzz_peer_clear (&p.peer);
  close (listen_fd);
  g_free (p.msg);
  /* the consumer keeps no descriptor once it stopped */
}

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static const guint8 warm_up[] =
      { 0, 0, 0, 1, 0, 9, 5, 0, 0, 1, 1, 0, 9, 5, 4, 1, 1, 3, 0x61, 0x62,
    0x63
  };
  static gboolean warm;

  /* once: what GStreamer and GLib open on first use, and keep (the
   * default main context, the clock's timer, ...), before any count */
  if (!warm) {
    fuzz_gst_init ();
    run (warm_up, sizeof (warm_up));
    warm = TRUE;
  }
  fuzz_run_checking_fds ("fuzz_src", run, data, size);
  return 0;
}
