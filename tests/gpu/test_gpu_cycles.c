/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * 1000 connect/disconnect cycles of gpusharesrc against one gpusharesink,
 * through CUDA VMM memory, with no growth of device memory (cuMemGetInfo)
 * or fds in either process.
 *
 *   producer  videotestsrc is-live=true pattern=ball !
 *             video/x-raw,format=NV12,width=1920,height=1080,framerate=120/1
 *             ! gpusharesink socket-path=DIR/sock
 *             for the whole test (policy auto: leaky, upstream is live).
 *   consumer  one process, one pipeline: gpusharesrc transport=cuda !
 *             fakesink, cycled PLAYING -> first buffer -> NULL.  10
 *             warm-up cycles go through every sync mode, then 1000 cycles
 *             with sync-mode auto and 50 each with host, semaphore and
 *             event.  Every cycle must get a frame, through cuda-vmm (the
 *             src's "stats" and its gpushare-transport message), in the
 *             sync mode asked for.
 *
 * After the warm-up and at the end, the consumer asks the producer (over a
 * socketpair) to sample: the producer waits for num-clients to drop to 0,
 * counts its fds, reads cuMemGetInfo and samples the sink's free-slots;
 * then the consumer counts its own fds and reads cuMemGetInfo.  fds must be
 * exactly equal, device free memory may not shrink by more than 2 MiB, and
 * every consumer must have been removed with a goodbye (or a hang-up).
 *
 * cuMemGetInfo reports the whole device: both processes' samples see both
 * processes' memory (and any other process on the GPU).  Each process
 * holds the device's primary context (its own retain) for its whole run,
 * as test_cuda_vmm does: the sample needs a context, and without the hold
 * the consumer's primary context would be destroyed and made again at
 * every cycle (gpusharesrc retains it only while it has slots mapped),
 * which would both cost a context creation per cycle and free, with the
 * context, anything leaked into it.
 *
 * fork() happens before any CUDA call: the parent never touches CUDA.
 * Prints one SKIP line and exits 77 where no usable GPU or one of the
 * elements is missing.  GPUSHARE_CYCLES and GPUSHARE_MODE_CYCLES override
 * the number of auto-mode cycles (1000) and of cycles per forced mode (50).
 */

#include <gst/gst.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "gpusharecuda.h"
#include "gpu-test-util.h"

#define SKIP 77
#define DEVICE 0
#define DEFAULT_CYCLES 1000
#define DEFAULT_MODE_CYCLES 50
#define WARMUP_CYCLES 10
#define FRAME_TIMEOUT_MS 5000   /* PLAYING to the first buffer */
#define STATE_TIMEOUT_MS 5000
#define CONNECTION_TIMEOUT_MS 5000
#define START_TIMEOUT_MS 20000  /* producer start, first frame rendered */
#define REPLY_TIMEOUT_MS 20000  /* a sample on the other side */
#define SETTLE_TIMEOUT_MS 5000  /* num-clients back to 0 */
#define FD_SETTLE_MS 2000
#define FD_STABLE_SAMPLES 3
#define SLOT_SAMPLES 50
#define MEM_SLACK (2 * 1024 * 1024)
#define MAX_FAILED_CYCLES 10
#define MAX_PRINTED_FAILURES 5
#define N_REASONS 32
/* below the meson timeout (600 s): a hang is a failure, not a stuck test */
#define CONSUMER_ALARM_S 480
#define PRODUCER_ALARM_S 540
/* the consumer stops cycling after this long, and still compares */
#define CYCLES_BUDGET_S 400

/* over the socketpair between consumer and producer */
typedef struct
{
  guint8 cmd;
  guint8 reserved[3];
  guint32 value;
} Ctl;

enum
{
  CTL_READY = 'R',              /* producer -> consumer: frames flow */
  CTL_WARM = 'W',               /* consumer -> producer: sample, warm-up */
  CTL_WARM_DONE = 'w',
  CTL_END = 'E',                /* value: cycles that got a frame */
  CTL_END_DONE = 'e',
  CTL_PRINTED = 'D',            /* consumer sampled: producer may print */
};

/* ------------------------------------------------------------------------ */
/* plumbing */

static G_GNUC_NORETURN void
child_exit (gint rc)
{
  fflush (stdout);
  fflush (stderr);
  _exit (rc);
}

static gdouble
mib (gsize bytes)
{
  return bytes / (1024.0 * 1024.0);
}

/* the fd count once it held still for a few samples: a closing thread or
 * socket may still be on its way out */
static gint
settled_fds (void)
{
  gint64 end = g_get_monotonic_time () + FD_SETTLE_MS * 1000;
  gint last = gpu_test_count_fds (), same = 1;

  while (same < FD_STABLE_SAMPLES && g_get_monotonic_time () < end) {
    gint n;

    g_usleep (50000);
    n = gpu_test_count_fds ();
    same = n == last ? same + 1 : 1;
    last = n;
  }
  return last;
}

static gboolean
ctl_send (gint sock, guint8 cmd, guint32 value)
{
  Ctl m = { cmd, {0, 0, 0}, value };

  return gpu_test_write_all (sock, &m, sizeof (m));
}

/* FALSE on hang-up, error or timeout (timeout_ms < 0: none) */
static gboolean
ctl_recv (gint sock, Ctl * m, gint timeout_ms)
{
  return gpu_test_read_all (sock, m, sizeof (*m), timeout_ms);
}

static gboolean
ctl_expect (gint sock, guint8 cmd, guint32 * value, gint timeout_ms)
{
  Ctl m;

  if (!ctl_recv (sock, &m, timeout_ms))
    return FALSE;
  if (value)
    *value = m.value;
  return m.cmd == cmd;
}

/* ------------------------------------------------------------------------ */
/* CUDA: only in the children */

/* loads our copy of the driver table and retains the primary context for
 * the process's whole run (see the top of the file) */
static gboolean
hold_primary (CUcontext * ctx, GError ** error)
{
  GpuShareCudaApi *cu;
  CUdevice dev;

  if (!gpushare_cuda_load (error))
    return FALSE;
  cu = gpushare_cuda ();
  return gpushare_cuda_check (cu->cuDeviceGet (&dev, DEVICE), "cuDeviceGet",
      error) && gpushare_cuda_check (cu->cuDevicePrimaryCtxRetain (ctx, dev),
      "cuDevicePrimaryCtxRetain", error);
}

static void
release_primary (void)
{
  CUdevice dev;

  if (gpushare_cuda ()->cuDeviceGet (&dev, DEVICE) == CUDA_SUCCESS)
    gpushare_cuda ()->cuDevicePrimaryCtxRelease (dev);
}

/* free memory of the whole device; 0 when the call failed */
static gsize
device_free (CUcontext ctx)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  size_t free_b = 0, total = 0;
  CUcontext dummy;
  CUresult res;

  res = cu->cuCtxPushCurrent (ctx);
  if (res == CUDA_SUCCESS) {
    res = cu->cuMemGetInfo (&free_b, &total);
    cu->cuCtxPopCurrent (&dummy);
  }
  if (res != CUDA_SUCCESS) {
    g_printerr ("    cuMemGetInfo: %s\n",
        gpushare_cuda_result_to_string (res));
    return 0;
  }
  return free_b;
}

