/*
 * worker_rt.h - internal knobs of the worker runtime (worker_rt.c).  Not
 * installed, not part of the worker contract.
 */
#ifndef SIPC_WORKER_RT_H
#define SIPC_WORKER_RT_H

#include <stdbool.h>

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

#endif /* SIPC_WORKER_RT_H */
