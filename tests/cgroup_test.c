/*
 * cgroup_test.c - cgroup v2 per worker (cgroup.c, its use in local.c):
 * each worker generation in a cgroup of its own, cgroup.kill ending a
 * setsid() escapee that process-group mode alone lets go, no cgroup left
 * after a worker's end or after destroy, limits written or refused
 * (never dropped in silence), the OOM exit class, and the keys.
 *
 * Where no cgroup v2 can be made here (not root, no delegated subtree),
 * the tests that need one skip with the library's own reason.
 *
 * Threads: the CUnit thread only; waits are on events with generous
 * deadlines.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "os/os.h"
#include "provider/provider.h"
#include "sipc.h"
#include "sipctest.h"
#include "statedir.h"
#include "sysfault.h"
#include "testlib.h"

#define WAIT_MS 10000

static bool
path_gone(void *arg)
{
	struct stat sb;

	return stat((const char *)arg, &sb) < 0 && errno == ENOENT;
}

/* Start a supervisor; NULL (test skipped) when it got no cgroup. */
static sipc_supervisor *
start_with_cgroup(struct sipc_config *c, char *ret_path, size_t len)
{
	struct sipc_stats st;
	sipc_supervisor *s = st_start(c, 1, WAIT_MS);
	char why[200];

	st = st_pool_stats(s);
	snprintf(ret_path, len, "%s", st.cgroup_path);
	snprintf(why, sizeof(why), "no cgroup v2 here: %s", st.cgroup_why);
	sipc_stats_release(&st);
	if (ret_path[0] == '\0') {
		sipc_destroy(s);
		tl_skip(why);
		return NULL;
	}
	return s;
}

/* Its cgroup's directory: the supervisor's, then "w<slot>.g<gen>". */
static void
worker_dir(const char *sup, const struct sipc_worker_stats *w, char *ret,
           size_t len)
{
	snprintf(ret, len, "%s/w%u.g%u", sup, w->worker_id, w->generation);
}

/*
 * The worker (or, in a namespace mode, its sipc-init) runs in the cgroup
 * made for its generation, and the cgroup goes with the worker: after a
 * crash its replacement has a new one and the old one is removed; after
 * destroy the supervisor's own cgroup is gone too.
 */
static void
own_cgroup_case(enum sipc_containment mode)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_worker_stats w;
	struct sipc_config c;
	sipc_supervisor *s;
	char sup[256], dir[300], dir1[300], cg[512];

	st_cfg_base(&c, "echo", argv, 1);
	c.containment = mode;
	if ((s = start_with_cgroup(&c, sup, sizeof(sup))) == NULL)
		return;
	w = st_worker_stats(s, 0);
	CU_ASSERT(w.cgroup);
	CU_ASSERT_EQUAL(w.cgroup_error, 0);
	CU_ASSERT_EQUAL(w.limits, 0);
	CU_ASSERT_EQUAL(w.containment, mode);
	worker_dir(sup, &w, dir1, sizeof(dir1));
	tl_proc_cgroup(w.pid, cg, sizeof(cg));
	/* the kernel's path is relative to the mount: compare the tail */
	snprintf(dir, sizeof(dir), "%s/w0.g%u", strrchr(sup, '/'),
	    w.generation);
	CU_ASSERT(strlen(cg) >= strlen(dir) &&
	    strcmp(cg + strlen(cg) - strlen(dir), dir) == 0);
	CU_ASSERT(!path_gone(dir1));
	/* a new generation, a new cgroup; the old one is gone */
	CU_ASSERT(kill(w.pid, SIGKILL) == 0);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	CU_ASSERT(tl_wait_until(path_gone, dir1, WAIT_MS));
	w = st_worker_stats(s, 0);
	CU_ASSERT(w.cgroup);
	worker_dir(sup, &w, dir, sizeof(dir));
	CU_ASSERT(strcmp(dir, dir1) != 0);
	CU_ASSERT(!path_gone(dir));
	sipc_destroy(s);
	CU_ASSERT(path_gone(dir));
	CU_ASSERT(path_gone(sup));
}

/* rules: CG1 CG2 */
static void
test_cgroup_worker_in_own_cgroup_process_group(void)
{
	if (st_skip_sandboxed("process-group mechanics"))
		return;
	own_cgroup_case(SIPC_CONTAIN_PROCESS_GROUP);
}

/* rules: CG1 */
static void
test_cgroup_worker_in_own_cgroup_pid_namespace(void)
{
	struct sipc_config c;

	st_cfg_init(&c, "echo", NULL, 1);
	if (st_can_unshare(CLONE_NEWPID) < 0) {
		tl_skip("no PID namespace here");
		return;
	}
	own_cgroup_case(SIPC_CONTAIN_PID_NAMESPACE);
}

/* ------------------------------------------------------- escapees */

struct tree { pid_t leader, group, daemon_pid, escapee; };

static void
tree_read(sipc_supervisor *s, struct tree *t)
{
	struct sipc_result r;
	char buf[200];
	int le, gr, da, es;

	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_FATAL(r.outcome == SIPC_OUTCOME_OK &&
	    r.reply_len < sizeof(buf));
	memcpy(buf, r.reply, r.reply_len);
	buf[r.reply_len] = '\0';
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sscanf(buf, "leader=%d group=%d daemon=%d escapee=%d",
	    &le, &gr, &da, &es) == 4);
	*t = (struct tree){ le, gr, da, es };
	CU_ASSERT_FATAL(es > 0 && tl_pid_alive(es));
	CU_ASSERT_EQUAL(getsid(es), es);      /* left the group for good */
}

/* End a process the library did not (the control case), reaping it if
 * it became this process's child. */