static gboolean
mem_ok (gsize before, gsize after)
{
  return before > 0 && after > 0 && after + MEM_SLACK >= before;
}

static void
print_mem (const gchar * who, gsize before, gsize after)
{
  g_print ("%s: device free memory %.1f -> %.1f MiB (whole device; grew by "
      "%.1f MiB, limit %.1f): %s\n", who, mib (before), mib (after),
      before > after ? mib (before - after) : 0.0, mib (MEM_SLACK),
      mem_ok (before, after) ? "PASS" : "FAIL");
}

/* ------------------------------------------------------------------------ */
/* GStreamer helpers */

static gchar *
stat_string (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  gchar *v = NULL;

  g_object_get (e, "stats", &s, NULL);
  if (s) {
    v = g_strdup (gst_structure_get_string (s, field));
    gst_structure_free (s);
  }
  return v ? v : g_strdup ("?");
}

static guint64
stat_u64 (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  guint64 v = 0;

  g_object_get (e, "stats", &s, NULL);
  if (s) {
    gst_structure_get_uint64 (s, field, &v);
    gst_structure_free (s);
  }
  return v;
}

static guint
stat_uint (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  guint v = 0;

  g_object_get (e, "stats", &s, NULL);
  if (s) {
    gst_structure_get_uint (s, field, &v);
    gst_structure_free (s);
  }
  return v;
}

static void
print_error_message (const gchar * who, GstMessage * msg)
{
  GError *err = NULL;
  gchar *debug = NULL;

  gst_message_parse_error (msg, &err, &debug);
  g_print ("    %s: error from %s: %s (%s)\n", who,
      GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), err->message,
      debug ? debug : "");
  g_clear_error (&err);
  g_free (debug);
}

