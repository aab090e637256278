/*
 * callread_test.c - a synchronous call reads its own reply (callread.c,
 * "caller reads"): the calling thread takes its idle worker's protocol
 * socket from the reader thread and gives it back; every outcome stays
 * exactly what the reader alone would have made of it.
 *
 * Real workers (echo, crash, chatty), real signals.  Tests look at the
 * slot's owner field under the slot lock, as the library does.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sipc.h"
#include "pool/pool.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000



/* Does a caller own slot 0's socket now? */
static bool
owner_is_caller(struct sipc__slot *sl)
{
	bool own;

	pthread_mutex_lock(&sl->lock);
	own = sl->rd_owner == SIPC__RD_CALLER;
	pthread_mutex_unlock(&sl->lock);
	return own;
}

static bool
caller_owns(void *arg)
{
	return owner_is_caller(&((struct sipc_supervisor *)arg)->slots[0]);
}

static bool
caller_gave_back(void *arg)
{
	return !caller_owns(arg);
}

/* Is slot 0's reader between reads?  A worker is READY while its reader
 * still finishes the read that held the HELLO; a call made then leaves
 * the socket to the reader (and is answered through it). */
static bool
reader_idle(void *arg)
{
	struct sipc__slot *sl = &((struct sipc_supervisor *)arg)->slots[0];
	bool idle;

	pthread_mutex_lock(&sl->lock);
	idle = sl->rx != NULL && !sl->rd_busy;
	pthread_mutex_unlock(&sl->lock);
	return idle;
}

/* A call now goes the whole way on the calling thread: the reader
 * between reads, and nothing pending, in flight, queued or being sent,
 * so the call is written directly and its reply read by the caller. */
static bool
call_ready(void *arg)
{
	struct sipc_supervisor *s = arg;
	struct sipc__slot *sl = &s->slots[0];
	bool ok;

	pthread_mutex_lock(&sl->lock);
	pthread_mutex_lock(&s->table.lock);
	ok = sl->rx != NULL && !sl->rd_busy && sl->state == SIPC_WS_READY &&
	    sl->sending == SIPC__SEND_NONE && sl->ring.count == 0 &&
	    sl->inflight == 0 && s->table.pending == 0 && sl->rest == NULL &&
	    sl->handoff == NULL && sl->rd_owner != SIPC__RD_CALLER;
	pthread_mutex_unlock(&s->table.lock);
	pthread_mutex_unlock(&sl->lock);
	return ok;
}

/* Replies slot 0's reader (`caller` false) or a calling thread decoded. */
static uint64_t
replies_by(sipc_supervisor *s, bool caller)
{
	return atomic_load(&s->slots[0].replies_by[caller]);
}

/* A sipc_call() on its own thread, so the test can act meanwhile. */
struct bg_call {
	sipc_supervisor *s;
	const char *cmd;              /* "\0CMD" command, or NULL: "data" */
	unsigned timeout_ms;
	struct sipc_result res;
	int rc;
	atomic_bool done;
	pthread_t t;
};

static void *
bg_call_main(void *arg)
{
	struct bg_call *c = arg;
	char buf[128];
	size_t len;

	if (c->cmd != NULL) {
		memcpy(buf, "\0CMD", 4);
		len = 4 + (size_t)snprintf(buf + 4, sizeof(buf) - 4, "%s",
		    c->cmd);
	} else {
		len = (size_t)snprintf(buf, sizeof(buf), "data");
	}
	struct sipc_request req = { .payload = buf, .len = (uint32_t)len,
	    .timeout_ms = c->timeout_ms };
	c->rc = sipc_call(c->s, &req, &c->res);
	atomic_store(&c->done, true);
	return NULL;
}

static void
bg_call_start(struct bg_call *c, sipc_supervisor *s, const char *cmd,
              unsigned timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->cmd = cmd;
	c->timeout_ms = timeout_ms;
	CU_ASSERT_FATAL(pthread_create(&c->t, NULL, bg_call_main, c) == 0);
}

static bool
bg_call_done(void *arg)
{
	return atomic_load(&((struct bg_call *)arg)->done);
}

static uint64_t
frames_in(sipc_supervisor *s)
{
	return atomic_load(&s->slots[0].frames_in);
}

struct frames_at_least { sipc_supervisor *s; uint64_t n; };

static bool
frames_reached(void *arg)
{
	struct frames_at_least *f = arg;

	return frames_in(f->s) >= f->n;
}

