/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gpu-test-util.h"

#include <errno.h>
#include <execinfo.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpusharecuda.h"

#define DEVICE 0
#define FD_SETTLE_MS 2000
#define FD_STABLE_SAMPLES 3

/* the child of gpu_test_probe_in_child (): data is the GpuTestNeeds */
static gint
probe_child (gint sock, gpointer data)
{
  GpuTestNeeds needs = GPOINTER_TO_INT (data);
  GpuShareCudaCaps caps;
  GError *error = NULL;

  if (!gpushare_cuda_probe (0, &caps, &error)) {
    g_print ("SKIP: no usable GPU: %s\n", error->message);
    return GPU_TEST_SKIP;
  }
  if ((needs & GPU_TEST_NEED_VMM_FD) && !(caps.vmm && caps.posix_fd)) {
    g_print ("SKIP: %s cannot export VMM memory as file descriptors\n",
        caps.name);
    return GPU_TEST_SKIP;
  }
  if ((needs & GPU_TEST_NEED_MEM_OPS) && !caps.mem_ops_64) {
    g_print ("SKIP: %s has no 64-bit stream memory operations\n", caps.name);
    return GPU_TEST_SKIP;
  }
  if (needs & GPU_TEST_NEED_ELEMENTS) {
    static const gchar *elements[] = { "videotestsrc", "fakesink",
      "gpusharesink", "gpusharesrc"
    };

    gst_init (NULL, NULL);
    if (!gpu_test_have_elements (elements, G_N_ELEMENTS (elements)))
      return GPU_TEST_SKIP;
  }
  return 0;
}

gint
gpu_test_probe_in_child (GpuTestNeeds needs)
{
  GpuTestRole probe = { NULL, probe_child, GINT_TO_POINTER (needs), 0 };

  return gpu_test_wait_child (&probe, -1, -1, NULL) == 0 ? 0 : GPU_TEST_SKIP;
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
}
Control;

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

gint
gpu_test_settled_fds (void)
{
  gint64 end = g_get_monotonic_time () + FD_SETTLE_MS * 1000;
  gint last = gpu_test_count_fds (), same = 1;

  while (same < FD_STABLE_SAMPLES && g_get_monotonic_time () < end) {
    gint n;

    g_usleep (50000);
    n = gpu_test_count_fds ();
    same = n == last ? same + 1 : 1;
    last = n;
  }
  return last;
}

gboolean
gpu_test_ctl_send (gint sock, guint8 cmd, guint64 value)
{
  GpuTestCtl m;

  memset (&m, 0, sizeof (m));
  m.cmd = cmd;
  m.value = value;
  return gpu_test_write_all (sock, &m, sizeof (m));
}

gboolean
gpu_test_ctl_recv (gint sock, GpuTestCtl * m, gint timeout_ms)
{
  return gpu_test_read_all (sock, m, sizeof (*m), timeout_ms);
}

gboolean
gpu_test_ctl_expect (gint sock, guint8 cmd, guint64 * value, gint timeout_ms)
{
  GpuTestCtl m;

  if (!gpu_test_ctl_recv (sock, &m, timeout_ms))
    return FALSE;
  if (value)
    *value = m.value;
  return m.cmd == cmd;
}

void
gpu_test_child_exit (gint rc)
{
  fflush (stdout);
  fflush (stderr);
  _exit (rc);
}

/* a child that crashes says where: the frames go to stderr, as
 * "object(+offset)" where the symbol is not exported, for addr2line */
static void
crash_handler (gint sig)
{
  gpointer frames[64];
  gint n = backtrace (frames, G_N_ELEMENTS (frames));
  static const gchar head[] = "crashed; backtrace:\n";

  if (write (STDERR_FILENO, head, sizeof head - 1) < 0)
    _exit (128 + sig);
  backtrace_symbols_fd (frames, n, STDERR_FILENO);
  signal (sig, SIG_DFL);
  raise (sig);
}

