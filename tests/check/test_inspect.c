/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-inspect against a producer that is not one: a raw socket that
 * speaks the protocol with text chosen to attack the operator's terminal,
 * and fields of the wrong types; and a listener of another uid, which
 * inspect refuses as gpusharesrc refuses it.
 *
 * GPUSHARE_INSPECT names the program.
 */

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#include "gpushare-check-elements.h"

/* inspect with args, started; inspect_finish () waits for it: its exit
 * status, its output in *out and *err (freed by the caller) */
static GSubprocess *
inspect_start (const gchar * const *args)
{
  GPtrArray *argv = g_ptr_array_new ();
  const gchar *prog = g_getenv ("GPUSHARE_INSPECT");
  GError *error = NULL;
  GSubprocess *sp;
  guint i;

  fail_unless (prog != NULL, "GPUSHARE_INSPECT is not set");
  g_ptr_array_add (argv, (gpointer) prog);
  for (i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  sp = g_subprocess_newv ((const gchar * const *) argv->pdata,
      G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  fail_unless (sp != NULL, "%s", error ? error->message : "");
  g_ptr_array_unref (argv);
  return sp;
}

static gint
inspect_finish (GSubprocess * sp, gchar ** out, gchar ** err)
{
  GError *error = NULL;
  gint status;

  fail_unless (g_subprocess_communicate_utf8 (sp, NULL, NULL, out, err,
          &error), "%s", error ? error->message : "");
  status = g_subprocess_get_exit_status (sp);
  g_object_unref (sp);
  return status;
}

static gboolean
has_control (const gchar * text)
{
  const gchar *c;

  for (c = text; *c; c++)
    if (((guchar) * c < 0x20 && *c != '\n') || (guchar) * c == 0x7f)
      return TRUE;
  return FALSE;
}

#define EVIL "\033]0;owned\007\033[2J\033[31m"

/* A producer's name, caps and status text with escape sequences reach the
 * terminal as \xNN; a status whose fields have other types than a producer
 * gives them is printed with "?" where it cannot be read, without a
 * CRITICAL.  Before, the sequences went to the terminal raw, and "live"
 * of another type was a CRITICAL (an abort under fatal-criticals). */
GST_START_TEST (test_inspect_hostile_text)
{
  gchar *path = socket_path ("evil.sock");
  const gchar *args[] = { "--once", "--timeout", "3000", path, NULL };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GstStructure *st, *client;
  GValue clients = G_VALUE_INIT, v = G_VALUE_INIT;
  gchar *text, *out = NULL, *err = NULL;
  GSubprocess *sp;
  gint listen_fd, status;
  RawPeer raw;

  listen_fd = raw_listen (path);
  sp = inspect_start (args);
  raw_init (&raw, raw_accept (listen_fd));
  make_announce (msg, 2, 8192);
  msg->u.announce.name_len = strlen ("cam" EVIL);
  memcpy (msg->u.announce.name, "cam" EVIL, msg->u.announce.name_len + 1);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_OBSERVE, msg, NULL, NULL);
  /* new caps, their text a producer's too */
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_CAPS;
  msg->u.caps.latency = GST_CLOCK_TIME_NONE;
  make_layout (&msg->u.caps.layout, 2, 8192);
  g_strlcpy (msg->u.caps.layout.caps, "video/x-raw, c=(string)\"" EVIL "\"",
      sizeof (msg->u.caps.layout.caps));
  msg->u.caps.layout.caps_len = strlen (msg->u.caps.layout.caps);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));

  client = gst_structure_new ("client", "id", G_TYPE_UINT, 1,
      "name", G_TYPE_STRING, "det" EVIL, "state", G_TYPE_INT, 3,
      "memory-reason", G_TYPE_STRING, EVIL, NULL);
  g_value_init (&clients, GST_TYPE_ARRAY);
  g_value_init (&v, GST_TYPE_STRUCTURE);
  gst_value_set_structure (&v, client);
  gst_value_array_append_and_take_value (&clients, &v);
  st = gst_structure_new ("application/x-gpushare-status",
      "policy", G_TYPE_STRING, "leaky" EVIL, "live", G_TYPE_STRING, "yes",
      "gpu-memory", G_TYPE_INT, 7, "num-clients", G_TYPE_STRING, "1",
      "ring-size", G_TYPE_STRING, "x", NULL);
  gst_structure_take_value (st, "clients", &clients);
  text = gst_structure_to_string (st);
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_STATUS;
  msg->u.status.text_len = strlen (text);
  memcpy (msg->u.status.text, text, msg->u.status.text_len);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));

  status = inspect_finish (sp, &out, &err);
  fail_unless_equals_int (status, 0);
  fail_if (has_control (out), "control characters reached the terminal: %s",
      out);
  fail_unless (strstr (out, "cam\\x1b]0;owned\\x07") != NULL, "%s", out);
  fail_unless (strstr (out, "det\\x1b") != NULL, "%s", out);
  fail_unless (strstr (out, "caps of ") != NULL, "%s", out);
  fail_unless (strstr (out, "live ?") != NULL, "%s", out);
  fail_if (strstr (err, "CRITICAL") != NULL, "%s", err);

  g_free (out);
  g_free (err);
  g_free (text);
  gst_structure_free (st);
  gst_structure_free (client);
  raw_clear (&raw);
  close (listen_fd);
  g_free (msg);
  g_free (path);
}

