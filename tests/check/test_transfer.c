/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Frames from gpusharesink to gpusharesrc in this one process: what
 * gst-inspect shows of both, the sink's pool writing into the slots, the
 * same bytes arriving whichever memory carries them, and formats whose rows
 * are copied whole or refused.  Where an NVIDIA driver is present auto takes
 * GPU memory and the frames are downloaded: these tests then check that
 * path, and on the CI machine the system-memory one.
 *
 * The fixture and the harness are those of every element test
 * (tests/common/gpushare-check-elements.c).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "config.h"

#include <gst/check/gstcheck.h>
#include <gmodule.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <gst/app/app.h>
#include <gst/video/video.h>
#include <gst/allocators/allocators.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdio.h>
#include <string.h>

#include "gpushare-check-elements.h"

/* ------------------------------------------------------------------------ */
/* 1. What gst-inspect shows */

static void
check_properties (const gchar * factory_name, const gchar * const *names,
    const gchar * const *read_only)
{
  GstElementFactory *factory = gst_element_factory_find (factory_name);
  GstElement *e;
  GParamSpec **specs;
  guint n_specs, i;

  fail_unless (factory != NULL, "no %s in the registry", factory_name);
  for (i = 0; i < 4; i++) {
    const gchar *keys[] = { GST_ELEMENT_METADATA_LONGNAME,
      GST_ELEMENT_METADATA_KLASS, GST_ELEMENT_METADATA_DESCRIPTION,
      GST_ELEMENT_METADATA_AUTHOR
    };
    const gchar *v = gst_element_factory_get_metadata (factory, keys[i]);

    fail_unless (v && *v, "%s has no %s", factory_name, keys[i]);
  }
  fail_unless_equals_int (gst_element_factory_get_num_pad_templates
      (factory), 1);

  e = gst_element_factory_create (factory, NULL);
  fail_unless (e != NULL);

  for (i = 0; names[i]; i++) {
    GParamSpec *pspec =
        g_object_class_find_property (G_OBJECT_GET_CLASS (e), names[i]);
    const gchar *blurb;
    gboolean ro = g_strv_contains (read_only, names[i]);
    GValue v = G_VALUE_INIT;

    fail_unless (pspec != NULL, "%s has no property %s", factory_name,
        names[i]);
    blurb = g_param_spec_get_blurb (pspec);
    fail_unless (blurb && *blurb, "%s::%s has no blurb", factory_name,
        names[i]);
    fail_unless (g_param_spec_get_nick (pspec) != NULL);
    fail_unless (pspec->flags & G_PARAM_READABLE);
    if (ro) {
      fail_if (pspec->flags & G_PARAM_WRITABLE, "%s::%s is writable",
          factory_name, names[i]);
    } else {
      fail_unless (pspec->flags & G_PARAM_WRITABLE);
      /* a setting says when it may change (GST_PARAM_MUTABLE_*) */
      fail_unless (pspec->flags & (GST_PARAM_MUTABLE_READY |
              GST_PARAM_MUTABLE_PAUSED | GST_PARAM_MUTABLE_PLAYING),
          "%s::%s does not say when it may change", factory_name, names[i]);
    }
    /* reading works in NULL state and gives a value of the declared type */
    g_value_init (&v, pspec->value_type);
    g_object_get_property (G_OBJECT (e), names[i], &v);
    if (g_str_equal (names[i], "stats")) {
      fail_unless (gst_value_get_structure (&v) != NULL);
    }
    g_value_unset (&v);
  }

  /* and nothing undocumented: every property the element adds is listed */
  specs = g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n_specs);
  for (i = 0; i < n_specs; i++) {
    if (specs[i]->owner_type != G_OBJECT_TYPE (e))
      continue;
    fail_unless (g_strv_contains (names, specs[i]->name),
        "%s::%s is not in the list this test knows", factory_name,
        specs[i]->name);
  }
  g_free (specs);
  gst_object_unref (e);
  gst_object_unref (factory);
}

static void
check_enum_nicks (GType type, const gchar * const *nicks)
{
  GEnumClass *klass = g_type_class_ref (type);
  guint i;

  fail_unless (G_IS_ENUM_CLASS (klass));
  for (i = 0; nicks[i]; i++)
    fail_unless (g_enum_get_value_by_nick (klass, nicks[i]) != NULL,
        "%s has no value %s", g_type_name (type), nicks[i]);
  g_type_class_unref (klass);
}

GST_START_TEST (test_inspect)
{
  static const gchar *const sink_props[] = { "socket-path",
    "wait-for-connection", "min-consumers", "ring-size", "policy",
    "socket-mode",
    "max-clients", "handshake-timeout", "lease-timeout", "max-pending",
    "allowed-uids", "allowed-gids", "gpu-uids", "gpu-gids", "cuda-device-id",
    "heartbeat-interval", "meta-slot-size",
    "num-clients", "stats", NULL
  };
  static const gchar *const sink_ro[] = { "num-clients", "stats", NULL };
  static const gchar *const src_props[] = { "socket-path",
    "connection-timeout", "is-live", "producer-lost", "transport",
    "sync-mode",
    "cuda-device-id", "heartbeat-interval", "allowed-producer-uids",
    "max-in-place", "io-mode", "frame-lane", "wake-ahead", "stats", NULL
  };
  static const gchar *const src_ro[] = { "stats", NULL };
  static const gchar *const reasons[] = { "goodbye", "hangup", "protocol",
    "version", "not-authorized", "unsupported", "slow", "too-many-clients",
    "peer-error", "resource", "shutdown", "timeout", NULL
  };
  static const gchar *const policies[] = { "auto", "lossless", "leaky",
    NULL
  };
  GstElement *sink = gst_element_factory_make ("gpusharesink", NULL);
  GParamSpec *pspec;
  GSignalQuery query;
  guint mode = 0;

  check_properties ("gpusharesink", sink_props, sink_ro);
  check_properties ("gpusharesrc", src_props, src_ro);

  /* the socket is private to its owner unless asked otherwise */
  fail_unless (sink != NULL);
  g_object_get (sink, "socket-mode", &mode, NULL);
  fail_unless_equals_int (mode, 0600);
  fail_unless_equals_int (num_clients (sink), 0);

  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (sink), "policy");
  check_enum_nicks (pspec->value_type, policies);

  g_signal_query (g_signal_lookup ("client-connected", G_OBJECT_TYPE (sink)),
      &query);
  fail_unless (query.signal_id != 0, "no client-connected signal");
  fail_unless_equals_int (query.n_params, 1);
  fail_unless (query.param_types[0] == G_TYPE_UINT);
  g_signal_query (g_signal_lookup ("client-removed", G_OBJECT_TYPE (sink)),
      &query);
  fail_unless (query.signal_id != 0, "no client-removed signal");
  fail_unless_equals_int (query.n_params, 2);
  fail_unless (query.param_types[0] == G_TYPE_UINT);
  fail_unless (G_TYPE_IS_ENUM (query.param_types[1] &
          ~G_SIGNAL_TYPE_STATIC_SCOPE));
  check_enum_nicks (query.param_types[1] & ~G_SIGNAL_TYPE_STATIC_SCOPE,
      reasons);
  gst_object_unref (sink);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 2. The sink alone, in a harness: its pool writes into the slots */

