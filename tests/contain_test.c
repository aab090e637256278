/*
 * contain_test.c - ownership at the provider seam: what the local
 * adapter does when its child was reaped behind its back (lost child,
 * no group signal after ESRCH), when a handle is released before its
 * worker ended (killed and reaped, never left unowned), in every
 * containment mode this machine offers.
 *
 * Threads: the CUnit thread only.  Waits are on events with generous
 * deadlines; the one negative check ("no signal reached the kid") waits
 * a bounded time for a death that must not come.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "provider/provider.h"
#include "os/os.h"
#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000
#define QUIET_MS 500            /* how long a spared process must live on */

struct proc {
	struct sipc_provider_chan ch;
	void *h;
};

static char *const no_env[] = { NULL };

static int
launch(struct proc *p, const char *fixture, char *const *argv,
       enum sipc_containment mode)
{
	struct sipc_provider_launch l = { .path = tl_fixture(fixture), .argv = argv,
	    .envp = no_env, .contain = mode, .init_path = tl_init_path() };
	int eno = 0;

	memset(p, 0, sizeof(*p));
	return sipc__provider_local.launch(NULL, &l, &p->ch, &p->h, &eno);
}

static void
proc_close(struct proc *p)
{
	close(p->ch.proto_fd);
	close(p->ch.diag_fd);
}

static bool
ended(void *arg)
{
	struct proc *p = arg;
	struct sipc_exit e;

	return sipc__provider_local.try_end(p->h, &e) == 1;
}

/*
 * Issue 10 item 9.  The leader of a process-group worker is reaped by
 * the host (a wait on a pid it does not own).  Its group id is then no
 * longer pinned: TERM must not go to the group (the kid lives on), and
 * the end is classified LOST.  Before the fix, ESRCH from the pidfd was
 * followed by kill(-pgid) and the kid died; the end read "exit status -1".
 */
/* rules: E1 I3 T5 PB10 */
static void
test_contain_reaped_elsewhere_is_lost_and_group_spared(void)
{
	char *const argv[] = { "pgkid", NULL };
	struct sipc_exit e;
	struct proc p;
	siginfo_t si;
	pid_t kid;

	CU_ASSERT_FATAL(launch(&p, "pgkid", argv,
	    SIPC_CONTAIN_PROCESS_GROUP) == 0);
	kid = st_read_kid(p.ch.diag_fd, WAIT_MS);
	CU_ASSERT_FATAL(kid > 0);
	CU_ASSERT_EQUAL(getpgid(kid), p.ch.display_pid);
	/* the host kills and reaps the library's child behind its back */
	CU_ASSERT(kill(p.ch.display_pid, SIGKILL) == 0);
	CU_ASSERT(waitid(P_PID, (id_t)p.ch.display_pid, &si, WEXITED | __WALL) == 0);
	CU_ASSERT_EQUAL(sipc__provider_local.stop(p.h, SIPC_STOP_GRACEFUL), 0);
	CU_ASSERT_EQUAL(sipc__provider_local.stop(p.h, SIPC_STOP_FORCED), 0);
	CU_ASSERT_FALSE(tl_wait_until(st_pid_dead, &kid, QUIET_MS));
	CU_ASSERT_EQUAL(sipc__provider_local.try_end(p.h, &e), 1);
	CU_ASSERT_EQUAL(e.kind, SIPC_EXIT_LOST);
	sipc__provider_local.release(p.h);
	proc_close(&p);
	/* the kid is the test's to end (the library may not) */
	CU_ASSERT(kill(kid, SIGKILL) == 0);
}

/* The same leader, dead but still our unreaped zombie: its group id is
 * pinned, so TERM does reach the group (the kid dies), and the end is
 * the real one (SIGKILL). */
