/*
 * reader.c - one worker slot's two threads: the reader here, the writer
 * in writer.c; starting and stopping both.
 *
 * writer and direct path: writer.c.
 * reader: waits (epoll) on three descriptors - the protocol socket, the
 *   diagnostics pipe (worker stdout+stderr) and a wake eventfd - decodes
 *   many frames per read(), completes requests through the table, and
 *   hands diagnostics to diag.c (escaped, length-capped pieces for the
 *   log callback and the slot's crash-report tail).  Diagnostics are never
 *   fed to the decoder; protocol bytes never reach the log raw.  Each
 *   frame's payload is taken from mem_ceiling before it is allocated
 *   and given back once handled; a frame that does not fit is not read
 *   until room comes back (table.c).
 * caller reads: a sipc_call() thread that wrote its own request to an
 *   idle worker may take the socket out of the reader's interest set and
 *   read its reply itself, with the same code and decode state (struct
 *   sipc__rx, conn/conn.h), then give it back (callread.c).
 *
 * Both threads are started and joined by the reaper thread, once per
 * generation.  Lock order: slot -> table.  Callbacks run with no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wire/wire.h"
#include "pool/pool.h"
#include "os/os.h"
#include "conn/conn.h"

#define READ_BUF (64 * 1024)
#define DIRECT_MIN (16 * 1024)    /* payload bytes worth a direct read */
/* The largest reply payload a sipc_call() thread reads itself; a
 * larger one is left to the reader thread (frame_reserve). */
#define CALLER_PAYLOAD_MAX (64 * 1024)
/* How long an owed writer wake waits for more replies (writer_flush):
 * short against any handler that keeps half the window busy. */
#define SIPC__REFILL_WAIT_MS 1

/* ------------------------------------------------------------ reader */

static void
violation(struct reader *r, int err, const char *what, uint64_t id)
{
	struct sipc__slot *sl = r->sl;
	struct sipc_supervisor *s = sl->sup;

	atomic_fetch_add(&sl->violations, 1);
	atomic_fetch_add(&s->n_violations, 1);
	sipc__log(s, SIPC_LOG_WARN, sl, "protocol violation: %s (id %llu)",
	    what, (unsigned long long)id);
	pthread_mutex_lock(&sl->lock);
	if (!sl->violation) {
		sl->violation = true;
		sl->violation_err = err;
	}
	/* Decoding stops here: an ACCEPT behind the bad bytes (a worker
	 * that keeps serving) is never seen, so its absence proves
	 * nothing.  Not so for a frame cut by the end of the stream. */
	if (!r->rx->at_eof)
		sl->stream_cut = true;
	pthread_mutex_unlock(&sl->lock);
	r->rx->proto_done = true;
	sipc__reaper_wake(s);
}

static void
on_hello(struct reader *r, struct sipc_frame *f)
{
	struct sipc__slot *sl = r->sl;
	struct sipc_supervisor *s = sl->sup;
	struct sipc_hello h;
	const _Atomic uint64_t *ctr = NULL;
	const char *why;
	int fd = r->rx->hello_fd;

	r->rx->hello_fd = -1;
	if (f->hdr.type != SIPC_FT_HELLO ||
	    sipc__hello_decode(f->payload, f->hdr.len, &h) != 0) {
		violation(r, SIPC_E_HANDSHAKE, "first frame is not HELLO",
		    f->hdr.id);
		goto out;
	}
	if (h.proto_version != SIPC_PROTOCOL_VERSION) {
		sipc__log(s, SIPC_LOG_ERROR, sl, "worker speaks protocol "
		    "version %u, supervisor %u", h.proto_version,
		    SIPC_PROTOCOL_VERSION);
		violation(r, SIPC_E_VERSION, "protocol version mismatch", 0);
		goto out;
	}
	if (h.flags & SIPC_HELLO_F_START_COUNTER) {
		ctr = sipc__start_ctr_map(fd, &why);
		fd = -1;
		if (ctr == NULL) {
			sipc__log(s, SIPC_LOG_ERROR, sl, "worker's start "
			    "counter refused: %s", why);
			violation(r, SIPC_E_HANDSHAKE, "unfit start counter", 0);
			return;
		}
	}
	r->rx->ready = true;
	pthread_mutex_lock(&sl->lock);
	sl->accepts = (h.flags & SIPC_HELLO_F_ACCEPTS) != 0;
	sl->deadlines = (h.flags & SIPC_HELLO_F_DEADLINES) != 0;
	sl->fds = (h.flags & SIPC_HELLO_F_FDS) != 0;
	sl->start_ctr = ctr;
	if (sl->state == SIPC_WS_STARTING)
		sipc__slot_set_state(sl, SIPC_WS_READY);
	pthread_cond_broadcast(&sl->cv_writer);
	pthread_mutex_unlock(&sl->lock);
	sipc__reaper_wake(s);   /* readiness is counted by the reaper */
out:
	if (fd >= 0)
		(void)close(fd);        /* sent without the flag: not used */
}

