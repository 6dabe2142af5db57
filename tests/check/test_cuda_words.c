/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The consumer's half of the ready words in host memory (SLOTS since
 * minor 12, gpusharecudasync.h): a page a producer sends, which needs no
 * driver to check, map and read.  The page is a peer's: what is not a
 * sealed, read-only memfd of the page's size is refused with an error,
 * and its fd closed, whatever it is; a word is read as the device reads
 * it (cyclic "at least"), and a wait that does not see its value gives up
 * at its deadline.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpusharecudasync.h"
#include "gpusharefd.h"
#include "gpushareproto.h"

/* a producer's page: the memfd and its writable mapping */
static gint
page_new (gsize size, gboolean sealed, guint64 ** words)
{
  gpointer data = NULL;
  gint fd = gpushare_memfd_new ("test-ready-words", size, TRUE, sealed,
      &data, "the ready words", GPUSHARE_CUDA_ERROR,
      GPUSHARE_CUDA_ERROR_CALL, NULL);

  fail_unless (fd >= 0);
  *words = data;
  return fd;
}

static gboolean
fd_closed (gint fd)
{
  return fcntl (fd, F_GETFD) < 0 && errno == EBADF;
}

/* the consumer's fd of the page, read-only as the producer exports it */
static gint
consumer_fd (gint fd)
{
  gint ro = gpushare_memfd_reopen_read_only (fd, "the ready words",
      GPUSHARE_CUDA_ERROR, GPUSHARE_CUDA_ERROR_CALL, NULL);

  fail_unless (ro >= 0);
  return ro;
}

GST_START_TEST (test_words_read)
{
  guint64 *page;
  gint fd = page_new (GPUSHARE_HOST_WORDS_SIZE, TRUE, &page), ro;
  GpuShareCudaWords *w;
  GError *error = NULL;
  gint64 spun = -1, start;

  ro = consumer_fd (fd);
  w = gpushare_cuda_words_open (ro, 8, &error);
  fail_unless (w != NULL, "%s", error ? error->message : "");
  fail_unless (fd_closed (ro));

  /* not there yet: looked at once, past its deadline */
  fail_if (gpushare_cuda_words_wait (w, 3, 1, 0, &spun));
  fail_unless_equals_int (spun, 0);
  /* the producer's value, and any later one */
  page[3] = 7;
  fail_unless (gpushare_cuda_words_wait (w, 3, 7, 0, &spun));
  fail_unless (gpushare_cuda_words_wait (w, 3, 6, 0, &spun));
  fail_if (gpushare_cuda_words_wait (w, 3, 8, 0, &spun));
  /* one slot's word says nothing of another's */
  fail_if (gpushare_cuda_words_wait (w, 2, 7, 0, &spun));
  /* a wait gives up at its deadline, and says how long it looked */
  start = g_get_monotonic_time ();
  fail_if (gpushare_cuda_words_wait (w, 3, 9, start + 2000, &spun));
  fail_unless (g_get_monotonic_time () - start >= 2000);
  fail_unless (spun >= 1000 && spun < 1000000, "spun %" G_GINT64_FORMAT, spun);
  /* the forced value satisfies every wait, as on the device; the cyclic
   * comparison: a value just past the word's is not there yet */
  page[3] = GPUSHARE_CUDA_SEM_FORCED;
  fail_unless (gpushare_cuda_words_wait (w, 3, 1, 0, &spun));
  fail_unless (gpushare_cuda_words_wait (w, 3, GPUSHARE_CUDA_SEM_MAX_VALUE,
          0, &spun));
  page[0] = G_GUINT64_CONSTANT (5);
  /* a value the device refuses (past 2^63 - 1) is never seen, though the
   * cyclic comparison alone would take G_MAXUINT64 for 5 - 6 */
  fail_if (gpushare_cuda_words_wait (w, 0, G_MAXUINT64, 0, &spun));
  fail_if (gpushare_cuda_words_wait (w, 3, GPUSHARE_CUDA_SEM_MAX_VALUE + 1,
          0, &spun));
  fail_if (gpushare_cuda_words_wait (w, 0, G_GUINT64_CONSTANT (6), 0, &spun));
  /* the last slot of the page's eight */
  page[7] = 1;
  fail_unless (gpushare_cuda_words_wait (w, 7, 1, 0, &spun));

  gpushare_cuda_words_free (w);
  munmap (page, GPUSHARE_HOST_WORDS_SIZE);
  close (fd);
}

