/*
 * sipc_bench.c - the sipc figures of `make bench`, measured through the
 * public API of include/sipc.h only, against the echo fixture.
 *
 * Usage: sipc_bench [--quick] --fixtures DIR [--state-dir DIR]
 *                   [--stall-ms N] [--init PATH] SECTION...
 * Sections (each prints "metric <name> <value> <unit>" lines, see
 * bench/README.md): call pipe spawn mem scale stall journal, accept
 * (sipc_accept.c), containment (sipc_contain.c, which needs --init PATH)
 * and cost (sipc_cost.c).  run.sh
 * runs each section in its own process so RSS figures start clean and a
 * failure in one section cannot hide the others.
 *
 * Threads: the main thread drives a section; load submitters and the
 * library's threads (completion callbacks) only touch the atomics in
 * sipc_load.h and the counters below.
 */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"
#include "sipc_load.h"

#define MiB (1024u * 1024u)

static const size_t sizes[] = { 64, 4096, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* "\0CMD" + "stopread": the echo fixture stops reading for good. */
static const uint8_t stopread_cmd[] = {
	0, 'C', 'M', 'D', 's', 't', 'o', 'p', 'r', 'e', 'a', 'd'
};

struct bench_opts O;

static atomic_uint log_shown;
static atomic_uint ctl_done_n;

/* Log callback (library thread): the first few errors on stderr, and
 * warnings too when BENCH_VERBOSE is set (shutdown logs a warning per
 * worker, which is noise in a benchmark). */
void
bench_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
    pid_t pid, const char *msg)
{
	enum sipc_log_level max = getenv("BENCH_VERBOSE") ? SIPC_LOG_INFO :
	    SIPC_LOG_ERROR;

	if (lvl > max || atomic_fetch_add(&log_shown, 1) >= 40)
		return;
	fprintf(stderr, "sipc_bench: log[%d] worker %u gen %u pid %d: %s\n",
	    (int)lvl, wid, gen, (int)pid, msg);
}

/* Completion callback for control and queued requests. */
static void
ctl_done(void *arg, struct sipc_result *res)
{
	sipc_result_release(res);
	atomic_fetch_add(&ctl_done_n, 1);
}

void
metricf(double v, const char *unit, const char *fmt, ...)
{
	char name[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	bench_metric(name, v, unit);
}

void
notef(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	bench_note(msg);
}

double
ms_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) / 1e6;
}

void
cfg_base(struct sipc_config *c, unsigned workers)
{
	sipc_config_init(c);
	c->environment = SIPC_ENV_DEVELOPMENT;
	c->path = O.echo;
	c->workers = workers;
	c->log = bench_log;
}

/* Create a supervisor and wait until every worker is ready. */
int
sup_start(const struct sipc_config *c, unsigned timeout_ms,
    sipc_supervisor **ret)
{
	sipc_supervisor *s = NULL;
	char err[256] = "";
	int rc;

	rc = sipc_create(c, err, sizeof(err), &s);
	if (rc < 0) {
		fprintf(stderr, "sipc_bench: sipc_create(%u workers): %s: %s\n",
		    c->workers, sipc_strerror(rc), err);
		return rc;
	}
	rc = sipc_wait_ready(s, c->workers, timeout_ms);
	if (rc < 0) {
		fprintf(stderr, "sipc_bench: sipc_wait_ready(%u): %s\n",
		    c->workers, sipc_strerror(rc));
		sipc_destroy(s);
		return rc;
	}
	*ret = s;
	return 0;
}

/* Sleep `secs`, sampling our RSS every 20 ms into *peak (if not NULL). */
void
idle_sample(double secs, long *peak)
{
	uint64_t end = bench_now_ns() + (uint64_t)(secs * 1e9);
	long r;

	while (bench_now_ns() < end) {
		bench_sleep_ms(20);
		if (peak != NULL && (r = bench_rss_kb(0)) > *peak)
			*peak = r;
	}
}

void
load_report(struct load *L, const char *what)
{
	uint64_t bad = atomic_load(&L->outcome[SIPC_OUTCOME_WORKER_ERROR]) +
	    atomic_load(&L->outcome[SIPC_OUTCOME_REJECTED]) +
	    atomic_load(&L->outcome[SIPC_OUTCOME_TIMEOUT]) +
	    atomic_load(&L->outcome[SIPC_OUTCOME_UNKNOWN]);
	uint64_t serr = atomic_load(&L->submit_err);

	if (bad != 0 || serr != 0)
		notef("%s: %llu non-OK outcomes, %llu submit errors (last: %s)",
		    what, (unsigned long long)bad, (unsigned long long)serr,
		    sipc_strerror(atomic_load(&L->last_error)));
}

