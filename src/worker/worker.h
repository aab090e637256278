/*
 * worker/worker.h - what src/worker/ exports: the worker runtime (libsipc-worker.a).
 */
#ifndef SIPC_SRC_WORKER_H
#define SIPC_SRC_WORKER_H

#include "wire/wire.h"

/* ---- worker_rt */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sipc_worker.h"

/*
 * Benchmark only: with `on`, the runtime goes back to the rule it had
 * before exact start evidence, one ACCEPT per request of a read batch,
 * all written before the batch's first handler.  A worker crashing in a
 * handler then turns every request of its batch into "may have run".
 * It exists so that `make bench` can price exact ACCEPTs against it in
 * the same run.  Call it after sipc_worker_open(), on the runtime's
 * thread.
 */
void sipc__worker_accept_batch(sipc_worker *w, bool on);

/*
 * Tests and benchmark only: with `on` false, the next sipc_worker_open()
 * offers no start counter (CONTRACT A5) and the runtime writes an ACCEPT
 * frame before each handler instead, as it does when memfd_create() or
 * sending the descriptor fails.  Default: on.  Call it before
 * sipc_worker_open().
 */
void sipc__worker_start_counter(bool on);


/*
 * The watcher (worker/watch.c): a thread that reads the channel while a
 * handler runs, armed by the worker's thread from inside a handler and
 * disarmed after it.  The read callback runs on the watcher's thread
 * with the watcher's lock held, only while armed; it decodes the bytes
 * and returns a negative error or a mask of SIPC__WW_* bits.
 */
enum {
	SIPC__WW_CANCEL = 1 << 0,   /* a CANCEL names the running request */
	SIPC__WW_STOP = 1 << 1,     /* SHUTDOWN: read nothing after it */
	SIPC__WW_FULL = 1 << 2,     /* enough held: read no more this arm */
};
struct sipc__wwatch;
typedef int (*sipc__wwatch_read_fn)(void *ctx, const uint8_t *buf,
                                    size_t len);
/* Start the watcher's thread (every signal blocked in it).  The
 * descriptors it reads with the bytes go to `fdq`, the runtime's, which
 * is the watcher's while armed (wire/wire.h). */
struct sipc__fdq;
int sipc__wwatch_new(int chan, sipc__wwatch_read_fn fn, void *ctx,
                     struct sipc__fdq *fdq, struct sipc__wwatch **ret);
/* The running handler asked: watch the channel and the deadline
 * (monotonic ms, 0 none); `cancelled`: it is cancelled already. */
void sipc__wwatch_arm(struct sipc__wwatch *x, int64_t deadline_ms,
                      bool cancelled);
/* The handler returned: after this the callback does not run until the
 * next arm.  Returns true once the watcher saw the channel end. */
bool sipc__wwatch_disarm(struct sipc__wwatch *x);
bool sipc__wwatch_cancelled(const struct sipc__wwatch *x);
int sipc__wwatch_fd(const struct sipc__wwatch *x);
void sipc__wwatch_free(struct sipc__wwatch *x);

#endif /* SIPC_SRC_WORKER_H */