GST_END_TEST;

/* what the consumer maps cannot be written through */
GST_START_TEST (test_words_read_only)
{
  guint64 *page;
  gint fd = page_new (GPUSHARE_HOST_WORDS_SIZE, TRUE, &page), ro;
  gpointer rw;

  ro = consumer_fd (fd);
  rw = mmap (NULL, GPUSHARE_HOST_WORDS_SIZE, PROT_READ | PROT_WRITE,
      MAP_SHARED, ro, 0);
  fail_unless (rw == MAP_FAILED);
  close (ro);
  munmap (page, GPUSHARE_HOST_WORDS_SIZE);
  close (fd);
}

GST_END_TEST;

static void
refused (gint fd, guint n_slots, const gchar * why)
{
  GError *error = NULL;
  GpuShareCudaWords *w = gpushare_cuda_words_open (fd, n_slots, &error);

  fail_unless (w == NULL, "%s: taken", why);
  fail_unless (error != NULL, "%s: no error", why);
  fail_unless (error->domain == GPUSHARE_CUDA_ERROR, "%s", why);
  GST_INFO ("%s: %s", why, error->message);
  g_clear_error (&error);
  if (fd >= 0)
    fail_unless (fd_closed (fd), "%s: fd left open", why);
}

GST_START_TEST (test_words_hostile)
{
  guint64 *page;
  gint fd, p[2];
  gchar path[] = "/tmp/gpushare-test-words-XXXXXX";

  /* writable by the consumer: not sealed against writes */
  fd = page_new (GPUSHARE_HOST_WORDS_SIZE, FALSE, &page);
  refused (dup (fd), 8, "a page not sealed against writes");
  munmap (page, GPUSHARE_HOST_WORDS_SIZE);
  close (fd);

  /* a page of another size, larger and smaller */
  fd = page_new (2 * GPUSHARE_HOST_WORDS_SIZE, TRUE, &page);
  refused (consumer_fd (fd), 8, "two pages");
  munmap (page, 2 * GPUSHARE_HOST_WORDS_SIZE);
  close (fd);
  fd = page_new (GPUSHARE_HOST_WORDS_SIZE / 2, TRUE, &page);
  refused (consumer_fd (fd), 8, "half a page");
  munmap (page, GPUSHARE_HOST_WORDS_SIZE / 2);
  close (fd);

  /* more slots than a ring has, or none */
  fd = page_new (GPUSHARE_HOST_WORDS_SIZE, TRUE, &page);
  refused (consumer_fd (fd), GPUSHARE_MAX_SLOTS + 1, "65 slots");
  refused (consumer_fd (fd), 0, "no slots");
  munmap (page, GPUSHARE_HOST_WORDS_SIZE);
  close (fd);

  /* not a memfd: a pipe, a file, no fd */
  fail_unless (pipe (p) == 0);
  close (p[1]);
  refused (p[0], 8, "a pipe");
  fd = g_mkstemp (path);
  fail_unless (fd >= 0);
  fail_unless (ftruncate (fd, GPUSHARE_HOST_WORDS_SIZE) == 0);
  unlink (path);
  refused (fd, 8, "a file");
  refused (-1, 8, "no fd");
}

GST_END_TEST;

static Suite *
cuda_words_suite (void)
{
  Suite *s = suite_create ("cuda_words");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_words_read);
  tcase_add_test (tc, test_words_read_only);
  tcase_add_test (tc, test_words_hostile);
  return s;
}

GST_CHECK_MAIN (cuda_words);
