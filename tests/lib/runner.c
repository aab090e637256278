/*
 * runner.c - the test runner behind tl_suite(), tl_run() and tl_skip()
 * (contracts in testlib.h).
 *
 * One process per suite: the parent forks a child for each registered
 * suite and the child runs it with CU_run_suite().  CUnit's start and
 * complete handlers in the child write one fixed-size record per event
 * to a memfd the parent shares (same open file description, so the
 * child's writes append).  The parent reads the records after reaping
 * the child; a test that started without completing belongs to a child
 * that crashed or exited, and is failed with how the child ended.  A
 * child that ends badly after its last test (a sanitizer's leak report
 * at exit) fails the suite.  No text is parsed.
 *
 * A test abandoned by a fatal assertion (CUnit longjmps out of it) may
 * leave a supervisor running whose threads later call back into its
 * dead stack frame.  So each test function runs through a trampoline
 * that notes whether it returned; when it did not, the child ends right
 * after that test's record, and the parent starts a new child for the
 * rest of the suite (the tests already run are made inactive there).
 *
 * Threads: the parent is single-threaded (it starts and joins one thread
 * before the first fork, see settle_threads()); each child runs its
 * tests on its main thread, as before.
 */
#include "testlib.h"

#include <CUnit/TestRun.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

enum { REC_START = 1, REC_DONE };
enum { ST_PASS, ST_FAIL, ST_SKIP };

/* One event.  Written whole with one write() by the child. */
struct rec {
	unsigned kind, status;
	unsigned abandoned;       /* REC_DONE: left by a fatal assertion */
	long ms;
	char suite[64];
	char test[128];
	char msg[768];
};

/* Parent: every completed test, for the summary and the XML. */
static struct rec *done;
static size_t ndone, capdone;

/* Child: the record stream and the running test's state. */
static int rec_fd = -1;
static struct rec cur;
static int64_t cur_start;
static bool cur_skipped;
static bool cur_returned;         /* the test function returned */

/* Child exit status after an abandoned test: "go on with the rest". */
#define ABANDONED_EXIT 86

/* Registered tests and their functions, for the trampoline. */
struct tfn { CU_pTest t; CU_TestFunc fn; };
static struct tfn *tfns;
static size_t ntfns;

void
tl_skip(const char *why)
{
	cur_skipped = true;
	snprintf(cur.msg, sizeof(cur.msg), "%s", why);
	printf("SKIP(%s) ", why);
	fflush(stdout);
}

static void *
noop_thread(void *arg)
{
	*(pid_t *)arg = gettid();
	return NULL;
}

/* Some runtimes (ThreadSanitizer) start a helper thread of their own at
 * the first pthread_create() and keep it for the life of the process;
 * start one now so it is part of every baseline a test measures.  In a
 * child the runtime may start it again, so the child calls this too.
 * Once the joined thread has left /proc/self/task, what is listed is
 * the floor tl_settled_threads() waits for. */
static void
settle_threads(void)
{
	char task[64];
	pid_t tid = 0;
	pthread_t t;
	int64_t end;

	if (pthread_create(&t, NULL, noop_thread, &tid) != 0)
		return;
	pthread_join(t, NULL);
	snprintf(task, sizeof(task), "/proc/self/task/%d", (int)tid);
	end = tl_now_ms() + 10000;
	while (access(task, F_OK) == 0 && tl_now_ms() < end)
		usleep(1000);
	tl_set_thread_floor(tl_count_threads());
}

/* Every test runs through here: a fatal assertion longjmps past the
 * assignment, and on_complete() sees that the test was abandoned. */
static void
trampoline(void)
{
	CU_pTest t = CU_get_current_test();
	size_t i;

	for (i = 0; i < ntfns; i++)
		if (tfns[i].t == t) {
			tfns[i].fn();
			cur_returned = true;
			return;
		}
	abort();
}

void
tl_suite(const char *name, const tl_test *tests)
{
	const char *only = getenv("SIPC_TEST_ONLY");
	CU_pSuite s;
	CU_pTest t;
	struct tfn *n;

	if (CU_get_registry() == NULL) {
		settle_threads();
		if (CU_initialize_registry() != CUE_SUCCESS)
			abort();
	}
	s = CU_add_suite(name, NULL, NULL);
	if (s == NULL)
		abort();
	for (; tests->name != NULL; tests++) {
		/* SIPC_TEST_ONLY=substring: run only the tests it names
		 * (while working on one; unset in every check target) */
		if (only != NULL && *only != '\0' &&
		    strstr(tests->name, only) == NULL)
			continue;
		if ((t = CU_add_test(s, tests->name, trampoline)) == NULL ||
		    (n = realloc(tfns, (ntfns + 1) * sizeof(*n))) == NULL)
			abort();
		tfns = n;
		tfns[ntfns++] = (struct tfn){ t, tests->fn };
	}
}

/* ------------------------------------------------------------ child */

static void
rec_put(const struct rec *r)
{
	ssize_t n;

	do
		n = write(rec_fd, r, sizeof(*r));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*r))
		abort();        /* the parent would miss a result */
}