/* Upstream that never asked for our pool (CUDA memory upstream never
 * does, nor anything that skips the ALLOCATION query): its buffers are
 * copied in, and asking them for a pool tag raises no critical (once,
 * with no pool ever made in the process, it did: the tag's quark came
 * from the pool's class_init). */
GST_START_TEST (test_sink_without_our_pool)
{
  /* not in the elements' fixture: its warm-up pipeline would have made a
   * pool in this process already */
  gchar *dir = g_dir_make_tmp ("gpushare-nopool-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "nopool.sock", NULL);
  GstElement *sink = gst_element_factory_make ("gpusharesink", NULL);
  GstCaps *caps, *pad_caps;
  GstHarness *h;
  GstBuffer *buf;
  guint i;

  fail_unless (sink != NULL);
  gst_object_ref_sink (sink);
  g_object_set (sink, "socket-path", path, "ring-size", 4, NULL);
  h = gst_harness_new_with_element (sink, "sink", NULL);
  gst_harness_play (h);
  /* GPU caps: the sink offers no pool for them (it copies GPU memory on
   * the device), and without a GPU buffers of system memory come all the
   * same, copied in; a build without a GPU transfer takes none */
  caps = gst_caps_from_string (CAPS_STR);
  gst_caps_set_features_simple (caps,
      gst_caps_features_new ("memory:CUDAMemory", NULL));
  pad_caps = gst_pad_peer_query_caps (h->srcpad, NULL);
  if (!gst_caps_can_intersect (pad_caps, caps)) {
    GST_INFO ("no GPU transfer in this build: system caps");
    gst_caps_unref (caps);
    caps = gst_caps_from_string (CAPS_STR);
  }
  gst_caps_unref (pad_caps);
  gst_harness_set_src_caps (h, caps);
  for (i = 0; i < 3; i++) {
    buf = gst_buffer_new_allocate (NULL, FRAME_SIZE, NULL);
    gst_buffer_memset (buf, 0, 0x40 + i, FRAME_SIZE);
    GST_BUFFER_PTS (buf) = i * (GST_SECOND / 30);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-copied"), 3);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-in-place"), 0);
  gst_harness_teardown (h);
  gst_object_unref (sink);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_sink_harness_pool)
{
  gchar *path = socket_path ("harness.sock");
  GstElement *sink = gst_element_factory_make ("gpusharesink", NULL);
  GstCaps *caps = gst_caps_from_string (CAPS_STR);
  GstBufferPool *pool = NULL;
  GstHarness *h;
  GstQuery *query;
  GstBuffer *buf;
  guint size = 0, min = 0, max = 0, i;

  fail_unless (sink != NULL);
  gst_object_ref_sink (sink);
  g_object_set (sink, "socket-path", path, "ring-size", 4, NULL);
  h = gst_harness_new_with_element (sink, "sink", NULL);
  gst_harness_play (h);
  gst_harness_set_src_caps (h, gst_caps_ref (caps));

  query = gst_query_new_allocation (caps, TRUE);
  fail_unless (gst_pad_peer_query (h->srcpad, query),
      "the sink did not answer the ALLOCATION query");
  fail_unless (gst_query_get_n_allocation_pools (query) > 0,
      "the sink offers no pool");
  gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  fail_unless (pool != NULL);
  fail_unless (size >= FRAME_SIZE);
  fail_unless (gst_query_find_allocation_meta (query,
          GST_VIDEO_META_API_TYPE, NULL));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));

  /* pool buffers are slots: written in place, no copy at render */
  for (i = 0; i < 3; i++) {
    GstMapInfo map;

    fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf,
            NULL), GST_FLOW_OK);
    fail_unless (gst_buffer_get_video_meta (buf) != NULL);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
    memset (map.data, 0x10 + i, map.size);
    gst_buffer_unmap (buf, &map);
    GST_BUFFER_PTS (buf) = i * (GST_SECOND / 30);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-in-place"), 3);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-copied"), 0);

  /* plain buffers are copied into a slot */
  for (i = 0; i < 2; i++) {
    buf = gst_buffer_new_allocate (NULL, FRAME_SIZE, NULL);
    gst_buffer_memset (buf, 0, 0x80 + i, FRAME_SIZE);
    GST_BUFFER_PTS (buf) = (3 + i) * (GST_SECOND / 30);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-in-place"), 3);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-copied"), 2);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), 5);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-dropped"), 0);
  /* nobody holds a frame: every slot is free again */
  fail_unless_equals_int (stat_uint (sink, "free-slots"), 4);

  /* a slot that upstream takes and drops unrendered comes back */
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_OK);
  fail_unless_equals_int (stat_uint (sink, "free-slots"), 3);
  gst_buffer_unref (buf);
  fail_unless_equals_int (stat_uint (sink, "free-slots"), 4);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), 5);

  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_query_unref (query);
  gst_caps_unref (caps);
  gst_harness_teardown (h);
  gst_object_unref (sink);
  /* the sink removes its own socket file when it stops */
  fail_if (g_file_test (path, G_FILE_TEST_EXISTS));
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 3. Producer and consumer in this process: the same bytes arrive */

