/*
 * cgend_test.c - a worker's end waits for its cgroup to empty without
 * holding up any other slot (CONTRACT CG2, T4).
 *
 * A worker generation is reported ended only once its cgroup holds no
 * process.  That wait used to sit on the reaper thread (up to 2 s), so
 * one slow-to-die tree delayed the end and restart of every other
 * worker.  The slow tree here is certain: a member of the worker's
 * cgroup sits in a frozen cgroup v1 freezer group, where even SIGKILL
 * waits until it is thawed.
 *
 * Local provider, process-group mode: the leader can end while the
 * member lives on.  In a PID namespace the init's exit waits for the
 * frozen member instead: the namespace's teardown hangs, and no wait for
 * it on the reaper thread may be unbounded (second test).  Skipped
 * without a cgroup v2 for the workers (first test), a PID namespace
 * (second) or a writable v1 freezer (both).
 */
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc.h"
#include "freezer.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000
/* The zleader's lingering child, and which slot's worker forked it. */
static bool
find_kid(sipc_supervisor *s, pid_t *ret_kid, unsigned *ret_slot)
{
	struct sipc_result r;
	char buf[32];
	pid_t ppid;

	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	if (r.outcome != SIPC_OUTCOME_OK || r.reply_len >= sizeof(buf)) {
		sipc_result_release(&r);
		return false;
	}
	memcpy(buf, r.reply, r.reply_len);
	buf[r.reply_len] = '\0';
	sipc_result_release(&r);
	if (sscanf(buf, "kid=%d", ret_kid) != 1 ||
	    st_proc_stat(*ret_kid, NULL, &ppid, NULL) < 0)
		return false;
	for (*ret_slot = 0; *ret_slot < 2; (*ret_slot)++)
		if (st_worker_stats(s, *ret_slot).pid == ppid)
			return true;
	return false;
}

/*
 * Slot a's worker ends while a member of its cgroup cannot die yet;
 * slot b's worker then crashes.  b must be back and serving well within
 * the 2 s a's cgroup may take, and a's end must not be reported while
 * its member lives: it is, once thawed.
 */
/* rules: CG2 */
static void
test_cgend_slow_tree_does_not_stall_other_slots(void)
{
	char *const argv[] = { "zleader", NULL };
	struct sipc_worker_stats wa, wb, now_a;
	struct st_gen_want want;
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char dir[128];
	unsigned a = 0, b;
	int64_t t0, took;
	pid_t kid = 0;
	bool back, ok;

	if (st_skip_sandboxed("reads the worker's host pid"))
		return;
	if (!st_freezer_make(dir, sizeof(dir), "cgend-test")) {
		tl_skip("no writable cgroup v1 freezer (needs root)");
		return;
	}
	st_cfg_base(&c, "zleader", argv, 2);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = st_start(&c, 2, WAIT_MS);
	if (!st_worker_stats(s, 0).cgroup) {
		tl_skip("workers get no cgroup v2 here");
		goto out;
	}
	CU_ASSERT_FATAL(find_kid(s, &kid, &a));
	b = 1 - a;
	wa = st_worker_stats(s, a);
	wb = st_worker_stats(s, b);
	/* from here on no fatal assertion: the member is thawed at out */
	ok = st_freeze(dir, kid, WAIT_MS) && kill(wa.pid, SIGKILL) == 0 &&
	    /* a's end observed: its tree killed, the member cannot die */
	    tl_wait_until(st_kill_pending, &kid, WAIT_MS);
	CU_ASSERT(ok);
	if (!ok)
		goto out;
	t0 = tl_now_ms();
	CU_ASSERT(kill(wb.pid, SIGKILL) == 0);
	want = (struct st_gen_want){ b, wb.generation + 1 };
	back = st_stats_wait(s, st_pred_gen_ready, &want, WAIT_MS);
	took = tl_now_ms() - t0;
	printf("(slot %u back in %lld ms) ", b, (long long)took);
	CU_ASSERT(back);
	/* a's generation is not reported ended while its member lives: a
	 * reaper that waited on a's cgroup would have settled a (when its
	 * wait ran out) before it ever saw b's end */
	now_a = st_worker_stats(s, a);
	CU_ASSERT_EQUAL(now_a.generation, wa.generation);
	CU_ASSERT(memcmp(&now_a.last_exit, &wa.last_exit,
	    sizeof(wa.last_exit)) == 0);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);

	/* thawed, the member dies; a's end is reported and a comes back */
	CU_ASSERT(st_thaw(dir));
	CU_ASSERT(tl_wait_until(st_pid_gone, &kid, WAIT_MS));
	want = (struct st_gen_want){ a, wa.generation + 1 };
	CU_ASSERT(st_stats_wait(s, st_pred_gen_ready, &want, WAIT_MS));
	now_a = st_worker_stats(s, a);
	/* Killed either way: by the test's SIGKILL, or, when the
	 * supervisor's own stop of a reached its grace before the thaw
	 * (a slow build on a loaded machine), by the supervisor's. */
	if (now_a.last_exit.kind == SIPC_EXIT_TERMINATED)
		printf("(a ended by the supervisor, reason %d) ",
		    (int)now_a.last_exit.reason);
	else
		CU_ASSERT_EQUAL(now_a.last_exit.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(now_a.last_exit.signo, SIGKILL);
out:
	(void)st_thaw(dir);
	sipc_destroy(s);
	st_freezer_drop(dir);
}