/* Table lock held.  Is `q` a request this worker generation owes? */
static bool
owed_here(const struct sipc__slot *sl, const struct sipc__req *q)
{
	return q != NULL && q->slot == (int)sl->idx &&
	    q->gen == sl->generation &&
	    (q->state == SIPC__R_WRITTEN || q->state == SIPC__R_ACCEPTED);
}

static void
on_accept(struct reader *r, struct sipc_frame *f)
{
	struct sipc__slot *sl = r->sl;
	struct sipc_supervisor *s = sl->sup;
	struct sipc__req *q;
	bool ok;

	pthread_mutex_lock(&s->table.lock);
	q = sipc__table_find(&s->table, f->hdr.id);
	ok = owed_here(sl, q) && q->state == SIPC__R_WRITTEN;
	if (ok)
		q->state = SIPC__R_ACCEPTED;
	pthread_mutex_unlock(&s->table.lock);
	if (!ok)
		violation(r, SIPC_E_PROTOCOL, "ACCEPT for an id not owed",
		    f->hdr.id);
}

/* The writer checks its room under the slot lock and keeps it until it
 * sleeps: once this thread has held that lock, the writer either sleeps
 * (and the signal wakes it) or has yet to look (and sees the room), so
 * no wake-up is lost.  The signal comes after the unlock, so the woken
 * writer does not block again on the lock this thread still holds. */
static void
writer_signal(struct sipc__slot *sl)
{
	pthread_mutex_lock(&sl->lock);
	pthread_mutex_unlock(&sl->lock);
	pthread_cond_signal(&sl->cv_writer);
}

/*
 * Replies gave a writer that had no room some (wake_writer).  Refilling
 * a frame or two at a time would hand the worker one frame per read and
 * turn the pipeline into a ping-pong, so the owed wake waits until half
 * the window is free, or until it has waited SIPC__REFILL_WAIT_MS
 * (`force`, from reader_loop()), whichever comes first: a request that
 * never answers cannot keep the rest of the room unused.  Then, while the worker runs, the reader sends what
 * the ring holds itself when it can (writer.c); in the final drain the
 * worker is gone, and only the writer is woken (as by a reading caller).
 */
static void
writer_flush(struct reader *r, bool force)
{
	struct sipc__slot *sl = r->sl;
	unsigned max = sl->sup->cfg.max_inflight;

	if (!r->wake_writer)
		return;
	if (!force && atomic_load(&sl->inflight) > max / 2)
		return;
	r->wake_writer = false;
	/* A reading caller sends nothing but its own request. */
	if (r->rx->final || r->caller)
		writer_signal(sl);
	else
		sipc__reader_refill(sl);
}

/*
 * In the final drain, an outcome's callback waits until the drain is
 * done (later_run()): the drain decodes every byte the dead worker left,
 * and a host's slow callbacks must neither hold the reaper longer per
 * byte nor count against the bound on a descendant's new bytes.  The
 * entry keeps a reference and the reply's mem_ceiling bytes.  False
 * (deliver now) outside the final drain, or when out of memory.
 */
static bool
later_push(struct reader *r, struct sipc__req *q, struct sipc_result *res,
           size_t held)
{
	struct sipc__later *nl;
	size_t ncap;

	if (!r->rx->final || r->caller)
		return false;
	if (r->nlater == r->later_cap) {
		ncap = r->later_cap ? r->later_cap * 2 : 64;
		if ((nl = reallocarray(r->later, ncap, sizeof(*nl))) == NULL)
			return false;
		r->later = nl;
		r->later_cap = ncap;
	}
	sipc__req_ref(q);
	r->later[r->nlater++] = (struct sipc__later){ q, *res, held };
	return true;
}

/* Reader thread, no lock held: run the callbacks the final drain kept,
 * in the order of the replies; their time is counted in later_ms. */
static void
later_run(struct reader *r)
{
	struct sipc_supervisor *s = r->sl->sup;
	int64_t t0 = sipc__now_ms();
	size_t i;

	for (i = 0; i < r->nlater; i++) {
		struct sipc__later *l = &r->later[i];

		sipc__outcome_deliver_held(s, l->q, &l->res, l->held);
		sipc__req_unref(s, l->q);
	}
	r->nlater = 0;
	r->later_ms += sipc__now_ms() - t0;
}

/* Table lock held: a reply read at `now` ends the worker's current
 * interval; fold it into the mean time per reply that dispatch uses to
 * gather asynchronous requests (dispatch.c).  Replies read together
 * count the whole wait once and nothing each after it: their mean is
 * the worker's rate. */
static void
svc_sample(struct sipc__slot *sl, int64_t now)
{
	int64_t d = now - sl->svc_from_ns, m = atomic_load_explicit(
	    &sl->svc_ns, memory_order_relaxed);

	sl->svc_from_ns = now;
	if (d < 0)
		d = 0;
	if (d > UINT32_MAX / 2)
		d = UINT32_MAX / 2;
	m = m == 0 ? d + 1 : m + (d - m) / 8;
	atomic_store_explicit(&sl->svc_ns, (uint32_t)(m > 0 ? m : 1),
	    memory_order_relaxed);
}

/* The descriptor of a REPLY flagged SIPC_FRAME_F_FD, the next queued
 * (wire/wire.h), moved above 2 so that a result zeroed by a host (reply_fd 0)
 * never names it; -1 when none came. */
