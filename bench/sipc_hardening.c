/*
 * sipc_hardening.c - the `sandbox_hardening` section of sipc_bench:
 * what each hardening of the sandbox provider costs a worker's start,
 * and what the hardening as a whole costs pipelined requests, same echo
 * worker, same run.
 *
 * The hardenings, each switched off by a test hook of the provider
 * (sipc__sbx_test_skip, src/unix/sandbox.h): the system-call filter
 * whose listener sipc-init holds (SIPC__SBX_SKIP_FILTER), the hard
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
 * alike; the p50 of each, each hardening's cost (all on minus that one
 * off, us) and all on minus all off.  Then pipelined 64 B through one
 * worker, all on against all off (max_inflight 64, 256 outstanding,
 * one submitter, as in `pipe`), rounds alternating, each figure the
 * median of its rounds.  A sandbox that cannot start here is a note,
 * not a failure.
 *
 * Threads: the main thread (the hook is read at launch, on the
 * supervisor's threads, only while no supervisor runs it changes).
 */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"
#include "unix/sandbox.h"

#define REPS 20
#define REPS_QUICK 5
#define PIPE_ROUNDS 3

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

/* One worker ready under `skip`: ms, or -1. */
static double
ready_once(unsigned skip)
{
	struct sipc_config c;
	sipc_supervisor *s;
	uint64_t t0;
	double ms;

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
	return ms;
}

/* Pipelined 64 B msg/s through one worker under `skip`, or -1. */
static double
pipe_once(unsigned skip)
{
	double warm = O.quick ? 0.2 : 0.5, dur = O.quick ? 0.5 : 1.5, rate;
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
	static double ready[NCOMBOS][REPS];
	double p50[NCOMBOS], on[PIPE_ROUNDS], off[PIPE_ROUNDS], v;
	unsigned reps = O.quick ? REPS_QUICK : REPS;
	unsigned rounds = O.quick ? 1 : PIPE_ROUNDS;
	size_t i, j;

	if (O.init_path == NULL) {
		notef("sandbox_hardening: no --init given: not measured");
		return 0;
	}
	if (ready_once(0) < 0) {
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
			if ((ready[j][k] = ready_once(combos[j].skip)) < 0)
				return -1;
		}
	for (i = 0; i < NCOMBOS; i++) {
		p50[i] = bench_median(ready[i], reps);
		metricf(p50[i], "ms", "sipc_sbx_ready_p50_%s", combos[i].name);
	}
	for (i = 0; i < NCOMBOS; i++)
		if (combos[i].what != NULL)
			metricf((p50[0] - p50[i]) * 1e3, "us",
			    "sipc_sbx_cost_%s_us", combos[i].what);
	metricf((p50[0] - p50[NCOMBOS - 1]) * 1e3, "us",
	    "sipc_sbx_ready_all_on_minus_off_us");
	for (unsigned r = 0; r < rounds; r++)
		for (i = 0; i < 2; i++) {
			bool hard = (i + r) % 2 == 0;

			if ((v = pipe_once(hard ? 0 : SKIP_ALL)) < 0)
				return -1;
			(hard ? on : off)[r] = v;
		}
	metricf(bench_median(on, rounds), "msg/s",
	    "sipc_sbx_pipe_64_hardened_msgs");
	metricf(bench_median(off, rounds), "msg/s",
	    "sipc_sbx_pipe_64_unhardened_msgs");
	return 0;
}
