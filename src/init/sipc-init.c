/*
 * sipc-init - PID 1 of one worker's PID namespace.
 *
 * Usage (by the library only): sipc-init WORKER_PATH ARGV0 [ARGS...]
 * or sipc-init --check-syscalls NAME,NAME... (prints "ok", or "unknown
 * NAME" for the first name its libseccomp does not know; the sandbox
 * checks its configuration's names so at sipc_create())
 * with the worker's environment, descriptors 0-3 as the worker gets
 * them (/dev/null, diagnostics twice, protocol channel) and descriptor 4
 * the report socket to the supervisor (init_proto.h).
 *
 * What it does, and why each matters:
 *   - has a /proc of its own namespace (it runs in a mount namespace
 *     of its own), so the worker sees no host process: the supervisor's
 *     child mounts it before executing us (in a user namespace that maps
 *     the caller's uid we have no capability after exec); if that did
 *     not happen we try, and report a refusal on stderr;
 *   - starts the worker with the same hygiene the library applies
 *     (signal mask and dispositions reset, only 0-3 open, parent-death
 *     signal armed and re-checked: getppid() is 1 here in every case);
 *   - reaps every orphan of the namespace (as PID 1 it adopts them all),
 *     so nothing stays a zombie;
 *   - passes TERM (and INT, HUP, QUIT, USR1, USR2) on to every process of
 *     the namespace, so a graceful stop reaches the whole tree,
 *     setsid() escapees included;
 *   - under the sandbox, sets no_new_privs itself, installs the
 *     filesystem rules it was given (SIPC__INIT_LL_RO/RW, landlock.c),
 *     then sets the worker's resource limits (SIPC__INIT_LIMITS,
 *     limits.c) and, SIPC__INIT_FILTER set, drops every capability of its process, sets its core
 *     limit to 0/0 and installs the system-call filter (filter.c) just
 *     before execve, refusing to start the worker if any of it fails;
 *     sipc-init itself stays unfiltered and keeps what it needs to reap
 *     and signal;
 *   - holds the filter's listener: a refused call is reported with its
 *     number and name (SIPC__INIT_POLICY) and the whole tree is killed
 *     (SIGKILL, which no worker can catch); in audit mode it is logged
 *     on stderr and runs;
 *   - reports the worker's exact wait status (code, signal, core dump),
 *     then exits: the kernel then kills whatever is left in the namespace
 *     and the supervisor sees one exit, with the tree already gone;
 *   - dies with the supervisor: a parent-death SIGKILL armed before
 *     exec (by the library) and the report socket's hang-up.
 *
 * Why a signal handler is installed though signals are read from a
 * signalfd: the kernel drops a signal sent to a namespace's PID 1 unless
 * PID 1 has a handler for it.  The handler never runs (the signals stay
 * blocked); it only makes the signals deliverable.
 *
 * Single-threaded.  Writes nothing to stdout; its own errors go to
 * stderr, which is the worker's diagnostics pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_filter.h"
#include "init/init_proto.h"

extern char **environ;

static const int passed_on[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
    SIGUSR2 };
#define NPASSED (sizeof(passed_on) / sizeof(passed_on[0]))

static void
noop(int sig)
{
	(void)sig;
}

static void
report_named(int kind, int value, const char *name)
{
	struct sipc__init_msg m = { (uint32_t)kind, value, "" };
	ssize_t n;

	if (name != NULL)
		snprintf(m.name, sizeof(m.name), "%s", name);
	do
		n = write(SIPC__INIT_REPORT_FD, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
}

static void
report(int kind, int value)
{
	report_named(kind, value, NULL);
}

/* Is /proc already the one of our PID namespace (mounted by the
 * supervisor's child side before it executed us)?  There we are PID 1. */
static int
proc_is_ours(void)
{
	char buf[16];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strcmp(buf, "1") == 0;
}

