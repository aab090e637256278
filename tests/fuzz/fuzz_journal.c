/*
 * fuzz_journal.c - fuzz target for the journal reader.
 *
 * Each input is a journal file image.  Two passes:
 *   1. Pure: walk the image with the record codec (sipc__jrec_decode),
 *      as the reader does, applying good records to an in-memory state
 *      (sipc__js_apply).  Every decoded record re-encodes to exactly its
 *      bytes; the state's image (what compaction writes) decodes
 *      completely; the reconcile list can be built.
 *   2. Real: the image is written as `journal` in a state directory on
 *      tmpfs and opened with sipc__journal_open.  The open must succeed
 *      (a bad journal is cut, never fatal), read exactly the records of
 *      pass 1, and cut exactly the bytes after them; reconcile data can
 *      be listed; after close, a second open finds a clean journal
 *      (nothing torn, nothing corrupt).
 * Single-threaded (libFuzzer calls it from one thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal/journal.h"
#include "../lib/rmtree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static char dir[64];

struct pass1 {
	size_t good;              /* length of the good prefix */
	uint64_t records;
};

static void
state_init(struct sipc__jstate *s)
{
	memset(s, 0, sizeof(*s));
	s->nbuckets = 64;
	if ((s->buckets = calloc(s->nbuckets, sizeof(*s->buckets))) == NULL)
		abort();
}

/* Every record of a compaction image must decode, back to back. */
static void
check_image(const uint8_t *b, size_t l)
{
	size_t off = 0;

	while (off < l) {
		struct sipc__jrec rec;
		size_t used, extent;

		CHECK(sipc__jrec_decode(b + off, l - off, &rec, &used,
		    &extent) == 0);
		off += used;
	}
}

/* A version 1 WORKER record, or an INSTANCE record without its flags
 * byte, is read, never written: it re-encodes as the current record,
 * which must decode and encode to itself. */
static void
check_reencoded(const uint8_t *enc, size_t elen)
{
	struct sipc__jrec again;
	uint8_t enc2[SIPC__JREC_MAX];
	size_t used, extent, elen2;

	CHECK(sipc__jrec_decode(enc, elen, &again, &used, &extent) == 0);
	CHECK(used == elen);
	CHECK(sipc__jrec_encode(&again, enc2, sizeof(enc2), &elen2) == 0);
	CHECK(elen2 == elen && memcmp(enc2, enc, elen) == 0);
}

static void
pure_pass(const uint8_t *data, size_t size, struct pass1 *p)
{
	struct sipc__jstate s;
	struct sipc_unresolved *u = NULL;
	uint8_t *img = NULL, enc[SIPC__JREC_MAX];
	size_t off = 0, ilen = 0, n = 0, elen;
	int ctx = -1;

	state_init(&s);
	p->records = 0;
	while (off < size) {
		struct sipc__jrec rec;
		size_t used = 0, extent = 0;
		int r = sipc__jrec_decode(data + off, size - off, &rec, &used,
		    &extent);

		CHECK(r == 0 || r == -EAGAIN || r == -EBADMSG);
		if (r < 0) {
			CHECK(extent <= size - off);
			break;
		}
		CHECK(used == extent && used <= size - off);
		CHECK(used <= SIPC__JREC_MAX);
		CHECK(sipc__jrec_encode(&rec, enc, sizeof(enc), &elen) == 0);
		if (data[off + SIPC__JREC_HDR - 1] == SIPC__JR_WORKER_V1)
			check_reencoded(enc, elen);
		else if (data[off + SIPC__JREC_HDR - 1] == SIPC__JR_INSTANCE &&
		    elen == used + 1) {
			/* an INSTANCE record written before its flags byte
			 * existed re-encodes with one (flags 0) */
			CHECK(rec.u.inst.flags == 0);
			check_reencoded(enc, elen);
		} else
			CHECK(elen == used && memcmp(enc, data + off, used) == 0);
		CHECK(sipc__js_apply(&s, &rec, &ctx) == 0);
		p->records++;
		off += used;
	}
	p->good = off;
	CHECK(sipc__js_image(&s, &img, &ilen) == 0);
	check_image(img, ilen);
	free(img);
	CHECK(sipc__js_unresolved(&s, &u, &n) == 0);
	CHECK((n == 0) == (u == NULL));
	free(u);
	sipc__js_free(&s);
}

static void
write_journal(const uint8_t *data, size_t size)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "%s/journal", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
}

static void
open_pass(size_t size, const struct pass1 *p)
{
	struct sipc__journal *j = NULL;
	struct sipc__journal_stats st;
	struct sipc_unresolved *u = NULL;
	struct sipc__jowner *w = NULL;
	size_t nu = 0, nw = 0;
	char err[256] = "";

	CHECK(sipc__journal_open(dir, SIPC_DURABLE_OFF, 0, &j, err,
	    sizeof(err)) == 0);
	sipc__journal_get_stats(j, &st);
	CHECK(st.records_read == p->records);
	CHECK(st.torn_bytes + st.corrupt_bytes == size - p->good);
	CHECK(st.corrupt <= 1);
	if (st.corrupt) {
		/* The whole image was kept, under a fresh name. */
		struct stat sb;
		char path[160];

		snprintf(path, sizeof(path), "%s/%s", dir, st.corrupt_copy);
		CHECK(stat(path, &sb) == 0 && (size_t)sb.st_size == size);
		CHECK(unlink(path) == 0);   /* one per input, not a pile */
	}
	CHECK(sipc__journal_unresolved(j, &u, &nu) == 0);
	CHECK(sipc__journal_leftover_workers(j, &w, &nw) == 0);
	free(u);
	free(w);
	sipc__journal_close(j);

	/* What the first open left behind is clean. */
	j = NULL;
	CHECK(sipc__journal_open(dir, SIPC_DURABLE_OFF, 0, &j, err,
	    sizeof(err)) == 0);
	sipc__journal_get_stats(j, &st);
	CHECK(st.torn_bytes == 0 && st.corrupt == 0);
	sipc__journal_close(j);
}

/* Leave no state directory behind. */
static void
cleanup(void)
{
	(void)rmtree(dir);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pass1 p;

	if (size > 1 << 20)
		return 0;
	if (dir[0] == '\0') {
		/* tmpfs when there is one: the reader fsyncs. */
		snprintf(dir, sizeof(dir), "%s/sipc-fuzz-journal-%d",
		    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
		    (int)getpid());
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			abort();
		atexit(cleanup);
	}
	pure_pass(data, size, &p);
	write_journal(data, size);
	open_pass(size, &p);
	return 0;
}
