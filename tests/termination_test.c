/*
 * termination_test.c - every way the supervisor ends a worker (stall,
 * deadline, shutdown, protocol violation, lost channel, SIGTERM ignored
 * then SIGKILL after grace) and process-tree termination (group member,
 * double-forked daemon, setsid escapee, subreaper mode).  Before each
 * path the test starts two decoy processes the library must never
 * signal: one in the test's own process group and one in a group of its
 * own; they must be alive after the path, and the test ends them.
 *
 * Threads: the CUnit thread drives every test; callbacks run on library
 * threads and touch only mutex-guarded capture structures.  Waits are on
 * events with generous deadlines, never fixed sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "testlib.h"

#define WAIT_MS 10000           /* generous deadline for any event */

extern char **environ;

/* ------------------------------------------------------------ helpers */

static struct {
	pthread_mutex_t mu;
	char buf[32768];
	size_t len;
} logcap = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
log_fn(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
       pid_t pid, const char *msg)
{
	size_t n = strlen(msg);

	pthread_mutex_lock(&logcap.mu);
	if (logcap.len + n + 2 < sizeof(logcap.buf)) {
		memcpy(logcap.buf + logcap.len, msg, n);
		logcap.len += n;
		logcap.buf[logcap.len++] = '\n';
		logcap.buf[logcap.len] = '\0';
	}
	pthread_mutex_unlock(&logcap.mu);
}

static void
log_reset(void)
{
	pthread_mutex_lock(&logcap.mu);
	logcap.len = 0;
	logcap.buf[0] = '\0';
	pthread_mutex_unlock(&logcap.mu);
}

static bool
log_has(const char *needle)
{
	bool r;

	pthread_mutex_lock(&logcap.mu);
	r = strstr(logcap.buf, needle) != NULL;
	pthread_mutex_unlock(&logcap.mu);
	return r;
}

static bool
log_has_cb(void *arg)
{
	return log_has(arg);
}

/* Fixture paths are resolved once: tl_fixture() reuses one buffer. */
static char fxpath[PATH_MAX];

static void
cfg_base(struct sipc_config *c, const char *fixture, char *const *argv,
         unsigned workers)
{
	snprintf(fxpath, sizeof(fxpath), "%s", tl_fixture(fixture));
	sipc_config_init(c);
	c->environment = SIPC_ENV_TEST;
	c->provider = "local";
	c->path = fxpath;
	c->argv = argv;
	c->workers = workers;
	c->grace_ms = 300;
	c->drain_ms = 300;
	c->handshake_ms = 3000;
	c->cancel_grace_ms = 200;
	c->restart_base_ms = 20;
	c->restart_cap_ms = 200;
	c->log = log_fn;
}

static sipc_supervisor *
start(const struct sipc_config *c, unsigned ready)
{
	sipc_supervisor *s = NULL;
	char err[256];
	int rc;

	log_reset();
	rc = sipc_create(c, err, sizeof(err), &s);
	if (rc != 0)
		fprintf(stderr, "sipc_create: %s: %s\n", sipc_strerror(rc), err);
	CU_ASSERT_FATAL(rc == 0);
	if (ready > 0)
		CU_ASSERT_FATAL(sipc_wait_ready(s, ready, WAIT_MS) == 0);
	return s;
}

/* Synchronous call with a "\0CMD" command payload (cmd NULL: "data"). */
static void
call_cmd(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
         unsigned flags, struct sipc_result *r)
{
	char p[256];
	size_t len;

	if (cmd == NULL) {
		len = (size_t)snprintf(p, sizeof(p), "data");
	} else {
		memcpy(p, "\0CMD", 4);
		len = 4 + (size_t)snprintf(p + 4, sizeof(p) - 4, "%s", cmd);
	}
	struct sipc_request rq = { .payload = p, .len = len,
	    .timeout_ms = timeout_ms, .flags = flags };
	CU_ASSERT_FATAL(sipc_call(s, &rq, r) == 0);
}

/* Poll stats until pred holds (or the deadline).  pred sees one
 * snapshot at a time. */
typedef bool (*stat_pred)(const struct sipc_stats *, void *);
struct stat_wait { sipc_supervisor *s; stat_pred fn; void *arg; };

