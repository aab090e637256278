/*
 * drill.c - the crash-and-restart drill of docs/RUNBOOK.md: the
 * controller, and the entry point of the drill binary's three modes.
 *
 *   drill [--cycles N] [--fixture PATH] [--dir DIR] [--seed S]
 *         [--load-ms MS] [--rate R] [--keep]
 *   drill gen ...      one supervisor process (gen.c), started by us
 *   drill probe ...    the lock probe (gen.c), started by us
 *
 * Each cycle starts a supervisor process (a generation) on one state
 * directory, waits until it has reconciled and carries load, SIGKILLs
 * one of its workers, then SIGKILLs the supervisor itself.  A final
 * generation reconciles the last crash, runs load (one worker killed),
 * drains and shuts down cleanly.  Then: leftover processes (any process
 * carrying this run's environment tag), and the tally (ledger.c).
 *
 * The controller is single-threaded and a child subreaper, so workers
 * orphaned by a killed generation are reparented to it and reaped here.
 * Fixed pauses are the point of a drill (kills land mid-load); every
 * wait for an event has a deadline instead.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drill.h"
#include "../lib/lineread.h"
#include "../lib/rmtree.h"

struct ctl {
	unsigned cycles, load_ms, rate;
	const char *fixture;
	char dir[PATH_MAX], state[PATH_MAX + 8], ledger[PATH_MAX + 8];
	char exec_log[PATH_MAX + 16], tag[128];
	unsigned long long rng;
	bool keep;
};

static unsigned
rnd(struct ctl *c, unsigned n)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return (unsigned)(c->rng % n);
}

static void
pause_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------ /proc scans */

