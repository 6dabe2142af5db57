/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "gpushare-check-util.h"

#include <gst/check/gstcheck.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Descriptors */

guint
count_fds (void)
{
  GDir *dir = g_dir_open ("/proc/self/fd", 0, NULL);
  guint n = 0;

  fail_unless (dir != NULL);
  /* the GDir's own descriptor is counted every time alike */
  while (g_dir_read_name (dir))
    n++;
  g_dir_close (dir);
  return n;
}

/* what the open descriptors are, by kind ("socket", "/dev/nvidia0"...),
 * with how many of each */
static GHashTable *
fd_kinds (void)
{
  GHashTable *kinds = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  GDir *dir = g_dir_open ("/proc/self/fd", 0, NULL);
  const gchar *name;

  while (dir && (name = g_dir_read_name (dir))) {
    gchar *link = g_build_filename ("/proc/self/fd", name, NULL);
    gchar *target = g_file_read_link (link, NULL);
    gchar *kind = g_strndup (target ? target : "?",
        target ? strcspn (target, ":") : 1);

    g_hash_table_insert (kinds, kind, GUINT_TO_POINTER (GPOINTER_TO_UINT
            (g_hash_table_lookup (kinds, kind)) + 1));
    g_free (target);
    g_free (link);
  }
  if (dir)
    g_dir_close (dir);
  return kinds;
}

/* the kinds at the last settled count, to say what grew */
static GHashTable *fd_kinds_settled;

/* Descriptors are closed on other threads just after what the test waits
 * for: another thread may drop the last reference to a buffer pool or a
 * bus (each holds a GstPoll socket pair) just after a pipeline reached
 * NULL, and GLib closes a child watch's pidfd on its worker thread just
 * after it reported the exit.  Wait until the count holds still for 50 ms
 * (5 s at most). */
guint
count_fds_settled (void)
{
  gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  guint n = count_fds (), same = 0;

  while (same < 5 && g_get_monotonic_time () < deadline) {
    guint m;

    g_usleep (10 * 1000);
    m = count_fds ();
    same = m == n ? same + 1 : 0;
    n = m;
  }
  g_clear_pointer (&fd_kinds_settled, g_hash_table_unref);
  fd_kinds_settled = fd_kinds ();
  return n;
}

/* how the open descriptors differ, by kind, from the last settled count */
void
dump_fds (void)
{
  GHashTable *now = fd_kinds ();
  GHashTableIter it;
  gpointer key, value;

  g_hash_table_iter_init (&it, now);
  while (g_hash_table_iter_next (&it, &key, &value)) {
    guint before = fd_kinds_settled ? GPOINTER_TO_UINT (g_hash_table_lookup
        (fd_kinds_settled, key)) : 0;

    if (before != GPOINTER_TO_UINT (value))
      g_printerr ("  %s: %u, were %u\n", (const gchar *) key,
          GPOINTER_TO_UINT (value), before);
  }
  g_hash_table_unref (now);
}

/* A peer that drops a client closes its descriptors from its own thread,
 * and GLib closes the pidfds of exited children from its worker thread,
 * which a loaded machine may run late: give them the time that takes.
 * What differs at the deadline is printed, by kind. */
guint
wait_fd_count (guint expected, gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  guint n;

  while ((n = count_fds ()) != expected && g_get_monotonic_time () < deadline)
    g_usleep (5000);
  if (n != expected) {
    g_printerr ("%u descriptors open, expected %u:\n", n, expected);
    dump_fds ();
  }
  return n;
}

