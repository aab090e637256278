/*
 * recycle_test.c - planned recycling: max_requests and max_age_ms retire
 * a worker, which takes no new request, finishes those in flight, and
 * ends SIPC_EXIT_RECYCLED; it is started again at once, outside the
 * restart policy (no intensity, budget or cool-down charged), and the
 * stats count it by reason, not as a restart.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads and touch only an st_outbox (its mutex).  Waits are
 * on events with generous deadlines.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc.h"
#include "pool/pool.h"
#include "os/os.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

static sipc_supervisor *
start(unsigned workers, unsigned max_requests, unsigned max_age_ms,
      unsigned max_inflight, unsigned intensity)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, workers);
	c.max_requests = max_requests;
	c.max_age_ms = max_age_ms;
	c.max_inflight = max_inflight;
	if (intensity > 0) {
		c.restart_intensity = intensity;
		c.restart_window_ms = 600000;
		c.pool_restart_budget = intensity;
	}
	return st_start(&c, workers, WAIT_MS);
}

static bool
recycled_at_least(const struct sipc_stats *st, void *arg)
{
	return st->recycled_requests + st->recycled_age + st->recycled_rss >=
	    *(unsigned *)arg;
}

/*
 * max_requests 3, one worker, four places: eleven requests submitted at
 * once.  Each generation is given at most three; all eleven come back
 * OK; the worker was recycled (by requests) three times or more, as its
 * own exit kind, and no restart was counted.
 */
