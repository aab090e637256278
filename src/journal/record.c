/*
 * journal/record.c - journal record codec (see journal/journal.h).  Pure, any thread.
 * Integers are written little-endian byte by byte (wire/wire.h) so the format
 * does not depend on the host.
 */
#include "journal/journal.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "wire/wire.h"

struct wbuf {
	uint8_t *p;
	size_t n;
};

static void
put(struct wbuf *w, const void *src, size_t len)
{
	memcpy(w->p + w->n, src, len);
	w->n += len;
}

static void
put_u8(struct wbuf *w, uint8_t v)
{
	w->p[w->n++] = v;
}

static void
put_u16(struct wbuf *w, uint16_t v)
{
	sipc__le16_put(w->p + w->n, v);
	w->n += 2;
}

static void
put_u32(struct wbuf *w, uint32_t v)
{
	sipc__le32_put(w->p + w->n, v);
	w->n += 4;
}

static void
put_u64(struct wbuf *w, uint64_t v)
{
	sipc__le64_put(w->p + w->n, v);
	w->n += 8;
}

struct rbuf {
	const uint8_t *p;
	size_t n, off;
	bool bad;
};

static void
get(struct rbuf *r, void *dst, size_t len)
{
	if (r->bad || r->n - r->off < len) {
		r->bad = true;
		memset(dst, 0, len);
		return;
	}
	memcpy(dst, r->p + r->off, len);
	r->off += len;
}

static uint8_t
get_u8(struct rbuf *r)
{
	uint8_t v;

	get(r, &v, 1);
	return v;
}

static uint16_t
get_u16(struct rbuf *r)
{
	uint8_t b[2];

	get(r, b, 2);
	return sipc__le16_get(b);
}

static uint32_t
get_u32(struct rbuf *r)
{
	uint8_t b[4];

	get(r, b, 4);
	return sipc__le32_get(b);
}

static uint64_t
get_u64(struct rbuf *r)
{
	uint8_t b[8];

	get(r, b, 8);
	return sipc__le64_get(b);
}

/* An owner record: who launched the worker, and its identity. */
static int
encode_owner(const struct sipc__jowner *k, struct wbuf *w)
{
	size_t nl = strnlen(k->provider, sizeof(k->provider));

	if (nl == 0 || nl > SIPC_PROVIDER_NAME_MAX ||
	    k->id.len > SIPC_PROVIDER_ID_MAX)
		return -EINVAL;
	put_u8(w, (uint8_t)nl);
	put(w, k->provider, nl);
	put_u16(w, k->id.len);
	put(w, k->id.bytes, k->id.len);
	put(w, k->instance, 16);
	put_u32(w, k->slot);
	put_u32(w, k->generation);
	return 0;
}

/* Payload of each type; the header and checksum are added around it. */
static int
encode_payload(const struct sipc__jrec *rec, struct wbuf *w)
{
	switch (rec->type) {
	case SIPC__JR_INSTANCE:
		put(w, rec->u.inst.instance, 16);
		put(w, rec->u.inst.boot_id, SIPC__BOOT_ID_LEN);
		put_u32(w, (uint32_t)rec->u.inst.pid);
		put_u64(w, (uint64_t)rec->u.inst.time_ms);
		put_u8(w, rec->u.inst.flags);
		return 0;
	case SIPC__JR_ACCEPTED:
		put_u64(w, rec->u.acc.id);
		put_u8(w, rec->u.acc.keylen);
		put(w, rec->u.acc.key, rec->u.acc.keylen);
		put_u64(w, rec->u.acc.digest);
		put_u32(w, rec->u.acc.len);
		put_u64(w, (uint64_t)rec->u.acc.deadline);
		return 0;
	case SIPC__JR_WRITTEN:
		put_u64(w, rec->u.wr.id);
		put_u32(w, rec->u.wr.slot);
		put_u32(w, rec->u.wr.generation);
		put_u32(w, (uint32_t)rec->u.wr.pid);
		return 0;
	case SIPC__JR_COMPLETED:
		put_u64(w, rec->u.done.id);
		put_u8(w, rec->u.done.outcome);
		put_u32(w, (uint32_t)rec->u.done.error);
		return 0;
	case SIPC__JR_WORKER:
		return encode_owner(&rec->u.worker, w);
	case SIPC__JR_WORKER_GONE:
		put(w, rec->u.gone.instance, 16);
		put_u32(w, rec->u.gone.slot);
		put_u32(w, rec->u.gone.generation);
		return 0;
	case SIPC__JR_RESOLVED:
		put(w, rec->u.resolved.instance, 16);
		put_u64(w, rec->u.resolved.id);
		return 0;
	case SIPC__JR_DELIVERED:
		put_u64(w, rec->u.delivered_id);
		return 0;
	}
	return -EINVAL;
}

int
sipc__jrec_encode(const struct sipc__jrec *rec, uint8_t *buf, size_t cap,
    size_t *ret_len)
{
	uint8_t tmp[SIPC__JREC_MAX];
	struct wbuf w = { tmp, SIPC__JREC_HDR };
	uint32_t plen, crc;
	int r;

	if ((r = encode_payload(rec, &w)) < 0)
		return r;
	plen = (uint32_t)(w.n - SIPC__JREC_HDR);
	w.n = 0;
	put_u32(&w, SIPC__JREC_MAGIC);
	put_u32(&w, plen);
	put_u8(&w, rec->type);
	/* CRC over length, type, payload: bytes 4 .. 9+plen. */
	crc = sipc__crc32c(0, tmp + 4, 5 + plen);
	w.n = SIPC__JREC_HDR + plen;
	put_u32(&w, crc);
	if (w.n > cap)
		return -ENOSPC;
	memcpy(buf, tmp, w.n);
	*ret_len = w.n;
	return 0;
}

