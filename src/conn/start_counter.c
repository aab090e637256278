/*
 * conn/start_counter.c - a worker's start counter (CONTRACT section 3, A5): the
 * descriptor that comes with its HELLO bytes, checked and mapped.
 *
 * A worker that sets SIPC_HELLO_F_START_COUNTER sends, as SCM_RIGHTS
 * data on the bytes of its HELLO, one memfd whose first 8 bytes count
 * the REQUEST frames it has started.  It bumps the counter before a
 * request's first side effect, where a worker without one writes an
 * ACCEPT frame: a store to shared memory instead of a write() of its
 * own, and no wake-up of the supervisor for it.  The supervisor reads
 * the counter once, when the worker is gone (settle.c).
 *
 * What is checked before the mapping, since the descriptor is the
 * worker's: it is a memfd sealed against shrinking (F_SEAL_SHRINK; a
 * file shrunk under a mapping would raise SIGBUS in the supervisor
 * when read), and at least SIPC_START_COUNTER_LEN bytes long.  It is
 * mapped read-only and closed; the mapping outlives the worker and is
 * dropped with its generation (slot.c).  Descriptors on any other
 * bytes are never taken: the reader reads them with recv(), and the
 * kernel closes what a read without room for them carries.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wire/wire.h"
#include "pool/pool.h"

/* recv() that also takes one descriptor sent with the bytes (the HELLO's
 * counter); any other is closed.  *fdp is -1 or a descriptor the
 * caller owns (close-on-exec). */
ssize_t
sipc__recv_hello(int sock, void *buf, size_t len, int *fdp)
{
	struct sipc__fdq q;
	ssize_t n;

	sipc__fdq_init(&q);
	n = sipc__recv_fds(sock, buf, len, MSG_DONTWAIT, &q);
	if (*fdp < 0)
		*fdp = sipc__fdq_take(&q);
	sipc__fdq_clear(&q);
	return n;
}

/*
 * Check and map the counter `fd` (consumed).  Returns the read-only
 * mapping, or NULL with *why saying what is wrong with it.
 */
const _Atomic uint64_t *
sipc__start_ctr_map(int fd, const char **why)
{
	struct stat st;
	void *p;
	int seals;

	*why = NULL;
	if (fd < 0)
		*why = "no descriptor came with the HELLO";
	else if ((seals = fcntl(fd, F_GET_SEALS)) < 0)
		*why = "the descriptor takes no seals (not a memfd)";
	else if ((seals & F_SEAL_SHRINK) == 0)
		*why = "the memfd is not sealed against shrinking";
	else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < SIPC_START_COUNTER_LEN)
		*why = "the memfd is shorter than 8 bytes";
	if (*why != NULL) {
		if (fd >= 0)
			(void)close(fd);
		return NULL;
	}
	p = mmap(NULL, SIPC_START_COUNTER_LEN, PROT_READ, MAP_SHARED, fd, 0);
	(void)close(fd);
	if (p == MAP_FAILED) {
		*why = "the memfd cannot be mapped";
		return NULL;
	}
	return (const _Atomic uint64_t *)p;
}

void
sipc__start_ctr_unmap(const _Atomic uint64_t *ctr)
{
	if (ctr != NULL)
		(void)munmap((void *)(uintptr_t)ctr, SIPC_START_COUNTER_LEN);
}
