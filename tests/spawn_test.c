/*
 * spawn_test.c - the reaper starts workers in parallel: one launch's
 * wait for its child to start does not hold back the next launch.
 *
 * In the namespace modes a launch waits for sipc-init to report that the
 * worker started.  Here sipc-init is reached through a wrapper that, on
 * start, leaves a marker file, waits (at most PEER_WAIT_S) until it sees
 * another wrapper's marker, notes whether it did, removes its own marker
 * and execs sipc-init.  Launched one after the other, no wrapper ever
 * sees another (each is gone before the next starts): every launch waits
 * out the whole PEER_WAIT_S and none notes a peer.  Launched together,
 * they see each other at once.  The proof is the notes, not a clock, so
 * a loaded machine or a sanitizer build slows it down but cannot fail
 * it.
 *
 * Threads: the CUnit thread only.  Waits are on events with generous
 * deadlines; the elapsed time is measured, never slept.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rmtree.h"
#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define NWORKERS 16
#define PEER_WAIT_S 5
#define WAIT_MS 30000

static char *const echo_argv[] = { "echo", NULL };

/* Write dir/peer-init (the wrapper above); markers go to dir/m.
 * Returns 0 or -errno. */
static int
write_peer_init(const char *dir, char *path, size_t len)
{
	char init[4096], m[600];
	FILE *f;

	if (realpath(tl_init_path(), init) == NULL)
		return -errno;
	snprintf(m, sizeof(m), "%s/m", dir);
	if (mkdir(m, 0755) != 0)
		return -errno;
	snprintf(path, len, "%s/peer-init", dir);
	if ((f = fopen(path, "w")) == NULL)
		return -errno;
	fprintf(f, "#!/bin/sh\n"
	    "me=$(mktemp '%s/live.XXXXXX') || exit 1\n"
	    "i=0\n"
	    "while [ $(ls '%s' | grep -c '^live[.]') -lt 2 ] && "
	    "[ $i -lt %d ]; do sleep 0.1; i=$((i + 1)); done\n"
	    "[ $(ls '%s' | grep -c '^live[.]') -ge 2 ] && : > \"$me.peer\"\n"
	    "rm -f \"$me\"\n"
	    "exec '%s' \"$@\"\n", m, m, PEER_WAIT_S * 10, m, init);
	if (fclose(f) != 0 || chmod(path, 0755) != 0)
		return -errno;
	return 0;
}