/* Has the supervisor gone (its end of the report socket closed)? */
static int
supervisor_gone(int timeout_ms)
{
	struct pollfd p = { .fd = SIPC__INIT_REPORT_FD, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	return (p.revents & (POLLHUP | POLLERR | POLLIN | POLLNVAL)) != 0;
}

static int filtered;     /* SIPC__INIT_FILTER was set: filter the worker */
static char *ll_ro, *ll_rw; /* SIPC__INIT_LL_*: Landlock rules (NULL: none) */
static int audit;        /* SIPC__INIT_AUDIT: log refused calls, let them run */
static char *refuse, *allow, *limits;   /* the other SIPC__INIT_* values */
static int policy_reported;

/* The filter's listener to sipc-init, over the start socket. */
static int
send_fd(int sock, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cb;
	int zero = 0;
	struct iovec iov = { .iov_base = &zero, .iov_len = sizeof(zero) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* Limits, privileges, then the filter, whose listener goes to
 * sipc-init: the worker keeps no copy of it.  Without a listener (the
 * host's filter holds the one allowed) a bare 0 says the filter is in. */
static int
confine(int sock)
{
	int rc, nfd = -1, zero = 0;

	if ((rc = sipc__init_limits(limits)) < 0 ||
	    (rc = sipc__init_drop_privileges()) < 0 ||
	    (rc = sipc__init_filter(refuse, allow, audit, &nfd)) < 0)
		return rc;
	if (nfd < 0)
		return send(sock, &zero, sizeof(zero), MSG_NOSIGNAL) < 0 ?
		    -errno : 0;
	rc = send_fd(sock, nfd);
	close(nfd);
	return rc;
}

static void __attribute__((noreturn))
worker_side(char **argv, int errw, const sigset_t *none)
{
	struct sigaction dfl;
	int err;
	size_t i;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (i = 0; i < NPASSED; i++)
		(void)sigaction(passed_on[i], &dfl, NULL);
	(void)sigaction(SIGCHLD, &dfl, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != 1) {
		err = errno != 0 ? errno : ESRCH;
		goto fail;
	}
	/* 0-3 stay; the report socket and anything else go at execve
	 * (errw stays open until then). */
	(void)syscall(SYS_close_range, SIPC__INIT_REPORT_FD, ~0U,
	    CLOSE_RANGE_CLOEXEC);
	/* Last before execve, so nothing of ours runs confined: no_new_privs
	 * set here, not left to bwrap or libseccomp, then the filesystem
	 * rules, limits, capabilities, core limit and filter; any of them
	 * that cannot be had stops the start (fail closed). */
	if (filtered && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		err = errno;
		goto fail;
	}
	if (ll_ro != NULL && (err = -sipc__init_landlock(ll_ro, ll_rw)) != 0)
		goto fail;
	if (filtered && (err = -confine(errw)) != 0)
		goto fail;
	if (!filtered && (err = -sipc__init_limits(limits)) != 0)
		goto fail;
	(void)sigprocmask(SIG_SETMASK, none, NULL);
	execve(argv[0], argv + 1, environ);
	err = errno;
fail:
	if (write(errw, &err, sizeof(err)) < 0)
		_exit(126);
	_exit(127);
}

/* One message of the worker's side: its errno (0 with the filter's
 * listener), or 0 bytes at its execve. */
static ssize_t
start_msg(int sock, int *ret_err, int *ret_nfd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cb;
	struct iovec iov = { .iov_base = ret_err, .iov_len = sizeof(*ret_err) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf) };
	struct cmsghdr *c;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c != NULL;
	    c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int))) {
			if (*ret_nfd >= 0)
				close(*ret_nfd);
			memcpy(ret_nfd, CMSG_DATA(c), sizeof(int));
		}
	return n;
}

/* Fork and exec the worker.  Returns its pid, or -1 after reporting;
 * *ret_nfd is the filter's listener (-1 unfiltered, or filtered without
 * one). */
static pid_t
start_worker(char **argv, const sigset_t *none, int *ret_nfd)
{
	int ep[2], err = 0;
	bool confined = false;
	ssize_t n;
	pid_t pid;

	*ret_nfd = -1;
	/* A socket, not a pipe: the listener travels on it. */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ep) < 0) {
		report(SIPC__INIT_EXEC_FAILED, errno);
		return -1;
	}
	if ((pid = fork()) < 0) {
		report(SIPC__INIT_EXEC_FAILED, errno);
		return -1;
	}
	if (pid == 0)
		worker_side(argv, ep[1], none);
	close(ep[1]);
	while ((n = start_msg(ep[0], &err, ret_nfd)) == (ssize_t)sizeof(err) &&
	    err == 0)
		confined = true;
	close(ep[0]);
	if (n == (ssize_t)sizeof(err) || (filtered && !confined)) {
		if (err == 0)
			err = EPROTO;   /* filtered, but it never said so */
		if (*ret_nfd >= 0)
			close(*ret_nfd);
		*ret_nfd = -1;
		(void)waitpid(pid, NULL, 0);
		report(SIPC__INIT_EXEC_FAILED, err);
		return -1;
	}
	/* The channel is the worker's alone: a worker that closes it must
	 * be seen to have closed it. */
	close(3);
	report(SIPC__INIT_STARTED, (int)pid);
	return pid;
}

