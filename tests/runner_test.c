/*
 * runner_test.c - the test runner itself (tests/lib/runner.c): each
 * suite runs in its own process, so process-wide state one suite
 * changes (signal mask, environment) does not reach the next, a suite
 * killed by a signal fails the test that was running and the other
 * suites still run, skips are counted apart, and the counts and XML come
 * out as tests/run.sh expects.  A test left by a fatal assertion ends
 * its process (whatever it left running, a supervisor calling back into
 * its dead frame, goes with it), and the rest of its suite runs in a
 * fresh one.
 *
 * The outer test re-executes this binary with RUNNER_INNER=1: the inner
 * run registers the suites below and its tl_run() writes counts and XML
 * to temporary files the outer test reads.  Threads: CUnit's only.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

/* ------------------------------------------------------- inner suites */

static void
test_inner_changes_process_state(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CU_ASSERT(sigprocmask(SIG_BLOCK, &s, NULL) == 0);
	CU_ASSERT(setenv("RUNNER_LEAK", "1", 1) == 0);
}

static void
test_inner_sees_clean_state(void)
{
	sigset_t s;

	CU_ASSERT(sigprocmask(SIG_BLOCK, NULL, &s) == 0);
	CU_ASSERT(!sigismember(&s, SIGUSR1));
	CU_ASSERT_PTR_NULL(getenv("RUNNER_LEAK"));
}

static void
test_inner_killed(void)
{
	raise(SIGKILL);         /* no runtime can intercept it */
}

static void
test_inner_never_runs(void)
{
	CU_FAIL("ran after its suite's process was killed");
}

static void
test_inner_skips(void)
{
	tl_skip("cannot run here");
}

/* State the abandoned test leaves behind, as a live supervisor would. */
static void
test_inner_abandoned(void)
{
	CU_ASSERT(setenv("RUNNER_ABANDONED", "1", 1) == 0);
	CU_ASSERT_FATAL(getenv("RUNNER_NOT_SET") != NULL);
	CU_FAIL("ran on after a fatal assertion");
}

static void
test_inner_after_abandoned(void)
{
	CU_ASSERT_PTR_NULL(getenv("RUNNER_ABANDONED"));
}

static void
test_inner_after_crash(void)
{
	CU_PASS("a later suite still runs");
}

/* Both value-printing assertions fail, each saying both sides. */
static void
test_inner_prints_values(void)
{
	int three = 3;
	const char *word = "abc";

	TL_EQ(three, 4);
	TL_STREQ(word, "abd");
	TL_STREQ(NULL, word);
	TL_EQ(three, 3);
}

static int
inner_main(void)
{
	tl_suite("changer", (tl_test[]){
	    { "test_inner_changes_process_state",
	      test_inner_changes_process_state }, { NULL, NULL } });
	tl_suite("checker", (tl_test[]){
	    { "test_inner_sees_clean_state", test_inner_sees_clean_state },
	    { NULL, NULL } });
	tl_suite("crasher", (tl_test[]){
	    { "test_inner_killed", test_inner_killed },
	    { "test_inner_never_runs", test_inner_never_runs },
	    { NULL, NULL } });
	tl_suite("abandoner", (tl_test[]){
	    { "test_inner_abandoned", test_inner_abandoned },
	    { "test_inner_after_abandoned", test_inner_after_abandoned },
	    { NULL, NULL } });
	tl_suite("printer", (tl_test[]){
	    { "test_inner_prints_values", test_inner_prints_values },
	    { NULL, NULL } });
	tl_suite("skipper", (tl_test[]){
	    { "test_inner_skips", test_inner_skips }, { NULL, NULL } });
	tl_suite("after", (tl_test[]){
	    { "test_inner_after_crash", test_inner_after_crash },
	    { NULL, NULL } });
	return tl_run();
}

/* ------------------------------------------------------- outer test */

