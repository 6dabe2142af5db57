/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who may connect, and what may be at the socket path: a consumer of
 * another uid is refused unless allowed-uids or allowed-gids name it, a
 * producer of another uid is refused by the consumer unless
 * allowed-producer-uids names it, the sink binds only a path that is free
 * or a stale socket, tenants share no slot memory, and a consumer cannot
 * write the slots it is given.
 *
 * The uid tests fork children that drop to uid 65534: they need root, and
 * say SKIP without it.  The fixture and the harness are those of every
 * element test (tests/common/gpushare-check-elements.c).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <gst/check/gstcheck.h>
#include <gst/app/app.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpushare-check-elements.h"
#include "gpushareconn.h"

/* ------------------------------------------------------------------------ */
/* 1. Another uid is refused */

#define FOREIGN_UID 65534

typedef struct
{
  gint stage;
  gint connect_errno;           /* 0: connected */
  gint n_fds;                   /* descriptors received */
  gint eof;
  guint32 len;                  /* bytes received, which follow */
} UidReport;

enum
{
  UID_OK,
  UID_NO_GO,
  UID_NO_SETUID,
  UID_NO_DIR,
};

/* a whole message at the start of buf?  (payload_len, little-endian, at
 * byte 12 of the frozen header) */
static gboolean
first_message_in (const guint8 * buf, guint32 len)
{
  guint32 payload;

  if (len < GPUSHARE_HEADER_SIZE)
    return FALSE;
  payload = buf[12] | (buf[13] << 8) | (buf[14] << 16) | ((guint32) buf[15]
      << 24);
  return len - GPUSHARE_HEADER_SIZE >= payload;
}

/* In a forked child, system calls only: receives from s into buf until
 * the peer hangs up (*eof) or, once a whole first message is in, stays
 * quiet for 500 ms; the fds that come with it are closed and counted into
 * *n_fds (if not NULL). */
static void
child_receive (gint s, guint8 * buf, gsize cap, guint32 * len, gint * n_fds,
    gint * eof)
{
  union
  {
    struct cmsghdr hdr;
    gchar b[CMSG_SPACE (sizeof (gint) * KERNEL_MAX_FDS)];
  }
  cmsg;
  struct pollfd pfd;

  while (*len < cap) {
    struct iovec iov;
    struct msghdr mh;
    struct cmsghdr *c;
    gssize n;

    pfd.fd = s;
    pfd.events = POLLIN;
    /* once a whole first message is here, a refused peer sees the end of
     * the stream at once; an admitted one waits for nothing more */
    if (poll (&pfd, 1, first_message_in (buf, *len) ? 500 : TIMEOUT_MS) != 1)
      break;
    memset (&mh, 0, sizeof (mh));
    iov.iov_base = buf + *len;
    iov.iov_len = cap - *len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cmsg.b;
    mh.msg_controllen = sizeof (cmsg.b);
    n = recvmsg (s, &mh, MSG_CMSG_CLOEXEC);
    for (c = CMSG_FIRSTHDR (&mh); n >= 0 && c; c = CMSG_NXTHDR (&mh, c)) {
      guint k, count;

      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        continue;
      count = (c->cmsg_len - CMSG_LEN (0)) / sizeof (gint);
      for (k = 0; k < count; k++) {
        gint fd;

        memcpy (&fd, CMSG_DATA (c) + k * sizeof (gint), sizeof (gint));
        close (fd);
        if (n_fds)
          (*n_fds)++;
      }
    }
    if (n <= 0) {
      *eof = 1;
      break;
    }
    *len += n;
  }
}

/* what the foreign client does past the ANNOUNCE: where accept is set,
 * sends it (made before the fork) and reads what follows; extra_prop is
 * set on the sink beside the allow property */
static struct
{
  const guint8 *accept;
  gsize accept_len;
  const gchar *extra_prop;
  const gchar *extra_value;
  /* once the sink's stats show the client in this state, gpu-uids=<1> */
  const gchar *untrust_at;
} foreign;

/* Runs in a child forked from a threaded process: system calls only, no
 * allocation, no locks. */
static void G_GNUC_NORETURN
foreign_uid_child (const struct sockaddr_un *addr, const gchar * dir,
    gint go_fd, gint report_fd)
{
  static guint8 buf[65536];
  UidReport r;
  struct pollfd pfd;
  gchar go;
  gint s;

  memset (&r, 0, sizeof (r));
  pfd.fd = go_fd;
  pfd.events = POLLIN;
  if (poll (&pfd, 1, 20000) != 1 || read (go_fd, &go, 1) != 1) {
    r.stage = UID_NO_GO;
    goto report;
  }
  if (setgroups (0, NULL) < 0 || setgid (FOREIGN_UID) < 0
      || setuid (FOREIGN_UID) < 0 || getuid () != FOREIGN_UID) {
    r.stage = UID_NO_SETUID;
    goto report;
  }
  if (access (dir, X_OK) < 0) {
    r.stage = UID_NO_DIR;
    goto report;
  }
  s = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect (s, (const struct sockaddr *) addr, sizeof (*addr)) < 0) {
    r.connect_errno = errno;
    goto report;
  }
  child_receive (s, buf, sizeof (buf), &r.len, &r.n_fds, &r.eof);
  if (foreign.accept && !r.eof
      && send (s, foreign.accept, foreign.accept_len, MSG_NOSIGNAL) ==
      (gssize) foreign.accept_len)
    child_receive (s, buf, sizeof (buf), &r.len, &r.n_fds, &r.eof);

report:
  if (write (report_fd, &r, sizeof (r)) == sizeof (r) && r.len > 0)
    while (write (report_fd, buf, r.len) < 0 && errno == EINTR);
  _exit (0);
}

