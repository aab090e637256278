/*
 * version.c - the library's own version, for a program to compare with
 * the SIPC_VERSION_* macros of the headers it was compiled with.
 *
 * Any thread, no state.
 */
#include "sipc.h"

unsigned
sipc_version(void)
{
	return SIPC_VERSION_HEX;
}

const char *
sipc_version_string(void)
{
	return SIPC_VERSION_STRING;
}
