/*
 * os/worker_end.c - descriptors, argv and reports around a worker launched
 * under sipc-init, and the worker's end; see os/os.h.
 *
 * Threads: any.  The one shared state is the fork window (a count of
 * open windows under window_mu, and pthread_atfork() handlers).
 * A struct sipc__wend belongs to one handle (reaper thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"
#include "base/base.h"

/* The fork window (os/os.h).  `open_windows` counts the launches
 * holding child ends; a host fork() holds window_mu from its prepare
 * handler until it returns (in both processes), so no window opens
 * while it forks, and it forks only once none is open (it polls: a
 * window lasts one clone).  Only a mutex crosses the fork, unlocked on
 * both sides by the thread that forked (no condition variable, whose
 * waiters from other threads would not exist in the child). */
static pthread_mutex_t window_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned open_windows;           /* [window_mu] */
static pthread_once_t fork_window_once = PTHREAD_ONCE_INIT;

static void
fork_prepare(void)
{
	struct timespec nap = { 0, 200 * 1000 };

	pthread_mutex_lock(&window_mu);
	while (open_windows > 0) {
		pthread_mutex_unlock(&window_mu);
		(void)nanosleep(&nap, NULL);
		pthread_mutex_lock(&window_mu);
	}
}

static void
fork_done(void)
{
	pthread_mutex_unlock(&window_mu);
}

static void
fork_window_setup(void)
{
	(void)pthread_atfork(fork_prepare, fork_done, fork_done);
}

static void
window_open(struct sipc__launch_fds *f)
{
	(void)pthread_once(&fork_window_once, fork_window_setup);
	pthread_mutex_lock(&window_mu);
	open_windows++;
	pthread_mutex_unlock(&window_mu);
	f->window = true;
}

static void
window_close(struct sipc__launch_fds *f)
{
	if (!f->window)
		return;
	pthread_mutex_lock(&window_mu);
	open_windows--;
	pthread_mutex_unlock(&window_mu);
	f->window = false;
}

int
sipc__launch_fds_open(struct sipc__launch_fds *f, bool passcred)
{
	int on = 1;

	*f = (struct sipc__launch_fds){ { -1, -1 }, { -1, -1 }, { -1, -1 },
	    -1, false };
	window_open(f);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->sv) < 0 ||
	    pipe2(f->dp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->rp) < 0 ||
	    (f->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	/* Before the child can send anything: credentials are attached
	 * to what is sent after the option is set. */
	if (passcred && setsockopt(f->rp[0], SOL_SOCKET, SO_PASSCRED, &on,
	    sizeof(on)) < 0)
		return -errno;
	if ((f->sv[1] = sipc__fd_high(f->sv[1])) < 0)
		return f->sv[1];
	if ((f->dp[1] = sipc__fd_high(f->dp[1])) < 0)
		return f->dp[1];
	if ((f->rp[1] = sipc__fd_high(f->rp[1])) < 0)
		return f->rp[1];
	if ((f->devnull = sipc__fd_high(f->devnull)) < 0)
		return f->devnull;
	return 0;
}

void
sipc__launch_fds_close(struct sipc__launch_fds *f)
{
	for (int i = 0; i < 2; i++) {
		if (f->sv[i] >= 0)
			close(f->sv[i]);
		if (f->dp[i] >= 0)
			close(f->dp[i]);
		if (f->rp[i] >= 0)
			close(f->rp[i]);
		f->sv[i] = f->dp[i] = f->rp[i] = -1;
	}
	if (f->devnull >= 0)
		close(f->devnull);
	f->devnull = -1;
	window_close(f);
}

/* A pending launch then holds no more descriptors than a started
 * worker, however many are pending. */
void
sipc__launch_fds_close_child(struct sipc__launch_fds *f)
{
	int *fd[] = { &f->sv[1], &f->dp[1], &f->rp[1], &f->devnull };

	for (size_t i = 0; i < sizeof(fd) / sizeof(fd[0]); i++) {
		if (*fd[i] >= 0)
			close(*fd[i]);
		*fd[i] = -1;
	}
	window_close(f);
}

/* Its parent (sipc-init) is pid 1 in the namespace, so SIPC_PARENT_PID
 * says 1 and the worker runtime's parent check holds there too. */