/* A refused call.  Enforced: report it (the first one only) and kill
 * every process of the namespace but us; the call never returns.  Audit:
 * log it and let it run.  A notification whose target already died
 * cannot be received (ENOENT) and is dropped. */
static void
on_refused(int nfd)
{
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	char *name;

	if (seccomp_notify_alloc(&req, &resp) < 0)
		return;
	if (seccomp_notify_receive(nfd, req) < 0)
		goto out;
	name = seccomp_syscall_resolve_num_arch(req->data.arch, req->data.nr);
	if (audit) {
		fprintf(stderr, "sipc-init: audit: system call %s (%d) by pid %d "
		    "would be refused; it runs\n", name != NULL ? name : "?",
		    req->data.nr, (int)req->pid);
		resp->id = req->id;
		resp->error = 0;
		resp->val = 0;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		(void)seccomp_notify_respond(nfd, resp);
	} else if (!policy_reported) {
		policy_reported = 1;
		report_named(SIPC__INIT_POLICY, req->data.nr, name);
		(void)kill(-1, SIGKILL);
	}
	free(name);
out:
	seccomp_notify_free(req, resp);
}

/* RLIMIT_CPU with soft = hard ends a process with SIGKILL, not SIGXCPU
 * (the kernel checks the hard limit first): a worker killed when its
 * CPU time (with its reaped children's, all wait4 tells) came near its
 * limit reached the limit: wait4's times are tick samples scaled to the
 * run time and fall short of what the kernel's check counted (measured
 * 0.82 s for a kill at 1 s), so half the limit is taken as reaching it.
 * Other SIGKILLs are told apart elsewhere: the supervisor's forced stop
 * kills us (no report at all), ours after a refused call is reported
 * first, the OOM killer's is read from the cgroup.  cpu is its limit as
 * read just before the reap (a lower one it set itself counts too). */
static void
note_cpu_limit(int st, const struct rusage *ru, rlim_t cpu)
{
	double used = (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	    (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;

	if (!filtered || policy_reported || cpu == RLIM_INFINITY ||
	    !WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL || used < (double)cpu / 2)
		return;
	report(SIPC__INIT_LIMIT, RLIMIT_CPU);
}

/* Reap every child that has ended; 1 when the worker was among them. */
static int
reap_all(pid_t worker, int *ret_status)
{
	struct rlimit cpu = { RLIM_INFINITY, RLIM_INFINITY };
	struct rusage ru;
	int st, found = 0;
	pid_t p;

	/* A zombie still has its limits; once reaped it has none. */
	if (filtered && prlimit(worker, RLIMIT_CPU, NULL, &cpu) < 0)
		cpu.rlim_max = sipc__init_cpu_limit(limits);
	while ((p = wait4(-1, &st, WNOHANG, &ru)) > 0)
		if (p == worker) {
			*ret_status = st;
			found = 1;
			note_cpu_limit(st, &ru, cpu.rlim_max);
		}
	/* SIGSYS under the filter with no notification: the call of a
	 * foreign architecture (the kernel gives no number there). */
	if (found && filtered && !policy_reported && WIFSIGNALED(*ret_status) &&
	    WTERMSIG(*ret_status) == SIGSYS) {
		policy_reported = 1;
		report_named(SIPC__INIT_POLICY, -1, NULL);
	}
	return found;
}

/* The check mode: nothing but name lookups, before anything else. */
static int
check_syscalls(const char *list)
{
	char name[64];
	const char *p = list, *c;
	size_t n;

	for (; p != NULL && *p != '\0'; p = c != NULL ? c + 1 : NULL) {
		c = strchr(p, ',');
		n = c != NULL ? (size_t)(c - p) : strlen(p);
		snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), p);
		if (n == 0 || n > 63 || seccomp_syscall_resolve_name(name) < 0) {
			printf("unknown %s\n", name);
			return 1;
		}
	}
	printf("ok\n");
	return 0;
}