/* Reads what a forked child writes to fd until it exits, and reaps it:
 * its report of report_size bytes into report, then the bytes it received
 * into bytes.  Closes fd. */
static void
read_child_report (gint fd, pid_t pid, gpointer report, gsize report_size,
    GByteArray * bytes)
{
  guint8 chunk[4096];

  g_byte_array_set_size (bytes, 0);
  for (;;) {
    struct pollfd pfd = {.fd = fd,.events = POLLIN };
    gssize n;

    fail_unless (poll (&pfd, 1, 3 * TIMEOUT_MS) == 1, "the child hangs");
    n = read (fd, chunk, sizeof (chunk));
    if (n < 0 && errno == EINTR)
      continue;
    fail_unless (n >= 0);
    if (n == 0)
      break;
    g_byte_array_append (bytes, chunk, n);
  }
  close (fd);
  reap_clean_exit (pid);
  fail_unless (bytes->len >= report_size);
  memcpy (report, bytes->data, report_size);
  g_byte_array_remove_range (bytes, 0, report_size);
}

/* waits until the sink's one client is in state, then trusts only uid 1
 * (and its own) with writable memory */
static void
untrust_at_state (GstElement * sink, const gchar * state)
{
  gint64 end = g_get_monotonic_time () + TIMEOUT_MS * (gint64) 1000;
  gboolean seen = FALSE;

  while (!seen && g_get_monotonic_time () < end) {
    GstStructure *st = get_stats (sink);
    const GValue *clients = gst_structure_get_value (st, "clients");

    seen = clients && gst_value_array_get_size (clients) == 1
        && g_strcmp0 (gst_structure_get_string (gst_value_get_structure
            (gst_value_array_get_value (clients, 0)), "state"), state) == 0;
    gst_structure_free (st);
    if (!seen)
      g_usleep (1000);
  }
  fail_unless (seen, "the client never was %s", state);
  gst_util_set_object_arg (G_OBJECT (sink), "gpu-uids", "<1>");
}

/* The message at byte at of what a child received: its header into hdr
 * and, where msg is not NULL, its payload parsed into msg.  Returns the
 * offset past it. */
static gsize
message_at (GByteArray * bytes, gsize at, GpuShareHeader * hdr,
    GpuShareMsg * msg)
{
  fail_unless (bytes->len > at, "no message at byte %" G_GSIZE_FORMAT, at);
  fail_unless_equals_int (gpushare_header_parse (bytes->data + at,
          bytes->len - at, hdr), GPUSHARE_PARSE_OK);
  if (msg)
    fail_unless_equals_int (gpushare_msg_parse (hdr,
            bytes->data + at + GPUSHARE_HEADER_SIZE, hdr->payload_len, msg),
        GPUSHARE_PARSE_OK);
  return at + GPUSHARE_HEADER_SIZE + hdr->payload_len;
}

/* an ACCEPT of the test build's host-test memory, made before a fork */
static GByteArray *
host_test_accept (GpuShareMsg * msg)
{
  make_accept (msg, 0);
  msg->u.accept.mem_type = GPUSHARE_MEM_HOST_TEST;
  return build (msg, 0);
}

/* Forks the child before the producer starts, then lets it connect. */
static gboolean
run_foreign_client (guint mode, const gchar * allow_prop,
    const gchar * allow_value, UidReport * report, GByteArray * bytes,
    ClientLog * log_out_removed, const gchar ** nick)
{
  gchar *path = socket_path ("uid.sock");
  struct sockaddr_un addr;
  GstElement *producer, *sink;
  gint go[2], rep[2];
  ClientLog log;
  gboolean usable;
  pid_t pid;

  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  fail_unless (pipe2 (go, O_CLOEXEC) == 0 && pipe2 (rep, O_CLOEXEC) == 0);

  pid = fork ();
  fail_unless (pid >= 0);
  if (pid == 0) {
    close (go[1]);
    close (rep[0]);
    foreign_uid_child (&addr, tmpdir, go[0], rep[1]);
  }
  close (go[0]);
  close (rep[1]);

  producer = producer_new (path, &sink);
  g_object_set (sink, "socket-mode", mode, NULL);
  if (allow_prop)
    gst_util_set_object_arg (G_OBJECT (sink), allow_prop, allow_value);
  if (foreign.extra_prop)
    gst_util_set_object_arg (G_OBJECT (sink), foreign.extra_prop,
        foreign.extra_value);
  client_log_init (&log, sink);
  producer_start (producer, sink);
  fail_unless (write (go[1], "g", 1) == 1);
  close (go[1]);
  if (foreign.untrust_at)
    untrust_at_state (sink, foreign.untrust_at);

  read_child_report (rep[0], pid, report, sizeof (*report), bytes);
  fail_unless_equals_int (bytes->len, report->len);
  usable = report->stage == UID_OK;

  *nick = NULL;
  if (usable && report->connect_errno == 0) {
    fail_unless (client_log_wait (&log, TRUE, 1),
        "no client-removed for the refused client");
    *nick = client_log_removed_nick (&log, 0);
    /* a refused peer never became a client: it has no id */
    if (g_str_equal (*nick, "not-authorized") && !foreign.untrust_at)
      fail_unless_equals_int (GPOINTER_TO_UINT (g_ptr_array_index
              (log.removed_ids, 0)), 0);
  }
  /* nobody else was ever let in */
  fail_unless_equals_int (log.connected, 0);
  fail_unless_equals_int (num_clients (sink), 0);
  assert_no_error (producer);
  gst_element_set_state (producer, GST_STATE_NULL);
  if (usable && report->connect_errno != 0)
    fail_unless_equals_int (client_log_n_removed (&log), 0);
  client_log_clear (&log, sink);
  gst_object_unref (producer);
  g_free (path);
  return usable;
}

