/*
 * request_figures_test.c - struct sipc_result's queue_us and run_us:
 * the wait before the first write and the time from that write to the
 * outcome, each inside the wall time the caller saw; 0 run time for a
 * request never written; the pool's sums in sipc_stats are exactly the
 * sums of its results.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads and touch only an st_outbox (its mutex).  Waits are
 * on events with generous deadlines; no upper bound on a figure (they
 * depend on the machine's load), only what the mechanism makes true.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

/*
 * One worker, one request at a time: a 600 ms sleep, then a 300 ms
 * sleep queued behind it, then one with a 100 ms queue budget that never
 * gets written.  The second waited at least the first's sleep and ran at
 * least its own; the third ran 0 and waited at least its budget; each
 * request's two figures fit inside the time from before its submit to
 * after all outcomes; the stats' sums are the results' sums.
 */
static void
test_request_figures_queue_and_run(void)
{
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	int64_t t[3], end;
	uint64_t qsum = 0, rsum = 0;
	unsigned i;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	t[0] = tl_now_us();
	(void)st_submit_cmd_opts(s, "sleep 600", WAIT_MS, 0, 0, &o[0]);
	t[1] = tl_now_us();
	(void)st_submit_cmd_opts(s, "sleep 300", WAIT_MS, 0, 0, &o[1]);
	t[2] = tl_now_us();
	(void)st_submit_cmd_opts(s, "pid", WAIT_MS, 0, 100, &o[2]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 3, WAIT_MS));
	end = tl_now_us();
	pthread_mutex_lock(&box.mu);
	TL_EQ(box.res[0].outcome, SIPC_OUTCOME_OK);
	TL_EQ(box.res[1].outcome, SIPC_OUTCOME_OK);
	TL_EQ(box.res[2].error, SIPC_E_QUEUE_TIMEOUT);
	CU_ASSERT(box.res[0].run_us >= 600000);
	CU_ASSERT(box.res[1].run_us >= 300000);
	/* written only once the first had its reply */
	CU_ASSERT(box.res[1].queue_us + (uint64_t)(t[1] - t[0]) >= 600000);
	TL_EQ(box.res[2].run_us, 0);
	/* budgets count in whole ms of the monotonic clock */
	CU_ASSERT(box.res[2].queue_us >= 99000);
	for (i = 0; i < 3; i++) {
		CU_ASSERT(box.res[i].queue_us + box.res[i].run_us <=
		    (uint64_t)(end - t[i]));
		qsum += box.res[i].queue_us;
		rsum += box.res[i].run_us;
		fprintf(stderr, "request %u: queue %llu us, run %llu us\n", i,
		    (unsigned long long)box.res[i].queue_us,
		    (unsigned long long)box.res[i].run_us);
	}
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.queue_us_sum, qsum);
	TL_EQ(st.run_us_sum, rsum);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* A synchronous call's result carries them too. */
static void
test_request_figures_in_call(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int64_t t0, dt;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	t0 = tl_now_us();
	st_call_cmd(s, "sleep 200", WAIT_MS, 0, &r);
	dt = tl_now_us() - t0;
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.run_us >= 200000);
	CU_ASSERT(r.queue_us + r.run_us <= (uint64_t)dt);
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* ------------------------------------------- CPU time and peak memory */

#define BURN_MS 200             /* CPU time a "work" request uses */
#define TOUCH_MIB 64            /* memory it touches */

/* One call of `cmd` ("work" when NULL) on a pool of one with
 * request_figures, cgroups and containment as given; the result in *r,
 * the stats after it in *st.  False (skipped) when the worker did not
 * get the containment asked for (AUTO: a namespace mode). */