static bool
stat_cond(void *arg)
{
	struct stat_wait *w = arg;
	struct sipc_stats st;
	bool r;

	if (sipc_stats_get(w->s, &st) != 0)
		return false;
	r = w->fn(&st, w->arg);
	sipc_stats_release(&st);
	return r;
}

static bool
stats_wait(sipc_supervisor *s, stat_pred fn, void *arg, int ms)
{
	struct stat_wait w = { s, fn, arg };

	return tl_wait_until(stat_cond, &w, ms);
}

static struct sipc_worker_stats
worker_stats(sipc_supervisor *s, unsigned i)
{
	struct sipc_worker_stats w;
	struct sipc_stats st;

	memset(&w, 0, sizeof(w));
	if (sipc_stats_get(s, &st) == 0) {
		if (i < st.nworkers)
			w = st.workers[i];
		sipc_stats_release(&st);
	}
	return w;
}

/* Async outcomes: exactly one per submit, counted per index. */
#define OUTBOX_MAX 512
struct outbox {
	pthread_mutex_t mu;
	unsigned calls[OUTBOX_MAX];
	struct sipc_result res[OUTBOX_MAX];
	unsigned total;
};
struct outslot { struct outbox *box; unsigned i; };

static void
outbox_done(void *arg, struct sipc_result *res)
{
	struct outslot *o = arg;

	pthread_mutex_lock(&o->box->mu);
	if (o->box->calls[o->i]++ == 0)
		o->box->res[o->i] = *res;
	else
		sipc_result_release(res);
	o->box->total++;
	pthread_mutex_unlock(&o->box->mu);
}

static void
outbox_release(struct outbox *b)
{
	for (unsigned i = 0; i < OUTBOX_MAX; i++)
		if (b->calls[i] > 0)
			sipc_result_release(&b->res[i]);
}

static void
outbox_reset(struct outbox *b)
{
	memset(b->calls, 0, sizeof(b->calls));
	memset(b->res, 0, sizeof(b->res));
	b->total = 0;
}

static bool
no_zombies(void *arg)
{
	return tl_count_zombie_children() == 0;
}

/* ------------------------------------------------------------ decoys */

struct decoys { pid_t same_group, own_group; };

static void
decoys_start(struct decoys *d)
{
	char *const argv[] = { "sleep", "120", NULL };
	posix_spawnattr_t attr;

	CU_ASSERT_FATAL(posix_spawnp(&d->same_group, "sleep", NULL, NULL,
	    argv, environ) == 0);
	CU_ASSERT_FATAL(posix_spawnattr_init(&attr) == 0);
	CU_ASSERT_FATAL(posix_spawnattr_setflags(&attr,
	    POSIX_SPAWN_SETPGROUP) == 0);
	CU_ASSERT_FATAL(posix_spawnattr_setpgroup(&attr, 0) == 0);
	CU_ASSERT_FATAL(posix_spawnp(&d->own_group, "sleep", NULL, &attr,
	    argv, environ) == 0);
	posix_spawnattr_destroy(&attr);
	CU_ASSERT_EQUAL(getpgid(d->same_group), getpgrp());
	CU_ASSERT_EQUAL(getpgid(d->own_group), d->own_group);
}

/* Alive, and not even stopped: no signal at all reached them. */
static void
decoys_check(const struct decoys *d)
{
	int st;

	CU_ASSERT(tl_pid_alive(d->same_group));
	CU_ASSERT(tl_pid_alive(d->own_group));
	CU_ASSERT_EQUAL(waitpid(d->same_group, &st, WNOHANG), 0);
	CU_ASSERT_EQUAL(waitpid(d->own_group, &st, WNOHANG), 0);
}

