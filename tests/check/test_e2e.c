/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * End-to-end tests: a real producer and real consumers, each a
 * gpushare-test-peer process (tests/peer/gpushare-test-peer.c) talking over
 * a socket in a private temporary directory.  Every process writes one line per frame
 * (offset, timestamps, flags, size and a checksum of the visible pixels),
 * so what each consumer received is compared line by line with what the
 * producer sent.
 *
 * Rules every test keeps:
 *  - every wait has a deadline; a child still running past it is killed
 *    and the test fails, it never hangs;
 *  - children get SIGKILL if the test process dies (PR_SET_PDEATHSIG), so a
 *    failed assertion leaves no producer waiting forever;
 *  - nothing is asserted before every child is reaped and the temporary
 *    directory is gone, so a failure leaves nothing behind;
 *  - the test process's own open fd count is the same before and after.
 *
 * Environment (set by tests/check/meson.build): GPUSHARE_TEST_PEER is the
 * peer binary, GST_PLUGIN_PATH_1_0 the freshly built plugin.
 */

#include <gst/check/gstcheck.h>
#include <gio/gio.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare-check-util.h"

/* generous for a loaded 2-core machine; a healthy run takes a few seconds */
#define RUN_TIMEOUT_MS 30000
#define STEP_TIMEOUT_MS 20000
#define KILL_TIMEOUT_MS 5000

typedef struct
{
  gchar *name;
  GSubprocess *proc;
  gchar *pid;                   /* as the sink's stats print it */
  gchar *log;                   /* its --out file */
  gboolean exited;
  gboolean killed;              /* by us, at a deadline */
  gint status;                  /* exit status, or -signal */
  gchar **lines;                /* its report, read once it exited */
} Child;

typedef struct
{
  gchar *dir;
  gchar *socket;
  guint n_fds;
  GPtrArray *children;
  /* deadlines missed on the way, each a reason to fail at the end */
  GString *missed;
} E2e;

typedef struct
{
  guint64 offset, offset_end;
  gint64 pts, dts, duration;
  guint flags;
  gchar size[32];
  gchar sum[32];
} Frame;

static const gchar *
peer_path (void)
{
  const gchar *peer = g_getenv ("GPUSHARE_TEST_PEER");

  fail_unless (peer != NULL && g_file_test (peer, G_FILE_TEST_IS_EXECUTABLE),
      "GPUSHARE_TEST_PEER must name the gpushare-test-peer binary (run the "
      "test through meson test)");
  return peer;
}

static void
child_exited (GObject * source, GAsyncResult * res, gpointer user_data)
{
  Child *c = user_data;
  GSubprocess *proc = G_SUBPROCESS (source);

  g_subprocess_wait_finish (proc, res, NULL);
  if (g_subprocess_get_if_signaled (proc))
    c->status = -g_subprocess_get_term_sig (proc);
  else
    c->status = g_subprocess_get_exit_status (proc);
  c->exited = TRUE;
}

static gboolean wait_exit (Child * c, gint timeout_ms);

/* what is ready on this thread's main context, dispatched */
static void
drain_main_context (void)
{
  while (g_main_context_iteration (NULL, FALSE));
}

static E2e *
e2e_new (void)
{
  E2e *t = g_new0 (E2e, 1);
  const gchar *warm[] = { peer_path (), "--help", NULL };
  GSubprocess *proc;
  GError *error = NULL;

  /* GLib opens a few fds for good on the first spawn and child watch (the
   * worker context, the SIGCHLD wakeup) and on the first use of this
   * thread's main context, where the children's exits are reported; pay
   * for them before counting, the way the children are waited for */
  proc = g_subprocess_newv (warm, G_SUBPROCESS_FLAGS_STDOUT_SILENCE, &error);
  fail_unless (proc != NULL, "%s", error ? error->message : "?");
  {
    Child w = { 0, };

    w.name = (gchar *) "warm-up";
    g_subprocess_wait_async (proc, NULL, child_exited, &w);
    fail_unless (wait_exit (&w, 10000), "the warm-up child did not exit");
  }
  g_object_unref (proc);
  drain_main_context ();

  t->n_fds = count_fds_settled ();
  t->dir = make_tmpdir ("gpushare-e2e-XXXXXX");
  t->socket = g_build_filename (t->dir, "gpushare.sock", NULL);
  t->children = g_ptr_array_new ();
  t->missed = g_string_new (NULL);
  return t;
}

/* the gpu suite runs these drills again with arguments of its own for
 * every consumer (e.g. "--transport cuda"): a test of a transport of its
 * own has nothing to show then */
static gboolean
consumer_args_forced (void)
{
  const gchar *args = g_getenv ("GPUSHARE_E2E_CONSUMER_ARGS");

  return args && *args;
}

/* spawn gpushare-test-peer ROLE --socket S --out LOG [args..., NULL] */
static Child *
spawn (E2e * t, const gchar * name, const gchar * role, ...)
{
  GSubprocessLauncher *launcher;
  GPtrArray *argv = g_ptr_array_new ();
  GError *error = NULL;
  Child *c = g_new0 (Child, 1);
  const gchar *arg;
  gchar **extra;
  guint i;
  va_list ap;

  c->name = g_strdup (name);
  c->log = g_strdup_printf ("%s/%s.log", t->dir, name);
  g_ptr_array_add (argv, (gpointer) peer_path ());
  g_ptr_array_add (argv, (gpointer) role);
  g_ptr_array_add (argv, (gpointer) "--socket");
  g_ptr_array_add (argv, t->socket);
  g_ptr_array_add (argv, (gpointer) "--out");
  g_ptr_array_add (argv, c->log);
  va_start (ap, role);
  while ((arg = va_arg (ap, const gchar *)))
      g_ptr_array_add (argv, (gpointer) arg);
  va_end (ap);
  /* the gpu suite runs these drills again over GPU memory: extra arguments
   * for each role, e.g. "--gpu-input" and "--transport cuda" */
  extra = g_strsplit (g_getenv (g_str_equal (role, "producer") ?
          "GPUSHARE_E2E_PRODUCER_ARGS" : "GPUSHARE_E2E_CONSUMER_ARGS") ?
      g_getenv (g_str_equal (role, "producer") ?
          "GPUSHARE_E2E_PRODUCER_ARGS" : "GPUSHARE_E2E_CONSUMER_ARGS") : "",
      " ", -1);
  for (i = 0; extra[i]; i++)
    if (*extra[i])
      g_ptr_array_add (argv, extra[i]);
  g_ptr_array_add (argv, NULL);

  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  c->proc = g_subprocess_launcher_spawnv (launcher,
      (const gchar * const *) argv->pdata, &error);
  g_object_unref (launcher);
  g_ptr_array_free (argv, TRUE);
  g_strfreev (extra);
  fail_unless (c->proc != NULL, "spawning %s: %s", name,
      error ? error->message : "?");
  /* the pid is gone from GSubprocess once the child is reaped */
  c->pid = g_strdup (g_subprocess_get_identifier (c->proc));
  g_subprocess_wait_async (c->proc, NULL, child_exited, c);
  g_ptr_array_add (t->children, c);
  return c;
}

/* TRUE if c exited before the deadline; never kills */
static gboolean
wait_exit (Child * c, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  while (!c->exited && g_get_monotonic_time () < deadline) {
    /* the exit is reported on this thread's main context */
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (2000);
  }
  return c->exited;
}

