/*
 * fd_pass_test.c - documents by descriptor (SIPC_REQ_FD, SCM_RIGHTS):
 * a sealed memfd of 1 MiB and one larger than max_payload reach the
 * docsum fixture, mapped, and their checksums come back; a reply comes
 * back by descriptor (sipc_result.reply_fd); the host's descriptors are
 * back to where they were after every outcome kind (OK, REJECTED, a
 * worker killed mid-request, a deadline, a cancel, a destroy with
 * requests pending); the worker holds no descriptor beyond 0-3 and its
 * request's (one at a time), or those of its own requests read ahead
 * (pipelined, at most max_fds_in_flight); many in flight, by descriptor
 * and inline in turn, each reach their own request; a worker that sends a descriptor unasked, or a frame
 * flagged for one without it, is a protocol violation and is restarted,
 * losing nothing else; max_fds_in_flight refuses one more, never sent,
 * and so does a worker whose HELLO offers no descriptors (SIPC_E_NOFD);
 * a REQUEST flagged without its descriptor ends the worker runtime.
 *
 * Threads: the CUnit thread, and the library's threads calling
 * st_outbox_done().  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/wire.h"
#include "proccount.h"
#include "sipc.h"
#include "sipc_worker.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */
#define MIB (1024u * 1024u)

/* A memfd of `len` bytes (a pattern from `seed`, or `text`), sealed
 * against writes and size changes; its CRC-32C in *crc. */
static int
doc_make(size_t len, unsigned seed, const char *text, uint32_t *crc)
{
	int fd = memfd_create("fdtest-doc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint8_t *p;
	size_t i;

	CU_ASSERT_FATAL(fd >= 0);
	if (text != NULL)
		len = 4 + strlen(text);
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)len) == 0);
	if (len > 0) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CU_ASSERT_FATAL(p != MAP_FAILED);
		if (text != NULL) {
			memcpy(p, "\0CMD", 4);
			memcpy(p + 4, text, len - 4);
		} else {
			for (i = 0; i < len; i++)
				p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
		}
		if (crc != NULL)
			*crc = sipc__crc32c(0, p, len);
		munmap(p, len);
	} else if (crc != NULL) {
		*crc = sipc__crc32c(0, NULL, 0);
	}
	CU_ASSERT_FATAL(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) == 0);
	return fd;
}

static void
cfg_docsum(struct sipc_config *c, unsigned workers)
{
	st_cfg_base(c, "docsum", NULL, workers);
	c->max_payload = 256 * 1024;      /* the documents are larger */
	c->ring_bytes = 8 * MIB;
	c->mem_ceiling = 8 * MIB;
}

/* The reply line's parts: "crc=X len=N fds=A,B,...". */
static bool
reply_parse(const uint8_t *p, size_t n, uint32_t *crc, size_t *len,
            int fds[64], int *nfds)
{
	char buf[4096], *f, *save = NULL;
	unsigned c;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (sscanf(buf, "crc=%x len=%zu", &c, len) != 2 ||
	    (f = strstr(buf, "fds=")) == NULL)
		return false;
	*crc = c;
	*nfds = 0;
	for (f = strtok_r(f + 4, ",", &save); f != NULL && *nfds < 64;
	    f = strtok_r(NULL, ",", &save))
		fds[(*nfds)++] = atoi(f);
	return true;
}

/* The worker held 0-3 and, for a request by descriptor, one more. */
static void
check_worker_fds(const int *fds, int n, bool doc)
{
	int i, extra = 0;

	TL_EQ(n, doc ? 5 : 4);
	for (i = 0; i < n; i++)
		if (fds[i] > 3)
			extra++;
	TL_EQ(extra, doc ? 1 : 0);
}

static int fd_base;

/* The host's descriptor count once the pool's start-up has settled: a
 * worker's launch may close a descriptor of its own (its start report,
 * a start counter) a little after the worker is ready, which a baseline
 * taken at once would count as one that later went missing.  The count
 * must hold across three readings 50 ms apart. */
static int
fds_settled(void)
{
	int last = tl_count_fds(), same = 0;
	int64_t end = tl_now_ms() + WAIT_MS;

	while (same < 2 && tl_now_ms() < end) {
		int n;

		(void)usleep(50 * 1000);
		n = tl_count_fds();
		same = n == last ? same + 1 : 0;
		last = n;
	}
	return last;
}

static bool
fds_at_base(void *arg)
{
	(void)arg;
	return tl_count_fds() == fd_base;
}