static bool
fig_call(const char *cmd, unsigned figures, enum sipc_cgroup_mode cg,
         enum sipc_containment cont, struct sipc_result *r,
         struct sipc_stats *st)
{
	char work[64];
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	c.request_figures = figures;
	c.cgroup = cg;
	c.containment = cont;
	s = st_start(&c, 1, WAIT_MS);
	if (cont == SIPC_CONTAIN_AUTO &&
	    st_worker_stats(s, 0).containment == SIPC_CONTAIN_PROCESS_GROUP) {
		sipc_destroy(s);
		tl_skip("no namespace mode here: the worker tree is not closed");
		return false;
	}
	snprintf(work, sizeof(work), "work %d %d", BURN_MS, TOUCH_MIB);
	if (cmd == NULL)
		cmd = work;
	st_call_cmd(s, cmd, WAIT_MS, 0, r);
	TL_EQ(r->outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_FATAL(sipc_stats_get(s, st) == 0);
	fprintf(stderr, "%s, figures %u: cpu %llu us, peak %llu KiB "
	    "(known %#x)\n", cmd, figures, (unsigned long long)r->cpu_us,
	    (unsigned long long)r->peak_rss_kb, r->figures);
	sipc_destroy(s);
	return true;
}

/* A request alone on its worker, burning 200 ms of CPU and touching
 * 64 MiB: both figures known (the CPU from /proc without a cgroup),
 * each at least most of what the worker used; the stats sum them. */
static void
request_figures_measured(enum sipc_cgroup_mode cg)
{
	struct sipc_result r;
	struct sipc_stats st;

	if (!fig_call(NULL, 1, cg, SIPC_CONTAIN_AUTO, &r, &st))
		return;
	CU_ASSERT(r.figures & SIPC_FIG_CPU);
	CU_ASSERT(r.cpu_us >= BURN_MS * 1000 * 3 / 4);
	CU_ASSERT(r.figures & SIPC_FIG_PEAK_RSS);
	CU_ASSERT(r.peak_rss_kb >= TOUCH_MIB * 1024 * 3 / 4);
	TL_EQ(st.cpu_known, 1);
	TL_EQ(st.cpu_us_sum, r.cpu_us);
	TL_EQ(st.peak_rss_known, 1);
	TL_EQ(st.peak_rss_kb_sum, r.peak_rss_kb);
	sipc_stats_release(&st);
	sipc_result_release(&r);
}

/* rules: R11 */
static void
test_request_figures_cpu_and_peak(void)
{
	request_figures_measured(SIPC_CGROUP_OFF);
}

/* The same with a cgroup per worker where one can be made (as root):
 * the CPU time is its cpu.stat's. */
static void
test_request_figures_cgroup(void)
{
	request_figures_measured(SIPC_CGROUP_AUTO);
}

/* With a cgroup per worker, the CPU time of a process that left the
 * worker's tree during the request (an orphaned grandchild, in
 * process-group containment: no sipc-init reaps it) is counted: the
 * /proc walk cannot see it once it is reparented, the cgroup's cpu.stat
 * counts every process that ran in it.  Skipped without a cgroup. */
static void
test_request_figures_cgroup_counts_orphan(void)
{
	char cmd[64];
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;

	if (st_skip_sandboxed("process-group containment"))
		return;
	st_cfg_base(&c, "echo", NULL, 1);
	c.request_figures = 1;
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = st_start(&c, 1, WAIT_MS);
	st = st_pool_stats(s);
	if (st.cgroup_path[0] == '\0') {
		char why[200];

		snprintf(why, sizeof(why), "no cgroup v2 here: %s",
		    st.cgroup_why);
		sipc_destroy(s);
		tl_skip(why);
		return;
	}
	snprintf(cmd, sizeof(cmd), "workaway %d", BURN_MS);
	st_call_cmd(s, cmd, WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	fprintf(stderr, "orphan's CPU: %llu us (known %#x)\n",
	    (unsigned long long)r.cpu_us, r.figures);
	CU_ASSERT(r.figures & SIPC_FIG_CPU);
	CU_ASSERT(r.cpu_us >= BURN_MS * 1000 * 3 / 4);
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* Without a cgroup, in process-group containment, an orphan of the
 * tree is reaped outside it, where /proc no longer links it to the
 * worker: neither figure is exact, so neither is given. */
static void
test_request_figures_open_tree_unknown(void)
{
	struct sipc_result r;
	struct sipc_stats st;

	if (st_skip_sandboxed("process-group containment"))
		return;
	(void)fig_call(NULL, 1, SIPC_CGROUP_OFF, SIPC_CONTAIN_PROCESS_GROUP,
	    &r, &st);
	TL_EQ(r.figures, 0);
	TL_EQ(r.cpu_us, 0);
	TL_EQ(r.peak_rss_kb, 0);
	TL_EQ(st.cpu_known, 0);
	sipc_stats_release(&st);
	sipc_result_release(&r);
}

/* A child that touched 64 MiB and was waited for during the request:
 * its CPU time is in its parent's cutime (known), its peak in nobody's
 * VmHWM (not known, 0), without a cgroup. */
static void
test_request_figures_waited_child(void)
{
	char cmd[64];
	struct sipc_result r;
	struct sipc_stats st;

	snprintf(cmd, sizeof(cmd), "workchild %d", TOUCH_MIB);
	if (!fig_call(cmd, 1, SIPC_CGROUP_OFF, SIPC_CONTAIN_AUTO, &r, &st))
		return;
	CU_ASSERT(r.figures & SIPC_FIG_CPU);
	CU_ASSERT(!(r.figures & SIPC_FIG_PEAK_RSS));
	TL_EQ(r.peak_rss_kb, 0);
	TL_EQ(st.peak_rss_known, 0);
	sipc_stats_release(&st);
	sipc_result_release(&r);
}

/* request_figures 0 (the default): nothing measured, all 0. */
static void
test_request_figures_off(void)
{
	struct sipc_result r;
	struct sipc_stats st;

	if (!fig_call(NULL, 0, SIPC_CGROUP_AUTO, SIPC_CONTAIN_AUTO, &r, &st))
		return;
	TL_EQ(r.figures, 0);
	TL_EQ(r.cpu_us, 0);
	TL_EQ(r.peak_rss_kb, 0);
	TL_EQ(st.cpu_known, 0);
	TL_EQ(st.cpu_us_sum, 0);
	sipc_stats_release(&st);
	sipc_result_release(&r);
}

struct gate { char path[96]; int fd; };

/* The worker waits in open() for a writer (SIPC_ECHO_GATE); a
 * non-blocking open for writing succeeds once it is there. */
static bool
gate_open(void *arg)
{
	struct gate *g = arg;

	g->fd = open(g->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	return g->fd >= 0;
}

static bool
two_written(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->nworkers == 1 && st->workers[0].frames_out >= 2 &&
	    st->workers[0].inflight == 2;
}

/* Two requests pipelined on one worker (both written before it reads
 * either, held at its gate): neither was alone, so neither is measured,
 * and the sums stay 0. */
/* rules: R11 */
static void
test_request_figures_pipelined_unknown(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	char dir[64], env_gate[128];
	const char *env[2] = { env_gate, NULL };
	struct gate g = { .fd = -1 };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned i;

	if (st_skip_sandboxed("shares a FIFO with the worker"))
		return;
	snprintf(dir, sizeof(dir), "/tmp/sipc-figures-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(g.path, sizeof(g.path), "%s/gate", dir);
	CU_ASSERT_FATAL(mkfifo(g.path, 0600) == 0);
	snprintf(env_gate, sizeof(env_gate), "SIPC_ECHO_GATE=%s", g.path);
	st_cfg_base(&c, "echo", NULL, 1);
	c.env_set = env;
	c.max_inflight = 4;
	c.request_figures = 1;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	for (i = 0; i < 2; i++)
		(void)st_submit_cmd_opts(s, "work 50 8", WAIT_MS, 0, 0, &o[i]);
	CU_ASSERT_FATAL(st_stats_wait(s, two_written, NULL, WAIT_MS));
	CU_ASSERT_FATAL(tl_wait_until(gate_open, &g, WAIT_MS));
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < 2; i++) {
		TL_EQ(box.res[i].outcome, SIPC_OUTCOME_OK);
		TL_EQ(box.res[i].figures, 0);
		TL_EQ(box.res[i].cpu_us, 0);
		TL_EQ(box.res[i].peak_rss_kb, 0);
	}
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.cpu_known, 0);
	TL_EQ(st.peak_rss_known, 0);
	TL_EQ(st.cpu_us_sum, 0);
	TL_EQ(st.peak_rss_kb_sum, 0);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
	close(g.fd);
	unlink(g.path);
	rmdir(dir);
}

static bool
one_in_flight(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->nworkers == 1 && st->workers[0].inflight == 1;
}

/* A request written while another is in flight on its worker (one that
 * never answers): not alone, not measured. */
/* rules: R11 */
static void
test_request_figures_behind_another(void)
{
	struct st_outslot o = { &box, 0 };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	c.request_figures = 1;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	(void)st_submit_cmd_opts(s, "hang", WAIT_MS, 0, 0, &o);
	CU_ASSERT_FATAL(st_stats_wait(s, one_in_flight, NULL, WAIT_MS));
	st_call_cmd(s, "work 50 8", WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_EQ(r.figures, 0);
	TL_EQ(r.cpu_us, 0);
	TL_EQ(r.peak_rss_kb, 0);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.cpu_known, 0);
	TL_EQ(st.cpu_us_sum, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
	st_outbox_release(&box);
}

/* One request after another on one worker, each alone: each measured,
 * and the stats' sums and counts are exactly the results'. */
static void
test_request_figures_sums(void)
{
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	uint64_t cpu = 0, peak = 0, ncpu = 0, npeak = 0;
	unsigned i;

	st_cfg_base(&c, "echo", NULL, 1);
	c.request_figures = 1;
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < 3; i++) {
		st_call_cmd(s, "work 20 4", WAIT_MS, 0, &r);
		TL_EQ(r.outcome, SIPC_OUTCOME_OK);
		CU_ASSERT(r.figures & SIPC_FIG_CPU);
		if (r.figures & SIPC_FIG_CPU) {
			cpu += r.cpu_us;
			ncpu++;
		}
		if (r.figures & SIPC_FIG_PEAK_RSS) {
			peak += r.peak_rss_kb;
			npeak++;
		}
		sipc_result_release(&r);
	}
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.cpu_known, ncpu);
	TL_EQ(st.cpu_us_sum, cpu);
	TL_EQ(st.peak_rss_known, npeak);
	TL_EQ(st.peak_rss_kb_sum, peak);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

static const tl_test tests[] = {
	{ "test_request_figures_cpu_and_peak",
	  test_request_figures_cpu_and_peak },
	{ "test_request_figures_cgroup", test_request_figures_cgroup },
	{ "test_request_figures_cgroup_counts_orphan",
	  test_request_figures_cgroup_counts_orphan },
	{ "test_request_figures_open_tree_unknown",
	  test_request_figures_open_tree_unknown },
	{ "test_request_figures_waited_child",
	  test_request_figures_waited_child },
	{ "test_request_figures_off", test_request_figures_off },
	{ "test_request_figures_pipelined_unknown",
	  test_request_figures_pipelined_unknown },
	{ "test_request_figures_behind_another",
	  test_request_figures_behind_another },
	{ "test_request_figures_sums", test_request_figures_sums },
	{ "test_request_figures_queue_and_run",
	  test_request_figures_queue_and_run },
	{ "test_request_figures_in_call", test_request_figures_in_call },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("request_figures", tests);
	return tl_run();
}