static gboolean
log_has_line (Child * c, const gchar * prefix)
{
  gchar *text = NULL;
  gchar *nl_prefix = g_strconcat ("\n", prefix, NULL);
  gboolean found = FALSE;

  if (g_file_get_contents (c->log, &text, NULL, NULL))
    found = g_str_has_prefix (text, prefix) || strstr (text, nl_prefix);
  g_free (nl_prefix);
  g_free (text);
  return found;
}

/* poll a child's report for a line; quiet, for stimuli that may not come */
static gboolean
poll_line (Child * c, const gchar * prefix, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  while (g_get_monotonic_time () < deadline) {
    if (log_has_line (c, prefix))
      return TRUE;
    if (c->exited)
      break;
    g_main_context_iteration (NULL, FALSE);
    g_usleep (5000);
  }
  return log_has_line (c, prefix);
}

/* a line the test needs, e.g. to know the producer is up */
static gboolean
wait_line (E2e * t, Child * c, const gchar * prefix, gint timeout_ms)
{
  if (poll_line (c, prefix, timeout_ms))
    return TRUE;
  g_string_append_printf (t->missed, "%s never printed '%s'; ", c->name,
      prefix);
  return FALSE;
}

/* Wait for every child (one deadline for all), kill what is left, read the
 * reports, remove the directory, check the fds.  Fails only once nothing
 * is left behind. */
static void
e2e_finish (E2e * t, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  guint i;

  for (i = 0; i < t->children->len; i++) {
    Child *c = g_ptr_array_index (t->children, i);
    gint64 left = MAX (0, deadline - g_get_monotonic_time ()) / 1000;

    if (!wait_exit (c, (gint) left)) {
      c->killed = TRUE;
      g_subprocess_force_exit (c->proc);
      g_string_append_printf (t->missed, "%s still ran after %d ms, killed; ",
          c->name, timeout_ms);
    }
  }
  for (i = 0; i < t->children->len; i++) {
    Child *c = g_ptr_array_index (t->children, i);
    gchar *text = NULL;

    if (!wait_exit (c, KILL_TIMEOUT_MS))
      g_string_append_printf (t->missed, "%s survived SIGKILL; ", c->name);
    g_file_get_contents (c->log, &text, NULL, NULL);
    c->lines = g_strsplit (text ? text : "", "\n", -1);
    g_free (text);
    g_clear_object (&c->proc);
  }
  remove_tree (t->dir);

  fail_if (g_file_test (t->dir, G_FILE_TEST_EXISTS), "%s not removed", t->dir);
  fail_unless (t->missed->len == 0, "%s", t->missed->str);
  /* GLib closes the pidfds of exited children from its worker thread,
   * which a loaded machine may run late; what their exits left to do on
   * this thread's main context is done first */
  drain_main_context ();
  fail_unless (wait_fd_count (t->n_fds, 10000) == t->n_fds, "open fds: %u "
      "before the test, %u after", t->n_fds, count_fds ());
}

static void
e2e_free (E2e * t)
{
  guint i;

  for (i = 0; i < t->children->len; i++) {
    Child *c = g_ptr_array_index (t->children, i);

    g_free (c->name);
    g_free (c->pid);
    g_free (c->log);
    g_strfreev (c->lines);
    g_free (c);
  }
  g_ptr_array_free (t->children, TRUE);
  g_string_free (t->missed, TRUE);
  g_free (t->socket);
  g_free (t->dir);
  g_free (t);
}

/* ------------------------------------------------------------------------ */
/* Reading the reports */

/* the lines that start with prefix, with the prefix cut off */
static GPtrArray *
lines_with (Child * c, const gchar * prefix)
{
  GPtrArray *a = g_ptr_array_new ();
  gchar **l;

  for (l = c->lines; l && *l; l++)
    if (g_str_has_prefix (*l, prefix))
      g_ptr_array_add (a, *l + strlen (prefix));
  return a;
}

static const gchar *
line_with (Child * c, const gchar * prefix)
{
  gchar **l;

  for (l = c->lines; l && *l; l++)
    if (g_str_has_prefix (*l, prefix))
      return *l + strlen (prefix);
  return NULL;
}

static gboolean
has_line (Child * c, const gchar * line)
{
  gchar **l;

  for (l = c->lines; l && *l; l++)
    if (g_str_equal (*l, line))
      return TRUE;
  return FALSE;
}

static GstStructure *
child_stats (Child * c, const gchar * prefix)
{
  const gchar *str = line_with (c, prefix);
  GstStructure *s;

  fail_unless (str != NULL, "%s printed no '%s' line", c->name, prefix);
  s = gst_structure_from_string (str, NULL);
  fail_unless (s != NULL, "%s: cannot parse '%s'", c->name, str);
  return s;
}

static guint64
stats_u64 (const GstStructure * s, const gchar * field)
{
  guint64 v = 0;

  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, s);
  return v;
}

/* the entry of the sink's stats "clients" list for this consumer */
static const GstStructure *
stats_client (const GstStructure * s, Child * consumer)
{
  const GValue *clients = gst_structure_get_value (s, "clients");
  gint pid = atoi (consumer->pid);
  guint i;

  for (i = 0; clients && GST_VALUE_HOLDS_ARRAY (clients)
      && i < gst_value_array_get_size (clients); i++) {
    const GstStructure *c =
        gst_value_get_structure (gst_value_array_get_value (clients, i));
    gint cpid = 0;

    if (gst_structure_get_int (c, "pid", &cpid) && cpid == pid)
      return c;
  }
  return NULL;
}

static guint
stats_n_clients (const GstStructure * s)
{
  const GValue *clients = gst_structure_get_value (s, "clients");

  return clients && GST_VALUE_HOLDS_ARRAY (clients) ?
      gst_value_array_get_size (clients) : 0;
}

static void
parse_frame (const gchar * line, Frame * f)
{
  gint n = sscanf (line, "offset=%" G_GUINT64_FORMAT " offset_end=%"
      G_GUINT64_FORMAT " pts=%" G_GINT64_FORMAT " dts=%" G_GINT64_FORMAT
      " duration=%" G_GINT64_FORMAT " flags=0x%x size=%31s sum=%31s",
      &f->offset, &f->offset_end, &f->pts, &f->dts, &f->duration, &f->flags,
      f->size, f->sum);

  fail_unless_equals_int (n, 8);
}

static void
assert_exit (Child * c, gint status)
{
  fail_unless (c->status == status, "%s: exit status %d, expected %d",
      c->name, c->status, status);
}

/* consumer got exactly the first n frames the producer sent, each line
 * (checksum, timestamps, offsets, flags, size) identical, offsets 0..n-1 */
static void
assert_all_frames (Child * producer, Child * consumer, guint n)
{
  GPtrArray *sent = lines_with (producer, "sent ");
  GPtrArray *recv = lines_with (consumer, "recv ");
  guint i;

  fail_unless (sent->len >= n, "%s sent %u frames, expected %u",
      producer->name, sent->len, n);
  fail_unless (recv->len == n, "%s received %u frames, expected %u",
      consumer->name, recv->len, n);
  for (i = 0; i < n; i++) {
    const gchar *s = g_ptr_array_index (sent, i);
    const gchar *r = g_ptr_array_index (recv, i);
    Frame f;

    fail_unless (g_str_equal (s, r), "%s frame %u:\n sent %s\n recv %s",
        consumer->name, i, s, r);
    parse_frame (r, &f);
    /* the producer numbers its frames: a gap or a repeat shows here */
    fail_unless (f.offset == i && f.offset_end == i + 1,
        "%s frame %u has offset %" G_GUINT64_FORMAT, consumer->name, i,
        f.offset);
  }
  g_ptr_array_free (sent, TRUE);
  g_ptr_array_free (recv, TRUE);
}

