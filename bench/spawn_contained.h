/*
 * spawn_contained.h - the bare contained start of 256 workers: the
 * local adapter's PID-namespace steps without the library (see
 * raw_spawn_contained.c for what it does and prints).  Header-only
 * (static), shared by raw_spawn_contained.c, which runs it alone, and
 * sipc_bench's spawn_contained section, which alternates its rounds
 * with the library's own so both see the same machine.  Call
 * sc_setup() once, then sc_round() while the process has one thread.
 *
 * Threads: one.  The vfork child runs raw system calls only.
 */
#ifndef SIPC_BENCH_SPAWN_CONTAINED_H
#define SIPC_BENCH_SPAWN_CONTAINED_H

#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "bench.h"

#define NW 256
#define CHILD_STACK (32 * 1024)
#define REPORT_FD 4
/* sipc-init's report (src/init/init_proto.h): kind, value. */
#define INIT_STARTED 1
#define INIT_EXITED 3
/* The HELLO frame: 24-byte header + 16-byte payload (src/wire/wire.h). */
#define HELLO_BYTES 40
#define FRAME_MAGIC 0x43504953u
#define FT_HELLO 1

extern char **environ;

struct init_msg {
	uint32_t kind;
	int32_t value;
};

struct wk {
	int sv[2], dp[2], rp[2], devnull;
	int cgfd, cgprocs, pidfd;
	pid_t pid;
	char cg[32];
	uint64_t t_clone0, t_clone1, t_started, t_hello;
	/* the vfork child's steps (`same` only): entered, in its cgroup,
	 * /proc mounted, about to execve */
	volatile uint64_t t_c[4];
};

static const char *init_path, *worker_path;
static char **child_env;
static char cg_parent[4096];    /* "" without a cgroup */
static int cg_parent_fd = -1;

/* ------------------------------------------------------------ cgroup */

/* Our cgroup v2 directory: the cgroup2 mount + the "0::" path.  Only a
 * mount whose root is "/" is understood here (the library handles
 * more); 0 or -1 with why. */
static int
cg_own_dir(char *ret, size_t len, char *why, size_t wl)
{
	char line[8192], own[1024] = "", mnt[1024] = "";
	char *f[32], *save, *tok;
	FILE *fp;
	size_t n, i;

	if ((fp = fopen("/proc/self/cgroup", "re")) == NULL)
		return snprintf(why, wl, "/proc/self/cgroup unreadable"), -1;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(own, sizeof(own), "%.1000s", line + 3);
		}
	fclose(fp);
	if (own[0] == '\0')
		return snprintf(why, wl, "no cgroup v2 (no 0:: line)"), -1;
	if ((fp = fopen("/proc/self/mountinfo", "re")) == NULL)
		return snprintf(why, wl, "mountinfo unreadable"), -1;
	while (mnt[0] == '\0' && fgets(line, sizeof(line), fp) != NULL) {
		n = 0;
		for (tok = strtok_r(line, " \n", &save); tok && n < 32;
		    tok = strtok_r(NULL, " \n", &save))
			f[n++] = tok;
		for (i = 6; i + 1 < n; i++)
			if (strcmp(f[i], "-") == 0) {
				if (strcmp(f[i + 1], "cgroup2") == 0 &&
				    strcmp(f[3], "/") == 0)
					snprintf(mnt, sizeof(mnt), "%s", f[4]);
				break;
			}
	}
	fclose(fp);
	if (mnt[0] == '\0')
		return snprintf(why, wl, "no cgroup2 mount"), -1;
	snprintf(ret, len, "%s%s", mnt, strcmp(own, "/") ? own : "");
	return 0;
}

/* The parent cgroup of this run, as the library's supervisor cgroup. */
static void
cg_parent_make(unsigned round)
{
	char dir[2048], why[128];

	cg_parent[0] = '\0';
	if (cg_own_dir(dir, sizeof(dir), why, sizeof(why)) < 0)
		return;
	snprintf(cg_parent, sizeof(cg_parent), "%s/rawspawn.%d.%u", dir,
	    (int)getpid(), round);
	if (mkdir(cg_parent, 0755) < 0 || (cg_parent_fd = open(cg_parent,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		(void)rmdir(cg_parent);
		cg_parent[0] = '\0';
	}
}

/* Empty (cgroup.kill) and remove a leaf; bounded wait for it to empty. */
static void
cg_leaf_remove(struct wk *w)
{
	int fd, k;

	if (w->cgfd < 0)
		return;
	if ((fd = openat(w->cgfd, "cgroup.kill", O_WRONLY | O_CLOEXEC)) >= 0) {
		(void)write(fd, "1", 1);
		close(fd);
	}
	for (k = 0; k < 2000 && unlinkat(cg_parent_fd, w->cg, AT_REMOVEDIR) < 0
	    && errno == EBUSY; k++)
		bench_sleep_ms(1);
	close(w->cgfd);
	w->cgfd = -1;
}

/* ------------------------------------------------------ the vfork child */

struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* The vfork child runs on our memory with a stack of its own, as the
 * library's does (clone.c), but not under a sanitizer, whose runtime
 * does not expect a second task on the same memory (clone.c's
 * SIPC__SHARED_VM): there it is a clone3 vfork with memory of its own,
 * and its step times stay ours to miss (sc_round reports none). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SC_SHARED_VM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SC_SHARED_VM 0
#endif
#endif
#ifndef SC_SHARED_VM
#define SC_SHARED_VM 1
#endif
/* And no instrumentation in its functions. */
#if defined(__clang__)
#define SC_CHILD __attribute__((noinline, \
	no_sanitize("address", "thread", "undefined")))
