/*
 * soak.c - chaos soak of the supervisor: a pool of echo workers under
 * full load from several caller threads while faults are injected at
 * seeded random moments, then a tally of what the library promised.
 *
 * Usage: soak --worker PATH [--seconds N] [--seed S] [--workers N]
 *             [--callers N] [--window N] [--provider NAME] [--init PATH]
 *             [--verbose]
 * (--provider: local, the default, or sandbox; --init: the sipc-init the
 * workers run under, which the sandbox needs.)
 *
 * Threads (all created after sipc_create, joined before sipc_destroy):
 *   callers    keep `window` async requests in flight each, plus a sync
 *              call now and then; completion callbacks run on library
 *              threads and only touch the request's own record (atomics)
 *              and the caller's in-flight counter (caller->mu).
 *   injector   draws the fault schedule from its own PRNG (seeded), so a
 *              seed replays the same faults at the same moments; what the
 *              kernel scheduler does in between is not replayable.
 *   watchdog   samples stats (memory ceiling, RSS) and fails the run if
 *              no outcome arrives for WATCHDOG_MS while work is pending.
 *
 * Checks at the end (check.c; each failure is a violation, printed):
 *   - every accepted request got exactly one outcome, refused ones none;
 *   - every OK reply equals its own request's payload;
 *   - the worker's execution log (SIPC_EXEC_LOG) names only submitted ids
 *     with matching length and checksum; a non-idempotent id ran at most
 *     once, an idempotent one at most 1 + idempotent_retries times; an
 *     outcome saying "never ran" (may_have_run false) never ran; an OK ran;
 *   - start evidence is exact: UNKNOWN outcomes whose request never ran
 *     are at most one per worker death (those after a protocol violation
 *     are printed apart: a violation voids the evidence);
 *   - memory held stayed under the ceiling; after destroy, descriptors,
 *     threads and children are back to baseline and no zombie remains.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "wire/wire.h"
#include "sipc.h"
#include "soak.h"

#define WATCHDOG_MS 10000
#define CHUNK 65536u
#define MAX_CHUNKS 16384u
#define MAX_VIOLATIONS_SHOWN 50

enum { F_KILL, F_STOP, F_STOPREAD, F_BADFRAME, F_MIDFRAME, F_CRASH, F_N };

struct caller {
	pthread_t th;
	unsigned idx;
	uint64_t rng;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned inflight;        /* [mu] */
};

static struct {
	sipc_supervisor *sup;
	uint64_t seed;
	unsigned seconds, nworkers, ncallers, window;
	bool verbose;
	struct caller *callers;
	const char *worker;
	const char *provider, *init;  /* NULL: the defaults */
	char dir[64], log_path[96];
	struct rec *_Atomic chunks[MAX_CHUNKS];
	pthread_mutex_t chunk_mu;
	_Atomic uint64_t nrec;
	atomic_bool stop, done;
	_Atomic int64_t last_outcome_ms;
	_Atomic uint64_t accepted, outcomes;
	_Atomic uint64_t faults[F_N], faults_skipped;
	_Atomic uint64_t log_msgs[4];
	_Atomic uint64_t worker_deaths;      /* "worker ended" log lines */
	_Atomic uint64_t mem_max, rss_max_kb;
	_Atomic uint64_t nviol;
	pthread_mutex_t viol_mu;
} g;

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* splitmix64: small, deterministic, good enough for schedules. */
static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
rnd_in(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rnd(s) % (hi - lo + 1);
}

