/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpusharesrc against producers that break the protocol: a raw socket
 * plays the producer and sends garbage, another major version, slots that
 * are not sealed memfds of the right size, frames for slots that do not
 * exist, layouts that do not fit the format or the ring, metadata that
 * does not parse or belongs to another frame, or frames after the end of
 * the stream.  The consumer says why to the producer, posts an
 * error and keeps no descriptor it was given.
 *
 * The fixture and the harness are those of every element test
 * (tests/common/gpushare-check-elements.c).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <gst/check/gstcheck.h>
#include <gst/video/video.h>

#include <fcntl.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpushare-check-elements.h"
#include "gpushareclient.h"
#include "gpushareconn.h"
#include "gpushareframemeta.h"
#include "gpusharelane.h"
#include "gpusharetext.h"

/* ------------------------------------------------------------------------ */
/* 1. A hostile producer: the consumer errors out, cleanly */

typedef enum
{
  HP_GARBAGE,
  HP_GARBAGE_AFTER_ANNOUNCE,
  HP_HEADER_VERSION,
  HP_SCHEMA_VERSION,
  HP_SLOTS_PIPE,
  HP_SLOTS_UNSEALED,
  HP_SLOTS_WRONG_SIZE,
  HP_SLOTS_WRITABLE,
  HP_SIDE_WRITABLE,
  HP_SIDE_WRONG_SIZE,
  HP_FRAME_STALE_GENERATION,
  HP_FRAME_BAD_SLOT,
  HP_META_MALFORMED,
  HP_META_OTHER_FRAME,
  N_HP
} HostileProducer;

static const struct
{
  const gchar *name;
    GQuark (*domain) (void);
  gint code;
} hp_cases[N_HP] = {
  /* not gpushare from its first byte: another program at the path */
  {"garbage bytes", gst_resource_error_quark, GST_RESOURCE_ERROR_OPEN_READ},
  {"garbage bytes after an ANNOUNCE", gst_stream_error_quark,
      GST_STREAM_ERROR_DECODE},
  {"an ANNOUNCE with a header of major version 2", gst_core_error_quark,
      GST_CORE_ERROR_NEGOTIATION},
  {"an ANNOUNCE of schema major version 2", gst_core_error_quark,
      GST_CORE_ERROR_NEGOTIATION},
  {"SLOTS that are pipes", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS that are unsealed memfds", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS of the wrong size", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS that are memfds without a write seal", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS whose side memory has no write seal", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"SLOTS whose side memory is a page short", gst_resource_error_quark,
      GST_RESOURCE_ERROR_OPEN_READ},
  {"a FRAME with a stale generation", gst_stream_error_quark,
      GST_STREAM_ERROR_DECODE},
  {"a FRAME for a slot out of range", gst_stream_error_quark,
      GST_STREAM_ERROR_DECODE},
  {"a META whose region of interest overruns its entry",
      gst_stream_error_quark, GST_STREAM_ERROR_DECODE},
  {"a META for another FRAME than the next", gst_stream_error_quark,
      GST_STREAM_ERROR_DECODE},
};

/* a META of one region of interest (gpushareframemeta.h), for frame seq;
 * overrun: its type string says it is longer than the entry */
static void
make_meta (GpuShareMsg * msg, guint64 seq, gboolean overrun)
{
  guint8 *e = msg->u.meta.data;
  guint i;

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_META;
  msg->u.meta.sequence = seq;
  msg->u.meta.n_entries = 1;
  /* kind 1, reserved, 36 bytes: six numbers, a string of 4, no params */
  e[0] = 1;
  e[4] = 36;
  for (i = 0; i < 6; i++)
    e[GPUSHARE_META_ENTRY_HEADER + 4 * i] = i;
  e[GPUSHARE_META_ENTRY_HEADER + 24] = overrun ? 0xff : 4;
  memcpy (e + GPUSHARE_META_ENTRY_HEADER + 28, "face", 4);
  msg->u.meta.data_len = GPUSHARE_META_ENTRY_HEADER + 36;
}

/* a raw producer's side of the handshake, up to the consumer's ACCEPT */
static void
raw_announce (RawPeer * p, GpuShareMsg * msg)
{
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
  fail_unless (raw_send_msg (p, msg, NULL, 0));
  raw_expect (p, GPUSHARE_MSG_ACCEPT, msg, NULL, NULL);
  fail_unless_equals_int (msg->u.accept.mem_type, GPUSHARE_MEM_SYSTEM);
  fail_unless_equals_uint64 (msg->u.accept.instance, 0x1234);
}

/* HP_N_SLOTS system-memory slots, and with side_pages (minor 10) the side
 * memory's fd after them */
static void
raw_send_slots_side (RawPeer * p, GpuShareMsg * msg, gint * fds,
    guint64 epoch, guint32 side_pages)
{
  guint n_fds = HP_N_SLOTS + (side_pages ? 1 : 0);

  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.epoch = epoch;
  msg->u.slots.slot_size = HP_SLOT_SIZE;
  msg->u.slots.n_slots = HP_N_SLOTS;
  msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  msg->u.slots.side_pages = side_pages;
  fail_unless (raw_send_msg (p, msg, fds, n_fds));
  gpushare_close_fds (fds, n_fds);
}

static void
raw_send_slots (RawPeer * p, GpuShareMsg * msg, gint * fds, guint64 epoch)
{
  raw_send_slots_side (p, msg, fds, epoch, 0);
}

