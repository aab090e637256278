/*
 * writer.c - a worker slot's writer thread, and the direct path.
 *
 * writer: takes requests from the slot's bounded ring (slot lock), marks
 *   them written (table lock, nested inside the slot lock), and sends
 *   many frames per sendmsg().  It never holds a lock while writing, so a
 *   worker that stops reading blocks only its own writer; the reaper's
 *   stall detection ends it.  It sleeps on cv_writer; a push wakes it
 *   only when it could send (supervisor.c), the reader when a reply
 *   gives it room again (reader.c).
 * direct path: a submitting thread that finds the worker ready and
 *   idle (nothing in flight), the ring empty, the channel free and the
 *   pool lightly loaded (sipc__direct_claim()) writes its own request
 *   (non-blocking) instead of waking the writer for it: one hand-off
 *   fewer per request.
 * reader refill: when replies give room back to a writer that had none,
 *   the reader (awake anyway) sends the ring's head itself, without
 *   blocking, instead of waking the writer (sipc__reader_refill()).
 * Whoever sends holds the channel (`sending`, slot lock), so frames never
 * interleave; a frame a caller could not finish, or the part of a batch
 * the socket did not take from the reader, is the writer's first job
 * (`rest`, `handoff`).  Lock order: slot -> table.  No lock is held while a
 * frame is written or the journal appended to.
 */
#include <errno.h>
#include <sys/stat.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "wire/wire.h"
#include "pool/pool.h"
#include "os/os.h"

#define WRITE_BATCH 64            /* frames per sendmsg */
#define WRITE_BATCH_BYTES (1u << 20)
/* An asynchronous submit is written directly to an idle worker while
 * the pool holds at most this many pending requests a worker. */
#define SIPC__DIRECT_DEPTH 8u

/* A frame's head: its header, and a REQUEST's deadline in front of its
 * payload when the worker reads them (wire/wire.h, SIPC_FRAME_F_DEADLINE). */
#define HEAD_MAX (SIPC_FRAME_HDR_LEN + SIPC_FRAME_DEADLINE_LEN)

/* The deadline a REQUEST frame of q to this worker carries; 0: none.
 * sl->deadlines is set at HELLO, before the slot is READY. */
static int64_t
frame_deadline(const struct sipc__slot *sl, const struct sipc__req *q)
{
	if (!sl->deadlines || q->deadline_ms <= 0 ||
	    q->len > SIPC_FRAME_MAX_PAYLOAD - SIPC_FRAME_DEADLINE_LEN)
		return 0;
	return q->deadline_ms;
}

/* The bytes of q's REQUEST frame on this worker's channel. */
static size_t
frame_bytes(const struct sipc__slot *sl, const struct sipc__req *q)
{
	return SIPC_FRAME_HDR_LEN + (size_t)q->len +
	    (frame_deadline(sl, q) > 0 ? SIPC_FRAME_DEADLINE_LEN : 0);
}

/* One frame's head and payload as (up to) two iovecs; `fd`: the
 * payload is a document's length, its descriptor goes with the frame. */
static void
put_frame(struct iovec *iov, int *n, uint8_t *hdr, uint8_t type,
          uint64_t id, const void *payload, uint32_t len, int64_t deadline,
          bool fd)
{
	struct sipc_frame_hdr h = { .type = type, .id = id, .len = len,
	    .flags = fd ? SIPC_FRAME_F_FD : 0 };
	size_t head = SIPC_FRAME_HDR_LEN;

	if (deadline > 0) {
		h.flags |= SIPC_FRAME_F_DEADLINE;
		h.len += SIPC_FRAME_DEADLINE_LEN;
		sipc__le64_put(hdr + head, (uint64_t)deadline);
		head += SIPC_FRAME_DEADLINE_LEN;
	}
	sipc__frame_encode_hdr(hdr, &h);
	iov[*n].iov_base = hdr;
	iov[(*n)++].iov_len = head;
	if (len > 0) {
		iov[*n].iov_base = (void *)payload;
		iov[(*n)++].iov_len = len;
	}
}