static int
reply_fd_take(struct reader *r)
{
	int fd = sipc__fdq_take(&r->rx->fdq), nfd;

	if (fd < 0 || fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	(void)close(fd);
	return nfd;
}

static void
on_reply(struct reader *r, struct sipc_frame *f)
{
	struct sipc__slot *sl = r->sl;
	struct sipc_supervisor *s = sl->sup;
	struct sipc_result res;
	struct sipc__req *q;
	struct sipc__usage fu;
	uint32_t code = 0;
	bool won = false, fig, last;
	enum sipc_outcome o = SIPC_OUTCOME_OK;
	int rfd = -1;
	uint64_t rlen = 0;

	if (f->hdr.flags & SIPC_FRAME_F_FD) {
		if (f->hdr.len != SIPC_FRAME_FDLEN_LEN ||
		    (rfd = reply_fd_take(r)) < 0) {
			violation(r, SIPC_E_PROTOCOL, f->hdr.len !=
			    SIPC_FRAME_FDLEN_LEN ? "descriptor reply without "
			    "its length" : "descriptor flag without a "
			    "descriptor", f->hdr.id);
			return;
		}
		rlen = sipc__le64_get(f->payload);
	}
	if (f->hdr.type == SIPC_FT_ERROR) {
		if (f->hdr.len < 4) {
			violation(r, SIPC_E_PROTOCOL, "short ERROR frame",
			    f->hdr.id);
			return;
		}
		code = sipc__le32_get(f->payload);
		memmove(f->payload, f->payload + 4, f->hdr.len - 4);
		f->hdr.len -= 4;
		o = SIPC_OUTCOME_WORKER_ERROR;
	}
	fig = sipc__fig_end(sl, f->hdr.id, &fu);
	pthread_mutex_lock(&s->table.lock);
	q = sipc__table_find(&s->table, f->hdr.id);
	if (!owed_here(sl, q)) {
		pthread_mutex_unlock(&s->table.lock);
		if (rfd >= 0)
			(void)close(rfd);
		violation(r, SIPC_E_PROTOCOL, q == NULL ?
		    "reply to an unknown or already answered id" :
		    "reply to an id this worker does not hold", f->hdr.id);
		return;
	}
	sipc__fig_note(sl, q, fig ? &fu : NULL);
	q->state = SIPC__R_GONE;
	atomic_fetch_add_explicit(&sl->replies_by[r->caller], 1,
	    memory_order_relaxed);
	/* A retiring worker's last answer: the reaper ends it now.  The
	 * wake follows the decrement: a reaper woken before it would find
	 * the request still in flight and look again only at its next
	 * recycle poll (RECYCLE_POLL_MS, reaper.c). */
	last = sl->inflight == 1 && atomic_load(&sl->retiring) !=
	    SIPC_RECYCLE_NONE;
	/* A writer without room sleeps until a reply makes some: that
	 * wake is batched (writer_flush()). */
	if (sl->inflight-- == s->cfg.max_inflight && !r->wake_writer) {
		r->wake_writer = true;
		r->wake_at_ms = sipc__now_ms();
	}
	if (last)
		sipc__reaper_wake(s);
	svc_sample(sl, r->now_ns);
	if (q->fd_counted)
		sl->fds_inflight--;
	q->fd_counted = false;
	sipc__table_remove(&s->table, q);
	/* A late answer to a timed-out request is expected and dropped. */
	won = sipc__outcome_set(s, q, o, 0, true, &res);
	pthread_mutex_unlock(&s->table.lock);
	atomic_fetch_add(&sl->completed, 1);
	if (won) {
		size_t held = r->rx->held;

		/* The reply's bytes go with it, counted until its callback
		 * has returned, even when the outcome waits (a lent
		 * request's, outcome.c). */
		r->rx->held = 0;
		res.reply = f->payload;
		res.reply_len = f->hdr.len;
		res.worker_error_code = code;
		f->payload = NULL;
		if (rfd >= 0) {
			/* The document's length, its bytes in reply_fd. */
			free((void *)res.reply);
			res.reply = NULL;
			res.reply_len = (size_t)rlen;
			res.reply_fd = rfd;
			rfd = -1;
		}
		if (!later_push(r, q, &res, held))
			sipc__outcome_deliver_held(s, q, &res, held);
	}
	/* Answered: the worker is done with its scratch directory. */
	if (q->flags & SIPC_REQ_SCRATCH) {
		char name[64];

		sipc__scratch_name(name, sizeof(name), sl->idx, q->gen,
		    q->id);
		(void)sipc__scratch_remove(s->scratch_fd, name);
	}
	if (rfd >= 0)
		(void)close(rfd);        /* a late reply's, dropped with it */
	sipc__req_unref(s, q);   /* the table's reference */
}

/* Flags a worker may set: SIPC_FRAME_F_FD on a REPLY, when its HELLO
 * offered descriptors; none other. */
static bool
flags_ok(const struct reader *r, const struct sipc_frame *f)
{
	return f->hdr.flags == 0 || (f->hdr.flags == SIPC_FRAME_F_FD &&
	    r->rx->ready && r->sl->fds && f->hdr.type == SIPC_FT_REPLY);
}

static void
on_frame(struct reader *r, struct sipc_frame *f)
{
	atomic_fetch_add(&r->sl->frames_in, 1);
	if (!flags_ok(r, f)) {
		violation(r, SIPC_E_PROTOCOL, "unknown flag bits", f->hdr.id);
		return;
	}
	if (!r->rx->ready) {
		on_hello(r, f);
		return;
	}
	switch (f->hdr.type) {
	case SIPC_FT_ACCEPT:
		on_accept(r, f);
		break;
	case SIPC_FT_REPLY:
	case SIPC_FT_ERROR:
		on_reply(r, f);
		break;
	case SIPC_FT_HEARTBEAT:
		break;
	default:
		violation(r, SIPC_E_PROTOCOL, "unexpected frame type",
		    f->hdr.id);
		break;
	}
}

/* ------------------------------------------------ reply memory */

static bool reader_should_exit(struct reader *r);

static bool
reader_leave(void *arg)
{
	return reader_should_exit(arg);
}

/* Take `len` bytes of mem_ceiling for a frame's payload (frame_reserve()).
 * In the final drain, the callbacks kept for after it hold replies'
 * bytes: they run first, before the drain gives up for want of room. */
static bool
frame_room(struct reader *r, size_t len)
{
	struct sipc_supervisor *s = r->sl->sup;

	if (sipc__mem_try_take(s, len, s->cfg.mem_ceiling))
		return true;
	if (r->caller)
		return false;           /* the reader waits for it */
	writer_flush(r, true);          /* it must not wait with us */
	if (r->rx->final && r->nlater > 0) {
		later_run(r);
		if (sipc__mem_try_take(s, len, s->cfg.mem_ceiling))
			return true;
	}
	return sipc__mem_take_reply(s, len, !r->rx->final, reader_leave, r);
}

/*
 * Before the decoder allocates a payload (when the header completes in
 * p[0..n)), take its bytes from the ceiling: a reply counts before its
 * id is even checked.  A header the decoder will refuse allocates
 * nothing and takes nothing.  When they do not fit, wait: nothing more
 * is read from this channel meanwhile, so the worker's writes block
 * (backpressure).  The wait is not progress: one that outlasts stall_ms
 * ends the worker by the stall rule.  The final drain never waits, nor
 * does a reading caller: false then leaves the frame to the reader.
 */
static bool
frame_reserve(struct reader *r, const uint8_t *p, size_t n)
{
	struct sipc_decoder *d = &r->rx->dec;
	uint8_t h[SIPC_FRAME_HDR_LEN];
	struct sipc_frame_hdr hdr;
	size_t k;

	if (r->rx->held > 0 || d->in_payload || d->error != 0 ||
	    d->have + n < SIPC_FRAME_HDR_LEN)
		return true;
	k = SIPC_FRAME_HDR_LEN - d->have;
	memcpy(h, d->hdr, d->have);
	memcpy(h + d->have, p, k);
	if (sipc__frame_decode_hdr(h, d->max_payload, &hdr) != 0 ||
	    hdr.len == 0)
		return true;
	/* A large payload is the reader's to allocate and read: the
	 * calling thread's malloc arena gives its memory back when the
	 * reply is freed, and a fresh buffer cost a page fault per 4 KiB
	 * on every call (1 MiB: 7 ms against 0.5 ms). */
	if (r->caller && hdr.len > CALLER_PAYLOAD_MAX)
		return false;
	if (!frame_room(r, hdr.len))
		return false;
	r->rx->held = hdr.len;
	return true;
}

/* No room before the reader had to stop: the rest of the stream is not
 * decoded, so a missing ACCEPT proves nothing (settle.c). */
static void
mem_give_up(struct reader *r)
{
	struct sipc__slot *sl = r->sl;

	sipc__log(sl->sup, SIPC_LOG_WARN, sl, "no room under mem_ceiling for "
	    "a frame: the rest of the worker's stream is not read");
	pthread_mutex_lock(&sl->lock);
	sl->stream_cut = true;
	pthread_mutex_unlock(&sl->lock);
	r->rx->proto_done = true;
}

/* A frame is complete: act on it, then return its bytes (a delivered
 * reply belongs to the caller once its callback has returned). */
static void
frame_done(struct reader *r, struct sipc_frame *f)
{
	on_frame(r, f);
	free(f->payload);
	sipc__mem_release(r->sl->sup, r->rx->held);
	r->rx->held = 0;
}

/* The bytes of a read are decoded (`left` of them not, for now): a
 * descriptor that came with them and no frame claims is a violation
 * (wire/wire.h); it is closed with the decode state. */
static void
fds_check(struct reader *r, size_t left)
{
	if (left == 0 && !r->rx->proto_done &&
	    !sipc__fdq_settled(&r->rx->fdq, &r->rx->dec))
		violation(r, SIPC_E_PROTOCOL, r->rx->fdq.bad ? "descriptors "
		    "cut or too many" : "a descriptor no frame claims", 0);
}

static void
proto_bytes(struct reader *r, const uint8_t *p, size_t n)
{
	struct sipc_frame f;
	bool done;
	long used;

	r->now_ns = sipc__now_ns();
	atomic_fetch_add(&r->sl->bytes_in, n);
	atomic_store(&r->sl->last_progress_ms, r->now_ns / 1000000);
	while (n > 0 && !r->rx->proto_done) {
		if (!frame_reserve(r, p, n)) {
			if (r->caller) {
				/* No room, or a large payload: still in
				 * rx->buf, the reader decodes them first
				 * when it has the socket back. */
				r->rx->pend = p;
				r->rx->pend_len = n;
			} else {
				mem_give_up(r);
			}
			break;
		}
		used = sipc__decoder_feed(&r->rx->dec, p, n, &f, &done);
		if (used < 0) {
			violation(r, (int)used, sipc_strerror((int)used), 0);
			break;
		}
		p += used;
		n -= (size_t)used;
		if (done)
			frame_done(r, &f);
	}
	fds_check(r, n);
	writer_flush(r, false);
}

/* The protocol channel ended (EOF or error) with the process maybe
 * alive: tell the reaper, which decides. */
static void
proto_lost(struct reader *r)
{
	struct sipc__slot *sl = r->sl;

	/* A frame cut off by the end of the stream is a violation too
	 * (it is counted; the worker is ending anyway). */
	if (!r->rx->proto_done && sipc__decoder_partial(&r->rx->dec)) {
		r->rx->at_eof = true;
		violation(r, SIPC_E_PROTOCOL, "truncated frame at end of stream",
		    0);
	}
	r->rx->proto_done = true;
	pthread_mutex_lock(&sl->lock);
	sl->channel_lost = true;
	pthread_cond_broadcast(&sl->cv_writer);
	pthread_mutex_unlock(&sl->lock);
	sipc__reaper_wake(sl->sup);
}

/* recv() that never waits; before HELLO it also takes the descriptor
 * the HELLO may carry (conn/start_counter.c). */
static ssize_t
proto_recv(struct reader *r, int fd, void *buf, size_t len)
{
	if (r->rx->ready)
		return sipc__recv_fds(fd, buf, len, MSG_DONTWAIT, &r->rx->fdq);
	return sipc__recv_hello(fd, buf, len, &r->rx->hello_fd);
}

/* A large payload is read straight into its final buffer: one copy
 * fewer than going through the read buffer.  Returns the recv() result,
 * or 0 with *used false when the direct path does not apply. */
static ssize_t
proto_direct(struct reader *r, int fd, bool nonblock, size_t max, bool *used)
{
	struct sipc_frame f;
	uint8_t *dst;
	size_t need = sipc__decoder_direct(&r->rx->dec, &dst);
	bool done;
	ssize_t n;

	*used = need >= DIRECT_MIN;
	if (!*used)
		return 0;
	n = sipc__recv_fds(fd, dst, need < max ? need : max,
	    nonblock ? MSG_DONTWAIT : 0, &r->rx->fdq);
	if (n <= 0)
		return n;
	r->now_ns = sipc__now_ns();
	atomic_fetch_add(&r->sl->bytes_in, (uint64_t)n);
	atomic_store(&r->sl->last_progress_ms, r->now_ns / 1000000);
	sipc__decoder_direct_done(&r->rx->dec, (size_t)n, &f, &done);
	if (done)
		frame_done(r, &f);
	fds_check(r, 0);
	writer_flush(r, false);
	return n;
}

/* Read what one descriptor has: one read, or (`all`) until it has no
 * more.  Never blocks: the diagnostics pipe is non-blocking, and the
 * socket's bytes may have been read by a caller since the wake-up.
 * Returns false at EOF/error. */
bool
sipc__reader_drain(struct reader *r, int fd, bool proto, bool all)
{
	uint8_t *buf = proto ? r->rx->buf : r->dbuf;
	ssize_t n;
	bool direct = false;

	for (;;) {
		if (proto && (n = proto_direct(r, fd, true, SIZE_MAX, &direct),
		    direct)) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return true;
			if (n <= 0)
				return false;
			if (!all || r->rx->proto_done || r->rx->pend_len > 0)
				return true;
			continue;
		}
		n = proto ? proto_recv(r, fd, buf, READ_BUF) :
		    read(fd, buf, READ_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n <= 0)
			return false;
		if (proto)
			proto_bytes(r, buf, (size_t)n);
		else
			sipc__diag_feed(&r->diag, r->sl, buf, (size_t)n);
		if (!all || (proto && (r->rx->proto_done || r->rx->pend_len > 0)))
			return true;
	}
}