/* The host's descriptors are back where they were. */
static void
check_fds_back(const char *after)
{
	if (!tl_wait_until(fds_at_base, NULL, WAIT_MS))
		fprintf(stderr, "after %s: %d descriptors, %d before\n", after,
		    tl_count_fds(), fd_base);
	TL_EQ(tl_count_fds(), fd_base);
}

/* sipc_call() of document `fd` by descriptor; the host closes its own
 * at once when `close_own`. */
static void
call_doc(sipc_supervisor *s, int fd, unsigned timeout_ms,
         struct sipc_result *r)
{
	struct sipc_request rq = { .flags = SIPC_REQ_FD, .fd = fd,
	    .timeout_ms = timeout_ms };

	CU_ASSERT_FATAL(sipc_call(s, &rq, r) == 0);
}

static uint64_t
submit_doc(sipc_supervisor *s, int fd, unsigned timeout_ms,
           struct st_outslot *o)
{
	struct sipc_request rq = { .flags = SIPC_REQ_FD, .fd = fd,
	    .timeout_ms = timeout_ms };
	uint64_t id = 0;

	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, o, &id) == 0);
	return id;
}

/* rules: F12 */
static void
test_fd_pass_large_documents_checksummed(void)
{
	static const size_t sizes[] = { MIB, 4 * MIB + 123, 0 };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int fds[64], nfds, fd;
	uint32_t crc, got;
	size_t i, len;

	cfg_docsum(&c, 1);
	s = st_start(&c, 1, WAIT_MS);
	fd_base = fds_settled();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fd = doc_make(sizes[i], (unsigned)i, NULL, &crc);
		call_doc(s, fd, 0, &r);
		close(fd);
		TL_EQ(r.outcome, SIPC_OUTCOME_OK);
		TL_EQ(r.reply_fd, -1);
		CU_ASSERT_FATAL(reply_parse(r.reply, r.reply_len, &got, &len,
		    fds, &nfds));
		TL_EQ(len, sizes[i]);
		TL_EQ(got, crc);
		check_worker_fds(fds, nfds, true);
		sipc_result_release(&r);
	}
	/* A document past max_payload is refused inline. */
	{
		static uint8_t big[256 * 1024 + 1];
		struct sipc_request rq = { .payload = big, .len = sizeof(big) };

		TL_EQ(sipc_call(s, &rq, &r), SIPC_E_TOOBIG);
	}
	/* Inline, the worker holds 0-3 only. */
	st_call_cmd(s, NULL, 0, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_FATAL(reply_parse(r.reply, r.reply_len, &got, &len, fds,
	    &nfds));
	check_worker_fds(fds, nfds, false);
	sipc_result_release(&r);
	check_fds_back("the calls");
	sipc_destroy(s);
}