/*
 * Pipelined throughput: keep `window` requests of `size` outstanding for
 * warm + dur seconds; *ret_rate is OK replies per second over `dur`.
 */
/* Minor page faults of the whole process and OK replies over the last
 * measure_tput()'s measured `dur` (the warm-up left out). */
static long tput_faults;
static uint64_t tput_msgs;

int
measure_tput(sipc_supervisor *s, size_t size, unsigned window,
    unsigned nthreads, double warm, double dur, double *ret_rate,
    long *rss_peak)
{
	static struct load L;
	struct rusage u0, u1;
	uint64_t t0, t1, n0, n1;
	char what[64];
	int rc;

	if ((rc = load_start(&L, s, size, window, nthreads, NULL)) < 0)
		return rc;
	idle_sample(warm, rss_peak);
	getrusage(RUSAGE_SELF, &u0);
	t0 = bench_now_ns();
	n0 = atomic_load(&L.ok);
	idle_sample(dur, rss_peak);
	t1 = bench_now_ns();
	n1 = atomic_load(&L.ok);
	getrusage(RUSAGE_SELF, &u1);
	tput_faults = u1.ru_minflt - u0.ru_minflt;
	tput_msgs = n1 - n0;
	rc = load_stop(&L, 60000);
	snprintf(what, sizeof(what), "load %zu B window %u", size, window);
	load_report(&L, what);
	if (rc < 0)
		return rc;
	*ret_rate = (double)(n1 - n0) / bench_secs(t0, t1);
	return 0;
}

/* ------------------------------------------------------------- sections */

/* sipc_call() of `size` bytes in a loop for `dur` seconds (after a
 * warm-up): p50 and p99 in us, samples, calls not OK or not echoed. */
static int
call_lat(sipc_supervisor *s, size_t size, double dur, uint64_t *lat,
    double *ret_p50, double *ret_p99, size_t *ret_n, size_t *ret_fails)
{
	struct sipc_request req = { .len = size, .timeout_ms = 10000 };
	unsigned warm = size >= MiB ? 10 : 300, k;
	struct sipc_result res;
	size_t n = 0, fails = 0;
	uint64_t t, end;
	uint8_t *buf;
	int rc = 0;

	if ((buf = malloc(size)) == NULL)
		return -ENOMEM;
	bench_fill(buf, size, (uint32_t)size);
	req.payload = buf;
	for (k = 0; k < warm; k++) {
		if ((rc = sipc_call(s, &req, &res)) < 0)
			goto out;
		sipc_result_release(&res);
	}
	end = bench_now_ns() + (uint64_t)(dur * 1e9);
	do {
		t = bench_now_ns();
		if ((rc = sipc_call(s, &req, &res)) < 0)
			goto out;
		lat[n++] = bench_now_ns() - t;
		if (res.outcome != SIPC_OUTCOME_OK || res.reply_len != size ||
		    memcmp(res.reply, buf, size) != 0)
			fails++;
		sipc_result_release(&res);
	} while (t < end && n < 400000);
	*ret_p50 = (double)bench_pct(lat, n, 50) / 1e3;
	*ret_p99 = (double)bench_pct(lat, n, 99) / 1e3;
	*ret_n = n;
	*ret_fails = fails;
out:
	free(buf);
	if (rc < 0)
		fprintf(stderr, "sipc_bench: sipc_call: %s\n", sipc_strerror(rc));
	return rc;
}

/*
 * 64 B calls with this process pinned before sipc_create(), so that
 * the library's threads and the worker it spawns inherit the CPU
 * (samecpu), or with the worker moved to the second CPU afterwards
 * (crosscpu): the placements the raw ping-pong is measured at.  The
 * library pins nothing; a host may.  *ret_p50 is 0 when not measured.
 */