#define N_EXCHANGE 16
#define N_HELD 3
#define EXCHANGE_RING 8

typedef struct
{
  GMutex lock;
  GPtrArray *frames;            /* GBytes, as they reached the sink */
} Captured;

static GstPadProbeReturn
capture_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Captured *cap = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gpointer data = NULL;
  gsize size = 0;

  gst_buffer_extract_dup (buf, 0, FRAME_SIZE, &data, &size);
  g_mutex_lock (&cap->lock);
  g_ptr_array_add (cap->frames, g_bytes_new_take (data, size));
  g_mutex_unlock (&cap->lock);
  return GST_PAD_PROBE_OK;
}

/* is the mapping that holds addr writable?  /proc/self/maps knows */
static gboolean
mapping_is_writable (gconstpointer addr)
{
  gchar *maps = NULL;
  gchar **lines;
  gboolean found = FALSE, writable = TRUE;
  guint i;

  fail_unless (g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL));
  lines = g_strsplit (maps, "\n", -1);
  for (i = 0; lines[i] && !found; i++) {
    guint64 start, end;
    gchar perms[5] = { 0, };

    if (sscanf (lines[i], "%" G_GINT64_MODIFIER "x-%" G_GINT64_MODIFIER
            "x %4s", &start, &end, perms) != 3)
      continue;
    if ((guint64) (guintptr) addr >= start && (guint64) (guintptr) addr < end) {
      found = TRUE;
      writable = perms[1] == 'w';
    }
  }
  g_strfreev (lines);
  g_free (maps);
  fail_unless (found, "no mapping holds %p", addr);
  return writable;
}

/* the src reads its frames in their slots: system memory (on a GPU host
 * auto takes GPU memory, and each frame is then downloaded) */
static gboolean
src_in_place (GstElement * src)
{
  GstStructure *s = get_stats (src);
  gboolean in_place = g_strcmp0 (gst_structure_get_string (s, "memory-type"),
      "system") == 0;

  gst_structure_free (s);
  return in_place;
}

/* Where there is no NVIDIA driver, system memory is used and both ends
 * say why: the consumer names its own missing driver, the producer says
 * it offers no GPU memory and why.  A build with CUDA (with the toolkit's
 * headers or without them: gpusharecudadriver.h) names the driver, a
 * build with -Dcuda=disabled says so.  Where a driver is present this
 * test does not judge the reason (the gpu suite does). */
#ifdef HAVE_CUDA
#define MISSING "libcuda.so.1"
#else
#define MISSING "built without CUDA"
#endif
static void
check_transport_reason (GstElement * src, GstElement * sink)
{
  GModule *cuda = g_module_open ("libcuda.so.1", G_MODULE_BIND_LAZY);
  GstStructure *s;
  const gchar *reason;

  if (cuda) {
    g_module_close (cuda);
    return;
  }
  s = get_stats (src);
  fail_unless_equals_string (gst_structure_get_string (s, "memory-type"),
      "system");
  reason = gst_structure_get_string (s, "memory-reason");
  /* what is missing: the driver, or CUDA in this build */
  fail_unless (reason && strstr (reason, MISSING),
      "the consumer does not say why it uses system memory (" MISSING
      "): %s", reason);
  gst_structure_free (s);
  s = get_stats (sink);
  reason = gst_structure_get_string (s, "gpu-memory");
  fail_unless (reason && strstr (reason, MISSING),
      "the producer does not say why it offers no GPU memory (" MISSING
      "): %s", reason);
  gst_structure_free (s);
}

/* in_place: the frame is read in its slot (system memory); otherwise (a
 * GPU transport downloads it) the buffer is the consumer's own copy */
static void
check_consumer_buffer (GstBuffer * buf, GBytes * expected, GstClockTime pts,
    gboolean in_place)
{
  GstMemory *mem;
  GstMapInfo map, wmap;
  GstVideoMeta *meta;
  GstBuffer *copy;
  gsize size;
  const guint8 *want = g_bytes_get_data (expected, &size);

  fail_unless_equals_int (size, FRAME_SIZE);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), pts);
  fail_unless_equals_int (gst_buffer_n_memory (buf), 1);

  meta = gst_buffer_get_video_meta (buf);
  fail_unless (meta != NULL, "no GstVideoMeta on a consumer buffer");
  fail_unless_equals_int (meta->format, GST_VIDEO_FORMAT_NV12);
  fail_unless_equals_int (meta->width, 64);
  fail_unless_equals_int (meta->height, 48);
  fail_unless_equals_int (meta->n_planes, 2);
  fail_unless_equals_int (meta->stride[0], 64);
  fail_unless_equals_int (meta->offset[1], 64 * 48);

  mem = gst_buffer_peek_memory (buf, 0);
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  fail_unless (map.size >= FRAME_SIZE);
  fail_unless (memcmp (map.data, want, FRAME_SIZE) == 0,
      "the consumer got other bytes than the producer sent");
  if (!in_place) {
    gst_memory_unmap (mem, &map);
    return;
  }
  fail_unless (GST_MEMORY_FLAG_IS_SET (mem, GST_MEMORY_FLAG_READONLY),
      "consumer memory is not marked read-only");
  /* the mapping itself is read-only, not just the flag on it */
  fail_if (mapping_is_writable (map.data),
      "the consumer's mapping of a slot is writable");
  /* write access to the slot is refused outright... */
  fail_if (gst_memory_map (mem, &wmap, GST_MAP_WRITE),
      "write map of a consumer slot succeeded");
  /* ...and a writable buffer around it gets a private copy */
  copy = gst_buffer_copy (buf);
  if (gst_buffer_map (copy, &wmap, GST_MAP_WRITE)) {
    fail_if (wmap.data == map.data, "write map handed out the slot itself");
    wmap.data[0] ^= 0xff;
    gst_buffer_unmap (copy, &wmap);
  }
  gst_buffer_unref (copy);
  fail_unless (memcmp (map.data, want, FRAME_SIZE) == 0,
      "writing a copy changed the slot");
  gst_memory_unmap (mem, &map);
}

