/*
 * fdq.h - descriptors that travel with frames (SIPC_FRAME_F_FD): taken
 * with the bytes they came on, queued in arrival order, claimed by the
 * frames that carry the flag; sent, one with a frame's first byte, by
 * sipc__send_fd().  Shared by both ends (wire layer).
 *
 * A descriptor rides on the first byte of its frame (SCM_RIGHTS), and
 * a unix stream socket ends a read right after the bytes a descriptor
 * came with, so one read brings at most the descriptor of the frame
 * that begins last in it.  The owner of a queue is whoever reads the
 * channel (one thread at a time); no locks here.
 */
#ifndef SIPC_FDQ_H
#define SIPC_FDQ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "frame.h"

#define SIPC__FDQ_MAX 4   /* more than one pending is already an error */

struct sipc__fdq {
	int fd[SIPC__FDQ_MAX];
	unsigned head, n;
	bool bad;            /* a read's control data was cut (MSG_CTRUNC),
	                      * or more came than the queue holds */
};

void sipc__fdq_init(struct sipc__fdq *q);
/* Close every queued descriptor (each exactly once) and empty it. */
void sipc__fdq_clear(struct sipc__fdq *q);
/* The oldest queued descriptor, now the caller's; -1 when none. */
int sipc__fdq_take(struct sipc__fdq *q);

/*
 * recv() of at most `len` bytes that also takes the descriptors sent
 * with them (close-on-exec) into `q`.  `flags` as recv()'s.  Cut
 * control data, or more descriptors than the queue holds, set q->bad
 * (what did arrive is closed).  Returns recv()'s result.
 */
ssize_t sipc__recv_fds(int sock, void *buf, size_t len, int flags,
                       struct sipc__fdq *q);

/*
 * sendmsg() of iov[0..iovlen) with `fd`, when it is >= 0, as SCM_RIGHTS
 * data on the first byte sent; again on EINTR, always MSG_NOSIGNAL
 * besides `flags`.  The descriptor stays the caller's.  Returns
 * sendmsg()'s result (-1 and errno).
 */
ssize_t sipc__send_fd(int sock, struct iovec *iov, size_t iovlen, int fd,
                      int flags);

/*
 * After the bytes of one read are decoded: may the descriptors still
 * queued be there?  Only one, for the frame in progress when its header
 * is not complete yet or carries SIPC_FRAME_F_FD.  False is a protocol
 * error (a descriptor no frame claims).
 */
bool sipc__fdq_settled(const struct sipc__fdq *q,
                       const struct sipc_decoder *d);

#endif
