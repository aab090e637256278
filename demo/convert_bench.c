/*
 * convert_bench.c - the bench section "convert" (sipc-convert --bench;
 * bench/README.md): the valid documents converted through the pool of
 * sipc-exec workers and, in the same run, by forking gs directly (a file
 * in, a file out, as sipc-exec does) from the same number of threads;
 * then a hung document's deadline to its TIMEOUT outcome and to the
 * moment no process of its tree is left.  Rounds alternate, the best of
 * each side is kept.  Prints "metric" and "note" lines.
 *
 * Threads: main; --threads caller threads per round, each taking the next
 * document from an atomic index; nothing else is shared.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "convert.h"

extern char **environ;

struct round {
	const struct cv_opts *o;
	const struct cv_docs *d;
	struct cv_pool *p;
	const size_t *idx;
	size_t n;
	bool direct;
	_Atomic size_t next;
	_Atomic unsigned long ok, bad;
};

static bool
via_sipc(struct round *r, const struct cv_doc *d)
{
	struct sipc_request q = { .payload = d->data, .len = d->len,
	    .timeout_ms = 30000 };
	struct sipc_result res;
	bool ok;

	if (sipc_call(r->p->s, &q, &res) < 0)
		return false;
	ok = cv_judge(d, &res, r->p->mem, NULL, 0);
	sipc_result_release(&res);
	return ok;
}

static bool
out_has(const char *path, const char *token)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, token) != NULL;
}

/* What a host without sipc does: the document to a file, gs on it,
 * the output file read back. */
static bool
direct_gs(struct round *r, const struct cv_doc *d)
{
	char dir[] = "/tmp/sipc-bench.XXXXXX", in[64], out[64], ofile[80];
	char *argv[] = { (char *)r->o->gs, "-q", "-dSAFER", "-dBATCH",
	    "-dNOPAUSE", "-dPDFSTOPONERROR", "-sDEVICE=txtwrite",
	    "-sstdout=%stderr", ofile, in, NULL };
	posix_spawn_file_actions_t fa;
	int fd, st = -1;
	bool ok = false;
	pid_t pid;

	if (mkdtemp(dir) == NULL)
		return false;
	snprintf(in, sizeof(in), "%s/in", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ofile, sizeof(ofile), "-sOutputFile=%s", out);
	if ((fd = open(in, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0) {
		ok = write(fd, d->data, d->len) == (ssize_t)d->len;
		close(fd);
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (ok && posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) == 0)
		while (waitpid(pid, &st, 0) < 0)
			;
	posix_spawn_file_actions_destroy(&fa);
	ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	    out_has(out, d->token);
	unlink(in);
	unlink(out);
	rmdir(dir);
	return ok;
}

static void *
round_main(void *arg)
{
	struct round *r = arg;
	size_t i;

	while ((i = atomic_fetch_add(&r->next, 1)) < r->n) {
		const struct cv_doc *d = &r->d->v[r->idx[i]];
		bool ok = r->direct ? direct_gs(r, d) : via_sipc(r, d);

		atomic_fetch_add(ok ? &r->ok : &r->bad, 1);
	}
	return NULL;
}

/* One round; documents per second, or -1 when one was not right. */
static double
round_run(struct round *r)
{
	pthread_t tid[64];
	uint64_t t0 = cv_now_us();
	unsigned t;

	atomic_store(&r->next, 0);
	atomic_store(&r->ok, 0);
	atomic_store(&r->bad, 0);
	for (t = 0; t < r->o->threads && t < 64; t++)
		if (pthread_create(&tid[t], NULL, round_main, r) != 0)
			return -1;
	while (t-- > 0)
		pthread_join(tid[t], NULL);
	if (atomic_load(&r->bad) != 0)
		return -1;
	return (double)r->n / ((double)(cv_now_us() - t0) / 1e6);
}

/* A hung document: its deadline to its outcome (TIMEOUT, or sipc-exec's
 * own answer), and to no gs of the run. */
static int
bench_hang(struct cv_pool *p, const struct cv_doc *d)
{
	const unsigned deadline_ms = 1000;
	struct sipc_request q = { .payload = d->data, .len = d->len,
	    .timeout_ms = deadline_ms };
	struct sipc_result res;
	uint64_t t0, t_out, t_gone, due;
	int gs = 1;

	t0 = cv_now_us();
	due = t0 + deadline_ms * 1000ull;
	if (sipc_call(p->s, &q, &res) < 0)
		return 1;
	t_out = cv_now_us();
	if (!cv_at_deadline(&res)) {
		printf("note convert hang: %s, not TIMEOUT\n",
		    sipc_outcome_name(res.outcome));
		sipc_result_release(&res);
		return 1;
	}
	sipc_result_release(&res);
	while (cv_marked(p->marker, &gs) >= 0 && gs > 0 &&
	    cv_now_us() - t_out < 10000000)
		usleep(500);
	t_gone = cv_now_us();
	/* signed: the library's timer may fire within its tick before the
	 * deadline counted from here */
	printf("metric convert_hang_deadline_to_timeout_ms %.1f ms\n",
	    (double)((int64_t)t_out - (int64_t)due) / 1000.0);
	printf("metric convert_hang_deadline_to_tree_gone_ms %.1f ms\n",
	    (double)((int64_t)t_gone - (int64_t)due) / 1000.0);
	printf("note convert hang: deadline %u ms, cancel_grace_ms 300, "
	    "grace_ms 1000; tree = every gs of the run, found in /proc by "
	    "its environment\n", deadline_ms);
	return gs == 0 ? 0 : 1;
}

int
cv_bench(const struct cv_opts *o, const struct cv_docs *d,
         struct cv_pool *p)
{
	struct round r = { .o = o, .d = d, .p = p };
	size_t *idx = calloc(d->n, sizeof(*idx)), n = 0;
	double best_s = -1, best_d = -1, v;
	unsigned rounds = o->quick ? 1 : 3;
	const struct cv_doc *loop = NULL;
	int rc = 0;

	for (size_t i = 0; idx != NULL && i < d->n; i++) {
		if (strcmp(d->v[i].expect, "timeout") == 0)
			loop = &d->v[i];
		if (strcmp(d->v[i].cls, "ps") == 0 || strcmp(d->v[i].cls,
		    "pdf") == 0)
			if (!o->quick || n < 60)
				idx[n++] = i;
	}
	r.idx = idx;
	r.n = n;
	printf("note convert: %zu documents, %u workers, %u threads, provider "
	    "%s, %u rounds each way alternating, best kept; direct: "
	    "posix_spawn of gs, the document in a file under /tmp, the text "
	    "read back; sipc: the same gs command in sipc-exec, its scratch "
	    "under the worker's /tmp (a tmpfs in the sandbox)\n", n,
	    o->workers, o->threads, p->provider, rounds);
	for (unsigned k = 0; k < rounds && rc == 0; k++) {
		r.direct = false;
		if ((v = round_run(&r)) < 0)
			rc = 1;
		best_s = v > best_s ? v : best_s;
		r.direct = true;
		if ((v = round_run(&r)) < 0)
			rc = 1;
		best_d = v > best_d ? v : best_d;
	}
	if (rc != 0)
		printf("note convert: a conversion was not right\n");
	printf("metric sipc_convert_docs_per_s %.2f docs/s\n", best_s);
	printf("metric direct_gs_docs_per_s %.2f docs/s\n", best_d);
	if (loop != NULL)
		rc |= bench_hang(p, loop);
	free(idx);
	return rc;
}