static void
run_exchange (gboolean use_appsrc)
{
  gchar *path = socket_path ("exchange.sock");
  GstElement *producer, *sink, *appsrc = NULL;
  GstBuffer *held[N_HELD];
  GstMessage *msg;
  GstPad *pad;
  Captured cap;
  Consumer *c;
  gboolean in_place = TRUE;
  guint i;

  if (use_appsrc) {
    GstCaps *caps = gst_caps_from_string (CAPS_STR);

    producer = launch ("appsrc name=in format=time ! gpusharesink name=sink");
    appsrc = child (producer, "in");
    g_object_set (appsrc, "caps", caps, NULL);
    gst_caps_unref (caps);
  } else {
    /* snow: every frame differs, so a mix-up of slots cannot go unseen */
    producer = launch ("videotestsrc pattern=snow num-buffers=%d ! " CAPS_STR
        " ! gpusharesink name=sink", N_EXCHANGE);
  }
  sink = child (producer, "sink");
  /* the consumer must see every frame to compare them all */
  g_object_set (sink, "socket-path", path, "wait-for-connection", TRUE,
      "ring-size", EXCHANGE_RING, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "policy", "lossless");

  g_mutex_init (&cap.lock);
  cap.frames = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, capture_probe, &cap, NULL);
  gst_object_unref (pad);

  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  /* every frame in place, however many wait in the test's queue (past
   * max-in-place frames are copies: test_slots, test_filesink_small_frames) */
  g_object_set (c->src, "max-in-place", EXCHANGE_RING, NULL);
  consumer_start (c);

  if (use_appsrc) {
    for (i = 0; i < N_EXCHANGE; i++) {
      GstBuffer *buf = gst_buffer_new_allocate (NULL, FRAME_SIZE, NULL);
      GstMapInfo map;
      guint j;

      fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
      for (j = 0; j < FRAME_SIZE; j++)
        map.data[j] = (i * 31 + j * 7 + (j >> 8)) & 0xff;
      gst_buffer_unmap (buf, &map);
      GST_BUFFER_PTS (buf) = gst_util_uint64_scale (i, GST_SECOND, 30);
      GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
      fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (appsrc),
              buf), GST_FLOW_OK);
    }
    gst_app_src_end_of_stream (GST_APP_SRC (appsrc));
  }

  for (i = 0; i < N_EXCHANGE; i++) {
    GstBuffer *buf = g_async_queue_timeout_pop (c->buffers,
        TIMEOUT_MS * 1000);
    GBytes *expected;

    fail_unless (buf != NULL, "frame %u never arrived", i);
    if (i == 0)
      in_place = src_in_place (c->src);
    g_mutex_lock (&cap.lock);
    /* a frame reaches the consumer only after it passed the probe */
    fail_unless (i < cap.frames->len);
    expected = g_bytes_ref (g_ptr_array_index (cap.frames, i));
    g_mutex_unlock (&cap.lock);
    check_consumer_buffer (buf, expected,
        gst_util_uint64_scale (i, GST_SECOND, 30), in_place);
    g_bytes_unref (expected);
    if (i < N_HELD)
      held[i] = buf;
    else
      gst_buffer_unref (buf);
  }
  msg = pop_message (c->pipeline, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
      TIMEOUT_MS);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
      "the consumer did not reach EOS");
  gst_message_unref (msg);

  if (in_place) {
    /* the buffers still held keep exactly their slots... */
    fail_unless_equals_int (wait_stat_uint (sink, "free-slots",
            EXCHANGE_RING - N_HELD), EXCHANGE_RING - N_HELD);
    fail_unless_equals_int (client_stat_uint (sink, 0, "slots-held"), N_HELD);
  }
  /* ...and dropping them gives every slot back to the producer; copies
   * (GPU memory downloaded) held none */
  for (i = 0; i < N_HELD; i++)
    gst_buffer_unref (held[i]);
  fail_unless_equals_int (wait_stat_uint (sink, "free-slots",
          EXCHANGE_RING), EXCHANGE_RING);
  fail_unless_equals_int (client_stat_uint (sink, 0, "slots-held"), 0);

  fail_unless_equals_uint64 (stat_u64 (sink, "frames-rendered"), N_EXCHANGE);
  fail_unless_equals_uint64 (stat_u64 (sink, "frames-dropped"), 0);
  if (!in_place) {
    fail_unless_equals_uint64 (stat_u64 (sink, "frames-to-gpu"), N_EXCHANGE);
  } else if (use_appsrc) {
    fail_unless_equals_uint64 (stat_u64 (sink, "frames-copied"), N_EXCHANGE);
  } else {
    fail_unless_equals_uint64 (stat_u64 (sink, "frames-in-place"), N_EXCHANGE);
  }
  fail_unless_equals_uint64 (stat_u64 (c->src, "frames-received"), N_EXCHANGE);
  check_transport_reason (c->src, sink);

  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_ptr_array_unref (cap.frames);
  g_mutex_clear (&cap.lock);
  g_free (path);
}

/* Nothing in our logs is a capability: no fd number, no pointer-like
 * hex (handles, device pointers).  Every gpushare category at its most
 * verbose, through a whole exchange. */
typedef struct
{
  GMutex lock;
  GRegex *bad;
  guint n_lines;
  /* lines of the producer's core, the consumer's, and the transport */
  guint n_server, n_client, n_conn;
  gchar *first_bad;
} LogScan;

static void
log_scan_func (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  LogScan *scan = user_data;
  const gchar *text;

  if (!g_str_has_prefix (gst_debug_category_get_name (category), "gpushare"))
    return;
  text = gst_debug_message_get (message);
  g_mutex_lock (&scan->lock);
  scan->n_lines++;
  if (g_str_equal (gst_debug_category_get_name (category), "gpushareserver"))
    scan->n_server++;
  else if (g_str_equal (gst_debug_category_get_name (category),
          "gpushareclient"))
    scan->n_client++;
  else if (g_str_equal (gst_debug_category_get_name (category), "gpushareconn"))
    scan->n_conn++;
  if (!scan->first_bad && text && g_regex_match (scan->bad, text, 0, NULL))
    scan->first_bad = g_strdup_printf ("%s: %s", function, text);
  g_mutex_unlock (&scan->lock);
}

