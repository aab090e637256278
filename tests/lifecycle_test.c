/*
 * lifecycle_test.c - worker exit classification, settle rules, queued
 * deadlines, the host's own children, and shutdown hygiene, through the
 * public API against real fixture workers.
 *
 * Threads: the CUnit thread drives every test; completion and log
 * callbacks run on library threads and touch only the mutex-guarded
 * captures (sipctest.c and below).  A few tests start submitter threads of
 * their own.  Waits are on events with generous deadlines; nothing
 * sleeps a fixed time to make an assertion true.
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
#include "sipctest.h"
#include "rmtree.h"
#include "testlib.h"

#define WAIT_MS 10000           /* generous deadline for any event */

extern char **environ;

/* ------------------------------------------------------------ helpers */

struct slot_count { unsigned slot; unsigned n; };

static bool
pred_inflight(const struct sipc_stats *st, void *arg)
{
	struct slot_count *c = arg;

	return st->workers[c->slot].inflight == c->n;
}

static bool
pred_frames_in(const struct sipc_stats *st, void *arg)
{
	struct slot_count *c = arg;

	return st->workers[c->slot].frames_in >= c->n;
}

static bool
pred_restarted(const struct sipc_stats *st, void *arg)
{
	return st->workers[0].restarts >= 1 && st->restarts >= 1 &&
	    st->workers[0].generation >= 2 &&
	    st->workers[0].state == SIPC_WS_READY;
}

static bool
pred_restarts_at_least(const struct sipc_stats *st, void *arg)
{
	return st->restarts >= *(uint64_t *)arg;
}

static int
count_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	int n = 0, ch;

	if (f == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((ch = fgetc(f)) != EOF)
		if (ch == '\n')
			n++;
	fclose(f);
	return n;
}

static void
show(const char *what, const struct sipc_result *r)
{
	char buf[200];

	if (getenv("LIFE_DEBUG") == NULL)
		return;
	sipc_exit_format(&r->exit, buf, sizeof(buf));
	fprintf(stderr, "%s: outcome %s err %d mhr %d attempts %u w%u "
	    "exit kind %d: %s\n", what, sipc_outcome_name(r->outcome),
	    r->error, r->may_have_run, r->attempts, r->worker_id, r->exit.kind,
	    buf);
}

/* ------------------------------------------------------- classification */

/* rules: E1 */
static void
test_lifecycle_exit_clean(void)
{
	char *const argv[] = { "echo", NULL };
	struct st_exit_want ew = { 0, SIPC_EXIT_CLEAN };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", argv, 1);
	s = st_start(&c, 1, WAIT_MS);
	st_call_cmd(s, "crash exit 0", 0, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_WORKER_DIED);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 1);
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_CLEAN);
	CU_ASSERT_EQUAL(r.exit.code, 0);
	CU_ASSERT(r.pid > 0);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ew, WAIT_MS));
	CU_ASSERT(tl_wait_until(st_log_has_cb, "worker ended: exited cleanly",
	    WAIT_MS));
	sipc_destroy(s);
}

/* lastwords MODE: one stderr line, then death; the result carries the
 * classification and the tail of the diagnostics. */
static void
crash_with_words(const char *mode, enum sipc_exit_kind kind, int code,
                 int signo, struct sipc_result *ret)
{
	char *const argv[] = { "lastwords", (char *)mode, NULL };
	struct st_exit_want ew = { 0, kind };
	struct sipc_worker_stats w;
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "lastwords", argv, 1);
	s = st_start(&c, 1, WAIT_MS);
	st_call_cmd(s, NULL, 0, 0, ret);
	show("crash_with_words", ret);
	CU_ASSERT_EQUAL(ret->outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(ret->error, SIPC_E_WORKER_DIED);
	CU_ASSERT(ret->may_have_run);
	CU_ASSERT_EQUAL(ret->exit.kind, kind);
	CU_ASSERT_EQUAL(ret->exit.code, code);
	CU_ASSERT_EQUAL(ret->exit.signo, signo);
	CU_ASSERT_EQUAL(ret->exit.reason, SIPC_TERM_NONE);
	CU_ASSERT_PTR_NOT_NULL(ret->diag_tail);
	if (ret->diag_tail != NULL)
		CU_ASSERT_PTR_NOT_NULL(strstr(ret->diag_tail, "lastwords: pid"));
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ew, WAIT_MS));
	w = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(w.last_exit.code, code);
	CU_ASSERT_EQUAL(w.last_exit.signo, signo);
	/* and the slot comes back, as a new generation */
	CU_ASSERT(st_stats_wait(s, pred_restarted, NULL, WAIT_MS));
	sipc_destroy(s);
}