/* ------------------------------------------------------------------------ */
/* producer */

typedef struct
{
  gint connected;               /* atomic: the signals come from the sink's */
  gint refused;                 /* control thread */
  gint removed;
  gint reasons[N_REASONS];
} SinkCounts;

typedef struct
{
  gboolean settled;             /* num-clients dropped to 0 */
  guint clients;
  gint fds;
  gsize free_mem;
  guint slots_min;
  guint slots_max;
} ProducerSample;

static void
on_client_connected (GstElement * sink, guint id, gpointer user_data)
{
  SinkCounts *c = user_data;

  g_atomic_int_inc (&c->connected);
}

static void
on_client_removed (GstElement * sink, guint id, gint reason, gpointer user_data)
{
  SinkCounts *c = user_data;

  if (id == 0) {
    g_atomic_int_inc (&c->refused);
    return;
  }
  g_atomic_int_inc (&c->removed);
  if (reason >= 0 && reason < N_REASONS)
    g_atomic_int_inc (&c->reasons[reason]);
}

static guint
num_clients (GstElement * sink)
{
  guint n = 0;

  g_object_get (sink, "num-clients", &n, NULL);
  return n;
}

static gboolean
drain_producer_bus (GstBus * bus)
{
  GstMessage *msg;
  gboolean ok = TRUE;

  while ((msg = gst_bus_pop (bus))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      print_error_message ("producer", msg);
      ok = FALSE;
    }
    gst_message_unref (msg);
  }
  return ok;
}

static void
producer_sample (GstElement * sink, CUcontext ctx, ProducerSample * s)
{
  gint64 end = g_get_monotonic_time () + SETTLE_TIMEOUT_MS * 1000;
  guint i;

  /* the consumer is in NULL: its goodbye may still be on its way */
  while ((s->clients = num_clients (sink)) > 0 && g_get_monotonic_time () < end)
    g_usleep (5000);
  s->settled = s->clients == 0;
  s->fds = settled_fds ();
  s->free_mem = device_free (ctx);
  /* upstream may hold one slot it is filling (videotestsrc writes into
   * the sink's pool, then waits for the clock): min >= ring-size - 1.  A
   * slot a gone consumer still held would be missing from every sample. */
  s->slots_min = G_MAXUINT;
  s->slots_max = 0;
  for (i = 0; i < SLOT_SAMPLES; i++) {
    guint n = stat_uint (sink, "free-slots");

    s->slots_min = MIN (s->slots_min, n);
    s->slots_max = MAX (s->slots_max, n);
    g_usleep (2000);
  }
}

static gboolean
print_producer_sample (const gchar * when, const ProducerSample * s,
    guint ring_size)
{
  gboolean ok = s->settled && s->slots_min + 1 >= ring_size;

  g_print ("producer: %s: num-clients %u, free-slots min %u max %u of %u "
      "over %u samples (upstream may hold one): %s\n", when, s->clients,
      s->slots_min, s->slots_max, ring_size, SLOT_SAMPLES,
      ok ? "PASS" : "FAIL");
  return ok;
}

