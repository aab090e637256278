/*
 * worker/runtime.c - the worker-side runtime behind sipc_worker.h.
 *
 * Threads: the thread that called sipc_worker_open() runs everything
 * here; the handler, cancel and idle callbacks are called from
 * sipc_worker_run() on it.  The one exception is rt_watch_read(), which
 * the watcher's thread (worker/watch.c) calls with the watcher's lock
 * held while a handler that asked for its cancel runs: then the decoder,
 * `late` and `late_bytes`/`late_err` are the watcher's, and the worker's
 * thread touches them again only after sipc__wwatch_disarm() (the same
 * lock).  Nothing else is shared; writes stay on the worker's thread.
 *
 * Loop shape: read up to 64 KiB, decode every complete frame in it, then
 * dispatch that batch in arrival order.  Start evidence is exact.  Right
 * before calling the handler of a request, the runtime writes whatever
 * earlier handlers left buffered, then bumps its start counter: a memfd
 * it mapped and sent with HELLO (CONTRACT A5), whose first 8 bytes count
 * the requests started so far, a store and no system call.  When a
 * handler crashes, the supervisor holds the replies of every earlier
 * handler and a count that names this request and none behind it: those
 * provably never started.  A worker that set a reply hold
 * (sipc_worker_set_reply_hold()) has earlier replies written only once
 * their handlers ran for the hold; a crash then takes back up to that
 * much finished work, counted as started.  Without a counter (no
 * memfd, or the knob in worker/worker.h), the runtime appends ACCEPT(id) to
 * the buffered replies and writes it all in one write(): ACCEPT(N+1)
 * travels with REPLY(N), to the same effect (A1).  A handler that keeps its id and replies later
 * still started before its handler, so "started" stays per request.
 * Replies of the last handler of a batch are written when the buffer
 * passes 64 KiB and before the runtime waits for input again.  A
 * synchronous caller therefore costs the worker one read and one write
 * a request.  Memory is bounded by one read buffer,
 * the frames decoded from it (at most one of them large) and the output
 * buffer; a reply larger than the buffer threshold is written directly
 * instead of being copied.
 *
 * The old rule (one ACCEPT per request of the batch, all in one write
 * before the first handler) stays behind sipc__worker_accept_batch() in
 * worker/worker.h, for the benchmark that prices exact ACCEPTs; nothing else
 * may use it.
 */
#include "sipc_worker.h"

#include <bsd/stdlib.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "wire/wire.h"
#include "sipc.h"
#include "worker/worker.h"

#define RT_READ_CHUNK (64u * 1024)
#define RT_DIRECT_MIN (16 * 1024) /* payload bytes worth a direct read */
#define RT_FLUSH_AT (64u * 1024)

/* Frames decoded from one read, dispatched in arrival order. */
struct rt_batch {
	struct sipc_frame *f;
	size_t n;
	size_t cap;
};

/* What the watcher may hold for one handler before it leaves the rest
 * in the socket (the supervisor's own bound is max_inflight requests). */
#define RT_LATE_MAX (4u * 1024 * 1024)

struct sipc_worker {
	int fd;
	int err;                    /* sticky write error; 0 while healthy */
	uint32_t max_payload;
	struct sipc_decoder dec;
	/* Descriptors read with the bytes, claimed by the REQUEST frames
	 * flagged SIPC_FRAME_F_FD in arrival order (wire/wire.h); the watcher's
	 * while armed, as the decoder is. */
	struct sipc__fdq fdq;
	bool fds;                   /* the channel carries descriptors (a
	                             * unix socket): HELLO offers them */
	uint8_t *out;               /* buffered outgoing frames */
	size_t out_len;
	size_t out_cap;
	sipc_worker_cancel cancel_fn;
	sipc_worker_idle idle_fn;
	bool accept_batch;          /* bench only: ACCEPT a batch up front */
	bool drained;               /* the last read emptied the socket */
	_Atomic uint64_t *started;  /* the start counter (A5), or NULL */
	uint64_t nstarted;          /* requests started (the counter's value) */
	int64_t hold_ns;            /* sipc_worker_set_reply_hold() */
	int64_t held_since;         /* when the handler of the oldest
	                             * buffered reply began (monotonic ns) */
	/* The running request (worker/watch.c): its id and deadline
	 * (monotonic ms, 0 none) while its handler runs, 0 outside. */
	uint64_t cur_id;
	int64_t cur_deadline;
	struct rt_batch *batch;     /* being dispatched; cur at batch_pos */
	size_t batch_pos;
	struct sipc__wwatch *watch; /* made at the first arm, or NULL */
	bool running;               /* a handler runs (cur_id is its id) */
	bool armed;                 /* the watcher watches for cur_id */
	/* Frames the watcher read while the handler ran: appended to the
	 * batch when it returns ([watcher lock] while armed). */
	struct rt_batch *late;
	size_t late_bytes;
	int late_err;
};