/* rules: F12 */
static void
test_fd_pass_reply_by_descriptor(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char buf[4096];
	int fds[64], nfds, fd;
	uint32_t got;
	size_t len;
	ssize_t n;

	cfg_docsum(&c, 1);
	s = st_start(&c, 1, WAIT_MS);
	fd_base = fds_settled();
	fd = doc_make(0, 0, "replyfd", NULL);
	call_doc(s, fd, 0, &r);
	close(fd);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.reply == NULL);
	CU_ASSERT_FATAL(r.reply_fd > 2);
	n = pread(r.reply_fd, buf, sizeof(buf), 0);
	CU_ASSERT_FATAL(n > 0);
	TL_EQ(r.reply_len, (size_t)n);
	CU_ASSERT_FATAL(reply_parse((uint8_t *)buf, (size_t)n, &got, &len,
	    fds, &nfds));
	TL_EQ(len, 11);                   /* "\0CMDreplyfd" */
	check_worker_fds(fds, nfds, true);
	/* read-only as sent: the worker sealed it */
	CU_ASSERT(write(r.reply_fd, "x", 1) < 0);
	sipc_result_release(&r);
	TL_EQ(r.reply_fd, -1);
	check_fds_back("a reply by descriptor");
	sipc_destroy(s);
}

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
test_fd_pass_closed_on_every_outcome(void)
{
	struct sipc_config c;
	struct sipc_result r;
	struct st_outslot o[8];
	sipc_supervisor *s;
	int base0, fd, i;
	uint64_t id;

	base0 = tl_count_fds();
	st_outbox_reset(&box);
	for (i = 0; i < 8; i++)
		o[i] = (struct st_outslot){ &box, (unsigned)i };
	cfg_docsum(&c, 1);
	c.max_fds_in_flight = 1;
	c.cancel_grace_ms = 100;
	s = st_start(&c, 1, WAIT_MS);
	fd_base = fds_settled();

	/* OK */
	fd = doc_make(4096, 1, NULL, NULL);
	call_doc(s, fd, 0, &r);
	close(fd);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	check_fds_back("OK");

	/* REJECTED: one more than max_fds_in_flight, never sent */
	fd = doc_make(0, 0, "hang", NULL);
	id = submit_doc(s, fd, 0, &o[0]);
	close(fd);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_one_inflight, NULL, WAIT_MS));
	fd = doc_make(4096, 2, NULL, NULL);
	call_doc(s, fd, 0, &r);
	close(fd);
	TL_EQ(r.outcome, SIPC_OUTCOME_REJECTED);
	TL_EQ(r.error, SIPC_E_FULL);
	CU_ASSERT(!r.may_have_run);
	sipc_result_release(&r);
	/* the bound counts descriptors only: inline still goes */
	st_call_cmd(s, NULL, 0, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);

	/* cancel of the written one: UNKNOWN / CANCELLED, the worker is
	 * ended after cancel_grace_ms and restarted */
	TL_EQ(sipc_cancel(s, id), 0);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	TL_EQ(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(box.res[0].error, SIPC_E_CANCELLED);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	check_fds_back("a cancel");

	/* a deadline: TIMEOUT */
	fd = doc_make(0, 0, "hang", NULL);
	call_doc(s, fd, 200, &r);
	close(fd);
	TL_EQ(r.outcome, SIPC_OUTCOME_TIMEOUT);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	{
		struct st_gen_want g = { 0, 3 };

		CU_ASSERT_FATAL(st_stats_wait(s, st_pred_gen_ready, &g,
		    WAIT_MS));
	}
	check_fds_back("a deadline");

	/* a worker killed mid-request: UNKNOWN */
	fd = doc_make(0, 0, "crash", NULL);
	call_doc(s, fd, 0, &r);
	close(fd);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(r.may_have_run);
	sipc_result_release(&r);
	{
		struct st_gen_want g = { 0, 4 };

		CU_ASSERT_FATAL(st_stats_wait(s, st_pred_gen_ready, &g,
		    WAIT_MS));
	}
	check_fds_back("a worker's death");

	/* destroy with requests pending: one written, more queued */
	for (i = 1; i < 4; i++) {
		fd = doc_make(0, 0, "hang", NULL);
		submit_doc(s, fd, 0, &o[i]);
		close(fd);
	}
	sipc_destroy(s);
	CU_ASSERT(st_outbox_wait(&box, 4, WAIT_MS));
	for (i = 1; i < 4; i++)
		CU_ASSERT(box.res[i].outcome != SIPC_OUTCOME_OK);
	st_outbox_release(&box);
	fd_base = base0;
	check_fds_back("destroy");
}

/*
 * Many requests in flight, by descriptor and inline in turn: the
 * writer's batches carry several descriptors, each on its own frame's
 * first byte, and every document reaches its own request.
 */
#define MIX 96
static struct st_outbox mixbox = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* rules: F12 */
static void
test_fd_pass_pipelined_mix(void)
{
	static uint8_t inl[MIX][512];
	struct st_outslot o[MIX];
	struct sipc_config c;
	sipc_supervisor *s;
	uint32_t crc[MIX], got;
	int fds[64], nfds, fd, i, ok = 0;
	size_t len;

	st_outbox_reset(&mixbox);
	cfg_docsum(&c, 1);
	c.max_inflight = 32;
	c.max_fds_in_flight = 32;
	s = st_start(&c, 1, WAIT_MS);
	fd_base = fds_settled();
	for (i = 0; i < MIX; i++) {
		o[i] = (struct st_outslot){ &mixbox, (unsigned)i };
		if (i % 3 != 2) {
			fd = doc_make(4096 + (size_t)i, (unsigned)i, NULL,
			    &crc[i]);
			submit_doc(s, fd, 0, &o[i]);
			close(fd);
		} else {
			struct sipc_request rq = { .payload = inl[i],
			    .len = sizeof(inl[i]) };

			memset(inl[i], i, sizeof(inl[i]));
			crc[i] = sipc__crc32c(0, inl[i], sizeof(inl[i]));
			CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done,
			    &o[i], NULL) == 0);
		}
	}
	CU_ASSERT_FATAL(st_outbox_wait(&mixbox, MIX, WAIT_MS));
	for (i = 0; i < MIX; i++) {
		struct sipc_result *r = &mixbox.res[i];

		if (r->outcome != SIPC_OUTCOME_OK ||
		    !reply_parse(r->reply, r->reply_len, &got, &len, fds,
		    &nfds)) {
			fprintf(stderr, "mix %d: outcome %d error %d %.*s\n", i,
			    r->outcome, r->error, (int)r->reply_len,
			    r->reply ? (const char *)r->reply : "");
			continue;
		}
		if (got != crc[i])
			fprintf(stderr, "mix %d: %.*s\n", i, (int)r->reply_len,
			    (const char *)r->reply);
		/* Besides 0-3, only descriptors of this worker's own
		 * requests, read ahead of their handlers: at most
		 * max_fds_in_flight. */
		ok += got == crc[i] && len == (i % 3 != 2 ?
		    4096 + (size_t)i : 512) && nfds >= 4 && nfds <= 4 + 32;
	}
	TL_EQ(ok, MIX);
	st_outbox_release(&mixbox);
	check_fds_back("the mix");
	sipc_destroy(s);
}