static gint
producer (gint ctl, const gchar * path)
{
  GError *error = NULL;
  SinkCounts counts;
  ProducerSample warm, last;
  GstElement *pipeline, *sink;
  GstBus *bus;
  GEnumClass *reasons;
  GType reason_type;
  CUcontext ctx = NULL;
  gchar *desc;
  guint ring_size = 0, expected = 0, i, others = 0;
  gint64 end;
  gboolean ok = TRUE, have_warm = FALSE, have_last = FALSE, bus_ok = TRUE;
  GString *why;
  Ctl m;

  memset (&counts, 0, sizeof (counts));
  memset (&warm, 0, sizeof (warm));
  memset (&last, 0, sizeof (last));
  if (!hold_primary (&ctx, &error)) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }

  desc = g_strdup_printf ("videotestsrc is-live=true pattern=ball ! "
      "video/x-raw,format=NV12,width=1920,height=1080,framerate=120/1 ! "
      "gpusharesink name=sink socket-path=\"%s\"", path);
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_get (sink, "ring-size", &ring_size, NULL);
  g_signal_connect (sink, "client-connected",
      G_CALLBACK (on_client_connected), &counts);
  g_signal_connect (sink, "client-removed", G_CALLBACK (on_client_removed),
      &counts);
  /* registered by the sink's class, which exists now */
  reason_type = g_type_from_name ("GstGpuShareClientRemoveReason");
  reasons = reason_type ? g_type_class_ref (reason_type) : NULL;
  bus = gst_element_get_bus (pipeline);

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    drain_producer_bus (bus);
    g_print ("producer: the pipeline did not start\n");
    return 1;
  }
  end = g_get_monotonic_time () + START_TIMEOUT_MS * 1000;
  while (stat_u64 (sink, "frames-rendered") == 0
      && g_get_monotonic_time () < end)
    g_usleep (10000);
  if (!drain_producer_bus (bus) || stat_u64 (sink, "frames-rendered") == 0) {
    g_print ("producer: no frame rendered within %d ms\n", START_TIMEOUT_MS);
    return 1;
  }
  if (!ctl_send (ctl, CTL_READY, 0))
    return 1;

  for (;;) {
    struct pollfd pfd = { ctl, POLLIN, 0 };
    gint r = poll (&pfd, 1, 100);

    bus_ok = drain_producer_bus (bus) && bus_ok;
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      continue;
    if (!ctl_recv (ctl, &m, REPLY_TIMEOUT_MS)) {
      g_print ("producer: the consumer went away before the end\n");
      ok = FALSE;
      producer_sample (sink, ctx, &last);
      have_last = TRUE;
      break;
    }
    if (m.cmd == CTL_WARM) {
      producer_sample (sink, ctx, &warm);
      have_warm = TRUE;
      if (!ctl_send (ctl, CTL_WARM_DONE, 0))
        ok = FALSE;
    } else if (m.cmd == CTL_END) {
      expected = m.value;
      producer_sample (sink, ctx, &last);
      have_last = TRUE;
      if (!ctl_send (ctl, CTL_END_DONE, 0)
          || !ctl_expect (ctl, CTL_PRINTED, NULL, REPLY_TIMEOUT_MS))
        ok = FALSE;
      break;
    }
  }
  bus_ok = drain_producer_bus (bus) && bus_ok;

  /* the report: after the consumer sampled, so the lines do not mix */
  why = g_string_new (NULL);
  for (i = 0; i < N_REASONS; i++) {
    gint n = g_atomic_int_get (&counts.reasons[i]);
    GEnumValue *v;

    if (!n)
      continue;
    v = reasons ? g_enum_get_value (reasons, i) : NULL;
    g_string_append_printf (why, "%s%s %d", why->len ? ", " : "",
        v ? v->value_nick : "?", n);
    if (!v || (strcmp (v->value_nick, "goodbye") != 0
            && strcmp (v->value_nick, "hangup") != 0))
      others += n;
  }
  {
    gint connected = g_atomic_int_get (&counts.connected);
    gint removed = g_atomic_int_get (&counts.removed);
    gint refused = g_atomic_int_get (&counts.refused);
    gboolean pass = connected == removed && (guint) connected == expected
        && refused == 0 && others == 0;

    g_print ("producer: clients connected %d (consumer counted %u), "
        "removed %d (%s), refused %d: %s\n", connected, expected, removed,
        why->len ? why->str : "none", refused, pass ? "PASS" : "FAIL");
    ok = ok && pass;
  }
  g_string_free (why, TRUE);
  g_print ("producer: frames rendered %" G_GUINT64_FORMAT ", to GPU %"
      G_GUINT64_FORMAT ", dropped %" G_GUINT64_FORMAT "\n",
      stat_u64 (sink, "frames-rendered"), stat_u64 (sink, "frames-to-gpu"),
      stat_u64 (sink, "frames-dropped"));
  if (have_warm)
    ok = print_producer_sample ("after warm-up", &warm, ring_size) && ok;
  if (have_last)
    ok = print_producer_sample ("at the end", &last, ring_size) && ok;
  if (have_warm && have_last) {
    g_print ("producer: fds %d -> %d: %s\n", warm.fds, last.fds,
        warm.fds == last.fds ? "PASS" : "FAIL");
    print_mem ("producer", warm.free_mem, last.free_mem);
    ok = ok && warm.fds == last.fds && mem_ok (warm.free_mem, last.free_mem);
  } else {
    g_print ("producer: no samples to compare: FAIL\n");
    ok = FALSE;
  }
  if (!bus_ok) {
    g_print ("producer: the pipeline posted errors: FAIL\n");
    ok = FALSE;
  }
  fflush (stdout);
  close (ctl);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  drain_producer_bus (bus);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  if (reasons)
    g_type_class_unref (reasons);
  release_primary ();
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* consumer */

