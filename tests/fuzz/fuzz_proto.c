/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the gpushare wire codec (gpushareproto.c).
 *
 * The input is fed to the codec the way the transport feeds what it
 * receives (gpushareconn.c, read_some () and process_input ()): bytes
 * appended to a receive buffer of the transport's size, a header parsed
 * as soon as there are enough bytes, the payload parsed once it is all
 * in, the header's fds taken from those received so far, unknown types
 * skipped, and the first malformed message ending the connection.  See
 * fuzz_proto.h for the input format.
 *
 * Besides what the sanitizers catch, every message that parses is built
 * again with gpushare_msg_build () and parsed back: the builder must
 * accept it, and the second parse must give the very same struct and the
 * second build the very same bytes.  Any mismatch abort ()s, which the
 * fuzzer reports as a crash.
 *
 * Nothing here is allocated in proportion to the input: the buffers are
 * static and sized by the codec's caps, and each payload is parsed from
 * the end of a buffer of GPUSHARE_MAX_PAYLOAD bytes, so that
 * AddressSanitizer sees a read past the payload's end as one past the
 * buffer's.
 */

#include "fuzz_proto.h"
#include "gpushareframemeta.h"

#include <stdlib.h>
#include <string.h>

static guint8 in_buf[FUZZ_IN_CAP];
static guint8 payload_buf[GPUSHARE_MAX_PAYLOAD];
static GpuShareMsg msg_a;
static GpuShareMsg msg_b;

static G_NORETURN void
fail (const gchar * what, guint type)
{
  g_printerr ("fuzz_proto: %s (message type %u, %s)\n", what, type,
      gpushare_msg_type_to_string (type));
  abort ();
}

/* the payload of len bytes at p, copied to the end of payload_buf */
static const guint8 *
place_payload (const guint8 * p, gsize len)
{
  guint8 *dst;

  if (len > sizeof (payload_buf))
    fail ("a payload over GPUSHARE_MAX_PAYLOAD passed the header", 0);
  dst = payload_buf + sizeof (payload_buf) - len;
  memmove (dst, p, len);
  return dst;
}

/* msg parsed OK from hdr: it must build, and parse back unchanged */
static void
check_round_trip (const GpuShareHeader * hdr, const GpuShareMsg * msg)
{
  GByteArray *out, *again;
  GpuShareHeader hdr2;
  GpuShareParseResult res;
  const guint8 *payload;

  if (msg->type != hdr->type)
    fail ("parsed message has another type than its header", hdr->type);

  out = g_byte_array_new ();
  if (!gpushare_msg_build (msg, hdr->n_fds, out))
    fail ("builder refuses a message the parser accepted", hdr->type);

  res = gpushare_header_parse (out->data, out->len, &hdr2);
  if (res != GPUSHARE_PARSE_OK)
    fail ("built header does not parse", hdr->type);
  if (hdr2.type != hdr->type || hdr2.n_fds != hdr->n_fds ||
      hdr2.version_major != GPUSHARE_VERSION_MAJOR || hdr2.flags != 0 ||
      hdr2.reserved != 0)
    fail ("built header differs from the parsed one", hdr->type);
  if ((gsize) GPUSHARE_HEADER_SIZE + hdr2.payload_len != out->len)
    fail ("built payload_len differs from the bytes built", hdr->type);
  /* a received payload may carry a newer minor's extension, which the
   * parser ignores: what we build is never longer */
  if (hdr2.payload_len > hdr->payload_len)
    fail ("built payload is longer than the received one", hdr->type);

  payload = place_payload (out->data + GPUSHARE_HEADER_SIZE, hdr2.payload_len);
  res = gpushare_msg_parse (&hdr2, payload, hdr2.payload_len, &msg_b);
  if (res != GPUSHARE_PARSE_OK)
    fail ("built message does not parse", hdr->type);
  /* the parser zeroes the struct first and copies strings by length, so
   * the whole struct, padding and string tails included, is comparable */
  if (memcmp (msg, &msg_b, sizeof (GpuShareMsg)) != 0)
    fail ("message changed across build and parse", hdr->type);

  again = g_byte_array_new ();
  if (!gpushare_msg_build (&msg_b, hdr2.n_fds, again))
    fail ("builder refuses its own message", hdr->type);
  if (again->len != out->len || memcmp (again->data, out->data, out->len))
    fail ("same message built twice differs", hdr->type);

  g_byte_array_unref (again);
  g_byte_array_unref (out);
}

/* process_input (): FALSE where the transport would drop the peer */
static gboolean
process_input (gsize * in_len, guint * n_fds)
{
  for (;;) {
    GpuShareHeader hdr;
    GpuShareParseResult res;
    const guint8 *payload;
    gsize total;

    res = gpushare_header_parse (in_buf, *in_len, &hdr);
    if (res == GPUSHARE_PARSE_NEED_MORE) {
      if (*in_len >= GPUSHARE_HEADER_SIZE)
        fail ("header parser wants more than a header", 0);
      break;
    }
    if (res != GPUSHARE_PARSE_OK)
      return FALSE;
    if (hdr.payload_len > GPUSHARE_MAX_PAYLOAD)
      fail ("header accepted a payload over the cap", hdr.type);
    if (hdr.n_fds > GPUSHARE_MAX_FDS)
      fail ("header accepted an fd count over the cap", hdr.type);
    total = GPUSHARE_HEADER_SIZE + hdr.payload_len;
    if (*in_len < total)
      break;
    if (hdr.n_fds > *n_fds)
      return FALSE;
    *n_fds -= hdr.n_fds;

    payload = place_payload (in_buf + GPUSHARE_HEADER_SIZE, hdr.payload_len);
    res = gpushare_msg_parse (&hdr, payload, hdr.payload_len, &msg_a);
    memmove (in_buf, in_buf + total, *in_len - total);
    *in_len -= total;

    if (res == GPUSHARE_PARSE_UNKNOWN_TYPE) {
      if (hdr.type >= GPUSHARE_MSG_ANNOUNCE && hdr.type <= GPUSHARE_MSG_LAST)
        fail ("a known type parsed as unknown", hdr.type);
      continue;
    }
    if (res == GPUSHARE_PARSE_NEED_MORE)
      fail ("payload parser wants more than payload_len", hdr.type);
    if (res != GPUSHARE_PARSE_OK)
      return FALSE;
    check_round_trip (&hdr, &msg_a);
    /* what a consumer checks of the entries before any reaches a buffer */
    if (msg_a.type == GPUSHARE_MSG_META)
      gpushare_frame_meta_check_meta (&msg_a.u.meta, NULL);
  }
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static gboolean initialised;
  gsize pos = FUZZ_PREFIX_SIZE, in_len = 0, per_read;
  guint n_fds;

  /* the codec's g_return_val_if_fail () guards must never fire */
  if (!initialised) {
    g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    initialised = TRUE;
  }

  if (size < FUZZ_PREFIX_SIZE)
    return 0;
  n_fds = data[0];
  per_read = data[1] ? data[1] : FUZZ_IN_CAP;
  /* the transport drops a peer that sends more fds than it queues */
  if (n_fds > FUZZ_IN_FD_CAP)
    return 0;

  while (pos < size) {
    gsize n = MIN (size - pos, FUZZ_IN_CAP - in_len);

    n = MIN (n, per_read);
    /* a full buffer holds a whole message at least: the transport would
     * wait forever on one that never fits */
    if (n == 0)
      fail ("receive buffer full without a complete message", 0);
    memcpy (in_buf + in_len, data + pos, n);
    in_len += n;
    pos += n;
    if (!process_input (&in_len, &n_fds))
      break;
  }
  return 0;
}
