/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The raw peer of the element fuzz targets: see fuzz_peer.h.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "fuzz_peer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

guint8
fuzz_byte (FuzzInput * in)
{
  return in->at < in->size ? in->data[in->at++] : 0;
}

guint32
fuzz_u32 (FuzzInput * in)
{
  guint32 v = 0;
  guint i;

  for (i = 0; i < 4; i++)
    v = (v << 8) | fuzz_byte (in);
  return v;
}

gsize
fuzz_bytes (FuzzInput * in, guint8 * buf, gsize max)
{
  gsize n = MIN (max, in->size - in->at);

  memcpy (buf, in->data + in->at, n);
  in->at += n;
  return n;
}

gboolean
fuzz_more (FuzzInput * in)
{
  return in->at < in->size;
}

void
fuzz_peer_init (FuzzPeer * p, gint fd)
{
  p->fd = fd;
  p->in_len = 0;
  p->broken = fd < 0;
}

void
fuzz_peer_clear (FuzzPeer * p)
{
  if (p->fd >= 0)
    close (p->fd);
  p->fd = -1;
  p->broken = TRUE;
}

gint
fuzz_listen (const gchar * path)
{
  struct sockaddr_un addr = { 0, };
  gint fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0)
    abort ();
  unlink (path);
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  if (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0
      || listen (fd, 4) < 0)
    abort ();
  return fd;
}

gint
fuzz_accept (gint listen_fd, gint timeout_ms)
{
  struct pollfd pfd = { listen_fd, POLLIN, 0 };

  if (poll (&pfd, 1, timeout_ms) != 1)
    return -1;
  return accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

gint
fuzz_connect (const gchar * path)
{
  struct sockaddr_un addr = { 0, };
  gint fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0)
    abort ();
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, path, sizeof (addr.sun_path));
  if (connect (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0) {
    close (fd);
    return -1;
  }
  return fd;
}

gboolean
fuzz_send (FuzzPeer * p, const guint8 * data, gsize len, const gint * fds,
    guint n_fds)
{
  union
  {
    struct cmsghdr align;
    gchar buf[CMSG_SPACE (sizeof (gint) * GPUSHARE_MAX_FDS)];
  }
  control;
  gsize sent = 0;

  if (p->broken)
    return FALSE;
  while (sent < len) {
    struct iovec iov = { (guint8 *) data + sent, len - sent };
    struct msghdr mh = { 0, };
    struct pollfd pfd = { p->fd, POLLOUT, 0 };
    gssize n;

    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (sent == 0 && n_fds > 0) {
      struct cmsghdr *cm;

      memset (&control, 0, sizeof (control));
      mh.msg_control = control.buf;
      mh.msg_controllen = CMSG_SPACE (sizeof (gint) * n_fds);
      cm = CMSG_FIRSTHDR (&mh);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN (sizeof (gint) * n_fds);
      memcpy (CMSG_DATA (cm), fds, sizeof (gint) * n_fds);
    }
    /* a peer that does not read for a second is as good as gone */
    if (poll (&pfd, 1, 1000) != 1) {
      p->broken = TRUE;
      return FALSE;
    }
    n = sendmsg (p->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n <= 0) {
      p->broken = TRUE;
      return FALSE;
    }
    sent += n;
  }
  return TRUE;
}

gboolean
fuzz_send_msg (FuzzPeer * p, const GpuShareMsg * msg, const gint * fds,
    guint n_fds)
{
  GByteArray *b = g_byte_array_new ();
  gboolean ok = gpushare_msg_build (msg, n_fds, b)
      && fuzz_send (p, b->data, b->len, fds, n_fds);

  g_byte_array_unref (b);
  return ok;
}

