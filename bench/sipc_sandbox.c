/*
 * sipc_sandbox.c - the `sandbox` section of sipc_bench: what running
 * each worker under bubblewrap (provider "sandbox") costs against the
 * local adapter, same echo worker, same run.
 *
 * Per provider: spawn-to-ready (sipc_create until sipc_wait_ready
 * returns) of 1 worker (median of a few) and of 64 workers, and
 * pipelined 64 B throughput with 4 workers (max_inflight 64, 256
 * outstanding, as in `pipe`).  The local adapter runs its default
 * containment (auto: a PID namespace under sipc-init where one can be
 * made), so the difference is bwrap's own.  Rounds alternate the
 * providers and every figure is the median of its rounds.  run.sh
 * prints each sandbox figure divided by the local one as `info`.  A
 * sandbox that cannot start here is a note, not a failure.
 *
 * Threads: the main thread.
 */
#include <stdio.h>
#include <string.h>

#include "sipc.h"
#include "bench.h"
#include "sipc_bench.h"

#define ROUNDS_MAX 3
#define REPS1 3
#define BIG 64

static const char *const provs[] = { "local", "sandbox" };
#define NPROVS (sizeof(provs) / sizeof(provs[0]))

struct sfigs {
	double ready1[ROUNDS_MAX * REPS1], ready_big[ROUNDS_MAX];
	double w4[ROUNDS_MAX];
	unsigned n1, n;
};

static void
cfg_prov(struct sipc_config *c, const char *prov, unsigned workers)
{
	cfg_base(c, workers);
	c->provider = prov;
	c->init_path = O.init_path;
}

static int
round_prov(const char *prov, unsigned reps, struct sfigs *f)
{
	double warm = O.quick ? 0.2 : 0.5, dur = O.quick ? 0.3 : 1.5;
	struct sipc_config c;
	sipc_supervisor *s;
	uint64_t t0;

	for (unsigned k = 0; k < reps; k++) {
		cfg_prov(&c, prov, 1);
		t0 = bench_now_ns();
		if (sup_start(&c, 30000, &s) < 0)
			return -1;
		f->ready1[f->n1++] = ms_since(t0);
		sipc_destroy(s);
	}
	cfg_prov(&c, prov, BIG);
	t0 = bench_now_ns();
	if (sup_start(&c, 120000, &s) < 0)
		return -1;
	f->ready_big[f->n] = ms_since(t0);
	sipc_destroy(s);
	cfg_prov(&c, prov, 4);
	c.max_inflight = 64;
	if (sup_start(&c, 30000, &s) < 0)
		return -1;
	if (measure_tput(s, 64, 256, LOAD_SUBMITTERS, warm, dur,
	    &f->w4[f->n], NULL) < 0) {
		sipc_destroy(s);
		return -1;
	}
	sipc_destroy(s);
	f->n++;
	return 0;
}

int
sec_sandbox(void)
{
	static struct sfigs f[NPROVS];
	unsigned rounds = O.quick ? 1 : ROUNDS_MAX, reps = O.quick ? 1 : REPS1;
	struct sipc_config c;
	sipc_supervisor *s;
	size_t i;

	if (O.init_path == NULL) {
		notef("sandbox: no --init given: not measured");
		return 0;
	}
	cfg_prov(&c, "sandbox", 1);
	if (sup_start(&c, 30000, &s) < 0) {
		notef("sandbox: no sandboxed worker starts here (bwrap missing "
		    "or refused): not measured");
		return 0;
	}
	sipc_destroy(s);
	memset(f, 0, sizeof(f));
	for (unsigned r = 0; r < rounds; r++)
		for (i = 0; i < NPROVS; i++)
			if (round_prov(provs[(i + r) % NPROVS], reps,
			    &f[(i + r) % NPROVS]) < 0)
				return -1;
	for (i = 0; i < NPROVS; i++) {
		metricf(bench_median(f[i].ready1, f[i].n1), "ms",
		    "sipc_sandbox_%s_spawn_ready_1_p50", provs[i]);
		metricf(bench_median(f[i].ready_big, f[i].n), "ms",
		    "sipc_sandbox_%s_spawn_ready_%u_p50", provs[i], BIG);
		metricf(bench_median(f[i].w4, f[i].n), "msg/s",
		    "sipc_sandbox_%s_pipe_w4_64_msgs", provs[i]);
	}
	return 0;
}