/* Step past `w` bytes already sent. */
static void
iov_advance(struct iovec **iovp, int *n, size_t w)
{
	struct iovec *iov = *iovp;

	while (*n > 0 && w >= iov->iov_len) {
		w -= iov->iov_len;
		iov++;
		(*n)--;
	}
	if (*n > 0) {
		iov->iov_base = (uint8_t *)iov->iov_base + w;
		iov->iov_len -= w;
	}
	*iovp = iov;
}

/* Where the descriptors of a run of frames ride (SIPC_FRAME_F_FD):
 * at[i] is the offset of its frame's first byte from the run's first,
 * ascending. */
struct fdmarks {
	size_t at[WRITE_BATCH + 1];
	int fd[WRITE_BATCH + 1];
	int n;
};

/*
 * sendmsg() of iov[0..n), which begin `off` bytes into a run of frames
 * whose descriptors are `m` (NULL: none).  A descriptor goes as
 * SCM_RIGHTS with the send that begins at its frame's first byte, and
 * a send stops before the next such byte: the receiver gets each with
 * the read that holds its frame's start, and a unix stream socket never
 * joins two sends that carry descriptors into one read (wire/wire.h).
 */
static ssize_t
send_iov(struct sipc__slot *sl, struct iovec *iov, int n, int flags,
         size_t off, const struct fdmarks *m)
{
	struct iovec cut[WRITE_BATCH * 3 + 2];
	struct iovec *v = iov;
	size_t vlen = (size_t)n, left = SIZE_MAX;
	int k = 0, fd = -1, cnt;
	ssize_t w;

	while (m != NULL && k < m->n && m->at[k] < off)
		k++;
	if (m != NULL && k < m->n) {
		if (m->at[k] == off)
			fd = m->fd[k++];
		if (k < m->n)
			left = m->at[k] - off;
		for (cnt = 0; cnt < n && left > 0; cnt++) {
			cut[cnt] = iov[cnt];
			if (cut[cnt].iov_len > left)
				cut[cnt].iov_len = left;
			left -= cut[cnt].iov_len;
		}
		v = cut;
		vlen = (size_t)cnt;
	}
	w = sipc__send_fd(sl->proto_fd, v, vlen, fd, flags);
	if (w > 0) {
		atomic_fetch_add(&sl->bytes_out, (uint64_t)w);
		atomic_store(&sl->last_progress_ms, sipc__now_ms());
	}
	return w;
}

/* Slot lock held.  Can the writer do something now? */
static bool
writer_has_work(struct sipc__slot *sl, unsigned *ret_room)
{
	struct sipc_supervisor *s = sl->sup;
	unsigned inflight;

	if (sl->stop || sl->channel_lost)
		return true;
	/* A caller or the reader is sending: the channel is theirs. */
	if (sl->sending != SIPC__SEND_NONE || sl->state != SIPC_WS_READY)
		return false;
	/* inflight is atomic; a reply that frees room signals cv_writer
	 * after taking the slot lock held here, so no wake-up is lost. */
	inflight = atomic_load(&sl->inflight);
	*ret_room = inflight < s->cfg.max_inflight ?
	    s->cfg.max_inflight - inflight : 0;
	/* A retiring worker takes nothing more (max_requests counts what
	 * it was given, so never more than that). */
	if (atomic_load(&sl->retiring) != SIPC_RECYCLE_NONE)
		*ret_room = 0;
	else if (s->cfg.max_requests != 0 &&
	    *ret_room > s->cfg.max_requests - sl->gen_written)
		*ret_room = s->cfg.max_requests - sl->gen_written;
	if (sl->ncancels == 0 && sl->rest == NULL && sl->handoff == NULL &&
	    (*ret_room == 0 || sl->ring.count == 0))
		return false;
	/* Nothing but the caller's own request may be on the wire while
	 * the caller reads the socket: the reply to anything else would
	 * be handled, and its callback run, on the caller's thread.  Ask
	 * for the socket back; the caller signals cv_writer then. */
	return !sipc__callread_revoke(sl);
}

/* Slot and table locks held: `q` goes to this generation's worker now.
 * It has no place on the channel yet (frame_commit()). */