static int
call_placed(int place, double dur, uint64_t *lat, double *ret_p50)
{
	cpu_set_t saved, other;
	struct sipc_config c;
	sipc_supervisor *s;
	double p50, p99;
	size_t n, fails;
	int cpu[2], rc;
	pid_t wpid;

	*ret_p50 = 0;
	if (bench_two_cpus(cpu) < 2 ||
	    sched_getaffinity(0, sizeof(saved), &saved) < 0)
		return 0;
	bench_pin(cpu[0]);
	cfg_base(&c, 1);
	rc = sup_start(&c, 10000, &s);
	(void)sched_setaffinity(0, sizeof(saved), &saved);
	if (rc < 0)
		return -1;
	if (place == BENCH_CROSSCPU) {
		CPU_ZERO(&other);
		CPU_SET(cpu[1], &other);
		if ((wpid = worker_pid(s)) <= 0 ||
		    sched_setaffinity(wpid, sizeof(other), &other) < 0) {
			notef("call: worker not moved to CPU %d", cpu[1]);
			sipc_destroy(s);
			return 0;
		}
	}
	/* This thread calls: it is the one pinned now, as the others. */
	bench_pin(cpu[0]);
	rc = call_lat(s, 64, dur, lat, &p50, &p99, &n, &fails);
	(void)sched_setaffinity(0, sizeof(saved), &saved);
	sipc_destroy(s);
	if (rc < 0)
		return -1;
	metricf(p50, "us", "sipc_call_64_%s_p50", bench_place_name[place]);
	metricf(p99, "us", "sipc_call_64_%s_p99", bench_place_name[place]);
	if (fails)
		notef("call 64 B %s: %zu of %zu calls not OK/echoed",
		    bench_place_name[place], fails, n);
	*ret_p50 = p50;
	return 0;
}

/* Synchronous call latency, 1 worker: not pinned at every size, and at
 * 64 B also at both placements; the best 64 B figure is the target's. */
static int
sec_call(void)
{
	double dur = O.quick ? 0.3 : 1.5, p50, p99, best, placed;
	uint64_t *lat = malloc(400000 * sizeof(*lat));
	const char *where = "not pinned";
	struct sipc_config c;
	sipc_supervisor *s;
	size_t i, n, fails;
	int place;

	cfg_base(&c, 1);
	if (lat == NULL || sup_start(&c, 10000, &s) < 0) {
		free(lat);
		return -1;
	}
	best = 0;
	for (i = 0; i < NSIZES; i++) {
		if (call_lat(s, sizes[i], dur, lat, &p50, &p99, &n,
		    &fails) < 0) {
			sipc_destroy(s);
			free(lat);
			return -1;
		}
		metricf(p50, "us", "sipc_call_%zu_p50", sizes[i]);
		metricf(p99, "us", "sipc_call_%zu_p99", sizes[i]);
		metricf((double)n, "samples", "sipc_call_%zu_n", sizes[i]);
		if (fails)
			notef("call %zu B: %zu of %zu calls not OK/echoed",
			    sizes[i], fails, n);
		if (sizes[i] == 64)
			best = p50;
	}
	sipc_destroy(s);
	for (place = 0; place < BENCH_NPLACE; place++) {
		if (call_placed(place, dur, lat, &placed) < 0) {
			free(lat);
			return -1;
		}
		if (placed > 0 && placed < best) {
			best = placed;
			where = bench_place_name[place];
		}
	}
	metricf(best, "us", "sipc_call_64_best_p50");
	notef("call 64 B: the best p50 was %s", where);
	free(lat);
	return 0;
}

/*
 * Pipelined throughput at 1, 2, 4 workers and three payload sizes under
 * four loads; the figure is the best (the raw baselines' is the best
 * channel at its better placement):
 *   _1sub, _2sub  one or two submitting threads, refilling their window
 *                 at half (one spares the generator's wake-ups, two copy
 *                 large payloads into the library on two CPUs);
 *   _each         one thread refilling one request per completion: it
 *                 keeps copying large payloads while the worker runs;
 *   _lend         as _1sub, with SIPC_REQ_LEND: the library reads the
 *                 payload where it is instead of copying it (the
 *                 generator's one buffer never changes, as lending
 *                 requires);
 *   _lib          one thread that never waits for the generator: the
 *                 library's own bound stops it (sipc_submit() blocks
 *                 while the worker's ring is full), with ring_frames set
 *                 so that about the same number is outstanding; the raw
 *                 writer is bounded the same way, by the kernel's
 *                 socket buffer.
 */
/* One measure_tput() of sec_pipe(); for 1 MiB from one submitter it
 * also reports the page faults of the whole process per message (the
 * payload copies go into kept buffers: tests assert the reuse, and how
 * many faults it saves is this figure, which depends on the machine). */
static int
pipe_tput(sipc_supervisor *s, unsigned nw, size_t i, unsigned t,
    unsigned window, double warm, double dur, double *ret_rate)
{
	int rc;

	rc = measure_tput(s, sizes[i], window, t == 1 ? 2 : 1, warm, dur,
	    ret_rate, NULL);
	if (rc == 0 && sizes[i] == 1048576 && t == 0 && tput_msgs > 0)
		metricf((double)tput_faults / (double)tput_msgs, "faults",
		    "sipc_pipe_w%u_1048576_faults_per_msg", nw);
	return rc;
}

