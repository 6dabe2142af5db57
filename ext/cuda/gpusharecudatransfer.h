/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The GPU transfer over CUDA (gpusharexfer.h).  The plugin registers it
 * once at load; nothing else of ext/cuda is called from above the
 * transfer interface.
 */

#ifndef __GPUSHARE_CUDA_TRANSFER_H__
#define __GPUSHARE_CUDA_TRANSFER_H__

#include "gpusharexfer.h"

G_BEGIN_DECLS

void gpushare_cuda_xfer_register (void);

G_END_DECLS

#endif /* __GPUSHARE_CUDA_TRANSFER_H__ */