GST_START_TEST (test_logs_carry_no_handles)
{
  LogScan scan = { 0, };

  g_mutex_init (&scan.lock);
  scan.bad = g_regex_new ("\\bfds?\\s*[=:#]?\\s*[0-9]|0x[0-9a-fA-F]{6,}",
      0, 0, NULL);
  gst_debug_add_log_function (log_scan_func, &scan, NULL);
  gst_debug_set_threshold_from_string ("gpushare*:9", FALSE);
  run_exchange (FALSE);
  gst_debug_set_threshold_from_string ("gpushare*:3", TRUE);
  gst_debug_remove_log_function (log_scan_func);
  /* the exchange was logged, at every layer it went through (how many
   * lines depends on the build and on the path: with a frame lane, no
   * message per frame on the socket) */
  fail_unless (scan.n_lines > 50 && scan.n_server > 0 && scan.n_client > 0
      && scan.n_conn > 0, "only %u log lines were seen (%u of the producer's "
      "core, %u of the consumer's, %u of the transport)", scan.n_lines,
      scan.n_server, scan.n_client, scan.n_conn);
  fail_unless (scan.first_bad == NULL, "a log line carries a number that "
      "looks like an fd or a handle: %s", scan.first_bad);
  g_regex_unref (scan.bad);
  g_mutex_clear (&scan.lock);
}

GST_END_TEST;

GST_START_TEST (test_exchange_copied)
{
  run_exchange (TRUE);
}

GST_END_TEST;

GST_START_TEST (test_exchange_in_place)
{
  run_exchange (FALSE);
}

GST_END_TEST;

/* Downstream that proposes an fd allocator (as unixfdsink does) gets the
 * frames in place as GstFdMemory on the slot's own memfd: read-only (no
 * writable mapping of the fd), each holding its frame's bytes, so that an
 * element that passes fds on sends them without a copy; downstream that
 * does not ask gets the plain wrap. */
typedef struct
{
  guint n, fd_memory, bad;
} FdCheck;

static GstPadProbeReturn
propose_fd_allocator (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstQuery *q = GST_PAD_PROBE_INFO_QUERY (info);

  if (GST_QUERY_TYPE (q) == GST_QUERY_ALLOCATION) {
    GstAllocator *a = gst_fd_allocator_new ();

    gst_query_add_allocation_param (q, a, NULL);
    gst_object_unref (a);
  }
  return GST_PAD_PROBE_OK;
}

static void
fd_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, FdCheck * c)
{
  GstMemory *mem = gst_buffer_peek_memory (buf, 0);
  GstMapInfo map;

  c->n++;
  if (gst_is_fd_memory (mem)) {
    gint fd = gst_fd_memory_get_fd (mem);
    gchar *proc = g_strdup_printf ("/proc/self/fd/%d", fd);
    gchar *link = g_file_read_link (proc, NULL);
    gpointer w = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    c->fd_memory++;
    /* the slot's memfd, read-only, every byte of the white frame's luma */
    if (!link || !strstr (link, "gpushare-slot") || w != MAP_FAILED
        || !GST_MEMORY_IS_READONLY (mem))
      c->bad++;
    if (w != MAP_FAILED)
      munmap (w, 4096);
    g_free (link);
    g_free (proc);
  }
  if (gst_memory_map (mem, &map, GST_MAP_READ)) {
    if (map.data[0] != 235 || map.data[64 * 48 - 1] != 235)
      c->bad++;
    gst_memory_unmap (mem, &map);
  } else {
    c->bad++;
  }
}