typedef struct
{
  const gchar *mode;            /* sync-mode of the src */
  guint cycles;
  gboolean supported;
  guint done;                   /* cycles that got a frame */
  guint failed;
  guint64 *cycle_ns;            /* PLAYING .. NULL returned */
  guint64 *first_ns;            /* PLAYING .. first buffer */
  gchar *picked;                /* sync mode the src reported */
  gchar *output;                /* output-memory of the src */
} Phase;

typedef struct
{
  GstElement *pipeline;
  GstElement *src;
  GstBus *bus;
  GMutex lock;
  GCond cond;
  guint buffers;
  guint printed;                /* failure reports so far */
  guint total_failed;
} Consumer;

static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Consumer *c = user_data;

  g_mutex_lock (&c->lock);
  c->buffers++;
  g_cond_broadcast (&c->cond);
  g_mutex_unlock (&c->lock);
  return GST_PAD_PROBE_OK;
}

static gboolean
wait_first_buffer (Consumer * c)
{
  gint64 end = g_get_monotonic_time () + FRAME_TIMEOUT_MS * 1000;
  gboolean got;

  g_mutex_lock (&c->lock);
  while (c->buffers == 0)
    if (!g_cond_wait_until (&c->cond, &c->lock, end))
      break;
  got = c->buffers > 0;
  g_mutex_unlock (&c->lock);
  return got;
}

/* FALSE on an error; counts gpushare-transport messages */
static gboolean
drain_consumer_bus (Consumer * c, guint * vmm, gchar ** other, gboolean print)
{
  GstMessage *msg;
  gboolean ok = TRUE;

  while ((msg = gst_bus_pop (c->bus))) {
    const GstStructure *s = gst_message_get_structure (msg);

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      if (print)
        print_error_message ("consumer", msg);
      ok = FALSE;
    } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT && s
        && gst_structure_has_name (s, "gpushare-transport")) {
      const gchar *type = gst_structure_get_string (s, "memory-type");

      if (g_strcmp0 (type, "cuda-vmm") == 0) {
        (*vmm)++;
      } else if (other && !*other) {
        *other = g_strdup_printf ("%s (%s)", type ? type : "?",
            gst_structure_get_string (s, "reason"));
      }
    }
    gst_message_unref (msg);
  }
  return ok;
}

