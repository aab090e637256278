/*
 * replymem_test.c - reply buffers count against mem_ceiling: from
 * before the reader allocates them (before the reply's id is checked)
 * until the completion callback returns.  Replies that do not fit wait
 * for room (the channel is not read meanwhile) and are never lost.
 *
 * Threads: the CUnit thread drives every test and samples stats;
 * completion callbacks run on the library's reader threads and touch
 * only the mutex-guarded box below (and call sipc_stats_get(), which
 * any thread may).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000           /* generous deadline for any event */

/* ------------------------------------------------------------ helpers */

/* What the callbacks saw.  `counted`: replies whose bytes were part of
 * mem_held while their callback ran. */
struct big_box {
	pthread_mutex_t mu;
	sipc_supervisor *s;
	size_t want_len;
	unsigned done, ok, intact, counted;
	size_t max_held;
};

/* framelog's reply pattern: byte i = (id + i) & 0xff */
static bool
intact(const struct sipc_result *r, size_t len)
{
	if (r->reply_len != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (r->reply[i] != (uint8_t)((r->request_id + i) & 0xff))
			return false;
	return true;
}

static void
big_done(void *arg, struct sipc_result *res)
{
	struct big_box *b = arg;
	struct sipc_stats st;
	size_t held = 0;

	if (sipc_stats_get(b->s, &st) == 0) {
		held = st.mem_held;
		sipc_stats_release(&st);
	}
	pthread_mutex_lock(&b->mu);
	b->done++;
	if (res->outcome == SIPC_OUTCOME_OK)
		b->ok++;
	if (intact(res, b->want_len))
		b->intact++;
	if (held >= b->want_len)
		b->counted++;
	if (held > b->max_held)
		b->max_held = held;
	pthread_mutex_unlock(&b->mu);
	sipc_result_release(res);
}

static unsigned
box_done(struct big_box *b)
{
	unsigned n;

	pthread_mutex_lock(&b->mu);
	n = b->done;
	pthread_mutex_unlock(&b->mu);
	return n;
}

static void
submit_cmd(sipc_supervisor *s, const char *cmd, sipc_done_fn fn, void *arg)
{
	char p[64];
	struct sipc_request rq = { .payload = p };

	memcpy(p, "\0CMD", 4);
	rq.len = 4 + (size_t)snprintf(p + 4, sizeof(p) - 4, "%s", cmd);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, fn, arg, NULL) == 0);
}

static size_t
mem_held(sipc_supervisor *s)
{
	return st_pool_stats(s).mem_held;
}

static bool
pred_mem_at_least(const struct sipc_stats *st, void *arg)
{
	return st->mem_held >= *(size_t *)arg;
}

static bool
pred_mem_zero(const struct sipc_stats *st, void *arg)
{
	return st->mem_held == 0 && st->pending == 0;
}

/* ------------------------------------------------------------ tests */

#define BIG_LEN 200000u
#define BIG_N 45u
#define BIG_MAXP (256u * 1024)
#define BIG_CEILING (2u * BIG_MAXP)

/*
 * Three workers answer tiny requests with 200 kB replies under a
 * 512 KiB ceiling: three replies at once would not fit, so readers wait
 * for room.  Every reply is counted while its callback runs, held bytes
 * never pass the ceiling, every reply arrives intact, and all the
 * memory comes back.
 */