/* rules: E1 G4 */
static void
test_lifecycle_exit_code_n(void)
{
	struct sipc_result r;

	crash_with_words("exit3", SIPC_EXIT_CODE, 3, 0, &r);
	CU_ASSERT(st_log_has("worker ended: exited with status 3"));
	sipc_result_release(&r);
}

/* rules: E1 */
static void
test_lifecycle_exit_signal_abort_no_core(void)
{
	struct sipc_result r;

	/* RLIMIT_CORE is 0 for this binary (main): no core. */
	crash_with_words("abort", SIPC_EXIT_SIGNAL, 0, SIGABRT, &r);
	CU_ASSERT(!r.exit.core_dumped);
	sipc_result_release(&r);
}

/* rules: E1 G4 */
static void
test_lifecycle_exit_signal_segv(void)
{
	struct sipc_result r;

	crash_with_words("segv", SIPC_EXIT_SIGNAL, 0, SIGSEGV, &r);
	CU_ASSERT(!r.exit.core_dumped);
	CU_ASSERT(st_log_has("killed by signal 11"));
	sipc_result_release(&r);
}

/* Under the sandbox each call of the default refusal list ends the
 * worker SIPC_EXIT_POLICY, killed (SIGKILL) with the call named (the
 * filter stops the call; it does not return an error the worker could
 * ignore).  Without the filter the call returns and the fixture exits
 * with status 4, as it does after the namespace calls, which fail with
 * EPERM under the filter. */
/* rules: PB25 */
static void
test_lifecycle_sandbox_filter_kills(void)
{
	static const char *const modes[] = { "keyctl", "personality",
	    "io_uring", "perf", "ptrace", "mount", "bpf", "userns",
	    "clone_ns" };
	static const char *const calls[] = { "keyctl", "personality",
	    "io_uring_setup", "perf_event_open", "ptrace", "mount", "bpf",
	    NULL, NULL };
	struct sipc_result r;
	size_t i;

	if (!st_sandboxed()) {
		tl_skip("sandbox-only: the local adapter has no system-call filter");
		return;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char *const argv[] = { "crash", (char *)modes[i], "0", NULL };
		struct sipc_config c;
		sipc_supervisor *s;

		st_cfg_base(&c, "crash", argv, 1);
		s = st_start(&c, 1, WAIT_MS);
		st_call_cmd(s, NULL, 0, 0, &r);
		show(modes[i], &r);
		sipc_destroy(s);
		CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
		if (calls[i] == NULL) {     /* EPERM: returned, exit 4 */
			TL_EQ(r.exit.kind, SIPC_EXIT_CODE);
			TL_EQ(r.exit.code, 4);
			sipc_result_release(&r);
			continue;
		}
		TL_EQ(r.exit.kind, SIPC_EXIT_POLICY);
		TL_EQ(r.exit.signo, SIGKILL);
		TL_STREQ(r.exit.syscall_name, calls[i]);
		CU_ASSERT(r.exit.syscall >= 0);
		CU_ASSERT_EQUAL(r.exit.code, 0);
		sipc_result_release(&r);
	}
}

/* The worker program itself runs filtered (Seccomp 2: a filter mode)
 * with no_new_privs and no capability in any set, as read from its own
 * /proc/self/status. */
