/*
 * sysfault.c - seccomp-based system call faults for tests (sysfault.h).
 * The broker is a forked process with one thread; the judged process is
 * its child.  The broker itself must never make the brokered call (it
 * would wait for itself): it only polls, reads /proc and writes a pipe.
 */
#include "sysfault.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BROKER_DEADLINE_MS 60000

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the filters read the low half of a 64-bit argument first"
#endif

static int
install(struct sock_filter *f, unsigned short n, unsigned flags)
{
	struct sock_fprog prog = { .len = n, .filter = f };
	long r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	r = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	return r < 0 ? -errno : (int)r;
}

bool
sf_supported(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	pid_t pid;
	int st;

	if ((pid = fork()) < 0)
		return false;
	if (pid == 0)
		_exit(install(f, 1, SECCOMP_FILTER_FLAG_NEW_LISTENER) < 0);
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0;
}

int
sf_fail_fsync_on(int fd, int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fsync, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)fd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
		    SECCOMP_RET_ERRNO | ((uint32_t)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	int r = install(f, sizeof(f) / sizeof(f[0]), 0);

	return r < 0 ? r : 0;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Answer one notification; false when the listener failed. */
static bool
answer(int lfd, sf_judge judge, void *jarg)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	int r;

	memset(&req, 0, sizeof(req));
	if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return errno == EINTR || errno == ENOENT;
	r = judge((pid_t)req.pid, (const uint64_t *)req.data.args, jarg);
	memset(&resp, 0, sizeof(resp));
	resp.id = req.id;
	if (r == 0)
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	else
		resp.error = r;
	/* ENOENT: the caller died meanwhile. */
	return ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0 ||
	    errno == ENOENT;
}

/* In the broker: filter, fork the body, judge until it ends. */
static int
broker_run(int nr, sf_judge judge, void *jarg, int (*body)(void *),
           void *barg)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	int64_t end = mono_ms() + BROKER_DEADLINE_MS;
	int lfd, st;
	pid_t pid;

	lfd = install(f, sizeof(f) / sizeof(f[0]),
	    SECCOMP_FILTER_FLAG_NEW_LISTENER);
	if (lfd < 0)
		return -1;
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		close(lfd);
		_exit(body(barg) & 0xff);
	}
	for (;;) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (mono_ms() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		if (poll(&p, 1, 50) > 0 && (p.revents & POLLIN) &&
		    !answer(lfd, judge, jarg)) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
	}
	close(lfd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int
sf_broker(int nr, sf_judge judge, void *jarg, size_t jlen,
          int (*body)(void *), void *barg)
{
	int p[2], st, rc = -1;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		rc = broker_run(nr, judge, jarg, body, barg);
		if (write(p[1], &rc, sizeof(rc)) != (ssize_t)sizeof(rc) ||
		    write(p[1], jarg, jlen) != (ssize_t)jlen)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &rc, sizeof(rc)) != (ssize_t)sizeof(rc) ||
	    read(p[0], jarg, jlen) != (ssize_t)jlen)
		rc = -1;
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		rc = -1;
	return rc;
}

int
sf_fd_path(pid_t pid, uint64_t fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/fd/%llu", (int)pid,
	    (unsigned long long)fd);
	if ((n = readlink(link, buf, len - 1)) < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

long
sf_fd_flags(pid_t pid, uint64_t fd)
{
	char path[64], line[128];
	long flags = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%llu", (int)pid,
	    (unsigned long long)fd);
	if ((f = fopen(path, "re")) == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "flags:", 6) == 0)
			flags = strtol(line + 6, NULL, 8);
	fclose(f);
	return flags;
}