static void
on_start(const CU_pTest t, const CU_pSuite s)
{
	if (!t->fActive)
		return;           /* run by an earlier child */
	memset(&cur, 0, sizeof(cur));
	cur.kind = REC_START;
	snprintf(cur.suite, sizeof(cur.suite), "%s", s->pName);
	snprintf(cur.test, sizeof(cur.test), "%s", t->pName);
	cur_skipped = false;
	cur_returned = false;
	cur_start = tl_now_ms();
	printf("  Test: %s ...", t->pName);
	fflush(stdout);
	rec_put(&cur);
	cur.msg[0] = '\0';
}

static void
on_complete(const CU_pTest t, const CU_pSuite s, const CU_pFailureRecord first)
{
	CU_pFailureRecord f = first;
	size_t off = 0;
	int i = 1;

	if (!t->fActive)
		return;
	cur.kind = REC_DONE;
	cur.abandoned = !cur_returned;
	cur.ms = (long)(tl_now_ms() - cur_start);
	cur.status = f != NULL ? ST_FAIL : cur_skipped ? ST_SKIP : ST_PASS;
	printf("%s\n", cur.status == ST_PASS ? "passed" :
	    cur.status == ST_SKIP ? "skipped" : "FAILED");
	if (f != NULL)
		cur.msg[0] = '\0';
	for (; f != NULL && f->pTest == t; f = f->pNext, i++) {
		printf("    %d. %s:%u  - %s\n", i, f->strFileName,
		    f->uiLineNumber, f->strCondition);
		if (off < sizeof(cur.msg))
			off += (size_t)snprintf(cur.msg + off,
			    sizeof(cur.msg) - off, "%s%s:%u: %s",
			    off ? "; " : "", f->strFileName, f->uiLineNumber,
			    f->strCondition);
	}
	fflush(stdout);
	rec_put(&cur);
	/* Whatever the abandoned test left running (a supervisor and its
	 * callbacks into the dead frame) ends with this process; _exit():
	 * what it left is no leak of the suite's. */
	if (cur.abandoned) {
		fflush(stderr);
		_exit(ABANDONED_EXIT);
	}
}

static void
on_init_failure(const CU_pSuite s)
{
	memset(&cur, 0, sizeof(cur));
	cur.kind = REC_DONE;
	cur.status = ST_FAIL;
	snprintf(cur.suite, sizeof(cur.suite), "%s", s->pName);
	snprintf(cur.test, sizeof(cur.test), "(suite set-up)");
	snprintf(cur.msg, sizeof(cur.msg), "suite initialisation failed");
	rec_put(&cur);
}

static void __attribute__((noreturn))
child_run(CU_pSuite s, int fd, bool subreaper, unsigned from)
{
	CU_pTest t;
	unsigned i;

	rec_fd = fd;
	/* The first `from` tests ran in an earlier child. */
	CU_set_fail_on_inactive(CU_FALSE);
	for (i = 0, t = s->pTest; t != NULL && i < from; t = t->pNext, i++)
		CU_set_test_active(t, CU_FALSE);
	/* main() may have made the process a child subreaper before
	 * tl_run(); fork() does not pass that on, so the suite asks again
	 * (its tests' orphans must come to it, not to the runner). */
	if (subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		abort();
	settle_threads();
	CU_set_test_start_handler(on_start);
	CU_set_test_complete_handler(on_complete);
	CU_set_suite_init_failure_handler(on_init_failure);
	if (from == 0)
		printf("Suite: %s\n", s->pName);
	fflush(stdout);
	CU_run_suite(s);
	fflush(stdout);
	/* exit(), not _exit(): sanitizers report leaks at exit, and that
	 * report must fail the suite. */
	exit(0);
}

/* ----------------------------------------------------------- parent */

static void
keep(const struct rec *r)
{
	struct rec *n;

	if (ndone == capdone) {
		capdone = capdone ? capdone * 2 : 64;
		if ((n = realloc(done, capdone * sizeof(*n))) == NULL)
			abort();
		done = n;
	}
	done[ndone++] = *r;
}

static void
describe_end(int st, char *buf, size_t len)
{
	if (WIFSIGNALED(st))
		snprintf(buf, len, "suite process killed by signal %d (%s)",
		    WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "suite process exited with status %d",
		    WEXITSTATUS(st));
}

/* Read the child's records from *off on; fail what it left unfinished.
 * Returns how many tests completed, and in *ret_resume whether the child
 * ended after an abandoned test (the rest of the suite is still to run). */
static unsigned
collect(int fd, off_t *off, int st, const char *suite, bool *ret_resume)
{
	struct rec r, open = { 0 };
	bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	unsigned n = 0;

	*ret_resume = false;
	while (pread(fd, &r, sizeof(r), *off) == (ssize_t)sizeof(r)) {
		*off += (off_t)sizeof(r);
		if (r.kind == REC_START)
			open = r;
		else {
			keep(&r);
			n++;
			open.kind = 0;
			*ret_resume = r.abandoned;
		}
	}
	*ret_resume = *ret_resume && open.kind != REC_START &&
	    WIFEXITED(st) && WEXITSTATUS(st) == ABANDONED_EXIT;
	if (clean || *ret_resume)
		return n;
	if (open.kind != REC_START) {
		memset(&open, 0, sizeof(open));
		snprintf(open.suite, sizeof(open.suite), "%s", suite);
		snprintf(open.test, sizeof(open.test), "(suite process)");
	}
	open.kind = REC_DONE;
	open.status = ST_FAIL;
	describe_end(st, open.msg, sizeof(open.msg));
	printf("\n*** %s: %s: %s\n", open.suite, open.test, open.msg);
	keep(&open);
	return n;
}

static int
run_isolated(CU_pSuite s, int fd, off_t *off)
{
	int st, sub = 0;
	unsigned from = 0;
	bool resume;
	pid_t pid;

	(void)prctl(PR_GET_CHILD_SUBREAPER, &sub);
	do {
		fflush(stdout);
		fflush(stderr);
		if ((pid = fork()) < 0)
			return -errno;
		if (pid == 0)
			child_run(s, fd, sub != 0, from);
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				return -errno;
		/* A subreaper runner adopts what the suite left when it
		 * ended; it has no other children, so it may reap them
		 * all. */
		while (sub && waitpid(-1, NULL, WNOHANG) > 0)
			;
		from += collect(fd, off, st, s->pName, &resume);
	} while (resume);
	return 0;
}

/* ----------------------------------------------------------- report */

static void
xml_text(FILE *f, const char *s)
{
	for (; *s != '\0'; s++)
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			fputc((unsigned char)*s < 0x20 && *s != '\n' ? '?' : *s,
			    f);
		}
}