/* rules: PB25 */
static void
test_lifecycle_sandbox_worker_filtered(void)
{
	struct sipc_request rq = { .payload = "status", .len = 6,
	    .timeout_ms = 20000 };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char *out = NULL;

	if (!st_sandboxed()) {
		tl_skip("sandbox-only: the local adapter has no system-call filter");
		return;
	}
	st_cfg_base(&c, "procinfo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
	CU_ASSERT_EQUAL_FATAL(r.outcome, SIPC_OUTCOME_OK);
	out = strndup((const char *)r.reply, r.reply_len);
	printf("\n    %s\n", out != NULL ? out : "?");
	CU_ASSERT(out != NULL && strstr(out, "Seccomp=2;") != NULL);
	CU_ASSERT(out != NULL && strstr(out, "NoNewPrivs=1;") != NULL);
	CU_ASSERT(out != NULL && strstr(out, "CapPrm=0000000000000000;"));
	CU_ASSERT(out != NULL && strstr(out, "CapEff=0000000000000000;"));
	CU_ASSERT(out != NULL && strstr(out, "CapBnd=0000000000000000;"));
	free(out);
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* With a core limit and a scratch working directory the same abort is
 * reported as core dumped (under the sandbox: not, its core limit is
 * 0/0).  Sanitizer runtimes disable core dumps in
 * the worker, so there only the signal is checked. */
/* rules: E1 */
static void
test_lifecycle_exit_signal_abort_core(void)
{
	char dir[] = "/tmp/sipc-life-core-XXXXXX", cwd[PATH_MAX], *const argv[] =
	    { "crash", "abort", "0", NULL };
	struct rlimit old, rl;
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	bool sanitized = false;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	sanitized = true;
#endif
	CU_ASSERT_FATAL(getcwd(cwd, sizeof(cwd)) != NULL);
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	CU_ASSERT_FATAL(getrlimit(RLIMIT_CORE, &old) == 0);
	rl = old;
	rl.rlim_cur = rl.rlim_max < (64u << 20) ? rl.rlim_max : (64u << 20);
	st_cfg_base(&c, "crash", argv, 1);
	CU_ASSERT_FATAL(chdir(dir) == 0);
	CU_ASSERT_FATAL(setrlimit(RLIMIT_CORE, &rl) == 0);
	s = st_start(&c, 1, WAIT_MS);
	st_call_cmd(s, NULL, 0, 0, &r);
	show("core", &r);
	sipc_destroy(s);
	(void)setrlimit(RLIMIT_CORE, &old);
	CU_ASSERT_FATAL(chdir(cwd) == 0);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(r.exit.signo, SIGABRT);
	/* The sandbox sets the worker's core limit to 0/0 whatever the
	 * host's is: a hostile document's memory never reaches a file. */
	if (st_sandboxed()) {
		CU_ASSERT(!r.exit.core_dumped);
	} else if (!sanitized && rl.rlim_cur > 0) {
		CU_ASSERT(r.exit.core_dumped);
	}
	sipc_result_release(&r);
	CU_ASSERT(rmtree(dir) == 0);
}

/* rules: D4 */
static void
test_lifecycle_exec_failure_not_executable(void)
{
	char path[] = "/tmp/sipc-life-noexec-XXXXXX", err[512];
	int fd, kids = tl_count_children(), rc;
	struct sipc_config c;
	sipc_supervisor *s = NULL;

	CU_ASSERT_FATAL((fd = mkstemp(path)) >= 0);
	CU_ASSERT(write(fd, "not a program\n", 14) == 14);
	close(fd);
	CU_ASSERT_FATAL(chmod(path, 0644) == 0);
	st_cfg_base(&c, "echo", NULL, 2);
	c.path = path;
	/* even root needs an x bit to execute a regular file */
	rc = sipc_create(&c, err, sizeof(err), &s);
	CU_ASSERT_EQUAL(rc, SIPC_E_EXEC);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, strerror(EACCES)));
	CU_ASSERT_EQUAL(tl_count_children(), kids);
	unlink(path);
	if (s != NULL)
		sipc_destroy(s);
}

/* rules: D4 */
static void
test_lifecycle_exec_failure_missing(void)
{
	const char *path = "/nonexistent-sipc-dir/no-such-worker";
	int kids = tl_count_children(), rc;
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[512];

	st_cfg_base(&c, "echo", NULL, 2);
	c.path = path;
	rc = sipc_create(&c, err, sizeof(err), &s);
	CU_ASSERT_EQUAL(rc, SIPC_E_EXEC);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, strerror(ENOENT)));
	CU_ASSERT_EQUAL(tl_count_children(), kids);
	if (s != NULL)
		sipc_destroy(s);
}

/* A pool that never gets a ready worker: a request is never written. */
static void
assert_never_used(sipc_supervisor *s)
{
	struct sipc_worker_stats w;
	struct sipc_result r;

	CU_ASSERT(sipc_wait_ready(s, 1, 300) != 0);
	st_call_cmd(s, NULL, 300, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_TIMEOUT ||
	    r.outcome == SIPC_OUTCOME_REJECTED);
	CU_ASSERT(!r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 0);
	sipc_result_release(&r);
	w = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(w.frames_out, 0);
	CU_ASSERT(w.state != SIPC_WS_READY);
}

