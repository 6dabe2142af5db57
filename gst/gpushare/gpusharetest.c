/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpusharetest.h"

/* the installed plugin must not carry the crash points (gpusharetest.h) */
#ifndef GPUSHARE_TEST_HOOKS
#error "gpusharetest.c belongs to the test build (GPUSHARE_TEST_HOOKS)"
#endif

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static gchar *die_side, *die_step;
static gint die_after = 1;
static gint reached;

static void
parse_once (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    const gchar *spec = g_getenv ("GPUSHARE_TEST_DIE_AT");

    if (spec && *spec) {
      gchar **parts = g_strsplit (spec, ":", 3);

      if (parts[0] && parts[1]) {
        die_side = g_strdup (parts[0]);
        die_step = g_strdup (parts[1]);
        if (parts[2])
          die_after = MAX (1, atoi (parts[2]));
      }
      g_strfreev (parts);
    }
    g_once_init_leave (&once, 1);
  }
}

void
gpushare_test_point (const gchar * side, const gchar * step)
{
  parse_once ();
  if (!die_side || strcmp (side, die_side) != 0 || strcmp (step, die_step))
    return;
  if (g_atomic_int_add (&reached, 1) + 1 == die_after)
    raise (SIGKILL);
}

/* "<side>:<step>[:<n>]" in the variable named, read now: whether it names
 * that step, and its n (NULL: none; a copy to free) */
static gboolean
spec_names (const gchar * variable, const gchar * side, const gchar * step,
    gchar ** n)
{
  const gchar *spec = g_getenv (variable);
  gchar **parts;
  gboolean match;

  *n = NULL;
  if (!spec || !*spec)
    return FALSE;
  parts = g_strsplit (spec, ":", 3);
  match = parts[0] && parts[1] && strcmp (side, parts[0]) == 0
      && strcmp (step, parts[1]) == 0;
  if (match)
    *n = g_strdup (parts[2]);
  g_strfreev (parts);
  return match;
}

/* read at each slow step (one a ring mapped, not a frame): a test may set
 * it after others ran in its process */
void
gpushare_test_slow (const gchar * side, const gchar * step)
{
  gchar *ms;

  if (spec_names ("GPUSHARE_TEST_SLOW_AT", side, step, &ms) && ms)
    g_usleep ((gulong) MAX (0, atoi (ms)) * 1000);
  g_free (ms);
}

gboolean
gpushare_test_fails (const gchar * side, const gchar * step)
{
  static gint failed;
  gboolean fails = FALSE;
  gchar *n;

  if (spec_names ("GPUSHARE_TEST_FAIL_AT", side, step, &n))
    fails = !n || g_atomic_int_add (&failed, 1) < atoi (n);
  g_free (n);
  return fails;
}
