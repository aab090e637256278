/*
 * fuzz_frame.c - fuzz target for the incremental frame decoder.
 *
 * Input: u32 max_payload selector | u32 split seed | byte stream.
 * The stream is decoded twice: in one piece, and split into chunks whose
 * sizes come from the split seed (1 byte to a few KiB).  Invariants:
 *   - a payload buffer exists only for a validated header, and its
 *     length never exceeds max_payload;
 *   - every decoded frame re-encodes to exactly the 24 header bytes it
 *     came from, and its payload is exactly the bytes that followed;
 *   - consumption is exact (never more than offered; progress whenever
 *     bytes are offered and no error occurred);
 *   - an error is sticky, and decoding does not depend on the split:
 *     both runs give the same frames, the same error, the same partial
 *     state.
 * Single-threaded (libFuzzer calls it from one thread).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"
#include "sipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

struct run {
	unsigned frames;
	uint32_t hash;            /* of every frame's type, id, len */
	int error;
	bool partial;
};

static uint64_t
next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Check a completed frame against the stream bytes at `off`. */
static void
check_frame(const struct sipc_frame *f, const uint8_t *stream, size_t slen,
    size_t off, uint32_t max_payload)
{
	uint8_t hdr[SIPC_FRAME_HDR_LEN];

	CHECK(f->hdr.len <= max_payload);
	CHECK(off + SIPC_FRAME_HDR_LEN + f->hdr.len <= slen);
	sipc__frame_encode_hdr(hdr, &f->hdr);
	CHECK(memcmp(hdr, stream + off, SIPC_FRAME_HDR_LEN) == 0);
	CHECK((f->payload == NULL) == (f->hdr.len == 0));
	if (f->hdr.len > 0)
		CHECK(memcmp(f->payload, stream + off + SIPC_FRAME_HDR_LEN,
		    f->hdr.len) == 0);
}

static void
check_state(const struct sipc_decoder *d)
{
	if (d->payload != NULL) {
		CHECK(d->in_payload);
		CHECK(d->cur.len > 0 && d->cur.len <= d->max_payload);
	}
	CHECK(d->have <= SIPC_FRAME_HDR_LEN + (size_t)d->max_payload);
}

/* Decode `stream` in chunks (chunk = 0: all at once). */
static void
decode(const uint8_t *stream, size_t slen, uint32_t max_payload,
    uint64_t seed, bool split, struct run *ret)
{
	struct sipc_decoder d;
	size_t pos = 0, frame_off = 0;

	memset(ret, 0, sizeof(*ret));
	sipc__decoder_init(&d, max_payload);
	while (pos < slen) {
		size_t chunk = slen - pos;

		if (split) {
			uint64_t v = next(&seed);
			size_t c = (v & 3) == 0 ? 1 + (v >> 8) % 4096 :
			    1 + (v >> 8) % 32;

			chunk = c < chunk ? c : chunk;
		}
		while (chunk > 0) {
			struct sipc_frame f;
			bool done = false;
			long n = sipc__decoder_feed(&d, stream + pos, chunk, &f,
			    &done);

			check_state(&d);
			if (n < 0) {
				ret->error = (int)n;
				/* sticky */
				CHECK(sipc__decoder_feed(&d, stream + pos, chunk,
				    &f, &done) == n);
				goto out;
			}
			CHECK((size_t)n <= chunk);
			CHECK(n > 0 || done);
			pos += (size_t)n;
			chunk -= (size_t)n;
			if (done) {
				check_frame(&f, stream, slen, frame_off,
				    max_payload);
				ret->frames++;
				ret->hash = ret->hash * 31 + f.hdr.type;
				ret->hash = ret->hash * 31 + (uint32_t)f.hdr.id;
				ret->hash = ret->hash * 31 + f.hdr.len;
				frame_off = pos;
				free(f.payload);
			}
		}
	}
out:
	ret->partial = sipc__decoder_partial(&d);
	CHECK(ret->error != 0 || ret->partial == (pos > frame_off));
	sipc__decoder_free(&d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run whole, split;
	uint32_t sel, max_payload;
	uint32_t seed;

	if (size < 8)
		return 0;
	memcpy(&sel, data, 4);
	memcpy(&seed, data + 4, 4);
	/* Small maxima most of the time so the length checks are reached;
	 * occasionally the default 16 MiB (allocation must stay exact). */
	max_payload = (sel & 0xff) == 0xff ? 16u << 20 :
	    sel % 70000;
	decode(data + 8, size - 8, max_payload, seed, false, &whole);
	decode(data + 8, size - 8, max_payload, seed, true, &split);
	CHECK(whole.frames == split.frames);
	CHECK(whole.hash == split.hash);
	CHECK(whole.error == split.error);
	CHECK(whole.partial == split.partial);
	return 0;
}
