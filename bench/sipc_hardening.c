/*
 * sipc_hardening.c - the `sandbox_hardening` section of sipc_bench:
 * what each hardening of the sandbox provider costs a worker's start,
 * and what the hardening as a whole costs pipelined requests, same echo
 * worker, same run.
 *
 * The hardenings, each switched off by a test hook of the provider
 * (sipc__sbx_test_skip, src/provider/provider.h): the system-call filter
 * whose listener sipc-init holds, with what sipc-init sets beside it
 * (no_new_privs, capabilities dropped, core limit 0;
 * SIPC__SBX_SKIP_FILTER), the hard
 * resource limits and the capped /tmp (SIPC__SBX_SKIP_LIMITS), the
 * unprivileged identity of a root supervisor's bwrap
 * (SIPC__SBX_SKIP_SETID; not root: the workers keep the supervisor's
 * ids either way) and the Landlock rules (SIPC__SBX_SKIP_LANDLOCK; a
 * kernel without Landlock has none either way).  Combinations: all on,
 * each one alone off, all off.
 *
 * Spawn-to-ready: sipc_create of one sandboxed worker until
 * sipc_wait_ready returns (the start-up probe included), `reps` times
 * per combination, the combinations taken in turn within every
 * repetition (the first rotating) so that drift and other load hit all
 * alike; the p50 of each.  A hardening's cost (all on minus that one
 * off, us) and all on minus all off are the median of the differences
 * within each repetition: on a shared machine the load moves the p50s
 * by more than the hardening costs, and the spawns of one repetition
 * are milliseconds apart.  Beside each, the CPU one start and stop
 * takes (this process and every process of the sandbox, reaped by
 * then: getrusage), which others' load moves less than the wall clock,
 * and its costs the same way.  Then pipelined 64 B through one worker, all
 * on against all off (max_inflight 64, 256 outstanding, one submitter,
 * as in `pipe`), short rounds alternating: each rate the median of its
 * rounds, the ratio the median of each round pair's.  A sandbox that
 * cannot start here is a note, not a failure.
 *
 * Threads: the main thread (the hook is read at launch, on the
 * supervisor's threads, only while no supervisor runs it changes).
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"
#include "provider/provider.h"

#define REPS 50
#define REPS_QUICK 5
#define PIPE_ROUNDS 8

#define SKIP_ALL (SIPC__SBX_SKIP_FILTER | SIPC__SBX_SKIP_LIMITS | \
    SIPC__SBX_SKIP_SETID | SIPC__SBX_SKIP_LANDLOCK)

static const struct {
	const char *name;     /* figure suffix */
	const char *what;     /* the hardening left out (cost lines) */
	unsigned skip;
} combos[] = {
	{ "all_on", NULL, 0 },
	{ "no_filter", "filter", SIPC__SBX_SKIP_FILTER },
	{ "no_limits", "limits", SIPC__SBX_SKIP_LIMITS },
	{ "no_identity", "identity", SIPC__SBX_SKIP_SETID },
	{ "no_landlock", "landlock", SIPC__SBX_SKIP_LANDLOCK },
	{ "all_off", NULL, SKIP_ALL },
};
#define NCOMBOS (sizeof(combos) / sizeof(combos[0]))

static void
cfg_sbx(struct sipc_config *c)
{
	cfg_base(c, 1);
	c->provider = "sandbox";
	c->init_path = O.init_path;
}

/* CPU of this process and its reaped descendants, ms. */
static double
cpu_ms(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec +
	    kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) * 1e3 +
	    (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec +
	    kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e3;
}

/* One worker ready under `skip`: ms, or -1; *ret_cpu (if not NULL) the
 * CPU of the whole start and stop (the supervisor's, bwrap's, sipc-init's
 * and the worker's, the probe included: all reaped by then), ms. */
static double
ready_once(unsigned skip, double *ret_cpu)
{
	struct sipc_config c;
	sipc_supervisor *s;
	uint64_t t0;
	double ms, c0 = cpu_ms();

	cfg_sbx(&c);
	sipc__sbx_test_skip = skip;
	t0 = bench_now_ns();
	if (sup_start(&c, 30000, &s) < 0) {
		sipc__sbx_test_skip = 0;
		return -1;
	}
	ms = ms_since(t0);
	sipc_destroy(s);
	sipc__sbx_test_skip = 0;
	if (ret_cpu != NULL)
		*ret_cpu = cpu_ms() - c0;
	return ms;
}

