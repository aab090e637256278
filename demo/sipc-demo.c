/*
 * sipc-demo - the main job: a pool of fixture workers under a few
 * thousand requests from several caller threads, every reply checked
 * byte for byte against its own request.
 *
 *   sipc-demo [--fixtures DIR] [--worker echo|reorder] [--workers N]
 *             [--requests N] [--threads N] [--seed N] [--config FILE]
 *             [--init PATH] [--verbose]
 *
 * Payloads: sizes from 0 to 64 KiB, with newlines, NUL bytes, runs of
 * every byte value, and seeded pseudo-random bytes.  Callers alternate
 * synchronous sipc_call() and asynchronous sipc_submit() (a bounded
 * number of submits outstanding per thread).  A --config file is applied
 * on top of the demo's defaults (environment development, provider
 * local); options given on the command line win over the file.
 * --init names the sipc-init program the namespace containment modes run
 * as PID 1 (a build tree's own, before installation); without it the one
 * installed with the library is used, and where neither can run, the
 * default (auto) containment falls back to process groups.  The worker
 * table says which containment each worker got.
 *
 * Exit status: 0 when every request came back OK and matched; 1 on any
 * mismatch or other outcome; 2 on a usage or setup error.
 *
 * Threads: main; N caller threads; completion callbacks run on library
 * threads.  Counters are atomics; each caller's outstanding-submit count
 * is guarded by its own mutex.
 */
#include <bsd/stdlib.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sipc.h"

#define MAX_SIZE (64 * 1024)
#define ASYNC_WINDOW 32          /* outstanding submits per caller thread */
#define REQ_TIMEOUT_MS 30000

struct opts {
	const char *fixtures, *worker, *config, *init;
	unsigned workers, requests, threads;
	unsigned long long seed;
	bool verbose;
	bool set_workers;
};

static struct {
	_Atomic unsigned long outcome[5];
	_Atomic unsigned long mismatches, sync_n, async_n, submit_errors;
	_Atomic unsigned long long bytes;
} tally;

struct caller {
	sipc_supervisor *sup;
	unsigned first, count;
	unsigned long long seed;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	unsigned outstanding;        /* [lock] async submits not yet done */
};

/* One async request: its own copy of the payload to check against. */
struct pending {
	struct caller *c;
	uint8_t *payload;
	size_t len;
};

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Request i's payload: deterministic from (seed, i).  Sizes cover 0, 1,
 * small, and up to 64 KiB; contents cycle through four patterns that
 * break newline or C-string framing. */
static uint8_t *
make_payload(unsigned long long seed, unsigned i, size_t *ret_len)
{
	uint64_t r = mix(seed ^ ((uint64_t)i << 20));
	size_t len, k;
	uint8_t *p;

	switch (i % 8) {
	case 0: len = 0; break;
	case 1: len = 1 + r % 16; break;
	case 2: len = 256; break;
	case 7: len = MAX_SIZE - (r % 2); break;
	default: len = r % (MAX_SIZE + 1); break;
	}
	if ((p = malloc(len ? len : 1)) == NULL)
		return NULL;
	for (k = 0; k < len; k++) {
		switch ((i / 8) % 4) {
		case 0: p[k] = (uint8_t)(k + i); break;        /* every byte */
		case 1: p[k] = k % 3 == 0 ? '\n' : k % 3 == 1 ? '\0' : 'x';
			break;
		case 2: p[k] = (uint8_t)mix(r + k); break;
		default: p[k] = (uint8_t)"SIPC\n\0\r\033"[k % 8]; break;
		}
	}
	*ret_len = len;
	return p;
}

/* Count an outcome; true if it was OK with the right bytes. */
static bool
check(const struct sipc_result *res, const uint8_t *p, size_t len)
{
	unsigned o = (unsigned)res->outcome;

	atomic_fetch_add(&tally.outcome[o < 5 ? o : 4], 1);
	if (res->outcome != SIPC_OUTCOME_OK)
		return false;
	atomic_fetch_add(&tally.bytes, len);
	if (res->reply_len != len || (len > 0 &&
	    memcmp(res->reply, p, len) != 0)) {
		atomic_fetch_add(&tally.mismatches, 1);
		return false;
	}
	return true;
}