/*
 * The point of it: the reader thread sleeps through synchronous calls
 * to an idle worker; the caller reads each reply itself.  Before, the
 * reader read every reply (and woke for it).
 */
static void
test_callread_reader_sleeps_through_calls(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	const unsigned n = 400;
	unsigned i, ok = 0;
	uint64_t byc, byr;
	long r0, r1;
	char buf[64];

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	memset(buf, 'x', sizeof(buf));
	struct sipc_request req = { .payload = buf, .len = sizeof(buf),
	    .timeout_ms = WAIT_MS };
	CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(tl_wait_until(tl_thread_named, (void *)"sipc-rd0",
	    WAIT_MS));
	r0 = tl_thread_switches("sipc-rd0");
	byc = replies_by(s, true);
	byr = replies_by(s, false);
	for (i = 0; i < n; i++) {
		/* A call that comes while the reader still finishes the read
		 * that held the previous reply finds it busy and leaves the
		 * socket to it: each call is made once all is quiet. */
		CU_ASSERT_FATAL(tl_wait_until(call_ready, s, WAIT_MS));
		CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
		ok += r.outcome == SIPC_OUTCOME_OK && r.reply_len == sizeof(buf) &&
		    memcmp(r.reply, buf, sizeof(buf)) == 0;
		sipc_result_release(&r);
	}
	r1 = tl_thread_switches("sipc-rd0");
	CU_ASSERT_EQUAL(ok, n);
	TL_EQ(replies_by(s, true) - byc, n);
	TL_EQ(replies_by(s, false) - byr, 0);
	fprintf(stderr, "reader switched %ld times in %u calls\n", r1 - r0, n);
	/* Every reply was counted as a frame in. */
	CU_ASSERT(st_worker_stats(s, 0).frames_in >= (uint64_t)n + 1);
	sipc_destroy(s);
}

/*
 * A reply over 64 KiB is left to the reader thread: the caller gives the
 * socket back at its header, so the payload is allocated and read where
 * it always was.  Read by the calling thread, a 1 MiB reply cost about
 * 480 page faults a call (that thread's malloc arena gives the memory
 * back when the reply is freed) and 7 ms against 0.5.  So the reader
 * decodes each such reply (the mechanism; how many faults that saves
 * depends on the machine's load and is the bench/ figure
 * sipc_pipe_w1_1048576_faults_per_msg, not a bound here).
 */
static void
test_callread_large_reply_left_to_reader(void)
{
	const size_t len = 1024 * 1024;
	const unsigned n = 20;
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned i, ok = 0;
	uint8_t *buf = malloc(len);
	uint64_t byc, byr;

	CU_ASSERT_FATAL(buf != NULL);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7);
	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	struct sipc_request req = { .payload = buf, .len = len,
	    .timeout_ms = WAIT_MS };
	for (i = 0; i < 3; i++) {
		CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
		sipc_result_release(&r);
	}
	byc = replies_by(s, true);
	byr = replies_by(s, false);
	for (i = 0; i < n; i++) {
		CU_ASSERT_FATAL(tl_wait_until(call_ready, s, WAIT_MS));
		CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
		ok += r.outcome == SIPC_OUTCOME_OK && r.reply_len == len &&
		    memcmp(r.reply, buf, len) == 0;
		sipc_result_release(&r);
	}
	CU_ASSERT_EQUAL(ok, n);
	/* The caller read each header and gave the socket back; the
	 * reader decoded every reply. */
	TL_EQ(replies_by(s, false) - byr, n);
	TL_EQ(replies_by(s, true) - byc, 0);
	sipc_destroy(s);
	free(buf);
}

/*
 * The worker dies after its ACCEPT, while the caller holds the socket:
 * the caller handled the ACCEPT, so the request may have run (UNKNOWN),
 * exactly as when the reader reads it.
 */
