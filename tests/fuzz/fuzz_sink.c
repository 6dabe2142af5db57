/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: a hostile consumer against a real gpusharesink.
 *
 * Per input, an appsrc ! gpusharesink pipeline in this process (leaky or
 * lossless, as the input's first byte says) takes frames the harness
 * pushes, and a raw consumer played here makes the moves the input says:
 * ACCEPTs of any memory type and version, MAPPED and UNMAPPED of any
 * epoch, RELEASEs of what it was sent or of anything, GOODBYEs that say
 * HELD, OBSERVE, PING, raw messages of any type and payload, hanging up
 * and connecting again; frames are pushed between its moves, so that it
 * is sent FRAMEs, CAPS (a size changed now and then) and the rest.  Then
 * the stream ends and the pipeline stops.
 *
 * Findings: what the sanitizers catch, a CRITICAL (fatal here), a
 * producer that stops taking frames (its appsrc queue not empty for 3 s), and
 * a descriptor the producer kept after it stopped.  The corpus is in
 * tests/fuzz/corpus/sink; replay_sink replays it in the cpu suite.
 */

#include "fuzz_peer.h"

#include <gst/app/app.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct
{
  FuzzPeer peer;
  GpuShareMsg *msg;
  GpuShareAnnounce announce;
  GpuShareFrame last;           /* the last FRAME it was sent */
  gboolean have_frame;
  guint64 epoch;                /* of the last SLOTS or CAPS */
} Consumer;

/* what the producer sent meanwhile */
static void
drain (Consumer * c, gint timeout_ms)
{
  GpuShareMsg *in = c->msg;

  while (fuzz_recv (&c->peer, in, timeout_ms)) {
    if (in->type == GPUSHARE_MSG_ANNOUNCE)
      c->announce = in->u.announce;
    else if (in->type == GPUSHARE_MSG_FRAME) {
      c->last = in->u.frame;
      c->have_frame = TRUE;
    } else if (in->type == GPUSHARE_MSG_SLOTS)
      c->epoch = in->u.slots.epoch;
    else if (in->type == GPUSHARE_MSG_CAPS)
      c->epoch = in->u.caps.layout.epoch;
    timeout_ms = 0;
  }
}

static void
connect_consumer (Consumer * c)
{
  fuzz_peer_clear (&c->peer);
  fuzz_peer_init (&c->peer, fuzz_connect (fuzz_socket_path ()));
  c->have_frame = FALSE;
  memset (&c->announce, 0, sizeof (c->announce));
  drain (c, 200);
}

static void
move_accept (Consumer * c, FuzzInput * in)
{
  GpuShareMsg *m = c->msg;
  GpuShareAccept *a = &m->u.accept;
  guint8 how = fuzz_byte (in);

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_ACCEPT;
  a->schema_major = GPUSHARE_VERSION_MAJOR;
  a->schema_minor = (how & 0x80) ? fuzz_byte (in) % 8 : GPUSHARE_VERSION_MINOR;
  a->mem_type = (how & 0x40) ? 1u << (fuzz_byte (in) % 6) : GPUSHARE_MEM_SYSTEM;
  a->pid = (how & 0x20) ? fuzz_u32 (in) : (guint32) getpid ();
  a->instance = (how & 0x10) ? fuzz_u32 (in) : c->announce.instance;
  a->sync_mode = (how & 0x08) ? 1u << (fuzz_byte (in) % 4) : 0;
  a->name_len = 1 + fuzz_byte (in) % 16;
  memset (a->name, 'a' + (how & 7), a->name_len);
  fuzz_send_msg (&c->peer, m, NULL, 0);
}

static void
move_release (Consumer * c, FuzzInput * in)
{
  GpuShareMsg *m = c->msg;
  GpuShareRelease *r = &m->u.release;
  guint8 how = fuzz_byte (in);

  memset (m, 0, sizeof (*m));
  m->type = GPUSHARE_MSG_RELEASE;
  if (c->have_frame && !(how & 0x80)) {
    r->epoch = c->last.epoch;
    r->slot = c->last.slot;
    r->generation = c->last.generation;
    r->sequence = c->last.sequence;
  }
  if (how & 0x40)
    r->slot = fuzz_byte (in);
  if (how & 0x20)
    r->generation = fuzz_u32 (in);
  if (how & 0x10)
    r->epoch = fuzz_byte (in);
  if (how & 0x08)
    r->sequence = fuzz_u32 (in);
  fuzz_send_msg (&c->peer, m, NULL, 0);
}

static void
move_raw (Consumer * c, FuzzInput * in)
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
  fuzz_send (&c->peer, buf, GPUSHARE_HEADER_SIZE + len, NULL, 0);
}

/* one frame into the producer; FALSE when it would not take it */
static gboolean
push_frame (GstElement * appsrc, guint * n, gboolean bigger)
{
  guint w = bigger ? 96 : 64, h = bigger ? 64 : 48;
  gsize size = w * h * 3 / 2;
  GstBuffer *buf;

  if (bigger != ((*n & 0x10000) != 0)) {
    GstCaps *caps = gst_caps_new_simple ("video/x-raw", "format",
        G_TYPE_STRING, "NV12", "width", G_TYPE_INT, w, "height", G_TYPE_INT,
        h, "framerate", GST_TYPE_FRACTION, 30, 1, NULL);

    g_object_set (appsrc, "caps", caps, NULL);
    gst_caps_unref (caps);
    *n ^= 0x10000;
  }
  buf = gst_buffer_new_allocate (NULL, size, NULL);
  gst_buffer_memset (buf, 0, *n & 0xff, size);
  GST_BUFFER_PTS (buf) = (*n & 0xffff) * (GST_SECOND / 30);
  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  (*n)++;
  return gst_app_src_push_buffer (GST_APP_SRC (appsrc), buf) == GST_FLOW_OK;
}