static int
sec_pipe(void)
{
	static const unsigned nw[] = { 1, 2, 4 };
	double dur = O.quick ? 0.4 : 2.0, warm = O.quick ? 0.2 : 0.5;
	double rate[NSIZES][5], best;
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned window[NSIZES], t, k;
	size_t w, i;
	int rc;

	for (i = 0; i < NSIZES; i++) {
		window[i] = (unsigned)(64u * MiB / sizes[i]);
		if (window[i] > 256)
			window[i] = 256;
	}
	for (w = 0; w < 3; w++) {
		cfg_base(&c, nw[w]);
		c.max_inflight = 64;    /* the raw baseline's window */
		if (sup_start(&c, 10000, &s) < 0)
			return -1;
		for (i = 0; i < NSIZES; i++)
			for (t = 0; t < 4; t++) {
				load_refill_each = t == 2;
				load_flags = t == 3 ? SIPC_REQ_LEND : 0;
				rc = pipe_tput(s, nw[w], i, t, window[i], warm,
				    dur, &rate[i][t == 3 ? 4 : t]);
				load_refill_each = false;
				load_flags = 0;
				if (rc < 0) {
					sipc_destroy(s);
					return -1;
				}
			}
		sipc_destroy(s);
		for (i = 0; i < NSIZES; i++) {
			/* max_inflight + ring_frames per worker: the window */
			cfg_base(&c, nw[w]);
			c.max_inflight = 64;
			k = window[i] / nw[w];
			c.ring_frames = k > 65 ? k - 64 : 1;
			if (sup_start(&c, 10000, &s) < 0)
				return -1;
			rc = measure_tput(s, sizes[i], 0, 1, warm, dur,
			    &rate[i][3], NULL);
			sipc_destroy(s);
			if (rc < 0)
				return -1;
		}
		for (i = 0; i < NSIZES; i++) {
			static const char *const tag[5] = { "_1sub", "_2sub",
			    "_each", "_lib", "_lend" };

			best = 0;
			for (t = 0; t < 5; t++) {
				metricf(rate[i][t], "msg/s",
				    "sipc_pipe_w%u_%zu%s_msgs", nw[w], sizes[i],
				    tag[t]);
				if (rate[i][t] > best)
					best = rate[i][t];
			}
			metricf(best, "msg/s", "sipc_pipe_w%u_%zu_msgs", nw[w],
			    sizes[i]);
			metricf(best * (double)sizes[i] / 1e6, "MB/s",
			    "sipc_pipe_w%u_%zu_mbps", nw[w], sizes[i]);
		}
	}
	return 0;
}

/* Spawn-to-ready (create -> wait_ready) and destroy time, 1 and 4. */
static int
sec_spawn(void)
{
	static const unsigned nw[] = { 1, 4 };
	unsigned reps = O.quick ? 3 : 10, r, w;
	uint64_t ready[10], gone[10], t0;
	struct sipc_config c;
	sipc_supervisor *s;

	for (w = 0; w < 2; w++) {
		for (r = 0; r < reps; r++) {
			cfg_base(&c, nw[w]);
			t0 = bench_now_ns();
			if (sup_start(&c, 10000, &s) < 0)
				return -1;
			ready[r] = bench_now_ns() - t0;
			t0 = bench_now_ns();
			sipc_destroy(s);
			gone[r] = bench_now_ns() - t0;
		}
		metricf((double)bench_pct(ready, reps, 50) / 1e6, "ms",
		    "sipc_spawn_ready_%u_p50", nw[w]);
		metricf((double)bench_pct(ready, reps, 100) / 1e6, "ms",
		    "sipc_spawn_ready_%u_max", nw[w]);
		metricf((double)bench_pct(gone, reps, 50) / 1e6, "ms",
		    "sipc_destroy_%u_p50", nw[w]);
	}
	return 0;
}

/* RSS of the supervisor per idle worker, and of each worker process. */
static int
mem_idle(void)
{
	const unsigned n = 16;
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	long rss0, rss1, wsum = 0;
	unsigned i, wn = 0;

	rss0 = bench_rss_kb(0);
	cfg_base(&c, n);
	if (sup_start(&c, 20000, &s) < 0)
		return -1;
	idle_sample(0.3, NULL);
	rss1 = bench_rss_kb(0);
	metricf((double)(rss1 - rss0) / n, "kB", "sipc_rss_per_idle_worker");
	if (sipc_stats_get(s, &st) == 0) {
		for (i = 0; i < st.nworkers; i++)
			if (st.workers[i].pid > 0) {
				wsum += bench_rss_kb(st.workers[i].pid);
				wn++;
			}
		sipc_stats_release(&st);
		if (wn > 0)
			metricf((double)wsum / wn, "kB",
			    "sipc_worker_process_rss");
	}
	sipc_destroy(s);
	return 0;
}

