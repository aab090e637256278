/*
 * frame.h - the sipc wire format: pure encode and incremental decode.
 * No I/O, no locks; a decoder belongs to one thread at a time.
 *
 * Frame = 24-byte header + payload.  All integers little-endian.
 *
 *   off size field
 *    0   4   magic     0x53 0x49 0x50 0x43 ("SIPC")
 *    4   1   version   SIPC_FRAME_VERSION (1)
 *    5   1   type      enum sipc_frame_type
 *    6   2   flags     0, except SIPC_FRAME_F_DEADLINE on a REQUEST to a
 *                      worker that asked for it (HELLO flag
 *                      SIPC_HELLO_F_DEADLINES) and SIPC_FRAME_F_FD on a
 *                      REQUEST or REPLY to or from a worker that set
 *                      SIPC_HELLO_F_FDS; the codec carries them; both
 *                      ends reject any other non-zero value
 *    8   8   id        request id (0 for HELLO/HEARTBEAT/SHUTDOWN)
 *   16   4   length    payload bytes, <= the receiver's max_payload
 *   20   4   hcrc      CRC-32C of bytes 0..19
 *
 * The header checksum catches desynchronised or foreign bytes (a stray
 * printf to the protocol descriptor) before the length is trusted.  The
 * payload is not checksummed: the local transport is a kernel socket
 * pair; a networked provider must bring its own integrity.
 */
#ifndef SIPC_FRAME_H
#define SIPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIPC_FRAME_MAGIC 0x43504953u /* "SIPC" read as little-endian u32 */
#define SIPC_FRAME_VERSION 1
#define SIPC_FRAME_HDR_LEN 24
/* Hard upper bound for any configured max_payload (1 GiB). */
#define SIPC_FRAME_MAX_PAYLOAD (1u << 30)
/* SO_SNDBUF each end of the protocol channel asks for (reader.c,
 * worker_rt.c): a 1 MiB frame in one write and one wake-up instead of
 * five or more with the usual 208 KiB default.  Linux doubles it for its
 * bookkeeping and caps it at net.core.wmem_max. */
#define SIPC__CHANNEL_SNDBUF (1 << 20)

enum sipc_frame_type {
	SIPC_FT_HELLO = 1,     /* worker -> sup: struct sipc_hello payload */
	SIPC_FT_REQUEST = 2,   /* sup -> worker: opaque payload */
	SIPC_FT_REPLY = 3,     /* worker -> sup: opaque payload */
	SIPC_FT_ERROR = 4,     /* worker -> sup: u32 code + message bytes */
	SIPC_FT_CANCEL = 5,    /* sup -> worker: no payload */
	SIPC_FT_ACCEPT = 6,    /* worker -> sup: handler about to start */
	SIPC_FT_HEARTBEAT = 7, /* worker -> sup: no payload */
	SIPC_FT_SHUTDOWN = 8,  /* sup -> worker: finish and exit */
};
#define SIPC_FT_MAX 8

/* HELLO payload (16 bytes, little-endian). */
#define SIPC_HELLO_LEN 16
#define SIPC_HELLO_F_ACCEPTS 1u /* worker sends ACCEPT before each handler */
/* A start counter travels with the HELLO bytes (SCM_RIGHTS): a memfd,
 * sealed against shrinking, whose first 8 bytes (native byte order)
 * count the REQUEST frames the worker has started, in arrival order
 * (CONTRACT section 3, A5). */
#define SIPC_HELLO_F_START_COUNTER 2u
#define SIPC_START_COUNTER_LEN 8
/* The worker reads REQUEST frames that carry their deadline
 * (SIPC_FRAME_F_DEADLINE).  A supervisor that does not know the flag
 * ignores it and sends none: both sides stay compatible. */
#define SIPC_HELLO_F_DEADLINES 4u
/* The worker takes and sends documents by descriptor
 * (SIPC_FRAME_F_FD).  A supervisor refuses a SIPC_REQ_FD request to a
 * worker without it (REJECTED / SIPC_E_NOFD, never sent). */
#define SIPC_HELLO_F_FDS 8u

/* Frame flag, REQUEST only, only to a worker whose HELLO set
 * SIPC_HELLO_F_DEADLINES: the payload begins with 8 bytes, the
 * request's deadline in CLOCK_MONOTONIC milliseconds (little-endian,
 * never 0; worker and supervisor share the host's monotonic clock), and
 * the request's own bytes follow.  A request without a deadline, or one
 * whose payload is within 8 bytes of SIPC_FRAME_MAX_PAYLOAD, goes
 * without the flag. */
