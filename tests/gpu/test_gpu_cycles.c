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
 *             video/x-raw(memory:CUDAMemory) ! fakesink, cycled PLAYING ->
 *             first buffer -> NULL.  10
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#define SLOT_SAMPLES 50
#define MAX_FAILED_CYCLES 10
#define MAX_PRINTED_FAILURES 5
#define N_REASONS 32
/* below the meson timeout (600 s): a hang is a failure, not a stuck test */
#define CONSUMER_ALARM_S 480
#define PRODUCER_ALARM_S 540
/* the consumer stops cycling after this long, and still compares */
#define CYCLES_BUDGET_S 400

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

static void
producer_sample (GstElement * sink, CUcontext ctx, ProducerSample * s)
{
  gint64 end = g_get_monotonic_time () + SETTLE_TIMEOUT_MS * 1000;
  guint i;

  /* the consumer is in NULL: its goodbye may still be on its way */
  while ((s->clients = gpu_test_num_clients (sink)) > 0
      && g_get_monotonic_time () < end)
    g_usleep (5000);
  s->settled = s->clients == 0;
  s->fds = gpu_test_settled_fds ();
  s->free_mem = gpu_test_device_free (ctx);
  /* upstream may hold one slot it is filling (videotestsrc writes into
   * the sink's pool, then waits for the clock): min >= ring-size - 1.  A
   * slot a gone consumer still held would be missing from every sample. */
  s->slots_min = G_MAXUINT;
  s->slots_max = 0;
  for (i = 0; i < SLOT_SAMPLES; i++) {
    guint n = gpu_test_stat_uint (sink, "free-slots");

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
producer (gint ctl, gpointer data)
{
  const gchar *path = data;
  GError *error = NULL;
  SinkCounts counts;
  ProducerSample warm, last;
  GstElement *pipeline, *sink;
  GstBus *bus;
  GEnumClass *reasons;
  GType reason_type;
  CUcontext ctx = NULL;
  guint ring_size = 0, expected = 0, i, others = 0;
  gboolean ok = TRUE, have_warm = FALSE, have_last = FALSE, bus_ok = TRUE;
  GString *why;
  GpuTestCtl m;

  memset (&counts, 0, sizeof (counts));
  memset (&warm, 0, sizeof (warm));
  memset (&last, 0, sizeof (last));
  if (!gpu_test_hold_primary (&ctx, &error)) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }

  pipeline = gpu_test_producer_pipeline (path, 120, &sink);
  if (!pipeline)
    return 1;
  g_object_get (sink, "ring-size", &ring_size, NULL);
  g_signal_connect (sink, "client-connected",
      G_CALLBACK (on_client_connected), &counts);
  g_signal_connect (sink, "client-removed", G_CALLBACK (on_client_removed),
      &counts);
  /* registered by the sink's class, which exists now */
  reason_type = g_type_from_name ("GstGpuShareClientRemoveReason");
  reasons = reason_type ? g_type_class_ref (reason_type) : NULL;
  bus = gst_element_get_bus (pipeline);

  if (!gpu_test_producer_play (pipeline, sink, bus, START_TIMEOUT_MS))
    return 1;
  if (!gpu_test_ctl_send (ctl, CTL_READY, 0))
    return 1;

  for (;;) {
    struct pollfd pfd = { ctl, POLLIN, 0 };
    gint r = poll (&pfd, 1, 100);

    bus_ok = gpu_test_drain_bus ("producer", bus) && bus_ok;
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      continue;
    if (!gpu_test_ctl_recv (ctl, &m, REPLY_TIMEOUT_MS)) {
      g_print ("producer: the consumer went away before the end\n");
      ok = FALSE;
      producer_sample (sink, ctx, &last);
      have_last = TRUE;
      break;
    }
    if (m.cmd == CTL_WARM) {
      producer_sample (sink, ctx, &warm);
      have_warm = TRUE;
      if (!gpu_test_ctl_send (ctl, CTL_WARM_DONE, 0))
        ok = FALSE;
    } else if (m.cmd == CTL_END) {
      expected = m.value;
      producer_sample (sink, ctx, &last);
      have_last = TRUE;
      if (!gpu_test_ctl_send (ctl, CTL_END_DONE, 0)
          || !gpu_test_ctl_expect (ctl, CTL_PRINTED, NULL, REPLY_TIMEOUT_MS))
        ok = FALSE;
      break;
    }
  }
  bus_ok = gpu_test_drain_bus ("producer", bus) && bus_ok;

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
      gpu_test_stat_u64 (sink, "frames-rendered"),
      gpu_test_stat_u64 (sink, "frames-to-gpu"),
      gpu_test_stat_u64 (sink, "frames-dropped"));
  if (have_warm)
    ok = print_producer_sample ("after warm-up", &warm, ring_size) && ok;
  if (have_last)
    ok = print_producer_sample ("at the end", &last, ring_size) && ok;
  if (have_warm && have_last) {
    g_print ("producer: fds %d -> %d: %s\n", warm.fds, last.fds,
        warm.fds == last.fds ? "PASS" : "FAIL");
    gpu_test_print_mem ("producer", warm.free_mem, last.free_mem);
    ok = ok && warm.fds == last.fds
        && gpu_test_mem_ok (warm.free_mem, last.free_mem);
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
  gpu_test_drain_bus ("producer", bus);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  if (reasons)
    g_type_class_unref (reasons);
  gpu_test_release_primary ();
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
  mem = gpu_test_stat_string (c->src, "memory-type");
  smode = gpu_test_stat_string (c->src, "sync-mode");
  reason = gpu_test_stat_string (c->src, "memory-reason");
  if (!why && strcmp (mem, "cuda-vmm") != 0)
    why = "the transport is not cuda-vmm";
  if (!why && strcmp (p->mode, "auto") != 0 && strcmp (smode, p->mode) != 0)
    why = "not the sync mode asked for";
  if (got && !p->picked) {
    p->picked = g_strdup (smode);
    p->output = gpu_test_stat_string (c->src, "output-memory");
  } else if (!why && got && strcmp (p->picked, smode) != 0) {
    why = "auto picked another sync mode than before";
  }

  gst_element_set_state (c->pipeline, GST_STATE_NULL);
  *cycle_ns = gpu_test_now_ns () - t0;

  print = c->printed < MAX_PRINTED_FAILURES;
  if (!gpu_test_drain_consumer_bus (c->bus, &vmm, &other, print) && !why)
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
  CUcontext ctx = NULL;
  gsize mem0 = 0, mem1 = 0;
  gint fds0 = -1, fds1 = -1;
  guint i, k, got = 0;
  gboolean ok = TRUE, aborted = FALSE;
  guint64 scratch_cycle, scratch_first, start = gpu_test_now_ns ();

  memset (&c, 0, sizeof (c));
  if (!gpushare_cuda_probe (DEVICE, &caps, &error)
      || !gpu_test_hold_primary (&ctx, &error)) {
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
  /* its bus keeps what a cycle posted past NULL: run_cycle () reads it
   * then */
  c.pipeline = gpu_test_consumer_pipeline (path, CONNECTION_TIMEOUT_MS,
      on_buffer, &c, &c.src);
  if (!c.pipeline)
    return 1;
  c.bus = gst_element_get_bus (c.pipeline);

  if (!gpu_test_ctl_expect (ctl, CTL_READY, NULL, START_TIMEOUT_MS + 5000)) {
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
  if (!gpu_test_ctl_send (ctl, CTL_WARM, got)
      || !gpu_test_ctl_expect (ctl, CTL_WARM_DONE, NULL, REPLY_TIMEOUT_MS)) {
    g_print ("consumer: the producer did not answer\n");
    return 1;
  }
  fds0 = gpu_test_settled_fds ();
  mem0 = gpu_test_device_free (ctx);

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
            (CYCLES_BUDGET_S) " s, in sync-mode %s: stopping here\n", p->mode);
        aborted = TRUE;
        break;
      }
    }
  }

  if (!gpu_test_ctl_send (ctl, CTL_END, got)
      || !gpu_test_ctl_expect (ctl, CTL_END_DONE, NULL, REPLY_TIMEOUT_MS)) {
    g_print ("consumer: the producer did not answer\n");
    ok = FALSE;
  }
  fds1 = gpu_test_settled_fds ();
  mem1 = gpu_test_device_free (ctx);
  /* let the producer print first, then wait for it to hang up */
  if (gpu_test_ctl_send (ctl, CTL_PRINTED, 0)) {
    GpuTestCtl m;

    gpu_test_ctl_recv (ctl, &m, REPLY_TIMEOUT_MS);
  }

  for (i = 0; i < n_phases; i++)
    ok = print_phase (&phases[i]) && ok;
  if (aborted)
    ok = FALSE;
  g_print ("consumer: fds %d -> %d: %s\n", fds0, fds1,
      fds0 == fds1 ? "PASS" : "FAIL");
  gpu_test_print_mem ("consumer", mem0, mem1);
  ok = ok && fds0 == fds1 && gpu_test_mem_ok (mem0, mem1);

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
  gpu_test_release_primary ();
  return ok ? 0 : 1;
}

