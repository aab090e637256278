/*
 * misuse_test.c - what the public API does when a host misuses it: the
 * blocking calls (sipc_destroy, sipc_call, sipc_wait_ready) from a
 * library thread of this or another supervisor, or from a callback run on
 * the submitting thread, return -EDEADLK instead of hanging; calls that
 * race sipc_destroy() return SIPC_E_SHUTDOWN instead of touching memory
 * being torn down; and what a host may free as soon as a call returns.
 *
 * Two tests read (never write) the supervisor's `users` and `closing`
 * fields to know that a call is inside the library, or that destroy has
 * begun, before acting: that ordering is the point of the test.
 *
 * Threads: the CUnit thread, helper threads joined before each test
 * returns, and the library's threads running callbacks that touch only
 * atomics.  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "pool/pool.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000
#define UNSET 12345               /* a return code no call produces */

static struct sipc_request data_rq = { .payload = "data", .len = 4 };

/* ------------------------------------------------------ from callbacks */

/* What the blocking calls returned inside one callback. */
struct reentry {
	_Atomic(sipc_supervisor *) target;
	atomic_int wait_rc, call_rc, destroy_rc, calls;
	_Atomic bool on_submitter;     /* ran on the thread that submitted */
	pthread_t submitter;
};

static void
reentry_init(struct reentry *e, sipc_supervisor *target)
{
	atomic_store(&e->target, target);
	atomic_store(&e->wait_rc, UNSET);
	atomic_store(&e->call_rc, UNSET);
	atomic_store(&e->destroy_rc, UNSET);
	atomic_store(&e->calls, 0);
	atomic_store(&e->on_submitter, false);
	e->submitter = pthread_self();
}

/* wait_ready first: on a library that does not refuse it, it returns at
 * once (a worker is ready) and the assertion names the fault instead of
 * the hang that call and destroy would cause. */
static void
reentry_try(struct reentry *e)
{
	sipc_supervisor *t = atomic_load(&e->target);
	struct sipc_result r;
	int rc;

	atomic_store(&e->wait_rc, sipc_wait_ready(t, 1, 1000));
	rc = sipc_call(t, &data_rq, &r);
	if (rc == 0)
		sipc_result_release(&r);
	atomic_store(&e->call_rc, rc);
	atomic_store(&e->destroy_rc, sipc_destroy(t));
	atomic_store(&e->on_submitter, pthread_equal(pthread_self(),
	    e->submitter));
}

static void
reentry_done(void *arg, struct sipc_result *res)
{
	struct reentry *e = arg;

	reentry_try(e);
	sipc_result_release(res);
	atomic_fetch_add(&e->calls, 1);
}

static bool
reentry_finished(void *arg)
{
	return atomic_load(&((struct reentry *)arg)->calls) > 0;
}

static void
expect_refused(struct reentry *e)
{
	CU_ASSERT_EQUAL(atomic_load(&e->wait_rc), -EDEADLK);
	CU_ASSERT_EQUAL(atomic_load(&e->call_rc), -EDEADLK);
	CU_ASSERT_EQUAL(atomic_load(&e->destroy_rc), -EDEADLK);
}

/* The supervisor was left intact by the refused destroy: it serves. */
static void
still_serves(sipc_supervisor *s)
{
	struct sipc_result r;

	CU_ASSERT_EQUAL_FATAL(sipc_call(s, &data_rq, &r), 0);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
}

