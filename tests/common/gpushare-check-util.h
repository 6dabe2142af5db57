/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What several gst-check programs need alike: the count of open
 * descriptors (every test that opens anything proves it closed it again),
 * private temporary directories, the files of the source tree, and child
 * processes that never outlive the test.  Failures are gst-check
 * assertions, so these run only inside a test.
 */

#ifndef __GPUSHARE_CHECK_UTIL_H__
#define __GPUSHARE_CHECK_UTIL_H__

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

/* Descriptors */

guint count_fds (void);
/* threads of this process whose name (/proc/self/task/TID/comm) is name */
guint count_threads (const gchar * name);
guint count_fds_settled (void);
guint wait_fd_count (guint expected, gint timeout_ms);
void dump_fds (void);
gboolean wait_pipe_hangup (gint read_fd, gint timeout_ms);

/* Sockets */

/* a Unix stream socket bound at path, listening with backlog */
gint listen_unix (const gchar * path, gint backlog);

/* A listening socket at path that never accepts, its backlog full: each
 * connection it queued is in held (n_held of them, the caller closes
 * them and listen_fd), and one more connect () would block. */
gint listen_full_backlog (const gchar * path, gint * held, guint max_held,
    guint * n_held);

/* Temporary directories */

gchar *make_tmpdir (const gchar * tmpl);
void remove_tree (const gchar * dir);

/* The source tree (GPUSHARE_SOURCE_ROOT, as the tests' environment sets
 * it) */

/* the text of a file, its path from the root */
gchar *read_source (const gchar * rel);
/* the .c and .h files of these folders (NULL-terminated), as paths from
 * the root; a folder that cannot be listed, or has none, fails the test */
GPtrArray *source_files (const gchar * const *dirs);

/* Memory */

/* kB of resident memory of this process; 0 under valgrind or
 * AddressSanitizer, which keep freed memory for themselves and so grow
 * whatever the program does */
guint rss_kb (void);
/* the first quark this process has not made (quarks are numbered from 1,
 * each with its string) */
GQuark quark_watermark (void);

/* Child processes */

void die_with_parent (gpointer user_data);
pid_t spawn_idle_child (void);
void kill_and_reap (pid_t pid);
void reap_clean_exit (pid_t pid);

G_END_DECLS

#endif /* __GPUSHARE_CHECK_UTIL_H__ */
