/*
 * gen.c - one generation of the drill: the supervisor process.  It links
 * libsipc, reconciles what the previous (killed) generation left in the
 * state directory, resubmits what is provably safe to resubmit, and is
 * the load generator, recording every submission and every outcome in
 * its ledger (drill.h) before/after the library sees them.
 *
 * Threads: the main thread (reconcile, status, final drain), DRILL_THREADS
 * submitter threads, and the library's threads, which run the completion
 * callback.  `win_lock` guards the outstanding-request window; counters
 * are atomics; ledger lines are single write() calls.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sipc.h"
#include "drill.h"

#define DRILL_THREADS 4
#define DRILL_WINDOW 96          /* requests outstanding at most */
#define READY_OUTCOMES 50

struct gen_opts {
	const char *state, *ledger, *exec_log, *fixture, *tag;
	unsigned gen, workers, rate, final_ms;
	enum sipc_durability durability;
	int status_fd;
};

static struct gen_opts o;
static sipc_supervisor *sup;
static int ledger_fd = -1;
static atomic_uint seq;
static atomic_bool stopping;
static atomic_ullong outcomes, anomalies;
static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t win_cv = PTHREAD_COND_INITIALIZER;
static unsigned outstanding;

static void __attribute__((format(printf, 1, 2)))
lprintf(const char *fmt, ...)
{
	char line[160];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write() per line: whole under O_APPEND, and in the page
	 * cache (so it survives our SIGKILL) once write() returned. */
	if (write(ledger_fd, line, (size_t)n) != n) {
		perror("drill: ledger write");
		_exit(3);
	}
}

static int
kind_of(enum sipc_outcome oc)
{
	switch (oc) {
	case SIPC_OUTCOME_OK: return DK_OK;
	case SIPC_OUTCOME_WORKER_ERROR: return DK_WERR;
	case SIPC_OUTCOME_REJECTED: return DK_REJECTED;
	case SIPC_OUTCOME_TIMEOUT: return DK_TIMEOUT;
	case SIPC_OUTCOME_UNKNOWN: return DK_UNKNOWN;
	}
	return DK_UNKNOWN;
}

/* ------------------------------------------------------- submitting */

/* The request mix, derived from the key number alone so that a
 * resubmission is byte-for-byte the same request. */
struct shape {
	bool idem, nowait;
	unsigned timeout_ms;
	const char *cmd;         /* NULL: the key's unique echo payload */
};

static struct shape
shape_of(uint32_t num)
{
	unsigned h = (num * 2654435761u >> 12) % 1000;

	if (h < 800)
		return (struct shape){ false, false, 10000, NULL };
	if (h < 880)
		return (struct shape){ true, false, 10000, "sleep 20" };
	if (h < 930)
		return (struct shape){ true, false, 10000, "error 7" };
	if (h < 998)
		return (struct shape){ false, true, 10000, NULL };
	return (struct shape){ true, false, 60, "sleep 300" };
}

static void
window_release(void)
{
	pthread_mutex_lock(&win_lock);
	outstanding--;
	pthread_cond_broadcast(&win_cv);
	pthread_mutex_unlock(&win_lock);
}

static void
done_cb(void *arg, struct sipc_result *res)
{
	uint32_t num = (uint32_t)(uintptr_t)arg;

	lprintf("O %u %u %s %d\n", num, o.gen, drill_kind_name(
	    kind_of(res->outcome)), res->error);
	sipc_result_release(res);
	atomic_fetch_add(&outcomes, 1);
	window_release();
}

