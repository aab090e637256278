/*
 * base.c - what every layer of the supervisor uses and that depends on
 * nothing but the supervisor's state: the log, thread names, the
 * reaper's wake-up and an interest set's watch.  Any thread; no lock taken.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "pool/pool.h"

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

/* What ran out of its bound on this thread (base/base.h): logged, counted. */
void
sipc__bounds_note(struct sipc_supervisor *s, const struct sipc__slot *sl)
{
	const char *what;
	unsigned n = sipc__bounds_take(&what);

	if (n == 0)
		return;
	atomic_fetch_add(&s->n_bounds_expired, n);
	sipc__log(s, SIPC_LOG_WARN, sl, "gave up waiting: %s (%u bound%s "
	    "ran out)", what, n, n == 1 ? "" : "s");
}

/* Wake the reaper thread's poll() (its eventfd). */
void
sipc__reaper_wake(struct sipc_supervisor *s)
{
	(void)eventfd_write(s->evt_fd, 1);
}

int
sipc__epoll_in(int epfd, int op, int fd, uint32_t tag)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = tag };

	return epoll_ctl(epfd, op, fd, &e);
}
