/*
 * le.h - little-endian integers in byte buffers: the one copy the wire
 * format (frame.c, the worker runtime) and the journal (jrec.c) share.
 * Byte by byte, so neither the host's byte order nor the buffer's
 * alignment matters.  Pure, static inline: a leaf for either archive.
 */
#ifndef SIPC_LE_H
#define SIPC_LE_H

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

#endif
