/*
 * sipctest.c - see sipctest.h.
 *
 * Threads: st_log_fn() and st_outbox_done() run on library threads; the
 * capture's lock guards the log buffer and a box's mu guards its counts
 * and results.  Everything else runs on the CUnit thread.
 */
#include "sipctest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------ log capture */

static struct {
	pthread_mutex_t mu;
	char buf[32768];
	size_t len;
} logcap = { .mu = PTHREAD_MUTEX_INITIALIZER };

void
st_log_fn(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
          pid_t pid, const char *msg)
{
	size_t n = strlen(msg);

	pthread_mutex_lock(&logcap.mu);
	if (logcap.len + n + 2 < sizeof(logcap.buf)) {
		memcpy(logcap.buf + logcap.len, msg, n);
		logcap.len += n;
		logcap.buf[logcap.len++] = '\n';
		logcap.buf[logcap.len] = '\0';
	}
	pthread_mutex_unlock(&logcap.mu);
}

void
st_log_reset(void)
{
	pthread_mutex_lock(&logcap.mu);
	logcap.len = 0;
	logcap.buf[0] = '\0';
	pthread_mutex_unlock(&logcap.mu);
}

bool
st_log_has(const char *needle)
{
	bool r;

	pthread_mutex_lock(&logcap.mu);
	r = strstr(logcap.buf, needle) != NULL;
	pthread_mutex_unlock(&logcap.mu);
	return r;
}

void
st_log_print(void)
{
	pthread_mutex_lock(&logcap.mu);
	fprintf(stderr, "--- captured log:\n%s---\n", logcap.buf);
	pthread_mutex_unlock(&logcap.mu);
}

bool
st_log_has_cb(void *arg)
{
	return st_log_has(arg);
}

/* ------------------------------------------------------- configuration */

/* Fixture paths are copied once: tl_fixture() reuses one buffer that any
 * later call (a copy of a fixture, say) overwrites. */
static char fxpath[PATH_MAX];

const char *
st_provider(void)
{
	const char *p = getenv("SIPC_TEST_PROVIDER");

	return p != NULL && *p != '\0' ? p : "local";
}

bool
st_sandboxed(void)
{
	return strcmp(st_provider(), "local") != 0;
}

bool
st_skip_sandboxed(const char *why)
{
	char msg[256];

	if (!st_sandboxed())
		return false;
	snprintf(msg, sizeof(msg), "local-only under provider %s: %s",
	    st_provider(), why);
	tl_skip(msg);
	return true;
}

void
st_cfg_init(struct sipc_config *c, const char *fixture, char *const *argv,
            unsigned workers)
{
	snprintf(fxpath, sizeof(fxpath), "%s", tl_fixture(fixture));
	sipc_config_init(c);
	c->environment = SIPC_ENV_TEST;
	c->provider = st_provider();
	c->path = fxpath;
	c->argv = argv;
	c->workers = workers;
	c->init_path = tl_init_path();
}

const char *const st_env_accept_frames[] = {
	"SIPC_FX_ACCEPT=frames", NULL
};

void
st_cfg_base(struct sipc_config *c, const char *fixture, char *const *argv,
            unsigned workers)
{
	st_cfg_init(c, fixture, argv, workers);
	c->grace_ms = 300;
	c->drain_ms = 300;
	c->handshake_ms = 3000;
	c->cancel_grace_ms = 200;
	c->restart_base_ms = 20;
	c->restart_cap_ms = 200;
	c->log = st_log_fn;
}

sipc_supervisor *
st_start(const struct sipc_config *c, unsigned ready, int wait_ms)
{
	sipc_supervisor *s = NULL;
	char err[256];
	int rc;

	st_log_reset();
	rc = sipc_create(c, err, sizeof(err), &s);
	if (rc != 0)
		fprintf(stderr, "sipc_create: %s: %s\n", sipc_strerror(rc), err);
	CU_ASSERT_FATAL(rc == 0);
	if (ready > 0 && (rc = sipc_wait_ready(s, ready, wait_ms)) != 0) {
		/* Destroyed before the test is left: nothing it started
		 * outlives it (the runner also ends an abandoned test's
		 * process). */
		fprintf(stderr, "sipc_wait_ready(%u, %d ms): %s\n", ready,
		    wait_ms, sipc_strerror(rc));
		sipc_destroy(s);
		CU_FAIL_FATAL("workers not ready");
	}
	return s;
}