/*
 * RSS per 1,000 queued requests: one echo worker told to stop reading
 * (so nothing is ever answered), stall detection set out of reach, then
 * 1,000 NOWAIT submits of 64 B and 1,000 of 4 KiB; RSS before and after.
 */
static int
mem_queued(void)
{
	static const size_t qs[] = { 64, 4096 };
	struct sipc_request req = { .payload = stopread_cmd,
	    .len = sizeof(stopread_cmd) };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned i, k, acc;
	long rss_a, rss_b;
	uint8_t *buf;
	uint64_t t0;

	cfg_base(&c, 1);
	c.ring_frames = 4096;
	c.stall_ms = 60000;
	c.drain_ms = 100;
	c.grace_ms = 500;
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	if (sipc_submit(s, &req, ctl_done, NULL, NULL) < 0)
		goto fail;
	idle_sample(0.2, NULL);
	for (k = 0; k < 2; k++) {
		buf = malloc(qs[k]);
		bench_fill(buf, qs[k], 7);
		req.payload = buf;
		req.len = qs[k];
		req.flags = SIPC_REQ_NOWAIT;
		rss_a = bench_rss_kb(0);
		for (i = acc = 0; i < 1000; i++)
			acc += sipc_submit(s, &req, ctl_done, NULL, NULL) == 0;
		idle_sample(0.2, NULL);
		rss_b = bench_rss_kb(0);
		free(buf);
		if (acc == 0)
			goto fail;
		if (acc < 1000)
			notef("mem %zu B: only %u of 1000 accepted", qs[k], acc);
		metricf((double)(rss_b - rss_a) * 1000.0 / acc, "kB",
		    "sipc_rss_per_1000_queued_%zu", qs[k]);
	}
	if (sipc_stats_get(s, &st) == 0) {
		metricf((double)st.mem_held / 1024.0, "kB",
		    "sipc_mem_held_2000_queued");
		sipc_stats_release(&st);
	}
	t0 = bench_now_ns();
	sipc_destroy(s);
	metricf(ms_since(t0), "ms", "sipc_destroy_2000_queued");
	return 0;
fail:
	fprintf(stderr, "sipc_bench: mem: submit failed\n");
	sipc_destroy(s);
	return -1;
}

static int
sec_mem(void)
{
	if (mem_idle() < 0)
		return -1;
	return mem_queued();
}

/*
 * 4, 16, 64, 256 workers: ready time, idle RSS, 64 B throughput, peak
 * RSS; then 256 bare spawns of the same binary, one after the other,
 * and that time divided by the usable CPUs: what 256 workers ready
 * should not exceed if spawns run in parallel; and the same 256 spawned
 * all at once, then waited for: what parallel starts cost here.
 */
static int
sec_scale(void)
{
	static const unsigned nw[] = { 4, 16, 64, 256 };
	double dur = O.quick ? 0.4 : 2.0, rate, bare, together;
	unsigned w, nsc = O.quick ? 3 : 4;
	long rss0, rss1, peak;
	struct sipc_config c;
	sipc_supervisor *s;
	cpu_set_t cpus;
	uint64_t t0;

	for (w = 0; w < nsc; w++) {
		rss0 = bench_rss_kb(0);
		cfg_base(&c, nw[w]);
		t0 = bench_now_ns();
		if (sup_start(&c, 120000, &s) < 0)
			return -1;
		metricf(ms_since(t0), "ms", "sipc_scale_w%u_ready", nw[w]);
		idle_sample(0.2, NULL);
		rss1 = peak = bench_rss_kb(0);
		metricf((double)(rss1 - rss0) / nw[w], "kB",
		    "sipc_scale_w%u_rss_per_worker", nw[w]);
		if (measure_tput(s, 64, 256, LOAD_SUBMITTERS, 0.3, dur, &rate,
		    &peak) < 0) {
			sipc_destroy(s);
			return -1;
		}
		metricf(rate, "msg/s", "sipc_scale_w%u_64_msgs", nw[w]);
		metricf((double)peak, "kB", "sipc_scale_w%u_rss_load", nw[w]);
		t0 = bench_now_ns();
		sipc_destroy(s);
		metricf(ms_since(t0), "ms", "sipc_scale_w%u_destroy", nw[w]);
	}
	if ((bare = bare_spawn_ms(O.echo, 256, false)) < 0 ||
	    (together = bare_spawn_ms(O.echo, 256, true)) < 0) {
		notef("scale: bare spawns of %s failed", O.echo);
		return -1;
	}
	if (sched_getaffinity(0, sizeof(cpus), &cpus) < 0 ||
	    CPU_COUNT(&cpus) < 1) {
		CPU_ZERO(&cpus);
		CPU_SET(0, &cpus);
	}
	metricf(bare, "ms", "sipc_scale_bare_spawn_256");
	metricf((double)CPU_COUNT(&cpus), "cpus", "sipc_scale_cpus");
	metricf(bare / CPU_COUNT(&cpus), "ms",
	    "sipc_scale_bare_spawn_256_per_cpu");
	metricf(together, "ms", "sipc_scale_bare_spawn_256_together");
	return 0;
}

