/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpu-test-util.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpusharecuda.h"

gint
gpu_test_probe_in_child (GpuTestNeeds needs)
{
  gint status = 0;
  pid_t pid = fork ();

  if (pid == 0) {
    GpuShareCudaCaps caps;
    GError *error = NULL;

    if (!gpushare_cuda_probe (0, &caps, &error)) {
      g_print ("SKIP: no usable GPU: %s\n", error->message);
      _exit (GPU_TEST_SKIP);
    }
    if ((needs & GPU_TEST_NEED_VMM_FD) && !(caps.vmm && caps.posix_fd)) {
      g_print ("SKIP: %s cannot export VMM memory as file descriptors\n",
          caps.name);
      _exit (GPU_TEST_SKIP);
    }
    if ((needs & GPU_TEST_NEED_MEM_OPS) && !caps.mem_ops_64) {
      g_print ("SKIP: %s has no 64-bit stream memory operations\n",
          caps.name);
      _exit (GPU_TEST_SKIP);
    }
    _exit (0);
  }
  if (pid < 0 || waitpid (pid, &status, 0) != pid || !WIFEXITED (status)
      || WEXITSTATUS (status) != 0)
    return GPU_TEST_SKIP;
  return 0;
}

gint
gpu_test_count_fds (void)
{
  GDir *dir = g_dir_open ("/proc/self/fd", 0, NULL);
  gint n = 0;

  if (!dir)
    return -1;
  while (g_dir_read_name (dir))
    n++;
  g_dir_close (dir);
  return n;
}

typedef union
{
  struct cmsghdr hdr;
  gchar buf[CMSG_SPACE (sizeof (gint) * GPU_TEST_MAX_FDS)];
} Control;

/* one byte of payload, and room for the fds */
static void
message_init (struct msghdr *mh, struct iovec *iov, guint8 * byte,
    Control * control, gsize control_len)
{
  memset (mh, 0, sizeof (*mh));
  memset (control, 0, sizeof (*control));
  iov->iov_base = byte;
  iov->iov_len = 1;
  mh->msg_iov = iov;
  mh->msg_iovlen = 1;
  mh->msg_control = control->buf;
  mh->msg_controllen = control_len;
}

gboolean
gpu_test_send_fds (gint sock, const gint * fds, guint n)
{
  Control control;
  struct msghdr mh;
  struct iovec iov;
  guint8 byte = (guint8) n;
  struct cmsghdr *c;

  g_return_val_if_fail (n > 0 && n <= GPU_TEST_MAX_FDS, FALSE);
  message_init (&mh, &iov, &byte, &control, CMSG_SPACE (sizeof (gint) * n));
  c = CMSG_FIRSTHDR (&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN (sizeof (gint) * n);
  memcpy (CMSG_DATA (c), fds, sizeof (gint) * n);
  return sendmsg (sock, &mh, MSG_NOSIGNAL) == 1;
}

gboolean
gpu_test_recv_fds (gint sock, gint * fds, guint n)
{
  Control control;
  struct msghdr mh;
  struct iovec iov;
  guint8 byte = 0;
  struct cmsghdr *c;
  gint got_fds[GPU_TEST_MAX_FDS];
  guint got = 0, i;

  message_init (&mh, &iov, &byte, &control, sizeof (control.buf));
  if (recvmsg (sock, &mh, MSG_CMSG_CLOEXEC) != 1)
    return FALSE;
  for (c = CMSG_FIRSTHDR (&mh); c; c = CMSG_NXTHDR (&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      guint k = (c->cmsg_len - CMSG_LEN (0)) / sizeof (gint);

      k = MIN (k, GPU_TEST_MAX_FDS - got);
      memcpy (got_fds + got, CMSG_DATA (c), k * sizeof (gint));
      got += k;
    }
  if (got == n && byte == n && !(mh.msg_flags & MSG_CTRUNC)) {
    memcpy (fds, got_fds, n * sizeof (gint));
    return TRUE;
  }
  for (i = 0; i < got; i++)
    close (got_fds[i]);
  return FALSE;
}

gboolean
gpu_test_write_all (gint sock, gconstpointer buf, gsize len)
{
  const guint8 *p = buf;

  while (len > 0) {
    gssize n = send (sock, p, len, MSG_NOSIGNAL);

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return FALSE;
    p += n;
    len -= n;
  }
  return TRUE;
}

gboolean
gpu_test_read_all (gint sock, gpointer buf, gsize len, gint timeout_ms)
{
  guint8 *p = buf;
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  while (len > 0) {
    struct pollfd pfd = { sock, POLLIN, 0 };
    gint wait_ms = -1, r;
    gssize n;

    if (timeout_ms >= 0) {
      gint64 rest = end - g_get_monotonic_time ();

      if (rest <= 0)
        return FALSE;
      wait_ms = (gint) ((rest + 999) / 1000);
    }
    r = poll (&pfd, 1, wait_ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return FALSE;
    n = read (sock, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return FALSE;
    p += n;
    len -= n;
  }
  return TRUE;
}

guint64
gpu_test_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * G_GUINT64_CONSTANT (1000000000) + ts.tv_nsec;
}
