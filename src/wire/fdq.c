/*
 * fdq.c - descriptors that travel with frames (see wire/wire.h).
 *
 * Threads: none of its own; a queue belongs to the thread reading its
 * channel (the reader or a reading caller in the supervisor, the
 * worker's thread or its watcher in the runtime), one at a time.
 */
#include "wire/wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void
sipc__fdq_init(struct sipc__fdq *q)
{
	memset(q, 0, sizeof(*q));
}

void
sipc__fdq_clear(struct sipc__fdq *q)
{
	int fd;

	while ((fd = sipc__fdq_take(q)) >= 0)
		(void)close(fd);
}

int
sipc__fdq_take(struct sipc__fdq *q)
{
	int fd;

	if (q->n == 0)
		return -1;
	fd = q->fd[q->head];
	q->head = (q->head + 1) % SIPC__FDQ_MAX;
	q->n--;
	return fd;
}

static void
fdq_push(struct sipc__fdq *q, int fd)
{
	if (q->n == SIPC__FDQ_MAX) {
		(void)close(fd);
		q->bad = true;
		return;
	}
	q->fd[(q->head + q->n) % SIPC__FDQ_MAX] = fd;
	q->n++;
}

ssize_t
sipc__recv_fds(int sock, void *buf, size_t len, int flags,
               struct sipc__fdq *q)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(SIPC__FDQ_MAX * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh;
	struct cmsghdr *c;
	ssize_t n;
	size_t i, k;
	int fd;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	if (mh.msg_controllen == 0 && !(mh.msg_flags & MSG_CTRUNC))
		return n;               /* the usual case: bytes only */
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			fdq_push(q, fd);
		}
	}
	/* The kernel closed what did not fit; the rest is an error too. */
	if (mh.msg_flags & MSG_CTRUNC)
		q->bad = true;
	return n;
}

ssize_t
sipc__send_fd(int sock, struct iovec *iov, size_t iovlen, int fd, int flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh;
	struct cmsghdr *c;
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = iovlen;
	if (fd >= 0) {
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags)) < 0 &&
	    errno == EINTR)
		;
	return n;
}

bool
sipc__fdq_settled(const struct sipc__fdq *q, const struct sipc_decoder *d)
{
	if (q->bad)
		return false;
	if (q->n == 0)
		return true;
	if (q->n > 1 || d->have == 0 || d->error != 0)
		return false;
	return !d->in_payload || (d->cur.flags & SIPC_FRAME_F_FD) != 0;
}
