/*
 * sipc_cost.c - the `cost` section of sipc_bench: what one request costs
 * the machine, supervisor and worker together, against the raw
 * baselines' figures of the same run (run.sh forms the ratios); and the
 * bare spawns the `scale` section compares its 256-worker start with.
 *
 * Pipelined (1 worker, max_inflight 64, 256 of 64 B outstanding, as in
 * `pipe`): CPU time of this process (every thread) and of the worker
 * process (the kernel's per-process CPU clocks) and context switches of
 * both, over the measured interval, per OK reply.
 * Synchronous (1 worker, sipc_call of 64 B in a loop): context switches
 * of both processes per call (getrusage of this process, the worker's
 * /proc/PID/task/x/status), CPU per call, and futex system calls per
 * call, counted by the kernel: a perf counter on the syscall entry
 * tracepoints of the futex calls, inherited by every thread and process
 * this one starts afterwards (the library's threads, the worker).  Where
 * the counter cannot be opened the figure is a note saying why, never
 * an estimate.  The counter runs on a supervisor of its own: a counted
 * task pays a little at each context switch, so the other figures are
 * taken without it.
 *
 * Threads: the main thread (the synchronous part runs first, while it is
 * the only thread); load submitters and completion callbacks only touch
 * the atomics of sipc_load.h.
 */
#include <linux/perf_event.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"
#include "sipc_load.h"

extern char **environ;

/* The futex system calls: the classic multiplexer and the futex2 ones. */
static const char *const futex_tp[] = {
	"sys_enter_futex", "sys_enter_futex_wait", "sys_enter_futex_wake",
	"sys_enter_futex_waitv", "sys_enter_futex_requeue",
};
#define NFTP (sizeof(futex_tp) / sizeof(futex_tp[0]))

struct futex_ctr {
	int fd[NFTP];
	size_t n;
};

/* Tracepoint ids of the futex calls (bench_tp_id: tracefs, or a private
 * mount of it; may fork, so while this process has one thread); returns
 * how many were found. */
static size_t
tp_ids(long ids[NFTP])
{
	char ev[64];
	size_t i, found = 0;

	for (i = 0; i < NFTP; i++) {
		snprintf(ev, sizeof(ev), "syscalls/%s", futex_tp[i]);
		found += (ids[i] = bench_tp_id(ev)) >= 0;
	}
	return found;
}

/*
 * Open one counter per futex tracepoint on this process, inherited by
 * the threads and processes it starts from now on.  Returns 0, or -1
 * with the reason in `why`.
 */
static int
futex_ctr_open(struct futex_ctr *fc, char *why, size_t whylen)
{
	struct perf_event_attr a;
	long ids[NFTP];
	size_t i;
	int fd;

	fc->n = 0;
	if (tp_ids(ids) == 0) {
		snprintf(why, whylen, "no syscalls:sys_enter_futex tracepoint "
		    "(tracefs not mounted%s, or no syscall tracepoints in this "
		    "kernel)", geteuid() ? " and not root" : "");
		return -1;
	}
	if (ids[0] < 0) {
		snprintf(why, whylen, "no syscalls:sys_enter_futex tracepoint");
		return -1;
	}
	for (i = 0; i < NFTP; i++) {
		if (ids[i] < 0)
			continue;
		memset(&a, 0, sizeof(a));
		a.type = PERF_TYPE_TRACEPOINT;
		a.size = sizeof(a);
		a.config = (uint64_t)ids[i];
		a.inherit = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
		    PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			snprintf(why, whylen, "perf_event_open(%s): %s "
			    "(perf_event_paranoid or privileges)", futex_tp[i],
			    strerror(errno));
			while (fc->n > 0)
				close(fc->fd[--fc->n]);
			return -1;
		}
		fc->fd[fc->n++] = fd;
	}
	return 0;
}

/* Futex calls so far by this process and what it started since the
 * counters opened (live tasks included). */