static void
decoys_stop(struct decoys *d)
{
	int st;

	decoys_check(d);
	CU_ASSERT(kill(d->same_group, SIGKILL) == 0);
	CU_ASSERT(kill(d->own_group, SIGKILL) == 0);
	CU_ASSERT_EQUAL(waitpid(d->same_group, &st, 0), d->same_group);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CU_ASSERT_EQUAL(waitpid(d->own_group, &st, 0), d->own_group);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

struct term_want { enum sipc_exit_kind kind; enum sipc_term_reason reason; };

static bool
pred_term(const struct sipc_stats *st, void *arg)
{
	struct term_want *w = arg;

	return st->workers[0].last_exit.kind == w->kind &&
	    st->workers[0].last_exit.reason == w->reason;
}

static bool
pred_respawned(const struct sipc_stats *st, void *arg)
{
	return st->workers[0].generation >= 2 &&
	    st->workers[0].state == SIPC_WS_READY;
}

static bool
pid_dead(void *arg)
{
	return !tl_pid_alive(*(pid_t *)arg);
}

/* One command on a one-worker echo pool: the worker misbehaves, the
 * supervisor ends it for `why`; the request's outcome says so. */
static void
echo_path(const char *cmd, unsigned timeout_ms, enum sipc_outcome want_o,
          int want_err, enum sipc_term_reason why, unsigned stall_ms)
{
	char *const argv[] = { "echo", NULL };
	struct term_want tw = { SIPC_EXIT_TERMINATED, why };
	struct sipc_config c;
	struct sipc_result r;
	struct decoys d;
	sipc_supervisor *s;
	pid_t victim;

	decoys_start(&d);
	cfg_base(&c, "echo", argv, 1);
	if (stall_ms != 0)
		c.stall_ms = stall_ms;
	s = start(&c, 1);
	victim = worker_stats(s, 0).pid;
	call_cmd(s, cmd, timeout_ms, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, want_o);
	CU_ASSERT_EQUAL(r.error, want_err);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 1);
	if (want_o == SIPC_OUTCOME_UNKNOWN) {
		CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_TERMINATED);
		CU_ASSERT_EQUAL(r.exit.reason, why);
	}
	sipc_result_release(&r);
	CU_ASSERT(stats_wait(s, pred_term, &tw, WAIT_MS));
	CU_ASSERT(tl_wait_until(pid_dead, &victim, WAIT_MS));
	decoys_check(&d);
	if (why == SIPC_TERM_DEADLINE) {
		/* the worker was sent the request and then a CANCEL */
		CU_ASSERT_EQUAL(worker_stats(s, 0).frames_out, 2);
	}
	/* the slot comes back as a new generation and serves */
	CU_ASSERT(stats_wait(s, pred_respawned, NULL, WAIT_MS));
	call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	sipc_destroy(s);
	decoys_stop(&d);
}

static void
test_termination_stall(void)
{
	echo_path("stopread", 0, SIPC_OUTCOME_UNKNOWN, SIPC_E_STALL,
	    SIPC_TERM_STALL, 300);
}

static void
test_termination_deadline(void)
{
	int64_t t0 = tl_now_ms();

	/* TIMEOUT at 200 ms, CANCEL ignored, terminated 200 ms later */
	echo_path("hang", 200, SIPC_OUTCOME_TIMEOUT, SIPC_E_TIMEOUT,
	    SIPC_TERM_DEADLINE, 0);
	CU_ASSERT(tl_now_ms() - t0 >= 400);
}

static void
test_termination_channel_lost(void)
{
	echo_path("closechan", 0, SIPC_OUTCOME_UNKNOWN, SIPC_E_WORKER_DIED,
	    SIPC_TERM_CHANNEL_LOST, 0);
}

