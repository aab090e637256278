/*
 * sipc_contain.c - the `containment` section of sipc_bench: what each
 * way of containing a worker's process tree costs, same echo worker,
 * same run.
 *
 * For each mode this machine offers (process_group, pid_namespace,
 * user_namespace, asked for explicitly, with --init as sipc-init):
 * spawn-to-ready (sipc_create until sipc_wait_ready returns) of 1 and of
 * 64 workers, destroy of the 64, and pipelined 64 B throughput with 1
 * and 4 workers (max_inflight 64, 256 outstanding, as in `pipe`).  Every
 * figure runs the default cgroup setting (auto: a cgroup per worker
 * where one can be made, noted once); spawn-to-ready of 1 worker is also
 * measured with cgroup = off, so the cgroup's own cost is the
 * difference.  Rounds
 * rotate the order of the modes and every figure is the median of its
 * rounds, so a slow spell of a shared machine does not land on one mode
 * only.  A mode that cannot start a worker here is a note "not
 * available: why" (an explicit mode is never replaced by another).
 * run.sh divides each namespace mode's figures by process_group's.
 *
 * Threads: the main thread; the log callback runs on library threads
 * and only claims and fills the capture below.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"

#define ROUNDS_MAX 3
#define REPS1_MAX 5
#define BIG 64                  /* workers of the large spawn */
#define PROBE_MS 20000          /* a mode's first worker, at most */

static const enum sipc_containment modes[] = {
	SIPC_CONTAIN_PROCESS_GROUP, SIPC_CONTAIN_PID_NAMESPACE,
	SIPC_CONTAIN_USER_NAMESPACE,
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* The first warning or error a supervisor logged (why a mode was
 * refused, or why AUTO fell back), and whether an error came. */
struct capture {
	atomic_bool claimed, filled, error;
	char msg[256];
};

/* Log callback (library thread): the first claimant writes msg, then
 * publishes it with `filled`; the main thread reads msg only after. */
static void
cap_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
    pid_t pid, const char *msg)
{
	struct capture *cap = arg;

	if (lvl <= SIPC_LOG_WARN && !atomic_exchange(&cap->claimed, true)) {
		snprintf(cap->msg, sizeof(cap->msg), "%s", msg);
		atomic_store(&cap->filled, true);
	}
	if (lvl == SIPC_LOG_ERROR)
		atomic_store(&cap->error, true);
	bench_log(NULL, lvl, wid, gen, pid, msg);
}

static void
cfg_mode(struct sipc_config *c, enum sipc_containment mode,
    const char *init, unsigned workers)
{
	cfg_base(c, workers);
	c->containment = mode;
	c->init_path = init;
}

/*
 * Start one worker in `mode`: 0 and the mode it got, or -1 and why not
 * (the library's first warning or error, else what failed).  A start
 * error ends the wait at once instead of after PROBE_MS of retries.
 */
int
contain_probe(enum sipc_containment mode, const char *init,
    enum sipc_containment *ret_got, char *why, size_t whylen)
{
	struct capture cap = { .msg = "" };
	uint64_t end = bench_now_ns() + (uint64_t)PROBE_MS * 1000000u;
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	char err[256] = "";
	int rc;

	cfg_mode(&c, mode, init, 1);
	c.log = cap_log;
	c.log_arg = &cap;
	if ((rc = sipc_create(&c, err, sizeof(err), &s)) < 0) {
		snprintf(why, whylen, "sipc_create: %s: %s", sipc_strerror(rc),
		    err);
		return -1;
	}
	while ((rc = sipc_wait_ready(s, 1, 50)) < 0 &&
	    bench_now_ns() < end && !atomic_load(&cap.error))
		;
	if (rc == 0 && (rc = sipc_stats_get(s, &st)) == 0) {
		*ret_got = st.workers[0].containment;
		sipc_stats_release(&st);
	}
	sipc_destroy(s);        /* joins the library threads: cap is ours */
	if (atomic_load(&cap.filled))
		snprintf(why, whylen, "%s", cap.msg);
	else if (rc < 0)
		snprintf(why, whylen, "no worker ready (%s)", sipc_strerror(rc));
	else
		why[0] = '\0';
	return rc < 0 ? -1 : 0;
}

/* One mode's samples over every round. */
struct figs {
	double ready1[ROUNDS_MAX * REPS1_MAX];
	double ready1_off[ROUNDS_MAX * REPS1_MAX];  /* cgroup = off */
	double ready_big[ROUNDS_MAX], destroy_big[ROUNDS_MAX];
	double w1[ROUNDS_MAX], w4[ROUNDS_MAX];
	unsigned n1, n1_off, n;
};

static int
pipe_rate(enum sipc_containment mode, unsigned workers, double *ret)
{
	double warm = O.quick ? 0.2 : 0.5, dur = O.quick ? 0.3 : 1.5;
	struct sipc_config c;
	sipc_supervisor *s;
	int rc;

	cfg_mode(&c, mode, O.init_path, workers);
	c.max_inflight = 64;    /* the raw baseline's window, as in `pipe` */
	if ((rc = sup_start(&c, 30000, &s)) < 0)
		return rc;
	rc = measure_tput(s, 64, 256, LOAD_SUBMITTERS, warm, dur, ret, NULL);
	sipc_destroy(s);
	return rc;
}