/*
 * The stall test.  What the controller (main thread) saw: when the
 * stopread command went out, when a worker first left READY or changed
 * generation (detection), when that slot was READY again with a new
 * generation (replacement), and peaks of RSS and of the library's own
 * mem_held while it watched.
 */
struct stall_obs {
	uint64_t t_stall, t_detect, t_ready;
	int slot;
	uint32_t gen;
	long rss_peak;
	size_t mem_peak;
};

static struct track stall_track;
static struct load stall_load;

static unsigned
slot_of(uint32_t worker_id)
{
	return worker_id < TRACKW ? worker_id : TRACKW;
}

/* One stats poll; returns 1 once the replacement is ready. */
static int
stall_poll(sipc_supervisor *s, struct stall_obs *ob)
{
	const struct sipc_worker_stats *ws;
	struct sipc_stats st;
	unsigned i;
	int done = 0;

	if (sipc_stats_get(s, &st) < 0)
		return 0;
	if (st.mem_held > ob->mem_peak)
		ob->mem_peak = st.mem_held;
	for (i = 0; i < st.nworkers; i++) {
		ws = &st.workers[i];
		if (ob->slot < 0 && (ws->state != SIPC_WS_READY ||
		    ws->generation != stall_track.init_gen[slot_of(ws->worker_id)])) {
			ob->slot = (int)ws->worker_id;
			ob->gen = stall_track.init_gen[slot_of(ws->worker_id)];
			ob->t_detect = bench_now_ns();
			atomic_store(&stall_load.phase, PH_RECOVER);
		}
		if (ob->slot == (int)ws->worker_id && ws->state == SIPC_WS_READY &&
		    ws->generation != ob->gen) {
			ob->t_ready = bench_now_ns();
			atomic_store(&stall_load.phase, PH_AFTER);
			done = 1;
		}
	}
	sipc_stats_release(&st);
	return done;
}

/* Start the stall and watch it until a replacement is ready. */
static int
stall_run(sipc_supervisor *s, struct stall_obs *ob)
{
	struct sipc_request req = { .payload = stopread_cmd,
	    .len = sizeof(stopread_cmd) };
	uint64_t end;
	long r;
	int rc;

	atomic_store(&stall_load.phase, PH_STALL);
	ob->t_stall = bench_now_ns();
	if ((rc = sipc_submit(s, &req, ctl_done, NULL, NULL)) < 0) {
		fprintf(stderr, "sipc_bench: stall: submit stopread: %s\n",
		    sipc_strerror(rc));
		return -1;
	}
	end = ob->t_stall + ((uint64_t)O.stall_ms * 5 + 20000) * 1000000u;
	while (bench_now_ns() < end) {
		if (stall_poll(s, ob))
			return 0;
		if ((r = bench_rss_kb(0)) > ob->rss_peak)
			ob->rss_peak = r;
		bench_sleep_ms(2);
	}
	notef("stall: %s within %u ms", ob->slot < 0 ? "no detection" :
	    "no ready replacement", O.stall_ms * 5 + 20000);
	return -1;
}

/* OK replies in phases [from, to] from every worker but the stalled one. */
static uint64_t
healthy_ok(const struct stall_obs *ob, int from, int to)
{
	uint64_t n = 0;
	int ph;
	unsigned w, f;

	for (ph = from; ph <= to; ph++)
		for (w = 0; w <= TRACKW; w++)
			for (f = 0; f < 2; f++)
				if (!(w == slot_of((uint32_t)ob->slot) && f == 0))
					n += atomic_load(&stall_track.ok[ph][w][f]);
	return n;
}