char **
sipc__ns_env(char *const *envp)
{
	static char ppid1[] = "SIPC_PARENT_PID=1";
	size_t n = 0, i;
	char **e;

	while (envp[n] != NULL)
		n++;
	if ((e = calloc(n + 1, sizeof(*e))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		e[i] = strncmp(envp[i], "SIPC_PARENT_PID=", 16) == 0 ? ppid1 :
		    envp[i];
	return e;
}

int
sipc__init_report_read(int fd, int ms, struct sipc__init_msg *ret,
                       pid_t *ret_pid)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} cb;
	struct iovec iov = { .iov_base = ret, .iov_len = sizeof(*ret) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf) };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct cmsghdr *c;
	struct ucred uc;
	ssize_t n;
	int r;

	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	if (r <= 0)
		return r < 0 ? -errno : 0;
	n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_WAITALL | MSG_CMSG_CLOEXEC);
	if (n != (ssize_t)sizeof(*ret))
		return 0;
	if (ret_pid == NULL)
		return 1;
	*ret_pid = 0;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(uc))) {
			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			*ret_pid = uc.pid;
		}
	return 1;
}

int
sipc__init_report_wait(int fd, int pidfd, int ms, struct sipc__init_msg *ret,
                       pid_t *ret_pid)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
	    { .fd = pidfd, .events = POLLIN } };
	int64_t until = sipc__now_ms() + ms, left;
	int r;

	for (;;) {
		if ((left = until - sipc__now_ms()) < 0) {
			sipc__bound_expired("sipc-init's first report");
			return 0;
		}
		if ((r = poll(p, 2, (int)left)) < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			return sipc__init_report_read(fd, 0, ret, ret_pid);
	}
}

bool
sipc__init_report_pending(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN);
}

/* The one place an init's reports become an exit: the worker's status,
 * then what ended it.  A refused call (POLICY, reported before the
 * status) outranks the status, which is then sipc-init's SIGKILL; a
 * worker killed by SIGXCPU or SIGXFSZ reached a resource limit. */
bool
sipc__init_report_exit(int fd, struct sipc_exit *ret)
{
	struct sipc__init_msg m;
	bool got = false, refused = false;
	int nr = -1, limit = -1;
	char name[SIPC__INIT_NAME_MAX] = "";

	while (fd >= 0 && sipc__init_report_read(fd, 0, &m, NULL) == 1) {
		if (m.kind == SIPC__INIT_POLICY) {
			refused = true;
			nr = m.value;
			memcpy(name, m.name, sizeof(name));
			name[sizeof(name) - 1] = '\0';
		} else if (m.kind == SIPC__INIT_LIMIT) {
			limit = m.value;
		} else if (m.kind == SIPC__INIT_EXITED) {
			sipc__exit_from_status(m.value, ret);
			got = true;
		}
	}
	if (!got)
		return false;
	if (refused) {
		ret->kind = SIPC_EXIT_POLICY;
		ret->syscall = nr;
		_Static_assert(sizeof(ret->syscall_name) >= sizeof(name),
		    "a reported name fits");
		memcpy(ret->syscall_name, name, sizeof(name));
	} else if (ret->kind == SIPC_EXIT_SIGNAL && limit == RLIMIT_CPU) {
		ret->kind = SIPC_EXIT_LIMIT;
		ret->rlimit = RLIMIT_CPU;
	} else if (ret->kind == SIPC_EXIT_SIGNAL &&
	    (ret->signo == SIGXCPU || ret->signo == SIGXFSZ)) {
		ret->kind = SIPC_EXIT_LIMIT;
		ret->rlimit = ret->signo == SIGXCPU ? RLIMIT_CPU : RLIMIT_FSIZE;
	}
	return true;
}

void
sipc__exit_from_status(int st, struct sipc_exit *e)
{
	memset(e, 0, sizeof(*e));
	if (WIFEXITED(st)) {
		e->code = WEXITSTATUS(st);
		e->kind = e->code == 0 ? SIPC_EXIT_CLEAN : SIPC_EXIT_CODE;
	} else {
		e->kind = SIPC_EXIT_SIGNAL;
		e->signo = WTERMSIG(st);
		e->core_dumped = WCOREDUMP(st);
	}
}

bool
sipc__pidfd_gone_within(int pidfd, int ms)
{
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };
	int r;

	while ((r = poll(&pf, 1, ms)) < 0 && errno == EINTR)
		;
	return r == 1;
}

/* ------------------------------------------------------ the worker's end */