static void
mark_written(struct sipc__slot *sl, struct sipc__req *q)
{
	int64_t now;

	q->state = SIPC__R_WRITTEN;
	q->slot = (int)sl->idx;
	q->gen = sl->generation;
	q->pid = sl->pid;
	/* one clock reading for both uses, none when neither needs it */
	now = q->attempts == 0 || sl->inflight == 0 ? sipc__now_ns() : 0;
	if (q->attempts++ == 0)
		q->written_ns = now;
	q->pos = 0;
	/* figures.c: alone if nothing else is in flight now, and still
	 * alone at its reply if nothing is written after it */
	q->fig_alone = sl->inflight == 0;
	q->fig_seq = ++sl->fig_writes;
	/* The last request its max_requests allows: it retires (the
	 * reaper ends it once nothing is in flight). */
	if (++sl->gen_written == sl->sup->cfg.max_requests &&
	    sl->sup->cfg.max_requests != 0 &&
	    atomic_load(&sl->retiring) == SIPC_RECYCLE_NONE) {
		atomic_store(&sl->retiring, SIPC_RECYCLE_REQUESTS);
		/* the next request goes to a ready spare, not behind
		 * this worker's restart */
		(void)sipc__slot_hand_over(sl);
		sipc__reaper_wake(sl->sup);
	}
	if (sl->inflight++ == 0)
		sl->svc_from_ns = now;
	/* A descriptor goes only to a worker that takes them, within its
	 * bound; one that may not is refused before its frame (fd_ok()). */
	q->fd_counted = q->fd >= 0 && sl->fds &&
	    sl->fds_inflight < sl->sup->cfg.max_fds_in_flight;
	if (q->fd_counted)
		sl->fds_inflight++;
}

/* No lock held, before `q`'s frame is sent: 0 when it may go, or why
 * not (its descriptor was not counted at mark_written()).  fd_counted
 * is written under the table lock by this very thread, or by the
 * one that gave the frame to it (`rest`, hand-off). */
static int
fd_ok(const struct sipc__slot *sl, const struct sipc__req *q)
{
	if (q->fd < 0 || q->fd_counted)
		return 0;
	return sl->fds ? SIPC_E_FULL : SIPC_E_NOFD;
}

/*
 * Slot lock held, by the thread that holds the channel (`sending`): the
 * REQUEST frame of `q` is committed (its WRITTEN record accepted, its
 * bytes the next on the wire), and takes the next place on the
 * channel, the start counter's unit (CONTRACT A5).  The one place a
 * position is given: a request taken and then refused (its record
 * refused, sipc__outcome_unsend()) never had one, so it cannot shift
 * the places of the frames behind it.  Settle reads `pos` only after
 * the channel is released and the threads joined (reader.c).
 */
static void
frame_commit(struct sipc__slot *sl, struct sipc__req *q)
{
	q->pos = ++sl->npos;
}

/* Slot lock held: take up to `room` requests and mark them written. */
static int
writer_take(struct sipc__slot *sl, unsigned room, struct sipc__req **batch)
{
	struct sipc_supervisor *s = sl->sup;
	struct sipc__req *q;
	size_t bytes = 0;
	int n = 0;

	struct sipc__req *drop[WRITE_BATCH];
	int ndrop = 0, i;

	if (room == 0 || sl->ring.count == 0)
		return 0;
	pthread_mutex_lock(&s->table.lock);
	while (n < WRITE_BATCH && (unsigned)n < room &&
	    bytes < WRITE_BATCH_BYTES && ndrop < WRITE_BATCH &&
	    (q = sipc__ring_pop(&sl->ring)) != NULL) {
		if (q->delivered || q->state == SIPC__R_GONE) {
			/* timed out while being moved between rings */
			drop[ndrop++] = q;
			continue;
		}
		mark_written(sl, q);
		bytes += q->len;
		batch[n++] = q;
	}
	pthread_mutex_unlock(&s->table.lock);
	if (n > 0 || ndrop > 0)
		pthread_cond_broadcast(&sl->cv_space);
	for (i = 0; i < ndrop; i++)
		sipc__req_send_unref(s, drop[i]);
	return n;
}

