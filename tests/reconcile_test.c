/*
 * reconcile_test.c - supervisor restart through the public API: a
 * supervisor in a forked child is SIGKILLed with requests in every
 * state, and the next supervisor on the same state directory lists them
 * (never sent / may have run / completed), resolves them (idempotently,
 * across a second crash), terminates the dead instance's leftover worker
 * only after proving its identity (an unrelated decoy survives), and a
 * concurrent instance is refused with the holder's pid.
 *
 * This process is a child subreaper, so a leftover worker of a killed
 * child is reparented to it and the test can collect its exit status;
 * the library in this process must leave that status alone (it never
 * reaps what it did not spawn).  Single-threaded test code; the
 * library's threads run inside each supervisor.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "statedir.h"
#include "testlib.h"

#define NQUEUED 3
#define DEADLINE_MS 20000

/* What a crashed child reports before it is killed. */
struct crash_info {
	pid_t child;
	pid_t worker;           /* its survivor worker, a leftover-to-be */
};

static struct sipc_config
cfg_for(const char *dir, const char *fixture, enum sipc_durability d)
{
	struct sipc_config c;

	st_cfg_init(&c, fixture, NULL, 1);
	/* Leftover workers outlive a crashed supervisor only in
	 * process-group mode (a namespace dies with its supervisor, see
	 * contain_test.c); the leftover proofs are tested there. */
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.max_inflight = 1;
	c.grace_ms = 300;
	c.handshake_ms = 5000;
	c.stall_ms = 600000;     /* a hung request is the point here */
	c.restart_base_ms = 20;
	c.state_dir = dir;
	c.durability = d;
	c.group_commit_ms = 5;
	return c;
}

/* FNV-1a 64, as sipc.h documents payload_digest. */
static uint64_t
fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n-- > 0)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

/* ------------------------------------------------------- child side */

static atomic_bool child_done_seen;

/* Completion of the request that must end up COMPLETED-but-undelivered:
 * the outcome is journalled before this runs; it never returns, so the
 * delivery is never journalled. */
static void
block_cb(void *arg, struct sipc_result *res)
{
	sipc_result_release(res);
	atomic_store(&child_done_seen, true);
	for (;;)
		pause();
}

static void
noop_cb(void *arg, struct sipc_result *res)
{
	sipc_result_release(res);
}

/* Slot 0 wrote at least `frames_out` frames and queues `queued`. */
struct sent_want { uint64_t frames_out; unsigned queued; };

static bool
pred_sent(const struct sipc_stats *st, void *arg)
{
	const struct sent_want *w = arg;

	return st->workers[0].frames_out >= w->frames_out &&
	    st->workers[0].queued >= w->queued;
}

static bool
child_wait_stats(sipc_supervisor *s, uint64_t frames_out, unsigned queued)
{
	struct sent_want w = { frames_out, queued };

	return st_stats_wait(s, pred_sent, &w, DEADLINE_MS);
}

static pid_t
child_worker_pid(sipc_supervisor *s)
{
	struct sipc_stats st;
	pid_t pid;

	if (sipc_stats_get(s, &st) < 0)
		return -1;
	pid = st.workers[0].pid;
	sipc_stats_release(&st);
	return pid;
}

/*
 * The doomed instance: one survivor worker, one request in flight at a
 * time.  "k-done" is answered and its callback never returns; "k-hang"
 * is written and never answered; "k-q1".."k-q3" wait in the ring behind
 * it.  Reports "ready <worker pid>" and waits to be killed.
 */
static bool
done_seen(void *arg)
{
	return atomic_load(&child_done_seen);
}

/* Where a forked instance runs. */
struct inst_at { const char *dir; enum sipc_durability d; };

