/*
 * crc32c.h - CRC-32C (Castagnoli), used for frame header and journal
 * record integrity.  Pure function, any thread.
 */
#ifndef SIPC_CRC32C_H
#define SIPC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC-32C over `len` bytes.  Start with crc = 0. */
uint32_t sipc__crc32c(uint32_t crc, const void *buf, size_t len);

#endif