/* one cycle: PLAYING, the first buffer, NULL */
static gboolean
run_cycle (Consumer * c, Phase * p, guint64 * cycle_ns, guint64 * first_ns)
{
  GstState state = GST_STATE_VOID_PENDING;
  gchar *mem = NULL, *smode = NULL, *reason = NULL, *other = NULL;
  const gchar *why = NULL;
  gboolean got = FALSE, print;
  guint vmm = 0;
  guint64 t0;

  gst_util_set_object_arg (G_OBJECT (c->src), "sync-mode", p->mode);
  g_mutex_lock (&c->lock);
  c->buffers = 0;
  g_mutex_unlock (&c->lock);

  t0 = gpu_test_now_ns ();
  if (gst_element_set_state (c->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    why = "the pipeline did not start";
  } else if (!(got = wait_first_buffer (c))) {
    why = "no buffer within " G_STRINGIFY (FRAME_TIMEOUT_MS) " ms";
  } else if (gst_element_get_state (c->pipeline, &state, NULL,
          STATE_TIMEOUT_MS * GST_MSECOND) != GST_STATE_CHANGE_SUCCESS
      || state != GST_STATE_PLAYING) {
    why = "PLAYING not reached";
  }
  *first_ns = gpu_test_now_ns () - t0;
  /* while connected: the src's view of the transport */
  mem = stat_string (c->src, "memory-type");
  smode = stat_string (c->src, "sync-mode");
  reason = stat_string (c->src, "memory-reason");
  if (!why && strcmp (mem, "cuda-vmm") != 0)
    why = "the transport is not cuda-vmm";
  if (!why && strcmp (p->mode, "auto") != 0 && strcmp (smode, p->mode) != 0)
    why = "not the sync mode asked for";
  if (got && !p->picked) {
    p->picked = g_strdup (smode);
    p->output = stat_string (c->src, "output-memory");
  } else if (!why && got && strcmp (p->picked, smode) != 0) {
    why = "auto picked another sync mode than before";
  }

  gst_element_set_state (c->pipeline, GST_STATE_NULL);
  *cycle_ns = gpu_test_now_ns () - t0;

  print = c->printed < MAX_PRINTED_FAILURES;
  if (!drain_consumer_bus (c, &vmm, &other, print) && !why)
    why = "the pipeline posted an error";
  if (!why && vmm != 1)
    why = other ? "the gpushare-transport message is not cuda-vmm" :
        "not one gpushare-transport message";

  if (why) {
    c->total_failed++;
    if (print) {
      c->printed++;
      g_print ("    consumer: cycle with sync-mode %s failed: %s; memory-type "
          "%s, sync-mode %s (%s)%s%s\n", p->mode, why, mem, smode, reason,
          other ? "; transport message: " : "", other ? other : "");
    }
  }
  g_free (mem);
  g_free (smode);
  g_free (reason);
  g_free (other);
  return why == NULL;
}

static gint
cmp_u64 (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;

  return x < y ? -1 : x > y;
}

static gdouble
percentile_ms (guint64 * v, guint n, guint pct)
{
  guint i;

  if (n == 0)
    return 0.0;
  qsort (v, n, sizeof (guint64), cmp_u64);
  i = MIN (n - 1, n * pct / 100);
  return v[i] / 1e6;
}

static gboolean
print_phase (Phase * p)
{
  gboolean ok = p->failed == 0 && p->done == p->cycles;

  if (!p->supported) {
    g_print ("consumer: sync-mode %s: SKIP (this GPU does not support it)\n",
        p->mode);
    return TRUE;
  }
  g_print ("consumer: sync-mode %s (src reported %s, output %s): %u/%u "
      "cycles got a frame through cuda-vmm; cycle p50 %.2f ms p99 %.2f ms, "
      "first buffer p50 %.2f ms p99 %.2f ms: %s\n", p->mode,
      p->picked ? p->picked : "-", p->output ? p->output : "-", p->done,
      p->cycles, percentile_ms (p->cycle_ns, p->done + p->failed, 50),
      percentile_ms (p->cycle_ns, p->done + p->failed, 99),
      percentile_ms (p->first_ns, p->done + p->failed, 50),
      percentile_ms (p->first_ns, p->done + p->failed, 99),
      ok ? "PASS" : "FAIL");
  return ok;
}

static gint
consumer (gint ctl, const gchar * path, Phase * phases, guint n_phases)
{
  GError *error = NULL;
  GpuShareCudaCaps caps;
  Consumer c;
  Phase warm_phase;
  GstElement *sink;
  GstPad *pad;
  CUcontext ctx = NULL;
  gsize mem0 = 0, mem1 = 0;
  gint fds0 = -1, fds1 = -1;
  guint i, k, got = 0;
  gboolean ok = TRUE, aborted = FALSE;
  guint64 scratch_cycle, scratch_first, start = gpu_test_now_ns ();

  memset (&c, 0, sizeof (c));
  if (!gpushare_cuda_probe (DEVICE, &caps, &error)
      || !hold_primary (&ctx, &error)) {
    g_print ("consumer: %s\n", error->message);
    return 1;
  }
  for (i = 0; i < n_phases; i++) {
    Phase *p = &phases[i];

    p->supported = strcmp (p->mode, "semaphore") == 0 ? caps.mem_ops_64 :
        strcmp (p->mode, "event") == 0 ? caps.ipc_event : TRUE;
    p->cycle_ns = g_new0 (guint64, MAX (p->cycles, 1));
    p->first_ns = g_new0 (guint64, MAX (p->cycles, 1));
  }

  g_mutex_init (&c.lock);
  g_cond_init (&c.cond);
  c.pipeline = gst_pipeline_new ("consumer");
  c.src = gst_element_factory_make ("gpusharesrc", "src");
  sink = gst_element_factory_make ("fakesink", "sink");
  g_object_set (c.src, "socket-path", path, "connection-timeout",
      CONNECTION_TIMEOUT_MS, NULL);
  gst_util_set_object_arg (G_OBJECT (c.src), "transport", "cuda");
  g_object_set (sink, "sync", FALSE, "enable-last-sample", FALSE, NULL);
  gst_bin_add_many (GST_BIN (c.pipeline), c.src, sink, NULL);
  if (!gst_element_link (c.src, sink)) {
    g_print ("consumer: cannot link gpusharesrc to fakesink\n");
    return 1;
  }
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &c, NULL);
  gst_object_unref (pad);
  c.bus = gst_element_get_bus (c.pipeline);
  /* keep what a cycle posted past NULL: run_cycle () reads it then */
  gst_pipeline_set_auto_flush_bus (GST_PIPELINE (c.pipeline), FALSE);

  if (!ctl_expect (ctl, CTL_READY, NULL, START_TIMEOUT_MS + 5000)) {
    g_print ("consumer: the producer did not start\n");
    return 1;
  }

  /* warm-up: every supported mode at least once, so that whatever the
   * driver and GStreamer set up once per process is in the baseline */
  for (k = 0; k < WARMUP_CYCLES; k++) {
    /* a bare phase: the warm-up counts toward no phase's figures */
    memset (&warm_phase, 0, sizeof (warm_phase));
    warm_phase.mode = phases[k % n_phases].supported ?
        phases[k % n_phases].mode : "auto";
    if (run_cycle (&c, &warm_phase, &scratch_cycle, &scratch_first))
      got++;
    g_free (warm_phase.picked);
    g_free (warm_phase.output);
  }
  ok = got == WARMUP_CYCLES;
  g_print ("consumer: warm-up: %u/%u cycles got a frame: %s\n", got,
      WARMUP_CYCLES, ok ? "PASS" : "FAIL");

  /* baseline: the producer first (its last client gone), then us */
  if (!ctl_send (ctl, CTL_WARM, got)
      || !ctl_expect (ctl, CTL_WARM_DONE, NULL, REPLY_TIMEOUT_MS)) {
    g_print ("consumer: the producer did not answer\n");
    return 1;
  }
  fds0 = settled_fds ();
  mem0 = device_free (ctx);

  for (i = 0; i < n_phases && !aborted; i++) {
    Phase *p = &phases[i];

    if (!p->supported)
      continue;
    for (k = 0; k < p->cycles; k++) {
      guint n = p->done + p->failed;

      if (run_cycle (&c, p, &p->cycle_ns[n], &p->first_ns[n])) {
        p->done++;
        got++;
      } else {
        p->failed++;
      }
      if (c.total_failed >= MAX_FAILED_CYCLES) {
        g_print ("consumer: %u cycles failed: giving up\n", c.total_failed);
        aborted = TRUE;
        break;
      }
      if (gpu_test_now_ns () - start > CYCLES_BUDGET_S * G_GUINT64_CONSTANT
          (1000000000)) {
        g_print ("consumer: out of time after " G_STRINGIFY
            (CYCLES_BUDGET_S) " s, in sync-mode %s: stopping here\n",
            p->mode);
        aborted = TRUE;
        break;
      }
    }
  }

  if (!ctl_send (ctl, CTL_END, got)
      || !ctl_expect (ctl, CTL_END_DONE, NULL, REPLY_TIMEOUT_MS)) {
    g_print ("consumer: the producer did not answer\n");
    ok = FALSE;
  }
  fds1 = settled_fds ();
  mem1 = device_free (ctx);
  /* let the producer print first, then wait for it to hang up */
  if (ctl_send (ctl, CTL_PRINTED, 0)) {
    Ctl m;

    ctl_recv (ctl, &m, REPLY_TIMEOUT_MS);
  }

  for (i = 0; i < n_phases; i++)
    ok = print_phase (&phases[i]) && ok;
  if (aborted)
    ok = FALSE;
  g_print ("consumer: fds %d -> %d: %s\n", fds0, fds1,
      fds0 == fds1 ? "PASS" : "FAIL");
  print_mem ("consumer", mem0, mem1);
  ok = ok && fds0 == fds1 && mem_ok (mem0, mem1);

  gst_element_set_state (c.pipeline, GST_STATE_NULL);
  gst_object_unref (c.bus);
  gst_object_unref (c.pipeline);
  for (i = 0; i < n_phases; i++) {
    g_free (phases[i].cycle_ns);
    g_free (phases[i].first_ns);
    g_free (phases[i].picked);
    g_free (phases[i].output);
  }
  g_mutex_clear (&c.lock);
  g_cond_clear (&c.cond);
  release_primary ();
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* the parent: never touches CUDA, nor GStreamer's plugins (scanning the
 * registry in this process could load nvcodec, which calls cuInit) */

