/*
 * generation_test.c - what belongs to one worker generation stays with
 * it: CANCELs queued for a generation that is stopping are never sent
 * to its replacement; a start error of one generation is not reported
 * for the next; and in a pool of one, the requests a crash leaves that
 * may run again (never started, idempotent) wait for the restarted
 * worker, within their deadline, instead of being refused.
 *
 * Threads: the CUnit thread drives every test; completion and log
 * callbacks run on library threads and touch only the mutex-guarded
 * captures (sipctest.c).  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000           /* generous deadline for any event */
#define SLACK_MS 1500           /* scheduling slack on a loaded machine */

/* ------------------------------------------------------------ helpers */

static char frame_log[64];
static char frame_env[96];

/* framelog fixture, one mode per generation, logging its frames. */
static void
cfg_framelog(struct sipc_config *c, char *const *argv, unsigned workers)
{
	static const char *env_set[3];
	int fd;

	snprintf(frame_log, sizeof(frame_log), "/tmp/sipc-gen-log-XXXXXX");
	CU_ASSERT_FATAL((fd = mkstemp(frame_log)) >= 0);
	close(fd);
	snprintf(frame_env, sizeof(frame_env), "SIPC_FRAME_LOG=%s", frame_log);
	env_set[0] = frame_env;
	env_set[1] = "SIPC_FX_ACCEPT=frames";     /* hold_two_and_kill() */
	env_set[2] = NULL;
	st_cfg_base(c, "framelog", argv, workers);
	c->env_set = env_set;
}

/* The fixture's log: lines "GEN KIND ID". */
struct frame_rec { unsigned gen; char kind; unsigned long long id; };

static unsigned
read_frame_log(struct frame_rec *recs, unsigned max)
{
	FILE *f = fopen(frame_log, "re");
	unsigned n = 0;

	if (f == NULL)
		return 0;
	while (n < max && fscanf(f, "%u %c %llu", &recs[n].gen, &recs[n].kind,
	    &recs[n].id) == 3)
		n++;
	fclose(f);
	return n;
}

static bool
log_has(unsigned gen, char kind, uint64_t id)
{
	struct frame_rec recs[256];
	unsigned n = read_frame_log(recs, 256);

	for (unsigned i = 0; i < n; i++)
		if (recs[i].gen == gen && recs[i].kind == kind &&
		    recs[i].id == id)
			return true;
	return false;
}

struct log_want { unsigned gen; char kind; uint64_t id; };

static bool
log_has_cb(void *arg)
{
	struct log_want *w = arg;

	return log_has(w->gen, w->kind, w->id);
}

/* Asynchronous "\0CMD" request with flags; returns its id. */
static uint64_t
submit(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
       unsigned flags, struct st_outslot *o)
{
	char p[64];
	struct sipc_request rq = { .payload = p, .timeout_ms = timeout_ms,
	    .flags = flags };
	uint64_t id = 0;

	memcpy(p, "\0CMD", 4);
	rq.len = 4 + (size_t)snprintf(p + 4, sizeof(p) - 4, "%s", cmd);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, o, &id) == 0);
	return id;
}

/* A plain (non-command) request whose reply is its own bytes. */
static void
submit_data(sipc_supervisor *s, const char *data, unsigned timeout_ms,
            struct st_outslot *o)
{
	struct sipc_request rq = { .payload = data, .len = strlen(data),
	    .timeout_ms = timeout_ms };

	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, o, NULL) == 0);
}

struct counts { unsigned frames_in, inflight; };

static bool
pred_slot0(const struct sipc_stats *st, void *arg)
{
	struct counts *c = arg;

	return st->workers[0].state == SIPC_WS_READY &&
	    st->workers[0].frames_in >= c->frames_in &&
	    st->workers[0].inflight == c->inflight;
}

/*
 * Slot 0 holds a request in its handler (ACCEPTed) and a second one
 * written behind it, unread and so never ACCEPTed; then its worker is
 * SIGKILLed.  frames_in counts HELLO + ACCEPTs of this generation.
 */
static void
hold_two_and_kill(sipc_supervisor *s, const char *first, unsigned fflags,
                  const char *second, unsigned timeout_ms,
                  struct st_outbox *box)
{
	static struct st_outslot o[2];
	struct sipc_worker_stats w0 = st_worker_stats(s, 0);
	struct counts one = { 2, 1 }, two = { 2, 2 };

	CU_ASSERT_FATAL(w0.state == SIPC_WS_READY);
	o[0] = (struct st_outslot){ box, 0 };
	o[1] = (struct st_outslot){ box, 1 };
	submit(s, first, 0, fflags, &o[0]);
	/* ACCEPTed: its handler runs, the worker reads nothing more */
	one.frames_in = (unsigned)w0.frames_in + 1;
	CU_ASSERT_FATAL(st_stats_wait(s, pred_slot0, &one, WAIT_MS));
	submit_data(s, second, timeout_ms, &o[1]);
	two.frames_in = one.frames_in;
	CU_ASSERT_FATAL(st_stats_wait(s, pred_slot0, &two, WAIT_MS));
	CU_ASSERT_FATAL(kill(w0.pid, SIGKILL) == 0);
}

