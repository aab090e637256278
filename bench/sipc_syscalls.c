/*
 * sipc_syscalls.c - the `syscalls` section of sipc_bench: the system
 * calls of one synchronous 64 B sipc_call(), on the caller's side (every
 * thread of this process: the calling thread and the library's reader,
 * writer, reaper) and on the worker's (every thread of the worker
 * process), counted by the kernel, against raw_pingpong's counts of its
 * one-descriptor channels (run.sh prints both).
 *
 * One worker, the `call` section's configuration (defaults: the worker
 * is the echo fixture's own process), at the two placements the call's
 * p50 is measured at without moving the worker: not pinned, and samecpu
 * (this thread pinned to one CPU before sipc_create(), so the library's
 * threads and the worker inherit it; `_samecpu` in the names).  After a
 * warm-up, a perf counter on raw_syscalls:sys_enter per task (bench.h,
 * bench_sysc_*), then N calls (20,000, quick 3,000), each reply
 * compared with its request.  Nothing is timed here: a counted task pays
 * at each switch.  Figures, per placement:
 *   sipc_call_64[_samecpu]_syscalls_caller, _syscalls_worker (calls)
 * and a note with the calls by thread and name; then, samecpu, with the
 * counters closed, 5 N calls more: user and system CPU per call of this
 * process and of the worker (bench_cpu_trips: the kernel's estimate of
 * the split) and the mean call,
 *   sipc_call_64_samecpu_cpu_user_caller, _cpu_sys_caller,
 *   _cpu_user_worker, _cpu_sys_worker, _mean (us)
 * against raw_pingpong's same figures of its one-descriptor channels.  Where the counter
 * cannot be opened: a note "system calls not measured: <why>".
 *
 * Threads: the main thread calls; the library's threads are counted.
 */
#include <sched.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"

#define MAXTASKS 16

struct call_arg {
	sipc_supervisor *s;
	struct sipc_request *req;
};

static int
call64(void *arg)
{
	struct call_arg *a = arg;
	struct sipc_result res;
	int rc = sipc_call(a->s, a->req, &res);

	if (rc == 0 && res.outcome != SIPC_OUTCOME_OK)
		rc = -1;
	sipc_result_release(&res);
	return rc;
}

static int
count_calls(long id, bool pinned, unsigned n)
{
	struct bench_sysc_task sup[MAXTASKS], wk[MAXTASKS];
	const char *tag = pinned ? "_samecpu" : "";
	char lc[640], lw[320];
	struct sipc_result res;
	struct sipc_config c;
	cpu_set_t saved;
	sipc_supervisor *s;
	uint8_t buf[64];
	struct sipc_request req = { .payload = buf, .len = sizeof(buf),
	    .timeout_ms = 10000 };
	int ns = 0, nw = 0, rc = -1, cpu[2];
	unsigned k;
	pid_t wpid;

	if (pinned) {
		if (bench_two_cpus(cpu) < 1 ||
		    sched_getaffinity(0, sizeof(saved), &saved) < 0)
			return 0;
		bench_pin(cpu[0]);
	}
	cfg_base(&c, 1);
	if (sup_start(&c, 10000, &s) < 0) {
		if (pinned)
			(void)sched_setaffinity(0, sizeof(saved), &saved);
		return -1;
	}
	rc = -1;
	if ((wpid = worker_pid(s)) <= 0)
		goto out;
	bench_fill(buf, sizeof(buf), 64);
	for (k = 0; k < 300; k++) {
		if (sipc_call(s, &req, &res) < 0)
			goto out;
		sipc_result_release(&res);
	}
	if ((ns = bench_sysc_tasks_open(id, 0, sup, MAXTASKS)) < 0 ||
	    (nw = bench_sysc_tasks_open(id, wpid, wk, MAXTASKS)) < 0) {
		notef("syscalls: not measured: perf_event_open: %s",
		    strerror(-(ns < 0 ? ns : nw)));
		rc = 0;
		goto out;
	}
	bench_sysc_calibrate(sup, ns, wk, nw);
	bench_sysc_tasks_read(sup, ns, 1);
	bench_sysc_tasks_read(wk, nw, 1);
	for (k = 0; k < n; k++) {
		if (sipc_call(s, &req, &res) < 0 ||
		    res.outcome != SIPC_OUTCOME_OK || res.reply_len != sizeof(buf) ||
		    memcmp(res.reply, buf, sizeof(buf)) != 0) {
			notef("syscalls: call %u failed", k);
			sipc_result_release(&res);
			goto out;
		}
		sipc_result_release(&res);
	}
	bench_sysc_tasks_read(sup, ns, 0);
	bench_sysc_tasks_read(wk, nw, 0);
	metricf(bench_sysc_side(sup, ns, n, lc, sizeof(lc)), "calls",
	    "sipc_call_64%s_syscalls_caller", tag);
	metricf(bench_sysc_side(wk, nw, n, lw, sizeof(lw)), "calls",
	    "sipc_call_64%s_syscalls_worker", tag);
	notef("syscalls: sipc_call 64 B %s, system calls a call (%u counted): "
	    "caller %s; worker %s", pinned ? "samecpu" : "not pinned", n, lc, lw);
	rc = 0;
	if (pinned) {
		struct call_arg ca = { s, &req };

		while (ns > 0)
			bench_sysc_task_close(&sup[--ns]);
		while (nw > 0)
			bench_sysc_task_close(&wk[--nw]);
		if (bench_cpu_trips("sipc_call_64_samecpu", wpid, n * 5, call64,
		    &ca) < 0) {
			notef("syscalls: CPU split of the calls failed");
			rc = -1;
		}
	}
out:
	while (ns > 0)
		bench_sysc_task_close(&sup[--ns]);
	while (nw > 0)
		bench_sysc_task_close(&wk[--nw]);
	sipc_destroy(s);
	if (pinned)
		(void)sched_setaffinity(0, sizeof(saved), &saved);
	return rc;
}

int
sec_syscalls(void)
{
	unsigned n = O.quick ? 3000 : 20000;
	char why[160];
	long id;

	/* While this process has one thread: the lookup may fork. */
	if ((id = bench_sysc_id(why, sizeof(why))) < 0) {
		notef("syscalls: not measured: %s", why);
		return 0;
	}
	if (count_calls(id, false, n) < 0 || count_calls(id, true, n) < 0)
		return -1;
	return 0;
}
