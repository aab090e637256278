/*
 * sipc_worker.h - worker side of sipc: a tiny runtime that reads framed
 * requests from the protocol descriptor, calls a handler, and writes
 * framed replies.
 *
 * Convention: the supervisor starts the worker with the protocol channel
 * (a stream socket) on descriptor 3 and sets SIPC_FD=3 in its
 * environment; stdin is /dev/null; stdout and stderr are diagnostics
 * only and never parsed as protocol.  SIPC_PARENT_PID names the
 * worker's parent as the worker sees it (the supervisor process in
 * process-group mode, 1, its sipc-init, in the namespace modes);
 * SIPC_WORKER_ID and SIPC_GENERATION name the slot.
 *
 * The runtime is single-threaded: call everything from the thread that
 * called sipc_worker_open().  A handler may reply at once or keep the id
 * and reply later (out of order), from a later handler call or an idle
 * callback.
 *
 * Start evidence.  Right before it calls the handler for a request, the
 * runtime records the request as started: in its start counter, 8 bytes
 * of a memfd it maps shared and sends to the supervisor with HELLO
 * (CONTRACT A5; no system call per request), or, where it could not make
 * one, in an ACCEPT frame written together with every reply earlier
 * handlers left buffered.  It never records a request before the
 * handlers in front of it were called, so if the worker dies inside a
 * handler, the supervisor knows the running request started and none
 * behind it did: those provably never started and are sent to another
 * worker instead of being reported "may have run".  A handler that keeps
 * its id and replies later has started all the same (its request stays
 * "may have run" until the reply).  Work with side effects for a request
 * must not begin before its handler is called.  The worker keeps no
 * descriptor of the counter, only its mapping.
 *
 * Cancellation.  A handler learns of its request's deadline
 * (sipc_worker_deadline()) and, while it runs, of a CANCEL the
 * supervisor sends for it or of the deadline passing, through
 * sipc_worker_cancel_fd() (a descriptor to add to its own poll()) or
 * sipc_worker_cancelled() (a check).  The first of those calls in a
 * handler starts a watcher: a second thread of the runtime (every
 * signal blocked in it) that reads the channel until the handler
 * returns, keeping what it reads, in order, for the runtime to dispatch
 * after the handler.  It never writes: replies and start evidence stay
 * on the worker's thread.  A handler that never asks costs nothing.  A
 * handler that sees its cancel should end its work (its children
 * included) and reply, typically sipc_worker_error() with
 * SIPC_WORKER_E_CANCELLED: the supervisor has reported the request
 * already (TIMEOUT, or its own cancel) and drops the reply, and a
 * worker that answers within cancel_grace_ms stays up; one that does
 * not is ended with its tree and restarted.  A child the handler
 * fork()s must exec or _exit(): the watcher's lock may be held at the
 * fork.
 *
 * Signals.  The runtime changes no process-wide signal state: it
 * writes the channel with MSG_NOSIGNAL (a closed channel is EPIPE, not
 * SIGPIPE) and blocks signals only in its watcher's thread.  A worker's
 * children therefore start with the dispositions and mask the worker
 * itself has; a worker that ignores SIGPIPE for its own pipes restores
 * it in the child before exec.  (Earlier versions set SIGPIPE to
 * ignored, and exec kept that for every converter a worker started.)
 *
 * Replies held.  By default every reply is written before the next
 * handler begins.  A worker whose handlers are all cheap may set a reply
 * hold (sipc_worker_set_reply_hold()): with a counter, the runtime then
 * writes what earlier handlers left buffered only once they ran for the
 * hold or longer since the oldest of them began, and always before it
 * waits for input, so replies travel together.  Two prices: a worker
 * that dies in a handler loses up to a hold's worth of finished work
 * (those requests end with no reply and count as started, "may have
 * run", never as never started), and a held reply also waits for the
 * handler that runs next, however long it takes.
 */
#ifndef SIPC_WORKER_H
#define SIPC_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sipc_version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sipc_worker sipc_worker;

/* Called once per request.  `payload` is valid only during the call.  A
 * request submitted SIPC_REQ_FD arrives the same way: its document is
 * mapped read-only (PROT_READ, MAP_SHARED) for the call, `len` bytes as
 * the supervisor measured them at submit, and the mapping and the
 * descriptor are gone when it returns; no byte of it is copied. */
typedef void (*sipc_worker_handler)(sipc_worker *w, uint64_t id,
                                    const uint8_t *payload, size_t len,
                                    void *arg);
/* Called when the supervisor cancels a request (deadline passed).  The
 * worker should stop that work; replying afterwards is allowed and is
 * dropped by the supervisor. */
typedef void (*sipc_worker_cancel)(sipc_worker *w, uint64_t id, void *arg);
/* Called when the runtime has no more input buffered, before it waits
 * for more.  Useful to flush deferred (out-of-order) replies. */
