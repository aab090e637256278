/*
 * frame.c - the sipc wire format (see wire/wire.h): pure encode and
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
#include "wire/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sipc.h"

void
sipc__frame_encode_hdr(uint8_t out[SIPC_FRAME_HDR_LEN],
    const struct sipc_frame_hdr *h)
{
	sipc__le32_put(out, SIPC_FRAME_MAGIC);
	out[4] = SIPC_FRAME_VERSION;
	out[5] = h->type;
	sipc__le16_put(out + 6, h->flags);
	sipc__le64_put(out + 8, h->id);
	sipc__le32_put(out + 16, h->len);
	sipc__le32_put(out + 20, sipc__crc32c(0, out, 20));
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

	if (sipc__le32_get(in) != SIPC_FRAME_MAGIC)
		return SIPC_E_BADMAGIC;
	if (in[4] != SIPC_FRAME_VERSION)
		return SIPC_E_VERSION;
	if (in[5] < SIPC_FT_HELLO || in[5] > SIPC_FT_MAX)
		return SIPC_E_BADTYPE;
	if (sipc__le32_get(in + 20) != sipc__crc32c(0, in, 20))
		return SIPC_E_BADCHECK;
	h.version = in[4];
	h.type = in[5];
	h.flags = sipc__le16_get(in + 6);
	h.id = sipc__le64_get(in + 8);
	h.len = sipc__le32_get(in + 16);
	if (h.len > max_payload || h.len > SIPC_FRAME_MAX_PAYLOAD)
		return SIPC_E_TOOBIG;
	*ret = h;
	return 0;
}

void
sipc__hello_encode(uint8_t out[SIPC_HELLO_LEN], const struct sipc_hello *h)
{
	sipc__le32_put(out, h->proto_version);
	sipc__le32_put(out + 4, h->pid);
	sipc__le32_put(out + 8, h->flags);
	sipc__le32_put(out + 12, h->max_inflight);
}

int
sipc__hello_decode(const uint8_t *in, size_t len, struct sipc_hello *ret)
{
	if (in == NULL || len != SIPC_HELLO_LEN)
		return SIPC_E_PROTOCOL;
	ret->proto_version = sipc__le32_get(in);
	ret->pid = sipc__le32_get(in + 4);
	ret->flags = sipc__le32_get(in + 8);
	ret->max_inflight = sipc__le32_get(in + 12);
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
	ret_frame->fd = -1;
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
