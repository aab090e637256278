/*
 * frame_test.c - tests for src/wire/frame.c: header and HELLO codecs, every
 * rejection in its documented order, and the incremental decoder under
 * every kind of split.  Single-threaded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"
#include "sipc.h"
#include "testlib.h"

static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Encode one whole frame into a fresh buffer. */
static uint8_t *
mkframe(uint8_t type, uint64_t id, uint16_t flags, const uint8_t *p,
    uint32_t len, size_t *ret_len)
{
	struct sipc_frame_hdr h = { .type = type, .flags = flags, .id = id,
		.len = len };
	uint8_t *f = malloc(SIPC_FRAME_HDR_LEN + (size_t)len);

	CU_ASSERT_FATAL(f != NULL);
	sipc__frame_encode_hdr(f, &h);
	if (len > 0)
		memcpy(f + SIPC_FRAME_HDR_LEN, p, len);
	*ret_len = SIPC_FRAME_HDR_LEN + (size_t)len;
	return f;
}

/* Re-seal a hand-edited header so only the intended field is wrong. */
static void
reseal(uint8_t *h)
{
	uint32_t c = sipc__crc32c(0, h, 20);

	h[20] = (uint8_t)c;
	h[21] = (uint8_t)(c >> 8);
	h[22] = (uint8_t)(c >> 16);
	h[23] = (uint8_t)(c >> 24);
}

/* rules: F1 */
static void
test_frame_header_layout_is_little_endian(void)
{
	struct sipc_frame_hdr h = { .type = SIPC_FT_REPLY, .flags = 0x0102,
		.id = 0x0807060504030201ull, .len = 0x0c0b0a09 };
	uint8_t b[SIPC_FRAME_HDR_LEN];
	static const uint8_t want[20] = { 'S', 'I', 'P', 'C', 1, 3, 0x02,
		0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0x09, 0x0a, 0x0b, 0x0c };
	uint32_t c = sipc__crc32c(0, want, 20);

	h.version = 77; /* ignored: the encoder always writes its own */
	sipc__frame_encode_hdr(b, &h);
	CU_ASSERT(memcmp(b, want, 20) == 0);
	CU_ASSERT(b[20] == (c & 0xff) && b[23] == c >> 24);
}

/* rules: F1 F6 */
static void
test_frame_roundtrip_every_type(void)
{
	for (int t = SIPC_FT_HELLO; t <= SIPC_FT_MAX; t++) {
		struct sipc_frame_hdr in = { .type = (uint8_t)t,
			.flags = (uint16_t)(t * 3), .id = UINT64_MAX - (uint64_t)t,
			.len = (uint32_t)t * 1000 };
		struct sipc_frame_hdr out;
		uint8_t b[SIPC_FRAME_HDR_LEN];

		memset(&out, 0, sizeof(out));
		sipc__frame_encode_hdr(b, &in);
		CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1u << 20, &out), 0);
		CU_ASSERT_EQUAL(out.version, SIPC_FRAME_VERSION);
		CU_ASSERT_EQUAL(out.type, t);
		CU_ASSERT_EQUAL(out.flags, in.flags);
		CU_ASSERT_EQUAL(out.id, in.id);
		CU_ASSERT_EQUAL(out.len, in.len);
	}
}

/* rules: F1 */
static void
test_frame_hello_roundtrip(void)
{
	struct sipc_hello in = { SIPC_PROTOCOL_VERSION, 123456,
		SIPC_HELLO_F_ACCEPTS, 0xfffffffe }, out = { 0 };
	uint8_t b[SIPC_HELLO_LEN + 1];

	sipc__hello_encode(b, &in);
	CU_ASSERT_EQUAL(sipc__hello_decode(b, SIPC_HELLO_LEN, &out), 0);
	CU_ASSERT(memcmp(&in, &out, sizeof(in)) == 0);
	out.pid = 9;
	CU_ASSERT_EQUAL(sipc__hello_decode(b, SIPC_HELLO_LEN - 1, &out),
	    SIPC_E_PROTOCOL);
	CU_ASSERT_EQUAL(sipc__hello_decode(b, SIPC_HELLO_LEN + 1, &out),
	    SIPC_E_PROTOCOL);
	CU_ASSERT_EQUAL(out.pid, 9); /* untouched on failure */
}