static void
end_escapee(pid_t p)
{
	int st;

	(void)kill(p, SIGKILL);
	if (waitpid(p, &st, 0) < 0)
		CU_ASSERT_EQUAL(errno, ECHILD);
}

/*
 * Process-group mode, where nothing but the cgroup can reach a
 * descendant that called setsid(): it dies at destroy, and at the end of
 * a worker that died on its own.  The control run with cgroup = off
 * shows the same escapee surviving both (what the fallback documents),
 * so the fixture really escapes and the cgroup is what catches it.
 */
static void
escapee_case(bool with_cgroup)
{
	char *const argv[] = { "forker", "escape", NULL };
	struct st_term_want tw = { SIPC_EXIT_SIGNAL, SIPC_TERM_NONE };
	struct sipc_config c;
	struct st_decoys d;
	struct tree t0, t;
	sipc_supervisor *s;
	char sup[256], cg[512];

	st_decoys_start(&d);
	st_cfg_base(&c, "forker", argv, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.cgroup = with_cgroup ? SIPC_CGROUP_AUTO : SIPC_CGROUP_OFF;
	if (with_cgroup) {
		if ((s = start_with_cgroup(&c, sup, sizeof(sup))) == NULL) {
			st_decoys_stop(&d);
			return;
		}
	} else {
		s = st_start(&c, 1, WAIT_MS);
	}
	tree_read(s, &t0);
	tl_proc_cgroup(t0.escapee, cg, sizeof(cg));
	CU_ASSERT_EQUAL(with_cgroup, strstr(cg, "/w0.g1") != NULL);
	/* the worker dies on its own: the end of its cgroup ends the tree */
	CU_ASSERT(kill(t0.leader, SIGKILL) == 0);
	CU_ASSERT(st_stats_wait(s, st_pred_term, &tw, WAIT_MS));
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	tree_read(s, &t);
	sipc_destroy(s);
	if (with_cgroup) {
		CU_ASSERT(tl_wait_until(st_pid_dead, &t0.escapee, WAIT_MS));
		CU_ASSERT(tl_wait_until(st_pid_dead, &t.escapee, WAIT_MS));
		CU_ASSERT(tl_wait_until(st_pid_dead, &t.daemon_pid, WAIT_MS));
		CU_ASSERT(path_gone(sup));
	} else {
		CU_ASSERT(tl_pid_alive(t0.escapee));
		CU_ASSERT(tl_pid_alive(t.escapee));
	}
	st_decoys_check(&d);
	end_escapee(t0.escapee);
	end_escapee(t.escapee);
	st_decoys_stop(&d);
}

/* rules: CG2 T4 PB8 */
static void
test_cgroup_kill_ends_setsid_escapee(void)
{
	if (st_skip_sandboxed("reads the worker's host pid or group"))
		return;
	escapee_case(true);
}

/* rules: T4 */
static void
test_cgroup_off_escapee_survives_process_group(void)
{
	if (st_skip_sandboxed("process-group mechanics"))
		return;
	escapee_case(false);
}

/* ------------------------------------------------------------ limits */

/* Is `ctrl` usable for cgroups made under this process's own cgroup? */
static bool
controller_here(const char *ctrl)
{
	char own[512], dir[1024], line[1024];
	FILE *f;
	bool yes = false;

	tl_proc_cgroup(getpid(), own, sizeof(own));
	/* the usual mounts: pure v2 and hybrid */
	snprintf(dir, sizeof(dir), "/sys/fs/cgroup/unified%s/cgroup.controllers",
	    strcmp(own, "/") == 0 ? "" : own);
	if ((f = fopen(dir, "re")) == NULL) {
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s/cgroup.controllers",
		    strcmp(own, "/") == 0 ? "" : own);
		f = fopen(dir, "re");
	}
	if (f == NULL)
		return false;
	if (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " "))
			yes = yes || strcmp(tok, ctrl) == 0;
	}
	fclose(f);
	return yes;
}

/* Read one small file into buf ("" on failure). */
static void
slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (f == NULL)
		return;
	if (fgets(buf, (int)len, f) == NULL)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/*
 * A configured limit is written into the worker's cgroup where its
 * controller is available to the supervisor, and reported in the stats;
 * where it is not, sipc_create() refuses with SIPC_E_CGROUP naming the
 * key and the controller.  Never a worker running without the limit.
 */