/* Bytes readable on `fd` now (FIONREAD), 0 when it cannot say. */
static size_t
readable(int fd)
{
	int avail = 0;

	return ioctl(fd, FIONREAD, &avail) == 0 && avail > 0 ?
	    (size_t)avail : 0;
}

/* The final drain stopped with `left` bytes of the stream unread: an
 * ACCEPT among them is never seen, so a missing one proves nothing
 * (settle.c).  Said once. */
static void
final_cut(struct reader *r, size_t left)
{
	struct sipc__slot *sl = r->sl;
	bool was;

	pthread_mutex_lock(&sl->lock);
	was = sl->stream_cut;
	sl->stream_cut = true;
	pthread_mutex_unlock(&sl->lock);
	if (!was)
		sipc__log(sl->sup, SIPC_LOG_WARN, sl, "the worker's stream was "
		    "not read to its end (%zu bytes left): what it started "
		    "is not proven", left);
}

/* One read of at most `max` bytes of the socket, decoded. */
static ssize_t
final_read(struct reader *r, int fd, size_t max)
{
	bool direct = false;
	ssize_t n = proto_direct(r, fd, true, max, &direct);

	if (direct)
		return n;
	n = proto_recv(r, fd, r->rx->buf, max < READ_BUF ? max : READ_BUF);
	if (n > 0)
		proto_bytes(r, r->rx->buf, (size_t)n);
	return n;
}