/* Each rejection, and that the earlier check wins when several fail. */
/* rules: F3 */
static void
test_frame_rejections_in_order(void)
{
	struct sipc_frame_hdr in = { .type = SIPC_FT_REQUEST, .id = 5,
		.len = 100 }, out = { .id = 42 };
	uint8_t g[SIPC_FRAME_HDR_LEN], b[SIPC_FRAME_HDR_LEN];

	sipc__frame_encode_hdr(g, &in);
	memcpy(b, g, sizeof(b));
	b[1] = 'X';
	reseal(b);
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_BADMAGIC);
	b[4] = 2; /* also a bad version: magic is still reported first */
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_BADMAGIC);

	memcpy(b, g, sizeof(b));
	b[4] = 2;
	b[5] = 0;
	reseal(b);
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_VERSION);

	memcpy(b, g, sizeof(b));
	b[5] = 0;
	reseal(b);
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_BADTYPE);
	b[5] = SIPC_FT_MAX + 1;
	reseal(b);
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_BADTYPE);
	b[22] ^= 1; /* bad type and bad checksum: type first */
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_BADTYPE);

	memcpy(b, g, sizeof(b));
	b[16] = 0xff; /* length changed, checksum not: checksum wins */
	b[19] = 0xff;
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_BADCHECK);
	memcpy(b, g, sizeof(b));
	b[23] ^= 0x80;
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, 1000, &out), SIPC_E_BADCHECK);

	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(g, 99, &out), SIPC_E_TOOBIG);
	CU_ASSERT_EQUAL(out.id, 42); /* untouched by every failure above */
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(g, 100, &out), 0);
	CU_ASSERT_EQUAL(out.id, 5);

	/* The hard cap holds whatever maximum a caller passes. */
	in.len = SIPC_FRAME_MAX_PAYLOAD;
	sipc__frame_encode_hdr(b, &in);
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, UINT32_MAX, &out), 0);
	in.len = SIPC_FRAME_MAX_PAYLOAD + 1;
	sipc__frame_encode_hdr(b, &in);
	CU_ASSERT_EQUAL(sipc__frame_decode_hdr(b, UINT32_MAX, &out),
	    SIPC_E_TOOBIG);
}

/* rules: F4 */
static void
test_frame_toobig_allocates_nothing(void)
{
	struct sipc_frame_hdr h = { .type = SIPC_FT_REPLY, .id = 1,
		.len = 0xFFFFFFFFu };
	struct sipc_decoder d;
	struct sipc_frame f = { .payload = NULL };
	uint8_t b[SIPC_FRAME_HDR_LEN];
	bool done = true;

	sipc__frame_encode_hdr(b, &h);
	sipc__decoder_init(&d, SIPC_FRAME_MAX_PAYLOAD);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, b, sizeof(b), &f, &done),
	    SIPC_E_TOOBIG);
	CU_ASSERT_PTR_NULL(d.payload);
	CU_ASSERT_FALSE(d.in_payload);
	sipc__decoder_free(&d);

	/* One byte over a small configured maximum: same, nothing held. */
	h.len = 4097;
	sipc__frame_encode_hdr(b, &h);
	sipc__decoder_init(&d, 4096);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, b, sizeof(b), &f, &done),
	    SIPC_E_TOOBIG);
	CU_ASSERT_PTR_NULL(d.payload);
	sipc__decoder_free(&d);
}

/* Feed `buf` in pieces chosen by `step`; check each frame as it comes. */
static int
feed_all(struct sipc_decoder *d, const uint8_t *buf, size_t len,
    size_t (*step)(size_t left), struct sipc_frame *frames, int max)
{
	size_t off = 0, piece, used;
	int got = 0;
	bool done;
	long n;

	while (off < len) {
		piece = step(len - off);
		used = 0;
		while (used < piece) {
			n = sipc__decoder_feed(d, buf + off + used, piece - used,
			    &frames[got], &done);
			if (n < 0)
				return (int)n;
			used += (size_t)n;
			if (done && ++got == max)
				return got;
			if (!done) {
				CU_ASSERT_EQUAL(used, piece);
			}
		}
		off += piece;
	}
	return got;
}

