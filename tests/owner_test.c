/*
 * owner_test.c - owner mode: the library owns SIGCHLD and reaps every
 * adopted orphan, but never a worker (those are reaped by pidfd) and
 * never the host's own child that stays in the host's process group;
 * destroy waits until nothing is left in the last workers' groups.
 *
 * The PID-1 test runs the host in a fresh PID namespace (and a mount
 * namespace with its own /proc): a forked child of this process, which
 * reports by exit code.  Skipped where namespaces cannot be made.
 *
 * Threads: the CUnit thread (and, in the forked PID 1, its only thread);
 * one test calls sipc_destroy() from a thread of its own and watches it
 * through an atomic flag.  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipc_provider.h"
#include "provider/provider.h"
#include "freezer.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000
#define CHURN_ROUNDS 5
#define SKIP_CODE 77

/* ------------------------------------------------------ PID 1 in a ns */

static pid_t
worker_pid(sipc_supervisor *s, unsigned i)
{
	struct sipc_stats st;
	pid_t p = 0;

	if (sipc_stats_get(s, &st) == 0) {
		if (i < st.nworkers && st.workers[i].state == SIPC_WS_READY)
			p = st.workers[i].pid;
		sipc_stats_release(&st);
	}
	return p;
}

struct respawn { sipc_supervisor *s; unsigned i; pid_t old; };

static bool
respawned(void *arg)
{
	struct respawn *r = arg;
	pid_t p = worker_pid(r->s, r->i);

	return p != 0 && p != r->old;
}

/* Kill each worker in turn; its group (forker's child and double-forked
 * daemon) is swept and adopted by PID 1.  Each round ends with no
 * zombie; returns the step that failed, 0 if none. */
static int
churn(sipc_supervisor *s)
{
	struct respawn r = { s, 0, 0 };

	for (int round = 0; round < CHURN_ROUNDS; round++)
		for (r.i = 0; r.i < 2; r.i++) {
			if ((r.old = worker_pid(s, r.i)) <= 0)
				return 30;
			if (kill(r.old, SIGKILL) < 0)
				return 31;
			if (!tl_wait_until(respawned, &r, WAIT_MS))
				return 32;
			if (!tl_wait_until(st_no_zombie_children, NULL, WAIT_MS))
				return 33;
		}
	return 0;
}

/* The host, as PID 1: owner mode, forker workers in process groups. */
static int
pid1_host(void)
{
	char *const argv[] = { "forker", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	char err[256];
	int rc;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    NULL) < 0)
		return SKIP_CODE;
	if (getpid() != 1)
		return 20;
	(void)setsid();           /* a container init leads its session */
	st_cfg_base(&c, "forker", argv, 2);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.owner = true;
	c.restart_intensity = 100;
	c.pool_restart_budget = 1000;
	if (sipc_create(&c, err, sizeof(err), &s) < 0) {
		fprintf(stderr, "owner pid1: %s\n", err);
		return 21;
	}
	if (sipc_wait_ready(s, 2, WAIT_MS) < 0)
		rc = 22;
	else
		rc = churn(s);
	sipc_destroy(s);
	if (rc == 0 && !tl_wait_until(st_no_zombie_children, NULL, WAIT_MS))
		rc = 40;
	if (rc == 0 && tl_count_children() != 0)
		rc = 41;          /* every adopted orphan ended and was reaped */
	return rc;
}

/* Child of the test: new PID and mount namespaces, then fork PID 1. */
static void __attribute__((noreturn))
ns_parent(void)
{
	pid_t p;
	int st;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
		_exit(SKIP_CODE);
	if ((p = fork()) < 0)
		_exit(SKIP_CODE);
	if (p == 0)
		_exit(pid1_host());
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 99);
}