static void
crash_handler_install (void)
{
  gpointer frame;
  struct sigaction sa = { 0 };
  const gint sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
  guint i;

  /* the first backtrace () loads libgcc_s: not in the handler */
  backtrace (&frame, 1);
  sa.sa_handler = crash_handler;
  sigemptyset (&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (i = 0; i < G_N_ELEMENTS (sigs); i++)
    sigaction (sigs[i], &sa, NULL);
}

void
gpu_test_run_child (guint alarm_s)
{
  alarm (alarm_s);
  crash_handler_install ();
  gst_init (NULL, NULL);
  g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
}

gboolean
gpu_test_reap (pid_t pid, const gchar * who)
{
  gint status = 0;

  if (pid < 0 || waitpid (pid, &status, 0) < 0)
    return FALSE;
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
    return TRUE;
  if (!who)
    return FALSE;
  if (WIFSIGNALED (status))
    g_print ("%s: killed by signal %d%s\n", who, WTERMSIG (status),
        WTERMSIG (status) == SIGALRM ? " (it hung)" : "");
  else
    g_print ("%s: exited with %d\n", who, WEXITSTATUS (status));
  return FALSE;
}

gboolean
gpu_test_kill (pid_t pid)
{
  gint status = 0;

  /* a pid from a fork that failed: kill (-1) would signal every process
   * we may signal */
  if (pid <= 0)
    return FALSE;
  kill (pid, SIGKILL);
  return waitpid (pid, &status, 0) == pid && WIFSIGNALED (status)
      && WTERMSIG (status) == SIGKILL;
}

/* the child runs role with sock, without the parent's fds close_a and
 * close_b (each when >= 0) */
static pid_t
fork_role (const GpuTestRole * role, gint sock, gint close_a, gint close_b)
{
  pid_t pid;

  /* what stdio holds would be written twice */
  fflush (stdout);
  fflush (stderr);
  pid = fork ();
  if (pid == 0) {
    if (close_a >= 0)
      close (close_a);
    if (close_b >= 0)
      close (close_b);
    if (role->alarm_s > 0)
      gpu_test_run_child (role->alarm_s);
    gpu_test_child_exit (role->func (sock, role->data));
  }
  return pid;
}

pid_t
gpu_test_fork (const GpuTestRole * role, gint sock, gint close_fd)
{
  return fork_role (role, sock, close_fd, -1);
}

gint
gpu_test_wait_child (const GpuTestRole * role, gint sock, gint close_fd,
    gint * status)
{
  pid_t pid = fork_role (role, sock, close_fd, -1);
  gint st = 0;

  if (pid < 0 || waitpid (pid, &st, 0) != pid)
    return -1;
  if (status)
    *status = st;
  return WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

gint
gpu_test_probe_with (GpuTestChildFunc func)
{
  GpuTestRole probe = { NULL, func, NULL, 0 };
  gint rc = gpu_test_wait_child (&probe, -1, -1, NULL);

  if (rc < 0) {
    g_print ("SKIP: no usable GPU: the probe process crashed\n");
    return GPU_TEST_SKIP;
  }
  return rc;
}

/* the socketpair between the processes of a test: a stream, its ends
 * close-on-exec; FALSE with error set */
static gboolean
new_socketpair (gint sv[2], GError ** error)
{
  gint e;

  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0)
    return TRUE;
  e = errno;
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
      "socketpair: %s", g_strerror (e));
  return FALSE;
}

pid_t
gpu_test_spawn (const GpuTestRole * role, gint close_fd, gint * ctl,
    GError ** error)
{
  gint sv[2], e;
  pid_t pid;

  *ctl = -1;
  if (!new_socketpair (sv, error))
    return -1;
  pid = fork_role (role, sv[0], sv[1], close_fd);
  e = errno;
  close (sv[0]);
  if (pid < 0) {
    close (sv[1]);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
        "fork: %s", g_strerror (e));
    return -1;
  }
  *ctl = sv[1];
  return pid;
}

