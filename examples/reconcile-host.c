/*
 * reconcile-host.c - what a host does after it crashed: a supervisor in
 * a child process journals requests in a state directory and is killed
 * with SIGKILL while they are in flight; the next supervisor on that
 * directory lists what was left unresolved, says what can be proven of
 * each, and resolves them.
 *
 *   cc reconcile-host.c $(pkg-config --cflags --libs sipc)
 *   ./reconcile-host
 *
 * The program is its own worker (run with --worker): a worker that takes
 * every request and never answers, so requests are certain to be in
 * flight when the supervisor dies.  With max_inflight 2, two requests
 * are written to the worker (MAY_HAVE_RUN: the host must decide by their
 * idempotency keys) and the rest wait in the queue (NEVER_SENT: safe to
 * submit again).  Exits 0 when exactly that is listed and resolved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sipc.h>
#include <sipc_worker.h>

#define NREQ 5
#define INFLIGHT 2

/* ------------------------------------------------------------ worker */

static void
hold(sipc_worker *w, uint64_t id, const uint8_t *p, size_t n, void *arg)
{
	(void)w; (void)id; (void)p; (void)n; (void)arg;  /* never answers */
}

static int
worker_main(void)
{
	sipc_worker *w;
	int rc;

	if (sipc_worker_open(&w) != 0)
		return 1;
	rc = sipc_worker_run(w, hold, NULL);
	sipc_worker_close(w);
	return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------- hosts */

static char self[4096];
static char *worker_argv[] = { "reconcile-host", "--worker", NULL };

static int
start(const char *dir, sipc_supervisor **ret)
{
	struct sipc_config cfg;
	sipc_config_store *store = NULL;
	char err[256];
	int rc;

	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_DEVELOPMENT;
	cfg.path = self;
	cfg.argv = worker_argv;
	cfg.workers = 1;
	cfg.max_inflight = INFLIGHT;
	cfg.grace_ms = 200;
	cfg.drain_ms = 0;
	cfg.state_dir = dir;                    /* journal + reconcile */
	cfg.durability = SIPC_DURABLE_EACH;     /* fdatasync every record */
	/* Deployment settings from SIPC_* variables (SIPC_WORKERS,
	 * SIPC_INIT_PATH, ...) override the code's; they may only tighten
	 * the environment.  sipc_create() copies what the store holds. */
	if ((rc = sipc_config_load_env(NULL, &cfg, &store, err,
	    sizeof(err))) != 0) {
		fprintf(stderr, "sipc_config_load_env: %s\n", err);
		return rc;
	}
	rc = sipc_create(&cfg, err, sizeof(err), ret);
	sipc_config_store_free(store);
	if (rc != 0)
		fprintf(stderr, "sipc_create: %s: %s\n", sipc_strerror(rc), err);
	else if ((rc = sipc_wait_ready(*ret, 1, 10000)) != 0)
		fprintf(stderr, "sipc_wait_ready: %s\n", sipc_strerror(rc));
	return rc;
}

static void
ignore(void *arg, struct sipc_result *res)
{
	(void)arg;
	sipc_result_release(res);
}

/* The first host: submit, wait until the requests are journalled and
 * two are written to the worker, tell the parent, wait to be killed. */
static void __attribute__((noreturn))
doomed_host(const char *dir, int fd)
{
	struct sipc_stats st;
	sipc_supervisor *s;
	char key[32];
	int i, tries;

	if (start(dir, &s) != 0)
		_exit(1);
	for (i = 0; i < NREQ; i++) {
		struct sipc_request req = { 0 };

		snprintf(key, sizeof(key), "order-%d", i + 1);
		req.payload = key;
		req.len = strlen(key);
		req.idempotency_key = key;      /* journalled with the request */
		if (sipc_submit(s, &req, ignore, NULL, NULL) != 0)
			_exit(1);
	}
	for (tries = 0; tries < 1000; tries++) {   /* up to 10 s */
		bool there = false;

		if (sipc_stats_get(s, &st) == 0) {
			there = st.nworkers == 1 &&
			    st.workers[0].inflight == INFLIGHT &&
			    st.pending == NREQ;
			sipc_stats_release(&st);
		}
		if (there) {
			(void)!write(fd, "R", 1);
			for (;;)
				pause();
		}
		usleep(10000);
	}
	_exit(1);
}

static const char *
state_name(enum sipc_unresolved_state s)
{
	switch (s) {
	case SIPC_UNRESOLVED_NEVER_SENT: return "never sent: resubmit it";
	case SIPC_UNRESOLVED_MAY_HAVE_RUN: return "may have run: check by key";
	case SIPC_UNRESOLVED_COMPLETED: return "completed before the crash";
	}
	return "?";
}

/* The next host on the same directory: list, decide, resolve. */
static int
reconcile(const char *dir)
{
	struct sipc_unresolved *u = NULL;
	size_t n = 0, i, never = 0, maybe = 0, left = 1;
	sipc_supervisor *s;

	if (start(dir, &s) != 0)
		return 1;
	if (sipc_reconcile_list(s, &u, &n) != 0) {
		sipc_destroy(s);
		return 1;
	}
	printf("%zu unresolved requests from the killed instance:\n", n);
	for (i = 0; i < n; i++) {
		printf("  %-8s %zu bytes: %s\n", u[i].key,
		    (size_t)u[i].payload_len, state_name(u[i].state));
		never += u[i].state == SIPC_UNRESOLVED_NEVER_SENT;
		maybe += u[i].state == SIPC_UNRESOLVED_MAY_HAVE_RUN;
		/* A real host resubmits or checks here, then: */
		if (sipc_reconcile_resolve(s, &u[i]) != 0)
			printf("  %s: could not resolve\n", u[i].key);
	}
	sipc_reconcile_free(u);
	if (sipc_reconcile_list(s, &u, &left) == 0)
		sipc_reconcile_free(u);
	printf("after resolving: %zu left\n", left);
	sipc_destroy(s);
	return never == NREQ - INFLIGHT && maybe == INFLIGHT && left == 0 ?
	    0 : 1;
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb; (void)flag; (void)f;
	return remove(path);
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/tmp/sipc-reconcile-example-XXXXXX", dir[64];
	struct pollfd pfd;
	int p[2], st, rc = 1;
	pid_t pid;
	char c;

	if (argc == 2 && strcmp(argv[1], "--worker") == 0)
		return worker_main();
	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0 ||
	    mkdtemp(tmpl) == NULL || pipe(p) != 0) {
		perror("reconcile-host");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/state", tmpl);

	/* Fork before this process starts any thread. */
	if ((pid = fork()) == 0) {
		close(p[0]);
		doomed_host(dir, p[1]);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	if (pid > 0 && poll(&pfd, 1, 30000) == 1 && read(p[0], &c, 1) == 1) {
		kill(pid, SIGKILL);             /* the crash */
		waitpid(pid, &st, 0);
		printf("supervisor %d killed by signal %d with requests in "
		    "flight\n", (int)pid, WTERMSIG(st));
		rc = reconcile(dir);
	} else {
		fprintf(stderr, "reconcile-host: first host did not start\n");
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	close(p[0]);
	nftw(tmpl, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return rc;
}
