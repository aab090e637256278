/*
 * metrics.c - sipc_stats_openmetrics(): the pool's counters, gauges and
 * the results' time histograms in the OpenMetrics text format, from one
 * sipc_stats_get() snapshot and the histogram counters.
 *
 * A histogram's buckets are counted one by one (sipc__hist_bucket() at
 * each outcome, outcome.c, with its bounds) and made cumulative here, and its _count is
 * the +Inf bucket of that same reading: a scrape that races outcomes
 * stays a valid histogram (the _sum may run a little ahead).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "sipc.h"
#include "pool/pool.h"

static void
counter(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# TYPE %s counter\n# HELP %s %s\n", name, name, help);
}

static void
gauge(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# TYPE %s gauge\n# HELP %s %s\n", name, name, help);
}

static void
histogram(FILE *f, const char *name, const char *help,
          _Atomic uint64_t *h, uint64_t sum_us)
{
	uint64_t cum = 0;
	unsigned i;

	fprintf(f, "# TYPE %s histogram\n# UNIT %s seconds\n# HELP %s %s\n",
	    name, name, name, help);
	for (i = 0; i < SIPC__HIST_BUCKETS; i++) {
		cum += atomic_load(&h[i]);
		if (i < SIPC__HIST_BUCKETS - 1)
			fprintf(f, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
			    (double)sipc__hist_bound_us[i] / 1e6, cum);
		else
			fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n",
			    name, cum);
	}
	fprintf(f, "%s_count %" PRIu64 "\n%s_sum %.6f\n", name, cum, name,
	    (double)sum_us / 1e6);
}

/* A summary without quantiles: how many were measured, and their sum. */
static void
summary(FILE *f, const char *name, const char *unit, const char *help,
        uint64_t count, double sum)
{
	fprintf(f, "# TYPE %s summary\n# UNIT %s %s\n# HELP %s %s\n"
	    "%s_count %" PRIu64 "\n%s_sum %.6f\n", name, name, unit, name,
	    help, name, count, name, sum);
}

int
sipc_stats_openmetrics(sipc_supervisor *s, FILE *f)
{
	static const enum sipc_outcome outcomes[] = { SIPC_OUTCOME_OK,
	    SIPC_OUTCOME_WORKER_ERROR, SIPC_OUTCOME_REJECTED,
	    SIPC_OUTCOME_TIMEOUT, SIPC_OUTCOME_UNKNOWN };
	unsigned states[SIPC_WS_FAILED + 1] = { 0 }, i, queued = 0, inflight = 0;
	struct sipc_stats st;
	uint64_t by_outcome[5];
	int rc;

	if (s == NULL || f == NULL)
		return -EINVAL;
	if ((rc = sipc_stats_get(s, &st)) < 0)
		return rc;
	by_outcome[0] = st.completed_ok;
	by_outcome[1] = st.worker_errors;
	by_outcome[2] = st.rejected;
	by_outcome[3] = st.timeouts;
	by_outcome[4] = st.unknown;
	for (i = 0; i < st.nworkers; i++) {
		if ((unsigned)st.workers[i].state <= SIPC_WS_FAILED)
			states[st.workers[i].state]++;
		queued += st.workers[i].queued;
		inflight += st.workers[i].inflight;
	}
	counter(f, "sipc_requests_submitted", "Requests accepted by submit.");
	fprintf(f, "sipc_requests_submitted_total %" PRIu64 "\n",
	    st.submitted);
	counter(f, "sipc_requests", "Requests that reached an outcome, by "
	    "outcome.");
	for (i = 0; i < 5; i++)
		fprintf(f, "sipc_requests_total{outcome=\"%s\"} %" PRIu64 "\n",
		    sipc_outcome_name(outcomes[i]), by_outcome[i]);
	counter(f, "sipc_worker_exits", "Worker ends, by exit kind.");
	for (i = SIPC_EXIT_CLEAN; i < SIPC__EXIT_KINDS; i++)
		fprintf(f, "sipc_worker_exits_total{kind=\"%s\"} %" PRIu64 "\n",
		    sipc_exit_kind_name((enum sipc_exit_kind)i),
		    atomic_load(&s->n_exits[i]));
	counter(f, "sipc_worker_recycles", "Planned worker ends, by reason.");
	fprintf(f, "sipc_worker_recycles_total{reason=\"max_requests\"} %"
	    PRIu64 "\n", st.recycled_requests);
	fprintf(f, "sipc_worker_recycles_total{reason=\"max_age_ms\"} %"
	    PRIu64 "\n", st.recycled_age);
	fprintf(f, "sipc_worker_recycles_total{reason=\"max_rss\"} %"
	    PRIu64 "\n", st.recycled_rss);
	counter(f, "sipc_worker_restarts", "Worker restarts planned after "
	    "an unplanned end.");
	fprintf(f, "sipc_worker_restarts_total %" PRIu64 "\n", st.restarts);
	gauge(f, "sipc_workers", "Worker slots, by state.");
	for (i = 0; i <= SIPC_WS_FAILED; i++)
		fprintf(f, "sipc_workers{state=\"%s\"} %u\n",
		    sipc_worker_state_name((enum sipc_worker_state)i),
		    states[i]);
	gauge(f, "sipc_requests_queued", "Requests in workers' queues, not "
	    "written.");
	fprintf(f, "sipc_requests_queued %u\n", queued);
	gauge(f, "sipc_requests_in_flight", "Requests written and not "
	    "answered.");
	fprintf(f, "sipc_requests_in_flight %u\n", inflight);
	gauge(f, "sipc_requests_pending", "Requests without an outcome.");
	fprintf(f, "sipc_requests_pending %u\n", st.pending);
	gauge(f, "sipc_memory_held_bytes", "Payload bytes held against "
	    "mem_ceiling.");
	fprintf(f, "sipc_memory_held_bytes %zu\n", st.mem_held);
	histogram(f, "sipc_request_queue_seconds", "Submit to first write "
	    "(the whole wait if never written).", s->hist_queue,
	    st.queue_us_sum);
	histogram(f, "sipc_request_run_seconds", "First write to outcome, "
	    "written requests.", s->hist_run, st.run_us_sum);
	summary(f, "sipc_request_cpu_seconds", "seconds", "CPU time of the "
	    "worker tree, requests measured alone (request_figures).",
	    st.cpu_known, (double)st.cpu_us_sum / 1e6);
	summary(f, "sipc_request_peak_rss_bytes", "bytes", "Peak resident "
	    "memory of the worker tree, requests measured alone "
	    "(request_figures).", st.peak_rss_known,
	    (double)st.peak_rss_kb_sum * 1024);
	fputs("# EOF\n", f);
	sipc_stats_release(&st);
	return ferror(f) || fflush(f) != 0 ? -EIO : 0;
}