/* rules: M1 M4 */
static void
test_replymem_large_replies_under_small_ceiling(void)
{
	char *const argv[] = { "framelog", NULL };
	struct big_box b = { .mu = PTHREAD_MUTEX_INITIALIZER,
	    .want_len = BIG_LEN };
	struct sipc_config c;
	sipc_supervisor *s;
	size_t peak = 0, h;
	char cmd[32];
	unsigned i;

	st_cfg_base(&c, "framelog", argv, 3);
	c.max_payload = BIG_MAXP;
	c.ring_bytes = BIG_CEILING;
	c.mem_ceiling = BIG_CEILING;
	c.max_inflight = 4;
	s = st_start(&c, 3, WAIT_MS);
	b.s = s;
	snprintf(cmd, sizeof(cmd), "big %u", BIG_LEN);
	for (i = 0; i < BIG_N; i++) {
		submit_cmd(s, cmd, big_done, &b);
		if ((h = mem_held(s)) > peak)
			peak = h;
	}
	for (i = 0; i < 10000 && box_done(&b) < BIG_N; i++) {
		if ((h = mem_held(s)) > peak)
			peak = h;
		usleep(2000);     /* sampling period, not a wait for an event */
	}
	pthread_mutex_lock(&b.mu);
	CU_ASSERT_EQUAL(b.done, BIG_N);
	CU_ASSERT_EQUAL(b.ok, BIG_N);          /* nothing lost */
	CU_ASSERT_EQUAL(b.intact, BIG_N);
	CU_ASSERT_EQUAL(b.counted, BIG_N);     /* each reply was counted */
	CU_ASSERT(b.max_held <= BIG_CEILING);
	fprintf(stderr, "replies: %u ok, %u counted; held peak %zu (callbacks "
	    "%zu) of %u\n", b.ok, b.counted, peak, b.max_held, BIG_CEILING);
	pthread_mutex_unlock(&b.mu);
	CU_ASSERT(peak <= BIG_CEILING);
	CU_ASSERT(st_stats_wait(s, pred_mem_zero, NULL, WAIT_MS));
	sipc_destroy(s);
}

/*
 * A reply's buffer counts from its header on, before the frame (and so
 * its id) is complete: the worker sends half a 600 kB reply and pauses.
 * Then the reply completes intact and its bytes come back.  A reply of
 * the same size under a wrong id (a violation) gives its bytes back too.
 */
/* rules: M1 */
static void
test_replymem_counted_before_id_checked(void)
{
	char *const argv[] = { "framelog", NULL };
	struct big_box b = { .mu = PTHREAD_MUTEX_INITIALIZER,
	    .want_len = 600000 };
	struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o = { &box, 0 };
	struct sipc_config c;
	sipc_supervisor *s;
	size_t half = 600000;

	st_cfg_base(&c, "framelog", argv, 1);
	c.max_payload = 1u << 20;
	c.ring_bytes = 2u << 20;
	c.mem_ceiling = 4u << 20;
	s = st_start(&c, 1, WAIT_MS);
	b.s = s;
	submit_cmd(s, "slowbig 600000 1500", big_done, &b);
	CU_ASSERT(st_stats_wait(s, pred_mem_at_least, &half, WAIT_MS));
	CU_ASSERT_EQUAL(box_done(&b), 0);      /* still arriving */
	CU_ASSERT(st_stats_wait(s, pred_mem_zero, NULL, WAIT_MS));
	pthread_mutex_lock(&b.mu);
	CU_ASSERT(b.done == 1 && b.ok == 1 && b.intact == 1);
	pthread_mutex_unlock(&b.mu);
	submit_cmd(s, "stray 600000", st_outbox_done, &o);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[0].error, SIPC_E_PROTOCOL);
	CU_ASSERT(st_stats_wait(s, pred_mem_zero, NULL, WAIT_MS));
	sipc_destroy(s);
	st_outbox_release(&box);
}

struct bytes_want { unsigned slot; uint64_t bytes_in; };

static bool
pred_bytes_in(const struct sipc_stats *st, void *arg)
{
	struct bytes_want *w = arg;

	return st->workers[w->slot].bytes_in >= w->bytes_in;
}

/* The slot holding a request whose ACCEPT came (HELLO + ACCEPT). */
static bool
pred_accepted_on(const struct sipc_stats *st, void *arg)
{
	for (unsigned i = 0; i < st->nworkers; i++)
		if (st->workers[i].inflight == 1 &&
		    st->workers[i].frames_in >= 2) {
			*(unsigned *)arg = i;
			return true;
		}
	return false;
}

/*
 * One worker's half-sent 300 kB reply holds its bytes; the other's
 * 350 kB reply does not fit beside it under a 600 kB ceiling, so its
 * reader waits (a ceiling under two maximal frames: the reply reserve
 * is what one maximal request leaves, 200 kB).  That worker is killed meanwhile: the reader stops
 * waiting (no hang), reads nothing more of the dead worker's stream,
 * and the request is UNKNOWN.  The first reply still arrives intact,
 * all the memory comes back, and the pool serves again.
 */
