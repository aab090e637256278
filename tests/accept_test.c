/*
 * accept_test.c - exact start evidence through the whole library: one
 * echo worker gets a batch of requests in a single read, one handler of
 * the batch kills the worker, and only that request may be reported
 * "may have run".  Real processes: the echo fixture, its execution log
 * (SIPC_EXEC_LOG, one line per handler started) and a FIFO gate
 * (SIPC_ECHO_GATE) that holds the worker after HELLO until the whole
 * batch sits in its socket.
 *
 * Threads: the CUnit thread drives; outcomes arrive in an st_outbox on
 * library threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wire/wire.h"
#include "rmtree.h"
#include "sipctest.h"

#define WAIT_MS 20000
#define MAXN 16

struct batch_run {
	sipc_supervisor *s;
	char dir[64], log[96], gate[96];
	char env_log[128], env_gate[128];
	const char *env[4];
	int gate_fd;
	char payload[MAXN][48];
	size_t len[MAXN];
	uint32_t crc[MAXN];
};

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* One echo worker (max_inflight 16), held at its gate after HELLO;
 * `hold0`: it writes every reply before its next handler (a reply hold
 * of 0, sipc_worker_set_reply_hold()). */
static void
run_start(struct batch_run *r, bool hold0)
{
	struct sipc_config c;

	memset(r, 0, sizeof(*r));
	r->gate_fd = -1;
	snprintf(r->dir, sizeof(r->dir), "/tmp/sipc-accept-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(r->dir) != NULL);
	snprintf(r->log, sizeof(r->log), "%s/exec.log", r->dir);
	snprintf(r->gate, sizeof(r->gate), "%s/gate", r->dir);
	CU_ASSERT_FATAL(mkfifo(r->gate, 0600) == 0);
	snprintf(r->env_log, sizeof(r->env_log), "SIPC_EXEC_LOG=%s", r->log);
	snprintf(r->env_gate, sizeof(r->env_gate), "SIPC_ECHO_GATE=%s",
	    r->gate);
	r->env[0] = r->env_log;
	r->env[1] = r->env_gate;
	r->env[2] = hold0 ? "SIPC_FX_REPLY_HOLD_US=0" : NULL;
	r->env[3] = NULL;
	st_cfg_base(&c, "echo", NULL, 1);
	c.env_set = r->env;
	c.max_inflight = 16;
	r->s = st_start(&c, 1, WAIT_MS);
}

struct written { unsigned n; };

/* Slot 0 has all n requests written to its socket (counted after the
 * send) and none answered. */
static bool
all_written(const struct sipc_stats *st, void *arg)
{
	const struct written *w = arg;

	return st->nworkers == 1 && st->workers[0].frames_out >= w->n &&
	    st->workers[0].inflight == w->n;
}

/* The worker waits in open() for a writer; a non-blocking open for
 * writing succeeds once it is there (ENXIO before). */
static bool
gate_open(void *arg)
{
	struct batch_run *r = arg;

	r->gate_fd = open(r->gate, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	return r->gate_fd >= 0;
}

/* How many execution-log lines name a payload with this checksum. */
static unsigned
runs_of(const char *log, uint32_t crc)
{
	unsigned long long id;
	unsigned len, c, n = 0;
	char line[128];
	FILE *f = fopen(log, "re");
	int pid;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%d %llu %u %x", &pid, &id, &len, &c) == 4 &&
		    c == crc)
			n++;
	fclose(f);
	return n;
}

#define NO_HANG UINT32_MAX

/*
 * Submit n requests together (request k makes the worker exit inside
 * its handler; request `hang` < k, if any, keeps its id and never
 * replies, as a handler that answers later would; bit i of idem marks
 * request i idempotent), let the worker read them in one go, and check
 * what start evidence promises: UNKNOWN exactly for the requests whose
 * handlers had started and not answered (the crashing one, the hanging
 * one); with `hold0`, every other request before the crash OK, and
 * without (the echo worker's reply hold), each of those OK or UNKNOWN with
 * "may have run" (its reply was still held), never run twice; every
 * request behind it never reported "may have run": it waits for the
 * restarted worker of the one slot and ends OK.
 * Every request ran exactly once by the execution log.
 */
static void
run_batch(unsigned n, unsigned k, unsigned idem, unsigned hang, bool hold0)
{
	static struct st_outslot slot[MAXN];
	struct written wr = { n };
	struct batch_run r;
	unsigned i, unknown = 0, held = 0;

	st_outbox_reset(&box);
	run_start(&r, hold0);
	for (i = 0; i < n; i++) {
		struct sipc_request req = { .timeout_ms = WAIT_MS };

		if (i == k) {
			/* "\0CMD" command: die inside the handler */
			memcpy(r.payload[i], "\0CMDcrash exit 3", 16);
			r.len[i] = 16;
		} else if (i == hang) {
			/* keep the id, reply never (a deferred reply) */
			memcpy(r.payload[i], "\0CMDhang", 8);
			r.len[i] = 8;
		} else {
			snprintf(r.payload[i], sizeof(r.payload[i]),
			    "batch %u crash %u request %u", n, k, i);
			r.len[i] = strlen(r.payload[i]);
		}
		r.crc[i] = sipc__crc32c(0, r.payload[i], r.len[i]);
		req.payload = r.payload[i];
		req.len = r.len[i];
		req.flags = (idem >> i) & 1 ? SIPC_REQ_IDEMPOTENT : 0;
		slot[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(r.s, &req, st_outbox_done,
		    &slot[i], NULL) == 0);
	}
	CU_ASSERT_FATAL(st_stats_wait(r.s, all_written, &wr, WAIT_MS));
	CU_ASSERT_FATAL(tl_wait_until(gate_open, &r, WAIT_MS));
	CU_ASSERT_FATAL(st_outbox_wait(&box, n, WAIT_MS));

	for (i = 0; i < n; i++) {
		struct sipc_result *res = &box.res[i];

		CU_ASSERT_EQUAL(box.calls[i], 1);
		unknown += res->outcome == SIPC_OUTCOME_UNKNOWN;
		if (i == hang) {
			/* started at its ACCEPT, never answered */
			CU_ASSERT_EQUAL(res->outcome, SIPC_OUTCOME_UNKNOWN);
			CU_ASSERT(res->may_have_run);
		} else if (i < k && !hold0 &&
		    res->outcome == SIPC_OUTCOME_UNKNOWN) {
			/* its reply died with the worker: started */
			CU_ASSERT_EQUAL(res->error, SIPC_E_WORKER_DIED);
			CU_ASSERT(res->may_have_run);
			held++;
		} else if (i < k) {
			CU_ASSERT_EQUAL(res->outcome, SIPC_OUTCOME_OK);
			CU_ASSERT(res->reply_len == r.len[i] &&
			    memcmp(res->reply, r.payload[i], r.len[i]) == 0);
		} else if (i == k) {
			CU_ASSERT_EQUAL(res->outcome, SIPC_OUTCOME_UNKNOWN);
			CU_ASSERT_EQUAL(res->error, SIPC_E_WORKER_DIED);
			CU_ASSERT(res->may_have_run);
		} else {
			/* Never started: requeued (to the restarted worker
			 * of this one slot) and answered, never refused. */
			CU_ASSERT_EQUAL(res->outcome, SIPC_OUTCOME_OK);
			CU_ASSERT(res->reply_len == r.len[i] &&
			    memcmp(res->reply, r.payload[i], r.len[i]) == 0);
		}
	}
	CU_ASSERT_EQUAL(unknown, (hang == NO_HANG ? 1 : 2) + held);

	/* Exactly once each, by the execution log the worker wrote. */
	for (i = 0; i < n; i++)
		CU_ASSERT_EQUAL(runs_of(r.log, r.crc[i]), 1);

	sipc_destroy(r.s);
	st_outbox_release(&box);
	if (r.gate_fd >= 0)
		close(r.gate_fd);
	CU_ASSERT_EQUAL(rmtree(r.dir), 0);
}

/* Issue scenario: 16 requests in one read, handler k = 0, 7, 15 crashes. */
/* rules: A2 */
static void
test_accept_crash_first_of_16(void)
{
	if (st_skip_sandboxed("shares files with the worker"))
		return;
	run_batch(16, 0, 0, NO_HANG, true);
}

/* rules: A2 */
static void
test_accept_crash_middle_of_16(void)
{
	if (st_skip_sandboxed("shares files with the worker"))
		return;
	run_batch(16, 7, 0, NO_HANG, true);
}

/* rules: A2 */
static void
test_accept_crash_last_of_16(void)
{
	if (st_skip_sandboxed("shares files with the worker"))
		return;
	run_batch(16, 15, 0, NO_HANG, true);
}

/* Eight requests together, request 0 exits inside its handler, half of
 * the seven behind it idempotent: exactly one UNKNOWN, and neither kind
 * of the others is "may have run". */
/* rules: A2 */
static void
test_accept_crash_first_of_8_half_idempotent(void)
{
	if (st_skip_sandboxed("shares files with the worker"))
		return;
	run_batch(8, 0, 0xaa, NO_HANG, true);
}

/* Handlers that answer later: request 2 keeps its id, request 5 exits.
 * "Started" is per request: 2 and 5 are UNKNOWN, 0, 1, 3, 4 OK, and
 * nothing behind 5 may have run. */
/* rules: A2 A3 */
static void
test_accept_deferred_reply_stays_started(void)
{
	if (st_skip_sandboxed("shares files with the worker"))
		return;
	run_batch(16, 5, 0, 2, true);
}

/*
 * The echo worker's reply hold (1000 us): the replies of cheap handlers
 * before the crash may have died with the worker.  Those requests are UNKNOWN and
 * "may have run" (they did, once, by the log), never re-run; the ones
 * behind the crash still never started.
 */
static void
test_accept_crash_middle_of_16_replies_held(void)
{
	if (st_skip_sandboxed("shares files with the worker"))
		return;
	run_batch(16, 7, 0, NO_HANG, false);
}

/* ------------------------------------------------ the final drain */

#define DRAIN_N 300                   /* answered before the crash */
/* Replies of 2000 bytes: more than one read of the reader's (64 KiB)
 * is in the socket when the worker dies. */
#define DRAIN_LEN 2000
/* Behind the crash, requests the worker never reads: it dies with them
 * in its socket, and the kernel reports ECONNRESET on the supervisor's
 * end once everything the worker wrote has been read. */
#define DRAIN_BEHIND 4
#define BEHIND_LEN 100000

/* A completion callback that takes 5 ms, as a host's bookkeeping may:
 * the reader falls behind the worker. */
static void
slow_done(void *arg, struct sipc_result *res)
{
	(void)usleep(5000);           /* work inside the callback */
	st_outbox_done(arg, res);
}

/*
 * A worker with ACCEPT frames (no start counter) answers 300 requests
 * and dies in the 301st; callbacks of 5 ms keep most replies and
 * ACCEPTs in the socket when it dies.  The final drain decodes all of
 * them, however long the callbacks take (they run after it): every
 * answered request ends OK on its first attempt, only the last is
 * UNKNOWN, and nothing ran twice.  The requests behind it, left unread
 * in the dead worker's socket (ECONNRESET on ours once all is read: the
 * end of its stream, not a cut), never started: they move and run once.
 * Before, the drain stopped after
 * 100 ms of callbacks without marking the stream cut, and every request
 * whose ACCEPT lay in the unread bytes was judged never started and ran
 * again.
 */
/* rules: T6 */
static void
test_accept_final_drain_reads_every_reply(void)
{
	static struct st_outslot slot[DRAIN_N + 1 + DRAIN_BEHIND];
	static char payload[DRAIN_N + 1][DRAIN_LEN];
	static char behind[DRAIN_BEHIND][BEHIND_LEN];
	static uint32_t crc[DRAIN_N + 1 + DRAIN_BEHIND];
	const char *env[4];
	char dir[] = "/tmp/sipc-drain-XXXXXX", log[64], env_log[96];
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned i, ok = 0, once = 0, first = 0, moved = 0;
	size_t len;

	if (st_skip_sandboxed("shares files with the worker"))
		return;
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(log, sizeof(log), "%s/exec.log", dir);
	snprintf(env_log, sizeof(env_log), "SIPC_EXEC_LOG=%s", log);
	env[0] = env_log;
	env[1] = "SIPC_FX_ACCEPT=frames";
	env[2] = "SIPC_FX_REPLY_HOLD_US=0";
	env[3] = NULL;
	st_outbox_reset(&box);
	st_cfg_base(&c, "echo", NULL, 1);
	c.env_set = env;
	c.max_inflight = 512;
	c.ring_frames = 512;
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i <= DRAIN_N; i++) {
		if (i == DRAIN_N) {
			memcpy(payload[i], "\0CMDcrash exit 3", 16);
			len = 16;
		} else {
			memset(payload[i], 'a' + (int)(i % 26), DRAIN_LEN);
			len = (size_t)snprintf(payload[i], DRAIN_LEN,
			    "drain request %u ", i);
			payload[i][len] = '.';
			len = DRAIN_LEN;
		}
		crc[i] = sipc__crc32c(0, payload[i], len);
		slot[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
		    .payload = payload[i], .len = len,
		    .timeout_ms = 3 * WAIT_MS }, slow_done, &slot[i],
		    NULL) == 0);
	}
	for (i = 0; i < DRAIN_BEHIND; i++) {
		unsigned k = DRAIN_N + 1 + i;

		memset(behind[i], 'A' + (int)i, BEHIND_LEN);
		crc[k] = sipc__crc32c(0, behind[i], BEHIND_LEN);
		slot[k] = (struct st_outslot){ &box, k };
		CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
		    .payload = behind[i], .len = BEHIND_LEN,
		    .timeout_ms = 3 * WAIT_MS }, slow_done, &slot[k],
		    NULL) == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, DRAIN_N + 1 + DRAIN_BEHIND,
	    3 * WAIT_MS));
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < DRAIN_N; i++) {
		ok += box.calls[i] == 1 &&
		    box.res[i].outcome == SIPC_OUTCOME_OK;
		first += box.res[i].attempts == 1;
	}
	CU_ASSERT_EQUAL(box.res[DRAIN_N].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(box.res[DRAIN_N].may_have_run);
	/* never started: moved (written and unread, or still queued when
	 * the worker died), OK on the restarted worker */
	for (i = DRAIN_N + 1; i < DRAIN_N + 1 + DRAIN_BEHIND; i++)
		moved += box.calls[i] == 1 &&
		    box.res[i].outcome == SIPC_OUTCOME_OK &&
		    box.res[i].generation == 2;
	pthread_mutex_unlock(&box.mu);
	for (i = 0; i < DRAIN_N + 1 + DRAIN_BEHIND; i++)
		once += runs_of(log, crc[i]) == 1;
	fprintf(stderr, "final drain: %u of %u OK, %u on the first attempt, "
	    "%u of %u behind the crash moved, %u of %u ran once\n", ok,
	    DRAIN_N, first, moved, DRAIN_BEHIND, once,
	    DRAIN_N + 1 + DRAIN_BEHIND);
	CU_ASSERT_EQUAL(ok, DRAIN_N);
	CU_ASSERT_EQUAL(first, DRAIN_N);
	CU_ASSERT_EQUAL(moved, DRAIN_BEHIND);
	CU_ASSERT_EQUAL(once, DRAIN_N + 1 + DRAIN_BEHIND);
	sipc_destroy(s);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(rmtree(dir), 0);
}

static const tl_test accept_tests[] = {
	{ "test_accept_crash_first_of_16", test_accept_crash_first_of_16 },
	{ "test_accept_crash_middle_of_16", test_accept_crash_middle_of_16 },
	{ "test_accept_crash_last_of_16", test_accept_crash_last_of_16 },
	{ "test_accept_crash_first_of_8_half_idempotent",
	  test_accept_crash_first_of_8_half_idempotent },
	{ "test_accept_deferred_reply_stays_started",
	  test_accept_deferred_reply_stays_started },
	{ "test_accept_crash_middle_of_16_replies_held",
	  test_accept_crash_middle_of_16_replies_held },
	{ "test_accept_final_drain_reads_every_reply",
	  test_accept_final_drain_reads_every_reply },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("accept", accept_tests);
	return tl_run();
}