/* One round of one mode: spawns of 1 (reps times), of BIG, the pipes. */
static int
round_one(enum sipc_containment mode, unsigned reps, struct figs *f)
{
	struct sipc_config c;
	sipc_supervisor *s;
	uint64_t t0;
	unsigned k;

	for (k = 0; k < reps; k++) {
		cfg_mode(&c, mode, O.init_path, 1);
		t0 = bench_now_ns();
		if (sup_start(&c, 30000, &s) < 0)
			return -1;
		f->ready1[f->n1++] = ms_since(t0);
		sipc_destroy(s);
		cfg_mode(&c, mode, O.init_path, 1);
		c.cgroup = SIPC_CGROUP_OFF;
		t0 = bench_now_ns();
		if (sup_start(&c, 30000, &s) < 0)
			return -1;
		f->ready1_off[f->n1_off++] = ms_since(t0);
		sipc_destroy(s);
	}
	cfg_mode(&c, mode, O.init_path, BIG);
	t0 = bench_now_ns();
	if (sup_start(&c, 120000, &s) < 0)
		return -1;
	f->ready_big[f->n] = ms_since(t0);
	t0 = bench_now_ns();
	sipc_destroy(s);
	f->destroy_big[f->n] = ms_since(t0);
	if (pipe_rate(mode, 1, &f->w1[f->n]) < 0 ||
	    pipe_rate(mode, 4, &f->w4[f->n]) < 0)
		return -1;
	f->n++;
	return 0;
}

static void
report(const char *name, struct figs *f)
{
	double big = bench_median(f->ready_big, f->n);

	metricf(bench_median(f->ready1, f->n1), "ms",
	    "sipc_contain_%s_spawn_ready_1_p50", name);
	metricf(bench_median(f->ready1_off, f->n1_off), "ms",
	    "sipc_contain_%s_spawn_ready_1_nocgroup_p50", name);
	metricf(big, "ms", "sipc_contain_%s_spawn_ready_%u_p50", name, BIG);
	metricf(big / BIG, "ms", "sipc_contain_%s_spawn_ready_%u_per_worker",
	    name, BIG);
	metricf(bench_median(f->destroy_big, f->n), "ms",
	    "sipc_contain_%s_destroy_%u_p50", name, BIG);
	metricf(bench_median(f->w1, f->n), "msg/s",
	    "sipc_contain_%s_pipe_w1_64_msgs", name);
	metricf(bench_median(f->w4, f->n), "msg/s",
	    "sipc_contain_%s_pipe_w4_64_msgs", name);
}

/* Which modes start here; notes for those that do not, and for what
 * the default configuration of the other sections gets. */
static unsigned
available(enum sipc_containment *avail)
{
	enum sipc_containment got = SIPC_CONTAIN_AUTO;
	char why[300];
	unsigned i, n = 0;

	for (i = 0; i < NMODES; i++) {
		if (modes[i] != SIPC_CONTAIN_PROCESS_GROUP && O.init_path == NULL)
			snprintf(why, sizeof(why), "no --init given");
		else if (contain_probe(modes[i], O.init_path, &got, why,
		    sizeof(why)) == 0 && got == modes[i]) {
			avail[n++] = modes[i];
			continue;
		} else if (why[0] == '\0')
			snprintf(why, sizeof(why), "the worker got %s",
			    sipc_containment_name(got));
		notef("containment %s not available (init %s): %s",
		    sipc_containment_name(modes[i]),
		    O.init_path ? O.init_path : "none", why);
	}
	if (contain_probe(SIPC_CONTAIN_AUTO, NULL, &got, why, sizeof(why)) == 0)
		notef("containment: the other sipc sections run the default "
		    "configuration (auto, init_path unset), which got %s here%s%s",
		    sipc_containment_name(got), why[0] ? ": " : "", why);
	return n;
}

/* Say whether the default configuration gets a cgroup here, and why
 * not when it does not. */
static void
note_cgroup(void)
{
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	char err[256] = "";
	int rc;

	cfg_base(&c, 1);
	if ((rc = sipc_create(&c, err, sizeof(err), &s)) < 0) {
		notef("cgroup: sipc_create: %s: %s", sipc_strerror(rc), err);
		return;
	}
	if (sipc_stats_get(s, &st) == 0) {
		if (st.cgroup_path[0] != '\0')
			notef("cgroup: provided (%s); spawn_ready_1_nocgroup "
			    "runs with cgroup = off", st.cgroup_path);
		else
			notef("cgroup: not provided (%s): both spawn figures "
			    "run without one", st.cgroup_why);
		sipc_stats_release(&st);
	}
	sipc_destroy(s);
}

int
sec_contain(void)
{
	enum sipc_containment avail[NMODES];
	unsigned rounds = O.quick ? 1 : ROUNDS_MAX;
	unsigned reps = O.quick ? 3 : REPS1_MAX, n, r, m;
	static struct figs f[NMODES];

	if ((n = available(avail)) == 0)
		return -1;
	note_cgroup();
	for (r = 0; r < rounds; r++)
		for (m = 0; m < n; m++) {
			unsigned k = (r + m) % n;

			if (round_one(avail[k], reps, &f[k]) < 0) {
				notef("containment %s round %u failed",
				    sipc_containment_name(avail[k]), r);
				return -1;
			}
		}
	for (m = 0; m < n; m++)
		report(sipc_containment_name(avail[m]), &f[m]);
	metricf((double)rounds, "rounds", "sipc_contain_rounds");
	return 0;
}