static void
limit_case(const char *key, const char *ctrl, const char *file,
           const char *want)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_worker_stats w;
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[512], sup[256], path[600], got[128];
	int rc;

	st_cfg_base(&c, "echo", argv, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	if (strcmp(key, "pids_max") == 0)
		c.pids_max = 64;
	else if (strcmp(key, "memory_max") == 0)
		c.memory_max = 64 << 20;
	else
		c.cpu_max_percent = 50;
	rc = sipc_create(&c, err, sizeof(err), &s);
	if (rc != 0) {
		/* refused: it must name the key */
		CU_ASSERT_EQUAL(rc, SIPC_E_CGROUP);
		CU_ASSERT(strstr(err, key) != NULL);
		if (controller_here(ctrl)) {
			/* the controller exists, but no cgroup can be made,
			 * or this cgroup may not delegate it (not root) */
			tl_skip(err);
			return;
		}
		CU_ASSERT(strstr(err, ctrl) != NULL);
		printf("  (refused as it must be here: %s)\n", err);
		return;
	}
	/* accepted: only with the controller, and the file says so */
	CU_ASSERT(controller_here(ctrl));
	CU_ASSERT_FATAL(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	{
		struct sipc_stats st = st_pool_stats(s);

		snprintf(sup, sizeof(sup), "%s", st.cgroup_path);
		sipc_stats_release(&st);
	}
	w = st_worker_stats(s, 0);
	CU_ASSERT(w.cgroup);
	CU_ASSERT(w.limits != 0);
	snprintf(path, sizeof(path), "%s/w%u.g%u/%s", sup, w.worker_id,
	    w.generation, file);
	slurp(path, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, want);
	sipc_destroy(s);
	CU_ASSERT(path_gone(sup));
}

/* rules: CG3 */
static void
test_cgroup_pids_max_applied_or_refused(void)
{
	limit_case("pids_max", "pids", "pids.max", "64");
}

/* rules: CG3 PB9 */
static void
test_cgroup_memory_max_applied_or_refused(void)
{
	limit_case("memory_max", "memory", "memory.max", "67108864");
}

/* rules: CG3 */
static void
test_cgroup_cpu_max_applied_or_refused(void)
{
	limit_case("cpu_max_percent", "cpu", "cpu.max", "50000 100000");
}

/* cgroup = off: no cgroup made, the reason says so, the worker stays
 * in the host's own cgroup; a limit with it is a configuration error. */
/* rules: CG1 CG3 */
static void
test_cgroup_off(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_worker_stats w;
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s = NULL;
	char err[256], mine[512], its[512];

	st_cfg_base(&c, "echo", argv, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.cgroup = SIPC_CGROUP_OFF;
	s = st_start(&c, 1, WAIT_MS);
	st = st_pool_stats(s);
	CU_ASSERT_STRING_EQUAL(st.cgroup_path, "");
	CU_ASSERT_STRING_EQUAL(st.cgroup_why, "off");
	sipc_stats_release(&st);
	w = st_worker_stats(s, 0);
	CU_ASSERT_FALSE(w.cgroup);
	tl_proc_cgroup(getpid(), mine, sizeof(mine));
	tl_proc_cgroup(w.pid, its, sizeof(its));
	CU_ASSERT_STRING_EQUAL(mine, its);
	CU_ASSERT(st_log_has("cgroup: not provided (off)"));
	sipc_destroy(s);
	c.pids_max = 10;
	CU_ASSERT_EQUAL(sipc_create(&c, err, sizeof(err), &s), SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "cgroup: off") != NULL);
}

/* ------------------------------------------------------------ crashes */

/* The cgroup at arg holds no process any more (or is gone). */
static bool
unpopulated(void *arg)
{
	char path[400], buf[64];
	FILE *f;
	bool yes = true;

	snprintf(path, sizeof(path), "%s/cgroup.events", (const char *)arg);
	if ((f = fopen(path, "re")) == NULL)
		return true;
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (strcmp(buf, "populated 1\n") == 0)
			yes = false;
	fclose(f);
	return yes;
}

/*
 * A supervisor process that dies without sipc_destroy() leaves its
 * cgroups; its workers die with it (parent-death signal) and leave them
 * empty.  The next supervisor made under the same cgroup removes them
 * (only empty ones of owners that are gone: a live owner's stay).
 */
/* rules: CG2 */
static void
test_cgroup_crashed_instance_swept(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;
	char sup[256], w[300], live[300], *slash, *ns;
	sipc_supervisor *s = NULL;
	int p[2], st;
	ssize_t n;
	pid_t pid;

	st_cfg_base(&c, "echo", argv, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	CU_ASSERT_FATAL(pipe(p) == 0);
	if ((pid = fork()) == 0) {
		struct sipc_stats sst;

		close(p[0]);
		if (sipc_create(&c, NULL, 0, &s) != 0 ||
		    sipc_wait_ready(s, 1, WAIT_MS) != 0 ||
		    sipc_stats_get(s, &sst) != 0)
			_exit(1);
		n = write(p[1], sst.cgroup_path, strlen(sst.cgroup_path));
		_exit(n > 0 ? 0 : 2);         /* the crash: no destroy */
	}
	CU_ASSERT_FATAL(pid > 0);
	close(p[1]);
	n = read(p[0], sup, sizeof(sup) - 1);
	close(p[0]);
	CU_ASSERT(waitpid(pid, &st, 0) == pid);
	if (n <= 0) {
		tl_skip("no cgroup v2 here (the crashing instance got none)");
		return;
	}
	sup[n] = '\0';
	snprintf(w, sizeof(w), "%s/w0.g1", sup);
	CU_ASSERT_FATAL(!path_gone(w));
	CU_ASSERT(tl_wait_until(unpopulated, w, WAIT_MS));
	/* the same name shape (PID namespace included), but its owner
	 * (this process) lives */
	CU_ASSERT_FATAL((slash = strrchr(sup, '/')) != NULL);
	CU_ASSERT_FATAL((ns = strrchr(slash, '.')) != NULL);
	snprintf(live, sizeof(live), "%.*s/sipc.%d.999%s", (int)(slash - sup),
	    sup, (int)getpid(), ns);
	CU_ASSERT_FATAL(mkdir(live, 0755) == 0);
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT(path_gone(w));
	CU_ASSERT(path_gone(sup));
	CU_ASSERT(!path_gone(live));
	sipc_destroy(s);
	CU_ASSERT(rmdir(live) == 0);
}

/*
 * The crashing instance of the test below (a child of the test, forked
 * while the test has no thread): a supervisor whose forker worker
 * leaves a tree (its group, a daemon, a setsid() escapee), then the
 * crash: _exit() without destroy.  It writes the tree's pids and its
 * cgroup's path ("" without one) to fd first.
 */
static void __attribute__((noreturn))
crash_with_tree(const struct sipc_config *c, int fd)
{
	struct sipc_request rq = { .payload = "data", .len = 4,
	    .timeout_ms = WAIT_MS };
	struct sipc_result r;
	struct sipc_stats sst;
	sipc_supervisor *s = NULL;
	char buf[600];
	int n;

	if (sipc_create(c, NULL, 0, &s) != 0 ||
	    sipc_wait_ready(s, 1, WAIT_MS) != 0 ||
	    sipc_stats_get(s, &sst) != 0 || sipc_call(s, &rq, &r) != 0 ||
	    r.outcome != SIPC_OUTCOME_OK || r.reply_len > 200)
		_exit(1);
	n = snprintf(buf, sizeof(buf), "%.*s\n%s", (int)r.reply_len,
	    (const char *)r.reply, sst.cgroup_path);
	_exit(write(fd, buf, (size_t)n) == n ? 0 : 2);
}

/* A process of this test that only waits to be killed. */
static pid_t
sleeper(void)
{
	pid_t p;

	fflush(NULL);
	if ((p = fork()) == 0) {
		for (;;)
			pause();
	}
	return p;
}

/*
 * Crash an instance (on state_dir, or without one) whose worker leaves
 * a tree, and check what it left: the tree alive in the dead owner's
 * worker cgroup.  1 with *t and sup (its cgroup); 0 when it got no
 * cgroup (skipped, the tree ended); -1 when it did not run (failed).
 */
static int
crash_leaving_tree(const char *state_dir, struct tree *t, char *sup)
{
	char *const argv[] = { "forker", "escape", NULL };
	char buf[600], cg[512], want[320];
	struct sipc_config c;
	ssize_t n, off = 0;
	int p[2], st, got;
	pid_t pid;

	st_cfg_base(&c, "forker", argv, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.state_dir = state_dir;
	CU_ASSERT_FATAL(pipe(p) == 0);
	fflush(NULL);
	CU_ASSERT_FATAL((pid = fork()) >= 0);
	if (pid == 0) {
		close(p[0]);
		crash_with_tree(&c, p[1]);
	}
	close(p[1]);
	while (off < (ssize_t)sizeof(buf) - 1 &&
	    ((n = read(p[0], buf + off, sizeof(buf) - 1 - (size_t)off)) > 0 ||
	    (n < 0 && errno == EINTR)))
		off += n > 0 ? n : 0;
	buf[off] = '\0';
	close(p[0]);
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	sup[0] = '\0';
	got = sscanf(buf, "leader=%d group=%d daemon=%d escapee=%d\n%299s",
	    &t->leader, &t->group, &t->daemon_pid, &t->escapee, sup);
	if (got < 4) {
		CU_FAIL("the crashing instance reported no tree");
		return -1;
	}
	if (got == 4) {
		tl_skip("no cgroup v2 here (the crashing instance got none)");
		return 0;
	}
	CU_ASSERT(tl_pid_alive(t->escapee));
	CU_ASSERT(tl_pid_alive(t->daemon_pid));
	tl_proc_cgroup(t->escapee, cg, sizeof(cg));
	snprintf(want, sizeof(want), "%s/w0.g1", strrchr(sup, '/'));
	CU_ASSERT(strstr(cg, want) != NULL);
	CU_ASSERT(!unpopulated(sup));
	return 1;
}

/* The tree ended by the next instance, and its cgroup gone, as the log
 * says. */
static void
tree_ended(struct tree *t, char *sup)
{
	CU_ASSERT(tl_wait_until(st_pid_dead, &t->escapee, WAIT_MS));
	CU_ASSERT(tl_wait_until(st_pid_dead, &t->daemon_pid, WAIT_MS));
	CU_ASSERT(tl_wait_until(st_pid_dead, &t->group, WAIT_MS));
	CU_ASSERT(path_gone(sup));
	CU_ASSERT(st_log_has(sup));
	CU_ASSERT(st_log_has("process(es): killed, removed"));
}

/* Nothing left behind, should the instance under test have failed. */
static void
tree_cleanup(struct tree *t, char *sup)
{
	char w[320];

	end_escapee(t->escapee);
	end_escapee(t->daemon_pid);
	end_escapee(t->group);
	if (sup[0] != '\0' && !path_gone(sup)) {
		snprintf(w, sizeof(w), "%s/w0.g1", sup);
		(void)tl_wait_until(unpopulated, sup, WAIT_MS);
		(void)rmdir(w);
		(void)rmdir(sup);
	}
}

/*
 * A crashed supervisor's workers die with it, but not a descendant that
 * left the worker's session (setsid(), a double fork: no parent-death
 * signal), nor a sandbox's inner bwrap cut short by the crash before it
 * ran sipc-init: they stay in the dead owner's cgroup.  The next
 * supervisor made under the same cgroup kills them through that
 * cgroup's cgroup.kill and removes it, saying so in the log; a live
 * owner's cgroup that holds a process (this test's own, here) is not
 * touched.
 */
/* rules: CG2 */
static void
test_cgroup_crashed_instance_escapee_killed(void)
{
	char *const eargv[] = { "echo", NULL };
	char sup[300], live[400], lw[420], procs[440], pidtxt[24];
	char *slash, *ns;
	struct tree t = { 0 };
	struct sipc_config e;
	sipc_supervisor *s;
	pid_t keep = -1;
	int st, got;
	FILE *f;

	if (st_skip_sandboxed("process-group mechanics"))
		return;
	if ((got = crash_leaving_tree(NULL, &t, sup)) <= 0)
		goto out;
	/* A live owner's cgroup with a process: this test's name shape,
	 * sequence 998, a process of the test in its worker cgroup. */
	CU_ASSERT_FATAL((slash = strrchr(sup, '/')) != NULL);
	CU_ASSERT_FATAL((ns = strrchr(slash, '.')) != NULL);
	snprintf(live, sizeof(live), "%.*s/sipc.%d.998%s", (int)(slash - sup),
	    sup, (int)getpid(), ns);
	snprintf(lw, sizeof(lw), "%s/w0.g1", live);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", lw);
	CU_ASSERT_FATAL(mkdir(live, 0755) == 0 && mkdir(lw, 0755) == 0);
	CU_ASSERT_FATAL((keep = sleeper()) > 0);
	snprintf(pidtxt, sizeof(pidtxt), "%d", (int)keep);
	CU_ASSERT_FATAL((f = fopen(procs, "we")) != NULL);
	CU_ASSERT(fputs(pidtxt, f) >= 0);
	CU_ASSERT(fclose(f) == 0);
	/* The next supervisor here ends what the dead one left. */
	st_cfg_base(&e, "echo", eargv, 1);
	e.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = st_start(&e, 1, WAIT_MS);
	tree_ended(&t, sup);
	CU_ASSERT(tl_pid_alive(keep));
	CU_ASSERT(!unpopulated(live));
	sipc_destroy(s);
out:
	if (keep > 0) {
		(void)kill(keep, SIGKILL);
		CU_ASSERT_EQUAL(waitpid(keep, &st, 0), keep);
		CU_ASSERT(tl_wait_until(unpopulated, live, WAIT_MS));
		CU_ASSERT(rmdir(lw) == 0);
		CU_ASSERT(rmdir(live) == 0);
	}
	if (got >= 0)
		tree_cleanup(&t, sup);
}

/*
 * What an instance with a state directory leaves is its journal's: the
 * next instance on that journal gives its leftovers their verdicts
 * (TERM first) and only then kills what is left in the cgroup.  Another
 * supervisor started in between under the same cgroup (another
 * service, another test) must not kill it first: the cgroup carries its
 * journal's path, and only an instance on that journal ends it.
 */
/* rules: CG2 */
static void
test_cgroup_crashed_journalled_instance_left_to_its_journal(void)
{
	char *const eargv[] = { "echo", NULL };
	char *dir = sd_make(), sup[300], mark[PATH_MAX], real[PATH_MAX];
	struct tree t = { 0 };
	struct sipc_config e;
	sipc_supervisor *s;
	ssize_t n;
	int got;

	if (st_skip_sandboxed("process-group mechanics")) {
		sd_remove(dir);
		return;
	}
	if ((got = crash_leaving_tree(dir, &t, sup)) <= 0)
		goto out;
	n = getxattr(sup, "user.sipc.journal", mark, sizeof(mark) - 1);
	if (n < 0 && errno == EOPNOTSUPP) {
		tl_skip("no user extended attributes on cgroups here");
		goto out;
	}
	CU_ASSERT(n > 0 && realpath(dir, real) != NULL);
	if (n <= 0)
		goto out;
	mark[n] = '\0';
	CU_ASSERT_STRING_EQUAL(mark, real);
	/* not the journal's: it leaves the tree alone */
	st_cfg_base(&e, "echo", eargv, 1);
	e.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = st_start(&e, 1, WAIT_MS);
	CU_ASSERT(tl_pid_alive(t.escapee));
	CU_ASSERT(!unpopulated(sup));
	sipc_destroy(s);
	/* the journal's next instance ends it */
	e.state_dir = dir;
	s = st_start(&e, 1, WAIT_MS);
	tree_ended(&t, sup);
	sipc_destroy(s);
out:
	if (got >= 0)
		tree_cleanup(&t, sup);
	sd_remove(dir);
}

/*
 * A pid in a cgroup's name means something only in the PID namespace
 * that made it.  A supervisor started in another PID namespace under the
 * same cgroup (a container that shares it, a test as PID 1) sees every
 * host pid as gone: it must leave the cgroups of live owners alone.
 * Here a name of this live process's shape (a supervisor's own, with
 * another sequence number) must survive such a supervisor's start.  The
 * supervisor that showed the shape is gone by then: the fork below
 * must come from a single-threaded process (ThreadSanitizer refuses
 * threads after a multi-threaded fork).  The foreign supervisor must
 * remove its own cgroup: nothing else ever will (only its namespace
 * judges the name), so one it left is removed here and fails the test
 * (a run where it died before its destroy left `sipc.1.<n>.<ns>` under
 * the host's cgroup for good).
 */
static int
foreign_ns_start(struct sipc_config *c, int fd)
{
	sipc_supervisor *s = NULL;
	struct sipc_stats sst;
	struct stat sb;
	char msg[300];
	pid_t p;
	int st, n;

	if (unshare(CLONE_NEWPID) < 0)
		return 90;
	if ((p = fork()) < 0)
		return 91;
	if (p == 0) {           /* PID 1 of the new namespace */
		/* its namespace, then its cgroup: what the test removes
		 * should this supervisor die before its destroy */
		if (stat("/proc/self/ns/pid", &sb) < 0)
			_exit(3);
		n = snprintf(msg, sizeof(msg), "%lu\n", (unsigned long)sb.st_ino);
		if (write(fd, msg, (size_t)n) != n)
			_exit(3);
		if (sipc_create(c, NULL, 0, &s) != 0)
			_exit(2);
		if (sipc_stats_get(s, &sst) == 0) {
			n = snprintf(msg, sizeof(msg), "%s\n", sst.cgroup_path);
			if (write(fd, msg, (size_t)n) != n)
				_exit(4);
			sipc_stats_release(&sst);
		}
		sipc_destroy(s);
		_exit(0);
	}
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

/* Remove a supervisor cgroup left by a supervisor that died before its
 * destroy, and its worker cgroups. */
static void
remove_dead_sup(const char *path)
{
	char w[700];
	struct dirent *de;
	DIR *d;

	(void)tl_wait_until(unpopulated, (void *)path, WAIT_MS);
	if ((d = opendir(path)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] == 'w') {
				snprintf(w, sizeof(w), "%s/%s", path, de->d_name);
				(void)rmdir(w);
			}
		closedir(d);
	}
	(void)rmdir(path);
}

/* Remove the empty cgroups of PID 1 of namespace `ns` under `parent`
 * (it died before it said which one it made): nobody else ever would,
 * since only that namespace may judge them.  How many there were. */
static int
remove_ns_cgroups(const char *parent, unsigned long ns)
{
	char tail[32], path[600];
	struct dirent *de;
	int found = 0;
	size_t tl;
	DIR *d;

	snprintf(tail, sizeof(tail), ".%lu", ns);
	tl = strlen(tail);
	if ((d = opendir(parent)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, "sipc.1.", 7) != 0 || n <= tl ||
		    strcmp(de->d_name + n - tl, tail) != 0)
			continue;
		found++;
		snprintf(path, sizeof(path), "%s/%s", parent, de->d_name);
		remove_dead_sup(path);
	}
	closedir(d);
	return found;
}

/* rules: CG2 */
static void
test_cgroup_foreign_pid_namespace_spares_live_owner(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;
	char sup[256], live[300], msg[600], theirs[300], *base, *seq, *rest;
	unsigned long ns = 0;
	sipc_supervisor *s;
	int st = 0, fds[2], got;
	ssize_t n, off = 0;
	pid_t p;

	st_cfg_base(&c, "echo", argv, 1);
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	if (st_can_unshare(CLONE_NEWPID) < 0) {
		tl_skip("no PID namespace here");
		return;
	}
	if ((s = start_with_cgroup(&c, sup, sizeof(sup))) == NULL)
		return;
	/* "sipc.<pid>.<seq>[...]": the same name with sequence 999 */
	CU_ASSERT_FATAL((base = strrchr(sup, '/')) != NULL);
	CU_ASSERT_FATAL((seq = strchr(base + strlen("/sipc."), '.')) != NULL);
	rest = strchr(seq + 1, '.');
	snprintf(live, sizeof(live), "%.*s.999%s", (int)(seq - sup), sup,
	    rest != NULL ? rest : "");
	sipc_destroy(s);
	CU_ASSERT_FATAL(mkdir(live, 0755) == 0);
	CU_ASSERT_FATAL(pipe(fds) == 0);
	fflush(NULL);
	CU_ASSERT_FATAL((p = fork()) >= 0);
	if (p == 0) {
		close(fds[0]);
		_exit(foreign_ns_start(&c, fds[1]));
	}
	close(fds[1]);
	while (off < (ssize_t)sizeof(msg) - 1 &&
	    ((n = read(fds[0], msg + off, sizeof(msg) - 1 - (size_t)off)) > 0 ||
	    (n < 0 && errno == EINTR)))
		off += n > 0 ? n : 0;
	msg[off] = '\0';
	close(fds[0]);
	CU_ASSERT_EQUAL_FATAL(waitpid(p, &st, 0), p);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CU_ASSERT(!path_gone(live));
	(void)rmdir(live);
	/* The foreign supervisor removed its own cgroup.  One left behind
	 * would stay for ever (only its namespace may judge it): it is
	 * removed here, and it is a failure. */
	theirs[0] = '\0';
	got = sscanf(msg, "%lu\n%299s", &ns, theirs);
	CU_ASSERT(got >= 1);
	if (got == 2) {
		CU_ASSERT(path_gone(theirs));
		if (!path_gone(theirs))
			remove_dead_sup(theirs);
	} else if (got == 1) {
		*base = '\0';
		(void)remove_ns_cgroups(sup, ns);
	}
}

/* ------------------------------------------------------------- lost */

/*
 * A process-group worker reaped behind the provider's back (a host
 * wait): its group id is no longer pinned, so the group is left alone
 * and the end is LOST, but its cgroup names no stranger: the end still
 * kills what is in it (the group kid here) and removes it.
 */
/* rules: CG2 */
static void
test_cgroup_lost_worker_cgroup_still_killed(void)
{
	char *const argv[] = { "pgkid", NULL }, *const env[] = { NULL };
	struct sipc_provider_launch l = { .path = tl_fixture("pgkid"),
	    .argv = argv, .envp = env, .worker_id = 0, .generation = 1,
	    .contain = SIPC_CONTAIN_PROCESS_GROUP };
	struct sipc_provider_info in;
	struct sipc_provider_chan ch;
	struct sipc_config cfg;
	void *st = NULL;
	struct sipc_exit e;
	char why[256], dir[400];
	siginfo_t si;
	void *h = NULL;
	pid_t kid;
	int eno = 0;

	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_TEST;
	cfg.cgroup = SIPC_CGROUP_AUTO;
	CU_ASSERT_FATAL(sipc__provider_local.create(&cfg, &st, why,
	    sizeof(why)) == 0);
	sipc__provider_local.info(st, &in);
	if (!in.cgroup) {
		tl_skip(in.text);
		sipc__provider_local.destroy(st);
		return;
	}
	memset(&ch, 0, sizeof(ch));
	CU_ASSERT_FATAL(sipc__provider_local.launch(st, &l, &ch, &h,
	    &eno) == 0);
	CU_ASSERT(ch.info.cgroup);
	kid = st_read_kid(ch.diag_fd, WAIT_MS);
	CU_ASSERT_FATAL(kid > 0);
	snprintf(dir, sizeof(dir), "%s/w0.g1", in.text);
	/* the host kills and reaps the library's child */
	CU_ASSERT(kill(ch.display_pid, SIGKILL) == 0);
	CU_ASSERT(waitid(P_PID, (id_t)ch.display_pid, &si, WEXITED | __WALL) == 0);
	CU_ASSERT(tl_pid_alive(kid));
	CU_ASSERT_EQUAL(sipc__provider_local.try_end(h, &e), 1);
	CU_ASSERT_EQUAL(e.kind, SIPC_EXIT_LOST);
	/* the sweep after the end kills what is in the cgroup */
	CU_ASSERT_EQUAL(sipc__provider_local.sweep(h), 0);
	CU_ASSERT(tl_wait_until(st_pid_dead, &kid, WAIT_MS));
	CU_ASSERT(path_gone(dir));
	sipc__provider_local.release(h);
	close(ch.proto_fd);
	close(ch.diag_fd);
	sipc__provider_local.destroy(st);
	if (tl_pid_alive(kid))
		(void)kill(kid, SIGKILL);
}

/* ---------------------------------------------------------------- OOM */

/* rules-skip: CG4: skipped where the memory controller is not available to cgroup v2 */
/* rules: CG4 */
static void
test_cgroup_oom_is_its_own_exit_kind(void)
{
	char *const argv[] = { "memhog", "1024", NULL };
	struct st_exit_want ew = { 0, SIPC_EXIT_OOM };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	if (!controller_here("memory")) {
		tl_skip("the memory controller is not available to cgroup v2 "
		    "here (a hybrid hierarchy keeps it in v1)");
		return;
	}
	st_cfg_base(&c, "memhog", argv, 1);
	c.memory_max = 32 << 20;
	s = st_start(&c, 1, WAIT_MS);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_OOM);
	CU_ASSERT_EQUAL(r.exit.signo, SIGKILL);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ew, WAIT_MS));
	sipc_destroy(s);
}

