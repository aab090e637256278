/*
 * rmtree.h - remove a directory tree the test programs made (no shell).
 * Header-only so the drill and fuzz seed generator, which do not link
 * tests/lib, can use it too.
 */
#ifndef SIPC_RMTREE_H
#define SIPC_RMTREE_H

#include <ftw.h>
#include <stdio.h>

static inline int
rmtree_one(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(path) == 0 ? 0 : -1;
}

/* Depth first, not following symbolic links.  Returns 0 or -1. */
static inline int
rmtree(const char *dir)
{
	return nftw(dir, rmtree_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