/* rules: E1 H2 */
static void
test_lifecycle_handshake_dieatstart(void)
{
	char *const argv[] = { "dieatstart", NULL };
	struct st_exit_want ew = { 0, SIPC_EXIT_HANDSHAKE };
	struct sipc_worker_stats w;
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "dieatstart", argv, 1);
	s = st_start(&c, 0, WAIT_MS);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ew, WAIT_MS));
	w = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(w.last_exit.code, 7);
	assert_never_used(s);
	sipc_destroy(s);
}

/* rules: E1 H2 H3 H5 */
static void
test_lifecycle_handshake_nohello(void)
{
	char *const argv[] = { "badframes", "nohello", NULL };
	struct st_exit_want ew = { 0, SIPC_EXIT_HANDSHAKE };
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "badframes", argv, 1);
	c.handshake_ms = 150;
	s = st_start(&c, 0, WAIT_MS);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ew, WAIT_MS));
	assert_never_used(s);
	sipc_destroy(s);
}

/* rules: E1 V1 */
static void
test_lifecycle_handshake_badversion(void)
{
	char *const argv[] = { "badframes", "badversion", NULL };
	struct st_exit_want ew = { 0, SIPC_EXIT_HANDSHAKE };
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "badframes", argv, 1);
	s = st_start(&c, 0, WAIT_MS);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ew, WAIT_MS));
	CU_ASSERT(tl_wait_until(st_log_has_cb, "version 99", WAIT_MS));
	assert_never_used(s);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ settling */

struct sum_want { unsigned inflight, queued_min; };

static bool
pred_sums(const struct sipc_stats *st, void *arg)
{
	struct sum_want *w = arg;
	unsigned inf = 0, q = 0;

	for (unsigned i = 0; i < st->nworkers; i++) {
		inf += st->workers[i].inflight;
		q += st->workers[i].queued;
	}
	return inf == w->inflight && q >= w->queued_min;
}

/* A request queued behind a wedged worker (never written) moves to the
 * other worker when the wedged one dies: the caller just sees OK. */
/* rules: C3 R1 */
static void
test_lifecycle_settle_unwritten_moves(void)
{
	char *const argv[] = { "echo", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o[4] = { { &box, 0 }, { &box, 1 }, { &box, 2 },
	    { &box, 3 } };
	struct sum_want one = { 1, 0 }, two = { 2, 2 };
	struct slot_count accepted = { 0, 2 };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned hung = 0, other, i;
	pid_t victim;

	if (st_skip_sandboxed("reads the worker's host pid or group"))
		return;
	st_outbox_reset(&box);
	st_cfg_base(&c, "echo", argv, 2);
	c.env_set = st_env_accept_frames;     /* pred_frames_in: ACCEPT */
	/* replies carry the worker's own pid, compared with the result's */
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.max_inflight = 1;
	s = st_start(&c, 2, WAIT_MS);
	st_submit_cmd(s, "hang", 0, &o[0]);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_sums, &one, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	hung = st.workers[0].inflight == 1 ? 0 : 1;
	sipc_stats_release(&st);
	/* its ACCEPT arrived (HELLO + ACCEPT): killed before it, the worker
	 * would not have read the request, which would then be provably
	 * never started and move on (to hang on the other worker) */
	accepted.slot = hung;
	CU_ASSERT_FATAL(st_stats_wait(s, pred_frames_in, &accepted, WAIT_MS));
	other = 1 - hung;
	(void)other;                 /* where "sleep 500" goes */
	st_submit_cmd(s, "sleep 500", 0, &o[1]);     /* least loaded: other */
	/* two more: loads are equal, then one ahead, so at least one of
	 * them waits in the hung worker's ring, never written */
	st_submit_cmd(s, "pid", 0, &o[2]);
	st_submit_cmd(s, "pid", 0, &o[3]);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_sums, &two, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.workers[hung].inflight == 1);
	CU_ASSERT_FATAL(st.workers[hung].queued >= 1);
	victim = st.workers[hung].pid;
	sipc_stats_release(&st);
	CU_ASSERT(kill(victim, SIGKILL) == 0);    /* the wedged worker dies */
	CU_ASSERT_FATAL(st_outbox_wait(&box, 4, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(box.calls[i], 1);
	/* the hung request had been written: it may have run */
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(box.res[0].may_have_run);
	CU_ASSERT_EQUAL(box.res[0].exit.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(box.res[0].exit.signo, SIGKILL);
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_OK);
	/* the queued ones ran on the other worker, once each */
	for (i = 2; i < 4; i++) {
		char pidbuf[32];

		CU_ASSERT_EQUAL(box.res[i].outcome, SIPC_OUTCOME_OK);
		/* on the other worker, or on the hung one's replacement if
		 * that was free first (src/pool/steal.c): never on the victim */
		CU_ASSERT_EQUAL(box.res[i].attempts, 1);
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)box.res[i].pid);
		CU_ASSERT(box.res[i].pid != victim);
		CU_ASSERT(box.res[i].reply_len == strlen(pidbuf) &&
		    memcmp(box.res[i].reply, pidbuf, strlen(pidbuf)) == 0);
	}
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.requeued >= 1);
	CU_ASSERT_EQUAL(st.retried, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
	st_outbox_release(&box);
}