static GstElement *
hostile_consumer_start (const gchar * path, gint * listen_fd, RawPeer * raw)
{
  GstElement *p;

  *listen_fd = raw_listen (path);
  /* no last-sample: a consumed frame goes back to the producer at once */
  p = launch ("gpusharesrc name=src connection-timeout=%d ! fakesink "
      "sync=false enable-last-sample=false", TIMEOUT_MS);
  g_object_set (child (p, "src"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  raw_init (raw, raw_accept (*listen_fd));
  return p;
}

/* undoes hostile_consumer_start (): the consumer stops cleanly */
static void
hostile_consumer_stop (GstElement * pipeline, gint listen_fd, RawPeer * raw,
    const gchar * path)
{
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (pipeline);
  raw_clear (raw);
  close (listen_fd);
  unlink (path);
}

GST_START_TEST (test_hostile_producer)
{
  HostileProducer which = __i__;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  gint fds[HP_N_SLOTS + 1], pipe_fds[2] = { -1, -1 };
  guint before_slots = 0, i;
  GstElement *pipeline;
  GByteArray *b;
  gint listen_fd;
  RawPeer raw;

  GST_INFO ("producer sends %s", hp_cases[which].name);
  pipeline = hostile_consumer_start (path, &listen_fd, &raw);

  switch (which) {
    case HP_GARBAGE:
      raw_send_bytes (&raw, random_bytes (256), NULL, 0);
      break;
    case HP_GARBAGE_AFTER_ANNOUNCE:
      make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
      raw_send_bytes (&raw, build (msg, 0), NULL, 0);
      raw_send_bytes (&raw, random_bytes (256), NULL, 0);
      break;
    case HP_HEADER_VERSION:
      make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
      b = build (msg, 0);
      patch16 (b, HDR_OFF (version_major), GPUSHARE_VERSION_MAJOR + 1);
      raw_send_bytes (&raw, b, NULL, 0);
      break;
    case HP_SCHEMA_VERSION:
      /* the payload's own major, at offset 0 of the ANNOUNCE payload */
      make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
      b = build (msg, 0);
      patch16 (b, GPUSHARE_HEADER_SIZE, GPUSHARE_VERSION_MAJOR + 1);
      raw_send_bytes (&raw, b, NULL, 0);
      break;
    case HP_SLOTS_PIPE:
    case HP_SLOTS_UNSEALED:
    case HP_SLOTS_WRONG_SIZE:
    case HP_SLOTS_WRITABLE:
    case HP_SIDE_WRITABLE:
    case HP_SIDE_WRONG_SIZE:
      raw_announce (&raw, msg);
      before_slots = count_fds ();
      for (i = 0; i < HP_N_SLOTS; i++) {
        if (which == HP_SLOTS_PIPE) {
          if (i == 0)
            fail_unless (pipe2 (pipe_fds, O_CLOEXEC) == 0);
          fds[i] = fcntl (pipe_fds[1], F_DUPFD_CLOEXEC, 3);
        } else if (which == HP_SLOTS_UNSEALED) {
          fds[i] = make_memfd (HP_SLOT_SIZE, FALSE);
        } else if (which == HP_SLOTS_WRITABLE) {
          /* no shrinking, no growing, but writable by every holder: what
           * producers once sent */
          fds[i] = make_memfd (HP_SLOT_SIZE, FALSE);
          fail_unless (fcntl (fds[i], F_ADD_SEALS, F_SEAL_SHRINK |
                  F_SEAL_GROW | F_SEAL_SEAL) == 0);
        } else if (which == HP_SLOTS_WRONG_SIZE) {
          fds[i] = make_memfd (HP_SLOT_SIZE / 2, TRUE);
        } else {
          /* sound slots; their side memory is the fault */
          fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
        }
      }
      if (pipe_fds[1] >= 0) {
        close (pipe_fds[1]);
        before_slots++;         /* the read end we keep */
      }
      if (which == HP_SIDE_WRITABLE || which == HP_SIDE_WRONG_SIZE) {
        /* a page a slot, last (minor 10): writable by every holder, or
         * sealed but a page short */
        gboolean short_one = which == HP_SIDE_WRONG_SIZE;

        fds[HP_N_SLOTS] = make_memfd ((HP_N_SLOTS - (short_one ? 1 : 0)) *
            GPUSHARE_SIDE_PAGE, short_one);
        raw_send_slots_side (&raw, msg, fds, 1, 1);
      } else {
        raw_send_slots (&raw, msg, fds, 1);
      }
      if (which == HP_SLOTS_WRITABLE || which == HP_SIDE_WRITABLE
          || which == HP_SIDE_WRONG_SIZE) {
        /* the consumer says why before it gives up, and maps nothing */
        fail_unless_equals_int (raw_recv (&raw, msg, NULL, NULL, TIMEOUT_MS),
            RAW_MSG);
        fail_unless (msg->type == GPUSHARE_MSG_ERROR, "the consumer took "
            "%s: it answered %s", hp_cases[which].name,
            gpushare_msg_type_to_string (msg->type));
        fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_RESOURCE);
      }
      break;
    case HP_FRAME_STALE_GENERATION:
    case HP_FRAME_BAD_SLOT:
    case HP_META_MALFORMED:
    case HP_META_OTHER_FRAME:
      raw_announce (&raw, msg);
      before_slots = count_fds ();
      for (i = 0; i < HP_N_SLOTS; i++)
        fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
      raw_send_slots (&raw, msg, fds, 1);
      raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
      fail_unless_equals_uint64 (msg->u.mapped.epoch, 1);
      /* one good frame, and its release, so the next one is judged on
       * its own fault */
      make_frame (msg, 1, 0, 1, 1);
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
      fail_unless_equals_int (msg->u.release.slot, 0);
      fail_unless_equals_int (msg->u.release.generation, 1);
      if (which == HP_META_MALFORMED || which == HP_META_OTHER_FRAME) {
        make_meta (msg, which == HP_META_MALFORMED ? 2 : 3,
            which == HP_META_MALFORMED);
        fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      }
      if (which == HP_FRAME_STALE_GENERATION)
        make_frame (msg, 1, 0, 1, 2);
      else if (which == HP_FRAME_BAD_SLOT)
        make_frame (msg, 1, HP_N_SLOTS, 1, 2);
      else
        make_frame (msg, 1, 1, 1, 2);
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      /* the consumer says why before it gives up */
      raw_expect (&raw, GPUSHARE_MSG_ERROR, msg, NULL, NULL);
      fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_PROTOCOL);
      break;
    default:
      g_assert_not_reached ();
  }

  assert_error (pipeline, hp_cases[which].domain (), hp_cases[which].code);
  if (pipe_fds[0] >= 0) {
    fail_unless (wait_pipe_hangup (pipe_fds[0], TIMEOUT_MS),
        "the consumer kept a descriptor it refused");
    close (pipe_fds[0]);
    before_slots--;
  }
  /* every received fd is closed already, mapped or refused */
  if (before_slots)
    fail_unless_equals_int (wait_fd_count (before_slots, TIMEOUT_MS),
        before_slots);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* a raw producer's side of the handshake, to the consumer's MAPPED of
 * epoch 1: sealed system-memory slots */
static void
raw_producer_ready (RawPeer * p, GpuShareMsg * msg)
{
  gint fds[HP_N_SLOTS];
  guint i;

  raw_announce (p, msg);
  for (i = 0; i < HP_N_SLOTS; i++)
    fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
  raw_send_slots (p, msg, fds, 1);
  raw_expect (p, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
}

/* The consumer maps a slot of ours in full at the handshake (no page
 * fault on the first frames); a producer's slot that is a sparse file
 * must not be: a read fault on a hole of a memory file allocates a page,
 * so 64 slots of GPUSHARE_MAX_SLOT_SIZE announced and never written would
 * have the consumer allocate what the producer did not.  Two sealed slots
 * of 64 MiB with nothing in them: the consumer maps them (MAPPED) and
 * they stay empty. */
#define SPARSE_SLOT_SIZE (64 << 20)

GST_START_TEST (test_sparse_slots_not_allocated)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("sparse.sock");
  gint fds[HP_N_SLOTS], mine[HP_N_SLOTS];
  GstElement *pipeline;
  gint listen_fd;
  RawPeer raw;
  guint i;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  make_announce (msg, HP_N_SLOTS, SPARSE_SLOT_SIZE);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_ACCEPT, msg, NULL, NULL);
  for (i = 0; i < HP_N_SLOTS; i++) {
    fds[i] = make_memfd (SPARSE_SLOT_SIZE, TRUE);
    mine[i] = dup (fds[i]);
    fail_unless (mine[i] >= 0);
  }
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_SLOTS;
  msg->u.slots.epoch = 1;
  msg->u.slots.slot_size = SPARSE_SLOT_SIZE;
  msg->u.slots.n_slots = HP_N_SLOTS;
  msg->u.slots.mem_type = GPUSHARE_MEM_SYSTEM;
  fail_unless (raw_send_msg (&raw, msg, fds, HP_N_SLOTS));
  gpushare_close_fds (fds, HP_N_SLOTS);
  raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
  fail_unless_equals_int (count_memfd_maps ("test-slot"), HP_N_SLOTS);

  for (i = 0; i < HP_N_SLOTS; i++) {
    struct stat st;

    fail_unless (fstat (mine[i], &st) == 0);
    fail_unless (st.st_blocks == 0, "slot %u: the consumer allocated %"
        G_GUINT64_FORMAT " bytes of a slot the producer left empty", i,
        (guint64) st.st_blocks * 512);
  }
  gpushare_close_fds (mine, HP_N_SLOTS);
  assert_no_error (pipeline);
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* an EVENT of kind with text */
static void
make_event (GpuShareMsg * msg, guint32 kind, const gchar * text)
{
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_EVENT;
  msg->u.event.kind = kind;
  msg->u.event.text_len = strlen (text);
  memcpy (msg->u.event.text, text, msg->u.event.text_len);
}

/* Values a producer sends that GStreamer's own functions refuse with a
 * CRITICAL (an abort under G_DEBUG=fatal-criticals, a failure here): a
 * tags EVENT whose text is not a tag list, a stream-start of group 0 (no
 * event may carry it), a reference timestamp of GST_CLOCK_TIME_NONE, AFD
 * values GStreamer reserves.  The consumer drops each, counted, and
 * streams on. */
GST_START_TEST (test_producer_values_unchecked)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("values.sock");
  GstElement *pipeline;
  guint8 *e;
  gint listen_fd;
  RawPeer raw;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  raw_producer_ready (&raw, msg);

  make_event (msg, GPUSHARE_EVENT_STREAM_START,
      "stream-start, stream-id=(string)abc, group-id=(uint)0");
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  make_event (msg, GPUSHARE_EVENT_TAGS, "not-a-taglist, title=(string)x");
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  /* a reference timestamp: caps "timestamp/x-ntp", timestamp NONE */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_META;
  msg->u.meta.sequence = 1;
  msg->u.meta.n_entries = 1;
  e = msg->u.meta.data;
  e[0] = 2;
  e[4] = 4 + 15 + 16;
  e += GPUSHARE_META_ENTRY_HEADER;
  e[0] = 15;
  memcpy (e + 4, "timestamp/x-ntp", 15);
  memset (e + 19, 0xff, 8);
  memset (e + 27, 0, 8);
  msg->u.meta.data_len = GPUSHARE_META_ENTRY_HEADER + 4 + 15 + 16;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  make_frame (msg, 1, 0, 1, 1);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  /* AFD values GStreamer reserves (found by fuzz_src): 0 of DVB/ETSI, and
   * 1, 5, 6, 7 and 12 of every specification */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_META;
  msg->u.meta.sequence = 2;
  for (guint k = 0; k < 6; k++) {
    static const guint32 afd[][2] = { {GST_VIDEO_AFD_SPEC_DVB_ETSI, 0},
    {GST_VIDEO_AFD_SPEC_ATSC_A53, 1}, {GST_VIDEO_AFD_SPEC_ATSC_A53, 5},
    {GST_VIDEO_AFD_SPEC_DVB_ETSI, 6}, {GST_VIDEO_AFD_SPEC_ATSC_A53, 7},
    {GST_VIDEO_AFD_SPEC_SMPTE_ST2016_1, 12},
    };
    guint32 v[3] = { 0, GUINT32_TO_LE (afd[k][0]), GUINT32_TO_LE (afd[k][1]) };

    e = msg->u.meta.data + msg->u.meta.data_len;
    e[0] = GPUSHARE_META_AFD;
    e[4] = sizeof (v);
    memcpy (e + GPUSHARE_META_ENTRY_HEADER, v, sizeof (v));
    msg->u.meta.data_len += GPUSHARE_META_ENTRY_HEADER + sizeof (v);
    msg->u.meta.n_entries++;
  }
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  /* and it goes on */
  make_frame (msg, 1, 1, 1, 2);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  fail_unless_equals_uint64 (stat_u64 (child (pipeline, "src"),
          "metas-dropped"), 7);
  fail_unless_equals_uint64 (stat_u64 (child (pipeline, "src"),
          "events-dropped"), 1);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* EVENTs and CAPS a producer sends with no frame between are not queued
 * without bound: before the first frame (the src holds events back until
 * its segment is out) and while the streaming thread is held up, at most
 * 64 events wait, the oldest going first, counted in events-dropped, and
 * caps no frame followed are superseded by the next.  Before, a producer
 * grew the consumer's memory with every message. */
GST_START_TEST (test_producer_floods_events)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("flood.sock");
  GstElement *pipeline, *src;
  GstStructure *st;
  guint64 received = 0, dropped = 0;
  gint listen_fd;
  guint i;
  RawPeer raw;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  src = child (pipeline, "src");
  raw_producer_ready (&raw, msg);
  for (i = 0; i < 2000; i++) {
    if (i % 10 == 0) {
      GpuShareLayout *l = &msg->u.caps.layout;

      memset (msg, 0, sizeof (*msg));
      msg->type = GPUSHARE_MSG_CAPS;
      make_layout (l, HP_N_SLOTS, HP_SLOT_SIZE);
      l->epoch = 1;
    } else {
      gchar *text = g_strdup_printf ("flood, n=(int)%u", i);

      make_event (msg, GPUSHARE_EVENT_CUSTOM, text);
      g_free (text);
    }
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  }
  make_frame (msg, 1, 0, 1, 1);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  /* every event is counted: pushed, or dropped */
  for (i = 0; i < 500 && received + dropped < 1800; i++) {
    g_object_get (src, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "events-received", &received);
    gst_structure_get_uint64 (st, "events-dropped", &dropped);
    gst_structure_free (st);
    g_usleep (10000);
  }
  fail_unless_equals_uint64 (received + dropped, 1800);
  fail_unless (received <= 2 * 64, "%" G_GUINT64_FORMAT " events pushed "
      "before the first frame", received);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* A producer that names a new field in every custom event, after the
 * first frame: each became a quark of the consumer's process, kept for
 * its life.  Past GPUSHARE_TEXT_MAX_PEER_QUARKS of them the consumer drops
 * such events, counted (events-dropped), makes no more quarks of them,
 * and streams on; an event whose names it knows still goes through.
 * (GStreamer 1.26 on makes no quarks of the names: nothing is dropped.) */
GST_START_TEST (test_producer_names_new_fields)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("names.sock");
  const guint n = GPUSHARE_TEXT_MAX_PEER_QUARKS + 500;
  guint64 received = 0, dropped = 0;
  GstElement *pipeline, *src;
  GQuark before;
  GstStructure *st;
  gint listen_fd;
  guint i, k;
  RawPeer raw;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  src = child (pipeline, "src");
  raw_producer_ready (&raw, msg);
  make_frame (msg, 1, 0, 1, 1);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  before = quark_watermark ();
  /* in rounds of 32, each read before the next: none waits past the
   * streaming thread's queue */
  for (i = 0; i < n + 1; i += 32) {
    for (k = i; k < MIN (i + 32, n + 1); k++) {
      /* the last: a name the consumer has */
      gchar *text = k == n ? g_strdup ("gpushare-names, gpushare-name-7=1") :
          g_strdup_printf ("gpushare-names, gpushare-name-%u=(int)%u", k, k);

      make_event (msg, GPUSHARE_EVENT_CUSTOM, text);
      g_free (text);
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    }
    for (k = 0; k < 1000 && received + dropped < MIN (i + 32, n + 1); k++) {
      g_object_get (src, "stats", &st, NULL);
      gst_structure_get_uint64 (st, "events-received", &received);
      gst_structure_get_uint64 (st, "events-dropped", &dropped);
      gst_structure_free (st);
      if (received + dropped < MIN (i + 32, n + 1))
        g_usleep (1000);
    }
  }
  fail_unless_equals_uint64 (received + dropped, n + 1);
  fail_unless (quark_watermark () - before <= GPUSHARE_TEXT_MAX_PEER_QUARKS
      + 64, "%u quarks made of %u events", quark_watermark () - before, n);
  if (quark_watermark () - before < 64) {
    /* GStreamer 1.26 on keeps a structure's names as GstIdStr, no quarks:
     * nothing grows, every event goes through */
    fail_unless_equals_uint64 (dropped, 0);
  } else {
    fail_unless (received <= GPUSHARE_TEXT_MAX_PEER_QUARKS + 1
        && dropped + 1 >= n + 1 - GPUSHARE_TEXT_MAX_PEER_QUARKS,
        "%" G_GUINT64_FORMAT " events with a new name pushed, %"
        G_GUINT64_FORMAT " dropped", received, dropped);
    /* most went through until the bound (quarks other threads of the
     * process made meanwhile count too), and the one it knows, last */
    fail_unless (dropped < n + 1 - GPUSHARE_TEXT_MAX_PEER_QUARKS + 64,
        "%" G_GUINT64_FORMAT " dropped", dropped);
  }
  /* it streams on */
  make_frame (msg, 1, 1, 1, 2);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* The consumer side of the same promise: a producer that speaks another
 * major version is told so with ERROR VERSION. */
GST_START_TEST (test_src_answers_version)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  GstElement *pipeline;
  GByteArray *b;
  GArray *codes;
  gint listen_fd;
  RawPeer raw;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
  b = build (msg, 0);
  patch16 (b, HDR_OFF (version_major), GPUSHARE_VERSION_MAJOR + 1);
  raw_send_bytes (&raw, b, NULL, 0);
  assert_error (pipeline, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION);
  codes = raw_drain (&raw);
  fail_unless (codes->len == 1,
      "the producer got no ERROR VERSION, only the hang-up");
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_VERSION);
  g_array_unref (codes);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  raw_clear (&raw);
  close (listen_fd);
  unlink (path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* Heartbeat, consumer side: a producer that sends ANNOUNCE, reads the
 * ACCEPT and then hangs (socket open, nothing sent) is lost after 3
 * heartbeat intervals: producer-lost=error posts an ERROR, eos ends the
 * stream; the consumer PINGed it meanwhile and says why it leaves. */
GST_START_TEST (test_heartbeat_silent_producer)
{
  gboolean eos = (__i__ == 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("silent.sock");
  GstElement *pipeline;
  GstMessage *m;
  GArray *codes;
  gint64 t0, elapsed;
  guint n_pings;
  gint listen_fd;
  RawPeer raw;

  listen_fd = raw_listen (path);
  pipeline = launch ("gpusharesrc name=src connection-timeout=%d "
      "heartbeat-interval=100 producer-lost=%s ! fakesink sync=false",
      TIMEOUT_MS, eos ? "eos" : "error");
  g_object_set (child (pipeline, "src"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  raw_init (&raw, raw_accept (listen_fd));
  raw_announce (&raw, msg);
  t0 = g_get_monotonic_time ();

  m = pop_message (pipeline, GST_MESSAGE_ERROR | GST_MESSAGE_EOS, TIMEOUT_MS);
  elapsed = (g_get_monotonic_time () - t0) / 1000;
  fail_unless (m != NULL, "the consumer never noticed the silence");
  if (eos) {
    fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_EOS);
  } else {
    GError *error = NULL;

    fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_ERROR);
    gst_message_parse_error (m, &error, NULL);
    fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
            GST_RESOURCE_ERROR_READ), "%s", error->message);
    g_error_free (error);
  }
  gst_message_unref (m);
  fail_unless (elapsed >= 250 && elapsed < 1500, "lost after %"
      G_GINT64_FORMAT " ms, not after about 300", elapsed);

  codes = raw_drain_pings (&raw, &n_pings);
  fail_unless (n_pings >= 1, "the consumer sent no PING on an idle link");
  fail_unless_equals_int (codes->len, 1);
  fail_unless_equals_int (g_array_index (codes, guint32, 0),
      GPUSHARE_ERR_TIMEOUT);
  g_array_unref (codes);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* A producer that accepts nobody, its listen backlog full (stopped, or
 * its loop stuck): the consumer does not hang in connect () but keeps
 * trying until connection-timeout, then fails, saying so, and stops at
 * once.  It used to block for ever, and the pipeline with it. */
GST_START_TEST (test_producer_backlog_full)
{
  gchar *path = socket_path ("busy.sock");
  GstElement *pipeline;
  GError *error = NULL;
  gchar *debug = NULL;
  GstMessage *m;
  gint held[16], listen_fd;
  guint n_held, i;

  listen_fd = listen_full_backlog (path, held, G_N_ELEMENTS (held), &n_held);
  pipeline = launch ("gpusharesrc name=src connection-timeout=500 ! fakesink");
  g_object_set (child (pipeline, "src"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  m = pop_message (pipeline, GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (m != NULL, "no error before the connection timeout");
  gst_message_parse_error (m, &error, &debug);
  fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_READ), "%s", error->message);
  fail_unless (strstr (debug, "backlog is full") != NULL, "%s", debug);
  g_error_free (error);
  g_free (debug);
  gst_message_unref (m);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (pipeline);
  for (i = 0; i < n_held; i++)
    close (held[i]);
  close (listen_fd);
  unlink (path);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 2. A hostile producer's layouts: checked against the format and the
 * mapped ring before any buffer points into a slot */

typedef enum
{
  HL_STRIDE_SHORT,
  HL_STRIDE_ODD_YUY2,
  HL_UV_STRIDE_SHORT,
  HL_MEMORY_FEATURE,
  HL_CAPS_SLOT_SIZE,
  HL_CAPS_N_SLOTS,
  N_HL
} HostileLayout;

static const struct
{
  const gchar *name;
  const gchar *says;            /* what the ERROR to the producer names */
} hl_cases[N_HL] = {
  /* crashed the consumer's process in videoconvert (SIGSEGV) */
  {"an ARGB64 plane 32767 wide with stride 1 at the end of the slot",
      "plane 0: stride 1 is shorter than a row"},
  {"YUY2 at width 5 with 10-byte rows", "plane 0: stride 10 is shorter"},
  {"NV12 whose chroma rows are one byte short", "plane 1: stride 63"},
  {"caps that name a memory feature", "memory feature"},
  /* was accepted: criticals, empty buffers, slots never released */
  {"a CAPS that keeps the epoch but needs larger slots", "slot-size"},
  {"a CAPS that keeps the epoch but changes the slot count", "n-slots"},
};

GST_START_TEST (test_hostile_layout)
{
  HostileLayout which = __i__;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  GpuShareLayout *l = &msg->u.announce.layout;
  gint fds[HP_N_SLOTS];
  GstElement *pipeline;
  gint listen_fd;
  RawPeer raw;
  guint i;

  GST_INFO ("producer sends %s", hl_cases[which].name);
  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);

  switch (which) {
    case HL_STRIDE_SHORT:
      /* two rows of 262136 bytes claimed inside one 8 KiB frame */
      make_layout_of (l, "ARGB64", 32767, 2, HP_N_SLOTS, HP_SLOT_SIZE);
      l->frame_size = HP_SLOT_SIZE;
      l->offsets[0] = HP_SLOT_SIZE - 2;
      l->strides[0] = 1;
      break;
    case HL_STRIDE_ODD_YUY2:
      make_layout_of (l, "YUY2", 5, 4, HP_N_SLOTS, HP_SLOT_SIZE);
      l->strides[0] = 10;
      break;
    case HL_UV_STRIDE_SHORT:
      make_layout_of (l, "NV12", 64, 48, HP_N_SLOTS, HP_SLOT_SIZE);
      l->strides[1] = 63;
      break;
    case HL_MEMORY_FEATURE:
      make_layout_of (l, "NV12", 64, 48, HP_N_SLOTS, HP_SLOT_SIZE);
      fail_unless (gpushare_layout_set_caps (l, "video/x-raw(memory:"
              "CUDAMemory), format=NV12, width=64, height=48, "
              "framerate=30/1"));
      break;
    case HL_CAPS_SLOT_SIZE:
    case HL_CAPS_N_SLOTS:
      break;
    default:
      g_assert_not_reached ();
  }
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));

  if (which == HL_CAPS_SLOT_SIZE || which == HL_CAPS_N_SLOTS) {
    raw_expect (&raw, GPUSHARE_MSG_ACCEPT, msg, NULL, NULL);
    for (i = 0; i < HP_N_SLOTS; i++)
      fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
    raw_send_slots (&raw, msg, fds, 1);
    raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
    /* the ring stays epoch 1, of two 8 KiB slots */
    memset (msg, 0, sizeof (*msg));
    msg->type = GPUSHARE_MSG_CAPS;
    msg->u.caps.latency = GST_CLOCK_TIME_NONE;
    if (which == HL_CAPS_SLOT_SIZE) {
      make_layout_of (&msg->u.caps.layout, "NV12", 256, 192, HP_N_SLOTS,
          128 * 1024);
    } else {
      make_layout_of (&msg->u.caps.layout, "NV12", 64, 48, HP_N_SLOTS,
          HP_SLOT_SIZE);
      msg->u.caps.layout.n_slots = HP_N_SLOTS + 2;
    }
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    /* a frame in the claimed layout, which would be wrapped past the slot */
    make_frame (msg, 1, 0, 1, 1);
    raw_send_msg (&raw, msg, NULL, 0);
  }

  /* the consumer says why, naming the field, before it gives up */
  raw_expect (&raw, GPUSHARE_MSG_ERROR, msg, NULL, NULL);
  fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_PROTOCOL);
  fail_unless (strstr (msg->u.error.text, hl_cases[which].says) != NULL,
      "'%s' does not say '%s'", msg->u.error.text, hl_cases[which].says);
  assert_error (pipeline, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* After its EOS, the consumer gives back the frames of a producer that goes
 * on (a flush on its side) unread, instead of calling them "before the
 * slots were mapped" and failing. */
GST_START_TEST (test_frame_after_eos)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("hostile.sock");
  gint fds[HP_N_SLOTS];
  GstElement *pipeline;
  GstMessage *eos;
  gint listen_fd;
  RawPeer raw;
  guint i;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  raw_producer_ready (&raw, msg);
  make_frame (msg, 1, 0, 1, 1);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);

  make_simple (msg, GPUSHARE_MSG_EOS);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  eos = pop_message (pipeline, GST_MESSAGE_EOS | GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (eos && GST_MESSAGE_TYPE (eos) == GST_MESSAGE_EOS);
  gst_message_unref (eos);

  /* two more frames: each comes back at once, unread */
  for (i = 0; i < 2; i++) {
    make_frame (msg, 1, 1 - i, 1 + i, 2 + i);
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
    fail_unless_equals_int (msg->u.release.slot, 1 - i);
    fail_unless_equals_int (msg->u.release.generation, 1 + i);
    fail_unless_equals_uint64 (msg->u.release.sequence, 2 + i);
  }
  /* a new ring after the end (a caps change, a quarantine for another
   * consumer): followed, mapped, and its frames come back unread too */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_CAPS;
  msg->u.caps.latency = GST_CLOCK_TIME_NONE;
  make_layout (&msg->u.caps.layout, HP_N_SLOTS, HP_SLOT_SIZE);
  msg->u.caps.layout.epoch = 2;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  for (i = 0; i < HP_N_SLOTS; i++)
    fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
  raw_send_slots (&raw, msg, fds, 2);
  raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
  fail_unless_equals_uint64 (msg->u.mapped.epoch, 2);
  make_frame (msg, 2, 0, 1, 4);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  fail_unless_equals_uint64 (msg->u.release.epoch, 2);
  fail_unless_equals_uint64 (msg->u.release.sequence, 4);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 3. The frame lane (minor 7), from a fake producer: frames, metas and
 * events in their places, and a producer that breaks the lane's rules */

/* the name the core gives its lanes' memfds (gpusharelane.c), and ours */
#define LANE_MEMFD_NAME "gpushare-lane"
#define TEST_LANE_MEMFD_NAME "test-lane"

/* The fake producer's lane: made by the core's producer side, and mapped
 * a second time here, so that its words and entries can also be written
 * as a hostile producer would */
typedef struct
{
  GpuShareLane *lane;
  GpuShareLaneInfo info;
  guint8 *base;
} FakeLane;

/* the entries of the lanes fake_lane_new () makes */
static guint32 fake_lane_entries = GPUSHARE_LANE_ENTRIES;

static void
fake_lane_new_sized (FakeLane * fl, guint32 meta_size)
{
  GError *error = NULL;
  gint fd;

  fl->lane = gpushare_lane_new (fake_lane_entries, meta_size, &error);
  fail_unless (fl->lane != NULL, "%s", error ? error->message : "?");
  gpushare_lane_get_info (fl->lane, &fl->info);
  fd = gpushare_lane_dup_fd (fl->lane, NULL);
  fail_unless (fd >= 0);
  fl->base = mmap (NULL, fl->info.size, PROT_READ | PROT_WRITE, MAP_SHARED,
      fd, 0);
  fail_unless (fl->base != MAP_FAILED);
  close (fd);
}

/* with a meta region, as a producer of minor 9 makes it */
static void
fake_lane_new (FakeLane * fl)
{
  fake_lane_new_sized (fl, GPUSHARE_LANE_META_REGION);
}

/* metas of n entries of kind 0x4242 (a newer producer's: checked for
 * their chain, then skipped), len bytes in all */
static GpuShareFrameMetas *
fake_metas (guint n, gsize len, guint8 fill)
{
  GpuShareFrameMetas *m = gpushare_frame_metas_new (len);
  gsize each = len / n, at = 0;
  guint i;

  g_assert (each >= GPUSHARE_META_ENTRY_HEADER);
  for (i = 0; i < n; i++) {
    guint32 body = (i + 1 < n ? each : len - at) - GPUSHARE_META_ENTRY_HEADER;
    guint16 kind = GUINT16_TO_LE (0x4242);

    memset (m->data + at, 0, GPUSHARE_META_ENTRY_HEADER);
    memcpy (m->data + at, &kind, 2);
    body = GUINT32_TO_LE (body);
    memcpy (m->data + at + 4, &body, 4);
    at += GPUSHARE_META_ENTRY_HEADER;
    memset (m->data + at, fill, GUINT32_FROM_LE (body));
    at += GUINT32_FROM_LE (body);
  }
  m->data_len = len;
  m->n_entries = n;
  return m;
}

static void
fake_lane_free (FakeLane * fl)
{
  if (!fl->lane)
    return;
  munmap (fl->base, fl->info.size);
  gpushare_lane_free (fl->lane);
  fl->lane = NULL;
}

/* LANE with info and fd (ours: the caller closes it) */
static void
raw_send_lane (RawPeer * p, const GpuShareLaneInfo * info, gint fd)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);

  msg->type = GPUSHARE_MSG_LANE;
  msg->u.lane = *info;
  fail_unless (raw_send_msg (p, msg, &fd, 1));
  g_free (msg);
}