/* ------------------------------------------------------------ requests */

/* "\0CMD" then the command text; returns the payload length. */
static size_t
cmd_payload(char *p, size_t size, const char *cmd)
{
	memcpy(p, "\0CMD", 4);
	return 4 + (size_t)snprintf(p + 4, size - 4, "%s", cmd);
}

void
st_call_cmd(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
            unsigned flags, struct sipc_result *r)
{
	char p[256];
	size_t len;

	if (cmd == NULL)
		len = (size_t)snprintf(p, sizeof(p), "data");
	else
		len = cmd_payload(p, sizeof(p), cmd);
	struct sipc_request rq = { .payload = p, .len = len,
	    .timeout_ms = timeout_ms, .flags = flags };
	CU_ASSERT_FATAL(sipc_call(s, &rq, r) == 0);
}

void
st_outbox_done(void *arg, struct sipc_result *res)
{
	struct st_outslot *o = arg;

	pthread_mutex_lock(&o->box->mu);
	if (o->box->calls[o->i]++ == 0)
		o->box->res[o->i] = *res;
	else
		sipc_result_release(res);
	o->box->total++;
	pthread_mutex_unlock(&o->box->mu);
}

void
st_outbox_release(struct st_outbox *b)
{
	for (unsigned i = 0; i < ST_OUTBOX_MAX; i++)
		if (b->calls[i] > 0)
			sipc_result_release(&b->res[i]);
}

void
st_outbox_reset(struct st_outbox *b)
{
	memset(b->calls, 0, sizeof(b->calls));
	memset(b->res, 0, sizeof(b->res));
	b->total = 0;
}

unsigned
st_outbox_total(struct st_outbox *b)
{
	unsigned n;

	pthread_mutex_lock(&b->mu);
	n = b->total;
	pthread_mutex_unlock(&b->mu);
	return n;
}

struct box_wait { struct st_outbox *b; unsigned n; };

static bool
box_cond(void *arg)
{
	struct box_wait *w = arg;

	return st_outbox_total(w->b) >= w->n;
}

bool
st_outbox_wait(struct st_outbox *b, unsigned n, int ms)
{
	struct box_wait w = { b, n };

	return tl_wait_until(box_cond, &w, ms);
}

void
st_submit_cmd(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
              struct st_outslot *o)
{
	char p[256];
	size_t len = cmd_payload(p, sizeof(p), cmd);
	struct sipc_request rq = { .payload = p, .len = len,
	    .timeout_ms = timeout_ms };

	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, o, NULL) == 0);
}

uint64_t
st_submit_cmd_opts(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
                   unsigned flags, unsigned queue_ms, struct st_outslot *o)
{
	char p[256];
	size_t len = cmd_payload(p, sizeof(p), cmd);
	struct sipc_request rq = { .payload = p, .len = len,
	    .timeout_ms = timeout_ms, .flags = flags,
	    .queue_timeout_ms = queue_ms };
	uint64_t id = 0;

	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, o, &id) == 0);
	return id;
}

/* ------------------------------------------------------------ stats */

struct stat_wait { sipc_supervisor *s; st_stat_pred fn; void *arg; };

static bool
stat_cond(void *arg)
{
	struct stat_wait *w = arg;
	struct sipc_stats st;
	bool r;

	if (sipc_stats_get(w->s, &st) != 0)
		return false;
	r = w->fn(&st, w->arg);
	sipc_stats_release(&st);
	return r;
}

bool
st_stats_wait(sipc_supervisor *s, st_stat_pred fn, void *arg, int ms)
{
	struct stat_wait w = { s, fn, arg };

	return tl_wait_until(stat_cond, &w, ms);
}

