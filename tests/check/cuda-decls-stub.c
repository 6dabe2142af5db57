/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gpusharecudadriver.h's own declarations, as figures (cuda-decls-list.h) */
#include <stddef.h>

#include "gpusharecudadriver.h"
#include "cuda-decls-list.h"

#ifndef GPUSHARE_CUDA_DRIVER_STUB
#error "gpusharecudadriver.h gave the toolkit's cuda.h here, not its own"
#endif

GPUSHARE_CUDA_DECL_TABLE (gpushare_cuda_decls_stub);