void
sipc__wend_init(struct sipc__wend *w)
{
	memset(w, 0, sizeof(*w));
	w->pidfd = w->sig_fd = w->report_fd = -1;
	w->ep = w->ev_fd = w->tm_fd = -1;
}

int
sipc__wend_prepare(struct sipc__wend *w)
{
	if (w->cg != NULL && (w->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		w->ep = -1;
		return -errno;
	}
	return 0;
}

int
sipc__wend_end_fd(struct sipc__wend *w)
{
	struct epoll_event in = { .events = EPOLLIN };

	if (w->ep >= 0 && epoll_ctl(w->ep, EPOLL_CTL_ADD, w->pidfd, &in) < 0) {
		/* without the set, sweep waits for the cgroup (bounded) */
		close(w->ep);
		w->ep = -1;
	}
	return w->ep >= 0 ? w->ep : w->pidfd;
}

void
sipc__wend_chan(struct sipc__wend *w, struct sipc__launch_fds *f,
                const struct sipc__cg *cg, int cg_err,
                struct sipc_provider_chan *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->proto_fd = f->sv[0];
	ret->diag_fd = f->dp[0];
	f->sv[0] = f->dp[0] = -1;
	ret->end_fd = sipc__wend_end_fd(w);
	ret->info.cgroup = w->cg != NULL;
	ret->info.limits = w->cg != NULL && cg != NULL ? sipc__cg_limits(cg) : 0;
	ret->info.cgroup_err = cg_err;
	ret->cgroup_fd = w->cg != NULL ? sipc__cgw_fd(w->cg) : -1;
}

/* Closing them takes them out of the epoll set. */
static void
drain_close(struct sipc__wend *w)
{
	if (w->ev_fd >= 0)
		close(w->ev_fd);
	if (w->tm_fd >= 0)
		close(w->tm_fd);
	w->ev_fd = w->tm_fd = -1;
}

void
sipc__wend_drop(struct sipc__wend *w)
{
	drain_close(w);
	if (w->ep >= 0)
		close(w->ep);
	w->ep = -1;
	(void)sipc__cgw_remove(w->cg);
	w->cg = NULL;
}

/* Our child's own status.  fold128: bwrap folds a PID 1 killed by
 * signal n into exit code 128+n. */
static void
exit_from_siginfo(const siginfo_t *si, bool fold128, struct sipc_exit *e)
{
	memset(e, 0, sizeof(*e));
	switch (si->si_code) {
	case CLD_EXITED:
		if (fold128 && si->si_status > 128 &&
		    si->si_status < 128 + NSIG) {
			e->kind = SIPC_EXIT_SIGNAL;
			e->signo = si->si_status - 128;
			break;
		}
		e->kind = si->si_status == 0 ? SIPC_EXIT_CLEAN : SIPC_EXIT_CODE;
		e->code = si->si_status;
		break;
	case CLD_DUMPED:
		e->core_dumped = true;
		/* FALLTHROUGH */
	default:
		e->kind = SIPC_EXIT_SIGNAL;
		e->signo = si->si_status;
		break;
	}
}

/* Was the OOM killer at work in the worker's cgroup?  Its SIGKILL is
 * then the kernel's, not ours or a stranger's.  Read before sweep
 * removes the cgroup. */
static int
wend_ended(struct sipc__wend *w, struct sipc_exit *ret)
{
	sipc__cgw_note_oom(w->cg, ret);
	w->exit = *ret;
	w->ended = true;
	return 1;
}

/*
 * Terminal observation before the final reap: WNOWAIT leaves our child a
 * zombie, which keeps its pid and group id from being reused, so sweep
 * reaches only this worker's tree.  In the namespace modes there is
 * nothing left to sweep once the init exited: its exit emptied the
 * namespace before its pidfd (or bwrap's, which follows it) became
 * readable.  The reap is sweep's.
 */
int
sipc__wend_try_end(void *h, struct sipc_exit *ret)
{
	struct sipc__wend *w = h;
	siginfo_t si;
	int r;

	if (w->ended) {
		*ret = w->exit;
		return 1;
	}
	r = sipc__pidfd_observe(w->pidfd, &si);
	if (r == 0 && !w->exit_waited &&
	    sipc__init_report_pending(w->report_fd)) {
		/* The worker has ended and its init is on its way out (it
		 * exits right after reporting; bwrap follows it at once):
		 * wait for our child, so the end is seen as soon as the
		 * worker's channel closes.  Once, and bounded: the init's
		 * exit waits for every member of its namespace, and one
		 * that cannot die (D state, frozen) holds it; the end
		 * descriptor then says when it is over. */
		w->exit_waited = true;
		if (!sipc__pidfd_gone_within(w->pidfd, SIPC__INIT_EXIT_MS))
			sipc__bound_expired("a worker's namespace to empty after "
			    "its init reported (a member that cannot die)");
		r = sipc__pidfd_observe(w->pidfd, &si);
	}
	if (r == -ECHILD) {
		/* Reaped by someone else (a host wait(-1)).  An init's
		 * report says how the worker ended (a sandbox's init is
		 * still ours by its pidfd: sweep ends it); without one the
		 * end is lost. */
		w->reaped = true;
		if (!sipc__init_report_exit(w->report_fd, ret))
			*ret = (struct sipc_exit){ .kind = SIPC_EXIT_LOST,
			    .code = -1 };
		return wend_ended(w, ret);
	}
	if (r <= 0)
		return r;
	exit_from_siginfo(&si, w->fold128, ret);
	/* The worker's own status, when sipc-init lived to report it just
	 * before exiting; no report means the init itself was killed. */
	(void)sipc__init_report_exit(w->report_fd, ret);
	return wend_ended(w, ret);
}

int
sipc__wend_stop(void *h, enum sipc_provider_stop how)
{
	struct sipc__wend *w = h;
	int sig = how == SIPC_STOP_FORCED ? SIGKILL : SIGTERM;
	siginfo_t si;
	int r;

	if (w->ended || w->sig_fd < 0)
		return 0;
	/* Every member of its cgroup, whatever became of our child. */
	if (sig == SIGKILL && w->cg != NULL)
		(void)sipc__cgw_kill(w->cg);
	/* Namespace modes: the init passes TERM on; KILL to the init
	 * empties the namespace. */
	if (pidfd_send_signal(w->sig_fd, sig, NULL, 0) < 0) {
		if (errno != ESRCH)
			return -errno;
		/* Exited (an init: its namespace with it).  Our zombie
		 * still pins the group id; a child reaped by someone else
		 * does not, and its group id may already name a stranger's
		 * group: try_end classifies it (reported, or lost). */
		if (w->pgid <= 0 ||
		    (r = sipc__pidfd_observe(w->pidfd, &si)) == -ECHILD)
			return 0;
		if (r < 0)
			return r;
	}
	if (w->pgid > 0)
		(void)kill(-w->pgid, sig);
	return 0;
}

/* The end set now waits for a change of cgroup.events (POLLPRI) or the
 * deadline, no longer for our child (its pidfd stays readable). */
static int
drain_start(struct sipc__wend *w)
{
	struct epoll_event in = { .events = EPOLLIN };
	struct epoll_event pri = { .events = EPOLLPRI };
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = SIPC__CG_EMPTY_MS / 1000;
	its.it_value.tv_nsec = (SIPC__CG_EMPTY_MS % 1000) * 1000000L;
	if (w->ep < 0 || (w->ev_fd = sipc__cgw_events_open(w->cg)) < 0 ||
	    (w->tm_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC |
	    TFD_NONBLOCK)) < 0 ||
	    timerfd_settime(w->tm_fd, 0, &its, NULL) < 0 ||
	    epoll_ctl(w->ep, EPOLL_CTL_ADD, w->ev_fd, &pri) < 0 ||
	    epoll_ctl(w->ep, EPOLL_CTL_ADD, w->tm_fd, &in) < 0 ||
	    epoll_ctl(w->ep, EPOLL_CTL_DEL, w->pidfd, NULL) < 0) {
		if (w->ev_fd < 0)
			w->ev_fd = -1;
		drain_close(w);
		return -1;
	}
	return 0;
}

