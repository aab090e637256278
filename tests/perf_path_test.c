/*
 * perf_path_test.c - the synchronous call's hot path: the one-shot
 * event a caller waits on, the direct path (a submitting thread writes
 * its own request when the channel is free, instead of waking the
 * writer), and what the direct path must keep: the wire never
 * interleaves two frames, a frame that does not fit is finished by the
 * writer, and a worker that stops reading never blocks a submitter.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads and touch only an st_outbox (its mutex).  The event
 * and non-blocking tests start threads of their own.  Waits are on
 * events with generous deadlines.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipc_int.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000
#define BIG (60 * 1024)         /* under the direct path's limit */

/* ------------------------------------------------------------ event */

static void
test_perf_path_event_set_before_wait(void)
{
	struct sipc__event ev;

	sipc__event_init(&ev);
	sipc__event_set(&ev);
	sipc__event_wait(&ev);          /* returns at once */
	sipc__event_wait(&ev);          /* and stays set */
	CU_PASS("set before wait");
}

/* Two threads hand a token back and forth through fresh events, the way
 * successive sipc_call()s reuse one stack address: every round must
 * see the value written before its event was set. */
struct pingpong {
	struct sipc__event *ev[2];
	unsigned value[2];
	atomic_int round;
};

#define PP_ROUNDS 20000

static void *
pp_thread(void *arg)
{
	struct pingpong *p = arg;
	struct sipc__event *ev;
	int r;

	for (r = 0; r < PP_ROUNDS; r++) {
		while (atomic_load(&p->round) != 2 * r + 1)
			sched_yield();
		ev = p->ev[0];
		p->value[0] = (unsigned)r;
		sipc__event_set(ev);
	}
	return NULL;
}

static void
test_perf_path_event_cross_thread(void)
{
	struct pingpong p;
	struct sipc__event ev;
	pthread_t th;
	unsigned bad = 0;
	int r;

	memset(&p, 0, sizeof(p));
	CU_ASSERT_FATAL(pthread_create(&th, NULL, pp_thread, &p) == 0);
	for (r = 0; r < PP_ROUNDS; r++) {
		sipc__event_init(&ev);
		p.ev[0] = &ev;
		p.value[0] = UINT32_MAX;
		atomic_store(&p.round, 2 * r + 1);
		sipc__event_wait(&ev);
		if (p.value[0] != (unsigned)r)
			bad++;
	}
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(bad, 0);
}

/* ------------------------------------------------------------ threads */

/* Voluntary context switches of this process's thread named `name`;
 * -1 when there is none. */
