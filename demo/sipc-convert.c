/*
 * sipc-convert - the main job: documents converted to text by Ghostscript
 * through a pool of sipc-exec workers, hostile documents included, every
 * result checked.
 *
 *   sipc-convert [--docs DIR] [--exec PATH] [--init PATH] [--gs PATH]
 *                [--provider auto|sandbox|local] [--workers N]
 *                [--threads N] [--verbose] [--bench [--quick]]
 *
 * The documents are fixtures/docgen's (DIR/MANIFEST says what each must
 * come to).  The pool runs under the sandbox provider (bubblewrap) where
 * it can, else under the local adapter (development only), and says
 * which and why.  The memory bomb ends by the memory limit: a cgroup
 * memory.max where the supervisor can make one, else sipc-exec's
 * address-space limit (RLIMIT_AS).
 *
 * Phases: the infinite loop alone (TIMEOUT at its deadline, then no gs
 * of this run may be left in /proc), the memory bomb alone, then every
 * other document from --threads caller threads (the malformed ones, the
 * standard-error flood and the valid ones mixed; the pool may not
 * restart a worker for any of them).  A progress line is drawn on a
 * terminal only.  Then a table of outcomes by document class,
 * conversions per second, and the workers with their containment.
 *
 * Exit status: 0 when every document came to what its MANIFEST line
 * says, no process of the run is left and no child or zombie remains;
 * 1 otherwise; 2 on a usage or setup error.  --bench prints the bench
 * section's metric lines instead (demo/convert_bench.c).
 *
 * Threads: main; caller threads (run_bulk); completion of sipc_call()
 * on the caller.  Tallies are atomics; the first mismatches are kept
 * under tally.mu.
 */
#include <bsd/stdlib.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert.h"

#define NCLS 6
#define NOUT 5
#define DOC_TIMEOUT_MS 30000
#define LOOP_TIMEOUT_MS 2000
#define BOMB_TIMEOUT_MS 20000
#define GONE_WAIT_MS 10000

static const char *const classes[NCLS] = { "ps", "pdf", "malformed",
	"flood", "loop", "bomb" };

static struct {
	_Atomic unsigned long out[NCLS][NOUT], docs[NCLS], good[NCLS];
	_Atomic unsigned long done, valid_ok;
	pthread_mutex_t mu;
	char bad[8][200];             /* [mu] the first mismatches */
	unsigned nbad;                /* [mu] */
	char how[NCLS][96];           /* [mu] how a hostile class ended */
} tally = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct bulk {
	const struct cv_docs *d;
	struct cv_pool *p;
	size_t *order, n;
	_Atomic size_t next;
};

static int
cls_index(const char *cls)
{
	for (int i = 0; i < NCLS; i++)
		if (strcmp(classes[i], cls) == 0)
			return i;
	return NCLS - 1;
}

static unsigned
timeout_of(const struct cv_doc *d)
{
	if (strcmp(d->expect, "timeout") == 0)
		return LOOP_TIMEOUT_MS;
	return strcmp(d->expect, "memory") == 0 ? BOMB_TIMEOUT_MS :
	    DOC_TIMEOUT_MS;
}

/* Convert one document, count and judge it.  True when as expected. */
static bool
convert_one(struct cv_pool *p, const struct cv_doc *d)
{
	struct sipc_request q = { .payload = d->data, .len = d->len,
	    .timeout_ms = timeout_of(d) };
	struct sipc_result r;
	int c = cls_index(d->cls), rc;
	char how[96];
	bool ok;

	atomic_fetch_add(&tally.docs[c], 1);
	if ((rc = sipc_call(p->s, &q, &r)) < 0) {
		memset(&r, 0, sizeof(r));
		r.outcome = SIPC_OUTCOME_REJECTED;
		r.error = rc;
	}
	ok = cv_judge(d, &r, p->mem, how, sizeof(how));
	atomic_fetch_add(&tally.out[c][(unsigned)r.outcome < NOUT ?
	    (unsigned)r.outcome : NOUT - 1], 1);
	pthread_mutex_lock(&tally.mu);
	if (strcmp(d->expect, "ok") != 0)
		snprintf(tally.how[c], sizeof(tally.how[c]), "%s", how);
	if (!ok && tally.nbad < 8)
		snprintf(tally.bad[tally.nbad++], sizeof(tally.bad[0]),
		    "%s (%s): expected %s, got %s%s%.*s", d->name, d->cls,
		    d->expect, sipc_outcome_name(r.outcome),
		    r.reply_len ? ": " : "", (int)(r.reply_len < 100 ?
		    r.reply_len : 100), r.reply ? (const char *)r.reply : "");
	pthread_mutex_unlock(&tally.mu);
	if (ok) {
		atomic_fetch_add(&tally.good[c], 1);
		if (strcmp(d->expect, "ok") == 0)
			atomic_fetch_add(&tally.valid_ok, 1);
	}
	atomic_fetch_add(&tally.done, 1);
	sipc_result_release(&r);
	return ok;
}

