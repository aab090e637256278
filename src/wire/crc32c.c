/*
 * crc32c.c - table-driven CRC-32C (reflected polynomial 0x82F63B78).
 * The table is computed at compile time by a constant expression so there
 * is no init race between threads.
 */
#include "wire/wire.h"

#define P 0x82F63B78u
#define B1(c) (((c) & 1) ? (((c) >> 1) ^ P) : ((c) >> 1))
#define B2(c) B1(B1(c))
#define B4(c) B2(B2(c))
#define B8(c) B4(B4(c))
#define R1(n) B8((uint32_t)(n))
#define R4(n) R1(n), R1((n) + 1), R1((n) + 2), R1((n) + 3)
#define R16(n) R4(n), R4((n) + 4), R4((n) + 8), R4((n) + 12)
#define R64(n) R16(n), R16((n) + 16), R16((n) + 32), R16((n) + 48)

static const uint32_t crc_table[256] = {
	R64(0), R64(64), R64(128), R64(192)
};

static uint32_t
crc32c_table(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* SSE4.2 has a CRC-32C instruction: 8 bytes per step. */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc, v;

	for (; len >= 8; p += 8, len -= 8) {
		__builtin_memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

static int
have_sse42(void)
{
	/* Computed once; a benign race (same value written) if two
	 * threads get here first together. */
	static _Atomic int known;     /* 0 unknown, 1 no, 2 yes */
	int k = known;

	if (k == 0) {
		__builtin_cpu_init();
		k = __builtin_cpu_supports("sse4.2") ? 2 : 1;
		known = k;
	}
	return k == 2;
}
#endif

uint32_t
sipc__crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (have_sse42())
		return ~crc32c_hw(crc, buf, len);
#endif
	return ~crc32c_table(crc, buf, len);
}