/* Pipelined 64 B msg/s through one worker under `skip`, or -1. */
static double
pipe_once(unsigned skip)
{
	double warm = O.quick ? 0.2 : 0.3, dur = O.quick ? 0.5 : 0.6, rate;
	struct sipc_config c;
	sipc_supervisor *s;
	int rc;

	cfg_sbx(&c);
	c.max_inflight = 64;
	sipc__sbx_test_skip = skip;
	rc = sup_start(&c, 30000, &s);
	sipc__sbx_test_skip = 0;
	if (rc < 0)
		return -1;
	rc = measure_tput(s, 64, 256, LOAD_SUBMITTERS, warm, dur, &rate, NULL);
	sipc_destroy(s);
	return rc < 0 ? -1 : rate;
}

static int
landlock_here(void)
{
#ifdef SYS_landlock_create_ruleset
	/* LANDLOCK_CREATE_RULESET_VERSION: the ABI, or -1 */
	return syscall(SYS_landlock_create_ruleset, NULL, 0, 1u << 0) > 0;
#else
	return 0;
#endif
}

int
sec_hardening(void)
{
	static double ready[NCOMBOS][REPS], cpu[NCOMBOS][REPS];
	double p50[NCOMBOS], diff[REPS], v;
	double on[PIPE_ROUNDS], off[PIPE_ROUNDS], pair[PIPE_ROUNDS];
	unsigned reps = O.quick ? REPS_QUICK : REPS;
	unsigned rounds = O.quick ? 1 : PIPE_ROUNDS;
	size_t i, j;

	if (O.init_path == NULL) {
		notef("sandbox_hardening: no --init given: not measured");
		return 0;
	}
	if (ready_once(0, NULL) < 0) {
		notef("sandbox_hardening: no sandboxed worker starts here "
		    "(bwrap missing or namespaces refused): not measured");
		return 0;
	}
	notef("sandbox_hardening: identity %s, Landlock %s; %u spawns per "
	    "combination, interleaved",
	    geteuid() == 0 ? "in effect (root: bwrap runs as sandbox_uid)" :
	    "no difference (not root: workers keep our ids either way)",
	    landlock_here() ? "in effect" :
	    "no difference (the kernel has none)", reps);
	for (unsigned k = 0; k < reps; k++)
		for (i = 0; i < NCOMBOS; i++) {
			j = (i + k) % NCOMBOS;
			if ((ready[j][k] = ready_once(combos[j].skip,
			    &cpu[j][k])) < 0)
				return -1;
		}
	for (i = 0; i < NCOMBOS; i++) {
		p50[i] = bench_median(ready[i], reps);
		metricf(p50[i], "ms", "sipc_sbx_ready_p50_%s", combos[i].name);
		metricf(bench_median(cpu[i], reps), "ms",
		    "sipc_sbx_start_cpu_p50_%s", combos[i].name);
	}
	for (i = 1; i < NCOMBOS; i++) {
		for (unsigned k = 0; k < reps; k++)
			diff[k] = (ready[0][k] - ready[i][k]) * 1e3;
		if (combos[i].what != NULL)
			metricf(bench_median(diff, reps), "us",
			    "sipc_sbx_cost_%s_us", combos[i].what);
		else
			metricf(bench_median(diff, reps), "us",
			    "sipc_sbx_ready_all_on_minus_off_us");
		for (unsigned k = 0; k < reps; k++)
			diff[k] = (cpu[0][k] - cpu[i][k]) * 1e3;
		metricf(bench_median(diff, reps), "us",
		    "sipc_sbx_start_cpu_cost_%s_us",
		    combos[i].what != NULL ? combos[i].what : "all");
	}
	for (unsigned r = 0; r < rounds; r++) {
		for (i = 0; i < 2; i++) {
			bool hard = (i + r) % 2 == 0;

			if ((v = pipe_once(hard ? 0 : SKIP_ALL)) < 0)
				return -1;
			(hard ? on : off)[r] = v;
		}
		pair[r] = on[r] / off[r];
	}
	metricf(bench_median(on, rounds), "msg/s",
	    "sipc_sbx_pipe_64_hardened_msgs");
	metricf(bench_median(off, rounds), "msg/s",
	    "sipc_sbx_pipe_64_unhardened_msgs");
	metricf(bench_median(pair, rounds), "x",
	    "sipc_sbx_pipe_64_hardened_vs_unhardened");
	return 0;
}
