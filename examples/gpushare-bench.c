/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gpushare-bench: throughput, handoff latency and CPU cost of moving raw
 * video frames from one process to another, gpushare beside the transport
 * GStreamer 1.22 already has (shmsink / shmsrc).  It prints figures; it is
 * not a test.
 *
 *   gpushare-bench [--sizes 1080p,4k] [--frames 600] [--repeat 3]
 *                  [--modes a,b,...] [--ring 8] [--timeout 10]
 *                  [--mps] [--targets] [--max-time S]
 *                  [--markdown] [--verbose]
 *   gpushare-bench --list
 *   gpushare-bench producer|consumer|single --mode M ...  (one side only)
 *
 * Every mode is a row of modes[] below: a producer pipeline and a consumer
 * pipeline, run in two processes that this program spawns from itself, or
 * one pipeline in one process for the ceiling.  The producer makes one
 * frame and repeats it (videotestsrc num-buffers=1 ! imagefreeze), so the
 * source costs next to nothing per frame and what is measured is the
 * handoff.
 *
 * Each side stamps CLOCK_MONOTONIC in a pad probe: the producer on the sink
 * pad of the element named "in" (the first element of the transport), the
 * consumer on the src pad of the element named "out" (the last).  A frame
 * is keyed by GST_BUFFER_OFFSET, which imagefreeze and videotestsrc set and
 * gpushare carries; a transport that loses the offset (shmsrc) is keyed by
 * arrival order, the same thing for a lossless transport.  Each child keeps
 * its stamps in memory and writes them to a file when it is done; the
 * parent joins them.
 *
 * Process start-up (plugin loading, connecting, allocating the ring, CUDA
 * init) is left out by measuring between the first and the last frame
 * only: the throughput is (frames - 1) / (last - first) on the consumer's
 * stamps, the CPU time per frame is each process's getrusage () at its
 * last frame minus that at its first, divided by (frames - 1).
 *
 * Each figure is the median of --repeat runs, taken in rounds over the
 * whole table.  A mode whose elements are not installed is printed as
 * skipped.  docs/benchmarks.md has results and what they mean.
 *
 * GPU rows also get the device memory of each process, from nvidia-smi,
 * sampled while both processes still hold everything they allocated: with
 * --hold each child stops after its last frame, pipeline still PLAYING,
 * until the parent has sampled and written <hold>.go.  --mps runs the GPU
 * rows once more, in every round, under an MPS daemon that this program
 * starts with private pipe and log folders and stops again, on every path
 * out (a signal included).  --targets says which targets were met.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#if HAVE_GST_ANALYTICS
#include <gst/analytics/analytics.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "gpushare-bench.h"
#include "gpushare-bench-wake.h"

/* ------------------------------------------------------------------------ */
/* the modes */

/* Pipeline templates.  @CAPS@ is the raw caps of the frame
 * (video/x-raw,format=NV12,width=..,height=..,framerate=30/1), @FRAMES@
 * the frame count, @SOCKET@ a fresh socket path in a private folder,
 * @RING@ the ring depth, @SHMSIZE@ a shmsink area that holds @RING@ frames.
 * Every sink runs with sync=false: the frames carry 30 fps timestamps, and
 * the point is to go as fast as the transport allows. */

/* One frame, repeated.  imagefreeze passes the sink's ALLOCATION answer up,
 * so videotestsrc draws its one frame into the sink's memory: gpusharesink
 * then copies it from that slot into a fresh slot for every frame (a slot
 * carries one frame at a time), while shmsink sends the very same block
 * again and again without copying anything. */
#define SOURCE "videotestsrc num-buffers=1 pattern=smpte ! @CAPS@ ! " \
  "imagefreeze num-buffers=@FRAMES@"
/* The same with identity drop-allocation=true in front of imagefreeze: the
 * frame is in ordinary memory and either sink copies every frame once into
 * shared memory, which is what a producer outside the sink's pool costs. */
#define SOURCE_NOPOOL "videotestsrc num-buffers=1 pattern=smpte ! @CAPS@ ! " \
  "identity drop-allocation=true ! imagefreeze num-buffers=@FRAMES@"
/* A source that writes every frame into the sink's memory (videotestsrc
 * copies its cached solid-colour picture into each buffer): the sink copies
 * nothing, the copy is the source's. */
#define SOURCE_INPLACE "videotestsrc num-buffers=@FRAMES@ " \
  "pattern=solid-color ! @CAPS@"
/* The frame in CUDA memory.  The caps after cudaupload are needed: without
 * them cudaupload prefers system memory wherever downstream takes it too,
 * and passes the frame through without uploading anything. */
#define CUDA_SOURCE "videotestsrc num-buffers=1 pattern=smpte ! @CAPS@ ! " \
  "cudaupload ! video/x-raw(memory:CUDAMemory) ! " \
  "imagefreeze num-buffers=@FRAMES@"
/* A source that writes every frame into GPU memory: cudaupload uploads the
 * frozen picture again for each frame, into a buffer of the pool the sink
 * offers, if any (gpusharesink's pool of GPU slots from GStreamer 1.24 on:
 * the sink then copies nothing).  The upload bounds these rows. */
#define CUDA_SOURCE_UPLOAD "videotestsrc num-buffers=1 pattern=smpte ! " \
  "@CAPS@ ! imagefreeze num-buffers=@FRAMES@ ! cudaupload ! " \
  "video/x-raw(memory:CUDAMemory)"

#define GPUSHARE_SINK "gpusharesink name=in socket-path=@SOCKET@ " \
  "policy=lossless wait-for-connection=true ring-size=@RING@ sync=false"
/* transport=system: with a GPU on the host, transport=auto could carry even
 * system-memory input in GPU slots; these rows measure system memory */
#define GPUSHARE_SRC "gpusharesrc name=out socket-path=@SOCKET@ " \
  "transport=system"
/* GPU rows force the transport, so that a fallback fails the row instead
 * of measuring something else, and keep the frames in GPU memory; the
 * producer is on GPU 0, the peer rows' consumer on GPU 1 */
#define GPUSHARE_SRC_CUDA_OPTS(sync, opts) "gpusharesrc name=out " \
  "socket-path=@SOCKET@ transport=cuda sync-mode=" sync opts \
  " ! video/x-raw(memory:CUDAMemory)"
#define GPUSHARE_SRC_CUDA(sync) GPUSHARE_SRC_CUDA_OPTS (sync, "")
/* the "-ahead" rows: the consumer's streaming thread wakes up
 * WAKE_AHEAD_US before a steady producer's next frame is due and polls
 * the lane for it (gpusharesrc wake-ahead), rather than sleep until the
 * producer rings it: the wake-up of a sleeping thread off each frame's
 * latency, for CPU time the rows show */
#define WAKE_AHEAD_US "300"
#define GPUSHARE_SRC_CUDA_AHEAD(sync) \
  GPUSHARE_SRC_CUDA_OPTS (sync, " wake-ahead=" WAKE_AHEAD_US)
/* the "-socket" rows: frames as messages on the socket, read by the
 * consumer's control thread and handed to its streaming thread (the path
 * before the frame lane), beside the rows that read the lane */
#define SOCKET_FRAMES " frame-lane=false"
#define GPUSHARE_SRC_CUDA_SOCKET(sync) \
  GPUSHARE_SRC_CUDA_OPTS (sync, SOCKET_FRAMES)
/* the same, every frame copied out of its slot (io-mode=copy); the rows
 * above push the slot itself where GStreamer allows it (1.24+) */
#define GPUSHARE_SRC_CUDA_COPY(sync) "gpusharesrc name=out " \
  "socket-path=@SOCKET@ transport=cuda io-mode=copy sync-mode=" sync \
  " ! video/x-raw(memory:CUDAMemory)"
#define GPUSHARE_SRC_CUDA_COPY_SOCKET(sync) "gpusharesrc name=out " \
  "socket-path=@SOCKET@ transport=cuda io-mode=copy sync-mode=" sync \
  SOCKET_FRAMES " ! video/x-raw(memory:CUDAMemory)"
/* GStreamer 1.24's own CUDA IPC: cudaipcsink is a GstBaseSink (sync=true
 * by default, so sync=false as every other sink here) and drops frames
 * while no client is connected, hence the gate */
#define CUDAIPC_SINK(ipc) "cudaipcsink name=in address=@SOCKET@ " \
  "ipc-mode=" ipc " sync=false"
#define CUDAIPC_SRC(io) "cudaipcsrc name=out address=@SOCKET@ io-mode=" io \
  " ! video/x-raw(memory:CUDAMemory)"
#define GPUSHARE_SRC_PEER(sync) "gpusharesrc name=out " \
  "socket-path=@SOCKET@ cuda-device-id=1 transport=cuda sync-mode=" sync \
  " ! video/x-raw(memory:CUDAMemory)"
#define SHM_SINK_OPTS "socket-path=@SOCKET@ wait-for-connection=true " \
  "shm-size=@SHMSIZE@ sync=false"
#define SHM_SINK "shmsink name=in " SHM_SINK_OPTS
/* shmsrc carries no caps: give them, as a gpusharesrc consumer gets them
 * from the handshake */
#define SHM_SRC_OPTS "socket-path=@SOCKET@ is-live=false ! @CAPS@"
#define SHM_SRC "shmsrc name=out " SHM_SRC_OPTS
#define FAKESINK "fakesink sync=false"
/* GStreamer 1.24+'s memfd transport for system memory: caps and
 * timestamps travel, the sink refuses memory that is not an fd's */
#define UNIXFD_SINK "unixfdsink name=in socket-path=@SOCKET@ " \
  "wait-for-connection=true sync=false"
#define UNIXFD_SRC "unixfdsrc name=out socket-path=@SOCKET@"

typedef struct
{
  const gchar *name;
  const gchar *what;
  /* elements that must exist, separated by spaces */
  const gchar *needs;
  /* if set, the sink template of that element must take these caps: a
   * transport that cannot carry them yet is skipped, not failed */
  const gchar *caps_factory;
  const gchar *caps;
  /* the producer names the element to stamp in front of "in", the
   * consumer the element to stamp behind "out" */
  const gchar *producer;
  /* NULL: one process, the "in" stamps alone */
  const gchar *consumer;
  FrameKey key;
  /* the frames live in GPU memory: device memory is sampled, and --mps runs
   * the row again under MPS */
  gboolean gpu;
  /* GPUs the row needs (0: none asked for); skipped on fewer */
  gint gpus;
  /* the sink keeps only the newest frame and drops the others: while no
   * consumer is there, and whenever the producer is faster than the
   * consumer (cudaipcsink sends a client the newest frame when it asks).
   * The producer holds its first frame until the consumer has started and
   * had GATE_SETTLE_MS to connect, then each frame until the consumer has
   * the one before (lock-step through a pipe, see credit_probe ()): the
   * most such a transport carries without losing frames */
  gboolean gate;
} BenchMode;

/* New rows (other transports) go here.  A mode whose elements are missing
 * is skipped, so rows for the GPU machine can stay in the table
 * everywhere. */