/* in a child: are the elements here, and a GPU that exports VMM as fds? */
static gint
probe (void)
{
  static const gchar *elements[] = { "videotestsrc", "fakesink",
    "gpusharesink", "gpusharesrc"
  };
  GError *error = NULL;
  GpuShareCudaCaps caps;
  guint i;

  gst_init (NULL, NULL);
  for (i = 0; i < G_N_ELEMENTS (elements); i++) {
    GstElementFactory *f = gst_element_factory_find (elements[i]);

    if (!f) {
      g_print ("SKIP: GStreamer element %s is missing\n", elements[i]);
      return SKIP;
    }
    gst_object_unref (f);
  }
  if (!gpushare_cuda_probe (DEVICE, &caps, &error)) {
    g_print ("SKIP: no usable GPU: %s\n", error->message);
    return SKIP;
  }
  if (!caps.vmm || !caps.posix_fd) {
    g_print ("SKIP: no usable GPU: %s has no %s\n", caps.name,
        !caps.vmm ? "VMM" : "POSIX-fd VMM export");
    return SKIP;
  }
  g_print ("device: %s, driver %d, ipc-event=%d mem-ops-64=%d "
      "compute-mode=%d; CUDA_MPS_PIPE_DIRECTORY=%s\n", caps.name,
      caps.driver_version, caps.ipc_event, caps.mem_ops_64,
      caps.compute_mode, g_getenv ("CUDA_MPS_PIPE_DIRECTORY") ?
      g_getenv ("CUDA_MPS_PIPE_DIRECTORY") : "unset");
  return 0;
}