static size_t
step_one(size_t left)
{
	return 1;
}

static size_t
step_all(size_t left)
{
	return left;
}

static size_t
step_random(size_t left)
{
	size_t s = (size_t)(rng() % 70) + 1;

	return s < left ? s : left;
}

static void
check_payload_sizes(size_t (*step)(size_t))
{
	static const uint32_t sizes[] = { 0, 1, 23, 24, 25, 4096, 65536,
		1u << 20 };
	const uint32_t max = 1u << 20;
	struct sipc_frame f[1];
	struct sipc_decoder d;
	uint8_t *p, *fr;
	size_t flen;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		p = malloc(sizes[i] + 1);
		CU_ASSERT_FATAL(p != NULL);
		for (uint32_t j = 0; j < sizes[i]; j++)
			p[j] = (uint8_t)(j * 7 + i);
		fr = mkframe(SIPC_FT_REQUEST, 1000 + i, 0, p, sizes[i], &flen);
		sipc__decoder_init(&d, max);
		CU_ASSERT_EQUAL(feed_all(&d, fr, flen, step, f, 1), 1);
		CU_ASSERT_EQUAL(f[0].hdr.len, sizes[i]);
		CU_ASSERT_EQUAL(f[0].hdr.id, 1000 + i);
		if (sizes[i] == 0) {
			CU_ASSERT_PTR_NULL(f[0].payload);
		} else {
			CU_ASSERT(f[0].payload != NULL &&
			    memcmp(f[0].payload, p, sizes[i]) == 0);
		}
		CU_ASSERT_FALSE(sipc__decoder_partial(&d));
		free(f[0].payload);
		sipc__decoder_free(&d);
		free(fr);
		free(p);
	}
}

/* rules: F2 */
static void
test_frame_sizes_whole_buffer(void)
{
	check_payload_sizes(step_all);
}

/* rules: F2 */
static void
test_frame_sizes_one_byte_at_a_time(void)
{
	check_payload_sizes(step_one);
}

/* All 256 byte values, including '\n', '\0' and a copy of the magic. */
/* rules: F2 */
static void
test_frame_all_byte_values(void)
{
	uint8_t p[256 + 4], *fr;
	struct sipc_frame f[1];
	struct sipc_decoder d;
	size_t flen;

	for (int i = 0; i < 256; i++)
		p[i] = (uint8_t)i;
	memcpy(p + 256, "SIPC", 4);
	fr = mkframe(SIPC_FT_REPLY, 7, 0, p, sizeof(p), &flen);
	sipc__decoder_init(&d, 1024);
	CU_ASSERT_EQUAL(feed_all(&d, fr, flen, step_one, f, 1), 1);
	CU_ASSERT(f[0].payload && memcmp(f[0].payload, p, sizeof(p)) == 0);
	free(f[0].payload);
	sipc__decoder_free(&d);
	free(fr);
}

/* The configured maximum itself is accepted; one byte more is not. */
/* rules: F10 */
static void
test_frame_configured_max(void)
{
	const uint32_t max = 3u << 20;
	struct sipc_frame f[1];
	struct sipc_decoder d;
	uint8_t *p = calloc(1, max + 1), *fr;
	size_t flen;

	CU_ASSERT_FATAL(p != NULL);
	p[max - 1] = 0xee;
	fr = mkframe(SIPC_FT_REQUEST, 3, 0, p, max, &flen);
	sipc__decoder_init(&d, max);
	CU_ASSERT_EQUAL(feed_all(&d, fr, flen, step_all, f, 1), 1);
	CU_ASSERT(f[0].payload && f[0].payload[max - 1] == 0xee);
	free(f[0].payload);
	sipc__decoder_free(&d);
	sipc__decoder_init(&d, max - 1);
	CU_ASSERT_EQUAL(feed_all(&d, fr, flen, step_all, f, 1), SIPC_E_TOOBIG);
	sipc__decoder_free(&d);
	free(fr);
	free(p);
}

