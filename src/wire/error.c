/*
 * error.c - sipc_strerror(): messages for sipc codes (from the SIPC_ERRORS
 * X-macro table in sipc.h) and for negative errno values.
 *
 * Any thread, no locks: every string returned is static and immutable.
 * strerror() may write a shared buffer for unknown values and strerror_r()
 * needs a caller buffer, so errno values go through strerrordesc_np()
 * (glibc 2.32+), which returns a constant string or NULL.
 */
#include <string.h>

#include "sipc.h"

static const struct {
	int code;
	const char *msg;
} sipc_errtab[] = {
#define SIPC__ERRROW(name, val, msg) { (val), (msg) },
	SIPC_ERRORS(SIPC__ERRROW)
#undef SIPC__ERRROW
};

const char *
sipc_strerror(int err)
{
	const char *s;
	size_t i;

	if (err == 0)
		return "success";
	for (i = 0; i < sizeof(sipc_errtab) / sizeof(sipc_errtab[0]); i++)
		if (sipc_errtab[i].code == err)
			return sipc_errtab[i].msg;
	/* Errors are negative errno by convention; be lenient with a plain
	 * positive errno so a caller's slip still gets a useful message. */
	if (err < 0 && err > -4096)
		err = -err;
	if (err > 0 && err < 4096) {
		s = strerrordesc_np(err);
		if (s != NULL)
			return s;
	}
	return "unknown error";
}