/* What is sent in one go, in wire order: the rest of a frame a caller
 * began, CANCELs, new requests.  The writer builds its own on its stack;
 * the reader's lives in the slot (rbatch), since a part the socket did
 * not take is the writer's to finish (handoff). */
struct sipc__wbatch {
	struct sipc__req *rest;
	size_t rest_off;
	struct sipc__req *req[WRITE_BATCH];
	/* Where each request's frame ends, from the batch's first byte:
	 * its send hold (the ring's reference) ends once that byte is
	 * sent, for the requests before req[nheld] and `rest` (!rest_held)
	 * already (wbatch_sent()). */
	size_t end[WRITE_BATCH], rest_end;
	int nheld;
	bool rest_held;
	uint64_t cancels[WRITE_BATCH];
	int nreq, ncancel, niov, nframes;
	size_t bytes;                 /* on the wire, from the first byte */
	struct fdmarks fds;           /* the frames' descriptors */
	uint8_t hdrs[WRITE_BATCH * 2 + 1][HEAD_MAX];
	struct iovec iov[WRITE_BATCH * 3 + 2];
};

/* Slot lock held: take the next batch and claim the channel for `who`. */
static void
writer_collect(struct sipc__slot *sl, unsigned room, struct sipc__wbatch *b,
               enum sipc__sender who)
{
	b->rest = sl->rest;
	b->rest_off = sl->rest_off;
	sl->rest = NULL;
	b->ncancel = 0;
	while (sl->ncancels > 0 && b->ncancel < WRITE_BATCH)
		b->cancels[b->ncancel++] = sl->cancels[--sl->ncancels];
	b->nreq = writer_take(sl, room, b->req);
	atomic_fetch_add_explicit(&sl->taken_by[who], (uint64_t)b->nreq,
	    memory_order_relaxed);
	sl->sending = who;
}

/* The byte offsets at which the batch's request frames end. */
static void
wbatch_layout(const struct sipc__slot *sl, struct sipc__wbatch *b)
{
	int i;

	b->rest_end = 0;
	b->fds.n = 0;
	if (b->rest != NULL) {
		b->rest_end = frame_bytes(sl, b->rest);
		if (b->rest->fd >= 0) {
			b->fds.at[b->fds.n] = 0;
			b->fds.fd[b->fds.n++] = b->rest->fd;
		}
	}
	b->bytes = b->rest_end + (size_t)b->ncancel * SIPC_FRAME_HDR_LEN;
	for (i = 0; i < b->nreq; i++) {
		if (b->req[i]->fd >= 0) {
			b->fds.at[b->fds.n] = b->bytes;
			b->fds.fd[b->fds.n++] = b->req[i]->fd;
		}
		b->bytes += frame_bytes(sl, b->req[i]);
		b->end[i] = b->bytes;
	}
	b->nheld = 0;
	b->rest_held = b->rest != NULL;
	b->nframes = b->nreq + b->ncancel + (b->rest != NULL);
}

/* No lock held, before `q`'s frame is sent: its empty scratch directory
 * in its worker generation's (SIPC_REQ_SCRATCH).  0 or -errno. */
static int
scratch_make(struct sipc__slot *sl, const struct sipc__req *q)
{
	char name[64];

	sipc__scratch_name(name, sizeof(name), sl->idx, q->gen, q->id);
	return sipc__scratch_mkdir(sl->sup->scratch_fd, name,
	    sl->sup->scratch_uid, sl->sup->scratch_gid);
}

/* No lock held: journal the batch's requests and lay out its frames.
 * A request that could not be journalled as written is not sent: it
 * gets its outcome here and leaves the batch. */
