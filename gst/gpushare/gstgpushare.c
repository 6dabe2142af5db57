/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include "gstgpusharesink.h"
#include "gstgpusharesrc.h"
#ifdef HAVE_CUDA
#include "gpusharecudatransfer.h"
#endif
#ifdef GPUSHARE_TEST_HOOKS
#include "gpusharexferhosttest.h"
#endif

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  /* before the elements: their pad templates offer GPU memory only where
   * a GPU transfer is registered, and gpusharesrc's transport values are
   * the registered transfers' (docs/design.md, "Adding a transport") */
#ifdef HAVE_CUDA
  gpushare_cuda_xfer_register ();
#endif
#ifdef GPUSHARE_TEST_HOOKS
  gpushare_host_test_xfer_register ();
#endif
  ret |= GST_ELEMENT_REGISTER (gpusharesink, plugin);
  ret |= GST_ELEMENT_REGISTER (gpusharesrc, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, gpushare,
    "Share video frames between processes through a ring of shared slots",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