static void
test_termination_protocol(void)
{
	char *const argv[] = { "badframes", "unknownid", NULL };
	struct term_want tw = { SIPC_EXIT_TERMINATED, SIPC_TERM_PROTOCOL };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	struct decoys d;
	sipc_supervisor *s;

	decoys_start(&d);
	cfg_base(&c, "badframes", argv, 1);
	s = start(&c, 1);
	call_cmd(s, NULL, 0, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_PROTOCOL);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(r.exit.reason, SIPC_TERM_PROTOCOL);
	sipc_result_release(&r);
	CU_ASSERT(stats_wait(s, pred_term, &tw, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.protocol_violations >= 1);
	sipc_stats_release(&st);
	decoys_check(&d);
	sipc_destroy(s);
	decoys_stop(&d);
}

/* Shutdown with a request in flight on a worker that never answers. */
static void
test_termination_shutdown(void)
{
	char *const argv[] = { "hang", NULL };
	static struct outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct outslot o = { &box, 0 };
	struct sipc_request rq = { .payload = "x", .len = 1 };
	struct sipc_config c;
	struct decoys d;
	sipc_supervisor *s;
	pid_t victim;

	outbox_reset(&box);
	decoys_start(&d);
	cfg_base(&c, "hang", argv, 1);
	c.drain_ms = 100;
	s = start(&c, 1);
	victim = worker_stats(s, 0).pid;
	CU_ASSERT_FATAL(sipc_submit(s, &rq, outbox_done, &o, NULL) == 0);
	sipc_destroy(s);
	CU_ASSERT_EQUAL(box.calls[0], 1);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[0].error, SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL(box.res[0].exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(box.res[0].exit.reason, SIPC_TERM_SHUTDOWN);
	CU_ASSERT(!tl_pid_alive(victim));
	outbox_release(&box);
	decoys_stop(&d);
}

/*
 * A worker that ignores SIGTERM and never reads again (stubborn: the
 * handler sleeps for good) is killed when the grace runs out: at
 * shutdown, with a request in flight.
 */
static void
test_termination_ignoreterm_killed_after_grace(void)
{
	char *const argv[] = { "stubborn", NULL };
	static struct outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct outslot o = { &box, 0 };
	struct sipc_request rq = { .payload = "x", .len = 1 };
	struct sipc_config c;
	struct decoys d;
	sipc_supervisor *s;
	int64_t t0;
	pid_t victim;

	outbox_reset(&box);
	decoys_start(&d);
	cfg_base(&c, "stubborn", argv, 1);
	c.grace_ms = 300;
	c.drain_ms = 50;
	s = start(&c, 1);
	victim = worker_stats(s, 0).pid;
	CU_ASSERT_FATAL(sipc_submit(s, &rq, outbox_done, &o, NULL) == 0);
	CU_ASSERT(tl_wait_until(log_has_cb, "holding request", WAIT_MS));
	t0 = tl_now_ms();
	sipc_destroy(s);
	CU_ASSERT(tl_now_ms() - t0 >= 290);       /* TERM did not do it */
	CU_ASSERT(log_has("grace period over"));
	CU_ASSERT_EQUAL(box.calls[0], 1);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[0].exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(box.res[0].exit.reason, SIPC_TERM_SHUTDOWN);
	CU_ASSERT_EQUAL(box.res[0].exit.signo, SIGKILL);
	CU_ASSERT_PTR_NOT_NULL(box.res[0].diag_tail);
	CU_ASSERT(!tl_pid_alive(victim));
	outbox_release(&box);
	decoys_stop(&d);
}

/* The same worker past a request deadline: CANCEL, cancel grace, TERM
 * (ignored), grace, KILL; classified as a deadline termination. */
static void
test_termination_ignoreterm_deadline(void)
{
	char *const argv[] = { "stubborn", NULL };
	struct term_want tw = { SIPC_EXIT_TERMINATED, SIPC_TERM_DEADLINE };
	struct sipc_config c;
	struct sipc_result r;
	struct decoys d;
	sipc_supervisor *s;
	pid_t victim;

	decoys_start(&d);
	cfg_base(&c, "stubborn", argv, 1);
	s = start(&c, 1);
	victim = worker_stats(s, 0).pid;
	call_cmd(s, NULL, 200, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT(r.may_have_run);
	sipc_result_release(&r);
	CU_ASSERT(stats_wait(s, pred_term, &tw, WAIT_MS));
	CU_ASSERT_EQUAL(worker_stats(s, 0).last_exit.signo, SIGKILL);
	CU_ASSERT(log_has("grace period over"));
	CU_ASSERT(!tl_pid_alive(victim));
	decoys_check(&d);
	sipc_destroy(s);
	decoys_stop(&d);
}

/* ------------------------------------------------------------ trees */

struct tree { pid_t leader, group, daemon_pid, escapee; };

static void
tree_read(sipc_supervisor *s, struct tree *t)
{
	struct sipc_result r;
	char buf[200];
	int le, gr, da, es;

	call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_FATAL(r.outcome == SIPC_OUTCOME_OK &&
	    r.reply_len < sizeof(buf));
	memcpy(buf, r.reply, r.reply_len);
	buf[r.reply_len] = '\0';
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sscanf(buf, "leader=%d group=%d daemon=%d escapee=%d",
	    &le, &gr, &da, &es) == 4);
	*t = (struct tree){ le, gr, da, es };
	CU_ASSERT(tl_pid_alive(t->group) && tl_pid_alive(t->daemon_pid) &&
	    tl_pid_alive(t->escapee));
	CU_ASSERT_EQUAL(getpgid(t->group), t->leader);
	CU_ASSERT_EQUAL(getpgid(t->daemon_pid), t->leader);
	CU_ASSERT_EQUAL(getsid(t->escapee), t->escapee);
}

/* The documented non-guarantee: a setsid escapee survives; the test
 * pins that down, then ends it itself (reaping it if it became ours). */
static void
escapee_survives(pid_t p)
{
	int st;

	CU_ASSERT(tl_pid_alive(p));
	CU_ASSERT(kill(p, SIGKILL) == 0);
	if (waitpid(p, &st, 0) < 0)
		CU_ASSERT_EQUAL(errno, ECHILD);    /* init's child, not ours */
}

static void
tree_case(bool subreaper, bool kill_leader)
{
	char *const argv[] = { "forker", "escape", NULL };
	struct term_want tw = { SIPC_EXIT_SIGNAL, SIPC_TERM_NONE };
	struct sipc_config c;
	struct decoys d;
	struct tree t, t0 = { 0, 0, 0, 0 };
	sipc_supervisor *s;

	decoys_start(&d);
	cfg_base(&c, "forker", argv, 1);
	c.subreaper = subreaper;
	s = start(&c, 1);
	tree_read(s, &t);
	if (kill_leader) {
		/* the worker dies on its own: its group goes with it */
		CU_ASSERT(kill(t.leader, SIGKILL) == 0);
		CU_ASSERT(stats_wait(s, pred_term, &tw, WAIT_MS));
		CU_ASSERT(tl_wait_until(pid_dead, &t.group, WAIT_MS));
		CU_ASSERT(tl_wait_until(pid_dead, &t.daemon_pid, WAIT_MS));
		decoys_check(&d);
		/* the replacement builds a tree of its own; shutdown below
		 * must end that one, and its escapee is ours to end too */
		t0 = t;
		CU_ASSERT_FATAL(stats_wait(s, pred_respawned, NULL, WAIT_MS));
		tree_read(s, &t);
		CU_ASSERT(t.leader != t0.leader);
	}
	sipc_destroy(s);
	CU_ASSERT(tl_wait_until(pid_dead, &t.leader, WAIT_MS));
	CU_ASSERT(tl_wait_until(pid_dead, &t.group, WAIT_MS));
	CU_ASSERT(tl_wait_until(pid_dead, &t.daemon_pid, WAIT_MS));
	if (subreaper) {
		/* orphans adopted by this process were reaped too */
		CU_ASSERT(tl_wait_until((bool (*)(void *))no_zombies, NULL,
		    WAIT_MS));
	}
	decoys_check(&d);
	if (t0.escapee != 0)
		escapee_survives(t0.escapee);
	escapee_survives(t.escapee);
	decoys_stop(&d);
	if (subreaper)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 0);
}

static void
test_termination_tree_on_shutdown(void)
{
	tree_case(false, false);
}

static void
test_termination_tree_on_worker_death(void)
{
	tree_case(false, true);
}

static void
test_termination_tree_subreaper_on_death(void)
{
	tree_case(true, true);
}

static void
test_termination_tree_subreaper_on_shutdown(void)
{
	tree_case(true, false);
}

static const tl_test termination_tests[] = {
	{ "test_termination_stall", test_termination_stall },
	{ "test_termination_deadline", test_termination_deadline },
	{ "test_termination_channel_lost", test_termination_channel_lost },
	{ "test_termination_protocol", test_termination_protocol },
	{ "test_termination_shutdown", test_termination_shutdown },
	{ "test_termination_ignoreterm_killed_after_grace",
	  test_termination_ignoreterm_killed_after_grace },
	{ "test_termination_ignoreterm_deadline",
	  test_termination_ignoreterm_deadline },
	{ "test_termination_tree_on_shutdown",
	  test_termination_tree_on_shutdown },
	{ "test_termination_tree_on_worker_death",
	  test_termination_tree_on_worker_death },
	/* last: they make this process a subreaper (cleared after) */
	{ "test_termination_tree_subreaper_on_death",
	  test_termination_tree_subreaper_on_death },
	{ "test_termination_tree_subreaper_on_shutdown",
	  test_termination_tree_subreaper_on_shutdown },
	{ NULL, NULL },
};

int
main(void)
{
	struct rlimit rl = { 0, 0 };

	(void)getrlimit(RLIMIT_CORE, &rl);
	rl.rlim_cur = 0;
	(void)setrlimit(RLIMIT_CORE, &rl);
	tl_suite("termination", termination_tests);
	return tl_run();
}