/* what the consumer's child is given */
typedef struct
{
  const gchar *path;
  Phase *phases;
  guint n_phases;
} ConsumerArgs;

static gint
consumer_child (gint ctl, gpointer data)
{
  ConsumerArgs *args = data;

  return consumer (ctl, args->path, args->phases, args->n_phases);
}

/* ------------------------------------------------------------------------ */
/* the parent: never touches CUDA, nor GStreamer's plugins (scanning the
 * registry in this process could load nvcodec, which calls cuInit) */

/* in a child: are the elements here, and a GPU that exports VMM as fds? */
static gint
probe (gint sock, gpointer data)
{
  static const gchar *elements[] = { "videotestsrc", "fakesink",
    "gpusharesink", "gpusharesrc"
  };
  GError *error = NULL;
  GpuShareCudaCaps caps;

  gst_init (NULL, NULL);
  if (!gpu_test_have_elements (elements, G_N_ELEMENTS (elements)))
    return SKIP;
  if (!gpushare_cuda_probe (DEVICE, &caps, &error)) {
    g_print ("SKIP: no usable GPU: %s\n", error->message);
    return SKIP;
  }
  if (!caps.vmm || !caps.posix_fd) {
    g_print ("SKIP: no usable GPU: %s has no %s\n", caps.name,
        !caps.vmm ? "VMM" : "POSIX-fd VMM export");
    return SKIP;
  }
  gpu_test_print_device (&caps);
  return 0;
}

