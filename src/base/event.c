/*
 * event.c - a one-shot wake-up for exactly one waiter, on a futex word.
 *
 * sipc_call() waits for one outcome that one thread (whoever delivers
 * it: a reader, the reaper, a submit that was refused) signals once.  A
 * condition variable with its mutex costs that pair of threads several
 * futex calls a call (signal under the mutex, the waiter waking into a
 * held mutex, the unlocks); this costs the waiter one FUTEX_WAIT and the
 * setter one FUTEX_WAKE, and neither when the outcome is there before
 * the waiter goes to sleep.
 *
 * Threads: one waiter, one setter, any threads.  The word is the only
 * state; its atomics order what the setter wrote before set against what
 * the waiter reads after wait.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool/pool.h"

enum { EV_IDLE = 0, EV_SLEEPING = 1, EV_SET = 2 };

void
sipc__event_init(struct sipc__event *ev)
{
	atomic_init(&ev->word, EV_IDLE);
}

/*
 * The waiter may return, and its event go out of scope, as soon as the
 * exchange is done: the wake that follows only names the address.  A
 * private futex wake reads no memory, and a wake that reaches a later
 * futex at the same address is a spurious wake-up, which every futex
 * waiter (this one, glibc's) tolerates by re-checking its word.
 */
void
sipc__event_set(struct sipc__event *ev)
{
	if (atomic_exchange_explicit(&ev->word, EV_SET,
	    memory_order_acq_rel) == EV_SLEEPING)
		(void)syscall(SYS_futex, &ev->word, FUTEX_WAKE_PRIVATE, 1,
		    NULL, NULL, 0);
}

void
sipc__event_wait(struct sipc__event *ev)
{
	unsigned v = EV_IDLE;

	for (;;) {
		if (atomic_load_explicit(&ev->word, memory_order_acquire) ==
		    EV_SET)
			return;
		/* Announce the sleep; a set in between fails the exchange,
		 * and the next round sees it. */
		v = EV_IDLE;
		if (!atomic_compare_exchange_strong_explicit(&ev->word, &v,
		    EV_SLEEPING, memory_order_acq_rel, memory_order_acquire) &&
		    v != EV_SLEEPING)
			continue;
		/* Returns at once (EAGAIN) if the word is no longer
		 * SLEEPING; EINTR and spurious wake-ups just loop. */
		(void)syscall(SYS_futex, &ev->word, FUTEX_WAIT_PRIVATE,
		    EV_SLEEPING, NULL, NULL, 0);
	}
}

bool
sipc__event_is_set(struct sipc__event *ev)
{
	return atomic_load_explicit(&ev->word, memory_order_acquire) == EV_SET;
}