/* rules: M4 T6 */
static void
test_replymem_wait_ends_when_worker_dies(void)
{
	char *const argv[] = { "framelog", NULL };
	struct big_box b = { .mu = PTHREAD_MUTEX_INITIALIZER,
	    .want_len = 300000 };
	struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o = { &box, 0 };
	struct sipc_config c;
	struct sipc_result r;
	struct bytes_want bw;
	sipc_supervisor *s;
	size_t held = 300000;
	unsigned slow = 0, waiter;

	st_cfg_base(&c, "framelog", argv, 2);
	c.env_set = st_env_accept_frames;     /* pred_accepted_on() */
	c.max_payload = 400000;
	c.ring_bytes = 500000;
	c.mem_ceiling = 600000;
	s = st_start(&c, 2, WAIT_MS);
	b.s = s;
	submit_cmd(s, "slowbig 300000 3000", big_done, &b);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_mem_at_least, &held, WAIT_MS));
	CU_ASSERT_FATAL(st_stats_wait(s, pred_accepted_on, &slow, WAIT_MS));
	waiter = 1 - slow;
	submit_cmd(s, "big 350000", st_outbox_done, &o);
	/* HELLO (40) + ACCEPT (24) + the reply's header and more: read */
	bw = (struct bytes_want){ waiter, 40 + 24 + 24 + 1 };
	CU_ASSERT_FATAL(st_stats_wait(s, pred_bytes_in, &bw, WAIT_MS));
	CU_ASSERT(st_worker_stats(s, waiter).completed == 0);
	CU_ASSERT_FATAL(kill(st_worker_stats(s, waiter).pid, SIGKILL) == 0);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(st_log_has("no room under mem_ceiling"));
	CU_ASSERT(st_stats_wait(s, pred_mem_zero, NULL, WAIT_MS));
	pthread_mutex_lock(&b.mu);
	CU_ASSERT(b.done == 1 && b.ok == 1 && b.intact == 1);
	pthread_mutex_unlock(&b.mu);
	st_call_cmd(s, "big 1000", WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	sipc_destroy(s);
	st_outbox_release(&box);
}

/* ------------------------------------------------ lent requests */

#define LENT_LEN (512u * 1024)        /* a batch takes it and more */
#define LENT_BIG (8u * 1024 * 1024)   /* more than the socket holds */

/* What the lent request's callback saw. */
struct lent_box {
	pthread_mutex_t mu;
	sipc_supervisor *s;
	unsigned calls, others;        /* others: outcomes before it */
	size_t held;                   /* mem_held during its callback */
	bool intact;
	unsigned total;
	uint8_t *buf;
};

static void
lent_done(void *arg, struct sipc_result *res)
{
	struct lent_box *b = arg;
	struct sipc_stats st;
	size_t held = 0;

	if (sipc_stats_get(b->s, &st) == 0) {
		held = st.mem_held;
		sipc_stats_release(&st);
	}
	pthread_mutex_lock(&b->mu);
	b->calls++;
	b->held = held;
	b->others = b->total;
	b->intact = res->outcome == SIPC_OUTCOME_OK &&
	    res->reply_len == LENT_LEN &&
	    memcmp(res->reply, b->buf, LENT_LEN) == 0;
	b->total++;
	pthread_mutex_unlock(&b->mu);
	sipc_result_release(res);
}

static void
lent_other_done(void *arg, struct sipc_result *res)
{
	struct lent_box *b = arg;

	pthread_mutex_lock(&b->mu);
	b->total++;
	pthread_mutex_unlock(&b->mu);
	sipc_result_release(res);
}

static bool
lent_called(void *arg)
{
	struct lent_box *b = arg;
	bool c;

	pthread_mutex_lock(&b->mu);
	c = b->calls > 0;
	pthread_mutex_unlock(&b->mu);
	return c;
}

static bool
lent_all(void *arg)
{
	struct lent_box *b = arg;
	bool c;

	pthread_mutex_lock(&b->mu);
	c = b->total == 3;
	pthread_mutex_unlock(&b->mu);
	return c;
}

struct fifo_gate { const char *path; int fd; };