static void
fake_lane_send (RawPeer * p, FakeLane * fl)
{
  gint fd = gpushare_lane_dup_fd (fl->lane, NULL);

  fail_unless (fd >= 0);
  raw_send_lane (p, &fl->info, fd);
  close (fd);
}

/* a FRAME entry: make_frame ()'s fields, and an offset of its own */
static void
fake_lane_frame (GpuShareLaneEntry * e, guint64 epoch, guint32 slot,
    guint32 generation, guint64 sequence)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);

  make_frame (msg, epoch, slot, generation, sequence);
  memset (e, 0, sizeof (*e));
  e->kind = GPUSHARE_LANE_ENTRY_FRAME;
  e->frame = msg->u.frame;
  e->frame.offset = 100 + sequence;
  e->frame.offset_end = 101 + sequence;
  e->written_us = g_get_monotonic_time ();
  g_free (msg);
}

static void
fake_lane_push_frame (FakeLane * fl, guint64 epoch, guint32 slot,
    guint32 generation, guint64 sequence)
{
  GpuShareLaneEntry e;

  fake_lane_frame (&e, epoch, slot, generation, sequence);
  fail_unless_equals_int (gpushare_lane_push (fl->lane, &e, NULL),
      GPUSHARE_LANE_OK);
}

static void
fake_lane_push_mark (FakeLane * fl, guint64 mark)
{
  GpuShareLaneEntry e = { 0, };

  e.kind = GPUSHARE_LANE_ENTRY_MARK;
  e.mark = mark;
  fail_unless_equals_int (gpushare_lane_push (fl->lane, &e, NULL),
      GPUSHARE_LANE_OK);
}

/* by hand: entry e (its index as given) at position, then head, and the
 * reader woken */
static void
fake_lane_write (FakeLane * fl, guint64 position, const GpuShareLaneEntry * e,
    guint64 head)
{
  if (e)
    fail_unless (gpushare_lane_entry_build (e, fl->base +
            GPUSHARE_LANE_HEADER_SIZE + (position % fl->info.n_entries) *
            GPUSHARE_LANE_ENTRY_SIZE));
  __atomic_store_n ((guint64 *) (fl->base + GPUSHARE_LANE_HEAD_OFFSET), head,
      __ATOMIC_RELEASE);
  gpushare_lane_ring (fl->lane);
}

static guint64
fake_lane_tail (FakeLane * fl)
{
  return __atomic_load_n ((guint64 *) (fl->base + GPUSHARE_LANE_TAIL_OFFSET),
      __ATOMIC_ACQUIRE);
}

/* what reached the src's pad, one line each: buffers (timestamps,
 * offsets, whether a region of interest came with them) and custom
 * downstream events (their name) */
static GstPadProbeReturn
log_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GAsyncQueue *log = user_data;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
    GstVideoRegionOfInterestMeta *roi =
        gst_buffer_get_video_region_of_interest_meta (buf);

    g_async_queue_push (log, g_strdup_printf ("buffer pts=%" G_GUINT64_FORMAT
            " offset=%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT " roi=%s",
            GST_BUFFER_PTS (buf), GST_BUFFER_OFFSET (buf),
            GST_BUFFER_OFFSET_END (buf),
            roi ? g_quark_to_string (roi->roi_type) : "none"));
  } else {
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);

    if (GST_EVENT_TYPE (event) == GST_EVENT_CUSTOM_DOWNSTREAM)
      g_async_queue_push (log, g_strdup_printf ("event %s",
              gst_structure_get_name (gst_event_get_structure (event))));
  }
  return GST_PAD_PROBE_OK;
}

static void
expect_log (GAsyncQueue * log, const gchar * line)
{
  gchar *got = g_async_queue_timeout_pop (log, TIMEOUT_MS * 1000ll);

  fail_unless (got != NULL, "nothing reached the pad, expected '%s'", line);
  fail_unless_equals_string (got, line);
  g_free (got);
}

/* the next release: the src writes it into the lane (a producer that
 * does not wait for a slot hears no PING of it) */
static void
expect_release (FakeLane * fl, GpuShareRelease * r, guint32 slot,
    guint32 generation, guint64 sequence)
{
  gint64 until = g_get_monotonic_time () + TIMEOUT_MS * 1000ll;
  GpuShareLaneResult res;

  while ((res = gpushare_lane_release_pop (fl->lane, r)) ==
      GPUSHARE_LANE_EMPTY && g_get_monotonic_time () < until)
    g_usleep (2000);
  fail_unless_equals_int (res, GPUSHARE_LANE_OK);
  fail_unless_equals_int (r->slot, slot);
  fail_unless_equals_int (r->generation, generation);
  fail_unless_equals_uint64 (r->sequence, sequence);
}

/* the src's wake-ahead and heartbeat-interval (0: its default) in the
 * pipelines lane_consumer_start () makes */
static guint lane_wake_ahead;
static guint lane_heartbeat_ms;

/* the src, frame-lane as given, connected to a raw producer */
static GstElement *
lane_consumer_start (const gchar * path, gboolean frame_lane,
    gint * listen_fd, RawPeer * raw)
{
  GstElement *p;

  *listen_fd = raw_listen (path);
  p = launch ("gpusharesrc name=src connection-timeout=%d ! fakesink "
      "sync=false enable-last-sample=false", TIMEOUT_MS);
  g_object_set (child (p, "src"), "socket-path", path, "frame-lane",
      frame_lane, "wake-ahead", lane_wake_ahead, NULL);
  if (lane_heartbeat_ms)
    g_object_set (child (p, "src"), "heartbeat-interval", lane_heartbeat_ms,
        NULL);
  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  raw_init (raw, raw_accept (*listen_fd));
  return p;
}