/* From a completion callback on the worker's reader thread. */
/* rules: S3 TH5 */
static void
test_misuse_blocking_calls_refused_in_callback(void)
{
	static struct reentry e;
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	reentry_init(&e, s);
	CU_ASSERT_FATAL(sipc_submit(s, &data_rq, reentry_done, &e, NULL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(reentry_finished, &e, WAIT_MS));
	expect_refused(&e);
	CU_ASSERT_FALSE(atomic_load(&e.on_submitter));
	still_serves(s);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/* From a completion callback of ANOTHER supervisor: refused the same
 * way (a callback of A blocking on B can close a cycle through B's
 * callbacks blocking on A); B is untouched and serves. */
/* rules: TH5 */
static void
test_misuse_blocking_calls_refused_for_other_instance(void)
{
	static struct reentry e;
	struct sipc_config c;
	sipc_supervisor *a, *b;

	st_cfg_base(&c, "echo", NULL, 1);
	a = st_start(&c, 1, WAIT_MS);
	b = st_start(&c, 1, WAIT_MS);
	reentry_init(&e, b);
	CU_ASSERT_FATAL(sipc_submit(a, &data_rq, reentry_done, &e, NULL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(reentry_finished, &e, WAIT_MS));
	expect_refused(&e);
	still_serves(b);
	still_serves(a);
	CU_ASSERT_EQUAL(sipc_destroy(b), 0);
	CU_ASSERT_EQUAL(sipc_destroy(a), 0);
}

/*
 * The callback of an immediate rejection runs on the host thread that
 * submitted, inside sipc_submit(): a destroy from there would wait for
 * that very submit to leave.  One worker holds a request that never
 * ends ("hang"), a second fills the one-frame ring, a third waits for
 * room until its 100 ms deadline and is rejected right there.
 */
/* rules: TH5 */
static void
test_misuse_blocking_calls_refused_in_immediate_rejection(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o0 = { &box, 0 }, o1 = { &box, 1 };
	struct sipc_request rq = { .payload = "x", .len = 1,
	    .timeout_ms = 100 };
	static struct reentry e;
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;

	st_outbox_reset(&box);
	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	c.ring_frames = 1;
	s = st_start(&c, 1, WAIT_MS);
	st_submit_cmd(s, "hang", 0, &o0);
	st_submit_cmd(s, "hang", 0, &o1);
	reentry_init(&e, s);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, reentry_done, &e, NULL) == 0);
	CU_ASSERT_EQUAL(atomic_load(&e.calls), 1);   /* before submit left */
	CU_ASSERT_TRUE(atomic_load(&e.on_submitter));
	CU_ASSERT_EQUAL(atomic_load(&e.wait_rc), -EDEADLK);
	CU_ASSERT_EQUAL(atomic_load(&e.destroy_rc), -EDEADLK);
	CU_ASSERT_EQUAL(atomic_load(&e.call_rc), -EDEADLK);
	CU_ASSERT_EQUAL_FATAL(sipc_stats_get(s, &st), 0);
	CU_ASSERT_EQUAL(st.rejected, 1);
	sipc_stats_release(&st);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	CU_ASSERT_EQUAL(st_outbox_total(&box), 2);
	st_outbox_release(&box);
}

/* From the log callback, which the reaper runs when a worker ends. */
static struct {
	_Atomic(sipc_supervisor *) s;
	atomic_int rc;
} logre = { NULL, UNSET };

static void
log_reenter(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
            pid_t pid, const char *msg)
{
	sipc_supervisor *s = atomic_load(&logre.s);

	st_log_fn(arg, lvl, wid, gen, pid, msg);
	if (s != NULL && strstr(msg, "worker ended") != NULL)
		atomic_store(&logre.rc, sipc_wait_ready(s, 1, 1000));
}

static bool
logre_set(void *arg)
{
	return atomic_load(&logre.rc) != UNSET;
}

/* rules: TH5 */
static void
test_misuse_blocking_calls_refused_in_log_callback(void)
{
	struct sipc_config c;
	sipc_supervisor *s;
	pid_t victim;

	st_cfg_base(&c, "echo", NULL, 1);
	c.log = log_reenter;
	s = st_start(&c, 1, WAIT_MS);
	atomic_store(&logre.s, s);
	victim = st_worker_stats(s, 0).pid;
	CU_ASSERT_FATAL(victim > 0 && kill(victim, SIGKILL) == 0);
	CU_ASSERT(tl_wait_until(logre_set, NULL, WAIT_MS));
	CU_ASSERT_EQUAL(atomic_load(&logre.rc), -EDEADLK);
	atomic_store(&logre.s, NULL);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/* ------------------------------------------------ racing sipc_destroy() */

struct waiter {
	sipc_supervisor *s;
	atomic_int rc;
	atomic_llong returned_at;
};

static void *
wait_ready_thread(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->rc, sipc_wait_ready(w->s, 1, 60000));
	atomic_store(&w->returned_at, tl_now_ms());
	return NULL;
}

static bool
users_in(void *arg)
{
	return atomic_load(&((sipc_supervisor *)arg)->users) > 0;
}

/*
 * A wait_ready() blocked on a worker that never says HELLO, when the
 * host destroys the supervisor: the waiter returns SIPC_E_SHUTDOWN at
 * once (not at its 60 s deadline), and destroy waits for it before
 * freeing what it waits on.
 */
/* rules: S2 TH5 */
static void
test_misuse_wait_ready_racing_destroy(void)
{
	char *argv[] = { "badframes", "nohello", NULL };
	struct waiter w = { .rc = UNSET };
	struct sipc_config c;
	pthread_t t;
	int64_t t0;

	st_cfg_base(&c, "badframes", argv, 1);
	c.handshake_ms = 60000;
	w.s = st_start(&c, 0, WAIT_MS);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, wait_ready_thread, &w) == 0);
	CU_ASSERT_FATAL(tl_wait_until(users_in, w.s, WAIT_MS));
	t0 = tl_now_ms();
	CU_ASSERT_EQUAL(sipc_destroy(w.s), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(atomic_load(&w.rc), SIPC_E_SHUTDOWN);
	/* it left because of destroy, long before its own deadline */
	CU_ASSERT(atomic_load(&w.returned_at) - t0 < WAIT_MS);
}

