/*
 * worker/watch.c - the worker runtime's watcher: a second thread that
 * reads the channel while a handler runs, so that the handler can learn
 * of a CANCEL or of its deadline (sipc_worker_cancel_fd(),
 * sipc_worker_cancelled()).
 *
 * Threads: the watcher thread, made at the first arm and joined by
 * sipc__wwatch_free(); the worker's own thread calls every other
 * function here.  Lock: `mu` guards every field marked [mu].  The
 * channel and the runtime's decoder belong to the watcher only while it
 * is armed: the worker's thread arms it from inside a handler and
 * disarms it, under `mu`, when the handler has returned and before it
 * reads the channel again; the watcher reads only under `mu` and only
 * while armed, so the two never read the channel at once and every byte
 * is decoded in order by one decoder.
 *
 * Arming costs an eventfd write and a wake-up of this thread, so it is
 * done only for a handler that asks (the first sipc_worker_cancel_fd()
 * or sipc_worker_cancelled() of a request): a handler that never asks
 * costs nothing.  The watcher never writes to the channel: start
 * evidence (the start counter, ACCEPT frames) and replies stay on the
 * worker's thread, in the order that thread gives them.
 *
 * The watcher's thread blocks every signal: a worker's signal handlers
 * run on the worker's thread, as they did before there was a watcher.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire/wire.h"
#include "worker/worker.h"

#define WW_READ_CHUNK (64u * 1024)

struct sipc__wwatch {
	pthread_t th;
	pthread_mutex_t mu;
	int chan;                     /* the protocol channel (not owned) */
	int ctl;                      /* eventfd: the worker's thread -> us */
	int cfd;                      /* eventfd: what the handler polls */
	sipc__wwatch_read_fn read_fn;
	void *ctx;
	struct sipc__fdq *fdq;        /* [mu, armed] the runtime's */
	bool armed;                   /* [mu] a handler runs and asked */
	bool quit;                    /* [mu] */
	bool fired;                   /* [mu] cfd written for this arm */
	bool chan_done;               /* [mu] EOF, error or SHUTDOWN seen:
	                               * the watcher reads no more, ever */
	bool full;                    /* [mu] read_fn holds enough for this
	                               * arm: the rest stays in the socket */
	int64_t deadline_ms;          /* [mu] of the armed request; 0 none */
	_Atomic bool cancelled;       /* set by fire, cleared at disarm */
	uint8_t *buf;                 /* the watcher's read buffer */
};

static int64_t
ww_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* mu held: the running request is cancelled; the handler's descriptor
 * becomes readable once per arm. */