static const BenchMode modes[] = {
  {"one-process", "source ! fakesink in one process: the ceiling",
        "imagefreeze", NULL, NULL,
      SOURCE " ! " FAKESINK " name=in", NULL, KEY_OFFSET, FALSE},
  {"gpushare-sysmem", "gpusharesink / gpusharesrc, memfd slots, lossless",
        "imagefreeze gpusharesink gpusharesrc", NULL, NULL,
        SOURCE " ! " GPUSHARE_SINK, GPUSHARE_SRC " ! " FAKESINK, KEY_OFFSET,
      FALSE},
  {"shm", "shmsink / shmsrc, GStreamer 1.22's own",
        "imagefreeze shmsink shmsrc", NULL, NULL,
      SOURCE " ! " SHM_SINK, SHM_SRC " ! " FAKESINK, KEY_ORDER, FALSE},
  {"gpushare-sysmem-nopool", "gpushare-sysmem, the sink copies every frame",
        "imagefreeze identity gpusharesink gpusharesrc", NULL, NULL,
        SOURCE_NOPOOL " ! " GPUSHARE_SINK,
      GPUSHARE_SRC " ! " FAKESINK, KEY_OFFSET, FALSE},
  {"shm-nopool", "shm, the sink copies every frame",
        "imagefreeze identity shmsink shmsrc", NULL, NULL,
      SOURCE_NOPOOL " ! " SHM_SINK, SHM_SRC " ! " FAKESINK, KEY_ORDER, FALSE},
  {"gpushare-sysmem-inplace", "the source writes every frame into a slot",
        "gpusharesink gpusharesrc", NULL, NULL,
        SOURCE_INPLACE " ! " GPUSHARE_SINK,
      GPUSHARE_SRC " ! " FAKESINK, KEY_OFFSET, FALSE},
  {"shm-inplace", "the source writes every frame into shmsink's area",
        "shmsink shmsrc", NULL, NULL,
      SOURCE_INPLACE " ! " SHM_SINK, SHM_SRC " ! " FAKESINK, KEY_ORDER, FALSE},
#define SOCKET_ROW(name, source, what) \
  {name, what, "imagefreeze identity gpusharesink gpusharesrc", NULL, NULL, \
        source " ! " GPUSHARE_SINK, \
      GPUSHARE_SRC SOCKET_FRAMES " ! " FAKESINK, KEY_OFFSET, FALSE}
  SOCKET_ROW ("gpushare-sysmem-socket", SOURCE,
      "gpushare-sysmem, frames through the socket, not the lane"),
  SOCKET_ROW ("gpushare-sysmem-nopool-socket", SOURCE_NOPOOL,
      "gpushare-sysmem-nopool, frames through the socket"),
  SOCKET_ROW ("gpushare-sysmem-inplace-socket", SOURCE_INPLACE,
      "gpushare-sysmem-inplace, frames through the socket"),
#undef SOCKET_ROW
  {"unixfd", "unixfdsink / unixfdsrc (1.24+), the frame in the sink's memfd",
        "imagefreeze unixfdsink unixfdsrc", NULL, NULL,
      SOURCE " ! " UNIXFD_SINK, UNIXFD_SRC " ! " FAKESINK, KEY_ORDER, FALSE},
  {"unixfd-inplace", "the source writes every frame into unixfdsink's memfd",
        "unixfdsink unixfdsrc", NULL, NULL,
        SOURCE_INPLACE " ! " UNIXFD_SINK, UNIXFD_SRC " ! " FAKESINK,
      KEY_ORDER, FALSE},
  {"one-process-inplace", "the source writes every frame, one process",
        "videotestsrc", NULL, NULL,
      SOURCE_INPLACE " ! " FAKESINK " name=in", NULL, KEY_OFFSET, FALSE},
  /* The frame starts and ends in GPU memory; --mps runs these rows once
   * more under MPS.  The ceiling is the same pipeline in one process, the
   * "in" stamp at the same place as gpusharesink's (the first element
   * after imagefreeze): throughput is comparable, and a handoff latency
   * does not exist there (the buffer goes from one pad to the next by a
   * function call), so it prints '-'.  It moves no frame data per frame,
   * where gpusharesink copies every frame on the device into a slot of its
   * own (upstream keeps its CUDA pool): a bound, not a figure a transport
   * can reach. */
  {"one-process-cuda", "cudaupload ! imagefreeze ! fakesink in one process: "
        "the GPU ceiling", "imagefreeze cudaupload", NULL, NULL,
      CUDA_SOURCE " ! " FAKESINK " name=in", NULL, KEY_OFFSET, TRUE},
/* a GPU row: the one source and sink, the consumer's src as given */
#define CUDA_ROW(name, src, what) \
  {name, what, "imagefreeze cudaupload gpusharesink gpusharesrc", \
        "gpusharesink", "video/x-raw(memory:CUDAMemory)", \
        CUDA_SOURCE " ! " GPUSHARE_SINK, src " ! " FAKESINK, KEY_OFFSET, TRUE}
  CUDA_ROW ("gpushare-cuda", GPUSHARE_SRC_CUDA ("auto"),
      "gpushare, CUDA VMM slots"),
  CUDA_ROW ("gpushare-cuda-host", GPUSHARE_SRC_CUDA ("host"),
      "gpushare, CUDA slots, each side syncs its stream"),
  CUDA_ROW ("gpushare-cuda-semaphore", GPUSHARE_SRC_CUDA ("semaphore"),
      "gpushare, CUDA slots, semaphore words in GPU memory"),
  CUDA_ROW ("gpushare-cuda-event", GPUSHARE_SRC_CUDA ("event"),
      "gpushare, CUDA slots, CUDA IPC events"),
  CUDA_ROW ("gpushare-cuda-ahead", GPUSHARE_SRC_CUDA_AHEAD ("auto"),
      "gpushare-cuda, the consumer awake " WAKE_AHEAD_US " us before each "
      "frame is due (wake-ahead)"),
  CUDA_ROW ("gpushare-cuda-semaphore-ahead",
      GPUSHARE_SRC_CUDA_AHEAD ("semaphore"),
      "gpushare-cuda-semaphore with wake-ahead=" WAKE_AHEAD_US),
  CUDA_ROW ("gpushare-cuda-socket", GPUSHARE_SRC_CUDA_SOCKET ("auto"),
      "gpushare-cuda, frames through the socket, not the lane"),
  CUDA_ROW ("gpushare-cuda-host-socket", GPUSHARE_SRC_CUDA_SOCKET ("host"),
      "gpushare-cuda-host, frames through the socket"),
  CUDA_ROW ("gpushare-cuda-semaphore-socket",
      GPUSHARE_SRC_CUDA_SOCKET ("semaphore"),
      "gpushare-cuda-semaphore, frames through the socket"),
  CUDA_ROW ("gpushare-cuda-copy", GPUSHARE_SRC_CUDA_COPY ("auto"),
      "gpushare, CUDA slots, io-mode=copy: the consumer copies every frame "
      "into its own pool"),
  CUDA_ROW ("gpushare-cuda-copy-host", GPUSHARE_SRC_CUDA_COPY ("host"),
      "gpushare-cuda-copy with host sync: each side waits on the host for "
      "the other's copy"),
  CUDA_ROW ("gpushare-cuda-copy-semaphore",
      GPUSHARE_SRC_CUDA_COPY ("semaphore"),
      "gpushare-cuda-copy with semaphore sync: neither side waits on the "
      "host for the other's copy"),
  CUDA_ROW ("gpushare-cuda-copy-socket",
      GPUSHARE_SRC_CUDA_COPY_SOCKET ("auto"),
      "gpushare-cuda-copy, frames through the socket, not the lane"),
#undef CUDA_ROW
  /* GStreamer 1.24+: cudaipcsink / cudaipcsrc in each IPC mode and I/O
   * mode (cudaipcsrc ignores io-mode with ipc-mode=mmap), and unixfdsink /
   * unixfdsrc behind a download, as the shm row */
#define CUDAIPC_ROW(name, ipc, io, what) \
  {name, what, "imagefreeze cudaupload cudaipcsink cudaipcsrc", NULL, NULL, \
        CUDA_SOURCE " ! " CUDAIPC_SINK (ipc), \
      CUDAIPC_SRC (io) " ! " FAKESINK, KEY_ORDER, TRUE, 0, TRUE}
  CUDAIPC_ROW ("cudaipc-legacy-copy", "legacy", "copy",
      "cudaipcsink ipc-mode=legacy / cudaipcsrc io-mode=copy"),
  CUDAIPC_ROW ("cudaipc-legacy-import", "legacy", "import",
      "cudaipcsink ipc-mode=legacy / cudaipcsrc io-mode=import"),
  CUDAIPC_ROW ("cudaipc-mmap-copy", "mmap", "copy",
      "cudaipcsink ipc-mode=mmap / cudaipcsrc io-mode=copy"),
  CUDAIPC_ROW ("cudaipc-mmap-import", "mmap", "import",
      "cudaipcsink ipc-mode=mmap / cudaipcsrc io-mode=import"),
#undef CUDAIPC_ROW
  /* every frame written by the source, into the sink's pool where it
   * offers one: no copy in gpusharesink, none in cudaipcsink either */
  {"one-process-upload", "imagefreeze ! cudaupload ! fakesink in one "
        "process: the upload's ceiling", "imagefreeze cudaupload", NULL,
        NULL, CUDA_SOURCE_UPLOAD " ! " FAKESINK " name=in", NULL, KEY_OFFSET,
      TRUE},
  {"gpushare-cuda-upload", "gpushare, cudaupload writes every frame into a "
        "GPU slot", "imagefreeze cudaupload gpusharesink gpusharesrc",
        "gpusharesink", "video/x-raw(memory:CUDAMemory)",
        CUDA_SOURCE_UPLOAD " ! " GPUSHARE_SINK,
      GPUSHARE_SRC_CUDA ("auto") " ! " FAKESINK, KEY_OFFSET, TRUE},
  {"cudaipc-legacy-import-upload", "cudaipcsink ipc-mode=legacy / "
        "cudaipcsrc io-mode=import, cudaupload writes every frame",
        "imagefreeze cudaupload cudaipcsink cudaipcsrc", NULL, NULL,
        CUDA_SOURCE_UPLOAD " ! " CUDAIPC_SINK ("legacy"),
      CUDAIPC_SRC ("import") " ! " FAKESINK, KEY_ORDER, TRUE, 0, TRUE},
  {"cuda-unixfd", "cudadownload ! unixfdsink / unixfdsrc ! cudaupload",
        "imagefreeze cudaupload cudadownload unixfdsink unixfdsrc", NULL, NULL,
        CUDA_SOURCE " ! cudadownload name=in ! @CAPS@ ! unixfdsink "
        "socket-path=@SOCKET@ wait-for-connection=true sync=false",
      "unixfdsrc socket-path=@SOCKET@ ! cudaupload ! capsfilter name=out "
        "caps=video/x-raw(memory:CUDAMemory) ! " FAKESINK, KEY_ORDER, TRUE},
  /* A consumer on a second GPU: reading in place over peer access, and
   * what it gets without (system memory, uploaded to its GPU) */
#define CUDA_PEER_ROW(name, sync, what) \
  {name, what, "imagefreeze cudaupload gpusharesink gpusharesrc", \
        "gpusharesink", "video/x-raw(memory:CUDAMemory)", \
        CUDA_SOURCE " ! " GPUSHARE_SINK, \
      GPUSHARE_SRC_PEER (sync) " ! " FAKESINK, KEY_OFFSET, TRUE, 2}
  CUDA_PEER_ROW ("gpushare-cuda-peer", "auto",
      "gpushare, consumer on GPU 1 reads GPU 0's slots over peer access"),
  CUDA_PEER_ROW ("gpushare-cuda-peer-host", "host",
      "gpushare-cuda-peer, each side syncs its stream"),
#undef CUDA_PEER_ROW
  {"gpushare-sysmem-peer", "consumer on GPU 1 without peer access: "
        "system memory, cudaupload to GPU 1",
        "imagefreeze cudaupload gpusharesink gpusharesrc", NULL, NULL,
        CUDA_SOURCE " ! " GPUSHARE_SINK,
      GPUSHARE_SRC " cuda-device-id=1 ! cudaupload cuda-device-id=1 ! "
        "video/x-raw(memory:CUDAMemory) ! " FAKESINK, KEY_OFFSET, TRUE, 2},
  {"cuda-shm", "cudadownload ! shmsink / shmsrc ! cudaupload",
        "imagefreeze cudaupload cudadownload shmsink shmsrc", NULL, NULL,
        CUDA_SOURCE " ! cudadownload name=in ! shmsink " SHM_SINK_OPTS,
        "shmsrc " SHM_SRC_OPTS " ! cudaupload ! capsfilter name=out "
        "caps=video/x-raw(memory:CUDAMemory) ! " FAKESINK, KEY_ORDER,
      TRUE},
};

/* ------------------------------------------------------------------------ */
/* options */


Options opt = {
  .consumers = 4,
  .fps = 30,
  .warmup_s = 2,
  .frames = 600,
  .ring = 8,
  .repeat = 3,
  .timeout_s = 10,
  .width = 1920,
  .height = 1080,
};

static const BenchMode *
find_mode (const gchar * name)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (modes); i++)
    if (g_str_equal (modes[i].name, name))
      return &modes[i];
  return NULL;
}

static gsize
frame_size (gint w, gint h)
{
  GstVideoInfo info;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, w, h);
  return GST_VIDEO_INFO_SIZE (&info);
}

gchar *
expand (const gchar * tmpl, gint w, gint h)
{
  GString *s = g_string_new (tmpl);
  gsize page = sysconf (_SC_PAGESIZE);
  gsize slot = (frame_size (w, h) + page - 1) / page * page;
  gchar *caps = g_strdup_printf ("video/x-raw,format=NV12,width=%d,"
      "height=%d,framerate=30/1", w, h);
  gchar *frames = g_strdup_printf ("%d", opt.frames);
  gchar *ring = g_strdup_printf ("%d", opt.ring);
  /* shmsink's area is one block per frame in flight, with a little room
   * for its first-fit allocator */
  gchar *shmsize = g_strdup_printf ("%" G_GSIZE_FORMAT,
      slot * opt.ring + 2 * 1024 * 1024);

  g_string_replace (s, "@CAPS@", caps, 0);
  g_string_replace (s, "@FRAMES@", frames, 0);
  g_string_replace (s, "@RING@", ring, 0);
  g_string_replace (s, "@SHMSIZE@", shmsize, 0);
  g_string_replace (s, "@SOCKET@", opt.socket ? opt.socket : "none", 0);
  g_free (caps);
  g_free (frames);
  g_free (ring);
  g_free (shmsize);
  return g_string_free (s, FALSE);
}

/* --pace-us: identity sleep-time=N in front of the element named "in" */
static gchar *
pace (gchar * desc)
{
  const gchar *in = strstr (desc, "name=in");
  const gchar *at = NULL, *p;
  gchar *out;

  for (p = desc; in && (p = strstr (p, " ! ")) && p < in; p += 3)
    at = p + 3;
  if (!at)
    return desc;
  out = g_strdup_printf ("%.*sidentity sleep-time=%d ! %s", (gint) (at - desc),
      desc, opt.pace_us, at);
  g_free (desc);
  return out;
}