/* JUnit-style XML: one <testsuite> per CUnit suite, in run order. */
static void
write_xml(const char *path, const unsigned counts[3])
{
	const char *prog = program_invocation_short_name;
	size_t i;
	FILE *f;

	if ((f = fopen(path, "we")) == NULL) {
		perror(path);
		return;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<testsuites name=\"%s\" tests=\"%zu\" failures=\"%u\" "
	    "skipped=\"%u\">\n", prog, ndone, counts[ST_FAIL],
	    counts[ST_SKIP]);
	for (i = 0; i < ndone; i++) {
		const struct rec *r = &done[i];

		if (i == 0 || strcmp(done[i - 1].suite, r->suite) != 0) {
			fprintf(f, "%s  <testsuite name=\"", i ? "  </testsuite>\n"
			    : "");
			xml_text(f, r->suite);
			fputs("\">\n", f);
		}
		fprintf(f, "    <testcase classname=\"%s.", prog);
		xml_text(f, r->suite);
		fputs("\" name=\"", f);
		xml_text(f, r->test);
		fprintf(f, "\" time=\"%ld.%03ld\"", r->ms / 1000, r->ms % 1000);
		if (r->status == ST_PASS) {
			fputs("/>\n", f);
			continue;
		}
		fputs(r->status == ST_SKIP ? ">\n      <skipped message=\"" :
		    ">\n      <failure message=\"", f);
		xml_text(f, r->msg);
		fputs("\"/>\n    </testcase>\n", f);
	}
	fprintf(f, "%s</testsuites>\n", ndone ? "  </testsuite>\n" : "");
	if (fclose(f) != 0)
		perror(path);
}

/* For tests/run.sh: the counts as one line, and the XML. */
static void
report(const unsigned counts[3])
{
	const char *p;
	FILE *f;

	if ((p = getenv("SIPC_TEST_COUNTS")) != NULL && *p != '\0') {
		if ((f = fopen(p, "we")) == NULL ||
		    fprintf(f, "%zu %u %u %u\n", ndone, counts[ST_PASS],
		    counts[ST_FAIL], counts[ST_SKIP]) < 0 || fclose(f) != 0)
			perror(p);
	}
	if ((p = getenv("SIPC_TEST_XML")) != NULL && *p != '\0')
		write_xml(p, counts);
}

int
tl_run(void)
{
	unsigned counts[3] = { 0, 0, 0 };
	CU_pSuite s;
	off_t off = 0;
	size_t i;
	int fd;

	if (CU_get_registry() == NULL ||
	    (fd = memfd_create("tl-results", MFD_CLOEXEC)) < 0)
		return 1;
	for (s = CU_get_registry()->pSuite; s != NULL; s = s->pNext)
		if (run_isolated(s, fd, &off) < 0) {
			perror("tl_run: fork");
			return 1;
		}
	close(fd);
	for (i = 0; i < ndone; i++)
		counts[done[i].status]++;
	printf("\nrun: %zu tests, %u passed, %u failed, %u skipped\n", ndone,
	    counts[ST_PASS], counts[ST_FAIL], counts[ST_SKIP]);
	report(counts);
	CU_cleanup_registry();
	free(done);
	free(tfns);
	return ndone > 0 && counts[ST_FAIL] == 0 ? 0 : 1;
}