static void *
bulk_main(void *arg)
{
	struct bulk *b = arg;
	size_t i;

	while ((i = atomic_fetch_add(&b->next, 1)) < b->n)
		convert_one(b->p, &b->d->v[b->order[i]]);
	return NULL;
}

/* ------------------------------------------------------------ phases */

/* An asynchronous outcome: the loop's, while main watches /proc. */
struct box {
	pthread_mutex_t mu;
	struct sipc_result r;         /* [mu] */
	bool done;                    /* [mu] */
};

static void
box_done(void *arg, struct sipc_result *res)
{
	struct box *b = arg;

	pthread_mutex_lock(&b->mu);
	b->r = *res;                  /* the result's buffers move with it */
	b->done = true;
	pthread_mutex_unlock(&b->mu);
}

static bool
box_wait(struct box *b, int *ret_gs_seen, const char *marker)
{
	bool done = false;
	int gs = 0;

	while (!done) {
		if (*ret_gs_seen == 0 && cv_marked(marker, &gs) > 0 && gs > 0)
			*ret_gs_seen = gs;
		usleep(2000);
		pthread_mutex_lock(&b->mu);
		done = b->done;
		pthread_mutex_unlock(&b->mu);
	}
	return true;
}

static void
loop_bad(const char *what)
{
	pthread_mutex_lock(&tally.mu);
	if (tally.nbad < 8)
		snprintf(tally.bad[tally.nbad++], sizeof(tally.bad[0]), "%s",
		    what);
	pthread_mutex_unlock(&tally.mu);
}

/* The loop alone: its gs seen running (so the check below can fail),
 * TIMEOUT at the deadline, then no gs of the run left anywhere. */
static bool
phase_loop(struct cv_pool *p, const struct cv_doc *d)
{
	struct sipc_request q = { .payload = d->data, .len = d->len,
	    .timeout_ms = timeout_of(d) };
	struct box b = { .mu = PTHREAD_MUTEX_INITIALIZER };
	int c = cls_index(d->cls), gs = 0, seen = 0, n;
	uint64_t t0;
	bool ok;

	atomic_fetch_add(&tally.docs[c], 1);
	if (sipc_submit(p->s, &q, box_done, &b, NULL) < 0)
		exit(2);
	box_wait(&b, &seen, p->marker);
	t0 = cv_now_us();
	while ((n = cv_marked(p->marker, &gs)) >= 0 && gs > 0 &&
	    cv_now_us() - t0 < GONE_WAIT_MS * 1000ull)
		usleep(2000);
	ok = cv_judge(d, &b.r, p->mem, NULL, 0);
	atomic_fetch_add(&tally.out[c][(unsigned)b.r.outcome < NOUT ?
	    (unsigned)b.r.outcome : NOUT - 1], 1);
	pthread_mutex_lock(&tally.mu);
	snprintf(tally.how[c], sizeof(tally.how[0]), "%s at %u ms; no gs "
	    "left %.0f ms later", sipc_outcome_name(b.r.outcome),
	    LOOP_TIMEOUT_MS, (double)(cv_now_us() - t0) / 1000.0);
	pthread_mutex_unlock(&tally.mu);
	sipc_result_release(&b.r);
	atomic_fetch_add(&tally.done, 1);
	if (seen == 0)
		loop_bad("loop: its gs never seen in /proc: the leftover check "
		    "cannot be made here");
	if (gs != 0 || n < 0)
		loop_bad("loop: gs left after its TIMEOUT (or /proc unreadable)");
	ok = ok && seen > 0 && gs == 0 && n >= 0;
	if (ok)
		atomic_fetch_add(&tally.good[c], 1);
	return ok;
}