static void
assert_refused (UidReport * report, GByteArray * bytes, GpuShareMsg * msg,
    const gchar * nick)
{
  GpuShareHeader hdr;

  fail_unless_equals_int (report->connect_errno, 0);
  fail_unless_equals_int (report->n_fds, 0);
  fail_unless (report->eof, "the refused client was not hung up on");
  fail_unless_equals_string (nick, "not-authorized");
  /* exactly one message: ERROR NOT_AUTHORIZED */
  fail_unless_equals_int (message_at (bytes, 0, &hdr, msg), bytes->len);
  fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ERROR);
  fail_unless_equals_int (hdr.n_fds, 0);
  fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_NOT_AUTHORIZED);
  /* who was refused, and what admits it */
  fail_unless (strstr (msg->u.error.text, "uid 65534") != NULL
      && strstr (msg->u.error.text, "allowed-uids") != NULL, "%s",
      msg->u.error.text);
}

GST_START_TEST (test_foreign_uid_refused)
{
  GByteArray *bytes = g_byte_array_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  const gchar *nick = NULL;
  UidReport report;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_uid_refused: needs root to run a client "
        "as uid %d\n", FOREIGN_UID);
    goto done;
  }
  /* the directory must not be what keeps the other uid out */
  fail_unless (chmod (tmpdir, 0755) == 0);

  /* owner-only socket: the kernel refuses the connect itself */
  if (!run_foreign_client (0600, NULL, NULL, &report, bytes, NULL, &nick)) {
    g_print ("SKIP test_foreign_uid_refused: cannot act as uid %d here "
        "(stage %d)\n", FOREIGN_UID, report.stage);
    goto done;
  }
  fail_unless_equals_int (report.connect_errno, EACCES);

  /* world-writable socket: SO_PEERCRED refuses it, before anything leaves */
  fail_unless (run_foreign_client (0666, NULL, NULL, &report, bytes, NULL,
          &nick));
  assert_refused (&report, bytes, msg, nick);
  /* a gid that is not the peer's lets nobody in */
  fail_unless (run_foreign_client (0666, "allowed-gids", "<12345>", &report,
          bytes, NULL, &nick));
  assert_refused (&report, bytes, msg, nick);

done:
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;

/* allowed-uids and allowed-gids let another uid in: it gets the ANNOUNCE,
 * and still no descriptor before it accepts */
GST_START_TEST (test_foreign_uid_allowed)
{
  static const gchar *const allow[][2] = {
    {"allowed-uids", "<65534>"},
    {"allowed-uids", "<1, 65534, 7>"},
    {"allowed-gids", "<65534>"},
  };
  GByteArray *bytes = g_byte_array_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GpuShareHeader hdr;
  const gchar *nick = NULL;
  UidReport report;
  guint i;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_uid_allowed: needs root to run a client "
        "as uid %d\n", FOREIGN_UID);
    goto done;
  }
  fail_unless (chmod (tmpdir, 0755) == 0);
  for (i = 0; i < G_N_ELEMENTS (allow); i++) {
    if (!run_foreign_client (0666, allow[i][0], allow[i][1], &report, bytes,
            NULL, &nick)) {
      g_print ("SKIP test_foreign_uid_allowed: cannot act as uid %d here "
          "(stage %d)\n", FOREIGN_UID, report.stage);
      goto done;
    }
    fail_unless_equals_int (report.connect_errno, 0);
    fail_unless_equals_int (report.n_fds, 0);
    /* it let the handshake time out and left: not a refusal */
    fail_unless_equals_string (nick, "hangup");
    message_at (bytes, 0, &hdr, msg);
    fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ANNOUNCE);
  }

done:
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;

/* gpu-uids and gpu-gids: memory that a consumer which maps it could write
 * (GPU memory; here the test build's host-test kind, made such by
 * GPUSHARE_TEST_HOST_WRITABLE below) is offered to a consumer of another
 * uid only where they name it.  One they do not name is not offered it
 * (its ANNOUNCE says so), and an ACCEPT that takes it all the same is
 * refused, with no descriptor sent. */
GST_START_TEST (test_foreign_uid_gpu_withheld)
{
  static const struct
  {
    const gchar *prop, *value;
    gboolean withheld;
  } cases[] = {
    {NULL, NULL, FALSE},
    {"gpu-uids", "<1, 7>", TRUE},
    {"gpu-uids", "<1, 65534>", FALSE},
    {"gpu-gids", "<65534>", FALSE},
    {"gpu-gids", "<1>", TRUE},
  };
  GByteArray *bytes = g_byte_array_new (), *accept;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  const gchar *nick = NULL;
  GpuShareHeader hdr;
  UidReport report;
  gsize next;
  guint i;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_uid_gpu_withheld: needs root to run a "
        "client as uid %d\n", FOREIGN_UID);
    goto done;
  }
  fail_unless (chmod (tmpdir, 0755) == 0);
  accept = host_test_accept (msg);
  foreign.accept = accept->data;
  foreign.accept_len = accept->len;
  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    foreign.extra_prop = cases[i].prop;
    foreign.extra_value = cases[i].value;
    if (!run_foreign_client (0666, "allowed-uids", "<65534>", &report, bytes,
            NULL, &nick)) {
      g_print ("SKIP test_foreign_uid_gpu_withheld: cannot act as uid %d "
          "here (stage %d)\n", FOREIGN_UID, report.stage);
      break;
    }
    fail_unless_equals_int (report.connect_errno, 0);
    /* its ANNOUNCE: what it is offered, and whether less than others */
    next = message_at (bytes, 0, &hdr, msg);
    fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ANNOUNCE);
    fail_unless (msg->u.announce.mem_types & GPUSHARE_MEM_SYSTEM);
    fail_unless_equals_int (!!(msg->u.announce.mem_types &
            GPUSHARE_MEM_HOST_TEST), !cases[i].withheld);
    fail_unless_equals_int (!!(msg->u.announce.flags &
            GPUSHARE_ANNOUNCE_FLAG_WITHHELD), cases[i].withheld);
    /* the reply to its ACCEPT of that memory, past the PINGs */
    do {
      next = message_at (bytes, next, &hdr, msg);
    } while (hdr.type == GPUSHARE_MSG_PING);
    if (cases[i].withheld) {
      fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ERROR);
      fail_unless_equals_int (msg->u.error.code, GPUSHARE_ERR_UNSUPPORTED);
      fail_unless_equals_int (report.n_fds, 0);
      fail_unless (report.eof, "case %u: not hung up on", i);
      fail_unless_equals_string (nick, "unsupported");
    } else {
      fail_unless_equals_int (hdr.type, GPUSHARE_MSG_SLOTS);
      fail_unless (report.n_fds > 0);
      fail_unless_equals_string (nick, "hangup");
    }
  }
  g_byte_array_unref (accept);
  memset (&foreign, 0, sizeof (foreign));