/* Completion callback: a library thread, no library lock held. */
static void
on_done(void *arg, struct sipc_result *res)
{
	struct pending *pd = arg;
	struct caller *c = pd->c;

	check(res, pd->payload, pd->len);
	sipc_result_release(res);
	free(pd->payload);
	free(pd);
	pthread_mutex_lock(&c->lock);
	c->outstanding--;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->lock);
}

static void
run_async(struct caller *c, uint8_t *p, size_t len)
{
	struct sipc_request req = { .payload = p, .len = len,
	    .timeout_ms = REQ_TIMEOUT_MS };
	struct pending *pd = malloc(sizeof(*pd));
	int rc;

	if (pd == NULL) {
		free(p);
		atomic_fetch_add(&tally.submit_errors, 1);
		return;
	}
	*pd = (struct pending){ c, p, len };
	pthread_mutex_lock(&c->lock);
	while (c->outstanding >= ASYNC_WINDOW)
		pthread_cond_wait(&c->cv, &c->lock);
	c->outstanding++;
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(&tally.async_n, 1);
	if ((rc = sipc_submit(c->sup, &req, on_done, pd, NULL)) < 0) {
		/* `done` is never called for a refused submit. */
		fprintf(stderr, "sipc-demo: submit: %s\n", sipc_strerror(rc));
		atomic_fetch_add(&tally.submit_errors, 1);
		free(p);
		free(pd);
		pthread_mutex_lock(&c->lock);
		c->outstanding--;
		pthread_mutex_unlock(&c->lock);
	}
}

static void
run_sync(struct caller *c, uint8_t *p, size_t len)
{
	struct sipc_request req = { .payload = p, .len = len,
	    .timeout_ms = REQ_TIMEOUT_MS };
	struct sipc_result res;
	int rc;

	atomic_fetch_add(&tally.sync_n, 1);
	if ((rc = sipc_call(c->sup, &req, &res)) < 0) {
		fprintf(stderr, "sipc-demo: call: %s\n", sipc_strerror(rc));
		atomic_fetch_add(&tally.submit_errors, 1);
	} else {
		check(&res, p, len);
		sipc_result_release(&res);
	}
	free(p);
}