static void __attribute__((noreturn))
child_crash_run(int fd, void *arg)
{
	const struct inst_at *in = arg;
	struct sipc_config c = cfg_for(in->dir, "survivor", in->d);
	struct sipc_request r = { .payload = "alpha", .len = 5 };
	sipc_supervisor *s = NULL;
	char key[16];
	int rc, i;

	if ((rc = sipc_create(&c, NULL, 0, &s)) < 0)
		sd_child_fail(fd, "create", rc);
	if ((rc = sipc_wait_ready(s, 1, DEADLINE_MS)) < 0)
		sd_child_fail(fd, "ready", rc);
	r.idempotency_key = "k-done";
	if ((rc = sipc_submit(s, &r, block_cb, NULL, NULL)) < 0)
		sd_child_fail(fd, "submit done", rc);
	if (!tl_wait_until(done_seen, NULL, DEADLINE_MS))
		sd_child_fail(fd, "outcome of k-done", -ETIMEDOUT);
	r.payload = "\0CMDhang";
	r.len = 8;
	r.idempotency_key = "k-hang";
	if ((rc = sipc_submit(s, &r, noop_cb, NULL, NULL)) < 0)
		sd_child_fail(fd, "submit hang", rc);
	if (!child_wait_stats(s, 2, 0))
		sd_child_fail(fd, "hang written", -ETIMEDOUT);
	for (i = 1; i <= NQUEUED; i++) {
		snprintf(key, sizeof(key), "k-q%d", i);
		r.payload = key;
		r.len = strlen(key);
		r.idempotency_key = key;
		if ((rc = sipc_submit(s, &r, noop_cb, NULL, NULL)) < 0)
			sd_child_fail(fd, "submit queued", rc);
	}
	if (!child_wait_stats(s, 2, NQUEUED))
		sd_child_fail(fd, "queued", -ETIMEDOUT);
	dprintf(fd, "ready %d\n", (int)child_worker_pid(s));
	for (;;)
		pause();
}

/*
 * An instance with a forked child that keeps a copy of every descriptor,
 * the lock's included, and never execs: what a worker is between clone
 * and execve when its supervisor is killed.  Reports the child's pid.
 */
static void __attribute__((noreturn))
child_fork_holder(int fd, void *arg)
{
	const struct inst_at *in = arg;
	struct sipc_config c = cfg_for(in->dir, "echo", SIPC_DURABLE_EACH);
	sipc_supervisor *s = NULL;
	pid_t kid;
	int rc;

	if ((rc = sipc_create(&c, NULL, 0, &s)) < 0)
		sd_child_fail(fd, "create", rc);
	if ((kid = tl_spawn_idle(NULL, false)) < 0)
		sd_child_fail(fd, "fork", -errno);
	dprintf(fd, "ready %d\n", (int)kid);
	for (;;)
		pause();
}

/*
 * The instance that crashes during reconciliation: resolves the first
 * two listed entries, reports "ready <worker pid> <n listed>
 * <resolved keys...>" and waits to be killed.
 */
static void __attribute__((noreturn))
child_half_resolve(int fd, void *arg)
{
	const struct inst_at *in = arg;
	struct sipc_config c = cfg_for(in->dir, "survivor", SIPC_DURABLE_EACH);
	const size_t nresolve = 2;
	struct sipc_unresolved *u = NULL;
	sipc_supervisor *s = NULL;
	char line[1024];
	size_t n = 0, i, off;
	int rc;

	if ((rc = sipc_create(&c, NULL, 0, &s)) < 0)
		sd_child_fail(fd, "create", rc);
	if ((rc = sipc_wait_ready(s, 1, DEADLINE_MS)) < 0)
		sd_child_fail(fd, "ready", rc);
	if ((rc = sipc_reconcile_list(s, &u, &n)) < 0)
		sd_child_fail(fd, "list", rc);
	off = (size_t)snprintf(line, sizeof(line), "ready %d %zu",
	    (int)child_worker_pid(s), n);
	for (i = 0; i < nresolve && i < n; i++) {
		if ((rc = sipc_reconcile_resolve(s, &u[i])) < 0)
			sd_child_fail(fd, "resolve", rc);
		off += (size_t)snprintf(line + off, sizeof(line) - off, " %s",
		    u[i].key);
	}
	dprintf(fd, "%s\n", line);
	for (;;)
		pause();
}

/* ------------------------------------------------------ parent side */

/* Fork an instance running `fn` on dir; its first line in `line`. */
static pid_t
spawn_child(void (*fn)(int, void *), const char *dir,
            enum sipc_durability d, char *line, size_t len)
{
	struct inst_at in = { dir, d };

	return sd_fork_instance(fn, &in, line, len, DEADLINE_MS);
}

/* Crash an instance with requests in every state; report its worker. */
static struct crash_info
crash_instance(const char *dir, enum sipc_durability d)
{
	struct crash_info ci;
	char line[256];

	ci.child = spawn_child(child_crash_run, dir, d, line, sizeof(line));
	ci.worker = (pid_t)atoi(line + 6);
	CU_ASSERT_FATAL(ci.worker > 0);
	sd_kill_instance(ci.child);
	return ci;
}