gint64
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* user + system time of every thread of this process */
gint64
cpu_ns (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ((gint64) ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
      ((gint64) ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

/* ------------------------------------------------------------------------ */
/* one side: producer, consumer, or single */

/* How long a child waits, at most, for the parent to sample its memory */
#define HOLD_TIMEOUT_US (5 * G_USEC_PER_SEC)

typedef struct
{
  GstElement *pipeline;
  FrameKey key;
  gboolean post_done;
  gint64 *stamps;               /* per frame, 0: not seen */
  gint n;                       /* frames seen */
  gint bad_keys;
  gint64 cpu_first, cpu_last;
  gint credit_fd;               /* gated rows: see credit_probe () */
} Side;

static GstPadProbeReturn
stamp_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Side *s = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gint64 t = now_ns ();
  guint64 k = s->n;

  if (s->key == KEY_OFFSET && GST_BUFFER_OFFSET_IS_VALID (buf))
    k = GST_BUFFER_OFFSET (buf);
  if (k < (guint64) opt.frames && s->stamps[k] == 0)
    s->stamps[k] = t;
  else
    s->bad_keys++;
  if (s->n == 0)
    s->cpu_first = cpu_ns ();
  /* a gated consumer gives the producer its next frame */
  if (s->credit_fd >= 0 && write (s->credit_fd, "c", 1) != 1)
    s->bad_keys++;
  /* read by the main thread to see progress */
  g_atomic_int_inc (&s->n);
  if (s->n == opt.frames) {
    s->cpu_last = cpu_ns ();
    /* shmsrc sends no EOS: the consumer ends itself at the last frame */
    if (s->post_done)
      gst_element_post_message (s->pipeline,
          gst_message_new_application (GST_OBJECT (s->pipeline),
              gst_structure_new_empty ("bench-done")));
  }
  return GST_PAD_PROBE_OK;
}

#if HAVE_GST_ANALYTICS
/* --analytics: a detector's results on every frame the producer sends,
 * attached before the frame is stamped, so that the row's latency is what
 * carrying them costs: N object detections, each with its classification
 * and the two related */
static GstPadProbeReturn
analytics_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER (info));
  GstAnalyticsRelationMeta *rmeta = gst_buffer_add_analytics_relation_meta
      (buf);
  GQuark car = g_quark_from_static_string ("car");
  GQuark classes[2] = { g_quark_from_static_string ("sedan"),
    g_quark_from_static_string ("van")
  };
  gint d;

  for (d = 0; d < opt.analytics; d++) {
    GstAnalyticsODMtd od;
    GstAnalyticsClsMtd cls;
    gfloat levels[2] = { 0.75f, 0.25f };

    gst_analytics_relation_meta_add_od_mtd (rmeta, car, 10 * d, 20, 64, 48,
        0.5f, &od);
    gst_analytics_relation_meta_add_cls_mtd (rmeta, 2, levels, classes, &cls);
    gst_analytics_relation_meta_set_relation (rmeta,
        GST_ANALYTICS_REL_TYPE_CONTAIN, od.id, cls.id);
    gst_analytics_relation_meta_set_relation (rmeta,
        GST_ANALYTICS_REL_TYPE_IS_PART_OF, cls.id, od.id);
  }
#if GST_CHECK_VERSION(1, 26, 0)
  if (opt.mask) {
    /* --mask: a GRAY8 segmentation mask as large as the frame, made once
     * (what it costs to make is not what carrying it costs); of a frame
     * in GPU memory, in GPU memory: the frame's own luma plane, as a
     * model's output in a buffer of the frame's pool would be */
    static GstBuffer *mask;
    GstAnalyticsSegmentationMtd seg;
    guint regions[2] = { 0, 1 };
    GstMemory *mem = gst_buffer_n_memory (buf) == 1 ?
        gst_buffer_peek_memory (buf, 0) : NULL;
    GstVideoMeta *vm = gst_buffer_get_video_meta (buf);
    GstBuffer *seg_mask;

    if (mem && vm && mem->allocator && g_str_equal (mem->allocator->mem_type,
            "gst.cuda.memory")) {
      gsize offset[GST_VIDEO_MAX_PLANES] = { vm->offset[0], };
      gint stride[GST_VIDEO_MAX_PLANES] = { vm->stride[0], };

      seg_mask = gst_buffer_new ();
      gst_buffer_append_memory (seg_mask, gst_memory_ref (mem));
      gst_buffer_add_video_meta_full (seg_mask, GST_VIDEO_FRAME_FLAG_NONE,
          GST_VIDEO_FORMAT_GRAY8, opt.width, opt.height, 1, offset, stride);
    } else {
      if (!mask) {
        gsize offset[GST_VIDEO_MAX_PLANES] = { 0, };
        gint stride[GST_VIDEO_MAX_PLANES] = { opt.width, };

        mask = gst_buffer_new_allocate (NULL, (gsize) opt.width * opt.height,
            NULL);
        gst_buffer_memset (mask, 0, 1, (gsize) opt.width * opt.height);
        gst_buffer_add_video_meta_full (mask, GST_VIDEO_FRAME_FLAG_NONE,
            GST_VIDEO_FORMAT_GRAY8, opt.width, opt.height, 1, offset, stride);
      }
      seg_mask = gst_buffer_ref (mask);
    }
    gst_analytics_relation_meta_add_segmentation_mtd (rmeta, seg_mask,
        GST_SEGMENTATION_TYPE_SEMANTIC, 2, regions, 0, 0, opt.width,
        opt.height, &seg);
  }
#endif
  GST_PAD_PROBE_INFO_DATA (info) = buf;
  return GST_PAD_PROBE_OK;
}
#endif

/* How long a gated consumer waits after starting before it lets the
 * producer go */
#define GATE_SETTLE_MS 500

/* holds the producer's first frame until the consumer said it is ready
 * (<socket>.ready), then goes away; at most the row's timeout */
static GstPadProbeReturn
gate_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  const gchar *ready = data;
  gint64 until = g_get_monotonic_time () + (gint64) opt.timeout_s *
      G_USEC_PER_SEC;

  while (!g_file_test (ready, G_FILE_TEST_EXISTS)
      && g_get_monotonic_time () < until)
    g_usleep (1000);
  return GST_PAD_PROBE_REMOVE;
}

typedef struct
{
  const gchar *path;
  gint fd;
  gint n;
} Credit;

/* a gated producer: frame i goes once the consumer has frame i - 1 (one
 * byte in the pipe <socket>.credit per frame it got); a consumer that is
 * gone or silent for the row's timeout lets the rest go */
static GstPadProbeReturn
credit_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Credit *c = data;
  struct pollfd pfd;
  gchar byte;

  if (c->n++ == 0)
    return GST_PAD_PROBE_OK;
  if (c->fd < 0)
    c->fd = open (c->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (c->fd < 0)
    return GST_PAD_PROBE_REMOVE;
  pfd.fd = c->fd;
  pfd.events = POLLIN;
  for (;;) {
    gint r = poll (&pfd, 1, opt.timeout_s * 1000);

    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0 || read (c->fd, &byte, 1) != 1)
      return GST_PAD_PROBE_REMOVE;
    return GST_PAD_PROBE_OK;
  }
}

static gint
run_side (const gchar * role)
{
  const BenchMode *mode = opt.mode ? find_mode (opt.mode) : NULL;
  gboolean consumer = g_str_equal (role, "consumer");
  Side s = { 0, };
  GstElement *el = NULL;
  GstPad *pad = NULL;
  GstBus *bus = NULL;
  GError *error = NULL;
  GString *report = g_string_new (NULL);
  gchar *desc, *errmsg = NULL, *gate_path = NULL;
  Credit credit = { NULL, -1, 0 };
  gint64 last_progress;
  gint last_n = -1, i, rc = 0;

  s.credit_fd = -1;

  if (!mode || !opt.stamps || (consumer && !mode->consumer)) {
    g_printerr ("bench %s: no such mode or no --stamps\n", role);
    return 64;
  }
  desc = expand (consumer ? mode->consumer : mode->producer, opt.width,
      opt.height);
  if (!consumer && opt.pace_us > 0)
    desc = pace (desc);
  s.pipeline = gst_parse_launch (desc, &error);
  g_free (desc);
  if (!s.pipeline || error) {
    errmsg = g_strdup_printf ("pipeline: %s", error ? error->message : "?");
    g_clear_error (&error);
    rc = 2;
    goto done;
  }
  s.key = mode->key;
  s.post_done = consumer;
  s.stamps = g_new0 (gint64, opt.frames);
  el = gst_bin_get_by_name (GST_BIN (s.pipeline), consumer ? "out" : "in");
  pad = el ? gst_element_get_static_pad (el, consumer ? "src" : "sink") : NULL;
  if (!pad) {
    errmsg = g_strdup ("no element to stamp");
    rc = 2;
    goto done;
  }
  if (mode->gate && !consumer) {
    gate_path = g_strconcat (opt.socket, ".ready", NULL);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, gate_probe, gate_path,
        NULL);
    credit.path = g_strconcat (opt.socket, ".credit", NULL);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, credit_probe, &credit,
        NULL);
  }
  if (mode->gate && consumer) {
    /* the pipe exists, held open for writing, before the producer may go:
     * read-write, so that opening does not wait for the reader */
    credit.path = g_strconcat (opt.socket, ".credit", NULL);
    if (mkfifo (credit.path, 0600) == 0)
      s.credit_fd = open (credit.path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (s.credit_fd < 0) {
      errmsg = g_strdup_printf ("credit pipe: %s", g_strerror (errno));
      rc = 2;
      goto done;
    }
  }
#if HAVE_GST_ANALYTICS
  if (!consumer && opt.analytics > 0)
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, analytics_probe, NULL,
        NULL);
#endif
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, stamp_probe, &s, NULL);

  bus = gst_element_get_bus (s.pipeline);
  gst_element_set_state (s.pipeline, GST_STATE_PLAYING);
  if (mode->gate && consumer) {
    /* started (the src connects in start ()), plus time to be registered */
    gchar *ready = g_strconcat (opt.socket, ".ready", NULL);

    g_usleep (GATE_SETTLE_MS * 1000);
    g_file_set_contents (ready, "ready\n", -1, NULL);
    g_free (ready);
  }
  last_progress = g_get_monotonic_time ();
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop (bus, 200 * GST_MSECOND);
    gboolean stop = FALSE;

    if (!msg) {
      gint n = g_atomic_int_get (&s.n);

      if (n != last_n) {
        last_n = n;
        last_progress = g_get_monotonic_time ();
      } else if (g_get_monotonic_time () - last_progress >
          (gint64) opt.timeout_s * G_USEC_PER_SEC) {
        errmsg = g_strdup_printf ("stalled after %d frames", n);
        rc = 3;
        break;
      }
      continue;
    }
    switch (GST_MESSAGE_TYPE (msg)) {
      case GST_MESSAGE_EOS:
      case GST_MESSAGE_APPLICATION:
        stop = TRUE;
        break;
      case GST_MESSAGE_ERROR:
        /* a consumer that has every frame does not mind its producer
         * leaving first */
        if (!(consumer && g_atomic_int_get (&s.n) >= opt.frames)) {
          gst_message_parse_error (msg, &error, NULL);
          errmsg = g_strdup_printf ("%s: %s", GST_OBJECT_NAME (msg->src),
              error->message);
          g_clear_error (&error);
          rc = 2;
        }
        stop = TRUE;
        break;
      default:
        break;
    }
    gst_message_unref (msg);
    if (stop)
      break;
  }

  /* a GPU row whose frames reached the transport in system memory would
   * measure something else: fail it */
  if (rc == 0 && !consumer && mode->gpu) {
    GstCaps *caps = gst_pad_get_current_caps (pad);
    GstCapsFeatures *f = caps && gst_caps_get_size (caps) > 0 ?
        gst_caps_get_features (caps, 0) : NULL;

    if (!f || !gst_caps_features_contains (f, "memory:CUDAMemory")) {
      errmsg = g_strdup_printf ("the frames reached %s in system memory, "
          "not CUDA memory", GST_OBJECT_NAME (el));
      rc = 2;
    }
    gst_clear_caps (&caps);
  }

  /* --hold: the parent samples the device memory of both sides while they
   * still have everything allocated (pipeline PLAYING, ring mapped), then
   * writes <hold>.go.  After the last frame, so the figures are not
   * disturbed; bounded, so a parent that never looks costs seconds only. */
  if (rc == 0 && opt.hold && g_file_set_contents (opt.hold, "held\n", -1, NULL)) {
    gchar *go = g_strconcat (opt.hold, ".go", NULL);
    gint64 until = g_get_monotonic_time () + HOLD_TIMEOUT_US;

    while (!g_file_test (go, G_FILE_TEST_EXISTS)
        && g_get_monotonic_time () < until)
      g_usleep (1000);
    g_free (go);
  }

  /* the element's own figures (gpusharesink: frames copied, in place;
   * gpusharesrc: io, frames in place) */
  if (g_object_class_find_property (G_OBJECT_GET_CLASS (el), "stats")) {
    GstStructure *stats = NULL;

    g_object_get (el, "stats", &stats, NULL);
    if (stats) {
      gchar *str = gst_structure_to_string (stats);

      g_string_append_printf (report, "stats %s\n", str);
      g_free (str);
      gst_structure_free (stats);
    }
  }
  gst_element_set_state (s.pipeline, GST_STATE_NULL);

done:
  g_string_append_printf (report, "frames %d\nbad-keys %d\n", s.n, s.bad_keys);
  if (s.n >= opt.frames)
    g_string_append_printf (report, "cpu %" G_GINT64_FORMAT " %"
        G_GINT64_FORMAT "\n", s.cpu_first, s.cpu_last);
  for (i = 0; s.stamps && i < opt.frames; i++)
    if (s.stamps[i])
      g_string_append_printf (report, "t %d %" G_GINT64_FORMAT "\n", i,
          s.stamps[i]);
  if (errmsg) {
    g_strdelimit (errmsg, "\n", ' ');
    g_string_append_printf (report, "error %s\n", errmsg);
  }
  if (!g_file_set_contents (opt.stamps, report->str, report->len, &error)) {
    g_printerr ("bench %s: %s\n", role, error->message);
    g_clear_error (&error);
    rc = rc ? rc : 2;
  }
  g_string_free (report, TRUE);
  g_free (errmsg);
  if (gate_path)
    g_unlink (gate_path);
  g_free (gate_path);
  if (credit.fd >= 0)
    close (credit.fd);
  if (s.credit_fd >= 0) {
    close (s.credit_fd);
    g_unlink (credit.path);
  }
  g_free ((gchar *) credit.path);
  g_free (s.stamps);
  gst_clear_object (&pad);
  gst_clear_object (&el);
  gst_clear_object (&bus);
  gst_clear_object (&s.pipeline);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* the parent */

