/*
 * crc32c.c - table-driven CRC-32C (reflected polynomial 0x82F63B78).
 * The table is computed at compile time by a constant expression so there
 * is no init race between threads.
 */
#include "crc32c.h"

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

uint32_t
sipc__crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