static void
progress(const struct bulk *b, size_t base, bool tty)
{
	unsigned long last = ULONG_MAX, now;

	while ((now = atomic_load(&tally.done)) < base + b->n) {
		if (tty && now != last) {
			printf("\r  converting: %lu/%zu", now - base, b->n);
			fflush(stdout);
			last = now;
		}
		usleep(100000);
	}
	if (tty)
		printf("\r  converting: %zu/%zu\n", b->n, b->n);
}

/* Every document but the loop and the bomb, from T threads.  Seconds. */
static double
phase_bulk(struct cv_pool *p, const struct cv_docs *d, unsigned threads)
{
	struct bulk b = { .d = d, .p = p };
	pthread_t tid[64];
	size_t base = atomic_load(&tally.done);
	uint64_t t0;
	unsigned t;

	if ((b.order = calloc(d->n, sizeof(*b.order))) == NULL)
		exit(2);
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].expect, "timeout") != 0 &&
		    strcmp(d->v[i].expect, "memory") != 0)
			b.order[b.n++] = i;
	/* the hostile ones among the first third, the valid ones around */
	for (size_t i = 0, k = 0; i < b.n; i++)
		if (strcmp(d->v[b.order[i]].cls, "malformed") == 0 ||
		    strcmp(d->v[b.order[i]].cls, "flood") == 0) {
			size_t j = 7 + 23 * k++, x;

			if (j < i) {
				x = b.order[j];
				b.order[j] = b.order[i];
				b.order[i] = x;
			}
		}
	t0 = cv_now_us();
	for (t = 0; t < threads && t < 64; t++)
		if (pthread_create(&tid[t], NULL, bulk_main, &b) != 0)
			exit(2);
	progress(&b, base, isatty(STDOUT_FILENO));
	while (t-- > 0)
		pthread_join(tid[t], NULL);
	free(b.order);
	return (double)(cv_now_us() - t0) / 1e6;
}

/* ------------------------------------------------------------ report */

static void
print_table(void)
{
	unsigned long bad = 0;

	printf("%-10s %5s  %-8s %5s %7s %8s %8s %7s  %s\n", "class", "docs",
	    "expected", "OK", "W_ERROR", "REJECTED", "TIMEOUT", "UNKNOWN",
	    "as expected");
	for (int c = 0; c < NCLS; c++) {
		unsigned long n = atomic_load(&tally.docs[c]);
		unsigned long g = atomic_load(&tally.good[c]);
		const char *exp = c < 2 ? "ok" : c == 2 ? "error" : c == 3 ?
		    "ok" : c == 4 ? "timeout" : "memory";

		if (n == 0)
			continue;
		printf("%-10s %5lu  %-8s", classes[c], n, exp);
		for (int o = 0; o < NOUT; o++)
			printf(" %*lu", o == 0 ? 5 : o == 1 ? 7 : 8 - (o == 4),
			    atomic_load(&tally.out[c][o]));
		printf("  %lu/%lu%s%s\n", g, n, c >= 2 ? "  " : "",
		    c >= 2 ? tally.how[c] : "");
		bad += n - g;
	}
	if (bad == 0)
		return;
	printf("not as expected: %lu\n", bad);
	for (unsigned i = 0; i < tally.nbad; i++)
		printf("  %s\n", tally.bad[i]);
}

static void
print_worker(const struct sipc_worker_stats *w, const char *provider)
{
	char ex[96];

	if (w->last_exit.kind == SIPC_EXIT_NONE)
		snprintf(ex, sizeof(ex), "-");
	else
		sipc_exit_format(&w->last_exit, ex, sizeof(ex));
	printf("  %-3u %-8d %-4u %-8s %-14s %-6s %10llu %4llu  %s\n",
	    w->worker_id, (int)w->pid, w->generation, provider,
	    sipc_containment_name(w->containment), w->cgroup ?
	    (w->limits & SIPC_LIMIT_MEMORY ? "memory" : "yes") : "no",
	    (unsigned long long)w->completed,
	    (unsigned long long)w->restarts, ex);
}

