/*
 * sipc_cancel.c - the `cancel` section of sipc_bench: from a request's
 * deadline to its converter process being gone.
 *
 * The cancelwait fixture's handler forks a child (the converter, here a
 * sleeping process) and waits.  `coop`: the handler polls
 * sipc_worker_cancel_fd() beside the child and kills it when the fd
 * fires, then answers; the worker stays up.  `grace`: the handler
 * ignores its cancel, so the child lives until the supervisor ends the
 * worker's tree after cancel_grace_ms (default 2 s), as every timeout
 * did before a handler could see its cancel.  The bench finds the child
 * in the worker's /proc children list, pins it with a pidfd, and times
 * from the deadline (submit time + timeout) to the pidfd becoming
 * readable (the child exited).  Process-group containment, so the pid
 * is the host's.
 *
 * Threads: the main thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"
#include "sipc_bench.h"

#define CANCEL_TIMEOUT_MS 200
#define CANCEL_ROUNDS 20
#define CANCEL_ROUNDS_QUICK 5
#define GRACE_ROUNDS 3

/* The outcome (TIMEOUT) is not what is measured here. */
static void
cancel_done(void *arg, struct sipc_result *res)
{
	sipc_result_release(res);
}

/* The worker's pid now (0 if unknown). */
static pid_t
cancel_worker_pid(sipc_supervisor *s)
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

/* Wait up to `ms` for the worker's child (the converter) and pin it with
 * a pidfd; -1 if none came. */
static int
child_pin(pid_t w, unsigned ms)
{
	uint64_t end = bench_now_ns() + (uint64_t)ms * 1000000u;
	char path[64];
	int pid = 0, fd = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)w,
	    (int)w);
	while (fd < 0 && bench_now_ns() < end) {
		if ((f = fopen(path, "re")) != NULL) {
			if (fscanf(f, "%d", &pid) == 1 && pid > 0)
				fd = (int)syscall(SYS_pidfd_open, pid, 0);
			fclose(f);
		}
		if (fd < 0)
			usleep(100);
	}
	return fd;
}

/* One request: ms from its deadline to its child gone, or -1e9.  The
 * supervisor keeps deadlines in whole milliseconds of the monotonic
 * clock, so the cancel may come up to 1 ms before submit + timeout: a
 * figure slightly below 0 is a child gone at the deadline. */
static double
one_round(sipc_supervisor *s, const char *cmd)
{
	char p[64];
	size_t len;
	uint64_t t0, deadline;
	struct sipc_request rq = { .timeout_ms = CANCEL_TIMEOUT_MS };
	struct pollfd pf;
	pid_t w = cancel_worker_pid(s);
	int fd;

	memcpy(p, "\0CMD", 4);
	len = 4 + (size_t)snprintf(p + 4, sizeof(p) - 4, "%s", cmd);
	rq.payload = p;
	rq.len = len;
	t0 = bench_now_ns();
	if (sipc_submit(s, &rq, cancel_done, NULL, NULL) != 0)
		return -1e9;
	deadline = t0 + (uint64_t)CANCEL_TIMEOUT_MS * 1000000u;
	if (w <= 0 || (fd = child_pin(w, CANCEL_TIMEOUT_MS)) < 0)
		return -1e9;
	pf = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (poll(&pf, 1, 30000) < 0 && errno == EINTR)
		;
	close(fd);
	return pf.revents ? (double)((int64_t)(bench_now_ns() - deadline)) / 1e6
	    : -1e9;
}

static int
cancel_run(const char *mode, const char *cmd, unsigned rounds)
{
	char fx[PATH_MAX];
	char *const argv[] = { "cancelwait", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	double v[CANCEL_ROUNDS], t;
	unsigned i, n = 0;

	snprintf(fx, sizeof(fx), "%s/cancelwait", O.fixdir);
	cfg_base(&c, 1);
	c.path = fx;
	c.argv = argv;
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.restart_base_ms = 10;
	if (sup_start(&c, 10000, &s) < 0)
		return -1;
	for (i = 0; i < rounds; i++) {
		if ((t = one_round(s, cmd)) > -1e8)
			v[n++] = t;
		if (sipc_wait_ready(s, 1, 10000) != 0)
			break;
		usleep(20000);          /* let the worker settle */
	}
	sipc_destroy(s);
	if (n == 0) {
		notef("cancel %s: no child seen gone", mode);
		return -1;
	}
	metricf(bench_median(v, n), "ms", "sipc_cancel_%s_gone_p50", mode);
	metricf(v[n - 1], "ms", "sipc_cancel_%s_gone_max", mode);
	metricf((double)n, "runs", "sipc_cancel_%s_gone_n", mode);
	return 0;
}

int
sec_cancel(void)
{
	int r = 0;

	notef("cancel: deadline %u ms, cancel_grace_ms %u (default)",
	    CANCEL_TIMEOUT_MS, 2000u);
	if (cancel_run("coop", "child 60000",
	    O.quick ? CANCEL_ROUNDS_QUICK : CANCEL_ROUNDS) < 0)
		r = -1;
	if (cancel_run("grace", "childignore 60000", GRACE_ROUNDS) < 0)
		r = -1;
	return r;
}