/* rules: SC4 */
static void
test_owner_pid1_no_zombie_while_workers_churn(void)
{
	pid_t p;
	int st = 0;

	fflush(NULL);
	CU_ASSERT_FATAL((p = fork()) >= 0);
	if (p == 0)
		ns_parent();
	CU_ASSERT_EQUAL_FATAL(waitpid(p, &st, 0), p);
	CU_ASSERT_FATAL(WIFEXITED(st));
	if (WEXITSTATUS(st) == SKIP_CODE) {
		tl_skip("cannot create a PID and mount namespace here");
		return;
	}
	CU_ASSERT_EQUAL(WEXITSTATUS(st), 0);   /* else: the failed step */
}

/* ------------------------------------------- whose children it reaps */

/* A daemon of the host's own: double fork and setsid(); the grandchild
 * waits for a byte, then exits.  Returns its pid (the host's adoptee). */
static pid_t
host_daemon(int *go_w)
{
	int go[2], id[2];
	pid_t mid, gc = 0;
	int st;
	char b;

	CU_ASSERT_FATAL(pipe(go) == 0 && pipe(id) == 0);
	fflush(NULL);
	CU_ASSERT_FATAL((mid = fork()) >= 0);
	if (mid == 0) {
		if (fork() == 0) {
			(void)setsid();
			close(go[1]);     /* EOF on go[0] once the test closes */
			gc = getpid();
			(void)!write(id[1], &gc, sizeof(gc));
			(void)!read(go[0], &b, 1);
			_exit(0);
		}
		_exit(0);
	}
	CU_ASSERT_EQUAL(waitpid(mid, &st, 0), mid);
	CU_ASSERT_FATAL(read(id[0], &gc, sizeof(gc)) == (ssize_t)sizeof(gc));
	close(go[0]);
	close(id[0]);
	close(id[1]);
	*go_w = go[1];
	return gc;
}