gboolean
gpu_test_run_pair (const GpuTestRole * producer, const GpuTestRole * consumer,
    GpuTestPairFlags flags, GError ** error)
{
  gboolean consumer_first = consumer
      && (flags & GPU_TEST_PAIR_FORK_CONSUMER_FIRST);
  pid_t ppid, cpid = -1;
  gint sv[2];
  gboolean ok;

  if (!new_socketpair (sv, error))
    return FALSE;
  if (consumer_first)
    cpid = fork_role (consumer, sv[1], sv[0], -1);
  ppid = fork_role (producer, sv[0], sv[1], -1);
  if (consumer && !consumer_first)
    cpid = fork_role (consumer, sv[1], sv[0], -1);
  /* ours closed: a child that dies is a hang-up for the other */
  close (sv[0]);
  close (sv[1]);
  if (!consumer)
    return gpu_test_reap (ppid, producer->name);
  if (flags & GPU_TEST_PAIR_REAP_CONSUMER_FIRST) {
    ok = gpu_test_reap (cpid, consumer->name);
    ok = gpu_test_reap (ppid, producer->name) && ok;
  } else {
    ok = gpu_test_reap (ppid, producer->name);
    ok = gpu_test_reap (cpid, consumer->name) && ok;
  }
  return ok;
}

guint
gpu_test_env_uint (const gchar * name, guint fallback)
{
  const gchar *v = g_getenv (name);
  guint64 n;

  if (!v || !g_ascii_string_to_unsigned (v, 10, 0, 100000, &n, NULL))
    return fallback;
  return (guint) n;
}

gdouble
gpu_test_mib (gsize bytes)
{
  return bytes / (1024.0 * 1024.0);
}

gboolean
gpu_test_hold_primary (CUcontext * ctx, GError ** error)
{
  GpuShareCudaApi *cu;
  CUdevice dev;

  if (!gpushare_cuda_load (error))
    return FALSE;
  cu = gpushare_cuda ();
  return gpushare_cuda_check (cu->cuDeviceGet (&dev, DEVICE), "cuDeviceGet",
      error) && gpushare_cuda_check (cu->cuDevicePrimaryCtxRetain (ctx, dev),
      "cuDevicePrimaryCtxRetain", error);
}

void
gpu_test_release_primary (void)
{
  CUdevice dev;

  if (gpushare_cuda ()->cuDeviceGet (&dev, DEVICE) == CUDA_SUCCESS)
    gpushare_cuda ()->cuDevicePrimaryCtxRelease (dev);
}

gsize
gpu_test_device_free (CUcontext ctx)
{
  GpuShareCudaApi *cu = gpushare_cuda ();
  size_t free_b = 0, total = 0;
  CUcontext dummy;
  CUresult res;

  res = cu->cuCtxPushCurrent (ctx);
  if (res == CUDA_SUCCESS) {
    res = cu->cuMemGetInfo (&free_b, &total);
    cu->cuCtxPopCurrent (&dummy);
  }
  if (res != CUDA_SUCCESS) {
    g_printerr ("    cuMemGetInfo: %s\n", gpushare_cuda_result_to_string (res));
    return 0;
  }
  return free_b;
}

gboolean
gpu_test_mem_ok (gsize before, gsize after)
{
  return before > 0 && after > 0 && after + GPU_TEST_MEM_SLACK >= before;
}

void
gpu_test_print_mem (const gchar * who, gsize before, gsize after)
{
  g_print ("%s: device free memory %.1f -> %.1f MiB (whole device; grew by "
      "%.1f MiB, limit %.1f): %s\n", who, gpu_test_mib (before),
      gpu_test_mib (after), before > after ? gpu_test_mib (before - after) :
      0.0, gpu_test_mib (GPU_TEST_MEM_SLACK),
      gpu_test_mem_ok (before, after) ? "PASS" : "FAIL");
}