static void
wbatch_build(struct sipc__slot *sl, struct sipc__wbatch *b)
{
	struct sipc_supervisor *s = sl->sup;
	int i, ns, h = 0, rc;

	b->niov = 0;
	/* Journalled as written by the caller that began it. */
	if (b->rest != NULL)
		put_frame(b->iov, &b->niov, b->hdrs[h++], SIPC_FT_REQUEST,
		    b->rest->id, b->rest->payload, b->rest->len,
		    frame_deadline(sl, b->rest), b->rest->fd >= 0);
	for (i = 0; i < b->ncancel; i++)
		put_frame(b->iov, &b->niov, b->hdrs[h++], SIPC_FT_CANCEL,
		    b->cancels[i], NULL, 0, 0, false);
	for (i = ns = 0; i < b->nreq; i++) {
		if ((rc = fd_ok(sl, b->req[i])) < 0) {
			sipc__outcome_unsend(s, sl, b->req[i], rc);
			sipc__req_send_unref(s, b->req[i]);
			continue;
		}
		if ((b->req[i]->flags & SIPC_REQ_SCRATCH) &&
		    (rc = scratch_make(sl, b->req[i])) < 0) {
			sipc__outcome_unsend(s, sl, b->req[i], rc);
			sipc__req_send_unref(s, b->req[i]);
			continue;
		}
		if (s->journal != NULL &&
		    sipc__journal_note_written(s, sl, b->req[i]) < 0) {
			sipc__outcome_unsend(s, sl, b->req[i], SIPC_E_JOURNAL);
			sipc__req_send_unref(s, b->req[i]);
			continue;
		}
		b->req[ns++] = b->req[i];
	}
	/* One sync for the batch's WRITTEN records before any of its
	 * frames goes out (a power cut must not leave "never sent" for a
	 * request that ran); none goes out when it fails. */
	if (ns > 0 && sipc__journal_note_sent_durable(s) < 0) {
		for (i = 0; i < ns; i++) {
			sipc__outcome_unsend(s, sl, b->req[i], SIPC_E_JOURNAL);
			sipc__req_send_unref(s, b->req[i]);
		}
		ns = 0;
	}
	for (i = 0; i < ns; i++)
		put_frame(b->iov, &b->niov, b->hdrs[h++], SIPC_FT_REQUEST,
		    b->req[i]->id, b->req[i]->payload, b->req[i]->len,
		    frame_deadline(sl, b->req[i]), b->req[i]->fd >= 0);
	b->nreq = ns;
	if (ns == 1)
		sipc__fig_begin(sl, b->req[0]);
	/* In wire order, now that the journal took them. */
	if (ns > 0) {
		pthread_mutex_lock(&sl->lock);
		for (i = 0; i < ns; i++)
			frame_commit(sl, b->req[i]);
		pthread_mutex_unlock(&sl->lock);
	}
	wbatch_layout(sl, b);
}

/* The batch's first `upto` bytes are sent: the requests whose frames
 * they hold are no longer written by this batch.  Their holds end now,
 * not with the batch: a lent request's reply that comes meanwhile is
 * delivered by its reader at once, not stored for the reaper. */
static void
wbatch_sent(struct sipc__slot *sl, struct sipc__wbatch *b, size_t upto)
{
	struct sipc_supervisor *s = sl->sup;

	if (b->rest_held && upto >= b->rest_end) {
		b->rest_held = false;
		sipc__req_send_unref(s, b->rest);
	}
	while (b->nheld < b->nreq && upto >= b->end[b->nheld])
		sipc__req_send_unref(s, b->req[b->nheld++]);
}

/* The batch is on the wire (or the channel is gone): count it and drop
 * the ring's references it still holds.  No lock held. */
static void
wbatch_done(struct sipc__slot *sl, struct sipc__wbatch *b)
{
	atomic_fetch_add(&sl->frames_out, (uint64_t)b->nframes);
	wbatch_sent(sl, b, SIZE_MAX);
	b->nreq = b->ncancel = b->nheld = b->nframes = 0;
	b->rest = NULL;
}

/* Wait until the channel takes bytes again, or is gone (false). */
static bool
wait_writable(struct sipc__slot *sl)
{
	struct pollfd p = { .fd = sl->proto_fd, .events = POLLOUT };
	int n;

	do
		n = poll(&p, 1, -1);
	while (n < 0 && errno == EINTR);
	return n > 0 && !(p.revents & POLLNVAL);
}

/* Send the batch's bytes from `off` on; false when the channel is gone.
 * Written without blocking, and waited for in poll() when the socket is
 * full, so that each write's return ends the holds of the frames it
 * completed (wbatch_sent()). */