/* Holds a completion callback (and so destroy, which joins its thread)
 * until released. */
static struct {
	atomic_bool inside, release;
} hold;

static void
hold_done(void *arg, struct sipc_result *res)
{
	atomic_store(&hold.inside, true);
	while (!atomic_load(&hold.release))
		usleep(1000);   /* paces the poll of a flag the test sets */
	sipc_result_release(res);
}

static void *
destroy_thread(void *arg)
{
	(void)sipc_destroy(arg);
	return NULL;
}

static bool
held(void *arg)
{
	return atomic_load(&hold.inside);
}

static bool
closing(void *arg)
{
	return atomic_load(&((sipc_supervisor *)arg)->closing);
}

/*
 * Once destroy has begun, every entry point says SIPC_E_SHUTDOWN and
 * touches nothing else: stats, wait_ready, reconcile list and resolve,
 * submit, call.  Destroy is held open by a completion callback that has
 * not returned (destroy joins its thread), so the supervisor is still
 * allocated while the calls are made.
 */
/* rules: S2 TH5 */
static void
test_misuse_calls_during_destroy_refused(void)
{
	struct sipc_unresolved u, *list = NULL;
	struct sipc_config c;
	struct sipc_stats st;
	struct sipc_result r;
	sipc_supervisor *s;
	size_t n = 0;
	pthread_t t;
	uint64_t id;

	atomic_store(&hold.inside, false);
	atomic_store(&hold.release, false);
	memset(&u, 0, sizeof(u));
	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(sipc_submit(s, &data_rq, hold_done, NULL, NULL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(held, NULL, WAIT_MS));
	CU_ASSERT_FATAL(pthread_create(&t, NULL, destroy_thread, s) == 0);
	CU_ASSERT_FATAL(tl_wait_until(closing, s, WAIT_MS));
	CU_ASSERT_EQUAL(sipc_stats_get(s, &st), SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL(sipc_wait_ready(s, 1, 1000), SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL(sipc_reconcile_list(s, &list, &n), SIPC_E_SHUTDOWN);
	CU_ASSERT_PTR_NULL(list);
	CU_ASSERT_EQUAL(sipc_reconcile_resolve(s, &u), SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL(sipc_submit(s, &data_rq, hold_done, NULL, &id),
	    SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL_FATAL(sipc_call(s, &data_rq, &r), 0);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(r.error, SIPC_E_SHUTDOWN);
	sipc_result_release(&r);
	atomic_store(&hold.release, true);
	pthread_join(t, NULL);
}

/* ------------------------------------------------------------ ownership */

/*
 * What a host passes in is copied before the call returns: the
 * configuration's strings and arrays after sipc_create(), a request's
 * payload and idempotency key after sipc_submit().  The test overwrites
 * and frees them at once (ASan reports any later read); a respawned
 * worker still gets the right path, argv and environment, and the
 * reply carries the original bytes.
 */
/* rules: TH5 */
static void
test_misuse_host_may_free_inputs_after_return(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o = { &box, 0 };
	struct sipc_request rq;
	struct sipc_config c;
	struct sipc_result r;
	char *path, *arg0, **argv, *key, *payload, *envset, **envlist;
	sipc_supervisor *s;
	pid_t victim;

	st_outbox_reset(&box);
	st_cfg_base(&c, "envdump", NULL, 1);
	path = strdup(c.path);
	arg0 = strdup("envdump");
	envset = strdup("SIPC_TEST_OWNED=yes");
	argv = calloc(2, sizeof(*argv));
	envlist = calloc(2, sizeof(*envlist));
	CU_ASSERT_FATAL(path && arg0 && envset && argv && envlist);
	argv[0] = arg0;
	envlist[0] = envset;
	c.path = path;
	c.argv = argv;
	c.env_set = (const char *const *)envlist;
	s = st_start(&c, 1, WAIT_MS);
	memset(path, 'X', strlen(path));
	memset(envset, 'X', strlen(envset));
	free(path);
	free(arg0);
	free(argv);
	free(envset);
	free(envlist);
	memset(&c, 0xA5, sizeof(c));
	/* a new generation is started from the copies */
	victim = st_worker_stats(s, 0).pid;
	CU_ASSERT_FATAL(kill(victim, SIGKILL) == 0);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	payload = strdup("env");
	key = strdup("key-1");
	CU_ASSERT_FATAL(payload && key);
	rq = (struct sipc_request){ .payload = payload, .len = 3,
	    .idempotency_key = key };
	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o, NULL) == 0);
	memset(payload, 'Z', 3);
	free(payload);
	free(key);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	r = box.res[0];
	CU_ASSERT_EQUAL_FATAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(memmem(r.reply, r.reply_len, "SIPC_TEST_OWNED=yes", 19) !=
	    NULL);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

int
main(void)
{
	tl_suite("misuse", (tl_test[]){
	    { "test_misuse_blocking_calls_refused_in_callback",
	      test_misuse_blocking_calls_refused_in_callback },
	    { "test_misuse_blocking_calls_refused_for_other_instance",
	      test_misuse_blocking_calls_refused_for_other_instance },
	    { "test_misuse_blocking_calls_refused_in_immediate_rejection",
	      test_misuse_blocking_calls_refused_in_immediate_rejection },
	    { "test_misuse_blocking_calls_refused_in_log_callback",
	      test_misuse_blocking_calls_refused_in_log_callback },
	    { "test_misuse_wait_ready_racing_destroy",
	      test_misuse_wait_ready_racing_destroy },
	    { "test_misuse_calls_during_destroy_refused",
	      test_misuse_calls_during_destroy_refused },
	    { "test_misuse_host_may_free_inputs_after_return",
	      test_misuse_host_may_free_inputs_after_return },
	    { NULL, NULL } });
	return tl_run();
}