/* How many wrappers saw a peer (their "<marker>.peer" files). */
static unsigned
peers_seen(const char *dir)
{
	char m[600];
	struct dirent *de;
	unsigned n = 0;
	size_t len;
	DIR *d;

	snprintf(m, sizeof(m), "%s/m", dir);
	if ((d = opendir(m)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if ((len = strlen(de->d_name)) > 5 &&
		    strcmp(de->d_name + len - 5, ".peer") == 0)
			n++;
	closedir(d);
	return n;
}

static void
test_spawn_launches_overlap(void)
{
	char dir[] = "/tmp/sipc-spawn-XXXXXX", init[512];
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0, elapsed;
	unsigned peers;
	int rc;

	if (st_skip_sandboxed("a custom sipc-init outside the sandbox view"))
		return;
	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
		tl_skip("no PID namespaces here (needs root)");
		return;
	}
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	CU_ASSERT_FATAL(write_peer_init(dir, init, sizeof(init)) == 0);
	st_cfg_base(&c, "echo", echo_argv, NWORKERS);
	c.containment = SIPC_CONTAIN_PID_NAMESPACE;
	c.init_path = init;
	c.handshake_ms = WAIT_MS;
	t0 = tl_now_ms();
	s = st_start(&c, 0, 0);
	rc = sipc_wait_ready(s, NWORKERS, WAIT_MS);
	elapsed = tl_now_ms() - t0;
	CU_ASSERT_EQUAL(rc, 0);
	peers = peers_seen(dir);
	fprintf(stderr, "%d workers ready in %lld ms; %u launches saw "
	    "another one running\n", NWORKERS, (long long)elapsed, peers);
	/* launched together: at least two were in their wrappers at once */
	CU_ASSERT(peers >= 2);
	sipc_destroy(s);
	CU_ASSERT_EQUAL(rmtree(dir), 0);
}

static bool
all_exec_failed(const struct sipc_stats *st, void *arg)
{
	for (unsigned i = 0; i < st->nworkers; i++)
		if (st->workers[i].last_exit.kind != SIPC_EXIT_EXEC_FAILED ||
		    st->workers[i].last_exit.code != ENOEXEC)
			return false;
	return st->nworkers == *(unsigned *)arg;
}

/* Launches started together that all fail to exec: each is classified
 * on its own (EXEC_FAILED, ENOEXEC: an executable file in no format the
 * kernel runs), in the mode where the clone's own exec fails and in one
 * where sipc-init reports the worker's. */
static void
exec_failures_case(enum sipc_containment mode)
{
	char dir[] = "/tmp/sipc-spawn-XXXXXX", bin[512];
	char *const argv[] = { "noformat", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned n = 4;
	FILE *f;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	/* a root supervisor's sandboxed worker runs as sandbox_uid */
	CU_ASSERT(chmod(dir, 0755) == 0);
	snprintf(bin, sizeof(bin), "%s/noformat", dir);
	CU_ASSERT_FATAL((f = fopen(bin, "w")) != NULL);
	fputs("\x01\x02 not a program\n", f);
	CU_ASSERT_FATAL(fclose(f) == 0 && chmod(bin, 0755) == 0);
	st_cfg_base(&c, "echo", argv, n);
	c.path = bin;
	c.containment = mode;
	s = st_start(&c, 0, 0);
	CU_ASSERT_EQUAL(sipc_wait_ready(s, n, WAIT_MS), SIPC_E_EXEC);
	CU_ASSERT(st_stats_wait(s, all_exec_failed, &n, WAIT_MS));
	sipc_destroy(s);
	CU_ASSERT_EQUAL(rmtree(dir), 0);
}

static void
test_spawn_exec_failures_process_group(void)
{
	exec_failures_case(SIPC_CONTAIN_PROCESS_GROUP);
}

static void
test_spawn_exec_failures_pid_namespace(void)
{
	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
		tl_skip("no PID namespaces here (needs root)");
		return;
	}
	exec_failures_case(SIPC_CONTAIN_PID_NAMESPACE);
}

/* ------------------------------------------------- a host that forks */

#define FORK_SLEEP_S 4            /* how long each host child lives */
#define FORKS_MAX 3000
/* Ready and TIMEOUT "at once": far below FORK_SLEEP_S, far above any
 * spawn or wake-up on a loaded machine. */
#define NOT_HELD_MS 2000

struct forker {
	pthread_t t;
	atomic_bool stop;
	pid_t kids[FORKS_MAX];
	unsigned n;
};

/* A host thread forking without exec, as a pre-fork server does: each
 * child inherits whatever this process has open at that moment and
 * keeps it for FORK_SLEEP_S.  Only async-signal-safe calls in it. */
static void *
forker_main(void *arg)
{
	struct forker *f = arg;
	struct timespec gap = { 0, 1000 * 1000 };
	pid_t p;

	while (!atomic_load(&f->stop) && f->n < FORKS_MAX) {
		if ((p = fork()) == 0) {
			struct timespec ts = { FORK_SLEEP_S, 0 };

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		if (p > 0)
			f->kids[f->n++] = p;
		nanosleep(&gap, NULL);
	}
	return NULL;
}

static void
forker_stop(struct forker *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->t, NULL);
	for (unsigned i = 0; i < f->n; i++)
		(void)kill(f->kids[i], SIGKILL);
	for (unsigned i = 0; i < f->n; i++)
		while (waitpid(f->kids[i], NULL, 0) < 0 && errno == EINTR)
			;
}

/*
 * A host thread forks (without exec) all the time the supervisor starts
 * and restarts workers.  Its children hold whatever was open at their
 * fork, for seconds; none may hold what the reaper waits for: workers
 * are ready at once, a restart does not stall the reaper, and a deadline
 * fires on time meanwhile.
 */
/* rules: SC6 */
static void
test_spawn_host_fork_holds_nothing(void)
{
	static struct forker f;
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int64_t t0, ready, timed, closed[2];

	memset(&f, 0, sizeof(f));
	st_cfg_base(&c, "echo", argv, 2);
	c.stall_ms = 60000;           /* never the rule that ends a worker */
	c.restart_base_ms = 1;
	c.restart_cap_ms = 1;
	fflush(NULL);
	CU_ASSERT_FATAL(pthread_create(&f.t, NULL, forker_main, &f) == 0);
	t0 = tl_now_ms();
	s = st_start(&c, 0, 0);
	CU_ASSERT_EQUAL(sipc_wait_ready(s, 2, WAIT_MS), 0);
	ready = tl_now_ms() - t0;
	/* a crash, so the reaper restarts a worker while the host forks;
	 * then a deadline that only the reaper can fire */
	st_call_cmd(s, "crash exit 3", WAIT_MS, 0, &r);
	sipc_result_release(&r);
	t0 = tl_now_ms();
	st_call_cmd(s, "hang", 300, 0, &r);
	timed = tl_now_ms() - t0;
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_TIMEOUT);
	sipc_result_release(&r);
	/* each worker, started while the host forked, closes its channel:
	 * seen at once (no host child holds the worker's end), not by the
	 * stall rule */
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(sipc_wait_ready(s, 2, WAIT_MS), 0);
		t0 = tl_now_ms();
		st_call_cmd(s, "closechan", 0, 0, &r);
		closed[i] = tl_now_ms() - t0;
		CU_ASSERT_EQUAL(r.exit.reason, SIPC_TERM_CHANNEL_LOST);
		sipc_result_release(&r);
	}
	CU_ASSERT_EQUAL(sipc_wait_ready(s, 2, WAIT_MS), 0);
	forker_stop(&f);
	fprintf(stderr, "host forked %u children: ready in %lld ms, a 300 ms "
	    "deadline fired after %lld ms, closed channels seen after %lld "
	    "and %lld ms\n", f.n, (long long)ready, (long long)timed,
	    (long long)closed[0], (long long)closed[1]);
	CU_ASSERT(f.n > 0);
	CU_ASSERT(ready < NOT_HELD_MS);
	CU_ASSERT(timed < 300 + NOT_HELD_MS);
	CU_ASSERT(closed[0] < NOT_HELD_MS && closed[1] < NOT_HELD_MS);
	sipc_destroy(s);
}