static bool
wbatch_send(struct sipc__slot *sl, struct sipc__wbatch *b, size_t off)
{
	struct iovec *iov = b->iov;
	int n = b->niov;
	ssize_t w;

	iov_advance(&iov, &n, off);
	while (n > 0) {
		w = send_iov(sl, iov, n, MSG_DONTWAIT, off, &b->fds);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!wait_writable(sl))
				return false;
			continue;
		}
		if (w < 0)
			return false;
		off += (size_t)w;
		iov_advance(&iov, &n, (size_t)w);
		wbatch_sent(sl, b, off);
	}
	return true;
}

/* No lock held: journal and send a batch; false when the channel is
 * gone.  Drops the ring's references. */
static bool
writer_send(struct sipc__slot *sl, struct sipc__wbatch *b)
{
	bool ok;

	wbatch_build(sl, b);
	ok = wbatch_send(sl, b, b->rest != NULL ? b->rest_off : 0);
	wbatch_done(sl, b);
	return ok;
}

/* Slot lock held, then dropped and taken again: send the rest of the
 * reader's batch.  The channel stays the writer's meanwhile, so the
 * reader does not reuse the batch before it is done. */
static bool
writer_finish_handoff(struct sipc__slot *sl)
{
	struct sipc__wbatch *b = sl->handoff;
	size_t off = sl->handoff_off;
	bool ok;

	sl->handoff = NULL;
	sl->sending = SIPC__SEND_WRITER;
	pthread_mutex_unlock(&sl->lock);
	ok = wbatch_send(sl, b, off);
	wbatch_done(sl, b);
	pthread_mutex_lock(&sl->lock);
	return ok;
}

void *
sipc__writer_main(void *arg)
{
	struct sipc__slot *sl = arg;
	struct sipc__wbatch b;
	unsigned room = 0;
	bool ok = true;

	sipc__lib_thread = true;
	sipc__thread_name("sipc-wr", sl);
	pthread_mutex_lock(&sl->lock);
	for (;;) {
		while (!writer_has_work(sl, &room))
			pthread_cond_wait(&sl->cv_writer, &sl->lock);
		if (sl->stop || sl->channel_lost)
			break;
		if (sl->handoff != NULL) {
			ok = writer_finish_handoff(sl);
		} else {
			writer_collect(sl, room, &b, SIPC__SEND_WRITER);
			pthread_mutex_unlock(&sl->lock);
			ok = writer_send(sl, &b);
			pthread_mutex_lock(&sl->lock);
		}
		sl->sending = SIPC__SEND_NONE;
		if (!ok) {
			sl->channel_lost = true;
			break;
		}
	}
	pthread_mutex_unlock(&sl->lock);
	if (!ok)
		sipc__reaper_wake(sl->sup);
	return NULL;
}

/* ------------------------------------------------------- direct path */

bool
sipc__direct_claim(struct sipc__slot *sl, struct sipc__req *q)
{
	struct sipc_supervisor *s = sl->sup;
	bool ok;

	/* Only when the writer would send it at once anyway: nothing
	 * queued before it (order), nothing being sent, no frame begun. */
	if (sl->state != SIPC_WS_READY || sl->stop || sl->channel_lost ||
	    atomic_load(&sl->retiring) != SIPC_RECYCLE_NONE ||
	    sl->proc_gone || sl->sending != SIPC__SEND_NONE ||
	    sl->ring.count > 0 || sl->ncancels > 0 || sl->rest != NULL ||
	    sl->handoff != NULL || sl->rd_owner == SIPC__RD_CALLER)
		return false;
	pthread_mutex_lock(&s->table.lock);
	/* Only to an idle worker (nothing in flight), while the pool is
	 * lightly loaded: no more requests pending than workers for a
	 * synchronous call, SIPC__DIRECT_DEPTH a worker for an
	 * asynchronous submit.  Then the worker waits in read() for this
	 * one frame, and the writer could batch it with nothing.  Under a
	 * deeper load, requests go through the ring: what gathers there
	 * while the writer wakes goes out in one write and is read in one
	 * read, which a direct write per request would undo (measured: 4
	 * workers, 256 outstanding, up to half the throughput with direct
	 * writes from every submitter; 64 workers, 256 outstanding, a
	 * third less CPU per request with them). */
	ok = !q->delivered && q->state != SIPC__R_GONE &&
	    sl->inflight == 0 && s->table.pending <=
	    (q->call ? 1u : SIPC__DIRECT_DEPTH) * s->nslots;
	if (ok) {
		/* The stall clock runs only while work is pending: start it
		 * now, before the reaper can see this request in flight
		 * against an idle worker's old progress time. */
		atomic_store(&sl->last_progress_ms, sipc__now_ms());
		mark_written(sl, q);
		atomic_fetch_add_explicit(&sl->taken_by[SIPC__SEND_CALLER], 1,
		    memory_order_relaxed);
		sl->sending = SIPC__SEND_CALLER;
	}
	pthread_mutex_unlock(&s->table.lock);
	return ok;
}