static void
stall_report(const struct stall_obs *ob, long rss_base, size_t ceiling)
{
	struct hist *hs[2 * (TRACKW + 1)], *pre = &stall_track.lat_pre;
	unsigned w, f, nh = 0;
	uint64_t cnt, p99;

	metricf((double)O.stall_ms, "ms", "sipc_stall_timeout_ms");
	metricf((double)(ob->t_detect - ob->t_stall) / 1e6, "ms",
	    "sipc_stall_detect_ms");
	metricf((double)(ob->t_ready - ob->t_stall) / 1e6, "ms",
	    "sipc_stall_replace_ms");
	metricf((double)healthy_ok(ob, PH_STALL, PH_RECOVER) /
	    bench_secs(ob->t_stall, ob->t_ready), "msg/s",
	    "sipc_stall_healthy_msgs");
	metricf((double)healthy_ok(ob, PH_STALL, PH_STALL) /
	    bench_secs(ob->t_stall, ob->t_detect), "msg/s",
	    "sipc_stall_healthy_before_detect_msgs");
	for (w = 0; w <= TRACKW; w++)
		for (f = 0; f < 2; f++)
			if (!(w == slot_of((uint32_t)ob->slot) && f == 0))
				hs[nh++] = &stall_track.lat_win[w][f];
	p99 = hist_pct(hs, nh, 99, &cnt);
	metricf((double)p99 / 1e3, "us", "sipc_stall_healthy_p99");
	p99 = hist_pct(&pre, 1, 99, &cnt);
	metricf((double)p99 / 1e3, "us", "sipc_stall_pre_p99");
	metricf((double)rss_base, "kB", "sipc_stall_rss_base");
	metricf((double)ob->rss_peak, "kB", "sipc_stall_rss_peak");
	metricf((double)(ob->rss_peak - rss_base), "kB",
	    "sipc_stall_rss_growth");
	metricf((double)ceiling / 1024.0, "kB", "sipc_stall_mem_ceiling");
	metricf((double)ob->mem_peak / 1024.0, "kB", "sipc_stall_mem_held_max");
	metricf((double)atomic_load(&stall_load.outcome[SIPC_OUTCOME_UNKNOWN]),
	    "req", "sipc_stall_unknown");
	metricf((double)(atomic_load(&stall_load.outcome[SIPC_OUTCOME_REJECTED]) +
	    atomic_load(&stall_load.outcome[SIPC_OUTCOME_TIMEOUT])), "req",
	    "sipc_stall_rejected_or_timeout");
}

static void
cfg_stall(struct sipc_config *c, unsigned workers)
{
	cfg_base(c, workers);
	c->stall_ms = O.stall_ms;
	c->mem_ceiling = 4 * MiB;
	/* the ceiling must cover a ring, a ring one maximal frame */
	c->max_payload = 64 * 1024;
	c->ring_bytes = 1 * MiB;
}

/*
 * 4 workers under 4 KiB load (256 outstanding), one told to stop reading;
 * compared with a 3-worker run under the same load.
 */
static int
sec_stall(void)
{
	double warm = O.quick ? 0.3 : 1.0, dur = O.quick ? 1.0 : 3.0, rate3;
	struct stall_obs ob = { .slot = -1 };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	long rss_base;
	unsigned i;
	int rc;

	cfg_stall(&c, 3);
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	rc = measure_tput(s, 4096, 256, STALL_SUBMITTERS, warm, dur, &rate3,
	    NULL);
	sipc_destroy(s);
	if (rc < 0)
		return -1;
	metricf(rate3, "msg/s", "sipc_stall_base3_msgs");

	cfg_stall(&c, 4);
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	if (sipc_stats_get(s, &st) < 0)
		goto fail;
	for (i = 0; i < st.nworkers; i++)
		stall_track.init_gen[slot_of(st.workers[i].worker_id)] =
		    st.workers[i].generation;
	sipc_stats_release(&st);
	ob.rss_peak = rss_base = bench_rss_kb(0);
	if (load_start(&stall_load, s, 4096, 256, STALL_SUBMITTERS,
	    &stall_track) < 0)
		goto fail;
	idle_sample(warm, &ob.rss_peak);
	rc = stall_run(s, &ob);
	idle_sample(0.5, &ob.rss_peak);
	if (load_stop(&stall_load, 60000) < 0)
		goto fail;
	load_report(&stall_load, "stall load");
	if (rc == 0)
		stall_report(&ob, rss_base, c.mem_ceiling);
	sipc_destroy(s);
	return rc;
fail:
	sipc_destroy(s);
	return -1;
}

