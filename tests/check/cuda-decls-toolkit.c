/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The toolkit's cuda.h, as the same figures (cuda-decls-list.h).  Built
 * with GPUSHARE_CUDA_TOOLKIT_HEADERS and GPUSHARE_CUDA_CHECK_PROTOTYPES:
 * gpusharecudadriver.h then includes <cuda.h> and redeclares each of its
 * prototypes after it, which the compiler refuses where one differs from
 * the toolkit's. */
#include <stddef.h>

#include "gpusharecudadriver.h"
#include "cuda-decls-list.h"

#ifdef GPUSHARE_CUDA_DRIVER_STUB
#error "gpusharecudadriver.h gave its own declarations here, not cuda.h"
#endif

GPUSHARE_CUDA_DECL_TABLE (gpushare_cuda_decls_toolkit);