static void
test_callread_crash_after_accept_unknown(void)
{
	struct frames_at_least f;
	struct sipc_config c;
	struct bg_call bc;
	sipc_supervisor *s;
	pid_t pid;

	st_cfg_base(&c, "echo", NULL, 1);
	c.env_set = st_env_accept_frames;
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	pid = st_worker_stats(s, 0).pid;
	f.s = s;
	f.n = frames_in(s) + 1;           /* the ACCEPT */
	bg_call_start(&bc, s, "hang", 0);
	CU_ASSERT_FATAL(tl_wait_until(caller_owns, s, WAIT_MS));
	CU_ASSERT_FATAL(tl_wait_until(frames_reached, &f, WAIT_MS));
	CU_ASSERT(caller_owns(s));        /* the caller read the ACCEPT */
	CU_ASSERT_FATAL(kill(pid, SIGKILL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(bg_call_done, &bc, WAIT_MS));
	pthread_join(bc.t, NULL);
	CU_ASSERT_EQUAL(bc.rc, 0);
	CU_ASSERT_EQUAL(bc.res.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(bc.res.may_have_run);
	sipc_result_release(&bc.res);
	/* The worker's own crash, right after its ACCEPT (the caller
	 * took the socket before the request went out). */
	CU_ASSERT_FATAL(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	bg_call_start(&bc, s, "crash exit 3", 0);
	CU_ASSERT_FATAL(tl_wait_until(bg_call_done, &bc, WAIT_MS));
	pthread_join(bc.t, NULL);
	CU_ASSERT_EQUAL(bc.rc, 0);
	CU_ASSERT_EQUAL(bc.res.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(bc.res.may_have_run);
	sipc_result_release(&bc.res);
	sipc_destroy(s);
}

/* One echo worker in a process group of its own (no sipc-init above it:
 * its pid is the worker's, for the test to signal), its reader between
 * reads; NULL when the suite runs on the sandbox provider (skipped,
 * saying `why`). */
static sipc_supervisor *
start_signalable(const char *why, pid_t *ret_pid)
{
	struct sipc_config c;
	sipc_supervisor *s;

	if (st_skip_sandboxed(why))
		return NULL;
	st_cfg_base(&c, "echo", NULL, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	*ret_pid = st_worker_stats(s, 0).pid;
	return s;
}

/*
 * The worker dies before it read the request (stopped, then killed),
 * while the caller holds the socket: no ACCEPT, so it never ran; it is
 * retried on the restarted worker and answered there, as before.
 */
static void
test_callread_crash_before_accept_retried(void)
{
	struct bg_call bc;
	sipc_supervisor *s;
	pid_t pid;

	if ((s = start_signalable("signals the worker by its host pid",
	    &pid)) == NULL)
		return;
	CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
	bg_call_start(&bc, s, NULL, 0);
	CU_ASSERT_FATAL(tl_wait_until(caller_owns, s, WAIT_MS));
	CU_ASSERT_FATAL(kill(pid, SIGKILL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(bg_call_done, &bc, WAIT_MS));
	pthread_join(bc.t, NULL);
	CU_ASSERT_EQUAL(bc.rc, 0);
	CU_ASSERT_EQUAL(bc.res.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(bc.res.reply_len == 4 &&
	    memcmp(bc.res.reply, "data", 4) == 0);
	CU_ASSERT(st_worker_stats(s, 0).pid != pid);
	sipc_result_release(&bc.res);
	sipc_destroy(s);
}

/* Asynchronous submits beside a thread making synchronous calls, one
 * worker: every callback on a library thread, never on the caller's. */
struct mixed {
	pthread_t caller;
	atomic_uint on_caller, total, bad;
	atomic_uint seen[200];
};

static struct mixed mixed;

static void
mixed_done(void *arg, struct sipc_result *res)
{
	unsigned i = (unsigned)(uintptr_t)arg;

	if (pthread_equal(pthread_self(), mixed.caller))
		atomic_fetch_add(&mixed.on_caller, 1);
	if (res->outcome != SIPC_OUTCOME_OK || res->reply_len != sizeof(i) ||
	    memcmp(res->reply, &i, sizeof(i)) != 0)
		atomic_fetch_add(&mixed.bad, 1);
	atomic_fetch_add(&mixed.seen[i], 1);
	atomic_fetch_add(&mixed.total, 1);
	sipc_result_release(res);
}

struct caller_loop {
	sipc_supervisor *s;
	unsigned n, ok;
};

static void *
caller_loop_main(void *arg)
{
	struct caller_loop *cl = arg;
	struct sipc_result r;
	char buf[32];
	unsigned i;

	for (i = 0; i < cl->n; i++) {
		int len = snprintf(buf, sizeof(buf), "call %u", i);
		struct sipc_request req = { .payload = buf,
		    .len = (uint32_t)len, .timeout_ms = WAIT_MS };

		if (sipc_call(cl->s, &req, &r) != 0)
			continue;
		cl->ok += r.outcome == SIPC_OUTCOME_OK &&
		    r.reply_len == (size_t)len &&
		    memcmp(r.reply, buf, (size_t)len) == 0;
		sipc_result_release(&r);
	}
	return NULL;
}

static bool
mixed_all(void *arg)
{
	return atomic_load(&mixed.total) >= *(unsigned *)arg;
}

/* rules: TH1 */
static void
test_callread_async_beside_call_on_library_threads(void)
{
	struct caller_loop cl;
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned i, n = 200, once = 0;
	uint32_t v[200];

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	memset(&mixed, 0, sizeof(mixed));
	cl.s = s;
	cl.n = 300;
	cl.ok = 0;
	CU_ASSERT_FATAL(pthread_create(&mixed.caller, NULL, caller_loop_main,
	    &cl) == 0);
	for (i = 0; i < n; i++) {
		v[i] = i;
		struct sipc_request req = { .payload = &v[i],
		    .len = sizeof(v[i]), .timeout_ms = WAIT_MS };
		CU_ASSERT(sipc_submit(s, &req, mixed_done,
		    (void *)(uintptr_t)i, NULL) == 0);
		if (i % 8 == 7)
			usleep(200);  /* spread them over the calls */
	}
	CU_ASSERT(tl_wait_until(mixed_all, &n, WAIT_MS));
	pthread_join(mixed.caller, NULL);
	for (i = 0; i < n; i++)
		once += atomic_load(&mixed.seen[i]) == 1;
	CU_ASSERT_EQUAL(once, n);
	CU_ASSERT_EQUAL(atomic_load(&mixed.total), n);
	CU_ASSERT_EQUAL(atomic_load(&mixed.on_caller), 0);
	CU_ASSERT_EQUAL(atomic_load(&mixed.bad), 0);
	CU_ASSERT_EQUAL(cl.ok, cl.n);
	sipc_destroy(s);
}

/*
 * An asynchronous submit to the worker whose socket a caller holds: the
 * caller gives the socket back before that request is sent (else its
 * reply, and its callback, would be the caller's), and every callback
 * runs on a library thread.  The worker is stopped meanwhile, so the
 * call is still waiting when the submit comes.
 */
/* rules: TH1 */
static void
test_callread_submit_takes_socket_back(void)
{
	struct bg_call bc;
	sipc_supervisor *s;
	unsigned i, n = 8;
	uint32_t v[8];
	pid_t pid;

	if ((s = start_signalable("stops the worker by its host pid",
	    &pid)) == NULL)
		return;
	memset(&mixed, 0, sizeof(mixed));
	CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
	bg_call_start(&bc, s, NULL, 0);
	mixed.caller = bc.t;
	CU_ASSERT_FATAL(tl_wait_until(caller_owns, s, WAIT_MS));
	for (i = 0; i < n; i++) {
		v[i] = i;
		struct sipc_request req = { .payload = &v[i],
		    .len = sizeof(v[i]), .timeout_ms = WAIT_MS };
		CU_ASSERT(sipc_submit(s, &req, mixed_done,
		    (void *)(uintptr_t)i, NULL) == 0);
	}
	/* Given back before the worker reads anything. */
	CU_ASSERT(tl_wait_until(caller_gave_back, s, WAIT_MS));
	CU_ASSERT_FATAL(kill(pid, SIGCONT) == 0);
	CU_ASSERT(tl_wait_until(mixed_all, &n, WAIT_MS));
	CU_ASSERT_FATAL(tl_wait_until(bg_call_done, &bc, WAIT_MS));
	pthread_join(bc.t, NULL);
	CU_ASSERT_EQUAL(bc.res.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&bc.res);
	CU_ASSERT_EQUAL(atomic_load(&mixed.total), n);
	CU_ASSERT_EQUAL(atomic_load(&mixed.on_caller), 0);
	CU_ASSERT_EQUAL(atomic_load(&mixed.bad), 0);
	sipc_destroy(s);
}

/*
 * The deadline passes while the caller holds the socket (the worker
 * accepted and never answers): TIMEOUT at the deadline, and the slot
 * goes on answering.
 */
static void
test_callread_deadline_while_reading(void)
{
	struct sipc_config c;
	struct sipc_result r;
	struct bg_call bc;
	sipc_supervisor *s;
	int64_t t0, took;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	t0 = sipc__now_ms();
	bg_call_start(&bc, s, "hang", 300);
	CU_ASSERT(tl_wait_until(caller_owns, s, WAIT_MS));
	CU_ASSERT_FATAL(tl_wait_until(bg_call_done, &bc, WAIT_MS));
	took = sipc__now_ms() - t0;
	pthread_join(bc.t, NULL);
	CU_ASSERT_EQUAL(bc.rc, 0);
	CU_ASSERT_EQUAL(bc.res.outcome, SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT(took >= 300 && took < 300 + 2000);
	if (took < 300 || took >= 2300)
		fprintf(stderr, "TIMEOUT after %lld ms\n", (long long)took);
	sipc_result_release(&bc.res);
	CU_ASSERT(!caller_owns(s));
	/* The slot works on (its worker may be replaced for the hang). */
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* sipc_destroy() on another thread while a call holds the socket: the
 * call returns (the worker's end settles it), nothing hangs. */
static void
test_callread_destroy_while_reading(void)
{
	struct sipc_config c;
	struct bg_call bc;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	bg_call_start(&bc, s, "hang", 0);
	CU_ASSERT_FATAL(tl_wait_until(caller_owns, s, WAIT_MS));
	sipc_destroy(s);
	CU_ASSERT_FATAL(tl_wait_until(bg_call_done, &bc, WAIT_MS));
	pthread_join(bc.t, NULL);
	CU_ASSERT_EQUAL(bc.rc, 0);
	CU_ASSERT(bc.res.outcome == SIPC_OUTCOME_UNKNOWN ||
	    bc.res.outcome == SIPC_OUTCOME_REJECTED);
	sipc_result_release(&bc.res);
}

static atomic_uint bursts;

/* Log callback: counts the chatty worker's burst lines (any thread). */
static void
count_bursts(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
             pid_t pid, const char *msg)
{
	if (lvl == SIPC_LOG_DIAG && strstr(msg, " burst ") != NULL)
		atomic_fetch_add(&bursts, 1);
}

static bool
bursts_reached(void *arg)
{
	return atomic_load(&bursts) >= *(unsigned *)arg;
}

/* A worker that writes a lot to stderr and stdout around every reply:
 * the diagnostics stay the reader's, logged, and no call waits on them. */
static void
test_callread_chatty_worker(void)
{
	char *argv[] = { "chatty", "300", NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned i, ok = 0;

	unsigned want = 2 * 30;           /* stdout and stderr, each call */

	st_cfg_base(&c, "chatty", argv, 1);
	c.log = count_bursts;
	atomic_store(&bursts, 0);
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < 30; i++) {
		struct sipc_request req = { .payload = "abc", .len = 3,
		    .timeout_ms = WAIT_MS };
		CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
		ok += r.outcome == SIPC_OUTCOME_OK && r.reply_len == 3;
		sipc_result_release(&r);
	}
	CU_ASSERT_EQUAL(ok, 30);
	CU_ASSERT(tl_wait_until(bursts_reached, &want, WAIT_MS));
	sipc_destroy(s);
}

/* A descendant floods the diagnostics pipe for ever: calls still get
 * their replies. */
static void
test_callread_flooded_diagnostics(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned i, ok = 0;

	st_cfg_base(&c, "flooder", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < 30; i++) {
		struct sipc_request req = { .payload = "abc", .len = 3,
		    .timeout_ms = WAIT_MS };
		CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
		ok += r.outcome == SIPC_OUTCOME_OK &&
		    r.reply_len > 8 && memcmp(r.reply, "escapee=", 8) == 0;
		sipc_result_release(&r);
	}
	CU_ASSERT_EQUAL(ok, 30);
	CU_ASSERT(tl_wait_until(st_log_has_cb, (void *)"xxxxxxxx", WAIT_MS));
	sipc_destroy(s);
}

/* ------------------------------------------------- reply without room */

/* An asynchronous reply whose callback holds its bytes until the test
 * opens the gate (it runs on that worker's reader thread). */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool entered, open;
	enum sipc_outcome outcome;
};

static struct gate gate = { .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER };

static void
gate_done(void *arg, struct sipc_result *res)
{
	pthread_mutex_lock(&gate.mu);
	gate.entered = true;
	gate.outcome = res->outcome;
	while (!gate.open)
		pthread_cond_wait(&gate.cv, &gate.mu);
	pthread_mutex_unlock(&gate.mu);
	sipc_result_release(res);
}

static bool
gate_entered(void *arg)
{
	bool e;

	pthread_mutex_lock(&gate.mu);
	e = gate.entered;
	pthread_mutex_unlock(&gate.mu);
	return e;
}

static void
gate_open(void)
{
	pthread_mutex_lock(&gate.mu);
	gate.open = true;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
}

struct slot_ref { sipc_supervisor *s; unsigned i; };

static bool
slot_caller_owns(void *arg)
{
	struct slot_ref *r = arg;

	return owner_is_caller(&r->s->slots[r->i]);
}

/* The socket is the reader's again, and a reader waits for reply room. */
static bool
reader_waits_for_room(void *arg)
{
	struct slot_ref *r = arg;
	unsigned w;

	pthread_mutex_lock(&r->s->table.lock);
	w = r->s->table.reply_waiters;
	pthread_mutex_unlock(&r->s->table.lock);
	return w > 0 && !slot_caller_owns(arg);
}

/*
 * The caller holds the socket when its reply comes and there is no room
 * for it under mem_ceiling (another worker's reply is held by a callback
 * that has not returned): the caller does not wait for room itself; it
 * leaves the bytes it read to the reader, which waits for room as
 * always, and the reply arrives intact once room comes back.
 */
static void
test_callread_reply_without_room(void)
{
	char *const argv[] = { "framelog", NULL };
	struct slot_ref sb;
	struct sipc_config c;
	struct bg_call bc;
	sipc_supervisor *s;
	unsigned sa, i;
	pid_t pid;
	bool intact = true;

	if (st_skip_sandboxed("stops the worker by its host pid"))
		return;
	st_cfg_base(&c, "framelog", argv, 2);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.max_payload = 64 * 1024;
	c.mem_ceiling = 100 * 1024;        /* room for one big reply */
	c.ring_bytes = c.mem_ceiling;
	s = st_start(&c, 2, WAIT_MS);
	memset(&gate, 0, sizeof(gate));
	pthread_mutex_init(&gate.mu, NULL);
	pthread_cond_init(&gate.cv, NULL);
	{
		char cmd[32];
		int n = snprintf(cmd + 4, sizeof(cmd) - 4, "big 60000");
		struct sipc_request req = { .payload = cmd,
		    .len = (uint32_t)n + 4, .timeout_ms = WAIT_MS };

		memcpy(cmd, "\0CMD", 4);
		CU_ASSERT_FATAL(sipc_submit(s, &req, gate_done, NULL,
		    NULL) == 0);
	}
	CU_ASSERT_FATAL(tl_wait_until(gate_entered, NULL, WAIT_MS));
	sa = st_worker_stats(s, 0).completed == 1 ? 0 : 1;
	sb.s = s;
	sb.i = 1 - sa;
	CU_ASSERT_FATAL(st_worker_stats(s, sa).completed == 1);
	/* The other worker, stopped: the caller takes its socket and
	 * waits there; the reply comes when the test lets it. */
	pid = st_worker_stats(s, sb.i).pid;
	CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
	/* Both workers idle: the rotation picks the next start; make it
	 * the stopped one (a hint, read unlocked by dispatch). */
	if (atomic_load(&s->rr) % 2 != sb.i)
		atomic_fetch_add(&s->rr, 1);
	bg_call_start(&bc, s, "big 50000", 0);
	CU_ASSERT(tl_wait_until(slot_caller_owns, &sb, WAIT_MS));
	CU_ASSERT_FATAL(kill(pid, SIGCONT) == 0);
	CU_ASSERT(tl_wait_until(reader_waits_for_room, &sb, WAIT_MS));
	CU_ASSERT(!atomic_load(&bc.done));
	gate_open();
	CU_ASSERT_FATAL(tl_wait_until(bg_call_done, &bc, WAIT_MS));
	pthread_join(bc.t, NULL);
	CU_ASSERT_EQUAL(bc.rc, 0);
	CU_ASSERT_EQUAL(bc.res.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_EQUAL(bc.res.reply_len, 50000);
	for (i = 0; i < bc.res.reply_len && intact; i++)
		intact = ((const uint8_t *)bc.res.reply)[i] ==
		    (uint8_t)(bc.res.request_id + i);
	CU_ASSERT(intact);
	CU_ASSERT_EQUAL(gate.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&bc.res);
	sipc_destroy(s);
}

/* Slot 0's socket reader now (slot lock). */
static enum sipc__rd_owner
rd_owner(sipc_supervisor *s)
{
	struct sipc__slot *sl = &s->slots[0];
	enum sipc__rd_owner o;

	pthread_mutex_lock(&sl->lock);
	o = sl->rd_owner;
	pthread_mutex_unlock(&sl->lock);
	return o;
}

static bool
call_echoes(sipc_supervisor *s, const char *text)
{
	struct sipc_request req = { .payload = text, .len = strlen(text),
	    .timeout_ms = WAIT_MS };
	struct sipc_result r;
	bool ok;

	if (sipc_call(s, &req, &r) != 0)
		return false;
	ok = r.outcome == SIPC_OUTCOME_OK && r.reply_len == strlen(text) &&
	    memcmp(r.reply, text, r.reply_len) == 0;
	sipc_result_release(&r);
	return ok;
}

/*
 * Between synchronous calls to an idle worker the socket stays out of
 * the reader's interest set (parked): the next call takes it without
 * the two epoll_ctl() calls of a hand-over.  An asynchronous submit
 * gives it back to the reader, whose thread reads the reply and runs
 * the callback; the next call parks it again.
 */
static void
test_callread_socket_parked_between_calls(void)
{
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned i, n = 4;
	uint32_t v[4];

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	CU_ASSERT_FATAL(call_echoes(s, "first"));
	/* Given up before sipc_call() returned, so no wait: */
	CU_ASSERT_EQUAL(rd_owner(s), SIPC__RD_PARKED);
	CU_ASSERT(call_echoes(s, "second"));
	CU_ASSERT_EQUAL(rd_owner(s), SIPC__RD_PARKED);
	memset(&mixed, 0, sizeof(mixed));
	mixed.caller = pthread_self();
	for (i = 0; i < n; i++) {
		v[i] = i;
		struct sipc_request req = { .payload = &v[i],
		    .len = sizeof(v[i]), .timeout_ms = WAIT_MS };
		CU_ASSERT(sipc_submit(s, &req, mixed_done,
		    (void *)(uintptr_t)i, NULL) == 0);
	}
	CU_ASSERT(tl_wait_until(mixed_all, &n, WAIT_MS));
	CU_ASSERT_EQUAL(atomic_load(&mixed.bad), 0);
	CU_ASSERT_EQUAL(atomic_load(&mixed.on_caller), 0);
	CU_ASSERT_EQUAL(rd_owner(s), SIPC__RD_READER);
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	CU_ASSERT(call_echoes(s, "third"));
	CU_ASSERT_EQUAL(rd_owner(s), SIPC__RD_PARKED);
	sipc_destroy(s);
}

/*
 * A worker killed while its socket is parked (nobody watches it for an
 * end of stream): the reaper's end of the worker gives the socket back
 * for the final drain, the slot restarts, and calls go on.
 */
static void
test_callread_parked_worker_killed(void)
{
	struct st_exit_want ex = { 0, SIPC_EXIT_SIGNAL };
	sipc_supervisor *s;
	pid_t pid;

	if ((s = start_signalable("kills the worker by its host pid",
	    &pid)) == NULL)
		return;
	CU_ASSERT_FATAL(call_echoes(s, "before"));
	CU_ASSERT_FATAL(rd_owner(s) == SIPC__RD_PARKED);
	CU_ASSERT_FATAL(pid > 0 && kill(pid, SIGKILL) == 0);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ex, WAIT_MS));
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(call_echoes(s, "after"));
	sipc_destroy(s);
}

/* What poll() says of slot 0's channel for `events`, now (it only
 * looks; nothing is read). */
static short
slot0_revents(void *arg, short events)
{
	struct sipc__slot *sl = &((sipc_supervisor *)arg)->slots[0];
	struct pollfd p = { .fd = sl->proto_fd, .events = events };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* Has slot 0's worker closed its end of the channel? */
static bool
peer_closed(void *arg)
{
	return slot0_revents(arg, POLLRDHUP) & (POLLRDHUP | POLLHUP);
}

/* Has slot 0's worker written bytes nobody read yet? */
static bool
peer_wrote(void *arg)
{
	return slot0_revents(arg, POLLIN) & POLLIN;
}

/* One echo worker (grace 200 ms) that got the command `cmd` in a call
 * answered OK with `reply_len` bytes; its socket is parked now.  Its
 * generation before in *ret_gen. */
static sipc_supervisor *
start_parked(const char *cmd, size_t cmdlen, size_t reply_len,
             uint32_t *ret_gen)
{
	struct sipc_request req = { .payload = cmd, .len = cmdlen,
	    .timeout_ms = WAIT_MS };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	c.grace_ms = 200;
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	*ret_gen = st_worker_stats(s, 0).generation;
	CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_OK && r.reply_len == reply_len);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(rd_owner(s) == SIPC__RD_PARKED);
	return s;
}

/*
 * A worker that closes its channel while it is parked and stays alive:
 * nobody watches the socket then, so the end of stream is found by the
 * next call.  Its request was never started (no ACCEPT): it goes to the
 * replacement and ends OK; the old worker is ended, not left READY.
 */
static void
test_callread_parked_channel_closed(void)
{
	static const char cmd[] = "\0CMDcloselater 200";
	sipc_supervisor *s;
	uint32_t gen;

	s = start_parked(cmd, sizeof(cmd) - 1, 7, &gen);
	CU_ASSERT_FATAL(tl_wait_until(peer_closed, s, WAIT_MS));
	CU_ASSERT(rd_owner(s) == SIPC__RD_PARKED);  /* nobody noticed */
	CU_ASSERT(call_echoes(s, "after the close"));
	CU_ASSERT(st_worker_stats(s, 0).generation > gen);
	sipc_destroy(s);
}

/*
 * A worker that writes garbage while its channel is parked: nobody reads
 * it until the next request, which is then written behind the garbage.
 * The violation voids the worker's start evidence, so that request ends
 * UNKNOWN (it may have run: never re-sent), exactly as one in flight
 * when a violation arrives; an idempotent one goes to the replacement.
 * The worker is ended and replaced either way.
 */
static void
test_callread_parked_violation_found_by_next_call(void)
{
	static const char cmd[] = "\0CMDbadlater 100";
	struct sipc_request req = { .payload = cmd, .len = sizeof(cmd) - 1,
	    .timeout_ms = WAIT_MS };
	struct sipc_result r;
	sipc_supervisor *s;
	uint32_t gen;

	s = start_parked(cmd, sizeof(cmd) - 1, 5, &gen);
	CU_ASSERT_FATAL(tl_wait_until(peer_wrote, s, WAIT_MS));
	CU_ASSERT(rd_owner(s) == SIPC__RD_PARKED);  /* nobody read it */
	struct sipc_request next = { .payload = "next", .len = 4,
	    .timeout_ms = WAIT_MS };
	CU_ASSERT_FATAL(sipc_call(s, &next, &r) == 0);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(r.may_have_run);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(st_worker_stats(s, 0).generation > gen);
	/* Again, with an idempotent request behind the garbage. */
	CU_ASSERT_FATAL(tl_wait_until(reader_idle, s, WAIT_MS));
	CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(rd_owner(s) == SIPC__RD_PARKED);
	CU_ASSERT_FATAL(tl_wait_until(peer_wrote, s, WAIT_MS));
	next.flags = SIPC_REQ_IDEMPOTENT;
	CU_ASSERT_FATAL(sipc_call(s, &next, &r) == 0);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.reply_len == 4 && memcmp(r.reply, "next", 4) == 0);
	sipc_result_release(&r);
	CU_ASSERT(call_echoes(s, "after"));
	sipc_destroy(s);
}

int
main(void)
{
	st_no_core_files();
	tl_suite("callread", (tl_test[]){
	    { "test_callread_reader_sleeps_through_calls",
	      test_callread_reader_sleeps_through_calls },
	    { "test_callread_large_reply_left_to_reader",
	      test_callread_large_reply_left_to_reader },
	    { "test_callread_crash_after_accept_unknown",
	      test_callread_crash_after_accept_unknown },
	    { "test_callread_crash_before_accept_retried",
	      test_callread_crash_before_accept_retried },
	    { "test_callread_async_beside_call_on_library_threads",
	      test_callread_async_beside_call_on_library_threads },
	    { "test_callread_submit_takes_socket_back",
	      test_callread_submit_takes_socket_back },
	    { "test_callread_deadline_while_reading",
	      test_callread_deadline_while_reading },
	    { "test_callread_destroy_while_reading",
	      test_callread_destroy_while_reading },
	    { "test_callread_chatty_worker",
	      test_callread_chatty_worker },
	    { "test_callread_flooded_diagnostics",
	      test_callread_flooded_diagnostics },
	    { "test_callread_reply_without_room",
	      test_callread_reply_without_room },
	    { "test_callread_socket_parked_between_calls",
	      test_callread_socket_parked_between_calls },
	    { "test_callread_parked_worker_killed",
	      test_callread_parked_worker_killed },
	    { "test_callread_parked_channel_closed",
	      test_callread_parked_channel_closed },
	    { "test_callread_parked_violation_found_by_next_call",
	      test_callread_parked_violation_found_by_next_call },
	    { NULL, NULL } });
	return tl_run();
}