/* rules: P7 */
static void
test_recycle_after_max_requests(void)
{
	static struct st_outslot o[11];
	sipc_supervisor *s = start(1, 3, 0, 4, 0);
	unsigned per_gen[64] = { 0 }, i, ok = 0, over = 0, want = 3;
	struct sipc_worker_stats w;
	struct sipc_stats st;
	char buf[16];

	st_outbox_reset(&box);
	for (i = 0; i < 11; i++) {
		snprintf(buf, sizeof(buf), "r%u", i);
		struct sipc_request rq = { .payload = buf, .len = strlen(buf),
		    .timeout_ms = WAIT_MS };
		o[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o[i],
		    NULL) == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, 11, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < 11; i++) {
		ok += box.res[i].outcome == SIPC_OUTCOME_OK &&
		    box.res[i].attempts == 1;
		if (box.res[i].generation < 64)
			per_gen[box.res[i].generation]++;
	}
	pthread_mutex_unlock(&box.mu);
	for (i = 0; i < 64; i++)
		over += per_gen[i] > 3;
	TL_EQ(ok, 11);
	TL_EQ(over, 0);
	CU_ASSERT(st_stats_wait(s, recycled_at_least, &want, WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	w = st.workers[0];
	TL_EQ(w.last_exit.kind, SIPC_EXIT_RECYCLED);
	TL_EQ(w.last_exit.recycle, SIPC_RECYCLE_REQUESTS);
	TL_EQ(w.last_exit.reason, SIPC_TERM_POLICY);
	TL_EQ(w.restarts, 0);
	TL_EQ(st.restarts, 0);
	CU_ASSERT(w.recycles >= 3);
	TL_EQ(st.recycled_requests, w.recycles);
	TL_EQ(st.unknown, 0);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * A recycle after every request, with a restart intensity of 1 (a
 * second failure in ten minutes cools the slot down): eight calls in a
 * row all succeed, each on a generation of its own.  Counted against
 * the policy, the second would have been refused (UNAVAILABLE).
 */
/* rules: P7 */
static void
test_recycle_not_counted_against_intensity(void)
{
	sipc_supervisor *s = start(1, 1, 0, 1, 1);
	uint32_t last = 0;
	unsigned i, ok = 0, fresh = 0;
	struct sipc_result r;

	for (i = 0; i < 8; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		ok += r.outcome == SIPC_OUTCOME_OK;
		fresh += r.generation > last;
		last = r.generation;
		if (r.outcome != SIPC_OUTCOME_OK)
			fprintf(stderr, "call %u: outcome %d error %d\n", i,
			    (int)r.outcome, r.error);
		sipc_result_release(&r);
	}
	TL_EQ(ok, 8);
	TL_EQ(fresh, 8);
	TL_EQ(st_worker_stats(s, 0).restarts, 0);
	CU_ASSERT(st_worker_stats(s, 0).state != SIPC_WS_COOLDOWN);
	sipc_destroy(s);
}

/*
 * max_age_ms 400: a request running when the worker reaches its age is
 * finished (OK, not UNKNOWN), then the worker is recycled by age and
 * the next request runs on the next generation.
 */
/* rules: P7 */
static void
test_recycle_by_age_finishes_in_flight(void)
{
	static struct st_outslot o[2];
	sipc_supervisor *s = start(1, 0, 400, 4, 0);
	struct sipc_worker_stats w;
	struct sipc_result r;
	unsigned want = 1;
	uint32_t g0 = st_worker_stats(s, 0).generation;

	st_outbox_reset(&box);
	o[0] = (struct st_outslot){ &box, 0 };
	st_submit_cmd(s, "sleep 1000", WAIT_MS, &o[0]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	TL_EQ(box.res[0].outcome, SIPC_OUTCOME_OK);
	TL_EQ(box.res[0].generation, g0);
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT(st_stats_wait(s, recycled_at_least, &want, WAIT_MS));
	w = st_worker_stats(s, 0);
	TL_EQ(w.last_exit.kind, SIPC_EXIT_RECYCLED);
	TL_EQ(w.last_exit.recycle, SIPC_RECYCLE_AGE);
	TL_EQ(w.restarts, 0);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.generation > g0);
	sipc_result_release(&r);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * max_rss 100 MiB, a worker that keeps 64 MiB more at each request (the
 * margin covers a sanitizer's own resident memory): after the second its
 * tree holds over 128 MiB, and it is recycled by max_rss (read about once
 * a second) with both requests answered.
 */
/* rules: P7 */
static void
test_recycle_by_rss(void)
{
	char *const argv[] = { "memhog", "64", NULL };
	struct sipc_worker_stats w;
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned i, want = 1;

	st_cfg_base(&c, "memhog", argv, 1);
	c.max_rss = (size_t)100 << 20;
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < 2; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		TL_EQ(r.outcome, SIPC_OUTCOME_OK);
		TL_EQ(r.generation, 1);
		sipc_result_release(&r);
	}
	CU_ASSERT(st_stats_wait(s, recycled_at_least, &want, WAIT_MS));
	w = st_worker_stats(s, 0);
	TL_EQ(w.last_exit.kind, SIPC_EXIT_RECYCLED);
	TL_EQ(w.last_exit.recycle, SIPC_RECYCLE_RSS);
	TL_EQ(w.restarts, 0);
	TL_EQ(st_pool_stats(s).recycled_rss, 1);
	sipc_destroy(s);
}

/*
 * max_rss reads the worker cgroup's memory.current when the file is
 * there, and /proc only otherwise: a directory standing in for the
 * cgroup says 3 GiB, which this process's /proc does not; without the
 * file, the answer is this process's resident memory from /proc.
 */
static void
test_recycle_rss_cgroup_first(void)
{
	char dir[64], path[96];
	enum sipc__mem_src src = SIPC__MEM_PROC;
	uint64_t bytes = 0;
	int fd, dfd;

	snprintf(dir, sizeof(dir), "/tmp/sipc-rss-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	CU_ASSERT_FATAL((dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	TL_EQ(sipc__tree_mem(dfd, getpid(), &bytes, &src), 0);
	TL_EQ(src, SIPC__MEM_PROC);
	CU_ASSERT(bytes > 0 && bytes < (3ull << 30));
	snprintf(path, sizeof(path), "%s/memory.current", dir);
	CU_ASSERT_FATAL((fd = open(path, O_WRONLY | O_CREAT, 0600)) >= 0);
	CU_ASSERT_FATAL(write(fd, "3221225472\n", 11) == 11);
	close(fd);
	TL_EQ(sipc__tree_mem(dfd, getpid(), &bytes, &src), 0);
	TL_EQ(src, SIPC__MEM_CGROUP);
	TL_EQ(bytes, 3ull << 30);
	TL_EQ(sipc__tree_mem(-1, getpid(), &bytes, &src), 0);
	TL_EQ(src, SIPC__MEM_PROC);
	close(dfd);
	unlink(path);
	rmdir(dir);
}

/*
 * max_rss with a cgroup per worker (as root): the readings come from its
 * memory.current when the memory controller gives it one, else from
 * /proc, and never from the other.  Skipped without a cgroup.
 */
static void
test_recycle_rss_source(void)
{
	char *const argv[] = { "memhog", "64", NULL };
	char file[512];
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	struct stat sb;
	sipc_supervisor *s;
	unsigned want = 1;
	bool has;

	st_cfg_base(&c, "memhog", argv, 1);
	c.max_rss = (size_t)100 << 20;
	s = st_start(&c, 1, WAIT_MS);
	st = st_pool_stats(s);
	if (st.cgroup_path[0] == '\0') {
		sipc_destroy(s);
		tl_skip("no cgroup v2 here");
		return;
	}
	snprintf(file, sizeof(file), "%s/w0.g1/memory.current",
	    st.cgroup_path);
	has = stat(file, &sb) == 0;
	fprintf(stderr, "%s: %s\n", file, has ? "there" : "absent");
	atomic_store(&sipc__rss_reads[SIPC__MEM_CGROUP], 0);
	atomic_store(&sipc__rss_reads[SIPC__MEM_PROC], 0);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	sipc_result_release(&r);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, recycled_at_least, &want, WAIT_MS));
	CU_ASSERT(atomic_load(&sipc__rss_reads[has ? SIPC__MEM_CGROUP :
	    SIPC__MEM_PROC]) > 0);
	TL_EQ(atomic_load(&sipc__rss_reads[has ? SIPC__MEM_PROC :
	    SIPC__MEM_CGROUP]), 0);
	sipc_destroy(s);
}

/* Two workers, max_requests 2: what a retiring worker had queued goes to
 * the other or waits for its own next generation; every request is
 * answered once, OK, and no generation was given more than two. */
static void
test_recycle_pool_of_two(void)
{
	static struct st_outslot o[40];
	sipc_supervisor *s = start(2, 2, 0, 2, 0);
	unsigned i, ok = 0, over = 0, n[2][256];
	char buf[16];

	memset(n, 0, sizeof(n));
	st_outbox_reset(&box);
	for (i = 0; i < 40; i++) {
		snprintf(buf, sizeof(buf), "q%u", i);
		struct sipc_request rq = { .payload = buf, .len = strlen(buf),
		    .timeout_ms = WAIT_MS };
		o[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o[i],
		    NULL) == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, 40, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < 40; i++) {
		const struct sipc_result *r = &box.res[i];

		ok += box.calls[i] == 1 && r->outcome == SIPC_OUTCOME_OK &&
		    r->reply_len == strlen("q") + (i >= 10) + 1;
		if (r->worker_id < 2 && r->generation < 256)
			n[r->worker_id][r->generation]++;
	}
	pthread_mutex_unlock(&box.mu);
	for (i = 0; i < 256; i++)
		over += (n[0][i] > 2) + (n[1][i] > 2);
	TL_EQ(ok, 40);
	TL_EQ(over, 0);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* The keys load and are range-checked. */
static void
test_recycle_keys_load(void)
{
	char err[256];
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char *env[] = { "SIPC_MAX_REQUESTS=200", "SIPC_MAX_AGE_MS=60000",
	    NULL };
	char *bad[] = { "SIPC_MAX_AGE_MS=86400001", NULL };

	sipc_config_init(&c);
	TL_EQ(c.max_requests, 0);
	TL_EQ(c.max_age_ms, 0);
	TL_EQ(sipc_config_load_env(env, &c, &st, err, sizeof(err)), 0);
	TL_EQ(c.max_requests, 200);
	TL_EQ(c.max_age_ms, 60000);
	TL_EQ(sipc_config_load_env(bad, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "SIPC_MAX_AGE_MS") != NULL);
	TL_EQ(c.max_age_ms, 60000);
	sipc_config_store_free(st);
}

static const tl_test tests[] = {
	{ "test_recycle_after_max_requests", test_recycle_after_max_requests },
	{ "test_recycle_not_counted_against_intensity",
	  test_recycle_not_counted_against_intensity },
	{ "test_recycle_by_age_finishes_in_flight",
	  test_recycle_by_age_finishes_in_flight },
	{ "test_recycle_by_rss", test_recycle_by_rss },
	{ "test_recycle_rss_cgroup_first", test_recycle_rss_cgroup_first },
	{ "test_recycle_rss_source", test_recycle_rss_source },
	{ "test_recycle_pool_of_two", test_recycle_pool_of_two },
	{ "test_recycle_keys_load", test_recycle_keys_load },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("recycle", tests);
	return tl_run();
}