static double
futex_ctr_read(const struct futex_ctr *fc)
{
	uint64_t v, sum = 0;
	size_t i;

	for (i = 0; i < fc->n; i++)
		if (read(fc->fd[i], &v, sizeof(v)) == (ssize_t)sizeof(v))
			sum += v;
	return (double)sum;
}

static void
futex_ctr_close(struct futex_ctr *fc)
{
	while (fc->n > 0)
		close(fc->fd[--fc->n]);
}

/* Both processes' counters at one moment. */
struct snap {
	double cpu_us, ctxsw, ctxsw_host, futex;
};

static void
snap_take(struct snap *sn, pid_t wpid, const struct futex_ctr *fc)
{
	sn->cpu_us = (double)(bench_cpu_ns(0) + bench_cpu_ns(wpid)) / 1e3;
	sn->ctxsw_host = bench_ctxsw(0);
	sn->ctxsw = sn->ctxsw_host + bench_ctxsw(wpid);
	sn->futex = fc != NULL ? futex_ctr_read(fc) : 0;
}

/* Pipelined, 1 worker, `size` bytes with the pipe section's window:
 * msg/s, CPU and context switches per OK reply; `tag` "" or "_each"
 * (load_refill_each, sipc_load.h) in the metric names. */
static int
cost_pipe(size_t size, double warm, double dur, const char *tag)
{
	static struct load L;
	struct snap a, b;
	struct sipc_config c;
	sipc_supervisor *s;
	uint64_t t0, t1, n0, n1;
	unsigned window = (64u << 20) / size > 256 ? 256 :
	    (unsigned)((64u << 20) / size);
	pid_t wpid;
	int rc;

	cfg_base(&c, 1);
	c.max_inflight = 64;
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	if ((wpid = worker_pid(s)) <= 0) {
		notef("cost: no worker pid");
		sipc_destroy(s);
		return -1;
	}
	if ((rc = load_start(&L, s, size, window, LOAD_SUBMITTERS, NULL)) < 0)
		goto out;
	bench_sleep_ms((unsigned)(warm * 1000));
	n0 = atomic_load(&L.ok);
	t0 = bench_now_ns();
	snap_take(&a, wpid, NULL);
	bench_sleep_ms((unsigned)(dur * 1000));
	snap_take(&b, wpid, NULL);
	t1 = bench_now_ns();
	n1 = atomic_load(&L.ok);
	rc = load_stop(&L, 60000);
	if (rc < 0 || n1 <= n0)
		goto out;
	metricf((double)(n1 - n0) / bench_secs(t0, t1), "msg/s",
	    "sipc_cost_pipe_w1_%zu%s_msgs", size, tag);
	metricf((b.cpu_us - a.cpu_us) / (double)(n1 - n0), "us",
	    "sipc_cost_pipe_w1_%zu%s_cpu_per_req", size, tag);
	metricf((b.ctxsw - a.ctxsw) / (double)(n1 - n0), "switches",
	    "sipc_cost_pipe_w1_%zu%s_ctxsw_per_req", size, tag);
out:
	sipc_destroy(s);
	return rc < 0 ? -1 : 0;
}

/*
 * Synchronous 64 B calls, 1 worker, for `dur` seconds.  With `fc` (the
 * counter already open, so the supervisor's threads inherit it): futex
 * calls per call.  Without: context switches and CPU per call.
 */