/* The value of name, copied, and name dropped from the environment. */
static char *
take_env(const char *name)
{
	const char *v = getenv(name);
	char *c = v != NULL ? strdup(v) : NULL;

	(void)unsetenv(name);
	return c;
}

int
main(int argc, char **argv)
{
	struct signalfd_siginfo si;
	struct sigaction sa;
	sigset_t all, none;
	struct pollfd pf[3];
	int sfd, nfd, status = 0;
	size_t i;
	pid_t worker;

	if (argc == 3 && strcmp(argv[1], "--check-syscalls") == 0)
		return check_syscalls(argv[2]);
	if (argc < 3) {
		fprintf(stderr, "sipc-init: started by hand?  It is run by "
		    "the sipc library only.\n");
		return 127;
	}
	/* kill(-1) and waitpid(-1) below are safe only because this is PID 1
	 * of a namespace of its own: there they reach the worker's tree and
	 * nothing else.  Anywhere else they would reach every process this
	 * user may signal, so refuse to run at all. */
	if (getpid() != 1) {
		fprintf(stderr, "sipc-init: not PID 1 of a new PID namespace; "
		    "refusing to run\n");
		return 127;
	}
	/* Under the sandbox: bubblewrap's PWD=/ is not the launch's. */
	if (getenv(SIPC__INIT_NO_PWD) != NULL) {
		(void)unsetenv(SIPC__INIT_NO_PWD);
		(void)unsetenv("PWD");
	}
	if (getenv(SIPC__INIT_FILTER) != NULL) {
		(void)unsetenv(SIPC__INIT_FILTER);
		filtered = 1;
		audit = getenv(SIPC__INIT_AUDIT) != NULL;
		refuse = take_env(SIPC__INIT_REFUSE);
		allow = take_env(SIPC__INIT_ALLOW);
	}
	/* the limits hold with or without the filter */
	limits = take_env(SIPC__INIT_LIMITS);
	/* copies: unsetenv() may free what getenv() returned */
	if (getenv(SIPC__INIT_LL_RO) != NULL) {
		ll_ro = strdup(getenv(SIPC__INIT_LL_RO));
		ll_rw = strdup(getenv(SIPC__INIT_LL_RW) ? getenv(SIPC__INIT_LL_RW) :
		    "");
		(void)unsetenv(SIPC__INIT_LL_RO);
		(void)unsetenv(SIPC__INIT_LL_RW);
		if (ll_ro == NULL || ll_rw == NULL) {
			report(SIPC__INIT_EXEC_FAILED, ENOMEM);
			return 127;
		}
	}
	(void)unsetenv(SIPC__INIT_AUDIT);
	sigfillset(&all);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &all, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = noop;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NPASSED; i++)
		(void)sigaction(passed_on[i], &sa, NULL);
	(void)sigaction(SIGCHLD, &sa, NULL);
	if ((sfd = signalfd(-1, &all, SFD_CLOEXEC)) < 0) {
		report(SIPC__INIT_EXEC_FAILED, errno);
		return 127;
	}
	/* A /proc of this namespace only, so the worker does not even see
	 * the host's processes (the mount namespace is ours alone). */
	if (!proc_is_ours() &&
	    (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    NULL) < 0))
		fprintf(stderr, "sipc-init: /proc of the namespace not mounted: "
		    "%s (host pids stay visible, not signallable)\n",
		    strerror(errno));
	/* The supervisor may have died before the parent-death signal was
	 * armed: then its end of the socket is already closed. */
	if (supervisor_gone(0))
		return 1;
	if ((worker = start_worker(argv + 1, &none, &nfd)) < 0)
		return 0;
	pf[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = SIPC__INIT_REPORT_FD, .events = POLLIN };
	pf[2] = (struct pollfd){ .fd = nfd, .events = POLLIN };
	for (;;) {
		if (poll(pf, 3, -1) < 0)
			continue;
		if (pf[1].revents != 0)
			return 1;               /* supervisor gone */
		if (pf[2].revents & POLLIN)
			on_refused(nfd);
		else if (pf[2].revents != 0)
			pf[2].fd = -1;  /* no filtered process left */
		if (!(pf[0].revents & POLLIN) ||
		    read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			if (reap_all(worker, &status)) {
				report(SIPC__INIT_EXITED, status);
				return 0;
			}
			continue;
		}
		for (i = 0; i < NPASSED; i++)
			if ((int)si.ssi_signo == passed_on[i])
				(void)kill(-1, (int)si.ssi_signo);
	}
}
