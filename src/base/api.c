/*
 * api.c - rules every public entry point applies before it touches a
 * supervisor: which threads may block in the library, and how calls are
 * counted against sipc_destroy().
 *
 * Threads: any.  The only state is one thread-local flag and two atomic
 * fields of the supervisor (`users`, `closing`); no locks.
 */
#include <errno.h>

#include "pool/pool.h"

/*
 * Set in every library thread, and on a host thread while it runs a
 * completion callback for an immediate rejection inside sipc_submit().
 * A submit from a completion callback must never block: the reader
 * running it is what frees the room.  The flag is per thread, not per
 * supervisor: a callback of one supervisor that blocks on another can
 * be the link that closes a cycle between them, so the blocking calls
 * are refused from every library thread.
 */
_Thread_local bool sipc__lib_thread;

/*
 * How many public calls this thread is inside.  A log callback can run
 * on a host thread inside one of them (a journal that breaks while
 * sipc_submit() appends its record); a blocking call from there would
 * wait for the very call it runs in, so it is refused like one from a
 * library thread.
 */
static _Thread_local unsigned api_depth;

/*
 * Every public function that touches a supervisor counts itself in
 * `users` and then checks `closing`; sipc_destroy() sets `closing` and
 * then waits for `users` to drain.  Both are sequentially consistent, so
 * of two racing sides at least one sees the other: either destroy waits
 * for the call, or the call sees `closing`, returns SIPC_E_SHUTDOWN and
 * touches nothing else.
 */
int
sipc__api_enter(struct sipc_supervisor *s)
{
	atomic_fetch_add(&s->users, 1);
	if (atomic_load(&s->closing)) {
		atomic_fetch_sub(&s->users, 1);
		return SIPC_E_SHUTDOWN;
	}
	api_depth++;
	return 0;
}

void
sipc__api_leave(struct sipc_supervisor *s)
{
	api_depth--;
	atomic_fetch_sub(&s->users, 1);
}

/* Calls that wait for library threads (destroy, call, wait_ready) would
 * wait for themselves from one of them, or from a callback run inside
 * another public call on this thread: -EDEADLK instead of a hang. */
int
sipc__api_blocking_ok(void)
{
	return sipc__lib_thread || api_depth > 0 ? -EDEADLK : 0;
}

/* An immediate outcome runs its callback on the submitting host thread,
 * inside sipc_submit(), under the rules of a library thread: its own
 * submits never block, and destroy/call/wait_ready are refused (destroy
 * would otherwise wait for the very submit it is called from). */
bool
sipc__callback_rules_begin(void)
{
	bool was = sipc__lib_thread;

	sipc__lib_thread = true;
	return was;
}
