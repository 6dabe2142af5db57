/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A second host-memory transfer, registered only by the test copy of the
 * plugin (tests/plugin): the tables of the system-memory transfer under a
 * memory type of its own (GPUSHARE_MEM_HOST_TEST) and a transport value of
 * its own ("host-test").  It is what docs/design.md's "Adding a transport"
 * asks of a new transport, and nothing more, so that test_e2e's
 * test_second_transfer shows the cores and the elements carry a transfer
 * they were never told about.  Its reads can also be made to wait as a
 * GPU read waits for a producer's signal (GPUSHARE_TEST_HOST_STALL), so
 * that the tests here show what ends such a wait.
 */

#ifndef __GPUSHARE_XFER_HOST_TEST_H__
#define __GPUSHARE_XFER_HOST_TEST_H__

#include "gpusharexfer.h"

G_BEGIN_DECLS

/* its gpusharesrc transport value */
#define GPUSHARE_HOST_TEST_TRANSPORT 100

void gpushare_host_test_xfer_register (void);

G_END_DECLS

#endif /* __GPUSHARE_XFER_HOST_TEST_H__ */
