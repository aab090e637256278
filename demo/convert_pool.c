/*
 * convert_pool.c - the conversion demo's documents, its pool of
 * sipc-exec workers running Ghostscript, the checks of each result and
 * the /proc scans for leftovers (convert.h).
 *
 * Threads: main loads the documents and starts the pool; cv_judge(),
 * cv_marked() and cv_now_us() are called from caller threads too and
 * touch nothing shared.  The log callback runs on library threads; it
 * keeps the last warning under last_mu.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"

static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_warn[256];     /* [last_mu] last warning or diagnostic */
static bool verbose;
static _Atomic unsigned long long diag_bytes;

uint64_t
cv_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

unsigned long long
cv_diag_bytes(void)
{
	return atomic_load(&diag_bytes);
}

/* ------------------------------------------------------------ documents */

static uint8_t *
slurp(const char *path, size_t *ret_len)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
		while (got < (size_t)st.st_size && (n = read(fd, buf + got,
		    (size_t)st.st_size - got)) > 0)
			got += (size_t)n;
		if (got != (size_t)st.st_size) {
			free(buf);
			buf = NULL;
		}
	}
	close(fd);
	*ret_len = got;
	return buf;
}

void
cv_docs_load(const char *dir, struct cv_docs *ret)
{
	char path[PATH_MAX], line[512];
	struct cv_doc *d, *nv;
	FILE *f;

	*ret = (struct cv_docs){ 0 };
	snprintf(path, sizeof(path), "%s/MANIFEST", dir);
	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "sipc-convert: %s: %s (the build writes it: "
		    "make all)\n", path, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if ((nv = realloc(ret->v, (ret->n + 1) * sizeof(*nv))) == NULL)
			exit(2);
		ret->v = nv;
		d = &ret->v[ret->n];
		memset(d, 0, sizeof(*d));
		if (sscanf(line, "%63s %15s %15s %63s", d->name, d->cls,
		    d->expect, d->token) != 4) {
			fprintf(stderr, "sipc-convert: %s: bad line: %s", path,
			    line);
			exit(2);
		}
		snprintf(path, sizeof(path), "%s/%s", dir, d->name);
		if ((d->data = slurp(path, &d->len)) == NULL) {
			fprintf(stderr, "sipc-convert: %s: %s\n", path,
			    strerror(errno ? errno : EIO));
			exit(2);
		}
		ret->n++;
	}
	fclose(f);
}

void
cv_docs_free(struct cv_docs *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].data);
	free(d->v);
	*d = (struct cv_docs){ 0 };
}

/* ------------------------------------------------------------ the pool */

static void
on_log(void *arg, enum sipc_log_level level, uint32_t worker_id,
       uint32_t generation, pid_t pid, const char *msg)
{
	static const char *lv[] = { "error", "warn", "info", "diag" };

	(void)arg;
	if (level == SIPC_LOG_DIAG)
		atomic_fetch_add(&diag_bytes, strlen(msg));
	if (level != SIPC_LOG_INFO) {
		pthread_mutex_lock(&last_mu);
		snprintf(last_warn, sizeof(last_warn), "%s", msg);
		pthread_mutex_unlock(&last_mu);
	}
	if (!verbose)
		return;
	if (worker_id == UINT32_MAX)
		fprintf(stderr, "[sipc %s] %s\n", lv[level & 3], msg);
	else
		fprintf(stderr, "[w%u g%u pid %d %s] %.300s\n", worker_id,
		    generation, (int)pid, lv[level & 3], msg);
}

/* sipc-exec [--limit-as N] --diag-max 16K gs ... {out} {in} */
static void
pool_argv(const struct cv_opts *o, struct cv_pool *p, bool rlimit)
{
	unsigned n = 0;

	p->argv[n++] = (char *)o->exec;
	if (rlimit) {
		p->argv[n++] = "--limit-as";
		p->argv[n++] = CV_MEM_LIMIT;
	}
	p->argv[n++] = "--diag-max";
	p->argv[n++] = "16K";
	p->argv[n++] = (char *)o->gs;
	p->argv[n++] = "-q";
	p->argv[n++] = "-dSAFER";
	p->argv[n++] = "-dBATCH";
	p->argv[n++] = "-dNOPAUSE";
	p->argv[n++] = "-dPDFSTOPONERROR";
	p->argv[n++] = "-sDEVICE=txtwrite";
	p->argv[n++] = "-sstdout=%stderr";
	p->argv[n++] = "-sOutputFile={out}";
	p->argv[n++] = "{in}";
	p->argv[n] = NULL;
}