/* The pool's restarts so far; with `print`, the workers' table. */
static uint64_t
print_workers(struct cv_pool *p, bool print)
{
	struct sipc_stats st;
	uint64_t restarts;

	if (sipc_stats_get(p->s, &st) < 0)
		return UINT64_MAX;
	if (print) {
		printf("workers (containment each got):\n");
		printf("  %-3s %-8s %-4s %-8s %-14s %-6s %10s %4s  %s\n", "id",
		    "pid", "gen", "provider", "tree", "cgroup", "completed",
		    "rst", "last exit");
		for (unsigned i = 0; i < st.nworkers; i++)
			print_worker(&st.workers[i], p->provider);
	}
	restarts = st.restarts;
	sipc_stats_release(&st);
	return restarts;
}

static void
print_setup(const struct cv_opts *o, const struct cv_pool *p,
            const struct cv_docs *d)
{
	struct sipc_stats st;

	printf("sipc-convert: %zu documents (%s), %u sipc-exec workers "
	    "running %s, %u caller threads\n", d->n, o->docs, o->workers,
	    o->gs, o->threads);
	if (strcmp(p->provider, "sandbox") == 0)
		printf("provider: sandbox (bubblewrap)\n");
	else if (p->why_not_sandbox[0] != '\0')
		printf("provider: local adapter (development only): the sandbox "
		    "could not be used: %s\n", p->why_not_sandbox);
	else
		printf("provider: local adapter (development only), as "
		    "--provider asked\n");
	if (sipc_stats_get(p->s, &st) == 0) {
		if (st.cgroup_path[0] == '\0')
			printf("cgroup: none, so no cgroup.kill (tree containment "
			    "is the PID namespace alone): %s\n", st.cgroup_why);
		sipc_stats_release(&st);
	}
	if (p->mem == CV_MEM_CG)
		printf("memory: cgroup memory.max %u MiB per worker tree\n",
		    CV_MEM_CGROUP >> 20);
	else
		printf("memory: sipc-exec --limit-as %s (RLIMIT_AS of gs); no "
		    "cgroup memory limit here: %s\n", CV_MEM_LIMIT,
		    p->why_not_cgroup);
}

/* After destroy: nothing of the run is left, no child, no zombie. */
static bool
check_leftovers(const struct cv_pool *p)
{
	int gs = 0, z = 0, left = cv_marked(p->marker, &gs);
	int kids = cv_children(&z);

	printf("left after destroy: %d process(es) of this run (%d gs), %d "
	    "child(ren), %d zombie(s)\n", left, gs, kids, z);
	return left == 0 && kids == 0 && z == 0;
}

/* The flood wrote megabytes to standard error: the diagnostics that
 * reached the host stay within sipc-exec's --diag-max (16 KiB) for each
 * document that writes any (the hostile ones; gs -q is silent on the
 * valid ones), plus a line of sipc-exec's own each. */
static bool
check_diag(const struct cv_docs *d)
{
	unsigned long long seen = cv_diag_bytes(), bound = 0;

	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].cls, "ps") && strcmp(d->v[i].cls, "pdf"))
			bound += 17 * 1024;
	printf("diagnostics: %llu bytes reached the host (the flood document "
	    "wrote 8 MB to standard error; bound %llu): %s\n", seen, bound,
	    seen <= bound ? "bounded" : "NOT BOUNDED");
	return seen <= bound;
}

/* ------------------------------------------------------------ options */

static void __attribute__((noreturn))
usage(const char *why)
{
	if (why != NULL)
		fprintf(stderr, "sipc-convert: %s\n", why);
	fprintf(stderr, "usage: sipc-convert [--docs DIR] [--exec PATH] "
	    "[--init PATH] [--gs PATH]\n"
	    "                    [--provider auto|sandbox|local] "
	    "[--workers N] [--threads N]\n"
	    "                    [--verbose] [--bench [--quick]]\n");
	exit(2);
}

