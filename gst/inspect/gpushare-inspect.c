/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-inspect: which producers run, and who consumes them, live.
 *
 *   gpushare-inspect [--once] [--interval MS] [--timeout MS] PATH...
 *
 * PATH is a producer's socket, or a directory: every socket in it.  For
 * each producer it connects as an observer (docs/protocol.md, OBSERVE):
 * admitted by the same credential rules as a consumer, it takes no frame
 * and holds no slot, and counts neither against max-clients nor towards
 * min-consumers.  It prints the producer's announce (name, process, caps,
 * ring, memory types offered) once, then its status every interval: its
 * counters and settings, and each consumer (pid, uid, memory type and
 * reason, frames sent, released and dropped, slots held).  --once prints
 * one status of each producer and exits.  It sends a PING when it sent
 * nothing for an interval: a producer whose heartbeat-interval is under a
 * third of --interval drops it, so give such a producer a shorter one.
 *
 * Exit status: 0 when every producer answered (--once) or until the end,
 * 1 when one could not be reached or spoke an older protocol.
 */

#include <errno.h>
#include <glib.h>
#include <glib-unix.h>
#include <gst/gst.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushareconn.h"
#include "gpushareproto.h"

typedef struct
{
  gchar *path;
  GpuShareConn *conn;
  gboolean announced;
  gboolean answered;            /* a STATUS came */
  gboolean done;                /* closed, or --once answered */
  gboolean failed;
} Producer;

static gboolean opt_once;
static gchar **opt_allow_uids;
static GArray *allowed_uids;
static gint opt_interval = 1000;
static gint opt_timeout = 5000;
static GMainLoop *loop;
static GPtrArray *producers;

static void
maybe_quit (void)
{
  guint i;

  for (i = 0; i < producers->len; i++)
    if (!((Producer *) g_ptr_array_index (producers, i))->done)
      return;
  g_main_loop_quit (loop);
}

static void
finish (Producer * p, gboolean failed)
{
  if (p->done)
    return;
  p->done = TRUE;
  p->failed |= failed;
  if (p->conn) {
    gpushare_conn_send_goodbye (p->conn, GPUSHARE_ERR_SHUTDOWN, 0, 0);
    gpushare_conn_flush (p->conn, 100);
    gpushare_conn_close (p->conn);
  }
  maybe_quit ();
}

/* Text a peer chose (names, caps, reasons) as the operator's terminal may
 * show it: control characters, escape sequences among them, as \xNN or
 * \uNNNN.  The codec let through only UTF-8 without NUL.  Freed with
 * the keep array. */
static const gchar *
safe (GPtrArray * keep, const gchar * text)
{
  GString *out = g_string_new (NULL);
  const gchar *c;

  for (c = text; *c; c = g_utf8_next_char (c)) {
    gunichar u = g_utf8_get_char (c);

    if (u < 0x20 || (u >= 0x7f && u < 0xa0))
      g_string_append_printf (out, u < 0x80 ? "\\x%02x" : "\\u%04x", u);
    else if (u == '\\')
      g_string_append (out, "\\\\");
    else
      g_string_append_unichar (out, u);
  }
  g_ptr_array_add (keep, out->str);
  return g_string_free (out, FALSE);
}

static void
print_mask (const gchar * what, guint32 mask, gboolean sync)
{
  guint bit;

  g_print ("  %s:", what);
  for (bit = 1; bit && bit <= mask; bit <<= 1) {
    if (!(mask & bit))
      continue;
    if (sync)
      g_print (" %s", bit == GPUSHARE_SYNC_HOST ? "host" :
          bit == GPUSHARE_SYNC_SEMAPHORE ? "semaphore" :
          bit == GPUSHARE_SYNC_EVENT ? "event" : "unknown");
    else
      g_print (" %s", gpushare_mem_type_to_string (bit));
  }
  g_print ("\n");
}