static bool
fifo_open(void *arg)
{
	struct fifo_gate *g = arg;

	g->fd = open(g->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	return g->fd >= 0;
}

/*
 * A lent request's send hold ends with its own frame, and its reply's
 * bytes count until its callback returns (CONTRACT M1).  One batch: a
 * lent request of 512 KiB, then one after which the worker never reads
 * again, then 8 MiB that can never all be written.  The lent request's
 * reply comes back; its callback runs at once (the batch is still being
 * written), and while it runs mem_held holds the request, its reply and
 * the 8 MiB.  Before, the callback waited for the end of the whole batch
 * (here: until destroy ended the worker), and the reply's bytes had left
 * mem_held as soon as the outcome was stored.
 */
/* rules: M1 */
static void
test_replymem_lent_reply_counted_until_callback(void)
{
	static struct lent_box b = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char dir[] = "/tmp/sipc-replymem-XXXXXX", gate[64], env[96];
	const char *envset[] = { env, NULL };
	static const char stop[] = "\0CMDstopread";
	struct fifo_gate g;
	struct sipc_config c;
	sipc_supervisor *s;
	uint8_t *big;
	bool prompt;

	if (st_skip_sandboxed("shares a FIFO with the worker"))
		return;
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(gate, sizeof(gate), "%s/gate", dir);
	CU_ASSERT_FATAL(mkfifo(gate, 0600) == 0);
	snprintf(env, sizeof(env), "SIPC_ECHO_HELLO_GATE=%s", gate);
	CU_ASSERT_FATAL((b.buf = malloc(LENT_LEN)) != NULL);
	CU_ASSERT_FATAL((big = calloc(1, LENT_BIG)) != NULL);
	for (size_t i = 0; i < LENT_LEN; i++)
		b.buf[i] = (uint8_t)(i * 7 + 1);
	st_cfg_base(&c, "echo", NULL, 1);
	c.env_set = envset;
	c.handshake_ms = WAIT_MS;
	c.stall_ms = 60000;
	c.mem_ceiling = 64u * 1024 * 1024;
	CU_ASSERT_FATAL(sipc_create(&c, NULL, 0, &s) == 0);
	b.s = s;
	/* Queued before HELLO: they go out as the writer's first batch. */
	CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
	    .payload = b.buf, .len = LENT_LEN, .flags = SIPC_REQ_LEND,
	    .timeout_ms = 2 * WAIT_MS }, lent_done, &b, NULL) == 0);
	CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
	    .payload = stop, .len = sizeof(stop) - 1,
	    .timeout_ms = 2 * WAIT_MS }, lent_other_done, &b, NULL) == 0);
	CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
	    .payload = big, .len = LENT_BIG, .timeout_ms = 2 * WAIT_MS },
	    lent_other_done, &b, NULL) == 0);
	g = (struct fifo_gate){ gate, -1 };
	CU_ASSERT_FATAL(tl_wait_until(fifo_open, &g, WAIT_MS));
	prompt = tl_wait_until(lent_called, &b, WAIT_MS);
	CU_ASSERT(prompt);
	/* The worker stopped reading: destroy ends it, and every request
	 * has its outcome when it returns. */
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	CU_ASSERT(lent_all(&b));
	pthread_mutex_lock(&b.mu);
	CU_ASSERT_EQUAL(b.calls, 1);
	CU_ASSERT(b.intact);
	CU_ASSERT_EQUAL(b.others, 0);   /* the first outcome */
	CU_ASSERT(b.held >= 2 * LENT_LEN + LENT_BIG);
	fprintf(stderr, "lent callback: %s, mem_held %zu (request + reply + "
	    "8 MiB: %u)\n", prompt ? "prompt" : "at destroy",
	    b.held, 2 * LENT_LEN + LENT_BIG);
	pthread_mutex_unlock(&b.mu);
	close(g.fd);
	unlink(gate);
	rmdir(dir);
	free(big);
	free(b.buf);
}

static const tl_test replymem_tests[] = {
	{ "test_replymem_large_replies_under_small_ceiling",
	  test_replymem_large_replies_under_small_ceiling },
	{ "test_replymem_counted_before_id_checked",
	  test_replymem_counted_before_id_checked },
	{ "test_replymem_wait_ends_when_worker_dies",
	  test_replymem_wait_ends_when_worker_dies },
	{ "test_replymem_lent_reply_counted_until_callback",
	  test_replymem_lent_reply_counted_until_callback },
	{ NULL, NULL },
};

int
main(void)
{
	tl_suite("replymem", replymem_tests);
	return tl_run();
}
