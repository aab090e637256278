/*
 * sipc_fdpass.c - the `fdpass` section of sipc_bench: a document by
 * descriptor (SIPC_REQ_FD, a sealed memfd) against the same document
 * inline, 1 MiB and 64 MiB.
 *
 * One worker, the docsum fixture: its handler reads the whole document
 * (a CRC-32C over it, mapped or inline) and replies with a short line,
 * so both ways pay for the worker touching every byte; what differs is
 * the way there.  Sequential sipc_call()s, the median time per call.
 * By descriptor the host makes the memfd once and submits it each call
 * (the library reopens it read-only, sends it by SCM_RIGHTS, the
 * runtime maps it); inline the same bytes are copied into the request,
 * written to the socket and read into the worker's buffer.  Inline
 * 64 MiB needs max_payload raised to 64 MiB (and ring_bytes and
 * mem_ceiling with it), which this section sets for both ways.
 *
 * Threads: the main thread.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "sipc_bench.h"

#define MIB (1024u * 1024u)

/* A sealed memfd of `len` pattern bytes, and the same bytes in *ret_buf. */
static int
doc_make(size_t len, uint8_t **ret_buf)
{
	int fd = memfd_create("bench-doc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint8_t *b = malloc(len);
	size_t i;

	if (fd < 0 || b == NULL)
		goto fail;
	for (i = 0; i < len; i++)
		b[i] = (uint8_t)((i * 2654435761u) >> 13);
	for (i = 0; i < len;) {
		ssize_t n = write(fd, b + i, len - i);

		if (n <= 0)
			goto fail;
		i += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		goto fail;
	*ret_buf = b;
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	free(b);
	return -1;
}

/* Median us per call of `n` calls of `rq` (after one warm-up), or -1. */
static double
per_call_us(sipc_supervisor *s, const struct sipc_request *rq, unsigned n)
{
	struct sipc_result r;
	uint64_t *t = calloc(n, sizeof(*t)), t0;
	unsigned i, ok = 0;
	double med;

	if (t == NULL)
		return -1;
	if (sipc_call(s, rq, &r) == 0)
		sipc_result_release(&r);
	for (i = 0; i < n; i++) {
		t0 = bench_now_ns();
		if (sipc_call(s, rq, &r) == 0) {
			ok += r.outcome == SIPC_OUTCOME_OK;
			sipc_result_release(&r);
		}
		t[i] = bench_now_ns() - t0;
	}
	med = ok == n ? (double)bench_pct(t, n, 50) / 1e3 : -1;
	if (ok != n)
		notef("fdpass: %u of %u calls OK", ok, n);
	free(t);
	return med;
}

int
sec_fdpass(void)
{
	static const struct { size_t len; const char *name; unsigned n, nq; }
	    docs[] = { { MIB, "1m", 100, 20 }, { 64 * MIB, "64m", 10, 3 } };
	char path[PATH_MAX];
	struct sipc_config c;
	sipc_supervisor *s;
	uint8_t *buf;
	double fdus, inus;
	unsigned i, n;
	int fd;

	snprintf(path, sizeof(path), "%s/docsum", O.fixdir);
	cfg_base(&c, 1);
	c.path = path;
	c.max_payload = 64 * MIB;
	c.ring_bytes = 256 * MIB;
	c.mem_ceiling = 512 * MIB;
	if (sup_start(&c, 30000, &s) < 0)
		return -1;
	notef("fdpass: one docsum worker (CRC-32C over every byte), "
	    "sequential calls, median per call; max_payload 64 MiB for both "
	    "ways");
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		n = O.quick ? docs[i].nq : docs[i].n;
		if ((fd = doc_make(docs[i].len, &buf)) < 0) {
			notef("fdpass: cannot make a %s document", docs[i].name);
			sipc_destroy(s);
			return -1;
		}
		struct sipc_request rf = { .flags = SIPC_REQ_FD, .fd = fd,
		    .timeout_ms = 60000 };
		struct sipc_request ri = { .payload = buf,
		    .len = docs[i].len, .timeout_ms = 60000 };
		fdus = per_call_us(s, &rf, n);
		inus = per_call_us(s, &ri, n);
		close(fd);
		free(buf);
		if (fdus < 0 || inus < 0) {
			sipc_destroy(s);
			return -1;
		}
		metricf(fdus, "us", "sipc_fdpass_fd_%s_p50", docs[i].name);
		metricf(inus, "us", "sipc_fdpass_inline_%s_p50", docs[i].name);
	}
	sipc_destroy(s);
	return 0;
}