/* each frame the consumer got is one the producer sent, in order; for a
 * consumer that may miss frames.  With same_times FALSE (a live consumer
 * maps timestamps into its own running time) only pixels and offsets are
 * compared.  Returns the number of frames received. */
static guint
assert_frames_subset (Child * producer, Child * consumer, gboolean same_times)
{
  GPtrArray *sent = lines_with (producer, "sent ");
  GPtrArray *recv = lines_with (consumer, "recv ");
  GHashTable *by_offset = g_hash_table_new (g_int64_hash, g_int64_equal);
  Frame *sf = g_new0 (Frame, MAX (sent->len, 1));
  gint64 last = -1;
  guint i, n = recv->len;

  for (i = 0; i < sent->len; i++) {
    parse_frame (g_ptr_array_index (sent, i), &sf[i]);
    g_hash_table_insert (by_offset, &sf[i].offset, &sf[i]);
  }
  for (i = 0; i < recv->len; i++) {
    const gchar *r = g_ptr_array_index (recv, i);
    Frame f;
    Frame *s;

    parse_frame (r, &f);
    s = g_hash_table_lookup (by_offset, &f.offset);
    fail_unless (s != NULL, "%s received a frame never sent: %s",
        consumer->name, r);
    fail_unless ((gint64) f.offset > last, "%s: frame %" G_GUINT64_FORMAT
        " after %" G_GINT64_FORMAT, consumer->name, f.offset, last);
    last = f.offset;
    fail_unless (g_str_equal (f.sum, s->sum) && g_str_equal (f.size, s->size),
        "%s frame %" G_GUINT64_FORMAT ": pixels differ (%s %s, sent %s %s)",
        consumer->name, f.offset, f.size, f.sum, s->size, s->sum);
    fail_unless (f.offset_end == s->offset_end);
    if (same_times) {
      fail_unless (f.pts == s->pts && f.dts == s->dts
          && f.duration == s->duration, "%s frame %" G_GUINT64_FORMAT
          ": timestamps differ: %s", consumer->name, f.offset, r);
      /* DISCONT is left out: after frames it missed, a consumer may
       * rightly mark the next one as a discontinuity */
      fail_unless ((f.flags & ~GST_BUFFER_FLAG_DISCONT) ==
          (s->flags & ~GST_BUFFER_FLAG_DISCONT), "%s frame %"
          G_GUINT64_FORMAT ": flags 0x%x, sent 0x%x", consumer->name,
          f.offset, f.flags, s->flags);
    }
  }
  g_hash_table_destroy (by_offset);
  g_free (sf);
  g_ptr_array_free (sent, TRUE);
  g_ptr_array_free (recv, TRUE);
  return n;
}

static void
assert_eos (Child * c)
{
  const gchar *want = g_getenv ("GPUSHARE_E2E_WANT_TRANSPORT");

  fail_unless (has_line (c, "eos"), "%s saw no EOS", c->name);
  /* run over GPU memory by the gpu suite: the consumer took it */
  if (want && *want) {
    const gchar *t = line_with (c, "transport memory-type=");

    fail_unless (t && g_str_has_prefix (t, want), "%s: transport %s, not %s",
        c->name, t ? t : "none", want);
  }
}

static void
assert_rendered (Child * producer, guint64 frames)
{
  GstStructure *s = child_stats (producer, "stats ");

  fail_unless (stats_u64 (s, "frames-rendered") == frames,
      "%s: %" GST_PTR_FORMAT, producer->name, s);
  fail_unless (stats_u64 (s, "frames-dropped") == 0, "%s: %" GST_PTR_FORMAT,
      producer->name, s);
  gst_structure_free (s);
}

/* ------------------------------------------------------------------------ */

/* 300 frames of 1080p NV12 from appsrc, one consumer: the whole frame and
 * every buffer field crosses unchanged, and the transport says why */