int
main (int argc, char **argv)
{
  Phase phases[4];
  GError *error = NULL;
  gchar *dir, *path;
  ConsumerArgs args;
  GpuTestRole producer_role = { "producer", producer, NULL, PRODUCER_ALARM_S };
  GpuTestRole consumer_role = { "consumer", consumer_child, &args,
    CONSUMER_ALARM_S
  };
  guint i, cycles, mode_cycles;
  gboolean ok;
  guint64 t0;

  setvbuf (stdout, NULL, _IOLBF, 0);

  if (gpu_test_probe_with (probe) != 0)
    return SKIP;

  cycles = gpu_test_env_uint ("GPUSHARE_CYCLES", DEFAULT_CYCLES);
  mode_cycles = gpu_test_env_uint ("GPUSHARE_MODE_CYCLES", DEFAULT_MODE_CYCLES);
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
  producer_role.data = path;
  args.path = path;
  args.phases = phases;
  args.n_phases = G_N_ELEMENTS (phases);

  t0 = gpu_test_now_ns ();
  ok = gpu_test_run_pair (&producer_role, &consumer_role,
      GPU_TEST_PAIR_REAP_CONSUMER_FIRST, &error);
  if (error) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }

  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  g_print ("%s (%.1f s)\n", ok ? "PASS: every check passed" :
      "FAIL: see above", (gpu_test_now_ns () - t0) / 1e9);
  return ok ? 0 : 1;
}