static void
print_announce (Producer * p, const GpuShareAnnounce * a)
{
  GPtrArray *keep = g_ptr_array_new_with_free_func (g_free);
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;

  gpushare_conn_get_peer (p->conn, &pid, &uid, &gid);
  g_print ("producer %s\n", p->path);
  g_print ("  name: %s, pid %d, uid %u (from the socket), protocol 1.%u\n",
      a->name_len ? safe (keep, a->name) : "(none)", (gint) pid,
      (guint) uid, a->schema_minor);
  g_print ("  live: %s\n", (a->flags & GPUSHARE_STREAM_FLAG_LIVE) ? "yes" :
      "no");
  g_print ("  caps: %s\n", safe (keep, a->layout.caps));
  g_ptr_array_unref (keep);
  g_print ("  ring: %u slots of %" G_GUINT64_FORMAT " bytes, frames of %"
      G_GUINT64_FORMAT " bytes, epoch %" G_GUINT64_FORMAT "\n",
      a->layout.n_slots, a->layout.slot_size, a->layout.frame_size,
      a->layout.epoch);
  print_mask ("memory offered", a->mem_types, FALSE);
  if (a->mem_types & ~GPUSHARE_MEM_SYSTEM)
    print_mask ("sync modes offered", a->device.sync_modes, TRUE);
}

static const gchar *
str_field (GPtrArray * keep, const GstStructure * s, const gchar * name)
{
  const gchar *v = gst_structure_get_string (s, name);

  return v ? safe (keep, v) : "?";
}

static guint64
u64_field (const GstStructure * s, const gchar * name)
{
  guint64 v = 0;
  guint u = 0;

  if (gst_structure_get_uint64 (s, name, &v))
    return v;
  if (gst_structure_get_uint (s, name, &u))
    return u;
  return 0;
}

static void
print_status (Producer * p, const gchar * text)
{
  GstStructure *s = gst_structure_from_string (text, NULL);
  GPtrArray *keep;
  const GValue *clients;
  gboolean live = FALSE;
  guint64 ring_size;
  gchar *ring;
  gint num = 0;
  guint i, n;

  if (!s) {
    g_print ("status of %s: not readable\n", p->path);
    return;
  }
  keep = g_ptr_array_new_with_free_func (g_free);
  gst_structure_get_int (s, "num-clients", &num);
  g_print ("status of %s\n", p->path);
  ring_size = u64_field (s, "ring-size");
  ring = ring_size ? g_strdup_printf ("%" G_GUINT64_FORMAT, ring_size) :
      g_strdup_printf ("auto (%" G_GUINT64_FORMAT " slots)",
      u64_field (s, "ring-slots"));
  g_print ("  policy %s, ring-size %s, min-consumers %"
      G_GUINT64_FORMAT ", max-clients %" G_GUINT64_FORMAT ", live %s\n",
      str_field (keep, s, "policy"), ring,
      u64_field (s, "min-consumers"), u64_field (s, "max-clients"),
      !gst_structure_get_boolean (s, "live", &live) ? "?" : live ? "yes" :
      "no");
  g_free (ring);
  g_print ("  frames rendered %" G_GUINT64_FORMAT ", dropped %"
      G_GUINT64_FORMAT ", in place %" G_GUINT64_FORMAT ", copied %"
      G_GUINT64_FORMAT ", to GPU %" G_GUINT64_FORMAT "; epoch %"
      G_GUINT64_FORMAT ", free slots %" G_GUINT64_FORMAT ", slots "
      "quarantined %" G_GUINT64_FORMAT "\n", u64_field (s, "frames-rendered"),
      u64_field (s, "frames-dropped"), u64_field (s, "frames-in-place"),
      u64_field (s, "frames-copied"), u64_field (s, "frames-to-gpu"),
      u64_field (s, "epoch"), u64_field (s, "free-slots"),
      u64_field (s, "slots-quarantined"));
  g_print ("  GPU memory: %s\n", str_field (keep, s, "gpu-memory"));
  g_print ("  consumers: %d, observers: %" G_GUINT64_FORMAT "\n", num,
      u64_field (s, "observers"));
  clients = gst_structure_get_value (s, "clients");
  n = clients && GST_VALUE_HOLDS_ARRAY (clients) ?
      gst_value_array_get_size (clients) : 0;
  for (i = 0; i < n; i++) {
    const GValue *v = gst_value_array_get_value (clients, i);
    const GstStructure *c;
    gboolean stalled = FALSE;
    gint pid = 0;

    if (!GST_VALUE_HOLDS_STRUCTURE (v))
      continue;
    c = gst_value_get_structure (v);
    gst_structure_get_int (c, "pid", &pid);
    gst_structure_get_boolean (c, "stalled", &stalled);
    /* share 0: a lossless producer, where nobody is skipped */
    g_print ("  consumer %" G_GUINT64_FORMAT ": pid %d, uid %"
        G_GUINT64_FORMAT ", name %s, state %s, memory %s, sync %s, frames "
        "sent %" G_GUINT64_FORMAT ", released %" G_GUINT64_FORMAT
        ", dropped %" G_GUINT64_FORMAT ", slots held %" G_GUINT64_FORMAT
        ", share %" G_GUINT64_FORMAT "%s\n    memory reason: %s\n",
        u64_field (c, "id"), pid,
        u64_field (c, "uid"), str_field (keep, c, "name"), str_field (keep, c,
            "state"), str_field (keep, c, "memory-type"), str_field (keep, c,
            "sync-mode"), u64_field (c, "frames-sent"), u64_field (c,
            "frames-released"), u64_field (c, "frames-dropped"), u64_field (c,
            "slots-held"), u64_field (c, "share"),
        stalled ? ", STALLED: skipped, it holds its " "whole share" : "",
        str_field (keep, c, "memory-reason"));
  }
  if (gst_structure_has_field (s, "clients-omitted"))
    g_print ("  (the consumers' details did not fit in one status)\n");
  gst_structure_free (s);
  g_ptr_array_unref (keep);
}

