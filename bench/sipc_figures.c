/*
 * sipc_figures.c - the `figures` section of sipc_bench: what measuring
 * each request's CPU time and peak memory (request_figures = 1) costs a
 * synchronous 64-byte call, and the figures of one request that uses a
 * known amount of CPU and memory.
 *
 * Cost: one worker, sipc_call() of 64 bytes in a loop, p50 and mean of
 * the call's wall time, with request_figures 0 and 1 (the same run, one
 * after the other, the default containment and cgroup, sipc-init from
 * --init: each call is alone on its worker, so each is measured with
 * figures on).  The
 * difference is the system calls of the two readings (os/usage.c).
 *
 * Figures: one call of the echo fixture's "work 200 64" (200 ms of CPU
 * time, 64 MiB touched) with figures on: its cpu_us and peak_rss_kb.
 *
 * Threads: the main thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sipc_bench.h"

#define CALLS 20000
#define CALLS_QUICK 2000

/* p50 and mean wall time of n 64-byte calls, in us; -1 on failure. */
static int
call_cost(unsigned figures, unsigned n, double *p50, double *mean,
          uint64_t *measured)
{
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	char p[64];
	uint64_t *t = calloc(n, sizeof(*t)), t0, sum = 0;
	unsigned i, k = 0;

	if (t == NULL)
		return -1;
	memset(p, 'x', sizeof(p));
	cfg_base(&c, 1);
	c.init_path = O.init_path;
	c.request_figures = figures;
	if (sup_start(&c, 30000, &s) < 0) {
		free(t);
		return -1;
	}
	struct sipc_request rq = { .payload = p, .len = sizeof(p),
	    .timeout_ms = 30000 };
	for (i = 0; i < n; i++) {
		t0 = bench_now_ns();
		if (sipc_call(s, &rq, &r) != 0)
			continue;
		if (r.outcome == SIPC_OUTCOME_OK) {
			t[k] = (bench_now_ns() - t0) / 1000;
			sum += t[k++];
		}
		sipc_result_release(&r);
	}
	*measured = 0;
	if (sipc_stats_get(s, &st) == 0) {
		*measured = st.cpu_known;
		sipc_stats_release(&st);
	}
	sipc_destroy(s);
	if (k == 0) {
		free(t);
		return -1;
	}
	*p50 = (double)bench_pct(t, k, 50);
	*mean = (double)sum / k;
	free(t);
	return 0;
}

int
sec_figures(void)
{
	unsigned n = O.quick ? CALLS_QUICK : CALLS;
	double p50[2], mean[2];
	uint64_t measured[2];
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char cmd[32];
	size_t len;
	unsigned f;

	notef("figures: one worker, %u sequential 64 B calls with "
	    "request_figures 0, then 1", n);
	for (f = 0; f < 2; f++)
		if (call_cost(f, n, &p50[f], &mean[f], &measured[f]) < 0)
			return -1;
	metricf(p50[0], "us", "sipc_figures_off_call_64_p50");
	metricf(p50[1], "us", "sipc_figures_on_call_64_p50");
	metricf(mean[0], "us", "sipc_figures_off_call_64_mean");
	metricf(mean[1], "us", "sipc_figures_on_call_64_mean");
	notef("figures: %llu of %u calls measured with request_figures 1",
	    (unsigned long long)measured[1], n);
	memcpy(cmd, "\0CMD", 4);
	len = 4 + (size_t)snprintf(cmd + 4, sizeof(cmd) - 4, "work 200 64");
	cfg_base(&c, 1);
	c.init_path = O.init_path;
	c.request_figures = 1;
	if (sup_start(&c, 30000, &s) < 0)
		return -1;
	struct sipc_request rq = { .payload = cmd, .len = len,
	    .timeout_ms = 30000 };
	if (sipc_call(s, &rq, &r) == 0) {
		if (r.figures & SIPC_FIG_CPU)
			metricf((double)r.cpu_us, "us",
			    "sipc_figures_work200_cpu");
		if (r.figures & SIPC_FIG_PEAK_RSS)
			metricf((double)r.peak_rss_kb, "KiB",
			    "sipc_figures_work64mib_peak");
		notef("figures: \"work 200 64\": figures %#x, cpu %llu us, "
		    "peak %llu KiB, run %llu us", r.figures,
		    (unsigned long long)r.cpu_us,
		    (unsigned long long)r.peak_rss_kb,
		    (unsigned long long)r.run_us);
		sipc_result_release(&r);
	}
	sipc_destroy(s);
	return 0;
}