static sipc_supervisor *
open_next(const char *dir, const char *fixture)
{
	struct sipc_config c = cfg_for(dir, fixture, SIPC_DURABLE_EACH);

	return st_start(&c, 0, 0);      /* reconcile needs no ready worker */
}

/* The five entries a crash_instance() leaves, each in its state. */
static void
check_crash_list(const struct sipc_unresolved *u, size_t n)
{
	const struct sipc_unresolved *e;
	char key[16];
	int i;

	CU_ASSERT_EQUAL_FATAL(n, 2 + NQUEUED);
	e = sd_find_key(u, n, "k-done");
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_EQUAL(e->state, SIPC_UNRESOLVED_COMPLETED);
	CU_ASSERT_EQUAL(e->outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_EQUAL(e->error, 0);
	CU_ASSERT_EQUAL(e->payload_len, 5);
	CU_ASSERT_EQUAL(e->payload_digest, fnv1a("alpha", 5));
	e = sd_find_key(u, n, "k-hang");
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_EQUAL(e->state, SIPC_UNRESOLVED_MAY_HAVE_RUN);
	CU_ASSERT_EQUAL(e->payload_digest, fnv1a("\0CMDhang", 8));
	for (i = 1; i <= NQUEUED; i++) {
		snprintf(key, sizeof(key), "k-q%d", i);
		e = sd_find_key(u, n, key);
		CU_ASSERT_FATAL(e != NULL);
		CU_ASSERT_EQUAL(e->state, SIPC_UNRESOLVED_NEVER_SENT);
		CU_ASSERT_EQUAL(e->payload_len, strlen(key));
	}
}

/* ------------------------------------------------------------ tests */

/* rules: J1 */
static void
test_reconcile_states_after_crash(void)
{
	char *dir = sd_make();
	struct sipc_unresolved *u = NULL;
	struct crash_info ci;
	sipc_supervisor *s;
	size_t n = 0, i;

	if (st_skip_sandboxed("a worker outliving its killed supervisor"))
		return;
	ci = crash_instance(dir, SIPC_DURABLE_EACH);
	s = open_next(dir, "echo");
	CU_ASSERT_FATAL(sipc_reconcile_list(s, &u, &n) == 0);
	check_crash_list(u, n);
	for (i = 0; i < n; i++)
		CU_ASSERT(sipc_reconcile_resolve(s, &u[i]) == 0);
	/* Resolving again is a no-op the host can recognise. */
	CU_ASSERT_EQUAL(sipc_reconcile_resolve(s, &u[0]), SIPC_E_NOTFOUND);
	sipc_reconcile_free(u);
	u = NULL;
	CU_ASSERT(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 0);
	sipc_reconcile_free(u);
	sipc_destroy(s);
	CU_ASSERT(tl_reap_signaled(ci.worker, SIGTERM, DEADLINE_MS));

	/* A clean restart has nothing left to reconcile. */
	s = open_next(dir, "echo");
	u = NULL;
	CU_ASSERT(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 0);
	sipc_reconcile_free(u);
	sipc_destroy(s);
	sd_remove(dir);
}

/* rules: J10 */
static void
test_reconcile_group_commit_crash_lists_the_same(void)
{
	char *dir = sd_make();
	struct sipc_unresolved *u = NULL;
	struct crash_info ci;
	sipc_supervisor *s;
	size_t n = 0;

	if (st_skip_sandboxed("a worker outliving its killed supervisor"))
		return;
	/* A process crash loses nothing in GROUP mode either: every
	 * record was written before its step, only the sync is grouped. */
	ci = crash_instance(dir, SIPC_DURABLE_GROUP);
	s = open_next(dir, "echo");
	CU_ASSERT_FATAL(sipc_reconcile_list(s, &u, &n) == 0);
	check_crash_list(u, n);
	sipc_reconcile_free(u);
	sipc_destroy(s);
	CU_ASSERT(tl_reap_signaled(ci.worker, SIGTERM, DEADLINE_MS));
	sd_remove(dir);
}

/* rules: J6 */
static void
test_reconcile_leftover_worker_terminated_decoy_survives(void)
{
	char *dir = sd_make();
	struct crash_info ci;
	sipc_supervisor *s;
	pid_t decoy;

	if (st_skip_sandboxed("a worker outliving its killed supervisor"))
		return;
	ci = crash_instance(dir, SIPC_DURABLE_OFF);
	/* The supervisor is dead; its worker did not notice. */
	CU_ASSERT_FATAL(tl_pid_alive(ci.worker));
	/* A decoy in a process group of its own, unrelated to any
	 * supervisor. */
	decoy = tl_spawn_idle(NULL, true);
	CU_ASSERT_FATAL(decoy > 0 && tl_pid_alive(decoy));

	/* Opening the state directory proves and terminates it. */
	s = open_next(dir, "echo");
	CU_ASSERT(tl_reap_signaled(ci.worker, SIGTERM, DEADLINE_MS));
	CU_ASSERT(!tl_pid_alive(ci.worker));
	CU_ASSERT(tl_pid_alive(decoy));
	CU_ASSERT(sipc_wait_ready(s, 1, DEADLINE_MS) == 0);
	sipc_destroy(s);
	CU_ASSERT(tl_pid_alive(decoy));
	tl_kill_reap(decoy);
	sd_remove(dir);
}

/* rules: J2 */
static void
test_reconcile_idempotent_across_second_crash(void)
{
	char *dir = sd_make();
	struct sipc_unresolved *u = NULL;
	char line[1024], *tok, *save = NULL;
	const char *resolved[2];
	struct crash_info ci;
	sipc_supervisor *s;
	pid_t b, bworker;
	size_t n = 0, i;
	int nres = 0;

	if (st_skip_sandboxed("a worker outliving its killed supervisor"))
		return;
	ci = crash_instance(dir, SIPC_DURABLE_OFF);
	/* Instance B resolves two of the five, then dies as well. */
	b = spawn_child(child_half_resolve, dir, SIPC_DURABLE_EACH, line,
	    sizeof(line));
	sd_kill_instance(b);
	CU_ASSERT(tl_reap_signaled(ci.worker, SIGTERM, DEADLINE_MS));
	tok = strtok_r(line + 6, " ", &save);
	bworker = (pid_t)atoi(tok);
	tok = strtok_r(NULL, " ", &save);
	CU_ASSERT_EQUAL(atoi(tok), 2 + NQUEUED);
	while ((tok = strtok_r(NULL, " ", &save)) != NULL && nres < 2)
		resolved[nres++] = tok;
	CU_ASSERT_EQUAL_FATAL(nres, 2);

	/* Instance C: the resolved ones stay resolved, the rest is listed
	 * again, and B's own leftover is proven and terminated too. */
	s = open_next(dir, "echo");
	CU_ASSERT(tl_reap_signaled(bworker, SIGTERM, DEADLINE_MS));
	CU_ASSERT_FATAL(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 2 + NQUEUED - 2);
	for (i = 0; i < (size_t)nres; i++)
		CU_ASSERT(sd_find_key(u, n, resolved[i]) == NULL);
	for (i = 0; i < n; i++)
		CU_ASSERT(sipc_reconcile_resolve(s, &u[i]) == 0);
	sipc_reconcile_free(u);
	u = NULL;
	CU_ASSERT(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 0);
	sipc_reconcile_free(u);
	sipc_destroy(s);
	sd_remove(dir);
}

/* Does `text` contain `pid` as a whole decimal number? */
static bool
names_pid(const char *text, pid_t pid)
{
	char num[24];
	const char *p = text;
	size_t len;

	len = (size_t)snprintf(num, sizeof(num), "%d", (int)pid);
	while ((p = strstr(p, num)) != NULL) {
		if ((p == text || p[-1] < '0' || p[-1] > '9') &&
		    (p[len] < '0' || p[len] > '9'))
			return true;
		p++;
	}
	return false;
}

/* rules: J4 */
static void
test_reconcile_lock_names_holder(void)
{
	char *dir = sd_make();
	struct sipc_config c = cfg_for(dir, "echo", SIPC_DURABLE_EACH);
	sipc_supervisor *s = NULL;
	char line[256], err[256];
	pid_t holder, worker;
	int fds, rc;

	if (st_skip_sandboxed("a worker outliving its killed supervisor"))
		return;
	holder = spawn_child(child_crash_run, dir, SIPC_DURABLE_EACH, line,
	    sizeof(line));
	worker = (pid_t)atoi(line + 6);
	fds = tl_count_fds();
	err[0] = '\0';
	rc = sipc_create(&c, err, sizeof(err), &s);
	CU_ASSERT_EQUAL(rc, SIPC_E_LOCKED);
	CU_ASSERT(s == NULL);
	CU_ASSERT(names_pid(err, holder));
	if (!names_pid(err, holder))
		fprintf(stderr, "holder %d not named in \"%s\"\n", (int)holder,
		    err);
	/* A refused create leaves nothing behind and spawns nothing. */
	CU_ASSERT_EQUAL(tl_count_fds(), fds);
	CU_ASSERT(tl_pid_alive(worker));

	/* The lock dies with its holder, even though the holder's worker
	 * is still alive (workers never inherit the lock descriptor). */
	sd_kill_instance(holder);
	CU_ASSERT(tl_pid_alive(worker));
	s = open_next(dir, "echo");
	CU_ASSERT(tl_reap_signaled(worker, SIGTERM, DEADLINE_MS));
	sipc_destroy(s);
	sd_remove(dir);
}

/*
 * The lock belongs to the holder's process, not to its descriptor: once
 * the holder is dead (reaped), the next instance gets the directory even
 * while a child forked by the holder still has the lock's descriptor
 * open.  With a flock() the child kept the dead instance's lock.
 */
/* rules: J4 */
static void
test_reconcile_lock_not_kept_by_holders_child(void)
{
	char *dir = sd_make();
	char line[256];
	sipc_supervisor *s;
	pid_t holder, kid;

	holder = spawn_child(child_fork_holder, dir, SIPC_DURABLE_EACH, line,
	    sizeof(line));
	kid = (pid_t)atoi(line + 6);
	CU_ASSERT_FATAL(kid > 0);
	sd_kill_instance(holder);
	CU_ASSERT(tl_pid_alive(kid));
	s = open_next(dir, "echo");
	sipc_destroy(s);
	CU_ASSERT(kill(kid, SIGKILL) == 0);
	CU_ASSERT(tl_reap_signaled(kid, SIGKILL, DEADLINE_MS));
	sd_remove(dir);
}

/* Record locks never conflict inside one process: a second instance in
 * the same process is refused by the library itself, the refusal does
 * not drop the first instance's lock (closing any descriptor of the
 * file would), and the directory is free again after destroy. */
/* rules: J4 */
static void
test_reconcile_lock_second_instance_same_process(void)
{
	char *dir = sd_make();
	struct sipc_config c = cfg_for(dir, "echo", SIPC_DURABLE_EACH);
	sipc_supervisor *s, *t = NULL;
	char err[256], path[512];
	pid_t other;
	int st;

	s = st_start(&c, 0, 0);
	err[0] = '\0';
	CU_ASSERT_EQUAL(sipc_create(&c, err, sizeof(err), &t), SIPC_E_LOCKED);
	CU_ASSERT(t == NULL);
	CU_ASSERT(strstr(err, "in this process") != NULL);
	/* Another process still sees our lock after that refusal (only
	 * async-signal-safe calls in the forked child). */
	snprintf(path, sizeof(path), "%s/sipc.pid", dir);
	other = fork();
	CU_ASSERT_FATAL(other >= 0);
	if (other == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		_exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 &&
		    fl.l_type == F_WRLCK && fl.l_pid == getppid() ? 0 : 1);
	}
	CU_ASSERT(waitpid(other, &st, 0) == other);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	sipc_destroy(s);
	s = open_next(dir, "echo");
	sipc_destroy(s);
	sd_remove(dir);
}

