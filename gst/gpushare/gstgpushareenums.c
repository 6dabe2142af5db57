/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The enum types the elements' properties and signals use.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstgpusharesink.h"
#include "gstgpusharesrc.h"
#include "gpusharexfer.h"

GType
gst_gpu_share_client_remove_reason_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_REMOVE_GOODBYE, "The consumer said goodbye", "goodbye"},
    {GST_GPU_SHARE_REMOVE_HANGUP, "The consumer's socket closed", "hangup"},
    {GST_GPU_SHARE_REMOVE_PROTOCOL, "Malformed or illegal message",
        "protocol"},
    {GST_GPU_SHARE_REMOVE_VERSION, "Unknown protocol version", "version"},
    {GST_GPU_SHARE_REMOVE_NOT_AUTHORIZED, "Credentials refused",
        "not-authorized"},
    {GST_GPU_SHARE_REMOVE_UNSUPPORTED, "No common memory type",
        "unsupported"},
    {GST_GPU_SHARE_REMOVE_SLOW, "The consumer stopped reading", "slow"},
    {GST_GPU_SHARE_REMOVE_TOO_MANY, "Too many clients", "too-many-clients"},
    {GST_GPU_SHARE_REMOVE_PEER_ERROR, "The consumer reported an error",
        "peer-error"},
    {GST_GPU_SHARE_REMOVE_RESOURCE, "Exporting the slots failed",
        "resource"},
    {GST_GPU_SHARE_REMOVE_SHUTDOWN, "The sink stopped", "shutdown"},
    {GST_GPU_SHARE_REMOVE_TIMEOUT, "The consumer did not finish its "
          "handshake in time, or fell silent", "timeout"},
    {GST_GPU_SHARE_REMOVE_LEASE, "The consumer held a slot longer than "
          "lease-timeout while the producer waited for one", "lease"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareClientRemoveReason", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_share_slow_policy_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_POLICY_AUTO, "Leaky for live upstreams, lossless otherwise",
        "auto"},
    {GST_GPU_SHARE_POLICY_LOSSLESS, "Wait until every consumer released",
        "lossless"},
    {GST_GPU_SHARE_POLICY_LEAKY,
        "A consumer holding its share of slots misses frames", "leaky"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareSlowPolicy", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* auto, then the kinds of the registered transfers, as each declares
 * them (gpusharexfer.h): made once, after the plugin registered them */
GType
gst_gpu_share_transport_get_type (void)
{
  static GType type = 0;

  if (g_once_init_enter (&type)) {
    const GpuShareMemPolicy *const *policies = gpushare_xfer_policies ();
    GArray *values = g_array_new (TRUE, TRUE, sizeof (GEnumValue));
    GEnumValue v = { GST_GPU_SHARE_TRANSPORT_AUTO,
      "GPU memory on the same GPU, system memory otherwise", "auto"
    };
    GType t;
    guint i, k;

    g_array_append_val (values, v);
    for (i = 0; policies[i]; i++)
      for (k = 0; k < policies[i]->n_kinds; k++) {
        const GpuShareMemKind *kind = &policies[i]->kinds[k];

        v.value = kind->transport;
        v.value_name = kind->description;
        v.value_nick = kind->nick;
        g_array_append_val (values, v);
      }
    /* the type keeps the values for the life of the process */
    t = g_enum_register_static ("GstGpuShareTransport",
        (GEnumValue *) g_array_free (values, FALSE));
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_share_producer_lost_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_PRODUCER_LOST_ERROR, "Post an error", "error"},
    {GST_GPU_SHARE_PRODUCER_LOST_EOS, "End the stream", "eos"},
    {GST_GPU_SHARE_PRODUCER_LOST_RECONNECT,
        "Connect again within connection-timeout and go on", "reconnect"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareProducerLost", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_share_sync_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_SYNC_AUTO, "The fastest mode both ends support", "auto"},
    {GST_GPU_SHARE_SYNC_HOST, "Each side synchronises its CUDA stream",
        "host"},
    {GST_GPU_SHARE_SYNC_SEMAPHORE, "64-bit words in shared GPU memory",
        "semaphore"},
    {GST_GPU_SHARE_SYNC_EVENT, "CUDA IPC events (needs a shared /dev/shm)",
        "event"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareSync", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_share_io_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPU_SHARE_IO_AUTO, "In place where the memory and GStreamer allow "
          "it, a copy otherwise", "auto"},
    {GST_GPU_SHARE_IO_COPY, "Every frame copied out of its slot", "copy"},
    {GST_GPU_SHARE_IO_IMPORT, "In place, or an error", "import"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuShareIoMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}