void
gpu_test_print_device (const GpuShareCudaCaps * caps)
{
  const gchar *mps = g_getenv ("CUDA_MPS_PIPE_DIRECTORY");

  g_print ("device: %s, driver %d, ipc-event=%d mem-ops-64=%d "
      "compute-mode=%d; CUDA_MPS_PIPE_DIRECTORY=%s\n", caps->name,
      caps->driver_version, caps->ipc_event, caps->mem_ops_64,
      caps->compute_mode, mps ? mps : "unset");
}

gboolean
gpu_test_have_elements (const gchar * const *names, guint n)
{
  guint i;

  for (i = 0; i < n; i++) {
    GstElementFactory *f = gst_element_factory_find (names[i]);

    if (!f) {
      g_print ("SKIP: GStreamer element %s is missing\n", names[i]);
      return FALSE;
    }
    gst_object_unref (f);
  }
  return TRUE;
}

/* the element's stats, or NULL */
static GstStructure *
get_stats (GstElement * e)
{
  GstStructure *s = NULL;

  g_object_get (e, "stats", &s, NULL);
  return s;
}

gchar *
gpu_test_stat_string (GstElement * e, const gchar * field)
{
  GstStructure *s = get_stats (e);
  gchar *v = NULL;

  if (s) {
    v = g_strdup (gst_structure_get_string (s, field));
    gst_structure_free (s);
  }
  return v ? v : g_strdup ("?");
}

guint64
gpu_test_stat_u64 (GstElement * e, const gchar * field)
{
  GstStructure *s = get_stats (e);
  guint64 v = 0;

  if (s) {
    gst_structure_get_uint64 (s, field, &v);
    gst_structure_free (s);
  }
  return v;
}

guint
gpu_test_stat_uint (GstElement * e, const gchar * field)
{
  GstStructure *s = get_stats (e);
  guint v = 0;

  if (s) {
    gst_structure_get_uint (s, field, &v);
    gst_structure_free (s);
  }
  return v;
}

guint
gpu_test_num_clients (GstElement * sink)
{
  guint n = 0;

  g_object_get (sink, "num-clients", &n, NULL);
  return n;
}

void
gpu_test_print_error_message (const gchar * who, GstMessage * msg)
{
  GError *err = NULL;
  gchar *debug = NULL;

  gst_message_parse_error (msg, &err, &debug);
  g_print ("    %s: error from %s: %s (%s)\n", who,
      GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), err->message,
      debug ? debug : "");
  g_clear_error (&err);
  g_free (debug);
}

gboolean
gpu_test_drain_bus (const gchar * who, GstBus * bus)
{
  GstMessage *msg;
  gboolean ok = TRUE;

  while ((msg = gst_bus_pop (bus))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      gpu_test_print_error_message (who, msg);
      ok = FALSE;
    }
    gst_message_unref (msg);
  }
  return ok;
}

GstElement *
gpu_test_producer_pipeline (const gchar * path, guint fps, GstElement ** sink)
{
  GError *error = NULL;
  GstElement *pipeline;
  gchar *desc;

  desc = g_strdup_printf ("videotestsrc is-live=true pattern=ball ! "
      "video/x-raw,format=NV12,width=1920,height=1080,framerate=%u/1 ! "
      "gpusharesink name=sink socket-path=\"%s\"", fps, path);
  pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!pipeline) {
    g_print ("producer: %s\n", error->message);
    g_clear_error (&error);
    return NULL;
  }
  *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  return pipeline;
}

