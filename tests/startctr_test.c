/*
 * startctr_test.c - CONTRACT.md A5, the start counter, through the whole
 * library with real processes: the startctr fixture (a worker written
 * without the runtime) offers its counter in a chosen way in its first
 * generation and serves echo through the runtime afterwards.
 *
 * - A counter that is missing, unsealed, too short or not a memfd is
 *   refused at the handshake, said in the log, and its descriptor is
 *   closed; the next generation serves.
 * - What the counter says decides, when the worker dies, which of the
 *   requests written to it may have run: those at or before its value,
 *   and those it ACCEPTed; the others move and run once elsewhere.
 * - A descriptor sent with a HELLO that does not announce a counter, or
 *   with any later frame, is never kept by the supervisor.
 *
 * Threads: the CUnit thread; outcomes arrive in an st_outbox on library
 * threads.  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal/journal.h"
#include "rmtree.h"
#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000
#define NREQ 3                  /* what fixtures/startctr.c waits for */

/* Descriptors of this process that are a memfd the fixture made. */
static int
fixture_memfds(void)
{
	return tl_count_fds_to(0, "memfd:sipc-test-ctr");
}

/* A worker whose first generation offers an unfit counter: refused at
 * the handshake with `why` in the log; the second generation serves. */
static void
run_refused(const char *mode, const char *why)
{
	char *argv[] = { "startctr", (char *)mode, NULL };
	struct st_gen_want g = { 0, 2 };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_worker_stats ws;
	sipc_supervisor *s = NULL;
	char needle[160], err[256];

	st_cfg_base(&c, "startctr", argv, 1);
	st_log_reset();
	/* not st_start(): sipc_wait_ready() reports the first failure */
	CU_ASSERT_FATAL(sipc_create(&c, err, sizeof(err), &s) == 0);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_gen_ready, &g, WAIT_MS));
	snprintf(needle, sizeof(needle), "worker's start counter refused: %s",
	    why);
	CU_ASSERT(st_log_has(needle));
	CU_ASSERT(st_log_has("protocol violation: unfit start counter"));
	ws = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(ws.last_exit.kind, SIPC_EXIT_HANDSHAKE);
	CU_ASSERT_EQUAL(fixture_memfds(), 0);
	st_call_cmd(s, "x", WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/* rules: A5 */
static void
test_startctr_refused_without_descriptor(void)
{
	run_refused("none", "no descriptor came with the HELLO");
}

/* rules: A5 */
static void
test_startctr_refused_unsealed(void)
{
	run_refused("unsealed", "the memfd is not sealed against shrinking");
}

/* rules: A5 */
static void
test_startctr_refused_short(void)
{
	run_refused("short", "the memfd is shorter than 8 bytes");
}

/* rules: A5 */
static void
test_startctr_refused_not_memfd(void)
{
	run_refused("pipe", "the descriptor takes no seals (not a memfd)");
}

/*
 * NREQ requests written to a first generation that sets its counter to
 * `k` (and with `accept`, ACCEPTs the request after position k), then
 * dies.  The fixture logs the ids in arrival order; the requests at
 * positions 1..k (k+1 with `accept`) end UNKNOWN, may have run, and ran
 * nowhere else; the others move to the second generation and end OK on
 * their second attempt.
 */
static void
run_count(unsigned k, bool accept)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char mode[32], log[64], env[96], *envset[] = { env, NULL };
	char *argv[] = { "startctr", mode, NULL };
	struct st_outslot o[NREQ];
	unsigned long long order[NREQ];
	uint64_t ids[NREQ];
	unsigned i, j, started = k + (accept ? 1 : 0);
	struct sipc_config c;
	sipc_supervisor *s;
	FILE *f;
	int fd;

	if (st_skip_sandboxed("shares a file with the worker"))
		return;
	snprintf(mode, sizeof(mode), "count:%u%s", k, accept ? ":accept" : "");
	snprintf(log, sizeof(log), "/tmp/sipc-startctr-XXXXXX");
	CU_ASSERT_FATAL((fd = mkstemp(log)) >= 0);
	close(fd);
	snprintf(env, sizeof(env), "SIPC_STARTCTR_LOG=%s", log);
	st_outbox_reset(&box);
	st_cfg_base(&c, "startctr", argv, 1);
	c.env_set = (const char *const *)envset;
	c.max_inflight = 4;
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < NREQ; i++) {
		o[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
		    .payload = "data", .len = 4 }, st_outbox_done, &o[i],
		    &ids[i]) == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, NREQ, WAIT_MS));
	CU_ASSERT_FATAL((f = fopen(log, "re")) != NULL);
	for (i = 0; i < NREQ; i++)
		CU_ASSERT_FATAL(fscanf(f, "%llu", &order[i]) == 1);
	fclose(f);
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < NREQ; i++) {            /* arrival position i + 1 */
		struct sipc_result *r = NULL;

		for (j = 0; j < NREQ; j++)
			if (ids[j] == order[i])
				r = &box.res[j];
		CU_ASSERT_FATAL(r != NULL);
		if (i < started) {
			CU_ASSERT_EQUAL(r->outcome, SIPC_OUTCOME_UNKNOWN);
			CU_ASSERT(r->may_have_run);
			CU_ASSERT_EQUAL(r->attempts, 1);
		} else {
			CU_ASSERT_EQUAL(r->outcome, SIPC_OUTCOME_OK);
			CU_ASSERT_EQUAL(r->attempts, 2);
			CU_ASSERT(r->reply_len == 4 &&
			    memcmp(r->reply, "data", 4) == 0);
		}
	}
	pthread_mutex_unlock(&box.mu);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	unlink(log);
}

