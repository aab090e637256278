/*
 * sipc_bench.h - what sipc_bench.c shares with its section files (the
 * options, the output helpers, a supervisor started and ready, the
 * pipelined load).  Defined in sipc_bench.c unless noted.
 *
 * Threads: everything here runs on the bench's main thread, except
 * bench_log (a library thread, as every sipc log callback).
 */
#ifndef SIPC_BENCH_BENCH_H
#define SIPC_BENCH_BENCH_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "sipc.h"

struct bench_opts {
	const char *fixdir;
	const char *state_dir;
	const char *init_path;  /* sipc-init for the namespace modes */
	int quick;
	unsigned stall_ms;
	char echo[PATH_MAX];    /* the echo fixture */
};
extern struct bench_opts O;

void bench_log(void *arg, enum sipc_log_level lvl, uint32_t wid,
    uint32_t gen, pid_t pid, const char *msg);
void metricf(double v, const char *unit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void notef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double ms_since(uint64_t t0);

/* Defaults, DEVELOPMENT, the echo fixture, `workers` workers. */
void cfg_base(struct sipc_config *c, unsigned workers);
/* sipc_create + sipc_wait_ready(all); errors go to stderr. */
int sup_start(const struct sipc_config *c, unsigned timeout_ms,
    sipc_supervisor **ret);
/*
 * Submitting threads of a throughput load: one, as the raw pipelined
 * baseline has one writer thread.  Every thread asleep on the window
 * semaphore makes each completion's sem_post() a futex wake-up, and a
 * second one adds the load generator's own wake-ups to the library's
 * figure (1 worker, 64 B, same minutes: 94k-127k msg/s and 8.1-10.9 us
 * of supervisor CPU per request with two, 104k-162k and 4.8-7.2 us with
 * one).  The `pipe` section runs both and keeps the better (two copy
 * 1 MiB payloads into the library on two CPUs); the stall test keeps
 * two (STALL_SUBMITTERS).
 */
#define LOAD_SUBMITTERS 1
#define STALL_SUBMITTERS 2
/* `window` requests of `size` outstanding from `nthreads` submitting
 * threads (LOAD_SUBMITTERS but in the stall test); OK replies/s over
 * `dur`. */
int measure_tput(sipc_supervisor *s, size_t size, unsigned window,
    unsigned nthreads, double warm, double dur, double *ret_rate,
    long *rss_peak);

/* Sleep `secs`, sampling our RSS every 20 ms into *peak (if not NULL). */
void idle_sample(double secs, long *peak);
struct load;
/* A note when a load saw non-OK outcomes or submit errors. */
void load_report(struct load *L, const char *what);

/* sipc_accept.c */
int sec_accept(void);
/* Pid of worker 0, or 0. */
pid_t worker_pid(sipc_supervisor *s);

/* sipc_contain.c */
int sec_contain(void);
/* Start one worker in `mode` with `init`: 0 and the mode it got, or -1
 * and why not (the library's first warning or error). */
int contain_probe(enum sipc_containment mode, const char *init,
    enum sipc_containment *ret_got, char *why, size_t whylen);

/* sipc_cost.c */
int sec_cost(void);
/* sipc_cancel.c */
int sec_cancel(void);
/* sipc_fdpass.c */
int sec_fdpass(void);
/* sipc_recycle.c */
int sec_recycle(void);
/* sipc_figures.c */
int sec_figures(void);
/* `n` bare spawns of `path` one after the other, total ms, or -1. */
double bare_spawn_ms(const char *path, unsigned n, bool together);

/* sipc_syscalls.c */
int sec_syscalls(void);

/* sipc_spawn_contained.c */
int sec_spawn_contained(void);

/* sipc_sandbox.c */
int sec_sandbox(void);
/* sipc_hardening.c */
int sec_hardening(void);

#endif /* SIPC_BENCH_BENCH_H */