done:
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;

/* gpu-uids set while consumers are there: one that has its ANNOUNCE but has
 * not chosen may no longer take writable memory, and one that took it is
 * dropped before any further ring goes to it */
GST_START_TEST (test_foreign_uid_gpu_untrusted_later)
{
  static const struct
  {
    const gchar *state;
    GpuShareMsgType reply;
    GpuShareErrorCode code;
    const gchar *nick;
  } cases[] = {
    {"announced", GPUSHARE_MSG_ERROR, GPUSHARE_ERR_UNSUPPORTED, "unsupported"},
    {"exported", GPUSHARE_MSG_SLOTS, GPUSHARE_ERR_NOT_AUTHORIZED,
        "not-authorized"},
  };
  GByteArray *bytes = g_byte_array_new (), *accept;
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  const gchar *nick = NULL;
  GpuShareHeader hdr;
  UidReport report;
  gboolean error_seen;
  gsize at;
  guint i;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_uid_gpu_untrusted_later: needs root to run "
        "a client as uid %d\n", FOREIGN_UID);
    goto done;
  }
  fail_unless (chmod (tmpdir, 0755) == 0);
  accept = host_test_accept (msg);
  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    memset (&foreign, 0, sizeof (foreign));
    foreign.accept = accept->data;
    foreign.accept_len = accept->len;
    foreign.untrust_at = cases[i].state;
    if (!run_foreign_client (0666, "allowed-uids", "<65534>", &report, bytes,
            NULL, &nick)) {
      g_print ("SKIP test_foreign_uid_gpu_untrusted_later: cannot act as "
          "uid %d here (stage %d)\n", FOREIGN_UID, report.stage);
      break;
    }
    /* offered it, at the start */
    at = message_at (bytes, 0, &hdr, msg);
    fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ANNOUNCE);
    fail_unless (msg->u.announce.mem_types & GPUSHARE_MEM_HOST_TEST);
    /* then: the first reply to its ACCEPT, past the PINGs, and an ERROR
     * of that code; no second SLOTS */
    error_seen = FALSE;
    while (at < bytes->len && !error_seen) {
      at = message_at (bytes, at, &hdr, msg);
      if (hdr.type == GPUSHARE_MSG_SLOTS)
        fail_unless_equals_int (cases[i].reply, GPUSHARE_MSG_SLOTS);
      if (hdr.type == GPUSHARE_MSG_ERROR) {
        fail_unless_equals_int (msg->u.error.code, cases[i].code);
        error_seen = TRUE;
      }
    }
    fail_unless (error_seen, "case %s: no ERROR", cases[i].state);
    fail_unless (report.eof, "case %s: not hung up on", cases[i].state);
    fail_unless_equals_string (nick, cases[i].nick);
    /* the SLOTS of the second case went before gpu-uids changed */
    fail_unless_equals_int (report.n_fds > 0,
        cases[i].reply == GPUSHARE_MSG_SLOTS);
  }
  g_byte_array_unref (accept);
  memset (&foreign, 0, sizeof (foreign));

done:
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 2. Who the producer is: in a directory anyone may write to, another uid
 * binds the socket path first.  The consumer reads SO_PEERCRED before a
 * byte and takes frames only from its own uid, root or
 * allowed-producer-uids. */

typedef struct
{
  gint stage;
  gint err;                     /* errno of the failing step */
  gint accepted;                /* a consumer connected */
  gint eof;                     /* and hung up */
  guint32 len;                  /* bytes it sent, which follow */
} ProducerReport;

/* Runs in a child forked from a threaded process: system calls only. */
static void G_GNUC_NORETURN
foreign_producer_child (const struct sockaddr_un *addr,
    const guint8 * announce, gsize announce_len, gint ready_fd, gint report_fd)
{
  static guint8 buf[65536];
  ProducerReport r;
  struct pollfd pfd;
  gint l, c = -1;

  memset (&r, 0, sizeof (r));
  if (setgroups (0, NULL) < 0 || setgid (FOREIGN_UID) < 0
      || setuid (FOREIGN_UID) < 0 || getuid () != FOREIGN_UID) {
    r.stage = UID_NO_SETUID;
    goto report;
  }
  l = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind (l, (const struct sockaddr *) addr, sizeof (*addr)) < 0
      || listen (l, 4) < 0) {
    r.stage = UID_NO_DIR;
    r.err = errno;
    goto report;
  }
  if (write (ready_fd, "r", 1) != 1)
    goto report;
  pfd.fd = l;
  pfd.events = POLLIN;
  if (poll (&pfd, 1, TIMEOUT_MS) != 1)
    goto report;
  c = accept4 (l, NULL, NULL, SOCK_CLOEXEC);
  if (c < 0)
    goto report;
  r.accepted = 1;
  /* a hostile producer speaks first: a well-formed ANNOUNCE */
  if (send (c, announce, announce_len, MSG_NOSIGNAL) < 0)
    r.err = errno;
  child_receive (c, buf, sizeof (buf), &r.len, NULL, &r.eof);