/* whole messages out of p->in, or more bytes read within timeout_ms */
gboolean
fuzz_recv (FuzzPeer * p, GpuShareMsg * msg, gint timeout_ms)
{
  gint64 until = g_get_monotonic_time () + timeout_ms * 1000ll;

  while (!p->broken) {
    GpuShareHeader hdr;
    GpuShareParseResult res = gpushare_header_parse (p->in, p->in_len, &hdr);
    union
    {
      struct cmsghdr align;
      gchar buf[CMSG_SPACE (sizeof (gint) * GPUSHARE_MAX_FDS)];
    }
    control;
    struct iovec iov;
    struct msghdr mh = { 0, };
    struct cmsghdr *cm;
    struct pollfd pfd = { p->fd, POLLIN, 0 };
    gint left;
    gssize n;

    if (res == GPUSHARE_PARSE_OK
        && p->in_len >= GPUSHARE_HEADER_SIZE + hdr.payload_len) {
      gsize whole = GPUSHARE_HEADER_SIZE + hdr.payload_len;

      res = gpushare_msg_parse (&hdr, p->in + GPUSHARE_HEADER_SIZE,
          hdr.payload_len, msg);
      memmove (p->in, p->in + whole, p->in_len - whole);
      p->in_len -= whole;
      if (res == GPUSHARE_PARSE_OK) {
        msg->type = hdr.type;
        return TRUE;
      }
      if (res == GPUSHARE_PARSE_UNKNOWN_TYPE)
        continue;
      p->broken = TRUE;
      return FALSE;
    }
    if (res != GPUSHARE_PARSE_OK && res != GPUSHARE_PARSE_NEED_MORE) {
      p->broken = TRUE;
      return FALSE;
    }
    left = (gint) ((until - g_get_monotonic_time ()) / 1000);
    if (poll (&pfd, 1, MAX (left, 0)) != 1)
      return FALSE;
    iov.iov_base = p->in + p->in_len;
    iov.iov_len = sizeof (p->in) - p->in_len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control.buf;
    mh.msg_controllen = sizeof (control.buf);
    n = recvmsg (p->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n <= 0) {
      p->broken = TRUE;
      return FALSE;
    }
    /* descriptors (the slots of a SLOTS) are not kept */
    for (cm = CMSG_FIRSTHDR (&mh); cm; cm = CMSG_NXTHDR (&mh, cm)) {
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
        guint i, k = (cm->cmsg_len - CMSG_LEN (0)) / sizeof (gint);

        for (i = 0; i < k; i++) {
          gint fd;

          memcpy (&fd, CMSG_DATA (cm) + i * sizeof (gint), sizeof (gint));
          close (fd);
        }
      }
    }
    p->in_len += n;
  }
  return FALSE;
}

gint
fuzz_memfd (gsize size)
{
  gint fd = memfd_create ("fuzz-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);

  if (fd < 0 || ftruncate (fd, size) < 0
      || fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
          F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
    abort ();
  return fd;
}

guint
fuzz_count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  guint n = 0;

  if (!d)
    return 0;
  while ((e = readdir (d)))
    n += e->d_name[0] != '.';
  closedir (d);
  return n - 1;                 /* the one of the listing */
}

void
fuzz_run_checking_fds (const gchar * who,
    void (*func) (const uint8_t * data, size_t size), const uint8_t * data,
    size_t size)
{
  guint before = fuzz_count_fds (), after;

  func (data, size);
  after = fuzz_count_fds ();
  if (after <= before)
    return;
  func (data, size);
  if (fuzz_count_fds () > after) {
    DIR *d = opendir ("/proc/self/fd");
    struct dirent *e;

    g_printerr ("%s: each run of the input leaves descriptors open:\n", who);
    while (d && (e = readdir (d))) {
      gchar *path = g_strdup_printf ("/proc/self/fd/%s", e->d_name);
      gchar *target = g_file_read_link (path, NULL);

      g_printerr ("  %s\n", target ? target : "?");
      g_free (target);
      g_free (path);
    }
    if (d)
      closedir (d);
    abort ();
  }
}

/* a fatal CRITICAL traps (G_BREAKPOINT); libFuzzer catches aborts */
static void
on_trap (int sig)
{
  abort ();
}

void
fuzz_gst_init (void)
{
  static gboolean done;

  if (done)
    return;
  done = TRUE;
  gst_init (NULL, NULL);
  /* every CRITICAL is a finding (after gst_init (), which sets the mask
   * from GST_DEBUG's own rules) */
  g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR |
      G_LOG_FATAL_MASK);
  signal (SIGTRAP, on_trap);
  if (!gst_debug_is_active ())
    gst_debug_set_default_threshold (GST_LEVEL_NONE);
  if (!gst_element_factory_find ("gpusharesrc")
      || !gst_element_factory_find ("gpusharesink")) {
    g_printerr ("fuzz: the gpushare plugin is not found: set "
        "GST_PLUGIN_PATH_1_0 to the test copy of the plugin\n");
    abort ();
  }
}

const gchar *
fuzz_socket_path (void)
{
  static gchar *path;

  if (!path) {
    gchar *dir = g_dir_make_tmp ("gpushare-fuzz-XXXXXX", NULL);

    if (!dir)
      abort ();
    path = g_build_filename (dir, "fuzz.sock", NULL);
    g_free (dir);
  }
  return path;
}

void
fuzz_drain_bus (GstElement * pipeline, gint timeout_ms)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, timeout_ms * GST_MSECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);

  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
}