void
violation(const char *fmt, ...)
{
	va_list ap;
	uint64_t n = atomic_fetch_add(&g.nviol, 1);

	if (n >= MAX_VIOLATIONS_SHOWN)
		return;
	pthread_mutex_lock(&g.viol_mu);
	fputs("soak: VIOLATION: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&g.viol_mu);
}

/* ------------------------------------------------------------ records */

struct rec *
rec_at(uint64_t i)
{
	struct rec *c = atomic_load(&g.chunks[i / CHUNK]);

	return c ? &c[i % CHUNK] : NULL;
}

static struct rec *
rec_new(uint64_t *ret_idx)
{
	uint64_t i = atomic_fetch_add(&g.nrec, 1);
	struct rec *c;

	if (i / CHUNK >= MAX_CHUNKS) {
		fprintf(stderr, "soak: too many requests\n");
		exit(2);
	}
	pthread_mutex_lock(&g.chunk_mu);
	if ((c = atomic_load(&g.chunks[i / CHUNK])) == NULL) {
		if ((c = calloc(CHUNK, sizeof(*c))) == NULL) {
			fprintf(stderr, "soak: out of memory\n");
			exit(2);
		}
		atomic_store(&g.chunks[i / CHUNK], c);
	}
	pthread_mutex_unlock(&g.chunk_mu);
	*ret_idx = i;
	return &c[i % CHUNK];
}

/* FNV-1a 32.  Not CRC-32C: the worker logs the CRC-32C of the whole
 * payload, and a CRC over data followed by its own CRC is a constant,
 * which would make that log entry useless for matching. */
static uint32_t
fnv32(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n-- > 0)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/*
 * Ordinary payload: "SOAK" | seq u64 | len u32 | body | FNV-1a u32 of all
 * bytes before it.  Sizes mostly small, some medium, a few large, so the
 * rings and the memory ceiling both see pressure.
 */
static uint8_t *
make_payload(uint64_t *rng, uint64_t seq, uint32_t *ret_len)
{
	uint64_t pick = rnd(rng) % 100, v = 0;
	uint32_t len, c, i;
	uint8_t *p;

	if (pick < 70)
		len = (uint32_t)rnd_in(rng, 20, 256);
	else if (pick < 95)
		len = (uint32_t)rnd_in(rng, 257, 8192);
	else
		len = (uint32_t)rnd_in(rng, 8193, 131072);
	if ((p = malloc(len)) == NULL)
		abort();
	memcpy(p, "SOAK", 4);
	memcpy(p + 4, &seq, 8);
	memcpy(p + 12, &len, 4);
	for (i = 16; i < len - 4; i++) {
		if ((i & 7) == 0)
			v = rnd(rng);
		p[i] = (uint8_t)(v >> (8 * (i & 7)));
	}
	c = fnv32(p, len - 4);
	memcpy(p + len - 4, &c, 4);
	*ret_len = len;
	return p;
}

/* Record an outcome for `r`; only the first completion counts. */
static void
record_outcome(struct rec *r, const struct sipc_result *res, bool sync)
{
	uint32_t n = atomic_fetch_add(&r->ncb, 1);

	atomic_store(&g.last_outcome_ms, now_ms());
	if (n > 0) {
		violation("request id %" PRIu64 " got outcome #%u (%s)",
		    res->request_id, n + 1, sipc_outcome_name(res->outcome));
		return;
	}
	r->cb_id = res->request_id;
	r->outcome = (uint8_t)res->outcome;
	r->error = (int16_t)res->error;
	r->may_run = res->may_have_run;
	r->exit_kind = (uint8_t)res->exit.kind;
	if (sync)
		r->id = res->request_id;
	if (res->outcome == SIPC_OUTCOME_OK && ((r->flags & RF_CMD) ||
	    res->reply_len != r->len || r->payload == NULL ||
	    memcmp(res->reply, r->payload, r->len) != 0))
		r->flags |= RF_BADREPLY;
	free(r->payload);
	r->payload = NULL;
	atomic_fetch_add(&g.outcomes, 1);
}

/* Completion callback.  arg = record index << 8 | caller index (0xff:
 * the injector, which does not wait for its requests). */
static void
on_done(void *arg, struct sipc_result *res)
{
	uintptr_t a = (uintptr_t)arg;
	struct caller *c;

	record_outcome(rec_at(a >> 8), res, false);
	sipc_result_release(res);
	if ((a & 0xff) == 0xff)
		return;
	c = &g.callers[a & 0xff];
	pthread_mutex_lock(&c->mu);
	c->inflight--;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/*
 * Submit one request asynchronously.  Returns 0 when accepted (a
 * callback will come), else the error (no callback may come: the record
 * is marked refused and checked for that at the end).
 */
static int
submit_async(struct rec *r, uint64_t idx, unsigned who, unsigned timeout_ms,
    unsigned flags)
{
	struct sipc_request req = {
		.payload = r->payload, .len = r->len,
		.timeout_ms = timeout_ms, .flags = flags,
	};
	uint64_t id = 0;
	int rc;

	rc = sipc_submit(g.sup, &req, on_done, (void *)(uintptr_t)(idx << 8 |
	    who), &id);
	if (rc != 0) {
		r->flags |= RF_REFUSED;
		/* The payload is ours again only if no callback can come;
		 * a callback that came anyway frees it and is a violation. */
		return rc;
	}
	r->id = id;
	atomic_fetch_add(&g.accepted, 1);
	return 0;
}

/* ------------------------------------------------------------ callers */

static void
one_sync(struct caller *c, struct rec *r, unsigned timeout_ms, unsigned flags)
{
	struct sipc_request req = {
		.payload = r->payload, .len = r->len,
		.timeout_ms = timeout_ms, .flags = flags,
	};
	struct sipc_result res;
	int rc;

	r->flags |= RF_SYNC;
	atomic_fetch_add(&g.accepted, 1);
	rc = sipc_call(g.sup, &req, &res);
	if (rc != 0) {
		violation("sipc_call: %s", sipc_strerror(rc));
		return;
	}
	record_outcome(r, &res, true);
	sipc_result_release(&res);
}

static void *
caller_main(void *arg)
{
	struct caller *c = arg;
	uint64_t idx, pick;
	unsigned timeout_ms, flags;
	struct rec *r;

	while (!atomic_load(&g.stop)) {
		pthread_mutex_lock(&c->mu);
		while (c->inflight >= g.window && !atomic_load(&g.stop))
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
		if (atomic_load(&g.stop))
			break;
		r = rec_new(&idx);
		r->payload = make_payload(&c->rng, idx, &r->len);
		r->crc = sipc__crc32c(0, r->payload, r->len);
		pick = rnd(&c->rng) % 100;
		flags = pick < 25 ? SIPC_REQ_IDEMPOTENT : 0;
		if (flags)
			r->flags |= RF_IDEM;
		/* A third lend the payload (asynchronous submits: a call
		 * ignores the flag).  Its record keeps it unchanged until the
		 * callback frees it, as lending requires; the execution log's
		 * checksum shows a payload read after that. */
		if (rnd(&c->rng) % 3 == 0) {
			flags |= SIPC_REQ_LEND;
			r->flags |= RF_LENT;
		}
		/* Mostly no deadline; some long, a few short enough to expire
		 * behind a stopped worker. */
		pick = rnd(&c->rng) % 100;
		timeout_ms = pick < 60 ? 0 : pick < 95 ? 5000 : 300;
		if (rnd(&c->rng) % 64 == 0) {
			one_sync(c, r, timeout_ms, flags);
			continue;
		}
		pthread_mutex_lock(&c->mu);
		c->inflight++;
		pthread_mutex_unlock(&c->mu);
		if (submit_async(r, idx, c->idx, timeout_ms, flags) != 0) {
			pthread_mutex_lock(&c->mu);
			c->inflight--;
			pthread_mutex_unlock(&c->mu);
		}
	}
	/* Wait for this caller's requests (the watchdog guards a hang). */
	pthread_mutex_lock(&c->mu);
	while (c->inflight > 0)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ------------------------------------------------------------ faults */

/* Pid of a ready worker, starting the search at slot `want`; 0 if none. */
static pid_t
pick_worker(unsigned want)
{
	struct sipc_stats st;
	pid_t pid = 0;

	if (sipc_stats_get(g.sup, &st) < 0)
		return 0;
	for (unsigned k = 0; k < st.nworkers && pid == 0; k++) {
		struct sipc_worker_stats *w = &st.workers[(want + k) %
		    st.nworkers];

		if (w->state == SIPC_WS_READY && w->pid > 0)
			pid = w->pid;
	}
	sipc_stats_release(&st);
	return pid;
}

/* Signal through a pidfd so a reaped (and reused) pid is never hit
 * after we opened it.  Returns 0, or -errno (ESRCH: already gone). */
static int
signal_worker(int pidfd, int sig)
{
	if (pidfd_send_signal(pidfd, sig, NULL, 0) < 0)
		return -errno;
	return 0;
}

static void
fault_signal(unsigned kind, unsigned slot, uint64_t *rng)
{
	int64_t pause = (int64_t)rnd_in(rng, 50, 1500);
	pid_t pid = pick_worker(slot);
	int fd;

	if (pid <= 0 || (fd = pidfd_open(pid, 0)) < 0) {
		atomic_fetch_add(&g.faults_skipped, 1);
		return;
	}
	if (kind == F_KILL) {
		if (signal_worker(fd, SIGKILL) == 0)
			atomic_fetch_add(&g.faults[F_KILL], 1);
	} else if (signal_worker(fd, SIGSTOP) == 0) {
		atomic_fetch_add(&g.faults[F_STOP], 1);
		sleep_ms(pause);
		(void)signal_worker(fd, SIGCONT);
	}
	close(fd);
}

static void
fault_command(unsigned kind)
{
	static const char *const cmds[F_N] = {
		[F_STOPREAD] = "stopread", [F_BADFRAME] = "badframe",
		[F_MIDFRAME] = "midframe",
		/* a handler that kills its worker: the poison document */
		[F_CRASH] = "crash exit 7",
	};
	size_t n = strlen(cmds[kind]);
	uint64_t idx;
	struct rec *r = rec_new(&idx);

	r->flags = RF_CMD;
	r->len = (uint32_t)(4 + n);
	if ((r->payload = malloc(r->len)) == NULL)
		abort();
	memcpy(r->payload, "\0CMD", 4);
	memcpy(r->payload + 4, cmds[kind], n);
	r->crc = sipc__crc32c(0, r->payload, r->len);
	if (submit_async(r, idx, 0xff, 0, 0) == 0)
		atomic_fetch_add(&g.faults[kind], 1);
	else
		atomic_fetch_add(&g.faults_skipped, 1);
}

/* The whole schedule comes from one PRNG seeded by the run's seed. */
static void *
injector_main(void *arg)
{
	uint64_t rng = g.seed ^ 0x5eedfa17u;
	int64_t end = now_ms() + (int64_t)g.seconds * 1000;

	(void)arg;
	for (;;) {
		int64_t delay = (int64_t)rnd_in(&rng, 100, 600);
		unsigned kind = (unsigned)(rnd(&rng) % F_N);
		unsigned slot = (unsigned)(rnd(&rng) % g.nworkers);

		if (now_ms() + delay >= end)
			break;
		sleep_ms(delay);
		if (kind == F_KILL || kind == F_STOP)
			fault_signal(kind, slot, &rng);
		else
			fault_command(kind);
	}
	return NULL;
}

/* ------------------------------------------------------------ watchdog */

static long
rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void
dump_stats(const struct sipc_stats *st)
{
	for (unsigned i = 0; i < st->nworkers; i++) {
		const struct sipc_worker_stats *w = &st->workers[i];

		printf("soak:   worker %u gen %u pid %d %s inflight %u queued %u"
		    " completed %" PRIu64 "\n", w->worker_id, w->generation,
		    (int)w->pid, sipc_worker_state_name(w->state), w->inflight,
		    w->queued, w->completed);
	}
	printf("soak:   pending %u mem_held %zu\n", st->pending, st->mem_held);
}

/* Samples every 50 ms until `done`.  A silence of WATCHDOG_MS with work
 * pending is a deadlock as far as a caller can tell: fail at once. */
static void *
watchdog_main(void *arg)
{
	struct sipc_stats st;
	long kb;

	(void)arg;
	while (!atomic_load(&g.done)) {
		sleep_ms(50);
		if (sipc_stats_get(g.sup, &st) == 0) {
			if (st.mem_held > st.mem_ceiling)
				violation("mem_held %zu > mem_ceiling %zu",
				    st.mem_held, st.mem_ceiling);
			if (st.mem_held > atomic_load(&g.mem_max))
				atomic_store(&g.mem_max, st.mem_held);
			if (atomic_load(&g.accepted) > atomic_load(&g.outcomes) &&
			    now_ms() - atomic_load(&g.last_outcome_ms) >
			    WATCHDOG_MS) {
				violation("watchdog: no outcome for %d ms with "
				    "%" PRIu64 " pending", WATCHDOG_MS,
				    atomic_load(&g.accepted) -
				    atomic_load(&g.outcomes));
				dump_stats(&st);
				printf("soak: replay with --seed %" PRIu64 "\n",
				    g.seed);
				fflush(stdout);
				_exit(1);
			}
			sipc_stats_release(&st);
		}
		if ((kb = rss_kb()) > (long)atomic_load(&g.rss_max_kb))
			atomic_store(&g.rss_max_kb, (uint64_t)kb);
	}
	return NULL;
}

static void
on_log(void *arg, enum sipc_log_level level, uint32_t worker_id,
    uint32_t generation, pid_t pid, const char *msg)
{
	(void)arg;
	if ((unsigned)level < 4)
		atomic_fetch_add(&g.log_msgs[level], 1);
	/* Logged once per generation that ended, before its requests are
	 * settled (CONTRACT E1). */
	if (strncmp(msg, "worker ended:", 13) == 0)
		atomic_fetch_add(&g.worker_deaths, 1);
	if (g.verbose && level != SIPC_LOG_DIAG)
		fprintf(stderr, "soak: log %d worker %u gen %u pid %d: %s\n",
		    (int)level, worker_id, generation, (int)pid, msg);
}

/* ------------------------------------------------------------ main */

static void
usage(void)
{
	fprintf(stderr, "usage: soak --worker PATH [--seconds N] [--seed S] "
	    "[--workers N] [--callers N] [--window N] [--provider NAME] "
	    "[--init PATH] [--verbose]\n");
	exit(2);
}

static long long
num_arg(const char *s, long long lo, long long hi, const char *what)
{
	const char *err = NULL;
	long long v = strtonum(s ? s : "", lo, hi, &err);

	if (err != NULL) {
		fprintf(stderr, "soak: %s: %s\n", what, err);
		exit(2);
	}
	return v;
}

static void
parse_args(int argc, char **argv)
{
	bool seeded = false;

	g.seconds = 60;
	g.nworkers = 4;
	g.ncallers = 4;
	g.window = 128;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--verbose") == 0) {
			g.verbose = true;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--worker") == 0)
			g.worker = v;
		else if (strcmp(a, "--provider") == 0)
			g.provider = v;
		else if (strcmp(a, "--init") == 0)
			g.init = v;
		else if (strcmp(a, "--seconds") == 0)
			g.seconds = (unsigned)num_arg(v, 1, 86400, a);
		else if (strcmp(a, "--workers") == 0)
			g.nworkers = (unsigned)num_arg(v, 1, 64, a);
		else if (strcmp(a, "--callers") == 0)
			g.ncallers = (unsigned)num_arg(v, 1, 64, a);
		else if (strcmp(a, "--window") == 0)
			g.window = (unsigned)num_arg(v, 1, 4096, a);
		else if (strcmp(a, "--seed") == 0) {
			char *end;

			errno = 0;
			g.seed = strtoull(v, &end, 0);
			if (errno != 0 || *end != '\0' || end == v)
				usage();
			seeded = true;
		} else
			usage();
	}
	if (g.worker == NULL)
		usage();
	if (!seeded)
		g.seed = (uint64_t)arc4random() << 32 | arc4random();
}

static void
config(struct sipc_config *cfg, const char **env_set)
{
	sipc_config_init(cfg);
	cfg->environment = SIPC_ENV_TEST;
	cfg->path = g.worker;
	if (g.provider != NULL)
		cfg->provider = g.provider;
	cfg->init_path = g.init;
	cfg->env_set = env_set;       /* and no env_allow: nothing else */
	cfg->workers = g.nworkers;
	cfg->max_inflight = 32;
	cfg->max_payload = 256 * 1024;
	cfg->ring_frames = 64;
	cfg->ring_bytes = 1024 * 1024;
	cfg->mem_ceiling = 4 * 1024 * 1024;
	cfg->handshake_ms = 5000;
	cfg->stall_ms = 1000;
	cfg->grace_ms = 300;
	cfg->drain_ms = 5000;
	cfg->cancel_grace_ms = 500;
	cfg->idempotent_retries = RETRIES;
	cfg->restart_base_ms = 10;
	cfg->restart_cap_ms = 200;
	cfg->restart_reset_ms = 2000;
	cfg->restart_intensity = 100;
	cfg->restart_window_ms = 10000;
	cfg->pool_restart_budget = 1000;
	cfg->cooldown_ms = 500;
	cfg->log = on_log;
}

static void
run_load(void)
{
	pthread_t inj, wd;

	atomic_store(&g.last_outcome_ms, now_ms());
	g.callers = calloc(g.ncallers, sizeof(*g.callers));
	if (g.callers == NULL)
		abort();
	pthread_create(&wd, NULL, watchdog_main, NULL);
	for (unsigned i = 0; i < g.ncallers; i++) {
		struct caller *c = &g.callers[i];

		c->idx = i;
		c->rng = g.seed + 0x1000 * (i + 1);
		pthread_mutex_init(&c->mu, NULL);
		pthread_cond_init(&c->cv, NULL);
		pthread_create(&c->th, NULL, caller_main, c);
	}
	pthread_create(&inj, NULL, injector_main, NULL);
	sleep_ms((int64_t)g.seconds * 1000);
	atomic_store(&g.stop, true);
	for (unsigned i = 0; i < g.ncallers; i++) {
		pthread_mutex_lock(&g.callers[i].mu);
		pthread_cond_signal(&g.callers[i].cv);
		pthread_mutex_unlock(&g.callers[i].mu);
	}
	for (unsigned i = 0; i < g.ncallers; i++)
		pthread_join(g.callers[i].th, NULL);
	pthread_join(inj, NULL);
	/* The injector's own requests: wait for them too. */
	while (atomic_load(&g.outcomes) < atomic_load(&g.accepted))
		sleep_ms(10);
	atomic_store(&g.done, true);
	pthread_join(wd, NULL);
	for (unsigned i = 0; i < g.ncallers; i++) {
		pthread_mutex_destroy(&g.callers[i].mu);
		pthread_cond_destroy(&g.callers[i].cv);
	}
	free(g.callers);
}

static void
print_stats(void)
{
	struct sipc_stats st;

	if (sipc_stats_get(g.sup, &st) < 0)
		return;
	printf("soak: library submitted %" PRIu64 " requeued %" PRIu64
	    " retried %" PRIu64 " protocol_violations %" PRIu64 " restarts %"
	    PRIu64 " pending %u mem_held %zu\n", st.submitted, st.requeued,
	    st.retried, st.protocol_violations, st.restarts, st.pending,
	    st.mem_held);
	if (st.pending != 0 || st.mem_held != 0)
		violation("after the load: pending %u mem_held %zu",
		    st.pending, st.mem_held);
	sipc_stats_release(&st);
}

int
main(int argc, char **argv)
{
	char env[160], err[512];
	const char *env_set[2] = { env, NULL };
	struct sipc_config cfg;
	struct baseline b0;
	uint64_t deaths;
	int rc;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("soak: seed %" PRIu64 "\n", g.seed);
	printf("soak: %u s, %u workers, %u callers, window %u\n", g.seconds,
	    g.nworkers, g.ncallers, g.window);
	pthread_mutex_init(&g.chunk_mu, NULL);
	pthread_mutex_init(&g.viol_mu, NULL);
	snprintf(g.dir, sizeof(g.dir), "/tmp/sipc-soak-XXXXXX");
	if (mkdtemp(g.dir) == NULL) {
		perror("soak: mkdtemp");
		return 2;
	}
	snprintf(g.log_path, sizeof(g.log_path), "%s/exec.log", g.dir);
	snprintf(env, sizeof(env), "SIPC_EXEC_LOG=%s", g.log_path);
	/* A sandboxed worker sees no host file, so it cannot keep the
	 * execution log: the checks that need it are left out, said so. */
	if (g.provider != NULL && strcmp(g.provider, "local") != 0) {
		env_set[0] = NULL;
		printf("soak: provider %s: no execution log (the worker sees "
		    "no host file); its checks are left out\n", g.provider);
	}
	config(&cfg, env_set);
	baseline_get(&b0);
	if ((rc = sipc_create(&cfg, err, sizeof(err), &g.sup)) < 0) {
		fprintf(stderr, "soak: sipc_create: %s: %s\n",
		    sipc_strerror(rc), err);
		return 2;
	}
	if ((rc = sipc_wait_ready(g.sup, g.nworkers, 10000)) < 0) {
		fprintf(stderr, "soak: workers not ready: %s\n",
		    sipc_strerror(rc));
		return 2;
	}
	run_load();
	print_stats();
	deaths = atomic_load(&g.worker_deaths);
	sipc_destroy(g.sup);
	g.sup = NULL;
	baseline_check(&b0);
	check_all(atomic_load(&g.nrec), env_set[0] != NULL ? g.log_path :
	    NULL, deaths);
	printf("soak: faults kill %" PRIu64 " stop %" PRIu64 " stopread %"
	    PRIu64 " badframe %" PRIu64 " midframe %" PRIu64 " crash %" PRIu64
	    " (skipped %" PRIu64 ")\n", g.faults[F_KILL], g.faults[F_STOP],
	    g.faults[F_STOPREAD], g.faults[F_BADFRAME], g.faults[F_MIDFRAME],
	    g.faults[F_CRASH], g.faults_skipped);
	printf("soak: memory mem_held max %" PRIu64 " ceiling %zu, VmRSS max "
	    "%" PRIu64 " kB (bookkeeping %" PRIu64 " kB), log error %" PRIu64
	    " warn %" PRIu64 "\n", g.mem_max, cfg.mem_ceiling, g.rss_max_kb,
	    (atomic_load(&g.nrec) + CHUNK - 1) / CHUNK * CHUNK *
	    sizeof(struct rec) / 1024, g.log_msgs[SIPC_LOG_ERROR],
	    g.log_msgs[SIPC_LOG_WARN]);
	printf("soak: violations %" PRIu64 "\n", atomic_load(&g.nviol));
	if (atomic_load(&g.nviol) != 0) {
		printf("soak: execution log kept in %s\n", g.log_path);
		printf("soak: replay with --seed %" PRIu64 "\n", g.seed);
		return 1;
	}
	unlink(g.log_path);
	rmdir(g.dir);
	return 0;
}