/* One attempt: provider `prov`, memory by cgroup or not.  0, or the
 * error with `why` filled. */
static int
pool_try(const struct cv_opts *o, struct cv_pool *p, const char *prov,
         bool cgroup, char *why, size_t whylen)
{
	struct sipc_config cfg;
	char err[256] = "";
	int rc;

	pool_argv(o, p, !cgroup);
	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_DEVELOPMENT;
	cfg.provider = prov;
	cfg.path = o->exec;
	cfg.argv = p->argv;
	cfg.env_set = p->env;
	cfg.workers = o->workers;
	cfg.init_path = o->init;
	cfg.cancel_grace_ms = 300;    /* a hung document's tree goes soon */
	cfg.grace_ms = 1000;
	cfg.restart_base_ms = 50;
	cfg.memory_max = cgroup ? CV_MEM_CGROUP : 0;
	cfg.log = on_log;
	pthread_mutex_lock(&last_mu);
	last_warn[0] = '\0';
	pthread_mutex_unlock(&last_mu);
	if ((rc = sipc_create(&cfg, err, sizeof(err), &p->s)) < 0) {
		snprintf(why, whylen, "%s (%s)", err, sipc_strerror(rc));
		return rc;
	}
	if ((rc = sipc_wait_ready(p->s, o->workers, 15000)) < 0) {
		pthread_mutex_lock(&last_mu);
		snprintf(why, whylen, "workers did not start: %s (%.200s)",
		    sipc_strerror(rc), last_warn);
		pthread_mutex_unlock(&last_mu);
		sipc_destroy(p->s);
		p->s = NULL;
		return rc;
	}
	p->provider = prov;
	return 0;
}

void
cv_pool_start(const struct cv_opts *o, struct cv_pool *p)
{
	const char *provs[2] = { "sandbox", "local" };
	unsigned np = 2, i;
	char why[320];

	memset(p, 0, sizeof(*p));
	verbose = o->verbose;
	snprintf(p->marker, sizeof(p->marker), "SIPC_CONVERT_RUN=%d.%llu",
	    (int)getpid(), (unsigned long long)cv_now_us());
	p->env[0] = p->marker;
	if (strcmp(o->provider, "auto") != 0) {
		provs[0] = o->provider;
		np = 1;
	}
	for (i = 0; i < np; i++) {
		if (pool_try(o, p, provs[i], true, why, sizeof(why)) == 0) {
			p->mem = CV_MEM_CG;
			return;
		}
		snprintf(p->why_not_cgroup, sizeof(p->why_not_cgroup), "%s",
		    why);
		if (pool_try(o, p, provs[i], false, why, sizeof(why)) == 0) {
			p->mem = CV_MEM_RLIMIT;
			return;
		}
		if (strcmp(provs[i], "sandbox") == 0)
			snprintf(p->why_not_sandbox,
			    sizeof(p->why_not_sandbox), "%s", why);
	}
	fprintf(stderr, "sipc-convert: no pool could start: %s\n", why);
	exit(2);
}

void
cv_pool_stop(struct cv_pool *p)
{
	sipc_destroy(p->s);
	p->s = NULL;
}

/* ------------------------------------------------------------ judging */

static bool
has(const struct sipc_result *r, const char *needle)
{
	return r->reply != NULL && memmem(r->reply, r->reply_len, needle,
	    strlen(needle)) != NULL;
}

/* Every document token in the text is d's own: nothing of another. */
static bool
only_own_tokens(const struct cv_doc *d, const struct sipc_result *r)
{
	const uint8_t *p = r->reply, *end = r->reply + r->reply_len, *q;
	size_t tl = strlen(d->token);

	while (p < end && (q = memmem(p, (size_t)(end - p), "SIPCDOC-", 8))) {
		if ((size_t)(end - q) < tl || memcmp(q, d->token, tl) != 0)
			return false;
		p = q + tl;
	}
	return true;
}

/* Ended at its deadline: TIMEOUT, or sipc-exec's own answer (code 516,
 * sipc-exec(1)) when it ended the converter and replied first. */