static char *
slurp(const char *path)
{
	static char buf[16384];
	size_t n = 0;
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (f != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

static void
test_runner_isolates_suites_and_reports(void)
{
	char counts[] = "/tmp/sipc-runner-counts-XXXXXX";
	char xml[] = "/tmp/sipc-runner-xml-XXXXXX";
	int cfd = mkstemp(counts), xfd = mkstemp(xml), st = 0;
	pid_t pid;
	char *x;

	CU_ASSERT_FATAL(cfd >= 0 && xfd >= 0);
	close(cfd);
	close(xfd);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		setenv("RUNNER_INNER", "1", 1);
		setenv("SIPC_TEST_COUNTS", counts, 1);
		setenv("SIPC_TEST_XML", xml, 1);
		if (freopen("/dev/null", "w", stdout) == NULL)
			_exit(127);
		execl("/proc/self/exe", "runner_test", (char *)NULL);
		_exit(127);
	}
	CU_ASSERT_FATAL(waitpid(pid, &st, 0) == pid);
	/* Three tests failed (the killed one, the abandoned one, the
	 * printer): the run fails, as a whole. */
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	/* ran passed failed skipped: changer, checker, after_abandoned
	 * (in a process of its own) and after pass; the killed and the
	 * abandoned test and the printer fail; the killed suite's second
	 * test never ran. */
	TL_STREQ(slurp(counts), "8 4 3 1\n");
	x = slurp(xml);
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "tests=\"8\" failures=\"3\" "
	    "skipped=\"1\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "getenv(&quot;RUNNER_NOT_SET&quot;) "
	    "!= NULL\"/>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "name=\"test_inner_after_abandoned\""
	    " time="));
	CU_ASSERT_PTR_NULL(strstr(x, "ran on after a fatal assertion"));
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "name=\"test_inner_killed\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "<failure message=\"suite process "
	    "killed by signal 9"));
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "<skipped message=\"cannot run "
	    "here\""));
	CU_ASSERT_PTR_NULL(strstr(x, "test_inner_never_runs"));
	/* TL_EQ and TL_STREQ print both sides; a passing one prints
	 * nothing. */
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "TL_EQ(three, 4): three is 3 (0x3), "
	    "4 is 4 (0x4)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "TL_STREQ(word, &quot;abd&quot;): "
	    "word is &quot;abc&quot;, &quot;abd&quot; is &quot;abd&quot;"));
	CU_ASSERT_PTR_NOT_NULL(strstr(x, "TL_STREQ(NULL, word): NULL is NULL, "
	    "word is &quot;abc&quot;"));
	CU_ASSERT_PTR_NULL(strstr(x, "TL_EQ(three, 3)"));
	unlink(counts);
	unlink(xml);
}

static void *
joined_thread(void *arg)
{
	return arg;
}

/* A baseline waits only for threads a test started and joined, never
 * for a helper thread the runtime keeps for the whole process (under
 * ThreadSanitizer there is one): the wait ends well before its bound
 * and gives the count the suite's process started with. */
static void
test_runner_thread_baseline_ignores_runtime_threads(void)
{
	int before = tl_settled_threads(20000), n, i;
	int64_t t0;
	pthread_t t;

	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, joined_thread,
		    NULL), 0);
		CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
	}
	t0 = tl_now_ms();
	n = tl_settled_threads(20000);
	CU_ASSERT(tl_now_ms() - t0 < 20000);
	CU_ASSERT_EQUAL(n, before);
	if (tl_now_ms() - t0 >= 20000 || n != before)
		fprintf(stderr, "settled %d (before %d) after %lld ms\n", n,
		    before, (long long)(tl_now_ms() - t0));
}

int
main(void)
{
	if (getenv("RUNNER_INNER") != NULL)
		return inner_main();
	tl_suite("runner", (tl_test[]){
	    { "test_runner_isolates_suites_and_reports",
	      test_runner_isolates_suites_and_reports },
	    { "test_runner_thread_baseline_ignores_runtime_threads",
	      test_runner_thread_baseline_ignores_runtime_threads },
	    { NULL, NULL } });
	return tl_run();
}