/* Replies wait for the next write while their handlers took less than
 * this together (sipc_worker_set_reply_hold()); none by default: a held
 * reply also waits for the handler that runs next, however long. */
#define RT_HOLD_US_DEFAULT 0u

static int64_t
rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Offer a start counter at the next sipc_worker_open() (worker/worker.h). */
static bool rt_counter_on = true;

void
sipc__worker_start_counter(bool on)
{
	rt_counter_on = on;
}

/* Write all of buf, retrying on EINTR and short writes.  MSG_NOSIGNAL:
 * a closed channel is EPIPE here, without the process-wide SIGPIPE
 * disposition the runtime used to change (sipc_worker.h, "Signals"). */
static int
rt_write_all(int fd, const struct iovec *iov_in, int cnt)
{
	struct iovec iov[4];
	struct msghdr mh;
	int i = 0;
	ssize_t n;

	memcpy(iov, iov_in, (size_t)cnt * sizeof(iov[0]));
	while (i < cnt) {
		if (iov[i].iov_len == 0) {
			i++;
			continue;
		}
		/* One piece (the usual flush) by send(): a policy that
		 * refuses sendmsg() (descriptor passing) leaves replies be. */
		if (cnt - i == 1) {
			n = send(fd, iov[i].iov_base, iov[i].iov_len,
			    MSG_NOSIGNAL);
		} else {
			memset(&mh, 0, sizeof(mh));
			mh.msg_iov = iov + i;
			mh.msg_iovlen = (size_t)(cnt - i);
			n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && i < cnt) {
			if ((size_t)n >= iov[i].iov_len) {
				n -= (ssize_t)iov[i].iov_len;
				iov[i].iov_len = 0;
				i++;
			} else {
				iov[i].iov_base = (uint8_t *)iov[i].iov_base + n;
				iov[i].iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

int
sipc_worker_flush(sipc_worker *w)
{
	struct iovec iov;
	int r;

	if (w->err != 0)
		return w->err;
	if (w->out_len == 0)
		return 0;
	iov.iov_base = w->out;
	iov.iov_len = w->out_len;
	r = rt_write_all(w->fd, &iov, 1);
	w->out_len = 0;
	if (r < 0)
		w->err = r;
	return r;
}

/* Make room for `need` more bytes in the output buffer. */
static int
rt_reserve(sipc_worker *w, size_t need)
{
	size_t cap = w->out_cap ? w->out_cap : 4096;
	uint8_t *p;

	/* need is at most a header plus SIPC_FRAME_MAX_PAYLOAD (rt_send)
	 * and out_len at most RT_FLUSH_AT plus one such frame: no sum or
	 * doubling here can wrap. */
	if (w->out_len + need <= w->out_cap)
		return 0;
	while (cap < w->out_len + need)
		cap *= 2;
	p = realloc(w->out, cap);
	if (p == NULL)
		return -ENOMEM;
	w->out = p;
	w->out_cap = cap;
	return 0;
}

/*
 * Queue one frame: header plus up to two payload pieces (the error frame
 * has a code and a message).  Large frames bypass the buffer: whatever is
 * buffered goes first, then the frame itself, so ordering is kept.
 */
static int
rt_send(sipc_worker *w, uint8_t type, uint64_t id, const void *a,
    size_t alen, const void *b, size_t blen)
{
	struct sipc_frame_hdr h = { .type = type, .id = id };
	uint8_t hdr[SIPC_FRAME_HDR_LEN];
	struct iovec iov[3];
	int r;

	size_t max = SIPC_FRAME_MAX_PAYLOAD;

	if (w->err != 0)
		return w->err;
	/* The supervisor applies the same maximum to what it receives; a
	 * reply over it would be a protocol violation, so refuse it here.
	 * Each piece is checked before the sum is formed: a length near
	 * SIZE_MAX must not wrap into a small one.  Past this check every
	 * sum below (header + pieces, out_len + need) stays under
	 * 2 * SIPC_FRAME_MAX_PAYLOAD. */
	if ((type == SIPC_FT_REPLY || type == SIPC_FT_ERROR) &&
	    w->max_payload < max)
		max = w->max_payload;
	if (alen > max || blen > max - alen)
		return SIPC_E_TOOBIG;
	h.len = (uint32_t)(alen + blen);
	sipc__frame_encode_hdr(hdr, &h);
	if (SIPC_FRAME_HDR_LEN + alen + blen >= RT_FLUSH_AT) {
		if ((r = sipc_worker_flush(w)) < 0)
			return r;
		iov[0] = (struct iovec){ hdr, sizeof(hdr) };
		iov[1] = (struct iovec){ (void *)a, alen };
		iov[2] = (struct iovec){ (void *)b, blen };
		if ((r = rt_write_all(w->fd, iov, 3)) < 0)
			w->err = r;
		return r;
	}
	if ((r = rt_reserve(w, sizeof(hdr) + alen + blen)) < 0)
		return r;
	memcpy(w->out + w->out_len, hdr, sizeof(hdr));
	w->out_len += sizeof(hdr);
	if (alen > 0)
		memcpy(w->out + w->out_len, a, alen);
	w->out_len += alen;
	if (blen > 0)
		memcpy(w->out + w->out_len, b, blen);
	w->out_len += blen;
	if (w->out_len > RT_FLUSH_AT)
		return sipc_worker_flush(w);
	return 0;
}

int
sipc_worker_reply(sipc_worker *w, uint64_t id, const void *buf, size_t len)
{
	return rt_send(w, SIPC_FT_REPLY, id, buf, len, NULL, 0);
}

/*
 * REPLY(id) flagged SIPC_FRAME_F_FD: 8 bytes of length, and `fd` as
 * SCM_RIGHTS on the frame's first byte.  What is buffered goes first
 * (order), then this frame in its own sendmsg(), so that its
 * descriptor rides on its first byte and on no other frame's.
 */
int
sipc_worker_reply_fd(sipc_worker *w, uint64_t id, int fd)
{
	struct sipc_frame_hdr h = { .type = SIPC_FT_REPLY, .id = id,
	    .flags = SIPC_FRAME_F_FD, .len = SIPC_FRAME_FDLEN_LEN };
	uint8_t fr[SIPC_FRAME_HDR_LEN + SIPC_FRAME_FDLEN_LEN];
	struct iovec iov = { .iov_base = fr, .iov_len = sizeof(fr) };
	struct stat st;
	ssize_t n;
	int r;

	if (w->err != 0)
		return w->err;
	if (!w->fds)
		return -ENOTSUP;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((r = sipc_worker_flush(w)) < 0)
		return r;
	sipc__frame_encode_hdr(fr, &h);
	sipc__le64_put(fr + SIPC_FRAME_HDR_LEN, (uint64_t)st.st_size);
	n = sipc__send_fd(w->fd, &iov, 1, fd, 0);
	if (n < 0)
		return w->err = -errno;
	/* The rest of a frame the socket took only part of: no
	 * descriptor with it (it went with the first byte). */
	iov.iov_base = fr + n;
	iov.iov_len = sizeof(fr) - (size_t)n;
	if ((r = rt_write_all(w->fd, &iov, 1)) < 0)
		w->err = r;
	return r;
}

int
sipc_worker_error(sipc_worker *w, uint64_t id, uint32_t code,
    const void *msg, size_t len)
{
	uint8_t c[4];

	sipc__le32_put(c, code);
	return rt_send(w, SIPC_FT_ERROR, id, c, sizeof(c), msg, len);
}

int
sipc_worker_heartbeat(sipc_worker *w)
{
	int r = rt_send(w, SIPC_FT_HEARTBEAT, 0, NULL, 0, NULL, 0);

	return r < 0 ? r : sipc_worker_flush(w);
}

void
sipc_worker_set_cancel(sipc_worker *w, sipc_worker_cancel fn)
{
	w->cancel_fn = fn;
}

void
sipc_worker_set_idle(sipc_worker *w, sipc_worker_idle fn)
{
	w->idle_fn = fn;
}

void
sipc_worker_set_reply_hold(sipc_worker *w, unsigned max_us)
{
	w->hold_ns = (int64_t)max_us * 1000;
}

int
sipc_worker_fd(const sipc_worker *w)
{
	return w->fd;
}

void
sipc__worker_accept_batch(sipc_worker *w, bool on)
{
	w->accept_batch = on;
}

/* Parse a decimal environment variable in [lo, hi]; *ret untouched if
 * unset.  Returns 0, or SIPC_E_CONFIG when set but malformed. */
static int
rt_env_num(const char *name, long long lo, long long hi, long long *ret)
{
	const char *s = getenv(name), *errstr = NULL;
	long long v;

	if (s == NULL || *s == '\0')
		return 0;
	v = strtonum(s, lo, hi, &errstr);
	if (errstr != NULL)
		return SIPC_E_CONFIG;
	*ret = v;
	return 0;
}

/*
 * Arrange to die with the supervisor.  The parent-death signal is armed
 * first and the parent checked afterwards: a supervisor that died before
 * the prctl() would otherwise leave this worker orphaned for good.
 */
static int
rt_bind_parent(void)
{
	long long ppid = 0;
	int r;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -errno;
	if ((r = rt_env_num("SIPC_PARENT_PID", 1, INT32_MAX, &ppid)) < 0)
		return r;
	if (ppid != 0 && getppid() != (pid_t)ppid)
		return -ESRCH;
	return 0;
}

/* Check that fd is open and a socket; mark it close-on-exec so helpers
 * the worker may exec do not hold the channel open. */
static int
rt_check_fd(int fd)
{
	struct stat st;
	int fl;

	if ((fl = fcntl(fd, F_GETFD)) < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if (fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/*
 * The start counter (CONTRACT A5): a memfd of 8 bytes, sealed so that
 * nobody can shrink, grow or reseal it (the supervisor maps it and a
 * shrunk file would fault there), mapped shared.  Only on a unix socket,
 * the one kind that carries a descriptor.  Returns its descriptor, to
 * be sent with HELLO and closed, or -1: the runtime then writes ACCEPT
 * frames instead.
 */
static int
rt_counter_new(sipc_worker *w)
{
	socklen_t sl = sizeof(int);
	int fd, dom = -1;
	void *p;

	if (!rt_counter_on ||
	    getsockopt(w->fd, SOL_SOCKET, SO_DOMAIN, &dom, &sl) < 0 ||
	    dom != AF_UNIX ||
	    (fd = memfd_create("sipc-start", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
		return -1;
	if (ftruncate(fd, SIPC_START_COUNTER_LEN) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_SEAL) < 0 ||
	    (p = mmap(NULL, SIPC_START_COUNTER_LEN, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0)) == MAP_FAILED) {
		(void)close(fd);
		return -1;
	}
	w->started = p;
	return fd;
}

/* Send the HELLO, with the counter's descriptor if there is one. */
static int
rt_hello(sipc_worker *w, int ctr_fd)
{
	struct sipc_hello hello = {
		.proto_version = SIPC_PROTOCOL_VERSION,
		.pid = (uint32_t)getpid(),
		.flags = (ctr_fd >= 0 ? SIPC_HELLO_F_START_COUNTER :
		    SIPC_HELLO_F_ACCEPTS) | SIPC_HELLO_F_DEADLINES |
		    (w->fds ? SIPC_HELLO_F_FDS : 0),
		.max_inflight = 0,
	};
	uint8_t hb[SIPC_HELLO_LEN];
	struct iovec iov;
	ssize_t n;
	int r;

	sipc__hello_encode(hb, &hello);
	if ((r = rt_send(w, SIPC_FT_HELLO, 0, hb, sizeof(hb), NULL, 0)) < 0)
		return r;
	if (ctr_fd < 0)
		return sipc_worker_flush(w);
	/* The descriptor rides on the first bytes; the rest, if the
	 * socket took only part, goes as usual. */
	iov.iov_base = w->out;
	iov.iov_len = w->out_len;
	n = sipc__send_fd(w->fd, &iov, 1, ctr_fd, 0);
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		return w->err = -errno;
	if (n < 0) {
		/* The descriptor was refused (a policy on SCM_RIGHTS, the
		 * peer's limit): nothing was sent; ACCEPT frames instead. */
		(void)munmap(w->started, SIPC_START_COUNTER_LEN);
		w->started = NULL;
		w->out_len = 0;
		return rt_hello(w, -1);
	}
	memmove(w->out, w->out + n, w->out_len - (size_t)n);
	w->out_len -= (size_t)n;
	return sipc_worker_flush(w);
}

int
sipc_worker_open(sipc_worker **ret)
{
	long long fd = 3, maxp = SIPC_FRAME_MAX_PAYLOAD;
	sipc_worker *w = NULL;
	int r, ctr_fd = -1;

	if ((r = rt_env_num("SIPC_FD", 0, INT32_MAX, &fd)) < 0)
		goto fail;
	if ((r = rt_env_num("SIPC_MAX_PAYLOAD", 1, SIPC_FRAME_MAX_PAYLOAD,
	    &maxp)) < 0)
		goto fail;
	if ((r = rt_check_fd((int)fd)) < 0)
		goto fail;
	if ((r = rt_bind_parent()) < 0)
		goto fail;
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	w->fd = (int)fd;
	w->hold_ns = (int64_t)RT_HOLD_US_DEFAULT * 1000;
	/* Replies as large as the supervisor's requests go out in one
	 * write (wire/wire.h); a refusal leaves the default. */
	(void)setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF,
	    &(int){ SIPC__CHANNEL_SNDBUF }, sizeof(int));
	w->max_payload = (uint32_t)maxp;
	sipc__fdq_init(&w->fdq);
	{
		socklen_t sl = sizeof(int);
		int dom = -1;

		w->fds = getsockopt(w->fd, SOL_SOCKET, SO_DOMAIN, &dom,
		    &sl) == 0 && dom == AF_UNIX;
	}
	/* a request's payload may come with its deadline in front */
	sipc__decoder_init(&w->dec, w->max_payload + SIPC_FRAME_DEADLINE_LEN);
	ctr_fd = rt_counter_new(w);
	r = rt_hello(w, ctr_fd);
	if (ctr_fd >= 0)
		(void)close(ctr_fd);   /* the mapping stays; no extra fd */
	if (r < 0)
		goto fail;
	*ret = w;
	return 0;
fail:
	if (w != NULL) {
		if (w->started != NULL)
			(void)munmap(w->started, SIPC_START_COUNTER_LEN);
		sipc__decoder_free(&w->dec);
		free(w->out);
		free(w);
	}
	return r;
}

void
sipc_worker_close(sipc_worker *w)
{
	if (w == NULL)
		return;
	sipc__wwatch_free(w->watch);
	(void)sipc_worker_flush(w);
	if (w->fd >= 0)
		close(w->fd);
	if (w->started != NULL)
		(void)munmap(w->started, SIPC_START_COUNTER_LEN);
	sipc__decoder_free(&w->dec);
	sipc__fdq_clear(&w->fdq);
	free(w->out);
	free(w);
}


static void
rt_batch_clear(struct rt_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->f[i].payload);
		if (b->f[i].fd >= 0)
			(void)close(b->f[i].fd);   /* never handled */
	}
	b->n = 0;
}

static int
rt_batch_push(struct rt_batch *b, const struct sipc_frame *f)
{
	struct sipc_frame *p;
	size_t cap;

	if (b->n == b->cap) {
		cap = b->cap ? b->cap * 2 : 64;
		p = reallocarray(b->f, cap, sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
		b->f = p;
		b->cap = cap;
	}
	b->f[b->n++] = *f;
	return 0;
}

/* A frame the supervisor may send: REQUEST (with its deadline in front
 * when flagged), CANCEL, SHUTDOWN; no other flag. */
static bool
rt_frame_ok(const struct sipc_frame *f)
{
	size_t dl = f->hdr.flags & SIPC_FRAME_F_DEADLINE ?
	    SIPC_FRAME_DEADLINE_LEN : 0;

	switch (f->hdr.type) {
	case SIPC_FT_REQUEST:
		if (f->hdr.flags & ~(SIPC_FRAME_F_DEADLINE | SIPC_FRAME_F_FD))
			return false;
		if (dl > 0 && (f->hdr.len < dl ||
		    sipc__le64_get(f->payload) == 0))
			return false;
		/* A document by descriptor: its length, and the descriptor
		 * claimed (rt_decode()). */
		if (f->hdr.flags & SIPC_FRAME_F_FD)
			return f->hdr.len == dl + SIPC_FRAME_FDLEN_LEN &&
			    f->fd >= 0;
		return true;
	case SIPC_FT_CANCEL:
	case SIPC_FT_SHUTDOWN:
		return f->hdr.flags == 0;
	}
	return false;
}

/* A frame is complete: claim its descriptor if it is flagged, check
 * it, and put it in the batch.  On error the frame is freed, its
 * descriptor closed. */
static int
rt_frame_push(sipc_worker *w, struct rt_batch *b, struct sipc_frame *f)
{
	int r = SIPC_E_PROTOCOL;

	if (f->hdr.flags & SIPC_FRAME_F_FD)
		f->fd = sipc__fdq_take(&w->fdq);
	if (rt_frame_ok(f) && (r = rt_batch_push(b, f)) == 0)
		return 0;
	free(f->payload);
	if (f->fd >= 0)
		(void)close(f->fd);
	return r;
}

/*
 * Decode every complete frame in buf into the batch.  Stops after a
 * SHUTDOWN (nothing after it will be served, so nothing after it may be
 * accepted).  Only frames the supervisor may send are valid here.
 * Returns 0 or SIPC_E_PROTOCOL / -ENOMEM; frames decoded before an error
 * stay in the batch.
 */
static int
rt_decode(sipc_worker *w, const uint8_t *buf, size_t len, struct rt_batch *b)
{
	struct sipc_frame f;
	size_t off = 0;
	bool done;
	long n;
	int r;

	while (off < len) {
		n = sipc__decoder_feed(&w->dec, buf + off, len - off, &f, &done);
		if (n < 0)
			return n == -ENOMEM ? -ENOMEM : SIPC_E_PROTOCOL;
		off += (size_t)n;
		if (!done)
			continue;
		if ((r = rt_frame_push(w, b, &f)) < 0)
			return r;
		if (f.hdr.type == SIPC_FT_SHUTDOWN)
			break;
	}
	/* Every descriptor that came with these bytes has its frame, or
	 * is the one of the frame still coming (wire/wire.h). */
	if (!sipc__fdq_settled(&w->fdq, &w->dec))
		return SIPC_E_PROTOCOL;
	return 0;
}

/* The old rule, bench only: ACCEPT every request of the batch in one
 * write before the first handler runs. */
static int
rt_accept_all(sipc_worker *w, const struct rt_batch *b)
{
	int r;

	for (size_t i = 0; i < b->n; i++)
		if (b->f[i].hdr.type == SIPC_FT_REQUEST &&
		    (r = rt_send(w, SIPC_FT_ACCEPT, b->f[i].hdr.id, NULL, 0,
		    NULL, 0)) < 0)
			return r;
	return sipc_worker_flush(w);
}

/*
 * The handler of `id` is about to start.  Then the start evidence,
 * before the handler's first side effect.  With a counter: the counter
 * names this request (a store to the shared page, which outlives this
 * process), and the replies earlier handlers buffered go out first once
 * those handlers ran for the hold or longer since the oldest of them
 * began (always, with a hold of 0): a crash in this handler takes back
 * at most that much finished work, whose requests the supervisor then
 * counts as started with no reply ("may have run"), as the counter says.
 * Without one, ACCEPT(id) goes out in the same write as every buffered
 * reply (bytes still in this process die with it).  Either way the
 * supervisor knows this request started and nothing of the requests
 * behind it.
 */
static int
rt_accept(sipc_worker *w, uint64_t id)
{
	int64_t now;
	int r;

	if (w->accept_batch)
		return 0;       /* rt_accept_all() did it */
	if (w->started != NULL) {
		now = w->hold_ns > 0 ? rt_now_ns() : 0;   /* no clock: no hold */
		if (w->out_len > 0 && (w->hold_ns == 0 ||
		    now - w->held_since >= w->hold_ns) &&
		    (r = sipc_worker_flush(w)) < 0)
			return r;
		if (w->out_len == 0)
			w->held_since = now;
		atomic_store(w->started, ++w->nstarted);
		return 0;
	}
	if ((r = rt_send(w, SIPC_FT_ACCEPT, id, NULL, 0, NULL, 0)) < 0)
		return r;
	return sipc_worker_flush(w);
}

/*
 * The watcher's read callback (its thread, its lock held, armed): decode
 * into the late batch; say whether a CANCEL names the running request,
 * whether SHUTDOWN came, whether enough is held.
 */
static int
rt_watch_read(void *ctx, const uint8_t *buf, size_t len)
{
	sipc_worker *w = ctx;
	struct rt_batch *l = w->late;
	size_t i = l->n;
	int r, bits = 0;

	r = rt_decode(w, buf, len, l);
	for (; i < l->n; i++) {
		w->late_bytes += l->f[i].hdr.len + SIPC_FRAME_HDR_LEN;
		if (l->f[i].hdr.type == SIPC_FT_CANCEL &&
		    l->f[i].hdr.id == w->cur_id)
			bits |= SIPC__WW_CANCEL;
		if (l->f[i].hdr.type == SIPC_FT_SHUTDOWN)
			bits |= SIPC__WW_STOP;
	}
	if (r < 0) {
		w->late_err = r;
		return r;
	}
	if (w->late_bytes >= RT_LATE_MAX)
		bits |= SIPC__WW_FULL;
	return bits;
}

/* A CANCEL for the running request already read, behind it in the
 * batch (the watcher was not armed yet). */
static bool
rt_cancel_behind(const sipc_worker *w)
{
	const struct rt_batch *b = w->batch;

	for (size_t i = w->batch_pos + 1; b != NULL && i < b->n; i++)
		if (b->f[i].hdr.type == SIPC_FT_CANCEL &&
		    b->f[i].hdr.id == w->cur_id)
			return true;
	return false;
}

/* The running handler asked about its cancel: watch for it from now on
 * (worker/watch.c).  Returns 0 or a negative error. */
static int
rt_arm(sipc_worker *w)
{
	int r;

	if (w->armed)
		return 0;
	if (!w->running)
		return -EINVAL;          /* no handler runs */
	if (w->accept_batch)
		return -ENOTSUP;         /* bench mode: ACCEPTs up front */
	if (w->late == NULL && (w->late = calloc(1, sizeof(*w->late))) == NULL)
		return -ENOMEM;
	if (w->watch == NULL && (r = sipc__wwatch_new(w->fd, rt_watch_read,
	    w, &w->fdq, &w->watch)) < 0)
		return r;
	w->armed = true;
	sipc__wwatch_arm(w->watch, w->cur_deadline, rt_cancel_behind(w));
	return 0;
}

/* The handler returned: take the channel back from the watcher and put
 * what it read behind the batch, in arrival order. */
static int
rt_disarm(sipc_worker *w, struct rt_batch *b)
{
	struct rt_batch *l = w->late;
	int r = 0;

	if (!w->armed)
		return 0;
	w->armed = false;
	(void)sipc__wwatch_disarm(w->watch);
	w->drained = false;       /* the watcher may have left bytes */
	for (size_t i = 0; i < l->n; i++) {
		if (r == 0 && (r = rt_batch_push(b, &l->f[i])) == 0)
			continue;
		free(l->f[i].payload);
		if (l->f[i].fd >= 0)
			(void)close(l->f[i].fd);
	}
	l->n = 0;
	w->late_bytes = 0;
	return r < 0 ? r : w->late_err;
}

/*
 * Map a request's document (SIPC_FRAME_F_FD) read-only: `len` bytes as
 * its frame declared them.  NULL and *ret_map, *ret_len set (no
 * mapping for an empty one), or why not: a descriptor that is not a
 * regular file, is shorter than declared, or cannot be mapped gets an
 * error reply, never a crash.  A file the host shrinks under the
 * mapping can still fault the worker; a memfd sealed against shrinking
 * cannot be.
 */
static const char *
rt_map_doc(int fd, uint64_t len, void **ret_map, size_t *ret_len)
{
	struct stat st;
	void *p;

	*ret_map = NULL;
	*ret_len = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return "the document's descriptor is not a regular file";
	if ((uint64_t)st.st_size < len || len > SIZE_MAX)
		return "the document is shorter than its frame says";
	if (len == 0)
		return NULL;
	p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return "the document cannot be mapped";
	*ret_map = p;
	*ret_len = (size_t)len;
	return NULL;
}

/* Call the handler of request frame f, with its deadline known to
 * sipc_worker_deadline() and its cancel to the watcher while it runs. */
static int
rt_run_handler(sipc_worker *w, struct rt_batch *b, size_t i,
    sipc_worker_handler fn, void *arg)
{
	struct sipc_frame *f = &b->f[i];
	const uint8_t *p = f->payload;
	size_t len = f->hdr.len;
	uint64_t id = f->hdr.id;
	int r;

	void *map = NULL;
	int fd = f->fd;

	w->cur_deadline = 0;
	if (f->hdr.flags & SIPC_FRAME_F_DEADLINE) {
		w->cur_deadline = (int64_t)sipc__le64_get(p);
		p += SIPC_FRAME_DEADLINE_LEN;
		len -= SIPC_FRAME_DEADLINE_LEN;
	}
	f->fd = -1;                 /* this call closes it, whatever comes */
	if ((r = rt_accept(w, id)) < 0)
		goto out;
	if (fd >= 0) {
		const char *why = rt_map_doc(fd, sipc__le64_get(p), &map, &len);

		p = map;
		if (why != NULL) {
			r = sipc_worker_error(w, id, SIPC_WORKER_E_DOCUMENT,
			    why, strlen(why));
			goto out;
		}
	}
	w->cur_id = id;
	w->batch = b;
	w->batch_pos = i;
	w->running = true;
	fn(w, id, len > 0 ? p : NULL, len, arg);
	w->running = false;
	r = rt_disarm(w, b);
	if (map != NULL)
		(void)munmap(map, len);
	if (fd >= 0)
		(void)close(fd);
	fd = -1;
	w->cur_id = 0;
	w->cur_deadline = 0;
	w->batch = NULL;
out:
	if (fd >= 0)
		(void)close(fd);
	return r;
}

int
sipc_worker_scratch(const sipc_worker *w, uint64_t id, char *buf, size_t len)
{
	const char *root = getenv("SIPC_SCRATCH");
	struct stat st;

	(void)w;
	if (root == NULL || root[0] != '/')
		return -ENOENT;
	if ((size_t)snprintf(buf, len, "%s/%" PRIu64, root, id) >= len)
		return -ENAMETOOLONG;
	if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
		return -ENOENT;
	return 0;
}

uint64_t
sipc_worker_deadline(const sipc_worker *w)
{
	return (uint64_t)w->cur_deadline;
}

int
sipc_worker_cancel_fd(sipc_worker *w)
{
	int r = rt_arm(w);

	return r < 0 ? r : sipc__wwatch_fd(w->watch);
}

bool
sipc_worker_cancelled(sipc_worker *w)
{
	struct timespec ts;

	if (!w->running)
		return false;
	/* without a watcher (it could not start) the deadline still counts */
	if ((w->armed || rt_arm(w) == 0) && sipc__wwatch_cancelled(w->watch))
		return true;
	if (w->cur_deadline == 0)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 >=
	    w->cur_deadline;
}

/*
 * Dispatch the batch in arrival order, each REQUEST right after its
 * ACCEPT.  Returns 1 after SHUTDOWN, 0 to continue, or a negative error.
 * Frames the watcher read while a handler ran join the batch's end.
 */
static int
rt_dispatch(sipc_worker *w, struct rt_batch *b, sipc_worker_handler fn,
    void *arg)
{
	struct sipc_frame *f;
	int r;

	if (w->accept_batch && (r = rt_accept_all(w, b)) < 0)
		return r;
	for (size_t i = 0; i < b->n; i++) {
		f = &b->f[i];
		switch (f->hdr.type) {
		case SIPC_FT_REQUEST:
			if ((r = rt_run_handler(w, b, i, fn, arg)) < 0)
				return r;
			break;
		case SIPC_FT_CANCEL:
			if (w->cancel_fn != NULL)
				w->cancel_fn(w, f->hdr.id, arg);
			break;
		case SIPC_FT_SHUTDOWN:
			return 1;
		}
		if (w->err != 0)
			return w->err;
	}
	return 0;
}

/* Before blocking: let the worker emit deferred replies, then flush. */
static int
rt_before_block(sipc_worker *w, void *arg)
{
	if (w->idle_fn != NULL)
		w->idle_fn(w, arg);
	return sipc_worker_flush(w);
}

/*
 * read() on the channel, waiting for input in poll(), never in read().
 * A thread asleep in a stream socket's read() is also woken each time
 * the peer reads what this end wrote earlier (the socket's "room to
 * write" wake-up, which read() does not filter and poll() does): with
 * the supervisor reading every reply, that was one context switch for
 * nothing per request.  Whether to try a read that does not wait first
 * follows the last read: one that filled the buffer likely left more
 * (a pipelined stream: one system call), one that did not emptied the
 * socket, and a try would mostly find nothing (a synchronous caller
 * waiting for this reply: poll() at once saves the try).
 */
static ssize_t
rt_read(sipc_worker *w, void *dst, size_t n)
{
	struct pollfd pf = { .fd = w->fd, .events = POLLIN };
	ssize_t r;

	if (!w->drained) {
		if ((r = sipc__recv_fds(w->fd, dst, n, MSG_DONTWAIT,
		    &w->fdq)) >= 0)
			goto done;
		if (errno == ENOTSOCK) {
			r = read(w->fd, dst, n);
			goto done;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
	}
	if (poll(&pf, 1, -1) < 0)
		return -1;                  /* EINTR: the caller tries again */
	/* Descriptors come with the bytes (SIPC_FRAME_F_FD), so a socket
	 * is read with recvmsg() even here. */
	r = sipc__recv_fds(w->fd, dst, n, 0, &w->fdq);
	if (r < 0 && errno == ENOTSOCK)
		r = read(w->fd, dst, n);
done:
	w->drained = r >= 0 && (size_t)r < n;
	return r;
}

int
sipc_worker_run(sipc_worker *w, sipc_worker_handler fn, void *arg)
{
	struct rt_batch b = { 0 };
	uint8_t *buf;
	ssize_t n;
	int r, dr;

	if ((buf = malloc(RT_READ_CHUNK)) == NULL)
		return -ENOMEM;
	for (;;) {
		uint8_t *dst;
		size_t need;

		if ((r = rt_before_block(w, arg)) < 0)
			break;
		/* Inside a large payload: read straight into it. */
		if ((need = sipc__decoder_direct(&w->dec, &dst)) >= RT_DIRECT_MIN) {
			struct sipc_frame f;
			bool done;

			n = rt_read(w, dst, need);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				r = n < 0 ? -errno : SIPC_E_PROTOCOL;
				break;
			}
			sipc__decoder_direct_done(&w->dec, (size_t)n, &f, &done);
			/* no descriptor may come inside a payload */
			if (!sipc__fdq_settled(&w->fdq, &w->dec)) {
				if (done)
					free(f.payload);
				r = SIPC_E_PROTOCOL;
				break;
			}
			if (!done)
				continue;
			if (f.hdr.type != SIPC_FT_REQUEST || !rt_frame_ok(&f)) {
				free(f.payload);
				r = SIPC_E_PROTOCOL;
				break;
			}
			if ((r = rt_batch_push(&b, &f)) < 0) {
				free(f.payload);
				break;
			}
			r = rt_dispatch(w, &b, fn, arg);
			rt_batch_clear(&b);
			if (r != 0)
				break;
			continue;
		}
		n = rt_read(w, buf, RT_READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0) {
			/* The supervisor closed the channel.  A frame cut in
			 * half means it broke, not that it finished. */
			r = sipc__decoder_partial(&w->dec) ? SIPC_E_PROTOCOL : 0;
			break;
		}
		dr = rt_decode(w, buf, (size_t)n, &b);
		r = rt_dispatch(w, &b, fn, arg);
		rt_batch_clear(&b);
		if (r == 0 && dr < 0)
			r = dr;
		if (r != 0)
			break;
	}
	if (r >= 0)
		r = sipc_worker_flush(w);
	free(b.f);
	free(buf);
	return r;
}