bool
cv_at_deadline(const struct sipc_result *r)
{
	return r->outcome == SIPC_OUTCOME_TIMEOUT ||
	    (r->outcome == SIPC_OUTCOME_WORKER_ERROR &&
	    r->worker_error_code == 516);
}

static bool
judge_memory(const struct sipc_result *r, enum cv_mem mem, char *how,
             size_t len)
{
	switch (mem) {
	case CV_MEM_CG:
		if (r->outcome == SIPC_OUTCOME_UNKNOWN &&
		    r->exit.kind == SIPC_EXIT_OOM) {
			snprintf(how, len, "cgroup memory.max: worker OOM-killed");
			return true;
		}
		if (r->outcome == SIPC_OUTCOME_WORKER_ERROR &&
		    (r->worker_error_code == 256 + 9 || has(r, "VMerror"))) {
			snprintf(how, len, "cgroup memory.max: gs %s",
			    has(r, "VMerror") ? "VMerror" : "OOM-killed");
			return true;
		}
		return false;
	case CV_MEM_RLIMIT:
		snprintf(how, len, "RLIMIT_AS %s: gs %s", CV_MEM_LIMIT,
		    has(r, "VMerror") ? "VMerror, exit 1" : "ended");
		return r->outcome == SIPC_OUTCOME_WORKER_ERROR &&
		    (has(r, "VMerror") || r->worker_error_code > 256);
	default:
		snprintf(how, len, "deadline");
		return cv_at_deadline(r);
	}
}

bool
cv_judge(const struct cv_doc *d, const struct sipc_result *r,
         enum cv_mem mem, char *how, size_t howlen)
{
	char scratch[128];

	if (how == NULL) {
		how = scratch;
		howlen = sizeof(scratch);
	}
	snprintf(how, howlen, "%s", sipc_outcome_name(r->outcome));
	if (strcmp(d->expect, "ok") == 0)
		return r->outcome == SIPC_OUTCOME_OK && has(r, d->token) &&
		    only_own_tokens(d, r);
	if (strcmp(d->expect, "error") == 0) {
		snprintf(how, howlen, "%s, code %u (gs exit status)",
		    sipc_outcome_name(r->outcome), r->worker_error_code);
		return r->outcome == SIPC_OUTCOME_WORKER_ERROR &&
		    r->worker_error_code >= 1 && r->worker_error_code <= 255;
	}
	if (strcmp(d->expect, "timeout") == 0)
		return cv_at_deadline(r);
	if (strcmp(d->expect, "memory") == 0)
		return judge_memory(r, mem, how, howlen);
	return false;
}

/* ------------------------------------------------------------ /proc */

/* Does /proc/PID/environ hold `marker` (NUL-terminated entry)? */
static bool
env_has(const char *pid, const char *marker)
{
	char path[300], buf[65536];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 && memmem(buf, (size_t)n, marker, strlen(marker) + 1);
}

static bool
comm_is(const char *pid, const char *name)
{
	char path[300], buf[64] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return strcmp(buf, name) == 0;
}

int
cv_marked(const char *marker, int *ret_gs)
{
	struct dirent *de;
	int n = 0, gs = 0;
	DIR *d;

	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    !env_has(de->d_name, marker))
			continue;
		n++;
		gs += comm_is(de->d_name, "gs");
	}
	closedir(d);
	if (ret_gs != NULL)
		*ret_gs = gs;
	return n;
}

/* Every thread's children file lists the children it forked. */
int
cv_children(int *ret_zombies)
{
	char path[300], buf[4096], *p, *end;
	struct dirent *de;
	int n = 0, z = 0, fd;
	ssize_t k;
	DIR *d;

	if ((d = opendir("/proc/self/task")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children",
		    de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[k > 0 ? k : 0] = '\0';
		for (p = buf; strtol(p, &end, 10) > 0 && end != p; p = end) {
			char st[300], s[512] = "";
			FILE *f;

			n++;
			snprintf(st, sizeof(st), "/proc/%ld/stat", strtol(p,
			    NULL, 10));
			if ((f = fopen(st, "r")) != NULL) {
				if (fgets(s, sizeof(s), f) != NULL &&
				    strstr(s, ") Z ") != NULL)
					z++;
				fclose(f);
			}
		}
	}
	closedir(d);
	*ret_zombies = z;
	return n;
}
