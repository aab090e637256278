/*
 * diag_test.c - CONTRACT G2 and G4 checked from outside: where a
 * worker's diagnostics stream is cut, how long an escaped piece may be,
 * and the tail a result carries.
 *
 * Threads: the CUnit thread drives everything; callbacks run on
 * library threads and touch only what is under a mutex below.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "statedir.h"
#include "testlib.h"

#define WAIT_MS 20000          /* generous deadline for any event */

/* ------------------------------------------------------------ diagnostics */

/* What the log callback saw of the diagnostics: the lengths of the
 * pieces made only of 'x' (chatty's long line), empty pieces, the
 * longest piece, and any raw control or non-ASCII byte. */
static struct {
	pthread_mutex_t mu;
	size_t xlen[4096];
	unsigned nx, nempty, nbad;
	size_t longest;
} cap = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
cap_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
        pid_t pid, const char *msg)
{
	size_t n = strlen(msg), i;

	if (lvl != SIPC_LOG_DIAG)
		return;
	pthread_mutex_lock(&cap.mu);
	if (n > cap.longest)
		cap.longest = n;
	if (n == 0)
		cap.nempty++;
	for (i = 0; i < n; i++)
		if ((unsigned char)msg[i] < 0x20 ||
		    (unsigned char)msg[i] >= 0x7f)
			cap.nbad++;
	if (n > 0 && strspn(msg, "x") == n && cap.nx < 4096)
		cap.xlen[cap.nx++] = n;
	pthread_mutex_unlock(&cap.mu);
}

static void
cap_reset(void)
{
	pthread_mutex_lock(&cap.mu);
	cap.nx = cap.nempty = cap.nbad = 0;
	cap.longest = 0;
	pthread_mutex_unlock(&cap.mu);
}

static bool
cap_has_x(void *arg)
{
	size_t want = *(size_t *)arg, sum = 0;
	unsigned i;

	pthread_mutex_lock(&cap.mu);
	for (i = 0; i < cap.nx; i++)
		sum += cap.xlen[i];
	pthread_mutex_unlock(&cap.mu);
	return sum >= want;
}

/*
 * CONTRACT G2: the stream is cut at '\n' and every diag_line_max bytes;
 * each piece is escaped (no raw control byte, NUL included) and holds at
 * most 4 x diag_line_max characters.  chatty writes a line of 5000 'x'
 * (and escapes, a frame header with NUL bytes) on stdout and stderr
 * before its HELLO.  Limit = 5000: each line is one piece of exactly
 * 5000, and no empty piece after it; 4999: a piece of 4999 and
 * one of 1; 16: pieces of 16 and a last of 8 (5000 = 312 x 16 + 8).
 */
/* rules: G2 */
static void
test_diag_cut_exactly_at_line_max(void)
{
	static const size_t maxes[] = { 5000, 4999, 16 };
	char *argv[] = { "chatty", "0", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned k, i;

	for (k = 0; k < sizeof(maxes) / sizeof(maxes[0]); k++) {
		size_t max = maxes[k], want = 2 * 5000;
		unsigned full = 0, rest = 0, other = 0;

		st_cfg_base(&c, "chatty", argv, 1);
		c.diag_line_max = max;
		c.log = cap_log;
		cap_reset();
		s = st_start(&c, 1, WAIT_MS);
		CU_ASSERT(tl_wait_until(cap_has_x, &want, WAIT_MS));
		sipc_destroy(s);
		pthread_mutex_lock(&cap.mu);
		for (i = 0; i < cap.nx; i++) {
			if (cap.xlen[i] == max)
				full++;
			else if (cap.xlen[i] == 5000 % max)
				rest++;
			else
				other++;
		}
		TL_EQ(full, 2 * (5000 / max));
		TL_EQ(rest, 5000 % max != 0 ? 2 : 0);
		TL_EQ(other, 0);
		TL_EQ(cap.nbad, 0);
		CU_ASSERT(cap.longest <= 4 * max);
		/* a '\n' right after a piece cut at the limit ends it */
		TL_EQ(cap.nempty, 0);
		if (full != 2 * (5000 / max) || other != 0 || cap.nempty != 0)
			fprintf(stderr, "max %zu: %u full, %u rest, %u other, "
			    "%u empty\n", max, full, rest, other, cap.nempty);
		pthread_mutex_unlock(&cap.mu);
	}
}

static unsigned
count_str(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (; (hay = strstr(hay, needle)) != NULL; hay++)
		n++;
	return n;
}

/* Does `tail` end with one whole procinfo line of generation 1 ("procinfo
 * pid=P gen=1", a line end after it allowed)? */
static bool
ends_with_line(const char *tail)
{
	const char *p, *last = NULL;
	unsigned long pid;
	int n = 0;

	for (p = tail; (p = strstr(p, "procinfo pid=")) != NULL; p++)
		last = p;
	if (last == NULL || (last != tail && last[-1] != '\n'))
		return false;
	if (sscanf(last, "procinfo pid=%lu gen=1%n", &pid, &n) != 1 || n == 0)
		return false;
	return strspn(last + n, "\n") == strlen(last + n);
}

/*
 * CONTRACT G4, sipc.h struct sipc_result: the last diag_tail_bytes of
 * escaped text are kept per worker and attached as diag_tail to a
 * result settled by that worker's end.  procinfo writes one line per
 * request; twelve requests, then "exit" (its line, then _exit(3)): with
 * diag_tail_bytes 64 the tail is at most 64 bytes and ends with the
 * dying request's whole line; with the default 4096 all 13 lines are
 * there.
 */
/* rules: G4 */
static void
test_diag_tail_capped_keeps_newest(void)
{
	static const size_t tails[] = { 64, 4096 };
	struct sipc_request rq = { .payload = "hello", .len = 5 };
	struct sipc_request ex = { .payload = "exit", .len = 4 };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned k, i;

	for (k = 0; k < 2; k++) {
		st_cfg_base(&c, "procinfo", NULL, 1);
		c.diag_tail_bytes = tails[k];
		s = st_start(&c, 1, WAIT_MS);
		for (i = 0; i < 12; i++) {
			CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
			CU_ASSERT(r.outcome == SIPC_OUTCOME_OK);
			sipc_result_release(&r);
		}
		CU_ASSERT_FATAL(sipc_call(s, &ex, &r) == 0);
		CU_ASSERT(r.outcome == SIPC_OUTCOME_UNKNOWN &&
		    r.error == SIPC_E_WORKER_DIED);
		CU_ASSERT(r.exit.kind == SIPC_EXIT_CODE && r.exit.code == 3);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r.diag_tail);
		CU_ASSERT(strlen(r.diag_tail) <= tails[k]);
		CU_ASSERT(ends_with_line(r.diag_tail));
		if (tails[k] == 4096)
			TL_EQ(count_str(r.diag_tail,
			    "procinfo pid="), 13);
		if (!ends_with_line(r.diag_tail) || strlen(r.diag_tail) >
		    tails[k])
			fprintf(stderr, "tail %zu: [%s]\n", tails[k],
			    r.diag_tail);
		sipc_result_release(&r);
		sipc_destroy(s);
	}
}


int
main(void)
{
	st_no_core_files();
	tl_suite("diag", (tl_test[]){
	    { "test_diag_cut_exactly_at_line_max",
	      test_diag_cut_exactly_at_line_max },
	    { "test_diag_tail_capped_keeps_newest",
	      test_diag_tail_capped_keeps_newest },
	    { NULL, NULL } });
	return tl_run();
}