typedef struct
{
  gint n;
  gint bad_keys;
  gboolean have_cpu;
  gint64 cpu_first, cpu_last;
  gint64 *t;
  gchar *error;
  gchar *stats;
} SideResult;

typedef struct
{
  const BenchMode *mode;
  gint width, height;
  gboolean mps;                 /* run under the MPS daemon of --mps */
  gint detections;              /* --analytics: detections on every frame */
  gchar *skipped;               /* not run, and why */
  gchar *failed;                /* run, and what went wrong */
  gint runs, runs_ok;           /* --repeat */
  gdouble *v;                   /* each figure of each good run */
  gdouble fps;
  gdouble p50_us, p99_us;       /* < 0: no latency (one process) */
  gdouble cpu_producer_us, cpu_consumer_us;     /* per frame, < 0: none */
  gchar *stats;
  /* device memory in MiB as nvidia-smi lists it, sampled in the first good
   * run of a GPU row; < 0: not listed */
  gboolean want_mem;            /* this run: hold the children, sample */
  gboolean have_mem;
  gdouble mem_producer, mem_consumer, mem_mps_server;
} Row;

static void
side_result_clear (SideResult * r)
{
  g_free (r->t);
  g_free (r->error);
  g_free (r->stats);
}

static void
read_side (const gchar * path, SideResult * r)
{
  gchar *text = NULL, **lines, **l;

  r->t = g_new0 (gint64, opt.frames);
  if (!g_file_get_contents (path, &text, NULL, NULL)) {
    r->error = g_strdup ("no report");
    return;
  }
  lines = g_strsplit (text, "\n", -1);
  for (l = lines; *l; l++) {
    gint k;
    gint64 t;

    if (sscanf (*l, "t %d %" G_GINT64_FORMAT, &k, &t) == 2) {
      if (k >= 0 && k < opt.frames)
        r->t[k] = t;
    } else if (g_str_has_prefix (*l, "frames ")) {
      r->n = atoi (*l + 7);
    } else if (g_str_has_prefix (*l, "bad-keys ")) {
      r->bad_keys = atoi (*l + 9);
    } else if (sscanf (*l, "cpu %" G_GINT64_FORMAT " %" G_GINT64_FORMAT,
            &r->cpu_first, &r->cpu_last) == 2) {
      r->have_cpu = TRUE;
    } else if (g_str_has_prefix (*l, "error ")) {
      g_free (r->error);
      r->error = g_strdup (*l + 6);
    } else if (g_str_has_prefix (*l, "stats ")) {
      g_free (r->stats);
      r->stats = g_strdup (*l + 6);
    }
  }
  g_strfreev (lines);
  g_free (text);
}

/* the GPUs nvidia-smi lists, 0 without it */
gint
gpu_count (void)
{
  static gint count = -1;
  const gchar *argv[] = { "nvidia-smi", "-L", NULL };
  gchar *out = NULL, **l, **lines;
  gint status = 0;

  if (count >= 0)
    return count;
  count = 0;
  if (g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status, NULL)
      && g_spawn_check_wait_status (status, NULL)) {
    lines = g_strsplit (out, "\n", -1);
    for (l = lines; *l; l++)
      count += g_str_has_prefix (*l, "GPU ");
    g_strfreev (lines);
  }
  g_free (out);
  return count;
}

gchar *
missing_elements (const gchar * needs)
{
  gchar **names = g_strsplit (needs, " ", -1), **n;
  gchar *why = NULL;

  for (n = names; *n && !why; n++) {
    GstElementFactory *f;

    if (!**n)
      continue;
    f = gst_element_factory_find (*n);
    if (!f)
      why = g_strdup_printf ("%s not available", *n);
    gst_clear_object (&f);
  }
  g_strfreev (names);
  return why;
}

static gchar *
missing_requirement (const BenchMode * mode)
{
  gchar *why;

  if (mode->gpus > 0 && gpu_count () < mode->gpus)
    return g_strdup_printf ("needs %d GPUs, this host has %d", mode->gpus,
        gpu_count ());
  why = missing_elements (mode->needs);
  if (!why && mode->caps_factory) {
    GstElementFactory *f = gst_element_factory_find (mode->caps_factory);
    GstCaps *want = gst_caps_from_string (mode->caps);
    const GList *t;
    gboolean ok = FALSE;

    for (t = f ? gst_element_factory_get_static_pad_templates (f) : NULL;
        t; t = t->next) {
      GstStaticPadTemplate *tmpl = t->data;
      GstCaps *caps;

      if (tmpl->direction != GST_PAD_SINK)
        continue;
      caps = gst_static_pad_template_get_caps (tmpl);
      ok |= gst_caps_can_intersect (caps, want);
      gst_caps_unref (caps);
    }
    if (!ok)
      why = g_strdup_printf ("%s does not take %s", mode->caps_factory,
          mode->caps);
    gst_caps_unref (want);
    gst_clear_object (&f);
  }
  return why;
}

/* ------------------------------------------------------------------------ */
/* CUDA MPS */

/* --mps: one daemon of our own, with private pipe and log folders.  The
 * variables go to the children of MPS rows only, through their launcher:
 * the parent's own environment is never changed. */
typedef struct
{
  gchar *control;               /* nvidia-cuda-mps-control; NULL: none */
  gchar *pipe_dir, *log_dir;
  gchar *why_not;               /* MPS rows are skipped, and why */
  gboolean up;                  /* ours, started and not yet stopped */
  gint starts;                  /* times it came up */
  gboolean server_seen;         /* an MPS server ran during our rows */
  gboolean stop_failed;
} Mps;

static Mps mps;

enum
{
  MPS_CONTROL = 1 << 0,
  MPS_SERVER = 1 << 1,
};

/* which MPS processes run on this host, whoever started them */
static guint
mps_processes (void)
{
  GDir *d = g_dir_open ("/proc", 0, NULL);
  const gchar *name;
  guint found = 0;

  while (d && (name = g_dir_read_name (d))) {
    gchar *path, *cmdline = NULL;

    if (!g_ascii_isdigit (name[0]))
      continue;
    path = g_build_filename ("/proc", name, "cmdline", NULL);
    /* argv[0] is the first NUL-terminated string */
    if (g_file_get_contents (path, &cmdline, NULL, NULL)) {
      const gchar *base = strrchr (cmdline, '/');

      base = base ? base + 1 : cmdline;
      if (g_str_equal (base, "nvidia-cuda-mps-control"))
        found |= MPS_CONTROL;
      else if (g_str_equal (base, "nvidia-cuda-mps-server"))
        found |= MPS_SERVER;
    }
    g_free (cmdline);
    g_free (path);
  }
  if (d)
    g_dir_close (d);
  return found;
}

const gchar *
mps_why_not (void)
{
  return mps.why_not;
}

void
mps_set_env (GSubprocessLauncher * l)
{
  g_subprocess_launcher_setenv (l, "CUDA_MPS_PIPE_DIRECTORY", mps.pipe_dir,
      TRUE);
  g_subprocess_launcher_setenv (l, "CUDA_MPS_LOG_DIRECTORY", mps.log_dir, TRUE);
}

/* GSubprocess reaps its child from GLib's worker thread, so the identifier
 * going NULL says it is gone without a main loop here */
gboolean
running (GSubprocess * p)
{
  return p && g_subprocess_get_identifier (p) != NULL;
}

gboolean
wait_exit (GSubprocess * p, gint64 timeout_us)
{
  gint64 until = g_get_monotonic_time () + timeout_us;

  while (running (p) && g_get_monotonic_time () < until)
    g_usleep (10000);
  return !running (p);
}

/* whether MPS rows can run here at all; before the first round */
void
mps_prepare (void)
{
  GError *error = NULL;

  mps.control = g_find_program_in_path ("nvidia-cuda-mps-control");
  if (!mps.control) {
    mps.why_not = g_strdup ("nvidia-cuda-mps-control not in PATH");
    return;
  }
  /* a second daemon would not be ours to stop, nor would the rows without
   * MPS run without it */
  if (mps_processes ()) {
    mps.why_not = g_strdup ("an MPS daemon that gpushare-bench did not "
        "start is running");
    return;
  }
  mps.pipe_dir = g_dir_make_tmp ("gpushare-bench-mps-pipe-XXXXXX", &error);
  if (mps.pipe_dir)
    mps.log_dir = g_dir_make_tmp ("gpushare-bench-mps-log-XXXXXX", &error);
  if (!mps.log_dir) {
    mps.why_not = g_strdup_printf ("no folder for MPS: %s", error->message);
    g_clear_error (&error);
  }
}

/* echo quit | nvidia-cuda-mps-control, then wait until no MPS process is
 * left, so that the next rows really run without MPS */
void
mps_stop (void)
{
  GSubprocessLauncher *l;
  GSubprocess *p;
  gint64 until;

  if (!mps.up)
    return;
  mps.up = FALSE;
  l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE |
      G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  mps_set_env (l);
  p = g_subprocess_launcher_spawn (l, NULL, mps.control, NULL);
  if (p) {
    GOutputStream *in = g_subprocess_get_stdin_pipe (p);

    g_output_stream_write_all (in, "quit\n", 5, NULL, NULL, NULL);
    g_output_stream_close (in, NULL, NULL);
    if (!wait_exit (p, 10 * G_USEC_PER_SEC))
      g_subprocess_force_exit (p);
    g_subprocess_wait (p, NULL, NULL);
  }
  g_clear_object (&p);
  g_clear_object (&l);
  until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (mps_processes () && g_get_monotonic_time () < until)
    g_usleep (20000);
  if (mps_processes ()) {
    mps.stop_failed = TRUE;
    g_printerr ("gpushare-bench: an MPS process still runs 10 s after "
        "'quit'\n");
  }
}

static gchar *
last_log_line (const gchar * dir, const gchar * file)
{
  gchar *path = g_build_filename (dir, file, NULL), *text = NULL, *ret = NULL;

  if (g_file_get_contents (path, &text, NULL, NULL)) {
    gchar **lines = g_strsplit (g_strstrip (text), "\n", -1);
    guint n = g_strv_length (lines);

    if (n > 0)
      ret = g_strdup (lines[n - 1]);
    g_strfreev (lines);
  }
  g_free (text);
  g_free (path);
  return ret;
}

/* nvidia-cuda-mps-control -d; FALSE and why if the daemon did not come */
gboolean
mps_start (gchar ** why)
{
  GSubprocessLauncher *l;
  GSubprocess *p;
  GError *error = NULL;
  gint64 until;

  /* -d forks the daemon and returns.  Its output goes nowhere: no pipe of
   * ours may stay open in a daemon. */
  l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
      G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  mps_set_env (l);
  p = g_subprocess_launcher_spawn (l, &error, mps.control, "-d", NULL);
  g_clear_object (&l);
  /* from here on, every path out stops it */
  mps.up = TRUE;
  if (p && !wait_exit (p, 10 * G_USEC_PER_SEC))
    g_set_error (&error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
        "did not return in 10 s");
  if (p && !error)
    g_subprocess_wait_check (p, NULL, &error);
  g_clear_object (&p);
  until = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  while (!error && !(mps_processes () & MPS_CONTROL)
      && g_get_monotonic_time () < until)
    g_usleep (10000);
  if (!error && !(mps_processes () & MPS_CONTROL))
    g_set_error (&error, G_IO_ERROR, G_IO_ERROR_FAILED,
        "no control daemon after 5 s");
  if (error) {
    gchar *log = last_log_line (mps.log_dir, "control.log");

    *why = g_strdup_printf ("nvidia-cuda-mps-control -d: %s%s%s",
        error->message, log ? "; control.log: " : "", log ? log : "");
    g_free (log);
    g_clear_error (&error);
    mps_stop ();
    return FALSE;
  }
  mps.starts++;
  return TRUE;
}

static void
remove_dir (const gchar * path)
{
  GDir *d = path ? g_dir_open (path, 0, NULL) : NULL;
  const gchar *name;

  while (d && (name = g_dir_read_name (d))) {
    gchar *f = g_build_filename (path, name, NULL);

    g_unlink (f);
    g_free (f);
  }
  if (d)
    g_dir_close (d);
  if (path)
    g_rmdir (path);
}

void
mps_cleanup (void)
{
  mps_stop ();
  remove_dir (mps.pipe_dir);
  remove_dir (mps.log_dir);
  g_clear_pointer (&mps.pipe_dir, g_free);
  g_clear_pointer (&mps.log_dir, g_free);
  g_clear_pointer (&mps.control, g_free);
}

/* ------------------------------------------------------------------------ */
/* device memory */

/* nvidia-smi lists each process that holds a CUDA context with its device
 * memory.  Under MPS a client may be listed without its memory, or not at
 * all, and the server with what it holds for all of them: keep that too. */
