/*
 * sipc_spawn_contained.c - the `spawn_contained` section of sipc_bench:
 * 256 workers ready in the containment raw_spawn_contained starts
 * without the library (a PID namespace under sipc-init, a leaf cgroup
 * per worker where the supervisor can make one), each round followed by
 * a round of that bare start in this same process (spawn_contained.h,
 * its `same` way), so both see the same machine minute by minute; run.sh
 * forms spawn_256_ready_vs_same_containment_at_once from the two.
 *
 * The `scale` section runs the default configuration, which here falls
 * back to a process group when sipc-init is not installed; this section
 * asks for SIPC_CONTAIN_PID_NAMESPACE with init_path = BENCH_INIT, so
 * both sides start the same processes.  Per round (5, quick 1):
 * sipc_create() to sipc_wait_ready(256), and the supervisor's CPU over
 * that interval (getrusage(RUSAGE_SELF): every library thread; the
 * children's own CPU is theirs), divided by 256.  Figures:
 *   sipc_spawn_contained_256_ready_r<k>, _ready (median, ms)
 *   sipc_spawn_contained_256_cpu_per_worker (median, us)
 *   sipc_spawn_contained_256_bare_ready_r<k>, _bare_ready (median, ms),
 *   sipc_spawn_contained_256_bare_cpu_per_worker (median, us): the bare
 *   start's rounds (after the library's threads are joined: one thread)
 *   sipc_spawn_contained_256_live_same_ready, _live_noexec_ready (ms),
 *   _live_noexec_faults_per_worker, _live_rss (kB): both bare ways again
 *   while the round's supervisor still runs (live_round)
 * and a note with what worker 0 got (containment, cgroup).
 *
 * Threads: the main thread; the library's own.
 */
#include <sys/resource.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"
#include "spawn_contained.h"

#define ROUNDS_MAX 5

static double
self_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* What worker 0 got: 0, or -1 when it is not the namespace asked for. */
static int
check_got(sipc_supervisor *s, bool say)
{
	struct sipc_stats st;
	int rc = -1;

	if (sipc_stats_get(s, &st) < 0)
		return -1;
	if (st.nworkers > 0) {
		const struct sipc_worker_stats *w = &st.workers[0];

		if (say)
			notef("spawn_contained: workers got %s, %s",
			    sipc_containment_name(w->containment),
			    w->cgroup ? "a cgroup each" : "no cgroup");
		rc = w->containment == SIPC_CONTAIN_PID_NAMESPACE ? 0 : -1;
	}
	sipc_stats_release(&st);
	return rc;
}

static double
self_minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_minflt;
}

/*
 * While a supervisor of 256 workers runs (513 library threads, its
 * memory): the bare start `same`, then `noexec`, whose child is a copy
 * of this process, so the exec it saves is priced against the page
 * tables of a real supervisor, and this process's minor faults over it
 * (the copy-on-write its threads pay) per worker.  1 when measured, 0
 * (and a note) when not.
 */
static unsigned
live_round(unsigned r, double *ret_same, double *ret_noexec,
    double *ret_flt, double *ret_rss)
{
	struct fig f;
	char why[256];
	double flt0;

	*ret_rss = (double)bench_rss_kb(0);
	if (sc_round(false, 100 + r, &f, why, sizeof(why)) < 0)
		goto fail;
	*ret_same = f.ready;
	flt0 = self_minflt();
	if (sc_round(true, 200 + r, &f, why, sizeof(why)) < 0)
		goto fail;
	*ret_noexec = f.ready;
	*ret_flt = (self_minflt() - flt0) / NW;
	return 1;
fail:
	notef("spawn_contained: the bare start beside a live supervisor "
	    "failed: %s", why);
	return 0;
}

int
sec_spawn_contained(void)
{
	unsigned rounds = O.quick ? 1 : ROUNDS_MAX, r;
	double ready[ROUNDS_MAX], cpu[ROUNDS_MAX], c0;
	double bready[ROUNDS_MAX], bcpu[ROUNDS_MAX];
	double lsame[ROUNDS_MAX], lnoexec[ROUNDS_MAX], lflt[ROUNDS_MAX];
	double lrss[ROUNDS_MAX];
	unsigned nlive = 0;
	struct fig bf;
	char why[256] = "";
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	enum sipc_containment got;
	uint64_t t0;

	if (sc_setup(O.init_path, O.echo) < 0)
		return -1;
	/* One worker first: a machine without PID namespaces (or without
	 * sipc-init) gets a note, not a failure. */
	if (contain_probe(SIPC_CONTAIN_PID_NAMESPACE, O.init_path, &got, why,
	    sizeof(why)) < 0 || got != SIPC_CONTAIN_PID_NAMESPACE) {
		notef("spawn_contained: not available here (init %s): %s",
		    O.init_path, why[0] ? why : "no worker in a PID namespace");
		return 0;
	}

	for (r = 0; r < rounds; r++) {
		cfg_base(&c, NW);
		c.containment = SIPC_CONTAIN_PID_NAMESPACE;
		c.init_path = O.init_path;
		c0 = self_cpu_us();
		t0 = bench_now_ns();
		if (sup_start(&c, 120000, &s) < 0)
			return -1;
		ready[r] = ms_since(t0);
		cpu[r] = (self_cpu_us() - c0) / NW;
		if (check_got(s, r == 0) < 0) {
			notef("spawn_contained: workers not in a PID namespace");
			sipc_destroy(s);
			return -1;
		}
		if (nlive == r)
			nlive += live_round(r, &lsame[r], &lnoexec[r],
			    &lflt[r], &lrss[r]);
		sipc_destroy(s);
		metricf(ready[r], "ms", "sipc_spawn_contained_256_ready_r%u",
		    r + 1);
		if (sc_round(false, r, &bf, why, sizeof(why)) < 0) {
			notef("spawn_contained: the bare start failed: %s", why);
			return -1;
		}
		bready[r] = bf.ready;
		bcpu[r] = bf.cpu;
		metricf(bready[r], "ms", "sipc_spawn_contained_256_bare_ready_r%u",
		    r + 1);
	}
	metricf(bench_median(ready, rounds), "ms",
	    "sipc_spawn_contained_256_ready");
	metricf(bench_median(cpu, rounds), "us",
	    "sipc_spawn_contained_256_cpu_per_worker");
	metricf(bench_median(bready, rounds), "ms",
	    "sipc_spawn_contained_256_bare_ready");
	metricf(bench_median(bcpu, rounds), "us",
	    "sipc_spawn_contained_256_bare_cpu_per_worker");
	if (nlive == 0)
		return 0;
	metricf(bench_median(lsame, nlive), "ms",
	    "sipc_spawn_contained_256_live_same_ready");
	metricf(bench_median(lnoexec, nlive), "ms",
	    "sipc_spawn_contained_256_live_noexec_ready");
	metricf(bench_median(lflt, nlive), "faults",
	    "sipc_spawn_contained_256_live_noexec_faults_per_worker");
	metricf(bench_median(lrss, nlive), "kB",
	    "sipc_spawn_contained_256_live_rss");
	return 0;
}