static bool
pred_cooldown(const struct sipc_stats *st, void *arg)
{
	return st->workers[0].state == SIPC_WS_COOLDOWN;
}

/* ------------------------------------------------------------ CANCEL */

/*
 * Generation 1 ignores TERM and never answers.  Its first request's
 * deadline passes: CANCEL sent, and after the cancel grace the worker
 * is terminated (DEADLINE) and stops for a long grace.  The second
 * request's deadline passes while it stops: that CANCEL is for
 * generation 1 only.  Generation 2 must never receive a CANCEL for an
 * id it was not given; a CANCEL for its own request still reaches it
 * (so the log does record CANCELs).
 */
/* rules: X6 */
static void
test_generation_cancel_not_sent_to_replacement(void)
{
	char *const argv[] = { "framelog", "noterm", "serve", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	struct st_gen_want g2 = { 0, 2 };
	struct frame_rec recs[256];
	struct sipc_worker_stats w;
	struct sipc_config c;
	struct sipc_result r;
	struct log_want want;
	sipc_supervisor *s;
	uint64_t first, stale, own;
	unsigned n, i;

	if (st_skip_sandboxed("shares files with the worker"))
		return;
	cfg_framelog(&c, argv, 1);
	c.grace_ms = 3000;            /* stopping long past the 2nd deadline */
	c.cancel_grace_ms = 200;
	s = st_start(&c, 1, WAIT_MS);
	first = submit(s, "hang", 300, 0, &o[0]);
	stale = submit(s, "hang", 1500, 0, &o[1]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT(box.res[1].may_have_run);
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_gen_ready, &g2, WAIT_MS));
	w = st_worker_stats(s, 0);
	/* the scenario: generation 1 was stopping when the 2nd expired */
	CU_ASSERT_EQUAL(w.last_exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(w.last_exit.reason, SIPC_TERM_DEADLINE);
	CU_ASSERT(log_has(1, 'R', first) && log_has(1, 'C', first));
	CU_ASSERT(log_has(1, 'R', stale) && !log_has(1, 'C', stale));
	/* a CANCEL for generation 2's own request does arrive */
	own = submit(s, "hang", 200, 0, &o[2]);
	want = (struct log_want){ 2, 'C', own };
	CU_ASSERT(tl_wait_until(log_has_cb, &want, WAIT_MS));
	/* and a round trip after it: whatever was sent before was read */
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	sipc_destroy(s);
	n = read_frame_log(recs, 256);
	for (i = 0; i < n; i++) {
		if (recs[i].kind != 'C')
			continue;
		if (!log_has(recs[i].gen, 'R', recs[i].id))
			fprintf(stderr, "generation %u got CANCEL %llu, never "
			    "its request\n", recs[i].gen, recs[i].id);
		CU_ASSERT(log_has(recs[i].gen, 'R', recs[i].id));
	}
	CU_ASSERT(!log_has(2, 'C', stale));
	st_outbox_release(&box);
	st_outbox_reset(&box);
	unlink(frame_log);
}

/* ------------------------------------------------------- start errors */

static bool
pred_gen_at_least(const struct sipc_stats *st, void *arg)
{
	return st->workers[0].generation >= *(unsigned *)arg;
}

/*
 * Generation 1 speaks another protocol version; every later one dies
 * before its HELLO.  Once generation 2 has ended, the reason reported
 * is the handshake, not generation 1's version error.
 */
/* rules: H5 */
static void
test_generation_start_error_is_per_generation(void)
{
	char *const argv[] = { "framelog", "badversion", "die", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned gen3 = 3;
	int rc;

	cfg_framelog(&c, argv, 1);
	c.restart_intensity = 100;
	c.pool_restart_budget = 1000;
	s = st_start(&c, 0, WAIT_MS);
	/* generation 3 exists: generation 2 has ended */
	CU_ASSERT_FATAL(st_stats_wait(s, pred_gen_at_least, &gen3, WAIT_MS));
	CU_ASSERT(st_log_has("worker speaks protocol version 2"));
	rc = sipc_wait_ready(s, 1, 2000);
	if (rc != SIPC_E_HANDSHAKE)
		fprintf(stderr, "wait_ready: %s\n", sipc_strerror(rc));
	CU_ASSERT_EQUAL(rc, SIPC_E_HANDSHAKE);
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).last_exit.kind,
	    SIPC_EXIT_HANDSHAKE);
	sipc_destroy(s);
	unlink(frame_log);
}

/* -------------------------------------------------- a pool of one */

/*
 * One worker holds an idempotent request in its handler and a plain one
 * written behind it, never read (so never ACCEPTed: provably never
 * started).  The worker is killed.  There is no other slot: both wait
 * for the restarted worker and complete there, the plain one requeued,
 * the idempotent one retried.  Nothing is refused, nothing is UNKNOWN.
 */