/*
 * The channel is the caller's, no lock held.  A non-blocking write: a
 * worker that does not read can never hold a submitting thread.  What
 * did not go out is the writer's to finish (the whole frame when the
 * socket was full, or the rest of it); nothing else is sent in between,
 * since the writer sends `rest` first and no caller claims the channel
 * while it is set.  The descriptor stays open meanwhile:
 * sipc__worker_threads_stop() waits for the channel to be released
 * before the reaper may close it.
 */
void
sipc__direct_send(struct sipc__slot *sl, struct sipc__req *q)
{
	struct sipc_supervisor *s = sl->sup;
	uint8_t hdr[HEAD_MAX];
	struct iovec iov[2];
	int64_t dl = frame_deadline(sl, q);
	ssize_t w = 0, total = (ssize_t)frame_bytes(sl, q);
	int niov = 0, jrc = 0;
	bool was, lost = false;
	struct fdmarks one;

	if ((jrc = fd_ok(sl, q)) < 0 || ((q->flags & SIPC_REQ_SCRATCH) &&
	    (jrc = scratch_make(sl, q)) < 0)) {
		was = sipc__callback_rules_begin();
		sipc__outcome_unsend(s, sl, q, jrc);
		sipc__lib_thread = was;
	} else if (s->journal != NULL) {
		/* A journal failure delivers the outcome here, on the
		 * submitting thread, under a callback's rules. */
		was = sipc__callback_rules_begin();
		if ((jrc = sipc__journal_note_written(s, sl, q)) < 0 ||
		    (jrc = sipc__journal_note_sent_durable(s)) < 0)
			sipc__outcome_unsend(s, sl, q, SIPC_E_JOURNAL);
		sipc__lib_thread = was;
	}
	if (jrc == 0) {
		sipc__fig_begin(sl, q);
		put_frame(iov, &niov, hdr, SIPC_FT_REQUEST, q->id, q->payload,
		    q->len, dl, q->fd >= 0);
		one.at[0] = 0;
		one.fd[0] = q->fd;
		one.n = q->fd >= 0;
		w = send_iov(sl, iov, niov, MSG_DONTWAIT, 0, &one);
		lost = w < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
		if (w == total)
			atomic_fetch_add(&sl->frames_out, 1);
	}
	/* The writer finishes what did not go out: a borrowed payload is
	 * copied first (only this thread has read it so far). */
	if (!lost && jrc == 0 && w < total)
		sipc__req_own(q);
	pthread_mutex_lock(&sl->lock);
	/* Its place, before the channel is released: nobody else sent
	 * meanwhile, and settle waits for the release. */
	if (jrc == 0)
		frame_commit(sl, q);
	sl->sending = SIPC__SEND_NONE;
	if (lost)
		sl->channel_lost = true;
	else if (jrc == 0 && w < total) {
		sl->rest = q;                  /* keeps the ring's reference */
		sl->rest_off = w > 0 ? (size_t)w : 0;
		q = NULL;
	}
	/* The writer, and a reaper in sipc__worker_threads_stop(), may be
	 * waiting for the channel. */
	if (sl->rest != NULL || sl->ring.count > 0 || sl->ncancels > 0 ||
	    lost || sl->stop)
		pthread_cond_broadcast(&sl->cv_writer);
	pthread_mutex_unlock(&sl->lock);
	if (lost)
		sipc__reaper_wake(s);
	sipc__req_send_unref(s, q);
}