static void
observe (Producer * p, const GpuShareAnnounce * a)
{
  GpuShareObserve *obs;

  print_announce (p, a);
  p->announced = TRUE;
  if (a->schema_minor < GPUSHARE_MINOR_OBSERVE) {
    g_print ("  (protocol 1.%u has no observer role: no status)\n",
        a->schema_minor);
    finish (p, TRUE);
    return;
  }
  obs = g_new0 (GpuShareObserve, 1);
  obs->schema_major = GPUSHARE_VERSION_MAJOR;
  obs->schema_minor = GPUSHARE_VERSION_MINOR;
  obs->interval_ms = opt_interval;
  obs->pid = getpid ();
  obs->name_len = strlen ("gpushare-inspect");
  memcpy (obs->name, "gpushare-inspect", obs->name_len);
  if (!gpushare_conn_send_observe (p->conn, obs))
    finish (p, TRUE);
  g_free (obs);
}

static void
on_message (GpuShareConn * conn, const GpuShareMsg * msg, gint * fds,
    guint n_fds, gpointer user_data)
{
  Producer *p = user_data;

  gpushare_close_fds (fds, n_fds);
  if (p->done)
    return;
  switch (msg->type) {
    case GPUSHARE_MSG_ANNOUNCE:
      if (!p->announced)
        observe (p, &msg->u.announce);
      break;
    case GPUSHARE_MSG_CAPS:{
      GPtrArray *keep = g_ptr_array_new_with_free_func (g_free);

      g_print ("caps of %s: %s\n", p->path, safe (keep,
              msg->u.caps.layout.caps));
      g_ptr_array_unref (keep);
      break;
    }
    case GPUSHARE_MSG_STATUS:
      print_status (p, msg->u.status.text);
      p->answered = TRUE;
      if (opt_once)
        finish (p, FALSE);
      break;
    case GPUSHARE_MSG_EOS:
      g_print ("end of the stream of %s\n", p->path);
      break;
    case GPUSHARE_MSG_ERROR:{
      GPtrArray *keep = g_ptr_array_new_with_free_func (g_free);

      g_printerr ("%s: the producer refused: %s\n", p->path, safe (keep,
              msg->u.error.text));
      g_ptr_array_unref (keep);
      finish (p, TRUE);
      break;
    }
    case GPUSHARE_MSG_GOODBYE:
      g_print ("%s: the producer stopped\n", p->path);
      finish (p, FALSE);
      break;
    default:
      break;
  }
}

