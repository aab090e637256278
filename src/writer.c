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
 * direct path: a thread in sipc_call() that finds the worker ready and
 *   idle (nothing in flight), the ring empty, the channel free and the
 *   pool not loaded deeper than one request a worker writes its own
 *   request (non-blocking) instead of waking the writer for it: one
 *   hand-off fewer per synchronous call.
 * Whoever sends holds the channel (`sending`, slot lock), so frames never
 * interleave; a frame a caller could not finish is the writer's first
 * job (`rest`).  Lock order: slot -> table.  No lock is held while a
 * frame is written or the journal appended to.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "sipc_int.h"

#define WRITE_BATCH 64            /* frames per sendmsg */
#define WRITE_BATCH_BYTES (1u << 20)

/* One frame's header and payload as (up to) two iovecs. */
static void
put_frame(struct iovec *iov, int *n, uint8_t *hdr, uint8_t type,
          uint64_t id, const void *payload, uint32_t len)
{
	struct sipc_frame_hdr h = { .type = type, .id = id, .len = len };

	sipc__frame_encode_hdr(hdr, &h);
	iov[*n].iov_base = hdr;
	iov[(*n)++].iov_len = SIPC_FRAME_HDR_LEN;
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

static ssize_t
send_iov(struct sipc__slot *sl, struct iovec *iov, int n, int flags)
{
	struct msghdr mh;
	ssize_t w;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)n;
	do
		w = sendmsg(sl->proto_fd, &mh, MSG_NOSIGNAL | flags);
	while (w < 0 && errno == EINTR);
	if (w > 0) {
		atomic_fetch_add(&sl->bytes_out, (uint64_t)w);
		atomic_store(&sl->last_progress_ms, sipc__now_ms());
	}
	return w;
}

/* Send every byte of iov[0..n) after the first `skip`; false when the
 * channel is gone. */
static bool
send_all(struct sipc__slot *sl, struct iovec *iov, int n, size_t skip)
{
	ssize_t w;

	iov_advance(&iov, &n, skip);
	while (n > 0) {
		if ((w = send_iov(sl, iov, n, 0)) < 0)
			return false;
		iov_advance(&iov, &n, (size_t)w);
	}
	return true;
}

/* Slot lock held.  Can the writer do something now? */
static bool
writer_has_work(struct sipc__slot *sl, unsigned *ret_room)
{
	struct sipc_supervisor *s = sl->sup;
	unsigned inflight;

	if (sl->stop || sl->channel_lost)
		return true;
	/* A caller is writing its own request: the channel is its. */
	if (sl->sending == SIPC__SEND_CALLER || sl->state != SIPC_WS_READY)
		return false;
	/* inflight is atomic; a reply that frees room signals cv_writer
	 * under the slot lock held here, so no wake-up is lost. */
	inflight = atomic_load(&sl->inflight);
	*ret_room = inflight < s->cfg.max_inflight ?
	    s->cfg.max_inflight - inflight : 0;
	if (sl->ncancels > 0 || sl->rest != NULL)
		return true;
	return *ret_room > 0 && sl->ring.count > 0;
}

/* Slot and table locks held: `q` goes to this generation's worker now. */
static void
mark_written(struct sipc__slot *sl, struct sipc__req *q)
{
	q->state = SIPC__R_WRITTEN;
	q->slot = (int)sl->idx;
	q->gen = sl->generation;
	q->pid = sl->pid;
	q->attempts++;
	sl->inflight++;
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
		sipc__req_unref(s, drop[i]);
	return n;
}

/* What the writer sends in one go, in wire order: the rest of a frame a
 * caller began, CANCELs, new requests. */
struct wbatch {
	struct sipc__req *rest;
	size_t rest_off;
	struct sipc__req *req[WRITE_BATCH];
	uint64_t cancels[WRITE_BATCH];
	int nreq, ncancel;
	uint8_t hdrs[WRITE_BATCH * 2 + 1][SIPC_FRAME_HDR_LEN];
	struct iovec iov[WRITE_BATCH * 3 + 2];
};

/* Slot lock held: take the next batch and claim the channel. */
static void
writer_collect(struct sipc__slot *sl, unsigned room, struct wbatch *b)
{
	b->rest = sl->rest;
	b->rest_off = sl->rest_off;
	sl->rest = NULL;
	b->ncancel = 0;
	while (sl->ncancels > 0 && b->ncancel < WRITE_BATCH)
		b->cancels[b->ncancel++] = sl->cancels[--sl->ncancels];
	b->nreq = writer_take(sl, room, b->req);
	sl->sending = SIPC__SEND_WRITER;
}

