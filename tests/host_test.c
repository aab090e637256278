/*
 * host_test.c - a host that does its own thing with SIGCHLD and wait()
 * beside a supervisor whose workers churn (crash, get killed, restart):
 *   - a SIGCHLD handler sees every exit of the host's own children;
 *   - a host signalfd for SIGCHLD does too;
 *   - a wait(-1) loop never takes a worker (in the namespace modes it may
 *     take a worker's sipc-init, never the worker itself);
 *   - a host that ignores SIGCHLD (or sets SA_NOCLDWAIT) is accepted.
 * In the namespace modes every worker exit is classified exactly all the
 * same: sipc-init reports it over a socket.  In process-group mode an exit
 * the host took is LOST, never misclassified (churn()).  The library
 * reads no SIGCHLD, so the host's handler and signalfd see every exit of
 * their own children.  Each case runs in both modes.
 *
 * Threads: the CUnit thread drives; a host thread per case plays the
 * host's own child handling and touches only atomics.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000
#define HOST_KIDS 24
#define CHURN 4

/* written by the CUnit thread, read by the host's reaping thread */
static _Atomic pid_t kids[HOST_KIDS];
static atomic_int reaped_kids, reaped_strangers;

static bool
is_kid(pid_t p)
{
	for (int i = 0; i < HOST_KIDS; i++)
		if (atomic_load(&kids[i]) == p)
			return true;
	return false;
}

/* Reap whatever is reapable the way a host does (no __WALL). */
static void
host_reap_nohang(void)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (is_kid(p))
			atomic_fetch_add(&reaped_kids, 1);
		else
			atomic_fetch_add(&reaped_strangers, 1);
	}
}

static void
on_sigchld(int sig)
{
	int e = errno;

	(void)sig;
	host_reap_nohang();
	errno = e;
}

/* Fork the host's own children; they exit together once all their
 * pids are recorded (a pipe closing), so no reap can precede it. */
static void
fork_kids(void)
{
	int go[2];
	char c;

	CU_ASSERT_FATAL(pipe(go) == 0);
	for (int i = 0; i < HOST_KIDS; i++) {
		pid_t p = fork();

		CU_ASSERT_FATAL(p >= 0);
		if (p == 0) {
			close(go[1]);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(i & 0x7f);
		}
		atomic_store(&kids[i], p);
	}
	close(go[0]);
	close(go[1]);
}

static bool
all_kids_reaped(void *arg)
{
	return atomic_load(&reaped_kids) == HOST_KIDS;
}

/* Crash the worker CHURN times (exit status, signal), a new generation
 * serving after each.  Namespace modes: every exit classified exactly,
 * whatever the host reaps (sipc-init reports the status).  Process-group
 * mode: exact, or LOST when the host took the worker - never a wrong
 * class.  Returns how many were LOST. */
static unsigned
churn(sipc_supervisor *s)
{
	static const char *const how[] = { "crash exit 3", "crash segv" };
	struct sipc_worker_stats w;
	struct sipc_result r;
	unsigned lost = 0;
	bool ok;

	for (unsigned i = 0; i < CHURN; i++) {
		st_call_cmd(s, how[i % 2], WAIT_MS, 0, &r);
		CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
		w = st_worker_stats(s, 0);
		if (i % 2 == 0)
			ok = r.exit.kind == SIPC_EXIT_CODE && r.exit.code == 3;
		else
			ok = r.exit.kind == SIPC_EXIT_SIGNAL &&
			    r.exit.signo == SIGSEGV;
		if (!ok && r.exit.kind == SIPC_EXIT_LOST &&
		    w.containment == SIPC_CONTAIN_PROCESS_GROUP) {
			ok = true;
			lost++;
		}
		if (!ok)
			fprintf(stderr, "host_test: %s ended as kind %d code %d "
			    "signal %d (%s)\n", how[i % 2], r.exit.kind,
			    r.exit.code, r.exit.signo,
			    sipc_containment_name(w.containment));
		CU_ASSERT(ok);
		sipc_result_release(&r);
		CU_ASSERT_FATAL(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	}
	return lost;
}

static sipc_supervisor *
start(enum sipc_containment mode)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_config c;

	st_cfg_base(&c, "echo", argv, 1);
	c.containment = mode;
	c.restart_intensity = 100;
	c.pool_restart_budget = 100;
	return st_start(&c, 1, WAIT_MS);
}

static void
reset_counts(void)
{
	atomic_store(&reaped_kids, 0);
	atomic_store(&reaped_strangers, 0);
}

/* A host SIGCHLD handler reaps its own children while workers churn:
 * it sees every one (the library consumed the signal before). */
static void
handler_case(enum sipc_containment mode)
{
	struct sigaction sa, old;
	sipc_supervisor *s;

	reset_counts();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CU_ASSERT_FATAL(sigaction(SIGCHLD, &sa, &old) == 0);
	s = start(mode);
	fork_kids();
	churn(s);
	CU_ASSERT(tl_wait_until(all_kids_reaped, NULL, WAIT_MS));
	sipc_destroy(s);
	sigaction(SIGCHLD, &old, NULL);
	CU_ASSERT_EQUAL(atomic_load(&reaped_kids), HOST_KIDS);
}

