/*
 * callread.c - caller reads: a sipc_call() thread that wrote its own
 * request to an idle worker (writer.c, direct path) reads the reply
 * itself, with the reader's code and decode state (conn/conn.h, reader.c).
 *
 * sipc__callread_take(): the calling thread, slot lock held (dispatch.c).
 * sipc__callread_run(): that thread, no lock held (supervisor.c); each
 * touch of the slot's reader fields (rd_owner, rd_revoke, the interest
 * set) under the slot lock.  Lock order: slot -> table.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "pool/pool.h"
#include "conn/conn.h"

/*
 * One sipc_call() of 64 B to an idle worker paid four context switches:
 * the worker woke, the reader woke for the reply and delivered it, the
 * caller woke on its event.  When the caller wrote its own request
 * (direct path) to an otherwise idle worker, it can read the reply
 * itself: the reader's hop goes.  The caller takes the socket out of the
 * reader's interest set (the reader is not woken) and decodes with the
 * reader's code, under a library thread's rules; anyone who needs the
 * reader to have it again (the writer with something to send, the
 * reader on its way out) asks for it back (rd_revoke, give_fd).
 * Nothing but the caller's own request is sent meanwhile (writer.c,
 * direct path), so no other request's callback runs on its thread.
 */
bool
sipc__callread_take(struct sipc__slot *sl)
{
	struct sipc__rx *rx = sl->rx;

	if (sl->rd_owner == SIPC__RD_PARKED) {
		/* Out of the reader's set since the last call; nothing
		 * was read meanwhile (whatever came is in the socket). */
		if (sl->violation || sl->channel_lost || sl->stop)
			return false;
		sl->rd_owner = SIPC__RD_CALLER;
		return true;
	}
	if (rx == NULL || sl->rd_busy || sl->rd_owner != SIPC__RD_READER ||
	    sl->violation || sl->channel_lost || rx->proto_done ||
	    rx->pend_len > 0 || rx->held > 0 ||
	    sipc__decoder_partial(&rx->dec))
		return false;
	if (sipc__epoll_in(rx->epfd, EPOLL_CTL_DEL, sl->proto_fd, RX_PROTO) < 0)
		return false;
	sl->rd_owner = SIPC__RD_CALLER;
	return true;
}

/* Slot lock held, the caller done: may the socket stay out of the
 * reader's set until the next call?  Only with nothing in flight, to
 * send, undecoded or owed: then the reader has nothing to read from it
 * but what a misbehaving or dying worker writes, which the next call,
 * a submit, or the worker's end gives back to the reader. */
static bool
callread_may_park(struct reader *r)
{
	struct sipc__slot *sl = r->sl;
	struct sipc__rx *rx = r->rx;

	return !sl->rd_revoke && !r->wake_writer && !sl->stop &&
	    !sl->violation && !sl->channel_lost && !sl->proc_gone &&
	    sl->state == SIPC_WS_READY && !rx->proto_done &&
	    rx->pend_len == 0 && rx->held == 0 &&
	    !sipc__decoder_partial(&rx->dec) &&
	    atomic_load(&sl->inflight) == 0 && sl->ring.count == 0 &&
	    sl->ncancels == 0 && sl->rest == NULL && sl->handoff == NULL &&
	    sl->sending == SIPC__SEND_NONE;
}

/* The caller's thread, no lock held: the socket back to the reader.
 * Bytes the caller left undecoded wake it (the interest set alone would
 * not: they are out of the socket).  Every touch of the slot is under
 * its lock: once the reader sees the socket back, it may finish, and
 * the reaper close the descriptors and free the slot's generation. */
static void
callread_give_back(struct reader *r)
{
	struct sipc__slot *sl = r->sl;
	struct sipc__rx *rx = r->rx;
	uint64_t v;

	pthread_mutex_lock(&sl->lock);
	if (callread_may_park(r)) {
		sl->rd_owner = SIPC__RD_PARKED;
		pthread_mutex_unlock(&sl->lock);
		return;
	}
	sl->rd_owner = SIPC__RD_READER;
	if (sl->rd_revoke) {
		sl->rd_revoke = false;
		(void)eventfd_read(rx->give_fd, &v);
		pthread_cond_broadcast(&sl->cv_read);
		pthread_cond_broadcast(&sl->cv_writer);
	} else if (r->wake_writer) {
		pthread_cond_signal(&sl->cv_writer);
	}
	if (!rx->proto_done)
		(void)sipc__epoll_in(rx->epfd, EPOLL_CTL_ADD, sl->proto_fd,
		    RX_PROTO);
	if (rx->pend_len > 0)
		(void)eventfd_write(sl->wake_fd, 1);
	pthread_mutex_unlock(&sl->lock);
}

void
sipc__callread_run(struct sipc__slot *sl, struct sipc__event *ev,
                   int64_t deadline_ms)
{
	struct reader r = { .sl = sl, .rx = sl->rx, .caller = true };
	struct pollfd pfd[2] = {
		{ .fd = sl->proto_fd, .events = POLLIN },
		{ .fd = r.rx->give_fd, .events = POLLIN },
	};
	int64_t left;
	int n, timeout;
	bool was;

	/* A log line (a violation) may run here: under a library
	 * thread's rules, as on the submitting thread (CONTRACT TH1). */
	was = sipc__callback_rules_begin();
	while (!sipc__event_is_set(ev)) {
		/* At the deadline the reaper delivers TIMEOUT; the worker
		 * may then get a CANCEL, which the writer sends. */
		timeout = -1;
		if (deadline_ms != 0) {
			if ((left = deadline_ms - sipc__now_ms()) <= 0)
				break;
			timeout = left < INT32_MAX ? (int)left : INT32_MAX;
		}
		n = poll(pfd, 2, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || pfd[1].revents != 0)
			break;
		/* EOF and errors are the reader's to act on, as is a
		 * frame without room (pend). */
		if (pfd[0].revents != 0 &&
		    (!sipc__reader_drain(&r, sl->proto_fd, true, false) ||
		    r.rx->proto_done || r.rx->pend_len > 0))
			break;
	}
	callread_give_back(&r);
	sipc__lib_thread = was;
}