/* The socket's reader, when a caller reads it (callread.c, caller reads):
 * ask for it back, once per hand-over. */
bool
sipc__callread_revoke(struct sipc__slot *sl)
{
	sipc__callread_unpark(sl);
	if (sl->rd_owner != SIPC__RD_CALLER)
		return false;
	if (!sl->rd_revoke) {
		sl->rd_revoke = true;
		(void)eventfd_write(sl->rd_give_fd, 1);
	}
	return true;
}

void
sipc__callread_unpark(struct sipc__slot *sl)
{
	if (sl->rd_owner != SIPC__RD_PARKED)
		return;
	sl->rd_owner = SIPC__RD_READER;
	/* Level-triggered: what the worker wrote while parked (an end of
	 * stream, a violation) wakes the reader now. */
	(void)sipc__epoll_in(sl->rd_epfd, EPOLL_CTL_ADD, sl->proto_fd,
	    SIPC__RX_PROTO);
}

/* ------------------------------------------------------ reader refill */

struct sipc__wbatch *
sipc__wbatch_new(void)
{
	return calloc(1, sizeof(struct sipc__wbatch));
}

void
sipc__wbatch_drop(struct sipc__slot *sl)
{
	if (sl->handoff != NULL)
		wbatch_done(sl, sl->handoff);
	sl->handoff = NULL;
}

/* Slot lock held: may the reader send the ring's head itself?  Only
 * when the writer would send exactly that now: the channel free, nothing
 * to go before it (a caller's rest, CANCELs, an unfinished batch), and
 * no journal record to write first (an append may wait for the disk,
 * and the reader must keep reading). */
static bool
refill_ok(struct sipc__slot *sl, unsigned *ret_room)
{
	unsigned room = 0;

	if (sl->rbatch == NULL || sl->sup->journal != NULL ||
	    !writer_has_work(sl, &room) || sl->stop || sl->channel_lost ||
	    sl->ncancels > 0 || sl->rest != NULL || sl->handoff != NULL)
		return false;
	*ret_room = room;
	return room > 0 && sl->ring.count > 0;
}

void
sipc__reader_refill(struct sipc__slot *sl)
{
	struct sipc__wbatch *b = sl->rbatch;
	unsigned room = 0;
	ssize_t w;
	bool lost, wake;

	pthread_mutex_lock(&sl->lock);
	if (!refill_ok(sl, &room)) {
		/* Held the lock the writer checks its work under: it is
		 * asleep or will see the room (see reader.c). */
		pthread_mutex_unlock(&sl->lock);
		pthread_cond_signal(&sl->cv_writer);
		return;
	}
	writer_collect(sl, room, b, SIPC__SEND_READER);
	pthread_mutex_unlock(&sl->lock);
	wbatch_build(sl, b);
	/* Never blocks: a worker that does not read must not stop the
	 * thread that reads its replies. */
	w = send_iov(sl, b->iov, b->niov, MSG_DONTWAIT, 0, &b->fds);
	lost = w < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
	if (w < 0)
		w = 0;
	wbatch_sent(sl, b, (size_t)w);
	pthread_mutex_lock(&sl->lock);
	sl->sending = SIPC__SEND_NONE;
	if (lost) {
		sl->channel_lost = true;
	} else if ((size_t)w < b->bytes) {
		sl->handoff = b;
		sl->handoff_off = (size_t)w;
		b = NULL;
	}
	wake = lost || sl->handoff != NULL || sl->ncancels > 0 ||
	    sl->rest != NULL || sl->stop || (sl->ring.count > 0 &&
	    atomic_load(&sl->inflight) < sl->sup->cfg.max_inflight);
	pthread_mutex_unlock(&sl->lock);
	if (wake)
		pthread_cond_broadcast(&sl->cv_writer);
	if (b != NULL)
		wbatch_done(sl, b);
	if (lost)
		sipc__reaper_wake(sl->sup);
}