static void
ww_fire(struct sipc__wwatch *x)
{
	uint64_t one = 1;

	atomic_store(&x->cancelled, true);
	if (x->fired)
		return;
	x->fired = true;
	while (write(x->cfd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* mu held, armed, the channel readable: read what is there and hand it
 * to the runtime's decoder.  The end of the channel (or its failure)
 * cancels the running request: its reply could go nowhere. */
static void
ww_read(struct sipc__wwatch *x)
{
	ssize_t n;
	int r;

	n = sipc__recv_fds(x->chan, x->buf, WW_READ_CHUNK, MSG_DONTWAIT,
	    x->fdq);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	if (n <= 0) {
		x->chan_done = true;    /* the worker's thread sees it too */
		ww_fire(x);
		return;
	}
	r = x->read_fn(x->ctx, x->buf, (size_t)n);
	if (r < 0) {
		x->chan_done = true;
		ww_fire(x);
		return;
	}
	if (r & SIPC__WW_CANCEL)
		ww_fire(x);
	if (r & SIPC__WW_STOP)
		x->chan_done = true;
	if (r & SIPC__WW_FULL)
		x->full = true;
}

/* mu held: what to wait for next; returns the poll() timeout. */
static int
ww_plan(struct sipc__wwatch *x, struct pollfd *pf, nfds_t *np)
{
	int64_t left;

	pf[0] = (struct pollfd){ .fd = x->ctl, .events = POLLIN };
	*np = 1;
	if (!x->armed)
		return -1;
	if (!x->chan_done && !x->full) {
		pf[1] = (struct pollfd){ .fd = x->chan, .events = POLLIN };
		*np = 2;
	}
	if (x->deadline_ms == 0 || x->fired)
		return -1;
	left = x->deadline_ms - ww_now_ms();
	if (left <= 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static void *
ww_main(void *arg)
{
	struct sipc__wwatch *x = arg;
	struct pollfd pf[2];
	uint64_t v;
	nfds_t np;
	int timeout, n;

	pthread_mutex_lock(&x->mu);
	while (!x->quit) {
		timeout = ww_plan(x, pf, &np);
		pthread_mutex_unlock(&x->mu);
		n = poll(pf, np, timeout);
		if (n > 0 && pf[0].revents != 0)
			(void)read(x->ctl, &v, sizeof(v));   /* non-blocking */
		pthread_mutex_lock(&x->mu);
		if (!x->armed)
			continue;
		if (n > 0 && np == 2 && pf[1].revents != 0 && !x->chan_done &&
		    !x->full)
			ww_read(x);
		if (x->deadline_ms != 0 && ww_now_ms() >= x->deadline_ms)
			ww_fire(x);
	}
	pthread_mutex_unlock(&x->mu);
	return NULL;
}

static int
ww_start(struct sipc__wwatch *x)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&x->th, NULL, ww_main, x);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -r;
}

int
sipc__wwatch_new(int chan, sipc__wwatch_read_fn fn, void *ctx,
    struct sipc__fdq *fdq, struct sipc__wwatch **ret)
{
	struct sipc__wwatch *x;
	int r = -ENOMEM;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return -ENOMEM;
	x->chan = chan;
	x->read_fn = fn;
	x->ctx = ctx;
	x->fdq = fdq;
	x->ctl = x->cfd = -1;
	if ((x->buf = malloc(WW_READ_CHUNK)) == NULL)
		goto fail;
	if ((x->ctl = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    (x->cfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		r = -errno;
		goto fail;
	}
	pthread_mutex_init(&x->mu, NULL);
	if ((r = ww_start(x)) < 0) {
		pthread_mutex_destroy(&x->mu);
		goto fail;
	}
	*ret = x;
	return 0;
fail:
	if (x->ctl >= 0)
		close(x->ctl);
	if (x->cfd >= 0)
		close(x->cfd);
	free(x->buf);
	free(x);
	return r;
}

static void
ww_kick(struct sipc__wwatch *x)
{
	uint64_t one = 1;

	while (write(x->ctl, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

void
sipc__wwatch_arm(struct sipc__wwatch *x, int64_t deadline_ms, bool cancelled)
{
	pthread_mutex_lock(&x->mu);
	x->armed = true;
	x->fired = false;
	x->full = false;
	x->deadline_ms = deadline_ms;
	if (cancelled)
		ww_fire(x);
	pthread_mutex_unlock(&x->mu);
	ww_kick(x);
}

bool
sipc__wwatch_disarm(struct sipc__wwatch *x)
{
	uint64_t v;
	bool done;

	pthread_mutex_lock(&x->mu);
	x->armed = false;
	x->fired = false;
	done = x->chan_done;
	atomic_store(&x->cancelled, false);
	pthread_mutex_unlock(&x->mu);
	/* every write to cfd happened under mu before the disarm */
	(void)read(x->cfd, &v, sizeof(v));
	return done;
}

bool
sipc__wwatch_cancelled(const struct sipc__wwatch *x)
{
	return atomic_load_explicit(&((struct sipc__wwatch *)x)->cancelled,
	    memory_order_relaxed);
}

int
sipc__wwatch_fd(const struct sipc__wwatch *x)
{
	return x->cfd;
}

void
sipc__wwatch_free(struct sipc__wwatch *x)
{
	if (x == NULL)
		return;
	pthread_mutex_lock(&x->mu);
	x->quit = true;
	pthread_mutex_unlock(&x->mu);
	ww_kick(x);
	pthread_join(x->th, NULL);
	pthread_mutex_destroy(&x->mu);
	close(x->ctl);
	close(x->cfd);
	free(x->buf);
	free(x);
}
