/*
 * sipc_version.h - the version of the sipc headers a program is compiled
 * with.  Included by sipc.h and sipc_worker.h; the build reads the
 * package version from here, so this is the one place it is written.
 *
 * Versioning: MAJOR changes on an incompatible change of a public
 * structure or function; MINOR on additions; PATCH on fixes.  While
 * MAJOR is 0, a MINOR change may also change a public structure (see
 * NEWS.md).  SIPC_VERSION_HEX orders versions: compare it, not strings.
 */
#ifndef SIPC_VERSION_H
#define SIPC_VERSION_H

#define SIPC_VERSION_MAJOR 0
#define SIPC_VERSION_MINOR 2
#define SIPC_VERSION_PATCH 0

#define SIPC__VSTR2(x) #x
#define SIPC__VSTR(x) SIPC__VSTR2(x)
#define SIPC_VERSION_STRING SIPC__VSTR(SIPC_VERSION_MAJOR) "." \
	SIPC__VSTR(SIPC_VERSION_MINOR) "." SIPC__VSTR(SIPC_VERSION_PATCH)
#define SIPC_VERSION_HEX ((SIPC_VERSION_MAJOR << 16) | \
	(SIPC_VERSION_MINOR << 8) | SIPC_VERSION_PATCH)

#endif /* SIPC_VERSION_H */