/* the appsrc's queue empties: the producer takes frames.  What may hold
 * a lossless producer up: a consumer's lease (500 ms here), or a consumer
 * that maps a new ring, one handshake-timeout (1 s here) and once 1 s
 * more where its reply waits unread; 3 s is that and a second of margin
 * for the sanitizers */
static gboolean
producer_takes (GstElement * appsrc)
{
  gint64 until = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;

  while (gst_app_src_get_current_level_buffers (GST_APP_SRC (appsrc)) > 0) {
    if (g_get_monotonic_time () > until)
      return FALSE;
    g_usleep (200);
  }
  return TRUE;
}

static void
run (const uint8_t * data, size_t size)
{
  FuzzInput in = { data, size, 0 };
  Consumer c = { 0, };
  GstElement *pipeline, *sink, *appsrc;
  GError *error = NULL;
  guint n = 0;
  guint8 setup;

  setup = fuzz_byte (&in);
  pipeline = gst_parse_launch ("appsrc name=in format=time is-live=true "
      "max-buffers=4 block=false caps=video/x-raw,format=NV12,width=64,"
      "height=48,framerate=30/1 ! gpusharesink name=sink "
      "heartbeat-interval=0 handshake-timeout=1000 lease-timeout=500", &error);
  if (!pipeline)
    abort ();
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  appsrc = gst_bin_get_by_name (GST_BIN (pipeline), "in");
  g_object_set (sink, "socket-path", fuzz_socket_path (), NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy",
      (setup & 1) ? "lossless" : "leaky");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  push_frame (appsrc, &n, FALSE);
  c.msg = g_new0 (GpuShareMsg, 1);
  fuzz_peer_init (&c.peer, -1);
  connect_consumer (&c);
  while (fuzz_more (&in)) {
    switch (fuzz_byte (&in) % 12) {
      case 0:
        move_accept (&c, &in);
        break;
      case 1:
        memset (c.msg, 0, sizeof (*c.msg));
        c.msg->type = (fuzz_byte (&in) & 1) ? GPUSHARE_MSG_UNMAPPED :
            GPUSHARE_MSG_MAPPED;
        c.msg->u.mapped.epoch = (fuzz_byte (&in) & 1) ? fuzz_byte (&in) :
            c.epoch;
        fuzz_send_msg (&c.peer, c.msg, NULL, 0);
        break;
      case 2:
      case 3:
        move_release (&c, &in);
        break;
      case 4:
        memset (c.msg, 0, sizeof (*c.msg));
        c.msg->type = GPUSHARE_MSG_GOODBYE;
        c.msg->u.goodbye.reason = fuzz_byte (&in) % 10;
        c.msg->u.goodbye.flags = fuzz_byte (&in) & 1;
        c.msg->u.goodbye.last_sequence = c.last.sequence + fuzz_byte (&in) % 3;
        fuzz_send_msg (&c.peer, c.msg, NULL, 0);
        break;
      case 5:
        memset (c.msg, 0, sizeof (*c.msg));
        c.msg->type = GPUSHARE_MSG_OBSERVE;
        c.msg->u.observe.schema_major = GPUSHARE_VERSION_MAJOR;
        c.msg->u.observe.schema_minor = GPUSHARE_VERSION_MINOR;
        c.msg->u.observe.interval_ms = 100 + fuzz_byte (&in) * 4;
        c.msg->u.observe.name_len = 1;
        c.msg->u.observe.name[0] = 'o';
        fuzz_send_msg (&c.peer, c.msg, NULL, 0);
        break;
      case 6:
        memset (c.msg, 0, sizeof (*c.msg));
        c.msg->type = GPUSHARE_MSG_PING;
        fuzz_send_msg (&c.peer, c.msg, NULL, 0);
        break;
      case 7:
        move_raw (&c, &in);
        break;
      case 8:
        connect_consumer (&c);
        break;
      default:
        if (!push_frame (appsrc, &n, (fuzz_byte (&in) & 0x1f) == 0x1f))
          break;
        if (!producer_takes (appsrc)) {
          g_printerr ("fuzz_sink: the producer stopped taking frames\n");
          abort ();
        }
        break;
    }
    drain (&c, 1);
  }
  fuzz_peer_clear (&c.peer);
  gst_app_src_end_of_stream (GST_APP_SRC (appsrc));
  fuzz_drain_bus (pipeline, 200);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (appsrc);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (c.msg);
  /* the producer keeps no descriptor once it stopped */
}

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static const guint8 warm_up[] =
      { 0, 0, 0, 3, 1, 0, 0, 9, 0, 2, 0, 9, 0, 5, 1, 9, 0x1f };
  static gboolean warm;

  /* once: what GStreamer and GLib open on first use, and keep (the
   * default main context, the clock's timer, ...), before any count */
  if (!warm) {
    fuzz_gst_init ();
    run (warm_up, sizeof (warm_up));
    warm = TRUE;
  }
  fuzz_run_checking_fds ("fuzz_sink", run, data, size);
  return 0;
}