static void
sample_gpu_memory (Row * row, const gchar * prod_pid, const gchar * cons_pid)
{
  const gchar *argv[] = { "nvidia-smi",
    "--query-compute-apps=pid,process_name,used_memory",
    "--format=csv,noheader,nounits", NULL
  };
  gchar *out = NULL, **lines, **l;
  gint status = 0;

  row->mem_producer = row->mem_consumer = row->mem_mps_server = -1;
  if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status, NULL)
      || !g_spawn_check_wait_status (status, NULL)) {
    g_free (out);
    return;
  }
  row->have_mem = TRUE;
  lines = g_strsplit (out, "\n", -1);
  for (l = lines; *l; l++) {
    gchar **f = g_strsplit (*l, ",", -1);
    guint n = g_strv_length (f);
    gdouble *sum = NULL;
    gdouble mib;
    gchar *end;

    if (n < 3) {
      g_strfreev (f);
      continue;
    }
    g_strstrip (f[0]);
    g_strstrip (f[n - 1]);
    mib = g_ascii_strtod (f[n - 1], &end);
    /* "[N/A]" where the driver does not say */
    if (end == f[n - 1] || mib < 0)
      mib = -1;
    if (strstr (*l, "nvidia-cuda-mps-server")) {
      sum = &row->mem_mps_server;
      mps.server_seen = TRUE;
    } else if (prod_pid && g_str_equal (f[0], prod_pid)) {
      sum = &row->mem_producer;
    } else if (cons_pid && g_str_equal (f[0], cons_pid)) {
      sum = &row->mem_consumer;
    }
    if (sum && mib >= 0)
      *sum = MAX (*sum, 0) + mib;
    g_strfreev (f);
  }
  g_strfreev (lines);
  g_free (out);
}

/* ------------------------------------------------------------------------ */
/* one run of one row */

/* SIGINT, SIGTERM, SIGHUP in the parent: end the run in flight, stop the
 * MPS daemon, print what there is */
volatile sig_atomic_t interrupted;

void
on_signal (int sig)
{
  interrupted = sig;
}

static GSubprocess *
spawn (const gchar * self, const gchar * role, const Row * row,
    const gchar * sock, const gchar * stamps, const gchar * hold,
    GError ** error)
{
  GSubprocessLauncher *l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  GSubprocess *p;

  g_ptr_array_add (argv, g_strdup (self));
  g_ptr_array_add (argv, g_strdup (role));
  g_ptr_array_add (argv, g_strdup ("--mode"));
  g_ptr_array_add (argv, g_strdup (row->mode->name));
  g_ptr_array_add (argv, g_strdup ("--socket"));
  g_ptr_array_add (argv, g_strdup (sock));
  g_ptr_array_add (argv, g_strdup ("--stamps"));
  g_ptr_array_add (argv, g_strdup (stamps));
  g_ptr_array_add (argv, g_strdup_printf ("--frames=%d", opt.frames));
  g_ptr_array_add (argv, g_strdup_printf ("--ring=%d", opt.ring));
  g_ptr_array_add (argv, g_strdup_printf ("--pace-us=%d", opt.pace_us));
  g_ptr_array_add (argv, g_strdup_printf ("--analytics=%d", row->detections));
  if (row->detections > 0 && opt.mask)
    g_ptr_array_add (argv, g_strdup ("--mask"));
  g_ptr_array_add (argv, g_strdup_printf ("--timeout=%d", opt.timeout_s));
  g_ptr_array_add (argv, g_strdup_printf ("--width=%d", row->width));
  g_ptr_array_add (argv, g_strdup_printf ("--height=%d", row->height));
  if (hold) {
    g_ptr_array_add (argv, g_strdup ("--hold"));
    g_ptr_array_add (argv, g_strdup (hold));
  }
  g_ptr_array_add (argv, NULL);
  if (row->mps)
    mps_set_env (l);
  p = g_subprocess_launcher_spawnv (l, (const gchar * const *) argv->pdata,
      error);
  g_ptr_array_unref (argv);
  g_object_unref (l);
  return p;
}

gint
percentile_index (gint n, gint q)
{
  /* nearest rank */
  gint i = (n * q + 99) / 100 - 1;

  return CLAMP (i, 0, n - 1);
}

gint
cmp_gint64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

  return x < y ? -1 : x > y;
}

/* let a child that holds, or will, go on: see run_side () */
static void
release_hold (const gchar * hold)
{
  gchar *go = g_strconcat (hold, ".go", NULL);

  g_file_set_contents (go, "go\n", -1, NULL);
  g_free (go);
}

static void
remove_hold (const gchar * hold)
{
  gchar *go = g_strconcat (hold, ".go", NULL);

  g_unlink (hold);
  g_unlink (go);
  g_free (go);
}

static void
run_row (const gchar * self, Row * row)
{
  const BenchMode *mode = row->mode;
  gboolean two = mode->consumer != NULL;
  gchar *dir, *sock, *pfile, *cfile, *phold = NULL, *chold = NULL;
  gchar *prod_pid = NULL, *cons_pid = NULL;
  gboolean sampled = FALSE;
  GSubprocess *prod = NULL, *cons = NULL;
  SideResult pr = { 0, }, cr = { 0, };
  SideResult *last;
  GError *error = NULL;
  gint64 deadline, first = 0, end = 0;
  gint64 *lat;
  gint i, n_lat = 0, n_seen = 0;

  row->p50_us = row->p99_us = -1;
  row->cpu_producer_us = row->cpu_consumer_us = -1;

  dir = g_dir_make_tmp ("gpushare-bench-XXXXXX", &error);
  if (!dir) {
    row->failed = g_strdup (error->message);
    g_clear_error (&error);
    return;
  }
  sock = g_build_filename (dir, "bench.sock", NULL);
  pfile = g_build_filename (dir, "producer.txt", NULL);
  cfile = g_build_filename (dir, "consumer.txt", NULL);
  if (row->want_mem) {
    phold = g_build_filename (dir, "producer.hold", NULL);
    chold = g_build_filename (dir, "consumer.hold", NULL);
  }
  deadline = g_get_monotonic_time () + (gint64) opt.timeout_s * G_USEC_PER_SEC;

  /* producer first: shmsrc does not wait for its socket to appear */
  prod = spawn (self, two ? "producer" : "single", row, sock, pfile, phold,
      &error);
  prod_pid = prod ? g_strdup (g_subprocess_get_identifier (prod)) : NULL;
  if (prod && two) {
    while (running (prod) && !g_file_test (sock, G_FILE_TEST_EXISTS)
        && g_get_monotonic_time () < deadline && !interrupted)
      g_usleep (2000);
    if (g_file_test (sock, G_FILE_TEST_EXISTS) && !interrupted)
      cons = spawn (self, "consumer", row, sock, cfile, chold, &error);
    cons_pid = cons ? g_strdup (g_subprocess_get_identifier (cons)) : NULL;
  }
  while ((running (prod) || running (cons))
      && g_get_monotonic_time () < deadline && !interrupted) {
    /* Sample when the last side holds after its last frame (or is gone),
     * then let both go.  The consumer, not both: a producer may only see
     * EOS once the consumer lets go of its last buffer (shmsink waits for
     * every block back, and fakesink keeps the last one), and until its
     * own hold it has freed nothing either.  nvidia-smi's time is not the
     * run's. */
    if (phold && !sampled && (two ? !running (cons)
            || g_file_test (chold, G_FILE_TEST_EXISTS) : !running (prod)
            || g_file_test (phold, G_FILE_TEST_EXISTS))) {
      gint64 t0 = g_get_monotonic_time ();

      sample_gpu_memory (row, prod_pid, cons_pid);
      release_hold (phold);
      release_hold (chold);
      sampled = TRUE;
      deadline += g_get_monotonic_time () - t0;
    }
    g_usleep (5000);
  }
  if (interrupted && (running (prod) || running (cons))) {
    row->failed = g_strdup_printf ("interrupted by signal %d",
        (gint) interrupted);
    if (prod)
      g_subprocess_force_exit (prod);
    if (cons)
      g_subprocess_force_exit (cons);
  } else if (running (prod) || running (cons)) {
    row->failed = g_strdup_printf ("timeout after %d s, %s%s%s still "
        "running", opt.timeout_s, running (prod) ? "producer" : "",
        running (prod) && running (cons) ? " and " : "",
        running (cons) ? "consumer" : "");
    if (prod)
      g_subprocess_force_exit (prod);
    if (cons)
      g_subprocess_force_exit (cons);
  }
  if (prod)
    g_subprocess_wait (prod, NULL, NULL);
  if (cons)
    g_subprocess_wait (cons, NULL, NULL);

  read_side (pfile, &pr);
  if (two)
    read_side (cfile, &cr);
  last = two ? &cr : &pr;
  row->stats = pr.stats || cr.stats ? g_strdup_printf ("%s%s%s",
      pr.stats ? pr.stats : "", pr.stats && cr.stats ? "; " : "",
      cr.stats ? cr.stats : "") : NULL;

  if (!row->failed && error)
    row->failed = g_strdup (error->message);
  if (!row->failed && (pr.error || (two && cr.error)))
    row->failed = g_strdup_printf ("%s%s", pr.error ? "producer: " :
        "consumer: ", pr.error ? pr.error : cr.error);
  if (!row->failed && (prod == NULL || (two && cons == NULL)))
    row->failed = g_strdup ("could not start");
  if (!row->failed && row->detections > 0) {
    /* the row measures carrying them: every frame's must have gone across
     * (the consumer added them; the producer's metas-not-carried also
     * counts metas of the GPU pipeline's own that never travel) */
    const gchar *got = cr.stats ? strstr (cr.stats,
        "metas-received=(guint64)") : NULL;
    guint64 n = got ? g_ascii_strtoull (got + 24, NULL, 10) : 0;

    if (!got)
      row->failed = g_strdup ("no metas counted: not a gpushare consumer");
    else if (n < (guint64) opt.frames)
      row->failed = g_strdup_printf ("%" G_GUINT64_FORMAT " of %d frames' "
          "analytics metas carried", n, opt.frames);
  }
  if (!row->failed && row->detections > 0 && opt.mask && !row->mode->gpu) {
    /* and the masks with them: a system-memory pipeline has no metas of
     * its own that the producer could leave out */
    const gchar *left = pr.stats ? strstr (pr.stats,
        "metas-not-carried=(guint64)") : NULL;
    guint64 n = left ? g_ascii_strtoull (left + 27, NULL, 10) : 0;

    if (n > 0)
      row->failed = g_strdup_printf ("%" G_GUINT64_FORMAT " masks not "
          "carried", n);
  }
  if (!row->failed && (pr.bad_keys || cr.bad_keys))
    row->failed = g_strdup_printf ("%d frames with a bad offset",
        pr.bad_keys + cr.bad_keys);
  if (!row->failed && last->n != opt.frames)
    row->failed = g_strdup_printf ("%d of %d frames arrived", last->n,
        opt.frames);

  /* throughput between the last side's first and last frame */
  for (i = 0; i < opt.frames; i++) {
    if (!last->t[i])
      continue;
    first = first ? MIN (first, last->t[i]) : last->t[i];
    end = MAX (end, last->t[i]);
    n_seen++;
  }
  if (n_seen > 1 && end > first)
    row->fps = (n_seen - 1) * 1e9 / (end - first);

  if (two) {
    lat = g_new (gint64, opt.frames);
    for (i = 0; i < opt.frames; i++)
      if (pr.t[i] && cr.t[i])
        lat[n_lat++] = cr.t[i] - pr.t[i];
    if (n_lat > 0) {
      qsort (lat, n_lat, sizeof (gint64), cmp_gint64);
      row->p50_us = lat[percentile_index (n_lat, 50)] / 1e3;
      row->p99_us = lat[percentile_index (n_lat, 99)] / 1e3;
    }
    g_free (lat);
  }
  if (opt.frames > 1 && pr.have_cpu)
    row->cpu_producer_us = (pr.cpu_last - pr.cpu_first) / 1e3 /
        (opt.frames - 1);
  if (opt.frames > 1 && two && cr.have_cpu)
    row->cpu_consumer_us = (cr.cpu_last - cr.cpu_first) / 1e3 /
        (opt.frames - 1);

  side_result_clear (&pr);
  side_result_clear (&cr);
  g_clear_error (&error);
  g_clear_object (&prod);
  g_clear_object (&cons);
  g_unlink (pfile);
  g_unlink (cfile);
  g_unlink (sock);
  if (phold) {
    remove_hold (phold);
    remove_hold (chold);
  }
  g_rmdir (dir);
  g_free (pfile);
  g_free (cfile);
  g_free (phold);
  g_free (chold);
  g_free (prod_pid);
  g_free (cons_pid);
  g_free (sock);
  g_free (dir);
}

static gint
cmp_gdouble (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y;
}

gdouble
median (gdouble * v, gint n)
{
  qsort (v, n, sizeof (gdouble), cmp_gdouble);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------------------ */
/* host facts */

static gchar *
first_line_with (const gchar * path, const gchar * key)
{
  gchar *text = NULL, **lines, **l, *ret = NULL;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return NULL;
  lines = g_strsplit (text, "\n", -1);
  for (l = lines; *l && !ret; l++)
    if (g_str_has_prefix (*l, key)) {
      const gchar *v = strchr (*l, key[strlen (key) - 1] == '=' ? '=' : ':');

      ret = g_strstrip (g_strdup (v ? v + 1 : *l));
    }
  g_strfreev (lines);
  g_free (text);
  if (ret && ret[0] == '"') {
    gchar *u = g_shell_unquote (ret, NULL);

    if (u) {
      g_free (ret);
      ret = u;
    }
  }
  return ret;
}

/* nvidia-smi's banner: "... Driver Version: 580.159.04  CUDA Version: 13.0"
 * (the highest CUDA version the driver supports); the query interface has
 * no field for it */
static gchar *
cuda_version (void)
{
  const gchar *argv[] = { "nvidia-smi", NULL };
  gchar *out = NULL, *ret = NULL;
  const gchar *at;
  gint status = 0;

  if (g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status, NULL)
      && out && (at = strstr (out, "CUDA Version:"))) {
    at += strlen ("CUDA Version:");
    while (*at == ' ')
      at++;
    ret = g_strndup (at, strcspn (at, " |\n"));
  }
  g_free (out);
  return ret;
}

