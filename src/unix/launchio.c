/*
 * launchio.c - descriptors, argv and reports around a worker launched
 * under sipc-init; see launchio.h.
 *
 * Threads: any; no shared state.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clone.h"
#include "launchio.h"

int
sipc__launch_fds_open(struct sipc__launch_fds *f, bool passcred)
{
	int on = 1;

	*f = (struct sipc__launch_fds){ { -1, -1 }, { -1, -1 }, { -1, -1 },
	    -1 };
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

bool
sipc__init_report_pending(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN);
}

bool
sipc__init_report_exit(int fd, struct sipc_exit *ret)
{
	struct sipc__init_msg m;
	bool got = false;

	while (fd >= 0 && sipc__init_report_read(fd, 0, &m, NULL) == 1)
		if (m.kind == SIPC__INIT_EXITED) {
			sipc__exit_from_status(m.value, ret);
			got = true;
		}
	return got;
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