static char exec_log[64];
static char exec_env[96];

static void
cfg_exec_log(struct sipc_config *c, char *const *argv, unsigned workers)
{
	static const char *env_set[3];
	int fd;

	snprintf(exec_log, sizeof(exec_log), "/tmp/sipc-life-exec-XXXXXX");
	CU_ASSERT_FATAL((fd = mkstemp(exec_log)) >= 0);
	close(fd);
	snprintf(exec_env, sizeof(exec_env), "SIPC_EXEC_LOG=%s", exec_log);
	env_set[0] = exec_env;
	env_set[1] = "SIPC_FX_ACCEPT=frames";     /* pred_one_accepted() */
	env_set[2] = NULL;
	st_cfg_base(c, "echo", argv, workers);
	c->env_set = env_set;
}

/* Written and accepted, then the worker died: UNKNOWN, not retried. */
/* rules: A3 R2 */
static void
test_lifecycle_settle_accepted_not_retried(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;

	if (st_skip_sandboxed("shares files with the worker"))
		return;
	cfg_exec_log(&c, argv, 2);
	s = st_start(&c, 2, WAIT_MS);
	st_call_cmd(s, "crash exit 3", 0, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_WORKER_DIED);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 1);
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_CODE);
	CU_ASSERT_EQUAL(r.exit.code, 3);
	sipc_result_release(&r);
	/* the other worker still serves, and nothing ran it again */
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.retried, 0);
	CU_ASSERT_EQUAL(st.unknown, 1);
	sipc_stats_release(&st);
	sipc_destroy(s);
	CU_ASSERT_EQUAL(count_lines(exec_log), 2);  /* crash once + data */
	unlink(exec_log);
}

static bool
exec_log_started(void *arg)
{
	return count_lines(exec_log) >= 1;
}

/* Some worker holds one request, ACCEPTed (HELLO + ACCEPT seen). */
static bool
pred_one_accepted(const struct sipc_stats *st, void *arg)
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
 * Idempotent: retried on the other worker, succeeds there.  The request
 * sleeps in its handler (ACCEPTed: it may have run) when its worker is
 * killed; the other worker is READY, so the retry goes there (a slot
 * whose restart is pending comes after a ready one), and runs it again.
 */
/* rules: R3 */
static void
test_lifecycle_settle_idempotent_retried(void)
{
	char *const argv[] = { "echo", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o = { &box, 0 };
	struct sipc_request rq = { .flags = SIPC_REQ_IDEMPOTENT };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned victim = 0;
	char p[32];

	if (st_skip_sandboxed("shares files with the worker"))
		return;
	st_outbox_reset(&box);
	cfg_exec_log(&c, argv, 2);
	s = st_start(&c, 2, WAIT_MS);
	memcpy(p, "\0CMD", 4);
	rq.len = 4 + (size_t)snprintf(p + 4, sizeof(p) - 4, "sleep 1500");
	rq.payload = p;
	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o, NULL) == 0);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_one_accepted, &victim, WAIT_MS));
	/* its handler started (the exec log line comes first) */
	CU_ASSERT_FATAL(tl_wait_until(exec_log_started, NULL, WAIT_MS));
	CU_ASSERT_FATAL(kill(st_worker_stats(s, victim).pid, SIGKILL) == 0);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	show("idempotent", &box.res[0]);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(box.res[0].reply_len == 5 &&
	    memcmp(box.res[0].reply, "slept", 5) == 0);
	CU_ASSERT(box.res[0].may_have_run);
	CU_ASSERT_EQUAL(box.res[0].attempts, 2);
	CU_ASSERT_EQUAL(box.res[0].worker_id, 1 - victim);
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.retried, 1);
	CU_ASSERT_EQUAL(st.unknown, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
	CU_ASSERT_EQUAL(count_lines(exec_log), 2);   /* it ran twice */
	unlink(exec_log);
	st_outbox_release(&box);
	st_outbox_reset(&box);
}