static void
clean_cb(void *arg, struct sipc_result *res)
{
	if (res->outcome == SIPC_OUTCOME_OK)
		atomic_fetch_add((atomic_int *)arg, 1);
	sipc_result_release(res);
}

/* rules: J5 */
static void
test_reconcile_clean_shutdown_leaves_nothing(void)
{
	char *dir = sd_make();
	struct sipc_config c = cfg_for(dir, "echo", SIPC_DURABLE_GROUP);
	struct sipc_unresolved *u = NULL;
	struct sipc_request r = { .payload = "x", .len = 1 };
	sipc_supervisor *s = NULL;
	atomic_int ok = 0;
	size_t n = 1;
	int i;

	c.workers = 2;
	c.max_inflight = 8;
	CU_ASSERT_FATAL(sipc_create(&c, NULL, 0, &s) == 0);
	CU_ASSERT_FATAL(sipc_wait_ready(s, 2, DEADLINE_MS) == 0);
	for (i = 0; i < 200; i++) {
		r.idempotency_key = i % 2 ? "odd" : NULL;
		CU_ASSERT(sipc_submit(s, &r, clean_cb, &ok, NULL) == 0);
	}
	sipc_destroy(s);    /* drains */
	CU_ASSERT_EQUAL(atomic_load(&ok), 200);
	s = open_next(dir, "echo");
	CU_ASSERT(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 0);
	sipc_reconcile_free(u);
	sipc_destroy(s);
	sd_remove(dir);
}

