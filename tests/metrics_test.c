/*
 * metrics_test.c - sipc_stats_openmetrics(): what it writes parses with
 * a real OpenMetrics parser (Debian's python3-prometheus-client, through
 * tests/lib/openmetrics_parse.py), and the values it gives are the
 * pool's: outcomes by kind, worker ends by kind, the histograms' counts;
 * a text cut short does not parse (the check can fail); a stream that
 * cannot be written is -EIO.
 *
 * Threads: the CUnit thread only (sipc_call()).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */
#define MAX_LINES 512

struct samples {
	unsigned n;
	char name[MAX_LINES][160];
	double value[MAX_LINES];
};

/* An interpreter that has the parser, or NULL. */
static const char *
parser_python(void)
{
	static const char *const py[] = { "python3", "/usr/bin/python3" };
	char cmd[128];

	for (unsigned i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "%s -c 'import prometheus_client' "
		    ">/dev/null 2>&1", py[i]);
		if (system(cmd) == 0)
			return py[i];
	}
	return NULL;
}

/* Parse `path` with the real parser: its exit status, samples in *out. */
static int
parse(const char *py, const char *path, struct samples *out)
{
	char cmd[512], line[160], *sp;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s tests/lib/openmetrics_parse.py %s",
	    py, path);
	CU_ASSERT_FATAL((p = popen(cmd, "r")) != NULL);
	out->n = 0;
	while (fgets(line, sizeof(line), p) != NULL && out->n < MAX_LINES) {
		line[strcspn(line, "\n")] = '\0';
		if ((sp = strrchr(line, ' ')) == NULL)
			continue;
		*sp = '\0';
		snprintf(out->name[out->n], sizeof(out->name[0]), "%s", line);
		out->value[out->n++] = strtod(sp + 1, NULL);
	}
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double
value(const struct samples *s, const char *name)
{
	for (unsigned i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0)
			return s->value[i];
	fprintf(stderr, "no sample %s\n", name);
	return -1;
}

/* Both workers replaced (the timed-out one and the crashed one) and
 * ready again. */
static bool
two_ended_both_ready(const struct sipc_stats *st, void *arg)
{
	unsigned i, ready = 0;

	for (i = 0; i < st->nworkers; i++)
		ready += st->workers[i].state == SIPC_WS_READY;
	return st->restarts >= 2 && ready == st->nworkers &&
	    st->pending == 0;
}

static void
write_metrics(sipc_supervisor *s, char *path)
{
	FILE *f;
	int fd;

	CU_ASSERT_FATAL((fd = mkstemp(path)) >= 0);
	CU_ASSERT_FATAL((f = fdopen(fd, "w")) != NULL);
	TL_EQ(sipc_stats_openmetrics(s, f), 0);
	fclose(f);
}

/*
 * Traffic of every kind on two workers: OK, worker errors, a timeout,
 * a worker that dies in its handler.  The exposition parses, and its
 * numbers are the stats' numbers.
 */
