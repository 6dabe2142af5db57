/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * 100 producer restarts under one gpusharesrc, through CUDA VMM memory,
 * with no growth of fds, host memory or device memory (cuMemGetInfo).
 *
 *   consumer  one process, one pipeline, PLAYING for the whole test:
 *             gpusharesrc transport=cuda producer-lost=reconnect
 *             connection-timeout=20000 !
 *             video/x-raw(memory:CUDAMemory) ! fakesink sync=false
 *             (enable-last-sample=false: a last sample would keep an old
 *             session's buffer past a restart).
 *   producer  videotestsrc is-live=true pattern=ball !
 *             video/x-raw,format=NV12,width=1920,height=1080,framerate=60/1
 *             ! gpusharesink socket-path=DIR/sock
 *
 * Phase A: 50 restarts of one producer process, its pipeline to NULL and
 * to PLAYING again.  Phase B: 50 restarts by a new process on the same
 * socket path; the process before it ends alternately by a clean exit
 * (pipeline to NULL) and by SIGKILL, which leaves its socket file behind
 * for the next producer to replace.  After every restart the consumer must
 * be streaming again within 15 s: the src's "reconnects" reached the
 * restarts so far, the new session posted its gpushare-transport message
 * of cuda-vmm, a buffer came after that message, and the src's stats say
 * cuda-vmm.  The consumer's bus never carries an error, nor does any
 * producer's; at the end "reconnects" is exactly the number of restarts.
 *
 * Samples, each taken while the consumer streams from a producer (the
 * producer waits for num-clients 1):
 *   - the consumer's fds (settled) and VmRSS, after restart 5 of phase A
 *     and at the end: fds equal, VmRSS grown by less than 8 MiB;
 *   - the phase-A producer's fds, after its restarts 5 and 50: equal;
 *   - device free memory, read by the consumer: after restarts 5 and 50
 *     of phase A, and after restarts 6 and 50 of phase B; it may not
 *     shrink by more than 2 MiB within a phase.  The producer alive at
 *     the two samples of a phase must be comparable: in phase A it is the
 *     same process; in phase B each sample has a fresh process, and both
 *     follow a restart of the same kind (the 6th and the 50th both come
 *     after a SIGKILL).  Phase A's baseline is not compared with the end:
 *     that would set a process that lived through 50 restarts against a
 *     fresh one.
 *
 * The device memory samples are what finds a consumer that keeps the
 * mappings of a producer that went away.  VMM physical memory is freed
 * only once its last handle and its last mapping are gone, in every
 * process: the exporter's release frees nothing while an importer still
 * maps the slots, and neither does its death by SIGKILL (the kernel closes
 * its fds, the importer's references live on).  A consumer that did not
 * unmap and release an old session's slots would keep a whole ring of
 * 1080p slots (tens of MiB) alive per restart, far past the 2 MiB allowed
 * over a phase.  The same samples find a producer that leaks a ring at each
 * in-process restart.  The fd samples find a connection or a slot's fd
 * left open on either side.
 *
 * cuMemGetInfo reports the whole device.  Each child holds the device's
 * primary context (its own retain) for its whole run, as test_gpu_cycles
 * does: the sample needs a context, and without the hold the consumer's
 * primary context would come and go with the src's mappings, freeing
 * with it anything leaked into it.
 *
 * fork() happens before any CUDA call: the parent never touches CUDA, nor
 * GStreamer; it drives the children over socketpairs.  Prints one SKIP
 * line and exits 77 where no usable GPU or one of the elements is missing.
 * GPUSHARE_RESTARTS overrides the number of restarts per phase (50); the
 * phase-A baseline is then taken after restart min (5, n), the phase-B one
 * after the first restart from there on that follows the same kind of end
 * as restart n does.
 */

#include <gst/gst.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "gpusharecuda.h"
#include "gpu-test-util.h"

#define SKIP GPU_TEST_SKIP
#define DEVICE 0
#define DEFAULT_RESTARTS 50     /* per phase */
#define BASELINE_RESTART 5
#define CONNECTION_TIMEOUT_MS 20000
#define CONFIRM_TIMEOUT_MS 15000        /* a restart to the next buffer */
#define START_TIMEOUT_MS 20000  /* PLAYING to the first frame rendered */
#define SPAWN_TIMEOUT_MS 30000  /* a new producer process to its first frame */
#define CLIENT_TIMEOUT_MS 5000  /* the producer waits for its consumer */
#define REPLY_TIMEOUT_MS 20000  /* any other answer */
#define RSS_SLACK (8 * 1024 * 1024)
#define MAX_FAILURES 10
#define MAX_PRINTED_FAILURES 5
/* below the meson timeout (600 s): a hang is a failure, not a stuck test */
#define CONSUMER_ALARM_S 540
#define PRODUCER_ALARM_S 540    /* from the start of the test */
/* the parent stops restarting after this long, and still compares */
#define RESTARTS_BUDGET_S 420

/* over the socketpairs between the parent and each child */
enum
{
  CTL_READY = 'R',              /* producer: the first frame rendered */
  CTL_RESTART = 'S',            /* to the producer: NULL, PLAYING again */
  CTL_RESTART_DONE = 's',       /* value: 1 when a frame was rendered */
  CTL_STATUS = 'B',             /* to the producer: its bus so far */
  CTL_STATUS_DONE = 'b',        /* value: 1 when it carried no error */
  CTL_EXIT = 'X',               /* to the producer: NULL, then exit */
  CTL_EXIT_DONE = 'x',          /* value: 1 when its bus stayed clean */
  CTL_CONFIRM = 'C',            /* to the consumer; value: restarts so far */
  CTL_CONFIRM_DONE = 'c',       /* value: 1 when streaming again */
  CTL_SAMPLE = 'M',             /* to either: answered by the four below */
  CTL_SAMPLE_CLIENTS = 'n',     /* num-clients (producer) */
  CTL_SAMPLE_FDS = 'f',
  CTL_SAMPLE_RSS = 'r',         /* VmRSS, bytes */
  CTL_SAMPLE_MEM = 'm',         /* device free memory, bytes */
  CTL_STOP = 'T',               /* to the consumer: its figures, then NULL */
  CTL_STOP_RECONNECTS = 'y',    /* value: the src's reconnects */
  CTL_STOP_SESSIONS = 'z',      /* value: cuda-vmm transport messages */
  CTL_STOP_DONE = 't',          /* value: 1 when NULL and the bus clean */
};

/* VmRSS of this process in bytes, 0 when it cannot be read */
static guint64
rss_bytes (void)
{
  gchar *text = NULL;
  const gchar *line;
  guint64 kib = 0;

  if (!g_file_get_contents ("/proc/self/status", &text, NULL, NULL))
    return 0;
  line = strstr (text, "\nVmRSS:");
  if (line)
    kib = g_ascii_strtoull (line + strlen ("\nVmRSS:"), NULL, 10);
  g_free (text);
  return kib * 1024;
}

static gboolean
send_sample (gint ctl, guint clients, gint fds, gsize mem)
{
  return gpu_test_ctl_send (ctl, CTL_SAMPLE_CLIENTS, clients)
      && gpu_test_ctl_send (ctl, CTL_SAMPLE_FDS, (guint64) (gint64) fds)
      && gpu_test_ctl_send (ctl, CTL_SAMPLE_RSS, rss_bytes ())
      && gpu_test_ctl_send (ctl, CTL_SAMPLE_MEM, mem);
}

/* ------------------------------------------------------------------------ */
/* producer */

typedef struct
{
  GstElement *pipeline;
  GstElement *sink;
  GstBus *bus;
  CUcontext ctx;
  gboolean bus_ok;
  gboolean exited;              /* asked to, and the pipeline got to NULL */
} Producer;

static void
producer_drain (Producer * p)
{
  p->bus_ok = gpu_test_drain_bus ("producer", p->bus) && p->bus_ok;
}

/* the pipeline to NULL: TRUE when it got there */
static gboolean
producer_stop (Producer * p)
{
  gboolean ok = gst_element_set_state (p->pipeline, GST_STATE_NULL) !=
      GST_STATE_CHANGE_FAILURE;

  producer_drain (p);
  return ok;
}

/* with the consumer connected: settled fds, device free memory */
static gboolean
producer_sample (Producer * p, gint ctl)
{
  gint64 end = g_get_monotonic_time () + CLIENT_TIMEOUT_MS * 1000;
  guint clients;

  while ((clients = gpu_test_num_clients (p->sink)) != 1
      && g_get_monotonic_time () < end)
    g_usleep (5000);
  return send_sample (ctl, clients, gpu_test_settled_fds (),
      gpu_test_device_free (p->ctx));
}

/* one command from the parent; FALSE when the producer is to leave */
static gboolean
producer_command (Producer * p, gint ctl, const GpuTestCtl * m)
{
  gboolean ok;

  switch (m->cmd) {
    case CTL_RESTART:
      /* the same pipeline, the same process: the sink listens again */
      ok = producer_stop (p);
      ok = gpu_test_producer_play (p->pipeline, p->sink, p->bus,
          START_TIMEOUT_MS) && ok;
      return gpu_test_ctl_send (ctl, CTL_RESTART_DONE, ok);
    case CTL_SAMPLE:
      return producer_sample (p, ctl);
    case CTL_STATUS:
      producer_drain (p);
      return gpu_test_ctl_send (ctl, CTL_STATUS_DONE, p->bus_ok);
    case CTL_EXIT:
      p->exited = producer_stop (p);
      gpu_test_ctl_send (ctl, CTL_EXIT_DONE, p->exited && p->bus_ok);
      return FALSE;
    default:
      g_print ("producer: unknown command from the parent\n");
      p->bus_ok = FALSE;
      return FALSE;
  }
}

static gint
producer (gint ctl, gpointer data)
{
  const gchar *path = data;
  GError *error = NULL;
  Producer p;

  memset (&p, 0, sizeof (p));
  p.bus_ok = TRUE;
  if (!gpu_test_hold_primary (&p.ctx, &error)) {
    g_print ("producer: %s\n", error->message);
    return 1;
  }
  p.pipeline = gpu_test_producer_pipeline (path, 60, &p.sink);
  if (!p.pipeline)
    return 1;
  p.bus = gst_element_get_bus (p.pipeline);
  /* keep what the pipeline posts on its way to NULL for producer_drain () */
  gst_pipeline_set_auto_flush_bus (GST_PIPELINE (p.pipeline), FALSE);

  if (!gpu_test_producer_play (p.pipeline, p.sink, p.bus, START_TIMEOUT_MS)
      || !gpu_test_ctl_send (ctl, CTL_READY, 0))
    return 1;

  for (;;) {
    struct pollfd pfd = { ctl, POLLIN, 0 };
    GpuTestCtl m;

    if (poll (&pfd, 1, 100) <= 0) {
      producer_drain (&p);
      continue;
    }
    if (!gpu_test_ctl_recv (ctl, &m, REPLY_TIMEOUT_MS)) {
      g_print ("producer: the parent went away\n");
      p.bus_ok = FALSE;
      break;
    }
    if (!producer_command (&p, ctl, &m))
      break;
  }

  producer_stop (&p);
  close (ctl);
  gst_object_unref (p.bus);
  gst_object_unref (p.sink);
  gst_object_unref (p.pipeline);
  gpu_test_release_primary ();
  return p.bus_ok && p.exited ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* consumer */

typedef struct
{
  GstElement *pipeline;
  GstElement *src;
  GstBus *bus;
  CUcontext ctx;
  gint buffers;                 /* atomic: counted on the streaming thread */
  guint sessions;               /* gpushare-transport messages of cuda-vmm */
  gchar *other;                 /* the first one of another memory type */
  gboolean bus_ok;
  guint printed;                /* failure reports so far */
} Consumer;

static GstPadProbeReturn
count_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Consumer *c = user_data;

  g_atomic_int_inc (&c->buffers);
  return GST_PAD_PROBE_OK;
}

static void
consumer_drain (Consumer * c)
{
  c->bus_ok = gpu_test_drain_consumer_bus (c->bus, &c->sessions, &c->other,
      TRUE) && c->bus_ok;
}

/* Streaming again after n restarts: the src counted n producers lost, the
 * (n + 1)th session posted its gpushare-transport message of cuda-vmm, a
 * buffer came after this process saw that message (a session posts it
 * before its first frame), and the src's stats say cuda-vmm. */
static gboolean
consumer_confirm (Consumer * c, guint n)
{
  gint64 end = g_get_monotonic_time () + CONFIRM_TIMEOUT_MS * 1000;
  gint mark = -1;
  guint reconnects;
  const gchar *why = NULL;
  gchar *mem;

  for (;;) {
    consumer_drain (c);
    reconnects = gpu_test_stat_uint (c->src, "reconnects");
    if (mark < 0 && c->sessions >= n + 1)
      mark = g_atomic_int_get (&c->buffers);
    if (reconnects >= n && mark >= 0 && g_atomic_int_get (&c->buffers) > mark)
      break;
    /* a timeout: the first thing missing is why */
    if (g_get_monotonic_time () >= end) {
      why = reconnects < n ? "the src did not count the producer lost" :
          mark < 0 ? "no new cuda-vmm session" :
          "no buffer from the new session";
      break;
    }
    g_usleep (10000);
  }
  mem = gpu_test_stat_string (c->src, "memory-type");
  if (!why && strcmp (mem, "cuda-vmm") != 0)
    why = "the src's memory-type is not cuda-vmm";
  if (why && c->printed < MAX_PRINTED_FAILURES) {
    gchar *state = gpu_test_stat_string (c->src, "state");
    gchar *reason = gpu_test_stat_string (c->src, "memory-reason");

    c->printed++;
    g_print ("    consumer: after restart %u: %s; reconnects %u, cuda-vmm "
        "sessions %u, state %s, memory-type %s (%s)\n", n, why, reconnects,
        c->sessions, state, mem, reason);
    g_free (state);
    g_free (reason);
  }
  g_free (mem);
  return why == NULL;
}

/* the figures, then the pipeline to NULL: FALSE when the parent is gone */
static gboolean
consumer_stop (Consumer * c, gint ctl, gboolean * ok)
{
  guint reconnects;
  gboolean sent;

  consumer_drain (c);
  reconnects = gpu_test_stat_uint (c->src, "reconnects");
  sent = gpu_test_ctl_send (ctl, CTL_STOP_RECONNECTS, reconnects)
      && gpu_test_ctl_send (ctl, CTL_STOP_SESSIONS, c->sessions);
  *ok = gst_element_set_state (c->pipeline, GST_STATE_NULL) !=
      GST_STATE_CHANGE_FAILURE;
  consumer_drain (c);
  if (c->other)
    g_print ("    consumer: a session went through %s\n", c->other);
  *ok = *ok && c->bus_ok && !c->other;
  return sent && gpu_test_ctl_send (ctl, CTL_STOP_DONE, *ok);
}

static gint
consumer (gint ctl, gpointer data)
{
  const gchar *path = data;
  GError *error = NULL;
  GpuShareCudaCaps caps;
  Consumer c;
  gboolean ok = FALSE;

  memset (&c, 0, sizeof (c));
  c.bus_ok = TRUE;
  if (!gpushare_cuda_probe (DEVICE, &caps, &error)
      || !gpu_test_hold_primary (&c.ctx, &error)) {
    g_print ("consumer: %s\n", error->message);
    return 1;
  }
  gpu_test_print_device (&caps);
  /* its bus keeps what the pipeline posts on its way to NULL, for
   * consumer_drain () */
  c.pipeline = gpu_test_consumer_pipeline (path, CONNECTION_TIMEOUT_MS,
      count_buffer, &c, &c.src);
  if (!c.pipeline)
    return 1;
  gst_util_set_object_arg (G_OBJECT (c.src), "producer-lost", "reconnect");
  c.bus = gst_element_get_bus (c.pipeline);
  /* waits up to connection-timeout for the first producer */
  if (gst_element_set_state (c.pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    consumer_drain (&c);
    g_print ("consumer: the pipeline did not start\n");
    return 1;
  }

  for (;;) {
    struct pollfd pfd = { ctl, POLLIN, 0 };
    GpuTestCtl m;
    gboolean sent = FALSE;

    if (poll (&pfd, 1, 100) <= 0) {
      consumer_drain (&c);
      continue;
    }
    if (!gpu_test_ctl_recv (ctl, &m, REPLY_TIMEOUT_MS)) {
      g_print ("consumer: the parent went away\n");
      ok = FALSE;
      break;
    }
    if (m.cmd == CTL_CONFIRM) {
      sent = gpu_test_ctl_send (ctl, CTL_CONFIRM_DONE,
          consumer_confirm (&c, (guint) m.value));
    } else if (m.cmd == CTL_SAMPLE) {
      sent = send_sample (ctl, 0, gpu_test_settled_fds (),
          gpu_test_device_free (c.ctx));
    } else if (m.cmd == CTL_STOP) {
      consumer_stop (&c, ctl, &ok);
      break;
    } else {
      g_print ("consumer: unknown command from the parent\n");
      break;
    }
    if (!sent)
      break;
  }

  gst_element_set_state (c.pipeline, GST_STATE_NULL);
  close (ctl);
  gst_object_unref (c.bus);
  gst_object_unref (c.pipeline);
  g_free (c.other);
  gpu_test_release_primary ();
  return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* the parent: never touches CUDA, nor GStreamer (scanning the registry in
 * this process could load nvcodec, which calls cuInit) */

typedef struct
{
  gboolean have;
  guint clients;
  gint fds;
  guint64 rss;
  gsize mem;
} Sample;

typedef struct
{
  const gchar *path;
  guint per_phase;              /* restarts per phase */
  guint64 t0;
  pid_t consumer;
  gint cctl;                    /* to the consumer */
  pid_t producer;               /* the producer of the moment, or -1 */
  gint pctl;                    /* to it */
  guint producers;              /* producer processes started */
  guint dirty;                  /* ... whose bus carried an error */
  guint bad_ends;               /* ... that did not end as asked */
  guint exits;                  /* phase B: ended by EXIT */
  guint kills;                  /* ... by SIGKILL */
  guint restarts;               /* restarts so far, both phases */
  guint done[2];                /* restarts per phase, streaming again */
  guint failures;
  gboolean aborted;             /* a child stopped answering */
  guint a_base, b_base;         /* the restarts the baselines follow */
  Sample prod_a[2];             /* phase-A producer: baseline, end */
  Sample cons_a[2];             /* consumer: phase A baseline, end */
  Sample cons_b[2];             /* consumer: phase B baseline, end of test */
} Run;

static guint64
elapsed_s (Run * r)
{
  return (gpu_test_now_ns () - r->t0) / G_GUINT64_CONSTANT (1000000000);
}

/* four answers to CTL_SAMPLE */
static gboolean
sample (gint ctl, Sample * s)
{
  guint64 clients = 0, fds = 0, rss = 0, mem = 0;

  s->have = gpu_test_ctl_send (ctl, CTL_SAMPLE, 0)
      && gpu_test_ctl_expect (ctl, CTL_SAMPLE_CLIENTS, &clients,
      REPLY_TIMEOUT_MS)
      && gpu_test_ctl_expect (ctl, CTL_SAMPLE_FDS, &fds, REPLY_TIMEOUT_MS)
      && gpu_test_ctl_expect (ctl, CTL_SAMPLE_RSS, &rss, REPLY_TIMEOUT_MS)
      && gpu_test_ctl_expect (ctl, CTL_SAMPLE_MEM, &mem, REPLY_TIMEOUT_MS);
  s->clients = (guint) clients;
  s->fds = (gint) (gint64) fds;
  s->rss = rss;
  s->mem = (gsize) mem;
  return s->have;
}

static void
sample_consumer (Run * r, Sample * s)
{
  if (!r->aborted && !sample (r->cctl, s)) {
    g_print ("consumer: no answer to a sample\n");
    r->aborted = TRUE;
  }
}

static void
sample_producer (Run * r, Sample * s)
{
  if (!r->aborted && !sample (r->pctl, s)) {
    g_print ("producer: no answer to a sample\n");
    r->aborted = TRUE;
  }
}

/* SIGKILL, and reaped: TRUE when the signal is what ended it */
static gboolean
producer_kill (Run * r)
{
  gboolean ok;

  ok = gpu_test_kill (r->producer);
  if (!ok)
    g_print ("producer %u: did not die of SIGKILL\n", r->producers);
  close (r->pctl);
  r->producer = -1;
  r->pctl = -1;
  return ok;
}

/* a new producer process on the same socket path, to its first frame */
static gboolean
producer_spawn (Run * r)
{
  GpuTestRole role = { "producer", producer, (gpointer) r->path, 0 };
  GError *error = NULL;

  /* the alarm counts from the start of the test; the child does not hold
   * the consumer's socket */
  role.alarm_s = PRODUCER_ALARM_S - MIN (elapsed_s (r), PRODUCER_ALARM_S - 30);
  r->producer = gpu_test_spawn (&role, r->cctl, &r->pctl, &error);
  if (r->producer < 0) {
    g_print ("%s\n", error->message);
    g_clear_error (&error);
    return FALSE;
  }
  r->producers++;
  if (!gpu_test_ctl_expect (r->pctl, CTL_READY, NULL, SPAWN_TIMEOUT_MS)) {
    g_print ("producer %u: no first frame within %d ms\n", r->producers,
        SPAWN_TIMEOUT_MS);
    producer_kill (r);
    r->bad_ends++;
    return FALSE;
  }
  return TRUE;
}

/* Ends the producer, by EXIT or by SIGKILL, and reaps it.  Its bus is
 * asked for first: a killed producer does not report at its end.  FALSE
 * when it stopped answering. */
static gboolean
producer_end (Run * r, gboolean by_kill)
{
  guint64 clean = 0, exit_clean = 0;
  gboolean ended;

  if (!gpu_test_ctl_send (r->pctl, CTL_STATUS, 0)
      || !gpu_test_ctl_expect (r->pctl, CTL_STATUS_DONE, &clean,
          REPLY_TIMEOUT_MS)) {
    g_print ("producer %u: no answer\n", r->producers);
    producer_kill (r);
    r->bad_ends++;
    return FALSE;
  }
  if (by_kill) {
    if (!clean)
      r->dirty++;
    if (!producer_kill (r))
      r->bad_ends++;
    return TRUE;
  }
  ended = gpu_test_ctl_send (r->pctl, CTL_EXIT, 0)
      && gpu_test_ctl_expect (r->pctl, CTL_EXIT_DONE, &exit_clean,
      REPLY_TIMEOUT_MS);
  if (!clean || !exit_clean)
    r->dirty++;
  close (r->pctl);
  r->pctl = -1;
  if (!ended) {
    g_print ("producer %u: no answer to EXIT\n", r->producers);
    kill (r->producer, SIGKILL);
  }
  if (!gpu_test_reap (r->producer, "producer") || !ended)
    r->bad_ends++;
  r->producer = -1;
  return ended;
}

/* after r->restarts: is the consumer streaming again? */
static gboolean
confirm (Run * r)
{
  guint64 ok = 0;

  if (!gpu_test_ctl_send (r->cctl, CTL_CONFIRM, r->restarts)
      || !gpu_test_ctl_expect (r->cctl, CTL_CONFIRM_DONE, &ok,
          CONFIRM_TIMEOUT_MS + REPLY_TIMEOUT_MS)) {
    g_print ("consumer: no answer after restart %u\n", r->restarts);
    r->aborted = TRUE;
    return FALSE;
  }
  return ok != 0;
}

/* one restart of the given phase done: counted as streaming again or not */
static void
count_restart (Run * r, guint phase, gboolean restarted)
{
  if (confirm (r) && restarted)
    r->done[phase]++;
  else
    r->failures++;
}

static gboolean
keep_going (Run * r)
{
  if (r->aborted)
    return FALSE;
  if (r->failures >= MAX_FAILURES) {
    g_print ("%u restarts failed: giving up\n", r->failures);
    return FALSE;
  }
  if (elapsed_s (r) > RESTARTS_BUDGET_S) {
    g_print ("out of time after " G_STRINGIFY (RESTARTS_BUDGET_S) " s, at "
        "restart %u: stopping here\n", r->restarts);
    return FALSE;
  }
  return TRUE;
}

/* phase A: the same producer process, its pipeline to NULL and back */
static void
phase_a (Run * r)
{
  guint k;

  for (k = 1; k <= r->per_phase && keep_going (r); k++) {
    guint64 rendered = 0;

    r->restarts++;
    if (!gpu_test_ctl_send (r->pctl, CTL_RESTART, 0)
        || !gpu_test_ctl_expect (r->pctl, CTL_RESTART_DONE, &rendered,
            START_TIMEOUT_MS + REPLY_TIMEOUT_MS)) {
      g_print ("producer: no answer to restart %u\n", r->restarts);
      r->aborted = TRUE;
      return;
    }
    count_restart (r, 0, rendered != 0);
    if (k == r->a_base && !r->aborted) {
      sample_producer (r, &r->prod_a[0]);
      sample_consumer (r, &r->cons_a[0]);
    }
  }
  if (r->aborted)
    return;
  sample_producer (r, &r->prod_a[1]);
  sample_consumer (r, &r->cons_a[1]);
}

/* phase B: a new producer process each time; the one before ends by EXIT
 * (odd restarts) or by SIGKILL (even ones) */
static void
phase_b (Run * r)
{
  guint k;

  for (k = 1; k <= r->per_phase && keep_going (r); k++) {
    gboolean by_kill = k % 2 == 0;

    r->restarts++;
    if (!producer_end (r, by_kill) || !producer_spawn (r)) {
      r->aborted = TRUE;
      return;
    }
    if (by_kill)
      r->kills++;
    else
      r->exits++;
    count_restart (r, 1, TRUE);
    if (k == r->b_base && !r->aborted)
      sample_consumer (r, &r->cons_b[0]);
  }
  if (!r->aborted)
    sample_consumer (r, &r->cons_b[1]);
}

/* the consumer's figures, its pipeline to NULL; then the producer's clean
 * exit and both reaped */
static gboolean
finish (Run * r, guint64 * reconnects, guint64 * sessions)
{
  guint64 stopped = 0;
  gboolean ok;

  ok = gpu_test_ctl_send (r->cctl, CTL_STOP, 0)
      && gpu_test_ctl_expect (r->cctl, CTL_STOP_RECONNECTS, reconnects,
      REPLY_TIMEOUT_MS)
      && gpu_test_ctl_expect (r->cctl, CTL_STOP_SESSIONS, sessions,
      REPLY_TIMEOUT_MS)
      && gpu_test_ctl_expect (r->cctl, CTL_STOP_DONE, &stopped,
      REPLY_TIMEOUT_MS) && stopped;
  g_print ("consumer: pipeline to NULL without an error on its bus: %s\n",
      ok ? "PASS" : "FAIL");
  close (r->cctl);
  /* a consumer that does not answer may hang: its alarm would come after
   * the meson timeout */
  if (!ok)
    kill (r->consumer, SIGKILL);
  if (r->producer > 0 && !producer_end (r, FALSE))
    ok = FALSE;
  return gpu_test_reap (r->consumer, "consumer") && ok;
}

static gboolean
check_fds (const gchar * who, const Sample * a, const Sample * b, guint clients)
{
  gboolean ok = a->have && b->have && a->fds == b->fds
      && a->clients == clients && b->clients == clients;

  if (!a->have || !b->have)
    g_print ("%s: no samples to compare: FAIL\n", who);
  else
    g_print ("%s: fds %d -> %d: %s\n", who, a->fds, b->fds,
        ok ? "PASS" : "FAIL");
  if (a->have && b->have && (a->clients != clients || b->clients != clients))
    g_print ("    %s: num-clients %u and %u, not %u\n", who, a->clients,
        b->clients, clients);
  return ok;
}

static gboolean
check_mem (const gchar * who, const Sample * a, const Sample * b)
{
  if (!a->have || !b->have) {
    g_print ("%s: no samples to compare: FAIL\n", who);
    return FALSE;
  }
  gpu_test_print_mem (who, a->mem, b->mem);
  return gpu_test_mem_ok (a->mem, b->mem);
}

static gboolean
check_rss (const Sample * a, const Sample * b)
{
  gboolean ok = a->have && b->have && a->rss > 0 && b->rss > 0
      && b->rss < a->rss + RSS_SLACK;

  if (!a->have || !b->have) {
    g_print ("consumer: no VmRSS samples to compare: FAIL\n");
    return FALSE;
  }
  g_print ("consumer: VmRSS %.1f -> %.1f MiB (grew by %.1f MiB, limit %.1f): "
      "%s\n", gpu_test_mib (a->rss), gpu_test_mib (b->rss),
      b->rss > a->rss ? gpu_test_mib (b->rss - a->rss) : 0.0,
      gpu_test_mib (RSS_SLACK), ok ? "PASS" : "FAIL");
  return ok;
}

static gboolean
report (Run * r, guint64 reconnects, guint64 sessions)
{
  gchar *who;
  gboolean ok, all;

  ok = r->done[0] == r->per_phase && r->done[1] == r->per_phase;
  g_print ("restarts: %u/%u in one process and %u/%u by new processes (%u "
      "after a clean exit, %u after SIGKILL) streamed again through "
      "cuda-vmm: %s\n", r->done[0], r->per_phase, r->done[1], r->per_phase,
      r->exits, r->kills, ok ? "PASS" : "FAIL");
  all = ok;
  ok = reconnects == r->restarts && sessions == reconnects + 1;
  g_print ("consumer: reconnects %" G_GUINT64_FORMAT ", cuda-vmm sessions %"
      G_GUINT64_FORMAT " (expected %u and %u): %s\n", reconnects, sessions,
      r->restarts, r->restarts + 1, ok ? "PASS" : "FAIL");
  all = all && ok;

  g_print ("consumer: samples after restart %u of phase A and at the end\n",
      r->a_base);
  all = check_fds ("consumer", &r->cons_a[0], &r->cons_b[1], 0) && all;
  all = check_rss (&r->cons_a[0], &r->cons_b[1]) && all;
  g_print ("producer (phase A): samples after its restarts %u and %u\n",
      r->a_base, r->per_phase);
  all = check_fds ("producer (phase A)", &r->prod_a[0], &r->prod_a[1], 1)
      && all;
  all = check_mem ("producer (phase A)", &r->prod_a[0], &r->prod_a[1])
      && all;
  who = g_strdup_printf ("consumer (phase A, restarts %u -> %u)", r->a_base,
      r->per_phase);
  all = check_mem (who, &r->cons_a[0], &r->cons_a[1]) && all;
  g_free (who);
  who = g_strdup_printf ("consumer (phase B, restarts %u -> %u)", r->b_base,
      r->per_phase);
  all = check_mem (who, &r->cons_b[0], &r->cons_b[1]) && all;
  g_free (who);

  ok = r->dirty == 0 && r->bad_ends == 0;
  g_print ("producer processes: %u started, %u with an error on their bus, "
      "%u that did not end as asked: %s\n", r->producers, r->dirty,
      r->bad_ends, ok ? "PASS" : "FAIL");
  return all && ok && !r->aborted;
}

/* the first restart from BASELINE_RESTART on whose producer ended the way
 * the last one's does: odd ones by EXIT, even ones by SIGKILL */
static guint
phase_b_baseline (guint n)
{
  guint b = MIN (BASELINE_RESTART, n);

  return (n - b) % 2 ? b + 1 : b;
}

int
main (int argc, char **argv)
{
  GError *error = NULL;
  Run r;
  gchar *dir, *path;
  GpuTestRole consumer_role = { "consumer", consumer, NULL, CONSUMER_ALARM_S };
  guint64 reconnects = 0, sessions = 0;
  gboolean ok;

  setvbuf (stdout, NULL, _IOLBF, 0);

  if (gpu_test_probe_in_child (GPU_TEST_NEED_VMM_FD |
          GPU_TEST_NEED_ELEMENTS) != 0)
    return SKIP;

  memset (&r, 0, sizeof (r));
  r.per_phase = MAX (gpu_test_env_uint ("GPUSHARE_RESTARTS",
          DEFAULT_RESTARTS), 1);
  r.a_base = MIN (BASELINE_RESTART, r.per_phase);
  r.b_base = phase_b_baseline (r.per_phase);
  r.producer = -1;
  r.pctl = -1;
  g_print ("%u producer restarts in one process, then %u by new processes "
      "(clean exit and SIGKILL in turn), under one consumer\n", r.per_phase,
      r.per_phase);

  dir = g_dir_make_tmp ("gpushare-restarts-XXXXXX", &error);
  if (!dir) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }
  path = g_build_filename (dir, "sock", NULL);
  r.path = path;
  consumer_role.data = path;

  r.t0 = gpu_test_now_ns ();
  r.consumer = gpu_test_spawn (&consumer_role, -1, &r.cctl, &error);
  if (r.consumer < 0) {
    g_print ("FAIL: %s\n", error->message);
    return 1;
  }

  if (!producer_spawn (&r)) {
    r.aborted = TRUE;
  } else if (!confirm (&r)) {
    g_print ("consumer: the first connection failed\n");
    r.aborted = TRUE;
  }
  if (!r.aborted)
    phase_a (&r);
  if (!r.aborted)
    phase_b (&r);

  ok = finish (&r, &reconnects, &sessions);
  ok = report (&r, reconnects, sessions) && ok;

  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  g_print ("%s (%.1f s)\n", ok ? "PASS: every check passed" :
      "FAIL: see above", (gpu_test_now_ns () - r.t0) / 1e9);
  return ok ? 0 : 1;
}
