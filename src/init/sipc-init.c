/*
 * sipc-init - PID 1 of one worker's PID namespace.
 *
 * Usage (by the library only): sipc-init WORKER_PATH ARGV0 [ARGS...]
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
 *     then (SIPC__INIT_FILTER set) drops every capability
 *     of the worker's process, sets its core limit to 0/0 and installs
 *     the system-call filter (filter.c) just before execve, refusing to
 *     start the worker if any of it fails; sipc-init itself stays
 *     unfiltered and keeps what it needs to reap and signal;
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
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_filter.h"
#include "init_proto.h"

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
report(int kind, int value)
{
	struct sipc__init_msg m = { (uint32_t)kind, value };
	ssize_t n;

	do
		n = write(SIPC__INIT_REPORT_FD, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
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
	 * rules, capabilities, core limit and filter; any of them that
	 * cannot be had stops the start (fail closed). */
	if (filtered && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		err = errno;
		goto fail;
	}
	if (ll_ro != NULL && (err = -sipc__init_landlock(ll_ro, ll_rw)) != 0)
		goto fail;
	if (filtered && ((err = -sipc__init_drop_privileges()) != 0 ||
	    (err = -sipc__init_filter()) != 0))
		goto fail;
	(void)sigprocmask(SIG_SETMASK, none, NULL);
	execve(argv[0], argv + 1, environ);
	err = errno;
fail:
	if (write(errw, &err, sizeof(err)) < 0)
		_exit(126);
	_exit(127);
}

/* Fork and exec the worker.  Returns its pid, or -1 after reporting. */
static pid_t
start_worker(char **argv, const sigset_t *none)
{
	int ep[2], err = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(ep, O_CLOEXEC) < 0) {
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
	do
		n = read(ep[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(ep[0]);
	if (n == (ssize_t)sizeof(err)) {
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

/* Reap every child that has ended; 1 when the worker was among them. */
static int
reap_all(pid_t worker, int *ret_status)
{
	int st, found = 0;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == worker) {
			*ret_status = st;
			found = 1;
		}
	return found;
}

int
main(int argc, char **argv)
{
	struct signalfd_siginfo si;
	struct sigaction sa;
	sigset_t all, none;
	struct pollfd pf[2];
	int sfd, status = 0;
	size_t i;
	pid_t worker;

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
	}
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
	if ((worker = start_worker(argv + 1, &none)) < 0)
		return 0;
	pf[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = SIPC__INIT_REPORT_FD, .events = POLLIN };
	for (;;) {
		if (poll(pf, 2, -1) < 0)
			continue;
		if (pf[1].revents != 0)
			return 1;               /* supervisor gone */
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