#else
#define SC_CHILD __attribute__((noinline, no_sanitize_address, \
	no_sanitize_thread, no_sanitize_undefined))
#endif

/* The clock by system call: the child shares our memory and TLS. */
static SC_CHILD uint64_t
child_now(void)
{
	struct timespec ts;

	(void)syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static SC_CHILD __attribute__((noreturn)) void
child_die(void)
{
	(void)syscall(SYS_exit_group, 127);
	for (;;)
		;
}

/* The library's child steps (clone.c: child_side), raw system calls. */
static SC_CHILD int
child_main(void *arg)
{
	struct wk *w = arg;
	struct ksigaction dfl = { .handler = SIG_DFL };
	int fds[5] = { w->devnull, w->dp[1], w->dp[1], w->sv[1], w->rp[1] };
	char *argv[] = { (char *)init_path, (char *)worker_path,
	    (char *)worker_path, NULL };
	uint64_t none = 0;
	int i;

	w->t_c[0] = child_now();
	if (w->cgprocs >= 0 && syscall(SYS_write, w->cgprocs, "0", 1) != 1)
		child_die();
	w->t_c[1] = child_now();
	if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_die();
	if (syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
		(void)syscall(SYS_mount, "proc", "/proc", "proc",
		    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	w->t_c[2] = child_now();
	if (syscall(SYS_setpgid, 0, 0) < 0)
		child_die();
	for (i = 1; i < 65; i++)
		if (i != SIGKILL && i != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, i, &dfl, NULL, 8);
	for (i = 0; i < 5; i++)
		if (syscall(SYS_dup3, fds[i], i, 0) < 0)
			child_die();
	if (syscall(SYS_close_range, 5, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_die();
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
	w->t_c[3] = child_now();
	(void)syscall(SYS_execve, init_path, argv, child_env);
	child_die();
}

/* ------------------------------------------- the noexec way's PID 1 */

/* sipc-init's duties in the cloned copy itself: /proc, the worker
 * (vfork + exec), STARTED, then reap everything until the worker ended
 * (EXITED with its status) or the supervisor hung up. */
static __attribute__((noreturn)) void
noexec_init(struct wk *w)
{
	char *argv[] = { (char *)worker_path, NULL };
	struct init_msg m = { INIT_STARTED, 0 };
	struct pollfd p[2];
	sigset_t chld;
	pid_t wpid, r;
	int st, sfd;

	/* It reaps with waitpid(-1) below: only as PID 1 of its own PID
	 * namespace, where every process it could reap is its own. */
	if (getpid() != 1)
		_exit(127);
	/* A copy holds every descriptor the caller had: only the
	 * worker's and the report socket stay (0-4, as sipc-init has them). */
	if (dup2(w->devnull, 0) < 0 || dup2(w->dp[1], 1) < 0 ||
	    dup2(w->dp[1], 2) < 0 || dup2(w->sv[1], 3) < 0 ||
	    dup2(w->rp[1], REPORT_FD) < 0 ||
	    syscall(SYS_close_range, REPORT_FD + 1, ~0U, 0) < 0)
		_exit(127);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
		(void)mount("proc", "/proc", "proc",
		    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	(void)setpgid(0, 0);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	if ((sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		_exit(127);
	if ((wpid = vfork()) == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		if (syscall(SYS_close_range, REPORT_FD, ~0U,
		    CLOSE_RANGE_CLOEXEC) < 0)
			_exit(127);
		execve(worker_path, argv, child_env);
		_exit(127);
	}
	if (wpid < 0)
		_exit(127);
	m.value = wpid;
	(void)bench_write_all(REPORT_FD, &m, sizeof(m));
	close(3);
	close(1);
	close(2);
	p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = REPORT_FD, .events = POLLIN };
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			_exit(127);
		if (p[1].revents & (POLLHUP | POLLERR | POLLIN))
			_exit(1);
		while ((r = waitpid(-1, &st, WNOHANG)) > 0)
			if (r == wpid) {
				m = (struct init_msg){ INIT_EXITED, st };
				(void)bench_write_all(REPORT_FD, &m, sizeof(m));
				_exit(0);
			}
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof(si)) > 0)
			;
	}
}

/* --------------------------------------------------------- the parent */

static int
wk_prepare(struct wk *w, unsigned i)
{
	memset(w, 0, sizeof(*w));
	w->sv[0] = w->sv[1] = w->dp[0] = w->dp[1] = w->rp[0] = w->rp[1] = -1;
	w->devnull = w->cgfd = w->cgprocs = w->pidfd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, w->sv) < 0 ||
	    pipe2(w->dp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, w->rp) < 0 ||
	    (w->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (cg_parent[0] != '\0') {
		snprintf(w->cg, sizeof(w->cg), "w%u.g1", i);
		if (mkdirat(cg_parent_fd, w->cg, 0755) < 0 ||
		    (w->cgfd = openat(cg_parent_fd, w->cg, O_RDONLY |
		    O_DIRECTORY | O_CLOEXEC)) < 0)
			return -1;
	}
	return 0;
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The child's ends go once it has them (as os/worker_end.c does). */
static void
wk_close_child(struct wk *w)
{
	close_fd(&w->sv[1]);
	close_fd(&w->dp[1]);
	close_fd(&w->rp[1]);
	close_fd(&w->devnull);
	close_fd(&w->cgprocs);
}

static int
wk_clone_same(struct wk *w, char *stack)
{
	sigset_t all, old;
	long pid;

	if (w->cgfd >= 0 && (w->cgprocs = openat(w->cgfd, "cgroup.procs",
	    O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
#if SC_SHARED_VM
	pid = clone(child_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK |
	    CLONE_PIDFD | CLONE_NEWPID | CLONE_NEWNS, w, &w->pidfd);
#else
	struct clone_args ca;

	(void)stack;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_VFORK | CLONE_PIDFD | CLONE_NEWPID | CLONE_NEWNS;
	ca.pidfd = (uint64_t)(uintptr_t)&w->pidfd;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		(void)child_main(w);
#endif
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -1;
	w->pid = (pid_t)pid;
	return 0;
}

static int
wk_clone_noexec(struct wk *w)
{
	struct clone_args ca;
	long pid;

	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD | CLONE_NEWPID | CLONE_NEWNS;
	if (w->cgfd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)w->cgfd;
	}
	ca.pidfd = (uint64_t)(uintptr_t)&w->pidfd;
	ca.exit_signal = 0;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		noexec_init(w);
	if (pid < 0)
		return -1;
	w->pid = (pid_t)pid;
	return 0;
}

/* One HELLO off the protocol socket: 1 when it is one, 0 not yet, -1. */
static int
read_hello(int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cb;
	uint8_t b[HELLO_BYTES];
	struct iovec iov = { .iov_base = b, .iov_len = sizeof(b) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf) };
	struct cmsghdr *c;
	uint32_t magic;
	ssize_t n;
	int passed;

	n = recvmsg(fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	if (n != (ssize_t)sizeof(b))
		return -1;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			memcpy(&passed, CMSG_DATA(c), sizeof(passed));
			close(passed);  /* the start counter's memfd */
		}
	magic = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	    (uint32_t)b[3] << 24;
	return magic == FRAME_MAGIC && b[5] == FT_HELLO ? 1 : -1;
}

static double
rusage_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Figures of a round; step[]: means over the workers (us, so they add
 * up to the mean clone call) of the
 * clone call's parts (`same`): clone to the child's first step, the
 * cgroup move, parent-death signal and the /proc mount, the rest of the
 * hygiene, and execve of sipc-init until the caller goes on. */
#define NSTEP 5
struct fig {
	double ready, cpu, clone_us, clones_done, started_last;
	double step[NSTEP];
};

static void
teardown(struct wk *w, unsigned n)
{
	siginfo_t si;

	for (unsigned i = 0; i < n; i++) {
		close_fd(&w[i].sv[0]);
		if (w[i].pidfd >= 0) {
			(void)syscall(SYS_pidfd_send_signal, w[i].pidfd,
			    SIGKILL, NULL, 0);
			(void)waitid(P_PIDFD, (id_t)w[i].pidfd, &si,
			    WEXITED | __WALL);
		}
		cg_leaf_remove(&w[i]);
		close_fd(&w[i].pidfd);
		close_fd(&w[i].dp[0]);
		close_fd(&w[i].rp[0]);
		wk_close_child(&w[i]);
	}
	if (cg_parent[0] != '\0') {
		close_fd(&cg_parent_fd);
		(void)rmdir(cg_parent);
	}
}

/* One round of 256 at once; 0 and the figures, or -1 and why (-2: this
 * machine refuses the first clone, no PID namespace may be made). */
static int
sc_round(bool noexec, unsigned round, struct fig *f, char *why, size_t wl)
{
	static struct wk w[NW];
	static _Alignas(16) char stack[CHILD_STACK];
	struct epoll_event ev, evs[64];
	uint64_t t0, last_clone = 0, last_started = 0, last_hello = 0;
	uint64_t d[NW];
	double cpu0;
	unsigned i, n = 0, ready = 0, started = 0;
	int ep, k, r, rc = -1;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return snprintf(why, wl, "epoll: %s", strerror(errno)), -1;
	cpu0 = rusage_us();
	t0 = bench_now_ns();
	cg_parent_make(round);
	for (i = 0; i < NW; i++) {
		if (wk_prepare(&w[n], i) < 0) {
			snprintf(why, wl, "worker %u: setup: %s", i,
			    strerror(errno));
			n++;
			goto out;
		}
		n++;
		w[i].t_clone0 = bench_now_ns();
		r = noexec ? wk_clone_noexec(&w[i]) : wk_clone_same(&w[i],
		    stack);
		w[i].t_clone1 = bench_now_ns();
		if (r < 0) {
			int e = errno;

			snprintf(why, wl, "worker %u: clone: %s", i, strerror(e));
			/* the first clone refused: no PID namespace here */
			if (i == 0 && (e == EPERM || e == EINVAL || e == ENOSPC ||
			    e == EUSERS || e == ENOSYS))
				rc = -2;
			goto out;
		}
		wk_close_child(&w[i]);
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t)i << 1;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, w[i].rp[0], &ev) < 0)
			goto out;
		ev.data.u64 = (uint64_t)i << 1 | 1;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, w[i].sv[0], &ev) < 0)
			goto out;
	}
	last_clone = bench_now_ns();
	while (ready < NW || started < NW) {
		if ((k = epoll_wait(ep, evs, 64, 10000)) <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			snprintf(why, wl, "%u of %u ready, %u started after 10 s",
			    ready, NW, started);
			goto out;
		}
		for (int j = 0; j < k; j++) {
			struct wk *x = &w[evs[j].data.u64 >> 1];
			struct init_msg m;

			if (evs[j].data.u64 & 1) {
				if (read_hello(x->sv[0]) != 1) {
					snprintf(why, wl, "a worker's HELLO "
					    "missing or wrong");
					goto out;
				}
				x->t_hello = last_hello = bench_now_ns();
				ready++;
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, x->sv[0], NULL);
			} else {
				if (read(x->rp[0], &m, sizeof(m)) != sizeof(m) ||
				    m.kind != INIT_STARTED) {
					snprintf(why, wl, "sipc-init's report "
					    "missing or not STARTED");
					goto out;
				}
				x->t_started = last_started = bench_now_ns();
				started++;
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, x->rp[0], NULL);
			}
		}
	}
	f->ready = bench_secs(t0, last_hello) * 1e3;
	f->cpu = (rusage_us() - cpu0) / NW;
	for (i = 0; i < NW; i++)
		d[i] = w[i].t_clone1 - w[i].t_clone0;
	f->clone_us = 0;
	for (i = 0; i < NW; i++)
		f->clone_us += (double)d[i] / NW / 1e3;
	f->clones_done = bench_secs(t0, last_clone) * 1e3;
	f->started_last = bench_secs(t0, last_started) * 1e3;
	for (int s = 0; s < NSTEP && !noexec && SC_SHARED_VM; s++) {
		for (i = 0; i < NW; i++) {
			uint64_t a = s == 0 ? w[i].t_clone0 : w[i].t_c[s - 1];
			uint64_t b = s == NSTEP - 1 ? w[i].t_clone1 : w[i].t_c[s];
			d[i] = b > a ? b - a : 0;
		}
		double sum = 0;
		for (i = 0; i < NW; i++)
			sum += (double)d[i];
		f->step[s] = sum / NW / 1e3;
	}
	rc = 0;
out:
	close(ep);
	teardown(w, n);
	return rc;
}


/* The programs, the workers' environment (ours and SIPC_PARENT_PID=1,
 * as the library's namespace launch gives them) and the descriptor
 * limit 256 workers need (about 1,300 here).  0 or -1. */
static int
sc_setup(const char *init, const char *worker)
{
	static char ppid[] = "SIPC_PARENT_PID=1";
	struct rlimit rl;
	size_t n = 0, i;

	init_path = init;
	worker_path = worker;
	while (environ[n] != NULL)
		n++;
	if ((child_env = calloc(n + 2, sizeof(*child_env))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		child_env[i] = environ[i];
	child_env[n] = ppid;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	bench_ignore_sigpipe();
	return 0;
}

#endif /* SIPC_BENCH_SPAWN_CONTAINED_H */