static long
thread_switches(const char *name)
{
	char path[300], comm[32], line[128];
	struct dirent *de;
	long v = -1;
	DIR *d;
	FILE *f;

	if ((d = opendir("/proc/self/task")) == NULL)
		return -1;
	while (v < 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
		    de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		if (strcmp(comm, name) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
		    de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
				break;
		fclose(f);
	}
	closedir(d);
	return v;
}

/*
 * A synchronous call on an idle worker is written by the caller itself:
 * the writer thread sleeps through all of them.  Before the direct
 * path, each call woke the writer (at least one switch a call).  The
 * reader must wake for every reply, which shows that the counts move.
 */
static void
test_perf_path_sync_call_leaves_writer_asleep(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	long w0, w1, r0, r1;
	const unsigned n = 500;
	char buf[64];
	unsigned i, ok = 0;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	memset(buf, 'x', sizeof(buf));
	struct sipc_request req = { .payload = buf, .len = sizeof(buf),
	    .timeout_ms = WAIT_MS };
	CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
	sipc_result_release(&r);
	w0 = thread_switches("sipc-wr0");
	r0 = thread_switches("sipc-rd0");
	CU_ASSERT_FATAL(w0 >= 0 && r0 >= 0);
	for (i = 0; i < n; i++) {
		CU_ASSERT_FATAL(sipc_call(s, &req, &r) == 0);
		ok += r.outcome == SIPC_OUTCOME_OK && r.reply_len == sizeof(buf);
		sipc_result_release(&r);
	}
	w1 = thread_switches("sipc-wr0");
	r1 = thread_switches("sipc-rd0");
	CU_ASSERT_EQUAL(ok, n);
	CU_ASSERT(r1 - r0 >= (long)n / 2);
	/* A handful, not one a call: nothing but the caller writes. */
	CU_ASSERT(w1 - w0 < (long)n / 10);
	if (w1 - w0 >= (long)n / 10)
		fprintf(stderr, "writer woke %ld times in %u calls\n",
		    w1 - w0, n);
	sipc_destroy(s);
}

/*
 * A writer with no room (max_inflight reached: the worker sleeps in its
 * one request) sleeps through the submits that fill its ring: a push
 * wakes it only when it could send.  Before, every push woke it for
 * nothing (one switch a submit).  Then everything is answered.
 */
static void
test_perf_path_full_writer_not_woken_per_submit(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	static struct st_outslot slots[101];
	struct sipc_config c;
	struct sipc_worker_stats ws;
	sipc_supervisor *s;
	long w0, w1;
	char buf[64];
	unsigned k;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	c.ring_frames = 128;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	memset(buf, 'y', sizeof(buf));
	slots[100] = (struct st_outslot){ &box, 100 };
	st_submit_cmd(s, "sleep 3000", WAIT_MS, &slots[100]);
	w0 = thread_switches("sipc-wr0");
	CU_ASSERT_FATAL(w0 >= 0);
	for (k = 0; k < 100; k++) {
		struct sipc_request req = { .payload = buf, .len = sizeof(buf),
		    .timeout_ms = WAIT_MS };

		slots[k] = (struct st_outslot){ &box, k };
		CU_ASSERT_FATAL(sipc_submit(s, &req, st_outbox_done,
		    &slots[k], NULL) == 0);
		/* Pacing, not waiting for an event: a writer woken for
		 * nothing gets the time to run and go back to sleep,
		 * which is what is counted. */
		usleep(2000);
	}
	w1 = thread_switches("sipc-wr0");
	ws = st_worker_stats(s, 0);
	/* Still in the sleep: the measure is only meaningful if so. */
	if (ws.completed == 0) {
		CU_ASSERT(w1 - w0 < 10);
		if (w1 - w0 >= 10)
			fprintf(stderr, "writer woke %ld times for 100 "
			    "submits\n", w1 - w0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, 101, WAIT_MS));
	for (k = 0; k <= 100; k++)
		CU_ASSERT(box.calls[k] == 1 &&
		    box.res[k].outcome == SIPC_OUTCOME_OK);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* ------------------------------------------------------- hand-off */

static uint8_t bigbuf[40][BIG];

static void
fill(unsigned k)
{
	for (size_t j = 0; j < BIG; j++)
		bigbuf[k][j] = (uint8_t)(k * 131 + j * 7 + (j >> 9));
}

/*
 * The worker sleeps in its first request while 40 large ones are
 * submitted: the first few fit in the socket, one is cut by a full
 * socket and finished by the writer, the rest queue behind it.  Every
 * reply must come back intact and in one piece (a frame interleaved
 * with another would corrupt both, or end the worker as a protocol
 * violation), each request written exactly once.
 */
static void
test_perf_path_direct_rest_finished_by_writer(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	static struct st_outslot slots[41];
	struct sipc_config c;
	struct sipc_worker_stats ws;
	sipc_supervisor *s;
	unsigned k, good = 0;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 64;
	c.max_payload = 2 * BIG;
	c.ring_frames = 64;
	c.ring_bytes = 64u * BIG;
	c.mem_ceiling = 256u * BIG;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	slots[40] = (struct st_outslot){ &box, 40 };
	st_submit_cmd(s, "sleep 300", WAIT_MS, &slots[40]);
	for (k = 0; k < 40; k++) {
		struct sipc_request req = { .payload = bigbuf[k], .len = BIG,
		    .timeout_ms = WAIT_MS };

		fill(k);
		slots[k] = (struct st_outslot){ &box, k };
		CU_ASSERT_FATAL(sipc_submit(s, &req, st_outbox_done,
		    &slots[k], NULL) == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, 41, WAIT_MS));
	for (k = 0; k < 40; k++)
		good += box.calls[k] == 1 &&
		    box.res[k].outcome == SIPC_OUTCOME_OK &&
		    box.res[k].attempts == 1 &&
		    box.res[k].reply_len == BIG &&
		    memcmp(box.res[k].reply, bigbuf[k], BIG) == 0;
	CU_ASSERT_EQUAL(good, 40);
	CU_ASSERT_EQUAL(box.res[40].outcome, SIPC_OUTCOME_OK);
	ws = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(ws.frames_out, 41);
	CU_ASSERT_EQUAL(ws.protocol_violations, 0);
	CU_ASSERT_EQUAL(ws.restarts, 0);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* ------------------------------------------------------- never blocks */

struct flood {
	sipc_supervisor *s;
	struct st_outslot *slots;
	unsigned n, accepted, full;
	atomic_bool done;
};

static void *
flood_thread(void *arg)
{
	struct flood *f = arg;
	unsigned k;
	int rc;

	for (k = 0; k < f->n; k++) {
		struct sipc_request req = { .payload = bigbuf[k % 40],
		    .len = BIG, .flags = SIPC_REQ_NOWAIT,
		    .timeout_ms = WAIT_MS };

		rc = sipc_submit(f->s, &req, st_outbox_done, &f->slots[k],
		    NULL);
		if (rc == 0)
			f->accepted++;
		else if (rc == SIPC_E_FULL)
			f->full++;
	}
	atomic_store(&f->done, true);
	return NULL;
}

static bool
flood_done(void *arg)
{
	return atomic_load(&((struct flood *)arg)->done);
}

/*
 * A worker that never reads again: the socket fills up.  Non-blocking
 * submits must all return (accepted while the ring has room, then
 * SIPC_E_FULL) long before the stall rule ends the worker: a caller that
 * writes for itself must never block in the write.  Then every accepted
 * request gets exactly one outcome.
 */
static void
test_perf_path_direct_write_never_blocks(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	static struct st_outslot slots[200];
	struct sipc_config c;
	struct sipc_result r;
	struct flood f;
	pthread_t th;
	unsigned k;

	st_cfg_base(&c, "echo", NULL, 1);
	c.stall_ms = 60000;            /* nothing ends the worker meanwhile */
	c.max_payload = 2 * BIG;
	c.ring_frames = 16;
	c.ring_bytes = 16u * BIG;
	c.mem_ceiling = 512u * BIG;
	c.max_inflight = 200;
	f.s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	st_call_cmd(f.s, NULL, WAIT_MS, 0, &r);     /* warm */
	sipc_result_release(&r);
	slots[0] = (struct st_outslot){ &box, 0 };
	st_submit_cmd(f.s, "stopread", WAIT_MS, &slots[0]);
	for (k = 1; k < 200; k++)
		slots[k] = (struct st_outslot){ &box, k };
	f.slots = slots + 1;
	f.n = 199;
	f.accepted = f.full = 0;
	atomic_init(&f.done, false);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, flood_thread, &f) == 0);
	CU_ASSERT(tl_wait_until(flood_done, &f, WAIT_MS));
	if (!atomic_load(&f.done)) {
		/* blocked in a write: end the worker to free the thread */
		sipc_destroy(f.s);
		pthread_join(th, NULL);
		st_outbox_release(&box);
		return;
	}
	pthread_join(th, NULL);
	CU_ASSERT(f.full > 0);
	CU_ASSERT_EQUAL(f.accepted + f.full, 199);
	sipc_destroy(f.s);
	/* destroy settles everything accepted: one outcome each */
	CU_ASSERT_EQUAL(st_outbox_total(&box), f.accepted + 1);
	for (k = 1; k < 200; k++)
		CU_ASSERT(box.calls[k] <= 1);
	st_outbox_release(&box);
}

int
main(void)
{
	tl_suite("perf_path", (tl_test[]){
	    { "test_perf_path_event_set_before_wait",
	      test_perf_path_event_set_before_wait },
	    { "test_perf_path_event_cross_thread",
	      test_perf_path_event_cross_thread },
	    { "test_perf_path_sync_call_leaves_writer_asleep",
	      test_perf_path_sync_call_leaves_writer_asleep },
	    { "test_perf_path_full_writer_not_woken_per_submit",
	      test_perf_path_full_writer_not_woken_per_submit },
	    { "test_perf_path_direct_rest_finished_by_writer",
	      test_perf_path_direct_rest_finished_by_writer },
	    { "test_perf_path_direct_write_never_blocks",
	      test_perf_path_direct_write_never_blocks },
	    { NULL, NULL } });
	return tl_run();
}
