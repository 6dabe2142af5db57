/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA transfer's part in the negotiation (gpusharenegotiate.h): its
 * three memory kinds, what a producer offers of them and which one a
 * consumer takes.  Plain values only, no CUDA header: it is built in
 * every build, so that the negotiation's tests run without the toolkit.
 */

#ifndef __GPUSHARE_CUDA_POLICY_H__
#define __GPUSHARE_CUDA_POLICY_H__

#include "gpusharenegotiate.h"

G_BEGIN_DECLS

/* gpusharesrc transport values of the CUDA kinds */
#define GPUSHARE_CUDA_TRANSPORT_VMM 2
#define GPUSHARE_CUDA_TRANSPORT_LEGACY 3
#define GPUSHARE_CUDA_TRANSPORT_FABRIC 4

extern const GpuShareMemPolicy gpushare_cuda_policy;

G_END_DECLS

#endif /* __GPUSHARE_CUDA_POLICY_H__ */