/* rules: SC1 */
static void
test_host_sigchld_handler_sees_own_children(void)
{
	handler_case(SIPC_CONTAIN_AUTO);
	handler_case(SIPC_CONTAIN_PROCESS_GROUP);
}

/* The host reads SIGCHLD from a signalfd of its own, in its own thread. */
static atomic_bool sfd_stop;

static void *
signalfd_host(void *arg)
{
	int sfd = *(int *)arg;
	struct signalfd_siginfo si;

	while (!atomic_load(&sfd_stop)) {
		if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			host_reap_nohang();
		else
			usleep(1000);   /* paces the poll until told to stop */
	}
	return NULL;
}

static void
signalfd_case(enum sipc_containment mode)
{
	sigset_t chld, old;
	sipc_supervisor *s;
	pthread_t th;
	int sfd;

	reset_counts();
	atomic_store(&sfd_stop, false);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	/* blocked here before any thread exists: every thread inherits it */
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	CU_ASSERT_FATAL(sfd >= 0);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, signalfd_host, &sfd) == 0);
	s = start(mode);
	fork_kids();
	churn(s);
	CU_ASSERT(tl_wait_until(all_kids_reaped, NULL, WAIT_MS));
	sipc_destroy(s);
	atomic_store(&sfd_stop, true);
	pthread_join(th, NULL);
	close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	CU_ASSERT_EQUAL(atomic_load(&reaped_kids), HOST_KIDS);
}

/* rules: SC1 */
static void
test_host_signalfd_sees_own_children(void)
{
	signalfd_case(SIPC_CONTAIN_AUTO);
	signalfd_case(SIPC_CONTAIN_PROCESS_GROUP);
}

/* A host thread blocked in wait(-1) for the whole run: it takes its own
 * children and never a worker; every worker end is classified.  It
 * stops once told to and nothing is left to wait for. */
static void *
wait_any_host(void *arg)
{
	pid_t p;
	int st;

	for (;;) {
		p = waitpid(-1, &st, 0);
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 && atomic_load(&sfd_stop))
			return NULL;
		if (p < 0)
			usleep(1000);     /* ECHILD: nothing of ours yet */
		else if (is_kid(p))
			atomic_fetch_add(&reaped_kids, 1);
		else
			atomic_fetch_add(&reaped_strangers, 1);
	}
}

static void
wait_any_case(enum sipc_containment mode)
{
	sipc_supervisor *s;
	pthread_t th;

	reset_counts();
	atomic_store(&sfd_stop, false);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, wait_any_host, NULL) == 0);
	s = start(mode);
	fork_kids();
	churn(s);
	CU_ASSERT(tl_wait_until(all_kids_reaped, NULL, WAIT_MS));
	sipc_destroy(s);
	atomic_store(&sfd_stop, true);
	pthread_join(th, NULL);
}

/* rules: E1 SC1 PB11 */
static void
test_host_wait_any_never_takes_worker(void)
{
	wait_any_case(SIPC_CONTAIN_AUTO);
	wait_any_case(SIPC_CONTAIN_PROCESS_GROUP);
}

/* SIGCHLD ignored, or SA_NOCLDWAIT: accepted, exits classified.  Before,
 * sipc_create() refused such a host (the kernel would have auto-reaped
 * its workers and lost their status). */
static void
ignored_case(enum sipc_containment mode, const struct sigaction *sa)
{
	struct sigaction old;
	sipc_supervisor *s;

	CU_ASSERT_FATAL(sigaction(SIGCHLD, sa, &old) == 0);
	s = start(mode);
	churn(s);
	sipc_destroy(s);
	sigaction(SIGCHLD, &old, NULL);
}

/* rules: SC1 */
static void
test_host_sigchld_ignored_exit_classes_kept(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	ignored_case(SIPC_CONTAIN_AUTO, &sa);
	ignored_case(SIPC_CONTAIN_PROCESS_GROUP, &sa);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = SA_NOCLDWAIT;
	ignored_case(SIPC_CONTAIN_AUTO, &sa);
	ignored_case(SIPC_CONTAIN_PROCESS_GROUP, &sa);
}

static const tl_test host_tests[] = {
	{ "test_host_sigchld_handler_sees_own_children",
	  test_host_sigchld_handler_sees_own_children },
	{ "test_host_signalfd_sees_own_children",
	  test_host_signalfd_sees_own_children },
	{ "test_host_wait_any_never_takes_worker",
	  test_host_wait_any_never_takes_worker },
	{ "test_host_sigchld_ignored_exit_classes_kept",
	  test_host_sigchld_ignored_exit_classes_kept },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("host", host_tests);
	return tl_run();
}
