/*
 * limits.c - the resource limits sipc-init sets in the worker's own
 * process, after fork and before the filter and execve (sipc-init.c).
 *
 * Each is set with soft = hard: an unprivileged process may lower its
 * hard limit but never raise it, and the worker has no capability left
 * (CAP_SYS_RESOURCE is dropped with the rest), so what is set here holds
 * for the worker and every process it starts.  RLIMIT_NPROC counts the
 * processes of the real uid in the worker's user namespace (the kernel's
 * ucounts, since Linux 5.14), not the host's, so the bound is one
 * worker's tree where each worker has a user namespace of its own; a
 * process whose real uid is the host's root is never held to it.
 *
 * Runs in sipc-init's child only (single-threaded).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "init_filter.h"

/* In the order of the spec's fields. */
static const int resources[] = { RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE,
    RLIMIT_CPU, RLIMIT_NPROC };
#define NRES (sizeof(resources) / sizeof(resources[0]))

/* One field: a decimal number or "-" (unlimited), up to ':' or the end. */
static int
parse_field(const char **pp, rlim_t *ret)
{
	const char *p = *pp;
	char *end;
	unsigned long long v;

	if (p[0] == '-' && (p[1] == ':' || p[1] == '\0')) {
		*ret = RLIM_INFINITY;
		end = (char *)p + 1;
	} else {
		if (p[0] < '0' || p[0] > '9')
			return -EINVAL;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno != 0 || (*end != ':' && *end != '\0'))
			return -EINVAL;
		*ret = (rlim_t)v;
	}
	*pp = *end == ':' ? end + 1 : end;
	return 0;
}

static int
parse_spec(const char *spec, rlim_t v[NRES])
{
	const char *p = spec;
	size_t i;

	for (i = 0; i < NRES; i++)
		if (*p == '\0' || parse_field(&p, &v[i]) < 0)
			return -EINVAL;
	return *p == '\0' ? 0 : -EINVAL;
}

rlim_t
sipc__init_cpu_limit(const char *spec)
{
	rlim_t v[NRES];

	if (spec == NULL || parse_spec(spec, v) < 0)
		return RLIM_INFINITY;
	return v[3];
}

int
sipc__init_limits(const char *spec)
{
	rlim_t v[NRES];
	size_t i;

	if (spec == NULL)
		return 0;
	if (parse_spec(spec, v) < 0)
		return -EINVAL;
	for (i = 0; i < NRES; i++) {
		struct rlimit rl = { v[i], v[i] };

		if (setrlimit(resources[i], &rl) < 0)
			return -errno;
	}
	return 0;
}