/*
 * The socket's final drain, once the worker is gone.  What was buffered
 * at that moment (FIONREAD) is what the worker wrote: it is decoded
 * whole, however long that takes (callbacks wait until after it,
 * later_push()), since an ACCEPT left unread would make a request that
 * started look never started.  Past that snapshot only a descendant
 * that kept the channel (a daemon, a setsid() escapee) writes: its new
 * bytes are read until `until` at most (plus the time callbacks took
 * meanwhile), so it cannot keep this thread, nor the reaper that joins
 * it, from finishing.  Any stop with bytes unread (the bound, a read
 * error, no room, a violation) marks the stream cut.  Returns true at
 * end of stream.
 */
static bool
final_drain_proto(struct reader *r, int fd, int64_t until)
{
	size_t snap = readable(fd), left;
	bool eof = false, err = false;
	ssize_t n;
	char c;

	while (!r->rx->proto_done) {
		if (snap == 0 && sipc__now_ms() >= until + r->later_ms)
			break;
		n = final_read(r, fd, snap > 0 ? snap : READ_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* A worker that died with frames of ours unread
			 * leaves ECONNRESET, reported once everything it
			 * wrote has been read: the end of its stream. */
			eof = n == 0 || errno == ECONNRESET;
			err = !eof && errno != EAGAIN && errno != EWOULDBLOCK;
			break;
		}
		snap = (size_t)n < snap ? snap - (size_t)n : 0;
	}
	left = readable(fd);
	if (!eof && (left > 0 || snap > 0 || err))
		final_cut(r, left > snap ? left : snap);
	return eof || (!err && recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) == 0);
}

