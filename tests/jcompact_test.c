/*
 * jcompact_test.c - journal compaction runs off the append path: an
 * append only notes that one is due, the tick compacts, and appends made
 * while a compaction is in progress neither wait for it nor get lost.
 * Real files, real fsync; each scenario runs in a forked child that then
 * ends without closing the journal (a crash: no compaction at close), and
 * the parent reads what it left.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "journal/journal.h"
#include "jtest.h"
#include "testlib.h"

#define FIRST 200       /* accepted before the compaction */
#define DURING 50       /* accepted while it is paused */
#define SETTLED 10      /* of the first ones, settled while it is paused */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool paused, go, hook_timed_out;

/* The compaction has written the image and holds no lock: stay here
 * until the test says go (bounded, so a bug cannot hang the test). */
static void
pause_hook(struct sipc__journal *j)
{
	struct timespec ts;

	(void)j;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&mu);
	paused = true;
	pthread_cond_broadcast(&cv);
	while (!go)
		if (pthread_cond_timedwait(&cv, &mu, &ts) == ETIMEDOUT) {
			hook_timed_out = true;
			break;
		}
	pthread_mutex_unlock(&mu);
}

static void *
ticker(void *arg)
{
	(void)sipc__journal_tick(arg, 0);
	return NULL;
}

static bool
is_paused(void *arg)
{
	bool p;

	(void)arg;
	pthread_mutex_lock(&mu);
	p = paused;
	pthread_mutex_unlock(&mu);
	return p;
}

static int
accept_range(struct sipc__journal *j, uint64_t from, uint64_t to)
{
	for (uint64_t id = from; id <= to; id++)
		if (sipc__journal_accepted(j, id, "k", &id, sizeof(id), 0) != 0)
			return -1;
	return 0;
}

/* The child's scenario; its exit status names the step that failed. */
static int
append_during_compaction(void)
{
	struct sipc__journal_stats st;
	struct sipc__journal *j = NULL;
	pthread_t t;
	bool timed_out;

	if (sipc__journal_open(jt_dir, SIPC_DURABLE_EACH, 0, &j, NULL, 0) != 0)
		return 1;
	sipc__journal_set_compact_threshold(j, 4096);
	if (accept_range(j, 1, FIRST) < 0)
		return 2;
	/* far past the threshold, yet no append compacted */
	sipc__journal_get_stats(j, &st);
	if (st.compactions != 0 || st.file_size <= 4096)
		return 3;
	sipc__journal_compact_hook = pause_hook;
	if (pthread_create(&t, NULL, ticker, j) != 0)
		return 4;
	if (!tl_wait_until(is_paused, NULL, 10000))
		return 5;
	/* Each of these syncs (EACH) and returns while the compaction is
	 * paused: had it held the journal's mutex, none could. */
	if (accept_range(j, FIRST + 1, FIRST + DURING) < 0)
		return 6;
	for (uint64_t id = 1; id <= SETTLED; id++) {
		if (sipc__journal_completed(j, id, SIPC_OUTCOME_OK, 0) != 0)
			return 7;
		sipc__journal_delivered(j, id);
	}
	pthread_mutex_lock(&mu);
	timed_out = hook_timed_out;
	go = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (timed_out)
		return 8;
	pthread_join(t, NULL);
	sipc__journal_get_stats(j, &st);
	if (st.compactions != 1 || st.last_error != 0 || st.broken != 0)
		return 9;
	/* what came during it was judged against the new file's size,
	 * not the old one's: no second compaction right away */
	(void)sipc__journal_tick(j, 0);
	sipc__journal_get_stats(j, &st);
	if (st.compactions != 1)
		return 10;
	return 0;                /* ends without close: a crash */
}

/* Fork, run fn in the child, return its exit status (-1: it did not
 * exit normally). */
static int
in_child(int (*fn)(void))
{
	pid_t pid;
	int st;

	if ((pid = fork()) == 0)
		_exit(fn());
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* rules: J5 */
static void
test_jcompact_append_during_compaction(void)
{
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	size_t n;
	int rc;

	jt_mkstate();
	rc = in_child(append_during_compaction);
	if (rc != 0)
		fprintf(stderr, "append_during_compaction: step %d\n", rc);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	/* What the compacted file holds: every request accepted, before or
	 * during the compaction, but the ones settled during it. */
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	n = jt_list(j, &u);
	CU_ASSERT_EQUAL(n, FIRST + DURING - SETTLED);
	for (size_t i = 0; i < n; i++)
		CU_ASSERT(u[i].request_id > SETTLED &&
		    u[i].request_id <= FIRST + DURING);
	free(u);
	sipc__journal_close(j);
	jt_rmstate();
}

/* The process dies in the middle of a compaction: the new file is half
 * made, never renamed. */
static void
die_hook(struct sipc__journal *j)
{
	(void)j;
	raise(SIGKILL);
}

static int
crash_during_compaction(void)
{
	struct sipc__journal *j = NULL;

	if (sipc__journal_open(jt_dir, SIPC_DURABLE_EACH, 0, &j, NULL, 0) != 0)
		return 1;
	sipc__journal_set_compact_threshold(j, 4096);
	if (accept_range(j, 1, FIRST) < 0)
		return 2;
	sipc__journal_compact_hook = die_hook;
	(void)sipc__journal_tick(j, 0);
	return 3;                /* not reached */
}

/* rules: J5 */
static void
test_jcompact_crash_during_compaction_recovers(void)
{
	struct sipc_unresolved *u = NULL;
	struct sipc__journal_stats st;
	struct sipc__journal *j;

	jt_mkstate();
	CU_ASSERT_EQUAL(in_child(crash_during_compaction), -1);
	CU_ASSERT(jt_fsize("journal.tmp") > 0);   /* it was under way */
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_EQUAL(jt_list(j, &u), FIRST);
	free(u);
	sipc__journal_get_stats(j, &st);
	CU_ASSERT_EQUAL(st.corrupt, 0);
	CU_ASSERT_EQUAL(st.torn_bytes, 0);
	/* and the next compaction replaces the leftover file */
	sipc__journal_close(j);
	CU_ASSERT_EQUAL(jt_fsize("journal.tmp"), -1);
	jt_rmstate();
}

int
main(void)
{
	tl_suite("jcompact", (tl_test[]){
	    { "test_jcompact_append_during_compaction",
	      test_jcompact_append_during_compaction },
	    { "test_jcompact_crash_during_compaction_recovers",
	      test_jcompact_crash_during_compaction_recovers },
	    { NULL, NULL } });
	return tl_run();
}
