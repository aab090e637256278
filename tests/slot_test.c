/*
 * slot_test.c - the worker slot's state machine (src/conn/slot_state.c):
 * every allowed change is made, every forbidden one stops the process
 * (checked in a forked child, which must die of SIGABRT and say which
 * change it refused).  The table below is written out independently of
 * the library's, so a change to either shows here.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool/pool.h"
#include "testlib.h"

#define NST 7                     /* states of enum sipc_worker_state */

#define I SIPC_WS_IDLE
#define S SIPC_WS_STARTING
#define R SIPC_WS_READY
#define D SIPC_WS_DRAINING
#define T SIPC_WS_STOPPING
#define C SIPC_WS_COOLDOWN
#define F SIPC_WS_FAILED

/* ok[from][to]: 1 where a path of the library makes that change. */
static const int ok[NST][NST] = {
	/*         I  S  R  D  T  C  F */
	[I] = {    1, 1, 0, 0, 0, 1, 1 },  /* spawn; launch failed; destroy */
	[S] = {    0, 0, 1, 1, 1, 0, 0 },  /* HELLO; ended; terminate */
	[R] = {    0, 0, 0, 1, 1, 0, 0 },  /* ended; terminate */
	[D] = {    1, 0, 0, 0, 0, 1, 1 },  /* restart, cool-down, destroy */
	[T] = {    0, 0, 0, 1, 1, 0, 0 },  /* ended; destroy's terminate */
	[C] = {    1, 1, 0, 0, 0, 1, 1 },  /* as IDLE */
	[F] = {    0, 0, 0, 0, 0, 0, 1 },  /* destroy's last pass */
};

static void
test_slot_state_table(void)
{
	for (int f = 0; f < NST; f++)
		for (int t = 0; t < NST; t++)
			CU_ASSERT_EQUAL(sipc__slot_state_allowed(f, t),
			    ok[f][t] != 0);
	/* a value out of the enum is never allowed, either side */
	CU_ASSERT_FALSE(sipc__slot_state_allowed((enum sipc_worker_state)NST,
	    I));
	CU_ASSERT_FALSE(sipc__slot_state_allowed(I,
	    (enum sipc_worker_state)NST));
	CU_ASSERT_FALSE(sipc__slot_state_allowed((enum sipc_worker_state)-1,
	    I));
}

static void
test_slot_allowed_changes_made(void)
{
	struct sipc__slot sl;
	int n = 0;

	memset(&sl, 0, sizeof(sl));
	sl.idx = 3;
	pthread_mutex_init(&sl.lock, NULL);
	for (int f = 0; f < NST; f++)
		for (int t = 0; t < NST; t++) {
			if (!ok[f][t])
				continue;
			atomic_store(&sl.state, f);
			pthread_mutex_lock(&sl.lock);
			sipc__slot_set_state(&sl, t);
			pthread_mutex_unlock(&sl.lock);
			CU_ASSERT_EQUAL(atomic_load(&sl.state), t);
			n++;
		}
	CU_ASSERT_EQUAL(n, 19);
	pthread_mutex_destroy(&sl.lock);
}

/* In a child: put a slot in `from`, ask for `to`.  Returns the child's
 * wait status; its stderr is read into buf. */
static int
change_in_child(int from, int to, char *buf, size_t len)
{
	int p[2], st = 0;
	ssize_t n;
	size_t got = 0;
	pid_t pid;

	CU_ASSERT_FATAL(pipe(p) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		struct sipc__slot sl;

		(void)setrlimit(RLIMIT_CORE, &rl);
		dup2(p[1], 2);
		close(p[0]);
		memset(&sl, 0, sizeof(sl));
		sl.idx = 5;
		pthread_mutex_init(&sl.lock, NULL);
		atomic_store(&sl.state, from);
		pthread_mutex_lock(&sl.lock);
		sipc__slot_set_state(&sl, to);
		pthread_mutex_unlock(&sl.lock);
		_exit((int)atomic_load(&sl.state) == to ? 0 : 1);
	}
	close(p[1]);
	while (got + 1 < len &&
	    ((n = read(p[0], buf + got, len - 1 - got)) > 0 ||
	    (n < 0 && errno == EINTR)))
		if (n > 0)
			got += (size_t)n;
	buf[got] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static void
test_slot_forbidden_changes_abort(void)
{
	char buf[256], want[96];
	int st, n = 0;

	for (int f = 0; f < NST; f++)
		for (int t = 0; t < NST; t++) {
			if (ok[f][t])
				continue;
			st = change_in_child(f, t, buf, sizeof(buf));
			CU_ASSERT_TRUE(WIFSIGNALED(st) &&
			    WTERMSIG(st) == SIGABRT);
			snprintf(want, sizeof(want), "worker 5: forbidden "
			    "state change %s -> %s", sipc_worker_state_name(f),
			    sipc_worker_state_name(t));
			CU_ASSERT_PTR_NOT_NULL(strstr(buf, want));
			n++;
		}
	CU_ASSERT_EQUAL(n, NST * NST - 19);
	/* the control: an allowed change in the same harness exits 0 */
	st = change_in_child(S, R, buf, sizeof(buf));
	CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CU_ASSERT_STRING_EQUAL(buf, "");
}

int
main(void)
{
	tl_suite("slot", (tl_test[]){
	    { "test_slot_state_table", test_slot_state_table },
	    { "test_slot_allowed_changes_made",
	      test_slot_allowed_changes_made },
	    { "test_slot_forbidden_changes_abort",
	      test_slot_forbidden_changes_abort },
	    { NULL, NULL } });
	return tl_run();
}