/* The src with a frame lane, connected to a raw producer that answered
 * its ACCEPT (which asks for a lane) with a real lane and SLOTS of
 * HP_N_SLOTS memfds, mapped as epoch 1; what reaches the src's pad goes
 * to log (log_probe ()) */
static GstElement *
lane_stream_start (const gchar * path, GAsyncQueue * log, gint * listen_fd,
    RawPeer * raw, FakeLane * fl)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint fds[HP_N_SLOTS];
  GstElement *pipeline;
  GstPad *pad;
  guint i;

  pipeline = lane_consumer_start (path, TRUE, listen_fd, raw);
  pad = gst_element_get_static_pad (child (pipeline, "src"), "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, log_probe, log, NULL);
  gst_object_unref (pad);
  raw_announce (raw, msg);
  fail_unless_equals_int (msg->u.accept.schema_minor, GPUSHARE_VERSION_MINOR);
  fail_unless (msg->u.accept.flags & GPUSHARE_ACCEPT_FLAG_LANE,
      "the src did not ask for a lane");
  fail_unless (msg->u.accept.flags & GPUSHARE_ACCEPT_FLAG_HEADS_UP,
      "the src did not ask for heads-up");

  fake_lane_new (fl);
  fake_lane_send (raw, fl);
  for (i = 0; i < HP_N_SLOTS; i++)
    fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
  raw_send_slots (raw, msg, fds, 1);
  raw_expect (raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
  fail_unless_equals_uint64 (msg->u.mapped.epoch, 1);
  g_free (msg);
  return pipeline;
}

/* A producer that answers the LANE flag of the src's ACCEPT with a real
 * lane writes its frames there: each becomes a buffer with the FRAME's
 * timestamps and offsets, and goes back as a RELEASE on the socket; a
 * META on the socket with its MARK before a FRAME entry is that buffer's,
 * an EVENT with its MARK between two frames comes between their buffers.
 * The src moves the lane's tail past what it read.  With frame-lane=false
 * it does not ask. */
GST_START_TEST (test_lane_fake_producer_streams)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("lane.sock");
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  GstElement *pipeline;
  gint listen_fd;
  GpuShareRelease rel;
  FakeLane fl;
  RawPeer raw;
  gchar *line;
  guint i;

  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);

  /* a frame */
  fake_lane_push_frame (&fl, 1, 0, 1, 1);
  expect_release (&fl, &rel, 0, 1, 1);
  /* its META, then the MARK of it and the frame it belongs to */
  make_meta (msg, 2, FALSE);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fake_lane_push_mark (&fl, 1);
  fake_lane_push_frame (&fl, 1, 1, 1, 2);
  expect_release (&fl, &rel, 1, 1, 2);
  /* an EVENT between two frames */
  make_event (msg, GPUSHARE_EVENT_CUSTOM, "lane-event, n=(int)1");
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fake_lane_push_mark (&fl, 2);
  fake_lane_push_frame (&fl, 1, 0, 2, 3);
  expect_release (&fl, &rel, 0, 2, 3);

  for (i = 1; i <= 3; i++) {
    if (i == 3)
      expect_log (log, "event lane-event");
    line = g_strdup_printf ("buffer pts=%" G_GUINT64_FORMAT " offset=%u-%u "
        "roi=%s", i * (GST_SECOND / 30), 100 + i, 101 + i,
        i == 2 ? "face" : "none");
    expect_log (log, line);
    g_free (line);
  }
  line = g_async_queue_try_pop (log);
  fail_unless (line == NULL, "then '%s'", line);
  /* five entries read, the tail says so */
  fail_unless_equals_uint64 (fake_lane_tail (&fl), 5);
  fail_unless_equals_uint64 (stat_u64 (child (pipeline, "src"),
          "frames-received"), 3);

  /* EOS and its MARK: the end of the stream; a frame in the lane after
   * it comes back unread */
  make_simple (msg, GPUSHARE_MSG_EOS);
  msg->u.eos.last_sequence = 3;
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fake_lane_push_mark (&fl, 3);
  {
    GstMessage *eos = pop_message (pipeline, GST_MESSAGE_EOS |
        GST_MESSAGE_ERROR, TIMEOUT_MS);

    fail_unless (eos && GST_MESSAGE_TYPE (eos) == GST_MESSAGE_EOS);
    gst_message_unref (eos);
  }
  fake_lane_push_frame (&fl, 1, 1, 2, 4);
  expect_release (&fl, &rel, 1, 2, 4);
  line = g_async_queue_try_pop (log);
  fail_unless (line == NULL, "a frame after the end: '%s'", line);
  fail_unless_equals_uint64 (fake_lane_tail (&fl), 7);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);
  fail_unless_equals_int (count_memfd_maps (LANE_MEMFD_NAME), 0);

  /* frame-lane=false: no flag */
  pipeline = lane_consumer_start (path, FALSE, &listen_fd, &raw);
  raw_announce (&raw, msg);
  fail_unless_equals_int (msg->u.accept.flags & GPUSHARE_ACCEPT_FLAG_LANE, 0);
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);

  g_async_queue_unref (log);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* the PINGs that come on the raw producer's socket within ms */
static guint
count_pings (RawPeer * raw, gint ms)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gint64 until = g_get_monotonic_time () + ms * 1000ll;
  gint64 left;
  guint n = 0;

  while ((left = (until - g_get_monotonic_time ()) / 1000) > 0) {
    RawResult r = raw_recv (raw, msg, NULL, NULL, (gint) left);

    if (r != RAW_MSG)
      break;
    fail_if (msg->type == GPUSHARE_MSG_ERROR, "ERROR %s: %s",
        gpushare_error_code_to_string (msg->u.error.code), msg->u.error.text);
    n += msg->type == GPUSHARE_MSG_PING;
  }
  g_free (msg);
  return n;
}

/* A consumer (heartbeat 200 ms) whose releases its producer reads from
 * the lane counts that as heard: it sends no PING on a socket that
 * carries nothing else while the producer reads them, and PINGs again
 * once the producer stops (the releases wait in the lane: the producer
 * is busy, or gone), within an interval and a quarter. */
GST_START_TEST (test_lane_releases_are_heard)
{
  gchar *path = socket_path ("heard.sock");
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  GstElement *pipeline;
  GpuShareRelease rel;
  guint i, n_pings = 0;
  gint listen_fd;
  FakeLane fl;
  RawPeer raw;

  lane_heartbeat_ms = 200;
  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  lane_heartbeat_ms = 0;

  /* 1.2 s of frames, 40 ms apart, each release read at once (one PING at
   * most, before the first releases read are seen) */
  for (i = 0; i < 30; i++) {
    fake_lane_push_frame (&fl, 1, i % HP_N_SLOTS, i / HP_N_SLOTS + 1, i + 1);
    expect_release (&fl, &rel, i % HP_N_SLOTS, i / HP_N_SLOTS + 1, i + 1);
    n_pings += count_pings (&raw, 40);
  }
  fail_unless (n_pings <= 1, "%u PINGs while the producer read every "
      "release from the lane", n_pings);
  /* 1 s more whose releases nobody reads */
  n_pings = 0;
  for (i = 30; i < 40; i++) {
    fake_lane_push_frame (&fl, 1, i % HP_N_SLOTS, i / HP_N_SLOTS + 1, i + 1);
    n_pings += count_pings (&raw, 100);
  }
  fail_unless (n_pings >= 2, "%u PINGs in 1 s once the producer stopped "
      "reading the releases", n_pings);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);
  g_async_queue_unref (log);
  g_free (path);
}

GST_END_TEST;

/* process CPU time, in microseconds */
static gint64
cpu_time_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* The lane's reader that met a MARK before the control thread has the
 * message it stands for waits asleep for that message, with frames behind
 * the MARK in the lane: here the message comes 600 ms late, the src's
 * threads use a small part of that time (a reader that looked again at
 * once, the lane not being empty, spun a core: under valgrind it starved
 * the control thread that was to deliver the message), and the event then
 * comes before the frame. */
GST_START_TEST (test_lane_mark_waits_asleep)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("lane.sock");
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  GstElement *pipeline;
  gint64 cpu, wall;
  gint listen_fd;
  GpuShareRelease rel;
  FakeLane fl;
  RawPeer raw;
  gchar *line;

  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  fake_lane_push_frame (&fl, 1, 0, 1, 1);
  expect_release (&fl, &rel, 0, 1, 1);
  expect_log (log, "buffer pts=33333333 offset=101-102 roi=none");

  /* the MARK and a frame behind it; the EVENT late */
  fake_lane_push_mark (&fl, 1);
  fake_lane_push_frame (&fl, 1, 1, 1, 2);
  wall = g_get_monotonic_time ();
  cpu = cpu_time_us ();
  g_usleep (600 * 1000);
  cpu = cpu_time_us () - cpu;
  wall = g_get_monotonic_time () - wall;
  fail_unless (cpu < wall / 4, "the src's threads used %" G_GINT64_FORMAT
      " us of CPU in %" G_GINT64_FORMAT " us waiting for a MARK's message",
      cpu, wall);
  line = g_async_queue_try_pop (log);
  fail_unless (line == NULL, "before the event: '%s'", line);
  make_event (msg, GPUSHARE_EVENT_CUSTOM, "late-event, n=(int)1");
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  expect_release (&fl, &rel, 1, 1, 2);
  expect_log (log, "event late-event");
  expect_log (log, "buffer pts=66666666 offset=102-103 roi=none");
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);
  g_async_queue_unref (log);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* a reader asleep on its lane's bell, for a second at most */
typedef struct
{
  GpuShareLane *reader;
  gint started;
  gint done;
  gint64 slept_us;
} HeadsUpSleeper;

static gpointer
heads_up_sleeper (gpointer data)
{
  HeadsUpSleeper *sl = data;
  guint32 bell = gpushare_lane_bell (sl->reader);
  gint64 t0 = g_get_monotonic_time ();

  g_atomic_int_set (&sl->started, 1);
  gpushare_lane_sleep (sl->reader, bell, G_USEC_PER_SEC);
  sl->slept_us = g_get_monotonic_time () - t0;
  g_atomic_int_set (&sl->done, 1);
  return NULL;
}

/* a producer that writes its announced frame after delay_us */
typedef struct
{
  FakeLane *fl;
  gulong delay_us;
  guint64 sequence;
} HeadsUpWriter;

static gpointer
heads_up_writer (gpointer data)
{
  HeadsUpWriter *w = data;

  g_usleep (w->delay_us);
  fake_lane_push_frame (w->fl, 1, 0, 1, w->sequence);
  return NULL;
}

/* Heads-up (minor 8), the reader's side alone: a consumer's lane on the
 * fake producer's memfd.  It polls only for the entry announced next,
 * catches it (written before or while it polls), stops at a ring of the
 * bell, and, after a miss or an entry that came late, polls again only
 * after 1, 2, 4 .. entries; its sleep does not begin while an announced
 * entry is due, and an announcement wakes it. */