static void
decode_owner(struct rbuf *r, struct sipc__jowner *k)
{
	uint8_t nl = get_u8(r);

	if (nl == 0 || nl > SIPC_PROVIDER_NAME_MAX) {
		r->bad = true;
		return;
	}
	get(r, k->provider, nl);
	if (memchr(k->provider, '\0', nl) != NULL)
		r->bad = true;
	k->id.len = get_u16(r);
	if (k->id.len > SIPC_PROVIDER_ID_MAX) {
		r->bad = true;
		return;
	}
	get(r, k->id.bytes, k->id.len);
	get(r, k->instance, 16);
	k->slot = get_u32(r);
	k->generation = get_u32(r);
}

/* A version 1 WORKER record: its leading bytes are a local identity. */
static void
decode_owner_v1(struct rbuf *r, struct sipc__jowner *k)
{
	memcpy(k->provider, "local", sizeof("local"));
	k->id.len = SIPC__JREC_V1_ID_LEN;
	get(r, k->id.bytes, SIPC__JREC_V1_ID_LEN);
	get(r, k->instance, 16);
	k->slot = get_u32(r);
	k->generation = get_u32(r);
}

static void
decode_payload(uint8_t type, struct rbuf *r, struct sipc__jrec *rec)
{
	switch (type) {
	case SIPC__JR_INSTANCE:
		get(r, rec->u.inst.instance, 16);
		get(r, rec->u.inst.boot_id, SIPC__BOOT_ID_LEN);
		rec->u.inst.pid = (pid_t)get_u32(r);
		rec->u.inst.time_ms = (int64_t)get_u64(r);
		/* a trailing flags byte; earlier versions wrote none */
		if (r->off < r->n)
			rec->u.inst.flags = get_u8(r);
		return;
	case SIPC__JR_ACCEPTED:
		rec->u.acc.id = get_u64(r);
		rec->u.acc.keylen = get_u8(r);
		get(r, rec->u.acc.key, rec->u.acc.keylen);
		if (memchr(rec->u.acc.key, '\0', rec->u.acc.keylen) != NULL)
			r->bad = true;  /* keys are C strings */
		rec->u.acc.digest = get_u64(r);
		rec->u.acc.len = get_u32(r);
		rec->u.acc.deadline = (int64_t)get_u64(r);
		return;
	case SIPC__JR_WRITTEN:
		rec->u.wr.id = get_u64(r);
		rec->u.wr.slot = get_u32(r);
		rec->u.wr.generation = get_u32(r);
		rec->u.wr.pid = (pid_t)get_u32(r);
		return;
	case SIPC__JR_COMPLETED:
		rec->u.done.id = get_u64(r);
		rec->u.done.outcome = get_u8(r);
		rec->u.done.error = (int32_t)get_u32(r);
		return;
	case SIPC__JR_WORKER:
		decode_owner(r, &rec->u.worker);
		return;
	case SIPC__JR_WORKER_V1:
		/* read as the record that replaced it */
		decode_owner_v1(r, &rec->u.worker);
		rec->type = SIPC__JR_WORKER;
		return;
	case SIPC__JR_WORKER_GONE:
		get(r, rec->u.gone.instance, 16);
		rec->u.gone.slot = get_u32(r);
		rec->u.gone.generation = get_u32(r);
		return;
	case SIPC__JR_RESOLVED:
		get(r, rec->u.resolved.instance, 16);
		rec->u.resolved.id = get_u64(r);
		return;
	case SIPC__JR_DELIVERED:
		rec->u.delivered_id = get_u64(r);
		return;
	}
	r->bad = true;
}

int
sipc__jrec_decode(const uint8_t *buf, size_t len, struct sipc__jrec *ret,
    size_t *ret_used, size_t *ret_extent)
{
	struct rbuf h = { buf, len, 0, false }, r;
	struct sipc__jrec rec;
	uint32_t magic, plen, crc;
	size_t total;

	*ret_extent = 0;
	if (len < SIPC__JREC_HDR)
		return -EAGAIN;
	magic = get_u32(&h);
	plen = get_u32(&h);
	if (magic != SIPC__JREC_MAGIC || plen > SIPC__JREC_MAX_PAYLOAD)
		return -EBADMSG;
	total = SIPC__JREC_HDR + plen + 4;
	if (len < total)
		return -EAGAIN;
	*ret_extent = total;
	h.off = SIPC__JREC_HDR + plen;
	crc = get_u32(&h);
	if (crc != sipc__crc32c(0, buf + 4, 5 + plen))
		return -EBADMSG;
	memset(&rec, 0, sizeof(rec));
	rec.type = buf[8];
	r = (struct rbuf){ buf + SIPC__JREC_HDR, plen, 0, false };
	decode_payload(rec.type, &r, &rec);
	if (r.bad || r.off != plen)
		return -EBADMSG;
	*ret = rec;
	*ret_used = total;
	return 0;
}
