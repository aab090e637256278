/*
 * base.c - what every layer of the supervisor uses and that depends on
 * nothing but the supervisor's state: the log, thread names and
 * policies, and the reaper's wake-up.  Any thread; no lock taken.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/eventfd.h>

#include "sipc_int.h"

void
sipc__log(struct sipc_supervisor *s, enum sipc_log_level lvl,
          const struct sipc__slot *sl, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (s->cfg.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->cfg.log(s->cfg.log_arg, lvl, sl ? sl->idx : UINT32_MAX,
	    sl ? sl->generation : 0, sl ? sl->pid : 0, msg);
}

/* Name a slot's thread ("sipc-wr3"): what `top -H`, a debugger and
 * /proc show, so a host can tell the library's threads apart. */
void
sipc__thread_name(const char *what, const struct sipc__slot *sl)
{
	char name[16];

	snprintf(name, sizeof(name), "%s%u", what, sl->idx);
	(void)pthread_setname_np(pthread_self(), name);
}

/*
 * A slot's reader and writer move from SCHED_OTHER to SCHED_BATCH: the
 * same share of the CPU, but their wake-ups do not preempt the thread
 * running on that CPU.  A worker that writes its ACCEPT (or a reply)
 * goes on to its handler (or its next read) instead of being switched
 * out for the reader that its write woke: one context switch fewer per
 * synchronous call, and no preemption of the host's own threads by the
 * library's.  A thread created under another policy (a real-time host,
 * SCHED_IDLE) keeps it: the library does not lower nor raise it.
 */
void
sipc__thread_io_policy(void)
{
	struct sched_param sp;
	int pol;

	if (pthread_getschedparam(pthread_self(), &pol, &sp) != 0 ||
	    pol != SCHED_OTHER)
		return;
	sp.sched_priority = 0;
	(void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
}

/* Wake the reaper thread's poll() (its eventfd). */
void
sipc__reaper_wake(struct sipc_supervisor *s)
{
	(void)eventfd_write(s->evt_fd, 1);
}