/* Idempotent, but it kills every worker: poison after two deaths. */
/* rules: R4 */
static void
test_lifecycle_settle_idempotent_poison(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	if (st_skip_sandboxed("shares files with the worker"))
		return;
	cfg_exec_log(&c, argv, 2);
	c.idempotent_retries = 5;   /* poison stops it, not the budget */
	s = st_start(&c, 2, WAIT_MS);
	st_call_cmd(s, "crash exit 3", 0, SIPC_REQ_IDEMPOTENT, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_POISON);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 2);
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_CODE);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(count_lines(exec_log), 2);
	/* the pool recovers and serves */
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	sipc_destroy(s);
	CU_ASSERT_EQUAL(count_lines(exec_log), 3);
	unlink(exec_log);
}

/* A request that times out while still queued never ran. */
/* rules: X1 */
static void
test_lifecycle_deadline_while_queued(void)
{
	char *const argv[] = { "echo", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o0 = { &box, 0 };
	struct slot_count c0 = { 0, 1 };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int64_t t0;

	st_outbox_reset(&box);
	st_cfg_base(&c, "echo", argv, 1);
	c.max_inflight = 1;
	s = st_start(&c, 1, WAIT_MS);
	st_submit_cmd(s, "hang", 0, &o0);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_inflight, &c0, WAIT_MS));
	t0 = tl_now_ms();
	st_call_cmd(s, NULL, 200, 0, &r);
	CU_ASSERT(tl_now_ms() - t0 >= 190);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT(!r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 0);
	sipc_result_release(&r);
	sipc_destroy(s);
	CU_ASSERT_EQUAL(box.calls[0], 1);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[0].error, SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL(box.res[0].exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(box.res[0].exit.reason, SIPC_TERM_SHUTDOWN);
	st_outbox_release(&box);
}

/* ------------------------------------------------------------ host child */

/* The host's own child, spawned beside a supervisor that keeps reaping
 * and restarting crashing workers, stays waitable by the host (in owner
 * mode too: it is the host's child, not an orphan). */