/* rules: SC4 PB11 */
static void
test_owner_reaps_host_orphan_spares_host_child(void)
{
	char *const argv[] = { "crash", "exit3", "0", NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	pid_t child, daemon;
	int go, status = -1;

	st_cfg_base(&c, "crash", argv, 1);
	c.owner = true;
	c.restart_intensity = 100;
	c.pool_restart_budget = 1000;
	s = st_start(&c, 1, WAIT_MS);
	/* the host's own child, in the host's group: ends at once */
	fflush(NULL);
	CU_ASSERT_FATAL((child = fork()) >= 0);
	if (child == 0)
		_exit(7);
	CU_ASSERT_FATAL(tl_wait_until(st_pid_zombie, &child, WAIT_MS));
	daemon = host_daemon(&go);
	/* the daemon is adopted (subreaper); when it ends, the library
	 * reaps it: it never lingers as our zombie */
	close(go);
	CU_ASSERT(tl_wait_until(st_pid_gone, &daemon, WAIT_MS));
	/* crashes and restarts meanwhile: SIGCHLD after SIGCHLD */
	for (int i = 0; i < 3; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		sipc_result_release(&r);
	}
	/* the host's child was seen by the same walks, and left alone */
	CU_ASSERT(st_pid_zombie(&child));
	CU_ASSERT_EQUAL(waitpid(child, &status, WNOHANG), child);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	sipc_destroy(s);
	st_unblock_sigchld();   /* owner mode left it blocked here */
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

/* ----------------------------- destroy waits for a lingering member */

/*
 * A member of the last worker's group whose main thread has exited shows
 * 'Z' but cannot be reaped until its other threads have exited (under
 * TSan every fixture is such a process: the runtime's own thread exits
 * last).  Destroy used to take 'Z' for "ended", stop waiting, and leave
 * it a zombie of the host once it did end.  The test makes "its other
 * thread ends late" certain: the member sits in a frozen cgroup v1
 * freezer group, where even SIGKILL waits until it is thawed.  It is
 * thawed when destroy has returned, or 200 ms after the group's SIGKILL
 * reached it (well inside destroy's bound of grace_ms + 1 s).
 */
struct destroyer { sipc_supervisor *s; atomic_bool done; };

static void *
destroy_thread(void *arg)
{
	struct destroyer *d = arg;

	sipc_destroy(d->s);
	atomic_store(&d->done, true);
	return NULL;
}

/* Thaw once destroy returned, or 200 ms after the SIGKILL came. */
static void
thaw_when_due(const char *dir, pid_t kid, struct destroyer *d)
{
	int64_t killed_at = 0, end = tl_now_ms() + WAIT_MS;

	while (!atomic_load(&d->done) && tl_now_ms() < end) {
		if (killed_at == 0 && st_kill_pending(&kid))
			killed_at = tl_now_ms();
		if (killed_at != 0 && tl_now_ms() >= killed_at + 200)
			break;
		usleep(2000);
	}
	CU_ASSERT(killed_at != 0 || atomic_load(&d->done));
	(void)st_thaw(dir);
}

/* rules: SC4 */
static void
test_owner_destroy_waits_for_unreapable_zombie_member(void)
{
	char *const argv[] = { "zleader", NULL };
	char dir[128], buf[32];
	struct destroyer d = { NULL, false };
	struct sipc_config c;
	struct sipc_result r;
	pthread_t th;
	pid_t kid = 0;

	if (st_skip_sandboxed("process-group mechanics"))
		return;
	if (!st_freezer_make(dir, sizeof(dir), "owner-test")) {
		tl_skip("no writable cgroup v1 freezer (needs root)");
		return;
	}
	st_cfg_base(&c, "zleader", argv, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.owner = true;
	c.grace_ms = 3000;        /* destroy's bound: 4 s, far past the thaw */
	d.s = st_start(&c, 1, WAIT_MS);
	st_call_cmd(d.s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_FATAL(r.outcome == SIPC_OUTCOME_OK &&
	    r.reply_len < sizeof(buf));
	memcpy(buf, r.reply, r.reply_len);
	buf[r.reply_len] = '\0';
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sscanf(buf, "kid=%d", &kid) == 1);
	CU_ASSERT_FATAL(tl_wait_until(st_pid_zombie, &kid, WAIT_MS));
	CU_ASSERT_FATAL(st_freeze(dir, kid, WAIT_MS));
	CU_ASSERT_FATAL(pthread_create(&th, NULL, destroy_thread, &d) == 0);
	thaw_when_due(dir, kid, &d);
	pthread_join(th, NULL);
	/* it ended after the thaw, and destroy had reaped it */
	CU_ASSERT(tl_wait_until(st_pid_gone, &kid, WAIT_MS));
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
	if (!st_pid_gone(&kid))
		(void)waitpid(kid, NULL, WNOHANG | __WALL);
	st_freezer_drop(dir);
	st_unblock_sigchld();   /* owner mode left it blocked here */
}

/* ------------------------------------------ a provider's own child */

/*
 * A registered provider whose displayed pid is not its child: the local
 * adapter's ops, with display_pid hidden (a host's provider may show
 * the worker's pid in a namespace, or none).  The child it launched is
 * still named in chan.child_pid.
 */
static int
hiding_launch(void *state, const struct sipc_provider_launch *l,
              struct sipc_provider_chan *ret_chan, void **ret_handle,
              int *ret_errno)
{
	int rc = sipc__provider_local.launch(state, l, ret_chan, ret_handle,
	    ret_errno);

	if (rc == 0)
		ret_chan->display_pid = 0;
	return rc;
}

static struct sipc_provider_ops hiding_ops;

static bool
hiding_register(void)
{
	int rc;

	if (hiding_ops.name == NULL) {
		hiding_ops = sipc__provider_local;
		hiding_ops.name = "owner-hiding";
		hiding_ops.launch = hiding_launch;
		hiding_ops.launch_start = NULL;
		hiding_ops.launch_finish = NULL;
	}
	rc = sipc_provider_register(&hiding_ops);
	return rc == 0 || rc == -EEXIST;
}

/* At least *arg restarts, and every worker ready again. */
static bool
restarted_ready(const struct sipc_stats *st, void *arg)
{
	unsigned ready = 0;

	for (unsigned i = 0; i < st->nworkers; i++)
		ready += st->workers[i].state == SIPC_WS_READY;
	return st->restarts >= *(unsigned *)arg && ready == st->nworkers;
}

/* Each worker's end in the log was its real one, none "lost". */
static void
check_ends_real(const char *end)
{
	CU_ASSERT(!st_log_has("lost child"));
	CU_ASSERT(st_log_has(end));
	if (st_log_has("lost child") || !st_log_has(end)) {
		fprintf(stderr, "owner: an end was lost or not \"%s\"\n", end);
		st_log_print();
	}
}

/*
 * Owner mode reaps adopted orphans, never the child a provider launched
 * for a live handle: its status is the provider's to read.  With a
 * registered provider that shows no pid, a crash reports its real exit
 * code, and every end at destroy its real status; none is "lost".
 */
/* rules: PV8 SC4 PB11 */
static void
test_owner_registered_provider_child_not_reaped(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	CU_ASSERT_FATAL(hiding_register());
	st_cfg_base(&c, "echo", argv, 2);
	c.provider = "owner-hiding";
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.owner = true;
	s = st_start(&c, 2, WAIT_MS);
	for (unsigned i = 1; i <= 2; i++) {
		st_call_cmd(s, "crash exit 3", WAIT_MS, 0, &r);
		CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_CODE);
		CU_ASSERT_EQUAL(r.exit.code, 3);
		sipc_result_release(&r);
		/* restarted: destroy then ends live workers */
		CU_ASSERT(st_stats_wait(s, restarted_ready, &i, WAIT_MS));
	}
	sipc_destroy(s);
	st_unblock_sigchld();   /* owner mode left it blocked here */
	check_ends_real("terminated by supervisor (shutdown)");
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

/*
 * The same with the sandbox provider, whose child is the outer bwrap
 * while it shows sipc-init's pid.  Workers that hold a request and
 * ignore TERM are killed at destroy: sipc-init is killed with them and
 * reports nothing, so only bwrap's own status, read by the provider,
 * says how they ended.
 */
/* rules: PV8 SC4 */
static void
test_owner_sandbox_child_not_reaped(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char *const argv[] = { "stubborn", NULL };
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	struct sipc_config c;
	sipc_supervisor *s;
	char err[256];
	int rc;

	st_cfg_base(&c, "stubborn", argv, 2);
	c.provider = "sandbox";
	c.owner = true;
	st_log_reset();
	if ((rc = sipc_create(&c, err, sizeof(err), &s)) < 0) {
		st_unblock_sigchld();
		if (rc == SIPC_E_EXEC) {
			tl_skip(err);
			return;
		}
		CU_FAIL_FATAL(err);
	}
	CU_ASSERT_FATAL(sipc_wait_ready(s, 2, WAIT_MS) == 0);
	st_outbox_reset(&box);
	for (int i = 0; i < 2; i++)
		st_submit_cmd(s, NULL, 0, &o[i]);
	sipc_destroy(s);
	st_unblock_sigchld();
	CU_ASSERT_EQUAL(st_outbox_total(&box), 2);
	st_outbox_release(&box);
	check_ends_real("terminated by supervisor (shutdown); killed by "
	    "signal 9");
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

static const tl_test owner_tests[] = {
	{ "test_owner_reaps_host_orphan_spares_host_child",
	  test_owner_reaps_host_orphan_spares_host_child },
	{ "test_owner_destroy_waits_for_unreapable_zombie_member",
	  test_owner_destroy_waits_for_unreapable_zombie_member },
	{ "test_owner_pid1_no_zombie_while_workers_churn",
	  test_owner_pid1_no_zombie_while_workers_churn },
	{ "test_owner_registered_provider_child_not_reaped",
	  test_owner_registered_provider_child_not_reaped },
	{ "test_owner_sandbox_child_not_reaped",
	  test_owner_sandbox_child_not_reaped },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("owner", owner_tests);
	return tl_run();
}