struct sipc_worker_stats
st_worker_stats(sipc_supervisor *s, unsigned i)
{
	struct sipc_worker_stats w;
	struct sipc_stats st;

	memset(&w, 0, sizeof(w));
	if (sipc_stats_get(s, &st) == 0) {
		if (i < st.nworkers)
			w = st.workers[i];
		sipc_stats_release(&st);
	}
	return w;
}

struct sipc_stats
st_pool_stats(sipc_supervisor *s)
{
	struct sipc_stats st;

	if (sipc_stats_get(s, &st) == 0)
		sipc_stats_release(&st);
	else
		memset(&st, 0, sizeof(st));
	return st;
}

bool
st_pred_exit_kind(const struct sipc_stats *st, void *arg)
{
	struct st_exit_want *w = arg;

	return st->workers[w->slot].last_exit.kind == w->kind;
}

bool
st_pred_term(const struct sipc_stats *st, void *arg)
{
	struct st_term_want *w = arg;

	return st->workers[0].last_exit.kind == w->kind &&
	    st->workers[0].last_exit.reason == w->reason;
}

bool
st_pred_gen_ready(const struct sipc_stats *st, void *arg)
{
	struct st_gen_want *w = arg;

	return st->workers[w->slot].generation >= w->gen &&
	    st->workers[w->slot].state == SIPC_WS_READY;
}

bool
st_pred_respawned(const struct sipc_stats *st, void *arg)
{
	struct st_gen_want w = { 0, 2 };

	return st_pred_gen_ready(st, &w);
}

/* ------------------------------------------------------------ processes */

int
st_proc_stat(pid_t pid, char *ret_state, pid_t *ret_ppid, pid_t *ret_pgrp)
{
	char path[64], buf[512], *p, state;
	int ppid, pgrp;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* the command name may hold spaces and parentheses: skip to the
	 * last ')' */
	if (p == NULL || (p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2, "%c %d %d", &state, &ppid, &pgrp) != 3)
		return -1;
	if (ret_state != NULL)
		*ret_state = state;
	if (ret_ppid != NULL)
		*ret_ppid = ppid;
	if (ret_pgrp != NULL)
		*ret_pgrp = pgrp;
	return 0;
}

pid_t
st_read_kid(int fd, int ms)
{
	char buf[64];
	int kid = 0;

	if (!tl_read_line(fd, buf, sizeof(buf), ms) ||
	    sscanf(buf, "kid=%d", &kid) != 1)
		return -1;
	return kid;
}

bool
st_pid_dead(void *arg)
{
	return !tl_pid_alive(*(pid_t *)arg);
}

bool
st_pid_gone(void *arg)
{
	return kill(*(pid_t *)arg, 0) < 0 && errno == ESRCH;
}

bool
st_pid_zombie(void *arg)
{
	char s = '?';

	(void)st_proc_stat(*(pid_t *)arg, &s, NULL, NULL);
	return s == 'Z';
}

bool
st_no_zombie_children(void *arg)
{
	return tl_count_zombie_children() == 0;
}

/* The spawned child has run its setsid(): it leads a session. */
static bool
in_own_session(void *arg)
{
	pid_t p = *(pid_t *)arg;

	return getsid(p) == p;
}

void
st_decoys_start(struct st_decoys *d)
{
	char *const argv[] = { "sleep", "120", NULL };
	posix_spawnattr_t attr;

	CU_ASSERT_FATAL(posix_spawnp(&d->same_group, "sleep", NULL, NULL,
	    argv, environ) == 0);
	CU_ASSERT_FATAL(posix_spawnattr_init(&attr) == 0);
	CU_ASSERT_FATAL(posix_spawnattr_setflags(&attr,
	    POSIX_SPAWN_SETPGROUP) == 0);
	CU_ASSERT_FATAL(posix_spawnattr_setpgroup(&attr, 0) == 0);
	CU_ASSERT_FATAL(posix_spawnp(&d->own_group, "sleep", NULL, &attr,
	    argv, environ) == 0);
	CU_ASSERT_FATAL(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID) ==
	    0);
	CU_ASSERT_FATAL(posix_spawnp(&d->own_session, "sleep", NULL, &attr,
	    argv, environ) == 0);
	posix_spawnattr_destroy(&attr);
	CU_ASSERT_EQUAL(getpgid(d->same_group), getpgrp());
	CU_ASSERT_EQUAL(getpgid(d->own_group), d->own_group);
	CU_ASSERT(tl_wait_until(in_own_session, &d->own_session, 10000));
}