/* Empty, or no longer worth waiting for (deadline past, or
 * cgroup.events unreadable: the removal's own look says what is left).
 * Each look re-arms the descriptor's POLLPRI. */
static bool
drain_over(struct sipc__wend *w)
{
	return sipc__cg_events_empty(w->ev_fd) != 0 ||
	    sipc__now_ms() >= w->drain_until;
}

/* A killed tree normally empties within a few milliseconds: wait that
 * long (SIPC__CG_QUICK_MS at most, woken by cgroup.events) so the common
 * sweep completes in one call; a slower tree drains asynchronously. */
static bool
drain_briefly(struct sipc__wend *w)
{
	struct pollfd pf = { .fd = w->ev_fd, .events = POLLPRI };
	int64_t until = sipc__now_ms() + SIPC__CG_QUICK_MS, left;
	bool over;

	while (!(over = drain_over(w)) && (left = until - sipc__now_ms()) > 0)
		(void)poll(&pf, 1, (int)left);
	return over;
}

/* Remove the cgroup, waiting out what is left of the bound (nothing
 * after a drain that ran out; the rest of it in release). */
static int
sweep_finish(struct sipc__wend *w)
{
	struct sipc__cgw *cg = w->cg;
	int64_t left = w->drain_until - sipc__now_ms();

	drain_close(w);
	w->draining = false;
	w->swept = true;
	w->cg = NULL;
	return sipc__cgw_remove_within(cg, left > 0 ? (int)left : 0);
}

