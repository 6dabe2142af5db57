/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transport on a socketpair, without elements: what it delivers, and
 * in which order, when the peer goes away.
 */
#include <gst/check/gstcheck.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpushareconn.h"
#include "gpushareproto.h"

typedef struct
{
  GArray *types;                /* GpuShareMsgType delivered, in order */
  gboolean closed;
  gint closed_code;
  gint closed_at;               /* messages delivered before the close */
} Seen;

static void
on_message (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, gpointer user_data)
{
  Seen *seen = user_data;
  guint32 type = msg->type;

  gpushare_close_fds (fds, n_fds);
  g_array_append_val (seen->types, type);
}

static void
on_closed (GpuShareConn * conn, const GError * error, gpointer user_data)
{
  Seen *seen = user_data;

  seen->closed = TRUE;
  seen->closed_code = error ? error->code : -1;
  seen->closed_at = seen->types->len;
}

/* writes one whole message to a raw socket */
static void
write_msg (gint fd, GpuShareMsgType type)
{
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GByteArray *b = g_byte_array_new ();

  msg->type = type;
  if (type == GPUSHARE_MSG_GOODBYE)
    msg->u.goodbye.reason = GPUSHARE_ERR_SHUTDOWN;
  fail_unless (gpushare_msg_build (msg, 0, b));
  fail_unless_equals_int (write (fd, b->data, b->len), b->len);
  g_byte_array_unref (b);
  g_free (msg);
}

static void
iterate_until_closed (GMainContext * context, Seen * seen)
{
  gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

  while (!seen->closed && g_get_monotonic_time () < deadline)
    g_main_context_iteration (context, FALSE);
  fail_unless (seen->closed, "the connection never reported its end");
}

/* A peer that says goodbye and hangs up while we send to it: the send
 * fails (EPIPE) before our reader ran, and the goodbye must still be
 * delivered, before the hang-up.  It used to be lost: the failed send
 * failed the connection at once. */
GST_START_TEST (test_goodbye_before_hangup_wins_over_send_error)
{
  GMainContext *context = g_main_context_new ();
  GpuShareMsg *frame = g_new0 (GpuShareMsg, 1);
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  GpuShareConn *conn;
  gint sv[2];

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  fail_unless (fcntl (sv[0], F_SETFL, O_NONBLOCK) == 0);
  conn = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen);
  gpushare_conn_start (conn);

  write_msg (sv[1], GPUSHARE_MSG_GOODBYE);
  close (sv[1]);

  /* the context has not run: nothing was read yet */
  frame->type = GPUSHARE_MSG_EOS;
  fail_if (gpushare_conn_send (conn, frame, NULL, 0, NULL),
      "a send to a peer that hung up succeeded");
  fail_if (seen.closed, "the close was reported from the sending thread");

  iterate_until_closed (context, &seen);
  fail_unless_equals_int (seen.types->len, 1);
  fail_unless_equals_int (g_array_index (seen.types, guint32, 0),
      GPUSHARE_MSG_GOODBYE);
  fail_unless_equals_int (seen.closed_at, 1);
  fail_unless_equals_int (seen.closed_code, GPUSHARE_CONN_ERROR_HANGUP);
  /* nothing more goes out once the peer is gone */
  fail_if (gpushare_conn_send (conn, frame, NULL, 0, NULL));

  gpushare_conn_close (conn);
  gpushare_conn_unref (conn);
  g_array_unref (seen.types);
  g_free (frame);
  g_main_context_unref (context);
}

GST_END_TEST;

/* Without a reader there is nobody to deliver anything: a failed send
 * fails the connection at once. */
GST_START_TEST (test_send_error_without_reader_fails_at_once)
{
  GMainContext *context = g_main_context_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  Seen seen = { g_array_new (FALSE, FALSE, sizeof (guint32)), };
  GpuShareConn *conn;
  gint sv[2];

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  fail_unless (fcntl (sv[0], F_SETFL, O_NONBLOCK) == 0);
  conn = gpushare_conn_new (sv[0], context, on_message, on_closed, &seen);
  close (sv[1]);

  msg->type = GPUSHARE_MSG_EOS;
  fail_if (gpushare_conn_send (conn, msg, NULL, 0, NULL));
  fail_unless (gpushare_conn_is_closed (conn));
  iterate_until_closed (context, &seen);
  fail_unless_equals_int (seen.types->len, 0);
  fail_unless_equals_int (seen.closed_code, GPUSHARE_CONN_ERROR_HANGUP);

  gpushare_conn_unref (conn);
  g_array_unref (seen.types);
  g_free (msg);
  g_main_context_unref (context);
}

GST_END_TEST;

static Suite *
gpushare_conn_suite (void)
{
  Suite *s = suite_create ("gpushare_conn");
  TCase *tc = tcase_create ("conn");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_goodbye_before_hangup_wins_over_send_error);
  tcase_add_test (tc, test_send_error_without_reader_fails_at_once);
  return s;
}

GST_CHECK_MAIN (gpushare_conn);