/* Journal durability cost: pipelined 64 B and call p50 per mode. */
static int
sec_journal(void)
{
	static const struct { const char *name; enum sipc_durability d; } m[] = {
		{ "off", SIPC_DURABLE_OFF }, { "group", SIPC_DURABLE_GROUP },
		{ "each", SIPC_DURABLE_EACH },
	};
	double dur = O.quick ? 0.4 : 2.0, rate;
	struct sipc_request req = { .len = 64, .timeout_ms = 10000 };
	uint64_t lat[2000], t;
	uint8_t buf[64];
	char dir[PATH_MAX], err[256];
	struct sipc_config c;
	struct sipc_result res;
	sipc_supervisor *s;
	unsigned i, k, n;
	int rc;

	if (O.state_dir == NULL) {
		bench_note("journal skipped: no --state-dir");
		return 0;
	}
	bench_fill(buf, sizeof(buf), 64);
	req.payload = buf;
	for (i = 0; i < 3; i++) {
		snprintf(dir, sizeof(dir), "%s/%s-%d", O.state_dir, m[i].name,
		    (int)getpid());
		mkdir(O.state_dir, 0700);
		mkdir(dir, 0700);
		cfg_base(&c, 1);
		c.state_dir = dir;
		c.durability = m[i].d;
		c.max_inflight = 64;
		err[0] = '\0';
		if ((rc = sipc_create(&c, err, sizeof(err), &s)) < 0) {
			notef("journal %s skipped: %s: %s", m[i].name,
			    sipc_strerror(rc), err);
			continue;
		}
		if (sipc_wait_ready(s, 1, 10000) < 0 ||
		    measure_tput(s, 64, 256, LOAD_SUBMITTERS, 0.3, dur, &rate,
		    NULL) < 0) {
			sipc_destroy(s);
			return -1;
		}
		metricf(rate, "msg/s", "sipc_journal_%s_64_msgs", m[i].name);
		n = O.quick ? 200 : 2000;
		for (k = 0; k < n; k++) {
			t = bench_now_ns();
			if (sipc_call(s, &req, &res) < 0)
				break;
			lat[k] = bench_now_ns() - t;
			sipc_result_release(&res);
		}
		metricf((double)bench_pct(lat, k, 50) / 1e3, "us",
		    "sipc_journal_%s_call_p50", m[i].name);
		sipc_destroy(s);
	}
	return 0;
}

/* ----------------------------------------------------------------- main */

static const struct {
	const char *name;
	int (*fn)(void);
} sections[] = {
	{ "call", sec_call }, { "pipe", sec_pipe }, { "spawn", sec_spawn },
	{ "mem", sec_mem }, { "scale", sec_scale }, { "stall", sec_stall },
	{ "journal", sec_journal }, { "accept", sec_accept },
	{ "containment", sec_contain }, { "cost", sec_cost },
	{ "sandbox", sec_sandbox }, { "sandbox_hardening", sec_hardening },
	{ "cancel", sec_cancel },
	{ "recycle", sec_recycle }, { "figures", sec_figures },
	{ "spawn_contained", sec_spawn_contained },
	{ "syscalls", sec_syscalls },
	{ "fdpass", sec_fdpass },
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

static void
process_setup(void)
{
	struct rlimit rl;

	/* SIGCHLD stays as the host left it: the library does not need it
	 * blocked (sipc.h, "Process-wide state"). */
	bench_ignore_sigpipe();
	/* 256 workers need more than 1024 descriptors. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int
usage(void)
{
	fprintf(stderr, "usage: sipc_bench [--quick] --fixtures DIR "
	    "[--state-dir DIR] [--stall-ms N] [--init PATH] SECTION...\n"
	    "sections:");
	for (size_t i = 0; i < NSECTIONS; i++)
		fprintf(stderr, " %s", sections[i].name);
	fprintf(stderr, "\n");
	return 2;
}

int
main(int argc, char **argv)
{
	int i, failed = 0, ran = 0;
	size_t k;

	O.quick = bench_quick(argc, argv);
	O.stall_ms = 1000;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			continue;
		if (i + 1 < argc && strcmp(argv[i], "--fixtures") == 0)
			O.fixdir = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--state-dir") == 0)
			O.state_dir = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--stall-ms") == 0)
			O.stall_ms = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--init") == 0)
			O.init_path = argv[++i];
		else
			break;
	}
	if (O.fixdir == NULL || i == argc || O.stall_ms == 0)
		return usage();
	snprintf(O.echo, sizeof(O.echo), "%s/echo", O.fixdir);
	if (access(O.echo, X_OK) != 0) {
		fprintf(stderr, "sipc_bench: %s: %s\n", O.echo, strerror(errno));
		return 1;
	}
	process_setup();
	for (; i < argc; i++) {
		for (k = 0; k < NSECTIONS; k++)
			if (strcmp(argv[i], sections[k].name) == 0)
				break;
		if (k == NSECTIONS)
			return usage();
		ran++;
		if (sections[k].fn() < 0) {
			notef("sipc section %s failed", sections[k].name);
			failed++;
		}
	}
	return failed ? 1 : ran == 0;
}