/* The first child of `pid` (of its main thread), 0 if none. */
static pid_t
first_child(pid_t pid)
{
	char path[64];
	FILE *f;
	int kid = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	if (fscanf(f, "%d", &kid) != 1)
		kid = 0;
	fclose(f);
	return (pid_t)kid;
}

/* The zleader's lingering child as the host sees it (the reply names
 * it in the namespace), and its slot: init -> worker -> kid. */
static bool
find_ns_kid(sipc_supervisor *s, pid_t *ret_kid, unsigned *ret_slot)
{
	struct sipc_result r;
	pid_t worker;

	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	*ret_slot = r.worker_id;
	sipc_result_release(&r);
	if (*ret_slot > 1 ||
	    (worker = first_child(st_worker_stats(s, *ret_slot).pid)) <= 0)
		return false;
	*ret_kid = 0;
	/* the kid is in place before the first reply */
	return (*ret_kid = first_child(worker)) > 0;
}

static bool
bound_counted(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->bounds_expired >= 1;
}

/*
 * Slot a's worker ends in its PID namespace while a member cannot die:
 * its sipc-init reports the end and exits, and that exit waits for the
 * member.  Slot b's worker then dies.  The reaper's wait for a's init is
 * bounded, logged and counted: b is back long before a's member is
 * thawed, and a ends once it is.
 */
/* rules: B1 */
static void
test_cgend_pidns_teardown_hang_bounded(void)
{
	char *const argv[] = { "zleader", NULL };
	struct sipc_worker_stats wa, wb, now_a;
	struct st_gen_want want;
	struct sipc_config c;
	sipc_supervisor *s;
	char dir[128];
	unsigned a = 0, b;
	int64_t t0, took;
	pid_t kid = 0;
	bool back, ok;

	if (st_skip_sandboxed("reads the worker's host pid"))
		return;
	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
		tl_skip("no PID namespaces here (needs root)");
		return;
	}
	if (!st_freezer_make(dir, sizeof(dir), "cgend-ns-test")) {
		tl_skip("no writable cgroup v1 freezer (needs root)");
		return;
	}
	st_cfg_base(&c, "zleader", argv, 2);
	c.containment = SIPC_CONTAIN_PID_NAMESPACE;
	c.cgroup = SIPC_CGROUP_OFF;   /* the namespace alone holds the tree */
	s = st_start(&c, 2, WAIT_MS);
	CU_ASSERT_FATAL(find_ns_kid(s, &kid, &a));
	b = 1 - a;
	wa = st_worker_stats(s, a);
	wb = st_worker_stats(s, b);
	/* from here on no fatal assertion: the member is thawed at out */
	ok = st_freeze(dir, kid, WAIT_MS) &&
	    kill(first_child(wa.pid), SIGKILL) == 0 &&
	    /* a's init reported and exits: the kernel killed the member,
	     * which cannot die while frozen */
	    tl_wait_until(st_kill_pending, &kid, WAIT_MS);
	CU_ASSERT(ok);
	if (!ok)
		goto out;
	t0 = tl_now_ms();
	CU_ASSERT(kill(wb.pid, SIGKILL) == 0);
	want = (struct st_gen_want){ b, wb.generation + 1 };
	back = st_stats_wait(s, st_pred_gen_ready, &want, WAIT_MS);
	took = tl_now_ms() - t0;
	printf("(slot %u back in %lld ms) ", b, (long long)took);
	CU_ASSERT(back);
	CU_ASSERT(st_stats_wait(s, bound_counted, NULL, WAIT_MS));
	CU_ASSERT(st_log_has("gave up waiting: a worker's namespace"));
	now_a = st_worker_stats(s, a);
	CU_ASSERT_EQUAL(now_a.generation, wa.generation);
	/* thawed, the member dies, the init's exit completes: a's end */
	CU_ASSERT(st_thaw(dir));
	CU_ASSERT(tl_wait_until(st_pid_gone, &kid, WAIT_MS));
	want = (struct st_gen_want){ a, wa.generation + 1 };
	CU_ASSERT(st_stats_wait(s, st_pred_gen_ready, &want, WAIT_MS));
	now_a = st_worker_stats(s, a);
	/* Killed either way: by the test's SIGKILL, or, when the
	 * supervisor's own stop of a reached its grace before the thaw
	 * (a slow build on a loaded machine), by the supervisor's. */
	if (now_a.last_exit.kind == SIPC_EXIT_TERMINATED)
		printf("(a ended by the supervisor, reason %d) ",
		    (int)now_a.last_exit.reason);
	else
		CU_ASSERT_EQUAL(now_a.last_exit.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(now_a.last_exit.signo, SIGKILL);
out:
	(void)st_thaw(dir);
	sipc_destroy(s);
	st_freezer_drop(dir);
}

static const tl_test cgend_tests[] = {
	{ "test_cgend_slow_tree_does_not_stall_other_slots",
	  test_cgend_slow_tree_does_not_stall_other_slots },
	{ "test_cgend_pidns_teardown_hang_bounded",
	  test_cgend_pidns_teardown_hang_bounded },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("cgend", cgend_tests);
	return tl_run();
}