/* rules: A6 */
static void
test_startctr_counter_names_started(void)
{
	run_count(1, false);
}

/* rules: A6 */
static void
test_startctr_zero_means_none_started(void)
{
	run_count(0, false);
}

/* rules: A6 */
static void
test_startctr_accept_frame_counts_too(void)
{
	run_count(1, true);
}

/* A counter past every request written: all of them may have run. */
/* rules: A6 */
static void
test_startctr_past_the_end_all_started(void)
{
	run_count(NREQ, false);
}

/* Descriptors the supervisor did not ask for are not kept: one with a
 * HELLO that announces no counter is closed; one with a reply not
 * flagged SIPC_FRAME_F_FD is a protocol violation (F11), closed too,
 * and the next generation (the runtime) serves. */
static void
run_unasked(const char *mode, bool violation)
{
	char *argv[] = { "startctr", (char *)mode, NULL };
	struct st_gen_want g = { 0, 2 };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	st_cfg_base(&c, "startctr", argv, 1);
	s = st_start(&c, 1, WAIT_MS);
	if (violation) {
		st_call_cmd(s, "x", WAIT_MS, 0, &r);
		sipc_result_release(&r);
		CU_ASSERT_FATAL(st_stats_wait(s, st_pred_gen_ready, &g,
		    WAIT_MS));
		CU_ASSERT(st_log_has("a descriptor no frame claims"));
	}
	for (int i = 0; i < 20; i++) {
		st_call_cmd(s, "x", WAIT_MS, 0, &r);
		CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
		sipc_result_release(&r);
	}
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).generation, violation ? 2 : 1);
	CU_ASSERT_EQUAL(fixture_memfds(), 0);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/* rules: F11 */
static void
test_startctr_descriptor_without_flag_closed(void)
{
	run_unasked("noflag", false);
}

/* rules: F11 */
static void
test_startctr_descriptors_on_replies_not_taken(void)
{
	run_unasked("later", true);
}

/* -------------------------------------- positions and refused records */

/*
 * The writer's first journal sync of a chosen batch waits (a slow disk)
 * until another request's COMPLETED record is in the journal file.
 * Records are written before they are synced, so the file shows them;
 * the syncing thread holds no lock meanwhile.
 */