GstElement *
gpu_test_consumer_pipeline (const gchar * path, guint connection_timeout_ms,
    GstPadProbeCallback probe, gpointer user_data, GstElement ** src)
{
  GstElement *pipeline = gst_pipeline_new ("consumer");
  GstElement *sink = gst_element_factory_make ("fakesink", "sink");
  GstCaps *caps;
  gboolean linked;
  GstPad *pad;

  *src = gst_element_factory_make ("gpusharesrc", "src");
  g_object_set (*src, "socket-path", path, "connection-timeout",
      connection_timeout_ms, NULL);
  gst_util_set_object_arg (G_OBJECT (*src), "transport", "cuda");
  g_object_set (sink, "sync", FALSE, "enable-last-sample", FALSE, NULL);
  gst_bin_add_many (GST_BIN (pipeline), *src, sink, NULL);
  /* fakesink takes any caps, so it would get system memory: the frames
   * stay in GPU memory only where downstream asks for them there */
  caps = gst_caps_from_string ("video/x-raw(memory:CUDAMemory)");
  linked = gst_element_link_filtered (*src, sink, caps);
  gst_caps_unref (caps);
  if (!linked) {
    g_print ("consumer: cannot link gpusharesrc to fakesink\n");
    return NULL;
  }
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, probe, user_data, NULL);
  gst_object_unref (pad);
  gst_pipeline_set_auto_flush_bus (GST_PIPELINE (pipeline), FALSE);
  return pipeline;
}

gboolean
gpu_test_producer_play (GstElement * pipeline, GstElement * sink,
    GstBus * bus, gint timeout_ms)
{
  gint64 end;

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    gpu_test_drain_bus ("producer", bus);
    g_print ("producer: the pipeline did not start\n");
    return FALSE;
  }
  end = g_get_monotonic_time () + (gint64) timeout_ms *1000;
  while (gpu_test_stat_u64 (sink, "frames-rendered") == 0
      && g_get_monotonic_time () < end)
    g_usleep (10000);
  if (!gpu_test_drain_bus ("producer", bus)
      || gpu_test_stat_u64 (sink, "frames-rendered") == 0) {
    g_print ("producer: no frame rendered within %d ms\n", timeout_ms);
    return FALSE;
  }
  return TRUE;
}

gboolean
gpu_test_drain_consumer_bus (GstBus * bus, guint * vmm, gchar ** other,
    gboolean print)
{
  GstMessage *msg;
  gboolean ok = TRUE;

  while ((msg = gst_bus_pop (bus))) {
    const GstStructure *s = gst_message_get_structure (msg);

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      if (print)
        gpu_test_print_error_message ("consumer", msg);
      ok = FALSE;
    } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT && s
        && gst_structure_has_name (s, "gpushare-transport")) {
      const gchar *type = gst_structure_get_string (s, "memory-type");

      if (g_strcmp0 (type, "cuda-vmm") == 0) {
        (*vmm)++;
      } else if (other && !*other) {
        *other = g_strdup_printf ("%s (%s)", type ? type : "?",
            gst_structure_get_string (s, "reason"));
      }
    }
    gst_message_unref (msg);
  }
  return ok;
}

void
gpu_test_ring_free (GpuShareCudaRing * ring, GpuShareCudaView ** views,
    guint n_views, guint n_consumers)
{
  guint i;

  for (i = 0; i < n_views; i++)
    if (views[i])
      gpushare_cuda_view_free (views[i]);
  if (!ring)
    return;
  for (i = 0; i < n_consumers; i++)
    gpushare_cuda_ring_remove_consumer (ring, i);
  gpushare_cuda_ring_free (ring);
}

void
gpu_test_planes (GpuSharePlanes * p, const GstVideoInfo * info,
    CUdeviceptr base)
{
  guint i;

  memset (p, 0, sizeof (*p));
  p->device = TRUE;
  p->base = (guintptr) base;
  for (i = 0; i < GST_VIDEO_INFO_N_PLANES (info); i++) {
    p->offset[i] = GST_VIDEO_INFO_PLANE_OFFSET (info, i);
    p->stride[i] = GST_VIDEO_INFO_PLANE_STRIDE (info, i);
  }
}