GST_START_TEST (test_lane_heads_up)
{
  GpuShareLane *reader;
  GpuShareLaneEntry e;
  GError *error = NULL;
  FakeLane fl;
  guint64 *announced;
  volatile guint32 *waiting, *bellw;
  gint64 spun, t0;
  guint i, seq = 0;

  fake_lane_new (&fl);
  announced = (guint64 *) (fl.base + GPUSHARE_LANE_ANNOUNCED_OFFSET);
  waiting = (guint32 *) (fl.base + GPUSHARE_LANE_WAITING_OFFSET);
  bellw = (guint32 *) (fl.base + GPUSHARE_LANE_BELL_OFFSET);
  reader = gpushare_lane_open (gpushare_lane_dup_fd (fl.lane, NULL),
      &fl.info, &error);
  fail_unless (reader != NULL, "%s", error ? error->message : "?");

  /* not asked for: an announcement means nothing */
  gpushare_lane_announce (fl.lane);
  fail_unless_equals_uint64 (*announced, 1);
  fail_unless_equals_int (gpushare_lane_spin (reader,
          gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_NONE);
  gpushare_lane_set_heads_up (reader, GPUSHARE_CLIENT_LANE_SPIN_MAX_US);

  /* announced and written: caught */
  fake_lane_push_frame (&fl, 1, 0, 1, ++seq);
  fail_unless_equals_int (gpushare_lane_spin (reader,
          gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_HIT);
  fail_unless_equals_int (gpushare_lane_pop (reader, &e, NULL),
      GPUSHARE_LANE_OK);
  /* afresh: a slow machine (valgrind) may have taken that for a late one */
  gpushare_lane_set_heads_up (reader, GPUSHARE_CLIENT_LANE_SPIN_MAX_US);

  /* any other value is no announcement: no spin, and the sleep sleeps */
  for (i = 0; i < 4; i++) {
    static const guint64 garbage[] = { 0, 1, 3, G_MAXUINT64 };

    *announced = garbage[i];
    fail_unless_equals_int (gpushare_lane_spin (reader,
            gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_NONE);
    fail_unless_equals_int (spun, 0);
  }
  t0 = g_get_monotonic_time ();
  fail_if (gpushare_lane_sleep (reader, gpushare_lane_bell (reader), 20000));
  fail_unless (g_get_monotonic_time () - t0 >= 20000);

  /* announced, not written: its whole budget, once, then a miss; the
   * sleep does not wait while it is due */
  gpushare_lane_announce (fl.lane);
  t0 = g_get_monotonic_time ();
  fail_unless (gpushare_lane_sleep (reader, gpushare_lane_bell (reader),
          G_USEC_PER_SEC));
  fail_unless (g_get_monotonic_time () - t0 < G_USEC_PER_SEC / 2);
  fail_unless_equals_int (gpushare_lane_spin (reader,
          gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_MISSED);
  fail_unless (spun >= GPUSHARE_CLIENT_LANE_SPIN_MAX_US, "spun %"
      G_GINT64_FORMAT " us", spun);
  /* the next entry is not polled for (1 to skip) */
  fail_unless_equals_int (gpushare_lane_spin (reader,
          gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_NONE);
  fake_lane_push_frame (&fl, 1, 1, 1, ++seq);
  fail_unless_equals_int (gpushare_lane_pop (reader, &e, NULL),
      GPUSHARE_LANE_OK);

  /* a ring of the bell ends a spin; what is spun for one entry adds up
   * to the budget, however often it rings */
  gpushare_lane_announce (fl.lane);
  {
    guint32 bell = gpushare_lane_bell (reader);
    gint64 total = 0;

    gpushare_lane_ring (fl.lane);
    fail_unless_equals_int (gpushare_lane_spin (reader, bell, &spun),
        GPUSHARE_LANE_SPIN_RUNG);
    total += spun;
    fail_unless_equals_int (gpushare_lane_spin (reader,
            gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_MISSED);
    total += spun;
    fail_unless (total >= GPUSHARE_CLIENT_LANE_SPIN_MAX_US
        && spun <= GPUSHARE_CLIENT_LANE_SPIN_MAX_US + 100000);
  }
  /* a second miss in a row: two entries before the next poll */
  for (i = 0; i < 2; i++) {
    fail_unless_equals_int (gpushare_lane_spin (reader,
            gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_NONE);
    fake_lane_push_frame (&fl, 1, i, 1, ++seq);
    fail_unless_equals_int (gpushare_lane_pop (reader, &e, NULL),
        GPUSHARE_LANE_OK);
    gpushare_lane_announce (fl.lane);
  }
  fake_lane_push_frame (&fl, 1, 0, 1, ++seq);
  fail_unless_equals_int (gpushare_lane_spin (reader,
          gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_HIT);
  fail_unless_equals_int (gpushare_lane_pop (reader, &e, NULL),
      GPUSHARE_LANE_OK);

  /* an announcement wakes a reader asleep on the bell at once (it would
   * sleep its whole second otherwise): it sleeps for either */
  {
    HeadsUpSleeper sl = { reader, 0, 0, 0 };
    GThread *t = g_thread_new ("sleeper", heads_up_sleeper, &sl);

    while (!g_atomic_int_get (&sl.started))
      g_usleep (1000);
    g_usleep (50 * 1000);
    fail_unless_equals_int (*waiting, GPUSHARE_LANE_WAITING_ANY);
    gpushare_lane_announce (fl.lane);
    g_thread_join (t);
    fail_unless (sl.slept_us < G_USEC_PER_SEC / 2, "the announcement woke "
        "the reader after %" G_GINT64_FORMAT " us", sl.slept_us);
  }

  /* a reader that would not poll now (its polls skipped after a miss)
   * sleeps for the entry alone: the producer does not ring its bell for
   * an announcement, which would wake it for nothing, and the entry wakes
   * it */
  fail_unless_equals_int (gpushare_lane_spin (reader,
          gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_MISSED);
  {
    HeadsUpSleeper sl = { reader, 0, 0, 0 };
    GThread *t = g_thread_new ("sleeper", heads_up_sleeper, &sl);
    guint32 rung;

    while (!g_atomic_int_get (&sl.started))
      g_usleep (1000);
    g_usleep (50 * 1000);
    fail_unless_equals_int (*waiting, GPUSHARE_LANE_WAITING_ENTRIES);
    rung = *bellw;
    gpushare_lane_announce (fl.lane);
    fail_unless_equals_int (*bellw, rung);
    g_usleep (100 * 1000);
    fail_if (g_atomic_int_get (&sl.done), "an announcement woke a reader "
        "that would not poll for it");
    fake_lane_push_frame (&fl, 1, 1, 1, ++seq);
    g_thread_join (t);
    fail_unless (sl.slept_us >= 150 * 1000 && sl.slept_us < G_USEC_PER_SEC,
        "the entry woke the reader after %" G_GINT64_FORMAT " us", sl.slept_us);
    fail_unless_equals_int (gpushare_lane_pop (reader, &e, NULL),
        GPUSHARE_LANE_OK);
    gpushare_lane_announce (fl.lane);
  }

  /* an entry written while the reader polls is caught (a budget of 5 s
   * here, so that the writer's thread surely comes in time) */
  gpushare_lane_set_heads_up (reader, 5 * G_USEC_PER_SEC);
  {
    HeadsUpWriter w = { &fl, 20 * 1000, ++seq };
    GThread *t = g_thread_new ("writer", heads_up_writer, &w);

    fail_unless_equals_int (gpushare_lane_spin (reader,
            gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_HIT);
    fail_unless (spun >= 10 * 1000, "spun %" G_GINT64_FORMAT " us", spun);
    g_thread_join (t);
    fail_unless_equals_int (gpushare_lane_pop (reader, &e, NULL),
        GPUSHARE_LANE_OK);
  }

  /* entries that come only after half the budget back off as misses do:
   * after two of them in a row the next one is not polled for */
  gpushare_lane_set_heads_up (reader, 200 * 1000);
  for (i = 0; i < 2; i++) {
    HeadsUpWriter w = { &fl, 120 * 1000, ++seq };
    GpuShareLaneSpin res;
    GThread *t;

    gpushare_lane_announce (fl.lane);
    t = g_thread_new ("writer", heads_up_writer, &w);
    /* late, or on a slow machine too late: either backs off */
    res = gpushare_lane_spin (reader, gpushare_lane_bell (reader), &spun);
    fail_unless (res == GPUSHARE_LANE_SPIN_HIT
        || res == GPUSHARE_LANE_SPIN_MISSED, "%d", res);
    fail_unless (spun > 100 * 1000, "spun %" G_GINT64_FORMAT " us", spun);
    g_thread_join (t);
    fail_unless_equals_int (gpushare_lane_pop (reader, &e, NULL),
        GPUSHARE_LANE_OK);
  }
  gpushare_lane_announce (fl.lane);
  fail_unless_equals_int (gpushare_lane_spin (reader,
          gpushare_lane_bell (reader), &spun), GPUSHARE_LANE_SPIN_NONE);

  gpushare_lane_free (reader);
  fake_lane_free (&fl);
}

GST_END_TEST;

/* Metas in the lane (minor 9), both sides of the core alone: each frame's
 * metas come out as they went in, beside their entry; bytes an unread
 * entry points at are never written again (the producer finds no room
 * instead, and writes nothing), those of entries read are; metas never
 * cross the region's end but start its next lap; a frame without metas
 * has none; metas larger than the region, or than a frame may have, or
 * in a lane without a region find no room */
GST_START_TEST (test_lane_metas)
{
  const gsize region = GPUSHARE_LANE_MIN_META_REGION;
  GpuShareFrameMetas *m, *got;
  GpuShareLane *writer, *reader, *plain;
  GpuShareLaneInfo info;
  GpuShareLaneEntry e;
  guint64 pushed = 0, popped = 0, at;
  guint i, n_full;

  writer = gpushare_lane_new (GPUSHARE_LANE_MIN_ENTRIES, region, NULL);
  fail_unless (writer != NULL);
  gpushare_lane_get_info (writer, &info);
  fail_unless_equals_int (info.meta_size, region);
  fail_unless_equals_uint64 (info.size,
      gpushare_lane_size (GPUSHARE_LANE_MIN_ENTRIES) + region);
  reader = gpushare_lane_open (gpushare_lane_dup_fd (writer, NULL), &info,
      NULL);
  fail_unless (reader != NULL);

  /* three frames, metas of 1, 3 and 64 entries, and one without */
  for (i = 0; i < 4; i++) {
    static const guint n[] = { 1, 3, 0, 64 };

    fake_lane_frame (&e, 1, i, 1, i + 1);
    m = n[i] ? fake_metas (n[i], 1000 + 1000 * i, 0x40 + i) : NULL;
    fail_unless_equals_int (gpushare_lane_push (writer, &e, m),
        GPUSHARE_LANE_OK);
    fail_unless_equals_int (gpushare_lane_pop (reader, &e, &got),
        GPUSHARE_LANE_OK);
    fail_unless_equals_uint64 (e.frame.sequence, i + 1);
    if (!m) {
      fail_unless (got == NULL);
      fail_unless_equals_int (e.meta_len, 0);
      continue;
    }
    fail_unless (got != NULL);
    fail_unless_equals_int (got->n_entries, n[i]);
    fail_unless_equals_int (got->data_len, m->data_len);
    fail_unless (memcmp (got->data, m->data, m->data_len) == 0);
    fail_unless (gpushare_frame_meta_check (got, NULL));
    /* 8-byte aligned, one after the other */
    fail_unless_equals_uint64 (e.meta_at % 8, 0);
    g_free (got);
    g_free (m);
  }
  pushed = popped = 4;

  /* a reader that reads nothing: frames of 10000 bytes of metas go in
   * until the region holds all it can, then none, and nothing is
   * written for it */
  m = fake_metas (4, 10000, 0x55);
  for (n_full = 0;; n_full++) {
    fake_lane_frame (&e, 1, 0, 1, ++pushed);
    if (gpushare_lane_push (writer, &e, m) != GPUSHARE_LANE_OK)
      break;
  }
  pushed--;
  fail_unless (n_full >= 5 && n_full <= region / 10000, "%u fitted", n_full);
  /* the entry did not go in either */
  fail_unless_equals_int (gpushare_lane_push (writer, &e, m),
      GPUSHARE_LANE_NO_ROOM);
  /* every one reads back whole: nothing was written over */
  for (i = 0; i < n_full; i++) {
    fail_unless_equals_int (gpushare_lane_pop (reader, &e, &got),
        GPUSHARE_LANE_OK);
    fail_unless_equals_uint64 (e.frame.sequence, ++popped);
    fail_unless (got && got->data_len == 10000
        && memcmp (got->data, m->data, 10000) == 0);
    fail_unless (e.meta_at % region + 10000 <= region,
        "metas across the region's end");
    g_free (got);
  }
  fail_unless_equals_int (gpushare_lane_pop (reader, &e, &got),
      GPUSHARE_LANE_EMPTY);
  /* read, they are free: many laps of it, each frame read as it comes,
   * none across the end, the ones that would be at the next lap */
  for (i = 0; i < 40; i++) {
    fake_lane_frame (&e, 1, 0, 1, ++pushed);
    fail_unless_equals_int (gpushare_lane_push (writer, &e, m),
        GPUSHARE_LANE_OK);
    at = e.meta_at;
    fail_unless_equals_int (gpushare_lane_pop (reader, &e, &got),
        GPUSHARE_LANE_OK);
    fail_unless_equals_uint64 (e.meta_at, at);
    fail_unless (at % region + 10000 <= region);
    fail_unless (got && memcmp (got->data, m->data, 10000) == 0);
    g_free (got);
  }
  fail_unless (at >= 5 * region, "only to %" G_GUINT64_FORMAT, at);
  g_free (m);

  /* too large: for the region, or for a frame; the entry not written */
  m = fake_metas (1, region + 8, 0x66);
  fake_lane_frame (&e, 1, 0, 1, ++pushed);
  fail_unless_equals_int (gpushare_lane_push (writer, &e, m),
      GPUSHARE_LANE_NO_ROOM);
  g_free (m);
  fail_unless_equals_int (gpushare_lane_pop (reader, &e, &got),
      GPUSHARE_LANE_EMPTY);
  gpushare_lane_free (reader);
  gpushare_lane_free (writer);

  writer = gpushare_lane_new (GPUSHARE_LANE_MIN_ENTRIES,
      GPUSHARE_LANE_MAX_META_REGION, NULL);
  /* (said to be; never read past what a frame may have) */
  m = fake_metas (1, GPUSHARE_LANE_MAX_META_LEN, 0x66);
  m->data_len += 8;
  fake_lane_frame (&e, 1, 0, 1, 1);
  fail_unless_equals_int (gpushare_lane_push (writer, &e, m),
      GPUSHARE_LANE_NO_ROOM);
  gpushare_lane_free (writer);

  /* no region: no room, and frames without metas as before */
  plain = gpushare_lane_new (GPUSHARE_LANE_MIN_ENTRIES, 0, NULL);
  gpushare_lane_get_info (plain, &info);
  fail_unless_equals_int (info.meta_size, 0);
  fail_unless_equals_uint64 (info.size,
      gpushare_lane_size (GPUSHARE_LANE_MIN_ENTRIES));
  fail_unless_equals_int (gpushare_lane_push (plain, &e, m),
      GPUSHARE_LANE_NO_ROOM);
  fail_unless_equals_int (gpushare_lane_push (plain, &e, NULL),
      GPUSHARE_LANE_OK);
  g_free (m);
  gpushare_lane_free (plain);
}

GST_END_TEST;

/* A producer that announces frames it never writes, against a real src:
 * the src's streaming thread polls once for the entry announced next (its
 * budget, GPUSHARE_CLIENT_LANE_SPIN_MAX_US), then sleeps, however often
 * the bell rings; a value that is not the next entry's makes it poll not
 * at all; after each frame read it polls again only after 1, 2, 4 ..
 * misses in a row.  The stats count it all, and the stream goes on. */
GST_START_TEST (test_lane_heads_up_hostile)
{
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  gchar *path = socket_path ("lane.sock");
  GstElement *pipeline, *src;
  guint64 *announced;
  GpuShareRelease rel;
  gint listen_fd;
  FakeLane fl;
  RawPeer raw;
  guint i;

  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  src = child (pipeline, "src");
  announced = (guint64 *) (fl.base + GPUSHARE_LANE_ANNOUNCED_OFFSET);
  fake_lane_push_frame (&fl, 1, 0, 1, 1);
  expect_release (&fl, &rel, 0, 1, 1);

  /* values that are not the next entry's, rung for: no poll */
  for (i = 0; i < 50; i++) {
    *announced = i % 2 ? G_MAXUINT64 : 3 + i;
    gpushare_lane_ring (fl.lane);
    g_usleep (1000);
  }
  fail_unless_equals_uint64 (stat_u64 (src, "lane-spin-misses"), 0);
  fail_unless_equals_uint64 (stat_u64 (src, "lane-spin-us"), 0);

  /* the next entry announced and never written, rung for 50 times */
  gpushare_lane_announce (fl.lane);
  fail_unless_equals_uint64 (wait_stat_u64_at_least (src, "lane-spin-misses",
          1), 1);
  for (i = 0; i < 50; i++) {
    gpushare_lane_ring (fl.lane);
    g_usleep (1000);
  }
  fail_unless_equals_uint64 (stat_u64 (src, "lane-spin-misses"), 1);
  fail_unless (stat_u64 (src, "lane-spin-us") >=
      GPUSHARE_CLIENT_LANE_SPIN_MAX_US);
  fail_unless_equals_uint64 (stat_u64 (src, "lane-spins"), 0);

  /* frames announced and never written after each: one miss per 1, 2,
   * 4 .. frames */
  for (i = 2; i <= 8; i++) {
    /* misses after frames 2 (then 2 frames without), 4 (4 without), 8 */
    guint64 misses = 1 + (i >= 2) + (i >= 4) + (i >= 8);

    fake_lane_push_frame (&fl, 1, i % 2, 1 + i / 2, i);
    expect_release (&fl, &rel, i % 2, 1 + i / 2, i);
    gpushare_lane_announce (fl.lane);
    if (i == 2 || i == 4 || i == 8) {
      fail_unless_equals_uint64 (wait_stat_u64_at_least (src,
              "lane-spin-misses", misses), misses);
    } else {
      g_usleep (5000);
      fail_unless_equals_uint64 (stat_u64 (src, "lane-spin-misses"), misses);
    }
  }
  fail_unless (stat_u64 (src, "lane-spin-us") <= 4 *
      (GPUSHARE_CLIENT_LANE_SPIN_MAX_US + 100000));
  fail_unless_equals_uint64 (stat_u64 (src, "frames-received"), 8);
  assert_no_error (pipeline);

  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);
  g_async_queue_unref (log);
  g_free (path);
}

GST_END_TEST;

/* frames written every 20 ms from sequence from on, n of them (slot
 * sequence % 2, as test_lane_heads_up_hostile numbers them), each read and
 * given back; written_us as given, or 0: the time each was due, on a
 * schedule of exact gaps, jitter us early and late in turn (the write
 * itself comes when a sleep ends, up to a millisecond later on a loaded
 * machine) */
static void
wa_frames (FakeLane * fl, guint64 from, guint n, guint64 written_us,
    gint64 jitter)
{
  gint64 due = g_get_monotonic_time ();
  GpuShareLaneEntry e;
  GpuShareRelease rel;
  guint64 i;

  for (i = from; i < from + n; i++) {
    due += 20000;
    if (due > g_get_monotonic_time ())
      g_usleep (due - g_get_monotonic_time ());
    fake_lane_frame (&e, 1, i % 2, 1 + i / 2, i);
    e.written_us = written_us ? written_us :
        (guint64) (due + (i % 2 ? jitter : -jitter));
    fail_unless_equals_int (gpushare_lane_push (fl->lane, &e, NULL),
        GPUSHARE_LANE_OK);
    expect_release (fl, &rel, i % 2, 1 + i / 2, i);
  }
}

/* wake-ahead: off by default; with it, a src whose producer writes a
 * frame every 20 ms wakes up before the frames are due and catches them
 * polling, one window a frame, each poll no longer than twice wake-ahead
 * (give or take the machine's scheduling); a producer that stops costs
 * one window and no more; write times ahead of the consumer's clock (even
 * past the signed range) count as the times the frames were read, which
 * keep the cadence; write times 8 ms off the schedule either way are no
 * cadence, and open no window. */
GST_START_TEST (test_lane_wake_ahead)
{
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  gchar *path = socket_path ("lane.sock");
  gboolean valgrind = g_getenv ("GPUSHARE_UNDER_VALGRIND") != NULL;
  GstElement *pipeline, *src;
  guint64 wakes, hits, polled;
  guint wake_ahead;
  gint listen_fd;
  FakeLane fl;
  RawPeer raw;

  /* off: never */
  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  src = child (pipeline, "src");
  g_object_get (src, "wake-ahead", &wake_ahead, NULL);
  fail_unless_equals_int (wake_ahead, 0);
  wa_frames (&fl, 1, 20, 0, 0);
  fail_unless_equals_uint64 (stat_u64 (src, "lane-early-wakes"), 0);
  fail_unless_equals_uint64 (stat_u64 (src, "lane-early-hits"), 0);
  assert_no_error (pipeline);
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);

  lane_wake_ahead = 1000;
  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  src = child (pipeline, "src");
  /* the first 8 gaps make the cadence: no poll before */
  wa_frames (&fl, 1, 9, 0, 0);
  fail_unless_equals_uint64 (stat_u64 (src, "lane-early-wakes"), 0);
  wa_frames (&fl, 10, 30, 0, 0);
  wakes = stat_u64 (src, "lane-early-wakes");
  hits = stat_u64 (src, "lane-early-hits");
  polled = stat_u64 (src, "lane-spin-us");
  /* a sleep that ends late on a loaded machine misses frames now and
   * then; under valgrind most */
  fail_unless (hits >= (valgrind ? 1 : 5),
      "%" G_GUINT64_FORMAT " of 30 caught, %" G_GUINT64_FORMAT " windows, %"
      G_GUINT64_FORMAT " us", hits, wakes, polled);
  fail_unless (hits <= wakes && wakes <= 31, "%" G_GUINT64_FORMAT " caught, "
      "%" G_GUINT64_FORMAT " windows", hits, wakes);
  /* 2 ms a window, and 5 ms of slack a frame for a poll that yielded its
   * CPU to a busy machine */
  fail_unless (polled <= wakes * 2 * 1000 + 30 * 5000, "%" G_GUINT64_FORMAT
      " us in %" G_GUINT64_FORMAT " windows", polled, wakes);

  /* the producer stops: one window, caught nothing, and then it sleeps */
  g_usleep (200000);
  fail_unless (stat_u64 (src, "lane-early-wakes") <= wakes + 1);
  fail_unless_equals_uint64 (stat_u64 (src, "lane-early-hits"), hits);
  wakes = stat_u64 (src, "lane-early-wakes");
  g_usleep (100000);
  fail_unless_equals_uint64 (stat_u64 (src, "lane-early-wakes"), wakes);

  /* write times ahead of our clock, past the signed range too: the read
   * times keep the cadence, and windows open again */
  wa_frames (&fl, 40, 12, G_GUINT64_CONSTANT (1) << 62, 0);
  wa_frames (&fl, 52, 12, G_GUINT64_CONSTANT (1) << 63, 0);
  fail_unless (stat_u64 (src, "lane-early-wakes") >= wakes + 3,
      "%" G_GUINT64_FORMAT " windows, %" G_GUINT64_FORMAT " before",
      stat_u64 (src, "lane-early-wakes"), wakes);
  /* write times 8 ms early and late in turn: no cadence, so no window
   * after the one open when they began and, where the first of them
   * falls within a quarter of the cadence (a late read before it), the
   * next */
  wakes = stat_u64 (src, "lane-early-wakes");
  wa_frames (&fl, 64, 12, 0, 8000);
  fail_unless (stat_u64 (src, "lane-early-wakes") <= wakes + 2,
      "%" G_GUINT64_FORMAT " windows, %" G_GUINT64_FORMAT " before",
      stat_u64 (src, "lane-early-wakes"), wakes);
  fail_unless_equals_uint64 (stat_u64 (src, "frames-received"), 75);
  assert_no_error (pipeline);
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);
  lane_wake_ahead = 0;
  g_async_queue_unref (log);
  g_free (path);
}

GST_END_TEST;

typedef enum
{
  LH_UNSEALED,
  LH_WRONG_SIZE,
  LH_PIPE,
  LH_WRITE_SEALED,
  LH_MALFORMED_INFO,
  LH_NOT_ASKED,
  LH_SECOND,
  LH_AFTER_SLOTS,
  LH_HEAD_AHEAD,
  LH_HEAD_BACK,
  LH_INDEX,
  LH_KIND,
  LH_MARK_ORDER,
  LH_FRAME_BAD_SLOT,
  LH_FRAME_BEFORE_SLOTS,
  LH_FRAME_ON_SOCKET,
  LH_METAS_OUTSIDE,
  LH_METAS_BACK,
  LH_METAS_NO_REGION,
  LH_METAS_CHAIN,
  LH_METAS_BAD_ENTRY,
  LH_METAS_TWICE,
  N_LH
} LaneHostile;

static const struct
{
  const gchar *name;
  const gchar *says;            /* what the ERROR to the producer says */
} lh_cases[N_LH] = {
  {"a LANE whose memfd is not sealed", "not sealed"},
  {"a LANE whose memfd is half the size it says", "not of the size"},
  {"a LANE whose fd is a pipe", "not a file"},
  {"a LANE whose memfd is sealed against writing", "could not map"},
  {"a LANE of 100 entries", "malformed message"},
  {"a LANE the consumer did not ask for", "LANE out of order"},
  {"a second LANE", "LANE out of order"},
  {"a LANE after SLOTS", "LANE out of order"},
  {"a head more than the lane's entries ahead", "index of the lane cannot"},
  {"a head that goes back", "index of the lane cannot"},
  {"a FRAME entry whose index is not its position", "out of place"},
  {"an entry of an unknown kind", "does not parse"},
  {"MARK 2 first", "MARK of the lane out of order"},
  {"a FRAME entry for a slot out of range", "FRAME rejected"},
  {"a FRAME entry before any SLOTS", "FRAME rejected"},
  {"a FRAME on the socket after LANE", "FRAME on the socket after LANE"},
  {"metas across the meta region's end", "outside the lane's meta region"},
  {"metas before the last ones", "not after the last ones"},
  {"metas in a lane without a meta region", "outside the lane's meta "
        "region"},
  {"metas whose entries do not chain", "do not chain"},
  {"metas with a region of interest that does not parse", "bad"},
  {"metas in the region and in a META for one frame", "two METAs"},
};

/* a memfd of ours for a lane, of size, sealed with seals (0: none) */
static gint
make_lane_memfd (gsize size, gint seals)
{
  gint fd = memfd_create (TEST_LANE_MEMFD_NAME, MFD_CLOEXEC |
      MFD_ALLOW_SEALING);

  fail_unless (fd >= 0);
  fail_unless (ftruncate (fd, size) == 0);
  if (seals)
    fail_unless (fcntl (fd, F_ADD_SEALS, seals) == 0);
  return fd;
}

/* Each way a producer breaks the lane, against a fresh src: the src tells
 * the producer why (ERROR PROTOCOL), posts the error of a producer's
 * invalid message, keeps no descriptor it was given, and stops cleanly,
 * hanging up, with no lane left mapped. */
GST_START_TEST (test_lane_hostile)
{
  LaneHostile which = __i__;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("lane.sock");
  gint fds[HP_N_SLOTS], pipe_fds[2] = { -1, -1 }, fd;
  GpuShareLaneEntry e;
  GstElement *pipeline;
  GpuShareLaneInfo info;
  GpuShareRelease rel;
  FakeLane fl = { 0, };
  guint before, i;
  GArray *codes;
  gint listen_fd;
  RawPeer raw;
  GByteArray *b;

  GST_INFO ("producer sends %s", lh_cases[which].name);
  pipeline = lane_consumer_start (path, which != LH_NOT_ASKED, &listen_fd,
      &raw);
  raw_announce (&raw, msg);
  /* a lane, with a meta region */
  fail_unless_equals_int (msg->u.accept.flags & (GPUSHARE_ACCEPT_FLAG_LANE |
          GPUSHARE_ACCEPT_FLAG_LANE_METAS), which == LH_NOT_ASKED ? 0 :
      GPUSHARE_ACCEPT_FLAG_LANE | GPUSHARE_ACCEPT_FLAG_LANE_METAS);
  /* from here on, every fd the src is given must be closed again */
  before = count_fds ();
  fake_lane_new (&fl);
  info = fl.info;

  switch (which) {
    case LH_UNSEALED:
    case LH_WRONG_SIZE:
    case LH_WRITE_SEALED:
      fd = make_lane_memfd (which == LH_WRONG_SIZE ? info.size / 2 :
          info.size, which == LH_UNSEALED ? 0 : F_SEAL_SHRINK | F_SEAL_GROW |
          (which == LH_WRITE_SEALED ? F_SEAL_WRITE : 0) | F_SEAL_SEAL);
      raw_send_lane (&raw, &info, fd);
      close (fd);
      break;
    case LH_PIPE:
      fail_unless (pipe2 (pipe_fds, O_CLOEXEC) == 0);
      raw_send_lane (&raw, &info, pipe_fds[1]);
      close (pipe_fds[1]);
      before++;                 /* the read end we keep */
      break;
    case LH_MALFORMED_INFO:
      /* not a power of two: the codec refuses it, and its fd */
      msg->type = GPUSHARE_MSG_LANE;
      msg->u.lane = info;
      b = build (msg, 1);
      patch32 (b, GPUSHARE_HEADER_SIZE, 100);
      fd = gpushare_lane_dup_fd (fl.lane, NULL);
      raw_send_bytes (&raw, b, &fd, 1);
      close (fd);
      break;
    case LH_NOT_ASKED:
      fake_lane_send (&raw, &fl);
      break;
    case LH_SECOND:
    case LH_AFTER_SLOTS:
    case LH_HEAD_AHEAD:
    case LH_HEAD_BACK:
    case LH_INDEX:
    case LH_KIND:
    case LH_MARK_ORDER:
    case LH_FRAME_BAD_SLOT:
    case LH_FRAME_BEFORE_SLOTS:
    case LH_FRAME_ON_SOCKET:
    case LH_METAS_OUTSIDE:
    case LH_METAS_BACK:
    case LH_METAS_NO_REGION:
    case LH_METAS_CHAIN:
    case LH_METAS_BAD_ENTRY:
    case LH_METAS_TWICE:
      if (which == LH_METAS_NO_REGION) {
        fake_lane_free (&fl);
        fake_lane_new_sized (&fl, 0);
        info = fl.info;
      }
      if (which != LH_AFTER_SLOTS)
        fake_lane_send (&raw, &fl);
      if (which == LH_SECOND) {
        fake_lane_send (&raw, &fl);
        break;
      }
      if (which == LH_FRAME_BEFORE_SLOTS) {
        fake_lane_push_frame (&fl, 1, 0, 1, 1);
        break;
      }
      for (i = 0; i < HP_N_SLOTS; i++)
        fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
      raw_send_slots (&raw, msg, fds, 1);
      raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
      if (which == LH_AFTER_SLOTS) {
        fake_lane_send (&raw, &fl);
        break;
      }
      /* one good frame, and its release, so the next one is judged on
       * its own fault */
      fake_lane_push_frame (&fl, 1, 0, 1, 1);
      expect_release (&fl, &rel, 0, 1, 1);
      switch (which) {
        case LH_HEAD_AHEAD:
          fake_lane_write (&fl, 0, NULL, 2 + info.n_entries);
          break;
        case LH_HEAD_BACK:
          fake_lane_write (&fl, 0, NULL, 0);
          break;
        case LH_INDEX:
          /* a good frame otherwise: read as it says, it would be taken */
          fake_lane_frame (&e, 1, 1, 1, 2);
          e.index = 1 + info.n_entries;
          fake_lane_write (&fl, 1, &e, 2);
          break;
        case LH_KIND:
          memset (&e, 0, sizeof (e));
          e.kind = GPUSHARE_LANE_ENTRY_MARK;
          e.index = 1;
          e.mark = 1;
          /* a MARK but for its kind, with an ordered message for it */
          make_event (msg, GPUSHARE_EVENT_CUSTOM, "lane-event, n=(int)1");
          fail_unless (raw_send_msg (&raw, msg, NULL, 0));
          fake_lane_write (&fl, 1, &e, 1);
          fl.base[GPUSHARE_LANE_HEADER_SIZE + GPUSHARE_LANE_ENTRY_SIZE + 8] = 7;
          fake_lane_write (&fl, 1, NULL, 2);
          break;
        case LH_MARK_ORDER:
          make_event (msg, GPUSHARE_EVENT_CUSTOM, "lane-event, n=(int)1");
          fail_unless (raw_send_msg (&raw, msg, NULL, 0));
          make_event (msg, GPUSHARE_EVENT_CUSTOM, "lane-event, n=(int)2");
          fail_unless (raw_send_msg (&raw, msg, NULL, 0));
          fake_lane_push_mark (&fl, 2);
          break;
        case LH_FRAME_BAD_SLOT:
          fake_lane_push_frame (&fl, 1, HP_N_SLOTS, 1, 2);
          break;
        case LH_FRAME_ON_SOCKET:
          make_frame (msg, 1, 1, 1, 2);
          fail_unless (raw_send_msg (&raw, msg, NULL, 0));
          break;
        case LH_METAS_OUTSIDE:
        case LH_METAS_BACK:
        case LH_METAS_NO_REGION:
        case LH_METAS_CHAIN:
        case LH_METAS_BAD_ENTRY:
        case LH_METAS_TWICE:{
          GpuShareFrameMetas *m = fake_metas (2, 64, 0x11);
          gsize region = info.size - gpushare_lane_size (info.n_entries);

          if (which == LH_METAS_BACK) {
            /* a good frame with metas at 128, then metas at 0 */
            fake_lane_frame (&e, 1, 1, 1, 2);
            e.index = 1;
            e.meta_at = 128;
            e.meta_len = m->data_len;
            e.meta_entries = m->n_entries;
            memcpy (fl.base + gpushare_lane_size (info.n_entries) + 128,
                m->data, m->data_len);
            fake_lane_write (&fl, 1, &e, 2);
            expect_release (&fl, &rel, 1, 1, 2);
            fake_lane_frame (&e, 1, 0, 2, 3);
            e.index = 2;
            e.meta_at = 0;
          } else {
            fake_lane_frame (&e, 1, 1, 1, 2);
            e.index = 1;
            /* the last 32 bytes of the region and 32 past its end */
            e.meta_at = which == LH_METAS_OUTSIDE ? region - 32 : 0;
          }
          e.meta_len = m->data_len;
          e.meta_entries = m->n_entries;
          if (which == LH_METAS_CHAIN)
            e.meta_entries = 3;
          if (which == LH_METAS_BAD_ENTRY) {
            /* a region of interest (kind 1) whose 24 bytes of 0x11 end
             * before its name */
            guint16 roi = GUINT16_TO_LE (1);

            memcpy (m->data, &roi, 2);
          }
          if (region)
            memcpy (fl.base + gpushare_lane_size (info.n_entries), m->data,
                m->data_len);
          if (which == LH_METAS_TWICE) {
            make_meta (msg, 2, FALSE);
            fail_unless (raw_send_msg (&raw, msg, NULL, 0));
            fake_lane_push_mark (&fl, 1);
            e.index = 2;
            fake_lane_write (&fl, 2, &e, 3);
          } else {
            fake_lane_write (&fl, e.index, &e, e.index + 1);
          }
          g_free (m);
          break;
        }
        default:
          g_assert_not_reached ();
      }
      break;
    default:
      g_assert_not_reached ();
  }

  /* the src says why */
  raw_expect (&raw, GPUSHARE_MSG_ERROR, msg, NULL, NULL);
  fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_PROTOCOL);
  fail_unless (strstr (msg->u.error.text, lh_cases[which].says) != NULL,
      "'%s' does not say '%s'", msg->u.error.text, lh_cases[which].says);
  assert_error (pipeline, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE);

  if (pipe_fds[0] >= 0) {
    fail_unless (wait_pipe_hangup (pipe_fds[0], TIMEOUT_MS),
        "the consumer kept the pipe it refused");
    close (pipe_fds[0]);
    before--;
  }
  fake_lane_free (&fl);
  /* every fd it was given is closed already, mapped or refused; the
   * connection stays (in the count) until the src stops or the silence
   * loses it (a conn-level error closes it at once) */
  if (which == LH_MALFORMED_INFO)
    before--;
  fail_unless_equals_int (wait_fd_count (before, TIMEOUT_MS), before);
  /* it stops cleanly, and hangs up */
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  codes = raw_drain (&raw);
  g_array_unref (codes);
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fail_unless_equals_int (count_memfd_maps (LANE_MEMFD_NAME), 0);
  fail_unless_equals_int (count_memfd_maps (TEST_LANE_MEMFD_NAME), 0);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* The rings a producer makes the src follow, and what it sends past the
 * end of its stream:
 *  - HR_EPOCH_0: a ring of epoch 0, which the src takes for "no ring
 *    mapped", so that a CAPS of that epoch was not checked against the
 *    slots (a frame then read past them);
 *  - HR_LANE_OTHER_RING: in the lane, a FRAME of ring 1 after the MARK of
 *    the CAPS of ring 2: read under the layout of another ring;
 *  - HR_EOS_AGAIN: 200,000 EOS after its EOS, each an item nothing took
 *    (2 million grew the consumer by 230 MB).
 * The first two are refused (ERROR PROTOCOL, the error posted, no buffer
 * read), the third ignored. */
typedef enum
{
  HR_EPOCH_0,
  HR_LANE_OTHER_RING,
  HR_EOS_AGAIN,
  N_HR
} HostileRing;

GST_START_TEST (test_hostile_rings)
{
  HostileRing which = __i__;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("rings.sock");
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  GstElement *pipeline;
  gint fds[HP_N_SLOTS], listen_fd;
  FakeLane fl = { 0, };
  GstMessage *m;
  RawPeer raw;
  guint i;

  if (which == HR_LANE_OTHER_RING) {
    pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
    fake_lane_push_frame (&fl, 1, 0, 1, 1);
    /* ring 2, of the same shape: its CAPS, with its MARK in the lane, its
     * SLOTS, mapped */
    memset (msg, 0, sizeof (*msg));
    msg->type = GPUSHARE_MSG_CAPS;
    msg->u.caps.latency = GST_CLOCK_TIME_NONE;
    make_layout (&msg->u.caps.layout, HP_N_SLOTS, HP_SLOT_SIZE);
    msg->u.caps.layout.epoch = 2;
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    for (i = 0; i < HP_N_SLOTS; i++)
      fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
    raw_send_slots (&raw, msg, fds, 2);
    raw_expect (&raw, GPUSHARE_MSG_MAPPED, msg, NULL, NULL);
    fail_unless_equals_uint64 (msg->u.mapped.epoch, 2);
    fake_lane_push_mark (&fl, 1);
    /* and a frame of ring 1 after it */
    fake_lane_push_frame (&fl, 1, 1, 1, 2);
  } else {
    pipeline = hostile_consumer_start (path, &listen_fd, &raw);
    if (which == HR_EPOCH_0) {
      make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
      msg->u.announce.layout.epoch = 0;
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      raw_expect (&raw, GPUSHARE_MSG_ACCEPT, msg, NULL, NULL);
      for (i = 0; i < HP_N_SLOTS; i++)
        fds[i] = make_memfd (HP_SLOT_SIZE, TRUE);
      raw_send_slots (&raw, msg, fds, 0);
      /* a CAPS of epoch 0 for frames four times the slots, and one */
      memset (msg, 0, sizeof (*msg));
      msg->type = GPUSHARE_MSG_CAPS;
      msg->u.caps.latency = GST_CLOCK_TIME_NONE;
      make_layout_of (&msg->u.caps.layout, "NV12", 256, 192, HP_N_SLOTS,
          128 * 1024);
      msg->u.caps.layout.epoch = 0;
      raw_send_msg (&raw, msg, NULL, 0);
      make_frame (msg, 0, 0, 1, 1);
      raw_send_msg (&raw, msg, NULL, 0);
    } else {
      GByteArray *one, *many = g_byte_array_new ();
      guint before, after, k;
      gint unread = 0;
      gint64 until;

      raw_producer_ready (&raw, msg);
      make_frame (msg, 1, 0, 1, 1);
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
      make_simple (msg, GPUSHARE_MSG_EOS);
      msg->u.eos.last_sequence = 1;
      fail_unless (raw_send_msg (&raw, msg, NULL, 0));
      m = pop_message (pipeline, GST_MESSAGE_EOS, TIMEOUT_MS);
      fail_unless (m != NULL, "no EOS");
      gst_message_unref (m);
      before = rss_kb ();
      one = build (msg, 0);
      for (k = 0; k < 1000; k++)
        g_byte_array_append (many, one->data, one->len);
      for (k = 0; k < 200; k++)
        fail_unless (raw_send_bytes (&raw, g_byte_array_ref (many), NULL, 0));
      /* all of it read by the src */
      until = g_get_monotonic_time () + 4 * TIMEOUT_MS * 1000ll;
      do {
        g_usleep (10000);
        fail_unless (ioctl (raw.fd, SIOCOUTQ, &unread) == 0);
      } while (unread > 0 && g_get_monotonic_time () < until);
      fail_unless_equals_int (unread, 0);
      after = rss_kb ();
      fail_unless (after < before + 8 * 1024, "200,000 EOS after the end "
          "grew the consumer from %u to %u kB", before, after);
      g_byte_array_unref (one);
      g_byte_array_unref (many);
      assert_no_error (pipeline);
    }
  }
  if (which != HR_EOS_AGAIN) {
    GArray *codes;
    gchar *line;

    m = pop_message (pipeline, GST_MESSAGE_ERROR | GST_MESSAGE_EOS, TIMEOUT_MS);
    fail_unless (m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR,
        "case %d: no error posted", which);
    gst_message_unref (m);
    codes = raw_drain (&raw);
    fail_unless (codes->len >= 1 && g_array_index (codes, guint32, 0) ==
        GPUSHARE_ERR_PROTOCOL, "case %d: the producer was not told", which);
    g_array_unref (codes);
    /* the frame of ring 1 read before it, and no other */
    if (which == HR_LANE_OTHER_RING) {
      while ((line = g_async_queue_try_pop (log))) {
        fail_if (strstr (line, "offset=102"), "the frame of the other ring "
            "went downstream: %s", line);
        g_free (line);
      }
    }
  }
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);
  g_async_queue_unref (log);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* A producer that changes its latency in every CAPS, 2,000 of them with no
 * frame between: a bus message for each was posted (an application that
 * does not read its bus grew by each, gst-launch queried the pipeline's
 * latency for each).  The src says it with the next frame now, once. */
GST_START_TEST (test_producer_latency_flood)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("latency.sock");
  GstElement *pipeline;
  GstMessage *m;
  guint i, n = 0;
  gint listen_fd;
  RawPeer raw;

  pipeline = hostile_consumer_start (path, &listen_fd, &raw);
  raw_producer_ready (&raw, msg);
  for (i = 0; i < 2000; i++) {
    memset (msg, 0, sizeof (*msg));
    msg->type = GPUSHARE_MSG_CAPS;
    msg->u.caps.latency = (1 + i % 2) * GST_MSECOND;
    make_layout (&msg->u.caps.layout, HP_N_SLOTS, HP_SLOT_SIZE);
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  }
  make_frame (msg, 1, 0, 1, 1);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_RELEASE, msg, NULL, NULL);
  while ((m = gst_bus_pop_filtered (GST_ELEMENT_BUS (pipeline),
              GST_MESSAGE_LATENCY))) {
    n++;
    gst_message_unref (m);
  }
  fail_unless (n >= 1 && n <= 2, "%u latency messages for 2,000 CAPS and a "
      "frame", n);
  assert_no_error (pipeline);
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* A hostile producer's thread that keeps the lane full for as long as it
 * runs: FRAME entries in their place (slots 0 and 1 in turn, generation
 * and sequence one up each, or, with stale set, a sequence the src
 * refuses), each with 256 KiB of metas the src must read, and the
 * consumer's releases taken at once */
typedef struct
{
  FakeLane *fl;
  gint stop;
  gint stale;
  guint64 written;
} LaneFlood;

static gpointer
lane_flood (gpointer data)
{
  LaneFlood *f = data;
  guint8 *base = f->fl->base;
  guint32 n = f->fl->info.n_entries, gen[2] = { 1, 1 };
  GpuShareFrameMetas *m = fake_metas (64, GPUSHARE_LANE_MAX_META_LEN, 0x33);
  guint64 head = __atomic_load_n ((guint64 *) (base +
          GPUSHARE_LANE_HEAD_OFFSET), __ATOMIC_ACQUIRE), seq = 100;
  GpuShareLaneEntry e;
  gsize at;

  /* the same metas at every place an entry may point to */
  for (at = 0; at + m->data_len <= f->fl->info.meta_size; at += m->data_len)
    memcpy (base + gpushare_lane_size (n) + at, m->data, m->data_len);
  fake_lane_frame (&e, 1, 0, 1, 1);
  e.meta_len = m->data_len;
  e.meta_entries = m->n_entries;
  while (!g_atomic_int_get (&f->stop)) {
    guint64 tail = fake_lane_tail (f->fl);

    __atomic_store_n ((guint64 *) (base + GPUSHARE_LANE_RTAIL_OFFSET),
        __atomic_load_n ((guint64 *) (base + GPUSHARE_LANE_RHEAD_OFFSET),
            __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
    for (; head - tail < n; head++) {
      e.index = head;
      e.meta_at = head * (guint64) m->data_len;
      e.frame.slot = head % 2;
      e.frame.generation = ++gen[head % 2];
      e.frame.sequence = g_atomic_int_get (&f->stale) ? 1 : ++seq;
      gpushare_lane_entry_build (&e, base + GPUSHARE_LANE_HEADER_SIZE +
          (head % n) * GPUSHARE_LANE_ENTRY_SIZE);
      if (head % 16 == 15)
        __atomic_store_n ((guint64 *) (base + GPUSHARE_LANE_HEAD_OFFSET),
            head + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n ((guint64 *) (base + GPUSHARE_LANE_HEAD_OFFSET), head,
        __ATOMIC_RELEASE);
    gpushare_lane_ring (f->fl->lane);
    f->written = head;
  }
  g_free (m);
  return NULL;
}

typedef struct
{
  GstElement *element;
  gboolean stats;               /* else: to NULL */
  gint done;
  GThread *thread;
} LaneCall;

static gpointer
lane_call (gpointer data)
{
  LaneCall *c = data;
  GstStructure *st = NULL;

  if (c->stats) {
    g_object_get (c->element, "stats", &st, NULL);
    gst_structure_free (st);
  } else {
    gst_element_set_state (c->element, GST_STATE_NULL);
  }
  g_atomic_int_set (&c->done, 1);
  return NULL;
}

/* c->element's stats, or its stop, in a thread of its own: TRUE when it
 * returned within timeout_ms (lane_call_join () waits for it either way) */
static gboolean
lane_call_returns (LaneCall * c, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ms * 1000ll;
  gboolean done;

  c->thread = g_thread_new ("lane-call", lane_call, c);
  while (!(done = g_atomic_int_get (&c->done))
      && g_get_monotonic_time () < deadline)
    g_usleep (5000);
  return done;
}

static void
lane_call_join (LaneCall * c)
{
  if (c->thread)
    g_thread_join (c->thread);
  c->thread = NULL;
}

/* A producer that sends its EOS and then writes frames into the lane as
 * fast as they are read (with 256 KiB of metas each): the src's control
 * thread gives such frames back, and did so for as long as they came, so
 * that the src's stop (which waits for the control thread) did not return
 * while they came (3 s and more).  It reads a lane's worth a turn now,
 * without their metas, and stops within a second, the flood going on. */
GST_START_TEST (test_lane_flood_after_eos)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *path = socket_path ("lane-eos.sock");
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  LaneFlood f = { 0, };
  GstElement *pipeline;
  LaneCall stop = { 0, };
  GstMessage *eos;
  GThread *flood;
  gint listen_fd;
  gboolean stopped;
  FakeLane fl;
  RawPeer raw;

  /* the largest lane: the src reads 1024 entries with their metas before
   * it finds the lane empty, should the flood pause */
  fake_lane_entries = GPUSHARE_LANE_MAX_ENTRIES;
  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  make_simple (msg, GPUSHARE_MSG_EOS);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  fake_lane_push_mark (&fl, 1);
  eos = pop_message (pipeline, GST_MESSAGE_EOS | GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (eos && GST_MESSAGE_TYPE (eos) == GST_MESSAGE_EOS);
  gst_message_unref (eos);
  f.fl = &fl;
  flood = g_thread_new ("flood", lane_flood, &f);
  g_usleep (300 * 1000);
  stop.element = pipeline;
  stopped = lane_call_returns (&stop, 5000);
  g_atomic_int_set (&f.stop, 1);
  g_thread_join (flood);
  lane_call_join (&stop);
  fail_unless (stopped, "the src did not stop within 5 s while the producer "
      "wrote frames after its EOS (%" G_GUINT64_FORMAT " written)", f.written);
  fail_unless (f.written > fl.info.n_entries, "no flood: %" G_GUINT64_FORMAT
      " entries", f.written);

  gst_object_unref (pipeline);
  raw_clear (&raw);
  close (listen_fd);
  unlink (path);
  fake_lane_free (&fl);
  g_async_queue_unref (log);
  g_free (path);
  g_free (msg);
}

GST_END_TEST;

/* A producer that hangs up (producer-lost=error: the frames it wrote
 * into the lane are read first) and goes on writing entries the src
 * refuses, as fast as they are read: the src read them for as long as
 * they came, with its lock held, the error not posted, its stats and its
 * stop waiting.  It reads a lane's worth after the hang-up now: the error
 * is posted, its stats answer and it stops, the flood going on (each
 * within 5 s, for the sanitizers' build). */
GST_START_TEST (test_lane_flood_after_hangup)
{
  gchar *path = socket_path ("lane-hup.sock");
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  LaneFlood f = { 0, };
  GstElement *pipeline;
  LaneCall stats = { 0, }, stop = { 0, };
  GstMessage *m;
  GThread *flood;
  gint listen_fd;
  gboolean answered, stopped;
  FakeLane fl;
  RawPeer raw;

  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  f.fl = &fl;
  flood = g_thread_new ("flood", lane_flood, &f);
  g_usleep (100 * 1000);
  fail_unless (shutdown (raw.fd, SHUT_RDWR) == 0);
  g_usleep (50 * 1000);
  g_atomic_int_set (&f.stale, 1);
  /* seconds: a lane's worth of metas read under the sanitizers is slow */
  m = pop_message (pipeline, GST_MESSAGE_ERROR, 5000);
  stats.element = child (pipeline, "src");
  stats.stats = TRUE;
  answered = lane_call_returns (&stats, 5000);
  stop.element = pipeline;
  stopped = answered && lane_call_returns (&stop, 5000);
  g_atomic_int_set (&f.stop, 1);
  g_thread_join (flood);
  lane_call_join (&stats);
  lane_call_join (&stop);
  if (!stopped)
    gst_element_set_state (pipeline, GST_STATE_NULL);
  fail_unless (m != NULL, "no error posted within 5 s of the hang-up while "
      "the producer wrote entries (%" G_GUINT64_FORMAT " written)", f.written);
  gst_message_unref (m);
  fail_unless (answered, "the src's stats did not answer within 5 s");
  fail_unless (stopped, "the src did not stop within 5 s");

  gst_object_unref (pipeline);
  raw_clear (&raw);
  close (listen_fd);
  unlink (path);
  fake_lane_free (&fl);
  g_async_queue_unref (log);
  g_free (path);
}

GST_END_TEST;

/* A producer that hangs up with garbage in the lane (the memfd stays
 * mapped: it can write it after, too).  The src reads what the producer
 * wrote before its end first (producer-lost=error), finds the garbage, and
 * must then post the error and stop, not read the same bad entry again and
 * again with its lock held (it did: a streaming thread at 100% of a core,
 * no error posted, no way to stop the pipeline).  Either error is the
 * classified one: the producer's loss or its invalid lane. */
typedef enum
{
  LG_HEAD_AHEAD,
  LG_KIND,
  LG_METAS_OUTSIDE,
  N_LG
} LaneGarbage;

GST_START_TEST (test_lane_garbage_at_hangup)
{
  LaneGarbage which = __i__;
  gchar *path = socket_path ("lane.sock");
  GAsyncQueue *log = g_async_queue_new_full (g_free);
  GpuShareFrameMetas *m = fake_metas (2, 64, 0x11);
  GpuShareLaneEntry e;
  GstElement *pipeline;
  GpuShareRelease rel;
  GstMessage *msg;
  GError *error = NULL;
  FakeLane fl = { 0, };
  gsize region;
  gint listen_fd;
  RawPeer raw;

  pipeline = lane_stream_start (path, log, &listen_fd, &raw, &fl);
  fake_lane_push_frame (&fl, 1, 0, 1, 1);
  expect_release (&fl, &rel, 0, 1, 1);
  region = fl.info.size - gpushare_lane_size (fl.info.n_entries);
  /* the garbage, without a ring: the src's streaming thread sleeps on */
  switch (which) {
    case LG_HEAD_AHEAD:
      break;
    case LG_KIND:
      memset (&e, 0, sizeof (e));
      e.kind = GPUSHARE_LANE_ENTRY_MARK;
      e.index = 1;
      e.mark = 1;
      fail_unless (gpushare_lane_entry_build (&e, fl.base +
              GPUSHARE_LANE_HEADER_SIZE + GPUSHARE_LANE_ENTRY_SIZE));
      fl.base[GPUSHARE_LANE_HEADER_SIZE + GPUSHARE_LANE_ENTRY_SIZE + 8] = 7;
      break;
    case LG_METAS_OUTSIDE:
      fake_lane_frame (&e, 1, 1, 1, 2);
      e.index = 1;
      e.meta_at = region - 32;
      e.meta_len = m->data_len;
      e.meta_entries = m->n_entries;
      fail_unless (gpushare_lane_entry_build (&e, fl.base +
              GPUSHARE_LANE_HEADER_SIZE + GPUSHARE_LANE_ENTRY_SIZE));
      break;
    default:
      g_assert_not_reached ();
  }
  __atomic_store_n ((guint64 *) (fl.base + GPUSHARE_LANE_HEAD_OFFSET),
      which == LG_HEAD_AHEAD ? 2 + fl.info.n_entries : 2, __ATOMIC_RELEASE);
  /* the hang-up */
  fail_unless (shutdown (raw.fd, SHUT_RDWR) == 0);

  msg = pop_message (pipeline, GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (msg != NULL, "no ERROR posted after the producer left "
      "garbage in the lane");
  gst_message_parse_error (msg, &error, NULL);
  fail_unless ((error->domain == GST_RESOURCE_ERROR
          && error->code == GST_RESOURCE_ERROR_READ)
      || (error->domain == GST_STREAM_ERROR
          && error->code == GST_STREAM_ERROR_DECODE), "ERROR %s %d: %s",
      g_quark_to_string (error->domain), error->code, error->message);
  g_clear_error (&error);
  gst_message_unref (msg);
  /* it stops cleanly, with no lane left mapped */
  hostile_consumer_stop (pipeline, listen_fd, &raw, path);
  fake_lane_free (&fl);
  fail_unless_equals_int (count_memfd_maps (LANE_MEMFD_NAME), 0);
  g_async_queue_unref (log);
  g_free (m);
  g_free (path);
}

GST_END_TEST;

static Suite *
gpushare_src_protocol_suite (void)
{
  Suite *s = suite_create ("gpushare_src_protocol");
  TCase *tc_hostile_producer = tcase_create ("hostile-producer");
  TCase *tc_layouts = tcase_create ("layouts");
  TCase *tc_lane = tcase_create ("lane");

  suite_add_tcase (s, tc_hostile_producer);
  tcase_add_checked_fixture (tc_hostile_producer, elements_setup,
      elements_teardown);
  tcase_add_loop_test (tc_hostile_producer, test_hostile_producer, 0, N_HP);
  tcase_add_test (tc_hostile_producer, test_src_answers_version);
  tcase_add_test (tc_hostile_producer, test_producer_values_unchecked);
  tcase_add_test (tc_hostile_producer, test_producer_floods_events);
  /* not under AddressSanitizer: GLib's quark table, grown by the thousands
   * of new quarks (before 1.26) and kept for the process's life, is a leak
   * to LeakSanitizer */
#ifndef __SANITIZE_ADDRESS__
  tcase_add_test (tc_hostile_producer, test_producer_names_new_fields);
#endif
  tcase_add_test (tc_hostile_producer, test_producer_latency_flood);
  tcase_add_test (tc_hostile_producer, test_producer_backlog_full);
  tcase_add_test (tc_hostile_producer, test_sparse_slots_not_allocated);
  tcase_add_loop_test (tc_hostile_producer, test_heartbeat_silent_producer, 0,
      2);
  suite_add_tcase (s, tc_layouts);
  tcase_add_checked_fixture (tc_layouts, elements_setup, elements_teardown);
  tcase_add_loop_test (tc_layouts, test_hostile_layout, 0, N_HL);
  tcase_add_test (tc_layouts, test_frame_after_eos);
  suite_add_tcase (s, tc_lane);
  tcase_add_checked_fixture (tc_lane, elements_setup, elements_teardown);
  tcase_add_test (tc_lane, test_lane_fake_producer_streams);
  tcase_add_loop_test (tc_lane, test_lane_garbage_at_hangup, 0, N_LG);
  tcase_add_test (tc_lane, test_lane_flood_after_eos);
  tcase_add_loop_test (tc_lane, test_hostile_rings, 0, N_HR);
  tcase_add_test (tc_lane, test_lane_flood_after_hangup);
  tcase_add_test (tc_lane, test_lane_releases_are_heard);
  tcase_add_test (tc_lane, test_lane_mark_waits_asleep);
  tcase_add_test (tc_lane, test_lane_metas);
  tcase_add_test (tc_lane, test_lane_heads_up);
  tcase_add_test (tc_lane, test_lane_heads_up_hostile);
  tcase_add_test (tc_lane, test_lane_wake_ahead);
  tcase_add_loop_test (tc_lane, test_lane_hostile, 0, N_LH);
  return s;
}

GST_CHECK_MAIN (gpushare_src_protocol);