static void *
caller_main(void *arg)
{
	struct caller *c = arg;
	uint8_t *p;
	size_t len = 0;

	for (unsigned i = c->first; i < c->first + c->count; i++) {
		if ((p = make_payload(c->seed, i, &len)) == NULL) {
			atomic_fetch_add(&tally.submit_errors, 1);
			continue;
		}
		if (i % 2 == 0)
			run_sync(c, p, len);
		else
			run_async(c, p, len);
	}
	pthread_mutex_lock(&c->lock);
	while (c->outstanding > 0)
		pthread_cond_wait(&c->cv, &c->lock);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Log callback (only with --verbose): a library thread, no lock held. */
static void
on_log(void *arg, enum sipc_log_level level, uint32_t worker_id,
       uint32_t generation, pid_t pid, const char *msg)
{
	static const char *lv[] = { "error", "warn", "info", "diag" };

	if (worker_id == UINT32_MAX)
		fprintf(stderr, "[sipc %s] %s\n", lv[level & 3], msg);
	else
		fprintf(stderr, "[w%u g%u pid %d %s] %s\n", worker_id,
		    generation, (int)pid, lv[level & 3], msg);
}

static void __attribute__((noreturn))
usage(const char *why)
{
	if (why != NULL)
		fprintf(stderr, "sipc-demo: %s\n", why);
	fprintf(stderr, "usage: sipc-demo [--fixtures DIR] "
	    "[--worker echo|reorder] [--workers N] [--requests N]\n"
	    "                 [--threads N] [--seed N] [--config FILE] "
	    "[--init PATH]\n"
	    "                 [--verbose]\n");
	exit(2);
}

static unsigned long long
num(const char *s, long long lo, long long hi, const char *what)
{
	const char *errstr = NULL;
	long long v = strtonum(s, lo, hi, &errstr);
	char msg[128];

	if (errstr != NULL) {
		snprintf(msg, sizeof(msg), "%s: %s is %s", what, s, errstr);
		usage(msg);
	}
	return (unsigned long long)v;
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "fixtures", required_argument, NULL, 'f' },
		{ "worker", required_argument, NULL, 'k' },
		{ "workers", required_argument, NULL, 'w' },
		{ "requests", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "init", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	*o = (struct opts){ .fixtures = "build/fixtures", .worker = "reorder",
	    .workers = 4, .requests = 5000, .threads = 4, .seed = 20240601 };
	while ((ch = getopt_long(argc, argv, "f:k:w:n:t:s:c:i:vh", lo,
	    NULL)) != -1) {
		switch (ch) {
		case 'f': o->fixtures = optarg; break;
		case 'k': o->worker = optarg; break;
		case 'w': o->workers = (unsigned)num(optarg, 1, 1024,
			      "--workers");
			o->set_workers = true;
			break;
		case 'n': o->requests = (unsigned)num(optarg, 1, 10000000,
			      "--requests");
			break;
		case 't': o->threads = (unsigned)num(optarg, 1, 256,
			      "--threads");
			break;
		case 's': o->seed = num(optarg, 1, LLONG_MAX, "--seed"); break;
		case 'c': o->config = optarg; break;
		case 'i': o->init = optarg; break;
		case 'v': o->verbose = true; break;
		case 'h': usage(NULL);
		default: usage("unknown option");
		}
	}
	if (optind != argc)
		usage("unexpected argument");
	if (strcmp(o->worker, "echo") != 0 && strcmp(o->worker, "reorder") != 0)
		usage("--worker must be echo or reorder");
}

/*
 * Build the configuration: demo defaults, then the file (if any), then
 * what the command line said explicitly.  Returns 0 or exits(2).
 */
static void
build_config(const struct opts *o, struct sipc_config *cfg,
             sipc_config_store **st, char *path, size_t pathlen,
             char **argv3)
{
	char err[512] = "";
	int rc;

	snprintf(path, pathlen, "%s/%s", o->fixtures, o->worker);
	sipc_config_init(cfg);
	cfg->environment = SIPC_ENV_DEVELOPMENT;
	cfg->provider = "local";
	cfg->workers = o->workers;
	cfg->path = path;
	if (o->config != NULL && (rc = sipc_config_load_file(o->config, cfg,
	    st, err, sizeof(err))) < 0) {
		fprintf(stderr, "sipc-demo: %s\n", err[0] ? err :
		    sipc_strerror(rc));
		exit(2);
	}
	if (o->set_workers || o->config == NULL)
		cfg->workers = o->workers;
	if (o->init != NULL)
		cfg->init_path = o->init;
	/* A file that names its own worker keeps it (and its argv). */
	if (cfg->path == path && strcmp(o->worker, "reorder") == 0) {
		argv3[0] = path;
		argv3[1] = "12345";
		argv3[2] = NULL;
		cfg->argv = argv3;
	}
	if (o->verbose)
		cfg->log = on_log;
}

static void
print_stats(sipc_supervisor *s)
{
	struct sipc_stats st;
	char ex[96];
	unsigned i;

	if (sipc_stats_get(s, &st) < 0) {
		fprintf(stderr, "sipc-demo: stats unavailable\n");
		return;
	}
	printf("workers:\n");
	printf("  %-3s %-8s %-4s %-9s %-14s %10s %12s %12s %5s %4s  %s\n",
	    "id", "pid", "gen", "state", "containment", "completed",
	    "bytes_in", "bytes_out", "viol", "rst", "last exit");
	for (i = 0; i < st.nworkers; i++) {
		const struct sipc_worker_stats *w = &st.workers[i];

		if (w->last_exit.kind == SIPC_EXIT_NONE)
			snprintf(ex, sizeof(ex), "-");
		else
			sipc_exit_format(&w->last_exit, ex, sizeof(ex));
		printf("  %-3u %-8d %-4u %-9s %-14s %10llu %12llu %12llu "
		    "%5llu %4llu  %s\n", w->worker_id, (int)w->pid,
		    w->generation, sipc_worker_state_name(w->state),
		    sipc_containment_name(w->containment),
		    (unsigned long long)w->completed,
		    (unsigned long long)w->bytes_in,
		    (unsigned long long)w->bytes_out,
		    (unsigned long long)w->protocol_violations,
		    (unsigned long long)w->restarts, ex);
	}
	printf("supervisor: submitted %llu, requeued %llu, retried %llu, "
	    "violations %llu, restarts %llu, pending %u\n",
	    (unsigned long long)st.submitted, (unsigned long long)st.requeued,
	    (unsigned long long)st.retried,
	    (unsigned long long)st.protocol_violations,
	    (unsigned long long)st.restarts, st.pending);
	sipc_stats_release(&st);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run the callers; returns elapsed seconds. */
static double
run_load(sipc_supervisor *s, const struct opts *o)
{
	struct caller *c = calloc(o->threads, sizeof(*c));
	pthread_t *tid = calloc(o->threads, sizeof(*tid));
	unsigned per = o->requests / o->threads, i, next = 0;
	double t0;

	if (c == NULL || tid == NULL) {
		fprintf(stderr, "sipc-demo: out of memory\n");
		exit(2);
	}
	t0 = now_s();
	for (i = 0; i < o->threads; i++) {
		c[i] = (struct caller){ .sup = s, .first = next, .count =
		    per + (i < o->requests % o->threads), .seed = o->seed };
		next += c[i].count;
		pthread_mutex_init(&c[i].lock, NULL);
		pthread_cond_init(&c[i].cv, NULL);
		if (pthread_create(&tid[i], NULL, caller_main, &c[i]) != 0) {
			fprintf(stderr, "sipc-demo: pthread_create failed\n");
			exit(2);
		}
	}
	for (i = 0; i < o->threads; i++) {
		pthread_join(tid[i], NULL);
		pthread_mutex_destroy(&c[i].lock);
		pthread_cond_destroy(&c[i].cv);
	}
	free(c);
	free(tid);
	return now_s() - t0;
}

int
main(int argc, char **argv)
{
	char path[PATH_MAX], err[512] = "", *argv3[3];
	sipc_config_store *store = NULL;
	struct sipc_config cfg;
	sipc_supervisor *s = NULL;
	unsigned long bad = 0;
	struct opts o;
	double secs;
	int rc;

	parse_opts(argc, argv, &o);
	build_config(&o, &cfg, &store, path, sizeof(path), argv3);
	if ((rc = sipc_create(&cfg, err, sizeof(err), &s)) < 0) {
		fprintf(stderr, "sipc-demo: cannot create supervisor: "
		    "%s (%s)\n", err, sipc_strerror(rc));
		sipc_config_store_free(store);
		return 2;
	}
	if ((rc = sipc_wait_ready(s, cfg.workers, 20000)) < 0)
		fprintf(stderr, "sipc-demo: workers not all ready: %s\n",
		    sipc_strerror(rc));
	printf("sipc-demo: %u requests, %u caller threads, %u %s workers "
	    "(%s), payloads 0..%d bytes, seed %llu\n", o.requests, o.threads,
	    cfg.workers, o.worker, cfg.path, MAX_SIZE, o.seed);
	secs = run_load(s, &o);
	printf("requests: %lu (sync %lu, async %lu), submit errors %lu\n",
	    atomic_load(&tally.sync_n) + atomic_load(&tally.async_n),
	    atomic_load(&tally.sync_n), atomic_load(&tally.async_n),
	    atomic_load(&tally.submit_errors));
	printf("outcomes:");
	for (unsigned k = 0; k < 5; k++) {
		printf(" %s %lu", sipc_outcome_name((enum sipc_outcome)k),
		    atomic_load(&tally.outcome[k]));
		if (k != SIPC_OUTCOME_OK)
			bad += atomic_load(&tally.outcome[k]);
	}
	printf("\nmismatches: %lu\n", atomic_load(&tally.mismatches));
	printf("elapsed: %.3f s, %.0f req/s, %.1f MB/s of replies checked\n",
	    secs, (double)o.requests / secs,
	    (double)atomic_load(&tally.bytes) / secs / 1e6);
	print_stats(s);
	sipc_destroy(s);
	sipc_config_store_free(store);
	bad += atomic_load(&tally.mismatches) +
	    atomic_load(&tally.submit_errors);
	printf("result: %s\n", bad == 0 ? "ok" : "FAILED");
	return bad == 0 ? 0 : 1;
}