/*
 * After the end, whatever is left goes: the process behind our child (a
 * sandbox's init, by its pidfd: a no-op when it already exited) is
 * killed and waited for; the group (while our zombie still pins its id;
 * never once someone else reaped our child); the reap; then the cgroup:
 * every member killed (setsid() escapees), and removed once it holds
 * no process.  That wait (SIPC__CG_EMPTY_MS at most) does not block:
 * past a brief one, sweep returns 1 and the end set wakes the caller to
 * call it again (cgroup.events changed, or the deadline).
 */
int
sipc__wend_sweep(void *h)
{
	struct sipc__wend *w = h;

	if (!w->ended || w->swept)
		return 0;
	if (w->draining)
		return drain_over(w) ? sweep_finish(w) : 1;
	if (w->sig_fd >= 0 && w->sig_fd != w->pidfd) {
		(void)pidfd_send_signal(w->sig_fd, SIGKILL, NULL, 0);
		if (!sipc__pidfd_gone_within(w->sig_fd, SIPC__INIT_END_MS))
			sipc__bound_expired("a sandbox's init to exit after its "
			    "kill");
		close(w->sig_fd);
		w->sig_fd = -1;
	}
	if (!w->reaped) {
		if (w->pgid > 0)
			(void)kill(-w->pgid, SIGKILL);
		(void)sipc__pidfd_reap(w->pidfd);
		w->reaped = true;
	}
	if (w->cg == NULL) {
		w->swept = true;
		return 0;
	}
	(void)sipc__cgw_kill(w->cg);
	w->drain_until = sipc__now_ms() + SIPC__CG_EMPTY_MS;
	/* no end set to wait on: the removal waits (bounded) in place */
	if (drain_start(w) < 0)
		return sweep_finish(w);
	w->draining = true;
	return drain_briefly(w) ? sweep_finish(w) : 1;
}

void
sipc__wend_release(void *h)
{
	struct sipc__wend *w = h;
	struct sipc_exit e;

	if (w == NULL)
		return;
	if (!w->ended) {
		/* Never leave an unowned process behind: kill the tree,
		 * then observe, sweep and reap like a normal end.  Where
		 * stop reaches nothing (a sandbox whose init was never
		 * proven) or its kill does not end our child in time, our
		 * child itself is killed (the sandbox's outer bwrap: its
		 * child dies with it, and the namespace with its init); its
		 * status no longer matters.  Every wait is bounded: a child
		 * that still has not exited is left unreaped, said so. */
		(void)sipc__wend_stop(w, SIPC_STOP_FORCED);
		if (w->sig_fd < 0 ||
		    !sipc__pidfd_gone_within(w->pidfd, SIPC__INIT_END_MS)) {
			(void)pidfd_send_signal(w->pidfd, SIGKILL, NULL, 0);
			if (!sipc__pidfd_gone_within(w->pidfd,
			    SIPC__INIT_END_MS))
				sipc__bound_expired("a released worker's "
				    "process to exit after its kill");
		}
		(void)sipc__wend_try_end(w, &e);
	}
	/* still draining: the rest of the bound is waited out here */
	if (sipc__wend_sweep(w) == 1)
		(void)sweep_finish(w);
	if (w->sig_fd >= 0 && w->sig_fd != w->pidfd)
		close(w->sig_fd);
	if (w->pidfd >= 0)
		close(w->pidfd);
	if (w->report_fd >= 0)
		close(w->report_fd);
	/* not swept (its end could not be observed): still removed */
	sipc__wend_drop(w);
	free(h);
}
