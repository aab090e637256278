/*
 * frame.c - the sipc wire format (see frame.h): pure encode and
 * incremental decode.
 *
 * Threads: none of its own.  Encoding is a pure function, callable from
 * any thread.  A decoder is plain state owned by whichever thread feeds
 * it (the worker's reader thread in the supervisor, the single runtime
 * thread in a worker); there are no locks here.
 *
 * Integers are assembled byte by byte so the code is independent of the
 * host byte order and never performs an unaligned load or store.
 */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "sipc.h"

static void
put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t
get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

void
sipc__frame_encode_hdr(uint8_t out[SIPC_FRAME_HDR_LEN],
    const struct sipc_frame_hdr *h)
{
	put_u32(out, SIPC_FRAME_MAGIC);
	out[4] = SIPC_FRAME_VERSION;
	out[5] = h->type;
	put_u16(out + 6, h->flags);
	put_u64(out + 8, h->id);
	put_u32(out + 16, h->len);
	put_u32(out + 20, sipc__crc32c(0, out, 20));
}

/*
 * The order of the checks is part of the contract: magic and version
 * first so a foreign or future peer is named as such, the checksum before
 * the length so a corrupted length is never believed, the length last.
 */
int
sipc__frame_decode_hdr(const uint8_t in[SIPC_FRAME_HDR_LEN],
    uint32_t max_payload, struct sipc_frame_hdr *ret)
{
	struct sipc_frame_hdr h;

	if (get_u32(in) != SIPC_FRAME_MAGIC)
		return SIPC_E_BADMAGIC;
	if (in[4] != SIPC_FRAME_VERSION)
		return SIPC_E_VERSION;
	if (in[5] < SIPC_FT_HELLO || in[5] > SIPC_FT_MAX)
		return SIPC_E_BADTYPE;
	if (get_u32(in + 20) != sipc__crc32c(0, in, 20))
		return SIPC_E_BADCHECK;
	h.version = in[4];
	h.type = in[5];
	h.flags = get_u16(in + 6);
	h.id = get_u64(in + 8);
	h.len = get_u32(in + 16);
	if (h.len > max_payload || h.len > SIPC_FRAME_MAX_PAYLOAD)
		return SIPC_E_TOOBIG;
	*ret = h;
	return 0;
}

void
sipc__hello_encode(uint8_t out[SIPC_HELLO_LEN], const struct sipc_hello *h)
{
	put_u32(out, h->proto_version);
	put_u32(out + 4, h->pid);
	put_u32(out + 8, h->flags);
	put_u32(out + 12, h->max_inflight);
}

int
sipc__hello_decode(const uint8_t *in, size_t len, struct sipc_hello *ret)
{
	if (in == NULL || len != SIPC_HELLO_LEN)
		return SIPC_E_PROTOCOL;
	ret->proto_version = get_u32(in);
	ret->pid = get_u32(in + 4);
	ret->flags = get_u32(in + 8);
	ret->max_inflight = get_u32(in + 12);
	return 0;
}

void
sipc__decoder_init(struct sipc_decoder *d, uint32_t max_payload)
{
	memset(d, 0, sizeof(*d));
	if (max_payload > SIPC_FRAME_MAX_PAYLOAD)
		max_payload = SIPC_FRAME_MAX_PAYLOAD;
	d->max_payload = max_payload;
}

void
sipc__decoder_free(struct sipc_decoder *d)
{
	if (d == NULL)
		return;
	free(d->payload);
	d->payload = NULL;
	d->in_payload = false;
	d->have = 0;
}

bool
sipc__decoder_partial(const struct sipc_decoder *d)
{
	return d->have > 0;
}

/* Hand the finished frame to the caller and reset for the next one. */
static void
decoder_emit(struct sipc_decoder *d, struct sipc_frame *ret_frame)
{
	ret_frame->hdr = d->cur;
	ret_frame->payload = d->payload;
	d->payload = NULL;
	d->in_payload = false;
	d->have = 0;
}

/*
 * Header phase: gather 24 bytes, validate them, and only then allocate
 * exactly cur.len bytes.  Returns bytes consumed or a negative error.
 */
static long
decoder_header(struct sipc_decoder *d, const uint8_t *buf, size_t len)
{
	size_t n = SIPC_FRAME_HDR_LEN - d->have;
	int r;

	if (n > len)
		n = len;
	memcpy(d->hdr + d->have, buf, n);
	d->have += n;
	if (d->have < SIPC_FRAME_HDR_LEN)
		return (long)n;
	r = sipc__frame_decode_hdr(d->hdr, d->max_payload, &d->cur);
	if (r < 0)
		return r;
	if (d->cur.len > 0) {
		d->payload = malloc(d->cur.len);
		if (d->payload == NULL)
			return -ENOMEM;
	}
	d->in_payload = true;
	return (long)n;
}

long
sipc__decoder_feed(struct sipc_decoder *d, const uint8_t *buf, size_t len,
    struct sipc_frame *ret_frame, bool *ret_done)
{
	size_t used = 0, want, n;
	long r;

	if (d->error != 0)
		return d->error;
	if (!d->in_payload) {
		r = decoder_header(d, buf, len);
		if (r < 0) {
			d->error = (int)r;
			return r;
		}
		used = (size_t)r;
		if (!d->in_payload) {
			*ret_done = false;
			return (long)used;
		}
	}
	want = SIPC_FRAME_HDR_LEN + (size_t)d->cur.len - d->have;
	n = len - used < want ? len - used : want;
	if (n > 0) {
		memcpy(d->payload + (d->have - SIPC_FRAME_HDR_LEN), buf + used,
		    n);
		d->have += n;
		used += n;
	}
	if (n == want) {
		decoder_emit(d, ret_frame);
		*ret_done = true;
	} else {
		*ret_done = false;
	}
	return (long)used;
}

size_t
sipc__decoder_direct(struct sipc_decoder *d, uint8_t **ret_ptr)
{
	if (d->error != 0 || !d->in_payload)
		return 0;
	*ret_ptr = d->payload + (d->have - SIPC_FRAME_HDR_LEN);
	return SIPC_FRAME_HDR_LEN + (size_t)d->cur.len - d->have;
}

void
sipc__decoder_direct_done(struct sipc_decoder *d, size_t n,
                          struct sipc_frame *ret_frame, bool *ret_done)
{
	d->have += n;
	*ret_done = d->have == SIPC_FRAME_HDR_LEN + (size_t)d->cur.len;
	if (*ret_done)
		decoder_emit(d, ret_frame);
}