/* Build a stream of n frames of varied types and sizes. */
static uint8_t *
mkstream(int n, size_t *ret_len)
{
	uint8_t *s = NULL, p[300], *fr;
	size_t len = 0, flen;

	for (int i = 0; i < n; i++) {
		uint32_t pl = (uint32_t)(i * 37 % 300);

		for (uint32_t j = 0; j < pl; j++)
			p[j] = (uint8_t)(i + j);
		fr = mkframe((uint8_t)(SIPC_FT_HELLO + i % SIPC_FT_MAX),
		    (uint64_t)i, (uint16_t)i, p, pl, &flen);
		s = realloc(s, len + flen);
		CU_ASSERT_FATAL(s != NULL);
		memcpy(s + len, fr, flen);
		len += flen;
		free(fr);
	}
	*ret_len = len;
	return s;
}

static void
check_stream(size_t (*step)(size_t))
{
	enum { N = 200 };
	struct sipc_frame *f = calloc(N, sizeof(*f));
	struct sipc_decoder d;
	size_t len;
	uint8_t *s = mkstream(N, &len);
	int got;

	CU_ASSERT_FATAL(f != NULL);
	sipc__decoder_init(&d, 1000);
	got = feed_all(&d, s, len, step, f, N);
	CU_ASSERT_EQUAL(got, N);
	for (int i = 0; i < got; i++) {
		uint32_t pl = (uint32_t)(i * 37 % 300);

		CU_ASSERT_EQUAL(f[i].hdr.id, (uint64_t)i);
		CU_ASSERT_EQUAL(f[i].hdr.flags, (uint16_t)i);
		CU_ASSERT_EQUAL(f[i].hdr.type, SIPC_FT_HELLO + i % SIPC_FT_MAX);
		CU_ASSERT_EQUAL(f[i].hdr.len, pl);
		for (uint32_t j = 0; j < pl; j++)
			if (f[i].payload[j] != (uint8_t)(i + j)) {
				CU_FAIL("payload byte differs");
				break;
			}
		free(f[i].payload);
	}
	CU_ASSERT_FALSE(sipc__decoder_partial(&d));
	sipc__decoder_free(&d);
	free(s);
	free(f);
}

/* rules: F2 */
static void
test_frame_many_frames_one_buffer(void)
{
	check_stream(step_all);
}

/* rules: F2 */
static void
test_frame_many_frames_byte_by_byte(void)
{
	check_stream(step_one);
}

/* rules: F2 */
static void
test_frame_random_splits(void)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		rng_state = seed * 0x9E3779B97F4A7C15ull;
		check_stream(step_random);
	}
}

/* After a bad header the decoder stays failed, even for good bytes. */
/* rules: F5 */
static void
test_frame_error_is_sticky(void)
{
	struct sipc_decoder d;
	struct sipc_frame f;
	size_t glen;
	uint8_t bad[SIPC_FRAME_HDR_LEN] = "this is not a frame!!!!",
		*good = mkframe(SIPC_FT_REPLY, 1, 0, (const uint8_t *)"ok", 2,
		&glen);
	bool done;

	sipc__decoder_init(&d, 100);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, good, 10, &f, &done), 10);
	CU_ASSERT_TRUE(sipc__decoder_partial(&d));
	sipc__decoder_free(&d);
	sipc__decoder_init(&d, 100);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, bad, sizeof(bad), &f, &done),
	    SIPC_E_BADMAGIC);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, good, glen, &f, &done),
	    SIPC_E_BADMAGIC);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, good, glen, &f, &done),
	    SIPC_E_BADMAGIC);
	sipc__decoder_free(&d);

	/* After a good frame, a bad one: the good one was delivered. */
	sipc__decoder_init(&d, 100);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, good, glen, &f, &done),
	    (long)glen);
	CU_ASSERT_TRUE(done);
	free(f.payload);
	good[5] = 99;
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, good, glen, &f, &done),
	    SIPC_E_BADTYPE);
	CU_ASSERT_EQUAL(d.error, SIPC_E_BADTYPE);
	sipc__decoder_free(&d);
	free(good);
}