/* rules: I3 T5 */
static void
test_contain_zombie_leader_group_still_signalled(void)
{
	char *const argv[] = { "pgkid", NULL };
	struct sipc_exit e;
	struct proc p;
	pid_t kid;

	CU_ASSERT_FATAL(launch(&p, "pgkid", argv,
	    SIPC_CONTAIN_PROCESS_GROUP) == 0);
	kid = st_read_kid(p.ch.diag_fd, WAIT_MS);
	CU_ASSERT_FATAL(kid > 0);
	CU_ASSERT(kill(p.ch.display_pid, SIGKILL) == 0);
	CU_ASSERT(sipc__provider_local.stop(p.h, SIPC_STOP_GRACEFUL) == 0);
	CU_ASSERT(tl_wait_until(st_pid_dead, &kid, WAIT_MS));
	CU_ASSERT(tl_wait_until(ended, &p, WAIT_MS));
	CU_ASSERT_EQUAL(sipc__provider_local.try_end(p.h, &e), 1);
	CU_ASSERT_EQUAL(e.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(e.signo, SIGKILL);
	sipc__provider_local.release(p.h);
	proc_close(&p);
}

/*
 * Issue 10 item 10.  Releasing the handle of a live worker kills and
 * reaps it: afterwards its pid names nothing (not even a zombie), in
 * every mode.  Before the fix the handle's pidfd was closed and the
 * process ran on, owned by no one.
 */
static void
release_live(enum sipc_containment mode)
{
	char *const argv[] = { "pgkid", NULL };
	struct proc p;
	pid_t pid, kid;
	int r;

	if ((r = launch(&p, "pgkid", argv, mode)) < 0) {
		CU_ASSERT(mode != SIPC_CONTAIN_PROCESS_GROUP);
		fprintf(stderr, "contain_test: %s not available: %s\n",
		    sipc_containment_name(mode), sipc_strerror(r));
		return;
	}
	CU_ASSERT_EQUAL(p.ch.contain, mode);
	kid = st_read_kid(p.ch.diag_fd, WAIT_MS);
	CU_ASSERT_FATAL(kid > 0);
	pid = p.ch.display_pid;
	sipc__provider_local.release(p.h);
	CU_ASSERT(st_pid_gone(&pid));
	proc_close(&p);
	if (mode == SIPC_CONTAIN_PROCESS_GROUP) {
		/* its group went with it (the kid's pid is host-visible) */
		CU_ASSERT(tl_wait_until(st_pid_dead, &kid, WAIT_MS));
	}
}

/* rules: I7 */
static void
test_contain_release_live_kills_and_reaps(void)
{
	release_live(SIPC_CONTAIN_PROCESS_GROUP);
	release_live(SIPC_CONTAIN_PID_NAMESPACE);
	release_live(SIPC_CONTAIN_USER_NAMESPACE);
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

/* ------------------------------------------ release, bounded */

struct releaser {
	void *h;
	atomic_bool done;
};

static void *
release_thread(void *arg)
{
	struct releaser *r = arg;

	sipc__provider_sandbox.release(r->h);
	atomic_store(&r->done, true);
	return NULL;
}

static bool
released(void *arg)
{
	return atomic_load(&((struct releaser *)arg)->done);
}

/*
 * A sandbox handle whose init was never proven (no pidfd on it: stop
 * reaches nothing) is released while its worker runs.  Release must not
 * wait for ever for an outer bwrap that nobody killed: it kills our own
 * child (the worker's tree goes with it) and returns.  If it hangs, the
 * test kills the init itself to let it go, and fails.
 */
static void
test_contain_sandbox_release_unproven_init_bounded(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_provider_launch l = { .path = tl_fixture("echo"),
	    .argv = argv, .envp = no_env, .init_path = tl_init_path() };
	struct releaser r = { NULL, false };
	struct sipc_provider_chan ch;
	struct sipc__wend *w;
	pid_t init, bwrap;
	pthread_t th;
	bool in_time;
	int eno = 0, rc;

	memset(&ch, 0, sizeof(ch));
	rc = sipc__provider_sandbox.launch(NULL, &l, &ch, &r.h, &eno);
	if (rc == SIPC_E_EXEC || rc == -EPROTO) {
		tl_skip("no sandbox here (bwrap missing or refused)");
		return;
	}
	CU_ASSERT_FATAL(rc == 0);
	init = sipc__sandbox_id(r.h)->init_pid;
	bwrap = sipc__sandbox_id(r.h)->bwrap_pid;
	/* what an init that could not be proven leaves: no pidfd on it */
	w = r.h;
	CU_ASSERT_FATAL(w->sig_fd >= 0 && w->sig_fd != w->pidfd);
	close(w->sig_fd);
	w->sig_fd = -1;
	CU_ASSERT_FATAL(pthread_create(&th, NULL, release_thread, &r) == 0);
	in_time = tl_wait_until(released, &r, WAIT_MS);
	CU_ASSERT(in_time);
	if (!in_time)
		(void)kill(init, SIGKILL);    /* let the release go on */
	pthread_join(th, NULL);
	CU_ASSERT(st_pid_gone(&bwrap));
	CU_ASSERT(tl_wait_until(st_pid_gone, &init, WAIT_MS));
	close(ch.proto_fd);
	close(ch.diag_fd);
}


/* Descriptors of `pid` that name a socket (readlink "socket:[...]"). */
static unsigned
sockets_held(pid_t pid, int *ret_first)
{
	char path[64], link[64];
	unsigned n = 0;
	ssize_t len;

	*ret_first = -1;
	for (int fd = 0; fd < 256; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		if ((len = readlink(path, link, sizeof(link) - 1)) <= 0)
			continue;
		link[len] = '\0';
		if (strncmp(link, "socket:", 7) == 0 && n++ == 0)
			*ret_first = fd;
	}
	return n;
}

/*
 * Under the sandbox, the worker alone holds its end of the channel: the
 * outer bwrap keeps no socket at all (it closes what it passed on), and
 * sipc-init only its report socket (descriptor 4), not descriptor 3.
 * So a worker that closes its channel is seen at once (termination_test).
 */
static void
test_contain_sandbox_channel_held_by_worker_alone(void)
{
	char *const argv[] = { "echo", NULL };
	struct sipc_provider_launch l = { .path = tl_fixture("echo"),
	    .argv = argv, .envp = no_env, .init_path = tl_init_path() };
	struct sipc_provider_chan ch;
	void *h = NULL;
	int eno = 0, rc, first;
	pid_t init, bwrap;

	memset(&ch, 0, sizeof(ch));
	rc = sipc__provider_sandbox.launch(NULL, &l, &ch, &h, &eno);
	if (rc == SIPC_E_EXEC || rc == -EPROTO) {
		tl_skip("no sandbox here (bwrap missing or refused)");
		return;
	}
	CU_ASSERT_FATAL(rc == 0);
	init = sipc__sandbox_id(h)->init_pid;
	bwrap = sipc__sandbox_id(h)->bwrap_pid;
	CU_ASSERT_EQUAL(sockets_held(bwrap, &first), 0);
	CU_ASSERT_EQUAL(sockets_held(init, &first), 1);
	CU_ASSERT_EQUAL(first, 4);
	sipc__provider_sandbox.release(h);
	close(ch.proto_fd);
	close(ch.diag_fd);
}


/* The sandbox tool is trusted only where nobody else could have put or
 * changed it: a copy in a directory others may write, a group-writable
 * copy, a relative path and a missing file are each refused; a copy
 * owned by this uid in a private directory is accepted. */
/* rules: SB1 */
static void
test_contain_sandbox_bwrap_path_trusted_only(void)
{
	char dir[] = "/tmp/sipc-bwrap-XXXXXX", sub[64], tool[96];
	int fd;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	CU_ASSERT_FATAL(chmod(dir, 0700) == 0);
	snprintf(sub, sizeof(sub), "%s/d", dir);
	CU_ASSERT_FATAL(mkdir(sub, 0700) == 0);
	snprintf(tool, sizeof(tool), "%s/bwrap", sub);
	CU_ASSERT_FATAL((fd = open(tool, O_CREAT | O_WRONLY, 0700)) >= 0);
	close(fd);
	/* /tmp itself is writable by others (sticky): never trusted. */
	CU_ASSERT_EQUAL(sipc__bwrap_trusted(tool), -EPERM);
	CU_ASSERT_EQUAL(sipc__bwrap_trusted("bwrap"), -EINVAL);
	CU_ASSERT_EQUAL(sipc__bwrap_trusted("/nonexistent/bwrap"), -ENOENT);
	/* The installed one (when there) passes, the default path. */
	if (access(SIPC__BWRAP_DEFAULT, X_OK) == 0)
		CU_ASSERT_EQUAL(sipc__bwrap_trusted(SIPC__BWRAP_DEFAULT), 0);
	/* Writable by group along the chain, or the file itself: refused. */
	CU_ASSERT_FATAL(chmod(sub, 0770) == 0);
	CU_ASSERT_EQUAL(sipc__bwrap_trusted(tool), -EPERM);
	CU_ASSERT_FATAL(chmod(sub, 0700) == 0);
	CU_ASSERT_FATAL(chmod(tool, 0720) == 0);
	CU_ASSERT_EQUAL(sipc__bwrap_trusted(tool), -EPERM);
	/* Not executable: refused as well. */
	CU_ASSERT_FATAL(chmod(tool, 0600) == 0);
	CU_ASSERT(sipc__bwrap_trusted(tool) < 0);
	unlink(tool);
	rmdir(sub);
	rmdir(dir);
}


static const tl_test contain_tests[] = {
	{ "test_contain_reaped_elsewhere_is_lost_and_group_spared",
	  test_contain_reaped_elsewhere_is_lost_and_group_spared },
	{ "test_contain_zombie_leader_group_still_signalled",
	  test_contain_zombie_leader_group_still_signalled },
	{ "test_contain_release_live_kills_and_reaps",
	  test_contain_release_live_kills_and_reaps },
	{ "test_contain_sandbox_release_unproven_init_bounded",
	  test_contain_sandbox_release_unproven_init_bounded },
	{ "test_contain_sandbox_channel_held_by_worker_alone",
	  test_contain_sandbox_channel_held_by_worker_alone },
	{ "test_contain_sandbox_bwrap_path_trusted_only",
	  test_contain_sandbox_bwrap_path_trusted_only },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("contain", contain_tests);
	return tl_run();
}