/* The OOM count comes from memory.events' oom_kill line: "oom" (a
 * prefix of it) must not be taken for it, nor a missing key for 0. */
/* rules: CG4 */
static void
test_cgroup_read_key_flat_file(void)
{
	char dir[] = "/tmp/sipc-cgtest-XXXXXX", path[64];
	uint64_t v = 99;
	FILE *f;
	int dfd;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/memory.events", dir);
	CU_ASSERT_FATAL((f = fopen(path, "w")) != NULL);
	fputs("low 0\nhigh 4\nmax 7\noom 2\noom_kill 1\n", f);
	fclose(f);
	CU_ASSERT_FATAL((dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	CU_ASSERT_EQUAL(sipc__cg_read_key(dfd, "memory.events", "oom_kill",
	    &v), 0);
	CU_ASSERT_EQUAL(v, 1);
	CU_ASSERT_EQUAL(sipc__cg_read_key(dfd, "memory.events", "oom", &v), 0);
	CU_ASSERT_EQUAL(v, 2);
	CU_ASSERT_EQUAL(sipc__cg_read_key(dfd, "memory.events", "oom_group",
	    &v), -ENOENT);
	CU_ASSERT_EQUAL(sipc__cg_read_key(dfd, "cgroup.events", "populated",
	    &v), -ENOENT);
	close(dfd);
	unlink(path);
	rmdir(dir);
	CU_ASSERT_STRING_EQUAL(sipc_exit_kind_name(SIPC_EXIT_OOM), "oom");
}

/* ---------------------------------------------------------------- keys */

/* rules: CG1 */
static void
test_cgroup_config_keys(void)
{
	char dir[] = "/tmp/sipc-cgconf-XXXXXX", path[64], err[256];
	sipc_config_store *store = NULL;
	struct sipc_config c;
	FILE *f;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/a.conf", dir);
	CU_ASSERT_FATAL((f = fopen(path, "w")) != NULL);
	fputs("cgroup = required\npids_max = 100\nmemory_max = 1048576\n"
	    "cpu_max_percent = 250\n", f);
	fclose(f);
	sipc_config_init(&c);
	CU_ASSERT_EQUAL(sipc_config_load_file(path, &c, &store, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.cgroup, SIPC_CGROUP_REQUIRED);
	CU_ASSERT_EQUAL(c.pids_max, 100);
	CU_ASSERT_EQUAL(c.memory_max, 1048576);
	CU_ASSERT_EQUAL(c.cpu_max_percent, 250);
	CU_ASSERT_FATAL((f = fopen(path, "w")) != NULL);
	fputs("cgroup = maybe\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(sipc_config_load_file(path, &c, &store, err,
	    sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "auto, off or required") != NULL);
	CU_ASSERT_EQUAL(sipc_config_load_env((char *const[]){
	    "SIPC_CGROUP=off", NULL }, &c, &store, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.cgroup, SIPC_CGROUP_OFF);
	sipc_config_store_free(store);
	unlink(path);
	rmdir(dir);
	CU_ASSERT_STRING_EQUAL(sipc_cgroup_mode_name(SIPC_CGROUP_REQUIRED),
	    "required");
}

/* ------------------------------------------------- close-on-exec, always */

/* Descriptors above 2 that the library may hold at any moment. */
#define FD_SCAN_MAX 512

struct cloexec_seen {
	unsigned looks;           /* the body's fcntl() calls judged */
	unsigned bad;             /* descriptors seen without O_CLOEXEC */
	int fd;                   /* the first of them */
	char what[200];           /* and what it named */
};

/* Is `pid` a thread of a process running this very test program (the
 * body, not a worker or sipc-init, which run programs of their own)? */
static bool
same_program(pid_t pid)
{
	char mine[PATH_MAX], its[PATH_MAX], link[64];
	ssize_t a, b;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	if ((a = readlink("/proc/self/exe", mine, sizeof(mine) - 1)) < 0 ||
	    (b = readlink(link, its, sizeof(its) - 1)) < 0)
		return false;
	return a == b && memcmp(mine, its, (size_t)a) == 0;
}

/* Every fcntl() of the body (glibc's fdopendir() calls it before it
 * marks a descriptor close-on-exec, and the library calls it as it moves
 * descriptors): each open descriptor above 2 must be close-on-exec at
 * that moment.  Descriptors are read one by one by number. */
static int
judge_cloexec(pid_t pid, const uint64_t args[6], void *arg)
{
	struct cloexec_seen *cs = arg;
	long fl;

	(void)args;
	if (!same_program(pid))
		return 0;
	cs->looks++;
	for (int fd = 3; fd < FD_SCAN_MAX; fd++) {
		if ((fl = sf_fd_flags(pid, (uint64_t)fd)) < 0 ||
		    (fl & O_CLOEXEC))
			continue;
		if (cs->bad++ == 0) {
			cs->fd = fd;
			if (sf_fd_path(pid, (uint64_t)fd, cs->what,
			    sizeof(cs->what)) < 0)
				snprintf(cs->what, sizeof(cs->what), "?");
		}
	}
	return 0;
}

/* Descriptors of this process above 2 without O_CLOEXEC. */
static unsigned
own_without_cloexec(void)
{
	unsigned bad = 0;
	long fl;

	for (int fd = 3; fd < FD_SCAN_MAX; fd++)
		if ((fl = sf_fd_flags(getpid(), (uint64_t)fd)) >= 0 &&
		    !(fl & O_CLOEXEC))
			bad++;
	return bad;
}

/* In the filtered child: a pool with cgroups serves, its descriptors
 * are scanned while the workers run, and it is destroyed (the broker
 * scans at each fcntl()).  Exit status: 0, 2 (no cgroup here),
 * 3 (no start), 10 + n (n descriptors without O_CLOEXEC while it ran). */
static int
cloexec_body(void *arg)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	char err[256];
	unsigned bad;

	(void)arg;
	/* what this test process had open is not the library's */
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return 3;
	st_cfg_base(&c, "echo", argv, 2);
	c.log = NULL;
	if (sipc_create(&c, err, sizeof(err), &s) < 0)
		return 3;
	if (sipc_wait_ready(s, 2, WAIT_MS) < 0) {
		sipc_destroy(s);
		return 3;
	}
	if (sipc_stats_get(s, &st) == 0) {
		bool none = st.cgroup_path[0] == '\0';

		sipc_stats_release(&st);
		if (none) {
			sipc_destroy(s);
			return 2;
		}
	}
	bad = own_without_cloexec();
	sipc_destroy(s);
	return bad == 0 ? 0 : 10 + (int)(bad > 100 ? 100 : bad);
}

/*
 * No descriptor the library opens lacks close-on-exec, even for a
 * moment: a host thread's fork() + exec() at that moment would hand it
 * to a program of the host's.  Scanned while workers run (the body's
 * own look) and at every fcntl() from start to destroy, where the
 * cgroup walk used to dup() the cgroup's directory without it (glibc's
 * fdopendir() set it a moment later).
 */
/* rules: SC5 */
static void
test_cgroup_close_descriptors_cloexec(void)
{
	struct cloexec_seen cs = { 0, 0, -1, "" };
	int rc;

	if (!sf_supported()) {
		tl_skip("seccomp user notification is not available here");
		return;
	}
	rc = sf_broker(__NR_fcntl, judge_cloexec, &cs, sizeof(cs),
	    cloexec_body, NULL);
	if (rc == 2) {
		tl_skip("no cgroup v2 here");
		return;
	}
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(cs.looks >= 1);
	CU_ASSERT_EQUAL(cs.bad, 0);
	if (rc != 0 || cs.bad != 0)
		fprintf(stderr, "body %d; %u without O_CLOEXEC at an fcntl(), "
		    "first fd %d (%s), %u calls judged\n", rc, cs.bad,
		    cs.fd, cs.what, cs.looks);
}

static const tl_test cgroup_tests[] = {
	{ "test_cgroup_worker_in_own_cgroup_process_group",
	  test_cgroup_worker_in_own_cgroup_process_group },
	{ "test_cgroup_worker_in_own_cgroup_pid_namespace",
	  test_cgroup_worker_in_own_cgroup_pid_namespace },
	{ "test_cgroup_kill_ends_setsid_escapee",
	  test_cgroup_kill_ends_setsid_escapee },
	{ "test_cgroup_off_escapee_survives_process_group",
	  test_cgroup_off_escapee_survives_process_group },
	{ "test_cgroup_pids_max_applied_or_refused",
	  test_cgroup_pids_max_applied_or_refused },
	{ "test_cgroup_memory_max_applied_or_refused",
	  test_cgroup_memory_max_applied_or_refused },
	{ "test_cgroup_cpu_max_applied_or_refused",
	  test_cgroup_cpu_max_applied_or_refused },
	{ "test_cgroup_off", test_cgroup_off },
	{ "test_cgroup_crashed_instance_swept",
	  test_cgroup_crashed_instance_swept },
	{ "test_cgroup_crashed_instance_escapee_killed",
	  test_cgroup_crashed_instance_escapee_killed },
	{ "test_cgroup_crashed_journalled_instance_left_to_its_journal",
	  test_cgroup_crashed_journalled_instance_left_to_its_journal },
	{ "test_cgroup_foreign_pid_namespace_spares_live_owner",
	    test_cgroup_foreign_pid_namespace_spares_live_owner },
	{ "test_cgroup_lost_worker_cgroup_still_killed",
	  test_cgroup_lost_worker_cgroup_still_killed },
	{ "test_cgroup_oom_is_its_own_exit_kind",
	  test_cgroup_oom_is_its_own_exit_kind },
	{ "test_cgroup_read_key_flat_file", test_cgroup_read_key_flat_file },
	{ "test_cgroup_config_keys", test_cgroup_config_keys },
	{ "test_cgroup_close_descriptors_cloexec",
	  test_cgroup_close_descriptors_cloexec },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("cgroup", cgroup_tests);
	return tl_run();
}