static struct {
	pthread_mutex_t mu;
	char path[PATH_MAX];          /* the journal file */
	uint64_t until_done;          /* hold until this id is COMPLETED */
	bool armed, held, gave_up;
} slow = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Does the journal file hold a COMPLETED record for `id`? */
static bool
journal_completed(const char *path, uint64_t id)
{
	static uint8_t buf[1 << 20];
	struct sipc__jrec rec;
	size_t off = 0, used, ext, len;
	ssize_t n;
	bool found = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	len = n > 0 ? (size_t)n : 0;
	while (off < len && sipc__jrec_decode(buf + off, len - off, &rec,
	    &used, &ext) == 0) {
		found |= rec.type == SIPC__JR_COMPLETED && rec.u.done.id == id;
		off += used;
	}
	return found;
}

/* The echo worker's execution log: lines "pid id len crc" naming `id`. */
static unsigned
exec_runs(const char *log, uint64_t id)
{
	unsigned long long got;
	unsigned n = 0;
	char line[128];
	FILE *f = fopen(log, "re");
	int pid;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		n += sscanf(line, "%d %llu", &pid, &got) == 2 && got == id;
	fclose(f);
	return n;
}

/* The worker waits in open() for a writer: a non-blocking open for
 * writing succeeds once it is there (ENXIO before). */
struct gate { const char *path; int fd; };