/* TRUE once every write end of the pipe is closed, wherever it travelled */
gboolean
wait_pipe_hangup (gint read_fd, gint timeout_ms)
{
  struct pollfd pfd = {.fd = read_fd,.events = POLLIN };
  gint r;

  do
    r = poll (&pfd, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  return r == 1 && (pfd.revents & POLLHUP);
}

/* ------------------------------------------------------------------------ */
/* Temporary directories */

/* a private directory, tmpl as g_dir_make_tmp () takes it */
gchar *
make_tmpdir (const gchar * tmpl)
{
  GError *error = NULL;
  gchar *dir = g_dir_make_tmp (tmpl, &error);

  fail_unless (dir != NULL, "%s", error ? error->message : "?");
  return dir;
}

/* dir and everything in it.  A symbolic link is removed, never followed:
 * tests put links in their directories that point elsewhere. */
void
remove_tree (const gchar * dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *name;

  while (d && (name = g_dir_read_name (d))) {
    gchar *p = g_build_filename (dir, name, NULL);
    struct stat st;

    if (lstat (p, &st) == 0 && S_ISDIR (st.st_mode))
      remove_tree (p);
    else
      unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  rmdir (dir);
}

/* ------------------------------------------------------------------------ */
/* The source tree */

gchar *
read_source (const gchar * rel)
{
  const gchar *root = g_getenv ("GPUSHARE_SOURCE_ROOT");
  gchar *path, *text = NULL;
  GError *error = NULL;

  fail_unless (root != NULL, "GPUSHARE_SOURCE_ROOT is not set");
  path = g_build_filename (root, rel, NULL);
  fail_unless (g_file_get_contents (path, &text, NULL, &error), "%s: %s",
      path, error ? error->message : "?");
  g_free (path);
  return text;
}

GPtrArray *
source_files (const gchar * const *dirs)
{
  const gchar *root = g_getenv ("GPUSHARE_SOURCE_ROOT");
  GPtrArray *files = g_ptr_array_new_with_free_func (g_free);
  guint i;

  fail_unless (root != NULL, "GPUSHARE_SOURCE_ROOT is not set");
  for (i = 0; dirs[i]; i++) {
    gchar *path = g_build_filename (root, dirs[i], NULL);
    GDir *dir = g_dir_open (path, 0, NULL);
    const gchar *name;
    guint before = files->len;

    fail_unless (dir != NULL, "cannot list %s", path);
    while ((name = g_dir_read_name (dir)))
      if (g_str_has_suffix (name, ".c") || g_str_has_suffix (name, ".h"))
        g_ptr_array_add (files, g_build_filename (dirs[i], name, NULL));
    g_dir_close (dir);
    g_free (path);
    fail_unless (files->len > before, "no sources in %s", dirs[i]);
  }
  return files;
}

/* ------------------------------------------------------------------------ */
/* Child processes */

/* A GSpawnChildSetupFunc, run between fork and exec: a test that fails
 * (exits) must not leave a child waiting for a peer. */
void
die_with_parent (gpointer user_data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* a child that lives until it is killed */
pid_t
spawn_idle_child (void)
{
  pid_t pid = fork ();

  fail_unless (pid >= 0);
  if (pid == 0) {
    for (;;)
      pause ();
  }
  return pid;
}

void
kill_and_reap (pid_t pid)
{
  gint status;

  fail_unless_equals_int (kill (pid, SIGKILL), 0);
  fail_unless_equals_int (waitpid (pid, &status, 0), pid);
}

/* kB of resident memory of this process; 0 under valgrind or
 * AddressSanitizer, which keep freed memory for themselves and so grow
 * whatever the program does */
guint
rss_kb (void)
{
  gchar *status = NULL, *line;
  guint kb = 0;

#ifdef __SANITIZE_ADDRESS__
  /* AddressSanitizer keeps freed memory in quarantine, as valgrind does */
  return 0;
#endif
  if (g_getenv ("GPUSHARE_UNDER_VALGRIND"))
    return 0;
  fail_unless (g_file_get_contents ("/proc/self/status", &status, NULL, NULL));
  line = strstr (status, "VmRSS:");
  fail_unless (line != NULL);
  kb = strtoul (line + 6, NULL, 10);
  g_free (status);
  return kb;
}

GQuark
quark_watermark (void)
{
  /* not G_GNUC_CONST's g_quark_to_string () itself: its answers change */
  const gchar *(*volatile to_string) (GQuark) = g_quark_to_string;
  GQuark q = 1;

  while (to_string (q) != NULL)
    q++;
  return q;
}

/* waits for a forked child, which must exit with status 0 */
void
reap_clean_exit (pid_t pid)
{
  gint status;

  fail_unless (waitpid (pid, &status, 0) == pid);
  fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0);
}

gint
listen_unix (const gchar * path, gint backlog)
{
  struct sockaddr_un addr;
  gint fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  fail_unless (fd >= 0);
  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  fail_unless (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (fd, backlog) == 0);
  return fd;
}

gint
listen_full_backlog (const gchar * path, gint * held, guint max_held,
    guint * n_held)
{
  struct sockaddr_un addr;
  gint fd = listen_unix (path, 0);

  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  /* a non-blocking connect to a full backlog fails with EAGAIN */
  for (*n_held = 0; *n_held < max_held; (*n_held)++) {
    gint c = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    fail_unless (c >= 0);
    if (connect (c, (struct sockaddr *) &addr, sizeof (addr)) != 0) {
      fail_unless_equals_int (errno, EAGAIN);
      close (c);
      return fd;
    }
    held[*n_held] = c;
  }
  fail ("the backlog took %u connections and was not full", max_held);
  return fd;
}

guint
count_threads (const gchar * name)
{
  GDir *dir = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *tid;
  guint n = 0;

  fail_unless (dir != NULL);
  while ((tid = g_dir_read_name (dir))) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
    gchar *comm = NULL;

    if (g_file_get_contents (path, &comm, NULL, NULL)
        && g_str_equal (g_strstrip (comm), name))
      n++;
    g_free (comm);
    g_free (path);
  }
  g_dir_close (dir);
  return n;
}
