/*
 * sipc_accept.c - the `accept` section of sipc_bench: the price of exact
 * start evidence, the echo worker's start counter and its exact ACCEPT
 * frames against the old whole-batch rule, same run (run.sh forms the
 * ratios).
 *
 * Threads: the main thread; load submitters and completion callbacks
 * only touch the atomics of sipc_load.h.
 */
#include <sys/resource.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"
#include "sipc_load.h"

/*
 * The price of exact start evidence, three modes of the echo worker:
 *   exact   as shipped: its start counter (CONTRACT A5) names each
 *           request right before its handler, after REPLY(N-1) is
 *           written;
 *   frames  SIPC_FX_ACCEPT=frames: the same rule in ACCEPT frames,
 *           ACCEPT(N) in the write that carries REPLY(N-1);
 *   batch   SIPC_ECHO_ACCEPT=batch: the old rule, every ACCEPT of a
 *           read batch in one write before the first handler.
 * Same run, modes rotating round by round, median of the rounds: sync
 * 64 B p50 (1 worker), pipelined 64 B msg/s (1 worker, max_inflight 64,
 * 256 outstanding) and the CPU time per pipelined request, supervisor
 * and worker together (getrusage of this process and of its reaped
 * children, from start to destroy), and the worker's write() calls per
 * pipelined request (/proc/PID/io), which is where the rules differ.
 */
#define NMODE 3
static const char *const mode_name[NMODE] = { "exact", "frames", "batch" };
static const char *const frames_env[] = { "SIPC_FX_ACCEPT=frames", NULL };
static const char *const batch_env[] = { "SIPC_ECHO_ACCEPT=batch", NULL };
static const char *const *const mode_env[NMODE] = { NULL, frames_env,
    batch_env };

static double
cpu_us(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Pid of worker 0, or 0 (sipc_bench.h). */
pid_t
worker_pid(sipc_supervisor *s)
{
	struct sipc_stats st;
	pid_t pid = 0;

	if (sipc_stats_get(s, &st) == 0) {
		if (st.nworkers > 0)
			pid = st.workers[0].pid;
		sipc_stats_release(&st);
	}
	return pid;
}

static int
accept_call(unsigned m, double dur, double *ret_p50)
{
	static uint64_t lat[200000];
	struct sipc_config c;
	struct sipc_result res;
	uint8_t buf[64];
	struct sipc_request req = { .payload = buf, .len = sizeof(buf),
	    .timeout_ms = 10000 };
	sipc_supervisor *s;
	uint64_t end, t;
	size_t n = 0, k;

	cfg_base(&c, 1);
	c.env_set = mode_env[m];
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	bench_fill(buf, sizeof(buf), 64);
	for (k = 0; k < 300; k++) {
		sipc_call(s, &req, &res);
		sipc_result_release(&res);
	}
	end = bench_now_ns() + (uint64_t)(dur * 1e9);
	do {
		t = bench_now_ns();
		if (sipc_call(s, &req, &res) < 0 ||
		    res.outcome != SIPC_OUTCOME_OK) {
			sipc_result_release(&res);
			sipc_destroy(s);
			return -1;
		}
		lat[n++] = bench_now_ns() - t;
		sipc_result_release(&res);
	} while (t < end && n < sizeof(lat) / sizeof(lat[0]));
	sipc_destroy(s);
	*ret_p50 = (double)bench_pct(lat, n, 50) / 1e3;
	return 0;
}

/* write() calls a process made so far (/proc/PID/io syscw), 0 if
 * unreadable. */
static double
proc_writes(pid_t pid)
{
	char path[64], line[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "syscw: %llu", &v) == 1)
			break;
	fclose(f);
	return (double)v;
}

static int
accept_pipe(unsigned m, double warm, double dur, double *ret_rate,
    double *ret_cpu, double *ret_writes)
{
	static struct load L;
	double cpu0 = cpu_us(RUSAGE_SELF) + cpu_us(RUSAGE_CHILDREN), w0;
	struct sipc_config c;
	sipc_supervisor *s;
	uint64_t t0, n0, n1, total;
	pid_t wpid;
	int rc;

	cfg_base(&c, 1);
	c.env_set = mode_env[m];
	c.max_inflight = 64;
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	wpid = worker_pid(s);
	if ((rc = load_start(&L, s, 64, 256, LOAD_SUBMITTERS, NULL)) < 0)
		goto out;
	idle_sample(warm, NULL);
	t0 = bench_now_ns();
	n0 = atomic_load(&L.ok);
	w0 = proc_writes(wpid);
	idle_sample(dur, NULL);
	n1 = atomic_load(&L.ok);
	*ret_writes = (proc_writes(wpid) - w0) / (double)(n1 > n0 ? n1 - n0 : 1);
	*ret_rate = (double)(n1 - n0) / bench_secs(t0, bench_now_ns());
	rc = load_stop(&L, 60000);
	load_report(&L, m == 0 ? "accept exact" : m == 1 ? "accept frames" :
	    "accept batch");
	total = atomic_load(&L.ok);
out:
	sipc_destroy(s);       /* reaps the worker: its CPU joins ours */
	if (rc < 0)
		return rc;
	*ret_cpu = (cpu_us(RUSAGE_SELF) + cpu_us(RUSAGE_CHILDREN) - cpu0) /
	    (double)(total ? total : 1);
	return 0;
}

int
sec_accept(void)
{
	unsigned rounds = O.quick ? 3 : 7, r, m;
	double call[NMODE][7], pipe[NMODE][7], cpu[NMODE][7], wr[NMODE][7];
	double dcall = O.quick ? 0.2 : 0.6, warm = O.quick ? 0.1 : 0.3;
	double dpipe = O.quick ? 0.3 : 1.0;

	for (r = 0; r < rounds; r++)
		for (m = 0; m < NMODE; m++) {
			/* rotate which mode goes first */
			unsigned b = (r + m) % NMODE;

			if (accept_call(b, dcall, &call[b][r]) < 0 ||
			    accept_pipe(b, warm, dpipe, &pipe[b][r],
			    &cpu[b][r], &wr[b][r]) < 0) {
				notef("accept %s round %u failed",
				    mode_name[b], r);
				return -1;
			}
		}
	for (m = 0; m < NMODE; m++) {
		metricf(bench_median(call[m], rounds), "us",
		    "sipc_accept_%s_call_64_p50", mode_name[m]);
		metricf(bench_median(pipe[m], rounds), "msg/s",
		    "sipc_accept_%s_pipe_64_msgs", mode_name[m]);
		metricf(bench_median(cpu[m], rounds), "us",
		    "sipc_accept_%s_pipe_64_cpu_per_req", mode_name[m]);
		metricf(bench_median(wr[m], rounds), "calls",
		    "sipc_accept_%s_pipe_64_worker_writes_per_req",
		    mode_name[m]);
	}
	metricf((double)rounds, "rounds", "sipc_accept_rounds");
	return 0;
}