/* ---------------------------------------------- an init that is silent */

static bool
bound_counted(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->bounds_expired >= 1;
}

/*
 * An init that starts and never reports (here a script that sleeps): the
 * launch's wait for its first report runs out (10 s), and that is said
 * (logged, counted in stats), not a silent stall; the start fails.
 */
/* rules: B1 */
static void
test_spawn_silent_init_bound_counted(void)
{
	char dir[] = "/tmp/sipc-spawn-XXXXXX", init[600];
	struct sipc_config c;
	sipc_supervisor *s;
	FILE *f;

	if (st_skip_sandboxed("a custom sipc-init outside the sandbox view"))
		return;
	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
		tl_skip("no PID namespaces here (needs root)");
		return;
	}
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(init, sizeof(init), "%s/silent-init", dir);
	CU_ASSERT_FATAL((f = fopen(init, "w")) != NULL);
	fputs("#!/bin/sh\nexec sleep 60\n", f);
	CU_ASSERT_FATAL(fclose(f) == 0 && chmod(init, 0755) == 0);
	st_cfg_base(&c, "echo", echo_argv, 1);
	c.containment = SIPC_CONTAIN_PID_NAMESPACE;
	c.init_path = init;
	c.handshake_ms = WAIT_MS;
	c.restart_base_ms = 60000;    /* one launch is enough */
	c.restart_cap_ms = 60000;
	s = st_start(&c, 0, 0);
	CU_ASSERT(st_stats_wait(s, bound_counted, NULL, WAIT_MS));
	CU_ASSERT(st_log_has("gave up waiting: sipc-init's first report"));
	sipc_destroy(s);
	CU_ASSERT_EQUAL(rmtree(dir), 0);
}

int
main(void)
{
	st_no_core_files();
	tl_suite("spawn", (tl_test[]){
		{ "test_spawn_launches_overlap", test_spawn_launches_overlap },
		{ "test_spawn_host_fork_holds_nothing",
		  test_spawn_host_fork_holds_nothing },
		{ "test_spawn_silent_init_bound_counted",
		  test_spawn_silent_init_bound_counted },
		{ "test_spawn_exec_failures_process_group",
		  test_spawn_exec_failures_process_group },
		{ "test_spawn_exec_failures_pid_namespace",
		  test_spawn_exec_failures_pid_namespace },
		{ NULL, NULL },
	});
	return tl_run();
}