/* The verdicts on a dead instance's workers reach the host through the
 * reconcile API: a worker that is gone is NOT_PROVEN (nothing
 * signalled), a live one whose identity is proven is TERMINATED. */
/* rules: CG2 J6 */
static void
test_reconcile_leftover_verdicts(void)
{
	char *dir = sd_make();
	struct sipc_leftover *l = NULL;
	struct crash_info ci;
	sipc_supervisor *s;
	size_t n = 9;

	if (st_skip_sandboxed("a worker outliving its killed supervisor"))
		return;
	ci = crash_instance(dir, SIPC_DURABLE_OFF);
	CU_ASSERT(kill(ci.worker, SIGKILL) == 0);
	CU_ASSERT(tl_reap_signaled(ci.worker, SIGKILL, DEADLINE_MS));
	s = open_next(dir, "echo");
	CU_ASSERT_FATAL(sipc_reconcile_leftovers(s, &l, &n) == 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(l[0].verdict, SIPC_LEFTOVER_NOT_PROVEN);
	CU_ASSERT_EQUAL(l[0].pid, ci.worker);
	CU_ASSERT_EQUAL(l[0].pgid, ci.worker);
	CU_ASSERT_EQUAL(l[0].worker_id, 0);
	CU_ASSERT_EQUAL(l[0].generation, 1);
	CU_ASSERT(l[0].starttime > 0);
	CU_ASSERT_EQUAL(l[0].error, 0);
	sipc_reconcile_leftovers_free(l);
	sipc_destroy(s);

	ci = crash_instance(dir, SIPC_DURABLE_OFF);
	CU_ASSERT_FATAL(tl_pid_alive(ci.worker));
	s = open_next(dir, "echo");
	CU_ASSERT(tl_reap_signaled(ci.worker, SIGTERM, DEADLINE_MS));
	l = NULL;
	CU_ASSERT_FATAL(sipc_reconcile_leftovers(s, &l, &n) == 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(l[0].verdict, SIPC_LEFTOVER_TERMINATED);
	CU_ASSERT_EQUAL(l[0].pid, ci.worker);
	sipc_reconcile_leftovers_free(l);
	sipc_destroy(s);

	/* Handled once: the next instance has nothing left to judge. */
	s = open_next(dir, "echo");
	l = NULL;
	CU_ASSERT(sipc_reconcile_leftovers(s, &l, &n) == 0);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_PTR_NULL(l);
	sipc_destroy(s);
	sd_remove(dir);
}

int
main(void)
{
	/* Leftovers of killed children are reparented here, so the tests
	 * can collect their exit status. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	tl_suite("reconcile", (tl_test[]){
	    { "test_reconcile_states_after_crash", test_reconcile_states_after_crash },
	    { "test_reconcile_group_commit_crash_lists_the_same", test_reconcile_group_commit_crash_lists_the_same },
	    { "test_reconcile_leftover_worker_terminated_decoy_survives", test_reconcile_leftover_worker_terminated_decoy_survives },
	    { "test_reconcile_idempotent_across_second_crash", test_reconcile_idempotent_across_second_crash },
	    { "test_reconcile_lock_names_holder", test_reconcile_lock_names_holder },
	    { "test_reconcile_lock_not_kept_by_holders_child", test_reconcile_lock_not_kept_by_holders_child },
	    { "test_reconcile_lock_second_instance_same_process", test_reconcile_lock_second_instance_same_process },
	    { "test_reconcile_clean_shutdown_leaves_nothing", test_reconcile_clean_shutdown_leaves_nothing },
	    { "test_reconcile_leftover_verdicts", test_reconcile_leftover_verdicts },
	    { NULL, NULL } });
	return tl_run();
}