static void
print_gpus (const gchar * p)
{
  const gchar *argv[] = { "nvidia-smi",
    "--query-gpu=name,driver_version,memory.total,compute_mode",
    "--format=csv,noheader", NULL
  };
  gchar *out = NULL, **lines, **l, *cuda = cuda_version ();
  gint status = 0, n = 0;

  if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status, NULL)
      || !g_spawn_check_wait_status (status, NULL)) {
    g_print ("%sGPU: nvidia-smi failed\n", p);
    g_free (out);
    g_free (cuda);
    return;
  }
  lines = g_strsplit (g_strstrip (out), "\n", -1);
  for (l = lines; *l; l++) {
    gchar **f = g_strsplit (*l, ", ", -1);

    if (g_strv_length (f) == 4)
      g_print ("%sGPU %d: %s, driver %s, CUDA %s (nvidia-smi), %s, "
          "compute mode %s\n", p, n, f[0], f[1], cuda ? cuda : "?", f[2], f[3]);
    else
      g_print ("%sGPU %d: %s, CUDA %s (nvidia-smi)\n", p, n, *l,
          cuda ? cuda : "?");
    g_strfreev (f);
    n++;
  }
  if (n == 0)
    g_print ("%sGPU: none listed by nvidia-smi\n", p);
  g_strfreev (lines);
  g_free (out);
  g_free (cuda);
}

/* the host's own wake-up tail, measured before paced rows: the floor
 * under the p99 of any handoff that wakes its consumer; < 0: not known */
static gint64 host_wake_p99 = -1;

/* a process asleep on a futex, woken once a pace, as the frame lane's
 * bell wakes a consumer: how late it runs (p50, p90, p99, max) */
static void
print_host_wakes (const gchar * p, guint pace_us)
{
  /* about a second, 200 at least */
  guint n = CLAMP (1000000 / MAX (pace_us, 1), 200, 1000);
  gint64 *late = g_new (gint64, n);

  if (gpushare_wake_probe (GPUSHARE_WAKE_FUTEX, n, pace_us, late)) {
    host_wake_p99 = late[n * 99 / 100];
    g_print ("%shost wake-ups (a process asleep on a futex, woken %u times, "
        "one every %u us; us late): p50 %" G_GINT64_FORMAT ", p90 %"
        G_GINT64_FORMAT ", p99 %" G_GINT64_FORMAT ", max %" G_GINT64_FORMAT
        ": the floor under the p99 of a handoff that wakes its consumer\n",
        p, n, pace_us, late[n / 2], late[n * 9 / 10], host_wake_p99,
        late[n - 1]);
  } else {
    g_print ("%shost wake-ups: not measured (no child process)\n", p);
  }
  g_free (late);
}

/* what one host memcpy of a frame costs here, for scale: every row copies
 * the frame once (the source or the sink does) or not at all.  The median
 * of single copies between two warm buffers, so a best case. */
static gdouble
memcpy_us (gsize size)
{
  guint8 *a = g_malloc (size), *b = g_malloc (size);
  gdouble t[31];
  guint i;

  memset (a, 1, size);
  memset (b, 2, size);
  for (i = 0; i < 3; i++)
    memcpy (b, a, size);
  for (i = 0; i < G_N_ELEMENTS (t); i++) {
    gint64 t0 = now_ns ();

    a[i] = (guint8) i;
    memcpy (b, a, size);
    t[i] = (now_ns () - t0) / 1e3;
  }
  /* keep the copies */
  if (b[size / 2] == 42)
    g_printerr (" ");
  g_free (a);
  g_free (b);
  return median (t, G_N_ELEMENTS (t));
}

static void
print_host (gint n_sizes, gint * ws, gint * hs)
{
  gchar *os = first_line_with ("/etc/os-release", "PRETTY_NAME=");
  gchar *cpu = first_line_with ("/proc/cpuinfo", "model name");
  gchar *kernel = NULL, *smi, *gst = gst_version_string ();
  const gchar *p = opt.markdown ? "- " : "";
  gint i;

  g_file_get_contents ("/proc/sys/kernel/osrelease", &kernel, NULL, NULL);
  if (kernel)
    g_strstrip (kernel);
  g_print ("%shost: %s, kernel %s, %u CPUs: %s\n", p, os ? os : "?",
      kernel ? kernel : "?", g_get_num_processors (), cpu ? cpu : "?");
  g_print ("%s%s\n", p, gst);
  smi = g_find_program_in_path ("nvidia-smi");
  if (smi)
    print_gpus (p);
  else
    g_print ("%sGPU: none (no nvidia-smi in PATH)\n", p);
  if (opt.mps)
    g_print ("%sCUDA MPS (--mps): %s\n", p, mps.why_not ? mps.why_not :
        "nvidia-cuda-mps-control found: GPU rows run again under a daemon "
        "of our own, started before and stopped after them in every round");
  for (i = 0; i < n_sizes; i++) {
    gsize size = frame_size (ws[i], hs[i]);
    gdouble us = memcpy_us (size);

    g_print ("%shost memcpy of one %dx%d NV12 frame (%" G_GSIZE_FORMAT
        " bytes): %.0f us (%.1f GB/s)\n", p, ws[i], hs[i], size, us,
        size / us / 1e3);
  }
  g_print ("%s%d frames per run, %d runs per row (medians), ring of %d\n", p,
      opt.frames, opt.repeat, opt.ring);
  if (opt.pace_us > 0) {
    g_print ("%spaced: at most one frame every %d us (identity sleep-time in "
        "front of the transport): the latency columns are the handoff "
        "alone, fps is the pace, not the transport's\n", p, opt.pace_us);
    print_host_wakes (p, opt.pace_us);
  }
  g_free (os);
  g_free (cpu);
  g_free (kernel);
  g_free (smi);
  g_free (gst);
}

/* ------------------------------------------------------------------------ */
/* the table */

static gchar *
fmt_num (gdouble v)
{
  return v < 0 ? g_strdup ("-") : g_strdup_printf ("%.0f", v);
}

static gchar *
row_name (const Row * r)
{
  gchar *dets = r->detections ? g_strdup_printf (" +%d detections%s",
      r->detections, opt.mask ? " and a mask" : "") : g_strdup ("");
  gchar *name = g_strdup_printf ("%s%s%s", r->mode->name, dets,
      r->mps ? " +MPS" : "");

  g_free (dets);
  return name;
}

/* "producer/consumer" in MiB, one figure for one process, or the MPS
 * server's where nvidia-smi lists none of the clients */
static gchar *
fmt_mem (const Row * r, const gchar ** note)
{
  gboolean two = r->mode->consumer != NULL;
  gchar *p, *c, *ret;

  *note = NULL;
  if (!r->mode->gpu)
    return g_strdup ("");
  if (!r->have_mem)
    return g_strdup ("-");
  if (r->mem_producer < 0 && (!two || r->mem_consumer < 0)) {
    if (r->mem_mps_server < 0)
      return g_strdup ("-");
    *note = "nvidia-smi listed no memory for the clients: the figure is "
        "the MPS server's";
    return g_strdup_printf ("server %.0f", r->mem_mps_server);
  }
  p = fmt_num (r->mem_producer);
  if (!two)
    return p;
  c = fmt_num (r->mem_consumer);
  ret = g_strdup_printf ("%s/%s", p, c);
  g_free (p);
  g_free (c);
  return ret;
}