static void
on_closed (GpuShareConn * conn, const GError * error, gpointer user_data)
{
  Producer *p = user_data;

  if (!p->done)
    g_printerr ("%s: connection closed: %s\n", p->path,
        error ? error->message : "by the producer");
  finish (p, !p->answered);
}

static gboolean
on_timeout (gpointer user_data)
{
  guint i;

  for (i = 0; i < producers->len; i++) {
    Producer *p = g_ptr_array_index (producers, i);

    if (!p->done && !p->answered) {
      g_printerr ("%s: no status within %d ms\n", p->path, opt_timeout);
      finish (p, TRUE);
    }
  }
  return G_SOURCE_REMOVE;
}

static gboolean
on_signal (gpointer user_data)
{
  guint i;

  for (i = 0; i < producers->len; i++)
    finish (g_ptr_array_index (producers, i), FALSE);
  return G_SOURCE_REMOVE;
}

/* Is the process listening at path one whose words we print: our own
 * uid, root, or one of --allow-uid?  As gpusharesrc checks its producer
 * (allowed-producer-uids), before a byte is read: whoever binds a socket
 * path in a directory others may write to would otherwise speak to the
 * operator's terminal. */
static gboolean
listener_trusted (const gchar * path, gint fd)
{
  pid_t pid;
  uid_t uid;
  guint i;

  if (!gpushare_socket_get_peer (fd, &pid, &uid, NULL)) {
    g_printerr ("%s: the listener's credentials cannot be read: %s\n", path,
        g_strerror (errno));
    return FALSE;
  }
  if (uid == getuid () || uid == 0)
    return TRUE;
  for (i = 0; allowed_uids && i < allowed_uids->len; i++)
    if (g_array_index (allowed_uids, guint, i) == uid)
      return TRUE;
  g_printerr ("%s: the process listening there (pid %d) runs as uid %u, "
      "not this user's, nor root: not trusted (--allow-uid %u trusts it)\n",
      path, (gint) pid, (guint) uid, (guint) uid);
  return FALSE;
}

static void
add_producer (const gchar * path)
{
  Producer *p = g_new0 (Producer, 1);
  GError *error = NULL;
  gint fd;

  p->path = g_strdup (path);
  g_ptr_array_add (producers, p);
  fd = gpushare_connect_path (path, &error);
  if (fd < 0) {
    g_printerr ("%s: %s\n", path, error->message);
    g_clear_error (&error);
    p->done = p->failed = TRUE;
    return;
  }
  if (!listener_trusted (path, fd)) {
    close (fd);
    p->done = p->failed = TRUE;
    return;
  }
  p->conn = gpushare_conn_new (fd, g_main_context_default (), on_message,
      on_closed, p);
  /* a PING when nothing was sent for an interval, and the producer lost
   * after three without a STATUS or a PING from it */
  gpushare_conn_set_heartbeat (p->conn, opt_interval);
  gpushare_conn_start (p->conn);
}