static int
cost_call(double dur, const struct futex_ctr *fc)
{
	struct sipc_result res;
	struct sipc_config c;
	struct snap a, b;
	sipc_supervisor *s;
	uint8_t buf[64];
	struct sipc_request req = { .payload = buf, .len = sizeof(buf),
	    .timeout_ms = 10000 };
	uint64_t end;
	double n = 0;
	int k, rc = -1;
	pid_t wpid;

	cfg_base(&c, 1);
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	if ((wpid = worker_pid(s)) <= 0)
		goto out;
	bench_fill(buf, sizeof(buf), 64);
	for (k = 0; k < 300; k++) {
		if (sipc_call(s, &req, &res) < 0)
			goto out;
		sipc_result_release(&res);
	}
	snap_take(&a, wpid, fc);
	end = bench_now_ns() + (uint64_t)(dur * 1e9);
	do {
		if (sipc_call(s, &req, &res) < 0 ||
		    res.outcome != SIPC_OUTCOME_OK) {
			sipc_result_release(&res);
			goto out;
		}
		sipc_result_release(&res);
		n++;
	} while (bench_now_ns() < end);
	snap_take(&b, wpid, fc);
	if (fc != NULL) {
		metricf((b.futex - a.futex) / n, "calls",
		    "sipc_cost_call_64_futex");
		metricf(n, "calls", "sipc_cost_call_64_futex_n");
	} else {
		metricf((b.ctxsw - a.ctxsw) / n, "switches",
		    "sipc_cost_call_64_ctxsw");
		metricf((b.ctxsw_host - a.ctxsw_host) / n, "switches",
		    "sipc_cost_call_64_ctxsw_host");
		metricf((b.cpu_us - a.cpu_us) / n, "us", "sipc_cost_call_64_cpu");
		metricf(n, "calls", "sipc_cost_call_64_n");
	}
	rc = 0;
out:
	sipc_destroy(s);
	return rc;
}

int
sec_cost(void)
{
	double warm = O.quick ? 0.2 : 0.5, dur = O.quick ? 0.4 : 2.0;
	double dcall = O.quick ? 0.3 : 1.5;
	struct futex_ctr fc = { .n = 0 };
	char why[256];
	int rc;

	/* The counted run first: no library thread exists yet that the
	 * inherited counter would miss, and the tracepoint lookup may fork
	 * while this process has one thread.  The other figures come from
	 * supervisors started after the counter is closed: a counted task
	 * pays a little at each context switch. */
	if (futex_ctr_open(&fc, why, sizeof(why)) == 0) {
		rc = cost_call(dcall, &fc);
		futex_ctr_close(&fc);
		if (rc < 0)
			return -1;
	} else {
		notef("cost: futex calls per sync call not measurable here: %s",
		    why);
	}
	if (cost_call(dcall, NULL) < 0)
		return -1;
	/* 64 B carries the target; the larger sizes show where the
	 * pipelined path's time goes as frames grow. */
	if (cost_pipe(64, warm, dur, "") < 0 || cost_pipe(4096, warm, dur,
	    "") < 0 || cost_pipe(1048576, warm, dur, "") < 0)
		return -1;
	/* The same 64 B load refilled one request per completion. */
	load_refill_each = true;
	rc = cost_pipe(64, warm, dur, "_each");
	load_refill_each = false;
	return rc;
}

/*
 * `n` bare spawns of `path`: posix_spawn with standard descriptors on
 * /dev/null, each waited for before the next (`together` false), or all
 * spawned first and then all waited for (`together`: every start
 * competes for the CPUs, as a pool's workers do).  The echo worker
 * started this way finds no channel and exits at once, so this is the
 * start and exit of the same binary without any supervision.  Returns
 * the total in ms, or -1.
 */
double
bare_spawn_ms(const char *path, unsigned n, bool together)
{
	posix_spawn_file_actions_t fa;
	char *const argv[] = { (char *)path, NULL };
	pid_t *pids = calloc(n, sizeof(*pids));
	unsigned i, started = 0;
	int status, fd, rc = 0;
	uint64_t t0;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	for (fd = 0; fd < 3; fd++)
		posix_spawn_file_actions_addopen(&fa, fd, "/dev/null",
		    fd ? O_WRONLY : O_RDONLY, 0);
	if (pids == NULL) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	t0 = bench_now_ns();
	for (i = 0; i < n && rc == 0; i++) {
		if ((rc = posix_spawn(&pids[i], path, &fa, NULL, argv,
		    environ)))
			break;
		started++;
		while (!together && waitpid(pids[i], &status, 0) < 0 &&
		    errno == EINTR)
			;
	}
	for (i = 0; together && i < started; i++)
		while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
			;
	posix_spawn_file_actions_destroy(&fa);
	free(pids);
	return rc ? -1 : ms_since(t0);
}
