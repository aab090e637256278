/*
 * accept_rule_test.c - CONTRACT.md A2 asserted on the evidence, not on
 * the outcome alone: a request the supervisor really WROTE to a worker
 * (counted in that worker's frames_out) which the worker never ACCEPTED
 * (it stopped reading: no ACCEPT arrived, and the worker's execution log
 * has no line for it) is, when that worker is ended, provably never
 * started: it moves to another worker, runs there exactly once, and ends
 * OK with attempts == 2; nothing but the stalled request itself is
 * UNKNOWN.
 *
 * Threads: the CUnit thread; completions land in an st_outbox (mutex
 * guarded).  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000
#define NREQ 8

static char exec_log[64];

/* Lines of the echo fixture's execution log: "pid id len crc". */
struct exec_line { long pid; unsigned long long id; };

static size_t
read_exec_log(struct exec_line *out, size_t max)
{
	FILE *f = fopen(exec_log, "re");
	size_t n = 0;

	if (f == NULL)
		return 0;
	while (n < max && fscanf(f, "%ld %llu %*s %*s", &out[n].pid,
	    &out[n].id) == 2)
		n++;
	fclose(f);
	return n;
}

/* Times request `id` started, and how many of those on `pid` (0: any). */
static unsigned
runs_of(unsigned long long id, long pid, unsigned *on_pid)
{
	struct exec_line l[256];
	size_t n = read_exec_log(l, 256), i;
	unsigned runs = 0;

	*on_pid = 0;
	for (i = 0; i < n; i++) {
		if (l[i].id != id)
			continue;
		runs++;
		if (l[i].pid == pid)
			(*on_pid)++;
	}
	return runs;
}

struct started { unsigned long long id; long pid; };

static bool
has_started(void *arg)
{
	struct started *st = arg;
	struct exec_line l[256];
	size_t n = read_exec_log(l, 256), i;

	for (i = 0; i < n; i++)
		if (l[i].id == st->id) {
			st->pid = l[i].pid;
			return true;
		}
	return false;
}

static int
slot_of_pid(sipc_supervisor *s, long pid)
{
	for (unsigned i = 0; i < 2; i++)
		if (st_worker_stats(s, i).pid == (pid_t)pid)
			return (int)i;
	return -1;
}

struct written_wait { sipc_supervisor *s; unsigned slot; uint64_t above; };

static bool
more_written(void *arg)
{
	struct written_wait *w = arg;

	return st_worker_stats(w->s, w->slot).frames_out > w->above;
}

/* The reader has counted HELLO and the stopread request's ACCEPT. */
static bool
accept_counted(void *arg)
{
	struct written_wait *w = arg;

	return st_worker_stats(w->s, w->slot).frames_in >= 2;
}

/* rules: A2 */
static void
test_accept_rule_written_unaccepted_moves(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	/* ACCEPT frames: the test counts them as they arrive. */
	char env[96], *envset[] = { env, "SIPC_FX_ACCEPT=frames", NULL };
	struct st_outslot o[NREQ + 1];
	struct sipc_worker_stats ws;
	struct written_wait ww;
	struct started stop = { 0, 0 };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	uint64_t written_to_w, accepted_by_w, ids[NREQ + 1];
	unsigned i, moved = 0, on_w, unknown = 0;
	int w, fd;

	if (st_skip_sandboxed("shares files with the worker"))
		return;
	snprintf(exec_log, sizeof(exec_log), "/tmp/sipc-a2-XXXXXX");
	CU_ASSERT_FATAL((fd = mkstemp(exec_log)) >= 0);
	close(fd);
	snprintf(env, sizeof(env), "SIPC_EXEC_LOG=%s", exec_log);
	st_outbox_reset(&box);
	st_cfg_base(&c, "echo", NULL, 2);
	c.env_set = (const char *const *)envset;
	c.max_inflight = 2;
	c.ring_frames = 8;
	c.stall_ms = 1000;
	/* The worker's own pid (from its execution log) names its slot. */
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = st_start(&c, 2, WAIT_MS);

	/* Worker W starts "stopread": its handler runs (logged) and never
	 * returns, so W reads nothing after that batch. */
	o[0] = (struct st_outslot){ &box, 0 };
	CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
	    .payload = "\0CMDstopread", .len = 12 }, st_outbox_done, &o[0],
	    &ids[0]) == 0);
	stop.id = ids[0];
	CU_ASSERT_FATAL(tl_wait_until(has_started, &stop, WAIT_MS));
	CU_ASSERT_FATAL((w = slot_of_pid(s, stop.pid)) >= 0);
	ww = (struct written_wait){ s, (unsigned)w, 0 };
	CU_ASSERT_FATAL(tl_wait_until(accept_counted, &ww, WAIT_MS));
	ws = st_worker_stats(s, (unsigned)w);
	CU_ASSERT_EQUAL(ws.frames_in, 2);
	written_to_w = ws.frames_out;          /* the stopread request */
	accepted_by_w = ws.frames_in;          /* HELLO + its ACCEPT */

	/* Requests that keep the other worker busy, so dispatch also
	 * writes to W (its load ties with the other's). */
	for (i = 1; i <= NREQ; i++) {
		o[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
		    .payload = "\0CMDsleep 100", .len = 13 }, st_outbox_done,
		    &o[i], &ids[i]) == 0);
	}
	ww = (struct written_wait){ s, (unsigned)w, written_to_w };
	CU_ASSERT_FATAL(tl_wait_until(more_written, &ww, WAIT_MS));
	ws = st_worker_stats(s, (unsigned)w);
	/* Written to W: frames_out grew (max_inflight 2: by one). */
	CU_ASSERT_EQUAL(ws.frames_out, written_to_w + 1);
	/* Not accepted: W sent nothing since (no ACCEPT, no reply). */
	CU_ASSERT_EQUAL(ws.frames_in, accepted_by_w);
	CU_ASSERT_EQUAL(ws.generation, 1);

	/* W is found stalled and ended; everything completes. */
	CU_ASSERT_FATAL(st_outbox_wait(&box, NREQ + 1, WAIT_MS));
	ws = st_worker_stats(s, (unsigned)w);
	CU_ASSERT(ws.generation >= 2);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[0].error, SIPC_E_STALL);
	for (i = 1; i <= NREQ; i++) {
		struct sipc_result *r = &box.res[i];

		CU_ASSERT_EQUAL(box.calls[i], 1);
		CU_ASSERT_EQUAL(r->outcome, SIPC_OUTCOME_OK);
		if (r->outcome == SIPC_OUTCOME_UNKNOWN)
			unknown++;
		/* ran exactly once, and never on W's first generation */
		CU_ASSERT_EQUAL(runs_of(ids[i], stop.pid, &on_w), 1);
		CU_ASSERT_EQUAL(on_w, 0);
		if (r->attempts == 2)
			moved++;
		else
			CU_ASSERT_EQUAL(r->attempts, 1);
	}
	/* exactly the one request written to W and never accepted moved */
	CU_ASSERT_EQUAL(moved, 1);
	CU_ASSERT_EQUAL(unknown, 0);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.requeued >= 1);
	CU_ASSERT_EQUAL(st.unknown, 1);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	unlink(exec_log);
}

int
main(void)
{
	tl_suite("accept_rule", (tl_test[]){
	    { "test_accept_rule_written_unaccepted_moves",
	      test_accept_rule_written_unaccepted_moves },
	    { NULL, NULL } });
	return tl_run();
}