static void
print_header (const gchar * title, const gchar * detail)
{
  if (opt.markdown) {
    g_print ("\n**%s**: %s\n", title, detail);
    g_print ("\n| mode | size | runs ok | fps | latency p50 (us) | "
        "latency p99 (us) | producer CPU (us/frame) | "
        "consumer CPU (us/frame) | GPU memory (MiB, producer/consumer) | "
        "notes |\n");
    g_print ("|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  } else {
    g_print ("\n== %s: %s ==\n", title, detail);
    g_print ("%-28s %-10s %5s %9s %9s %9s %10s %10s %12s\n", "mode", "size",
        "runs", "fps", "p50 us", "p99 us", "prod us/f", "cons us/f",
        "GPU MiB p/c");
  }
}

static void
print_row (const Row * r)
{
  gchar *name = row_name (r);
  gchar *size = g_strdup_printf ("%dx%d", r->width, r->height);
  gchar *runs = g_strdup_printf ("%d/%d", r->runs_ok, r->runs);
  gchar *fps, *p50, *p99, *cp, *cc, *mem, *failed = NULL, *note;
  const gchar *mem_note;

  if (r->skipped) {
    if (opt.markdown)
      g_print ("| %s | %s | | | | | | | | skipped: %s |\n", name, size,
          r->skipped);
    else
      g_print ("%-28s %-10s skipped: %s\n", name, size, r->skipped);
    g_free (name);
    g_free (size);
    g_free (runs);
    return;
  }
  if (r->failed)
    failed = g_strdup_printf ("%d of %d runs failed, last: %s",
        r->runs - r->runs_ok, r->runs, r->failed);
  else if (r->runs == 0)
    failed = g_strdup ("not run: stopped early");
  fps = fmt_num (r->runs_ok && r->fps > 0 ? r->fps : -1);
  p50 = fmt_num (r->runs_ok ? r->p50_us : -1);
  p99 = fmt_num (r->runs_ok ? r->p99_us : -1);
  cp = fmt_num (r->runs_ok ? r->cpu_producer_us : -1);
  cc = fmt_num (r->runs_ok ? r->cpu_consumer_us : -1);
  mem = fmt_mem (r, &mem_note);
  note = g_strjoin ("; ", failed ? failed : mem_note, failed ? mem_note :
      NULL, NULL);
  if (opt.markdown)
    g_print ("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
        size, runs, fps, p50, p99, cp, cc, mem, note);
  else if (!*mem && !*note)
    g_print ("%-28s %-10s %5s %9s %9s %9s %10s %10s\n", name, size, runs,
        fps, p50, p99, cp, cc);
  else
    g_print ("%-28s %-10s %5s %9s %9s %9s %10s %10s %12s%s%s\n", name, size,
        runs, fps, p50, p99, cp, cc, mem, *note ? "  " : "", note);
  if (opt.verbose && r->stats)
    g_print ("    stats: %s\n", r->stats);
  g_free (name);
  g_free (size);
  g_free (runs);
  g_free (fps);
  g_free (p50);
  g_free (p99);
  g_free (cp);
  g_free (cc);
  g_free (mem);
  g_free (failed);
  g_free (note);
}

/* --repeat: every figure is the median of the runs that completed.  Two
 * processes on a small machine make single runs noisy, so the repeats go
 * round the whole table rather than row by row: a slow spell of the host
 * then weighs on every row alike.  A transport that hangs now and then
 * (shmsink / shmsrc does) still gets its figures, with its failures
 * counted beside them. */
static void
add_run (Row * row, Row * one)
{
  gint n = row->runs_ok;

  if (one->skipped) {
    row->skipped = one->skipped;
    return;
  }
  row->runs++;
  if (one->stats) {
    g_free (row->stats);
    row->stats = one->stats;
  }
  /* a child holds for the sample only after all its frames went well */
  if (one->have_mem && !row->have_mem) {
    row->have_mem = TRUE;
    row->mem_producer = one->mem_producer;
    row->mem_consumer = one->mem_consumer;
    row->mem_mps_server = one->mem_mps_server;
  }
  if (one->failed) {
    g_free (row->failed);
    row->failed = one->failed;
    return;
  }
  if (!row->v)
    row->v = g_new0 (gdouble, 5 * opt.repeat);
  row->v[0 * opt.repeat + n] = one->fps;
  row->v[1 * opt.repeat + n] = one->p50_us;
  row->v[2 * opt.repeat + n] = one->p99_us;
  row->v[3 * opt.repeat + n] = one->cpu_producer_us;
  row->v[4 * opt.repeat + n] = one->cpu_consumer_us;
  row->runs_ok++;
}

static void
finish_row (Row * row)
{
  gint n = row->runs_ok;

  if (n == 0)
    return;
  row->fps = median (row->v, n);
  row->p50_us = median (row->v + opt.repeat, n);
  row->p99_us = median (row->v + 2 * opt.repeat, n);
  row->cpu_producer_us = median (row->v + 3 * opt.repeat, n);
  row->cpu_consumer_us = median (row->v + 4 * opt.repeat, n);
}

/* ------------------------------------------------------------------------ */
/* --targets */

/* the copy modes of GStreamer's CUDA IPC, and every mode of it */
static const gchar *const cudaipc_copy[] = {
  "cudaipc-legacy-copy", "cudaipc-mmap-copy", NULL,
};

static const gchar *const cudaipc_all[] = {
  "cudaipc-legacy-copy", "cudaipc-legacy-import", "cudaipc-mmap-copy",
  "cudaipc-mmap-import", NULL,
};

/* the gpushare modes whose consumer pushes the slot itself (1.24+) */
static const gchar *const import_modes[] = {
  "gpushare-cuda", "gpushare-cuda-semaphore", "gpushare-cuda-ahead",
  "gpushare-cuda-semaphore-ahead", NULL,
};

static const Row *
find_row (const Row * rows, gint n, const gchar * name, gint w, gint h,
    gboolean with_mps)
{
  gint k;

  for (k = 0; k < n; k++)
    if (g_str_equal (rows[k].mode->name, name) && rows[k].width == w
        && rows[k].height == h && rows[k].mps == with_mps
        && rows[k].detections == 0)
      return &rows[k];
  return NULL;
}

/* NULL if the row has a figure to read, else why not */
static gchar *
unusable (const Row * r, const gchar * mode, gboolean with_mps)
{
  const gchar *tag = with_mps ? " +MPS" : "";

  if (!r)
    return g_strdup_printf ("%s%s not run (not in --modes)", mode, tag);
  if (r->skipped)
    return g_strdup_printf ("%s%s skipped (%s)", mode, tag, r->skipped);
  if (r->runs_ok == 0 || r->fps <= 0)
    return g_strdup_printf ("%s%s had no good run", mode, tag);
  return NULL;
}

static void
print_target (const gchar * target, const gchar * mode, gboolean with_mps,
    gint w, gint h, const gchar * figure, const gchar * result)
{
  gchar *name = g_strdup_printf ("%s%s", mode, with_mps ? " +MPS" : "");
  gchar *size = g_strdup_printf ("%dx%d", w, h);

  if (opt.markdown)
    g_print ("| %s | %s | %s | %s | %s |\n", target, name, size, figure,
        result);
  else
    g_print ("  %-34s %-28s %-10s %-40s %s\n", target, name, size, figure,
        result);
  g_free (size);
  g_free (name);
}

/* the fastest usable row of names; NULL and why (every reason) if none */
static const Row *
fastest_of (const Row * rows, gint n, const gchar * const *names, gint w,
    gint h, gboolean with_mps, gchar ** why)
{
  const Row *best = NULL;
  GString *reasons = g_string_new (NULL);

  for (; *names; names++) {
    const Row *r = find_row (rows, n, *names, w, h, with_mps);
    gchar *no = unusable (r, *names, with_mps);

    if (no) {
      g_string_append_printf (reasons, "%s%s", reasons->len ? "; " : "", no);
      g_free (no);
    } else if (!best || r->fps > best->fps) {
      best = r;
    }
  }
  *why = best ? NULL : g_strdup (reasons->str);
  g_string_free (reasons, TRUE);
  return best;
}

/* mode's fps against the fastest of bases: met at goal times it or more */
static void
target_ratio (const Row * rows, gint n, const gchar * target,
    const gchar * mode, const gchar * const *bases, gint w, gint h,
    gboolean with_mps, gdouble goal)
{
  const Row *a = find_row (rows, n, mode, w, h, with_mps);
  gchar *why_a = unusable (a, mode, with_mps), *why_b = NULL;
  const Row *b = fastest_of (rows, n, bases, w, h, with_mps, &why_b);
  gchar *figure, *result;

  if (why_a || why_b) {
    figure = g_strdup ("-");
    result = g_strdup_printf ("not measured: %s", why_a ? why_a : why_b);
  } else {
    gdouble ratio = a->fps / b->fps;

    figure = g_strdup_printf ("%.2fx (%.0f / %.0f fps, %s)", ratio, a->fps,
        b->fps, b->mode->name);
    result = ratio >= goal ? g_strdup ("met") :
        g_strdup_printf ("not met: %.0f%% short", (1 - ratio / goal) * 100);
  }
  print_target (target, mode, with_mps, w, h, figure, result);
  g_free (why_a);
  g_free (why_b);
  g_free (figure);
  g_free (result);
}

static void
target_latency (const Row * rows, gint n, const gchar * mode, gint w, gint h,
    gboolean with_mps)
{
  const Row *a = find_row (rows, n, mode, w, h, with_mps);
  gchar *why = unusable (a, mode, with_mps);
  gchar *figure, *result;

  if (!why && a->p50_us < 0)
    why = g_strdup ("no latency");
  if (why) {
    figure = g_strdup ("-");
    result = g_strdup_printf ("not measured: %s", why);
  } else {
    figure = g_strdup_printf ("p50 %.1f us (p99 %.1f)", a->p50_us, a->p99_us);
    result = a->p50_us <= 50 && a->p99_us <= 150 ? g_strdup ("met") :
        a->p99_us > 150 && host_wake_p99 > 150 ?
        g_strdup_printf ("not met: p50 %.0f us over, p99 %.0f us over; "
        "this host's own wake-up p99 is %" G_GINT64_FORMAT " us",
        MAX (a->p50_us - 50, 0), a->p99_us - 150, host_wake_p99) :
        g_strdup_printf ("not met: p50 %.0f us over, p99 %.0f us over",
        MAX (a->p50_us - 50, 0), MAX (a->p99_us - 150, 0));
  }
  print_target ("paced latency p50 <= 50 us, p99 <= 150 us", mode,
      with_mps, w, h, figure, result);
  g_free (why);
  g_free (figure);
  g_free (result);
}

/* MiB that a frame of w x h NV12 takes in a VMM slot (2 MiB granules) */
static gdouble
slot_mib (gint w, gint h)
{
  gdouble bytes = (gdouble) w * h * 3 / 2;
  gdouble granule = 2.0 * 1024 * 1024;

  return ((guint64) ((bytes + granule - 1) / granule)) * 2;
}

/* device memory of one side of mode against one-process-cuda's plus
 * extra_mib (said in what) */
static void
target_memory (const Row * rows, gint n, const gchar * mode,
    gboolean producer, gint w, gint h, gdouble extra_mib, const gchar * what)
{
  const Row *a = find_row (rows, n, mode, w, h, FALSE);
  const Row *one = find_row (rows, n, "one-process-cuda", w, h, FALSE);
  gchar *why = unusable (a, mode, FALSE);
  gchar *target = g_strdup_printf ("GPU memory of the %s",
      producer ? "producer" : "consumer");
  gchar *figure, *result;
  gdouble got = a ? (producer ? a->mem_producer : a->mem_consumer) : -1;

  if (!why)
    why = unusable (one, "one-process-cuda", FALSE);
  if (!why && (!a->have_mem || got < 0 || !one->have_mem
          || one->mem_producer < 0))
    why = g_strdup ("nvidia-smi listed no figure");
  if (why) {
    figure = g_strdup ("-");
    result = g_strdup_printf ("not measured: %s", why);
  } else {
    gdouble limit = one->mem_producer + extra_mib;

    figure = g_strdup_printf ("%.0f MiB <= %.0f + %.0f (%s)", got,
        one->mem_producer, extra_mib, what);
    result = got <= limit ? g_strdup ("met") :
        g_strdup_printf ("not met: %.0f MiB over", got - limit);
  }
  print_target (target, mode, FALSE, w, h, figure, result);
  g_free (target);
  g_free (why);
  g_free (figure);
  g_free (result);
}

static void
print_targets (const Row * rows, gint n, gint n_sizes, const gint * ws,
    const gint * hs)
{
  const gchar *const shm[] = { "cuda-shm", NULL };
  const gchar *const shm_nopool[] = { "shm-nopool", NULL };
  gint b, i, m;

  if (opt.markdown) {
    g_print ("\n**Targets** (same GPU, each block on its own, with or "
        "without MPS): at full speed, gpushare-cuda at least as fast as the "
        "fastest cudaipc mode and gpushare-cuda-copy at least 1.5x the "
        "fastest cudaipc copy mode, at 4K; without MPS, gpushare-cuda at "
        "least 10x cuda-shm at 4K; paced (--pace-us), latency p50 at most "
        "50 us and p99 at most 150 us in the import modes; without MPS, device memory of each "
        "gpushare process at most one-process-cuda's plus the ring (plus "
        "the output pool in copy mode); gpushare-sysmem-nopool at least as "
        "fast as shm-nopool.\n\n");
    g_print ("| target | mode | size | figure | result |\n");
    g_print ("|---|---|---|---|---|\n");
  } else {
    g_print ("\nTargets (each block on its own, with or without MPS):\n");
  }
  for (b = 0; b <= (opt.mps ? 1 : 0); b++) {
    for (i = 0; i < n_sizes; i++) {
      if (opt.pace_us > 0) {
        for (m = 0; import_modes[m]; m++)
          target_latency (rows, n, import_modes[m], ws[i], hs[i], b);
        continue;
      }
      if (ws[i] != 3840 || hs[i] != 2160)
        continue;
      target_ratio (rows, n, "fps >= fastest cudaipc", "gpushare-cuda",
          cudaipc_all, ws[i], hs[i], b, 1.0);
      target_ratio (rows, n, "copy fps >= 1.5x cudaipc copy",
          "gpushare-cuda-copy", cudaipc_copy, ws[i], hs[i], b, 1.5);
      if (!b)
        target_ratio (rows, n, "fps >= 10x cuda-shm", "gpushare-cuda", shm,
            ws[i], hs[i], b, 10);
    }
  }
  for (i = 0; i < n_sizes; i++) {
    gdouble slot = slot_mib (ws[i], hs[i]);
    gdouble ring = slot * opt.ring + 2;
    gchar *ring_what = g_strdup_printf ("the ring: %d slots of %.0f MiB and "
        "2 MiB of synchronisation words", opt.ring, slot);
    gchar *pool_what = g_strdup_printf ("its output pool: 2 frames of "
        "%.0f MiB", slot);

    target_memory (rows, n, "gpushare-cuda", TRUE, ws[i], hs[i], ring,
        ring_what);
    target_memory (rows, n, "gpushare-cuda", FALSE, ws[i], hs[i], 0,
        "nothing: the buffers are the slots");
    target_memory (rows, n, "gpushare-cuda-copy", FALSE, ws[i], hs[i],
        2 * slot, pool_what);
    g_free (ring_what);
    g_free (pool_what);
    if (opt.pace_us <= 0)
      target_ratio (rows, n, "fps >= 1.0x shm-nopool",
          "gpushare-sysmem-nopool", shm_nopool, ws[i], hs[i], FALSE, 1.0);
  }
}

gboolean
parse_size (const gchar * s, gint * w, gint * h)
{
  if (!g_ascii_strcasecmp (s, "1080p")) {
    *w = 1920;
    *h = 1080;
  } else if (!g_ascii_strcasecmp (s, "4k") || !g_ascii_strcasecmp (s, "2160p")) {
    *w = 3840;
    *h = 2160;
  } else if (!g_ascii_strcasecmp (s, "720p")) {
    *w = 1280;
    *h = 720;
  } else if (sscanf (s, "%dx%d", w, h) != 2 || *w <= 0 || *h <= 0) {
    return FALSE;
  }
  return TRUE;
}

/* NULL while the rounds may go on, else why they stop */
static const gchar *
stop_reason (gint64 t0)
{
  if (interrupted)
    return "interrupted by a signal";
  if (opt.max_time_s > 0 && g_get_monotonic_time () - t0 >
      (gint64) opt.max_time_s * G_USEC_PER_SEC)
    return "--max-time reached";
  return NULL;
}

static void
run_one (const gchar * self, Row * row, gboolean have_smi)
{
  Row one = { 0, };

  one.mode = row->mode;
  one.width = row->width;
  one.height = row->height;
  one.mps = row->mps;
  one.detections = row->detections;
  one.want_mem = have_smi && row->mode->gpu && !row->have_mem;
  run_row (self, &one);
  if (row->mps && (mps_processes () & MPS_SERVER))
    mps.server_seen = TRUE;
  add_run (row, &one);
}

/* the daemon did not come up: before any MPS row ran, the rows are
 * skipped; later, this round counts as a failed run of each */
static void
mps_rows_fail (Row * rows, gint n, const gchar * why)
{
  gint k;

  for (k = 0; k < n; k++) {
    Row one = { 0, };

    if (rows[k].skipped)
      continue;
    if (mps.starts == 0) {
      rows[k].skipped = g_strdup_printf ("MPS did not start: %s", why);
      continue;
    }
    one.failed = g_strdup_printf ("MPS did not start: %s", why);
    add_run (&rows[k], &one);
  }
  if (mps.starts == 0 && !mps.why_not)
    mps.why_not = g_strdup (why);
}

static gint
run_parent (const gchar * self)
{
  gchar **sizes = g_strsplit (opt.sizes ? opt.sizes : "1080p,4k", ",", -1);
  gchar **names = g_strsplit (opt.modes, ",", -1);
  gint n_sizes = g_strv_length (sizes), n_plain, n_rows, i, j, k, r;
  gint failed = 0, rounds = 0;
  gint *ws = g_new0 (gint, n_sizes), *hs = g_new0 (gint, n_sizes);
  gboolean have_smi, any_gpu = FALSE, mps_rows = FALSE, mps_in_plain = FALSE;
  gchar *smi, *detail;
  const gchar *stopped = NULL;
  gint64 t0 = g_get_monotonic_time ();
  struct sigaction sa, old_int, old_term, old_hup;
  Row *rows;

  for (i = 0; i < n_sizes; i++)
    if (!parse_size (sizes[i], &ws[i], &hs[i])) {
      g_printerr ("bad size '%s' (1080p, 4k, 720p or WxH)\n", sizes[i]);
      return 64;
    }
  for (j = 0; names[j]; j++)
    if (!find_mode (names[j])) {
      g_printerr ("no mode '%s' (--list shows them)\n", names[j]);
      return 64;
    }

  /* every mode at every size (with --analytics, a two-process mode twice:
   * without and with the detections), then, with --mps, the GPU modes
   * once more */
  n_plain = g_strv_length (names) * n_sizes;
  for (j = 0; opt.analytics > 0 && names[j]; j++)
    if (find_mode (names[j])->consumer)
      n_plain += n_sizes;
  n_rows = n_plain;
  for (j = 0; opt.mps && names[j]; j++)
    if (find_mode (names[j])->gpu)
      n_rows += n_sizes;
  rows = g_new0 (Row, n_rows);
  k = 0;
  for (j = 0; names[j]; j++)
    for (i = 0; i < n_sizes; i++) {
      rows[k].mode = find_mode (names[j]);
      rows[k].width = ws[i];
      rows[k].height = hs[i];
      k++;
      if (opt.analytics > 0 && rows[k - 1].mode->consumer) {
        rows[k] = rows[k - 1];
        rows[k].detections = opt.analytics;
        k++;
      }
    }
  for (j = 0; k < n_rows && names[j]; j++)
    for (i = 0; i < n_sizes && find_mode (names[j])->gpu; i++, k++) {
      rows[k].mps = TRUE;
      rows[k].mode = find_mode (names[j]);
      rows[k].width = ws[i];
      rows[k].height = hs[i];
    }
  for (k = 0; k < n_rows; k++) {
    rows[k].skipped = missing_requirement (rows[k].mode);
    any_gpu |= rows[k].mode->gpu;
  }
  if (n_rows > n_plain) {
    mps_prepare ();
    for (k = n_plain; k < n_rows; k++) {
      if (mps.why_not) {
        g_free (rows[k].skipped);
        rows[k].skipped = g_strdup_printf ("MPS: %s", mps.why_not);
      }
      mps_rows |= !rows[k].skipped;
    }
  }
  smi = g_find_program_in_path ("nvidia-smi");
  have_smi = smi != NULL;
  g_free (smi);

  /* from here on, the MPS daemon is stopped on every way out */
  memset (&sa, 0, sizeof (sa));
  sa.sa_handler = on_signal;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, &old_int);
  sigaction (SIGTERM, &sa, &old_term);
  sigaction (SIGHUP, &sa, &old_hup);

  print_host (n_sizes, ws, hs);
  /* the rounds report progress on stderr: keep stdout in order */
  fflush (stdout);
  for (r = 0; r < opt.repeat && !stopped; r++) {
    g_printerr ("gpushare-bench: round %d of %d\n", r + 1, opt.repeat);
    mps_in_plain |= mps_processes () != 0;
    for (k = 0; k < n_plain && !(stopped = stop_reason (t0)); k++)
      if (!rows[k].skipped)
        run_one (self, &rows[k], have_smi);
    mps_in_plain |= mps_processes () != 0;
    if (mps_rows && !stopped) {
      gchar *why = NULL;

      g_printerr ("gpushare-bench: round %d of %d, under MPS\n", r + 1,
          opt.repeat);
      if (mps_start (&why)) {
        for (k = n_plain; k < n_rows && !(stopped = stop_reason (t0)); k++)
          if (!rows[k].skipped)
            run_one (self, &rows[k], have_smi);
        mps_stop ();
      } else {
        g_printerr ("gpushare-bench: %s\n", why);
        mps_rows_fail (rows + n_plain, n_rows - n_plain, why);
        mps_rows = mps.starts > 0;
      }
      g_free (why);
    }
    if (!stopped)
      rounds++;
  }
  mps_cleanup ();
  sigaction (SIGINT, &old_int, NULL);
  sigaction (SIGTERM, &old_term, NULL);
  sigaction (SIGHUP, &old_hup, NULL);

  for (k = 0; k < n_rows; k++)
    finish_row (&rows[k]);
  if (stopped)
    g_print ("\nStopped early, after %d of %d rounds: %s.\n", rounds,
        opt.repeat, stopped);

  detail = g_strdup (mps_in_plain ? "an MPS daemon not started by "
      "gpushare-bench was RUNNING during these rows" :
      "MPS daemon not running during these rows");
  print_header (opt.mps ? "Without MPS" : "Rows", detail);
  g_free (detail);
  for (k = 0; k < n_plain; k++)
    print_row (&rows[k]);
  if (n_rows > n_plain) {
    if (mps.starts > 0)
      detail = g_strdup_printf ("MPS daemon running during these rows, "
          "started by gpushare-bench before them and stopped after them in "
          "each round (private CUDA_MPS_PIPE_DIRECTORY); MPS server seen: "
          "%s%s", mps.server_seen ? "yes" : "no", mps.stop_failed ?
          "; an MPS process outlived 'quit'" : "");
    else
      detail = g_strdup_printf ("not run, no MPS daemon of ours: %s",
          mps.why_not ? mps.why_not : "every row skipped");
    print_header ("With MPS (+MPS)", detail);
    g_free (detail);
    for (k = n_plain; k < n_rows; k++)
      print_row (&rows[k]);
  }
  if (any_gpu)
    g_print ("\nGPU memory: %s\n",
        have_smi ? "device memory of the producer / consumer process in "
        "MiB, as nvidia-smi --query-compute-apps lists it, sampled once per "
        "row after the last frame with both pipelines still PLAYING (the "
        "children wait for the sample); under MPS, where nvidia-smi lists "
        "no client memory, the MPS server's figure (shared by all "
        "clients) or '-'" : "'-': no nvidia-smi in PATH");
  if (opt.targets)
    print_targets (rows, n_rows, n_sizes, ws, hs);

  for (k = 0; k < n_rows; k++) {
    failed += rows[k].runs_ok == 0 && !rows[k].skipped;
    g_free (rows[k].skipped);
    g_free (rows[k].failed);
    g_free (rows[k].stats);
    g_free (rows[k].v);
  }
  g_free (rows);
  g_strfreev (sizes);
  g_strfreev (names);
  g_free (ws);
  g_free (hs);
  g_free (mps.why_not);
  if (interrupted)
    return 128 + interrupted;
  return failed ? 1 : 0;
}