/* Every slot ready, and one of them restarted (the violator). */
static bool
pred_one_restarted_all_ready(const struct sipc_stats *st, void *arg)
{
	unsigned i, gens = 0;

	(void)arg;
	for (i = 0; i < st->nworkers; i++) {
		if (st->workers[i].state != SIPC_WS_READY)
			return false;
		gens += st->workers[i].generation;
	}
	return gens > st->nworkers;
}

/* A worker that sends a descriptor no frame claims, or flags a reply
 * for one and sends none: a violation; the worker is restarted, the
 * other worker's requests are untouched and descriptors come back. */
static void
violation_case(const char *cmd)
{
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	char want[64];
	int fd, i;

	cfg_docsum(&c, 2);
	s = st_start(&c, 2, WAIT_MS);
	fd_base = fds_settled();
	st_call_cmd(s, cmd, 0, 0, &r);
	sipc_result_release(&r);
	snprintf(want, sizeof(want), "protocol violation");
	CU_ASSERT(tl_wait_until(st_log_has_cb, want, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.protocol_violations >= 1);
	sipc_stats_release(&st);
	/* not sipc_wait_ready(): the violator may still look ready */
	CU_ASSERT_FATAL(st_stats_wait(s, pred_one_restarted_all_ready, NULL,
	    WAIT_MS));
	/* both workers still serve documents */
	for (i = 0; i < 4; i++) {
		fd = doc_make(MIB, (unsigned)i, NULL, NULL);
		call_doc(s, fd, 0, &r);
		close(fd);
		TL_EQ(r.outcome, SIPC_OUTCOME_OK);
		sipc_result_release(&r);
	}
	check_fds_back(cmd);
	sipc_destroy(s);
}

/* rules: F11 */
static void
test_fd_pass_unasked_descriptor_is_violation(void)
{
	violation_case("unasked");
}

/* rules: F12 */
static void
test_fd_pass_flag_without_descriptor_is_violation(void)
{
	violation_case("nofd");
}

/* A worker whose HELLO offers no descriptors (the startctr fixture's
 * first generation, written without the runtime) is sent none: the
 * request ends REJECTED / SIPC_E_NOFD, never sent; inline still goes. */
static void
test_fd_pass_refused_without_hello_flag(void)
{
	char *argv[] = { "startctr", "noflag", NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int fd;

	st_cfg_base(&c, "startctr", argv, 1);
	s = st_start(&c, 1, WAIT_MS);
	fd_base = fds_settled();
	fd = doc_make(4096, 7, NULL, NULL);
	call_doc(s, fd, 0, &r);
	close(fd);
	TL_EQ(r.outcome, SIPC_OUTCOME_REJECTED);
	TL_EQ(r.error, SIPC_E_NOFD);
	CU_ASSERT(!r.may_have_run);
	sipc_result_release(&r);
	st_call_cmd(s, "x", WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	TL_EQ(st_worker_stats(s, 0).generation, 1);
	check_fds_back("a refusal for want of the HELLO flag");
	sipc_destroy(s);
}

static void
test_fd_pass_bad_arguments(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int p[2], fd;
	char b = 0;

	cfg_docsum(&c, 1);
	s = st_start(&c, 1, WAIT_MS);
	fd_base = fds_settled();
	{
		struct sipc_request rq = { .flags = SIPC_REQ_FD, .fd = -1 };

		TL_EQ(sipc_call(s, &rq, &r), -EBADF);
	}
	CU_ASSERT_FATAL(pipe2(p, O_CLOEXEC) == 0);
	{
		struct sipc_request rq = { .flags = SIPC_REQ_FD, .fd = p[0] };

		TL_EQ(sipc_call(s, &rq, &r), -EINVAL);
	}
	close(p[0]);
	close(p[1]);
	fd = doc_make(16, 0, NULL, NULL);
	{
		struct sipc_request rq = { .flags = SIPC_REQ_FD, .fd = fd,
		    .payload = &b, .len = 1 };

		TL_EQ(sipc_call(s, &rq, &r), -EINVAL);
	}
	close(fd);
	check_fds_back("refused arguments");
	sipc_destroy(s);
}

/*
 * The runtime's side: a REQUEST flagged SIPC_FRAME_F_FD that comes
 * without its descriptor ends sipc_worker_run() with SIPC_E_PROTOCOL,
 * and so does a descriptor on a frame without the flag.
 */
static void
runtime_reply(sipc_worker *w, uint64_t id, const uint8_t *p, size_t len,
              void *arg)
{
	(void)p;
	(void)len;
	(void)arg;
	sipc_worker_reply(w, id, "ok", 2);
}

static int
runtime_child(int sock)
{
	sipc_worker *w;
	char env[32];

	snprintf(env, sizeof(env), "%d", sock);
	setenv("SIPC_FD", env, 1);
	unsetenv("SIPC_PARENT_PID");
	if (sipc_worker_open(&w) < 0)
		return 2;
	return sipc_worker_run(w, runtime_reply, NULL) == SIPC_E_PROTOCOL ?
	    0 : 3;
}

static void
runtime_case(bool flag, bool with_fd)
{
	struct sipc_frame_hdr h = { .type = SIPC_FT_REQUEST, .id = 1,
	    .flags = flag ? SIPC_FRAME_F_FD : 0, .len = SIPC_FRAME_FDLEN_LEN };
	uint8_t f[SIPC_FRAME_HDR_LEN + SIPC_FRAME_FDLEN_LEN] = { 0 }, in[256];
	struct iovec iov = { .iov_base = f, .iov_len = sizeof(f) };
	int sv[2], st = 0, doc = -1;
	pid_t pid;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sv) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		(void)fcntl(sv[1], F_SETFD, 0);
		_exit(runtime_child(sv[1]));
	}
	close(sv[1]);
	CU_ASSERT(read(sv[0], in, sizeof(in)) > 0);      /* its HELLO */
	sipc__frame_encode_hdr(f, &h);
	if (with_fd)
		doc = doc_make(16, 0, NULL, NULL);
	CU_ASSERT(sipc__send_fd(sv[0], &iov, 1, doc, 0) == (ssize_t)sizeof(f));
	if (doc >= 0)
		close(doc);
	CU_ASSERT_FATAL(waitpid(pid, &st, 0) == pid);
	CU_ASSERT(WIFEXITED(st));
	TL_EQ(WEXITSTATUS(st), 0);
	close(sv[0]);
}

/* rules: F9 F12 */
static void
test_fd_pass_runtime_refuses_unmatched(void)
{
	runtime_case(true, false);        /* flag, no descriptor */
	runtime_case(false, true);        /* descriptor, no flag */
}

static const tl_test tests[] = {
	{ "test_fd_pass_large_documents_checksummed",
	  test_fd_pass_large_documents_checksummed },
	{ "test_fd_pass_reply_by_descriptor",
	  test_fd_pass_reply_by_descriptor },
	{ "test_fd_pass_closed_on_every_outcome",
	  test_fd_pass_closed_on_every_outcome },
	{ "test_fd_pass_pipelined_mix", test_fd_pass_pipelined_mix },
	{ "test_fd_pass_unasked_descriptor_is_violation",
	  test_fd_pass_unasked_descriptor_is_violation },
	{ "test_fd_pass_flag_without_descriptor_is_violation",
	  test_fd_pass_flag_without_descriptor_is_violation },
	{ "test_fd_pass_refused_without_hello_flag",
	  test_fd_pass_refused_without_hello_flag },
	{ "test_fd_pass_bad_arguments", test_fd_pass_bad_arguments },
	{ "test_fd_pass_runtime_refuses_unmatched",
	  test_fd_pass_runtime_refuses_unmatched },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("fd_pass", tests);
	return tl_run();
}