static void
submit_key(uint32_t num)
{
	struct shape sh = shape_of(num);
	uint8_t p[DRILL_PAYLOAD_LEN + 16];
	struct sipc_request r = { .payload = p };
	char key[24];
	uint64_t id = 0;
	int rc;

	if (sh.cmd == NULL) {
		drill_payload(num, p);
		r.len = DRILL_PAYLOAD_LEN;
	} else {
		memcpy(p, "\0CMD", 4);
		r.len = 4 + (size_t)snprintf((char *)p + 4, sizeof(p) - 4,
		    "%s", sh.cmd);
	}
	snprintf(key, sizeof(key), "k%u", num);
	r.idempotency_key = key;
	r.timeout_ms = sh.timeout_ms;
	r.flags = (sh.idem ? SIPC_REQ_IDEMPOTENT : 0) |
	    (sh.nowait ? SIPC_REQ_NOWAIT : 0);
	pthread_mutex_lock(&win_lock);
	while (outstanding >= DRILL_WINDOW)
		pthread_cond_wait(&win_cv, &win_lock);
	outstanding++;
	pthread_mutex_unlock(&win_lock);

	lprintf("S %u %c %u\n", num, sh.idem ? 'i' : 'n', o.gen);
	rc = sipc_submit(sup, &r, done_cb, (void *)(uintptr_t)num, &id);
	if (rc == 0) {
		lprintf("A %u %u %llu\n", num, o.gen, (unsigned long long)id);
		return;
	}
	/* Refused at once: the callback never runs; this is the outcome. */
	lprintf("O %u %u rejected %d\n", num, o.gen, rc);
	atomic_fetch_add(&outcomes, 1);
	window_release();
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Steady load: rate/DRILL_THREADS submissions per second per thread. */
static void *
submitter(void *arg)
{
	int64_t step = (int64_t)DRILL_THREADS * 1000000000 / o.rate;
	int64_t next = now_ns(), wait;
	struct timespec ts;

	while (!atomic_load(&stopping)) {
		submit_key(o.gen * DRILL_GEN_STRIDE +
		    atomic_fetch_add(&seq, 1));
		next += step;
		if ((wait = next - now_ns()) > 0) {
			ts.tv_sec = wait / 1000000000;
			ts.tv_nsec = wait % 1000000000;
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* ------------------------------------------------------ reconciling */

struct recon_tally { unsigned listed, st[DR__N], lost, resubmitted; };

static void
resolve(const struct sipc_unresolved *u)
{
	int rc = sipc_reconcile_resolve(sup, u);

	/* NOTFOUND: already resolved (a crash during reconciliation). */
	if (rc < 0 && rc != SIPC_E_NOTFOUND) {
		fprintf(stderr, "drill: resolve %s: %s\n", u->key,
		    sipc_strerror(rc));
		atomic_fetch_add(&anomalies, 1);
	}
}

/* Act on one listed entry: ledger first, then resolve, then resubmit,
 * so a crash anywhere in between repeats work but loses nothing. */
static void
recon_one(const struct sipc_unresolved *u, struct drill_map *m,
    uint32_t *resub, size_t *nresub, struct recon_tally *t)
{
	struct drill_key *k;
	unsigned long num;
	char *end;

	num = strtoul(u->key + 1, &end, 10);
	if (u->key[0] != 'k' || *end != '\0' ||
	    (k = drill_map_get(m, (uint32_t)num, false)) == NULL) {
		fprintf(stderr, "drill: listed key \"%s\" not in the ledger\n",
		    u->key);
		atomic_fetch_add(&anomalies, 1);
		resolve(u);
		return;
	}
	switch (u->state) {
	case SIPC_UNRESOLVED_NEVER_SENT:
		lprintf("R %u %u never_sent\n", k->num, o.gen);
		t->st[DR_NEVER_SENT]++;
		resolve(u);
		if (k->open)
			resub[(*nresub)++] = k->num;
		break;
	case SIPC_UNRESOLVED_MAY_HAVE_RUN:
		lprintf("R %u %u may_have_run\n", k->num, o.gen);
		t->st[DR_MAY_HAVE_RUN]++;
		resolve(u);
		/* The host's decision: only idempotent work runs again. */
		if (k->open && k->idem)
			resub[(*nresub)++] = k->num;
		break;
	case SIPC_UNRESOLVED_COMPLETED:
		lprintf("R %u %u completed %s\n", k->num, o.gen,
		    drill_kind_name(kind_of(u->outcome)));
		t->st[DR_COMPLETED]++;
		resolve(u);
		break;
	}
	k->open = false;
}

/*
 * Reconcile: every listed entry, then every submission the ledger holds
 * open that the library did not list.  Not listed + never accepted
 * (sipc_submit never returned) means the crash came before the journal
 * knew it: never sent.  Not listed + accepted would be a loss.
 */
static int
reconcile(struct recon_tally *t)
{
	struct sipc_unresolved *u = NULL;
	struct drill_map m = { 0 };
	struct drill_counts c;
	uint32_t *resub;
	size_t n = 0, nresub = 0, i;
	int rc;

	if ((rc = drill_ledger_load(o.ledger, &m, &c)) < 0)
		return rc;
	if ((rc = sipc_reconcile_list(sup, &u, &n)) < 0)
		goto out;
	t->listed = (unsigned)n;
	if ((resub = calloc(n + m.n + 1, sizeof(*resub))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		recon_one(&u[i], &m, resub, &nresub, t);
	for (i = 0; i < m.cap; i++) {
		struct drill_key *k = &m.v[i];

		if (!k->used || !k->open)
			continue;
		if (k->accepted) {
			lprintf("L %u %u\n", k->num, o.gen);
			t->lost++;
			continue;
		}
		lprintf("R %u %u never_accepted\n", k->num, o.gen);
		t->st[DR_NEVER_ACCEPTED]++;
		resub[nresub++] = k->num;
	}
	for (i = 0; i < nresub; i++)
		submit_key(resub[i]);
	t->resubmitted = (unsigned)nresub;
	free(resub);
out:
	sipc_reconcile_free(u);
	drill_map_free(&m);
	return rc;
}

/* ------------------------------------------------------------ main */

static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;   /* the directory's own descriptor */
}

static bool
parse_opts(int argc, char **argv)
{
	int i;

	memset(&o, 0, sizeof(o));
	o.rate = 2000;
	o.workers = 2;
	o.status_fd = -1;
	o.durability = SIPC_DURABLE_EACH;
	for (i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (strcmp(k, "--state") == 0) o.state = v;
		else if (strcmp(k, "--ledger") == 0) o.ledger = v;
		else if (strcmp(k, "--exec-log") == 0) o.exec_log = v;
		else if (strcmp(k, "--fixture") == 0) o.fixture = v;
		else if (strcmp(k, "--tag") == 0) o.tag = v;
		else if (strcmp(k, "--gen") == 0) o.gen = (unsigned)atoi(v);
		else if (strcmp(k, "--workers") == 0) o.workers = (unsigned)atoi(v);
		else if (strcmp(k, "--rate") == 0) o.rate = (unsigned)atoi(v);
		else if (strcmp(k, "--final-ms") == 0) o.final_ms = (unsigned)atoi(v);
		else if (strcmp(k, "--status-fd") == 0) o.status_fd = atoi(v);
		else if (strcmp(k, "--durability") == 0)
			o.durability = strcmp(v, "group") == 0 ?
			    SIPC_DURABLE_GROUP : strcmp(v, "off") == 0 ?
			    SIPC_DURABLE_OFF : SIPC_DURABLE_EACH;
		else
			return false;
	}
	return o.state && o.ledger && o.exec_log && o.fixture && o.tag &&
	    o.gen > 0 && o.gen < 4000 && o.rate > 0 && o.status_fd >= 0;
}

static struct sipc_config
gen_config(const char *const *env)
{
	struct sipc_config c;

	sipc_config_init(&c);
	c.environment = SIPC_ENV_TEST;
	c.path = o.fixture;
	if (drill_sandboxed()) {
		c.provider = getenv("SIPC_TEST_PROVIDER");
		c.init_path = getenv("SIPC_INIT");
	}
	c.workers = o.workers;
	c.max_inflight = 8;
	c.ring_frames = 16;
	c.grace_ms = 200;
	c.drain_ms = 10000;
	c.cancel_grace_ms = 100;
	c.restart_base_ms = 10;
	c.restart_cap_ms = 200;
	c.restart_intensity = 50;
	c.pool_restart_budget = 200;
	c.cooldown_ms = 500;
	c.env_set = env;
	c.state_dir = o.state;
	c.durability = o.durability;
	c.group_commit_ms = 5;
	return c;
}

static int
open_supervisor(const char *const *env, sipc_supervisor **ret)
{
	struct sipc_config c = gen_config(env);
	char err[256];
	int rc;

	if ((rc = sipc_create(&c, err, sizeof(err), ret)) < 0)
		fprintf(stderr, "drill: gen %u: sipc_create: %s (%s)\n", o.gen,
		    sipc_strerror(rc), err);
	return rc;
}

/* Final generation: stop the load, let every outcome arrive, destroy,
 * compare descriptors, and reopen to check nothing stays unresolved. */
static int
finish(const char *const *env, pthread_t *th, int fds_base)
{
	struct sipc_unresolved *u = NULL;
	size_t n = 0;
	int i, fds;

	usleep(o.final_ms * 1000u);
	atomic_store(&stopping, true);
	for (i = 0; i < DRILL_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_lock(&win_lock);
	while (outstanding > 0)
		pthread_cond_wait(&win_cv, &win_lock);   /* drain_ms bounds it */
	pthread_mutex_unlock(&win_lock);
	sipc_destroy(sup);
	sup = NULL;
	fds = count_fds();
	if (open_supervisor(env, &sup) < 0 ||
	    sipc_reconcile_list(sup, &u, &n) < 0)
		return 1;
	sipc_reconcile_free(u);
	sipc_destroy(sup);
	dprintf(o.status_fd, "final fds %d %d unresolved %zu anomalies %llu\n",
	    fds_base, fds, n,
	    (unsigned long long)atomic_load(&anomalies));
	return 0;
}

int
drill_gen_main(int argc, char **argv)
{
	char logenv[600], tagenv[300];
	const char *env[] = { logenv, tagenv, NULL };
	struct recon_tally t = { 0 };
	pthread_t th[DRILL_THREADS];
	int64_t end;
	int i, rc, fds_base;

	if (!parse_opts(argc, argv)) {
		fprintf(stderr, "drill gen: bad arguments\n");
		return 2;
	}
	snprintf(logenv, sizeof(logenv), "SIPC_EXEC_LOG=%s", o.exec_log);
	snprintf(tagenv, sizeof(tagenv), "%s", o.tag);
	/* A sandboxed worker cannot write the host's execution log. */
	if (drill_sandboxed()) {
		env[0] = tagenv;
		env[1] = NULL;
	}
	ledger_fd = open(o.ledger, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0644);
	if (ledger_fd < 0) {
		perror("drill: ledger");
		return 1;
	}
	fds_base = count_fds();
	if (open_supervisor(env, &sup) < 0)
		return 1;
	if ((rc = sipc_wait_ready(sup, o.workers, 20000)) < 0 ||
	    (rc = reconcile(&t)) < 0) {
		fprintf(stderr, "drill: gen %u: %s\n", o.gen, sipc_strerror(rc));
		return 1;
	}
	fprintf(stderr, "drill: gen %u (%s, %u workers): listed %u: "
	    "never_sent %u may_have_run %u completed %u; never_accepted %u; "
	    "lost %u; resubmitted %u\n", o.gen, o.durability ==
	    SIPC_DURABLE_GROUP ? "group" : "each", o.workers, t.listed,
	    t.st[DR_NEVER_SENT], t.st[DR_MAY_HAVE_RUN], t.st[DR_COMPLETED],
	    t.st[DR_NEVER_ACCEPTED], t.lost, t.resubmitted);
	for (i = 0; i < DRILL_THREADS; i++)
		if (pthread_create(&th[i], NULL, submitter, NULL) != 0)
			return 1;
	end = now_ns() + 10 * 1000000000ll;
	while (atomic_load(&outcomes) < READY_OUTCOMES && now_ns() < end)
		usleep(2000);
	dprintf(o.status_fd, "ready anomalies %llu lost %u\n",
	    (unsigned long long)atomic_load(&anomalies), t.lost);
	if (o.final_ms > 0)
		return finish(env, th, fds_base);
	for (i = 0; i < DRILL_THREADS; i++)   /* until SIGKILLed */
		pthread_join(th[i], NULL);
	return 0;
}

/* A second instance on a live state directory must be refused, and the
 * refusal must name the holder's pid. */
int
drill_probe_main(int argc, char **argv)
{
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[256], want[32];
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: drill probe STATE_DIR FIXTURE HOLDER_PID\n");
		return 2;
	}
	sipc_config_init(&c);
	c.environment = SIPC_ENV_TEST;
	c.path = argv[2];
	c.workers = 1;
	c.state_dir = argv[1];
	err[0] = '\0';
	rc = sipc_create(&c, err, sizeof(err), &s);
	snprintf(want, sizeof(want), "%s", argv[3]);
	fprintf(stderr, "drill: lock probe: %s: %s\n", sipc_strerror(rc), err);
	if (rc == 0) {
		sipc_destroy(s);
		return 1;
	}
	return rc == SIPC_E_LOCKED && strstr(err, want) != NULL ? 0 : 1;
}