report:
  if (write (report_fd, &r, sizeof (r)) == sizeof (r) && r.len > 0)
    while (write (report_fd, buf, r.len) < 0 && errno == EINTR);
  _exit (0);
}

/* Starts a consumer against a producer of another uid in a sticky,
 * world-writable directory; FALSE (a SKIP) where that cannot be done. */
static gboolean
run_foreign_producer (const gchar * allow, ProducerReport * report,
    GByteArray * bytes, GstElement ** pipeline_out)
{
  gchar *dir = g_build_filename (tmpdir, "shared", NULL);
  gchar *path = g_build_filename (dir, "cam.sock", NULL);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  struct sockaddr_un addr;
  GstElement *pipeline = NULL;
  GByteArray *announce;
  gint ready[2], rep[2];
  gboolean usable = FALSE;
  gchar r;
  pid_t pid;

  fail_unless (chmod (tmpdir, 0755) == 0);
  fail_unless (mkdir (dir, 0777) == 0 && chmod (dir, 01777) == 0);
  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  make_announce (msg, HP_N_SLOTS, HP_SLOT_SIZE);
  announce = build (msg, 0);
  fail_unless (pipe2 (ready, O_CLOEXEC) == 0 && pipe2 (rep, O_CLOEXEC) == 0);

  pid = fork ();
  fail_unless (pid >= 0);
  if (pid == 0) {
    close (ready[0]);
    close (rep[0]);
    foreign_producer_child (&addr, announce->data, announce->len, ready[1],
        rep[1]);
  }
  close (ready[1]);
  close (rep[1]);

  if (read (ready[0], &r, 1) == 1) {
    usable = TRUE;
    pipeline = launch ("gpusharesrc name=src connection-timeout=%d ! "
        "fakesink sync=false", TIMEOUT_MS);
    g_object_set (child (pipeline, "src"), "socket-path", path, NULL);
    if (allow)
      gst_util_set_object_arg (G_OBJECT (child (pipeline, "src")),
          "allowed-producer-uids", allow);
    fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
  }
  close (ready[0]);

  read_child_report (rep[0], pid, report, sizeof (*report), bytes);
  fail_unless_equals_int (bytes->len, report->len);
  if (!usable)
    g_print ("SKIP foreign producer: cannot act as uid %d here (stage %d: "
        "%s)\n", FOREIGN_UID, report->stage, g_strerror (report->err));

  *pipeline_out = pipeline;
  unlink (path);
  rmdir (dir);
  g_byte_array_unref (announce);
  g_free (msg);
  g_free (path);
  g_free (dir);
  return usable;
}

GST_START_TEST (test_foreign_producer)
{
  gboolean allowed = __i__ == 1;
  GByteArray *bytes = g_byte_array_new ();
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GstElement *pipeline = NULL;
  ProducerReport report;
  GpuShareHeader hdr;

  if (geteuid () != 0) {
    g_print ("SKIP test_foreign_producer: needs root to run a producer as "
        "uid %d\n", FOREIGN_UID);
    goto done;
  }
  if (!run_foreign_producer (allowed ? "<1, 65534>" : NULL, &report, bytes,
          &pipeline))
    goto done;
  fail_unless (report.accepted, "the consumer never connected");

  if (!allowed) {
    /* refused before a byte was read: not one byte back, hung up on */
    assert_error (pipeline, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_NOT_AUTHORIZED);
    fail_unless_equals_int (report.len, 0);
    fail_unless (report.eof, "the foreign producer was not hung up on");
  } else {
    /* trusted: the handshake goes on, the consumer ACCEPTs */
    fail_unless (bytes->len > 0, "the consumer answered nothing");
    fail_unless_equals_int (gpushare_header_parse (bytes->data, bytes->len,
            &hdr), GPUSHARE_PARSE_OK);
    fail_unless_equals_int (hdr.type, GPUSHARE_MSG_ACCEPT);
  }
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);

done:
  if (pipeline)
    gst_object_unref (pipeline);
  g_byte_array_unref (bytes);
  g_free (msg);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 3. What may be at the socket path */

static void
assert_sink_refuses (const gchar * path)
{
  GstElement *sink;
  GstElement *p = producer_new (path, &sink);

  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  assert_error (p, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ_WRITE);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
}

/* socket-mode as users write it (gst-launch-1.0 reads the text the same
 * way): 0666 and "0666" are modes; 666 is the decimal number 666, not a
 * mode, and is refused with the reason and the form that was meant,
 * rather than dropped for the default with a GLib warning */