/* rules: R1 R3 */
static void
test_generation_single_worker_requeue_waits_for_restart(void)
{
	char *const argv[] = { "echo", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", argv, 1);
	c.env_set = st_env_accept_frames;     /* hold_two_and_kill() */
	c.restart_intensity = 5;
	c.restart_window_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	hold_two_and_kill(s, "sleep 2000", SIPC_REQ_IDEMPOTENT, "plain", 0,
	    &box);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(box.res[0].reply_len == 5 &&
	    memcmp(box.res[0].reply, "slept", 5) == 0);
	CU_ASSERT_EQUAL(box.res[0].attempts, 2);
	CU_ASSERT_EQUAL(box.res[0].generation, 2);
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(box.res[1].reply_len == 5 &&
	    memcmp(box.res[1].reply, "plain", 5) == 0);
	CU_ASSERT_EQUAL(box.res[1].attempts, 2);
	CU_ASSERT_EQUAL(box.res[1].generation, 2);
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.retried, 1);
	CU_ASSERT(st.requeued >= 1);
	CU_ASSERT_EQUAL(st.unknown, 0);
	CU_ASSERT_EQUAL(st.rejected, 0);
	CU_ASSERT_EQUAL(st.restarts, 1);
	sipc_stats_release(&st);
	sipc_destroy(s);
	st_outbox_release(&box);
	st_outbox_reset(&box);
}

/*
 * The same crash when the restart limit is reached: the slot cools
 * down, so the never-started request is REJECTED / SIPC_E_UNAVAILABLE
 * at once (P5), and the one in the handler is UNKNOWN.
 */
/* rules: P5 R1 */
static void
test_generation_single_worker_cooldown_still_refuses(void)
{
	char *const argv[] = { "echo", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0;

	st_cfg_base(&c, "echo", argv, 1);
	c.env_set = st_env_accept_frames;     /* hold_two_and_kill() */
	c.restart_intensity = 1;
	c.restart_window_ms = 60000;
	c.cooldown_ms = 30000;
	s = st_start(&c, 1, WAIT_MS);
	/* the one restart the window allows */
	CU_ASSERT_FATAL(kill(st_worker_stats(s, 0).pid, SIGKILL) == 0);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	t0 = tl_now_ms();
	hold_two_and_kill(s, "sleep 2000", 0, "plain", 0, &box);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	CU_ASSERT(tl_now_ms() - t0 < 2000 + SLACK_MS);
	pthread_mutex_lock(&box.mu);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[0].error, SIPC_E_WORKER_DIED);
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(box.res[1].error, SIPC_E_UNAVAILABLE);
	CU_ASSERT(!box.res[1].may_have_run);
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT(st_stats_wait(s, pred_cooldown, NULL, WAIT_MS));
	CU_ASSERT_EQUAL(st_pool_stats(s).restarts, 1);
	sipc_destroy(s);
	st_outbox_release(&box);
	st_outbox_reset(&box);
}

/*
 * Waiting for the restart never passes the deadline: here no later
 * generation ever becomes ready (each dies before its HELLO), so the
 * never-started request ends TIMEOUT, never sent again, at its deadline
 * (not REJECTED at the crash, not later).
 */
/* rules: R1 */
static void
test_generation_single_worker_wait_ends_at_deadline(void)
{
	char *const argv[] = { "framelog", "serve", "die", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0, dt;

	cfg_framelog(&c, argv, 1);
	c.restart_intensity = 100;
	c.pool_restart_budget = 1000;
	s = st_start(&c, 1, WAIT_MS);
	t0 = tl_now_ms();
	hold_two_and_kill(s, "sleep 5000", 0, "plain", 1500, &box);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT_EQUAL(box.res[1].error, SIPC_E_TIMEOUT);
	CU_ASSERT(!box.res[1].may_have_run);
	CU_ASSERT_EQUAL(box.res[1].attempts, 1);
	pthread_mutex_unlock(&box.mu);
	dt = tl_now_ms() - t0;
	CU_ASSERT(dt >= 1500 && dt <= 1500 + SLACK_MS);
	sipc_destroy(s);
	st_outbox_release(&box);
	st_outbox_reset(&box);
	unlink(frame_log);
}

static const tl_test generation_tests[] = {
	{ "test_generation_cancel_not_sent_to_replacement",
	  test_generation_cancel_not_sent_to_replacement },
	{ "test_generation_start_error_is_per_generation",
	  test_generation_start_error_is_per_generation },
	{ "test_generation_single_worker_requeue_waits_for_restart",
	  test_generation_single_worker_requeue_waits_for_restart },
	{ "test_generation_single_worker_cooldown_still_refuses",
	  test_generation_single_worker_cooldown_still_refuses },
	{ "test_generation_single_worker_wait_ends_at_deadline",
	  test_generation_single_worker_wait_ends_at_deadline },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("generation", generation_tests);
	return tl_run();
}