static void
parse_opts(int argc, char **argv, struct cv_opts *o)
{
	static const struct option lo[] = {
		{ "docs", required_argument, NULL, 'd' },
		{ "exec", required_argument, NULL, 'e' },
		{ "init", required_argument, NULL, 'i' },
		{ "gs", required_argument, NULL, 'g' },
		{ "provider", required_argument, NULL, 'p' },
		{ "workers", required_argument, NULL, 'w' },
		{ "threads", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "bench", no_argument, NULL, 'b' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *errstr = NULL;
	int ch;

	*o = (struct cv_opts){ .docs = "build/fixtures/docs", .exec =
	    "build/libexec/sipc-exec", .gs = "/usr/bin/gs", .provider = "auto",
	    .workers = 2, .threads = 0 };
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'd': o->docs = optarg; break;
		case 'e': o->exec = optarg; break;
		case 'i': o->init = optarg; break;
		case 'g': o->gs = optarg; break;
		case 'p': o->provider = optarg; break;
		case 'w': o->workers = (unsigned)strtonum(optarg, 1, 64, &errstr);
			break;
		case 't': o->threads = (unsigned)strtonum(optarg, 1, 64, &errstr);
			break;
		case 'v': o->verbose = true; break;
		case 'b': o->bench = true; break;
		case 'q': o->quick = true; break;
		case 'h': usage(NULL);
		default: usage("unknown option");
		}
		if (errstr != NULL)
			usage("--workers and --threads are 1..64");
	}
	if (optind != argc)
		usage("unexpected argument");
	if (strcmp(o->provider, "auto") && strcmp(o->provider, "sandbox") &&
	    strcmp(o->provider, "local"))
		usage("--provider is auto, sandbox or local");
	if (o->threads == 0)
		o->threads = o->workers;
	if (access(o->gs, X_OK) != 0) {
		fprintf(stderr, "sipc-convert: %s cannot be run (Debian: "
		    "apt-get install ghostscript, or make deps as root)\n", o->gs);
		exit(2);
	}
}

/* The loop, then the bomb, then the rest; true when all as expected. */
static bool
run_phases(const struct cv_opts *o, struct cv_pool *p,
           const struct cv_docs *d, double *ret_secs)
{
	uint64_t r0;
	bool ok = true;

	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].expect, "timeout") == 0)
			ok &= phase_loop(p, &d->v[i]);
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].expect, "memory") == 0)
			ok &= convert_one(p, &d->v[i]);
	/* the hostile documents of the bulk may not cost a restart */
	(void)sipc_wait_ready(p->s, o->workers, 10000);
	r0 = print_workers(p, false);
	*ret_secs = phase_bulk(p, d, o->threads);
	if (print_workers(p, true) != r0) {
		printf("restarts during the bulk phase: the pool was affected\n");
		ok = false;
	}
	return ok;
}

int
main(int argc, char **argv)
{
	struct cv_opts o;
	struct cv_docs d;
	struct cv_pool p;
	double secs = 0;
	bool ok;

	parse_opts(argc, argv, &o);
	cv_docs_load(o.docs, &d);
	cv_pool_start(&o, &p);
	if (o.bench) {
		int rc = cv_bench(&o, &d, &p);

		cv_pool_stop(&p);
		cv_docs_free(&d);
		return rc;
	}
	print_setup(&o, &p, &d);
	ok = run_phases(&o, &p, &d, &secs);
	print_table();
	printf("conversions: %lu valid documents in %.2f s of the bulk phase: "
	    "%.1f per second (%u workers, %u threads)\n",
	    atomic_load(&tally.valid_ok), secs, secs > 0 ?
	    (double)atomic_load(&tally.valid_ok) / secs : 0.0, o.workers,
	    o.threads);
	ok &= check_diag(&d);
	printf("per-request figures (queue, run, CPU, memory): not reported "
	    "by this version of the library\n");
	cv_pool_stop(&p);
	for (int c = 0; c < NCLS; c++)
		ok &= atomic_load(&tally.good[c]) == atomic_load(&tally.docs[c]);
	ok &= check_leftovers(&p);
	cv_docs_free(&d);
	printf("result: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