#define SIPC_FRAME_F_DEADLINE 1u
#define SIPC_FRAME_DEADLINE_LEN 8
/* Frame flag, REQUEST or REPLY, only with SIPC_HELLO_F_FDS: the
 * document is not inline.  One descriptor travels with the frame
 * (SCM_RIGHTS on its first byte), and the payload (after a deadline,
 * when flagged too) is exactly 8 bytes: the document's length
 * (little-endian), the descriptor's first bytes.  A frame with the flag
 * and no descriptor, or a descriptor no such frame claims, is a
 * protocol error (fdq.h). */
#define SIPC_FRAME_F_FD 2u
#define SIPC_FRAME_FDLEN_LEN 8
struct sipc_hello {
	uint32_t proto_version;  /* SIPC_PROTOCOL_VERSION */
	uint32_t pid;            /* worker's getpid() */
	uint32_t flags;          /* SIPC_HELLO_F_* */
	uint32_t max_inflight;   /* worker's concurrency hint, 0 = any */
};

struct sipc_frame_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint64_t id;
	uint32_t len;
};

/* Encode `h` (version forced to SIPC_FRAME_VERSION) into out[24]. */
void sipc__frame_encode_hdr(uint8_t out[SIPC_FRAME_HDR_LEN],
                            const struct sipc_frame_hdr *h);

/* Validate and decode a header.  Returns 0, or SIPC_E_BADMAGIC,
 * SIPC_E_VERSION, SIPC_E_BADTYPE, SIPC_E_BADCHECK, SIPC_E_TOOBIG
 * (len > max_payload), checked in that order; ret untouched on error. */
int sipc__frame_decode_hdr(const uint8_t in[SIPC_FRAME_HDR_LEN],
                           uint32_t max_payload, struct sipc_frame_hdr *ret);

void sipc__hello_encode(uint8_t out[SIPC_HELLO_LEN], const struct sipc_hello *h);
/* Returns 0 or SIPC_E_PROTOCOL if len != SIPC_HELLO_LEN. */
int sipc__hello_decode(const uint8_t *in, size_t len, struct sipc_hello *ret);

/*
 * Incremental decoder.  Feed it any split of the byte stream; it never
 * allocates more than max_payload for one frame, and allocates nothing
 * until a header has been validated (a 4 GiB length costs nothing).
 */
struct sipc_decoder {
	uint32_t max_payload;
	uint8_t hdr[SIPC_FRAME_HDR_LEN];
	size_t have;                 /* bytes of the current frame so far */
	struct sipc_frame_hdr cur;
	bool in_payload;
	uint8_t *payload;            /* malloc'd when cur.len > 0 */
	int error;                   /* sticky: once failed, stays failed */
};

struct sipc_frame {
	struct sipc_frame_hdr hdr;
	uint8_t *payload;            /* malloc'd, owned by the receiver; NULL if len 0 */
	int fd;                      /* -1 from the decoder; a receiver sets
	                              * the descriptor a SIPC_FRAME_F_FD
	                              * frame claimed (fdq.h) */
};

void sipc__decoder_init(struct sipc_decoder *d, uint32_t max_payload);
/* Free a partial frame; the decoder may be re-initialised afterwards. */
void sipc__decoder_free(struct sipc_decoder *d);

/*
 * Consume bytes from buf[0..len).  Stops after completing one frame.
 * Returns the number of bytes consumed (>= 0) and sets *ret_done; when
 * *ret_done is true, *ret_frame holds the frame and the caller owns its
 * payload.  Returns a negative error (sticky) on a bad header, or -ENOMEM.
 */
long sipc__decoder_feed(struct sipc_decoder *d, const uint8_t *buf,
                        size_t len, struct sipc_frame *ret_frame,
                        bool *ret_done);

/*
 * Zero-copy path for large payloads: while the decoder is inside a
 * payload, sipc__decoder_direct() returns how many bytes it still needs
 * and where they go (0 otherwise); the caller read()s straight into that
 * memory (at most that many bytes) and reports the count with
 * sipc__decoder_direct_done(), which completes the frame like feed.
 */
size_t sipc__decoder_direct(struct sipc_decoder *d, uint8_t **ret_ptr);
void sipc__decoder_direct_done(struct sipc_decoder *d, size_t n,
                               struct sipc_frame *ret_frame, bool *ret_done);

/* True if the decoder holds a partial frame (useful at EOF). */
bool sipc__decoder_partial(const struct sipc_decoder *d);

#endif
