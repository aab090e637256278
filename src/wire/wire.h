/*
 * wire/wire.h - what src/wire/ exports: the encoding both sides share: little-endian helpers, CRC-32C, the frame format and its decoder, descriptors that travel with frames.
 */
#ifndef SIPC_SRC_WIRE_H
#define SIPC_SRC_WIRE_H



/* ---- le */
#include <stdint.h>

static inline void
sipc__le16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void
sipc__le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void
sipc__le64_put(uint8_t *p, uint64_t v)
{
	sipc__le32_put(p, (uint32_t)v);
	sipc__le32_put(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t
sipc__le16_get(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
sipc__le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline uint64_t
sipc__le64_get(const uint8_t *p)
{
	return (uint64_t)sipc__le32_get(p) |
	    (uint64_t)sipc__le32_get(p + 4) << 32;
}

/* ---- crc32c */
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC-32C over `len` bytes.  Start with crc = 0. */
uint32_t sipc__crc32c(uint32_t crc, const void *buf, size_t len);

/* ---- frame */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIPC_FRAME_MAGIC 0x43504953u /* "SIPC" read as little-endian u32 */
#define SIPC_FRAME_VERSION 1
#define SIPC_FRAME_HDR_LEN 24
/* Hard upper bound for any configured max_payload (1 GiB). */
#define SIPC_FRAME_MAX_PAYLOAD (1u << 30)
/* SO_SNDBUF each end of the protocol channel asks for (reader.c,
 * worker/runtime.c): a 1 MiB frame in one write and one wake-up instead of
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
 * protocol error (wire/wire.h). */
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
	                              * frame claimed (wire/wire.h) */
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

/* ---- fdq */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>


#define SIPC__FDQ_MAX 4   /* more than one pending is already an error */

struct sipc__fdq {
	int fd[SIPC__FDQ_MAX];
	unsigned head, n;
	bool bad;            /* a read's control data was cut (MSG_CTRUNC),
	                      * or more came than the queue holds */
};

void sipc__fdq_init(struct sipc__fdq *q);
/* Close every queued descriptor (each exactly once) and empty it. */
void sipc__fdq_clear(struct sipc__fdq *q);
/* The oldest queued descriptor, now the caller's; -1 when none. */
int sipc__fdq_take(struct sipc__fdq *q);

/*
 * recv() of at most `len` bytes that also takes the descriptors sent
 * with them (close-on-exec) into `q`.  `flags` as recv()'s.  Cut
 * control data, or more descriptors than the queue holds, set q->bad
 * (what did arrive is closed).  Returns recv()'s result.
 */
ssize_t sipc__recv_fds(int sock, void *buf, size_t len, int flags,
                       struct sipc__fdq *q);

/*
 * sendmsg() of iov[0..iovlen) with `fd`, when it is >= 0, as SCM_RIGHTS
 * data on the first byte sent; again on EINTR, always MSG_NOSIGNAL
 * besides `flags`.  The descriptor stays the caller's.  Returns
 * sendmsg()'s result (-1 and errno).
 */
ssize_t sipc__send_fd(int sock, struct iovec *iov, size_t iovlen, int fd,
                      int flags);

/*
 * After the bytes of one read are decoded: may the descriptors still
 * queued be there?  Only one, for the frame in progress when its header
 * is not complete yet or carries SIPC_FRAME_F_FD.  False is a protocol
 * error (a descriptor no frame claims).
 */
bool sipc__fdq_settled(const struct sipc__fdq *q,
                       const struct sipc_decoder *d);

#endif /* SIPC_SRC_WIRE_H */