/* Does /proc/<pid>/environ carry `tag` ("NAME=value")? */
static bool
has_tag(const char *pid, const char *tag)
{
	char path[64], buf[16384];
	size_t n, off, tl = strlen(tag);
	int fd;
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = 0;
	while (n < sizeof(buf) - 1 &&
	    (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	for (off = 0; off < n; off += strlen(buf + off) + 1)
		if (strncmp(buf + off, tag, tl) == 0 && buf[off + tl] == '\0')
			return true;
	return false;
}

/* State and parent of a process; false when gone. */
static bool
proc_stat(const char *pid, char *state, pid_t *ppid)
{
	char path[64], buf[1024], *p;
	int ppid_i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (p == NULL || (p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2, "%c %d", state, &ppid_i) != 2)
		return false;
	*ppid = ppid_i;
	return true;
}

/*
 * Live (non-zombie) processes carrying this run's tag; with parent > 0
 * only that parent's children.  Up to `max` pids go to `out`.
 */
static unsigned
tagged(const struct ctl *c, pid_t parent, pid_t *out, unsigned max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned n = 0;
	pid_t ppid;
	char st;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (!proc_stat(e->d_name, &st, &ppid) || st == 'Z')
			continue;
		if (parent > 0 && ppid != parent)
			continue;
		if (atoi(e->d_name) == getpid() || !has_tag(e->d_name, c->tag))
			continue;
		if (n < max)
			out[n] = atoi(e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/* Reap whatever was reparented to us; call only when no generation or
 * probe of ours is running (it would take their status too). */
static void
reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* ------------------------------------------------------ generations */

struct genproc {
	pid_t pid;
	int status_fd;
};

static void
spawn_gen(struct ctl *c, unsigned gen, bool final, struct genproc *g)
{
	char sgen[16], swork[16], srate[16], sfinal[16], sfd[16];
	int p[2], fd;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("drill: pipe");
		exit(1);
	}
	snprintf(sgen, sizeof(sgen), "%u", gen);
	snprintf(swork, sizeof(swork), "%u", 2 + (gen - 1) % 3);
	snprintf(srate, sizeof(srate), "%u", c->rate);
	snprintf(sfinal, sizeof(sfinal), "%u", final ? c->load_ms : 0);
	if ((pid = fork()) < 0) {
		perror("drill: fork");
		exit(1);
	}
	if (pid == 0) {
		/* An inheritable copy of the write end for the status. */
		if ((fd = fcntl(p[1], F_DUPFD, 10)) < 0)
			_exit(127);
		snprintf(sfd, sizeof(sfd), "%d", fd);
		execl("/proc/self/exe", "drill", "gen", "--state", c->state,
		    "--ledger", c->ledger, "--exec-log", c->exec_log,
		    "--fixture", c->fixture, "--tag", c->tag, "--gen", sgen,
		    "--workers", final ? "2" : swork, "--rate", srate,
		    "--final-ms", sfinal, "--status-fd", sfd, "--durability",
		    final || gen % 2 == 1 ? "each" : "group", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	g->pid = pid;
	g->status_fd = p[0];
}

/* One status line from a generation, or false after `timeout_ms`. */
static bool
gen_line(struct genproc *g, char *buf, size_t len, int timeout_ms)
{
	return lr_read_line(g->status_fd, buf, len, timeout_ms);
}

static int
gen_wait(struct genproc *g)
{
	int st = 0;

	while (waitpid(g->pid, &st, 0) < 0 && errno == EINTR)
		;
	close(g->status_fd);
	return st;
}

static bool
kill_one_worker(struct ctl *c, pid_t gen)
{
	pid_t w[64];
	unsigned n = tagged(c, gen, w, 64);

	if (n == 0)
		return false;
	return kill(w[rnd(c, n < 64 ? n : 64)], SIGKILL) == 0;
}

static int
lock_probe(struct ctl *c, pid_t holder)
{
	char sh[16];
	pid_t pid;
	int st;

	snprintf(sh, sizeof(sh), "%d", (int)holder);
	if ((pid = fork()) == 0) {
		execl("/proc/self/exe", "drill", "probe", c->state, c->fixture,
		    sh, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* One crash cycle.  Returns false when the generation never got ready. */
static bool
crash_cycle(struct ctl *c, unsigned gen, struct drill_run *run)
{
	struct genproc g;
	char line[256];
	pid_t left[8];
	unsigned before;
	int st;

	spawn_gen(c, gen, false, &g);
	if (!gen_line(&g, line, sizeof(line), 30000) ||
	    strncmp(line, "ready anomalies 0 lost 0", 24) != 0) {
		fprintf(stderr, "drill: generation %u: not ready (%s)\n", gen,
		    line);
		kill(g.pid, SIGKILL);
		gen_wait(&g);
		return false;
	}
	if (gen == 1)
		run->lock_probe = lock_probe(c, g.pid);
	before = c->load_ms / 4 + rnd(c, c->load_ms / 2 + 1);
	pause_ms(before);
	run->worker_kills += kill_one_worker(c, g.pid);
	pause_ms(c->load_ms - before);
	kill(g.pid, SIGKILL);
	st = gen_wait(&g);
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		run->supervisor_kills++;
	/* What the kill left running, before any next instance acts. */
	run->leftovers_seen += tagged(c, 0, left, 8);
	reap_orphans();
	return true;
}

/* The last generation: reconcile, load, one worker kill, clean stop. */
static bool
final_run(struct ctl *c, unsigned gen, struct drill_run *run)
{
	unsigned base, fds, unres;
	unsigned long long anom;
	struct genproc g;
	char line[256];
	int st;
	bool ok;

	spawn_gen(c, gen, true, &g);
	if (!gen_line(&g, line, sizeof(line), 30000) ||
	    strncmp(line, "ready anomalies 0 lost 0", 24) != 0) {
		fprintf(stderr, "drill: final generation: not ready (%s)\n",
		    line);
		kill(g.pid, SIGKILL);
		gen_wait(&g);
		return false;
	}
	pause_ms(c->load_ms / 2);
	run->worker_kills += kill_one_worker(c, g.pid);
	ok = gen_line(&g, line, sizeof(line), 120000) &&
	    sscanf(line, "final fds %u %u unresolved %u anomalies %llu",
	    &base, &fds, &unres, &anom) == 4;
	if (!ok)
		kill(g.pid, SIGKILL);
	st = gen_wait(&g);
	run->final_status = ok && anom == 0 && WIFEXITED(st) ?
	    WEXITSTATUS(st) : 1;
	if (ok) {
		run->fds_baseline = (int)base;
		run->fds_final = (int)fds;
		run->unresolved_after = (int)unres;
	}
	return ok;
}

/* Wait (bounded) for every tagged process to be gone. */
static int
final_leftovers(struct ctl *c)
{
	int64_t end = lr_now_ms() + 10000;
	pid_t left[16];
	unsigned n, i;

	for (;;) {
		reap_orphans();
		n = tagged(c, 0, left, 16);
		if (n == 0 || lr_now_ms() >= end)
			break;
		pause_ms(20);
	}
	for (i = 0; i < n && i < 16; i++)
		fprintf(stderr, "drill: leftover process %d\n", (int)left[i]);
	return (int)n;
}

bool
drill_sandboxed(void)
{
	const char *p = getenv("SIPC_TEST_PROVIDER");

	return p != NULL && *p != '\0' && strcmp(p, "local") != 0;
}

/* ------------------------------------------------------------ main */

static void
usage(void)
{
	fprintf(stderr, "usage: drill [--cycles N] [--fixture PATH] "
	    "[--dir DIR] [--seed S] [--load-ms MS] [--rate R] [--keep]\n");
	exit(2);
}

static void
parse(struct ctl *c, int argc, char **argv)
{
	const char *dir = NULL;
	int i;

	c->cycles = 5;
	c->load_ms = 800;
	c->rate = 2000;
	c->fixture = "build/fixtures/echo";
	c->rng = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--keep") == 0) {
			c->keep = true;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--cycles") == 0)
			c->cycles = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--fixture") == 0)
			c->fixture = argv[++i];
		else if (strcmp(argv[i], "--dir") == 0)
			dir = argv[++i];
		else if (strcmp(argv[i], "--seed") == 0)
			c->rng = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--load-ms") == 0)
			c->load_ms = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--rate") == 0)
			c->rate = (unsigned)atoi(argv[++i]);
		else
			usage();
	}
	if (c->cycles < 1 || c->cycles > 1000 || c->load_ms < 100 ||
	    c->rate < 1 || c->rng == 0)
		usage();
	if (dir != NULL) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			perror(dir);
			exit(1);
		}
		snprintf(c->dir, sizeof(c->dir), "%s", dir);
	} else {
		snprintf(c->dir, sizeof(c->dir), "/tmp/sipc-drill-XXXXXX");
		if (mkdtemp(c->dir) == NULL) {
			perror("mkdtemp");
			exit(1);
		}
	}
}

static int
controller(int argc, char **argv)
{
	struct drill_run run = { .lock_probe = -1, .final_status = 1,
	    .fds_baseline = -1, .fds_final = -2, .unresolved_after = -1 };
	char fix[PATH_MAX];
	struct ctl c = { 0 };
	unsigned i;
	bool ok = true;

	parse(&c, argc, argv);
	if (realpath(c.fixture, fix) == NULL || access(fix, X_OK) < 0) {
		fprintf(stderr, "drill: fixture %s: %s\n", c.fixture,
		    strerror(errno));
		return 2;
	}
	c.fixture = fix;
	run.seed = c.rng;
	run.cycles = c.cycles;
	snprintf(c.state, sizeof(c.state), "%s/state", c.dir);
	snprintf(c.ledger, sizeof(c.ledger), "%s/ledger", c.dir);
	snprintf(c.exec_log, sizeof(c.exec_log), "%s/exec.log", c.dir);
	snprintf(c.tag, sizeof(c.tag), "SIPC_DRILL_RUN=%d.%llu", (int)getpid(),
	    c.rng);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	fprintf(stderr, "drill: %u cycles, load %u ms at %u req/s, dir %s\n",
	    c.cycles, c.load_ms, c.rate, c.dir);
	for (i = 1; i <= c.cycles && ok; i++)
		ok = crash_cycle(&c, i, &run);
	if (ok)
		ok = final_run(&c, c.cycles + 1, &run);
	run.leftovers_final = final_leftovers(&c);
	ok = drill_tally(c.ledger, drill_sandboxed() ? NULL : c.exec_log,
	    &run) && ok;
	if (ok && !c.keep) {
		if (rmtree(c.dir) != 0)
			fprintf(stderr, "drill: could not remove %s\n", c.dir);
	} else {
		fprintf(stderr, "drill: kept %s (ledger, exec.log, state/)\n",
		    c.dir);
	}
	return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "gen") == 0)
		return drill_gen_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "probe") == 0)
		return drill_probe_main(argc - 1, argv + 1);
	return controller(argc, argv);
}