int
main (int argc, char **argv)
{
  const gchar *role = argc > 1 && argv[1][0] != '-' ? argv[1] : "parent";
  GOptionEntry entries[] = {
    {"sizes", 0, 0, G_OPTION_ARG_STRING, &opt.sizes,
        "Frame sizes, comma separated: 1080p, 4k, 720p or WxH "
          "(default 1080p,4k)", "LIST"},
    {"frames", 0, 0, G_OPTION_ARG_INT, &opt.frames,
        "Frames per run (default 600)", "N"},
    {"modes", 0, 0, G_OPTION_ARG_STRING, &opt.modes,
        "Modes to run, comma separated (default: all)", "LIST"},
    {"ring", 0, 0, G_OPTION_ARG_INT, &opt.ring,
          "Frames in flight: gpusharesink ring-size, shmsink area (default 8)",
        "N"},
    {"analytics", 0, 0, G_OPTION_ARG_INT, &opt.analytics,
        "Run each two-process row again with N detections on every frame "
          "(GstAnalyticsRelationMeta: an object detection, its "
          "classification and their two relations each; GStreamer 1.24+ "
          "with its analytics library)", "N"},
    {"mask", 0, 0, G_OPTION_ARG_NONE, &opt.mask,
        "With --analytics: a GRAY8 segmentation mask as large as the frame "
          "too, on every frame (GStreamer 1.26+)", NULL},
    {"pace-us", 0, 0, G_OPTION_ARG_INT, &opt.pace_us,
          "Latency runs: the producer sends one frame every N us at most "
          "(identity sleep-time in front of the transport), so that no "
          "frame waits for a slot and the latency is the handoff alone; the "
          "fps targets are then not judged (default 0: as fast as possible)",
        "N"},
    {"repeat", 0, 0, G_OPTION_ARG_INT, &opt.repeat,
        "Runs per row; each figure is their median (default 3)", "N"},
    {"markdown", 0, 0, G_OPTION_ARG_NONE, &opt.markdown,
        "Print the table as Markdown", NULL},
    {"verbose", 0, 0, G_OPTION_ARG_NONE, &opt.verbose,
        "Print the producer's stats under each row", NULL},
    {"list", 0, 0, G_OPTION_ARG_NONE, &opt.list,
        "List the modes and their pipelines", NULL},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &opt.timeout_s,
        "Seconds one run may take (default 10)", "S"},
    {"mps", 0, 0, G_OPTION_ARG_NONE, &opt.mps,
        "Run the GPU rows once more under an MPS daemon of our own (with "
          "--streams: each GPU row, a daemon a row)", NULL},
    {"targets", 0, 0, G_OPTION_ARG_NONE, &opt.targets,
        "Say which targets were met, after the table", NULL},
    {"max-time", 0, 0, G_OPTION_ARG_INT, &opt.max_time_s,
        "Start no run after S seconds; print what there is (default: no "
          "limit)", "S"},
    {"streams", 0, 0, G_OPTION_ARG_STRING, &opt.streams,
          "Many streams: K live streams (comma separated: one row per K), "
          "each read by --consumers, in the modes --list shows under "
          "--streams",
        "LIST"},
    {"consumers", 0, 0, G_OPTION_ARG_INT, &opt.consumers,
        "With --streams: consumers of each stream (default 4)", "M"},
    {"topology", 0, 0, G_OPTION_ARG_STRING, &opt.topology,
          "With --streams: per-process (a process per producer and per "
          "consumer of each stream), shared (one producer process, M "
          "consumer processes reading every stream) or both (default)",
        "WORD"},
    {"fps", 0, 0, G_OPTION_ARG_INT, &opt.fps,
        "With --streams: frames a second of each live source (default 30; "
          "0: as fast as possible)", "N"},
    {"warmup", 0, 0, G_OPTION_ARG_INT, &opt.warmup_s,
        "With --streams: seconds of each stream's start left out of "
          "latency and CPU (default 2)", "S"},
    {"phase", 0, 0, G_OPTION_ARG_STRING, &opt.phase,
          "With --streams and --fps: aligned (every source's frames come at "
          "the same instants: the worst case, the default) or spread "
          "(stream i of K a fraction i/K of a frame period later, as cameras "
          "of their own come)",
        "WORD"},
    {"plot", 0, 0, G_OPTION_ARG_FILENAME, &opt.plot,
          "With --streams: draw the rows against K into this SVG (gnuplot)",
        "FILE"},
    {"plot-from", 0, 0, G_OPTION_ARG_STRING, &opt.plot_from,
          "With --plot: draw the rows of earlier --streams --markdown runs, "
          "saved in these files (comma-separated), instead of running any",
        "FILES"},
    {"first", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt.first,
        "Child: first stream", NULL},
    {"count", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt.count,
        "Child: streams", NULL},
    {"spread", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt.spread,
        "Child: spread the sources' phases over this many streams", NULL},
    {"go", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.go,
        "Child: hold the first frames until this file exists", NULL},
    {"end", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.end,
        "Child: leave once this file exists", NULL},
    {"ready", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.ready,
        "Child: write this file once playing", NULL},
    {"mode", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt.mode,
        "Child: the mode", NULL},
    {"socket", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.socket,
        "Child: socket path", NULL},
    {"stamps", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.stamps,
        "Child: where to write the stamps", NULL},
    {"hold", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt.hold,
        "Child: after the last frame, wait until this file is gone", NULL},
    {"width", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt.width,
        "Child: width", NULL},
    {"height", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt.height,
        "Child: height", NULL},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- gpushare benchmark");
  GError *error = NULL;
  gint rc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 64;
  }
  g_option_context_free (ctx);
#if !HAVE_GST_ANALYTICS
  if (opt.analytics > 0) {
    g_printerr ("--analytics: built without GStreamer's analytics library "
        "(1.24+)\n");
    return 64;
  }
#endif
#if !GST_CHECK_VERSION(1, 26, 0)
  if (opt.mask) {
    g_printerr ("--mask: GStreamer %d.%d has no segmentation mtd (1.26+)\n",
        GST_VERSION_MAJOR, GST_VERSION_MINOR);
    return 64;
  }
#endif
  if (opt.mask && opt.analytics <= 0) {
    g_printerr ("--mask goes with --analytics N\n");
    return 64;
  }
  if (opt.analytics < 0 || opt.analytics > 100000) {
    g_printerr ("--analytics takes 0 to 100000 detections\n");
    return 64;
  }
  if (opt.frames < 2 || opt.ring < 1 || opt.repeat < 1 || opt.timeout_s < 1
      || opt.max_time_s < 0) {
    g_printerr ("--frames must be at least 2, --ring, --repeat and --timeout "
        "at least 1, --max-time at least 0\n");
    return 64;
  }
  if (!opt.modes && !opt.streams) {
    GString *all = g_string_new (NULL);
    guint i;

    for (i = 0; i < G_N_ELEMENTS (modes); i++)
      g_string_append_printf (all, "%s%s", i ? "," : "", modes[i].name);
    opt.modes = g_string_free (all, FALSE);
  }
#ifdef GPUSHARE_BUILD_PLUGIN_DIR
  /* run from the build tree without installing: find the fresh plugin */
  if (!gst_registry_check_feature_version (gst_registry_get (),
          "gpusharesink", 1, 0, 0))
    gst_registry_scan_path (gst_registry_get (), GPUSHARE_BUILD_PLUGIN_DIR);
#endif

  if (opt.list) {
    guint i;

    for (i = 0; i < G_N_ELEMENTS (modes); i++) {
      g_print ("%s: %s%s\n  producer: %s\n", modes[i].name, modes[i].what,
          modes[i].gpu ? " (GPU row: --mps runs it again under MPS)" : "",
          modes[i].producer);
      if (modes[i].consumer)
        g_print ("  consumer: %s\n", modes[i].consumer);
    }
    scale_list ();
    rc = 0;
  } else if (g_str_equal (role, "scale-producer")
      || g_str_equal (role, "scale-consumer")) {
    rc = scale_run_side (role);
  } else if (g_str_equal (role, "parent") && opt.plot_from) {
    rc = scale_replot ();
  } else if (g_str_equal (role, "parent") && opt.streams) {
    gchar *exe = g_file_read_link ("/proc/self/exe", NULL);

    rc = scale_run_parent (exe ? exe : argv[0]);
    g_free (exe);
  } else if (g_str_equal (role, "producer") || g_str_equal (role, "consumer")
      || g_str_equal (role, "single")) {
    rc = run_side (role);
  } else if (g_str_equal (role, "parent")) {
    gchar *exe = g_file_read_link ("/proc/self/exe", NULL);

    rc = run_parent (exe ? exe : argv[0]);
    g_free (exe);
  } else {
    g_printerr ("usage: %s [--sizes LIST] [--frames N] [--modes LIST] "
        "[--mps] [--targets] [--markdown]\n", argv[0]);
    rc = 64;
  }
  gst_deinit ();
  return rc;
}