static gboolean
reap (pid_t pid, const gchar * who)
{
  gint status = 0;

  if (pid < 0 || waitpid (pid, &status, 0) < 0)
    return FALSE;
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
    return TRUE;
  if (WIFSIGNALED (status))
    g_print ("%s: killed by signal %d%s\n", who, WTERMSIG (status),
        WTERMSIG (status) == SIGALRM ? " (it hung)" : "");
  else
    g_print ("%s: exited with %d\n", who, WEXITSTATUS (status));
  return FALSE;
}

static guint
env_uint (const gchar * name, guint fallback)
{
  const gchar *v = g_getenv (name);
  guint64 n;

  if (!v || !g_ascii_string_to_unsigned (v, 10, 0, 100000, &n, NULL))
    return fallback;
  return (guint) n;
}

/* in a child: GStreamer starts here, after the fork */
static void
run_child (gint alarm_s)
{
  alarm (alarm_s);
  gst_init (NULL, NULL);
  g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
}

int
main (int argc, char **argv)
{
  Phase phases[4];
  GError *error = NULL;
  gchar *dir, *path;
  pid_t pid, ppid, cpid;
  gint status = 0, sv[2];
  guint i, cycles, mode_cycles;
  gboolean ok;
  guint64 t0;

  setvbuf (stdout, NULL, _IOLBF, 0);

  pid = fork ();
  if (pid == 0)
    child_exit (probe ());
  if (pid < 0 || waitpid (pid, &status, 0) < 0 || !WIFEXITED (status)) {
    g_print ("SKIP: no usable GPU: the probe process crashed\n");
    return SKIP;
  }
  if (WEXITSTATUS (status) != 0)
    return SKIP;

  cycles = env_uint ("GPUSHARE_CYCLES", DEFAULT_CYCLES);
  mode_cycles = env_uint ("GPUSHARE_MODE_CYCLES", DEFAULT_MODE_CYCLES);
  memset (phases, 0, sizeof (phases));
  phases[0].mode = "auto";
  phases[0].cycles = cycles;
  phases[1].mode = "host";
  phases[2].mode = "semaphore";
  phases[3].mode = "event";
  for (i = 1; i < G_N_ELEMENTS (phases); i++)
    phases[i].cycles = mode_cycles;
  g_print ("%d warm-up cycles through every sync mode, then %u with "
      "sync-mode auto and %u each with host, semaphore and event\n",
      WARMUP_CYCLES, cycles, mode_cycles);

  dir = g_dir_make_tmp ("gpushare-cycles-XXXXXX", &error);
  if (!dir) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }
  path = g_build_filename (dir, "sock", NULL);
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
    g_print ("FAIL: socketpair: %s\n", g_strerror (errno));
    return 1;
  }

  t0 = gpu_test_now_ns ();
  ppid = fork ();
  if (ppid == 0) {
    close (sv[1]);
    run_child (PRODUCER_ALARM_S);
    child_exit (producer (sv[0], path));
  }
  cpid = fork ();
  if (cpid == 0) {
    close (sv[0]);
    run_child (CONSUMER_ALARM_S);
    child_exit (consumer (sv[1], path, phases, G_N_ELEMENTS (phases)));
  }
  close (sv[0]);
  close (sv[1]);
  ok = reap (cpid, "consumer");
  ok = reap (ppid, "producer") && ok;

  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  g_print ("%s (%.1f s)\n", ok ? "PASS: every check passed" :
      "FAIL: see above", (gpu_test_now_ns () - t0) / 1e9);
  return ok ? 0 : 1;
}
