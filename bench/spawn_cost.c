/*
 * spawn_cost - what starting a worker costs, per way of starting it:
 * from the spawn call until the child has exec'd, then until it is
 * reaped, for a worker that exits at once (/bin/true by default).
 *
 *   posix_spawn      the previous local adapter: posix_spawn with the
 *                    same hygiene (group, mask, dispositions, closefrom),
 *                    then pidfd_open
 *   clone3           clone.c: clone3 + pidfd, exit_signal 0, raw child
 *   local_<mode>     the local adapter's launch in each containment mode
 *                    (the namespace modes start sipc-init, which starts
 *                    the worker and reports), then its end and release
 *   local_<mode>_cgroup  the same with the adapter's cgroup state, as a
 *                    supervisor with cgroup = auto has it: a leaf cgroup
 *                    per launch (mkdir), the child placed in it before it
 *                    runs (CLONE_INTO_CGROUP, or the vfork child writing
 *                    cgroup.procs), and at the end cgroup.kill, the wait
 *                    for it to empty and rmdir; no cgroup v2 writable
 *                    here: a note saying why
 *
 * Usage: spawn_cost [--quick] INIT_PATH [N [WORKER]]
 * Prints, per way, "metric spawn_cost_<way>_p50 <us> us" (median), _p90
 * and _n (runs that worked), way = posix_spawn, clone3,
 * local_<mode>, local_<mode>_cgroup; a way that never worked here is a
 * "note ... unavailable" line instead.  N defaults to 200 (30 with --quick or BENCH_QUICK=1).
 * Part of `make bench` (bench/run.sh); single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "os/os.h"
#include "provider/provider.h"

static char *worker = "/bin/true";
static const char *init_path;

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void
report(const char *name, int64_t *v, int n, int runs)
{
	char m[96];

	if (n == 0) {
		printf("note spawn_cost %s unavailable here (%d runs failed)\n",
		    name, runs);
		fflush(stdout);
		return;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp64);
	snprintf(m, sizeof(m), "spawn_cost_%s_p50", name);
	bench_metric(m, (double)v[n / 2], "us");
	snprintf(m, sizeof(m), "spawn_cost_%s_p90", name);
	bench_metric(m, (double)v[n * 9 / 10], "us");
	snprintf(m, sizeof(m), "spawn_cost_%s_n", name);
	bench_metric(m, (double)n, "runs");
}

static int64_t
one_posix_spawn(void)
{
	char *const argv[] = { worker, NULL }, *const envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int64_t t0;
	pid_t pid;
	int fd, st;

	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	t0 = now_us();
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	if (posix_spawn(&pid, worker, &fa, &attr, argv, envp) != 0)
		return -1;
	fd = pidfd_open(pid, 0);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	(void)waitpid(pid, &st, 0);
	close(fd);
	return now_us() - t0;
}

static int64_t
one_clone3(void)
{
	char *const argv[] = { worker, NULL }, *const envp[] = { NULL };
	struct sipc__spawn sp = { .path = worker, .argv = argv, .envp = envp,
	    .flags = SIPC__SPAWN_SETPGRP, .fds = { -1, -1, -1, -1, -1 } };
	int64_t t0 = now_us();
	int pidfd, eno = 0, devnull;
	pid_t pid;

	devnull = sipc__fd_high(open("/dev/null", O_RDONLY | O_CLOEXEC));
	sp.fds[0] = devnull;
	if (sipc__spawn(&sp, &pid, &pidfd, &eno) < 0)
		return -1;
	(void)sipc__pidfd_reap(pidfd);
	close(pidfd);
	close(devnull);
	return now_us() - t0;
}

static enum sipc_containment cur_mode;
static void *cur_state;          /* the adapter's cgroup state, or NULL */
static uint32_t cur_gen;         /* a fresh leaf per launch */

static void run(const char *name, int64_t (*fn)(void), int n);