/* No lock held: journal and send a batch; false when the channel is
 * gone.  Drops the ring's references. */
static bool
writer_send(struct sipc__slot *sl, struct wbatch *b)
{
	struct sipc_supervisor *s = sl->sup;
	int niov = 0, ns, i, h = 0;
	bool ok;

	/* Journalled as written by the caller that began it. */
	if (b->rest != NULL)
		put_frame(b->iov, &niov, b->hdrs[h++], SIPC_FT_REQUEST,
		    b->rest->id, b->rest->payload, b->rest->len);
	for (i = 0; i < b->ncancel; i++)
		put_frame(b->iov, &niov, b->hdrs[h++], SIPC_FT_CANCEL,
		    b->cancels[i], NULL, 0);
	for (i = ns = 0; i < b->nreq; i++) {
		/* Sent only once journalled as written; one that could not
		 * be is not sent at all, and gets its outcome here. */
		if (s->journal != NULL &&
		    sipc__journal_note_written(s, sl, b->req[i]) < 0) {
			sipc__outcome_unsend(s, sl, b->req[i]);
			sipc__req_unref(s, b->req[i]);
			continue;
		}
		b->req[ns++] = b->req[i];
		put_frame(b->iov, &niov, b->hdrs[h++], SIPC_FT_REQUEST,
		    b->req[i]->id, b->req[i]->payload, b->req[i]->len);
	}
	ok = send_all(sl, b->iov, niov, b->rest != NULL ? b->rest_off : 0);
	atomic_fetch_add(&sl->frames_out,
	    (uint64_t)(ns + b->ncancel + (b->rest != NULL)));
	for (i = 0; i < ns; i++)
		sipc__req_unref(s, b->req[i]);   /* the ring's reference */
	sipc__req_unref(s, b->rest);
	return ok;
}

void *
sipc__writer_main(void *arg)
{
	struct sipc__slot *sl = arg;
	struct wbatch b;
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
		writer_collect(sl, room, &b);
		pthread_mutex_unlock(&sl->lock);
		ok = writer_send(sl, &b);
		pthread_mutex_lock(&sl->lock);
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
	    sl->proc_gone || sl->sending != SIPC__SEND_NONE ||
	    sl->ring.count > 0 || sl->ncancels > 0 || sl->rest != NULL)
		return false;
	pthread_mutex_lock(&s->table.lock);
	/* Only for a synchronous call (its thread waits for the outcome
	 * anyway; an asynchronous submit stays cheap, the writer pays the
	 * write), to an idle worker (nothing in flight), while the pool has
	 * no more requests pending than workers: then the worker waits in
	 * read() for this one frame, and the writer could batch it with
	 * nothing.  Under a deeper load, requests go through the ring: what
	 * gathers there while the writer wakes goes out in one write and is
	 * read in one read, which a direct write per request would undo
	 * (measured: 4 workers, 256 outstanding, up to half the throughput
	 * with direct writes from submitters). */
	ok = q->call && !q->delivered && q->state != SIPC__R_GONE &&
	    sl->inflight == 0 && s->table.pending <= s->nslots;
	if (ok) {
		/* The stall clock runs only while work is pending: start it
		 * now, before the reaper can see this request in flight
		 * against an idle worker's old progress time. */
		atomic_store(&sl->last_progress_ms, sipc__now_ms());
		mark_written(sl, q);
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
	uint8_t hdr[SIPC_FRAME_HDR_LEN];
	struct iovec iov[2];
	ssize_t w = 0, total = SIPC_FRAME_HDR_LEN + (ssize_t)q->len;
	int niov = 0, jrc = 0;
	bool was, lost = false;

	if (s->journal != NULL) {
		/* A journal failure delivers the outcome here, on the
		 * submitting thread, under a callback's rules. */
		was = sipc__callback_rules_begin();
		if ((jrc = sipc__journal_note_written(s, sl, q)) < 0)
			sipc__outcome_unsend(s, sl, q);
		sipc__lib_thread = was;
	}
	if (jrc == 0) {
		put_frame(iov, &niov, hdr, SIPC_FT_REQUEST, q->id, q->payload,
		    q->len);
		w = send_iov(sl, iov, niov, MSG_DONTWAIT);
		lost = w < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
		if (w == total)
			atomic_fetch_add(&sl->frames_out, 1);
	}
	pthread_mutex_lock(&sl->lock);
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
	sipc__req_unref(s, q);
}