GST_START_TEST (test_socket_mode_forms)
{
  static const gchar *const good[] = { "0666", "0660", "0600" };
  gchar *path = socket_path ("mode.sock");
  GstElement *p, *sink;
  GstMessage *msg;
  GError *err = NULL;
  struct stat st;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (good); i++) {
    p = producer_new (path, &sink);
    gst_util_set_object_arg (G_OBJECT (sink), "socket-mode", good[i]);
    fail_if (gst_element_set_state (p, GST_STATE_PAUSED) ==
        GST_STATE_CHANGE_FAILURE);
    fail_unless (stat (path, &st) == 0);
    fail_unless_equals_int (st.st_mode & 0777, strtoul (good[i], NULL, 8));
    gst_element_set_state (p, GST_STATE_NULL);
    gst_object_unref (p);
  }

  p = producer_new (path, &sink);
  gst_util_set_object_arg (G_OBJECT (sink), "socket-mode", "666");
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = pop_message (p, GST_MESSAGE_ERROR, TIMEOUT_MS);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_SETTINGS), "%s", err->message);
  fail_unless (strstr (err->message, "socket-mode=0666") != NULL, "%s",
      err->message);
  fail_if (g_file_test (path, G_FILE_TEST_EXISTS), "a socket was made");
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_path_symlink)
{
  gchar *link = socket_path ("link.sock");
  gchar *nowhere = socket_path ("nowhere.sock");
  gchar *file = socket_path ("precious");
  gchar *contents = NULL;
  struct stat st;

  /* a dangling link: binding through it would create its target */
  fail_unless (symlink (nowhere, link) == 0);
  assert_sink_refuses (link);
  fail_if (g_file_test (nowhere, G_FILE_TEST_EXISTS),
      "the sink created a socket through a symlink");
  fail_unless (lstat (link, &st) == 0 && S_ISLNK (st.st_mode));
  unlink (link);

  /* a link to a file: neither is touched */
  fail_unless (g_file_set_contents (file, "precious", -1, NULL));
  fail_unless (symlink (file, link) == 0);
  assert_sink_refuses (link);
  fail_unless (lstat (link, &st) == 0 && S_ISLNK (st.st_mode));
  fail_unless (g_file_get_contents (file, &contents, NULL, NULL));
  fail_unless_equals_string (contents, "precious");

  g_free (contents);
  g_free (file);
  g_free (nowhere);
  g_free (link);
}

GST_END_TEST;

GST_START_TEST (test_path_regular_file)
{
  gchar *path = socket_path ("file.sock");
  gchar *contents = NULL;

  fail_unless (g_file_set_contents (path, "precious", -1, NULL));
  assert_sink_refuses (path);
  fail_unless (g_file_get_contents (path, &contents, NULL, NULL));
  fail_unless_equals_string (contents, "precious");
  g_free (contents);
  g_free (path);
}

GST_END_TEST;

static gchar *
path_of_length (gsize len)
{
  GString *s = g_string_new (tmpdir);

  g_string_append_c (s, '/');
  fail_unless (s->len < len, "the temporary directory is too deep");
  while (s->len < len)
    g_string_append_c (s, 'p');
  return g_string_free (s, FALSE);
}

GST_START_TEST (test_path_too_long)
{
  /* sun_path holds 108 bytes with the NUL: 107 fit, 108 do not */
  gchar *too_long = path_of_length (108);
  gchar *longest = path_of_length (107);
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GstElement *producer, *sink;
  RawPeer raw;

  assert_sink_refuses (too_long);
  /* and no cut-off name was bound instead */
  fail_if (g_file_test (longest, G_FILE_TEST_EXISTS));

  producer = producer_new (longest, &sink);
  producer_start (producer, sink);
  raw_init (&raw, raw_connect (longest));
  {
    GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);

    raw_expect (&raw, GPUSHARE_MSG_ANNOUNCE, msg, NULL, NULL);
    g_free (msg);
  }
  raw_clear (&raw);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (announce);
  g_free (longest);
  g_free (too_long);
}

GST_END_TEST;