GST_START_TEST (test_fd_memory_downstream)
{
  gboolean ask = __i__ == 0;
  gchar *path = socket_path ("fd.sock");
  GstElement *producer, *consumer, *sink;
  FdCheck c = { 0, };
  GstMessage *msg;
  GstPad *pad;

  consumer = launch ("gpusharesrc name=src socket-path=%s transport=system "
      "connection-timeout=%d ! fakesink name=out sync=false "
      "enable-last-sample=false signal-handoffs=true", path, TIMEOUT_MS);
  sink = child (consumer, "out");
  g_signal_connect (sink, "handoff", G_CALLBACK (fd_handoff), &c);
  if (ask) {
    pad = gst_element_get_static_pad (sink, "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
        propose_fd_allocator, NULL, NULL);
    gst_object_unref (pad);
  }
  fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  producer = launch ("videotestsrc num-buffers=30 pattern=white ! " CAPS_STR
      " ! gpusharesink socket-path=%s wait-for-connection=true", path);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  msg = pop_message (consumer, GST_MESSAGE_EOS | GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  fail_unless_equals_int (c.n, 30);
  fail_unless_equals_int (c.bad, 0);
  fail_unless_equals_int (c.fd_memory, ask ? 30 : 0);
  {
    GstStructure *s = get_stats (child (consumer, "src"));
    gboolean fd_memory = !ask;

    fail_unless (gst_structure_get_boolean (s, "fd-memory", &fd_memory)
        && fd_memory == ask);
    gst_structure_free (s);
  }
  gst_element_set_state (consumer, GST_STATE_NULL);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (consumer);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* The slots are in memory and mapped before the first frame, on both
 * sides: a page fault a page on the first pass through the ring is
 * thousands of faults a 4K frame, paid by the frames a consumer waits
 * for.  A live producer at 2 frames/s has written one or two of its eight
 * slots when the consumer has its first frame, and fakesink reads none:
 * every mapping of a slot in this process (the producer's, writable, and
 * the consumer's, read-only) must be resident all the same, its Rss in
 * /proc/self/smaps its size. */
typedef struct
{
  guint maps, writable, resident;
  GString *how;
} SlotMaps;

static void
scan_slot_maps (SlotMaps * m)
{
  gchar *smaps = NULL, **lines;
  guint i;
  gboolean in_slot = FALSE, writable = FALSE;
  guint64 size_kb = 0;

  fail_unless (g_file_get_contents ("/proc/self/smaps", &smaps, NULL, NULL));
  lines = g_strsplit (smaps, "\n", -1);
  for (i = 0; lines[i]; i++) {
    const gchar *l = lines[i];
    guint64 kb;

    /* a mapping's first line: "start-end perms offset dev inode path" */
    if (g_ascii_isxdigit (l[0]) && strchr (l, '-') && strchr (l, ' ')) {
      in_slot = strstr (l, "/memfd:gpushare-slot") != NULL;
      if (in_slot) {
        writable = strchr (l, ' ')[2] == 'w';
        m->maps++;
        m->writable += writable;
      }
      continue;
    }
    if (!in_slot)
      continue;
    if (sscanf (l, "Size: %" G_GUINT64_FORMAT " kB", &kb) == 1)
      size_kb = kb;
    else if (sscanf (l, "Rss: %" G_GUINT64_FORMAT " kB", &kb) == 1) {
      if (kb == size_kb && kb > 0)
        m->resident++;
      else
        g_string_append_printf (m->how, " a %s slot mapping with %"
            G_GUINT64_FORMAT " of its %" G_GUINT64_FORMAT " kB in memory;",
            writable ? "writable" : "read-only", kb, size_kb);
    }
  }
  g_strfreev (lines);
  g_free (smaps);
}

GST_START_TEST (test_slots_resident)
{
  gchar *path = socket_path ("resident.sock");
  GstElement *producer, *consumer;
  SlotMaps m = { 0, };
  GstSample *sample;

  producer = launch ("videotestsrc is-live=true pattern=white ! "
      "video/x-raw,format=NV12,width=640,height=480,framerate=2/1 ! "
      "gpusharesink socket-path=%s ring-size=8", path);
  consumer = launch ("gpusharesrc socket-path=%s transport=system "
      "connection-timeout=%d ! appsink name=out sync=false", path, TIMEOUT_MS);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  sample = gst_app_sink_try_pull_sample (GST_APP_SINK (child (consumer,
              "out")), TIMEOUT_MS * GST_MSECOND);
  fail_unless (sample != NULL, "the consumer got no frame");

  m.how = g_string_new (NULL);
  scan_slot_maps (&m);
  gst_sample_unref (sample);
  fail_unless (m.writable == 8 && m.maps == 16, "%u slot mappings, %u "
      "writable, where the producer's 8 and the consumer's 8 were expected",
      m.maps, m.writable);
  fail_unless (m.how->len == 0 && m.resident == m.maps, "%u of %u slot "
      "mappings in memory before their first frame:%s", m.resident, m.maps,
      m.how->str);
  g_string_free (m.how, TRUE);

  assert_no_error (producer);
  assert_no_error (consumer);
  gst_element_set_state (consumer, GST_STATE_NULL);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (consumer);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

#define N_PAIRS 4

static void
pull_frames (GstElement * consumer, guint n)
{
  GstAppSink *out = GST_APP_SINK (child (consumer, "out"));
  guint i;

  for (i = 0; i < n; i++) {
    GstSample *sample = gst_app_sink_try_pull_sample (out,
        TIMEOUT_MS * GST_MSECOND);

    fail_unless (sample != NULL, "a consumer got %u frames of %u", i, n);
    gst_sample_unref (sample);
  }
}

/* Four producers and four consumers in one process share one control
 * thread (each had one of its own: eight); one pair stopped, the others
 * stream on; with every element stopped, no control thread is left. */
GST_START_TEST (test_one_control_thread)
{
  GstElement *producer[N_PAIRS], *consumer[N_PAIRS];
  gchar *path[N_PAIRS];
  guint i;

  for (i = 0; i < N_PAIRS; i++) {
    gchar name[16];

    g_snprintf (name, sizeof (name), "ctl%u.sock", i);
    path[i] = socket_path (name);
    producer[i] = launch ("videotestsrc is-live=true ! video/x-raw,"
        "format=I420,width=64,height=48,framerate=100/1 ! gpusharesink "
        "socket-path=%s", path[i]);
    consumer[i] = launch ("gpusharesrc socket-path=%s transport=system "
        "connection-timeout=%d ! appsink name=out sync=false max-buffers=4 "
        "drop=true", path[i], TIMEOUT_MS);
    fail_if (gst_element_set_state (producer[i], GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
    fail_if (gst_element_set_state (consumer[i], GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
  }
  for (i = 0; i < N_PAIRS; i++)
    pull_frames (consumer[i], 5);
  fail_unless_equals_int (count_threads ("gpushare"), 1);
  fail_unless_equals_int (count_threads ("gpushareserver")
      + count_threads ("gpushareclient"), 0);

  gst_element_set_state (consumer[0], GST_STATE_NULL);
  gst_element_set_state (producer[0], GST_STATE_NULL);
  for (i = 1; i < N_PAIRS; i++)
    pull_frames (consumer[i], 10);
  fail_unless_equals_int (count_threads ("gpushare"), 1);

  for (i = 0; i < N_PAIRS; i++) {
    assert_no_error (producer[i]);
    assert_no_error (consumer[i]);
    gst_element_set_state (consumer[i], GST_STATE_NULL);
    gst_element_set_state (producer[i], GST_STATE_NULL);
    gst_object_unref (consumer[i]);
    gst_object_unref (producer[i]);
    g_free (path[i]);
  }
  fail_unless_equals_int (count_threads ("gpushare"), 0);
}

GST_END_TEST;

/* The process's one control thread maps each consumer's ring, device work
 * that can take long on a GPU (imports under contention, many streams
 * read by one process): eight rings mapped in a row, 600 ms each
 * (GPUSHARE_TEST_SLOW_AT), block a consumer process's control thread for
 * 4.8 s, sixteen heartbeat intervals of 300 ms (three of them without a
 * byte and a peer is taken for hung).  Its connections still send
 * PINGs between the maps (gpushare_conn_pulse ()), so that the producers,
 * in processes of their own, do not take the silence for a hung consumer:
 * every consumer streams on, no error.  Without the PINGs the producers
 * drop their consumers ("no heartbeat") and the consumers fail.  The
 * producers are gpushare-test-peer processes (the sanitized build's too,
 * which a gst-launch-1.0 of the system could not load). */
#define N_SLOW 8
GST_START_TEST (test_busy_control_thread_keeps_its_peers)
{
  const gchar *peer = g_getenv ("GPUSHARE_TEST_PEER");
  GstElement *consumer[N_SLOW];
  gchar *path[N_SLOW];
  GPid pid[N_SLOW];
  guint i;
  gint status;

  fail_unless (peer != NULL, "GPUSHARE_TEST_PEER must name the "
      "gpushare-test-peer binary (run the test through meson test)");
  /* the producers: processes of their own, with control threads of their
   * own that nothing slows; reaped here (a child watch would open
   * descriptors for good) */
  for (i = 0; i < N_SLOW; i++) {
    gchar name[16];
    const gchar *argv[] = { peer, "producer", "--socket", NULL,
      "--source", "videotestsrc", "--live", "--frames", "100000",
      "--width", "64", "--height", "48", "--set", "heartbeat-interval=300",
      NULL
    };
    GError *error = NULL;

    g_snprintf (name, sizeof (name), "slow%u.sock", i);
    path[i] = socket_path (name);
    argv[3] = path[i];
    fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
            G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
            NULL, &pid[i], &error), "gpushare-test-peer: %s",
        error ? error->message : "?");
  }
  for (i = 0; i < N_SLOW; i++)
    while (!g_file_test (path[i], G_FILE_TEST_EXISTS)) {
      fail_if (waitpid (pid[i], &status, WNOHANG) == pid[i],
          "producer %u exited (status 0x%x)", i, status);
      g_usleep (10000);
    }

  g_setenv ("GPUSHARE_TEST_SLOW_AT", "src:premap:600", TRUE);
  for (i = 0; i < N_SLOW; i++)
    consumer[i] = launch ("gpusharesrc socket-path=%s transport=system "
        "heartbeat-interval=300 connection-timeout=%d ! appsink name=out "
        "sync=false max-buffers=4 drop=true", path[i], TIMEOUT_MS);
  for (i = 0; i < N_SLOW; i++)
    fail_if (gst_element_set_state (consumer[i], GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < N_SLOW; i++)
    pull_frames (consumer[i], 5);
  /* past the maps: a heartbeat lost in them has been noticed by now */
  g_usleep (3 * 300 * 1000);
  for (i = 0; i < N_SLOW; i++)
    pull_frames (consumer[i], 5);
  g_unsetenv ("GPUSHARE_TEST_SLOW_AT");

  for (i = 0; i < N_SLOW; i++) {
    assert_no_error (consumer[i]);
    gst_element_set_state (consumer[i], GST_STATE_NULL);
    gst_object_unref (consumer[i]);
  }
  for (i = 0; i < N_SLOW; i++) {
    /* it streamed all along: nothing made it quit */
    fail_if (waitpid (pid[i], &status, WNOHANG) == pid[i],
        "producer %u exited (status 0x%x)", i, status);
    kill (pid[i], SIGTERM);
    fail_unless (waitpid (pid[i], &status, 0) == pid[i]);
    g_spawn_close_pid (pid[i]);
    g_free (path[i]);
  }
}

GST_END_TEST;

/* One piece of device work that alone outlasts three heartbeats (one
 * driver call of seconds: an export or an import while many processes
 * make their CUDA contexts at once, as 80 processes on one GPU did): the
 * pulses between pieces cannot cover it, the process's busy pulse does
 * (gpushare_conn_busy_begin ()).  Case 0: the consumer maps its ring for
 * 1.5 s, five heartbeats of 300 ms (before, its producer dropped it, "no
 * heartbeat"); case 1: the producer exports its slots for 1.5 s (before,
 * the consumer gave the producer up, "The producer stopped responding");
 * case 2: the consumer maps for 2.5 s, past the producer's
 * handshake-timeout of 1 s (before, its producer dropped it, "handshake
 * timed out"; heard from, it may take GPUSHARE_SERVER_MAP_TIMEOUTS of
 * them).  Each streams on, no error on either side.  The producer is a
 * gpushare-test-peer process: its own control thread, its own pulse. */
GST_START_TEST (test_long_device_work_keeps_its_peers)
{
  gboolean producer_slow = __i__ == 1;
  const gchar *peer = g_getenv ("GPUSHARE_TEST_PEER");
  gchar *path = socket_path ("longwork.sock");
  const gchar *argv[] = { peer, "producer", "--socket", path,
    "--source", "videotestsrc", "--live", "--frames", "100000",
    "--width", "64", "--height", "48", "--set", "heartbeat-interval=300",
    "--set", __i__ == 2 ? "handshake-timeout=1000" : "handshake-timeout=5000",
    NULL
  };
  GstElement *consumer;
  GError *error = NULL;
  GPid pid;
  gint status;

  fail_unless (peer != NULL, "GPUSHARE_TEST_PEER must name the "
      "gpushare-test-peer binary (run the test through meson test)");
  g_setenv ("GPUSHARE_TEST_SLOW_AT", producer_slow ? "sink:preexport:1500" :
      __i__ == 0 ? "src:premap:1500" : "src:premap:2500", TRUE);
  fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
          G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
          NULL, &pid, &error), "gpushare-test-peer: %s",
      error ? error->message : "?");
  while (!g_file_test (path, G_FILE_TEST_EXISTS)) {
    fail_if (waitpid (pid, &status, WNOHANG) == pid,
        "the producer exited (status 0x%x)", status);
    g_usleep (10000);
  }
  if (producer_slow)
    g_unsetenv ("GPUSHARE_TEST_SLOW_AT");

  consumer = launch ("gpusharesrc socket-path=%s transport=system "
      "heartbeat-interval=300 connection-timeout=%d ! appsink name=out "
      "sync=false max-buffers=4 drop=true", path, TIMEOUT_MS);
  fail_if (gst_element_set_state (consumer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  pull_frames (consumer, 5);
  /* past the long work: a heartbeat lost in it has been noticed by now */
  g_usleep (3 * 300 * 1000);
  pull_frames (consumer, 5);
  g_unsetenv ("GPUSHARE_TEST_SLOW_AT");

  assert_no_error (consumer);
  gst_element_set_state (consumer, GST_STATE_NULL);
  gst_object_unref (consumer);
  fail_if (waitpid (pid, &status, WNOHANG) == pid,
      "the producer exited (status 0x%x)", status);
  kill (pid, SIGTERM);
  fail_unless (waitpid (pid, &status, 0) == pid);
  g_spawn_close_pid (pid);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 4. Formats: rows copied whole, and layouts a stride cannot describe
 * refused */

/* A copied frame of packed 4:2:2 at an odd width keeps the last chroma
 * sample of every row (gst_video_frame_copy () dropped it: YUY2 rows of 5
 * pixels are 3 macropixels, 12 bytes, of which it copied 10).  Case 0
 * through system memory; case 1 as auto takes it, which on a GPU host is
 * an upload into a GPU slot and a download out of it, plane by plane (the
 * same rows were cut short there). */
GST_START_TEST (test_copy_odd_yuy2)
{
  gboolean force_system = __i__ == 0;
  gboolean in_place;
  gchar *path = socket_path ("yuy2.sock");
  GstElement *producer, *appsrc;
  GstVideoInfo info;
  GstVideoFrame in, out;
  GstBuffer *buf, *got;
  GstMapInfo map;
  GstCaps *caps;
  Consumer *c;
  guint j, r;

  fail_unless (gst_video_info_set_format (&info, GST_VIDEO_FORMAT_YUY2, 5, 4));
  GST_VIDEO_INFO_FPS_N (&info) = 30;
  GST_VIDEO_INFO_FPS_D (&info) = 1;
  caps = gst_video_info_to_caps (&info);
  producer = launch ("appsrc name=in format=time ! gpusharesink name=sink");
  appsrc = child (producer, "in");
  g_object_set (appsrc, "caps", caps, NULL);
  gst_caps_unref (caps);
  g_object_set (child (producer, "sink"), "socket-path", path,
      "wait-for-connection", TRUE, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  c = consumer_new (path, TRUE);
  if (force_system)
    gst_util_set_object_arg (G_OBJECT (c->src), "transport", "system");
  consumer_start (c);

  /* appsrc's buffer is not one of the sink's slots: it is copied in */
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  for (j = 0; j < map.size; j++)
    map.data[j] = 1 + j % 251;
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = 0;
  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  fail_unless (gst_video_frame_map (&in, &info, buf, GST_MAP_READ));
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (appsrc),
          gst_buffer_ref (buf)), GST_FLOW_OK);

  got = g_async_queue_timeout_pop (c->buffers, TIMEOUT_MS * 1000);
  fail_unless (got != NULL, "the frame never arrived");
  in_place = src_in_place (c->src);
  GST_INFO ("YUY2 frame through %s memory", in_place ? "system" : "GPU");
  fail_unless (gst_video_frame_map (&out, &info, got, GST_MAP_READ));
  for (r = 0; r < 4; r++)
    fail_unless (memcmp ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&in, 0) +
            r * GST_VIDEO_FRAME_PLANE_STRIDE (&in, 0),
            (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&out, 0) +
            r * GST_VIDEO_FRAME_PLANE_STRIDE (&out, 0), 12) == 0,
        "row %u of the YUY2 frame differs", r);
  gst_video_frame_unmap (&out);
  gst_video_frame_unmap (&in);
  gst_buffer_unref (got);
  gst_buffer_unref (buf);
  fail_unless_equals_uint64 (stat_u64 (child (producer, "sink"),
          in_place ? "frames-copied" : "frames-to-gpu"), 1);

  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

/* A format whose rows a stride does not describe (tiled) cannot be
 * shared: the sink says so at negotiation, instead of announcing a layout
 * every consumer refuses. */
GST_START_TEST (test_sink_refuses_tiled)
{
  gchar *path = socket_path ("tiled.sock");
  GstElement *producer, *appsrc;
  GstCaps *caps;

  producer = launch ("appsrc name=in format=time ! gpusharesink name=sink");
  appsrc = child (producer, "in");
  caps = gst_caps_from_string ("video/x-raw,format=NV12_4L4,width=64,"
      "height=48,framerate=30/1");
  g_object_set (appsrc, "caps", caps, NULL);
  gst_caps_unref (caps);
  g_object_set (child (producer, "sink"), "socket-path", path, NULL);
  fail_if (gst_element_set_state (producer, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  gst_app_src_push_buffer (GST_APP_SRC (appsrc),
      gst_buffer_new_allocate (NULL, 64 * 48 * 3 / 2, NULL));
  assert_error (producer, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

static Suite *
gpushare_transfer_suite (void)
{
  Suite *s = suite_create ("gpushare_transfer");
  TCase *tc_inspect = tcase_create ("inspect");
  TCase *tc_harness = tcase_create ("harness");
  TCase *tc_nopool = tcase_create ("no-pool");
  TCase *tc_exchange = tcase_create ("exchange");
  TCase *tc_formats = tcase_create ("formats");

  suite_add_tcase (s, tc_inspect);
  tcase_add_checked_fixture (tc_inspect, elements_setup, elements_teardown);
  tcase_add_test (tc_inspect, test_inspect);
  suite_add_tcase (s, tc_harness);
  tcase_add_checked_fixture (tc_harness, elements_setup, elements_teardown);
  tcase_add_test (tc_harness, test_sink_harness_pool);
  suite_add_tcase (s, tc_nopool);
  tcase_add_test (tc_nopool, test_sink_without_our_pool);
  suite_add_tcase (s, tc_exchange);
  tcase_add_checked_fixture (tc_exchange, elements_setup, elements_teardown);
  tcase_add_test (tc_exchange, test_exchange_copied);
  tcase_add_test (tc_exchange, test_exchange_in_place);
  tcase_add_loop_test (tc_exchange, test_fd_memory_downstream, 0, 2);
  tcase_add_test (tc_exchange, test_logs_carry_no_handles);
  tcase_add_test (tc_exchange, test_slots_resident);
  tcase_add_test (tc_exchange, test_one_control_thread);
  tcase_add_test (tc_exchange, test_busy_control_thread_keeps_its_peers);
  tcase_add_loop_test (tc_exchange, test_long_device_work_keeps_its_peers, 0,
      3);
  suite_add_tcase (s, tc_formats);
  tcase_add_checked_fixture (tc_formats, elements_setup, elements_teardown);
  tcase_add_test (tc_formats, test_sink_refuses_tiled);
  tcase_add_loop_test (tc_formats, test_copy_odd_yuy2, 0, 2);
  return s;
}

GST_CHECK_MAIN (gpushare_transfer);