static void
test_metrics_parse_and_agree(void)
{
	char path[] = "/tmp/sipc-metrics-XXXXXX", key[160];
	const char *py = parser_python();
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	struct samples *sm;
	sipc_supervisor *s;
	unsigned i, ready;
	uint64_t total;

	if (py == NULL) {
		tl_skip("python3-prometheus-client is not installed (make deps "
		    "installs it)");
		return;
	}
	CU_ASSERT_FATAL((sm = calloc(1, sizeof(*sm))) != NULL);
	st_cfg_base(&c, "echo", NULL, 2);
	c.cancel_grace_ms = 200;
	c.request_figures = 1;
	s = st_start(&c, 2, WAIT_MS);
	for (i = 0; i < 6; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		sipc_result_release(&r);
	}
	for (i = 0; i < 2; i++) {
		st_call_cmd(s, "error 7", WAIT_MS, 0, &r);
		TL_EQ(r.outcome, SIPC_OUTCOME_WORKER_ERROR);
		sipc_result_release(&r);
	}
	st_call_cmd(s, "sleep 5000", 100, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_TIMEOUT);
	sipc_result_release(&r);
	st_call_cmd(s, "crash exit 3", WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, two_ended_both_ready, NULL, WAIT_MS));
	write_metrics(s, path);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(parse(py, path, sm), 0);
	CU_ASSERT(sm->n > 40);
	snprintf(key, sizeof(key), "sipc_requests_total{outcome=%s}",
	    sipc_outcome_name(SIPC_OUTCOME_OK));
	TL_EQ((uint64_t)value(sm, key), st.completed_ok);
	snprintf(key, sizeof(key), "sipc_requests_total{outcome=%s}",
	    sipc_outcome_name(SIPC_OUTCOME_WORKER_ERROR));
	TL_EQ((uint64_t)value(sm, key), 2);
	snprintf(key, sizeof(key), "sipc_requests_total{outcome=%s}",
	    sipc_outcome_name(SIPC_OUTCOME_UNKNOWN));
	TL_EQ((uint64_t)value(sm, key), 1);
	TL_EQ((uint64_t)value(sm, "sipc_requests_submitted_total{}"),
	    st.submitted);
	snprintf(key, sizeof(key), "sipc_worker_exits_total{kind=%s}",
	    sipc_exit_kind_name(SIPC_EXIT_CODE));
	TL_EQ((uint64_t)value(sm, key), 1);
	snprintf(key, sizeof(key), "sipc_worker_exits_total{kind=%s}",
	    sipc_exit_kind_name(SIPC_EXIT_TERMINATED));
	TL_EQ((uint64_t)value(sm, key), 1);
	total = st.completed_ok + st.worker_errors + st.rejected +
	    st.timeouts + st.unknown;
	TL_EQ((uint64_t)value(sm, "sipc_request_queue_seconds_count{}"),
	    total);
	TL_EQ((uint64_t)value(sm,
	    "sipc_request_queue_seconds_bucket{le=+Inf}"), total);
	TL_EQ((uint64_t)value(sm, "sipc_request_run_seconds_count{}"), total);
	CU_ASSERT(value(sm, "sipc_request_run_seconds_sum{}") >= 0.1);
	/* per-request figures: counts and sums as the stats have them */
	TL_EQ((uint64_t)value(sm, "sipc_request_cpu_seconds_count{}"),
	    st.cpu_known);
	CU_ASSERT(fabs(value(sm, "sipc_request_cpu_seconds_sum{}") -
	    (double)st.cpu_us_sum / 1e6) < 1e-5);
	TL_EQ((uint64_t)value(sm, "sipc_request_peak_rss_bytes_count{}"),
	    st.peak_rss_known);
	CU_ASSERT(fabs(value(sm, "sipc_request_peak_rss_bytes_sum{}") -
	    (double)st.peak_rss_kb_sum * 1024) < 1.0);
	fprintf(stderr, "measured: %llu (cpu), %llu (peak)\n",
	    (unsigned long long)st.cpu_known,
	    (unsigned long long)st.peak_rss_known);
	snprintf(key, sizeof(key), "sipc_workers{state=%s}",
	    sipc_worker_state_name(SIPC_WS_READY));
	ready = (unsigned)value(sm, key);
	TL_EQ(ready, 2);
	TL_EQ((uint64_t)value(sm, "sipc_worker_restarts_total{}"),
	    st.restarts);
	sipc_stats_release(&st);
	unlink(path);
	free(sm);
	sipc_destroy(s);
}

/* The same text cut before its end ("# EOF") is refused by the parser:
 * the check above can fail. */
static void
test_metrics_cut_text_refused(void)
{
	char path[] = "/tmp/sipc-metrics-XXXXXX";
	const char *py = parser_python();
	struct sipc_config c;
	struct samples *sm;
	sipc_supervisor *s;
	long len;
	FILE *f;

	if (py == NULL) {
		tl_skip("python3-prometheus-client is not installed (make deps "
		    "installs it)");
		return;
	}
	CU_ASSERT_FATAL((sm = calloc(1, sizeof(*sm))) != NULL);
	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	write_metrics(s, path);
	TL_EQ(parse(py, path, sm), 0);
	CU_ASSERT_FATAL((f = fopen(path, "r+")) != NULL);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fclose(f);
	CU_ASSERT_FATAL(truncate(path, len - 6) == 0);  /* "# EOF\n" */
	TL_EQ(parse(py, path, sm), 1);
	unlink(path);
	free(sm);
	sipc_destroy(s);
}

/* A stream that cannot take the text: -EIO; bad arguments: -EINVAL. */
static void
test_metrics_write_error(void)
{
	struct sipc_config c;
	sipc_supervisor *s;
	FILE *f;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL((f = fopen("/dev/full", "w")) != NULL);
	TL_EQ(sipc_stats_openmetrics(s, f), -EIO);
	fclose(f);
	TL_EQ(sipc_stats_openmetrics(s, NULL), -EINVAL);
	TL_EQ(sipc_stats_openmetrics(NULL, stdout), -EINVAL);
	sipc_destroy(s);
}

static const tl_test tests[] = {
	{ "test_metrics_parse_and_agree", test_metrics_parse_and_agree },
	{ "test_metrics_cut_text_refused", test_metrics_cut_text_refused },
	{ "test_metrics_write_error", test_metrics_write_error },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("metrics", tests);
	return tl_run();
}