GST_START_TEST (test_path_stale_socket)
{
  gchar *path = socket_path ("stale.sock");
  struct sockaddr_un addr;
  GstElement *producer, *sink;
  Consumer *c;
  struct stat st;
  gint fd;

  /* what a producer that crashed leaves behind */
  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  fail_unless (fd >= 0);
  fail_unless (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (fd, 1) == 0);
  close (fd);
  fail_unless (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode));

  producer = producer_new (path, &sink);
  producer_start (producer, sink);
  c = consumer_new (path, FALSE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 3), "no frames through a replaced socket");
  assert_no_error (producer);
  assert_no_error (c->pipeline);
  consumer_free (c);
  gst_element_set_state (producer, GST_STATE_NULL);
  gst_object_unref (producer);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_path_in_use)
{
  Consumer *other;
  struct stat st;
  Scene s;

  scene_start (&s, TRUE);
  /* a second producer on a path where a live one listens is refused */
  assert_sink_refuses (s.path);
  /* and left the first one's socket in place */
  fail_unless (lstat (s.path, &st) == 0 && S_ISSOCK (st.st_mode));
  assert_consumer_alive (s.consumer);
  other = consumer_new (s.path, FALSE);
  consumer_start (other);
  fail_unless (consumer_wait (other, 3),
      "the first producer no longer takes consumers");
  fail_unless_equals_int (num_clients (s.sink), 2);
  assert_no_error (s.producer);
  consumer_free (other);
  scene_stop (&s);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* 4. Tenants, and slots a consumer cannot write */

/* Several producers for several tenants: each its own socket and its own
 * allocation (no slot in common: the memfds a consumer of one gets are
 * none of the other's), and one producer going away leaves the other's
 * consumers streaming. */
GST_START_TEST (test_tenants)
{
  gchar *path[2] = { socket_path ("tenant-a.sock"),
    socket_path ("tenant-b.sock")
  };
  GstElement *producer[2], *sink[2];
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GArray *seen[2];
  gint fds[GPUSHARE_MAX_FDS];
  Consumer *c[2];
  guint k, i, j, n_fds;

  for (k = 0; k < 2; k++) {
    producer[k] = producer_new (path[k], &sink[k]);
    producer_start (producer[k], sink[k]);
  }
  /* what a consumer of each tenant is given: the slots' memfds */
  for (k = 0; k < 2; k++) {
    GpuShareAnnounce announce;
    RawPeer raw;

    seen[k] = g_array_new (FALSE, FALSE, sizeof (guint64));
    raw_init (&raw, raw_connect (path[k]));
    raw_expect (&raw, GPUSHARE_MSG_ANNOUNCE, msg, NULL, NULL);
    announce = msg->u.announce;
    make_accept (msg, announce.instance);
    fail_unless (raw_send_msg (&raw, msg, NULL, 0));
    n_fds = 0;
    raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
    /* the slots, and the ring's side memory (minor 10), not shared either */
    fail_unless (msg->u.slots.side_pages > 0);
    fail_unless_equals_int (n_fds, announce.layout.n_slots + 1);
    for (i = 0; i < n_fds; i++) {
      struct stat st;
      guint64 id;

      fail_unless (fstat (fds[i], &st) == 0);
      id = ((guint64) st.st_dev << 40) ^ (guint64) st.st_ino;
      g_array_append_val (seen[k], id);
    }
    gpushare_close_fds (fds, n_fds);
    raw_clear (&raw);
  }
  for (i = 0; i < seen[0]->len; i++)
    for (j = 0; j < seen[1]->len; j++)
      fail_if (g_array_index (seen[0], guint64, i) ==
          g_array_index (seen[1], guint64, j), "tenants share slot memory");

  /* each tenant's consumer streams; one producer stops, the other's
   * consumer streams on */
  for (k = 0; k < 2; k++) {
    c[k] = consumer_new (path[k], FALSE);
    consumer_start (c[k]);
    fail_unless (consumer_wait (c[k], 3), "tenant %u's consumer gets "
        "nothing", k);
  }
  fail_unless_equals_int (gst_element_set_state (producer[1],
          GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  assert_consumer_alive (c[0]);
  assert_no_error (producer[0]);

  for (k = 0; k < 2; k++) {
    consumer_free (c[k]);
    fail_unless_equals_int (gst_element_set_state (producer[k],
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref (producer[k]);
    g_array_unref (seen[k]);
    g_free (path[k]);
  }
  g_free (msg);
}

GST_END_TEST;

/* Slots a consumer cannot write.  Guards the bug where consumers got
 * writable memfds (O_RDWR, no write seal): one admitted through
 * allowed-uids scribbled over the frames another consumer received, and
 * kept its writable mapping after its GOODBYE. */

#define N_RO_FRAMES 60

/* a pattern that is the same in every frame (SMPTE bars carry noise) */
#define RO_PATTERN "checkers-4"

/* The checksum of every frame of RO_PATTERN, from a pipeline of its own:
 * not from the producer's slots, which are what is under test. */
static gchar *
pattern_checksum (void)
{
  GstElement *p = launch ("videotestsrc num-buffers=1 pattern=" RO_PATTERN
      " ! " LIVE_CAPS_STR " ! appsink name=out");
  GstSample *sample;
  GstMapInfo map;
  gchar *sum;

  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  sample = gst_app_sink_try_pull_sample (GST_APP_SINK (child (p, "out")),
      TIMEOUT_MS * GST_MSECOND);
  fail_unless (sample != NULL);
  fail_unless (gst_buffer_map (gst_sample_get_buffer (sample), &map,
          GST_MAP_READ));
  fail_unless (map.size >= FRAME_SIZE);
  sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, map.data, FRAME_SIZE);
  gst_buffer_unmap (gst_sample_get_buffer (sample), &map);
  gst_sample_unref (sample);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (p);
  return sum;
}

/* Every way the holder of a slot fd might write the slot.  Each one that
 * works is named in how; the writable mappings it got go to maps. */
static void
try_to_write_slot (gint fd, gsize size, guint slot, GString * how,
    GPtrArray * maps)
{
  static const guint8 junk[16] = { 0x5a, 0x5a, 0x5a, 0x5a, };
  gchar *proc = g_strdup_printf ("/proc/self/fd/%d", fd);
  gpointer p;
  gint rw;

  if (pwrite (fd, junk, sizeof (junk), 0) >= 0)
    g_string_append_printf (how, " slot %u: pwrite;", slot);
  p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p != MAP_FAILED) {
    g_string_append_printf (how, " slot %u: a writable shared map;", slot);
    g_ptr_array_add (maps, p);
  }
  /* reading is what a consumer is for */
  p = mmap (NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  fail_if (p == MAP_FAILED, "slot %u cannot be mapped for reading: %s",
      slot, g_strerror (errno));
  if (mprotect (p, size, PROT_READ | PROT_WRITE) == 0) {
    g_string_append_printf (how, " slot %u: mprotect of a read-only map;",
        slot);
    g_ptr_array_add (maps, p);
  } else {
    munmap (p, size);
  }
  if (ftruncate (fd, 0) == 0 || ftruncate (fd, size * 2) == 0)
    g_string_append_printf (how, " slot %u: ftruncate;", slot);

  /* the file may be opened again for writing through /proc: whatever the
   * fd's own mode, the memory itself must refuse writers */
  rw = open (proc, O_RDWR | O_CLOEXEC);
  if (rw >= 0) {
    if (pwrite (rw, junk, sizeof (junk), 0) >= 0)
      g_string_append_printf (how, " slot %u: pwrite after an O_RDWR "
          "reopen;", slot);
    p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
    if (p != MAP_FAILED) {
      g_string_append_printf (how, " slot %u: a writable shared map after "
          "an O_RDWR reopen;", slot);
      g_ptr_array_add (maps, p);
    }
    if (fallocate (rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
            size) == 0)
      g_string_append_printf (how, " slot %u: a hole punched after an "
          "O_RDWR reopen;", slot);
    if (ftruncate (rw, 0) == 0)
      g_string_append_printf (how, " slot %u: ftruncate after an O_RDWR "
          "reopen;", slot);
    close (rw);
  }
  g_free (proc);
}

GST_START_TEST (test_slots_read_only)
{
  GpuShareAnnounce *announce = g_new0 (GpuShareAnnounce, 1);
  GpuShareMsg *msg = g_new0 (GpuShareMsg, 1);
  GPtrArray *maps = g_ptr_array_new ();
  GString *how = g_string_new (NULL);
  gint fds[GPUSHARE_MAX_FDS];
  gchar *want = pattern_checksum ();
  GValue item = G_VALUE_INIT;
  GstIterator *it;
  guint n_fds = 0, n_bad = 0, i, k;
  guint64 rendered;
  gsize slot_size;
  Consumer *c;
  RawPeer raw;
  Scene s;

  scene_start (&s, FALSE);
  it = gst_bin_iterate_sources (GST_BIN (s.producer));
  fail_unless_equals_int (gst_iterator_next (it, &item), GST_ITERATOR_OK);
  gst_util_set_object_arg (g_value_get_object (&item), "pattern", RO_PATTERN);
  g_value_unset (&item);
  gst_iterator_free (it);
  /* frames made before the change are out of the way once a few more
   * were rendered: a consumer gets only frames rendered after it joined */
  rendered = stat_u64 (s.sink, "frames-rendered");
  fail_unless (wait_stat_u64_at_least (s.sink, "frames-rendered",
          rendered + 3) >= rendered + 3);
  /* a reader that keeps each frame a while, as a slow viewer does */
  c = consumer_new (s.path, TRUE);
  consumer_start (c);
  fail_unless (consumer_wait (c, 1), "the consumer gets nothing");

  /* a consumer that takes the slots and tries to write them */
  scene_raw_client (&s, &raw, announce);
  make_accept (msg, announce->instance);
  fail_unless (raw_send_msg (&raw, msg, NULL, 0));
  raw_expect (&raw, GPUSHARE_MSG_SLOTS, msg, fds, &n_fds);
  fail_unless_equals_int (msg->u.slots.mem_type, GPUSHARE_MEM_SYSTEM);
  /* and the ring's side memory, last, which is read in place too */
  fail_unless (msg->u.slots.side_pages > 0);
  fail_unless_equals_int (n_fds, announce->layout.n_slots + 1);
  slot_size = msg->u.slots.slot_size;
  for (i = 0; i < n_fds; i++)
    try_to_write_slot (fds[i], i < announce->layout.n_slots ? slot_size :
        (gsize) announce->layout.n_slots * msg->u.slots.side_pages *
        GPUSHARE_SIDE_PAGE, i, how, maps);

  /* while anything writable is scribbled on, the reader beside it must
   * get exactly what the producer wrote */
  for (i = 0; i < N_RO_FRAMES; i++) {
    GstBuffer *buf;
    GstMapInfo map;
    gchar *sum;

    buf = g_async_queue_timeout_pop (c->buffers, TIMEOUT_MS * 1000);
    fail_unless (buf != NULL, "frame %u never arrived", i);
    /* the reader holds this frame: nobody may change it now */
    for (k = 0; k < maps->len; k++)
      memset (g_ptr_array_index (maps, k), 0x5a, slot_size);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    fail_unless (map.size >= FRAME_SIZE);
    sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, map.data, FRAME_SIZE);
    if (!g_str_equal (sum, want))
      n_bad++;
    g_free (sum);
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
  }
  for (k = 0; k < maps->len; k++)
    munmap (g_ptr_array_index (maps, k), slot_size);
  gpushare_close_fds (fds, n_fds);
  raw_clear (&raw);

  fail_unless (how->len == 0 && n_bad == 0, "a consumer could write the "
      "slots:%s and %u of %u frames another consumer got differ from what "
      "the producer wrote", how->str, n_bad, N_RO_FRAMES);
  assert_no_error (c->pipeline);
  assert_no_error (s.producer);

  consumer_free (c);
  scene_stop (&s);
  g_free (want);
  g_ptr_array_unref (maps);
  g_string_free (how, TRUE);
  g_free (msg);
  g_free (announce);
}

GST_END_TEST;

static Suite *
gpushare_access_suite (void)
{
  Suite *s = suite_create ("gpushare_access");
  TCase *tc_uid = tcase_create ("uid");
  TCase *tc_producer_uid = tcase_create ("producer-uid");
  TCase *tc_path = tcase_create ("path");
  TCase *tc_tenants = tcase_create ("tenants");

  suite_add_tcase (s, tc_uid);
  tcase_add_checked_fixture (tc_uid, elements_setup, elements_teardown);
  tcase_add_test (tc_uid, test_foreign_uid_refused);
  tcase_add_test (tc_uid, test_foreign_uid_allowed);
  tcase_add_test (tc_uid, test_foreign_uid_gpu_withheld);
  tcase_add_test (tc_uid, test_foreign_uid_gpu_untrusted_later);
  suite_add_tcase (s, tc_producer_uid);
  tcase_add_checked_fixture (tc_producer_uid, elements_setup,
      elements_teardown);
  tcase_add_loop_test (tc_producer_uid, test_foreign_producer, 0, 2);
  suite_add_tcase (s, tc_path);
  tcase_add_checked_fixture (tc_path, elements_setup, elements_teardown);
  tcase_add_test (tc_path, test_socket_mode_forms);
  tcase_add_test (tc_path, test_path_symlink);
  tcase_add_test (tc_path, test_path_regular_file);
  tcase_add_test (tc_path, test_path_too_long);
  tcase_add_test (tc_path, test_path_stale_socket);
  tcase_add_test (tc_path, test_path_in_use);
  suite_add_tcase (s, tc_tenants);
  tcase_add_checked_fixture (tc_tenants, elements_setup, elements_teardown);
  tcase_add_test (tc_tenants, test_tenants);
  tcase_add_test (tc_tenants, test_slots_read_only);
  return s;
}

/* the test plugin's host-test memory is withheld as GPU memory is
 * (test_foreign_uid_gpu_withheld): set before anything loads the plugin */
static void __attribute__((constructor))
    host_test_writable (void)
{
  g_setenv ("GPUSHARE_TEST_HOST_WRITABLE", "1", TRUE);
}

GST_CHECK_MAIN (gpushare_access);