/* a directory: its sockets, in name order */
static void
add_path (const gchar * path)
{
  struct stat st;
  GPtrArray *names;
  const gchar *name;
  GDir *dir;
  guint i;

  if (stat (path, &st) != 0 || !S_ISDIR (st.st_mode)) {
    add_producer (path);
    return;
  }
  dir = g_dir_open (path, 0, NULL);
  if (!dir) {
    g_printerr ("%s: cannot read the directory\n", path);
    return;
  }
  names = g_ptr_array_new_with_free_func (g_free);
  while ((name = g_dir_read_name (dir))) {
    gchar *full = g_build_filename (path, name, NULL);

    if (stat (full, &st) == 0 && S_ISSOCK (st.st_mode))
      g_ptr_array_add (names, full);
    else
      g_free (full);
  }
  g_dir_close (dir);
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
  for (i = 0; i < names->len; i++)
    add_producer (g_ptr_array_index (names, i));
  g_ptr_array_unref (names);
}

int
main (int argc, char **argv)
{
  GOptionEntry entries[] = {
    {"once", 0, 0, G_OPTION_ARG_NONE, &opt_once,
        "Print one status of each producer and exit", NULL},
    {"interval", 0, 0, G_OPTION_ARG_INT, &opt_interval,
          "Milliseconds between two statuses (100 .. 60000, default 1000)",
        "MS"},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &opt_timeout,
          "Milliseconds to wait for a producer's first status (default 5000)",
        "MS"},
    {"allow-uid", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_allow_uids,
        "A uid whose producers may be inspected besides this user's and "
          "root's (repeatable)", "UID"},
    {NULL}
  };
  GOptionContext *ctx;
  GError *error = NULL;
  gboolean failed = FALSE;
  guint i;

  setlocale (LC_ALL, "");
  ctx = g_option_context_new ("PATH... - producers of gpushare and their "
      "consumers");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc < 2) {
    g_printerr ("%s\n", error ? error->message :
        "name a producer's socket, or a directory of them");
    g_clear_error (&error);
    g_option_context_free (ctx);
    return 2;
  }
  g_option_context_free (ctx);
  if (opt_interval < GPUSHARE_MIN_OBSERVE_INTERVAL
      || opt_interval > GPUSHARE_MAX_OBSERVE_INTERVAL) {
    g_printerr ("--interval must be %d to %d ms\n",
        GPUSHARE_MIN_OBSERVE_INTERVAL, GPUSHARE_MAX_OBSERVE_INTERVAL);
    return 2;
  }
  allowed_uids = g_array_new (FALSE, FALSE, sizeof (guint));
  for (i = 0; opt_allow_uids && opt_allow_uids[i]; i++) {
    guint64 v;

    if (!g_ascii_string_to_unsigned (opt_allow_uids[i], 10, 0, G_MAXUINT32,
            &v, NULL)) {
      g_printerr ("--allow-uid takes a number, not %s\n", opt_allow_uids[i]);
      return 2;
    }
    g_array_append_vals (allowed_uids, &(guint) {
        (guint) v}
        , 1);
  }
  gst_init (NULL, NULL);

  loop = g_main_loop_new (NULL, FALSE);
  producers = g_ptr_array_new ();
  for (i = 1; i < (guint) argc; i++)
    add_path (argv[i]);
  if (producers->len == 0) {
    g_printerr ("no producer socket found\n");
    return 1;
  }
  g_timeout_add (opt_timeout, on_timeout, NULL);
  g_unix_signal_add (SIGINT, on_signal, NULL);
  g_unix_signal_add (SIGTERM, on_signal, NULL);
  {
    gboolean all_done = TRUE;

    for (i = 0; i < producers->len; i++)
      all_done &= ((Producer *) g_ptr_array_index (producers, i))->done;
    if (!all_done)
      g_main_loop_run (loop);
  }
  for (i = 0; i < producers->len; i++) {
    Producer *p = g_ptr_array_index (producers, i);

    failed |= p->failed;
    g_clear_pointer (&p->conn, gpushare_conn_unref);
    g_free (p->path);
    g_free (p);
  }
  g_ptr_array_unref (producers);
  g_main_loop_unref (loop);
  return failed ? 1 : 0;
}