/* Alive, and not even stopped: no signal at all reached them. */
void
st_decoys_check(const struct st_decoys *d)
{
	int st;

	CU_ASSERT(tl_pid_alive(d->same_group));
	CU_ASSERT(tl_pid_alive(d->own_group));
	CU_ASSERT(tl_pid_alive(d->own_session));
	CU_ASSERT_EQUAL(waitpid(d->same_group, &st, WNOHANG), 0);
	CU_ASSERT_EQUAL(waitpid(d->own_group, &st, WNOHANG), 0);
	CU_ASSERT_EQUAL(waitpid(d->own_session, &st, WNOHANG), 0);
}

void
st_decoys_stop(struct st_decoys *d)
{
	int st;

	st_decoys_check(d);
	CU_ASSERT(kill(d->same_group, SIGKILL) == 0);
	CU_ASSERT(kill(d->own_group, SIGKILL) == 0);
	CU_ASSERT(kill(d->own_session, SIGKILL) == 0);
	CU_ASSERT_EQUAL(waitpid(d->same_group, &st, 0), d->same_group);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CU_ASSERT_EQUAL(waitpid(d->own_group, &st, 0), d->own_group);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CU_ASSERT_EQUAL(waitpid(d->own_session, &st, 0), d->own_session);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

struct st_base
st_baseline(void)
{
	/* threads first: waiting for the last test's to end */
	int threads = tl_settled_threads(10000);
	struct st_base b = { tl_count_fds(), threads,
	    tl_count_children(), st_status_kb("VmRSS:") };

	return b;
}

void
st_check_nothing_left(const struct st_base *b, int ms)
{
	CU_ASSERT(tl_wait_baseline(b->fds, b->threads, b->children, ms));
	CU_ASSERT(tl_count_zombie_children() == 0);
}

long
st_status_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0) {
			v = strtol(line + strlen(key), NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

void
st_no_core_files(void)
{
	struct rlimit rl = { 0, 0 };

	(void)getrlimit(RLIMIT_CORE, &rl);
	rl.rlim_cur = 0;
	(void)setrlimit(RLIMIT_CORE, &rl);
}

int
st_copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	if ((in = open(from, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0755)) < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -EIO;
			break;
		}
	if (n < 0)
		rc = -errno;
	close(in);
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int
st_can_unshare(int flags)
{
	pid_t pid;
	int st;

	fflush(NULL);
	if ((pid = fork()) < 0)
		return -errno;
	if (pid == 0)
		_exit(unshare(flags) < 0 ? (errno & 0xff) : 0);
	if (waitpid(pid, &st, 0) != pid)
		return -ECHILD;
	if (!WIFEXITED(st))
		return -EINTR;
	return -WEXITSTATUS(st);
}

bool
st_skip_no_pidns(void)
{
	char msg[160];
	int rc = st_can_unshare(CLONE_NEWPID | CLONE_NEWNS);

	if (rc == 0)
		return false;
	snprintf(msg, sizeof(msg), "cannot create a PID and mount namespace "
	    "here (%s; needs CAP_SYS_ADMIN)", strerror(-rc));
	tl_skip(msg);
	return true;
}

void
st_unblock_sigchld(void)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGCHLD);
	pthread_sigmask(SIG_UNBLOCK, &m, NULL);
}

pid_t
st_reader_pid(pid_t pid)
{
	char path[64];
	long child = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%ld", &child) != 1)
			child = 0;
		fclose(f);
	}
	return child > 0 ? (pid_t)child : pid;
}

bool
st_pred_one_inflight(const struct sipc_stats *st, void *arg)
{
	return st->nworkers == 1 && st->workers[0].inflight == 1;
}

bool
st_pred_settled(const struct sipc_stats *st, void *arg)
{
	return st->pending == 0 && st->mem_held == 0;
}