static bool
gate_open(void *arg)
{
	struct gate *g = arg;

	g->fd = open(g->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	return g->fd >= 0;
}

static void
slow_sync(int fd, bool data_only)
{
	char name[16] = "";
	int64_t end = tl_now_ms() + WAIT_MS;
	bool mine;

	(void)fd;
	if (!data_only)
		return;
	(void)pthread_getname_np(pthread_self(), name, sizeof(name));
	pthread_mutex_lock(&slow.mu);
	mine = slow.armed && strcmp(name, "sipc-wr0") == 0;
	slow.armed &= !mine;
	pthread_mutex_unlock(&slow.mu);
	if (!mine)
		return;
	while (!journal_completed(slow.path, slow.until_done) &&
	    tl_now_ms() < end)
		(void)usleep(1000);
	pthread_mutex_lock(&slow.mu);
	slow.held = true;
	slow.gave_up = tl_now_ms() >= end;
	pthread_mutex_unlock(&slow.mu);
}

static const struct sipc__jio_hook slow_hook = { .syncing = slow_sync };

/*
 * A request taken for a batch whose WRITTEN record is refused is not
 * sent, and takes no place on the channel.  One worker with a start
 * counter, the journal syncing every record; three requests queued
 * before its HELLO go out as one batch: A, then B whose deadline passes
 * while A's record syncs (its TIMEOUT is journalled first, so its
 * WRITTEN record is refused), then C, whose handler kills the worker.
 * C is the worker's second request: the counter says 2 and C holds
 * position 2, so it may have run: UNKNOWN, run once.  Before, C held
 * position 3, was judged never started, and ran again.
 */
/* rules: A7 */
static void
test_startctr_refused_record_takes_no_position(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char dir[] = "/tmp/sipc-startpos-XXXXXX", state[64];
	char gate[64], log[64], env_gate[96];
	char env_log[96], *envset[] = { env_gate, env_log,
	    "SIPC_FX_REPLY_HOLD_US=0", NULL };
	static const char crash[] = "\0CMDcrash abort";
	const char *pay[3] = { "first", "late", crash };
	struct gate g;
	size_t len[3] = { 5, 4, sizeof(crash) - 1 };
	struct st_outslot o[3];
	struct sipc_config c;
	uint64_t ids[3];
	sipc_supervisor *s;
	int i;

	if (st_skip_sandboxed("shares files with the worker"))
		return;
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(gate, sizeof(gate), "%s/gate", dir);
	snprintf(log, sizeof(log), "%s/exec.log", dir);
	snprintf(slow.path, sizeof(slow.path), "%s/journal", state);
	CU_ASSERT_FATAL(mkfifo(gate, 0600) == 0);
	snprintf(env_gate, sizeof(env_gate), "SIPC_ECHO_HELLO_GATE=%s", gate);
	snprintf(env_log, sizeof(env_log), "SIPC_EXEC_LOG=%s", log);
	st_outbox_reset(&box);
	st_cfg_base(&c, "echo", NULL, 1);
	c.env_set = (const char *const *)envset;
	c.state_dir = state;
	c.durability = SIPC_DURABLE_EACH;
	c.max_inflight = 8;
	c.handshake_ms = WAIT_MS;
	c.stall_ms = 60000;
	sipc__jio_hook = &slow_hook;
	CU_ASSERT_FATAL(sipc_create(&c, NULL, 0, &s) == 0);
	for (i = 0; i < 3; i++) {
		o[i] = (struct st_outslot){ &box, (unsigned)i };
		CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
		    .payload = pay[i], .len = len[i],
		    .timeout_ms = i == 1 ? 2000 : WAIT_MS }, st_outbox_done,
		    &o[i], &ids[i]) == 0);
	}
	pthread_mutex_lock(&slow.mu);
	slow.until_done = ids[1];
	slow.armed = true;
	slow.held = slow.gave_up = false;
	pthread_mutex_unlock(&slow.mu);
	/* The worker says HELLO once the gate is open: the three go out
	 * in the writer's first batch. */
	g = (struct gate){ gate, -1 };
	CU_ASSERT_FATAL(tl_wait_until(gate_open, &g, WAIT_MS));
	CU_ASSERT_FATAL(st_outbox_wait(&box, 3, WAIT_MS));
	pthread_mutex_lock(&slow.mu);
	CU_ASSERT(slow.held && !slow.gave_up);
	pthread_mutex_unlock(&slow.mu);
	pthread_mutex_lock(&box.mu);
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_OK);
	/* B was written (taken) when its deadline passed */
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT(box.res[1].may_have_run);
	CU_ASSERT_EQUAL(box.res[2].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(box.res[2].may_have_run);
	CU_ASSERT_EQUAL(box.res[2].attempts, 1);
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	sipc__jio_hook = NULL;
	/* Run once each, by the worker's own log: B never */
	CU_ASSERT_EQUAL(exec_runs(log, ids[0]), 1);
	CU_ASSERT_EQUAL(exec_runs(log, ids[1]), 0);
	CU_ASSERT_EQUAL(exec_runs(log, ids[2]), 1);
	st_outbox_release(&box);
	close(g.fd);
	CU_ASSERT_EQUAL(rmtree(dir), 0);
}

int
main(void)
{
	tl_suite("startctr", (tl_test[]){
	    { "test_startctr_refused_without_descriptor",
	      test_startctr_refused_without_descriptor },
	    { "test_startctr_refused_unsealed", test_startctr_refused_unsealed },
	    { "test_startctr_refused_short", test_startctr_refused_short },
	    { "test_startctr_refused_not_memfd",
	      test_startctr_refused_not_memfd },
	    { "test_startctr_counter_names_started",
	      test_startctr_counter_names_started },
	    { "test_startctr_zero_means_none_started",
	      test_startctr_zero_means_none_started },
	    { "test_startctr_accept_frame_counts_too",
	      test_startctr_accept_frame_counts_too },
	    { "test_startctr_past_the_end_all_started",
	      test_startctr_past_the_end_all_started },
	    { "test_startctr_descriptor_without_flag_closed",
	      test_startctr_descriptor_without_flag_closed },
	    { "test_startctr_descriptors_on_replies_not_taken",
	      test_startctr_descriptors_on_replies_not_taken },
	    { "test_startctr_refused_record_takes_no_position",
	      test_startctr_refused_record_takes_no_position },
	    { NULL, NULL } });
	return tl_run();
}