GST_END_TEST;

/* A producer's ERROR text reaches the terminal escaped too (before, raw,
 * as its CAPS text did) */
GST_START_TEST (test_inspect_hostile_error)
{
  gchar *path = socket_path ("evil.sock");
  const gchar *args[] = { "--once", "--timeout", "3000", path, NULL };
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  gchar *out = NULL, *err = NULL;
  GSubprocess *sp;
  gint listen_fd, status;
  RawPeer raw;

  listen_fd = raw_listen (path);
  sp = inspect_start (args);
  raw_init (&raw, raw_accept (listen_fd));
  make_announce (msg, 2, 8192);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_OBSERVE, msg, NULL, NULL);
  memset (msg, 0, sizeof (*msg));
  msg->type = GPUSHARE_MSG_ERROR;
  msg->u.error.code = GPUSHARE_ERR_NOT_AUTHORIZED;
  msg->u.error.text_len = strlen ("no" EVIL);
  memcpy (msg->u.error.text, "no" EVIL, msg->u.error.text_len);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));

  status = inspect_finish (sp, &out, &err);
  fail_if (status == 0);
  fail_if (has_control (err), "control characters reached the terminal: %s",
      err);
  fail_unless (strstr (err, "no\\x1b]0;owned\\x07") != NULL, "%s", err);

  g_free (out);
  g_free (err);
  raw_clear (&raw);
  close (listen_fd);
  g_free (msg);
  g_free (path);
}

GST_END_TEST;

/* A process of another uid listening at the path is refused before a byte
 * is read, unless --allow-uid names it (root only: the test makes the
 * listener nobody's). */
GST_START_TEST (test_inspect_untrusted_listener)
{
  gchar *dir, *path;
  const gchar *args[] = { "--once", "--timeout", "500", NULL, NULL };
  const gchar *allow[] = { "--once", "--timeout", "500", "--allow-uid",
    "65534", NULL, NULL
  };
  gchar *out = NULL, *err = NULL;
  gint ready[2], status;
  pid_t child;
  gchar c;

  if (getuid () != 0) {
    g_print ("SKIP test_inspect_untrusted_listener: needs root to make a "
        "listener of another uid\n");
    return;
  }
  dir = g_build_filename (tmpdir, "nobody", NULL);
  fail_unless (g_mkdir (dir, 0777) == 0);
  fail_unless (chmod (dir, 0777) == 0 && chmod (tmpdir, 0755) == 0);
  path = g_build_filename (dir, "p.sock", NULL);
  fail_unless (pipe (ready) == 0);
  child = fork ();
  fail_unless (child >= 0);
  if (child == 0) {
    if (setgid (65534) != 0 || setuid (65534) != 0)
      _exit (1);
    raw_listen (path);
    (void) !write (ready[1], "1", 1);
    pause ();
    _exit (0);
  }
  close (ready[1]);
  fail_unless (read (ready[0], &c, 1) == 1, "the listener did not start");
  close (ready[0]);

  args[3] = path;
  status = inspect_finish (inspect_start (args), &out, &err);
  fail_unless_equals_int (status, 1);
  fail_unless (strstr (err, "runs as uid 65534") != NULL
      && strstr (err, "not trusted") != NULL, "%s", err);
  g_free (out);
  g_free (err);
  /* trusted: it connects, and waits for an ANNOUNCE that does not come */
  allow[5] = path;
  status = inspect_finish (inspect_start (allow), &out, &err);
  fail_if (strstr (err, "not trusted") != NULL, "%s", err);
  g_free (out);
  g_free (err);

  kill (child, SIGKILL);
  waitpid (child, NULL, 0);
  unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
}

GST_END_TEST;

/* GSubprocess starts GLib's worker thread, with a descriptor of its own
 * for the life of the process: started before the fixture counts them */
static void
warm_up_gio (void)
{
  GSubprocess *sp = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE,
      NULL, "true", NULL);

  if (sp) {
    g_subprocess_wait (sp, NULL, NULL);
    g_object_unref (sp);
  }
}

static Suite *
gpushare_inspect_suite (void)
{
  Suite *s = suite_create ("gpushare_inspect");
  TCase *tc = tcase_create ("inspect");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, warm_up_gio, NULL);
  tcase_add_checked_fixture (tc, elements_setup, elements_teardown);
  tcase_add_test (tc, test_inspect_hostile_text);
  tcase_add_test (tc, test_inspect_hostile_error);
  tcase_add_test (tc, test_inspect_untrusted_listener);
  return s;
}

GST_CHECK_MAIN (gpushare_inspect);