typedef void (*sipc_worker_idle)(sipc_worker *w, void *arg);

/*
 * Open the channel named by SIPC_FD (default 3), arrange to die with the
 * supervisor (parent-death signal, re-checked against SIPC_PARENT_PID),
 * and send the HELLO handshake.  Returns 0 or a negative error.
 */
int sipc_worker_open(sipc_worker **ret);

/* Queue a reply / an error reply for `id`.  Buffered; flushed before the
 * next handler is called (with a reply hold: once the hold has passed;
 * "Replies held" above), before the runtime blocks, and whenever the
 * buffer passes 64 KiB. */
int sipc_worker_reply(sipc_worker *w, uint64_t id, const void *buf,
                      size_t len);
int sipc_worker_error(sipc_worker *w, uint64_t id, uint32_t code,
                      const void *msg, size_t len);
/*
 * Reply to `id` with a document by descriptor: `fd`, a regular file
 * (a memfd sealed with F_SEAL_SHRINK | F_SEAL_WRITE is the safe
 * choice), whose size now is the reply's length.  Written at once,
 * after what is buffered; the supervisor gets its own descriptor in
 * sipc_result.reply_fd, so `fd` stays the caller's to close.  0,
 * -EBADF, -EINVAL (not a regular file), -ENOTSUP (the channel carries
 * no descriptors), or the write's error.
 */
int sipc_worker_reply_fd(sipc_worker *w, uint64_t id, int fd);
/* Send a heartbeat now (long-running handlers). */
int sipc_worker_heartbeat(sipc_worker *w);
/* Write everything buffered.  Returns 0 or a negative error. */
int sipc_worker_flush(sipc_worker *w);

void sipc_worker_set_cancel(sipc_worker *w, sipc_worker_cancel fn);
void sipc_worker_set_idle(sipc_worker *w, sipc_worker_idle fn);
/* How long, in handler time, replies may wait to travel together when
 * the runtime has a start counter (default 0: each is written before the
 * next handler is called).  See "Replies held" above. */
void sipc_worker_set_reply_hold(sipc_worker *w, unsigned max_us);

/*
 * Serve until the supervisor closes the channel or sends SHUTDOWN
 * (returns 0), or an error (negative; a malformed frame from the
 * supervisor is SIPC_E_PROTOCOL-equivalent -1009).
 */
int sipc_worker_run(sipc_worker *w, sipc_worker_handler fn, void *arg);

/* The error code a handler replies with when it stopped because its
 * request was cancelled or timed out (sipc_worker_error()). */
#define SIPC_WORKER_E_CANCELLED 125u
/* The error code the runtime replies with, without calling the handler,
 * when a request's document by descriptor (SIPC_REQ_FD) cannot be
 * mapped: not a regular file, shorter than its frame says, or mmap()
 * refused.  The message says which. */
#define SIPC_WORKER_E_DOCUMENT 124u

/*
 * The scratch directory of request `id` (submitted SIPC_REQ_SCRATCH to a
 * supervisor with a scratch_root): "$SIPC_SCRATCH/<id>", written to
 * buf.  It exists, empty, when the request arrives, and is removed with
 * its contents once the worker answered it.  0, -ENOENT when the
 * request has none, -ENAMETOOLONG when buf is too small.  Any time the
 * id is the worker's; one stat() call.
 */
int sipc_worker_scratch(const sipc_worker *w, uint64_t id, char *buf,
                        size_t len);

/*
 * The running request's deadline: CLOCK_MONOTONIC milliseconds (compare
 * with clock_gettime(CLOCK_MONOTONIC)), 0 when it has none, or outside
 * a handler, or from a supervisor that does not send deadlines.  Valid
 * for the handler's call only.  No system call.
 */
uint64_t sipc_worker_deadline(const sipc_worker *w);

/*
 * A descriptor that becomes readable when the running request is
 * cancelled (a CANCEL frame names it), its deadline passes, or the
 * channel ends (the reply could go nowhere).  Poll it for POLLIN; do
 * not read or close it: the runtime resets it when the handler returns.
 * The same descriptor serves every request of the worker (close-on-exec).
 * Call it from inside a handler only; returns the descriptor or a
 * negative error (-EINVAL outside a handler).  The first call of a
 * handler starts the watcher ("Cancellation" above).
 */
int sipc_worker_cancel_fd(sipc_worker *w);

/*
 * True when the running request is cancelled or its deadline passed
 * (false outside a handler).  The first call of a handler starts the
 * watcher; later calls read a flag and the clock (vDSO), no system
 * call.
 */
bool sipc_worker_cancelled(sipc_worker *w);

/* The protocol descriptor (for fixtures that misbehave on purpose). */
int sipc_worker_fd(const sipc_worker *w);

/* Flush, close the channel and free.  Accepts NULL. */
void sipc_worker_close(sipc_worker *w);

#ifdef __cplusplus
}
#endif
#endif /* SIPC_WORKER_H */
