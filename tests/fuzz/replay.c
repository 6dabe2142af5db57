/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Runs a fuzz target (the codec's, fuzz_proto.c, or an element's,
 * fuzz_src.c and fuzz_sink.c) over a committed corpus, without a fuzzing
 * engine: built by the ordinary compiler wherever tests are, once per
 * target (replay_proto, replay_src, replay_sink), and run by meson test in
 * the cpu suite, so that every input the fuzzer ever kept (and every crash
 * it ever found) is checked again on every build.
 *
 *   replay_TARGET DIR|FILE...
 *
 * Every regular file of each DIR (names starting with '.' skipped) and
 * every FILE is one input.  Fails if an input crashes the target or if
 * there was no input at all, so that a moved corpus cannot pass unseen.
 */

#include <stdint.h>
#include <glib.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

#include <signal.h>
#include <string.h>
#include <unistd.h>

/* the input being run, for the crash handler */
static const gchar *current = "";

static void
write_str (const gchar * s)
{
  gsize len = strlen (s);

  while (len > 0) {
    gssize n = write (STDERR_FILENO, s, len);

    if (n <= 0)
      return;
    s += n;
    len -= n;
  }
}

/* says which input crashed, then crashes as it would have (only
 * async-signal-safe calls here) */
static void
on_crash (int sig)
{
  write_str (g_get_prgname ());
  write_str (": crashed on ");
  write_str (current);
  write_str ("\n");
  signal (sig, SIG_DFL);
  raise (sig);
}

static gboolean
replay_file (const gchar * path)
{
  g_autoptr (GError) error = NULL;
  g_autofree gchar *data = NULL;
  gsize len;

  if (!g_file_get_contents (path, &data, &len, &error)) {
    g_printerr ("%s: %s\n", g_get_prgname (), error->message);
    return FALSE;
  }
  current = path;
  LLVMFuzzerTestOneInput ((const uint8_t *) data, len);
  current = "";
  return TRUE;
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar * const *) a, *(const gchar * const *) b);
}

/* every input of dir, in name order so that runs are alike */
static gboolean
replay_dir (const gchar * dir, guint * n_inputs)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  GDir *d;
  const gchar *name;
  guint i;

  d = g_dir_open (dir, 0, &error);
  if (!d) {
    g_printerr ("%s: %s\n", g_get_prgname (), error->message);
    return FALSE;
  }
  while ((name = g_dir_read_name (d)) != NULL) {
    if (name[0] != '.')
      g_ptr_array_add (names, g_strdup (name));
  }
  g_dir_close (d);
  g_ptr_array_sort (names, compare_names);

  for (i = 0; i < names->len; i++) {
    g_autofree gchar *path = g_build_filename (dir, names->pdata[i], NULL);

    if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
      continue;
    if (!replay_file (path))
      return FALSE;
    (*n_inputs)++;
  }
  return TRUE;
}

int
main (int argc, char **argv)
{
  guint n_inputs = 0;
  gint i;

  {
    g_autofree gchar *name = g_path_get_basename (argv[0]);

    g_set_prgname (name);
  }
  if (argc < 2) {
    g_printerr ("usage: %s DIR|FILE...\n", argv[0]);
    return 2;
  }
  signal (SIGABRT, on_crash);
  signal (SIGSEGV, on_crash);
  signal (SIGBUS, on_crash);
  signal (SIGFPE, on_crash);
  signal (SIGTRAP, on_crash);

  for (i = 1; i < argc; i++) {
    if (g_file_test (argv[i], G_FILE_TEST_IS_DIR)) {
      if (!replay_dir (argv[i], &n_inputs))
        return 1;
    } else {
      if (!replay_file (argv[i]))
        return 1;
      n_inputs++;
    }
  }
  if (n_inputs == 0) {
    g_printerr ("%s: no input found\n", g_get_prgname ());
    return 1;
  }
  g_print ("%s: %u inputs, no crash\n", g_get_prgname (), n_inputs);
  return 0;
}
