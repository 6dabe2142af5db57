/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gpushare codec fuzz target, shared by the libFuzzer build
 * (run-fuzzer.sh), the corpus replay test (replay_proto.c) and the seed
 * generator (make-corpus.c).
 *
 * One input is what one connection receives:
 *
 *   byte 0    how many fds arrive with the first read (0 .. 255); more than
 *             the transport holds (FUZZ_IN_FD_CAP) ends the input there, as
 *             the transport drops such a peer
 *   byte 1    bytes per read: 0 = as many as fit the receive buffer, else
 *             1 .. 255, so that headers and payloads arrive in pieces
 *   byte 2..  the byte stream: messages back to back, or garbage
 *
 * The fds are not real: the codec only counts them.
 */

#ifndef __GPUSHARE_FUZZ_PROTO_H__
#define __GPUSHARE_FUZZ_PROTO_H__

#include <stddef.h>
#include <stdint.h>

#include "gpushareproto.h"

/* the transport's receive buffer and fd queue (gpushareconn.c) */
#define FUZZ_IN_CAP (GPUSHARE_HEADER_SIZE + GPUSHARE_MAX_PAYLOAD)
#define FUZZ_IN_FD_CAP (2 * GPUSHARE_MAX_FDS)

#define FUZZ_PREFIX_SIZE 2

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

#endif /* __GPUSHARE_FUZZ_PROTO_H__ */