static void
host_child(bool owner)
{
	char *const argv[] = { "crash", "exit3", "0", NULL };
	char *const sargv[] = { "sleep", "0.2", NULL };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	uint64_t restarts0;	/* restarts seen, then restarts wanted */
	pid_t child, w;
	int status = -1, i;

	st_cfg_base(&c, "crash", argv, 2);
	c.owner = owner;
	c.restart_intensity = 100;
	c.pool_restart_budget = 1000;
	s = st_start(&c, 2, WAIT_MS);
	CU_ASSERT_FATAL(posix_spawnp(&child, "sleep", NULL, NULL, sargv,
	    environ) == 0);
	/* work and crashes while the child lives and after it exits */
	for (i = 0; i < 4; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
		sipc_result_release(&r);
	}
	CU_ASSERT_FATAL(tl_wait_until(st_pid_zombie, &child, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	restarts0 = st.restarts;
	sipc_stats_release(&st);
	for (i = 0; i < 3; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
		sipc_result_release(&r);
	}
	restarts0 += 3;
	CU_ASSERT(st_stats_wait(s, pred_restarts_at_least, &restarts0, WAIT_MS));
	/* still our zombie: nobody reaped it behind our back */
	CU_ASSERT(st_pid_zombie(&child));
	w = waitpid(child, &status, WNOHANG);
	CU_ASSERT_EQUAL(w, child);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sipc_destroy(s);
	if (owner)
		st_unblock_sigchld();   /* owner mode left it blocked here */
}

/* rules: SC1 */
static void
test_lifecycle_host_child_waitable(void)
{
	host_child(false);
}

/* rules: SC1 */
static void
test_lifecycle_host_child_waitable_owner(void)
{
	host_child(true);
}

/* ------------------------------------------------------------ shutdown */

struct pool_kids { sipc_supervisor *s; int want; };

static bool
all_ready(const struct sipc_stats *st, void *arg)
{
	for (unsigned i = 0; i < st->nworkers; i++)
		if (st->workers[i].state != SIPC_WS_READY)
			return false;
	return true;
}

static bool
pool_kids_cond(void *arg)
{
	struct pool_kids *pk = arg;

	return st_stats_wait(pk->s, all_ready, NULL, 0) &&
	    tl_count_children() == pk->want;
}

static void
test_lifecycle_destroy_back_to_baseline(void)
{
	char *const argv[] = { "echo", NULL };
	int thr = tl_settled_threads(WAIT_MS), fds = tl_count_fds(),
	    kids = tl_count_children();
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", argv, 3);
	s = st_start(&c, 3, WAIT_MS);
	for (int i = 0; i < 30; i++) {
		st_call_cmd(s, i % 10 == 9 ? "crash exit 3" : NULL, WAIT_MS, 0, &r);
		CU_ASSERT(r.outcome == (i % 10 == 9 ? SIPC_OUTCOME_UNKNOWN :
		    SIPC_OUTCOME_OK));
		sipc_result_release(&r);
	}
	/* three live workers, each one child of this process */
	struct pool_kids pk = { s, kids + 3 };
	CU_ASSERT(tl_wait_until(pool_kids_cond, &pk, WAIT_MS));
	sipc_destroy(s);
	CU_ASSERT(tl_wait_baseline(fds, thr, kids, WAIT_MS));
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

/* destroy with work in flight and queued: each gets exactly one outcome */
/* rules: S1 */
static void
test_lifecycle_destroy_inflight_one_outcome(void)
{
	char *const argv[] = { "slow", "50", NULL };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	static struct st_outslot o[40];
	int thr = tl_settled_threads(WAIT_MS), fds = tl_count_fds(),
	    kids = tl_count_children();
	unsigned i, kinds[5] = { 0 };
	struct sipc_config c;
	sipc_supervisor *s;

	st_outbox_reset(&box);
	st_cfg_base(&c, "slow", argv, 2);
	c.max_inflight = 2;
	c.drain_ms = 400;    /* 40 x 50 ms on 2 workers would take 1 s */
	s = st_start(&c, 2, WAIT_MS);
	for (i = 0; i < 40; i++) {
		struct sipc_request rq = { .payload = "x", .len = 1 };

		o[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o[i],
		    NULL) == 0);
	}
	sipc_destroy(s);
	CU_ASSERT_EQUAL(box.total, 40);
	for (i = 0; i < 40; i++) {
		CU_ASSERT_EQUAL(box.calls[i], 1);
		if (box.calls[i] == 1 && box.res[i].outcome <= 4)
			kinds[box.res[i].outcome]++;
		if (box.res[i].outcome == SIPC_OUTCOME_REJECTED) {
			CU_ASSERT_EQUAL(box.res[i].error, SIPC_E_SHUTDOWN);
			CU_ASSERT(!box.res[i].may_have_run);
		}
	}
	/* some finished during the drain, the queued rest were refused */
	CU_ASSERT(kinds[SIPC_OUTCOME_OK] >= 1);
	CU_ASSERT(kinds[SIPC_OUTCOME_REJECTED] >= 1);
	st_outbox_release(&box);
	CU_ASSERT(tl_wait_baseline(fds, thr, kids, WAIT_MS));
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

/* destroy racing with blocked submitters: each submit returns
 * SIPC_E_SHUTDOWN or gets exactly one outcome. */
#define RACERS 4
struct racer {
	sipc_supervisor *s;
	atomic_uint entered, accepted, refused;
	atomic_uint callbacks, shutdown_seen;
};

static void
racer_done(void *arg, struct sipc_result *res)
{
	struct racer *rc = arg;

	if (res->outcome == SIPC_OUTCOME_REJECTED &&
	    res->error == SIPC_E_SHUTDOWN)
		atomic_fetch_add(&rc->shutdown_seen, 1);
	atomic_fetch_add(&rc->callbacks, 1);
	sipc_result_release(res);
}

static void *
racer_main(void *arg)
{
	struct racer *rc = arg;
	struct sipc_request rq = { .payload = "race", .len = 4 };
	int r;

	for (;;) {
		unsigned seen = atomic_load(&rc->shutdown_seen);

		atomic_fetch_add(&rc->entered, 1);
		r = sipc_submit(rc->s, &rq, racer_done, rc, NULL);
		if (r == SIPC_E_SHUTDOWN) {
			atomic_fetch_add(&rc->refused, 1);
			break;
		}
		if (r != 0)
			break;
		atomic_fetch_add(&rc->accepted, 1);
		/* A REJECTED/SHUTDOWN outcome is delivered in this thread
		 * before submit returns: destroy has begun, stop calling. */
		if (atomic_load(&rc->shutdown_seen) != seen)
			break;
	}
	return NULL;
}

static bool
racers_inside(void *arg)
{
	struct racer *rc = arg;
	struct sipc_stats st;
	bool r;

	if (sipc_stats_get(rc->s, &st) != 0)
		return false;
	/* every submit that started has passed the library's door and
	 * is blocked on a full ring */
	r = st.submitted == atomic_load(&rc->entered) &&
	    atomic_load(&rc->entered) > atomic_load(&rc->accepted) +
	    RACERS - 1;
	/* ... and the pool is really full: both writers have taken their
	 * two requests (on a loaded machine they may lag the submitters) */
	for (unsigned i = 0; r && i < st.nworkers; i++)
		r = st.workers[i].inflight == 2 && st.workers[i].queued == 3;
	sipc_stats_release(&st);
	return r;
}

/* rules: S2 */
static void
test_lifecycle_destroy_races_submits(void)
{
	char *const argv[] = { "hang", NULL };
	static struct racer rc;
	pthread_t t[RACERS];
	struct sipc_config c;
	unsigned i;

	memset(&rc, 0, sizeof(rc));
	st_cfg_base(&c, "hang", argv, 2);
	c.max_inflight = 2;
	c.ring_frames = 3;
	c.drain_ms = 50;
	rc.s = st_start(&c, 2, WAIT_MS);
	for (i = 0; i < RACERS; i++)
		CU_ASSERT_FATAL(pthread_create(&t[i], NULL, racer_main,
		    &rc) == 0);
	CU_ASSERT(tl_wait_until(racers_inside, &rc, WAIT_MS));
	sipc_destroy(rc.s);
	for (i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	/* each accepted submit got exactly one callback */
	CU_ASSERT_EQUAL(atomic_load(&rc.callbacks), atomic_load(&rc.accepted));
	CU_ASSERT(atomic_load(&rc.accepted) >= 2 * 2 + 2 * 3);
	CU_ASSERT(atomic_load(&rc.shutdown_seen) + atomic_load(&rc.refused) >=
	    RACERS);
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

static const tl_test lifecycle_tests[] = {
	{ "test_lifecycle_exit_clean", test_lifecycle_exit_clean },
	{ "test_lifecycle_exit_code_n", test_lifecycle_exit_code_n },
	{ "test_lifecycle_exit_signal_abort_no_core",
	  test_lifecycle_exit_signal_abort_no_core },
	{ "test_lifecycle_exit_signal_segv", test_lifecycle_exit_signal_segv },
	{ "test_lifecycle_sandbox_filter_kills",
	    test_lifecycle_sandbox_filter_kills },
	{ "test_lifecycle_sandbox_worker_filtered",
	    test_lifecycle_sandbox_worker_filtered },
	{ "test_lifecycle_exit_signal_abort_core",
	  test_lifecycle_exit_signal_abort_core },
	{ "test_lifecycle_exec_failure_not_executable",
	  test_lifecycle_exec_failure_not_executable },
	{ "test_lifecycle_exec_failure_missing",
	  test_lifecycle_exec_failure_missing },
	{ "test_lifecycle_handshake_dieatstart",
	  test_lifecycle_handshake_dieatstart },
	{ "test_lifecycle_handshake_nohello", test_lifecycle_handshake_nohello },
	{ "test_lifecycle_handshake_badversion",
	  test_lifecycle_handshake_badversion },
	{ "test_lifecycle_settle_unwritten_moves",
	  test_lifecycle_settle_unwritten_moves },
	{ "test_lifecycle_settle_accepted_not_retried",
	  test_lifecycle_settle_accepted_not_retried },
	{ "test_lifecycle_settle_idempotent_retried",
	  test_lifecycle_settle_idempotent_retried },
	{ "test_lifecycle_settle_idempotent_poison",
	  test_lifecycle_settle_idempotent_poison },
	{ "test_lifecycle_deadline_while_queued",
	  test_lifecycle_deadline_while_queued },
	{ "test_lifecycle_host_child_waitable",
	  test_lifecycle_host_child_waitable },
	{ "test_lifecycle_destroy_back_to_baseline",
	  test_lifecycle_destroy_back_to_baseline },
	{ "test_lifecycle_destroy_inflight_one_outcome",
	  test_lifecycle_destroy_inflight_one_outcome },
	{ "test_lifecycle_destroy_races_submits",
	  test_lifecycle_destroy_races_submits },
	/* last: owner mode changes process-wide state until cleared */
	{ "test_lifecycle_host_child_waitable_owner",
	  test_lifecycle_host_child_waitable_owner },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("lifecycle", lifecycle_tests);
	return tl_run();
}