static int64_t
one_local(void)
{
	char *const argv[] = { worker, NULL }, *const envp[] = { NULL };
	struct sipc_provider_launch l = { .path = worker, .argv = argv, .envp = envp,
	    .contain = cur_mode, .init_path = init_path,
	    .generation = ++cur_gen };
	struct sipc_provider_chan ch;
	struct sipc_exit e;
	struct pollfd pf;
	int64_t t0 = now_us();
	void *h;
	int eno = 0;

	memset(&ch, 0, sizeof(ch));
	if (sipc__provider_local.launch(cur_state, &l, &ch, &h, &eno) < 0)
		return -1;
	/* A cgroup case whose worker got none would price the wrong way. */
	if (cur_state != NULL && !ch.info.cgroup)
		t0 = -1;
	pf = (struct pollfd){ .fd = ch.end_fd,
	    .events = POLLIN };
	while (sipc__provider_local.try_end(h, &e) == 0)
		(void)poll(&pf, 1, 100);
	sipc__provider_local.release(h);       /* sweep: the cgroup too */
	close(ch.proto_fd);
	close(ch.diag_fd);
	return t0 < 0 ? -1 : now_us() - t0;
}

/* The local adapter's state with its supervisor cgroup, as
 * sipc_create() makes it for cgroup = auto; NULL and why when there is
 * no cgroup v2 to make leaves in here. */
static void *
cgroup_state(char *why, size_t len)
{
	struct sipc_provider_info in;
	struct sipc_config cfg;
	void *st = NULL;

	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_TEST;
	cfg.cgroup = SIPC_CGROUP_AUTO;
	if (sipc__provider_local.create(&cfg, &st, why, len) < 0)
		return NULL;
	memset(&in, 0, sizeof(in));
	sipc__provider_local.info(st, &in);
	snprintf(why, len, "%s", in.text);   /* its path, or why none */
	if (!in.cgroup) {
		sipc__provider_local.destroy(st);
		return NULL;
	}
	return st;
}

static void
run_modes(const char *suffix, int n)
{
	static const enum sipc_containment modes[] = {
		SIPC_CONTAIN_PROCESS_GROUP, SIPC_CONTAIN_PID_NAMESPACE,
		SIPC_CONTAIN_USER_NAMESPACE };
	char name[64];

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		cur_mode = modes[i];
		snprintf(name, sizeof(name), "local_%s%s",
		    sipc_containment_name(modes[i]), suffix);
		run(name, one_local, n);
	}
}

static void
run(const char *name, int64_t (*fn)(void), int n)
{
	int64_t *v = calloc((size_t)n, sizeof(*v)), t;
	int k = 0;

	for (int i = 0; v != NULL && i < n; i++)
		if ((t = fn()) >= 0)
			v[k++] = t;
	report(name, v, k, n);
	free(v);
}

int
main(int argc, char **argv)
{
	int quick = bench_quick(argc, argv), a = 1 + (argc > 1 &&
	    strcmp(argv[1], "--quick") == 0), n;
	char why[256] = "";

	if (argc - a < 1 || (n = argc - a > 1 ? atoi(argv[a + 1]) :
	    quick ? 30 : 200) <= 0) {
		fprintf(stderr, "usage: spawn_cost [--quick] INIT_PATH "
		    "[N [WORKER]]\n");
		return 2;
	}
	init_path = argv[a];
	if (argc - a > 2)
		worker = argv[a + 2];
	printf("note spawn_cost: spawn until reaped, worker %s, %d runs a "
	    "way, init %s\n", worker, n, init_path);
	run("posix_spawn", one_posix_spawn, n);
	run("clone3", one_clone3, n);
	run_modes("", n);
	if ((cur_state = cgroup_state(why, sizeof(why))) == NULL) {
		printf("note spawn_cost local_<mode>_cgroup unavailable here "
		    "(no cgroup v2 to make a leaf in: %s)\n", why);
		return 0;
	}
	printf("note spawn_cost cgroup: a leaf per launch below %s\n", why);
	run_modes("_cgroup", n);
	sipc__provider_local.destroy(cur_state);
	return 0;
}