GST_START_TEST (test_appsrc_1080p_nv12)
{
  E2e *t = e2e_new ();
  Child *c, *p;
  const gchar *transport, *want, *reason;
  gchar *type;
  GstStructure *s;

  c = spawn (t, "consumer", "consumer", "--timeout", "20000", NULL);
  p = spawn (t, "producer", "producer", "--frames", "300", "--width", "1920",
      "--height", "1080", "--format", "NV12", "--wait", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  assert_exit (c, 0);
  assert_all_frames (p, c, 300);
  assert_eos (c);
  assert_eos (p);

  /* system memory where there is no NVIDIA driver; on a GPU host auto
   * may take the GPU, and the line and the stats must then agree */
  want = g_getenv ("GPUSHARE_E2E_WANT_TRANSPORT");
  if (!want || !*want)
    want = g_file_test ("/dev/nvidiactl", G_FILE_TEST_EXISTS) ? NULL : "system";
  transport = line_with (c, "transport memory-type=");
  fail_unless (transport != NULL, "consumer printed no transport line");
  type = g_strndup (transport, strcspn (transport, " "));
  if (want)
    fail_unless_equals_string (type, want);
  reason = strstr (transport, " reason=");
  fail_unless (reason && strlen (reason) > strlen (" reason=")
      && !strstr (reason, "(null)"), "no reason given: %s", transport);

  assert_rendered (p, 300);
  s = child_stats (c, "stats ");
  fail_unless (stats_u64 (s, "frames-received") == 300);
  fail_unless_equals_string (gst_structure_get_string (s, "memory-type"), type);
  gst_structure_free (s);
  g_free (type);
  e2e_free (t);
}

GST_END_TEST;

/* The consumer starts first and waits for the producer (connection-timeout);
 * the caps come with the handshake, before any frame, and are the
 * producer's caps exactly */
GST_START_TEST (test_caps_from_handshake)
{
  E2e *t = e2e_new ();
  Child *c, *p;
  GPtrArray *pcaps, *ccaps;

  c = spawn (t, "consumer", "consumer", "--timeout", "20000", NULL);
  /* long enough for the consumer to find no socket and retry */
  g_usleep (500 * 1000);
  fail_if (g_file_test (t->socket, G_FILE_TEST_EXISTS));
  p = spawn (t, "producer", "producer", "--frames", "30", "--width", "320",
      "--height", "240", "--wait", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  assert_exit (c, 0);
  pcaps = lines_with (p, "caps ");
  ccaps = lines_with (c, "caps ");
  fail_unless_equals_int (pcaps->len, 1);
  fail_unless_equals_int (ccaps->len, 1);
  fail_unless (g_str_has_prefix (g_ptr_array_index (ccaps, 0), "frames=0 "),
      "caps after frames: %s", (gchar *) g_ptr_array_index (ccaps, 0));
  fail_unless_equals_string (g_ptr_array_index (ccaps, 0),
      g_ptr_array_index (pcaps, 0));
  g_ptr_array_free (pcaps, TRUE);
  g_ptr_array_free (ccaps, TRUE);
  assert_all_frames (p, c, 30);
  assert_eos (c);
  e2e_free (t);
}

GST_END_TEST;

/* appsrc changes caps at frame 10 to a larger size (so a new ring): the
 * consumer sees the new caps exactly before frame 10 */
GST_START_TEST (test_caps_change)
{
  E2e *t = e2e_new ();
  Child *c, *p;
  GPtrArray *pcaps, *ccaps;

  c = spawn (t, "consumer", "consumer", "--timeout", "20000", NULL);
  p = spawn (t, "producer", "producer", "--frames", "30", "--width", "320",
      "--height", "240", "--caps-change-at", "10", "--width2", "640",
      "--height2", "360", "--wait", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  assert_exit (c, 0);
  assert_all_frames (p, c, 30);
  pcaps = lines_with (p, "caps ");
  ccaps = lines_with (c, "caps ");
  fail_unless_equals_int (pcaps->len, 2);
  fail_unless_equals_int (ccaps->len, 2);
  fail_unless_equals_string (g_ptr_array_index (ccaps, 0),
      g_ptr_array_index (pcaps, 0));
  fail_unless_equals_string (g_ptr_array_index (ccaps, 1),
      g_ptr_array_index (pcaps, 1));
  fail_unless (g_str_has_prefix (g_ptr_array_index (ccaps, 1), "frames=10 "),
      "%s", (gchar *) g_ptr_array_index (ccaps, 1));
  fail_unless (strstr (g_ptr_array_index (ccaps, 1),
          "width=(int)640, height=(int)360") != NULL, "%s",
      (gchar *) g_ptr_array_index (ccaps, 1));
  g_ptr_array_free (pcaps, TRUE);
  g_ptr_array_free (ccaps, TRUE);
  assert_eos (c);
  e2e_free (t);
}

GST_END_TEST;

/* three consumers at once: each gets every frame and the EOS */
GST_START_TEST (test_three_consumers)
{
  E2e *t = e2e_new ();
  Child *c[3], *p;
  guint i;

  p = spawn (t, "producer", "producer", "--frames", "60", "--width", "320",
      "--height", "240", "--wait", "--wait-clients", "3", "--timeout",
      "20000", NULL);
  c[0] = spawn (t, "consumer1", "consumer", "--timeout", "20000", NULL);
  c[1] = spawn (t, "consumer2", "consumer", "--timeout", "20000", NULL);
  c[2] = spawn (t, "consumer3", "consumer", "--timeout", "20000", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  fail_if (has_line (p, "error wait-clients timeout"));
  for (i = 0; i < 3; i++) {
    assert_exit (c[i], 0);
    assert_all_frames (p, c[i], 60);
    assert_eos (c[i]);
  }
  assert_rendered (p, 60);
  e2e_free (t);
}

GST_END_TEST;

/* A transfer the cores and the elements were never told about: the test
 * build registers a second host-memory transfer (tests/xfer, memory type
 * host-test, transport=host-test) and nothing else.  One consumer asks
 * for it, one for system memory: each gets every frame, whole, from the
 * memory it asked for, and the producer kept a ring of each */
GST_START_TEST (test_second_transfer)
{
  static const gchar *const transports[] = { "host-test", "system" };
  E2e *t;
  Child *c[2], *p;
  GstStructure *s;
  guint i;

  /* the gpu suite's rerun forces GPU memory on every consumer */
  if (consumer_args_forced ())
    return;
  t = e2e_new ();
  p = spawn (t, "producer", "producer", "--frames", "60", "--width", "320",
      "--height", "240", "--wait", "--wait-clients", "2", "--timeout",
      "20000", NULL);
  for (i = 0; i < 2; i++)
    c[i] = spawn (t, transports[i], "consumer", "--timeout", "20000",
        "--transport", transports[i], NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  for (i = 0; i < 2; i++) {
    const gchar *line;
    gchar *want;

    assert_exit (c[i], 0);
    assert_all_frames (p, c[i], 60);
    assert_eos (c[i]);
    line = line_with (c[i], "transport memory-type=");
    want = g_strdup_printf ("%s ", transports[i]);
    fail_unless (line && g_str_has_prefix (line, want), "%s: %s",
        c[i]->name, line ? line : "no transport line");
    g_free (want);
    s = child_stats (c[i], "stats ");
    fail_unless_equals_string (gst_structure_get_string (s, "memory-type"),
        transports[i]);
    fail_unless (stats_u64 (s, "frames-received") == 60);
    gst_structure_free (s);
  }
  assert_rendered (p, 60);
  e2e_free (t);
}

GST_END_TEST;

/* A read that waits for its producer's signal, of a ring the producer
 * replaced while it waited (a caps change), ends when the consumer stops:
 * a flush ends the waits of every ring the consumer still has mapped, not
 * only the newest's.  The test transfer's reads wait until cancelled or
 * for 30 s (GPUSHARE_TEST_HOST_STALL); the consumer gives up after 2 s
 * without a frame, waits 2 s for its bus, then goes to NULL */
GST_START_TEST (test_stop_ends_read_of_replaced_ring)
{
  E2e *t;
  Child *c, *p;
  GstStructure *s;
  gint64 start, ms;
  gchar *stalls_log, *stalls = NULL;

  if (consumer_args_forced ())
    return;
  t = e2e_new ();
  stalls_log = g_build_filename (t->dir, "stalls.log", NULL);
  p = spawn (t, "producer", "producer", "--frames", "30", "--width", "320",
      "--height", "240", "--caps-change-at", "2", "--width2", "640",
      "--height2", "360", "--wait", "--timeout", "20000", NULL);
  g_setenv ("GPUSHARE_TEST_HOST_STALL", stalls_log, TRUE);
  start = g_get_monotonic_time ();
  c = spawn (t, "consumer", "consumer", "--timeout", "2000", "--transport",
      "host-test", "--set", "io-mode=copy", NULL);
  g_unsetenv ("GPUSHARE_TEST_HOST_STALL");
  fail_unless (wait_exit (c, STEP_TIMEOUT_MS),
      "the consumer did not stop within %d s of its start", STEP_TIMEOUT_MS
      / 1000);
  ms = (g_get_monotonic_time () - start) / 1000;
  /* the read that waited was of the first ring, not of the second */
  g_file_get_contents (stalls_log, &stalls, NULL, NULL);
  fail_unless (stalls && g_str_has_prefix (stalls, "stall epoch=1 "),
      "the first read that waited: %s", stalls ? stalls : "none");
  g_free (stalls);
  g_free (stalls_log);
  /* the producer waits for its next consumer (wait-for-connection) */
  g_subprocess_force_exit (p->proc);
  e2e_finish (t, RUN_TIMEOUT_MS);

  fail_unless (line_with (p, "caps frames=2 ") != NULL,
      "the producer did not change its caps");
  /* 2 s without a frame, 2 s for its bus, then its stop */
  fail_unless (ms < 10000, "the consumer took %" G_GINT64_FORMAT " ms to stop",
      ms);
  fail_if (line_with (c, "recv ") != NULL, "a frame came through the stall");
  /* the read the stop ended is no error */
  fail_if (line_with (c, "error domain=") != NULL, "%s",
      line_with (c, "error domain="));
  fail_if (line_with (c, "stop-error ") != NULL, "%s",
      line_with (c, "stop-error "));
  s = child_stats (c, "stats ");
  fail_unless (stats_u64 (s, "epoch") >= 2, "the ring was not replaced while "
      "the read waited: epoch %" G_GUINT64_FORMAT, stats_u64 (s, "epoch"));
  fail_unless_equals_string (gst_structure_get_string (s, "memory-type"),
      "host-test");
  gst_structure_free (s);
  e2e_free (t);
}

GST_END_TEST;

/* lossless: a slow consumer slows the producer down, nobody loses a frame */
GST_START_TEST (test_lossless_slow_consumer)
{
  E2e *t = e2e_new ();
  Child *fast, *slow, *p;
  GstStructure *s;

  p = spawn (t, "producer", "producer", "--frames", "60", "--width", "320",
      "--height", "240", "--policy", "lossless", "--wait", "--wait-clients",
      "2", "--timeout", "20000", NULL);
  fast = spawn (t, "fast", "consumer", "--timeout", "20000", NULL);
  slow = spawn (t, "slow", "consumer", "--timeout", "20000", "--hold-ms", "15",
      "--hold-frames", "3", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  assert_exit (fast, 0);
  assert_exit (slow, 0);
  assert_all_frames (p, fast, 60);
  assert_all_frames (p, slow, 60);
  assert_eos (fast);
  assert_eos (slow);
  assert_rendered (p, 60);
  s = child_stats (p, "stats-eos ");
  fail_unless (stats_client (s, slow) != NULL, "%" GST_PTR_FORMAT, s);
  fail_unless (stats_client (s, fast) != NULL, "%" GST_PTR_FORMAT, s);
  fail_unless (stats_u64 (stats_client (s, slow), "frames-dropped") == 0);
  fail_unless (stats_u64 (stats_client (s, fast), "frames-dropped") == 0);
  gst_structure_free (s);
  e2e_free (t);
}

GST_END_TEST;

/* leaky: a consumer that holds its share of the ring misses frames, the
 * producer and the fast consumer go on.  Wall-clock times are not checked:
 * the producer paces itself only so that the fast consumer always keeps
 * up, even on a loaded machine. */
GST_START_TEST (test_leaky_slow_consumer)
{
  E2e *t = e2e_new ();
  Child *fast, *slow, *p;
  GstStructure *s;
  const GstStructure *cs;
  guint n_slow;

  /* 16 slots, 2 consumers: each may hold 7, so the fast one would have to
   * fall 7 frames (70 ms) behind to be skipped */
  p = spawn (t, "producer", "producer", "--frames", "100", "--width", "320",
      "--height", "240", "--policy", "leaky", "--ring-size", "16",
      "--pause-ms", "10", "--wait", "--wait-clients", "2", "--timeout",
      "20000", NULL);
  fast = spawn (t, "fast", "consumer", "--timeout", "20000", NULL);
  slow = spawn (t, "slow", "consumer", "--timeout", "20000", "--hold-ms", "50",
      "--hold-frames", "6", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  assert_exit (fast, 0);
  assert_exit (slow, 0);
  assert_eos (p);
  assert_all_frames (p, fast, 100);
  assert_eos (fast);
  n_slow = assert_frames_subset (p, slow, TRUE);
  fail_unless (n_slow > 0 && n_slow < 100, "slow consumer got %u of 100",
      n_slow);
  assert_eos (slow);
  /* frames-dropped of the sink counts frames nobody got: none here, one
   * slot always stays with the producer */
  assert_rendered (p, 100);

  s = child_stats (p, "stats-eos ");
  cs = stats_client (s, slow);
  fail_unless (cs != NULL, "slow consumer not in %" GST_PTR_FORMAT, s);
  /* it was ready before frame 0: every frame was either sent or dropped */
  fail_unless (stats_u64 (cs, "frames-dropped") > 0, "%" GST_PTR_FORMAT, cs);
  fail_unless (stats_u64 (cs, "frames-sent") == n_slow, "%" GST_PTR_FORMAT, cs);
  fail_unless (stats_u64 (cs, "frames-sent") + stats_u64 (cs,
          "frames-dropped") == 100, "%" GST_PTR_FORMAT, cs);
  cs = stats_client (s, fast);
  fail_unless (cs != NULL, "fast consumer not in %" GST_PTR_FORMAT, s);
  fail_unless (stats_u64 (cs, "frames-dropped") == 0, "%" GST_PTR_FORMAT, cs);
  gst_structure_free (s);
  e2e_free (t);
}

GST_END_TEST;

/* A consumer killed while it holds slots (lossless, so the producer needs
 * them back to go on): the producer reclaims them, finishes, the other
 * consumer misses nothing, and in the end every slot is free */
GST_START_TEST (test_consumer_killed)
{
  E2e *t = e2e_new ();
  Child *survivor, *victim, *p;
  guint64 quarantined_at_eos;
  const gchar *transport;
  GstStructure *s;

  p = spawn (t, "producer", "producer", "--frames", "100", "--width", "320",
      "--height", "240", "--policy", "lossless", "--ring-size", "8",
      "--wait", "--wait-clients", "2", "--timeout", "20000", "--drain-ms",
      "10000", NULL);
  survivor = spawn (t, "survivor", "consumer", "--timeout", "20000", NULL);
  victim = spawn (t, "victim", "consumer", "--timeout", "20000",
      "--die-after", "20", "--hold-frames", "4", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (victim, -SIGKILL);
  fail_unless (has_line (victim, "dying"));
  assert_exit (p, 0);
  assert_exit (survivor, 0);
  assert_all_frames (p, survivor, 100);
  assert_all_frames (p, victim, 20);
  assert_eos (survivor);
  assert_rendered (p, 100);

  /* at EOS only the survivor is left */
  s = child_stats (p, "stats-eos ");
  fail_unless (stats_client (s, victim) == NULL, "%" GST_PTR_FORMAT, s);
  fail_unless_equals_int (stats_n_clients (s), 1);
  /* over GPU memory the victim's slots were quarantined (its copies out
   * of them may still have run on the GPU) and the ring replaced */
  quarantined_at_eos = stats_u64 (s, "slots-quarantined");
  /* over system memory a consumer whose process is gone reads nothing:
   * its slots come back, none is quarantined (its socket closes a moment
   * before its process is seen to end: the producer waits for that) */
  /* by the memory the consumers took (both the same, and the victim's
   * last lines die with it), not by the suite this runs in: on a host
   * with a GPU the element tests' consumers take GPU memory too */
  transport = line_with (survivor, "transport memory-type=");
  fail_unless (transport != NULL, "no transport line");
  if (g_str_has_prefix (transport, "system "))
    fail_unless_equals_uint64 (quarantined_at_eos, 0);
  gst_structure_free (s);
  /* after the survivor left too: the whole ring is free again, but for
   * the slot its appsink still held as its src stopped (the buffer it
   * prerolled on, which appsink lets go of only on its way to NULL): that
   * one is quarantined, never written again */
  s = child_stats (p, "stats ");
  fail_unless_equals_int (stats_n_clients (s), 0);
  {
    guint free_slots = 0;
    guint64 quarantined = stats_u64 (s, "slots-quarantined") -
        quarantined_at_eos;

    fail_unless (gst_structure_get_uint (s, "free-slots", &free_slots));
    fail_unless (quarantined <= 1, "%" G_GUINT64_FORMAT " slots "
        "quarantined as the survivor left", quarantined);
    fail_unless_equals_int (free_slots + quarantined, 8);
  }
  gst_structure_free (s);
  e2e_free (t);
}

GST_END_TEST;

/* A consumer that stops answering (SIGSTOP) in mid-stream.  Under a
 * lossless producer it loses its lease: the producer waits lease-timeout
 * for the slots it holds, then drops it (reason lease).  Under a leaky one
 * it costs only its share of the ring and is dropped by the heartbeat once
 * silent for 3 intervals (reason timeout).  Either way what it held is
 * quarantined, the ring is replaced, the other consumer gets every frame,
 * and, let go, the stopped consumer delivers each frame it had been sent
 * from a quarantined slot nobody wrote again (intact), then an ERROR. */
typedef struct
{
  const gchar *policy;
  const gchar *frames;
  const gchar *reason;          /* of its removal */
  const gchar *error;           /* in its ERROR */
} StoppedCase;

static const StoppedCase stopped_cases[] = {
  {"lossless", "200", "lease", "lease"},
  /* 500 frames: over 5 s, past the heartbeat's 3 s */
  {"leaky", "500", "timeout", "heartbeat"},
};

GST_START_TEST (test_stopped_consumer)
{
  const StoppedCase *k = &stopped_cases[__i__];
  E2e *t = e2e_new ();
  Child *survivor, *victim, *p;
  gboolean stopped = FALSE;
  const gchar *line;
  gchar *suffix, *last;
  GstStructure *s;
  guint n, frames = atoi (k->frames);

  GST_INFO ("policy %s", k->policy);
  p = spawn (t, "producer", "producer", "--frames", k->frames, "--width",
      "320", "--height", "240", "--policy", k->policy, "--ring-size", "16",
      "--lease-ms", "1000", "--pause-ms", "10", "--wait", "--wait-clients",
      "2", "--timeout", "20000", NULL);
  survivor = spawn (t, "survivor", "consumer", "--timeout", "20000", NULL);
  victim = spawn (t, "victim", "consumer", "--timeout", "20000", NULL);
  if (wait_line (t, victim, "recv offset=10 ", STEP_TIMEOUT_MS))
    stopped = kill (atoi (victim->pid), SIGSTOP) == 0;
  if (stopped)
    wait_line (t, p, "client-removed ", STEP_TIMEOUT_MS);
  last = g_strdup_printf ("sent offset=%u ", frames - 20);
  poll_line (p, last, STEP_TIMEOUT_MS);
  g_free (last);
  if (stopped)
    kill (atoi (victim->pid), SIGCONT);
  e2e_finish (t, RUN_TIMEOUT_MS);

  fail_unless (stopped, "could not stop the victim");
  assert_exit (p, 0);
  assert_exit (survivor, 0);
  if (g_str_equal (k->policy, "leaky")) {
    /* a leaky producer skips a consumer while it maps the ring that
     * replaced the one the victim held: the survivor may miss frames
     * then, and counts them (frames-missed), each gap DISCONT */
    guint got = assert_frames_subset (p, survivor, TRUE);

    s = child_stats (survivor, "stats ");
    fail_unless_equals_int (got + stats_u64 (s, "frames-missed"), frames);
    fail_unless (got >= frames - 16, "the survivor got %u of %u frames", got,
        frames);
    gst_structure_free (s);
  } else {
    assert_all_frames (p, survivor, frames);
  }
  assert_eos (survivor);
  /* the first consumer to go is the victim, for the expected reason */
  line = line_with (p, "client-removed ");
  suffix = g_strdup_printf (" reason=%s", k->reason);
  fail_unless (line != NULL && g_str_has_suffix (line, suffix),
      "producer: client-removed %s", line ? line : "never");
  g_free (suffix);
  /* told why, after what it had been sent */
  assert_exit (victim, 2);
  line = line_with (victim, "error ");
  fail_unless (line != NULL && strstr (line, k->error), "victim: %s",
      line ? line : "no error");
  fail_if (has_line (victim, "eos"));
  n = assert_frames_subset (p, victim, TRUE);
  fail_unless (n >= 11 && n < frames, "victim got %u frames", n);

  s = child_stats (p, "stats ");
  fail_unless (stats_u64 (s, "slots-quarantined") >= 1, "%" GST_PTR_FORMAT, s);
  fail_unless (stats_u64 (s, "rings-replaced") >= 1, "%" GST_PTR_FORMAT, s);
  fail_unless (stats_u64 (s, "frames-dropped") == 0, "%" GST_PTR_FORMAT, s);
  gst_structure_free (s);
  e2e_free (t);
}

GST_END_TEST;

#define CONSUMER_TIMEOUT_MS 8000

/* The producer is killed after 40 frames: the consumer reports a resource
 * error within its timeout, exits with 2, and what it got is intact */
GST_START_TEST (test_producer_killed)
{
  E2e *t = e2e_new ();
  Child *c, *p;
  const gchar *err;
  gchar *timeout = g_strdup_printf ("%d", CONSUMER_TIMEOUT_MS);

  c = spawn (t, "consumer", "consumer", "--timeout", timeout, NULL);
  p = spawn (t, "producer", "producer", "--frames", "100", "--width", "320",
      "--height", "240", "--wait", "--die-after", "40", NULL);
  /* the consumer must notice the death by itself, before its own frame
   * timeout would end it */
  if (wait_exit (p, STEP_TIMEOUT_MS) && !wait_exit (c, CONSUMER_TIMEOUT_MS))
    g_string_append (t->missed, "consumer did not notice the producer's "
        "death within its timeout; ");
  e2e_finish (t, RUN_TIMEOUT_MS);
  g_free (timeout);

  assert_exit (p, -SIGKILL);
  fail_unless (has_line (p, "dying"));
  assert_exit (c, 2);
  err = line_with (c, "error ");
  fail_unless (err != NULL, "consumer printed no error");
  fail_unless (g_str_has_prefix (err, "domain=gst-resource-error-quark "),
      "%s", err);
  fail_unless (strstr (err, "went away") || strstr (err, "stopped"), "%s", err);
  /* and what to set instead */
  fail_unless (strstr (err, "producer-lost=reconnect") != NULL, "%s", err);
  fail_if (has_line (c, "eos"));
  /* frames 0..39 were rendered (sent on the socket) before the producer
   * died in front of frame 40: all of them arrive, intact */
  assert_all_frames (p, c, 40);
  e2e_free (t);
}

GST_END_TEST;

/* producer-lost=reconnect: the producer dies mid-stream, a new one starts
 * on the same path; the consumer connects again, takes every frame of the
 * new producer (the first marked DISCONT) and ends with its EOS.  With
 * producer-lost=eos, the same death ends the stream cleanly. */
GST_START_TEST (test_producer_restart)
{
  E2e *t = e2e_new ();
  Child *c, *p1, *p2;
  GPtrArray *sent, *recv;
  gchar *timeout = g_strdup_printf ("%d", CONSUMER_TIMEOUT_MS);
  guint i, n1;

  c = spawn (t, "consumer", "consumer", "--timeout", timeout,
      "--producer-lost", "reconnect", NULL);
  p1 = spawn (t, "producer-1", "producer", "--frames", "100", "--width",
      "320", "--height", "240", "--wait", "--die-after", "20", NULL);
  fail_unless (wait_exit (p1, STEP_TIMEOUT_MS), "producer-1 did not die");
  p2 = spawn (t, "producer-2", "producer", "--frames", "30", "--width",
      "320", "--height", "240", "--wait", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);
  g_free (timeout);

  assert_exit (p1, -SIGKILL);
  assert_exit (p2, 0);
  assert_exit (c, 0);
  fail_if (has_line (c, "error "), "%s", line_with (c, "error "));
  assert_eos (c);
  /* producer-1's frames up to its death, then all of producer-2's */
  sent = lines_with (p2, "sent ");
  recv = lines_with (c, "recv ");
  fail_unless_equals_int (sent->len, 30);
  fail_unless (recv->len >= 30 + 1, "consumer received %u frames", recv->len);
  n1 = recv->len - 30;
  fail_unless (n1 <= 20, "%u frames before the restart", n1);
  for (i = 0; i < 30; i++) {
    const gchar *r = g_ptr_array_index (recv, n1 + i);
    const gchar *w = g_ptr_array_index (sent, i);
    gchar *flags_r = strstr (r, " flags="), *flags_w = strstr (w, " flags=");

    /* identical but for the DISCONT the first frame after the restart
     * carries: compare the parts around the flags */
    fail_unless (strncmp (r, w, flags_r - r) == 0 && g_str_equal (strstr
            (flags_r, " size="), strstr (flags_w, " size=")),
        "frame %u of producer-2:\n sent %s\n recv %s", i, w, r);
    if (i == 0)
      fail_unless (strtoul (flags_r + 9, NULL, 16) & GST_BUFFER_FLAG_DISCONT,
          "the first frame after the restart is not DISCONT: %s", r);
  }
  fail_unless (strstr (line_with (c, "stats "), "reconnects=(uint)1") !=
      NULL, "%s", line_with (c, "stats "));
  g_ptr_array_free (sent, TRUE);
  g_ptr_array_free (recv, TRUE);
  e2e_free (t);

  /* producer-lost=eos */
  t = e2e_new ();
  timeout = g_strdup_printf ("%d", CONSUMER_TIMEOUT_MS);
  c = spawn (t, "consumer", "consumer", "--timeout", timeout,
      "--producer-lost", "eos", NULL);
  p1 = spawn (t, "producer", "producer", "--frames", "100", "--width",
      "320", "--height", "240", "--wait", "--die-after", "20", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);
  g_free (timeout);
  assert_exit (p1, -SIGKILL);
  assert_exit (c, 0);
  fail_if (has_line (c, "error "));
  assert_eos (c);
  assert_all_frames (p1, c, 20);
  e2e_free (t);
}

GST_END_TEST;

/* The consumer's last frames are the last ones the producer sent, each
 * line identical but for the buffer flags (the first frame after a
 * reconnect is DISCONT), and at least min of them. */
static void
assert_frames_tail (Child * producer, Child * consumer, guint min)
{
  GPtrArray *sent = lines_with (producer, "sent ");
  GPtrArray *recv = lines_with (consumer, "recv ");
  guint i, n = MIN (sent->len, recv->len);

  fail_unless (n >= min, "%s received %u frames, %s sent %u",
      consumer->name, recv->len, producer->name, sent->len);
  for (i = 0; i < n; i++) {
    const gchar *r = g_ptr_array_index (recv, recv->len - n + i);
    const gchar *w = g_ptr_array_index (sent, sent->len - n + i);
    const gchar *fr = strstr (r, " flags="), *fw = strstr (w, " flags=");

    fail_unless (fr && fw && fr - r == fw - w && strncmp (r, w, fr - r) == 0
        && g_str_equal (strstr (fr, " size="), strstr (fw, " size=")),
        "%s frame %u:\n sent %s\n recv %s", consumer->name, i, w, r);
  }
  g_ptr_array_free (sent, TRUE);
  g_ptr_array_free (recv, TRUE);
}

/* Crash at every step: either side is killed (SIGKILL, through the
 * test-only GPUSHARE_TEST_DIE_AT hook) after each step of the handshake
 * and in mid-stream; the survivor recovers and the next start is clean.
 * A dead producer: the consumer (producer-lost=reconnect) takes every
 * frame of the next producer.  A dead consumer: the producer goes on and
 * the next consumer takes the rest of the stream, intact. */
static const gchar *const producer_steps[] = {
  "sink:announce", "sink:export", "sink:ready", "sink:frame:5", NULL
};

static const gchar *const consumer_steps[] = {
  "src:accept", "src:map", "src:ready", "src:frame:5", NULL
};

GST_START_TEST (test_crash_drill_producer)
{
  const gchar *step = producer_steps[__i__];
  gchar *timeout = g_strdup_printf ("%d", CONSUMER_TIMEOUT_MS);
  E2e *t = e2e_new ();
  Child *c, *p1, *p2;

  GST_INFO ("producer dies at %s", step);
  c = spawn (t, "consumer", "consumer", "--timeout", timeout,
      "--producer-lost", "reconnect", NULL);
  p1 = spawn (t, "producer-1", "producer", "--frames", "100", "--width",
      "320", "--height", "240", "--wait", "--die-at", step, NULL);
  fail_unless (wait_exit (p1, STEP_TIMEOUT_MS), "producer-1 did not die "
      "at %s", step);
  p2 = spawn (t, "producer-2", "producer", "--frames", "20", "--width",
      "320", "--height", "240", "--wait", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);
  g_free (timeout);

  assert_exit (p1, -SIGKILL);
  assert_exit (p2, 0);
  assert_exit (c, 0);
  fail_if (has_line (c, "error "), "%s", line_with (c, "error "));
  assert_eos (c);
  /* the new producer's frames are all there, at the end */
  assert_frames_tail (p2, c, 20);
  e2e_free (t);
}

GST_END_TEST;

GST_START_TEST (test_crash_drill_consumer)
{
  const gchar *step = consumer_steps[__i__];
  gchar *timeout = g_strdup_printf ("%d", CONSUMER_TIMEOUT_MS);
  E2e *t = e2e_new ();
  Child *c1, *c2, *p;

  GST_INFO ("consumer dies at %s", step);
  c1 = spawn (t, "consumer-1", "consumer", "--timeout", timeout, "--die-at",
      step, NULL);
  p = spawn (t, "producer", "producer", "--frames", "40", "--width", "320",
      "--height", "240", "--wait", "--policy", "lossless", NULL);
  fail_unless (wait_exit (c1, STEP_TIMEOUT_MS), "consumer-1 did not die "
      "at %s", step);
  c2 = spawn (t, "consumer-2", "consumer", "--timeout", timeout, NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);
  g_free (timeout);

  assert_exit (c1, -SIGKILL);
  assert_exit (p, 0);
  assert_exit (c2, 0);
  fail_if (has_line (p, "error "), "%s", line_with (p, "error "));
  assert_eos (c2);
  /* the rest of the stream reached the next consumer, intact */
  assert_frames_tail (p, c2, 1);
  e2e_free (t);
}

GST_END_TEST;

/* SIGKILL at a random frame of a 1000-frame stream, of the producer or of
 * the consumer, a few times each (the seed is printed): every frame that
 * reaches a consumer is intact and in order; a consumer whose producer
 * died ends cleanly (producer-lost=eos) with every frame sent before the
 * death; a producer whose consumer died serves the rest of the stream to
 * the next consumer. */
GST_START_TEST (test_random_kills)
{
  /* GPUSHARE_E2E_SEED replays a run */
  guint32 seed = g_getenv ("GPUSHARE_E2E_SEED") ?
      (guint32) g_ascii_strtoull (g_getenv ("GPUSHARE_E2E_SEED"), NULL, 10) :
      g_random_int ();
  GRand *rand = g_rand_new_with_seed (seed);
  gchar *timeout = g_strdup_printf ("%d", CONSUMER_TIMEOUT_MS);
  guint round;

  g_print ("test_random_kills: seed %u\n", seed);
  for (round = 0; round < 6; round++) {
    gboolean kill_producer = round % 2 == 0;
    /* a consumer killed within a ring's length of the end would leave a
     * producer that has sent everything already, and exited, to the next
     * consumer: kill it before frame 990 */
    gchar *at = g_strdup_printf ("%d", g_rand_int_range (rand, 1,
            kill_producer ? 1000 : 990));
    E2e *t = e2e_new ();
    Child *c, *p, *c2;

    if (kill_producer) {
      c = spawn (t, "consumer", "consumer", "--timeout", timeout,
          "--producer-lost", "eos", NULL);
      p = spawn (t, "producer", "producer", "--frames", "1000", "--width",
          "160", "--height", "120", "--wait", "--policy", "lossless",
          "--die-after", at, NULL);
      e2e_finish (t, RUN_TIMEOUT_MS);
      assert_exit (p, -SIGKILL);
      assert_exit (c, 0);
      assert_eos (c);
      /* frames 0 .. at - 1 were sent before the death: all arrive */
      assert_all_frames (p, c, atoi (at));
    } else {
      GPtrArray *recv;

      c = spawn (t, "consumer-1", "consumer", "--timeout", timeout,
          "--die-after", at, NULL);
      p = spawn (t, "producer", "producer", "--frames", "1000", "--width",
          "160", "--height", "120", "--wait", "--policy", "lossless", NULL);
      fail_unless (wait_exit (c, STEP_TIMEOUT_MS), "round %u: consumer-1 "
          "did not die", round);
      c2 = spawn (t, "consumer-2", "consumer", "--timeout", timeout, NULL);
      e2e_finish (t, RUN_TIMEOUT_MS);
      assert_exit (c, -SIGKILL);
      assert_exit (p, 0);
      assert_exit (c2, 0);
      assert_eos (c2);
      /* what the dead consumer got was intact, from the first frame on */
      recv = lines_with (c, "recv ");
      assert_all_frames (p, c, recv->len);
      g_ptr_array_free (recv, TRUE);
      assert_frames_tail (p, c2, 1);
    }
    e2e_free (t);
    g_free (at);
  }
  g_free (timeout);
  g_rand_free (rand);
}

GST_END_TEST;

/* A live producer and a live consumer: the consumer runs 1.5 s before the
 * producer, so unmapped timestamps (the producer's running time, or
 * restarted at 0) would be more than a second late in the consumer's
 * running time; mapped ones are not */
GST_START_TEST (test_live)
{
  E2e *t = e2e_new ();
  Child *c, *p;
  const gchar *late;
  guint64 max_late = G_MAXUINT64;
  guint n;

  c = spawn (t, "consumer", "consumer", "--live", "--timeout", "20000", NULL);
  g_usleep (1500 * 1000);
  p = spawn (t, "producer", "producer", "--frames", "30", "--width", "320",
      "--height", "240", "--source", "videotestsrc", "--live", "--wait", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  assert_exit (c, 0);
  assert_eos (c);
  n = assert_frames_subset (p, c, FALSE);
  fail_unless (n > 0, "no frame arrived");
  late = line_with (c, "live max-late-ns=");
  fail_unless (late != NULL);
  max_late = g_ascii_strtoull (late, NULL, 10);
  fail_unless (max_late < GST_SECOND, "frames up to %" GST_TIME_FORMAT
      " late: timestamps not in the consumer's running time",
      GST_TIME_ARGS (max_late));
  e2e_free (t);
}

GST_END_TEST;

/* wait-for-connection: the producer is up and holding frame 0 when the
 * consumer arrives half a second later; frame 0 is not lost */
GST_START_TEST (test_wait_for_connection)
{
  E2e *t = e2e_new ();
  Child *c, *p;

  p = spawn (t, "producer", "producer", "--frames", "30", "--width", "320",
      "--height", "240", "--wait", NULL);
  /* the caps line comes right before the sink would render frame 0 */
  if (wait_line (t, p, "caps ", STEP_TIMEOUT_MS))
    g_usleep (500 * 1000);
  c = spawn (t, "consumer", "consumer", "--timeout", "20000", NULL);
  e2e_finish (t, RUN_TIMEOUT_MS);

  assert_exit (p, 0);
  assert_exit (c, 0);
  fail_unless (line_with (c, "recv offset=0 ") != NULL, "frame 0 was lost");
  assert_all_frames (p, c, 30);
  assert_eos (c);
  e2e_free (t);
}

GST_END_TEST;

/* Lossless across a caps change that needs a new ring: a consumer that is
 * slow to map the new ring must still get every frame.  The consumer is
 * stopped (SIGSTOP) just before the change and let go 1.5 s later, so that
 * it cannot map the new ring before the producer's next frames.
 *
 * A lossless sink waits for every consumer that was streaming to map the
 * new ring before it publishes the next frame; a leaky one counts the
 * frames such a consumer misses in its frames-dropped. */
GST_START_TEST (test_lossless_caps_change_slow_remap)
{
  E2e *t = e2e_new ();
  Child *a, *b, *p;
  gboolean stopped = FALSE;

  p = spawn (t, "producer", "producer", "--frames", "40", "--width", "320",
      "--height", "240", "--caps-change-at", "20", "--width2", "640",
      "--height2", "360", "--policy", "lossless", "--ring-size", "16",
      "--pause-ms", "30", "--wait", "--wait-clients", "2", "--timeout",
      "20000", NULL);
  a = spawn (t, "consumer-a", "consumer", "--timeout", "20000", NULL);
  b = spawn (t, "consumer-b", "consumer", "--timeout", "20000", NULL);
  /* frames 12..19 are 240 ms of margin before the caps change */
  if (wait_line (t, b, "recv offset=12 ", STEP_TIMEOUT_MS))
    stopped = kill (atoi (b->pid), SIGSTOP) == 0;
  /* a lossless producer waits for b here; one that does not runs on */
  poll_line (p, "sent offset=30 ", 1500);
  if (stopped)
    kill (atoi (b->pid), SIGCONT);
  e2e_finish (t, RUN_TIMEOUT_MS);

  fail_unless (stopped, "could not stop consumer-b");
  assert_exit (p, 0);
  assert_exit (a, 0);
  assert_exit (b, 0);
  assert_all_frames (p, a, 40);
  assert_all_frames (p, b, 40);
  e2e_free (t);
}

GST_END_TEST;

static Suite *
gpushare_e2e_suite (void)
{
  Suite *s = suite_create ("gpushare-e2e");
  TCase *tc = tcase_create ("e2e");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_appsrc_1080p_nv12);
  tcase_add_test (tc, test_caps_from_handshake);
  tcase_add_test (tc, test_caps_change);
  tcase_add_test (tc, test_lossless_caps_change_slow_remap);
  tcase_add_test (tc, test_three_consumers);
  tcase_add_test (tc, test_second_transfer);
  tcase_add_test (tc, test_stop_ends_read_of_replaced_ring);
  tcase_add_test (tc, test_lossless_slow_consumer);
  tcase_add_test (tc, test_leaky_slow_consumer);
  tcase_add_test (tc, test_consumer_killed);
  tcase_add_loop_test (tc, test_stopped_consumer, 0,
      G_N_ELEMENTS (stopped_cases));
  tcase_add_test (tc, test_producer_killed);
  tcase_add_test (tc, test_producer_restart);
  tcase_add_loop_test (tc, test_crash_drill_producer, 0,
      G_N_ELEMENTS (producer_steps) - 1);
  tcase_add_loop_test (tc, test_crash_drill_consumer, 0,
      G_N_ELEMENTS (consumer_steps) - 1);
  tcase_add_test (tc, test_random_kills);
  tcase_add_test (tc, test_live);
  tcase_add_test (tc, test_wait_for_connection);
  return s;
}

GST_CHECK_MAIN (gpushare_e2e);