/* The diagnostics pipe's final drain: what was buffered when the worker
 * was seen gone, until `until` at most.  A cut loses only the end of a
 * log (no conclusion is drawn from it) and is said. */
static void
final_drain_diag(struct reader *r, int fd, int64_t until)
{
	size_t left = readable(fd), want;
	ssize_t n;

	while (left > 0 && sipc__now_ms() < until) {
		want = left < READ_BUF ? left : READ_BUF;
		n = read(fd, r->dbuf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		sipc__diag_feed(&r->diag, r->sl, r->dbuf, (size_t)n);
		left -= (size_t)n;
	}
	if (left > 0)
		sipc__log(r->sl->sup, SIPC_LOG_WARN, r->sl, "worker "
		    "diagnostics cut at its end: %zu bytes not read", left);
}

static bool
reader_should_exit(struct reader *r)
{
	struct sipc__slot *sl = r->sl;
	bool gone;

	pthread_mutex_lock(&sl->lock);
	gone = sl->proc_gone || sl->stop;
	pthread_mutex_unlock(&sl->lock);
	return gone;
}

/* Reader thread, holding the socket: decode what a caller read and
 * left (a frame without room, or a large payload) before reading on. */
static void
decode_pend(struct reader *r)
{
	struct sipc__rx *rx = r->rx;
	size_t n = rx->pend_len;

	rx->pend_len = 0;
	if (n > 0 && !rx->proto_done)
		proto_bytes(r, rx->pend, n);
}

/* Reader thread: read the socket, if it is still this thread's (a
 * caller may have taken it since the wake-up).  Bytes a caller left
 * undecoded (no room for a frame) go first. */
static void
reader_proto(struct reader *r, bool readable)
{
	struct sipc__slot *sl = r->sl;
	struct sipc__rx *rx = r->rx;

	pthread_mutex_lock(&sl->lock);
	if (sl->rd_owner != SIPC__RD_READER) {
		pthread_mutex_unlock(&sl->lock);
		return;
	}
	sl->rd_busy = true;
	pthread_mutex_unlock(&sl->lock);
	decode_pend(r);
	if (readable && !rx->proto_done &&
	    !sipc__reader_drain(r, sl->proto_fd, true, false) &&
	    !rx->proto_done)
		proto_lost(r);
	pthread_mutex_lock(&sl->lock);
	sl->rd_busy = false;
	if (rx->proto_done)
		(void)sipc__epoll_in(rx->epfd, EPOLL_CTL_DEL, sl->proto_fd,
		    RX_PROTO);
	pthread_mutex_unlock(&sl->lock);
}

/* Reader thread, leaving its loop: the socket back for the final
 * drain, for good (rd_busy stays set: no caller takes it again). */
static void
reader_reclaim(struct reader *r)
{
	struct sipc__slot *sl = r->sl;

	pthread_mutex_lock(&sl->lock);
	while (sipc__callread_revoke(sl))
		pthread_cond_wait(&sl->cv_read, &sl->lock);
	sl->rd_busy = true;
	pthread_mutex_unlock(&sl->lock);
}

static void
reader_loop(struct reader *r)
{
	struct sipc__slot *sl = r->sl;
	struct sipc__rx *rx = r->rx;
	struct epoll_event evs[3];
	bool proto, diag, wake;
	int64_t until, left;
	uint64_t ev;
	int i, n, timeout;

	for (;;) {
		/* An owed writer wake waits for more replies at most
		 * SIPC__REFILL_WAIT_MS, whatever else keeps this thread
		 * busy (a chatty worker's diagnostics). */
		timeout = -1;
		if (r->wake_writer) {
			left = r->wake_at_ms + SIPC__REFILL_WAIT_MS -
			    sipc__now_ms();
			if (left <= 0) {
				writer_flush(r, true);
				continue;
			}
			timeout = (int)left;
		}
		n = epoll_wait(rx->epfd, evs, 3, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		proto = diag = wake = false;
		for (i = 0; i < n; i++) {
			proto |= evs[i].data.u32 == RX_PROTO;
			diag |= evs[i].data.u32 == RX_DIAG;
			wake |= evs[i].data.u32 == RX_WAKE;
		}
		if (proto)
			reader_proto(r, true);
		if (diag && !sipc__reader_drain(r, sl->diag_fd, false, false)) {
			r->diag_done = true;
			(void)sipc__epoll_in(rx->epfd, EPOLL_CTL_DEL, sl->diag_fd,
			    RX_DIAG);
		}
		if (wake) {
			(void)read(sl->wake_fd, &ev, sizeof(ev));
			if (reader_should_exit(r))
				break;
			reader_proto(r, false);   /* a caller's leftovers */
		}
	}
	/* The process is gone: what it wrote is still buffered in the
	 * kernel.  Take all of that (replies first), then a descendant's
	 * new bytes, bounded; then the callbacks.  The worker is gone, so
	 * never wait for reply room. */
	reader_reclaim(r);
	rx->final = true;
	decode_pend(r);
	until = sipc__now_ms() + SIPC__FINAL_DRAIN_MS;
	if (!rx->proto_done && final_drain_proto(r, sl->proto_fd, until) &&
	    !rx->proto_done && sipc__decoder_partial(&rx->dec)) {
		rx->at_eof = true;
		violation(r, SIPC_E_PROTOCOL, "truncated frame at end of stream",
		    0);
	}
	later_run(r);
	if (!r->diag_done)
		final_drain_diag(r, sl->diag_fd, until + r->later_ms);
	sipc__diag_flush(&r->diag, sl);
}

/* The decode state and the interest set; NULL when out of memory or
 * descriptors. */
static struct sipc__rx *
rx_new(struct sipc__slot *sl)
{
	struct sipc__rx *rx = calloc(1, sizeof(*rx));

	if (rx == NULL)
		return NULL;
	sipc__decoder_init(&rx->dec, sl->sup->cfg.max_payload);
	rx->hello_fd = -1;
	sipc__fdq_init(&rx->fdq);
	rx->buf = malloc(READ_BUF);
	rx->epfd = epoll_create1(EPOLL_CLOEXEC);
	rx->give_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rx->buf == NULL || rx->epfd < 0 || rx->give_fd < 0 ||
	    sipc__epoll_in(rx->epfd, EPOLL_CTL_ADD, sl->proto_fd,
	    RX_PROTO) < 0 ||
	    sipc__epoll_in(rx->epfd, EPOLL_CTL_ADD, sl->diag_fd, RX_DIAG) < 0 ||
	    sipc__epoll_in(rx->epfd, EPOLL_CTL_ADD, sl->wake_fd, RX_WAKE) < 0) {
		if (rx->epfd >= 0)
			close(rx->epfd);
		if (rx->give_fd >= 0)
			close(rx->give_fd);
		free(rx->buf);
		free(rx);
		return NULL;
	}
	return rx;
}

static void
rx_free(struct sipc__slot *sl, struct sipc__rx *rx)
{
	sipc__decoder_free(&rx->dec);
	sipc__mem_release(sl->sup, rx->held);   /* a frame cut short */
	close(rx->epfd);
	close(rx->give_fd);
	if (rx->hello_fd >= 0)
		close(rx->hello_fd);    /* no HELLO came */
	sipc__fdq_clear(&rx->fdq);      /* unclaimed, or after a violation */
	free(rx->buf);
	free(rx);
}

static void *
reader_main(void *arg)
{
	struct reader r;
	struct sipc__slot *sl = arg;

	sipc__lib_thread = true;
	sipc__thread_name("sipc-rd", sl);
	memset(&r, 0, sizeof(r));
	r.sl = sl;
	/* Non-blocking: a descendant that kept the worker's stdout/stderr
	 * (a daemon, a setsid escapee) holds the pipe open after the worker
	 * died, and the final drain must not wait for it. */
	(void)fcntl(sl->diag_fd, F_SETFL, O_NONBLOCK);
	r.rx = rx_new(sl);
	r.dbuf = malloc(READ_BUF);
	if (r.rx == NULL || r.dbuf == NULL ||
	    sipc__diag_init(&r.diag, sl->sup->cfg.diag_line_max) < 0) {
		sipc__log(sl->sup, SIPC_LOG_ERROR, sl, "reader: out of memory");
		/* Nothing read yet: the channel is lost (as proto_lost()),
		 * and the reaper ends the worker. */
		pthread_mutex_lock(&sl->lock);
		sl->channel_lost = true;
		pthread_cond_broadcast(&sl->cv_writer);
		pthread_mutex_unlock(&sl->lock);
		sipc__reaper_wake(sl->sup);
	} else {
		/* A caller may take the socket from now on (slot lock). */
		pthread_mutex_lock(&sl->lock);
		sl->rx = r.rx;
		sl->rd_give_fd = r.rx->give_fd;
		sl->rd_epfd = r.rx->epfd;
		pthread_mutex_unlock(&sl->lock);
		reader_loop(&r);
		pthread_mutex_lock(&sl->lock);
		sl->rx = NULL;
		sl->rd_give_fd = sl->rd_epfd = -1;
		pthread_mutex_unlock(&sl->lock);
	}
	if (r.rx != NULL)
		rx_free(sl, r.rx);
	free(r.later);
	free(r.dbuf);
	sipc__diag_free(&r.diag);
	return NULL;
}

/* ------------------------------------------------------------ control */

int
sipc__worker_threads_start(struct sipc__slot *sl)
{
	int rc;

	/* Under the lock: a submitting thread reads these to decide
	 * whether it may write directly. */
	pthread_mutex_lock(&sl->lock);
	sl->stop = sl->proc_gone = sl->channel_lost = sl->violation = false;
	sl->stream_cut = false;
	sl->rd_owner = SIPC__RD_READER;
	sl->rd_busy = sl->rd_revoke = false;
	pthread_mutex_unlock(&sl->lock);
	/* Room for a 1 MiB frame in the socket (wire/wire.h); kernel memory,
	 * used only while bytes are queued. */
	(void)setsockopt(sl->proto_fd, SOL_SOCKET, SO_SNDBUF,
	    &(int){ SIPC__CHANNEL_SNDBUF }, sizeof(int));
	/* Without it the reader only wakes the writer (no refill). */
	sl->rbatch = sipc__wbatch_new();
	if ((rc = pthread_create(&sl->reader, NULL, reader_main, sl)) != 0) {
		free(sl->rbatch);
		sl->rbatch = NULL;
		return -rc;
	}
	if ((rc = pthread_create(&sl->writer, NULL, sipc__writer_main, sl)) != 0) {
		pthread_mutex_lock(&sl->lock);
		sl->stop = true;
		pthread_mutex_unlock(&sl->lock);
		(void)eventfd_write(sl->wake_fd, 1);
		pthread_join(sl->reader, NULL);
		pthread_mutex_lock(&sl->lock);
		sipc__wbatch_drop(sl);
		pthread_mutex_unlock(&sl->lock);
		free(sl->rbatch);
		sl->rbatch = NULL;
		return -rc;
	}
	sl->threads = true;
	return 0;
}

/*
 * Reaper thread, after the process ended (or on destroy).  The reader
 * first drains what the dead worker left in the socket, so replies that
 * made it out are delivered and ACCEPTs are counted before the reaper
 * settles what is left.  Then the writer is woken (shutdown() breaks a
 * blocked sendmsg) and both are joined.
 */
void
sipc__worker_threads_stop(struct sipc__slot *sl)
{
	if (!sl->threads)
		return;
	pthread_mutex_lock(&sl->lock);
	sl->proc_gone = true;
	pthread_mutex_unlock(&sl->lock);
	(void)eventfd_write(sl->wake_fd, 1);
	pthread_join(sl->reader, NULL);
	pthread_mutex_lock(&sl->lock);
	sl->stop = true;
	pthread_cond_broadcast(&sl->cv_writer);
	/* A caller writing directly uses proto_fd, which the reaper closes
	 * after this: wait for it (its write does not block). */
	while (sl->sending == SIPC__SEND_CALLER)
		pthread_cond_wait(&sl->cv_writer, &sl->lock);
	pthread_mutex_unlock(&sl->lock);
	(void)shutdown(sl->proto_fd, SHUT_RDWR);
	pthread_join(sl->writer, NULL);
	/* A frame a caller began and the writer did not finish: its
	 * request is settled with the others written to this generation.
	 * (sipc__req_unref() under the slot lock: the table lock nests
	 * inside it, in the one order.) */
	pthread_mutex_lock(&sl->lock);
	sipc__req_send_unref(sl->sup, sl->rest);
	sl->rest = NULL;
	/* Likewise the rest of a batch the reader began. */
	sipc__wbatch_drop(sl);
	sl->sending = SIPC__SEND_NONE;
	pthread_mutex_unlock(&sl->lock);
	free(sl->rbatch);
	sl->rbatch = NULL;
	sl->threads = false;
}
