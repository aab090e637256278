/*
 * jrec.h - journal record codec: pure encode / decode of one record, no
 * I/O, no locks, any thread.  The byte layout is described in journal.h.
 * Decoding never trusts a length before checking it against the maximum
 * and never reads past `len`.
 */
#ifndef SIPC_JREC_H
#define SIPC_JREC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc_provider.h"
#include "unix/ident.h"

#define SIPC__JREC_HDR 9   /* magic u32, length u32, type u8 */
#define SIPC__JREC_MAX_PAYLOAD 512u
#define SIPC__JREC_MAX (SIPC__JREC_HDR + SIPC__JREC_MAX_PAYLOAD + 4)
#define SIPC__JREC_MAGIC 0x4A504953u  /* "SIPJ" little-endian */

/* INSTANCE flags: what the instance's records promise across a power
 * loss.  SENT_DURABLE: no frame went to a worker before its WRITTEN
 * record was synced (durability group and each). */
#define SIPC__JINST_SENT_DURABLE 0x01u

struct sipc__jinstance {
	uint8_t instance[16];
	char boot_id[SIPC__BOOT_ID_LEN + 1];
	pid_t pid;
	int64_t time_ms;           /* wall clock, epoch ms */
	uint8_t flags;             /* SIPC__JINST_*; absent (0) in the
	                            * records of earlier versions */
};

struct sipc__jaccepted {
	uint64_t id;
	uint8_t keylen;
	char key[256];             /* keylen bytes (NUL-terminated on decode) */
	uint64_t digest;
	uint32_t len;
	int64_t deadline;          /* wall clock, epoch ms; 0 = none */
};

struct sipc__jwritten {
	uint64_t id;
	uint32_t slot, generation;
	pid_t pid;
};

struct sipc__jcompleted {
	uint64_t id;
	uint8_t outcome;
	int32_t error;
};

/* A worker's ownership record: the provider that launched it and the
 * identity that provider can prove later (opaque here). */
struct sipc__jowner {
	char provider[SIPC_PROVIDER_NAME_MAX + 1];
	struct sipc_provider_id id;
	uint8_t instance[16];      /* supervisor instance that launched it */
	uint32_t slot, generation;
};

/* A version 1 WORKER record (SIPC__JR_WORKER_V1) began with these bytes:
 * pid u32, pgid u32, starttime u64, boot_id[36].  They are, by design,
 * the local provider's identity (unix/ident.h), so the decoder turns
 * such a record into a "local" owner record without knowing the
 * fields. */
#define SIPC__JREC_V1_ID_LEN 52

struct sipc__jgone {
	uint8_t instance[16];
	uint32_t slot, generation;
};

struct sipc__jresolved {
	uint8_t instance[16];
	uint64_t id;
};

struct sipc__jrec {
	uint8_t type;              /* enum sipc__jrec_type (journal.h) */
	union {
		struct sipc__jinstance inst;
		struct sipc__jaccepted acc;
		struct sipc__jwritten wr;
		struct sipc__jcompleted done;
		struct sipc__jowner worker;
		struct sipc__jgone gone;
		struct sipc__jresolved resolved;
		uint64_t delivered_id;
	} u;
};

/* Encode `rec` into buf (cap >= SIPC__JREC_MAX always suffices).  Returns
 * 0 and the record length, or -EINVAL for an unknown type (the version 1
 * WORKER record is read, never written) or an owner record whose name or
 * identity does not fit. */
int sipc__jrec_encode(const struct sipc__jrec *rec, uint8_t *buf, size_t cap,
    size_t *ret_len);

/*
 * Decode the record at the start of buf[0..len).  Returns 0 with *ret and
 * *ret_used (its length in bytes); -EAGAIN when the bytes end before the
 * record does (a torn tail if this is the end of the file); -EBADMSG for
 * a bad record (magic, length, checksum, type, or payload that does not
 * parse exactly).  A version 1 WORKER record decodes as a WORKER record
 * of provider "local".  On -EBADMSG *ret_extent is the record's length when
 * its framing (magic, length) was sound and its bytes are all present,
 * else 0; on success it equals *ret_used.
 */
int sipc__jrec_decode(const uint8_t *buf, size_t len, struct sipc__jrec *ret,
    size_t *ret_used, size_t *ret_extent);

#endif