/* The decoder stops after each frame: two frames need two calls. */
/* rules: F2 */
static void
test_frame_feed_stops_after_one_frame(void)
{
	uint8_t *a, *b, buf[2 * SIPC_FRAME_HDR_LEN + 3];
	size_t alen, blen;
	struct sipc_decoder d;
	struct sipc_frame f;
	bool done = false;

	a = mkframe(SIPC_FT_CANCEL, 11, 0, NULL, 0, &alen);
	b = mkframe(SIPC_FT_REPLY, 12, 0, (const uint8_t *)"abc", 3, &blen);
	memcpy(buf, a, alen);
	memcpy(buf + alen, b, blen);
	sipc__decoder_init(&d, 10);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, buf, sizeof(buf), &f, &done),
	    (long)alen);
	CU_ASSERT_TRUE(done);
	CU_ASSERT_EQUAL(f.hdr.id, 11);
	CU_ASSERT_PTR_NULL(f.payload);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, buf + alen, blen, &f, &done),
	    (long)blen);
	CU_ASSERT_TRUE(done);
	CU_ASSERT_EQUAL(f.hdr.id, 12);
	CU_ASSERT(memcmp(f.payload, "abc", 3) == 0);
	free(f.payload);
	CU_ASSERT_EQUAL(sipc__decoder_feed(&d, buf, 0, &f, &done), 0);
	CU_ASSERT_FALSE(done);
	sipc__decoder_free(&d);
	free(a);
	free(b);
}

/* Bitwise reference CRC-32C, to check the table and SSE4.2 paths. */
static uint32_t
crc_ref(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
	}
	return ~c;
}

/* rules: F1 */
static void
test_frame_crc32c_known_vectors(void)
{
	uint8_t buf[300];
	size_t n, split;

	CU_ASSERT_EQUAL(sipc__crc32c(0, "123456789", 9), 0xe3069283u);
	CU_ASSERT_EQUAL(sipc__crc32c(0, "", 0), 0);
	for (n = 0; n < sizeof(buf); n++)
		buf[n] = (uint8_t)(n * 131 + 7);
	for (n = 0; n <= sizeof(buf); n += 7) {
		CU_ASSERT_EQUAL(sipc__crc32c(0, buf, n), crc_ref(buf, n));
		split = n / 3;      /* continuing a CRC across calls */
		CU_ASSERT_EQUAL(sipc__crc32c(sipc__crc32c(0, buf, split),
		    buf + split, n - split), crc_ref(buf, n));
	}
}

int
main(void)
{
	tl_suite("frame", (tl_test[]){
		{ "test_frame_crc32c_known_vectors",
		  test_frame_crc32c_known_vectors },
		{ "test_frame_header_layout_is_little_endian",
		  test_frame_header_layout_is_little_endian },
		{ "test_frame_roundtrip_every_type",
		  test_frame_roundtrip_every_type },
		{ "test_frame_hello_roundtrip", test_frame_hello_roundtrip },
		{ "test_frame_rejections_in_order",
		  test_frame_rejections_in_order },
		{ "test_frame_toobig_allocates_nothing",
		  test_frame_toobig_allocates_nothing },
		{ "test_frame_sizes_whole_buffer",
		  test_frame_sizes_whole_buffer },
		{ "test_frame_sizes_one_byte_at_a_time",
		  test_frame_sizes_one_byte_at_a_time },
		{ "test_frame_all_byte_values", test_frame_all_byte_values },
		{ "test_frame_configured_max", test_frame_configured_max },
		{ "test_frame_many_frames_one_buffer",
		  test_frame_many_frames_one_buffer },
		{ "test_frame_many_frames_byte_by_byte",
		  test_frame_many_frames_byte_by_byte },
		{ "test_frame_random_splits", test_frame_random_splits },
		{ "test_frame_error_is_sticky", test_frame_error_is_sticky },
		{ "test_frame_feed_stops_after_one_frame",
		  test_frame_feed_stops_after_one_frame },
		{ NULL, NULL } });
	return tl_run();
}
